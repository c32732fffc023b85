"""`tpu-stack adopt`: take over a cluster that xpk or Cluster Toolkit made, without re-creating it.

Reads the cluster (saved outputs, or live through the GKE API and the cluster's Kubernetes API with the user's own
credentials), describes what is there in tpu-stack's config (pool groups from node pools, xpk's N identical slice
pools as one group of N slices; shapes from machine types and topologies; provisioning from the pools' flags; the
queues from the Kueue objects, v1beta1 converted to v1beta2), runs the program offline on that config, and writes:
- `Pulumi.<stack>.yaml`: the stack as it is, with the existing names and the settings a change of which would
  replace a slice (`adopted:` keys);
- `import.json`: the `pulumi import --file` file with the names, types, parents and provider the program uses;
- `report.txt`: per resource, import and the in-place changes the first `pulumi up` makes; what is not adopted.

Anything the first update would replace is refused with one line naming the config that keeps it, and that config is
written. What cannot be adopted at all is named, never dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components import tpu_catalog
from components.config.base import zone_region
from components.config.pools import KEEPABLE_POOL_FIELDS
from components.xpk_accelerators import XPK_ACCELERATORS
from tpu_stack import adopt_state
from tpu_stack.adopt_errors import AdoptError
from tpu_stack.adopt_state import CLUSTER, NODE_POOL, Verdict

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "Cohort", "AdmissionCheck", "ProvisioningRequestConfig")
WORKLOAD_KINDS = ("JobSet", "Job", "Workload", "LeaderWorkerSet")
SAVED_FILES = {
    "cluster.json": "gcloud container clusters describe CLUSTER --location LOCATION --format json",
    "node-pools.json": "gcloud container node-pools list --cluster CLUSTER --location LOCATION --format json",
    "kubernetes.json": "kubectl get resourceflavors,clusterqueues,localqueues,cohorts,admissionchecks,"
    "provisioningrequestconfigs,priorityclasses,jobsets -A -o json",
}
"""The saved outputs adopt reads, and the command that writes each."""
KUEUE_PLURALS = {
    "resourceflavors": "ResourceFlavor",
    "clusterqueues": "ClusterQueue",
    "localqueues": "LocalQueue",
    "cohorts": "Cohort",
    "admissionchecks": "AdmissionCheck",
    "provisioningrequestconfigs": "ProvisioningRequestConfig",
}
PROVIDER_VERSIONS = {"gcp": "10.2.0", "kubernetes": "4.34.2"}


@dataclass
class Saved:
    """The cluster as the APIs report it."""

    cluster: dict[str, Any]
    node_pools: list[dict[str, Any]]
    objects: list[dict[str, Any]]


def read_saved(folder: Path) -> Saved:
    def load(name: str, required: bool = True) -> Any:
        path = folder / name
        if not path.exists():
            if required:
                raise AdoptError(f"{path}: missing; save it with `{SAVED_FILES[name]} > {name}`")
            return None
        try:
            return json.loads(path.read_text())
        except ValueError as error:
            raise AdoptError(f"{path}: not JSON ({error})") from None

    cluster = load("cluster.json")
    pools = load("node-pools.json", required=False)
    objects = load("kubernetes.json", required=False) or {"items": []}
    if not isinstance(cluster, dict) or "name" not in cluster:
        raise AdoptError(f"{folder / 'cluster.json'}: not a GKE cluster (no name)")
    return Saved(cluster, list(pools if pools is not None else cluster.get("nodePools") or []), objects["items"])


def read_live(project: str, location: str, name: str, kubeconfig: dict[str, Any]) -> Saved:
    """The cluster from the GKE API (projects.locations.clusters.get, which includes its node pools) with Application
    Default Credentials, and the Kueue objects and PriorityClasses from its Kubernetes API."""
    import google.auth
    from google.auth.transport.requests import AuthorizedSession

    from tpu_stack import kube

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    url = f"https://container.googleapis.com/v1/projects/{project}/locations/{location}/clusters/{name}"
    response = AuthorizedSession(credentials).get(url, timeout=30)
    if response.status_code != 200:
        raise AdoptError(f"GKE API {url}: {response.status_code} {response.text[:200]}")
    cluster = response.json()
    api = kube.Cluster(kubeconfig)
    objects: list[dict[str, Any]] = []
    try:
        for plural, kind in KUEUE_PLURALS.items():
            for item in api.list(kube.kueue_path(plural)):
                objects.append({"apiVersion": f"{KUEUE_GROUP}/v1beta2", "kind": kind, **item})
        for item in api.list(kube.path("scheduling.k8s.io", "v1", "priorityclasses")):
            objects.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", **item})
    finally:
        api.close()
    return Saved(cluster, list(cluster.get("nodePools") or []), objects)


# ---- Kueue v1beta1 -> v1beta2 ---------------------------------------------------------------------------------


def to_v1beta2(obj: dict[str, Any]) -> dict[str, Any]:
    """A Kueue object of the deprecated v1beta1 in the stored v1beta2 form, as Kueue v0.19.2 converts it
    (apis/kueue/v1beta1/clusterqueue_conversion.go Convert_v1beta1_ClusterQueueSpec_To_v1beta2_ClusterQueueSpec):
    ClusterQueue spec.cohort -> spec.cohortName; spec.admissionChecks [x] -> spec.admissionChecksStrategy.
    admissionChecks [{name: x}]; flavorFungibility Preempt / Borrow -> MayStopSearch. The other kinds' fields keep
    their names (zz_generated.conversion.go)."""
    if obj.get("apiVersion") != f"{KUEUE_GROUP}/v1beta1":
        return obj
    converted = json.loads(json.dumps(obj))
    converted["apiVersion"] = f"{KUEUE_GROUP}/v1beta2"
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


# ---- what is there, in tpu-stack's terms ----------------------------------------------------------------------


@dataclass
class Finding:
    kind: str
    """refused | not-adopted | kept"""
    line: str


@dataclass
class Adoption:
    stack: str
    project: str
    region: str
    config: dict[str, Any]
    """The `config:` mapping of Pulumi.<stack>.yaml."""
    ids: dict[tuple[str, str], str]
    """(type, name the cloud or cluster knows) -> import ID."""
    objects: dict[tuple[str, str], dict[str, Any]]
    """(type, name) -> the existing object as the API reports it (the imported state is built from it)."""
    findings: list[Finding] = field(default_factory=list)
    dns_endpoint: str = ""


def _provisioning(pool: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(provisioning mode, reservation) from the pool's flags (docs/config.md maps them), or (None, why not)."""
    config = pool.get("config") or {}
    if config.get("preemptible"):
        return None, "preemptible VMs (tpu-stack's cheap capacity is spot)"
    if (pool.get("queuedProvisioning") or {}).get("enabled"):
        return "queued", None
    if config.get("flexStart"):
        return "flex-start", None
    if config.get("spot"):
        return "spot", None
    affinity = config.get("reservationAffinity") or {}
    if affinity.get("consumeReservationType") == "SPECIFIC_RESERVATION":
        values = affinity.get("values") or []
        if len(values) != 1:
            return None, f"it consumes {len(values)} reservations; tpu-stack's pool groups consume one"
        return "reservation", str(values[0])
    return "on-demand", None


