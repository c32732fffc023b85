"""Stack configs as a platform team writes them: hypothesis strategies for `Pulumi.<stack>.yaml`'s `config:`.

Everything here is written from what the user is told (docs/config.md, docs/workloads.md, docs/serving.md,
docs/multiregion.md, docs/policies.md), never by asking the program which configs it accepts: a config drawn here
that the program refuses is a bug of this file or of the program, and each one found was investigated (the tests
that came out of it are ordinary tests beside the code they concern: docs/development.md, *Properties*).

- Shapes: the TPU slices of Google's xpk tool (vendor/data/tpu_catalog_xpk.json, its records for the versions the
  config names), and the single-host machine types xpk leaves out (GKE's TPU pages: ct5lp-hightpu-1t 1x1,
  ct5lp-hightpu-4t 2x2 on one VM, ct5lp-hightpu-8t and ct6e-standard-8t 2x4 on one VM).
- Zones: where Cloud TPU offers each version (https://docs.cloud.google.com/tpu/docs/regions-zones); flex-start
  and queued pool groups in a zone GKE's flex-start page names for the version
  (https://cloud.google.com/kubernetes-engine/docs/concepts/dws: TPU v3 and v4 not supported); the clusters are
  regional, so only groups scaled from zero (flex-start, queued, scaleToZero) and single-host may leave out the zone.
- Provisioning: the five modes; TPU7x from reservations (a block of one), flex-start, queued provisioning and spot;
  calendar mode for v5e, v5p and v6e with the chip counts Compute takes; on-demand and spot groups that scale to
  zero (`scaleToZero`, docs/config.md), which a ladder tries after capacity billed while idle.
- Queues: ladders of one shape, cheapest first (billed while idle before made on request), each pool group in at
  most one; pool groups of one shape outside a ladder, and rungs, told apart by a `pool` label; teams' shares
  within each pool group's chips; placement of multi-host groups (whole ladders), blocks only on reservation blocks.
- Serving: Saxml on a v4 or v5e group, vLLM on v5e or v6e groups, neither on queued capacity, the model within a
  slice's HBM; serving groups are not Kueue capacity.
- MultiKueue: a manager with no pool groups of its own and workers in regions of their own.
- Protected stacks (prod): deletion protection on, no IP endpoint, images the policy config has not reviewed
  pinned by digest (docs/policies.md), the channels alerts notify.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
XPK_CATALOG = REPO / "vendor" / "data" / "tpu_catalog_xpk.json"
VERSIONS = ("v4", "v5e", "v5p", "v6e", "tpu7x")
MAX_CHIPS = 256
"""Largest slice drawn: bigger ones only make each run longer, not different."""
PROJECT = "tpu-stack-props"

TPU_ZONES: dict[str, dict[str, tuple[str, ...]]] = {
    "us-central1": {
        "v5e": ("us-central1-a",),
        "v5p": ("us-central1-a",),
        "v6e": ("us-central1-b",),
        "tpu7x": ("us-central1-c",),
    },
    "us-east5": {"v5p": ("us-east5-a",), "v6e": ("us-east5-a", "us-east5-b")},
    "us-central2": {"v4": ("us-central2-b",)},
    "europe-west4": {"v6e": ("europe-west4-a",)},
    "us-west4": {"v5e": ("us-west4-a",)},
}
"""Region -> TPU version -> zones where Cloud TPU offers it (https://docs.cloud.google.com/tpu/docs/regions-zones)."""
FLEX_START_ZONES = {
    "v5e": ("us-west4-a",),
    "v5p": ("us-east5-a",),
    "v6e": ("us-east5-a", "us-east5-b"),
    "tpu7x": ("us-central1-c",),
}
"""TPU version -> the zones that give it by flex-start (and queued provisioning, which runs on flex-start capacity):
GKE's flex-start page (https://cloud.google.com/kubernetes-engine/docs/concepts/dws, requirements) for v5e, v5p and
v6e; TPU7x in its one zone of the regions page, where Cluster Toolkit's flex-start TPU7x example puts it
(GoogleCloudPlatform/cluster-toolkit examples/gke-consumption-options/dws-flex-start/gke-tpu-7x)."""

PROTECTED_MONITORING = {"notificationChannels": [f"projects/{PROJECT}/notificationChannels/4518223379601234567"]}
"""A protected stack's alerts must notify someone (the config refuses one without a channel); the id is the team's."""

HBM_GB = {"v4": 32, "v5e": 16, "v5p": 95, "v6e": 32, "tpu7x": 192}
"""HBM per chip, from each version's Cloud TPU page."""
CALENDAR_CHIPS = {
    "v5e": (1, 4, 8, 16, 32, 64, 128, 256),
    "v5p": (4, 8, 16, 32, 64, 128, 256, 512, 1024),
    "v6e": (1, 4, 8, 16, 32, 64, 128, 256),
}
"""Chips one calendar-mode request may ask for (docs/config.md futureReservation); v5e 1, 4 and 8 only for SERVING."""
MADE_ON_REQUEST = ("flex-start", "queued")
"""Capacity GKE makes when a workload asks and removes after (so is a `scaleToZero` group's): a ladder tries it after
capacity billed while idle."""
SPOT_TAINT = {"key": "cloud.google.com/gke-spot", "value": "true"}

POOL_NAMES = ("train", "burst", "flex", "spot", "serve", "infer", "batch", "small", "big", "fast", "cheap", "edge")
TEAM_NAMES = ("research", "training", "evaluation", "platform")
SERVER_NAMES = ("chat", "code", "embed", "summarize")
WORKER_REGIONS = ("us-east5", "europe-west4", "us-west4", "us-central2")
SOURCE_RANGES = ["10.20.0.0/24"]
DIGEST = "sha256:" + "0123456789abcdef" * 4
"""A digest a protected stack pins an unreviewed image with (its value is the team's to look up)."""


@dataclass(frozen=True)
class Shape:
    """One TPU slice shape: a machine type and topology, its chips and VMs."""

    version: str
    machine: str
    chips_per_vm: int
    topology: str
    chips: int
    vms: int

    @property
    def multi_host(self) -> bool:
        return self.vms > 1

    @property
    def key(self) -> tuple[str, str]:
        """What a workload asks for: pool groups of one key serve the same pods."""
        return (self.machine, self.topology)


SINGLE_HOST = (
    Shape("v5e", "ct5lp-hightpu-1t", 1, "1x1", 1, 1),
    Shape("v5e", "ct5lp-hightpu-4t", 4, "2x2", 4, 1),
    Shape("v5e", "ct5lp-hightpu-8t", 8, "2x4", 8, 1),
    Shape("v6e", "ct6e-standard-8t", 8, "2x4", 8, 1),
)
"""Single-host machine types xpk's catalog leaves out (GKE's TPU v5e and v6e pages)."""
FOUR_CHIP = {
    "v4": "ct4p-hightpu-4t",
    "v5e": "ct5lp-hightpu-4t",
    "v5p": "ct5p-hightpu-4t",
    "v6e": "ct6e-standard-4t",
    "tpu7x": "tpu7x-standard-4t",
}
"""The machine type `tpuVersion` stands for (docs/config.md: "that version's 4-chip machine type")."""


@cache
def shapes() -> dict[str, tuple[Shape, ...]]:
    """TPU version -> its slice shapes up to MAX_CHIPS chips, smallest first."""
    data = json.loads(XPK_CATALOG.read_text())
    found: dict[str, list[Shape]] = {version: [] for version in VERSIONS}
    for version, _label, machine, per_vm, topology, chips, vms in data["records"]:
        if version in found and chips <= MAX_CHIPS:
            found[version].append(Shape(version, machine, per_vm, topology, chips, vms))
    for shape in SINGLE_HOST:
        found[shape.version].append(shape)
    return {version: tuple(sorted(s, key=lambda s: (s.chips, s.machine, s.topology))) for version, s in found.items()}


def single_host_topology(shape: Shape) -> bool:
    """Whether `topology` may be left out: the machine type's one-VM shape is its default."""
    return shape.vms == 1


# ---- pool groups ------------------------------------------------------------------------------------------------


@dataclass
class Pool:
    """A pool group as drawn, with what the rest of the config needs to know about it; `entry` is its YAML."""

    name: str
    shape: Shape
    provisioning: str
    entry: dict[str, Any]

    @property
    def chips(self) -> int:
        return self.shape.chips * int(self.entry.get("slices", 1))

    @property
    def calendar(self) -> bool:
        return "futureReservation" in self.entry

    @property
    def on_request(self) -> bool:
        """Capacity made when a workload asks and removed after: nothing bills while idle (docs/workloads.md,
        Capacity ladders: a ladder tries it after the rungs billed while idle)."""
        return self.provisioning in MADE_ON_REQUEST or bool(self.entry.get("scaleToZero"))

    @property
    def placeable(self) -> bool:
        """Kueue's topology-aware scheduling places pods on nodes that exist (or that a ProvisioningRequest brings
        up first: queued): a multi-host group that scales from zero without one (flex-start, calendar mode,
        scaleToZero) has no nodes to place on (Kueue v0.19.2 site concepts/topology_aware_scheduling)."""
        from_zero = self.provisioning == "flex-start" or self.calendar or bool(self.entry.get("scaleToZero"))
        return self.shape.multi_host and (self.provisioning == "queued" or not from_zero)

    @property
    def reservation_block(self) -> bool:
        return "/reservationBlocks/" in str(self.entry.get("reservation", ""))


def _today() -> datetime:
    return datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


@st.composite
def pool_groups(
    draw: st.DrawFn,
    *,
    region: str,
    names: Sequence[str],
    max_slices: int,
    project: str = PROJECT,
    versions: Sequence[str] = VERSIONS,
) -> list[Pool]:
    """Pool groups named `names`, each of a TPU version of `versions` offered in `region`."""
    offered = TPU_ZONES[region]
    pools = []
    for name in names:
        version = draw(st.sampled_from(sorted(v for v in offered if v in versions)))
        shape = draw(st.sampled_from(shapes()[version]))
        pools.append(draw(pool_group(name, shape, offered[version], max_slices=max_slices, project=project)))
    return pools


@st.composite
def pool_group(
    draw: st.DrawFn, name: str, shape: Shape, zones: Sequence[str], *, max_slices: int, project: str
) -> Pool:
    modes = ["reservation", "spot"] if shape.version == "tpu7x" else ["on-demand", "spot", "reservation"]
    flex_zones = [zone for zone in FLEX_START_ZONES.get(shape.version, ()) if zone in zones]
    if flex_zones:
        modes += ["flex-start", "queued"]
    provisioning = draw(st.sampled_from(modes))
    entry: dict[str, Any] = {"name": name}
    if shape.machine == FOUR_CHIP[shape.version] and draw(st.booleans()):
        entry["tpuVersion"] = shape.version
    else:
        entry["machineType"] = shape.machine
    if not (single_host_topology(shape) and draw(st.booleans())):
        entry["topology"] = shape.topology
    entry["slices"] = draw(st.integers(1, max_slices))
    if provisioning != "on-demand" or draw(st.booleans()):
        entry["provisioning"] = provisioning
    if provisioning in ("on-demand", "spot") and draw(st.integers(0, 3)) == 3:
        entry["scaleToZero"] = True
    # A group of fixed size in a regional cluster names its zone (GKE counts its nodes per zone); one scaled from zero
    # may leave it to the zones of the region that offer its TPU (docs/config.md, zone).
    zone_needed = shape.multi_host or not (provisioning in MADE_ON_REQUEST or entry.get("scaleToZero"))
    if provisioning == "reservation":
        zone_needed |= _reservation(draw, entry, shape, project)
    if zone_needed or draw(st.booleans()):
        entry["zone"] = draw(st.sampled_from(flex_zones if provisioning in MADE_ON_REQUEST else zones))
    if provisioning in MADE_ON_REQUEST and draw(st.booleans()):
        entry["maxRunDuration"] = draw(st.sampled_from(("24h", "7d", "3600s", "1h30m", "2d")))
    elif provisioning == "spot" and draw(st.integers(0, 3)) == 3:
        entry["maxRunDuration"] = "12h"
    if provisioning == "spot" and draw(st.booleans()):
        entry["taints"] = [dict(SPOT_TAINT)]
    elif draw(st.integers(0, 5)) == 5:
        entry["taints"] = [{"key": "example.com/reserved-for", "value": name, "effect": "NO_SCHEDULE"}]
    if draw(st.integers(0, 4)) == 4:
        entry["labels"] = {"example.com/cost-center": "ml-1234"}
    if draw(st.integers(0, 4)) == 4:
        entry["legacyFirstSliceName"] = True
    if draw(st.integers(0, 5)) == 5:
        entry["maxPodsPerNode"] = draw(st.sampled_from((32, 110)))
    return Pool(name, shape, provisioning, entry)


def _reservation(draw: st.DrawFn, entry: dict[str, Any], shape: Shape, project: str) -> bool:
    """A reservation to consume: a block of one for TPU7x, else its name or a calendar-mode request. Returns whether
    the pool must name its zone."""
    if shape.version == "tpu7x":
        entry["reservation"] = (
            f"projects/{project}/reservations/ironwood/reservationBlocks/block-{draw(st.integers(1, 3))}"
        )
        return True
    counts = CALENDAR_CHIPS.get(shape.version, ())
    slices = [n for n in range(1, int(entry["slices"]) + 1) if n * shape.chips in counts]
    if draw(st.booleans()) and slices:
        entry["slices"] = draw(st.sampled_from(slices))
        start = _today() + timedelta(days=draw(st.integers(2, 100)))
        end = start + timedelta(days=draw(st.integers(1, 90)))
        window: dict[str, Any] = {"startTime": start.isoformat(), "endTime": end.isoformat()}
        if shape.version == "v5e" and int(entry["slices"]) * shape.chips < 16:
            window["workloadType"] = "SERVING"
        entry["futureReservation"] = window
        return True
    if draw(st.booleans()):
        entry["reservation"] = f"projects/{project}/reservations/{entry['name']}-res"
    else:
        entry["reservation"] = f"{entry['name']}-res"
    return False


# ---- serving: Saxml and vLLM ------------------------------------------------------------------------------------


def _fits(pool: Pool, versions: Sequence[str]) -> bool:
    return pool.shape.version in versions and pool.provisioning != "queued"


@st.composite
def saxml(draw: st.DrawFn, pool: Pool, *, protected: bool) -> dict[str, Any]:
    """Saxml on `pool` (v4 or v5e): its model within one slice, at about 2 GB of HBM per billion parameters."""
    config: dict[str, Any] = {"pool": pool.name, "service": {"sourceRanges": SOURCE_RANGES}}
    if draw(st.booleans()):
        most = pool.shape.chips * HBM_GB[pool.shape.version] / 2
        billions = draw(st.integers(1, max(1, int(most))))
        config["model"] = {"name": "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd2BTest",
                           "billionsOfParameters": billions}  # fmt: skip
    if protected and draw(st.booleans()):
        config["images"] = {"modelServer": f"us-docker.pkg.dev/cloud-tpu-images/inference/sax-model-server@{DIGEST}"}
    return config


@st.composite
def vllm(draw: st.DrawFn, pools: Sequence[Pool], *, protected: bool) -> dict[str, Any]:
    """vLLM servers on `pools` (v5e or v6e): at most one replica per slice, the weights within 90% of a slice's HBM,
    a Hugging Face download only for one replica on a single-host slice (otherwise weights in the bucket)."""
    servers = []
    names = iter(SERVER_NAMES)
    for pool in pools:
        free = int(pool.entry.get("slices", 1))
        for _ in range(draw(st.integers(1, min(2, free)))):
            replicas = draw(st.integers(1, free - (1 if free > 1 and draw(st.booleans()) else 0)))
            free -= replicas
            name = next(names)
            most = 0.9 * pool.shape.chips * HBM_GB[pool.shape.version] / 2
            server: dict[str, Any] = {
                "name": name,
                "pool": pool.name,
                "billionsOfParameters": draw(st.integers(1, max(1, int(most)))),
                "replicas": replicas,
                "maxModelLen": draw(st.sampled_from((2048, 4096, 8192))),
            }
            if not pool.shape.multi_host and replicas == 1 and draw(st.booleans()):
                server["model"] = draw(st.sampled_from(("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B")))
            else:
                server["modelFolder"] = f"models/{name}"
            if protected:
                server["image"] = f"vllm/vllm-tpu:v0.27.0@{DIGEST}"
            servers.append(server)
            if free == 0:
                break
    config: dict[str, Any] = {"service": {"sourceRanges": SOURCE_RANGES}, "servers": servers}
    if draw(st.booleans()):
        config["huggingFaceToken"] = {"secret": "hf-token"}
    if protected and any(p.shape.multi_host for p in pools):
        config["lwsImageDigest"] = DIGEST  # the LeaderWorkerSet controller, pinned as docs/policies.md asks
    return config


# ---- queues: ladders, placement, teams -----------------------------------------------------------------------------


def _label_alike(pools: Sequence[Pool]) -> None:
    """Pool groups of one shape (rungs of one ladder included) each get a `pool` label of their own: Kueue tells
    flavors apart only by a label both carry with different values (docs/workloads.md)."""
    by_shape: dict[tuple[str, str], list[Pool]] = {}
    for pool in pools:
        by_shape.setdefault(pool.shape.key, []).append(pool)
    for group in by_shape.values():
        if len(group) > 1:
            for pool in group:
                pool.entry["labels"] = {**pool.entry.get("labels", {}), "pool": pool.name}


@st.composite
def ladders(draw: st.DrawFn, pools: Sequence[Pool], *, group_of: Callable[[Pool], object]) -> dict[str, list[str]]:
    """Ladders over queue pool groups of one shape (and one cluster: `group_of`), cheapest first; a shape's groups
    are all rungs of its ladder or none is."""
    by_shape: dict[tuple[object, tuple[str, str]], list[Pool]] = {}
    for pool in pools:
        by_shape.setdefault((group_of(pool), pool.shape.key), []).append(pool)
    found: dict[str, list[str]] = {}
    for group in by_shape.values():
        # Two of three shapes shared by several groups become a ladder; one in six groups of a shape of their own.
        chance = 2 if len(group) > 1 else 5
        if (draw(st.integers(0, chance)) != 0) != (len(group) > 1):
            continue
        billed = [p for p in group if not p.on_request]
        on_request = [p for p in group if p.on_request]
        rungs = draw(st.permutations(billed)) + draw(st.permutations(on_request))
        queued = [p for p in rungs if p.provisioning == "queued"]
        for pool in queued[1:]:  # one run limit travels with a ladder's workloads to any queued rung
            pool.entry.pop("maxRunDuration", None)
            if "maxRunDuration" in queued[0].entry:
                pool.entry["maxRunDuration"] = queued[0].entry["maxRunDuration"]
        name = rungs[0].name if draw(st.booleans()) else f"ladder-{len(found)}"
        found[name] = [p.name for p in rungs]
    return found


def _placeable(pools: Sequence[Pool], ladder: dict[str, list[str]]) -> list[list[Pool]]:
    """Units placement may name: a placeable group in no ladder, or a whole ladder of placeable groups."""
    by_name = {p.name: p for p in pools}
    laddered = {name for rungs in ladder.values() for name in rungs}
    units = [[p] for p in pools if p.placeable and p.name not in laddered]
    units += [[by_name[n] for n in rungs] for rungs in ladder.values() if all(by_name[n].placeable for n in rungs)]
    return units


@st.composite
def placement(draw: st.DrawFn, pools: Sequence[Pool], ladder: dict[str, list[str]]) -> dict[str, Any] | None:
    units = _placeable(pools, ladder)
    if not units or draw(st.booleans()):
        return None
    chosen = draw(st.lists(st.sampled_from(units), min_size=1, max_size=len(units), unique_by=lambda u: u[0].name))
    placed = [p for unit in chosen for p in unit]
    config: dict[str, Any] = {"pools": [p.name for p in placed]}
    if all(p.reservation_block for p in placed) and draw(st.booleans()):
        config["blocks"] = True
        config["slices"] = draw(st.sampled_from(("required", "preferred")))
    return config


def _share_text(draw: st.DrawFn, chips: int, total: int) -> int | str:
    """Chips, or the same chips as a percentage of the pool group where that is exact."""
    percent = chips * 100 // total
    if chips * 100 % total == 0 and draw(st.booleans()):
        return f"{percent}%"
    return chips


@st.composite
def teams(draw: st.DrawFn, pools: Sequence[Pool]) -> list[dict[str, Any]]:
    """Teams sharing the queue pool groups: shares within each group's chips, borrowing limits where drawn."""
    names = draw(st.lists(st.sampled_from(TEAM_NAMES), min_size=1, max_size=3, unique=True))
    found: list[dict[str, Any]] = [{"name": name} for name in names]
    for pool in pools:
        left = pool.chips
        for team in draw(st.permutations(found)):
            chips = draw(st.integers(0, left))
            left -= chips
            if chips or draw(st.integers(0, 3)) == 3:
                team.setdefault("shares", {})[pool.name] = _share_text(draw, chips, pool.chips)
            if draw(st.integers(0, 3)) == 3:
                limit = draw(st.integers(0, pool.chips))
                team.setdefault("borrowingLimit", {})[pool.name] = _share_text(draw, limit, pool.chips)
    for team in found:
        if draw(st.integers(0, 4)) == 4:
            team["namespace"] = f"ns-{team['name']}"
    return found


@st.composite
def host_resources(draw: st.DrawFn, pools: Sequence[Pool], ladder: dict[str, list[str]]) -> dict[str, Any]:
    """CPU and memory per VM for every queue pool group (a ladder's rungs alike), at most half the VM's: well within
    what GKE leaves a pod (docs/workloads.md gives a ct5lp-hightpu-4t VM's 110.4 cores of 112)."""
    from components.tpu_catalog import MACHINE_TYPES  # the published vCPUs and memory of each machine type

    share = {p.name: draw(st.sampled_from((0.25, 0.5))) for p in pools}
    for rungs in ladder.values():
        for name in rungs:
            share[name] = share[rungs[0]]
    found = {}
    for pool in pools:
        machine = MACHINE_TYPES[pool.shape.machine]
        found[pool.name] = {
            "cpu": int(machine.vcpus * share[pool.name]),
            "memory": f"{int(machine.memory_gib * share[pool.name])}Gi",
        }
    return found


# ---- the whole stack ----------------------------------------------------------------------------------------------


class Drawn:
    """A drawn stack: its name and its config as the stack file's `config:` holds it, with the pool groups (the
    workers' included)."""

    def __init__(self, stack: str, config: dict[str, Any], pools: list[Pool]) -> None:
        self.stack = stack
        self.config = config
        self.pools = pools

    @property
    def protected(self) -> bool:
        return self.stack in ("prod", "production")

    def __repr__(self) -> str:
        """The stack file a failure reproduces with: `Pulumi.<stack>.yaml` as the team would have written it."""
        import yaml

        return f"Pulumi.{self.stack}.yaml:\n" + yaml.safe_dump({"config": self.config}, sort_keys=False)


CHANNEL_MINORS = {
    "RAPID": ("1.33", "1.34", "1.35"),
    "REGULAR": ("1.33",),
    "STABLE": ("1.33",),
    "UNSPECIFIED": ("1.33", "1.34"),
}
"""Floors each channel meets: the mock engine reports Regular and Stable at 1.33 and Rapid at 1.35 (offline/engine.py
cluster_outputs); without a channel the cluster is created at the minor given. A floor above the channel's version
stops `pulumi up` (docs/config.md, cluster.minMasterVersion), which is what a team sees, not a config it keeps."""


@st.composite
def cluster(draw: st.DrawFn, *, name: str, protected: bool, ironwood: bool) -> dict[str, Any]:
    channel = draw(st.sampled_from(("RAPID", "UNSPECIFIED") if ironwood else tuple(CHANNEL_MINORS)))
    version = "1.34.0-gke.2201000" if ironwood else draw(st.sampled_from(CHANNEL_MINORS[channel]))
    config: dict[str, Any] = {"name": name, "releaseChannel": channel, "minMasterVersion": version}
    if protected:
        config["deletionProtection"] = True
    if draw(st.booleans()):
        config["maintenance"] = {
            "recurringWindow": {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T08:00:00Z",
                                "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}}  # fmt: skip
        if draw(st.booleans()):
            start = _today() + timedelta(days=10)
            config["maintenance"]["exclusions"] = [
                {
                    "name": "campaign",
                    "startTime": start.isoformat(),
                    "endTime": (start + timedelta(days=60)).isoformat(),
                }
            ]
    if draw(st.booleans()):
        config["systemPool"] = draw(st.sampled_from((
            {"machineType": "e2-standard-4", "minNodes": 1, "maxNodes": 3},
            {"machineType": "e2-standard-8", "minNodes": 4, "maxNodes": 8},
        )))  # fmt: skip
    if not protected and draw(st.integers(0, 4)) == 4:
        config["controlPlane"] = {"ipEndpoint": True, "authorizedNetworks": ["203.0.113.0/24"]}
    return config


def _upgrades(draw: st.DrawFn, pools: Sequence[Pool], channel: str) -> None:
    """Node auto-upgrade may be turned off only without a release channel."""
    for pool in pools:
        if draw(st.integers(0, 4)) == 4:
            pool.entry["autoUpgrade"] = draw(st.booleans()) if channel == "UNSPECIFIED" else True


@st.composite
def stacks(
    draw: st.DrawFn,
    *,
    max_pools: int = 4,
    max_slices: int = 3,
    stack: str | None = None,
    versions: Sequence[str] = VERSIONS,
) -> Drawn:
    """A whole stack: one cluster with its pool groups, or a MultiKueue manager with workers; `versions`: only pool
    groups of these TPU versions (in one cluster, in a region that offers them all)."""
    name = stack or draw(st.sampled_from(("dev", "staging", "prod")))
    protected = name in ("prod", "production")
    if versions == VERSIONS and draw(st.integers(0, 5)) == 5:
        return draw(multikueue_stacks(name, max_slices=max_slices))
    regions = [r for r in ("us-central1", "us-central1", "us-east5", "us-west4", "us-central2")
               if set(versions) & set(TPU_ZONES[r])]  # fmt: skip
    region = draw(st.sampled_from(regions))
    count = draw(st.integers(1, max_pools))
    names = draw(st.lists(st.sampled_from(POOL_NAMES), min_size=count, max_size=count, unique=True))
    pools = draw(pool_groups(region=region, names=names, max_slices=max_slices, versions=versions))
    config: dict[str, Any] = {"gcp:project": PROJECT, "gcp:region": region, "tpu-stack:labels": {"team": "ml-platform"}}
    if not protected and draw(st.booleans()):
        config["tpu-stack:throwaway"] = True
    ironwood = any(p.shape.version == "tpu7x" for p in pools)
    config["tpu-stack:cluster"] = draw(cluster(name=f"tpu-{name}", protected=protected, ironwood=ironwood))
    if protected:
        config["tpu-stack:monitoring"] = PROTECTED_MONITORING
    _upgrades(draw, pools, config["tpu-stack:cluster"]["releaseChannel"])
    serving: set[str] = set()
    saxml_pools = [p for p in pools if _fits(p, ("v4", "v5e"))]
    if saxml_pools and draw(st.integers(0, 3)) == 3:
        pool = draw(st.sampled_from(saxml_pools))
        config["tpu-stack:saxml"] = draw(saxml(pool, protected=protected))
        serving.add(pool.name)
    vllm_pools = [p for p in pools if _fits(p, ("v5e", "v6e")) and p.name not in serving]
    if vllm_pools and draw(st.integers(0, 3)) == 3:
        chosen = draw(st.lists(st.sampled_from(vllm_pools), min_size=1, max_size=2, unique_by=lambda p: p.name))
        config["tpu-stack:serving"] = draw(vllm(chosen, protected=protected))
        serving |= {p.name for p in chosen}
    _label_alike(pools)
    queue_pools = [p for p in pools if p.name not in serving]
    if len(queue_pools) > 1 and draw(st.integers(0, 7)) == 7:  # a group being drained before its removal
        drained = draw(st.sampled_from(queue_pools))
        drained.entry["drain"] = True
        queue_pools.remove(drained)
    config["tpu-stack:queues"] = draw(queues(queue_pools, group_of=lambda _pool: None, placed=True))
    config["tpu-stack:tpuPools"] = [p.entry for p in pools]
    config["tpu-stack:bucket"] = draw(bucket(config["tpu-stack:queues"]))
    config.update(monitoring(protected))
    return Drawn(name, config, pools)


@st.composite
def queues(
    draw: st.DrawFn, pools: Sequence[Pool], *, group_of: Callable[[Pool], object], placed: bool
) -> dict[str, Any]:
    config: dict[str, Any] = {}
    ladder = draw(ladders(pools, group_of=group_of))
    if ladder:
        config["ladders"] = ladder
    where = draw(placement(pools, ladder)) if placed else None
    if where:
        config["placement"] = where
    if not draw(st.booleans()) and pools:  # teams in the simplest configs drawn first
        config["teams"] = draw(teams(pools))
    elif draw(st.integers(0, 3)) == 3:
        config.update({"clusterQueue": "tpu-queue", "localQueue": "jobs", "namespace": "batch"})
    if pools and draw(st.integers(0, 4)) == 4:
        config["hostResources"] = draw(host_resources(pools, ladder))
    return config


@st.composite
def bucket(draw: st.DrawFn, queues_config: dict[str, Any]) -> dict[str, Any]:
    """Readers and writers in namespaces the stack has: `default`, or a team's."""
    namespaces = ["default"] + [t.get("namespace", t["name"]) for t in queues_config.get("teams", [])]
    if queues_config.get("namespace") not in (None, "default") and "teams" not in queues_config:
        namespaces.append(queues_config["namespace"])
    config: dict[str, Any] = {}
    for role in ("writers", "readers"):
        if draw(st.booleans()):
            continue
        chosen = draw(st.lists(st.sampled_from(namespaces), min_size=1, max_size=2, unique=True))
        config[role] = [
            {"namespace": ns, "serviceAccount": role[:-1], **(
                {"identity": "iamServiceAccount"} if draw(st.integers(0, 3)) == 3 else {})}
            for ns in chosen
        ]  # fmt: skip
    return config


@st.composite
def multikueue_stacks(draw: st.DrawFn, name: str, *, max_slices: int) -> Drawn:
    """A MultiKueue manager in us-central1 with one or two workers, each in a region of its own with its own pool
    groups; ladders keep to one worker; the teams share every worker's groups."""
    protected = name in ("prod", "production")
    regions = draw(st.lists(st.sampled_from(WORKER_REGIONS), min_size=1, max_size=2, unique=True))
    names = iter(draw(st.permutations(POOL_NAMES)))
    workers, every_pool, owner = [], [], {}
    for index, region in enumerate(regions):
        pools = draw(pool_groups(region=region, names=[next(names) for _ in range(draw(st.integers(1, 2)))],
                                 max_slices=max_slices))  # fmt: skip
        _label_alike(pools)
        for pool in pools:
            owner[pool.name] = index
        every_pool += pools
        workers.append({"name": f"tpu-{name}-w{index}-{region.split('-')[0]}", "region": region,
                        "tpuPools": [p.entry for p in pools]})  # fmt: skip
    config: dict[str, Any] = {"gcp:project": PROJECT, "gcp:region": "us-central1"}
    ironwood = any(p.shape.version == "tpu7x" for p in every_pool)
    config["tpu-stack:cluster"] = draw(cluster(name=f"tpu-{name}", protected=protected, ironwood=ironwood))
    if protected:
        config["tpu-stack:monitoring"] = PROTECTED_MONITORING
    _upgrades(draw, every_pool, config["tpu-stack:cluster"]["releaseChannel"])
    config["tpu-stack:multiKueue"] = {"workers": workers}
    config["tpu-stack:queues"] = draw(queues(every_pool, group_of=lambda pool: owner[pool.name], placed=False))
    config["tpu-stack:bucket"] = draw(bucket(config["tpu-stack:queues"]))
    config.update(monitoring(protected))
    return Drawn(name, config, every_pool)


def monitoring(protected: bool) -> dict[str, Any]:
    """A protected stack names the channels its alerts notify (docs/config.md, monitoring.notificationChannels: the
    config refuses a protected stack without one)."""
    if not protected:
        return {}
    return {"tpu-stack:monitoring": {"notificationChannels": [f"projects/{PROJECT}/notificationChannels/1234567890"]}}
