"""The whole stack's config: `StackConfig`, loading it from Pulumi config, and the checks that span domains.

Bad config raises `ConfigError` with one line per problem, each naming the config key
(`tpu-stack:tpuPools[1].topology: ...`); a problem that only follows from another is left out.
"""

from __future__ import annotations

import copy
import difflib
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from components import tpu_catalog, tpu_zones
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
from components.config.cluster import (
    REGIONAL_CLUSTER_ZONES,
    SYSTEM_NODE_SELECTOR,
    SYSTEM_POOL_NAME,
    ClusterConfig,
    node_role_problems,
    version_below_floor,
)
from components.config.controllers import PodsReady, PodsReadyConfig, duration, pods_ready
from components.config.llm_serving import (
    LlmServingConfig,
    ServerShape,
    cache_folder_problems,
    llm_serving_problems,
    llm_serving_warnings,
    server_shapes,
    serving_pools,
)
from components.config.monitoring import MonitoringConfig
from components.config.multikueue import MultiKueueConfig, WorkerConfig, subnetwork_region
from components.config.network import AddressPlan, IpRangesConfig, PoolAddresses, default_ranges, range_problems
from components.config.pools import (
    IRONWOOD_AUTOPILOT_FLOOR,
    IRONWOOD_STANDARD_FLOOR,
    IRONWOOD_TOOLKIT_FLOOR,
    TpuPoolConfig,
)
from components.config.queues import (
    ChartsConfig,
    PlacementConfig,
    QueuesConfig,
    controller_resources,
    flavor_order,
    ladder_pools,
    queue_namespaces,
    queue_pools,
    queue_problems,
    queue_warnings,
    serving_shape_problems,
)
from components.config.serving import (
    BucketConfig,
    SaxmlConfig,
    bucket_name,
    checkpoint_bucket_name,
    serving_problems,
)
from components.stacks import is_protected, setting


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
    protected: bool = False
    """Every resource carries `protect`, the cluster `deletionProtection` (private nodes, no IP endpoint), the bucket
    keeps its data; alerts must name a notification channel, the policy pack runs images by digest only, and the
    workflows deploy the stack last.
    Refused as `false` on a stack named `prod` or `production`, which are protected by their name.

    Default: true for a stack named `prod` or `production`, else false"""
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

    @model_validator(mode="before")
    @classmethod
    def _protection_defaults(cls, data: Any) -> Any:
        """A stack named prod or production is protected unless its config says otherwise (which is refused); a
        protected stack's cluster is kept from deletion unless its config says otherwise (refused too). One validator:
        the second default depends on the first."""
        if not isinstance(data, dict):
            return data
        if "protected" not in data:
            data = {**data, "protected": is_protected(data.get("stack", "dev"))}
        if setting(data["protected"]) is not True:
            return data
        cluster = data.get("cluster", {})
        if isinstance(cluster, dict) and not {"deletionProtection", "deletion_protection"} & cluster.keys():
            data = {**data, "cluster": {**cluster, "deletionProtection": True}}
        return data

    @field_validator("protected", mode="before")
    @classmethod
    def _protected(cls, value: Any) -> bool:
        given = setting(value)
        if given is None:
            raise ValueError(f"{value!r} is not true or false")
        return given

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

    def pool(self, name: str) -> TpuPoolConfig | None:
        return next((p for p in self.tpu_pools if p.name == name), None)

    @property
    def cluster_zones(self) -> int:
        """Zones a node pool without node locations spans: a zonal cluster's one, else the three GKE uses by
        default for a regional cluster."""
        return 1 if is_zone(self.cluster_location) else REGIONAL_CLUSTER_ZONES

    def pool_zone(self, pool: TpuPoolConfig) -> str | None:
        """The one zone of a pool group's nodes: its own, else a zonal cluster's (where GKE puts a pool that names no
        node locations); None for a group without a zone in a regional cluster."""
        if pool.zone is not None:
            return pool.zone
        return self.cluster_location if is_zone(self.cluster_location) else None

    def node_locations(self, pool: TpuPoolConfig) -> tuple[str, ...] | None:
        """The zones sent as the group's nodeLocations. Without them GKE puts a regional cluster's pool in three zones
        of its region (GKE, "Regional clusters"), zones without the TPU among them, where the create fails (as it
        does for GPUs: same page); so a group without a zone in a regional cluster, which only a group scaled from
        zero may be (stack_problems), is sent the region's zones that offer its TPU by its provisioning
        (vendor/data/tpu_zones.json), and a total node bound (tpu_slice_pools). None: the cluster's zone of a zonal
        cluster, or an adopted group's zones as GKE has them (adoption changes no node locations)."""
        if pool.zone is not None:
            return (pool.zone,)
        if is_zone(self.cluster_location) or pool.adopted is not None:
            return None
        version = pool.machine.version.name
        return tpu_zones.region_zones(version, provisioning=pool.provisioning, region=self.region) or None

    def max_nodes(self, pool: TpuPoolConfig) -> int:
        """Most nodes a pool group can have at once: its slices' VMs, held once whatever its zones (one zone, or the
        region's zones under a total bound). An adopted group without a zone keeps its pools' locations and per-zone
        counts (nodeCount, maxNodeCount are per zone), so its count is taken in each of the cluster's zones."""
        spread = pool.adopted is not None and self.pool_zone(pool) is None and pool.provisioning != "queued"
        return pool.total_vms * (self.cluster_zones if spread else 1)

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
        return self.cluster.private_nodes

    @property
    def makes_nat(self) -> bool:
        """Private nodes reach out through the stack's Cloud NAT, unless an adopted cluster's network has its own."""
        adopted = self.cluster.adopted
        return self.private_nodes and not (adopted is not None and adopted.existing_nat)

    @property
    def vpc_name(self) -> str:
        """The VPC network of the stack's clusters: an existing one (`cluster.network`) or the stack's own, one for
        the stack's cluster and its MultiKueue workers (a network is global, its subnetworks regional)."""
        return self.cluster.network or vpc_name(self.stack)

    @property
    def uses_cloud_dns(self) -> bool:
        """Cloud DNS for GKE answers in-cluster queries (Autopilot's only provider)."""
        return self.cluster.dns == "cloud-dns" or self.cluster.mode == "autopilot"

    @property
    def impersonates_service_accounts(self) -> bool:
        """A workload reaches Google Cloud as a Google service account (`identity: iamServiceAccount`): the GKE
        metadata server mints its tokens through the IAM Service Account Credentials API."""
        workloads = [grant[2] for grant in self.bucket.grants] + [
            serving.workload for serving in (self.saxml, self.serving) if serving is not None
        ]
        return any(workload.identity == "iamServiceAccount" for workload in workloads)

    @property
    def owns_network(self) -> bool:
        """The stack creates its VPC, and each cluster's subnetwork in it, with the cluster's ranges."""
        return self.cluster.network is None

    @property
    def address_pools(self) -> tuple[PoolAddresses, ...]:
        """Each node pool group's nodes at their largest and maxPodsPerNode (Autopilot: none declared)."""
        if self.cluster.mode == "autopilot":
            return ()
        system = self.cluster.system_pool
        pools = [PoolAddresses("cluster.systemPool", system.max_nodes, system.max_pods_per_node)]
        pools += [
            PoolAddresses(f"tpuPools[{index}]", self.max_nodes(pool), pool.max_pods_per_node)
            for index, pool in enumerate(self.tpu_pools)
        ]
        return tuple(pools)

    @property
    def load_balancers(self) -> int:
        """Internal load balancers the stack gives an address of the node range: Saxml's, one per vLLM server."""
        return (1 if self.saxml else 0) + (len(self.serving.servers) if self.serving else 0)

    def ranges(self, index: int = 0) -> IpRangesConfig:
        """The cluster's ranges: each one given, else the default of the stack's `index`-th cluster."""
        given = self.cluster.ip_ranges or IpRangesConfig()
        default = default_ranges(
            index, self.address_pools, self.load_balancers, autopilot=self.cluster.mode == "autopilot"
        )
        return IpRangesConfig(
            nodes=given.nodes or default.nodes,
            pods=given.pods or default.pods,
            services=given.services or default.services,
        )

    @property
    def address_plan(self) -> AddressPlan:
        """What the cluster needs at its largest and the ranges it gets (a worker's are resolved in worker_config)."""
        ranges = self.ranges()
        return AddressPlan(
            self.address_pools,
            self.load_balancers,
            str(ranges.nodes),
            str(ranges.pods),
            str(ranges.services),
            self.cluster.mode == "autopilot",
        )

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
    def outside_queues(self) -> dict[str, str]:
        """Pool group -> why Kueue does not share it: what serves on it, or that it is draining."""
        drained = {
            pool.name: "is draining (drain: true): its chips are out of every queue until it is removed"
            for pool in self.tpu_pools
            if pool.drain
        }
        return {**drained, **self.serving_pools}

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
            serving_pools=self.outside_queues,
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

    @property
    def pool_keys(self) -> dict[str, str]:
        """Pool group -> its config key (`tpu-stack:tpuPools[1]`, a worker's `tpu-stack:multiKueue.workers[0]...`)."""
        keys = {pool.name: f"{PROJECT}:tpuPools[{index}]" for index, pool in enumerate(self.tpu_pools)}
        for number, worker in enumerate(self.workers):
            for index, pool in enumerate(worker.tpu_pools):
                keys.setdefault(pool.name, f"{PROJECT}:multiKueue.workers[{number}].tpuPools[{index}]")
        return keys

    @property
    def warnings(self) -> list[str]:
        """What is valid but rarely meant, one line each naming the key: capacity no team holds, a spot rung with no
        taint, a gated model with no token. The program logs them (`pulumi preview` shows them as warnings) and the
        offline preview prints them after the capacity and queues."""
        queues = self.manager_queues
        # Autopilot taints the Spot VMs it provisions itself (GKE docs, concepts/spot-vms: "Autopilot automatically
        # provisions Spot VMs, adds taints and tolerations"): no rung of its capacity needs one of ours.
        ladders = {} if self.cluster.mode == "autopilot" else queues.ladders
        found = queue_warnings(queues.queues, queues.queue_pools, ladders, self.pool_keys)
        found += _version_warnings(self) + self._protection_warnings()
        return found + self._unlisted_zone_warnings() + (llm_serving_warnings(self.serving) if self.serving else [])

    def _protection_warnings(self) -> list[str]:
        """A cluster kept from deletion in a stack that protects nothing else reads like a production stack under
        another name: its node pools, charts and bucket would still be deleted by `pulumi destroy`."""
        if self.protected or not self.cluster.deletion_protection:
            return []
        return [
            f"{PROJECT}:cluster.deletionProtection: true, but the {self.stack} stack is not protected: `pulumi "
            f"destroy` would delete everything but the cluster; set {PROJECT}:protected: true if it is a production "
            "stack"
        ]

    def _unlisted_zone_warnings(self) -> list[str]:
        """Each pool group with `zoneUnlisted`: its zone accepted against the table, or the flag not needed."""
        keys = self.pool_keys
        found = []
        for cluster in [self, *(self._worker_config(w) for w in self.workers)]:
            for pool in cluster.tpu_pools:
                if pool.zone_unlisted:
                    version, zone = pool.machine.version.name, cluster.pool_zone(pool)
                    field, message = tpu_zones.unlisted_warning(
                        version, provisioning=pool.provisioning, zone=zone, region=cluster.region
                    )
                    found.append(f"{keys[pool.name]}.{field}: {message}")
        return found

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
    def checkpoint_bucket_name(self) -> str | None:
        """The checkpoint bucket's name; None when the stack has no writers, so no checkpoint bucket."""
        return checkpoint_bucket_name(self.bucket, data_bucket=self.bucket_name) if self.bucket.writers else None

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
        """The worker as a stack of its own (see _worker_config), its ranges resolved: given, else the default of its
        place among the stack's clusters (the stack's own cluster first)."""
        derived = self._worker_config(worker)
        index = 1 + next(i for i, w in enumerate(self.workers) if w is worker)
        cluster = derived.cluster.model_copy(update={"ip_ranges": derived.ranges(index)})
        return derived.model_copy(update={"cluster": cluster})

    def _worker_config(self, worker: WorkerConfig) -> StackConfig:
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
                # The manager refuses queues.placement: a worker places nothing (and repeats no placement problem).
                "placement": PlacementConfig(),
                "pods_ready": self._workers_pods_ready(),
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
                "ip_ranges": worker.ip_ranges,
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

    def _workers_pods_ready(self) -> PodsReadyConfig:
        """A worker's Kueue waits as long as the manager's: the manager mirrors the worker's admission and evicts
        (re-dispatching) by its own clock, so both take the settings of every worker's capacity."""
        chosen = self.queues.pods_ready
        if chosen.problems():
            return chosen  # reported on the manager's keys
        settings = self.pods_ready
        return chosen.model_copy(
            update={"timeout": f"{settings.timeout}s", "recovery_timeout": f"{settings.recovery_timeout}s"}
        )

    @property
    def pods_ready(self) -> PodsReady:
        """Kueue's waitForPodsReady in this cluster (components/config/controllers.py), from the capacity its Kueue
        hands out (a MultiKueue manager's: its workers') and `queues.podsReady`."""
        capacity = self.manager_queues.queue_pools if self.is_manager else self.queue_pools
        return pods_ready(capacity, self.queues.pods_ready)

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


