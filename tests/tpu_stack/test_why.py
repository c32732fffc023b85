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

from tests.tpu_stack import kueue_objects as k
from tpu_stack import why

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


def training(multislice: tuple[str, str] = ("0", "0")) -> k.Obj:
    return k.cluster_queue(
        "training-cluster-queue",
        "training",
        cohort="tpu-stack",
        quotas={"flex-v6e": ("0", "0"), "multislice": ("8", "8")},
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
        "Pending: waiting for quota. It needs 16 TPU chips of flavor multislice; cluster-queue holds 16 of its "
        "nominal 24, so another 8 TPU chips must be free. It starts when workloads in cluster-queue finish or are "
        "deleted; the queue is in no cohort and cannot borrow."
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
        "Pending: held by its borrowing limit. It needs 16 TPU chips of flavor multislice; training-cluster-queue "
        "holds 8 of its nominal 8 and may borrow at most 8 from cohort tpu-stack (it borrows 0 now), so it can take "
        "only 8 more while the cohort has 16 idle. It starts when training-cluster-queue's own workloads free 8 TPU "
        "chips, or when the platform team raises tpu-stack:queues.teams[1].borrowingLimit.multislice to 16 or more."
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
        "Pending, and it cannot be admitted as submitted: it needs 24 TPU chips of flavor multislice, but "
        "training-cluster-queue can hold at most 16 (its nominal 8 plus its borrowing limit 8). Submit at most 16 "
        "TPU chips (2 slices of multislice), or ask the platform team to raise "
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
        "Pending: cohort tpu-stack lends nothing now. It needs 16 TPU chips of flavor multislice; "
        "research-cluster-queue holds 8 of its nominal 8, and 24 of the cohort's 24 are in use "
        "(research-cluster-queue 8, training-cluster-queue 16 with 8 borrowed). It starts when another 16 TPU chips "
        "of multislice are free in cohort tpu-stack, as other workloads there finish or are deleted."
    )


def queued_job(conditions: list[k.Obj], checks: list[k.Obj], *, active: bool = True, admitted: bool = True) -> k.Obj:
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


def test_queued_provisioning_failed_and_the_workload_was_deactivated() -> None:
    """The fourth request failed (Expired) past the check's 3 retries: Rejected, then deactivated."""
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
        "Stopped: queued provisioning failed, and Kueue deactivated the workload. ProvisioningRequest "
        "job-burst-queued-7b9c2-burst-provisioning-4 failed: ProvisioningRequest is expired (Expired); GKE did not "
        "provide 8 TPU chips of flavor burst. Delete it (tpu-stack delete burst-queued) and submit it again to queue "
        "a new request, or submit to a pool group with capacity now."
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
        "Admitted but not running: admitted 20m ago by research-cluster-queue on flavor flex-v6e (4 TPU chips), and 1 "
        "of 1 pods cannot be scheduled: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling. The cluster autoscaler did "
        "not add nodes: pod didn't trigger scale-up: 1 in backoff after failed scale-up (an earlier scale-up of the "
        "pool failed, often for lack of TPU capacity in the zone; it retries after a backoff). They start when node "
        "pool flex-v6e can add nodes for them (the pool's size limits, the zone's TPU capacity and the project's quota "
        "decide); delete the workload to free its quota meanwhile."
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
    """A LocalQueue that does not exist: Kueue's own words (workload_controller.go), not a guess."""
    wl = pending_jobset("lost", "research", 1, "LocalQueue research-queue is terminating or missing")
    assert explain(why.Evidence(wl)).text == "Pending: Kueue says: LocalQueue research-queue is terminating or missing"
