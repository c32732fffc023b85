"""A discrete-event simulation of how a deployment tool runs a dependency graph of cloud operations.

Three limits decide wall time once more is ready to run than can run, and each is simulated as the real
software and GKE apply it:

- **the tool's worker pool.** `pulumi up` starts `--parallel` workers and hands them steps in the order the
  steps became ready; a worker stays busy for the whole step, the provider's retries included
  (pulumi/pulumi pkg/resource/deploy/step_executor.go: a fixed pool of DegreeOfParallelism() workers reading
  one unbuffered channel; deployment_executor.go submits each step as its registration arrives). A remote
  component (a Helm v4 Chart) is constructed by the resource monitor, not by a worker (source_eval.go), so it
  takes no worker. Terraform's `-parallelism` is the same kind of bound on its graph walk.
- **GKE's per-cluster limit on concurrent node-pool operations.** GKE refuses an operation beyond it
  (HTTP 429 "Too many operations: cluster ... hits the concurrent operations quota", or 400
  failedPrecondition while an incompatible operation runs).
- **the provider's retries.** terraform-provider-google (which pulumi-gcp bridges) retries a refused node pool
  create on 400 failedPrecondition and 429 until the resource's create timeout, with terraform-plugin-sdk's
  backoff (helper/retry: attempts at 0, 0.5, 1.5, 3.5, 7.5, 15.5 s, then every 10 s); the time spent retrying
  counts against that timeout, and a create still refused when it runs out fails. A tool that does not retry
  (xpk runs each `gcloud` command once) fails at the first refusal. Which of several refused creates gets a
  freed slot is a race between their retries; the model gives it to the one that has waited longest, at its
  next try. That is the fairest outcome: real races can leave an unlucky create waiting longer.

A failure stops new work, as `pulumi up`, `terraform apply` and xpk all do; what runs already finishes.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

FIRST_WAITS_SECONDS = (0.5, 1.0, 2.0, 4.0, 8.0)
"""terraform-plugin-sdk helper/retry (StateChangeConf as RetryContext sets it up): no wait before the first try,
then 100 ms doubled and clamped to at least MinTimeout (500 ms) and at most 10 s."""
LONGEST_WAIT_SECONDS = 10.0


def retry_offsets_minutes() -> Iterator[float]:
    """Minutes after the first try at which the provider tries again: 0, 0.5 s, 1.5 s, 3.5 s, ... then every 10 s."""
    elapsed = 0.0
    yield elapsed
    for wait in itertools.chain(FIRST_WAITS_SECONDS, itertools.repeat(LONGEST_WAIT_SECONDS)):
        elapsed += wait
        yield elapsed / 60


@dataclass(frozen=True)
class Step:
    key: str
    minutes: float
    """How long the step takes once it runs (for a GKE operation: once GKE has accepted it)."""
    after: frozenset[str] = frozenset()
    """Keys of the steps it waits for."""
    worker: bool = True
    """Needs one of the tool's workers for its whole duration."""
    cluster: str | None = None
    """A node-pool operation on this cluster: needs one of GKE's per-cluster operation slots."""
    timeout_minutes: float | None = None
    """How long the provider keeps retrying a refused operation (its create timeout); None: forever."""


Retry = Literal["provider", "once"]


@dataclass(frozen=True)
class Limits:
    workers: int | None
    """The tool's parallelism; None: unbounded."""
    gke_operations: int | None
    """Concurrent node-pool operations GKE accepts per cluster; None: unlimited."""
    retry: Retry = "provider"
    """"provider": retried with terraform-plugin-sdk's backoff until the step's timeout; "once": refused is failed."""


@dataclass
class Outcome:
    finish: dict[str, float] = field(default_factory=dict)
    """Minutes from the start at which each completed step finished."""
    failed: dict[str, str] = field(default_factory=dict)
    """Steps that failed, with why."""
    failed_at: float | None = None
    """When the first step failed."""
    slot_wait: dict[str, float] = field(default_factory=dict)
    """Minutes each GKE operation spent refused before GKE accepted it."""
    end: float = 0.0
    """When the last step (completed or failed) ended."""

    @property
    def minutes(self) -> float | None:
        """Wall time of a successful run; None if any step failed."""
        return None if self.failed else self.end


_FINISH, _ATTEMPT, _DISPATCH = 0, 1, 2


