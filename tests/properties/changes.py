"""Changes a team makes to a deployed stack, as edits of its stack file: from one valid config to another.

Each change keeps the config valid by the same rules tests/properties/stacks.py draws from (a shrunk group's shares
lowered to fit, a new group of a ladder's shape made its rung in cost order, a group of an existing shape labelled
apart from it). A change is a *resize or extension* (slices added or removed, a pool group or a team added, a share
changed: running capacity must stay) or a *rework* (a new slice shape, spot for on-demand, a pool group or a team
removed: replacements and deletes the plan diff must name).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from tests.properties.stacks import (
    CALENDAR_CHIPS,
    POOL_NAMES,
    TEAM_NAMES,
    TPU_ZONES,
    Drawn,
    Pool,
    pool_group,
    shapes,
)

EXTENDS = ("grow", "shrink", "add-group", "add-team", "share", "place", "replicas")
"""Changes that keep every running slice, flavor, workload policy and server."""
REWORKS = ("reshape", "spot", "drain", "remove-group", "remove-team", "unplace")


@dataclass
class Change:
    """A deployed stack, the same stack edited, and what the edit was."""

    kind: str
    before: Drawn
    after: Drawn
    group: str | None = None
    """The pool group resized, added, reshaped or removed."""
    slices: tuple[int, int] | None = None
    """A resize: (slices before, after)."""

    def __repr__(self) -> str:
        return f"{self.kind} {self.group or ''} {self.slices or ''}\nbefore: {self.before!r}\nafter: {self.after!r}"


def _queues(drawn: Drawn) -> dict[str, Any]:
    return drawn.config.setdefault("tpu-stack:queues", {})


def _serving(drawn: Drawn) -> set[str]:
    config = drawn.config
    found = {config["tpu-stack:saxml"]["pool"]} if "tpu-stack:saxml" in config else set()
    return found | {s["pool"] for s in config.get("tpu-stack:serving", {}).get("servers", ())}


def _outside(drawn: Drawn) -> set[str]:
    """Pool groups that are not Kueue capacity: serving ones and those being drained."""
    return _serving(drawn) | {p.name for p in drawn.pools if p.entry.get("drain")}


def _groups(drawn: Drawn) -> list[dict[str, Any]]:
    """The YAML list a new pool group goes into: tpuPools, or a worker's."""
    if "tpu-stack:multiKueue" in drawn.config:
        return list(drawn.config["tpu-stack:multiKueue"]["workers"][0]["tpuPools"])
    return list(drawn.config["tpu-stack:tpuPools"])


def _list_of(drawn: Drawn, pool: Pool) -> list[dict[str, Any]]:
    if "tpu-stack:multiKueue" in drawn.config:
        return next(
            w["tpuPools"] for w in drawn.config["tpu-stack:multiKueue"]["workers"] if pool.entry in w["tpuPools"]
        )
    return list_of_pools(drawn)


def list_of_pools(drawn: Drawn) -> list[dict[str, Any]]:
    pools: list[dict[str, Any]] = drawn.config["tpu-stack:tpuPools"]
    return pools


def _fit_shares(drawn: Drawn, pool: Pool) -> None:
    """Lower the teams' chip shares of `pool` to what it holds now, in team order (as a team would)."""
    left = pool.chips
    for team in _queues(drawn).get("teams", ()):
        value = team.get("shares", {}).get(pool.name)
        if isinstance(value, int):
            team["shares"][pool.name] = min(value, left)
            left -= team["shares"][pool.name]
        elif isinstance(value, str):
            left -= pool.chips * int(value.rstrip("%")) // 100


def _slices(pool: Pool) -> int:
    return int(pool.entry.get("slices", 1))


def _counts_ok(pool: Pool, slices: int) -> bool:
    """A calendar-mode group asks Compute for slices x chips, which must be a count it takes."""
    if not pool.calendar:
        return True
    chips = slices * pool.shape.chips
    serving = pool.entry["futureReservation"].get("workloadType") == "SERVING"
    return chips in CALENDAR_CHIPS[pool.shape.version] and (serving or pool.shape.version != "v5e" or chips >= 16)


