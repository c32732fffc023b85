"""Create times per resource and the dependency graph of plan.json, for the `pulumi up` model of bench/deploy.py.

A resource waits for:
- its `dependencies` (the SDK already expands a dependency on a ComponentResource to that component's
  children, and keeps a remote component such as a Helm v4 Chart as one node);
- its `parent`, as in Pulumi's engine; ComponentResources weigh nothing, so a parent link only passes on
  what the component itself waits for;
- for `kubernetes:` resources, the stack's Kubernetes provider: plan.json has no provider field, and the
  provider is what waits for the cluster and its CPU pool. With several Kubernetes providers in one plan, a
  resource is taken to wait for all of them (an upper bound).

`critical_path` is the longest chain of waits: the wall time of `pulumi up` only with unbounded parallelism
everywhere. bench/schedule.py adds the limits the engine and GKE really impose.

Create times assumed (minutes), by resource type. No Google page publishes them; they are assumptions, the
first three calibrated so that the model reproduces what issue 17 reports (256 slices in about two hours with
`pulumi up`'s default of 16 workers, xpk in about half an hour), and the default-pool removal from a GKE
operation log quoted in terraform-provider-google issue 1643 (DELETE_NODE_POOL of default-pool in 11 s):

| resource                                                   | minutes |
|------------------------------------------------------------|--------:|
| GKE cluster (`gcp:container/cluster:Cluster`), the create  |     6   |
| + removal of the default node pool (`removeDefaultNodePool`)|    0.5 |
| TPU node pool, multi-host slice (topology spans >1 VM)     |     7   |
| TPU node pool, single-host slice                           |     5   |
| CPU node pool                                              |     4   |
| Helm chart (`kubernetes:helm.sh/*`)                        |     2   |
| future reservation (calendar mode)                         |     1   |
| IAM member/binding (`gcp:*IAMMember`, `*IAMBinding`)      |     0.5 |
| Cloud Storage bucket                                       |     0.2 |
| IAM service account                                        |     0.2 |
| Kubernetes object (any other `kubernetes:` type)           |     0.1 |
| providers, ComponentResources                              |     0   |
| anything else                                              |     0.5 |

The provider removes the default pool inside the cluster's create (terraform-provider-google
resource_container_cluster.go, resourceContainerClusterCreate), so node pools wait for both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from components import tpu_catalog

Resource = Mapping[str, Any]

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
BUCKET = "gcp:storage/bucket:Bucket"
K8S_PROVIDER = "pulumi:providers:kubernetes"
KUEUE_PREFIX = "kubernetes:kueue.x-k8s.io/"

MINUTES: dict[str, float] = {
    CLUSTER: 6,
    "default-pool-removal": 0.5,
    "tpu-pool-multi-host": 7,
    "tpu-pool-single-host": 5,
    "cpu-pool": 4,
    "helm-chart": 2,
    "gcp:compute/futureReservation:FutureReservation": 1,
    "iam-member": 0.5,
    BUCKET: 0.2,
    "gcp:serviceaccount/account:Account": 0.2,
    "kubernetes-object": 0.1,
    "weightless": 0,
    "other": 0.5,
}


def kind(resource: Resource) -> str:
    """The row of the minutes table that applies to `resource`."""
    token = resource["type"]
    if token == NODE_POOL:
        return _node_pool_kind(resource.get("inputs") or {})
    if token in MINUTES:
        return str(token)
    if token.startswith("pulumi:providers:") or (not resource.get("custom") and not resource.get("remote")):
        return "weightless"
    if token.startswith("kubernetes:helm.sh/"):
        return "helm-chart"
    if token.startswith("kubernetes:"):
        return "kubernetes-object"
    if token.startswith("gcp:") and token.rsplit(":", 1)[-1].endswith(("IAMMember", "IAMBinding")):
        return "iam-member"
    return "other"


def _node_pool_kind(inputs: Mapping[str, Any]) -> str:
    machine = tpu_catalog.machine_type(str((inputs.get("nodeConfig") or {}).get("machineType")))
    if machine is None:
        return "cpu-pool"
    topology = (inputs.get("placementPolicy") or {}).get("tpuTopology") or machine.single_host_topology
    return "tpu-pool-multi-host" if machine.vms(topology) > 1 else "tpu-pool-single-host"


def label(resource: Resource) -> str:
    """Short name of the resource's row: "Cluster", "tpu-pool-multi-host", "kubernetes-object"."""
    row = kind(resource)
    return row.rsplit(":", 1)[-1] if row == resource["type"] else row


