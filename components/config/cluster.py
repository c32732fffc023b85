"""The GKE cluster: control plane access, release channel and maintenance, the CPU system pool, and the node
service account's roles.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from components import iam_roles, tpu_catalog
from components.config.adopted import AdoptedClusterConfig
from components.config.base import PROJECT, ConfigModel, cluster_name, source_range
from components.config.network import (
    GKE_DEFAULT_MAX_PODS_PER_NODE,
    MAX_MAX_PODS,
    MIN_MAX_PODS,
    DnsProvider,
    IpRangesConfig,
)

MASTER_PREFIX = 28
"""GKE's size for the control plane's peering range (terraform-provider-google resource_container_cluster.go
master_ipv4_cidr_block: IsCIDRNetwork(28, 28))."""
REGIONAL_CLUSTER_ZONES = 3
"""Zones GKE spreads a regional cluster's node pools over by default."""


def version_below_floor(version: str, floor: str) -> bool:
    """True if GKE version `version` (1.33.5-gke.1234000) is older than `floor` (1.33 or 1.33.0-gke.1712000)."""

    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", text))

    wanted = parts(floor)
    return parts(version)[: len(wanted)] < wanted


SYSTEM_POOL_NAME = "system"
"""GKE name of the CPU node pool of a Standard cluster; controllers and Saxml's CPU servers run there."""
SYSTEM_NODE_SELECTOR = {tpu_catalog.NODE_POOL_LABEL: SYSTEM_POOL_NAME}
"""What CPU pods select on a Standard cluster (GKE labels every node with its pool's name)."""


class SystemPoolConfig(ConfigModel):
    """CPU nodes for system pods, the Kueue/JobSet controllers and Saxml's admin and HTTP servers."""

    machine_type: str = "e2-standard-4"
    """Compute Engine machine type of the CPU nodes."""
    min_nodes: int = Field(default=1, ge=0)
    """Fewest nodes of the whole pool, over all its zones (the autoscaler's total bounds): 3 zones for a regional
    cluster, 1 for a zonal one. GKE starts the pool with ⌈minNodes / zones⌉ nodes per zone, which must fit in
    `maxNodes`."""
    max_nodes: int = Field(default=3, ge=1)
    """Most nodes of the whole pool, over all its zones."""
    disk_size_gb: int = Field(default=100, ge=10)
    """Boot disk of each CPU node, in GB."""
    max_pods_per_node: int = Field(default=GKE_DEFAULT_MAX_PODS_PER_NODE, ge=MIN_MAX_PODS, le=MAX_MAX_PODS)
    """Pods a CPU node may run (GKE's default, a /24 of the pod range each); a new value replaces the pool."""

    @model_validator(mode="after")
    def _bounds(self) -> SystemPoolConfig:
        if self.min_nodes > self.max_nodes:
            raise ValueError(f"minNodes ({self.min_nodes}) is above maxNodes ({self.max_nodes})")
        return self


class RecurringWindowConfig(ConfigModel):
    """A recurring maintenance window: the first occurrence and an RFC 5545 rule, e.g. FREQ=WEEKLY;BYDAY=SA,SU."""

    start_time: datetime
    """Start of the first window: RFC 3339 with a zone, quoted (`"2026-01-03T02:00:00Z"`)."""
    end_time: datetime
    """End of the first window; its length is every window's length."""
    recurrence: str
    """RFC 5545 rule of the repeats, e.g. `FREQ=WEEKLY;BYDAY=SA,SU`."""


class MaintenanceExclusionConfig(ConfigModel):
    """A period GKE holds upgrades back, e.g. a training campaign; the default scope also holds node upgrades."""

    name: str
    """Unique among the exclusions."""
    start_time: datetime
    """RFC 3339 with a zone, quoted."""
    end_time: datetime
    """RFC 3339 with a zone, quoted."""
    scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = "NO_MINOR_OR_NODE_UPGRADES"
    """What is held back; `NO_UPGRADES` lasts at most 30 days."""


