"""Why a workload is not running, in plain words with the numbers, who can change it and how.

Pure: the Kueue objects, ProvisioningRequests, jobs, pods and events as the API server returns them in, a Diagnosis
out. What each object means follows the sources of the versions the stack installs (tests/tpu_stack/corpus holds
one case per situation, with the source lines):

- Kueue v0.19.2 (kubernetes-sigs/kueue): Workload conditions QuotaReserved, Admitted, PodsReady, Evicted, Preempted,
  Requeued, Finished and their reasons (apis/kueue/v1beta2/workload_types.go); the scheduler's message, one reason
  per flavor tried, sorted and joined (pkg/scheduler/flavorassigner: Status.Message, Assignment.Message,
  fitsResourceQuota, checkFlavorForPodSets), written with reason "Pending" (scheduler.go requeueAndUpdate); the
  workload controller's "Inadmissible" queue problems (pkg/controller/core/workload_controller.go getQueueBlocker)
  and a ClusterQueue's or LocalQueue's own Active condition (pkg/cache/scheduler/clusterqueue.go inactiveReason,
  localqueue_controller.go); the queue order, priority then time (pkg/cache/queue/cluster_queue.go
  baseCompareFunc), and StrictFIFO's head-of-line requeue (RequeueIfNotPresent); quota arithmetic
  (pkg/cache/scheduler/resource_node.go available, potentialAvailable); the provisioning admission check
  (pkg/controller/admissionchecks/provisioning/controller.go) and MultiKueue's (admissionchecks/multikueue/workload.go:
  nominated workers, "The workload was admitted on %q", "Admitting remote lost", "Workload evicted on worker
  cluster"); eviction and its retries (workload_controller.go reconcileCheckBasedEviction, reconcileNotReadyTimeout,
  triggerDeactivation; pkg/workload/evict/evict.go; pkg/workload/workload.go UpdateRequeueState); waitForPodsReady's
  defaults (apis/config/v1beta2/defaults.go: 30 minutes, backoff 60 s doubling to an hour); preemption
  (pkg/scheduler/preemption/preemption.go).
- ProvisioningRequests (autoscaling.x-k8s.io/v1, cluster-autoscaler 1.35.2 apis/provisioningrequest): read by their
  condition types (Accepted, Provisioned, Failed, BookingExpired, CapacityRevoked), the API Kueue's provisioning
  controller reads too, and never by their messages: the stack's queued pools use the class queued-provisioning.gke.io,
  which the open-source autoscaler skips (provreq/processor.go SupportedProvisioningClass) and GKE's own controller
  serves, so its texts and timers are GKE's and are quoted as they come.
- cluster-autoscaler 1.35.2 (kubernetes/autoscaler): the pod events TriggeredScaleUp and NotTriggerScaleUp
  (processors/status/eventing_scale_up_processor.go); GKE's autoscaler also reports FailedScaleUp, quoted as it comes.
- Kubernetes: the Job controller's FailedCreate event ("Error creating: %v", pkg/controller/controller_utils.go),
  JobSet v0.12.0's JobCreationFailed, kube-scheduler's PodScheduled=False/Unschedulable message.

Numbers are read from the ClusterQueues themselves (nominal quota, borrowing and lending limits, reserved quota), so
they are the cluster's, not the config's. Cohorts are read one level deep: the stack's teams share one Cohort with no
parent. What the account could not read is named, never counted as zero.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from components.config.base import parse_duration
from tpu_stack import kueue
from tpu_stack.kueue import Obj

RUNS, WAITS, STOPPED = "runs", "waits", "stopped"
"""What a script reads from `why`'s exit code: it runs (or finished successfully), it waits and will run without
anyone resubmitting it, or it has stopped for good (failed, deactivated, or it can never run as submitted)."""
USER, TEAM, PLATFORM = "user", "team", "platform team"
"""Who can change what holds a workload: its submitter, the team whose queue it shares, the platform team that owns
the stack (quotas, queues, node pools, Kueue)."""

# The scheduler's reasons, one per flavor tried (flavorassigner.go fitsResourceQuota, checkFlavorForPodSets).
_PODSET = re.compile(r"couldn't assign flavors to pod set (?P<podset>[^:;]+): (?P<reasons>.*?)(?=; couldn't assign |$)")
_MAXIMUM = re.compile(
    r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>[^,\s]+), previously considered podsets requests "
    r"\((?P<before>[^)]*)\) \+ current podset request \((?P<request>[^)]*)\) > maximum capacity \((?P<most>[^)]*)\)"
)
_UNUSED = re.compile(
    r"insufficient unused quota for (?P<resource>\S+) in flavor (?P<flavor>[^,\s]+), (?P<more>\S+) more needed"
)
_MISMATCH = re.compile(r"flavor (?P<flavor>[^,\s]+) doesn't match node affinity")
_TAINT = re.compile(r"untolerated taint (?P<taint>.+?) in flavor (?P<flavor>[^,\s]+)")
_NOT_FOUND = re.compile(r"flavor (?P<flavor>[^,\s]+) not found")
# Kueue's topology check of a flavor, made before node affinity and quota (flavorassigner.go checkFlavorForPodSets,
# tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS): a flavor with a Topology refuses a pod set that asks for no
# placement in a ClusterQueue with other flavors; one without refuses a pod set that asks for one, as does one whose
# Topology lacks the level asked for.
_TAS_ONLY = re.compile(r'Flavor "(?P<flavor>[^"]+)" supports only TopologyAwareScheduling')
_TAS_UNSUPPORTED = re.compile(r'Flavor "(?P<flavor>[^"]+)" does not support TopologyAwareScheduling')
_TAS_LEVEL = re.compile(r'Flavor "(?P<flavor>[^"]+)" does not contain the requested level')
_FLAVOR_NAMED = re.compile(r'\b[Ff]lavor "?(?P<flavor>[a-z0-9][a-z0-9.-]*)"?')
"""A flavor named in a reason `why` does not read, to put that reason on its rung."""
_TOPOLOGY_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-slice-size",
)
"""The pod-template annotations that ask Kueue for a placement (apis/kueue/v1beta2/topology_types.go; read by
pkg/controller/jobframework/tas.go into the pod set's topologyRequest)."""
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
_FAILED_CHECKS = "The workload has failed admission checks"
# The preemptor's event for each workload it preempts (preemption.go IssuePreemptions).
_PREEMPTED_WORKLOAD = re.compile(
    r"Preempted workload (?P<workload>\S+) \(UID: [^)]*\) in ClusterQueue (?P<queue>\S+); preemptor effective "
    r"priority: (?P<preemptor>-?\d+)\b.*preemptee effective priority: (?P<preemptee>-?\d+)"
)
# Queue problems (workload_controller.go getQueueBlocker, reconcileOnLocalQueueActiveState,
# reconcileOnClusterQueueActiveState; scheduler.go nominate).
_LOCAL_QUEUE_MISSING = re.compile(r"^LocalQueue (?P<queue>\S+) (?:doesn't exist|is terminating or missing)$")
_LOCAL_QUEUE_INACTIVE = re.compile(r"^LocalQueue (?P<queue>\S+) (?:is inactive|is stopped)$")
_CLUSTER_QUEUE_MISSING = re.compile(
    r"^ClusterQueue (?P<queue>\S+) (?:doesn't exist|not found|is terminating or missing)$"
)
_CLUSTER_QUEUE_INACTIVE = re.compile(r"^ClusterQueue (?P<queue>\S+) (?:is inactive|is stopped)$")
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
# MultiKueue's check messages (multikueue/workload.go syncAdmittingRemoteState, updateACS, the eviction on a worker).
_ADMITTED_ON = re.compile(r'The workload was admitted on "(?P<worker>[^"]+)"')
_EVICTED_ON_WORKER = re.compile(r'Workload evicted on worker cluster: "(?P<worker>[^"]+)"')
_REMOTE_LOST = "Admitting remote lost"
_REMOTE_GONE = "Admitting remote no longer exists"
AUTOSCALER_REASONS = ("FailedScaleUp", "NotTriggerScaleUp", "TriggeredScaleUp")
_BACKOFF = "in backoff after failed scale-up"
"""The autoscaler's skipped-node-group reason (core/scaleup/orchestrator/skippedreasons.go)."""
_NO_MATCH = "didn't match Pod's node affinity/selector"
"""kube-scheduler's NodeAffinity reason, which the autoscaler also counts per node group (node_affinity.go
ErrReasonPod; eventing_scale_up_processor.go ReasonsMessage)."""
FAILED_CREATE = "FailedCreate"
"""The Job controller's event when it cannot create a pod ("Error creating: %v", controller_utils.go)."""
JOB_CREATION_FAILED = "JobCreationFailed"
"""JobSet's event when it cannot create a child Job (jobset pkg/constants/constants.go)."""
IMAGE_WAITS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "ImageInspectError")
"""A container waiting for an image the kubelet cannot get (kubernetes pkg/kubelet/images/types.go)."""
CREATE_WAITS = ("CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreCreateHookError")
"""A container the runtime cannot create or start as configured (pkg/kubelet/kuberuntime/kuberuntime_container.go,
pkg/kubelet/container/sync_result.go)."""
CRASH_LOOP = "CrashLoopBackOff"
"""A container that exited and that the kubelet restarts after a growing back-off (sync_result.go
ErrCrashLoopBackOff; kuberuntime_manager.go doBackOff); its last run is in lastState.terminated."""
_SERVICE_ACCOUNT = re.compile(r"error looking up service account (?P<namespace>[^/\s]+)/(?P<name>[^:\s]+): ")
_POD_SECURITY = "violates PodSecurity"
_MULTIKUEUE_EVENT = "MultiKueue"
"""The reason of MultiKueue's events on the manager's Workload (multikueue/workload.go)."""
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"


@dataclass(frozen=True)
class PodsReadySettings:
    """Kueue's waitForPodsReady as the stack runs it (its output `waitForPodsReady`, components/config/controllers.py);
    by default Kueue 0.19.2's own, for a stack deployed before it exported them (apis/config/v1beta2/defaults.go: on,
    30 minutes, recovery timeout = timeout, backoff 60 s doubling up to 3600 s, no limit on requeues)."""

    timeout: int = 1800
    recovery_timeout: int | None = 1800
    """None: recovery timeouts are off (`0s`: pkg/controller/core/core.go keeps none)."""
    backoff_base: int = 60
    backoff_max: int = 3600
    limit: int | None = None

    @classmethod
    def of(cls, configured: Mapping[str, Any]) -> PodsReadySettings:
        """The settings of a Kueue Configuration's `waitForPodsReady`, defaulted as Kueue defaults them."""
        timeout = parse_duration(str(configured["timeout"])) if configured.get("timeout") else 1800
        recovery = parse_duration(str(configured["recoveryTimeout"])) if "recoveryTimeout" in configured else timeout
        strategy = configured.get("requeuingStrategy") or {}
        limit = strategy.get("backoffLimitCount")
        return cls(
            timeout=timeout,
            recovery_timeout=recovery or None,
            backoff_base=int(strategy.get("backoffBaseSeconds", 60)),
            backoff_max=int(strategy.get("backoffMaxSeconds", 3600)),
            limit=None if limit is None else int(limit),
        )

    def backoff(self, count: int) -> int:
        """Seconds before the count-th requeue (60 s * 2^(count-1), capped; pkg/workload/workload.go
        UpdateRequeueState, without the jitter of at most 0.01%)."""
        return int(min(self.backoff_max, self.backoff_base * 2 ** max(0, count - 1)))


@dataclass(frozen=True)
class StackView:
    """What the stack's outputs say about its capacity, queues and clusters."""

    flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    """Flavor (pool group) -> node labels (output `flavors`)."""
    node_pools: dict[str, list[str]] = field(default_factory=dict)
    """Pool group -> its GKE node pools (output `tpuPools`)."""
    chips_per_slice: dict[str, int] = field(default_factory=dict)
    vms_per_slice: dict[str, int] = field(default_factory=dict)
    team_keys: dict[str, str] = field(default_factory=dict)
    """ClusterQueue -> the config key of its team (`tpu-stack:queues.teams[1]`), where a limit is changed."""
    local_queues: dict[str, str] = field(default_factory=dict)
    """Namespace -> the LocalQueue the stack gives it (output `queues`)."""
    check_controllers: dict[str, str] = field(default_factory=dict)
    """Admission check -> its controller, for the checks the stack declares (`<pool>-provisioning`, `multikueue`)."""
    check_flavors: dict[str, str] = field(default_factory=dict)
    """Provisioning admission check -> the flavor it is attached to (onFlavors)."""
    workers: dict[str, str] = field(default_factory=dict)
    """MultiKueue worker -> its region (output `multiKueue.workers`); empty unless the stack is a manager."""
    service_accounts: dict[str, str] = field(default_factory=dict)
    """`namespace/name` -> the config key that declares that Kubernetes service account (bucket readers/writers)."""
    pods_ready: PodsReadySettings = field(default_factory=PodsReadySettings)
    worker_lost_timeout: int = 900
    """MultiKueue's workerLostTimeout as the stack sets it (components/kueue_install.py MULTIKUEUE_SETTINGS)."""
    queueing_key: str = "tpu-stack:queues.queueingStrategy"


