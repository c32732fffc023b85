"""Every alert policy of the stacks evaluated by Prometheus itself: `promtool test rules` over synthetic series.

Each AlertPolicy's PromQL condition becomes a Prometheus alerting rule as Cloud Monitoring runs it: the query, held
for the condition's `duration` (`for`), evaluated every `evaluationInterval` (60s). The series are written by hand
as Managed Service for Prometheus stores them: Kueue's gauges by their Prometheus names (`kueue_pending_workloads`
with `cluster_queue` and `status`, `kueue_reserving_active_workloads` and `kueue_admitted_active_workloads` per
`cluster_queue`, from Kueue's pkg/metrics), GKE's TPU metric under its PromQL name
`kubernetes_io:node_accelerator_tensorcore_utilization` with the k8s_node resource labels. For each alert one case
fires and others must not, among them one whose condition holds at the evaluation but for less than its `for`; all
cases of a stack run in one promtool call. Every stack holds pending and idle 30 minutes; one configuration with
three different holds tells them apart.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.engine import Plan, run_program
from tests.effects import promtool
from tests.effects.conftest import PerStack, shared
from tests.fixtures import stack_data, stack_plan

ALERT = "gcp:monitoring/alertPolicy:AlertPolicy"
PENDING = "kueue_pending_workloads"
RESERVING = "kueue_reserving_active_workloads"
ADMITTED = "kueue_admitted_active_workloads"
TENSORCORE = "kubernetes_io:node_accelerator_tensorcore_utilization"
POD_PHASE = "kube_pod_status_phase"


@dataclass(frozen=True)
class Case:
    """`series` (selector -> promtool's expanding notation, one sample a minute) evaluated at `at`; `fires` holds the
    labels the alert carries when it must fire (beside alertname), None when it must not."""

    alert: str
    title: str
    series: dict[str, str]
    at: str
    fires: dict[str, str] | None = field(default=None)


def pending(queue: str, values: str, status: str = "active") -> dict[str, str]:
    return {f'{PENDING}{{cluster_queue="{queue}",status="{status}"}}': values}


def tensorcore(cluster: str, node: str, values: str) -> dict[str, str]:
    labels = (
        f'monitored_resource="k8s_node",project_id="p",location="us-central1",cluster_name="{cluster}",'
        f'node_name="{node}"'
    )
    return {f"{TENSORCORE}{{{labels}}}": values}


def pending_cases(queue: str, other: str) -> list[Case]:
    alert = f"pending-{queue}"
    return [
        Case(alert, "a workload pending 40 minutes", pending(queue, "2x40"), "40m", fires={}),
        Case(alert, "inadmissible workloads count too", pending(queue, "1x40", status="inadmissible"), "40m", {}),
        Case(alert, "pending 25 minutes, then admitted: below the 30 minutes", pending(queue, "2x25 0x15"), "40m"),
        Case(alert, "only another queue waits", {**pending(other, "3x60"), **pending(queue, "0x60")}, "60m"),
        # Held: pending at the evaluation, but only since minute 16, 24 minutes, under the 30 of `for`.
        Case(alert, "pending for the last 24 minutes only", pending(queue, "0x15 2x25"), "40m"),
    ]


def idle_cases(cluster: str) -> list[Case]:
    alert = "tpu-idle-while-waiting"
    waiting = pending("training-cluster-queue", "1x60")
    return [
        Case(
            alert,
            "every TPU node idle while a workload waits",
            {**tensorcore(cluster, "tpu-a", "0x60"), **tensorcore(cluster, "tpu-b", "0.5x60"), **waiting},
            "60m",
            {},
        ),
        Case(
            alert,
            "one TPU node busy",
            {**tensorcore(cluster, "tpu-a", "0x60"), **tensorcore(cluster, "tpu-b", "40x60"), **waiting},
            "60m",
        ),
        Case(
            alert,
            "TPUs idle, nothing waits",
            {**tensorcore(cluster, "tpu-a", "0x60"), **pending("training-cluster-queue", "0x60")},
            "60m",
        ),
        Case(alert, "only another cluster's TPUs idle", {**tensorcore("other", "tpu-a", "0x60"), **waiting}, "60m"),
        Case(alert, "idle 20 minutes, then busy", {**tensorcore(cluster, "tpu-a", "0x20 60x40"), **waiting}, "60m"),
        # Held: idle at the evaluation, but only since minute 36, 24 minutes, under the 30 of `for`.
        Case(
            alert, "idle for the last 24 minutes only", {**tensorcore(cluster, "tpu-a", "60x35 0x25"), **waiting}, "60m"
        ),
    ]


def reserving(queue: str, reserved: str, admitted: str) -> dict[str, str]:
    return {f'{RESERVING}{{cluster_queue="{queue}"}}': reserved, f'{ADMITTED}{{cluster_queue="{queue}"}}': admitted}


def provisioning_cases() -> list[Case]:
    alert = "queued-provisioning-not-granted"
    queue = "research-cluster-queue"
    return [
        Case(
            alert,
            "quota reserved 130 minutes, never admitted",
            reserving(queue, "1x130", "0x130"),
            "130m",
            fires={"cluster_queue": queue},
        ),
        Case(alert, "reserved and admitted", reserving(queue, "1x130", "1x130"), "130m"),
        Case(alert, "admitted after 100 minutes", reserving(queue, "1x130", "0x100 1x30"), "130m"),
        # Held: not admitted at the evaluation, but only since minute 31, 99 minutes, under the 120 of `for`.
        Case(alert, "not admitted for the last 99 minutes only", reserving(queue, "1x130", "1x30 0x100"), "130m"),
        Case(
            alert,
            "one queue waits, the other is admitted",
            {**reserving(queue, "1x130", "0x130"), **reserving("training-cluster-queue", "2x130", "2x130")},
            "130m",
            fires={"cluster_queue": queue},
        ),
    ]


def phase(namespace: str, pod: str, values: dict[str, str]) -> dict[str, str]:
    """kube_pod_status_phase as GKE's kube state metrics write it: one series per phase, 1 for the pod's current one
    (phase -> promtool values)."""
    return {
        f'{POD_PHASE}{{namespace="{namespace}",pod="{pod}",phase="{name}",uid="uid-{pod}"}}': value
        for name, value in values.items()
    }


def not_starting_cases(namespace: str) -> list[Case]:
    """Held 20 minutes by default; a Job's pod `<job>-0-<suffix>`."""
    alert = "pods-not-starting"
    pod = "train-1-0-abcde"
    return [
        Case(alert, "a pod pending 25 minutes", phase(namespace, pod, {"Pending": "1x25", "Running": "0x25"}), "25m",
             fires={"namespace": namespace, "pod": pod}),
        Case(alert, "pending 15 minutes, then running", phase(namespace, pod, {"Pending": "1x15 0x10",
                                                                                "Running": "0x15 1x10"}), "25m"),
        Case(alert, "a pod pending in kube-system", phase("kube-system", pod, {"Pending": "1x25"}), "25m"),
        # Held: pending at the evaluation, a new pod since minute 11 (the first deleted by an eviction), 14 minutes.
        Case(alert, "a new pod pending 14 minutes", {**phase(namespace, pod, {"Pending": "1x10"}),
                                                     **phase(namespace, "train-1-0-fghij", {"Pending": "_x10 1x15"})},
             "25m"),
    ]  # fmt: skip


CASES = {
    "dev": [
        *pending_cases("training-cluster-queue", "research-cluster-queue"),
        *pending_cases("research-cluster-queue", "training-cluster-queue"),
        *idle_cases("tpu-dev"),
        *not_starting_cases("training"),
    ],
    "prod": [
        *pending_cases("training-cluster-queue", "research-cluster-queue"),
        *pending_cases("research-cluster-queue", "training-cluster-queue"),
        *idle_cases("tpu-prod"),
        *provisioning_cases(),
        *not_starting_cases("research"),
    ],
}


def rules(plan: Plan) -> dict[str, Any]:
    """The stack's alert policies as one Prometheus rule group, as Cloud Monitoring evaluates their conditions."""
    group_rules = []
    interval = set()
    for policy in plan.by_type(ALERT):
        (condition,) = policy["inputs"]["conditions"]
        promql = condition["conditionPrometheusQueryLanguage"]
        interval.add(promql["evaluationInterval"])
        group_rules.append({"alert": condition["displayName"], "expr": promql["query"], "for": promql["duration"]})
    (every,) = interval
    return {"groups": [{"name": f"tpu-stack-{plan.stack}", "interval": every, "rules": group_rules}]}


def unit_test(case: Case) -> dict[str, Any]:
    expected = [] if case.fires is None else [{"exp_labels": case.fires}]
    return {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": series, "values": values} for series, values in case.series.items()],
                "alert_rule_test": [{"eval_time": case.at, "alertname": case.alert, "exp_alerts": expected}],
            }
        ],
    }