NO_UPGRADES_MAX_DAYS = 30
"""GKE's limit on a NO_UPGRADES exclusion."""
MAINTENANCE_PERIOD = timedelta(days=32)
MAINTENANCE_MIN_AVAILABLE = timedelta(hours=48)
MAINTENANCE_MIN_WINDOW = timedelta(hours=4)
"""GKE's floor for a recurring window: "at least 48 hours of maintenance availability in a 32-day rolling window. Only
contiguous availability windows of at least four hours are considered."
(https://cloud.google.com/kubernetes-engine/docs/how-to/maintenance-window, Considerations)."""
_WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_DAILY_START = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")


class MaintenanceConfig(ConfigModel):
    """When GKE may upgrade the cluster and its nodes: a daily or recurring window, and exclusions from it.

    On a release channel node auto-upgrade cannot be turned off, so this is how a training run is kept
    from being restarted by a node upgrade.
    """

    daily_start_time: str | None = None
    """Start (UTC, `"HH:MM"`, e.g. `"03:00"`) of a daily 4-hour window; or set `recurringWindow`."""
    recurring_window: RecurringWindowConfig | None = None
    """A recurring window instead of the daily one; GKE needs at least 48 hours in every 32 days, from occurrences of
    4 hours or more (checked for FREQ=DAILY and WEEKLY rules)."""
    exclusions: tuple[MaintenanceExclusionConfig, ...] = ()
    """Periods without upgrades, e.g. over a training campaign; they need a window."""

    @property
    def has_window(self) -> bool:
        return self.daily_start_time is not None or self.recurring_window is not None

    def problems(self) -> list[tuple[str, str]]:
        """(field under cluster.maintenance, message)."""
        problems: list[tuple[str, str]] = []
        if self.daily_start_time is not None and self.recurring_window is not None:
            problems.append(("dailyStartTime", "set dailyStartTime or recurringWindow, not both"))
        if self.daily_start_time is not None and not _DAILY_START.match(self.daily_start_time):
            problems.append(("dailyStartTime", f"{self.daily_start_time!r} is not a UTC time like 03:00"))
        window = self.recurring_window
        if window is not None:
            problems += [(f"recurringWindow.{f}", m) for f, m in _period_problems(window.start_time, window.end_time)]
            if not window.recurrence.startswith("FREQ="):
                problems.append(
                    ("recurringWindow.recurrence", f"{window.recurrence!r} is not a rule like FREQ=WEEKLY;BYDAY=SA,SU")
                )
            elif not problems:
                available = _least_available(window)
                if available is not None and available < MAINTENANCE_MIN_AVAILABLE:
                    hours = (window.end_time - window.start_time) / timedelta(hours=1)
                    problems.append(
                        (
                            "recurringWindow",
                            f"{window.recurrence} with {hours:g}-hour windows allows "
                            f"{available / timedelta(hours=1):g} hours of maintenance in some 32 days; GKE requires "
                            "at least 48 hours in every 32 days, counting only windows of 4 hours or more: lengthen "
                            "the window or let it recur more often",
                        )
                    )
        if self.exclusions and not self.has_window:
            problems.append(
                ("exclusions", "exclusions need a maintenance window; set dailyStartTime or recurringWindow")
            )
        names: set[str] = set()
        for index, exclusion in enumerate(self.exclusions):
            where = f"exclusions[{index}]"
            problems += [(f"{where}.{f}", m) for f, m in _period_problems(exclusion.start_time, exclusion.end_time)]
            length = exclusion.end_time - exclusion.start_time
            if exclusion.scope == "NO_UPGRADES" and length > timedelta(days=NO_UPGRADES_MAX_DAYS):
                problems.append(
                    (
                        f"{where}.endTime",
                        f"a NO_UPGRADES exclusion lasts at most {NO_UPGRADES_MAX_DAYS} days (this one {length.days}); "
                        "shorten it or use scope NO_MINOR_OR_NODE_UPGRADES",
                    )
                )
            if exclusion.name in names:
                problems.append((f"{where}.name", f"{exclusion.name!r} is used twice; exclusion names are unique"))
            names.add(exclusion.name)
        return problems