@dataclass(frozen=True)
class Unread:
    """Why a MultiKueue worker's copy of a workload could not be read."""

    said: str
    refused: bool
    """The worker answered and refused the account (401 or 403); else it could not be reached at all."""

    def __str__(self) -> str:
        return f"could not be {'read' if self.refused else 'reached'}: {self.said}"


@dataclass(frozen=True)
class Evidence:
    """Everything `why` reads about one workload, on one cluster."""

    workload: Obj
    cluster_queue: Obj | None = None
    cluster_queues: list[Obj] = field(default_factory=list)
    """Every ClusterQueue; the cohort's members are those with the same spec.cohortName."""
    cohort: Obj | None = None
    provisioning_requests: list[Obj] = field(default_factory=list)
    """The ProvisioningRequests Kueue created for this workload (owned by it)."""
    events: list[Obj] = field(default_factory=list)
    """Events of the workload, its job, the job's child Jobs and its pods."""
    pods: list[Obj] = field(default_factory=list)
    unreadable: frozenset[str] = frozenset()
    """What the account may not read (403): "clusterqueues", "cohorts", "provisioningrequests", "pods", "events",
    "localqueues". A Cohort that does not exist (404) is not in it: it has no quota of its own."""
    local_queue: Obj | None = None
    """The LocalQueue the workload names; None when it does not exist or could not be read."""
    queue_workloads: list[Obj] = field(default_factory=list)
    """The other Workloads of its ClusterQueue that the account could read, for the queue's order."""
    admission_checks: list[Obj] = field(default_factory=list)
    """The AdmissionChecks the account could read (cluster-scoped)."""
    job: Obj | None = None
    """The Job or JobSet of the workload."""
    job_ref: tuple[str, str] | None = None
    """(kind, name) of the workload's Job or JobSet; a MultiKueue worker's copy of a Workload has no owner
    reference (multikueue/workload.go cloneForCreate), so the command passes the manager's."""
    cluster: str | None = None
    """The MultiKueue worker this was read on; None for the stack's own cluster."""
    remote: dict[str, Evidence | Unread | None] = field(default_factory=dict)
    """On a MultiKueue manager: worker -> its copy of the workload, None when it has none, or why it could not be
    read."""


@dataclass(frozen=True)
class Diagnosis:
    state: str
    reason: str
    """What holds the workload, with the numbers."""
    change: str = ""
    """What would change it, and who can."""
    who: tuple[str, ...] = ()
    """Who can change it (USER, TEAM, PLATFORM); empty when nothing needs changing."""
    outcome: str = WAITS
    cluster: str | None = None
    """The MultiKueue worker it runs on, or was last dispatched to."""

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
    """Seconds as '45s', '1m30s', '20m' (from 5 minutes on, to the nearest minute), '2h', '2h5m', '3d4h'."""
    seconds = max(0, seconds)
    if seconds >= 300:
        seconds = (seconds + 30) // 60 * 60
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs and minutes < 5 else f"{minutes}m"
    return f"{secs}s"


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _resource_entry(entries: list[Obj], flavor: str, resource: str) -> Obj | None:
    for entry in entries:
        if entry.get("name") == flavor:
            return next((r for r in entry.get("resources", []) if r.get("name") == resource), None)
    return None


def _queue_flavors(cluster_queue: Obj, resource: str = kueue.TPU) -> list[str]:
    """The flavors of the resource group that covers `resource`, in the order Kueue tries them."""
    for group in cluster_queue.get("spec", {}).get("resourceGroups", []) or []:
        if resource in (group.get("coveredResources") or []):
            return [str(f.get("name")) for f in group.get("flavors", []) or []]
    return []


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
    if queue.nominal == 0:
        return f"{queue.name} holds {used} and has no nominal quota of its own there (it can only borrow)"
    if queue.reserved <= queue.nominal:
        return f"{queue.name} holds {used} of its nominal {nominal}"
    return f"{queue.name} holds {used}, {_number(queue.reserved - queue.nominal)} beyond its nominal {nominal}"


MEMBERS_NAMED = 5
"""Queues a cohort sentence names; a cohort of many teams is summed up past them."""


def _members(cohort: CohortQuota) -> str:
    """The cohort's queues that hold quota, with what they hold: all of them, in name order, up to MEMBERS_NAMED;
    past that the largest holders, and the rest summed up, so that a 50-team cohort stays one readable sentence."""
    holding = [member for member in cohort.members if member.reserved]
    rest = ""
    if len(holding) > MEMBERS_NAMED:
        largest = sorted(holding, key=lambda m: (-m.reserved, m.name))
        holding, others = largest[:MEMBERS_NAMED], largest[MEMBERS_NAMED:]
        total = sum((m.reserved for m in others), Decimal(0))
        rest = f" and {len(others)} more queues holding {_number(total)}"
    parts = []
    for member in holding:
        borrowed = f" with {_number(member.borrowed)} borrowed" if member.borrowed else ""
        parts.append(f"{member.name} {_number(member.reserved)}{borrowed}")
    return (", ".join(parts) + rest) or "nothing"


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


def _job_ref(evidence: Evidence) -> tuple[str, str] | None:
    return evidence.job_ref or kueue.owner(evidence.workload)


def _job_name(evidence: Evidence) -> str:
    found = _job_ref(evidence)
    return found[1] if found else kueue.job_name(evidence.workload)


def _chips(workload: Obj) -> str:
    return amount(kueue.TPU, kueue.requests(workload).get(kueue.TPU, Decimal(0)))


def _more(resource: str, value: Decimal) -> str:
    """'8 more TPU chips', '1 more TPU chip'."""
    words = amount(resource, value)
    number, _, unit = words.partition(" ")
    return f"{number} more {unit}"


def _need(workload: Obj, resource: str = kueue.TPU) -> Decimal:
    return kueue.requests(workload).get(resource, Decimal(0))


# ---- one flavor (a ladder's rung) --------------------------------------------------------------------------------

NEVER, FULL, ROOM, OTHER_SHAPE, UNKNOWN = "never", "full", "room", "other shape", "unknown"
NO_TOPOLOGY, UNREAD = "no topology", "unread"


@dataclass(frozen=True)
class Rung:
    """What one flavor of the workload's queue can do for it now."""

    flavor: str
    kind: str
    """NEVER (it can never hold the request), FULL (not now), ROOM (it has room now), OTHER_SHAPE (the pods do not
    select it), NO_TOPOLOGY (it cannot place the pods as they ask), UNKNOWN (numbers out of reach: Kueue's words
    only), UNREAD (Kueue gives a reason `why` does not read)."""
    words: str
    """What holds it there, with the numbers."""
    when: str = ""
    """When it starts there by itself ("8 more TPU chips of multislice are free in cohort tpu-stack")."""
    action: str = ""
    """What someone can change so that it starts there ("the platform team can raise ... to 16 or more")."""
    who: tuple[str, ...] = ()
    most: Decimal | None = None
    """The most the queue could ever hold of this flavor."""
    short: Decimal = Decimal(0)
    """How many more must be free."""
    raise_to: Decimal | None = None
    """A borrowing limit that would let it be admitted here (when that alone would be enough)."""


@dataclass(frozen=True)
class _Said:
    """What the scheduler's message says of one flavor."""

    kind: str
    number: Decimal | None = None
    """`maximum capacity (n)` or `n more needed`."""
    text: str = ""


def parse_message(message: str) -> dict[str, _Said]:
    """Flavor -> the scheduler's reason for it (read_message without the reasons it does not read)."""
    return read_message(message)[0]


def read_message(message: str) -> tuple[dict[str, _Said], list[str]]:
    """Flavor -> the scheduler's reason for it, for every pod set named in the message (flavorassigner.go
    Assignment.Message joins pod sets with "; ", Status.Message the sorted reasons with ", "); and every part of the
    reasons `why` does not read, as Kueue wrote it. Such a reason is put on the flavor it names (kind UNREAD), if any:
    it is never dropped, since a message whose reasons are not all read cannot be judged out of date."""
    said: dict[str, _Said] = {}
    unread: list[str] = []
    patterns = (
        (_MAXIMUM, NEVER, "most"),
        (_UNUSED, FULL, "more"),
        (_MISMATCH, OTHER_SHAPE, ""),
        (_TAINT, OTHER_SHAPE, ""),
        (_NOT_FOUND, OTHER_SHAPE, ""),
        (_TAS_ONLY, OTHER_SHAPE, ""),
        (_TAS_UNSUPPORTED, NO_TOPOLOGY, ""),
        (_TAS_LEVEL, NO_TOPOLOGY, ""),
    )
    for podset in _PODSET.finditer(message):
        reasons = podset["reasons"]
        spans: list[tuple[int, int]] = []
        for pattern, kind, number in patterns:
            for found in pattern.finditer(reasons):
                spans.append(found.span())
                value = kueue.quantity(found[number]) if number else None
                said.setdefault(found["flavor"], _Said(kind, value, found.group(0)))
        for text in _leftovers(reasons, spans):
            unread.append(text)
            named = _FLAVOR_NAMED.search(text)
            if named:
                said.setdefault(named["flavor"], _Said(UNREAD, None, text))
    return said, unread


def _leftovers(text: str, spans: list[tuple[int, int]]) -> list[str]:
    """The parts of `text` outside `spans`, without the ", " that joins reasons."""
    parts, start = [], 0
    for begin, end in sorted(spans):
        parts.append(text[start:begin])
        start = max(start, end)
    parts.append(text[start:])
    return [part.strip(" ,") for part in parts if part.strip(" ,")]


def _selects(workload: Obj, labels: dict[str, str]) -> bool:
    """Whether the pods may run on a flavor: every label of the flavor that the pods select has the flavor's value
    (flavorassigner.go flavorSelector keeps only the flavor's own label keys)."""
    podsets = workload.get("spec", {}).get("podSets", []) or []
    for podset in podsets:
        selector = (podset.get("template", {}).get("spec", {}) or {}).get("nodeSelector") or {}
        if any(key in selector and selector[key] != value for key, value in labels.items()):
            return False
    return True


def _reclaim_words(cq: Obj, queue: QueueQuota, cohort: CohortQuota) -> tuple[str, str, str]:
    """The request fits in the queue's own nominal quota, which other queues of the cohort borrow now: (what holds
    it, when it starts, what its submitter can change)."""
    policy = _policy(cq, "reclaimWithinCohort")
    usage = f"{_number(cohort.used)} of the cohort's {_number(cohort.total)} are in use ({_members(cohort)})"
    words = f"other queues of cohort {cohort.name} borrow its nominal quota: {_holds(queue)}, and {usage}"
    if policy == "Any":
        return (
            f"{words}; Kueue takes nominal quota back by preempting the borrowers' workloads "
            "(reclaimWithinCohort: Any)",
            "Kueue has preempted them and they have stopped",
            "",
        )
    if policy == "LowerPriority":
        return (
            f"{words}; Kueue takes nominal quota back only from their workloads of lower priority than this one "
            "(reclaimWithinCohort: LowerPriority)",
            "those are preempted or the borrowers' workloads finish",
            "you can submit it again with a higher --priority to reclaim from more of them",
        )
    return (
        f"{words}; Kueue does not preempt to take nominal quota back (reclaimWithinCohort: {policy})",
        "the borrowers' workloads finish or are deleted",
        "",
    )


