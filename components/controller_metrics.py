"""ControllerMetrics: Google Cloud Managed Service for Prometheus scrapes one chart controller (Kueue or JobSet).

Both controllers serve `/metrics` on HTTPS port 8443 (container port `metrics`) behind Kubernetes authentication
and authorization: a caller needs a token whose account may `get` the non-resource URL `/metrics` (the charts'
`<release>-metrics-reader` ClusterRole). The managed collectors cannot present their own token, so each
controller namespace gets a reader KSA with a token Secret bound to that role, and the collectors (KSA
`gmp-system/collector`) may read that one Secret. The certificate is the controller's self-signed one
(no cert-manager), so the scrape skips verification; the token still travels only over TLS.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.network_policies import GMP_NAMESPACE, METRICS_PORT

READER = "gmp-metrics-reader"
TOKEN_SECRET = f"{READER}-token"
TOKEN_KEY = "token"
TOKEN_TYPE = "kubernetes.io/service-account-token"
SCRAPE_INTERVAL = "30s"
RBAC_GROUP = "rbac.authorization.k8s.io"


def pod_monitoring(pod_labels: dict[str, str]) -> dict[str, Any]:
    """The PodMonitoring's spec: the controller's HTTPS metrics port, with the reader's token."""
    return {
        "selector": {"matchLabels": pod_labels},
        "endpoints": [
            {
                "port": METRICS_PORT,
                "path": "/metrics",
                "scheme": "https",
                "interval": SCRAPE_INTERVAL,
                "tls": {"insecureSkipVerify": True},
                "authorization": {
                    "type": "Bearer",
                    "credentials": {"secret": {"name": TOKEN_SECRET, "key": TOKEN_KEY}},
                },
            }
        ],
    }


class ControllerMetrics(pulumi.ComponentResource):
    """The reader KSA, its token, the RBAC around them and the PodMonitoring of the `release` controller in
    `namespace`. `depends_on`: its chart (the ClusterRole and the pods it selects). The token Secret also waits for
    its ServiceAccount."""

    def __init__(
        self,
        name: str,
        *,
        namespace: str,
        release: str,
        pod_labels: dict[str, str],
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:ControllerMetrics", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on))
        secret_reader = f"{GMP_NAMESPACE}-collector-reads-{TOKEN_SECRET}"
        self.service_account: k8s.core.v1.ServiceAccount = k8s.core.v1.ServiceAccount(
            f"{name}-serviceaccount", metadata={"name": READER, "namespace": namespace}, opts=child
        )
        # Kubernetes' token controller deletes a token Secret whose ServiceAccount does not exist (tokens_controller.go,
        # syncSecret): the Secret is created only once the account is.
        self.token: k8s.core.v1.Secret = k8s.core.v1.Secret(
            f"{name}-secret",
            type=TOKEN_TYPE,
            metadata={
                "name": TOKEN_SECRET,
                "namespace": namespace,
                "annotations": {"kubernetes.io/service-account.name": READER},
            },
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.service_account])),
        )
        # The reader may read the controller's metrics (the chart's `<release>-metrics-reader` ClusterRole) ...
        self.reader_binding: k8s.rbac.v1.ClusterRoleBinding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-clusterrolebinding",
            metadata={"name": f"{release}-{READER}"},
            role_ref={"api_group": RBAC_GROUP, "kind": "ClusterRole", "name": f"{release}-metrics-reader"},
            subjects=[{"kind": "ServiceAccount", "name": READER, "namespace": namespace}],
            opts=child,
        )
        # ... and the managed collectors may read its token, that one Secret only.
        self.secret_role: k8s.rbac.v1.Role = k8s.rbac.v1.Role(
            f"{name}-role",
            metadata={"name": secret_reader, "namespace": namespace},
            rules=[
                {
                    "api_groups": [""],
                    "resources": ["secrets"],
                    "resource_names": [TOKEN_SECRET],
                    "verbs": ["get", "list", "watch"],
                }
            ],
            opts=child,
        )
        self.secret_binding: k8s.rbac.v1.RoleBinding = k8s.rbac.v1.RoleBinding(
            f"{name}-rolebinding",
            metadata={"name": secret_reader, "namespace": namespace},
            role_ref={"api_group": RBAC_GROUP, "kind": "Role", "name": secret_reader},
            subjects=[{"kind": "ServiceAccount", "name": "collector", "namespace": GMP_NAMESPACE}],
            opts=child,
        )
        self.pod_monitoring: k8s.apiextensions.CustomResource = k8s.apiextensions.CustomResource(
            f"{name}-podmonitoring",
            api_version="monitoring.googleapis.com/v1",
            kind="PodMonitoring",
            metadata={"name": f"{release}-controller", "namespace": namespace},
            spec=pod_monitoring(pod_labels),
            opts=child,
        )
        self.register_outputs({})
