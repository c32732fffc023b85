"""`tpu-stack why`: Kueue's objects, as Kueue v0.19.2 and the cluster autoscaler write them, in plain words.

Each case builds the objects of one situation on the dev stack's queues (teams research and training in cohort
tpu-stack: research holds 4 chips of flex-v6e and 8 of multislice; training 8 of multislice and may borrow 8;
the cohort itself holds the 8 multislice chips no team was given) or prod's queued group `burst`, and checks
the exact sentence, written by hand from the numbers in the objects.

Sources (kubernetes-sigs/kueue at v0.19.2, commit 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb):
- the scheduler's messages, flavorassigner.go fitsResourceQuota: "insufficient unused quota for %s in flavor
  %s, %s more needed" (reason WaitingForQuota) and "insufficient quota for %s in flavor %s, previously
  considered podsets requests (%s) + current podset request (%s) > maximum capacity (%s)" (ExceedsMaxQuota);
  Assignment.Message prefixes "couldn't assign flavors to pod set <name>: ";
- the condition it writes, scheduler.go requeueAndUpdate: QuotaReserved=False with reason "Pending" (the
  granular reasons need the UnadmittedWorkloadsObservability gate, default off in 0.19, kube_features.go);
- quota arithmetic, pkg/cache/scheduler/resource_node.go available/potentialAvailable;
- the provisioning check, pkg/controller/admissionchecks/provisioning/controller.go syncCheckStates (Accepted:
  Pending with the Provisioned message; Failed past backoffLimitCount: Rejected with the Failed message) and
  workload_controller.go reconcileCheckBasedEviction (deactivation, Evicted reason
  "DeactivatedDueToAdmissionCheck", message "The workload is deactivated due to AdmissionCheck in Rejected
  state: ..."), evict.go resetChecksOnEviction ("Reset to Pending after eviction. Previously: Rejected");
- preemption, pkg/scheduler/preemption/preemption.go preemptionMessage and the "Preempted" event with the
  effective priorities; conditions Evicted (reason "Preempted"), Preempted (reason "InCohortReclamation"),
  Requeued; jobframework/reconciler.go clears the quota with reason "Pending" and the eviction message;
- ProvisioningRequest conditions and messages, kubernetes/autoscaler
  cluster-autoscaler/apis/provisioningrequest/autoscaling.x-k8s.io/v1/types.go (Accepted, Provisioned,
  Failed, BookingExpired, CapacityRevoked) and provisioningrequest/conditions/conditions.go (AcceptedMsg
  "ProvisioningRequest is accepted by ClusterAutoscaler", ExpiredReason "Expired", ExpiredMsg
  "ProvisioningRequest is expired"), tag cluster-autoscaler-1.35.2;
- pod events, processors/status/eventing_scale_up_processor.go ("NotTriggerScaleUp", "pod didn't trigger
  scale-up: ...") and core/scaleup/orchestrator/skippedreasons.go ("in backoff after failed scale-up").
"""

from __future__ import annotations

from dataclasses import replace

from tests.tpu_stack import kueue_objects as k
from tpu_stack import kueue, why

DEV = why.StackView(
    flavors={"flex-v6e": k.FLEX_V6E_LABELS, "multislice": k.MULTISLICE_LABELS},
    node_pools={"flex-v6e": ["flex-v6e"], "multislice": ["multislice-0", "multislice-1", "multislice-2"]},
    chips_per_slice={"flex-v6e": 4, "multislice": 8},
    vms_per_slice={"flex-v6e": 1, "multislice": 2},
    team_keys={
        "research-cluster-queue": "tpu-stack:queues.teams[0]",
        "training-cluster-queue": "tpu-stack:queues.teams[1]",
    },
)
PROD = why.StackView(
    flavors={"burst": k.BURST_LABELS},
    node_pools={"burst": ["burst"]},
    chips_per_slice={"burst": 8},
    vms_per_slice={"burst": 2},
    check_controllers={"burst-provisioning": kueue.PROVISIONING_CONTROLLER},
    check_flavors={"burst-provisioning": "burst"},
)
COHORT = k.cohort("tpu-stack", {"multislice": "8"})


def research(multislice: tuple[str, str] = ("0", "0")) -> k.Obj:
    return k.cluster_queue(
        "research-cluster-queue",
        "research",
        cohort="tpu-stack",
        quotas={"flex-v6e": ("4", None), "multislice": ("8", None)},
        reserved={"multislice": multislice},
    )


def training(multislice: tuple[str, str] = ("0", "0"), limit: str | None = "8") -> k.Obj:
    return k.cluster_queue(
        "training-cluster-queue",
        "training",
        cohort="tpu-stack",
        quotas={"flex-v6e": ("0", "0"), "multislice": ("8", limit)},
        reserved={"multislice": multislice},
    )


def pending_jobset(job: str, namespace: str, slices: int, message: str) -> k.Obj:
    """A multislice JobSet (2 pods of 4 chips per slice) the scheduler could not fit."""
    return k.workload(
        "JobSet",
        job,
        namespace,
        f"{namespace}-queue",
        pods=2 * slices,
        chips_per_pod=4,
        labels=k.MULTISLICE_LABELS,
        conditions=k.pending_conditions(message, k.ago(minutes=9)),
        recorded=True,
    )


def explain(evidence: why.Evidence, view: why.StackView = DEV) -> why.Diagnosis:
    return why.explain(evidence, view, k.NOW)


def test_quota_full_in_a_queue_without_a_cohort() -> None:
    """One ClusterQueue (no teams) with 24 chips of multislice, 16 reserved; a 2-slice JobSet asks for 16."""
    queue = k.cluster_queue(
        "cluster-queue",
        "default",
        cohort=None,
        quotas={"multislice": ("24", None)},
        reserved={"multislice": ("16", "0")},
    )
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 8 more needed"
    )
    found = explain(why.Evidence(pending_jobset("train-2", "default", 2, message), queue, [queue]))
    assert found.state == "Pending"
    assert found.text == (
        "Pending: waiting for quota. It needs 16 TPU chips; on multislice: cluster-queue holds 16 of its "
        "nominal 24, so 8 more TPU chips must be free; the queue is in no cohort and cannot borrow. It starts "
        "when workloads of cluster-queue free 8 more TPU chips. Nothing needs changing."
    )


def test_borrowing_limit_holds_it_while_the_cohort_has_chips_idle() -> None:
    """training holds its 8 and may borrow 8; it asks for 16 more while 16 of the cohort's 24 are idle."""
    queues = [research(), training(("8", "0"))]
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 8 more needed"
    )
    wl = pending_jobset("train-2", "training", 2, message)
    found = explain(why.Evidence(wl, queues[1], queues, COHORT))
    assert found.text == (
        "Pending: waiting for quota. It needs 16 TPU chips; on multislice: held by its borrowing limit: "
        "training-cluster-queue holds 8 of its nominal 8 and may borrow at most 8 from cohort tpu-stack (it "
        "borrows 0 now), so it can take only 8 more while the cohort has 16 idle. It starts when "
        "training-cluster-queue's own workloads free 8 more TPU chips. The platform team can raise "
        "tpu-stack:queues.teams[1].borrowingLimit.multislice to 16 or more."
    )


def test_borrowing_limit_below_the_request_can_never_admit_it() -> None:
    """training asks for 24 chips (3 slices): its nominal 8 plus borrowing limit 8 is the most it can hold."""
    queues = [research(), training()]
    message = (
        "couldn't assign flavors to pod set slice: insufficient quota for google.com/tpu in flavor multislice, "
        "previously considered podsets requests (0) + current podset request (24) > maximum capacity (16)"
    )
    found = explain(why.Evidence(pending_jobset("train-3", "training", 3, message), queues[1], queues, COHORT))
    assert found.text == (
        "Pending, and it cannot be admitted as submitted. It needs 24 TPU chips; on multislice: can never hold "
        "it: training-cluster-queue can hold at most 16 (its nominal 8 plus its borrowing limit 8). You can "
        "submit at most 16 TPU chips (2 slices of multislice), or ask the platform team to raise "
        "tpu-stack:queues.teams[1].borrowingLimit.multislice to 16."
    )


