"""KueueQueues: the Kueue objects that turn the TPU pools into queues, all derived from the config model.

One ResourceFlavor per pool group (its node labels, tolerations for the taints its nodes carry); ClusterQueues
whose quotas are the pools' chips (config.quota), never typed by hand, listing the flavors in one order
(config.queue_flavors): each capacity ladder's rungs together and in ladder order, which Kueue walks for a
workload of the ladder's shape (FLAVOR_FUNGIBILITY); LocalQueues where jobs are submitted;
for each queued-provisioning group a ProvisioningRequestConfig and an AdmissionCheck attached to that flavor
only; PriorityClasses for `priorityClassName`. With teams, every team has a namespace, a LocalQueue and a
ClusterQueue in one Cohort, which holds the chips no team was given so any team may borrow them.

The object builders are pure (config -> dict): the component, the workload generator and the tests share them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import tpu_catalog
from components.config.controllers import PROVISIONING_RETRY
from components.config.pools import TpuPoolConfig
from components.config.queues import (
    QueuesConfig,
    cohort_chips,
    covered_resources,
    flavor_labels,
    placed,
    queue_namespaces,
    quota,
    rung_places,
    team_borrowing,
    team_chips,
    topology_levels,
    topology_name,
)
from components.config.stack import StackConfig

KUEUE_API = "kueue.x-k8s.io/v1beta2"
MULTIKUEUE_CHECK = "multikueue"
"""The AdmissionCheck every ClusterQueue of a MultiKueue manager carries (components/multikueue.py declares it)."""
QUEUED_CLASS = "queued-provisioning.gke.io"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
FLAVOR_FUNGIBILITY = {
    "whenCanBorrow": "TryNextFlavor",
    "whenCanPreempt": "TryNextFlavor",
    "preference": "PreemptionOverBorrowing",
}
"""How Kueue walks a ladder (kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go, findFlavorForPodSets,
shouldTryNextFlavor, isPreferred): it stops at the first flavor the workload fits within the team's own quota; a
flavor it fits only by borrowing or preempting, or not at all, sends it to the next one. When no flavor fits outright
it takes the best of those it saw. PreemptionOverBorrowing ranks by borrowing first: taking back the team's own quota
on a rung (reclaiming what it lent, or preempting its lower priorities) beats borrowing on a later, costlier rung;
then fitting before reclaiming before preempting, and the earlier rung on a tie. A rung with no preemption
candidates ranks below every rung the workload could be admitted on. (BorrowingOverPreemption would rank fitting by
borrowing first: an owner would borrow downstream while others hold its own cheaper rung. The CRD's description of
`preference` has the two "more technically" orders the other way round; isPreferred is what runs.)"""
# Kueue's pod-set annotations for topology-aware scheduling (kueue v0.19.2 apis/kueue/v1beta2/topology_types.go).
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
SLICE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
"""Pods of one slice of a pod set ("required if kueue.x-k8s.io/podset-slice-required-topology is defined")."""
IMMUTABLE_FIELDS: dict[str, tuple[str, ...]] = {
    # CEL `self == oldSelf` on spec.clusterQueue (kueue v0.19.2 apis/kueue/v1beta2/localqueue_types.go).
    "LocalQueue": ("spec.clusterQueue",),
    # ValidatePriorityClassUpdate (kubernetes pkg/apis/scheduling/validation/validation.go).
    "PriorityClass": ("value", "preemptionPolicy"),
}
"""Kind -> the fields of the objects declared here that the API server refuses to change in place. The other kinds
are mutable as the stack writes them: AdmissionCheck's immutable controllerName is a constant here, ClusterQueue's
concurrentAdmissionPolicy is not set. A Topology's levels are immutable (CRD rule `self == oldSelf`), and its name says
which levels it has (topology_name), so it never changes in place. A ResourceFlavor may gain a topologyName in place,
but once it has one its topologyName, nodeLabels and tolerations are fixed (the CRD's transition rules). Neither is
replaced by the stack: Kueue holds the delete of a Topology a flavor names, and of a flavor a ClusterQueue names, with
its finalizer kueue.x-k8s.io/resource-in-use (pkg/controller/tas/topology_controller.go,
pkg/controller/core/resourceflavor_controller.go), so a replacement would hang on the delete; the change is refused at
preview instead (offline/catalogue.py evaluates the CRD rules), and docs/workloads.md says how to make it."""


def kueue_object(kind: str, name: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": KUEUE_API, "kind": kind, "metadata": metadata, "spec": spec}


def pool_tolerations(pool: TpuPoolConfig) -> list[dict[str, str]]:
    """Taints of the group's nodes a workload admitted to it must tolerate: GKE's TPU taint, the queued taint
    of queued-provisioning nodes, and the pool's own taints (a spot pool's, for one)."""
    tolerations = [{"key": tpu_catalog.TPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    return tolerations + [taint.toleration for taint in pool.node_taints]


def resource_flavor(
    pool: TpuPoolConfig, rung: tuple[str, int] | None = None, topology: str | None = None
) -> dict[str, Any]:
    """Kueue adds the node labels and tolerations to the pods it admits on this flavor. A ladder's rung carries
    its ladder and place as labels (tpu_catalog.LADDER_LABEL, RUNG_LABEL), for people and the policy that checks
    the order. A flavor with a `topology` (topologyName) has Kueue place its workloads on that Topology's levels."""
    spec: dict[str, Any] = {"nodeLabels": flavor_labels(pool), "tolerations": pool_tolerations(pool)}
    if topology is not None:
        spec["topologyName"] = topology
    flavor = kueue_object("ResourceFlavor", pool.flavor_name, spec)
    if rung is not None:
        flavor["metadata"]["labels"] = {tpu_catalog.LADDER_LABEL: rung[0], tpu_catalog.RUNG_LABEL: str(rung[1])}
    return flavor


