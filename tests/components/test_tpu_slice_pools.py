"""Node pools equal the seeds' gcloud commands, field by field in GKE API terms (facts §2)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from offline import policy_check
from offline.engine import Plan
from tests.conftest import StackRunner

NODE_POOL = "gcp:container/nodePool:NodePool"


def gke_api(inputs: dict[str, Any]) -> dict[str, Any]:
    """The GKE API fields (flattened) that a NodePool's provider inputs become on create.

    `nodeCount` of a fixed pool is sent as initialNodeCount on create, like gcloud's --num-nodes.
    An `autoscaling` block means autoscaling.enabled. An empty placementPolicy.type is not sent.
    """
    node_config = inputs.get("nodeConfig", {})
    affinity = node_config.get("reservationAffinity", {})
    scaling = inputs.get("autoscaling")
    fields = {
        "config.machineType": node_config.get("machineType"),
        "config.flexStart": node_config.get("flexStart"),
        "config.spot": node_config.get("spot"),
        "config.maxRunDuration": node_config.get("maxRunDuration"),
        "config.reservationAffinity.consumeReservationType": affinity.get("consumeReservationType"),
        "config.reservationAffinity.key": affinity.get("key"),
        "config.reservationAffinity.values": affinity.get("values"),
        "initialNodeCount": inputs.get("initialNodeCount", inputs.get("nodeCount")),
        "locations": inputs.get("nodeLocations"),
        "placementPolicy.tpuTopology": (inputs.get("placementPolicy") or {}).get("tpuTopology"),
        "placementPolicy.type": (inputs.get("placementPolicy") or {}).get("type") or None,
        "queuedProvisioning.enabled": (inputs.get("queuedProvisioning") or {}).get("enabled"),
        "management.autoRepair": inputs.get("management", {}).get("autoRepair"),
        "autoscaling.enabled": True if scaling else None,
    }
    for key in ("minNodeCount", "maxNodeCount", "totalMaxNodeCount", "locationPolicy"):
        fields[f"autoscaling.{key}"] = (scaling or {}).get(key)
    return {k: v for k, v in fields.items() if v is not None}


def pools_of(plan: Plan, group: str) -> list[dict[str, Any]]:
    return [r for r in plan.by_type(NODE_POOL) if r["parent"] and r["parent"].endswith(f"::{group}")]


# Zones that give the TPU version by every provisioning the tests use, flex-start and queued included
# (vendor/data/tpu_zones.json): v5e in us-west4-a, Trillium in us-east5-b.
V5E = {"gcp:region": "us-west4"}
V5E_ZONE = "us-west4-a"
V6E = {"gcp:region": "us-east5"}
V6E_ZONE = "us-east5-b"


def test_single_host_flex_start(run: StackRunner) -> None:
    # gcloud container node-pools create ... --machine-type=ct6e-standard-4t --flex-start
    #   --reservation-affinity=none --enable-autoscaling --num-nodes 0 --min-nodes=0 --max-nodes=1 --node-locations=Z
    plan = run({**V6E, "tpu-stack:tpuPools": [{"name": "single", "machineType": "ct6e-standard-4t",
                                        "provisioning": "flex-start", "zone": V6E_ZONE}]})  # fmt: skip
    (pool,) = pools_of(plan, "single")
    assert gke_api(pool["inputs"]) == {
        "config.machineType": "ct6e-standard-4t",
        "config.flexStart": True,
        "config.reservationAffinity.consumeReservationType": "NO_RESERVATION",
        "initialNodeCount": 0,
        "locations": [V6E_ZONE],
        "autoscaling.enabled": True,
        "autoscaling.minNodeCount": 0,
        "autoscaling.maxNodeCount": 1,
        "autoscaling.locationPolicy": "ANY",  # beyond the seed: xpk's flag (see the test at the end)
        "management.autoRepair": True,
    }


def test_multi_host_flex_start(run: StackRunner) -> None:
    # ... --tpu-topology=4x4 --max-nodes=4 (16 chips / 4 per VM) --no-enable-autorepair
    plan = run({**V6E, "tpu-stack:tpuPools": [{"name": "multi", "machineType": "ct6e-standard-4t", "topology": "4x4",
                                        "provisioning": "flex-start", "zone": V6E_ZONE}]})  # fmt: skip
    (pool,) = pools_of(plan, "multi")
    assert gke_api(pool["inputs"]) == {
        "config.machineType": "ct6e-standard-4t",
        "config.flexStart": True,
        "config.reservationAffinity.consumeReservationType": "NO_RESERVATION",
        "initialNodeCount": 0,
        "locations": [V6E_ZONE],
        "placementPolicy.tpuTopology": "4x4",
        "autoscaling.enabled": True,
        "autoscaling.minNodeCount": 0,
        "autoscaling.maxNodeCount": 4,
        "autoscaling.locationPolicy": "ANY",
        "management.autoRepair": False,
    }


def test_three_multislice_pools_of_the_kueue_jobset_seed(run: StackRunner) -> None:
    # Three times: --machine-type=ct5lp-hightpu-4t --tpu-topology=2x4 --num-nodes=2 --node-locations=Z
    plan = run({**V5E, "tpu-stack:tpuPools": [{"name": "ms", "machineType": "ct5lp-hightpu-4t", "topology": "2x4",
                                        "slices": 3, "zone": V5E_ZONE}]})  # fmt: skip
    pools = pools_of(plan, "ms")
    assert [p["inputs"]["name"] for p in pools] == ["ms-0", "ms-1", "ms-2"]
    for pool in pools:
        assert gke_api(pool["inputs"]) == {
            "config.machineType": "ct5lp-hightpu-4t",
            "initialNodeCount": 2,
            "locations": [V5E_ZONE],
            "placementPolicy.tpuTopology": "2x4",
            "management.autoRepair": True,
        }


def test_queued_provisioning_of_the_dws_seed(run: StackRunner) -> None:
    # The seed's flags plus what GKE's current page ("Run a large-scale workload with flex-start with queued
    # provisioning") requires: --flex-start --enable-queued-provisioning --enable-autoscaling --num-nodes=0
    #   --total-max-nodes=2 --location-policy=ANY --reservation-affinity=none --no-enable-autorepair
    plan = run({**V5E, "tpu-stack:tpuPools": [{"name": "dws", "machineType": "ct5lp-hightpu-4t", "topology": "2x4",
                                        "provisioning": "queued", "zone": V5E_ZONE}]})  # fmt: skip
    (pool,) = pools_of(plan, "dws")
    assert gke_api(pool["inputs"]) == {
        "config.machineType": "ct5lp-hightpu-4t",
        "config.flexStart": True,
        "autoscaling.locationPolicy": "ANY",
        "config.reservationAffinity.consumeReservationType": "NO_RESERVATION",
        "queuedProvisioning.enabled": True,
        "initialNodeCount": 0,
        "locations": [V5E_ZONE],
        "placementPolicy.tpuTopology": "2x4",
        "autoscaling.enabled": True,
        "autoscaling.totalMaxNodeCount": 2,
        "management.autoRepair": False,
    }


@pytest.mark.parametrize(
    ("provisioning", "duration", "sent"),
    [("flex-start", "24h", "86400s"), ("flex-start", "7d", "604800s"), ("queued", "90m", "5400s"),
     ("spot", "3600s", "3600s")],
)  # fmt: skip
def test_max_run_duration_reaches_gke_in_seconds(run: StackRunner, provisioning: str, duration: str, sent: str) -> None:
    # gcloud --max-run-duration=24h; the API field config.maxRunDuration is a protobuf Duration ("86400s").
    group = {"name": "p", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "provisioning": provisioning,
             "zone": V5E_ZONE, "maxRunDuration": duration}  # fmt: skip
    plan = run({**V5E, "tpu-stack:tpuPools": [group]})
    (pool,) = pools_of(plan, "p")
    assert gke_api(pool["inputs"])["config.maxRunDuration"] == sent


def test_two_saxml_slices(run: StackRunner) -> None:
    # Twice: --machine-type=ct5lp-hightpu-4t --tpu-topology=4x8 --num-nodes=8
    plan = run({**V5E, "tpu-stack:tpuPools": [{"name": "sax", "machineType": "ct5lp-hightpu-4t", "topology": "4x8",
                                        "slices": 2, "zone": V5E_ZONE}]})  # fmt: skip
    pools = pools_of(plan, "sax")
    assert len(pools) == 2
    for pool in pools:
        api = gke_api(pool["inputs"])
        assert (api["initialNodeCount"], api["placementPolicy.tpuTopology"]) == (8, "4x8")


@pytest.mark.parametrize(
    ("provisioning", "extra", "expected"),
    [
        ("spot", {}, {"config.spot": True}),
        ("reservation", {"reservation": "team-res"}, {
            "config.reservationAffinity.consumeReservationType": "SPECIFIC_RESERVATION",
            "config.reservationAffinity.key": "compute.googleapis.com/reservation-name",
            "config.reservationAffinity.values": ["team-res"]}),
    ],
)  # fmt: skip
def test_spot_and_reservation_modes(
    run: StackRunner, provisioning: str, extra: dict[str, Any], expected: dict[str, Any]
) -> None:
    plan = run({**V5E, "tpu-stack:tpuPools": [{"name": "p", "machineType": "ct5lp-hightpu-4t", "topology": "2x4",
                                        "provisioning": provisioning, "zone": V5E_ZONE, **extra}]})  # fmt: skip
    (pool,) = pools_of(plan, "p")
    api = gke_api(pool["inputs"])
    assert expected.items() <= api.items()
    assert api["initialNodeCount"] == 2 and "autoscaling.enabled" not in api


def calendar_plan(run: StackRunner, **window: str) -> tuple[Plan, str, str]:
    from datetime import UTC, datetime, timedelta

    start = (datetime.now(UTC) + timedelta(days=14)).replace(microsecond=0, second=0, minute=0)
    end = start + timedelta(days=7)
    plan = run({**V5E, "tpu-stack:tpuPools": [{
        "name": "cal", "machineType": "ct5lp-hightpu-4t", "topology": "4x4", "slices": 2, "zone": V5E_ZONE,
        "provisioning": "reservation",
        "futureReservation": {"startTime": start.isoformat(), "endTime": end.isoformat(), **window}}]})  # fmt: skip
    return plan, start.isoformat().replace("+00:00", "Z"), end.isoformat().replace("+00:00", "Z")


def test_calendar_mode_request_is_a_tpu_aggregate_reservation(run: StackRunner) -> None:
    # gcloud compute future-reservations create NAME --tpu-version=V5E --chip-count=32 --workload-type=BATCH
    #   --reservation-mode=CALENDAR --auto-delete-auto-created-reservations --require-specific-reservation
    plan, start, end = calendar_plan(run)
    (reservation,) = plan.by_type("gcp:compute/futureReservation:FutureReservation")
    inputs = reservation["inputs"]
    name = inputs["name"]
    assert re.fullmatch(f"cal-{start[:10].replace('-', '')}-[0-9a-f]{{8}}", name), name
    assert "specificSkuProperties" not in inputs
    assert inputs["aggregateReservation"] == {
        "vmFamily": "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT5LP",
        "workloadType": "BATCH",
        "reservedResources": [{"accelerator": {
            "acceleratorCount": 32,  # 2 slices x 4x4
            "acceleratorType": f"projects/proj-1234/zones/{V5E_ZONE}/acceleratorTypes/ct5lp"}}],
    }  # fmt: skip
    assert inputs["timeWindow"] == {"startTime": start, "endTime": end}
    assert inputs["autoDeleteAutoCreatedReservations"] is True
    assert inputs["specificReservationRequired"] is True
    assert (inputs["zone"], inputs["reservationMode"], inputs["name"], inputs["reservationName"]) == (
        V5E_ZONE, "CALENDAR", name, name)  # fmt: skip


def test_calendar_pools_are_usable_before_during_and_after_the_window(run: StackRunner) -> None:
    # The reservation exists only after approval and is active only in its window: each slice pool scales
    # 0 -> one slice (4 VMs of a 4x4 v5e slice) -> 0 on it instead of holding a fixed size.
    plan, _start, _end = calendar_plan(run)
    (reservation,) = plan.by_type("gcp:compute/futureReservation:FutureReservation")
    pools = pools_of(plan, "cal")
    assert len(pools) == 2
    for pool in pools:
        assert gke_api(pool["inputs"]) == {
            "config.machineType": "ct5lp-hightpu-4t",
            "config.reservationAffinity.consumeReservationType": "SPECIFIC_RESERVATION",
            "config.reservationAffinity.key": "compute.googleapis.com/reservation-name",
            "config.reservationAffinity.values": [reservation["inputs"]["name"]],
            "initialNodeCount": 0,
            "locations": [V5E_ZONE],
            "placementPolicy.tpuTopology": "4x4",
            "autoscaling.enabled": True,
            "autoscaling.minNodeCount": 0,
            "autoscaling.maxNodeCount": 4,
            "management.autoRepair": True,
        }
        assert "nodeCount" not in pool["inputs"]
        assert reservation["urn"] in pool["dependencies"]


def test_calendar_request_survives_destroy_and_is_never_updated(run: StackRunner) -> None:
    """A submitted request cannot be modified, cancelled or deleted (Compute calendar-mode limitations): destroy
    forgets it, and its own fields are not diffed (a changed request has a new name, which replaces it)."""
    plan, _start, _end = calendar_plan(run, workloadType="SERVING")
    (request,) = plan.by_type("gcp:compute/futureReservation:FutureReservation")
    assert request["retainOnDelete"] is True and request["replaceOnChanges"] == []
    assert request["ignoreChanges"] == [
        "timeWindow", "aggregateReservation", "reservationMode", "planningStatus", "reservationName",
        "autoDeleteAutoCreatedReservations", "specificReservationRequired",
    ]  # fmt: skip


def test_a_calendar_request_named_in_config_is_diffed() -> None:
    """A name given in config names one request: its fields are diffed, so a changed window shows (and Compute
    refuses it) instead of passing silently."""
    from datetime import UTC, datetime, timedelta

    from offline.engine import run_program
    from tests.conftest import BASE

    start = (datetime.now(UTC) + timedelta(days=14)).replace(microsecond=0, second=0, minute=0)
    window = {"startTime": start.isoformat(), "endTime": (start + timedelta(days=7)).isoformat(), "name": "q3"}
    pool = {"name": "cal", "machineType": "ct5lp-hightpu-4t", "topology": "4x4", "zone": V5E_ZONE,
            "provisioning": "reservation", "futureReservation": window}  # fmt: skip
    plan = run_program({**BASE, **V5E, "tpu-stack:tpuPools": [pool]}, stack="dev")
    (request,) = plan.by_type("gcp:compute/futureReservation:FutureReservation")
    assert request["ignoreChanges"] == [] and request["retainOnDelete"] is True


def test_a_changed_calendar_request_gets_a_name_of_its_own(run: StackRunner) -> None:
    """A submitted request keeps its name until Compute deletes it at the window's end: a changed window, chip
    count or workload type with the same start date must not ask for that name again (409)."""
    from datetime import UTC, datetime, timedelta

    start = (datetime.now(UTC) + timedelta(days=14)).replace(microsecond=0, second=0, minute=0)

    def name(days: int = 7, slices: int = 2, **window: str) -> str:
        end = start + timedelta(days=days)
        plan = run({**V5E, "tpu-stack:tpuPools": [{
            "name": "cal", "machineType": "ct5lp-hightpu-4t", "topology": "4x4", "slices": slices, "zone": V5E_ZONE,
            "provisioning": "reservation",
            "futureReservation": {"startTime": start.isoformat(), "endTime": end.isoformat(), **window}}]})  # fmt: skip
        (reservation,) = plan.by_type("gcp:compute/futureReservation:FutureReservation")
        return str(reservation["inputs"]["name"])

    first = name()
    assert name() == first  # the same request keeps its name: no replacement on every update
    others = {name(days=14), name(slices=4), name(workloadType="SERVING")}
    assert first not in others and len(others) == 3
    assert name(name="q3-training") == "q3-training"  # a name given in config is used as it is


def test_a_kept_calendar_request_is_taken_back_by_its_id(run: StackRunner) -> None:
    """`pulumi destroy` keeps a submitted request; `existing: true` imports it instead of submitting it again."""
    from datetime import UTC, datetime, timedelta

    start = (datetime.now(UTC) + timedelta(days=14)).replace(microsecond=0, second=0, minute=0)
    window = {"startTime": start.isoformat(), "endTime": (start + timedelta(days=7)).isoformat(), "name": "q3"}
    pool = {"name": "cal", "machineType": "ct5lp-hightpu-4t", "topology": "4x4", "zone": V5E_ZONE,
            "provisioning": "reservation"}  # fmt: skip
    fresh = run({**V5E, "tpu-stack:tpuPools": [{**pool, "futureReservation": window}]})
    kept = run({**V5E, "tpu-stack:tpuPools": [{**pool, "futureReservation": {**window, "existing": True}}]})
    (submitted,) = fresh.by_type("gcp:compute/futureReservation:FutureReservation")
    (imported,) = kept.by_type("gcp:compute/futureReservation:FutureReservation")
    assert submitted["importId"] is None
    assert imported["importId"] == f"projects/proj-1234/zones/{V5E_ZONE}/futureReservations/q3"
    assert imported["retainOnDelete"] is True
    # Compute's read-back forms of the imported request (times, accelerator type) must not show as an update.
    assert "timeWindow" in imported["ignoreChanges"] and "aggregateReservation" in imported["ignoreChanges"]


def test_tpu_pools_do_not_ignore_their_labels_and_taints(run: StackRunner) -> None:
    # Kueue's flavors are built from the same labels and taints; ignoring them lets nodes and flavors drift.
    plan = run({**V6E, "tpu-stack:tpuPools": [
        {"name": "flex", "machineType": "ct6e-standard-4t", "topology": "4x4", "provisioning": "flex-start",
         "zone": V6E_ZONE, "labels": {"team": "a"}, "taints": [{"key": "team", "value": "a"}]},
        {"name": "fixed", "machineType": "ct6e-standard-4t", "topology": "2x4", "zone": V6E_ZONE}]})  # fmt: skip
    for pool in plan.by_type(NODE_POOL):
        if pool["name"].endswith("system"):
            continue
        assert pool["inputs"]["placementPolicy"]["type"] == ""  # never sent to GKE: no perpetual diff
        assert not {"nodeConfig.taints", "nodeConfig.labels", "nodeConfig"} & set(pool["ignoreChanges"])
    (flex,) = pools_of(plan, "flex")
    (fixed,) = pools_of(plan, "fixed")
    assert flex["inputs"]["nodeConfig"]["taints"] == [{"key": "team", "value": "a", "effect": "NO_SCHEDULE"}]
    assert flex["ignoreChanges"] == ["initialNodeCount", "nodeCount"]  # the autoscaler owns the size
    assert fixed["ignoreChanges"] == []  # a fixed slice's size is ours


def test_slice_pools_never_wait_on_each_other(run: StackRunner) -> None:
    plan = run({**V5E, "tpu-stack:tpuPools": [{"name": "ms", "machineType": "ct5lp-hightpu-4t", "topology": "2x4",
                                        "slices": 4, "zone": V5E_ZONE}]})  # fmt: skip
    urns = {p["urn"] for p in pools_of(plan, "ms")}
    for pool in pools_of(plan, "ms"):
        assert not urns & set(pool["dependencies"])


def test_flex_start_pools_let_the_autoscaler_take_any_zone_with_capacity(run: StackRunner) -> None:
    """xpk creates every flex-start pool with `--location-policy=ANY` (AI-Hypercomputer/xpk src/xpk/core/capacity.py
    at 367c8382): in one zone it changes nothing, and a single-host pool without a zone comes up in whichever of the
    cluster's zones has capacity instead of GKE's default BALANCED spread. Auto-repair stays as GKE's flex-start
    tutorial creates the pools (on for single-host, off for multi-host): xpk's `--no-enable-autorepair` on single
    hosts would leave a failed VM billed and unreplaced, which GKE's auto-repair page warns against."""
    plan = run({**V6E, "tpu-stack:tpuPools": [
        {"name": "single", "machineType": "ct6e-standard-4t", "provisioning": "flex-start"},
        {"name": "multi", "machineType": "ct6e-standard-4t", "topology": "4x4", "provisioning": "flex-start",
         "zone": V6E_ZONE},
    ]})  # fmt: skip
    single, multi = gke_api(pools_of(plan, "single")[0]["inputs"]), gke_api(pools_of(plan, "multi")[0]["inputs"])
    assert (single["autoscaling.locationPolicy"], single["management.autoRepair"]) == ("ANY", True)
    assert (multi["autoscaling.locationPolicy"], multi["management.autoRepair"]) == ("ANY", False)