def test_cohort_lends_nothing_when_every_chip_of_the_cohort_is_in_use() -> None:
    """research holds its 8 and asks for 16 more; training holds 16 (8 borrowed): all 24 are in use."""
    queues = [research(("8", "0")), training(("16", "8"))]
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 16 more needed"
    )
    found = explain(why.Evidence(pending_jobset("explore-2", "research", 2, message), queues[0], queues, COHORT))
    assert found.text == (
        "Pending: waiting for quota. It needs 16 TPU chips; on multislice: research-cluster-queue holds 8 of "
        "its nominal 8, and 24 of the cohort's 24 are in use (research-cluster-queue 8, training-cluster-queue "
        "16 with 8 borrowed), so it can take 0 and 16 more TPU chips must be free. It starts when 16 more TPU "
        "chips of multislice are free in cohort tpu-stack. Nothing needs changing."
    )


def queued_job(
    conditions: list[k.Obj],
    checks: list[k.Obj],
    *,
    active: bool = True,
    admitted: bool = True,
    status: k.Obj | None = None,
    annotations: dict[str, str] | None = None,
) -> k.Obj:
    """prod's queued Job on `burst`: one 2x4 slice, 2 pods of 4 chips, in research's queue."""
    return k.workload(
        "Job",
        "burst-queued",
        "research",
        "research-queue",
        pods=2,
        chips_per_pod=4,
        labels=k.BURST_LABELS,
        conditions=conditions,
        suffix="7b9c2",
        created=k.ago(hours=2, minutes=5),
        admission=k.admission("research-cluster-queue", "main", "burst", 2, 8) if admitted else None,
        checks=checks,
        active=active,
        status=status,
        annotations=annotations,
    )


def test_queued_provisioning_request_accepted_but_not_granted() -> None:
    """Quota reserved, the provisioning check Pending, its ProvisioningRequest Accepted 2 hours ago."""
    since = k.ago(hours=2, minutes=5)
    wl = queued_job(
        [
            k.condition(
                "QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue research-cluster-queue", since
            ),
            k.condition("Admitted", "False", "UnsatisfiedChecks", "The workload has not all checks ready", since),
        ],
        [{"name": "burst-provisioning", "state": "Pending", "message": "", "lastTransitionTime": since}],
    )
    request = k.provisioning_request(
        "job-burst-queued-7b9c2-burst-provisioning-1",
        "research",
        wl,
        [
            k.condition(
                "Accepted", "True", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler", k.ago(hours=2)
            )
        ],
        since,
    )
    found = explain(why.Evidence(wl, provisioning_requests=[request]), PROD)
    assert found.state == "Provisioning"
    assert found.text == (
        "Waiting for capacity: quota is reserved in research-cluster-queue (8 TPU chips of flavor burst), and "
        "admission check burst-provisioning waits for ProvisioningRequest job-burst-queued-7b9c2-burst-provisioning-1, "
        "accepted 2h ago and not provisioned yet. GKE creates the 2 nodes of the slice when it grants the request, and "
        "the pods start then; nothing needs changing (delete the workload to give up its place)."
    )


def test_queued_provisioning_failed_and_the_workload_was_deactivated_with_its_request_still_readable() -> None:
    """The fourth request failed (Expired) past the check's 3 retries: Rejected, then deactivated. The request is
    still there only when the CleanupProvisioningRequestsOnEviction gate is off (the real path is below)."""
    message = (
        'The workload is deactivated due to AdmissionCheck in Rejected state: "burst-provisioning" '
        "(ProvisioningRequest is expired)"
    )
    since = k.ago(minutes=10)
    wl = queued_job(
        [
            k.condition("QuotaReserved", "False", "Pending", message, since),
            k.condition(
                "Admitted",
                "False",
                "NoReservationUnsatisfiedChecks",
                "The workload has no reservation and not all checks ready",
                since,
            ),
            k.condition("Evicted", "True", "DeactivatedDueToAdmissionCheck", message, since),
            k.condition("Requeued", "False", "DeactivatedDueToAdmissionCheck", message, since),
        ],
        [
            {
                "name": "burst-provisioning",
                "state": "Pending",
                "message": "Reset to Pending after eviction. Previously: Rejected",
                "lastTransitionTime": since,
            }
        ],
        active=False,
        admitted=False,
    )
    request = k.provisioning_request(
        "job-burst-queued-7b9c2-burst-provisioning-4",
        "research",
        wl,
        [
            k.condition(
                "Accepted", "True", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler", k.ago(hours=1)
            ),
            k.condition("Failed", "True", "Expired", "ProvisioningRequest is expired", k.ago(minutes=11)),
        ],
        k.ago(hours=1),
    )
    found = explain(why.Evidence(wl, provisioning_requests=[request]), PROD)
    assert found.state == "Deactivated"
    assert found.text == (
        "Stopped: queued provisioning attempt 4 of 4 failed, and Kueue deactivated the workload: GKE did not "
        "provide 8 TPU chips of flavor burst (ProvisioningRequest is expired). You can delete it (tpu-stack "
        "delete burst-queued) and submit it again to queue a new request, or submit to a pool group with "
        "capacity now."
    )


def test_preempted_to_give_back_borrowed_quota() -> None:
    """research's 2-slice JobSet borrowed 8 chips; training reclaimed them 5 minutes ago."""
    message = (
        "Preempted to accommodate a workload (UID: 0f6c1d2e-5b7a-4c0e-9d41-2f3a4b5c6d7e, JobUID: "
        "9a8b7c6d-1e2f-4a3b-8c9d-0e1f2a3b4c5d) due to reclamation within the cohort; preemptor path: "
        "/tpu-stack/training-cluster-queue; preemptee path: /tpu-stack/research-cluster-queue"
    )
    since = k.ago(minutes=5)
    wl = k.workload(
        "JobSet",
        "explore-2",
        "research",
        "research-queue",
        pods=4,
        chips_per_pod=4,
        labels=k.MULTISLICE_LABELS,
        conditions=[
            k.condition("QuotaReserved", "False", "Pending", message, since),
            k.condition("Admitted", "False", "NoReservation", "The workload has no reservation", since),
            k.condition("Evicted", "True", "Preempted", message, since),
            k.condition("Preempted", "True", "InCohortReclamation", message, since),
            k.condition("Requeued", "True", "Preempted", message, since),
        ],
    )
    preempted = k.event(
        "Workload",
        wl["metadata"]["name"],
        "research",
        "Preempted",
        message + "; preemptor effective priority: 100 (base: 100, boost: 0); preemptee effective priority: 100 "
        "(base: 100, boost: 0)",
        "kueue-admission",
        since,
    )
    queues = [research(), training(("8", "0"))]
    found = explain(why.Evidence(wl, queues[0], queues, COHORT, events=[preempted]))
    assert found.state == "Preempted"
    assert found.text == (
        "Preempted 5m ago to give back quota it had borrowed in the cohort, for a workload of training-cluster-queue "
        "(priority 100 against its 100); it is queued again and will restart from the beginning. Work within "
        "research-cluster-queue's nominal 8 TPU chips of multislice is not reclaimed by other queues; work beyond it "
        "borrows, and the lenders may take it back. Checkpoint to /checkpoints so a restart resumes."
    )


def test_admitted_but_the_pod_cannot_be_scheduled_on_the_flavor() -> None:
    """Admitted on flex-v6e 20 minutes ago; the scheduler finds no node and the autoscaler is in backoff."""
    since = k.ago(minutes=20)
    wl = k.workload(
        "Job",
        "flex-v6e-job",
        "research",
        "research-queue",
        pods=1,
        chips_per_pod=4,
        labels=k.FLEX_V6E_LABELS,
        conditions=k.admitted_conditions("research-cluster-queue", since),
        admission=k.admission("research-cluster-queue", "main", "flex-v6e", 1, 4),
    )
    pod = k.pod(
        "flex-v6e-job-x7k2p",
        "research",
        {"batch.kubernetes.io/job-name": "flex-v6e-job"},
        running=False,
        unschedulable="0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: "
        "0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
    )
    scale = k.event(
        "Pod",
        "flex-v6e-job-x7k2p",
        "research",
        "NotTriggerScaleUp",
        "pod didn't trigger scale-up: 1 in backoff after failed scale-up",
        "cluster-autoscaler",
        k.ago(minutes=2),
    )
    queues = [research(), training()]
    found = explain(why.Evidence(wl, queues[0], queues, COHORT, events=[scale], pods=[pod]))
    assert found.state == "Starting"
    assert found.text == (
        "Starting: admitted 20m ago by research-cluster-queue on flavor flex-v6e (4 TPU chips); 0 of 1 pods "
        "are running, and 1 cannot be scheduled: 0/3 nodes are available: 3 node(s) didn't match Pod's node "
        "affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling. "
        "The cluster autoscaler did not add nodes: pod didn't trigger scale-up: 1 in backoff after failed "
        "scale-up (an earlier scale-up of the pool failed, often for lack of TPU capacity in the zone; it "
        "retries after a backoff). They start when node pool flex-v6e can add nodes for them (the pool's size "
        "limits, the zone's TPU capacity and the project's quota decide); delete the workload to free its "
        "quota meanwhile."
    )


