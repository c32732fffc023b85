"""What the first `pulumi up` of an adopted stack does to the resources that exist: import each, then update it in
place where the program differs, and never replace it.

The program gives each existing resource the `import` resource option (components/adoption.py). Since pulumi 3.174.0
the engine runs an import step that only reads the resource through its provider, takes what it read as the old
state, and goes on with the ordinary diff: no difference, nothing more; a difference, an update in the same
deployment; a replacement of a resource whose `import` ID the program still gives is refused (a warning in preview,
an error in `up`: "previously-imported resources that still specify an ID may not be replaced"). Sources:
pulumi/pulumi pkg/resource/deploy/step_generator.go (GenerateSteps, continueStepsFromImport, the replacement check)
and step.go (ImportStep.Apply) at 1b59498; the change is pulumi#19339 (commit 961156b, first in v3.174.0).

What the providers read back on import, modelled here from the saved outputs of the cluster:
- Google resources: the provider's flatteners turn the GKE API's Cluster and NodePool into the state's inputs
  (`cluster_state`, `node_pool_state`, field by field with the flattener each follows); the diff is the program's
  inputs against those, and a change of a ForceNew field (offline/catalogue.py) would replace the resource.
- Kubernetes objects: pulumi-kubernetes reads an imported object from the cluster at the version of the program's
  type and keeps as inputs the live values of the properties its schema lists for that kind, without the fields
  the API server writes (uid, resourceVersion, managedFields, the last-applied annotation); a kind its schema does
  not have (every custom resource: Kueue's) keeps only apiVersion, kind and name (provider/pkg/provider/provider.go
  Read with readFromCluster, pulumi-kubernetes at 9497796). The first `up` then applies the program's object with
  server-side apply: what changes on the object is each field the program sets to another value than the live one
  (`kubernetes_changes`); a preview shows every imported custom resource as an update, since its imported inputs hold
  no spec.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TF = "terraform-provider-google-beta (bridged by pulumi-gcp 10.x) at 93c65b2, google-beta/services/container/"
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"
"""The Kueue API version the program writes and an adopted cluster's objects are read at (v1beta1 converted)."""
PULUMI_MANAGERS = ("pulumi-kubernetes", "pulumi-resource-kubernetes", "pulumi-kubernetes.exe")
"""Field managers pulumi-kubernetes writes as (its SSA manager is `pulumi-kubernetes-<hash>`; await.go patchForce)."""

SAVED_FILES = {
    "cluster.json": "gcloud container clusters describe CLUSTER --location LOCATION --format json",
    "node-pools.json": "gcloud container node-pools list --cluster CLUSTER --location LOCATION --format json",
    "subnetwork.json": "gcloud compute networks subnets describe SUBNETWORK --region REGION --format json",
}
"""The GKE and Compute APIs' saved outputs, and the command that writes each; every other `*.json` of the folder is
`kubectl get ... -o json` output (docs/adopt.md names the commands)."""


class ExistingError(Exception):
    """The saved outputs cannot be read; one line."""


