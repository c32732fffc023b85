"""Which zones offer which TPU version, and which of them offer it on flex-start (and so to queued provisioning,
which runs on flex-start capacity): the table vendored in vendor/data/tpu_zones.json, with its sources and date in
vendor/README.md. Pure standard library, like the catalog.

The table is a transcription of Google's pages as of its `verified` month: a zone Google opens later is refused until
the table is updated, unless the pool says `zoneUnlisted: true`, which turns the refusal into a warning.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().parent.parent / "vendor" / "data" / "tpu_zones.json"


@cache
def _table() -> dict[str, Any]:
    table: dict[str, Any] = json.loads(TABLE.read_text())
    return table


def _versions() -> dict[str, dict[str, list[str]]]:
    versions: dict[str, dict[str, list[str]]] = _table()["versions"]
    return versions


def verified() -> str:
    """The month the table was last checked against Google's pages (YYYY-MM)."""
    return str(_table()["verified"])


def zones(version: str, *, flex_start: bool) -> tuple[str, ...]:
    """Zones that offer TPU `version` (on flex-start capacity only, with `flex_start`), sorted."""
    kinds = _versions().get(version, {})
    return tuple(sorted(kinds.get("flexStart" if flex_start else "zones", [])))


_KIND = {"flex-start": "flex-start ", "queued": "queued (flex-start) "}


def region_zones(version: str, *, provisioning: str, region: str) -> tuple[str, ...]:
    """Zones of `region` that offer TPU `version` by `provisioning` (flex-start zones for flex-start and queued
    pools), sorted: where a pool group without a zone of its own can have nodes."""
    offered = zones(version, flex_start=provisioning in _KIND)
    return tuple(zone for zone in offered if zone.startswith(region + "-"))


def what(version: str, *, provisioning: str) -> str:
    """`TPU v6e`, `flex-start TPU v6e`, `queued (flex-start) TPU v6e`: the TPU as a pool of `provisioning` gets it."""
    return f"{_KIND.get(provisioning, '')}TPU {version}"


def zone_problem(version: str, *, provisioning: str, zone: str | None, region: str) -> str | None:
    """Why `zone` (or, without one, every zone of `region`) cannot give TPU `version` by `provisioning`: flex-start
    and queued pools need a flex-start zone; on-demand, spot and reservation capacity any zone of the version."""
    flex_start = provisioning in _KIND
    offered = zones(version, flex_start=flex_start)
    what = f"{_KIND.get(provisioning, '')}TPU {version}"
    listed = (
        f"{'flex-start ' if flex_start else ''}{version} zones: {', '.join(offered)}"
        if offered
        else f"GKE offers no {version} on flex-start"
    )
    if zone is not None:
        return None if zone in offered else f"{zone} offers no {what}; {listed}"
    if any(z.startswith(region + "-") for z in offered):
        return None
    return f"no zone of {region} offers {what}; {listed}"


def refusal(version: str, *, provisioning: str, zone: str | None, region: str) -> str | None:
    """The config error for a pool the table says its zone cannot give, naming the table's date and the way out."""
    problem = zone_problem(version, provisioning=provisioning, zone=zone, region=region)
    if problem is None:
        return None
    return f"{problem} (TPU zone table of {verified()}; for a zone Google opened since, set zoneUnlisted: true)"


def unlisted_warning(version: str, *, provisioning: str, zone: str | None, region: str) -> tuple[str, str]:
    """(field, warning) for a pool with `zoneUnlisted: true`: the zone is accepted although the table does not list
    it, or the flag is not needed."""
    what = f"{_KIND.get(provisioning, '')}TPU {version}"
    where = zone or f"a zone of {region}"
    if zone_problem(version, provisioning=provisioning, zone=zone, region=region) is None:
        return "zoneUnlisted", (
            f"the TPU zone table lists {where} for {what}; remove zoneUnlisted so the check holds again"
        )
    offered = f"{zone} offers no {what}" if zone else f"no zone of {region} offers {what}"
    return "zone", (
        f"{offered} in the TPU zone table of {verified()}; accepted because zoneUnlisted is set: if Google does not "
        "offer it there, the pool fails when GKE creates it"
    )