def vpc_name(stack: str) -> str:
    """The stack's own VPC: `tpu-stack-<stack>`, in the lowercase letters, digits and '-' of a network name."""
    return f"{PROJECT}-{re.sub(r'[^a-z0-9-]+', '-', stack.lower()).strip('-')}"[:63].rstrip("-")


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


def load(
    raw: Mapping[str, Any], *, stack: str, now: datetime | None = None, written: Mapping[str, str] | None = None
) -> StackConfig:
    """Build the model from flat Pulumi config (`{"tpu-stack:tpuPools": [...], "gcp:project": ...}`).

    Values may be JSON strings (how the engine passes structured config) or already-parsed objects; only the keys the
    program reads are parsed (a provider's own keys, such as `gcp:credentials` or an encrypted `gcp:accessToken`,
    are the provider's to read). `written`: the
    text of each unquoted number as the stack file has it, by config key, where the caller read the file (the engine
    hands the program only the number: 1.30 arrives as 1.3).
    """
    import json

    problems: list[str] = []
    data: dict[str, Any] = {"stack": stack}
    for key, value in raw.items():
        namespace, _, name = key.partition(":")
        read = key in GCP_KEYS or namespace == PROJECT
        if read and isinstance(value, str) and value.startswith(("[", "{")):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as error:
                # The value is not repeated: text pasted into a setting may be a credential of no known form.
                problems.append(
                    f"{key}: the value starts like JSON but is not ({error.msg.removesuffix(' at')} at column "
                    f"{error.colno}); give a YAML "
                    "mapping or list"
                )
                continue
        if key in GCP_KEYS:
            data[GCP_KEYS[key]] = value
        elif namespace == PROJECT and name in STACK_KEYS:
            data[STACK_KEYS[name]] = value
        elif namespace == PROJECT:
            known = ", ".join(sorted(STACK_KEYS))
            close = difflib.get_close_matches(name, STACK_KEYS, n=1, cutoff=0.6)
            fix = f"did you mean {PROJECT}:{close[0]}? " if close else ""
            problems.append(f"{key}: unknown config key; {fix}known {PROJECT} keys: {known}")
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
        errors = [e for e in error.errors() if not _only_follows(e)]
        lines = [_pydantic_line(e, written or {}) for e in errors]
        raise ConfigError(lines + _despite_errors(data, errors, now)) from None
    problems = stack_problems(config, now or datetime.now(UTC))
    if problems:
        raise ConfigError(problems)
    return config


