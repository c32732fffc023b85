"""Kueue, autoscaler and core objects as the API server returns them, for the `tpu-stack` tests.

Shapes and names follow the writers' sources:
- Workload (kueue.x-k8s.io/v1beta2): spec.podSets/queueName/priority/active, status.conditions,
  status.admission.podSetAssignments, status.admissionChecks, status.resourceRequests
  (kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2/workload_types.go). Its name is `<kind>-<job>-<5 hex>`
  (pkg/controller/jobframework/workload_names.go) and its owner is the Job or JobSet.
- ClusterQueue status.flavorsReservation/flavorsUsage of {name, resources: [{name, total, borrowed}]}
  (clusterqueue_types.go); quantities are strings, as resource.Quantity serializes.
- ProvisioningRequest (autoscaling.x-k8s.io/v1) named `<workload>-<check>-<attempt>` and owned by the
  Workload (pkg/controller/admissionchecks/provisioning/provisioning.go, controller.go).
- Events (core/v1) with involvedObject, reason, message, source.component, as the autoscaler writes them; and
  Kueue's, which 0.19 writes with the events.k8s.io/v1 recorder (mgr.GetEventRecorder, Eventf(obj, related, type,
  reason, action, note)): read through core/v1 they have involvedObject (regarding), message (note), eventTime,
  reportingComponent and action, and no source, firstTimestamp or lastTimestamp.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

Obj = dict[str, Any]
NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
TPU = "google.com/tpu"
MULTISLICE_LABELS = {  # dev's multislice group: Trillium 2x4 on flex-start nodes
    "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
    "cloud.google.com/gke-tpu-topology": "2x4",
    "cloud.google.com/gke-flex-start": "true",
}
FLEX_V6E_LABELS = {
    "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
    "cloud.google.com/gke-tpu-topology": "2x2",
    "cloud.google.com/gke-flex-start": "true",
}
BURST_LABELS = {  # prod's queued group: v5e 2x4 on flex-start nodes
    "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
    "cloud.google.com/gke-tpu-topology": "2x4",
    "cloud.google.com/gke-flex-start": "true",
}


def ago(minutes: float = 0, hours: float = 0) -> str:
    return (NOW - timedelta(minutes=minutes, hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(kind: str, status: str, reason: str, message: str, since: str) -> Obj:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
        "observedGeneration": 1,
    }


def cluster_queue(
    name: str,
    namespace: str,
    *,
    cohort: str | None,
    quotas: dict[str, tuple[str, str | None]],
    reserved: dict[str, tuple[str, str]] | None = None,
    lending: dict[str, str] | None = None,
    reclaim: str = "Any",
) -> Obj:
    """A team ClusterQueue as KueueQueues declares it, with Kueue's defaults and status. `quotas`: flavor ->
    (nominalQuota, borrowingLimit); `reserved`: flavor -> (total, borrowed) of status.flavorsReservation;
    `lending`: flavor -> lendingLimit; `reclaim`: spec.preemption.reclaimWithinCohort."""
    reserved = reserved or {}
    lending = lending or {}
    flavors = [
        {
            "name": flavor,
            "resources": [
                {
                    "name": TPU,
                    "nominalQuota": nominal,
                    **({"borrowingLimit": limit} if limit is not None else {}),
                    **({"lendingLimit": lending[flavor]} if flavor in lending else {}),
                }
            ],
        }
        for flavor, (nominal, limit) in quotas.items()
    ]
    usage = [
        {
            "name": flavor,
            "resources": [
                {
                    "name": TPU,
                    "total": reserved.get(flavor, ("0", "0"))[0],
                    "borrowed": reserved.get(flavor, ("0", "0"))[1],
                }
            ],
        }
        for flavor in quotas
    ]
    spec: Obj = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "queueingStrategy": "BestEffortFIFO",
        "stopPolicy": "None",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "preemption": {
            "borrowWithinCohort": {"policy": "Never"},
            "reclaimWithinCohort": reclaim,
            "withinClusterQueue": "LowerPriority",
        },
        "resourceGroups": [{"coveredResources": [TPU], "flavors": flavors}],
    }
    if cohort:
        spec["cohortName"] = cohort
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name, "uid": f"uid-{name}", "generation": 1, "creationTimestamp": ago(hours=72)},
        "spec": spec,
        "status": {
            "conditions": [condition("Active", "True", "Ready", "Can admit new workloads", ago(hours=72))],
            "flavorsReservation": usage,
            "flavorsUsage": usage,
            "pendingWorkloads": 1,
            "reservingWorkloads": 1,
            "admittedWorkloads": 1,
        },
    }


def cohort(name: str, quotas: dict[str, str]) -> Obj:
    """The teams' Cohort as KueueQueues declares it: the chips no team holds."""
    flavors = [{"name": flavor, "resources": [{"name": TPU, "nominalQuota": q}]} for flavor, q in quotas.items()]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": ago(hours=72)},
        "spec": {"resourceGroups": [{"coveredResources": [TPU], "flavors": flavors}]},
    }


