"""Capacity: TPU slices billed while nothing the stack declares holds them.

A fixed-size TPU node pool (on demand or spot: a reservation is billed whether its VMs run or not) is billed for
every VM all the time. Kueue's flavors make a pool queue capacity, idle between jobs by design; otherwise the pods
that hold it at rest are the stack's servers: Deployments, StatefulSets, LeaderWorkerSets and JobSets or Jobs
outside Kueue. A pool none of them can run on, or whose VMs outnumber the pods that can, is billed while idle.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, StackValidationArgs

from .gke import pool_machine, pool_max_nodes, pool_topology
from .kubernetes import _requests_tpu
from .kueue import Taint, _kueue, _pool_labels, _pool_taints, _tolerated
from .props import NODE_POOL, as_int, as_list, prop

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""A workload Kueue admits (a queue's, sized by its flavors) carries it; servers do not."""


def _held_pods(resource: PolicyResource) -> Iterator[tuple[Mapping[str, Any], int]]:
    """(pod spec, pods that run at rest) of a workload that holds its nodes: one TPU pod per VM."""
    props, kind = resource.props, resource.resource_type
    if QUEUE_LABEL in (prop(props, "metadata.labels") or {}):
        return
    if kind in ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet"):
        yield prop(props, "spec.template.spec") or {}, as_int(prop(props, "spec.replicas")) or 1
    elif kind.startswith("kubernetes:leaderworkerset.x-k8s.io/") and kind.endswith(":LeaderWorkerSet"):
        size = as_int(prop(props, "spec.leaderWorkerTemplate.size")) or 1
        groups = as_int(prop(props, "spec.replicas")) or 1
        yield prop(props, "spec.leaderWorkerTemplate.workerTemplate.spec") or {}, groups * size
    elif kind.startswith("kubernetes:jobset.x-k8s.io/") and kind.endswith(":JobSet"):
        for job in as_list(prop(props, "spec.replicatedJobs")):
            pods = (as_int(prop(job, "replicas")) or 1) * (as_int(prop(job, "template.spec.parallelism")) or 1)
            yield prop(job, "template.spec.template.spec") or {}, pods
    elif kind == "kubernetes:batch/v1:Job":
        yield prop(props, "spec.template.spec") or {}, as_int(prop(props, "spec.parallelism")) or 1


def _lands_on(pod: Mapping[str, Any], labels: Mapping[str, str], taints: list[Taint]) -> bool:
    """The scheduler's node selection as far as the stack's pods use it: nodeSelector, and tolerated taints."""
    selector = {str(k): str(v) for k, v in (pod.get("nodeSelector") or {}).items()}
    tolerations = as_list(pod.get("tolerations"))
    return selector.items() <= labels.items() and all(_tolerated(t, tolerations) for t in taints)


def validate_idle_capacity(args: StackValidationArgs, report: ReportViolation) -> None:
    """Fixed on-demand and spot TPU pools that no queue and no server holds, or that hold more VMs than their
    servers' pods at rest: `scaleToZero` keeps such slices only while a pod needs them."""
    resources = list(args.resources)
    flavors = [
        (
            {str(k): str(v) for k, v in (prop(r.props, "spec.nodeLabels") or {}).items()},
            as_list(prop(r.props, "spec.tolerations")),
        )
        for r in resources
        if _kueue(r, "ResourceFlavor")
    ]
    servers = [
        (resource, pod, pods) for resource in resources for pod, pods in _held_pods(resource) if _requests_tpu(pod)
    ]
    groups: dict[tuple[str, ...], list[tuple[PolicyResource, int]]] = {}
    for pool in resources:
        if pool.resource_type != NODE_POOL or isinstance(pool.props.get("autoscaling"), Mapping):
            continue
        if prop(pool.props, "nodeConfig.reservationAffinity.consumeReservationType") == "SPECIFIC_RESERVATION":
            continue
        machine = pool_machine(pool.props)
        topology = pool_topology(pool.props, machine) if machine else None
        vms = pool_max_nodes(pool.props) or 0
        if machine is None or topology is None or not vms:
            continue
        labels, taints = _pool_labels(pool, machine, topology), _pool_taints(pool.props)
        if any(wanted.items() <= labels.items() and all(_tolerated(t, tol) for t in taints) for wanted, tol in flavors):
            continue  # queue capacity
        holders = tuple(sorted({r.urn for r, pod, _ in servers if _lands_on(pod, labels, taints)}))
        groups.setdefault(holders, []).append((pool, vms))
    for holders, pools in groups.items():
        names = ", ".join(repr(str(p.props.get("name") or p.name)) for p, _ in pools)
        total = sum(vms for _, vms in pools)
        held = sum(pods for r, _, pods in servers if r.urn in holders)
        if not holders:
            report(
                f"node pool(s) {names}: {total} TPU VM(s) of fixed size that no Kueue flavor "
                "and no server of the stack runs on, billed while idle; set scaleToZero on the pool group, or "
                "remove it",
                pools[0][0].urn,
            )
        elif held < total:
            holding = {r.urn: r for r, _, _ in servers if r.urn in holders}.values()
            who = ", ".join(sorted(f"{r.resource_type.rsplit(':', 1)[-1]} {r.name!r}" for r in holding))
            report(
                f"node pool(s) {names}: {total} TPU VM(s) of fixed size, and what runs there at rest ({who}) holds "
                f"{held}: {total - held} billed while idle; set scaleToZero on the pool group (a spare slice is then "
                "created only while a rollout needs it)",
                pools[0][0].urn,
            )
