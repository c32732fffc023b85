"""ironwood-workload-policy over the ironwood fixture's plan: clean as declared, in every view the real engine shows the
pack; then one change per place a mismatch between a TPU7x pool and its workload policy can hide (xpk issues 751 and
752: a pool of 16 VMs, 4x4x4, created with a policy left over with 2x4x4, whose gang is 8 VMs)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from offline import policy_check
from tests.fixtures import stack_plan

POLICY = "ironwood-workload-policy"
Records = list[dict[str, Any]]


@pytest.fixture(scope="module")
def resources() -> Records:
    return stack_plan("ironwood", render_charts=False).resources


def found(rules: ModuleType, resources: Records, view: policy_check.View | None = None) -> list[tuple[str, str]]:
    """(resource name, message) of the policy's violations."""
    names = {r["urn"]: r["name"] for r in resources}
    violations = policy_check.evaluate(resources, stack="ironwood", rules=rules, view=view)
    return [(names[v["urn"]], v["message"]) for v in violations if v["policy"] == POLICY]


def edited(resources: Records, name: str, edit: Callable[[dict[str, Any]], None]) -> Records:
    copied = copy.deepcopy(resources)
    edit(next(r for r in copied if r["name"] == name)["inputs"])
    return copied


@pytest.mark.parametrize("view", [None, *policy_check.VIEWS], ids=["inputs", *(v.name for v in policy_check.VIEWS)])
def test_the_fixture_passes_in_every_view(rules: ModuleType, resources: Records, view: Any) -> None:
    assert found(rules, resources, view) == []


POLICY_NAME = "train-4x4x4-a8bfcdcd"


def _left_over_2x4x4(inputs: dict[str, Any]) -> None:
    inputs["workloadPolicy"]["acceleratorTopology"] = "2x4x4"


def _only_the_policy_name(inputs: dict[str, Any]) -> None:
    del inputs["placementPolicy"]["tpuTopology"]


CASES: list[tuple[str, str, Callable[[dict[str, Any]], None], str, str]] = [
    ("a multi-host pool without a policy", "train-0", lambda i: i["placementPolicy"].pop("policyName"), "train-0",
     "a multi-host TPU7x pool (4x4x4) needs a workload policy: set placementPolicy.policyName to a HIGH_THROUGHPUT "
     "workload policy with acceleratorTopology 4x4x4"),
    ("a policy the stack does not declare", "train-0",
     lambda i: i["placementPolicy"].update(policyName="tpu-iw-placement-policy"), "train-0",
     "placementPolicy.policyName 'tpu-iw-placement-policy' is not a workload policy of this stack, so its topology "
     "cannot be checked before GKE creates the pool; declare the policy in the stack"),
    ("a high-availability policy", "train-workload-policy",
     lambda i: i["workloadPolicy"].update(type="HIGH_AVAILABILITY"), "train-0",
     f"workload policy {POLICY_NAME!r} is HIGH_AVAILABILITY: TPU7x slices need type HIGH_THROUGHPUT with "
     "acceleratorTopology 4x4x4"),
    ("a policy without a topology", "train-workload-policy", lambda i: i["workloadPolicy"].pop("acceleratorTopology"),
     "train-0", f"workload policy {POLICY_NAME!r} is HIGH_THROUGHPUT without an accelerator topology: TPU7x slices "
     "need type HIGH_THROUGHPUT with acceleratorTopology 4x4x4"),
    ("a policy of another topology (xpk 752)", "train-workload-policy", _left_over_2x4x4, "train-0",
     f"workload policy {POLICY_NAME!r} places 2x4x4 slices but the pool is 4x4x4: a policy's topology is its own, "
     "give the pool a policy of 4x4x4"),
    ("a fixed pool of another size", "train-0", lambda i: i.update(nodeCount=8), "train-0",
     f"the pool holds 8 VMs but workload policy {POLICY_NAME!r} gangs 4x4x4 = 64 chips / 4 per VM = 16 VMs: GKE "
     "refuses any other size; set the pool's node count to 16"),
    ("a flex-start pool of another size", "burst-0", lambda i: i["autoscaling"].update(maxNodeCount=4), "burst-0",
     "the pool holds 4 VMs but workload policy 'burst-2x2x2-c2430421' gangs 2x2x2 = 8 chips / 4 per VM = 2 VMs: GKE "
     "refuses any other size; set the pool's node count to 2"),
    ("a queued pool of another size", "burst-0",
     lambda i: i.update(autoscaling={"totalMaxNodeCount": 16, "locationPolicy": "ANY"}), "burst-0",
     "the pool holds 16 VMs but workload policy 'burst-2x2x2-c2430421' gangs 2x2x2 = 8 chips / 4 per VM = 2 VMs: GKE "
     "refuses any other size; set the pool's node count to 2"),
    ("a policy in another region", "train-workload-policy", lambda i: i.update(region="us-east5"), "train-0",
     f"workload policy {POLICY_NAME!r} is in region us-east5 but the pool in us-central1: GKE finds a policy only in "
     "the pool's own region"),
    ("a policy in another project", "train-workload-policy", lambda i: i.update(project="other-project"), "train-0",
     f"workload policy {POLICY_NAME!r} is in project other-project but the pool in tpu-stack-iw: GKE finds a policy "
     "only in the pool's own project"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "name", "edit", "pool", "message"), CASES, ids=[c[0] for c in CASES])
def test_each_mismatch_is_caught(
    rules: ModuleType, resources: Records, case: str, name: str, edit: Any, pool: str, message: str
) -> None:
    violations = found(rules, edited(resources, name, edit))
    assert (pool, message) in violations
    assert {v[1] for v in violations} == {message}


def test_xpk_751_a_pool_that_leaves_its_topology_to_a_policy_of_another_size(
    rules: ModuleType, resources: Records
) -> None:
    """As gcloud --placement-policy sends it: no tpuTopology, 16 nodes, a policy of 2x4x4 (8 VMs)."""
    changed = edited(edited(resources, "train-0", _only_the_policy_name), "train-workload-policy", _left_over_2x4x4)
    assert ("train-0", (
        f"the pool holds 16 VMs but workload policy {POLICY_NAME!r} gangs 2x4x4 = 32 chips / 4 per VM = 8 VMs: GKE "
        "refuses any other size; set the pool's node count to 8"
    )) in found(rules, changed)  # fmt: skip


def test_other_tpu_versions_and_single_host_pools_are_left_alone(rules: ModuleType, resources: Records) -> None:
    def v6e(inputs: dict[str, Any]) -> None:
        inputs["nodeConfig"]["machineType"] = "ct6e-standard-4t"
        inputs["placementPolicy"] = {"type": "", "tpuTopology": "4x4"}
        inputs["nodeCount"] = 4

    def single_host(inputs: dict[str, Any]) -> None:
        del inputs["placementPolicy"]
        inputs["nodeCount"] = 1

    assert found(rules, edited(resources, "train-0", v6e)) == []
    assert found(rules, edited(resources, "train-0", single_host)) == []
