"""What must hold for every stack config and every change, worked out here from GKE's, Kueue's and the engine's rules
rather than from the program's own derivations; each check returns one line per breach ([] when it holds).

The plan is read as the cloud would see it: a node pool's nodes carry the labels GKE puts on TPU nodes and the
pool's own, its taints, and hold the chips and CPU and memory of its machine type less GKE's reservations; a Kueue
flavor's quota is what the ClusterQueues and Cohorts give it; a workload's pods ask for what their templates say,
with what Kueue and GKE's admission add.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from tests.properties.stacks import FOUR_CHIP, SINGLE_HOST, Drawn, shapes

Record = Mapping[str, Any]
NODE_POOL = "gcp:container/nodePool:NodePool"
SLICE_GROUP = "tpu-stack:index:TpuSlicePools"
TPU = "google.com/tpu"
ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
REGIONAL_ZONES = 3
"""Zones of a regional cluster's node pools when they name none ("a regional cluster ... replicates nodes across three
zones by default", GKE's regional clusters page)."""


def _catalog() -> dict[str, tuple[str, int, str]]:
    """Machine type -> (accelerator label, chips per VM, single-host topology), from xpk's records and GKE's TPU pages
    (the single-host types xpk leaves out): TPU nodes carry the accelerator and topology labels (GKE's TPU docs)."""
    labels = {"v4": "tpu-v4-podslice", "v5e": "tpu-v5-lite-podslice", "v5p": "tpu-v5p-slice", "v6e": "tpu-v6e-slice",
              "tpu7x": "tpu7x"}  # fmt: skip
    found: dict[str, tuple[str, int, str]] = {}
    for version, shapes_of in shapes().items():
        for shape in shapes_of:
            if shape.vms == 1 and (shape.machine not in found or shape in SINGLE_HOST):
                found[shape.machine] = (labels[version], shape.chips_per_vm, shape.topology)
    return found


CATALOG = _catalog()


# ---- node pools as GKE runs them ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodePool:
    """A TPU node pool of the plan, as its nodes are."""

    name: str
    group: str
    """The pool group (its TpuSlicePools component)."""
    cluster: str
    machine: str
    labels: Mapping[str, str]
    taints: tuple[tuple[str, str, str], ...]
    """(key, value, effect) in Kubernetes terms."""
    max_nodes: int

    @property
    def chips_per_vm(self) -> int:
        return CATALOG[self.machine][1]

    @property
    def chips(self) -> int:
        return self.max_nodes * self.chips_per_vm


_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "PREFER_NO_SCHEDULE": "PreferNoSchedule", "NO_EXECUTE": "NoExecute"}


def node_pools(records: Sequence[Record]) -> list[NodePool]:
    """Every TPU node pool of the plan."""
    by_urn = {str(r["urn"]): r for r in records}
    clusters = {str(r["inputs"]["name"]): r for r in records if r["type"] == "gcp:container/cluster:Cluster"}
    found = []
    for record in records:
        inputs = record["inputs"]
        machine = (inputs.get("nodeConfig") or {}).get("machineType")
        if record["type"] != NODE_POOL or machine not in CATALOG:
            continue
        config = inputs["nodeConfig"]
        accelerator, _per_vm, single_host = CATALOG[machine]
        labels = {
            **(config.get("labels") or {}),
            ACCELERATOR_LABEL: accelerator,
            TOPOLOGY_LABEL: (inputs.get("placementPolicy") or {}).get("tpuTopology") or single_host,
            NODE_POOL_LABEL: inputs["name"],
        }
        if config.get("flexStart"):
            labels["cloud.google.com/gke-flex-start"] = "true"
        if config.get("spot"):
            labels["cloud.google.com/gke-spot"] = "true"
        taints = [
            (t["key"], t.get("value", ""), _EFFECTS[t.get("effect", "NO_SCHEDULE")]) for t in config.get("taints") or ()
        ]
        taints.append((TPU, "present", "NoSchedule"))  # GKE taints TPU nodes
        if (inputs.get("queuedProvisioning") or {}).get("enabled"):
            taints.append(("cloud.google.com/gke-queued", "true", "NoSchedule"))
        cluster = clusters.get(str(inputs["cluster"]))
        location = str((cluster or {}).get("inputs", {}).get("location", ""))
        zones = len(inputs.get("nodeLocations") or ()) or (1 if location.count("-") == 2 else REGIONAL_ZONES)
        scaling = inputs.get("autoscaling") or {}
        if "totalMaxNodeCount" in scaling:
            most = int(scaling["totalMaxNodeCount"])
        else:  # nodeCount and maxNodeCount are per zone
            most = int(inputs.get("nodeCount") or scaling.get("maxNodeCount") or 0) * zones
        group = by_urn[str(record["parent"])]["name"] if record.get("parent") in by_urn else ""
        found.append(NodePool(str(inputs["name"]), str(group), str(inputs["cluster"]), machine, labels,
                              tuple(taints), most))  # fmt: skip
    return found


