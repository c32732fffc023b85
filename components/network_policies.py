"""NetworkPolicies for every namespace the stack creates: deny by default, then allow what the pods need.

Dataplane V2 (the cluster's `datapathProvider`) enforces them. Each namespace gets a default deny of all
ingress and egress, and the egress every pod needs: cluster DNS, the GKE metadata server (Workload Identity
tokens) and HTTPS to Google APIs. Training namespaces allow pod-to-pod traffic inside the namespace (the
workers of a JobSet or Indexed Job talk to each other); Saxml allows its own pods to reach each other (admin,
model servers, ICI) and only the configured client ranges to reach the HTTP server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes_object import KubernetesObject

API_VERSION = "networking.k8s.io/v1"
# GKE metadata server (Workload Identity tokens), as GKE's Workload Identity page asks of a strict egress
# policy: 169.254.169.252/32 on 988 always, and on Dataplane V2 also 169.254.169.254/32 on 80.
METADATA_EGRESS = (("169.254.169.254/32", 80), ("169.254.169.252/32", 988))
HTTPS = 443
# Cluster DNS answers where the cluster's DNS provider runs: kube-dns's pods (Standard's default), else on the node,
# at addresses no pod selector matches: Cloud DNS (the only provider of Autopilot) through the node's metadata
# server, NodeLocal DNSCache (always on in Autopilot) on its link-local address.
NODE_DNS = ("169.254.169.254/32", "169.254.20.10/32")


def _policy(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def default_deny(namespace: str) -> dict[str, Any]:
    """Every pod of the namespace: no ingress, no egress, unless another policy allows it."""
    return _policy("default-deny", namespace, {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})


def allow_platform_egress(namespace: str) -> dict[str, Any]:
    """DNS (kube-dns or the node's resolvers), the metadata server, and HTTPS anywhere (Google APIs have no fixed
    ranges here)."""
    dns_ports = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    kube_dns = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    node_dns = [{"ipBlock": {"cidr": cidr}} for cidr in NODE_DNS]
    egress: list[dict[str, Any]] = [{"to": [kube_dns, *node_dns], "ports": dns_ports}]
    egress += [
        {"to": [{"ipBlock": {"cidr": cidr}}], "ports": [{"protocol": "TCP", "port": port}]}
        for cidr, port in METADATA_EGRESS
    ]
    egress.append({"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": HTTPS}]})
    return _policy("allow-platform-egress", namespace, {"podSelector": {}, "policyTypes": ["Egress"], "egress": egress})


def allow_same_namespace(namespace: str, pod_labels: dict[str, str] | None = None) -> dict[str, Any]:
    """Pods (matching `pod_labels`, else all) reach each other on any port: workers of one job, Saxml servers."""
    peers = [{"podSelector": {"matchLabels": pod_labels} if pod_labels else {}}]
    return _policy(
        "allow-same-namespace",
        namespace,
        {
            "podSelector": {"matchLabels": pod_labels} if pod_labels else {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": peers}],
            "egress": [{"to": peers}],
        },
    )


def allow_clients(
    namespace: str, name: str, pod_labels: dict[str, str], port: int, ranges: Sequence[str]
) -> dict[str, Any]:
    """Ingress to `pod_labels` on `port` from the listed client ranges only."""
    return _policy(
        name,
        namespace,
        {
            "podSelector": {"matchLabels": pod_labels},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [{"ipBlock": {"cidr": c}} for c in ranges], "ports": [{"protocol": "TCP", "port": port}]}
            ],
        },
    )


WEBHOOK_PORT = 9443
KUEUE_VISIBILITY_PORT = 8082
KUEUE_API_SERVER_PORTS = (WEBHOOK_PORT, KUEUE_VISIBILITY_PORT)
"""Pod ports the API server calls in Kueue's controller: the webhook Service (443 -> 9443) and the visibility
APIService's Service (443 -> 8082), as the Kueue 0.19.2 chart renders them."""
JOBSET_API_SERVER_PORTS = (WEBHOOK_PORT,)
"""JobSet 0.12.0's only Service the API server calls: its webhook (443 -> the `webhook` port, 9443)."""


def controller_policies(namespace: str, ports: Sequence[int]) -> list[dict[str, Any]]:
    """A chart's controller namespace: deny, then the API server's calls in on `ports` (pod ports, after the
    Service's translation) and the controller's calls out (HTTPS).

    The control plane has no pod-network address to select, so these ports admit any source."""
    webhooks = _policy(
        "allow-api-server-calls",
        namespace,
        {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"protocol": "TCP", "port": port} for port in ports]}],
        },
    )
    return [default_deny(namespace), allow_platform_egress(namespace), webhooks, allow_metrics_scrape(namespace)]


METRICS_PORT = 8443
"""The controllers' HTTPS metrics port (Kueue and JobSet charts: container port `metrics`)."""
GMP_NAMESPACE = "gmp-system"
"""Where GKE runs the collectors of Google Cloud Managed Service for Prometheus."""


def allow_metrics_scrape(namespace: str) -> dict[str, Any]:
    """The managed Prometheus collectors reach the controllers' metrics port, nothing else."""
    collectors = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": GMP_NAMESPACE}}}
    return _policy(
        "allow-metrics-scrape",
        namespace,
        {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [collectors], "ports": [{"protocol": "TCP", "port": METRICS_PORT}]}],
        },
    )


def training_policies(namespace: str) -> list[dict[str, Any]]:
    return [default_deny(namespace), allow_platform_egress(namespace), allow_same_namespace(namespace)]


class NamespacePolicies(pulumi.ComponentResource):
    """The NetworkPolicy objects of one namespace; `namespace` waits for the namespace resource."""

    def __init__(
        self,
        name: str,
        *,
        policies: list[dict[str, Any]],
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:NamespacePolicies", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on))
        self.policies: list[KubernetesObject] = [
            KubernetesObject(f"{name}-{p['metadata']['name']}", p, opts=child) for p in policies
        ]
        self.register_outputs({})
