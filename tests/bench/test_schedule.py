"""bench/schedule.py on small graphs whose timings are worked out by hand (scheduling correctness, not timing)."""

from __future__ import annotations

import itertools

import pytest

from bench.schedule import Limits, Step, retry_offsets_minutes, simulate

UNBOUNDED = Limits(workers=None, gke_operations=None)


def after(*keys: str) -> frozenset[str]:
    return frozenset(keys)


def pool(
    key: str,
    minutes: float = 7,
    *,
    cluster: str = "c",
    timeout: float | None = 120,
    after: frozenset[str] = frozenset(),
) -> Step:
    """A node pool create: an operation on `cluster` that the provider retries for `timeout` minutes."""
    return Step(key, minutes, after, cluster=cluster, timeout_minutes=timeout)


def test_the_provider_retries_at_0_then_half_a_second_doubling_up_to_every_ten_seconds() -> None:
    first = list(itertools.islice(retry_offsets_minutes(), 10))
    seconds = [round(m * 60, 6) for m in first]
    assert seconds == [0, 0.5, 1.5, 3.5, 7.5, 15.5, 25.5, 35.5, 45.5, 55.5]


def test_without_limits_a_graph_takes_its_longest_chain() -> None:
    steps = [Step("sa", 0.2), Step("cluster", 6.5, after("sa"))]
    steps += [pool("a", after=after("cluster")), pool("b", 5, after=after("cluster"))]
    outcome = simulate(steps, UNBOUNDED)
    assert outcome.minutes == pytest.approx(0.2 + 6.5 + 7)
    assert outcome.finish["b"] == pytest.approx(11.7)


def test_workers_run_steps_in_the_order_they_became_ready() -> None:
    # Two workers: a and b start at 0; c and d, ready at 0 too, get the two workers a and b free at 10.
    steps = [Step("a", 10), Step("b", 10), Step("c", 1), Step("d", 3)]
    outcome = simulate(steps, Limits(workers=2, gke_operations=None))
    assert outcome.finish == pytest.approx({"a": 10, "b": 10, "c": 11, "d": 13})


def test_a_step_that_became_ready_earlier_goes_first_whatever_its_registration_order() -> None:
    # One worker. x (4) runs first; late (registered first) becomes ready at 4 when x is done, but early was
    # ready at 0, so early runs 4-6 and late 6-7.
    steps = [Step("late", 1, after("x")), Step("x", 4), Step("early", 2)]
    outcome = simulate(steps, Limits(workers=1, gke_operations=None))
    assert outcome.finish == pytest.approx({"x": 4, "early": 6, "late": 7})


def test_a_weightless_step_still_waits_for_a_worker() -> None:
    # A ComponentResource registration is a step: behind a 10-minute pool on the only worker, it and what waits
    # for it are late.
    steps = [pool("slice", 10, cluster="c"), Step("component", 0), Step("child", 1, after("component"))]
    outcome = simulate(steps, Limits(workers=1, gke_operations=None))
    assert outcome.finish == pytest.approx({"slice": 10, "component": 10, "child": 11})


def test_a_remote_component_takes_no_worker_but_its_children_do() -> None:
    steps = [pool("slice", 10), Step("chart", 2, worker=False), Step("deployment", 0.5, after("chart"))]
    outcome = simulate(steps, Limits(workers=1, gke_operations=None))
    assert outcome.finish == pytest.approx({"slice": 10, "chart": 2, "deployment": 10.5})


def test_a_create_beyond_gkes_limit_is_retried_until_a_slot_frees() -> None:
    # Two slots: a and b run 0-7. c is refused at 0 and retried at 0.5 s, 1.5 s, ..., 415.5 s, 425.5 s: the
    # first try after 420 s (7 min) succeeds, so c runs from 425.5 s to 425.5 s + 7 min.
    outcome = simulate([pool("a"), pool("b"), pool("c")], Limits(workers=None, gke_operations=2))
    assert outcome.finish["a"] == outcome.finish["b"] == pytest.approx(7)
    assert outcome.finish["c"] == pytest.approx(425.5 / 60 + 7)
    assert outcome.slot_wait["c"] == pytest.approx(425.5 / 60)
    assert outcome.minutes == pytest.approx(14.0916667)


