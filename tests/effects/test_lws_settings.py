"""The LeaderWorkerSet settings the stack writes for a multi-host vLLM server, held to their effect on a group that
waits and on one that is disrupted, against LWS v0.10.0's rules (tests/effects/controllers.py). Every expected pod,
minute and count is worked out by hand from those rules.

The llm fixture's multi-host server, llama-33-70b, runs 2 groups of 4 hosts (v5e 4x4 slices) on a pool group of 3
slices that scales to zero: one spare slice, created only while a rollout needs it. Each setting is run beside its
alternative (LWS's other values; for the rollout, the other of the stack's two choices), which must come out
differently: a test that passes with either value tests nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from components.config.llm_serving import server_shapes
from components.llm_serving import leader_worker_set_spec
from tests.effects.controllers import (
    GroupPod,
    GroupStart,
    Rollout,
    group_pods,
    group_start,
    lws_rollout,
    restarted_pods,
)
from tests.fixtures import stack_config

LLAMA = group_pods(4)
"""A group of llama-33-70b: leader s-0, workers s-0-1, s-0-2, s-0-3."""


def llm_spec() -> dict[str, Any]:
    config = stack_config("llm")
    assert config.serving is not None
    (shape,) = [s for s in server_shapes(config.serving, config.tpu_pools) if s.multi_host]
    return leader_worker_set_spec(shape, config.serving, config.bucket_name)


def test_the_settings_the_stack_writes() -> None:
    """Size 4 (the 4x4 slice's VMs); the whole group restarts; workers start with the leader; a spare slice: surge 1,
    nothing unavailable."""
    spec = llm_spec()
    assert spec["leaderWorkerTemplate"]["size"] == 4
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert spec["startupPolicy"] == "LeaderCreated"
    assert spec["rolloutStrategy"]["rollingUpdateConfiguration"] == {"maxSurge": 1, "maxUnavailable": 0}
    assert spec["replicas"] == 2


# ---- restartPolicy: what a lost host restarts ---------------------------------------------------------------------


def running(**changes: GroupPod) -> dict[str, GroupPod]:
    pods = {name: GroupPod() for name in LLAMA}
    pods.update({name.replace("_", "-"): pod for name, pod in changes.items()})
    return pods


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("stack", {"s-0", "s-0-1", "s-0-2", "s-0-3"}),
        ("None", {"s-0-2"}),
    ],
)
def test_restart_policy_a_lost_host_restarts_the_whole_group(policy: str, expected: set[str]) -> None:
    """Disrupted: a serving group's host s-0-2 is repaired (its pod deleted), or its Ray worker's container exits
    (restart count 1). The stack's RecreateGroupOnPodRestart deletes the leader s-0, and with it the worker
    StatefulSet and all three workers: all four pods start again together and the leader's Ray head sees all four
    hosts join afresh. With None only s-0-2 comes back, into an engine that lost a host and serves nothing (vLLM's
    tensor parallelism spans every host; its Ray actors on s-0-2 died with it) until someone restarts the leader."""
    if policy == "stack":
        policy = llm_spec()["leaderWorkerTemplate"]["restartPolicy"]
    assert restarted_pods(policy, running(s_0_2=GroupPod(deleted=True))) == expected
    assert restarted_pods(policy, running(s_0_2=GroupPod(restarts=1))) == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("stack", {"s-0", "s-0-1", "s-0-2", "s-0-3"}),
        ("RecreateGroupAfterStart", {"s-0-1"}),
        ("None", {"s-0-1"}),
    ],
)
def test_restart_policy_a_group_still_starting_starts_over_together(policy: str, expected: set[str]) -> None:
    """Waiting: a new group's leader s-0 is still Pending (its image pulling) when worker s-0-1, which found no Ray
    head for its five minutes of retries, exits and restarts. The stack's policy recreates the whole group then too:
    the four pods start again at the same time. RecreateGroupAfterStart (and None) leave it: only s-0-1's container
    restarts, in place, and retries for five more minutes."""
    if policy == "stack":
        policy = llm_spec()["leaderWorkerTemplate"]["restartPolicy"]
    pods = running(s_0=GroupPod(phase="Pending"), s_0_1=GroupPod(restarts=1))
    assert restarted_pods(policy, pods) == expected


# ---- startupPolicy: when the workers are created ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("stack", GroupStart(workers_at=15, serving_at=40)), ("LeaderReady", GroupStart(None, None))],
)
def test_startup_policy_a_group_waiting_for_its_slice_serves_once_it_comes(policy: str, expected: GroupStart) -> None:
    """Waiting: a new group on the scaled-to-zero pool group; the autoscaler brings a slice up 15 minutes later, its
    pods take 5 to pull and start, the model 20 to load once all four hosts joined. The stack's LeaderCreated creates
    the workers when the leader is scheduled (15: exclusive topology places them on the leader's slice), all four run
    at 20, the group serves at 40. With LeaderReady the workers would wait for a Ready leader, and the leader is Ready
    only once the workers have joined and vLLM serves: never."""
    if policy == "stack":
        policy = llm_spec()["startupPolicy"]
    assert group_start(policy, size=4, scheduled_at=15, pull=5, load=20) == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("stack", GroupStart(workers_at=1, serving_at=26)), ("LeaderReady", GroupStart(None, None))],
)
def test_startup_policy_a_recreated_group_serves_again(policy: str, expected: GroupStart) -> None:
    """Disrupted: a group recreated after a host's restart; its new leader is scheduled a minute later on the slice
    the group left (up, free). LeaderCreated: workers at 1, all running at 6, serving at 26. LeaderReady: the group
    never serves again."""
    if policy == "stack":
        policy = llm_spec()["startupPolicy"]
    assert group_start(policy, size=4, scheduled_at=1, pull=5, load=20) == expected


# ---- rolloutStrategy: maxSurge and maxUnavailable ----------------------------------------------------------------


def surge_unavailable(spec: dict[str, Any]) -> tuple[int, int]:
    rolling = spec["rolloutStrategy"]["rollingUpdateConfiguration"]
    return rolling["maxSurge"], rolling["maxUnavailable"]


SPARE_SLICE = (1, 0)
NO_SPARE = (0, 1)


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("stack", Rollout(fewest_serving=2, done_at=105, most_slices=3)),
        (NO_SPARE, Rollout(fewest_serving=1, done_at=60, most_slices=2)),
    ],
)
def test_rollout_with_a_spare_slice_never_takes_a_replica_down(strategy: Any, expected: Rollout) -> None:
    """Waiting: a model change on llama-33-70b (2 groups, 3 slices, the spare one scaled to zero: 15 minutes to come
    up; a group serves 30 minutes after it has its slice). The stack's surge 1: group 2 (new) waits for the spare
    slice until 15 and serves at 45; then group 1 is replaced on its own slice (serves at 75), then group 0 (105),
    and group 2 is removed at 105: two groups serve throughout, on up to three slices. Surge 0, unavailable 1: group
    1 is replaced at once (serves at 30), then group 0 (60), one group serving meanwhile, the spare never used."""
    surge, unavailable = surge_unavailable(llm_spec()) if strategy == "stack" else strategy
    rollout = lws_rollout(
        replicas=2, max_surge=surge, max_unavailable=unavailable, slices=3, slices_up=2, scale_up=15, start=30
    )
    assert rollout == expected


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("stack", Rollout(fewest_serving=2, done_at=None, most_slices=3)),
        (NO_SPARE, Rollout(fewest_serving=1, done_at=None, most_slices=2)),
    ],
)
def test_rollout_of_a_model_that_does_not_load_keeps_every_replica_serving(strategy: Any, expected: Rollout) -> None:
    """Disrupted: the new revision never serves (a model that does not load). The stack's surge 1 stops with the
    surge group not ready: both old groups keep serving until the change is undone. Surge 0 has already taken group 1
    down: one group serves until then."""
    surge, unavailable = surge_unavailable(llm_spec()) if strategy == "stack" else strategy
    rollout = lws_rollout(
        replicas=2, max_surge=surge, max_unavailable=unavailable, slices=3, start=30, new_starts=False
    )
    assert rollout == expected


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("stack", Rollout(fewest_serving=1, done_at=60, most_slices=2)),
        (SPARE_SLICE, Rollout(fewest_serving=2, done_at=None, most_slices=2)),
    ],
)
def test_rollout_without_a_spare_slice_goes_one_replica_at_a_time(strategy: Any, expected: Rollout) -> None:
    """Two replicas on a pool group of two slices (no spare): the stack writes surge 0, unavailable 1. Group 1 is
    replaced at once and serves at 30, group 0 at 60: done, one group serving meanwhile. A surge of 1 there would ask
    for a third slice that does not exist: the surge group never starts and the rollout never ends."""
    config = stack_config("llm")
    assert config.serving is not None
    pools = tuple(p.model_copy(update={"slices": 2}) if p.name == "llm-v5e" else p for p in config.tpu_pools)
    (shape,) = [s for s in server_shapes(config.serving, pools) if s.multi_host]
    assert shape.spare_slices == 0
    spec = leader_worker_set_spec(shape, config.serving, config.bucket_name)
    surge, unavailable = surge_unavailable(spec) if strategy == "stack" else strategy
    rollout = lws_rollout(replicas=2, max_surge=surge, max_unavailable=unavailable, slices=2, start=30)
    assert rollout == expected
