"""What the controllers do with a workload once it runs, modelled from their sources at the pinned tags, so the
tests can hold each setting the stack writes to its effect on a waiting and on a disrupted workload.

- Kueue v0.19.2 `waitForPodsReady` (8eab68778fc1b52affe165fdf5af29d1e9b4f3cb): defaulting in
  apis/config/v1beta2/defaults.go SetDefaults_Configuration (timeout 30m, recoveryTimeout = timeout, backoff base
  60 s, max 3600 s, no limit, timestamp Eviction); the controller's view in pkg/controller/core/core.go
  waitForPodsReady (a recoveryTimeout of 0 disables recovery timeouts); the timers in
  pkg/controller/core/workload_controller.go admittedNotReadyWorkload (WaitForStart counts from the Admitted
  condition, WaitForRecovery from the PodsReady=False transition) and reconcileNotReadyTimeout /
  triggerDeactivation (deactivated once requeueState.count + 1 exceeds backoffLimitCount, else evicted with reason
  PodsReadyTimeout); pkg/workload/workload.go UpdateRequeueState (delay base * 2^(n-1), capped at max; jitter
  0.0001 left out) and Ordering.GetQueueOrderTimestamp (timestamp Eviction orders an evicted workload by its
  eviction, Creation by its creation); pkg/controller/jobframework/reconciler.go generatePodsReadyCondition
  (PodsReady True -> False is WaitForRecovery). An evicted workload's pods are deleted (its job is suspended).
- The ProvisioningRequest admission check of Kueue v0.19.2
  (pkg/controller/admissionchecks/provisioning/controller.go): a Failed request is retried while its attempt is at
  most retryStrategy.backoffLimitCount, after base * 2^(n-1) seconds capped at backoffMaxSeconds, then the check is
  Rejected; CapacityRevoked rejects the check of an admitted, active workload at once (deactivation).
- Kubernetes Job pod failure policy (k8s.io/api batch/v1 types.go: the first matching rule applies; FailJob fails the
  Job with reason PodFailurePolicy, Ignore does not count the failure, Count counts it against backoffLimit; a
  failure no rule matches is counted; over backoffLimit the Job fails with reason BackoffLimitExceeded; onExitCodes
  leaves out containers that exited 0).
- JobSet v0.12.0 failure policy (f22e565ac3cc3265c7c45ef67ecffdc689af5d77, pkg/controllers/failure_policy.go): no
  failurePolicy fails the JobSet at the first failed Job (FailedJobs); else the first rule whose
  onJobFailureReasons (empty: any) holds the Job's Failed reason applies, RestartJobSet when none does;
  RestartJobSet fails the JobSet (ReachedMaxRestarts) once restartsCountTowardsMax reached maxRestarts, else counts
  a restart towards it; RestartJobSetAndIgnoreMaxRestarts restarts without counting; FailJobSet fails it.
- Kueue v0.19.2 MultiKueue: pkg/controller/admissionchecks/multikueue/workload.go (reconcileGroup: a worker lost
  for workerLostTimeout; nominateAndSynchronizeWorkers: the all-at-once dispatcher), multikueuecluster.go (runGC:
  the garbage collector, by origin label), pkg/controller/workloaddispatcher/incrementaldispatcher.go (the
  incremental dispatcher's rounds).
- LeaderWorkerSet v0.10.0 (2161f38ff333f9e24d3c44adef7cd5d9787cac00): pkg/controllers/pod_controller.go (restart
  policy, startup policy, exclusive placement), pkg/controllers/leaderworkerset_controller.go (rolling update:
  partition and surge replicas), with the leader StatefulSet's update rule from kubernetes
  pkg/controller/statefulset/stateful_set_control.go.

Expected numbers in the tests are written by hand from these rules, never computed by the code under test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

KUEUE_DEFAULT_TIMEOUT = 30 * 60
KUEUE_DEFAULT_BACKOFF_BASE = 60
KUEUE_DEFAULT_BACKOFF_MAX = 3600


def seconds(duration: str) -> int:
    """A Go duration as Kueue's configuration writes them ('30m0s', '168h0m0s', '0s') in seconds."""
    total, number = 0, ""
    units = {"h": 3600, "m": 60, "s": 1}
    for char in duration:
        if char.isdigit():
            number += char
        else:
            total += int(number) * units[char]
            number = ""
    assert number == "", f"{duration!r} ends without a unit"
    return total


