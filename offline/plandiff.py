"""What merging a pull request changes, as one Markdown comment: the base branch's plans against the head's.

Both sides are offline plans (`build/<stack>/plan.json` of `python -m offline preview`), so the comment works for
pull requests from forks, which get no cloud identity. Per stack: the capacity and quota changes per pool group
and team (plan.json's `summary`), the replacements and the steps the platform would refuse, called out first; the
resources added, changed (which inputs, old -> new) and removed, a chart's rendered objects collapsed by chart;
the policy findings of the head, with what is new and what is resolved. Which change replaces a resource is the
engine's step model (offline/lifecycle.py) over the providers' rules (offline/catalogue.py).

`python -m offline diff --base DIR --head DIR [--out FILE]`: DIR is a build folder (`build/`, one `<stack>/plan.json`
per stack) or one stack's folder. The text is data for a comment, never instructions: the workflow that posts it
adds its own marker and posts nothing else.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offline import summary
from offline.catalogue import CATALOGUE, Catalogue
from offline.lifecycle import Step, matches, transition
from offline.report import describe
from offline.stack_files import stack_files as stack_files_of

Record = Mapping[str, Any]
MAX_BYTES = 60_000
"""Bytes of UTF-8 the comment may take (`→` and `…` are 3 bytes each). GitHub refuses comments over 65,536
characters; the rest is the posting workflow's marker and lines, and it cuts what it posts at this same size."""
NOTE_BYTES = 1_000
"""Kept free under MAX_BYTES for the note that names the stacks cut."""
MAX_ITEMS = 40
"""Entries per list before `… and N more`: the plans in the artifact hold everything."""
MAX_PATHS = 8
"""Changed inputs shown per resource."""
PLANS_ARTIFACT = "the run's `plan-diff-plans` artifact holds both plans"
EXIT_OK, EXIT_UNSAFE, EXIT_USAGE = 0, 1, 2


class _Rules:
    """The catalogue, except that a type it has no rule for is reported instead of stopping the comment: the
    catalogue's own test fails on such a type, and the reviewer should still see the rest of the diff."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self.unknown: set[str] = set()

    def replaces_on(self, resource: Record, changed: Sequence[str], provider: Record | None) -> list[str]:
        try:
            return self.catalogue.replaces_on(resource, changed, provider)
        except KeyError:
            self.unknown.add(str(resource["type"]))
            return []

    def refuses(self, old: Record, new: Record, changed: Sequence[str]) -> list[str]:
        return self.catalogue.refuses(old, new, changed)


@dataclass
class StackDiff:
    """One stack's plans and the steps between them."""

    stack: str
    base: Mapping[str, Any] | None
    head: Mapping[str, Any] | None
    steps: list[Step] = field(default_factory=list)
    declared: tuple[bool | None, bool | None] = (None, None)
    """Whether the base and the head have the stack's file (None: not known): a side that has it but no plan is a
    preview that failed, not a new or removed stack."""
    renamed: dict[str, str] = field(default_factory=dict)
    """Base URN -> head URN of resources the head declares under an alias."""
    unknown_types: set[str] = field(default_factory=set)

    def records(self, side: str) -> dict[str, Record]:
        plan = self.base if side == "base" else self.head
        found = {str(r["urn"]): r for r in (plan or {}).get("resources", [])}
        if side == "base":
            found = {self.renamed.get(urn, urn): record for urn, record in found.items()}
        return found

    def of(self, *ops: str) -> list[Step]:
        return [step for step in self.steps if step.op in ops]


def load_plans(directory: Path) -> dict[str, dict[str, Any]]:
    """Stack -> plan of a build folder (`<stack>/plan.json` each) or of one stack's folder."""
    files = [directory / "plan.json"] if (directory / "plan.json").is_file() else sorted(directory.glob("*/plan.json"))
    plans = {}
    for path in files:
        plan = json.loads(path.read_text())
        plans[str(plan["stack"])] = plan
    return plans


def stack_files(project: Path) -> set[str]:
    """The stacks a project folder has a `Pulumi.<stack>.yaml` for."""
    return set(stack_files_of(project))


