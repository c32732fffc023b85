"""Example workloads that fit a stack: the seeds' Jobs and JobSets, bound to its queues, flavors and chips.

Pure functions from the config model: each workload asks `google.com/tpu` = chips per VM and the node's CPU
and memory for each VM of a slice, and is submitted to a LocalQueue whose team can reach that many chips (its
share, or what it may borrow). A workload of a pool group on its own selects the node labels of that group's
flavor; a workload of a capacity ladder selects only the shape (accelerator and topology), so Kueue may admit it
on any rung, in ladder order, and adds that rung's labels and tolerations itself. Only what the stack can run is
generated: a multislice JobSet needs as many slices in its group (on every rung of a ladder), a
queued-provisioning group gets the queued workload of one slice.

Each workload is one object that carries everything it needs to the cluster that runs it, a MultiKueue worker
included (Kueue copies only the job object there): a single-host slice is a Job (one pod, no Service); a multi-host
slice, or several, is a JobSet, whose controller on the running cluster creates the headless Service the pods'
hostnames resolve through. Multislice only on multi-host slices, the only ones GKE's Multislice supports.
`python -m offline workloads --stack <name>` writes them to build/<stack>/workloads/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components import disruptions, gcs_fuse, pod_security, tpu_catalog
from components.config.pools import TpuPoolConfig
from components.config.queues import (
    QueueRef,
    flavor_labels,
    ladder_slices,
    placed,
    queue_refs,
    quota,
    shape_selector,
    team_borrowing,
    team_chips,
)
from components.config.serving import bucket_mounts, bucket_service_account, file_cache_gib
from components.config.stack import StackConfig
from components.kueue_queues import (
    PREFERRED_TOPOLOGY,
    QUEUE_LABEL,
    REQUIRED_TOPOLOGY,
    SLICE_REQUIRED_TOPOLOGY,
    SLICE_SIZE,
    pool_tolerations,
)

IMAGE = "python:3.11.13-slim-bookworm@sha256:86adf8dbadc3d6e82ee5dd2c74bec2e1c2467cdad47886280501df722372d2e1"
JAX = "jax[tpu]==0.6.2"
METRICS_PORT = 8431
MEGASCALE_PORT = 8080
MAX_RESTARTS = 4
MAX_MULTISLICE = 3
MAX_RUN_ANNOTATION = "provreq.kueue.x-k8s.io/maxRunDurationSeconds"
TTL_SECONDS = 3600
"""Finished Jobs and JobSets (and their pods) are deleted an hour later: logs stay readable, nodes are freed."""


@dataclass(frozen=True)
class Ladder:
    """A capacity ladder as its workloads see it: pool groups of one shape, the first tried first."""

    name: str
    rungs: tuple[TpuPoolConfig, ...]


Target = TpuPoolConfig | Ladder
"""What a workload runs on: one pool group, or any rung of a ladder."""


def rungs_of(target: Target) -> tuple[TpuPoolConfig, ...]:
    return target.rungs if isinstance(target, Ladder) else (target,)


def shape_of(target: Target) -> TpuPoolConfig:
    """The pool group whose slice math holds for the target: every rung of a ladder has the same machine type and
    topology (its chips per VM, VMs per slice, CPU and memory), so the first rung stands for all."""
    return rungs_of(target)[0]


def ladders(config: StackConfig) -> dict[str, Ladder]:
    return {name: Ladder(name, rungs) for name, rungs in config.ladders.items()}


@dataclass(frozen=True)
class Workload:
    """One manifest file: `objects` applied together, running on `pool` (a pool group or a ladder) over `slices`
    slices."""

    name: str
    pool: str
    slices: int
    queue: QueueRef
    objects: tuple[dict[str, Any], ...]


def team_reach(config: StackConfig, team: str, pool: TpuPoolConfig) -> tuple[int, int, int | None]:
    """(most chips of `pool` the team's queue can ever hold, its share, its borrowing limit or None)."""
    share = team_chips(config.queues, config.queue_pools)[team][pool.name]
    limit = team_borrowing(config.queues, config.queue_pools)[team][pool.name]
    return (pool.total_chips if limit is None else min(pool.total_chips, share + limit)), share, limit


def _queue_for(config: StackConfig, target: Target, chips: int) -> QueueRef | None:
    """A team that can hold `chips` chips on every rung: the first whose share of the first rung holds them, else
    the first that may borrow them; None if no team can."""
    refs = queue_refs(config.queues)
    rungs = rungs_of(target)
    if not config.queues.teams:
        return refs["default"] if all(chips <= pool.total_chips for pool in rungs) else None
    teams = [team.name for team in config.queues.teams]
    reaching = [team for team in teams if all(team_reach(config, team, pool)[0] >= chips for pool in rungs)]
    holding = [team for team in reaching if team_reach(config, team, rungs[0])[1] >= chips]
    found = holding or reaching
    return refs[found[0]] if found else None


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
    config: StackConfig, target: Target, ports: list[int], namespace: str, *, slices: int, multislice: bool
) -> dict[str, Any]:
    """Pod template: the pod, with the bucket's folders of its KSA mounted through Cloud Storage FUSE, and where the
    target is placed by topology Kueue's placement request (Kueue reads pod-set annotations from the pod template)."""
    pod = _pod(config, target, ports, namespace, multislice=multislice)
    cache = file_cache_gib(config.bucket, shape_of(target), autopilot=_autopilot(config))
    annotations = gcs_fuse.attach(
        pod,
        config.bucket_name,
        bucket_mounts(config.bucket, namespace),
        cache_gib=cache,
        checkpoint_bucket=config.checkpoint_bucket_name,
    )
    annotations = {**annotations, **placement(config, target, slices)}
    return {"metadata": {"annotations": annotations}, "spec": pod} if annotations else {"spec": pod}


