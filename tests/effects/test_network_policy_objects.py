"""The NetworkPolicies of each kind of namespace, compared whole to objects written by hand: every field of a
NetworkPolicy decides who gets in or out (a selector, a port, a policy type left out changes the answer). Every
namespace of dev and prod; of the llm stack, vLLM's serving namespace and lws-system."""

from __future__ import annotations

from typing import Any

import pytest

from offline.engine import Plan
from tests.effects.conftest import shared
from tests.fixtures import stack_plan

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
API = "networking.k8s.io/v1"


def deny(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny", "namespace": namespace},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }


def platform_egress(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-platform-egress", "namespace": namespace},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [
                        {
                            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                        },
                        {"ipBlock": {"cidr": "169.254.169.254/32"}},
                        {"ipBlock": {"cidr": "169.254.20.10/32"}},
                    ],
                    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                },
                {"to": [{"ipBlock": {"cidr": "169.254.169.254/32"}}], "ports": [{"protocol": "TCP", "port": 80}]},
                {"to": [{"ipBlock": {"cidr": "169.254.169.252/32"}}], "ports": [{"protocol": "TCP", "port": 988}]},
                {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]},
            ],
        },
    }


def same_namespace(namespace: str, selector: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-same-namespace", "namespace": namespace},
        "spec": {
            "podSelector": selector,
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": selector}]}],
            "egress": [{"to": [{"podSelector": selector}]}],
        },
    }


def api_server_calls(namespace: str, ports: list[int]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-api-server-calls", "namespace": namespace},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"protocol": "TCP", "port": port} for port in ports]}],
        },
    }


def metrics_scrape(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-metrics-scrape", "namespace": namespace},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gmp-system"}}}],
                    "ports": [{"protocol": "TCP", "port": 8443}],
                }
            ],
        },
    }


SAXML = {"app.kubernetes.io/part-of": "saxml"}
SAXML_CLIENTS = {
    "apiVersion": API,
    "kind": "NetworkPolicy",
    "metadata": {"name": "allow-http-clients", "namespace": "saxml"},
    "spec": {
        "podSelector": {"matchLabels": {"app": "sax-http"}},
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"ipBlock": {"cidr": "10.20.0.0/24"}}], "ports": [{"protocol": "TCP", "port": 8888}]}],
    },
}
EXPECTED = {
    "dev": {
        "kueue-system": [
            deny("kueue-system"),
            platform_egress("kueue-system"),
            api_server_calls("kueue-system", [9443, 8082]),
            metrics_scrape("kueue-system"),
        ],
        "jobset-system": [
            deny("jobset-system"),
            platform_egress("jobset-system"),
            api_server_calls("jobset-system", [9443]),
            metrics_scrape("jobset-system"),
        ],
        "research": [deny("research"), platform_egress("research"), same_namespace("research", {})],
        "training": [deny("training"), platform_egress("training"), same_namespace("training", {})],
    },
}
EXPECTED["prod"] = {
    **EXPECTED["dev"],
    "saxml": [deny("saxml"), platform_egress("saxml"), same_namespace("saxml", {"matchLabels": SAXML}), SAXML_CLIENTS],
}


def by_namespace(plan: Plan) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for resource in plan.by_type(NETWORK_POLICY):
        found.setdefault(resource["inputs"]["metadata"]["namespace"], []).append(resource["inputs"])
    return {ns: sorted(policies, key=lambda p: p["metadata"]["name"]) for ns, policies in found.items()}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_namespace_gets_exactly_its_policies(plans: dict[str, Plan], stack: str) -> None:
    expected = {ns: sorted(p, key=lambda p: p["metadata"]["name"]) for ns, p in EXPECTED[stack].items()}
    assert by_namespace(plans[stack]) == expected


def vllm(server: str, component: str | None = None) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": server}
    return {"matchLabels": labels | ({"app.kubernetes.io/component": component} if component else {})}


def llm_clients(server: str) -> dict[str, Any]:
    """Clients reach a server's API pods only (not an LWS group's Ray workers), from the client range, on 8000."""
    return {
        "apiVersion": API,
        "kind": "NetworkPolicy",
        "metadata": {"name": f"allow-{server}-clients", "namespace": "llm"},
        "spec": {
            "podSelector": vllm(server, "api-server"),
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [{"ipBlock": {"cidr": "10.20.0.0/24"}}], "ports": [{"protocol": "TCP", "port": 8000}]}
            ],
        },
    }


def llm_group(server: str) -> dict[str, Any]:
    """A multi-host server's pods (leader and workers) reach each other on every port."""
    return {
        "apiVersion": API,
        "kind": "NetworkPolicy",
        "metadata": {"name": f"allow-{server}-group", "namespace": "llm"},
        "spec": {
            "podSelector": vllm(server),
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": vllm(server)}]}],
            "egress": [{"to": [{"podSelector": vllm(server)}]}],
        },
    }


LLM = {
    # llama-31-70b serves from one host; llama-33-70b is a LeaderWorkerSet group.
    "llm": [
        deny("llm"),
        platform_egress("llm"),
        llm_clients("llama-31-70b"),
        llm_clients("llama-33-70b"),
        llm_group("llama-33-70b"),
    ],
    "lws-system": [
        deny("lws-system"),
        platform_egress("lws-system"),
        api_server_calls("lws-system", [9443]),
        metrics_scrape("lws-system"),
    ],
}


@pytest.fixture(scope=shared)
def llm_plan() -> Plan:
    return stack_plan("llm")


def test_the_llm_stacks_serving_and_lws_namespaces_get_exactly_their_policies(llm_plan: Plan) -> None:
    found = by_namespace(llm_plan)
    for namespace, policies in LLM.items():
        assert found[namespace] == sorted(policies, key=lambda p: p["metadata"]["name"]), namespace


NAMESPACES = {
    "kueue-system": "KueueInstall$kubernetes:core/v1:Namespace::kueue-namespace",
    "jobset-system": "JobSetInstall$kubernetes:core/v1:Namespace::jobset-namespace",
    "training": "KueueQueues$kubernetes:core/v1:Namespace::queues-namespace-training",
    "research": "KueueQueues$kubernetes:core/v1:Namespace::queues-namespace-research",
}
COMPONENTS = {
    "kueue-system": "kueue-policies",
    "jobset-system": "jobset-policies",
    "training": "training-policies",
    "research": "research-policies",
}


def test_prods_policies_go_to_the_cluster_after_their_namespace(plans: dict[str, Plan]) -> None:
    """Through the cluster's provider (another would write them to another cluster), protected with prod, each
    after its namespace (a policy in a namespace that does not exist yet is refused)."""
    prefix = "urn:pulumi:prod::tpu-stack::"
    provider = f"{prefix}tpu-stack:index:GkeCluster$pulumi:providers:kubernetes::tpu-prod-k8s"
    for resource in plans["prod"].by_type(NETWORK_POLICY):
        namespace = resource["inputs"]["metadata"]["namespace"]
        if namespace == "saxml":
            continue  # Saxml's component writes its own (components/saxml.py)
        assert resource["provider"] == provider and resource["protect"] is True, resource["name"]
        assert (
            resource["parent"]
            == f"{prefix}pulumi:pulumi:Stack$tpu-stack:index:NamespacePolicies::{COMPONENTS[namespace]}"
        )
        assert resource["dependencies"] == [f"{prefix}tpu-stack:index:{NAMESPACES[namespace]}"], resource["name"]
        assert resource["name"] == f"{COMPONENTS[namespace]}-{resource['inputs']['metadata']['name']}"
