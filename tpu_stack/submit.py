"""`submit`: a Job (one single-host slice) or a JobSet (multi-host slices) of a pool group or a capacity ladder,
into a team's LocalQueue.

The objects are built by components/workloads.py, the code of `make workloads` (flavor labels and
tolerations, or only the shape on a ladder; chips per VM, one node pool per slice, the namespace's bucket KSA and
Cloud Storage FUSE mounts, the lowest priority class); only the container's image, command and environment, and
the priority class when asked, are the user's. What the stack cannot run is refused before anything reaches the
cluster. `--pool` takes a pool group in no ladder, or a ladder's name: Kueue may admit a workload of a ladder's
shape on any of its rungs, so a rung is not a target of its own.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from components import workloads
from components.config.base import parse_duration
from components.config.pools import TpuPoolConfig
from components.config.queues import QueueRef, queue_refs
from components.config.serving import bucket_mounts, pinned_image
from components.config.stack import StackConfig
from tpu_stack.kueue import Obj

DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
NAME_MAX = 63
MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
"""Kueue 0.19.2 pkg/controller/constants/constants.go MaxExecTimeSecondsLabel: a label of the job, copied to the
Workload's spec.maximumExecutionTimeSeconds (jobframework/utils.go MaximumExecutionTimeSecondsForObject)."""
MAX_EXEC_SECONDS = 2**31 - 1
"""Kueue parses the label as a 32-bit integer (strconv.ParseInt(value, 10, 32)) and ignores a larger one."""
POD_SUFFIX = 6
"""`-xxxxx`: the random suffix the Job controller gives each pod name (JobSet's webhook checks with it too)."""


class SubmitError(Exception):
    """The request cannot run on this stack; the message is one line naming the flag to change."""


@dataclass(frozen=True)
class Request:
    name: str
    team: str | None
    pool: str | None
    slices: int
    image: str
    command: list[str]
    env: list[str]
    priority: str | None
    jobset: bool = False
    """A JobSet even for a single-host slice (a multi-host slice is always one)."""
    containers_per_vm: int | None = None
    """TPU containers per VM: 1, or the machine's NUMA nodes (the default)."""
    max_exec_time: str | None = None
    """Kueue's limit on the time the workload is admitted (`36h`), summed over its admissions: then it is
    deactivated."""


@dataclass(frozen=True)
class Submission:
    """What `submit` creates: `objects` (as `make workloads` writes them) in `queue`, on `target` (a pool group or
    a ladder)."""

    name: str
    queue: QueueRef
    target: workloads.Target
    slices: int
    objects: tuple[Obj, ...]

    @property
    def pool(self) -> TpuPoolConfig:
        """The slice shape: the pool group, or a ladder's first rung (every rung has its shape)."""
        return workloads.shape_of(self.target)

    @property
    def chips(self) -> int:
        return self.slices * self.pool.chips_per_slice

    @property
    def where(self) -> str:
        """The target in words: `multislice`, or `ladder multislice (multislice-spot, then multislice)`."""
        if isinstance(self.target, workloads.Ladder):
            rungs = ", then ".join(pool.name for pool in self.target.rungs)
            return f"ladder {self.target.name} ({rungs})"
        return self.target.name


def _team(config: StackConfig, team: str | None) -> tuple[str, QueueRef]:
    refs = queue_refs(config.queues)
    if team is None:
        if len(refs) == 1:
            return next(iter(refs.items()))
        raise SubmitError(f"--team is required: this stack's teams are {', '.join(refs)}")
    if team not in refs:
        raise SubmitError(f"--team {team}: no such team; this stack's teams are {', '.join(refs)}")
    return team, refs[team]


def _targets(config: StackConfig) -> str:
    names = [
        f"{t.name} (ladder: {', '.join(p.name for p in t.rungs)})" if isinstance(t, workloads.Ladder) else t.name
        for t in workloads.targets(config)
    ]
    return ", ".join(names) or "none"


def _target(config: StackConfig, pool: str | None) -> workloads.Target:
    """The pool group or ladder `--pool` names (a ladder first: it may share its name with its first rung)."""
    targets = workloads.targets(config)
    if pool is None:
        if len(targets) == 1:
            return targets[0]
        raise SubmitError(f"--pool is required: this stack's pool groups are {_targets(config)}")
    ladders = workloads.ladders(config)
    if pool in ladders:
        return ladders[pool]
    pools = {p.name: p for p in config.queue_pools}
    if pool in pools:
        ladder = config.ladder_of(pools[pool])
        if ladder is not None:
            raise SubmitError(
                f"--pool {pool}: pool group {pool} is a rung of ladder {ladder}, and Kueue may admit a workload of its "
                f"shape on any rung; submit to --pool {ladder}"
            )
        return pools[pool]
    serving = config.outside_queues
    if pool in serving:
        others = _targets(config)
        where = (
            f": submit to another pool group (this stack's: {others})"
            if others != "none"
            else ", and this stack has none"
        )
        raise SubmitError(f"--pool {pool}: pool group {pool} {serving[pool]}; it is not Kueue capacity{where}")
    raise SubmitError(f"--pool {pool}: no such pool group; this stack's pool groups are {_targets(config)}")


