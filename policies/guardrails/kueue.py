"""Kueue: each flavor's TPU quota within the chips its node pools provide; each capacity ladder walked in order."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, ResourceValidationArgs, StackValidationArgs

from components import tpu_catalog

from .gke import pool_machine, pool_max_nodes, pool_topology
from .props import CLUSTER, KUEUE_GROUP, NODE_POOL, as_list, prop, say

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
"""controllerName of Kueue's MultiKueue AdmissionCheck (the pack does not import the program's components)."""


def _kueue(resource: PolicyResource, kind: str) -> bool:
    return resource.resource_type.startswith(KUEUE_GROUP) and resource.resource_type.endswith(f":{kind}")


def _pool_labels(resource: PolicyResource, machine: tpu_catalog.MachineType, topology: str) -> dict[str, str]:
    """Node labels GKE puts on the pool's nodes, plus the pool's own nodeConfig.labels."""
    props = resource.props
    labels = {
        tpu_catalog.ACCELERATOR_LABEL: machine.version.accelerator,
        tpu_catalog.TOPOLOGY_LABEL: topology,
        tpu_catalog.NODE_POOL_LABEL: str(props.get("name") or resource.name),
    }
    if prop(props, "nodeConfig.flexStart") is True:
        labels[tpu_catalog.FLEX_START_LABEL] = "true"
    if prop(props, "nodeConfig.spot") is True:
        labels[tpu_catalog.SPOT_LABEL] = "true"
    labels.update({str(k): str(v) for k, v in prop(props, "nodeConfig.labels", {}).items()})
    return labels


_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "PREFER_NO_SCHEDULE": "PreferNoSchedule", "NO_EXECUTE": "NoExecute"}
Taint = tuple[str, str, str]


def _pool_taints(props: Any) -> list[Taint]:
    """(key, value, effect) of the taints that keep pods off the pool's nodes: its nodeConfig.taints (GKE API form)
    and the taint GKE puts on queued-provisioning nodes. GKE's own TPU taint is left out: every pod that asks for
    TPU chips tolerates it."""
    taints = [
        (
            str(prop(t, "key")),
            str(prop(t, "value", "") or ""),
            _EFFECTS.get(str(prop(t, "effect")), str(prop(t, "effect"))),
        )
        for t in as_list(prop(props, "nodeConfig.taints"))
    ]
    if prop(props, "queuedProvisioning.enabled") is True:
        taints.append((tpu_catalog.QUEUED_TAINT, "", "NoSchedule"))
    return [t for t in taints if t[0] != tpu_catalog.TPU_RESOURCE and t[2] != "PreferNoSchedule"]


def _tolerated(taint: Taint, tolerations: list[Any]) -> bool:
    """Kubernetes' rule: a toleration matches a taint of its effect (or any, when it names none) and of its key
    (or any, for an empty key with Exists), on its value unless the operator is Exists."""
    key, value, effect = taint
    for toleration in tolerations:
        if prop(toleration, "effect") and prop(toleration, "effect") != effect:
            continue
        exists = prop(toleration, "operator", "Equal") == "Exists"
        if not prop(toleration, "key"):
            if exists:
                return True
            continue
        if prop(toleration, "key") == key and (exists or (prop(toleration, "value", "") or "") == value):
            return True
    return False


def _cluster_of(resource: PolicyResource | None) -> str | None:
    """URN of the GKE cluster a node pool or a kubernetes provider depends on (a node pool names its cluster, a
    provider's kubeconfig is made from it); None when there is none, as in a stack of one cluster's tests."""
    if resource is None:
        return None
    return next((d.urn for d in resource.dependencies if d.resource_type == CLUSTER), None)


def _pool_chips(resources: list[PolicyResource]) -> list[tuple[str | None, dict[str, str], list[Taint], int]]:
    """(cluster, node labels, taints, chips at full scale) of every TPU node pool."""
    pools = []
    for resource in resources:
        if resource.resource_type != NODE_POOL:
            continue
        machine = pool_machine(resource.props)
        topology = pool_topology(resource.props, machine) if machine else None
        if machine is None or topology is None:
            continue
        nodes = pool_max_nodes(resource.props) or 0
        labels = _pool_labels(resource, machine, topology)
        pools.append((_cluster_of(resource), labels, _pool_taints(resource.props), nodes * machine.chips_per_vm))
    return pools


def _object_cluster(resource: PolicyResource, by_urn: dict[str, PolicyResource]) -> str | None:
    """The cluster a Kubernetes object is written to: its provider's cluster (None: the default provider's)."""
    return _cluster_of(by_urn.get(resource.provider.urn)) if resource.provider is not None else None


def _dispatching_clusters(resources: list[PolicyResource], by_urn: dict[str, PolicyResource]) -> set[str | None]:
    """Clusters that are MultiKueue managers (an AdmissionCheck of the MultiKueue controller): Kueue admits there
    only what a worker admits, so their flavors count the chips of every cluster's pools."""
    return {
        _object_cluster(r, by_urn)
        for r in resources
        if _kueue(r, "AdmissionCheck") and prop(r.props, "spec.controllerName") == MULTIKUEUE_CONTROLLER
    }


