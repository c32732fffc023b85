"""`tpu-stack adopt` on saved outputs of clusters xpk 1.16.0 and Cluster Toolkit made (tests/fixtures/adopt/, built by
make_fixtures.py from the tools' commands and manifests): the stack written, the import, the first update."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.config import ConfigError, load
from tpu_stack import adopt
from tpu_stack.adopt_errors import AdoptError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "adopt"


@pytest.fixture(scope="module")
def xpk(tmp_path_factory: pytest.TempPathFactory) -> tuple[adopt.Adoption, list[adopt.Verdict], Path]:
    out = tmp_path_factory.mktemp("xpk")
    adoption = adopt.interpret(adopt.read_saved(FIXTURES / "xpk-multislice"), stack="xpk")
    found, _ = adopt.write(adoption, out, out / "Pulumi.xpk.yaml")
    return adoption, found, out


def test_v1beta1_cluster_queue_is_converted_as_kueue_does() -> None:
    # kueue v0.19.2 apis/kueue/v1beta1/clusterqueue_conversion.go
    old = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"cohort": "all", "admissionChecks": ["dws"], "flavorFungibility": {"whenCanBorrow": "Borrow"}},
    }
    assert adopt.to_v1beta2(old)["spec"] == {
        "cohortName": "all",
        "admissionChecksStrategy": {"admissionChecks": [{"name": "dws"}]},
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch"},
    }
    assert adopt.to_v1beta2(old)["apiVersion"] == "kueue.x-k8s.io/v1beta2"


def test_xpk_slices_become_one_pool_group_with_its_names(xpk: tuple[Any, Any, Path]) -> None:
    adoption, _, _ = xpk
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
    config = load(adoption.config, stack="xpk")  # the written config is valid
    assert config.tpu_pools[0].node_pool_names == [f"xpk-ms-np-{i}" for i in range(4)]
    assert config.cluster.adopted is not None and config.cluster.adopted.default_pool


def test_xpk_first_update_imports_everything_and_replaces_nothing(xpk: tuple[Any, Any, Path]) -> None:
    _, found, out = xpk
    imported = {v.import_id for v in found if v.import_id}
    assert "projects/tpu-proj/locations/us-east5/clusters/xpk-ms" in imported
    assert {
        f"projects/tpu-proj/locations/us-east5/clusters/xpk-ms/nodePools/xpk-ms-np-{i}" for i in range(4)
    } <= imported
    assert {"cluster-queue", "default/multislice-queue", "4xv5litepod-16", "medium"} <= imported
    assert not [c for v in found for c in v.replaced]
    # The hardened defaults the first update makes, in place: Workload Identity on the cluster and the nodes.
    cluster = next(v for v in found if v.type == adopt.CLUSTER)
    assert {c.path for c in cluster.changes} >= {"workloadIdentityConfig.workloadPool", "deletionProtection"}
    pool = next(v for v in found if v.name == "xpk-ms-np-0")
    assert ("nodeConfig.workloadMetadataConfig.mode", None, "GKE_METADATA") in {
        (c.path, c.old, c.new) for c in pool.changes
    }
    report = (out / "report.txt").read_text()
    assert "0 replaced" in report and "dws-config" in report and "default-pool" in report


def test_import_file_names_the_programs_parents_and_provider(xpk: tuple[Any, Any, Path]) -> None:
    _, _, out = xpk
    entries = json.loads((out / "import.json").read_text())["resources"]
    by_name = {e["name"]: e for e in entries}
    assert by_name["xpk-ms-np-0"] == {
        "type": "gcp:container/nodePool:NodePool",
        "name": "xpk-ms-np-0",
        "parent": "xpk-ms-np",
        "id": "projects/tpu-proj/locations/us-east5/clusters/xpk-ms/nodePools/xpk-ms-np-0",
        "version": "10.2.0",
    }
    assert by_name["xpk-ms-np"] == {"type": "tpu-stack:index:TpuSlicePools", "name": "xpk-ms-np", "component": True}
    flavor = by_name["queues-resourceflavor-4xv5litepod-16"]
    assert flavor["provider"] == "xpk-ms-k8s" and flavor["id"] == "4xv5litepod-16"
    provider = by_name["xpk-ms-k8s"]
    assert provider["type"] == "pulumi:providers:kubernetes" and "id" not in provider
    assert provider["inputs"]["clusterIdentifier"].startswith("gke-xpk-ms")


def test_xpk_flex_and_toolkit_adopt_without_replacement(tmp_path: Path) -> None:
    for name in ("xpk-flex", "toolkit-v6e"):
        adoption = adopt.interpret(adopt.read_saved(FIXTURES / name), stack=name)
        found, _ = adopt.write(adoption, tmp_path / name, tmp_path / f"Pulumi.{name}.yaml")
        assert not [c for v in found for c in v.replaced], name
        assert len([v for v in found if v.import_id]) >= 10
    flex = adopt.interpret(adopt.read_saved(FIXTURES / "xpk-flex"), stack="f").config["tpu-stack:tpuPools"][0]
    assert flex["provisioning"] == "flex-start" and flex["accelerator"] == "v6e-16"


def test_a_replacement_nothing_keeps_is_refused_in_one_line(tmp_path: Path) -> None:
    saved = adopt.read_saved(FIXTURES / "xpk-multislice")
    adoption = adopt.interpret(saved, stack="x")
    adoption.config["tpu-stack:cluster"]["location"] = "us-east5-b"  # the program would ask for another location
    with pytest.raises(AdoptError) as error:
        adopt.write(adoption, tmp_path, tmp_path / "Pulumi.x.yaml")
    assert "would replace it" in str(error.value) and "\n" not in str(error.value)


def test_unsupported_pools_are_named(tmp_path: Path) -> None:
    saved = adopt.read_saved(FIXTURES / "xpk-multislice")
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


def test_an_xpk_jobset_is_admitted_by_the_adopted_queues(xpk: tuple[Any, Any, Path]) -> None:
    from components.config.stack import StackConfig
    from components.kueue_queues import kueue_objects

    adoption, _, _ = xpk
    config: StackConfig = load(adoption.config, stack="xpk")
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
        ({"accelerator": "v6e-8", "slices": 2, "adopted": {"nodePools": ["a-0"]}},
         "tpu-stack:tpuPools[0].adopted.nodePools: names 1 node pools for 2 slices"),
    ],
)  # fmt: skip
def test_bad_adopted_config_is_one_line(pool: dict[str, Any], line: str) -> None:
    raw = {"gcp:project": "tpu-proj", "gcp:region": "us-east5",
           "tpu-stack:tpuPools": [{"name": "a", "zone": "us-east5-b", **pool}]}  # fmt: skip
    with pytest.raises(ConfigError) as error:
        load(raw, stack="dev")
    assert any(found.startswith(line) for found in error.value.lines), error.value.lines
