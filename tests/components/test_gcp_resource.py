"""GcpResource sends what the typed pulumi_gcp classes would: every input key of every Google Cloud resource the
stacks declare is a property the typed class defines, at every depth (what a type checker caught before)."""

from __future__ import annotations

import importlib
import typing
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pulumi._types as sdk_types
import pytest

from offline.engine import Plan, run_stack
from tests.conftest import StackRunner

ZONE = "us-central1-a"


def args_class(type_token: str) -> type:
    """`gcp:container/nodePool:NodePool` -> pulumi_gcp.container.NodePoolArgs."""
    _, module_path, name = type_token.split(":")
    module = importlib.import_module(f"pulumi_gcp.{module_path.split('/')[0]}")
    cls: type = getattr(module, f"{name}Args")
    return cls


def nested(hint: Any) -> type | str | None:
    """The input type a property holds (also inside lists and unions), "map" for free-form maps, else None."""
    if isinstance(hint, type) and sdk_types.is_input_type(hint):
        return hint
    origin = typing.get_origin(hint)
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return "map"
    for arg in typing.get_args(hint):
        found = nested(arg)
        if found is not None:
            return found
    return None


def unknown_keys(value: Mapping[str, Any], cls: type, path: str) -> list[str]:
    names = sdk_types.input_type_types(cls)
    problems = []
    for key, item in value.items():
        if key not in names:
            problems.append(f"{path}.{key}")
            continue
        inner = nested(names[key])
        if not isinstance(inner, type):
            continue
        for element in item if isinstance(item, list) else [item]:
            if isinstance(element, Mapping):
                problems += unknown_keys(element, inner, f"{path}.{key}")
    return problems


def gcp_problems(plan: Plan) -> list[str]:
    resources = [r for r in plan.resources if r["type"].startswith("gcp:") and r["custom"]]
    assert resources
    return [p for r in resources for p in unknown_keys(r["inputs"], args_class(r["type"]), r["name"])]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_input_of_the_stacks_is_a_property_of_its_typed_class(stack: str) -> None:
    assert gcp_problems(run_stack(stack, render_charts=False)) == []


def test_autopilot_calendar_and_authorized_networks_too(run: StackRunner) -> None:
    start = (datetime.now(UTC) + timedelta(days=14)).replace(microsecond=0, second=0, minute=0)
    calendar = {
        "name": "cal", "machineType": "ct5lp-hightpu-4t", "topology": "4x4", "zone": ZONE,
        "provisioning": "reservation",
        "futureReservation": {"startTime": start.isoformat(), "endTime": (start + timedelta(days=7)).isoformat()},
    }  # fmt: skip
    standard = run({
        "tpu-stack:tpuPools": [calendar],
        "tpu-stack:cluster": {"controlPlane": {"ipEndpoint": True, "authorizedNetworks": ["203.0.113.0/24"]},
                              "maintenance": {"dailyStartTime": "03:00"}},
    })  # fmt: skip
    types = {r["type"] for r in standard.resources}
    assert {"gcp:compute/futureReservation:FutureReservation", "gcp:container/cluster:Cluster"} <= types
    (cluster,) = standard.by_type("gcp:container/cluster:Cluster")
    assert {"masterAuthorizedNetworksConfig", "maintenancePolicy"} <= cluster["inputs"].keys()
    assert gcp_problems(standard) == []
    assert gcp_problems(run({"tpu-stack:cluster": {"mode": "autopilot"}})) == []


def test_a_misspelled_key_is_found_at_any_depth() -> None:
    node_pool = args_class("gcp:container/nodePool:NodePool")
    assert unknown_keys({"nodeConfig": {"machineType": "x", "shieldedInstanceConfg": {}}}, node_pool, "p") == [
        "p.nodeConfig.shieldedInstanceConfg"
    ]
    bucket = args_class("gcp:storage/bucket:Bucket")
    assert unknown_keys({"lifecycleRules": [{"action": {"typ": "Delete"}}], "labels": {"any": "x"}}, bucket, "b") == [
        "b.lifecycleRules.action.typ"
    ]
