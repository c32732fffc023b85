"""Every Pulumi.<stack>.yaml previews offline; dev and prod have the shape the platform team agreed on."""

from __future__ import annotations

import pytest

from offline.engine import REPO, Plan, run_stack

STACKS = sorted(p.name.split(".")[1] for p in REPO.glob("Pulumi.*.yaml"))


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    return {stack: run_stack(stack) for stack in STACKS}


@pytest.mark.parametrize("stack", STACKS)
def test_stack_previews_with_resources(plans: dict[str, Plan], stack: str) -> None:
    assert len(plans[stack].resources) > 10


def shapes(plan: Plan) -> dict[str, tuple[str, int, int, int]]:
    """Pool group -> (topology, slices, VMs per slice, chips of the group), as the stack outputs them."""
    pools = plan.outputs["tpuPools"]
    return {name: (p["topology"], p["slices"], p["vmsPerSlice"], p["chips"]) for name, p in pools.items()}


def tpu_node_counts(plan: Plan) -> dict[str, int]:
    """Node pool -> the most nodes it holds: nodeCount of a fixed pool, the autoscaling maximum otherwise."""
    counts = {}
    for pool in plan.by_type("gcp:container/nodePool:NodePool"):
        inputs = pool["inputs"]
        if not inputs["nodeConfig"]["machineType"].startswith("ct"):
            continue
        scaling = inputs.get("autoscaling") or {}
        counts[inputs["name"]] = inputs.get("nodeCount") or scaling.get("maxNodeCount") or scaling["totalMaxNodeCount"]
    return counts


def test_dev_is_the_flex_start_and_multislice_seeds(plans: dict[str, Plan]) -> None:
    """A ct6e-standard-4t slice is 2x2 = 4 chips on one VM; a v5e 2x4 slice is 8 chips on 2 VMs of 4 chips. The
    multislice ladder's spot rung, tried first, has the flex-start rung's shape: one v5e 2x4 slice (it had three),
    whose single node pool is named after its group."""
    plan = plans["dev"]
    assert shapes(plan) == {
        "flex-v6e": ("2x2", 1, 1, 4),
        "multislice": ("2x4", 3, 2, 24),
        "multislice-spot": ("2x4", 1, 2, 8),
    }
    assert tpu_node_counts(plan) == {
        "flex-v6e": 1, "multislice-0": 2, "multislice-1": 2, "multislice-2": 2, "multislice-spot": 2,
    }  # fmt: skip


def test_prod_trains_bursts_and_serves_on_v5e_slices(plans: dict[str, Plan]) -> None:
    """v5e (4 chips a VM): 4x4 = 16 chips on 4 VMs, 4x8 = 32 chips on 8 VMs. burst has train's shape: the train
    ladder falls back to it."""
    plan = plans["prod"]
    assert shapes(plan) == {"train": ("4x4", 2, 4, 32), "burst": ("4x4", 1, 4, 16), "serve": ("4x8", 2, 8, 64)}
    assert tpu_node_counts(plan) == {"train-0": 4, "train-1": 4, "burst": 4, "serve-0": 8, "serve-1": 8}


def test_llm_serves_one_model_on_single_host_and_one_on_multi_host_slices(plans: dict[str, Plan]) -> None:
    """A ct6e-standard-8t VM is a whole 2x4 slice (8 chips); a v5e 4x4 slice is 16 chips on 4 VMs of 4."""
    plan = plans["llm"]
    assert shapes(plan) == {"llm-v6e": ("2x4", 2, 1, 16), "llm-v5e": ("4x4", 3, 4, 48)}
    served = {name: (s["kind"], s["replicas"], s["hostsPerReplica"]) for name, s in plan.outputs["serving"].items()}
    assert served == {"llama-31-70b": ("Deployment", 1, 1), "llama-33-70b": ("LeaderWorkerSet", 2, 4)}
    assert plan.outputs["flavors"] == {}  # every pool group serves: none is Kueue capacity
