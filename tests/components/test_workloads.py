"""Generated workloads fit their stack: valid objects that select nodes a pool group really has, ask each VM
for the chips it really holds, and go to a queue that can reach that many chips.

The match is checked against the node pools the stack declares (plan inputs, through the TPU catalog), not
against the config the generator read, so a generator and a node pool that drifted apart fail here.
Seeds: flex-start single-host Job; multi-host slices as JobSets (exclusive node pool per slice, parallelism =
completions = VMs per slice, backoffLimit 0), which carry their headless Service to the cluster that runs them (the
tutorials' Indexed Job with a Service of its own stayed on a MultiKueue manager); queued provisioning with the queue
label and the run limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from components import tpu_catalog
from components.config.pools import TpuPoolConfig
from components.config.queues import queue_refs
from components.config.stack import load
from components.workloads import Workload, ladders, slice_jobset, workloads
from offline import __main__ as cli
from offline import validate, webhooks
from offline.charts import type_token
from offline.engine import Plan
from tests.components.test_kueue_queues import MULTISLICE, REGION, SCENARIOS
from tests.conftest import BASE
from tests.effects.controllers import crash, deleted, disruption, job_run, jobset_run
from tests.fixtures import stack_config, stack_path, stack_plan

NODE_POOL = "gcp:container/nodePool:NodePool"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
STACKS = ("dev", "prod")
TPU = tpu_catalog.TPU_RESOURCE


def stack_workloads(stack: str) -> list[Workload]:
    return workloads(stack_config(stack))


def scenario_workloads(name: str) -> list[Workload]:
    return workloads(load({**BASE, **REGION, **SCENARIOS[name]}, stack="dev"))


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    return {stack: stack_plan(stack) for stack in STACKS}


def pod_sets(obj: dict[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    """(slices, pods per slice, pod spec) of a Job or JobSet."""
    if obj["kind"] == "Job":
        return [(1, obj["spec"].get("parallelism", 1), obj["spec"]["template"]["spec"])]
    return [
        (job["replicas"], job["template"]["spec"]["parallelism"], job["template"]["spec"]["template"]["spec"])
        for job in obj["spec"]["replicatedJobs"]
    ]


def node_groups(plan: Plan) -> dict[str, dict[str, Any]]:
    """Pool group -> what its nodes offer, read from the NodePool inputs the stack declares."""
    groups: dict[str, dict[str, Any]] = {}
    for pool in plan.by_type(NODE_POOL):
        inputs = pool["inputs"]
        node_config = inputs["nodeConfig"]
        machine = tpu_catalog.machine_type(node_config["machineType"])
        if machine is None:
            continue  # the CPU system pool
        scaling = inputs.get("autoscaling") or {}
        labels = {
            tpu_catalog.ACCELERATOR_LABEL: machine.version.accelerator,
            tpu_catalog.TOPOLOGY_LABEL: (inputs.get("placementPolicy") or {}).get("tpuTopology")
            or machine.single_host_topology,
            **(node_config.get("labels") or {}),
        }
        if node_config.get("flexStart"):
            labels[tpu_catalog.FLEX_START_LABEL] = "true"
        if node_config.get("spot"):
            labels[tpu_catalog.SPOT_LABEL] = "true"
        group = groups.setdefault(
            pool["parent"],
            {
                "labels": labels,
                "chips_per_vm": machine.chips_per_vm,
                "vms": inputs.get("nodeCount") or scaling.get("maxNodeCount") or scaling.get("totalMaxNodeCount"),
                "queued": bool((inputs.get("queuedProvisioning") or {}).get("enabled")),
                "max_run": node_config.get("maxRunDuration"),
                "slices": 0,
            },
        )
        group["slices"] += 1
    return groups


def kueue_objects(plan: Plan, kind: str) -> list[dict[str, Any]]:
    return [r["inputs"] for r in plan.by_type(f"kubernetes:kueue.x-k8s.io/v1beta2:{kind}")]


def admissible(flavors: dict[str, dict[str, str]], selector: dict[str, str]) -> list[str]:
    """Flavors Kueue may admit a pod with `selector` on: it keeps only the selector's keys the flavor has and
    matches those (kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go, flavorSelector)."""
    return [name for name, labels in flavors.items() if all(labels[k] == v for k, v in selector.items() if k in labels)]


@pytest.mark.parametrize("stack", STACKS)
def test_every_workload_runs_on_a_pool_of_its_stack(plans: dict[str, Plan], stack: str) -> None:
    """A workload of a pool group selects that group's nodes only; a workload of a ladder selects only the shape
    (accelerator and topology), carries none of a rung's tolerations (Kueue adds them) and fits every rung."""
    plan = plans[stack]
    groups = node_groups(plan)
    ladders = stack_config(stack).queues.ladders
    found = stack_workloads(stack)
    assert found
    for workload in found:
        for obj in (o for o in workload.objects if o["kind"] in ("Job", "JobSet")):
            for slices, pods, pod in pod_sets(obj):
                selector = pod["nodeSelector"]
                matching = [g for g in groups.values() if selector.items() <= g["labels"].items()]
                if workload.pool in ladders:
                    assert set(selector) == {tpu_catalog.ACCELERATOR_LABEL, tpu_catalog.TOPOLOGY_LABEL}, workload.name
                    assert len(matching) == len(ladders[workload.pool]), workload.name
                    assert "tolerations" not in pod, workload.name
                else:
                    assert len(matching) == 1, workload.name
                    tolerated = {t["key"] for t in pod.get("tolerations", [])}
                    assert (tpu_catalog.QUEUED_TAINT in tolerated) == matching[0]["queued"], workload.name
                resources = pod["containers"][0]["resources"]
                # Never BestEffort: the node's CPU and memory are requested; the memory limit leaves the sidecar
                # its 256Mi and lends the pod the DaemonSets' 2048Mi of room.
                assert set(resources["requests"]) == {TPU, "cpu", "memory"}, workload.name
                request, limit = (int(resources[k]["memory"].removesuffix("Mi")) for k in ("requests", "limits"))
                assert limit - request == 2048, workload.name
                for group in matching:
                    chips = group["chips_per_vm"]
                    assert resources["limits"][TPU] == resources["requests"][TPU] == chips, workload.name
                    assert pods == group["vms"], f"{workload.name}: one pod per VM of a slice"
                    assert slices <= group["slices"], f"{workload.name}: more slices than the group has"
                    if group["queued"] and group["max_run"]:
                        annotation = obj["metadata"]["annotations"]["provreq.kueue.x-k8s.io/maxRunDurationSeconds"]
                        assert f"{annotation}s" == group["max_run"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_workload_goes_to_a_queue_that_reaches_its_chips(plans: dict[str, Plan], stack: str) -> None:
    """On every flavor Kueue may admit it on (every rung of a ladder), the workload's queue can hold its chips."""
    plan = plans[stack]
    local_queues = {(q["metadata"]["namespace"], q["metadata"]["name"]): q["spec"]["clusterQueue"]
                    for q in kueue_objects(plan, "LocalQueue")}  # fmt: skip
    cluster_queues = {q["metadata"]["name"]: q["spec"] for q in kueue_objects(plan, "ClusterQueue")}
    flavors = {f["metadata"]["name"]: f["spec"]["nodeLabels"] for f in kueue_objects(plan, "ResourceFlavor")}
    priorities = {
        r["inputs"]["metadata"]["name"] for r in plan.by_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    }
    total = {name: pool["chips"] for name, pool in plan.outputs["tpuPools"].items()}
    ladders = stack_config(stack).queues.ladders
    for workload in stack_workloads(stack):
        for obj in (o for o in workload.objects if o["kind"] in ("Job", "JobSet")):
            metadata = obj["metadata"]
            spec = cluster_queues[local_queues[(metadata["namespace"], metadata["labels"][QUEUE_LABEL])]]
            sets = pod_sets(obj)
            chips = sum(s * p * pod["containers"][0]["resources"]["requests"]["google.com/tpu"] for s, p, pod in sets)
            reachable = admissible(flavors, sets[0][2]["nodeSelector"])
            assert sorted(reachable) == sorted(ladders.get(workload.pool, [workload.pool])), workload.name
            for flavor in reachable:
                (resource,) = [
                    r
                    for f in spec["resourceGroups"][0]["flavors"]
                    if f["name"] == flavor
                    for r in f["resources"]
                    if r["name"] == "google.com/tpu"
                ]
                reach = resource["nominalQuota"] + resource.get("borrowingLimit", total[flavor])
                assert chips <= min(reach, total[flavor]), f"{workload.name} on {flavor}"
            assert all(pod["priorityClassName"] in priorities for _, _, pod in sets)


@pytest.mark.parametrize("name", [*STACKS, *SCENARIOS])
def test_workloads_are_valid_objects(name: str) -> None:
    found = stack_workloads(name) if name in STACKS else scenario_workloads(name)
    objects = [o for w in found for o in w.objects]
    assert objects
    assert validate.validate_all(objects) == []


def by_name(found: list[Workload]) -> dict[str, Workload]:
    return {w.name: w for w in found}


DISRUPTION_RULE = {
    "name": "DisruptionTarget",
    "action": "RestartJobSetAndIgnoreMaxRestarts",
    "onJobFailureReasons": ["PodFailurePolicy"],
}
FAIL_ON_DISRUPTION = {
    "rules": [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
}


def test_multislice_seed_gets_the_1_2_3_slice_jobsets() -> None:
    """Three multi-host v5e 2x4 slices: one slice is a one-replica JobSet too (its Service comes with it)."""
    found = by_name(scenario_workloads("multislice-seed"))
    assert set(found) == {"multislice-1slice", "multislice-2slice", "multislice-3slice"}
    (jobset,) = found["multislice-3slice"].objects
    assert jobset["metadata"]["labels"] == {QUEUE_LABEL: "multislice-queue"}
    assert jobset["metadata"]["namespace"] == "default"
    annotations = jobset["metadata"]["annotations"]
    assert annotations["alpha.jobset.sigs.k8s.io/exclusive-topology"] == "cloud.google.com/gke-nodepool"
    spec = jobset["spec"]
    assert spec["failurePolicy"] == {"maxRestarts": 4, "rules": [DISRUPTION_RULE]}
    assert spec["ttlSecondsAfterFinished"] == 3600
    (job,) = spec["replicatedJobs"]
    assert job["replicas"] == 3
    job_spec = job["template"]["spec"]
    assert (job_spec["parallelism"], job_spec["completions"], job_spec["backoffLimit"]) == (2, 2, 0)
    assert job_spec["podFailurePolicy"] == FAIL_ON_DISRUPTION
    pod = job_spec["template"]["spec"]
    # GKE >= 1.28 needs neither for TPUs (the seed's second variant); off the host network Workload Identity works.
    assert "hostNetwork" not in pod and "dnsPolicy" not in pod
    assert pod["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "privileged": False,
    }
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["automountServiceAccountToken"] is False
    assert pod["priorityClassName"] == "very-low"
    assert "@sha256:" in pod["containers"][0]["image"]


def test_multislice_jobsets_stop_at_the_slices_of_the_group() -> None:
    config = load({**BASE, **REGION, "tpu-stack:tpuPools": [{**MULTISLICE, "slices": 2}]}, stack="dev")
    assert {w.name: w.slices for w in workloads(config)} == {"multislice-1slice": 1, "multislice-2slice": 2}


def test_no_workload_for_chips_no_team_can_reach() -> None:
    teams = [{"name": "a", "shares": {"multislice": 8}, "borrowingLimit": {"multislice": 0}},
             {"name": "b", "shares": {"multislice": 8}, "borrowingLimit": {"multislice": 4}}]  # fmt: skip
    config = load(
        {**BASE, **REGION, "tpu-stack:tpuPools": [MULTISLICE], "tpu-stack:queues": {"teams": teams}}, stack="dev"
    )
    found = by_name(workloads(config))
    assert set(found) == {"multislice-1slice"}
    assert found["multislice-1slice"].queue.local_queue == "a-queue"


def test_flex_start_seed_single_host_job_and_multi_host_jobset() -> None:
    """The tutorial's multi-host flex-start workload is an Indexed Job and a headless Service of its own (ports 8471,
    8431); here it is a one-slice JobSet, whose controller makes the Service where the pods run."""
    found = by_name(scenario_workloads("flex-start-seed"))
    (single,) = found["flex-single-job"].objects
    assert single["spec"]["suspend"] is True
    assert single["spec"]["template"]["spec"]["nodeSelector"] == {
        "cloud.google.com/gke-flex-start": "true",
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "2x2",
    }
    assert "ports" not in single["spec"]["template"]["spec"]["containers"][0]
    (jobset,) = found["flex-multi-1slice"].objects
    (job,) = jobset["spec"]["replicatedJobs"]
    spec = job["template"]["spec"]
    assert (job["replicas"], spec["parallelism"], spec["completions"], spec["backoffLimit"]) == (1, 4, 4, 0)
    assert "network" not in jobset["spec"]  # enableDNSHostnames defaults to true: JobSet creates the Service
    pod = spec["template"]["spec"]
    assert [p["containerPort"] for p in pod["containers"][0]["ports"]] == [8471, 8080]
    assert "hostNetwork" not in pod and "subdomain" not in pod


def test_a_multi_host_slice_stays_on_one_node_pool() -> None:
    """The 3 slices of the multislice seed share accelerator and topology labels; JobSet's exclusive topology on
    cloud.google.com/gke-nodepool puts each child Job's pods on a node pool (= slice) of their own (jobset v0.12.0
    pkg/webhooks/pod_webhook.go setExclusiveAffinities: affinity to the Job's own key, anti-affinity to others')."""
    found = by_name(scenario_workloads("multislice-seed"))
    (jobset,) = found["multislice-1slice"].objects
    assert jobset["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"] == (
        "cloud.google.com/gke-nodepool"
    )


def test_queued_workload_tolerates_the_queued_taint_and_carries_the_run_limit() -> None:
    found = by_name(scenario_workloads("dws-seed"))
    assert set(found) == {"dws-queued"}, "a queued group gets one slice per workload"
    (jobset,) = found["dws-queued"].objects
    assert jobset["kind"] == "JobSet" and jobset["spec"]["replicatedJobs"][0]["replicas"] == 1
    assert jobset["metadata"]["labels"] == {QUEUE_LABEL: "multislice-queue"}
    assert jobset["metadata"]["annotations"]["provreq.kueue.x-k8s.io/maxRunDurationSeconds"] == "604800"  # 7 x 86400
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert {"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]


def test_autopilot_workloads_are_neither_privileged_nor_on_the_host_network() -> None:
    found = scenario_workloads("autopilot")
    assert found
    for workload in found:
        for obj in workload.objects:
            for _, _, pod in pod_sets(obj) if obj["kind"] != "Service" else []:
                assert "hostNetwork" not in pod
                assert pod["containers"][0]["securityContext"]["privileged"] is False


def test_cli_writes_one_file_per_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["workloads", "--stack", "dev", "--config", str(stack_path("dev")), "--out", str(tmp_path)]) == 0
    written = {p.stem: list(yaml.safe_load_all(p.read_text())) for p in (tmp_path / "workloads").glob("*.yaml")}
    assert written == {w.name: list(w.objects) for w in stack_workloads("dev")}
    assert "research/research-queue" in capsys.readouterr().out


def test_cli_workloads_with_bad_config_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(
        yaml.safe_dump({"config": {**BASE, **REGION, "tpu-stack:tpuPools": [{**MULTISLICE, "topology": "4x5"}]}})
    )
    assert cli.main(["workloads", "--stack", "bad", "--config", str(path), "--out", str(tmp_path)]) == 2
    assert "tpu-stack:tpuPools[0].topology" in capsys.readouterr().err
    assert not (tmp_path / "workloads").exists()


def test_tpu_jobs_run_as_the_namespaces_bucket_account_and_document_their_exceptions() -> None:
    """dev: the training team's trainer KSA holds objectUser on the bucket; research has no bucket account."""
    found = by_name(stack_workloads("dev"))
    for workload in found.values():
        for obj in workload.objects:
            if obj["kind"] == "Service":
                continue
            for _, _, pod in pod_sets(obj):
                expected = "trainer" if obj["metadata"]["namespace"] == "training" else None
                assert pod.get("serviceAccountName") == expected, workload.name
            skips = {
                v.split("=")[0] for k, v in obj["metadata"]["annotations"].items() if k.startswith("checkov.io/skip")
            }
            # root and a writable image filesystem (TPU runtime), no CPU limit (requests are set)
            assert skips == {"CKV_K8S_11", "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_40"}, workload.name
    config = stack_config("dev")
    pool = config.pool("multislice")
    assert pool is not None
    jobset = slice_jobset(config, pool, 1, "ckpt", queue_refs(config.queues)["training"])
    (job,) = jobset["spec"]["replicatedJobs"]
    assert job["template"]["spec"]["template"]["spec"]["serviceAccountName"] == "trainer"


def container_resources(workload: Workload) -> dict[str, Any]:
    (job,) = [o for o in workload.objects if o["kind"] in ("Job", "JobSet")]
    ((_, _, pod),) = pod_sets(job)
    resources: dict[str, Any] = pod["containers"][0]["resources"]
    return resources


def test_dev_tpu_pods_request_what_their_node_can_give() -> None:
    """Written out by hand. A node's allocatable is its VM less GKE's reservations (CPU: 6% of the first core, 1% of
    the second, 0.5% of the next two, 0.25% of the rest; memory: 25% of the first 4 GiB, 20% of the next 4, 10% of
    the next 8, 6% of the next 112, 2% above, and the 100 MiB eviction threshold); the pod leaves 1000m/2048Mi for
    GKE's DaemonSets and 250m/256Mi for the FUSE sidecar.
    multislice, ct5lp-hightpu-4t (112 vCPU, 192 GiB = 196608 MiB): 60+10+10+108*2.5 = 350m reserved, 111650m
    allocatable, 110400m requested; memory capacity 196608 * 0.98 = 192675 MiB (the kernel's share),
    1024+819.2+819.2+6881.28+61603*2% = 10775.74 -> 10776 MiB reserved, 181799 MiB allocatable, 179495Mi requested,
    181543Mi limit (allocatable less the sidecar).
    flex-v6e, ct6e-standard-4t (180 vCPU, 720 GiB = 737280 MiB): 60+10+10+176*2.5 = 520m reserved, 179480m
    allocatable, 178230m requested; capacity 722534 MiB, 9543.68+591462*2% = 21372.92 -> 21373 MiB reserved, 701061
    MiB allocatable, 698757Mi requested, 700805Mi limit."""
    found = by_name(stack_workloads("dev"))
    v5e = ({TPU: 4, "cpu": "110400m", "memory": "179495Mi"}, "181543Mi")
    assert tpu_container(v5e_pool()) == v5e
    v6e = ({TPU: 4, "cpu": "178230m", "memory": "698757Mi"}, "700805Mi")
    # dev writes the ladder's one-slice JobSet (its spot rung has one slice); a 2-slice one as `tpu-stack submit` makes.
    config = stack_config("dev")
    two = slice_jobset(config, ladders(config)["multislice"], 2, "two", queue_refs(config.queues)["research"])
    jobset = Workload("two", "multislice", 2, queue_refs(config.queues)["research"], (two,))
    for name, workload, (requests, limit) in (
        # dev's multislice group is Trillium since its zone table fix (v5e has no flex-start in us-east5).
        ("multislice-1slice", found["multislice-1slice"], v6e),
        ("a 2-slice JobSet", jobset, v6e),
        ("flex-v6e-job", found["flex-v6e-job"], v6e),
    ):
        resources = container_resources(workload)
        assert resources["requests"] == requests, name
        assert resources["limits"] == {TPU: 4, "memory": limit}, name


def v5e_pool() -> TpuPoolConfig:
    return TpuPoolConfig(name="v5e", machine_type="ct5lp-hightpu-4t", topology="2x4", zone="us-central1-a")


def tpu_container(pool: TpuPoolConfig) -> tuple[dict[str, Any], str]:
    return ({TPU: 4, **pool.tpu_container_requests}, pool.tpu_container_limits["memory"])


def test_queues_host_resources_are_what_the_pods_request() -> None:
    """queues.hostResources sets what Kueue accounts per VM; the pods request exactly that, so quota and pods agree."""
    for workload in scenario_workloads("teams"):
        assert container_resources(workload)["requests"] == {TPU: 4, "cpu": "100", "memory": "170Gi"}, workload.name


def test_autopilot_tpu_pods_leave_cpu_and_memory_to_autopilot() -> None:
    """Autopilot sizes TPU pods itself and refuses requests above its per-TPU maximum."""
    found = scenario_workloads("autopilot")
    assert found
    for workload in found:
        assert set(container_resources(workload)["requests"]) == {TPU}, workload.name
        (job,) = [o for o in workload.objects if o["kind"] in ("Job", "JobSet")]
        skips = {v.split("=")[0] for k, v in job["metadata"]["annotations"].items() if k.startswith("checkov")}
        assert {"CKV_K8S_10", "CKV_K8S_12", "CKV_K8S_13"} <= skips, workload.name


def test_a_ladders_workload_asks_for_the_shape_and_fits_every_rung() -> None:
    """tests/components/test_kueue_queues.py LADDER: v5e 2x4 rungs reserved (2 slices), dws (queued, 1 slice), spot
    (2 slices); flex-single is a v6e pool group in no ladder. A workload of the ladder may take one slice (the
    queued rung takes one per workload): the one-slice JobSet; it goes to research, whose share of the first rung (8)
    holds it and who can reach 8 chips on dws (its share) and spot (borrowing limit 8)."""
    found = by_name(scenario_workloads("ladder"))
    assert set(found) == {"v5e-2x4-1slice", "flex-single-job"}
    workload = found["v5e-2x4-1slice"]
    assert (workload.pool, workload.slices, workload.queue.namespace) == ("v5e-2x4", 1, "research")
    (jobset,) = workload.objects
    (job,) = jobset["spec"]["replicatedJobs"]
    pod = job["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
    }
    assert "tolerations" not in pod  # Kueue adds the admitting rung's (queued taint, spot taint)
    assert (job["template"]["spec"]["parallelism"], pod["containers"][0]["resources"]["requests"][TPU]) == (2, 4)
    # Admitted on the queued rung, the run limit reaches its ProvisioningRequest (dws: maxRunDuration 7d).
    assert jobset["metadata"]["annotations"]["provreq.kueue.x-k8s.io/maxRunDurationSeconds"] == "604800"
    # A preempted spot VM's pods (or a slice under maintenance) restart the JobSet without using up its restarts.
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 4, "rules": [DISRUPTION_RULE]}
    assert job["template"]["spec"]["podFailurePolicy"] == FAIL_ON_DISRUPTION
    # A single-host Job: a disrupted pod starts again without counting (Ignore); a pod deleted without a disruption
    # condition (SIGTERM, 143) starts again counted against backoffLimit 4 x 1 worker; any other container failure
    # fails it at once.
    (single,) = found["flex-single-job"].objects
    assert single["spec"]["podFailurePolicy"] == {
        "rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "Count", "onExitCodes": {"operator": "In", "values": [143]}},
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0]}},
        ]
    }
    assert single["spec"]["backoffLimit"] == 4


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_disruption_restarts_a_workload_on_any_capacity_without_using_up_its_restarts(stack: str) -> None:
    """Upgrades, repairs and maintenance stop pods on every kind of capacity, not only spot preemptions: each
    restarts a JobSet without counting (RestartJobSetAndIgnoreMaxRestarts on the child Job's PodFailurePolicy
    reason) and starts a Job's pod again without counting (Ignore: kubernetes pkg/controller/job/pod_failure_policy.go
    matchPodFailurePolicy returns countFailed false); a crash uses up a JobSet's 4 restarts and fails a Job at once
    (tests/effects/controllers.py models jobset v0.12.0 failure_policy.go and the Job's pod failure policy). A Job's
    pod deleted without a disruption condition (GKE's forced deletion after a drain times out) exits 143 and is
    started again within 4 per worker. Before, a Job's fifth spot preemption failed it, and its first forced deletion
    too (143 matched FailJob)."""
    for workload in stack_workloads(stack):
        (obj,) = workload.objects
        if obj["kind"] == "JobSet":
            assert validate.validate_all([obj]) == []  # the vendored JobSet CRD: rules need a name
            assert jobset_run(obj["spec"], [disruption()] * 20).failed is None, workload.name
            assert jobset_run(obj["spec"], [crash()] * 4).failed is None, workload.name
            assert jobset_run(obj["spec"], [crash()] * 5).failed == "ReachedMaxRestarts", workload.name
        else:
            assert job_run(obj["spec"], [disruption()] * 20) is None, workload.name
            assert job_run(obj["spec"], [deleted()] * 4) is None, workload.name
            assert job_run(obj["spec"], [disruption(), deleted()] * 4) is None, workload.name
            assert job_run(obj["spec"], [deleted()] * 5) == "BackoffLimitExceeded", workload.name
            assert job_run(obj["spec"], [crash(137)]) == "PodFailurePolicy", workload.name
            assert job_run(obj["spec"], [crash(1)]) == "PodFailurePolicy", workload.name