def _cluster_of(records: Sequence[Record]) -> dict[str, str]:
    """URN of every Kubernetes object -> the name of the GKE cluster it is written to: its provider (its own, else its
    parent's) is the kubernetes provider of a GkeCluster component, beside that component's cluster."""
    by_urn = {str(r["urn"]): r for r in records}
    cluster_in = {str(r["parent"]): str(r["inputs"]["name"]) for r in records
                  if r["type"] == "gcp:container/cluster:Cluster"}  # fmt: skip
    providers = {str(r["urn"]): cluster_in.get(str(r.get("parent")), "") for r in records
                 if r["type"] == "pulumi:providers:kubernetes"}  # fmt: skip

    def provider(record: Record) -> str | None:
        if record.get("provider"):
            return str(record["provider"])
        parent = by_urn.get(str(record.get("parent")))
        return provider(parent) if parent else None

    return {str(r["urn"]): providers.get(provider(r) or "", "") for r in records if r["type"].startswith("kubernetes:")}


def _kueue(records: Sequence[Record], kind: str) -> list[Record]:
    return [r for r in records if r["type"] == f"kubernetes:kueue.x-k8s.io/v1beta2:{kind}"]


def _tpu_quota(spec: Mapping[str, Any]) -> dict[str, tuple[int, int | None]]:
    """Flavor -> (nominalQuota, borrowingLimit or None) of google.com/tpu in a ClusterQueue's or Cohort's spec."""
    found = {}
    for group in spec.get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for resource in flavor.get("resources") or ():
                if resource["name"] == TPU:
                    limit = resource.get("borrowingLimit")
                    found[flavor["name"]] = (int(resource["nominalQuota"]), None if limit is None else int(limit))
    return found