def topology(queues: QueuesConfig) -> dict[str, Any]:
    """The Kueue Topology of the placed pool groups (queues.placement), widest level first."""
    levels = [{"nodeLabel": label} for label in topology_levels(queues)]
    return kueue_object("Topology", topology_name(queues), {"levels": levels})


def admission_check_name(pool: TpuPoolConfig) -> str:
    return f"{pool.name}-provisioning"


def provisioning_request_config(pool: TpuPoolConfig) -> dict[str, Any]:
    """Kueue asks GKE for the whole slice through a ProvisioningRequest of the queued class, and retries a request
    GKE fails as the stack decided (controllers.PROVISIONING_RETRY)."""
    return kueue_object(
        "ProvisioningRequestConfig",
        admission_check_name(pool),
        {
            "provisioningClassName": QUEUED_CLASS,
            "managedResources": [tpu_catalog.TPU_RESOURCE],
            "retryStrategy": dict(PROVISIONING_RETRY),
        },
    )


def admission_check(pool: TpuPoolConfig) -> dict[str, Any]:
    return kueue_object(
        "AdmissionCheck",
        admission_check_name(pool),
        {
            "controllerName": PROVISIONING_CONTROLLER,
            "parameters": {
                "apiGroup": KUEUE_API.split("/")[0],
                "kind": "ProvisioningRequestConfig",
                "name": admission_check_name(pool),
            },
        },
    )


def _resource_groups(
    config: StackConfig, chips: dict[str, int], borrowing: dict[str, int | None] | None = None
) -> list[dict[str, Any]]:
    """One group over every covered resource; each flavor lists all of them (a CRD rule)."""
    flavors = []
    for pool in config.queue_flavors:
        if pool.name not in chips:
            continue
        nominal = quota(config.queues, pool, chips[pool.name])
        limit = (borrowing or {}).get(pool.name)
        limits = quota(config.queues, pool, limit) if limit is not None else {}
        resources = [
            {"name": resource, "nominalQuota": amount, **({"borrowingLimit": limits[resource]} if limits else {})}
            for resource, amount in nominal.items()
        ]
        flavors.append({"name": pool.flavor_name, "resources": resources})
    return [{"coveredResources": covered_resources(config.queues), "flavors": flavors}] if flavors else []


