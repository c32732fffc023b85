"""Ironwood (TPU7x) and placement by topology in the config model: one exact line per problem naming its key, exit 2,
nothing registered; and what the valid config derives (the workload policy's name and topology)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.config.base import ConfigError
from components.config.pools import TpuPoolConfig, workload_policy_name
from components.config.stack import load
from offline.engine import run_program
from tests.components.test_config import assert_one_clear_line

P0 = "tpu-stack:tpuPools[0]"
FLOOR = {"minMasterVersion": "1.34.0-gke.2201000"}
# GKE's Ironwood page: 1.34.0-gke.2201000 on Standard, 1.34.1-gke.3084001 on Autopilot.
SLICE = {"name": "train", "machineType": "tpu7x-standard-4t", "topology": "4x4x4", "zone": "us-central1-c",
         "provisioning": "reservation", "reservation": "projects/proj-1234/reservations/iw"}  # fmt: skip
BLOCK = "projects/proj-1234/reservations/iw/reservationBlocks/block-1"


def ironwood(*pools: dict[str, Any], cluster: dict[str, Any] | None = None, **keys: Any) -> dict[str, Any]:
    return {"tpu-stack:cluster": cluster or FLOOR, "tpu-stack:tpuPools": list(pools), **keys}


def train(**changes: Any) -> dict[str, Any]:
    merged = {**SLICE, **changes}
    return {k: v for k, v in merged.items() if v is not None}


BURST = train(name="burst", topology="2x2x2", provisioning="flex-start", reservation=None)
TOPOLOGIES = "2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4, 4x4x8, 4x4x12, 4x4x16, …"

CASES: list[tuple[str, dict[str, Any], str]] = [
    # A 3-D TPU7x slice has axes 2x2x1, 2x2x2, 2x2x4, 2x4x4 or multiples of 4 (xpk, Cluster Toolkit hardware.go).
    ("a TPU7x topology that does not exist", ironwood(train(topology="4x4x6")),
     f"{P0}.topology: '4x4x6' is not a tpu7x topology for tpu7x-standard-4t; valid: {TOPOLOGIES}"),
    ("a TPU7x slice beyond 144 cubes", ironwood(train(topology="16x24x28")),
     f"{P0}.topology: '16x24x28' is not a tpu7x topology for tpu7x-standard-4t; valid: {TOPOLOGIES}"),
    ("a TPU7x version below GKE's floor", ironwood(train(), cluster={"minMasterVersion": "1.34.0-gke.1500000"}),
     "tpu-stack:cluster.minMasterVersion: '1.34.0-gke.1500000' is below 1.34.0-gke.2201000, the first GKE version "
     "that runs TPU7x (Ironwood) on Standard clusters (tpuPools[0]); set minMasterVersion: \"1.34.0-gke.2201000\" or a "
     "newer version"),
    # "1.34" may be any 1.34 patch, older ones among them.
    ("a bare minor below GKE's floor", ironwood(BURST, train(), cluster={"minMasterVersion": "1.34"}),
     "tpu-stack:cluster.minMasterVersion: '1.34' is below 1.34.0-gke.2201000, the first GKE version that runs TPU7x "
     "(Ironwood) on Standard clusters (tpuPools[0]); set minMasterVersion: \"1.34.0-gke.2201000\" or a newer version"),
    ("Autopilot's TPU7x floor", {"tpu-stack:cluster": {"mode": "autopilot", "minMasterVersion": "1.34.0-gke.2201000"},
                                 "tpu-stack:queues": {"autopilotCapacity": [
                                     {"tpuVersion": "v6e", "topology": "2x2"},
                                     {"tpuVersion": "tpu7x", "topology": "2x2x1", "provisioning": "spot"}]}},
     "tpu-stack:cluster.minMasterVersion: '1.34.0-gke.2201000' is below 1.34.1-gke.3084001, the first GKE version "
     "that runs TPU7x (Ironwood) on Autopilot clusters (queues.autopilotCapacity[1]); set minMasterVersion: "
     "\"1.34.1-gke.3084001\" or a newer version"),
    ("a TPU7x calendar request the provider cannot make",
     ironwood(train(reservation=None, futureReservation={"startTime": "2099-01-01T00:00:00Z",
                                                          "endTime": "2099-01-08T00:00:00Z"})),
     f"{P0}.futureReservation: pulumi-gcp 10.2.0 cannot submit a TPU7x calendar-mode request (its "
     "aggregateReservation.vmFamily has no TPU7x family); request it in the console or with gcloud, then consume the "
     "approved reservation with reservation: <its name>"),
    ("a reservation block without its project path", ironwood(train(reservation="iw/reservationBlocks/block-1")),
     f"{P0}.reservation: 'iw/reservationBlocks/block-1' is not a reservation; give its name, "
     "projects/<project>/reservations/<name> (shared), or a block or sub-block: projects/<project>/reservations/"
     "<name>/reservationBlocks/<block>[/reservationSubBlocks/<sub-block>]"),
    ("a reservation block on a pool of no zone", ironwood(train(topology="2x2x1", zone=None, reservation=BLOCK)),
     f"{P0}.zone: required with a reservation block or sub-block: a block is in one zone"),
    ("placement of a single-host pool",
     ironwood(train(topology="2x2x1"), **{"tpu-stack:queues": {"placement": {"pools": ["train"]}}}),
     "tpu-stack:queues.placement.pools[0]: pool group 'train' is single-host (2x2x1, one VM a slice); topology "
     "placement is for slices of several VMs"),
    ("placement of no pool group", ironwood(train(), **{"tpu-stack:queues": {"placement": {"pools": ["trian"]}}}),
     "tpu-stack:queues.placement.pools[0]: 'trian' names no TPU pool the queues share; pools: train"),
    ("placement of part of a ladder",
     ironwood(train(labels={"pool": "train"}), train(name="spare", provisioning="spot", reservation=None),
              **{"tpu-stack:queues": {"ladders": {"train": ["train", "spare"]}, "placement": {"pools": ["train"]}}}),
     "tpu-stack:queues.placement.pools: ladder 'train' has rung 'train' placed by topology but not rung 'spare'; its "
     "workloads carry one placement request, which Kueue refuses on a flavor without a topology: list every rung of "
     "the ladder or none"),
    # Kueue's TAS cache holds only the nodes that exist (kueue v0.19.2 pkg/cache/scheduler/tas_nodes_cache.go
    # find, tas_topology_tree.go newTopologyTree); nodes made on request come through the ProvisioningRequest check
    # only (site/content/en/docs/concepts/topology_aware_scheduling.md, ClusterAutoscaler support).
    ("placement of a group that scales from zero",
     ironwood(train(), BURST, **{"tpu-stack:queues": {"placement": {"pools": ["train", "burst"]}}}),
     "tpu-stack:queues.placement.pools[1]: pool group 'burst' is flex-start and scales from zero, and Kueue places "
     "by topology only on nodes that exist, so its workloads would wait for nodes nothing brings up; place it only "
     "with provisioning: queued (Kueue's ProvisioningRequest check brings the nodes up first), or remove it"),
    # Kueue leaves out a node missing a level's label (pkg/util/tas/node.go NodeMatchesFlavor); GKE documents the
    # block label for the VMs of a reservation block; nodes a ProvisioningRequest brings up "may or may not respect
    # the topology requested" (keps/2724-topology-aware-scheduling/README.md, Provisioning request and required mode).
    ("the block level over a spot group",
     ironwood(train(name="spare", provisioning="spot", reservation=None),
              **{"tpu-stack:queues": {"placement": {"pools": ["spare"], "blocks": True}}}),
     "tpu-stack:queues.placement.blocks: placed pool group 'spare' is spot, and GKE documents "
     "cloud.google.com/gce-topology-block only for the VMs of a reservation (Kueue leaves out every node without a "
     "level's label); set blocks: false, or place only pool groups on reservations"),
    ("the block level over a queued group",
     ironwood(train(name="spare", provisioning="queued", reservation=None),
              **{"tpu-stack:queues": {"placement": {"pools": ["spare"], "blocks": True}}}),
     "tpu-stack:queues.placement.blocks: placed pool group 'spare' is queued, and GKE documents "
     "cloud.google.com/gce-topology-block only for the VMs of a reservation (Kueue leaves out every node without a "
     "level's label); set blocks: false, or place only pool groups on reservations"),
    ("slices required without the block level",
     ironwood(train(), **{"tpu-stack:queues": {"placement": {"pools": ["train"], "slices": "required"}}}),
     "tpu-stack:queues.placement.slices: required needs blocks: true; without the block level a node pool is the "
     "widest domain, and every slice has one of its own"),
    ("placement on Autopilot", {"tpu-stack:cluster": {"mode": "autopilot", "minMasterVersion": "1.34.1-gke.3084001"},
                                "tpu-stack:queues": {"autopilotCapacity": [{"tpuVersion": "v6e", "topology": "4x4",
                                                                            "provisioning": "spot"}],
                                                     "placement": {"pools": ["v6e-4x4"]}}},
     "tpu-stack:queues.placement.pools: Autopilot has no node pools to place slices on; remove queues.placement"),
    # GKE's node auto-provisioning places a multi-host TPU7x slice by a workload policy made beforehand and named by
    # the pods' node selector cloud.google.com/placement-policy-name (GoogleCloudPlatform/cluster-toolkit PR #6274,
    # pkg/orchestrator/gke/scheduling.go getNodeSelector; AI-Hypercomputer/xpk 367c8382 src/xpk/core/scheduling.py
    # create_placement_policy_label): not declared here yet.
    ("multi-host TPU7x on Autopilot",
     {"tpu-stack:cluster": {"mode": "autopilot", "minMasterVersion": "1.34.1-gke.3084001"},
      "tpu-stack:queues": {"autopilotCapacity": [
          {"tpuVersion": "tpu7x", "topology": "2x2x2", "provisioning": "spot"}]}},
     "tpu-stack:queues.autopilotCapacity[0].topology: a multi-host TPU7x slice (2x2x2, 2 VMs) on Autopilot needs a "
     "HIGH_THROUGHPUT workload policy made beforehand and named by its pods' node selector "
     "cloud.google.com/placement-policy-name, which tpu-stack does not declare yet; use a single-host topology "
     "(2x2x1), or a Standard cluster with tpuPools"),
    ("placement on a MultiKueue manager",
     # TPU7x is only in us-central1 (vendor/data/tpu_zones.json): the manager is elsewhere, the worker there.
     {"gcp:region": "us-east5", "tpu-stack:cluster": FLOOR, "tpu-stack:queues": {"placement": {"pools": ["train"]}},
      "tpu-stack:multiKueue": {"workers": [{"name": "tpu-central1", "region": "us-central1",
                                           "tpuPools": [train(zone="us-central1-c")]}]}},
     # Kueue supports it on the workers (kueue v0.19.2 pkg/cache/scheduler/clusterqueue.go: the manager skips its
     # TAS checks, "topology runs on worker clusters"); tpu-stack does not declare placement on workers yet.
     "tpu-stack:queues.placement: placement by topology with MultiKueue is not supported by tpu-stack yet (Kueue "
     "places on the workers, and tpu-stack does not give them the Topology and placed flavors); remove it, or place "
     "from a stack without multiKueue"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "extra", "message"), CASES, ids=[c[0] for c in CASES])
def test_invalid_config_is_one_clear_line_and_exit_2(
    case: str, extra: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_one_clear_line(extra, message, tmp_path, capsys)


def test_invalid_config_registers_nothing() -> None:
    recorded: list[dict[str, Any]] = []
    with pytest.raises(ConfigError):
        run_program(
            {"gcp:project": "proj-1234", "gcp:region": "us-central1", **CASES[0][1]}, stack="dev", recorded=recorded
        )
    assert recorded == []


def test_the_floor_itself_and_newer_minors_run_tpu7x() -> None:
    for version in ("1.34.0-gke.2201000", "1.34.1-gke.100", "1.35"):
        config = load(
            {"gcp:project": "proj-1234", "gcp:region": "us-central1",
             **ironwood(train(), cluster={"minMasterVersion": version})}, stack="dev",
        )  # fmt: skip
        assert config.tpu_pools[0].workload_policy_topology == "4x4x4"


def test_below_the_version_cluster_toolkit_asks_for_is_a_warning() -> None:
    """GKE's floor runs TPU7x; Cluster Toolkit's TPU7x example asks for 1.34.3-gke.1318000 or later "to function
    correctly" (GoogleCloudPlatform/cluster-toolkit v1.95.0 examples/gke-tpu-7x/README.md): valid, but said."""
    base = {"gcp:project": "proj-1234", "gcp:region": "us-central1"}
    warned = load({**base, **ironwood(train())}, stack="dev").warnings
    assert warned == [
        "tpu-stack:cluster.minMasterVersion: '1.34.0-gke.2201000' runs TPU7x (GKE's floor), but Cluster Toolkit's "
        "TPU7x example needs 1.34.3-gke.1318000 or later to work correctly; set minMasterVersion: "
        '"1.34.3-gke.1318000" unless this patch is what you have tested'
    ]
    for version in ("1.34.3-gke.1318000", "1.35"):
        config = load({**base, **ironwood(train(), cluster={"minMasterVersion": version})}, stack="dev")
        assert config.warnings == [], version


