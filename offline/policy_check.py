"""Run the policy pack over a plan without the Pulumi CLI, the way the real engine shows resources to it.

The very objects in policies/rules.py run here, imported the way the CLI's pack imports them (the policies
folder on sys.path, `import rules`), and they receive the real `pulumi_policy` argument objects: props wrapped
in the SDK's unknown-checking proxy, resource options, parents and dependencies. Config is a policy pack
config mapping, the JSON `pulumi preview --policy-pack-config` reads: {"all": level, "<policy>": level or
{"enforcementLevel": level, "<property>": value}}; properties default to each policy's config_schema.

The real engine does not show the pack what the program registered (facts from the engine and provider
sources, see the README's offline-engine section); each `View` models one situation a user meets:
- a remote component (the Helm Chart) reaches Analyze and AnalyzeStack with no properties at all; its
  rendered objects are ordinary resources with their inputs;
- stack policies (AnalyzeStack) see each resource's outputs, not its inputs;
- `new`: preview of a stack that does not exist yet: values the cloud computes are unknown (the run that
  produced the resources left them unknown), a node pool's size and zones are unknown outputs;
- `deployed`: preview of the deployed stack at rest: outputs are known, an idle scale-from-zero pool reads
  back `nodeCount` 0, and autoscaling counts the program left unset read back as 0.
In every view a resource with `ignoreChanges` and an old state (what its import read, `olds`) is shown with each
ignored path reset to the old value, as the engine does before it analyzes it (offline/ignore_changes.py); stack
policies see the same, the update's outputs holding what was kept.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

from components.config.base import parse_duration
from offline import ignore_changes
from offline.markers import UNKNOWN, contains_unknown

POLICY_DIR = Path(__file__).resolve().parent.parent / "policies"
TEAM_CONFIG = POLICY_DIR / "config.json"
"""The team's policy config (reviewed exceptions): `make preview` passes it as --policy-config, the workflows as
`--policy-pack-config`."""
PACK_NAME = "tpu-stack"


class PolicyConfigError(ValueError):
    """The policy config names a policy or property the pack does not have, or a bad level."""


def load_rules() -> ModuleType:
    """policies/rules.py, imported as the pack's __main__.py imports it."""
    if str(POLICY_DIR) not in sys.path:
        sys.path.insert(0, str(POLICY_DIR))
    return importlib.import_module("rules")


def _level(value: Any, where: str) -> EnforcementLevel:
    try:
        return EnforcementLevel(value)
    except ValueError:
        levels = ", ".join(level.value for level in EnforcementLevel)
        raise PolicyConfigError(f"{where}: enforcement level {value!r} is not one of {levels}") from None


def settings(
    policies: list[Policy], config: Mapping[str, Any] | None
) -> dict[str, tuple[EnforcementLevel, dict[str, Any]]]:
    """Policy name -> (effective level, config properties with schema defaults), as the CLI resolves them."""
    config = dict(config or {})
    unknown = sorted(set(config) - {p.name for p in policies} - {"all"})
    if unknown:
        raise PolicyConfigError(f"policy config names unknown policies: {', '.join(unknown)}")
    every = _level(config["all"], "all") if "all" in config else None
    resolved = {}
    for policy in policies:
        level = every or policy.enforcement_level or EnforcementLevel.ADVISORY
        schema = policy.config_schema.properties if policy.config_schema else {}
        properties = {key: spec["default"] for key, spec in schema.items() if "default" in spec}
        entry = config.get(policy.name)
        if isinstance(entry, str):
            level = _level(entry, policy.name)
        elif isinstance(entry, Mapping):
            for key, value in entry.items():
                if key == "enforcementLevel":
                    level = _level(value, policy.name)
                elif key in schema:
                    properties[key] = value
                else:
                    raise PolicyConfigError(f"{policy.name}: unknown config property {key!r}")
        elif entry is not None:
            raise PolicyConfigError(f"{policy.name}: expected a level or a mapping, got {entry!r}")
        _validate(policy.name, schema, properties)
        resolved[policy.name] = (level, properties)
    return resolved


def _validate(name: str, schema: Mapping[str, Any], properties: Mapping[str, Any]) -> None:
    """The policy's config against its schema, as the CLI checks it before the pack runs (JSON Schema: pulumi/pulumi
    pkg/resource/analyzer/config.go validatePolicyConfig, gojsonschema over {"type": "object", "properties": ...})."""
    import jsonschema

    if not schema:
        return
    # Formats checked as gojsonschema checks them by default (its FormatCheckers: "date" and the others).
    validator = jsonschema.Draft7Validator(
        {"type": "object", "properties": dict(schema)}, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(dict(properties)), key=lambda e: list(e.absolute_path))
    if errors:
        where = ".".join(str(part) for part in errors[0].absolute_path)
        raise PolicyConfigError(f"{name}: {where}: {errors[0].message}")


