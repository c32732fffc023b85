"""The resource options the program sends the engine for replacements, read from the registrations themselves.

plan.json keeps inputs, dependencies, protect, ignoreChanges and timeouts; a test that must see what the engine
does when a field changes (`replaceOnChanges`, `deleteBeforeReplace`) reads the same RegisterResource requests
the recording monitor receives.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from offline import engine


@contextmanager
def replacement_options() -> Iterator[dict[str, dict[str, Any]]]:
    """URN -> {"replaceOnChanges": [...], "deleteBeforeReplace": bool | None} of every resource registered inside
    the block (None: the provider decides)."""
    options: dict[str, dict[str, Any]] = {}
    register = engine._RecordingMonitor.RegisterResource

    def recording(monitor: engine._RecordingMonitor, request: Any) -> Any:
        response = register(monitor, request)
        defined = request.deleteBeforeReplaceDefined or request.deleteBeforeReplace
        options[response.urn] = {
            "replaceOnChanges": list(request.replaceOnChanges),
            "deleteBeforeReplace": bool(request.deleteBeforeReplace) if defined else None,
        }
        return response

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine._RecordingMonitor, "RegisterResource", recording)
        yield options


def changed_paths(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Property paths (`spec.replicatedJobs[0].replicas`) where two inputs differ, as the kubernetes provider's
    detailed diff names them: per key in objects, per index in lists of one length, whole lists otherwise."""
    if isinstance(old, dict) and isinstance(new, dict):
        paths: list[str] = []
        for key in sorted(set(old) | set(new)):
            path = _join(prefix, key)
            if key not in old or key not in new:
                paths.append(path)
            else:
                paths += changed_paths(old[key], new[key], path)
        return paths
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [p for i, (a, b) in enumerate(zip(old, new, strict=True)) for p in changed_paths(a, b, f"{prefix}[{i}]")]
    return [] if old == new else [prefix]


def _join(prefix: str, key: str) -> str:
    """A key as pulumi's PropertyPath.String writes it: bare when it is [A-Za-z0-9_]+, else `["key"]`."""
    if re.fullmatch(r"\w+", key, re.ASCII):
        return f"{prefix}.{key}" if prefix else key
    return f'{prefix}["{key}"]'


def _parts(path: str) -> list[str | int]:
    parts: list[str | int] = []
    for name, quoted, index in re.findall(r'([^.\[\]"]+)|\["([^"]*)"\]|\[(\d+)\]', path):
        parts.append(int(index) if index else quoted or name)
    return parts


def replaced_by(replace_on_changes: Sequence[str], path: str) -> bool:
    """Whether the engine turns a change at `path` into a replacement: a replaceOnChanges path contains it (its
    parts are a prefix of the changed path's, `*` matching any key; pulumi PropertyPath.Contains)."""
    changed = _parts(path)
    for pattern in map(_parts, replace_on_changes):
        if len(pattern) <= len(changed) and all(p in ("*", c) for p, c in zip(pattern, changed, strict=False)):
            return True
    return False