def workload(
    kind: str,
    job: str,
    namespace: str,
    queue: str,
    *,
    pods: int,
    chips_per_pod: int,
    labels: dict[str, str],
    conditions: list[Obj],
    suffix: str = "3f2a1",
    created: str | None = None,
    admission: Obj | None = None,
    checks: list[Obj] | None = None,
    active: bool = True,
    recorded: bool = False,
    priority: int = 100,
    annotations: dict[str, str] | None = None,
    status: Obj | None = None,
) -> Obj:
    """The Workload Kueue creates for a Job (pod set `main`) or JobSet (pod set per replicated Job, `slice`).
    `recorded`: status.resourceRequests, which the scheduler writes while the workload is not admitted; `status`:
    more status fields (requeueState, schedulingStats, accumulatedPastExecutionTimeSeconds); `annotations`: the
    job's provreq.kueue.x-k8s.io/ annotations, which Kueue copies to the Workload (jobframework/utils.go)."""
    podset = "slice" if kind == "JobSet" else "main"
    api = "jobset.x-k8s.io/v1alpha2" if kind == "JobSet" else "batch/v1"
    status = {"conditions": conditions, **(status or {})}
    if admission is not None:
        status["admission"] = admission
    if checks is not None:
        status["admissionChecks"] = checks
    if recorded:
        status["resourceRequests"] = [{"name": podset, "resources": {TPU: str(pods * chips_per_pod)}}]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": f"{kind.lower()}-{job}-{suffix}",
            "namespace": namespace,
            "uid": f"uid-{job}",
            "generation": 1,
            "creationTimestamp": created or ago(minutes=30),
            "labels": {"kueue.x-k8s.io/job-uid": f"job-uid-{job}"},
            **({"annotations": annotations} if annotations else {}),
            "ownerReferences": [
                {
                    "apiVersion": api,
                    "kind": kind,
                    "name": job,
                    "uid": f"job-uid-{job}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "active": active,
            "queueName": queue,
            "priority": priority,
            "priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "very-low"},
            "podSets": [
                {
                    "name": podset,
                    "count": pods,
                    "template": {
                        "spec": {
                            "nodeSelector": labels,
                            "containers": [
                                {
                                    "name": "jax-tpu",
                                    "image": "python:3.11.13-slim-bookworm",
                                    "resources": {
                                        "requests": {TPU: str(chips_per_pod)},
                                        "limits": {TPU: str(chips_per_pod)},
                                    },
                                }
                            ],
                        }
                    },
                }
            ],
        },
        "status": status,
    }


def admission(queue: str, podset: str, flavor: str, pods: int, chips: int) -> Obj:
    return {
        "clusterQueue": queue,
        "podSetAssignments": [
            {"name": podset, "flavors": {TPU: flavor}, "resourceUsage": {TPU: str(chips)}, "count": pods}
        ],
    }


def admitted_conditions(queue: str, since: str) -> list[Obj]:
    """What SetQuotaReservation and SyncAdmittedCondition write once admitted (pkg/workload)."""
    return [
        condition("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {queue}", since),
        condition("Admitted", "True", "Admitted", "The workload is admitted", since),
    ]


def pending_conditions(message: str, since: str) -> list[Obj]:
    """The scheduler's QuotaReserved=False (reason "Pending": the UnadmittedWorkloadsObservability gate is off by
    default in v0.19) and no Admitted condition yet."""
    return [condition("QuotaReserved", "False", "Pending", message, since)]


def pod(name: str, namespace: str, labels: dict[str, str], *, running: bool, unschedulable: str = "") -> Obj:
    conditions = [condition("PodScheduled", "True", "", "", ago(minutes=20))]
    if unschedulable:
        conditions = [condition("PodScheduled", "False", "Unschedulable", unschedulable, ago(minutes=19))]
    elif running:
        conditions.append(condition("Ready", "True", "", "", ago(minutes=15)))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": labels,
            "creationTimestamp": ago(minutes=20),
        },
        "spec": {"containers": [{"name": "jax-tpu", "image": "python:3.11.13-slim-bookworm"}]},
        "status": {"phase": "Running" if running else "Pending", "conditions": conditions},
    }


def event(kind: str, name: str, namespace: str, reason: str, message: str, component: str, since: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{reason.lower()}", "namespace": namespace},
        "involvedObject": {"kind": kind, "name": name, "namespace": namespace},
        "reason": reason,
        "message": message,
        "source": {"component": component},
        "type": "Normal",
        "count": 1,
        "firstTimestamp": since,
        "lastTimestamp": since,
    }


def kueue_event(workload: Obj, reason: str, message: str, at: str, component: str = "kueue-admission") -> Obj:
    """An event Kueue recorded on a Workload, as `GET /api/v1/namespaces/<ns>/events` returns it; `component` is the
    recorder's name (the scheduler's "kueue-admission", the provisioning controller's
    "kueue-provisioning-request-controller", cmd/kueue/main.go)."""
    name, namespace = workload["metadata"]["name"], workload["metadata"]["namespace"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.18a2b3c4d5e6f708", "namespace": namespace},
        "involvedObject": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "name": name,
            "namespace": namespace,
            "uid": workload["metadata"]["uid"],
        },
        "reason": reason,
        "message": message,
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "eventTime": at.replace("Z", ".412345Z"),
        "action": reason,
        "reportingComponent": component,
        "reportingInstance": "kueue-controller-manager-6d4f9c7b8-x2k9p",
        "type": "Normal",
    }


def provisioning_request(name: str, namespace: str, owner: Obj, conditions: list[Obj], created: str) -> Obj:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": created,
            "labels": {"kueue.x-k8s.io/managed": "true"},
            "ownerReferences": [
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "Workload",
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "provisioningClassName": "queued-provisioning.gke.io",
            "podSets": [{"podTemplateRef": {"name": f"ppt-{name}-main"}, "count": 2}],
        },
        "status": {"conditions": conditions},
    }
