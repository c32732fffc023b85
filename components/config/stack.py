"""The whole stack's config: `StackConfig`, loading it from Pulumi config, and the checks that span domains.

Bad config raises `ConfigError` with one line per problem, each naming the config key
(`tpu-stack:tpuPools[1].topology: ...`); a problem that only follows from another is left out.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError, field_validator
from pydantic.alias_generators import to_camel

from components.config.base import (
    GCP_LABELS_PER_RESOURCE,
    PROJECT,
    REGION,
    ConfigError,
    ConfigModel,
    dns_label_problem,
    gcp_label_problem,
    gcp_label_value,
    is_zone,
    project_id_problem,
    region_problem,
)
from components.config.cluster import REGIONAL_CLUSTER_ZONES, SYSTEM_NODE_SELECTOR, ClusterConfig, node_role_problems
from components.config.llm_serving import (
    LlmServingConfig,
    ServerShape,
    llm_serving_problems,
    server_shapes,
    serving_pools,
)
from components.config.monitoring import MonitoringConfig
from components.config.multikueue import MultiKueueConfig, WorkerConfig
from components.config.pools import TpuPoolConfig
from components.config.queues import (
    ChartsConfig,
    QueuesConfig,
    controller_resources,
    flavor_order,
    ladder_pools,
    queue_namespaces,
    queue_pools,
    queue_problems,
    serving_shape_problems,
)
from components.config.serving import BucketConfig, SaxmlConfig, bucket_name, serving_problems
from components.stacks import PROTECTED_STACKS


class StackConfig(ConfigModel):
    """The whole stack's configuration (config keys `gcp:*` and `tpu-stack:*`)."""

    project: str
    """Google Cloud project id that holds the cluster and bucket: 6-30 lowercase letters, digits and `-`,
    starting with a letter, not ending with `-` (a project number is an error)."""
    region: str
    """Region of the cluster, e.g. `us-east5` (a zone is an error naming its region); every TPU pool zone must
    be in it."""
    stack: str = "dev"
    """The stack's name, from Pulumi; not a config key."""
    throwaway: bool = False
    """The stack may be destroyed with its data (the bucket's `forceDestroy`); an error in a protected stack."""
    labels: dict[str, str] = {}
    """Extra labels on every GCP resource that takes labels (cost attribution: team, cost-center), in Google
    Cloud's form: keys 1-63 lowercase letters, digits, `_`, `-`, starting with a letter; values up to 63 of the
    same; at most 64 per resource with `managed-by`, `app`, `env` (the stack name) and `tpu-pool`."""
    cluster: ClusterConfig = ClusterConfig()
    tpu_pools: tuple[TpuPoolConfig, ...] = ()
    """TPU pool groups: each is N identical slices of one shape, provisioning mode and zone."""
    charts: ChartsConfig = ChartsConfig()
    queues: QueuesConfig = QueuesConfig()
    bucket: BucketConfig = BucketConfig()
    saxml: SaxmlConfig | None = None
    """Saxml serving on a TPU pool group.

    Default: off"""
    serving: LlmServingConfig | None = None
    """vLLM servers (OpenAI-compatible) on TPU pool groups.

    Default: off"""
    monitoring: MonitoringConfig = MonitoringConfig()
    multi_kueue: MultiKueueConfig | None = None
    """Worker clusters in other regions this stack's cluster dispatches the teams' workloads to (Kueue's MultiKueue).

    Default: off, one cluster"""

    @field_validator("project")
    @classmethod
    def _project(cls, project: str) -> str:
        problem = project_id_problem(project)
        if problem:
            raise ValueError(problem)
        return project

    @field_validator("region")
    @classmethod
    def _region(cls, region: str) -> str:
        problem = region_problem(region, "gcp:region")
        if problem:
            raise ValueError(problem)
        return region

    @property
    def resource_labels(self) -> dict[str, str]:
        return {"managed-by": "pulumi", "app": PROJECT, "env": gcp_label_value(self.stack), **self.labels}

    @property
    def cluster_location(self) -> str:
        return self.cluster.location or self.region

    @property
    def workload_pool(self) -> str:
        return f"{self.project}.svc.id.goog"

    @property
    def protected(self) -> bool:
        """Cluster and bucket carry `protect`; the same list is the protection policy's default."""
        return self.stack in PROTECTED_STACKS

    def pool(self, name: str) -> TpuPoolConfig | None:
        return next((p for p in self.tpu_pools if p.name == name), None)

    @property
    def cluster_zones(self) -> int:
        """Zones a node pool without node locations spans: a zonal cluster's one, else the three GKE uses by
        default for a regional cluster."""
        return 1 if is_zone(self.cluster_location) else REGIONAL_CLUSTER_ZONES

    @property
    def system_pool_initial_nodes_per_zone(self) -> int:
        """GKE's initialNodeCount is per zone: the fewest per zone that reach systemPool.minNodes in total."""
        return math.ceil(self.cluster.system_pool.min_nodes / self.cluster_zones)

    @property
    def initial_master_version(self) -> str | None:
        """minMasterVersion is sent (as the initial version) only without a release channel: a channel moves
        the version itself, and a pinned minor it no longer offers makes creation fail."""
        return None if self.on_release_channel else self.cluster.min_master_version

    @property
    def system_node_selector(self) -> dict[str, str]:
        """Keeps CPU pods off TPU nodes: the system pool (Standard); Autopilot chooses nodes itself."""
        if self.cluster.mode == "autopilot":
            return {}
        return dict(SYSTEM_NODE_SELECTOR)

    @property
    def private_nodes(self) -> bool:
        return self.protected if self.cluster.private_nodes is None else self.cluster.private_nodes

    @property
    def ip_endpoint(self) -> bool:
        """Control plane reachable by IP (from authorized networks only); off: only the DNS endpoint, which every
        stack's kubeconfig uses either way."""
        return self.cluster.control_plane.ip_endpoint

    @property
    def on_release_channel(self) -> bool:
        return self.cluster.release_channel != "UNSPECIFIED"

    @property
    def serving_pools(self) -> dict[str, str]:
        """Pool group -> what serves on it (Saxml, vLLM servers): their replicas hold its slices outside Kueue."""
        pools = serving_pools(self.serving)
        if self.saxml:
            pools[self.saxml.pool] = "serves Saxml, whose model servers hold all its slices"
        return pools

    @property
    def serving_namespaces(self) -> list[str]:
        """Namespaces the serving components own (Saxml's, vLLM's): no team may take them."""
        return [config.namespace for config in (self.saxml, self.serving) if config is not None]

    @property
    def queue_pools(self) -> tuple[TpuPoolConfig, ...]:
        """The pool groups Kueue shares: all but the serving ones (Autopilot: queues.autopilotCapacity)."""
        return queue_pools(
            self.queues,
            self.tpu_pools,
            autopilot=self.cluster.mode == "autopilot",
            serving_pools=self.serving_pools,
        )

    @property
    def server_shapes(self) -> list[ServerShape]:
        """Each vLLM server with its pool (checked in stack_problems)."""
        return server_shapes(self.serving, self.tpu_pools) if self.serving else []

    @property
    def needs_lws(self) -> bool:
        """LeaderWorkerSet is installed when a server runs on multi-host slices."""
        return any(shape.multi_host for shape in self.server_shapes)

    @property
    def queue_flavors(self) -> tuple[TpuPoolConfig, ...]:
        """The queue pool groups in the order ClusterQueues list their flavors: each ladder's rungs together, in
        ladder order (Kueue tries a workload's flavors in this order)."""
        return flavor_order(self.queues, self.queue_pools)

    @property
    def ladders(self) -> dict[str, tuple[TpuPoolConfig, ...]]:
        """Ladder -> its pool groups, first rung first (queues.ladders)."""
        return ladder_pools(self.queues, self.queue_pools)

    def ladder_of(self, pool: TpuPoolConfig) -> str | None:
        """The ladder `pool` is a rung of, if any."""
        return next((name for name, rungs in self.ladders.items() if pool.name in {r.name for r in rungs}), None)

    @property
    def controller_resources(self) -> dict[str, dict[str, str]]:
        """Kueue and JobSet controller requests/limits for the most nodes the cluster can have."""
        system = 0 if self.cluster.mode == "autopilot" else self.cluster.system_pool.max_nodes
        return controller_resources(system + sum(pool.total_vms for pool in self.queue_pools))

    @property
    def bucket_name(self) -> str:
        return bucket_name(self.bucket, project=self.project, stack=self.stack)

    @property
    def saxml_pool(self) -> TpuPoolConfig:
        """The pool Saxml serves on; only read with saxml set (stack_problems checked it exists)."""
        assert self.saxml is not None
        pool = self.pool(self.saxml.pool)
        assert pool is not None, "checked in stack_problems"
        return pool

    @property
    def workers(self) -> tuple[WorkerConfig, ...]:
        return self.multi_kueue.workers if self.multi_kueue else ()

    @property
    def is_manager(self) -> bool:
        """The cluster is a MultiKueue manager: its queues admit against the workers' capacity and dispatch."""
        return bool(self.workers)

    @property
    def worker_pools(self) -> tuple[TpuPoolConfig, ...]:
        return tuple(pool for worker in self.workers for pool in worker.tpu_pools)

    def worker_config(self, worker: WorkerConfig) -> StackConfig:
        """The worker as a stack of its own: this stack's settings, its region, cluster name and pool groups; the
        teams' shares, borrowing limits, host resources and ladders of its pool groups only; no serving, no workers.
        Its queues are therefore the manager's queue names with the worker's real quotas."""
        names = {pool.name for pool in worker.tpu_pools}
        queues = self.queues
        teams = tuple(
            team.model_copy(
                update={
                    "shares": {pool: v for pool, v in team.shares.items() if pool in names},
                    "borrowing_limit": {pool: v for pool, v in team.borrowing_limit.items() if pool in names},
                }
            )
            for team in queues.teams
        )
        worker_queues = queues.model_copy(
            update={
                "teams": teams,
                "host_resources": {pool: v for pool, v in queues.host_resources.items() if pool in names},
                "ladders": {name: rungs for name, rungs in queues.ladders.items() if set(rungs) <= names},
            }
        )
        # The manager's Kueue authenticates to the worker's DNS endpoint with the worker's own service account token.
        plane = self.cluster.control_plane.model_copy(update={"kubernetes_tokens_via_dns": True})
        # A worker runs node pools: Standard, also when the manager's mode is refused (only that line is reported).
        cluster = self.cluster.model_copy(
            update={
                "name": worker.name,
                "location": None,
                "subnetwork": worker.subnetwork,
                "control_plane": plane,
                "mode": "standard",
            }
        )
        return self.model_copy(
            update={
                "region": worker.region,
                "cluster": cluster,
                "tpu_pools": worker.tpu_pools,
                "queues": worker_queues,
                "saxml": None,
                "serving": None,
                "multi_kueue": None,
            }
        )

    @property
    def worker_shapes(self) -> dict[str, list[str]]:
        """TPU shape (`ct6e-standard-4t 4x4`) -> the workers that have it (`name (region)`), in config order: where a
        workload of that shape submitted to the manager can run."""
        shapes: dict[str, list[str]] = {}
        for worker in self.workers:
            for pool in worker.tpu_pools:
                where = shapes.setdefault(" ".join(pool.shape), [])
                if f"{worker.name} ({worker.region})" not in where:
                    where.append(f"{worker.name} ({worker.region})")
        return shapes

    @property
    def worker_configs(self) -> list[StackConfig]:
        return [self.worker_config(worker) for worker in self.workers]

    @property
    def manager_queues(self) -> StackConfig:
        """What the manager's Kueue objects are derived from: this stack with every worker's pool groups as its own,
        so its flavors, quotas and ladders are the sum of the workers' (placement is the workers' business)."""
        return self.model_copy(update={"tpu_pools": self.worker_pools}) if self.is_manager else self

    def auto_upgrade(self, pool: TpuPoolConfig) -> bool:
        """Node auto-upgrade of a TPU pool: always on a release channel (GKE refuses off), else off by default."""
        if pool.auto_upgrade is not None:
            return pool.auto_upgrade
        return self.on_release_channel


