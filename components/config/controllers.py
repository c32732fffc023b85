"""What Kueue does with an admitted workload whose pods are not ready: how long it waits, per kind of capacity, and
what happens after. A decision, not a default: Kueue 0.19 turns `waitForPodsReady` on unless configured (30 minutes
to start, 30 to recover, requeued without end: apis/config/v1beta2/defaults.go, CHANGELOG-0.19 "WaitForPodsReady is
now enabled by default"), and an evicted workload's pods are deleted (its job suspended), so a wait for capacity the
cloud hands out when it has it is cut short, its scale-up request withdrawn, and tried again from the ladder's first
rung.

`waitForPodsReady` is one setting of the Kueue controller, for every workload of its cluster. What can differ per kind
of capacity is how long each kind is worth waiting for; the cluster waits as long as its most patient kind needs:

- on-demand and reservation: 30 minutes to start, an hour to recover. The nodes are held: a start waits for an
  image and its pods; a repair or an upgrade brings a slice's VMs back (assumed within the hour: GKE publishes no
  figure).
- calendar-mode reservation: an hour each. The pool scales from zero inside the window, so the slice is created from
  the reservation when a workload is admitted.
- queued provisioning: 30 minutes to start, an hour to recover. Kueue admits only once GKE has provisioned the slice
  (its ProvisioningRequest Provisioned, booked for 10 minutes); capacity GKE takes back is the admission check's to
  handle (CapacityRevoked deactivates the workload: pkg/controller/admissionchecks/provisioning/controller.go).
- flex-start: as long as it takes. GKE keeps a flex-start request until capacity is there, however long ("the
  workload can wait an indeterminate amount of time", cloud.google.com/kubernetes-engine/docs/concepts/dws); an
  eviction deletes the pods, which withdraws the request, and the next admission asks again from the start.
- spot: as long as it takes. Preempted VMs come back when Compute Engine has capacity again; an eviction brings them
  back no sooner, and readmits the workload on the same rung, whose quota it just freed.

"As long as it takes" is a start timeout of a week (Kueue needs one, `pkg/config/validation.go`; seven days is as long
as flex-start capacity runs) and recovery timeouts off (`0s`: pkg/controller/core/core.go keeps none). Kueue's quota
is the pools' own chips, so a workload holding quota while its capacity is missing keeps it from nobody. After a
timeout, Kueue requeues by the workload's creation time (it keeps its place: the cloud had no capacity, the workload
did nothing wrong), after 1, 2, 4 ... at most 60 minutes, and deactivates it after its third requeue: a workload that
cannot start (an image that does not pull) stops holding its quota for good, visible as deactivated, instead of once
in every cycle forever. `blockAdmission` stays off: on, one workload waiting for flex-start capacity would stop every
queue of the cluster (pkg/scheduler/scheduler.go waitForPodsReadyIfNeeded waits for every ClusterQueue).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from components.config.pools import FLEX_START_MAX_SECONDS, TpuPoolConfig


@dataclass(frozen=True)
class Patience:
    """How long Kueue may wait for a kind of capacity: `start` from admission until every pod is ready, `recovery`
    from a pod's failure until it is replaced and ready again; None: as long as it takes."""

    start: int | None
    recovery: int | None
    why: str


HELD = Patience(30 * 60, 60 * 60, "the nodes are held: an image pull and the pods' start, or a repair, to wait for")
CALENDAR = Patience(60 * 60, 60 * 60, "the slice is created from the reservation when a workload is admitted")
PROVISIONED = Patience(
    30 * 60, 60 * 60, "admitted once GKE has provisioned the slice; lost capacity is the admission check's"
)
UNTIL_CAPACITY = Patience(None, None, "the cloud hands the capacity out when it has it; an eviction only withdraws")

LONGEST_START = FLEX_START_MAX_SECONDS
"""The start timeout of a cluster with capacity worth waiting for as long as it takes: Kueue needs a timeout, and a
week is as long as flex-start capacity runs."""
REQUEUE_BACKOFF_BASE_SECONDS = 60
REQUEUE_BACKOFF_MAX_SECONDS = 3600
REQUEUE_LIMIT = 3
"""Requeues after a timeout before Kueue deactivates the workload (the same four attempts Kueue gives a failed
ProvisioningRequest by default)."""
PROVISIONING_RETRY = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
"""A queued-provisioning flavor's ProvisioningRequestConfig.retryStrategy, Kueue's own default written down: a
request GKE fails is made again after 1, 2, 4 minutes, then the workload is deactivated (why.py reads attempts so)."""


def patience(pool: TpuPoolConfig) -> Patience:
    """How long a workload admitted on `pool` is worth waiting for (see the module's table)."""
    if pool.provisioning in ("flex-start", "spot"):
        return UNTIL_CAPACITY
    if pool.provisioning == "queued":
        return PROVISIONED
    return CALENDAR if pool.future_reservation is not None else HELD


def _longest(values: Iterable[int | None]) -> int | None:
    found = list(values)
    return None if None in found else max((v for v in found if v is not None), default=0)


def wait_for_pods_ready(pools: Iterable[TpuPoolConfig]) -> dict[str, Any]:
    """Kueue's `waitForPodsReady` for a cluster whose Kueue capacity is `pools` (a MultiKueue manager's: its
    workers', whose admissions it mirrors): as patient as its most patient kind of capacity."""
    kinds = [patience(pool) for pool in pools] or [HELD]
    start = _longest(p.start for p in kinds)
    recovery = _longest(p.recovery for p in kinds)
    return {
        "timeout": _duration(LONGEST_START if start is None else start),
        "recoveryTimeout": _duration(0 if recovery is None else recovery),
        "blockAdmission": False,
        "requeuingStrategy": {
            "timestamp": "Creation",
            "backoffLimitCount": REQUEUE_LIMIT,
            "backoffBaseSeconds": REQUEUE_BACKOFF_BASE_SECONDS,
            "backoffMaxSeconds": REQUEUE_BACKOFF_MAX_SECONDS,
        },
    }


def _duration(seconds: int) -> str:
    """A duration as Kueue's configuration writes them: `168h0m0s`, `30m0s`, `0s`."""
    if seconds == 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes}m{secs}s" if hours else f"{minutes}m{secs}s"
