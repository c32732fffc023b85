"""Modelled wall time of a first deployment: `pulumi up` of this stack, xpk and Cluster Toolkit, as GKE runs them.

Each tool's work is a graph of steps (bench/schedule.py runs it under the tool's and GKE's limits):
- **this stack**: every resource of the real plan.json, with its dependencies, create times from
  bench/critical_path.py and its create timeout, run by `pulumi up` with `--parallel` workers;
- **xpk** (`xpk cluster create`, src/xpk/commands/cluster.py and src/xpk/core/nodepool.py): one command after
  another: the cluster (whose default pool is its CPU pool: nothing removed), CoreDNS, then the slice node pools
  in batches of 100 (`run_commands(..., batch=100)`: a batch starts when the previous one has finished), each a
  `gcloud` run once and a failure counted as failed, then JobSet and Kueue;
- **Cluster Toolkit** (modules/scheduler/gke-cluster, modules/compute/gke-node-pool with `num_slices`,
  modules/management/kubectl-apply): Terraform with its default `-parallelism=10` and the same provider
  (retries included) as pulumi-gcp: service account, cluster with its default pool removed, system pool and
  one node pool per slice in parallel, then the Kueue and JobSet manifests.
All three create the same cluster (one pool of v5e 2x4 flex-start slices) with the same create times.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench import critical_path
from bench.schedule import Limits, Outcome, Step, simulate

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = REPO / ".github" / "workflows"

HOSTED_RUNNER_VCPUS = 4
"""GitHub's standard hosted Linux runner for public repositories (docs.github.com, GitHub-hosted runners)."""
DEFAULT_PARALLEL = 4 * HOSTED_RUNNER_VCPUS
"""`pulumi up` without --parallel: 4 x GOMAXPROCS since pulumi 3.100 (pkg/cmd/pulumi/operations/up.go)."""
TERRAFORM_PARALLELISM = 10
"""`terraform apply` without -parallelism (internal/command/arguments/extended.go DefaultParallelism)."""
XPK_BATCH = 100
"""xpk runs node pool creates 100 at a time (src/xpk/core/nodepool.py: run_commands(..., batch=100))."""
PROVIDER_NODE_POOL_TIMEOUT = 120.0
"""terraform-provider-google's default create timeout of google_container_node_pool (2 h)."""

GKE_LIMITS: tuple[tuple[str, int | None], ...] = (
    ("100 per cluster: the batch xpk sends at once", 100),
    ("5 per cluster: the quota GKE answered with in 2023", 5),
    ("unlimited: every node pool op at once", None),
)
"""GKE documents no number for concurrent node pool operations per cluster; each column assumes one."""

XPK_CLUSTER = 6.0
"""Same create time as the stack's cluster; xpk keeps the default pool as its CPU pool."""
XPK_COREDNS = 1.0
"""xpk deploys CoreDNS and waits for its rollout before it creates node pools (update_coredns)."""
CHART = critical_path.MINUTES["helm-chart"]
SERVICE_ACCOUNT = critical_path.MINUTES["gcp:serviceaccount/account:Account"]
CPU_POOL = critical_path.MINUTES["cpu-pool"]
SLICE_POOL = critical_path.MINUTES["tpu-pool-multi-host"]
CLUSTER_WITH_REMOVAL = critical_path.MINUTES[critical_path.CLUSTER] + critical_path.MINUTES["default-pool-removal"]


