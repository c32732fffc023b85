"""TPU catalog: which machine types exist, which slice topologies they accept, and what a slice holds.

Pure standard library on purpose: the config model, the components and the policy pack (which runs in its
own virtualenv under the Pulumi CLI) all import it, so node pools, Kueue quotas and policies agree.
Sources: GKE TPU docs and Google's xpk system characteristics (see tests/components/test_tpu_catalog.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
FLEX_START_LABEL = "cloud.google.com/gke-flex-start"
SPOT_LABEL = "cloud.google.com/gke-spot"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
BLOCK_LABEL = "cloud.google.com/gce-topology-block"
"""The reservation block a node's VM is in (https://cloud.google.com/ai-hypercomputer/docs/workloads/
schedule-gke-workloads-tas; Cluster Toolkit and xpk put it at the top of their TPU7x Kueue topologies:
GoogleCloudPlatform/cluster-toolkit v1.95.0 modules/management/kubectl-apply/kueue/
kueue-configuration-dynamic-slicing.yaml.tftpl)."""
HOSTNAME_LABEL = "kubernetes.io/hostname"
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
"""JobSet annotation: each child Job (one slice) gets a node pool of its own, keyed by NODE_POOL_LABEL."""
QUEUED_TAINT = "cloud.google.com/gke-queued"
LADDER_LABEL = "tpu-stack/ladder"
RUNG_LABEL = "tpu-stack/rung"
"""ResourceFlavor labels of a capacity ladder's rung: the ladder's name, the rung's place in it (0 is tried first)."""
TPU_RESOURCE = "google.com/tpu"
ICI_PORT = 8471
"""Port the TPU VMs of a multi-host slice talk to each other on; pods on them expose it."""

# 3-D versions accept these small slices below the 4x4x4 cube; bigger ones use multiples of 4 per axis.
_SMALL_3D = ("2x2x1", "2x2x2", "2x2x4", "2x4x4")
# 2-D (v5e, v6e) slices of the 4-chip machine types.
_TWO_D_4T = ("2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16")
_MAX_AXIS = 256


@dataclass(frozen=True)
class TpuVersion:
    """One TPU generation: the node label GKE puts on its nodes and what a chip holds."""

    name: str
    accelerator: str
    hbm_gb_per_chip: int
    platform_chip: str | None
    """Saxml's --platform_chip name; None where Saxml's model server knows no such chip (its proto_util)."""
    dimensions: int
    max_chips: int
    any_axis_order: bool
    """v4 accepts every permutation of a 3-D shape; v5p and Ironwood only sorted shapes (a <= b <= c)."""


