"""`tpu-stack why` for a workload held by topology: the corpus in corpus/topology.yaml (objects as Kueue v0.19.2 writes
them, its message quoted from source) on the ironwood fixture stack, whose outputs give the view as `why` reads them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.engine import run_program
from tests.conftest import BASE
from tests.fixtures import stack_plan
from tests.tpu_stack.kueue_objects import NOW
from tpu_stack import why
from tpu_stack.stack import Stack

CORPUS = yaml.safe_load((Path(__file__).parent / "corpus" / "topology.yaml").read_text())
CASES = {case["id"]: case for case in CORPUS["cases"] if case["stack"] == "ironwood"}
"""The ironwood cases, each with every object listed; test_corpus.py runs every case of the file."""


@pytest.fixture(scope="module")
def view() -> why.StackView:
    return Stack("ironwood", stack_plan("ironwood", render_charts=False).outputs).view()


def diagnose(case: dict[str, Any], view: why.StackView) -> why.Diagnosis:
    objects = case["cluster"]["objects"]
    workload = next(o for o in objects if o["kind"] == "Workload")
    queues = [o for o in objects if o["kind"] == "ClusterQueue"]
    evidence = why.Evidence(workload=workload, cluster_queue=queues[0], cluster_queues=queues)
    return why.explain(evidence, view, NOW)


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_case_says_what_holds_the_workload(case: str, view: why.StackView) -> None:
    expected = CASES[case]["expect"]
    diagnosis = diagnose(CASES[case], view)
    assert diagnosis.state == expected["state"]
    assert [s for s in expected["says"] if s not in diagnosis.text] == [], diagnosis.text
    assert [s for s in expected["never"] if s in diagnosis.text] == [], diagnosis.text


def test_one_slice_short_in_full(view: why.StackView) -> None:
    """train is 2 slices of 16 VMs (4x4x4 of 4-chip VMs) on node pools train-0 and train-1; Kueue counted the flavor's
    32 nodes and left out one whose TPU chips are not free."""
    diagnosis = diagnose(CASES["topology-one-slice-short"], view)
    assert diagnosis.reason == (
        "Pending: its quota is free, but topology tpu-slices on flavor train has room for only 1 of its 2 slices (each "
        "slice needs the 16 nodes of one node pool free and ready). Of its 32 nodes Kueue left out 1 without a free "
        "google.com/tpu."
    )
    assert diagnosis.change == (
        "It starts when enough of node pools train-0, train-1 have all their nodes ready and free: a node that is "
        "down, being repaired or running another pod holds its whole slice. `kubectl get nodes -l "
        "cloud.google.com/gke-nodepool=<pool>` shows them."
    )


def test_placed_pools_without_nodes_in_full(view: why.StackView) -> None:
    """No node of train-0 or train-1 exists: Kueue's topology has no domain at the node pool level."""
    diagnosis = diagnose(CASES["topology-placed-pools-without-nodes"], view)
    assert diagnosis.reason == (
        "Pending: its quota is free, but flavor train's topology has no node at level cloud.google.com/gke-nodepool: "
        "Kueue places only on nodes that exist and carry every level's label."
    )
    assert diagnosis.change == (
        "GKE labels every node with its node pool, so node pools train-0, train-1 have no nodes: their capacity is not "
        "up (a reservation not delivered yet, or slices being recreated by a repair or an upgrade). It starts once a "
        "slice's nodes are up; `kubectl get nodes -l cloud.google.com/gke-nodepool=<pool>` shows them."
    )
    assert diagnosis.who == (why.PLATFORM,)


# ---- the block level (queues.placement.blocks), on a stack of its own -------------------------------------------
TRAIN = {"name": "train", "machineType": "tpu7x-standard-4t", "topology": "4x4x4", "slices": 2,
         "zone": "us-central1-c", "provisioning": "reservation",
         "reservation": "projects/proj-1234/reservations/iw/reservationBlocks/block-1"}  # fmt: skip
BLOCK_ANNOTATIONS = {
    "kueue.x-k8s.io/podset-slice-required-topology": "cloud.google.com/gke-nodepool",
    "kueue.x-k8s.io/podset-slice-size": "16",
    "kueue.x-k8s.io/podset-required-topology": "cloud.google.com/gce-topology-block",
}