SOURCED_INPUTS: tuple[tuple[str, str], ...] = (
    (f"`pulumi up` runs 4 x CPU steps at once by default ({DEFAULT_PARALLEL} on a {HOSTED_RUNNER_VCPUS}-vCPU runner)",
     "pulumi/pulumi pkg/cmd/pulumi/operations/up.go (since 3.100); docs.github.com hosted runners"),
    ("the workflows run `pulumi up` with the `parallel` they set", ".github/workflows/deploy.yml"),
    ("a refused node pool create is retried (0, 0.5, 1.5, 3.5, 7.5, 15.5 s, then every 10 s) until its timeout",
     "terraform-plugin-sdk helper/retry, used by terraform-provider-google's node pool create (bench/schedule.py)"),
    (f"a node pool's create timeout is {PROVIDER_NODE_POOL_TIMEOUT:g} minutes",
     "terraform-provider-google resource_container_node_pool.go default timeouts"),
    (f"xpk creates node pools {XPK_BATCH} at a time, each batch after the last, without retry",
     "AI-Hypercomputer/xpk src/xpk/core/nodepool.py run_commands(..., batch=100)"),
    (f"Terraform (Cluster Toolkit) applies {TERRAFORM_PARALLELISM} resources at a time",
     "hashicorp/terraform internal/command/arguments/extended.go DefaultParallelism"),
)  # fmt: skip
"""What the model takes from sources: the engine's, provider's and peers' scheduling."""
ASSUMED_INPUTS: tuple[tuple[str, str], ...] = (
    ("create times per resource type (cluster 6 min, a multi-host TPU pool 7, ...)",
     "bench/critical_path.py: no Google page publishes them; calibrated on reported wall times"),
    ("how many node pool operations GKE runs at once per cluster (each table assumes one: 100, 5, unlimited)",
     "GKE documents no number; 5 is what it answered in 2023"),
)  # fmt: skip
"""What the model assumes: every minute it prints rests on these, so its figures are a model, not a measurement."""


def inputs_report() -> list[str]:
    """The model's inputs, sourced apart from assumed, as `make bench` prints them above its tables."""
    lines = ["Inputs of the model (figures below are modelled, not measured):", "  sourced:"]
    lines += [f"    - {what} ({source})" for what, source in SOURCED_INPUTS]
    lines.append("  assumed:")
    lines += [f"    - {what} ({why})" for what, why in ASSUMED_INPUTS]
    return lines


def shipped_parallel(workflow: str = "deploy.yml") -> int:
    """The `parallel` the workflow gives `pulumi/actions` (what `pulumi up` runs with in CI)."""
    data = yaml.safe_load((WORKFLOWS / workflow).read_text())
    for job in data["jobs"].values():
        for step in job.get("steps", []):
            # An install-only step (no `command`) runs nothing: the `up` steps carry the parallelism.
            if str(step.get("uses", "")).startswith("pulumi/actions@") and "command" in step.get("with", {}):
                return int(step["with"]["parallel"])
    raise ValueError(f"{workflow}: no pulumi/actions step")


def _timeout_minutes(resource: Mapping[str, Any]) -> float | None:
    create = str((resource.get("customTimeouts") or {}).get("create") or "")
    found = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", create)
    if not create or not found:
        return PROVIDER_NODE_POOL_TIMEOUT if resource["type"] == critical_path.NODE_POOL else None
    hours, mins, secs = (int(g or 0) for g in found.groups())
    return hours * 60 + mins + secs / 60


def plan_steps(resources: Iterable[Mapping[str, Any]]) -> list[Step]:
    """One step per resource of plan.json, in plan order; node pools are operations on the cluster they wait for."""
    listed = list(resources)
    edges = critical_path.waits_for(listed)
    before = critical_path.ancestors(listed)
    clusters = {r["urn"] for r in listed if r["type"] == critical_path.CLUSTER}
    steps = []
    for r in listed:
        cluster = None
        if r["type"] == critical_path.NODE_POOL:
            owners = sorted(edges[r["urn"]] & clusters) or sorted(before[r["urn"]] & clusters)
            cluster = owners[0] if owners else None
        steps.append(
            Step(
                key=r["urn"],
                minutes=critical_path.minutes(r),
                after=frozenset(edges[r["urn"]]),
                worker=not r.get("remote"),  # a remote component is constructed by the resource monitor
                cluster=cluster,
                timeout_minutes=_timeout_minutes(r) if cluster else None,
            )
        )
    return steps