def test_admitted_and_running_on_borrowed_chips() -> None:
    """training's 2-slice JobSet runs on its 8 chips plus 8 borrowed; all 4 pods run."""
    since = k.ago(hours=1)
    wl = k.workload(
        "JobSet",
        "train-2",
        "training",
        "training-queue",
        pods=4,
        chips_per_pod=4,
        labels=k.MULTISLICE_LABELS,
        conditions=k.admitted_conditions("training-cluster-queue", since),
        admission=k.admission("training-cluster-queue", "slice", "multislice", 4, 16),
    )
    pods = [
        k.pod(f"train-2-slice-{s}-{w}-abcde", "training", {"jobset.sigs.k8s.io/jobset-name": "train-2"}, running=True)
        for s in (0, 1)
        for w in (0, 1)
    ]
    queues = [research(), training(("16", "8"))]
    found = explain(why.Evidence(wl, queues[1], queues, COHORT, pods=pods))
    assert found.state == "Running"
    assert found.text == (
        "Running: admitted 1h ago by training-cluster-queue on flavor multislice (16 TPU chips); 4 of 4 pods are "
        "running. Nothing holds it back, but training-cluster-queue borrows 8 TPU chips of multislice from cohort "
        "tpu-stack: the queues that lend them may reclaim them by preemption."
    )


def test_a_message_it_does_not_know_is_quoted_as_kueue_wrote_it() -> None:
    """The scheduler's own failure to admit (scheduler.go admit: "Failed to admit workload: %v"): Kueue's own words,
    not a guess."""
    said = "Failed to admit workload: Operation cannot be fulfilled on workloads.kueue.x-k8s.io"
    wl = pending_jobset("lost", "research", 1, said)
    assert explain(why.Evidence(wl)).text == f"Pending: Kueue says: {said}"


def test_the_local_queue_of_the_stack_missing_is_the_platform_teams() -> None:
    """The LocalQueue the stack declares for the namespace is gone (workload_controller.go
    reconcileOnLocalQueueActiveState: "LocalQueue %s is terminating or missing")."""
    wl = pending_jobset("lost", "research", 1, "LocalQueue research-queue is terminating or missing")
    view = replace(DEV, local_queues={"research": "research-queue"})
    found = explain(why.Evidence(wl), view)
    assert (found.text, found.who, found.outcome) == (
        "Pending: LocalQueue research-queue, which the stack declares in research, does not exist. The platform team "
        "runs `pulumi up` to declare it again.",
        (why.PLATFORM,),
        why.WAITS,
    )


# ---- preemption for the workload (scheduler.go markPreemptionOutcome; preemption.go PreemptedWorkload event) ---


def preempted_workload_event(preemptor: k.Obj, target: str, queue: str, mine: int, theirs: int) -> k.Obj:
    """The scheduler's event on the preemptor for each workload it preempts, through core/v1."""
    return k.kueue_event(
        preemptor,
        "PreemptedWorkload",
        f"Preempted workload {target} (UID: 7c1e2d3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f) in ClusterQueue {queue}; preemptor "
        f"effective priority: {mine} (base: {mine}, boost: 0); preemptee effective priority: {theirs} (base: {theirs}, "
        "boost: 0)",
        k.ago(minutes=1),
    )


def test_preempting_a_borrowers_workload_to_take_back_its_nominal_quota() -> None:
    """research holds none of its nominal 8 and asks for 8; training holds 24, 16 of them borrowed (here without a
    borrowing limit). The scheduler preempts training's workload and appends the outcome to its message."""
    queues = [research(), training(("24", "16"), limit=None)]
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 8 more needed. Pending the preemption of 1 workload(s)"
    )
    wl = pending_jobset("explore-1", "research", 1, message)
    event = preempted_workload_event(wl, "training/jobset-train-3-9d8e7", "training-cluster-queue", 100, 100)
    found = explain(why.Evidence(wl, queues[0], queues, COHORT, events=[event]))
    assert found.state == "Pending"
    assert found.text == (
        "Pending: Kueue is preempting 1 workload to make room for it: training/jobset-train-3-9d8e7 of "
        "training-cluster-queue (priority 100, the same as this one). It needs 8 TPU chips of flavor multislice; "
        "research-cluster-queue holds 0 of its nominal 8: the chips it lacks are its own nominal quota, lent to other "
        "queues of cohort tpu-stack, and Kueue takes them back (reclaimWithinCohort: Any). It starts once they have "
        "stopped and released their quota; nothing needs changing."
    )


def test_preempting_a_lower_priority_workload_of_the_same_queue() -> None:
    """research holds its 8 with a workload of priority 100; one of priority 200 asks for 8."""
    queues = [research(("8", "0")), training()]
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 8 more needed. Pending the preemption of 1 workload(s)"
    )
    wl = pending_jobset("urgent-1", "research", 1, message)
    wl["spec"]["priority"] = 200
    event = preempted_workload_event(wl, "research/jobset-small-1-a1b2c", "research-cluster-queue", 200, 100)
    found = explain(why.Evidence(wl, queues[0], queues, COHORT, events=[event]))
    assert found.text == (
        "Pending: Kueue is preempting 1 workload to make room for it: research/jobset-small-1-a1b2c of "
        "research-cluster-queue (priority 100, below this one's 200). It needs 8 TPU chips of flavor multislice; "
        "research-cluster-queue holds 8 of its nominal 8, and Kueue preempts workloads of lower priority in "
        "research-cluster-queue for it (withinClusterQueue: LowerPriority). It starts once they have stopped and "
        "released their quota; nothing needs changing."
    )


def test_preemption_calls_that_failed_are_retried() -> None:
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 8 more needed. Preempting 1 workload(s) failed, will retry."
    )
    queues = [research(), training(("24", "16"), limit=None)]
    found = explain(why.Evidence(pending_jobset("explore-1", "research", 1, message), queues[0], queues, COHORT))
    assert found.text == (
        "Pending: Kueue tried to preempt 1 workload to make room for it and could not; it tries again in its next "
        "cycle. Kueue says: couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in "
        "flavor multislice, 8 more needed. Nothing needs changing; if it lasts, the platform team can read the Kueue "
        "controller's log."
    )


def test_other_queues_borrow_its_nominal_quota_past_its_lending_limit() -> None:
    """research lends at most 4 of its 8 (lendingLimit 4, so 4 are its own) and reclaims only from lower
    priorities; training may borrow 12 and holds 20. The cohort: its own 8, research's 4, training's 8 = 20, all in
    use, so research can take only its local 4 of the 8 it asks for (available = 4 + min(20 - 20, ...)), and no
    workload of lower priority is there to preempt."""
    queues = [
        k.cluster_queue(
            "research-cluster-queue",
            "research",
            cohort="tpu-stack",
            quotas={"flex-v6e": ("4", None), "multislice": ("8", None)},
            lending={"multislice": "4"},
            reclaim="LowerPriority",
        ),
        k.cluster_queue(
            "training-cluster-queue",
            "training",
            cohort="tpu-stack",
            quotas={"flex-v6e": ("0", "0"), "multislice": ("8", "12")},
            reserved={"multislice": ("20", "12")},
        ),
    ]
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 4 more needed"
    )
    found = explain(why.Evidence(pending_jobset("explore-1", "research", 1, message), queues[0], queues, COHORT))
    assert found.text == (
        "Pending: waiting for quota. It needs 8 TPU chips; on multislice: other queues of cohort tpu-stack "
        "borrow its nominal quota: research-cluster-queue holds 0 of its nominal 8, and 20 of the cohort's 20 "
        "are in use (training-cluster-queue 20 with 12 borrowed); Kueue takes nominal quota back only from "
        "their workloads of lower priority than this one (reclaimWithinCohort: LowerPriority). It starts when "
        "those are preempted or the borrowers' workloads finish. You can submit it again with a higher "
        "--priority to reclaim from more of them."
    )


