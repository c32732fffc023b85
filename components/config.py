"""The stack's typed configuration: one validated model that every component reads.

Everything derived (VMs per slice, chips, node selectors, autoscaling bounds, quotas) is computed here once,
so node pools, Kueue objects, Saxml and policies can never disagree. Bad config raises `ConfigError` with
one line per problem, each naming the config key (`tpu-stack:tpuPools[1].topology: ...`).
"""

from __future__ import annotations

import difflib
import ipaddress
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Annotated, Any, Literal

from pulumi import RunError
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from components import iam_roles, tpu_catalog
from components.stacks import PROTECTED_STACKS
from components.tpu_catalog import MachineType

PROJECT = "tpu-stack"
Provisioning = Literal["flex-start", "queued", "on-demand", "spot", "reservation"]

# GKE node pool names: a DNS label of at most 40 characters. Cluster names: at most 40, start with a letter.
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
GKE_NAME_MAX = 40
_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?[smhd])+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
FLEX_START_MAX_SECONDS = 7 * 86400
"""GKE's limit on a flex-start run; queued provisioning pools are flex-start too, so it applies to both."""


class ConfigError(RunError):
    """Invalid stack configuration; `lines` holds one message per problem.

    A RunError, so the real engine prints the lines without a traceback.
    """

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True, strict=False
    )


def _dns_label_problem(name: str, what: str) -> str | None:
    if len(name) > GKE_NAME_MAX:
        return f"{what} {name!r} is {len(name)} characters; GKE allows at most {GKE_NAME_MAX}: shorten it"
    if not _DNS_LABEL.match(name):
        return f"{what} {name!r} must be a DNS label: lowercase letters, digits and '-', starting with a letter"
    return None


def parse_duration(text: str) -> int:
    """'24h' -> 86400 seconds; units s, m, h, d, also combined as Go writes durations ('1h30m', '45m0s').

    The one parser of the repo: config run limits and the custom timeouts the offline policy check reads."""
    if not _DURATION.match(text):
        raise ValueError(f"{text!r} is not a duration; use a number and a unit, e.g. 3600s, 90m, 24h, 7d")
    return round(sum(float(number) * _DURATION_UNITS[unit] for number, unit in _DURATION_PART.findall(text)))


GCP_LABEL_MAX = 63
GCP_LABELS_PER_RESOURCE = 64
GCP_LABEL_MAX_BYTES = 128


def _gcp_label_chars(text: str) -> bool:
    """Lowercase letters of any script (Unicode Ll, Lo), digits, '_' and '-'."""
    return all(
        unicodedata.category(c) in ("Ll", "Lo") or unicodedata.category(c).startswith("N") or c in "_-" for c in text
    )


def gcp_label_problem(key: str, value: str) -> str | None:
    """Google Cloud resource labels: keys 1-63 characters starting with a lowercase letter, values 0-63; both of
    lowercase letters, digits, '_' and '-' (international lowercase letters too), each at most 128 bytes."""
    if not (1 <= len(key) <= GCP_LABEL_MAX and len(key.encode()) <= GCP_LABEL_MAX_BYTES and _gcp_label_chars(key)) or (
        unicodedata.category(key[0]) not in ("Ll", "Lo")
    ):
        return (
            f"label key {key!r} must be 1-{GCP_LABEL_MAX} lowercase letters, digits, '_' or '-', starting with a "
            "lowercase letter (Google Cloud labels)"
        )
    if len(value) > GCP_LABEL_MAX or len(value.encode()) > GCP_LABEL_MAX_BYTES or not _gcp_label_chars(value):
        return (
            f"value {value!r} must be at most {GCP_LABEL_MAX} lowercase letters, digits, '_' or '-' "
            "(Google Cloud labels)"
        )
    return None


def gcp_label_value(text: str) -> str:
    """`text` as a Google Cloud label value: stack names may hold upper case and '.'."""
    return re.sub(r"[^a-z0-9_-]", "-", text.lower())[:GCP_LABEL_MAX]


K8S_LABEL_MAX = 63
K8S_PREFIX_MAX = 253
_K8S_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_K8S_NAME_RULE = "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"


def node_label_key_problem(key: str) -> str | None:
    """Kubernetes label (and taint) keys: an optional DNS-subdomain prefix and '/', then a name of 1-63 characters."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > K8S_PREFIX_MAX or not _DNS_SUBDOMAIN.match(prefix)):
        return (
            f"key {key!r}: prefix {prefix!r} must be a DNS subdomain (lowercase letters, digits, '-' and '.', at "
            f"most {K8S_PREFIX_MAX} characters), e.g. example.com/team"
        )
    if len(name) > K8S_LABEL_MAX or not _K8S_LABEL_NAME.match(name):
        return f"key {key!r}: the name {name!r} must be 1-{K8S_LABEL_MAX} {_K8S_NAME_RULE} (Kubernetes labels)"
    return None


def node_label_value_problem(value: str) -> str | None:
    """Kubernetes label (and taint) values: empty, or at most 63 characters of the name's form."""
    if value and (len(value) > K8S_LABEL_MAX or not _K8S_LABEL_NAME.match(value)):
        return f"value {value!r} must be at most {K8S_LABEL_MAX} {_K8S_NAME_RULE} (Kubernetes labels)"
    return None


_PROJECT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
_ZONE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z]$")


def project_id_problem(project: str) -> str | None:
    if project.isdigit():
        return f"{project!r} is a project number; give the project id (e.g. tpu-stack-dev)"
    if not _PROJECT_ID.match(project):
        return (
            f"{project!r} is not a project id: 6-30 lowercase letters, digits and '-', starting with a letter and "
            "not ending with '-'"
        )
    return None


def zone_region(location: str) -> str | None:
    """The region of a zone (`us-east5-a` -> `us-east5`); None if `location` is not a zone."""
    match = _ZONE.match(location.lower())
    return match.group(1) if match else None


REGIONAL_CLUSTER_ZONES = 3
"""Zones GKE spreads a regional cluster's node pools over by default."""


def _is_zone(location: str) -> bool:
    """`us-east5-a` is a zone, `us-east5` a region."""
    return location.count("-") == 2


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


class SystemPoolConfig(_Model):
    """CPU nodes for system pods, the Kueue/JobSet controllers and Saxml's admin and HTTP servers."""

    machine_type: str = "e2-standard-4"
    min_nodes: int = Field(default=1, ge=0)
    """Nodes of the whole pool, over all its zones (the autoscaler's total bounds)."""
    max_nodes: int = Field(default=3, ge=1)
    disk_size_gb: int = Field(default=100, ge=10)

    @model_validator(mode="after")
    def _bounds(self) -> SystemPoolConfig:
        if self.min_nodes > self.max_nodes:
            raise ValueError(f"minNodes ({self.min_nodes}) is above maxNodes ({self.max_nodes})")
        return self


class RecurringWindowConfig(_Model):
    """A recurring maintenance window: the first occurrence and an RFC 5545 rule, e.g. FREQ=WEEKLY;BYDAY=SA,SU."""

    start_time: datetime
    end_time: datetime
    recurrence: str


class MaintenanceExclusionConfig(_Model):
    """A period GKE holds upgrades back, e.g. a training campaign; the default scope also holds node upgrades."""

    name: str
    start_time: datetime
    end_time: datetime
    scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = "NO_MINOR_OR_NODE_UPGRADES"


NO_UPGRADES_MAX_DAYS = 30
"""GKE's limit on a NO_UPGRADES exclusion."""
_DAILY_START = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")


class MaintenanceConfig(_Model):
    """When GKE may upgrade the cluster and its nodes: a daily or recurring window, and exclusions from it.

    On a release channel node auto-upgrade cannot be turned off, so this is how a training run is kept
    from being restarted by a node upgrade.
    """

    daily_start_time: str | None = None
    """Start (UTC, HH:MM) of a daily 4-hour window."""
    recurring_window: RecurringWindowConfig | None = None
    exclusions: tuple[MaintenanceExclusionConfig, ...] = ()

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


def _period_problems(start: datetime, end: datetime) -> list[tuple[str, str]]:
    if start.tzinfo is None or end.tzinfo is None:
        return [("startTime", "startTime and endTime need a timezone, e.g. 2026-12-01T00:00:00Z")]
    if end <= start:
        return [("endTime", f"{end.isoformat()} is not after startTime {start.isoformat()}")]
    return []


class ControlPlaneConfig(_Model):
    """Who reaches the Kubernetes API: the DNS endpoint (IAM decides) and, unless turned off, the IP endpoint
    from `authorizedNetworks` only."""

    ip_endpoint: bool | None = None
    """Direct IP access to the control plane; default off in prod (only the DNS endpoint), on elsewhere."""
    authorized_networks: tuple[Annotated[str, AfterValidator(lambda c: _source_range(c))], ...] = ()
    """CIDRs that may use the IP endpoint (Google Cloud public IPs never may)."""


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


