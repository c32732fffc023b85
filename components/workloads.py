"""Example workloads that fit a stack: the seeds' Jobs and JobSets, bound to its queues, flavors and chips.

Pure functions from the config model: each workload selects the node labels of one pool group's flavor,
asks `google.com/tpu` = chips per VM and the node's CPU and memory for each VM of a slice, and is submitted to
a LocalQueue whose team can reach that many chips (its share, or what it may borrow). Only what the stack can
run is generated: a multislice JobSet needs as many slices in its group, a queued-provisioning group gets the
queued Job.
`python -m offline workloads --stack <name>` writes them to build/<stack>/workloads/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components import gcs_fuse, pod_security, tpu_catalog
from components.config.pools import TpuPoolConfig
from components.config.queues import QueueRef, flavor_labels, queue_refs, quota, team_borrowing, team_chips
from components.config.serving import bucket_mounts, bucket_service_account, file_cache_gib
from components.config.stack import StackConfig
from components.kueue_queues import QUEUE_LABEL, pool_tolerations

IMAGE = "python:3.11.13-slim-bookworm@sha256:86adf8dbadc3d6e82ee5dd2c74bec2e1c2467cdad47886280501df722372d2e1"
JAX = "jax[tpu]==0.6.2"
METRICS_PORT = 8431
MEGASCALE_PORT = 8080
MAX_RESTARTS = 4
MAX_MULTISLICE = 3
MAX_RUN_ANNOTATION = "provreq.kueue.x-k8s.io/maxRunDurationSeconds"
TTL_SECONDS = 3600
"""Finished Jobs and JobSets (and their pods) are deleted an hour later: logs stay readable, nodes are freed."""
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""Set by the Job controller on every pod of a Job."""


@dataclass(frozen=True)
class Workload:
    """One manifest file: `objects` applied together, running on `pool` over `slices` slices."""

    name: str
    pool: str
    slices: int
    queue: QueueRef
    objects: tuple[dict[str, Any], ...]


def _queue_for(config: StackConfig, pool: TpuPoolConfig, chips: int) -> QueueRef | None:
    """The team that holds `chips` chips of the pool, else the first that may borrow them; None if no team can."""
    refs = queue_refs(config.queues)
    if not config.queues.teams:
        return refs["default"] if chips <= pool.total_chips else None
    shares, borrowing = team_chips(config.queues, config.queue_pools), team_borrowing(config.queues, config.queue_pools)
    teams = config.queues.teams
    for team in teams:
        if shares[team.name][pool.name] >= chips:
            return refs[team.name]
    for team in teams:
        limit = borrowing[team.name][pool.name]
        reach = pool.total_chips if limit is None else min(pool.total_chips, shares[team.name][pool.name] + limit)
        if reach >= chips:
            return refs[team.name]
    return None


def _lowest_priority(config: StackConfig) -> str | None:
    classes = config.queues.priority_classes
    return min(classes, key=lambda p: p.value).name if classes else None


def _script(multislice: bool) -> list[str]:
    count = "Global device count" if multislice else "TPU chips"
    return [
        "bash",
        "-c",
        f"pip install --no-cache-dir '{JAX}' && python -c 'import jax; print(\"{count}:\", jax.device_count())'",
    ]


def _template(
    config: StackConfig, pool: TpuPoolConfig, ports: list[int], namespace: str, *, multislice: bool
) -> dict[str, Any]:
    """Pod template: the pod, with the bucket's folders of its KSA mounted through Cloud Storage FUSE."""
    pod = _pod(config, pool, ports, namespace, multislice=multislice)
    cache = file_cache_gib(config.bucket, pool, autopilot=_autopilot(config))
    annotations = gcs_fuse.attach(pod, config.bucket_name, bucket_mounts(config.bucket, namespace), cache_gib=cache)
    return {"metadata": {"annotations": annotations}, "spec": pod} if annotations else {"spec": pod}


def _pod(
    config: StackConfig, pool: TpuPoolConfig, ports: list[int], namespace: str, *, multislice: bool
) -> dict[str, Any]:
    """A pod on one VM of the pool: all its chips and the CPU/memory of the node, the flavor's labels, tolerations of
    the pool's own taints, the namespace's bucket KSA. Not privileged and not on the host network: GKE gives TPU
    access without either, and Workload Identity only works off the host network."""
    amounts = {**quota(config.queues, pool, pool.machine.chips_per_vm)}
    limits = {k: v for k, v in amounts.items() if k != "cpu"}
    if "cpu" not in amounts and not _autopilot(config):
        amounts.update(pool.tpu_container_requests)
        limits.update(pool.tpu_container_limits)
    container: dict[str, Any] = {
        "name": "jax-tpu",
        "image": IMAGE,
        "imagePullPolicy": "Always",
        "command": _script(multislice),
        "resources": {"requests": dict(amounts), "limits": limits},
        "securityContext": pod_security.tpu_container_security(),
    }
    if ports:
        container["ports"] = [{"containerPort": port} for port in ports]
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": flavor_labels(pool),
        **pod_security.tpu_pod_fields(),
        "containers": [container],
    }
    account = bucket_service_account(config.bucket, namespace)
    if account:
        pod["serviceAccountName"] = account
    priority = _lowest_priority(config)
    if priority:
        pod["priorityClassName"] = priority
    tolerations = _tolerations(pool)
    if tolerations:
        pod["tolerations"] = tolerations
    return pod


def _autopilot(config: StackConfig) -> bool:
    return config.cluster.mode == "autopilot"


