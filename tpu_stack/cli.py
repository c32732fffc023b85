"""The `tpu-stack` command line: submit, list, why, logs and delete the TPU workloads of a deployed stack.

Every problem is one `error:` line on stderr and an exit code a script can test (EXIT_CODES, also in --help).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO, TypeVar

import yaml

from tpu_stack import kube, kueue, stack, submit, why
from tpu_stack.adopt_errors import AdoptError
from tpu_stack.kueue import Obj

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_FORBIDDEN, EXIT_TIMEOUT = 0, 1, 2, 3, 4, 5
EXIT_WAITS, EXIT_STOPPED = 6, 7
EXIT_INTERRUPTED = 130
OUTCOME_CODES = {why.RUNS: EXIT_OK, why.WAITS: EXIT_WAITS, why.STOPPED: EXIT_STOPPED}
EXIT_CODES = f"""exit codes:
  {EXIT_OK}  done; why: the workload runs, or finished successfully (submit --wait: likewise)
  {EXIT_ERROR}  the cluster failed or refused the call (e.g. the name is taken)
  {EXIT_USAGE}  bad arguments or stack outputs: no such team, pool group or priority class, too many slices,
     no kubeconfig, unreadable outputs
  {EXIT_NOT_FOUND}  no such workload (logs: or no pod of it yet)
  {EXIT_FORBIDDEN}  the cluster refused the credentials, or the account may not do this (401/403)
  {EXIT_TIMEOUT}  submit --wait: not running before --timeout
  {EXIT_WAITS}  why: the workload waits, and runs without being submitted again (quota, a check, its nodes, a retry)
  {EXIT_STOPPED}  why (and submit --wait): stopped for good: failed, deactivated, or it can never run as submitted
"""


T = TypeVar("T")


def clock() -> datetime:
    """The time ages are counted to."""
    return datetime.now(UTC)


class UsageError(Exception):
    """Bad arguments; one line."""


@dataclass
class Session:
    """The stack's outputs and, once a command needs them, the cluster and a MultiKueue manager's workers."""

    args: argparse.Namespace
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    _stack: stack.Stack | None = None
    _cluster: kube.Cluster | kube.RecordedCluster | None = None
    _kubeconfig: dict[str, Any] | None = None
    _workers: dict[str, kube.Reader] = field(default_factory=dict)
    _view: why.StackView | None = None

    @property
    def stack(self) -> stack.Stack:
        if self._stack is None:
            outputs: Path | None = self.args.outputs
            self._stack = stack.from_file(outputs) if outputs else stack.from_pulumi(self.args.stack)
        return self._stack

    def kubeconfig(self) -> dict[str, Any]:
        if self._kubeconfig is None:
            path: Path | None = self.args.kubeconfig
            if path is not None:
                try:
                    config = yaml.safe_load(path.read_text())
                except (OSError, yaml.YAMLError) as error:
                    raise kube.KubeconfigError(f"--kubeconfig {path}: {error}") from None
                if not isinstance(config, dict):
                    raise kube.KubeconfigError(f"--kubeconfig {path}: not a kubeconfig")
            else:
                config = self.stack.kubeconfig()
            self._kubeconfig = config
        return self._kubeconfig

    @property
    def cluster(self) -> kube.Cluster:
        """The stack's own cluster, for commands that write (submit, delete)."""
        reader = self.reader
        if not isinstance(reader, kube.Cluster):
            raise UsageError("a recorded cluster state is read-only: submit and delete need a cluster")
        return reader

    @property
    def reader(self) -> kube.Cluster | kube.RecordedCluster:
        """The stack's own cluster (a MultiKueue stack's manager), or its recorded state (--recorded DIR)."""
        if self._cluster is None:
            recorded: Path | None = getattr(self.args, "recorded", None)
            if recorded is not None:
                self._cluster = kube.RecordedCluster(recorded)
            else:
                self._cluster = kube.Cluster(self.kubeconfig(), path=self.args.kubeconfig, context=self.args.context)
        return self._cluster

    def worker(self, name: str) -> kube.Reader:
        """A MultiKueue worker, reached with the user's own credentials at the DNS endpoint the stack outputs
        (`multiKueue.workers.<name>.clusterEndpoint`), or its recorded state in DIR/<name>/."""
        if name not in self._workers:
            recorded: Path | None = getattr(self.args, "recorded", None)
            if recorded is not None:
                self._workers[name] = kube.RecordedCluster(recorded / name)
            else:
                endpoint = (self.stack.workers.get(name) or {}).get("clusterEndpoint")
                if not endpoint:
                    raise kube.ClusterError(f"the stack's outputs name no endpoint of worker {name}")
                self._workers[name] = kube.Cluster(
                    self.kubeconfig(),
                    path=self.args.kubeconfig,
                    context=self.args.context,
                    server=kube.worker_server(str(endpoint)),
                )
        return self._workers[name]

    def namespaces(self, team: str | None) -> list[str]:
        """The team's namespace, or every team's."""
        queues = self.stack.queues
        if team is not None:
            if team not in queues:
                raise UsageError(f"--team {team}: no such team; this stack's teams are {', '.join(queues)}")
            return [queues[team].namespace]
        return sorted({ref.namespace for ref in queues.values()})

    def team_of(self, namespace: str) -> str:
        return next((team for team, ref in self.stack.queues.items() if ref.namespace == namespace), namespace)

    def view(self) -> why.StackView:
        """What `why` reads from the stack's outputs, read once."""
        if self._view is None:
            self._view = self.stack.view()
        return self._view

    def now(self) -> datetime:
        at: datetime | None = getattr(self.args, "at", None)
        return at or clock()

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
        for worker in self._workers.values():
            worker.close()


