"""For every stack config a team may write (tests/properties/stacks.py), the program runs, and what it declares keeps
the promises the stack makes: Kueue never hands out chips the node pools do not hold, every example workload fits a
node of the capacity it is sent to and can be admitted there, the policy pack finds no mandatory violation in either
view of the real engine, and the lifecycle catalogue's rules hold for a first `up`."""

from __future__ import annotations

from hypothesis import given

from components.workloads import workloads
from offline.lifecycle import transition
from tests.lifecycle.catalogue import CATALOGUE
from tests.properties import expected
from tests.properties.budget import RUNS, budget
from tests.properties.plans import mandatory, model, run
from tests.properties.stacks import Drawn, stacks


def promises_broken(drawn: Drawn) -> list[str]:
    """One line per promise the program breaks for `drawn` (it must not raise either)."""
    plan = run(drawn)
    problems = expected.quotas_within_chips(drawn, plan.resources)
    problems += expected.capacity_stated(drawn, plan.resources, plan.outputs)
    problems += expected.workloads_fit(drawn, plan.resources, workloads(model(drawn).manager_queues))
    problems += mandatory(drawn, plan)
    declared = {r["type"] for r in plan.resources}
    problems += [f"catalogue: no replacement rule for {t}" for t in sorted(declared - set(CATALOGUE.replaces))]
    problems += [f"catalogue: {line}" for line in CATALOGUE.breaches(plan.resources, plan.outputs)]
    problems += [f"first up: {line}" for line in transition([], plan.resources, CATALOGUE).refused]
    return problems


@budget("configs")
@given(drawn=stacks())
def test_every_config_a_team_may_write_keeps_the_stacks_promises(drawn: Drawn) -> None:
    RUNS.kinds.update(features(drawn))
    with RUNS.timed("configs"):
        assert promises_broken(drawn) == []


def features(drawn: Drawn) -> list[str]:
    """What a drawn config has, for the run's summary: its TPU versions, provisioning modes and parts."""
    config = drawn.config
    found = {f"tpu:{p.shape.version}" for p in drawn.pools} | {f"mode:{p.provisioning}" for p in drawn.pools}
    found |= {"calendar" for p in drawn.pools if p.calendar} | {"multi-host" for p in drawn.pools if p.shape.multi_host}
    found |= {"scaleToZero" for p in drawn.pools if p.entry.get("scaleToZero")}
    queues = config.get("tpu-stack:queues", {})
    parts = {
        "ladders": "ladders" in queues,
        "teams": "teams" in queues,
        "placement": "placement" in queues,
        "hostResources": "hostResources" in queues,
        "saxml": "tpu-stack:saxml" in config,
        "vllm": "tpu-stack:serving" in config,
        "multikueue": "tpu-stack:multiKueue" in config,
        "protected": drawn.protected,
    }
    return sorted(found | {name for name, present in parts.items() if present})