def rung(evidence: Evidence, view: StackView, flavor: str, said: _Said | None, resource: str = kueue.TPU) -> Rung:
    """What holds the workload on one flavor of its ClusterQueue, from the queue's numbers (Kueue's own words, and
    the numbers in them, when the queues could not be read)."""
    workload, cq = evidence.workload, evidence.cluster_queue
    need = _need(workload, resource)
    if said is not None and said.kind in (OTHER_SHAPE, NO_TOPOLOGY):
        return Rung(flavor, said.kind, said.text)
    if said is not None and said.kind == UNREAD:
        return Rung(flavor, UNREAD, f'Kueue says "{said.text}"')
    queue = queue_quota(cq, flavor, resource) if cq is not None else None
    cohort_name = (cq or {}).get("spec", {}).get("cohortName")
    cohort = cohort_quota(evidence, cohort_name, flavor, resource) if cohort_name else None
    if queue is None or (cohort_name and cohort is None):
        if said is None:
            return Rung(flavor, UNKNOWN, "not tried by Kueue in its last cycle, and the queues could not be read")
        if said.kind == NEVER:
            most = said.number or Decimal(0)
            return Rung(flavor, NEVER, f"can never hold it: at most {amount(resource, most)} there", most=most)
        short = said.number or Decimal(0)
        limit = f"; {_holds(queue)}" if queue is not None else ""
        if queue is not None and queue.borrowing_limit is not None:
            limit += (
                f" and may borrow at most {_number(queue.borrowing_limit)} from cohort {cohort_name} (it borrows "
                f"{_number(queue.borrowed)} now)"
            )
        return Rung(flavor, FULL, f"Kueue counts {_more(resource, short)} needed{limit}", short=short)
    most = _maximum(queue, cohort)
    available = _available(queue, cohort)
    if need > most or (said is not None and said.kind == NEVER):
        return _never(view, queue, cohort, resource, flavor, need, most)
    if need <= available:
        return Rung(
            flavor,
            ROOM,
            f"has room for it now: {queue.name} can take {_number(available)} more ({_holds(queue)})",
            most=most,
        )
    short = need - available
    more = _more(resource, short)
    if cohort is None:
        return Rung(
            flavor,
            FULL,
            f"{_holds(queue)}, so {more} must be free; the queue is in no cohort and cannot borrow",
            f"workloads of {queue.name} free {more}",
            most=most,
            short=short,
        )
    if queue.reserved + need <= queue.nominal:
        words, when, action = _reclaim_words(cq or {}, queue, cohort)
        return Rung(flavor, FULL, words, when, action, (USER,) if action else (), most=most, short=short)
    own_free = max(Decimal(0), queue.nominal - queue.reserved)
    lends = max(Decimal(0), cohort.idle - own_free)
    headroom = None if queue.borrowing_limit is None else max(Decimal(0), queue.borrowing_limit - queue.borrowed)
    key = f"{_team_key(view, queue.name, 'the team')}.borrowingLimit.{flavor}"
    if headroom is not None and headroom < lends:
        assert queue.borrowing_limit is not None
        raise_to = queue.reserved + need - queue.nominal
        enough = _available(replace(queue, borrowing_limit=raise_to), cohort) >= need
        words = (
            f"held by its borrowing limit: {_holds(queue)} and may borrow at most {_number(queue.borrowing_limit)} "
            f"from cohort {cohort.name} (it borrows {_number(queue.borrowed)} now), so it can take only "
            f"{_number(available)} more while the cohort has {_number(lends)} idle"
        )
        if enough:
            return Rung(
                flavor,
                FULL,
                words,
                f"{queue.name}'s own workloads free {more}",
                f"the platform team can raise {key} to {_number(raise_to)} or more",
                (PLATFORM,),
                most=most,
                short=short,
                raise_to=raise_to,
            )
        return Rung(
            flavor,
            FULL,
            words,
            f"{queue.name}'s own workloads free {more} (a higher {key} alone would not be enough now, as the cohort "
            f"has only {_number(lends)} idle)",
            most=most,
            short=short,
        )
    usage = f"{_number(cohort.used)} of the cohort's {_number(cohort.total)} are in use ({_members(cohort)})"
    return Rung(
        flavor,
        FULL,
        f"{_holds(queue)}, and {usage}, so it can take {_number(available)} and {more} must be free",
        f"{more} of {flavor} are free in cohort {cohort.name}",
        most=most,
        short=short,
    )


def _never(
    view: StackView,
    queue: QueueQuota,
    cohort: CohortQuota | None,
    resource: str,
    flavor: str,
    need: Decimal,
    most: Decimal,
) -> Rung:
    """More than the queue can ever hold here: the bound, and a borrowing limit that would be enough."""
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
        why = f"{queue.name} can hold at most {_number(most)}: cohort {cohort.name} has no more for it"
    raise_to = None
    if limited and cohort is not None and need <= reach:
        raise_to = need - queue.nominal
    return Rung(flavor, NEVER, f"can never hold it: {why}", most=most, raise_to=raise_to)


def _rungs(evidence: Evidence, view: StackView, said: dict[str, _Said]) -> list[Rung]:
    """Every flavor the workload's pods could use in its queue, in the queue's order (a ladder's rungs), with what
    holds it on each; then flavors the message names that the queue no longer lists."""
    cq = evidence.cluster_queue
    order = _queue_flavors(cq) if cq is not None else []
    refused = (OTHER_SHAPE, NO_TOPOLOGY)
    names = [
        f
        for f in order
        if said.get(f, _Said(FULL)).kind not in refused and _selects(evidence.workload, view.flavors.get(f, {}))
    ]
    # A reason `why` does not read names a rung only if the queue has that flavor: the words after "flavor" in such a
    # reason need not be a flavor's name (it is quoted whole all the same).
    names += [
        f
        for f in said
        if f not in names and said[f].kind not in refused and (said[f].kind != UNREAD or f in order or cq is None)
    ]
    return [rung(evidence, view, flavor, said.get(flavor)) for flavor in names]


def _rung_line(found: Rung) -> str:
    return f"on {found.flavor}: {found.words}"


def _join(parts: list[str]) -> str:
    return "; ".join(p for p in parts if p)


def _who(*groups: tuple[str, ...]) -> tuple[str, ...]:
    """Actors in a stable order (user, team, platform team), each once."""
    everyone = {actor for group in groups for actor in group}
    return tuple(actor for actor in (USER, TEAM, PLATFORM) if actor in everyone)


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


@dataclass(frozen=True)
class _Order:
    """Where the workload stands in its ClusterQueue's queue (cluster_queue.go baseCompareFunc)."""

    strict: bool
    head: Obj | None
    """Under StrictFIFO, the head when it is another workload."""
    higher: list[Obj]
    """Pending workloads of higher priority ahead of it."""


def _order_time(workload: Obj) -> str:
    """The time Kueue orders a pending workload by: its eviction by a PodsReady timeout or an admission check, else
    its creation (pkg/workload/workload.go GetQueueOrderTimestamp, with the default Eviction timestamp)."""
    evicted = kueue.condition(workload, kueue.EVICTED) or {}
    if evicted.get("status") == "True" and evicted.get("reason") in (
        kueue.EVICTED_BY_TIMEOUT,
        kueue.EVICTED_BY_ADMISSION_CHECK,
    ):
        return str(evicted.get("lastTransitionTime") or "")
    return str(workload.get("metadata", {}).get("creationTimestamp") or "")


def _waiting(workload: Obj, now: datetime) -> bool:
    """A workload in its ClusterQueue's queue: active, not finished, without quota, not in a backoff."""
    if workload.get("spec", {}).get("active") is False or kueue.is_true(workload, kueue.FINISHED):
        return False
    if kueue.is_true(workload, kueue.QUOTA_RESERVED):
        return False
    requeue_at = _requeue_at(workload)
    return requeue_at is None or requeue_at <= now


def _order_key(workload: Obj) -> tuple[int, str, str]:
    return (-kueue.priority(workload), _order_time(workload), str(workload["metadata"].get("uid", "")))


def _order(evidence: Evidence, now: datetime) -> _Order:
    workload, cq = evidence.workload, evidence.cluster_queue
    strict = (cq or {}).get("spec", {}).get("queueingStrategy") == "StrictFIFO"
    mine = _order_key(workload)
    name = workload["metadata"]["name"]
    ahead = sorted(
        (
            other
            for other in evidence.queue_workloads
            if other["metadata"]["name"] != name and _waiting(other, now) and _order_key(other) < mine
        ),
        key=_order_key,
    )
    higher = [other for other in ahead if kueue.priority(other) > kueue.priority(workload)]
    return _Order(strict, ahead[0] if strict and ahead else None, higher)


def _described(workload: Obj, now: datetime) -> str:
    created = kueue.timestamp(workload["metadata"].get("creationTimestamp"))
    return (
        f"{kueue.job_name(workload)} (priority {kueue.priority(workload)}, {_chips(workload)}, submitted "
        f"{age(created, now)} ago)"
    )


def _head_state(evidence: Evidence, view: StackView, head: Obj) -> tuple[str, bool]:
    """What holds the head of a StrictFIFO queue, and whether it can never be admitted as submitted."""
    reserved = kueue.condition(head, kueue.QUOTA_RESERVED) or {}
    said, unknown = read_message(str(reserved.get("message", "")))
    rungs = _rungs(replace(evidence, workload=head, queue_workloads=[]), view, said)
    usable = [r for r in rungs if r.kind != OTHER_SHAPE]
    if said and not usable and not unknown:
        what = (
            "its pods ask for a placement by topology that no flavor of the queue gives"
            if any(found.kind == NO_TOPOLOGY for found in said.values())
            else "no flavor of the queue matches its pods"
        )
        return f"it can never be admitted as submitted ({what})", True
    if usable and all(r.kind == NEVER for r in usable):
        most = max((r.most or Decimal(0)) for r in usable)
        return (
            f"it can never be admitted as submitted (it needs {_chips(head)}, at most {amount(kueue.TPU, most)})",
            True,
        )
    full = [r for r in usable if r.kind == FULL]
    if full and len(full) == len([r for r in usable if r.kind != NEVER]):
        best = min(full, key=lambda r: r.short)
        return f"it waits for {_more(kueue.TPU, best.short)} of {best.flavor} to be free", False
    return "Kueue tries it again in its next cycle", False


def _with_order(
    evidence: Evidence, view: StackView, now: datetime, order: _Order, head: str
) -> tuple[str, str, tuple[str, ...]]:
    """Sentences on the queue's order: StrictFIFO's head, or workloads of higher priority ahead."""
    cq_name = (evidence.cluster_queue or {}).get("metadata", {}).get("name", "its ClusterQueue")
    if order.head is not None:
        state, never = _head_state(evidence, view, order.head)
        words = (
            f"{head} Under StrictFIFO {cq_name} tries only the workload at its head, {_described(order.head, now)}, "
            f"and {state}; nothing behind it is tried until it is admitted or deleted."
        )
        changes = []
        who: tuple[str, ...] = (PLATFORM,)
        if never:
            changes.append(f"Your team can delete or resize {kueue.job_name(order.head)}")
            who = (TEAM, PLATFORM)
        changes.append(
            f"the platform team can set {view.queueing_key} to BestEffortFIFO, so that workloads behind a head that "
            "does not fit are tried"
        )
        return words, _capitalized("; ".join(changes)) + ".", who
    if order.higher:
        listed = ", ".join(_described(w, now) for w in order.higher[:3])
        more = f" and {len(order.higher) - 3} more" if len(order.higher) > 3 else ""
        return (
            f"{head} {_plural(len(order.higher), 'workload')} of higher priority "
            f"{'waits' if len(order.higher) == 1 else 'wait'} ahead of it in {cq_name}: {listed}{more}; Kueue gives "
            "free quota to them first.",
            "",
            (),
        )
    return head, "", ()


def _quota(evidence: Evidence, view: StackView, now: datetime, message: str, since: datetime | None) -> Diagnosis:
    """A pending workload the scheduler could not fit: every rung with its numbers, the queue's order, and whether
    Kueue's message still holds."""
    workload = evidence.workload
    said, unknown = read_message(message)
    rungs = _rungs(evidence, view, said)
    ladder = len(rungs) > 1
    needs = f"It needs {_chips(workload)}"
    order = _order(evidence, now)
    unread = _unread_queues(evidence)
    if not rungs and unknown:
        return _unknown_reasons(unknown, needs, [])
    if not rungs and any(s.kind == NO_TOPOLOGY for s in said.values()):
        return _no_placement(evidence, said)
    if not rungs:
        return Diagnosis(
            "Pending",
            f"Pending: none of its queue's flavors matches its pods' node selector. Kueue says: {message}.",
            "You can submit it again for a pool group of the stack (`tpu-stack submit --pool`).",
            (USER,),
            STOPPED,
        )
    room = [r for r in rungs if r.kind == ROOM]
    full = [r for r in rungs if r.kind in (FULL, UNKNOWN)]
    if unknown and (room or not full):
        numbers = [rung(evidence, view, r.flavor, None) if r.kind == UNREAD else r for r in rungs]
        return _unknown_reasons(unknown, needs, numbers)
    also = _kueue_also(unknown)
    if room:
        fits = room[0]
        head = f"Pending: Kueue's message ({age(since, now)} ago) is out of date: {fits.flavor} {fits.words}. {needs}."
        words, change, who = _with_order(evidence, view, now, order, head)
        if words == head:
            return Diagnosis("Pending", head, "Kueue admits it in one of its next cycles; nothing needs changing.")
        return Diagnosis("Pending", words, change, who)
    if full:
        lines = [_rung_line(r) for r in rungs]
        every = " on every rung" if ladder and not unknown else ""
        head = f"Pending: waiting for quota{every}. {needs}; {_join(lines)}.{also}{unread}"
        words, change, who = _with_order(evidence, view, now, order, head)
        if not change:
            change, who = _starts(full)
        return Diagnosis("Pending", words, change, who)
    most = max((r.most or Decimal(0)) for r in rungs)
    best = max(rungs, key=lambda r: r.most or Decimal(0))
    lines = [_rung_line(r) for r in rungs]
    reason = f"Pending, and it cannot be admitted as submitted. {needs}; {_join(lines)}.{unread}"
    change = f"You can submit at most {amount(kueue.TPU, most)}{_slices(view, best.flavor, most)}"
    who = (USER,)
    raisable = [r for r in rungs if r.raise_to is not None]
    if raisable:
        found = raisable[0]
        queue_name = (evidence.cluster_queue or {}).get("metadata", {}).get("name", "")
        key = f"{_team_key(view, queue_name, 'the team')}.borrowingLimit.{found.flavor}"
        change += f", or ask the platform team to raise {key} to {_number(found.raise_to or Decimal(0))}"
        who = (USER, PLATFORM)
    elif any("borrowing limit" in r.words for r in rungs):
        change += "; a higher borrowing limit would not be enough, the cohort is too small"
    return Diagnosis("Pending", reason, change + ".", who, STOPPED)


