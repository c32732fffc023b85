"""What an adopted cluster keeps as it is: the names and settings of node pools and of the cluster that exist
already (made by xpk or Cluster Toolkit), and the resources the first `pulumi up` imports (`tpu-stack adopt` writes
these; docs/adopt.md). Under cluster.py and pools.py, over base.py."""

from __future__ import annotations

import re

from pydantic import model_validator

from components.config.base import PROJECT, ConfigModel, dns_label_problem

KEEPABLE_POOL_FIELDS = {
    "nodeConfig.gvnic": "gVNIC (gcloud --enable-gvnic)",
    "nodeConfig.hostMaintenancePolicy": "host maintenance interval (gcloud --host-maintenance-interval)",
    "nodeConfig.diskType": "boot disk type",
    "nodeConfig.diskSizeGb": "boot disk size",
    "nodeConfig.imageType": "node image",
    "nodeConfig.metadata": "instance metadata",
    "nodeConfig.taints": "taints the pool declares besides GKE's own TPU taint",
    "nodeConfig.labels": "node labels the pool declares",
    "nodeConfig.resourceLabels": "Google Cloud labels of the nodes",
    "nodeConfig.linuxNodeConfig": "Linux sysctls and huge pages",
    "nodeConfig.shieldedInstanceConfig": "Shielded VM settings",
    "nodeConfig.workloadMetadataConfig": "metadata server mode (GKE_METADATA is Workload Identity)",
    "networkConfig": "additional node networks and accelerator network profile",
    "placementPolicy.type": "COMPACT placement (gcloud --placement-type)",
    "upgradeSettings": "surge upgrade settings",
    "management": "auto-repair and auto-upgrade as they are",
    "autoscaling": "autoscaling bounds as they are",
}
"""Node pool fields an adopted pool group may keep as they are (`adopted.keep`): settings tpu-stack does not model, or
models with another default; kept, the program leaves them to the state (Pulumi ignoreChanges). Path -> what it is."""


class AdoptedPoolConfig(ConfigModel):
    """Node pools that exist already (made by xpk or Cluster Toolkit; `tpu-stack adopt` writes this): their names and
    the settings the stack must keep, since changing them would replace the slices (the provider recreates a pool
    whose service account or scopes change)."""

    node_pools: tuple[str, ...] = ()
    """The existing GKE node pool names of the first slices, in slice order: slice i keeps the i-th name (xpk's
    `<cluster>-np-<i>`); slices added past the list are new node pools named `<name>-<i>`, like any group's.

    Default: the stack's names (`<name>-<i>`)"""
    flavor: str | None = None
    """The existing Kueue ResourceFlavor of the pool group (xpk: `<slices>x<accelerator>`, e.g. `4xv5litepod-16`).

    Default: the pool group's name"""
    service_account: str | None = None
    """The nodes' service account as GKE reports it (`default` is Compute Engine's default account).

    Default: the stack's node service account"""
    oauth_scopes: tuple[str, ...] = ()
    """The nodes' OAuth scopes as GKE reports them (full URLs).

    Default: cloud-platform"""
    keep: tuple[str, ...] = ()
    """Node pool fields kept as they exist (Pulumi ignoreChanges), e.g. `nodeConfig.gvnic`, `placementPolicy.type`;
    see *Adopted pool groups* below for the list (pods per node is the group's `maxPodsPerNode`)."""

    def problems(self, slices: int) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        if len(self.node_pools) > slices:
            problems.append(
                (
                    "adopted.nodePools",
                    f"names {len(self.node_pools)} node pools for {slices} slices; a slice removed is its node pool "
                    "deleted: remove the last names with it, or keep slices at the count of names",
                )
            )
        for index, name in enumerate(self.node_pools):
            problem = dns_label_problem(name, "node pool name")
            if problem:
                problems.append((f"adopted.nodePools[{index}]", problem))
        if len(set(self.node_pools)) < len(self.node_pools):
            problems.append(("adopted.nodePools", "names a node pool twice; each slice is its own pool"))
        if self.flavor is not None and (len(self.flavor) > 253 or not _K8S_OBJECT_NAME.match(self.flavor)):
            problems.append(
                ("adopted.flavor", f"{self.flavor!r} is not a Kubernetes name (lowercase letters, digits, '-', '.')")
            )
        for index, path in enumerate(self.keep):
            if path not in KEEPABLE_POOL_FIELDS:
                problems.append(
                    (
                        f"adopted.keep[{index}]",
                        f"{path!r} is no field the stack keeps; keepable: {', '.join(KEEPABLE_POOL_FIELDS)}",
                    )
                )
        return problems