def _despite_errors(data: dict[str, Any], errors: list[Any], now: datetime | None) -> list[str]:
    """The other problems of a config whose keys failed to read: a misspelled key with a close match is read as that
    key, a value of the wrong type or form (a version written as a number) as if it were left out, and the rest is
    checked, so independent mistakes come together (a pool's typo with its other mistakes, a bad
    `cluster.minMasterVersion` with the pools' errors). A check that involves a value left out is not repeated (its
    line names the key). A key without a close match (what would it have set?), or an error of no single key, and
    the rest waits for the fix."""
    fixed = copy.deepcopy(data)
    left_out: list[str] = []
    try:
        for error in errors:
            loc = tuple(error["loc"])
            parent: Any = fixed
            for part in loc[:-1]:
                parent = parent[part]
            if not isinstance(parent, dict) or not isinstance(loc[-1], str) or loc[-1] not in parent:
                return []
            if error["type"] == "extra_forbidden":
                new = _closest_key(loc)
                if new is None:
                    return []
                parent[new] = parent.pop(loc[-1])
            else:
                del parent[loc[-1]]
                left_out.append(to_camel(loc[-1]))
        config = StackConfig.model_validate(fixed)
    except (KeyError, IndexError, TypeError, ValidationError):
        return []
    return [line for line in stack_problems(config, now or datetime.now(UTC)) if not any(k in line for k in left_out)]


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