def _shape(pool: Mapping[str, Any]) -> tuple[str, str] | None:
    machine = tpu_catalog.machine_type(str((pool.get("config") or {}).get("machineType")))
    if machine is None:
        return None
    topology = (pool.get("placementPolicy") or {}).get("tpuTopology") or machine.single_host_topology
    return machine.name, topology


def _accelerator(machine: str, topology: str) -> str | None:
    """xpk's name of a shape, when xpk has one (the config then reads as xpk users know it)."""
    return next((name for name, shape in XPK_ACCELERATORS.items() if shape == (machine, topology)), None)


_SLICE_SUFFIX = re.compile(r"^(.*)-(\d+)$")


def _groups(pools: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """TPU node pools grouped into pool groups: identical shape, provisioning, zones and settings, names `<prefix>-<i>`
    (xpk: `<cluster>-np-<i>`; Cluster Toolkit's gke-node-pool: `<name>-<i>` with num_slices)."""

    def key(pool: Mapping[str, Any]) -> str:
        match = _SLICE_SUFFIX.match(pool["name"])
        prefix = match.group(1) if match else pool["name"]
        config = dict(pool.get("config") or {})
        for name in ("labels",):
            config.pop(name, None)
        same = {
            "prefix": prefix,
            "config": config,
            "placement": pool.get("placementPolicy"),
            "locations": sorted(pool.get("locations") or []),
            "autoscaling": pool.get("autoscaling"),
            "queued": pool.get("queuedProvisioning"),
        }
        return json.dumps(same, sort_keys=True)

    groups: dict[str, list[Mapping[str, Any]]] = {}
    for pool in pools:
        groups.setdefault(key(pool), []).append(pool)
    return [sorted(group, key=lambda p: _slice_index(p["name"])) for group in groups.values()]


def _slice_index(name: str) -> int:
    match = _SLICE_SUFFIX.match(name)
    return int(match.group(2)) if match else 0


KEEP_BY_FLAG = {
    "nodeConfig.gvnic": lambda p: "gvnic" in (p.get("config") or {}),
    "nodeConfig.hostMaintenancePolicy": lambda p: "hostMaintenancePolicy" in (p.get("config") or {}),
    "networkConfig": lambda p: (
        bool((p.get("networkConfig") or {}).get("additionalNodeNetworkConfigs"))
        or bool((p.get("networkConfig") or {}).get("acceleratorNetworkProfile"))
    ),
    "nodeConfig.taints": lambda p: bool((p.get("config") or {}).get("taints")),
    "nodeConfig.linuxNodeConfig": lambda p: bool((p.get("config") or {}).get("linuxNodeConfig")),
    "placementPolicy.type": lambda p: bool((p.get("placementPolicy") or {}).get("type")),
    "nodeConfig.diskType": lambda p: (
        (p.get("config") or {}).get("diskType") not in (None, "pd-standard", "pd-balanced")
    ),
    "nodeConfig.diskSizeGb": lambda p: (p.get("config") or {}).get("diskSizeGb") not in (None, 100),
}
"""Settings tpu-stack does not model that a pool may carry: kept as they are (adopted.keep), each named in the
report. gVNIC, host maintenance, COMPACT placement and max pods per node: xpk's node pool flags (xpk 1.16.0
core/nodepool.py); additional networks, disk type and size, the TPU taint, sysctls: Cluster Toolkit's
modules/compute/gke-node-pool/main.tf."""


def interpret(saved: Saved, *, stack: str, project: str | None = None) -> Adoption:
    cluster = saved.cluster
    self_link = str(cluster.get("selfLink") or "")
    project = project or (self_link.split("/projects/")[1].split("/")[0] if "/projects/" in self_link else "")
    if not project:
        raise AdoptError("the cluster's selfLink names no project; pass --project")
    location = str(cluster["location"])
    region = zone_region(location) or location
    name = str(cluster["name"])
    if (cluster.get("autopilot") or {}).get("enabled"):
        raise AdoptError(f"cluster {name}: Autopilot clusters have no node pools to adopt; tpu-stack adopts Standard")
    findings: list[Finding] = []
    ids: dict[tuple[str, str], str] = {(CLUSTER, name): f"projects/{project}/locations/{location}/clusters/{name}"}
    objects: dict[tuple[str, str], dict[str, Any]] = {(CLUSTER, name): cluster}

    cluster_config: dict[str, Any] = {"name": name, "location": location}
    channel = (cluster.get("releaseChannel") or {}).get("channel", "UNSPECIFIED")
    cluster_config["releaseChannel"] = channel
    if cluster.get("network") not in (None, "default"):
        cluster_config["network"] = adopt_state.short_name(cluster.get("network"))
    if cluster.get("subnetwork") not in (None, "default"):
        cluster_config["subnetwork"] = adopt_state.short_name(cluster.get("subnetwork"))
    private = bool((cluster.get("privateClusterConfig") or {}).get("enablePrivateNodes"))
    cluster_config["privateNodes"] = private
    adopted_cluster: dict[str, Any] = {}
    keep_cluster: list[str] = []
    datapath = (cluster.get("networkConfig") or {}).get("datapathProvider", "LEGACY_DATAPATH")
    if datapath != "ADVANCED_DATAPATH":
        keep_cluster.append("datapathProvider")
        findings.append(
            Finding(
                "refused",
                f"cluster {name}: datapathProvider {datapath} -> ADVANCED_DATAPATH would recreate the cluster "
                "(ForceNew); kept with cluster.adopted.keep: [datapathProvider] (NetworkPolicies are not enforced "
                "on it)",
            )
        )
    if (cluster.get("networkConfig") or {}).get("enableMultiNetworking"):
        keep_cluster.append("enableMultiNetworking")

    system = None
    tpu_pools: list[Mapping[str, Any]] = []
    for pool in saved.node_pools:
        if pool["name"] == "default-pool":
            adopted_cluster["defaultPool"] = True
            findings.append(
                Finding(
                    "not-adopted",
                    "node pool default-pool (CPU): stays as it is, outside the stack (cluster.adopted.defaultPool); "
                    "the stack adds its own system pool for the controllers",
                )
            )
        elif pool["name"] == "system" and _shape(pool) is None:
            system = pool
        elif _shape(pool) is not None:
            tpu_pools.append(pool)
        elif (pool.get("config") or {}).get("accelerators"):
            findings.append(
                Finding("not-adopted", f"node pool {pool['name']}: GPU pools are not tpu-stack's to manage")
            )
        else:
            findings.append(
                Finding("not-adopted", f"node pool {pool['name']}: a CPU pool tpu-stack does not declare; stays as is")
            )
    if system is not None:
        config_of = system.get("config") or {}
        adopted_cluster["systemPool"] = {
            "serviceAccount": config_of.get("serviceAccount", "default"),
            "oauthScopes": sorted(config_of.get("oauthScopes") or []),
            "keep": [path for path in ("nodeConfig.diskType", "nodeConfig.labels", "nodeConfig.taints",
                                       "nodeConfig.shieldedInstanceConfig") if path in KEEPABLE_POOL_FIELDS],
        }  # fmt: skip
        scaling = system.get("autoscaling") or {}
        cluster_config["systemPool"] = {
            "machineType": config_of.get("machineType"),
            "diskSizeGb": config_of.get("diskSizeGb", 100),
            "minNodes": scaling.get("totalMinNodeCount", 1),
            "maxNodes": scaling.get("totalMaxNodeCount", 3),
        }
        findings.append(
            Finding("kept", "node pool system: imported as the stack's system pool, its account and scopes kept")
        )
        ids[(NODE_POOL, "system")] = f"projects/{project}/locations/{location}/clusters/{name}/nodePools/system"
        objects[(NODE_POOL, "system")] = dict(system)
    if keep_cluster:
        adopted_cluster["keep"] = keep_cluster
    cluster_config["adopted"] = adopted_cluster

    pool_configs: list[dict[str, Any]] = []
    for group in _groups(tpu_pools):
        first = group[0]
        mode, detail = _provisioning(first)
        names = [p["name"] for p in group]
        if mode is None:
            findings.append(Finding("refused", f"node pools {', '.join(names)}: not adopted: {detail}"))
            continue
        shape = _shape(first)
        assert shape is not None
        machine, topology = shape
        match = _SLICE_SUFFIX.match(names[0])
        group_name = match.group(1) if match and len(group) > 1 else names[0]
        if match and len(group) == 1 and match.group(2) == "0":
            group_name = match.group(1)
        accelerator = _accelerator(machine, topology)
        entry: dict[str, Any] = {"name": group_name}
        if accelerator:
            entry["accelerator"] = accelerator
        else:
            entry["machineType"] = machine
            entry["topology"] = topology
        entry["slices"] = len(group)
        entry["provisioning"] = mode
        if mode == "reservation":
            entry["reservation"] = detail
        zones = first.get("locations") or []
        if len(zones) == 1:
            entry["zone"] = zones[0]
        node_config = first.get("config") or {}
        if node_config.get("maxRunDuration"):
            entry["maxRunDuration"] = node_config["maxRunDuration"]
        labels = {
            k: v for k, v in (node_config.get("labels") or {}).items() if not k.startswith("cloud.google.com/gke-")
        }
        if labels:
            entry["labels"] = labels
        auto_upgrade = bool((first.get("management") or {}).get("autoUpgrade"))
        if channel == "UNSPECIFIED":
            entry["autoUpgrade"] = auto_upgrade
        default_names = [group_name] if len(group) == 1 else [f"{group_name}-{i}" for i in range(len(group))]
        adopted: dict[str, Any] = {}
        if names != default_names:
            adopted["nodePools"] = names
        adopted["serviceAccount"] = node_config.get("serviceAccount", "default")
        adopted["oauthScopes"] = sorted(node_config.get("oauthScopes") or [])
        keep = [path for path, has in KEEP_BY_FLAG.items() if has(first)]
        if (first.get("maxPodsConstraint") or {}).get("maxPodsPerNode") is not None:
            keep.append("maxPodsPerNode")
        adopted["keep"] = keep
        entry["adopted"] = adopted
        for path in keep:
            findings.append(
                Finding(
                    "kept",
                    f"node pools {_span(names)}: {KEEPABLE_POOL_FIELDS[path]} kept as it is "
                    f"(tpuPools[{len(pool_configs)}].adopted.keep: {path})",
                )
            )
        pool_configs.append(entry)
        for slice_pool in group:
            key = (NODE_POOL, slice_pool["name"])
            ids[key] = f"projects/{project}/locations/{location}/clusters/{name}/nodePools/{slice_pool['name']}"
            objects[key] = dict(slice_pool)

    queues, kube_ids, kube_objects, kube_findings = _queues(saved.objects, pool_configs)
    ids.update(kube_ids)
    objects.update(kube_objects)
    findings += kube_findings
    config: dict[str, Any] = {
        "gcp:project": project,
        "gcp:region": region,
        "tpu-stack:cluster": cluster_config,
        "tpu-stack:tpuPools": pool_configs,
        "tpu-stack:queues": queues,
    }
    dns = ((cluster.get("controlPlaneEndpointsConfig") or {}).get("dnsEndpointConfig") or {}).get("endpoint", "")
    return Adoption(stack, project, region, config, ids, objects, findings, dns)


def _span(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"


def _queues(
    raw: Sequence[dict[str, Any]], pools: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[tuple[str, str], str], dict[tuple[str, str], dict[str, Any]], list[Finding]]:
    """The queues from the Kueue objects: one ClusterQueue and its LocalQueue become queues.clusterQueue/localQueue
    (xpk's cluster-queue and default/multislice-queue), each ResourceFlavor the adopted name of the pool group whose
    nodes carry its nodeLabels, the PriorityClasses as they are."""
    from components.config.pools import TpuPoolConfig
    from components.kueue_queues import KUEUE_API

    objects = [to_v1beta2(o) for o in raw]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(str(obj.get("kind")), []).append(obj)
    findings: list[Finding] = []
    ids: dict[tuple[str, str], str] = {}
    found: dict[tuple[str, str], dict[str, Any]] = {}
    queues: dict[str, Any] = {}
    cr = f"kubernetes:{KUEUE_API}:"

    def take(kind: str, obj: dict[str, Any], type_token: str) -> None:
        metadata = obj["metadata"]
        where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
        ids[(type_token, f"{where}{metadata['name']}")] = f"{where}{metadata['name']}"
        found[(type_token, f"{where}{metadata['name']}")] = obj

    for kind in WORKLOAD_KINDS:
        if by_kind.get(kind):
            findings.append(
                Finding("not-adopted", f"{len(by_kind[kind])} {kind}(s): workloads, not the stack's; they run on")
            )
    cluster_queues = by_kind.get("ClusterQueue", [])
    local_queues = by_kind.get("LocalQueue", [])
    if len(cluster_queues) > 1 or len(local_queues) > 1 or by_kind.get("Cohort"):
        names = ", ".join(q["metadata"]["name"] for q in cluster_queues)
        findings.append(
            Finding(
                "refused",
                f"ClusterQueues {names}: not adopted: more than one queue or a Cohort; tpu-stack's teams name their "
                "queues <team>-queue and <team>-cluster-queue, so adopt takes one ClusterQueue and its LocalQueue",
            )
        )
        return queues, ids, found, findings
    if cluster_queues:
        spec = cluster_queues[0].get("spec") or {}
        queues["clusterQueue"] = cluster_queues[0]["metadata"]["name"]
        preemption = spec.get("preemption") or {}
        if preemption:
            queues["preemption"] = {
                k: preemption[k] for k in ("reclaimWithinCohort", "withinClusterQueue") if k in preemption
            }
        if spec.get("queueingStrategy"):
            queues["queueingStrategy"] = spec["queueingStrategy"]
        take("ClusterQueue", cluster_queues[0], cr + "ClusterQueue")
    if local_queues:
        queues["localQueue"] = local_queues[0]["metadata"]["name"]
        queues["namespace"] = local_queues[0]["metadata"].get("namespace", "default")
        take("LocalQueue", local_queues[0], cr + "LocalQueue")
    models = []
    for entry in pools:
        fields = {k: v for k, v in entry.items() if k != "adopted"}
        models.append((entry, TpuPoolConfig.model_validate({**fields, "zone": entry.get("zone")})))
    for flavor in by_kind.get("ResourceFlavor", []):
        wanted = (flavor.get("spec") or {}).get("nodeLabels") or {}
        matching = [e for e, model in models if wanted.items() <= model.node_labels.items()]
        if len(matching) == 1:
            matching[0]["adopted"]["flavor"] = flavor["metadata"]["name"]
            take("ResourceFlavor", flavor, cr + "ResourceFlavor")
        else:
            findings.append(
                Finding(
                    "not-adopted",
                    f"ResourceFlavor {flavor['metadata']['name']}: its nodeLabels match {len(matching)} pool groups; "
                    "left as is",
                )
            )
    checks = {c["metadata"]["name"] for c in by_kind.get("AdmissionCheck", [])}
    for config in by_kind.get("ProvisioningRequestConfig", []):
        findings.append(
            Finding(
                "not-adopted",
                f"ProvisioningRequestConfig {config['metadata']['name']}: "
                + ("used by an AdmissionCheck tpu-stack does not declare" if checks else "no AdmissionCheck uses it")
                + "; left as is",
            )
        )
    for check in checks:
        findings.append(Finding("not-adopted", f"AdmissionCheck {check}: left as is (tpu-stack declares its own)"))
    # Kubernetes' own classes (system-cluster-critical, system-node-critical) are the API server's.
    priorities = [p for p in by_kind.get("PriorityClass", []) if not p["metadata"]["name"].startswith("system-")]
    if priorities:
        queues["priorityClasses"] = [
            {
                "name": p["metadata"]["name"],
                "value": p["value"],
                **({"globalDefault": True} if p.get("globalDefault") else {}),
                **({"description": p["description"]} if p.get("description") else {}),
            }
            for p in priorities
        ]
        for p in priorities:
            take("PriorityClass", p, "kubernetes:scheduling.k8s.io/v1:PriorityClass")
    return queues, ids, found, findings


# ---- the first update, modelled offline -----------------------------------------------------------------------


def existing_name(record: Mapping[str, Any]) -> str | None:
    """The name the cloud or the cluster knows the program's resource by (namespace/name for namespaced objects)."""
    inputs = record.get("inputs") or {}
    if str(record["type"]).startswith("kubernetes:"):
        metadata = inputs.get("metadata") or {}
        namespace = metadata.get("namespace")
        return f"{namespace}/{metadata['name']}" if namespace else metadata.get("name")
    name = inputs.get("name")
    return str(name) if isinstance(name, str) else None


def _state(adoption: Adoption, type_token: str, name: str) -> dict[str, Any]:
    obj = adoption.objects[(type_token, name)]
    cluster = adoption.config["tpu-stack:cluster"]
    if type_token == CLUSTER:
        return adopt_state.cluster_state(obj, project=adoption.project)
    if type_token == NODE_POOL:
        return adopt_state.node_pool_state(
            obj, project=adoption.project, location=cluster["location"], cluster=cluster["name"]
        )
    return adopt_state.kubernetes_state(obj)


def verdicts(adoption: Adoption, plan_resources: Sequence[Mapping[str, Any]]) -> list[Verdict]:
    """Each custom resource of the program: imported (with the in-place changes the first `up` makes, or the fields
    that would replace it), or created."""
    from offline.catalogue import REFUSES, REPLACES

    replaces = {entry.type: entry.paths for entry in REPLACES}
    never_sent = {entry.type: entry.paths for entry in REFUSES if entry.type == NODE_POOL}
    found: list[Verdict] = []
    for record in plan_resources:
        if not record.get("custom") or str(record["type"]).startswith("pulumi:providers:"):
            continue
        type_token = str(record["type"])
        name = existing_name(record)
        key = (type_token, name or "")
        if key not in adoption.ids:
            found.append(Verdict(record["urn"], type_token, record["name"], None))
            continue
        state = _state(adoption, type_token, key[1])
        forced = (*replaces.get(type_token, ()), *never_sent.get(type_token, ()))
        changes = adopt_state.changes(record, state, forced, adopt_state.NOT_COMPUTED.get(type_token, ()))
        found.append(Verdict(record["urn"], type_token, record["name"], adoption.ids[key], changes))
    return found


def run_program(adoption: Adoption) -> list[dict[str, Any]]:
    """The program's resources for the adopted config (offline engine; charts are not rendered: their objects are
    the charts' to create)."""
    from offline.engine import run_program as run

    return run(adoption.config, stack=adoption.stack).resources


def keep_replaced(adoption: Adoption, found: Sequence[Verdict]) -> list[Finding]:
    """Refuse every replacement: a keepable field is written into `adopted.keep` (one line naming it); any other is a
    refusal that stops the adoption."""
    pools = adoption.config["tpu-stack:tpuPools"]
    owner = {name: index for index, pool in enumerate(pools) for name in _pool_names(pool)}
    lines: list[Finding] = []
    for verdict in found:
        for change in verdict.replaced:
            path = next((p for p in KEEPABLE_POOL_FIELDS if change.path == p or change.path.startswith(p + ".")), None)
            index = owner.get(verdict.import_id.rsplit("/", 1)[-1]) if verdict.import_id else None
            if verdict.type == NODE_POOL and path and index is not None:
                keep = pools[index]["adopted"].setdefault("keep", [])
                if path not in keep:
                    keep.append(path)
                lines.append(
                    Finding(
                        "refused",
                        f"{verdict.name}: {change.path} {_show(change.old)} -> {_show(change.new)} would replace the "
                        f"slice; kept with tpuPools[{index}].adopted.keep: [{path}]",
                    )
                )
            else:
                raise AdoptError(
                    f"{verdict.name} ({verdict.type}): {change.path} {_show(change.old)} -> {_show(change.new)} "
                    "would replace it and tpu-stack has no setting that keeps it; adopt stops here"
                )
    return lines


def _pool_names(pool: Mapping[str, Any]) -> list[str]:
    names = (pool.get("adopted") or {}).get("nodePools")
    if names:
        return list(names)
    slices = int(pool.get("slices", 1))
    return [pool["name"]] if slices == 1 else [f"{pool['name']}-{i}" for i in range(slices)]


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def plan(adoption: Adoption) -> tuple[list[dict[str, Any]], list[Verdict]]:
    """Run the program on the adopted config; keep what would be replaced and run it again: the plan it writes
    replaces nothing."""
    resources = run_program(adoption)
    found = verdicts(adoption, resources)
    if any(v.replaced for v in found):
        adoption.findings += keep_replaced(adoption, found)
        resources = run_program(adoption)
        found = verdicts(adoption, resources)
        left = [f"{v.name}: {c.path}" for v in found for c in v.replaced]
        if left:
            raise AdoptError(f"still replaced after keeping: {', '.join(left)}")
    return resources, found


# ---- the import file ------------------------------------------------------------------------------------------


def import_file(adoption: Adoption, resources: Sequence[Mapping[str, Any]], found: Sequence[Verdict]) -> dict[str, Any]:
    """`pulumi import --file`: each imported resource with the name, type, parent and provider the program gives it,
    its component ancestors as components (pulumi 3.94+ creates them), and the kubernetes provider declared with the
    program's settings (pulumi's import file takes a provider's configuration as its `inputs`), so the URNs are the
    program's and the first `up` finds them in the state."""
    from components.gke_cluster import kubeconfig

    by_urn = {r["urn"]: r for r in resources}
    imported = {v.urn: v.import_id for v in found if v.import_id}
    wanted: dict[str, Mapping[str, Any]] = {}

    def add(urn: str) -> None:
        record = by_urn[urn]
        if urn in wanted:
            return
        parent = record.get("parent")
        if parent in by_urn:
            add(str(parent))
        provider = record.get("provider")
        if provider in by_urn:
            add(str(provider))
        wanted[urn] = record

    for urn in imported:
        add(urn)
    names = {urn: f"{r['name']}" for urn, r in wanted.items()}
    entries: list[dict[str, Any]] = []
    for urn, record in wanted.items():
        type_token = str(record["type"])
        entry: dict[str, Any] = {"type": type_token, "name": record["name"]}
        if record.get("parent") in wanted:
            entry["parent"] = names[str(record["parent"])]
        if record.get("provider") in wanted:
            entry["provider"] = names[str(record["provider"])]
        if type_token.startswith("pulumi:providers:"):
            inputs = dict(record.get("inputs") or {})
            inputs["kubeconfig"] = kubeconfig(adoption.config["tpu-stack:cluster"]["name"], adoption.dns_endpoint)
            inputs["clusterIdentifier"] = adoption.dns_endpoint
            entry["inputs"] = inputs
            entry["version"] = PROVIDER_VERSIONS["kubernetes"]
        elif not record.get("custom"):
            entry["component"] = True
        else:
            entry["id"] = imported[urn]
            entry["version"] = PROVIDER_VERSIONS[type_token.split(":")[0]]
        entries.append(entry)
    return {"resources": entries}


# ---- the report -----------------------------------------------------------------------------------------------


def report(adoption: Adoption, found: Sequence[Verdict]) -> str:
    lines = [f"Adopting cluster {adoption.config['tpu-stack:cluster']['name']} as stack {adoption.stack}", ""]
    imported = [v for v in found if v.import_id]
    created = [v for v in found if not v.import_id]
    updated = [v for v in imported if v.changes]
    lines.append(
        f"{len(imported)} imported ({len(updated)} then updated in place, {len(imported) - len(updated)} unchanged), "
        f"0 replaced, {len(created)} created"
    )
    lines.append("")
    lines.append("Imported (pulumi import --file import.json), then the first `pulumi up`:")
    for verdict in imported:
        lines.append(f"  = {verdict.type} {verdict.name} ({verdict.import_id})")
        for change in verdict.changes:
            lines.append(f"      ~ {change.path}: {_show(change.old)} -> {_show(change.new)}")
    if created:
        lines.append("")
        lines.append("Created by the first `pulumi up` (the stack has them, the cluster does not):")
        lines += [f"  + {v.type} {v.name}" for v in created]
    for kind, title in (
        ("refused", "Refused (would replace; the config that keeps it is written) or not adoptable:"),
        ("kept", "Kept as they are:"),
        ("not-adopted", "Not adopted (outside the stack, left as they are):"),
    ):
        chosen = [f.line for f in adoption.findings if f.kind == kind]
        if chosen:
            lines += ["", title, *(f"  - {line}" for line in chosen)]
    return "\n".join(lines) + "\n"


def write(adoption: Adoption, out: Path, stack_file: Path) -> tuple[list[Verdict], str]:
    """Write the stack file, the import file and the report; returns the verdicts and the report."""
    resources, found = plan(adoption)
    out.mkdir(parents=True, exist_ok=True)
    text = report(adoption, found)
    (out / "report.txt").write_text(text)
    (out / "import.json").write_text(json.dumps(import_file(adoption, resources, found), indent=2) + "\n")
    stack = {"config": dict(adoption.config)}
    header = (
        f"# Adopted by `tpu-stack adopt` from cluster {adoption.config['tpu-stack:cluster']['name']}: import first\n"
        f"# (`pulumi import --file {out / 'import.json'} --stack {adoption.stack} --protect=false "
        "--generate-code=false`), then `pulumi up`. docs/adopt.md.\n"
    )
    stack_file.write_text(header + yaml.safe_dump(stack, sort_keys=False))
    return found, text
