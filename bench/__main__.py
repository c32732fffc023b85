"""`make bench`: offline preview time against xpk's dry-run, and the modelled wall time of `pulumi up`.

Whole-process wall time of `python -m offline preview --quiet` (what a pull request waits for) for the dev
stack and for generated stacks of 1..256 flex-start v5e slices, side by side with `xpk cluster create
--dry-run` for the same cluster, runs interleaved so that machine noise hits both alike; medians. Then the
wall time of a first `pulumi up` of each plan as the engine and GKE run it (bench/deploy.py,
bench/schedule.py) beside xpk and Cluster Toolkit, and the targets of design §6, each marked met or not.
These are measurements and a model, not tests: the command exits 0 whatever the numbers are.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import critical_path, deploy, stacks, xpk

REPO = Path(__file__).resolve().parent.parent
GROWTH_TOLERANCE = 1.25
"""Run-to-run noise on a 2-CPU machine: a later per-slice cost up to this factor still counts as linear."""
SMALL_RATIO = 2.0
"""The dev preview and a 3-slice one, charts rendered and both real-engine views included, within 2x of xpk's dry
run of 3 slices (design §6: quick enough for a pull request and a test suite, with the typed SDKs)."""
LARGE_RATIO = 2.0
"""256 slices within 2x of xpk's dry run of the same cluster, measured in the same run (design §6)."""
GROWTH_FROM = 16


