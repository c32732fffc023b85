"""What the engine would do going from one plan to the next: the steps of an update, a first `up` or a destroy.

A preview shows one plan; what decides whether `pulumi up` succeeds on a deployed stack is the step from the
deployed state to the new plan: which resources are created, updated in place, replaced (and in which order)
or deleted, and which of those steps the engine, a provider or the API server refuses. `transition(old, new,
rules)` models the engine's step generation (pulumi/pulumi pkg/resource/deploy/step_generator.go) over two plan
records: what counts as a replacement, what `protect`, `retainOnDelete`, `ignoreChanges`, `replaceOnChanges`,
`deleteBeforeReplace` and `importId` do, and how a replaced provider takes every resource it manages along.
What the platform itself imposes (which fields a provider replaces on, which an API server or webhook refuses
to change) is not known here: it comes in as `rules`, the catalogue in offline/catalogue.py, each
entry with its upstream source.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Op = Literal["same", "create", "update", "replace", "delete", "forget", "refuse"]
PROVIDER_PREFIX = "pulumi:providers:"


class Rules(Protocol):
    """The platform's answers the step generator needs, per resource type."""

    def replaces_on(
        self, resource: Mapping[str, Any], changed: Sequence[str], provider: Mapping[str, Any] | None
    ) -> list[str]:
        """The changed input paths for which the resource's provider (its record, if the stack declares it)
        answers "replace"."""
        ...

    def refuses(self, old: Mapping[str, Any], new: Mapping[str, Any], changed: Sequence[str]) -> list[str]:
        """Why the API (server, webhook, CRD rule) would refuse to change `old` into `new` in place; [] if it
        accepts."""
        ...


@dataclass(frozen=True)
class Step:
    op: Op
    urn: str
    type: str
    name: str
    why: str = ""


@dataclass
class Transition:
    """The steps of one deployment, and what would be left in the cloud without being in the state."""

    steps: list[Step] = field(default_factory=list)
    retained: list[Mapping[str, Any]] = field(default_factory=list)
    """Resources deleted from the state but kept in the cloud (`retainOnDelete`)."""

    def names(self, op: Op) -> list[str]:
        return sorted(step.name for step in self.steps if step.op == op)

    def of(self, op: Op) -> list[Step]:
        return [step for step in self.steps if step.op == op]

    @property
    def refused(self) -> list[str]:
        """One line per step the engine, a provider or the API server refuses: the deployment fails there."""
        return [f"{step.name} ({step.type}): {step.why}" for step in self.steps if step.op == "refuse"]


def changed_paths(old: Any, new: Any, path: str = "") -> list[str]:
    """Dotted paths (list items as [i]) of every leaf that differs between two input trees."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        paths: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            child = f"{path}.{key}" if path else str(key)
            paths += changed_paths(old.get(key), new.get(key), child)
        return paths
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [p for i, (a, b) in enumerate(zip(old, new, strict=True)) for p in changed_paths(a, b, f"{path}[{i}]")]
    return [] if _same(old, new) else [path]


def _same(old: Any, new: Any) -> bool:
    return json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)


def matches(path: str, pattern: str) -> bool:
    """Whether a changed input path falls under a property path as Pulumi options name them (`replaceOnChanges`,
    `ignoreChanges`): `*` is every property, `a.b` covers `a.b`, `a.b.c` and `a.b[0].c`; `a[*].b` any item."""
    if pattern == "*":
        return True
    parts = _split(path)
    wanted = _split(pattern)
    return len(wanted) <= len(parts) and all(_part_matches(w, p) for w, p in zip(wanted, parts, strict=False))


def _part_matches(wanted: str, part: str) -> bool:
    if wanted == "[*]":
        return part.startswith("[")
    return wanted == part or (wanted == "*" and not part.startswith("["))


def _split(path: str) -> list[str]:
    parts: list[str] = []
    for piece in path.split("."):
        head, _, rest = piece.partition("[")
        if head:
            parts.append(head)
        if rest:
            parts += [f"[{item}" for item in rest.split("[")]
    return parts


def _providers(records: Mapping[str, Mapping[str, Any]]) -> dict[str, str | None]:
    """URN -> the provider resource that manages it: its own, else its parent's (a chart's children use the
    Chart's)."""
    found: dict[str, str | None] = {}

    def provider_of(urn: str) -> str | None:
        if urn not in found:
            record = records[urn]
            own = record.get("provider")
            parent = record.get("parent")
            found[urn] = own or (provider_of(str(parent)) if parent in records else None)
        return found[urn]

    for urn in records:
        provider_of(urn)
    return found