@dataclass(frozen=True)
class WaitForPodsReady:
    """waitForPodsReady as Kueue's workload controller holds it after defaulting."""

    timeout: int
    recovery_timeout: int | None
    """None: recovery timeouts are off (recoveryTimeout 0s)."""
    backoff_base: int
    backoff_max: int
    backoff_limit: int | None
    """None: requeued without end."""
    timestamp: str
    block_admission: bool

    @classmethod
    def of(cls, configuration: Mapping[str, Any]) -> WaitForPodsReady:
        """The controller's settings from a Kueue Configuration object, defaulted as defaults.go defaults it."""
        wait = configuration.get("waitForPodsReady") or {}
        timeout = seconds(wait["timeout"]) if wait.get("timeout") else KUEUE_DEFAULT_TIMEOUT
        recovery = seconds(wait["recoveryTimeout"]) if "recoveryTimeout" in wait else timeout
        strategy = wait.get("requeuingStrategy") or {}
        return cls(
            timeout=timeout,
            recovery_timeout=recovery or None,
            backoff_base=strategy.get("backoffBaseSeconds", KUEUE_DEFAULT_BACKOFF_BASE),
            backoff_max=strategy.get("backoffMaxSeconds", KUEUE_DEFAULT_BACKOFF_MAX),
            backoff_limit=strategy.get("backoffLimitCount"),
            timestamp=strategy.get("timestamp", "Eviction"),
            block_admission=bool(wait.get("blockAdmission", False)),
        )

    def backoff(self, count: int) -> int:
        """Seconds before the `count`-th requeue (count starts at 1)."""
        return min(self.backoff_base * 2 ** (count - 1), self.backoff_max)


@dataclass
class Waited:
    """What became of a workload Kueue admitted: when its pods were all ready (None: never, within the horizon),
    the times it was evicted, and when it was deactivated."""

    ready_at: int | None = None
    evictions: list[int] = field(default_factory=list)
    deactivated_at: int | None = None


def wait_for_capacity(
    settings: WaitForPodsReady,
    *,
    capacity: int | None,
    asks_anew: bool,
    start: int = 0,
    recovering: bool = False,
    horizon: int = 30 * 86400,
) -> Waited:
    """A workload admitted at `start` whose pods wait for their nodes.

    `capacity`: when the nodes are there (None: never). With `asks_anew` (flex-start: the autoscaler's request
    exists only while pods are pending) it is the seconds from each admission; otherwise (spot VMs coming back, a
    repaired slice) it is the absolute time. `recovering`: the workload ran before and lost its pods at `start`
    (PodsReady went False: WaitForRecovery, timed by recoveryTimeout); after an eviction it starts over (WaitForStart).
    Kueue readmits an evicted workload on the same quota once its backoff ends (nothing else competes here).
    """
    waited = Waited()
    admitted, count, first = start, 0, True
    while admitted < horizon:
        limit = settings.recovery_timeout if (recovering and first) else settings.timeout
        arrives = None if capacity is None else (admitted + capacity if asks_anew else max(capacity, admitted))
        if arrives is not None and (limit is None or arrives - admitted < limit):
            waited.ready_at = arrives
            return waited
        if limit is None:
            return waited  # waits as long as it takes: never evicted
        timed_out = admitted + limit
        if settings.backoff_limit is not None and count + 1 > settings.backoff_limit:
            waited.deactivated_at = timed_out
            return waited
        count += 1
        waited.evictions.append(timed_out)
        admitted, first = timed_out + settings.backoff(count), False
    return waited


def queue_order(settings: WaitForPodsReady, *, created: int, evicted: int | None) -> int:
    """The timestamp Kueue orders a pending workload by (equal priorities): its creation, or with timestamp Eviction
    the time it was evicted by a PodsReady timeout."""
    return evicted if (evicted is not None and settings.timestamp == "Eviction") else created