# ---- finding a workload ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    namespace: str
    name: str
    kind: str | None
    """JobSet or Job; None when only the Workload is left."""
    workload: Obj | None
    neighbours: list[Obj] = field(default_factory=list)
    """The other Workloads of its namespace, for the order of its queue."""


def _workloads(session: Session, namespace: str, reader: kube.Reader | None = None) -> list[Obj]:
    return (reader or session.reader).list(kube.kueue_path("workloads", namespace=namespace))


def _team_workloads(session: Session, team: str | None) -> tuple[dict[str, list[Obj]], list[str]]:
    """Namespace -> its Workloads, for the team's namespace or every team's, and the namespaces that could not be
    read. Without --team one paginated list of all namespaces is tried first (fewer requests on a big cluster);
    an account allowed only some namespaces is refused that (403) and reads them one by one."""
    namespaces = session.namespaces(team)
    if team is None:
        try:
            everything = session.reader.list(kube.kueue_path("workloads"))
        except kube.Unauthorized:
            raise
        except kube.Forbidden:
            pass
        else:
            grouped: dict[str, list[Obj]] = {namespace: [] for namespace in namespaces}
            for workload in everything:
                namespace = workload["metadata"].get("namespace")
                if namespace in grouped:
                    grouped[namespace].append(workload)
            return grouped, []
    found, skipped = _per_namespace(session, team, lambda namespace: _workloads(session, namespace))
    return dict(found), skipped


def _job_kind(reader: kube.Reader, namespace: str, name: str) -> tuple[str, Obj] | None:
    for kind, resource in (
        ("JobSet", kube.jobset_path(namespace=namespace, name=name)),
        ("Job", kube.job_path(namespace=namespace, name=name)),
    ):
        try:
            return kind, reader.get(resource)
        except kube.NotFound:
            continue
    return None


def _per_namespace(
    session: Session, team: str | None, read: Callable[[str], T]
) -> tuple[list[tuple[str, T]], list[str]]:
    """`read` in the team's namespace, or in every team's. Without --team, a namespace the account may not read (403)
    is skipped and named in the second list, as team members are usually allowed only their own; the command fails
    only when no namespace could be read. A 401 (credentials refused) fails at once."""
    results: list[tuple[str, T]] = []
    skipped: list[str] = []
    first: kube.Forbidden | None = None
    for namespace in session.namespaces(team):
        try:
            results.append((namespace, read(namespace)))
        except kube.Unauthorized:
            raise
        except kube.Forbidden as error:
            if team is not None:
                raise
            skipped.append(namespace)
            first = first or error
    if first is not None and not results:
        raise kube.Forbidden(f"{first} (no team's namespace could be read: {', '.join(skipped)})")
    return results, skipped


def _unread(skipped: list[str]) -> str:
    return f"namespace{'s' if len(skipped) > 1 else ''} {', '.join(skipped)} could not be read (403)"


def _located(session: Session, name: str) -> list[str] | None:
    """The team namespaces that hold a Job or JobSet named `name`: two requests across all namespaces
    (`fieldSelector=metadata.name=`, which the API server serves for every kind), instead of reading every Workload.
    None when the account may not list jobs cluster-wide (then the Workloads are searched)."""
    found: set[str] = set()
    for resource in (kube.path(kueue.JOBSET_GROUP, kueue.JOBSET_VERSION, "jobsets"), kube.path("batch", "v1", "jobs")):
        try:
            jobs = session.reader.list(resource, fieldSelector=f"metadata.name={name}")
        except kube.Unauthorized:
            raise
        except kube.Forbidden:
            return None
        except kube.NotFound:
            continue  # no JobSet API
        found |= {str(job["metadata"].get("namespace")) for job in jobs}
    teams = set(session.namespaces(None))
    return sorted(found & teams)


