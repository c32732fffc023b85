"""The stack's CrossGuard policies, importable on their own.

`PolicyPack(...)` starts a gRPC server, so `__main__.py` only builds the pack from `POLICIES`; the offline
preview (offline/policy_check.py) and the tests run these same objects through the real `pulumi_policy` args.

Props are the resource inputs in camelCase wire names; numbers may be floats; keys may be missing. A value the
engine cannot know during preview raises `UnknownValueError` when read: most policies let it propagate (the
CLI then reports that the policy could not run), the service-account check skips it (the node service
account's email is only known after the account exists).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from components import iam_roles, tpu_catalog
from components.stacks import PROTECTED_STACKS

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY

NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
BUCKET = "gcp:storage/bucket:Bucket"
SERVICE = "kubernetes:core/v1:Service"
CHARTS = ("kubernetes:helm.sh/v4:Chart", "kubernetes:helm.sh/v3:Release")
KUEUE_GROUP = "kubernetes:kueue.x-k8s.io/"

PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")
NAMESPACE = "kubernetes:core/v1:Namespace"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
WIDEST_PREFIX = {4: 8, 6: 16}
"""Widest load-balancer source range (IPv4 /8, IPv6 /16): a shorter prefix covers a large part of the internet."""
# IAM resources whose grant covers everything in a project, folder or organization.
WIDE_IAM_PREFIXES = ("gcp:projects/", "gcp:folder/", "gcp:organizations/")
INTERNAL_LB_ANNOTATIONS = ("networking.gke.io/load-balancer-type", "cloud.google.com/load-balancer-type")
NO_RESERVATION = "NO_RESERVATION"
GKE_METADATA = "GKE_METADATA"
DEFAULT_REQUIRED_LABELS = ["managed-by", "app", "env"]
DEFAULT_PROTECTED_STACKS = list(PROTECTED_STACKS)
"""The stacks the program protects (components/stacks.py), so the policy checks what the program promises."""
EXACT_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


# ---------------------------------------------------------------------------------------------------------
# Reading props: plain dicts (tests) and the SDK's unknown-checking proxies (CLI, offline) alike.


def _get(data: Any, path: str, default: Any = None) -> Any:
    """Value at a dotted path, or `default` when a key is missing or a step is not a mapping."""
    value = data
    for key in path.split("."):
        if not isinstance(value, Mapping):
            return default
        value = value.get(key)
        if value is None:
            return default
    return value


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []


def _int(value: Any) -> int | None:
    """Numbers arrive as floats (2.0) from the engine; anything else is 'not set'."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _config(args: ResourceValidationArgs | StackValidationArgs, key: str, default: list[str]) -> list[str]:
    """A policy config list; the CLI fills schema defaults, direct callers may not."""
    value = args.get_config().get(key)
    return [str(v) for v in value] if isinstance(value, Sequence) and not isinstance(value, str) else default


def _stack_of(urn: str) -> str:
    """`urn:pulumi:<stack>::<project>::<type>::<name>`: the URN is the one place every policy sees the stack."""
    return urn.removeprefix("urn:pulumi:").split("::", 1)[0]


def _say(report: ReportViolation, message: str) -> None:
    report(message, None)


# ---------------------------------------------------------------------------------------------------------
# TPU node pools


def _machine(props: Mapping[str, Any]) -> tpu_catalog.MachineType | None:
    name = _get(props, "nodeConfig.machineType")
    return tpu_catalog.machine_type(name) if isinstance(name, str) else None


def _topology(props: Mapping[str, Any], machine: tpu_catalog.MachineType) -> str | None:
    """The slice shape: placementPolicy.tpuTopology, or the machine type's own shape when absent (single host).
    None when a workload policy (placementPolicy.policyName, Ironwood) sets it outside the node pool."""
    topology = _get(props, "placementPolicy.tpuTopology") or ""
    if topology:
        return str(topology) if machine.is_valid_topology(str(topology)) else None
    if _get(props, "placementPolicy.policyName"):
        return None
    return machine.single_host_topology


def _vms(props: Mapping[str, Any]) -> int | None:
    """VMs in one slice of this pool (None: not a TPU pool or shape unknown)."""
    machine = _machine(props)
    if machine is None:
        return None
    topology = _topology(props, machine)
    return machine.vms(topology) if topology else None