GCP_KEYS = {"gcp:project": "project", "gcp:region": "region"}
"""The provider keys the program reads, and the StackConfig fields they fill."""
NAMESPACES = (PROJECT, "gcp", "kubernetes", "pulumi")
"""Config namespaces a stack of this project may hold: its own, its providers' and Pulumi's."""


# Every StackConfig field but the ones filled from gcp:* keys and the stack name is a `tpu-stack:` key.
STACK_KEYS = {
    to_camel(field): field for field in StackConfig.model_fields if field not in ("project", "region", "stack")
}
"""`tpu-stack:` key -> StackConfig field."""


def _key_path(top: str, loc: tuple[int | str, ...]) -> str:
    path = top
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _message(error: Mapping[str, Any]) -> str:
    text = str(error["msg"])
    return text.removeprefix("Value error, ")


def load(raw: Mapping[str, Any], *, stack: str, now: datetime | None = None) -> StackConfig:
    """Build the model from flat Pulumi config (`{"tpu-stack:tpuPools": [...], "gcp:project": ...}`).

    Values may be JSON strings (how the engine passes structured config) or already-parsed objects.
    """
    import json

    problems: list[str] = []
    data: dict[str, Any] = {"stack": stack}
    for key, value in raw.items():
        namespace, _, name = key.partition(":")
        if isinstance(value, str) and value.startswith(("[", "{")):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as error:
                problems.append(
                    f"{key}: {value!r} starts like JSON but is not ({error.msg} at column {error.colno}); "
                    "give a YAML mapping or list"
                )
                continue
        if key in GCP_KEYS:
            data[GCP_KEYS[key]] = value
        elif namespace == PROJECT and name in STACK_KEYS:
            data[STACK_KEYS[name]] = value
        elif namespace == PROJECT:
            known = ", ".join(sorted(STACK_KEYS))
            problems.append(f"{key}: unknown config key; known {PROJECT} keys: {known}")
        elif namespace not in NAMESPACES:
            problems.append(_namespace_problem(key, namespace, name))
    for key in GCP_KEYS:
        if key not in raw:
            problems.append(f"{key}: required; set it with `pulumi config set {key} <value>`")
    if problems:
        raise ConfigError(problems)
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError([_pydantic_line(e) for e in error.errors() if not _only_follows(e)]) from None
    problems = stack_problems(config, now or datetime.now(UTC))
    if problems:
        raise ConfigError(problems)
    return config