@pytest.fixture(scope="module")
def blocks_view() -> why.StackView:
    config = {
        **BASE,
        "tpu-stack:cluster": {"minMasterVersion": "1.34.3-gke.1318000"},
        "tpu-stack:tpuPools": [TRAIN],
        "tpu-stack:queues": {"placement": {"pools": ["train"], "blocks": True, "slices": "required"}},
    }
    return Stack("blocks", run_program(config, stack="blocks").outputs).view()


def held(message: str) -> dict[str, Any]:
    """The corpus's 2-slice train Workload, its pods asking for one block, with Kueue's `message`."""
    case = copy.deepcopy(CASES["topology-one-slice-short"])
    workload = next(o for o in case["cluster"]["objects"] if o["kind"] == "Workload")
    workload["spec"]["podSets"][0]["template"]["metadata"]["annotations"] = dict(BLOCK_ANNOTATIONS)
    workload["status"]["conditions"][0]["message"] = message
    return case


def test_pools_in_two_blocks(blocks_view: why.StackView) -> None:
    """Every node free and ready, but train-0 and train-1 in different blocks, and the JobSet requires one: each block
    holds one slice, no node is left out, so Kueue's message has no exclusion list (tas_flavor_snapshot.go: the list
    only `if stats.hasExclusions()`)."""
    message = 'couldn\'t assign flavors to pod set slice: topology "tpu-blocks" allows to fit only 1 out of 2 slice(s)'
    diagnosis = diagnose(held(message), blocks_view)
    assert diagnosis.reason == (
        "Pending: its quota is free, but topology tpu-blocks on flavor train has room for only 1 of its 2 slices (each "
        "slice needs the 16 nodes of one node pool free and ready, all slices in one block)."
    )
    assert diagnosis.change.endswith(
        "If the pools are in different blocks, the slices never share one: set queues.placement.slices: preferred."
    )


def test_nodes_without_the_block_label(blocks_view: why.StackView) -> None:
    """Nodes exist but none carries cloud.google.com/gce-topology-block: Kueue leaves every one out of the flavor
    (pkg/util/tas/node.go NodeMatchesFlavor), and the block level has no domain."""
    message = (
        "couldn't assign flavors to pod set slice: no topology domains at level: cloud.google.com/gce-topology-block"
    )
    diagnosis = diagnose(held(message), blocks_view)
    assert diagnosis.reason == (
        "Pending: its quota is free, but flavor train's topology has no node at level "
        "cloud.google.com/gce-topology-block: Kueue places only on nodes that exist and carry every level's label."
    )
    assert diagnosis.change == (
        "Either node pools train-0, train-1 have no nodes, or their nodes do not carry "
        "cloud.google.com/gce-topology-block, which GKE documents for the VMs of a reservation block. `kubectl get "
        "nodes -l cloud.google.com/gke-nodepool=<pool> -L cloud.google.com/gce-topology-block` shows which; without "
        "the label, set queues.placement.blocks: false (a new Topology: rename the pool group with it, "
        "docs/workloads.md)."
    )
    assert diagnosis.who == (why.PLATFORM,)


def test_every_exclusion_kueue_counts_is_put_in_words() -> None:
    """tas_flavor_snapshot.go formatReasons: the parts, sorted, joined by ', '."""
    text = 'affinity: 2, nodeSelector: 16, resource "google.com/tpu": 1, taint "node.kubernetes.io/unreachable": 3'
    assert why._excluded(text) == (
        "2 not matching its affinity, 16 not selected by its node selector, 1 without a free google.com/tpu, "
        "3 tainted node.kubernetes.io/unreachable"
    )


def test_a_message_of_another_kind_is_left_to_the_other_cases(view: why.StackView) -> None:
    case = CASES["topology-one-slice-short"]
    workload = next(o for o in case["cluster"]["objects"] if o["kind"] == "Workload")
    assert why._held_by_topology(why.Evidence(workload=workload), view, "couldn't assign flavors: other") is None