def pool_entries(config: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every pool group of a stack file's config, the MultiKueue workers' included."""
    workers = (config.get("tpu-stack:multiKueue") or {}).get("workers", ())
    return [*config.get("tpu-stack:tpuPools", ()), *(e for w in workers for e in w["tpuPools"])]


def serving_groups(drawn: Drawn) -> set[str]:
    """Pool groups Saxml or vLLM servers hold: not Kueue capacity."""
    config = drawn.config
    found = {config["tpu-stack:saxml"]["pool"]} if "tpu-stack:saxml" in config else set()
    return found | {s["pool"] for s in config.get("tpu-stack:serving", {}).get("servers", ())}


def _manager(drawn: Drawn) -> str | None:
    """A MultiKueue manager's cluster: its queues admit against every worker's pool groups."""
    return drawn.config["tpu-stack:cluster"]["name"] if "tpu-stack:multiKueue" in drawn.config else None


def _matches(labels: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in wanted.items())


def quotas_within_chips(drawn: Drawn, records: Sequence[Record]) -> list[str]:
    """Per cluster and flavor, the TPU quota of every ClusterQueue and Cohort together is at most the chips of the node
    pools the flavor's node labels select (a manager's: its workers'), serving pool groups left out; and every flavor
    selects some node pool."""
    cluster_of = _cluster_of(records)
    manager = _manager(drawn)
    serving = serving_groups(drawn)
    pools = [p for p in node_pools(records) if p.group not in serving]
    quota: dict[tuple[str, str], int] = {}
    for record in _kueue(records, "ClusterQueue") + _kueue(records, "Cohort"):
        for flavor_name, (nominal, _limit) in _tpu_quota(record["inputs"]["spec"]).items():
            key = (cluster_of[str(record["urn"])], flavor_name)
            quota[key] = quota.get(key, 0) + nominal
    problems = []
    for flavor in _kueue(records, "ResourceFlavor"):
        cluster, name = cluster_of[str(flavor["urn"])], flavor["inputs"]["metadata"]["name"]
        wanted = flavor["inputs"]["spec"].get("nodeLabels") or {}
        selected = [p for p in pools if (cluster in (manager, p.cluster)) and _matches(p.labels, wanted)]
        chips = sum(p.chips for p in selected)
        if not selected:
            problems.append(f"flavor {name} ({cluster}) selects no TPU node pool: {wanted}")
        if quota.get((cluster, name), 0) > chips:
            problems.append(
                f"flavor {name} ({cluster}): quota {quota[(cluster, name)]} chips, but its node pools "
                f"{[p.name for p in selected]} hold at most {chips}"
            )
    return problems


def capacity_stated(drawn: Drawn, records: Sequence[Record], outputs: Mapping[str, Any]) -> list[str]:
    """The preview's capacity section (summary.capacity) states what each pool group's node pools hold: the most chips,
    the fewest (0 where they scale from zero), and the chips billed while idle (all of a fixed group's, and of a group
    that consumes a specific reservation, billed whether used or not; none of a group made on request). Pool groups
    without a zone included: their node pools' counts are taken per zone of their node locations (node_pools)."""
    from offline import summary

    capacity = summary.from_outputs(outputs)["capacity"]
    by_group: dict[str, list[NodePool]] = {}
    for pool in node_pools(records):
        by_group.setdefault(pool.group, []).append(pool)
    inputs = {str(r["inputs"]["name"]): r["inputs"] for r in records if r["type"] == NODE_POOL}
    problems = []
    for group, pools in by_group.items():
        if group not in capacity:
            continue
        stated = capacity[group]
        most = sum(p.chips for p in pools)
        scaled = [p for p in pools if inputs[p.name].get("autoscaling")]
        reserved = all(
            (inputs[p.name]["nodeConfig"].get("reservationAffinity") or {}).get("consumeReservationType")
            == "SPECIFIC_RESERVATION"
            for p in pools
        )
        fewest = sum(p.chips for p in pools if p not in scaled)
        billed = most if reserved else fewest
        for key, value in (("chips", most), ("minChips", fewest), ("billedIdleChips", billed)):
            if stated.get(key) != value:
                problems.append(f"capacity of {group}: {key} {stated.get(key)}, its node pools: {value}")
    return problems


# ---- workloads on their nodes --------------------------------------------------------------------------------------

_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti)?$")
_FACTOR = {None: 1.0, "m": 0.001, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(text: object) -> float:
    """A Kubernetes quantity in base units (cores, bytes)."""
    match = _QUANTITY.match(str(text))
    assert match, f"not a quantity: {text!r}"
    return float(match.group(1)) * _FACTOR[match.group(2)]


def _tiers(amount: float, tiers: Sequence[tuple[float | None, float]]) -> float:
    total, rest = 0.0, amount
    for span, rate in tiers:
        part = rest if span is None else min(span, rest)
        total, rest = total + part * rate, rest - part
    return total


KERNEL_SHARE = 0.017
"""Memory the kernel keeps before the kubelet reports capacity: GKE nodes report 1.6-1.7% less than the machine type
(2i2c-org/infrastructure deployer/commands/generate/resource_allocation/node-capacity-info.json: n2-highmem-32 256 GiB,
251.9 GiB capacity)."""
FUSE_SIDECAR = {"cpu": 0.25, "memory": 256 * 2**20}
"""Requests of the Cloud Storage FUSE sidecar without request annotations: the driver's defaults (GoogleCloudPlatform/
gcs-fuse-csi-driver cmd/webhook/main.go, --sidecar-cpu-request 250m, --sidecar-memory-request 256Mi)."""


def allocatable(machine: str) -> dict[str, float]:
    """CPU (cores) and memory (bytes) a node of `machine` offers pods: capacity less GKE's reservations and the 100 MiB
    eviction threshold (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes: CPU 6% of the first
    core, 1% of the next, 0.5% of the next 2, 0.25% above 4; memory 25% of the first 4 GiB, 20% of the next 4, 10% of
    the next 8, 6% of the next 112, 2% above 128)."""
    from components.tpu_catalog import MACHINE_TYPES  # published vCPUs and memory per machine type

    vm = MACHINE_TYPES[machine]
    gib = vm.memory_gib * (1 - KERNEL_SHARE)
    memory = gib - _tiers(gib, ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (None, 0.02))) - 100 / 1024
    cpu = vm.vcpus - _tiers(vm.vcpus, ((1, 0.06), (1, 0.01), (2, 0.005), (None, 0.0025)))
    return {"cpu": cpu, "memory": memory * 2**30}


