"""GcpResource: a Google Cloud resource registered by its type token and wire-name (camelCase) inputs.

The typed classes of pulumi_gcp register exactly this (the type token, the camelCase inputs, the provider
plugin version), so the engine and the provider see no difference. But importing them is half of every
preview's start-up (`pulumi_gcp.container` alone loads ~50k lines of argument types, `pulumi_gcp.compute`
about 900 modules) and translating the typed arguments a fifth of each registration. What the typed classes
checked, a test now checks: tests/components/test_gcp_resource.py holds every input key of every resource the
stacks declare to the typed classes' own property names, nested arguments included.

Outputs read back are the engine's: camelCase keys, nested values as plain mappings (`cluster.output(
"masterAuth")["clusterCaCertificate"]`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib.metadata import version
from typing import Any

import pulumi

PROVIDER_VERSION = version("pulumi-gcp")
"""The provider plugin the typed classes would ask for; the engine picks the plugin by it."""


def wire(value: Any) -> Any:
    """Inputs as the typed classes send them: keys whose value is None are left out, at every depth."""
    if isinstance(value, Mapping):
        return {key: wire(item) for key, item in value.items() if item is not None}
    if isinstance(value, list | tuple):
        return [wire(item) for item in value]
    return value


class GcpResource(pulumi.CustomResource):
    """`inputs` in camelCase; `outputs` names the values only the cloud computes that callers read back
    (an input is always readable as an output of the same name)."""

    def __init__(
        self,
        type_token: str,
        name: str,
        inputs: Mapping[str, Any],
        *,
        outputs: Iterable[str] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = wire(inputs)
        props.update({key: None for key in outputs if key not in props})
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=PROVIDER_VERSION))
        super().__init__(type_token, name, props, opts)

    def output(self, key: str) -> pulumi.Output[Any]:
        """The output `key` (camelCase), e.g. `name`, `email`, `endpoint`."""
        value: pulumi.Output[Any] = getattr(self, key)
        return value


def get_project_number(project: str) -> pulumi.Output[str]:
    """The project's number (`gcp.organizations.getProject`), looked up by the provider."""
    result = pulumi.runtime.invoke_output(
        "gcp:organizations/getProject:getProject",
        {"projectId": project},
        opts=pulumi.InvokeOutputOptions(version=PROVIDER_VERSION),
    )
    return result.apply(lambda project_data: str(project_data["number"]))
