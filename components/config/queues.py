"""Batch scheduling: the Kueue and JobSet charts, teams, priorities, and the quotas derived from the pool groups
they are given (never typed by hand).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from functools import cached_property
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator

from components import tpu_catalog
from components.config.base import (
    PROJECT,
    RESERVED_NAMESPACES,
    ConfigModel,
    image_digest,
    kubernetes_name,
    optional_kubernetes_name,
)
from components.config.controllers import PodsReadyConfig
from components.config.pools import TpuPoolConfig

_CHART_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)%$")
_QUANTITY_MI = {"Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
_MEMORY = re.compile(r"^(\d+)(Mi|Gi|Ti)$")
MAX_USER_PRIORITY = 1_000_000_000
"""PriorityClass values above this are reserved for system classes."""


class ChartsConfig(ConfigModel):
    """Pinned Helm chart versions of Kueue and JobSet, and optionally their controller images' digests.

    `vendor/` holds these charts and the CRDs of these tags, which the offline checks read. The charts' images are
    `v<chart version>`; a digest pins an image beyond its tag, and without one the chart's tag is used and the
    image stays on the reviewed digest exception list."""

    kueue_version: str = "0.19.2"
    """Exact version of the OCI chart `oci://registry.k8s.io/kueue/charts/kueue` (no `v`)."""
    jobset_version: str = "0.12.0"
    """Exact version of the OCI chart `oci://registry.k8s.io/jobset/charts/jobset` (no `v`)."""
    kueue_image_digest: str | None = None
    """`sha256:<64 hex>`: the Kueue controller image is pulled as `v<version>@<digest>`."""
    jobset_image_digest: str | None = None
    """`sha256:<64 hex>`: the JobSet controller image is pulled as `v<version>@<digest>`."""

    @field_validator("kueue_version", "jobset_version")
    @classmethod
    def _pinned(cls, version: str) -> str:
        if not _CHART_VERSION.match(version):
            raise ValueError(f"{version!r} is not a chart version like 0.19.2 (OCI chart versions have no 'v')")
        return version

    _digest = field_validator("kueue_image_digest", "jobset_image_digest")(image_digest)

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


class TeamConfig(ConfigModel):
    """A team: a namespace with its LocalQueue, and a ClusterQueue of its own in the shared cohort."""

    name: str
    """Team name (a DNS label); its queues are `<name>-queue` and `<name>-cluster-queue`."""
    namespace: str | None = None
    """Where the team's LocalQueue is; created unless it is `default`.

    Default: the team name"""
    shares: dict[str, ChipsOrPercent] = {}
    """Pool group -> whole chips (`16`) or a percentage of its chips (`"50%"`) guaranteed to the team."""
    borrowing_limit: dict[str, ChipsOrPercent] = {}
    """Pool group -> chips (or a percentage) the team may borrow from the cohort beyond its share; a pool group
    left out is unlimited."""

    _names = field_validator("name", "namespace")(optional_kubernetes_name)

    @property
    def namespace_name(self) -> str:
        return self.namespace or self.name

    @property
    def local_queue(self) -> str:
        return f"{self.name}-queue"

    @property
    def cluster_queue(self) -> str:
        return f"{self.name}-cluster-queue"


class PreemptionConfig(ConfigModel):
    """ClusterQueue preemption, the seed's policy by default."""

    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Any"
    """Which workloads of other queues in the cohort a queue may preempt to get back its lent quota."""
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "LowerPriority"
    """Which workloads of its own queue a pending workload may preempt."""


class PriorityClassConfig(ConfigModel):
    """A `scheduling.k8s.io/v1` PriorityClass workloads name in `priorityClassName`; Kueue orders by it."""

    name: str
    """PriorityClass name (a DNS label)."""
    value: int
    """Priority; higher runs and preempts first. At most 1000000000 (higher values are the system's)."""
    global_default: bool = False
    """Pods that name no class get this one."""
    description: str | None = None
    """Free text on the PriorityClass."""

    _name = field_validator("name")(kubernetes_name)


DEFAULT_PRIORITY_CLASSES = tuple(
    PriorityClassConfig(name=name, value=value)
    for name, value in (("very-low", 100), ("low", 250), ("medium", 500), ("high", 750), ("very-high", 1000))
)


class HostResourcesConfig(ConfigModel):
    """CPU and memory of one TPU VM that pods may request; set them to have Kueue account them beside chips."""

    cpu: float = Field(gt=0)
    """Cores per VM pods may request, e.g. `100`; at most what a TPU pod of the pool group may request (a
    `ct5lp-hightpu-4t` VM: 110.4)."""
    memory: str
    """Memory per VM pods may request, e.g. `170Gi` (units `Mi`, `Gi`, `Ti`); at most what a TPU pod of the pool group
    may request (a `ct5lp-hightpu-4t` VM: `179495Mi`, see *Submitting workloads*)."""

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


