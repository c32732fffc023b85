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
catalogue has no word on is a question to research, not a pass (test_catalogue.py holds it to that).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offline.lifecycle import depends_on, matches
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


class Catalogue:
    """The rules as the engine model asks for them (offline.lifecycle.Rules)."""

    def __init__(self, replaces: Sequence[Replaces], refuses: Sequence[Refuses], requires: Sequence[Requires]):
        self.replaces = {entry.type: entry for entry in replaces}
        self.refusals = {entry.type: entry for entry in refuses}
        self.requires = list(requires)

    def replaces_on(self, resource: Record, changed: Sequence[str]) -> list[str]:
        entry = self.replaces.get(str(resource["type"]))
        if entry is None:
            raise KeyError(f"the catalogue has no replacement rule for {resource['type']}: research it")
        return [path for path in changed if any(matches(path, p) for p in entry.paths)]

    def refuses(self, old: Record, new: Record, changed: Sequence[str]) -> list[str]:
        reasons = validate_update(old["inputs"], new["inputs"]) if str(new["type"]).startswith("kubernetes:") else []
        entry = self.refusals.get(str(new["type"]))
        if entry is not None:
            reasons += [f"{p}: immutable ({entry.source})" for p in changed if any(matches(p, w) for w in entry.paths)]
        return reasons

    def breaches(self, records: Sequence[Record], outputs: Mapping[str, Any]) -> list[str]:
        """One line per `Requires` entry a plan breaks."""
        return [f"{rule.id}: {line}" for rule in self.requires for line in rule.check(records, outputs)]


# --- helpers for the checks ------------------------------------------------------------------------------------


def of_type(records: Sequence[Record], suffix: str) -> list[Record]:
    return [r for r in records if str(r["type"]).endswith(suffix)]


def by_urn(records: Sequence[Record]) -> dict[str, Record]:
    return {str(r["urn"]): r for r in records}


def chart(records: Sequence[Record], name: str) -> Record | None:
    return next((r for r in of_type(records, ":Chart") if r["name"] == f"{name}-chart"), None)


def waits_for(records: Sequence[Record], record: Record, other: Record | None) -> bool:
    return other is not None and depends_on(by_urn(records), str(record["urn"]), str(other["urn"]))


# --- Replaces: what each type's provider replaces on --------------------------------------------------------------

_TF = "hashicorp/terraform-provider-google-beta v8.0.0 (bridged by pulumi-gcp 10.x), google-beta/services/"
_K8S_DIFF = "pulumi/pulumi-kubernetes provider/pkg/provider/diff.go forceNew table (L23-251 at 9497796)"
# Every Kubernetes kind is replaced when its name or namespace changes (diff.go L205-210).
_NAMED = ("metadata.name", "metadata.namespace")
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
        "machineType, disk, labels, taints, resourceLabels, autoscaling, management, nodeLocations update in place; "
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
    Replaces("kubernetes:helm.sh/v4:Chart", (), "pulumi/pulumi-kubernetes provider/pkg/provider/helm/v4/chart.go",
             "a remote component: its rendered objects are diffed one by one as its children"),
    *(
        Replaces(f"tpu-stack:index:{component}", (), _COMPONENT)
        for component in (
            "GkeCluster", "TpuSlicePools", "JobSetInstall", "KueueInstall", "KueueQueues", "NamespacePolicies",
            "ControllerMetrics", "Bucket", "WorkloadIdentity", "Saxml", "Monitoring", "LwsInstall", "LlmServing",
        )
    ),
]  # fmt: skip

# --- Refuses: changes an API or a provider does not apply in place ----------------------------------------------

REFUSES = [
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
        "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
        ("spec.replicatedJobs",),
        "kubernetes-sigs/jobset v0.12.0 pkg/webhooks/jobset_webhook.go ValidateUpdate (replicatedJobs may change "
        "only while suspended)",
    ),
    Refuses(
        "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
        ("spec.leaderWorkerTemplate.subGroupPolicy",),
        "kubernetes-sigs/lws v0.10.0 pkg/webhooks/leaderworkerset_webhook.go ValidateUpdate (subGroupSize is "
        "immutable and cannot be added or removed; failurePolicy Fail); the stack sets no subGroupPolicy",
    ),
]

CATALOGUE = Catalogue(REPLACES, REFUSES, [])
