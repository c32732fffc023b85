"""The catalog against Google's xpk system characteristics (vendor/data/tpu_catalog_xpk.json) and the GKE docs."""

from __future__ import annotations

import json

import pytest

from components import tpu_catalog
from offline.vendor import VENDOR

XPK = VENDOR / "data" / "tpu_catalog_xpk.json"


def xpk_records() -> list[dict[str, object]]:
    data = json.loads(XPK.read_text())
    return [dict(zip(data["fields"], record, strict=True)) for record in data["records"]]


def test_every_xpk_record_of_a_covered_machine_type_agrees() -> None:
    covered = 0
    for record in xpk_records():
        machine = tpu_catalog.machine_type(str(record["machine_type"]))
        if machine is None:
            continue
        covered += 1
        topology = str(record["topology"])
        where = f"{record['machine_type']} {topology}"
        assert machine.version.accelerator == record["accelerator_label"], where
        assert machine.chips_per_vm == record["chips_per_vm"], where
        assert machine.is_valid_topology(topology), where
        assert machine.chips(topology) == record["chips"], where
        assert machine.vms(topology) == record["vms"], where
    assert covered > 1600  # all of v4, v5e, v5p, v6e, tpu7x in the file


def test_catalog_topologies_of_3d_versions_are_exactly_xpks() -> None:
    """No invented shapes: for 3-D machine types the catalog's list equals xpk's list."""
    records = xpk_records()
    for name in ("ct4p-hightpu-4t", "ct5p-hightpu-4t", "tpu7x-standard-4t"):
        xpk = {str(r["topology"]) for r in records if r["machine_type"] == name}
        machine = tpu_catalog.machine_type(name)
        assert machine is not None
        assert set(machine.valid_topologies()) == xpk, name


@pytest.mark.parametrize(
    ("machine_type", "topology", "chips", "vms"),
    [
        ("ct5lp-hightpu-4t", "2x2", 4, 1),  # single-host, which xpk omits
        ("ct5lp-hightpu-8t", "2x4", 8, 1),
        ("ct5lp-hightpu-1t", "1x1", 1, 1),
        ("ct6e-standard-8t", "2x4", 8, 1),
        ("ct5lp-hightpu-4t", "4x8", 32, 8),  # the Saxml seed slice
        ("ct6e-standard-4t", "4x4", 16, 4),  # the flex-start seed slice
    ],
)
def test_single_and_multi_host_shapes(machine_type: str, topology: str, chips: int, vms: int) -> None:
    machine = tpu_catalog.machine_type(machine_type)
    assert machine is not None
    assert machine.is_valid_topology(topology)
    assert (machine.chips(topology), machine.vms(topology)) == (chips, vms)


@pytest.mark.parametrize(
    ("machine_type", "topology"),
    [
        ("ct6e-standard-4t", "4x5"),
        ("ct6e-standard-4t", "2x2x2"),
        ("ct5p-hightpu-4t", "8x4x4"),
        ("ct4p-hightpu-4t", "2x2"),
        ("ct5p-hightpu-4t", "4x4"),  # v5p slices are 3-D
        ("ct5p-hightpu-4t", "4x4x6"),  # beyond 2x4x4, every axis a multiple of 4
        ("ct5p-hightpu-4t", "4x4x0"),
        ("ct6e-standard-4t", "ax2"),
        ("ct6e-standard-4t", "2x2x2x2"),
    ],
)
def test_invalid_topologies(machine_type: str, topology: str) -> None:
    machine = tpu_catalog.machine_type(machine_type)
    assert machine is not None and not machine.is_valid_topology(topology)


@pytest.mark.parametrize("topology", ["4x4x0", "ax2", "2x2x2x2", "4x"])
def test_a_malformed_topology_has_no_chip_count(topology: str) -> None:
    machine = tpu_catalog.machine_type("ct6e-standard-4t")
    assert machine is not None
    with pytest.raises(ValueError, match=f"not a topology: '{topology}'"):
        machine.chips(topology)


def test_model_sizing_rule_of_the_saxml_seed() -> None:
    # 175B parameters -> 350 GB -> 22 v5e chips -> the smallest v5e slice that fits is 4x8 (32 chips).
    assert tpu_catalog.smallest_topology_for_model(175, "v5e") == ("ct5lp-hightpu-4t", "4x8")
    # 8B -> 16 GB -> one v6e chip (32 GB); the smallest 4-chip machine slice is 2x2.
    assert tpu_catalog.smallest_topology_for_model(8, "v6e") == ("ct6e-standard-4t", "2x2")
    assert tpu_catalog.smallest_topology_for_model(10_000, "v5e") is None
    # 64B -> 128 GB -> exactly 8 v5e chips: a 2x4 slice holds it, no need for 4x4.
    assert tpu_catalog.smallest_topology_for_model(64, "v5e") == ("ct5lp-hightpu-4t", "2x4")


# vCPUs and memory (GiB) per VM as the TPU pages publish them (sources in components/tpu_catalog.py).
HOST_SHAPES = [
    ("ct5lp-hightpu-1t", 24, 48),  # v5e page, "VM types"
    ("ct5lp-hightpu-4t", 112, 192),
    ("ct5lp-hightpu-8t", 224, 384),
    ("ct6e-standard-1t", 44, 176),  # v6e page, "VM types"
    ("ct6e-standard-4t", 180, 720),
    ("ct6e-standard-8t", 180, 1440),
    ("ct5p-hightpu-4t", 208, 448),
    ("tpu7x-standard-1t", 56, 240),
    ("tpu7x-standard-4t", 224, 960),
    ("ct4p-hightpu-4t", 240, 407),
]


@pytest.mark.parametrize(("machine_type", "vcpus", "memory_gib"), HOST_SHAPES)
def test_machine_types_carry_the_published_vcpus_and_memory(machine_type: str, vcpus: int, memory_gib: int) -> None:
    machine = tpu_catalog.machine_type(machine_type)
    assert machine is not None
    assert (machine.vcpus, machine.memory_gib) == (vcpus, memory_gib)


def test_every_machine_type_has_its_host_shape() -> None:
    assert {name for name, _, _ in HOST_SHAPES} == set(tpu_catalog.MACHINE_TYPES)
