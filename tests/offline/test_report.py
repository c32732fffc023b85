"""The preview leads with the answer: capacity and queues first (and in plan.json's `summary`), then resources by
component in architecture order with charts collapsed to counts, policy findings last."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from components import tpu_catalog
from components.config import load
from offline import __main__ as cli
from offline import summary
from offline.engine import Plan, _engine_config
from offline.policy_check import TEAM_CONFIG
from tests.conftest import StackRunner
from tests.fixtures import FIXTURE_STACKS, stack_data, stack_path

Preview = tuple[list[str], dict[str, Any]]


def _preview(out: Path, *args: str) -> Preview:
    """Printed lines and plan.json of one preview run through the CLI."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli.main(["preview", "--out", str(out), "--policy-config", str(TEAM_CONFIG), *args]) == 0
    return printed.getvalue().splitlines(), json.loads((out / "plan.json").read_text())


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Preview:
    return _preview(tmp_path_factory.mktemp("dev"), "--stack", "dev", "--config", str(stack_path("dev")))


@pytest.fixture(scope="module")
def prod(tmp_path_factory: pytest.TempPathFactory) -> Preview:
    return _preview(tmp_path_factory.mktemp("prod"), "--stack", "prod", "--config", str(stack_path("prod")))


# Dev (Pulumi.dev.yaml): the multislice ladder tries its one spot slice (rung 1/2, 2 VMs, 8 chips, research's share)
# before the three flex-start slices (rung 2/2); it had three spot slices (24 chips), all the cohort's, tried second.
# Flex-start groups and the spot slice (scaleToZero, issue 27 defect 8) scale from zero: 0 chips at least, none billed
# idle. 8 of multislice's 24 chips are no team's share: the one warning.
DEV_FIRST_SCREEN = """\
Previewing stack 'dev' of project 'tpu-stack' (offline, mock engine)

Capacity: 3 TPU pool group(s), 5 slice(s), 9 VM(s), 0-36 chips, 0 billed while idle
  pool group       TPU      provisioning  slices  chips  billed idle  zone        used by
  flex-v6e         v6e 2x2  flex-start         1    0-4            0  us-east5-b  kueue
  multislice       v6e 2x4  flex-start         3   0-24            0  us-east5-b  multislice 2/2
  multislice-spot  v6e 2x4  spot               1    0-8            0  us-east5-b  multislice 1/2
  chips: the fewest and the most on the group's nodes; billed idle: chips paid for while no workload
  runs; <ladder> n/m: rung n of the m Kueue tries in order
TPU quota the pools need at their largest (chips, per region and kind), by Compute's quota names:
  region    kind         TPU  chips  quota
  us-east5  preemptible  v6e     36  Preemptible TPU slices v6e
Addresses (each range holds its cluster with every pool at its largest):
  cluster  nodes         pods         services      max nodes  pod addresses needed
  tpu-dev  10.48.0.0/20  10.0.0.0/14  10.32.0.0/20         12                  1056

Queues: 2 team(s), in cohort tpu-stack; quota and borrowing limit in chips of google.com/tpu
  team      local queue              cluster queue           flavor           quota  borrowing limit
  research  research/research-queue  research-cluster-queue  flex-v6e             4  unlimited
                                                             multislice-spot      8  unlimited
                                                             multislice           8  unlimited
  training  training/training-queue  training-cluster-queue  flex-v6e             0  0
                                                             multislice-spot      0  unlimited
                                                             multislice           8  8
  chips no team holds, which cohort tpu-stack lends to any team: multislice 8

Warnings: 1, valid but rarely meant
  tpu-stack:queues.teams: 8 chips of pool group multislice are no team's share: the cohort lends
    them to whichever team asks first and no team can count on them; add them to a team's shares if
    one needs them
"""

