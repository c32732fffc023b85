"""Which stacks are protected: read by the program (what it protects), the policy pack (what it checks) and the
deploy order (protected stacks last).

A stack is protected when its name is one of PROTECTED_STACKS or its config sets `tpu-stack:protected: true`, so a
team's production stack under another name (`prod-us`) is protected exactly as `prod` is. Pure standard library,
like the TPU catalog, because the policy pack imports it from its own virtualenv and the workflows read the stack
files before anything is installed.
"""

from __future__ import annotations

import re
from pathlib import Path

PROTECTED_STACKS = ("prod", "production")
"""Stacks protected by their name alone; `tpu-stack:protected: false` is refused on them."""

PROTECTED_KEY = "tpu-stack:protected"
"""The config key that protects a stack of any name."""

_SETTINGS = {"true": True, "false": False}
"""What the key takes, as the Pulumi CLI hands config to the program and the pack (text; YAML's `true`, `True` and
`TRUE` all arrive as "true")."""

_LINE = re.compile(r"""^\s+["']?tpu-stack:protected["']?\s*:\s*["']?([^"'#\s]*)["']?\s*(?:#.*)?$""")


def setting(value: object) -> bool | None:
    """The key's value as True or False; None when the value is neither (the config model names the key)."""
    if isinstance(value, bool):
        return value
    return _SETTINGS.get(str(value).strip().lower()) if isinstance(value, str) else None


def is_protected(stack: str, value: object = None) -> bool:
    """The stack by its name and its `tpu-stack:protected` value (None: not set)."""
    return stack in PROTECTED_STACKS or setting(value) is True


def file_setting(text: str) -> bool | None:
    """`tpu-stack:protected` as a stack file (`Pulumi.<stack>.yaml`) sets it, read without a YAML parser: the key is
    one line under `config:`. None when the file does not set it."""
    for line in text.splitlines():
        found = _LINE.match(line)
        if found:
            return setting(found.group(1))
    return None


_MENTION = re.compile(r"tpu-stack:protected(?![\w-])")
_ENVIRONMENT = re.compile(r"^environment\s*:")


def file_problem(text: str) -> str | None:
    """Why the deploy order could misread this stack file's `tpu-stack:protected` (None: it cannot): the key in any
    form but the one line `file_setting` reads (flow style, a value that is not true or false, a value on the next
    line), the key twice, or an ESC environment (`environment:`), which may set the key where the file does not show
    it, without the key in the file. The program reads the config YAML and the engine hands it; the order reads text."""
    found = 0
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not _MENTION.search(line):
            continue
        read = _LINE.match(line)
        if read is None or setting(read.group(1)) is None:
            return (
                f"{PROTECTED_KEY}: write it as one line `  {PROTECTED_KEY}: true` (or false) under `config:`, not "
                f"{line.strip()!r}"
            )
        found += 1
    if found > 1:
        return f"{PROTECTED_KEY}: set {found} times; keep one line"
    if not found and any(_ENVIRONMENT.match(line) for line in text.splitlines()):
        return (
            f"{PROTECTED_KEY}: the file imports an ESC environment, which may set the key where the deploy order "
            f"cannot read it; set `{PROTECTED_KEY}: true` (or false) in the file itself"
        )
    return None


def file_is_protected(stack: str, path: Path) -> bool:
    """Whether the stack of this stack file is protected, as the program will decide it."""
    return is_protected(stack, file_setting(path.read_text(encoding="utf-8")))
