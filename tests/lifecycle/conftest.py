"""Plans of dev and prod as deployed today and after each kind of change, for the lifecycle scenarios.

A scenario is two runs of the real program under the mock engine: the stack file as it is (the deployed state)
and the stack file with one change. offline/lifecycle.py turns the pair into the engine's steps, judged by the
catalogue (catalogue.py).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from components.config import load
from offline.engine import _engine_config, run_program
from offline.lifecycle import Transition, transition
from tests.fixtures import stack_data
from tests.lifecycle.catalogue import CATALOGUE

Records = list[dict[str, Any]]
Change = Callable[[dict[str, Any]], None]


def stack_config(stack: str) -> dict[str, Any]:
    """The `config:` of Pulumi.<stack>.yaml, as the engine reads it."""
    return stack_data(stack)


def plan(stack: str, config: Mapping[str, Any]) -> Records:
    """Every resource the program declares with `config`, the charts' rendered objects included."""
    minor = load(_engine_config(config), stack=stack).cluster.kubernetes_minor
    return run_program(config, stack=stack, kubernetes_version=minor).resources


def changed(stack: str, change: Change) -> Records:
    config = copy.deepcopy(stack_config(stack))
    change(config)
    return plan(stack, config)


def upgraded_chart(records: Records, chart: str, old: str, new: str) -> Records:
    """`records` after a chart version bump as helm renders it: the Chart's version, and in its objects the version
    in the chart label, the app version and the controller's image tag. (Only the vendored version renders
    offline; a bump changes these fields of every object and nothing in their shape.)"""
    bumped = []
    for record in records:
        if record["name"] == f"{chart}-chart" or record["name"].startswith(f"{chart}-chart:"):
            record = json.loads(json.dumps(record).replace(old, new))
        bumped.append(record)
    return bumped


def step(old: Records, new: Records, in_cloud: Sequence[Mapping[str, Any]] = ()) -> Transition:
    return transition(old, new, CATALOGUE, in_cloud=in_cloud)


@pytest.fixture(scope="session")
def deployed() -> dict[str, Records]:
    """What dev and prod hold after `pulumi up` of today's stack files."""
    return {stack: plan(stack, stack_config(stack)) for stack in ("dev", "prod")}


@pytest.fixture(scope="session")
def multiregion() -> Records:
    """What the multiregion stack (a MultiKueue manager and two workers) holds after `pulumi up` of its file."""
    return plan("multiregion", stack_config("multiregion"))