# Prod: the reservation's 2 slices (32 chips) and Saxml's 2 on-demand slices (64) run and bill while idle; the queued
# burst slice scales from zero: 96 to 112 chips, 96 of them billed idle.
PROD_FIRST_SCREEN = "\n".join(
    [
        "Previewing stack 'prod' of project 'tpu-stack' (offline, mock engine)",
        "",
        "Capacity: 3 TPU pool group(s), 5 slice(s), 28 VM(s), 96-112 chips, 96 billed while idle",
        "  pool group  TPU      provisioning  slices  chips  billed idle  zone        used by",
        "  train       v5e 4x4  reservation        2  32-32           32  us-west4-a  train 1/2",
        "  burst       v5e 4x4  queued             1   0-16            0  us-west4-a  train 2/2",
        "  serve       v5e 4x8  on-demand          2  64-64           64  us-west4-a  saxml",
        "  chips: the fewest and the most on the group's nodes; billed idle: chips paid for while no workload",
        "  runs; <ladder> n/m: rung n of the m Kueue tries in order",
        "  train consumes reservation tpu-prod-v5e-train",
        "TPU quota the pools need at their largest (chips, per region and kind), by Compute's quota names:",
        "  region    kind         TPU  chips  quota",
        "  us-west4  on-demand    v5e     64  TPU v5 Lite PodSlice chips",
        "  us-west4  preemptible  v5e     16  Preemptible TPU v5 Lite Podslice chips",
        "  us-west4  reservation  v5e     32  no quota: reservation tpu-prod-v5e-train must hold 32 chips",
        "Addresses (each range holds its cluster with every pool at its largest):",
        "  cluster   nodes         pods         services      max nodes  pod addresses needed",
        "  tpu-prod  10.48.0.0/20  10.0.0.0/14  10.32.0.0/20         36                  2944",
        "",
        "Queues: 2 team(s), in cohort tpu-stack; quota and borrowing limit in chips of google.com/tpu",
        "  team      local queue              cluster queue           flavor  quota  borrowing limit",
        "  training  training/training-queue  training-cluster-queue  train      32  unlimited",
        "                                                             burst       0  unlimited",
        "  research  research/research-queue  research-cluster-queue  train       0  16",
        "                                                             burst      16  unlimited",
        "",
        "Every resource is protected: `pulumi destroy` and replacements stop until `pulumi state unprotect`.",
    ]
)


def test_the_dev_preview_first_screen_shows_capacity_and_quotas(dev: Preview) -> None:
    lines, _plan = dev
    screen = lines[:40]
    expected = DEV_FIRST_SCREEN.splitlines()
    assert screen[: len(expected)] == expected
    assert screen[len(expected) :][:2] == ["", "ProjectServices apis"]  # then the resources, APIs and network first


def test_the_prod_preview_first_screen_shows_reservations_saxml_capacity_and_borrowing(prod: Preview) -> None:
    lines, _plan = prod
    expected = PROD_FIRST_SCREEN.splitlines()
    assert lines[: len(expected)] == expected


DEV_SUMMARY = {
    "capacity": {
        "flex-v6e": {"machineType": "ct6e-standard-4t", "topology": "2x2", "provisioning": "flex-start",
                     "reservation": None, "calendar": False, "slices": 1, "vmsPerSlice": 1, "vms": 1, "chips": 4,
                     "zone": "us-east5-b", "usedBy": "kueue", "ladder": None,
                     "minChips": 0, "billedIdleChips": 0},
        "multislice": {"machineType": "ct6e-standard-4t", "topology": "2x4", "provisioning": "flex-start",
                       "reservation": None, "calendar": False, "slices": 3, "vmsPerSlice": 2, "vms": 6, "chips": 24,
                       "zone": "us-east5-b", "usedBy": "kueue",
                       "ladder": {"name": "multislice", "rung": 2, "of": 2}, "minChips": 0, "billedIdleChips": 0},
        # The spot rung scales to zero (issue 27, defect 8): none of its chips are billed while idle.
        "multislice-spot": {"machineType": "ct6e-standard-4t", "topology": "2x4", "provisioning": "spot",
                            "reservation": None, "calendar": False, "slices": 1, "vmsPerSlice": 2, "vms": 2,
                            "chips": 8, "zone": "us-east5-b", "usedBy": "kueue",
                            "ladder": {"name": "multislice", "rung": 1, "of": 2}, "minChips": 0,
                            "billedIdleChips": 0},
    },
    "queues": {
        "cohort": "tpu-stack",
        "teams": {
            "research": {"namespace": "research", "localQueue": "research-queue",
                         "clusterQueue": "research-cluster-queue",
                         "flavors": {"flex-v6e": {"nominalQuota": 4, "borrowingLimit": None},
                                     "multislice": {"nominalQuota": 8, "borrowingLimit": None},
                                     "multislice-spot": {"nominalQuota": 8, "borrowingLimit": None}}},
            "training": {"namespace": "training", "localQueue": "training-queue",
                         "clusterQueue": "training-cluster-queue",
                         "flavors": {"flex-v6e": {"nominalQuota": 0, "borrowingLimit": 0},
                                     "multislice": {"nominalQuota": 8, "borrowingLimit": 8},
                                     "multislice-spot": {"nominalQuota": 0, "borrowingLimit": None}}},
        },
        "cohortQuota": {"multislice": 8},
    },
    # Flex-start and spot count against preemptible quota; at their largest every slice is up. Trillium's preemptible
    # quota is "Preemptible TPU slices v6e" (GKE, Ensure quota for TPUs).
    "quota": [{"region": "us-east5", "kind": "preemptible", "tpu": "v6e", "chips": 36,
               "quota": "Preemptible TPU slices v6e", "reservation": None, "calendar": False}],
    # 3 system nodes x 256 + 9 TPU VMs x 32 = 1,056 pod addresses, twice that in a /20; 12 nodes + 4 + 1 addresses.
    "addresses": {"tpu-dev": {"nodes": "10.48.0.0/20", "pods": "10.0.0.0/14", "services": "10.32.0.0/20",
                              "maxNodes": 12, "podAddressesNeeded": 1056, "nodeAddressesNeeded": 17}},
    "warnings": [
        "tpu-stack:queues.teams: 8 chips of pool group multislice are no team's share: the cohort lends them to "
        "whichever team asks first and no team can count on them; add them to a team's shares if one needs them"
    ],
}  # fmt: skip