def cluster_queue(
    config: StackConfig,
    name: str,
    chips: dict[str, int],
    *,
    namespace: str | None = None,
    borrowing: dict[str, int | None] | None = None,
) -> dict[str, Any]:
    """A ClusterQueue over every pool group; `namespace` limits it to that namespace's LocalQueues."""
    queues = config.queues
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: namespace}} if namespace else {},
        "queueingStrategy": queues.queueing_strategy,
        "preemption": {
            "reclaimWithinCohort": queues.preemption.reclaim_within_cohort,
            "withinClusterQueue": queues.preemption.within_cluster_queue,
        },
        "resourceGroups": _resource_groups(config, chips, borrowing),
    }
    if queues.teams:
        spec["cohortName"] = queues.cohort
    if queues.ladders:
        spec["flavorFungibility"] = dict(FLAVOR_FUNGIBILITY)
    # A MultiKueue manager's workloads wait for a worker to admit them (on every flavor); the provisioning of
    # queued capacity is the worker's own check.
    checks: list[dict[str, Any]] = (
        [{"name": MULTIKUEUE_CHECK}]
        if config.is_manager
        else [
            {"name": admission_check_name(pool), "onFlavors": [pool.flavor_name]}
            for pool in config.queue_flavors
            if pool.provisioning == "queued"
        ]
    )
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    return kueue_object("ClusterQueue", name, spec)


def local_queue(name: str, namespace: str, cluster_queue_name: str) -> dict[str, Any]:
    return kueue_object("LocalQueue", name, {"clusterQueue": cluster_queue_name}, namespace)


def cohort(config: StackConfig) -> dict[str, Any]:
    """The teams' cohort; it owns the chips no team was given, which every team may borrow."""
    remainder = {pool: chips for pool, chips in cohort_chips(config.queues, config.queue_pools).items() if chips > 0}
    groups = _resource_groups(config, remainder)
    return kueue_object("Cohort", config.queues.cohort, {"resourceGroups": groups} if groups else {})


def kueue_objects(config: StackConfig) -> list[dict[str, Any]]:
    """Every Kueue object of the batch-scheduling queues, each after the objects it names (`references`)."""
    queues = config.queues
    pools = config.queue_pools
    places = rung_places(queues)
    tas = [pool for pool in config.queue_flavors if placed(queues, pool)]
    objects = [topology(queues)] if tas else []
    objects += [
        resource_flavor(pool, places.get(pool.name), topology_name(queues) if pool in tas else None)
        for pool in config.queue_flavors
    ]
    for pool in config.queue_flavors:
        if pool.provisioning == "queued" and not config.is_manager:
            objects += [provisioning_request_config(pool), admission_check(pool)]
    if not pools:
        return objects
    if not queues.teams:
        everything = {pool.name: pool.total_chips for pool in pools}
        objects.append(cluster_queue(config, queues.cluster_queue, everything))
        objects.append(local_queue(queues.local_queue, queues.namespace, queues.cluster_queue))
        return objects
    objects.append(cohort(config))
    shares, borrowing = team_chips(config.queues, config.queue_pools), team_borrowing(config.queues, config.queue_pools)
    for team in queues.teams:
        objects.append(
            cluster_queue(
                config,
                team.cluster_queue,
                shares[team.name],
                namespace=team.namespace_name,
                borrowing=borrowing[team.name],
            )
        )
        objects.append(local_queue(team.local_queue, team.namespace_name, team.cluster_queue))
    return objects


