"""Each setting the stack gives a controller, held to its effect on a waiting and on a disrupted workload.

The controllers' rules are modelled from their sources (tests/effects/controllers.py); every expected time and count
below is worked out by hand from those rules and the settings the docstrings state. Kueue's own defaults stand
beside the stack's settings where the difference is the point: Kueue 0.19 waits 30 minutes to start and 30 to
recover, then evicts, deletes the pods and requeues without end.

The fixture stacks: dev's Kueue capacity is flex-start (flex-v6e, multislice) and spot (multislice-spot); prod's is a
reservation of held slices (train) and queued provisioning (burst); the multiregion manager mirrors its workers'
flex-start and queued pools. MIXED is the review's case: a reservation and a flex-start group in one cluster, for
which the previous version wrote a week to start and no recovery timeout.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from components.config.controllers import PROVISIONING_RETRY
from components.config.stack import load
from components.kueue_install import controller_config
from components.kueue_queues import provisioning_request_config
from offline.vendor import REPO
from tests.effects.controllers import (
    Provisioned,
    Waited,
    WaitForPodsReady,
    admitted_at,
    provisioning_attempts,
    queue_order,
    wait_for_capacity,
)
from tests.fixtures import stack_config

MINUTE, HOUR, DAY = 60, 3600, 86400
KUEUE_DEFAULTS = WaitForPodsReady.of({})
"""Kueue 0.19.2 with no waitForPodsReady in its configuration: what the stack ran before."""


def settings(stack: str) -> WaitForPodsReady:
    return WaitForPodsReady.of(controller_config(stack_config(stack)))


def test_the_settings_each_stack_writes() -> None:
    """dev (flex-start and spot) and the multiregion manager (its workers' flex-start and queued): two hours to
    start and two to recover; prod's held and provisioned slices: 30 minutes to start, an hour to recover. All
    requeue by creation time, after 1, 2, 4 ... at most 60 minutes, three times, and never block admission."""
    for stack in ("dev", "multiregion"):
        assert settings(stack) == WaitForPodsReady(
            timeout=2 * HOUR, recovery_timeout=2 * HOUR, backoff_base=60, backoff_max=3600, backoff_limit=3,
            timestamp="Creation", block_admission=False,
        ), stack  # fmt: skip
    assert settings("prod") == WaitForPodsReady(
        timeout=30 * MINUTE, recovery_timeout=HOUR, backoff_base=60, backoff_max=3600, backoff_limit=3,
        timestamp="Creation", block_admission=False,
    )  # fmt: skip
    # Field names as Kueue's Configuration spells them (apis/config/v1beta2/configuration_types.go json tags of
    # WaitForPodsReady and RequeuingStrategy): Kueue would ignore a misspelt one.
    assert controller_config(stack_config("prod"))["waitForPodsReady"] == {
        "timeout": "30m0s",
        "recoveryTimeout": "1h0m0s",
        "blockAdmission": False,
        "requeuingStrategy": {
            "timestamp": "Creation",
            "backoffLimitCount": 3,
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 3600,
        },
    }
    assert controller_config(stack_config("dev"))["waitForPodsReady"]["timeout"] == "2h0m0s"
    assert controller_config(stack_config("dev"))["waitForPodsReady"]["recoveryTimeout"] == "2h0m0s"


# ---- a mixed stack: reservation and flex-start in one cluster ------------------------------------------------------

MIXED = {
    "gcp:project": "proj-1234",
    "gcp:region": "us-west4",
    "tpu-stack:tpuPools": [
        {"name": "train", "machineType": "ct5lp-hightpu-4t", "topology": "4x4", "slices": 2,
         "provisioning": "reservation", "reservation": "tpu-v5e-train", "zone": "us-west4-a"},
        {"name": "flex", "machineType": "ct5lp-hightpu-4t", "provisioning": "flex-start", "zone": "us-west4-a"},
    ],
}  # fmt: skip
"""The review's case: one pool group on a reservation, one on flex-start; Kueue's setting is one for both."""
WEEK_TO_START = WaitForPodsReady(
    timeout=7 * DAY, recovery_timeout=None, backoff_base=60, backoff_max=3600, backoff_limit=3,
    timestamp="Creation", block_admission=False,
)  # fmt: skip
"""What the previous version wrote for any cluster with a flex-start or spot pool group: a week to start, recovery
timeouts off."""


def mixed(**pods_ready: Any) -> WaitForPodsReady:
    config = {**MIXED, "tpu-stack:queues": {"podsReady": pods_ready}} if pods_ready else MIXED
    return WaitForPodsReady.of(controller_config(load(config, stack="dev")))


def test_a_mixed_stack_waits_two_hours_for_flex_start_not_a_week() -> None:
    """Reservation and flex-start: the flex-start group needs two hours to start, the reserved slices thirty minutes;
    one cluster-wide setting, so two hours to start and two to recover (flex-start's), bounded both."""
    assert mixed() == WaitForPodsReady(
        timeout=2 * HOUR, recovery_timeout=2 * HOUR, backoff_base=60, backoff_max=3600, backoff_limit=3,
        timestamp="Creation", block_admission=False,
    )  # fmt: skip


def test_a_mixed_stack_gives_reserved_chips_back_in_hours_not_weeks() -> None:
    """A workload on the reserved slices whose image never pulls: with two hours to start it is evicted at 7200 s,
    readmitted after 60 s (7260), evicted at 14460, readmitted after 120 s (14580), evicted at 21780, readmitted after
    240 s (22020); the fourth timeout, at 29220 s (8h07m), finds three requeues and deactivates it. The previous
    week to start held the reserved chips until day 7 (604800 s), then 1209660, 1814580, and deactivated it at
    2419620 s, day 28."""
    assert wait_for_capacity(mixed(), capacity=None, asks_anew=False) == Waited(
        evictions=[7200, 14460, 21780], deactivated_at=29220
    )
    assert wait_for_capacity(WEEK_TO_START, capacity=None, asks_anew=False, horizon=40 * DAY) == Waited(
        evictions=[604800, 1209660, 1814580], deactivated_at=2419620
    )


def test_a_mixed_stack_gives_a_lost_reserved_slice_back() -> None:
    """A running workload whose reserved slice is lost for good: recovery two hours, evicted at 7200 s, then it
    waits to start two hours at a time (14460, 21780) and is deactivated at 29220 s, giving its quota (and the
    other slice it held) back. With recovery timeouts off it held them forever."""
    assert wait_for_capacity(mixed(), capacity=None, asks_anew=False, recovering=True) == Waited(
        evictions=[7200, 14460, 21780], deactivated_at=29220
    )
    assert wait_for_capacity(WEEK_TO_START, capacity=None, asks_anew=False, recovering=True) == Waited()


def test_a_mixed_stack_may_choose_its_own_settings() -> None:
    """queues.podsReady: 45 minutes to start, recovery without end, five requeues; written as Kueue reads them."""
    chosen = {"timeout": "45m", "recoveryTimeout": "0s", "requeueLimit": 5}
    config = load({**MIXED, "tpu-stack:queues": {"podsReady": chosen}}, stack="dev")
    assert controller_config(config)["waitForPodsReady"] == {
        "timeout": "45m0s",
        "recoveryTimeout": "0s",
        "blockAdmission": False,
        "requeuingStrategy": {
            "timestamp": "Creation",
            "backoffLimitCount": 5,
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 3600,
        },
    }
    assert mixed(timeout="45m", recoveryTimeout="0s", requeueLimit=5).recovery_timeout is None


# ---- timeout: how long an admitted workload may wait to start ---------------------------------------------------


def test_timeout_a_flex_start_workload_waits_for_its_capacity() -> None:
    """dev: GKE finds flex-start capacity 90 minutes after the pods ask. With two hours to start the workload runs at
    90m. Kueue's 30 minutes evicted it at 30m, deleting its pods (the request goes with them), readmitted it a
    minute later to ask again, evicted it at 61m (1800 + 60 + 1800 = 3660 s), readmitted at 63m, evicted at 93m,
    ...: each try lasts 30 minutes, never 90, so within 30 days it never ran."""
    assert wait_for_capacity(settings("dev"), capacity=90 * MINUTE, asks_anew=True) == Waited(ready_at=90 * MINUTE)
    old = wait_for_capacity(KUEUE_DEFAULTS, capacity=90 * MINUTE, asks_anew=True)
    assert old.ready_at is None and old.deactivated_at is None
    assert old.evictions[:4] == [1800, 3660, 5580, 7620]


def test_timeout_a_flex_start_wait_beyond_two_hours_ends_in_deactivation() -> None:
    """dev: flex-start capacity 3 hours after each request. Two hours per try: evicted at 7200, 14460 (7260 + 7200),
    21780 (14580 + 7200); the fourth timeout at 29220 s (22020 + 7200) deactivates it. A wait that long belongs on a
    queued rung (the wait is before admission there), which dev does not have."""
    assert wait_for_capacity(settings("dev"), capacity=3 * HOUR, asks_anew=True) == Waited(
        evictions=[7200, 14460, 21780], deactivated_at=29220
    )


def test_timeout_a_workload_that_cannot_start_gives_its_held_quota_back() -> None:
    """prod: an image that never pulls, on the reserved slices. 30 minutes to start, then evicted at 1800 s, 3660 s
    (+60 backoff +1800), 5580 s (+120 +1800); the fourth timeout, at 5580 + 240 + 1800 = 7620 s, finds three
    requeues already and deactivates it. Kueue's defaults evict it without end: once the backoff reaches its cap
    (the seventh eviction, at 16380 s) one eviction every 90 minutes (60 of backoff, 30 holding the slice), the
    twentieth at 16380 + 13 x 5400 = 86580 s, after the last admission within a day."""
    assert wait_for_capacity(settings("prod"), capacity=None, asks_anew=False) == Waited(
        evictions=[1800, 3660, 5580], deactivated_at=7620
    )
    old = wait_for_capacity(KUEUE_DEFAULTS, capacity=None, asks_anew=False, horizon=DAY)
    assert old.deactivated_at is None and len(old.evictions) == 20
    assert old.evictions[6:9] == [16380, 21780, 27180] and old.evictions[-1] == 86580


# ---- recoveryTimeout: how long a running workload may wait for a lost pod's replacement --------------------------


def test_recovery_timeout_a_preempted_spot_slice_is_waited_for() -> None:
    """dev: the spot slice under a running workload is preempted; Compute Engine gives the VMs back 90 minutes later.
    With two hours to recover the workload runs again at 90m. Back after 5 hours: evicted at 7200 s (its pods were
    pending anyway), readmitted on the same rung at 7260 and evicted at 14460 (two hours to start), readmitted at
    14580, and the VMs are back at 18000 s: it runs at 5h. Kueue's defaults: evicted 30 minutes after the pods
    failed (1800 s), then every 30 minutes with backoffs 60, 120, 240, 480, 960, 1920 s: evictions at 1800, 3660,
    5580, 7620, 9900, 12660, 16380 s; readmitted after the capped 3600 s backoff at 19980 s, when the VMs are back."""
    ours = settings("dev")
    assert wait_for_capacity(ours, capacity=90 * MINUTE, asks_anew=False, recovering=True) == Waited(
        ready_at=90 * MINUTE
    )
    assert wait_for_capacity(ours, capacity=5 * HOUR, asks_anew=False, recovering=True) == Waited(
        ready_at=5 * HOUR, evictions=[7200, 14460]
    )
    assert wait_for_capacity(KUEUE_DEFAULTS, capacity=5 * HOUR, asks_anew=False, recovering=True) == Waited(
        ready_at=19980, evictions=[1800, 3660, 5580, 7620, 9900, 12660, 16380]
    )


def test_recovery_timeout_a_repaired_reserved_slice_is_waited_for_an_hour() -> None:
    """prod: a repair recreates a reserved slice's VMs in 50 minutes. An hour of recovery: the workload resumes at
    50m. Kueue's 30 minutes evicted it at 30m, deleting every pod, and readmitted it at 31m to start again from
    scratch when the VMs came back at 50m."""
    assert wait_for_capacity(settings("prod"), capacity=50 * MINUTE, asks_anew=False, recovering=True) == Waited(
        ready_at=50 * MINUTE
    )
    assert wait_for_capacity(KUEUE_DEFAULTS, capacity=50 * MINUTE, asks_anew=False, recovering=True) == Waited(
        ready_at=50 * MINUTE, evictions=[1800]
    )


def test_recovery_timeout_a_slice_that_never_comes_back_ends_in_deactivation() -> None:
    """prod: a reserved slice lost for good. An hour, evicted at 3600 s; then it waits to start 30 minutes at a time:
    evictions at 3600 + 60 + 1800 = 5460 s and 5460 + 120 + 1800 = 7380 s; at 7380 + 240 + 1800 = 9420 s, three
    requeues done, it is deactivated and gives its quota back."""
    assert wait_for_capacity(settings("prod"), capacity=None, asks_anew=False, recovering=True) == Waited(
        evictions=[3600, 5460, 7380], deactivated_at=9420
    )


# ---- requeuingStrategy: where an evicted workload goes back, and after how long ----------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_requeue_an_evicted_workload_keeps_its_place(stack: str) -> None:
    """Waiting: A was created at 0 and evicted at 30m; B was submitted at 10m. With timestamp Creation A (0) still
    goes before B (600); with Kueue's Eviction A would queue behind B (1800). Disrupted: A ran since 0, lost its
    slice and was evicted at 2h; C was submitted at 1h: A (0) before C (3600) against Kueue's A (7200) after C."""
    ours = settings(stack)
    assert queue_order(ours, created=0, evicted=1800) < queue_order(ours, created=600, evicted=None)
    assert queue_order(KUEUE_DEFAULTS, created=0, evicted=1800) > queue_order(KUEUE_DEFAULTS, created=600, evicted=None)
    assert queue_order(ours, created=0, evicted=7200) < queue_order(ours, created=3600, evicted=None)
    assert queue_order(KUEUE_DEFAULTS, created=0, evicted=7200) > 3600


def test_requeue_backoff_doubles_from_a_minute_to_an_hour() -> None:
    ours = settings("prod")
    assert [ours.backoff(n) for n in range(1, 9)] == [60, 120, 240, 480, 960, 1920, 3600, 3600]


@pytest.mark.parametrize(("block", "admitted"), [(None, 600), (True, 5400)])
def test_block_admission_off_a_workload_waiting_for_capacity_stops_no_other_queue(
    block: bool | None, admitted: int
) -> None:
    """Waiting: on dev, team A's flex-start workload was admitted at 0 and waits 90 minutes for its nodes (within its
    two hours: ready at 5400 s); team B's workload fits the spot rung's quota at 600 s. With the stack's
    blockAdmission off, B is admitted at 600. On, Kueue's scheduler admits nothing while any ClusterQueue holds an
    admitted workload whose pods are not ready: B waits until A's pods are ready, 5400."""
    ours = settings("dev") if block is None else dataclasses.replace(settings("dev"), block_admission=block)
    assert ours.block_admission is (block is True)
    flex = wait_for_capacity(ours, capacity=90 * MINUTE, asks_anew=True)
    assert flex == Waited(ready_at=5400)
    assert admitted_at(ours, fits_at=600, not_ready_until=[5400]) == admitted


@pytest.mark.parametrize(("block", "admitted"), [(None, 60), (True, 3000)])
def test_block_admission_off_a_workload_recovering_a_slice_stops_no_other_queue(
    block: bool | None, admitted: int
) -> None:
    """Disrupted: on prod, a training run loses a reserved slice at 0 to a repair that takes 50 minutes (within its
    hour of recovery: ready again at 3000 s); a burst workload's quota fits at 60. Off (the stack's): admitted at
    60. On: held until the training run's pods are ready again, 3000."""
    ours = settings("prod") if block is None else dataclasses.replace(settings("prod"), block_admission=block)
    repaired = wait_for_capacity(ours, capacity=50 * MINUTE, asks_anew=False, recovering=True)
    assert repaired == Waited(ready_at=3000)
    assert admitted_at(ours, fits_at=60, not_ready_until=[3000]) == admitted
    assert not any(settings(stack).block_admission for stack in ("dev", "prod", "multiregion"))


# ---- ProvisioningRequestConfig.retryStrategy: a queued flavor's own patience --------------------------------------


def test_a_queued_request_is_retried_three_times_then_the_workload_is_deactivated() -> None:
    """prod's burst (queued): GKE fails each ProvisioningRequest 10 minutes after it is made. Attempt 1 fails at 600
    s and is made again after 60 s (660), fails at 1260, again after 120 s (1380), fails at 1980, again after 240 s
    (2220), fails at 2820: attempt 4 is beyond backoffLimitCount 3, the check is rejected and the workload
    deactivated. Had the third retry been provisioned, the workload would run after three failures."""
    (burst,) = [pool for pool in stack_config("prod").queue_pools if pool.provisioning == "queued"]
    retry = provisioning_request_config(burst)["spec"]["retryStrategy"]
    assert retry == PROVISIONING_RETRY == {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
    assert provisioning_attempts(retry, fails_after=600, attempts_that_fail=9) == Provisioned(
        failures=[600, 1260, 1980, 2820], rejected_at=2820
    )
    assert provisioning_attempts(retry, fails_after=600, attempts_that_fail=3) == Provisioned(
        failures=[600, 1260, 1980], provisioned_at=2220
    )


def _config(stack: str) -> dict[str, Any]:
    return controller_config(stack_config(stack))


def test_a_multikueue_manager_is_as_patient_as_its_workers() -> None:
    """The manager mirrors its workers' admissions (its Workload's PodsReady follows the remote job's status) and
    evicts, re-dispatching, by the same rule: manager and workers take the settings of every worker's capacity
    (flex-start and queued here: two hours each)."""
    manager, workers = _config("multiregion"), stack_config("multiregion").worker_configs
    assert (manager["waitForPodsReady"]["timeout"], manager["waitForPodsReady"]["recoveryTimeout"]) == (
        "2h0m0s",
        "2h0m0s",
    )
    assert all(controller_config(w)["waitForPodsReady"] == manager["waitForPodsReady"] for w in workers)


def test_a_worker_without_flex_start_still_waits_as_long_as_its_manager() -> None:
    """A worker whose own capacity is queued only would wait 30 minutes on its own; its manager, mirroring a
    flex-start worker too, waits two hours: the worker takes the manager's settings, so neither evicts first."""
    flex = {"name": "east", "machineType": "ct6e-standard-4t", "provisioning": "flex-start", "zone": "us-east5-b"}
    queued = {"name": "japan", "machineType": "ct6e-standard-4t", "topology": "4x4", "provisioning": "queued",
              "zone": "asia-northeast1-b"}  # fmt: skip
    workers = [
        {"name": "tpu-east5", "region": "us-east5", "tpuPools": [flex]},
        {"name": "tpu-japan", "region": "asia-northeast1", "tpuPools": [queued]},
    ]
    config = load({**MIXED, "tpu-stack:tpuPools": [], "tpu-stack:multiKueue": {"workers": workers}}, stack="dev")
    timeouts = [controller_config(c)["waitForPodsReady"]["timeout"] for c in (config, *config.worker_configs)]
    assert timeouts == ["2h0m0s", "2h0m0s", "2h0m0s"]


def test_the_docs_name_an_effect_test_of_every_setting_that_exists() -> None:
    """docs/workloads.md's table of the controllers' settings names, per row, the tests of its effect: each row names
    one, and each name is a test of the suite."""
    docs = (REPO / "docs" / "workloads.md").read_text()
    table = docs.split("| setting | stack's value | effect tests: waiting; disrupted |")[1].split("\n\n")[0]
    rows = [row for row in table.splitlines()[2:] if row.startswith("|")]
    assert len(rows) == 16
    source = "\n".join(path.read_text() for path in (REPO / "tests").rglob("test_*.py"))
    for row in rows:
        names = re.findall(r"`(test_\w+)`", row)
        assert names, row
        for name in names:
            assert f"def {name}(" in source, name