def test_reservation_pools_upgrade_without_surge_nodes(run: StackRunner) -> None:
    """Issue 27, defect 7. Surge nodes count against a specific reservation (GKE "Ensure resources for node upgrades":
    every node GKE creates, upgrade nodes included, is subject to the reservation's capacity for pools with specific
    reservation affinity; with maxSurge 5, maxUnavailable 0 and no extra node to be had, the upgrade fails and GKE
    keeps retrying). A reservation holding exactly the pool's VMs has none to spare, so its pools surge no node and
    take a slice down at once: a multi-host slice stops when any VM of it stops. GKE upgrades at most 20 nodes at a
    time (provider schema upgrade_settings). Flex-start and queued nodes get GKE's short-lived upgrades (node upgrade
    strategies page), on-demand and spot keep GKE's default surge."""
    plan = run({**V5E, "tpu-stack:tpuPools": [
        {"name": "res", "machineType": "ct5lp-hightpu-4t", "topology": "4x4", "slices": 2, "zone": V5E_ZONE,
         "provisioning": "reservation", "reservation": "r"},
        {"name": "big", "machineType": "ct5lp-hightpu-4t", "topology": "8x16", "zone": V5E_ZONE,
         "provisioning": "reservation", "reservation": "r2"},
        {"name": "one", "machineType": "ct5lp-hightpu-4t", "zone": V5E_ZONE, "provisioning": "reservation",
         "reservation": "r3"},
        {"name": "od", "machineType": "ct5lp-hightpu-4t", "topology": "4x8", "zone": V5E_ZONE},
        {"name": "q", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "zone": V5E_ZONE, "provisioning": "queued"},
    ]})  # fmt: skip
    settings = {
        p["name"]: p["inputs"].get("upgradeSettings")
        for p in plan.by_type(NODE_POOL)
        if not p["name"].endswith("-system")
    }
    # 4x4 v5e: 16 chips / 4 per VM = 4 VMs; 8x16: 128 / 4 = 32 VMs, GKE's cap of 20; a 2x2 slice is one VM.
    assert settings == {
        "res-0": {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 4},
        "res-1": {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 4},
        # A one-slice group's node pool is named <group>-0 (components/tpu_slice_pools.py).
        "big-0": {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 20},
        "one-0": {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1},
        "od-0": None,
        "q-0": None,
    }