# ---- what would change it, only when it is enough ---------------------------------------------------------------


def test_a_higher_borrowing_limit_is_not_offered_when_the_cohort_is_too_small() -> None:
    """training asks for 32 chips: its limit allows 16, and even without a limit the cohort has only 24."""
    queues = [research(), training()]
    message = (
        "couldn't assign flavors to pod set slice: insufficient quota for google.com/tpu in flavor multislice, "
        "previously considered podsets requests (0) + current podset request (32) > maximum capacity (16)"
    )
    found = explain(why.Evidence(pending_jobset("train-4", "training", 4, message), queues[1], queues, COHORT))
    assert found.text == (
        "Pending, and it cannot be admitted as submitted. It needs 32 TPU chips; on multislice: can never hold "
        "it: training-cluster-queue can hold at most 16 (its nominal 8 plus its borrowing limit 8). You can "
        "submit at most 16 TPU chips (2 slices of multislice); a higher borrowing limit would not be enough, "
        "the cohort is too small."
    )


def test_a_request_larger_than_the_whole_cohort() -> None:
    """research has no borrowing limit: the cohort's 24 bound it."""
    queues = [research(), training()]
    message = (
        "couldn't assign flavors to pod set slice: insufficient quota for google.com/tpu in flavor multislice, "
        "previously considered podsets requests (0) + current podset request (32) > maximum capacity (24)"
    )
    found = explain(why.Evidence(pending_jobset("explore-4", "research", 4, message), queues[0], queues, COHORT))
    assert found.text == (
        "Pending, and it cannot be admitted as submitted. It needs 32 TPU chips; on multislice: can never hold "
        "it: research-cluster-queue can hold at most 24: cohort tpu-stack has no more for it. You can submit "
        "at most 24 TPU chips (3 slices of multislice)."
    )


def test_a_higher_borrowing_limit_is_not_offered_when_the_cohort_has_too_little_idle() -> None:
    """training holds 16 (8 borrowed, its limit) and asks for 16 more; the cohort has 8 idle. A limit of 24 would
    still leave it 8 short (min(24 - 16, 8 - 16 + 24) = 8)."""
    queues = [research(), training(("16", "8"))]
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 16 more needed"
    )
    found = explain(why.Evidence(pending_jobset("train-2", "training", 2, message), queues[1], queues, COHORT))
    assert found.text == (
        "Pending: waiting for quota. It needs 16 TPU chips; on multislice: held by its borrowing limit: "
        "training-cluster-queue holds 16, 8 beyond its nominal 8 and may borrow at most 8 from cohort "
        "tpu-stack (it borrows 8 now), so it can take only 0 more while the cohort has 8 idle. It starts when "
        "training-cluster-queue's own workloads free 16 more TPU chips (a higher "
        "tpu-stack:queues.teams[1].borrowingLimit.multislice alone would not be enough now, as the cohort has "
        "only 8 idle). Nothing needs changing."
    )


def test_an_unreadable_cohort_is_not_counted_as_empty() -> None:
    """The borrowing-limit case, read by an account that may read the ClusterQueues but not the Cohort: the
    cohort's own 8 chips are unknown, so Kueue's words and the queue's numbers, no cohort arithmetic."""
    queues = [research(), training(("8", "0"))]
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 8 more needed"
    )
    wl = pending_jobset("train-2", "training", 2, message)
    found = explain(why.Evidence(wl, queues[1], queues, None, unreadable=frozenset({"cohorts"})))
    assert found.text == (
        "Pending: waiting for quota. It needs 16 TPU chips; on multislice: Kueue counts 8 more TPU chips "
        "needed; training-cluster-queue holds 8 of its nominal 8 and may borrow at most 8 from cohort "
        "tpu-stack (it borrows 0 now). The Cohort could not be read (403), so these are Kueue's own numbers; "
        "Kueue's kueue-clusterqueue-viewer-role and kueue-cohort-viewer-role, bound cluster-wide, give `why` "
        "the queues' numbers. It starts when quota frees up. Nothing needs changing."
    )


# ---- queued provisioning: retried, and rejected (workload_controller.go, evict.go, provisioning/controller.go) ---


def test_a_failed_provisioning_attempt_is_retried_after_a_backoff() -> None:
    """Attempt 1 failed 15 s ago with 3 retries left: the check went to Retry with a 60 s backoff, Kueue evicted the
    workload, reset the check to Pending (retryCount 1), set requeueAt and deleted the request."""
    message = (
        'Evicted due to AdmissionCheck in Retry state: "burst-provisioning" (Retrying after failure: '
        "ProvisioningRequest is expired)"
    )
    since = k.ago(minutes=0.25)
    wl = queued_job(
        [
            k.condition("QuotaReserved", "False", "Pending", message, since),
            k.condition(
                "Admitted",
                "False",
                "NoReservationUnsatisfiedChecks",
                "The workload has no reservation and not all checks ready",
                since,
            ),
            k.condition("Evicted", "True", "AdmissionCheck", message, since),
            k.condition("Requeued", "False", "AdmissionCheck", message, since),
        ],
        [
            {
                "name": "burst-provisioning",
                "state": "Pending",
                "message": "Reset to Pending after eviction. Previously: Retry",
                "lastTransitionTime": since,
                "requeueAfterSeconds": 60,
                "retryCount": 1,
            }
        ],
        admitted=False,
        status={
            "requeueState": {"requeueAt": k.ago(minutes=-0.75)},
            "schedulingStats": {"evictions": [{"reason": "AdmissionCheck", "underlyingCause": "", "count": 1}]},
        },
    )
    found = explain(why.Evidence(wl), PROD)
    assert (found.state, kueue.state(wl, [])) == ("Retrying", "Retrying")
    assert found.text == (
        "Waiting to retry: queued provisioning attempt 1 of 4 failed (ProvisioningRequest is expired). Kueue released "
        "its quota and tries again in 45s (at 12:00:45 UTC) with attempt 2, a new ProvisioningRequest. Nothing needs "
        "changing (if attempt 4 fails too, Kueue deactivates the workload); delete the workload to give up its place."
    )


def test_an_expired_booking_is_retried_and_the_backoff_is_over() -> None:
    """Attempt 2 was provisioned, and the booking expired before the workload was admitted; the backoff ended and
    Kueue requeued it (Requeued BackoffFinished, requeueAt cleared); the scheduler has not looked again yet."""
    message = (
        'Evicted due to AdmissionCheck in Retry state: "burst-provisioning" (Retrying after booking expired: '
        "Capacity reservation time is expired)"
    )
    since = k.ago(minutes=3)
    wl = queued_job(
        [
            k.condition("QuotaReserved", "False", "Pending", message, since),
            k.condition(
                "Admitted",
                "False",
                "NoReservationUnsatisfiedChecks",
                "The workload has no reservation and not all checks ready",
                since,
            ),
            k.condition("Evicted", "True", "AdmissionCheck", message, since),
            k.condition("Requeued", "True", "BackoffFinished", "The workload backoff was finished", k.ago(minutes=1)),
        ],
        [
            {
                "name": "burst-provisioning",
                "state": "Pending",
                "message": "Reset to Pending after eviction. Previously: Retry",
                "lastTransitionTime": since,
                "requeueAfterSeconds": 120,
                "retryCount": 2,
            }
        ],
        admitted=False,
        status={
            "requeueState": {},
            "schedulingStats": {"evictions": [{"reason": "AdmissionCheck", "underlyingCause": "", "count": 2}]},
        },
    )
    found = explain(why.Evidence(wl), PROD)
    assert found.text == (
        "Retrying: GKE provided 8 TPU chips for queued provisioning attempt 2 of 4, but the booking expired before the "
        "workload was admitted onto them (Capacity reservation time is expired). Its backoff is over and it is queued "
        "for attempt 3. Nothing needs changing (if attempt 4 fails too, Kueue deactivates the workload)."
    )