class AutopilotCapacityConfig(ConfigModel):
    """TPU capacity an Autopilot cluster may provision (it has no node pools to derive quotas from)."""

    name: str | None = None
    """ResourceFlavor name.

    Default: `<tpuVersion or machineType>-<topology>`"""
    machine_type: str | None = None
    """TPU machine type, as in `tpuPools`; set this or `tpuVersion`."""
    tpu_version: str | None = None
    """TPU version, as in `tpuPools`; set this or `machineType`."""
    topology: str | None = None
    """Slice shape, as in `tpuPools`."""
    slices: int = 1
    """Slices the queues may hand out at once."""
    provisioning: Literal["flex-start", "queued", "on-demand", "spot"] = "on-demand"
    """How Autopilot gets the capacity."""

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


class PlacementConfig(ConfigModel):
    """Topology-aware scheduling (Kueue's TAS) of multi-host slices: Kueue admits a workload only once each of its
    slices fits the free, ready nodes of one node pool (one pool is one slice), and with `blocks` keeps a multislice
    workload's slices in one reservation block. Generated workloads and `tpu-stack submit` ask for it; a workload
    written by hand for these pool groups needs Kueue's pod-set annotations (docs/workloads.md)."""

    pools: tuple[str, ...] = ()
    """Multi-host pool groups whose Kueue flavors place workloads by topology; a ladder's rungs all or none. A
    flavor keeps its topology for its life (Kueue refuses to change or remove it): list a pool group here from the
    start."""
    blocks: bool = False
    """A level above the node pools: the reservation block GKE labels nodes with
    (`cloud.google.com/gce-topology-block`). Only where every node of these pool groups carries it: Kueue leaves out
    nodes missing a level's label."""
    slices: Literal["required", "preferred"] = "preferred"
    """With `blocks`: whether a multislice workload's slices must share one block (`required`: it waits until they
    can) or should (`preferred`: Kueue uses as few blocks as it can)."""


class QueuesConfig(ConfigModel):
    """Kueue teams, quotas, preemption and priorities, derived from the TPU pool groups.

    Without teams: one ClusterQueue over every pool group and one LocalQueue (the multislice seed's
    `cluster-queue` and `default/multislice-queue`). With teams: a ClusterQueue per team in one cohort,
    each with its share of every pool group; chips no team holds stay with the Cohort for borrowing.
    """

    cluster_queue: str = "cluster-queue"
    """Name of the single ClusterQueue when there are no teams."""
    local_queue: str = "multislice-queue"
    """Name of the single LocalQueue when there are no teams."""
    namespace: str = "default"
    """Namespace of the single LocalQueue when there are no teams."""
    cohort: str = "tpu-stack"
    """The Cohort the teams' ClusterQueues share."""
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    """Order in which each ClusterQueue admits its workloads."""
    preemption: PreemptionConfig = PreemptionConfig()
    """ClusterQueue preemption."""
    priority_classes: tuple[PriorityClassConfig, ...] = DEFAULT_PRIORITY_CLASSES
    """PriorityClasses workloads name in `priorityClassName`; Kueue orders and preempts by them."""
    teams: tuple[TeamConfig, ...] = ()
    """Teams sharing the pool groups, each with its own queues.

    Default: none, one queue for all"""
    host_resources: dict[str, HostResourcesConfig] = {}
    """Pool group -> CPU and memory per VM. When set (for every pool group), the queues cover CPU and memory too.

    Default: TPU chips only"""
    autopilot_capacity: tuple[AutopilotCapacityConfig, ...] = ()
    """Autopilot only: TPU capacity the queues may hand out (there are no pools to derive it from)."""
    pods_ready: PodsReadyConfig = PodsReadyConfig()
    """How long Kueue waits for an admitted workload's pods to be ready, and how often it tries again."""
    ladders: dict[str, tuple[str, ...]] = {}
    """Ladder name -> pool groups of one shape (machine type and topology) in the order Kueue tries them for a
    workload that asks for the shape, cheapest first: capacity that bills while idle (a reservation, a fixed-size spot
    pool), then capacity made on request (flex-start, queued), e.g. [train, burst]."""

    placement: PlacementConfig = PlacementConfig()
    """Topology-aware scheduling of multi-host slices.

    Default: none, Kueue counts chips only"""

    _names = field_validator("cluster_queue", "local_queue", "namespace", "cohort")(kubernetes_name)