def find(session: Session, name: str, team: str | None) -> Found:
    """The workload `name` (its Job's or JobSet's name) in the team's namespace, or in any team's it may read."""
    if team is None:
        namespaces = _located(session, name)
        if namespaces:
            hits = []
            for namespace in namespaces:
                workloads = _workloads(session, namespace)
                workload = kueue.find_workload(workloads, name)
                job = None if workload is not None else _job_kind(session.reader, namespace, name)
                if workload is None and job is None:
                    continue  # gone since it was listed: neither its Workload nor its job is there
                owner = kueue.owner(workload) if workload is not None else None
                kind = owner[0] if owner else (job[0] if job else None)
                hits.append(Found(namespace, kueue.job_name(workload) if workload else name, kind, workload, workloads))
            if len(hits) > 1:
                teams = ", ".join(session.team_of(hit.namespace) for hit in hits)
                raise UsageError(f"{name!r} is in several teams' namespaces ({teams}); pick one with --team")
            if hits:
                return hits[0]
    by_namespace, skipped = _team_workloads(session, team)
    hits = []
    for namespace, workloads in by_namespace.items():
        workload = kueue.find_workload(workloads, name)
        if workload is not None:
            owner = kueue.owner(workload)
            kind = owner[0] if owner else None
            hits.append(Found(namespace, kueue.job_name(workload), kind, workload, workloads))
    if not hits:
        for namespace in by_namespace:
            job = _job_kind(session.reader, namespace, name)
            if job is not None:
                hits.append(Found(namespace, name, job[0], None, by_namespace[namespace]))
    if not hits:
        if team:
            raise kube.NotFound(f"no workload {name!r} in team {team}'s namespace")
        if skipped:
            searched = list(by_namespace)
            where = f"namespace{'s' if len(searched) > 1 else ''} {', '.join(searched)}"
            raise kube.NotFound(f"no workload {name!r} in {where}; {_unread(skipped)}")
        raise kube.NotFound(f"no workload {name!r} in the teams' namespaces")
    if len(hits) > 1:
        teams = ", ".join(session.team_of(hit.namespace) for hit in hits)
        raise UsageError(f"{name!r} is in several teams' namespaces ({teams}); pick one with --team")
    return hits[0]


def _pods(reader: kube.Reader, found: Found) -> list[Obj]:
    if found.kind is None:
        return []
    selector = kueue.pod_selector(found.kind, found.name)
    return reader.list(kube.path("", "v1", "pods", namespace=found.namespace), labelSelector=selector)


def _optional(read: Callable[[], Any], default: Any) -> Any:
    """What the account may read: a Service may be out of a team member's reach."""
    try:
        return read()
    except (kube.Forbidden, kube.NotFound):
        return default


def _job_path(kind: str, namespace: str, name: str) -> str:
    return (
        kube.jobset_path(namespace=namespace, name=name)
        if kind == "JobSet"
        else kube.job_path(namespace=namespace, name=name)
    )


def _workers_to_read(workload: Obj, view: why.StackView, events: list[Obj]) -> list[str]:
    """The MultiKueue workers that hold (or held) the workload: where it was admitted, where it was copied, or the
    worker the check says it lost (multikueue/workload.go)."""
    if not view.workers:
        return []
    status = workload.get("status", {})
    if status.get("clusterName"):
        return [str(status["clusterName"])]
    nominated = [str(w) for w in status.get("nominatedClusterNames") or []]
    if nominated:
        return nominated
    probe = why.Evidence(workload, events=events)
    last = why.last_worker(probe)
    return [last] if last and last in view.workers else []


def evidence(
    session: Session, found: Found, *, reader: kube.Reader | None = None, worker: str | None = None
) -> why.Evidence:
    """Everything `why` reads about a workload on one cluster: its LocalQueue, ClusterQueue and cohort, the
    AdmissionChecks, its ProvisioningRequests, its job, pods and the events of all of them; on a MultiKueue manager
    also its copies on the workers. What the account may not read (403) is named in `unreadable`; what does not
    exist (404: no Cohort object, no ProvisioningRequest API) is simply absent."""
    workload = found.workload
    assert workload is not None
    cluster = reader or session.reader
    unreadable: set[str] = set()

    def read(kind: str, call: Callable[[], Any], default: Any) -> Any:
        try:
            return call()
        except kube.Unauthorized:
            raise
        except kube.Forbidden:
            unreadable.add(kind)
            return default
        except kube.NotFound:
            return default

    view = session.view()
    spec, status = workload.get("spec", {}), workload.get("status", {})
    local_name = str(spec.get("queueName") or "")
    local_queue = (
        read(
            "localqueues",
            lambda: cluster.get(kube.kueue_path("localqueues", namespace=found.namespace, name=local_name)),
            None,
        )
        if local_name
        else None
    )
    queue_name = (
        (status.get("admission") or {}).get("clusterQueue")
        or (local_queue or {}).get("spec", {}).get("clusterQueue")
        or next(
            (
                ref.cluster_queue
                for ref in session.stack.queues.values()
                if ref.namespace == found.namespace and ref.local_queue == local_name
            ),
            None,
        )
    )
    queues: list[Obj] = read("clusterqueues", lambda: cluster.list(kube.kueue_path("clusterqueues")), [])
    queue = next((q for q in queues if q["metadata"]["name"] == queue_name), None)
    if queue is None and queue_name and "clusterqueues" in unreadable:
        queue = read("clusterqueues", lambda: cluster.get(kube.kueue_path("clusterqueues", name=queue_name)), None)
    cohort_name = (queue or {}).get("spec", {}).get("cohortName")
    cohort = (
        read("cohorts", lambda: cluster.get(kube.kueue_path("cohorts", name=cohort_name)), None)
        if cohort_name
        else None
    )
    inactive = any(
        c.get("type") == "Active" and c.get("status") == "False"
        for c in (queue or {}).get("status", {}).get("conditions", []) or []
    )
    checks = status.get("admissionChecks") or []
    admission_checks: list[Obj] = (
        read("admissionchecks", lambda: cluster.list(kube.kueue_path("admissionchecks")), [])
        if checks or inactive
        else []
    )
    requests: list[Obj] = []
    if checks:
        group, version, plural = kube.PROVISIONING
        uid = workload["metadata"].get("uid")
        owned = read(
            "provisioningrequests",
            lambda: cluster.list(kube.path(group, version, plural, namespace=found.namespace)),
            [],
        )
        requests = [
            r for r in owned if any(ref.get("uid") == uid for ref in r["metadata"].get("ownerReferences") or [])
        ]
    kind = found.kind
    job = read("jobs", lambda: cluster.get(_job_path(kind, found.namespace, found.name)), None) if kind else None
    # A MultiKueue manager runs no pods: they run on the worker that admitted the workload (read below).
    manager = bool(view.workers) and worker is None
    pods: list[Obj] = [] if manager else read("pods", lambda: _pods(cluster, found), [])
    names = {workload["metadata"]["name"], found.name, *(p["metadata"]["name"] for p in pods)}
    prefix = f"{found.name}-" if found.kind == "JobSet" else None
    events = [
        e
        for e in read("events", lambda: cluster.list(kube.path("", "v1", "events", namespace=found.namespace)), [])
        for involved in [e.get("involvedObject") or e.get("regarding") or {}]
        if involved.get("name") in names
        or (prefix and involved.get("kind") == "Job" and str(involved.get("name", "")).startswith(prefix))
    ]
    neighbours = [w for w in found.neighbours if w.get("spec", {}).get("queueName") == local_name]
    remote: dict[str, why.Evidence | why.Unread | None] = {}
    if worker is None:
        for name in _workers_to_read(workload, view, events):
            remote[name] = _remote(session, found, name)
    return why.Evidence(
        workload,
        queue,
        queues,
        cohort,
        requests,
        events,
        pods,
        frozenset(unreadable),
        local_queue=local_queue,
        queue_workloads=neighbours,
        admission_checks=admission_checks,
        job=job,
        job_ref=(found.kind, found.name) if found.kind else None,
        cluster=worker,
        remote=remote,
    )


