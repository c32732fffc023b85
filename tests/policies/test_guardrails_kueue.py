"""policies/guardrails/kueue.py: team queues keep to their namespaces, queued-provisioning flavors are provisioned
through Kueue's ProvisioningRequest check, and no PriorityClass of the stack is the cluster's default."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from tests.policies.test_rules import (
    MULTIKUEUE_CHECK,
    QUEUED_TOLERATION,
    baseline,
    check,
    cluster_queue,
    flavor,
    gke_cluster,
    in_cluster,
    res,
    tolerating,
)

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2"


def team_queue(team: str, selector: dict[str, Any] | None) -> dict[str, Any]:
    queue = cluster_queue(f"{team}-cluster-queue", {"flex": 4})
    if selector is not None:
        queue["inputs"]["spec"]["namespaceSelector"] = selector
    return queue


def local_queue(namespace: str, target: str) -> dict[str, Any]:
    return res(f"{KUEUE}:LocalQueue", f"lq-{namespace}", {"metadata": {"name": f"{namespace}-queue",
                                                                       "namespace": namespace},
                                                          "spec": {"clusterQueue": target}})  # fmt: skip


def of_team(team: str) -> dict[str, Any]:
    return {"matchLabels": {"kubernetes.io/metadata.name": team}}


def messages(rules: ModuleType, resources: list[dict[str, Any]], policy: str) -> list[tuple[str, str]]:
    return [(v["urn"].rsplit("::", 1)[1], v["message"]) for v in check(rules, resources) if v["policy"] == policy]


def teams(research: dict[str, Any] | None, local_target: str = "research-cluster-queue") -> list[dict[str, Any]]:
    return [
        team_queue("research", research),
        team_queue("training", of_team("training")),
        local_queue("research", local_target),
        local_queue("training", "training-cluster-queue"),
    ]


def test_team_queues_select_their_own_namespaces(rules: ModuleType) -> None:
    assert messages(rules, teams(of_team("research")), "kueue-queue-namespaces") == []
    expression = {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["research"]}]
    }
    assert messages(rules, teams(expression), "kueue-queue-namespaces") == []


@pytest.mark.parametrize("selector", [{}, {"matchLabels": {}}, {"matchExpressions": []}])
def test_a_team_queue_open_to_every_namespace(rules: ModuleType, selector: dict[str, Any]) -> None:
    assert messages(rules, teams(selector), "kueue-queue-namespaces") == [
        ("clusterqueue-research-cluster-queue", "ClusterQueue 'research-cluster-queue' selects every namespace beside "
         "the cluster's other ClusterQueues: a LocalQueue in any namespace could spend its quota; select its team's "
         "namespace (kubernetes.io/metadata.name)"),
    ]  # fmt: skip


def test_the_only_queue_of_a_cluster_may_serve_every_namespace(rules: ModuleType) -> None:
    """A stack without teams has one ClusterQueue for the whole cluster (the ironwood fixture)."""
    resources = [team_queue("cluster", {}), local_queue("default", "cluster-cluster-queue")]
    assert messages(rules, resources, "kueue-queue-namespaces") == []


def test_a_local_queue_points_at_a_queue_that_selects_its_namespace(rules: ModuleType) -> None:
    assert messages(rules, teams(of_team("research"), "training-cluster-queue"), "kueue-queue-namespaces") == [
        ("lq-research", "LocalQueue 'research-queue' in namespace 'research' points at ClusterQueue "
         "'training-cluster-queue', which does not select that namespace: Kueue leaves its workloads inadmissible; "
         "point it at its team's ClusterQueue"),
    ]  # fmt: skip
    assert messages(rules, teams(of_team("research"), "shared-queue"), "kueue-queue-namespaces") == [
        ("lq-research", "LocalQueue 'research-queue' points at ClusterQueue 'shared-queue', which the stack does not "
         "declare: name its team's ClusterQueue"),
    ]  # fmt: skip
    absent = teams(None)  # Kueue: a null selector selects no namespace
    assert [urn for urn, _ in messages(rules, absent, "kueue-queue-namespaces")] == ["lq-research"]


def test_a_namespaces_own_labels_count(rules: ModuleType) -> None:
    labelled = res("kubernetes:core/v1:Namespace", "ns-research",
                   {"metadata": {"name": "research", "labels": {"tpu-stack/team": "research"}}})  # fmt: skip
    resources = [labelled, *teams({"matchLabels": {"tpu-stack/team": "research"}})]
    assert messages(rules, resources, "kueue-queue-namespaces") == []


PROVISIONING = {
    "controllerName": "kueue.x-k8s.io/provisioning-request",
    "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "burst"},
}


def queued(strategy: dict[str, Any] | None, *, check_kind: dict[str, Any] = PROVISIONING) -> list[dict[str, Any]]:
    """The baseline's queued pool `burst`, its flavor and a queue over it, with the queue's admission checks."""
    queue = cluster_queue("team-burst", {"burst": 8})
    if strategy is not None:
        queue["inputs"]["spec"].update(strategy)
    admission = res(f"{KUEUE}:AdmissionCheck", "ac-burst", {"metadata": {"name": "burst-provisioning"},
                                                            "spec": check_kind})  # fmt: skip
    burst = tolerating(flavor("burst", {"cloud.google.com/gke-nodepool": "burst"}), QUEUED_TOLERATION)
    return [*baseline(), burst, admission, queue]


NOT_PROVISIONED = (
    "ClusterQueue 'team-burst' lists queued-provisioning flavor 'burst' without a ProvisioningRequest admission check "
    "on it: its workloads would be admitted with no nodes asked for; add the check in admissionChecksStrategy "
    "(onFlavors)"
)


@pytest.mark.parametrize(
    "strategy",
    [
        {"admissionChecksStrategy": {"admissionChecks": [{"name": "burst-provisioning", "onFlavors": ["burst"]}]}},
        {"admissionChecksStrategy": {"admissionChecks": [{"name": "burst-provisioning"}]}},  # every flavor
        {"admissionChecks": ["burst-provisioning"]},
    ],
)
def test_a_queued_flavor_is_provisioned_through_its_check(rules: ModuleType, strategy: dict[str, Any]) -> None:
    assert messages(rules, queued(strategy), "queued-flavors-provision") == []


@pytest.mark.parametrize(
    ("strategy", "check_kind"),
    [
        (None, PROVISIONING),
        ({"admissionChecksStrategy": {"admissionChecks": [{"name": "burst-provisioning", "onFlavors": ["flex"]}]}},
         PROVISIONING),
        ({"admissionChecks": ["burst-provisioning"]}, {"controllerName": "example.com/other"}),
    ],
    ids=["no check", "the check on another flavor", "a check of another controller"],
)  # fmt: skip
def test_a_queued_flavor_without_its_check(
    rules: ModuleType, strategy: dict[str, Any] | None, check_kind: dict[str, Any]
) -> None:
    assert messages(rules, queued(strategy, check_kind=check_kind), "queued-flavors-provision") == [
        ("clusterqueue-team-burst", NOT_PROVISIONED)
    ]


def test_a_flex_start_flavor_needs_no_check(rules: ModuleType) -> None:
    """The baseline's flex-start flavor matches the flex pool, not the queued one (it does not tolerate the queued
    taint): Kueue admits it on quota and the autoscaler makes its nodes."""
    assert messages(rules, baseline(), "queued-flavors-provision") == []


def test_a_multikueue_manager_leaves_provisioning_to_its_workers(rules: ModuleType) -> None:
    manager = [
        *gke_cluster("tpu-manager"),
        in_cluster("tpu-manager", res(f"{KUEUE}:AdmissionCheck", "admissioncheck-multikueue",
                                      {"metadata": {"name": "multikueue"}, "spec": MULTIKUEUE_CHECK})),
        in_cluster("tpu-manager", tolerating(flavor("burst", {"cloud.google.com/gke-nodepool": "burst"}),
                                             QUEUED_TOLERATION)),
        in_cluster("tpu-manager", cluster_queue("team", {"burst": 8})),
    ]  # fmt: skip
    queued_pool = next(r for r in baseline() if r["name"] == "burst")
    assert messages(rules, [*manager, queued_pool], "queued-flavors-provision") == []


def test_no_priority_class_is_the_clusters_default(rules: ModuleType) -> None:
    high = res("kubernetes:scheduling.k8s.io/v1:PriorityClass", "pc-high",
               {"metadata": {"name": "high"}, "value": 750, "globalDefault": True})  # fmt: skip
    assert messages(rules, [high], "no-global-default-priority") == [
        ("pc-high", "PriorityClass 'high' is globalDefault: every pod without a priorityClassName in the cluster would "
         "get its priority; set globalDefault false"),
    ]  # fmt: skip
    high["inputs"]["globalDefault"] = False
    assert messages(rules, [high], "no-global-default-priority") == []
