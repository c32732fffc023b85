"""Reading Kueue's objects as Kueue v0.19.2 writes them (`kueue.x-k8s.io/v1beta2`), and the pods of a job.

Objects are the API server's JSON (camelCase dicts): nothing is converted into models, so what the tests feed
in is exactly what `kubectl get -o json` shows. Field names and condition types are those of
apis/kueue/v1beta2/workload_types.go and clusterqueue_types.go at v0.19.2.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from components import tpu_catalog
from components.workloads import MAX_RUN_ANNOTATION as MAX_RUN_ANNOTATION

Obj = dict[str, Any]
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"
JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"
TPU = tpu_catalog.TPU_RESOURCE
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
JOBSET_JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
JOB_KINDS = ("JobSet", "Job")
WORKLOAD_CONTAINER = "jax-tpu"
"""The container `make workloads` and `submit` give the workload's code (components/workloads.py); `logs` reads it."""
PROVISIONING_RETRIES = 3
"""Retries of a failed queued-provisioning request: Kueue's default backoffLimitCount (apis/kueue/v1beta2/
provisioningrequestconfig_types.go), as the stack's ProvisioningRequestConfigs set no retryStrategy."""

# Workload condition types (workload_types.go).
ADMITTED, QUOTA_RESERVED, EVICTED, PREEMPTED, FINISHED = "Admitted", "QuotaReserved", "Evicted", "Preempted", "Finished"
PODS_READY = "PodsReady"
# Evicted reasons (workload_types.go): by the scheduler's preemption, by an admission check in Retry, by the
# PodsReady timeout; a deactivation is "Deactivated", or "DeactivatedDueTo<cause>" (evict.go Evict, ReasonWithCause).
EVICTED_BY_PREEMPTION, EVICTED_BY_ADMISSION_CHECK, EVICTED_BY_TIMEOUT = (
    "Preempted",
    "AdmissionCheck",
    "PodsReadyTimeout",
)
DEACTIVATED, REQUEUING_LIMIT, MAX_EXECUTION_TIME = (
    "Deactivated",
    "RequeuingLimitExceeded",
    "MaximumExecutionTimeExceeded",
)
# PodsReady=False reasons, also the underlying causes of a PodsReadyTimeout eviction (workload_types.go).
WAIT_FOR_START, WAIT_FOR_RECOVERY = "WaitForStart", "WaitForRecovery"
# The controllers behind the admission checks the stack declares (AdmissionCheck spec.controllerName):
# components/kueue_queues.py PROVISIONING_CONTROLLER and components/multikueue.py MULTIKUEUE_CONTROLLER.
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
DEFAULT_PRIORITY = 0
"""A Workload's priority when spec.priority is unset (pkg/constants DefaultPriority)."""


def condition(obj: Obj, kind: str) -> Obj | None:
    """The status condition of type `kind`, if the object has one."""
    for found in obj.get("status", {}).get("conditions", []) or []:
        if found.get("type") == kind:
            return dict(found)
    return None


def is_true(obj: Obj, kind: str) -> bool:
    found = condition(obj, kind)
    return found is not None and found.get("status") == "True"


def quantity(value: object) -> Decimal:
    """A Kubernetes quantity ("16", "16000m", "192Gi"); absent is zero."""
    if value is None or value == "":
        return Decimal(0)
    return Decimal(parse_quantity(value))


def timestamp(value: object) -> datetime | None:
    """An RFC 3339 time as the API server writes it ("2026-05-01T10:00:00Z")."""
    if not isinstance(value, str) or not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def owner(obj: Obj) -> tuple[str, str] | None:
    """(kind, name) of the Job or JobSet that owns a Workload."""
    for ref in obj.get("metadata", {}).get("ownerReferences", []) or []:
        if ref.get("kind") in JOB_KINDS:
            return str(ref["kind"]), str(ref["name"])
    return None


def job_name(workload: Obj) -> str:
    """The name users know a workload by: its Job's or JobSet's, else the Workload's own."""
    found = owner(workload)
    return found[1] if found else str(workload["metadata"]["name"])


def find_workload(workloads: list[Obj], name: str) -> Obj | None:
    """The Workload of job `name` (or the Workload named `name`)."""
    for workload in workloads:
        if job_name(workload) == name:
            return workload
    return next((w for w in workloads if w["metadata"]["name"] == name), None)


def pod_selector(kind: str, name: str) -> str:
    """Label selector of the pods of a Job or JobSet (JobSet v0.12.0 and the Job controller set these labels)."""
    return f"{JOBSET_NAME_LABEL}={name}" if kind == "JobSet" else f"{JOB_NAME_LABEL}={name}"


def pod_count(workload: Obj) -> int:
    """Pods the workload runs: the sum of its pod sets' counts."""
    return sum(int(podset.get("count", 1)) for podset in workload.get("spec", {}).get("podSets", []))


