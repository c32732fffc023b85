"""TPU pool groups: one node pool per slice, and the slice math (VMs, chips, topology, node selectors) every
other part derives from.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Literal

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from components import tpu_catalog
from components.config.adopted import AdoptedPoolConfig
from components.config.base import ConfigModel, node_label_key_problem, node_label_value_problem, parse_duration
from components.config.network import MAX_MAX_PODS, MIN_MAX_PODS, TPU_MAX_PODS_PER_NODE
from components.tpu_catalog import MachineType
from components.xpk_accelerators import XPK_ACCELERATORS

Provisioning = Literal["flex-start", "queued", "on-demand", "spot", "reservation"]
FLEX_START_MAX_SECONDS = 7 * 86400
"""GKE's limit on a flex-start run; queued provisioning pools are flex-start too, so it applies to both."""
_TOLERATION_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "PREFER_NO_SCHEDULE": "PreferNoSchedule", "NO_EXECUTE": "NoExecute"}


class Taint(ConfigModel):
    """A node taint in GKE API terms (NO_SCHEDULE); pods on the pool carry its toleration in Kubernetes terms."""

    key: str
    """An optional DNS-subdomain prefix and `/`, then a name of 1-63 letters, digits, `-`, `_`, `.` starting and
    ending with a letter or digit."""
    value: str = ""
    """Empty, or up to 63 characters of the key name's form."""
    effect: Literal["NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"] = "NO_SCHEDULE"
    """The taint's effect, in GKE API terms."""

    @property
    def toleration(self) -> dict[str, str]:
        """Equal on the taint's value; a taint without a value is tolerated with Exists."""
        effect = _TOLERATION_EFFECTS[self.effect]
        if self.value:
            return {"key": self.key, "operator": "Equal", "value": self.value, "effect": effect}
        return {"key": self.key, "operator": "Exists", "effect": effect}


# ---- what a TPU pod may use of its node ------------------------------------------------------------------------
# GKE keeps part of every Standard node for the OS, the kubelet and eviction ("Node allocatable resources", "Memory and
# CPU reservations" and "Local ephemeral storage reservation" of
# https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes). Of what is allocatable, GKE's DaemonSets
# and the Cloud Storage FUSE sidecar take their requests before the TPU container asks for the rest: a TPU pod owns its
# VM, and without requests it is BestEffort, the first pod the kubelet evicts under pressure.
_CPU_RESERVED = ((1000, 600), (1000, 100), (2000, 50), (None, 25))
"""(millicores, hundredths of a percent): 6% of the first core, 1% of the next, 0.5% of the next 2, 0.25% above 4."""
_MEMORY_RESERVED = ((4096, 25), (4096, 20), (8192, 10), (114688, 6), (None, 2))
"""(MiB, percent): 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above 128
(the rule for machines of 1 GiB or more, which every TPU VM is)."""
KERNEL_MEMORY_PERCENT = 2
"""What the kernel keeps of a VM's memory before the kubelet sees it: a node's memory capacity is its machine type's
memory less this. GKE nodes measure 1.6-1.7% (n2-highmem-32: 256 GiB nominal, 251.9 GiB capacity; n2-highmem-16: 128
GiB, 125.8 GiB: 2i2c-org/infrastructure deployer/commands/generate/resource_allocation/node-capacity-info.json), and
GKE's reservations apply to that capacity."""
MEMORY_EVICTION_MIB = 100
"""The kubelet's hard eviction threshold for memory on GKE nodes."""
DAEMONSET_CPU_MILLICORES = 1000
DAEMONSET_MEMORY_MIB = 2048
"""Room left for GKE's DaemonSets on a TPU node (networking, logging, metrics, Workload Identity metadata server, CSI
node drivers, TPU device plugin, managed Prometheus collector): about twice what they request together."""
FUSE_SIDECAR_CPU_MILLICORES = 250
FUSE_SIDECAR_MEMORY_MIB = 256
"""The Cloud Storage FUSE sidecar's requests when its limits are "0" and no request is set: the driver's defaults
(GoogleCloudPlatform/gcs-fuse-csi-driver pkg/webhook/config.go populateResource, cmd/webhook/main.go flags)."""
OS_PARTITIONS_MIB = 6144
"""Boot disk the node's filesystem does not hold (GKE's own example: a 100 GiB disk shows 94.25 GiB of capacity)."""
POD_EPHEMERAL_HEADROOM_MIB = 10240
"""Ephemeral storage a TPU pod keeps for everything but the file cache: the FUSE sidecar's default request (5 GiB, its
temporary and buffer volumes) and the TPU container's writable layer and logs (pip-installed wheels, libtpu caches)."""