def _namespace_problem(key: str, namespace: str, name: str) -> str:
    close = difflib.get_close_matches(namespace, NAMESPACES, n=1, cutoff=0.6)
    fix = f"did you mean {close[0]}:{name}? " if close else ""
    return (
        f"{key}: {namespace!r} is not a config namespace this stack reads, so everything under it would be ignored; "
        f"{fix}namespaces: {', '.join(NAMESPACES)}"
    )


def _only_follows(error: Mapping[str, Any]) -> bool:
    """A list reported too short although it has enough items: pydantic counts only the items that validated, so
    an item's own error (a worker's region) would also report its list as too short."""
    given = error.get("input")
    return error["type"] == "too_short" and isinstance(given, list | tuple) and len(given) >= error["ctx"]["min_length"]


def _pydantic_line(error: Mapping[str, Any]) -> str:
    loc = tuple(error["loc"])
    top, rest = loc[0], loc[1:]
    names = {"project": "gcp:project", "region": "gcp:region"}
    key = names.get(str(top), f"{PROJECT}:{to_camel(str(top))}")
    # Drop pydantic's union/type tags so the path reads like the YAML.
    rest = tuple(p for p in rest if not (isinstance(p, str) and ("[" in p or p in ("function-after",))))
    # A ladder's key is its name: what it lists is the ladder's pool groups.
    field = "ladders" if loc[:2] == ("queues", "ladders") and len(loc) == 3 else to_camel(str(loc[-1]))
    return f"{_key_path(key, rest)}: {_user_message(error, field)}"


