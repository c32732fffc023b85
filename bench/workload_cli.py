"""`tpu-stack list` and `why` on a cluster of 10,000 Workloads in 50 namespaces: API requests and seconds.

A local fake API server (tests/tpu_stack/fake_api.py, the one the command's tests use) serves 50 teams'
namespaces, each with its LocalQueue and ClusterQueue in one cohort and 200 Jobs with their Workloads as Kueue
v0.19.2 writes them: 60% admitted with their pods running and PodsReady=True, 30% pending with the scheduler's
message, 10% finished. The stack's outputs are the dev fixture stack's with 50 teams' queues (the command reads
`queues`, `flavors`, `tpuPools` and `stackConfig`). Each command runs in this process through `tpu_stack.cli.main`,
as a user runs it; the numbers are the requests the server received and the wall time, median of `--runs` runs.
Nothing is asserted: this prints numbers (design §6). Run: `.venv/bin/python -m bench.workload_cli`.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from tests.fixtures import stack_plan
from tests.tpu_stack import kueue_objects as k
from tests.tpu_stack.fake_api import FakeApi, serving
from tpu_stack import cli

NAMESPACES = 50
PER_NAMESPACE = 200
LABELS = k.MULTISLICE_LABELS


def _team(index: int) -> str:
    return f"team-{index:02d}"


def populate(api: FakeApi) -> None:
    """50 teams: queues, and 200 Workloads each (with the pods of the admitted ones)."""
    for index in range(NAMESPACES):
        team = _team(index)
        queue = k.cluster_queue(
            f"{team}-cluster-queue", team, cohort="tpu-stack", quotas={"multislice": ("8", "8")},
            reserved={"multislice": ("8", "0")},
        )  # fmt: skip
        api.add({**queue, "kind": "ClusterQueue"})
        api.add(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": f"{team}-queue", "namespace": team},
                "spec": {"clusterQueue": f"{team}-cluster-queue"},
            }
        )
        for number in range(PER_NAMESPACE):
            job = f"job-{index:02d}-{number:03d}"
            kind = number % 10
            if kind < 6:
                conditions = [
                    *k.admitted_conditions(f"{team}-cluster-queue", k.ago(minutes=30)),
                    k.condition("PodsReady", "True", "Started", "", k.ago(minutes=25)),
                ]
                admission = k.admission(f"{team}-cluster-queue", "main", "multislice", 2, 8)
            elif kind < 9:
                message = (
                    "couldn't assign flavors to pod set main: insufficient unused quota for google.com/tpu in flavor "
                    "multislice, 8 more needed"
                )
                conditions, admission = k.pending_conditions(message, k.ago(minutes=20)), None
            else:
                conditions = [k.condition("Finished", "True", "Succeeded", "Job finished successfully", k.ago(10))]
                admission = None
            workload = k.workload(
                "Job", job, team, f"{team}-queue", pods=2, chips_per_pod=4, labels=LABELS, conditions=conditions,
                admission=admission, suffix=f"{number:05x}", created=k.ago(hours=1, minutes=number % 60),
                recorded=admission is None,
            )  # fmt: skip
            api.add(workload)
            api.add(
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {"name": job, "namespace": team, "uid": f"job-uid-{job}",
                                 "labels": {"kueue.x-k8s.io/queue-name": f"{team}-queue"}},
                    "spec": {"parallelism": 2, "completions": 2, "suspend": admission is None},
                }
            )  # fmt: skip
            if admission is not None:
                for worker in range(2):
                    labels = {
                        "batch.kubernetes.io/job-name": job,
                        "batch.kubernetes.io/job-completion-index": str(worker),
                    }
                    pod = k.pod(f"{job}-{worker}-abcde", team, labels, running=True)
                    api.add({"apiVersion": "v1", "kind": "Pod", **pod})


def outputs_file(folder: Path) -> Path:
    outputs: dict[str, Any] = json.loads(json.dumps(stack_plan("dev", render_charts=False).outputs))
    outputs["queues"] = {
        _team(i): {
            "namespace": _team(i),
            "localQueue": f"{_team(i)}-queue",
            "clusterQueue": f"{_team(i)}-cluster-queue",
        }
        for i in range(NAMESPACES)
    }
    path = folder / "outputs.json"
    path.write_text(json.dumps(outputs))
    return path


def measure(api: FakeApi, argv: list[str], runs: int) -> tuple[int, float, int, str]:
    """(requests of one run, median seconds, exit code, first output line)."""
    seconds, requests, code, first = [], 0, 0, ""
    for _ in range(runs):
        before = len(api.requests)
        out, err = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        code = cli.main(argv, out=out, err=err)
        seconds.append(time.perf_counter() - start)
        requests = len(api.requests) - before
        first = (out.getvalue() or err.getvalue()).splitlines()[0] if (out.getvalue() or err.getvalue()) else ""
    return requests, statistics.median(seconds), code, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each command; the median time is printed")
    args = parser.parse_args()
    cli.clock = lambda: k.NOW  # ages against the objects' clock
    with tempfile.TemporaryDirectory() as scratch, serving(FakeApi(), lifetime=3600) as api:
        folder = Path(scratch)
        started = time.perf_counter()
        populate(api)
        workloads = sum(1 for path in api.objects if "/workloads/" in path)
        pods = sum(1 for path in api.objects if "/pods/" in path)
        print(f"fake API server: {workloads} Workloads, as many Jobs and {pods} pods in {NAMESPACES} namespaces "
              f"(built in {time.perf_counter() - started:.1f} s)")  # fmt: skip
        kubeconfig = folder / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(api.kubeconfig()))
        base = ["--outputs", str(outputs_file(folder)), "--kubeconfig", str(kubeconfig)]
        commands = [
            ("list", ["list"]),
            ("list --team team-25", ["list", "--team", "team-25"]),
            ("why job-25-126 (pending; every team searched)", ["why", "job-25-126"]),
            ("why job-25-126 --team team-25", ["why", "job-25-126", "--team", "team-25"]),
            ("why job-25-124 --team team-25 (running)", ["why", "job-25-124", "--team", "team-25"]),
        ]
        print(f"{'command':48} {'requests':>8} {'seconds':>8}  exit")
        for label, argv in commands:
            requests, seconds, code, _ = measure(api, base + argv, args.runs)
            print(f"{label:48} {requests:>8} {seconds:>8.2f}  {code}")
        print(f"(median of {args.runs} runs; the server and the command share this process and its CPUs)")


if __name__ == "__main__":
    main()