def admitted_at(settings: WaitForPodsReady, *, fits_at: int, not_ready_until: Sequence[int]) -> int:
    """When a workload whose quota is free from `fits_at` is admitted, while other admitted workloads of the cluster,
    in any ClusterQueue, have pods not ready until the times in `not_ready_until` (ready, or evicted by a timeout).

    With blockAdmission (cmd/kueue/main.go blockForPodsReady turns the cache's PodsReady tracking on), the scheduler
    admits nothing while any ClusterQueue holds an admitted workload without PodsReady: it gives the workload's quota
    reservation back and waits (pkg/scheduler/scheduler.go waitForPodsReadyIfNeeded; pkg/cache/scheduler/cache.go
    podsReadyForAllAdmittedWorkloads, WaitForPodsReady). Without it, a workload is admitted once its quota fits.
    """
    if not settings.block_admission:
        return fits_at
    return max([fits_at, *not_ready_until])


@dataclass
class Provisioned:
    """A queued-provisioning workload's ProvisioningRequests: the times each attempt failed and whether the check
    was rejected (the workload deactivated)."""

    failures: list[int] = field(default_factory=list)
    rejected_at: int | None = None
    provisioned_at: int | None = None


def provisioning_attempts(
    retry: Mapping[str, int], *, fails_after: int, attempts_that_fail: int, horizon: int = 30 * 86400
) -> Provisioned:
    """Each ProvisioningRequest fails `fails_after` seconds after it is made, the first `attempts_that_fail` of them;
    Kueue makes the next attempt after its backoff while the attempt number is within backoffLimitCount."""
    outcome = Provisioned()
    made, attempt = 0, 1
    while made < horizon:
        if attempt > attempts_that_fail:
            outcome.provisioned_at = made
            return outcome
        failed = made + fails_after
        outcome.failures.append(failed)
        if attempt > retry["backoffLimitCount"]:
            outcome.rejected_at = failed
            return outcome
        made = failed + min(retry["backoffBaseSeconds"] * 2 ** (attempt - 1), retry["backoffMaxSeconds"])
        attempt += 1
    return outcome


# ---- a Job's pods and a JobSet's Jobs -------------------------------------------------------------------------

DISRUPTED = "DisruptionTarget"


@dataclass(frozen=True)
class PodFailure:
    """A failed pod: its conditions (type -> status) and its containers' exit codes."""

    conditions: Mapping[str, str]
    exit_codes: Sequence[int]


def disruption() -> PodFailure:
    """A pod stopped by a drain, a node shutdown, a preemption or an eviction: DisruptionTarget=True, and the
    container ended by SIGTERM (143)."""
    return PodFailure({DISRUPTED: "True"}, (143,))


def deleted() -> PodFailure:
    """A pod deleted with a plain DELETE (GKE's forced deletion when a drain times out, `kubectl delete pod`): no
    DisruptionTarget (only the eviction API, preemption, the taint manager, pod GC and the kubelet add it:
    kubernetes.io/docs/concepts/workloads/pods/disruptions/#pod-disruption-conditions), the container ended by
    SIGTERM (143)."""
    return PodFailure({}, (143,))


def crash(code: int = 1) -> PodFailure:
    return PodFailure({}, (code,))


def _rule_matches(rule: Mapping[str, Any], failure: PodFailure) -> bool:
    exits = rule.get("onExitCodes")
    if exits is not None:
        codes = [c for c in failure.exit_codes if c != 0]
        values = set(exits["values"])
        return any((c in values) == (exits["operator"] == "In") for c in codes)
    return any(failure.conditions.get(c["type"]) == c.get("status", "True") for c in rule.get("onPodConditions", ()))


def job_run(spec: Mapping[str, Any], failures: Sequence[PodFailure]) -> str | None:
    """The reason a Job with `spec` fails after `failures` (in order), or None while it still runs."""
    counted = 0
    for failure in failures:
        rules = (spec.get("podFailurePolicy") or {}).get("rules", ())
        action = next((r["action"] for r in rules if _rule_matches(r, failure)), "Count")
        if action == "FailJob":
            return "PodFailurePolicy"
        if action == "Count":
            counted += 1
            if counted > spec.get("backoffLimit", 6):
                return "BackoffLimitExceeded"
    return None


@dataclass
class JobSetRun:
    restarts: int = 0
    counted: int = 0
    failed: str | None = None


