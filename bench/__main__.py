"""`make bench`: offline preview time against xpk's dry-run, and the critical path of `pulumi up`.

Whole-process wall time of `python -m offline preview --quiet` (what a pull request waits for) for the dev
stack and for generated stacks of 1..256 flex-start v5e slices, side by side with `xpk cluster create
--dry-run` for the same cluster, runs interleaved so that machine noise hits both alike; medians. Then the
critical path of each plan (bench/critical_path.py) and the targets of design §6, each marked met or not.
These are measurements, not tests: the command exits 0 whatever the numbers are.
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

from bench import critical_path, stacks, xpk

REPO = Path(__file__).resolve().parent.parent
GROWTH_TOLERANCE = 1.25
"""Run-to-run noise on a 2-CPU machine: a later per-slice cost up to this factor still counts as linear."""
SMALL_RATIO = 0.8
"""A 3-slice preview, charts rendered and both real-engine views included, within 0.8x of xpk's dry run."""
LARGE_RATIO = 1.0
"""256 slices no slower than xpk's dry run of the same cluster, measured in the same run."""
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
        paths = {name: critical_path.critical_path(resources) for name, resources in plans.items()}
        print(_critical_path_report(paths, plans))
        print()
        print(_targets(ours, peer, paths, plans))
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


def _critical_path_report(paths: dict[str, critical_path.CriticalPath], plans: dict[str, list[Any]]) -> str:
    lines = [
        "Critical path of `pulumi up` on a fresh stack (minutes per resource type: bench/critical_path.py)",
        "",
        f"{'stack':<11}{'resources':>10}{'critical path':>15}{'one after another':>19}{'speed-up':>10}",
    ]
    for name, path in paths.items():
        speedup = path.sequential_minutes / path.minutes if path.minutes else None
        lines.append(
            f"{name:<11}{len(plans[name]):>10}{path.minutes:>11.1f} min{path.sequential_minutes:>15.1f} min"
            f"{_fmt(speedup, 1):>9}x"
        )
    for name in ("dev", "prod", stacks.name(max(stacks.SLICE_COUNTS))):
        if name in paths:
            chain = " -> ".join(
                f"{r['name']} ({critical_path.label(r)} {critical_path.minutes(r):g})" for r in paths[name].chain
            )
            lines += ["", f"{name}: {paths[name].minutes:g} min", f"  {chain}"]
    return "\n".join(lines)


def _targets(
    ours: dict[int, Timing],
    peer: dict[int, Timing],
    paths: dict[str, critical_path.CriticalPath],
    plans: dict[str, list[Any]],
) -> str:
    lines = ["Targets"]
    three, biggest = 3, max(stacks.SLICE_COUNTS)
    a, b = ours[three].median, peer[three].median
    ratio = _ratio(a, b)
    lines.append(
        f"  {_mark(None if ratio is None else ratio <= SMALL_RATIO)} offline preview of 3 slices within "
        f"{SMALL_RATIO:g}x of xpk's dry-run: ours/xpk = {_fmt(ratio)} ({_fmt(a)} s vs {_fmt(b)} s)"
    )
    big, peer_big = ours[biggest].median, peer[biggest].median
    large = _ratio(big, peer_big)
    lines.append(
        f"  {_mark(None if large is None else large <= LARGE_RATIO)} {biggest} slices no slower than xpk's "
        f"dry-run: ours/xpk = {_fmt(large)} ({_fmt(big)} s vs {_fmt(peer_big)} s)"
    )
    early, late = _slope_ms(ours, GROWTH_FROM, 64), _slope_ms(ours, 64, biggest)
    linear = None if early is None or late is None else late <= max(early, 0.0) * GROWTH_TOLERANCE
    lines.append(
        f"  {_mark(linear)} growth no worse than linear: {_fmt(late)} ms per extra slice from 64 to {biggest} vs "
        f"{_fmt(early)} from {GROWTH_FROM} to 64 (allowed up to {GROWTH_TOLERANCE:g}x)"
    )
    by_slices = {n: paths[stacks.name(n)].minutes for n in stacks.SLICE_COUNTS if stacks.name(n) in paths}
    flat = len(set(by_slices.values())) == 1 if len(by_slices) == len(stacks.SLICE_COUNTS) else None
    shown = ", ".join(f"{n}: {m:g}" for n, m in by_slices.items())
    lines.append(f"  {_mark(flat)} critical path independent of the number of slices (minutes by slices: {shown})")
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
