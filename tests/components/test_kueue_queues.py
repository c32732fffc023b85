"""Kueue objects derived from the pools: the seeds' queues, quotas that follow the pools, teams in a cohort,
admission checks for queued provisioning, and every object valid for the API server (CRDs + CEL, core strict).

Seed multislice-kueue-jobset: three ct5lp-hightpu-4t 2x4 slices, a ResourceFlavor with the v5e/2x4 labels,
a ClusterQueue with nominalQuota 24 for google.com/tpu (hard-coded there, derived here), LocalQueue
`multislice-queue` in `default`, preemption reclaimWithinCohort Any / withinClusterQueue LowerPriority.
Seed dynamic-workload-scheduler: queued-provisioning pools get chips through a ProvisioningRequest.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import tpu_catalog
from components.config.base import ConfigError
from components.config.stack import load
from offline import __main__ as cli
from offline import validate
from offline.engine import Plan, run_program
from offline.vendor import VENDOR
from tests.conftest import BASE, StackRunner
from tests.fixtures import stack_plan
from tests.registration_options import changed_paths, replaced_by, replacement_options

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"
CHART = "kubernetes:helm.sh/v4:Chart"
TPU = tpu_catalog.TPU_RESOURCE
# The v5e pool groups in us-west4-a, which gives v5e by every provisioning, queued (flex-start) included; the
# flex-start seed's Trillium in us-east5-b (vendor/data/tpu_zones.json). No region gives both on flex-start.
REGION = {"gcp:region": "us-west4"}
ZONE = "us-west4-a"
V6E_REGION = {"gcp:region": "us-east5"}
V6E_ZONE = "us-east5-b"
MULTISLICE = {"name": "multislice", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "slices": 3, "zone": ZONE}
FLEX_SINGLE = {"name": "flex-single", "machineType": "ct6e-standard-4t", "provisioning": "flex-start",
               "zone": V6E_ZONE}  # fmt: skip
FLEX_MULTI = {"name": "flex-multi", "machineType": "ct6e-standard-4t", "topology": "4x4",
              "provisioning": "flex-start", "zone": V6E_ZONE, "maxRunDuration": "24h"}  # fmt: skip
# A single-host v5e flex-start pool group (one 2x2 VM, 4 chips): beside the ladder, of another shape.
FLEX_V5E = {"name": "flex-single", "machineType": "ct5lp-hightpu-4t", "provisioning": "flex-start", "zone": ZONE}
QUEUED = {"name": "dws", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "provisioning": "queued",
          "zone": ZONE, "maxRunDuration": "7d"}  # fmt: skip
# Same machine and topology as MULTISLICE: a label both carry, with different values, keeps the two flavors apart
# (Kueue matches a workload on the labels a flavor has, so a label on one of them only would not).
QUEUED_LABELED = {**QUEUED, "labels": {"pool": "dws"}}
MULTISLICE_LABELED = {**MULTISLICE, "labels": {"pool": "multislice"}}
# A capacity ladder of v5e 2x4 slices: a reservation, then spot (both billed while up), then queued provisioning (made
# on request). Listed out of ladder order among the pools (spot first) and beside a single-host pool
# group, another shape.
RESERVED = {"name": "reserved", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "slices": 2, "zone": ZONE,
            "provisioning": "reservation", "reservation": "v5e-2x4"}  # fmt: skip
SPOT_TAINT = {"key": "cloud.google.com/gke-spot", "value": "true"}
SPOT = {"name": "spot", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "slices": 2, "zone": ZONE,
        "provisioning": "spot", "taints": [SPOT_TAINT]}  # fmt: skip
LADDER = {
    "tpu-stack:tpuPools": [SPOT, FLEX_V5E, RESERVED, QUEUED],
    "tpu-stack:queues": {
        "ladders": {"v5e-2x4": ["reserved", "spot", "dws"]},
        "teams": [
            {"name": "research", "shares": {"reserved": 8, "dws": 8}, "borrowingLimit": {"spot": 8}},
            {"name": "training", "shares": {"reserved": "50%", "flex-single": 4}, "borrowingLimit": {"dws": 0}},
        ],
    },
}
TEAMS = [
    {"name": "research", "shares": {"multislice": 16}, "borrowingLimit": {"multislice": 8}},
    {"name": "prod-training", "namespace": "training", "shares": {"multislice": "25%", "dws": 8}},
]

# The seeds' scenarios (and the two stack shapes the seeds do not cover: teams, Autopilot).
SCENARIOS: dict[str, dict[str, Any]] = {
    "multislice-seed": {"tpu-stack:tpuPools": [MULTISLICE]},
    "flex-start-seed": {**V6E_REGION, "tpu-stack:tpuPools": [FLEX_SINGLE, FLEX_MULTI]},
    "dws-seed": {"tpu-stack:tpuPools": [QUEUED]},
    "teams": {
        "tpu-stack:tpuPools": [MULTISLICE_LABELED, QUEUED_LABELED],
        "tpu-stack:queues": {
            "teams": TEAMS,
            "hostResources": {"multislice": {"cpu": 100, "memory": "170Gi"}, "dws": {"cpu": 100, "memory": "170Gi"}},
        },
    },
    "ladder": LADDER,
    "autopilot": {
        "tpu-stack:cluster": {"mode": "autopilot"},
        "tpu-stack:queues": {
            "autopilotCapacity": [
                {"tpuVersion": "v5e", "topology": "2x4", "slices": 2, "provisioning": "flex-start"},
                {"name": "v6e-spot", "machineType": "ct6e-standard-4t", "topology": "4x4", "provisioning": "spot"},
            ]
        },
    },
}


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    """Every scenario and both stack files, run once for the module."""
    runs = {name: run_program({**BASE, **REGION, **config}, stack="dev") for name, config in SCENARIOS.items()}
    return {**runs, "dev": stack_plan("dev"), "prod": stack_plan("prod")}


def kueue(plan: Plan, kind: str) -> list[dict[str, Any]]:
    return [r["inputs"] for r in plan.by_type(KUEUE + kind)]


def named(plan: Plan, kind: str, name: str) -> dict[str, Any]:
    (found,) = [obj for obj in kueue(plan, kind) if obj["metadata"]["name"] == name]
    return found


def tpu_quota(cluster_queue: dict[str, Any]) -> dict[str, Any]:
    """flavor -> google.com/tpu resource entry."""
    (group,) = cluster_queue["spec"]["resourceGroups"]
    return {f["name"]: next(r for r in f["resources"] if r["name"] == TPU) for f in group["flavors"]}


# ---- 1. the multislice seed --------------------------------------------------------------------------------


def test_multislice_seed_one_flavor_quota_24_and_the_seed_local_queue(plans: dict[str, Plan]) -> None:
    plan = plans["multislice-seed"]
    (flavor,) = kueue(plan, "ResourceFlavor")
    assert flavor["spec"]["nodeLabels"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
    }
    (queue,) = kueue(plan, "ClusterQueue")
    assert tpu_quota(queue) == {flavor["metadata"]["name"]: {"name": TPU, "nominalQuota": 24}}
    assert queue["spec"]["resourceGroups"][0]["coveredResources"] == [TPU]
    assert queue["spec"]["queueingStrategy"] == "BestEffortFIFO"
    assert queue["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    assert "cohortName" not in queue["spec"] and "admissionChecksStrategy" not in queue["spec"]
    (local,) = kueue(plan, "LocalQueue")
    assert local["metadata"] == {"name": "multislice-queue", "namespace": "default"}
    assert local["spec"] == {"clusterQueue": queue["metadata"]["name"]}
    assert plan.outputs["queues"] == {
        "default": {"namespace": "default", "localQueue": "multislice-queue", "clusterQueue": "cluster-queue"}
    }
    assert plan.outputs["flavors"] == {"multislice": flavor["spec"]["nodeLabels"]}


def test_five_slices_make_the_quota_40_with_no_other_edit(run: StackRunner) -> None:
    plan = run({**REGION, "tpu-stack:tpuPools": [{**MULTISLICE, "slices": 5}]})
    (queue,) = kueue(plan, "ClusterQueue")
    assert tpu_quota(queue)["multislice"]["nominalQuota"] == 40


def test_flavors_carry_the_flex_start_and_spot_labels_and_tolerate_the_tpu_taint(plans: dict[str, Plan]) -> None:
    flex = named(plans["flex-start-seed"], "ResourceFlavor", "flex-multi")["spec"]
    assert flex["nodeLabels"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "4x4",
        "cloud.google.com/gke-flex-start": "true",
    }
    assert flex["tolerations"] == [{"key": TPU, "operator": "Exists", "effect": "NoSchedule"}]
    spot = named(plans["autopilot"], "ResourceFlavor", "v6e-spot")["spec"]["nodeLabels"]
    assert spot["cloud.google.com/gke-spot"] == "true"


def test_seed_preemption_and_queueing_are_configurable(run: StackRunner) -> None:
    plan = run({**REGION, "tpu-stack:tpuPools": [MULTISLICE], "tpu-stack:queues": {"queueingStrategy": "StrictFIFO",
                "preemption": {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"},
                "clusterQueue": "tpu", "localQueue": "jobs", "namespace": "ml"}})  # fmt: skip
    (queue,) = kueue(plan, "ClusterQueue")
    assert queue["metadata"]["name"] == "tpu"
    assert queue["spec"]["queueingStrategy"] == "StrictFIFO"
    assert queue["spec"]["preemption"] == {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"}
    (local,) = kueue(plan, "LocalQueue")
    assert local["metadata"] == {"name": "jobs", "namespace": "ml"}
    namespaces = [r["inputs"]["metadata"]["name"] for r in plan.by_type("kubernetes:core/v1:Namespace")]
    assert "ml" in namespaces


# ---- 3. queued provisioning (DWS) vs flex-start -------------------------------------------------------------


def test_queued_pool_gets_a_provisioning_request_check_on_its_flavor_only(plans: dict[str, Plan]) -> None:
    plan = plans["teams"]
    (config,) = kueue(plan, "ProvisioningRequestConfig")
    # retryStrategy: Kueue's default (its CRD), written down as the stack's decision (components/config/controllers.py).
    assert config["spec"] == {
        "provisioningClassName": "queued-provisioning.gke.io",
        "managedResources": [TPU],
        "retryStrategy": {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800},
    }
    (check,) = kueue(plan, "AdmissionCheck")
    assert check["spec"] == {
        "controllerName": "kueue.x-k8s.io/provisioning-request",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "ProvisioningRequestConfig",
            "name": config["metadata"]["name"],
        },
    }
    for queue in kueue(plan, "ClusterQueue"):
        assert queue["spec"]["admissionChecksStrategy"] == {
            "admissionChecks": [{"name": check["metadata"]["name"], "onFlavors": ["dws"]}]
        }
        assert set(tpu_quota(queue)) == {"multislice", "dws"}
    dws = named(plan, "ResourceFlavor", "dws")["spec"]
    assert {"key": tpu_catalog.QUEUED_TAINT, "operator": "Exists", "effect": "NoSchedule"} in dws["tolerations"]
    # GKE creates queued pools with --flex-start: their nodes carry the flex-start label, the flavor selects it.
    assert dws["nodeLabels"] == {
        "pool": "dws",
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
        "cloud.google.com/gke-flex-start": "true",
    }
    other = named(plan, "ResourceFlavor", "multislice")["spec"]
    assert all(t["key"] != tpu_catalog.QUEUED_TAINT for t in other["tolerations"])


def test_flex_start_pools_without_queuing_get_no_admission_check(plans: dict[str, Plan]) -> None:
    plan = plans["flex-start-seed"]
    assert kueue(plan, "AdmissionCheck") == [] and kueue(plan, "ProvisioningRequestConfig") == []
    (queue,) = kueue(plan, "ClusterQueue")
    assert "admissionChecksStrategy" not in queue["spec"]
    assert {f: r["nominalQuota"] for f, r in tpu_quota(queue).items()} == {"flex-single": 4, "flex-multi": 16}


# ---- 4. teams in a cohort --------------------------------------------------------------------------------


def test_teams_get_namespaces_queues_and_shares_in_one_cohort(plans: dict[str, Plan]) -> None:
    plan = plans["teams"]
    assert plan.outputs["queues"] == {
        "research": {"namespace": "research", "localQueue": "research-queue",
                     "clusterQueue": "research-cluster-queue"},
        "prod-training": {"namespace": "training", "localQueue": "prod-training-queue",
                          "clusterQueue": "prod-training-cluster-queue"},
    }  # fmt: skip
    namespaces = {r["inputs"]["metadata"]["name"] for r in plan.by_type("kubernetes:core/v1:Namespace")}
    assert {"research", "training"} <= namespaces
    research = named(plan, "ClusterQueue", "research-cluster-queue")
    training = named(plan, "ClusterQueue", "prod-training-cluster-queue")
    assert research["spec"]["cohortName"] == training["spec"]["cohortName"] == "tpu-stack"
    assert research["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "research"}}
    # research: 16 of 24 multislice chips, may borrow 8 more; prod-training: 25% = 6 chips and the 8-chip dws slice.
    assert tpu_quota(research) == {
        "multislice": {"name": TPU, "nominalQuota": 16, "borrowingLimit": 8},
        "dws": {"name": TPU, "nominalQuota": 0},
    }
    assert tpu_quota(training) == {
        "multislice": {"name": TPU, "nominalQuota": 6},
        "dws": {"name": TPU, "nominalQuota": 8},
    }
    # The 2 chips no team holds stay with the Cohort, so teams and cohort add up to the pools exactly.
    (cohort,) = kueue(plan, "Cohort")
    assert cohort["metadata"]["name"] == "tpu-stack"
    assert tpu_quota(cohort) == {"multislice": {"name": TPU, "nominalQuota": 2}}
    for local in kueue(plan, "LocalQueue"):
        team = next(t for t in plan.outputs["queues"].values() if t["localQueue"] == local["metadata"]["name"])
        assert local["metadata"]["namespace"] == team["namespace"]
        assert local["spec"] == {"clusterQueue": team["clusterQueue"]}


def test_host_resources_are_covered_beside_chips_in_proportion(plans: dict[str, Plan]) -> None:
    research = named(plans["teams"], "ClusterQueue", "research-cluster-queue")["spec"]
    (group,) = research["resourceGroups"]
    assert group["coveredResources"] == [TPU, "cpu", "memory"]
    multislice = next(f for f in group["flavors"] if f["name"] == "multislice")
    # 16 chips = 4 VMs of 4 chips, each with 100 cores and 170Gi; borrowing 8 chips = 2 VMs.
    assert multislice["resources"] == [
        {"name": TPU, "nominalQuota": 16, "borrowingLimit": 8},
        {"name": "cpu", "nominalQuota": "400", "borrowingLimit": "200"},
        {"name": "memory", "nominalQuota": "680Gi", "borrowingLimit": "340Gi"},
    ]


def test_dev_stack_teams_and_cohort_hold_exactly_its_pools_chips(plans: dict[str, Plan]) -> None:
    """Pulumi.dev.yaml: flex-v6e is one ct6e-standard-4t 2x2 slice (4 chips), multislice three v5e 2x4 slices
    (3 x 8 = 24 chips), multislice-spot one (8 chips; it was three, 24, before the spot rung became the ladder's first
    and research's). research holds 4 + 8 + 8, training 0 + 8 + 0 and may borrow no flex-v6e chip (limit 0) and 8
    multislice chips; the Cohort keeps the 24 - 16 = 8 multislice chips, and no spot chip: research holds all 8."""
    plan = plans["dev"]
    research = named(plan, "ClusterQueue", "research-cluster-queue")
    training = named(plan, "ClusterQueue", "training-cluster-queue")
    assert tpu_quota(research) == {
        "flex-v6e": {"name": TPU, "nominalQuota": 4},
        "multislice": {"name": TPU, "nominalQuota": 8},
        "multislice-spot": {"name": TPU, "nominalQuota": 8},
    }
    assert tpu_quota(training) == {
        "flex-v6e": {"name": TPU, "nominalQuota": 0, "borrowingLimit": 0},
        "multislice": {"name": TPU, "nominalQuota": 8, "borrowingLimit": 8},
        "multislice-spot": {"name": TPU, "nominalQuota": 0},
    }
    (cohort,) = kueue(plan, "Cohort")
    assert tpu_quota(cohort) == {"multislice": {"name": TPU, "nominalQuota": 8}}


def test_a_percentage_share_is_rounded_down(run: StackRunner) -> None:
    """30% of the seed's 24 chips is 7.2: a team gets 7 (8 would promise a chip the pool may not have), and the
    Cohort keeps the other 17. A borrowing limit in percent rounds down the same way."""
    team = {"name": "a", "shares": {"multislice": "30%"}, "borrowingLimit": {"multislice": "30%"}}
    plan = run({**REGION, "tpu-stack:tpuPools": [MULTISLICE], "tpu-stack:queues": {"teams": [team]}})
    assert tpu_quota(named(plan, "ClusterQueue", "a-cluster-queue")) == {
        "multislice": {"name": TPU, "nominalQuota": 7, "borrowingLimit": 7}
    }
    (cohort,) = kueue(plan, "Cohort")
    assert tpu_quota(cohort) == {"multislice": {"name": TPU, "nominalQuota": 17}}


def test_a_borrowing_limit_of_zero_is_sent_not_dropped(run: StackRunner) -> None:
    """Kueue reads a missing borrowingLimit as "borrow without limit": 0 must reach the ClusterQueue as 0."""
    teams = [
        {"name": "a", "shares": {"multislice": 8}, "borrowingLimit": {"multislice": 0}},
        {"name": "b", "shares": {"multislice": 8}},
    ]
    plan = run({**REGION, "tpu-stack:tpuPools": [MULTISLICE], "tpu-stack:queues": {"teams": teams}})
    assert tpu_quota(named(plan, "ClusterQueue", "a-cluster-queue")) == {
        "multislice": {"name": TPU, "nominalQuota": 8, "borrowingLimit": 0}
    }
    assert tpu_quota(named(plan, "ClusterQueue", "b-cluster-queue")) == {"multislice": {"name": TPU, "nominalQuota": 8}}


# ---- capacity ladders: Kueue walks the rungs -------------------------------------------------------------------
# Kueue v0.19.2 (8eab687) pkg/scheduler/flavorassigner/flavorassigner.go: findFlavorForPodSets tries a resource
# group's flavors in their listed order; shouldTryNextFlavor moves on from a flavor the workload does not fit, or
# fits only by preempting (whenCanPreempt TryNextFlavor) or borrowing (whenCanBorrow TryNextFlavor); with neither
# outright, isPreferred keeps the best seen (PreemptionOverBorrowing: the least borrowing first, so the team's own
# quota on an earlier rung beats borrowing on a later one), the earlier flavor on a tie. A covered resource may be in
# one resource group only (pkg/webhooks/clusterqueue_webhook.go validateResourceGroups), so every TPU flavor is in the
# one group and a ladder's rungs must be listed together, in ladder order.
TRY_NEXT = {
    "whenCanBorrow": "TryNextFlavor",
    "whenCanPreempt": "TryNextFlavor",
    "preference": "PreemptionOverBorrowing",
}


def flavors(cluster_queue: dict[str, Any]) -> list[dict[str, Any]]:
    (group,) = cluster_queue["spec"]["resourceGroups"]
    assert group["coveredResources"] == [TPU]
    return list(group["flavors"])


def test_a_ladder_is_listed_in_ladder_order_with_try_next_flavor_in_every_team_queue(plans: dict[str, Plan]) -> None:
    """Pools listed spot, flex-single, reserved, dws; ladder v5e-2x4 = reserved, spot, dws. The ladder stands where
    its first-listed pool group (spot) stands, in ladder order; flex-single (another shape) after it. Quotas are
    each rung's own: research 8 reserved + 8 dws and may borrow 8 spot chips; training 50% of the 16 reserved chips,
    the 4 flex-single chips and may borrow no dws chip."""
    plan = plans["ladder"]
    research = named(plan, "ClusterQueue", "research-cluster-queue")
    training = named(plan, "ClusterQueue", "training-cluster-queue")
    assert flavors(research) == [
        {"name": "reserved", "resources": [{"name": TPU, "nominalQuota": 8}]},
        {"name": "spot", "resources": [{"name": TPU, "nominalQuota": 0, "borrowingLimit": 8}]},
        {"name": "dws", "resources": [{"name": TPU, "nominalQuota": 8}]},
        {"name": "flex-single", "resources": [{"name": TPU, "nominalQuota": 0}]},
    ]
    assert flavors(training) == [
        {"name": "reserved", "resources": [{"name": TPU, "nominalQuota": 8}]},
        {"name": "spot", "resources": [{"name": TPU, "nominalQuota": 0}]},
        {"name": "dws", "resources": [{"name": TPU, "nominalQuota": 0, "borrowingLimit": 0}]},
        {"name": "flex-single", "resources": [{"name": TPU, "nominalQuota": 4}]},
    ]
    for queue in (research, training):
        assert queue["spec"]["flavorFungibility"] == TRY_NEXT
        # The queued rung keeps its ProvisioningRequest check, for that flavor only: a workload admitted on the
        # reservation or on spot gets none (pkg/workload/workload.go AdmissionChecksForWorkload).
        assert queue["spec"]["admissionChecksStrategy"] == {
            "admissionChecks": [{"name": "dws-provisioning", "onFlavors": ["dws"]}]
        }
    # Chips nobody holds: all 16 spot chips (reserved and dws are fully shared out).
    (cohort,) = kueue(plan, "Cohort")
    assert flavors(cohort) == [{"name": "spot", "resources": [{"name": TPU, "nominalQuota": 16}]}]


def test_rungs_carry_their_node_labels_tolerations_and_place(plans: dict[str, Plan]) -> None:
    """What Kueue adds to a pod it admits on each rung: the reservation no extra label, queued nodes the flex-start
    label and the queued taint's toleration, spot nodes the spot label and the toleration of the pool's spot taint."""
    plan = plans["ladder"]
    shape = {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice", "cloud.google.com/gke-tpu-topology": "2x4"}
    tpu = {"key": TPU, "operator": "Exists", "effect": "NoSchedule"}
    assert named(plan, "ResourceFlavor", "reserved") == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "reserved", "labels": {"tpu-stack/ladder": "v5e-2x4", "tpu-stack/rung": "0"}},
        "spec": {"nodeLabels": shape, "tolerations": [tpu]},
    }
    dws = named(plan, "ResourceFlavor", "dws")
    assert dws["metadata"]["labels"] == {"tpu-stack/ladder": "v5e-2x4", "tpu-stack/rung": "2"}
    assert dws["spec"] == {
        "nodeLabels": {**shape, "cloud.google.com/gke-flex-start": "true"},
        "tolerations": [tpu, {"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"}],
    }
    spot = named(plan, "ResourceFlavor", "spot")
    assert spot["metadata"]["labels"] == {"tpu-stack/ladder": "v5e-2x4", "tpu-stack/rung": "1"}
    assert spot["spec"] == {
        "nodeLabels": {**shape, "cloud.google.com/gke-spot": "true"},
        "tolerations": [
            tpu,
            {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        ],
    }
    assert "labels" not in named(plan, "ResourceFlavor", "flex-single")["metadata"]


def test_without_ladders_the_queues_keep_kueues_default_fungibility(plans: dict[str, Plan]) -> None:
    for queue in kueue(plans["teams"], "ClusterQueue"):
        assert "flavorFungibility" not in queue["spec"]


def test_prod_train_falls_back_to_queued_burst_and_dev_spot_to_flex_start(plans: dict[str, Plan]) -> None:
    """Pulumi.prod.yaml: ladder train = train (reservation, 2 v5e 4x4 slices) then burst (queued, one 4x4 slice).
    Pulumi.dev.yaml: ladder multislice = multislice-spot (spot, 1 v5e 2x4 slice, tainted, billed while up) then
    multislice (flex-start, 3 slices, scale to zero); it was flex-start first, which left paid spot VMs idle while a
    workload waited for flex-start capacity. flex-v6e is another shape, in no ladder."""
    prod, dev = plans["prod"], plans["dev"]
    assert prod.outputs["ladders"] == {"train": ["train", "burst"]}
    assert dev.outputs["ladders"] == {"multislice": ["multislice-spot", "multislice"]}
    assert plans["teams"].outputs["ladders"] == {}
    for team in ("training", "research"):
        queue = named(prod, "ClusterQueue", f"{team}-cluster-queue")
        assert [f["name"] for f in flavors(queue)] == ["train", "burst"]
        assert queue["spec"]["flavorFungibility"] == TRY_NEXT
        assert queue["spec"]["admissionChecksStrategy"] == {
            "admissionChecks": [{"name": "burst-provisioning", "onFlavors": ["burst"]}]
        }
    assert named(prod, "ResourceFlavor", "burst")["spec"]["nodeLabels"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "4x4",
        "cloud.google.com/gke-flex-start": "true",
    }
    assert tpu_quota(named(prod, "ClusterQueue", "research-cluster-queue")) == {
        "train": {"name": TPU, "nominalQuota": 0, "borrowingLimit": 16},
        "burst": {"name": TPU, "nominalQuota": 16},
    }
    for team in ("research", "training"):
        queue = named(dev, "ClusterQueue", f"{team}-cluster-queue")
        assert [f["name"] for f in flavors(queue)] == ["flex-v6e", "multislice-spot", "multislice"]
        assert queue["spec"]["flavorFungibility"] == TRY_NEXT
        assert "admissionChecksStrategy" not in queue["spec"]
    spot = named(dev, "ResourceFlavor", "multislice-spot")
    assert spot["metadata"]["labels"] == {"tpu-stack/ladder": "multislice", "tpu-stack/rung": "0"}
    flex = named(dev, "ResourceFlavor", "multislice")
    assert flex["metadata"]["labels"] == {"tpu-stack/ladder": "multislice", "tpu-stack/rung": "1"}
    assert {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in spot[
        "spec"
    ]["tolerations"]


# Kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go, transcribed to read a trace against the queues the
# stack declares: a rung's mode is (preemptionMode, borrowingLevel); preemptionMode orders noFit <
# noPreemptionCandidates < preempt < reclaim < fit; borrowingLevel 0 is the team's own quota, 1 the cohort's (one
# cohort, no nesting).
NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)


def is_preferred(a: tuple[int, int], b: tuple[int, int], preference: str | None) -> bool:
    """isPreferred: noFit never wins; a rung with no preemption candidates loses to any viable one; then
    BorrowingOverPreemption (also the default) compares the preemption mode first, PreemptionOverBorrowing the
    borrowing level first (lower is better), each breaking ties by the other."""
    if a[0] == NO_FIT:
        return False
    if b[0] == NO_FIT:
        return True
    if (a[0] == NO_CANDIDATES) != (b[0] == NO_CANDIDATES):
        return a[0] != NO_CANDIDATES
    if preference == "PreemptionOverBorrowing":
        return a[1] < b[1] if a[1] != b[1] else a[0] > b[0]
    return a[0] > b[0] if a[0] != b[0] else a[1] < b[1]


def admitted_on(rungs: list[tuple[str, tuple[int, int]]], fungibility: dict[str, str]) -> str | None:
    """findFlavorForPodSets over one resource group: stop at the first rung shouldTryNextFlavor does not pass over,
    else the best rung seen by isPreferred (a strict comparison: the earlier rung wins a tie)."""
    best: tuple[str, tuple[int, int]] | None = None
    for name, mode in rungs:
        passes = (
            mode[0] in (NO_FIT, NO_CANDIDATES)
            or (mode[0] in (PREEMPT, RECLAIM) and fungibility.get("whenCanPreempt") == "TryNextFlavor")
            or (mode[1] > 0 and fungibility.get("whenCanBorrow") == "TryNextFlavor")
        )
        if not passes:
            return name
        if best is None or is_preferred(mode, best[1], fungibility.get("preference")):
            best = (name, mode)
    return best[0] if best is not None and best[1][0] != NO_FIT else None


def test_prod_training_takes_back_its_reserved_slice_before_borrowing_the_queued_one(plans: dict[str, Plan]) -> None:
    """Prod, by hand (Pulumi.prod.yaml; one v5e 4x4 slice is 16 chips): training holds train's 32 chips and none of
    burst, with no borrowing limit; research holds burst's 16 and may borrow 16 of train.

    1. T0 (training) runs on one train slice, R1 (research) on burst. R2 (research) arrives: on train it fits by
       borrowing training's idle 16 (fit, level 1, so TryNextFlavor passes on); on burst its own 16 are R1's, and an
       equal priority is no preemption candidate (noPreemptionCandidates). R2 is admitted on train. R1 finishes.
    2. T1 (training) arrives. train: training's own quota is lent to R2, so Kueue would reclaim R2 and T1 would then
       be within training's nominal 32 (reclaim, level 0: preemption_oracle.go SimulatePreemption). burst: research's
       idle 16 can be borrowed (fit, level 1). Both rungs pass on (TryNextFlavor), so isPreferred picks:
       PreemptionOverBorrowing takes train (level 0 beats 1): training reclaims the reservation it pays for.
       BorrowingOverPreemption would take burst (fit beats reclaim): a new DWS request while R2 keeps the reservation.
    3. R3 (research) arrives after T1 reclaimed train: train is noFit for research (nothing left to borrow), burst is
       its own idle 16 (fit, level 0): burst, and nobody is preempted."""
    prod = plans["prod"]
    assert tpu_quota(named(prod, "ClusterQueue", "training-cluster-queue")) == {
        "train": {"name": TPU, "nominalQuota": 32},
        "burst": {"name": TPU, "nominalQuota": 0},
    }
    assert tpu_quota(named(prod, "ClusterQueue", "research-cluster-queue")) == {
        "train": {"name": TPU, "nominalQuota": 0, "borrowingLimit": 16},
        "burst": {"name": TPU, "nominalQuota": 16},
    }
    training = named(prod, "ClusterQueue", "training-cluster-queue")["spec"]["flavorFungibility"]
    research = named(prod, "ClusterQueue", "research-cluster-queue")["spec"]["flavorFungibility"]
    assert admitted_on([("train", (FIT, 1)), ("burst", (NO_CANDIDATES, 0))], research) == "train"  # R2
    t1 = [("train", (RECLAIM, 0)), ("burst", (FIT, 1))]
    assert admitted_on(t1, training) == "train"
    assert admitted_on(t1, {**training, "preference": "BorrowingOverPreemption"}) == "burst"
    assert admitted_on([("train", (NO_FIT, 0)), ("burst", (FIT, 0))], research) == "burst"  # R3
    # A rung the team fits outright stops the scan under either preference: free own quota keeps ladder order.
    assert admitted_on([("train", (FIT, 0)), ("burst", (FIT, 1))], training) == "train"
    # The price of the preference: a high-priority research workload whose own burst holds a lower-priority one of
    # research preempts it (level 0) rather than borrow training's idle train slice (level 1).
    assert admitted_on([("train", (FIT, 1)), ("burst", (PREEMPT, 0))], research) == "burst"


def test_dev_research_takes_the_paid_spot_slice_first(plans: dict[str, Plan]) -> None:
    """Dev, by hand (Pulumi.dev.yaml; one v5e 2x4 slice is 8 chips): research holds the spot slice (8) and 8
    flex-start chips, training 8 flex-start chips and none of spot; the cohort holds 8 flex-start chips.

    1. R1 (research, one slice) on an idle stack: spot is research's own (fit, level 0): the scan stops there, on
       VMs dev pays for anyway, not on a flex-start request that may wait for stock.
    2. R2 (research): spot is R1's, equal priority, no candidates; flex-start: own 8 (fit, level 0): flex-start.
    3. T1 (training): spot is borrowing research's idle slice (fit, level 1, passed over); flex-start: its own 8
       (fit, level 0): flex-start. A team takes a rung first only where it holds a share."""
    dev = plans["dev"]
    research = named(dev, "ClusterQueue", "research-cluster-queue")
    training = named(dev, "ClusterQueue", "training-cluster-queue")
    assert [f["name"] for f in flavors(research)][1:] == ["multislice-spot", "multislice"]
    assert tpu_quota(research)["multislice-spot"] == {"name": TPU, "nominalQuota": 8}
    fungibility = research["spec"]["flavorFungibility"]
    assert admitted_on([("multislice-spot", (FIT, 0)), ("multislice", (FIT, 0))], fungibility) == "multislice-spot"
    assert admitted_on([("multislice-spot", (NO_CANDIDATES, 0)), ("multislice", (FIT, 0))], fungibility) == (
        "multislice"
    )
    fungibility = training["spec"]["flavorFungibility"]
    assert admitted_on([("multislice-spot", (FIT, 1)), ("multislice", (FIT, 0))], fungibility) == "multislice"


def test_an_autopilot_ladder_walks_the_declared_capacity(run: StackRunner) -> None:
    """On Autopilot the rungs are autopilotCapacity entries; Kueue walks them the same way, and the flavor's node
    labels (gke-flex-start, gke-spot) are what Autopilot provisions by."""
    plan = run({
        "tpu-stack:cluster": {"mode": "autopilot"},
        "tpu-stack:queues": {
            "autopilotCapacity": [
                {"name": "v5e-spot", "tpuVersion": "v5e", "topology": "2x4", "provisioning": "spot"},
                {"tpuVersion": "v5e", "topology": "2x4", "slices": 2, "provisioning": "flex-start"},
            ],
            "ladders": {"v5e": ["v5e-2x4", "v5e-spot"]},
        },
    })  # fmt: skip
    (queue,) = kueue(plan, "ClusterQueue")
    assert flavors(queue) == [
        {"name": "v5e-2x4", "resources": [{"name": TPU, "nominalQuota": 16}]},
        {"name": "v5e-spot", "resources": [{"name": TPU, "nominalQuota": 8}]},
    ]
    assert queue["spec"]["flavorFungibility"] == TRY_NEXT
    assert validate.validate_all(k8s_objects(plan), kubernetes_version="1.33") == []
    assert plan.logged == []  # Autopilot taints the Spot VMs it provisions: no spot-rung warning


@pytest.mark.parametrize("name", ["ladder", "dev", "prod"])
def test_cluster_queues_wait_for_the_flavors_and_checks_they_name(plans: dict[str, Plan], name: str) -> None:
    """A ClusterQueue naming a flavor or check that does not exist yet is inactive (kueue v0.19.2
    pkg/cache/scheduler/clusterqueue.go: FlavorNotFound, AdmissionCheckNotFound), and a flavor keeps its finalizer
    while a ClusterQueue names it (pkg/controller/core/resourceflavor_controller.go): the ClusterQueue is created
    after them and deleted before them, so a rung added to a ladder exists before the queues list it."""
    plan = plans[name]
    urns = {(r["inputs"]["kind"], r["inputs"]["metadata"]["name"]): r["urn"] for r in plan.resources
            if r["type"].startswith(KUEUE)}  # fmt: skip
    for record in plan.by_type(KUEUE + "ClusterQueue"):
        spec = record["inputs"]["spec"]
        named_flavors = [("ResourceFlavor", f["name"]) for f in spec["resourceGroups"][0]["flavors"]]
        checks = [
            ("AdmissionCheck", c["name"]) for c in spec.get("admissionChecksStrategy", {}).get("admissionChecks", [])
        ]
        assert {urns[ref] for ref in named_flavors + checks} <= set(record["dependencies"]), record["name"]


def write_stack(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "Pulumi.case.yaml"
    path.write_text(yaml.safe_dump({"config": {**BASE, **REGION, **config}}))
    return path


def test_shares_above_capacity_are_one_exact_error_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    teams = [{"name": "research", "shares": {"multislice": 16}}, {"name": "training", "shares": {"multislice": 16}}]
    path = write_stack(tmp_path, {"tpu-stack:tpuPools": [MULTISLICE], "tpu-stack:queues": {"teams": teams}})
    out = tmp_path / "out"
    code = cli.main(["preview", "--stack", "case", "--config", str(path), "--out", str(out)])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: tpu-stack:queues.teams[1].shares.multislice: 16 chips requested but only 8 remain of 24 in pool "
        "'multislice' (research holds 16); lower the shares or add slices",
        "1 config error(s); nothing was registered.",
    ]
    assert not out.exists()


P = {"tpu-stack:tpuPools": [MULTISLICE_LABELED, QUEUED_LABELED]}
AUTOPILOT = {"tpu-stack:cluster": {"mode": "autopilot"}}
# Multi-host shapes (2 and 4 VMs a slice), which a node pool could not have without a zone.
AUTOPILOT_CAPACITY = [
    {"name": "v5e-spot", "tpuVersion": "v5e", "topology": "2x4", "provisioning": "spot"},
    {"name": "v5e-flex", "tpuVersion": "v5e", "topology": "2x4", "provisioning": "flex-start"},
    {"tpuVersion": "v6e", "topology": "4x4"},
]
SAXML = {"tpu-stack:saxml": {"pool": "multislice", "service": {"sourceRanges": ["10.20.0.0/24"]}}}
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("percentage above what remains", {**P, "tpu-stack:queues": {"teams": [
        {"name": "a", "shares": {"multislice": "75%"}}, {"name": "b", "shares": {"multislice": "50%"}}]}},
     "tpu-stack:queues.teams[1].shares.multislice: 50% = 12 chips requested but only 6 remain of 24 in pool "
     "'multislice' (a holds 18); lower the shares or add slices"),
    ("one team above the pool", {**P, "tpu-stack:queues": {"teams": [{"name": "a", "shares": {"dws": 9}}]}},
     "tpu-stack:queues.teams[0].shares.dws: 9 chips requested but only 8 remain of 8 in pool 'dws'; "
     "lower the shares or add slices"),
    ("share of an unknown pool", {**P, "tpu-stack:queues": {"teams": [{"name": "a", "shares": {"nope": 8}}]}},
     "tpu-stack:queues.teams[0].shares.nope: 'nope' names no TPU pool the queues share; pools: multislice, dws"),
    ("borrowing from an unknown pool",
     {**P, "tpu-stack:queues": {"teams": [{"name": "a", "borrowingLimit": {"nope": 8}}]}},
     "tpu-stack:queues.teams[0].borrowingLimit.nope: 'nope' names no TPU pool the queues share; "
     "pools: multislice, dws"),
    ("not a share", {**P, "tpu-stack:queues": {"teams": [{"name": "a", "shares": {"dws": "half"}}]}},
     "tpu-stack:queues.teams[0].shares.dws: 'half' is not a number of chips or a percentage up to 100%; give chips "
     "(16) or a percentage of the pool's chips ('50%')"),
    ("duplicate team", {**P, "tpu-stack:queues": {"teams": [{"name": "a"}, {"name": "a", "namespace": "b"}]}},
     "tpu-stack:queues.teams[1].name: 'a' is already teams[0]"),
    ("shared namespace", {**P, "tpu-stack:queues": {"teams": [{"name": "a"}, {"name": "b", "namespace": "a"}]}},
     "tpu-stack:queues.teams[1].namespace: 'a' is already used by teams[0]"),
    ("system namespace", {**P, "tpu-stack:queues": {"teams": [{"name": "a", "namespace": "kueue-system"}]}},
     "tpu-stack:queues.teams[0].namespace: 'kueue-system' belongs to the system or another component"),
    ("team name not a label", {**P, "tpu-stack:queues": {"teams": [{"name": "Team A"}]}},
     "tpu-stack:queues.teams[0].name: 'Team A' must be a DNS label of at most 63 characters: lowercase letters, "
     "digits and '-', starting with a letter"),
    ("share of the serving pool",
     {**P, **SAXML, "tpu-stack:queues": {"teams": [{"name": "a", "shares": {"multislice": 8}}]}},
     "tpu-stack:queues.teams[0].shares.multislice: pool 'multislice' serves Saxml, whose model servers hold all "
     "its slices; it is not Kueue capacity"),
    ("two global defaults", {**P, "tpu-stack:queues": {"priorityClasses": [
        {"name": "low", "value": 1, "globalDefault": True}, {"name": "high", "value": 9, "globalDefault": True}]}},
     "tpu-stack:queues.priorityClasses: low, high are all globalDefault; at most one may be"),
    ("system priority value", {**P, "tpu-stack:queues": {"priorityClasses": [{"name": "top", "value": 2000000000}]}},
     "tpu-stack:queues.priorityClasses[0].value: 2000000000 is outside -1000000000..1000000000; higher values are "
     "reserved for system classes"),
    ("host resources for some pools only", {**P, "tpu-stack:queues": {"hostResources": {
        "dws": {"cpu": 100, "memory": "170Gi"}}}},
     "tpu-stack:queues.hostResources: missing multislice; a queue covers cpu and memory for every pool group or "
     "for none"),
    ("memory without a unit", {**P, "tpu-stack:queues": {"hostResources": {"dws": {"cpu": 1, "memory": "180"}}}},
     "tpu-stack:queues.hostResources.dws.memory: '180' is not a memory size like 180Gi (units Mi, Gi, Ti)"),
    ("indistinguishable flavors", {"tpu-stack:tpuPools": [MULTISLICE, {**MULTISLICE, "name": "more", "slices": 1}]},
     "tpu-stack:tpuPools: pools 'multislice' and 'more' are both ct5lp-hightpu-4t 2x4 and no node label tells them "
     "apart, so Kueue could admit a workload of one on the other; make them rungs of one ladder (queues.ladders) or "
     "give each a label the other has with another value (labels: {pool: multislice} and {pool: more})"),
    # Kueue ignores a workload's selectors on keys the flavor lacks (flavorassigner.go flavorSelector): a label on
    # one of two pool groups of one shape does not keep the other's workloads off it.
    ("a label on one of two same-shape pools", {"tpu-stack:tpuPools": [MULTISLICE, QUEUED_LABELED]},
     "tpu-stack:tpuPools: pools 'multislice' and 'dws' are both ct5lp-hightpu-4t 2x4 and no node label tells them "
     "apart, so Kueue could admit a workload of one on the other; make them rungs of one ladder (queues.ladders) or "
     "give each a label the other has with another value (labels: {pool: multislice} and {pool: dws})"),
    ("chart version with a v", {**P, "tpu-stack:charts": {"kueueVersion": "v0.19.2"}},
     "tpu-stack:charts.kueueVersion: 'v0.19.2' is not a chart version like 0.19.2 (OCI chart versions have no 'v')"),
    ("autopilot capacity on standard", {**P, "tpu-stack:queues": {"autopilotCapacity": [{"tpuVersion": "v5e"}]}},
     "tpu-stack:queues.autopilotCapacity: applies only with cluster.mode: autopilot; on Standard the queues take "
     "their capacity from tpuPools"),
    ("bad autopilot topology", {"tpu-stack:cluster": {"mode": "autopilot"}, "tpu-stack:queues": {
        "autopilotCapacity": [{"tpuVersion": "v5e", "topology": "3x3"}]}},
     "tpu-stack:queues.autopilotCapacity[0].topology: '3x3' is not a v5e topology for ct5lp-hightpu-4t; valid: "
     "2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16"),
    ("autopilot: a share above the capacity", {**AUTOPILOT, "tpu-stack:queues": {
        "autopilotCapacity": AUTOPILOT_CAPACITY[2:], "teams": [{"name": "a", "shares": {"v6e-4x4": 999}}]}},
     "tpu-stack:queues.teams[0].shares.v6e-4x4: 999 chips requested but only 16 remain of 16 in pool 'v6e-4x4'; "
     "lower the shares or add slices"),
    ("teams without capacity", {"tpu-stack:queues": {"teams": [{"name": "a"}]}},
     "tpu-stack:queues.teams: there is no TPU capacity to share; add tpuPools (Autopilot: autopilotCapacity)"),
]  # fmt: skip


def ladder(ladders: dict[str, list[str]], *pools: dict[str, Any], **queues: Any) -> dict[str, Any]:
    """The ladder scenario's pools (or `pools`) with these ladders."""
    return {"tpu-stack:tpuPools": list(pools or LADDER["tpu-stack:tpuPools"]),
            "tpu-stack:queues": {"ladders": ladders, **queues}}  # fmt: skip


LADDER_CASES: list[tuple[str, dict[str, Any], str]] = [
    # A spot group that scales to zero is made on request (issue 27, defect 8): a fixed group of its shape goes first.
    ("a rung that scales to zero before a fixed one", ladder(
        {"v5e": ["spot", "fixed"]}, {**SPOT, "scaleToZero": True},
        {"name": "fixed", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "slices": 2, "zone": ZONE,
         "labels": {"pool": "fixed"}}),
     "tpu-stack:queues.ladders.v5e: rung 'spot' (spot, made on request) comes before 'fixed' (on-demand, billed while "
     "idle), so workloads would start new capacity while paid-for capacity idles; list it as [fixed, spot]"),
    ("rungs of two shapes", ladder({"v5e": ["reserved", "flex-single"]}, RESERVED, FLEX_V5E),
     "tpu-stack:queues.ladders.v5e[1]: pool group 'flex-single' is ct5lp-hightpu-4t 2x2 but the ladder's first rung "
     "'reserved' is ct5lp-hightpu-4t 2x4; every rung needs the same machine type and topology"),
    ("rungs of one topology on two machine types", ladder({"v5e": ["reserved", "eight"]}, RESERVED,
     {"name": "eight", "machineType": "ct5lp-hightpu-8t", "topology": "2x4", "provisioning": "spot", "zone": ZONE}),
     "tpu-stack:queues.ladders.v5e[1]: pool group 'eight' is ct5lp-hightpu-8t 2x4 but the ladder's first rung "
     "'reserved' is ct5lp-hightpu-4t 2x4; every rung needs the same machine type and topology"),
    ("a pool group in two ladders", ladder({"a": ["reserved", "spot", "dws"], "b": ["spot"]}),
     "tpu-stack:queues.ladders.b[0]: pool group 'spot' is already rung 1 of ladder 'a'; a pool group has one place in "
     "the order Kueue tries flavors"),
    ("a pool group twice in one ladder", ladder({"a": ["reserved", "spot", "dws", "dws"]}),
     "tpu-stack:queues.ladders.a[3]: pool group 'dws' is already rung 2 of ladder 'a'; a pool group has one place in "
     "the order Kueue tries flavors"),
    ("an empty ladder", ladder({"a": ["reserved", "spot", "dws"], "b": []}),
     "tpu-stack:queues.ladders.b: is empty; list its pool groups in the order Kueue should try them"),
    ("an unknown pool group", ladder({"a": ["reserved", "dws", "spto"]}),
     "tpu-stack:queues.ladders.a[2]: 'spto' names no TPU pool the queues share; pools: spot, flex-single, reserved, "
     "dws"),
    ("a rung of Saxml's pool group", {**ladder({"a": ["reserved", "spot"]}, RESERVED, SPOT),
                                      "tpu-stack:saxml": {**SAXML["tpu-stack:saxml"], "pool": "spot"}},
     "tpu-stack:queues.ladders.a[1]: pool 'spot' serves Saxml, whose model servers hold all its slices; it is not "
     "Kueue capacity"),
    ("a ladder name that is not a label", ladder({"V5E": ["reserved", "spot", "dws"]}),
     "tpu-stack:queues.ladders.V5E: 'V5E' must be a DNS label of at most 63 characters: lowercase letters, digits and "
     "'-', starting with a letter"),
    ("a ladder named after another pool group", ladder({"flex-single": ["reserved", "spot", "dws"]}),
     "tpu-stack:queues.ladders.flex-single: is the name of pool group 'flex-single', which is not one of its rungs; a "
     "ladder may share a name only with one of its own pool groups (workloads and `tpu-stack submit --pool` take "
     "either)"),
    ("a same-shape pool group outside the ladder", ladder({"a": ["reserved", "spot"]}),
     "tpu-stack:queues.ladders.a: pool group 'dws' has the ladder's shape (ct5lp-hightpu-4t 2x4) but is not one of "
     "its rungs, and the ladder's workloads ask only for the shape, so Kueue could admit them on it out of ladder "
     "order; add it to the ladder or give it another shape"),
    ("two ladders of one shape", ladder({"a": ["reserved", "dws"], "b": ["spot"]}),
     "tpu-stack:queues.ladders.a: has the shape of ladder 'b' (ct5lp-hightpu-4t 2x4), and ladders' workloads ask only "
     "for the shape, so Kueue could admit a workload of one on the other's rungs; make them one ladder"),
    # An untainted spot rung carries the reservation's labels and more: pods admitted on the reservation (nodeSelector
    # accelerator + topology) could run on the spot nodes, whose chips Kueue counts to the spot rung.
    ("a rung whose pods fit another rung's nodes",
     ladder({"a": ["reserved", "spot"]}, RESERVED, {**SPOT, "taints": []}),
     "tpu-stack:queues.ladders.a: a workload Kueue admits on rung 'reserved' also fits the nodes of rung 'spot' (they "
     "carry every label of its flavor and it tolerates their taints), so it could run on capacity counted to 'spot'; "
     "give 'reserved' a node label 'spot' lacks (labels: {pool: reserved})"),
    ("a ladder that is not a list", ladder({"a": "reserved"}),  # type: ignore[dict-item]
     "tpu-stack:queues.ladders.a: expected a list of pool groups ('-' items), got the text 'reserved'"),
    # Autopilot capacity has no zone: its multi-host shapes are judged without one (they used to skip every check).
    ("autopilot: rungs of two shapes", {**AUTOPILOT, "tpu-stack:queues": {
        "autopilotCapacity": AUTOPILOT_CAPACITY, "ladders": {"v5e": ["v5e-flex", "v6e-4x4"]}}},
     "tpu-stack:queues.ladders.v5e[1]: pool group 'v6e-4x4' is ct6e-standard-4t 4x4 but the ladder's first rung "
     "'v5e-flex' is ct5lp-hightpu-4t 2x4; every rung needs the same machine type and topology"),
    ("autopilot: an unknown rung", {**AUTOPILOT, "tpu-stack:queues": {
        "autopilotCapacity": AUTOPILOT_CAPACITY, "ladders": {"v5e": ["v5e-flex", "v5e-spto"]}}},
     "tpu-stack:queues.ladders.v5e[1]: 'v5e-spto' names no TPU pool the queues share; pools: v5e-spot, v5e-flex, "
     "v6e-4x4"),
    ("autopilot: an empty ladder", {**AUTOPILOT, "tpu-stack:queues": {
        "autopilotCapacity": AUTOPILOT_CAPACITY, "ladders": {"v5e": ["v5e-flex", "v5e-spot"], "v6e": []}}},
     "tpu-stack:queues.ladders.v6e: is empty; list its pool groups in the order Kueue should try them"),
    ("autopilot: a rung in two ladders", {**AUTOPILOT, "tpu-stack:queues": {
        "autopilotCapacity": AUTOPILOT_CAPACITY, "ladders": {"v5e": ["v5e-flex", "v5e-spot"], "b": ["v5e-spot"]}}},
     "tpu-stack:queues.ladders.b[0]: pool group 'v5e-spot' is already rung 1 of ladder 'v5e'; a pool group has one "
     "place in the order Kueue tries flavors"),
    ("autopilot: two same-shape capacities in no ladder", {**AUTOPILOT, "tpu-stack:queues": {
        "autopilotCapacity": AUTOPILOT_CAPACITY}},
     "tpu-stack:queues.autopilotCapacity: 'v5e-spot' and 'v5e-flex' are both ct5lp-hightpu-4t 2x4 and no node label "
     "tells them apart, so Kueue could admit a workload of one on the other; make them rungs of one ladder "
     "(queues.ladders) or keep one of them"),
    # One annotation carries a workload's run limit to whichever queued rung's ProvisioningRequest Kueue creates
    # (kueue v0.19.2 provisioning.go passProvReqParams): two queued rungs of one ladder need one limit.
    ("queued rungs with different run limits", ladder({"a": ["reserved", "dws", "dws-east"]}, RESERVED, QUEUED_LABELED,
     {**QUEUED, "name": "dws-east", "maxRunDuration": "24h", "labels": {"pool": "east"}}),
     "tpu-stack:queues.ladders.a[2]: queued rung 'dws-east' has maxRunDuration 24h but queued rung 'dws' (rung 1) has "
     "7d; a workload of the ladder carries one run limit to whichever queued rung admits it, so give the ladder's "
     "queued pool groups the same maxRunDuration"),
    # docs/workloads.md: capacity that bills while idle (reservation, fixed spot pool) before capacity made on request.
    ("a made-on-request rung before a billed one", ladder({"a": ["reserved", "dws", "spot"]}),
     "tpu-stack:queues.ladders.a: rung 'dws' (queued, made on request) comes before 'spot' (spot, billed while idle), "
     "so workloads would start new capacity while paid-for capacity idles; list it as [reserved, spot, dws]"),
    ("rungs with different host resources", ladder({"a": ["reserved", "spot", "dws"]}, hostResources={
        "reserved": {"cpu": 100, "memory": "170Gi"}, "dws": {"cpu": 100, "memory": "170Gi"},
        "spot": {"cpu": 90, "memory": "170Gi"}, "flex-single": {"cpu": 100, "memory": "170Gi"}}),
     "tpu-stack:queues.hostResources.spot: differs from 'reserved', the first rung of ladder 'a'; a ladder's workloads "
     "request one amount of CPU and memory per VM on every rung"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "config", "message"), LADDER_CASES, ids=[c[0] for c in LADDER_CASES])
def test_ladder_config_errors_name_the_key(case: str, config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load({**BASE, **REGION, **config}, stack="dev")
    assert error.value.lines == [message]


@pytest.mark.parametrize(("case", "config", "message"), CASES, ids=[c[0] for c in CASES])
def test_queue_config_errors_name_the_key(case: str, config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load({**BASE, **REGION, **config}, stack="dev")
    assert error.value.lines == [message]


# ---- Autopilot ---------------------------------------------------------------------------------------------


def test_autopilot_quotas_come_from_the_declared_capacity(plans: dict[str, Plan]) -> None:
    plan = plans["autopilot"]
    assert plan.by_type("gcp:container/nodePool:NodePool") == []
    v5e = named(plan, "ResourceFlavor", "v5e-2x4")["spec"]["nodeLabels"]
    assert v5e == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
        "cloud.google.com/gke-flex-start": "true",
    }
    (queue,) = kueue(plan, "ClusterQueue")
    assert {f: r["nominalQuota"] for f, r in tpu_quota(queue).items()} == {"v5e-2x4": 16, "v6e-spot": 16}


# ---- 2. valid for the API server ---------------------------------------------------------------------------


def k8s_objects(plan: Plan) -> list[dict[str, Any]]:
    return [r["inputs"] for r in plan.resources if {"apiVersion", "kind"} <= r["inputs"].keys()]


@pytest.mark.parametrize("name", [*SCENARIOS, "dev", "prod"])
def test_every_kubernetes_object_the_stack_declares_is_valid(plans: dict[str, Plan], name: str) -> None:
    plan = plans[name]
    minor = (
        load({**BASE, **REGION, **SCENARIOS[name]}, stack="dev").cluster.kubernetes_minor
        if name in SCENARIOS
        else "1.33"
    )
    objects = k8s_objects(plan)
    kinds = {obj["kind"] for obj in objects}
    assert {"ResourceFlavor", "ClusterQueue", "LocalQueue", "PriorityClass"} <= kinds
    assert validate.validate_all(objects, kubernetes_version=minor) == []


def test_validator_applies_the_crd_rules_to_stack_objects(plans: dict[str, Plan]) -> None:
    research = named(plans["teams"], "ClusterQueue", "research-cluster-queue")
    # A flavor that does not list every covered resource (CEL rule on resourceGroups).
    missing = copy.deepcopy(research)
    missing["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop()
    assert validate.validate_object(missing) == [
        "ClusterQueue/research-cluster-queue: spec.resourceGroups[0]: flavors must have the same number of "
        "resources as the coveredResources"
    ]
    # A borrowing limit without a cohort (CEL rule on spec).
    alone = copy.deepcopy(research)
    del alone["spec"]["cohortName"]
    assert validate.validate_object(alone) == [
        "ClusterQueue/research-cluster-queue: spec: borrowingLimit must be nil when cohort is empty"
    ]
    # v1beta1's `spec.cohort` is gone in v1beta2.
    old = copy.deepcopy(research)
    old["spec"]["cohort"] = old["spec"].pop("cohortName")
    assert "ClusterQueue/research-cluster-queue: spec.cohort: unknown field" in validate.validate_object(old)


# ---- 5. everything waits for the Kueue chart ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["teams", "dev", "prod"])
def test_every_kueue_object_depends_on_the_kueue_chart(plans: dict[str, Plan], name: str) -> None:
    plan = plans[name]
    by_urn = {r["urn"]: r for r in plan.resources}
    (chart,) = [r for r in plan.by_type(CHART) if r["inputs"]["chart"].endswith("/kueue")]
    objects = [r for r in plan.resources if r["type"].startswith(KUEUE)]
    assert len(objects) >= 4
    for resource in objects:
        chain = [resource]
        while chain[-1]["parent"] in by_urn:
            chain.append(by_urn[chain[-1]["parent"]])
        assert any(chart["urn"] in r["dependencies"] for r in chain), resource["name"]


def test_priority_classes_default_to_xpks_and_are_configurable(plans: dict[str, Plan], run: StackRunner) -> None:
    classes = [r["inputs"] for r in plans["multislice-seed"].by_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")]
    assert sorted((c["metadata"]["name"], c["value"], c["globalDefault"]) for c in classes) == [
        ("high", 750, False), ("low", 250, False), ("medium", 500, False), ("very-high", 1000, False),
        ("very-low", 100, False),
    ]  # fmt: skip
    low = {"name": "low-priority", "value": 100, "globalDefault": True, "description": "preemptible work"}
    plan = run({**REGION, "tpu-stack:tpuPools": [MULTISLICE], "tpu-stack:queues": {"priorityClasses": [low]}})
    (only,) = [r["inputs"] for r in plan.by_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")]
    assert only == {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "low-priority"},
        "value": 100,
        "globalDefault": True,
        "description": "preemptible work",
    }


def test_saxml_serving_pool_is_not_kueue_capacity(plans: dict[str, Plan]) -> None:
    plan = plans["prod"]
    assert "serve" in plan.outputs["tpuPools"]
    assert "serve" not in plan.outputs["flavors"]
    assert all("serve" not in tpu_quota(q) for q in kueue(plan, "ClusterQueue"))


# ---- immutable fields: a change replaces the object, deleting it first -------------------------------------


def _registered(config: dict[str, Any]) -> tuple[Plan, dict[str, dict[str, Any]]]:
    with replacement_options() as options:
        plan = run_program({**BASE, **REGION, **config}, stack="dev")
    return plan, options


def _local_queue(plan: Plan) -> dict[str, Any]:
    (record,) = plan.by_type(KUEUE + "LocalQueue")
    return record


def test_a_renamed_cluster_queue_replaces_the_local_queue_deleting_it_first() -> None:
    """LocalQueue.spec.clusterQueue is immutable (CEL `self == oldSelf`, vendor/crds/kueue/
    kueue.x-k8s.io_localqueues.yaml): an in-place update is refused, and a second LocalQueue of the same name
    cannot be created beside the old one."""
    before, _ = _registered({"tpu-stack:tpuPools": [MULTISLICE]})
    after, options = _registered({"tpu-stack:tpuPools": [MULTISLICE], "tpu-stack:queues": {"clusterQueue": "tpu"}})
    old, new = _local_queue(before), _local_queue(after)
    assert old["urn"] == new["urn"]  # the same resource: the engine diffs it, it does not create a second one
    assert changed_paths(old["inputs"], new["inputs"]) == ["spec.clusterQueue"]
    registered = options[new["urn"]]
    assert registered == {"replaceOnChanges": ["spec.clusterQueue"], "deleteBeforeReplace": True}
    assert replaced_by(registered["replaceOnChanges"], "spec.clusterQueue")


def test_a_changed_priority_value_replaces_the_priority_class_deleting_it_first() -> None:
    """PriorityClass value and preemptionPolicy may not be changed in an update (kubernetes
    pkg/apis/scheduling/validation/validation.go, ValidatePriorityClassUpdate)."""
    low = {"name": "low-priority", "value": 100}
    before, _ = _registered({"tpu-stack:tpuPools": [MULTISLICE], "tpu-stack:queues": {"priorityClasses": [low]}})
    after, options = _registered(
        {"tpu-stack:tpuPools": [MULTISLICE], "tpu-stack:queues": {"priorityClasses": [{**low, "value": 200}]}}
    )
    (old,) = before.by_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    (new,) = after.by_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    assert old["urn"] == new["urn"]
    assert changed_paths(old["inputs"], new["inputs"]) == ["value"]
    registered = options[new["urn"]]
    assert registered == {"replaceOnChanges": ["value", "preemptionPolicy"], "deleteBeforeReplace": True}
    assert replaced_by(registered["replaceOnChanges"], "value")


def test_kueue_objects_without_immutable_fields_are_updated_in_place() -> None:
    """ClusterQueue quotas, flavors, admission checks, cohorts and namespaces change in place (a replacement
    would evict admitted workloads or wait on Kueue's resource-in-use finalizer)."""
    teams = SCENARIOS["teams"]
    plan, options = _registered(teams)
    kinds = {"ClusterQueue", "ResourceFlavor", "AdmissionCheck", "ProvisioningRequestConfig", "Cohort"}
    records = [r for r in plan.resources if r["type"].removeprefix(KUEUE) in kinds]
    records += plan.by_type("kubernetes:core/v1:Namespace")
    assert {r["type"].rsplit(":", 1)[-1] for r in records} == kinds | {"Namespace"}
    for record in records:
        assert options[record["urn"]] == {"replaceOnChanges": [], "deleteBeforeReplace": None}, record["name"]


def test_the_immutable_fields_of_the_kueue_kinds_are_the_ones_the_stack_knows() -> None:
    """Every `oldSelf` rule of the vendored v1beta2 CRDs, written out: a refresh that adds one fails here until
    the stack decides what a change to it does (components/kueue_queues.py, IMMUTABLE_FIELDS)."""
    rules = set()
    for path in sorted((VENDOR / "crds" / "kueue").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        (v1beta2,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta2"]
        rules |= {
            (crd["spec"]["names"]["kind"], where) for where in _old_self_rules(v1beta2["schema"]["openAPIV3Schema"])
        }
    assert rules == {
        ("AdmissionCheck", "spec.controllerName"),  # a constant of the stack (PROVISIONING_CONTROLLER)
        ("LocalQueue", "spec.clusterQueue"),
        ("ResourceFlavor", "spec"),  # nodeLabels, tolerations, topologyName: only once topologyName is set
        ("Topology", "spec.levels"),  # the stack declares no Topology
    }


def _old_self_rules(schema: dict[str, Any], path: str = "") -> list[str]:
    found = [path.lstrip(".") for rule in schema.get("x-kubernetes-validations", []) if "oldSelf" in rule["rule"]]
    for key, child in (schema.get("properties") or {}).items():
        found += _old_self_rules(child, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        found += _old_self_rules(schema["items"], f"{path}[]")
    return found


# ---- destroy: the team namespaces go while the Kueue and JobSet controllers still run ----------------------


@pytest.mark.parametrize("name", ["dev", "prod", "teams"])
def test_team_namespaces_depend_on_both_charts_so_destroy_deletes_them_first(plans: dict[str, Plan], name: str) -> None:
    """Kueue puts `kueue.x-k8s.io/resource-in-use` on every Workload it creates (kueue v0.19.2
    pkg/controller/jobframework/utils.go) and only its controller removes it. The engine deletes a resource
    before what it depends on; a dependency on a component (the Chart) counts for the component's children
    too (pulumi pkg/resource/graph/dependency_graph.go, DependenciesOf), so the namespaces are deleted before
    the controllers' Deployments, webhooks and CRDs."""
    plan = plans[name]
    stack = "prod" if name == "prod" else "dev"
    charts = {
        f"urn:pulumi:{stack}::tpu-stack::tpu-stack:index:KueueInstall$kubernetes:helm.sh/v4:Chart::kueue-chart",
        f"urn:pulumi:{stack}::tpu-stack::tpu-stack:index:JobSetInstall$kubernetes:helm.sh/v4:Chart::jobset-chart",
    }
    namespaces = [r for r in plan.by_type("kubernetes:core/v1:Namespace") if r["name"].startswith("queues-")]
    assert {r["inputs"]["metadata"]["name"] for r in namespaces} == {"research", "training"}
    for namespace in namespaces:
        assert charts <= set(namespace["dependencies"]), namespace["name"]
    if name in ("dev", "prod"):  # rendered: the controllers are the Charts' children
        controllers = [r for r in plan.resources if r["type"] == "kubernetes:apps/v1:Deployment" and r.get("rendered")]
        assert {r["parent"] for r in controllers} == charts


def test_a_draining_group_leaves_every_queue_and_keeps_its_slices(run: StackRunner) -> None:
    """drain: true takes the group's flavor out of the ClusterQueue (Kueue admits nothing new there; what it admitted
    runs on) and declares no flavor or workloads for it; its node pools stay as they are."""
    train = {
        "name": "train",
        "machineType": "ct5lp-hightpu-4t",
        "topology": "2x4",
        "slices": 2,
        "zone": "us-central1-a",
    }
    # Spot: us-central1-b gives no v6e on flex-start (vendor/data/tpu_zones.json).
    flex = {"name": "flex", "machineType": "ct6e-standard-4t", "provisioning": "spot", "zone": "us-central1-b"}
    running = run({"tpu-stack:tpuPools": [train, flex]})
    draining = run({"tpu-stack:tpuPools": [{**train, "drain": True}, flex]})
    queue = draining.one("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "queues-clusterqueue-cluster-queue")
    assert [f["name"] for f in queue["inputs"]["spec"]["resourceGroups"][0]["flavors"]] == ["flex"]
    flavors = [
        r["inputs"]["metadata"]["name"] for r in draining.by_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
    ]
    assert flavors == ["flex"]
    pools = {r["name"]: r["inputs"] for r in running.by_type("gcp:container/nodePool:NodePool")}
    assert {r["name"]: r["inputs"] for r in draining.by_type("gcp:container/nodePool:NodePool")} == pools
    assert draining.outputs["tpuPools"]["train"] == running.outputs["tpuPools"]["train"]