def minutes(resource: Resource) -> float:
    """The resource's create time; a cluster's includes the removal of its default pool when it asks for it."""
    removal = resource["type"] == CLUSTER and bool((resource.get("inputs") or {}).get("removeDefaultNodePool"))
    return MINUTES[kind(resource)] + (MINUTES["default-pool-removal"] if removal else 0.0)


def waits_for(resources: Iterable[Resource]) -> dict[str, set[str]]:
    """URN -> URNs of the resources it directly waits for (only those in the plan)."""
    listed = list(resources)
    urns = {r["urn"] for r in listed}
    providers = {r["urn"] for r in listed if r["type"] == K8S_PROVIDER}
    edges: dict[str, set[str]] = {}
    for resource in listed:
        before = {d for d in resource.get("dependencies") or [] if d in urns}
        if resource.get("parent") in urns:
            before.add(resource["parent"])
        if resource["type"].startswith("kubernetes:"):
            before |= providers
        before.discard(resource["urn"])
        edges[resource["urn"]] = before
    return edges


def ancestors(resources: Iterable[Resource]) -> dict[str, set[str]]:
    """URN -> every URN it waits for, directly or through others."""
    edges = waits_for(resources)
    found: dict[str, set[str]] = {}
    for urn in _topological(edges):
        found[urn] = set(edges[urn])
        for direct in edges[urn]:
            found[urn] |= found[direct]
    return found


def _topological(edges: Mapping[str, set[str]]) -> list[str]:
    """URNs with every resource after all it waits for; a cycle is an error that names its members."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done
    for start in sorted(edges):
        if state.get(start):
            continue
        stack: list[tuple[str, list[str]]] = [(start, sorted(edges[start]))]
        state[start] = 1
        while stack:
            urn, pending = stack[-1]
            if pending:
                nxt = pending.pop()
                if state.get(nxt) == 1:
                    cycle = [u for u, _ in stack]
                    cycle = [*cycle[cycle.index(nxt) :], nxt]
                    raise ValueError(f"dependency cycle: {' -> '.join(cycle)}")
                if not state.get(nxt):
                    state[nxt] = 1
                    stack.append((nxt, sorted(edges[nxt])))
            else:
                stack.pop()
                state[urn] = 2
                order.append(urn)
    return order


@dataclass(frozen=True)
class CriticalPath:
    minutes: float
    """Estimated wall time of `pulumi up` on a fresh stack."""
    chain: list[Resource]
    """The longest chain, first resource first (weightless components left out)."""
    sequential_minutes: float
    """The same resources created one after another, as the seeds' hand-run steps do."""


def critical_path(resources: Iterable[Resource]) -> CriticalPath:
    listed = list(resources)
    by_urn = {r["urn"]: r for r in listed}
    edges = waits_for(listed)
    finish: dict[str, float] = {}
    via: dict[str, str | None] = {}
    for urn in _topological(edges):
        # Ties go to the lexically smallest URN, so the printed chain is stable between runs.
        before = max(sorted(edges[urn]), key=lambda d: finish[d], default=None)
        via[urn] = before
        finish[urn] = minutes(by_urn[urn]) + (finish[before] if before else 0.0)
    if not finish:
        return CriticalPath(0.0, [], 0.0)
    last: str | None = max(sorted(finish), key=lambda u: finish[u])
    chain: list[Resource] = []
    while last is not None:
        if kind(by_urn[last]) != "weightless" or by_urn[last]["type"].startswith("pulumi:providers:"):
            chain.append(by_urn[last])
        last = via[last]
    chain.reverse()
    total = max(finish.values())
    return CriticalPath(round(total, 2), chain, round(sum(minutes(r) for r in listed), 2))