def test_jobsets_of_a_ladder_stop_at_what_every_rung_holds() -> None:
    """dev: the multislice ladder's spot rung has one slice (its flex-start rung three), so a workload written for
    the ladder takes one slice: the one-slice JobSet (with three spot slices dev had the 1-, 2- and 3-slice
    JobSets). With the spot rung at 2 slices, the 1- and 2-slice JobSets; the 3-slice one would fit only the
    flex-start rung and is not written."""
    assert {w.name: w.slices for w in stack_workloads("dev") if w.pool == "multislice"} == {"multislice-1slice": 1}
    config = stack_config("dev")
    spot = config.pool("multislice-spot")
    assert spot is not None
    more = config.model_copy(
        update={"tpu_pools": tuple(p.model_copy(update={"slices": 2}) if p is spot else p for p in config.tpu_pools)}
    )
    assert {w.name: w.slices for w in workloads(more) if w.pool == "multislice"} == {
        "multislice-1slice": 1, "multislice-2slice": 2}  # fmt: skip


# ---- what a job needs, on the cluster where it runs --------------------------------------------------------------


def test_multislice_only_where_gke_runs_it_on_multi_host_slices() -> None:
    """GKE's Multislice joins multi-host slices over the data-center network; single-host slices are not supported
    (cloud.google.com/kubernetes-engine/docs/how-to/tpu-multislice, facts.md section 11). A JobSet over three
    single-host slices was three independent pods, each its own one-VM job: only the one-slice Job is written."""
    pool = {"name": "flex", "machineType": "ct6e-standard-4t", "provisioning": "flex-start",
            "zone": "us-east5-b", "slices": 3}  # fmt: skip
    config = load({**BASE, "gcp:region": "us-east5", "tpu-stack:tpuPools": [pool]}, stack="dev")
    assert {w.name: [o["kind"] for o in w.objects] for w in workloads(config)} == {"flex-job": ["Job"]}


