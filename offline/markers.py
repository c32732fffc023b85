"""How plan.json writes what has no plain value: a value preview cannot know, and a secret.

One module so that the engine that writes the markers, the chart renderer and the policy check that read them,
and the validator that skips them agree on one spelling.
"""

from __future__ import annotations

from typing import Any

UNKNOWN = "[unknown]"
"""A value the engine cannot know during preview (computed by the cloud, or derived from such a value)."""
SECRET = "[secret]"
"""A secret value; the engine holds it encrypted."""


def contains_unknown(value: Any) -> bool:
    """Whether `value` is, or holds at any depth, the unknown marker."""
    if value == UNKNOWN:
        return True
    if isinstance(value, dict):
        return any(contains_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_unknown(v) for v in value)
    return False