def xpk_steps(slices: int) -> list[Step]:
    steps = [Step("cluster", XPK_CLUSTER), Step("coredns", XPK_COREDNS, frozenset({"cluster"}))]
    previous = frozenset({"coredns"})
    for first in range(0, slices, XPK_BATCH):
        batch = [f"slice-{i}" for i in range(first, min(first + XPK_BATCH, slices))]
        steps += [Step(key, SLICE_POOL, previous, worker=False, cluster="c") for key in batch]
        previous = frozenset(batch)
    steps += [Step("jobset", CHART, previous), Step("kueue", CHART, frozenset({"jobset"}))]
    return steps


def cluster_toolkit_steps(slices: int) -> list[Step]:
    after_cluster = frozenset({"cluster", "nodes-sa"})
    timeout = PROVIDER_NODE_POOL_TIMEOUT
    steps = [
        Step("nodes-sa", SERVICE_ACCOUNT),
        Step("cluster", CLUSTER_WITH_REMOVAL, frozenset({"nodes-sa"})),
        Step("system-pool", CPU_POOL, after_cluster, cluster="c", timeout_minutes=timeout),
    ]
    steps += [
        Step(f"slice-{i}", SLICE_POOL, after_cluster, cluster="c", timeout_minutes=timeout) for i in range(slices)
    ]
    steps += [Step("kueue", CHART, frozenset({"system-pool"})), Step("jobset", CHART, frozenset({"system-pool"}))]
    return steps


@dataclass(frozen=True)
class Estimate:
    tool: str
    workers: int | None
    outcome: Outcome

    @property
    def minutes(self) -> float | None:
        return self.outcome.minutes

    def describe(self) -> str:
        if self.outcome.minutes is not None:
            return f"{self.outcome.minutes:.1f}"
        return f"fails at {self.outcome.failed_at or 0:.0f}"


def ours(steps: Sequence[Step], workers: int | None, gke_limit: int | None) -> Estimate:
    return Estimate("pulumi up", workers, simulate(steps, Limits(workers, gke_limit)))


def xpk(slices: int, gke_limit: int | None) -> Estimate:
    return Estimate("xpk", None, simulate(xpk_steps(slices), Limits(None, gke_limit, retry="once")))


def cluster_toolkit(slices: int, gke_limit: int | None) -> Estimate:
    limits = Limits(TERRAFORM_PARALLELISM, gke_limit)
    return Estimate("Cluster Toolkit", TERRAFORM_PARALLELISM, simulate(cluster_toolkit_steps(slices), limits))


def longest_slot_wait(estimate: Estimate) -> float:
    """Minutes the longest-waiting node pool create spent being refused by GKE (and retried)."""
    return max(estimate.outcome.slot_wait.values(), default=0.0)


def with_slices(resources: Sequence[Mapping[str, Any]], slices: int) -> list[Mapping[str, Any]]:
    """The plan with its one group of TPU slice pools resized to `slices` identical pools.

    Only the pools change with the number of slices (and values inside the Kueue objects, not their count or
    edges), so this is the plan the program registers for that many slices; it lets the model sweep every size
    without a preview per size. Nothing may wait for a slice pool.
    """
    pools = [r for r in resources if critical_path.kind(r).startswith("tpu-pool")]
    if not pools:
        raise ValueError("the plan has no TPU slice pool to resize")
    urns = {p["urn"] for p in pools}
    if any(urns & set(r.get("dependencies") or []) or r.get("parent") in urns for r in resources):
        raise ValueError("a resource waits for a TPU slice pool: the plan cannot be resized")
    kept = [r for r in resources if r["urn"] not in urns]
    template = pools[0]
    copies = [{**template, "urn": f"{template['urn']}-{i}", "name": f"{template['name']}-{i}"} for i in range(slices)]
    return kept + copies