@st.composite
def resize(draw: st.DrawFn, drawn: Drawn, grow: bool) -> Change | None:
    after = copy.deepcopy(drawn)
    held = {s["pool"]: 0 for s in after.config.get("tpu-stack:serving", {}).get("servers", ())}
    for server in after.config.get("tpu-stack:serving", {}).get("servers", ()):
        held[server["pool"]] += server["replicas"]
    choices = []
    for pool in after.pools:
        old = _slices(pool)
        targets = range(old + 1, old + 3) if grow else range(max(1, held.get(pool.name, 0)), old)
        choices += [(pool, n) for n in targets if _counts_ok(pool, n)]
    if not choices:
        return None
    pool, new = draw(st.sampled_from(choices))
    old = _slices(pool)
    pool.entry["slices"] = new
    _fit_shares(after, pool)
    return Change("grow" if grow else "shrink", drawn, after, pool.name, (old, new))


@st.composite
def add_group(draw: st.DrawFn, drawn: Drawn) -> Change | None:
    """A new pool group: of the shape of a queue group (a rung of its ladder, or labelled apart from it), or new."""
    after = copy.deepcopy(drawn)
    used = {p.name for p in after.pools}
    free = [n for n in POOL_NAMES if n not in used]
    if not free:
        return None
    name = draw(st.sampled_from(free))
    queue_pools = [p for p in after.pools if p.name not in _outside(after)]
    groups = _groups(after)
    region = next(w["region"] for w in after.config["tpu-stack:multiKueue"]["workers"]) if (
        "tpu-stack:multiKueue" in after.config) else after.config["gcp:region"]  # fmt: skip
    in_first = [p for p in queue_pools if p.entry in groups]
    if draw(st.booleans()) and in_first:
        like = draw(st.sampled_from(in_first))
        shape = like.shape
    else:
        version = draw(st.sampled_from(sorted(TPU_ZONES[region])))
        shape = draw(st.sampled_from(shapes()[version]))
    new = draw(
        pool_group(name, shape, TPU_ZONES[region][shape.version], max_slices=2, project=after.config["gcp:project"])
    )
    new.entry.pop("legacyFirstSliceName", None)
    if shape.version == "tpu7x" and not any(p.shape.version == "tpu7x" for p in after.pools):
        return None  # TPU7x needs a higher version floor: another edit of the cluster, not of the pools
    if new.entry.get("autoUpgrade") is False and after.config["tpu-stack:cluster"]["releaseChannel"] != "UNSPECIFIED":
        new.entry["autoUpgrade"] = True
    alike = [p for p in after.pools if p.entry in groups and p.shape.key == shape.key]
    for pool in [*alike, new] if alike else []:
        pool.entry["labels"] = {**pool.entry.get("labels", {}), "pool": pool.name}
    queues = _queues(after)
    ladder = next((n for n, rungs in queues.get("ladders", {}).items() if alike and alike[0].name in rungs), None)
    placement = queues.get("placement", {})
    if ladder is not None and set(queues["ladders"][ladder]) & set(placement.get("pools", ())):
        if placement.get("blocks") and not new.reservation_block:
            return None  # the block level needs every node of a placed group to carry it
        if not new.placeable:
            return None  # Kueue places only on nodes that exist
        placement["pools"].append(name)  # a ladder's rungs are placed all or none
    if ladder is not None:
        rungs = queues["ladders"][ladder]
        if new.provisioning == "queued":
            queued = next((p for p in after.pools if p.name in rungs and p.provisioning == "queued"), None)
            new.entry.pop("maxRunDuration", None)
            if queued is not None and "maxRunDuration" in queued.entry:
                new.entry["maxRunDuration"] = queued.entry["maxRunDuration"]
        billed = not new.on_request
        by_name = {p.name: p for p in after.pools}
        place = next((i for i, r in enumerate(rungs) if by_name[r].on_request), len(rungs))
        rungs.insert(place if billed else len(rungs), name)
    if "hostResources" in queues:
        first = queues["ladders"][ladder][0] if ladder else None
        queues["hostResources"][name] = dict(queues["hostResources"][first]) if first and first != name else {
            "cpu": 8, "memory": "32Gi"}  # fmt: skip
    target = (
        after.config["tpu-stack:multiKueue"]["workers"][0]["tpuPools"]
        if "tpu-stack:multiKueue" in after.config
        else after.config["tpu-stack:tpuPools"]
    )
    target.append(new.entry)
    after.pools.append(new)
    return Change("add-group", drawn, after, name)


@st.composite
def add_team(draw: st.DrawFn, drawn: Drawn) -> Change | None:
    """A team that takes chips no team holds (the cohort's)."""
    after = copy.deepcopy(drawn)
    teams = _queues(after).get("teams")
    free = [n for n in TEAM_NAMES if n not in {t["name"] for t in teams or ()}]
    if not teams or not free:
        return None
    team: dict[str, Any] = {"name": draw(st.sampled_from(free)), "shares": {}}
    for pool in (p for p in after.pools if p.name not in _outside(after)):
        held = sum(_chips(t.get("shares", {}).get(pool.name, 0), pool.chips) for t in teams)
        team["shares"][pool.name] = draw(st.integers(0, pool.chips - held))
    teams.append(team)
    return Change("add-team", drawn, after)