def _window_starts(window: RecurringWindowConfig, until: datetime) -> list[datetime] | None:
    """Starts of the window's occurrences up to `until`, for the rules most windows use (FREQ=DAILY or WEEKLY, with
    INTERVAL and BYDAY); None for any other rule, which is left to GKE to judge."""
    parts = dict(part.partition("=")[::2] for part in window.recurrence.split(";"))
    if set(parts) - {"FREQ", "INTERVAL", "BYDAY"} or parts.get("FREQ") not in ("DAILY", "WEEKLY"):
        return None
    days = parts["BYDAY"].split(",") if "BYDAY" in parts else []
    if any(day not in _WEEKDAYS for day in days) or not parts.get("INTERVAL", "1").isdigit():
        return None
    interval = int(parts.get("INTERVAL", "1")) or 1
    first = window.start_time
    weekdays = {_WEEKDAYS.index(day) for day in days}
    starts = []
    for offset in range((until - first).days + 1):
        start = first + timedelta(days=offset)
        if parts["FREQ"] == "DAILY":
            due = offset % interval == 0 and (not weekdays or start.weekday() in weekdays)
        else:  # weeks begin on Monday (RFC 5545's default WKST) and count from the first one
            week = (offset + first.weekday()) // 7
            due = week % interval == 0 and start.weekday() in (weekdays or {first.weekday()})
        if due:
            starts.append(start)
    return starts


def _least_available(window: RecurringWindowConfig) -> timedelta | None:
    """The fewest hours of maintenance any 32 days of the window's first months hold, counting only the parts of an
    occurrence of at least 4 hours, as GKE counts them; None when the rule is not one _window_starts reads."""
    length = window.end_time - window.start_time
    horizon = window.start_time + 3 * MAINTENANCE_PERIOD
    starts = _window_starts(window, horizon)
    if starts is None:
        return None
    if not starts or length < MAINTENANCE_MIN_WINDOW:
        return timedelta(0)
    least = None
    for begin in [start + length for start in starts if start + length + MAINTENANCE_PERIOD <= horizon]:
        end = begin + MAINTENANCE_PERIOD
        overlaps = (min(end, start + length) - max(begin, start) for start in starts)
        held = sum((part for part in overlaps if part >= MAINTENANCE_MIN_WINDOW), timedelta(0))
        least = held if least is None else min(least, held)
    return least


def _period_problems(start: datetime, end: datetime) -> list[tuple[str, str]]:
    if start.tzinfo is None or end.tzinfo is None:
        return [("startTime", "startTime and endTime need a timezone, e.g. 2026-12-01T00:00:00Z")]
    if end <= start:
        return [("endTime", f"{end.isoformat()} is not after startTime {start.isoformat()}")]
    return []


