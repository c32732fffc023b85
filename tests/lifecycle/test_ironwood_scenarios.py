"""Lifecycle scenarios of the ironwood fixture (multi-host TPU7x pool groups with their workload policies, train
placed by topology): the first `up`, a new slice shape, placement changes, and `pulumi destroy`, judged by the engine
model (offline/lifecycle.py) and the catalogue. Expected steps are written out by hand from the fixture stack file."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from offline.lifecycle import destroy_order
from tests.fixtures import stack_data
from tests.lifecycle.catalogue import CATALOGUE
from tests.lifecycle.conftest import Records, plan, step

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def deployed() -> Records:
    return plan("ironwood", stack_data("ironwood"))


def changed(edit: Edit) -> Records:
    config = copy.deepcopy(stack_data("ironwood"))
    edit(config)
    return plan("ironwood", config)


def group(pool: str, **fields: Any) -> Edit:
    def edit(config: dict[str, Any]) -> None:
        (entry,) = [e for e in config["tpu-stack:tpuPools"] if e["name"] == pool]
        entry.update(fields)

    return edit


def only(steps: Any, op: str) -> list[str]:
    return sorted(s.name for s in steps.of(op))


def test_first_up_creates_everything_and_breaks_no_rule(deployed: Records) -> None:
    steps = step([], deployed)
    assert steps.refused == []
    assert len(steps.of("create")) == len(deployed)
    assert CATALOGUE.breaches(deployed, {}) == []


def test_a_new_slice_shape_replaces_the_policy_and_its_pools_together(deployed: Records) -> None:
    """burst 2x2x2 -> 2x2x4: the policy's acceleratorTopology is ForceNew and its name carries the topology, the
    pools' placementPolicy.policyName is ForceNew: policy and both pools are replaced, each deleted first; the flavor
    (not placed by topology) takes the new topology label in place, and the queue its 2 x 16 = 32 chips."""
    steps = step(deployed, changed(group("burst", topology="2x2x4")))
    assert steps.refused == []
    assert only(steps, "replace") == ["burst-0", "burst-1", "burst-workload-policy"]
    assert only(steps, "update") == [
        "monitoring-dashboard", "queues-clusterqueue-cluster-queue", "queues-resourceflavor-burst"]  # fmt: skip
    assert only(steps, "create") == [] and only(steps, "delete") == []
    why = {s.name: s.why for s in steps.of("replace")}
    assert "workloadPolicy" in why["burst-workload-policy"]
    assert "placementPolicy.policyName" in why["burst-0"]


def test_a_placed_groups_new_shape_is_refused_by_its_flavor(deployed: Records) -> None:
    """train 4x4x4 -> 4x4x8: its flavor has a topology, so Kueue refuses new node labels in place (the CRD's rule)
    and holds the delete of a flavor a ClusterQueue names: the preview says so before anything is replaced."""
    steps = step(deployed, changed(group("train", topology="4x4x8")))
    assert only(steps, "refuse") == ["queues-resourceflavor-train"]
    assert steps.refused == [
        "queues-resourceflavor-train (kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor): ResourceFlavor/train: spec: "
        "nodeLabels are immutable when topologyName is set"
    ]


def test_a_placed_group_reshaped_under_a_new_name_is_a_new_flavor(deployed: Records) -> None:
    """The way docs/workloads.md gives: rename the group with its shape. New pools, policy and flavor are created, the
    ClusterQueue names the new flavor in place, and the old ones are deleted after it (no ClusterQueue names the old
    flavor any more, so Kueue lets it go)."""

    def rename(config: dict[str, Any]) -> None:
        group("train", name="train8", topology="4x4x8")(config)
        config["tpu-stack:queues"]["placement"]["pools"] = ["train8"]

    steps = step(deployed, changed(rename))
    assert steps.refused == []
    assert only(steps, "create") == [
        "queues-resourceflavor-train8", "train8", "train8-0", "train8-1", "train8-workload-policy"]  # fmt: skip
    assert only(steps, "delete") == [
        "queues-resourceflavor-train", "train", "train-0", "train-1", "train-workload-policy"]  # fmt: skip
    assert "queues-clusterqueue-cluster-queue" in only(steps, "update")


def test_an_unplaced_group_gains_a_topology_in_place(deployed: Records) -> None:
    """burst joins queues.placement: its flavor gains topologyName, which the CRD allows on a flavor without one."""

    def place(config: dict[str, Any]) -> None:
        config["tpu-stack:queues"]["placement"]["pools"] = ["train", "burst"]

    steps = step(deployed, changed(place))
    assert steps.refused == []
    assert only(steps, "update") == ["queues-resourceflavor-burst"]
    assert only(steps, "replace") == [] and only(steps, "create") == [] and only(steps, "delete") == []


def test_leaving_the_block_level_is_refused_by_the_placed_flavor(deployed: Records) -> None:
    """blocks off: another Topology (tpu-slices) is created, but the train flavor cannot change its topologyName."""

    def flat(config: dict[str, Any]) -> None:
        config["tpu-stack:queues"]["placement"].update(blocks=False, slices="preferred")

    steps = step(deployed, changed(flat))
    assert only(steps, "refuse") == ["queues-resourceflavor-train"]
    assert "topologyName is immutable when topologyName is set" in steps.refused[0]


def test_destroy_deletes_pools_before_their_policy_and_flavors_before_their_topology(deployed: Records) -> None:
    """Everything goes but the data bucket, which a stack not marked throwaway protects; nothing is left behind."""
    steps = step(deployed, [])
    assert steps.refused == [
        "data-bucket (gcp:storage/bucket:Bucket): delete of a protected resource: `pulumi state unprotect` first"
    ]
    assert steps.retained == []
    deleted = only(steps, "delete")
    assert {"train-workload-policy", "burst-workload-policy", "queues-topology-tpu-blocks"} <= set(deleted)
    order = destroy_order(deployed)
    for pool, policy in (("train-0", "train-workload-policy"), ("train-1", "train-workload-policy"),
                         ("burst-0", "burst-workload-policy"), ("burst-1", "burst-workload-policy"),
                         ("queues-resourceflavor-train", "queues-topology-tpu-blocks")):  # fmt: skip
        assert order.index(pool) < order.index(policy), (pool, policy)


def test_each_new_rule_catches_its_breach(deployed: Records) -> None:
    broken = copy.deepcopy(deployed)
    records = {r["name"]: r for r in broken}
    policy, pool = records["train-workload-policy"], records["train-0"]
    pool["dependencies"] = [d for d in pool["dependencies"] if d != policy["urn"]]
    policy["replaceOnChanges"] = []
    topology = records["queues-topology-tpu-blocks"]
    flavor = records["queues-resourceflavor-train"]
    flavor["dependencies"] = [d for d in flavor["dependencies"] if d != topology["urn"]]
    assert sorted(CATALOGUE.breaches(broken, {})) == [
        "tas-flavors-after-their-topology: queues-resourceflavor-train may be created before its Topology "
        "'tpu-blocks' (and deleted after it)",
        "tpu7x-pools-after-their-workload-policy: train-0 may be created before its workload policy "
        "'train-4x4x4-a8bfcdcd' (and deleted after)",
        "workload-policy-replaced-by-shape: train-workload-policy: a change would be planned as an update Compute "
        "refuses",
    ]
