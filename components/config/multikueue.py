"""MultiKueue: one manager cluster (the stack's own) that dispatches the teams' workloads to worker clusters in other
regions, each a full cluster of this stack with its own TPU pool groups.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from components.config.base import ConfigModel, cluster_name, region_problem
from components.config.network import IpRangesConfig
from components.config.pools import TpuPoolConfig

_SUBNETWORK_REGION = re.compile(r"(?:^|/)regions/(?P<region>[^/]+)/subnetworks/[^/]+$")
"""A subnetwork's resource path or URL names its region: `projects/<p>/regions/<r>/subnetworks/<name>`."""


def subnetwork_region(subnetwork: str) -> str | None:
    """The region a subnetwork reference names, None for a bare name (the cluster's region is meant)."""
    match = _SUBNETWORK_REGION.search(subnetwork)
    return match["region"] if match else None


class WorkerConfig(ConfigModel):
    """A worker cluster: a GKE cluster of this stack in its own region, with its own TPU pool groups, JobSet, Kueue,
    the teams' queues over its pools, network policies and monitoring. The manager's Kueue sends it workloads."""

    name: str
    """GKE name of the worker cluster (a DNS label of at most 40 characters), also its MultiKueueCluster's name."""
    region: str
    """Region of the worker cluster, e.g. `us-east5`; every zone of its pool groups must be in it."""
    subnetwork: str | None = None
    """Subnetwork of the worker's nodes in its region (a custom-mode network has no default one).

    Default: the stack's subnetwork `<worker>-nodes` (with `cluster.network`: the network's subnetwork in the
    region)"""
    ip_ranges: IpRangesConfig | None = None
    """The worker's node, pod and Service ranges, as `cluster.ipRanges`; apart from every other cluster's.

    Default: sized from the worker's largest node count, in its own /10 of 10.0.0.0/8"""
    tpu_pools: tuple[TpuPoolConfig, ...] = Field(min_length=1)
    """The worker's TPU pool groups, with the same keys and checks as `tpuPools`; their names are unique across the
    whole stack, and teams' `shares` and `ladders` name them like any pool group."""

    _name = field_validator("name")(cluster_name)

    @field_validator("region")
    @classmethod
    def _region(cls, region: str) -> str:
        problem = region_problem(region, "a worker's region")
        if problem:
            raise ValueError(problem)
        return region


class MultiKueueConfig(ConfigModel):
    """Worker clusters in other regions that the stack's cluster, the manager, dispatches workloads to: a workload
    submitted to a team's LocalQueue on the manager is copied to every worker and runs on the first that admits it.
    The manager then runs no TPU pools of its own (`tpuPools` empty), no Saxml and no vLLM servers."""

    workers: tuple[WorkerConfig, ...] = Field(min_length=1)
    """The worker clusters, each in its own region."""
    token_generation: int = Field(default=1, ge=1)
    """Raise by one to rotate the manager's tokens: each worker gets a new token Secret, the manager's kubeconfigs
    name the new token, then the old Secret is deleted, which revokes the old token."""