def deactivated_job(
    said: str, retried: int, status: k.Obj | None = None, annotations: dict[str, str] | None = None
) -> k.Obj:
    """The queued Job after its check was Rejected, as Kueue leaves it: deactivated and evicted, quota released,
    the check reset (without retryCount, evict.go resetChecksOnEviction), its ProvisioningRequests deleted; each
    earlier retry counted in schedulingStats. `said`: the ProvisioningRequest condition's message."""
    message = f'The workload is deactivated due to AdmissionCheck in Rejected state: "burst-provisioning" ({said})'
    since = k.ago(minutes=10)
    evictions = [{"reason": "Deactivated", "underlyingCause": "AdmissionCheck", "count": 1}]
    if retried:
        evictions.insert(0, {"reason": "AdmissionCheck", "underlyingCause": "", "count": retried})
    status = {"schedulingStats": {"evictions": evictions}, **(status or {})}
    return queued_job(
        [
            k.condition("QuotaReserved", "False", "Pending", message, since),
            k.condition(
                "Admitted",
                "False",
                "NoReservationUnsatisfiedChecks",
                "The workload has no reservation and not all checks ready",
                since,
            ),
            k.condition("Evicted", "True", "DeactivatedDueToAdmissionCheck", message, since),
            k.condition("Requeued", "False", "DeactivatedDueToAdmissionCheck", message, since),
        ],
        [
            {
                "name": "burst-provisioning",
                "state": "Pending",
                "message": "Reset to Pending after eviction. Previously: Rejected",
                "lastTransitionTime": since,
            }
        ],
        active=False,
        admitted=False,
        status=status,
        annotations=annotations,
    )


def test_deactivated_after_the_last_attempt_failed_its_request_gone() -> None:
    """Attempt 4 failed after 3 retries; the request is deleted, the provisioning controller's event says the check
    went from Pending to Rejected: the capacity was never provided."""
    wl = deactivated_job("ProvisioningRequest is expired", 3)
    event = k.kueue_event(
        wl,
        "AdmissionCheckUpdated",
        "Admission check burst-provisioning updated state from Pending to Rejected with message: ProvisioningRequest "
        "is expired",
        k.ago(minutes=10),
        "kueue-provisioning-request-controller",
    )
    found = explain(why.Evidence(wl, events=[event]), PROD)
    assert (found.state, kueue.state(wl, [])) == ("Deactivated", "Deactivated")
    assert found.text == (
        "Stopped: queued provisioning attempt 4 of 4 failed, and Kueue deactivated the workload: GKE did not "
        "provide 8 TPU chips of flavor burst (ProvisioningRequest is expired). You can delete it (tpu-stack "
        "delete burst-queued) and submit it again to queue a new request, or submit to a pool group with "
        "capacity now."
    )


def test_deactivated_after_the_last_booking_expired_its_request_gone() -> None:
    """Attempt 4 was provisioned and its booking expired before admission; no event is left, the request is
    deleted. Only the check's message is left, the BookingExpired condition's text, which GKE's own controller
    writes for queued-provisioning.gke.io (the open-source autoscaler skips that class, provreq/processor.go
    SupportedProvisioningClass): it is quoted as it came, not read as proof of an expired booking."""
    wl = deactivated_job("Capacity reservation time is expired", 3)
    found = explain(why.Evidence(wl), PROD)
    assert found.text == (
        "Stopped: Kueue deactivated the workload after its queued provisioning request was rejected (attempt 4 "
        "of 4): Capacity reservation time is expired. You can delete it (tpu-stack delete burst-queued) and submit "
        "it again to queue a new request."
    )


