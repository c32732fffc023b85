"""The real platform's rules for a stack's lifecycle (first `up`, updates, upgrades, `destroy`), one entry each
with its upstream source.

Three kinds of entries:
- `Replaces`: input paths for which a type's provider answers "replace" (provider schemas: ForceNew in the
  Terraform provider that pulumi-gcp bridges, pulumi-kubernetes' per-kind lists). The engine model
  (offline/lifecycle.py) turns a change of one of them into a replacement.
- `Refuses`: fields an API server or admission webhook refuses to change in place. The CRDs' own transition
  rules (`self == oldSelf`) are not listed: offline/validate.py evaluates them from the vendored CRDs.
- `Requires`: what must hold in every plan for a first `up`, an update or a destroy to succeed: who reaches which
  endpoint and port, which certificate a client must trust, what must exist before a create, what finalizers
  wait for. Each is a check over the plan's records and outputs; it returns one line per breach.

Every type a stack declares must have a `Replaces` entry (even one with no paths, saying why): a type the
catalogue has no word on is a question to research, not a pass (tests/lifecycle/test_catalogue.py holds it to
that). The lifecycle scenarios (tests/lifecycle/) and the pull request plan diff (offline/plandiff.py) read it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from offline import webhooks
from offline.lifecycle import closure, dependents, depends_on, matches
from offline.validate import validate_update

Record = Mapping[str, Any]


@dataclass(frozen=True)
class Replaces:
    type: str
    paths: tuple[str, ...]
    source: str
    note: str = ""


@dataclass(frozen=True)
class Refuses:
    type: str
    paths: tuple[str, ...]
    source: str
    note: str = ""


@dataclass(frozen=True)
class Requires:
    id: str
    says: str
    source: str
    check: Callable[[Sequence[Record], Mapping[str, Any]], list[str]]


# --- engine rules the model in offline/lifecycle.py implements (listed here with their sources) ---------------

ENGINE = {
    "replace-protected": (
        "A resource protected in the state and in the program is never replaced: the step is refused, in preview too",
        "pulumi/pulumi pkg/resource/deploy/step_generator.go (protect check before a replacement, L1953-1972 at "
        "1b59498)",
    ),
    "delete-protected": (
        "A protected resource refuses its own delete step; destroy goes on past it, deleting its dependents first "
        "and keeping what it depends on",
        "pulumi/pulumi pkg/resource/deploy/step.go DeleteStep.Apply (L614-648); deployment_executor.go L486-545",
    ),
    "create-before-delete": (
        "A replacement creates first unless the program sets deleteBeforeReplace or the provider asks for it; "
        "providers ask only when their own diff replaces a named object, not for replaceOnChanges or a replaced "
        "provider",
        "pulumi/pulumi step_generator.go L2041-2046, L2918-2925; pulumi/pulumi-kubernetes "
        "provider/pkg/provider/provider.go Diff (L1657-1668); pulumi/pulumi-terraform-bridge "
        "pkg/tfbridge/provider.go L1275-1301",
    ),
    "provider-replaced": (
        "A kubernetes provider whose cluster (server, CA) changes is replaced unless clusterIdentifier is set and "
        "unchanged; every object it manages is then replaced, creating first (AlreadyExists)",
        "pulumi/pulumi-kubernetes provider/pkg/provider/provider.go DiffConfig (L454-569)",
    ),
    "provider-changed": (
        "A resource whose provider reference changes (another provider resource, e.g. renamed with its cluster) is "
        "replaced, creating first, when the NEW provider's DiffConfig from the old provider's settings answers "
        "replace; an aliased provider is no change. pulumi-kubernetes answers replace for a changed "
        "clusterIdentifier (another cluster, so the create meets no old name there)",
        "pulumi/pulumi pkg/resource/deploy/step_generator.go providerChanged (L2800-2880 at 1b59498), called from "
        "diff (L2921-2926); pulumi/pulumi-kubernetes provider/pkg/provider/provider.go DiffConfig (L454-569)",
    ),
    "retain-on-delete": (
        "retainOnDelete removes a resource from the state without deleting it in the cloud",
        "pulumi/pulumi pkg/resource/deploy/step.go L644-663",
    ),
    "import": (
        "The import option adopts an existing resource only when the state has no resource with that ID",
        "pulumi/pulumi pkg/resource/deploy/step_generator.go (isImport, L1113)",
    ),
    "destroy-order": (
        "Destroy deletes dependents first: dependsOn, parents after children, a provider after its resources",
        "pulumi/pulumi pkg/resource/graph/dependency_graph.go DependenciesOf (L202-207)",
    ),
}


MUTABLE_DATA = {
    "kubernetes:core/v1:ConfigMap": "enableConfigMapMutable",
    "kubernetes:core/v1:Secret": "enableSecretMutable",
}
"""The kubernetes provider settings under which a changed ConfigMap or Secret is updated, not replaced, unless the
object itself says `immutable: true` (pulumi-kubernetes provider/pkg/provider/provider.go L696-726, diff.go L27-34,
clients.IsImmutable). A Secret's `type` is replaced either way (diff.go L155-157)."""


class Catalogue:
    """The rules as the engine model asks for them (offline.lifecycle.Rules)."""

    def __init__(self, replaces: Sequence[Replaces], refuses: Sequence[Refuses], requires: Sequence[Requires]):
        self.replaces = {entry.type: entry for entry in replaces}
        self.refusals = {entry.type: entry for entry in refuses}
        self.requires = list(requires)

    def replaces_on(self, resource: Record, changed: Sequence[str], provider: Record | None) -> list[str]:
        entry = self.replaces.get(str(resource["type"]))
        if entry is None:
            raise KeyError(f"the catalogue has no replacement rule for {resource['type']}: research it")
        if entry.type == "pulumi:providers:kubernetes" and resource["inputs"].get("clusterIdentifier"):
            # DiffConfig: an unchanged clusterIdentifier clears every replacement.
            return [path for path in changed if path == "clusterIdentifier"]
        paths = entry.paths
        for kind, setting in MUTABLE_DATA.items():
            mutable = str((provider or {}).get("inputs", {}).get(setting)).lower() == "true"
            if entry.type == kind and mutable and resource["inputs"].get("immutable") is not True:
                paths = tuple(p for p in paths if p not in ("data", "binaryData", "stringData"))
        return [path for path in changed if any(matches(path, p) for p in paths)]

    def refuses(self, old: Record, new: Record, changed: Sequence[str]) -> list[str]:
        reasons = validate_update(old["inputs"], new["inputs"]) if str(new["type"]).startswith("kubernetes:") else []
        entry = self.refusals.get(str(new["type"]))
        if entry is not None:
            reasons += [f"{p}: immutable ({entry.source})" for p in changed if any(matches(p, w) for w in entry.paths)]
        return reasons

    def breaches(self, records: Sequence[Record], outputs: Mapping[str, Any]) -> list[str]:
        """One line per `Requires` entry a plan breaks."""
        token = _ORDERS.set({})
        try:
            return [f"{rule.id}: {line}" for rule in self.requires for line in rule.check(records, outputs)]
        finally:
            _ORDERS.reset(token)


# --- helpers for the checks ------------------------------------------------------------------------------------


def of_type(records: Sequence[Record], suffix: str) -> list[Record]:
    return [r for r in records if str(r["type"]).endswith(suffix)]


def by_urn(records: Sequence[Record]) -> dict[str, Record]:
    return {str(r["urn"]): r for r in records}


def writers(records: Sequence[Record]) -> dict[str, str | None]:
    """URN -> the kubernetes provider that writes the resource (its own, else its parent's, as a chart's objects):
    which cluster it is in, in a stack of several (a MultiKueue manager and its workers)."""
    return webhooks.cluster_of(records)


def cluster_chart(records: Sequence[Record], name: str) -> Callable[[Record], Record | None]:
    """record -> the `name` chart of its cluster: the stack's own `<name>-chart` or a MultiKueue worker's
    `<worker>-<name>-chart`, whichever the same provider writes."""
    written_by = writers(records)
    charts = {
        written_by[str(r["urn"])]: r
        for r in of_type(records, ":Chart")
        if r["name"] == f"{name}-chart" or str(r["name"]).endswith(f"-{name}-chart")
    }
    return lambda record: charts.get(written_by.get(str(record["urn"])))


_ORDERS: ContextVar[dict[int, tuple[Sequence[Record], dict[str, set[str]], dict[str, set[str]]]] | None] = ContextVar(
    "catalogue_orders", default=None
)
"""While `Catalogue.breaches` checks one plan: its dependency edges and what waits for each resource, worked out once
for all the checks (each asks whether one resource waits for another, many times)."""