def _remote(session: Session, found: Found, worker: str) -> why.Evidence | why.Unread | None:
    """The copy of a manager's workload on a worker (same name and namespace, multikueue/workload.go
    cloneForCreate), read there with the user's own credentials; None when the worker has none, or why it could not
    be read."""
    assert found.workload is not None
    name = found.workload["metadata"]["name"]
    try:
        reader = session.worker(worker)
        copy = reader.get(kube.kueue_path("workloads", namespace=found.namespace, name=name))
        return evidence(session, dataclasses.replace(found, workload=copy, neighbours=[]), reader=reader, worker=worker)
    except kube.NotFound:
        return None
    except kube.Forbidden as error:
        return why.Unread(str(error), refused=True)
    except kube.ClusterError as error:
        return why.Unread(str(error), refused=False)


def _age(obj: Obj, now: datetime) -> str:
    return why.age(kueue.timestamp(obj.get("metadata", {}).get("creationTimestamp")), now)


# ---- commands -------------------------------------------------------------------------------------------------


def _create(cluster: kube.Cluster, resource: str, body: Obj) -> Obj:
    """Create, and tell a 404 (the API or the namespace is missing) from "no such workload"."""
    try:
        return cluster.create(resource, body)
    except kube.NotFound as error:
        raise kube.ClusterError(f"the cluster refused POST {resource} (404): {error}") from None


def cmd_submit(session: Session) -> int:
    args = session.args
    config = session.stack.config()
    request = submit.Request(
        args.name,
        args.team,
        args.pool,
        args.slices,
        args.image,
        args.command_words,
        args.env or [],
        args.priority,
        jobset=args.jobset,
        containers_per_vm=args.containers_per_vm,
        max_exec_time=args.max_exec_time,
    )
    built = submit.build(config, request)
    if args.dry_run:
        session.out.write(yaml.safe_dump_all(built.objects, sort_keys=False))
        return EXIT_OK
    cluster = session.cluster
    namespace = built.queue.namespace
    main = next(obj for obj in built.objects if obj["kind"] in kueue.JOB_KINDS)
    resource = kube.jobset_path(namespace=namespace) if main["kind"] == "JobSet" else kube.job_path(namespace=namespace)
    try:
        _create(cluster, resource, main)
    except kube.Conflict:
        raise kube.Conflict(
            f"{main['kind']} {namespace}/{built.name} already exists: pick another name, or `tpu-stack delete "
            f"{built.name}` first"
        ) from None
    queue = f"{namespace}/{built.queue.local_queue}"
    print(
        f"submitted {main['kind']} {namespace}/{built.name}: {built.slices} slice(s) of {built.where} "
        f"({built.chips} TPU chips) via {queue}",
        file=session.out,
    )
    for line in submit.mounts(config, built):
        print(f"  mounts {line}", file=session.out)
    if not args.wait:
        print(f"Follow it with `tpu-stack why {built.name}` and `tpu-stack logs {built.name}`.", file=session.out)
        return EXIT_OK
    return _wait(session, Found(namespace, built.name, main["kind"], None), args.timeout, args.interval)