def jobset_run(spec: Mapping[str, Any], failures: Sequence[PodFailure]) -> JobSetRun:
    """A JobSet whose child Jobs each see one failed pod, in turn: each failure fails its Job (by the child Job's
    own policy) and the JobSet's failure policy decides."""
    run = JobSetRun()
    policy = spec.get("failurePolicy")
    (child,) = {job["name"]: job["template"]["spec"] for job in spec["replicatedJobs"]}.values()
    for failure in failures:
        reason = job_run(child, [failure])
        if reason is None:
            continue  # the pod is started again within the Job: nothing reaches the JobSet
        if policy is None:
            run.failed = "FailedJobs"
            return run
        rules = policy.get("rules", ())
        rule = next((r for r in rules if not r.get("onJobFailureReasons") or reason in r["onJobFailureReasons"]), None)
        action = rule["action"] if rule else "RestartJobSet"
        if action == "FailJobSet":
            run.failed = "FailJobSetFailurePolicyAction"
            return run
        if action == "RestartJobSet":
            if run.counted >= policy.get("maxRestarts", 0):
                run.failed = "ReachedMaxRestarts"
                return run
            run.counted += 1
        run.restarts += 1
    return run


# ---- LeaderWorkerSet v0.10.0 (2161f38ff333f9e24d3c44adef7cd5d9787cac00) ------------------------------------------
#
# A group is a leader pod `<set>-<g>` (a Pod of the set's leader StatefulSet) and a worker StatefulSet `<set>-<g>`
# owned by that pod, with worker pods `<set>-<g>-1` ... `<set>-<g>-<size-1>`.


def group_pods(size: int, group: int = 0, name: str = "s") -> list[str]:
    """The pod names of a group: the leader, then its workers."""
    return [f"{name}-{group}", *(f"{name}-{group}-{i}" for i in range(1, size))]


@dataclass(frozen=True)
class GroupPod:
    """A pod of a group as the pod controller reads it: `phase`, its containers' restart count, whether deleted."""

    phase: str = "Running"
    restarts: int = 0
    deleted: bool = False


def restarted_pods(policy: str, pods: Mapping[str, GroupPod]) -> frozenset[str]:
    """The pods started again after the changes in `pods` (the leader first, then its workers, in group order).

    pkg/controllers/pod_controller.go handleRestartPolicy: for RecreateGroupOnPodRestart or RecreateGroupAfterStart,
    a pod of the group with a restarted container (pkg/utils/pod ContainerRestarted: a restart count above 0, phase
    Running or Pending) or being deleted (PodDeleted) makes the controller delete the group's leader pod with
    foreground propagation: the worker StatefulSet it owns goes with it, with every worker pod, and the leader
    StatefulSet and the pod controller create them all again. RecreateGroupAfterStart skips that while a pod of the
    group is Pending or missing (pendingPodsInGroup). Any other policy (None, the deprecated Default) leaves the group
    alone: the kubelet restarts the container in place, the worker or leader StatefulSet replaces a deleted pod.
    """
    changed = {name for name, pod in pods.items() if pod.deleted or pod.restarts > 0}
    if not changed:
        return frozenset()
    regroup = policy in ("RecreateGroupOnPodRestart", "RecreateGroupAfterStart")
    pending = any(pod.phase == "Pending" for pod in pods.values())
    if regroup and not (policy == "RecreateGroupAfterStart" and pending):
        return frozenset(pods)
    return frozenset(changed)


@dataclass(frozen=True)
class GroupStart:
    """How a group's start went: when its worker StatefulSet was created (None: never), when it served."""

    workers_at: int | None
    serving_at: int | None


def group_start(
    startup_policy: str, *, size: int, scheduled_at: int, pull: int, load: int, exclusive: bool = True
) -> GroupStart:
    """A group created at 0 whose leader pod is scheduled at `scheduled_at` (its slice there), whose pods take `pull`
    to start once scheduled, and whose leader serves (is Ready) `load` after every host has joined it: the stack's
    leader starts vLLM only once all LWS_GROUP_SIZE hosts joined its Ray head, and only the leader is probed.

    pkg/controllers/pod_controller.go Reconcile, for the leader pod: no worker StatefulSet for size 1; with
    LeaderReady none until the leader pod is Ready; with the exclusive-topology annotation none until the leader pod
    is scheduled (its node's topology value is the workers' nodeSelector); else it is created. Workers are placed on
    the leader's slice, whose VMs come up together, so they start `pull` after they are created.
    """
    leader_running = scheduled_at + pull
    if size == 1:
        return GroupStart(None, leader_running + load)
    if startup_policy == "LeaderReady":
        # The leader is Ready only once the workers joined; the workers are created only once it is Ready.
        return GroupStart(None, None)
    workers_at = scheduled_at if exclusive else 0
    joined = max(leader_running, workers_at + pull)
    return GroupStart(workers_at, joined + load)


