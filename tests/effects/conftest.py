"""What the tests of effects share: each stack's plan (charts rendered) and config model, built once per test run.

Under `make mutate` every test builds its own instead: mutmut runs, for a mutant, only the tests during which
the mutated function ran, and a plan built once would be credited to the first test that asked for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, Literal, TypeVar

import pytest

from components.config.stack import StackConfig
from offline.engine import Plan
from tests.fixtures import stack_config, stack_plan

STACKS = ("dev", "prod")
T = TypeVar("T")


def shared(fixture_name: str, config: pytest.Config) -> Literal["session", "function"]:
    """The scope of a fixture built from the program: the whole test run, or each test under mutmut (which sets
    MUTANT_UNDER_TEST for its runs)."""
    return "function" if "MUTANT_UNDER_TEST" in os.environ else "session"


class PerStack(Mapping[str, T], Generic[T]):
    """A value per stack, built on first use (a test of one stack builds nothing for the other)."""

    def __init__(self, build: Callable[[str], T]) -> None:
        self._build = build
        self._built: dict[str, T] = {}

    def __getitem__(self, stack: str) -> T:
        if stack not in STACKS:
            raise KeyError(stack)
        if stack not in self._built:
            self._built[stack] = self._build(stack)
        return self._built[stack]

    def __iter__(self) -> Iterator[str]:
        return iter(STACKS)

    def __len__(self) -> int:
        return len(STACKS)


@pytest.fixture(scope=shared)
def plans() -> PerStack[Plan]:
    """Pulumi.<stack>.yaml run under the mock engine, charts rendered (their Deployments, Services, RBAC)."""
    return PerStack(stack_plan)


@pytest.fixture(scope=shared)
def configs() -> dict[str, StackConfig]:
    return {stack: stack_config(stack) for stack in STACKS}