def _is_tag(part: int | str) -> bool:
    """A part of a pydantic error location that names a union member or validator, not a key of the YAML."""
    return isinstance(part, str) and ("[" in part or part in ("function-after",))


def _pydantic_line(error: Mapping[str, Any], written: Mapping[str, str]) -> str:
    loc = tuple(error["loc"])
    top, rest = loc[0], loc[1:]
    names = {"project": "gcp:project", "region": "gcp:region"}
    key = names.get(str(top), f"{PROJECT}:{to_camel(str(top))}")
    # Drop pydantic's union/type tags so the path reads like the YAML.
    rest = tuple(p for p in rest if not _is_tag(p))
    # A ladder's key is its name: what it lists is the ladder's pool groups.
    field = "ladders" if loc[:2] == ("queues", "ladders") and len(loc) == 3 else to_camel(str(loc[-1]))
    path = _key_path(key, rest)
    if error["type"] == "extra_forbidden":
        close = _closest_key(loc)
        if close is not None:
            return f"{path}: unknown key; did you mean {close}?"
    return f"{path}: {_user_message(error, field, written.get(path))}"


def _closest_key(loc: tuple[int | str, ...]) -> str | None:
    """The known key closest to the unknown key at `loc` (a misspelling: `topolgy`, `maxNode`), if one is close."""
    fields = _model_fields_at(StackConfig, [p for p in loc[:-1] if not _is_tag(p)])
    names = [info.alias or to_camel(name) for name, info in fields.items()]
    close = difflib.get_close_matches(str(loc[-1]), names, n=1, cutoff=0.6)
    return close[0] if close else None


def _model_fields_at(annotation: Any, path: list[int | str]) -> dict[str, Any]:
    """The fields of the config model found by walking `path` (keys and list indexes) from `annotation`."""
    for candidate in _members(annotation):
        if not path:
            if isinstance(candidate, type) and issubclass(candidate, ConfigModel):
                return dict(candidate.model_fields)
            continue
        part, rest = path[0], path[1:]
        origin, args = get_origin(candidate), get_args(candidate)
        if isinstance(candidate, type) and issubclass(candidate, ConfigModel) and isinstance(part, str):
            field = next((f for n, f in candidate.model_fields.items() if part in (n, f.alias)), None)
            if field is not None:
                return _model_fields_at(field.annotation, rest)
        elif origin in (list, tuple, Sequence) and isinstance(part, int) and args:
            return _model_fields_at(args[0], rest)
        elif origin in (dict, Mapping) and isinstance(part, str) and len(args) == 2:
            return _model_fields_at(args[1], rest)
    return {}


def _members(annotation: Any) -> list[Any]:
    """The types an annotation allows: a union's members, an Annotated type's own."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _members(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return [member for arg in get_args(annotation) for member in _members(arg)]
    return [annotation]


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


def _user_message(error: Mapping[str, Any], field: str, written: str | None = None) -> str:
    """Pydantic's message in the user's words: what was given and what the key takes, no Python type names.
    `written`: the value's text in the stack file, where the caller read it."""
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
        return _not_text(value, written)
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
    if kind in ("less_than_equal", "less_than"):
        bound = f"{ctx['le']:g} or less" if kind == "less_than_equal" else f"less than {ctx['lt']:g}"
        return f"{_what(value)} is too large; use {bound}"
    return _message(error)