class QueueRef(ConfigModel):
    """Where a team submits: the LocalQueue in its namespace and the ClusterQueue behind it."""

    namespace: str
    local_queue: str
    cluster_queue: str


def queue_pools(
    queues: QueuesConfig, tpu_pools: tuple[TpuPoolConfig, ...], *, autopilot: bool, serving_pools: Mapping[str, str]
) -> tuple[TpuPoolConfig, ...]:
    """Capacity Kueue hands out: the TPU pool groups (Autopilot: queues.autopilotCapacity), except the groups
    Saxml or vLLM servers serve on (`serving_pools`: pool -> what serves it), whose slices they hold outside
    Kueue."""
    if autopilot:
        return tuple(capacity.pool for capacity in queues.autopilot_capacity)
    return tuple(pool for pool in tpu_pools if pool.name not in serving_pools)


def flavor_labels(pool: TpuPoolConfig) -> dict[str, str]:
    """Node labels of the pool's ResourceFlavor and what its workloads select: GKE's TPU labels + the pool's own."""
    return pool.node_labels


def shape_selector(pool: TpuPoolConfig) -> dict[str, str]:
    """What a workload of a ladder selects: the accelerator and topology every rung's nodes carry. Kueue adds the
    node labels and tolerations of the rung it admits the workload on (ResourceFlavor nodeLabels, tolerations)."""
    return {key: pool.node_selector[key] for key in (tpu_catalog.ACCELERATOR_LABEL, tpu_catalog.TOPOLOGY_LABEL)}


def placed(queues: QueuesConfig, pool: TpuPoolConfig) -> bool:
    """Whether Kueue places workloads of `pool` by topology (queues.placement.pools)."""
    return pool.name in queues.placement.pools


def topology_name(queues: QueuesConfig) -> str:
    """The Kueue Topology the placed flavors name. Its levels are immutable (the CRD's `self == oldSelf`), so the name
    says which levels it has: other levels are another Topology."""
    return "tpu-blocks" if queues.placement.blocks else "tpu-slices"


def topology_levels(queues: QueuesConfig) -> list[str]:
    """Node labels from the widest level down: the reservation block (with `blocks`), the node pool (one pool is one
    slice, every GKE node carries its pool's name), the node (Kueue places pods on hosts at the lowest level)."""
    pools = [tpu_catalog.NODE_POOL_LABEL, tpu_catalog.HOSTNAME_LABEL]
    return [tpu_catalog.BLOCK_LABEL, *pools] if queues.placement.blocks else pools


def ladder_pools(queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...]) -> dict[str, tuple[TpuPoolConfig, ...]]:
    """Ladder -> its pool groups, first rung first (ladder problems checked that each names one of `pools`)."""
    by_name = {pool.name: pool for pool in pools}
    return {name: tuple(by_name[rung] for rung in rungs if rung in by_name) for name, rungs in queues.ladders.items()}


def rung_places(queues: QueuesConfig) -> dict[str, tuple[str, int]]:
    """Pool group -> (its ladder, its place there: 0 is tried first); pool groups in no ladder are absent."""
    places: dict[str, tuple[str, int]] = {}
    for name, rungs in queues.ladders.items():
        for index, rung in enumerate(rungs):
            places.setdefault(rung, (name, index))
    return places


def flavor_order(queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...]) -> tuple[TpuPoolConfig, ...]:
    """The pool groups in the order every ClusterQueue lists their flavors: Kueue tries a workload's flavors in
    this order. A ladder's rungs come together and in ladder order, where its first-listed pool group stands."""
    ladders, places = ladder_pools(queues, pools), rung_places(queues)
    ordered: list[TpuPoolConfig] = []
    for pool in pools:
        if any(placed.name == pool.name for placed in ordered):
            continue
        ordered += ladders[places[pool.name][0]] if pool.name in places else (pool,)
    return tuple(ordered)


def ladder_slices(rungs: tuple[TpuPoolConfig, ...]) -> int:
    """The most slices one workload of a ladder may take so that it fits every rung: a rung's slices, one on a
    queued-provisioning rung (its ProvisioningRequest asks for one slice per workload)."""
    return min(1 if pool.provisioning == "queued" else pool.slices for pool in rungs)


def covered_resources(queues: QueuesConfig) -> list[str]:
    return [tpu_catalog.TPU_RESOURCE, *(["cpu", "memory"] if queues.host_resources else [])]


def _cpu(millicores: int) -> str:
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def _memory(mebibytes: int) -> str:
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 else f"{mebibytes}Mi"


