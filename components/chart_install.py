"""ChartInstall: a namespace and one pinned Helm chart in it, what the JobSet and Kueue installs have in common.

The chart is `kubernetes.helm.v4.Chart` from an OCI registry at one exact version; it waits for its namespace
(through the namespace's name) and for whatever the install must find running when its controller starts.
`transforms` change what the chart renders before the provider applies it: the engine runs a component's
transforms on every child it registers, the children of a remote component such as the Chart included (pulumi
pkg/resource/deploy/source_eval.go, RegisterResource; lifecycle test TestRemoteComponentTransforms).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s


class ChartInstall(pulumi.ComponentResource):
    """Namespace `<namespace>` and the chart `release` in it; dependants wait on `chart` (CRDs, webhooks)."""

    def __init__(
        self,
        type_token: str,
        name: str,
        *,
        release: str,
        chart: str,
        version: str,
        namespace: str,
        values: dict[str, Any],
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        transforms: Sequence[pulumi.ResourceTransform] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(type_token, name, None, opts)
        self.namespace: k8s.core.v1.Namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": namespace},
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
        )
        self.chart: k8s.helm.v4.Chart = k8s.helm.v4.Chart(
            f"{name}-chart",
            name=release,
            chart=chart,
            version=version,
            namespace=self.namespace.metadata.name,
            values=values,
            opts=pulumi.ResourceOptions(
                parent=self, provider=provider, depends_on=list(depends_on), transforms=list(transforms) or None
            ),
        )
        self.register_outputs({"version": version})
