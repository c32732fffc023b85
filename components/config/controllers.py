"""What Kueue does with an admitted workload whose pods are not ready: how long it waits, and what happens after. A
decision, not a default: Kueue 0.19 turns `waitForPodsReady` on unless configured (30 minutes to start, 30 to
recover, requeued without end: apis/config/v1beta2/defaults.go, CHANGELOG-0.19 "WaitForPodsReady is now enabled by
default"); an evicted workload's pods are deleted (its job suspended) and it is queued again.

`waitForPodsReady` is one setting of the Kueue controller for every workload of its cluster: Kueue 0.19.2 has no
per-ClusterQueue or per-workload timeout (apis/config/v1beta2/configuration_types.go WaitForPodsReady; the only
per-workload limit, the job label `kueue.x-k8s.io/max-exec-time-seconds`, caps the time admitted, pods ready or
not: pkg/controller/constants/constants.go, pkg/controller/core/workload_controller.go reconcileMaxExecutionTime). So
the timeout one kind of capacity needs is what every workload of the cluster gets, a workload on reserved chips
whose image never pulls included. Every kind therefore gets a bounded wait, and the cluster waits as long as its most
patient kind needs (`queues.podsReady` sets other values):

- on-demand and reservation: 30 minutes to start, an hour to recover. The nodes are held: a start waits for an
  image and its pods; a repair or an upgrade brings a slice's VMs back (assumed within the hour: GKE publishes no
  figure).
- spot: 30 minutes to start (the pool holds its VMs), two hours to recover: preempted VMs come back when Compute
  Engine has capacity again. An eviction brings them no sooner (Kueue readmits the workload on the first rung whose
  quota holds it, the one it just freed); the bound gives a slice that does not come back its quota back.
- calendar-mode reservation: an hour each. The pool scales from zero inside the window, so the slice is created from
  the reservation when a workload is admitted.
- queued provisioning: 30 minutes to start, an hour to recover. The wait for capacity is before admission: Kueue
  admits only once the ProvisioningRequest admission check is Ready (GKE provisioned the slice, booked for 10
  minutes), so PodsReady's clock, which starts at admission (workload_controller.go admittedNotReadyWorkload), times
  only the pods' start; capacity GKE takes back is the admission check's to handle (CapacityRevoked deactivates the
  workload: pkg/controller/admissionchecks/provisioning/controller.go).
- flex-start (plain, scaled by the cluster autoscaler): two hours each. Kueue admits on quota and the autoscaler
  asks for the nodes only once the pods are pending, so the wait for flex-start capacity is after admission, inside
  the timeout. GKE publishes no bound on that wait ("an indeterminate amount of time",
  cloud.google.com/kubernetes-engine/docs/concepts/dws); Compute Engine's own flex-start requests stay queued at most
  two hours before they fail (cloud.google.com/compute/docs/instances/about-flex-start-vms, "Flex-start VM wait time";
  `--request-valid-for-duration`, cloud.google.com/blog/products/compute/introducing-flex-start-vms-for-the-compute-
  engine-instance-api), which the stack takes as the wait worth holding quota for. Past it an eviction withdraws the
  request and the workload is queued again, from the ladder's first rung. A wait for capacity longer than that
  belongs on a queued rung, which waits before admission with no pods, no nodes and no billing.

After a timeout Kueue requeues by the workload's creation time (it keeps its place: the cloud had no capacity, the
workload did nothing wrong), after 1, 2, 4 ... at most 60 minutes, and deactivates it after its third requeue: a
workload that cannot start (an image that does not pull) stops holding its quota after four timeouts (two hours on
held capacity, eight in a cluster with flex-start or spot), visible as deactivated, instead of in every cycle
forever. Kueue counts requeues over a workload's life (status.requeueState is reset only on deactivation,
workload_controller.go), so a long run whose slices are lost for longer than the recovery timeout four times is
deactivated too. `blockAdmission` stays off: on, one workload waiting for flex-start capacity would stop every queue
of the cluster (pkg/scheduler/scheduler.go waitForPodsReadyIfNeeded waits for every ClusterQueue).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from components.config.base import ConfigModel, parse_duration
from components.config.pools import TpuPoolConfig

MINUTE, HOUR = 60, 3600


@dataclass(frozen=True)
class Patience:
    """How long Kueue may wait for a kind of capacity: `start` from admission until every pod is ready, `recovery`
    from a pod's failure until it is replaced and ready again."""

    start: int
    recovery: int
    why: str


FLEX_START_WAIT = 2 * HOUR
"""The longest Compute Engine keeps a flex-start VM request queued before it fails (Flex-start VM wait time); GKE
publishes no bound of its own for flex-start node pools."""
HELD = Patience(30 * MINUTE, HOUR, "the nodes are held: an image pull and the pods' start, or a repair, to wait for")
SPOT = Patience(30 * MINUTE, FLEX_START_WAIT, "the pool holds its VMs; preempted ones come back with capacity")
CALENDAR = Patience(HOUR, HOUR, "the slice is created from the reservation when a workload is admitted")
PROVISIONED = Patience(30 * MINUTE, HOUR, "admitted once GKE has provisioned the slice; lost capacity is the check's")
FLEX_START = Patience(FLEX_START_WAIT, FLEX_START_WAIT, "the nodes are asked for after admission, when pods pend")