def _pods(obj: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], int, int]]:
    """(pod template, pods per slice, slices) of a Job or JobSet."""
    if obj["kind"] == "Job":
        spec = obj["spec"]
        return [(spec["template"], int(spec.get("parallelism", 1)), 1)]
    found = []
    for job in obj["spec"]["replicatedJobs"]:
        spec = job["template"]["spec"]
        found.append((spec["template"], int(spec["parallelism"]), int(job.get("replicas", 1))))
    return found


def _tolerates(tolerations: Iterable[Mapping[str, Any]], taint: tuple[str, str, str]) -> bool:
    key, value, effect = taint
    return effect == "PreferNoSchedule" or any(
        t.get("key") == key
        and (t.get("operator") == "Exists" or t.get("value") == value)
        and t.get("effect") in (None, "", effect)
        for t in tolerations
    )


def workloads_fit(drawn: Drawn, records: Sequence[Record], workloads: Sequence[Any]) -> list[str]:
    """Every generated workload's pods fit a node of every pool group it may run on (a ladder: every rung), with what
    Kueue adds on admission (the flavor's node labels and tolerations) and GKE (the TPU toleration, the FUSE sidecar):
    node selector within the nodes' labels, every taint tolerated, requests within allocatable, one pod per VM and at
    most the group's slices; it is submitted to a LocalQueue the stack declares, whose ClusterQueue can hold its chips
    on every rung (quota, and what it may borrow from its cohort)."""
    ladders = drawn.config.get("tpu-stack:queues", {}).get("ladders", {})
    groups = {entry["name"]: entry for entry in pool_entries(drawn.config)}
    pools = node_pools(records)
    flavors = {r["inputs"]["metadata"]["name"]: r["inputs"]["spec"] for r in _kueue(records, "ResourceFlavor")}
    local_queues = {(r["inputs"]["metadata"]["namespace"], r["inputs"]["metadata"]["name"]): r["inputs"]["spec"]
                    for r in _kueue(records, "LocalQueue")}  # fmt: skip
    problems = []
    for workload in workloads:
        rungs = ladders.get(workload.pool, [workload.pool])
        for obj in workload.objects:
            meta = obj["metadata"]
            queue = local_queues.get((meta["namespace"], meta["labels"].get(QUEUE_LABEL)))
            if queue is None:
                problems.append(
                    f"{workload.name}: no LocalQueue {meta['labels'].get(QUEUE_LABEL)} in {meta['namespace']}"
                )
            for template, per_slice, slices in _pods(obj):
                for rung in rungs:
                    where = f"{workload.name} on {rung}"
                    problems += _pod_fits(where, template, flavors[rung], [p for p in pools if p.group == rung])
                    shape_vms = max(1, _vms(groups[rung]))
                    if per_slice != shape_vms:
                        problems.append(f"{where}: {per_slice} pods a slice, the slice has {shape_vms} VMs")
                    if slices > int(groups[rung].get("slices", 1)):
                        problems.append(f"{where}: {slices} slices, the group has {groups[rung].get('slices', 1)}")
                    if queue is not None:
                        chips = (
                            per_slice
                            * slices
                            * sum(
                                int(quantity((c["resources"].get("requests") or {}).get(TPU, 0)))
                                for c in template["spec"]["containers"]
                            )
                        )
                        problems += _admissible(where, records, queue["clusterQueue"], rung, chips)
    return problems


def _vms(entry: Mapping[str, Any]) -> int:
    machine = entry.get("machineType") or FOUR_CHIP[entry["tpuVersion"]]
    topology = entry.get("topology") or CATALOG[machine][2]
    return math.prod(int(d) for d in topology.split("x")) // CATALOG[machine][1]


