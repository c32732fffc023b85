"""Lifecycle scenarios for dev and prod: the first `up`, each kind of update from today's deployed state, and
`pulumi destroy`, judged by the engine model (offline/lifecycle.py) and the catalogue (catalogue.py).

Expected steps are written out by hand from the stack files: which node pools, queues and namespaces a change
creates, replaces or deletes, and which steps the engine refuses.
"""

from __future__ import annotations

from typing import Any

from tests.lifecycle.catalogue import CATALOGUE
from tests.lifecycle.conftest import Records, changed, step

NODE_POOL = "gcp:container/nodePool:NodePool"
CALENDAR = "gcp:compute/futureReservation:FutureReservation"


def types_of(records: Records, names: list[str]) -> dict[str, str]:
    by_name = {r["name"]: r["type"].rsplit(":", 1)[-1] for r in records}
    return {name: by_name[name] for name in names}


def only(steps: Any, op: str) -> list[str]:
    return sorted(s.name for s in steps.of(op))


# --- day 0: the first `up` -----------------------------------------------------------------------------------


def test_first_up_creates_everything_and_breaks_no_rule(deployed: dict[str, Records]) -> None:
    for stack, records in deployed.items():
        steps = step([], records)
        assert steps.refused == [], stack
        assert len(steps.of("create")) == len(records), stack
        assert CATALOGUE.breaches(records, {}) == [], stack


# --- day 1 and 2: updates ------------------------------------------------------------------------------------


def _slices(count: int, pool: str) -> Any:
    def change(config: dict[str, Any]) -> None:
        for entry in config["tpu-stack:tpuPools"]:
            if entry["name"] == pool:
                entry["slices"] = count

    return change


def test_dev_slices_3_to_5_to_3(deployed: dict[str, Records]) -> None:
    five = changed("dev", _slices(5, "multislice"))
    grow = step(deployed["dev"], five)
    assert grow.refused == []
    assert only(grow, "create") == ["multislice-3", "multislice-4"]
    # 2 more v5e 2x4 slices = 16 more chips, none of them in a team's share: the cohort's pool grows from 8 to 24
    # chips in place (no queue is recreated), and the dashboard shows the new slices.
    assert only(grow, "update") == ["monitoring-dashboard", "queues-cohort-tpu-stack"]
    cohort = next(r for r in five if r["name"] == "queues-cohort-tpu-stack")
    (multislice,) = [f for f in cohort["inputs"]["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "multislice"]
    assert multislice["resources"] == [{"name": "google.com/tpu", "nominalQuota": 24}]
    assert only(grow, "replace") == [] and only(grow, "delete") == []
    shrink = step(five, deployed["dev"])
    assert shrink.refused == []
    assert only(shrink, "delete") == ["multislice-3", "multislice-4"]
    assert only(shrink, "create") == [] and only(shrink, "replace") == []


def test_prod_adds_train_slices_but_refuses_to_delete_them(deployed: dict[str, Records]) -> None:
    four = changed("prod", _slices(4, "train"))
    grow = step(deployed["prod"], four)
    assert grow.refused == []
    assert only(grow, "create") == ["train-2", "train-3"]
    shrink = step(four, deployed["prod"])
    assert only(shrink, "delete") == []
    assert only(shrink, "refuse") == ["train-2", "train-3"]
    assert all("pulumi state unprotect" in line for line in shrink.refused)
