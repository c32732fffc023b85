"""The numbers a stack exists to derive, as a preview leads with them and plan.json's `summary` holds them: the
TPU capacity of each pool group and each team's Kueue quotas.

Every number comes from the config model the program ran with (the `stackConfig` output, validated again into a
`StackConfig`) through the same derivations the components use (`team_chips`, `team_borrowing`, `cohort_chips`,
`queue_refs`), so the summary cannot disagree with the ClusterQueues and node pools the plan declares.
No Pulumi SDK import here: the pull request plan diff (offline/plandiff.py) reads it too.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from components import tpu_catalog
from components.config.pools import TpuPoolConfig
from components.config.queues import cohort_chips, queue_refs, team_borrowing, team_chips
from components.config.stack import StackConfig

Summary = dict[str, Any]
QUOTA_UNIT = "google.com/tpu"
"""Quotas and borrowing limits are in chips: the ClusterQueues' nominalQuota of this resource."""


class SummaryUnavailable(Exception):
    """The plan has no config model this version reads (a plan from an older program)."""


def _reservation(pool: TpuPoolConfig) -> str | None:
    """The reservation a pool consumes: an existing one by name, or the calendar-mode request's."""
    return pool.reservation_name if pool.provisioning == "reservation" else None


def _capacity(config: StackConfig) -> dict[str, dict[str, Any]]:
    """Pool group -> its shape, provisioning and size; Autopilot's capacity has no zone (Autopilot places it)."""
    autopilot = config.cluster.mode == "autopilot"
    pools = config.queue_pools if autopilot else config.tpu_pools
    queued = {pool.name for pool in config.queue_pools}
    saxml = config.saxml.pool if config.saxml else None
    rungs = {pool.name: (ladder, index + 1, len(pools)) for ladder, pools in config.ladders.items()
             for index, pool in enumerate(pools)}  # fmt: skip

    def used_by(pool: TpuPoolConfig) -> str | None:
        if pool.name in queued:
            return "kueue"
        if pool.name == saxml:
            return "saxml"
        if pool.name in config.serving_pools:
            return "vllm"
        return "draining" if pool.drain else None

    return {
        pool.name: {
            "machineType": pool.machine.name,
            "topology": pool.slice_topology,
            "provisioning": pool.provisioning,
            "reservation": _reservation(pool),
            "calendar": pool.future_reservation is not None,
            "slices": pool.slices,
            "vmsPerSlice": pool.vms_per_slice,
            "vms": pool.total_vms,
            "chips": pool.total_chips,
            "zone": pool.zone,
            "usedBy": used_by(pool),
            "ladder": (
                {"name": rungs[pool.name][0], "rung": rungs[pool.name][1], "of": rungs[pool.name][2]}
                if pool.name in rungs
                else None
            ),
            "minChips": pool.min_chips,
            "billedIdleChips": billed_idle_chips(pool),
        }
        for pool in pools
    }


def billed_idle_chips(pool: TpuPoolConfig) -> int:
    """Chips paid for while no workload runs. DWS groups (flex-start, queued) scale to zero and bill only the nodes a
    workload asked for; spot, on-demand and reservation groups hold their VMs, which bill while they run; a reservation
    (and a calendar-mode one in its window) is billed whether or not nodes use it (Compute Engine reservations
    overview: reserved resources are charged like running VMs)."""
    if pool.provisioning == "reservation" or pool.future_reservation is not None:
        return pool.total_chips
    return pool.min_chips