@dataclass
class Timing:
    seconds: list[float] = field(default_factory=list)
    failure: str | None = None
    note: str = ""

    @property
    def median(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds and not self.failure else None


def _timed(
    command: Sequence[str], *, env: dict[str, str] | None = None
) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(list(command), cwd=REPO, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done


def _preview_command(stack: str, config: Path | None, out: Path) -> list[str]:
    command = [sys.executable, "-m", "offline", "preview", "--stack", stack, "--quiet", "--out", str(out)]
    command += ["--policy-config", str(REPO / "policies" / "config.json")]  # as `make preview` runs it
    return command + (["--config", str(config)] if config else [])


def _run_ours(timing: Timing, stack: str, config: Path | None, out: Path) -> None:
    if timing.failure:
        return
    seconds, done = _timed(_preview_command(stack, config, out))
    if done.returncode not in (0, 1):  # 1: the plan was written but a mandatory policy failed
        timing.failure = f"exit {done.returncode}: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
        return
    timing.seconds.append(seconds)
    timing.note = "policy violations" if done.returncode == 1 else ""


def _run_xpk(timing: Timing, slices: int, home: Path) -> None:
    if timing.failure:
        return
    seconds, done = _timed(xpk.command(slices), env=xpk.environment(home))
    planned = xpk.node_pools_planned(done.stdout)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
        timing.failure = f"exit {done.returncode}: {tail[0][:60] if tail else ''}"
    elif planned != slices:
        timing.failure = f"planned {planned} node pools, not {slices}"
    else:
        timing.seconds.append(seconds)


def _plan(out: Path) -> list[dict[str, Any]]:
    resources: list[dict[str, Any]] = json.loads((out / "plan.json").read_text())["resources"]
    return resources


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _mark(passed: bool | None) -> str:
    return {True: "[met]    ", False: "[NOT MET]", None: "[n/a]    "}[passed]


def _slope_ms(timings: dict[int, Timing], low: int, high: int) -> float | None:
    a, b = timings[low].median, timings[high].median
    return None if a is None or b is None else (b - a) / (high - low) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="timed runs per stack and tool (median reported)")
    parser.add_argument("--no-xpk", action="store_true", help="skip xpk (no install, no ratio)")
    args = parser.parse_args(argv)
    counts = stacks.SLICE_COUNTS

    with tempfile.TemporaryDirectory(prefix="tpu-stack-bench-") as scratch:
        root = Path(scratch)
        home = root / "home"
        home.mkdir()
        configs = {n: stacks.write(root, n) for n in counts}
        outs = {name: root / "out" / name for name in ["dev", "prod", *(stacks.name(n) for n in counts)]}

        ours = {n: Timing() for n in counts}
        dev = Timing()
        peer = {n: Timing() for n in counts}
        xpk_problem = "skipped (--no-xpk)" if args.no_xpk else None
        if not args.no_xpk:
            try:
                xpk.ensure_installed()
            except (OSError, RuntimeError) as error:
                xpk_problem = f"xpk unavailable: {error}"
        if xpk_problem:
            for timing in peer.values():
                timing.failure = xpk_problem

        # Warm-up (page cache, bytecode), not timed.
        _timed(_preview_command("dev", None, outs["dev"]))
        if not xpk_problem:
            _timed(xpk.command(1), env=xpk.environment(home))

        for _ in range(args.runs):
            _run_ours(dev, "dev", None, outs["dev"])
            for n in counts:
                _run_ours(ours[n], stacks.name(n), configs[n], outs[stacks.name(n)])
                _run_xpk(peer[n], n, home)
        prod = Timing()
        _run_ours(prod, "prod", None, outs["prod"])

        plans = {name: _plan(out) for name, out in outs.items() if (out / "plan.json").exists()}
        print(_timing_table(args.runs, dev, ours, peer, plans))
        print()
        model = _deploy_model(plans)
        print(_deploy_report(model, plans))
        print()
        print(_targets(dev, ours, peer, model, plans))
    return 0


def _timing_table(
    runs: int, dev: Timing, ours: dict[int, Timing], peer: dict[int, Timing], plans: dict[str, list[Any]]
) -> str:
    lines = [
        f"Offline preview vs xpk {xpk.VERSION} dry-run: whole-process wall time, median of {runs} runs "
        f"(interleaved), {os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
        "",
        f"{'stack':<11}{'slices':>7}{'resources':>11}{'ours s':>9}{'xpk s':>9}{'ours/xpk':>10}"
        f"{'ours ms/extra slice':>21}  notes",
    ]
    dev_count = len(plans.get("dev", []))
    lines.append(
        f"{'dev':<11}{'-':>7}{dev_count:>11}{_fmt(dev.median):>9}{'-':>9}{'-':>10}{'-':>21}  {dev.failure or ''}"
    )
    previous: int | None = None
    for n, timing in ours.items():
        ratio = _ratio(timing.median, peer[n].median)
        # Per-slice cost is only meaningful once slices dominate the fixed start-up cost.
        slope = _slope_ms(ours, previous, n) if previous is not None and previous >= GROWTH_FROM else None
        notes = [f"ours: {timing.failure}"] if timing.failure else []
        notes += [f"ours: {timing.note}"] if timing.note else []
        notes += [f"xpk: {peer[n].failure}"] if peer[n].failure else []
        count = len(plans.get(stacks.name(n), []))
        lines.append(
            f"{stacks.name(n):<11}{n:>7}{count:>11}{_fmt(timing.median):>9}{_fmt(peer[n].median):>9}"
            f"{_fmt(ratio):>10}{_fmt(slope):>21}  {'; '.join(notes)}"
        )
        previous = n
    return "\n".join(lines)


@dataclass
class DeployModel:
    shipped: int
    """`--parallel` of the deploy workflow."""
    by_limit: dict[int | None, dict[str, dict[str, deploy.Estimate]]]
    """GKE limit -> stack name -> column -> estimate."""
    sweep: list[tuple[int, float | None, float | None]]
    """(slices, ours with the shipped parallelism, xpk) for every size, under the first GKE limit."""


COLUMNS = ("shipped", "default", "xpk", "Cluster Toolkit")


def _deploy_model(plans: dict[str, list[Any]]) -> DeployModel:
    shipped = deploy.shipped_parallel()
    by_limit: dict[int | None, dict[str, dict[str, deploy.Estimate]]] = {}
    for _, limit in deploy.GKE_LIMITS:
        rows: dict[str, dict[str, deploy.Estimate]] = {}
        for name in ("dev", "prod", *(stacks.name(n) for n in stacks.DEPLOY_SLICES)):
            if name not in plans:
                continue
            steps = deploy.plan_steps(plans[name])
            rows[name] = {
                "shipped": deploy.ours(steps, shipped, limit),
                "default": deploy.ours(steps, deploy.DEFAULT_PARALLEL, limit),
            }
            slices = stacks.slices_of(name)
            if slices is not None:
                rows[name]["xpk"] = deploy.xpk(slices, limit)
                rows[name]["Cluster Toolkit"] = deploy.cluster_toolkit(slices, limit)
        by_limit[limit] = rows
    sweep = []
    smallest = stacks.name(min(stacks.DEPLOY_SLICES))
    headline = deploy.GKE_LIMITS[0][1]
    if smallest in plans:
        for n in range(1, max(stacks.DEPLOY_SLICES) + 1):
            steps = deploy.plan_steps(deploy.with_slices(plans[smallest], n))
            sweep.append((n, deploy.ours(steps, shipped, headline).minutes, deploy.xpk(n, headline).minutes))
    return DeployModel(shipped, by_limit, sweep)


def _deploy_report(model: DeployModel, plans: dict[str, list[Any]]) -> str:
    lines = [
        *deploy.inputs_report(),
        "",
        "Modelled first `pulumi up` (minutes; create times in bench/critical_path.py, scheduling in bench/schedule.py)",
        f"  shipped: --parallel {model.shipped} (.github/workflows); default: {deploy.DEFAULT_PARALLEL} "
        f"(4 x {deploy.HOSTED_RUNNER_VCPUS} vCPUs of a hosted runner); xpk {xpk.VERSION}: node pools in batches of "
        f"{deploy.XPK_BATCH}, no retry; Cluster Toolkit: terraform -parallelism={deploy.TERRAFORM_PARALLELISM}",
        "  'fails at N': a node pool create still refused at its create timeout (xpk: refused once) at minute N",
    ]
    for label, limit in deploy.GKE_LIMITS:
        rows = model.by_limit[limit]
        lines += ["", f"GKE accepts {label}", f"{'stack':<11}{'resources':>10}" + "".join(f"{c:>17}" for c in COLUMNS)
                  + f"{'shipped/xpk':>13}{'longest GKE wait':>18}"]  # fmt: skip
        for name, row in rows.items():
            cells = "".join(f"{row[c].describe() if c in row else '-':>17}" for c in COLUMNS)
            ratio = _ratio(row["shipped"].minutes, row["xpk"].minutes) if "xpk" in row else None
            wait = deploy.longest_slot_wait(row["shipped"])
            lines.append(f"{name:<11}{len(plans[name]):>10}{cells}{_fmt(ratio):>13}{wait:>14.1f} min")
    for name in ("dev", stacks.name(max(stacks.DEPLOY_SLICES))):
        if name in plans:
            path = critical_path.critical_path(plans[name])
            links = [f"{r['name']} ({critical_path.label(r)} {critical_path.minutes(r):g})" for r in path.chain]
            lines += ["", f"{name}: {path.minutes:g} min with no limits at all (its longest chain of waits)"]
            lines.append("  " + " -> ".join(links))
    return "\n".join(lines)


def _targets(
    dev: Timing,
    ours: dict[int, Timing],
    peer: dict[int, Timing],
    model: DeployModel,
    plans: dict[str, list[Any]],
) -> str:
    lines = ["Targets"]
    three, biggest = 3, max(stacks.SLICE_COUNTS)
    a, b = ours[three].median, peer[three].median
    dev_ratio = _ratio(dev.median, b)
    lines.append(
        f"  {_mark(None if dev_ratio is None else dev_ratio <= SMALL_RATIO)} offline preview of dev within "
        f"{SMALL_RATIO:g}x of xpk's dry-run of 3 slices: ours/xpk = {_fmt(dev_ratio)} ({_fmt(dev.median)} s vs "
        f"{_fmt(b)} s)"
    )
    ratio = _ratio(a, b)
    lines.append(
        f"  {_mark(None if ratio is None else ratio <= SMALL_RATIO)} offline preview of 3 slices within "
        f"{SMALL_RATIO:g}x of xpk's dry-run: ours/xpk = {_fmt(ratio)} ({_fmt(a)} s vs {_fmt(b)} s)"
    )
    big, peer_big = ours[biggest].median, peer[biggest].median
    large = _ratio(big, peer_big)
    lines.append(
        f"  {_mark(None if large is None else large <= LARGE_RATIO)} {biggest} slices within {LARGE_RATIO:g}x of "
        f"xpk's dry-run: ours/xpk = {_fmt(large)} ({_fmt(big)} s vs {_fmt(peer_big)} s)"
    )
    early, late = _slope_ms(ours, GROWTH_FROM, 64), _slope_ms(ours, 64, biggest)
    linear = None if early is None or late is None else late <= max(early, 0.0) * GROWTH_TOLERANCE
    lines.append(
        f"  {_mark(linear)} growth no worse than linear: {_fmt(late)} ms per extra slice from 64 to {biggest} vs "
        f"{_fmt(early)} from {GROWTH_FROM} to 64 (allowed up to {GROWTH_TOLERANCE:g}x)"
    )
    headline_label, headline = deploy.GKE_LIMITS[0]
    rows = model.by_limit.get(headline, {})
    compared = [(n, rows[stacks.name(n)]) for n in stacks.DEPLOY_SLICES if stacks.name(n) in rows]
    slower = [f"{n}: {row['shipped'].describe()} vs {row['xpk'].describe()}" for n, row in compared
              if row["shipped"].minutes is None or (row["xpk"].minutes is not None
                                                    and row["shipped"].minutes > row["xpk"].minutes)]  # fmt: skip
    shown = ", ".join(f"{n}: {row['shipped'].describe()} vs {row['xpk'].describe()}" for n, row in compared)
    lines.append(
        f"  {_mark(not slower if compared else None)} modelled `pulumi up` no slower than xpk with the shipped "
        f"--parallel {model.shipped}, GKE accepting {headline_label} ({'; '.join(slower) or shown})"
    )
    worse = [(n, a, b) for n, a, b in model.sweep if a is None or (b is not None and a > b)]
    ratios = [(a / b, n) for n, a, b in model.sweep if a is not None and b]
    worst = max(ratios, default=None)
    detail = ", ".join(f"{n}: {_fmt(a, 1)} vs {_fmt(b, 1)}" for n, a, b in worse[:5]) or (
        f"highest ours/xpk {worst[0]:.2f} at {worst[1]} slices" if worst else "not run"
    )
    lines.append(
        f"  {_mark(not worse if model.sweep else None)} ... and at every size from 1 to "
        f"{max(stacks.DEPLOY_SLICES)} slices ({detail})"
    )
    checked = [name for name in ("dev", "prod", stacks.name(biggest)) if name in plans]
    by_rule: dict[str, list[tuple[str, critical_path.Rule]]] = {}
    for name in checked:
        for rule in critical_path.rules(plans[name]):
            by_rule.setdefault(rule.name, []).append((name, rule))
    for rule_name, results in by_rule.items():
        verdicts = [r.passed for _, r in results if r.passed is not None]
        passed = all(verdicts) if verdicts else None
        detail = "; ".join(f"{stack}: {r.detail}" for stack, r in results)
        lines.append(f"  {_mark(passed)} {rule_name} ({detail})")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
