"""The new-stack view runs in a forked child when the process is single-threaded, inline otherwise; both give
the same findings, and a failure in the child reaches the parent."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from offline import commands, parallel
from offline.engine import REPO
from tests.fixtures import stack_path


def test_the_forked_cli_and_the_inline_evaluation_report_the_same_findings(tmp_path: Path) -> None:
    """The CLI process forks (nothing has started a thread yet); this test process has, so it runs inline."""
    preview = [sys.executable, "-m", "offline", "preview", "--stack", "dev", "--config", str(stack_path("dev"))]
    done = subprocess.run(
        [*preview, "--quiet", "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    forked = json.loads((tmp_path / "plan.json").read_text())["violations"]
    inline = commands.evaluate("dev", stack_path("dev")).violations
    assert forked == inline
    assert {view for v in inline for view in v["views"]} == {"new", "deployed"}


def test_work_runs_inline_once_a_thread_exists() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        background = parallel.Background(lambda: 42)
        assert not background.forked
        assert background.result() == 42
    finally:
        stop.set()
        worker.join()


def test_a_forked_failure_reaches_the_parent_with_its_type_and_message() -> None:
    code = (
        "from offline import parallel\n"
        "def fail():\n    raise ValueError('bad pool')\n"
        "b = parallel.Background(fail)\nassert b.forked\n"
        "try:\n    b.result()\nexcept parallel.ChildFailed as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.stdout.strip() == "ValueError: bad pool", done.stderr


def test_an_inline_failure_is_the_original_exception() -> None:
    def fail() -> int:
        raise ValueError("bad pool")

    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        with pytest.raises(ValueError, match="bad pool"):
            parallel.Background(fail).result()
    finally:
        stop.set()
        worker.join()