@dataclass
class Existing:
    """The cluster as the APIs report it: the GKE API's Cluster and NodePools, and the Kubernetes objects read (Kueue
    objects in their stored v1beta2 form). Secrets are never among them."""

    cluster: dict[str, Any]
    node_pools: list[dict[str, Any]]
    objects: list[dict[str, Any]]
    subnetwork: dict[str, Any] | None = None
    """The cluster's subnetwork as the Compute API reports it: its primary range holds the nodes (GKE's Cluster does
    not report it)."""

    @property
    def name(self) -> str:
        return str(self.cluster["name"])

    @property
    def location(self) -> str:
        return str(self.cluster["location"])

    @property
    def project(self) -> str:
        """From the cluster's selfLink (`.../projects/P/locations/...`); empty when it names none."""
        link = str(self.cluster.get("selfLink") or "")
        return link.split("/projects/")[1].split("/")[0] if "/projects/" in link else ""

    def cluster_id(self, project: str) -> str:
        return f"projects/{project}/locations/{self.location}/clusters/{self.name}"

    def object(self, group: str, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The live object of that API group, kind, namespace and name, if it exists."""
        for obj in self.objects:
            metadata = obj.get("metadata") or {}
            if (
                api_group(obj) == group
                and obj.get("kind") == kind
                and metadata.get("name") == name
                and (metadata.get("namespace") or None) == (namespace or None)
            ):
                return obj
        return None

    def find(self, type_token: str, import_id: str, project: str) -> dict[str, Any] | None:
        """The existing resource an import ID of the program names, as the API reports it."""
        if type_token == CLUSTER:
            return self.cluster if import_id == self.cluster_id(project) else None
        if type_token == NODE_POOL:
            prefix = self.cluster_id(project) + "/nodePools/"
            wanted = import_id.removeprefix(prefix) if import_id.startswith(prefix) else None
            return next((p for p in self.node_pools if p.get("name") == wanted), None)
        if type_token.startswith("kubernetes:"):
            group, kind = type_group_kind(type_token)
            namespace, _, name = import_id.rpartition("/")
            return self.object(group, kind, namespace or None, name)
        return None


def api_group(obj: Mapping[str, Any]) -> str:
    version = str(obj.get("apiVersion") or "")
    return version.split("/")[0] if "/" in version else ""


def type_group_kind(type_token: str) -> tuple[str, str]:
    """`kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue` -> ("kueue.x-k8s.io", "ClusterQueue"); the core group is ""."""
    _, module, kind = type_token.split(":")
    group = module.split("/")[0]
    return ("" if group == "core" else group), kind


def read_existing(folder: Path) -> Existing:
    """The saved outputs of a folder: cluster.json (required), node-pools.json (else the cluster's nodePools), and
    every other `*.json` as `kubectl get -o json` output. A Secret found there is dropped unread."""

    def load(path: Path) -> Any:
        try:
            return json.loads(path.read_text())
        except ValueError as error:
            raise ExistingError(f"{path}: not JSON ({error})") from None
        except OSError as error:
            raise ExistingError(f"{path}: {error.strerror}") from None

    path = folder / "cluster.json"
    if not path.exists():
        raise ExistingError(f"{path}: missing; save it with `{SAVED_FILES['cluster.json']} > {path.name}`")
    cluster = load(path)
    if not isinstance(cluster, dict) or "name" not in cluster or "location" not in cluster:
        raise ExistingError(f"{path}: not a GKE cluster (no name or location)")
    pools_path = folder / "node-pools.json"
    pools = load(pools_path) if pools_path.exists() else cluster.get("nodePools") or []
    subnet_path = folder / "subnetwork.json"
    subnetwork = load(subnet_path) if subnet_path.exists() else None
    if subnetwork is not None and (not isinstance(subnetwork, dict) or "ipCidrRange" not in subnetwork):
        raise ExistingError(f"{subnet_path}: not a Compute Engine subnetwork (no ipCidrRange)")
    objects: list[dict[str, Any]] = []
    for other in sorted(folder.glob("*.json")):
        if other.name in SAVED_FILES:
            continue
        listed = load(other)
        items = listed.get("items") if isinstance(listed, dict) else None
        if not isinstance(items, list):
            raise ExistingError(f"{other}: not `kubectl get -o json` output (no items)")
        objects += [to_v1beta2(o) for o in items if isinstance(o, dict) and o.get("kind") != "Secret"]
    return Existing(cluster, list(pools), objects, subnetwork)


def to_v1beta2(obj: dict[str, Any]) -> dict[str, Any]:
    """A Kueue object of the deprecated v1beta1 in the stored v1beta2 form, as Kueue v0.19.2 converts it
    (apis/kueue/v1beta1/clusterqueue_conversion.go Convert_v1beta1_ClusterQueueSpec_To_v1beta2_ClusterQueueSpec):
    ClusterQueue spec.cohort -> spec.cohortName; spec.admissionChecks [x] -> spec.admissionChecksStrategy.
    admissionChecks [{name: x}]; flavorFungibility Preempt / Borrow -> MayStopSearch. The other kinds' fields keep
    their names (zz_generated.conversion.go). `kubectl get` returns v1beta2 from a Kueue that serves it (the group's
    preferred version); v1beta1 comes from an older Kueue or an explicit `clusterqueues.v1beta1.kueue.x-k8s.io`."""
    if obj.get("apiVersion") != f"{KUEUE_GROUP}/v1beta1":
        return obj
    converted = json.loads(json.dumps(obj))
    converted["apiVersion"] = f"{KUEUE_GROUP}/{KUEUE_VERSION}"
    spec = converted.get("spec") or {}
    if converted.get("kind") == "ClusterQueue":
        if "cohort" in spec:
            spec["cohortName"] = spec.pop("cohort")
        checks = spec.pop("admissionChecks", None)
        if checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name} for name in checks]}
        fungibility = spec.get("flavorFungibility") or {}
        for key, old in (("whenCanPreempt", "Preempt"), ("whenCanBorrow", "Borrow")):
            if fungibility.get(key) == old:
                fungibility[key] = "MayStopSearch"
    return converted


# ---- Google resources: what the provider's Read puts into the state ----------------------------------------------

# Fields the provider keeps from the state when the program leaves them out (Optional + Computed in the schema): a
# value only the state has is no change. Any other field only the state has is a change (the program removes it).
# node_config.go: machine_type, disk_size_gb, disk_type, image_type, labels, metadata, oauth_scopes, service_account,
# shielded_instance_config, workload_metadata_config, local_ssd_count, min_cpu_platform are Computed; gvnic, taint,
# resource_labels, reservation_affinity, spot, flex_start are not. resource_container_node_pool.go: max_pods_per_node,
# node_locations, management, upgrade_settings, network_config, placement_policy.policy_name are Computed.
NOT_COMPUTED = {
    NODE_POOL: (
        "nodeConfig.gvnic",
        "nodeConfig.taints",
        "nodeConfig.resourceLabels",
        "nodeConfig.reservationAffinity",
        "nodeConfig.spot",
        "nodeConfig.flexStart",
        "nodeConfig.hostMaintenancePolicy",
        "queuedProvisioning",
        "placementPolicy.tpuTopology",
    ),
    CLUSTER: ("resourceLabels", "maintenancePolicy", "masterAuthorizedNetworksConfig", "enableMultiNetworking"),
}
GKE_OWNED_RESOURCE_LABELS = ("goog-gke-",)
"""GKE adds labels of its own to a node pool's resource labels; the provider suppresses their diff
(node_config.go containerNodePoolResourceLabelsDiffSuppress)."""


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    if value not in (None, {}, []):
        target[key] = value


def short_name(link: str | None) -> str | None:
    """The provider keeps a network's or subnetwork's name and compares self links by name
    (tpgresource.CompareSelfLinkOrResourceName)."""
    return link.rsplit("/", 1)[-1] if link else None


def node_pool_state(pool: Mapping[str, Any], *, project: str, location: str, cluster: str) -> dict[str, Any]:
    """A NodePool's inputs after import, as flattenNodePool and flattenNodeConfig write them (resource_container_node_
    pool.go, node_config.go), from the GKE API's NodePool (`gcloud container node-pools list --format json`)."""
    config = pool.get("config") or {}
    node_config: dict[str, Any] = {}
    _put(node_config, "machineType", config.get("machineType"))
    _put(node_config, "diskSizeGb", config.get("diskSizeGb"))
    _put(node_config, "diskType", config.get("diskType"))
    _put(node_config, "imageType", config.get("imageType"))
    _put(node_config, "serviceAccount", config.get("serviceAccount"))
    _put(node_config, "oauthScopes", sorted(config.get("oauthScopes") or []))
    _put(node_config, "metadata", config.get("metadata"))
    _put(node_config, "labels", config.get("labels"))
    _put(node_config, "resourceLabels", config.get("resourceLabels"))
    if config.get("spot"):
        node_config["spot"] = True
    if config.get("flexStart"):
        node_config["flexStart"] = True
    _put(node_config, "maxRunDuration", config.get("maxRunDuration"))
    _put(
        node_config,
        "taints",
        [{k: t.get(k, "") for k in ("key", "value", "effect")} for t in config.get("taints") or []],
    )
    if "gvnic" in config:
        node_config["gvnic"] = {"enabled": bool(config["gvnic"].get("enabled"))}
    shielded = config.get("shieldedInstanceConfig")
    if shielded is not None:
        node_config["shieldedInstanceConfig"] = {
            "enableSecureBoot": bool(shielded.get("enableSecureBoot")),
            "enableIntegrityMonitoring": bool(shielded.get("enableIntegrityMonitoring")),
        }
    workload = (config.get("workloadMetadataConfig") or {}).get("mode")
    if workload:
        node_config["workloadMetadataConfig"] = {"mode": workload}
    host = (config.get("hostMaintenancePolicy") or {}).get("maintenanceInterval")
    if host:
        node_config["hostMaintenancePolicy"] = {"maintenanceInterval": host}
    affinity = config.get("reservationAffinity") or {}
    if affinity.get("consumeReservationType"):
        node_config["reservationAffinity"] = {
            k: v for k, v in (("consumeReservationType", affinity["consumeReservationType"]),
                              ("key", affinity.get("key")), ("values", affinity.get("values"))) if v
        }  # fmt: skip
    state: dict[str, Any] = {
        "name": pool["name"],
        "project": project,
        "location": location,
        "cluster": cluster,
        "initialNodeCount": pool.get("initialNodeCount", 0),
        "nodeConfig": node_config,
    }
    _put(state, "nodeLocations", sorted(pool.get("locations") or []))
    autoscaling = pool.get("autoscaling") or {}
    if autoscaling.get("enabled"):
        # flattenNodePool writes every count (unset ones read back as 0) and the location policy.
        state["autoscaling"] = {
            k: autoscaling[k]
            for k in ("minNodeCount", "maxNodeCount", "totalMinNodeCount", "totalMaxNodeCount", "locationPolicy")
            if k in autoscaling
        }
    management = pool.get("management") or {}
    state["management"] = {
        "autoRepair": bool(management.get("autoRepair")),
        "autoUpgrade": bool(management.get("autoUpgrade")),
    }
    placement = pool.get("placementPolicy") or {}
    if placement:
        state["placementPolicy"] = {
            k: v for k, v in (("type", placement.get("type", "")), ("tpuTopology", placement.get("tpuTopology")),
                              ("policyName", placement.get("policyName"))) if v is not None
        }  # fmt: skip
    if (pool.get("queuedProvisioning") or {}).get("enabled"):
        state["queuedProvisioning"] = {"enabled": True}
    upgrade = pool.get("upgradeSettings")
    if upgrade is not None:
        # flattenNodePoolUpgradeSettings: every count (an unset one is 0) and the strategy, as GKE reports them.
        state["upgradeSettings"] = {
            "maxSurge": int(upgrade.get("maxSurge", 0)),
            "maxUnavailable": int(upgrade.get("maxUnavailable", 0)),
            **({"strategy": upgrade["strategy"]} if upgrade.get("strategy") else {}),
        }
    pods = (pool.get("maxPodsConstraint") or {}).get("maxPodsPerNode")
    if pods is not None:
        state["maxPodsPerNode"] = int(pods)
    if not autoscaling.get("enabled"):
        state["nodeCount"] = pool.get("initialNodeCount", 0)
    return state


def cluster_state(cluster: Mapping[str, Any], *, project: str) -> dict[str, Any]:
    """A Cluster's inputs after import, as resourceContainerClusterRead writes them (resource_container_cluster.go)
    from the GKE API's Cluster (`gcloud container clusters describe --format json`). The importer sets
    deletion_protection true (resourceContainerClusterStateImporter); remove_default_node_pool is no API field and
    stays unset."""
    network = cluster.get("networkConfig") or {}
    endpoints = cluster.get("controlPlaneEndpointsConfig") or {}
    dns = endpoints.get("dnsEndpointConfig") or {}
    ip = endpoints.get("ipEndpointsConfig") or {}
    state: dict[str, Any] = {
        "name": cluster["name"],
        "project": project,
        "location": cluster["location"],
        "deletionProtection": True,
        "network": short_name(cluster.get("network")),
        "subnetwork": short_name(cluster.get("subnetwork")),
        "releaseChannel": {"channel": (cluster.get("releaseChannel") or {}).get("channel", "UNSPECIFIED")},
        "datapathProvider": network.get("datapathProvider", "LEGACY_DATAPATH"),
        "enableShieldedNodes": bool((cluster.get("shieldedNodes") or {}).get("enabled")),
        "initialNodeCount": cluster.get("initialNodeCount", 0),
    }
    _put(state, "resourceLabels", cluster.get("resourceLabels"))
    if network.get("enableMultiNetworking"):
        state["enableMultiNetworking"] = True
    pool = (cluster.get("workloadIdentityConfig") or {}).get("workloadPool")
    if pool:
        state["workloadIdentityConfig"] = {"workloadPool": pool}
    addons = cluster.get("addonsConfig") or {}
    fuse = (addons.get("gcsFuseCsiDriverConfig") or {}).get("enabled")
    state["addonsConfig"] = {"gcsFuseCsiDriverConfig": {"enabled": bool(fuse)}}
    prometheus = ((cluster.get("monitoringConfig") or {}).get("managedPrometheusConfig") or {}).get("enabled")
    state["monitoringConfig"] = {"managedPrometheus": {"enabled": bool(prometheus)}}
    dns_state: dict[str, Any] = {"allowExternalTraffic": bool(dns.get("allowExternalTraffic"))}
    if dns.get("enableK8sTokensViaDns"):
        dns_state["enableK8sTokensViaDns"] = True
    state["controlPlaneEndpointsConfig"] = {
        "dnsEndpointConfig": dns_state,
        "ipEndpointsConfig": {"enabled": ip.get("enabled", True)},
    }
    # flattenPrivateClusterConfig: private nodes from networkConfig.defaultEnablePrivateNodes, the peering range from
    # privateClusterConfig (ForceNew; GKE reports it for a VPC-peering cluster only).
    private = cluster.get("privateClusterConfig") or {}
    private_state: dict[str, Any] = {"enablePrivateNodes": bool(network.get("defaultEnablePrivateNodes"))}
    _put(private_state, "masterIpv4CidrBlock", private.get("masterIpv4CidrBlock") or None)
    state["privateClusterConfig"] = private_state
    # flattenIPAllocationPolicy: a VPC-native cluster's ranges, each as GKE reports it (all ForceNew); networking_mode
    # is VPC_NATIVE with IP aliases, else ROUTES and no policy.
    policy = cluster.get("ipAllocationPolicy") or {}
    if policy.get("useIpAliases"):
        state["networkingMode"] = "VPC_NATIVE"
        ip_state: dict[str, Any] = {"stackType": policy.get("stackType") or "IPV4"}
        for key in ("clusterIpv4CidrBlock", "servicesIpv4CidrBlock", "clusterSecondaryRangeName",
                    "servicesSecondaryRangeName"):  # fmt: skip
            _put(ip_state, key, policy.get(key) or None)
        state["ipAllocationPolicy"] = ip_state
    else:
        state["networkingMode"] = "ROUTES"
    pods = (cluster.get("defaultMaxPodsConstraint") or {}).get("maxPodsPerNode")
    if pods is not None:
        state["defaultMaxPodsPerNode"] = int(pods)
    # flattenDnsConfig: networkConfig.dnsConfig as reported, none when GKE reports none (kube-dns, GKE's default).
    dns_config = network.get("dnsConfig")
    if dns_config:
        state["dnsConfig"] = {k: v for k, v in dns_config.items() if v}
    authorized = cluster.get("masterAuthorizedNetworksConfig") or {}
    if authorized.get("enabled"):
        state["masterAuthorizedNetworksConfig"] = {
            "cidrBlocks": [
                {"cidrBlock": b["cidrBlock"], "displayName": b.get("displayName", "")}
                for b in authorized.get("cidrBlocks") or []
            ],
            "gcpPublicCidrsAccessEnabled": bool(authorized.get("gcpPublicCidrsAccessEnabled")),
        }
    if cluster.get("maintenancePolicy", {}).get("window"):
        state["maintenancePolicy"] = cluster["maintenancePolicy"]["window"]
    return state


# ---- Kubernetes objects: what pulumi-kubernetes reads on import, and what the apply changes -------------------------

SERVER_WRITTEN_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")
SERVER_WRITTEN_ANNOTATIONS = (LAST_APPLIED, "deployment.kubernetes.io/revision")
SCHEMA_KINDS = {("", "Namespace"), ("scheduling.k8s.io", "PriorityClass")}
"""Kinds of the provider's schema the program imports (its schema has every built-in kind, no custom resource)."""


def kubernetes_inputs(type_token: str, live: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs pulumi-kubernetes records for an imported object (Read with readFromCluster, provider.go): for a
    kind of its schema the live object's top-level properties (not `status`) without what the API server writes;
    for a custom resource apiVersion, kind and name only."""
    metadata = live.get("metadata") or {}
    if type_group_kind(type_token) not in SCHEMA_KINDS:
        kept = {k: metadata[k] for k in ("name", "namespace") if k in metadata}
        return {"apiVersion": live.get("apiVersion"), "kind": live.get("kind"), "metadata": kept}
    inputs = {k: v for k, v in live.items() if k != "status"}
    kept_metadata = {k: v for k, v in metadata.items() if k not in SERVER_WRITTEN_METADATA}
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k not in SERVER_WRITTEN_ANNOTATIONS}
    kept_metadata.pop("annotations", None)
    if annotations:
        kept_metadata["annotations"] = annotations
    inputs["metadata"] = kept_metadata
    return inputs


def managers(live: Mapping[str, Any]) -> list[str]:
    """The field managers of an object other than pulumi-kubernetes (`kubectl`, `helm`, ...), as `manager (Operation)`;
    an empty list when none is recorded (kubectl prints managedFields only with --show-managed-fields)."""
    found = []
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        manager = str(entry.get("manager") or "")
        if manager and not manager.startswith(PULUMI_MANAGERS):
            found.append(f"{manager} ({entry.get('operation', '?')})")
    return sorted(set(found))


# ---- comparing the program's inputs with the imported state ---------------------------------------------------


@dataclass(frozen=True)
class Change:
    path: str
    old: Any
    new: Any
    replaces: bool


@dataclass
class Verdict:
    """What the first `pulumi up` does to one imported resource of the program."""

    urn: str
    type: str
    name: str
    import_id: str
    existing: bool
    """False: the ID names nothing in the saved outputs (the real import would fail: "resource does not exist")."""
    changes: list[Change] = field(default_factory=list)
    """What the update after the import changes on the resource."""
    shown: list[str] = field(default_factory=list)
    """Kubernetes objects: the paths a real preview shows as changed (the imported inputs against the program's),
    where they are not what changes on the object."""
    managers: list[str] = field(default_factory=list)
    """Kubernetes objects: the other field managers of the live object (the apply conflicts where they own a field
    it changes)."""

    @property
    def replaced(self) -> list[Change]:
        return [c for c in self.changes if c.replaces]

    @property
    def updated(self) -> bool:
        """Whether a preview shows an update after the import."""
        return bool(self.changes or self.shown)

    def to_json(self) -> dict[str, Any]:
        """plan.json's `import` of the resource."""
        found: dict[str, Any] = {"id": self.import_id, "existing": self.existing}
        found["changes"] = [{"path": c.path, "old": c.old, "new": c.new, "replaces": c.replaces} for c in self.changes]
        if self.shown:
            found["shown"] = self.shown
        if self.managers:
            found["managers"] = self.managers
        return found


Path_ = tuple[str, ...]


def _leaves(value: Any, path: Path_ = ()) -> dict[Path_, Any]:
    """Leaf paths of a tree of mappings; a list is one leaf (lists compare whole)."""
    if isinstance(value, Mapping) and value:
        found: dict[Path_, Any] = {}
        for key, child in value.items():
            found.update(_leaves(child, (*path, str(key))))
        return found
    return {path: value}


def _value(tree: Any, path: Path_) -> Any:
    for part in path:
        if not isinstance(tree, Mapping):
            return None
        tree = tree.get(part)
    return tree


def show_path(path: Path_) -> str:
    """A property path as Pulumi prints it: `a.b`, a key with a dot or slash quoted (`metadata.labels["a.io/b"]`)."""
    text = ""
    for part in path:
        text += f'["{part}"]' if "." in part or "/" in part else (f".{part}" if text else part)
    return text


def _under(path: str, prefixes: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in prefixes)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, str) for x in a + b):
        return sorted(a) == sorted(b)  # sets in the schema (oauth scopes, node locations)
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def changes(
    record: Mapping[str, Any], state: Mapping[str, Any], replaces_on: Sequence[str], not_computed: Sequence[str] = ()
) -> list[Change]:
    """A Google resource's program inputs against its imported state, leaf by leaf: the program's own leaves, and the
    state's leaves of fields the provider does not keep (`not_computed`); ignoreChanges paths and secrets/unknowns
    are no change. `replaces_on`: the ForceNew paths of the type (offline/catalogue.py)."""
    from offline.lifecycle import matches
    from offline.markers import SECRET, UNKNOWN

    program = record.get("inputs") or {}
    ignored = list(record.get("ignoreChanges") or ())
    new_leaves = _leaves(program)
    old_leaves = _leaves(state)
    found: list[Change] = []
    paths = set(new_leaves) | {p for p in old_leaves if _under(".".join(p), not_computed)}
    for path in sorted(paths):
        shown = show_path(path)
        if not path or path == ("__defaults",) or any(matches(shown, pattern) for pattern in ignored):
            continue
        new = _value(program, path)
        if new in (SECRET, UNKNOWN):
            continue
        old = _value(state, path)
        if path[:2] == ("nodeConfig", "resourceLabels") and path[-1].startswith(GKE_OWNED_RESOURCE_LABELS):
            continue
        if new is None and old is None:
            continue
        if _size_of(path, old, new):
            continue
        if not _same(old, new):
            found.append(Change(shown, old, new, any(matches(shown, p) for p in replaces_on)))
    return found


def _size_of(path: Path_, old: Any, new: Any) -> bool:
    """A range given as a size alone (`/14`) is no change from a range of that size: the provider suppresses the diff
    (ip_allocation_policy's *_ipv4_cidr_block: tpgresource.CidrOrSizeDiffSuppress)."""
    return (
        path[-1:] in (("clusterIpv4CidrBlock",), ("servicesIpv4CidrBlock",))
        and isinstance(new, str)
        and new.startswith("/")
        and str(old).endswith(new)
    )


def kubernetes_changes(program: Mapping[str, Any], live: Mapping[str, Any]) -> list[Change]:
    """What the program's server-side apply changes on a live object: every field the program sets to another value.
    Fields the program does not set stay with their managers (server-side apply removes only fields it owned)."""
    found: list[Change] = []
    for path, new in sorted(_leaves(program).items()):
        if path[:1] == ("metadata",) and path[1:2] in (("name",), ("namespace",)):
            continue
        old = _value(live, path)
        if not _same(old, new):
            found.append(Change(show_path(path), old, new, False))
    return found


def merge_patch_paths(old: Any, new: Any, path: Path_ = ()) -> list[str]:
    """The paths a JSON merge patch from `old` to `new` sets or removes: how pulumi-kubernetes' Diff finds a change
    (provider.go Diff: inputPatch of the pruned live object and the new inputs)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        found: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            found += merge_patch_paths(old.get(key), new.get(key), (*path, str(key)))
        return found
    return [] if _same(old, new) else [show_path(path)]


# ---- the program's imports against the saved outputs ----------------------------------------------------------


def _state(type_token: str, found: Mapping[str, Any], existing: Existing, project: str) -> dict[str, Any]:
    if type_token == CLUSTER:
        return cluster_state(found, project=project)
    return node_pool_state(found, project=project, location=existing.location, cluster=existing.name)


def verdicts(resources: Sequence[Mapping[str, Any]], existing: Existing, project: str) -> list[Verdict]:
    """Each resource the program imports (its `importId`): what the first `up` does to it, judged against the saved
    outputs. A Google resource's changes are its provider's diff of the program against the imported state (a
    ForceNew field replaces); a Kubernetes object's are the fields its apply changes."""
    from offline.catalogue import REFUSES, REPLACES

    replaces = {entry.type: entry.paths for entry in REPLACES}
    never_sent = {entry.type: entry.paths for entry in REFUSES if entry.type == NODE_POOL}
    found: list[Verdict] = []
    for record in resources:
        import_id = record.get("importId")
        if not import_id:
            continue
        type_token = str(record["type"])
        verdict = Verdict(str(record["urn"]), type_token, str(record["name"]), str(import_id), False)
        found.append(verdict)
        live = existing.find(type_token, str(import_id), project)
        if live is None:
            continue
        verdict.existing = True
        if type_token.startswith("kubernetes:"):
            program = record.get("inputs") or {}
            verdict.changes = kubernetes_changes(program, live)
            shown = merge_patch_paths(kubernetes_inputs(type_token, live), program)
            verdict.shown = shown if shown and not verdict.changes else []
            verdict.managers = managers(live)
            continue
        state = _state(type_token, live, existing, project)
        forced = (*replaces.get(type_token, ()), *never_sent.get(type_token, ()))
        verdict.changes = changes(record, state, forced, NOT_COMPUTED.get(type_token, ()))
    return found


def imported_inputs(
    resources: Sequence[Mapping[str, Any]], existing: Existing, project: str
) -> dict[str, dict[str, Any]]:
    """URN -> the inputs the import of each resource the program imports reads (the old state the engine resets its
    ignoreChanges paths to, offline/ignore_changes.py); none for an import ID naming nothing in the saved outputs."""
    found: dict[str, dict[str, Any]] = {}
    for record in resources:
        import_id = record.get("importId")
        if not import_id:
            continue
        type_token = str(record["type"])
        live = existing.find(type_token, str(import_id), project)
        if live is None:
            continue
        if type_token.startswith("kubernetes:"):
            found[str(record["urn"])] = kubernetes_inputs(type_token, live)
        else:
            found[str(record["urn"])] = _state(type_token, live, existing, project)
    return found


def unmatched(imports: Sequence[Mapping[str, str]], urns: Collection[str]) -> list[str]:
    """One line per import entry of the stack file that names no resource of the program by its engine URN (the
    engine would create the resource it meant instead, and leave the existing one alone)."""
    lines = []
    for index, entry in enumerate(imports):
        if entry["urn"] not in urns:
            lines.append(
                f"tpu-stack:cluster.adopted.imports[{index}]: the program declares no resource with URN "
                f"{entry['urn']}; fix the URN or remove the entry"
            )
    return lines


def lines(found: Sequence[Verdict]) -> list[str]:
    """The report's lines of each import: the ID, then what the update after it changes."""
    out: list[str] = []
    for verdict in found:
        out.append(f"  = {verdict.type} {verdict.name} ({verdict.import_id})")
        if not verdict.existing:
            out.append('      ! no such resource in the saved outputs: the import fails ("resource does not exist")')
        for change in verdict.changes:
            replaced = "  (replaces it: the engine refuses)" if change.replaces else ""
            out.append(f"      ~ {change.path}: {show_value(change.old)} -> {show_value(change.new)}{replaced}")
        if verdict.shown:
            out.append(f"      ({shown_line(verdict)})")
        if verdict.changes and verdict.managers:
            out.append(f"      (other field managers: {', '.join(verdict.managers)})")
    return out


def show_value(value: Any) -> str:
    """A value on one short line (JSON, cut at 60 characters)."""
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def shown_line(verdict: Verdict) -> str:
    """Why a preview shows an update of an imported Kubernetes object the apply leaves as it is."""
    paths = ", ".join(verdict.shown[:4]) + (", ..." if len(verdict.shown) > 4 else "")
    if type_group_kind(verdict.type) in SCHEMA_KINDS:
        return (
            f"the preview shows {paths} as changed: the object has them, the program does not set them; the apply "
            "leaves them to their owners and changes nothing"
        )
    return (
        f"the preview shows {paths} as changed: pulumi-kubernetes imports no spec of a custom resource; the apply "
        "changes nothing on the object"
    )
