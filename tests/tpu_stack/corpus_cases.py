"""The corpus of `tpu-stack why` situations (tests/tpu_stack/corpus/*.yaml), read into cases.

Each case names the objects of its clusters: sets of shared objects (`use:`, from corpus/shared.yaml), objects to
remove from them, RFC 7386 merge patches on single objects, and its own objects. What it asks (`ask`) and what the
answer must be (`expect`) were written by hand from the upstream sources each case cites.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]
CORPUS = Path(__file__).resolve().parent / "corpus"
MANAGER = ""
"""The key of the stack's own cluster (a MultiKueue stack's manager) in Case.clusters."""
CLASSES = (
    "several flavors in one message",
    "order in the queue",
    "admission checks",
    "after admission",
    "queue problems",
    "retries",
    "reads that fail",
    "preemption",
    "end of a run",
    "held by topology",
)
OUTCOMES = ("runs", "waits", "stopped")
ACTORS = ("user", "team", "platform team")


@dataclass(frozen=True)
class Cluster:
    objects: list[Obj] = field(default_factory=list)
    forbidden: list[tuple[str, str]] = field(default_factory=list)
    """(method, path prefix) that answer 403."""
    unreachable: bool = False


@dataclass(frozen=True)
class Case:
    id: str
    cls: str
    stack: str
    situation: str
    sources: list[dict[str, str]]
    clusters: dict[str, Cluster]
    ask: list[str]
    expect: dict[str, Any]
    file: str


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge key by key, null removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


def _matches(obj: Obj, selector: Obj) -> bool:
    meta = obj.get("metadata", {})
    return (
        obj.get("kind") == selector["kind"]
        and meta.get("name") == selector["name"]
        and meta.get("namespace") == selector.get("namespace")
    )


def _cluster(spec: Obj, shared: dict[str, list[Obj]]) -> Cluster:
    if spec.get("unreachable"):
        return Cluster(unreachable=True)
    objects = [copy.deepcopy(obj) for name in spec.get("use", []) for obj in shared[name]]
    for selector in spec.get("remove", []):
        objects = [obj for obj in objects if not _matches(obj, selector)]
    for patch in spec.get("patch", []):
        found = [i for i, obj in enumerate(objects) if _matches(obj, patch)]
        if len(found) != 1:
            raise ValueError(f"patch {patch['kind']}/{patch['name']} matches {len(found)} shared objects")
        objects[found[0]] = merge(objects[found[0]], patch["merge"])
    objects += [copy.deepcopy(obj) for obj in spec.get("objects", [])]
    forbidden = [tuple(rule.split(" ", 1)) for rule in spec.get("forbidden", [])]
    return Cluster(objects, [(method, prefix) for method, prefix in forbidden])


def load() -> list[Case]:
    shared = yaml.safe_load((CORPUS / "shared.yaml").read_text())
    cases = []
    for path in sorted(CORPUS.glob("*.yaml")):
        if path.name == "shared.yaml":
            continue
        for raw in yaml.safe_load(path.read_text())["cases"]:
            clusters = {MANAGER: _cluster(raw["cluster"], shared)}
            for worker, spec in (raw.get("workers") or {}).items():
                clusters[worker] = _cluster(spec, shared)
            cases.append(
                Case(
                    id=raw["id"],
                    cls=raw["class"],
                    stack=raw["stack"],
                    situation=" ".join(raw["situation"].split()),
                    sources=raw["sources"],
                    clusters=clusters,
                    ask=[str(word) for word in raw["ask"]],
                    expect=raw["expect"],
                    file=path.name,
                )
            )
    return cases
