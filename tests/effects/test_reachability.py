"""Who reaches whom in dev and prod: the rendered NetworkPolicies through IBM's network-config-analyzer, held to a
matrix written by hand per stack.

The pods are the stack's own (controllers with their chart's pod labels, two workers per team namespace, Saxml's
servers with the labels the stack gives them), beside what GKE runs (kube-dns, the Managed Prometheus collectors,
both on the pod network) and a workload the stack does not manage. Outside the cluster: the control plane, a
Saxml client in the configured range, another VPC host, the internet, Google APIs (private.googleapis.com), the
node's metadata server (169.254.169.254, and 169.254.169.252 where GKE's metadata server answers Workload Identity
on port 988) and the node's DNS cache (169.254.20.10). What every pod needs, from GKE's Workload Identity and
Dataplane V2 pages: 169.254.169.252:988 and 169.254.169.254:80, HTTPS to Google APIs (no fixed range: 443
anywhere), and DNS on 53 (UDP and TCP) wherever the cluster answers it: kube-dns's pods (Standard's default),
the node's metadata server (Cloud DNS, the only provider of Autopilot), the node's NodeLocal DNSCache (always on
in Autopilot). The API server calls the webhooks on their pod ports (Kueue 9443 and 8082, JobSet 9443); the
collectors scrape 8443. Everything not listed is denied.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from offline.engine import Plan
from tests.effects.conftest import PerStack, shared
from tests.effects.reachability import Matrix, Pod, differences, matrix

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"

OUTSIDE = {
    "control-plane": "172.16.0.2",
    "saxml-client": "10.20.0.5",  # inside prod's saxml.service.sourceRanges 10.20.0.0/24
    "vpc-host": "10.30.0.5",
    "internet": "203.0.113.7",
    "google-apis": "199.36.153.8",
    "metadata": "169.254.169.254",
    "metadata-wi": "169.254.169.252",
    "node-local-dns": "169.254.20.10",
}
GKE_PODS = (
    Pod("kube-system/kube-dns", {"k8s-app": "kube-dns"}),
    # GoogleCloudPlatform/prometheus-engine manifests/operator.yaml: DaemonSet gmp-system/collector, pod network.
    Pod("gmp-system/collector", {"app": "managed-prometheus-collector", "app.kubernetes.io/name": "collector"}),
    Pod("default/other", {"app": "other"}),
)


def worker(namespace: str, index: int) -> Pod:
    """A JobSet worker as its controllers label it (the team namespaces select every pod, whatever its labels)."""
    return Pod(
        f"{namespace}/worker-{index}",
        {
            "jobset.sigs.k8s.io/jobset-name": "train",
            "batch.kubernetes.io/job-name": "train-slice-0",
            "kueue.x-k8s.io/queue-name": f"{namespace}-queue",
        },
    )


def template_labels(plan: Plan, kind: str, namespace: str, name: str) -> dict[str, str]:
    """The pod template labels of a Deployment or JobSet the plan declares (a chart's, or the stack's own)."""
    for resource in plan.resources:
        obj = resource["inputs"]
        if (
            obj.get("kind") == kind
            and obj["metadata"]["name"] == name
            and obj["metadata"].get("namespace") == namespace
        ):
            spec = obj["spec"]
            template = (
                spec["replicatedJobs"][0]["template"]["spec"]["template"] if kind == "JobSet" else spec["template"]
            )
            return dict(template["metadata"]["labels"])
    raise KeyError(f"{kind} {namespace}/{name}")


def stack_pods(plan: Plan) -> list[Pod]:
    pods = [
        Pod(
            "kueue-system/kueue-controller-manager",
            template_labels(plan, "Deployment", "kueue-system", "kueue-controller-manager"),
        ),
        Pod(
            "jobset-system/jobset-controller", template_labels(plan, "Deployment", "jobset-system", "jobset-controller")
        ),
        worker("training", 0),
        worker("training", 1),
        worker("research", 0),
        worker("research", 1),
    ]
    if plan.stack == "prod":
        pods += [
            Pod("saxml/sax-admin-server", template_labels(plan, "Deployment", "saxml", "sax-admin-server")),
            Pod("saxml/sax-http", template_labels(plan, "Deployment", "saxml", "sax-http")),
            Pod("saxml/sax-model-server-0", template_labels(plan, "JobSet", "saxml", "sax-model-server-set-0")),
            Pod("saxml/sax-model-server-1", template_labels(plan, "JobSet", "saxml", "sax-model-server-set-1")),
        ]
    return pods


def network_policies(plan: Plan) -> list[dict[str, Any]]:
    return [copy.deepcopy(r["inputs"]) for r in plan.by_type(NETWORK_POLICY)]


def namespaces(plan: Plan) -> set[str]:
    declared = {r["inputs"]["metadata"]["name"] for r in plan.by_type("kubernetes:core/v1:Namespace")}
    return declared | {pod.namespace for pod in GKE_PODS}


def analyzed(plan: Plan, policies: list[dict[str, Any]]) -> Matrix:
    guarded = {p["metadata"]["namespace"] for p in network_policies(plan)}
    return matrix(policies, [*GKE_PODS, *stack_pods(plan)], namespaces(plan), OUTSIDE, guarded=guarded)


@pytest.fixture(scope=shared)
def reachability(plans: PerStack[Plan]) -> PerStack[Matrix]:
    """The analyzer's matrix per stack, one run each."""
    return PerStack(lambda stack: analyzed(plans[stack], network_policies(plans[stack])))