@pytest.mark.parametrize(
    "provisioning",
    [
        {"provisioning": "reservation", "reservation": BLOCK},
        {"provisioning": "reservation", "reservation": f"{BLOCK}/reservationSubBlocks/sub-0"},
        {"provisioning": "reservation", "reservation": "iw"},
        {"provisioning": "flex-start", "reservation": None},
        {"provisioning": "queued", "reservation": None},
        {"provisioning": "spot", "reservation": None},
        # "All TPU versions: see TPU regions and zones" in the on-demand row of
        # https://cloud.google.com/tpu/docs/consumption-options, whose zone list has "All TPU7x configurations:
        # us-central1-c" (https://cloud.google.com/tpu/docs/regions-zones).
        {"provisioning": "on-demand", "reservation": None},
    ],
)
def test_the_kinds_gke_offers_for_tpu7x(provisioning: dict[str, Any]) -> None:
    base = {"gcp:project": "proj-1234", "gcp:region": "us-central1"}
    config = load({**base, **ironwood(train(**provisioning))}, stack="dev")
    assert config.tpu_pools[0].provisioning == provisioning["provisioning"]


def test_a_queued_group_is_placed_and_a_reservation_group_under_the_block_level() -> None:
    """Queued provisioning brings a slice's nodes up before Kueue places it (the ProvisioningRequest admission check);
    a reservation's VMs carry the block label."""
    base = {"gcp:project": "proj-1234", "gcp:region": "us-central1"}
    queued = train(name="spare", topology="2x2x2", provisioning="queued", reservation=None)
    config = load({**base, **ironwood(train(), queued, **{"tpu-stack:queues": {"placement": {
        "pools": ["train", "spare"]}}})}, stack="dev")  # fmt: skip
    assert config.queues.placement.pools == ("train", "spare")
    config = load({**base, **ironwood(train(), **{"tpu-stack:queues": {"placement": {
        "pools": ["train"], "blocks": True, "slices": "required"}}})}, stack="dev")  # fmt: skip
    assert config.queues.placement.blocks


