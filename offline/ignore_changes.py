"""ignoreChanges as the engine applies it to a resource's inputs before its provider checks them and the policy pack
sees them: each ignored path takes the old state's value (the previous deployment's, or what an import read).

A port of pulumi/pulumi (at 1b59498) pkg/resource/deploy/step_generator.go processIgnoreChanges, with
sdk/go/common/resource/properties_path.go parsePropertyPath (the loose, non-strict parse) and PropertyPath.reset:
- a path that does not parse is skipped;
- a leaf the old state has is set in the new inputs (where its parent is an object there); a leaf the old state
  lacks is removed;
- lists never grow or shrink: an index only one side has at the leaf, or an index or key missing on the way in one
  side only, is a path error (the engine reports it, "cannot ignore changes in added or removed elements of the
  path", and keeps whatever the walk already set);
- `*` stands for every key of an object or element of a list.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

Part = str | int
_ABSENT = object()
"""The engine's zero PropertyValue: what a missing key reads as while the walk goes on (neither object nor list)."""


def parse_path(text: str) -> list[Part] | None:
    """`a.b[0]["c.d"]` -> ["a", "b", 0, "c.d"]; `[*]` -> "*"; None where the engine's parse fails."""
    parts: list[Part] = []
    if text.startswith("."):
        return None
    rest = text
    while rest:
        if rest[0] == ".":
            rest = rest[1:]
            if not rest:
                return None
        elif rest[0] == "[":
            if rest[1:2] == '"':
                key, i = "", 2
                while True:
                    if i >= len(rest):
                        return None
                    if rest[i] == '"':
                        i += 1
                        break
                    if rest[i] == "\\" and rest[i + 1 : i + 2] == '"':
                        key, i = key + '"', i + 2
                    else:
                        key, i = key + rest[i], i + 1
                if rest[i : i + 1] != "]":
                    return None
                parts.append(key)
                rest = rest[i + 1 :]
            else:
                close = rest.find("]")
                if close == -1:
                    return None
                segment = rest[1:close]
                if segment == "*":
                    parts.append("*")
                else:
                    try:
                        parts.append(int(segment, 10))
                    except ValueError:
                        return None
                rest = rest[close + 1 :]
        else:
            end = min((i for i in (rest.find("."), rest.find("[")) if i != -1), default=len(rest))
            parts.append(rest[:end])
            rest = rest[end:]
    return parts


def _reset(path: Sequence[Part], old: Any, new: Any) -> bool:
    """PropertyPath.reset: new (mutated in place) takes old's value at `path`; False on a path error."""
    if not path:
        return False
    key, last = path[0], len(path) == 1
    if isinstance(key, int):
        if key < 0:
            return False
        old_list, new_list = isinstance(old, list), isinstance(new, list)
        if not old_list or not new_list:
            return not old_list and not new_list
        if last:
            if key >= len(old) and key >= len(new):
                return True
            if key >= len(old) or key >= len(new):
                return False
            new[key] = copy.deepcopy(old[key])
            return True
        if key >= len(old) or key >= len(new):
            return False
        return _reset(path[1:], old[key], new[key])
    if key == "*":
        return _reset_all(path, old, new)
    if last:
        if isinstance(old, dict) and key in old:
            if not isinstance(new, dict):
                return False
            new[key] = copy.deepcopy(old[key])
        elif isinstance(new, dict):
            new.pop(key, None)
        return True
    if not isinstance(old, dict) or not isinstance(new, dict):
        return not isinstance(old, dict) and not isinstance(new, dict)
    has_old, has_new = key in old, key in new
    if has_old and not has_new:
        return False
    if not has_old and not has_new:
        return True
    return _reset(path[1:], old.get(key, _ABSENT), new[key])


def _reset_all(path: Sequence[Part], old: Any, new: Any) -> bool:
    """The `*` element of reset: every key of an object, every element of a list."""
    if len(path) == 1:
        if isinstance(new, dict):
            if isinstance(old, dict):
                for key in list(new):
                    if key not in old:
                        del new[key]
                new.update(copy.deepcopy(old))
            return True
        if isinstance(new, list):
            if isinstance(old, list):
                for i in range(min(len(old), len(new))):
                    new[i] = copy.deepcopy(old[i])
                return len(old) == len(new)
            return True
        return False
    if isinstance(old, dict) and isinstance(new, dict):
        return all(key in new and _reset(path[1:], old[key], new[key]) for key in old)
    if isinstance(old, list) and isinstance(new, list):
        for i in range(min(len(old), len(new))):
            if not _reset(path[1:], old[i], new[i]):
                return False
        return len(old) == len(new)
    return False


def apply(
    inputs: Mapping[str, Any], old_inputs: Mapping[str, Any], ignore_changes: Sequence[str]
) -> tuple[dict[str, Any], list[str]]:
    """The inputs the engine goes on with (a copy; `inputs` is left as it is), and the paths it reports as errors."""
    ignored = copy.deepcopy(dict(inputs))
    old = dict(old_inputs)
    invalid = []
    for text in ignore_changes:
        path = parse_path(text)
        if path is None:
            continue
        if not _reset(path, old, ignored):
            invalid.append(text)
    return ignored, invalid
