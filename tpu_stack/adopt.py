"""`tpu-stack adopt`: take over a cluster that xpk or Cluster Toolkit made, without re-creating it.

Reads an existing cluster (saved outputs, or live through the GKE API and the cluster's Kubernetes API with the user's
own credentials), describes what is there in tpu-stack's config (pool groups from node pools, xpk's N identical slice
pools as one group of N slices; shapes from machine types and topologies; provisioning from the pools' flags; the
queues from the Kueue objects, v1beta1 converted to v1beta2), runs the program offline on that config, and writes:
- `Pulumi.<stack>.yaml`: the stack as it is, with the existing names, the settings a change of which would replace a
  slice, and `cluster.adopted.imports`: every resource of the program that exists, which the first `pulumi up`
  imports (the `import` resource option; components/adoption.py) and then updates in place;
- `adopt/<stack>/existing/`: what was read, the saved outputs `python -m offline preview --existing` judges the plan by;
- `adopt/<stack>/report.txt`: per resource the import and the in-place changes; the chart objects the first `up`
  takes over and the provider settings it needs; what is kept, refused or not adopted.

Anything the first update would replace is kept as found, with one line naming the config that keeps it, and that
config is written. What cannot be adopted at all is refused: one line naming the config key and what to change, and
`tpu-stack adopt` exits 2; it is never dropped.
"""

from __future__ import annotations

import datetime
import json
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from components import tpu_catalog
from components.config.adopted import KEEPABLE_POOL_FIELDS
from components.config.base import JOBSET_NAMESPACE, KUEUE_NAMESPACE, zone_region
from components.xpk_accelerators import XPK_ACCELERATORS
from offline.imports import (
    CLUSTER,
    KUEUE_GROUP,
    KUEUE_VERSION,
    NODE_POOL,
    Existing,
    Verdict,
    short_name,
    show_value,
    type_group_kind,
)
from tpu_stack.adopt_errors import AdoptError

if TYPE_CHECKING:
    from offline.takeover import Plan as TakeoverPlan

WORKLOAD_KINDS = ("JobSet", "Job", "Workload", "LeaderWorkerSet")
GKE_API = "https://container.googleapis.com"
"""The GKE API's REST endpoint (container.googleapis.com, API v1)."""
COMPUTE_API = "https://compute.googleapis.com"
"""The Compute Engine API's REST endpoint (v1): the cluster's subnetwork (subnetworks.get), whose primary range holds
the nodes."""
CLUSTER_KINDS = {
    "namespaces": ("", "v1", "Namespace"),
    "priorityclasses": ("scheduling.k8s.io", "v1", "PriorityClass"),
    "resourceflavors": (KUEUE_GROUP, KUEUE_VERSION, "ResourceFlavor"),
    "clusterqueues": (KUEUE_GROUP, KUEUE_VERSION, "ClusterQueue"),
    "localqueues": (KUEUE_GROUP, KUEUE_VERSION, "LocalQueue"),
    "cohorts": (KUEUE_GROUP, KUEUE_VERSION, "Cohort"),
    "admissionchecks": (KUEUE_GROUP, KUEUE_VERSION, "AdmissionCheck"),
    "provisioningrequestconfigs": (KUEUE_GROUP, KUEUE_VERSION, "ProvisioningRequestConfig"),
    "jobsets": ("jobset.x-k8s.io", "v1alpha2", "JobSet"),
    "customresourcedefinitions": ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    "clusterroles": ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    "clusterrolebindings": ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
    "mutatingwebhookconfigurations": ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"),
    "validatingwebhookconfigurations": ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"),
    "apiservices": ("apiregistration.k8s.io", "v1", "APIService"),
}
"""What adopt reads cluster-wide (the first command of docs/adopt.md): plural -> (group, version, kind)."""
NAMESPACED_KINDS = {
    "deployments": ("apps", "v1", "Deployment"),
    "services": ("", "v1", "Service"),
    "serviceaccounts": ("", "v1", "ServiceAccount"),
    "configmaps": ("", "v1", "ConfigMap"),
    "roles": ("rbac.authorization.k8s.io", "v1", "Role"),
    "rolebindings": ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
}
"""What adopt reads in the namespaces the Kueue and JobSet installs live in (and RoleBindings in kube-system, where
Kueue's visibility server is granted its reader role); never Secrets."""
INSTALL_NAMESPACES = (KUEUE_NAMESPACE, JOBSET_NAMESPACE)