def _not_text(value: Any, written: str | None) -> str:
    """A number or flag where text belongs (a version, a label value): quoted back as typed. Without the file's text
    (the real engine hands the program what YAML read), a float is said to be what YAML made of it."""
    if isinstance(value, bool):
        return f'{_what(value)} is not text; quote it: "{str(value).lower()}"'
    if isinstance(value, int | float) and written is not None and not isinstance(value, bool):
        read = f" (YAML reads it as {value:g})" if written != f"{value:g}" else ""
        return f'the number {written} is not text{read}; quote it: "{written}"'
    if isinstance(value, float):
        return (
            f"{_what(value)} is not text; quote it as written (unquoted, YAML drops trailing zeros: 1.30 arrives as "
            f'1.3), e.g. "{value:g}"'
        )
    if isinstance(value, int):
        return f'{_what(value)} is not text; quote it: "{value}"'
    return f"{_what(value)} is not text; write text"


class NodePoolNames:
    """The node pool names of a cluster's pool groups, which must be unique: GKE names node pools per cluster, and
    each is a resource whose URN is its name under the TpuSlicePools type, whatever the group or cluster, which the
    engine refuses twice in one stack (pulumi pkg/resource/deploy/step_generator.go generateURN, "Duplicate resource
    URN"). Group `a` of two slices has `a-0` and `a-1`; a group `a-1` keeping its legacy first name has `a-1` too."""

    def __init__(self, *, system: bool) -> None:
        self.owners: dict[str, tuple[str, str, int]] = {}
        """Node pool -> (where its group is, the group's name, the slice's index)."""
        self.system = system
        """A Standard cluster's system node pool is named SYSTEM_POOL_NAME."""

    def taken(self, pool: TpuPoolConfig) -> list[str]:
        """The problem of the group when one of its node pools is already taken."""
        for index, name in enumerate(pool.node_pool_names):
            if self.system and name == SYSTEM_POOL_NAME:
                return [
                    f"its node pool {name!r} (slice {index}) is already the cluster's system node pool; rename the "
                    "group"
                ]
            owner = self.owners.get(name)
            if owner is not None:
                return [
                    f"its node pool {name!r} (slice {index}) is already slice {owner[2]} of {owner[0]} ({owner[1]!r}); "
                    "rename one of the two groups"
                ]
        return []

    def add(self, pool: TpuPoolConfig, where: str) -> None:
        """Takes the node pools of the group at `where` (a config path)."""
        for index, name in enumerate(pool.node_pool_names):
            self.owners.setdefault(name, (where, pool.name, index))


def _zone_problems(config: StackConfig, pool: TpuPoolConfig) -> list[str]:
    """Where the group's nodes go must offer its TPU by its provisioning, and be known: a group without a zone in a
    regional cluster is in each of the zones it is sent (StackConfig.node_locations), and GKE counts nodeCount per
    zone (terraform-provider-google v7.45.0 container_node_pool: node_count and initial_node_count per zone; the
    autoscaler's min/max too, GKE "About cluster autoscaling"), so a group of fixed size there would hold its slices
    in each zone while its Kueue quota and the preview count them once."""
    version, mode, region = pool.machine.version.name, pool.provisioning, config.region
    zone = config.pool_zone(pool)
    if not pool.zone_unlisted:
        problem = tpu_zones.refusal(version, provisioning=mode, zone=zone, region=region)
        if problem:
            return [f"the cluster's zone {problem}" if pool.zone is None and zone is not None else problem]
    if zone is not None:
        return []
    offered = tpu_zones.region_zones(version, provisioning=mode, region=region)
    what = tpu_zones.what(version, provisioning=mode)
    if not pool.autoscaled:
        slices = f"{pool.slices} slice" + ("s" if pool.slices > 1 else "")
        where = f"one of the zones of {region} offering {what}: {', '.join(offered)}" if offered else "its zone"
        return [
            f"required for a group of fixed size: GKE counts nodeCount per zone, so without one zone its {slices} "
            f"would run (and bill) in each of the cluster's {config.cluster_zones} zones; give {where}"
        ]
    if not offered:
        return [
            f"required with zoneUnlisted when the TPU zone table names no zone of {region} offering {what}: its nodes "
            "need a zone that does; give it"
        ]
    return []