class ControlPlaneConfig(ConfigModel):
    """Who reaches the Kubernetes API. Every client (this program's provider, CI, operators) uses the DNS endpoint,
    where IAM decides and no address list needs keeping; the IP endpoint is off unless asked for, and then only
    `authorizedNetworks` reach it."""

    ip_endpoint: bool = False
    """Direct IP access to the control plane, for clients that cannot use the DNS endpoint; an error in a protected
    stack."""
    authorized_networks: tuple[Annotated[str, AfterValidator(lambda c: source_range(c))], ...] = ()
    """CIDRs that may use the IP endpoint (Google Cloud public IPs never may)."""
    master_ipv4_cidr: str | None = None
    """A /28 for the control plane's own network (GKE's `masterIpv4CidrBlock`): the cluster is then created with VPC
    Network Peering instead of Private Service Connect, and the stack's firewall rule admits this range to the
    webhooks. Set only when creating a cluster: GKE cannot change it, so a new value replaces the cluster.

    Default: none (Private Service Connect; the control plane reaches nodes through the konnectivity tunnel)"""
    kubernetes_tokens_via_dns: bool = False
    """Let the DNS endpoint accept Kubernetes service account tokens besides Google credentials: MultiKueue's manager
    reaches its workers with a token of their own (on for every worker; IAM still decides for Google identities)."""

    def problems(self) -> list[tuple[str, str]]:
        """(field under cluster.controlPlane, message). GKE turns authorized networks on whenever they are sent:
        an IP endpoint with none admits only the cluster's nodes, a silent lock-out for whoever asked for it."""
        if self.ip_endpoint and not self.authorized_networks:
            return [
                (
                    "authorizedNetworks",
                    "ipEndpoint is true but no network may reach the IP endpoint; list the CIDRs of its clients, "
                    "or remove ipEndpoint (the stack's kubeconfig, CI and operators use the DNS endpoint)",
                )
            ]
        if self.master_ipv4_cidr is not None:
            problem = _master_range_problem(self.master_ipv4_cidr)
            if problem:
                return [("masterIpv4Cidr", problem)]
        if self.authorized_networks and not self.ip_endpoint:
            return [
                (
                    "authorizedNetworks",
                    "these networks only apply to the IP endpoint, which is off; set controlPlane.ipEndpoint: true "
                    "or remove them (the DNS endpoint is guarded by IAM, not by networks)",
                )
            ]
        return []


def _master_range_problem(cidr: str) -> str | None:
    import ipaddress

    try:
        network = ipaddress.ip_network(cidr)
    except ValueError:
        return f"{cidr!r} is not a CIDR like 172.16.0.32/28 (the address must be the range's first)"
    if network.version != 4 or network.prefixlen != MASTER_PREFIX:
        return f"{cidr!r} is not a /28; GKE takes a /28 for the control plane's range"
    if not network.is_private:
        return f"{cidr!r} is not a private range; use one of 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16"
    return None


def _node_role(role: str) -> str:
    """The node account's roles are granted on gcp:project: the policy pack's limits apply as it would apply them."""
    if not role.startswith(iam_roles.ROLE_FORMS):
        raise ValueError(
            f"{role!r} is not a role name; use roles/<service>.<role> or a custom role (projects/<id>/roles/<name>)"
        )
    problem = iam_roles.role_problem(role, wide=True)
    if problem:
        raise ValueError(f"{problem} (node account roles are granted on the whole project)")
    return role


