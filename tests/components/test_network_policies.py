"""NetworkPolicies of the chart namespaces, checked against what the charts really serve and GKE's docs.

The API server reaches a controller through the Services its webhook configurations and APIServices name;
NetworkPolicies see the pod port behind each Service. The expected ports are read from the rendered Kueue
0.19.2 and JobSet 0.12.0 charts (Services, Deployments), and written out: Kueue 9443 (webhooks) and 8082
(visibility API), JobSet 9443 only. The metadata server addresses are those of GKE's Workload Identity page
(169.254.169.252/32 on 988; with Dataplane V2 also 169.254.169.254/32 on 80).
"""

from __future__ import annotations

from typing import Any

import pytest

from offline.engine import Plan
from tests.fixtures import stack_plan

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


@pytest.fixture(scope="module")
def plan() -> Plan:
    return stack_plan("dev")


def policies(plan: Plan, namespace: str) -> dict[str, dict[str, Any]]:
    return {
        r["inputs"]["metadata"]["name"]: r["inputs"]["spec"]
        for r in plan.by_type(NETWORK_POLICY)
        if r["inputs"]["metadata"]["namespace"] == namespace and not r.get("rendered")
    }


def admitted_ports(plan: Plan, namespace: str) -> set[int]:
    spec = policies(plan, namespace)["allow-api-server-calls"]
    return {port["port"] for rule in spec["ingress"] for port in rule["ports"]}


def called_pod_ports(plan: Plan, namespace: str) -> set[int]:
    """Pod ports behind the Services the chart's webhook configurations and APIServices point the API server at."""
    objects = [r["inputs"] for r in plan.resources if r.get("rendered")]
    called = set()
    for obj in objects:
        if obj["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            called |= {(w["clientConfig"]["service"]["namespace"], w["clientConfig"]["service"]["name"])
                       for w in obj["webhooks"]}  # fmt: skip
        elif obj["kind"] == "APIService" and obj["spec"].get("service"):
            called.add((obj["spec"]["service"]["namespace"], obj["spec"]["service"]["name"]))
    named_ports = {
        port["name"]: port["containerPort"]
        for obj in objects
        if obj["kind"] == "Deployment" and obj["metadata"]["namespace"] == namespace
        for container in obj["spec"]["template"]["spec"]["containers"]
        for port in container.get("ports", [])
    }
    ports = set()
    for obj in objects:
        key = (obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if obj["kind"] == "Service" and key in called and key[0] == namespace:
            for port in obj["spec"]["ports"]:
                target = port.get("targetPort", port["port"])
                ports.add(named_ports[target] if isinstance(target, str) else target)
    return ports


@pytest.mark.parametrize(("namespace", "expected"), [("kueue-system", {9443, 8082}), ("jobset-system", {9443})])
def test_controllers_admit_exactly_the_ports_the_api_server_calls(
    plan: Plan, namespace: str, expected: set[int]
) -> None:
    assert called_pod_ports(plan, namespace) == expected
    assert admitted_ports(plan, namespace) == expected


@pytest.mark.parametrize("namespace", ["kueue-system", "jobset-system"])
def test_controllers_reach_dns_the_metadata_server_and_https_only(plan: Plan, namespace: str) -> None:
    egress = policies(plan, namespace)["allow-platform-egress"]["egress"]
    blocks = {(peer["ipBlock"]["cidr"], port["port"]) for rule in egress for peer in rule["to"] if "ipBlock" in peer
              for port in rule["ports"]}  # fmt: skip
    assert blocks == {
        ("169.254.169.252/32", 988),
        ("169.254.169.254/32", 80),
        ("0.0.0.0/0", 443),
        # DNS where Cloud DNS (the node's metadata server) and NodeLocal DNSCache answer it
        ("169.254.169.254/32", 53),
        ("169.254.20.10/32", 53),
    }
    assert policies(plan, namespace)["default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