def stack_problems(config: StackConfig, now: datetime) -> list[str]:
    """Checks that need more than one pool, or the region."""
    problems = []
    seen: dict[str, int] = {}
    node_pools = NodePoolNames(system=config.cluster.mode == "standard")
    for index, pool in enumerate(config.tpu_pools):
        key = f"{PROJECT}:tpuPools[{index}]"
        own = pool.problems()
        problems += [f"{key}.{field}: {message}" for field, message in own]
        # Its name and zone are mistakes of their own, whatever else is wrong with the entry.
        for node_pool in pool.node_pool_names if pool.slices >= 1 else [pool.name]:
            problem = dns_label_problem(node_pool, "node pool name")
            if problem:
                problems.append(f"{key}.name: {problem}")
                break
        if pool.name in seen:
            problems.append(f"{key}.name: {pool.name!r} is already used by tpuPools[{seen[pool.name]}]")
        else:
            problems += [f"{key}.name: {problem}" for problem in node_pools.taken(pool)]
            node_pools.add(pool, f"tpuPools[{index}]")
        seen.setdefault(pool.name, index)
        if pool.zone is not None and REGION.match(pool.zone):
            problems.append(f"{key}.zone: {pool.zone!r} is a region; give one of its zones, e.g. {pool.zone}-a")
        elif pool.zone is not None and not pool.zone.startswith(config.region + "-"):
            problems.append(f"{key}.zone: {pool.zone!r} is not in gcp:region {config.region!r}")
        elif not own and pool.adopted is None:
            # The zone's TPUs need a valid machine type. An adopted group's slices exist in their zones: GKE made them
            # there, whatever the published lists (vendor/data/tpu_zones.json) say, and refusing them would refuse
            # the cluster as it is.
            problems += [f"{key}.zone: {problem}" for problem in _zone_problems(config, pool)]
        if own:
            continue
        if pool.future_reservation is not None:
            problem = pool.future_reservation.lead_time_problem(now)
            if problem:
                problems.append(f"{key}.futureReservation: {problem}")
        if pool.drain and pool.name in config.serving_pools:
            problems.append(
                f"{key}.drain: pool group {pool.name!r} {config.serving_pools[pool.name]}, not Kueue capacity: there "
                "is no queue to drain it from; remove drain"
            )
        if pool.auto_upgrade is False and config.on_release_channel:
            problems.append(
                f"{key}.autoUpgrade: GKE keeps node auto-upgrade on in clusters on a release channel (cluster."
                f"releaseChannel {config.cluster.release_channel}); remove autoUpgrade and hold upgrades during "
                "training with cluster.maintenance.exclusions, or set cluster.releaseChannel: UNSPECIFIED"
            )
    problems += _adopted_problems(config)
    problems += _label_problems(config)
    problems += network_problems(config)
    problems += _version_floor_problems(config)
    problems += node_role_problems(config.cluster)
    problems += _system_pool_problems(config)
    plane = config.cluster.control_plane.problems()
    problems += [f"{PROJECT}:cluster.controlPlane.{field}: {message}" for field, message in plane]
    maintenance = config.cluster.maintenance.problems()
    problems += [f"{PROJECT}:cluster.maintenance.{field}: {message}" for field, message in maintenance]
    problems += _autopilot_problems(config)
    alerts = config.monitoring.problems()
    problems += [f"{PROJECT}:monitoring.{field}: {message}" for field, message in alerts]
    waiting = config.queues.pods_ready.problems()
    problems += [f"{PROJECT}:queues.podsReady.{field}: {message}" for field, message in waiting]
    if not (alerts or waiting) and config.monitoring.not_starting_minutes * 60 >= config.pods_ready.timeout:
        problems.append(
            f"{PROJECT}:monitoring.notStartingMinutes: {config.monitoring.not_starting_minutes} minutes is not less "
            f"than Kueue's PodsReady timeout ({duration(config.pods_ready.timeout)}), which deletes the pods first, so "
            f"the alert would never fire; use fewer than {config.pods_ready.timeout // 60}, or a longer "
            "queues.podsReady.timeout"
        )
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
            serving_pools=config.outside_queues,
            serving_namespaces=config.serving_namespaces,
        )
    problems += serving_shape_problems(config.tpu_pools, config.serving_pools)
    # --- serving checks (bucket, identity, Saxml) ---
    if config.protected and not config.monitoring.notification_channels:
        # Issue 27, defect 11: with no channel, an incident of a protected stack shows in Cloud Monitoring only.
        problems.append(
            f"{PROJECT}:monitoring.notificationChannels: {config.stack} is a protected stack and its alert policies "
            "would notify nobody; list the channels to notify, projects/<project>/notificationChannels/<id> (gcloud "
            "beta monitoring channels list; create one with gcloud beta monitoring channels create)"
        )
    if config.protected:
        problems += _protected_cluster_problems(config)
    if is_protected(config.stack) and not config.protected:  # by its name
        problems.append(
            f"{PROJECT}:protected: the {config.stack} stack is protected by its name; remove `protected: false`, or "
            "give an unprotected stack another name"
        )
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
        problems += cache_folder_problems(serving, config.bucket, config.saxml)
    problems += _placement_problems(config)
    problems += _multikueue_problems(config, now)
    return list(dict.fromkeys(problems))


def _protected_cluster_problems(config: StackConfig) -> list[str]:
    """What the policy pack refuses in a protected stack's cluster (`protected-stack-resources`, `cluster-network`),
    refused here first: one line per key instead of one preview per violation."""
    cluster, problems = config.cluster, []
    if not cluster.deletion_protection:
        problems.append(
            f"{PROJECT}:cluster.deletionProtection: {config.stack} is a protected stack and its cluster must be kept "
            "from deletion; remove `deletionProtection: false`"
        )
    if not cluster.private_nodes:
        problems.append(
            f"{PROJECT}:cluster.privateNodes: {config.stack} is a protected stack and its nodes must have no external "
            "IP addresses; remove `privateNodes: false`"
        )
    if cluster.control_plane.ip_endpoint:
        problems.append(
            f"{PROJECT}:cluster.controlPlane.ipEndpoint: {config.stack} is a protected stack and its control plane is "
            "reached only through its DNS endpoint; remove `ipEndpoint: true` (and its authorizedNetworks)"
        )
    return problems


