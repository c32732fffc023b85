"""Cloud Storage FUSE: the driver on the cluster, and the example workloads and Saxml mounting the stack's bucket
with the KSA that holds the bucket role (datasets read-only, checkpoints read-write), with GKE's training options."""

from __future__ import annotations

from typing import Any

import pytest

from components import workloads
from components.config.stack import load
from offline.engine import REPO, Plan, _engine_config, read_stack_file, run_stack

DRIVER = "gcsfuse.csi.storage.gke.io"


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    return {stack: run_stack(stack, render_charts=False) for stack in ("dev", "prod")}


def templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] == "JobSet":
        return [job["template"]["spec"]["template"] for job in obj["spec"]["replicatedJobs"]]
    return [obj["spec"]["template"]] if obj["kind"] == "Job" else []


def options(volume: dict[str, Any]) -> list[str]:
    return str(volume["csi"]["volumeAttributes"]["mountOptions"]).split(",")


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_cluster_runs_the_fuse_driver_and_managed_prometheus(plans: dict[str, Plan], stack: str) -> None:
    (cluster,) = plans[stack].by_type("gcp:container/cluster:Cluster")
    assert cluster["inputs"]["addonsConfig"]["gcsFuseCsiDriverConfig"] == {"enabled": True}
    assert cluster["inputs"]["monitoringConfig"]["managedPrometheus"] == {"enabled": True}


def test_prod_training_jobs_mount_data_read_only_and_checkpoints_read_write_as_trainer() -> None:
    config = load(_engine_config(read_stack_file(REPO / "Pulumi.prod.yaml")), stack="prod")
    training = [w for w in workloads.workloads(config) if w.queue.namespace == "training"]
    assert training
    for workload in training:
        for obj in workload.objects:
            for template in templates(obj):
                pod = template["spec"]
                assert pod["serviceAccountName"] == "trainer"  # the KSA with roles/storage.objectUser (prod)
                assert template["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
                assert template["metadata"]["annotations"]["gke-gcsfuse/memory-limit"] == "0"
                volumes = {v["name"]: v for v in pod["volumes"]}
                assert volumes["datasets"]["csi"]["driver"] == DRIVER
                assert volumes["datasets"]["csi"]["volumeAttributes"]["bucketName"] == "tpu-stack-prod-prod-tpu-stack"
                assert volumes["datasets"]["csi"]["readOnly"] is True
                assert volumes["checkpoints"]["csi"]["readOnly"] is False
                assert "only-dir=datasets" in options(volumes["datasets"])
                assert "only-dir=checkpoints/training" in options(volumes["checkpoints"])
                for wanted in ("file-cache:enable-parallel-downloads:true", "metadata-cache:ttl-secs:-1"):
                    assert wanted in options(volumes["datasets"])
                assert "metadata-cache:negative-ttl-secs:0" in options(volumes["checkpoints"])
                (container,) = pod["containers"]
                mounts = {m["mountPath"]: m["readOnly"] for m in container["volumeMounts"]}
                assert mounts == {"/data": True, "/checkpoints": False}


def test_prod_research_reads_only_and_has_no_checkpoint_volume() -> None:
    config = load(_engine_config(read_stack_file(REPO / "Pulumi.prod.yaml")), stack="prod")
    research = [w for w in workloads.workloads(config) if w.queue.namespace == "research"]
    assert research
    for workload in research:
        for obj in workload.objects:
            for template in templates(obj):
                assert template["spec"]["serviceAccountName"] == "analyst"  # roles/storage.objectViewer (prod)
                assert [v["name"] for v in template["spec"]["volumes"]] == ["datasets"]


def test_jobs_in_a_namespace_without_a_bucket_ksa_mount_nothing(run: Any) -> None:
    config = load(
        {"gcp:project": "proj-1234", "gcp:region": "us-central1", "tpu-stack:tpuPools": '[{"name": "a", "machineType": '
         '"ct6e-standard-4t", "provisioning": "flex-start"}]'},
        stack="dev",
    )  # fmt: skip
    for workload in workloads.workloads(config):
        for obj in workload.objects:
            for template in templates(obj):
                assert "volumes" not in template["spec"] and "metadata" not in template


def test_prod_saxml_model_servers_mount_models_read_only_as_sax_sa(plans: dict[str, Plan]) -> None:
    (jobset,) = [
        r for r in plans["prod"].by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")
        if r["inputs"]["metadata"]["name"] == "sax-model-server-set"
    ]  # fmt: skip
    (template,) = templates(jobset["inputs"])
    assert template["spec"]["serviceAccountName"] == "sax-sa"  # bound to the bucket with roles/storage.objectUser
    assert template["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
    (volume,) = template["spec"]["volumes"]
    assert volume["csi"]["readOnly"] is True
    assert volume["csi"]["volumeAttributes"]["bucketName"] == "tpu-stack-prod-prod-tpu-stack"
    assert "only-dir=models" in options(volume)
    (container,) = template["spec"]["containers"]
    assert container["volumeMounts"] == [{"name": "models", "mountPath": "/models", "readOnly": True}]