# ---- the matrices, written by hand ---------------------------------------------------------------------------------

DNS = "TCP 53; UDP 53"
HTTPS = "TCP 443"
PLATFORM = {
    "kube-system/kube-dns": DNS,
    # Cloud DNS answers pods on the node's metadata server.
    "metadata": "TCP 53,80,443; UDP 53",
    "metadata-wi": "TCP 443,988",
    "node-local-dns": "TCP 53,443; UDP 53",
    "google-apis": HTTPS,
    # HTTPS goes anywhere outside the cluster: Google APIs have no fixed range to name.
    "internet": HTTPS,
    "control-plane": HTTPS,
    "saxml-client": HTTPS,
    "vpc-host": HTTPS,
}
"""What every pod of the stack's namespaces may reach outside its own namespace."""
KUEUE = "kueue-system/kueue-controller-manager"
JOBSET = "jobset-system/jobset-controller"
OUTSIDE_CALLERS = tuple(OUTSIDE)
"""The webhook ports admit any source: the control plane has no pod-network identity a policy could select (on
private nodes the VPC firewall admits only the control plane's range to them)."""
UNGUARDED_PODS = ("kube-system/kube-dns", "default/other")


def rows(source: str, targets: Mapping[str, str]) -> Matrix:
    return {(source, target): allowed for target, allowed in targets.items()}


def peers(*pods: str) -> Matrix:
    """Each pod reaches each other one on every port."""
    return {(a, b): "all" for a in pods for b in pods if a != b}


def into_controllers() -> Matrix:
    expected: Matrix = {}
    for caller in (*OUTSIDE_CALLERS, *UNGUARDED_PODS):
        expected[(caller, KUEUE)] = "TCP 8082,9443"
        expected[(caller, JOBSET)] = "TCP 9443"
    # Managed Prometheus: the metrics port, besides the webhook ports everyone may call.
    expected[("gmp-system/collector", KUEUE)] = "TCP 8082,8443,9443"
    expected[("gmp-system/collector", JOBSET)] = "TCP 8443,9443"
    return expected


TEAM_PODS = ("training/worker-0", "training/worker-1", "research/worker-0", "research/worker-1")
SAXML_PODS = ("saxml/sax-admin-server", "saxml/sax-http", "saxml/sax-model-server-0", "saxml/sax-model-server-1")

DEV: Matrix = {
    **rows(KUEUE, PLATFORM),
    **rows(JOBSET, PLATFORM),
    **{pair: allowed for pod in TEAM_PODS for pair, allowed in rows(pod, PLATFORM).items()},
    **peers("training/worker-0", "training/worker-1"),
    **peers("research/worker-0", "research/worker-1"),
    **into_controllers(),
}
PROD: Matrix = {
    **DEV,
    **{pair: allowed for pod in SAXML_PODS for pair, allowed in rows(pod, PLATFORM).items()},
    **peers(*SAXML_PODS),
    # Saxml's clients: only the configured range, only the HTTP server's port.
    ("saxml-client", "saxml/sax-http"): "TCP 8888",
}
EXPECTED = {"dev": DEV, "prod": PROD}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_stack_is_reachable_exactly_as_written(reachability: PerStack[Matrix], stack: str) -> None:
    lines = differences(EXPECTED[stack], reachability[stack])
    assert not lines, "\n".join(["the analyzer disagrees with the matrix:", *lines])


def test_the_matrices_name_what_the_issue_asks_for() -> None:
    """The written matrices themselves: a training pod reaches DNS on both protocols, the metadata server, Google
    APIs and its peer; the control plane every webhook port; the collectors every metrics port; no team reaches
    another; Saxml takes clients from the configured range only."""
    for stack in (DEV, PROD):
        assert stack[("training/worker-0", "kube-system/kube-dns")] == "TCP 53; UDP 53"
        assert "UDP 53" in stack[("training/worker-0", "metadata")]
        assert "UDP 53" in stack[("training/worker-0", "node-local-dns")]
        assert stack[("training/worker-0", "metadata-wi")] == "TCP 443,988"
        assert stack[("training/worker-0", "google-apis")] == "TCP 443"
        assert stack[("training/worker-0", "training/worker-1")] == "all"
        assert ("training/worker-0", "research/worker-0") not in stack
        assert stack[("control-plane", KUEUE)] == "TCP 8082,9443"
        assert "8443" in stack[("gmp-system/collector", JOBSET)]
    assert ("internet", "saxml/sax-http") not in PROD and ("vpc-host", "saxml/sax-http") not in PROD


# ---- the analyzer sees a broken policy -------------------------------------------------------------------------------


def test_a_policy_without_the_visibility_port_fails_the_matrix(plans: dict[str, Plan]) -> None:
    """One port less in Kueue's allow-api-server-calls: the API server no longer reaches the visibility API."""
    plan = plans["dev"]
    policies = network_policies(plan)
    (calls,) = [p for p in policies if p["metadata"] == {"name": "allow-api-server-calls", "namespace": "kueue-system"}]
    calls["spec"]["ingress"][0]["ports"] = [{"protocol": "TCP", "port": 9443}]
    lines = differences(DEV, analyzed(plan, policies))
    assert (
        "control-plane -> kueue-system/kueue-controller-manager: expected TCP 8082,9443, analyzer says TCP 9443"
        in lines
    )