def run_promtool(rule_group: dict[str, Any], cases: list[Case]) -> dict[str, str]:
    """One `promtool test rules` over every case; case title -> "" when it passed, else promtool's report."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "rules.yaml").write_text(yaml.safe_dump(rule_group, sort_keys=False))
        files = []
        for index, case in enumerate(cases):
            name = f"case-{index:02d}.yaml"
            (folder / name).write_text(yaml.safe_dump(unit_test(case), sort_keys=False))
            files.append(name)
        done = subprocess.run(
            [str(promtool.binary()), "test", "rules", *files],
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
            check=False,
        )
    reports = {}
    for block in done.stdout.split("Unit Testing:")[1:]:
        name, _, report = block.strip().partition("\n")
        reports[name.strip()] = "" if report.strip() == "SUCCESS" else report.strip()
    if len(reports) != len(cases):
        raise RuntimeError(f"promtool answered for {len(reports)} of {len(cases)} files:\n{done.stdout}")
    return {f"{case.alert}: {case.title}": reports[files[i]] for i, case in enumerate(cases)}


@pytest.fixture(scope=shared)
def evaluated(plans: PerStack[Plan]) -> PerStack[dict[str, str]]:
    """promtool's verdict on every case of a stack, one call each."""
    return PerStack(lambda stack: run_promtool(rules(plans[stack]), CASES[stack]))


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_alert_fires_when_it_should_and_only_then(evaluated: PerStack[dict[str, str]], stack: str) -> None:
    failed = [f"{case}\n{report}" for case, report in evaluated[stack].items() if report]
    assert not failed, "\n".join(["promtool disagrees:", *failed])


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_alert_has_a_case_that_fires_and_one_that_must_not(plans: dict[str, Plan], stack: str) -> None:
    alerts = {p["inputs"]["conditions"][0]["displayName"] for p in plans[stack].by_type(ALERT)}
    assert alerts == {case.alert for case in CASES[stack]}
    for alert in alerts:
        outcomes = {case.fires is not None for case in CASES[stack] if case.alert == alert}
        assert outcomes == {True, False}, alert