PROD_SUMMARY = {
    "capacity": {
        "train": {"machineType": "ct5lp-hightpu-4t", "topology": "4x4", "provisioning": "reservation",
                  "reservation": "tpu-prod-v5e-train", "calendar": False, "slices": 2, "vmsPerSlice": 4, "vms": 8,
                  "chips": 32, "zone": "us-west4-a", "usedBy": "kueue",
                  "ladder": {"name": "train", "rung": 1, "of": 2}, "minChips": 32, "billedIdleChips": 32},
        "burst": {"machineType": "ct5lp-hightpu-4t", "topology": "4x4", "provisioning": "queued",
                  "reservation": None, "calendar": False, "slices": 1, "vmsPerSlice": 4, "vms": 4, "chips": 16,
                  "zone": "us-west4-a", "usedBy": "kueue", "ladder": {"name": "train", "rung": 2, "of": 2},
                  "minChips": 0, "billedIdleChips": 0},
        "serve": {"machineType": "ct5lp-hightpu-4t", "topology": "4x8", "provisioning": "on-demand",
                  "reservation": None, "calendar": False, "slices": 2, "vmsPerSlice": 8, "vms": 16, "chips": 64,
                  "zone": "us-west4-a", "usedBy": "saxml", "ladder": None, "minChips": 64,
                  "billedIdleChips": 64},
    },
    "queues": {
        "cohort": "tpu-stack",
        "teams": {
            "training": {"namespace": "training", "localQueue": "training-queue",
                         "clusterQueue": "training-cluster-queue",
                         "flavors": {"train": {"nominalQuota": 32, "borrowingLimit": None},
                                     "burst": {"nominalQuota": 0, "borrowingLimit": None}}},
            "research": {"namespace": "research", "localQueue": "research-queue",
                         "clusterQueue": "research-cluster-queue",
                         "flavors": {"train": {"nominalQuota": 0, "borrowingLimit": 16},
                                     "burst": {"nominalQuota": 16, "borrowingLimit": None}}},
        },
        "cohortQuota": {},
    },
    # v5e's quotas (GKE, Ensure quota for TPUs; Compute's metrics TPU_LITE_PODSLICE_V5 and its PREEMPTIBLE_ twin);
    # the nodes of a specific reservation take no quota: the reservation took it when it was made.
    "quota": [
        {"region": "us-west4", "kind": "on-demand", "tpu": "v5e", "chips": 64, "quota": "TPU v5 Lite PodSlice chips",
         "reservation": None, "calendar": False},
        {"region": "us-west4", "kind": "preemptible", "tpu": "v5e", "chips": 16,
         "quota": "Preemptible TPU v5 Lite Podslice chips", "reservation": None, "calendar": False},
        {"region": "us-west4", "kind": "reservation", "tpu": "v5e", "chips": 32, "quota": None,
         "reservation": "tpu-prod-v5e-train", "calendar": False},
    ],
    # 8 x 256 + 28 x 32 = 2,944, twice that in a /19; 36 nodes + 4 + 1 + Saxml's internal load balancer = 42.
    "addresses": {"tpu-prod": {"nodes": "10.48.0.0/20", "pods": "10.0.0.0/14", "services": "10.32.0.0/20",
                               "maxNodes": 36, "podAddressesNeeded": 2944, "nodeAddressesNeeded": 42}},
    "warnings": [],
}  # fmt: skip


