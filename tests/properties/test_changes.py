"""For every change a team may make to a deployed stack (tests/properties/changes.py), what `pulumi up` would do (the
engine model of offline/lifecycle.py over the catalogue's rules) keeps what users count on: a resize or an extension
keeps every running slice, workload policy and flavor; whatever a change replaces or deletes, the plan diff names in
words; a protected stack refuses exactly what would replace or delete; and the new config keeps the stack's promises
(quotas within chips, the catalogue's rules)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offline import plandiff
from offline.lifecycle import transition
from tests.lifecycle.catalogue import CATALOGUE
from tests.properties import expected
from tests.properties.budget import RUNS, budget
from tests.properties.changes import EXTENDS, REWORKS, Change, changes
from tests.properties.plans import run
from tests.properties.stacks import stacks


def plan_json(plan: Any) -> dict[str, Any]:
    return {"project": plan.project, "stack": plan.stack, "resources": plan.resources, "outputs": plan.outputs,
            "violations": []}  # fmt: skip


def promises_broken(change: Change) -> list[str]:
    before, after = run(change.before), run(change.after)
    steps = transition(before.resources, after.resources, CATALOGUE)
    problems = []
    if change.kind in EXTENDS:
        old, new = change.slices or (0, 0)
        group = next((p for p in change.before.pools if p.name == change.group), None)
        legacy = bool(group and group.entry.get("legacyFirstSliceName"))
        removed = expected.slice_names(str(change.group), range(new, old))
        if (
            "tpu-stack:saxml" in change.before.config
            and change.before.config["tpu-stack:saxml"]["pool"] == change.group
        ):
            removed |= {f"saxml-model-servers-{i}" for i in range(new, old)}  # one JobSet per slice (docs/serving.md)
        # A calendar-mode request cannot change: a resized group gets a new one, and its running slices move to it.
        moved = (
            expected.slice_names(group.name, range(min(old, new)), legacy=legacy) | {f"{group.name}-calendar"}
            if group is not None and group.calendar and change.slices
            else set()
        )
        problems += expected.capacity_kept(
            steps.steps, deleted_slices=removed, replaced=moved, protected=change.before.protected
        )
    diff = plandiff.diff_stack(change.before.stack, plan_json(before), plan_json(after))
    records = {**diff.records("base"), **diff.records("head")}
    text = plandiff.render_stack(diff)
    problems += expected.said_in_words(diff, text, records)
    # What the change must do to the slices, by the provider's schema: in the engine's steps and in the plan diff.
    promise = expected.promised(change)
    protected = change.before.protected
    problems += expected.steps_as_promised(promise, steps.steps, records, protected=protected, where="engine")
    problems += expected.steps_as_promised(promise, diff.steps, records, protected=protected, where="plan diff")
    # The comment's steps are the engine's: one model, two readers (the same program on both sides: no aliases).
    engine, commented = {(s.urn, s.op) for s in steps.steps if s.op != "same"}, {(s.urn, s.op) for s in diff.steps}
    for urn, op in sorted(engine ^ commented):
        problems.append(
            f"{op} of {urn.rsplit('::', 1)[-1]}: {'only the engine' if (urn, op) in engine else 'only the plan diff'}"
        )
    kept = {p.name for p in change.before.pools} & {p.name for p in change.after.pools}
    problems += expected.promise_said(promise, text, protected=protected, groups_kept=kept)
    if change.before.protected:
        unprotected = transition(
            expected.without_protect(before.resources), expected.without_protect(after.resources), CATALOGUE
        )
        problems += expected.protected_refuses(steps, unprotected)
    problems += expected.quotas_within_chips(change.after, after.resources)
    problems += [f"catalogue: {line}" for line in CATALOGUE.breaches(after.resources, after.outputs)]
    return problems


ON_TPU7X = ("reshape", "remove-group")
"""Changes drawn once more on stacks of TPU7x groups only: a multi-host TPU7x group's slices name its workload policy,
which a new shape replaces and a removal deletes."""


@pytest.mark.parametrize("kind", [*EXTENDS, *REWORKS, *(f"{k}:tpu7x" for k in ON_TPU7X)])
@budget("changes")
@given(data=st.data())
def test_every_change_a_team_may_make_keeps_what_users_count_on(kind: str, data: st.DataObject) -> None:
    name, _, versions = kind.partition(":")
    drawn = stacks(versions=(versions,)) if versions else stacks()
    change = data.draw(drawn.flatmap(lambda drawn: changes(drawn, name)), label="change")
    RUNS.kinds[f"change:{kind}"] += 1
    with RUNS.timed("changes"):
        problems = promises_broken(change)
        assert not problems, "\n".join(problems)