def quota(queues: QueuesConfig, pool: TpuPoolConfig, chips: int) -> dict[str, int | str]:
    """Kueue quantities of `chips` chips of `pool`, with the CPU and memory of their VMs when configured."""
    amounts: dict[str, int | str] = {tpu_catalog.TPU_RESOURCE: chips}
    host = queues.host_resources.get(pool.name)
    if host is not None:
        per_vm = pool.machine.chips_per_vm
        amounts["cpu"] = _cpu(host.millicores * chips // per_vm)
        amounts["memory"] = _memory(host.mebibytes * chips // per_vm)
    return amounts


def team_chips(queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...]) -> dict[str, dict[str, int]]:
    """Team -> pool group -> guaranteed chips (0 where the team has no share)."""
    return {
        team.name: {pool.name: share_chips(team.shares.get(pool.name, 0), pool.total_chips) for pool in pools}
        for team in queues.teams
    }


def team_borrowing(queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...]) -> dict[str, dict[str, int | None]]:
    """Team -> pool group -> chips it may borrow (None: no limit)."""
    return {
        team.name: {
            pool.name: (
                share_chips(team.borrowing_limit[pool.name], pool.total_chips)
                if pool.name in team.borrowing_limit
                else None
            )
            for pool in pools
        }
        for team in queues.teams
    }


def cohort_chips(queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...]) -> dict[str, int]:
    """Pool group -> chips no team holds: the Cohort's own quota, which every team may borrow."""
    shares = team_chips(queues, pools)
    return {pool.name: pool.total_chips - sum(team[pool.name] for team in shares.values()) for pool in pools}


def queue_warnings(
    queues: QueuesConfig,
    pools: tuple[TpuPoolConfig, ...],
    ladders: Mapping[str, tuple[TpuPoolConfig, ...]],
    keys: Mapping[str, str],
) -> list[str]:
    """What is valid but rarely meant (`keys`: pool group -> its config key):
    - chips no team holds: the Cohort's own quota, lent to whichever team asks first (Kueue v0.19.2 cohorts: a
      queue borrows the unused quota of its cohort), so no team's workload is sure to get them;
    - a spot rung with no taint: a ResourceFlavor's tolerations are added to the pods Kueue admits on it (Kueue
      v0.19.2 apis/kueue/v1beta2/resourceflavor_types.go `tolerations`), and a taint keeps every other TPU pod off
      VMs that Kueue counts as free quota and Compute Engine reclaims when it needs the capacity."""
    found: list[str] = []
    if queues.teams:
        for name, chips in cohort_chips(queues, pools).items():
            if chips > 0:
                found.append(
                    f"{PROJECT}:queues.teams: {chips} chips of pool group {name} are no team's share: the cohort lends "
                    "them to whichever team asks first and no team can count on them; add them to a team's shares if "
                    "one needs them"
                )
    for ladder, rungs in ladders.items():
        for pool in rungs:
            if pool.provisioning == "spot" and not pool.taints:
                found.append(
                    f"{keys[pool.name]}.taints: {pool.name} is a spot rung of ladder {ladder} with no taint: TPU pods "
                    "Kueue did not admit can take its VMs, which Kueue counts as free and Compute Engine may reclaim "
                    f'at any time; taint it (key: {tpu_catalog.SPOT_LABEL}, value: "true"): Kueue adds the toleration '
                    "to what it admits there"
                )
    return found


def queue_refs(queues: QueuesConfig) -> dict[str, QueueRef]:
    """Team -> its queues; without teams one entry, `default`, for the single queue."""
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


def queue_namespaces(queues: QueuesConfig) -> list[str]:
    """Namespaces the batch-scheduling component creates (`default` always exists)."""
    return sorted({ref.namespace for ref in queue_refs(queues).values()} - {"default"})


def controller_resources(nodes: int) -> dict[str, dict[str, str]]:
    """Requests and limits of the Kueue and JobSet controllers, by the most nodes the cluster can have:
    their caches hold every node, pod and workload."""
    cpu, mebibytes = (500, 512) if nodes <= 64 else (1000, 1024) if nodes <= 512 else (2000, 2048)
    return {
        "requests": {"cpu": _cpu(cpu), "memory": _memory(mebibytes)},
        "limits": {"cpu": _cpu(2 * cpu), "memory": _memory(2 * mebibytes)},
    }


