"""What `pulumi import` puts into the state for an adopted cluster, and what the first `pulumi up` then does.

The import file (`pulumi import --file`) reads each resource back through its provider: the Google provider's
flatteners turn the GKE API's Cluster and NodePool into the state's inputs, the kubernetes provider takes an object's
inputs from its `kubectl.kubernetes.io/last-applied-configuration` annotation where `kubectl apply` left one, else
from the object itself. The first `up` then diffs the program's inputs against that state: a change of a ForceNew
field replaces the resource, any other change is an update in place. This module builds that state from the saved
outputs (field by field, each with the flattener it follows) and classifies the program's resources against it.

Why an import file and not the `import` resource option: the engine fails an `import` option whose inputs differ
from the resource as it is ("inputs to import do not match the existing resource": pulumi/pulumi
pkg/resource/deploy/step.go ImportStep.Apply, at 1b59498), and tpu-stack's hardened defaults always differ from a
cluster xpk or Cluster Toolkit made. `pulumi import --file` records the resource as it is; the first `up` then makes
the differences as in-place updates, which the adopt report lists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TF = "terraform-provider-google-beta (bridged by pulumi-gcp 10.x) at 93c65b2, google-beta/services/container/"
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

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
    private = cluster.get("privateClusterConfig") or {}
    if private.get("enablePrivateNodes"):
        state["privateClusterConfig"] = {"enablePrivateNodes": True}
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


def kubernetes_state(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An object's inputs after import by the kubernetes provider: the last configuration `kubectl apply` recorded,
    where it left one, else the object without what the API server writes (status, uid, resourceVersion, ...)."""
    metadata = obj.get("metadata") or {}
    applied = (metadata.get("annotations") or {}).get(LAST_APPLIED)
    if applied:
        loaded: dict[str, Any] = json.loads(applied)
        return loaded
    keep = {k: v for k, v in obj.items() if k not in ("status",)}
    keep["metadata"] = {k: metadata[k] for k in ("name", "namespace", "labels") if k in metadata}
    return keep


# ---- comparing the program's inputs with the imported state ---------------------------------------------------


@dataclass(frozen=True)
class Change:
    path: str
    old: Any
    new: Any
    replaces: bool


@dataclass
class Verdict:
    """What the first `pulumi up` does to one resource of the program."""

    urn: str
    type: str
    name: str
    import_id: str | None
    """None: the resource does not exist yet and is created."""
    changes: list[Change] = field(default_factory=list)

    @property
    def replaced(self) -> list[Change]:
        return [c for c in self.changes if c.replaces]


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        found: dict[str, Any] = {}
        for key, child in value.items():
            found.update(_leaves(child, f"{path}.{key}" if path else str(key)))
        return found
    return {path: value}


def _value(tree: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(tree, Mapping):
            return None
        tree = tree.get(part)
    return tree


def _under(path: str, prefixes: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in prefixes)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, str) for x in a + b):
        return sorted(a) == sorted(b)  # sets in the schema (oauth scopes, node locations)
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def changes(
    record: Mapping[str, Any], state: Mapping[str, Any], replaces_on: Sequence[str], not_computed: Sequence[str] = ()
) -> list[Change]:
    """The program's inputs against the imported state, leaf by leaf: the program's own leaves, and the state's leaves
    of fields the provider does not keep (`not_computed`); ignoreChanges paths and secrets/unknowns are no change.
    `replaces_on`: the ForceNew paths of the type (offline/catalogue.py)."""
    from offline.lifecycle import matches
    from offline.markers import SECRET, UNKNOWN

    program = record.get("inputs") or {}
    ignored = list(record.get("ignoreChanges") or ())
    new_leaves = _leaves(program)
    old_leaves = _leaves(state)
    found: list[Change] = []
    paths = set(new_leaves) | {p for p in old_leaves if _under(p, not_computed)}
    # A list-valued field compares whole (taints, scopes, cidr blocks): take list leaves as they are.
    for path in sorted(paths):
        if any(matches(path, pattern) for pattern in ignored) or path in ("", "__defaults"):
            continue
        new = _value(program, path)
        if new in (SECRET, UNKNOWN):
            continue
        old = _value(state, path)
        if path.startswith("nodeConfig.resourceLabels.") and path.split(".")[-1].startswith(GKE_OWNED_RESOURCE_LABELS):
            continue
        if new is None and old is None:
            continue
        if not _same(old, new):
            forced = any(matches(path, p) for p in replaces_on)
            found.append(Change(path, old, new, forced))
    return found
