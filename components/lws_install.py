"""LwsInstall: the LeaderWorkerSet Helm chart from its OCI registry, pinned, in `lws-system`.

LeaderWorkerSet runs the vLLM servers of multi-host slices: one group of pods per slice, created, scheduled and
restarted together. The chart must live in `lws-system`: its CRD names the conversion webhook Service there.
Its controller rotates its own webhook certificate (no cert-manager) and the chart renders the certificate's
Secret without data, so a later apply never contends with the rotator for it. Nothing that needs an API GKE
lacks is turned on (no Prometheus operator ServiceMonitor); the DisaggregatedSet webhook stays off.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.chart_install import ChartInstall
from components.config.base import LWS_NAMESPACE
from components.config.stack import StackConfig
from components.network_policies import WEBHOOK_PORT
from components.pod_security import CONTROLLER_POD_SECURITY

LWS_CHART = "oci://registry.k8s.io/lws/charts/lws"
CONTROLLER_LABELS = {
    "app.kubernetes.io/name": "lws",
    "app.kubernetes.io/instance": "lws",
    "control-plane": "controller-manager",
}
"""The chart's selector labels of the controller pods (release `lws`)."""
CONTROLLER = "lws-controller-manager"
"""The chart's controller Deployment (release `lws`) and its container `manager`."""


def ready_when_the_webhooks_serve(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """The controller is ready only once its webhook server listens, so that what waits for the chart (the
    provider awaits the Deployment's ready replicas) finds the webhooks serving.

    LWS v0.10.0's own readiness says nothing about them: `/readyz` is a plain ping (cmd/main.go
    setupHealthzAndReadyzCheck), while the webhooks are registered only after its cert rotator has written the
    certificate, seen it mounted and injected the CA into both webhook configurations (setupControllers waits on
    `certsReady`, which open-policy-agent/cert-controller v0.16.0 closes in ensureReady). controller-runtime
    v0.24.1 starts the webhook server, and so opens port 9443, only when the first webhook is registered
    (manager GetWebhookServer adds it then). A LeaderWorkerSet created earlier is refused by the fail-closed
    webhook (`failed calling webhook`), and pulumi-kubernetes retries a create only on NotFound/NoMatch."""
    metadata = args.props.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if args.type_ != "kubernetes:apps/v1:Deployment" or name != CONTROLLER:
        return None
    props: dict[str, Any] = copy.deepcopy(dict(args.props))
    for container in props["spec"]["template"]["spec"]["containers"]:
        if container.get("name") == "manager":
            container["readinessProbe"] = {
                "tcpSocket": {"port": WEBHOOK_PORT},
                "initialDelaySeconds": 5,
                "periodSeconds": 10,
            }
    return pulumi.ResourceTransformResult(props=props, opts=args.opts)


def chart_values(config: StackConfig) -> dict[str, Any]:
    """The chart's values: a pulled-every-time image (by digest when configured) running as its image's non-root
    user (`USER 65532:65532` in LWS's Dockerfile) on the system pool, requests and limits sized like the other
    controllers'. The chart has no value for Deployment annotations: its scan exceptions live in
    security/chart_exceptions.yaml."""
    assert config.serving is not None, "only installed for tpu-stack:serving"
    image: dict[str, Any] = {"pullPolicy": "Always"}
    if config.serving.lws_image_tag:
        image["tag"] = config.serving.lws_image_tag
    return {
        "enableCertManager": False,
        "enablePrometheus": False,
        "enableDisaggregatedSet": False,
        "image": {"manager": image},
        "resources": config.controller_resources,
        "nodeSelector": config.system_node_selector,
        "podSecurityContext": CONTROLLER_POD_SECURITY,
    }


class LwsInstall(ChartInstall):
    """Namespace `lws-system` and the LeaderWorkerSet chart; LeaderWorkerSets depend on `chart` (CRD, webhooks)."""

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        assert config.serving is not None, "only installed for tpu-stack:serving"
        super().__init__(
            "tpu-stack:index:LwsInstall",
            name,
            release="lws",
            chart=LWS_CHART,
            version=config.serving.lws_version,
            namespace=LWS_NAMESPACE,
            values=chart_values(config),
            provider=provider,
            depends_on=depends_on,
            transforms=[ready_when_the_webhooks_serve],
            opts=opts,
        )