def _max_nodes(props: Mapping[str, Any]) -> int | None:
    """Most nodes the pool can hold. An autoscaled pool: its autoscaling maximum (the total, or the per-zone
    maximum times its zones); its nodeCount is only its size at the moment, 0 for an idle scale-from-zero pool
    read back from a deployed stack, where unset counts also read back as 0. A fixed pool: its nodeCount."""
    scaling = props.get("autoscaling")
    if isinstance(scaling, Mapping):
        total = _int(scaling.get("totalMaxNodeCount")) or 0
        per_zone = _int(scaling.get("maxNodeCount")) or 0
        zones = max(1, len(_list(props.get("nodeLocations")))) if per_zone else 1
        if total or per_zone:
            return max(total, per_zone * zones)
    return _int(props.get("nodeCount"))


def _static_nodes(props: Mapping[str, Any], report: ReportViolation, why: str) -> None:
    for key in ("nodeCount", "initialNodeCount"):
        count = _int(props.get(key))
        if count:
            _say(report, f"{key} is {count}: {why} pools start empty; set {key} to 0 or leave it unset")


def _reservation(props: Mapping[str, Any], report: ReportViolation, mode: str) -> None:
    affinity = _get(props, "nodeConfig.reservationAffinity.consumeReservationType")
    if affinity != NO_RESERVATION:
        _say(
            report,
            f"{mode} pools must not consume reservations: set nodeConfig.reservationAffinity."
            f"consumeReservationType to {NO_RESERVATION} (found {affinity!r})",
        )


