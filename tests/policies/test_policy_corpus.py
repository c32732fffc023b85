"""The corpus of dangerous one-field changes (tests/corpora/policy_changes.yaml): each applied to its fixture stack's
plan, the pack run as the real engine shows a deployed stack's preview to it; each must give a mandatory violation of
its policy naming the changed resource. The corpus covers every kind of resource the four stacks declare."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline import policy_check
from tests.fixtures import FIXTURE_STACKS, stack_plan

CORPUS = Path(__file__).resolve().parent.parent / "corpora" / "policy_changes.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(CORPUS.read_text())["cases"]
TEAM_CONFIG: dict[str, Any] = json.loads(policy_check.TEAM_CONFIG.read_text())
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


@pytest.fixture(scope="module")
def plans() -> dict[str, list[dict[str, Any]]]:
    return {stack: stack_plan(stack).resources for stack in FIXTURE_STACKS}


def _steps(path: str | list[str]) -> list[str | int]:
    if isinstance(path, list):
        return list(path)
    return [name if name else int(index) for name, index in _STEP.findall(path)]


def changed(resource: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    """A copy of `resource` with the case's one change."""
    resource = copy.deepcopy(resource)
    if case["path"] == "opts.protect":
        resource["protect"] = case["set"]
        return resource
    *parents, last = _steps(case["path"])
    data: Any = resource["inputs"]
    for step in parents:
        data = data[step] if isinstance(step, int) else data.setdefault(step, {})
    if case.get("delete"):
        del data[last]
    elif "append" in case:
        data.setdefault(last, []).append(case["append"])
    else:
        data[last] = case["set"]
    return resource


def evaluate(resources: list[dict[str, Any]], stack: str, policy: str | None = None) -> list[dict[str, Any]]:
    """The pack over `resources` in the deployed view, with the team's policy config; only `policy` when given."""
    config = dict(TEAM_CONFIG)
    if policy is not None:
        config |= {p.name: "disabled" for p in policy_check.load_rules().POLICIES if p.name != policy}
        config[policy] = TEAM_CONFIG.get(policy, {})
    return policy_check.evaluate(resources, stack=stack, config=config, view=policy_check.DEPLOYED)


def test_the_corpus_covers_every_kind_the_stacks_declare(plans: dict[str, list[dict[str, Any]]]) -> None:
    declared = {
        r["type"]
        for resources in plans.values()
        for r in resources
        if policy_check.analyzed(r) and not r["type"].startswith("tpu-stack:")
    }
    assert declared - {case["type"] for case in CASES} == set()


def test_the_documents_count_the_corpus_as_it_is() -> None:
    """docs/policies.md and docs/development.md state the corpus's size; a case added or removed without them fails
    here."""
    docs = Path(__file__).resolve().parents[2] / "docs"
    policies = " ".join((docs / "policies.md").read_text().split())
    development = " ".join((docs / "development.md").read_text().split())
    elsewhere = sum("reported_on" in case for case in CASES)
    kinds = len({case["type"] for case in CASES})
    assert (
        f"{len(CASES)} changes over {kinds} kinds ({len(CASES) - elsewhere} named on the changed resource, "
        f"{elsewhere} on the flavor or node pool a policy of a set of objects judges)"
    ) in policies
    assert f"{len(CASES)} dangerous one-field changes to the {', '.join(FIXTURE_STACKS)} plans" in development


@pytest.mark.parametrize("stack", FIXTURE_STACKS)
def test_the_fixture_stacks_are_clean(plans: dict[str, list[dict[str, Any]]], stack: str) -> None:
    assert [v for v in evaluate(plans[stack], stack) if v["level"] == "mandatory"] == []


@pytest.mark.parametrize("case", CASES, ids=[f"{c['type'].rsplit(':', 1)[-1]}-{c['path']}" for c in CASES])
def test_the_change_is_a_mandatory_violation_naming_the_resource(
    plans: dict[str, list[dict[str, Any]]], case: dict[str, Any]
) -> None:
    resources = plans[case["stack"]]
    matches = [i for i, r in enumerate(resources) if r["type"] == case["type"] and r["name"] == case["name"]]
    assert len(matches) == 1, f"{case['name']} names {len(matches)} resources"
    target = resources[matches[0]]
    mutated = [*resources[: matches[0]], changed(target, case), *resources[matches[0] + 1 :]]
    named = case.get("reported_on", {"type": case["type"], "name": case["name"]})
    urn = next(r["urn"] for r in resources if r["type"] == named["type"] and r["name"] == named["name"])
    assert [v for v in evaluate(resources, case["stack"], case["policy"]) if v["urn"] == urn] == []
    found = [v for v in evaluate(mutated, case["stack"], case["policy"]) if v["urn"] == urn]
    assert [v["level"] for v in found] and {v["level"] for v in found} == {"mandatory"}, found
