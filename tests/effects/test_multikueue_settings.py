"""A MultiKueue manager's settings, as the stack writes them into Kueue's Configuration, held to their effect on a
workload that waits and on one that is disrupted, against Kueue v0.19.2's rules (tests/effects/controllers.py).
Every expected time is worked out by hand from those rules; times are seconds.

The multiregion fixture's manager dispatches to two workers, tpu-mr-east5 and tpu-mr-japan. Each setting is run
beside an alternative value, which must come out differently.
"""

from __future__ import annotations

import dataclasses

import pytest

from components.kueue_install import controller_config
from tests.effects.controllers import (
    ALL_AT_ONCE,
    INCREMENTAL,
    Dispatched,
    LostWorker,
    MultiKueue,
    RemoteCopy,
    dispatch,
    garbage_collected,
    worker_lost,
)
from tests.fixtures import stack_config

MINUTE, HOUR = 60, 3600
EAST, JAPAN = "tpu-mr-east5", "tpu-mr-japan"


def stack() -> MultiKueue:
    return MultiKueue.of(controller_config(stack_config("multiregion")))


def test_the_settings_the_stack_writes() -> None:
    """Kueue's own defaults, written down (apis/config/v1beta2/defaults.go): GC every minute, origin `multikueue`, a
    worker lost for 15 minutes, every worker at once. Field names as configuration_types.go MultiKueue spells them."""
    assert controller_config(stack_config("multiregion"))["multiKueue"] == {
        "gcInterval": "1m0s",
        "origin": "multikueue",
        "workerLostTimeout": "15m0s",
        "dispatcherName": ALL_AT_ONCE,
    }
    assert stack() == MultiKueue(gc_interval=60, origin="multikueue", worker_lost_timeout=900, dispatcher=ALL_AT_ONCE)
    assert stack() == MultiKueue.of({"multiKueue": {}})
    assert "multiKueue" not in controller_config(stack_config("prod"))  # a single cluster has no MultiKueue


def with_(**changes: object) -> MultiKueue:
    return dataclasses.replace(stack(), **changes)  # type: ignore[arg-type]


# ---- workerLostTimeout: how long a workload stays on a worker the manager cannot reach -------------------------


@pytest.mark.parametrize(
    ("timeout", "short", "for_good"),
    [(None, None, 1500), (5 * MINUTE, 900, 900), (HOUR, None, 4200)],
)
def test_worker_lost_timeout_a_running_workload_outlives_a_short_loss(
    timeout: int | None, short: int | None, for_good: int
) -> None:
    """Disrupted: a JobSet runs on east5; the manager loses east5 at 600 s. Back at 1200 (10 minutes): with the
    stack's 15 minutes the workload stays (east5's admitted copy is seen again and its run goes on). Lost for good:
    at 600 + 900 = 1500 the manager sets the check to Retry, evicts and queues the workload again, and it is
    dispatched to japan. With 5 minutes the short loss already re-dispatched it at 900, while its pods still ran on
    east5: two runs of one job, both writing its checkpoints, until east5 is back and its copy deleted. With an hour a
    region lost for good holds the workload until 4200."""
    settings = stack() if timeout is None else with_(worker_lost_timeout=timeout)
    assert worker_lost(settings, admitted=True, lost_at=600, back_at=1200) == LostWorker(short)
    assert worker_lost(settings, admitted=True, lost_at=600, back_at=None) == LostWorker(for_good)


@pytest.mark.parametrize(("timeout", "admitted_waiting"), [(None, None), (5 * MINUTE, 900)])
def test_worker_lost_timeout_a_waiting_workload(timeout: int | None, admitted_waiting: int | None) -> None:
    """Waiting, admitted: a flex-start JobSet admitted on east5 whose pods wait there for nodes; the manager loses
    east5 from 600 to 1200. The stack keeps it: east5's request for nodes goes on. 5 minutes would re-dispatch it at
    900 and start the wait for capacity again in japan, east5's request still open until east5 is back.
    Waiting, not admitted (copies pending in both workers' queues): the rule applies only to a workload admitted on
    the lost worker (check Ready), so nothing happens at any timeout, even for a worker lost for good: the copy in
    japan's queue keeps waiting and may be admitted there."""
    settings = stack() if timeout is None else with_(worker_lost_timeout=timeout)
    assert worker_lost(settings, admitted=True, lost_at=600, back_at=1200) == LostWorker(admitted_waiting)
    assert worker_lost(settings, admitted=False, lost_at=600, back_at=None) == LostWorker(None)


# ---- gcInterval: when a copy whose manager workload is gone is deleted --------------------------------------------


@pytest.mark.parametrize(("interval", "deleted_at"), [(None, 2460), (10 * MINUTE, 3000), (0, None)])
def test_gc_interval_a_deleted_workloads_copy_stops_after_its_worker_is_back(
    interval: int | None, deleted_at: int | None
) -> None:
    """Disrupted: `train` runs on east5; the manager loses east5 at 600 s and the user deletes `train` at 900 (the
    manager deletes copies only on workers it reaches). east5 is back at 2430. The stack's collector runs every
    minute: the first run with east5 connected, at 2460, deletes the copy and its JobSet, freeing east5's slices.
    Every 10 minutes: at 3000. Off (0): the copy runs on, holding east5's TPUs, until its job ends or someone
    deletes it there. `serve`, a copy whose manager workload still exists, is never touched."""
    settings = stack() if interval is None else with_(gc_interval=interval)
    copies = [RemoteCopy("train", settings.origin), RemoteCopy("serve", settings.origin)]
    expected = {} if deleted_at is None else {"train": deleted_at}
    assert garbage_collected(settings, copies, on_manager={"serve"}, reachable_from=2430) == expected