def test_deactivated_after_its_capacity_was_revoked_its_request_gone() -> None:
    """The workload ran for 6 hours, its run limit; GKE revoked the capacity (the condition's text here is
    illustrative: the sentence does not depend on it), Kueue rejected the check and deactivated the workload. The
    6 hours it was admitted are in accumulatedPastExecutionTimeSeconds."""
    wl = deactivated_job(
        "Capacity is revoked",
        0,
        status={"accumulatedPastExecutionTimeSeconds": 21600},
        annotations={"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "21600"},
    )
    found = explain(why.Evidence(wl), PROD)
    assert found.text == (
        "Stopped: it ran for 6h, then GKE took back the capacity of its queued provisioning request (Capacity "
        "is revoked), and Kueue deactivated the workload. The request's run limit (maxRunDurationSeconds) is "
        "6h. You can delete it (tpu-stack delete burst-queued) and submit it again to queue a new request; "
        "checkpoint to /checkpoints so the next run resumes."
    )


def test_deactivated_by_a_rejected_check_when_nothing_left_tells_why() -> None:
    """No request, no event, never admitted, a message that is not BookingExpired's: no guess."""
    found = explain(why.Evidence(deactivated_job("ProvisioningRequest is expired", 3)), PROD)
    assert found.text == (
        "Stopped: Kueue deactivated the workload after its queued provisioning request was rejected (attempt 4 "
        "of 4): ProvisioningRequest is expired. You can delete it (tpu-stack delete burst-queued) and submit "
        "it again to queue a new request."
    )


def test_a_check_whose_request_is_not_created_yet() -> None:
    """Quota just reserved: the check is Pending with no message until the request exists (controller.go
    syncCheckStates), and with the account unable to list ProvisioningRequests."""
    since = k.ago(minutes=0.5)
    wl = queued_job(
        [
            k.condition(
                "QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue research-cluster-queue", since
            ),
            k.condition("Admitted", "False", "UnsatisfiedChecks", "The workload has not all checks ready", since),
        ],
        [{"name": "burst-provisioning", "state": "Pending", "message": "", "lastTransitionTime": since}],
    )
    assert explain(why.Evidence(wl), PROD).text == (
        "Waiting for capacity: quota is reserved in research-cluster-queue (8 TPU chips of flavor burst), and "
        "admission check burst-provisioning is Pending: Kueue is creating its ProvisioningRequest (attempt 1 of 4). "
        "GKE creates the 2 nodes of the slice when it grants the request, and the pods start then; nothing needs "
        "changing (delete the workload to give up its place)."
    )
    hidden = why.Evidence(wl, unreadable=frozenset({"provisioningrequests"}))
    assert explain(hidden, PROD).reason == (
        "Waiting for capacity: quota is reserved in research-cluster-queue (8 TPU chips of flavor burst), and "
        "admission check burst-provisioning is Pending, and its ProvisioningRequest could not be read (403)."
    )


# ---- eviction before admission (evict.go prepareForEviction; jobframework/reconciler.go) ------------------------


RECLAIMED = (
    "Preempted to accommodate a workload (UID: 0f6c1d2e-5b7a-4c0e-9d41-2f3a4b5c6d7e, JobUID: "
    "9a8b7c6d-1e2f-4a3b-8c9d-0e1f2a3b4c5d) due to reclamation within the cohort; preemptor path: "
    "/tpu-stack/training-cluster-queue; preemptee path: /tpu-stack/research-cluster-queue"
)


def test_a_workload_being_preempted_whose_pods_still_run() -> None:
    """Evicted and Preempted are set; QuotaReserved and Admitted stay True until the JobSet is suspended and its
    pods have stopped."""
    wl = k.workload(
        "JobSet",
        "explore-2",
        "research",
        "research-queue",
        pods=4,
        chips_per_pod=4,
        labels=k.MULTISLICE_LABELS,
        conditions=[
            *k.admitted_conditions("research-cluster-queue", k.ago(hours=1)),
            k.condition("Evicted", "True", "Preempted", RECLAIMED, k.ago(minutes=1)),
            k.condition("Preempted", "True", "InCohortReclamation", RECLAIMED, k.ago(minutes=1)),
        ],
        admission=k.admission("research-cluster-queue", "slice", "multislice", 4, 16),
    )
    pods = [
        k.pod(
            f"explore-2-slice-{s}-{w}-abcde", "research", {"jobset.sigs.k8s.io/jobset-name": "explore-2"}, running=True
        )
        for s in (0, 1)
        for w in (0, 1)
    ]
    queues = [research(("16", "8")), training(("8", "0"))]
    found = explain(why.Evidence(wl, queues[0], queues, COHORT, pods=pods))
    assert (found.state, kueue.state(wl, pods)) == ("Preempted", "Preempted")
    assert found.text == (
        "Preempted 1m ago to give back quota it had borrowed in the cohort, for a workload of training-cluster-queue; "
        "its pods are stopping, then it is queued again and will restart from the beginning. Work within "
        "research-cluster-queue's nominal 8 TPU chips of multislice is not reclaimed by other queues; work beyond it "
        "borrows, and the lenders may take it back. Checkpoint to /checkpoints so a restart resumes."
    )


def test_preempted_by_a_higher_priority_workload_of_its_own_queue() -> None:
    """Nominal quota does not protect against priority within the ClusterQueue (withinClusterQueue)."""
    message = (
        "Preempted to accommodate a workload (UID: 1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d, JobUID: "
        "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e) due to prioritization in the ClusterQueue; preemptor path: "
        "/tpu-stack/research-cluster-queue; preemptee path: /tpu-stack/research-cluster-queue"
    )
    since = k.ago(minutes=5)
    wl = k.workload(
        "JobSet",
        "explore-1",
        "research",
        "research-queue",
        pods=2,
        chips_per_pod=4,
        labels=k.MULTISLICE_LABELS,
        conditions=[
            k.condition("QuotaReserved", "False", "Pending", message, since),
            k.condition("Admitted", "False", "NoReservation", "The workload has no reservation", since),
            k.condition("Evicted", "True", "Preempted", message, since),
            k.condition("Preempted", "True", "InClusterQueue", message, since),
            k.condition("Requeued", "True", "Preempted", message, since),
        ],
    )
    event = k.kueue_event(
        wl,
        "Preempted",
        message + "; preemptor effective priority: 200 (base: 200, boost: 0); preemptee effective priority: 100 "
        "(base: 100, boost: 0)",
        since,
    )
    queues = [research(("8", "0")), training()]
    found = explain(why.Evidence(wl, queues[0], queues, COHORT, events=[event]))
    assert found.text == (
        "Preempted 5m ago to make room for a workload of higher priority in the same ClusterQueue, for a "
        "workload of research-cluster-queue (priority 200 against its 100); it is queued again and will "
        "restart from the beginning. In research-cluster-queue priority decides, whatever the quota: you can "
        "submit it again with a higher --priority, or wait for the higher-priority work to finish. Checkpoint "
        "to /checkpoints so a restart resumes."
    )


def test_an_eviction_is_told_once() -> None:
    """Evicted for another reason (here PodsReadyTimeout, workload_controller.go): the job reconciler copied the
    eviction message into QuotaReserved, and the backoff ends in a minute."""
    message = "Exceeded the PodsReady timeout research/job-flex-v6e-job-3f2a1"
    since = k.ago(minutes=2)
    wl = k.workload(
        "Job",
        "flex-v6e-job",
        "research",
        "research-queue",
        pods=1,
        chips_per_pod=4,
        labels=k.FLEX_V6E_LABELS,
        conditions=[
            k.condition("QuotaReserved", "False", "Pending", message, since),
            k.condition("Admitted", "False", "NoReservation", "The workload has no reservation", since),
            k.condition("Evicted", "True", "PodsReadyTimeout", message, since),
            k.condition("Requeued", "False", "PodsReadyTimeout", message, since),
        ],
        status={"requeueState": {"count": 1, "requeueAt": k.ago(minutes=-1)}},
    )
    found = explain(why.Evidence(wl))
    assert (found.state, kueue.state(wl, [])) == ("Evicted", "Evicted")
    assert found.text == (
        "Evicted 2m ago: its pods were not all ready within the PodsReady timeout (30m), once now. Kueue "
        "released its quota and queues it again in 1m (at 12:01:00 UTC); each timeout doubles the wait. "
        "Nothing needs changing if its nodes were slow to come; if its pods cannot start, delete it and fix "
        "that."
    )


def test_starting_names_the_workload_to_follow() -> None:
    """Admitted; one of four pods runs, the others are being created."""
    wl = k.workload(
        "JobSet",
        "train-2",
        "training",
        "training-queue",
        pods=4,
        chips_per_pod=4,
        labels=k.MULTISLICE_LABELS,
        conditions=k.admitted_conditions("training-cluster-queue", k.ago(minutes=1)),
        admission=k.admission("training-cluster-queue", "slice", "multislice", 4, 16),
    )
    pods = [k.pod("train-2-slice-0-0-abcde", "training", {"jobset.sigs.k8s.io/jobset-name": "train-2"}, running=True)]
    assert explain(why.Evidence(wl, pods=pods)).text == (
        "Starting: admitted 1m ago by training-cluster-queue on flavor multislice (16 TPU chips); 1 of 4 pods are "
        "running. The rest are being created; `tpu-stack logs train-2` shows the leader's output."
    )


# ---- reasons `why` does not read, container states, stopped queues, big cohorts ------------------------------------


def test_a_reason_it_does_not_read_is_quoted_and_the_message_never_called_out_of_date() -> None:
    """A hand-written Job asks for a GPU as well as TPU chips: Kueue finds no resource group for it
    (flavorassigner.go findFlavorForPodSets: "resource %s unavailable in ClusterQueue"). The queue has room for the
    chips, but that does not make Kueue's message out of date: the reason is quoted, nobody is told that nothing needs
    changing."""
    message = "couldn't assign flavors to pod set main: resource nvidia.com/gpu unavailable in ClusterQueue"
    wl = k.workload(
        "Job", "probe-gpu", "research", "research-queue", pods=2, chips_per_pod=4, labels=k.MULTISLICE_LABELS,
        conditions=k.pending_conditions(message, k.ago(minutes=3)), recorded=True,
    )  # fmt: skip
    queues = [research(), training()]
    found = explain(why.Evidence(wl, queues[0], queues, COHORT))
    assert (found.state, found.outcome, found.who) == ("Pending", why.WAITS, (why.PLATFORM,))
    assert found.text == (
        'Pending: Kueue says "resource nvidia.com/gpu unavailable in ClusterQueue", a reason `why` does not read. '
        "It needs 8 TPU chips; by the queue's numbers, on multislice: has room for it now: research-cluster-queue "
        "can take 24 more (research-cluster-queue holds 0 of its nominal 8). `why` cannot tell who can change that "
        "reason: the platform team can look it up in Kueue's code and its controller's log."
    )


def _admitted_probe(pods: int = 1) -> k.Obj:
    return k.workload(
        "Job", "probe", "research", "research-queue", pods=pods, chips_per_pod=4, labels=k.FLEX_V6E_LABELS,
        conditions=[
            *k.admitted_conditions("research-cluster-queue", k.ago(minutes=5)),
            k.condition("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", k.ago(minutes=5)),
        ],
        admission=k.admission("research-cluster-queue", "main", "flex-v6e", pods, 4 * pods),
    )  # fmt: skip


def _admitted_train(minutes: int) -> k.Obj:
    """The one-pod train-1 Job of team training, admitted on multislice `minutes` ago, its pod not ready yet."""
    return k.workload(
        "Job", "train-1", "training", "training-queue", pods=1, chips_per_pod=8, labels=k.MULTISLICE_LABELS,
        conditions=[
            *k.admitted_conditions("training-cluster-queue", k.ago(minutes=minutes)),
            k.condition("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", k.ago(minutes)),
        ],
        admission=k.admission("training-cluster-queue", "main", "multislice", 1, 8),
    )  # fmt: skip


def _waiting_pod(
    name: str,
    reason: str,
    message: str,
    *,
    namespace: str = "research",
    job: str = "probe",
    image: str = "us-docker.pkg.dev/my-project/train/jax:0.6.2",
    **status: object,
) -> k.Obj:
    """A pod on its node whose container waits, with the kubelet's reason in containerStatuses[].state.waiting (its
    image manager's, kubernetes pkg/kubelet/images/types.go; the runtime's, kuberuntime_container.go and
    pkg/kubelet/container/sync_result.go)."""
    pod = k.pod(name, namespace, {"batch.kubernetes.io/job-name": job}, running=False)
    pod["spec"]["containers"][0]["image"] = image
    pod["status"]["containerStatuses"] = [
        {
            "name": "jax-tpu",
            "image": image,
            "ready": False,
            "started": False,
            "restartCount": 0,
            "state": {"waiting": {"reason": reason, "message": message}},
            "lastState": {},
            **status,
        }
    ]
    return pod


def test_a_container_that_cannot_be_created_names_what_it_misses() -> None:
    """The pod is on its node, but the kubelet cannot build the container's config: the Secret its env names does not
    exist (kuberuntime_container.go ErrCreateContainerConfig "CreateContainerConfigError"). The kubelet retries, so
    creating the Secret is enough; there is no log to read."""
    pod = _waiting_pod("probe-0-x7k2p", "CreateContainerConfigError", 'secret "hf-token" not found')
    found = explain(why.Evidence(_admitted_probe(), pods=[pod]))
    assert (found.state, found.outcome, found.who) == ("Starting", why.WAITS, (why.USER,))
    assert found.reason.startswith(
        "Starting: admitted 5m ago by research-cluster-queue on flavor flex-v6e (4 TPU chips); 0 of 1 pods are "
        "running, and 1 cannot start: container jax-tpu of pod probe-0-x7k2p cannot be created "
        '(CreateContainerConfigError: secret "hf-token" not found).'
    )
    assert found.change == (
        "You can create or fix what it names (a Secret or ConfigMap it refers to is picked up when the kubelet "
        "retries), or delete it (tpu-stack delete probe) and submit it again with that fixed; until then it holds its "
        "quota."
    )
    assert "tpu-stack logs" not in found.text


def test_a_crash_loop_that_ran_out_of_memory_points_to_the_last_runs_log() -> None:
    """The second pod of a 2-pod Job (completion index 1) restarts after the kernel killed it for memory
    (lastState.terminated reason OOMKilled, exit code 137); `tpu-stack logs` reads the last run of a waiting
    container (kubelet_pods.go validateContainerLogStatus), for that worker."""
    first = k.pod("probe-0-a1b2c", "research", {"batch.kubernetes.io/job-name": "probe"}, running=True)
    second = _waiting_pod(
        "probe-1-d3e4f",
        "CrashLoopBackOff",
        "back-off 40s restarting failed container=jax-tpu pod=probe-1-d3e4f_research(uid-probe-1-d3e4f)",
        restartCount=2,
        lastState={"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": k.ago(minutes=1)}},
    )
    second["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] = "1"
    second["status"]["phase"] = "Running"
    found = explain(why.Evidence(_admitted_probe(pods=2), pods=[first, second]))
    assert (found.state, found.outcome, found.who) == ("Starting", why.WAITS, (why.USER,))
    assert (
        "1 of 2 pods are running, and 1 cannot start: container jax-tpu of pod probe-1-d3e4f keeps failing: its last "
        "run ended with exit code 137 (OOMKilled: it ran out of memory), it has restarted 2 times, and the kubelet "
        "waits before the next start (CrashLoopBackOff)."
    ) in found.reason
    assert found.change == (
        "`tpu-stack logs probe --worker 1` shows its last run's output; you can fix it, then delete it (tpu-stack "
        "delete probe) and submit it again."
    )


def _stopped_probe(reason: str, quota_reserved: bool, requeued: tuple[str, str] | None) -> k.Obj:
    """The admitted probe Job after Kueue evicted it for a HoldAndDrain queue (workload_controller.go
    reconcileOnLocalQueueActiveState / reconcileOnClusterQueueActiveState); with `quota_reserved` its pods are
    still stopping, else the job reconciler released the quota (reconciler.go: Requeued False) and the workload
    controller wrote the queue blocker."""
    said = "The LocalQueue is stopped" if reason == "LocalQueueStopped" else "The ClusterQueue is stopped"
    since = k.ago(minutes=4)
    if quota_reserved:
        conditions = k.admitted_conditions("research-cluster-queue", k.ago(hours=1))
    else:
        blocker = (
            "LocalQueue research-queue is inactive"
            if reason == "LocalQueueStopped"
            else "ClusterQueue research-cluster-queue is inactive"
        )
        conditions = [
            k.condition("QuotaReserved", "False", "Inadmissible", blocker, since),
            k.condition("Admitted", "False", "NoReservation", "The workload has no reservation", since),
        ]
    conditions.append(k.condition("Evicted", "True", reason, said, since))
    if requeued is not None:
        conditions.append(k.condition("Requeued", requeued[0], requeued[1], said, since))
    return k.workload(
        "Job", "probe", "research", "research-queue", pods=2, chips_per_pod=4, labels=k.MULTISLICE_LABELS,
        conditions=conditions,
        admission=k.admission("research-cluster-queue", "main", "multislice", 2, 8) if quota_reserved else None,
    )  # fmt: skip


def _local_queue(policy: str) -> k.Obj:
    active = ("False", "Stopped", "LocalQueue is stopped") if policy != "None" else ("True", "Ready", "Can submit")
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "research-queue", "namespace": "research"},
        "spec": {"clusterQueue": "research-cluster-queue", "stopPolicy": policy},
        "status": {"conditions": [k.condition("Active", *active, k.ago(minutes=4))]},
    }