def test_prometheus_tells_a_broken_query_apart(plans: dict[str, Plan]) -> None:
    """The cases are not vacuous: with `>= 0` in place of `> 0` the pending alert fires on an empty queue."""
    group = rules(plans["dev"])
    for rule in group["groups"][0]["rules"]:
        rule["expr"] = rule["expr"].replace("> 0", ">= 0")
    report = run_promtool(group, CASES["dev"][:4])
    assert report["pending-training-cluster-queue: a workload pending 40 minutes"] == ""
    assert "got:[" in report["pending-training-cluster-queue: only another queue waits"]


# ---- the alert policies, whole --------------------------------------------------------------------------------------

LABELS = {"app": "tpu-stack", "env": "prod", "managed-by": "pulumi", "team": "ml-platform"}


def policy(alert: str, query: str, seconds: int) -> dict[str, Any]:
    return {
        "project": "tpu-stack-prod",
        "displayName": f"tpu-stack prod: {alert}",
        "combiner": "OR",
        "conditions": [
            {
                "displayName": alert,
                "conditionPrometheusQueryLanguage": {
                    "query": query,
                    "duration": f"{seconds}s",
                    "evaluationInterval": "60s",
                    # Kueue's series exist only after the first scrape: validation would refuse a new project's policy.
                    "disableMetricValidation": True,
                },
            }
        ],
        "notificationChannels": ["projects/tpu-stack-prod/notificationChannels/4518223379601234567"],  # the fixture's
        "userLabels": LABELS,
    }


