"""GKE: TPU node pool shapes, Workload Identity, node service accounts, cluster networking, protected stacks,
node auto-upgrade and the labels of labelled GCP resources.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import (
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.proxy import UnknownValueError

from components import tpu_catalog

from .props import (
    BUCKET,
    CLUSTER,
    NODE_POOL,
    as_int,
    as_list,
    config_list,
    prop,
    protected_stack,
    say,
    string_list_schema,
)

NO_RESERVATION = "NO_RESERVATION"
GKE_METADATA = "GKE_METADATA"
DEFAULT_REQUIRED_LABELS = ["managed-by", "app", "env"]


def pool_machine(props: Mapping[str, Any]) -> tpu_catalog.MachineType | None:
    name = prop(props, "nodeConfig.machineType")
    return tpu_catalog.machine_type(name) if isinstance(name, str) else None


def pool_topology(props: Mapping[str, Any], machine: tpu_catalog.MachineType) -> str | None:
    """The slice shape: placementPolicy.tpuTopology, or the machine type's own shape when absent (single host).
    None when a workload policy (placementPolicy.policyName, Ironwood) sets it outside the node pool."""
    topology = prop(props, "placementPolicy.tpuTopology") or ""
    if topology:
        return str(topology) if machine.is_valid_topology(str(topology)) else None
    if prop(props, "placementPolicy.policyName"):
        return None
    return machine.single_host_topology


def _vms(props: Mapping[str, Any]) -> int | None:
    """VMs in one slice of this pool (None: not a TPU pool or shape unknown)."""
    machine = pool_machine(props)
    if machine is None:
        return None
    topology = pool_topology(props, machine)
    return machine.vms(topology) if topology else None


def pool_max_nodes(props: Mapping[str, Any]) -> int | None:
    """Most nodes the pool can hold. An autoscaled pool: its autoscaling maximum (the total, or the per-zone
    maximum times its zones); its nodeCount is only its size at the moment, 0 for an idle scale-from-zero pool
    read back from a deployed stack, where unset counts also read back as 0. A fixed pool: its nodeCount."""
    scaling = props.get("autoscaling")
    if isinstance(scaling, Mapping):
        total = as_int(scaling.get("totalMaxNodeCount")) or 0
        per_zone = as_int(scaling.get("maxNodeCount")) or 0
        zones = max(1, len(as_list(props.get("nodeLocations")))) if per_zone else 1
        if total or per_zone:
            return max(total, per_zone * zones)
    return as_int(props.get("nodeCount"))


def _static_nodes(props: Mapping[str, Any], report: ReportViolation, why: str) -> None:
    for key in ("nodeCount", "initialNodeCount"):
        count = as_int(props.get(key))
        if count:
            say(report, f"{key} is {count}: {why} pools start empty; set {key} to 0 or leave it unset")


def _reservation(props: Mapping[str, Any], report: ReportViolation, mode: str) -> None:
    affinity = prop(props, "nodeConfig.reservationAffinity.consumeReservationType")
    if affinity != NO_RESERVATION:
        say(
            report,
            f"{mode} pools must not consume reservations: set nodeConfig.reservationAffinity."
            f"consumeReservationType to {NO_RESERVATION} (found {affinity!r})",
        )


def validate_flex_start(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Flex-start (DWS) nodes come and go as a whole slice; GKE refuses or misbehaves with any other shape."""
    props = args.props
    if args.resource_type != NODE_POOL or prop(props, "nodeConfig.flexStart") is not True:
        return
    if prop(props, "nodeConfig.spot") is True:
        say(report, "flex-start and spot exclude each other: remove nodeConfig.spot or nodeConfig.flexStart")
    _reservation(props, report, "flex-start")
    _static_nodes(props, report, "flex-start")
    scaling = props.get("autoscaling")
    if not isinstance(scaling, Mapping):
        say(report, "flex-start pools scale from zero: set autoscaling with minNodeCount 0 and a maxNodeCount")
        return
    for key in ("minNodeCount", "totalMinNodeCount"):
        low = as_int(scaling.get(key))
        if low:
            say(report, f"autoscaling.{key} is {low}: flex-start pools scale from zero; set it to 0")
    high = as_int(scaling.get("maxNodeCount"))
    high = as_int(scaling.get("totalMaxNodeCount")) if high is None else high
    vms = _vms(props)
    if vms is not None and vms > 1:
        if high != vms:
            say(
                report,
                f"autoscaling max is {high}: a flex-start slice is all-or-nothing; set autoscaling.maxNodeCount "
                f"to the slice's {vms} VMs",
            )
        if prop(props, "management.autoRepair", True) is not False:
            say(report, "multi-host flex-start slices are not repaired node by node: set management.autoRepair false")
    elif not high:
        say(report, "flex-start pools need room to scale up: set autoscaling.maxNodeCount to at least 1")


