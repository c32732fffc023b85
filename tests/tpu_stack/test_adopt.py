"""`tpu-stack adopt` on saved outputs of clusters xpk 1.16.0 and Cluster Toolkit made (tests/fixtures/adopt/, built by
make_fixtures.py from the tools' commands and manifests): the stack written, the first update's report, refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.config import ConfigError, load
from offline.imports import read_existing, to_v1beta2
from tests.fixtures.adopt import ADOPT_DIR, Adopted, adopted
from tpu_stack import adopt
from tpu_stack.adopt_errors import AdoptError


@pytest.fixture(scope="module")
def xpk() -> Adopted:
    return adopted("xpk-multislice")


def test_v1beta1_cluster_queue_is_converted_as_kueue_does() -> None:
    # kueue v0.19.2 apis/kueue/v1beta1/clusterqueue_conversion.go
    old = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"cohort": "all", "admissionChecks": ["dws"], "flavorFungibility": {"whenCanBorrow": "Borrow"}},
    }
    assert to_v1beta2(old)["spec"] == {
        "cohortName": "all",
        "admissionChecksStrategy": {"admissionChecks": [{"name": "dws"}]},
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch"},
    }
    assert to_v1beta2(old)["apiVersion"] == "kueue.x-k8s.io/v1beta2"


def test_objects_saved_as_v1beta1_give_the_same_stack_as_served_v1beta2(tmp_path: Path) -> None:
    # `kubectl get clusterqueues.v1beta1.kueue.x-k8s.io` (or an older Kueue) prints the deprecated form; xpk's objects
    # have no field v1beta2 renames, so only their apiVersion differs from the served v1beta2 form.
    folder = tmp_path / "saved"
    folder.mkdir()
    for path in (ADOPT_DIR / "xpk-multislice").glob("*.json"):
        data = json.loads(path.read_text())
        for item in data.get("items", []) if isinstance(data, dict) else []:
            if item["apiVersion"] == "kueue.x-k8s.io/v1beta2":
                item["apiVersion"] = "kueue.x-k8s.io/v1beta1"
        (folder / path.name).write_text(json.dumps(data))
    as_v1beta1 = adopt.interpret(read_existing(folder), stack="xpk-multislice").config
    served = adopt.interpret(read_existing(ADOPT_DIR / "xpk-multislice"), stack="xpk-multislice").config
    assert as_v1beta1 == served


def test_xpk_slices_become_one_pool_group_with_its_names(xpk: Adopted) -> None:
    adoption = xpk.adoption
    [pool] = adoption.config["tpu-stack:tpuPools"]
    assert pool["name"] == "xpk-ms-np" and pool["slices"] == 4 and pool["accelerator"] == "v5litepod-16"
    assert pool["provisioning"] == "reservation" and pool["reservation"] == "tpu-res"
    assert pool["adopted"]["flavor"] == "4xv5litepod-16"
    assert pool["adopted"]["serviceAccount"] == "default"
    queues = adoption.config["tpu-stack:queues"]
    assert (queues["clusterQueue"], queues["localQueue"], queues["namespace"]) == (
        "cluster-queue",
        "multislice-queue",
        "default",
    )
    assert queues["preemption"]["reclaimWithinCohort"] == "Never"
    assert [p["name"] for p in queues["priorityClasses"]] == ["very-low", "low", "medium", "high", "very-high"]
    config = load(adoption.config, stack="xpk-multislice")  # the written config is valid
    assert config.tpu_pools[0].node_pool_names == [f"xpk-ms-np-{i}" for i in range(4)]
    assert config.cluster.adopted is not None and config.cluster.adopted.default_pool


def test_the_stack_file_lists_the_imports_the_first_up_makes(xpk: Adopted) -> None:
    # The stack file written is what the preview ran: its imports are the program's resources that exist.
    written = load(read_stack_config(xpk.stack_file), stack="xpk-multislice")
    assert written.cluster.adopted is not None
    by_name = {entry.urn.rsplit("::", 1)[-1]: entry for entry in written.cluster.adopted.imports}
    # By the engine's URN (pulumi/pulumi sdk/go/common/resource/urn/urn.go New): the pool is TpuSlicePools' child.
    assert by_name["xpk-ms-np-0"].model_dump() == {
        "urn": "urn:pulumi:xpk-multislice::tpu-stack::tpu-stack:index:TpuSlicePools$gcp:container/nodePool:NodePool"
        "::xpk-ms-np-0",
        "id": "projects/tpu-proj/locations/us-east5/clusters/xpk-ms/nodePools/xpk-ms-np-0",
    }
    # kueue-system and jobset-system exist (the release manifests xpk applies make them): created again, the
    # provider would fail the first `up` on AlreadyExists (pulumi-kubernetes 4.29+, await.go Creation).
    assert by_name["kueue-namespace"].id == "kueue-system" and by_name["jobset-namespace"].id == "jobset-system"
    assert "xpk-ms-system" not in by_name  # the stack's own system pool is new


def read_stack_config(path: Path) -> dict[str, str]:
    from offline.engine import _engine_config, read_stack_file

    return _engine_config(read_stack_file(path))


def test_the_report_lists_imports_changes_takeovers_and_the_first_up(xpk: Adopted) -> None:
    report = xpk.report
    assert "15 imported (15 then updated in place, 0 unchanged), 0 replaced" in report
    assert "  = gcp:container/cluster:Cluster xpk-ms (projects/tpu-proj/locations/us-east5/clusters/xpk-ms)" in report
    assert "      ~ workloadIdentityConfig.workloadPool: null -> tpu-proj.svc.id.goog" in report
    # The charts over xpk's Kueue v0.17.1 and JobSet v0.10.1 (kubectl apply --server-side of the release manifests).
    apiservices = "v1beta1.visibility.kueue.x-k8s.io, v1beta2.visibility.kueue.x-k8s.io"
    assert f"  ~ APIService {apiservices}; managed by kubectl (Apply)" in report
    assert (
        "  - Deployment kueue-system/kueue-controller-manager: spec.selector "
        '{"matchLabels": {"control-plane": "controller-manager"}} -> {"matchLabels": {"app.kubernetes.io/instance": '
        '"kueue", "app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}}: '
        "kubectl delete deployment -n kueue-system kueue-controller-manager" in report
    )
    # JobSet's chart names its controller jobset-controller; the manifests' jobset-controller-manager would run on.
    assert (
        "  - Deployment jobset-system/jobset-controller-manager: "
        "kubectl delete deployment -n jobset-system jobset-controller-manager" in report
    )
    assert (
        "  PULUMI_K8S_UPSERT_EXISTING_OBJECTS=true PULUMI_K8S_ENABLE_PATCH_FORCE=true pulumi up --stack xpk-multislice"
        in report
    )
    assert "dws-config" in report and "default-pool" in report


def test_the_report_names_the_protected_urns_and_how_to_let_one_go(xpk: Adopted) -> None:
    report = xpk.report
    stack = "urn:pulumi:xpk-multislice::tpu-stack::"
    pool = f"{stack}tpu-stack:index:TpuSlicePools$gcp:container/nodePool:NodePool::xpk-ms-np-3"
    cluster = "urn:pulumi:xpk-multislice::tpu-stack::tpu-stack:index:GkeCluster$gcp:container/cluster:Cluster::xpk-ms"
    assert f"  pulumi state unprotect --stack xpk-multislice '{pool}'" in report
    assert f"  pulumi state unprotect --stack xpk-multislice '{cluster}'" in report
    # Kubernetes objects are the stack's to delete like any it made: not protected, not listed.
    assert "Namespace::kueue-namespace'" not in report


def test_toolkit_charts_are_helm_releases_to_retire() -> None:
    report = adopted("toolkit-v6e").report
    assert "Delete before the first `pulumi up`" not in report  # the same charts: selectors agree
    for release in ("kueue-system/kueue", "kueue-system/kueue-config", "jobset-system/jobset"):
        namespace, name = release.split("/")
        assert (
            f"  - {release}: remove its record with `kubectl delete secret -n {namespace} -l owner=helm,name={name}`"
            in report
        )
    assert "  - Role jobset-system/jobset-controller" in report  # JobSet 0.10.1's chart role, gone from 0.12.0


def test_flex_start_pools_adopt_as_a_flex_start_group() -> None:
    flex = adopted("xpk-flex").adoption.config["tpu-stack:tpuPools"][0]
    assert flex["provisioning"] == "flex-start" and flex["accelerator"] == "v6e-16" and flex["slices"] == 2


def test_a_replacement_nothing_keeps_is_refused_in_one_line(tmp_path: Path) -> None:
    saved = read_existing(ADOPT_DIR / "xpk-multislice")
    adoption = adopt.interpret(saved, stack="x")
    adoption.config["tpu-stack:cluster"]["location"] = "us-east5-b"  # the program would ask for another location
    with pytest.raises(AdoptError) as error:
        adopt.write(adoption, tmp_path, tmp_path / "Pulumi.x.yaml")
    assert "would replace it" in str(error.value) and "\n" not in str(error.value)


def test_unsupported_pools_are_named(tmp_path: Path) -> None:
    saved = read_existing(ADOPT_DIR / "xpk-multislice")
    saved.node_pools[1]["config"]["preemptible"] = True
    adoption = adopt.interpret(saved, stack="x")
    assert any("preemptible" in f.line and f.kind == "refused" for f in adoption.findings)


def _admitted(jobset: dict[str, Any], objects: list[dict[str, Any]]) -> str | None:
    """The flavor Kueue would admit the JobSet on, by its rules: the LocalQueue its queue-name label names in its
    namespace, that LocalQueue's ClusterQueue (namespaceSelector {} takes every namespace), the first flavor whose
    nodeLabels the pods' nodeSelector does not contradict (kueue v0.19.2 flavorassigner.go flavorSelector) and whose
    quota covers the chips of every pod (replicas x parallelism x google.com/tpu)."""
    queue = jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    namespace = jobset["metadata"].get("namespace", "default")
    local = next(o for o in objects if o["kind"] == "LocalQueue" and o["metadata"]["name"] == queue
                 and o["metadata"]["namespace"] == namespace)  # fmt: skip
    cq = next(
        o for o in objects if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == local["spec"]["clusterQueue"]
    )
    selector = cq["spec"].get("namespaceSelector") or {}
    assert selector in ({}, {"matchLabels": {"kubernetes.io/metadata.name": namespace}})
    job = jobset["spec"]["replicatedJobs"][0]
    pod = job["template"]["spec"]["template"]["spec"]
    chips = (
        job["replicas"]
        * job["template"]["spec"]["parallelism"]
        * int(pod["containers"][0]["resources"]["limits"]["google.com/tpu"])
    )
    flavors = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceFlavor"}
    for group in cq["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            labels = flavors[flavor["name"]]["spec"]["nodeLabels"]
            if any(k in labels and labels[k] != v for k, v in pod["nodeSelector"].items()):
                continue
            quota = next(r["nominalQuota"] for r in flavor["resources"] if r["name"] == "google.com/tpu")
            if chips <= int(quota):
                return str(flavor["name"])
    return None


def test_an_xpk_jobset_is_admitted_by_the_adopted_queues(xpk: Adopted) -> None:
    from components.config.stack import StackConfig
    from components.kueue_queues import kueue_objects

    adoption = xpk.adoption
    config: StackConfig = load(adoption.config, stack="xpk-multislice")
    # As xpk 1.16.0 writes it (commands/workload.py WORKLOAD_CREATE_YAML): the LocalQueue label, one child Job per
    # slice, the accelerator and topology node selectors, 4 chips per VM of v5litepod-16 (4x4, 4 VMs).
    jobset: dict[str, Any] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "train", "labels": {"kueue.x-k8s.io/queue-name": "multislice-queue"}},
        "spec": {"replicatedJobs": [{"name": "slice-job", "replicas": 4, "template": {"spec": {
            "parallelism": 4, "completions": 4, "template": {"spec": {
                "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                                 "cloud.google.com/gke-tpu-topology": "4x4"},
                "priorityClassName": "medium",
                "containers": [{"name": "jax-tpu", "resources": {"limits": {"google.com/tpu": "4"}}}]}}}}}]},
    }  # fmt: skip
    objects = kueue_objects(config)
    assert _admitted(jobset, objects) == "4xv5litepod-16"
    jobset["spec"]["replicatedJobs"][0]["replicas"] = 5  # 80 chips: more than the 64 the four slices hold
    assert _admitted(jobset, objects) is None


@pytest.mark.parametrize(
    ("pool", "line"),
    [
        ({"accelerator": "v5litepod-17"}, "tpu-stack:tpuPools[0].accelerator: 'v5litepod-17' is not one of xpk's"),
        ({"accelerator": "v6e-16", "topology": "4x4"}, "tpu-stack:tpuPools[0].topology: v6e-16 is ct6e-standard-4t"),
        ({"accelerator": "v6e-8", "adopted": {"keep": ["nodeConfig.machineType"]}},
         "tpu-stack:tpuPools[0].adopted.keep[0]: 'nodeConfig.machineType' is no field the stack keeps"),
        ({"accelerator": "v6e-8", "slices": 1, "adopted": {"nodePools": ["x-np-0", "x-np-1"]}},
         "tpu-stack:tpuPools[0].adopted.nodePools: names 2 node pools for 1 slices; a slice removed is its node pool "
         "deleted"),
        ({"accelerator": "v6e-8", "adopted": {"keep": ["maxPodsPerNode"]}},
         "tpu-stack:tpuPools[0].adopted.keep[0]: 'maxPodsPerNode' is no field the stack keeps"),
    ],
)  # fmt: skip
def test_bad_adopted_config_is_one_line(pool: dict[str, Any], line: str) -> None:
    raw = {"gcp:project": "tpu-proj", "gcp:region": "us-east5",
           "tpu-stack:tpuPools": [{"name": "a", "zone": "us-east5-b", **pool}]}  # fmt: skip
    with pytest.raises(ConfigError) as error:
        load(raw, stack="dev")
    assert any(found.startswith(line) for found in error.value.lines), error.value.lines


def test_an_adopted_group_grown_keeps_its_pools_and_names_new_slices_as_any_group() -> None:
    # Slice i keeps adopted.nodePools[i]; a slice past the list is a new node pool <name>-<i> (never a renamed one).
    raw = {"gcp:project": "tpu-proj", "gcp:region": "us-east5",
           "tpu-stack:tpuPools": [{"name": "train", "zone": "us-east5-b", "accelerator": "v6e-16", "slices": 3,
                                   "adopted": {"nodePools": ["xpk-np-0", "old-pool"]}}]}  # fmt: skip
    assert load(raw, stack="dev").tpu_pools[0].node_pool_names == ["xpk-np-0", "old-pool", "train-2"]


def test_without_the_subnetwork_adopt_says_how_to_save_it(tmp_path: Path) -> None:
    # GKE's Cluster does not report its subnetwork's primary range, which holds the nodes (cluster.ipRanges.nodes).
    saved = read_existing(ADOPT_DIR / "xpk-multislice")
    saved.subnetwork = None
    with pytest.raises(AdoptError) as error:
        adopt.interpret(saved, stack="x")
    assert str(error.value) == (
        "cluster xpk-ms: the subnetwork's node range is not among the saved outputs; save it with `gcloud compute "
        "networks subnets describe default --region us-east5 --format json > subnetwork.json`"
    )


def test_a_routes_based_cluster_is_refused_in_one_line() -> None:
    saved = read_existing(ADOPT_DIR / "xpk-multislice")
    saved.cluster["ipAllocationPolicy"] = {}
    with pytest.raises(AdoptError) as error:
        adopt.interpret(saved, stack="x")
    assert str(error.value).startswith("cluster xpk-ms: a routes-based cluster (no IP aliases)")


@pytest.mark.parametrize(
    ("dns", "written", "keep"),
    [
        (None, "kube-dns", []),  # GKE reports no dnsConfig: Standard's default provider, kube-dns
        ({"clusterDns": "KUBE_DNS", "clusterDnsScope": "DNS_SCOPE_UNSPECIFIED"}, "kube-dns", []),
        ({"clusterDns": "CLOUD_DNS", "clusterDnsScope": "CLUSTER_SCOPE"}, "cloud-dns", []),
        # xpk's old Cloud DNS update (--cluster-dns-scope=vpc --cluster-dns-domain=<cluster>-domain): the stack's
        # cloud-dns is CLUSTER_SCOPE, a scope GKE cannot change to, so the setting is kept as it is.
        ({"clusterDns": "CLOUD_DNS", "clusterDnsScope": "VPC_SCOPE", "clusterDnsDomain": "xpk-ms-domain"}, None,
         ["dnsConfig"]),
    ],
)  # fmt: skip
def test_the_dns_provider_is_kept(dns: dict[str, str] | None, written: str | None, keep: list[str]) -> None:
    saved = read_existing(ADOPT_DIR / "xpk-multislice")
    saved.cluster["networkConfig"].pop("dnsConfig", None)
    if dns:
        saved.cluster["networkConfig"]["dnsConfig"] = dns
    cluster = adopt.interpret(saved, stack="x").config["tpu-stack:cluster"]
    assert cluster.get("dns") == written
    assert [k for k in cluster["adopted"].get("keep", []) if k == "dnsConfig"] == keep


@pytest.mark.parametrize(
    ("second", "line"),
    [
        ({"name": "b", "adopted": {"flavor": "a"}}, "tpu-stack:tpuPools[1].adopted.flavor: flavor 'a' is already "
         "tpuPools[0]'s"),
        ({"name": "b", "adopted": {"nodePools": ["a-0"]}}, "tpu-stack:tpuPools[1].name: its node pool 'a-0' (slice 0) "
         "is already slice 0 of tpuPools[0] ('a'); rename one of the two groups"),
    ],
)  # fmt: skip
def test_adopted_names_two_groups_claim_are_one_line(second: dict[str, Any], line: str) -> None:
    first = {"name": "a", "zone": "us-east5-b", "accelerator": "v6e-8"}
    raw = {"gcp:project": "tpu-proj", "gcp:region": "us-east5",
           "tpu-stack:tpuPools": [first, {"zone": "us-east5-b", "accelerator": "v5litepod-8", **second}]}  # fmt: skip
    with pytest.raises(ConfigError) as error:
        load(raw, stack="dev")
    assert error.value.lines == [line]


def test_an_adopted_group_is_not_held_to_the_published_zones() -> None:
    # xpk made the multislice fixture's v5e slices in us-east5-b, a zone vendor/data/tpu_zones.json does not list for
    # v5e: the slices exist there, so the adopted group is taken as it is; the same group not adopted is refused.
    entry = {"name": "a", "zone": "us-east5-b", "accelerator": "v5litepod-16", "provisioning": "reservation",
             "reservation": "tpu-res"}  # fmt: skip
    raw = {"gcp:project": "tpu-proj", "gcp:region": "us-east5", "tpu-stack:tpuPools": [entry]}
    with pytest.raises(ConfigError) as error:
        load(raw, stack="dev")
    assert error.value.lines[0].startswith("tpu-stack:tpuPools[0].zone: us-east5-b offers no TPU v5e")
    adopted_entry = {**entry, "adopted": {"nodePools": ["xpk-np-0"]}}
    assert load({**raw, "tpu-stack:tpuPools": [adopted_entry]}, stack="dev").tpu_pools[0].zone == "us-east5-b"


def test_the_cli_writes_the_policy_config_and_names_it_in_the_preview_command(tmp_path: Path) -> None:
    import io

    from tpu_stack import cli

    out, err = io.StringIO(), io.StringIO()
    args = ["adopt", "xpk-multislice", "--from", str(ADOPT_DIR / "xpk-multislice"), "--stack-dir", str(tmp_path),
            "--out", str(tmp_path / "adopt"), "--exception-days", "30"]  # fmt: skip
    cli.main(args, out=out, err=err)
    written = json.loads((tmp_path / "adopt" / "policy-config.json").read_text())
    [first, *_] = written["no-default-compute-service-account"]["exceptions"]
    from datetime import UTC, datetime, timedelta

    assert first["until"] == (datetime.now(UTC).date() + timedelta(days=30)).isoformat()
    assert f"--policy-config {tmp_path / 'adopt' / 'policy-config.json'}" in out.getvalue()


# The API's form of Cluster Toolkit's gke-tpu-v6e policy (modules/scheduler/gke-cluster/main.tf maintenance_policy,
# the blueprint's maintenance_exclusions): a daily window at 09:00 and an exclusion until the version's end of support.
TOOLKIT_EXCLUSION = {
    "startTime": "2025-12-01T00:00:00Z",
    "endTime": "2026-10-01T00:00:00Z",
    "maintenanceExclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES", "endTimeBehavior": "UNTIL_END_OF_SUPPORT"},
}


def _with_maintenance(tmp_path: Path, policy: dict[str, Any]) -> adopt.Adoption:
    saved = read_existing(ADOPT_DIR / "toolkit-v6e")
    saved.cluster["maintenancePolicy"] = policy
    return adopt.interpret(saved, stack="toolkit-v6e")


def test_a_maintenance_exclusion_until_end_of_support_is_kept_not_removed(tmp_path: Path) -> None:
    policy = {
        "window": {
            "dailyMaintenanceWindow": {"startTime": "09:00", "duration": "PT4H0M0S"},
            "maintenanceExclusions": {"no-minor-or-node-upgrades-indefinite": TOOLKIT_EXCLUSION},
        }
    }
    adoption = _with_maintenance(tmp_path, policy)
    # tpu-stack's exclusions have an end time and no end-time behaviour: the whole policy stays as GKE has it.
    assert "maintenancePolicy" in adoption.config["tpu-stack:cluster"]["adopted"]["keep"]
    assert any("maintenancePolicy" in f.line and f.kind == "kept" for f in adoption.findings)
    outcome = adopt.plan(adoption)
    cluster = next(v for v in outcome.verdicts if v.type == "gcp:container/cluster:Cluster")
    assert not [c.path for c in cluster.changes if c.path.startswith("maintenancePolicy")]


def test_a_daily_window_and_a_dated_exclusion_map_to_cluster_maintenance(tmp_path: Path) -> None:
    exclusion = {
        "startTime": "2026-06-01T00:00:00Z",
        "endTime": "2026-07-01T00:00:00Z",
        "maintenanceExclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES"},
    }
    policy = {
        "window": {
            "dailyMaintenanceWindow": {"startTime": "03:00", "duration": "PT4H0M0S"},
            "maintenanceExclusions": {"campaign": exclusion},
        }
    }
    adoption = _with_maintenance(tmp_path, policy)
    assert adoption.config["tpu-stack:cluster"]["maintenance"] == {
        "dailyStartTime": "03:00",
        "exclusions": [
            {"name": "campaign", "startTime": "2026-06-01T00:00:00Z", "endTime": "2026-07-01T00:00:00Z",
             "scope": "NO_MINOR_OR_NODE_UPGRADES"}
        ],
    }  # fmt: skip
    assert "maintenancePolicy" not in adoption.config["tpu-stack:cluster"]["adopted"].get("keep", [])


def test_the_report_says_how_to_retire_the_tool_that_made_the_cluster(xpk: Adopted) -> None:
    assert "do not run `xpk cluster create`, `xpk cluster adapt` or `xpk cluster delete`" in xpk.report
    assert "default/xpk-ms-resources-configmap" in xpk.report and "default/xpk-ms-metadata-configmap" in xpk.report
    toolkit = adopted("toolkit-v6e").report
    assert "terraform -chdir=<deployment>/primary state rm" in toolkit and "never `gcluster destroy`" in toolkit


def _adopt_cli(tmp_path: Path, change: Any = None) -> tuple[int, str, str]:
    """`tpu-stack adopt` on a copy of the xpk-multislice outputs, changed by `change(cluster, pools, objects)`."""
    import io
    import shutil

    from tpu_stack import cli

    saved = tmp_path / "saved"
    shutil.copytree(ADOPT_DIR / "xpk-multislice", saved)
    cluster = json.loads((saved / "cluster.json").read_text())
    pools = json.loads((saved / "node-pools.json").read_text())
    objects = json.loads((saved / "kubernetes.json").read_text())
    if change is not None:
        change(cluster, pools, objects["items"])
    cluster["nodePools"] = pools
    (saved / "cluster.json").write_text(json.dumps(cluster))
    (saved / "node-pools.json").write_text(json.dumps(pools))
    (saved / "kubernetes.json").write_text(json.dumps(objects))
    out, err = io.StringIO(), io.StringIO()
    args = ["adopt", "x", "--from", str(saved), "--stack-dir", str(tmp_path), "--out", str(tmp_path / "adopt")]
    code = cli.main(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_adopt_with_nothing_refused_exits_0(tmp_path: Path) -> None:
    code, _out, err = _adopt_cli(tmp_path)
    assert code == 0 and "refused" not in err


def _preemptible(cluster: Any, pools: Any, objects: Any) -> None:
    pools[2]["config"]["preemptible"] = True  # pools[0] is default-pool: xpk-ms-np-1


def _two_reservations(cluster: Any, pools: Any, objects: Any) -> None:
    pools[2]["config"]["reservationAffinity"]["values"] = ["tpu-res", "tpu-res-2"]


def _two_cluster_queues(cluster: Any, pools: Any, objects: Any) -> None:
    second = json.loads(json.dumps(next(o for o in objects if o["kind"] == "ClusterQueue")))
    second["metadata"]["name"] = "other-queue"
    objects.append(second)


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (_preemptible, "refused: tpu-stack:tpuPools: node pool xpk-ms-np-1 not adopted: preemptible VMs (tpu-stack's "
                       "cheap capacity is spot); "),
        (_two_reservations, "refused: tpu-stack:tpuPools: node pool xpk-ms-np-1 not adopted: it consumes 2 "
                            "reservations; tpu-stack's pool groups consume one; "),
        (_two_cluster_queues, "refused: tpu-stack:queues: ClusterQueues cluster-queue, other-queue not adopted: "),
    ],
)  # fmt: skip
def test_each_refusal_is_one_line_naming_the_key_and_exits_2(tmp_path: Path, change: Any, line: str) -> None:
    code, _out, err = _adopt_cli(tmp_path, change)
    refused = [found for found in err.splitlines() if found.startswith("refused:")]
    assert code == 2
    assert len(refused) == 1 and refused[0].startswith(line), refused
    # What to change is said: the pool left as it runs, or the queues to declare as teams.
    assert " left as it runs" in refused[0] or "tpu-stack:teams" in refused[0]


def test_what_adopt_keeps_is_kept_not_refused(tmp_path: Path) -> None:
    def legacy(cluster: Any, pools: Any, objects: Any) -> None:
        cluster["networkConfig"]["datapathProvider"] = "LEGACY_DATAPATH"

    code, out, err = _adopt_cli(tmp_path, legacy)
    assert code == 0 and "refused" not in err
    assert "datapathProvider LEGACY_DATAPATH kept" in out