def test_evicted_by_a_stopped_local_queue_whose_pods_are_stopping() -> None:
    wl = _stopped_probe("LocalQueueStopped", quota_reserved=True, requeued=None)
    found = explain(why.Evidence(wl, local_queue=_local_queue("HoldAndDrain")))
    assert (found.state, found.outcome, found.who) == ("Evicted", why.WAITS, (why.PLATFORM,))
    assert found.text == (
        "Evicted 4m ago: LocalQueue research-queue was stopped with spec.stopPolicy HoldAndDrain, which evicts the "
        "workloads it admitted. Its pods are stopping; Kueue queues it again only once the queue's stopPolicy is "
        "None again, and it then starts from the beginning. The platform team restarts it with `kubectl patch "
        'localqueue research-queue -n research --type merge -p \'{"spec":{"stopPolicy":"None"}}\'`.'
    )


def test_evicted_by_a_stopped_cluster_queue_waits_for_it_without_a_second_sentence() -> None:
    """Quota released, Requeued False with ClusterQueueStopped: the queue blocker Kueue then writes is the same
    stop, not news."""
    cq = research()
    cq["spec"]["stopPolicy"] = "HoldAndDrain"
    wl = _stopped_probe("ClusterQueueStopped", quota_reserved=False, requeued=("False", "ClusterQueueStopped"))
    found = explain(why.Evidence(wl, cq, [cq, training()], COHORT))
    assert (found.state, found.outcome, found.who) == ("Evicted", why.WAITS, (why.PLATFORM,))
    assert found.text == (
        "Evicted 4m ago: ClusterQueue research-cluster-queue was stopped with spec.stopPolicy HoldAndDrain, which "
        "evicts the workloads it admitted. Kueue released its quota and queues it again only once the queue's "
        "stopPolicy is None again, and it then starts from the beginning. The platform team restarts it with "
        '`kubectl patch clusterqueue research-cluster-queue --type merge -p \'{"spec":{"stopPolicy":"None"}}\'`.'
    )


def _pending_probe(blocker: str) -> k.Obj:
    """The probe Job waiting for a queue that admits nothing: QuotaReserved False with the queue's blocker."""
    conditions = [k.condition("QuotaReserved", "False", "Inadmissible", blocker, k.ago(minutes=4))]
    return k.workload(
        "Job", "probe", "research", "research-queue", pods=2, chips_per_pod=4, labels=k.MULTISLICE_LABELS,
        conditions=conditions,
    )  # fmt: skip


def test_pending_on_a_stopped_cluster_queue_says_how_to_restart_it() -> None:
    cq = research()
    cq["spec"]["stopPolicy"] = "Hold"
    cq["status"]["conditions"] = [
        k.condition("Active", "False", "Stopped", "Can't admit new workloads; clusterQueue is stopped", k.ago(hours=1))
    ]
    wl = _pending_probe("ClusterQueue research-cluster-queue is inactive")
    found = explain(why.Evidence(wl, cq, [cq, training()], COHORT))
    assert (found.state, found.who) == ("Pending", (why.PLATFORM,))
    assert "(spec.stopPolicy Hold: someone stopped it)." in found.reason
    assert found.change == (
        "The platform team restarts it with `kubectl patch clusterqueue research-cluster-queue --type merge -p "
        '\'{"spec":{"stopPolicy":"None"}}\'`; its workloads wait until then.'
    )


def test_pending_on_a_stopped_local_queue_says_how_to_restart_it() -> None:
    wl = _pending_probe("LocalQueue research-queue is inactive")
    found = explain(why.Evidence(wl, local_queue=_local_queue("Hold")))
    assert (found.state, found.who) == ("Pending", (why.PLATFORM,))
    assert found.reason.startswith(
        "Pending: LocalQueue research-queue takes no workloads: LocalQueue is stopped (spec.stopPolicy Hold)."
    )
    assert found.change == (
        "The platform team restarts it with `kubectl patch localqueue research-queue -n research --type merge -p "
        '\'{"spec":{"stopPolicy":"None"}}\'`.'
    )