def waits_for(records: Sequence[Record], record: Record, other: Record | None) -> bool:
    if other is None:
        return False
    orders = _ORDERS.get()
    if orders is None:
        return depends_on(by_urn(records), str(record["urn"]), str(other["urn"]))
    cached = orders.get(id(records))
    if cached is None or cached[0] is not records:
        cached = (records, dependents(by_urn(records)), {})
        orders[id(records)] = cached
    _records, edges, after = cached
    urn = str(other["urn"])
    if urn not in after:
        after[urn] = closure([urn], edges)
    return str(record["urn"]) in after[urn]


# --- Replaces: what each type's provider replaces on --------------------------------------------------------------

_TF = "hashicorp/terraform-provider-google-beta v8.0.0 (bridged by pulumi-gcp 10.x), google-beta/services/"
_K8S_DIFF = "pulumi/pulumi-kubernetes provider/pkg/provider/diff.go forceNew table (L23-251 at 9497796)"
# Every Kubernetes kind is replaced when its name or namespace changes (diff.go L205-210).
_NAMED = ("metadata.name", "metadata.namespace")
_KUEUE = "kubernetes-sigs/kueue v0.19.2 (8eab68778fc1b52affe165fdf5af29d1e9b4f3cb) "
_COMPONENT = "a ComponentResource of this program: no provider, nothing to replace or refuse"


def _k8s(kind: str, *paths: str) -> Replaces:
    return Replaces(f"kubernetes:{kind}", (*_NAMED, *paths), _K8S_DIFF)