def test_only_multi_host_tpu7x_slices_need_a_workload_policy() -> None:
    """One VM (2x2x1 of 4 chips, 1x1x1 of the 1-chip type) is one host; other TPU versions take a tpuTopology."""
    shapes = {
        ("tpu7x-standard-4t", "4x4x4"): "4x4x4",
        ("tpu7x-standard-4t", "2x2x2"): "2x2x2",
        ("tpu7x-standard-4t", "2x2x1"): None,
        ("tpu7x-standard-1t", "1x1x1"): None,
        ("ct6e-standard-4t", "4x4"): None,
    }
    for (machine, topology), expected in shapes.items():
        pool = TpuPoolConfig(name="p", machine_type=machine, topology=topology, zone="us-central1-c")
        assert pool.workload_policy_topology == expected, (machine, topology)


def test_the_policy_name_says_pool_and_topology_and_keeps_clusters_apart() -> None:
    pool = TpuPoolConfig(name="train", machine_type="tpu7x-standard-4t", topology="4x4x4", zone="us-central1-c")
    name = workload_policy_name("tpu-iw", pool)
    assert name.startswith("train-4x4x4-") and len(name) == len("train-4x4x4-") + 8
    assert workload_policy_name("tpu-iw-2", pool) != name
    # A 40-character pool group name with a long topology stays within Compute's 63 characters.
    longest = TpuPoolConfig(name="a" * 38, machine_type="tpu7x-standard-4t", topology="16x16x36", zone="us-central1-c")
    assert len(workload_policy_name("tpu-iw", longest)) <= 63