class ClusterConfig(_Model):
    name: str = "tpu-cluster"
    location: str | None = None
    """Region (regional control plane) or zone; defaults to gcp:region."""
    mode: Literal["standard", "autopilot"] = "standard"
    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED", "UNSPECIFIED"] = "RAPID"
    """UNSPECIFIED: no channel; only then may TPU pools turn node auto-upgrade off."""
    maintenance: MaintenanceConfig = MaintenanceConfig()
    min_master_version: str = "1.33"
    """Version floor: flex-start on TPUs needs 1.33.0-gke.1712000 or newer. Sent as the initial version only
    without a release channel; on a channel GKE picks the channel's version and the floor is checked against it."""
    kubernetes_minor: str = "1.33"
    """Minor the Kubernetes objects are validated against offline."""
    system_pool: SystemPoolConfig = SystemPoolConfig()
    deletion_protection: bool = False
    network: str | None = None
    subnetwork: str | None = None
    private_nodes: bool | None = None
    """Nodes without external IPs, egress through Cloud NAT; default on in prod."""
    control_plane: ControlPlaneConfig = ControlPlaneConfig()
    node_service_account_roles: tuple[Annotated[str, AfterValidator(lambda r: _node_role(r))], ...] = (
        "roles/container.defaultNodeServiceAccount",
        "roles/artifactregistry.reader",
    )
    """Roles of the dedicated node service account: GKE's documented minimum for custom node service accounts
    (logging, monitoring, metadata) and image pulls from Artifact Registry."""

    @property
    def node_service_account_id(self) -> str:
        """IAM account ids are 6-30 characters; cluster names may be 40."""
        return f"{self.name[:24].rstrip('-')}-nodes"

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        problem = _dns_label_problem(name, "cluster name")
        if problem:
            raise ValueError(problem)
        return name

    @field_validator("kubernetes_minor")
    @classmethod
    def _minor(cls, minor: str) -> str:
        if not re.match(r"^\d+\.\d+$", minor):
            raise ValueError(f"{minor!r} must be a Kubernetes minor like 1.33")
        return minor


_TOLERATION_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "PREFER_NO_SCHEDULE": "PreferNoSchedule", "NO_EXECUTE": "NoExecute"}


class Taint(_Model):
    """A node taint in GKE API terms (NO_SCHEDULE); pods on the pool carry its toleration in Kubernetes terms."""

    key: str
    value: str = ""
    effect: Literal["NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"] = "NO_SCHEDULE"

    @property
    def toleration(self) -> dict[str, str]:
        """Equal on the taint's value; a taint without a value is tolerated with Exists."""
        effect = _TOLERATION_EFFECTS[self.effect]
        if self.value:
            return {"key": self.key, "operator": "Equal", "value": self.value, "effect": effect}
        return {"key": self.key, "operator": "Exists", "effect": effect}


CALENDAR_MAX_DAYS = 90
"""Compute's limits on a calendar-mode request: 1 to 90 days long, starting at most 120 days ahead."""
CALENDAR_MAX_LEAD_DAYS = 120


@dataclass(frozen=True)
class CalendarTpu:
    """How Compute takes a calendar-mode request for one TPU version (gcloud --tpu-version/--chip-count)."""

    vm_family: str
    accelerator_type: str
    chips: tuple[int, ...]
    """Chip counts one request may ask for."""
    serving_only_chips: tuple[int, ...] = ()
    """Counts only a SERVING request may ask for."""


CALENDAR_TPUS: dict[str, CalendarTpu] = {
    "v5e": CalendarTpu("VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT5LP", "ct5lp", (1, 4, 8, 16, 32, 64, 128, 256), (1, 4, 8)),
    "v5p": CalendarTpu("VM_FAMILY_CLOUD_TPU_POD_SLICE_CT5P", "ct5p", (4, 8, 16, 32, 64, 128, 256, 512, 1024)),
    "v6e": CalendarTpu("VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E", "ct6e", (1, 4, 8, 16, 32, 64, 128, 256)),
}


class FutureReservationConfig(_Model):
    """Calendar mode (DWS): TPU capacity for a fixed window, delivered as an auto-created reservation.

    A submitted request cannot be modified, cancelled or deleted: a new window is a new request.
    """

    start_time: datetime
    end_time: datetime
    name: str | None = None
    """Defaults to `<pool name>-<start date>`, so a new window submits a new request."""
    workload_type: Literal["BATCH", "SERVING"] = "BATCH"

    @model_validator(mode="after")
    def _window(self) -> FutureReservationConfig:
        if self.start_time.tzinfo is None or self.end_time.tzinfo is None:
            raise ValueError("startTime and endTime need a timezone, e.g. 2026-12-01T00:00:00Z")
        if self.end_time <= self.start_time:
            raise ValueError(f"endTime {self.end_time.isoformat()} is not after startTime")
        length = self.end_time - self.start_time
        if not timedelta(days=1) <= length <= timedelta(days=CALENDAR_MAX_DAYS):
            raise ValueError(
                f"window is {length.total_seconds() / 86400:g} days long; calendar mode reserves 1 to "
                f"{CALENDAR_MAX_DAYS} days"
            )
        return self

    def lead_time_problem(self, now: datetime) -> str | None:
        if self.start_time - now > timedelta(days=CALENDAR_MAX_LEAD_DAYS):
            return (
                f"startTime is more than {CALENDAR_MAX_LEAD_DAYS} days ahead; calendar-mode requests can start "
                "at most that far out"
            )
        if self.start_time < now:
            return "startTime is in the past; choose a window that starts later"
        return None