def _alias_urn(record: Record, alias: Mapping[str, Any], stack: str, project: str) -> str:
    """The URN an alias spec names, built as plan.json builds URNs (the parent's own type, `$`, the type)."""
    if alias.get("urn"):
        return str(alias["urn"])
    kind = str(alias.get("type") or record["type"])
    parent = None if alias.get("noParent") else alias.get("parentUrn") or record.get("parent")
    if parent:
        kind = f"{str(parent).split('::')[2].split('$')[-1]}${kind}"
    stack, project = str(alias.get("stack") or stack), str(alias.get("project") or project)
    return f"urn:pulumi:{stack}::{project}::{kind}::{alias.get('name') or record['name']}"


def _renamed(base: Sequence[Record], head: Sequence[Record], stack: str, project: str) -> dict[str, str]:
    """Base URN -> head URN where a head resource names a base one among its aliases (the engine keeps it)."""
    base_urns = {str(r["urn"]) for r in base}
    head_urns = {str(r["urn"]) for r in head}
    found: dict[str, str] = {}
    for record in head:
        if record["urn"] in base_urns:
            continue
        for alias in record.get("aliases") or ():
            urn = _alias_urn(record, alias, stack, project)
            if urn in base_urns and urn not in head_urns and urn not in found:
                found[urn] = str(record["urn"])
                break
    return found


def _aliased(record: Record, renamed: Mapping[str, str]) -> Record:
    """A base record under the URNs its head counterparts have: its own, and those it names (parent, provider,
    dependencies), so that a provider or parent renamed under an alias is the same one, as the engine sees it."""

    def urn(value: Any) -> Any:
        return renamed.get(value, value) if isinstance(value, str) else value

    return {
        **record,
        "urn": urn(record["urn"]),
        "parent": urn(record.get("parent")),
        "provider": urn(record.get("provider")),
        "dependencies": [urn(d) for d in record.get("dependencies") or ()],
    }


def diff_stack(stack: str, base: Mapping[str, Any] | None, head: Mapping[str, Any] | None) -> StackDiff:
    """The steps from the base plan to the head plan, as the engine would take them on a stack at the base."""
    result = StackDiff(stack, base, head)
    old = list((base or {}).get("resources", []))
    new = list((head or {}).get("resources", []))
    project = str((head or base or {}).get("project", ""))
    result.renamed = _renamed(old, new, stack, project)
    old = [_aliased(r, result.renamed) for r in old]
    rules = _Rules(CATALOGUE)
    result.steps = sorted((s for s in transition(old, new, rules).steps if s.op != "same"), key=lambda s: s.urn)
    result.unknown_types = rules.unknown
    return result


def unguarded(diff: StackDiff) -> list[Step]:
    """The replacements and deletes of a change that also drops `protect` from resources that had it: the engine
    refuses a replacement only when the old and the new resource are both protected (pulumi/pulumi
    pkg/resource/deploy/step_generator.go, `new.Protect && old.Protect`; offline/lifecycle.py models it), and a
    delete only when the state's resource is protected, which the same `up` has just cleared. So dropping protection
    (`tpu-stack:protected` removed) must land and deploy alone, before any change that replaces or deletes."""
    old, new = diff.records("base"), diff.records("head")
    if not any(r.get("protect") and not new[urn].get("protect") for urn, r in old.items() if urn in new):
        return []
    return diff.of("replace", "delete")


def unguarded_line(diff: StackDiff) -> str | None:
    """One line for the check's log, or None when the stack's change is safe in this respect."""
    steps = unguarded(diff)
    if not steps:
        return None
    kinds = sorted({"replaces" if s.op == "replace" else "deletes" for s in steps}, reverse=True)
    names = sorted(f"{s.type} {s.name}" for s in steps)
    shown = ", ".join(names[:MAX_PATHS]) + (f" and {len(names) - MAX_PATHS} more" if len(names) > MAX_PATHS else "")
    return (
        f"error: stack {diff.stack}: this change drops protection and {' and '.join(kinds)} {shown}; land the change "
        "that drops protection on its own and deploy it first, then this one"
    )


# --- text ------------------------------------------------------------------------------------------------------


