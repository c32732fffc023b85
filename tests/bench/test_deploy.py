"""bench/deploy.py: the graphs the `pulumi up` model runs for this stack, xpk and Cluster Toolkit, timed by hand."""

from __future__ import annotations

from typing import Any

import pytest

from bench import critical_path as cp
from bench import deploy, stacks
from bench.schedule import Limits, simulate
from tests.bench.test_critical_path import chart, res, tpu_pool


def cluster(name: str = "gke", *deps: str) -> dict[str, Any]:
    return res(name, cp.CLUSTER, *deps, inputs={"removeDefaultNodePool": True})


def timed(resource: dict[str, Any], create: str) -> dict[str, Any]:
    return {**resource, "customTimeouts": {"create": create}}


def small_plan() -> list[dict[str, Any]]:
    return [
        res("sa", "gcp:serviceaccount/account:Account"),
        cluster("gke", "sa"),
        timed(res("system", cp.NODE_POOL, "gke", "sa", inputs={"nodeConfig": {"machineType": "e2-standard-4"}}), "2h"),
        timed(tpu_pool("slice-0", "gke", "sa"), "120m"),
        tpu_pool("slice-1", "gke", "sa"),
        res("k8s", cp.K8S_PROVIDER, "gke", "system"),
        chart("kueue"),
    ]


def test_each_resource_becomes_a_step_with_its_create_time_timeout_and_cluster() -> None:
    steps = {s.key: s for s in deploy.plan_steps(small_plan())}
    assert steps["urn:gke"].minutes == 6.5 and steps["urn:gke"].cluster is None
    assert steps["urn:system"].cluster == "urn:gke" and steps["urn:system"].timeout_minutes == 120
    assert steps["urn:slice-0"].cluster == "urn:gke" and steps["urn:slice-0"].timeout_minutes == 120
    # No customTimeouts: the provider's own default for node pools (2 h).
    assert steps["urn:slice-1"].timeout_minutes == 120
    assert steps["urn:slice-1"].after == {"urn:gke", "urn:sa"}
    assert steps["urn:kueue"].worker is False  # remote: constructed by the resource monitor
    assert steps["urn:kueue"].after == {"urn:k8s"}
    assert steps["urn:sa"].timeout_minutes is None


def test_a_timeout_of_an_hour_and_a_half_reads_90_minutes() -> None:
    step = deploy.plan_steps([cluster(), timed(tpu_pool("p", "gke"), "1h30m")])[1]
    assert step.timeout_minutes == 90


def test_the_small_plan_with_two_workers_and_room_for_one_slice_at_a_time() -> None:
    # sa 0-0.2, gke 0.2-6.7. At 6.7 system (4) and both slices (7) are ready; two workers take system and
    # slice-0; GKE (2 slots) admits both. slice-1 gets system's worker at 10.7 and runs to 17.7. The provider
    # (after system) needs a worker too: it is behind slice-1, so it runs at 13.7 (slice-0's end); the chart,
    # remote, runs 13.7-15.7.
    outcome = simulate(deploy.plan_steps(small_plan()), Limits(workers=2, gke_operations=2))
    assert outcome.finish["urn:gke"] == pytest.approx(6.7)
    assert outcome.finish["urn:slice-1"] == pytest.approx(17.7)
    assert outcome.finish["urn:kueue"] == pytest.approx(15.7)
    assert outcome.minutes == pytest.approx(17.7)


def test_xpk_creates_node_pools_in_batches_of_100_one_batch_after_another() -> None:
    # cluster 6, CoreDNS 1, three batches (100, 100, 50) of 7 minutes, JobSet 2 and Kueue 2.
    outcome = simulate(deploy.xpk_steps(250), Limits(None, None, retry="once"))
    assert outcome.minutes == pytest.approx(6 + 1 + 3 * 7 + 2 + 2)
    assert outcome.finish["slice-99"] == pytest.approx(14) and outcome.finish["slice-100"] == pytest.approx(21)