def _wait(session: Session, found: Found, timeout: float, interval: float) -> int:
    """Report each change until the workload runs (0), stops for good (7) or `timeout` seconds pass (5)."""
    start = time.monotonic()
    last = ""
    while True:
        workloads = _workloads(session, found.namespace)
        workload = kueue.find_workload(workloads, found.name)
        now = session.now()
        if workload is None:
            outcome, state, text = why.WAITS, "Created", "Created: waiting for Kueue to create its Workload."
        else:
            diagnosis = why.explain(
                evidence(session, dataclasses.replace(found, workload=workload, neighbours=workloads)),
                session.view(),
                now,
            )
            outcome, state, text = diagnosis.outcome, diagnosis.state, diagnosis.reason
        elapsed = int(time.monotonic() - start)
        line = f"[{elapsed // 60}:{elapsed % 60:02d}] {text}"
        if text != last:
            print(line, file=session.out, flush=True)
            last = text
        if outcome != why.WAITS:
            return OUTCOME_CODES[outcome]
        if timeout and time.monotonic() - start >= timeout:
            print(f"error: {found.name} is not running after {timeout:g} s (state {state})", file=session.err)
            return EXIT_TIMEOUT
        time.sleep(interval)


def _pods_by_job(pods: list[Obj]) -> dict[str, list[Obj]]:
    """Pods grouped by the Job or JobSet that runs them (the labels JobSet and the Job controller set)."""
    grouped: dict[str, list[Obj]] = {}
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        owner = labels.get(kueue.JOBSET_NAME_LABEL) or labels.get(kueue.JOB_NAME_LABEL)
        if owner:
            grouped.setdefault(str(owner), []).append(pod)
    return grouped


def cmd_list(session: Session) -> int:
    """One row per Workload, from paginated lists: the Workloads (one list, or one per namespace), pods only for
    admitted workloads that carry no PodsReady condition, one list per namespace and cluster that runs them, and on a
    MultiKueue manager the workers' copies, one list per worker and namespace, for the flavor each worker admitted."""
    now = session.now()
    flavors = session.stack.flavors
    manager = bool(session.stack.workers)
    by_namespace, skipped = _team_workloads(session, session.args.team)
    wanted = {
        (kueue.cluster_name(w) or "", namespace)
        for namespace, workloads in by_namespace.items()
        for w in workloads
        if kueue.needs_pods(w)
    }
    dispatched = {
        (str(kueue.cluster_name(w)), namespace)
        for namespace, workloads in by_namespace.items()
        for w in workloads
        if manager and kueue.cluster_name(w)
    }
    pods: dict[tuple[str, str], dict[str, list[Obj]]] = {}
    copies: dict[tuple[str, str], dict[str, Obj]] = {}
    for cluster, namespace in sorted(wanted | dispatched):
        key, where = (cluster, namespace), cluster or "the cluster"
        if key in wanted:
            try:
                reader = session.worker(cluster) if cluster else session.reader
                pods[key] = _pods_by_job(reader.list(kube.path("", "v1", "pods", namespace=namespace)))
            except kube.ClusterError as error:
                _unlisted(session, error, cluster, f"pods of {namespace} on {where}")
        if key in dispatched:
            try:
                listed = _workloads(session, namespace, session.worker(cluster))
                copies[key] = {w["metadata"]["name"]: w for w in listed}
            except kube.ClusterError as error:
                _unlisted(session, error, cluster, f"workloads of {namespace} on {where}")
    header = ["NAME", "KIND", "TEAM", "QUEUE", "FLAVOR", "ADMITTED", "AGE", "STATE"]
    rows: list[list[str]] = [[*header, "CLUSTER"] if manager else header]
    for namespace, workloads in by_namespace.items():
        for workload in sorted(workloads, key=lambda w: str(w["metadata"]["creationTimestamp"])):
            owner = kueue.owner(workload)
            kind, name = owner if owner else ("Workload", workload["metadata"]["name"])
            cluster = kueue.cluster_name(workload) or ""
            own_pods = pods.get((cluster, namespace), {}).get(name, [])
            if manager:
                # The manager reserves quota in a flavor of its own queues; the pods run in the flavor the worker
                # admitted its copy on (same name and namespace, multikueue/workload.go cloneForCreate).
                copy = copies.get((cluster, namespace), {}).get(workload["metadata"]["name"])
                flavor = (kueue.admitted_flavor(copy) if copy else None) or "-"
            else:
                flavor = kueue.admitted_flavor(workload) or kueue.selected_flavor(workload, flavors) or "-"
            row = [
                name,
                kind,
                session.team_of(namespace),
                str(workload.get("spec", {}).get("queueName", "-")),
                flavor,
                "yes" if kueue.is_true(workload, kueue.ADMITTED) else "no",
                _age(workload, now),
                kueue.state(workload, own_pods),
            ]
            rows.append([*row, cluster or "-"] if manager else row)
    if skipped:
        print(f"note: {_unread(skipped)}; its workloads are not listed", file=session.err)
    if len(rows) == 1:
        print("No workloads.", file=session.out)
        return EXIT_OK
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip(), file=session.out)
    return EXIT_OK


