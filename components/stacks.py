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


def file_is_protected(stack: str, path: Path) -> bool:
    """Whether the stack of this stack file is protected, as the program will decide it."""
    return is_protected(stack, file_setting(path.read_text(encoding="utf-8")))