PROD_POLICIES = {
    "monitoring-pending-research-cluster-queue": policy(
        "pending-research-cluster-queue",
        'sum(kueue_pending_workloads{cluster_queue="research-cluster-queue"}) > 0',
        1800,
    ),
    "monitoring-pending-training-cluster-queue": policy(
        "pending-training-cluster-queue",
        'sum(kueue_pending_workloads{cluster_queue="training-cluster-queue"}) > 0',
        1800,
    ),
    "monitoring-tpu-idle-while-waiting": policy(
        "tpu-idle-while-waiting",
        '(max(kubernetes_io:node_accelerator_tensorcore_utilization{monitored_resource="k8s_node",cluster_name="tpu-prod"})'
        " < 1) and on() (sum(kueue_pending_workloads) > 0)",
        1800,
    ),
    "monitoring-pods-not-starting": policy(
        "pods-not-starting",
        'max by (namespace, pod) (kube_pod_status_phase{phase="Pending",namespace=~"research|training"}) > 0',
        1200,
    ),
    "monitoring-queued-provisioning-not-granted": policy(
        "queued-provisioning-not-granted",
        "sum by (cluster_queue) (kueue_reserving_active_workloads) - sum by (cluster_queue) "
        "(kueue_admitted_active_workloads) > 0",
        7200,
    ),
}


def test_prods_alert_policies_whole(plans: PerStack[Plan]) -> None:
    component = "urn:pulumi:prod::tpu-stack::pulumi:pulumi:Stack$tpu-stack:index:Monitoring::monitoring"
    found = {p["name"]: p for p in plans["prod"].by_type(ALERT)}
    assert {name: p["inputs"] for name, p in found.items()} == PROD_POLICIES
    assert {(p["parent"], p["protect"]) for p in found.values()} == {(component, True)}


def test_no_queue_no_alert_and_no_tpu_pool_no_idle_alert() -> None:
    from components import monitoring
    from components.config.stack import load

    base = {"gcp:project": "proj-1234", "gcp:region": "us-central1"}
    assert monitoring.alert_queries(load(base, stack="dev")) == {}
    assert monitoring.dashboard(load(base, stack="dev"))["mosaicLayout"] == {"columns": 48}
    capacity = '{"autopilotCapacity": [{"tpuVersion": "v5e", "topology": "2x4", "provisioning": "flex-start"}]}'
    autopilot = load({**base, "tpu-stack:cluster": '{"mode": "autopilot"}', "tpu-stack:queues": capacity}, stack="dev")
    assert monitoring.alert_queries(autopilot) == {
        "pending-cluster-queue": ('sum(kueue_pending_workloads{cluster_queue="cluster-queue"}) > 0', 30),
        "pods-not-starting": (
            'max by (namespace, pod) (kube_pod_status_phase{phase="Pending",namespace=~"default"}) > 0',
            20,
        ),
    }


# ---- each alert its own hold ---------------------------------------------------------------------------------------

HOLDS = {"pendingMinutes": 20, "idleMinutes": 45, "provisioningMinutes": 90, "notStartingMinutes": 25}