@dataclass
class _Group:
    revision: str
    slice_at: int | None = None
    ready: bool = False


@dataclass
class Rollout:
    """A rollout's course: the fewest groups serving at once, when the set was at rest on the new revision (None:
    never, within the horizon), and the most slices held at once."""

    fewest_serving: int
    done_at: int | None
    most_slices: int


def _unready(states: Sequence[_Group | None], replicas: int, new: str) -> int:
    """calculateLWSUnreadyReplicas: desired groups not ready or not on the new revision."""
    return sum(1 for i in range(replicas) if i >= len(states) or not _ready_new(states[i], new))


def _ready_new(group: _Group | None, new: str) -> bool:
    return group is not None and group.ready and group.revision == new


def _want_replicas(replicas: int, surge: int, unavailable: int, unready: int) -> int:
    """calculateRollingUpdateReplicas."""
    if unready <= surge:
        return replicas + max(unready - unavailable, 0)
    return replicas + surge


def _partition(states: Sequence[_Group | None], sts_replicas: int, step: int, current: int, new: str) -> int:
    """rollingUpdatePartition."""
    tail = 0
    for group in reversed(states):
        if not _ready_new(group, new):
            break
        tail += 1
    step_partition = max(sts_replicas - tail - step, 0)
    unavailable = sum(1 for group in states[:step_partition] if group is None or not group.ready)
    partition = step_partition + unavailable
    for i in range(min(partition, sts_replicas - 1), step_partition - 1, -1):
        group = states[i]
        if group is None or not group.ready or group.revision == new:
            partition = i
        else:
            break
    return min(partition, current)


def lws_rollout(
    *,
    replicas: int,
    max_surge: int,
    max_unavailable: int,
    slices: int,
    start: int,
    slices_up: int | None = None,
    scale_up: int = 0,
    new_starts: bool = True,
    horizon: int = 24 * 60,
) -> Rollout:
    """A LeaderWorkerSet of `replicas` groups, each ready on the old revision, whose template changes at minute 0.

    Each group needs a slice of its own (the exclusive-topology annotation on the node pool); the pool has `slices`,
    of which `slices_up` (default: all) have their VMs; a slice without them comes up `scale_up` minutes after a group
    first asks for it (the cluster autoscaler, scaleToZero). A group on the new revision is ready `start` minutes after
    it has its slice, or never if not `new_starts` (an image or model that does not load).

    The LWS controller (pkg/controllers/leaderworkerset_controller.go rollingUpdateParameters, rollingUpdatePartition,
    calculateRollingUpdateReplicas, calculateContinuousReadyReplicas, calculateLWSUnreadyReplicas) sets the leader
    StatefulSet's replicas (replicas + maxSurge while groups are not ready on the new revision) and partition; that
    StatefulSet (Parallel pod management, maxUnavailable = maxSurge + maxUnavailable, 1 here) creates missing groups
    (below the partition on the old revision, from it on the new), removes those above its replicas, and replaces the
    group of the highest index not on the new revision, one at a time, waiting until the replaced one is ready
    (kubernetes pkg/controller/statefulset/stateful_set_control.go updateStatefulSet: "we terminate the Pod with the
    largest ordinal that does not match the update revision" ... "wait for unhealthy Pods on update"). Controllers
    react within the minute; time advances a minute at a time.
    """
    old, new = "old", "new"
    surge = min(max_surge, replicas)
    up = slices if slices_up is None else slices_up
    groups: dict[int, _Group] = {i: _Group(old, slice_at=0, ready=True) for i in range(replicas)}
    held = set(range(replicas))  # indexes of groups holding a slice
    asked: dict[int, int] = {}  # group -> minute it asked for a slice that was down
    sts_replicas, partition = replicas, 0
    fewest, most = replicas, len(held)
    updated = True
    for now in range(horizon + 1):
        for group in groups.values():
            starts = group.revision == old or new_starts
            if group.slice_at is not None and starts and now >= group.slice_at + start:
                group.ready = True
        for _ in range(10 * (replicas + surge)):
            states = [groups.get(i) for i in range(sts_replicas)]
            before = (sts_replicas, partition, {i: (g.revision, g.slice_at) for i, g in groups.items()})
            # The LWS controller.
            if updated:
                partition, want = (
                    min(replicas, sts_replicas),
                    _want_replicas(replicas, surge, max_unavailable, replicas),
                )
                updated = False
            elif partition == 0 and sts_replicas == replicas:
                want = replicas
            else:
                step = max_unavailable + surge - (replicas + surge - sts_replicas)
                partition = _partition(states, sts_replicas, step, partition, new)
                want = _want_replicas(replicas, surge, max_unavailable, _unready(states, replicas, new))
            sts_replicas = want
            # The leader StatefulSet.
            for i in [i for i in groups if i >= sts_replicas]:
                del groups[i]
                held.discard(i)
            for i in range(sts_replicas):
                if i not in groups:
                    groups[i] = _Group(old if i < partition else new)
            for i in range(sts_replicas - 1, partition - 1, -1):
                if groups[i].revision != new:
                    held.discard(i)
                    groups[i] = _Group(new)
                    break
                if not groups[i].ready:
                    break
            # Slices: a group without one takes a free slice whose VMs are up, else asks for one to come up.
            for i in sorted(groups):
                group = groups[i]
                if group.slice_at is not None or len(held) >= slices:
                    continue
                if len(held) < up:
                    group.slice_at = now
                    held.add(i)
                elif i in asked and now >= asked[i] + scale_up:
                    group.slice_at, up = now, up + 1
                    held.add(i)
                else:
                    asked.setdefault(i, now)
            after = (sts_replicas, partition, {i: (g.revision, g.slice_at) for i, g in groups.items()})
            if after == before:
                break
        serving = sum(1 for g in groups.values() if g.ready)
        fewest, most = min(fewest, serving), max(most, len(held))
        at_rest = partition == 0 and sts_replicas == replicas and all(_ready_new(g, new) for g in groups.values())
        if at_rest and len(groups) == replicas:
            return Rollout(fewest, now, most)
    return Rollout(fewest, None, most)