def placement(config: StackConfig, target: Target, slices: int) -> dict[str, str]:
    """Kueue's topology request for a workload of `slices` slices of a placed target (queues.placement): each slice
    on the nodes of one node pool (podset-slice-required-topology with podset-slice-size, the pods of one slice: one
    per VM), and with the block level all slices in one block, required or preferred. Kueue's JobSet integration makes
    one pod set of a replicated job and orders its pods by job index, then completion index, so slice i of the
    JobSet is child Job i (kueue v0.19.2 pkg/controller/jobs/jobset/jobset_controller.go PodSets; the annotations,
    apis/kueue/v1beta2/topology_types.go; their rules, pkg/controller/jobframework/tas_validation.go). None where a
    rung of the target is not placed (a config check keeps a ladder's rungs all placed or none)."""
    rungs = rungs_of(target)
    if not all(placed(config.queues, pool) for pool in rungs):
        return {}
    request = {
        SLICE_REQUIRED_TOPOLOGY: tpu_catalog.NODE_POOL_LABEL,
        SLICE_SIZE: str(shape_of(target).vms_per_slice),
    }
    settings = config.queues.placement
    if settings.blocks and slices > 1:
        request[REQUIRED_TOPOLOGY if settings.slices == "required" else PREFERRED_TOPOLOGY] = tpu_catalog.BLOCK_LABEL
    return request


