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

from components.kubernetes_object import KubernetesObject
from components.network_policies import GMP_NAMESPACE, METRICS_PORT

READER = "gmp-metrics-reader"
TOKEN_SECRET = f"{READER}-token"
TOKEN_KEY = "token"
TOKEN_TYPE = "kubernetes.io/service-account-token"
SCRAPE_INTERVAL = "30s"
RBAC = "rbac.authorization.k8s.io/v1"


def scrape_objects(namespace: str, release: str, pod_labels: dict[str, str]) -> list[dict[str, Any]]:
    """The reader KSA, its token, the RBAC around them and the PodMonitoring of the `release` controller."""
    secret_reader = f"{GMP_NAMESPACE}-collector-reads-{TOKEN_SECRET}"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": READER, "namespace": namespace}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": TOKEN_TYPE,
            "metadata": {
                "name": TOKEN_SECRET,
                "namespace": namespace,
                "annotations": {"kubernetes.io/service-account.name": READER},
            },
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{release}-{READER}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{release}-metrics-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": READER, "namespace": namespace}],
        },
        {
            "apiVersion": RBAC,
            "kind": "Role",
            "metadata": {"name": secret_reader, "namespace": namespace},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": [TOKEN_SECRET],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        },
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": {"name": secret_reader, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": secret_reader},
            "subjects": [{"kind": "ServiceAccount", "name": "collector", "namespace": GMP_NAMESPACE}],
        },
        {
            "apiVersion": "monitoring.googleapis.com/v1",
            "kind": "PodMonitoring",
            "metadata": {"name": f"{release}-controller", "namespace": namespace},
            "spec": {
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
            },
        },
    ]


class ControllerMetrics(pulumi.ComponentResource):
    """The scrape objects of one controller; `depends_on`: its chart (the ClusterRole and the pods it selects).
    The token Secret also waits for its ServiceAccount."""

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
        objects = scrape_objects(namespace, release, pod_labels)
        (account,) = [obj for obj in objects if obj["kind"] == "ServiceAccount"]
        (token,) = [obj for obj in objects if obj.get("type") == TOKEN_TYPE]
        self.service_account: KubernetesObject = KubernetesObject(f"{name}-serviceaccount", account, opts=child)
        # Kubernetes' token controller deletes a token Secret whose ServiceAccount does not exist (tokens_controller.go,
        # syncSecret): the Secret is created only once the account is.
        after_account = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.service_account]))
        self.objects: list[KubernetesObject] = [self.service_account] + [
            KubernetesObject(f"{name}-{obj['kind'].lower()}", obj, opts=after_account if obj is token else child)
            for obj in objects
            if obj is not account
        ]
        self.register_outputs({})
