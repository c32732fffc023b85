"""Each cluster's addresses: its subnetwork's node range and the pod and Service ranges, sized so that every node the
cluster can have at once (every pool group at its largest) gets its pod block, and the control plane's peering range.

GKE gives every node a block of pod addresses sized from its pool's `maxPodsPerNode`: the smallest power of two with
at least twice as many addresses as pods (8 pods: /28, 9-16: /27, 17-32: /26, 33-64: /25, 65-128: /24, 129-256: /23;
cloud.google.com/kubernetes-engine/docs/how-to/flexible-pod-cidr). A node that finds no free block is not created,
so the pod range must hold a block for every node at once. The node range is the subnetwork's primary range: one
address per node, the 4 Google Cloud keeps in every subnet (cloud.google.com/vpc/docs/subnets#unusable-ip-addresses-
in-every-subnet), and the internal addresses the stack's internal load balancers and a Private Service Connect
control plane's endpoint take from it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from components.config.base import ConfigModel

TPU_MAX_PODS_PER_NODE = 15
"""What xpk gives every multi-host TPU pool (`--max-pods-per-node 15`, AI-Hypercomputer/xpk src/xpk/core/nodepool.py
at 367c838, and its large-scale guide for more than 5,000 VMs): a TPU VM runs one TPU pod and GKE's DaemonSets, so
a /27 per node instead of GKE's /24 lets a pod range hold eight times the nodes."""
GKE_DEFAULT_MAX_PODS_PER_NODE = 110
"""GKE's default for Standard node pools (a /24 per node)."""
MIN_MAX_PODS, MAX_MAX_PODS = 8, 256
"""GKE's bounds on maxPodsPerNode for Standard node pools."""
SUBNET_RESERVED = 4
"""Addresses Google Cloud keeps in every subnet's primary range (network, gateway, second-to-last, broadcast)."""
PSC_ENDPOINT = 1
"""A Private Service Connect control plane's internal endpoint takes one address of the node subnetwork."""
SERVICE_PREFIX = 20
"""GKE's default Service range (4,096 ClusterIPs)."""
AUTOPILOT_POD_PREFIX = 17
"""GKE's default pod range of an Autopilot cluster (its nodes are GKE's to size; the stack declares none)."""
HEADROOM = 2
"""Default ranges hold twice what the largest cluster needs: room for surge nodes during upgrades and for growth
without a new range (a pod range cannot be widened in place; a second one is an `additionalPodRanges` entry)."""
DEFAULT_POD_PREFIX, DEFAULT_NODE_PREFIX = 14, 20
"""The smallest default ranges: a /14 of pods (GKE's own default for a VPC-native cluster it sizes itself; 8,192
TPU nodes at 15 pods each) and a /20 of nodes (4,092). Ranges sized to the stack alone would change as its pools
grow, and a subnetwork's ranges cannot change while a cluster uses them: a grown pool group would be refused. A
cluster that outgrows these gets the range its largest needs, which the config states with the numbers."""
CLUSTER_BLOCKS = 4
"""Default layout: one /10 of 10.0.0.0/8 per cluster of the stack (its own and up to three MultiKueue workers), so
their subnetworks never overlap in the stack's VPC: pods at the /10's start (up to a /11), Services at +32.0.0.0/20,
nodes at +48.0.0.0 (up to a /12)."""
WIDEST_POD_PREFIX, WIDEST_NODE_PREFIX = 11, 12


def addresses_per_node(max_pods: int) -> int:
    """The pod block GKE gives each node: the smallest power of two at least twice `max_pods`."""
    return 1 << (2 * max_pods - 1).bit_length()


def prefix_holding(addresses: int) -> int:
    """The longest IPv4 prefix whose range holds `addresses`."""
    return 32 - max(addresses - 1, 1).bit_length()


class IpRangesConfig(ConfigModel):
    """A cluster's address ranges (IPv4 CIDRs, RFC 1918 or privately used public ranges). Each must hold what the
    cluster needs at its largest; with `network` (an existing VPC) the stack cannot know what is free there, so all
    three are given."""

    nodes: str | None = None
    """The subnetwork's primary range: one address per node, the internal load balancers and a Private Service
    Connect control plane's endpoint.

    Default: in 10.0.0.0/8, a /20, or twice the cluster's largest node count where that is more"""
    pods: str | None = None
    """The pod range: a block per node sized from its pool's `maxPodsPerNode`. With an existing subnetwork also a
    size alone (`/14`): GKE then picks the range, as it did for clusters created without one.

    Default: in 10.0.0.0/8, a /14, or twice what every pool at its largest needs where that is more"""
    services: str | None = None
    """The Service (ClusterIP) range; with an existing subnetwork also a size alone.

    Default: a /20 (GKE's default)"""


DnsProvider = Literal["cloud-dns", "kube-dns"]


@dataclass(frozen=True)
class PoolAddresses:
    """One node pool group's part of the pod range at its largest."""

    key: str
    """The config key of its maxPodsPerNode (`tpuPools[2]`, `cluster.systemPool`)."""
    nodes: int
    max_pods: int

    @property
    def pod_addresses(self) -> int:
        return self.nodes * addresses_per_node(self.max_pods)