def _reach(config: StackConfig, team: str, pool: TpuPoolConfig) -> tuple[int, str]:
    """The most chips of `pool` the team's queue can ever hold, and why (its share and borrowing limit)."""
    if not config.queues.teams:
        return pool.total_chips, f"the pool group has {pool.total_chips}"
    reach, share, limit = workloads.team_reach(config, team, pool)
    if limit is None:
        return pool.total_chips, f"the pool group has {pool.total_chips}"
    return reach, f"team {team} may hold {reach} (share {share} + borrowing limit {limit})"


def _check_slices(config: StackConfig, team: str, target: workloads.Target, slices: int) -> None:
    """On a ladder, enough slices must fit one rung for Kueue to ever admit the workload, and none may be a queued
    rung: Kueue admits on any rung whose quota holds the workload, and a queued rung's ProvisioningRequest provisions
    one slice per workload. On a pool group, that group. (`make workloads` asks more: its examples fit every rung.)"""
    if slices < 1:
        raise SubmitError(f"--slices {slices}: give 1 or more")
    rungs = workloads.rungs_of(target)
    shape = rungs[0]
    if slices > 1 and not shape.multi_host:
        raise SubmitError(
            f"--slices {slices}: {shape.slice_topology} slices of {shape.machine.name} are single-host, and GKE's "
            "Multislice joins multi-host slices only; submit one workload per slice, or use a multi-host pool group"
        )
    if isinstance(target, workloads.Ladder):
        queued = [pool.name for pool in rungs if pool.provisioning == "queued"]
        if slices > 1 and queued:
            raise SubmitError(
                f"--slices {slices}: rung {queued[0]} of ladder {target.name} is queued provisioning, which provisions "
                "one slice per workload, and Kueue may admit the workload on any rung whose quota holds it; submit "
                "one slice per workload, as `make workloads` does"
            )
        fits = [pool for pool in rungs if _fits(config, team, pool, slices)]
        if fits:
            return
        where = "; ".join(f"{pool.name}: {_why_not(config, team, pool, slices)}" for pool in rungs)
        raise SubmitError(f"--slices {slices}: no rung of ladder {target.name} can take it ({where})")
    pool = rungs[0]
    if slices > pool.slices:
        raise SubmitError(f"--slices {slices}: pool group {pool.name} has {pool.slices} slice(s)")
    if pool.provisioning == "queued" and slices > 1:
        raise SubmitError(
            f"--slices {slices}: pool group {pool.name} is queued provisioning; submit one slice per workload, as "
            "`make workloads` does"
        )
    chips = slices * pool.chips_per_slice
    reach, why = _reach(config, team, pool)
    if chips <= reach:
        return
    most = reach // pool.chips_per_slice
    if most == 0:
        raise SubmitError(
            f"--pool {pool.name}: {why}, less than one slice ({pool.chips_per_slice} TPU chips); submit to another "
            "pool group, or ask the platform team for a share of this one"
        )
    raise SubmitError(
        f"--slices {slices}: {slices} slice(s) of {pool.name} are {chips} TPU chips, but {why}; use --slices {most} or "
        "fewer"
    )


def _fits(config: StackConfig, team: str, pool: TpuPoolConfig, slices: int) -> bool:
    return slices <= pool.slices and slices * pool.chips_per_slice <= _reach(config, team, pool)[0]


def _why_not(config: StackConfig, team: str, pool: TpuPoolConfig, slices: int) -> str:
    if slices > pool.slices:
        return f"{pool.slices} slice(s)"
    return f"{slices * pool.chips_per_slice} TPU chips, but {_reach(config, team, pool)[1]}"


def _check_name(name: str, pool: TpuPoolConfig, slices: int, *, jobset: bool) -> None:
    if not DNS_1035.match(name):
        raise SubmitError(f"{name!r}: a name is lowercase letters, digits and '-', starting with a letter")
    # JobSet names its pods <name>-slice-<job index>-<pod index>-<suffix> (jobset webhook, pod name check).
    longest = f"{name}-slice-{slices - 1}-{pool.vms_per_slice - 1}" if jobset else name
    over = len(longest) + POD_SUFFIX - NAME_MAX
    if over > 0:
        raise SubmitError(f"{name!r}: its pod names would be {over} character(s) longer than {NAME_MAX}; shorten it")