@pytest.mark.parametrize(("interval", "deleted_at"), [(None, 120), (0, None)])
def test_gc_interval_a_deleted_workloads_waiting_copy_leaves_the_queue(
    interval: int | None, deleted_at: int | None
) -> None:
    """Waiting: `train` waits in japan's queue (japan unreachable at the moment the user deleted it on the manager,
    back at 90 s). The collector's second run, at 120, deletes the copy; off, it stays queued and would be admitted
    when japan's quota frees, a run nobody asked for."""
    settings = stack() if interval is None else with_(gc_interval=interval)
    collected = garbage_collected(settings, [RemoteCopy("train", settings.origin)], on_manager=set(), reachable_from=90)
    assert collected == ({} if deleted_at is None else {"train": deleted_at})


# ---- origin: whose copies the collector may delete ----------------------------------------------------------------


@pytest.mark.parametrize(("other_origin", "deleted"), [("staging", {"orphan"}), ("multikueue", {"orphan", "theirs"})])
def test_origin_the_collector_deletes_only_its_own_managers_copies(other_origin: str, deleted: set[str]) -> None:
    """A worker holds this manager's copies of `mine` (its workload exists: waiting or running) and of `orphan` (its
    workload deleted while the worker was lost), and a copy `theirs` made by another manager. The collector deletes
    `orphan` and keeps `mine`. It keeps `theirs` when the other manager labels its copies with another origin; with
    the same origin, `multikueue` (Kueue's default, the stack's), it deletes `theirs` at every run, running or not,
    since this manager has no workload of that name. So a worker serves one manager: the stack's workers are
    clusters it creates for its own manager, and a second manager pointed at one must set another origin."""
    settings = stack()
    copies = [
        RemoteCopy("mine", settings.origin),
        RemoteCopy("orphan", settings.origin),
        RemoteCopy("theirs", other_origin),
    ]
    collected = garbage_collected(settings, copies, on_manager={"mine"}, reachable_from=0)
    assert collected == dict.fromkeys(deleted, 60)


# ---- dispatcherName: which workers get a copy, and when ----------------------------------------------------------

FOUR = ("a", "b", "c", "d")
"""Four workers, in the MultiKueueConfig's order: the incremental dispatcher's step is three."""


@pytest.mark.parametrize("dispatcher", [None, INCREMENTAL])
def test_dispatcher_the_fixtures_two_workers_get_their_copies_at_once(dispatcher: str | None) -> None:
    """Waiting: the multiregion manager's two workers; only japan has the capacity (admits 60 s after its copy
    arrives). Both get their copies at 0 and japan admits at 60, with either dispatcher: two workers fit in the
    incremental dispatcher's first round of three."""
    settings = stack() if dispatcher is None else with_(dispatcher=dispatcher)
    assert dispatch(settings, (EAST, JAPAN), {JAPAN: 60}) == Dispatched(JAPAN, 60, {EAST: 0, JAPAN: 0})


@pytest.mark.parametrize(
    ("dispatcher", "expected"),
    [
        (None, Dispatched("d", 60, {"a": 0, "b": 0, "c": 0, "d": 0})),
        (INCREMENTAL, Dispatched("d", 361, {"a": 0, "b": 0, "c": 0, "d": 301})),
    ],
)
def test_dispatcher_a_waiting_workload_reaches_the_worker_with_capacity_at_once(
    dispatcher: str | None, expected: Dispatched
) -> None:
    """Waiting, four workers, only the fourth (d) with capacity: all at once, d has its copy at 0 and admits at 60.
    Incremental: a, b, c first; d only in the second round, just after 5 minutes (301), admitting at 361."""
    settings = stack() if dispatcher is None else with_(dispatcher=dispatcher)
    assert dispatch(settings, FOUR, {"d": 60}) == expected


@pytest.mark.parametrize(
    ("dispatcher", "expected"),
    [
        (None, Dispatched("d", 1560, {"b": 1500, "c": 1500, "d": 1500})),
        (INCREMENTAL, Dispatched("d", 1861, {"b": 1500, "c": 1500, "d": 1801})),
    ],
)
def test_dispatcher_a_workload_from_a_lost_worker_is_dispatched_again_at_once(
    dispatcher: str | None, expected: Dispatched
) -> None:
    """Disrupted: the workload ran on a, lost at 600 s; at 1500 (15 minutes) the manager queues it again. All at once:
    b, c and d (a is unreachable) get copies at 1500, d admits at 1560. Incremental: the first round nominates a, b
    and c, a among them though unreachable (the config's workers, reachable or not); d only at 1801, admitting at
    1861."""
    settings = stack() if dispatcher is None else with_(dispatcher=dispatcher)
    redispatched = worker_lost(settings, admitted=True, lost_at=600, back_at=None).redispatched_at
    assert redispatched == 1500
    assert dispatch(settings, FOUR, {"d": 60}, at=redispatched, unreachable=frozenset({"a"})) == expected
