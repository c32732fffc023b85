"""Which zones offer which TPU version, and which of them offer it on flex-start (and so to queued provisioning,
which runs on flex-start capacity): the table vendored in vendor/data/tpu_zones.json, with its sources and date in
vendor/README.md. Pure standard library, like the catalog.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

TABLE = Path(__file__).resolve().parent.parent / "vendor" / "data" / "tpu_zones.json"


@cache
def _versions() -> dict[str, dict[str, list[str]]]:
    versions: dict[str, dict[str, list[str]]] = json.loads(TABLE.read_text())["versions"]
    return versions


def zones(version: str, *, flex_start: bool) -> tuple[str, ...]:
    """Zones that offer TPU `version` (on flex-start capacity only, with `flex_start`), sorted."""
    kinds = _versions().get(version, {})
    return tuple(sorted(kinds.get("flexStart" if flex_start else "zones", [])))


_KIND = {"flex-start": "flex-start ", "queued": "queued (flex-start) "}


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
