"""Why a workload is not running, in plain words with the numbers, and what would change it.

Pure: the Kueue objects, ProvisioningRequests, pods and events as the API server returns them in, sentences out.
What each object means follows the sources of the versions the stack installs:

- Kueue v0.19.2 (kubernetes-sigs/kueue): Workload conditions QuotaReserved, Admitted, Evicted, Preempted,
  Finished and their reasons (apis/kueue/v1beta2/workload_types.go); the scheduler's message when it cannot
  reserve quota, "couldn't assign flavors to pod set <p>: insufficient unused quota for <r> in flavor <f>, <n>
  more needed" or "insufficient quota ... > maximum capacity (<n>)" (pkg/scheduler/flavorassigner); quota,
  borrowing and lending limits as the scheduler adds them up (pkg/cache/scheduler/resource_node.go); the
  ClusterQueue's status.flavorsReservation (clusterqueue_types.go); the provisioning admission check's states
  and messages (pkg/controller/admissionchecks/provisioning/controller.go); the preemption message and its
  reasons, and the events of both sides (pkg/scheduler/preemption/preemption.go); the suffixes the scheduler adds
  while it preempts for a workload (pkg/scheduler/scheduler.go markPreemptionOutcome, processEntry); eviction of
  a workload whose check is in Retry, with a backoff in status.requeueState, and deactivation after a Rejected
  check (pkg/controller/core/workload_controller.go reconcileCheckBasedEviction, pkg/workload/evict/evict.go);
  status.accumulatedPastExecutionTimeSeconds and status.schedulingStats.evictions (pkg/workload).
- cluster-autoscaler (kubernetes/autoscaler): ProvisioningRequest conditions Accepted, Provisioned, Failed,
  BookingExpired, CapacityRevoked (apis/provisioningrequest/autoscaling.x-k8s.io/v1/types.go); the pod events
  TriggeredScaleUp and NotTriggerScaleUp (processors/status/eventing_scale_up_processor.go); GKE's autoscaler
  also reports FailedScaleUp on pods, quoted as it comes.

Numbers are read from the ClusterQueues themselves (nominal quota, borrowing and lending limits, reserved
quota), so they are the cluster's, not the config's. Cohorts are read one level deep: the stack's teams share
one Cohort with no parent. What the account could not read is named, never counted as zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal

from tpu_stack import kueue
from tpu_stack.kueue import Obj

# The scheduler's flavor-assignment messages (flavorassigner.go, fitsResourceQuota).
_UNUSED = re.compile(r"insufficient unused quota for (?P<resource>\S+) in flavor (?P<flavor>\S+), \S+ more needed")
_MAXIMUM = re.compile(
    r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>\S+), previously considered podsets requests "
    r"\([^)]*\) \+ current podset request \([^)]*\) > maximum capacity \([^)]*\)"
)
# Kueue's human-readable preemption reasons (preemption.go, HumanReadablePreemptionReasons).
_PREEMPTION_REASONS = {
    "InClusterQueue": "to make room for a workload of higher priority in the same ClusterQueue",
    "InCohortReclamation": "to give back quota it had borrowed in the cohort",
    "InCohortFairSharing": "for fair sharing in the cohort",
    "InCohortReclaimWhileBorrowing": "to give back quota it had borrowed in the cohort, to a queue itself borrowing",
}
_PRIORITIES = re.compile(
    r"preemptor effective priority: (?P<preemptor>-?\d+).*preemptee effective priority: (?P<preemptee>-?\d+)"
)
_PREEMPTOR_PATH = re.compile(r"preemptor path: /(?:[^/;]+/)*(?P<queue>[^/;]+);")
# What the scheduler adds to the QuotaReserved message while it preempts for the workload (scheduler.go).
_PENDING_PREEMPTION = re.compile(r"\. Pending the preemption of (?P<count>\d+) workload\(s\)$")
_PREEMPTION_FAILED = re.compile(r"\. Preempting (?P<count>\d+) workload\(s\) failed, will retry\.$")
_DEFERRED = (
    "Workload has overlapping preemption targets with another workload, but will fit after these preemptions complete"
)
_OVERLAPPING = "Workload has overlapping preemption targets with another workload"
# The preemptor's event for each workload it preempts (preemption.go IssuePreemptions).
_PREEMPTED_WORKLOAD = re.compile(
    r"Preempted workload (?P<workload>\S+) \(UID: [^)]*\) in ClusterQueue (?P<queue>\S+); preemptor effective "
    r"priority: (?P<preemptor>-?\d+)\b.*preemptee effective priority: (?P<preemptee>-?\d+)"
)
# A check in Retry or Rejected, as the Evicted message quotes it (workload_controller.go buildAdmissionChecksMessage).
_CHECK_IN_MESSAGE = re.compile(
    r'AdmissionChecks? in (?:Retry|Rejected) state: "(?P<check>[^"]+)"(?: \((?P<said>.*)\))?'
)
# The provisioning controller's event when a check changes state (controller.go syncCheckStates).
_CHECK_UPDATED = re.compile(r"Admission check (?P<check>\S+) updated state from (?P<before>\w+) to (?P<after>\w+)")
_RETRY_FAILED, _RETRY_BOOKING = "Retrying after failure: ", "Retrying after booking expired: "
"""The check's message in Retry (controller.go syncCheckStates), before the ProvisioningRequest condition's."""
_RESET = "Reset to Pending after eviction."
"""The check's message once an eviction reset it (evict.go resetChecksOnEviction)."""
BOOKING_EXPIRED_MESSAGE = "Capacity reservation time is expired"
"""The autoscaler's BookingExpired message (provisioningrequest/conditions/conditions.go
CapacityReservationTimeExpiredMsg)."""
AUTOSCALER_REASONS = ("FailedScaleUp", "NotTriggerScaleUp", "TriggeredScaleUp")
_BACKOFF = "in backoff after failed scale-up"
"""The autoscaler's skipped-node-group reason (core/scaleup/orchestrator/skippedreasons.go)."""


@dataclass(frozen=True)
class StackView:
    """What the stack's outputs say about its capacity."""

    flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    """Flavor (pool group) -> node labels (output `flavors`)."""
    node_pools: dict[str, list[str]] = field(default_factory=dict)
    """Pool group -> its GKE node pools (output `tpuPools`)."""
    chips_per_slice: dict[str, int] = field(default_factory=dict)
    vms_per_slice: dict[str, int] = field(default_factory=dict)
    team_keys: dict[str, str] = field(default_factory=dict)
    """ClusterQueue -> the config key of its team (`tpu-stack:queues.teams[1]`), where a limit is changed."""


