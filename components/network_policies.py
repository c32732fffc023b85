"""NetworkPolicies for every namespace the stack creates: deny by default, then allow what the pods need.

Dataplane V2 (the cluster's `datapathProvider`) enforces them. Each namespace gets a default deny of all
ingress and egress, and the egress every pod needs: cluster DNS, the GKE metadata server (Workload Identity
tokens) and HTTPS to Google APIs. Training namespaces allow pod-to-pod traffic inside the namespace (the
workers of a JobSet or Indexed Job talk to each other); Saxml allows its own pods to reach each other (admin,
model servers, ICI) and only the configured client ranges to reach the HTTP server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

# GKE metadata server (Workload Identity tokens), as GKE's Workload Identity page asks of a strict egress
# policy: 169.254.169.252/32 on 988 always, and on Dataplane V2 also 169.254.169.254/32 on 80.
METADATA_EGRESS = (("169.254.169.254/32", 80), ("169.254.169.252/32", 988))
HTTPS = 443
# Cluster DNS answers where the cluster's DNS provider runs: kube-dns's pods (Standard's default), else on the node,
# at addresses no pod selector matches: Cloud DNS (the only provider of Autopilot) through the node's metadata
# server, NodeLocal DNSCache (always on in Autopilot) on its link-local address.
NODE_DNS = ("169.254.169.254/32", "169.254.20.10/32")


@dataclass(frozen=True)
class Policy:
    """One NetworkPolicy: its name, its namespace and its spec."""

    name: str
    namespace: str
    spec: k8s.networking.v1.NetworkPolicySpecArgsDict


def _selector(labels: dict[str, str] | None) -> k8s.meta.v1.LabelSelectorArgsDict:
    """Pods carrying `labels`; every pod of the namespace without."""
    return {"match_labels": labels} if labels else {}


def _namespace_named(name: str) -> k8s.meta.v1.LabelSelectorArgsDict:
    return {"match_labels": {"kubernetes.io/metadata.name": name}}


def default_deny(namespace: str) -> Policy:
    """Every pod of the namespace: no ingress, no egress, unless another policy allows it."""
    return Policy("default-deny", namespace, {"pod_selector": {}, "policy_types": ["Ingress", "Egress"]})


def allow_platform_egress(namespace: str) -> Policy:
    """DNS (kube-dns or the node's resolvers), the metadata server, and HTTPS anywhere (Google APIs have no fixed
    ranges here)."""
    kube_dns: k8s.networking.v1.NetworkPolicyPeerArgsDict = {
        "namespace_selector": _namespace_named("kube-system"),
        "pod_selector": {"match_labels": {"k8s-app": "kube-dns"}},
    }
    node_dns: list[k8s.networking.v1.NetworkPolicyPeerArgsDict] = [{"ip_block": {"cidr": cidr}} for cidr in NODE_DNS]
    egress: list[k8s.networking.v1.NetworkPolicyEgressRuleArgsDict] = [
        {"to": [kube_dns, *node_dns], "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    ]
    egress += [
        {"to": [{"ip_block": {"cidr": cidr}}], "ports": [{"protocol": "TCP", "port": port}]}
        for cidr, port in METADATA_EGRESS
    ]
    egress.append({"to": [{"ip_block": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": HTTPS}]})
    return Policy(
        "allow-platform-egress", namespace, {"pod_selector": {}, "policy_types": ["Egress"], "egress": egress}
    )


def allow_same_namespace(namespace: str, pod_labels: dict[str, str] | None = None) -> Policy:
    """Pods (matching `pod_labels`, else all) reach each other on any port: workers of one job, Saxml servers."""
    peers: list[k8s.networking.v1.NetworkPolicyPeerArgsDict] = [{"pod_selector": _selector(pod_labels)}]
    return Policy(
        "allow-same-namespace",
        namespace,
        {
            "pod_selector": _selector(pod_labels),
            "policy_types": ["Ingress", "Egress"],
            "ingress": [{"from_": peers}],
            "egress": [{"to": peers}],
        },
    )


def allow_clients(namespace: str, name: str, pod_labels: dict[str, str], port: int, ranges: Sequence[str]) -> Policy:
    """Ingress to `pod_labels` on `port` from the listed client ranges only."""
    return Policy(
        name,
        namespace,
        {
            "pod_selector": {"match_labels": pod_labels},
            "policy_types": ["Ingress"],
            "ingress": [
                {"from_": [{"ip_block": {"cidr": c}} for c in ranges], "ports": [{"protocol": "TCP", "port": port}]}
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
LWS_API_SERVER_PORTS = (WEBHOOK_PORT,)
"""LeaderWorkerSet v0.10.0's only Service the API server calls: `lws-webhook-service` (443 -> 9443, the
controller's `webhook-server` port) behind its mutating and validating webhooks (LeaderWorkerSets and their pods)
and the CRD's conversion webhook. With private nodes GKE's control-plane-to-node firewall must admit tcp:9443."""


def controller_policies(namespace: str, ports: Sequence[int]) -> list[Policy]:
    """A chart's controller namespace: deny, then the API server's calls in on `ports` (pod ports, after the
    Service's translation) and the controller's calls out (HTTPS).

    The control plane has no pod-network address to select, so these ports admit any source."""
    webhooks = Policy(
        "allow-api-server-calls",
        namespace,
        {
            "pod_selector": {},
            "policy_types": ["Ingress"],
            "ingress": [{"ports": [{"protocol": "TCP", "port": port} for port in ports]}],
        },
    )
    return [default_deny(namespace), allow_platform_egress(namespace), webhooks, allow_metrics_scrape(namespace)]


METRICS_PORT = 8443
"""The controllers' HTTPS metrics port (Kueue and JobSet charts: container port `metrics`)."""
GMP_NAMESPACE = "gmp-system"
"""Where GKE runs the collectors of Google Cloud Managed Service for Prometheus."""


def allow_metrics_scrape(namespace: str) -> Policy:
    """The managed Prometheus collectors reach the controllers' metrics port, nothing else."""
    return Policy(
        "allow-metrics-scrape",
        namespace,
        {
            "pod_selector": {},
            "policy_types": ["Ingress"],
            "ingress": [
                {
                    "from_": [{"namespace_selector": _namespace_named(GMP_NAMESPACE)}],
                    "ports": [{"protocol": "TCP", "port": METRICS_PORT}],
                }
            ],
        },
    )


def training_policies(namespace: str) -> list[Policy]:
    return [default_deny(namespace), allow_platform_egress(namespace), allow_same_namespace(namespace)]


def network_policy(
    name: str, policy: Policy, opts: pulumi.ResourceOptions, namespace: pulumi.Input[str] | None = None
) -> k8s.networking.v1.NetworkPolicy:
    """`policy` as the resource `<name>-<policy name>`; `namespace` (an output of the namespace resource, so the
    policy waits for it) instead of the policy's own."""
    return k8s.networking.v1.NetworkPolicy(
        f"{name}-{policy.name}",
        metadata={"name": policy.name, "namespace": policy.namespace if namespace is None else namespace},
        spec=policy.spec,
        opts=opts,
    )


class NamespacePolicies(pulumi.ComponentResource):
    """The NetworkPolicy objects of one namespace; `depends_on` the namespace resource."""

    def __init__(
        self,
        name: str,
        *,
        policies: list[Policy],
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:NamespacePolicies", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on))
        self.policies: list[k8s.networking.v1.NetworkPolicy] = [network_policy(name, p, child) for p in policies]
        self.register_outputs({})