LIST_OF = {
    "tpuPools": "pool groups",
    "ladders": "pool groups",
    "teams": "teams",
    "priorityClasses": "priority classes",
    "taints": "taints",
    "exclusions": "maintenance exclusions",
    "readers": "Kubernetes service accounts",
    "writers": "Kubernetes service accounts",
    "autopilotCapacity": "TPU capacities",
    "nodeServiceAccountRoles": "IAM roles",
    "sourceRanges": "CIDR ranges",
    "authorizedNetworks": "CIDR ranges",
    "workers": "worker clusters",
}
"""What each list of the config holds, in the README's words."""


def _what(value: Any) -> str:
    """How YAML shows `value` to the user."""
    if isinstance(value, bool):
        return f"{str(value).lower()} (true/false)"
    if isinstance(value, (int, float)):
        return f"the number {value:g}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, Mapping):
        return "a mapping (key: value lines)"
    if isinstance(value, (list, tuple)):
        return "a list ('-' items)"
    return "nothing" if value is None else type(value).__name__


def _user_message(error: Mapping[str, Any], field: str) -> str:
    """Pydantic's message in the user's words: what was given and what the key takes, no Python type names."""
    kind, value, ctx = str(error["type"]), error.get("input"), error.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown key; check the spelling against the config reference (docs/config.md)"
    if kind == "missing":
        return "required; add it"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"{_what(value)} is not a whole number; write one like 4"
    if kind in ("float_parsing", "float_type"):
        return f"{_what(value)} is not a number; write one like 1.5"
    if kind in ("bool_parsing", "bool_type"):
        return f"{_what(value)} is not true or false"
    if kind == "string_type":
        quoted = f'"{str(value).lower()}"' if isinstance(value, bool) else f'"{value}"'
        fix = f"quote it: {quoted}" if isinstance(value, (int, float)) else "write text"
        return f"{_what(value)} is not text; {fix}"
    if kind == "literal_error":
        return f"{_what(value)} is not accepted; use {ctx.get('expected')}"
    if kind in ("list_type", "tuple_type"):
        return f"expected a list of {LIST_OF.get(field, 'values')} ('-' items), got {_what(value)}"
    if kind == "too_short":
        given = f"has {len(value)}" if value else "is empty"
        return f"{given}; it lists {LIST_OF.get(field, 'values')} ('-' items) and needs at least {ctx['min_length']}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected a mapping (key: value lines), got {_what(value)}"
    if kind.startswith(("datetime", "date_")):
        return f"{_what(value)} is not a date and time like 2026-12-01T00:00:00Z"
    if kind in ("greater_than_equal", "greater_than"):
        bound = f"{ctx['ge']:g} or more" if kind == "greater_than_equal" else f"more than {ctx['gt']:g}"
        return f"{_what(value)} is too small; use {bound}"
    return _message(error)


