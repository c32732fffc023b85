"""`python -m security <stack>...`: collect what the stacks render into build/scan/ for checkov.

Reads the offline preview's manifests and the example workloads of each stack (`make scan` writes them
first) and unwraps every JobSet into one batch/v1 Job per replicated job, and every LeaderWorkerSet into the
StatefulSets its controller creates (the leaders, and the workers of a group), so checkov's pod checks reach the
pod templates inside kinds it does not know. Their annotations travel along: a documented exception
(`checkov.io/skip<n>`) on the JobSet or LeaderWorkerSet holds for its pods. Objects the charts render that the
stack cannot annotate get their reviewed exceptions from chart_exceptions.yaml, written the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("manifests", "workloads")
CHART_EXCEPTIONS = Path(__file__).resolve().parent / "chart_exceptions.yaml"
SKIP_PREFIX = "checkov.io/skip"
# libyaml's parser and emitter where PyYAML was built with it (its wheels are): the charts' CRDs are megabytes, which
# the pure-Python ones take seconds per stack over.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def chart_exceptions(path: Path = CHART_EXCEPTIONS) -> list[dict[str, Any]]:
    """The reviewed exception entries: kind, name, namespace (absent: cluster-scoped), checks (id -> reason)."""
    entries: list[dict[str, Any]] = yaml.safe_load(path.read_text())
    return entries


def _key(obj: dict[str, Any]) -> tuple[str, str | None, str]:
    meta = obj.get("metadata") or {}
    return str(obj.get("kind")), meta.get("namespace"), str(meta.get("name"))


def annotate(objects: list[dict[str, Any]], exceptions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects, each listed one carrying its exceptions as `checkov.io/skip<n>: <check>=<reason>` after any
    skips it already has."""
    by_key = {(e["kind"], e.get("namespace"), e["name"]): e["checks"] for e in exceptions}
    for obj in objects:
        checks = by_key.get(_key(obj))
        if not checks:
            continue
        annotations = obj.setdefault("metadata", {}).setdefault("annotations", {}) or {}
        taken = sum(1 for key in annotations if key.startswith(SKIP_PREFIX))
        for n, (check, reason) in enumerate(sorted(checks.items()), taken + 1):
            annotations[f"{SKIP_PREFIX}{n}"] = f"{check}={reason}"
        obj["metadata"]["annotations"] = annotations
    return objects


def unwrap(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The object itself, or for a JobSet one Job per replicated job (name `<jobset>-<replicated job>`), or for a
    LeaderWorkerSet its leader and worker StatefulSets."""
    if obj.get("kind") == "LeaderWorkerSet":
        return _statefulsets(obj)
    if obj.get("kind") != "JobSet":
        return [obj]
    meta = obj.get("metadata") or {}
    jobs = []
    for replicated in (obj.get("spec") or {}).get("replicatedJobs") or []:
        job_meta = {"name": f"{meta.get('name')}-{replicated['name']}", "namespace": meta.get("namespace")}
        if meta.get("annotations"):
            job_meta["annotations"] = dict(meta["annotations"])
        spec = (replicated.get("template") or {}).get("spec") or {}
        jobs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": spec})
    return jobs


def _statefulsets(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """`<lws>` (the leaders, one per group) and `<lws>-workers` (a group's other hosts), as LWS creates them; the
    leader template defaults to the worker template."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    template = spec.get("leaderWorkerTemplate") or {}
    worker = template.get("workerTemplate") or {}
    sets = []
    for suffix, pod, replicas in (
        ("", template.get("leaderTemplate") or worker, spec.get("replicas", 1)),
        ("-workers", worker, max(0, int(template.get("size", 1)) - 1)),
    ):
        set_meta = {"name": f"{meta.get('name')}{suffix}", "namespace": meta.get("namespace")}
        if meta.get("annotations"):
            set_meta["annotations"] = dict(meta["annotations"])
        labels = dict((pod.get("metadata") or {}).get("labels") or {})
        sets.append(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": set_meta,
                "spec": {"replicas": replicas, "serviceName": meta.get("name"),
                         "selector": {"matchLabels": labels}, "template": pod},
            }
        )  # fmt: skip
    return sets


def rendered(build: Path, stack: str) -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    """(source file, its objects with JobSets unwrapped and chart exceptions written) for every manifest and
    workload of the stack."""
    exceptions = chart_exceptions()
    for source in SOURCES:
        for path in sorted((build / stack / source).glob("*.yaml")):
            objects = [o for o in yaml.load_all(path.read_text(), Loader=LOADER) if isinstance(o, dict)]
            yield path, annotate([out for obj in objects for out in unwrap(obj)], exceptions)


def collect(build: Path, stacks: list[str], out: Path) -> int:
    """Write build/scan/<stack>/<source>-<file>.yaml; returns how many objects were written."""
    count = 0
    for stack in stacks:
        target = out / stack
        target.mkdir(parents=True, exist_ok=True)
        for old in target.glob("*.yaml"):
            old.unlink()
        for path, objects in rendered(build, stack):
            text = yaml.dump_all(objects, Dumper=DUMPER, sort_keys=False)
            (target / f"{path.parent.name}-{path.name}").write_text(text)
            count += len(objects)
    return count


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m security STACK [STACK...]", file=sys.stderr)
        return 2
    build = REPO / "build"
    count = collect(build, argv, build / "scan")
    print(f"Wrote {count} objects of {', '.join(argv)} to {build / 'scan'}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