def simulate(steps: Sequence[Step], limits: Limits) -> Outcome:
    """Run `steps` (in registration order, which breaks ties between steps that become ready together)."""
    by_key = {s.key: s for s in steps}
    order = {s.key: i for i, s in enumerate(steps)}
    missing = {k for s in steps for k in s.after if k not in by_key}
    if missing:
        raise ValueError(f"steps wait for unknown keys: {', '.join(sorted(missing))}")
    dependents: dict[str, list[str]] = {s.key: [] for s in steps}
    waiting = {s.key: len(s.after) for s in steps}
    for s in steps:
        for before in s.after:
            dependents[before].append(s.key)

    outcome = Outcome()
    events: list[tuple[float, int, int, str]] = []
    counter = itertools.count()
    queue: list[tuple[float, int, str]] = []  # (ready at, registration order, key): steps waiting for a worker
    free_workers = limits.workers if limits.workers is not None else len(steps)
    running_ops: dict[str, int] = {}
    refused: dict[str, list[str]] = {}  # per cluster: creates GKE has refused and that still retry, longest first
    started_at: dict[str, float] = {}
    offsets: dict[str, Iterator[float]] = {}
    halted = False

    def push(time: float, kind: int, key: str) -> None:
        heapq.heappush(events, (time, kind, next(counter), key))

    def ready(key: str, time: float) -> None:
        if by_key[key].worker:
            heapq.heappush(queue, (time, order[key], key))
            push(time, _DISPATCH, "")
        else:
            start(key, time)

    def start(key: str, time: float) -> None:
        started_at[key] = time
        step = by_key[key]
        if step.cluster is None:
            push(time + step.minutes, _FINISH, key)
        else:
            offsets[key] = retry_offsets_minutes()
            push(time + next(offsets[key]), _ATTEMPT, key)

    def end(key: str, time: float) -> None:
        nonlocal free_workers
        outcome.end = max(outcome.end, time)
        if by_key[key].worker:
            free_workers += 1
            push(time, _DISPATCH, "")

    def fail(key: str, time: float, why: str) -> None:
        nonlocal halted
        outcome.failed[key] = why
        outcome.failed_at = time if outcome.failed_at is None else min(outcome.failed_at, time)
        halted = True
        end(key, time)

    def attempt(key: str, time: float) -> None:
        step = by_key[key]
        assert step.cluster is not None
        waiting_list = refused.setdefault(step.cluster, [])
        ahead = waiting_list.index(key) if key in waiting_list else len(waiting_list)
        running = running_ops.get(step.cluster, 0)
        if limits.gke_operations is None or running + ahead < limits.gke_operations:
            if key in waiting_list:
                waiting_list.remove(key)
            running_ops[step.cluster] = running + 1
            outcome.slot_wait[key] = time - started_at[key]
            push(time + step.minutes, _FINISH, key)
            return
        if limits.retry == "once":
            fail(key, time, "refused by GKE's per-cluster operation limit; not retried")
            return
        if key not in waiting_list:
            waiting_list.append(key)
        later = started_at[key] + next(offsets[key])
        deadline = started_at[key] + (step.timeout_minutes if step.timeout_minutes is not None else float("inf"))
        if later >= deadline:
            waiting_list.remove(key)
            fail(key, deadline, f"still refused by GKE after its {step.timeout_minutes:g}-minute create timeout")
        else:
            push(later, _ATTEMPT, key)

    for s in steps:
        if not s.after:
            ready(s.key, 0.0)
    while events:
        time, kind, _, key = heapq.heappop(events)
        if kind == _FINISH:
            step = by_key[key]
            if step.cluster is not None:
                running_ops[step.cluster] -= 1
            outcome.finish[key] = time
            end(key, time)
            for after in dependents[key]:
                waiting[after] -= 1
                if waiting[after] == 0 and not halted:
                    ready(after, time)
        elif kind == _ATTEMPT:
            attempt(key, time)
        else:
            while queue and free_workers > 0 and not halted:
                _, _, next_key = heapq.heappop(queue)
                free_workers -= 1
                start(next_key, time)
    unreached = [k for k in by_key if k not in outcome.finish and k not in outcome.failed]
    if unreached and not outcome.failed:
        raise ValueError(f"dependency cycle among: {', '.join(sorted(unreached)[:5])}")
    return outcome