def stack_problems(config: StackConfig, now: datetime) -> list[str]:
    """Checks that need more than one pool, or the region."""
    problems = []
    seen: dict[str, int] = {}
    for index, pool in enumerate(config.tpu_pools):
        key = f"{PROJECT}:tpuPools[{index}]"
        own = pool.problems()
        problems += [f"{key}.{field}: {message}" for field, message in own]
        if own:
            continue
        for node_pool in pool.node_pool_names:
            problem = dns_label_problem(node_pool, "node pool name")
            if problem:
                problems.append(f"{key}.name: {problem}")
                break
        if pool.name in seen:
            problems.append(f"{key}.name: {pool.name!r} is already used by tpuPools[{seen[pool.name]}]")
        seen.setdefault(pool.name, index)
        if pool.zone is not None and REGION.match(pool.zone):
            problems.append(f"{key}.zone: {pool.zone!r} is a region; give one of its zones, e.g. {pool.zone}-a")
        elif pool.zone is not None and not pool.zone.startswith(config.region + "-"):
            problems.append(f"{key}.zone: {pool.zone!r} is not in gcp:region {config.region!r}")
        if pool.future_reservation is not None:
            problem = pool.future_reservation.lead_time_problem(now)
            if problem:
                problems.append(f"{key}.futureReservation: {problem}")
        if pool.auto_upgrade is False and config.on_release_channel:
            problems.append(
                f"{key}.autoUpgrade: GKE keeps node auto-upgrade on in clusters on a release channel (cluster."
                f"releaseChannel {config.cluster.release_channel}); remove autoUpgrade and hold upgrades during "
                "training with cluster.maintenance.exclusions, or set cluster.releaseChannel: UNSPECIFIED"
            )
    problems += _adopted_problems(config)
    problems += _label_problems(config)
    problems += node_role_problems(config.cluster)
    problems += _system_pool_problems(config)
    plane = config.cluster.control_plane.problems()
    problems += [f"{PROJECT}:cluster.controlPlane.{field}: {message}" for field, message in plane]
    maintenance = config.cluster.maintenance.problems()
    problems += [f"{PROJECT}:cluster.maintenance.{field}: {message}" for field, message in maintenance]
    if config.cluster.mode == "autopilot" and config.tpu_pools:
        problems.append(
            f"{PROJECT}:tpuPools: Autopilot provisions TPU nodes itself; remove tpuPools or set cluster.mode: standard"
        )
    # --- queue checks (batch scheduling); a MultiKueue manager's queues are checked per worker below ---
    if not config.is_manager:
        problems += queue_problems(
            config.queues,
            config.queue_pools,
            autopilot=config.cluster.mode == "autopilot",
            serving_pools=config.serving_pools,
            serving_namespaces=config.serving_namespaces,
        )
    problems += serving_shape_problems(config.tpu_pools, config.serving_pools)
    # --- serving checks (bucket, identity, Saxml) ---
    if config.throwaway and config.protected:
        problems.append(
            f"{PROJECT}:throwaway: the {config.stack} stack is protected and keeps its data (its bucket is protected); "
            "remove it"
        )
    # A MultiKueue manager's servers are refused as a whole (_multikueue_problems); their own checks against the
    # manager's pool groups (it has none) would only follow from that.
    saxml, serving = (None, None) if config.is_manager else (config.saxml, config.serving)
    problems += serving_problems(
        config.bucket,
        saxml,
        name=config.bucket_name,
        namespaces=["default", *queue_namespaces(config.queues)],
        pools=config.tpu_pools,
    )
    if serving is not None:
        problems += llm_serving_problems(
            serving,
            pools=config.tpu_pools,
            taken_namespaces={config.saxml.namespace: "Saxml"} if config.saxml else {},
            saxml_pool=config.saxml.pool if config.saxml else None,
        )
    location = config.cluster_location
    if is_zone(location) and not location.startswith(config.region + "-"):
        problems.append(f"{PROJECT}:cluster.location: {location!r} is not in gcp:region {config.region!r}")
    problems += _multikueue_problems(config, now)
    return list(dict.fromkeys(problems))