@dataclass(frozen=True)
class Evidence:
    """Everything `why` reads about one workload."""

    workload: Obj
    cluster_queue: Obj | None = None
    cluster_queues: list[Obj] = field(default_factory=list)
    """Every ClusterQueue; the cohort's members are those with the same spec.cohortName."""
    cohort: Obj | None = None
    provisioning_requests: list[Obj] = field(default_factory=list)
    """The ProvisioningRequests Kueue created for this workload (owned by it)."""
    events: list[Obj] = field(default_factory=list)
    """Events of the workload and of its pods."""
    pods: list[Obj] = field(default_factory=list)
    unreadable: frozenset[str] = frozenset()
    """What the account may not read (403): "clusterqueues", "cohorts", "provisioningrequests", "pods", "events". A
    Cohort that does not exist (404) is not in it: it has no quota of its own."""


@dataclass(frozen=True)
class Diagnosis:
    state: str
    reason: str
    """What holds the workload, with the numbers."""
    change: str = ""
    """What would change it."""

    @property
    def text(self) -> str:
        return f"{self.reason} {self.change}".strip()


@dataclass(frozen=True)
class QueueQuota:
    """One ClusterQueue's numbers for one flavor and resource."""

    name: str
    nominal: Decimal
    borrowing_limit: Decimal | None
    lending_limit: Decimal | None
    reserved: Decimal
    borrowed: Decimal

    @property
    def lendable(self) -> Decimal:
        """Quota the queue puts in its cohort (all of it without a lending limit)."""
        return self.nominal if self.lending_limit is None else min(self.nominal, self.lending_limit)

    @property
    def local(self) -> Decimal:
        """Quota only this queue may use (what its lending limit keeps back)."""
        return self.nominal - self.lendable

    @property
    def usage_in_cohort(self) -> Decimal:
        return max(Decimal(0), self.reserved - self.local)


@dataclass(frozen=True)
class CohortQuota:
    """A cohort's numbers for one flavor and resource: its own quota plus what its members lend."""

    name: str
    own: Decimal
    members: tuple[QueueQuota, ...]

    @property
    def total(self) -> Decimal:
        return self.own + sum((m.lendable for m in self.members), Decimal(0))

    @property
    def used(self) -> Decimal:
        return sum((m.usage_in_cohort for m in self.members), Decimal(0))

    @property
    def idle(self) -> Decimal:
        return max(Decimal(0), self.total - self.used)


