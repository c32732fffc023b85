"""The Compute workload policy of a multi-host TPU7x pool group, and the node pools that name it, in the ironwood
fixture's plan: train is two 4x4x4 slices (64 chips / 4 per VM = 16 VMs each) on a reservation block, burst two
2x2x2 flex-start slices (8 / 4 = 2 VMs each)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from offline.engine import Plan, run_program
from tests.conftest import BASE
from tests.fixtures import stack_plan

POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
NODE_POOL = "gcp:container/nodePool:NodePool"


@pytest.fixture(scope="module")
def plan() -> Plan:
    return stack_plan("ironwood", render_charts=False)


def named(plan: Plan, name: str) -> dict[str, Any]:
    return next(r for r in plan.resources if r["name"] == name)


def test_one_high_throughput_policy_per_pool_group_named_with_its_topology(plan: Plan) -> None:
    # The digest: the first 8 hex of sha256("<cluster>/<pool group>") (components/config/pools.py).
    assert hashlib.sha256(b"tpu-iw/train").hexdigest()[:8] == "a8bfcdcd"
    policies = {r["name"]: r for r in plan.by_type(POLICY)}
    assert sorted(policies) == ["burst-workload-policy", "train-workload-policy"]
    train = policies["train-workload-policy"]
    assert train["inputs"] == {
        "name": "train-4x4x4-a8bfcdcd",
        "project": "tpu-stack-iw",
        "region": "us-central1",
        "description": "TPU7x 4x4x4 slices of pool group train in GKE cluster tpu-iw",
        "workloadPolicy": {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "4x4x4"},
    }
    assert train["parent"] == plan.one("tpu-stack:index:TpuSlicePools", "train")["urn"]


def test_the_policy_is_replaced_on_any_change_deleting_first_and_never_kept(plan: Plan) -> None:
    for policy in plan.by_type(POLICY):
        assert policy["replaceOnChanges"] == ["*"]
        assert policy["deleteBeforeReplace"] is True
        assert not policy.get("retainOnDelete")


def test_each_slice_names_its_group_policy_and_waits_for_it(plan: Plan) -> None:
    for group, topology, vms in (("train", "4x4x4", 16), ("burst", "2x2x2", 2)):
        policy = named(plan, f"{group}-workload-policy")
        for index in (0, 1):
            pool = plan.one(NODE_POOL, f"{group}-{index}")
            assert pool["inputs"]["placementPolicy"] == {
                "type": "",
                "tpuTopology": topology,
                "policyName": policy["inputs"]["name"],
            }
            assert policy["urn"] in pool["dependencies"]
            nodes = pool["inputs"].get("nodeCount") or pool["inputs"]["autoscaling"]["maxNodeCount"]
            assert nodes == vms
    # The block of a reservation, as GKE's dynamic slicing page writes its reservation path.
    affinity = plan.one(NODE_POOL, "train-0")["inputs"]["nodeConfig"]["reservationAffinity"]
    assert affinity == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["projects/tpu-stack-iw/reservations/ironwood/reservationBlocks/block-1"],
    }


def test_single_host_tpu7x_and_other_versions_need_no_policy() -> None:
    plan = run_program(
        {
            **BASE,
            "tpu-stack:cluster": {"minMasterVersion": "1.34.0-gke.2201000"},
            "tpu-stack:tpuPools": [
                {"name": "one", "machineType": "tpu7x-standard-4t", "provisioning": "spot", "zone": "us-central1-c"},
                {"name": "v6e", "machineType": "ct6e-standard-4t", "topology": "4x4", "zone": "us-central1-b",
                 "provisioning": "spot"},
            ],
        },
        stack="dev",
    )  # fmt: skip
    assert plan.by_type(POLICY) == []
    assert "placementPolicy" not in plan.one(NODE_POOL, "one-0")["inputs"]
    assert plan.one(NODE_POOL, "v6e-0")["inputs"]["placementPolicy"] == {"type": "", "tpuTopology": "4x4"}