_QUANTITY = re.compile(r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))(?P<suffix>[KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?$")


_QUANTITY_SUFFIX = {
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{s: Decimal(10) ** e for s, e in (("n", -9), ("u", -6), ("m", -3), ("k", 3), ("M", 6), ("G", 9), ("T", 12),
                                        ("P", 15), ("E", 18))},
}  # fmt: skip


def _quantity(value: Any) -> Decimal | None:
    """A Kubernetes resource quantity (16, 16.0, "16", "1k", "500m") as a number; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    match = _QUANTITY.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        return None
    suffix = match["suffix"] or ""
    scale = Decimal(10) ** int(suffix[1:]) if suffix[:1] in ("e", "E") else _QUANTITY_SUFFIX.get(suffix, Decimal(1))
    return Decimal(match["number"]) * scale


def _nominal_tpu(resource: PolicyResource) -> tuple[dict[str, Decimal], list[str]]:
    """Flavor name -> nominal google.com/tpu quota of a ClusterQueue or Cohort, and the quotas that are not
    quantities at all. The API server takes a quantity as a number or a string ("16"); both count."""
    quotas: dict[str, Decimal] = {}
    problems = []
    for group in as_list(prop(resource.props, "spec.resourceGroups")):
        for flavor in as_list(prop(group, "flavors")):
            for entry in as_list(prop(flavor, "resources")):
                if prop(entry, "name") != tpu_catalog.TPU_RESOURCE:
                    continue
                name = str(prop(flavor, "name"))
                raw = prop(entry, "nominalQuota", 0)
                amount = _quantity(raw)
                if amount is None:
                    problems.append(
                        f"{resource.resource_type.rsplit(':', 1)[-1]} {resource.name!r}: nominalQuota {raw!r} of "
                        f"{tpu_catalog.TPU_RESOURCE} in flavor {name!r} is not a quantity; write the chips as a "
                        "number, e.g. 16"
                    )
                    continue
                quotas[name] = quotas.get(name, Decimal(0)) + amount
    return quotas, problems


def _provisions_itself(resources: list[PolicyResource]) -> bool:
    """Autopilot and node auto-provisioning create TPU nodes on demand: no node pool states the capacity."""
    return any(
        r.resource_type == CLUSTER
        and (prop(r.props, "enableAutopilot") is True or prop(r.props, "clusterAutoscaling.enabled") is True)
        for r in resources
    )


def validate_quota(args: StackValidationArgs, report: ReportViolation) -> None:
    """Kueue must not admit more TPU chips than the node pools can ever provide, or admitted jobs never start.

    A flavor matches a pool when the pods Kueue admits on it can run there: its nodeLabels are a subset of the
    pool's node labels and its tolerations tolerate the pool's taints (so the rungs of a capacity ladder, which
    share the shape labels, are each held to their own pools). Its quota is the sum of nominalQuota over
    ClusterQueues and Cohorts (borrowing limits move quota around, they add none). A flavor no pool matches is
    skipped when the cluster provisions nodes itself (Autopilot, auto-provisioning); otherwise its quota must be 0.
    In a stack of several clusters, quotas and pools count per cluster (the provider's and the pool's cluster), but
    a MultiKueue manager's flavors count every cluster's pools: it admits only what one of its workers admits.
    """
    resources = list(args.resources)
    by_urn = {resource.urn: resource for resource in resources}
    pools = _pool_chips(resources)
    managers = _dispatching_clusters(resources, by_urn)
    quota: dict[tuple[str | None, str], Decimal] = {}
    for resource in resources:
        if _kueue(resource, "ClusterQueue") or _kueue(resource, "Cohort"):
            amounts, problems = _nominal_tpu(resource)
            for problem in problems:
                report(problem, resource.urn)
            cluster = _object_cluster(resource, by_urn)
            for name, amount in amounts.items():
                quota[(cluster, name)] = quota.get((cluster, name), Decimal(0)) + amount
    self_provisioning = _provisions_itself(resources)
    for flavor in (r for r in resources if _kueue(r, "ResourceFlavor")):
        name = str(prop(flavor.props, "metadata.name") or flavor.name)
        cluster = _object_cluster(flavor, by_urn)
        wanted = {str(k): str(v) for k, v in prop(flavor.props, "spec.nodeLabels", {}).items()}
        tolerations = as_list(prop(flavor.props, "spec.tolerations"))
        matching = [
            chips
            for pool_cluster, labels, taints, chips in pools
            if (cluster in managers or pool_cluster == cluster or None in (cluster, pool_cluster))
            and wanted.items() <= labels.items()
            and all(_tolerated(taint, tolerations) for taint in taints)
        ]
        if not matching and self_provisioning:
            continue
        chips = sum(matching)
        held = quota.get((cluster, name), Decimal(0))
        if held > chips:
            report(
                f"ResourceFlavor {name!r}: queues hold {held.normalize():f} {tpu_catalog.TPU_RESOURCE} "
                "nominal quota but "
                f"the {len(matching)} matching node pool(s) provide {chips} chips; lower the ClusterQueue "
                "nominalQuota or add slices",
                flavor.urn,
            )


def _flavor_groups(resource: PolicyResource) -> list[list[str]]:
    return [
        [str(prop(flavor, "name")) for flavor in as_list(prop(group, "flavors"))]
        for group in as_list(prop(resource.props, "spec.resourceGroups"))
    ]


def _flavor_name(flavor: PolicyResource) -> str:
    return str(prop(flavor.props, "metadata.name") or flavor.name)


def _ladder_flavors(resources: list[PolicyResource]) -> dict[str, dict[int, PolicyResource]]:
    """Ladder -> rung place -> its ResourceFlavor, from the flavors' tpu-stack/ladder and tpu-stack/rung labels."""
    ladders: dict[str, dict[int, PolicyResource]] = {}
    for flavor in (r for r in resources if _kueue(r, "ResourceFlavor")):
        labels = prop(flavor.props, "metadata.labels") or {}
        ladder, rung = labels.get(tpu_catalog.LADDER_LABEL), labels.get(tpu_catalog.RUNG_LABEL)
        if ladder is not None and str(rung).isdigit():
            ladders.setdefault(str(ladder), {})[int(str(rung))] = flavor
    return ladders


def validate_ladders(args: StackValidationArgs, report: ReportViolation) -> None:
    """A capacity ladder is walked rung by rung: every ClusterQueue that lists any of its flavors (ResourceFlavors
    labelled tpu-stack/ladder and tpu-stack/rung) lists all of them, in one resource group, in rung order, and
    moves on to the next flavor rather than borrow or preempt on a rung (flavorFungibility whenCanBorrow and
    whenCanPreempt TryNextFlavor), then prefers taking back its own quota on a rung to borrowing on a later one
    (preference PreemptionOverBorrowing). Kueue tries a group's flavors in their listed order and, by default, stops
    at the first the workload fits by borrowing; among the rungs it passed it picks by the preference, which
    defaults to BorrowingOverPreemption (kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go,
    findFlavorForPodSets, shouldTryNextFlavor, isPreferred)."""
    resources = list(args.resources)
    ladders = {
        ladder: {place: _flavor_name(flavor) for place, flavor in rungs.items()}
        for ladder, rungs in _ladder_flavors(resources).items()
    }
    for queue in (r for r in resources if _kueue(r, "ClusterQueue")):
        name = str(prop(queue.props, "metadata.name") or queue.name)
        groups = _flavor_groups(queue)
        for ladder, places in sorted(ladders.items()):
            rungs = [places[place] for place in sorted(places)]
            holding = [group for group in groups if set(group) & set(rungs)]
            if not holding:
                continue
            listed = [flavor for group in holding for flavor in group if flavor in rungs]
            if len(holding) > 1 or listed != rungs:
                report(
                    f"ClusterQueue {name!r} lists the flavors of ladder {ladder!r} as {', '.join(listed)}; list "
                    f"{', '.join(rungs)} in that order, in one resource group",
                    queue.urn,
                )
            fungibility = prop(queue.props, "spec.flavorFungibility") or {}
            if (prop(fungibility, "whenCanBorrow"), prop(fungibility, "whenCanPreempt")) != ("TryNextFlavor",) * 2:
                report(
                    f"ClusterQueue {name!r} lists ladder {ladder!r} but would stop at a rung it fits only by borrowing "
                    "or preempting; set flavorFungibility whenCanBorrow and whenCanPreempt to TryNextFlavor",
                    queue.urn,
                )
            elif prop(fungibility, "preference") != "PreemptionOverBorrowing":
                report(
                    f"ClusterQueue {name!r} lists ladder {ladder!r} but would borrow on a later rung rather than take "
                    "back its own quota on an earlier one; set flavorFungibility preference to PreemptionOverBorrowing",
                    queue.urn,
                )


def _scaling_pools(resources: list[PolicyResource]) -> list[tuple[dict[str, str], list[Taint], bool]]:
    """(node labels, taints, scales from zero and bills only while up) of every TPU node pool: a pool with autoscaling
    that consumes no specific reservation (a reservation bills whether its VMs run or not)."""
    pools = []
    for resource in resources:
        machine = pool_machine(resource.props) if resource.resource_type == NODE_POOL else None
        topology = pool_topology(resource.props, machine) if machine else None
        if machine is None or topology is None:
            continue
        reserved = (
            prop(resource.props, "nodeConfig.reservationAffinity.consumeReservationType") == "SPECIFIC_RESERVATION"
        )
        scales = isinstance(resource.props.get("autoscaling"), Mapping) and not reserved
        pools.append((_pool_labels(resource, machine, topology), _pool_taints(resource.props), scales))
    return pools


def _made_on_request(flavor: PolicyResource, pools: list[tuple[dict[str, str], list[Taint], bool]]) -> bool:
    """A rung whose nodes GKE makes when a workload asks (flex-start, queued provisioning: the flex-start node label,
    which queued nodes carry too) and removes after; so is one whose node pools all scale from zero without a
    reservation (a spot or on-demand group with `scaleToZero`). Every other rung's nodes bill while idle."""
    labels = prop(flavor.props, "spec.nodeLabels") or {}
    if str(labels.get(tpu_catalog.FLEX_START_LABEL)) == "true":
        return True
    wanted = {str(k): str(v) for k, v in labels.items()}
    tolerations = as_list(prop(flavor.props, "spec.tolerations"))
    matching = [
        scales
        for pool_labels, taints, scales in pools
        if wanted.items() <= pool_labels.items() and all(_tolerated(t, tolerations) for t in taints)
    ]
    return bool(matching) and all(matching)


def validate_ladder_cost_order(args: StackValidationArgs, report: ReportViolation) -> None:
    """A ladder lists capacity that bills while idle (a reservation, a fixed spot or on-demand pool) before capacity
    made on request (flex-start, queued, a group that scales to zero): Kueue tries the rungs in order, so a
    made-on-request rung first starts new capacity while the paid-for rung of the same shape idles
    (docs/workloads.md, Capacity ladders)."""
    resources = list(args.resources)
    pools = _scaling_pools(resources)
    for ladder, rungs in sorted(_ladder_flavors(resources).items()):
        ordered = [rungs[place] for place in sorted(rungs)]
        for index, flavor in enumerate(ordered):
            billed = next((later for later in ordered[index + 1 :] if not _made_on_request(later, pools)), None)
            if _made_on_request(flavor, pools) and billed is not None:
                report(
                    f"ResourceFlavor {_flavor_name(flavor)!r} is rung {index} of ladder {ladder!r}, made on request, "
                    f"before {_flavor_name(billed)!r}, which bills while idle: put the billed rung first",
                    flavor.urn,
                )
                break


HOSTNAME_LABEL = "kubernetes.io/hostname"


def validate_topologies(args: StackValidationArgs, report: ReportViolation) -> None:
    """Topology-aware flavors (queues.placement) name a Topology the stack declares: Kueue keeps a ClusterQueue with a
    TAS flavor whose Topology is missing inactive ("there is no Topology %q for TAS flavor %q", reason
    TopologyNotFound: kueue v0.19.2 pkg/cache/scheduler/clusterqueue.go), so every workload of its teams waits. A
    Topology uses kubernetes.io/hostname only as its lowest level (the CRD's rule in
    apis/kueue/v1beta2/topology_types.go), checked here at preview rather than refused at `up`."""
    resources = list(args.resources)
    topologies = {str(prop(r.props, "metadata.name") or r.name): r for r in resources if _kueue(r, "Topology")}
    for name, topology in topologies.items():
        levels = [prop(level, "nodeLabel") for level in as_list(prop(topology.props, "spec.levels"))]
        if not levels or (HOSTNAME_LABEL in levels and levels[-1] != HOSTNAME_LABEL):
            report(
                f"Topology {name!r} has levels {levels}; {HOSTNAME_LABEL} may only be the last (lowest) level",
                topology.urn,
            )
    for flavor in (r for r in resources if _kueue(r, "ResourceFlavor")):
        wanted = prop(flavor.props, "spec.topologyName")
        if wanted and str(wanted) not in topologies:
            report(
                f"ResourceFlavor {prop(flavor.props, 'metadata.name')!r} names Topology {wanted!r}, which the stack "
                f"does not declare ({', '.join(sorted(topologies)) or 'none'}): its ClusterQueues would go inactive",
                flavor.urn,
            )


NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server puts on every Namespace, its name."""


def _selects(selector: Any, labels: dict[str, str]) -> bool:
    """Kubernetes' label selector rule; a ClusterQueue's absent namespaceSelector selects no namespace (Kueue's API:
    "Defaults to null which is a nothing selector")."""
    if selector is None:
        return False
    for key, value in (prop(selector, "matchLabels") or {}).items():
        if labels.get(str(key)) != str(value):
            return False
    for expression in as_list(prop(selector, "matchExpressions")):
        key, operator = str(prop(expression, "key")), prop(expression, "operator")
        values = [str(v) for v in as_list(prop(expression, "values"))]
        present = key in labels
        if not {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(str(operator), False):
            return False
    return True


def _selects_every_namespace(selector: Any) -> bool:
    return selector is not None and not prop(selector, "matchLabels") and not prop(selector, "matchExpressions")


def validate_queue_namespaces(args: StackValidationArgs, report: ReportViolation) -> None:
    """A team's quota is its own: where a cluster has several ClusterQueues (one per team), each selects its team's
    namespaces, as the stack writes them (`kubernetes.io/metadata.name: <team>`); one that selects every namespace
    lets a LocalQueue anywhere spend that team's quota. A LocalQueue points at a ClusterQueue of the stack that selects
    its namespace: Kueue leaves the workloads of any other pending, inadmissible (kueue v0.19.2 ClusterQueue
    namespaceSelector: "Defaults to null which is a nothing selector ... If set to an empty selector `{}`, then all
    namespaces are eligible")."""
    resources = list(args.resources)
    by_urn = {resource.urn: resource for resource in resources}
    queues: dict[tuple[str | None, str], PolicyResource] = {}
    for queue in (r for r in resources if _kueue(r, "ClusterQueue")):
        queues[(_object_cluster(queue, by_urn), str(prop(queue.props, "metadata.name") or queue.name))] = queue
    namespace_labels: dict[tuple[str | None, str], dict[str, str]] = {}
    for declared in (r for r in resources if r.resource_type == "kubernetes:core/v1:Namespace"):
        name = str(prop(declared.props, "metadata.name"))
        labels = {str(k): str(v) for k, v in (prop(declared.props, "metadata.labels") or {}).items()}
        namespace_labels[(_object_cluster(declared, by_urn), name)] = labels
    counts: dict[str | None, int] = {}
    for cluster, _ in queues:
        counts[cluster] = counts.get(cluster, 0) + 1
    for (cluster, name), queue in queues.items():
        if counts[cluster] > 1 and _selects_every_namespace(prop(queue.props, "spec.namespaceSelector")):
            report(
                f"ClusterQueue {name!r} selects every namespace beside the cluster's other ClusterQueues: a LocalQueue "
                "in any namespace could spend its quota; select its team's namespace (kubernetes.io/metadata.name)",
                queue.urn,
            )
    for local in (r for r in resources if _kueue(r, "LocalQueue")):
        cluster = _object_cluster(local, by_urn)
        namespace = str(prop(local.props, "metadata.namespace") or "default")
        target = str(prop(local.props, "spec.clusterQueue"))
        pointed = queues.get((cluster, target))
        labels = {**namespace_labels.get((cluster, namespace), {}), NAME_LABEL: namespace}
        if pointed is None:
            report(
                f"LocalQueue {prop(local.props, 'metadata.name')!r} points at ClusterQueue {target!r}, which the "
                "stack does not declare: name its team's ClusterQueue",
                local.urn,
            )
        elif not _selects(prop(pointed.props, "spec.namespaceSelector"), labels):
            report(
                f"LocalQueue {prop(local.props, 'metadata.name')!r} in namespace {namespace!r} points at ClusterQueue "
                f"{target!r}, which does not select that namespace: Kueue leaves its workloads inadmissible; point it "
                "at its team's ClusterQueue",
                local.urn,
            )


PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
"""controllerName of Kueue's ProvisioningRequest AdmissionCheck."""


def _checks_on(queue: PolicyResource, flavor: str) -> list[str]:
    """Names of the AdmissionChecks a ClusterQueue runs for workloads admitted on `flavor`: `spec.admissionChecks`
    (every flavor) or `admissionChecksStrategy` entries whose onFlavors list it or is empty."""
    names = [str(name) for name in as_list(prop(queue.props, "spec.admissionChecks"))]
    for entry in as_list(prop(queue.props, "spec.admissionChecksStrategy.admissionChecks")):
        flavors = [str(f) for f in as_list(prop(entry, "onFlavors"))]
        if not flavors or flavor in flavors:
            names.append(str(prop(entry, "name")))
    return names


def validate_queued_flavors(args: StackValidationArgs, report: ReportViolation) -> None:
    """A queued-provisioning pool has nodes only for a ProvisioningRequest, which Kueue makes for a workload only
    through a ProvisioningRequest AdmissionCheck on its flavor: a ClusterQueue that lists the flavor without that
    check admits workloads on quota alone, and their pods wait for nodes nobody asks for (GKE "Deploy TPUs with
    queued provisioning": the ClusterQueue's admissionChecksStrategy). A MultiKueue manager runs no such check: its
    workers do."""
    resources = list(args.resources)
    by_urn = {resource.urn: resource for resource in resources}
    managers = _dispatching_clusters(resources, by_urn)
    queued = [
        (_cluster_of(pool), labels, taints)
        for pool in resources
        if pool.resource_type == NODE_POOL and prop(pool.props, "queuedProvisioning.enabled") is True
        for machine in [pool_machine(pool.props)]
        if machine is not None
        for topology in [pool_topology(pool.props, machine)]
        if topology is not None
        for labels, taints in [(_pool_labels(pool, machine, topology), _pool_taints(pool.props))]
    ]
    checks = {
        (_object_cluster(check, by_urn), str(prop(check.props, "metadata.name") or check.name)): prop(
            check.props, "spec.controllerName"
        )
        for check in resources
        if _kueue(check, "AdmissionCheck")
    }
    queued_flavors: set[tuple[str | None, str]] = set()
    for flavor in (r for r in resources if _kueue(r, "ResourceFlavor")):
        cluster = _object_cluster(flavor, by_urn)
        wanted = {str(k): str(v) for k, v in prop(flavor.props, "spec.nodeLabels", {}).items()}
        tolerations = as_list(prop(flavor.props, "spec.tolerations"))
        if cluster not in managers and any(
            (pool_cluster == cluster or None in (cluster, pool_cluster))
            and wanted.items() <= labels.items()
            and all(_tolerated(taint, tolerations) for taint in taints)
            for pool_cluster, labels, taints in queued
        ):
            queued_flavors.add((cluster, _flavor_name(flavor)))
    for queue in (r for r in resources if _kueue(r, "ClusterQueue")):
        cluster = _object_cluster(queue, by_urn)
        for listed in (f for group in _flavor_groups(queue) for f in group):
            if (cluster, listed) not in queued_flavors:
                continue
            if not any(checks.get((cluster, name)) == PROVISIONING_CONTROLLER for name in _checks_on(queue, listed)):
                report(
                    f"ClusterQueue {prop(queue.props, 'metadata.name')!r} lists queued-provisioning flavor {listed!r} "
                    "without a ProvisioningRequest admission check on it: its workloads would be admitted with no "
                    "nodes asked for; add the check in admissionChecksStrategy (onFlavors)",
                    queue.urn,
                )


PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"


def validate_priority_classes(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """No PriorityClass of the stack is the cluster's default: `globalDefault` gives its value to every pod created
    without a priorityClassName, in every namespace (Kubernetes "Pod Priority and Preemption"), and Kueue takes a
    workload's priority from its pods' class when it names no WorkloadPriorityClass, so every team's unlabelled work
    would rank as that class and preempt by it."""
    if args.resource_type == PRIORITY_CLASS and args.props.get("globalDefault") is True:
        say(
            report,
            f"PriorityClass {prop(args.props, 'metadata.name')!r} is globalDefault: every pod without a "
            "priorityClassName in the cluster would get its priority; set globalDefault false",
        )