def validate_queued(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Queued provisioning (DWS via ProvisioningRequest) fails to create nodes unless the pool has this shape:
    GKE's current docs create it with --flex-start --enable-queued-provisioning --location-policy=ANY."""
    props = args.props
    if args.resource_type != NODE_POOL or prop(props, "queuedProvisioning.enabled") is not True:
        return
    _reservation(props, report, "queued-provisioning")
    _static_nodes(props, report, "queued-provisioning")
    if as_int(prop(props, "autoscaling.totalMaxNodeCount")) is None:
        say(report, "queued-provisioning pools scale by total: set autoscaling.totalMaxNodeCount")
    policy = prop(props, "autoscaling.locationPolicy")
    if policy != "ANY":
        say(
            report,
            f"queued-provisioning pools take the slice in whichever zone has it: set autoscaling.locationPolicy ANY "
            f"(found {policy!r})",
        )
    if prop(props, "management.autoRepair", True) is not False:
        say(report, "queued-provisioning nodes are not repaired in place: set management.autoRepair false")
    if prop(props, "nodeConfig.spot") is True:
        say(report, "queued provisioning and spot exclude each other: remove nodeConfig.spot")
    if prop(props, "nodeConfig.flexStart") is not True:
        say(report, "GKE runs queued provisioning on flex-start capacity: set nodeConfig.flexStart true")


def validate_topology(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A slice is only what the TPU generation can build, and a multi-host pool holds exactly one slice."""
    props = args.props
    if args.resource_type != NODE_POOL:
        return
    name = prop(props, "nodeConfig.machineType")
    machine = pool_machine(props)
    if machine is None:
        if isinstance(name, str) and name.startswith(("ct", "tpu")):
            known = ", ".join(sorted(tpu_catalog.MACHINE_TYPES))
            say(report, f"nodeConfig.machineType {name!r} is not a known TPU machine type; use one of: {known}")
        return
    placement_type = prop(props, "placementPolicy.type") or ""
    # An adopted pool that keeps its type (ignoreChanges) shows no diff of it: the engine sends the kept value.
    if placement_type and "placementPolicy.type" not in (args.opts.ignore_changes or ()):
        say(
            report,
            f"remove placementPolicy.type ({placement_type!r}): TPU pools take only placementPolicy.tpuTopology "
            "(GKE never returns the type, so every preview would show a diff)",
        )
    topology = str(prop(props, "placementPolicy.tpuTopology") or "")
    single_host_type = len(machine.fixed_topologies) == 1
    if topology and single_host_type:
        say(report, f"{machine.name} is a single-host machine type: remove placementPolicy.tpuTopology")
        return
    if topology and not machine.is_valid_topology(topology):
        valid = machine.valid_topologies()
        shown = ", ".join(valid[:8]) + (", ..." if len(valid) > 8 else "")
        say(report, f"placementPolicy.tpuTopology {topology!r} is not valid for {machine.name}; valid: {shown}")
        return
    vms = _vms(props)
    if vms is None or vms == 1:
        return
    for key, value in (
        ("nodeCount", props.get("nodeCount")),
        ("autoscaling.maxNodeCount", prop(props, "autoscaling.maxNodeCount")),
        ("autoscaling.totalMaxNodeCount", prop(props, "autoscaling.totalMaxNodeCount")),
    ):
        count = as_int(value)
        if count is not None and count != vms:
            say(
                report,
                f"{key} is {count} but a {topology} slice of {machine.name} is {vms} VMs: set {key} to {vms} "
                "(one pool per slice; add pools for more slices)",
            )


def validate_single_zone(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """The VMs of a multi-host slice share one interconnect: they must sit in one zone."""
    if args.resource_type != NODE_POOL:
        return
    vms = _vms(args.props)
    if vms is None or vms == 1:
        return
    zones = as_list(args.props.get("nodeLocations"))
    if len(zones) != 1:
        say(report, f"multi-host TPU pool spans {len(zones) or 'all cluster'} zones: set nodeLocations to one zone")


MIGRATE = "docs/adopt.md#moving-slices-off-the-default-account"
POOL_ID = r"^projects/[^/]+/locations/[^/]+/clusters/[^/]+/nodePools/[^/]+$"
ADOPTED_POOL_EXCEPTIONS_SCHEMA = PolicyConfigSchema(
    properties={
        "exceptions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "nodePool": {"type": "string", "pattern": POOL_ID},
                    "reason": {"type": "string", "minLength": 1},
                    # `format: date` refuses a day no calendar has (2026-02-30) before the pack runs: the CLI
                    # validates policy config with gojsonschema, whose "date" checker is Go's time.Parse("2006-01-02")
                    # (xeipuuv/gojsonschema format_checkers.go, DateFormatChecker).
                    "until": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$", "format": "date"},
                },
                "required": ["nodePool", "reason", "until"],
                "additionalProperties": False,
            },
            "default": [],
            "description": "Adopted node pools (projects/P/locations/L/clusters/C/nodePools/N) excused until a day "
            "(YYYY-MM-DD), each with its reason; `tpu-stack adopt` writes them",
        }
    }
)
"""An adopted cluster's node pools that keep what xpk or Cluster Toolkit gave them (the default account, the
metadata mode) for a while: a change of either re-creates the slice or its nodes. Matched on the pool's own identity
(project, location, cluster and name in its props), so a new pool with the same setting is still a violation."""


def _pool_id(props: Mapping[str, Any]) -> str | None:
    try:
        parts = [prop(props, key) for key in ("project", "location", "cluster", "name")]
    except UnknownValueError:
        return None  # not known before the cluster exists: no adopted pool's
    if not all(isinstance(part, str) and part for part in parts):
        return None
    project, location, cluster, name = parts
    return f"projects/{project}/locations/{location}/clusters/{cluster.rsplit('/', 1)[-1]}/nodePools/{name}"


def adopted_pool_exception(args: ResourceValidationArgs, problem: str) -> str | None:
    """`problem` as the violation to report for this node pool: None while an exception names the pool and its day
    has not passed; past its day, the exception's own expiry."""
    entries = args.get_config().get("exceptions")
    pool = _pool_id(args.props) if args.resource_type == NODE_POOL else None
    if pool is None or not isinstance(entries, Sequence) or isinstance(entries, str):
        return problem
    for entry in entries:
        if (
            not isinstance(entry, Mapping)
            or entry.get("nodePool") != pool
            or not str(entry.get("reason") or "").strip()
        ):
            continue
        until = str(entry.get("until") or "")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", until):
            return problem
        try:
            day = datetime.date.fromisoformat(until)
        except ValueError:  # 2026-02-30, past the schema check: a raise here fails the analyzer call for the resource
            return (
                f"exception for node pool {pool} has an impossible until {until!r}; write a real day as YYYY-MM-DD: "
                f"{problem}"
            )
        if day >= datetime.datetime.now(datetime.UTC).date():
            return None
        return f"exception for node pool {pool} expired {until}; migrate it ({MIGRATE}): {problem}"
    return problem


def validate_workload_identity(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Pods reach Google APIs as their Kubernetes service account, never as the node."""
    props = args.props
    if args.resource_type == CLUSTER:
        if prop(props, "enableAutopilot") is True:
            return  # Autopilot always runs Workload Identity.
        if not prop(props, "workloadIdentityConfig.workloadPool"):
            say(report, "set workloadIdentityConfig.workloadPool to '<project>.svc.id.goog'")
        node_config = props.get("nodeConfig")
        if isinstance(node_config, Mapping) and prop(node_config, "workloadMetadataConfig.mode") != GKE_METADATA:
            say(report, f"set nodeConfig.workloadMetadataConfig.mode to {GKE_METADATA}")
    elif args.resource_type == NODE_POOL:
        mode = prop(props, "nodeConfig.workloadMetadataConfig.mode")
        if mode != GKE_METADATA:
            problem = f"set nodeConfig.workloadMetadataConfig.mode to {GKE_METADATA} (found {mode!r})"
            reported = adopted_pool_exception(args, problem)
            if reported:
                say(report, reported)


def _service_account_problem(props: Mapping[str, Any], path: str) -> str | None:
    try:
        account = prop(props, path)
    except UnknownValueError:
        return None  # The node service account's email is computed; a known value is checked on `up`.
    if not account or account == "default":
        return f"set {path} to a dedicated node service account (it defaults to the Compute Engine default one)"
    if str(account).endswith("-compute@developer.gserviceaccount.com"):
        return f"{path} is the Compute Engine default service account ({account}): use a dedicated one"
    return None


def validate_node_service_account(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """The default compute service account holds Editor on the project: nodes run as a minimal one."""
    props = args.props
    if args.resource_type == NODE_POOL:
        path = "nodeConfig.serviceAccount"
    elif args.resource_type == CLUSTER:
        autopilot = prop(props, "enableAutopilot") is True
        path = (
            "clusterAutoscaling.autoProvisioningDefaults.serviceAccount" if autopilot else "nodeConfig.serviceAccount"
        )
        if not autopilot and props.get("nodeConfig") is None and "nodeConfig" in (args.opts.ignore_changes or ()):
            return  # kept as the import read it, and GKE reports none: no default pool's nodes to run as anyone
    else:
        return
    problem = _service_account_problem(props, path)
    reported = adopted_pool_exception(args, problem) if problem else None
    if reported:
        say(report, reported)


def validate_cluster_network(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Dataplane V2 enforces NetworkPolicies; in protected stacks nodes are private and the control plane has no
    IP endpoint (operators and CI use the IAM-checked DNS endpoint)."""
    if args.resource_type != CLUSTER:
        return
    props = args.props
    if props.get("datapathProvider") != "ADVANCED_DATAPATH" and props.get("enableAutopilot") is not True:
        say(report, "set datapathProvider ADVANCED_DATAPATH (Dataplane V2) so NetworkPolicies are enforced")
    if protected_stack(args, args.urn) is None:
        return
    if prop(props, "privateClusterConfig.enablePrivateNodes") is not True:
        say(report, "set privateClusterConfig.enablePrivateNodes true: nodes without external IPs (egress via NAT)")
    if prop(props, "controlPlaneEndpointsConfig.ipEndpointsConfig.enabled") is not False:
        say(
            report,
            "set controlPlaneEndpointsConfig.ipEndpointsConfig.enabled false: reach the control plane only through "
            "its DNS endpoint",
        )


def validate_protected(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """In a protected stack nothing is deleted by accident. The engine refuses a protected resource only at its own
    delete step, after everything that depends on it: so every resource is protected, not just the cluster and the
    bucket (node pools, charts, namespaces with their jobs, serving, IAM would go first)."""
    stack = protected_stack(args, args.urn)
    if stack is None:
        return
    if not args.opts.protect:
        say(report, f"stack {stack!r} is protected: register this resource with ResourceOptions(protect=True)")
    if args.resource_type == CLUSTER and args.props.get("deletionProtection") is False:
        say(report, f"stack {stack!r} is protected: set deletionProtection true on the cluster")
    if args.resource_type == BUCKET and args.props.get("forceDestroy") is True:
        say(report, f"stack {stack!r} is protected: remove forceDestroy from the bucket")


def _clusters(resources: list[PolicyResource]) -> dict[str, PolicyResource]:
    """Cluster name -> cluster resource (Standard clusters only: Autopilot has no node pools of its own)."""
    return {
        str(r.props.get("name") or r.name): r
        for r in resources
        if r.resource_type == CLUSTER and prop(r.props, "enableAutopilot") is not True
    }


def _holds_node_upgrades(cluster: PolicyResource) -> bool:
    """A maintenance window, or an exclusion that holds node upgrades back, keeps upgrades out of training."""
    policy = prop(cluster.props, "maintenancePolicy") or {}
    windows = ("dailyMaintenanceWindow", "recurringWindow", "recurringMaintenanceWindow")
    return any(policy.get(window) for window in windows) or bool(policy.get("maintenanceExclusions"))


def validate_auto_upgrade(args: StackValidationArgs, report: ReportViolation) -> None:
    """An upgrade restarts every VM of a slice at once, and with it the run on the slice. Without a release
    channel TPU pools should not auto-upgrade. On a channel GKE refuses auto-upgrade off (400 "Auto_upgrade
    cannot be false when release_channel ... is set"; a cluster given no channel is enrolled in REGULAR), so
    there the cluster needs a maintenance window or exclusions to keep upgrades out of training runs. A pool
    whose cluster is not in the stack is compared with the stack's one cluster."""
    resources = list(args.resources)
    clusters = _clusters(resources)
    only_cluster = next(iter(clusters.values())) if len(clusters) == 1 else None
    for pool in (r for r in resources if r.resource_type == NODE_POOL and pool_machine(r.props) is not None):
        cluster = clusters.get(str(pool.props.get("cluster")), only_cluster)
        if cluster is None:
            continue
        channel = str(prop(cluster.props, "releaseChannel.channel") or "REGULAR")
        upgrades = prop(pool.props, "management.autoUpgrade", True) is not False
        if channel != "UNSPECIFIED" and not upgrades:
            report(
                f"GKE refuses management.autoUpgrade false in a cluster on release channel {channel}: set it true "
                "and control upgrades with maintenance windows/exclusions, or set the cluster's releaseChannel "
                "to UNSPECIFIED",
                pool.urn,
            )
        elif channel != "UNSPECIFIED" and not _holds_node_upgrades(cluster):
            report(
                f"TPU pool may be upgraded, restarting its slices, at any time: give cluster {cluster.name!r} a "
                "maintenancePolicy (a window, and exclusions of scope NO_MINOR_OR_NODE_UPGRADES over training runs)",
                pool.urn,
            )
        elif channel == "UNSPECIFIED" and upgrades:
            report(
                "TPU pool auto-upgrades by default: set management.autoUpgrade false and upgrade in a window", pool.urn
            )


LABELS_PATH = {CLUSTER: "resourceLabels", BUCKET: "labels", NODE_POOL: "nodeConfig.resourceLabels"}


def validate_labels(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Labels are how billing and inventory attribute cost to a stack and team."""
    path = LABELS_PATH.get(args.resource_type)
    if path is None:
        return
    labels = prop(args.props, path, {})
    missing = [k for k in config_list(args, "requiredLabels", DEFAULT_REQUIRED_LABELS) if k not in labels]
    if missing:
        say(report, f"add label(s) {', '.join(missing)} to {path}")


REQUIRED_LABELS_SCHEMA = string_list_schema(
    "requiredLabels", DEFAULT_REQUIRED_LABELS, "Label keys every labelled GCP resource carries"
)
