"""KubernetesObject: any Kubernetes object (core, apps, scheduling or custom kinds) from its manifest.

The typed classes of pulumi_kubernetes (`core.v1.Namespace`, `apps.v1.Deployment`, ...) register the same type
token and inputs, but importing one API group costs 0.2-0.4 s of every preview. The engine and the provider see
no difference: the type token selects the kind, the inputs are the manifest.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import pulumi

PROVIDER_VERSION = version("pulumi-kubernetes")
"""The provider plugin the typed classes would ask for; the engine picks the plugin by it."""


def type_token(api_version: str, kind: str) -> str:
    """`kubernetes:core/v1:Namespace`, `kubernetes:apps/v1:Deployment`, `kubernetes:kueue.x-k8s.io/v1beta2:...`."""
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    return f"kubernetes:{group_version}:{kind}"


class KubernetesObject(pulumi.CustomResource):
    """`manifest` holds apiVersion, kind, metadata and the kind's body (spec, or value/description, ...).

    Give `opts.provider` the cluster's provider. `metadata` and `status` are the object's outputs as the
    provider reports them (status: e.g. a LoadBalancer Service's address once it exists).
    """

    def __init__(self, name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        self.metadata: pulumi.Output[Any]
        self.status: pulumi.Output[Any]
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=PROVIDER_VERSION))
        super().__init__(type_token(manifest["apiVersion"], manifest["kind"]), name, {**manifest, "status": None}, opts)