def _check_containers(pool: TpuPoolConfig, count: int | None) -> None:
    """One container with the whole VM, or one per NUMA node (GKE's Ironwood guidance, xpk's default)."""
    machine = pool.machine
    numa = machine.containers_per_vm
    if count is None or count in (1, numa):
        return
    whole = f"1 container (all {machine.chips_per_vm} chips)"
    split = (
        f" or {numa} (one per NUMA node, {machine.chips_per_vm // numa} chips each: the default)" if numa > 1 else ""
    )
    raise SubmitError(f"--containers-per-vm {count}: a {machine.name} VM runs {whole}{split}")


def _check_image(image: str) -> None:
    try:
        pinned_image(image)
    except ValueError as error:
        raise SubmitError(f"--image {error}") from None


def _env(pairs: list[str]) -> list[dict[str, str]]:
    env = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not ENV_NAME.match(key):
            raise SubmitError(f"--env {pair!r}: give NAME=VALUE, NAME of letters, digits and '_'")
        env.append({"name": key, "value": value})
    return env


def _pod_specs(obj: Obj) -> list[dict[str, Any]]:
    if obj["kind"] == "Job":
        return [obj["spec"]["template"]["spec"]]
    if obj["kind"] == "JobSet":
        return [job["template"]["spec"]["template"]["spec"] for job in obj["spec"]["replicatedJobs"]]
    return []


def _max_exec_seconds(text: str | None) -> int | None:
    """Seconds of `--max-exec-time`, as Kueue takes them: a positive 32-bit number (jobframework/validation.go
    validateCreateForMaxExecTime refuses 0 and less)."""
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise SubmitError(f"--max-exec-time {error}") from None
    if seconds < 1:
        raise SubmitError(f"--max-exec-time {text}: give a time of 1s or more (Kueue refuses 0)")
    if seconds > MAX_EXEC_SECONDS:
        raise SubmitError(
            f"--max-exec-time {text}: Kueue reads the limit as a 32-bit number of seconds, at most {MAX_EXEC_SECONDS}s "
            "(about 68 years)"
        )
    return seconds


def _customize(obj: Obj, request: Request) -> Obj:
    """The user's image, command, environment, priority and time limit in the generated object: in each of its TPU
    containers (one per NUMA node of a TPU7x VM, each running the same command)."""
    obj = copy.deepcopy(obj)
    seconds = _max_exec_seconds(request.max_exec_time)
    if seconds is not None:
        obj["metadata"]["labels"][MAX_EXEC_TIME_LABEL] = str(seconds)
    for pod in _pod_specs(obj):
        for container in pod["containers"]:
            container["image"] = request.image
            if request.command:
                container["command"] = list(request.command)
            else:
                container.pop("command", None)  # the image's entrypoint
            if request.env:
                container["env"] = [*container.get("env", []), *_env(request.env)]
        if request.priority:
            pod["priorityClassName"] = request.priority
    return obj


def build(config: StackConfig, request: Request) -> Submission:
    """The objects of `request`, checked against the stack; raises SubmitError with the flag to change."""
    team, queue = _team(config, request.team)
    target = _target(config, request.pool)
    pool = workloads.shape_of(target)
    _check_slices(config, team, target, request.slices)
    _check_name(request.name, pool, request.slices, jobset=pool.multi_host or request.jobset)
    _check_containers(pool, request.containers_per_vm)
    _check_image(request.image)
    _env(request.env)
    _max_exec_seconds(request.max_exec_time)
    classes = [p.name for p in config.queues.priority_classes]
    if request.priority is not None and request.priority not in classes:
        raise SubmitError(f"--priority {request.priority}: no such priority class; this stack has {', '.join(classes)}")
    generated = workloads.workload_objects(
        config,
        target,
        request.slices,
        request.name,
        queue,
        jobset=request.jobset,
        containers=request.containers_per_vm,
    )
    objects = tuple(_customize(obj, request) for obj in generated)
    return Submission(request.name, queue, target, request.slices, objects)


def mounts(config: StackConfig, submission: Submission) -> list[str]:
    """The bucket folders the pods mount, in words."""
    lines = []
    for mount in bucket_mounts(config.bucket, submission.queue.namespace):
        access = "read-only" if mount.read_only else "read-write"
        bucket = config.checkpoint_bucket_name if mount.checkpoints else config.bucket_name
        lines.append(f"{mount.mount_path} <- gs://{bucket}/{mount.folder} ({access})")
    return lines
