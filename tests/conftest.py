"""Shared fixtures: run the real program under the mock engine with an inline stack config; and the guard that keeps
the tests off the users' stack files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from offline.engine import Plan, run_program
from tests.guard import EVERY_STACK_FILE, GUARD

BASE = {"gcp:project": "proj-1234", "gcp:region": "us-central1"}
StackRunner = Callable[..., Plan]


@pytest.fixture(autouse=True)
def _no_cloud_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests must never pick up real credentials or kube contexts."""
    import os

    for key in list(os.environ):
        if key.startswith(("GOOGLE_", "CLOUDSDK_", "KUBECONFIG", "PULUMI_CONFIG")):
            monkeypatch.delenv(key)


@pytest.fixture
def run() -> StackRunner:
    """run(config_without_gcp_keys, stack="dev") -> Plan, with gcp:project/region defaulted."""

    def _run(config: dict[str, Any] | None = None, *, stack: str = "dev") -> Plan:
        return run_program({**BASE, **(config or {})}, stack=stack)

    return _run


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{EVERY_STACK_FILE}: a generic check over every top-level stack file, whatever its name and content"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Setup, call and teardown of a test marked `every_stack_file` (its module fixtures too) may open them."""
    GUARD.allowed = item.get_closest_marker(EVERY_STACK_FILE) is not None
    try:
        return (yield)
    finally:
        GUARD.allowed = False