def _kueue_also(unknown: list[str]) -> str:
    if not unknown:
        return ""
    quoted = "; ".join(f'"{text}"' for text in unknown)
    return f" Kueue also says {quoted}, which `why` does not read."


def _unknown_reasons(unknown: list[str], needs: str, rungs: list[Rung]) -> Diagnosis:
    """Kueue gives reasons `why` has no reading for: quoted as Kueue wrote them, with the queue's numbers, and never
    taken for an out-of-date message (room in the numbers does not mean the reason no longer holds)."""
    quoted = "; ".join(f'"{text}"' for text in unknown)
    what = "a reason" if len(unknown) == 1 else "reasons"
    numbers = f"; by the queue's numbers, {_join([_rung_line(r) for r in rungs])}" if rungs else ""
    return Diagnosis(
        "Pending",
        f"Pending: Kueue says {quoted}, {what} `why` does not read. {needs}{numbers}.",
        f"`why` cannot tell who can change that {what.removeprefix('a ')}: the platform team can look it up in "
        "Kueue's code and its controller's log.",
        (PLATFORM,),
    )


def _placement_asked(workload: Obj) -> list[str]:
    """The pod-template annotations with which the workload's pods ask Kueue for a placement by topology."""
    asked = []
    for podset in workload.get("spec", {}).get("podSets", []) or []:
        annotations = ((podset.get("template") or {}).get("metadata") or {}).get("annotations") or {}
        asked += [f"{key}: {annotations[key]}" for key in _TOPOLOGY_ANNOTATIONS if key in annotations]
    return list(dict.fromkeys(asked))


def _no_placement(evidence: Evidence, said: dict[str, _Said]) -> Diagnosis:
    """Every flavor refuses the pods, some because they ask for a placement by topology that the flavor cannot give
    (tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS): Kueue checks that before quota, so the workload is never
    admitted as submitted, whatever the queue has free."""
    cq_name = (evidence.cluster_queue or {}).get("metadata", {}).get("name", "its ClusterQueue")
    asked = _placement_asked(evidence.workload)
    how = f" ({'; '.join(asked)})" if asked else ""
    refusals = "; ".join(f"{flavor}: {_refusal(found)}" for flavor, found in sorted(said.items()))
    level = any(_TAS_LEVEL.fullmatch(found.text) for found in said.values())
    other = ", or asking only for levels its flavor's Topology has" if level else ""
    return Diagnosis(
        "Pending",
        f"Pending, and it cannot be admitted as submitted: its pods ask Kueue for a placement by topology{how}, and "
        f"Kueue refuses every flavor of {cq_name} for it before it looks at quota: {refusals}.",
        f"You can delete it (tpu-stack delete {_job_name(evidence)}) and submit it again without Kueue's topology "
        f"annotations on its pod template{other}; `tpu-stack submit` adds them only for the pool groups the stack "
        "places by topology (queues.placement, docs/workloads.md).",
        (USER,),
        STOPPED,
    )


def _refusal(found: _Said) -> str:
    """A flavor's refusal without the flavor's name, which the sentence gives."""
    for pattern in (_TAS_UNSUPPORTED, _TAS_LEVEL, _TAS_ONLY):
        match = pattern.fullmatch(found.text)
        if match:
            return found.text.removeprefix(f'Flavor "{match["flavor"]}" ')
    return found.text


def _starts(full: list[Rung]) -> tuple[str, tuple[str, ...]]:
    """When a workload waiting for quota starts by itself, on whichever rung has room first, and what someone can
    change so that it starts sooner."""
    whens = [r.when for r in full if r.when]
    actions = [r.action for r in full if r.action]
    sentence = f"It starts when {' or when '.join(whens)}." if whens else "It starts when quota frees up."
    if actions:
        return f"{sentence} {_capitalized('; '.join(actions))}.", _who(*(r.who for r in full))
    return f"{sentence} Nothing needs changing.", ()


def _unread_queues(evidence: Evidence) -> str:
    hidden = [
        words
        for kind, words in (("clusterqueues", "the ClusterQueues"), ("cohorts", "the Cohort"))
        if kind in evidence.unreadable
    ]
    if not hidden:
        return ""
    return (
        f" {_capitalized(' and '.join(hidden))} could not be read (403), so these are Kueue's own numbers; Kueue's "
        "kueue-clusterqueue-viewer-role and kueue-cohort-viewer-role, bound cluster-wide, give `why` the queues' "
        "numbers."
    )


# ---- queue problems -------------------------------------------------------------------------------------------


def _active(obj: Obj) -> Obj:
    return kueue.condition(obj, "Active") or {}


def _restart(kind: str, name: str, namespace: str = "") -> str:
    """The command that sets a stopped ClusterQueue or LocalQueue (in `namespace`) running again."""
    where = f" -n {namespace}" if kind == "LocalQueue" else ""
    return f'kubectl patch {kind.lower()} {name}{where} --type merge -p \'{{"spec":{{"stopPolicy":"None"}}}}\''


def _check_object(evidence: Evidence, name: str) -> Obj | None:
    return next((c for c in evidence.admission_checks if c["metadata"]["name"] == name), None)


def _inactive_cluster_queue(evidence: Evidence, view: StackView, name: str, said: str) -> Diagnosis:
    """A ClusterQueue that admits nothing: its own Active condition says why (clusterqueue.go inactiveReason)."""
    cq = evidence.cluster_queue if (evidence.cluster_queue or {}).get("metadata", {}).get("name") == name else None
    if cq is None:
        unread = (
            " (ClusterQueues could not be read (403), so not why)" if "clusterqueues" in evidence.unreadable else ""
        )
        return Diagnosis(
            "Pending",
            f'Pending: ClusterQueue {name} admits nothing: Kueue says "{said}"{unread}.',
            "The platform team can read `kubectl get clusterqueue "
            + name
            + " -o yaml` (status.conditions) and fix it.",
            (PLATFORM,),
        )
    active = _active(cq)
    reason, message = str(active.get("reason", "")), str(active.get("message", ""))
    head = f"Pending: ClusterQueue {name} is inactive and admits nothing: {(message or reason).rstrip('.')}"
    if reason == "Stopped" or (cq.get("spec", {}).get("stopPolicy") or "None") != "None":
        policy = cq.get("spec", {}).get("stopPolicy") or "Hold"
        return Diagnosis(
            "Pending",
            f"{head} (spec.stopPolicy {policy}: someone stopped it).",
            f"The platform team restarts it with `{_restart('ClusterQueue', name)}`; its workloads wait until then.",
            (PLATFORM,),
        )
    if reason == "AdmissionCheckInactive":
        details = []
        for check in re.findall(r"references inactive AdmissionCheck\(s\): ([^.]+)", message):
            for check_name in [c.strip() for c in check.split(",")]:
                found = _check_object(evidence, check_name)
                said_check = _active(found).get("message") if found else None
                details.append(f"{check_name}: {said_check}" if said_check else check_name)
        extra = f" ({'; '.join(details)})" if details else ""
        workers = (
            " The MultiKueue check is inactive when no worker cluster is usable: the manager cannot reach the workers "
            "with the kubeconfig Secrets it holds."
            if any(view.check_controllers.get(d.split(":")[0]) == kueue.MULTIKUEUE_CONTROLLER for d in details)
            else ""
        )
        return Diagnosis(
            "Pending",
            f"{head}{extra}.{workers}",
            "The platform team can check the MultiKueueClusters' status (`kubectl get multikueueclusters -o yaml` on "
            "the manager) and the workers' tokens (tpu-stack:multiKueue.tokenGeneration, docs/multiregion.md), then "
            "`pulumi up`.",
            (PLATFORM,),
        )
    return Diagnosis(
        "Pending",
        f"{head}. The stack declares its queues' flavors and checks, so an object named there is missing or broken.",
        "The platform team runs `pulumi up` to declare the stack's Kueue objects again.",
        (PLATFORM,),
    )


def _queue_problem(evidence: Evidence, view: StackView, message: str) -> Diagnosis | None:
    """Queue problems the workload controller and the scheduler write (workload_controller.go getQueueBlocker)."""
    namespace = evidence.workload["metadata"].get("namespace", "")
    lq_name = str(evidence.workload.get("spec", {}).get("queueName", ""))
    ours = view.local_queues.get(namespace)
    found = _LOCAL_QUEUE_MISSING.match(message)
    if found:
        if ours and ours != found["queue"]:
            return Diagnosis(
                "Pending",
                f"Pending, and it is never admitted as submitted: its queue {found['queue']} does not exist in "
                f"namespace {namespace}; the team's queue there is {ours}.",
                f"You can submit it again to {ours} (`tpu-stack submit` does), or fix the label "
                f"{QUEUE_NAME_LABEL}: {ours} of the job while it is suspended.",
                (USER,),
                STOPPED,
            )
        return Diagnosis(
            "Pending",
            f"Pending: LocalQueue {found['queue']}, which the stack declares in {namespace}, does not exist.",
            "The platform team runs `pulumi up` to declare it again.",
            (PLATFORM,),
        )
    found = _LOCAL_QUEUE_INACTIVE.match(message)
    if found:
        lq = evidence.local_queue or {}
        said = _active(lq).get("message") or "stopped"
        policy = lq.get("spec", {}).get("stopPolicy") or "Hold"
        return Diagnosis(
            "Pending",
            f"Pending: LocalQueue {found['queue']} takes no workloads: {said} (spec.stopPolicy {policy}).",
            f"The platform team restarts it with `{_restart('LocalQueue', found['queue'], namespace)}`.",
            (PLATFORM,),
        )
    found = _CLUSTER_QUEUE_MISSING.match(message)
    if found:
        lq_said = _active(evidence.local_queue or {}).get("reason")
        lq_words = f" (LocalQueue {lq_name}: {lq_said})" if lq_said else ""
        return Diagnosis(
            "Pending",
            f"Pending: LocalQueue {lq_name} sends its workloads to ClusterQueue {found['queue']}, which does not "
            f"exist{lq_words}.",
            "The platform team runs `pulumi up`, which declares the ClusterQueue again.",
            (PLATFORM,),
        )
    found = _CLUSTER_QUEUE_INACTIVE.match(message)
    if found:
        return _inactive_cluster_queue(evidence, view, found["queue"], message)
    return None


def _queue_blocker(evidence: Evidence, view: StackView) -> Diagnosis | None:
    """A queue problem visible in the objects before Kueue wrote it into the Workload."""
    cq = evidence.cluster_queue
    if cq is not None and _active(cq).get("status") == "False":
        return _inactive_cluster_queue(evidence, view, cq["metadata"]["name"], "the ClusterQueue is inactive")
    return None


# ---- preemption for the workload (scheduler.go markPreemptionOutcome; preemption.go PreemptedWorkload event) ------


@dataclass(frozen=True)
class _Target:
    """A workload Kueue preempts for this one, from the preemptor's PreemptedWorkload event."""

    workload: str
    queue: str
    priority: int
    preemptor: int


def _events_of(evidence: Evidence, name: str, reasons: tuple[str, ...]) -> list[Obj]:
    found = [
        e
        for e in evidence.events
        if (e.get("involvedObject") or e.get("regarding") or {}).get("name") == name and e.get("reason") in reasons
    ]
    return sorted(found, key=_event_time)


def _event_time(event: Obj) -> str:
    series = event.get("series") or {}
    return str(
        event.get("lastTimestamp")
        or series.get("lastObservedTime")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or ""
    )


