"""The program run on a drawn stack, as `make preview` runs it: the plan with the charts rendered, and the policy
pack over it in the views of the real engine (a new stack's preview, the deployed stack at rest)."""

from __future__ import annotations

import json
from typing import Any

from components.config import StackConfig, load
from offline import policy_check
from offline.engine import Plan, _engine_config, run_program
from tests.properties.stacks import Drawn

TEAM_POLICY_CONFIG: dict[str, Any] = json.loads(policy_check.TEAM_CONFIG.read_text())
"""The team's reviewed exceptions, which `make preview` and the workflows pass (policies/config.json)."""


def model(drawn: Drawn) -> StackConfig:
    return load(_engine_config(drawn.config), stack=drawn.stack)


def run(drawn: Drawn, *, known_outputs: bool = True) -> Plan:
    """The plan of the drawn stack, its charts rendered for the cluster's Kubernetes minor."""
    minor = model(drawn).cluster.kubernetes_minor
    return run_program(drawn.config, stack=drawn.stack, kubernetes_version=minor, known_outputs=known_outputs)


def mandatory(drawn: Drawn, deployed: Plan) -> list[str]:
    """Mandatory violations in either view of the real engine, one line each."""
    rules = policy_check.load_rules()
    found = []
    for view, plan in ((policy_check.DEPLOYED, deployed), (policy_check.NEW_STACK, run(drawn, known_outputs=False))):
        violations = policy_check.evaluate(
            plan.resources, stack=drawn.stack, config=TEAM_POLICY_CONFIG, rules=rules, view=view
        )
        found += [
            f"{view.name}: {v['policy']}: {v['urn'].rsplit('::', 1)[-1]}: {v['message']}"
            for v in violations
            if v["level"] == "mandatory"
        ]
    return found