@pytest.mark.parametrize("stack", ["dev", "prod", "multiregion"])
def test_every_workload_is_one_object_that_carries_all_it_needs(stack: str) -> None:
    """Under MultiKueue the manager copies only the job object to the worker that admits it (kueue v0.19.2
    pkg/controller/jobs/job/job_multikueue_adapter.go SyncJob builds the remote Job from the local Job alone; the
    JobSet adapter does the same for a JobSet), so a Service beside a Job stayed on the manager and the pods'
    hostnames never resolved on the worker. A multi-host slice runs as a JobSet, whose controller on the cluster
    that runs it creates the headless Service (jobset v0.12.0 pkg/controllers/jobset_controller.go
    createHeadlessSvcIfNecessary, enableDNSHostnames defaulted to true by pkg/webhooks/jobset_webhook.go); a
    single-host slice needs no Service and is a Job. One form for a manager and a single cluster alike."""
    config = stack_config(stack).manager_queues
    found = workloads(config)
    assert found
    for workload in found:
        (obj,) = workload.objects
        pools = [p for p in config.queue_pools if p.name == workload.pool or config.ladder_of(p) == workload.pool]
        multi_host = pools[0].multi_host
        assert obj["kind"] == ("JobSet" if multi_host else "Job"), workload.name
        if multi_host:
            network = obj["spec"].get("network", {})
            assert network.get("enableDNSHostnames", True) is True, workload.name