def test_a_freed_slot_goes_to_the_create_that_has_waited_longest() -> None:
    # One slot. a runs 0-7; b and c are both refused from 0; b (ahead) gets the slot at 425.5 s; c's try at the
    # same moment is refused, and c gets it at b's end (845.5 s = 14.0917 min, also one of its 10 s tries).
    outcome = simulate([pool("a"), pool("b"), pool("c")], Limits(workers=None, gke_operations=1))
    assert outcome.finish["b"] == pytest.approx(425.5 / 60 + 7)
    assert outcome.finish["c"] == pytest.approx(845.5 / 60 + 7)


def test_a_create_started_later_does_not_jump_the_queue_of_refused_creates() -> None:
    # One slot. a runs 0-7 and b is refused from 0. late starts at 7, just as the slot frees, but b was refused
    # first: b gets it at its next try (425.5 s) and runs to 845.5 s; late's tries fall at 420 s + 25.5 s + 10 s k,
    # one of them at 845.5 s, where it gets the slot.
    steps = [pool("a"), pool("b"), Step("wait", 7), pool("late", after=after("wait"))]
    outcome = simulate(steps, Limits(workers=None, gke_operations=1))
    assert outcome.finish["b"] == pytest.approx(425.5 / 60 + 7)
    assert outcome.finish["late"] == pytest.approx(845.5 / 60 + 7)


def test_a_create_refused_past_its_timeout_fails_the_run_and_nothing_new_starts() -> None:
    # One slot, a 5-minute timeout: b is still refused at minute 5 and fails; its dependent never starts, and
    # neither does anything that becomes ready afterwards; a still finishes.
    steps = [pool("a"), pool("b", timeout=5), Step("after-b", 1, after("b")), Step("after-a", 1, after("a"))]
    steps.append(Step("chart-after-a", 1, after("a"), worker=False))
    outcome = simulate(steps, Limits(workers=None, gke_operations=1))
    assert outcome.minutes is None
    assert list(outcome.failed) == ["b"]
    assert "5-minute create timeout" in outcome.failed["b"]
    assert outcome.finish == pytest.approx({"a": 7})
    assert outcome.failed_at == pytest.approx(5) and outcome.end == pytest.approx(7)


def test_a_tool_that_does_not_retry_fails_at_the_first_refusal() -> None:
    outcome = simulate([pool("a"), pool("b", timeout=None)], Limits(workers=None, gke_operations=1, retry="once"))
    assert list(outcome.failed) == ["b"]
    assert outcome.finish == pytest.approx({"a": 7})


def test_gkes_limit_is_per_cluster() -> None:
    steps = [pool("a1", cluster="one"), pool("a2", cluster="one"), pool("b1", cluster="two")]
    outcome = simulate(steps, Limits(workers=None, gke_operations=1))
    assert outcome.finish["b1"] == pytest.approx(7)
    assert outcome.finish["a2"] == pytest.approx(425.5 / 60 + 7)


def test_a_refused_create_holds_its_worker_while_it_retries() -> None:
    # Two workers, one slot: a runs 0-7 and b holds the other worker while it is refused, so x (ready at 0,
    # registered after them) waits for a's worker and runs 7-8.
    steps = [pool("a"), pool("b"), Step("x", 1)]
    outcome = simulate(steps, Limits(workers=2, gke_operations=1))
    assert outcome.finish["x"] == pytest.approx(8)
    assert outcome.finish["b"] == pytest.approx(425.5 / 60 + 7)


def test_unknown_dependencies_and_cycles_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown keys: nowhere"):
        simulate([Step("a", 1, after("nowhere"))], UNBOUNDED)
    with pytest.raises(ValueError, match="dependency cycle among: a, b"):
        simulate([Step("a", 1, after("b")), Step("b", 1, after("a"))], UNBOUNDED)