def _pod_fits(
    where: str, template: Mapping[str, Any], flavor: Mapping[str, Any], pools: Sequence[NodePool]
) -> list[str]:
    if not pools:
        return [f"{where}: the group has no TPU node pool"]
    spec = template["spec"]
    selector = {**(spec.get("nodeSelector") or {}), **(flavor.get("nodeLabels") or {})}
    conflicts = {
        k for k, v in (flavor.get("nodeLabels") or {}).items() if (spec.get("nodeSelector") or {}).get(k, v) != v
    }
    tolerations = [*(spec.get("tolerations") or ()), *(flavor.get("tolerations") or ())]
    requests = {"cpu": 0.0, "memory": 0.0, TPU: 0.0}
    problems = [f"{where}: its node selector and the flavor disagree on {sorted(conflicts)}"] if conflicts else []
    for container in spec["containers"]:
        resources = container.get("resources") or {}
        asked, limits = resources.get("requests") or {}, resources.get("limits") or {}
        for name in requests:
            requests[name] += quantity(asked.get(name, 0))
        if TPU in asked and str(limits.get(TPU)) != str(asked[TPU]):
            problems.append(f"{where}: {container['name']} requests {asked[TPU]} {TPU} but limits {limits.get(TPU)}")
    if requests.get(TPU):
        tolerations.append({"key": TPU, "operator": "Exists", "effect": "NoSchedule"})  # GKE adds it for TPU pods
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    if annotations.get("gke-gcsfuse/volumes") == "true":
        requests["cpu"] += quantity(annotations.get("gke-gcsfuse/cpu-request", FUSE_SIDECAR["cpu"]))
        requests["memory"] += quantity(annotations.get("gke-gcsfuse/memory-request", FUSE_SIDECAR["memory"]))
    for pool in pools:
        if not _matches(pool.labels, selector):
            missing = {k: v for k, v in selector.items() if pool.labels.get(k) != v}
            problems.append(f"{where}: node pool {pool.name} lacks the selected labels {missing}")
        for taint in pool.taints:
            if not _tolerates(tolerations, taint):
                problems.append(f"{where}: node pool {pool.name}'s taint {taint} is not tolerated")
        room = {**allocatable(pool.machine), TPU: pool.chips_per_vm}
        for name, amount in requests.items():
            if amount > room[name] + 1e-6:
                problems.append(f"{where}: requests {amount:g} {name}, a {pool.machine} node offers {room[name]:g}")
        if not requests[TPU]:
            problems.append(f"{where}: requests no {TPU}")
    return problems


def _admissible(where: str, records: Sequence[Record], cluster_queue: str, flavor: str, chips: int) -> list[str]:
    """Whether `cluster_queue` could ever hold `chips` chips of `flavor` in some cluster that has it (a MultiKueue
    workload runs on one worker): its quota, plus what it may borrow (its borrowing limit, at most what the rest of
    its cohort holds)."""
    queues = _kueue(records, "ClusterQueue")
    cluster_of = _cluster_of(records)
    reach: dict[str, int] = {}
    for queue in (q for q in queues if q["inputs"]["metadata"]["name"] == cluster_queue):
        cluster = cluster_of[str(queue["urn"])]
        spec = queue["inputs"]["spec"]
        nominal, limit = _tpu_quota(spec).get(flavor, (0, 0))
        cohort = spec.get("cohortName")
        others = 0
        if cohort:
            peers = [q for q in queues if cluster_of[str(q["urn"])] == cluster and q is not queue
                     and q["inputs"]["spec"].get("cohortName") == cohort]  # fmt: skip
            peers += [c for c in _kueue(records, "Cohort") if cluster_of[str(c["urn"])] == cluster
                      and c["inputs"]["metadata"]["name"] == cohort]  # fmt: skip
            others = sum(_tpu_quota(p["inputs"]["spec"]).get(flavor, (0, None))[0] for p in peers)
        reach[cluster] = nominal + (others if limit is None else min(limit, others))
    if chips > max(reach.values(), default=0):
        return [f"{where}: needs {chips} chips of {flavor}; {cluster_queue} reaches {reach or 'nothing'}"]
    return []


# ---- changes --------------------------------------------------------------------------------------------------------

POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
CALENDAR = "gcp:compute/futureReservation:FutureReservation"
TOPOLOGY = "kubernetes:kueue.x-k8s.io/v1beta2:Topology"
RUNNING_CAPACITY = (
    NODE_POOL,
    POLICY,
    FLAVOR,
    CALENDAR,
    TOPOLOGY,
    "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
    "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
    "kubernetes:apps/v1:Deployment",
)
"""What runs, and what it runs on: the slices' node pools, their workload policies, the Kueue flavors (and Topology)
that admit onto them, the calendar-mode requests that reserve them, and the servers (Saxml's model-server JobSets,
vLLM's LeaderWorkerSets and Deployments, the controllers' Deployments)."""


def slice_names(group: str, slices: range, *, legacy: bool = False) -> set[str]:
    """Slice i of a group is the node pool `<group>-<i>`, slice 0 of a group deployed under the old names `<group>`
    (docs/operations.md, *Names that survive a resize*)."""
    return {group if (i == 0 and legacy) else f"{group}-{i}" for i in slices}


def capacity_kept(
    steps: Sequence[Any], *, deleted_slices: set[str], replaced: Collection[str] = (), protected: bool
) -> list[str]:
    """A resize or an extension replaces no running capacity and deletes none but the slices it removes; an unprotected
    stack refuses nothing. `replaced`: what it must replace all the same (a resized calendar-mode group's request,
    which cannot change, and the slices that consume it)."""
    problems = []
    for step in steps:
        if step.type in RUNNING_CAPACITY and step.op == "replace" and step.name not in replaced:
            problems.append(f"replaces running capacity {step.name} ({step.type}): {step.why}")
        if step.type in RUNNING_CAPACITY and step.op in ("delete", "forget") and step.name not in deleted_slices:
            problems.append(f"deletes running capacity {step.name} ({step.type})")
        if step.op == "refuse" and not protected:
            problems.append(f"refuses {step.name} ({step.type}): {step.why}")
    missing = deleted_slices - {s.name for s in steps if s.op in ("delete", "refuse")}
    return problems + [f"keeps the slice {name} it removes" for name in sorted(missing)]


def _section(text: str, title: str) -> str:
    """The lines of a plan diff section (`**Replaced** (3): ...` up to the next section)."""
    start = text.find(f"**{title}**")
    if start < 0:
        return ""
    end = text.find("\n**", start + 1)
    return text[start : end if end > 0 else len(text)]


def said_in_words(diff: Any, text: str, records: Mapping[str, Record]) -> list[str]:
    """Every replacement, delete and refusal of the step model is in the plan diff: the headline counts them, and each
    resource of the program's own (a chart's objects are counted by chart) is named in its section."""
    problems = []
    counts = {op: len(diff.of(*ops)) for op, ops in (("replace", ("replace",)), ("delete", ("delete", "forget")))}
    headline = text.splitlines()[0] if text else ""
    for op, count in counts.items():
        if count and f"{count} to {op}" not in headline:
            problems.append(f"headline {headline!r} does not count {count} to {op}")
    capacity = _section(text, "Capacity")
    for step in diff.of("replace"):
        if step.type == NODE_POOL and "**replaces running slice(s)**" in capacity and f"`{step.name}`" in capacity:
            continue
        if step.type == NODE_POOL and _group_stays(step, diff):
            problems.append(f"the capacity section does not say that running slice {step.name} is replaced")
    for title, ops in (("Replaced", ("replace",)), ("Removed", ("delete", "forget")), ("Refused", ("refuse",))):
        section = _section(text, title)
        for step in diff.of(*ops):
            if records.get(step.urn, {}).get("rendered") or " provider " in step.why:
                continue
            if f"`{step.name}`" not in section:
                problems.append(f"{step.op} of {step.name} ({step.type}) is not named under {title}")
    return problems


def _group_stays(step: Any, diff: Any) -> bool:
    """Whether the pool group of a node pool the change touches is in both plans (a group removed or added is its own
    line of the capacity section)."""
    base, head = diff.records("base"), diff.records("head")
    parent = str((head.get(step.urn) or base.get(step.urn) or {}).get("parent"))
    return parent in base and parent in head and head[parent]["type"] == SLICE_GROUP


def without_protect(records: Sequence[Record]) -> list[dict[str, Any]]:
    """The same plan in a stack that protects nothing: the program's protected stacks differ in `protect` alone."""
    return [{**r, "protect": False} for r in records]