def _said(event: Obj) -> str:
    return str(event.get("message") or event.get("note") or "")


def _targets(evidence: Evidence, count: int) -> list[_Target]:
    """The latest `count` workloads Kueue preempted for this one (events expire, so there may be fewer)."""
    found: dict[str, _Target] = {}
    events = _events_of(evidence, evidence.workload["metadata"]["name"], ("PreemptedWorkload",))
    for event in reversed(events):
        match = _PREEMPTED_WORKLOAD.search(_said(event))
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
        need = _need(evidence.workload, found["resource"])
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
        blocker = _queue_blocker(evidence, view)
        if blocker is not None:
            return blocker
        created = kueue.timestamp(workload["metadata"].get("creationTimestamp"))
        head = f"Pending: Kueue has not tried it yet (submitted {age(created, now)} ago)."
        order = _order(evidence, now)
        words, change, who = _with_order(evidence, view, now, order, head)
        if words != head:
            return Diagnosis("Pending", words, change or "It is tried after them; nothing needs changing.", who)
        return Diagnosis("Pending", head, "Kueue tries it in one of its next cycles; nothing needs changing.")
    message = str(reserved.get("message", ""))
    since = kueue.timestamp(reserved.get("lastTransitionTime"))
    problem = _queue_problem(evidence, view, message)
    if problem is not None:
        return problem
    if message == _FAILED_CHECKS:
        return Diagnosis(
            "Pending",
            "Pending: an admission check of its last attempt failed; Kueue evicts it and retries.",
            "Nothing needs changing.",
        )
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
    held = _held_by_topology(evidence, view, message)
    if held is not None:
        return held
    if _PODSET.search(message):
        return _quota(evidence, view, now, message, since)
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
    empty = _NO_DOMAINS.search(message)
    if empty:
        return _no_nodes(flavor, pools, empty["level"])
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


_NO_DOMAINS = re.compile(r"no topology domains at level: (?P<level>\S+)")
"""The level Kueue searched has no domain (tas_flavor_snapshot.go findLevelWithFitDomains): its TAS cache holds only
the nodes that exist and carry every level's label (tas_nodes_cache.go find, pkg/util/tas/node.go NodeMatchesFlavor)."""
_ON_EVERY_NODE = ("cloud.google.com/gke-nodepool", "kubernetes.io/hostname")
"""Levels whose label GKE puts on every node: where one has no domain, the flavor's pools have no node."""


def _no_nodes(flavor: str | None, pools: list[str], level: str) -> Diagnosis:
    """No domain at `level`: the flavor's node pools have no node, or (a label GKE does not put on every node) their
    nodes lack the level's label. Either way only the platform team changes it."""
    whose = f"flavor {flavor}'s topology" if flavor else "its flavor's topology"
    named = f"node pools {', '.join(pools)}" if pools else "the flavor's node pools"
    reason = (
        f"Pending: its quota is free, but {whose} has no node at level {level}: Kueue places only on nodes that exist "
        "and carry every level's label."
    )
    listing = "kubectl get nodes -l cloud.google.com/gke-nodepool=<pool>"
    if level in _ON_EVERY_NODE:
        change = (
            f"GKE labels every node with its node pool, so {named} have no nodes: their capacity is not up (a "
            "reservation not delivered yet, or slices being recreated by a repair or an upgrade). It starts once a "
            f"slice's nodes are up; `{listing}` shows them."
        )
    else:
        where = ", which GKE documents for the VMs of a reservation block" if level == _BLOCK_LABEL else ""
        change = (
            f"Either {named} have no nodes, or their nodes do not carry {level}{where}. `{listing} -L {level}` shows "
            "which; without the label, set queues.placement.blocks: false (a new Topology: rename the pool group with "
            "it, docs/workloads.md)."
        )
    return Diagnosis("Pending", reason, change, (PLATFORM,))


# ---- admission checks, each by its controller ----------------------------------------------------------------


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


def _check_state(workload: Obj, name: str | None) -> Obj:
    """The workload's state of admission check `name` (status.admissionChecks)."""
    checks = workload.get("status", {}).get("admissionChecks", []) or []
    return next((dict(c) for c in checks if c.get("name") == name), {})


def controller(evidence: Evidence, view: StackView, check: str) -> str | None:
    """The controller behind an admission check: the AdmissionCheck's spec.controllerName when the account may read
    it, else the stack's own declaration of that check, else a ProvisioningRequest Kueue made for it."""
    found = _check_object(evidence, check)
    if found is not None:
        return str(found.get("spec", {}).get("controllerName") or "") or None
    if check in view.check_controllers:
        return view.check_controllers[check]
    prefix = f"{evidence.workload['metadata']['name']}-{check}-"
    if any(str(r["metadata"]["name"]).startswith(prefix) for r in evidence.provisioning_requests):
        return kueue.PROVISIONING_CONTROLLER
    return None


def _provisioning_part(evidence: Evidence, now: datetime, check: Obj) -> str:
    name, state = check["name"], check.get("state", "Pending")
    said = str(check.get("message") or "")
    said = "" if said.startswith(_RESET) else said
    request = _request_for(evidence, name)
    if state == "Retry":
        return f"admission check {name} failed and Kueue retries it" + (f": {said}" if said else "")
    if request is not None:
        return f"admission check {name} waits for {_request_state(request, now)}"
    if "provisioningrequests" in evidence.unreadable:
        return f"admission check {name} is {state}, and its ProvisioningRequest could not be read (403)"
    if said:
        return f"admission check {name} is {state}: {said}"
    attempt = int(check.get("retryCount") or 0) + 1
    return (
        f"admission check {name} is {state}: Kueue is creating its ProvisioningRequest (attempt {attempt} of "
        f"{1 + kueue.PROVISIONING_RETRIES})"
    )


def _where(view: StackView, worker: str) -> str:
    region = view.workers.get(worker)
    return f"{worker} ({region})" if region else worker


def _remote_part(view: StackView, now: datetime, worker: str, remote: Evidence | Unread | None) -> str:
    """What holds the copy of the workload on one worker."""
    if remote is None:
        return f"{_where(view, worker)} has no copy of it yet"
    if isinstance(remote, Unread):
        return f"{_where(view, worker)} {remote}"
    found = explain(remote, view, now)
    said = found.reason
    for prefix in ("Pending: ", "Waiting for capacity: "):
        said = said.removeprefix(prefix)
    return f"on {_where(view, worker)}: {said[0].lower()}{said[1:].rstrip('.')}"


def _dispatched(evidence: Evidence, view: StackView, now: datetime, check: Obj) -> tuple[str, str, tuple[str, ...]]:
    """MultiKueue copied the workload to the workers and waits for one to admit it (multikueue/workload.go)."""
    workload = evidence.workload
    nominated = list(workload.get("status", {}).get("nominatedClusterNames") or []) or sorted(evidence.remote)
    if not nominated:
        return (f"admission check {check['name']} (MultiKueue) has not dispatched it to a worker yet", "", ())
    parts = [
        _remote_part(view, now, worker, evidence.remote[worker])
        if worker in evidence.remote
        else f"{_where(view, worker)} was not read"
        for worker in nominated
    ]
    unread = [(w, r) for w in nominated for r in [evidence.remote.get(w)] if isinstance(r, Unread)]
    text = (
        f"MultiKueue copied it to {_plural(len(nominated), 'worker')} and keeps it on the first that admits it: "
        + "; ".join(parts)
    )
    changes = []
    refused = [w for w, r in unread if r.refused]
    unreachable = [w for w, r in unread if not r.refused]
    if unreachable:
        changes.append(
            f"The platform team can check {', '.join(unreachable)}, which did not answer, and whether the manager "
            "reaches it (its MultiKueueCluster's Active condition)"
        )
    if refused:
        changes.append(
            f"read roles on {', '.join(refused)} for your identity (docs/workloads.md, Permissions) let `tpu-stack "
            "why` read the copies there"
        )
    if changes:
        return text, _capitalized("; ".join(changes)) + ".", (PLATFORM,)
    return text, "", ()


def _checks(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    """Quota is reserved; an admission check is not ready: a queued-provisioning request, or MultiKueue waiting for a
    worker to admit the workload."""
    workload = evidence.workload
    admission = workload.get("status", {}).get("admission") or {}
    flavor = _admission_flavor(workload, view) or "?"
    parts: list[str] = []
    changes: list[str] = []
    who: tuple[str, ...] = ()
    provisioning = False
    for check in workload.get("status", {}).get("admissionChecks", []) or []:
        if check.get("state") == "Ready":
            continue
        kind = controller(evidence, view, check["name"])
        if kind == kueue.MULTIKUEUE_CONTROLLER:
            text, change, who_here = _dispatched(evidence, view, now, check)
            parts.append(text)
            changes.append(change)
            who = _who(who, who_here)
        elif kind == kueue.PROVISIONING_CONTROLLER:
            provisioning = True
            parts.append(_provisioning_part(evidence, now, check))
        else:
            said = f": {check.get('message')}" if check.get("message") else ""
            owner = f" (controller {kind})" if kind else ""
            parts.append(f"admission check {check['name']}{owner} is {check.get('state', 'Pending')}{said}")
    vms = view.vms_per_slice.get(flavor)
    nodes = f"the {vms} nodes of the slice" if vms and vms > 1 else "the node"
    change = _join([c for c in changes if c])
    if provisioning and not change:
        change = (
            f"GKE creates {nodes} when it grants the request, and the pods start then; nothing needs changing (delete "
            "the workload to give up its place)."
        )
    elif not change:
        change = "Nothing needs changing; delete the workload to give up its place."
    return Diagnosis(
        "Provisioning",
        f"Waiting for capacity: quota is reserved in {admission.get('clusterQueue', '?')} ({_chips(workload)} of "
        f"flavor {flavor}), and {'; '.join(parts) or 'its admission checks are not ready'}.",
        change,
        who,
    )


# ---- retries and deactivation ---------------------------------------------------------------------------------


def _check_in_message(message: str) -> tuple[str | None, str]:
    """(check, what it said) from an Evicted message that quotes a check in Retry or Rejected."""
    found = _CHECK_IN_MESSAGE.search(message)
    return (found["check"], found["said"] or "") if found else (None, message)


def _ran(workload: Obj) -> int:
    """Seconds the workload was admitted in earlier admissions (workload_types.go
    accumulatedPastExecutionTimeSeconds, added when Admitted turns False, pkg/workload/admissionchecks.go)."""
    return int(workload.get("status", {}).get("accumulatedPastExecutionTimeSeconds") or 0)


def _check_flavor(evidence: Evidence, view: StackView, check: str | None) -> str:
    """The flavor a provisioning check belongs to (onFlavors), when the workload no longer has an admission."""
    if check and check in view.check_flavors:
        return view.check_flavors[check]
    strategy = ((evidence.cluster_queue or {}).get("spec", {}).get("admissionChecksStrategy") or {}).get(
        "admissionChecks"
    ) or []
    for entry in strategy:
        if entry.get("name") == check and entry.get("onFlavors"):
            return str(entry["onFlavors"][0])
    return _admission_flavor(evidence.workload, view) or "?"


def _rejection(evidence: Evidence, check: str | None) -> tuple[str | None, int]:
    """Why the provisioning check was Rejected: "failed" (GKE never provided the capacity), "expired" (it did, and
    the booking expired before the workload was admitted onto it) or "revoked" (GKE took it back from a workload
    that was running); None when nothing left tells. With the attempt it happened at.

    Kueue deletes the ProvisioningRequests of an evicted workload (CleanupProvisioningRequestsOnEviction, on by
    default in 0.19), so the request is usually gone; the workload's own record then decides: the provisioning
    controller's event for the change to Rejected (from Ready: the capacity had been provided), and whether it was
    admitted (a BookingExpired request rejects only a workload that is not; controller.go syncCheckStates). The
    check's message is the request condition's, written by GKE's controller for queued-provisioning.gke.io: it is
    quoted, never read as a kind."""
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
        for found in [_CHECK_UPDATED.search(_said(event))]
        if found and found["after"] == "Rejected" and found["check"] == (check or found["check"])
    ]
    if changes:
        if changes[-1]["before"] != "Ready":
            return "failed", attempt
        return ("revoked" if ran else "expired"), attempt
    if ran:
        return "revoked", attempt
    return None, attempt


