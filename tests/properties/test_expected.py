"""The properties' own checks (tests/properties/expected.py) find what they are there to find: each passes on the dev
fixture stack and names a breach planted in its plan. Expectations written by hand from the dev fixture: multislice
is 3 flex-start v6e 2x4 slices (ct6e-standard-4t, 2 VMs of 4 chips each), its spot rung one slice of the same shape,
flex-v6e one ct6e-standard-4t VM."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.workloads import workloads
from offline.engine import Plan
from offline.lifecycle import Step
from tests.fixtures import stack_config, stack_data, stack_plan
from tests.properties import expected
from tests.properties.stacks import Drawn, Pool, Shape

DEV = Drawn("dev", stack_data("dev"), [])


@pytest.fixture(scope="module")
def plan() -> Plan:
    return stack_plan("dev")


def _records(plan: Plan) -> list[dict[str, Any]]:
    return copy.deepcopy(plan.resources)


def _named(records: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(r for r in records if r["name"] == name)


def test_the_dev_fixture_keeps_every_promise(plan: Plan) -> None:
    assert expected.quotas_within_chips(DEV, plan.resources) == []
    assert expected.workloads_fit(DEV, plan.resources, workloads(stack_config("dev"))) == []


def test_node_pools_are_read_as_gke_runs_them(plan: Plan) -> None:
    """multislice-0: a flex-start 2x4 slice in one zone, 2 VMs of 4 chips; flex-v6e: one ct6e-standard-4t VM."""
    pools = {p.name: p for p in expected.node_pools(plan.resources)}
    assert (pools["multislice-0"].max_nodes, pools["multislice-0"].chips, pools["multislice-0"].group) == (
        2, 8, "multislice",
    )  # fmt: skip
    assert pools["multislice-0"].labels["cloud.google.com/gke-flex-start"] == "true"
    assert pools["multislice-spot"].labels["cloud.google.com/gke-spot"] == "true"
    assert ("cloud.google.com/gke-spot", "true", "NoSchedule") in pools["multislice-spot"].taints
    assert (pools["flex-v6e"].chips, pools["flex-v6e"].labels["cloud.google.com/gke-tpu-topology"]) == (4, "2x2")


def test_a_quota_above_the_chips_of_its_flavor_is_named(plan: Plan) -> None:
    """research holds 8 chips of multislice-spot, the spot rung's one slice of 8 chips: one more is beyond it."""
    records = _records(plan)
    research = _named(records, "queues-clusterqueue-research-cluster-queue")
    for flavor in research["inputs"]["spec"]["resourceGroups"][0]["flavors"]:
        if flavor["name"] == "multislice-spot":
            flavor["resources"][0]["nominalQuota"] = 9
    assert expected.quotas_within_chips(DEV, records) == [
        "flavor multislice-spot (tpu-dev): quota 9 chips, but its node pools ['multislice-spot'] hold at most 8"
    ]


def test_a_flavor_that_selects_no_node_pool_is_named(plan: Plan) -> None:
    records = _records(plan)
    _named(records, "queues-resourceflavor-flex-v6e")["inputs"]["spec"]["nodeLabels"]["pool"] = "nowhere"
    problems = expected.quotas_within_chips(DEV, records)
    assert problems[0].startswith("flavor flex-v6e (tpu-dev) selects no TPU node pool")
    assert problems[1] == "flavor flex-v6e (tpu-dev): quota 4 chips, but its node pools [] hold at most 0"


def _workloads() -> list[Any]:
    return workloads(stack_config("dev"))


def test_a_workload_that_selects_what_its_nodes_lack_is_named(plan: Plan) -> None:
    found = copy.deepcopy(_workloads())
    job = next(w for w in found if w.name == "flex-v6e-job")
    selector = job.objects[0]["spec"]["template"]["spec"]["nodeSelector"]
    selector["cloud.google.com/gke-tpu-topology"] = "2x4"
    assert expected.workloads_fit(DEV, plan.resources, found) == [
        "flex-v6e-job on flex-v6e: its node selector and the flavor disagree on ['cloud.google.com/gke-tpu-topology']"
    ]
    selector["cloud.google.com/gke-tpu-topology"] = "2x2"
    selector["example.com/rack"] = "r1"
    assert expected.workloads_fit(DEV, plan.resources, found) == [
        "flex-v6e-job on flex-v6e: node pool flex-v6e lacks the selected labels {'example.com/rack': 'r1'}"
    ]