def _pod(config: StackConfig, target: Target, ports: list[int], namespace: str, *, multislice: bool) -> dict[str, Any]:
    """A pod on one VM of the target: all its chips and the CPU/memory of the node, the namespace's bucket KSA; on a
    pool group its flavor's labels and the tolerations of its taints, on a ladder the shape only (Kueue adds the
    labels and tolerations of the rung it admits the pod on). Not privileged and not on the host network: GKE gives
    TPU access without either, and Workload Identity only works off the host network. On a VM of several NUMA nodes
    (TPU7x) one container per NUMA node, each with its share of chips, CPU and memory, running the same command, as
    GKE's Ironwood guidance and xpk do (tpu_catalog.MachineType.containers_per_vm); the TPU runtime's environment
    comes from GKE, which xpk and GKE's own TPU7x examples leave to it too (xpk src/xpk/core/docker_resources.py
    get_env_container sets no TPU variable; "The TPU_ACCELERATOR_TYPE environment variable is not explicitly set in
    this example, as JobSet handles the slice assignment", cloud.google.com/kubernetes-engine/docs/how-to/
    create-dynamic-slices)."""
    pool = shape_of(target)
    amounts = {**quota(config.queues, pool, pool.chips_per_container)}
    limits = {k: v for k, v in amounts.items() if k != "cpu"}
    if "cpu" not in amounts and not _autopilot(config):
        amounts.update(pool.numa_container_requests)
        limits.update(pool.numa_container_limits)
    count = pool.machine.containers_per_vm
    containers: list[dict[str, Any]] = [
        {
            "name": "jax-tpu" if count == 1 else f"jax-tpu-{index + 1}",
            "image": IMAGE,
            "imagePullPolicy": "Always",
            "command": _script(multislice),
            "resources": {"requests": dict(amounts), "limits": dict(limits)},
            "securityContext": pod_security.tpu_container_security(),
        }
        for index in range(count)
    ]
    if ports:
        # The pod's containers share its network: the ports are declared once, on the first.
        containers[0]["ports"] = [{"containerPort": port} for port in ports]
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": shape_selector(pool) if isinstance(target, Ladder) else flavor_labels(pool),
        **pod_security.tpu_pod_fields(),
        "containers": containers,
    }
    account = bucket_service_account(config.bucket, namespace)
    if account:
        pod["serviceAccountName"] = account
    priority = _lowest_priority(config)
    if priority:
        pod["priorityClassName"] = priority
    tolerations = [] if isinstance(target, Ladder) else _tolerations(pool)
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
    config: StackConfig, target: Target, name: str, queue: QueueRef, annotations: dict[str, str]
) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": queue.namespace,
        "labels": {QUEUE_LABEL: queue.local_queue},
        "annotations": {**annotations, **pod_security.skip_annotations(exceptions(config, shape_of(target)))},
    }


def _queued_run_seconds(target: Target) -> int | None:
    """The run limit a queued-provisioning rung passes to its ProvisioningRequest (Kueue reads the annotation only
    when it creates one, i.e. when it admits the workload on that rung). A ladder's queued rungs have one limit (a
    config check), since one annotation serves them all."""
    return next(
        (
            pool.max_run_duration_seconds
            for pool in rungs_of(target)
            if pool.provisioning == "queued" and pool.max_run_duration_seconds
        ),
        None,
    )


def slice_job(config: StackConfig, target: Target, name: str, queue: QueueRef) -> dict[str, Any]:
    """A Job of one single-host slice, created suspended for Kueue: one pod, all the VM's chips. For a
    queued-provisioning group or rung the run limit travels to the ProvisioningRequest as an annotation. A pod the
    platform stops (DisruptionTarget: an upgrade, a repair, maintenance, a spot preemption) is started again without
    counting, one deleted without that condition within a budget; any failure of its own fails the Job
    (disruptions.job_policy)."""
    pool = shape_of(target)
    assert not pool.multi_host, "a multi-host slice runs as a JobSet (slice_jobset)"
    template = _template(config, target, [], queue.namespace, slices=1, multislice=False)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(config, target, name, queue, _run_limit(target)),
        "spec": {
            "suspend": True,
            **disruptions.job_policy(pool.vms_per_slice, MAX_RESTARTS),
            "ttlSecondsAfterFinished": TTL_SECONDS,
            "template": template,
        },
    }


def _run_limit(target: Target) -> dict[str, str]:
    seconds = _queued_run_seconds(target)
    return {MAX_RUN_ANNOTATION: str(seconds)} if seconds else {}