def _queues(config: StackConfig) -> dict[str, Any]:
    """Team -> where it submits and its quota and borrowing limit per flavor (pool group), in chips; the cohort's
    own quota is the chips no team holds. Without teams, one queue (`default`) holds every chip, in no cohort.
    Without capacity to share the program declares no ClusterQueue, and there are no teams here either.
    Flavors in the order the ClusterQueues list them, which is the order Kueue tries them (`queue_flavors`)."""
    queues = config.queues
    pools = config.queue_flavors
    if not pools:
        return {"cohort": None, "teams": {}, "cohortQuota": {}}
    refs = queue_refs(queues)
    if not queues.teams:
        ref = refs["default"]
        flavors = {pool.name: {"nominalQuota": pool.total_chips, "borrowingLimit": None} for pool in pools}
        return {
            "cohort": None,
            "teams": {
                "default": {
                    "namespace": ref.namespace,
                    "localQueue": ref.local_queue,
                    "clusterQueue": ref.cluster_queue,
                    "flavors": flavors,
                }
            },
            "cohortQuota": {},
        }
    shares, borrowing = team_chips(queues, pools), team_borrowing(queues, pools)
    teams = {
        team: {
            "namespace": ref.namespace,
            "localQueue": ref.local_queue,
            "clusterQueue": ref.cluster_queue,
            "flavors": {
                pool.name: {"nominalQuota": shares[team][pool.name], "borrowingLimit": borrowing[team][pool.name]}
                for pool in pools
            },
        }
        for team, ref in refs.items()
    }
    remainder = {pool: chips for pool, chips in cohort_chips(queues, pools).items() if chips > 0}
    return {"cohort": queues.cohort, "teams": teams, "cohortQuota": remainder}


QUOTA_KINDS = {
    "on-demand": "on-demand",
    "spot": "preemptible",
    "flex-start": "preemptible",
    "queued": "preemptible",
    "reservation": "reservation",
}
"""Which Compute Engine TPU quota a pool's nodes count against: spot VMs and the Dynamic Workload Scheduler's
flex-start and queued provisioning use preemptible quota (cloud.google.com/kubernetes-engine/docs/concepts/
flex-start-vms, "quota": flex-start VMs consume preemptible quota; cloud.google.com/tpu/docs/quota); the nodes of a
specific reservation take none: an existing reservation took its quota when it was made (Cloud TPU, plan your
resources: reservations use on-demand quota), and a calendar-mode request needs none (docs.cloud.google.com/tpu/docs/
consumption-options: "no quota required")."""

QUOTA_NAMES: dict[tuple[str, str], str] = {
    ("v4", "on-demand"): "TPU v4 PodSlice chips",
    ("v4", "preemptible"): "Preemptible TPU v4 PodSlice chips",
    ("v5e", "on-demand"): "TPU v5 Lite PodSlice chips",
    ("v5e", "preemptible"): "Preemptible TPU v5 Lite Podslice chips",
    ("v5p", "on-demand"): "TPU v5p chips",
    ("v5p", "preemptible"): "Preemptible TPU v5p chips",
    ("v6e", "on-demand"): "TPUs per TPU family (tpu_family CT6E)",
    ("v6e", "preemptible"): "Preemptible TPU slices v6e",
    ("tpu7x", "on-demand"): "TPUs per TPU family (tpu_family tpu7x)",
    ("tpu7x", "preemptible"): "Preemptible TPU slices tpu7x",
}
"""(TPU version, quota kind) -> the Compute Engine quota GKE's node pools count against, by the name the Quotas page
shows (GKE, "Ensure quota for TPUs", cloud.google.com/kubernetes-engine/docs/how-to/tpus#ensure-quota). Compute's
metric behind the v5e names is TPU_LITE_PODSLICE_V5 / PREEMPTIBLE_TPU_LITE_PODSLICE_V5 (`gcloud compute regions
describe`); v6e's on-demand quota is TPUS_PER_TPU_FAMILY (docs.cloud.google.com/tpu/docs/v6e-intro, prerequisites).
A pair with no entry prints no name."""