@dataclass(frozen=True)
class MachineType:
    """A TPU VM shape; its topologies define slices of one or more VMs."""

    name: str
    version: TpuVersion
    chips_per_vm: int
    single_host_topology: str
    vcpus: int
    """vCPUs of one VM, as Compute Engine publishes them per TPU machine type (sources at MACHINE_TYPES)."""
    memory_gib: int
    """Memory of one VM. Compute Engine writes machine memory in GB of 2^30 bytes, i.e. GiB."""
    fixed_topologies: tuple[str, ...] = ()
    """Explicit topology list; empty means the version's 3-D rule applies."""
    numa_nodes: int = 1
    """NUMA nodes of one VM. Where there are more than one, a TPU pod runs one container per NUMA node, each with
    that node's share of the chips, CPU and memory (`containers_per_vm`)."""

    @property
    def containers_per_vm(self) -> int:
        """GKE's guidance for Ironwood: a multi-container pod binds each container to the CPU, memory and TPU chips of
        one NUMA node ("NUMA binding", https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood); xpk
        runs 2 containers of chips_per_vm / 2 chips on tpu7x-standard-4t (AI-Hypercomputer/xpk 367c8382
        src/xpk/core/system_characteristics.py parallel_containers=2, src/xpk/core/docker_resources.py)."""
        return self.numa_nodes

    def is_valid_topology(self, topology: str) -> bool:
        dims = _parse(topology)
        if dims is None or len(dims) != self.version.dimensions:
            return False
        if self.fixed_topologies:
            return topology in self.fixed_topologies
        if topology in _SMALL_3D:
            return True
        if any(d % 4 or d > _MAX_AXIS for d in dims) or math.prod(dims) > self.version.max_chips:
            return False
        return self.version.any_axis_order or list(dims) == sorted(dims)

    def chips(self, topology: str) -> int:
        dims = _parse(topology)
        if dims is None:
            raise ValueError(f"not a topology: {topology!r}")
        return math.prod(dims)

    def vms(self, topology: str) -> int:
        return max(1, self.chips(topology) // self.chips_per_vm)

    def valid_topologies(self) -> list[str]:
        """Every valid topology, smallest slice first (long for 3-D versions)."""
        if self.fixed_topologies:
            return list(self.fixed_topologies)
        return _three_d_topologies(self.version)

    def smallest_topology_with(self, chips: int) -> str | None:
        """The smallest slice with at least `chips` chips (ties: the most cube-like shape)."""
        fitting = [t for t in self.valid_topologies() if self.chips(t) >= chips]
        return min(fitting, key=lambda t: (self.chips(t), max(_dims(t)) - min(_dims(t)))) if fitting else None


def _parse(topology: str) -> tuple[int, ...] | None:
    parts = topology.split("x")
    if not all(p.isdigit() and int(p) > 0 for p in parts) or len(parts) not in (2, 3):
        return None
    return tuple(int(p) for p in parts)


def _dims(topology: str) -> tuple[int, ...]:
    dims = _parse(topology)
    assert dims is not None
    return dims


@cache
def _three_d_topologies(version: TpuVersion) -> list[str]:
    shapes = [tuple(int(d) for d in t.split("x")) for t in _SMALL_3D]
    axis = range(4, _MAX_AXIS + 1, 4)
    for a in axis:
        for b in axis:
            for c in axis:
                if a * b * c > version.max_chips:
                    break
                if version.any_axis_order or a <= b <= c:
                    shapes.append((a, b, c))
    shapes.sort(key=lambda s: (math.prod(s), s))
    return ["x".join(str(d) for d in s) for s in shapes]


V4 = TpuVersion("v4", "tpu-v4-podslice", 32, "tpuv4", 3, 4096, any_axis_order=True)
V5E = TpuVersion("v5e", "tpu-v5-lite-podslice", 16, "tpuv5e", 2, 256, any_axis_order=False)
V5P = TpuVersion("v5p", "tpu-v5p-slice", 95, None, 3, 8960, any_axis_order=False)
V6E = TpuVersion("v6e", "tpu-v6e-slice", 32, None, 2, 256, any_axis_order=False)
IRONWOOD = TpuVersion("tpu7x", "tpu7x", 192, None, 3, 9216, any_axis_order=False)

VERSIONS: dict[str, TpuVersion] = {v.name: v for v in (V4, V5E, V5P, V6E, IRONWOOD)}

# vCPUs and memory per VM, from each version's page on cloud.google.com: v4 https://cloud.google.com/tpu/docs/v4,
# v5e https://cloud.google.com/tpu/docs/v5e ("VM types"), v5p https://cloud.google.com/tpu/docs/v5p,
# v6e https://cloud.google.com/tpu/docs/v6e ("VM types"), TPU7x https://cloud.google.com/tpu/docs/tpu7x; Compute
# Engine's https://cloud.google.com/compute/docs/tpus/tpu-machines lists TPU7x, v6e and v5p the same way.
MACHINE_TYPES: dict[str, MachineType] = {
    m.name: m
    for m in (
        MachineType("ct4p-hightpu-4t", V4, 4, "2x2x1", vcpus=240, memory_gib=407),
        MachineType("ct5lp-hightpu-1t", V5E, 1, "1x1", vcpus=24, memory_gib=48, fixed_topologies=("1x1",)),
        MachineType("ct5lp-hightpu-4t", V5E, 4, "2x2", vcpus=112, memory_gib=192, fixed_topologies=_TWO_D_4T),
        MachineType("ct5lp-hightpu-8t", V5E, 8, "2x4", vcpus=224, memory_gib=384, fixed_topologies=("2x4",)),
        MachineType("ct5p-hightpu-4t", V5P, 4, "2x2x1", vcpus=208, memory_gib=448),
        MachineType("ct6e-standard-1t", V6E, 1, "1x1", vcpus=44, memory_gib=176, fixed_topologies=("1x1",)),
        MachineType("ct6e-standard-4t", V6E, 4, "2x2", vcpus=180, memory_gib=720, fixed_topologies=_TWO_D_4T),
        MachineType("ct6e-standard-8t", V6E, 8, "2x4", vcpus=180, memory_gib=1440, fixed_topologies=("2x4",)),
        MachineType("tpu7x-standard-1t", IRONWOOD, 1, "1x1x1", vcpus=56, memory_gib=240, fixed_topologies=("1x1x1",)),
        # "Each Ironwood (TPU7x) virtual machine (VM) contains four chips and two NICs. Each VM contains two ... NUMA
        # nodes" (https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood, NUMA binding).
        MachineType("tpu7x-standard-4t", IRONWOOD, 4, "2x2x1", vcpus=224, memory_gib=960, numa_nodes=2),
    )
}

GKE_DEFAULT_BOOT_DISK_GIB = 100
"""Boot disk of a GKE node whose pool sets no disk size (NodeConfig.diskSizeGb: "If unspecified, the default disk size
is 100GB", GKE API google.container.v1; Compute Engine disk GB are GiB). The TPU pools set none."""

# The multi-host machine type each version defaults to when config names a version instead of a machine type.
DEFAULT_MACHINE_TYPE: dict[str, str] = {
    "v4": "ct4p-hightpu-4t",
    "v5e": "ct5lp-hightpu-4t",
    "v5p": "ct5p-hightpu-4t",
    "v6e": "ct6e-standard-4t",
    "tpu7x": "tpu7x-standard-4t",
}


def machine_type(name: str) -> MachineType | None:
    return MACHINE_TYPES.get(name)


def smallest_topology_for_model(billions_of_parameters: float, version: str) -> tuple[str, str] | None:
    """(machine type, topology) of the smallest slice holding a model of ~2 bytes per parameter.

    Multi-host 4-chip machine types only: serving frameworks like Saxml shard over hosts of 4 chips.
    """
    tpu = VERSIONS[version]
    machine = MACHINE_TYPES[DEFAULT_MACHINE_TYPE[version]]
    chips = math.ceil(2 * billions_of_parameters / tpu.hbm_gb_per_chip)
    topology = machine.smallest_topology_with(chips)
    return (machine.name, topology) if topology else None