# ---- Kueue v0.19.2 MultiKueue ---------------------------------------------------------------------------------

ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
INCREMENTAL_ROUND = 5 * 60
"""pkg/controller/workloaddispatcher/incrementaldispatcher.go incrementalDispatcherRoundTimeout."""


@dataclass(frozen=True)
class MultiKueue:
    """A manager's MultiKueue settings as Kueue holds them after defaulting (apis/config/v1beta2/defaults.go: GC every
    minute, origin `multikueue`, workers lost for 15 minutes, the all-at-once dispatcher; the incremental one
    nominates 3 workers a round)."""

    gc_interval: int
    """Seconds; 0 turns the garbage collector off (configuration_types.go MultiKueue.GCInterval)."""
    origin: str
    worker_lost_timeout: int
    dispatcher: str
    step: int = 3

    @classmethod
    def of(cls, configuration: Mapping[str, Any]) -> MultiKueue:
        settings = configuration.get("multiKueue") or {}
        gc = settings.get("gcInterval")
        return cls(
            gc_interval=60 if gc is None else seconds(gc),
            origin=settings.get("origin") or "multikueue",
            worker_lost_timeout=seconds(settings["workerLostTimeout"]) if settings.get("workerLostTimeout") else 900,
            dispatcher=settings.get("dispatcherName") or ALL_AT_ONCE,
            step=(settings.get("incrementalDispatcherConfig") or {}).get("stepSize", 3),
        )


@dataclass(frozen=True)
class LostWorker:
    """What the manager did with a workload whose worker was unreachable: when it gave up on that worker (set the
    MultiKueue check to Retry, which evicts the workload on the manager and queues it again, to be dispatched to the
    reachable workers), or None when it kept the workload there."""

    redispatched_at: int | None


