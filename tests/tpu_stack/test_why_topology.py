"""`tpu-stack why` for a workload held by topology: the corpus in corpus/topology.yaml (objects as Kueue v0.19.2 writes
them, its message quoted from source) on the ironwood fixture stack, whose outputs give the view as `why` reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures import stack_plan
from tests.tpu_stack.kueue_objects import NOW
from tpu_stack import why
from tpu_stack.stack import Stack

CORPUS = yaml.safe_load((Path(__file__).parent / "corpus" / "topology.yaml").read_text())
CASES = {case["id"]: case for case in CORPUS["cases"]}


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
    """train is 2 slices of 16 VMs (4x4x4 of 4-chip VMs) on node pools train-0 and train-1; the JobSet requires one
    block; Kueue counted the flavor's 32 nodes and left out one whose TPU chips are not free."""
    diagnosis = diagnose(CASES["topology-one-slice-short"], view)
    assert diagnosis.reason == (
        "Pending: its quota is free, but topology tpu-blocks on flavor train has room for only 1 of its 2 slices (each "
        "slice needs the 16 nodes of one node pool free and ready, all slices in one block). Of its 32 nodes Kueue "
        "left out 1 without a free google.com/tpu."
    )
    assert diagnosis.change == (
        "It starts when enough of node pools train-0, train-1 have all their nodes ready and free in one reservation "
        "block: a node that is down, being repaired or running another pod holds its whole slice. `kubectl get nodes "
        "-l cloud.google.com/gke-nodepool=<pool>` shows them. If the pools are in different blocks, the slices never "
        "share one: set queues.placement.slices: preferred."
    )


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