def _unlisted(session: Session, error: kube.ClusterError, cluster: str, what: str) -> None:
    """A read `list` goes on without: a MultiKueue worker that refuses the credentials (401) or the account (403),
    has no endpoint in the outputs or does not answer leaves its rows to the manager's record, as does the stack's own
    cluster refusing pods (403); only the stack's own cluster refusing the credentials (401) fails the command."""
    if not cluster and isinstance(error, kube.Unauthorized):
        raise error
    print(f"note: {what} could not be read: {error}", file=session.err)


def diagnose(session: Session, found: Found) -> why.Diagnosis:
    now = session.now()
    if found.workload is None:
        assert found.kind is not None
        job = session.reader.get(_job_path(found.kind, found.namespace, found.name))
        try:
            pods, hidden = _pods(session.reader, found), False
        except kube.Unauthorized:
            raise
        except kube.Forbidden:
            pods, hidden = [], True
        return why.unmanaged(found.kind, job, pods, now, pods_hidden=hidden)
    return why.explain(evidence(session, found), session.view(), now)


def cmd_why(session: Session) -> int:
    found = find(session, session.args.name, session.args.team)
    diagnosis = diagnose(session, found)
    if session.args.json:
        answer = {
            "name": found.name,
            "namespace": found.namespace,
            "kind": found.kind,
            "cluster": diagnosis.cluster,
            "state": diagnosis.state,
            "outcome": diagnosis.outcome,
            "who": list(diagnosis.who),
            "reason": diagnosis.reason,
            "change": diagnosis.change,
        }
        print(json.dumps(answer, indent=2), file=session.out)
    else:
        print(diagnosis.text, file=session.out)
    return OUTCOME_CODES[diagnosis.outcome]


def _leader_first(pod: Obj) -> tuple[str, str]:
    return (str(pod["metadata"].get("creationTimestamp", "")), str(pod["metadata"]["name"]))


def cmd_logs(session: Session) -> int:
    """The pod's log from the cluster that runs it: on a MultiKueue manager, the worker that admitted it."""
    args = session.args
    found = find(session, args.name, args.team)
    worker = kueue.cluster_name(found.workload) if found.workload else None
    if worker is None and session.stack.workers and found.workload is not None:
        raise kube.NotFound(
            f"{found.name} runs on no worker yet: MultiKueue has not admitted it on one; `tpu-stack why {found.name}` "
            "tells why"
        )
    reader: kube.Reader = _at(worker, lambda: session.worker(worker)) if worker else session.reader
    pods = _at(worker, lambda: _pods(reader, found))
    wanted = {kueue.COMPLETION_INDEX_LABEL: str(args.worker)}
    if found.kind == "JobSet":
        wanted[kueue.JOBSET_JOB_INDEX_LABEL] = str(args.slice)
    elif args.slice:
        raise UsageError(f"--slice {args.slice}: {found.name} is a Job over one slice; leave --slice out")
    matching = [
        p
        for p in pods
        if all((p["metadata"].get("labels") or {}).get(key, "0") == value for key, value in wanted.items())
    ]
    if not matching:
        where = f"slice {args.slice} worker {args.worker}" if found.kind == "JobSet" else f"worker {args.worker}"
        on = f" on {worker}" if worker else ""
        raise kube.NotFound(f"no pod of {found.name} for {where}{on} yet; `tpu-stack why {found.name}` tells why")
    pod = max(matching, key=_leader_first)
    names = [str(c["name"]) for c in pod["spec"]["containers"]]
    container = args.container or (kueue.WORKLOAD_CONTAINER if kueue.WORKLOAD_CONTAINER in names else names[0])
    lines = reader.log_lines(found.namespace, pod["metadata"]["name"], container=container, follow=args.follow)
    _at(worker, lambda: _print_lines(lines, session.out, flush=args.follow))
    return EXIT_OK


def _print_lines(lines: Iterator[str], out: TextIO, *, flush: bool) -> None:
    for line in lines:
        print(line, file=out, flush=flush)


def _at(worker: str | None, call: Callable[[], T]) -> T:
    """`call`, whose errors name the MultiKueue worker it reached (None: the stack's own cluster, named by none)."""
    try:
        return call()
    except kube.ClusterError as error:
        if worker is None:
            raise
        raise type(error)(f"worker {worker}: {error}") from None


def cmd_delete(session: Session) -> int:
    found = find(session, session.args.name, session.args.team)
    cluster = session.cluster
    if found.kind is None:
        assert found.workload is not None
        cluster.delete(kube.kueue_path("workloads", namespace=found.namespace, name=found.workload["metadata"]["name"]))
        print(f"deleted Workload {found.namespace}/{found.workload['metadata']['name']}", file=session.out)
        return EXIT_OK
    if found.kind == "JobSet":
        cluster.delete(kube.jobset_path(namespace=found.namespace, name=found.name))
    else:
        cluster.delete(kube.job_path(namespace=found.namespace, name=found.name))
        # The headless Service of a multi-host Job written by `make workloads` (submit makes the Job own it).
        service = kube.path("", "v1", "services", namespace=found.namespace, name=f"{found.name}-svc")
        existing = _optional(lambda: cluster.get(service), None)
        generated = existing and existing.get("spec", {}).get("selector") == {"job-name": found.name}
        if generated and not existing["metadata"].get("ownerReferences"):
            cluster.delete(service)
    print(f"deleted {found.kind} {found.namespace}/{found.name}", file=session.out)
    return EXIT_OK