class ClusterConfig(ConfigModel):
    """The GKE cluster: where it runs, its release channel and maintenance, the CPU system pool, who reaches its
    control plane, and the node service account."""

    name: str = "tpu-cluster"
    """Cluster name: a DNS label of at most 40 characters."""
    location: str | None = None
    """`gcp:region` (regional control plane) or one of its zones: the stack's subnetwork and Cloud NAT are there.

    Default: `gcp:region`"""
    mode: Literal["standard", "autopilot"] = "standard"
    """Autopilot provisions TPU nodes itself: no `tpuPools` then."""
    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED", "UNSPECIFIED"] = "RAPID"
    """GKE release channel; `UNSPECIFIED` is no channel, and only then may TPU pools turn node auto-upgrade off."""
    maintenance: MaintenanceConfig = MaintenanceConfig()
    """When GKE may upgrade the cluster and its nodes.

    Default: GKE's (any time)"""
    min_master_version: str = "1.33"
    """Version floor (flex-start TPUs need 1.33.0-gke.1712000 or newer). Without a release channel it is the
    cluster's initial version; on a channel GKE picks the channel's version (a pinned minor the channel dropped
    would fail creation) and `pulumi up` stops with an error naming this key if that version is below the floor."""
    kubernetes_minor: str = "1.33"
    """Kubernetes minor the stack's objects are validated against offline."""
    system_pool: SystemPoolConfig = SystemPoolConfig()
    """CPU pool for the controllers and Saxml's CPU servers (Standard clusters)."""
    deletion_protection: bool = False
    """The provider's `deletion_protection` flag: while true, Pulumi refuses to delete the cluster (it is not a
    GKE-side setting). On in prod; on in a stack that is not `protected`, a warning.

    Default: true in a protected stack (where `false` is an error), else false"""
    network: str | None = None
    """An existing VPC network for the cluster (e.g. a stack deployed on `default` before the stack made its own);
    then `ipRanges` is required: the stack cannot know what is free there.

    Default: the stack's own VPC `tpu-stack-<stack>`, with a subnetwork per cluster"""
    subnetwork: str | None = None
    """An existing subnetwork of `network` for the cluster's nodes, in the cluster's region; GKE then creates the pod
    and Service ranges in it from `ipRanges`.

    Default: the stack's subnetwork `<cluster>-nodes` (with `network`: the network's subnetwork in the region)"""
    ip_ranges: IpRangesConfig | None = None
    """The node, pod and Service ranges, each checked to hold the cluster with every pool group at its largest.

    Default: sized from that (twice it), in 10.0.0.0/8"""
    dns: DnsProvider = "cloud-dns"
    """In-cluster DNS: `cloud-dns` (Cloud DNS for GKE: no kube-dns Deployment to scale with the nodes) or GKE's
    `kube-dns`. Changing it on an existing cluster takes effect on nodes created after."""
    private_nodes: bool = True
    """Nodes without external IP addresses (organisations that enforce `constraints/compute.vmExternalIpAccess` refuse
    others), reaching out through the stack's Cloud NAT. `false` is an error in a protected stack."""
    control_plane: ControlPlaneConfig = ControlPlaneConfig()
    """Who reaches the Kubernetes API."""
    node_service_account_roles: tuple[Annotated[str, AfterValidator(lambda r: _node_role(r))], ...] = (
        "roles/container.defaultNodeServiceAccount",
        "roles/artifactregistry.reader",
    )
    """Roles of the dedicated node service account, granted on the project. The default is GKE's documented minimum
    for custom node service accounts (logging, monitoring, metadata) and image pulls from Artifact Registry;
    primitive roles and `roles/storage.*` are refused, as the `least-privilege-iam` policy refuses them
    (`components/iam_roles.py` holds the rule for both)."""
    adopted: AdoptedClusterConfig | None = None
    """The cluster exists already (made by xpk or Cluster Toolkit) and is imported, not created: what it keeps as it
    is (`tpu-stack adopt` writes this; docs/adopt.md).

    Default: none, the stack creates the cluster"""

    @property
    def node_service_account_id(self) -> str:
        """IAM account ids are 6-30 characters; cluster names may be 40."""
        return f"{self.name[:24].rstrip('-')}-nodes"

    @property
    def subnetwork_name(self) -> str:
        """The stack's own subnetwork of this cluster (names <= 63)."""
        return f"{self.name}-nodes"

    @property
    def webhook_firewall_name(self) -> str:
        """The VPC firewall rule that lets the control plane call webhooks on private nodes (names <= 63)."""
        return f"{self.name}-cp-webhooks"

    _name = field_validator("name")(cluster_name)

    @field_validator("kubernetes_minor")
    @classmethod
    def _minor(cls, minor: str) -> str:
        if not re.match(r"^\d+\.\d+$", minor):
            raise ValueError(f"{minor!r} must be a Kubernetes minor like 1.33")
        return minor


def node_role_problems(cluster: ClusterConfig) -> list[str]:
    seen: dict[str, int] = {}
    problems = []
    for index, role in enumerate(cluster.node_service_account_roles):
        if role in seen:
            problems.append(
                f"{PROJECT}:cluster.nodeServiceAccountRoles[{index}]: {role} is already "
                f"nodeServiceAccountRoles[{seen[role]}]; list it once"
            )
        seen.setdefault(role, index)
    return problems