def _deactivated(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    workload = evidence.workload
    evicted = kueue.condition(workload, kueue.EVICTED) or {}
    reason, message = str(evicted.get("reason", "")), str(evicted.get("message", ""))
    job = _job_name(evidence)
    again = f"Delete it (tpu-stack delete {job}) and submit it again"
    if reason == f"{kueue.DEACTIVATED}DueTo{kueue.REQUEUING_LIMIT}":
        # The timeouts that evicted it, and the one that deactivated it instead (workload_controller.go
        # triggerDeactivation: no PodsReadyTimeout eviction then).
        count = (
            1
            + kueue.evictions(workload, kueue.EVICTED_BY_TIMEOUT, kueue.WAIT_FOR_START)
            + kueue.evictions(workload, kueue.EVICTED_BY_TIMEOUT, kueue.WAIT_FOR_RECOVERY)
        )
        timeout = duration(view.pods_ready.timeout)
        return Diagnosis(
            "Deactivated",
            f"Stopped: Kueue deactivated the workload after its pods were not all ready within the PodsReady timeout "
            f"({timeout}) {_times(count)}: waitForPodsReady's requeuing limit (backoffLimitCount) is used up.",
            f"You can find why its pods did not start (quota on the nodes, the image, its node selector), then: "
            f"{again}.",
            (USER,),
            STOPPED,
        )
    if reason == f"{kueue.DEACTIVATED}DueTo{kueue.MAX_EXECUTION_TIME}":
        return Diagnosis(
            "Deactivated",
            f"Stopped: it ran its maximum execution time and Kueue deactivated it ({message}).",
            f"You can checkpoint to /checkpoints and resume in a new run: {again}.",
            (USER,),
            STOPPED,
        )
    if not reason.endswith(kueue.EVICTED_BY_ADMISSION_CHECK):
        return Diagnosis(
            "Deactivated",
            f"Stopped: the workload is deactivated (spec.active: false): {message or reason or 'set by hand'}.",
            f"You can run it again with `kubectl patch workload {workload['metadata']['name']} -n "
            f'{workload["metadata"].get("namespace")} --type merge -p \'{{"spec":{{"active":true}}}}\'`, or: {again}.',
            (USER,),
            STOPPED,
        )
    check, said = _check_in_message(message)
    if check and controller(evidence, view, check) == kueue.MULTIKUEUE_CONTROLLER:
        return Diagnosis(
            "Deactivated",
            f"Stopped: MultiKueue rejected it ({said or message}), and Kueue deactivated the workload.",
            f"{again}.",
            (USER,),
            STOPPED,
        )
    kind, attempt = _rejection(evidence, check)
    chips = f"{_chips(workload)} of flavor {_check_flavor(evidence, view, check)}"
    total = 1 + kueue.PROVISIONING_RETRIES
    detail = f" ({said})" if said else ""
    again = f"You can delete it (tpu-stack delete {job}) and submit it again to queue a new request"
    if kind == "failed":
        reason_text = (
            f"Stopped: queued provisioning attempt {attempt} of {total} failed, and Kueue deactivated the workload: "
            f"GKE did not provide {chips}{detail}."
        )
        change = f"{again}, or submit to a pool group with capacity now."
    elif kind == "expired":
        reason_text = (
            f"Stopped: GKE provided {chips} for queued provisioning attempt {attempt} of {total}, but the booking "
            f"expired before the workload was admitted onto them{detail}, and Kueue deactivated the workload."
        )
        change = f"{again}."
    elif kind == "revoked":
        ran = _ran(workload)
        limit = str((workload["metadata"].get("annotations") or {}).get(kueue.MAX_RUN_ANNOTATION, ""))
        reason_text = (
            f"Stopped: {f'it ran for {duration(ran)}, then ' if ran else ''}GKE took back the capacity of its queued "
            f"provisioning request{detail}, and Kueue deactivated the workload."
            + (
                f" The request's run limit (maxRunDurationSeconds) is {duration(int(limit))}."
                if limit.isdigit()
                else ""
            )
        )
        change = f"{again}; checkpoint to /checkpoints so the next run resumes."
    else:
        reason_text = (
            f"Stopped: Kueue deactivated the workload after its queued provisioning request was rejected (attempt "
            f"{attempt} of {total}){f': {said}' if said else ''}."
        )
        change = f"{again}."
    return Diagnosis("Deactivated", reason_text, change, (USER,), STOPPED)


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


def _continued(reason: str, pending: Diagnosis) -> str:
    return f"{reason} Now {pending.reason[0].lower()}{pending.reason[1:]}"


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
        return replace(pending, state="Retrying", reason=_continued(reason, pending))
    return Diagnosis("Retrying", reason, f"Nothing needs changing ({last}).")


def last_worker(evidence: Evidence) -> str | None:
    """The worker a MultiKueue workload was last admitted on: status.clusterName until an eviction clears it
    (evict.go resetClusterNomination), then MultiKueue's "The workload was admitted on" event, while it lasts."""
    name = evidence.workload.get("status", {}).get("clusterName")
    if name:
        return str(name)
    events = _events_of(evidence, evidence.workload["metadata"]["name"], (_MULTIKUEUE_EVENT,))
    for event in reversed(events):
        found = _ADMITTED_ON.search(_said(event))
        if found:
            return found["worker"]
    return None


def _taken_back(evidence: Evidence, view: StackView, now: datetime, said: str) -> Diagnosis:
    """MultiKueue put its check in Retry: the worker that ran the workload was lost or evicted it, and Kueue evicted
    the workload on the manager to dispatch it again (multikueue/workload.go; workload_controller.go)."""
    workload = evidence.workload
    evicted = kueue.condition(workload, kueue.EVICTED) or {}
    since = age(kueue.timestamp(evicted.get("lastTransitionTime")), now)
    ran = _ran(workload)
    ran_words = f" after it ran {duration(ran)}" if ran else ""
    on_worker = _EVICTED_ON_WORKER.search(said)
    who: tuple[str, ...] = ()
    change = (
        "Nothing needs changing: MultiKueue dispatches it to the workers again; checkpoint to /checkpoints so a "
        "restart resumes."
    )
    if on_worker:
        worker = on_worker["worker"]
        reason = (
            f"Retrying: worker {_where(view, worker)} evicted its copy{ran_words} ({since} ago), and Kueue took the "
            "workload back on the manager; it is queued again and MultiKueue dispatches it to the workers again."
        )
    elif said.startswith(_REMOTE_LOST) or said.startswith(_REMOTE_GONE):
        worker = last_worker(evidence)
        where = f"worker {_where(view, worker)}" if worker else "the worker it ran on"
        lost = (
            f"the manager lost {where} for longer than workerLostTimeout ({duration(view.worker_lost_timeout)})"
            if said.startswith(_REMOTE_LOST)
            else f"its copy on {where} no longer exists"
        )
        reason = (
            f"Retrying: {lost}{ran_words}, so Kueue took the workload back {since} ago; it is queued again and "
            "MultiKueue dispatches it to the workers again."
        )
        remote = evidence.remote.get(worker or "")
        if isinstance(remote, Unread):
            reason += f" {worker} {remote}."
            who = (PLATFORM,)
            change = (
                f"The platform team can check {worker} and the manager's connection to it (its MultiKueueCluster); "
                "MultiKueue dispatches the workload to the other workers meanwhile."
            )
    else:
        worker = last_worker(evidence)
        reason = f"Retrying: MultiKueue took it back from its worker ({said}) {since} ago; it is queued again."
    pending = _then_pending(evidence, view, now, evicted) if not kueue.is_true(workload, kueue.QUOTA_RESERVED) else None
    if pending is not None and pending.reason.startswith("Pending"):
        reason = _continued(reason, pending)
    return Diagnosis("Retrying", reason, change, who, WAITS, worker)


def _timed_out(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    """Evicted because its pods were not ready in time (workload_controller.go reconcileNotReadyTimeout): requeued
    after a backoff that doubles each time (workload.go UpdateRequeueState)."""
    workload = evidence.workload
    evicted = kueue.condition(workload, kueue.EVICTED) or {}
    since = age(kueue.timestamp(evicted.get("lastTransitionTime")), now)
    state = workload.get("status", {}).get("requeueState") or {}
    count = int(state.get("count") or 0) or (
        kueue.evictions(workload, kueue.EVICTED_BY_TIMEOUT, kueue.WAIT_FOR_START)
        + kueue.evictions(workload, kueue.EVICTED_BY_TIMEOUT, kueue.WAIT_FOR_RECOVERY)
    )
    timeout = duration(view.pods_ready.timeout)
    reason = (
        f"Evicted {since} ago: its pods were not all ready within the PodsReady timeout ({timeout}), "
        f"{_times(max(count, 1))} now."
    )
    limit = view.pods_ready.limit
    last = f" After {limit} requeues Kueue deactivates it." if limit is not None else ""
    if kueue.is_true(workload, kueue.QUOTA_RESERVED):
        return Diagnosis("Evicted", f"{reason} Its pods are stopping; then Kueue queues it again.{last}", "")
    requeue_at = _requeue_at(workload)
    if requeue_at is not None and requeue_at > now:
        wait = duration(int((requeue_at - now).total_seconds()))
        return Diagnosis(
            "Evicted",
            f"{reason} Kueue released its quota and queues it again in {wait} (at {requeue_at:%H:%M:%S} UTC); each "
            f"timeout doubles the wait.{last}",
            "Nothing needs changing if its nodes were slow to come; if its pods cannot start, delete it and fix that.",
        )
    pending = _then_pending(evidence, view, now, evicted)
    if pending is not None:
        return replace(pending, state="Evicted", reason=_continued(reason, pending))
    return Diagnosis("Evicted", f"{reason} Kueue queues it again.{last}", "")


_QUEUE_STOPPED = {"ClusterQueueStopped": "ClusterQueue", "LocalQueueStopped": "LocalQueue"}
"""Evicted reasons of a queue stopped with HoldAndDrain (workload_types.go WorkloadEvictedByClusterQueueStopped,
WorkloadEvictedByLocalQueueStopped)."""
_QUEUE_RESTARTED = ("ClusterQueueRestarted", "LocalQueueRestarted")
"""Requeued=True reasons once such a queue's stopPolicy is None again (workload_controller.go:742-766)."""


def _evicted(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    """Evicted for another reason (node failures, a stopped queue): Kueue queues it again."""
    workload = evidence.workload
    evicted = kueue.condition(workload, kueue.EVICTED) or {}
    if evicted.get("reason") in _QUEUE_STOPPED:
        return _drained(evidence, view, now, evicted)
    since = age(kueue.timestamp(evicted.get("lastTransitionTime")), now)
    reason = f"Evicted {since} ago: {str(evicted.get('message') or evicted.get('reason', '')).rstrip('.')}."
    if kueue.is_true(workload, kueue.QUOTA_RESERVED):
        return Diagnosis("Evicted", f"{reason} Its pods are stopping; then Kueue queues it again.", "")
    pending = _then_pending(evidence, view, now, evicted)
    if pending is not None:
        return replace(pending, state="Evicted", reason=_continued(reason, pending))
    requeue_at = _requeue_at(workload)
    when = (
        f" in {duration(int((requeue_at - now).total_seconds()))} (at {requeue_at:%H:%M:%S} UTC)"
        if requeue_at is not None and requeue_at > now
        else ""
    )
    return Diagnosis("Evicted", f"{reason} Kueue queues it again{when}.", "")


def _drained(evidence: Evidence, view: StackView, now: datetime, evicted: Obj) -> Diagnosis:
    """Evicted because its ClusterQueue or LocalQueue was stopped with HoldAndDrain, the only stop that evicts what
    is admitted (workload_controller.go:1053-1069, 1091-1113). Once its pods have stopped the job reconciler sets
    Requeued=False with that reason (jobframework/reconciler.go:589-597), and Kueue queues it again only when the
    queue's stopPolicy is None again (Requeued=True, ClusterQueueRestarted or LocalQueueRestarted,
    workload_controller.go:742-766): no backoff, no retry count."""
    workload = evidence.workload
    kind = _QUEUE_STOPPED[str(evicted.get("reason"))]
    namespace = workload["metadata"].get("namespace", "")
    if kind == "ClusterQueue":
        queue = evidence.cluster_queue
        name = str(
            (queue or {}).get("metadata", {}).get("name")
            or (workload.get("status", {}).get("admission") or {}).get("clusterQueue")
            or "its ClusterQueue"
        )
    else:
        queue = evidence.local_queue
        name = str(workload.get("spec", {}).get("queueName") or "its LocalQueue")
    policy = (queue or {}).get("spec", {}).get("stopPolicy")
    requeued = kueue.condition(workload, "Requeued") or {}
    restarted = policy == "None" or (requeued.get("status") == "True" and requeued.get("reason") in _QUEUE_RESTARTED)
    since = age(kueue.timestamp(evicted.get("lastTransitionTime")), now)
    changed = f" (now {policy})" if policy and policy not in ("None", "HoldAndDrain") else ""
    head = (
        f"Evicted {since} ago: {kind} {name} was stopped with spec.stopPolicy HoldAndDrain{changed}, which evicts "
        "the workloads it admitted."
    )
    if restarted:
        reason = f"{head} The queue runs again and Kueue has queued it again; it starts from the beginning once the "
        reason += "scheduler admits it."
        reserved = kueue.condition(workload, kueue.QUOTA_RESERVED) or {}
        said = str(reserved.get("message", ""))
        blocker = _CLUSTER_QUEUE_INACTIVE.match(said) or _LOCAL_QUEUE_INACTIVE.match(said)
        pending = None if blocker or reserved.get("status") == "True" else _then_pending(evidence, view, now, evicted)
        if pending is not None and pending.reason.startswith("Pending"):
            return replace(pending, state="Evicted", reason=_continued(reason, pending))
        return Diagnosis("Evicted", reason, "")
    if kueue.is_true(workload, kueue.QUOTA_RESERVED):
        then = "Its pods are stopping; Kueue queues it again"
    else:
        then = "Kueue released its quota and queues it again"
    return Diagnosis(
        "Evicted",
        f"{head} {then} only once the queue's stopPolicy is None again, and it then starts from the beginning.",
        f"The platform team restarts it with `{_restart(kind, name, namespace)}`.",
        (PLATFORM,),
    )


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
        found = _PRIORITIES.search(_said(event))
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
    who: tuple[str, ...] = ()
    if why_reason == "InClusterQueue":
        name = cq["metadata"]["name"] if cq is not None else "its ClusterQueue"
        change = (
            f"In {name} priority decides, whatever the quota: you can submit it again with a higher --priority, or "
            f"wait for the higher-priority work to finish. {checkpoint}"
        )
        who = (USER,)
    elif queue is not None and why_reason in ("InCohortReclamation", "InCohortReclaimWhileBorrowing"):
        change = (
            f"Work within {queue.name}'s nominal {amount(kueue.TPU, queue.nominal)} of {flavor} is not reclaimed by "
            f"other queues; work beyond it borrows, and the lenders may take it back. {checkpoint}"
        )
    else:
        change = checkpoint
    pending = None if stopping else _then_pending(evidence, view, now, evicted)
    if pending is not None and pending.reason.startswith("Pending:"):
        reason = _continued(reason, pending)
    return Diagnosis("Preempted", reason, change, who)


# ---- after admission -------------------------------------------------------------------------------------------


def _child_jobs(evidence: Evidence) -> set[str]:
    """The Job, or a JobSet's child Jobs (`<jobset>-<replicatedJob>-<index>`, JobSet's GenJobName), by name."""
    owner = _job_ref(evidence)
    if owner is None:
        return set()
    kind, name = owner
    if kind == "Job":
        return {name}
    jobs = {name}
    for event in evidence.events:
        involved = event.get("involvedObject") or event.get("regarding") or {}
        if involved.get("kind") == "Job" and str(involved.get("name", "")).startswith(f"{name}-"):
            jobs.add(str(involved["name"]))
    return jobs


def _creation_failures(evidence: Evidence) -> list[Obj]:
    """The latest FailedCreate of each of its Jobs and JobCreationFailed of its JobSet."""
    jobs = _child_jobs(evidence)
    found = [
        event
        for event in evidence.events
        if event.get("reason") in (FAILED_CREATE, JOB_CREATION_FAILED)
        and (event.get("involvedObject") or event.get("regarding") or {}).get("name") in jobs
    ]
    return sorted(found, key=_event_time)


def _cannot_create(evidence: Evidence, view: StackView, event: Obj) -> tuple[str, str, tuple[str, ...], str]:
    """(words, change, who, outcome) for pods or Jobs that cannot be created."""
    involved = event.get("involvedObject") or event.get("regarding") or {}
    said = _said(event).removeprefix("Error creating: ")
    count = int(event.get("count") or (event.get("series") or {}).get("count") or 1)
    what = "its pods" if event.get("reason") == FAILED_CREATE else "its Jobs"
    words = (
        f"{involved.get('kind', 'Job')} {involved.get('name')} cannot create {what} ({_times(count)} so far): {said}"
    )
    account = _SERVICE_ACCOUNT.search(said)
    if account:
        key = view.service_accounts.get(f"{account['namespace']}/{account['name']}")
        if key:
            return (
                words,
                f"The platform team can run `pulumi up`: the stack declares the service account "
                f"{account['namespace']}/{account['name']} ({key}), so it is missing on this cluster; the Job "
                "controller creates the pods once it exists.",
                (PLATFORM,),
                WAITS,
            )
        return (
            words,
            f"You can create the service account {account['namespace']}/{account['name']} or submit it with one that "
            "exists; the Job controller retries meanwhile.",
            (USER,),
            WAITS,
        )
    if _POD_SECURITY in said:
        return (
            words,
            "Every retry is refused the same way until the pod template changes: you can delete it and submit it "
            "without what the namespace's Pod Security level forbids (the stack's generated workloads need no "
            "privilege).",
            (USER,),
            STOPPED,
        )
    return words, "The controller retries; you can fix what the message names, or delete it.", (USER,), WAITS


def _pool_labels(view: StackView) -> dict[str, dict[str, str]]:
    """Node pool -> the labels its nodes carry that a selector may name: its pool group's node labels and
    cloud.google.com/gke-nodepool (GKE's own label of every node)."""
    labels = {}
    for group, pools in view.node_pools.items():
        for pool in pools:
            labels[pool] = {**view.flavors.get(group, {}), "cloud.google.com/gke-nodepool": pool}
    return labels


def _no_pool(view: StackView, pod: Obj) -> str | None:
    """A node selector term of the pod that no TPU node pool of the stack has, when every term it names is one of
    the pools' labels: then no pool can ever take the pod. None when some pool matches, or the selector names labels
    the stack does not know."""
    selector = pod.get("spec", {}).get("nodeSelector") or {}
    pools = _pool_labels(view)
    if not pools or not selector:
        return None
    known = {key for labels in pools.values() for key in labels}
    if any(key not in known for key in selector):
        return None
    if any(all(labels.get(k) == v for k, v in selector.items()) for labels in pools.values()):
        return None
    for key, value in selector.items():
        if not any(labels.get(key) == value for labels in pools.values()):
            return f"{key}={value}"
    return ", ".join(f"{k}={v}" for k, v in selector.items())


def _all_pods(count: int) -> str:
    return "its pod is" if count == 1 else f"all {count} pods are"


def _podsready_clock(evidence: Evidence, view: StackView, now: datetime, expected: int) -> str:
    """When Kueue's waitForPodsReady evicts the workload if its pods are not ready (workload_controller.go
    admittedNotReadyWorkload), and the backoff it then waits."""
    workload = evidence.workload
    ready = kueue.condition(workload, kueue.PODS_READY) or {}
    settings = view.pods_ready
    count = int((workload.get("status", {}).get("requeueState") or {}).get("count") or 0)
    backoff = duration(settings.backoff(count + 1))
    if ready.get("reason") == kueue.WAIT_FOR_RECOVERY:
        since = kueue.timestamp(ready.get("lastTransitionTime"))
        timeout = settings.recovery_timeout
        if since is None:
            return ""
        if timeout is None:
            return f" A pod failed {age(since, now)} ago: Kueue waits for its replacement without a recovery timeout."
        left = duration(int((since + timedelta(seconds=timeout) - now).total_seconds()))
        return (
            f" A pod failed {age(since, now)} ago: unless {_all_pods(expected)} ready again within the recovery "
            f"timeout ({duration(timeout)}), Kueue evicts it in {left} and queues it again after {backoff}."
        )
    admitted = kueue.timestamp((kueue.condition(workload, kueue.ADMITTED) or {}).get("lastTransitionTime"))
    if admitted is None:
        return ""
    left = duration(int((admitted + timedelta(seconds=settings.timeout) - now).total_seconds()))
    limit = (
        f" ({_plural(settings.limit - count, 'requeue')} left before Kueue deactivates it)"
        if settings.limit is not None
        else ""
    )
    return (
        f" Unless {_all_pods(expected)} ready within the PodsReady timeout ({duration(settings.timeout)} after "
        f"admission), Kueue evicts it in {left} and queues it again after {backoff}{limit}."
    )


def _cannot_start(pods: list[Obj]) -> list[tuple[Obj, Obj]]:
    """(pod, container status) of each pod on its node whose container cannot start: its image does not pull, it
    cannot be created as configured, or it keeps exiting (the kubelet's waiting reasons). The first such container
    of each pod."""
    found = []
    for pod in pods:
        for status in pod.get("status", {}).get("containerStatuses") or []:
            reason = ((status.get("state") or {}).get("waiting") or {}).get("reason")
            if reason in (*IMAGE_WAITS, *CREATE_WAITS, CRASH_LOOP):
                found.append((pod, status))
                break
    return found


def _container_words(evidence: Evidence, pod: Obj, status: Obj) -> tuple[str, str]:
    """What holds a container that cannot start, and what its submitter can change: only a crash loop has a log to
    read (the kubelet serves the last run of a waiting container, kubelet_pods.go validateContainerLogStatus)."""
    name, container = pod["metadata"]["name"], str(status.get("name"))
    waiting = (status.get("state") or {}).get("waiting") or {}
    reason, said = str(waiting.get("reason")), str(waiting.get("message") or "").rstrip(".")
    detail = f"{reason}: {said}" if said else reason
    job = _job_name(evidence)
    again = f"delete it (tpu-stack delete {job}) and submit it again"
    if reason in IMAGE_WAITS:
        spec: Obj = next((c for c in pod.get("spec", {}).get("containers", []) if c.get("name") == container), {})
        image = spec.get("image") or status.get("image") or "?"
        return (
            f"container {container} of pod {name} cannot pull its image {image} ({detail})",
            f"You can check its name and tag and that the cluster's nodes may pull it, then {again} (or push "
            "that image: the kubelet keeps trying); until then it holds its quota.",
        )
    if reason in CREATE_WAITS:
        return (
            f"container {container} of pod {name} cannot be created ({detail})",
            "You can create or fix what it names (a Secret or ConfigMap it refers to is picked up when the kubelet "
            f"retries), or {again} with that fixed; until then it holds its quota.",
        )
    ended = (status.get("lastState") or {}).get("terminated") or {}
    code, why_ended = ended.get("exitCode"), str(ended.get("reason") or "")
    last = ""
    if code is not None:
        out_of_memory = ": it ran out of memory" if why_ended == "OOMKilled" else ""
        last = f"its last run ended with exit code {code}" + (f" ({why_ended}{out_of_memory})" if why_ended else "")
        last += ", "
    restarts = int(status.get("restartCount") or 0)
    words = (
        f"container {container} of pod {name} keeps failing: {last}it has restarted {_times(restarts)}, and the "
        f"kubelet waits before the next start ({CRASH_LOOP})"
    )
    return (
        words,
        f"`{_logs_command(evidence, pod, container)}` shows its last run's output; you can fix it, then {again}.",
    )


def _logs_command(evidence: Evidence, pod: Obj, container: str) -> str:
    """`tpu-stack logs` for this pod and container (its slice and worker from the labels JobSet and the Job
    controller set; the container when it is not the one `logs` reads by default)."""
    labels = pod["metadata"].get("labels") or {}
    words = ["tpu-stack", "logs", _job_name(evidence)]
    if (_job_ref(evidence) or ("", ""))[0] == "JobSet" and labels.get(kueue.JOBSET_JOB_INDEX_LABEL, "0") != "0":
        words += ["--slice", str(labels[kueue.JOBSET_JOB_INDEX_LABEL])]
    if labels.get(kueue.COMPLETION_INDEX_LABEL, "0") != "0":
        words += ["--worker", str(labels[kueue.COMPLETION_INDEX_LABEL])]
    names = [str(c.get("name")) for c in pod.get("spec", {}).get("containers", [])]
    default = kueue.WORKLOAD_CONTAINER if kueue.WORKLOAD_CONTAINER in names else (names or [container])[0]
    if container != default:
        words += ["--container", container]
    return " ".join(words)


def _booking_expired(evidence: Evidence, now: datetime) -> Obj | None:
    """The Ready provisioning check's request, if its booking expired (condition BookingExpired): the nodes were
    held for a while after Provisioned, then let go. How long is GKE's controller's to say (the open-source
    autoscaler's defaultReservationTime, 10 minutes, does not apply to queued-provisioning.gke.io)."""
    request = _request_for(evidence, None)
    if request is None:
        return None
    expired = kueue.condition(request, "BookingExpired")
    return request if expired and expired.get("status") == "True" else None


def _admitted(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    workload = evidence.workload
    admitted = kueue.condition(workload, kueue.ADMITTED) or {}
    admission = workload.get("status", {}).get("admission") or {}
    cq_name = admission.get("clusterQueue", "?")
    flavor = _admission_flavor(workload, view) or "?"
    since = age(kueue.timestamp(admitted.get("lastTransitionTime")), now)
    expected = kueue.pod_count(workload)
    pods_hidden = "pods" in evidence.unreadable
    ready = kueue.condition(workload, kueue.PODS_READY) or {}
    running = [p for p in evidence.pods if kueue.pod_running(p)]
    head = f"admitted {since} ago by {cq_name} on flavor {flavor} ({_chips(workload)})"
    hidden = " (its pods could not be read (403); Kueue's PodsReady condition tells)" if pods_hidden else ""
    if ready.get("status") == "True" or (
        not pods_hidden and len(running) >= expected and ready.get("status") != "False"
    ):
        count = (
            f"{len(running)} of {expected} pods are running" if not pods_hidden else f"all {expected} pods are ready"
        )
        queue = queue_quota(evidence.cluster_queue, flavor, kueue.TPU) if evidence.cluster_queue else None
        change = "Nothing holds it back."
        if queue is not None and queue.borrowed:
            cohort = evidence.cluster_queue.get("spec", {}).get("cohortName") if evidence.cluster_queue else None
            change = (
                f"Nothing holds it back, but {queue.name} borrows {amount(kueue.TPU, queue.borrowed)} of {flavor} "
                f"from cohort {cohort}: the queues that lend them may reclaim them by preemption."
            )
        return Diagnosis("Running", f"Running: {head}; {count}{hidden}.", change, (), RUNS)
    clock = _podsready_clock(evidence, view, now, expected) if ready else ""
    events_hidden = " Its events could not be read (403)." if "events" in evidence.unreadable else ""
    if pods_hidden:
        return Diagnosis(
            "Starting",
            f"Starting: {head}; not all its pods are ready (Kueue's PodsReady: {ready.get('message') or 'unknown'}), "
            f"and its pods could not be read (403), so why they wait is not known.{clock}{events_hidden}",
            "Read access to its pods (Kubernetes' view role in the team's namespace) lets `tpu-stack why` tell why.",
        )
    stuck = _cannot_start(evidence.pods)
    started = f"{len([p for p in running if p not in [pod for pod, _ in stuck]])} of {expected} pods are running"
    failures = _creation_failures(evidence)
    if failures:
        words, change, who, outcome = _cannot_create(evidence, view, failures[-1])
        return Diagnosis("Starting", f"Starting: {head}; {started}, and {words}.{clock}", change, who, outcome)
    if stuck:
        words, change = _container_words(evidence, *stuck[0])
        return Diagnosis(
            "Starting",
            f"Starting: {head}; {started}, and {len(stuck)} cannot start: {words}.{clock}",
            change,
            (USER,),
        )
    unschedulable = []
    for pod in evidence.pods:
        scheduled = kueue.condition(pod, "PodScheduled")
        if scheduled and scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
            unschedulable.append((pod, str(scheduled.get("message", ""))))
    if not unschedulable:
        return Diagnosis(
            "Starting",
            f"Starting: {head}; {started}.{clock}{events_hidden}",
            f"The rest are being created; `tpu-stack logs {_job_name(evidence)}` shows the leader's output.",
        )
    pod, scheduler = unschedulable[0]
    reason = f"Starting: {head}; {started}, and {len(unschedulable)} cannot be scheduled: {scheduler.rstrip('.')}."
    names = view.node_pools.get(flavor, [])
    pools = (
        (f"node pools {', '.join(names)} have" if len(names) > 1 else f"node pool {names[0]} has")
        if names
        else f"the node pools of {flavor} have"
    )
    scale = _events_of(evidence, pod["metadata"]["name"], AUTOSCALER_REASONS)
    said = _said(scale[-1]).rstrip(".") if scale else ""
    term = _no_pool(view, pod)
    if term is not None:
        all_pools = ", ".join(sorted(_pool_labels(view)))
        autoscaler = f" The cluster autoscaler agrees: {said}." if _NO_MATCH in said else ""
        return Diagnosis(
            "Starting",
            f"{reason} Its node selector asks for {term}, which no node pool of the stack has (its TPU node pools: "
            f"{all_pools}), so no node can ever take it.{autoscaler}",
            "It never starts as submitted: you can delete it and submit it again without that selector (Kueue adds "
            "the flavor's node labels itself).",
            (USER,),
            STOPPED,
        )
    expired = _booking_expired(evidence, now)
    if expired is not None:
        when = kueue.timestamp((kueue.condition(expired, "BookingExpired") or {}).get("lastTransitionTime"))
        return Diagnosis(
            "Starting",
            f"{reason} GKE provisioned the slice for {expired['metadata']['name']}, but its booking expired "
            f"{age(when, now)} ago before the pods reached the nodes, and a queued-provisioning node pool gets nodes "
            f"only through a ProvisioningRequest.{clock} Then Kueue makes a new request.",
            "You can delete it and submit it again now rather than wait for the timeout.",
            (USER,),
        )
    if not scale:
        return Diagnosis(
            "Starting",
            f"{reason}{clock}{events_hidden}",
            f"They start when {pools} nodes ready for them.",
        )
    event = scale[-1]
    if event.get("reason") == "TriggeredScaleUp":
        return Diagnosis(
            "Starting",
            f"{reason} The cluster autoscaler is adding nodes: {said}.{clock}",
            "The pods start when the nodes are ready; nothing needs changing.",
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
        f"{reason} The cluster autoscaler {verb}: {said}{backoff}.{clock}",
        f"They start when {pools.rsplit(' ', 1)[0]} can add nodes for them (the pool's size limits, the zone's TPU "
        "capacity and the "
        "project's quota decide); delete the workload to free its quota meanwhile.",
    )


def _on_worker(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis | None:
    """A MultiKueue workload admitted on a worker: what its copy there says, read on the worker."""
    worker = evidence.workload.get("status", {}).get("clusterName")
    if not worker:
        return None
    where = _where(view, str(worker))
    remote = evidence.remote.get(str(worker))
    if isinstance(remote, Evidence):
        found = explain(remote, view, now)
        return replace(found, reason=f"On worker {where}: {found.reason}", cluster=str(worker))
    ready = kueue.condition(evidence.workload, kueue.PODS_READY) or {}
    if isinstance(remote, Unread) and not remote.refused:
        return _worker_unreachable(view, str(worker), remote, ready.get("status") == "True")
    said = str(remote) if isinstance(remote, Unread) else "has no copy of it (it may have just finished there)"
    if ready.get("status") == "True":
        return Diagnosis(
            "Running",
            f"Running on worker {where}: MultiKueue admitted it there and Kueue reports all its pods ready; {worker} "
            f"{said}.",
            "Nothing holds it back.",
            (),
            RUNS,
            str(worker),
        )
    return Diagnosis(
        "Starting",
        f"Starting on worker {where}: MultiKueue admitted it there and not all its pods are ready; {worker} {said}, "
        "so why they wait is not known.",
        f"Access to {worker} (a Kubernetes role there for your Google identity) lets `tpu-stack why` read it.",
        (),
        WAITS,
        str(worker),
    )


def _worker_unreachable(view: StackView, worker: str, remote: Unread, ready: bool) -> Diagnosis:
    """The worker that admitted the workload does not answer: the manager's record is all there is, and it may be
    out of date. If the manager has lost the worker too, MultiKueue keeps the workload admitted for
    workerLostTimeout, then puts its check in Retry and dispatches it again (multikueue/workload.go:540-560)."""
    where = _where(view, worker)
    if ready:
        state, reason = (
            "Running",
            f"Running on worker {where}, as the manager last saw it: MultiKueue admitted it there and Kueue reports "
            f"all its pods ready; {worker} {remote}, so `why` cannot tell whether it still runs.",
        )
    else:
        state, reason = (
            "Starting",
            f"Starting on worker {where}: MultiKueue admitted it there and not all its pods are ready; {worker} "
            f"{remote}, so why they wait is not known.",
        )
    change = (
        f"If the manager has lost {worker} too, MultiKueue takes the workload back once it has been unreachable for "
        f"workerLostTimeout ({duration(view.worker_lost_timeout)}) and dispatches it again, to start from the "
        f"beginning (checkpoint to /checkpoints). The platform team can check {worker} and the manager's connection "
        f"to it (`kubectl get multikueuecluster {worker} -o yaml` on the manager: its Active condition)."
    )
    return Diagnosis(state, reason, change, (PLATFORM,), WAITS, worker)


def unmanaged(kind: str, job: Obj, pods: list[Obj], now: datetime, *, pods_hidden: bool = False) -> Diagnosis:
    """A Job or JobSet with no Workload: without the queue-name label Kueue never manages it (the stack's Kueue runs
    with manageJobsWithoutQueueName: false, components/kueue_install.py); with it, Kueue creates the Workload."""
    meta = job.get("metadata", {})
    name = meta.get("name")
    labels = meta.get("labels") or {}
    created = age(kueue.timestamp(meta.get("creationTimestamp")), now)
    if labels.get(QUEUE_NAME_LABEL):
        return Diagnosis(
            "Pending",
            f"Pending: {kind} {meta.get('namespace')}/{name} (submitted {created} ago) has no Kueue Workload yet; "
            f"Kueue creates one within seconds for a job labelled {QUEUE_NAME_LABEL}.",
            "If it lasts, the platform team can check that Kueue's controller runs.",
        )
    expected = kueue.job_pod_count(kind, job)
    running = [p for p in pods if kueue.pod_running(p)]
    head = (
        f"{kind} {meta.get('namespace')}/{name} is not managed by Kueue: it has no {QUEUE_NAME_LABEL} label, and the "
        "stack's Kueue leaves such jobs alone, so its pods run outside every team's quota (Kueue neither counts them "
        "nor preempts them)"
    )
    change = (
        f"You can delete it and submit it with `tpu-stack submit` (or give it the label {QUEUE_NAME_LABEL}: <your "
        "team's LocalQueue> when you create it) so that it waits its turn in the team's queue."
    )
    if pods_hidden:
        return Diagnosis("Unmanaged", f"{head}; its pods could not be read (403).", change, (USER,), WAITS)
    if expected and len(running) >= expected:
        return Diagnosis("Unmanaged", f"{head}; {len(running)} of {expected} pods are running.", change, (USER,), RUNS)
    waiting = next(
        (
            str(c.get("message", ""))
            for p in pods
            for c in [kueue.condition(p, "PodScheduled") or {}]
            if c.get("status") == "False"
        ),
        "",
    )
    stuck = f"; they cannot be scheduled: {waiting.rstrip('.')}" if waiting else ""
    return Diagnosis(
        "Unmanaged",
        f"{head}; {len(running)} of {expected} pods are running{stuck}.",
        change,
        (USER,),
        WAITS,
    )


def explain(evidence: Evidence, view: StackView, now: datetime) -> Diagnosis:
    """Why the workload is (not) running, who can change it and how.

    Eviction is read before admission: Kueue sets Evicted=True first, and QuotaReserved and Admitted stay True
    until the job is suspended and its pods have stopped (evict.go prepareForEviction, jobframework/reconciler.go)."""
    workload = evidence.workload
    finished = kueue.condition(workload, kueue.FINISHED)
    if finished and finished.get("status") == "True":
        since = age(kueue.timestamp(finished.get("lastTransitionTime")), now)
        if finished.get("reason") == "Failed":
            return Diagnosis(
                "Failed",
                f"Failed {since} ago: {finished.get('message', '')}".rstrip(": ").rstrip(".") + ".",
                f"You can read its logs (`tpu-stack logs {_job_name(evidence)}`), fix it and submit it again.",
                (USER,),
                STOPPED,
            )
        return Diagnosis(
            "Succeeded", f"Succeeded {since} ago: {finished.get('message', '')}".rstrip(": "), "", (), RUNS
        )
    if workload.get("spec", {}).get("active") is False:
        return _deactivated(evidence, view, now)
    evicted = kueue.condition(workload, kueue.EVICTED)
    if evicted and evicted.get("status") == "True":
        if evicted.get("reason") == kueue.EVICTED_BY_PREEMPTION:
            return _preempted(evidence, view, now)
        if evicted.get("reason") == kueue.EVICTED_BY_ADMISSION_CHECK:
            check, said = _check_in_message(str(evicted.get("message", "")))
            if check and controller(evidence, view, check) == kueue.MULTIKUEUE_CONTROLLER:
                return _taken_back(evidence, view, now, said)
            return _retrying(evidence, view, now)
        if evicted.get("reason") == kueue.EVICTED_BY_TIMEOUT:
            return _timed_out(evidence, view, now)
        return _evicted(evidence, view, now)
    if kueue.is_true(workload, kueue.ADMITTED):
        return _on_worker(evidence, view, now) or _admitted(evidence, view, now)
    if kueue.is_true(workload, kueue.QUOTA_RESERVED):
        return _checks(evidence, view, now)
    return _pending(evidence, view, now)