_K8S_OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


KEEPABLE_CLUSTER_FIELDS = {
    "datapathProvider": "the datapath (a change recreates the cluster; LEGACY_DATAPATH enforces no NetworkPolicies)",
    "resourceLabels": "the cluster's Google Cloud labels",
    "addonsConfig": "add-ons as they are",
    "monitoringConfig": "monitoring as it is",
    "loggingConfig": "logging as it is",
    "maintenancePolicy": "the maintenance window as it is",
    "clusterAutoscaling": "node auto-provisioning and autoscaling profile",
    "enableMultiNetworking": "multi-networking (xpk, Cluster Toolkit's additional networks)",
    "privateClusterConfig": "private nodes and endpoint as they are",
    "masterAuthorizedNetworksConfig": "authorized networks as they are",
    "controlPlaneEndpointsConfig": "control plane endpoints as they are",
    "ipAllocationPolicy": "pod and service ranges",
    "dnsConfig": "Cloud DNS with a VPC scope or domain, as it is (GKE cannot change a cluster's DNS scope)",
    "workloadIdentityConfig": "Workload Identity as it is",
}
"""Cluster fields an adopted cluster may keep as they exist (`cluster.adopted.keep`, Pulumi ignoreChanges)."""


_TYPE_TOKEN = re.compile(r"^[a-z][a-z0-9-]*:[A-Za-z0-9./_-]+:[A-Za-z][A-Za-z0-9]*$")


_URN_PREFIX = "urn:pulumi:"
_OLDER_FORM = (
    "names its resource by type and name (an older tpu-stack adopt), which resources under different parents share; "
    f"write its URN instead (urn: urn:pulumi:STACK::{PROJECT}::PARENT_TYPE$TYPE::NAME, as `pulumi stack --show-urns` "
    "or the adopt report prints it) or run tpu-stack adopt again"
)