def _quota(config: StackConfig) -> list[dict[str, Any]]:
    """One row per region, quota kind and TPU version (reservations: per reservation) with the chips the stack's pools
    hold at their largest (every slice up; an adopted pool without a zone in each of the cluster's zones): what the
    project's TPU quota in that region must allow, or what a reservation must hold."""
    rows: dict[tuple[str, str, str, str | None], dict[str, Any]] = {}
    for cluster in [config, *config.worker_configs]:
        for pool in cluster.tpu_pools:
            chips = cluster.max_nodes(pool) * pool.chips_per_slice // pool.vms_per_slice
            kind = QUOTA_KINDS[pool.provisioning]
            version = pool.machine.version.name
            reservation = pool.reservation_name if kind == "reservation" else None
            row = rows.setdefault(
                (cluster.region, kind, version, reservation),
                {
                    "region": cluster.region,
                    "kind": kind,
                    "tpu": version,
                    "chips": 0,
                    "quota": QUOTA_NAMES.get((version, kind)),
                    "reservation": reservation,
                    "calendar": pool.future_reservation is not None,
                },
            )
            row["chips"] += chips
    order = {kind: index for index, kind in enumerate(("on-demand", "preemptible", "reservation"))}
    return sorted(rows.values(), key=lambda r: (r["region"], order[r["kind"]], r["tpu"], r["reservation"] or ""))


def _addresses(config: StackConfig) -> dict[str, dict[str, object]]:
    """Cluster -> its ranges and what it needs of them at its largest (components/config/network.py)."""
    return {cluster.cluster.name: cluster.address_plan.to_json() for cluster in [config, *config.worker_configs]}


def from_config(config: StackConfig) -> Summary:
    """A MultiKueue manager's capacity and queues are its workers' pool groups (config.manager_queues); quota and
    addresses are per region and per cluster, the workers' included."""
    return {
        "capacity": _capacity(config.manager_queues),
        "queues": _queues(config.manager_queues),
        "quota": _quota(config),
        "addresses": _addresses(config),
        "warnings": config.warnings,
    }


def from_outputs(outputs: Mapping[str, Any]) -> Summary:
    """The summary of a run, from its `stackConfig` output (the validated config as deployed)."""
    exported = outputs.get("stackConfig")
    if not isinstance(exported, dict):
        raise SummaryUnavailable("the plan has no stackConfig output")
    try:
        config = StackConfig.model_validate(exported)
    except ValidationError as error:
        problems = error.error_count()
        raise SummaryUnavailable(f"its stackConfig is not this version's config ({problems} errors)") from None
    return from_config(config)


def of_plan(plan: Mapping[str, Any]) -> Summary:
    """A plan.json's summary: its own, or for a plan written before plan.json had one, derived from its
    stackConfig output."""
    found = plan.get("summary")
    if isinstance(found, dict):
        return found
    return from_outputs(plan.get("outputs") or {})


# --- text ----------------------------------------------------------------------------------------------------


def table(rows: list[list[str]], right: frozenset[int] = frozenset(), indent: str = "  ") -> list[str]:
    """Rows as aligned columns (`right`: column indexes aligned right, for numbers), within WIDTH as far as the cells
    allow: when a row is wider, headers of several words take two lines (a column as wide as its header narrows to its
    values), and a last cell that still does not fit continues on the lines below."""
    cells = _cells(rows, right, indent)
    if any(len(prefix) + len(last) > WIDTH for prefix, last in cells):
        values = [max((len(row[i]) for row in rows[1:] if i < len(row)), default=0) for i in range(len(rows[0]))]
        halves = [_halves(header) if len(header) > values[i] else (header, "") for i, header in enumerate(rows[0])]
        if any(second for _, second in halves):
            top, bottom = [first for first, _ in halves], [second for _, second in halves]
            cells = _cells([top, bottom, *rows[1:]], right, indent)
    return [line for prefix, last in cells for line in _fitted(prefix, last, indent)]


def _cells(rows: list[list[str]], right: frozenset[int], indent: str) -> list[tuple[str, str]]:
    """Each row as its aligned columns up to the last cell, and the last cell."""
    widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(max(len(row) for row in rows))]
    lines = []
    for row in rows:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        last = cells.pop().rstrip() if len(row) == len(widths) and len(row) - 1 not in right else ""
        lines.append((indent + "".join(f"{cell}  " for cell in cells), last))
    return lines