def _multikueue_problems(config: StackConfig, now: datetime) -> list[str]:
    """A manager runs no TPU capacity itself; each worker is checked as a stack of its own (config.worker_config),
    its problems named by the worker's keys; the teams' and ladders' pool groups must be the workers'."""
    if not config.is_manager:
        return []
    key = f"{PROJECT}:multiKueue.workers"
    problems: list[str] = []
    if config.tpu_pools:
        problems.append(
            f"{PROJECT}:tpuPools: the MultiKueue manager runs no TPU pool groups; move them to a worker "
            "(multiKueue.workers[].tpuPools)"
        )
    for field, value in (("saxml", config.saxml), ("serving", config.serving)):
        if value is not None:
            problems.append(
                f"{PROJECT}:{field}: servers run on the cluster's own pool groups and the MultiKueue manager has none; "
                "remove it, or serve from a stack without multiKueue"
            )
    if config.cluster.mode == "autopilot":
        problems.append(
            f"{PROJECT}:cluster.mode: MultiKueue's clusters are Standard clusters (workers run TPU pools); use standard"
        )
    if config.cluster.subnetwork is not None:
        problems.append(
            f"{PROJECT}:cluster.subnetwork: a subnetwork is regional and the workers are in other regions; remove it, "
            "or set each worker's own (multiKueue.workers[].subnetwork)"
        )
    clusters = {config.cluster.name: "cluster.name"}
    regions = {config.region: "gcp:region"}
    accounts = {config.cluster.node_service_account_id: "cluster.name"}
    pools: dict[str, str] = {}
    owner: dict[str, int] = {}
    for index, worker in enumerate(config.workers):
        where = f"{key}[{index}]"
        derived = config.worker_config(worker)
        if worker.name in clusters:
            problems.append(f"{where}.name: {worker.name!r} is already the name of {clusters[worker.name]}")
        elif derived.cluster.node_service_account_id in accounts:
            problems.append(
                f"{where}.name: its node service account {derived.cluster.node_service_account_id!r} (the name's first "
                f"24 characters) is already {accounts[derived.cluster.node_service_account_id]}'s; change the start "
                "of the name"
            )
        if worker.region in regions:
            problems.append(
                f"{where}.region: {worker.region!r} already has a cluster of this stack ({regions[worker.region]}); "
                "put each worker in a region of its own (a cluster's Cloud NAT covers every subnetwork of its region, "
                "and Compute refuses a second NAT that does)"
            )
        regions.setdefault(worker.region, f"workers[{index}].region")
        clusters.setdefault(worker.name, f"workers[{index}]")
        accounts.setdefault(derived.cluster.node_service_account_id, f"workers[{index}]")
        for pool_index, pool in enumerate(worker.tpu_pools):
            if pool.name in pools:
                problems.append(f"{where}.tpuPools[{pool_index}].name: {pool.name!r} is already {pools[pool.name]}")
            pools.setdefault(pool.name, f"workers[{index}].tpuPools[{pool_index}]")
            owner.setdefault(pool.name, index)
        for line in stack_problems(derived, now):
            line = line.replace(f"{PROJECT}:tpuPools", f"{where}.tpuPools")
            problems.append(line.replace("gcp:region", f"{where}.region"))
    names = ", ".join(pools)
    for team_index, team in enumerate(config.queues.teams):
        for field, values in (("shares", team.shares), ("borrowingLimit", team.borrowing_limit)):
            problems += [
                f"{PROJECT}:queues.teams[{team_index}].{field}.{name}: {name!r} names no worker's pool group; "
                f"pools: {names}"
                for name in values
                if name not in owner
            ]
    for ladder, rungs in config.queues.ladders.items():
        unknown = [rung for rung in rungs if rung not in owner]
        if unknown:
            problems.append(
                f"{PROJECT}:queues.ladders.{ladder}: {unknown[0]!r} names no worker's pool group; pools: {names}"
            )
        elif len({owner[rung] for rung in rungs}) > 1:
            problems.append(
                f"{PROJECT}:queues.ladders.{ladder}: its rungs are in different workers, and each worker's Kueue walks "
                "only its own; keep a ladder's pool groups in one worker"
            )
    return problems