def _placement_problems(config: StackConfig) -> list[str]:
    """The cluster sits in gcp:region, where the stack makes its subnetwork, router and Cloud NAT, and its nodes in a
    subnetwork of that region (a subnetwork is regional, and GKE puts a cluster's nodes in one of its own region)."""
    location = config.cluster_location
    region = location.rsplit("-", 1)[0] if is_zone(location) else location
    if is_zone(location) and region != config.region:
        return [f"{PROJECT}:cluster.location: {location!r} is not in gcp:region {config.region!r}"]
    if region != config.region:
        return [
            f"{PROJECT}:cluster.location: {location!r} is not gcp:region {config.region!r}; use gcp:region or one of "
            "its zones, or change gcp:region"
        ]
    subnetwork = config.cluster.subnetwork
    named = subnetwork_region(subnetwork or "")
    if subnetwork is not None and named is not None and named != region and not config.is_manager:
        return [
            f"{PROJECT}:cluster.subnetwork: {subnetwork!r} is a subnetwork of {named}, but the cluster is in {region}; "
            f"a cluster's nodes use a subnetwork of its own region: name one of {region}"
        ]
    return []


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
    if config.queues.placement.pools:
        # Kueue supports it: its manager skips the TAS checks ("topology runs on worker clusters", kueue v0.19.2
        # pkg/cache/scheduler/clusterqueue.go isTASViolated), so the workers would need the Topology and placed flavors.
        problems.append(
            f"{PROJECT}:queues.placement: placement by topology with MultiKueue is not supported by tpu-stack yet "
            "(Kueue places on the workers, and tpu-stack does not give them the Topology and placed flavors); remove "
            "it, or place from a stack without multiKueue"
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
    # Each worker's own node pools are checked with it (stack_problems below); across workers the URNs must differ.
    node_pools = NodePoolNames(system=False)
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
            elif not pool.problems():
                taken = node_pools.taken(pool)
                problems += [f"{where}.tpuPools[{pool_index}].name: {problem}" for problem in taken]
            pools.setdefault(pool.name, f"workers[{index}].tpuPools[{pool_index}]")
            owner.setdefault(pool.name, index)
        for pool_index, pool in enumerate(worker.tpu_pools):
            node_pools.add(pool, f"workers[{index}].tpuPools[{pool_index}]")
        for line in stack_problems(derived, now):
            line = line.replace(f"{PROJECT}:tpuPools", f"{where}.tpuPools")
            line = line.replace(f"{PROJECT}:cluster.ipRanges", f"{where}.ipRanges")
            line = line.replace(f"{PROJECT}:cluster.subnetwork", f"{where}.subnetwork")
            problems.append(line.replace("gcp:region", f"{where}.region"))
    problems += _ranges_apart(config)
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
    """Adopted flavor names must stay apart: a ResourceFlavor two pool groups claim would be one object. (Node pool
    names, adopted or not, are NodePoolNames' to check.)"""
    problems: list[str] = []
    if config.cluster.adopted is not None:
        problems += [f"{PROJECT}:cluster.adopted.{f}: {m}" for f, m in config.cluster.adopted.problems(config.stack)]
    flavors: dict[str, int] = {}
    groups: set[str] = set()
    for index, pool in enumerate(config.tpu_pools):
        if pool.problems() or pool.name in groups:  # a pool group named twice is reported on its name
            continue
        groups.add(pool.name)
        if pool.flavor_name in flavors:
            problems.append(
                f"{PROJECT}:tpuPools[{index}].adopted.flavor: flavor {pool.flavor_name!r} is already "
                f"tpuPools[{flavors[pool.flavor_name]}]'s"
            )
        flavors.setdefault(pool.flavor_name, index)
    return problems


def network_problems(config: StackConfig) -> list[str]:
    """The cluster's network and ranges: given where the stack cannot choose them, each holding the cluster at its
    largest, apart from each other and from the control plane's range."""
    key = f"{PROJECT}:cluster"
    cluster = config.cluster
    if cluster.subnetwork is not None and cluster.network is None and not config.is_manager:
        return [
            f"{key}.subnetwork: an existing subnetwork needs its network; set cluster.network, or remove subnetwork "
            "and the stack creates one in its own VPC"
        ]
    given = cluster.ip_ranges or IpRangesConfig()
    if cluster.network is not None:
        missing = [f for f in ("nodes", "pods", "services") if getattr(given, f) is None]
        if missing:
            return [
                f"{key}.ipRanges: with an existing network ({cluster.network}) give {', '.join(missing)}: the stack "
                "cannot know what is free there (a subnetwork's primary range for nodes; for a cluster GKE made "
                "the ranges of, what `gcloud container clusters describe` reports, or their sizes like /14)"
            ]
    if any(pool.problems() for pool in config.tpu_pools):
        return []  # the sizes follow from pools that must be fixed first
    plan = config.address_plan
    problems = [
        f"{key}.ipRanges.{field}: {message}"
        for field, message in range_problems(plan, config.ranges(), existing_subnetwork=cluster.network is not None)
    ]
    master = cluster.control_plane.master_ipv4_cidr
    if master is not None and not problems and not cluster.control_plane.problems():
        import ipaddress

        ranges = config.ranges()
        for field in ("nodes", "pods", "services"):
            value = str(getattr(ranges, field))
            if not value.startswith("/") and ipaddress.ip_network(value).overlaps(ipaddress.ip_network(master)):
                problems.append(
                    f"{key}.controlPlane.masterIpv4Cidr: {master} overlaps ipRanges.{field} {value}; give a /28 apart"
                )
    return problems


def _ranges_apart(config: StackConfig) -> list[str]:
    """The clusters of one VPC (the stack's and its workers') have subnetworks and pod ranges apart."""
    import ipaddress

    seen: list[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network]] = []
    problems: list[str] = []
    keys = [f"{PROJECT}:cluster.ipRanges"] + [
        f"{PROJECT}:multiKueue.workers[{i}].ipRanges" for i in range(len(config.workers))
    ]
    for key, derived in zip(keys, [config, *config.worker_configs], strict=True):
        ranges = derived.ranges()
        for field in ("nodes", "pods", "services"):
            value = str(getattr(ranges, field))
            try:
                network = ipaddress.ip_network(value)
            except ValueError:
                continue  # reported by the cluster's own checks
            clash = next((other for other, taken in seen if taken.overlaps(network)), None)
            if clash is not None and field != "services":
                problems.append(f"{key}.{field}: {value} overlaps {clash}; the stack's clusters share one VPC")
            seen.append((f"{key}.{field} {value}", network))
    return problems