def test_evicted_by_a_cluster_queue_that_was_restarted_since() -> None:
    """The queue runs again (stopPolicy None, Requeued True ClusterQueueRestarted, workload_controller.go:763); the
    scheduler has not looked at the workload yet, so QuotaReserved still carries the old blocker."""
    wl = _stopped_probe("ClusterQueueStopped", quota_reserved=False, requeued=("True", "ClusterQueueRestarted"))
    queues = [research(), training()]
    found = explain(why.Evidence(wl, queues[0], queues, COHORT))
    assert (found.state, found.outcome, found.who) == ("Evicted", why.WAITS, ())
    assert found.text == (
        "Evicted 4m ago: ClusterQueue research-cluster-queue was stopped with spec.stopPolicy HoldAndDrain, which "
        "evicts the workloads it admitted. The queue runs again and Kueue has queued it again; it starts from the "
        "beginning once the scheduler admits it."
    )


def test_a_cohort_of_fifty_queues_names_the_largest_holders_only() -> None:
    """50 teams in cohort tpu-stack, 8 nominal chips of multislice each, all in use: the sentence names five queues
    and sums up the rest, so it stays readable (about 2,000 characters otherwise)."""
    queues = [
        k.cluster_queue(
            f"team-{i:02d}-cluster-queue", f"team-{i:02d}", cohort="tpu-stack", quotas={"multislice": ("8", None)},
            reserved={"multislice": ("8", "0")},
        )
        for i in range(50)
    ]  # fmt: skip
    queues[7]["status"]["flavorsReservation"][0]["resources"][0].update(total="16", borrowed="8")
    queues[3]["status"]["flavorsReservation"][0]["resources"][0].update(total="0", borrowed="0")
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 16 more needed"
    )
    wl = pending_jobset("train-2", "team-00", 2, message)
    found = explain(why.Evidence(wl, queues[0], queues))
    assert found.text == (
        "Pending: waiting for quota. It needs 16 TPU chips; on multislice: team-00-cluster-queue holds 8 of its "
        "nominal 8, and 400 of the cohort's 400 are in use (team-07-cluster-queue 16 with 8 borrowed, "
        "team-00-cluster-queue 8, team-01-cluster-queue 8, team-02-cluster-queue 8, team-04-cluster-queue 8 and 44 "
        "more queues holding 352), so it can take 0 and 16 more TPU chips must be free. It starts when 16 more TPU "
        "chips of multislice are free in cohort tpu-stack. Nothing needs changing."
    )


def test_a_strictfifo_head_no_flavor_can_place_blocks_the_queue_for_good() -> None:
    """StrictFIFO training queue; its head asks for a placement by topology the dev flavors do not give, so Kueue
    refuses every flavor (tas_flavorassigner.go) and the head is never admitted: nothing behind it is tried until
    someone deletes it."""
    refused = ", ".join(
        f'Flavor "{flavor}" does not support TopologyAwareScheduling'
        for flavor in ("flex-v6e", "multislice", "multislice-spot")
    )
    head = pending_jobset("explore-tas", "training", 1, f"couldn't assign flavors to pod set slice: {refused}")
    head["metadata"]["creationTimestamp"] = k.ago(minutes=40)
    mine = k.workload(
        "Job", "train-1", "training", "training-queue", pods=2, chips_per_pod=4, labels=k.MULTISLICE_LABELS,
        conditions=[], suffix="8a2f4", created=k.ago(minutes=10),
    )  # fmt: skip
    cq = training()
    cq["spec"]["queueingStrategy"] = "StrictFIFO"
    found = explain(why.Evidence(mine, cq, [research(), cq], COHORT, queue_workloads=[head, mine]))
    assert found.who == (why.TEAM, why.PLATFORM)
    assert (
        "Under StrictFIFO training-cluster-queue tries only the workload at its head, explore-tas (priority 100, 8 TPU "
        "chips, submitted 40m ago), and it can never be admitted as submitted (its pods ask for a placement by "
        "topology that no flavor of the queue gives)"
    ) in found.reason
    assert found.change.startswith("Your team can delete or resize explore-tas")


IMAGE = "us-docker.pkg.dev/my-project/train/jax:0.6.3"
DEV_SETTINGS = replace(DEV, pods_ready=why.PodsReadySettings(7200, 7200, 60, 3600, 3))
"""dev as deployed: two hours to start and to recover (its flex-start), three requeues (components/config/
controllers.py)."""


def test_an_admitted_workload_whose_image_never_pulls() -> None:
    """Admitted 25 minutes ago on multislice; its pod is on a node, its container waits with ImagePullBackOff. The
    kubelet retries, but an image that does not exist never pulls: Kueue evicts the workload at the PodsReady
    timeout (two hours in dev, 1h35m left), and deactivates it after three requeues. The user fixes the image."""
    message = 'Back-off pulling image "us-docker.pkg.dev/my-project/train/jax:0.6.3"'
    wl = _admitted_train(minutes=25)
    pod = _waiting_pod("train-1-0-abcde", "ImagePullBackOff", message, namespace="training", job="train-1", image=IMAGE)
    found = explain(why.Evidence(wl, pods=[pod]), DEV_SETTINGS)
    assert (found.state, found.outcome, found.who) == ("Starting", why.WAITS, (why.USER,))
    assert found.reason == (
        "Starting: admitted 25m ago by training-cluster-queue on flavor multislice (8 TPU chips); 0 of 1 pods are "
        "running, and 1 cannot start: container jax-tpu of pod train-1-0-abcde cannot pull its image "
        "us-docker.pkg.dev/my-project/train/jax:0.6.3 (ImagePullBackOff: Back-off pulling image "
        '"us-docker.pkg.dev/my-project/train/jax:0.6.3"). Unless its pod is ready within the PodsReady timeout (2h '
        "after admission), Kueue evicts it in 1h35m and queues it again after 1m (3 requeues left before Kueue "
        "deactivates it)."
    )
    assert found.change == (
        "You can check its name and tag and that the cluster's nodes may pull it, then delete it (tpu-stack delete "
        "train-1) and submit it again (or push that image: the kubelet keeps trying); until then it holds its quota."
    )


def test_an_admitted_workload_whose_container_cannot_be_created() -> None:
    """The container's configuration names a Secret that does not exist: CreateContainerConfigError. The kubelet
    retries, so creating the Secret mends it; so does fixing the reference and submitting again. The user's."""
    message = 'secret "wandb" not found'
    wl = _admitted_train(minutes=5)
    pod = _waiting_pod("train-1-0-abcde", "CreateContainerConfigError", message, namespace="training", job="train-1")
    found = explain(why.Evidence(wl, pods=[pod]), DEV_SETTINGS)
    assert (
        "1 cannot start: container jax-tpu of pod train-1-0-abcde cannot be created (CreateContainerConfigError: "
        'secret "wandb" not found)'
    ) in found.reason
    assert found.change == (
        "You can create or fix what it names (a Secret or ConfigMap it refers to is picked up when the kubelet "
        "retries), or delete it (tpu-stack delete train-1) and submit it again with that fixed; until then it holds "
        "its quota."
    )
    assert found.who == (why.USER,)


def test_a_reason_it_does_not_read_names_no_rung_the_queue_does_not_have() -> None:
    """An elastic workload's slice may keep only its original flavor (flavorassigner.go: "could not assign %s flavor
    since the original workload is assigned: %s"): the word after "flavor" there is no flavor, and no rung is made of
    it; the reason is quoted whole."""
    said = "could not assign multislice-spot flavor since the original workload is assigned: multislice"
    message = f"couldn't assign flavors to pod set main: {said}"
    wl = k.workload(
        "Job", "probe", "research", "research-queue", pods=2, chips_per_pod=4, labels=k.MULTISLICE_LABELS,
        conditions=k.pending_conditions(message, k.ago(minutes=3)), recorded=True,
    )  # fmt: skip
    queues = [research(), training()]
    found = explain(why.Evidence(wl, queues[0], queues, COHORT))
    assert found.reason == (
        f'Pending: Kueue says "{said}", a reason `why` does not read. It needs 8 TPU chips; by the queue\'s numbers, '
        "on multislice: has room for it now: research-cluster-queue can take 24 more (research-cluster-queue holds 0 "
        "of its nominal 8)."
    )