def protected_refuses(protected: Any, unprotected: Any) -> list[str]:
    """A protected stack replaces and deletes nothing: it refuses exactly what the same stack unprotected would
    replace, delete or forget, besides what that stack refuses too."""
    problems = [f"{s.op}s {s.name} ({s.type}) in a protected stack" for s in protected.steps
                if s.op in ("replace", "delete", "forget")]  # fmt: skip
    refused = {s.urn for s in protected.of("refuse")}
    wanted = {s.urn for s in unprotected.steps if s.op in ("replace", "delete", "forget", "refuse")}
    problems += [
        f"refuses {urn.rsplit('::', 1)[-1]}, which unprotected it would not touch" for urn in sorted(refused - wanted)
    ]
    problems += [f"does not refuse {urn.rsplit('::', 1)[-1]}" for urn in sorted(wanted - refused)]
    return problems


# ---- what a change must do to the slices: from the provider's schema, never from the catalogue ----------------------

_TPG = "hashicorp/terraform-provider-google-beta 93c65b2d (pulumi-gcp's upstream) google-beta/services/"
FORCE_NEW = {
    "nodeConfig.spot": _TPG + "container/node_config.go L635-641 (spot: ForceNew)",
    "nodeConfig.reservationAffinity": _TPG + "container/node_config.go L602-633 (reservation_affinity and each of "
    "its fields: ForceNew)",
    "placementPolicy.policyName": _TPG + "container/resource_container_node_pool.go L394-398 (policy_name: ForceNew)",
    "workloadPolicy": _TPG + "compute/resource_compute_resource_policy.go L459-488 (workload_policy.type, "
    "accelerator_topology: ForceNew)",
}
"""The provider's ForceNew fields the drawn changes touch, each with where the schema says so. A new slice shape
changes `placementPolicy.tpuTopology`, which is not ForceNew (resource_container_node_pool.go L400-404) and which the
provider's update never sends (nodePoolUpdate has no placement_policy case): the stack must replace the node pool
all the same, or it keeps the old shape. A new provisioning mode (spot for on-demand) changes `nodeConfig.spot`; a
calendar-mode group's resize submits a new request under a new name, which its slices consume by name
(`nodeConfig.reservationAffinity.values`); a multi-host TPU7x group's new shape is a new workload policy
(`workloadPolicy.acceleratorTopology`) that its slices name (`placementPolicy.policyName`)."""

IN_PLACE = ("add-team", "share", "remove-team", "replicas", "place", "unplace", "drain")
"""Changes that touch no node pool and no workload policy: Kueue's and the servers' objects only."""


@dataclass(frozen=True)
class Promised:
    """What a change must do to the slices (node pools, by name) and to the workload policies (by pool group), in an
    unprotected stack; everything else of both kinds stays as it is or is updated in place."""

    created: frozenset[str] = frozenset()
    replaced: frozenset[str] = frozenset()
    deleted: frozenset[str] = frozenset()
    policies: Mapping[str, str] = dataclass_field(default_factory=dict)
    """Pool group -> "replace" or "delete" of its workload policy."""


def _has_policy(pool: Any) -> bool:
    """A multi-host TPU7x slice is placed by a workload policy (GKE's TPU7x docs; FORCE_NEW)."""
    return bool(pool.shape.version == "tpu7x" and pool.shape.multi_host)