def _chips(value: int | str, total: int) -> int:
    return value if isinstance(value, int) else total * int(value.rstrip("%")) // 100


@st.composite
def share(draw: st.DrawFn, drawn: Drawn) -> Change | None:
    """A team's share of a pool group changed, within what the others leave."""
    after = copy.deepcopy(drawn)
    teams = _queues(after).get("teams")
    pools = [p for p in after.pools if p.name not in _outside(after)]
    if not teams or not pools:
        return None
    team, pool = draw(st.sampled_from(teams)), draw(st.sampled_from(pools))
    others = sum(_chips(t.get("shares", {}).get(pool.name, 0), pool.chips) for t in teams if t is not team)
    team.setdefault("shares", {})[pool.name] = draw(st.integers(0, pool.chips - others))
    return Change("share", drawn, after, pool.name)


@st.composite
def reshape(draw: st.DrawFn, drawn: Drawn) -> Change | None:
    """A new multi-host slice shape for a queue group (every rung of its ladder with it)."""
    after = copy.deepcopy(drawn)
    queues = _queues(after)
    candidates = [p for p in after.pools if p.name not in _outside(after) and p.shape.multi_host and not p.calendar]
    if not candidates:
        return None
    pool = draw(st.sampled_from(candidates))
    taken = {p.shape.key for p in after.pools}
    others = [s for s in shapes()[pool.shape.version]
              if s.machine == pool.shape.machine and s.multi_host and s.key not in taken]  # fmt: skip
    if not others:
        return None
    shape = draw(st.sampled_from(others))
    rungs = next((r for r in queues.get("ladders", {}).values() if pool.name in r), [pool.name])
    if any(p.calendar for p in after.pools if p.name in rungs):
        return None
    for rung in (p for p in after.pools if p.name in rungs):
        rung.shape = shape
        rung.entry["topology"] = shape.topology
        _fit_shares(after, rung)
    return Change("reshape", drawn, after, pool.name)


@st.composite
def spot(draw: st.DrawFn, drawn: Drawn) -> Change | None:
    """On-demand capacity moved to spot, or back: a new provisioning mode is a new node pool (ForceNew). The mode
    alone: a spot group with a run limit (which on-demand does not take) would change a second ForceNew field."""
    after = copy.deepcopy(drawn)
    candidates = [p for p in after.pools if p.provisioning in ("on-demand", "spot") and p.shape.version != "tpu7x"
                  and "maxRunDuration" not in p.entry]  # fmt: skip
    if not candidates:
        return None
    pool = draw(st.sampled_from(candidates))
    pool.provisioning = "on-demand" if pool.provisioning == "spot" else "spot"
    pool.entry["provisioning"] = pool.provisioning
    return Change("spot", drawn, after, pool.name)


@st.composite
def remove_group(draw: st.DrawFn, drawn: Drawn, *, drain: bool = False) -> Change | None:
    """A queue group removed with every mention of it (ladders, placement, shares, host resources); or drained: kept,
    with `drain: true` and the same mentions gone (docs/operations.md, *Drain a pool group*)."""
    after = copy.deepcopy(drawn)
    queues = _queues(after)
    queue_pools = [p for p in after.pools if p.name not in _outside(after)]
    drained = [p for p in after.pools if p.entry.get("drain")]
    # A drained group goes on its own; a queue group only where the teams keep some capacity to share.
    candidates = [] if drain else drained
    if not (queues.get("teams") and len(queue_pools) < 2):
        candidates += queue_pools
    candidates = [p for p in candidates if len(_list_of(after, p)) > 1 or "tpu-stack:multiKueue" not in after.config]
    if not candidates:
        return None
    pool = draw(st.sampled_from(candidates))
    if drain:
        pool.entry["drain"] = True
    else:
        _list_of(after, pool).remove(pool.entry)
        after.pools.remove(pool)
    if not _list_of_all(after):
        return None
    for name, rungs in list(queues.get("ladders", {}).items()):
        if pool.name in rungs:
            rungs.remove(pool.name)
        if not rungs:
            del queues["ladders"][name]
    if not queues.get("ladders", True):
        del queues["ladders"]
    placement = queues.get("placement")
    if placement and pool.name in placement["pools"]:
        placement["pools"].remove(pool.name)
        if not placement["pools"]:
            del queues["placement"]
    for team in queues.get("teams", ()):
        for field in ("shares", "borrowingLimit"):
            team.get(field, {}).pop(pool.name, None)
    queues.get("hostResources", {}).pop(pool.name, None)
    return Change("drain" if drain else "remove-group", drawn, after, pool.name)