def queue_problems(
    queues: QueuesConfig,
    pools: tuple[TpuPoolConfig, ...],
    *,
    autopilot: bool,
    serving_pools: Mapping[str, str],
    serving_namespaces: Collection[str],
) -> list[str]:
    """Problems of `tpu-stack:queues` over the pool groups it shares (`pools`); the serving pools and namespaces
    (Saxml's, vLLM's) are not the queues' to use."""
    key = f"{PROJECT}:queues"
    problems: list[str] = []
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
    names = [pool.name for pool in pools]
    # Pool problems are reported on their own keys (Autopilot capacity's just above, without the zone: Autopilot
    # places a slice itself); derived values need valid, distinct pools.
    invalid = problems if autopilot else [pool for pool in pools if pool.problems()]
    if invalid or len(set(names)) < len(names):
        return problems
    if not queues.teams and queues.namespace in RESERVED_NAMESPACES:
        problems.append(f"{key}.namespace: {queues.namespace!r} belongs to the system; use default or your own")
    ladders = _ladder_problems(queues, pools, serving_pools)
    problems += ladders or _shape_problems(queues, pools, autopilot=autopilot) + _rung_problems(
        queues, pools, autopilot=autopilot
    )
    problems += [] if ladders or autopilot else ladder_cost_problems(queues, pools)
    problems += _flavor_problems(queues, pools, serving_pools)
    problems += host_resource_problems(queues, pools, autopilot=autopilot)
    problems += _placement_problems(queues, pools, serving_pools, autopilot=autopilot)
    problems += _priority_problems(queues)
    reserved = set(RESERVED_NAMESPACES) | set(serving_namespaces)
    problems += _team_problems(queues, pools, serving_pools, reserved)
    return problems


def _shape(pool: TpuPoolConfig) -> str:
    return f"{pool.machine.name} {pool.slice_topology}"


def _told_apart(a: TpuPoolConfig, b: TpuPoolConfig) -> bool:
    """Kueue matches a workload to a flavor on the node labels that flavor has, ignoring the workload's other
    selectors (kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go, flavorSelector): only a label both
    flavors carry, with different values, keeps a workload of one off the other."""
    labels_a, labels_b = flavor_labels(a), flavor_labels(b)
    return any(key in labels_b and labels_b[key] != value for key, value in labels_a.items())


def _taints(pool: TpuPoolConfig) -> set[tuple[str, str, str]]:
    return {(taint.key, taint.value, taint.effect) for taint in pool.node_taints}


def _reaches(a: TpuPoolConfig, b: TpuPoolConfig) -> bool:
    """A pod Kueue admits on `a` (its flavor's labels and tolerations added) also fits the nodes of `b`."""
    return flavor_labels(a).items() <= flavor_labels(b).items() and _taints(b) <= _taints(a)


def _shape_problems(queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...], *, autopilot: bool) -> list[str]:
    """Pool groups of one shape: all rungs of one ladder, or (in no ladder) told apart by a node label. A ladder's
    workloads ask only for the shape, so Kueue could admit them on any flavor of that shape (valid ladders only)."""
    key = f"{PROJECT}:queues"
    problems: list[str] = []
    places = rung_places(queues)
    shapes: dict[tuple[str, str], list[TpuPoolConfig]] = {}
    for pool in pools:
        shapes.setdefault(pool.shape, []).append(pool)
    for group in shapes.values():
        ladders = list(dict.fromkeys(places[pool.name][0] for pool in group if pool.name in places))
        outside = [pool for pool in group if pool.name not in places]
        if len(ladders) > 1:
            problems.append(
                f"{key}.ladders.{ladders[1]}: has the shape of ladder {ladders[0]!r} ({_shape(group[0])}), and "
                "ladders' workloads ask only for the shape, so Kueue could admit a workload of one on the other's "
                "rungs; make them one ladder"
            )
        elif ladders:
            problems += [
                f"{key}.ladders.{ladders[0]}: pool group {pool.name!r} has the ladder's shape ({_shape(pool)}) but is "
                "not one of its rungs, and the ladder's workloads ask only for the shape, so Kueue could admit them "
                "on it out of ladder order; add it to the ladder or give it another shape"
                for pool in outside
            ]
        elif autopilot:  # autopilotCapacity has no labels of its own
            problems += [
                f"{key}.autopilotCapacity: {a.name!r} and {b.name!r} are both {_shape(a)} and no node label tells "
                "them apart, so Kueue could admit a workload of one on the other; make them rungs of one ladder "
                "(queues.ladders) or keep one of them"
                for index, a in enumerate(outside)
                for b in outside[index + 1 :]
                if not _told_apart(a, b)
            ]
        else:
            problems += [
                f"{PROJECT}:tpuPools: pools {a.name!r} and {b.name!r} are both {_shape(a)} and no node label tells "
                "them apart, so Kueue could admit a workload of one on the other; make them rungs of one ladder "
                f"(queues.ladders) or give each a label the other has with another value (labels: {{pool: {a.name}}} "
                f"and {{pool: {b.name}}})"
                for index, a in enumerate(outside)
                for b in outside[index + 1 :]
                if not _told_apart(a, b)
            ]
    return problems