def worker_lost(settings: MultiKueue, *, admitted: bool, lost_at: int, back_at: int | None) -> LostWorker:
    """A worker is unreachable from `lost_at` (its watch dropped) until `back_at` (None: for good).

    pkg/controller/admissionchecks/multikueue/workload.go reconcileGroup, step 6a: only for a workload admitted on
    that worker (the check Ready, status.clusterName the worker) and no admitted copy visible, the manager waits
    workerLostTimeout from the first loss (multikueuecluster.go connectionState.disconnectedSince, kept across failed
    reconnects, cleared by a connection) and then sets the check to Retry ("Admitting remote lost");
    pkg/controller/core/workload_controller.go reconcileCheckBasedEviction then evicts the workload, which is queued
    again. A worker back before then shows its admitted copy again (step 6b): nothing changes. A workload still
    waiting (the check Pending) is not touched: its copies on the reachable workers keep waiting.
    """
    if not admitted:
        return LostWorker(None)
    deadline = lost_at + settings.worker_lost_timeout
    if back_at is not None and back_at < deadline:
        return LostWorker(None)
    return LostWorker(deadline)


@dataclass(frozen=True)
class RemoteCopy:
    """A Workload on a worker, as MultiKueue created it: its name (the manager's Workload of the same name) and the
    `kueue.x-k8s.io/multikueue-origin` label of the manager that created it."""

    name: str
    origin: str


def garbage_collected(
    settings: MultiKueue,
    copies: Sequence[RemoteCopy],
    *,
    on_manager: set[str],
    reachable_from: int,
    horizon: int = 86400,
) -> dict[str, int]:
    """The copies the manager's garbage collector deletes from a worker reachable from `reachable_from`, and when.

    multikueuecluster.go clustersReconciler.runGC: off when gcInterval is 0, else a run every gcInterval from the
    controller's start (here 0); remoteClient.runGC skips a worker it is not connected to, lists the worker's
    Workloads with its own origin label and deletes those (and their jobs) whose Workload is gone from the manager.
    A copy on a reachable worker is deleted at once when its manager Workload is deleted (workload.go Reconcile,
    isDeleted); a worker unreachable then keeps it until the collector runs: "Remote workloads on unavailable clusters
    will be cleaned up by the per-cluster GC once the cluster reconnects".
    """
    if settings.gc_interval == 0:
        return {}
    runs = range(settings.gc_interval, horizon + 1, settings.gc_interval)
    first = next((run for run in runs if run >= reachable_from), None)
    if first is None:
        return {}
    return {c.name: first for c in copies if c.origin == settings.origin and c.name not in on_manager}


@dataclass(frozen=True)
class Dispatched:
    """Where a workload was admitted and when, and when each worker got its copy."""

    admitted_on: str | None
    admitted_at: int | None
    copies: Mapping[str, int]


def dispatch(
    settings: MultiKueue,
    workers: Sequence[str],
    admits_after: Mapping[str, int],
    *,
    at: int = 0,
    unreachable: frozenset[str] = frozenset(),
) -> Dispatched:
    """A workload admitted on the manager at `at`, dispatched to `workers` (the MultiKueueConfig's order);
    worker `w` admits its copy `admits_after[w]` seconds after it gets it (absent: never); `unreachable` workers get
    no copy.

    All at once (workload.go nominateAndSynchronizeWorkers; readGroup lists only connected workers): every reachable
    worker gets a copy at once. Incremental (workloaddispatcher/incrementaldispatcher.go nominateWorkers,
    getNextNominatedWorkers): `step` more of the config's workers each round, reachable or not, in the config's order
    (feature MultiKueueIncrementalDispatcherRespectConfigOrder, on by default in 0.19), a new round at the first
    reconcile more than 5 minutes after the last (taken here as 5 minutes and a second); a nominated worker that is
    not connected gets no copy. The first copy admitted wins (reconcileGroup 6b, bestMatchByCondition: the earliest
    Admitted condition); the others are deleted, and no round starts after it (ShouldSkipClusterNomination: the
    workload has a clusterName).
    """
    copies: dict[str, int] = {}
    if settings.dispatcher == ALL_AT_ONCE:
        copies = {worker: at for worker in workers if worker not in unreachable}
    else:
        for round_, first in enumerate(range(0, len(workers), settings.step)):
            for worker in workers[first : first + settings.step]:
                if worker not in unreachable:
                    copies[worker] = at + round_ * (INCREMENTAL_ROUND + 1)
    admitted = {
        worker: when + delay for worker, when in copies.items() if (delay := admits_after.get(worker)) is not None
    }
    if admitted:
        winner = min(admitted, key=lambda worker: admitted[worker])
        copies = {worker: when for worker, when in copies.items() if when <= admitted[winner]}
        return Dispatched(winner, admitted[winner], copies)
    return Dispatched(None, None, copies)