def promised(change: Any) -> Promised:
    """What `change` (tests/properties/changes.py) must replace, delete and create, by the provider's schema
    (FORCE_NEW): written per kind of change from the edit of the stack file, not from the plans."""
    before = {p.name: p for p in change.before.pools}
    after = {p.name: p for p in change.after.pools}

    def slices(name: str, pools: Mapping[str, Any], span: range | None = None) -> set[str]:
        pool = pools[name]
        count = int(pool.entry.get("slices", 1))
        return slice_names(
            name, range(count) if span is None else span, legacy=bool(pool.entry.get("legacyFirstSliceName"))
        )

    kind, group = change.kind, change.group
    if kind in IN_PLACE:
        return Promised()
    if kind in ("grow", "shrink"):
        old, new = change.slices
        kept = range(min(old, new))
        created = slices(group, after, range(old, new)) if new > old else set()
        deleted = slices(group, before, range(new, old)) if old > new else set()
        # A calendar-mode group's new request has a new name; its kept slices consume it by name (ForceNew).
        replaced = slices(group, before, kept) if before[group].calendar else set()
        return Promised(frozenset(created), frozenset(replaced), frozenset(deleted))
    if kind == "add-group":
        return Promised(created=frozenset(slices(group, after)))
    if kind == "remove-group":
        policy = {group: "delete"} if _has_policy(before[group]) else {}
        return Promised(deleted=frozenset(slices(group, before)), policies=policy)
    if kind == "spot":  # nodeConfig.spot: every slice of the group
        return Promised(replaced=frozenset(slices(group, before)))
    if kind == "reshape":  # every rung of the group's ladder takes the new shape: each slice, and its policy
        reshaped = [name for name in before if before[name].shape.key != after[name].shape.key]
        replaced = {s for name in reshaped for s in slices(name, before)}
        policies = {name: "replace" for name in reshaped if _has_policy(before[name])}
        return Promised(replaced=frozenset(replaced), policies=policies)
    raise ValueError(f"no promise written for a change of kind {kind!r}")


def _group_of(step: Any, records: Mapping[str, Record]) -> str:
    parent = records.get(str((records.get(step.urn) or {}).get("parent")))
    return str((parent or {}).get("name", ""))


def steps_as_promised(
    promise: Promised, steps: Sequence[Any], records: Mapping[str, Record], *, protected: bool, where: str
) -> list[str]:
    """The steps (of the engine model, or of the plan diff, which lists only what changes) on node pools and workload
    policies are what `promise` says: its replacements and deletes (refused in a protected stack, which replaces and
    deletes nothing), its creates, and nothing else but in-place updates. `records`: both plans' resources by URN."""
    refused_or = {"replace": "refuse" if protected else "replace", "delete": "refuse" if protected else "delete"}
    wanted: dict[str, str] = {name: "create" for name in promise.created}
    wanted |= {name: refused_or["replace"] for name in promise.replaced}
    wanted |= {name: refused_or["delete"] for name in promise.deleted}
    done = {s.name: s.op for s in steps if s.type == NODE_POOL}
    problems = [
        f"{where}: {done.get(name, 'no step')} of node pool {name}, must {op}" for name, op in sorted(wanted.items())
        if done.get(name) != op
    ]  # fmt: skip
    problems += [
        f"{where}: {op} of node pool {name}, which the change must keep (at most updated in place)"
        for name, op in sorted(done.items())
        if name not in wanted and op not in ("same", "update")
    ]
    for step in (s for s in steps if s.type == POLICY):
        group = _group_of(step, records)
        must = refused_or.get(promise.policies.get(group, ""), "")
        if must and step.op != must:
            problems.append(f"{where}: {step.op} of the workload policy of {group}, must {must}")
        if not must and step.op not in ("same", "update"):
            problems.append(f"{where}: {step.op} of the workload policy of {group}, which the change must keep")
    policies = {_group_of(s, records) for s in steps if s.type == POLICY}
    problems += [
        f"{where}: no step for the workload policy of {group}, must {promise.policies[group]}"
        for group in sorted(set(promise.policies) - policies)
    ]
    return problems


def promise_said(promise: Promised, text: str, *, protected: bool, groups_kept: Collection[str]) -> list[str]:
    """The plan diff says in words what `promise` does to running slices: each replaced slice under **Replaced**
    (a group that stays also in its capacity row), each deleted one under **Removed**; under **Refused** in a
    protected stack."""
    problems = []
    capacity = _section(text, "Capacity")
    for names, title in ((promise.replaced, "Replaced"), (promise.deleted, "Removed")):
        section = _section(text, "Refused" if protected else title)
        problems += [
            f"the plan diff does not name slice {name} under {'Refused' if protected else title}"
            for name in sorted(names)
            if f"`{name}`" not in section
        ]
    if not protected:
        for name in sorted(promise.replaced):
            group = name.rsplit("-", 1)[0] if name.rsplit("-", 1)[-1].isdigit() else name
            if group in groups_kept and not ("**replaces running slice(s)**" in capacity and f"`{name}`" in capacity):
                problems.append(f"the capacity section does not say that running slice {name} is replaced")
    return problems