class TpuPoolConfig(_Model):
    """A group of identical TPU slices; GKE needs one node pool per slice."""

    name: str
    machine_type: str | None = None
    tpu_version: str | None = None
    """Shortcut for the version's 4-chip multi-host machine type (v4, v5e, v5p, v6e, tpu7x)."""
    topology: str | None = None
    """Defaults to the machine type's single-host topology."""
    slices: int = 1
    provisioning: Provisioning = "on-demand"
    reservation: str | None = None
    """Existing reservation to consume (provisioning: reservation)."""
    future_reservation: FutureReservationConfig | None = None
    spot: bool | None = None
    """Not a flag: spot is a provisioning mode. Accepted only to explain that (DWS capacity is never spot)."""
    zone: str | None = None
    max_run_duration: str | None = None
    labels: dict[str, str] = {}
    taints: tuple[Taint, ...] = ()
    auto_upgrade: bool | None = None
    """Node auto-upgrade; GKE keeps it on in clusters on a release channel (steer it with cluster.maintenance).
    Without a channel it defaults to off: an upgrade restarts every VM of a slice and the run on it."""

    def problems(self) -> list[tuple[str, str]]:
        """(config field, message) for each problem of the pool on its own; derived values need none."""
        labels = self._node_label_problems()
        return labels or self._shape_problems()

    def _node_label_problems(self) -> list[tuple[str, str]]:
        """Labels become node labels and the Kueue flavor's nodeLabels; taint keys and values have the same form."""
        problems: list[tuple[str, str]] = []
        for key, value in self.labels.items():
            problem = node_label_key_problem(key) or node_label_value_problem(value)
            if problem:
                problems.append((f"labels.{key}", problem))
        for index, taint in enumerate(self.taints):
            for field, problem in (
                ("key", node_label_key_problem(taint.key)),
                ("value", node_label_value_problem(taint.value)),
            ):
                if problem:
                    problems.append((f"taints[{index}].{field}", problem))
        return problems

    def _shape_problems(self) -> list[tuple[str, str]]:
        if (self.machine_type is None) == (self.tpu_version is None):
            return [("machineType", "set exactly one of machineType or tpuVersion")]
        if self.tpu_version is not None and self.tpu_version not in tpu_catalog.VERSIONS:
            valid = ", ".join(tpu_catalog.VERSIONS)
            return [("tpuVersion", f"{self.tpu_version!r} is not a TPU version; valid: {valid}")]
        if self.machine_type is not None and tpu_catalog.machine_type(self.machine_type) is None:
            valid = ", ".join(tpu_catalog.MACHINE_TYPES)
            return [("machineType", f"{self.machine_type!r} is not a TPU machine type; valid: {valid}")]
        problems: list[tuple[str, str]] = []
        if self.slices < 1:
            problems.append(("slices", f"is {self.slices}; a pool group needs at least 1 slice"))
        machine = self.machine
        if self.topology is not None and not machine.is_valid_topology(self.topology):
            problems.append(("topology", self._topology_problem(machine, self.topology)))
        elif self.multi_host and self.zone is None:
            problems.append(
                (
                    "zone",
                    f"required: a {self.slice_topology} slice spans {self.vms_per_slice} VMs, "
                    "which must sit in one zone",
                )
            )
        elif self.multi_host and machine.version.name == "tpu7x":
            problems.append(
                (
                    "topology",
                    "multi-host Ironwood slices need a GCE workload policy, which this stack cannot declare "
                    f"yet; use a single-host {machine.single_host_topology} slice or another TPU version",
                )
            )
        problems += self._provisioning_problems()
        if not problems and self.future_reservation is not None:
            problems += self._calendar_problems(self.future_reservation)
        return problems

    def _calendar_problems(self, window: FutureReservationConfig) -> list[tuple[str, str]]:
        version = self.machine.version.name
        calendar = CALENDAR_TPUS.get(version)
        if calendar is None:
            return [
                (
                    "futureReservation",
                    f"calendar mode reserves TPU {', '.join(CALENDAR_TPUS)}, not {version}; use another provisioning "
                    "mode or TPU version",
                )
            ]
        chips = self.total_chips
        if chips not in calendar.chips:
            counts = ", ".join(str(c) for c in calendar.chips)
            return [
                (
                    "slices",
                    f"{self.slices} x {self.slice_topology} = {chips} {version} chips; a calendar-mode request takes "
                    f"{counts} chips: change slices or topology",
                )
            ]
        if chips in calendar.serving_only_chips and window.workload_type != "SERVING":
            return [
                (
                    "futureReservation.workloadType",
                    f"{chips} {version} chips can be reserved only for SERVING; set workloadType: SERVING or reserve "
                    "16 chips or more",
                )
            ]
        return []

    def _topology_problem(self, machine: MachineType, topology: str) -> str:
        dims = len(topology.split("x"))
        valid = machine.valid_topologies()
        shown = ", ".join(valid[:8]) + (", …" if len(valid) > 8 else "")
        if dims != machine.version.dimensions:
            return (
                f"{topology!r} has {dims} dimensions; {machine.version.name} slices are "
                f"{machine.version.dimensions}-D ({machine.name} valid: {shown})"
            )
        return f"{topology!r} is not a {machine.version.name} topology for {machine.name}; valid: {shown}"

    def _provisioning_problems(self) -> list[tuple[str, str]]:
        mode = self.provisioning
        problems: list[tuple[str, str]] = []
        if self.spot is not None and mode == "spot":
            problems.append(
                (
                    "spot",
                    "spot is a provisioning mode, not a flag, and this pool already has provisioning: spot; "
                    "remove spot",
                )
            )
        elif self.spot is not None:
            problems.append(
                (
                    "spot",
                    f"spot is a provisioning mode, not a flag, and {mode} capacity cannot be spot; "
                    "set provisioning: spot or remove spot",
                )
            )
        if mode != "reservation" and (self.reservation or self.future_reservation):
            field = "reservation" if self.reservation else "futureReservation"
            problems.append(
                (
                    field,
                    f"provisioning {mode} cannot consume a reservation (it needs NO_RESERVATION); "
                    "remove it or set provisioning: reservation",
                )
            )
        if mode == "reservation" and not (self.reservation or self.future_reservation):
            problems.append(("reservation", "provisioning reservation needs a reservation name or a futureReservation"))
        if mode == "reservation" and self.reservation and self.future_reservation:
            problems.append(("futureReservation", "set reservation or futureReservation, not both"))
        if self.future_reservation is not None and self.zone is None:
            problems.append(("zone", "required with futureReservation: calendar-mode capacity is zonal"))
        if self.max_run_duration is not None:
            problems += self._run_duration_problems(self.max_run_duration)
        return problems

    def _run_duration_problems(self, text: str) -> list[tuple[str, str]]:
        if self.provisioning not in ("flex-start", "queued", "spot"):
            return [("maxRunDuration", f"applies to flex-start, queued and spot pools, not {self.provisioning}")]
        try:
            seconds = parse_duration(text)
        except ValueError as error:
            return [("maxRunDuration", str(error))]
        if self.provisioning == "flex-start" and seconds > FLEX_START_MAX_SECONDS:
            return [("maxRunDuration", f"{text} exceeds flex-start's 7-day limit; use 7d or less")]
        if self.provisioning == "queued" and seconds > FLEX_START_MAX_SECONDS:
            return [
                (
                    "maxRunDuration",
                    f"{text} exceeds the 7-day limit of queued pools (they run on flex-start capacity); use 7d or less",
                )
            ]
        return []

    # ---- derived values -------------------------------------------------------------------------------
    @cached_property
    def machine(self) -> MachineType:
        name = self.machine_type or tpu_catalog.DEFAULT_MACHINE_TYPE[str(self.tpu_version)]
        found = tpu_catalog.machine_type(name)
        assert found is not None, "validated in problems()"
        return found

    @property
    def slice_topology(self) -> str:
        return self.topology or self.machine.single_host_topology

    @property
    def explicit_topology(self) -> str | None:
        """What goes into placementPolicy.tpuTopology: gcloud sends none for single-host pools."""
        return self.slice_topology if self.multi_host or self.topology else None

    @property
    def chips_per_slice(self) -> int:
        return self.machine.chips(self.slice_topology)

    @property
    def vms_per_slice(self) -> int:
        return self.machine.vms(self.slice_topology)

    @property
    def multi_host(self) -> bool:
        return self.vms_per_slice > 1

    @property
    def total_chips(self) -> int:
        return self.chips_per_slice * self.slices

    @property
    def total_vms(self) -> int:
        return self.vms_per_slice * self.slices

    @property
    def node_pool_names(self) -> list[str]:
        return [self.name] if self.slices == 1 else [f"{self.name}-{i}" for i in range(self.slices)]

    @property
    def autoscaled(self) -> bool:
        """DWS modes scale 0 -> one slice -> 0, and so do calendar-mode pools, whose reservation exists only
        during its window; the other modes hold the slice."""
        return self.provisioning in ("flex-start", "queued") or self.future_reservation is not None

    @property
    def reservation_name(self) -> str | None:
        window = self.future_reservation
        if window is not None:
            return window.name or f"{self.name}-{window.start_time.astimezone(UTC):%Y%m%d}"
        return self.reservation

    @property
    def max_run_duration_seconds(self) -> int | None:
        return parse_duration(self.max_run_duration) if self.max_run_duration else None

    @property
    def flex_start(self) -> bool:
        """GKE creates queued-provisioning pools on flex-start capacity (--flex-start with
        --enable-queued-provisioning), so their nodes carry the flex-start label too."""
        return self.provisioning in ("flex-start", "queued")

    @property
    def calendar(self) -> CalendarTpu | None:
        """How Compute takes this pool's calendar-mode request (validated in problems())."""
        return CALENDAR_TPUS.get(self.machine.version.name) if self.future_reservation is not None else None

    @property
    def auto_repair(self) -> bool:
        """DWS slices turn auto-repair off: a repair would recreate the VMs outside the request."""
        return not (self.provisioning == "queued" or (self.provisioning == "flex-start" and self.multi_host))

    @property
    def reservation_affinity(self) -> tuple[str, list[str]] | None:
        """(consumeReservationType, reservation names) as the GKE API wants; None keeps GKE's default."""
        if self.provisioning in ("flex-start", "queued"):
            return ("NO_RESERVATION", [])
        if self.provisioning == "reservation":
            return ("SPECIFIC_RESERVATION", [str(self.reservation_name)])
        return None

    @property
    def node_selector(self) -> dict[str, str]:
        """Labels a workload selects to land on this group's nodes (GKE sets them on every TPU node)."""
        selector = {
            tpu_catalog.ACCELERATOR_LABEL: self.machine.version.accelerator,
            tpu_catalog.TOPOLOGY_LABEL: self.slice_topology,
        }
        if self.flex_start:
            selector[tpu_catalog.FLEX_START_LABEL] = "true"
        if self.provisioning == "spot":
            selector[tpu_catalog.SPOT_LABEL] = "true"
        return selector


# ---- batch scheduling (JobSet, Kueue) --------------------------------------------------------------------