def slice_jobset(config: StackConfig, target: Target, slices: int, name: str, queue: QueueRef) -> dict[str, Any]:
    """The multislice seed's JobSet over `slices` multi-host slices: one child Job per slice (exclusive node pool),
    one pod per VM, the headless Service made by JobSet on the cluster that runs it. A disruption restarts every
    slice without counting; a failure of its own restarts them within failurePolicy.maxRestarts
    (disruptions.jobset_policy). A queued-provisioning group's or rung's run limit rides along as for a Job."""
    pool = shape_of(target)
    assert pool.multi_host or slices == 1, "GKE's Multislice runs on multi-host slices only"
    vms = pool.vms_per_slice
    template = _template(
        config, target, [tpu_catalog.ICI_PORT, MEGASCALE_PORT], queue.namespace, slices=slices, multislice=True
    )
    annotations = {tpu_catalog.EXCLUSIVE_TOPOLOGY: tpu_catalog.NODE_POOL_LABEL, **_run_limit(target)}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": _metadata(config, target, name, queue, annotations),
        "spec": {
            "failurePolicy": disruptions.jobset_policy(MAX_RESTARTS),
            "ttlSecondsAfterFinished": TTL_SECONDS,
            "replicatedJobs": [
                {
                    "name": "slice",
                    "replicas": slices,
                    "template": {
                        "spec": {
                            "parallelism": vms,
                            "completions": vms,
                            **disruptions.child_job_policy(),
                            "template": template,
                        }
                    },
                }
            ],
        },
    }


def workload_objects(
    config: StackConfig, target: Target, slices: int, name: str, queue: QueueRef, *, jobset: bool = False
) -> tuple[dict[str, Any], ...]:
    """What runs `slices` slices of `target`: a JobSet on multi-host slices (or when asked), else a Job."""
    if shape_of(target).multi_host or jobset:
        return (slice_jobset(config, target, slices, name, queue),)
    return (slice_job(config, target, name, queue),)


def targets(config: StackConfig) -> list[Target]:
    """What workloads run on, in the order ClusterQueues list flavors: each ladder (its rungs serve only the
    ladder's workloads: Kueue would admit a workload of one rung on any other rung of the shape), and every pool
    group in no ladder."""
    found: list[Target] = []
    ladder_by_name = ladders(config)
    for pool in config.queue_flavors:
        ladder = config.ladder_of(pool)
        if ladder is None:
            found.append(pool)
        elif all(not isinstance(t, Ladder) or t.name != ladder for t in found):
            found.append(ladder_by_name[ladder])
    return found


def max_slices(target: Target) -> int:
    """The most slices one workload may take: the group's slices; on a ladder, what every rung can take."""
    return ladder_slices(rungs_of(target))


def workloads(config: StackConfig) -> list[Workload]:
    """Per pool group in no ladder, and per ladder: on single-host slices the Job of one slice; on multi-host slices
    the 1-, 2- and 3-slice JobSets that fit every rung (one slice per workload where a rung is queued); a queued group
    gets its one-slice workload named `-queued`. Each only if some queue can reach its chips on every rung."""
    found: list[Workload] = []
    for target in targets(config):
        pool = shape_of(target)
        queued = not isinstance(target, Ladder) and pool.provisioning == "queued"
        most = min(MAX_MULTISLICE, max_slices(target)) if pool.multi_host else 1
        for slices in range(1, most + 1):
            queue = _queue_for(config, target, slices * pool.chips_per_slice)
            if queue is None:
                continue
            if queued:
                name = f"{target.name}-queued"
            else:
                name = f"{target.name}-{slices}slice" if pool.multi_host else f"{target.name}-job"
            objects = workload_objects(config, target, slices, name, queue)
            found.append(Workload(name, target.name, slices, queue, objects))
    return found


def manifests(config: StackConfig) -> list[dict[str, Any]]:
    """Every object of every workload."""
    return [obj for workload in workloads(config) for obj in workload.objects]
