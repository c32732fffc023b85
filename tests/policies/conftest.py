"""Policy tests run the pack's own module, imported as the pack imports it (policies/ on sys.path)."""

from __future__ import annotations

from types import ModuleType

import pytest

from offline import policy_check


@pytest.fixture(scope="session")
def rules() -> ModuleType:
    return policy_check.load_rules()