@pytest.mark.parametrize("stack", ["dev", "prod", "multiregion"])
def test_the_webhooks_a_generated_workload_meets_are_served_where_it_is_submitted(stack: str) -> None:
    """A workload is created after `up`, in the cluster users submit to (a MultiKueue manager's): every fail-closed
    webhook that intercepts it (offline/webhooks.py, the catalogue's rule) must call a Service a chart of that
    cluster renders, which `up` waited for. Expected by hand from the vendored charts: Kueue's Job or JobSet
    webhooks (mutating and validating), and for a JobSet also JobSet's own two."""
    records = stack_plan(stack).resources
    (kueue_chart,) = [r for r in records if r["name"] == "kueue-chart"]
    services = {
        (r["inputs"]["metadata"]["namespace"], r["inputs"]["metadata"]["name"])
        for r in records
        if r["type"] == "kubernetes:core/v1:Service" and r.get("parent") and r.get("rendered")
    }
    expected = {
        "Job": {"mjob.kb.io", "vjob.kb.io"},
        "JobSet": {"mjobset.kb.io", "vjobset.kb.io", "mutate-jobset-x-k8s-io-v1alpha2-jobset.x-k8s.io",
                   "validate-jobset-x-k8s-io-v1alpha2-jobset.x-k8s.io"},
    }  # fmt: skip
    for workload in workloads(stack_config(stack).manager_queues):
        (obj,) = workload.objects
        record = {"urn": f"workload::{workload.name}", "type": type_token(obj["apiVersion"], obj["kind"]),
                  "name": workload.name, "provider": kueue_chart["provider"], "inputs": obj}  # fmt: skip
        with_it = [*records, record]
        view = webhooks.Plan.of(with_it)
        met = [hook for hook in webhooks.fail_closed(with_it) if webhooks.intercepts(hook, record, view)]
        assert {hook.name.split(" ")[-1] for hook in met} == expected[obj["kind"]], workload.name
        assert all(hook.service in services for hook in met), workload.name