def _number(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else str(value.normalize())


def amount(resource: str, value: Decimal) -> str:
    """'16 TPU chips', '1 TPU chip', '32 cpu', '192Gi memory'."""
    if resource == kueue.TPU:
        return f"{_number(value)} TPU chip{'' if value == 1 else 's'}"
    if resource == "memory" and value % (1 << 30) == 0:
        return f"{_number(value / (1 << 30))}Gi memory"
    return f"{_number(value)} {resource}"


def age(since: datetime | None, now: datetime) -> str:
    """'45s', '20m', '2h', '2h5m', '3d4h'."""
    if since is None:
        return "an unknown time"
    return duration(int((now - since).total_seconds()))


def duration(seconds: int) -> str:
    """Seconds as '45s', '20m', '2h', '2h5m', '3d4h'."""
    seconds = max(0, seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    return f"{minutes}m" if minutes else f"{seconds}s"


def _resource_entry(entries: list[Obj], flavor: str, resource: str) -> Obj | None:
    for entry in entries:
        if entry.get("name") == flavor:
            return next((r for r in entry.get("resources", []) if r.get("name") == resource), None)
    return None


def queue_quota(cluster_queue: Obj, flavor: str, resource: str) -> QueueQuota | None:
    """The queue's quota and reservation of `resource` in `flavor`; None when the queue has no such quota."""
    flavors = [f for group in cluster_queue.get("spec", {}).get("resourceGroups", []) for f in group.get("flavors", [])]
    spec = _resource_entry(flavors, flavor, resource)
    if spec is None:
        return None
    status = _resource_entry(cluster_queue.get("status", {}).get("flavorsReservation", []) or [], flavor, resource)
    limit, lending = spec.get("borrowingLimit"), spec.get("lendingLimit")
    return QueueQuota(
        name=cluster_queue["metadata"]["name"],
        nominal=kueue.quantity(spec.get("nominalQuota")),
        borrowing_limit=None if limit is None else kueue.quantity(limit),
        lending_limit=None if lending is None else kueue.quantity(lending),
        reserved=kueue.quantity((status or {}).get("total")),
        borrowed=kueue.quantity((status or {}).get("borrowed")),
    )


def cohort_quota(evidence: Evidence, cohort: str, flavor: str, resource: str) -> CohortQuota | None:
    """The cohort's numbers; None when the ClusterQueues or the Cohort could not be read. A Cohort's own quota is
    part of what it lends (resource_node.go: its SubtreeQuota starts from its own quotas), so an unreadable one is
    not 0; a Cohort that does not exist has no quota of its own."""
    if {"clusterqueues", "cohorts"} & evidence.unreadable:
        return None
    members = tuple(
        quota
        for cq in sorted(evidence.cluster_queues, key=lambda q: str(q["metadata"]["name"]))
        if cq.get("spec", {}).get("cohortName") == cohort
        for quota in [queue_quota(cq, flavor, resource)]
        if quota is not None
    )
    own = Decimal(0)
    if evidence.cohort is not None:
        flavors = [f for g in evidence.cohort.get("spec", {}).get("resourceGroups", []) for f in g.get("flavors", [])]
        entry = _resource_entry(flavors, flavor, resource)
        own = kueue.quantity((entry or {}).get("nominalQuota"))
    return CohortQuota(cohort, own, members)


def _available(queue: QueueQuota, cohort: CohortQuota | None) -> Decimal:
    """What the queue can reserve now (resource_node.go, available)."""
    local_free = max(Decimal(0), queue.local - queue.reserved)
    if cohort is None:
        return max(Decimal(0), queue.nominal - queue.reserved)
    from_cohort = cohort.total - cohort.used
    if queue.borrowing_limit is not None:
        from_cohort = min(from_cohort, queue.lendable - queue.usage_in_cohort + queue.borrowing_limit)
    return max(Decimal(0), local_free + from_cohort)


def _maximum(queue: QueueQuota, cohort: CohortQuota | None) -> Decimal:
    """The most the queue could ever hold (resource_node.go, potentialAvailable)."""
    if cohort is None:
        return queue.nominal
    reach = queue.local + cohort.total
    if queue.borrowing_limit is not None:
        reach = min(reach, queue.nominal + queue.borrowing_limit)
    return reach


def _holds(queue: QueueQuota) -> str:
    used, nominal = _number(queue.reserved), _number(queue.nominal)
    if queue.reserved <= queue.nominal:
        return f"{queue.name} holds {used} of its nominal {nominal}"
    return f"{queue.name} holds {used}, {_number(queue.reserved - queue.nominal)} beyond its nominal {nominal}"


def _members(cohort: CohortQuota) -> str:
    parts = []
    for member in cohort.members:
        if member.reserved:
            borrowed = f" with {_number(member.borrowed)} borrowed" if member.borrowed else ""
            parts.append(f"{member.name} {_number(member.reserved)}{borrowed}")
    return ", ".join(parts) or "nothing"


def _slices(view: StackView, flavor: str, chips: Decimal) -> str:
    per_slice = view.chips_per_slice.get(flavor)
    if not per_slice:
        return ""
    count = int(chips) // per_slice
    return f" ({count} slice{'' if count == 1 else 's'} of {flavor})"


def _team_key(view: StackView, queue: str, fallback: str) -> str:
    key = view.team_keys.get(queue)
    return key or fallback


def _policy(cluster_queue: Obj, key: str) -> str:
    """A ClusterQueue's spec.preemption policy; Kueue's default is Never (clusterqueue_types.go)."""
    return str((cluster_queue.get("spec", {}).get("preemption") or {}).get(key) or "Never")


def _unknown_cohort(evidence: Evidence, queue: QueueQuota, cohort: str, message: str) -> Diagnosis:
    """The queue is in a cohort the account cannot read: Kueue's own words and the queue's numbers, no arithmetic."""
    limit = (
        f" and may borrow at most {_number(queue.borrowing_limit)} from cohort {cohort} (it borrows "
        f"{_number(queue.borrowed)} now)"
        if queue.borrowing_limit is not None
        else f" in cohort {cohort}"
    )
    hidden = " and ".join(
        words
        for kind, words in (("clusterqueues", "the ClusterQueues"), ("cohorts", f"Cohort {cohort}"))
        if kind in evidence.unreadable
    )
    return Diagnosis(
        "Pending",
        f"Pending: Kueue says: {message}. {_holds(queue)}{limit}; {hidden} could not be read, so what the cohort "
        "lends now is not known.",
        "Read access to ClusterQueues and Cohorts (Kueue's kueue-clusterqueue-viewer-role and "
        "kueue-cohort-viewer-role, bound cluster-wide) lets `tpu-stack why` give the cohort's numbers.",
    )


def _exceeds(
    view: StackView, queue: QueueQuota, cohort: CohortQuota | None, resource: str, flavor: str, need: Decimal, key: str
) -> Diagnosis:
    """More than the queue can ever hold: the bound, and a borrowing limit to raise only when that would do."""
    most = _maximum(queue, cohort)
    needs = f"needs {amount(resource, need)} of flavor {flavor}"
    reach = queue.local + cohort.total if cohort is not None else queue.nominal
    limited = cohort is not None and queue.borrowing_limit is not None and most < reach
    if cohort is None:
        why = f"{queue.name} has only {_number(queue.nominal)}"
    elif limited:
        assert queue.borrowing_limit is not None
        why = (
            f"{queue.name} can hold at most {_number(most)} (its nominal {_number(queue.nominal)} plus its "
            f"borrowing limit {_number(queue.borrowing_limit)})"
        )
    else:
        why = f"cohort {cohort.name} has only {_number(cohort.total)} in all"
    change = f"Submit at most {amount(resource, most)}{_slices(view, flavor, most)}"
    if limited and cohort is not None:
        if need <= reach:
            change += f", or ask the platform team to raise {key} to {_number(need - queue.nominal)}"
        else:
            change += (
                f"; a higher borrowing limit would not be enough, as cohort {cohort.name} has only {_number(reach)} "
                f"for {queue.name} in all"
            )
    return Diagnosis(
        "Pending", f"Pending, and it cannot be admitted as submitted: it {needs}, but {why}.", f"{change}."
    )


def _reclaim(cluster_queue: Obj, queue: QueueQuota, cohort: CohortQuota, needs: str) -> Diagnosis:
    """The request fits in the queue's own nominal quota, which other queues of the cohort borrow now."""
    policy = _policy(cluster_queue, "reclaimWithinCohort")
    usage = f"{_number(cohort.used)} of the cohort's {_number(cohort.total)} are in use ({_members(cohort)})"
    head = (
        f"Pending: other queues of cohort {cohort.name} borrow {queue.name}'s nominal quota. It {needs}; "
        f"{_holds(queue)}, and {usage}."
    )
    if policy == "Any":
        return Diagnosis(
            "Pending",
            f"{head} Kueue takes nominal quota back by preempting the borrowers' workloads (reclaimWithinCohort: Any).",
            "It starts once they have stopped; nothing needs changing.",
        )
    if policy == "LowerPriority":
        return Diagnosis(
            "Pending",
            f"{head} Kueue takes nominal quota back only from the borrowers' workloads of lower priority than this one "
            "(reclaimWithinCohort: LowerPriority).",
            "It starts when those are preempted or the borrowers' workloads finish; a higher --priority lets it "
            "reclaim from more of them.",
        )
    return Diagnosis(
        "Pending",
        f"{head} Kueue does not preempt to take nominal quota back (reclaimWithinCohort: {policy}).",
        "It starts when the borrowers' workloads finish or are deleted.",
    )


def _quota_diagnosis(
    evidence: Evidence, view: StackView, resource: str, flavor: str, *, exceeds: bool, message: str
) -> Diagnosis | None:
    """A pending workload's quota, borrowing limit and cohort, from its ClusterQueue and the cohort's members."""
    cq = evidence.cluster_queue
    if cq is None:
        return None
    queue = queue_quota(cq, flavor, resource)
    if queue is None:
        return None
    need = kueue.requests(evidence.workload).get(resource, Decimal(0))
    cohort_name = cq.get("spec", {}).get("cohortName")
    cohort = None
    if cohort_name:
        cohort = cohort_quota(evidence, cohort_name, flavor, resource)
        if cohort is None:
            return _unknown_cohort(evidence, queue, cohort_name, message)
    needs = f"needs {amount(resource, need)} of flavor {flavor}"
    limit_key = f"{_team_key(view, queue.name, 'the team')}.borrowingLimit.{flavor}"
    if exceeds:
        return _exceeds(view, queue, cohort, resource, flavor, need, limit_key)
    available = _available(queue, cohort)
    short = amount(resource, max(Decimal(0), need - available))
    if cohort is None:
        return Diagnosis(
            "Pending",
            f"Pending: waiting for quota. It {needs}; {_holds(queue)}, so another {short} must be free.",
            f"It starts when workloads in {queue.name} finish or are deleted; the queue is in no cohort and "
            "cannot borrow.",
        )
    if queue.reserved + need <= queue.nominal:
        return _reclaim(cq, queue, cohort, needs)
    own_free = max(Decimal(0), queue.nominal - queue.reserved)
    lends = max(Decimal(0), cohort.idle - own_free)
    headroom = None if queue.borrowing_limit is None else max(Decimal(0), queue.borrowing_limit - queue.borrowed)
    if headroom is not None and headroom < lends:
        assert queue.borrowing_limit is not None
        raise_to = queue.reserved + need - queue.nominal
        enough = _available(replace(queue, borrowing_limit=raise_to), cohort) >= need
        change = (
            f"It starts when {queue.name}'s own workloads free {short}, or when the platform team raises "
            f"{limit_key} to {_number(raise_to)} or more."
            if enough
            else f"It starts when {queue.name}'s own workloads free {short}; a higher {limit_key} alone would not "
            f"be enough now, as the cohort has only {_number(lends)} idle."
        )
        return Diagnosis(
            "Pending",
            f"Pending: held by its borrowing limit. It {needs}; {_holds(queue)} and may borrow at most "
            f"{_number(queue.borrowing_limit)} from cohort {cohort.name} (it borrows {_number(queue.borrowed)} now), "
            f"so it can take only {_number(available)} more while the cohort has {_number(lends)} idle.",
            change,
        )
    usage = f"{_number(cohort.used)} of the cohort's {_number(cohort.total)} are in use ({_members(cohort)})"
    if lends == 0:
        head = f"Pending: cohort {cohort.name} lends nothing now. It {needs}; {_holds(queue)}, and {usage}."
    else:
        head = (
            f"Pending: cohort {cohort.name} lends too little now. It {needs}; {_holds(queue)}, and the cohort "
            f"lends only {_number(lends)}: {usage}."
        )
    return Diagnosis(
        "Pending",
        head,
        f"It starts when another {short} of {flavor} are free in cohort {cohort.name}, as other workloads there "
        "finish or are deleted.",
    )


@dataclass(frozen=True)
class _Target:
    """A workload Kueue preempts for this one, from the preemptor's PreemptedWorkload event."""

    workload: str
    queue: str
    priority: int
    preemptor: int


def _targets(evidence: Evidence, count: int) -> list[_Target]:
    """The latest `count` workloads Kueue preempted for this one (events expire, so there may be fewer)."""
    found: dict[str, _Target] = {}
    events = _events_of(evidence, evidence.workload["metadata"]["name"], ("PreemptedWorkload",))
    for event in reversed(events):
        match = _PREEMPTED_WORKLOAD.search(str(event.get("message") or event.get("note") or ""))
        if match and match["workload"] not in found and len(found) < count:
            found[match["workload"]] = _Target(
                match["workload"], match["queue"], int(match["preemptee"]), int(match["preemptor"])
            )
    return list(reversed(found.values()))


def _compared(target: _Target) -> str:
    if target.priority < target.preemptor:
        return f"priority {target.priority}, below this one's {target.preemptor}"
    if target.priority > target.preemptor:
        return f"priority {target.priority}, above this one's {target.preemptor}"
    return f"priority {target.priority}, the same as this one"


def _preempting(evidence: Evidence, assignment: str, count: int) -> Diagnosis:
    """The scheduler found room by preemption and evicts the targets; the workload is admitted once they stop."""
    targets = _targets(evidence, count)
    head = f"Pending: Kueue is preempting {count} workload{'' if count == 1 else 's'} to make room for it"
    if targets:
        head += ": " + "; ".join(f"{t.workload} of {t.queue} ({_compared(t)})" for t in targets)
    head += "."
    found = _UNUSED.search(assignment)
    cq = evidence.cluster_queue
    queue = queue_quota(cq, found["flavor"], found["resource"]) if cq is not None and found else None
    if cq is not None and found and queue is not None:
        need = kueue.requests(evidence.workload).get(found["resource"], Decimal(0))
        head += f" It needs {amount(found['resource'], need)} of flavor {found['flavor']}; {_holds(queue)}"
        cohort = cq.get("spec", {}).get("cohortName")
        if targets and all(t.queue == queue.name for t in targets):
            head += (
                f", and Kueue preempts workloads of lower priority in {queue.name} for it (withinClusterQueue: "
                f"{_policy(cq, 'withinClusterQueue')})"
            )
        elif cohort and queue.reserved + need <= queue.nominal:
            head += (
                f": the chips it lacks are its own nominal quota, lent to other queues of cohort {cohort}, and Kueue "
                f"takes them back (reclaimWithinCohort: {_policy(cq, 'reclaimWithinCohort')})"
            )
        head += "."
    return Diagnosis(
        "Pending", head, "It starts once they have stopped and released their quota; nothing needs changing."
    )


def _pending(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    workload = evidence.workload
    reserved = kueue.condition(workload, kueue.QUOTA_RESERVED)
    if reserved is None:
        created = kueue.timestamp(workload["metadata"].get("creationTimestamp"))
        return Diagnosis(
            "Pending",
            f"Pending: Kueue has not evaluated it yet (created {age(created, now)} ago).",
            "Ask again in a few seconds.",
        )
    message = str(reserved.get("message", ""))
    if message == _DEFERRED:
        return Diagnosis(
            "Pending",
            "Pending: it fits once the workloads Kueue is preempting for another workload have stopped, and Kueue "
            "admits it then.",
            "Nothing needs changing.",
        )
    if message == _OVERLAPPING:
        return Diagnosis(
            "Pending",
            "Pending: the workloads Kueue would preempt for it are being preempted for another workload first; Kueue "
            "tries again in its next cycle.",
            "Nothing needs changing.",
        )
    preempting = _PENDING_PREEMPTION.search(message)
    if preempting:
        return _preempting(evidence, message[: preempting.start()], int(preempting["count"]))
    failed = _PREEMPTION_FAILED.search(message)
    if failed:
        count = int(failed["count"])
        return Diagnosis(
            "Pending",
            f"Pending: Kueue tried to preempt {count} workload{'' if count == 1 else 's'} to make room for it and "
            f"could not; it tries again in its next cycle. Kueue says: {message[: failed.start()]}.",
            "Nothing needs changing; if it lasts, the platform team can read the Kueue controller's log.",
        )
    for pattern, exceeds in ((_MAXIMUM, True), (_UNUSED, False)):
        found = pattern.search(message)
        if found:
            diagnosis = _quota_diagnosis(
                evidence, view, found["resource"], found["flavor"], exceeds=exceeds, message=message
            )
            if diagnosis is not None:
                return diagnosis
    held = _held_by_topology(evidence, view, message)
    if held is not None:
        return held
    return Diagnosis("Pending", f"Pending: Kueue says: {message}", "")


# ---- topology-aware scheduling (queues.placement) ------------------------------------------------------------------
# Kueue v0.19.2: once a workload's quota fits, TAS looks for nodes in the flavor's Topology and, where they are not
# there, writes pkg/cache/scheduler/tas_flavor_snapshot.go notFitMessage as the pod set's reason (flavorassigner.go
# psAssignment.reason(failure.Reason)); a flavor with a topologyName refuses a pod set that asks for no placement in a
# ClusterQueue that also has other flavors (pkg/scheduler/flavorassigner/tas_flavorassigner.go
# checkPodSetAndFlavorMatchForTAS).
_TOPOLOGY_FIT = re.compile(
    r'topology "(?P<topology>[^"]+)" (?:doesn\'t allow to fit any of|allows to fit only (?P<fit>\d+) out of) '
    r"(?P<total>\d+) (?P<unit>slice|pod)\(s\)(?:\. Total nodes: (?P<nodes>\d+); excluded: (?P<excluded>[^;]*))?"
)
_TAS_ONLY = re.compile(r'Flavor "(?P<flavor>[^"]+)" supports only TopologyAwareScheduling')
_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
_BLOCK_LABEL = "cloud.google.com/gce-topology-block"


_EXCLUSION = re.compile(
    r'(?P<what>nodeSelector|affinity|topologyDomain|schedulerLibraryNoFit|taint "[^"]*"|resource "[^"]*"): '
    r"(?P<count>\d+)"
)
"""One part of Kueue's exclusion list (tas_flavor_snapshot.go formatReasons)."""
_EXCLUDED_BY = {
    "nodeSelector": "not selected by its node selector",
    "affinity": "not matching its affinity",
    "topologyDomain": "outside the domain of the node it replaces",
    "schedulerLibraryNoFit": "refused by the scheduler's filters",
}


def _excluded(text: str) -> str:
    """Kueue's exclusion list in words: '1 without a free google.com/tpu, 2 tainted node.kubernetes.io/unreachable'."""
    parts = []
    for found in _EXCLUSION.finditer(text):
        what, count = found["what"], found["count"]
        if what.startswith("taint "):
            parts.append(f"{count} tainted {what.removeprefix('taint ').strip(chr(34))}")
        elif what.startswith("resource "):
            parts.append(f"{count} without a free {what.removeprefix('resource ').strip(chr(34))}")
        else:
            parts.append(f"{count} {_EXCLUDED_BY[what]}")
    return ", ".join(parts) or text


def _held_by_topology(evidence: Evidence, view: StackView, message: str) -> Diagnosis | None:
    """The quota is there but the nodes are not, by the flavor's Topology: each slice needs one node pool with all its
    nodes free and ready (and with the block level, the slices one block); or the flavor places by topology and the
    workload asked for no placement."""
    workload = evidence.workload
    flavor = kueue.selected_flavor(workload, view.flavors)
    pools = view.node_pools.get(flavor or "", [])
    only = _TAS_ONLY.search(message)
    if only:
        return Diagnosis(
            "Pending",
            f"Pending: flavor {only['flavor']} places workloads by topology, and Kueue admits there only workloads "
            "that ask for a placement; this one asks for none.",
            "Submit it with `tpu-stack submit`, which adds the request, or add Kueue's pod-set annotations to its pod "
            "template (docs/workloads.md, Placement by topology).",
        )
    found = _TOPOLOGY_FIT.search(message)
    if found is None:
        return None
    total, fit = int(found["total"]), int(found["fit"] or 0)
    unit = "slice" if found["unit"] == "slice" else "pod"
    podsets = workload.get("spec", {}).get("podSets") or [{}]
    annotations = (podsets[0].get("template") or {}).get("metadata", {}).get("annotations") or {}
    one_block = annotations.get(_REQUIRED_TOPOLOGY) == _BLOCK_LABEL
    where = f"{total} {unit}s" if total != 1 else f"1 {unit}"
    room = f"room for only {fit} of its {where}" if fit else f"room for none of its {where}"
    per_slice = view.vms_per_slice.get(flavor or "")
    together = ", all slices in one block" if one_block else ""
    each = (
        f" (each slice needs the {per_slice} nodes of one node pool free and ready{together})"
        if unit == "slice" and per_slice
        else ""
    )
    counted = f" Of its {found['nodes']} nodes Kueue left out {_excluded(found['excluded'])}." if found["nodes"] else ""
    on = f" on flavor {flavor}" if flavor else ""
    reason = f"Pending: its quota is free, but topology {found['topology']}{on} has {room}{each}.{counted}"
    named = f"node pools {', '.join(pools)}" if pools else "the flavor's node pools"
    block = " in one reservation block" if one_block else ""
    change = (
        f"It starts when enough of {named} have all their nodes ready and free{block}: a node that is down, "
        "being repaired or running another pod holds its whole slice. `kubectl get nodes -l "
        "cloud.google.com/gke-nodepool=<pool>` shows them."
    )
    if one_block:
        change += (
            " If the pools are in different blocks, the slices never share one: set queues.placement.slices: preferred."
        )
    return Diagnosis("Pending", reason, change)


def _attempt(request: Obj) -> int:
    """The attempt number Kueue ends a ProvisioningRequest's name with (`<workload>-<check>-<attempt>`)."""
    suffix = str(request["metadata"]["name"]).rsplit("-", 1)[-1]
    return int(suffix) if suffix.isdigit() else 0


def _request_for(evidence: Evidence, check: str | None) -> Obj | None:
    """The latest ProvisioningRequest of admission check `check` (any check when None): Kueue names them
    `<workload>-<check>-<attempt>` and keeps only the last attempt (provisioning/provisioning.go, controller.go)."""
    prefix = f"{evidence.workload['metadata']['name']}-{check}-" if check else ""
    matching = [r for r in evidence.provisioning_requests if str(r["metadata"]["name"]).startswith(prefix)]
    return max(matching or evidence.provisioning_requests, key=_attempt, default=None)


def _request_state(request: Obj, now: datetime) -> str:
    """A ProvisioningRequest in words (conditions of autoscaling.x-k8s.io/v1)."""
    name = request["metadata"]["name"]
    for kind, words in (("Failed", "failed"), ("CapacityRevoked", "lost its capacity"), ("BookingExpired", "expired")):
        found = kueue.condition(request, kind)
        if found and found.get("status") == "True":
            return f"ProvisioningRequest {name} {words}: {found.get('message', '')} ({found.get('reason', '')})"
    provisioned = kueue.condition(request, "Provisioned")
    if provisioned and provisioned.get("status") == "True":
        return f"ProvisioningRequest {name} is provisioned; Kueue admits the workload next"
    accepted = kueue.condition(request, "Accepted")
    if accepted and accepted.get("status") == "True":
        since = age(kueue.timestamp(accepted.get("lastTransitionTime")), now)
        detail = f" ({provisioned['message']})" if provisioned and provisioned.get("message") else ""
        return f"ProvisioningRequest {name}, accepted {since} ago and not provisioned yet{detail}"
    created = kueue.timestamp(request["metadata"].get("creationTimestamp"))
    return f"ProvisioningRequest {name}, created {age(created, now)} ago and not accepted yet"


def _admission_flavor(workload: Obj, view: StackView) -> str | None:
    return kueue.admitted_flavor(workload) or kueue.selected_flavor(workload, view.flavors)


def _chips(workload: Obj) -> str:
    return amount(kueue.TPU, kueue.requests(workload).get(kueue.TPU, Decimal(0)))


def _check_state(workload: Obj, name: str | None) -> Obj:
    """The workload's state of admission check `name` (status.admissionChecks)."""
    checks = workload.get("status", {}).get("admissionChecks", []) or []
    return next((dict(c) for c in checks if c.get("name") == name), {})


def _checks(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    """Quota is reserved; an admission check (the queued-provisioning request) is not ready."""
    workload = evidence.workload
    admission = workload.get("status", {}).get("admission") or {}
    flavor = _admission_flavor(workload, view) or "?"
    parts = []
    for check in workload.get("status", {}).get("admissionChecks", []) or []:
        if check.get("state") == "Ready":
            continue
        name, state = check["name"], check.get("state", "Pending")
        said = str(check.get("message") or "")
        said = "" if said.startswith(_RESET) else said
        request = _request_for(evidence, name)
        if state == "Retry":
            parts.append(f"admission check {name} failed and Kueue retries it" + (f": {said}" if said else ""))
        elif request is not None:
            parts.append(f"admission check {name} waits for {_request_state(request, now)}")
        elif "provisioningrequests" in evidence.unreadable:
            parts.append(f"admission check {name} is {state}, and its ProvisioningRequest could not be read")
        elif said:
            parts.append(f"admission check {name} is {state}: {said}")
        else:
            attempt = int(check.get("retryCount") or 0) + 1
            parts.append(
                f"admission check {name} is {state}: Kueue is creating its ProvisioningRequest (attempt {attempt} of "
                f"{1 + kueue.PROVISIONING_RETRIES})"
            )
    vms = view.vms_per_slice.get(flavor)
    nodes = f"the {vms} nodes of the slice" if vms and vms > 1 else "the node"
    return Diagnosis(
        "Provisioning",
        f"Waiting for capacity: quota is reserved in {admission.get('clusterQueue', '?')} ({_chips(workload)} of "
        f"flavor {flavor}), and {'; '.join(parts) or 'its admission checks are not ready'}.",
        f"GKE creates {nodes} when it grants the request, and the pods start then; nothing needs changing (delete "
        "the workload to give up its place).",
    )


def _check_in_message(message: str) -> tuple[str | None, str]:
    """(check, what it said) from an Evicted message that quotes a check in Retry or Rejected."""
    found = _CHECK_IN_MESSAGE.search(message)
    return (found["check"], found["said"] or "") if found else (None, message)


def _ran(workload: Obj) -> int:
    """Seconds the workload was admitted in earlier admissions (workload_types.go
    accumulatedPastExecutionTimeSeconds, added when Admitted turns False, pkg/workload/admissionchecks.go)."""
    return int(workload.get("status", {}).get("accumulatedPastExecutionTimeSeconds") or 0)


def _rejection(evidence: Evidence, check: str | None, said: str) -> tuple[str | None, int]:
    """Why the provisioning check was Rejected: "failed" (GKE never provided the capacity), "expired" (it did, and
    the booking expired before the workload was admitted onto it) or "revoked" (GKE took it back from a workload
    that was running); None when nothing left tells. With the attempt it happened at.

    Kueue deletes the ProvisioningRequests of an evicted workload (CleanupProvisioningRequestsOnEviction, on by
    default in 0.19), so the request is usually gone; the workload's own record then decides: the provisioning
    controller's event for the change to Rejected (from Ready: the capacity had been provided), whether it was
    admitted (a BookingExpired request rejects only a workload that is not; controller.go syncCheckStates), and
    the autoscaler's BookingExpired message."""
    workload = evidence.workload
    attempt = kueue.evictions(workload, kueue.EVICTED_BY_ADMISSION_CHECK) + 1
    request = _request_for(evidence, check)
    if request is not None:
        for kind, condition in (("failed", "Failed"), ("revoked", "CapacityRevoked"), ("expired", "BookingExpired")):
            if kueue.is_true(request, condition):
                return kind, _attempt(request) or attempt
    ran = _ran(workload) > 0 or kueue.is_true(workload, kueue.ADMITTED)
    changes = [
        found
        for event in _events_of(evidence, workload["metadata"]["name"], ("AdmissionCheckUpdated",))
        for found in [_CHECK_UPDATED.search(str(event.get("message") or event.get("note") or ""))]
        if found and found["after"] == "Rejected" and found["check"] == (check or found["check"])
    ]
    if changes:
        if changes[-1]["before"] != "Ready":
            return "failed", attempt
        return ("revoked" if ran else "expired"), attempt
    if ran:
        return "revoked", attempt
    if said == BOOKING_EXPIRED_MESSAGE:
        return "expired", attempt
    return None, attempt


def _deactivated(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    workload = evidence.workload
    evicted = kueue.condition(workload, kueue.EVICTED) or {}
    reason, message = str(evicted.get("reason", "")), str(evicted.get("message", ""))
    if not reason.endswith(kueue.EVICTED_BY_ADMISSION_CHECK):
        return Diagnosis(
            "Deactivated",
            f"Stopped: Kueue deactivated the workload: {message or reason}.",
            "Delete it and submit it again.",
        )
    check, said = _check_in_message(message)
    kind, attempt = _rejection(evidence, check, said)
    chips = f"{_chips(workload)} of flavor {_admission_flavor(workload, view) or '?'}"
    total = 1 + kueue.PROVISIONING_RETRIES
    detail = f" ({said})" if said else ""
    again = f"Delete it (tpu-stack delete {kueue.job_name(workload)}) and submit it again to queue a new request"
    if kind == "failed":
        return Diagnosis(
            "Deactivated",
            f"Stopped: queued provisioning attempt {attempt} of {total} failed, and Kueue deactivated the workload: "
            f"GKE did not provide {chips}{detail}.",
            f"{again}, or submit to a pool group with capacity now.",
        )
    if kind == "expired":
        return Diagnosis(
            "Deactivated",
            f"Stopped: GKE provided {chips} for queued provisioning attempt {attempt} of {total}, but the booking "
            f"expired before the workload was admitted onto them{detail}, and Kueue deactivated the workload.",
            f"{again}.",
        )
    if kind == "revoked":
        ran = _ran(workload)
        limit = str((workload["metadata"].get("annotations") or {}).get(kueue.MAX_RUN_ANNOTATION, ""))
        return Diagnosis(
            "Deactivated",
            f"Stopped: {f'it ran for {duration(ran)}, then ' if ran else ''}GKE took back the capacity of its queued "
            f"provisioning request{detail}, and Kueue deactivated the workload."
            + (
                f" The request's run limit (maxRunDurationSeconds) is {duration(int(limit))}."
                if limit.isdigit()
                else ""
            ),
            f"{again}; checkpoint to /checkpoints so the next run resumes.",
        )
    return Diagnosis(
        "Deactivated",
        f"Stopped: Kueue deactivated the workload after its queued provisioning request was rejected (attempt "
        f"{attempt} of {total}){f': {said}' if said else ''}.",
        f"{again}.",
    )


def _requeue_at(workload: Obj) -> datetime | None:
    """When a backoff ends (workload_types.go status.requeueState.requeueAt)."""
    return kueue.timestamp((workload.get("status", {}).get("requeueState") or {}).get("requeueAt"))


def _then_pending(evidence: Evidence, view: StackView, now: datetime, evicted: Obj) -> Diagnosis | None:
    """What holds an evicted workload once the scheduler has looked at it again: only then does the QuotaReserved
    message differ from the eviction's, which the job reconciler copies into it (jobframework/reconciler.go)."""
    reserved = kueue.condition(evidence.workload, kueue.QUOTA_RESERVED) or {}
    if reserved.get("message") == evicted.get("message"):
        return None
    return _pending(evidence, view, now)


def _retrying(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    """A queued-provisioning attempt failed (or its booking expired) with retries left: Kueue evicted the workload,
    released its quota, reset the check to Pending with retryCount + 1, and requeues it after a backoff
    (workload_controller.go reconcileCheckBasedEviction, evict.go resetChecksOnEviction)."""
    workload = evidence.workload
    evicted = kueue.condition(workload, kueue.EVICTED) or {}
    check, said = _check_in_message(str(evicted.get("message", "")))
    failed = int(_check_state(workload, check).get("retryCount") or 0)
    failed = failed or kueue.evictions(workload, kueue.EVICTED_BY_ADMISSION_CHECK) or 1
    total = 1 + kueue.PROVISIONING_RETRIES
    if said.startswith(_RETRY_BOOKING):
        what = (
            f"GKE provided {_chips(workload)} for queued provisioning attempt {failed} of {total}, but the booking "
            f"expired before the workload was admitted onto them ({said.removeprefix(_RETRY_BOOKING)})"
        )
    else:
        what = f"queued provisioning attempt {failed} of {total} failed ({said.removeprefix(_RETRY_FAILED)})"
    last = f"if attempt {total} fails too, Kueue deactivates the workload"
    requeue_at = _requeue_at(workload)
    if kueue.is_true(workload, kueue.QUOTA_RESERVED):
        return Diagnosis(
            "Retrying",
            f"Retrying: {what}; its pods are stopping, then Kueue retries.",
            f"Nothing needs changing ({last}).",
        )
    if requeue_at is not None and requeue_at > now:
        wait = duration(int((requeue_at - now).total_seconds()))
        return Diagnosis(
            "Retrying",
            f"Waiting to retry: {what}. Kueue released its quota and tries again in {wait} (at "
            f"{requeue_at:%H:%M:%S} UTC) with attempt {failed + 1}, a new ProvisioningRequest.",
            f"Nothing needs changing ({last}); delete the workload to give up its place.",
        )
    reason = f"Retrying: {what}. Its backoff is over and it is queued for attempt {failed + 1}."
    pending = _then_pending(evidence, view, now, evicted)
    if pending is not None and pending.reason.startswith("Pending"):
        return Diagnosis("Retrying", f"{reason} Now {pending.reason[0].lower()}{pending.reason[1:]}", pending.change)
    return Diagnosis("Retrying", reason, f"Nothing needs changing ({last}).")


def _evicted(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    """Evicted for another reason (a timeout, a stopped queue): Kueue queues it again."""
    workload = evidence.workload
    evicted = kueue.condition(workload, kueue.EVICTED) or {}
    since = age(kueue.timestamp(evicted.get("lastTransitionTime")), now)
    reason = f"Evicted {since} ago: {str(evicted.get('message') or evicted.get('reason', '')).rstrip('.')}."
    if kueue.is_true(workload, kueue.QUOTA_RESERVED):
        return Diagnosis("Evicted", f"{reason} Its pods are stopping; then Kueue queues it again.", "")
    pending = _then_pending(evidence, view, now, evicted)
    if pending is not None:
        return Diagnosis("Evicted", f"{reason} Now {pending.reason[0].lower()}{pending.reason[1:]}", pending.change)
    requeue_at = _requeue_at(workload)
    when = (
        f" in {duration(int((requeue_at - now).total_seconds()))} (at {requeue_at:%H:%M:%S} UTC)"
        if requeue_at is not None and requeue_at > now
        else ""
    )
    return Diagnosis("Evicted", f"{reason} Kueue queues it again{when}.", "")


def _preempted(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    workload = evidence.workload
    evicted = kueue.condition(workload, kueue.EVICTED) or {}
    preempted = kueue.condition(workload, kueue.PREEMPTED) or {}
    message = str(preempted.get("message") or evicted.get("message", ""))
    why_reason = str(preempted.get("reason", ""))
    cause = _PREEMPTION_REASONS.get(why_reason, "by Kueue")
    by = _PREEMPTOR_PATH.search(message)
    preemptor = f", for a workload of {by['queue']}" if by else ""
    priorities = ""
    for event in evidence.events:
        found = _PRIORITIES.search(str(event.get("message") or event.get("note") or ""))
        if event.get("reason") == "Preempted" and found:
            priorities = f" (priority {found['preemptor']} against its {found['preemptee']})"
    since = age(kueue.timestamp(evicted.get("lastTransitionTime")), now)
    stopping = kueue.is_true(workload, kueue.QUOTA_RESERVED)
    then = "its pods are stopping, then it is queued again" if stopping else "it is queued again"
    reason = f"Preempted {since} ago {cause}{preemptor}{priorities}; {then} and will restart from the beginning."
    cq = evidence.cluster_queue
    flavor = _admission_flavor(workload, view)
    queue = queue_quota(cq, flavor, kueue.TPU) if cq is not None and flavor else None
    checkpoint = "Checkpoint to /checkpoints so a restart resumes."
    if why_reason == "InClusterQueue":
        name = cq["metadata"]["name"] if cq is not None else "its ClusterQueue"
        change = (
            f"In {name} priority decides, whatever the quota: submit it again with a higher --priority, or wait for "
            f"the higher-priority work to finish. {checkpoint}"
        )
    elif queue is not None and why_reason in ("InCohortReclamation", "InCohortReclaimWhileBorrowing"):
        change = (
            f"Work within {queue.name}'s nominal {amount(kueue.TPU, queue.nominal)} of {flavor} is not reclaimed by "
            f"other queues; work beyond it borrows, and the lenders may take it back. {checkpoint}"
        )
    else:
        change = checkpoint
    pending = None if stopping else _then_pending(evidence, view, now, evicted)
    if pending is not None and pending.reason.startswith("Pending:"):
        reason += " Now " + pending.reason[0].lower() + pending.reason[1:]
    return Diagnosis("Preempted", reason, change)


def _events_of(evidence: Evidence, name: str, reasons: tuple[str, ...]) -> list[Obj]:
    found = [
        e
        for e in evidence.events
        if (e.get("involvedObject") or e.get("regarding") or {}).get("name") == name and e.get("reason") in reasons
    ]
    return sorted(found, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))


def _admitted(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    workload = evidence.workload
    admitted = kueue.condition(workload, kueue.ADMITTED) or {}
    admission = workload.get("status", {}).get("admission") or {}
    cq_name = admission.get("clusterQueue", "?")
    flavor = _admission_flavor(workload, view) or "?"
    since = age(kueue.timestamp(admitted.get("lastTransitionTime")), now)
    expected = kueue.pod_count(workload)
    running = [p for p in evidence.pods if kueue.pod_running(p)]
    head = f"admitted {since} ago by {cq_name} on flavor {flavor} ({_chips(workload)})"
    if len(running) >= expected:
        queue = queue_quota(evidence.cluster_queue, flavor, kueue.TPU) if evidence.cluster_queue else None
        change = "Nothing holds it back."
        if queue is not None and queue.borrowed:
            cohort = evidence.cluster_queue.get("spec", {}).get("cohortName") if evidence.cluster_queue else None
            change = (
                f"Nothing holds it back, but {queue.name} borrows {amount(kueue.TPU, queue.borrowed)} of {flavor} "
                f"from cohort {cohort}: the queues that lend them may reclaim them by preemption."
            )
        return Diagnosis("Running", f"Running: {head}; {len(running)} of {expected} pods are running.", change)
    unschedulable = []
    for pod in evidence.pods:
        scheduled = kueue.condition(pod, "PodScheduled")
        if scheduled and scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
            unschedulable.append((pod, str(scheduled.get("message", ""))))
    if not unschedulable:
        return Diagnosis(
            "Starting",
            f"Starting: {head}; {len(running)} of {expected} pods are running.",
            f"The rest are being created; `tpu-stack logs {kueue.job_name(workload)}` shows the leader's output.",
        )
    pod, scheduler = unschedulable[0]
    reason = (
        f"Admitted but not running: {head}, and {len(unschedulable)} of {expected} pods cannot be scheduled: "
        f"{scheduler.rstrip('.')}."
    )
    names = view.node_pools.get(flavor, [])
    pools = f"node pool{'s' if len(names) > 1 else ''} {', '.join(names)}" if names else f"the node pools of {flavor}"
    scale = _events_of(evidence, pod["metadata"]["name"], AUTOSCALER_REASONS)
    if not scale:
        return Diagnosis("Starting", reason, f"They start when {pools} have nodes ready for them.")
    event = scale[-1]
    said = str(event.get("message") or event.get("note") or "").rstrip(".")
    if event.get("reason") == "TriggeredScaleUp":
        return Diagnosis(
            "Starting",
            f"{reason} The cluster autoscaler is adding nodes: {said}.",
            "The pods start when they are ready.",
        )
    verb = "could not add nodes" if event.get("reason") == "FailedScaleUp" else "did not add nodes"
    backoff = (
        " (an earlier scale-up of the pool failed, often for lack of TPU capacity in the zone; it retries after a "
        "backoff)"
        if _BACKOFF in said
        else ""
    )
    return Diagnosis(
        "Starting",
        f"{reason} The cluster autoscaler {verb}: {said}{backoff}.",
        f"They start when {pools} can add nodes for them (the pool's size limits, the zone's TPU capacity and the "
        "project's quota decide); delete the workload to free its quota meanwhile.",
    )


def explain(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    """Why the workload is (not) running, and what would change it.

    Eviction is read before admission: Kueue sets Evicted=True first, and QuotaReserved and Admitted stay True
    until the job is suspended and its pods have stopped (evict.go prepareForEviction, jobframework/reconciler.go)."""
    workload = evidence.workload
    finished = kueue.condition(workload, kueue.FINISHED)
    if finished and finished.get("status") == "True":
        state = "Failed" if finished.get("reason") == "Failed" else "Succeeded"
        since = age(kueue.timestamp(finished.get("lastTransitionTime")), now)
        return Diagnosis(state, f"{state} {since} ago: {finished.get('message', '')}".rstrip(": "), "")
    if workload.get("spec", {}).get("active") is False:
        return _deactivated(evidence, view, now)
    evicted = kueue.condition(workload, kueue.EVICTED)
    if evicted and evicted.get("status") == "True":
        if evicted.get("reason") == kueue.EVICTED_BY_PREEMPTION:
            return _preempted(evidence, view, now)
        if evicted.get("reason") == kueue.EVICTED_BY_ADMISSION_CHECK:
            return _retrying(evidence, view, now)
        return _evicted(evidence, view, now)
    if kueue.is_true(workload, kueue.ADMITTED):
        return _admitted(evidence, view, now)
    if kueue.is_true(workload, kueue.QUOTA_RESERVED):
        return _checks(evidence, view, now)
    return _pending(evidence, view, now)