def adc_token() -> str:
    """An access token of the user's Application Default Credentials, as gcloud prints it (`gcloud auth
    application-default print-access-token`): the same credentials the kubeconfig's gke-gcloud-auth-plugin uses.
    Kept in memory for the two GKE calls only."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        raise AdoptError("gcloud is not on PATH: install the Google Cloud CLI to read the cluster live, or use --from")
    try:
        done = subprocess.run(
            [gcloud, "auth", "application-default", "print-access-token"], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        raise AdoptError("gcloud gave no access token within 60 s; try again, or use --from") from None
    if done.returncode != 0 or not done.stdout.strip():
        raise AdoptError(
            "no Application Default Credentials: run `gcloud auth application-default login`, or use --from"
        )
    return done.stdout.strip()


def read_live(
    project: str,
    location: str,
    name: str,
    kubeconfig: dict[str, Any],
    *,
    kubeconfig_path: Path | None = None,
    context: str | None = None,
) -> Existing:
    """The cluster from the GKE API (projects.locations.clusters.get and .nodePools.list) with the user's Application
    Default Credentials, and from its Kubernetes API with the user's kubeconfig what the saved-output commands of
    docs/adopt.md print: the same objects, so both give the same stack file. Nothing read is a Secret, and no
    credential is kept."""
    from tpu_stack import kube

    token = adc_token()
    base = f"{GKE_API}/v1/projects/{project}/locations/{location}/clusters/{name}"
    cluster = _gke_get(base, token)
    pools = _gke_get(f"{base}/nodePools", token).get("nodePools") or []
    # networkConfig.subnetwork: `projects/P/regions/R/subnetworks/S` (the host project's, on a Shared VPC).
    subnet = str((cluster.get("networkConfig") or {}).get("subnetwork") or "")
    subnetwork = _gke_get(f"{COMPUTE_API}/compute/v1/{subnet}", token) if subnet.startswith("projects/") else None
    api = kube.Cluster(kubeconfig, path=kubeconfig_path, context=context)
    objects: list[dict[str, Any]] = []

    def listed(plural: str, group: str, version: str, kind: str, namespace: str | None = None) -> None:
        try:
            items = api.list(kube.path(group, version, plural, namespace=namespace))
        except kube.NotFound:
            return  # an API the cluster does not serve (Kueue or JobSet not installed)
        objects.extend({"apiVersion": f"{group}/{version}" if group else version, "kind": kind, **o} for o in items)

    try:
        for plural, (group, version, kind) in CLUSTER_KINDS.items():
            listed(plural, group, version, kind)
        for namespace in INSTALL_NAMESPACES:
            for plural, (group, version, kind) in NAMESPACED_KINDS.items():
                listed(plural, group, version, kind, namespace)
        listed("rolebindings", *NAMESPACED_KINDS["rolebindings"], "kube-system")
    finally:
        api.close()
    return Existing(cluster, list(pools), objects, subnetwork)


def _gke_get(url: str, token: str) -> dict[str, Any]:
    """One GKE (or Compute) API read; an error is one line with the API's own message (google.rpc.Status
    `message`)."""
    import requests

    try:
        response = requests.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    except requests.RequestException as error:
        raise AdoptError(f"{_api_name(url)} {url}: cannot reach it ({type(error).__name__})") from None
    if response.status_code != 200:
        try:
            said = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            said = response.text[:200]
        raise AdoptError(f"{_api_name(url)} {url}: {response.status_code} {said}")
    found: dict[str, Any] = response.json()
    return found


def _api_name(url: str) -> str:
    return "Compute API" if url.startswith(COMPUTE_API) and "/compute/v1/" in url else "GKE API"


# ---- what is there, in tpu-stack's terms ----------------------------------------------------------------------


@dataclass
class Finding:
    kind: str
    """refused | not-adopted | kept | opt-in"""
    line: str


@dataclass
class Adoption:
    stack: str
    project: str
    region: str
    config: dict[str, Any]
    """The `config:` mapping of Pulumi.<stack>.yaml."""
    existing: Existing
    findings: list[Finding] = field(default_factory=list)

    @property
    def adopted(self) -> dict[str, Any]:
        found: dict[str, Any] = self.config["tpu-stack:cluster"]["adopted"]
        return found


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
    "nodeConfig.workloadMetadataConfig": lambda p: (
        ((p.get("config") or {}).get("workloadMetadataConfig") or {}).get("mode") != "GKE_METADATA"
    ),
    "upgradeSettings": lambda p: bool(p.get("upgradeSettings")),
}
"""Settings tpu-stack does not model that a pool may carry: kept as they are (adopted.keep), each named in the
report. gVNIC, host maintenance, COMPACT placement and max pods per node: xpk's node pool flags (xpk 1.16.0
core/nodepool.py); additional networks, disk type and size, the TPU taint, sysctls: Cluster Toolkit's
modules/compute/gke-node-pool/main.tf. The metadata mode and the upgrade settings are kept as found and offered as
opt-ins (OPT_INS): a running slice changes only when its team asks."""

OPT_INS = {
    "nodeConfig.workloadMetadataConfig": (
        "Workload Identity's metadata server (GKE_METADATA) on {pools}, found {found}: opt in by removing "
        "nodeConfig.workloadMetadataConfig from tpuPools[{index}].adopted.keep, then `pulumi up --target` one pool's "
        "URN at a time between runs: the change re-creates the pool's nodes (so third-party accounts of GKE; not "
        "found in Google's docs), and pods off the host network lose the node account's tokens (xpk's JobSets run "
        "on the host network and keep them)"
    ),
    "upgradeSettings": (
        "the stack's upgrade settings on {pools}, found {found}: opt in by removing upgradeSettings from "
        "tpuPools[{index}].adopted.keep (a reserved slice then upgrades with no surge VM and all its VMs at once, "
        "which a reservation without a spare VM needs; do it between runs)"
    ),
}
"""Hardened settings the first `up` leaves as found on adopted slices, with the change that opts in."""


def _network(
    saved: Existing, cluster_config: dict[str, Any], adopted: dict[str, Any], keep: list[str]
) -> list[Finding]:
    """The cluster's network as it is: its network and subnetwork, its node, pod and Service ranges, private or public
    nodes, its control plane's peering range and its DNS provider. Each of these the stack would otherwise set to its
    own (a VPC of its own, ranges in 10.0.0.0/8, private nodes, Cloud DNS): a new network, subnetwork or range is a
    new cluster (ForceNew in resource_container_cluster.go), and the others change every node."""
    cluster = saved.cluster
    name = str(cluster["name"])
    network = cluster.get("networkConfig") or {}
    policy = cluster.get("ipAllocationPolicy") or {}
    if not policy.get("useIpAliases"):
        raise AdoptError(
            f"cluster {name}: a routes-based cluster (no IP aliases); tpu-stack's clusters are VPC-native, and "
            "ipAllocationPolicy cannot change without re-creating the cluster"
        )
    if saved.subnetwork is None:
        raise AdoptError(
            f"cluster {name}: the subnetwork's node range is not among the saved outputs; save it with `gcloud compute "
            f"networks subnets describe {short_name(cluster.get('subnetwork'))} --region "
            f"{zone_region(str(cluster['location'])) or cluster['location']} --format json > subnetwork.json`"
        )
    cluster_config["network"] = short_name(network.get("network") or cluster.get("network"))
    cluster_config["subnetwork"] = short_name(network.get("subnetwork") or cluster.get("subnetwork"))
    cluster_config["ipRanges"] = {
        "nodes": saved.subnetwork["ipCidrRange"],
        "pods": policy.get("clusterIpv4CidrBlock"),
        "services": policy.get("servicesIpv4CidrBlock"),
    }
    findings = [
        Finding(
            "kept",
            f"cluster {name}: network {cluster_config['network']}, subnetwork {cluster_config['subnetwork']} and its "
            f"ranges (nodes {saved.subnetwork['ipCidrRange']}, pods {policy.get('clusterIpv4CidrBlock')}, Services "
            f"{policy.get('servicesIpv4CidrBlock')}): the stack makes no VPC or subnetwork of its own "
            "(cluster.network, cluster.subnetwork, cluster.ipRanges)",
        )
    ]
    private = bool(network.get("defaultEnablePrivateNodes"))
    cluster_config["privateNodes"] = private
    master = (cluster.get("privateClusterConfig") or {}).get("masterIpv4CidrBlock")
    if master:
        cluster_config["controlPlane"] = {"masterIpv4Cidr": master}
    if private:
        adopted["existingNat"] = True
        findings.append(
            Finding(
                "kept",
                f"cluster {name}: private nodes, with the egress the network has; the stack makes no Cloud NAT "
                "(cluster.adopted.existingNat: a second NAT gateway for the same subnetwork ranges is refused)",
            )
        )
    else:
        findings.append(
            Finding(
                "kept",
                f"cluster {name}: public nodes kept (cluster.privateNodes: false). Private nodes are tpu-stack's "
                "default and the provider changes them in place (UpdateCluster desiredDefaultEnablePrivateNodes); turn "
                "them on in a change of their own once the network has Cloud NAT for the nodes' egress",
            )
        )
    dns = network.get("dnsConfig") or {}
    provider = dns.get("clusterDns") or "PLATFORM_DEFAULT"
    if provider == "CLOUD_DNS" and dns.get("clusterDnsScope") == "CLUSTER_SCOPE" and not dns.get("clusterDnsDomain"):
        cluster_config["dns"] = "cloud-dns"
    elif provider == "CLOUD_DNS":
        keep.append("dnsConfig")
        findings.append(
            Finding(
                "kept",
                f"cluster {name}: Cloud DNS with scope {dns.get('clusterDnsScope')} kept as it is "
                "(cluster.adopted.keep: [dnsConfig]); GKE cannot change a cluster's DNS scope",
            )
        )
    else:
        cluster_config["dns"] = "kube-dns"
        findings.append(
            Finding(
                "kept",
                f"cluster {name}: kube-dns kept (cluster.dns: kube-dns). Cloud DNS is tpu-stack's default and the "
                "provider changes it in place (UpdateCluster desiredDnsConfig), on nodes created after the change",
            )
        )
    return findings


def _maintenance(cluster: Mapping[str, Any], cluster_config: dict[str, Any], keep: list[str]) -> list[Finding]:
    """The cluster's maintenance window and exclusions as they are: without them the first update removes them (the
    program's none), and the slices are open to node upgrades that restart them. A daily window and exclusions with
    an end time are `cluster.maintenance` (components/gke_cluster.py writes them back the same); anything else (a
    recurring window, an exclusion until end of support as Cluster Toolkit's gke-tpu-v6e sets) is kept whole."""
    window = (cluster.get("maintenancePolicy") or {}).get("window") or {}
    if not window:
        return []
    name = str(cluster["name"])
    daily = (window.get("dailyMaintenanceWindow") or {}).get("startTime")
    exclusions = []
    mappable = bool(daily) and not window.get("recurringWindow")
    for key, exclusion in sorted((window.get("maintenanceExclusions") or {}).items()):
        options = exclusion.get("maintenanceExclusionOptions") or {}
        if options.get("endTimeBehavior") or not exclusion.get("endTime"):
            mappable = False
        exclusions.append(
            {"name": key, "startTime": exclusion.get("startTime"), "endTime": exclusion.get("endTime"),
             "scope": options.get("scope", "NO_UPGRADES")}
        )  # fmt: skip
    if mappable:
        cluster_config["maintenance"] = {"dailyStartTime": daily, **({"exclusions": exclusions} if exclusions else {})}
        return [Finding("kept", f"cluster {name}: its maintenance window and exclusions (cluster.maintenance)")]
    keep.append("maintenancePolicy")
    names = ", ".join(e["name"] for e in exclusions) or "none"
    return [
        Finding(
            "kept",
            f"cluster {name}: maintenance window and exclusions ({names}) kept as they are (cluster.adopted.keep: "
            "[maintenancePolicy]): tpu-stack's cluster.maintenance cannot say them (a recurring window, or an "
            "exclusion until end of support), and removing them would open the slices to node upgrades",
        )
    ]


def interpret(saved: Existing, *, stack: str, project: str | None = None) -> Adoption:
    """The cluster in tpu-stack's config, and what adopt finds it cannot take (each a line of the report)."""
    cluster = saved.cluster
    project = project or saved.project
    if not project:
        raise AdoptError("the cluster's selfLink names no project; pass --project")
    location = str(cluster["location"])
    region = zone_region(location) or location
    name = str(cluster["name"])
    if (cluster.get("autopilot") or {}).get("enabled"):
        raise AdoptError(f"cluster {name}: Autopilot clusters have no node pools to adopt; tpu-stack adopts Standard")
    findings: list[Finding] = []

    cluster_config: dict[str, Any] = {"name": name, "location": location}
    channel = (cluster.get("releaseChannel") or {}).get("channel", "UNSPECIFIED")
    cluster_config["releaseChannel"] = channel
    # The import reads deletion_protection as true (resourceContainerClusterStateImporter): kept, the first update
    # does not lower the provider's guard on a cluster whose slices took days to get.
    cluster_config["deletionProtection"] = True
    adopted_cluster: dict[str, Any] = {}
    keep_cluster: list[str] = []
    findings += _network(saved, cluster_config, adopted_cluster, keep_cluster)
    datapath = (cluster.get("networkConfig") or {}).get("datapathProvider", "LEGACY_DATAPATH")
    if datapath != "ADVANCED_DATAPATH":
        keep_cluster.append("datapathProvider")
        findings.append(
            Finding(
                "kept",
                f"cluster {name}: datapathProvider {datapath} kept (cluster.adopted.keep: [datapathProvider]): "
                "ADVANCED_DATAPATH would recreate the cluster (ForceNew); NetworkPolicies are not enforced on it",
            )
        )
    if (cluster.get("networkConfig") or {}).get("enableMultiNetworking"):
        keep_cluster.append("enableMultiNetworking")
    findings += _maintenance(cluster, cluster_config, keep_cluster)
    profile = (cluster.get("autoscaling") or {}).get("autoscalingProfile")
    if profile and profile != "BALANCED":
        # xpk sets OPTIMIZE_UTILIZATION (commands/cluster.py --autoscaling-profile). The stack sets no
        # cluster_autoscaling on Standard, an Optional+Computed block (terraform-provider-google
        # resource_container_cluster.go), so nothing changes it; kept, it stays if a later stack sets that block.
        keep_cluster.append("clusterAutoscaling")
        findings.append(
            Finding(
                "kept",
                f"cluster {name}: autoscaling profile {profile} kept as found (cluster.adopted.keep: "
                "[clusterAutoscaling])",
            )
        )

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
            findings.append(Finding("not-adopted", _other_pool_line(pool)))
    shared = _shared_labels(cluster, [system, *tpu_pools] if system is not None else tpu_pools)
    labels_kept = _labels_kept(cluster, shared)
    if labels_kept:
        keep_cluster.append("resourceLabels")
        findings.append(Finding("kept", f"cluster {name}: labels {labels_kept} kept (cluster.adopted.keep: "
                                        "[resourceLabels]): the stack's labels are not added to it"))  # fmt: skip
    if system is not None:
        config_of = system.get("config") or {}
        adopted_cluster["systemPool"] = {
            "serviceAccount": config_of.get("serviceAccount", "default"),
            "oauthScopes": sorted(config_of.get("oauthScopes") or []),
            "keep": [path for path in ("nodeConfig.diskType", "nodeConfig.labels", "nodeConfig.taints",
                                       "nodeConfig.shieldedInstanceConfig") if path in KEEPABLE_POOL_FIELDS]
                    + (["nodeConfig.gvnic"] if "gvnic" in config_of else [])
                    + (["nodeConfig.resourceLabels"] if _labels_kept(system, shared) else []),
        }  # fmt: skip
        scaling = system.get("autoscaling") or {}
        cluster_config["systemPool"] = {
            "machineType": config_of.get("machineType"),
            "diskSizeGb": config_of.get("diskSizeGb", 100),
            "minNodes": scaling.get("totalMinNodeCount", 1),
            "maxNodes": scaling.get("totalMaxNodeCount", 3),
            **_max_pods(system),
        }
        findings.append(
            Finding("kept", "node pool system: imported as the stack's system pool, its account and scopes kept")
        )
    if keep_cluster:
        adopted_cluster["keep"] = keep_cluster
    cluster_config["adopted"] = adopted_cluster

    pool_configs: list[dict[str, Any]] = []
    for group in _groups(tpu_pools):
        first = group[0]
        mode, detail = _provisioning(first)
        names = [p["name"] for p in group]
        if mode is None:
            findings.append(
                Finding(
                    "refused",
                    f"tpu-stack:tpuPools: node pool{'s' if len(names) > 1 else ''} {', '.join(names)} not adopted: "
                    f"{detail}; left as it runs, outside the stack (neither updated nor deleted): to bring its "
                    "capacity in, add a pool group the stack supports and move the work there, then delete it",
                )
            )
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
        entry.update(_max_pods(first))
        # Slice i of a group is node pool <name>-<i> (xpk's <cluster>-np-<i> with the group named <cluster>-np); a
        # one-slice group's pool named as the group keeps that name (legacyFirstSliceName); other names are listed.
        adopted: dict[str, Any] = {}
        if names == [group_name]:
            entry["legacyFirstSliceName"] = True
        elif names != [f"{group_name}-{i}" for i in range(len(group))]:
            adopted["nodePools"] = names
        adopted["serviceAccount"] = node_config.get("serviceAccount", "default")
        adopted["oauthScopes"] = sorted(node_config.get("oauthScopes") or [])
        keep = [path for path, has in KEEP_BY_FLAG.items() if has(first)]
        if any(_labels_kept(p, shared) for p in group):
            keep.append("nodeConfig.resourceLabels")
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
            if path in OPT_INS:
                found = _found(first, path)
                text = OPT_INS[path].format(pools=_span(names), found=found, index=len(pool_configs))
                findings.append(Finding("opt-in", text))
        pool_configs.append(entry)

    queues, kube_findings = _queues(saved.objects, pool_configs)
    findings += kube_findings
    config: dict[str, Any] = {
        "gcp:project": project,
        "gcp:region": region,
        "tpu-stack:cluster": cluster_config,
        "tpu-stack:tpuPools": pool_configs,
        "tpu-stack:queues": queues,
    }
    if shared:
        config["tpu-stack:labels"] = shared
        line = f"labels {_show_labels(shared)}: on the cluster and every pool, kept as tpu-stack:labels"
        findings.append(Finding("kept", line + " (they go on every resource the stack makes too)"))
    return Adoption(stack, project, region, config, saved, findings)


_STACK_LABELS = ("managed-by", "app", "env", "tpu-pool")
"""Labels the stack sets itself (StackConfig.resource_labels; node pools' tpu-pool)."""


def _own_labels(resource: Mapping[str, Any]) -> dict[str, str]:
    """A cluster's or node pool's Google Cloud labels, less GKE's own `goog-*` (the provider ignores those:
    node_config.go containerNodePoolResourceLabelsDiffSuppress)."""
    labels = resource.get("resourceLabels") or (resource.get("config") or {}).get("resourceLabels") or {}
    return {str(k): str(v) for k, v in labels.items() if not str(k).startswith("goog-")}


def _shared_labels(cluster: Mapping[str, Any], pools: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The labels the cluster and all its adopted pools carry alike (Cluster Toolkit's ghpc_blueprint and
    ghpc_deployment, by which its billing reports group a deployment): written to tpu-stack:labels, so the first `up`
    keeps them, and the stack's new resources carry them too."""
    shared = {k: v for k, v in _own_labels(cluster).items() if k not in _STACK_LABELS}
    for pool in pools:
        labels = _own_labels(pool)
        shared = {k: v for k, v in shared.items() if labels.get(k) == v}
    return shared


def _labels_kept(resource: Mapping[str, Any], shared: Mapping[str, str]) -> str:
    """The labels of a cluster or pool that tpu-stack:labels does not carry (e.g. Toolkit's ghpc_module, ghpc_role,
    xpk's gke_product_type), shown; "" when there are none. Such a resource keeps its labels as they are (adopted.keep),
    since the stack would otherwise remove them."""
    rest = {k: v for k, v in _own_labels(resource).items() if shared.get(k) != v}
    return _show_labels(rest)


def _show_labels(labels: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _other_pool_line(pool: Mapping[str, Any]) -> str:
    """A CPU pool the stack does not declare (Cluster Toolkit's cpu-np for Pathways, a team's own): never imported, so
    the engine never updates or deletes it; what that means for its owner."""
    machine = (pool.get("config") or {}).get("machineType", "?")
    return (
        f"node pool {pool['name']} ({machine}): not adopted: the stack does not declare it, so `pulumi up` and "
        "`pulumi destroy` neither updates nor deletes it; it stays as it runs and goes only with the cluster. Resize "
        f"or delete it with `gcloud container node-pools` ({pool['name']}), and keep it out of the old tool's state "
        "removal only if that tool is to keep managing it"
    )


def _found(pool: Mapping[str, Any], path: str) -> str:
    if path == "upgradeSettings":
        return show_value(pool.get("upgradeSettings"))
    mode = ((pool.get("config") or {}).get("workloadMetadataConfig") or {}).get("mode")
    return str(mode or "unset")


def _max_pods(pool: Mapping[str, Any]) -> dict[str, int]:
    """The pool's maxPodsPerNode as GKE reports it (ForceNew: resource_container_node_pool.go max_pods_per_node), so
    the stack's defaults (15 for TPU pools, 110 for the system pool) replace no pool that has another."""
    pods = (pool.get("maxPodsConstraint") or {}).get("maxPodsPerNode")
    return {"maxPodsPerNode": int(pods)} if pods is not None else {}


def _span(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"


def _queues(objects: Sequence[dict[str, Any]], pools: list[dict[str, Any]]) -> tuple[dict[str, Any], list[Finding]]:
    """The queues from the Kueue objects: one ClusterQueue and its LocalQueue become queues.clusterQueue/localQueue
    (xpk's cluster-queue and default/multislice-queue), each ResourceFlavor the adopted name of the pool group whose
    nodes carry its nodeLabels, the PriorityClasses as they are."""
    from components.config.pools import TpuPoolConfig

    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(str(obj.get("kind")), []).append(obj)
    findings: list[Finding] = []
    queues: dict[str, Any] = {}
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
                f"tpu-stack:queues: ClusterQueues {names} not adopted: more than one queue or a Cohort; adopt takes "
                "one ClusterQueue and its LocalQueue: declare the others as tpu-stack:teams (<team>-queue, "
                "<team>-cluster-queue), move their workloads, then delete them; until then they stay as they run",
            )
        )
        return queues, findings
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
    if local_queues:
        queues["localQueue"] = local_queues[0]["metadata"]["name"]
        queues["namespace"] = local_queues[0]["metadata"].get("namespace", "default")
    models = []
    for entry in pools:
        fields = {k: v for k, v in entry.items() if k != "adopted"}
        models.append((entry, TpuPoolConfig.model_validate({**fields, "zone": entry.get("zone")})))
    for flavor in by_kind.get("ResourceFlavor", []):
        wanted = (flavor.get("spec") or {}).get("nodeLabels") or {}
        matching = [e for e, model in models if wanted.items() <= model.node_labels.items()]
        if len(matching) == 1:
            matching[0]["adopted"]["flavor"] = flavor["metadata"]["name"]
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
    # Kubernetes' own classes (system-cluster-critical, system-node-critical) are the API server's; the rest in the
    # order of their values, however the API listed them.
    priorities = sorted(
        (p for p in by_kind.get("PriorityClass", []) if not p["metadata"]["name"].startswith("system-")),
        key=lambda p: (p["value"], p["metadata"]["name"]),
    )
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
    return queues, findings


# ---- the first update, modelled offline -----------------------------------------------------------------------


def existing_id(record: Mapping[str, Any], existing: Existing, project: str) -> str | None:
    """The import ID of the program's resource when it exists in the cluster: the cluster itself, its node pools by
    name, and a Kubernetes object the program declares (not a chart's) by kind, namespace and name."""
    inputs = record.get("inputs") or {}
    type_token = str(record["type"])
    if type_token == CLUSTER and inputs.get("name") == existing.name and inputs.get("location") == existing.location:
        return existing.cluster_id(project)
    if type_token == NODE_POOL and inputs.get("cluster") in (existing.name, None):
        names = {str(p.get("name")) for p in existing.node_pools}
        return f"{existing.cluster_id(project)}/nodePools/{inputs.get('name')}" if inputs.get("name") in names else None
    if type_token.startswith("kubernetes:") and not record.get("rendered") and "kind" in inputs:
        metadata = inputs.get("metadata") or {}
        group, kind = type_group_kind(type_token)
        namespace, name = metadata.get("namespace"), str(metadata.get("name"))
        if existing.object(group, kind, namespace, name) is not None:
            return f"{namespace}/{name}" if namespace else name
    return None


def imports(adoption: Adoption, resources: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """`cluster.adopted.imports`: every custom resource of the program that exists, by its engine URN (a name can be
    two resources under different parents; components/adoption.py matches the URN)."""
    urns = engine_urns(adoption.stack, resources)
    found = []
    for record in resources:
        if record.get("custom") and not str(record["type"]).startswith("pulumi:providers:"):
            import_id = existing_id(record, adoption.existing, adoption.project)
            if import_id is not None:
                found.append({"urn": urns[str(record["urn"])], "id": import_id})
    return found


def engine_urns(stack: str, resources: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The engine's URN of each resource the offline run recorded, by the mock monitor's (offline/urns.py)."""
    from components.config import PROJECT
    from offline.engine import Plan
    from offline.urns import engine_urn_of as resolve

    return resolve(Plan(project=PROJECT, stack=stack, resources=[dict(r) for r in resources]))


def run_program(adoption: Adoption) -> list[dict[str, Any]]:
    """The program's resources for the adopted config, charts rendered (offline engine), as a preview records them."""
    from components.config import load
    from offline.engine import _engine_config
    from offline.engine import run_program as run

    minor = load(_engine_config(adoption.config), stack=adoption.stack).cluster.kubernetes_minor
    return run(adoption.config, stack=adoption.stack, kubernetes_version=minor).resources


def keep_replaced(adoption: Adoption, found: Sequence[Verdict]) -> list[Finding]:
    """Refuse every replacement: a keepable field is written into `adopted.keep` (one line naming it); any other is a
    refusal that stops the adoption."""
    pools = adoption.config["tpu-stack:tpuPools"]
    owner = {name: index for index, pool in enumerate(pools) for name in _pool_names(pool)}
    lines: list[Finding] = []
    for verdict in found:
        for change in verdict.replaced:
            path = next((p for p in KEEPABLE_POOL_FIELDS if change.path == p or change.path.startswith(p + ".")), None)
            what = f"{change.path} {show_value(change.old)} -> {show_value(change.new)}"
            index = owner.get(verdict.import_id.rsplit("/", 1)[-1])
            if verdict.type == NODE_POOL and path and index is not None:
                keep = pools[index]["adopted"].setdefault("keep", [])
                if path not in keep:
                    keep.append(path)
                lines.append(
                    Finding(
                        "kept",
                        f"{verdict.name}: {change.path} kept (tpuPools[{index}].adopted.keep: [{path}]): {what} "
                        "would replace the slice",
                    )
                )
            else:
                raise AdoptError(
                    f"{verdict.name} ({verdict.type}): {what} would replace it and tpu-stack has no setting that keeps "
                    "it; adopt stops here"
                )
    return lines


def _pool_names(pool: Mapping[str, Any]) -> list[str]:
    """The node pools of a pool group entry, named as the program names them (TpuPoolConfig.slice_name)."""
    from components.config.pools import TpuPoolConfig

    return TpuPoolConfig.model_validate(pool).node_pool_names


@dataclass
class Outcome:
    """The adopted stack's first `pulumi up`, as the offline preview models it."""

    resources: list[dict[str, Any]]
    verdicts: list[Verdict]
    takeover: TakeoverPlan
    """The chart objects that exist, and what the old install leaves."""


def plan(adoption: Adoption) -> Outcome:
    """Run the program on the adopted config, import what exists, keep what would be replaced, and run it again until
    nothing changes: the stack file written imports every existing resource and replaces nothing."""
    from offline import imports as imported
    from offline import takeover

    resources = run_program(adoption)
    for _ in range(3):
        wanted = imports(adoption, resources)
        adoption.adopted["imports"] = wanted
        resources = run_program(adoption)
        found = imported.verdicts(resources, adoption.existing, adoption.project)
        if any(v.replaced for v in found):
            adoption.findings += keep_replaced(adoption, found)
            resources = run_program(adoption)
            found = imported.verdicts(resources, adoption.existing, adoption.project)
        if imports(adoption, resources) == wanted:
            break
    left = [f"{v.name}: {c.path}" for v in found for c in v.replaced]
    if left:
        raise AdoptError(f"still replaced after keeping: {', '.join(left)}")
    return Outcome(resources, found, takeover.plan(resources, adoption.existing, found))


# ---- the report -----------------------------------------------------------------------------------------------


def report(adoption: Adoption, outcome: Outcome) -> str:
    """What the first `pulumi up` does, resource by resource, and what adopt kept, refused or left out."""
    from offline import imports as imported
    from offline import takeover

    found = outcome.verdicts
    custom = [r for r in outcome.resources if r.get("custom") and not str(r["type"]).startswith("pulumi:providers:")]
    created = [r for r in custom if not r.get("importId") and not r.get("rendered")]
    updated = [v for v in found if v.updated]
    plan_ = outcome.takeover
    lines = [f"Adopting cluster {adoption.existing.name} as stack {adoption.stack}", ""]
    lines.append(
        f"{len(found)} imported ({len(updated)} then updated in place, {len(found) - len(updated)} unchanged), "
        f"0 replaced, {len(created)} created; the charts take over {len(plan_.takeovers)} existing objects"
    )
    lines += ["", "Imported by the first `pulumi up` (cluster.adopted.imports), then updated in place:"]
    lines += imported.lines(found)
    lines += protected_lines(adoption.stack, found, engine_urns(adoption.stack, outcome.resources))
    if created:
        lines += ["", "Created by the first `pulumi up` (the stack has them, the cluster does not):"]
        lines += [f"  + {r['type']} {r['name']}" for r in created]
    lines += takeover.lines(plan_, adoption.stack)
    lines += retire_lines(adoption.existing)
    for kind, title in (
        ("refused", "Refused (cannot be adopted; adopt exits 2):"),
        ("kept", "Kept as found (the config that keeps each is written):"),
        ("opt-in", "Kept as found; opt in one slice at a time:"),
        ("not-adopted", "Not adopted (outside the stack, left as they are):"),
    ):
        chosen = [f.line for f in adoption.findings if f.kind == kind]
        if chosen:
            lines += ["", title, *(f"  - {line}" for line in chosen)]
    return "\n".join(lines) + "\n"


def exceptions_lines(exceptions: Mapping[str, list[dict[str, str]]], path: Path) -> str:
    """The report's account of the dated policy exceptions adopt wrote, and how the real engine is given them."""
    lines = [
        "",
        f"Policy config: {path} (policies/config.json with the adopted pools' dated exceptions); pass it to every "
        f"preview and up: `--policy-config {path}` offline, `--policy-pack policies --policy-pack-config {path}` with "
        "pulumi",
    ]
    for policy, entries in sorted(exceptions.items()):
        for entry in entries:
            lines.append(f"  - {policy}: {entry['nodePool'].rsplit('/', 1)[-1]} until {entry['until']}")
    if exceptions:
        lines.append(
            "  Past its day an exception is a violation again: move the slices first (docs/adopt.md, Moving slices "
            "off the default account)"
        )
    return "\n".join(lines) + "\n"


def retire_lines(existing: Existing) -> list[str]:
    """How the tool that made the cluster stops acting on it (docs/adopt.md, Retire the old tool): told apart by the
    labels each gives the cluster (xpk 1.16.0 commands/cluster.py `gke_product_type=xpk`; Cluster Toolkit's
    `ghpc_*` labels)."""
    labels = existing.cluster.get("resourceLabels") or {}
    name = existing.name
    if labels.get("gke_product_type") == "xpk":
        return [
            "",
            "Retire xpk's control of the cluster (docs/adopt.md, Retire the old tool):",
            "  - `xpk workload create|list|delete` keep working; do not run `xpk cluster create`, "
            "`xpk cluster adapt` or `xpk cluster delete` against it (they re-apply xpk's Kueue objects, re-create "
            "pools, delete the cluster)",
            f"  - default/{name}-resources-configmap and default/{name}-metadata-configmap: kept for `xpk workload "
            "create`; update or delete them when the stack changes the slices",
        ]
    if any(key.startswith("ghpc_") for key in labels):
        return [
            "",
            "Retire Cluster Toolkit's control of the cluster (docs/adopt.md, Retire the old tool):",
            "  - back up the deployment's Terraform state, then for the cluster, its node pools and the Kueue and "
            "JobSet releases: terraform -chdir=<deployment>/primary state rm <address> (state list names them)",
            "  - never `gcluster destroy` or `terraform destroy` that deployment again: its state would delete them",
        ]
    return []


def protected_lines(stack: str, found: Sequence[Verdict], urns: Mapping[str, str]) -> list[str]:
    """The imported Google resources, protected whatever the stack's name (components/adoption.py), by URN, with the
    command that lets one go."""
    google = [v for v in found if v.type.startswith("gcp:")]
    if not google:
        return []
    return [
        "",
        "Protected (`pulumi destroy`, or a slice removed from the config, stops at them). To let one go on purpose, "
        "unprotect it, then remove it in a change of its own (docs/adopt.md, Letting a slice or the cluster go):",
        *(f"  pulumi state unprotect --stack {stack} '{urns[v.urn]}'" for v in google),
    ]


EXCEPTION_DAYS = 90
"""How long an adopted pool may keep the Compute Engine default account or its metadata mode (`--exception-days`)."""
DEFAULT_ACCOUNT = "no-default-compute-service-account"
WORKLOAD_IDENTITY = "workload-identity"


def _default_account(account: Any) -> bool:
    return account in (None, "", "default") or str(account).endswith("-compute@developer.gserviceaccount.com")


def policy_exceptions(
    adoption: Adoption, outcome: Outcome, *, days: int = EXCEPTION_DAYS, today: datetime.date | None = None
) -> dict[str, list[dict[str, str]]]:
    """Policy -> its dated exceptions for the adopted node pools the first `up` leaves as they are: the Compute
    Engine default account (ForceNew: a dedicated one re-creates the slice), a metadata mode other than
    GKE_METADATA (kept: turning it on re-creates the nodes). Each names the pool by its GKE ID, as the policy matches
    it (policies/guardrails/gke.py adopted_pool_exception)."""
    today = today or datetime.datetime.now(datetime.UTC).date()
    until = (today + datetime.timedelta(days=days)).isoformat()
    cluster = adoption.existing.name
    found: dict[str, list[dict[str, str]]] = {}
    for record in outcome.resources:
        if record["type"] != NODE_POOL or not record.get("importId"):
            continue
        node_config = (record.get("inputs") or {}).get("nodeConfig") or {}
        pool = str(record["importId"])
        if _default_account(node_config.get("serviceAccount")):
            reason = (
                f"adopted from {cluster} on {today.isoformat()}; runs as the Compute Engine default account (Editor on "
                "the project) with the cloud-platform scope; a dedicated account re-creates the slice (ForceNew): move "
                "its work to a new pool group, then remove it"
            )
            found.setdefault(DEFAULT_ACCOUNT, []).append({"nodePool": pool, "reason": reason, "until": until})
        mode = _existing_mode(adoption.existing, pool.rsplit("/", 1)[-1])
        if "nodeConfig.workloadMetadataConfig" in _kept_paths(record) and mode != "GKE_METADATA":
            reason = (
                f"adopted from {cluster} on {today.isoformat()}; metadata mode {mode or 'unset'} kept: turning on "
                "the GKE metadata server re-creates the pool's nodes; opt in one slice at a time"
            )
            found.setdefault(WORKLOAD_IDENTITY, []).append({"nodePool": pool, "reason": reason, "until": until})
    return found


def _existing_mode(existing: Existing, name: str) -> str | None:
    pool = next((p for p in existing.node_pools if p.get("name") == name), {})
    mode = ((pool.get("config") or {}).get("workloadMetadataConfig") or {}).get("mode")
    return str(mode) if mode else None


def _kept_paths(record: Mapping[str, Any]) -> list[str]:
    return [str(path) for path in record.get("ignoreChanges") or ()]


def policy_config(exceptions: Mapping[str, list[dict[str, str]]]) -> dict[str, Any]:
    """The team's policy config (policies/config.json, its reviewed exceptions kept) with the adopted pools'."""
    from offline.policy_check import TEAM_CONFIG

    config: dict[str, Any] = json.loads(TEAM_CONFIG.read_text()) if TEAM_CONFIG.is_file() else {}
    for policy, entries in exceptions.items():
        entry = config.get(policy)
        entry = dict(entry) if isinstance(entry, Mapping) else ({"enforcementLevel": entry} if entry else {})
        entry["exceptions"] = [*(entry.get("exceptions") or []), *entries]
        config[policy] = entry
    return config


def write(
    adoption: Adoption,
    out: Path,
    stack_file: Path,
    *,
    exception_days: int = EXCEPTION_DAYS,
    today: datetime.date | None = None,
) -> tuple[Outcome, str]:
    """Write the stack file, what was read (out/existing/), the policy config with the adopted pools' dated
    exceptions (out/policy-config.json) and the report; returns the outcome and the report."""
    outcome = plan(adoption)
    out.mkdir(parents=True, exist_ok=True)
    exceptions = policy_exceptions(adoption, outcome, days=exception_days, today=today)
    (out / "policy-config.json").write_text(json.dumps(policy_config(exceptions), indent=2) + "\n")
    text = report(adoption, outcome) + exceptions_lines(exceptions, out / "policy-config.json")
    (out / "report.txt").write_text(text)
    save_existing(adoption.existing, out / "existing")
    header = (
        f"# Adopted by `tpu-stack adopt` from cluster {adoption.existing.name}: the first `pulumi up` imports what\n"
        f"# cluster.adopted.imports lists. Report: {out / 'report.txt'}; docs/adopt.md.\n"
    )
    stack_file.write_text(header + yaml.safe_dump({"config": dict(adoption.config)}, sort_keys=False))
    return outcome, text


def save_existing(existing: Existing, folder: Path) -> None:
    """What adopt read, in the saved-output layout `python -m offline preview --existing` reads."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    (folder / "cluster.json").write_text(json.dumps(existing.cluster, indent=2) + "\n")
    (folder / "node-pools.json").write_text(json.dumps(existing.node_pools, indent=2) + "\n")
    if existing.subnetwork is not None:
        (folder / "subnetwork.json").write_text(json.dumps(existing.subnetwork, indent=2) + "\n")
    listed = {"apiVersion": "v1", "items": existing.objects, "kind": "List", "metadata": {"resourceVersion": ""}}
    (folder / "kubernetes.json").write_text(json.dumps(listed, indent=2) + "\n")
