"""TPU availability as data: a pool is refused where its zone cannot give its TPU version by its provisioning kind.

The expected zones are written by hand from the pages the vendored table records (vendor/README.md): the Cloud TPU
regions page (v6e in us-central1-b, us-east1-d, us-east5-a, us-east5-b and europe-west4-a; v5e in us-central1-a,
us-south1-a, us-west1-c, us-west4-a) and GKE's flex-start page (v6e in asia-northeast1-b, us-east5-a, us-east5-b;
v5e in us-west4-a; v5p in us-east5-a; no v4).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components import tpu_catalog
from components.config.base import ConfigError
from components.config.stack import load
from offline.vendor import REPO

V6E_FLEX = "asia-northeast1-b, us-east5-a, us-east5-b"
UNLISTED = " (TPU zone table of 2026-11; for a zone Google opened since, set zoneUnlisted: true)"


def problems(region: str, **extra: Any) -> list[str]:
    try:
        load({"gcp:project": "proj-1234", "gcp:region": region, **extra}, stack="dev")
    except ConfigError as error:
        return error.lines
    return []


def pool(**fields: Any) -> dict[str, Any]:
    return {"name": "p", "machineType": "ct6e-standard-4t", **fields}


REFUSED = [
    # dev's shipped flex-start Trillium pool: v6e exists in us-central1-b, but not for flex-start.
    (
        "us-central1",
        pool(provisioning="flex-start", zone="us-central1-b"),
        "tpu-stack:tpuPools[0].zone: us-central1-b offers no flex-start TPU v6e; flex-start v6e zones: "
        + V6E_FLEX
        + UNLISTED,
    ),
    # dev's shipped multislice pool: v5e 2x4 on flex-start in us-central1-a.
    (
        "us-central1",
        pool(machineType="ct5lp-hightpu-4t", topology="2x4", provisioning="flex-start", zone="us-central1-a"),
        "tpu-stack:tpuPools[0].zone: us-central1-a offers no flex-start TPU v5e; flex-start v5e zones: us-west4-a"
        + UNLISTED,
    ),
    # prod's shipped burst pool: queued provisioning runs on flex-start capacity.
    (
        "us-central1",
        pool(machineType="ct5lp-hightpu-4t", topology="4x4", provisioning="queued", zone="us-central1-a"),
        "tpu-stack:tpuPools[0].zone: us-central1-a offers no queued (flex-start) TPU v5e; flex-start v5e zones: "
        "us-west4-a" + UNLISTED,
    ),
    # A v6e pool in a zone without v6e at all.
    (
        "us-central1",
        pool(zone="us-central1-a"),
        "tpu-stack:tpuPools[0].zone: us-central1-a offers no TPU v6e; v6e zones: asia-northeast1-b, europe-west4-a, "
        "us-central1-b, us-east1-d, us-east5-a, us-east5-b, us-south1-ai1b" + UNLISTED,
    ),
    (
        "us-central1",
        pool(machineType="ct4p-hightpu-4t", topology="2x2x2", provisioning="flex-start", zone="us-central2-b"),
        "tpu-stack:tpuPools[0].zone: 'us-central2-b' is not in gcp:region 'us-central1'",
    ),
    (
        "us-central2",
        pool(machineType="ct4p-hightpu-4t", topology="2x2x2", provisioning="flex-start", zone="us-central2-b"),
        "tpu-stack:tpuPools[0].zone: us-central2-b offers no flex-start TPU v4; GKE offers no v4 on flex-start"
        + UNLISTED,
    ),
    # A single-host pool without a zone spans the cluster's zones: the region must have one that offers it.
    (
        "us-central1",
        pool(provisioning="flex-start"),
        "tpu-stack:tpuPools[0].zone: no zone of us-central1 offers flex-start TPU v6e; flex-start v6e zones: "
        + V6E_FLEX
        + UNLISTED,
    ),
]


@pytest.mark.parametrize(("region", "item", "message"), REFUSED, ids=[r[2].split(": ", 1)[1][:60] for r in REFUSED])
def test_a_pool_its_zone_cannot_give_is_one_line_naming_the_zones_that_can(
    region: str, item: dict[str, Any], message: str
) -> None:
    assert problems(region, **{"tpu-stack:tpuPools": [item]}) == [message]


ACCEPTED = [
    ("us-east5", pool(provisioning="flex-start", zone="us-east5-b")),
    ("us-east5", pool(topology="4x4", provisioning="queued", zone="us-east5-a")),
    ("us-central1", pool(provisioning="spot", zone="us-central1-b")),
    (
        "us-central1",
        pool(
            machineType="ct5lp-hightpu-4t",
            topology="4x4",
            provisioning="reservation",
            reservation="r",
            zone="us-central1-a",
        ),
    ),
    ("us-west4", pool(machineType="ct5lp-hightpu-4t", topology="2x4", provisioning="flex-start", zone="us-west4-a")),
    ("us-east5", pool(provisioning="flex-start")),  # no zone: the region has one that offers it
]


@pytest.mark.parametrize(("region", "item"), ACCEPTED)
def test_a_pool_its_zone_can_give_is_accepted(region: str, item: dict[str, Any]) -> None:
    assert problems(region, **{"tpu-stack:tpuPools": [item]}) == []


# A pool without node locations in a regional cluster is in each of the cluster's three default zones, and GKE counts
# nodeCount per zone (GKE, "Regional clusters"; terraform-provider-google v7.45.0 container_node_pool: node_count and
# initial_node_count per zone): a group of fixed size must name its one zone. Zones by hand from the regions page.
FIXED_SIZE = "required for a group of fixed size: GKE counts nodeCount per zone, so without one zone its "
ZONE_REQUIRED = [
    (
        "us-central1",
        {},
        {},
        "tpu-stack:tpuPools[0].zone: " + FIXED_SIZE + "1 slice would run (and bill) in each of the cluster's 3 zones; "
        "give one of the zones of us-central1 offering TPU v6e: us-central1-b",
    ),
    (
        "us-east5",
        {"provisioning": "spot", "slices": 2},
        {},
        "tpu-stack:tpuPools[0].zone: " + FIXED_SIZE + "2 slices would run (and bill) in each of the cluster's 3 "
        "zones; give one of the zones of us-east5 offering TPU v6e: us-east5-a, us-east5-b",
    ),
    (
        "us-central1",
        {"machineType": "ct5lp-hightpu-4t", "provisioning": "reservation", "reservation": "r"},
        {},
        "tpu-stack:tpuPools[0].zone: " + FIXED_SIZE + "1 slice would run (and bill) in each of the cluster's 3 zones; "
        "give one of the zones of us-central1 offering TPU v5e: us-central1-a",
    ),
    # The table lists no flex-start v6e in us-central1 and the pool says Google offers it there since: only the pool
    # can say which zone.
    (
        "us-central1",
        {"provisioning": "flex-start", "zoneUnlisted": True},
        {},
        "tpu-stack:tpuPools[0].zone: required with zoneUnlisted when the TPU zone table names no zone of us-central1 "
        "offering flex-start TPU v6e: its nodes need a zone that does; give it",
    ),
    # A zonal cluster's pools are in its zone, which must offer the TPU.
    (
        "us-central1",
        {},
        {"tpu-stack:cluster": {"location": "us-central1-a"}},
        "tpu-stack:tpuPools[0].zone: the cluster's zone us-central1-a offers no TPU v6e; v6e zones: asia-northeast1-b, "
        "europe-west4-a, us-central1-b, us-east1-d, us-east5-a, us-east5-b, us-south1-ai1b" + UNLISTED,
    ),
]


@pytest.mark.parametrize(("region", "fields", "extra", "message"), ZONE_REQUIRED)
def test_a_group_whose_zones_cannot_be_known_is_refused_naming_the_zones_to_give(
    region: str, fields: dict[str, Any], extra: dict[str, Any], message: str
) -> None:
    assert problems(region, **{"tpu-stack:tpuPools": [pool(**fields)], **extra}) == [message]


def test_a_fixed_group_without_a_zone_in_a_zonal_cluster_is_accepted_there() -> None:
    zonal = {"tpu-stack:cluster": {"location": "us-central1-b"}}
    assert problems("us-central1", **{"tpu-stack:tpuPools": [pool()], **zonal}) == []


def test_a_worker_pool_is_checked_against_the_table_under_the_workers_key() -> None:
    euw4 = {"name": "w", "region": "europe-west4",
            "tpuPools": [pool(provisioning="flex-start", zone="europe-west4-a")]}  # fmt: skip
    assert problems("us-central1", **{"tpu-stack:multiKueue": {"workers": [euw4]}}) == [
        "tpu-stack:multiKueue.workers[0].tpuPools[0].zone: europe-west4-a offers no flex-start TPU v6e; flex-start "
        "v6e zones: " + V6E_FLEX + UNLISTED
    ]


def test_a_worker_group_of_fixed_size_names_its_zone_under_the_workers_key() -> None:
    east5 = {"name": "w", "region": "us-east5", "tpuPools": [pool()]}
    assert problems("us-central1", **{"tpu-stack:multiKueue": {"workers": [east5]}}) == [
        "tpu-stack:multiKueue.workers[0].tpuPools[0].zone: " + FIXED_SIZE + "1 slice would run (and bill) in each of "
        "the cluster's 3 zones; give one of the zones of us-east5 offering TPU v6e: us-east5-a, us-east5-b"
    ]


def test_the_table_covers_every_catalog_version_and_flex_start_zones_are_zones_of_the_version() -> None:
    from components import tpu_zones

    table = json.loads((REPO / "vendor/data/tpu_zones.json").read_text())
    assert set(table["versions"]) == set(tpu_catalog.VERSIONS)
    for version, kinds in table["versions"].items():
        assert set(kinds["flexStart"]) <= set(kinds["zones"]), version
    assert tpu_zones.zones("v6e", flex_start=True) == ("asia-northeast1-b", "us-east5-a", "us-east5-b")
    assert "`data/tpu_zones.json`" in (REPO / "vendor/README.md").read_text()


# --- a zone Google opened after the table's date ------------------------------------------------------------------


def warnings(region: str, **extra: Any) -> list[str]:
    return load({"gcp:project": "proj-1234", "gcp:region": region, **extra}, stack="dev").warnings


def test_zone_unlisted_turns_the_refusal_into_a_warning() -> None:
    """europe-west4-b is on no list of the table for v6e; a team whose account team confirms it can still deploy."""
    item = pool(provisioning="spot", zone="europe-west4-b", zoneUnlisted=True)
    assert problems("europe-west4", **{"tpu-stack:tpuPools": [item]}) == []
    assert warnings("europe-west4", **{"tpu-stack:tpuPools": [item]}) == [
        "tpu-stack:tpuPools[0].zone: europe-west4-b offers no TPU v6e in the TPU zone table of 2026-11; accepted "
        "because zoneUnlisted is set: if Google does not offer it there, the pool fails when GKE creates it"
    ]


def test_zone_unlisted_on_a_zone_the_table_lists_asks_to_remove_it() -> None:
    item = pool(provisioning="flex-start", zone="us-east5-b", zoneUnlisted=True)
    assert warnings("us-east5", **{"tpu-stack:tpuPools": [item]}) == [
        "tpu-stack:tpuPools[0].zoneUnlisted: the TPU zone table lists us-east5-b for flex-start TPU v6e; remove "
        "zoneUnlisted so the check holds again"
    ]


def test_zone_unlisted_on_a_worker_pool_warns_under_the_workers_key() -> None:
    euw4 = {"name": "w", "region": "europe-west4",
            "tpuPools": [pool(provisioning="flex-start", zone="europe-west4-a", zoneUnlisted=True)]}  # fmt: skip
    config = {"tpu-stack:multiKueue": {"workers": [euw4]}}
    assert problems("us-central1", **config) == []
    assert warnings("us-central1", **config) == [
        "tpu-stack:multiKueue.workers[0].tpuPools[0].zone: europe-west4-a offers no flex-start TPU v6e in the TPU "
        "zone table of 2026-11; accepted because zoneUnlisted is set: if Google does not offer it there, the pool "
        "fails when GKE creates it"
    ]


def test_the_table_records_when_it_was_last_checked() -> None:
    table = json.loads((REPO / "vendor/data/tpu_zones.json").read_text())
    assert table["verified"] == "2026-11"
    readme = (REPO / "vendor/README.md").read_text()
    assert "Nothing here is edited by hand" not in readme
    assert "`vendor/refresh.sh` does not touch it" in readme