def dependents(records: Mapping[str, Mapping[str, Any]]) -> dict[str, set[str]]:
    """URN -> URNs that must go before it in a destroy: those that depend on it, its children, and the
    resources its provider resource manages (the engine deletes in reverse order of these edges). Depending on a
    component is depending on everything under it: a remote component's children are not in the dependency list
    (pulumi/pulumi pkg/resource/graph/dependency_graph.go DependenciesOf)."""
    edges: dict[str, set[str]] = {urn: set() for urn in records}
    providers = _providers(records)
    children: dict[str, set[str]] = {}
    for urn, record in records.items():
        if record.get("parent") in records:
            children.setdefault(str(record["parent"]), set()).add(urn)
    for urn, record in records.items():
        before = set(record.get("dependencies") or ())
        components = [d for d in before if d in records and not records[d].get("custom", True)]
        before |= closure(components, children)
        if record.get("parent") in records:
            before.add(str(record["parent"]))
        provider = providers[urn]
        if provider in records:
            before.add(provider)
        for needed in before & edges.keys():
            edges[needed].add(urn)
    return edges


def closure(start: Iterable[str], edges: Mapping[str, set[str]]) -> set[str]:
    """Every URN reachable from `start` along `edges` (on `dependents` edges: what must go before them in a destroy)."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        urn = todo.pop()
        for nxt in edges.get(urn, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def depends_on(records: Mapping[str, Mapping[str, Any]], urn: str, other: str) -> bool:
    """Whether the engine orders `urn` after `other` on create (and before it on destroy)."""
    return urn in closure([other], dependents(records))


def transition(
    old: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
    rules: Rules,
    *,
    in_cloud: Sequence[Mapping[str, Any]] = (),
) -> Transition:
    """The steps from state `old` to program `new` (`[]` old: a first `up`; `[]` new: `pulumi destroy`).
    `in_cloud`: resources that exist without being in the state (retained by an earlier destroy); a create that
    takes one of their names collides with it unless the program imports it."""
    before = {r["urn"]: r for r in old}
    after = {r["urn"]: r for r in new}
    result = Transition()
    replaced_providers: dict[str, list[str]] = {}
    provider_of, provider_before = _providers(after), _providers(before)
    pending: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
    for urn, record in after.items():
        previous = before.get(urn)
        if previous is None:
            result.steps.append(_create(record, in_cloud))
        elif record["type"].startswith(PROVIDER_PREFIX):
            step = _update(previous, record, rules, None)
            if step.op == "replace":
                replaced_providers[urn] = _provider_replaces(previous, record, rules)
            result.steps.append(step)
        else:
            pending.append((previous, record))
    for previous, record in pending:
        provider, was = provider_of[record["urn"]], provider_before[previous["urn"]]
        if provider in replaced_providers:
            # The engine asks for no delete-before-replace here: create-before-delete (step_generator.go).
            why = f"its provider {provider} is replaced"
            result.steps.append(
                _replace(previous, record, why, by_provider=False, **_target(replaced_providers[provider]))
            )
        elif provider != was:
            result.steps.append(_moved(previous, record, before.get(was or ""), after.get(provider or ""), rules))
        else:
            result.steps.append(_update(previous, record, rules, after.get(provider or "")))
    result.steps += _deletes([before[urn] for urn in before.keys() - after.keys()], before, result)
    return result


def _provider_replaces(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, rules: Rules) -> list[str]:
    """The settings for which a provider's DiffConfig, going from `old`'s settings to `new`'s, answers "replace".
    A side the stack does not declare is the default provider, configured from the stack's config (not in the plan):
    its settings count as none."""
    declared = new or old
    if declared is None:
        return []
    changed = changed_paths((old or {}).get("inputs") or {}, (new or {}).get("inputs") or {})
    if not changed:
        return []
    return rules.replaces_on({**declared, "inputs": (new or {}).get("inputs") or {}}, changed, None)


def _target(replaces: Sequence[str]) -> dict[str, bool]:
    """Whether a provider replaced on these settings points at another cluster: pulumi-kubernetes replaces on a
    changed clusterIdentifier only because it names another cluster, so the new object's create does not meet the
    old one's name there; on kubeconfig alone it cannot tell and may be the same cluster."""
    return {"elsewhere": "clusterIdentifier" in replaces}


def _moved(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    old_provider: Mapping[str, Any] | None,
    new_provider: Mapping[str, Any] | None,
    rules: Rules,
) -> Step:
    """A resource whose provider reference changed (another provider resource, e.g. one renamed with its cluster):
    the engine asks the NEW provider's DiffConfig about the old provider's settings and replaces the resource when
    it answers "replace", creating first (pulumi/pulumi pkg/resource/deploy/step_generator.go providerChanged, used
    by diff); otherwise the resource's own diff decides, as for any update. A provider aliased to the old one is no
    change: the caller gives both sides the same URN."""
    replaces = _provider_replaces(old_provider, new_provider, rules)
    if not replaces:
        return _update(old, new, rules, new_provider)
    name = str((new_provider or old_provider or {}).get("name") or "the default provider")
    why = f"moves to provider {name}, which replaces it (changed: {', '.join(sorted(set(replaces)))})"
    return _replace(old, new, why, by_provider=False, **_target(replaces))


def _create(record: Mapping[str, Any], in_cloud: Sequence[Mapping[str, Any]]) -> Step:
    if record.get("importId"):
        return _step("create", record, f"imports {record['importId']}")
    name = (record.get("inputs") or {}).get("name")
    for kept in in_cloud:
        if kept["type"] == record["type"] and name and (kept.get("inputs") or {}).get("name") == name:
            return _step("refuse", record, f"409: {name!r} exists (kept by an earlier destroy); import it")
    return _step("create", record)