def references(obj: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, name) of the Kueue objects `obj` names: a ClusterQueue's or Cohort's flavors and a ClusterQueue's
    admission checks, an AdmissionCheck's ProvisioningRequestConfig, a flavor's Topology. A ClusterQueue whose
    flavor, check or flavor's Topology does not exist yet is inactive and admits nothing (kueue v0.19.2
    pkg/cache/scheduler/clusterqueue.go, reasons FlavorNotFound, AdmissionCheckNotFound, TopologyNotFound), and a
    flavor or check in use keeps its finalizer until no ClusterQueue names it, a Topology until no flavor does
    (pkg/controller/core/resourceflavor_controller.go, admissioncheck_controller.go,
    pkg/controller/tas/topology_controller.go): so the named objects come first on `up` and go last on `destroy`."""
    spec = obj.get("spec") or {}
    names = [
        ("ResourceFlavor", flavor["name"]) for group in spec.get("resourceGroups", []) for flavor in group["flavors"]
    ]
    if obj["kind"] == "ClusterQueue":
        checks = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks", [])
        names += [("AdmissionCheck", check["name"]) for check in checks]
    if obj["kind"] == "AdmissionCheck":
        names.append((spec["parameters"]["kind"], spec["parameters"]["name"]))
    if obj["kind"] == "ResourceFlavor" and "topologyName" in spec:
        names.append(("Topology", spec["topologyName"]))
    return names


def resource_name(component: str, kind: str, name: str, namespace: str | None = None) -> str:
    """Pulumi name of an object: unique per kind, namespace and name."""
    where = f"{namespace}-" if namespace else ""
    return f"{component}-{kind.lower()}-{where}{name}"


def lifecycle_options(kind: str) -> pulumi.ResourceOptions:
    """A change to an immutable field replaces the object, deleting it first: its name stays, so a new one created
    beside it would be refused (AlreadyExists), and the kubernetes provider asks for delete-before-replace only for
    the replacements it decides itself (metadata.name, metadata.namespace), not for replaceOnChanges."""
    fields = IMMUTABLE_FIELDS.get(kind)
    if not fields:
        return pulumi.ResourceOptions()
    return pulumi.ResourceOptions(replace_on_changes=list(fields), delete_before_replace=True)


class KueueQueues(pulumi.ComponentResource):
    """The teams' namespaces, the PriorityClasses and every object of `kueue_objects`; Kueue kinds depend on
    `kueue_chart`, whose webhook validates them.

    The namespaces wait for both charts too. They hold the teams' JobSets and Jobs, whose Workloads carry a
    finalizer only Kueue's controller removes (`kueue.x-k8s.io/resource-in-use`): `pulumi destroy` deletes a
    resource before what it depends on, the children of a depended-on Chart included, so the namespaces and their
    workloads go while both controllers still run. Otherwise the controllers could go first, and a namespace and
    the Workload CRD would wait forever on finalizers nobody removes.
    """

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        provider: k8s.Provider,
        kueue_chart: pulumi.Resource,
        jobset_chart: pulumi.Resource,
        admission_checks: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:KueueQueues", name, None, opts)
        in_cluster = pulumi.ResourceOptions(parent=self, provider=provider)
        controllers = pulumi.ResourceOptions(depends_on=[kueue_chart, jobset_chart])
        self.namespaces: dict[str, k8s.core.v1.Namespace] = {
            namespace: k8s.core.v1.Namespace(
                resource_name(name, "Namespace", namespace),
                metadata={"name": namespace},
                opts=pulumi.ResourceOptions.merge(in_cluster, controllers),
            )
            for namespace in queue_namespaces(config.queues)
        }
        self.priority_classes: list[k8s.scheduling.v1.PriorityClass] = [
            k8s.scheduling.v1.PriorityClass(
                resource_name(name, "PriorityClass", priority.name),
                metadata={"name": priority.name},
                value=priority.value,
                global_default=priority.global_default,
                description=priority.description or None,
                opts=pulumi.ResourceOptions.merge(in_cluster, lifecycle_options("PriorityClass")),
            )
            for priority in config.queues.priority_classes
        ]
        self.kueue_objects: list[k8s.apiextensions.CustomResource] = []
        declared_by_name: dict[tuple[str, str], k8s.apiextensions.CustomResource] = {}
        for obj in kueue_objects(config):
            kind, metadata = obj["kind"], obj["metadata"]
            namespace_resource = self.namespaces.get(metadata.get("namespace", ""))
            depends_on: list[pulumi.Resource] = [kueue_chart]
            if namespace_resource is not None:
                depends_on.append(namespace_resource)
            depends_on += [declared_by_name[ref] for ref in references(obj) if ref in declared_by_name]
            if kind == "ClusterQueue":
                depends_on += admission_checks  # declared elsewhere: the MultiKueue check (components/multikueue.py)
            resource = k8s.apiextensions.CustomResource(
                resource_name(name, kind, metadata["name"], metadata.get("namespace")),
                api_version=obj["apiVersion"],
                kind=kind,
                metadata=metadata,
                spec=obj["spec"],
                opts=pulumi.ResourceOptions.merge(
                    pulumi.ResourceOptions.merge(in_cluster, lifecycle_options(kind)),
                    pulumi.ResourceOptions(depends_on=depends_on),
                ),
            )
            declared_by_name[(kind, metadata["name"])] = resource
            self.kueue_objects.append(resource)
        self.register_outputs({})

    def namespace_name(self, name: str) -> pulumi.Input[str]:
        """`name` as an input that waits for the namespace when this component creates it."""
        namespace = self.namespaces.get(name)
        return namespace.metadata.name if namespace is not None else name
