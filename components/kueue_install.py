"""KueueInstall: the Kueue Helm chart from its OCI registry, pinned, in `kueue-system`, configured for TPU jobs.

The controller config is written whole (the chart takes it as one YAML string): Kueue manages only jobs that
carry `kueue.x-k8s.io/queue-name`, integrates just the two job kinds the stack runs (batch Jobs and JobSets),
and ignores CPU/memory/ephemeral storage when the queues do not cover them, so a TPU pod that also requests
CPU stays admissible. How long Kueue waits for an admitted workload's pods, and what it does after, is decided
from the kinds of capacity the cluster has (components/config/controllers.py), not left to Kueue 0.19's defaults.
Nothing that needs an API GKE lacks is turned on (no cert-manager, no Prometheus
operator ServiceMonitor, no KueueViz ingress).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.chart_install import ChartInstall
from components.config.base import KUEUE_NAMESPACE
from components.config.queues import covered_resources
from components.config.stack import StackConfig
from components.pod_security import CONTROLLER_POD_SECURITY

KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
KUEUE_CONFIG_API = "config.kueue.x-k8s.io/v1beta2"
FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset")
HOST_RESOURCES = ("cpu", "memory", "ephemeral-storage")
MULTIKUEUE_SETTINGS = {
    "gcInterval": "1m0s",
    "origin": "multikueue",
    "workerLostTimeout": "15m0s",
    "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
}
"""A MultiKueue manager's settings, Kueue v0.19.2's defaults stated (apis/config/v1beta2/defaults.go): every worker
gets a copy at once and the first to admit keeps it, orphaned copies are collected every minute, and a workload on a
worker unreachable for 15 minutes is dispatched again."""
CONTROLLER_LABELS = {
    "app.kubernetes.io/name": "kueue",
    "app.kubernetes.io/instance": "kueue",
    "control-plane": "controller-manager",
}
"""The chart's selector labels of the controller pods (release `kueue`)."""


def controller_config(config: StackConfig) -> dict[str, Any]:
    """Kueue's Configuration object (v1beta2), as the controller reads it from its ConfigMap."""
    covered = set(covered_resources(config.queues))
    return {
        "apiVersion": KUEUE_CONFIG_API,
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        # Quota and usage per ClusterQueue, flavor and resource: the dashboard's quota charts.
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": list(FRAMEWORKS)},
        # A manager's admissions mirror its workers': it waits as long as their capacity needs (config.pods_ready).
        "waitForPodsReady": config.pods_ready.kueue(),
        "resources": {"excludeResourcePrefixes": [r for r in HOST_RESOURCES if r not in covered]},
    } | ({"multiKueue": dict(MULTIKUEUE_SETTINGS)} if config.is_manager else {})


def chart_values(config: StackConfig) -> dict[str, Any]:
    """The chart's values. The controller's image is pulled every time (by digest when configured) and runs as
    its image's non-root user; the chart has no value for Deployment annotations, so its scan exceptions live
    in security/chart_exceptions.yaml."""
    image: dict[str, Any] = {"pullPolicy": "Always"}
    if config.charts.kueue_image_tag:
        image["tag"] = config.charts.kueue_image_tag
    return {
        "enableCertManager": False,
        "enablePrometheus": False,
        "enableVisibilityAPF": False,
        "enableKueueViz": False,
        "controllerManager": {
            "manager": {
                "image": image,
                "resources": config.controller_resources,
                "podSecurityContext": CONTROLLER_POD_SECURITY,
            },
            "nodeSelector": config.system_node_selector,
        },
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(controller_config(config), sort_keys=False)},
    }


class KueueInstall(ChartInstall):
    """Namespace `kueue-system` and the Kueue chart; Kueue objects depend on `chart` (its webhook must serve).

    `depends_on`: the JobSet install, so the JobSet integration finds its CRD when Kueue starts.
    """

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            "tpu-stack:index:KueueInstall",
            name,
            release="kueue",
            chart=KUEUE_CHART,
            version=config.charts.kueue_version,
            namespace=KUEUE_NAMESPACE,
            values=chart_values(config),
            provider=provider,
            depends_on=depends_on,
            opts=opts,
        )