REPLACES = [
    Replaces(
        "gcp:container/cluster:Cluster",
        (
            "name", "location", "project", "network", "subnetwork", "enableAutopilot", "initialNodeCount",
            "datapathProvider", "networkingMode", "defaultMaxPodsPerNode", "enableTpu", "description",
            "clusterIpv4Cidr", "enableKubernetesAlpha", "ipAllocationPolicy",
            "privateClusterConfig.masterIpv4CidrBlock", "privateClusterConfig.privateEndpointSubnetwork",
            "nodeConfig.serviceAccount", "nodeConfig.oauthScopes", "nodePools",
        ),
        _TF + "container/resource_container_cluster.go (ForceNew fields; nodeConfig nested as in node_config.go)",
        "privateClusterConfig.enablePrivateNodes, masterAuthorizedNetworksConfig, controlPlaneEndpointsConfig, "
        "releaseChannel and workloadIdentityConfig update in place",
    ),
    Replaces(
        "gcp:container/nodePool:NodePool",
        (
            "name", "location", "cluster", "project", "initialNodeCount", "maxPodsPerNode", "queuedProvisioning",
            "placementPolicy.policyName", "networkConfig.podRange", "networkConfig.createPodRange",
            "nodeConfig.spot", "nodeConfig.preemptible", "nodeConfig.flexStart", "nodeConfig.maxRunDuration",
            "nodeConfig.reservationAffinity", "nodeConfig.serviceAccount", "nodeConfig.oauthScopes",
            "nodeConfig.metadata", "nodeConfig.guestAccelerators", "nodeConfig.localSsdCount",
            "nodeConfig.minCpuPlatform", "nodeConfig.shieldedInstanceConfig",
        ),
        _TF + "container/resource_container_node_pool.go and node_config.go (ForceNew fields)",
        "machineType, disk, labels, taints, resourceLabels, kubeletConfig, autoscaling, management, nodeLocations, "
        "upgradeSettings "
        "update in place; "
        "placementPolicy.tpuTopology is neither ForceNew nor updated: see Refuses",
    ),
    Replaces(
        "gcp:serviceaccount/account:Account",
        ("accountId", "project"),
        _TF + "resourcemanager/resource_google_service_account.go L90",
    ),
    Replaces(
        "gcp:projects/iAMMember:IAMMember",
        ("project", "role", "member", "condition"),
        _TF + "tpgiamresource/resource_iam_member.go L64-112 (every field ForceNew)",
    ),
    Replaces(
        "gcp:serviceaccount/iAMMember:IAMMember",
        ("serviceAccountId", "role", "member", "condition"),
        _TF + "resourcemanager/iam_service_account.go L37-41 with resource_iam_member.go",
    ),
    Replaces(
        "gcp:storage/bucketIAMMember:BucketIAMMember",
        ("bucket", "role", "member", "condition"),
        _TF + "storage/iam_storage_bucket.go L33-36 with resource_iam_member.go",
    ),
    Replaces(
        "gcp:storage/bucket:Bucket",
        ("name", "location", "project", "enableObjectRetention", "customPlacementConfig", "hierarchicalNamespace"),
        _TF + "storage/resource_storage_bucket.go L80, L132, L193, L624",
    ),
    Replaces(
        "gcp:compute/firewall:Firewall",
        ("name", "direction", "project", "params"),
        _TF + "compute/resource_compute_firewall.go L246, L259-264, L302",
    ),
    Replaces(
        "gcp:compute/router:Router",
        ("name", "network", "region", "project", "encryptedInterconnectRouter", "nccGateway", "params"),
        _TF + "compute/resource_compute_router.go L275, L292, L319",
    ),
    Replaces(
        "gcp:compute/routerNat:RouterNat",
        ("name", "router", "region", "project", "type", "endpointTypes", "initialNatIps"),
        _TF + "compute/resource_compute_router_nat.go L304, L312, L471",
    ),
    Replaces(
        "gcp:compute/futureReservation:FutureReservation",
        ("name", "zone", "project", "aggregateReservation", "params", "shareSettings.shareType"),
        _TF + "compute/resource_compute_future_reservation.go L144, L156, L196-260",
        "the provider plans a timeWindow change as an update, which Compute refuses for a submitted calendar-mode "
        "request: the stack replaces it on any change (replaceOnChanges '*')",
    ),
    Replaces(
        "gcp:projects/service:Service",
        ("service", "project"),
        _TF + "resourcemanager/resource_google_project_service.go (service, project ForceNew)",
        "disableOnDestroy false: a destroy removes it from the state and leaves the API on",
    ),
    Replaces(
        "gcp:compute/network:Network",
        ("name", "project", "autoCreateSubnetworks", "description", "networkProfile", "params"),
        _TF + "compute/resource_compute_network.go (ForceNew fields)",
        "mtu and routingMode update in place",
    ),
    Replaces(
        "gcp:compute/subnetwork:Subnetwork",
        ("name", "network", "region", "project", "description", "params", "reservedInternalRange"),
        _TF + "compute/resource_compute_subnetwork.go (ForceNew fields; ipCidrRange replaces only when it shrinks)",
        "ipCidrRange widens in place; secondary ranges update in place, but see Refuses",
    ),
    Replaces(
        "gcp:compute/resourcePolicy:ResourcePolicy",
        (
            "region", "project", "workloadPolicy", "groupPlacementPolicy.tpuTopology",
            "groupPlacementPolicy.gpuTopology", "diskConsistencyGroupPolicy.enabled",
        ),
        "hashicorp/terraform-provider-google-beta v7.45.0 google-beta/services/compute/"
        "resource_compute_resource_policy.go (ForceNew: region, project, every field of workload_policy)",
        "name and description are planned as an update, a PATCH of .../resourcePolicies/{{name}} with the new name, "
        "and Compute updates no workload policy (\"To make changes in a workload policy, you must create a new one\"): "
        "the stack replaces one on a new name (replaceOnChanges 'name'), deleting first, and writes the description "
        "once (ignoreChanges); deletionPolicy is client-side (clientSideFields, L785): its change is only read back",
    ),
    Replaces("gcp:monitoring/alertPolicy:AlertPolicy", ("project",),
             _TF + "monitoring/resource_monitoring_alert_policy.go L133"),
    Replaces("gcp:monitoring/dashboard:Dashboard", ("project",),
             _TF + "monitoring/resource_monitoring_dashboard.go L99"),
    # The kubernetes provider resource: replaced per its DiffConfig (offline/lifecycle.py, ENGINE["provider-replaced"]).
    Replaces(
        "pulumi:providers:kubernetes",
        ("kubeconfig", "context", "cluster"),
        "pulumi/pulumi-kubernetes provider/pkg/provider/provider.go DiffConfig (L454-569)",
        "no replacement while clusterIdentifier is set and unchanged",
    ),
    _k8s("core/v1:Secret", "type", "data", "stringData"),
    _k8s("core/v1:ConfigMap", "data", "binaryData"),
    _k8s("core/v1:Service", "spec.clusterIP"),
    _k8s("core/v1:Namespace"),
    _k8s("core/v1:ServiceAccount"),
    _k8s("apps/v1:Deployment", "spec.selector"),
    _k8s("batch/v1:Job", "spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
    _k8s("rbac.authorization.k8s.io/v1:ClusterRole"),
    _k8s("rbac.authorization.k8s.io/v1:Role"),
    _k8s("rbac.authorization.k8s.io/v1:ClusterRoleBinding", "roleRef"),
    _k8s("rbac.authorization.k8s.io/v1:RoleBinding", "roleRef"),
    _k8s("networking.k8s.io/v1:NetworkPolicy"),
    _k8s("scheduling.k8s.io/v1:PriorityClass"),
    _k8s("apiextensions.k8s.io/v1:CustomResourceDefinition"),
    _k8s("admissionregistration.k8s.io/v1:MutatingWebhookConfiguration"),
    _k8s("admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration"),
    _k8s("apiregistration.k8s.io/v1:APIService"),
    _k8s("monitoring.googleapis.com/v1:PodMonitoring"),
    _k8s("jobset.x-k8s.io/v1alpha2:JobSet"),
    Replaces(
        "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
        _NAMED,
        _K8S_DIFF,
        "a custom kind: the provider replaces only on a new name or namespace. Size, replicas, templates and the "
        "rollout strategy update in place: the LWS controller rolls a changed leaderWorkerTemplate out group by "
        "group (its revision hashes spec.leaderWorkerTemplate and spec.networkConfig; kubernetes-sigs/lws v0.10.0 "
        "pkg/utils/revision/revision_utils.go getPatch) and scales replicas; the v0.10.0 CRD has no transition "
        "rule; no finalizer (pkg/controllers), so a destroy never waits on the controller",
    ),
    *(
        _k8s(f"kueue.x-k8s.io/v1beta2:{kind}")
        for kind in (
            "ClusterQueue", "LocalQueue", "Cohort", "ResourceFlavor", "AdmissionCheck", "ProvisioningRequestConfig",
            "WorkloadPriorityClass", "Topology",
        )
    ),
    *(
        Replaces(
            f"kubernetes:kueue.x-k8s.io/v1beta2:{kind}",
            _NAMED,
            _K8S_DIFF,
            "a custom kind: the provider replaces only on a new name or namespace. Kueue v0.19.2 has no webhook for "
            "it (the chart's templates/webhook/manifests.yaml lists none for multikueueclusters or "
            "multikueueconfigs) and its CRD no transition rule: the only rules are create-time ones "
            "(MultiKueueCluster clusterSource: exactly one of kubeConfig, clusterProfileRef; MultiKueueConfig "
            "clusters unique), which offline/validate.py evaluates, so a worker list or kubeconfig location changes "
            "in place (the CRDs as vendored in vendor/crds/kueue from " + _KUEUE + "config/components/crd/bases)",
        )
        for kind in ("MultiKueueCluster", "MultiKueueConfig")
    ),
    Replaces("kubernetes:helm.sh/v4:Chart", (), "pulumi/pulumi-kubernetes provider/pkg/provider/helm/v4/chart.go",
             "a remote component: its rendered objects are diffed one by one as its children"),
    *(
        Replaces(f"tpu-stack:index:{component}", (), _COMPONENT)
        for component in (
            "GkeCluster", "TpuSlicePools", "ProjectServices", "StackNetwork", "JobSetInstall", "KueueInstall",
            "KueueQueues", "NamespacePolicies",
            "ControllerMetrics", "Bucket", "WorkloadIdentity", "Saxml", "Monitoring", "LwsInstall", "LlmServing",
            "MultiKueueManager", "MultiKueueWorker", "WorkloadServiceAccounts",
        )
    ),
]  # fmt: skip

# --- Refuses: changes an API or a provider does not apply in place ----------------------------------------------

REFUSES = [
    Refuses(
        "gcp:compute/subnetwork:Subnetwork",
        ("secondaryIpRanges",),
        "cloud.google.com/kubernetes-engine/docs/concepts/alias-ips (a cluster's secondary ranges cannot be changed "
        "or removed while the cluster uses them); Compute refuses to modify a secondary range in use",
        "a pod or Service range is chosen once, with the cluster (ipAllocationPolicy is ForceNew): the address plan "
        "sizes it for the stack's largest",
    ),
    Refuses(
        "gcp:container/nodePool:NodePool",
        ("placementPolicy.tpuTopology", "placementPolicy.type"),
        _TF + "container/resource_container_node_pool.go: placement_policy.tpu_topology is not ForceNew and "
        "nodePoolUpdate has no placement_policy case",
        "planned as an update the provider never sends: the pool keeps its old slice shape (permanent diff)",
    ),
    Refuses(
        "gcp:compute/futureReservation:FutureReservation",
        (
            "timeWindow",
            "planningStatus",
            "reservationName",
            "autoDeleteAutoCreatedReservations",
            "specificReservationRequired",
            "reservationMode",
        ),
        "Compute Engine calendar-mode future reservations: a submitted request cannot be modified, cancelled or "
        "deleted (cloud.google.com/compute/docs/instances/future-reservations-calendar-mode-overview)",
    ),
    Refuses(
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
        ("spec.concurrentAdmissionPolicy",),
        _KUEUE + "pkg/webhooks/clusterqueue_webhook.go ValidateClusterQueueUpdate: of a ClusterQueue's spec only "
        "concurrentAdmissionPolicy is immutable (the CRD has no transition rule on it)",
        "the stack sets no concurrentAdmissionPolicy: quotas, cohorts and the flavor list (a rung added to or removed "
        "from a ladder) change in place",
    ),
    Refuses(
        "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
        ("spec.replicatedJobs", "spec.managedBy"),
        "kubernetes-sigs/jobset v0.12.0 pkg/webhooks/jobset_webhook.go ValidateUpdate (replicatedJobs may change "
        "only while suspended; managedBy never); failurePolicy, successPolicy, startupPolicy, network and "
        "volumeClaimPolicies are the CRD's transition rules, which offline/validate.py evaluates",
    ),
    Refuses(
        "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
        ("spec.leaderWorkerTemplate.subGroupPolicy",),
        "kubernetes-sigs/lws v0.10.0 pkg/webhooks/leaderworkerset_webhook.go ValidateUpdate (subGroupSize is "
        "immutable and cannot be added or removed; failurePolicy Fail); the stack sets no subGroupPolicy",
    ),
]

# --- Requires: what every plan must hold for `up` and `destroy` to work ------------------------------------------


def _objects_wait_for_their_webhooks(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """Every object a fail-closed webhook intercepts (offline/webhooks.py derives them from the plan) waits for the
    webhook's backend: the chart that renders the Service the webhook calls, or that Service. A chart's own objects
    are the chart's to order; another chart's objects wait through their chart. Waiting for the backend is also what
    deletes the object first on destroy."""
    plan = webhooks.Plan.of(records)
    by_urn_ = by_urn(records)
    services = {
        (plan.clusters[str(r["urn"])], r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"]): r
        for r in of_type(records, "core/v1:Service")
    }
    late: dict[tuple[str, str], list[str]] = {}
    problems = []
    for hook in webhooks.fail_closed(records):
        if hook.service is None:
            met = [str(r["name"]) for r in records if webhooks.intercepts(hook, r, plan)]
            if met:
                problems.append(
                    f"{hook.name}: calls {hook.url}, outside the cluster, which the stack cannot wait for; "
                    f"{', '.join(met)} {'fails' if len(met) == 1 else 'fail'} to be created while it does not answer"
                )
            continue
        service = services.get((hook.cluster, *hook.service))
        if service is None:
            problems.append(f"{hook.name}: calls Service {'/'.join(hook.service)}, which the stack does not declare")
            continue
        backend = by_urn_[str(service["parent"])] if service.get("rendered") else service
        for record in records:
            owner = str(record["parent"]) if record.get("rendered") else None
            if owner == backend["urn"] or not webhooks.intercepts(hook, record, plan):
                continue
            waiter = by_urn_[owner] if owner else record
            if not waits_for(records, waiter, backend):
                late.setdefault((str(waiter["name"]), str(backend["name"])), []).append(hook.name.split(" ")[-1])
    problems += [
        f"{waiter} is created before {backend} serves the webhooks that intercept it ({', '.join(sorted(set(hooks)))})"
        for (waiter, backend), hooks in sorted(late.items())
    ]
    return problems


READY_MEANS_SERVING = {
    "kueue": "kubernetes-sigs/kueue v0.19.2 cmd/kueue/main.go (readyz: certificates ready, then the webhook server's "
    "StartedChecker)",
    "jobset": "kubernetes-sigs/jobset v0.12.0 main.go (readyz: certificates ready, then the webhook server's "
    "StartedChecker)",
}
"""Charts (by name, the last part of their reference, wherever they are pulled or mirrored from) whose controller's
own readiness check includes its webhook server, read in their sources; any other backend is ready for what waits on
it only with a readiness probe on the webhook's own port. By chart, not image: a mirrored image is the same
controller."""


def _chart_name(record: Record | None) -> str:
    """`kueue` of a Chart record whose chart is `oci://registry.k8s.io/kueue/charts/kueue`."""
    chart = str(((record or {}).get("inputs") or {}).get("chart") or "")
    return chart.rstrip("/").rsplit("/", 1)[-1]


def _webhook_backends_ready_when_serving(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """Waiting for a chart waits for its Deployments to be ready (the provider's await), which tells that a webhook
    serves only when the pods' readiness covers the webhook server: a tcpSocket probe on its port, or a controller
    whose readiness checks it (READY_MEANS_SERVING). LWS v0.10.0's `/readyz` is a plain ping (cmd/main.go), ready
    before its webhooks are registered."""
    services = {
        (r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"]): r
        for r in of_type(records, "core/v1:Service")
        if r.get("rendered")
    }
    problems = set()
    charts = by_urn(records)
    for hook in webhooks.fail_closed(records):
        service = services.get(hook.service) if hook.service else None
        if service is None:
            continue
        spec = service["inputs"]["spec"]
        targets = {p.get("targetPort", p["port"]) for p in spec.get("ports") or ()}
        for deployment in of_type(records, "apps/v1:Deployment"):
            template = deployment["inputs"]["spec"]["template"]
            if deployment.get("parent") != service.get("parent") or not (
                (spec.get("selector") or {}).items() <= (template["metadata"].get("labels") or {}).items()
            ):
                continue
            for container in template["spec"]["containers"]:
                ports = {p["containerPort"]: p.get("name") for p in container.get("ports") or ()}
                served = [port for port, name in ports.items() if port in targets or name in targets]
                probe = (container.get("readinessProbe") or {}).get("tcpSocket") or {}
                if (
                    served
                    and _chart_name(charts.get(str(deployment.get("parent")))) not in READY_MEANS_SERVING
                    and probe.get("port")
                    not in (
                        *served,
                        *(ports[p] for p in served),
                    )
                ):
                    problems.add(
                        f"{deployment['name']}: ready before its webhook server listens on {served[0]}, so waiting "
                        "for its chart does not wait for the webhooks"
                    )
    return sorted(problems)


def _token_secrets_wait_for_their_account(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    written_by = writers(records)
    problems = []
    for secret in records:
        inputs = secret.get("inputs") or {}
        if inputs.get("type") != "kubernetes.io/service-account-token" or secret.get("rendered"):
            continue
        metadata = inputs.get("metadata") or {}
        account = (metadata.get("annotations") or {}).get("kubernetes.io/service-account.name")
        owners = [
            r
            for r in of_type(records, "core/v1:ServiceAccount")
            if (r["inputs"].get("metadata") or {}).get("name") == account
            and (r["inputs"].get("metadata") or {}).get("namespace") == metadata.get("namespace")
            and written_by[str(r["urn"])] == written_by[str(secret["urn"])]
        ]
        if len(owners) != 1 or not waits_for(records, secret, owners[0]):
            problems.append(f"{secret['name']} may be created before its ServiceAccount {account!r}")
    return problems


def _queue_namespaces_go_before_kueue(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    kueue, written_by = cluster_chart(records, "kueue"), writers(records)
    queued = {
        (written_by[str(r["urn"])], (r["inputs"].get("metadata") or {}).get("namespace"))
        for r in of_type(records, ":LocalQueue")
    }
    return [
        f"{r['name']}: namespace {r['inputs']['metadata']['name']} (Kueue workloads) may outlive the Kueue "
        "controller on destroy"
        for r in of_type(records, "core/v1:Namespace")
        if not r.get("rendered")
        and (written_by[str(r["urn"])], r["inputs"]["metadata"]["name"]) in queued
        and not waits_for(records, r, kueue(r))
    ]


def _protected_stacks_protect_everything(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    if not records or not any(r.get("protect") for r in records if str(r["type"]).endswith(":Cluster")):
        return []  # not a protected stack
    return [
        f"{r['name']} is not protected: destroy deletes it before the protected cluster stops"
        for r in records
        if not r.get("protect")
    ]


def _slice_shapes_replace_pools(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    return [
        f"{r['name']}: a new topology would be planned as an update the provider never applies"
        for r in of_type(records, ":NodePool")
        if (r["inputs"].get("placementPolicy") or {}).get("tpuTopology")
        and not any(matches("placementPolicy.tpuTopology", p) for p in r.get("replaceOnChanges") or ())
    ]


def _clients_reach_the_control_plane(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """CI on a hosted runner (any public address) and operators reach the DNS endpoint with Google credentials;
    the kubeconfig names it and trusts the public roots (tests/components/test_cluster_access.py reads it)."""
    problems = []
    for cluster in of_type(records, "container/cluster:Cluster"):
        endpoints = cluster["inputs"].get("controlPlaneEndpointsConfig") or {}
        if not (endpoints.get("dnsEndpointConfig") or {}).get("allowExternalTraffic"):
            problems.append(f"{cluster['name']}: the DNS endpoint refuses traffic from outside Google Cloud (CI)")
        authorized = cluster["inputs"].get("masterAuthorizedNetworksConfig")
        if authorized is not None and not authorized.get("cidrBlocks"):
            problems.append(f"{cluster['name']}: authorized networks on with no CIDR admit only the nodes")
    for provider in of_type(records, "pulumi:providers:kubernetes"):
        if not provider["inputs"].get("clusterIdentifier"):
            problems.append(f"{provider['name']}: no clusterIdentifier, a new kubeconfig replaces every object")
    return problems


def _backend_ports(records: Sequence[Record]) -> dict[tuple[str, int], str]:
    """(namespace, pod port) -> what the API server calls there: the rendered charts' webhooks and APIServices,
    through their Services' target ports (a named one resolved on the Deployment the Service selects)."""
    services = {
        (r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"]): r["inputs"]["spec"]
        for r in of_type(records, "core/v1:Service")
    }
    deployments = [r["inputs"] for r in of_type(records, "apps/v1:Deployment") if r.get("rendered")]
    calls: list[tuple[str, Mapping[str, Any]]] = []
    for record in of_type(records, "WebhookConfiguration"):
        calls += [
            (f"{record['name']} {w['name']}", w["clientConfig"].get("service") or {})
            for w in record["inputs"]["webhooks"]
        ]
    calls += [(r["name"], r["inputs"]["spec"].get("service") or {}) for r in of_type(records, ":APIService")]
    found: dict[tuple[str, int], str] = {}
    for who, service in calls:
        spec = services.get((service.get("namespace"), service.get("name")))
        if spec is None:
            continue
        port = next((p for p in spec["ports"] if p["port"] == service.get("port", 443)), None)
        target = port and port.get("targetPort", port["port"])
        if isinstance(target, str):
            target = next(
                (
                    c_port["containerPort"]
                    for d in deployments
                    if spec.get("selector", {}).items() <= d["spec"]["template"]["metadata"]["labels"].items()
                    for c in d["spec"]["template"]["spec"]["containers"]
                    for c_port in c.get("ports") or ()
                    if c_port.get("name") == target
                ),
                None,
            )
        if isinstance(target, int):
            found.setdefault((str(service["namespace"]), target), who)
    return found


def _control_plane_reaches_webhooks(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """Every port the API server calls is open to it: by a firewall rule on private nodes (GKE's own admits 443 and
    10250 only), and by the namespace's NetworkPolicies (default deny everywhere)."""
    private = any(
        (r["inputs"].get("privateClusterConfig") or {}).get("enablePrivateNodes")
        for r in of_type(records, "container/cluster:Cluster")
    )
    opened = {
        int(port)
        for r in of_type(records, "compute/firewall:Firewall")
        if r["inputs"].get("direction") == "INGRESS" and r["inputs"].get("sourceRanges")
        for allow in r["inputs"].get("allows") or ()
        if allow.get("protocol") == "tcp"
        for port in allow.get("ports") or ()
    }
    admitted = {
        (r["inputs"]["metadata"].get("namespace"), p.get("port"))
        for r in of_type(records, "networking.k8s.io/v1:NetworkPolicy")
        for rule in r["inputs"]["spec"].get("ingress") or ()
        if not rule.get("from")
        for p in rule.get("ports") or ()
    }
    problems = []
    for (namespace, port), who in sorted(_backend_ports(records).items()):
        if private and port not in (443, 10250) and port not in opened:
            problems.append(f"{who}: no firewall rule lets the control plane reach port {port} on private nodes")
        if (namespace, port) not in admitted:
            problems.append(f"{who}: no NetworkPolicy in {namespace} admits port {port}")
    return problems


def _controller_owned_secret_data(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """A chart's webhook cert Secret is filled by its controller's cert rotator; applying it again with the chart's
    own (empty) data conflicts under server-side apply, so the stack neither sends nor diffs its data."""
    return [
        f"{r['name']}: applies data its cert rotator owns"
        for r in of_type(records, "core/v1:Secret")
        if r.get("rendered") and "data" in r["inputs"]
    ]


CONSTANT_CONFIG = {
    "lws": "LWS v0.10.0's chart has no config checksum (templates/manager/deployment.yaml), and its ConfigMap varies "
    "only with enableCertManager and gangSchedulingManagement (templates/manager/configmap.yaml), which the stack "
    "sets once (components/lws_install.py chart_values): a chart upgrade changes the image, which rolls the pods",
}
"""Charts whose controller config the stack never changes, so their pods need no checksum to read a new one."""

_SHA256 = re.compile(r"[0-9a-f]{64}")


def _controllers_roll_on_config(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """A controller reads its config file once, at start (Kueue v0.19.2 cmd/kueue/main.go apply -> config.Load;
    read nowhere else): updating the ConfigMap in place (enableConfigMapMutable) leaves the running pods on
    the old config. The charts roll them with a checksum of the ConfigMap on the pod template (Kueue's
    charts.kueue.x-k8s.io/config-checksum, JobSet's jobset.x-k8s.io/config-hash), which changes with it."""
    charts = by_urn(records)
    config_maps = {
        (r.get("parent"), r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"])
        for r in of_type(records, "core/v1:ConfigMap")
        if r.get("rendered")
    }
    problems = []
    for deployment in of_type(records, "apps/v1:Deployment"):
        if not deployment.get("rendered"):
            continue
        if _chart_name(charts.get(str(deployment.get("parent")))) in CONSTANT_CONFIG:
            continue
        namespace = deployment["inputs"]["metadata"].get("namespace")
        template = deployment["inputs"]["spec"]["template"]
        annotations = (template.get("metadata") or {}).get("annotations") or {}
        if any(_SHA256.fullmatch(str(value)) for value in annotations.values()):
            continue
        for volume in template["spec"].get("volumes") or ():
            name = (volume.get("configMap") or {}).get("name")
            if name and (deployment.get("parent"), namespace, name) in config_maps:
                problems.append(
                    f"{deployment['name']}: mounts ConfigMap {name} the stack writes, with no config checksum on its "
                    "pod template: a changed config is not read until the pods restart"
                )
    return problems


def _alerts_accept_series_not_yet_scraped(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    return [
        f"{r['name']}: its query reads series Managed Prometheus has not scraped yet on a new project"
        for r in of_type(records, "monitoring/alertPolicy:AlertPolicy")
        for condition in r["inputs"].get("conditions") or ()
        if "kueue_" in str((condition.get("conditionPrometheusQueryLanguage") or {}).get("query", ""))
        and not condition["conditionPrometheusQueryLanguage"].get("disableMetricValidation")
    ]


def _zero_values(value: Any, path: str = "") -> list[str]:
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _zero_values(item, f"{path}.{key}" if path else key)]
    if isinstance(value, list):
        return [path] if not value else [p for i, item in enumerate(value) for p in _zero_values(item, f"{path}[{i}]")]
    return [path] if (value in (0, "", False) and not isinstance(value, float)) or value == {} else []


def _dashboards_in_api_form(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    return [
        f"{r['name']}: {path} is a zero value the API drops, so every update diffs"
        for r in of_type(records, "monitoring/dashboard:Dashboard")
        for path in _zero_values(json.loads(r["inputs"]["dashboardJson"]))
    ]


def _kueue_inputs(records: Sequence[Record], kind: str) -> list[tuple[Record, Mapping[str, Any]]]:
    return [(r, r["inputs"]) for r in of_type(records, f"kueue.x-k8s.io/v1beta2:{kind}") if not r.get("rendered")]


def _flavor_names(spec: Mapping[str, Any]) -> list[list[str]]:
    """Flavor names of each resource group, in order."""
    return [[str(f["name"]) for f in group.get("flavors") or ()] for group in spec.get("resourceGroups") or ()]


def _ladder_order(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """Every ClusterQueue that names a rung of a ladder names all of them, in one resource group, in rung order,
    and moves on to the next flavor rather than borrow or preempt (whenCanBorrow, whenCanPreempt TryNextFlavor),
    preferring its own quota on an earlier rung to borrowing on a later one (preference PreemptionOverBorrowing)."""
    ladders: dict[str, dict[int, str]] = {}
    for _record, flavor in _kueue_inputs(records, "ResourceFlavor"):
        labels = flavor["metadata"].get("labels") or {}
        if "tpu-stack/ladder" in labels:  # components/tpu_catalog.py LADDER_LABEL, RUNG_LABEL
            places = ladders.setdefault(labels["tpu-stack/ladder"], {})
            places[int(labels["tpu-stack/rung"])] = flavor["metadata"]["name"]
    problems = []
    for record, queue in _kueue_inputs(records, "ClusterQueue"):
        groups = _flavor_names(queue["spec"])
        for ladder, places in sorted(ladders.items()):
            rungs = [places[place] for place in sorted(places)]
            holding = [group for group in groups if set(rungs) & set(group)]
            if not holding:
                continue
            listed = [name for name in holding[0] if name in rungs]
            if len(holding) > 1 or listed != rungs:
                problems.append(f"{record['name']}: lists ladder {ladder} as {listed}, not {rungs}")
            fungibility = queue["spec"].get("flavorFungibility") or {}
            if (fungibility.get("whenCanBorrow"), fungibility.get("whenCanPreempt")) != ("TryNextFlavor",) * 2:
                problems.append(f"{record['name']}: stops at a rung it fits only by borrowing or preempting")
            elif fungibility.get("preference") != "PreemptionOverBorrowing":
                problems.append(f"{record['name']}: borrows on a later rung before taking back its own on an earlier")
    return problems


def _one_group_per_resource(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    problems = []
    for kind in ("ClusterQueue", "Cohort"):
        for record, obj in _kueue_inputs(records, kind):
            covered = [r for group in obj["spec"].get("resourceGroups") or () for r in group["coveredResources"]]
            flavors = [name for group in _flavor_names(obj["spec"]) for name in group]
            twice = sorted({r for r in covered if covered.count(r) > 1} | {f for f in flavors if flavors.count(f) > 1})
            if twice:
                problems.append(f"{record['name']}: {', '.join(twice)} in more than one place of its resource groups")
    return problems


def _checks_on_listed_flavors(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    problems = []
    for record, queue in _kueue_inputs(records, "ClusterQueue"):
        listed = {name for group in _flavor_names(queue["spec"]) for name in group}
        for check in (queue["spec"].get("admissionChecksStrategy") or {}).get("admissionChecks") or ():
            unknown = sorted(set(check.get("onFlavors") or ()) - listed)
            if unknown:
                problems.append(f"{record['name']}: admission check {check['name']} on flavors it lacks: {unknown}")
    return problems


def _queues_after_their_flavors(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    written_by = writers(records)
    named = {(written_by[str(r["urn"])], obj["kind"], obj["metadata"]["name"]): r
             for kind in ("ResourceFlavor", "AdmissionCheck") for r, obj in _kueue_inputs(records, kind)}  # fmt: skip
    problems = []
    for record, queue in _kueue_inputs(records, "ClusterQueue"):
        spec = queue["spec"]
        cluster = written_by[str(record["urn"])]
        refs = [("ResourceFlavor", name) for group in _flavor_names(spec) for name in group]
        refs += [("AdmissionCheck", c["name"]) for c in (spec.get("admissionChecksStrategy") or {}).get(
            "admissionChecks") or ()]  # fmt: skip
        problems += [
            f"{record['name']} may be created before its {kind} {name} (and deleted after it)"
            for kind, name in refs
            if (cluster, kind, name) in named and not waits_for(records, record, named[(cluster, kind, name)])
        ]
    return problems


def _pools_after_their_workload_policy(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """A node pool naming a workload policy is created after it (GKE returns InvalidArgument for a policy it cannot
    find) and deleted before it (the policy is deleted with its pools, not left behind)."""
    policies = {str(r["inputs"].get("name")): r for r in of_type(records, "compute/resourcePolicy:ResourcePolicy")}
    problems = []
    for pool in of_type(records, "container/nodePool:NodePool"):
        name = (pool["inputs"].get("placementPolicy") or {}).get("policyName")
        if not name:
            continue
        policy = policies.get(str(name))
        if policy is None:
            problems.append(f"{pool['name']}: names workload policy {name!r}, which the stack does not declare")
        elif not waits_for(records, pool, policy):
            problems.append(f"{pool['name']} may be created before its workload policy {name!r} (and deleted after)")
    return problems


def _workload_policies_replace_with_their_shape(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    problems = []
    for policy in of_type(records, "compute/resourcePolicy:ResourcePolicy"):
        inputs = policy["inputs"]
        topology = str((inputs.get("workloadPolicy") or {}).get("acceleratorTopology") or "")
        if not topology:
            continue
        replace_on = policy.get("replaceOnChanges") or ()
        if "*" in replace_on:
            problems.append(
                f"{policy['name']}: replaced on any change, a client-side one too, and its node pools with it"
            )
        elif "name" not in replace_on:
            problems.append(f"{policy['name']}: a new name would be planned as an update Compute refuses")
        if not policy.get("deleteBeforeReplace"):
            problems.append(f"{policy['name']}: a replacement under the same name would create before deleting")
        if policy.get("retainOnDelete"):
            problems.append(f"{policy['name']}: destroy would leave the policy behind")
        if topology not in str(inputs.get("name") or ""):
            problems.append(f"{policy['name']}: its name does not change with its topology")
    return problems


def _tas_flavors_after_their_topology(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    written_by = writers(records)
    topologies = {
        (written_by[str(r["urn"])], obj["metadata"]["name"]): r for r, obj in _kueue_inputs(records, "Topology")
    }
    problems = []
    for record, flavor in _kueue_inputs(records, "ResourceFlavor"):
        name = (flavor.get("spec") or {}).get("topologyName")
        if not name:
            continue
        topology = topologies.get((written_by[str(record["urn"])], name))
        if topology is None:
            problems.append(f"{record['name']}: names Topology {name!r}, which the stack does not declare")
        elif not waits_for(records, record, topology):
            problems.append(f"{record['name']} may be created before its Topology {name!r} (and deleted after it)")
    return problems


SERVICE_AWAIT_SECONDS = 600
"""pulumi-kubernetes' default await of a Service (provider/pkg/await/service.go DefaultServiceTimeoutMins; await.go
Creation and Update default to 10 minutes)."""
_AWAIT_OVERRIDES = ("pulumi.com/waitFor", "pulumi.com/skipAwait")


def _pod_templates(record: Record) -> list[Mapping[str, Any]]:
    """The pod templates of a workload record: a Deployment's (or any `spec.template`), a LeaderWorkerSet's two."""
    spec = record["inputs"].get("spec")
    if not isinstance(spec, Mapping):
        return []
    group = spec.get("leaderWorkerTemplate") or {}
    found = [spec.get("template"), group.get("leaderTemplate"), group.get("workerTemplate")]
    return [t for t in found if isinstance(t, Mapping)]


def _seconds_to_ready(template: Mapping[str, Any]) -> int:
    """How long a pod may take to become ready by its own probes: the startup probe's whole allowance (Kubernetes
    defaults: period 10 s, failure threshold 3), then the readiness probe's initial delay."""
    longest = 0
    for container in (template.get("spec") or {}).get("containers") or ():
        startup = container.get("startupProbe") or {}
        allowance = 0
        if startup:
            period, threshold = startup.get("periodSeconds", 10), startup.get("failureThreshold", 3)
            allowance = startup.get("initialDelaySeconds", 0) + period * threshold
        longest = max(longest, allowance + (container.get("readinessProbe") or {}).get("initialDelaySeconds", 0))
    return longest


def _services_wait_only_for_their_address(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """A Service is awaited until it has an address and no selected pod is unready; one whose pods may load for
    longer than that await tells the provider what to wait for instead (or not to wait)."""
    templates = [
        (str(r["inputs"]["metadata"].get("namespace")), t)
        for r in records
        if str(r["type"]).startswith("kubernetes:") and isinstance(r["inputs"].get("metadata"), Mapping)
        for t in _pod_templates(r)
    ]
    problems = []
    for service in of_type(records, "core/v1:Service"):
        inputs = service["inputs"]
        selector = (inputs.get("spec") or {}).get("selector") or {}
        annotations = inputs["metadata"].get("annotations") or {}
        if not selector or (inputs.get("spec") or {}).get("clusterIP") == "None":
            continue  # the provider does not wait for the pods of these
        if any(key in annotations for key in _AWAIT_OVERRIDES):
            continue
        slowest = max(
            (
                _seconds_to_ready(template)
                for namespace, template in templates
                if namespace == inputs["metadata"].get("namespace")
                and selector.items() <= ((template.get("metadata") or {}).get("labels") or {}).items()
            ),
            default=0,
        )
        if slowest > SERVICE_AWAIT_SECONDS:
            problems.append(
                f"{service['name']}: selects pods that may take {slowest // 60} minutes to become ready, longer than "
                "the provider's 10-minute Service await; annotate it pulumi.com/waitFor (or skipAwait)"
            )
    return problems


def _api_before_first_resource(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """Each Google resource waits for the API its provider calls, where the plan enables APIs."""
    from components.project import API_OF_TYPE, ENABLED_BY_HAND, SERVICES

    services = {r["inputs"].get("service"): r for r in of_type(records, "projects/service:Service")}
    if not services:
        return []  # a plan that enables no API (the project's owner did)
    problems = []
    for record in records:
        for prefix, short in API_OF_TYPE:
            if str(record["type"]).startswith(prefix) and SERVICES[short] not in ENABLED_BY_HAND:
                service = services.get(SERVICES[short])
                if service is None or not waits_for(records, record, service):
                    problems.append(f"{record['name']} may be created before {SERVICES[short]} is enabled")
    for cluster in of_type(records, "container/cluster:Cluster"):
        dns = (cluster["inputs"].get("dnsConfig") or {}).get("clusterDns") == "CLOUD_DNS"
        if dns and not waits_for(records, cluster, services.get(SERVICES["dns"])):
            problems.append(f"{cluster['name']} uses Cloud DNS before dns.googleapis.com is enabled")
    return problems


def _apis_on_by_hand(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """Each API the plan enables needs what the provider calls to enable it on already, by hand: the stack's own
    Service of such an API cannot count, since the other enables call it at the same time."""
    from components import project

    return [
        f"{service['name']} enables its API through {needed}, which the project must have on before the first "
        "`pulumi` command (not in components/project.py ENABLED_BY_HAND)"
        for service in of_type(records, "projects/service:Service")
        for needed in project.ENABLING_NEEDS
        if needed not in project.ENABLED_BY_HAND
    ]


def _network_before_cluster(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """A cluster waits for the network and subnetwork it names, where the plan declares them."""
    networks = {r["inputs"].get("name"): r for r in of_type(records, "compute/network:Network")}
    subnetworks = {r["inputs"].get("name"): r for r in of_type(records, "compute/subnetwork:Subnetwork")}
    problems = []
    for cluster in of_type(records, "container/cluster:Cluster"):
        for field, declared in (("network", networks), ("subnetwork", subnetworks)):
            named = declared.get(cluster["inputs"].get(field))
            if named is not None and not waits_for(records, cluster, named):
                problems.append(f"{cluster['name']} may be created before its {field} {named['inputs']['name']}")
    return problems


REGIONAL_ZONES = 3
"""Zones a regional cluster's pool without node locations spans (GKE's default)."""


def _pool_max_nodes(pool: Record, cluster_zones: int) -> int:
    """Most nodes a node pool can have at once, from its inputs as GKE counts them: totalMaxNodeCount is a total;
    maxNodeCount, nodeCount and initialNodeCount are per zone (node locations, else the cluster's)."""
    inputs = pool["inputs"]
    autoscaling = inputs.get("autoscaling") or {}
    if autoscaling.get("totalMaxNodeCount"):
        return int(autoscaling["totalMaxNodeCount"])
    zones = len(inputs.get("nodeLocations") or ()) or cluster_zones
    per_zone = autoscaling.get("maxNodeCount") or inputs.get("nodeCount") or inputs.get("initialNodeCount") or 0
    return int(per_zone) * zones


def _ranges_hold_the_largest(records: Sequence[Record], _outputs: Mapping[str, Any]) -> list[str]:
    """Each cluster's pod range holds a block per node (the smallest power of two with twice maxPodsPerNode, GKE's
    110 where a pool sets none) with every pool at its largest, and its node range a primary address per node."""
    import ipaddress

    subnetworks = {r["inputs"].get("name"): r for r in of_type(records, "compute/subnetwork:Subnetwork")}
    problems = []
    for cluster in of_type(records, "container/cluster:Cluster"):
        inputs = cluster["inputs"]
        policy = inputs.get("ipAllocationPolicy") or {}
        subnet = subnetworks.get(inputs.get("subnetwork"))
        pods: str | None = policy.get("clusterIpv4CidrBlock")
        if subnet is not None and policy.get("clusterSecondaryRangeName"):
            pods = next(
                (r["ipCidrRange"] for r in subnet["inputs"].get("secondaryIpRanges") or ()
                 if r.get("rangeName") == policy["clusterSecondaryRangeName"]),
                None,
            )  # fmt: skip
        if inputs.get("enableAutopilot") or pods is None:
            continue
        zones = 1 if str(inputs.get("location", "")).count("-") == 2 else REGIONAL_ZONES  # us-east5-a is a zone
        pools = [
            p
            for p in of_type(records, "container/nodePool:NodePool")
            if p["inputs"].get("cluster") == inputs.get("name")
        ]
        nodes = sum(_pool_max_nodes(p, zones) for p in pools)
        needed = sum(
            _pool_max_nodes(p, zones) * (1 << (2 * int(p["inputs"].get("maxPodsPerNode") or 110) - 1).bit_length())
            for p in pools
        )
        size = 1 << (32 - int(pods.split("/")[-1]))
        if needed > size:
            problems.append(f"{cluster['name']}: pod range {pods} holds {size} addresses, its pools need {needed}")
        if subnet is not None:
            primary = ipaddress.ip_network(subnet["inputs"]["ipCidrRange"]).num_addresses
            if nodes + 4 > primary:  # the 4 addresses every subnet keeps
                problems.append(f"{cluster['name']}: node range holds {primary - 4} nodes, its pools reach {nodes}")
    return problems


REQUIRES = [
    Requires(
        "api-before-first-resource",
        "Every Google resource waits for the API its provider calls: in a new project no API is on, and a create "
        "before the enable fails with SERVICE_DISABLED",
        "cloud.google.com/service-usage/docs/enable-disable (an API must be enabled before it is used); "
        + _TF
        + "resourcemanager/resource_google_project_service.go (the enable completes before the resource does)",
        _api_before_first_resource,
    ),
    Requires(
        "apis-on-by-hand",
        "Enabling an API needs Service Usage and Resource Manager on in the project: the provider lists and enables "
        "through Service Usage, then reads the project through Resource Manager; neither can be turned on by the "
        "stack that needs it, so both are on before the first `pulumi` command (README, An empty project)",
        _TF + "resourcemanager/resource_google_project_service.go (Create -> Read -> Projects.Get, L212-290 at e03b762 "
        "of terraform-provider-google); hashicorp/terraform-provider-google #6101, #11435 (enabling Resource "
        "Manager needs Resource Manager), #16883 (Service Usage cannot enable itself)",
        _apis_on_by_hand,
    ),
    Requires(
        "network-before-cluster",
        "A cluster waits for the network and subnetwork it names: GKE refuses a cluster in a network or subnetwork "
        "that does not exist, and organisations may have no default network (compute.skipDefaultNetworkCreation)",
        "cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters (network, "
        "subnetwork: the Compute Engine network and subnetwork the cluster is connected to); "
        "cloud.google.com/resource-manager/docs/organization-policy/org-policy-constraints",
        _network_before_cluster,
    ),
    Requires(
        "ranges-hold-the-largest",
        "Each cluster's pod range holds a block per node at every pool's largest (a node that finds no free block is "
        "not created) and its node range a primary address per node; both are fixed once the cluster exists",
        "cloud.google.com/kubernetes-engine/docs/how-to/flexible-pod-cidr (block per node: twice maxPodsPerNode, "
        "rounded up to a power of two); cloud.google.com/kubernetes-engine/docs/concepts/alias-ips; "
        + _TF
        + "container/resource_container_cluster.go (ip_allocation_policy ForceNew)",
        _ranges_hold_the_largest,
    ),
    Requires(
        "objects-after-their-webhooks",
        "Every object a fail-closed admission webhook intercepts (derived from every webhook configuration the stack "
        "declares or a chart renders: kinds, versions under matchPolicy, operations, namespaceSelector, "
        "objectSelector; and every CRD's conversion webhook, for objects in a version other than the stored one) is "
        "created after the webhook's backend serves: the API server refuses it otherwise ('no endpoints available', "
        "'connection refused'), and the provider retries a create only on NotFound or NoMatch. A fail-closed webhook "
        "that calls a URL outside the cluster is reported: nothing in the plan can be waited for",
        "kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/ (matching requests: rules, "
        "matchPolicy (Equivalent by default), namespaceSelector, objectSelector; failurePolicy defaults to Fail in "
        "admissionregistration.k8s.io/v1); kubernetes apiextensions-apiserver pkg/apiserver/conversion/converter.go "
        "(getObjectsToConvert sends only objects whose apiVersion differs); the "
        "charts as vendored (vendor/charts: Kueue v0.19.2 registers Fail webhooks for every integration it knows, "
        "LeaderWorkerSets included, in all namespaces but kube-system and its own, pkg/controller/jobframework/"
        "setup.go SetupWebhook for kinds not enabled too); pulumi/pulumi-kubernetes v4.32.0 provider/pkg/await/"
        "await.go Creation (retrier.Do(apierrors.IsNotFound, meta.IsNoMatchError))",
        _objects_wait_for_their_webhooks,
    ),
    Requires(
        "webhook-backends-ready-when-serving",
        "A webhook backend's pods are ready only once the webhook server listens, so that waiting for its chart (the "
        "provider awaits its Deployments) waits for the webhooks: LWS's /readyz is a plain ping and its webhooks are "
        "registered only after its certificate is mounted and injected",
        "kubernetes-sigs/lws v0.10.0 (2161f38f) cmd/main.go (setupHealthzAndReadyzCheck: readyz healthz.Ping; "
        "setupControllers waits on certsReady before registering the webhooks); kubernetes-sigs/controller-runtime "
        "v0.24.1 pkg/manager/internal.go GetWebhookServer (the webhook server starts when first asked for); "
        + "; ".join(READY_MEANS_SERVING.values()),
        _webhook_backends_ready_when_serving,
    ),
    Requires(
        "token-secret-after-account",
        "A service-account-token Secret is created after its ServiceAccount, or the token controller deletes it",
        "kubernetes/kubernetes pkg/controller/serviceaccount/tokens_controller.go (a token Secret whose account is "
        "missing is deleted); kubernetes.io/docs/concepts/configuration/secret/#serviceaccount-token-secrets",
        _token_secrets_wait_for_their_account,
    ),
    Requires(
        "queue-namespaces-before-kueue",
        "Namespaces that hold Kueue workloads are deleted before the Kueue chart: Workloads carry the finalizer "
        "kueue.x-k8s.io/resource-in-use, which only Kueue's controller removes",
        "kubernetes-sigs/kueue v0.19.2 pkg/constants (ResourceInUseFinalizerName) and pkg/controller/core "
        "(the controllers that remove it); pulumi-kubernetes waits for a Namespace to disappear (await.go L933-1022)",
        _queue_namespaces_go_before_kueue,
    ),
    Requires(
        "clients-reach-control-plane",
        "CI runners, operators and the program's provider reach the control plane through the DNS endpoint (open to "
        "external traffic, IAM decides); authorized networks are never on without a CIDR; the provider has a stable "
        "clusterIdentifier",
        "cloud.google.com/kubernetes-engine/docs/concepts/network-isolation; terraform-provider-google "
        "resource_container_cluster.go expandMasterAuthorizedNetworksConfig; pulumi-kubernetes provider.go DiffConfig",
        _clients_reach_the_control_plane,
    ),
    Requires(
        "control-plane-reaches-webhooks",
        "The API server reaches every webhook and APIService backend port of the charts: a firewall rule from the "
        "control plane on private nodes, and the namespace's NetworkPolicy",
        "cloud.google.com/kubernetes-engine/docs/how-to/latest/network-isolation#add_firewall_rules; "
        "kubernetes/kubernetes#79739 (webhooks are called on the pod's target port)",
        _control_plane_reaches_webhooks,
    ),
    Requires(
        "rotator-owned-cert-data",
        "Chart cert Secrets whose data the controller's rotator writes are applied without data",
        "kubernetes-sigs/jobset#1205 (fixed by #1248 after v0.12.0); kubernetes.io/docs/reference/using-api/"
        "server-side-apply/#conflicts",
        _controller_owned_secret_data,
    ),
    Requires(
        "controllers-roll-on-config",
        "A chart controller whose ConfigMap the stack writes carries a checksum of it on its pod template, so a "
        "changed config (Kueue's waitForPodsReady, MultiKueue) restarts the pods that read it only at start",
        "kubernetes-sigs/kueue v0.19.2 cmd/kueue/main.go apply (config.Load once) and "
        "charts/kueue/templates/manager/manager.yaml (config-checksum); kubernetes-sigs/jobset v0.12.0 "
        "charts/jobset/templates/controller/deployment.yaml (config-hash)",
        _controllers_roll_on_config,
    ),
    Requires(
        "alerts-on-unscraped-series",
        "PromQL alert conditions over series that appear only after the first scrape turn metric validation off, "
        "or Cloud Monitoring refuses the policy on a new project",
        "cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.alertPolicies#PrometheusQueryLanguageCondition",
        _alerts_accept_series_not_yet_scraped,
    ),
    Requires(
        "dashboard-in-api-form",
        "A dashboard is sent as the API returns it (proto3 JSON: no zero values, empty lists or objects); the "
        "provider compares the API's answer with what the program sends",
        "hashicorp/terraform-provider-google google/services/monitoring/resource_monitoring_dashboard.go "
        "(removeComputedKeys); terraform-provider-google#16173; protobuf.dev/programming-guides/json/",
        _dashboards_in_api_form,
    ),
    Requires(
        "protected-means-all",
        "In a protected stack every resource is protected: the engine deletes a protected resource's dependents "
        "before refusing it, and replaces an unprotected one (a calendar request: a new irrevocable request) before "
        "refusing the protected resources that use it",
        ENGINE["delete-protected"][1],
        _protected_stacks_protect_everything,
    ),
    Requires(
        "ladder-flavors-in-order",
        "A ladder's flavors are in one resource group of each ClusterQueue that names any of them, in ladder order, "
        "with flavorFungibility whenCanBorrow and whenCanPreempt TryNextFlavor: Kueue tries a group's flavors in "
        "their listed order and stops at the first the workload fits, or fits by borrowing (default MayStopSearch); "
        "and with preference PreemptionOverBorrowing: of the rungs it passed, the default BorrowingOverPreemption "
        "takes a later rung by borrowing over the team's own earlier rung by reclaiming",
        _KUEUE + "pkg/scheduler/flavorassigner/flavorassigner.go findFlavorForPodSets (loop over "
        "resourceGroup.Flavors), shouldTryNextFlavor, isPreferred (borrowingOverPreemption compares the preemption "
        "mode first, preemptionOverBorrowing the borrowing level); apis/kueue/v1beta2/clusterqueue_types.go "
        "FlavorFungibility defaults",
        _ladder_order,
    ),
    Requires(
        "one-resource-group-per-resource",
        "A resource and a flavor appear in one resource group of a ClusterQueue or Cohort only: the webhook refuses "
        "the object otherwise (not a CRD rule, so the offline CRD validation does not see it)",
        _KUEUE + "pkg/webhooks/clusterqueue_webhook.go validateResourceGroups (field.Duplicate on coveredResources "
        "and flavor names across groups); cohort_webhook.go uses the same check",
        _one_group_per_resource,
    ),
    Requires(
        "admission-checks-on-listed-flavors",
        "An admission check's onFlavors names only flavors of its ClusterQueue's resource groups: the webhook refuses "
        "the object otherwise",
        _KUEUE + "pkg/webhooks/clusterqueue_webhook.go validateAdmissionCheckOnFlavors (field.NotSupported)",
        _checks_on_listed_flavors,
    ),
    Requires(
        "clusterqueues-after-their-flavors",
        "A ClusterQueue is created after the flavors and admission checks it names (until they exist it is "
        "inactive and admits nothing) and deleted before them (a flavor or check keeps its finalizer while a "
        "ClusterQueue names it)",
        _KUEUE + "pkg/cache/scheduler/clusterqueue.go (inactive reasons FlavorNotFound, AdmissionCheckNotFound); "
        "pkg/controller/core/resourceflavor_controller.go and admissioncheck_controller.go (finalizer kept while in "
        "use)",
        _queues_after_their_flavors,
    ),
    Requires(
        "slow-pods-behind-awaited-services",
        "A Service whose pods may take longer to become ready than the provider's 10-minute Service await carries "
        "pulumi.com/waitFor (e.g. the load balancer's address) or skipAwait: the default await also waits until no "
        "selected pod is unready, and fails the update while a model loads",
        "pulumi/pulumi-kubernetes provider/pkg/await/service.go (checkAndLogStatus: serviceReady, endpointsSettled, "
        "!endpointsPending; DefaultServiceTimeoutMins 10); provider/pkg/metadata/overrides.go ReadyCondition and "
        "await.go Creation/Update (built-in await only without an await annotation), at v4.32.0 and 94977969",
        _services_wait_only_for_their_address,
    ),
    Requires(
        "tpu7x-pools-after-their-workload-policy",
        "A node pool that names a workload policy is created after the policy and deleted before it: GKE refuses a "
        "policy it cannot find, and destroy removes the policy with its pools",
        'pulumi-gcp 10.2.0 NodePoolPlacementPolicyArgs.policy_name ("If not found, InvalidArgument error is '
        'returned"); pulumi/pulumi pkg/resource/graph/dependency_graph.go DependenciesOf (destroy order); '
        "AI-Hypercomputer/xpk issue 752 (a policy left behind by cluster delete)",
        _pools_after_their_workload_policy,
    ),
    Requires(
        "workload-policy-replaced-by-shape",
        "A TPU7x workload policy is replaced on a new name (Compute updates none; the provider would PATCH a new name "
        "that does not exist; its other fields are ForceNew) and on nothing else (a client-side change such as "
        "deletionPolicy must not replace it and the pools that name it), deleting first, never retained, and named "
        "with its topology: a new slice shape is a new policy, and the pools that name it "
        "(placementPolicy.policyName, ForceNew) are replaced with it",
        'Compute Engine workload policy docs ("You cannot update a workload policy after you create it"); '
        "hashicorp/terraform-provider-google-beta v7.45.0 resource_compute_resource_policy.go (name not ForceNew, "
        "update is a PATCH; workload_policy fields, region, project ForceNew L466-506, L295, L511; clientSideFields "
        "deletion_policy L785) and container/resource_container_node_pool.go (placement_policy.policy_name ForceNew); "
        "pulumi/pulumi pkg/resource/deploy/step_generator.go calculateDependentReplacements (a delete-before-replace "
        "replaces the dependents whose ForceNew inputs it feeds); AI-Hypercomputer/xpk issues 751 and 752",
        _workload_policies_replace_with_their_shape,
    ),
    Requires(
        "tas-flavors-after-their-topology",
        "A ResourceFlavor with a topologyName is created after that Topology (until it exists the ClusterQueues "
        "naming the flavor are inactive) and deleted before it (a Topology keeps its finalizer while a flavor names "
        "it)",
        _KUEUE + "pkg/cache/scheduler/clusterqueue.go (inactive reason TopologyNotFound: \"Can't admit new workloads: "
        'there is no Topology %q for TAS flavor %q."); pkg/controller/tas/topology_controller.go (finalizer '
        "kueue.x-k8s.io/resource-in-use while a ResourceFlavor references the Topology)",
        _tas_flavors_after_their_topology,
    ),
    Requires(
        "slice-shape-replaces-pool",
        "A TPU node pool is replaced when its slice topology changes: the provider applies no topology in place",
        _TF + "container/resource_container_node_pool.go (placement_policy.tpu_topology: not ForceNew, no update)",
        _slice_shapes_replace_pools,
    ),
]

CATALOGUE = Catalogue(REPLACES, REFUSES, REQUIRES)
