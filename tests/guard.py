"""The users' stack files are theirs: a test that opens a committed top-level `Pulumi.<stack>.yaml` fails at once.

A team edits, adds and removes its stack files, and CI runs the tests before every deploy: a test that read one would
block the team's own deploys. An audit hook (installed once per process, however often this module is imported)
refuses it, unless the test is marked `every_stack_file` (the generic checks of tests/test_stacks.py, which hold for
any content); tests/conftest.py sets that per test. It watches:
- `open`, on the path as the kernel resolves it (`..` and symlinks followed: os.path.realpath);
- the commands this process starts (`subprocess.Popen`, `os.system`, `os.exec*`, `os.posix_spawn*`; a `sh -c`
  line is split into its commands): one that names a users' stack file; `python -m offline preview|workloads|roles`
  or `python -m offline.urns --stack` without `--config` from the checkout (they read `Pulumi.<stack>.yaml`); and
  `make` in the checkout (its preview, workloads, scan, plan-diff and lint targets read the stack files, and its
  install rule writes the shared environment). Tests run the CLI in-process or with `--config <fixture>`, and make in
  a copy of the Makefile. What a started program runs in turn (a script's own commands) is that program's business.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from offline.vendor import REPO

USERS_STACK_FILE = re.compile(r"Pulumi\.[^/]+\.yaml")
EVERY_STACK_FILE = "every_stack_file"
"""The marker of the generic checks: the only tests that open the users' stack files."""
CHECKOUT = Path(os.path.realpath(REPO))
SHELLS = {"sh", "bash", "dash", "zsh"}
SHELL_OPERATORS = {";", "&&", "||", "|", "&", "(", ")", "\n"}
READS_STACK_FILES = {"preview", "workloads", "roles"}
"""`python -m offline` commands that read `Pulumi.<stack>.yaml` unless given `--config`."""
FIX = (
    "read a fixture stack instead (tests/fixtures: stack_path, stack_data, stack_config, stack_plan; the CLI with "
    f"--config <stack_path(...)>), or check every stack file generically (@pytest.mark.{EVERY_STACK_FILE})"
)


class UsersStackFileRead(AssertionError):
    """A test opened one of the committed top-level `Pulumi.<stack>.yaml` files, or started a command that would."""


def users_stack_file(path: str | bytes | os.PathLike[Any], cwd: Path | None = None) -> bool:
    """The path, as the kernel resolves it from `cwd` (`..` and symlinks followed), is a top-level stack file."""
    text = os.path.join(cwd or os.getcwd(), os.fsdecode(path))
    if not USERS_STACK_FILE.fullmatch(os.path.basename(text)) and not os.path.islink(text):
        return False
    resolved = Path(os.path.realpath(text))
    return USERS_STACK_FILE.fullmatch(resolved.name) is not None and resolved.parent == CHECKOUT


def _in_checkout(directory: Path) -> bool:
    return Path(os.path.realpath(directory)) == CHECKOUT


def refusal(argv: Sequence[str], cwd: Path) -> str | None:
    """Why the command `argv`, started in `cwd`, would read the users' stack files; None when it would not."""
    if not argv:
        return None
    program = os.path.basename(argv[0])
    args = list(argv[1:])
    if program in ("make", "gmake", "git"):
        cwd = _directory(args, cwd)
    for arg in args:
        value = arg.split("=", 1)[-1] if arg.startswith("-") else arg
        if value and users_stack_file(value, cwd):
            return f"{shlex.join(argv)} names {os.path.basename(value)}, which belongs to the users"
    if program in SHELLS and "-c" in args and args.index("-c") + 1 < len(args):
        return _shell_refusal(args[args.index("-c") + 1], cwd)
    if program in ("make", "gmake"):
        if _in_checkout(cwd):
            return (
                f"{shlex.join(argv)} runs make in the checkout, whose targets read the users' stack files and may "
                "reinstall the shared environment; run the tool it runs with --config <fixture>, or make in a copy"
            )
        return None
    if (program.startswith("python") or argv[0] == sys.executable) and "-m" in args and _in_checkout(cwd):
        index = args.index("-m")
        module, rest = (args[index + 1], args[index + 2 :]) if index + 1 < len(args) else ("", [])
        flags = {arg.split("=", 1)[0] for arg in rest}
        reads = (module == "offline" and bool(rest) and rest[0] in READS_STACK_FILES) or (
            module == "offline.urns" and "--stack" in flags
        )
        if reads and "--config" not in flags:
            return f"{shlex.join(argv)} reads Pulumi.<stack>.yaml of the checkout: pass --config <stack_path(...)>"
    return None


def _directory(args: list[str], cwd: Path) -> Path:
    """Where `make -C dir` and `git -C dir` work (the last `-C` wins, as both apply them in turn)."""
    directory = cwd
    for index, arg in enumerate(args):
        if arg in ("-C", "--directory") and index + 1 < len(args):
            directory = directory / args[index + 1]
        elif arg.startswith("--directory="):
            directory = directory / arg.split("=", 1)[1]
        elif arg.startswith("-C") and len(arg) > 2 and not arg.startswith("-c"):
            directory = directory / arg[2:]
    return directory


def _shell_refusal(line: str, cwd: Path) -> str | None:
    """Each command of a shell line, split at its operators."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    command: list[str] = []
    for token in [*lexer, ";"]:
        if token in SHELL_OPERATORS or set(token) <= set(";&|()"):
            found = refusal(command, cwd)
            if found:
                return found
            command = []
        else:
            command.append(token)
    return None


def _argv(value: Any) -> list[str]:
    if isinstance(value, str | bytes | os.PathLike):
        return shlex.split(os.fsdecode(value))
    return [os.fsdecode(part) for part in value] if isinstance(value, Sequence) else []


class _Guard:
    allowed = False

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if self.allowed:
            return
        if event == "open":
            if isinstance(args[0], str | bytes | os.PathLike) and users_stack_file(args[0]):
                name = os.path.basename(os.path.realpath(os.fsdecode(args[0])))
                raise UsersStackFileRead(
                    f"{name} belongs to the users (a team edits, adds and removes its stack files): {FIX}"
                )
            return
        found = None
        if event == "subprocess.Popen":
            _executable, argv, cwd, _env = args
            found = refusal(_argv(argv), Path(os.fsdecode(cwd)) if cwd is not None else Path.cwd())
        elif event == "os.system":
            found = refusal(["sh", "-c", os.fsdecode(args[0])], Path.cwd())
        elif event in ("os.exec", "os.posix_spawn"):
            found = refusal(_argv(args[1]), Path.cwd())
        if found:
            raise UsersStackFileRead(f"{found} (a team edits, adds and removes its stack files): {FIX}")


GUARD = _Guard()
sys.addaudithook(GUARD)