@pytest.fixture(scope=shared)
def held() -> Plan:
    """Prod with three different holds (every stack file leaves pending and idle at 30 minutes)."""
    config = stack_data("prod")
    return run_program({**config, "tpu-stack:monitoring": {**config["tpu-stack:monitoring"], **HOLDS}}, stack="prod")


def test_each_alert_holds_for_its_own_setting(held: Plan) -> None:
    durations = {
        p["inputs"]["conditions"][0]["displayName"]: p["inputs"]["conditions"][0]["conditionPrometheusQueryLanguage"][
            "duration"
        ]
        for p in held.by_type(ALERT)
    }
    assert durations == {
        "pending-research-cluster-queue": "1200s",
        "pending-training-cluster-queue": "1200s",
        "tpu-idle-while-waiting": "2700s",
        "queued-provisioning-not-granted": "5400s",
        "pods-not-starting": "1500s",
    }


HELD_CASES = [
    Case("pending-training-cluster-queue", "pending 25 minutes, over the 20", pending("training-cluster-queue", "1x25"),
         "25m", fires={}),
    Case("pending-training-cluster-queue", "pending the last 15 minutes only",
         pending("training-cluster-queue", "0x10 1x15"), "25m"),
    Case("tpu-idle-while-waiting", "idle 50 minutes, over the 45",
         {**tensorcore("tpu-prod", "tpu-a", "0x50"), **pending("training-cluster-queue", "1x50")}, "50m", fires={}),
    Case("tpu-idle-while-waiting", "idle 40 minutes, under the 45",
         {**tensorcore("tpu-prod", "tpu-a", "0x40"), **pending("training-cluster-queue", "1x40")}, "40m"),
    Case("queued-provisioning-not-granted", "not granted in 100 minutes, over the 90",
         reserving("research-cluster-queue", "1x100", "0x100"), "100m",
         fires={"cluster_queue": "research-cluster-queue"}),
    Case("queued-provisioning-not-granted", "not granted in 80 minutes, under the 90",
         reserving("research-cluster-queue", "1x80", "0x80"), "80m"),
    Case("pods-not-starting", "pending 28 minutes, over the 25", phase("training", "p", {"Pending": "1x28"}), "28m",
         fires={"namespace": "training", "pod": "p"}),
    Case("pods-not-starting", "pending 22 minutes, under the 25", phase("training", "p", {"Pending": "1x22"}), "22m"),
]  # fmt: skip


def test_each_alert_fires_after_its_own_hold(held: Plan) -> None:
    report = run_promtool(rules(held), HELD_CASES)
    failed = [f"{case}\n{text}" for case, text in report.items() if text]
    assert not failed, "\n".join(["promtool disagrees:", *failed])


# ---- the multiregion stack: one rule group per cluster, every series labelled with its cluster ---------------------

MANAGER, EAST = "tpu-mr-manager", "tpu-mr-east5"


def of_cluster(cluster: str, selector_values: dict[str, str]) -> dict[str, str]:
    """The series with the collectors' `cluster` label added (Managed Prometheus labels every series so)."""
    return {selector.replace("{", f'{{cluster="{cluster}",', 1): values for selector, values in selector_values.items()}


def cluster_rules(plan: Plan, cluster: str) -> dict[str, Any]:
    """The alert policies of one cluster (their display names end with it) as one rule group."""
    group = rules(plan)["groups"][0]
    policies = [p for p in plan.by_type(ALERT) if p["inputs"]["displayName"].endswith(f"({cluster})")]
    names = {p["inputs"]["conditions"][0]["conditionPrometheusQueryLanguage"]["query"] for p in policies}
    return {"groups": [{**group, "rules": [r for r in group["rules"] if r["expr"] in names]}]}