KUEUE_NAMESPACE = "kueue-system"
JOBSET_NAMESPACE = "jobset-system"
_CHART_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
"""An OCI image digest as a reference carries it after `@`."""
_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)%$")
_QUANTITY_MI = {"Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
_MEMORY = re.compile(r"^(\d+)(Mi|Gi|Ti)$")
BUILT_IN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
"""Namespaces every cluster has; the stack uses them but never declares (owns) them."""
_RESERVED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", KUEUE_NAMESPACE, JOBSET_NAMESPACE)
MAX_USER_PRIORITY = 1_000_000_000
"""PriorityClass values above this are reserved for system classes."""


def _k8s_name(name: str) -> str:
    """Queue, team, namespace and service account names: DNS labels of at most 63 characters."""
    if len(name) > 63 or not _DNS_LABEL.match(name):
        raise ValueError(
            f"{name!r} must be a DNS label of at most 63 characters: lowercase letters, digits and '-', "
            "starting with a letter"
        )
    return name


def _optional_k8s_name(name: str | None) -> str | None:
    return None if name is None else _k8s_name(name)


class ChartsConfig(_Model):
    """Pinned Helm chart versions; vendor/ holds these charts and the CRDs of these tags (offline checks).

    The image digests pin each controller image beyond its tag (the charts' images are `v<chart version>`);
    unset, the chart's tag is used and the image stays on the reviewed digest exception list."""

    kueue_version: str = "0.19.2"
    jobset_version: str = "0.12.0"
    kueue_image_digest: str | None = None
    jobset_image_digest: str | None = None

    @field_validator("kueue_version", "jobset_version")
    @classmethod
    def _pinned(cls, version: str) -> str:
        if not _CHART_VERSION.match(version):
            raise ValueError(f"{version!r} is not a chart version like 0.19.2 (OCI chart versions have no 'v')")
        return version

    @field_validator("kueue_image_digest", "jobset_image_digest")
    @classmethod
    def _digest(cls, digest: str | None) -> str | None:
        if digest is not None and not DIGEST.match(digest):
            raise ValueError(f"{digest!r} is not an image digest; write sha256: and its 64 hex digits")
        return digest

    @property
    def kueue_image_tag(self) -> str | None:
        """The chart's image tag with the digest appended (`v0.19.2@sha256:...`), or None: the chart's own tag."""
        return f"v{self.kueue_version}@{self.kueue_image_digest}" if self.kueue_image_digest else None

    @property
    def jobset_image_tag(self) -> str | None:
        return f"v{self.jobset_version}@{self.jobset_image_digest}" if self.jobset_image_digest else None


_CHIPS_OR_PERCENT = "give chips (16) or a percentage of the pool's chips ('50%')"


def _chips_or_percent(value: object) -> int | str:
    """A share or borrowing limit: whole chips, or 'N%' of the pool group's chips (0-100)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{value} is negative; {_CHIPS_OR_PERCENT}")
        return value
    if isinstance(value, float):
        raise ValueError(f"{value:g} is not a whole number of chips; {_CHIPS_OR_PERCENT}")
    if not isinstance(value, str):
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
        raise ValueError(f"{shown} is not a number of chips; {_CHIPS_OR_PERCENT}")
    match = _PERCENT.match(value)
    if not match or float(match.group(1)) > 100:
        raise ValueError(f"{value!r} is not a number of chips or a percentage up to 100%; {_CHIPS_OR_PERCENT}")
    return value


ChipsOrPercent = Annotated[int | str, BeforeValidator(_chips_or_percent)]


def share_chips(value: int | str, total: int) -> int:
    """Chips of a share: an int is chips, 'N%' is that part of the pool's chips, rounded down."""
    if isinstance(value, int):
        return value
    return int(total * float(value.rstrip("%")) / 100)


class TeamConfig(_Model):
    """A team: a namespace with its LocalQueue, and a ClusterQueue of its own in the shared cohort."""

    name: str
    namespace: str | None = None
    """Defaults to the team name; created unless it is `default`."""
    shares: dict[str, ChipsOrPercent] = {}
    """Pool group -> chips (16) or a percentage of its chips ('50%') guaranteed to the team."""
    borrowing_limit: dict[str, ChipsOrPercent] = {}
    """Pool group -> chips the team may borrow beyond its share from the cohort; unlimited when absent."""

    _names = field_validator("name", "namespace")(_optional_k8s_name)

    @property
    def namespace_name(self) -> str:
        return self.namespace or self.name

    @property
    def local_queue(self) -> str:
        return f"{self.name}-queue"

    @property
    def cluster_queue(self) -> str:
        return f"{self.name}-cluster-queue"


class PreemptionConfig(_Model):
    """ClusterQueue preemption, the seed's policy by default."""

    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Any"
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "LowerPriority"


class PriorityClassConfig(_Model):
    """A `scheduling.k8s.io/v1` PriorityClass workloads name in `priorityClassName`; Kueue orders by it."""

    name: str
    value: int
    global_default: bool = False
    description: str | None = None

    _name = field_validator("name")(_k8s_name)


DEFAULT_PRIORITY_CLASSES = tuple(
    PriorityClassConfig(name=name, value=value)
    for name, value in (("very-low", 100), ("low", 250), ("medium", 500), ("high", 750), ("very-high", 1000))
)


class HostResourcesConfig(_Model):
    """CPU and memory of one TPU VM that pods may request; set them to have Kueue account them beside chips."""

    cpu: float = Field(gt=0)
    """Cores per VM, e.g. 100."""
    memory: str
    """Per VM, e.g. 180Gi (Mi, Gi or Ti)."""

    @field_validator("memory")
    @classmethod
    def _memory(cls, memory: str) -> str:
        if not _MEMORY.match(memory):
            raise ValueError(f"{memory!r} is not a memory size like 180Gi (units Mi, Gi, Ti)")
        return memory

    @property
    def millicores(self) -> int:
        return round(self.cpu * 1000)

    @property
    def mebibytes(self) -> int:
        match = _MEMORY.match(self.memory)
        assert match is not None, "validated"
        return int(match.group(1)) * _QUANTITY_MI[match.group(2)]


class AutopilotCapacityConfig(_Model):
    """TPU capacity an Autopilot cluster may provision (it has no node pools to derive quotas from)."""

    name: str | None = None
    """Flavor name; defaults to `<tpuVersion or machineType>-<topology>`."""
    machine_type: str | None = None
    tpu_version: str | None = None
    topology: str | None = None
    slices: int = 1
    provisioning: Literal["flex-start", "queued", "on-demand", "spot"] = "on-demand"

    @property
    def flavor_name(self) -> str:
        base = self.name or str(self.tpu_version or self.machine_type)
        return base if self.name or not self.topology else f"{base}-{self.topology}"

    @cached_property
    def pool(self) -> TpuPoolConfig:
        """The same derivation as a node pool group (chips, VMs, node selector), without a zone."""
        return TpuPoolConfig(
            name=self.flavor_name,
            machine_type=self.machine_type,
            tpu_version=self.tpu_version,
            topology=self.topology,
            slices=self.slices,
            provisioning=self.provisioning,
        )

    def problems(self) -> list[tuple[str, str]]:
        # Autopilot places a slice in a zone itself.
        return [(field, message) for field, message in self.pool.problems() if field != "zone"]


class QueuesConfig(_Model):
    """Kueue queues derived from the TPU pools (`tpu-stack:queues`).

    Without teams: one ClusterQueue over every pool group and one LocalQueue (the multislice seed's
    `cluster-queue` and `default/multislice-queue`). With teams: a ClusterQueue per team in one cohort,
    each with its share of every pool group; chips no team holds stay with the Cohort for borrowing.
    """

    cluster_queue: str = "cluster-queue"
    local_queue: str = "multislice-queue"
    namespace: str = "default"
    cohort: str = "tpu-stack"
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    preemption: PreemptionConfig = PreemptionConfig()
    priority_classes: tuple[PriorityClassConfig, ...] = DEFAULT_PRIORITY_CLASSES
    teams: tuple[TeamConfig, ...] = ()
    host_resources: dict[str, HostResourcesConfig] = {}
    """Pool group -> CPU/memory per VM; when set (for every pool group), queues cover cpu and memory too."""
    autopilot_capacity: tuple[AutopilotCapacityConfig, ...] = ()

    _names = field_validator("cluster_queue", "local_queue", "namespace", "cohort")(_k8s_name)


class QueueRef(_Model):
    """Where a team submits: the LocalQueue in its namespace and the ClusterQueue behind it."""

    namespace: str
    local_queue: str
    cluster_queue: str


def queue_pools(config: StackConfig) -> tuple[TpuPoolConfig, ...]:
    """Capacity Kueue hands out: the TPU pool groups (Autopilot: queues.autopilotCapacity), except the group
    Saxml serves on, whose slices its model servers hold outside Kueue."""
    if config.cluster.mode == "autopilot":
        return tuple(capacity.pool for capacity in config.queues.autopilot_capacity)
    serving = config.saxml.pool if config.saxml else None
    return tuple(pool for pool in config.tpu_pools if pool.name != serving)


def flavor_labels(pool: TpuPoolConfig) -> dict[str, str]:
    """Node labels of the pool's ResourceFlavor and what its workloads select: GKE's TPU labels + the pool's own."""
    return {**pool.labels, **pool.node_selector}


def covered_resources(config: StackConfig) -> list[str]:
    return [tpu_catalog.TPU_RESOURCE, *(["cpu", "memory"] if config.queues.host_resources else [])]


def _cpu(millicores: int) -> str:
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def _memory(mebibytes: int) -> str:
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 else f"{mebibytes}Mi"


def quota(config: StackConfig, pool: TpuPoolConfig, chips: int) -> dict[str, int | str]:
    """Kueue quantities of `chips` chips of `pool`, with the CPU and memory of their VMs when configured."""
    amounts: dict[str, int | str] = {tpu_catalog.TPU_RESOURCE: chips}
    host = config.queues.host_resources.get(pool.name)
    if host is not None:
        per_vm = pool.machine.chips_per_vm
        amounts["cpu"] = _cpu(host.millicores * chips // per_vm)
        amounts["memory"] = _memory(host.mebibytes * chips // per_vm)
    return amounts


def team_chips(config: StackConfig) -> dict[str, dict[str, int]]:
    """Team -> pool group -> guaranteed chips (0 where the team has no share)."""
    pools = queue_pools(config)
    return {
        team.name: {pool.name: share_chips(team.shares.get(pool.name, 0), pool.total_chips) for pool in pools}
        for team in config.queues.teams
    }


def team_borrowing(config: StackConfig) -> dict[str, dict[str, int | None]]:
    """Team -> pool group -> chips it may borrow (None: no limit)."""
    pools = queue_pools(config)
    return {
        team.name: {
            pool.name: (
                share_chips(team.borrowing_limit[pool.name], pool.total_chips)
                if pool.name in team.borrowing_limit
                else None
            )
            for pool in pools
        }
        for team in config.queues.teams
    }


def cohort_chips(config: StackConfig) -> dict[str, int]:
    """Pool group -> chips no team holds: the Cohort's own quota, which every team may borrow."""
    shares = team_chips(config)
    return {
        pool.name: pool.total_chips - sum(team[pool.name] for team in shares.values()) for pool in queue_pools(config)
    }


def queue_refs(config: StackConfig) -> dict[str, QueueRef]:
    """Team -> its queues; without teams one entry, `default`, for the single queue."""
    queues = config.queues
    if not queues.teams:
        return {
            "default": QueueRef(
                namespace=queues.namespace, local_queue=queues.local_queue, cluster_queue=queues.cluster_queue
            )
        }
    return {
        team.name: QueueRef(
            namespace=team.namespace_name, local_queue=team.local_queue, cluster_queue=team.cluster_queue
        )
        for team in queues.teams
    }


def queue_namespaces(config: StackConfig) -> list[str]:
    """Namespaces the batch-scheduling component creates (`default` always exists)."""
    return sorted({ref.namespace for ref in queue_refs(config).values()} - {"default"})


def controller_resources(config: StackConfig) -> dict[str, dict[str, str]]:
    """Requests and limits of the Kueue and JobSet controllers, by the most nodes the cluster can have:
    their caches hold every node, pod and workload."""
    nodes = (0 if config.cluster.mode == "autopilot" else config.cluster.system_pool.max_nodes) + sum(
        pool.total_vms for pool in queue_pools(config)
    )
    cpu, mebibytes = (500, 512) if nodes <= 64 else (1000, 1024) if nodes <= 512 else (2000, 2048)
    return {
        "requests": {"cpu": _cpu(cpu), "memory": _memory(mebibytes)},
        "limits": {"cpu": _cpu(2 * cpu), "memory": _memory(2 * mebibytes)},
    }


def _queue_problems(config: StackConfig) -> list[str]:
    key = f"{PROJECT}:queues"
    queues = config.queues
    problems: list[str] = []
    autopilot = config.cluster.mode == "autopilot"
    if queues.autopilot_capacity and not autopilot:
        problems.append(
            f"{key}.autopilotCapacity: applies only with cluster.mode: autopilot; on Standard the queues take "
            "their capacity from tpuPools"
        )
    flavors: dict[str, int] = {}
    for index, capacity in enumerate(queues.autopilot_capacity if autopilot else ()):
        where = f"{key}.autopilotCapacity[{index}]"
        own = capacity.problems()
        problems += [f"{where}.{field}: {message}" for field, message in own]
        if not own and capacity.flavor_name in flavors:
            problems.append(
                f"{where}.name: flavor {capacity.flavor_name!r} is already autopilotCapacity"
                f"[{flavors[capacity.flavor_name]}]; give one a name"
            )
        flavors.setdefault(capacity.flavor_name, index)
    pools = queue_pools(config)
    names = [pool.name for pool in pools]
    if problems or any(pool.problems() for pool in pools) or len(set(names)) < len(names):
        return problems  # pool problems are reported on their own keys; derived values need valid, distinct pools
    if not queues.teams and queues.namespace in _RESERVED_NAMESPACES:
        problems.append(f"{key}.namespace: {queues.namespace!r} belongs to the system; use default or your own")
    problems += _flavor_problems(config, pools)
    problems += _priority_problems(queues)
    problems += _team_problems(config, pools)
    return problems


def _flavor_problems(config: StackConfig, pools: tuple[TpuPoolConfig, ...]) -> list[str]:
    key = f"{PROJECT}:queues"
    problems: list[str] = []
    seen: dict[str, str] = {}
    for pool in pools:
        labels = str(sorted(flavor_labels(pool).items()))
        if labels in seen:
            problems.append(
                f"{PROJECT}:tpuPools: pools {seen[labels]!r} and {pool.name!r} carry the same node labels, so Kueue "
                f"could place a workload of one on the other; give one distinct labels (labels: {{pool: {pool.name}}})"
            )
        seen.setdefault(labels, pool.name)
    names = {pool.name for pool in pools}
    hosts = config.queues.host_resources
    for name in hosts:
        if name not in names:
            problems.append(f"{key}.hostResources.{name}: {_not_a_queue_pool(config, name)}")
    missing = sorted(names - set(hosts))
    if hosts and missing:
        problems.append(
            f"{key}.hostResources: missing {', '.join(missing)}; a queue covers cpu and memory for every pool "
            "group or for none"
        )
    if not pools and config.queues.teams:
        problems.append(f"{key}.teams: there is no TPU capacity to share; add tpuPools (Autopilot: autopilotCapacity)")
    return problems


def _priority_problems(queues: QueuesConfig) -> list[str]:
    key = f"{PROJECT}:queues.priorityClasses"
    problems: list[str] = []
    seen: set[str] = set()
    defaults = [pc.name for pc in queues.priority_classes if pc.global_default]
    for index, priority in enumerate(queues.priority_classes):
        if priority.name in seen:
            problems.append(f"{key}[{index}].name: {priority.name!r} is listed twice")
        seen.add(priority.name)
        if priority.name.startswith("system-"):
            problems.append(f"{key}[{index}].name: names starting with 'system-' are reserved by Kubernetes")
        if not -MAX_USER_PRIORITY <= priority.value <= MAX_USER_PRIORITY:
            problems.append(
                f"{key}[{index}].value: {priority.value} is outside -{MAX_USER_PRIORITY}..{MAX_USER_PRIORITY}; "
                "higher values are reserved for system classes"
            )
    if len(defaults) > 1:
        problems.append(f"{key}: {', '.join(defaults)} are all globalDefault; at most one may be")
    return problems


def _not_a_queue_pool(config: StackConfig, name: str) -> str:
    if config.saxml is not None and name == config.saxml.pool:
        return f"pool {name!r} serves Saxml, whose model servers hold all its slices; it is not Kueue capacity"
    names = ", ".join(pool.name for pool in queue_pools(config)) or "none"
    return f"{name!r} names no TPU pool the queues share; pools: {names}"


def _team_problems(config: StackConfig, pools: tuple[TpuPoolConfig, ...]) -> list[str]:
    key = f"{PROJECT}:queues.teams"
    names = {pool.name for pool in pools}
    reserved = set(_RESERVED_NAMESPACES) | ({config.saxml.namespace} if config.saxml else set())
    problems: list[str] = []
    teams: dict[str, int] = {}
    namespaces: dict[str, int] = {}
    held: dict[str, list[tuple[str, int]]] = {pool.name: [] for pool in pools}
    totals = {pool.name: pool.total_chips for pool in pools}
    for index, team in enumerate(config.queues.teams):
        where = f"{key}[{index}]"
        if team.name in teams:
            problems.append(f"{where}.name: {team.name!r} is already teams[{teams[team.name]}]")
        teams.setdefault(team.name, index)
        namespace = team.namespace_name
        if namespace in reserved:
            problems.append(f"{where}.namespace: {namespace!r} belongs to the system or another component")
        elif namespace in namespaces:
            problems.append(f"{where}.namespace: {namespace!r} is already used by teams[{namespaces[namespace]}]")
        namespaces.setdefault(namespace, index)
        for field in ("shares", "borrowingLimit"):
            values = team.shares if field == "shares" else team.borrowing_limit
            problems += [
                f"{where}.{field}.{name}: {_not_a_queue_pool(config, name)}" for name in values if name not in names
            ]
        for pool, value in team.shares.items():
            if pool not in names:
                continue
            chips = share_chips(value, totals[pool])
            taken = sum(c for _, c in held[pool])
            if taken + chips > totals[pool]:
                asked = f"{value} = {chips} chips" if isinstance(value, str) else f"{chips} chips"
                holders = ", ".join(f"{name} holds {c}" for name, c in held[pool] if c)
                problems.append(
                    f"{where}.shares.{pool}: {asked} requested but only {totals[pool] - taken} remain of "
                    f"{totals[pool]} in pool {pool!r}{f' ({holders})' if holders else ''}; lower the shares or "
                    "add slices"
                )
            held[pool].append((team.name, chips))
    return problems


# ---- serving and identity ----------------------------------------------------------------------------


IdentityForm = Literal["principal", "iamServiceAccount"]
SAXML_IMAGES = "us-docker.pkg.dev/cloud-tpu-images/inference"
BUCKET_NAME_MAX = 63
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*[a-z0-9]$")
_IAM_ACCOUNT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
_SAX_CELL = re.compile(r"^/sax/[A-Za-z0-9_-]+$")


def bucket_name_problem(name: str) -> str | None:
    """Cloud Storage naming rules; dotted names are refused as they need domain verification."""
    if not 3 <= len(name) <= BUCKET_NAME_MAX:
        return f"{name!r} is {len(name)} characters; Cloud Storage allows 3 to {BUCKET_NAME_MAX}"
    if not _BUCKET_NAME.match(name):
        return (
            f"{name!r} is not a bucket name: lowercase letters, digits, '-' and '_', starting and ending with "
            "a letter or digit (dotted names need domain verification)"
        )
    if name.startswith("goog") or "google" in name:
        return f"{name!r} cannot start with 'goog' or contain 'google'"
    return None


class WorkloadRef(_Model):
    """A Kubernetes service account whose pods reach Google Cloud through Workload Identity.

    `principal` grants roles to the KSA's own principal (no Google service account, no key, no annotation);
    `iamServiceAccount` is the older form: a Google service account the KSA impersonates.
    """

    namespace: str
    service_account: str
    identity: IdentityForm = "principal"
    iam_service_account: str | None = None
    """Account id of the Google service account (iamServiceAccount form); defaults to `<namespace>-<ksa>`."""
    data_path: str = "datasets"
    """Folder of the bucket this KSA's pods mount read-only at /data."""
    checkpoint_path: str | None = None
    """Folder writers' pods mount read-write at /checkpoints; defaults to `checkpoints/<namespace>`."""

    _names = field_validator("namespace", "service_account")(_k8s_name)
    _paths = field_validator("data_path", "checkpoint_path")(lambda path: _optional_folder(path))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.service_account}"

    @property
    def iam_account_id(self) -> str:
        return self.iam_service_account or f"{self.namespace}-{self.service_account}"[:30].rstrip("-")

    def problems(self) -> list[tuple[str, str]]:
        """(config field, message): the Google service account id must be valid where one is created."""
        if self.identity == "principal":
            if self.iam_service_account is not None:
                return [("iamServiceAccount", "applies only with identity: iamServiceAccount")]
            return []
        if not _IAM_ACCOUNT_ID.match(self.iam_account_id):
            field = "iamServiceAccount" if self.iam_service_account else "identity"
            return [
                (
                    field,
                    f"Google service account id {self.iam_account_id!r} must be 6-30 lowercase letters, digits and "
                    "'-', starting with a letter; set iamServiceAccount",
                )
            ]
        return []


READER_ROLE = "roles/storage.objectViewer"
WRITER_ROLE = "roles/storage.objectUser"
_FOLDER = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")


def _optional_folder(path: str | None) -> str | None:
    """A folder of the bucket, as Cloud Storage FUSE's only-dir takes it: relative, no '..', no empty part."""
    if path is not None and (not _FOLDER.match(path) or ".." in path.split("/")):
        raise ValueError(
            f"{path!r} is not a folder of the bucket; use a relative path like datasets or checkpoints/team"
        )
    return path


DATA_MOUNT_PATH = "/data"
CHECKPOINT_MOUNT_PATH = "/checkpoints"
MODEL_MOUNT_PATH = "/models"


@dataclass(frozen=True)
class BucketMount:
    """One Cloud Storage FUSE volume: `folder` of the stack's bucket at `mount_path` in every container."""

    volume: str
    folder: str
    mount_path: str
    read_only: bool


class BucketConfig(_Model):
    """The stack's Cloud Storage bucket (`tpu-stack:bucket`) and who may use it.

    Readers get `roles/storage.objectViewer`, writers `roles/storage.objectUser`, on this bucket only.
    The namespaces of readers and writers must exist (`default`, a team namespace, or Saxml's own).
    """

    name: str | None = None
    """Defaults to `<gcp:project>-<stack>-tpu-stack`."""
    location: str | None = None
    """Defaults to gcp:region."""

    noncurrent_version_days: int = Field(default=30, ge=1)
    """Versioning keeps overwritten objects; they are deleted this many days after they stop being current."""
    project_number: int | None = Field(default=None, gt=0)
    """Number of gcp:project for `principal://` members; looked up (resourcemanager.projects.get) when unset."""
    readers: tuple[WorkloadRef, ...] = ()
    writers: tuple[WorkloadRef, ...] = ()

    @field_validator("location")
    @classmethod
    def _location(cls, location: str | None) -> str | None:
        region = None if location is None else zone_region(location)
        if region is not None:
            raise ValueError(
                f"{location!r} is a zone; a bucket lives in a region ({region}), a dual-region or a multi-region "
                "such as US"
            )
        return location

    @property
    def grants(self) -> list[tuple[str, int, WorkloadRef, str]]:
        """(list name, index, workload, role) for every reader and writer."""
        return [("readers", i, w, READER_ROLE) for i, w in enumerate(self.readers)] + [
            ("writers", i, w, WRITER_ROLE) for i, w in enumerate(self.writers)
        ]


def _pinned_image(image: str) -> str:
    name, _, digest = image.partition("@")
    if digest and not DIGEST.match(digest):
        raise ValueError(f"{image!r}: {digest!r} is not a digest; write @sha256: and its 64 hex digits")
    tag = name.rsplit("/", 1)[-1].partition(":")[2]
    if not digest and (not tag or tag == "latest"):
        raise ValueError(f"{image!r} is not pinned; use an explicit version tag or an @sha256 digest, never latest")
    return image


class SaxmlImagesConfig(_Model):
    """Saxml images of the GKE sample, pinned."""

    admin_server: str = f"{SAXML_IMAGES}/sax-admin-server:v1.1.0"
    model_server: str = f"{SAXML_IMAGES}/sax-model-server:v1.1.0"
    http_server: str = f"{SAXML_IMAGES}/sax-http:v1.0.0"

    _pinned = field_validator("admin_server", "model_server", "http_server")(_pinned_image)


WIDEST_PREFIX = {4: 8, 6: 16}
"""Widest client range a load balancer may admit (IPv4 /8, IPv6 /16); the policy pack uses the same bound."""


def _source_range(cidr: str) -> str:
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        raise ValueError(f"{cidr!r} is not a CIDR range like 203.0.113.0/24") from None
    if network.prefixlen == 0:
        raise ValueError(f"{cidr!r} admits every address; list the client CIDRs instead")
    if network.prefixlen < WIDEST_PREFIX[network.version]:
        raise ValueError(
            f"{cidr!r} covers a large part of the internet; list client CIDRs of /{WIDEST_PREFIX[network.version]} "
            "or narrower"
        )
    return cidr


class SaxmlServiceConfig(_Model):
    """The `sax-http-lb` Service: an internal load balancer unless `external`; sourceRanges always required."""

    external: bool = False
    source_ranges: tuple[Annotated[str, AfterValidator(_source_range)], ...] = ()


class SaxmlModelConfig(_Model):
    """The model the pool must hold: about 2 GB of HBM per billion parameters."""

    name: str
    billions_of_parameters: float = Field(gt=0)

    @property
    def memory_gb(self) -> float:
        return 2 * self.billions_of_parameters

    def chips(self, version: tpu_catalog.TpuVersion) -> int:
        return math.ceil(self.memory_gb / version.hbm_gb_per_chip)


class SaxmlConfig(_Model):
    """Saxml serving on a TPU pool group (`tpu-stack:saxml`): one model server per slice of `pool`."""

    pool: str
    model: SaxmlModelConfig | None = None
    namespace: str = "saxml"
    """Created unless it is a namespace Kubernetes has built in (`default`, as in the Saxml tutorial)."""
    service_account: str = "sax-sa"
    identity: IdentityForm = "principal"
    iam_service_account: str | None = None
    cell: str = "/sax/test"
    model_path: str = "models"
    """Folder of the bucket the model servers mount read-only at /models (publish checkpoints from there)."""
    max_restarts: int = Field(default=4, ge=0)
    """JobSet failurePolicy.maxRestarts: how often all model servers restart together after a failure."""
    images: SaxmlImagesConfig = SaxmlImagesConfig()
    service: SaxmlServiceConfig = SaxmlServiceConfig()

    _model_path = field_validator("model_path")(lambda path: _optional_folder(path))

    @field_validator("cell")
    @classmethod
    def _cell(cls, cell: str) -> str:
        if not _SAX_CELL.match(cell):
            raise ValueError(f"{cell!r} is not a Saxml cell; use /sax/<name>, e.g. /sax/test")
        return cell

    @property
    def declares_namespace(self) -> bool:
        """Never declare a built-in namespace: the stack would own it and delete it on destroy."""
        return self.namespace not in BUILT_IN_NAMESPACES

    @property
    def workload(self) -> WorkloadRef:
        return WorkloadRef(
            namespace=self.namespace,
            service_account=self.service_account,
            identity=self.identity,
            iam_service_account=self.iam_service_account,
        )


def _bucket_grant(config: StackConfig, namespace: str) -> tuple[WorkloadRef, str] | None:
    """(KSA, role) of the bucket KSA of `namespace`, writers first."""
    grants = sorted(config.bucket.grants, key=lambda grant: grant[3] != WRITER_ROLE)
    return next(((w, role) for _f, _i, w, role in grants if w.namespace == namespace), None)


def bucket_service_account(config: StackConfig, namespace: str) -> str | None:
    """The KSA in `namespace` that holds a role on the bucket (writers first), so jobs there can use it."""
    grant = _bucket_grant(config, namespace)
    return grant[0].service_account if grant else None


def bucket_mounts(config: StackConfig, namespace: str) -> list[BucketMount]:
    """What pods running as the bucket KSA of `namespace` mount: its data folder read-only and, for a writer,
    its checkpoint folder read-write. The volumes act with the pod's own KSA, so they match its bucket role."""
    grant = _bucket_grant(config, namespace)
    if grant is None:
        return []
    workload, role = grant
    mounts = [BucketMount("datasets", workload.data_path, DATA_MOUNT_PATH, read_only=True)]
    if role == WRITER_ROLE:
        folder = workload.checkpoint_path or f"checkpoints/{namespace}"
        mounts.append(BucketMount("checkpoints", folder, CHECKPOINT_MOUNT_PATH, read_only=False))
    return mounts


def saxml_mounts(saxml: SaxmlConfig) -> list[BucketMount]:
    """The model servers read checkpoints from `saxml.modelPath` of the bucket, mounted read-only at /models."""
    return [BucketMount("models", saxml.model_path, MODEL_MOUNT_PATH, read_only=True)]


def bucket_name(config: StackConfig) -> str:
    """`bucket.name`, else `<project>-<stack>-tpu-stack` (stack names may hold upper case, '.' and '_')."""
    stack = re.sub(r"[^a-z0-9-]", "-", config.stack.lower())
    return config.bucket.name or f"{config.project}-{stack}-{PROJECT}"


def saxml_pool(config: StackConfig) -> TpuPoolConfig:
    """The pool Saxml serves on; only call with saxml set (stack_problems checked it exists)."""
    assert config.saxml is not None
    pool = config.pool(config.saxml.pool)
    assert pool is not None, "checked in stack_problems"
    return pool


def _serving_problems(config: StackConfig) -> list[str]:
    problems: list[str] = []
    key = f"{PROJECT}:bucket"
    if config.throwaway and config.protected:
        problems.append(
            f"{PROJECT}:throwaway: the {config.stack} stack is protected and keeps its data (its bucket is protected); "
            "remove it"
        )
    name = bucket_name(config)
    problem = bucket_name_problem(name)
    if problem and config.bucket.name is None:
        problem = f"the derived name {problem}: set bucket.name"
    if problem:
        problems.append(f"{key}.name: {problem}")
    seen: dict[str, str] = {}
    if config.saxml is not None:
        seen[config.saxml.workload.key] = "Saxml's service account (saxml.serviceAccount)"
    namespaces = ["default", *queue_namespaces(config)]
    for field, index, workload, _role in config.bucket.grants:
        where = f"{key}.{field}[{index}]"
        problems += [f"{where}.{f}: {message}" for f, message in workload.problems()]
        if field == "readers" and workload.checkpoint_path is not None:
            problems.append(
                f"{where}.checkpointPath: a reader holds {READER_ROLE} and cannot write checkpoints; move this entry "
                "to bucket.writers or remove checkpointPath"
            )
        if workload.key in seen:
            problems.append(f"{where}: {workload.key} is already {seen[workload.key]}; list it once")
        elif workload.namespace not in namespaces:
            problems.append(
                f"{where}.namespace: {workload.namespace!r} is not a namespace the stack has; use one of "
                f"{', '.join(namespaces)} (team namespaces come from tpu-stack:queues.teams)"
            )
        seen.setdefault(workload.key, f"listed in bucket.{field}[{index}]")
    if config.saxml is not None:
        problems += _saxml_problems(config, config.saxml)
    return problems


def _saxml_problems(config: StackConfig, saxml: SaxmlConfig) -> list[str]:
    key = f"{PROJECT}:saxml"
    problems = [f"{key}.{field}: {message}" for field, message in saxml.workload.problems()]
    if not saxml.service.source_ranges:
        problems.append(
            f"{key}.service.sourceRanges: required, also for the internal load balancer (the client CIDRs allowed "
            "to call the Saxml HTTP API on port 8888); list them"
        )
    if saxml.namespace in _RESERVED_NAMESPACES:
        problems.append(
            f"{key}.namespace: {saxml.namespace!r} belongs to the system; use default or a namespace of your own"
        )
    pool = config.pool(saxml.pool)
    if pool is None:
        names = ", ".join(p.name for p in config.tpu_pools) or "none"
        return [*problems, f"{key}.pool: {saxml.pool!r} names no TPU pool; tpuPools: {names}"]
    if pool.problems():
        return problems
    if pool.machine.version.platform_chip is None:
        known = ", ".join(v.name for v in tpu_catalog.VERSIONS.values() if v.platform_chip)
        problems.append(
            f"{key}.pool: pool {pool.name!r} is TPU {pool.machine.version.name}, a chip Saxml's model server does "
            f"not know (--platform_chip); serve on {known}"
        )
    if pool.provisioning == "queued":
        problems.append(
            f"{key}.pool: pool {pool.name!r} is queued-provisioning, whose nodes exist only for Kueue-admitted "
            "jobs; serve on an on-demand, reservation, spot or flex-start pool"
        )
    model = saxml.model
    if model is not None:
        version = pool.machine.version
        chips = model.chips(version)
        if chips > pool.chips_per_slice:
            problems.append(
                f"{key}.model.billionsOfParameters: a {model.billions_of_parameters:g}B model needs "
                f"~{model.memory_gb:g} GB = {chips} {version.name} chips; pool {pool.name!r} slices have "
                f"{pool.chips_per_slice} chips ({pool.slice_topology}); {_fitting_slice(pool, model)}"
            )
    return problems


def _fitting_slice(pool: TpuPoolConfig, model: SaxmlModelConfig) -> str:
    version = pool.machine.version
    topology = pool.machine.smallest_topology_with(model.chips(version))
    if topology is not None:
        return f"use topology {topology} or larger"
    fitting = tpu_catalog.smallest_topology_for_model(model.billions_of_parameters, version.name)
    if fitting is not None:
        return f"use machineType {fitting[0]} with topology {fitting[1]} or larger"
    return f"no {version.name} slice is that large; use a TPU version with more HBM per chip"


_NOTIFICATION_CHANNEL = re.compile(r"^projects/[^/]+/notificationChannels/[^/]+$")


def _channel(name: str) -> str:
    if not _NOTIFICATION_CHANNEL.match(name):
        raise ValueError(
            f"{name!r} is not a notification channel; give its resource name, "
            "projects/<project>/notificationChannels/<id> (gcloud beta monitoring channels list)"
        )
    return name


class MonitoringConfig(_Model):
    """The stack's dashboard and alert policies (`tpu-stack:monitoring`)."""

    notification_channels: tuple[Annotated[str, AfterValidator(_channel)], ...] = ()
    """Channels every alert policy notifies; none by default (incidents show in Cloud Monitoring only)."""
    pending_minutes: int = Field(default=30, ge=1)
    """A ClusterQueue with workloads pending this long alerts."""
    idle_minutes: int = Field(default=30, ge=1)
    """TPU TensorCores idle this long while workloads wait alerts."""
    provisioning_minutes: int = Field(default=120, ge=1)
    """A workload waiting this long for its queued-provisioning request alerts."""


class StackConfig(_Model):
    """The whole stack's configuration (config keys `gcp:*` and `tpu-stack:*`)."""

    project: str
    region: str
    stack: str = "dev"
    throwaway: bool = False
    """A stack that may be destroyed with its data (bucket force_destroy); never a protected stack."""
    labels: dict[str, str] = {}
    """Extra labels on every GCP resource that takes labels (cost attribution: team, cost-center, ...)."""
    cluster: ClusterConfig = ClusterConfig()
    tpu_pools: tuple[TpuPoolConfig, ...] = ()
    charts: ChartsConfig = ChartsConfig()
    queues: QueuesConfig = QueuesConfig()
    bucket: BucketConfig = BucketConfig()
    saxml: SaxmlConfig | None = None
    monitoring: MonitoringConfig = MonitoringConfig()

    @field_validator("project")
    @classmethod
    def _project(cls, project: str) -> str:
        problem = project_id_problem(project)
        if problem:
            raise ValueError(problem)
        return project

    @field_validator("region")
    @classmethod
    def _region(cls, region: str) -> str:
        zone_of = zone_region(region)
        if zone_of is not None:
            raise ValueError(f"{region!r} is a zone; gcp:region takes its region: {zone_of}")
        if not _REGION.match(region):
            raise ValueError(f"{region!r} is not a region like us-east5")
        return region

    @property
    def resource_labels(self) -> dict[str, str]:
        return {"managed-by": "pulumi", "app": PROJECT, "env": gcp_label_value(self.stack), **self.labels}

    @property
    def cluster_location(self) -> str:
        return self.cluster.location or self.region

    @property
    def workload_pool(self) -> str:
        return f"{self.project}.svc.id.goog"

    @property
    def protected(self) -> bool:
        """Cluster and bucket carry `protect`; the same list is the protection policy's default."""
        return self.stack in PROTECTED_STACKS

    def pool(self, name: str) -> TpuPoolConfig | None:
        return next((p for p in self.tpu_pools if p.name == name), None)

    @property
    def cluster_zones(self) -> int:
        """Zones a node pool without node locations spans: a zonal cluster's one, else the three GKE uses by
        default for a regional cluster."""
        return 1 if _is_zone(self.cluster_location) else REGIONAL_CLUSTER_ZONES

    @property
    def system_pool_initial_nodes_per_zone(self) -> int:
        """GKE's initialNodeCount is per zone: the fewest per zone that reach systemPool.minNodes in total."""
        return math.ceil(self.cluster.system_pool.min_nodes / self.cluster_zones)

    @property
    def initial_master_version(self) -> str | None:
        """minMasterVersion is sent (as the initial version) only without a release channel: a channel moves
        the version itself, and a pinned minor it no longer offers makes creation fail."""
        return None if self.on_release_channel else self.cluster.min_master_version

    @property
    def system_node_selector(self) -> dict[str, str]:
        """Keeps CPU pods off TPU nodes: the system pool (Standard); Autopilot chooses nodes itself."""
        if self.cluster.mode == "autopilot":
            return {}
        return dict(SYSTEM_NODE_SELECTOR)

    @property
    def private_nodes(self) -> bool:
        return self.protected if self.cluster.private_nodes is None else self.cluster.private_nodes

    @property
    def ip_endpoint(self) -> bool:
        """Control plane reachable by IP (from authorized networks only); off: only the DNS endpoint."""
        plane = self.cluster.control_plane
        return (not self.protected) if plane.ip_endpoint is None else plane.ip_endpoint

    @property
    def on_release_channel(self) -> bool:
        return self.cluster.release_channel != "UNSPECIFIED"

    def auto_upgrade(self, pool: TpuPoolConfig) -> bool:
        """Node auto-upgrade of a TPU pool: always on a release channel (GKE refuses off), else off by default."""
        if pool.auto_upgrade is not None:
            return pool.auto_upgrade
        return self.on_release_channel


# ---- loading ----------------------------------------------------------------------------------------------

_GCP_KEYS = {"gcp:project": "project", "gcp:region": "region"}
NAMESPACES = (PROJECT, "gcp", "kubernetes", "pulumi")
"""Config namespaces a stack of this project may hold: its own, its providers' and Pulumi's."""
# Every StackConfig field but the ones filled from gcp:* keys and the stack name is a `tpu-stack:` key.
_STACK_KEYS = {
    to_camel(field): field for field in StackConfig.model_fields if field not in ("project", "region", "stack")
}


def _key_path(top: str, loc: tuple[int | str, ...]) -> str:
    path = top
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _message(error: Mapping[str, Any]) -> str:
    text = str(error["msg"])
    return text.removeprefix("Value error, ")


def load(raw: Mapping[str, Any], *, stack: str, now: datetime | None = None) -> StackConfig:
    """Build the model from flat Pulumi config (`{"tpu-stack:tpuPools": [...], "gcp:project": ...}`).

    Values may be JSON strings (how the engine passes structured config) or already-parsed objects.
    """
    import json

    problems: list[str] = []
    data: dict[str, Any] = {"stack": stack}
    for key, value in raw.items():
        namespace, _, name = key.partition(":")
        if isinstance(value, str) and value.startswith(("[", "{")):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as error:
                problems.append(
                    f"{key}: {value!r} starts like JSON but is not ({error.msg} at column {error.colno}); "
                    "give a YAML mapping or list"
                )
                continue
        if key in _GCP_KEYS:
            data[_GCP_KEYS[key]] = value
        elif namespace == PROJECT and name in _STACK_KEYS:
            data[_STACK_KEYS[name]] = value
        elif namespace == PROJECT:
            known = ", ".join(sorted(_STACK_KEYS))
            problems.append(f"{key}: unknown config key; known {PROJECT} keys: {known}")
        elif namespace not in NAMESPACES:
            problems.append(_namespace_problem(key, namespace, name))
    for key in _GCP_KEYS:
        if key not in raw:
            problems.append(f"{key}: required; set it with `pulumi config set {key} <value>`")
    if problems:
        raise ConfigError(problems)
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError([_pydantic_line(e) for e in error.errors()]) from None
    problems = stack_problems(config, now or datetime.now(UTC))
    if problems:
        raise ConfigError(problems)
    return config


def _namespace_problem(key: str, namespace: str, name: str) -> str:
    close = difflib.get_close_matches(namespace, NAMESPACES, n=1, cutoff=0.6)
    fix = f"did you mean {close[0]}:{name}? " if close else ""
    return (
        f"{key}: {namespace!r} is not a config namespace this stack reads, so everything under it would be ignored; "
        f"{fix}namespaces: {', '.join(NAMESPACES)}"
    )


def _pydantic_line(error: Mapping[str, Any]) -> str:
    loc = tuple(error["loc"])
    top, rest = loc[0], loc[1:]
    names = {"project": "gcp:project", "region": "gcp:region"}
    key = names.get(str(top), f"{PROJECT}:{to_camel(str(top))}")
    # Drop pydantic's union/type tags so the path reads like the YAML.
    rest = tuple(p for p in rest if not (isinstance(p, str) and ("[" in p or p in ("function-after",))))
    return f"{_key_path(key, rest)}: {_user_message(error, to_camel(str(loc[-1])))}"


LIST_OF = {
    "tpuPools": "pool groups",
    "teams": "teams",
    "priorityClasses": "priority classes",
    "taints": "taints",
    "exclusions": "maintenance exclusions",
    "readers": "Kubernetes service accounts",
    "writers": "Kubernetes service accounts",
    "autopilotCapacity": "TPU capacities",
    "nodeServiceAccountRoles": "IAM roles",
    "sourceRanges": "CIDR ranges",
    "authorizedNetworks": "CIDR ranges",
}
"""What each list of the config holds, in the README's words."""


def _what(value: Any) -> str:
    """How YAML shows `value` to the user."""
    if isinstance(value, bool):
        return f"{str(value).lower()} (true/false)"
    if isinstance(value, (int, float)):
        return f"the number {value:g}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, Mapping):
        return "a mapping (key: value lines)"
    if isinstance(value, (list, tuple)):
        return "a list ('-' items)"
    return "nothing" if value is None else type(value).__name__


def _user_message(error: Mapping[str, Any], field: str) -> str:
    """Pydantic's message in the user's words: what was given and what the key takes, no Python type names."""
    kind, value, ctx = str(error["type"]), error.get("input"), error.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown key; check the spelling against the README's config reference"
    if kind == "missing":
        return "required; add it"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"{_what(value)} is not a whole number; write one like 4"
    if kind in ("float_parsing", "float_type"):
        return f"{_what(value)} is not a number; write one like 1.5"
    if kind in ("bool_parsing", "bool_type"):
        return f"{_what(value)} is not true or false"
    if kind == "string_type":
        quoted = f'"{str(value).lower()}"' if isinstance(value, bool) else f'"{value}"'
        fix = f"quote it: {quoted}" if isinstance(value, (int, float)) else "write text"
        return f"{_what(value)} is not text; {fix}"
    if kind == "literal_error":
        return f"{_what(value)} is not accepted; use {ctx.get('expected')}"
    if kind in ("list_type", "tuple_type"):
        return f"expected a list of {LIST_OF.get(field, 'values')} ('-' items), got {_what(value)}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected a mapping (key: value lines), got {_what(value)}"
    if kind.startswith(("datetime", "date_")):
        return f"{_what(value)} is not a date and time like 2026-12-01T00:00:00Z"
    if kind in ("greater_than_equal", "greater_than"):
        bound = f"{ctx['ge']:g} or more" if kind == "greater_than_equal" else f"more than {ctx['gt']:g}"
        return f"{_what(value)} is too small; use {bound}"
    return _message(error)


def stack_problems(config: StackConfig, now: datetime) -> list[str]:
    """Checks that need more than one pool, or the region."""
    problems = []
    seen: dict[str, int] = {}
    for index, pool in enumerate(config.tpu_pools):
        key = f"{PROJECT}:tpuPools[{index}]"
        own = pool.problems()
        problems += [f"{key}.{field}: {message}" for field, message in own]
        if own:
            continue
        for node_pool in pool.node_pool_names:
            problem = _dns_label_problem(node_pool, "node pool name")
            if problem:
                problems.append(f"{key}.name: {problem}")
                break
        if pool.name in seen:
            problems.append(f"{key}.name: {pool.name!r} is already used by tpuPools[{seen[pool.name]}]")
        seen.setdefault(pool.name, index)
        if pool.zone is not None and _REGION.match(pool.zone):
            problems.append(f"{key}.zone: {pool.zone!r} is a region; give one of its zones, e.g. {pool.zone}-a")
        elif pool.zone is not None and not pool.zone.startswith(config.region + "-"):
            problems.append(f"{key}.zone: {pool.zone!r} is not in gcp:region {config.region!r}")
        if pool.future_reservation is not None:
            problem = pool.future_reservation.lead_time_problem(now)
            if problem:
                problems.append(f"{key}.futureReservation: {problem}")
        if pool.auto_upgrade is False and config.on_release_channel:
            problems.append(
                f"{key}.autoUpgrade: GKE keeps node auto-upgrade on in clusters on a release channel (cluster."
                f"releaseChannel {config.cluster.release_channel}); remove autoUpgrade and hold upgrades during "
                "training with cluster.maintenance.exclusions, or set cluster.releaseChannel: UNSPECIFIED"
            )
    problems += _label_problems(config)
    problems += _node_role_problems(config.cluster)
    problems += _system_pool_problems(config)
    maintenance = config.cluster.maintenance.problems()
    problems += [f"{PROJECT}:cluster.maintenance.{field}: {message}" for field, message in maintenance]
    if config.cluster.mode == "autopilot" and config.tpu_pools:
        problems.append(
            f"{PROJECT}:tpuPools: Autopilot provisions TPU nodes itself; remove tpuPools or set cluster.mode: standard"
        )
    # --- queue checks (batch scheduling) ---
    problems += _queue_problems(config)
    # --- serving checks (bucket, identity, Saxml) ---
    problems += _serving_problems(config)
    location = config.cluster_location
    if _is_zone(location) and not location.startswith(config.region + "-"):
        problems.append(f"{PROJECT}:cluster.location: {location!r} is not in gcp:region {config.region!r}")
    return problems


def _label_problems(config: StackConfig) -> list[str]:
    """tpu-stack:labels go on every Google Cloud resource that takes labels, node pools with one more (tpu-pool)."""
    problems = []
    for key, value in config.labels.items():
        problem = gcp_label_problem(key, value)
        if problem:
            problems.append(f"{PROJECT}:labels.{key}: {problem}")
    count = len({**config.resource_labels, "tpu-pool": ""})
    if count > GCP_LABELS_PER_RESOURCE:
        problems.append(
            f"{PROJECT}:labels: node pools would carry {count} labels (these, managed-by, app, env and tpu-pool); "
            f"Google Cloud allows {GCP_LABELS_PER_RESOURCE}: remove {count - GCP_LABELS_PER_RESOURCE}"
        )
    return problems


def _node_role_problems(cluster: ClusterConfig) -> list[str]:
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


def _system_pool_problems(config: StackConfig) -> list[str]:
    if config.cluster.mode != "standard":
        return []
    pool = config.cluster.system_pool
    per_zone, zones = config.system_pool_initial_nodes_per_zone, config.cluster_zones
    if per_zone * zones > pool.max_nodes:
        return [
            f"{PROJECT}:cluster.systemPool.maxNodes: GKE starts the pool with {per_zone} node(s) in each of its "
            f"{zones} zones = {per_zone * zones}, above maxNodes {pool.max_nodes}; raise maxNodes to "
            f"{per_zone * zones} or more"
        ]
    return []


def load_from_pulumi() -> StackConfig:
    """Load from the running Pulumi program's config (real engine or the offline mock engine alike)."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    raw: dict[str, Any] = dict(runtime_config.get_config_env())
    raw.update(runtime_config.CONFIG.get())
    return load(raw, stack=pulumi.get_stack())