def serving_shape_problems(pools: tuple[TpuPoolConfig, ...], serving_pools: Mapping[str, str]) -> list[str]:
    """A serving pool group (vLLM's or Saxml's: `serving_pools`) and another pool group of its shape must not run
    each other's pods. Serving pods select their pool group's node labels and tolerate its taints, as Kueue's
    admitted pods do their flavor's (`_reaches`): a training job on a serving slice, or a server's group on a
    training slice, would hold capacity the quotas and the replicas count elsewhere."""
    names = [pool.name for pool in pools]
    if any(pool.problems() for pool in pools) or len(set(names)) < len(names):
        return []  # reported on the pools' own keys
    problems = []
    for index, a in enumerate(pools):
        for b in pools[index + 1 :]:
            serving = next((pool for pool in (a, b) if pool.name in serving_pools), None)
            if serving is None or a.shape != b.shape or not (_reaches(a, b) or _reaches(b, a)):
                continue
            problems.append(
                f"{PROJECT}:tpuPools: pools {a.name!r} and {b.name!r} are both {_shape(a)} and can run each other's "
                f"pods, and {serving.name!r} {serving_pools[serving.name]}; give each a label the other has with "
                f"another value (labels: {{pool: {a.name}}} and {{pool: {b.name}}})"
            )
    return problems


def _flavor_problems(
    queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...], serving_pools: Mapping[str, str]
) -> list[str]:
    key = f"{PROJECT}:queues"
    problems: list[str] = []
    names = {pool.name for pool in pools}
    hosts = queues.host_resources
    for name in hosts:
        if name not in names:
            problems.append(f"{key}.hostResources.{name}: {_not_a_queue_pool(name, pools, serving_pools)}")
    missing = sorted(names - set(hosts))
    if hosts and missing:
        problems.append(
            f"{key}.hostResources: missing {', '.join(missing)}; a queue covers cpu and memory for every pool "
            "group or for none"
        )
    if not pools and queues.teams:
        problems.append(f"{key}.teams: there is no TPU capacity to share; add tpuPools (Autopilot: autopilotCapacity)")
    return problems


def _placement_problems(
    queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...], serving_pools: Mapping[str, str], *, autopilot: bool
) -> list[str]:
    """Placed pool groups are multi-host queue pools, and a ladder's rungs are placed all or none: its workloads carry
    one set of annotations, and Kueue refuses a topology request on a flavor without a topology ("Flavor %q does not
    support TopologyAwareScheduling", kueue v0.19.2 pkg/scheduler/flavorassigner/tas_flavorassigner.go
    checkPodSetAndFlavorMatchForTAS)."""
    placement, key = queues.placement, f"{PROJECT}:queues.placement"
    problems: list[str] = []
    if placement.slices == "required" and not placement.blocks:
        problems.append(
            f"{key}.slices: required needs blocks: true; without the block level a node pool is the widest domain, "
            "and every slice has one of its own"
        )
    if not placement.pools:
        return problems
    if autopilot:
        return [*problems, f"{key}.pools: Autopilot has no node pools to place slices on; remove queues.placement"]
    by_name = {pool.name: pool for pool in pools}
    seen: dict[str, int] = {}
    for index, name in enumerate(placement.pools):
        where = f"{key}.pools[{index}]"
        pool = by_name.get(name)
        if name in seen:
            problems.append(f"{where}: {name!r} is already pools[{seen[name]}]")
        elif pool is None:
            problems.append(f"{where}: {_not_a_queue_pool(name, pools, serving_pools)}")
        elif not pool.multi_host:
            problems.append(
                f"{where}: pool group {name!r} is single-host ({pool.slice_topology}, one VM a slice); topology "
                "placement is for slices of several VMs"
            )
        seen.setdefault(name, index)
    for ladder, rungs in ladder_pools(queues, pools).items():
        inside = [rung.name for rung in rungs if rung.name in placement.pools]
        outside = [rung.name for rung in rungs if rung.name not in placement.pools]
        if inside and outside:
            problems.append(
                f"{key}.pools: ladder {ladder!r} has rung {inside[0]!r} placed by topology but not rung "
                f"{outside[0]!r}; its workloads carry one placement request, which Kueue refuses on a flavor without "
                "a topology: list every rung of the ladder or none"
            )
    return problems


