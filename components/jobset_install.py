"""JobSetInstall: the JobSet Helm chart from its OCI registry, pinned, in `jobset-system`.

JobSet runs multislice training (one child Job per slice) and Saxml's model servers. The chart's Prometheus
ServiceMonitor is turned off: its CRD comes from the Prometheus operator, which GKE does not have.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.chart_install import ChartInstall
from components.config.base import JOBSET_NAMESPACE
from components.config.stack import StackConfig
from components.pod_security import (
    CONTROLLER_POD_SECURITY,
    CONTROLLER_TOKEN_EXCEPTION,
    chart_tag_exception,
    skip_annotations,
)

JOBSET_CHART = "oci://registry.k8s.io/jobset/charts/jobset"
CONTROLLER_LABELS = {
    "app.kubernetes.io/name": "jobset",
    "app.kubernetes.io/instance": "jobset",
    "app.kubernetes.io/component": "controller",
}
"""The chart's selector labels of the controller pods (release `jobset`)."""
IMMUTABLE_FIELDS = (
    # jobset v0.12.0 pkg/webhooks/jobset_webhook.go, ValidateUpdate (parallelism and completions only with the
    # alpha ElasticJobSet gate, off by default; pod template labels, annotations, node selector, tolerations and
    # scheduling gates only while the JobSet is suspended, which the stack's JobSets are not).
    "spec.replicatedJobs",
    "spec.managedBy",
    # CEL `self == oldSelf` in the JobSet CRD (vendor/crds/jobset/jobset.x-k8s.io_jobsets.yaml).
    "spec.failurePolicy",
    "spec.successPolicy",
    "spec.startupPolicy",
    "spec.network",
    "spec.volumeClaimPolicies",
)
"""JobSet spec fields an existing JobSet cannot change. A JobSet the stack declares names them in
`replace_on_changes` with `delete_before_replace`: its name stays, so a new JobSet beside the old one would be
refused (AlreadyExists), and the kubernetes provider asks for delete-before-replace only for the replacements it
decides itself (metadata.name, metadata.namespace), not for the engine's replaceOnChanges."""


WEBHOOK_CERT_SECRET = "jobset-webhook-server-cert"
"""The chart's Secret for the webhook serving certificate (release `jobset`), filled by JobSet's cert rotator."""


def leave_cert_data_to_the_controller(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """The 0.12.0 chart renders the webhook cert Secret with four empty `data` keys. JobSet's cert rotator then
    writes them (an update: it becomes their field manager), and the next server-side apply of the Secret conflicts
    on each key (jobset issue 1205; the chart stops declaring `data` after 0.12.0, jobset PR 1248). The Secret is
    applied as that fixed chart renders it, without `data`; `ignore_changes` keeps a stack that applied the old
    data from replacing the Secret (the provider replaces a Secret whose data changes), and the provider then
    leaves out of its apply the keys another manager owns."""
    metadata = args.props.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if args.type_ != "kubernetes:core/v1:Secret" or name != WEBHOOK_CERT_SECRET:
        return None
    props = {key: value for key, value in args.props.items() if key != "data"}
    return pulumi.ResourceTransformResult(
        props=props, opts=pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(ignore_changes=["data"]))
    )


def chart_values(config: StackConfig) -> dict[str, Any]:
    """The chart's values: a pulled-every-time image (by digest when configured), the controller on the system
    pool as its image's non-root user, and the remaining scan exceptions written on its Deployment."""
    image: dict[str, Any] = {"pullPolicy": "Always"}
    exceptions = dict(CONTROLLER_TOKEN_EXCEPTION)
    if config.charts.jobset_image_tag:
        image["tag"] = config.charts.jobset_image_tag
    else:
        exceptions.update(chart_tag_exception("jobsetImageDigest"))
    return {
        "image": image,
        "controller": {
            "resources": config.controller_resources,
            "nodeSelector": config.system_node_selector,
            "podSecurityContext": CONTROLLER_POD_SECURITY,
            "annotations": skip_annotations(exceptions),
        },
        "certManager": {"enable": False},
        "prometheus": {"enable": False},
    }


class JobSetInstall(ChartInstall):
    """Namespace `jobset-system` and the JobSet chart; JobSets depend on this component (CRD and webhook)."""

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            "tpu-stack:index:JobSetInstall",
            name,
            release="jobset",
            chart=JOBSET_CHART,
            version=config.charts.jobset_version,
            namespace=JOBSET_NAMESPACE,
            values=chart_values(config),
            provider=provider,
            transforms=[leave_cert_data_to_the_controller],
            opts=opts,
        )