def cmd_adopt(session: Session) -> int:
    """Write the adopted stack's file, what was read and the report; each refusal also as one `refused:` line, and
    exit 2 when there is one (what adopt keeps as found is no refusal)."""
    from offline.imports import ExistingError, read_existing
    from tpu_stack import adopt

    args = session.args
    if args.saved is not None:
        try:
            saved = read_existing(args.saved)
        except ExistingError as error:
            raise AdoptError(str(error)) from None
    else:
        if not (args.project and args.location and args.cluster):
            raise UsageError("adopt needs --from DIR (saved outputs) or --project, --location and --cluster (live)")
        if args.kubeconfig is None:
            raise UsageError("adopt --cluster reads the Kueue objects live: pass --kubeconfig (gcloud get-credentials)")
        try:
            kubeconfig = yaml.safe_load(args.kubeconfig.read_text())
        except (OSError, yaml.YAMLError) as error:
            raise kube.KubeconfigError(f"--kubeconfig {args.kubeconfig}: {error}") from None
        if not isinstance(kubeconfig, dict):
            raise kube.KubeconfigError(f"--kubeconfig {args.kubeconfig}: not a kubeconfig")
        saved = adopt.read_live(
            args.project,
            args.location,
            args.cluster,
            kubeconfig,
            kubeconfig_path=args.kubeconfig,
            context=args.context,
        )
    adoption = adopt.interpret(saved, stack=args.stack_name, project=args.project)
    stack_file = args.stack_dir / f"Pulumi.{args.stack_name}.yaml"
    if stack_file.exists() and not args.force:
        raise UsageError(f"{stack_file} exists; pass --force to overwrite it")
    out = args.out or Path("adopt") / args.stack_name
    _outcome, text = adopt.write(adoption, out, stack_file, exception_days=args.exception_days)
    print(text, file=session.out)
    print(
        f"Wrote {stack_file}, {out / 'report.txt'}, {out / 'policy-config.json'}, {out / 'existing'}/",
        file=session.out,
    )
    print(
        f"Preview it offline: python -m offline preview --stack {args.stack_name} --config {stack_file} "
        f"--existing {out / 'existing'} --policy-config {out / 'policy-config.json'}",
        file=session.out,
    )
    refused = [f.line for f in adoption.findings if f.kind == "refused"]
    for line in refused:
        print(f"refused: {line}", file=session.err)
    return EXIT_USAGE if refused else EXIT_OK


# ---- parsing --------------------------------------------------------------------------------------------------