def _ladder_problems(
    queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...], serving_pools: Mapping[str, str]
) -> list[str]:
    """Each ladder names pool groups of the queues, one shape, each pool group in one ladder once."""
    key = f"{PROJECT}:queues.ladders"
    by_name = {pool.name: pool for pool in pools}
    problems: list[str] = []
    placed: dict[str, tuple[str, int]] = {}
    for name, rungs in queues.ladders.items():
        where = f"{key}.{name}"
        try:
            kubernetes_name(name)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        if not rungs:
            problems.append(f"{where}: is empty; list its pool groups in the order Kueue should try them")
            continue
        if name in by_name and name not in rungs:
            problems.append(
                f"{where}: is the name of pool group {name!r}, which is not one of its rungs; a ladder may share a "
                "name only with one of its own pool groups (workloads and `tpu-stack submit --pool` take either)"
            )
        first: TpuPoolConfig | None = None
        for index, rung in enumerate(rungs):
            at = f"{where}[{index}]"
            pool = by_name.get(rung)
            if pool is None:
                problems.append(f"{at}: {_not_a_queue_pool(rung, pools, serving_pools)}")
                continue
            if rung in placed:
                ladder, place = placed[rung]
                problems.append(
                    f"{at}: pool group {rung!r} is already rung {place} of ladder {ladder!r}; a pool group has one "
                    "place in the order Kueue tries flavors"
                )
                continue
            placed[rung] = (name, index)
            if first is None:
                first = pool
            elif pool.shape != first.shape:
                problems.append(
                    f"{at}: pool group {rung!r} is {_shape(pool)} but the ladder's first rung {first.name!r} is "
                    f"{_shape(first)}; every rung needs the same machine type and topology"
                )
    return problems


def _rung_problems(queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...], *, autopilot: bool) -> list[str]:
    """Rungs of one ladder (valid ladders only): a pod admitted on one rung stays on that rung's nodes, and every
    rung gives it the same CPU and memory per VM."""
    problems: list[str] = []
    for name, rungs in ladder_pools(queues, pools).items():
        for a in rungs:
            for b in rungs:
                if a is not b and _reaches(a, b):
                    fix = (
                        "autopilotCapacity has no labels of its own: drop one of them from the ladder"
                        if autopilot
                        else f"give {a.name!r} a node label {b.name!r} lacks (labels: {{pool: {a.name}}})"
                    )
                    problems.append(
                        f"{PROJECT}:queues.ladders.{name}: a workload Kueue admits on rung {a.name!r} also fits the "
                        f"nodes of rung {b.name!r} (they carry every label of its flavor and it tolerates their "
                        f"taints), so it could run on capacity counted to {b.name!r}; {fix}"
                    )
        problems += _run_limit_problems(name, rungs)
        hosts = queues.host_resources
        first = rungs[0]
        for pool in rungs[1:]:
            if first.name in hosts and pool.name in hosts and hosts[pool.name] != hosts[first.name]:
                problems.append(
                    f"{PROJECT}:queues.hostResources.{pool.name}: differs from {first.name!r}, the first rung of "
                    f"ladder {name!r}; a ladder's workloads request one amount of CPU and memory per VM on every rung"
                )
    return problems


def _run_limit_problems(name: str, rungs: tuple[TpuPoolConfig, ...]) -> list[str]:
    """A ladder's queued rungs share one maxRunDuration: a workload carries its run limit as one annotation, which
    Kueue copies into the ProvisioningRequest of whichever queued rung admits it (kueue v0.19.2
    pkg/controller/admissionchecks/provisioning/provisioning.go passProvReqParams), and the workload cannot know
    which rung that will be; the shorter of two limits would cut the other rung's runs short."""
    queued = [(index, pool) for index, pool in enumerate(rungs) if pool.provisioning == "queued"]
    if not queued:
        return []
    first_index, first = queued[0]
    return [
        f"{PROJECT}:queues.ladders.{name}[{index}]: queued rung {pool.name!r} has maxRunDuration {_limit(pool)} but "
        f"queued rung {first.name!r} (rung {first_index}) has {_limit(first)}; a workload of the ladder carries one "
        "run limit to whichever queued rung admits it, so give the ladder's queued pool groups the same maxRunDuration"
        for index, pool in queued[1:]
        if pool.max_run_duration_seconds != first.max_run_duration_seconds
    ]


def _limit(pool: TpuPoolConfig) -> str:
    return pool.max_run_duration or "none"


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