# ---- the shape rules of design §6 ----------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    name: str
    passed: bool | None
    """None: nothing in the plan to check yet."""
    detail: str


def names_workload_identity_pool(resource: Resource) -> bool:
    """A member of `<project>.svc.id.goog`: IAM refuses it until the first cluster has created that pool, so it
    may wait for the cluster resource (never for node pools or anything inside the cluster)."""
    return ".svc.id.goog" in str((resource.get("inputs") or {}).get("member", ""))


def rules(resources: Iterable[Resource]) -> list[Rule]:
    """Node pools never wait on each other; Kueue objects wait only on the Kueue chart; bucket and IAM wait
    on nothing in the cluster."""
    listed = list(resources)
    by_urn = {r["urn"]: r for r in listed}
    before = ancestors(listed)
    pools = [r for r in listed if r["type"] == NODE_POOL]
    charts = {r["urn"] for r in listed if kind(r) == "helm-chart"}
    kueue_charts = {u for u in charts if "kueue" in str((by_urn[u].get("inputs") or {}).get("chart", "")).lower()}
    kueue_objects = [r for r in listed if r["type"].startswith(KUEUE_PREFIX)]
    detached = [r for r in listed if r["type"] == BUCKET or kind(r) == "iam-member"]

    def names(urns: Iterable[str]) -> str:
        return ", ".join(sorted(by_urn[u]["name"] for u in urns))

    pool_waits = {p["name"]: names(u for u in before[p["urn"]] if by_urn[u]["type"] == NODE_POOL) for p in pools}
    bad_pools = {name: waits for name, waits in pool_waits.items() if waits}
    result = [
        Rule(
            "node pools never wait on each other",
            not bad_pools if pools else None,
            "; ".join(f"{n} waits for {w}" for n, w in bad_pools.items()) or f"{len(pools)} node pools",
        )
    ]

    # What the Kueue chart itself waits for (the cluster, its system pool, the JobSet chart) comes with it.
    with_the_chart = set().union(*(before[u] for u in kueue_charts))
    kueue_problems = []
    for obj in kueue_objects:
        heavy = {
            u
            for u in before[obj["urn"]] - with_the_chart
            if by_urn[u]["type"] == NODE_POOL or u in charts - kueue_charts
        }
        if heavy:
            kueue_problems.append(f"{obj['name']} waits for {names(heavy)}")
        if not before[obj["urn"]] & kueue_charts:
            kueue_problems.append(f"{obj['name']} does not wait for the Kueue chart")
    result.append(
        Rule(
            "Kueue objects wait only on the Kueue chart",
            not kueue_problems if kueue_objects else None,
            "; ".join(kueue_problems) or (f"{len(kueue_objects)} Kueue objects" if kueue_objects else "none yet"),
        )
    )

    detached_problems = []
    for resource in detached:
        in_cluster = {
            u
            for u in before[resource["urn"]]
            if by_urn[u]["type"].startswith(("gcp:container/", "kubernetes:", "pulumi:providers:kubernetes"))
            and not (by_urn[u]["type"] == CLUSTER and names_workload_identity_pool(resource))
        }
        if in_cluster:
            detached_problems.append(f"{resource['name']} waits for {names(in_cluster)}")
    result.append(
        Rule(
            "bucket and IAM wait on nothing in the cluster",
            not detached_problems if detached else None,
            "; ".join(detached_problems) or f"{len(detached)} buckets and IAM members",
        )
    )
    return result