def requests(workload: Obj) -> dict[str, Decimal]:
    """Resource -> total the workload asks for: what Kueue recorded (status.resourceRequests) or, before that,
    each pod set's count times its containers' requests (limits where a request is absent)."""
    totals: dict[str, Decimal] = {}
    recorded = workload.get("status", {}).get("resourceRequests") or []
    if recorded:
        for podset in recorded:
            for resource, amount in (podset.get("resources") or {}).items():
                totals[resource] = totals.get(resource, Decimal(0)) + quantity(amount)
        return totals
    for podset in workload.get("spec", {}).get("podSets", []):
        count = int(podset.get("count", 1))
        for container in podset.get("template", {}).get("spec", {}).get("containers", []):
            resources = container.get("resources", {})
            asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
            for resource, amount in asked.items():
                totals[resource] = totals.get(resource, Decimal(0)) + count * quantity(amount)
    return totals


def admitted_flavor(workload: Obj) -> str | None:
    """The flavor Kueue assigned to the TPU request of the first pod set, once quota is reserved."""
    admission = workload.get("status", {}).get("admission") or {}
    for podset in admission.get("podSetAssignments", []) or []:
        flavor = (podset.get("flavors") or {}).get(TPU)
        if flavor:
            return str(flavor)
    return None


def selected_flavor(workload: Obj, flavors: dict[str, dict[str, str]]) -> str | None:
    """The stack's flavor whose node labels the workload's pods select (`flavors` is the stack output)."""
    for podset in workload.get("spec", {}).get("podSets", []):
        selector = podset.get("template", {}).get("spec", {}).get("nodeSelector") or {}
        for name, labels in flavors.items():
            if labels and all(selector.get(key) == value for key, value in labels.items()):
                return name
    return None


def evictions(workload: Obj, reason: str, cause: str = "") -> int:
    """How often Kueue evicted the workload for `reason` (status.schedulingStats.evictions, counted per reason and
    underlying cause by pkg/workload/evict/evict.go): for "AdmissionCheck", the failed provisioning attempts that
    were retried."""
    stats = workload.get("status", {}).get("schedulingStats") or {}
    for entry in stats.get("evictions", []) or []:
        if entry.get("reason") == reason and (entry.get("underlyingCause") or "") == cause:
            return int(entry.get("count") or 0)
    return 0


def pod_running(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase") == "Running"


def priority(workload: Obj) -> int:
    """The priority Kueue orders and preempts by (pkg/util/priority/priority.go Priority; the priority-boost
    annotation counts only with the PriorityBoost gate, which the stack leaves off)."""
    value = workload.get("spec", {}).get("priority")
    return int(value) if value is not None else DEFAULT_PRIORITY


def job_pod_count(kind: str, job: Obj) -> int:
    """Pods a Job (parallelism) or JobSet (each replicated Job's replicas times its Job's parallelism) runs."""
    spec = job.get("spec", {})
    if kind == "Job":
        return int(spec.get("parallelism", 1))
    return sum(
        int(rj.get("replicas", 1)) * int(((rj.get("template") or {}).get("spec") or {}).get("parallelism", 1))
        for rj in spec.get("replicatedJobs", []) or []
    )


def cluster_name(workload: Obj) -> str | None:
    """The MultiKueue worker the workload was admitted on (status.clusterName, multikueue/workload.go)."""
    name = workload.get("status", {}).get("clusterName")
    return str(name) if name else None


def state(workload: Obj, pods: list[Obj]) -> str:
    """One word for a workload: Succeeded, Failed, Deactivated, Preempted, Retrying, Evicted, Running, Starting,
    Provisioning or Pending.

    Evicted comes before Admitted: Kueue sets Evicted=True first, and QuotaReserved and Admitted stay True until the
    job is suspended and its pods have stopped (pkg/workload/evict/evict.go prepareForEviction,
    jobframework/reconciler.go); it is reset when quota is reserved again (workload.go SetQuotaReservation)."""
    finished = condition(workload, FINISHED)
    if finished and finished.get("status") == "True":
        return "Failed" if finished.get("reason") == "Failed" else "Succeeded"
    if workload.get("spec", {}).get("active") is False:
        return "Deactivated"
    evicted = condition(workload, EVICTED)
    if evicted and evicted.get("status") == "True":
        reason = evicted.get("reason")
        if reason == EVICTED_BY_PREEMPTION:
            return "Preempted"
        return "Retrying" if reason == EVICTED_BY_ADMISSION_CHECK else "Evicted"
    if is_true(workload, ADMITTED):
        ready = condition(workload, PODS_READY)
        if ready is not None:
            return "Running" if ready.get("status") == "True" else "Starting"
        running = sum(1 for pod in pods if pod_running(pod))
        return "Running" if running >= pod_count(workload) else "Starting"
    if is_true(workload, QUOTA_RESERVED):
        return "Provisioning"
    return "Pending"


def needs_pods(workload: Obj) -> bool:
    """Whether `state` needs the workload's pods: admitted, and Kueue keeps no PodsReady condition on it (it does
    whenever waitForPodsReady is on, Kueue 0.19's default: jobframework/reconciler.go)."""
    finished = (
        is_true(workload, FINISHED) or workload.get("spec", {}).get("active") is False or is_true(workload, EVICTED)
    )
    return not finished and is_true(workload, ADMITTED) and condition(workload, PODS_READY) is None