def validate_flex_start(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Flex-start (DWS) nodes come and go as a whole slice; GKE refuses or misbehaves with any other shape."""
    props = args.props
    if args.resource_type != NODE_POOL or _get(props, "nodeConfig.flexStart") is not True:
        return
    if _get(props, "nodeConfig.spot") is True:
        _say(report, "flex-start and spot exclude each other: remove nodeConfig.spot or nodeConfig.flexStart")
    _reservation(props, report, "flex-start")
    _static_nodes(props, report, "flex-start")
    scaling = props.get("autoscaling")
    if not isinstance(scaling, Mapping):
        _say(report, "flex-start pools scale from zero: set autoscaling with minNodeCount 0 and a maxNodeCount")
        return
    for key in ("minNodeCount", "totalMinNodeCount"):
        low = _int(scaling.get(key))
        if low:
            _say(report, f"autoscaling.{key} is {low}: flex-start pools scale from zero; set it to 0")
    high = _int(scaling.get("maxNodeCount"))
    high = _int(scaling.get("totalMaxNodeCount")) if high is None else high
    vms = _vms(props)
    if vms is not None and vms > 1:
        if high != vms:
            _say(
                report,
                f"autoscaling max is {high}: a flex-start slice is all-or-nothing; set autoscaling.maxNodeCount "
                f"to the slice's {vms} VMs",
            )
        if _get(props, "management.autoRepair", True) is not False:
            _say(report, "multi-host flex-start slices are not repaired node by node: set management.autoRepair false")
    elif not high:
        _say(report, "flex-start pools need room to scale up: set autoscaling.maxNodeCount to at least 1")


def validate_queued(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Queued provisioning (DWS via ProvisioningRequest) fails to create nodes unless the pool has this shape:
    GKE's current docs create it with --flex-start --enable-queued-provisioning --location-policy=ANY."""
    props = args.props
    if args.resource_type != NODE_POOL or _get(props, "queuedProvisioning.enabled") is not True:
        return
    _reservation(props, report, "queued-provisioning")
    _static_nodes(props, report, "queued-provisioning")
    if _int(_get(props, "autoscaling.totalMaxNodeCount")) is None:
        _say(report, "queued-provisioning pools scale by total: set autoscaling.totalMaxNodeCount")
    policy = _get(props, "autoscaling.locationPolicy")
    if policy != "ANY":
        _say(
            report,
            f"queued-provisioning pools take the slice in whichever zone has it: set autoscaling.locationPolicy ANY "
            f"(found {policy!r})",
        )
    if _get(props, "management.autoRepair", True) is not False:
        _say(report, "queued-provisioning nodes are not repaired in place: set management.autoRepair false")
    if _get(props, "nodeConfig.spot") is True:
        _say(report, "queued provisioning and spot exclude each other: remove nodeConfig.spot")
    if _get(props, "nodeConfig.flexStart") is not True:
        _say(report, "GKE runs queued provisioning on flex-start capacity: set nodeConfig.flexStart true")


def validate_topology(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A slice is only what the TPU generation can build, and a multi-host pool holds exactly one slice."""
    props = args.props
    if args.resource_type != NODE_POOL:
        return
    name = _get(props, "nodeConfig.machineType")
    machine = _machine(props)
    if machine is None:
        if isinstance(name, str) and name.startswith(("ct", "tpu")):
            known = ", ".join(sorted(tpu_catalog.MACHINE_TYPES))
            _say(report, f"nodeConfig.machineType {name!r} is not a known TPU machine type; use one of: {known}")
        return
    placement_type = _get(props, "placementPolicy.type") or ""
    if placement_type:
        _say(
            report,
            f"remove placementPolicy.type ({placement_type!r}): TPU pools take only placementPolicy.tpuTopology "
            "(GKE never returns the type, so every preview would show a diff)",
        )
    topology = str(_get(props, "placementPolicy.tpuTopology") or "")
    single_host_type = len(machine.fixed_topologies) == 1
    if topology and single_host_type:
        _say(report, f"{machine.name} is a single-host machine type: remove placementPolicy.tpuTopology")
        return
    if topology and not machine.is_valid_topology(topology):
        valid = machine.valid_topologies()
        shown = ", ".join(valid[:8]) + (", ..." if len(valid) > 8 else "")
        _say(report, f"placementPolicy.tpuTopology {topology!r} is not valid for {machine.name}; valid: {shown}")
        return
    vms = _vms(props)
    if vms is None or vms == 1:
        return
    for key, value in (
        ("nodeCount", props.get("nodeCount")),
        ("autoscaling.maxNodeCount", _get(props, "autoscaling.maxNodeCount")),
        ("autoscaling.totalMaxNodeCount", _get(props, "autoscaling.totalMaxNodeCount")),
    ):
        count = _int(value)
        if count is not None and count != vms:
            _say(
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
    zones = _list(args.props.get("nodeLocations"))
    if len(zones) != 1:
        _say(report, f"multi-host TPU pool spans {len(zones) or 'all cluster'} zones: set nodeLocations to one zone")


# ---------------------------------------------------------------------------------------------------------
# Identity


def validate_workload_identity(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Pods reach Google APIs as their Kubernetes service account, never as the node."""
    props = args.props
    if args.resource_type == CLUSTER:
        if _get(props, "enableAutopilot") is True:
            return  # Autopilot always runs Workload Identity.
        if not _get(props, "workloadIdentityConfig.workloadPool"):
            _say(report, "set workloadIdentityConfig.workloadPool to '<project>.svc.id.goog'")
        node_config = props.get("nodeConfig")
        if isinstance(node_config, Mapping) and _get(node_config, "workloadMetadataConfig.mode") != GKE_METADATA:
            _say(report, f"set nodeConfig.workloadMetadataConfig.mode to {GKE_METADATA}")
    elif args.resource_type == NODE_POOL:
        mode = _get(props, "nodeConfig.workloadMetadataConfig.mode")
        if mode != GKE_METADATA:
            _say(report, f"set nodeConfig.workloadMetadataConfig.mode to {GKE_METADATA} (found {mode!r})")


def _service_account_problem(props: Mapping[str, Any], path: str) -> str | None:
    try:
        account = _get(props, path)
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
        autopilot = _get(props, "enableAutopilot") is True
        path = (
            "clusterAutoscaling.autoProvisioningDefaults.serviceAccount" if autopilot else "nodeConfig.serviceAccount"
        )
    else:
        return
    problem = _service_account_problem(props, path)
    if problem:
        _say(report, problem)


def _roles(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """Roles an IAM resource grants: `role` of members and bindings, every binding of a policy document."""
    kind = resource_type.rsplit(":", 1)[-1]
    if kind.endswith(("IAMMember", "IAMBinding")):
        role = props.get("role")
        return [role] if isinstance(role, str) else []
    if kind.endswith("IAMPolicy"):
        try:
            document = json.loads(str(props.get("policyData") or "{}"))
        except ValueError:
            return []
        return [b.get("role", "") for b in document.get("bindings", []) if isinstance(b, dict)]
    return []


def validate_least_privilege(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Primitive roles grant far more than any workload needs; storage admin on a project spans every bucket."""
    if not args.resource_type.startswith("gcp:"):
        return
    wide = args.resource_type.startswith(WIDE_IAM_PREFIXES)
    for role in _roles(args.resource_type, args.props):
        problem = iam_roles.role_problem(role, wide=wide)
        if problem:
            _say(report, problem)
    for member in _members(args.resource_type, args.props):
        if member in PUBLIC_MEMBERS:
            _say(report, f"member {member} makes the resource public: grant named principals only")


def _members(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """Members an IAM resource grants to: `member`, `members`, or every binding of a policy document. A member
    not known during a new stack's preview is built from an account the stack creates, never a public one."""
    kind = resource_type.rsplit(":", 1)[-1]
    if kind.endswith("IAMMember"):
        try:
            return [str(props.get("member", ""))]
        except UnknownValueError:
            return []
    if kind.endswith("IAMBinding"):
        return [str(m) for m in _list(props.get("members"))]
    if kind.endswith("IAMPolicy"):
        try:
            document = json.loads(str(props.get("policyData") or "{}"))
        except ValueError:
            return []
        return [str(m) for b in document.get("bindings", []) if isinstance(b, dict) for m in b.get("members", [])]
    return []


# ---------------------------------------------------------------------------------------------------------
# Storage


def validate_bucket(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Checkpoints and models are the stack's most valuable data: no ACLs, no public access, old versions kept."""
    if args.resource_type != BUCKET:
        return
    props = args.props
    if props.get("uniformBucketLevelAccess") is not True:
        _say(report, "set uniformBucketLevelAccess true (IAM only, no object ACLs)")
    if props.get("publicAccessPrevention") != "enforced":
        _say(report, f"set publicAccessPrevention 'enforced' (found {props.get('publicAccessPrevention')!r})")
    if _get(props, "versioning.enabled") is not True:
        _say(report, "set versioning.enabled true so an overwritten or deleted checkpoint can be restored")


# ---------------------------------------------------------------------------------------------------------
# Kubernetes


def validate_load_balancer(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A LoadBalancer without source ranges is open to the internet (external) or the whole VPC (internal)."""
    props = args.props
    if args.resource_type != SERVICE or _get(props, "spec.type") != "LoadBalancer":
        return
    annotations = _get(props, "metadata.annotations", {})
    internal = any(str(annotations.get(key, "")).lower() == "internal" for key in INTERNAL_LB_ANNOTATIONS)
    allowed_text = _config(args, "allowedSourceRanges", [])
    allowed = [ipaddress.ip_network(r, strict=False) for r in allowed_text]
    ranges = [str(r) for r in _list(_get(props, "spec.loadBalancerSourceRanges"))]
    if not ranges:
        where = "every address in the VPC" if internal else "every address"
        _say(report, f"LoadBalancer open to {where}: set spec.loadBalancerSourceRanges to the client CIDRs")
        return
    for text in ranges:
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            _say(report, f"spec.loadBalancerSourceRanges entry {text!r} is not a CIDR range")
            continue
        inside = any(network.version == a.version and network.subnet_of(a) for a in allowed)  # type: ignore[arg-type]
        if allowed and not inside:
            _say(
                report,
                f"spec.loadBalancerSourceRanges entry {text} is outside the allowed ranges "
                f"({', '.join(allowed_text)}): narrow it or add it to allowedSourceRanges",
            )
        elif not allowed and network.prefixlen < WIDEST_PREFIX[network.version]:
            _say(
                report,
                f"spec.loadBalancerSourceRanges entry {text} covers a large part of the internet: narrow it to "
                f"/{WIDEST_PREFIX[network.version]} or less, or allow it explicitly in allowedSourceRanges",
            )


def _pod_specs(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every pod spec in an object (Pod, Deployment, Job, JobSet, CronJob, ...): the mappings with `containers`."""
    if isinstance(value, Mapping):
        if isinstance(value.get("containers"), Sequence):
            yield value
        for key, child in value.items():
            if key not in ("containers", "initContainers", "status"):
                yield from _pod_specs(child)
    elif isinstance(value, Sequence) and not isinstance(value, str):
        for child in value:
            yield from _pod_specs(child)


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    kinds = ("initContainers", "containers", "ephemeralContainers")
    return [c for kind in kinds for c in _list(pod.get(kind)) if isinstance(c, Mapping)]


def _requests_tpu(pod: Mapping[str, Any]) -> bool:
    for container in _containers(pod):
        for part in ("requests", "limits"):
            amount = _get(container, f"resources.{part}", {}).get(tpu_catalog.TPU_RESOURCE)
            if amount not in (None, 0, "0"):
                return True
    return False


NO_POD_SPECS = (*CHARTS, "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition")
"""Kubernetes types that never hold a pod spec; a CRD's schema is large and only describes pods."""


def _workload(args: ResourceValidationArgs) -> bool:
    return args.resource_type.startswith("kubernetes:") and args.resource_type not in NO_POD_SPECS


def validate_privileged(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """No privileged containers: GKE 1.28+ (the stack's floor is 1.33) gives TPU pods their chips without it."""
    if not _workload(args):
        return
    for pod in _pod_specs(args.props.get("spec")):
        privileged = [c.get("name") for c in _containers(pod) if _get(c, "securityContext.privileged") is True]
        if privileged:
            names = ", ".join(str(n) for n in privileged)
            _say(
                report, f"container(s) {names} run privileged: remove securityContext.privileged (TPUs do not need it)"
            )


def validate_host_namespaces(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Host PID/IPC and added capabilities reach the node; the host network only for TPU pods (multislice DCN)."""
    if not _workload(args):
        return
    for pod in _pod_specs(args.props.get("spec")):
        for field in ("hostPID", "hostIPC"):
            if pod.get(field) is True:
                _say(report, f"pod sets {field}: remove it, no workload of the stack needs the node's {field[4:]}")
        if pod.get("hostNetwork") is True and not _requests_tpu(pod):
            _say(
                report,
                f"pod on the host network requests no {tpu_catalog.TPU_RESOURCE}: remove hostNetwork (it also "
                "bypasses Workload Identity and NetworkPolicies)",
            )
        for container in _containers(pod):
            added = _list(_get(container, "securityContext.capabilities.add"))
            if added:
                caps = ", ".join(str(c) for c in added)
                _say(report, f"container {container.get('name')} adds capabilities {caps}: drop ALL and add none")


def validate_cluster_network(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Dataplane V2 enforces NetworkPolicies; in protected stacks nodes are private and the control plane has no
    IP endpoint (operators and CI use the IAM-checked DNS endpoint)."""
    if args.resource_type != CLUSTER:
        return
    props = args.props
    if props.get("datapathProvider") != "ADVANCED_DATAPATH" and props.get("enableAutopilot") is not True:
        _say(report, "set datapathProvider ADVANCED_DATAPATH (Dataplane V2) so NetworkPolicies are enforced")
    if _stack_of(args.urn) not in _config(args, "protectedStacks", DEFAULT_PROTECTED_STACKS):
        return
    if _get(props, "privateClusterConfig.enablePrivateNodes") is not True:
        _say(report, "set privateClusterConfig.enablePrivateNodes true: nodes without external IPs (egress via NAT)")
    if _get(props, "controlPlaneEndpointsConfig.ipEndpointsConfig.enabled") is not False:
        _say(
            report,
            "set controlPlaneEndpointsConfig.ipEndpointsConfig.enabled false: reach the control plane only through "
            "its DNS endpoint",
        )


def validate_default_deny(args: StackValidationArgs, report: ReportViolation) -> None:
    """Every namespace the stack creates has a NetworkPolicy that denies all ingress and egress by default."""
    created = {str(_get(r.props, "metadata.name")) for r in args.resources if r.resource_type == NAMESPACE}
    denied = set()
    for r in args.resources:
        if r.resource_type != NETWORK_POLICY:
            continue
        spec = r.props.get("spec") or {}
        types = {str(t) for t in _list(spec.get("policyTypes"))}
        selects_all = not _get(spec, "podSelector.matchLabels") and not _get(spec, "podSelector.matchExpressions")
        allows = spec.get("ingress") or spec.get("egress")
        if selects_all and types >= {"Ingress", "Egress"} and not allows:
            denied.add(str(_get(r.props, "metadata.namespace")))
    for namespace in sorted(created - denied):
        _say(
            report,
            f"namespace {namespace} has no default-deny NetworkPolicy: add one with podSelector {{}} and "
            "policyTypes Ingress and Egress, then allow what its pods need",
        )


def _image_problem(image: str) -> str | None:
    if "@sha256:" in image:
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return f"image {image!r} has no tag: pin a version tag or a digest"
    if last.rsplit(":", 1)[1] == "latest":
        return f"image {image!r} uses :latest: pin a version tag or a digest"
    return None


HELM_CHART_LABEL = "helm.sh/chart"
_CHART_LABEL = re.compile(r"^(?P<name>.+?)-(?P<version>v?\d+\.\d+\.\d+\S*)$")


def validate_pinned(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """An unpinned chart or image changes under the stack without a diff in any preview.

    A Helm v4 Chart is a remote component: the real engine shows it to the pack with no properties, so its
    version is checked where the engine does show it, on every object the chart renders (`helm.sh/chart:
    <name>-<version>`), beside their images. A chart resource that does carry properties (a v3 Release, or a
    Chart in a unit test) is checked directly."""
    props = args.props
    if args.resource_type in CHARTS:
        if not props:
            return  # a remote component: its rendered objects carry the version
        version = props.get("version")
        if not isinstance(version, str) or not EXACT_VERSION.match(version):
            _say(report, f"chart {props.get('chart')!r} version {version!r}: set `version` to one exact release")
        return
    label = _get(props, "metadata.labels", {}).get(HELM_CHART_LABEL)
    if isinstance(label, str):
        match = _CHART_LABEL.match(label)
        if match is None or not EXACT_VERSION.match(match["version"]):
            _say(report, f"rendered from chart {label!r}: pin the chart to one exact release")
    if not _workload(args):
        return
    for pod in _pod_specs(props.get("spec")):
        for container in _containers(pod):
            problem = _image_problem(str(container.get("image") or ""))
            if problem:
                _say(report, f"container {container.get('name')!r}: {problem}")


DIGEST_REFERENCE = re.compile(r"@sha256:[0-9a-f]{64}$")


def _digest_exceptions(args: ResourceValidationArgs) -> dict[str, str]:
    """Reviewed image -> reason; an entry without a reason excuses nothing."""
    entries = args.get_config().get("exceptions")
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        return {}
    return {
        str(e["image"]): str(e["reason"])
        for e in entries
        if isinstance(e, Mapping) and e.get("image") and str(e.get("reason") or "").strip()
    }


def validate_image_digests(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A tag can be moved to other content; only a digest names exactly the image a protected stack was reviewed
    with. Tag-pinned images a protected stack still runs are listed, each with its reason, in the policy config
    (`exceptions`), so the list is reviewed and adding the digest ends the exception."""
    if not _workload(args):
        return
    stack = _stack_of(args.urn)
    if stack not in _config(args, "protectedStacks", DEFAULT_PROTECTED_STACKS):
        return
    excepted = _digest_exceptions(args)
    for pod in _pod_specs(args.props.get("spec")):
        for container in _containers(pod):
            image = str(container.get("image") or "")
            if DIGEST_REFERENCE.search(image) or image in excepted:
                continue
            _say(
                report,
                f"container {container.get('name')!r}: image {image!r} is not pinned by digest and stack {stack!r} "
                "is protected: append @sha256:<digest>, or list the image with its reason under "
                "images-by-digest.exceptions in the policy config",
            )


# ---------------------------------------------------------------------------------------------------------
# Protection and hygiene


def validate_protected(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Deleting a protected stack's cluster or bucket loses running work and data: it takes two explicit steps."""
    if args.resource_type not in (CLUSTER, BUCKET):
        return
    stack = _stack_of(args.urn)
    if stack not in _config(args, "protectedStacks", DEFAULT_PROTECTED_STACKS):
        return
    if not args.opts.protect:
        _say(report, f"stack {stack!r} is protected: register this resource with ResourceOptions(protect=True)")
    if args.resource_type == CLUSTER and args.props.get("deletionProtection") is False:
        _say(report, f"stack {stack!r} is protected: set deletionProtection true on the cluster")
    if args.resource_type == BUCKET and args.props.get("forceDestroy") is True:
        _say(report, f"stack {stack!r} is protected: remove forceDestroy from the bucket")


def _clusters(resources: list[PolicyResource]) -> dict[str, PolicyResource]:
    """Cluster name -> cluster resource (Standard clusters only: Autopilot has no node pools of its own)."""
    return {
        str(r.props.get("name") or r.name): r
        for r in resources
        if r.resource_type == CLUSTER and _get(r.props, "enableAutopilot") is not True
    }


def _holds_node_upgrades(cluster: PolicyResource) -> bool:
    """A maintenance window, or an exclusion that holds node upgrades back, keeps upgrades out of training."""
    policy = _get(cluster.props, "maintenancePolicy") or {}
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
    for pool in (r for r in resources if r.resource_type == NODE_POOL and _machine(r.props) is not None):
        cluster = clusters.get(str(pool.props.get("cluster")), only_cluster)
        if cluster is None:
            continue
        channel = str(_get(cluster.props, "releaseChannel.channel") or "REGULAR")
        upgrades = _get(pool.props, "management.autoUpgrade", True) is not False
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
    labels = _get(args.props, path, {})
    missing = [k for k in _config(args, "requiredLabels", DEFAULT_REQUIRED_LABELS) if k not in labels]
    if missing:
        _say(report, f"add label(s) {', '.join(missing)} to {path}")


# ---------------------------------------------------------------------------------------------------------
# Stack: Kueue quota vs provisioned chips


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
    if _get(props, "nodeConfig.flexStart") is True:
        labels[tpu_catalog.FLEX_START_LABEL] = "true"
    if _get(props, "nodeConfig.spot") is True:
        labels[tpu_catalog.SPOT_LABEL] = "true"
    labels.update({str(k): str(v) for k, v in _get(props, "nodeConfig.labels", {}).items()})
    return labels


def _pool_chips(resources: list[PolicyResource]) -> list[tuple[dict[str, str], int]]:
    """(node labels, chips at full scale) of every TPU node pool."""
    pools = []
    for resource in resources:
        if resource.resource_type != NODE_POOL:
            continue
        machine = _machine(resource.props)
        topology = _topology(resource.props, machine) if machine else None
        if machine is None or topology is None:
            continue
        nodes = _max_nodes(resource.props) or 0
        pools.append((_pool_labels(resource, machine, topology), nodes * machine.chips_per_vm))
    return pools


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
    for group in _list(_get(resource.props, "spec.resourceGroups")):
        for flavor in _list(_get(group, "flavors")):
            for entry in _list(_get(flavor, "resources")):
                if _get(entry, "name") != tpu_catalog.TPU_RESOURCE:
                    continue
                name = str(_get(flavor, "name"))
                raw = _get(entry, "nominalQuota", 0)
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
        and (_get(r.props, "enableAutopilot") is True or _get(r.props, "clusterAutoscaling.enabled") is True)
        for r in resources
    )


def validate_quota(args: StackValidationArgs, report: ReportViolation) -> None:
    """Kueue must not admit more TPU chips than the node pools can ever provide, or admitted jobs never start.

    A flavor matches a pool when its nodeLabels are a subset of the pool's node labels; its quota is the sum
    of nominalQuota over ClusterQueues and Cohorts (borrowing limits move quota around, they add none). A
    flavor no pool matches is skipped when the cluster provisions nodes itself (Autopilot, auto-provisioning);
    otherwise its quota must be 0.
    """
    resources = list(args.resources)
    pools = _pool_chips(resources)
    quota: dict[str, Decimal] = {}
    for resource in resources:
        if _kueue(resource, "ClusterQueue") or _kueue(resource, "Cohort"):
            amounts, problems = _nominal_tpu(resource)
            for problem in problems:
                report(problem, resource.urn)
            for name, amount in amounts.items():
                quota[name] = quota.get(name, Decimal(0)) + amount
    self_provisioning = _provisions_itself(resources)
    for flavor in (r for r in resources if _kueue(r, "ResourceFlavor")):
        name = str(_get(flavor.props, "metadata.name") or flavor.name)
        wanted = {str(k): str(v) for k, v in _get(flavor.props, "spec.nodeLabels", {}).items()}
        matching = [chips for labels, chips in pools if wanted.items() <= labels.items()]
        if not matching and self_provisioning:
            continue
        chips = sum(matching)
        if quota.get(name, 0) > chips:
            report(
                f"ResourceFlavor {name!r}: queues hold {quota[name].normalize():f} {tpu_catalog.TPU_RESOURCE} "
                "nominal quota but "
                f"the {len(matching)} matching node pool(s) provide {chips} chips; lower the ClusterQueue "
                "nominalQuota or add slices",
                flavor.urn,
            )


# ---------------------------------------------------------------------------------------------------------

SOURCE_RANGES_SCHEMA = PolicyConfigSchema(
    properties={
        "allowedSourceRanges": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "CIDR ranges an external LoadBalancer may admit; empty: any range but 0.0.0.0/0",
        }
    }
)
PROTECTED_STACKS_SCHEMA = PolicyConfigSchema(
    properties={
        "protectedStacks": {
            "type": "array",
            "items": {"type": "string"},
            "default": DEFAULT_PROTECTED_STACKS,
            "description": "Stacks whose cluster and bucket must be protected",
        }
    }
)
IMAGE_DIGESTS_SCHEMA = PolicyConfigSchema(
    properties={
        "protectedStacks": PROTECTED_STACKS_SCHEMA.properties["protectedStacks"],
        "exceptions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"image": {"type": "string"}, "reason": {"type": "string", "minLength": 1}},
                "required": ["image", "reason"],
                "additionalProperties": False,
            },
            "default": [],
            "description": "Reviewed images a protected stack may still run by tag, each with its reason",
        },
    }
)
REQUIRED_LABELS_SCHEMA = PolicyConfigSchema(
    properties={
        "requiredLabels": {
            "type": "array",
            "items": {"type": "string"},
            "default": DEFAULT_REQUIRED_LABELS,
            "description": "Label keys every labelled GCP resource carries",
        }
    }
)

POLICIES: list[ResourceValidationPolicy | StackValidationPolicy] = [
    ResourceValidationPolicy(
        name="flex-start-pool-shape",
        description="Flex-start node pools scale 0..one slice with no reservation, no spot, no multi-host auto-repair.",
        validate=validate_flex_start,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="queued-pool-shape",
        description="Queued pools: flex-start, NO_RESERVATION, totalMaxNodeCount, location policy ANY, no auto-repair, "
        "no spot.",
        validate=validate_queued,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="tpu-topology-and-node-count",
        description="TPU topology is valid for the machine type and node counts equal the slice's VMs.",
        validate=validate_topology,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="multi-host-pool-single-zone",
        description="A multi-host TPU slice pool sits in exactly one zone.",
        validate=validate_single_zone,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="workload-identity",
        description="The cluster has a workload pool and every node pool serves the GKE metadata server.",
        validate=validate_workload_identity,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-default-compute-service-account",
        description="Nodes run as a dedicated service account, not the Compute Engine default one.",
        validate=validate_node_service_account,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="bucket-hardening",
        description="Buckets use uniform access, enforced public access prevention and versioning.",
        validate=validate_bucket,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="least-privilege-iam",
        description="No primitive roles anywhere and no project-level storage admin.",
        validate=validate_least_privilege,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-open-load-balancer",
        description="External LoadBalancer Services list source ranges, within the allowed ones.",
        validate=validate_load_balancer,
        enforcement_level=MANDATORY,
        config_schema=SOURCE_RANGES_SCHEMA,
    ),
    ResourceValidationPolicy(
        name="no-privileged-containers",
        description="No container runs privileged; TPU pods get their chips without it on GKE 1.28+.",
        validate=validate_privileged,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-host-namespaces",
        description="No hostPID, hostIPC or added capabilities; the host network only for TPU pods.",
        validate=validate_host_namespaces,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="cluster-network",
        description="Dataplane V2; in protected stacks private nodes and no control-plane IP endpoint.",
        validate=validate_cluster_network,
        enforcement_level=MANDATORY,
        config_schema=PROTECTED_STACKS_SCHEMA,
    ),
    StackValidationPolicy(
        name="default-deny-network-policy",
        description="Every namespace the stack creates has a default-deny NetworkPolicy.",
        validate=validate_default_deny,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="kueue-quota-within-chips",
        description="For every ResourceFlavor, Kueue's nominal TPU quota is at most the chips its node pools provide.",
        validate=validate_quota,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="pinned-charts-and-images",
        description="Helm charts pin one exact version; container images pin a tag (not latest) or a digest.",
        validate=validate_pinned,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="images-by-digest",
        description="In protected stacks every container image is pinned by @sha256 digest, or a reviewed exception.",
        validate=validate_image_digests,
        enforcement_level=MANDATORY,
        config_schema=IMAGE_DIGESTS_SCHEMA,
    ),
    ResourceValidationPolicy(
        name="protected-stack-resources",
        description="In protected stacks the cluster and bucket are protected and cannot be deleted by accident.",
        validate=validate_protected,
        enforcement_level=MANDATORY,
        config_schema=PROTECTED_STACKS_SCHEMA,
    ),
    StackValidationPolicy(
        name="tpu-node-auto-upgrade",
        description="TPU pools do not auto-upgrade, unless a release channel requires auto-upgrade on every pool.",
        validate=validate_auto_upgrade,
        enforcement_level=ADVISORY,
    ),
    ResourceValidationPolicy(
        name="required-labels",
        description="Labelled GCP resources carry the required labels.",
        validate=validate_labels,
        enforcement_level=ADVISORY,
        config_schema=REQUIRED_LABELS_SCHEMA,
    ),
]