def requests_host_resources(config: StackConfig, pool: TpuPoolConfig) -> bool:
    """TPU pods request CPU and memory: queues.hostResources when set, else what a node of the pool has to give.
    Autopilot sizes TPU pods itself and refuses requests above its own maximum, so there only hostResources."""
    return pool.name in config.queues.host_resources or not _autopilot(config)


def exceptions(config: StackConfig, pool: TpuPoolConfig) -> dict[str, str]:
    """The documented checkov exceptions of a TPU pod of `pool`."""
    resources = (
        pod_security.CPU_LIMIT_EXCEPTION if requests_host_resources(config, pool) else pod_security.NO_HOST_RESOURCES
    )
    return {**pod_security.TPU_EXCEPTIONS, **resources}


def _tolerations(pool: TpuPoolConfig) -> list[dict[str, str]]:
    """The flavor's tolerations but GKE's own TPU taint, which GKE tolerates for pods that request TPUs."""
    return [t for t in pool_tolerations(pool) if t["key"] != tpu_catalog.TPU_RESOURCE]


def _metadata(
    config: StackConfig, pool: TpuPoolConfig, name: str, queue: QueueRef, annotations: dict[str, str]
) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": queue.namespace,
        "labels": {QUEUE_LABEL: queue.local_queue},
        "annotations": {**annotations, **pod_security.skip_annotations(exceptions(config, pool))},
    }


def slice_job(config: StackConfig, pool: TpuPoolConfig, name: str, queue: QueueRef) -> tuple[dict[str, Any], ...]:
    """A Job over one slice, created suspended for Kueue: one pod on a single-host slice; an Indexed Job with a
    headless Service (the pods find each other by hostname), pinned to one node pool, on a multi-host slice; for a
    queued-provisioning
    group, the pool's run limit travels to the ProvisioningRequest as an annotation."""
    annotations = {}
    seconds = pool.max_run_duration_seconds
    if pool.provisioning == "queued" and seconds:
        annotations[MAX_RUN_ANNOTATION] = str(seconds)
    ports = [tpu_catalog.ICI_PORT, METRICS_PORT] if pool.multi_host else []
    template = _template(config, pool, ports, queue.namespace, multislice=False)
    pod = template["spec"]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _metadata(config, pool, name, queue, annotations)}
    if not pool.multi_host:
        spec = {"suspend": True, "backoffLimit": 0, "ttlSecondsAfterFinished": TTL_SECONDS, "template": template}
        return ({**job, "spec": spec},)
    service = f"{name}-svc"
    pod["subdomain"] = service
    pod["affinity"] = _same_node_pool_as(name)
    vms = pool.vms_per_slice
    spec = {
        "suspend": True,
        "completionMode": "Indexed",
        "parallelism": vms,
        "completions": vms,
        "backoffLimit": 0,
        "ttlSecondsAfterFinished": TTL_SECONDS,
        "template": template,
    }
    return (
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": service, "namespace": queue.namespace},
            "spec": {"clusterIP": "None", "selector": {"job-name": name}},
        },
        {**job, "spec": spec},
    )


def _same_node_pool_as(job: str) -> dict[str, Any]:
    """Every pod of the Job on the node pool of its first pod: one slice. The accelerator and topology labels
    alone match every slice of the group, so an Indexed Job could straddle two slices that share no ICI."""
    term = {"labelSelector": {"matchLabels": {JOB_NAME_LABEL: job}}, "topologyKey": tpu_catalog.NODE_POOL_LABEL}
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def multislice_jobset(
    config: StackConfig, pool: TpuPoolConfig, slices: int, name: str, queue: QueueRef
) -> dict[str, Any]:
    """The multislice seed's JobSet: one child Job per slice (exclusive node pool), one pod per VM."""
    vms = pool.vms_per_slice
    template = _template(config, pool, [tpu_catalog.ICI_PORT, MEGASCALE_PORT], queue.namespace, multislice=True)
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": _metadata(config, pool, name, queue, {tpu_catalog.EXCLUSIVE_TOPOLOGY: tpu_catalog.NODE_POOL_LABEL}),
        "spec": {
            "failurePolicy": {"maxRestarts": MAX_RESTARTS},
            "ttlSecondsAfterFinished": TTL_SECONDS,
            "replicatedJobs": [
                {
                    "name": "slice",
                    "replicas": slices,
                    "template": {
                        "spec": {
                            "parallelism": vms,
                            "completions": vms,
                            "backoffLimit": 0,
                            "template": template,
                        }
                    },
                }
            ],
        },
    }


def workloads(config: StackConfig) -> list[Workload]:
    """Per pool group: a Job over one slice (the queued Job on queued groups), and for groups of two or more
    slices the 1-, 2- and 3-slice JobSets that fit; each only if some queue can reach its chips."""
    found: list[Workload] = []
    for pool in config.queue_pools:
        queued = pool.provisioning == "queued"
        name = f"{pool.name}-queued" if queued else f"{pool.name}-job"
        queue = _queue_for(config, pool, pool.chips_per_slice)
        if queue is not None:
            found.append(Workload(name, pool.name, 1, queue, slice_job(config, pool, name, queue)))
        if queued or pool.slices < 2:
            continue
        for slices in range(1, min(MAX_MULTISLICE, pool.slices) + 1):
            queue = _queue_for(config, pool, slices * pool.chips_per_slice)
            if queue is None:
                continue
            name = f"{pool.name}-{slices}slice"
            jobset = multislice_jobset(config, pool, slices, name, queue)
            found.append(Workload(name, pool.name, slices, queue, (jobset,)))
    return found


def manifests(config: StackConfig) -> list[dict[str, Any]]:
    """Every object of every workload."""
    return [obj for workload in workloads(config) for obj in workload.objects]