def test_calendar_mode_pools_upgrade_without_surge_nodes(run: StackRunner) -> None:
    """A calendar-mode request is a specific reservation of exactly the pool's chips: no surge node either."""
    plan, _start, _end = calendar_plan(run)
    for pool in pools_of(plan, "cal"):
        assert pool["inputs"]["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 4}


@pytest.mark.parametrize("provisioning", ["spot", "on-demand"])
def test_a_slice_that_scales_to_zero_is_billed_only_while_a_pod_needs_it(run: StackRunner, provisioning: str) -> None:
    """Issue 27, defect 8: a fixed spot or on-demand slice is billed while idle. `scaleToZero` gives the group's pools
    the autoscaling flex-start pools have (gcloud --enable-autoscaling --num-nodes=0 --min-nodes=0 --max-nodes=<VMs>):
    the cluster autoscaler creates the slice when a pod needs it and removes it when idle; GKE scales a multi-host
    slice's pool atomically. The autoscaler owns the size, so the counts are ignored."""
    group = {"name": "p", "machineType": "ct5lp-hightpu-4t", "topology": "4x4", "provisioning": provisioning,
             "zone": V5E_ZONE, "scaleToZero": True}  # fmt: skip
    plan = run({**V5E, "tpu-stack:tpuPools": [group]})
    (pool,) = pools_of(plan, "p")
    api = gke_api(pool["inputs"])
    assert (api["initialNodeCount"], api["autoscaling.minNodeCount"], api["autoscaling.maxNodeCount"]) == (0, 0, 4)
    assert "nodeCount" not in pool["inputs"] and "autoscaling.locationPolicy" not in api
    assert api.get("config.spot") is (True if provisioning == "spot" else None)
    assert pool["ignoreChanges"] == ["initialNodeCount", "nodeCount"]


@pytest.mark.parametrize(
    ("pool", "line"),
    [
        ({"provisioning": "reservation", "reservation": "r"},
         "tpu-stack:tpuPools[0].scaleToZero: a reservation is billed whether its VMs run or not, so scaling its slices "
         "to zero saves nothing; remove scaleToZero"),
        ({"provisioning": "flex-start"},
         "tpu-stack:tpuPools[0].scaleToZero: flex-start slices always scale to zero; remove scaleToZero"),
        ({"provisioning": "queued"},
         "tpu-stack:tpuPools[0].scaleToZero: queued slices always scale to zero; remove scaleToZero"),
    ],
    ids=["reservation", "flex-start", "queued"],
)  # fmt: skip
def test_scale_to_zero_where_it_changes_nothing_is_one_line(pool: dict[str, Any], line: str) -> None:
    from components.config.base import ConfigError
    from components.config.stack import load
    from tests.conftest import BASE

    group = {"name": "p", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "zone": V5E_ZONE, "scaleToZero": True}
    with pytest.raises(ConfigError) as error:
        load({**BASE, **V5E, "tpu-stack:tpuPools": [{**group, **pool}]}, stack="dev")
    assert error.value.lines == [line]


def test_the_fixture_stacks_bill_no_slice_that_nothing_holds() -> None:
    """Defect 8 in the stacks: dev's spot rung and llm's serving groups scale to zero (llm's spare slices exist only
    while a rollout's new replica needs them). Fixed slices remain where they are billed anyway (prod's reservation)
    or held at rest (prod's serve: Saxml's two model servers, one per slice)."""
    from tests.fixtures import stack_plan

    fixed, scaling = {}, {}
    for stack in ("dev", "llm", "multiregion", "prod"):
        pools = [
            p for p in stack_plan(stack, render_charts=False).by_type(NODE_POOL) if "TpuSlicePools::" in p["parent"]
        ]
        fixed[stack] = sorted(p["name"] for p in pools if "nodeCount" in p["inputs"])
        scaling[stack] = {p["name"]: p["inputs"]["autoscaling"] for p in pools if "nodeCount" not in p["inputs"]}
    assert fixed == {"dev": [], "llm": [], "multiregion": [], "prod": ["serve-0", "serve-1", "train-0", "train-1"]}
    assert scaling["dev"]["multislice-spot"] == {"minNodeCount": 0, "maxNodeCount": 2}  # 2x4 v6e: 2 VMs
    # ct6e-standard-8t: one VM is the whole 2x4 slice; a 4x4 v5e slice is 4 VMs.
    assert scaling["llm"] == {
        "llm-v6e-0": {"minNodeCount": 0, "maxNodeCount": 1},
        "llm-v6e-1": {"minNodeCount": 0, "maxNodeCount": 1},
        "llm-v5e-0": {"minNodeCount": 0, "maxNodeCount": 4},
        "llm-v5e-1": {"minNodeCount": 0, "maxNodeCount": 4},
        "llm-v5e-2": {"minNodeCount": 0, "maxNodeCount": 4},
    }


@pytest.mark.parametrize(
    ("machine", "topology", "zone"),
    [("ct5lp-hightpu-1t", "1x1", "us-central1-a"), ("ct6e-standard-8t", "2x4", "us-central1-b")],
)
def test_a_single_host_machine_type_with_its_topology_written_sends_none(
    run: StackRunner, machine: str, topology: str, zone: str
) -> None:
    """Found by tests/properties: `topology` may name a single-host machine type's one shape (the config reference's
    default), and the pool then sent it as placementPolicy.tpuTopology, which the pack's tpu-topology-and-node-count
    refuses for these machine types (a mandatory violation): gcloud sends no topology for a single-host pool."""
    plan = run({"tpu-stack:tpuPools": [{"name": "one", "machineType": machine, "topology": topology, "zone": zone}]})
    (pool,) = pools_of(plan, "one")
    assert "placementPolicy" not in pool["inputs"]
    assert [v for v in policy_check.evaluate(plan.resources, stack="dev") if v["level"] == "mandatory"] == []


# A pool without node locations in a regional cluster spans the cluster's default zones, three (GKE, "Regional
# clusters": "replicates each node pool across three zones of the control plane's region"), and nodeCount,
# initialNodeCount and autoscaling min/maxNodeCount are per zone while total{Min,Max}NodeCount are totals
# (terraform-provider-google v7.45.0 container_node_pool docs and resource_container_node_pool.go schema; GKE
# "About cluster autoscaling", autoscaling limits). Expected zones from the TPU regions page and GKE's flex-start page
# (vendor/data/tpu_zones.json): v6e in us-east5-a and us-east5-b (both flex-start), in us-central1 only us-central1-b
# (not flex-start); v5e flex-start only in us-west4-a.
ZONELESS = [
    # (region, pool fields, nodeLocations, autoscaling)
    ("us-east5", {"provisioning": "flex-start"}, ["us-east5-a", "us-east5-b"],
     {"totalMaxNodeCount": 1, "locationPolicy": "ANY"}),
    ("us-east5", {"provisioning": "queued"}, ["us-east5-a", "us-east5-b"],
     {"totalMaxNodeCount": 1, "locationPolicy": "ANY"}),
    ("us-central1", {"provisioning": "spot", "scaleToZero": True}, ["us-central1-b"],
     {"totalMaxNodeCount": 1, "locationPolicy": "ANY"}),
    ("us-east5", {"scaleToZero": True, "slices": 2}, ["us-east5-a", "us-east5-b"],
     {"totalMaxNodeCount": 1, "locationPolicy": "ANY"}),
    ("us-west4", {"machineType": "ct5lp-hightpu-8t", "provisioning": "flex-start"}, ["us-west4-a"],
     {"totalMaxNodeCount": 1, "locationPolicy": "ANY"}),
]  # fmt: skip


@pytest.mark.parametrize(("region", "fields", "zones", "scaling"), ZONELESS)
def test_a_group_scaled_from_zero_without_a_zone_lives_in_the_zones_offering_its_tpu_and_holds_its_slices(
    run: StackRunner, region: str, fields: dict[str, Any], zones: list[str], scaling: dict[str, Any]
) -> None:
    """Found by tests/properties: such a pool had no node locations, so GKE spread it over the cluster's three zones,
    zones without its TPU among them (GKE's create fails there, as for GPUs in the regional clusters page), and its
    per-zone maximum let it hold a slice in each. Now each slice's pool is in the region's zones that offer the TPU
    by its provisioning, and holds one slice in all of them."""
    from offline import summary
    from offline.catalogue import _pool_max_nodes

    plan = run({"gcp:region": region, "tpu-stack:tpuPools": [{"name": "one", "machineType": "ct6e-standard-4t",
                                                              **fields}]})  # fmt: skip
    pools = pools_of(plan, "one")
    slices = fields.get("slices", 1)
    assert len(pools) == slices
    for pool in pools:
        assert pool["inputs"]["nodeLocations"] == zones
        assert pool["inputs"]["autoscaling"] == scaling
        assert _pool_max_nodes(pool, 3) == 1  # a one-VM slice, whatever the number of zones
    chips = 8 if fields.get("machineType") == "ct5lp-hightpu-8t" else 4
    found = summary.from_outputs(plan.outputs)
    assert found["capacity"]["one"]["chips"] == chips * slices
    assert [row["chips"] for row in found["quota"]] == [chips * slices]
    assert found["queues"]["teams"]["default"]["flavors"]["one"]["nominalQuota"] == chips * slices


def test_a_fixed_group_without_a_zone_in_a_zonal_cluster_holds_its_slices_in_the_clusters_zone(
    run: StackRunner,
) -> None:
    """A zonal cluster's pools are in its zone unless they name others: nodeCount counts once there."""
    from offline import summary

    plan = run({"tpu-stack:cluster": {"location": "us-central1-b"},
                "tpu-stack:tpuPools": [{"name": "one", "machineType": "ct6e-standard-4t", "slices": 2}]})  # fmt: skip
    pools = pools_of(plan, "one")
    assert [p["inputs"].get("nodeLocations") for p in pools] == [None, None]
    assert [p["inputs"]["nodeCount"] for p in pools] == [1, 1]
    found = summary.from_outputs(plan.outputs)
    assert found["capacity"]["one"]["chips"] == 8
    assert [row["chips"] for row in found["quota"]] == [8]