def _adopted_problems(config: StackConfig) -> list[str]:
    """Adopted names must stay apart: a node pool or flavor name two pool groups claim would be one object."""
    problems: list[str] = []
    if config.cluster.adopted is not None:
        problems += [f"{PROJECT}:cluster.adopted.{f}: {m}" for f, m in config.cluster.adopted.problems()]
    node_pools: dict[str, int] = {}
    flavors: dict[str, int] = {}
    groups: set[str] = set()
    for index, pool in enumerate(config.tpu_pools):
        if pool.problems() or pool.name in groups:  # a pool group named twice is reported on its name
            continue
        groups.add(pool.name)
        for name in pool.node_pool_names:
            if name in node_pools and node_pools[name] != index:
                problems.append(
                    f"{PROJECT}:tpuPools[{index}].adopted.nodePools: node pool {name!r} is already one of "
                    f"tpuPools[{node_pools[name]}]'s"
                )
            node_pools.setdefault(name, index)
        if pool.flavor_name in flavors:
            problems.append(
                f"{PROJECT}:tpuPools[{index}].adopted.flavor: flavor {pool.flavor_name!r} is already "
                f"tpuPools[{flavors[pool.flavor_name]}]'s"
            )
        flavors.setdefault(pool.flavor_name, index)
    return problems


def _label_problems(config: StackConfig) -> list[str]:
    """tpu-stack:labels go on every Google Cloud resource that takes labels, node pools with one more (tpu-pool)."""
    problems = []
    for key, value in config.labels.items():
        problem = gcp_label_problem(key, value)
        if problem:
            problems.append(f"{PROJECT}:labels.{key}: {problem}")
    count = len({**config.resource_labels, "tpu-pool": ""})
    if count > GCP_LABELS_PER_RESOURCE:
        problems.append(
            f"{PROJECT}:labels: node pools would carry {count} labels (these, managed-by, app, env and tpu-pool); "
            f"Google Cloud allows {GCP_LABELS_PER_RESOURCE}: remove {count - GCP_LABELS_PER_RESOURCE}"
        )
    return problems


def _system_pool_problems(config: StackConfig) -> list[str]:
    if config.cluster.mode != "standard":
        return []
    pool = config.cluster.system_pool
    per_zone, zones = config.system_pool_initial_nodes_per_zone, config.cluster_zones
    if per_zone * zones > pool.max_nodes:
        return [
            f"{PROJECT}:cluster.systemPool.maxNodes: GKE starts the pool with {per_zone} node(s) in each of its "
            f"{zones} zones = {per_zone * zones}, above maxNodes {pool.max_nodes}; raise maxNodes to "
            f"{per_zone * zones} or more"
        ]
    return []


def load_from_pulumi() -> StackConfig:
    """Load from the running Pulumi program's config (real engine or the offline mock engine alike)."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    raw: dict[str, Any] = dict(runtime_config.get_config_env())
    raw.update(runtime_config.CONFIG.get())
    return load(raw, stack=pulumi.get_stack())