MULTIREGION_CASES = {
    MANAGER: [
        Case("pending-research-cluster-queue", "the manager's queue waits 40 minutes",
             of_cluster(MANAGER, pending("research-cluster-queue", "1x40")), "40m", fires={}),
        Case("pending-research-cluster-queue", "only a worker's copy waits",
             of_cluster(EAST, pending("research-cluster-queue", "1x40")), "40m"),
        Case("pending-training-cluster-queue", "the manager's queue waits 40 minutes",
             of_cluster(MANAGER, pending("training-cluster-queue", "1x40")), "40m", fires={}),
        Case("pending-training-cluster-queue", "pending for the last 24 minutes only",
             of_cluster(MANAGER, pending("training-cluster-queue", "0x15 1x25")), "40m"),
        Case("pending-training-cluster-queue", "waited 20 minutes",
             of_cluster(MANAGER, pending("training-cluster-queue", "1x20 0x20")), "40m"),
        Case("waiting-for-a-worker", "quota held 130 minutes, no worker admitted",
             of_cluster(MANAGER, reserving("research-cluster-queue", "1x130", "0x130")), "130m",
             fires={"cluster_queue": "research-cluster-queue"}),
        Case("waiting-for-a-worker", "a worker admitted it after 30 minutes",
             of_cluster(MANAGER, reserving("research-cluster-queue", "1x130", "0x30 1x100")), "130m"),
        Case("waiting-for-a-worker", "no worker admitted it for the last 99 minutes only",
             of_cluster(MANAGER, reserving("research-cluster-queue", "1x130", "1x30 0x100")), "130m"),
        Case("waiting-for-a-worker", "only a worker's copy waits for its provisioning",
             of_cluster(EAST, reserving("research-cluster-queue", "1x130", "0x130")), "130m"),
    ],
    EAST: [
        Case("queued-provisioning-not-granted", "the slice not granted in 130 minutes",
             of_cluster(EAST, reserving("research-cluster-queue", "1x130", "0x130")), "130m",
             fires={"cluster_queue": "research-cluster-queue"}),
        Case("queued-provisioning-not-granted", "not granted for the last 99 minutes only",
             of_cluster(EAST, reserving("research-cluster-queue", "1x130", "1x30 0x100")), "130m"),
        Case("queued-provisioning-not-granted", "the manager waits, not this worker",
             of_cluster(MANAGER, reserving("research-cluster-queue", "1x130", "0x130")), "130m"),
        Case("tpu-idle-while-waiting", "its TPUs idle while a copy waits here",
             {**tensorcore(EAST, "tpu-a", "0x60"), **of_cluster(EAST, pending("research-cluster-queue", "1x60"))},
             "60m", fires={}),
        Case("tpu-idle-while-waiting", "its TPUs idle for the last 24 minutes only",
             {**tensorcore(EAST, "tpu-a", "60x35 0x25"), **of_cluster(EAST, pending("research-cluster-queue", "1x60"))},
             "60m"),
        Case("tpu-idle-while-waiting", "its TPUs idle while only the manager's queue waits",
             {**tensorcore(EAST, "tpu-a", "0x60"), **of_cluster(MANAGER, pending("research-cluster-queue", "1x60"))},
             "60m"),
        Case("pods-not-starting", "a pod of this worker pending 25 minutes",
             of_cluster(EAST, phase("research", "p", {"Pending": "1x25"})), "25m",
             fires={"namespace": "research", "pod": "p"}),
        Case("pods-not-starting", "a pod of another worker pending",
             of_cluster("tpu-mr-japan", phase("research", "p", {"Pending": "1x25"})), "25m"),
    ],
}  # fmt: skip


@pytest.mark.parametrize("cluster", [MANAGER, EAST])
def test_multiregion_alerts_read_their_own_clusters_series(cluster: str) -> None:
    """The queues have the same names on every cluster: each cluster's alerts fire on its own series only."""
    plan = stack_plan("multiregion")
    group = cluster_rules(plan, cluster)
    assert {r["alert"] for r in group["groups"][0]["rules"]} == {case.alert for case in MULTIREGION_CASES[cluster]}
    report = run_promtool(group, MULTIREGION_CASES[cluster])
    failed = [f"{case}\n{text}" for case, text in report.items() if text]
    assert not failed, "\n".join(["promtool disagrees:", *failed])
