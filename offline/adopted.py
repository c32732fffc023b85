"""An adopted stack's first `pulumi up` in the offline preview: each import and what the update after it changes, the
chart objects that exist, and what the real engine or provider would refuse.

The program marks each existing resource with the `import` option (`cluster.adopted.imports`, components/adoption.py),
which plan.json records as `importId`. With the cluster's saved outputs (`--existing DIR`, what `tpu-stack adopt`
read) the preview judges the first update as offline/imports.py and offline/takeover.py model it; without them it
still refuses an import entry that names no resource of the program.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.config import ConfigError, StackConfig
from offline import imports, takeover
from offline.engine import Plan


@dataclass
class Judged:
    """What the preview found for an adopted stack; plan.json's `adoption`."""

    verdicts: list[imports.Verdict] = field(default_factory=list)
    takeover: takeover.Plan | None = None
    """None: no saved outputs were given, the imports are not judged."""

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"judged": self.takeover is not None}
        plan = self.takeover
        if plan is not None:
            found["firstUpEnvironment"] = plan.settings
            found["deleteBefore"] = [{"object": t.ref, "why": t.blocked} for t in plan.blocked]
            found["deleteAfter"] = [o.ref for o in plan.leftovers if o.acts]
            found["leftBehind"] = [o.ref for o in plan.leftovers if not o.acts]
            found["helmReleases"] = sorted(plan.helm_releases)
            found["unreadSecrets"] = plan.unread
        return found


def judge(plan: Plan, config: StackConfig, existing_dir: Path | None) -> list[str]:
    """Mark the plan's imports and takeovers (plan.json's `import` and `takeover` of a resource) and return one line
    per thing the real first `up` would refuse. An import entry naming no resource of the program is a config error
    (the engine would create that resource and leave the existing one alone)."""
    adopted = config.cluster.adopted
    entries = [entry.model_dump() for entry in adopted.imports] if adopted is not None else []
    if not entries:
        return []
    from offline.urns import engine_urn_of

    custom = {r["urn"] for r in plan.resources if r.get("custom")}
    unmatched = imports.unmatched(entries, {u for mock, u in engine_urn_of(plan).items() if mock in custom})
    if unmatched:
        raise ConfigError(unmatched)
    plan.adoption = Judged()
    if existing_dir is None:
        return []
    existing = imports.read_existing(existing_dir)
    verdicts = imports.verdicts(plan.resources, existing, config.project)
    taken = takeover.plan(plan.resources, existing, verdicts)
    plan.adoption = Judged(verdicts, taken)
    imported: dict[str, Mapping[str, Any]] = {v.urn: v.to_json() for v in verdicts}
    taken_over: dict[str, Mapping[str, Any]] = {t.urn: t.to_json() for t in taken.takeovers}
    for resource in plan.resources:
        if resource["urn"] in imported:
            resource["import"] = imported[resource["urn"]]
        elif resource["urn"] in taken_over:
            resource["takeover"] = taken_over[resource["urn"]]
    refused = [
        f"{v.name} ({v.type}): {c.path} {imports.show_value(c.old)} -> {imports.show_value(c.new)} would replace a "
        'resource the program imports; the engine refuses it ("previously-imported resources that still specify an '
        'ID may not be replaced"); keep the field as it is (adopted.keep) or remove the import'
        for v in verdicts
        for c in v.replaced
    ]
    refused += [
        f"{v.name} ({v.type}): import ID {v.import_id} names nothing in {existing_dir}; the import would fail "
        '("resource does not exist")'
        for v in verdicts
        if not v.existing
    ]
    return refused


def render(plan: Plan, stack: str) -> str:
    """The preview's section on an adopted stack's first update."""
    judged: Judged = plan.adoption
    imported = [r for r in plan.resources if r.get("importId")]
    lines = [f"Adoption: the first `pulumi up` imports {len(imported)} existing resources (= above)"]
    if judged.takeover is None:
        lines.append("  pass --existing DIR (the saved outputs `tpu-stack adopt` read) to judge what their update does")
        return "\n".join(lines)
    updated = sum(1 for v in judged.verdicts if v.updated)
    replaced = sum(1 for v in judged.verdicts if v.replaced)
    lines.append(f"  then updates {updated} of them in place (~ above) and replaces {replaced}")
    lines += takeover.lines(judged.takeover, stack)
    return "\n".join(lines)