def _code(text: object) -> str:
    """Inline code that stays inline code whatever the text holds (backticks, pipes in tables)."""
    value = str(text).replace("\n", " ").replace("|", "\\|")
    fence = "``" if "`" in value else "`"
    return f"{fence}{value}{fence}" if fence == "`" else f"{fence} {value} {fence}"


def _value(value: Any) -> str | None:
    """A short scalar as shown in `old → new` (`unset` where a side has none); None for structures and long text:
    the input's path says enough."""
    if value is None:
        return "unset"
    if isinstance(value, dict | list):
        return None
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 80 else None


def _named(items: list[Any]) -> dict[str, Any] | None:
    """Name -> item of a list whose items are mappings with distinct names (a ClusterQueue's flavors and their
    resources, a Pod's containers); None for any other list."""
    named = {item["name"]: item for item in items if isinstance(item, Mapping) and isinstance(item.get("name"), str)}
    return named if items and len(named) == len(items) else None


def _leaves(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, old, new) of every leaf that differs (a key with dots in it, like a label, stays one part). Lists of
    named items are compared by name (`flavors[name=spot]`), so a reordered list is one `(order)` line, not every
    item's values read as changed; other lists item by item, as `lifecycle.changed_paths` does."""
    found: list[tuple[str, Any, Any]] = []
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            found += _leaves(old.get(key), new.get(key), f"{path}.{key}" if path else str(key))
        return found
    before, after = (_named(old), _named(new)) if isinstance(old, list) and isinstance(new, list) else (None, None)
    if before is not None and after is not None:
        if [n for n in before if n in after] != [n for n in after if n in before]:
            found.append((f"{path} (order)", ", ".join(before), ", ".join(after)))
        for name in [*before, *(n for n in after if n not in before)]:
            found += _leaves(before.get(name), after.get(name), f"{path}[name={name}]")
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [leaf for i, (a, b) in enumerate(zip(old, new, strict=True)) for leaf in _leaves(a, b, f"{path}[{i}]")]
    return [] if json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True) else [(path, old, new)]


def _changes(old: Record, new: Record) -> list[str]:
    """The inputs that differ, `old → new` where short (those under ignoreChanges left out, as the engine does),
    and a protect flip."""
    ignored = list(new.get("ignoreChanges") or ())
    leaves = [
        leaf
        for leaf in _leaves(old.get("inputs"), new.get("inputs"))
        if not any(matches(leaf[0], pattern) for pattern in ignored)
    ]
    shown = []
    for path, before, after in leaves[:MAX_PATHS]:
        values = (_value(before), _value(after))
        shown.append(_code(path) + (f" {_code(values[0])} → {_code(values[1])}" if None not in values else ""))
    if len(leaves) > MAX_PATHS:
        shown.append(f"and {len(leaves) - MAX_PATHS} more")
    if bool(old.get("protect")) != bool(new.get("protect")):
        shown.append(f"`protect` {str(bool(old.get('protect'))).lower()} → {str(bool(new.get('protect'))).lower()}")
    return shown


def _why(step: Step) -> str:
    """The engine model's reason, with the provider's replacement named as such."""
    if step.op == "replace" and step.why.startswith("changes "):
        paths = step.why.removeprefix("changes ").split(", ")
        return "its provider replaces it when " + ", ".join(_code(p) for p in paths) + " change"
    return step.why


def _kind(record: Record) -> str:
    return str((record.get("inputs") or {}).get("kind") or str(record["type"]).rsplit(":", 1)[-1])


def _chart_name(records: Mapping[str, Record], record: Record) -> str:
    parent = records.get(str(record.get("parent")))
    return str(parent["name"]) if parent else str(record["name"]).split(":", 1)[0]