def _halves(header: str) -> tuple[str, str]:
    """A header of several words as two lines of the fewest columns (`borrowing limit`: `borrowing`, `limit`)."""
    words = header.split(" ")
    splits = [(" ".join(words[:i]), " ".join(words[i:])) for i in range(1, len(words))]
    return min(splits, key=lambda pair: max(len(pair[0]), len(pair[1])), default=(header, ""))


def _fitted(prefix: str, last: str, indent: str) -> list[str]:
    """A row whose last cell continues below its column, or, where a word is wider than the column, below the row."""
    if len(prefix) + len(last) <= WIDTH:
        return [(prefix + last).rstrip()]
    room = WIDTH - len(prefix)
    if all(len(word) <= room for word in last.split()):
        parts = textwrap.wrap(last, width=room, break_long_words=False, break_on_hyphens=False)
        return [prefix + parts[0], *(" " * len(prefix) + part for part in parts[1:])]
    words = last.split()
    taken = 0
    while taken < len(words) and len(" ".join(words[: taken + 1])) <= room:
        taken += 1
    below = textwrap.wrap(
        " ".join(words[taken:]),
        width=WIDTH,
        initial_indent=indent + "    ",
        subsequent_indent=indent + "    ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [(prefix + " ".join(words[:taken])).rstrip(), *below]


def chips_text(value: int | None, *, in_cohort: bool = True) -> str:
    """A borrowing limit: chips, or no limit; `-` for a queue in no cohort, which has nothing to borrow from."""
    if not in_cohort:
        return "-"
    return "unlimited" if value is None else str(value)


def provisioning_text(pool: Mapping[str, Any]) -> str:
    mode = str(pool["provisioning"])
    if pool.get("reservation"):
        kind = "calendar " if pool.get("calendar") else ""
        return f"{mode} ({kind}{pool['reservation']})"
    return mode


WIDTH = 100
"""Columns the preview's text fits in."""
LEGEND = (
    "chips: the fewest and the most on the group's nodes; billed idle: chips paid for while no workload runs; "
    "<ladder> n/m: rung n of the m Kueue tries in order"
)


def render_capacity(summary: Summary) -> list[str]:
    capacity: dict[str, dict[str, Any]] = summary["capacity"]
    if not capacity:
        return ["Capacity: no TPU pool groups"]
    slices = sum(p["slices"] for p in capacity.values())
    vms = sum(p["vms"] for p in capacity.values())
    chips = sum(p["chips"] for p in capacity.values())
    least = sum(_min_chips(p) for p in capacity.values())
    idle = sum(_idle_chips(p) for p in capacity.values())
    head = (
        f"Capacity: {len(capacity)} TPU pool group(s), {slices} slice(s), {vms} VM(s), {least}-{chips} chips, "
        f"{idle} billed while idle"
    )
    rows = [["pool group", "TPU", "provisioning", "slices", "chips", "billed idle", "zone", "used by"]]
    notes = []
    for name, pool in capacity.items():
        ladder = pool.get("ladder")
        version = tpu_catalog.MACHINE_TYPES[pool["machineType"]].version.name
        rows.append(
            [
                name,
                f"{version} {pool['topology']}",
                str(pool["provisioning"]),
                str(pool["slices"]),
                f"{_min_chips(pool)}-{pool['chips']}",
                str(_idle_chips(pool)),
                str(pool["zone"] or "-"),
                f"{ladder['name']} {ladder['rung']}/{ladder['of']}" if ladder else str(pool["usedBy"] or "-"),
            ]
        )
        if pool.get("reservation"):
            kind = "the calendar-mode reservation" if pool.get("calendar") else "reservation"
            notes.append(f"  {name} consumes {kind} {pool['reservation']}")
    legend = wrapped(LEGEND, "  ", "  ")
    return [head, *table(rows, right=frozenset({3, 4, 5})), *legend, *notes]


def _min_chips(pool: Mapping[str, Any]) -> int:
    """A plan written before the summary had it (a base branch's): autoscaled is what the provisioning says."""
    if "minChips" in pool:
        return int(pool["minChips"])
    return 0 if pool["provisioning"] in ("flex-start", "queued") or pool.get("calendar") else int(pool["chips"])


def _idle_chips(pool: Mapping[str, Any]) -> int:
    if "billedIdleChips" in pool:
        return int(pool["billedIdleChips"])
    return int(pool["chips"]) if pool.get("reservation") else _min_chips(pool)


def wrapped(text: str, first: str = "  ", rest: str = "    ") -> list[str]:
    """`text` in lines of at most WIDTH columns."""
    return textwrap.wrap(text, width=WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)


def render_warnings(summary: Summary) -> list[str]:
    found = summary.get("warnings") or []
    if not found:
        return []
    return [f"Warnings: {len(found)}, valid but rarely meant", *(line for w in found for line in wrapped(w))]


QUOTA_HEAD = "TPU quota the pools need at their largest (chips, per region and kind), by Compute's quota names:"


def quota_text(row: Mapping[str, Any]) -> str:
    """The quota a row counts against, or what its reservation must hold."""
    if row["kind"] == "reservation":
        kind = "calendar-mode reservation" if row.get("calendar") else "reservation"
        return f"no quota: {kind} {row['reservation']} must hold {row['chips']} chips"
    return str(row.get("quota") or "-")


def render_quota(summary: Summary) -> list[str]:
    """TPU chips per region and quota kind at the pools' largest, and each cluster's address ranges."""
    quota = summary.get("quota") or []
    lines = []
    if isinstance(quota, list) and quota:  # a plan written before the rows (region -> kind -> chips) shows none
        lines.append(QUOTA_HEAD)
        rows = [["region", "kind", "TPU", "chips", "quota"]]
        rows += [[r["region"], r["kind"], r["tpu"], str(r["chips"]), quota_text(r)] for r in quota]
        lines += table(rows, right=frozenset({3}))
    addresses: dict[str, dict[str, Any]] = summary.get("addresses") or {}
    if addresses:
        lines.append("Addresses (each range holds its cluster with every pool at its largest):")
        rows = [["cluster", "nodes", "pods", "services", "max nodes", "pod addresses needed"]]
        rows += [
            [
                name,
                str(a["nodes"]),
                str(a["pods"]),
                str(a["services"]),
                str(a["maxNodes"]),
                str(a["podAddressesNeeded"]),
            ]
            for name, a in addresses.items()
        ]
        lines += table(rows, right=frozenset({4, 5}))
    return lines


def render_queues(summary: Summary) -> list[str]:
    queues = summary["queues"]
    teams: dict[str, dict[str, Any]] = queues["teams"]
    if not teams:
        return ["Queues: none (no TPU capacity for Kueue)"]
    cohort = queues["cohort"]
    where = f"in cohort {cohort}" if cohort else "one ClusterQueue, no cohort"
    head = f"Queues: {len(teams)} team(s), {where}; quota and borrowing limit in chips of {QUOTA_UNIT}"
    rows = [["team", "local queue", "cluster queue", "flavor", "quota", "borrowing limit"]]
    for team, queue in teams.items():
        first = [team, f"{queue['namespace']}/{queue['localQueue']}", str(queue["clusterQueue"])]
        for flavor, quota in queue["flavors"].items():
            rows.append(
                [
                    *first,
                    flavor,
                    str(quota["nominalQuota"]),
                    chips_text(quota["borrowingLimit"], in_cohort=cohort is not None),
                ]
            )
            first = ["", "", ""]
    lines = [head, *table(rows, right=frozenset({4}))]
    if queues["cohortQuota"]:
        held = ", ".join(f"{flavor} {chips}" for flavor, chips in queues["cohortQuota"].items())
        lines.append(f"  chips no team holds, which cohort {cohort} lends to any team: {held}")
    return lines


def render(summary: Summary) -> str:
    quota = render_quota(summary)
    warnings = render_warnings(summary)
    return "\n".join(
        [*render_capacity(summary), *quota, "", *render_queues(summary), *(["", *warnings] if warnings else [])]
    )
