"""The users' stack files are theirs: a test that opens a committed top-level `Pulumi.<stack>.yaml` fails at once.

A team edits, adds and removes its stack files, and CI runs the tests before every deploy: a test that read one would
block the team's own deploys. An audit hook on `open` (installed once per process, however often this module is
imported) refuses it, unless the test is marked `every_stack_file` (the generic checks of tests/test_stacks.py, which
hold for any content); tests/conftest.py sets that per test. Subprocesses are not watched: tests run the CLI
in-process, or pass `--config` a fixture stack.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from offline.vendor import REPO

USERS_STACK_FILE = re.compile(r"Pulumi\.[^/]+\.yaml")
EVERY_STACK_FILE = "every_stack_file"
"""The marker of the generic checks: the only tests that open the users' stack files."""


class UsersStackFileRead(AssertionError):
    """A test opened one of the committed top-level `Pulumi.<stack>.yaml` files."""


class _Guard:
    allowed = False

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event != "open" or self.allowed or not isinstance(args[0], str | bytes | os.PathLike):
            return
        path = Path(os.fsdecode(args[0]))
        if USERS_STACK_FILE.fullmatch(path.name) and path.absolute().parent == REPO:
            raise UsersStackFileRead(
                f"{path.name} belongs to the users (a team edits, adds and removes its stack files): read a fixture "
                "stack instead (tests/fixtures: stack_path, stack_data, stack_config, stack_plan; the CLI with "
                f"--config <stack_path(...)>), or check every stack file generically (@pytest.mark.{EVERY_STACK_FILE})"
            )


GUARD = _Guard()
sys.addaudithook(GUARD)