def _with_unknowns(value: Any) -> Any:
    """Plan markers back to the engine's unknown sentinel, so reading one raises as under the CLI."""
    if value == UNKNOWN:
        return UNKNOWN_STRING_VALUE
    if isinstance(value, dict):
        return {k: _with_unknowns(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_unknowns(v) for v in value]
    return value


def _props(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """What a policy reads: the engine's unknown-checking proxy where a value is unknown, so that reading it
    raises as under the CLI; without unknowns a plain mapping reads the same and costs nothing to build."""
    return unknown_checking_proxy(_with_unknowns(value)) if contains_unknown(value) else value


def _seconds(text: str | None) -> float:
    """Go duration ("1h30m", "90s") in seconds; 0 when unset."""
    return float(parse_duration(text)) if text else 0.0


def _options(resource: Mapping[str, Any]) -> PolicyResourceOptions:
    timeouts = resource.get("customTimeouts") or {}
    return PolicyResourceOptions(
        protect=bool(resource.get("protect")),
        ignore_changes=list(resource.get("ignoreChanges") or []),
        delete_before_replace=resource.get("deleteBeforeReplace"),
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(
            _seconds(timeouts.get("create")), _seconds(timeouts.get("update")), _seconds(timeouts.get("delete"))
        ),
        additional_secret_outputs=[],
        parent=resource.get("parent"),
    )


NODE_POOL = "gcp:container/nodePool:NodePool"
AUTOSCALING_COUNTS = ("minNodeCount", "maxNodeCount", "totalMinNodeCount", "totalMaxNodeCount")


def _new_stack_outputs(resource: Mapping[str, Any]) -> Mapping[str, Any]:
    """A new resource's outputs in preview: its inputs, and the values only the cloud knows unknown. Returns the
    inputs themselves when nothing differs."""
    inputs = resource.get("inputs") or {}
    if resource["type"] != NODE_POOL:
        return inputs
    outputs = dict(inputs)
    for key in ("nodeCount", "nodeLocations"):
        outputs.setdefault(key, UNKNOWN)
    return outputs


def _at_rest_outputs(resource: Mapping[str, Any]) -> Mapping[str, Any]:
    """A deployed resource's outputs while nothing runs: an autoscaled pool holds no nodes, and the autoscaling
    counts the program did not set read back as 0. Returns the inputs themselves when nothing differs."""
    inputs = resource.get("inputs") or {}
    if resource["type"] != NODE_POOL:
        return inputs
    outputs = dict(inputs)
    scaling = outputs.get("autoscaling")
    if isinstance(scaling, Mapping):
        outputs["autoscaling"] = {**{key: 0 for key in AUTOSCALING_COUNTS}, **scaling}
        outputs["nodeCount"] = 0
    outputs.setdefault("nodeCount", 0)
    return outputs


@dataclass(frozen=True)
class View:
    """One situation in which the real engine runs the pack, and what stack policies see in it."""

    name: str
    summary: str
    stack_props: Callable[[Mapping[str, Any]], Mapping[str, Any]]


NEW_STACK = View(
    "new",
    "preview of a new stack: computed values unknown, charts unrendered until the cluster exists",
    _new_stack_outputs,
)
DEPLOYED = View(
    "deployed",
    "preview of the deployed stack at rest: stack policies see outputs, idle scale-from-zero pools at 0 nodes",
    _at_rest_outputs,
)
VIEWS = (NEW_STACK, DEPLOYED)


def analyzed(resource: Mapping[str, Any]) -> bool:
    """Resources the engine sends to Analyze: custom resources and remote components (Helm charts), not providers
    or the program's own components (they have no inputs of their own)."""
    if resource["type"].startswith("pulumi:providers:"):
        return False
    return bool(resource.get("custom", True) or resource.get("remote"))


def _kept(resource: dict[str, Any], old: Mapping[str, Any] | None) -> dict[str, Any]:
    """The resource with the inputs the engine analyzes: each ignoreChanges path reset to the old state's value
    (pulumi/pulumi pkg/resource/deploy/step_generator.go continueStepsFromImport, at 1b59498: processIgnoreChanges
    on the program's inputs against the old state's, L1264-1268, before analyzeAll, L1469; for an update the old
    state is the previous deployment's, for an import what the import read, step.go ImportStep.Apply)."""
    paths = resource.get("ignoreChanges")
    if old is None or not paths:
        return resource
    inputs, _errors = ignore_changes.apply(resource.get("inputs") or {}, old, paths)
    return {**resource, "inputs": inputs}


async def _awaited(result: Any) -> None:
    await result


def evaluate(
    resources: list[dict[str, Any]],
    *,
    stack: str,
    config: Mapping[str, Any] | None = None,
    rules: ModuleType | None = None,
    view: View | None = None,
    stack_config: Mapping[str, str] | None = None,
    olds: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Violations of every policy over plan resources: [{"policy", "level", "urn", "message"}].

    Without a `view`, every policy sees the inputs as registered (policy unit tests); with one, what the real
    engine shows the pack in that situation (module docstring). A policy that reads a value unknown during
    preview yields an advisory note, as `pulumi preview` does. `stack_config`: the stack's config, which the CLI
    hands the pack in PULUMI_CONFIG (pulumi/pulumi sdk/go/common/resource/plugin/analyzer_plugin.go constructEnv).
    `olds`: URN -> the old state's inputs (an import's), to which a resource's ignoreChanges paths are reset.
    """
    before = os.environ.get("PULUMI_CONFIG")
    os.environ["PULUMI_CONFIG"] = json.dumps(dict(stack_config or {}))
    try:
        return _evaluate(resources, stack=stack, config=config, rules=rules, view=view, olds=olds)
    finally:
        if before is None:
            del os.environ["PULUMI_CONFIG"]
        else:
            os.environ["PULUMI_CONFIG"] = before


def _evaluate(
    resources: list[dict[str, Any]],
    *,
    stack: str,
    config: Mapping[str, Any] | None,
    rules: ModuleType | None,
    view: View | None,
    olds: Mapping[str, Mapping[str, Any]] | None,
) -> list[dict[str, Any]]:
    policies: list[Policy] = list((rules or load_rules()).POLICIES)
    resolved = settings(policies, config)
    found: list[dict[str, Any]] = []

    def recorder(policy: Policy, level: EnforcementLevel, default_urn: str) -> Any:
        def report_violation(message: str, urn: str | None = None) -> None:
            found.append({"policy": policy.name, "level": level.value, "urn": urn or default_urn, "message": message})

        return report_violation

    def run(policy: Policy, level: EnforcementLevel, urn: str, call: Any) -> None:
        try:
            result = call(recorder(policy, level, urn))
            if inspect.isawaitable(result):
                asyncio.run(_awaited(result))
        except UnknownValueError as error:
            message = f"can't run policy '{policy.name}' from policy pack '{PACK_NAME}' during preview: {error.message}"
            found.append({"policy": policy.name, "level": "advisory", "urn": urn, "message": message})

    active = []
    for policy in policies:
        level, properties = resolved[policy.name]
        if level is EnforcementLevel.DISABLED:
            continue
        if level is EnforcementLevel.REMEDIATE:
            level = EnforcementLevel.MANDATORY  # what the CLI reports when a remediation still violates
        active.append((policy, level, properties))

    entries: list[tuple[dict[str, Any], PolicyResource]] = []
    for resource in resources:
        urn = resource["urn"]
        resource = _kept(resource, (olds or {}).get(urn))
        without_props = view is not None and bool(resource.get("remote"))
        inputs = {} if without_props else resource.get("inputs") or {}
        # Objects rendered from a chart hold no unknowns (the provider renders only fully known charts): no need
        # to search a CRD schema for one.
        props = inputs if resource.get("rendered") else _props(inputs)
        modelled = None if view is None or without_props else view.stack_props(resource)
        # Stack policies see what resource policies see, unless the view models other outputs (node pools).
        outputs = props if modelled is None or modelled is inputs else _props(modelled)
        options = _options(resource)
        entries.append(
            (resource, PolicyResource(resource["type"], outputs, urn, resource["name"], options, None, None, [], {}))
        )
        if not analyzed(resource):
            continue
        for policy, level, properties in active:
            if isinstance(policy, ResourceValidationPolicy):
                args = ResourceValidationArgs(resource["type"], props, urn, resource["name"], options, None, properties)
                run(policy, level, urn, lambda report, p=policy, a=args: p.validate(a, report))

    by_urn = {policy_resource.urn: policy_resource for _, policy_resource in entries}
    for resource, policy_resource in entries:
        policy_resource.parent = by_urn.get(resource.get("parent") or "")
        policy_resource.dependencies = [by_urn[d] for d in resource.get("dependencies") or [] if d in by_urn]
        # As the engine hands stack policies each resource's provider: its URN, type, name and inputs
        # (pulumi pkg/resource/deploy/step_generator.go, AnalyzeResources).
        provider = by_urn.get(resource.get("provider") or "")
        if provider is not None:
            policy_resource.provider = PolicyProviderResource(
                provider.resource_type, provider.props, provider.urn, provider.name
            )
    everything = [policy_resource for _, policy_resource in entries]
    for policy, level, properties in active:
        if isinstance(policy, StackValidationPolicy):
            stack_args = StackValidationArgs(everything, properties)
            run(policy, level, "", lambda report, p=policy, a=stack_args: p.validate(a, report))
    return found


def merge(found_by_view: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One entry per distinct finding over the views, with the views it shows in (`views`), in VIEWS order."""
    merged: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for view in VIEWS:
        for found in found_by_view.get(view.name, []):
            key = (found["policy"], found["level"], found["urn"], found["message"])
            merged.setdefault(key, {**found, "views": []})["views"].append(view.name)
    return list(merged.values())
