"""What the tests of effects share: each stack's plan (charts rendered) and config model, built once a session."""

from __future__ import annotations

import pytest

from components.config.stack import StackConfig, load
from offline.engine import REPO, Plan, _engine_config, read_stack_file, run_stack

STACKS = ("dev", "prod")


@pytest.fixture(scope="session")
def plans() -> dict[str, Plan]:
    """Pulumi.<stack>.yaml run under the mock engine, charts rendered (their Deployments, Services, RBAC)."""
    return {stack: run_stack(stack) for stack in STACKS}


@pytest.fixture(scope="session")
def configs() -> dict[str, StackConfig]:
    return {
        stack: load(_engine_config(read_stack_file(REPO / f"Pulumi.{stack}.yaml")), stack=stack) for stack in STACKS
    }
