"""Safety of real `pulumi up` and `pulumi destroy` on the fixture stacks (dev, prod and the others).

What GKE changes by itself never shows up as a diff (a diff on a TPU pool replaces the slice), slow creates
have the time they need, prod cannot be deleted by accident, dev can be destroyed without manual steps, and
no change renames (and so replaces) a resource unnoticed.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from components import tpu_catalog
from offline import urns
from offline.engine import Plan
from tests.fixtures import FIXTURE_STACKS, stack_data, stack_plan

STACKS = FIXTURE_STACKS
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
BUCKET = "gcp:storage/bucket:Bucket"
KUEUE_MATCHED = {"nodeConfig.taints", "nodeConfig.labels", "nodeConfig"}
AUTOSCALED_COUNTS = {"initialNodeCount", "nodeCount"}
# Default timeouts of the Terraform provider pulumi-gcp bridges, which custom timeouts must not shorten:
# clusters 90 minutes for every operation (magic-modules#17295), node pools 2 hours (magic-modules#18250).
PROVIDER_CLUSTER_MINUTES = 90
PROVIDER_NODE_POOL_MINUTES = 120


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    return {stack: stack_plan(stack) for stack in STACKS}


def throwaway(stack: str) -> bool:
    return stack_data(stack).get("tpu-stack:throwaway", False) is True


def tpu_pools(plan: Plan) -> list[dict[str, Any]]:
    pools = [
        r
        for r in plan.by_type(NODE_POOL)
        if tpu_catalog.machine_type(str(r["inputs"].get("nodeConfig", {}).get("machineType"))) is not None
    ]
    assert pools, f"{plan.stack} declares no TPU node pools"
    return pools


def minutes(duration: str) -> float:
    """A Go duration ("90m", "1h30m", "45m0s") in minutes."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, f"not a duration: {duration!r}"
    return sum(float(n) * {"h": 60, "m": 1, "s": 1 / 60}[u] for n, u in parts)


# ---- ignore_changes: what GKE mutates --------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_tpu_pools_never_ignore_the_labels_and_taints_kueue_matches(plans: dict[str, Plan], stack: str) -> None:
    """Kueue's flavors carry the pools' labels and tolerations; an ignored edit would admit unschedulable pods.
    GKE reports its own taints apart (nodeConfig.effectiveTaints), so nothing needs ignoring."""
    for pool in tpu_pools(plans[stack]):
        assert not set(pool["ignoreChanges"]) & KUEUE_MATCHED, pool["name"]


@pytest.mark.parametrize("stack", STACKS)
def test_autoscaled_pools_ignore_node_counts_and_fixed_pools_keep_them(plans: dict[str, Plan], stack: str) -> None:
    """The autoscaler resizes DWS pools (0 -> slice -> 0); a fixed slice that drifts must show in the diff."""
    for pool in plans[stack].by_type(NODE_POOL):
        ignored = set(pool["ignoreChanges"])
        if "autoscaling" in pool["inputs"]:
            assert ignored >= AUTOSCALED_COUNTS, pool["name"]
        else:
            assert "nodeCount" not in ignored, pool["name"]


@pytest.mark.parametrize("stack", STACKS)
def test_no_tpu_pool_sends_a_placement_policy_type(plans: dict[str, Plan], stack: str) -> None:
    """GKE never reports `placementPolicy.type` for TPU pools: a value would diff on every preview and
    restart the nodes on apply. The schema needs the field, so the empty string (left out of the request)."""
    for pool in tpu_pools(plans[stack]):
        assert (pool["inputs"].get("placementPolicy") or {}).get("type", "") == "", pool["name"]


# ---- custom timeouts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_cluster_timeouts_are_never_shorter_than_the_providers(plans: dict[str, Plan], stack: str) -> None:
    clusters = plans[stack].by_type(CLUSTER)
    assert len(clusters) == (3 if stack == "multiregion" else 1)  # a MultiKueue manager and two workers
    for cluster in clusters:
        timeouts = cluster["customTimeouts"]
        assert set(timeouts) == {"create", "update", "delete"}
        assert all(minutes(t) >= PROVIDER_CLUSTER_MINUTES for t in timeouts.values()), timeouts


@pytest.mark.parametrize("stack", STACKS)
def test_node_pool_timeouts_are_never_shorter_than_the_providers(plans: dict[str, Plan], stack: str) -> None:
    """Every node pool, the CPU system pool included (it is a node pool, not a cluster)."""
    for pool in plans[stack].by_type(NODE_POOL):
        timeouts = pool["customTimeouts"]
        assert set(timeouts) == {"create", "update", "delete"}, pool["name"]
        assert all(minutes(t) >= PROVIDER_NODE_POOL_MINUTES for t in timeouts.values()), (pool["name"], timeouts)


# ---- prod: nothing is deleted by accident ------------------------------------------------------------------


def test_prod_cluster_is_protected_twice(plans: dict[str, Plan]) -> None:
    """`protect` stops `pulumi destroy`/replacement; GKE's deletion protection stops everything else."""
    (cluster,) = plans["prod"].by_type(CLUSTER)
    assert cluster["protect"] is True
    assert cluster["inputs"]["deletionProtection"] is True


def test_prod_buckets_are_protected_and_keep_their_objects(plans: dict[str, Plan]) -> None:
    for bucket in plans["prod"].by_type(BUCKET):
        assert bucket["protect"] is True, bucket["name"]
        assert not bucket["inputs"].get("forceDestroy"), bucket["name"]


def test_prod_declares_a_bucket(plans: dict[str, Plan]) -> None:
    assert plans["prod"].by_type(BUCKET)


# ---- dev: destroy works without manual steps ---------------------------------------------------------------


def test_dev_is_throwaway_and_nothing_in_it_is_protected(plans: dict[str, Plan]) -> None:
    assert throwaway("dev")
    assert [r["name"] for r in plans["dev"].resources if r["protect"]] == []
    (cluster,) = plans["dev"].by_type(CLUSTER)
    assert cluster["inputs"]["deletionProtection"] is False


@pytest.mark.parametrize("stack", STACKS)
def test_buckets_force_destroy_exactly_when_the_stack_is_throwaway(plans: dict[str, Plan], stack: str) -> None:
    """A throwaway stack's destroy must not stop at a non-empty bucket; any other stack keeps its data."""
    assert not throwaway("prod")
    for bucket in plans[stack].by_type(BUCKET):
        assert bool(bucket["inputs"].get("forceDestroy")) is throwaway(stack), bucket["name"]


# ---- URN stability ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", urns.STACKS)
def test_no_resource_is_renamed_unnoticed(plans: dict[str, Plan], stack: str) -> None:
    """A vanished URN fails (the resource would be replaced); new URNs only warn (offline/urns.py)."""
    drift = urns.check(plans[stack])
    assert not drift.vanished, drift.message()
