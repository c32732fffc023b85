"""The terminal summary of the property tests: how many configs and changes ran and how long they took
(tests/properties/budget.py), also kept in build/properties/last-run.json."""

from __future__ import annotations

import json

import pytest

from tests.properties.budget import PROFILE, RECORD, RUNS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RUNS.count:
        return
    terminalreporter.write_line(f"properties ({PROFILE} profile): " + ", ".join(RUNS.lines()))
    terminalreporter.write_line(f"  drawn: {RUNS.seen()}")
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    record = {"profile": PROFILE, "examples": RUNS.count, "seconds": RUNS.seconds, "drawn": dict(RUNS.kinds)}
    RECORD.write_text(json.dumps(record, indent=2, sort_keys=True))
