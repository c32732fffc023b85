"""Each setting the stack gives a controller, held to its effect on a waiting and on a disrupted workload.

The controllers' rules are modelled from their sources (tests/effects/controllers.py); every expected time and count
below is worked out by hand from those rules and the settings the docstrings state. Kueue's own defaults stand
beside the stack's settings where the difference is the point: Kueue 0.19 waits 30 minutes to start and 30 to
recover, then evicts, deletes the pods and requeues without end.

The fixture stacks: dev's Kueue capacity is flex-start (flex-v6e, multislice) and spot (multislice-spot); prod's is a
reservation of held slices (train) and queued provisioning (burst); the multiregion manager mirrors its workers'
flex-start and queued pools.
"""

from __future__ import annotations

from typing import Any

import pytest

from components.config.controllers import PROVISIONING_RETRY
from components.kueue_install import controller_config
from components.kueue_queues import provisioning_request_config
from tests.effects.controllers import (
    Provisioned,
    Waited,
    WaitForPodsReady,
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
    """dev and the multiregion manager wait on flex-start or spot capacity: a week to start, no recovery timeout;
    prod's held and provisioned slices: 30 minutes to start, an hour to recover. All requeue by creation time, after
    1, 2, 4 ... at most 60 minutes, three times, and never block admission."""
    for stack in ("dev", "multiregion"):
        assert settings(stack) == WaitForPodsReady(
            timeout=7 * DAY, recovery_timeout=None, backoff_base=60, backoff_max=3600, backoff_limit=3,
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
    assert controller_config(stack_config("dev"))["waitForPodsReady"]["timeout"] == "168h0m0s"
    assert controller_config(stack_config("dev"))["waitForPodsReady"]["recoveryTimeout"] == "0s"


# ---- timeout: how long an admitted workload may wait to start ---------------------------------------------------


def test_timeout_a_flex_start_workload_waits_for_its_capacity() -> None:
    """dev: GKE finds flex-start capacity 3 hours after the pods ask. With a week to start the workload runs at 3h.
    Kueue's 30 minutes evicted it at 30m, deleting its pods (the request goes with them), readmitted it a minute
    later to ask again, evicted it at 61m (1800 + 60 + 1800 = 3660 s), readmitted at 63m, evicted at 93m, ...: each
    try lasts 30 minutes, never 3 hours, so within 30 days it never ran."""
    assert wait_for_capacity(settings("dev"), capacity=3 * HOUR, asks_anew=True) == Waited(ready_at=3 * HOUR)
    old = wait_for_capacity(KUEUE_DEFAULTS, capacity=3 * HOUR, asks_anew=True)
    assert old.ready_at is None and old.deactivated_at is None
    assert old.evictions[:4] == [1800, 3660, 5580, 7620]


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
    """dev: the spot slice under a running workload is preempted; Compute Engine gives the VMs back 5 hours later.
    With recovery timeouts off the workload holds its quota and runs again at 5h. Kueue's defaults: evicted 30
    minutes after the pods failed (1800 s), then readmitted and evicted every 30 minutes with backoffs 60, 120, 240,
    480, 960, 1920 s: evictions at 1800, 3660, 5580, 7620, 9900, 12660, 16380 s; readmitted after the capped 3600 s
    backoff at 19980 s, when the VMs are back: it runs at 5h33m, its pods deleted seven times."""
    assert wait_for_capacity(settings("dev"), capacity=5 * HOUR, asks_anew=False, recovering=True) == Waited(
        ready_at=5 * HOUR
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


def test_block_admission_is_off_so_one_waiting_workload_does_not_stop_every_queue() -> None:
    """Kueue's scheduler, with blockAdmission on, admits nothing while any ClusterQueue holds a workload whose pods
    are not ready (pkg/scheduler/scheduler.go waitForPodsReadyIfNeeded, pkg/cache/scheduler/cache.go
    podsReadyForAllAdmittedWorkloads over every ClusterQueue): a flex-start wait would stop prod's and dev's other
    teams too. Off for every stack."""
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
    evicts, re-dispatching, by the same rule: its settings come from the workers' pools, which include flex-start."""
    manager, workers = _config("multiregion"), stack_config("multiregion").worker_configs
    assert manager["waitForPodsReady"] == _config("dev")["waitForPodsReady"]
    assert all(controller_config(w)["waitForPodsReady"] == manager["waitForPodsReady"] for w in workers)
