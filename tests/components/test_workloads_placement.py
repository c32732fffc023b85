"""Generated workloads on TPU7x fit the machine and ask Kueue for placement (the ironwood fixture): one container per
NUMA node of a tpu7x-standard-4t VM, and on the placed pool group train each slice on one node pool, all slices in
one block."""

from __future__ import annotations

from typing import Any

import pytest

from components.config.stack import StackConfig
from components.workloads import Workload, workloads
from offline import validate
from tests.fixtures import stack_config

SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"


@pytest.fixture(scope="module")
def config() -> StackConfig:
    return stack_config("ironwood")


@pytest.fixture(scope="module")
def found(config: StackConfig) -> dict[str, Workload]:
    return {workload.name: workload for workload in workloads(config)}


def template(workload: Workload) -> dict[str, Any]:
    obj = next(o for o in workload.objects if o["kind"] in ("Job", "JobSet"))
    if obj["kind"] == "Job":
        return dict(obj["spec"]["template"])
    return dict(obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"])


def test_the_stack_runs_one_and_two_slice_workloads_of_each_group(found: dict[str, Workload]) -> None:
    # Multi-host slices run as JobSets, of one slice or two (each slice a node pool of its own).
    assert sorted(found) == ["burst-1slice", "burst-2slice", "train-1slice", "train-2slice"]


def test_every_generated_object_is_valid(found: dict[str, Workload], config: StackConfig) -> None:
    objects = [obj for workload in found.values() for obj in workload.objects]
    assert validate.validate_all(objects, kubernetes_version=config.cluster.kubernetes_minor) == []


def test_a_multislice_train_jobset_keeps_each_slice_on_a_node_pool_and_all_in_one_block(
    found: dict[str, Workload],
) -> None:
    annotations = template(found["train-2slice"])["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if k.startswith("kueue.x-k8s.io/")} == {
        SLICE_REQUIRED: "cloud.google.com/gke-nodepool",
        SLICE_SIZE: "16",  # a 4x4x4 slice: 64 chips / 4 per VM, one pod per VM
        REQUIRED: "cloud.google.com/gce-topology-block",
    }


def test_one_slice_needs_no_block_and_the_unplaced_group_asks_for_nothing(found: dict[str, Workload]) -> None:
    for name in ("train-1slice",):
        annotations = template(found[name])["metadata"]["annotations"]
        assert {k: v for k, v in annotations.items() if k.startswith("kueue.x-k8s.io/")} == {
            SLICE_REQUIRED: "cloud.google.com/gke-nodepool",
            SLICE_SIZE: "16",
        }, name
    for name in ("burst-1slice", "burst-2slice"):
        annotations = (template(found[name]).get("metadata") or {}).get("annotations") or {}
        assert not [k for k in annotations if k.startswith("kueue.x-k8s.io/podset")], name


def test_preferred_blocks_when_the_team_says_so(config: StackConfig) -> None:
    placement = config.queues.placement.model_copy(update={"slices": "preferred"})
    preferred = config.model_copy(update={"queues": config.queues.model_copy(update={"placement": placement})})
    jobset = {w.name: w for w in workloads(preferred)}["train-2slice"]
    annotations = template(jobset)["metadata"]["annotations"]
    assert annotations[PREFERRED] == "cloud.google.com/gce-topology-block" and REQUIRED not in annotations


def test_one_container_per_numa_node_with_its_share_of_the_vm(found: dict[str, Workload]) -> None:
    """tpu7x-standard-4t: 4 chips, 224 vCPUs, 960 GiB, 2 NUMA nodes. What the TPU containers get of a node, by GKE's
    reservations: CPU 224000m - (60 + 10 + 10 + 220 x 2.5)m = 223370m allocatable, less 1000m for DaemonSets and
    250m for the FUSE sidecar = 222120m, half each = 111060m. Memory: capacity 983040 MiB x 98% = 963379 MiB; GKE
    keeps 1024 + 819.2 + 819.2 + 6881.28 + 2% of 832307 (16646.14) = 26190 MiB (rounded up) and 100 MiB for
    eviction: 937089 MiB allocatable, less 2048 and 256 = 934785 MiB, half each = 467392Mi; limit (937089 - 256) / 2 =
    468416Mi."""
    for name in ("train-2slice", "burst-1slice"):
        containers = template(found[name])["spec"]["containers"]
        assert [c["name"] for c in containers] == ["jax-tpu-1", "jax-tpu-2"]
        for container in containers:
            assert container["resources"] == {
                "requests": {"google.com/tpu": 2, "cpu": "111060m", "memory": "467392Mi"},
                "limits": {"google.com/tpu": 2, "memory": "468416Mi"},
            }
        assert containers[0]["command"] == containers[1]["command"]
        assert "ports" in containers[0] and "ports" not in containers[1]