def _update(old: Mapping[str, Any], new: Mapping[str, Any], rules: Rules, provider: Mapping[str, Any] | None) -> Step:
    ignored = list(new.get("ignoreChanges") or ())
    # Most resources of an update are unchanged: one comparison of their whole inputs settles them.
    unchanged = _same(old.get("inputs"), new.get("inputs"))
    changed = [
        p
        for p in ([] if unchanged else changed_paths(old.get("inputs"), new.get("inputs")))
        if not any(matches(p, pattern) for pattern in ignored)
    ]
    if not changed:
        return _step("update" if old.get("protect") != new.get("protect") else "same", new)
    forced = rules.replaces_on(new, changed, provider)
    if forced:
        return _replace(old, new, "changes " + ", ".join(sorted(set(forced))), by_provider=True)
    forced = [p for p in changed if any(matches(p, pattern) for pattern in new.get("replaceOnChanges") or ())]
    if forced:
        return _replace(old, new, "replaceOnChanges: " + ", ".join(forced), by_provider=False)
    refused = rules.refuses(old, new, changed)
    if refused:
        return _step("refuse", new, "; ".join(refused))
    return _step("update", new, "changes " + ", ".join(changed))


def fixed_name(record: Mapping[str, Any]) -> str | None:
    """The name the program gives the cloud or cluster object (none: the provider names it)."""
    inputs = record.get("inputs") or {}
    if record["type"].startswith("kubernetes:"):
        metadata = inputs.get("metadata") or {}
        return f"{metadata.get('namespace') or ''}/{metadata['name']}" if metadata.get("name") else None
    name = inputs.get("name") or inputs.get("accountId")
    return str(name) if isinstance(name, str) else None


def _replace(
    old: Mapping[str, Any], new: Mapping[str, Any], why: str, *, by_provider: bool, elsewhere: bool = False
) -> Step:
    """A replacement: refused if protected; for a named object, delete-before-replace is what the program set,
    else what the provider answers: it asks for it only when its own diff replaces a named object, so a
    replacement caused by `replaceOnChanges` or a replaced provider creates first and finds the name taken,
    unless the new object is created somewhere else (`elsewhere`: another cluster)."""
    if old.get("protect") and new.get("protect"):
        return _step("refuse", new, f"replace ({why}) of a protected resource: `pulumi state unprotect` first")
    name = fixed_name(new)
    same_name = not elsewhere and name is not None and name == fixed_name(old)
    explicit = new.get("deleteBeforeReplace")
    delete_first = explicit if explicit is not None else by_provider and name is not None
    if same_name and not delete_first:
        return _step("refuse", new, f"replace ({why}) creates before deleting: {name!r} exists (409/AlreadyExists)")
    if same_name and old.get("retainOnDelete"):
        return _step("refuse", new, f"replace ({why}) keeps the old {name!r} (retainOnDelete): the create collides")
    return _step("replace", new, why)


def _deletes(
    gone: Sequence[Mapping[str, Any]], state: Mapping[str, Mapping[str, Any]], result: Transition
) -> list[Step]:
    """Deletes in reverse dependency order. A protected resource refuses its delete, and so stays, and so do the
    resources it depends on (they wait for it); the rest go, dependents first."""
    edges = dependents(state)
    gone_urns = {r["urn"] for r in gone}
    refused = {r["urn"] for r in gone if r.get("protect")}
    # Whatever a refused resource depends on waits for it: it is never reached.
    waiting: set[str] = set()
    for urn in gone_urns - refused:
        if closure([urn], edges) & refused:
            waiting.add(urn)
    steps: list[Step] = []
    by_name_order = {urn: i for i, urn in enumerate(_destroy_urns(state))}
    for record in sorted(gone, key=lambda r: by_name_order[r["urn"]]):
        urn = record["urn"]
        if urn in refused:
            steps.append(_step("refuse", record, "delete of a protected resource: `pulumi state unprotect` first"))
        elif urn in waiting:
            continue
        elif record.get("retainOnDelete"):
            steps.append(_step("forget", record, "retainOnDelete: removed from the state, kept in the cloud"))
            result.retained.append(record)
        else:
            steps.append(_step("delete", record))
    return steps


def _step(op: str, record: Mapping[str, Any], why: str = "") -> Step:
    return Step(op, record["urn"], record["type"], record["name"], why)  # type: ignore[arg-type]


def _destroy_urns(state: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """URNs in an order the engine may delete them: every resource after all that depend on it."""
    edges = dependents(state)
    order: list[str] = []
    done: set[str] = set()

    def visit(urn: str) -> None:
        if urn in done:
            return
        done.add(urn)
        for nxt in sorted(edges[urn]):
            visit(nxt)
        order.append(urn)

    for urn in sorted(state):
        visit(urn)
    return order


def destroy_order(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of `records` in an order `pulumi destroy` may delete them (dependents first)."""
    state = {r["urn"]: r for r in records}
    return [str(state[urn]["name"]) for urn in _destroy_urns(state)]