def _not_a_queue_pool(name: str, pools: tuple[TpuPoolConfig, ...], serving_pools: Mapping[str, str]) -> str:
    if name in serving_pools:
        return f"pool {name!r} {serving_pools[name]}; it is not Kueue capacity"
    names = ", ".join(pool.name for pool in pools) or "none"
    return f"{name!r} names no TPU pool the queues share; pools: {names}"


def _team_problems(
    queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...], serving_pools: Mapping[str, str], reserved: set[str]
) -> list[str]:
    key = f"{PROJECT}:queues.teams"
    names = {pool.name for pool in pools}
    problems: list[str] = []
    teams: dict[str, int] = {}
    namespaces: dict[str, int] = {}
    held: dict[str, list[tuple[str, int]]] = {pool.name: [] for pool in pools}
    totals = {pool.name: pool.total_chips for pool in pools}
    for index, team in enumerate(queues.teams):
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
                f"{where}.{field}.{name}: {_not_a_queue_pool(name, pools, serving_pools)}"
                for name in values
                if name not in names
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


MADE_ON_REQUEST = ("flex-start", "queued")
"""Provisioning modes whose capacity GKE makes when a workload asks for it and removes after: nothing bills while it
is idle; so does a spot or on-demand group that scales to zero (`scaleToZero`). Every other rung (a reservation, a
calendar window, a fixed spot or on-demand pool) bills whether used or not, so using it costs nothing more."""


def made_on_request(pool: TpuPoolConfig) -> bool:
    return pool.provisioning in MADE_ON_REQUEST or pool.scale_to_zero


def ladder_cost_problems(queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...]) -> list[str]:
    """A ladder is walked first rung first (docs/workloads.md, Capacity ladders): capacity that bills while idle comes
    before capacity made on request, or a workload starts new capacity while paid-for capacity of its shape idles
    (valid ladders of node pools only: Autopilot makes every TPU node on request)."""
    problems = []
    for name, rungs in ladder_pools(queues, pools).items():
        on_request = next((rung for rung in rungs if made_on_request(rung)), None)
        if on_request is None:
            continue
        after = rungs[rungs.index(on_request) + 1 :]
        billed = next((rung for rung in after if not made_on_request(rung)), None)
        if billed is not None:
            order = ", ".join(rung.name for rung in sorted(rungs, key=made_on_request))
            problems.append(
                f"{PROJECT}:queues.ladders.{name}: rung {on_request.name!r} ({on_request.provisioning}, made on "
                f"request) comes before {billed.name!r} ({billed.provisioning}, billed while idle), so workloads "
                f"would start new capacity while paid-for capacity idles; list it as [{order}]"
            )
    return problems


def host_resource_problems(queues: QueuesConfig, pools: tuple[TpuPoolConfig, ...], *, autopilot: bool) -> list[str]:
    """hostResources is what each pod of a TPU VM requests, and Kueue admits by it: more than the VM gives a pod is a
    workload Kueue admits and the scheduler never places. On Standard a TPU pod gets the machine's vCPUs and memory
    less GKE's reservations, its DaemonSets' room and the Cloud Storage FUSE sidecar (TpuPoolConfig
    tpu_container_requests); Autopilot sizes its nodes itself, so there the bound is the machine type's own."""
    key = f"{PROJECT}:queues.hostResources"
    by_name = {pool.name: pool for pool in pools}
    problems = []
    for name, host in queues.host_resources.items():
        pool = by_name.get(name)
        if pool is None:
            continue  # reported as naming no pool group
        machine = pool.machine
        if autopilot:
            limits = (machine.vcpus * 1000, machine.memory_gib * 1024)
            room = f"a {machine.name} VM has {{}}"
        else:
            limits = (pool.tpu_container_cpu_millicores, pool.tpu_container_memory_mib)
            room = (
                f"by the stack's estimate a TPU pod on a {machine.name} VM ({machine.vcpus} vCPUs, "
                f"{machine.memory_gib} GiB) can request at most {{}}: what GKE's node reservations leave, less the "
                "room the stack keeps for GKE's DaemonSets and the Cloud Storage FUSE sidecar (docs/workloads.md)"
            )
        if host.millicores > limits[0]:
            most = f"{machine.vcpus} vCPUs" if autopilot else f"{limits[0] / 1000:g} cores"
            problems.append(f"{key}.{name}.cpu: {host.cpu:g} cores per VM, but {room.format(most)}; lower it")
        if host.mebibytes > limits[1]:
            most = f"{machine.memory_gib} GiB" if autopilot else _memory(limits[1])
            problems.append(f"{key}.{name}.memory: {host.memory} per VM, but {room.format(most)}; lower it")
    return problems