def test_plan_json_summary_holds_capacity_and_queues(dev: Preview, prod: Preview) -> None:
    assert dev[1]["summary"] == DEV_SUMMARY
    assert prod[1]["summary"] == PROD_SUMMARY
    # The summary leads plan.json, after project and stack; the rest of the contract follows.
    assert list(dev[1]) == ["project", "stack", "summary", "resources", "outputs", "violations"]


def _tpu(resources: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Flavor -> google.com/tpu quota entry of one ClusterQueue or Cohort spec."""
    return {
        flavor["name"]: next(r for r in flavor["resources"] if r["name"] == "google.com/tpu")
        for group in resources
        for flavor in group["flavors"]
    }


def _declared(plan: Plan | dict[str, Any]) -> dict[str, Any]:
    """The summary's numbers as the plan's own objects declare them: node pools (count, nodes, topology) and the
    ClusterQueues and Cohort (nominalQuota, borrowingLimit of google.com/tpu)."""
    resources = plan.resources if isinstance(plan, Plan) else plan["resources"]
    capacity: dict[str, dict[str, Any]] = {}
    for pool in (r for r in resources if r["type"] == "gcp:container/nodePool:NodePool"):
        machine = tpu_catalog.machine_type(pool["inputs"]["nodeConfig"]["machineType"])
        if machine is None:
            continue  # the CPU system pool
        group = pool["parent"].rsplit("::", 1)[-1]
        scaling = pool["inputs"].get("autoscaling") or {}
        vms = scaling.get("maxNodeCount") or scaling.get("totalMaxNodeCount") or pool["inputs"]["nodeCount"]
        entry = capacity.setdefault(group, {"slices": 0, "vms": 0, "chips": 0})
        entry["slices"] += 1
        entry["vms"] += vms
        entry["chips"] += vms * machine.chips_per_vm
    queues: dict[str, Any] = {}
    cohort: dict[str, int] = {}
    for record in resources:
        inputs = record["inputs"]
        if inputs.get("kind") == "ClusterQueue":
            queues[inputs["metadata"]["name"]] = {
                flavor: (entry["nominalQuota"], entry.get("borrowingLimit"))
                for flavor, entry in _tpu(inputs["spec"]["resourceGroups"]).items()
            }
        elif inputs.get("kind") == "Cohort":
            cohort = {f: e["nominalQuota"] for f, e in _tpu(inputs["spec"].get("resourceGroups", [])).items()}
    return {"capacity": capacity, "queues": queues, "cohort": cohort}


def _summarized(found: summary.Summary) -> dict[str, Any]:
    """The same numbers read from a summary."""
    return {
        "capacity": {
            name: {"slices": pool["slices"], "vms": pool["vms"], "chips": pool["chips"]}
            for name, pool in found["capacity"].items()
        },
        "queues": {
            team["clusterQueue"]: {f: (q["nominalQuota"], q["borrowingLimit"]) for f, q in team["flavors"].items()}
            for team in found["queues"]["teams"].values()
        },
        "cohort": found["queues"]["cohortQuota"],
    }


def test_the_summary_is_what_the_node_pools_and_cluster_queues_declare(dev: Preview, prod: Preview) -> None:
    for _lines, plan in (dev, prod):
        assert _summarized(plan["summary"]) == _declared(plan)


@pytest.mark.parametrize(
    "queues",
    [
        {},  # no teams: one ClusterQueue holds every chip
        {"teams": [{"name": "a", "shares": {"v5e": "50%"}, "borrowingLimit": {"v5e": "25%"}},
                   {"name": "b", "namespace": "team-b", "shares": {"v5e": 3}}]},
    ],
    ids=["one-queue", "percent-shares"],
)  # fmt: skip
def test_the_summary_agrees_with_the_program_for_one_queue_and_percentage_shares(
    run: StackRunner, queues: dict[str, Any]
) -> None:
    pool = {"name": "v5e", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "slices": 2, "zone": "us-central1-a"}
    pools = [pool]
    plan = run({"tpu-stack:tpuPools": pools, "tpu-stack:queues": queues})
    found = summary.from_outputs(plan.outputs)
    assert _summarized(found) == _declared(plan)
    if not queues:
        assert found["queues"] == {
            "cohort": None,
            "teams": {
                "default": {"namespace": "default", "localQueue": "multislice-queue", "clusterQueue": "cluster-queue",
                            "flavors": {"v5e": {"nominalQuota": 16, "borrowingLimit": None}}}
            },
            "cohortQuota": {},
        }  # fmt: skip
    else:
        # 50% of 16 chips is 8, borrowing 25% is 4; b holds 3; the cohort keeps 16 - 8 - 3 = 5.
        assert {t: q["flavors"]["v5e"] for t, q in found["queues"]["teams"].items()} == {
            "a": {"nominalQuota": 8, "borrowingLimit": 4},
            "b": {"nominalQuota": 3, "borrowingLimit": None},
        }
        assert found["queues"]["cohortQuota"] == {"v5e": 5}
        assert found["queues"]["teams"]["b"]["namespace"] == "team-b"


def test_queue_flavors_are_listed_in_the_order_kueue_tries_them() -> None:
    """dev with the spot rung listed first among the pool groups: the ClusterQueues list the multislice ladder's
    rungs together, first rung (spot) first, where the ladder's first-listed pool group stands (multislice-spot,
    then multislice, then flex-v6e), and so does the queue table."""
    config = stack_data("dev")
    pools = config["tpu-stack:tpuPools"]
    config["tpu-stack:tpuPools"] = [pools[2], pools[0], pools[1]]  # multislice-spot, flex-v6e, multislice
    found = summary.from_config(load(_engine_config(config), stack="dev"))
    order = ["multislice-spot", "multislice", "flex-v6e"]
    assert [list(team["flavors"]) for team in found["queues"]["teams"].values()] == [order, order]
    assert list(found["queues"]["cohortQuota"]) == ["multislice"]  # research holds the spot slice
    research = summary.render_queues(found)[2:5]
    assert [row.split()[-3] for row in research] == order


def test_a_queue_in_no_cohort_shows_no_borrowing_limit() -> None:
    """Without teams the one ClusterQueue is in no cohort: there is nothing to borrow, so no `unlimited`."""
    one_queue = {"cohort": None, "cohortQuota": {}, "teams": {"default": {"namespace": "default",
                 "localQueue": "multislice-queue", "clusterQueue": "cluster-queue",
                 "flavors": {"v5e": {"nominalQuota": 16, "borrowingLimit": None}}}}}  # fmt: skip
    assert summary.render_queues({"queues": one_queue}) == [
        "Queues: 1 team(s), one ClusterQueue, no cohort; quota and borrowing limit in chips of google.com/tpu",
        "  team     local queue               cluster queue  flavor  quota  borrowing limit",
        "  default  default/multislice-queue  cluster-queue  v5e        16  -",
    ]


def test_a_plan_without_a_summary_gets_it_from_its_stack_config(dev: Preview) -> None:
    """Plans written before plan.json had a summary (a base branch's) still diff by capacity and quotas."""
    plan = {k: v for k, v in dev[1].items() if k != "summary"}
    assert summary.of_plan(plan) == DEV_SUMMARY
    with pytest.raises(summary.SummaryUnavailable, match="no stackConfig output"):
        summary.of_plan({"outputs": {}})


def test_resources_follow_in_architecture_order_with_charts_collapsed(dev: Preview) -> None:
    lines, plan = dev
    groups = [line for line in lines if line and not line.startswith(" ") and " " in line]
    start = groups.index("ProjectServices apis")
    assert groups[start : start + 19] == [
        "ProjectServices apis",
        "StackNetwork network",
        "GkeCluster tpu-dev",
        "TpuSlicePools flex-v6e",
        "TpuSlicePools multislice",
        "TpuSlicePools multislice-spot",
        "JobSetInstall jobset",
        "KueueInstall kueue",
        "KueueQueues queues",
        "NamespacePolicies jobset-policies",
        "NamespacePolicies kueue-policies",
        "NamespacePolicies research-policies",
        "NamespacePolicies training-policies",
        "ControllerMetrics jobset-metrics",
        "ControllerMetrics kueue-metrics",
        "Bucket data",
        "WorkloadIdentity training-trainer",
        "Monitoring monitoring",
        # 1 spot slice pool and its flavor beyond the flex-start ones, and its TpuSlicePools component (dev had 3
        # spot slice pools, 162 cloud/cluster resources, before the spot rung became the ladder's first); 13 more for
        # an empty project: 8 APIs, the VPC, the subnetwork, router, NAT and webhook rule of private nodes; 1 alert
        # policy, pods-not-starting; 2 for the writer's checkpoints: the checkpoint bucket and the trainer's role on it.
        f"Resources: + {len(plan['resources'])} to create: 176 in the cloud and cluster (99 rendered from charts), "
        "20 components",
    ]
    text = "\n".join(lines)
    assert "      renders 21 objects: 5 ClusterRole, 3 ClusterRoleBinding, 2 Role, 2 RoleBinding, 2 Service, 1" in text
    assert "      renders 78 objects: 47 ClusterRole, 11 CustomResourceDefinition, 4 RoleBinding, 3 Role, 3" in text
    assert not [line for line in lines if "kueue-chart:" in line]  # no rendered object listed one by one


def test_verbose_lists_every_rendered_object(tmp_path: Path) -> None:
    lines, plan = _preview(tmp_path, "--stack", "dev", "--config", str(stack_path("dev")), "--verbose")
    rendered = [r["name"] for r in plan["resources"] if r.get("rendered")]
    # A name too long for its row is on the line below its type.
    names = [line.split()[2] if len(line.split()) > 2 else after.split()[0]
             for line, after in itertools.pairwise(lines) if line.startswith("  + ")]  # fmt: skip
    listed = [name for name in names if ":" in name]
    assert len(rendered) == 99 and sorted(listed) == sorted(rendered)


def test_resource_columns_are_aligned(prod: Preview) -> None:
    """Within a component, every resource row's name starts in the same column, whatever the length of its type."""
    lines, plan = prod
    groups: list[list[str]] = []
    for line in lines:
        if line and not line.startswith(" "):
            groups.append([])
        elif line.startswith("  + ") and groups:
            groups[-1].append(line)
    rows = [row for group in groups for row in group]
    assert len(rows) > 50
    for group in groups:
        starts = {row.index(row.split()[2], len("  + ") + len(row.split()[1])) for row in group}
        assert len(starts) <= 1, group
    assert {line.split()[2] for line in rows} <= {r["name"] for r in plan["resources"]}


def test_the_kubernetes_objects_name_appears_once_beside_its_pulumi_name(dev: Preview) -> None:
    lines, _plan = dev
    (row,) = [line for line in lines if "queues-namespace-research" in line]
    assert row.split()[1:] == ["Namespace", "queues-namespace-research", "research"]


def test_a_queued_pool_reads_as_queued_not_flex_start(prod: Preview) -> None:
    """Queued provisioning sets flexStart too; the pool's line says which mode it is."""
    lines, _plan = prod
    (row,) = [line for line in lines if " burst " in line and "NodePool" in line]
    assert row.endswith("ct5lp-hightpu-4t 4x4 nodes=0..4 total queued us-west4-a")


def test_policy_findings_come_last(dev: Preview) -> None:
    lines, _plan = dev
    order = [
        next(i for i, line in enumerate(lines) if line.startswith(prefix))
        for prefix in ("Capacity:", "Queues:", "GkeCluster", "Resources:", "Outputs:", "Policy report", "Policies:")
    ]
    assert order == sorted(order)
    assert lines[-1].startswith("Wrote ")


@pytest.mark.parametrize("stack", FIXTURE_STACKS)
def test_every_line_of_the_preview_fits_100_columns(stack: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every fixture stack: long reservation names (ironwood), queue and request names (multiregion) included."""
    out = tmp_path_factory.mktemp(stack)  # the last line names it
    lines, _plan = _preview(out, "--stack", stack, "--config", str(stack_path(stack)))
    assert [line for line in lines if len(line) > 100] == []


def test_an_advisory_that_repeats_per_pool_is_one_entry_naming_them(dev: Preview) -> None:
    """dev's cluster has no maintenance window: the auto-upgrade advisory holds for each of its 5 TPU node pools, with
    the same words; it reads once, naming the five."""
    lines, _plan = dev
    report = lines[next(i for i, line in enumerate(lines) if line.startswith("Policy report")) :]
    assert report[:-1] == [
        "Policy report (as the real engine runs the pack: a new stack's preview, the deployed stack at rest)",
        "  note: in a new stack's preview, jobset-chart, kueue-chart cannot render before the cluster exists;",
        "    see the README (first deployment)",
        "  [advisory] tpu-node-auto-upgrade: 5 gcp:container/nodePool:NodePool (new stack, deployed stack at",
        "      rest): flex-v6e, multislice-0, multislice-1, multislice-2, multislice-spot",
        "      TPU pool may be upgraded, restarting its slices, at any time: give cluster 'tpu-dev' a",
        "      maintenancePolicy (a window, and exclusions of scope NO_MINOR_OR_NODE_UPGRADES over training",
        "      runs)",
        "Policies: 0 mandatory, 5 advisory",
    ]
    assert report[-1].startswith("Wrote ")


def test_quota_rows_name_computes_quota_per_version_and_kind_and_reservations_need_none() -> None:
    """GKE's quota table ("Ensure quota for TPUs"): on-demand and preemptible quota per version (v6e and TPU7x
    on-demand under "TPUs per TPU family", Cloud TPU's TPUS_PER_TPU_FAMILY); a calendar-mode request needs no quota
    (Cloud TPU consumption options), nor do the nodes of an existing reservation (it took its quota when made)."""
    from datetime import UTC, datetime, timedelta

    from components.config.stack import load

    start = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0, second=0, minute=0)
    window = {"startTime": start.isoformat(), "endTime": (start + timedelta(days=7)).isoformat(),
              "name": "cal-v6e"}  # fmt: skip
    config = load(
        {
            "gcp:project": "proj-1234",
            "gcp:region": "us-east5",
            "tpu-stack:tpuPools": [
                {"name": "od", "machineType": "ct6e-standard-4t", "zone": "us-east5-b"},
                {"name": "p5", "machineType": "ct5p-hightpu-4t", "topology": "2x2x2", "provisioning": "spot",
                 "zone": "us-east5-a"},
                {"name": "cal", "machineType": "ct6e-standard-4t", "topology": "4x4", "provisioning": "reservation",
                 "futureReservation": window, "zone": "us-east5-a"},
            ],
        },
        stack="dev",
    )  # fmt: skip
    rows = summary.from_config(config)["quota"]
    assert [(r["kind"], r["tpu"], r["chips"], r["quota"], r["reservation"], r["calendar"]) for r in rows] == [
        ("on-demand", "v6e", 4, "TPUs per TPU family (tpu_family CT6E)", None, False),
        ("preemptible", "v5p", 8, "Preemptible TPU v5p chips", None, False),
        ("reservation", "v6e", 16, None, "cal-v6e", True),
    ]
    lines = summary.render_quota(summary.from_config(config))
    row = "  us-east5  reservation  v6e     16  no quota: calendar-mode reservation cal-v6e must hold 16 chips"
    assert row in lines


def test_a_table_too_wide_splits_its_headers_and_continues_its_last_cell_below() -> None:
    """A header wider than its values takes two lines; a last cell whose word is wider than its column goes below."""
    rows = [["team", "quota", "borrowing limit", "note"], ["a" * 60, "4", "unlimited", "reservation " + "r/" * 30]]
    assert summary.table(rows, right=frozenset({1})) == [
        "  team" + " " * 56 + "  quota  borrowing  note",
        "  " + " " * 60 + "         limit",
        "  " + "a" * 60 + "      4  unlimited  reservation",
        "      " + "r/" * 30,
    ]
    rows = [["kind", "note"], ["a" * 70, "must hold 128 chips of the reservation the pool group consumes"]]
    assert summary.table(rows) == [
        "  kind" + " " * 66 + "  note",
        "  " + "a" * 70 + "  must hold 128 chips of the",
        " " * 74 + "reservation the pool group",
        " " * 74 + "consumes",
    ]