def test_requests_above_what_a_node_offers_are_named(plan: Plan) -> None:
    """A ct6e-standard-4t VM has 180 vCPUs; GKE keeps 0.06 + 0.01 + 0.01 + 0.25% of 176 = 0.52 of them. (research, which
    runs the job, has no bucket grant in dev: no Cloud Storage FUSE sidecar.)"""
    found = copy.deepcopy(_workloads())
    job = next(w for w in found if w.name == "flex-v6e-job")
    job.objects[0]["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "180"
    (problem,) = expected.workloads_fit(DEV, plan.resources, found)
    assert problem == "flex-v6e-job on flex-v6e: requests 180 cpu, a ct6e-standard-4t node offers 179.48"


def test_a_taint_left_untolerated_is_named(plan: Plan) -> None:
    """The spot rung's flavor tolerates its gke-spot taint; without it a ladder workload cannot land there."""
    records = _records(plan)
    flavor = _named(records, "queues-resourceflavor-multislice-spot")["inputs"]["spec"]
    flavor["tolerations"] = [t for t in flavor["tolerations"] if t["key"] != "cloud.google.com/gke-spot"]
    problems = expected.workloads_fit(DEV, records, _workloads())
    assert problems and all("taint ('cloud.google.com/gke-spot', 'true', 'NoSchedule')" in p for p in problems)


def test_a_workload_for_a_queue_the_stack_lacks_or_that_cannot_reach_its_chips_is_named(plan: Plan) -> None:
    found = copy.deepcopy(_workloads())
    job = next(w for w in found if w.name == "flex-v6e-job")
    job.objects[0]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "nobody-queue"
    assert (
        expected.workloads_fit(DEV, plan.resources, found)[0] == "flex-v6e-job: no LocalQueue nobody-queue in research"
    )
    records = _records(plan)
    research = _named(records, "queues-clusterqueue-research-cluster-queue")
    research["inputs"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 0
    research["inputs"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 0
    assert "flex-v6e-job on flex-v6e: needs 4 chips of flex-v6e; research-cluster-queue reaches {'tpu-dev': 0}" in (
        expected.workloads_fit(DEV, records, _workloads())
    )


def _step(op: str, name: str, kind: str = expected.NODE_POOL, why: str = "") -> Step:
    return Step(op, f"urn:pulumi:dev::tpu-stack::{kind}::{name}", kind, name, why)  # type: ignore[arg-type]


def test_a_resize_that_replaces_or_keeps_what_it_should_not_is_named() -> None:
    steps = [
        _step("delete", "train-2"),
        _step("replace", "train-0", why="changes name"),
        _step("delete", "queues-resourceflavor-train", expected.FLAVOR),
    ]
    removed = expected.slice_names("train", range(2, 4))
    assert removed == {"train-2", "train-3"}
    assert expected.capacity_kept(steps, deleted_slices=removed, protected=False) == [
        "replaces running capacity train-0 (gcp:container/nodePool:NodePool): changes name",
        "deletes running capacity queues-resourceflavor-train (kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor)",
        "keeps the slice train-3 it removes",
    ]
    assert expected.slice_names("train", range(2), legacy=True) == {"train", "train-1"}


def test_a_protected_stack_that_deletes_or_forgets_to_refuse_is_named() -> None:
    class Steps:
        def __init__(self, *steps: Step) -> None:
            self.steps = list(steps)

        def of(self, *ops: str) -> list[Step]:
            return [s for s in self.steps if s.op in ops]

    unprotected = Steps(_step("delete", "train-1"), _step("replace", "burst"))
    assert expected.protected_refuses(Steps(_step("refuse", "train-1"), _step("refuse", "burst")), unprotected) == []
    assert expected.protected_refuses(Steps(_step("delete", "train-1")), unprotected) == [
        "deletes train-1 (gcp:container/nodePool:NodePool) in a protected stack",
        "does not refuse burst",
        "does not refuse train-1",
    ]


def _change(kind: str, before: list[Pool], after: list[Pool], group: str, stack: str = "dev") -> Any:
    from tests.properties.changes import Change

    return Change(kind, Drawn(stack, {}, before), Drawn(stack, {}, after), group)


V6E_2X4 = Shape("v6e", "ct6e-standard-4t", 4, "2x4", 8, 2)
V6E_4X4 = Shape("v6e", "ct6e-standard-4t", 4, "4x4", 16, 4)
TPU7X_2X2X2 = Shape("tpu7x", "tpu7x-standard-4t", 4, "2x2x2", 8, 2)
TPU7X_2X2X4 = Shape("tpu7x", "tpu7x-standard-4t", 4, "2x2x4", 16, 4)


def test_a_change_that_does_not_replace_the_slices_the_provider_replaces_is_named() -> None:
    """Spot for on-demand on a 2-slice group (`nodeConfig.spot` is ForceNew): both slices replaced. An engine model
    whose rules miss it updates them in place; a plan diff that misses it names neither."""
    before = [Pool("train", V6E_2X4, "on-demand", {"name": "train", "slices": 2})]
    after = [Pool("train", V6E_2X4, "spot", {"name": "train", "slices": 2, "provisioning": "spot"})]
    promise = expected.promised(_change("spot", before, after, "train"))
    assert promise == expected.Promised(replaced=frozenset({"train-0", "train-1"}))
    steps = [_step("update", "train-0"), _step("replace", "train-1"), _step("replace", "other-0")]
    assert expected.steps_as_promised(promise, steps, {}, protected=False, where="engine") == [
        "engine: update of node pool train-0, must replace",
        "engine: replace of node pool other-0, which the change must keep (at most updated in place)",
    ]
    assert expected.steps_as_promised(promise, steps[1:2], {}, protected=True, where="plan diff") == [
        "plan diff: no step of node pool train-0, must refuse",
        "plan diff: replace of node pool train-1, must refuse",
    ]
    text = (
        "1 to replace\n\n**Capacity**\n| train | **replaces running slice(s)** `train-1` |\n\n"
        "**Replaced** (1): `train-1`"
    )
    assert expected.promise_said(promise, text, protected=False, groups_kept={"train"}) == [
        "the plan diff does not name slice train-0 under Replaced",
        "the capacity section does not say that running slice train-0 is replaced",
    ]


def test_what_each_kind_of_change_must_do_to_the_slices() -> None:
    """Written from the provider's schema: a resize creates or deletes only its slices (a calendar-mode group's kept
    slices move to the new request, consumed by name); a new shape replaces every slice and a TPU7x group's workload
    policy; a removal deletes them; a team's change touches none."""
    two = [Pool("train", V6E_2X4, "on-demand", {"name": "train", "slices": 2, "legacyFirstSliceName": True})]
    four = [Pool("train", V6E_2X4, "on-demand", {"name": "train", "slices": 4, "legacyFirstSliceName": True})]
    grow = _change("grow", two, four, "train")
    grow.slices = (2, 4)
    assert expected.promised(grow) == expected.Promised(created=frozenset({"train-2", "train-3"}))
    shrink = _change("shrink", four, two, "train")
    shrink.slices = (4, 2)
    assert expected.promised(shrink) == expected.Promised(deleted=frozenset({"train-2", "train-3"}))
    window = {"startTime": "2030-01-01T00:00:00+00:00", "endTime": "2030-02-01T00:00:00+00:00"}
    calendar = [Pool("cal", V6E_2X4, "reservation", {"name": "cal", "slices": 1, "futureReservation": window})]
    bigger = [Pool("cal", V6E_2X4, "reservation", {"name": "cal", "slices": 2, "futureReservation": window})]
    resized = _change("grow", calendar, bigger, "cal")
    resized.slices = (1, 2)
    assert expected.promised(resized) == expected.Promised(created=frozenset({"cal-1"}), replaced=frozenset({"cal-0"}))
    ironwood = [Pool("iw", TPU7X_2X2X2, "spot", {"name": "iw", "slices": 1})]
    reshaped = [Pool("iw", TPU7X_2X2X4, "spot", {"name": "iw", "slices": 1})]
    assert expected.promised(_change("reshape", ironwood, reshaped, "iw")) == expected.Promised(
        replaced=frozenset({"iw-0"}), policies={"iw": "replace"}
    )
    v6e = [Pool("v", V6E_2X4, "spot", {"name": "v", "slices": 1})]
    assert expected.promised(_change("reshape", v6e, [Pool("v", V6E_4X4, "spot", {"name": "v"})], "v")) == (
        expected.Promised(replaced=frozenset({"v-0"}))
    )
    assert expected.promised(_change("remove-group", ironwood, [], "iw")) == expected.Promised(
        deleted=frozenset({"iw-0"}), policies={"iw": "delete"}
    )
    assert expected.promised(_change("share", two, two, "train")) == expected.Promised()