def _autopilot_problems(config: StackConfig) -> list[str]:
    """What GKE refuses of an Autopilot cluster: a zonal location (Autopilot clusters are regional: "Compare features
    in Autopilot and Standard clusters", cluster availability type), no release channel ("Autopilot clusters can only
    be enrolled in a release channel": GKE's release channels page)."""
    if config.cluster.mode != "autopilot":
        return []
    problems = []
    location = config.cluster_location
    if is_zone(location):
        problems.append(
            f"{PROJECT}:cluster.location: {location!r} is a zone, and Autopilot clusters are regional; use its region "
            f"{location.rsplit('-', 1)[0]}, or set cluster.mode: standard"
        )
    if config.cluster.release_channel == "UNSPECIFIED":
        problems.append(
            f"{PROJECT}:cluster.releaseChannel: Autopilot clusters are always on a release channel; use RAPID, "
            "REGULAR or STABLE, or set cluster.mode: standard"
        )
    return problems


def _version_floor_problems(config: StackConfig) -> list[str]:
    """TPU7x runs only on GKE versions from IRONWOOD_STANDARD_FLOOR (Autopilot: IRONWOOD_AUTOPILOT_FLOOR) on:
    cluster.minMasterVersion, the stack's floor (the initial version without a release channel, checked against the
    channel's version on `pulumi up` with one), must be at least that."""
    autopilot = config.cluster.mode == "autopilot"
    capacity = config.queue_pools if autopilot else config.tpu_pools
    ironwood = next((index for index, pool in enumerate(capacity) if _is_ironwood(pool)), None)
    floor = IRONWOOD_AUTOPILOT_FLOOR if autopilot else IRONWOOD_STANDARD_FLOOR
    version = config.cluster.min_master_version
    if ironwood is None or not version_below_floor(version, floor):
        return []
    where = f"queues.autopilotCapacity[{ironwood}]" if autopilot else f"tpuPools[{ironwood}]"
    return [
        f"{PROJECT}:cluster.minMasterVersion: {version!r} is below {floor}, the first GKE version that runs TPU7x "
        f'(Ironwood) on {config.cluster.mode.capitalize()} clusters ({where}); set minMasterVersion: "{floor}" or '
        "a newer version"
    ]


def _version_warnings(config: StackConfig) -> list[str]:
    """A Standard cluster with TPU7x pools at or above GKE's floor but below what Cluster Toolkit's TPU7x example
    needs (IRONWOOD_TOOLKIT_FLOOR)."""
    version = config.cluster.min_master_version
    ironwood = any(_is_ironwood(pool) for pool in [*config.tpu_pools, *config.worker_pools])
    if config.cluster.mode == "autopilot" or not ironwood:
        return []
    below_gke = version_below_floor(version, IRONWOOD_STANDARD_FLOOR)  # an error (_version_floor_problems)
    if below_gke or not version_below_floor(version, IRONWOOD_TOOLKIT_FLOOR):
        return []
    return [
        f"{PROJECT}:cluster.minMasterVersion: {version!r} runs TPU7x (GKE's floor), but Cluster Toolkit's TPU7x "
        f"example needs {IRONWOOD_TOOLKIT_FLOOR} or later to work correctly; set minMasterVersion: "
        f'"{IRONWOOD_TOOLKIT_FLOOR}" unless this patch is what you have tested'
    ]


def _is_ironwood(pool: TpuPoolConfig) -> bool:
    """A TPU7x pool group, read from what it names (its own problems are reported apart)."""
    name = pool.machine_type or tpu_catalog.DEFAULT_MACHINE_TYPE.get(str(pool.tpu_version))
    machine = tpu_catalog.machine_type(name) if name else None
    return machine is not None and machine.version.name == tpu_catalog.IRONWOOD.name


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