def test_xpk_fails_when_gke_refuses_part_of_a_batch() -> None:
    estimate = deploy.xpk(10, gke_limit=5)
    assert estimate.minutes is None and len(estimate.outcome.failed) == 5
    assert estimate.describe() == "fails at 7"  # refused at minute 7 (cluster and CoreDNS done)
    assert estimate.outcome.end == pytest.approx(14)  # xpk waits for the rest of its batch


def test_cluster_toolkit_runs_ten_at_a_time() -> None:
    # sa 0-0.2, cluster 0.2-6.7; at 6.7 the system pool and 20 slices are ready, ten workers: the system pool
    # and slices 0-8 start. At 10.7 the system pool ends: slice 9 starts (to 17.7), Kueue and JobSet become
    # ready behind slices 10-19. At 13.7 slices 0-8 end: slices 10-18 start (to 20.7). At 17.7 slice 9 ends:
    # slice 19 starts (to 24.7). At 20.7 slices 10-18 end: Kueue and JobSet run to 22.7. Last: slice 19.
    estimate = deploy.cluster_toolkit(20, gke_limit=None)
    assert estimate.workers == 10
    assert estimate.outcome.finish["kueue"] == pytest.approx(22.7)
    assert estimate.minutes == pytest.approx(24.7)


def test_resizing_the_slice_pools_of_a_plan() -> None:
    plan = small_plan()[:4]  # one slice pool
    resized = deploy.with_slices(plan, 3)
    pools = [r for r in resized if cp.kind(r).startswith("tpu-pool")]
    assert [p["name"] for p in pools] == ["slice-0-0", "slice-0-1", "slice-0-2"]
    assert all(p["dependencies"] == ["urn:gke", "urn:sa"] for p in pools)
    assert len(resized) == 6


def test_a_plan_where_something_waits_for_a_slice_cannot_be_resized() -> None:
    plan = [*small_plan(), res("late", "gcp:compute/network:Network", "slice-0")]
    with pytest.raises(ValueError, match="waits for a TPU slice pool"):
        deploy.with_slices(plan, 2)
    with pytest.raises(ValueError, match="no TPU slice pool"):
        deploy.with_slices(small_plan()[:3], 2)


def test_describe_says_when_a_run_fails() -> None:
    assert deploy.xpk(1, gke_limit=None).describe() == "18.0"


def test_the_model_prints_its_inputs_sourced_apart_from_assumed() -> None:
    """Issue 27: a modelled figure is never a measurement; the create times and GKE's limit are assumptions."""
    lines = deploy.inputs_report()
    assert lines[0] == "Inputs of the model (figures below are modelled, not measured):"
    sourced, assumed = lines.index("  sourced:"), lines.index("  assumed:")
    assert sourced < assumed
    assert any("create times" in line for line in lines[assumed:])
    assert any("GKE runs at once" in line for line in lines[assumed:])
    assert not any("create times" in line for line in lines[sourced:assumed])
    assert any("batch=100" in line for line in lines[sourced:assumed])


def test_the_model_reads_the_parallelism_of_the_workflows_pulumi_up() -> None:
    """The deploy job installs the CLI first (a pulumi/actions step with no command); `up` runs with 256."""
    assert deploy.shipped_parallel() == 256


@pytest.mark.parametrize("slices", stacks.SLICE_COUNTS)
def test_every_generated_bench_stack_is_a_config_the_stack_accepts(slices: int) -> None:
    """v5e 2x4 on flex-start: the zone must offer v5e on flex-start (vendor/data/tpu_zones.json: us-west4-a), or the
    offline preview stops at the config and `make bench` has nothing to time."""
    from components.config.stack import load

    config = load(stacks.config(slices), stack=stacks.name(slices))
    assert config.tpu_pools[0].zone == "us-west4-a" and config.tpu_pools[0].slices == slices
