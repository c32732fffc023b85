"""Kueue's Topology and the flavors that name it (queues.placement), valid against the vendored Kueue v0.19.2 CRDs, and
their transition rules: a flavor may gain a topology in place, never change or lose it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.config.stack import load
from components.kueue_queues import kueue_objects
from offline import validate
from offline.engine import Plan
from tests.conftest import BASE
from tests.fixtures import stack_config, stack_plan

BLOCKS: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Topology",
    "metadata": {"name": "tpu-blocks"},
    "spec": {
        "levels": [
            {"nodeLabel": "cloud.google.com/gce-topology-block"},
            {"nodeLabel": "cloud.google.com/gke-nodepool"},
            {"nodeLabel": "kubernetes.io/hostname"},
        ]
    },
}


@pytest.fixture(scope="module")
def plan() -> Plan:
    return stack_plan("ironwood", render_charts=False)


def objects(config: dict[str, Any] | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    stack = stack_config("ironwood") if config is None else load({**BASE, **config}, stack="dev")
    return {(o["kind"], o["metadata"]["name"]): o for o in kueue_objects(stack)}


def test_the_placed_flavor_names_the_block_topology_and_the_other_none() -> None:
    found = objects()
    assert found[("Topology", "tpu-blocks")] == BLOCKS
    assert found[("ResourceFlavor", "train")]["spec"] == {
        "nodeLabels": {"cloud.google.com/gke-tpu-accelerator": "tpu7x", "cloud.google.com/gke-tpu-topology": "4x4x4"},
        "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}],
        "topologyName": "tpu-blocks",
    }
    assert "topologyName" not in found[("ResourceFlavor", "burst")]["spec"]


def test_every_kueue_object_is_valid_against_the_vendored_crds(plan: Plan) -> None:
    """Strict schemas (unknown fields refused) and the CRDs' CEL rules: a Topology's hostname level is the lowest,
    levels unique; a flavor with a topology has node labels."""
    kueue = [r["inputs"] for r in plan.resources if r["type"].startswith("kubernetes:kueue.x-k8s.io/")]
    assert {o["kind"] for o in kueue} >= {"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"}
    assert validate.validate_all(kueue) == []


def test_the_crds_refuse_a_topology_without_hostname_last() -> None:
    wrong = copy.deepcopy(BLOCKS)
    wrong["spec"]["levels"].reverse()
    assert validate.validate_object(wrong) == [
        "Topology/tpu-blocks: spec.levels: the kubernetes.io/hostname label can only be used at the lowest level of "
        "topology"
    ]


def test_flavors_wait_for_the_topology_they_name(plan: Plan) -> None:
    topology = plan.one("kubernetes:kueue.x-k8s.io/v1beta2:Topology", "queues-topology-tpu-blocks")
    flavor = plan.one("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor", "queues-resourceflavor-train")
    assert topology["urn"] in flavor["dependencies"]


def test_without_blocks_the_node_pools_are_the_top_level() -> None:
    config = {
        "tpu-stack:cluster": {"minMasterVersion": "1.34.0-gke.2201000"},
        "tpu-stack:tpuPools": [{"name": "burst", "machineType": "tpu7x-standard-4t", "topology": "2x2x2",
                                "provisioning": "spot", "zone": "us-central1-c"}],
        "tpu-stack:queues": {"placement": {"pools": ["burst"]}},
    }  # fmt: skip
    found = objects(config)
    assert found[("Topology", "tpu-slices")]["spec"]["levels"] == [
        {"nodeLabel": "cloud.google.com/gke-nodepool"},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]
    assert found[("ResourceFlavor", "burst")]["spec"]["topologyName"] == "tpu-slices"


def test_a_flavor_gains_a_topology_in_place_but_never_changes_or_loses_it() -> None:
    """The ResourceFlavor CRD's transition rules (kueue v0.19.2 apis/kueue/v1beta2/resourceflavor_types.go)."""
    placed = objects()[("ResourceFlavor", "train")]
    plain = copy.deepcopy(placed)
    del plain["spec"]["topologyName"]
    assert validate.validate_update(plain, placed) == []
    other = copy.deepcopy(placed)
    other["spec"]["topologyName"] = "tpu-slices"
    assert validate.validate_update(placed, other) == [
        "ResourceFlavor/train: spec: topologyName is immutable when topologyName is set"
    ]
    assert validate.validate_update(placed, plain) == [
        "ResourceFlavor/train: spec: topologyName is immutable when topologyName is set"
    ]
    reshaped = copy.deepcopy(placed)
    reshaped["spec"]["nodeLabels"]["cloud.google.com/gke-tpu-topology"] = "4x4x8"
    assert validate.validate_update(placed, reshaped) == [
        "ResourceFlavor/train: spec: nodeLabels are immutable when topologyName is set"
    ]