def _positive_days(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 365:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of days from 1 to 365")
    return int(value)


def _instant(value: str) -> datetime:
    try:
        found = kueue.timestamp(value)
    except ValueError:
        found = None
    if found is None:
        raise argparse.ArgumentTypeError(f"{value!r} is not an RFC 3339 time such as 2026-05-04T12:00:00Z")
    return found


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog="tpu-stack",
        description="Submit, list, explain, follow and delete TPU workloads on a deployed tpu-stack.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = main.add_mutually_exclusive_group()
    source.add_argument("--stack", help="read `pulumi stack output` of this stack (default: the selected stack)")
    source.add_argument(
        "--outputs", type=Path, metavar="FILE", help="read saved outputs (`pulumi stack output --json --show-secrets`)"
    )
    main.add_argument("--kubeconfig", type=Path, metavar="FILE", help="use this kubeconfig, not the stack's output")
    main.add_argument("--context", help="the kubeconfig context to use (default: its current-context)")
    main.add_argument(
        "--recorded",
        type=Path,
        metavar="DIR",
        help="read a recorded cluster state instead of a cluster: `kubectl get ... -o json` files in DIR (a MultiKueue "
        "worker's in DIR/<worker>/); list, why and logs only",
    )
    main.add_argument(
        "--at",
        type=_instant,
        metavar="TIME",
        help="count ages and timers to this time (RFC 3339, e.g. 2026-05-04T12:00:00Z; default: now), for a "
        "recorded state",
    )
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=EXIT_CODES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    run = command("submit", "submit a Job (one slice) or JobSet (several) of a pool group into a team's queue")
    run.usage = "tpu-stack submit NAME --image IMAGE [options] [-- COMMAND [ARG ...]]"
    run.add_argument("name", help="name of the Job or JobSet (lowercase letters, digits, '-')")
    run.add_argument("--team", help="team whose queue admits it (default: the only team)")
    run.add_argument(
        "--pool",
        help="pool group (Kueue flavor) to run on, or a capacity ladder: Kueue tries its rungs in order (default: the "
        "only one)",
    )
    run.add_argument(
        "--slices", type=int, default=1, metavar="N", help="slices of the pool group (default 1; more: a JobSet)"
    )
    run.add_argument(
        "--jobset", action="store_true", help="a JobSet even for a single-host slice (multi-host slices always are one)"
    )
    run.add_argument(
        "--containers-per-vm",
        type=int,
        metavar="N",
        help="TPU containers in each pod: 1 for one with all the VM's chips (default: one per NUMA node, 2 on TPU7x)",
    )
    run.add_argument("--image", required=True, help="container image, pinned by tag (not latest) or digest")
    run.add_argument("--env", action="append", metavar="NAME=VALUE", help="environment variable (repeatable)")
    run.add_argument("--priority", metavar="CLASS", help="priority class (default: the stack's lowest)")
    run.add_argument(
        "--max-exec-time",
        metavar="DURATION",
        help="Kueue deactivates the workload once it has been admitted this long in all (e.g. 36h; its pods' waits "
        "count too)",
    )
    run.add_argument("--dry-run", action="store_true", help="print the manifest and submit nothing")
    run.add_argument("--wait", action="store_true", help="report progress until it runs")
    run.add_argument(
        "--timeout",
        type=float,
        default=0,
        metavar="SECONDS",
        help="with --wait: give up after SECONDS (default: never)",
    )
    run.add_argument(
        "--interval", type=float, default=10, metavar="SECONDS", help="with --wait: seconds between checks (default 10)"
    )
    run.epilog = (
        "After `--`: the container's command and its arguments (default: the image's entrypoint).\n\n" + EXIT_CODES
    )
    run.set_defaults(run=cmd_submit)

    listing = command("list", "list workloads: queue, flavor, admitted or not, age and state")
    listing.add_argument("--team", help="only this team's (default: every team's)")
    listing.set_defaults(run=cmd_list)

    explain = command("why", "why a workload is not running, with the numbers, and what would change it")
    explain.add_argument("name", help="name of the Job or JobSet")
    explain.add_argument("--team", help="the team whose namespace holds it (default: search every team's)")
    explain.add_argument(
        "--json",
        action="store_true",
        help="print state, outcome, who and the sentences as JSON (the exit code says runs, waits or stopped)",
    )
    explain.set_defaults(run=cmd_why)

    logs = command("logs", "print a pod's logs: the leader (slice 0, worker 0) unless told otherwise")
    logs.add_argument("name", help="name of the Job or JobSet")
    logs.add_argument("--team", help="the team whose namespace holds it (default: search every team's)")
    logs.add_argument("--slice", type=int, default=0, metavar="N", help="slice (JobSet child Job index; default 0)")
    logs.add_argument("--worker", type=int, default=0, metavar="N", help="worker (VM) within the slice (default 0)")
    logs.add_argument("--container", help=f"container (default: {kueue.WORKLOAD_CONTAINER}, else the pod's first)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing as the pod logs")
    logs.set_defaults(run=cmd_logs)

    remove = command("delete", "delete a workload (its pods, Service and Kueue Workload go with it)")
    remove.add_argument("name", help="name of the Job or JobSet")
    remove.add_argument("--team", help="the team whose namespace holds it (default: search every team's)")
    remove.set_defaults(run=cmd_delete)

    take = command("adopt", "describe a cluster xpk or Cluster Toolkit made as a stack, and import it (docs/adopt.md)")
    take.add_argument("stack_name", metavar="STACK", help="name of the stack to write (Pulumi.STACK.yaml)")
    take.add_argument("--from", dest="saved", type=Path, metavar="DIR", help="saved outputs: cluster.json, "
                      "node-pools.json and kubectl's *.json (docs/adopt.md names the commands)")  # fmt: skip
    take.add_argument("--project", help="the cluster's project (live; default: from the cluster's selfLink)")
    take.add_argument("--location", help="the cluster's region or zone (live)")
    take.add_argument("--cluster", help="the cluster's name (live, with --kubeconfig)")
    take.add_argument("--stack-dir", type=Path, default=Path(), metavar="DIR", help="where Pulumi.STACK.yaml goes")
    take.add_argument("--out", type=Path, metavar="DIR", help="report and what was read (default adopt/STACK)")
    take.add_argument("--force", action="store_true", help="overwrite an existing Pulumi.STACK.yaml")
    take.add_argument("--exception-days", type=_positive_days, default=90, metavar="N",
                      help="days the adopted pools' policy exceptions last (default 90; docs/adopt.md)")  # fmt: skip
    take.set_defaults(run=cmd_adopt)
    return main


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # `submit ... -- COMMAND ARGS`: everything after the first `--` is the container's command, kept whole
    # (argparse would read its options as ours).
    split = words.index("--") if "--" in words else len(words)
    args = parser().parse_args(words[:split])
    args.command_words = words[split + 1 :]
    if args.command_words and args.run is not cmd_submit:
        parser().error("only submit takes a command after `--`")
    session = Session(args, out or sys.stdout, err or sys.stderr)
    code = EXIT_OK
    try:
        code = int(args.run(session))
    except (UsageError, stack.StackError, submit.SubmitError, kube.KubeconfigError, AdoptError) as error:
        code = _fail(session, error, EXIT_USAGE)
    except kube.NotFound as error:
        code = _fail(session, error, EXIT_NOT_FOUND)
    except kube.Forbidden as error:
        code = _fail(session, error, EXIT_FORBIDDEN)
    except kube.ClusterError as error:
        code = _fail(session, error, EXIT_ERROR)
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    finally:
        session.close()
    return code


def _fail(session: Session, error: Exception, code: int) -> int:
    print(f"error: {error}", file=session.err)
    return code