@dataclass(frozen=True)
class AddressPlan:
    """What a cluster needs at its largest, and the ranges it gets."""

    pools: tuple[PoolAddresses, ...]
    load_balancers: int
    nodes_range: str
    pods_range: str
    services_range: str
    autopilot: bool = False

    @property
    def nodes(self) -> int:
        return sum(pool.nodes for pool in self.pools)

    @property
    def pod_addresses(self) -> int:
        return sum(pool.pod_addresses for pool in self.pools)

    @property
    def node_addresses(self) -> int:
        return self.nodes + SUBNET_RESERVED + PSC_ENDPOINT + self.load_balancers

    def to_json(self) -> dict[str, object]:
        return {
            "nodes": self.nodes_range,
            "pods": self.pods_range,
            "services": self.services_range,
            "maxNodes": self.nodes,
            "podAddressesNeeded": self.pod_addresses,
            "nodeAddressesNeeded": self.node_addresses,
        }


def default_ranges(
    index: int, pools: tuple[PoolAddresses, ...], load_balancers: int, *, autopilot: bool
) -> IpRangesConfig:
    """The default ranges of the stack's `index`-th cluster (0: its own, then its MultiKueue workers in order)."""
    base = index * (256 // CLUSTER_BLOCKS)
    plan = AddressPlan(pools, load_balancers, "", "", "", autopilot)
    pod_prefix = (
        AUTOPILOT_POD_PREFIX if autopilot else min(DEFAULT_POD_PREFIX, prefix_holding(HEADROOM * plan.pod_addresses))
    )
    node_prefix = min(DEFAULT_NODE_PREFIX, prefix_holding(HEADROOM * plan.node_addresses))
    return IpRangesConfig(
        pods=f"10.{base}.0.0/{max(pod_prefix, WIDEST_POD_PREFIX)}",
        services=f"10.{base + 32}.0.0/{SERVICE_PREFIX}",
        nodes=f"10.{base + 48}.0.0/{max(node_prefix, WIDEST_NODE_PREFIX)}",
    )


def range_problems(plan: AddressPlan, given: IpRangesConfig, *, existing_subnetwork: bool) -> list[tuple[str, str]]:
    """(field under ipRanges, message): a range that is no CIDR, overlaps another, or cannot hold the cluster at its
    largest."""
    problems: list[tuple[str, str]] = []
    networks: dict[str, ipaddress.IPv4Network] = {}
    for field, value in (("nodes", given.nodes), ("pods", given.pods), ("services", given.services)):
        if value is None:
            continue
        if existing_subnetwork and field != "nodes" and value.startswith("/"):
            if not value[1:].isdigit() or not 8 <= int(value[1:]) <= 29:
                problems.append((field, f"{value!r} is not a range size like /14"))
            continue
        try:
            network = ipaddress.ip_network(value)
        except ValueError:
            size = " or a size like /14 (GKE picks the range)" if existing_subnetwork and field != "nodes" else ""
            problems.append((field, f"{value!r} is not an IPv4 CIDR like 10.0.0.0/20{size}"))
            continue
        if not isinstance(network, ipaddress.IPv4Network):
            problems.append((field, f"{value!r} is IPv6; the cluster's ranges are IPv4"))
            continue
        networks[field] = network
    for first, second in (("nodes", "pods"), ("nodes", "services"), ("pods", "services")):
        if first in networks and second in networks and networks[first].overlaps(networks[second]):
            problems.append((second, f"{networks[second]} overlaps {first} {networks[first]}; give ranges apart"))
    return problems + capacity_problems(plan, given)


def capacity_problems(plan: AddressPlan, given: IpRangesConfig) -> list[tuple[str, str]]:
    """The pod and node ranges hold the cluster with every pool group at its largest."""
    problems: list[tuple[str, str]] = []
    pods = _size(given.pods)
    if pods is not None and not plan.autopilot and plan.pod_addresses > pods:
        parts = ", ".join(
            f"{pool.key} {pool.nodes} x {addresses_per_node(pool.max_pods)}" for pool in plan.pools if pool.nodes
        )
        problems.append(
            (
                "pods",
                f"{given.pods} holds {pods:,} pod addresses; at their largest the pools need {plan.pod_addresses:,} "
                f"({parts}: nodes x the block of their maxPodsPerNode): use a /{prefix_holding(plan.pod_addresses)} "
                "or wider, or lower maxPodsPerNode",
            )
        )
    nodes = _size(given.nodes)
    if nodes is not None and not plan.autopilot and plan.node_addresses > nodes:
        problems.append(
            (
                "nodes",
                f"{given.nodes} holds {nodes:,} addresses; {plan.nodes:,} nodes at their largest, "
                f"{plan.load_balancers} internal load balancer(s), the control plane's endpoint and the 4 every subnet "
                f"keeps need {plan.node_addresses:,}: use a /{prefix_holding(plan.node_addresses)} or wider",
            )
        )
    return problems


def _size(value: str | None) -> int | None:
    """Addresses in a CIDR or a size alone (`/14`); None if unreadable (reported apart)."""
    if value is None:
        return None
    try:
        prefix = int(value[1:]) if value.startswith("/") else ipaddress.ip_network(value).prefixlen
    except ValueError:
        return None
    return 1 << (32 - prefix)