REQUEUE_BACKOFF_BASE_SECONDS = 60
REQUEUE_BACKOFF_MAX_SECONDS = 3600
PROVISIONING_RETRY = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
"""A queued-provisioning flavor's ProvisioningRequestConfig.retryStrategy, Kueue's own default written down: a
request GKE fails is made again after 1, 2, 4 minutes, then the workload is deactivated (why.py reads attempts so)."""


def patience(pool: TpuPoolConfig) -> Patience:
    """How long a workload admitted on `pool` is worth waiting for (see the module's table)."""
    if pool.provisioning == "flex-start":
        return FLEX_START
    if pool.provisioning == "spot":
        return SPOT
    if pool.provisioning == "queued":
        return PROVISIONED
    return CALENDAR if pool.future_reservation is not None else HELD


@dataclass(frozen=True)
class PodsReady:
    """waitForPodsReady as the stack sets it, in seconds; `recovery_timeout` 0 turns recovery timeouts off."""

    timeout: int
    recovery_timeout: int
    requeue_limit: int

    def kueue(self) -> dict[str, Any]:
        """The `waitForPodsReady` of Kueue's Configuration (field names as configuration_types.go spells them)."""
        return {
            "timeout": duration(self.timeout),
            "recoveryTimeout": duration(self.recovery_timeout),
            "blockAdmission": False,
            "requeuingStrategy": {
                "timestamp": "Creation",
                "backoffLimitCount": self.requeue_limit,
                "backoffBaseSeconds": REQUEUE_BACKOFF_BASE_SECONDS,
                "backoffMaxSeconds": REQUEUE_BACKOFF_MAX_SECONDS,
            },
        }


class PodsReadyConfig(ConfigModel):
    """Kueue's `waitForPodsReady`, one setting for every workload of the cluster (Kueue has none per queue or per
    workload): how long an admitted workload's pods may take to be ready before Kueue evicts it, deletes its pods and
    queues it again, and how many times. A longer timeout waits longer for capacity made after admission (flex-start,
    spot coming back) and holds a workload that can never start (an image that does not pull) on its quota as long,
    reserved chips included; a shorter one gives up sooner on both. docs/workloads.md has the derivation."""

    timeout: str | None = None
    """How long after admission every pod must be ready, e.g. `45m`, `2h`.

    Default: the longest start the Kueue capacity's kinds need: 30m (on-demand, reservation, spot, queued), 1h
    (calendar mode), 2h (flex-start)"""
    recovery_timeout: str | None = None
    """How long a running workload waits for a lost pod's replacement to be ready, e.g. `1h`; `0s` waits without end
    (a slice lost for good then holds its quota until someone deletes the workload).

    Default: the longest recovery the Kueue capacity's kinds need: 1h (on-demand, reservation, calendar mode,
    queued), 2h (spot, flex-start)"""
    requeue_limit: int = Field(default=3, ge=0)
    """Timeouts after which Kueue deactivates the workload (`spec.active: false`) instead of queueing it again,
    counted over the workload's life; each requeue waits 1, 2, 4 ... at most 60 minutes first."""

    def problems(self) -> list[tuple[str, str]]:
        """(field, message) for a duration that is none, or a start timeout of zero (Kueue requires one:
        pkg/config/validation.go validateWaitForPodsReady)."""
        problems = []
        for field, text in (("timeout", self.timeout), ("recoveryTimeout", self.recovery_timeout)):
            if text is None:
                continue
            try:
                seconds = parse_duration(text)
            except ValueError as error:
                problems.append((field, str(error)))
                continue
            if field == "timeout" and seconds < 60:
                problems.append(
                    (field, f"{text} is under a minute; Kueue needs a start timeout, give one of 1m or more")
                )
        return problems


def pods_ready(pools: Iterable[TpuPoolConfig], chosen: PodsReadyConfig) -> PodsReady:
    """The settings of a cluster whose Kueue capacity is `pools` (a MultiKueue manager's: its workers', whose
    admissions it mirrors): as patient as its most patient kind of capacity, unless `queues.podsReady` (`chosen`,
    validated) says otherwise."""
    kinds = [patience(pool) for pool in pools] or [HELD]
    return PodsReady(
        timeout=parse_duration(chosen.timeout) if chosen.timeout else max(p.start for p in kinds),
        recovery_timeout=(
            parse_duration(chosen.recovery_timeout) if chosen.recovery_timeout else max(p.recovery for p in kinds)
        ),
        requeue_limit=chosen.requeue_limit,
    )


def duration(seconds: int) -> str:
    """A duration as Kueue's configuration writes them: `2h0m0s`, `30m0s`, `0s`."""
    if seconds == 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes}m{secs}s" if hours else f"{minutes}m{secs}s"