def _tiered(amount: int, tiers: tuple[tuple[int | None, int], ...], per: int) -> int:
    """Sum of each tier's share of `amount` (rate per `per`), rounded up: GKE's reservations are tiered this way."""
    total, rest = 0, amount
    for span, rate in tiers:
        part = rest if span is None else min(span, rest)
        total += part * rate
        rest -= part
    return -(-total // per)


def gke_reserved_cpu_millicores(vcpus: int) -> int:
    return _tiered(vcpus * 1000, _CPU_RESERVED, 10000)


def gke_reserved_memory_mib(memory_mib: int) -> int:
    return _tiered(memory_mib, _MEMORY_RESERVED, 100)


def gke_allocatable_ephemeral_mib(boot_disk_gib: int) -> int:
    """Ephemeral storage allocatable on a node with a boot disk of `boot_disk_gib`: the filesystem less the kubelet's
    10% eviction threshold and GKE's system reservation, min(50% of the disk, 6 GiB + 35% of it, 100 GiB)."""
    disk = boot_disk_gib * 1024
    filesystem = disk - OS_PARTITIONS_MIB
    reservation = min(disk // 2, 6144 + disk * 35 // 100, 100 * 1024)
    return filesystem - -(-filesystem // 10) - reservation


def cpu_quantity(millicores: int) -> str:
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


# ---- Ironwood (TPU7x) -------------------------------------------------------------------------------------------
IRONWOOD_STANDARD_FLOOR = "1.34.0-gke.2201000"
IRONWOOD_AUTOPILOT_FLOOR = "1.34.1-gke.3084001"
"""The first GKE versions that run TPU7x: "available in GKE Standard clusters that run version 1.34.0-gke.2201000 and
later, and in Autopilot clusters that run version 1.34.1-gke.3084001 and later"
(https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood, Availability)."""
IRONWOOD_TOOLKIT_FLOOR = "1.34.3-gke.1318000"
"""What Cluster Toolkit's TPU7x example asks of a Standard cluster: "Cloud TPU 7x requires a specific minimum GKE
version to function correctly. Minimum Version: 1.34.3-gke.1318000 or later" (GoogleCloudPlatform/cluster-toolkit
v1.95.0 examples/gke-tpu-7x/README.md). GKE's own page states the older floor, so below this is a warning, not an
error."""
# How TPU7x capacity is had on GKE: every provisioning mode. Reservations, whole or a block or sub-block of one
# (`--reservation-affinity=specific --reservation=projects/P/reservations/R/reservationBlocks/B[/reservationSubBlocks/
# S]`, https://cloud.google.com/kubernetes-engine/docs/how-to/create-dynamic-slices), calendar mode among them (TPU7x
# (Ironwood) in the calendar-mode row of https://cloud.google.com/tpu/docs/consumption-options); flex-start and queued
# provisioning with a workload policy (GoogleCloudPlatform/cluster-toolkit v1.95.0 examples/gke-consumption-options/
# dws-flex-start/gke-tpu-7x and dws-flex-start-queued-provisioning/gke-tpu-7x); spot (xpk's TPU7x node pool recipes pass
# --spot, AI-Hypercomputer/xpk 367c8382 recipes/Cluster_create_for_multi-host_nodepool.md); on-demand ("All TPU
# versions: see TPU regions and zones" in the on-demand row of the consumption options page, whose regions-zones page
# lists "All TPU7x configurations": us-central1-c). TPU7x access and quota are arranged with the account team ("To get
# access to TPU7x, contact your account team", https://cloud.google.com/tpu/docs/tpu7x); that is not a mode of its own.
TOPOLOGY_MANAGER_POLICY = "best-effort"
TOPOLOGY_MANAGER_SCOPE = "container"
"""The kubelet's Topology Manager on pools of VMs with several NUMA nodes (TPU7x), so that each of a pod's containers
gets its TPU chips from one NUMA node: GKE's Ironwood page has the multi-container setup bind each container to one
NUMA node's resources (https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood, NUMA binding) without
naming the kubelet settings; "the gke nodepool topology manager needs to be configured with best effort. The default
is none" (a Google engineer, AI-Hypercomputer/xpk PR #880). Scope `container`: each container aligned on its own (the
pod's 4 chips do not fit one NUMA node of 2). CPU and memory are not pinned: that takes the static CPU and memory
managers and Guaranteed pods, which GKE does not ask for and the TPU pods are not (no CPU limit; the Cloud Storage FUSE
sidecar's limits are off)."""
WORKLOAD_POLICY_TYPE = "HIGH_THROUGHPUT"
""""Ironwood (TPU7x) supports the High throughput workload policy" (GKE's Ironwood page, above)."""
_RESOURCE_NAME = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
RESERVATION_PATH = re.compile(
    rf"^(?:{_RESOURCE_NAME}|projects/[a-z][-a-z0-9]{{4,28}}[a-z0-9]/reservations/{_RESOURCE_NAME}"
    r"(?:/reservationBlocks/[^/\s]+(?:/reservationSubBlocks/[^/\s]+)?)?)$"
)
"""What GKE takes as a specific reservation: a name (this project's), a shared reservation's path, or the path of
one of its blocks or sub-blocks (the reservation path values of the dynamic slicing page above; Cluster Toolkit
v1.95.0 modules/compute/gke-node-pool/reservation_definitions.tf sends the same projects/... form)."""


def workload_policy_name(cluster: str, pool: TpuPoolConfig) -> str:
    """The Compute workload policy of a multi-host TPU7x pool group: `<pool>-<topology>-<8 hex>`, the hex a digest of
    the cluster and the pool group. A policy cannot be updated once created ("To make changes in a workload policy,
    you must create a new one", Compute Engine's workload policy docs), so the topology is in the name: a new slice
    shape is a new name, which the engine replaces the policy for (deleting the old one first:
    components/workload_policy.py), together with the pools that name it. The digest
    keeps two clusters' (or stacks') groups of one name apart in a project's region, where xpk's per-cluster name made
    a re-created cluster reuse the old topology (AI-Hypercomputer/xpk issue 752). At most 40 + 1 + 11 + 1 + 8 = 61
    characters, within Compute's 63."""
    topology = pool.workload_policy_topology
    assert topology is not None, "only multi-host TPU7x pool groups have a workload policy"
    digest = hashlib.sha256(f"{cluster}/{pool.name}".encode()).hexdigest()[:8]
    return f"{pool.name}-{topology}-{digest}"


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


class FutureReservationConfig(ConfigModel):
    """Calendar mode (DWS): TPU capacity for a fixed window, delivered as an auto-created reservation.

    A submitted request cannot be modified, cancelled or deleted: a new window is a new request.
    """

    start_time: datetime
    """Start of the window: RFC 3339 with a zone, quoted, at most 120 days ahead."""
    end_time: datetime
    """End of the window: 1 to 90 days after its start."""
    name: str | None = None
    """Name of the request. A changed window or chip count gets a new default name, so it is submitted as a new
    request (the old one is kept: it cannot be deleted).

    Default: `<name>-<start date>-<digest of the request>`"""
    workload_type: Literal["BATCH", "SERVING"] = "BATCH"
    """What the capacity is for; 1, 4 and 8 v5e chips can be reserved only for `SERVING`."""
    existing: bool = False
    """`true`: the request was submitted already (by an earlier `pulumi up`, kept by `pulumi destroy`); the stack
    imports it by its ID instead of submitting it again, which Compute would refuse (the name is taken)."""

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


GKE_MAX_PARALLEL_UPGRADES = 20
"""Most nodes of a pool GKE upgrades at once, maxSurge + maxUnavailable (terraform-provider-google
resource_container_node_pool.go, upgrade_settings: "limited to 20")."""


class TpuPoolConfig(ConfigModel):
    """A pool group: N identical TPU slices. GKE needs one node pool per slice: slice i is named `<name>-<i>`,
    whatever the number of slices, so a resize never renames (and so never deletes) a running slice."""

    name: str
    """A DNS label; with the `-<i>` suffix at most 40 characters. Its node pools' names (`<name>-<i>`) may be no other
    group's, of any cluster of the stack, nor the system pool's `system`."""
    machine_type: str | None = None
    """TPU machine type, e.g. `ct5lp-hightpu-4t`; set this or `tpuVersion`."""
    tpu_version: str | None = None
    """`v4`, `v5e`, `v5p`, `v6e` or `tpu7x`: that version's 4-chip machine type; set this or `machineType`."""
    accelerator: str | None = None
    """xpk's accelerator name (`--tpu-type`: `v5litepod-16`, `v6e-256`, `v5p-128`, `tpu7x-8`): its machine type and
    topology from xpk's catalogue; set this, `machineType` or `tpuVersion` (and no `topology`)."""
    topology: str | None = None
    """Slice shape, e.g. `2x4` or `4x4x4`, checked against the machine type.

    Default: the machine type's single-host shape"""
    slices: int = 1
    """Number of identical slices (node pools)."""
    legacy_first_slice_name: bool = False
    """`true` keeps slice 0's node pool named `<name>`, as earlier versions of tpu-stack named the node pool of a
    one-slice group: set it on such a group already deployed, or the next `up` deletes its running slice and creates
    `<name>-0` (a GKE node pool cannot be renamed). Slices 1 and up are `<name>-<i>` either way."""
    provisioning: Provisioning = "on-demand"
    """How GKE gets the capacity (see *How provisioning modes map to the GKE API* below)."""
    reservation: str | None = None
    """Existing reservation to consume (`provisioning: reservation`): its name, a shared reservation
    (`projects/<project>/reservations/<name>`), or one block or sub-block of it
    (`projects/<project>/reservations/<name>/reservationBlocks/<block>[/reservationSubBlocks/<sub-block>]`, which
    needs `zone`). TPU7x calendar-mode capacity is consumed this way, once its request is approved."""
    future_reservation: FutureReservationConfig | None = None
    """Calendar mode (`provisioning: reservation`): a future reservation of TPU v5e, v5p or v6e for a fixed window.
    Slices times chips per slice must be a count Compute takes: v6e 1-256, v5p 4-1024, v5e 16-256, or 1, 4, 8 for
    `SERVING`."""
    spot: SkipJsonSchema[bool | None] = None
    """Not a flag: spot is a provisioning mode. Accepted only to explain that (DWS capacity is never spot), so the
    schema and the reference leave it out."""
    zone: str | None = None
    """The one zone of the slices, a zone of `gcp:region` (e.g. `us-east5-a`). It must offer the TPU version by the
    pool's provisioning: flex-start and queued pools need one of GKE's flex-start zones (vendor/data/tpu_zones.json
    lists both; an error names the zones that can). Required for multi-host slices, and in a regional cluster for a
    group of fixed size (on-demand, spot without `scaleToZero`, reservation): GKE counts a pool's nodes per zone, so
    without one zone each slice would run, and bill, in each of the cluster's zones.

    Default: a zonal cluster's zone; in a regional cluster, for a group scaled from zero (flex-start, queued,
    `scaleToZero`), the zones of `gcp:region` that offer its TPU by its provisioning, where each slice is made in
    whichever has capacity"""
    zone_unlisted: bool = False
    """Accept a zone the vendored TPU zone table does not list for this version and provisioning (one Google opened
    after the table's date, or one your account team confirmed): the refusal becomes a warning. A pool in a zone that
    cannot give its TPUs fails when GKE creates it, after the cluster exists."""
    max_run_duration: str | None = None
    """Longest a node runs, e.g. `24h`, `7d`, `1h30m`; sent to GKE in seconds (`86400s`). Flex-start, queued and
    spot pools only; flex-start and queued at most `7d`."""
    scale_to_zero: bool = False
    """On-demand and spot groups: the cluster autoscaler creates a slice when a pod needs it and removes it when idle,
    so an idle slice is not billed; a pod then waits for the slice (minutes, and on-demand or spot TPUs may not be
    available). Flex-start, queued and calendar-mode slices always scale to zero. Switching a deployed group updates
    its pools in place."""
    labels: dict[str, str] = {}
    """Kubernetes node labels, also the Kueue flavor's `nodeLabels`. Keys: an optional DNS-subdomain prefix and
    `/`, then a name of 1-63 letters, digits, `-`, `_`, `.` starting and ending alphanumeric; values up to 63 of
    the same."""
    taints: tuple[Taint, ...] = ()
    """Node taints; the stack's workloads for the pool tolerate them."""
    auto_upgrade: bool | None = None
    """Node auto-upgrade. GKE refuses `false` on a release channel, so there it stays on and `cluster.maintenance`
    keeps upgrades out of training runs; without a channel it defaults to off (an upgrade restarts every VM of a
    slice and the run on it).

    Default: on with a release channel, else `false`"""
    drain: bool = False
    """`true` takes the group out of the Kueue queues while its slices keep running: every ClusterQueue and the cohort
    drop its flavor, so Kueue admits nothing new onto it, and workloads it already admitted run to their end (Kueue
    does not re-check an admission when quota is removed). Remove the group once none runs there (docs/operations.md,
    *Drain a pool group*); shares, ladders and placement may not name it meanwhile."""
    max_pods_per_node: int = Field(default=TPU_MAX_PODS_PER_NODE, ge=MIN_MAX_PODS, le=MAX_MAX_PODS)
    """Pods a node of the group may run, which sizes its block of the pod range (15: a /27). A TPU VM runs one TPU pod
    and GKE's DaemonSets. GKE cannot change it on an existing node pool: a new value replaces the group's pools (pools
    created before this key existed have GKE's 110; keep `110` for them)."""
    adopted: AdoptedPoolConfig | None = None
    """Node pools that exist already (made by xpk or Cluster Toolkit), which the stack imports instead of creating:
    their names and the settings it keeps (`tpu-stack adopt` writes this; docs/adopt.md).

    Default: none, the stack creates the pools"""

    def problems(self) -> list[tuple[str, str]]:
        """(config field, message) for each problem of the pool on its own; derived values need none."""
        return self._node_label_problems() + self._shape_problems()

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
        # Independent of what the machine is: reported with any problem of the machine type.
        slices = [("slices", f"is {self.slices}; a pool group needs at least 1 slice")] if self.slices < 1 else []
        given = [v for v in (self.machine_type, self.tpu_version, self.accelerator) if v is not None]
        if len(given) != 1:
            return [("machineType", "set exactly one of machineType, tpuVersion or accelerator"), *slices]
        if self.accelerator is not None and self.accelerator not in XPK_ACCELERATORS:
            near = ", ".join(n for n in XPK_ACCELERATORS if n.split("-")[0] == self.accelerator.split("-")[0])[:200]
            return [
                (
                    "accelerator",
                    f"{self.accelerator!r} is not one of xpk's TPU accelerator names"
                    + (f"; of that kind: {near}" if near else " (e.g. v5litepod-16, v6e-8, v5p-128, tpu7x-8)"),
                ),
                *slices,
            ]
        if self.accelerator is not None and self.topology is not None:
            machine_type, topology = XPK_ACCELERATORS[self.accelerator]
            return [("topology", f"{self.accelerator} is {machine_type} {topology} already; remove topology"), *slices]
        if self.tpu_version is not None and self.tpu_version not in tpu_catalog.VERSIONS:
            valid = ", ".join(tpu_catalog.VERSIONS)
            return [("tpuVersion", f"{self.tpu_version!r} is not a TPU version; valid: {valid}"), *slices]
        if self.machine_type is not None and tpu_catalog.machine_type(self.machine_type) is None:
            valid = ", ".join(tpu_catalog.MACHINE_TYPES)
            return [("machineType", f"{self.machine_type!r} is not a TPU machine type; valid: {valid}"), *slices]
        problems = slices
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
        problems += self._ironwood_problems() or self._provisioning_problems()
        if self.adopted is not None:
            problems += self.adopted.problems(self.slices)
        if not problems and self.future_reservation is not None:
            problems += self._calendar_problems(self.future_reservation)
        return problems

    def _ironwood_problems(self) -> list[tuple[str, str]]:
        """What this stack cannot ask for of TPU7x capacity (GKE offers every provisioning mode for it)."""
        if self.machine.version.name != tpu_catalog.IRONWOOD.name:
            return []
        if self.future_reservation is not None:
            return [
                (
                    "futureReservation",
                    "pulumi-gcp 10.2.0 cannot submit a TPU7x calendar-mode request (its aggregateReservation.vmFamily "
                    "has no TPU7x family); request it in the console or with gcloud, then consume the approved "
                    "reservation with reservation: <its name>",
                )
            ]
        return []

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
        if self.reservation is not None and not RESERVATION_PATH.match(self.reservation):
            problems.append(
                (
                    "reservation",
                    f"{self.reservation!r} is not a reservation; give its name, projects/<project>/reservations/<name> "
                    "(shared), or a block or sub-block: projects/<project>/reservations/<name>/reservationBlocks/"
                    "<block>[/reservationSubBlocks/<sub-block>]",
                )
            )
        elif self.reservation_block and self.zone is None:
            problems.append(("zone", "required with a reservation block or sub-block: a block is in one zone"))
        if self.future_reservation is not None and self.zone is None:
            problems.append(("zone", "required with futureReservation: calendar-mode capacity is zonal"))
        if self.max_run_duration is not None:
            problems += self._run_duration_problems(self.max_run_duration)
        if self.scale_to_zero and mode == "reservation":
            problems.append(
                (
                    "scaleToZero",
                    "a reservation is billed whether its VMs run or not, so scaling its slices to zero saves nothing; "
                    "remove scaleToZero",
                )
            )
        elif self.scale_to_zero and mode in ("flex-start", "queued"):
            problems.append(("scaleToZero", f"{mode} slices always scale to zero; remove scaleToZero"))
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
        if self.accelerator is not None:
            name = XPK_ACCELERATORS[self.accelerator][0]
        else:
            name = self.machine_type or tpu_catalog.DEFAULT_MACHINE_TYPE[str(self.tpu_version)]
        found = tpu_catalog.machine_type(name)
        assert found is not None, "validated in problems()"
        return found

    @property
    def slice_topology(self) -> str:
        if self.accelerator is not None:
            return XPK_ACCELERATORS[self.accelerator][1]
        return self.topology or self.machine.single_host_topology

    @property
    def explicit_topology(self) -> str | None:
        """What goes into placementPolicy.tpuTopology: gcloud sends none for single-host pools, and none for a machine
        type that is one single-host shape (1t, 8t) even where `topology` names that shape (the pack's
        tpu-topology-and-node-count refuses one there). A single-host topology written for a 4-chip type is sent, as it
        always was: taking it away would replace deployed pools (placementPolicy.tpuTopology replaces)."""
        if self.multi_host:
            return self.slice_topology
        one_shape = len(self.machine.fixed_topologies) == 1
        return None if one_shape else self.topology

    @property
    def flavor_name(self) -> str:
        """The pool group's Kueue ResourceFlavor: an adopted one keeps its name."""
        return (self.adopted.flavor if self.adopted else None) or self.name

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
    def min_chips(self) -> int:
        """Chips the group holds at its fewest: none when it scales to zero, else every slice's."""
        return 0 if self.autoscaled else self.total_chips

    @property
    def node_pool_names(self) -> list[str]:
        """Slice i's node pool: its name never depends on the count (a new name would be a new node pool)."""
        return [self.slice_name(i) for i in range(self.slices)]

    def slice_name(self, index: int) -> str:
        """An adopted group's slice i keeps its existing node pool's name (xpk's `<cluster>-np-<i>`)."""
        if self.adopted is not None and index < len(self.adopted.node_pools):
            return self.adopted.node_pools[index]
        return self.name if (index == 0 and self.legacy_first_slice_name) else f"{self.name}-{index}"

    @property
    def autoscaled(self) -> bool:
        """DWS modes scale 0 -> one slice -> 0, and so do calendar-mode pools, whose reservation exists only
        during its window, and groups that ask to (`scaleToZero`); the others hold their slices."""
        return (
            self.provisioning in ("flex-start", "queued") or self.future_reservation is not None or self.scale_to_zero
        )

    @property
    def reservation_name(self) -> str | None:
        window = self.future_reservation
        if window is not None:
            return window.name or f"{self.name}-{window.start_time.astimezone(UTC):%Y%m%d}-{self._request_digest}"
        return self.reservation

    @property
    def _request_digest(self) -> str:
        """8 hex digits of what the calendar request asks for: a different request never reuses a name."""
        window = self.future_reservation
        assert window is not None
        request = "|".join(
            (
                str(self.zone),
                self.machine.name,
                str(self.total_chips),
                window.start_time.astimezone(UTC).isoformat(),
                window.end_time.astimezone(UTC).isoformat(),
                window.workload_type,
            )
        )
        return hashlib.sha256(request.encode()).hexdigest()[:8]

    @property
    def reservation_block(self) -> bool:
        """The pool consumes a block or sub-block of a reservation, not all of it."""
        return "/reservationBlocks/" in (self.reservation or "")

    @property
    def workload_policy_topology(self) -> str | None:
        """The accelerator topology of the Compute workload policy a multi-host TPU7x slice needs: GKE places
        multi-host Ironwood node pools with a HIGH_THROUGHPUT workload policy, which "replaces the --tpu-topology flag
        used by other TPU versions" (https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood, Workload
        policy for multi-host node pools); single-host pools need none (xpk: requires_workload_policy and
        vms_per_slice > 1, AI-Hypercomputer/xpk 367c8382 src/xpk/core/system_characteristics.py)."""
        if self.machine.version.name != tpu_catalog.IRONWOOD.name or not self.multi_host:
            return None
        return self.slice_topology

    @property
    def numa_aligned(self) -> bool:
        """Its VMs have several NUMA nodes, and its pods one TPU container per NUMA node: the kubelet aligns each
        container's chips (TOPOLOGY_MANAGER_POLICY)."""
        return self.machine.containers_per_vm > 1

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
    def upgrade_max_unavailable(self) -> int | None:
        """Nodes GKE may take down at once when it upgrades a reservation-backed pool, which then surges none: every
        node GKE creates, upgrade surge nodes included, counts against a specific reservation's capacity (GKE
        "Ensure resources for node upgrades"), and a reservation that holds exactly the pool's VMs has none to spare.
        A multi-host slice stops when any of its VMs does, so its VMs go down together, up to the 20 nodes GKE
        upgrades at once (provider schema, upgrade_settings). None for other pools: flex-start and queued nodes get
        GKE's short-lived upgrades, on-demand and spot GKE's default surge."""
        if self.provisioning != "reservation":
            return None
        return min(self.vms_per_slice, GKE_MAX_PARALLEL_UPGRADES)

    @property
    def reservation_affinity(self) -> tuple[str, list[str]] | None:
        """(consumeReservationType, reservation names) as the GKE API wants; None keeps GKE's default."""
        if self.provisioning in ("flex-start", "queued"):
            return ("NO_RESERVATION", [])
        if self.provisioning == "reservation":
            return ("SPECIFIC_RESERVATION", [str(self.reservation_name)])
        return None

    @property
    def boot_disk_gib(self) -> int:
        """The pools set no disk size, so each node has GKE's default boot disk."""
        return tpu_catalog.GKE_DEFAULT_BOOT_DISK_GIB

    @property
    def tpu_container_cpu_millicores(self) -> int:
        """CPU a node's TPU container requests: allocatable less the DaemonSets' and the FUSE sidecar's share."""
        vcpus = self.machine.vcpus
        allocatable = vcpus * 1000 - gke_reserved_cpu_millicores(vcpus)
        return allocatable - DAEMONSET_CPU_MILLICORES - FUSE_SIDECAR_CPU_MILLICORES

    @property
    def allocatable_memory_mib(self) -> int:
        """Memory a node of this group offers pods: its capacity (the machine's memory less the kernel's share) less
        GKE's reservation and the eviction threshold."""
        capacity = self.machine.memory_gib * 1024 * (100 - KERNEL_MEMORY_PERCENT) // 100
        return capacity - gke_reserved_memory_mib(capacity) - MEMORY_EVICTION_MIB

    @property
    def tpu_container_memory_mib(self) -> int:
        """Memory the TPU container requests: what is allocatable less the DaemonSets' room and the FUSE sidecar."""
        return self.allocatable_memory_mib - DAEMONSET_MEMORY_MIB - FUSE_SIDECAR_MEMORY_MIB

    @property
    def tpu_container_requests(self) -> dict[str, str]:
        """Kubernetes quantities of the CPU and memory one TPU container requests on a node of this group."""
        return {"cpu": cpu_quantity(self.tpu_container_cpu_millicores), "memory": f"{self.tpu_container_memory_mib}Mi"}

    @property
    def tpu_container_limits(self) -> dict[str, str]:
        """Its memory limit: all the node can give it beside the sidecar, above the request, so a passing peak uses
        the DaemonSets' unused room instead of ending the run (no CPU limit: it would only throttle input)."""
        return {"memory": f"{self.allocatable_memory_mib - FUSE_SIDECAR_MEMORY_MIB}Mi"}

    def container_requests(self, containers: int) -> dict[str, str]:
        """CPU and memory each of `containers` TPU containers of a pod requests: an equal share of what the node gives
        the TPU containers (all of it for one)."""
        return {
            "cpu": cpu_quantity(self.tpu_container_cpu_millicores // containers),
            "memory": f"{self.tpu_container_memory_mib // containers}Mi",
        }

    def container_limits(self, containers: int) -> dict[str, str]:
        """Each of `containers` TPU containers' memory limit: its share of tpu_container_limits."""
        return {"memory": f"{(self.allocatable_memory_mib - FUSE_SIDECAR_MEMORY_MIB) // containers}Mi"}

    @property
    def allocatable_ephemeral_mib(self) -> int:
        return gke_allocatable_ephemeral_mib(self.boot_disk_gib)

    @property
    def file_cache_limit_gib(self) -> int:
        """The largest Cloud Storage FUSE file cache a TPU pod of this group can keep on its node's boot disk."""
        return max(0, (self.allocatable_ephemeral_mib - POD_EPHEMERAL_HEADROOM_MIB) // 1024)

    @property
    def shape(self) -> tuple[str, str]:
        """(machine type, slice topology): what a workload asks for. Pool groups of one shape serve the same pods,
        so only a ladder may hold two of them (queues.ladders)."""
        return (self.machine.name, self.slice_topology)

    @property
    def node_taints(self) -> tuple[Taint, ...]:
        """Taints on the group's nodes beyond GKE's own TPU taint (which every pod that asks for TPU chips
        tolerates): the queued-provisioning taint GKE puts on queued nodes, and the group's own taints."""
        queued = (Taint(key=tpu_catalog.QUEUED_TAINT),) if self.provisioning == "queued" else ()
        return queued + self.taints

    @property
    def node_labels(self) -> dict[str, str]:
        """What a pod selects to land on this group's nodes and no other's: the group's own labels and GKE's
        (serving pods; Kueue's flavors carry the same as nodeLabels)."""
        return {**self.labels, **self.node_selector}

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