class ImportConfig(ConfigModel):
    """One existing resource the stack imports instead of creating: the program gives the resource with this URN
    Pulumi's `import` resource option. The engine then reads it through its provider and updates it in place where the
    program differs, in the same `pulumi up`; while the ID stays here it refuses to replace it (pulumi/pulumi
    pkg/resource/deploy/step_generator.go, since 3.174.0)."""

    urn: str
    """The engine's URN of the program's resource, e.g.
    `urn:pulumi:dev::tpu-stack::tpu-stack:index:TpuSlicePools$gcp:container/nodePool:NodePool::xpk-np-0`: the stack,
    the project, the types of its ancestors below the stack and its own joined by `$`, its name (pulumi/pulumi
    sdk/go/common/resource/urn/urn.go New). A name alone could be two resources under different parents."""
    id: str
    """The ID its provider reads it by: `projects/P/locations/L/clusters/C[/nodePools/N]`; a Kubernetes object's
    `namespace/name`, or `name` for a cluster-wide one."""

    @model_validator(mode="before")
    @classmethod
    def _not_the_older_form(cls, data: object) -> object:
        """The form before URNs ({type, name, id}): one line saying what to write instead."""
        if isinstance(data, dict) and "urn" not in data and ("type" in data or "name" in data):
            raise ValueError(_OLDER_FORM)
        return data

    @property
    def type(self) -> str:
        """The resource's own type, the last of the URN's type chain."""
        parts = self.urn.split("::")
        return parts[2].rsplit("$", 1)[-1] if len(parts) >= 4 else ""

    def problems(self, stack: str) -> list[tuple[str, str]]:
        parts = self.urn.removeprefix(_URN_PREFIX).split("::", 3)
        if not self.urn.startswith(_URN_PREFIX) or len(parts) != 4 or not all(parts):
            return [("urn", f"{self.urn!r} is not a URN (urn:pulumi:STACK::{PROJECT}::TYPE::NAME)")]
        problems: list[tuple[str, str]] = []
        if parts[0] != stack:
            problems.append(("urn", f"names stack {parts[0]!r}, not {stack!r}; the engine would import nothing"))
        if parts[1] != PROJECT:
            problems.append(("urn", f"names project {parts[1]!r}, not {PROJECT!r}"))
        if not _TYPE_TOKEN.match(self.type) or self.type.startswith(("pulumi:", f"{PROJECT}:")):
            problems.append(
                ("urn", f"{self.type!r} is not a resource type of the program (e.g. gcp:container/nodePool:NodePool)")
            )
        if not self.id:
            problems.append(("id", "empty; the ID the provider reads the resource by"))
        return problems


class AdoptedClusterConfig(ConfigModel):
    """A cluster that exists already (made by xpk or Cluster Toolkit), imported instead of created (`tpu-stack adopt`
    writes this; docs/adopt.md)."""

    default_pool: bool = False
    """GKE's `default-pool` exists and stays (xpk runs the controllers there). Without this the first update deletes
    it: the provider removes `default-pool` when an update turns on `remove_default_node_pool`
    (terraform-provider-google resource_container_cluster.go resourceContainerClusterUpdate)."""
    keep: tuple[str, ...] = ()
    """Cluster fields kept as they exist (Pulumi ignoreChanges), e.g. `datapathProvider`, `resourceLabels`."""
    existing_nat: bool = False
    """The private nodes reach out through the egress their network has (Cluster Toolkit's vpc module makes a Cloud
    NAT per region, `cloud-nat-<region>`): the stack makes no Cloud NAT of its own, since Compute refuses a second
    gateway for subnetwork ranges one already serves."""
    system_pool: AdoptedPoolConfig | None = None
    """The existing `system` node pool (Cluster Toolkit's gke-cluster module makes one), imported as the stack's: its
    nodes' account, scopes and the fields it keeps (`nodePools` and `flavor` do not apply)."""
    imports: tuple[ImportConfig, ...] = ()
    """The existing resources the program imports (its `import` resource option): the cluster, its node pools, the
    Kueue objects, PriorityClasses and Namespaces that exist. The first `pulumi up` imports each and makes the
    differences in place; an entry that names no resource of the program is an error in the offline preview.

    Default: none"""

    def problems(self, stack: str) -> list[tuple[str, str]]:
        pool = self.system_pool.problems(1) if self.system_pool else []
        problems = [(f"systemPool.{field.removeprefix('adopted.')}", message) for field, message in pool] + [
            (
                f"keep[{index}]",
                f"{path!r} is not a cluster field the stack can keep; keepable: {', '.join(KEEPABLE_CLUSTER_FIELDS)}",
            )
            for index, path in enumerate(self.keep)
            if path not in KEEPABLE_CLUSTER_FIELDS
        ]
        seen: dict[str, int] = {}
        for index, entry in enumerate(self.imports):
            problems += [(f"imports[{index}].{field}", message) for field, message in entry.problems(stack)]
            if entry.urn in seen:
                problems.append((f"imports[{index}]", f"{entry.urn} is imports[{seen[entry.urn]}] already"))
            seen.setdefault(entry.urn, index)
        return problems