def _capped(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_ITEMS:
        return lines
    return [
        *lines[:MAX_ITEMS],
        f"- … and {len(lines) - MAX_ITEMS} more ({PLANS_ARTIFACT})",
    ]


def _resource_lines(diff: StackDiff, steps: list[Step], side: str, *, detail: bool) -> list[str]:
    """One bullet per resource; a chart's rendered objects as one bullet per chart with counts by kind."""
    old, new = diff.records("base"), diff.records("head")
    # A refused delete has only its base record: every step's record is looked up on `side` first.
    records = {**new, **old} if side == "base" else {**old, **new}
    lines: list[str] = []
    rendered: dict[str, list[Step]] = defaultdict(list)
    by_provider: dict[str, list[Step]] = defaultdict(list)
    for step in steps:
        if any(reason in step.why for reason in ("moves to provider ", "its provider ")):
            by_provider[step.why].append(step)
    shared = {why: group for why, group in by_provider.items() if len(group) > 1}
    for why, group in shared.items():
        kinds = Counter(_kind(records[s.urn]) for s in group)
        charts = sorted({_chart_name(records, records[s.urn]) for s in group if records[s.urn].get("rendered")})
        from_charts = sum(1 for s in group if records[s.urn].get("rendered"))
        line = f"- {len(group)} resources, each: {why}: {_counted(kinds)}"
        if charts:
            line += f" ({from_charts} of them rendered by " + ", ".join(_code(c) for c in charts) + ")"
        lines.append(line)
    for step in steps:
        record = records[step.urn]
        if step.why in shared:
            continue
        if record.get("rendered"):
            rendered[_chart_name(records, record)].append(step)
            continue
        line = f"- {_code(step.type)} {_code(step.name)}"
        described = describe(dict(record)) if step.op in ("create", "delete", "forget") else ""
        notes = [described] if described else []
        if step.why and (step.op in ("replace", "refuse", "forget") or step.why.startswith("imports")):
            notes.append(_why(step))
        changes = _changes(old[step.urn], new[step.urn]) if detail and step.urn in old and step.urn in new else []
        if changes:
            notes.append("inputs: " + ", ".join(changes))
        lines.append(line + (": " + "; ".join(notes) if notes else ""))
    for chart, chart_steps in sorted(rendered.items()):
        kinds = Counter(_kind(records[s.urn]) for s in chart_steps)
        line = f"- {_code(chart)} renders {len(chart_steps)} of these: {_counted(kinds)}"
        if detail:
            paths = Counter(
                leaf[0]
                for s in chart_steps
                if s.urn in old and s.urn in new
                for leaf in _leaves(old[s.urn].get("inputs"), new[s.urn].get("inputs"))
            )
            if paths:
                line += "; inputs: " + ", ".join(_code(p) for p, _n in paths.most_common(MAX_PATHS))
        lines.append(line)
    return _capped(lines)


def _counted(kinds: Counter[str]) -> str:
    """`3 Role, 1 Service`: most first."""
    return ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def _totals(diff: StackDiff) -> str:
    counts = Counter(step.op for step in diff.steps)
    parts = [
        f"{counts['create']} to create",
        f"{counts['update']} to update",
        f"{counts['replace']} to replace",
        f"{counts['delete'] + counts['forget']} to delete",
    ]
    if counts["refuse"]:
        parts.append(f"**{counts['refuse']} refused**")
    return ", ".join(parts)


_CAPACITY_FIELDS = (
    ("machineType", "machine type"),
    ("topology", "topology"),
    ("provisioning", "provisioning"),
    ("reservation", "reservation"),
    ("slices", "slices"),
    ("vms", "VMs"),
    ("chips", "chips"),
    ("zone", "zone"),
    ("usedBy", "used by"),
    ("ladder", "ladder"),
)


def _capacity_text(key: str, value: Any) -> str:
    """One capacity field as the preview's table shows it (a ladder's rung as `multislice 1/2`)."""
    if key == "ladder" and isinstance(value, Mapping):
        return f"{value['name']} {value['rung']}/{value['of']}"
    return str(value or "-")


def _shape(pool: Mapping[str, Any]) -> str:
    zone = pool.get("zone") or "cluster zones"
    return (
        f"{pool['machineType']} {pool['topology']}, {summary.provisioning_text(pool)}, {pool['slices']} slice(s), "
        f"{pool['vms']} VM(s), {pool['chips']} chips, {zone}, for {pool.get('usedBy') or '-'}"
    )


NODE_POOL = "gcp:container/nodePool:NodePool"
SLICE_GROUP = "tpu-stack:index:TpuSlicePools"


def _slices_of(diff: StackDiff, op: str) -> dict[str, list[str]]:
    """Pool group -> the node pools `op` touches (create, delete, replace), by the group's TpuSlicePools."""
    side = "base" if op == "delete" else "head"
    records = diff.records(side)
    found: dict[str, list[str]] = {}
    for step in diff.of(op):
        record = records.get(step.urn)
        parent = records.get(str((record or {}).get("parent") or ""))
        if step.type == NODE_POOL and parent is not None and parent["type"] == SLICE_GROUP:
            found.setdefault(str(parent["name"]), []).append(step.name)
    return found


def _running_slices_deleted(diff: StackDiff, old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, str]:
    """Pool group -> a warning, where a group that stays deletes node pools for more than fewer slices: a node pool
    whose name changed is deleted with its running slice and created again (GKE cannot rename one)."""
    deleted, created = _slices_of(diff, "delete"), _slices_of(diff, "create")
    warnings = {}
    for group, names in deleted.items():
        if group not in old or group not in new:
            continue
        dropped = old[group]["slices"] - new[group]["slices"]
        if len(names) > max(dropped, 0):
            made = ", ".join(_code(n) for n in sorted(created.get(group, ())))
            warnings[group] = (
                f"**deletes running slice(s)** {', '.join(_code(n) for n in sorted(names))}"
                + (f" and creates {made}" if made else "")
                + ": a node pool cannot be renamed; a group deployed with one slice keeps its name with "
                "`legacyFirstSliceName: true`"
            )
    return warnings


CALENDAR = "gcp:compute/futureReservation:FutureReservation"


def _running_slices_replaced(diff: StackDiff, old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, str]:
    """Pool group -> a warning, where a group that stays replaces node pools it runs on (a new slice shape or
    provisioning mode, or a calendar-mode group whose request changes with its size or window)."""
    replaced = _slices_of(diff, "replace")
    records = diff.records("head")
    calendar = {
        str(records[str(records[s.urn].get("parent"))]["name"])
        for s in diff.of("replace")
        if s.type == CALENDAR and str(records[s.urn].get("parent")) in records
    }
    warnings = {}
    for group, names in replaced.items():
        if group in old and group in new:
            warnings[group] = (
                f"**replaces running slice(s)** {', '.join(_code(n) for n in sorted(names))}: deleted and created "
                "again, what runs on them stops"
                + (
                    "; a calendar-mode request cannot change: the group's slices move to a new request, submitted now "
                    "and usable once Compute approves it"
                    if group in calendar
                    else ""
                )
            )
    return warnings


def _capacity_lines(base: summary.Summary, head: summary.Summary, diff: StackDiff) -> list[str]:
    old, new = base.get("capacity") or {}, head.get("capacity") or {}
    renamed = _running_slices_deleted(diff, old, new)
    replaced = _running_slices_replaced(diff, old, new)
    rows = []
    for name in [*old, *(n for n in new if n not in old)]:
        if name not in new:
            rows.append(f"| {_code(name)} | removed (was {_shape(old[name])}) |")
        elif name not in old:
            rows.append(f"| {_code(name)} | added: {_shape(new[name])} |")
        else:
            changed = [
                f"{label} {_capacity_text(key, old[name].get(key))} → {_capacity_text(key, new[name].get(key))}"
                for key, label in _CAPACITY_FIELDS
                if old[name].get(key) != new[name].get(key)
            ]
            if name in renamed:
                changed.append(renamed[name])
            if name in replaced:
                changed.append(replaced[name])
            if changed:
                rows.append(f"| {_code(name)} | {', '.join(changed)} |")
    if not rows:
        return []
    totals = []
    for key, label in (("chips", "TPU chips"), ("slices", "slices"), ("vms", "VMs")):
        before, after = (sum(p[key] for p in side.values()) for side in (old, new))
        totals.append(f"{label} {before} → {after}" if before != after else f"{label} {after}")
    return ["**Capacity**", "", "| pool group | change |", "|---|---|", *rows, "", f"In all: {', '.join(totals)}.", ""]


def _quota_cells(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, cohorts: tuple[bool, bool] = (True, True)
) -> tuple[str, str]:
    """Quota and borrowing limit of one team and flavor: `8`, or `8 → 16`; `—` on a side without it. `cohorts`:
    whether each side's queues are in a cohort (a borrowing limit means nothing outside one: `-`)."""

    def cell(key: str) -> str:
        def text(side: Mapping[str, Any] | None, in_cohort: bool) -> str:
            if side is None:
                return "—"
            return summary.chips_text(side[key], in_cohort=in_cohort) if key == "borrowingLimit" else str(side[key])

        old, new = text(before, cohorts[0]), text(after, cohorts[1])
        return old if old == new else f"{old} → {new}"

    return cell("nominalQuota"), cell("borrowingLimit")


def _queue_lines(base: summary.Summary, head: summary.Summary) -> list[str]:
    old = base.get("queues") or {"teams": {}, "cohortQuota": {}, "cohort": None}
    new = head.get("queues") or {"teams": {}, "cohortQuota": {}, "cohort": None}
    rows = []
    for team in [*old["teams"], *(t for t in new["teams"] if t not in old["teams"])]:
        before, after = old["teams"].get(team), new["teams"].get(team)
        if before and after:
            where = [
                f"{key} {before[key]} → {after[key]}"
                for key in ("namespace", "localQueue", "clusterQueue")
                if before[key] != after[key]
            ]
            if where:
                rows.append(f"| {_code(team)} | (queues) | {', '.join(where)} | |")
        note = " (team added)" if before is None else " (team removed)" if after is None else ""
        flavors_before = (before or {}).get("flavors", {})
        flavors_after = (after or {}).get("flavors", {})
        for flavor in [*flavors_before, *(f for f in flavors_after if f not in flavors_before)]:
            in_cohort = (old.get("cohort") is not None, new.get("cohort") is not None)
            quota, limit = _quota_cells(flavors_before.get(flavor), flavors_after.get(flavor), in_cohort)
            if flavors_before.get(flavor) != flavors_after.get(flavor):
                rows.append(f"| {_code(team)}{note} | {_code(flavor)} | {quota} | {limit} |")
    cohort = new.get("cohort") or old.get("cohort")
    pools = [*old["cohortQuota"], *(p for p in new["cohortQuota"] if p not in old["cohortQuota"])]
    for pool in pools:
        before_chips, after_chips = old["cohortQuota"].get(pool, 0), new["cohortQuota"].get(pool, 0)
        if before_chips != after_chips:
            rows.append(
                f"| cohort {_code(cohort)} (no team's share) | {_code(pool)} | {before_chips} → {after_chips} | |"
            )
    if old.get("cohort") != new.get("cohort"):
        rows.append(f"| (cohort) | | {old.get('cohort') or '—'} → {new.get('cohort') or '—'} | |")
    if not rows:
        return []
    return [
        "**Quotas per team** (chips of `google.com/tpu`; borrowing limit `unlimited` when none is set)",
        "",
        "| team | flavor | quota | borrowing limit |",
        "|---|---|---|---|",
        *rows,
        "",
    ]


def _finding(violation: Mapping[str, Any], records: Mapping[str, Record]) -> str:
    record = records.get(str(violation.get("urn") or ""))
    where = f"{_code(record['type'])} {_code(record['name'])}" if record else "stack"
    return f"[{violation['level']}] {_code(violation['policy'])}: {where}: {violation['message']}"


def _key(violation: Mapping[str, Any], records: Mapping[str, Record]) -> tuple[str, str, str]:
    record = records.get(str(violation.get("urn") or ""))
    return (str(violation["policy"]), str(record["name"]) if record else "stack", str(violation["message"]))


def _policy_lines(diff: StackDiff) -> list[str]:
    """The head's findings: every mandatory one and what this change adds; what it resolves; advisory ones it
    leaves as they were are counted only."""
    # Base violations name base URNs, before any alias renamed them.
    old_records = {str(r["urn"]): r for r in (diff.base or {}).get("resources", [])}
    new_records = diff.records("head")
    old = {_key(v, old_records): v for v in (diff.base or {}).get("violations", [])}
    new = {_key(v, new_records): v for v in (diff.head or {}).get("violations", [])}
    mandatory = sum(1 for v in new.values() if v["level"] == "mandatory")
    added = [k for k in new if k not in old]
    resolved = [k for k in old if k not in new]
    head = (
        f"**Policy findings** of this pull request: {mandatory} mandatory, {len(new) - mandatory} advisory "
        f"({len(added)} new, {len(resolved)} resolved)"
    )
    lines = _capped(
        [f"- new: {_finding(new[k], new_records)}" for k in added]
        + [f"- {_finding(v, new_records)}" for k, v in new.items() if v["level"] == "mandatory" and k not in added]
        + [f"- resolved: {_finding(old[k], old_records)}" for k in resolved]
    )
    return [head, *lines, ""]


def _summaries(diff: StackDiff) -> tuple[summary.Summary, summary.Summary] | str:
    """Base and head summaries ({} for a side without the stack), or why they cannot be compared."""
    found: list[summary.Summary] = []
    for side, plan in (("base", diff.base), ("head", diff.head)):
        if plan is None:
            found.append({})
            continue
        try:
            found.append(summary.of_plan(plan))
        except summary.SummaryUnavailable as error:
            return f"Capacity and quotas not compared: the {side} plan has no summary ({error})."
    return found[0], found[1]


def headline(diff: StackDiff) -> str:
    """What happens to the stack, in a few words: the step counts, or why there are none."""
    base_declared, head_declared = diff.declared
    if diff.head is None:
        if head_declared is False:
            return "stack file removed on this pull request"
        return "preview failed on this pull request" if head_declared else "no plan on this pull request"
    if diff.base is None and base_declared:
        return "preview of the base failed"
    title = "new stack, " if diff.base is None else ""
    return f"{title}{_totals(diff) if diff.steps else 'no changes'}"


_NOT_COMPARED = {
    "stack file removed on this pull request": "Nothing here says what `pulumi up` would do to it; a removed file "
    "does not destroy the stack.",
    "preview failed on this pull request": "Its preview wrote no plan (see the job log): nothing here says what "
    "`pulumi up` would do to it.",
    "no plan on this pull request": "Its stack file was removed, or its preview failed (see the job log): nothing "
    "here says what `pulumi up` would do to it.",
    "preview of the base failed": "The base branch has this stack file, but its preview wrote no plan (see the job "
    "log): there is nothing to compare this pull request's plan with.",
}


def render_stack(diff: StackDiff) -> str:
    """One stack's section: what needs attention first (capacity, quotas, replacements, refusals), then the
    resources, then the policy findings."""
    title = headline(diff)
    if title in _NOT_COMPARED:
        return "\n".join([f"### Stack {_code(diff.stack)}: {title}", "", _NOT_COMPARED[title], ""])
    lines = [f"### Stack {_code(diff.stack)}: {title}", ""]
    unsafe = unguarded(diff)
    if unsafe:
        lines += [
            f"**Protection dropped with replacements or deletes** ({len(unsafe)}): resources lose `protect` in the "
            "same change that replaces or deletes these, which the engine then carries out; this check fails. Land "
            "the change that drops protection on its own and deploy it first.",
            "",
            *_resource_lines(diff, unsafe, "base", detail=False),
            "",
        ]
    summaries = _summaries(diff)
    if isinstance(summaries, str):
        lines += [summaries, ""]
    else:
        lines += _capacity_lines(*summaries, diff) + _queue_lines(*summaries)
    replaced = diff.of("replace")
    if replaced:
        lines += [
            f"**Replaced** ({len(replaced)}): deleted and created again; what runs on them stops",
            "",
            *_resource_lines(diff, replaced, "head", detail=True),
            "",
        ]
    refused = diff.of("refuse")
    if refused:
        lines += [
            f"**Refused** ({len(refused)}): `pulumi up` would stop at these",
            "",
            *_resource_lines(diff, refused, "head", detail=False),
            "",
        ]
    for title, ops, side, detail in (
        ("Added", ("create",), "head", False),
        ("Changed in place", ("update",), "head", True),
        ("Removed", ("delete", "forget"), "base", False),
    ):
        steps = diff.of(*ops)
        if steps:
            lines += [f"**{title}** ({len(steps)})", "", *_resource_lines(diff, steps, side, detail=detail), ""]
    if diff.renamed:
        lines += [f"Renamed under an alias (kept, not replaced): {len(diff.renamed)}.", ""]
    if diff.unknown_types:
        unknown = ", ".join(_code(t) for t in sorted(diff.unknown_types))
        lines += [f"No replacement rule in `offline/catalogue.py` for {unknown}: their updates may replace.", ""]
    lines += _policy_lines(diff)
    return "\n".join(lines)


def _protected(diff: StackDiff) -> bool:
    return any(r.get("protect") for plan in (diff.head, diff.base) for r in (plan or {}).get("resources", []))


def _has(stacks: Collection[str] | None, stack: str) -> bool | None:
    return None if stacks is None else stack in stacks


def _size(text: str) -> int:
    return len(text.encode())


def _cut(text: str, room: int) -> str:
    """The lines of `text` that fit in `room` bytes, never half a line or half a character."""
    kept = text.encode()[: max(room, 0)].decode(errors="ignore")
    return kept[: kept.rfind("\n") + 1] if len(kept) < len(text) else kept


def render(
    base: Mapping[str, Mapping[str, Any]],
    head: Mapping[str, Mapping[str, Any]],
    *,
    base_label: str = "base",
    head_label: str = "head",
    base_stacks: Collection[str] | None = None,
    head_stacks: Collection[str] | None = None,
) -> str:
    """The whole comment: a line per stack, then one section per stack of either side, protected stacks first
    (their refusals matter most); within MAX_BYTES, with a note naming the stacks whose sections were cut.
    `base_stacks`/`head_stacks`: the stacks each side has a file for, when known."""
    names = set(base) | set(head) | set(base_stacks or ()) | set(head_stacks or ())
    diffs = [diff_stack(stack, base.get(stack), head.get(stack)) for stack in sorted(names)]
    for diff in diffs:
        diff.declared = (_has(base_stacks, diff.stack), _has(head_stacks, diff.stack))
    diffs.sort(key=lambda diff: not _protected(diff))
    text = "\n".join(
        [
            "## Plan diff",
            "",
            f"What merging this pull request changes in each stack: offline plans of the base {_code(base_label)} "
            f"and of the merge with {_code(head_label)}, compared resource by resource as the engine would update a "
            "stack deployed at the base (no cloud access; replacements by the providers' rules in "
            "`offline/catalogue.py`).",
            "",
            *(f"- {_code(diff.stack)}: {headline(diff)}" for diff in diffs),
            "",
        ]
    )
    cut: list[str] = []
    for diff in diffs:
        section = "\n" + render_stack(diff)
        room = MAX_BYTES - NOTE_BYTES - _size(text)
        if cut or _size(section) > room:
            text += _cut(section, room) if not cut else ""
            cut.append(diff.stack)
        else:
            text += section
    if cut:
        stacks = ", ".join(_code(stack) for stack in cut)
        text = (
            text.rstrip("\n") + f"\n\n… cut at the size GitHub allows: {stacks} not shown in full; {PLANS_ARTIFACT}.\n"
        )
    return text.rstrip("\n") + "\n"


def main(args: argparse.Namespace) -> int:
    """`python -m offline diff` (arguments parsed in offline/__main__.py): exit 0 with the comment written; 1 with
    the comment written and a line per stack that drops protection in the same change as a replace or delete; 2 when
    neither side has a plan."""
    base, head = load_plans(args.base), load_plans(args.head)
    if not base and not head:
        print(
            f"error: no plan.json under {args.base} or {args.head}; run `python -m offline preview` first",
            file=sys.stderr,
        )
        return EXIT_USAGE
    text = render(
        base,
        head,
        base_label=args.base_label or str(args.base),
        head_label=args.head_label or str(args.head),
        base_stacks=stack_files(args.base_stacks) if args.base_stacks else None,
        head_stacks=stack_files(args.head_stacks) if args.head_stacks else None,
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    stacks = sorted(set(base) | set(head))
    unsafe = [line for stack in stacks if (line := unguarded_line(diff_stack(stack, base.get(stack), head.get(stack))))]
    for line in unsafe:
        print(line, file=sys.stderr)
    return EXIT_UNSAFE if unsafe else EXIT_OK