def _list_of_all(drawn: Drawn) -> list[dict[str, Any]]:
    if "tpu-stack:multiKueue" in drawn.config:
        return [e for w in drawn.config["tpu-stack:multiKueue"]["workers"] for e in w["tpuPools"]]
    return list_of_pools(drawn)


@st.composite
def remove_team(draw: st.DrawFn, drawn: Drawn) -> Change | None:
    """A team removed, with the bucket grants in its namespace."""
    after = copy.deepcopy(drawn)
    teams = _queues(after).get("teams") or []
    if len(teams) < 2:
        return None
    team = draw(st.sampled_from(teams))
    teams.remove(team)
    namespace = team.get("namespace", team["name"])
    bucket = after.config.get("tpu-stack:bucket", {})
    for role in ("readers", "writers"):
        if role in bucket:
            bucket[role] = [g for g in bucket[role] if g["namespace"] != namespace]
            if not bucket[role]:
                del bucket[role]
    return Change("remove-team", drawn, after)


@st.composite
def place(draw: st.DrawFn, drawn: Drawn, *, placed: bool) -> Change | None:
    """A multi-host queue group (a whole ladder) given topology placement, or its placement taken away: Kueue keeps a
    flavor's topology for its life (docs/config.md queues.placement.pools), so the second is refused."""
    after = copy.deepcopy(drawn)
    if "tpu-stack:multiKueue" in after.config:
        return None
    queues = _queues(after)
    listed = list(queues.get("placement", {}).get("pools", ()))
    ladders = queues.get("ladders", {})
    serving = _outside(after)
    units = [rungs for rungs in ladders.values()] + [
        [p.name] for p in after.pools if not any(p.name in r for r in ladders.values())
    ]
    by_name = {p.name: p for p in after.pools}
    blocks = queues.get("placement", {}).get("blocks", False)

    def can_place(name: str) -> bool:
        pool = by_name[name]
        return pool.placeable and name not in serving and (pool.reservation_block or not blocks)

    if placed:
        units = [u for u in units if not set(u) & set(listed) and all(can_place(n) for n in u)]
    else:
        units = [u for u in units if set(u) <= set(listed)]
    if not units:
        return None
    unit = draw(st.sampled_from(units))
    if placed:
        queues.setdefault("placement", {}).setdefault("pools", []).extend(unit)
    else:
        queues["placement"]["pools"] = [n for n in listed if n not in unit]
        if not queues["placement"]["pools"]:
            del queues["placement"]
    return Change("place" if placed else "unplace", drawn, after, unit[0])


@st.composite
def replicas(draw: st.DrawFn, drawn: Drawn) -> Change | None:
    """A vLLM server given one more replica, on a slice of its group no server holds."""
    after = copy.deepcopy(drawn)
    servers = after.config.get("tpu-stack:serving", {}).get("servers", [])
    slices = {p.name: _slices(p) for p in after.pools}
    held: dict[str, int] = {}
    for server in servers:
        held[server["pool"]] = held.get(server["pool"], 0) + server["replicas"]
    grown = [s for s in servers if held[s["pool"]] < slices[s["pool"]] and "modelFolder" in s]
    if not grown:
        return None
    draw(st.sampled_from(grown))["replicas"] += 1
    return Change("replicas", drawn, after)


KINDS: dict[str, Callable[[Drawn], st.SearchStrategy[Change | None]]] = {
    "grow": lambda d: resize(d, grow=True),
    "shrink": lambda d: resize(d, grow=False),
    "add-group": add_group,
    "add-team": add_team,
    "share": share,
    "reshape": reshape,
    "spot": spot,
    "drain": lambda d: remove_group(d, drain=True),
    "remove-group": remove_group,
    "remove-team": remove_team,
    "place": lambda d: place(d, placed=True),
    "unplace": lambda d: place(d, placed=False),
    "replicas": replicas,
}


@st.composite
def changes(draw: st.DrawFn, drawn: Drawn, kind: str) -> Change:
    """A change of `kind` of `drawn`; a stack it cannot apply to (no teams to remove one from) is not drawn."""
    change = draw(KINDS[kind](drawn))
    assume(change is not None)
    assert change is not None
    return change
