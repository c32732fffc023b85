"""What every policy reads: the resource type tokens and props helpers that work on plain dicts (tests) and on
the SDK's unknown-checking proxies (CLI, offline) alike.

Props are the resource inputs in camelCase wire names; numbers may be floats; keys may be missing. A value the
engine cannot know during preview raises `UnknownValueError` when read: most policies let it propagate (the
CLI then reports that the policy could not run), the service-account check skips it (the node service
account's email is only known after the account exists).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs, StackValidationArgs

from components.stacks import PROTECTED_KEY, is_protected

NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
BUCKET = "gcp:storage/bucket:Bucket"
SERVICE = "kubernetes:core/v1:Service"
CHARTS = ("kubernetes:helm.sh/v4:Chart", "kubernetes:helm.sh/v3:Release")
KUEUE_GROUP = "kubernetes:kueue.x-k8s.io/"
NAMESPACE = "kubernetes:core/v1:Namespace"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def prop(data: Any, path: str, default: Any = None) -> Any:
    """Value at a dotted path, or `default` when a key is missing or a step is not a mapping."""
    value = data
    for key in path.split("."):
        if not isinstance(value, Mapping):
            return default
        value = value.get(key)
        if value is None:
            return default
    return value


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []


def as_int(value: Any) -> int | None:
    """Numbers arrive as floats (2.0) from the engine; anything else is 'not set'."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def config_list(args: ResourceValidationArgs | StackValidationArgs, key: str, default: list[str]) -> list[str]:
    """A policy config list; the CLI fills schema defaults, direct callers may not."""
    value = args.get_config().get(key)
    return [str(v) for v in value] if isinstance(value, Sequence) and not isinstance(value, str) else default


def stack_of(urn: str) -> str:
    """`urn:pulumi:<stack>::<project>::<type>::<name>`: the URN is the one place every policy sees the stack."""
    return urn.removeprefix("urn:pulumi:").split("::", 1)[0]


def stack_setting(key: str) -> str | None:
    """A config value of the stack under analysis: the CLI starts the pack with the stack's config as JSON in
    PULUMI_CONFIG, keys `namespace:name` (pulumi/pulumi sdk/go/common/resource/plugin/analyzer_plugin.go,
    constructEnv and constructConfig)."""
    try:
        config = json.loads(os.environ.get("PULUMI_CONFIG") or "{}")
    except json.JSONDecodeError:
        return None
    value = config.get(key) if isinstance(config, Mapping) else None
    return value if isinstance(value, str) else None


def protected_stack(args: ResourceValidationArgs | StackValidationArgs, urn: str) -> str | None:
    """The stack's name when it is protected: as the program decides it (named prod or production, or its config
    sets `tpu-stack:protected: true`: components/stacks.py), or listed in the policy config's `protectedStacks`,
    which only adds stacks: a policy config cannot take a stack the program protects out of the checks."""
    stack = stack_of(urn)
    listed = stack in config_list(args, "protectedStacks", [])
    return stack if listed or is_protected(stack, stack_setting(PROTECTED_KEY)) else None


def say(report: ReportViolation, message: str) -> None:
    report(message, None)


def string_list_schema(name: str, default: list[str], description: str) -> PolicyConfigSchema:
    """A policy config property holding a list of strings (stack names, label keys, CIDR ranges)."""
    return PolicyConfigSchema(
        properties={
            name: {"type": "array", "items": {"type": "string"}, "default": default, "description": description}
        }
    )


PROTECTED_STACKS_SCHEMA = string_list_schema(
    "protectedStacks",
    [],
    "Stacks checked as protected besides those the program protects (prod, production and every stack whose config "
    "sets tpu-stack:protected: true), which are always checked",
)
