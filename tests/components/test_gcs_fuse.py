"""Cloud Storage FUSE: the driver on the cluster, and the example workloads and Saxml mounting the stack's bucket
with the KSA that holds the bucket role (datasets read-only, checkpoints read-write), with GKE's training options,
and a file cache bounded to what the node's boot disk holds."""

from __future__ import annotations

from typing import Any

import pytest

from components import workloads
from components.config.base import ConfigError
from components.config.queues import queue_refs
from components.config.stack import load
from offline.engine import Plan
from tests.fixtures import stack_config, stack_plan

DRIVER = "gcsfuse.csi.storage.gke.io"


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    return {stack: stack_plan(stack, render_charts=False) for stack in ("dev", "prod")}


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
    config = stack_config("prod")
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
                # Checkpoints in their own hierarchical namespace bucket, where directory renames work (defect 6).
                ckpt = volumes["checkpoints"]["csi"]["volumeAttributes"]["bucketName"]
                assert ckpt == "tpu-stack-prod-prod-tpu-stack-ckpt"
                assert "only-dir=datasets" in options(volumes["datasets"])
                assert "only-dir=checkpoints/training" in options(volumes["checkpoints"])
                for wanted in ("file-cache:enable-parallel-downloads:true", "metadata-cache:ttl-secs:-1"):
                    assert wanted in options(volumes["datasets"])
                assert "metadata-cache:negative-ttl-secs:0" in options(volumes["checkpoints"])
                # A checkpoint is read back once: no file cache of its own beside the datasets'.
                assert not [o for o in options(volumes["checkpoints"]) if o.startswith("file-cache:")]
                (container,) = pod["containers"]
                mounts = {m["mountPath"]: m["readOnly"] for m in container["volumeMounts"]}
                assert mounts == {"/data": True, "/checkpoints": False}


def test_prod_research_reads_only_and_has_no_checkpoint_volume() -> None:
    config = stack_config("prod")
    # prod's examples all go to training (it holds the train ladder's first rung): research's Job on that ladder.
    research = queue_refs(config.queues)["research"]
    for obj in workloads.workload_objects(config, workloads.ladders(config)["train"], 1, "analysis", research):
        for template in templates(obj):
            assert template["spec"]["serviceAccountName"] == "analyst"  # roles/storage.objectViewer (prod)
            assert [v["name"] for v in template["spec"]["volumes"]] == ["datasets", "gke-gcsfuse-cache"]


def test_jobs_in_a_namespace_without_a_bucket_ksa_mount_nothing(run: Any) -> None:
    config = load(
        {"gcp:project": "proj-1234", "gcp:region": "us-east5", "tpu-stack:tpuPools": '[{"name": "a", "machineType": '
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
        if r["inputs"]["metadata"]["name"] == "sax-model-server-set-0"
    ]  # fmt: skip
    (template,) = templates(jobset["inputs"])
    assert template["spec"]["serviceAccountName"] == "sax-sa"  # bound to the bucket with roles/storage.objectUser
    assert template["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
    (volume, cache) = template["spec"]["volumes"]
    assert cache == {"name": "gke-gcsfuse-cache", "emptyDir": {"sizeLimit": "33Gi"}}  # serve: ct5lp-hightpu-4t
    assert "file-cache:max-size-mb:30412" in options(volume)
    assert volume["csi"]["readOnly"] is True
    assert volume["csi"]["volumeAttributes"]["bucketName"] == "tpu-stack-prod-prod-tpu-stack"
    assert "only-dir=models" in options(volume)
    (container,) = template["spec"]["containers"]
    assert container["volumeMounts"] == [{"name": "models", "mountPath": "/models", "readOnly": True}]


# ---- the file cache fits the node's boot disk ------------------------------------------------------------------------
# By hand: the TPU pools keep GKE's default 100 GiB boot disk. Its filesystem is 94 GiB (6 GiB of OS partitions; GKE's
# own example node shows 94.25 GiB), the kubelet's eviction threshold 10% of it (9.4 GiB), GKE's system reservation
# min(50 GiB, 6 + 35 GiB, 100 GiB) = 41 GiB: 43.6 GiB allocatable (44646 MiB). Less 10 GiB for the pod's containers
# (the sidecar's default 5 GiB request, the TPU container's layer and logs): a 33 GiB cache volume, of which gcsfuse
# may fill 90%, 33 * 1024 * 0.9 = 30412 MiB.
CACHE_VOLUME = {"name": "gke-gcsfuse-cache", "emptyDir": {"sizeLimit": "33Gi"}}
WRITERS = {"writers": [{"namespace": "default", "serviceAccount": "trainer"}]}
# v5e on flex-start: us-west4-a (vendor/data/tpu_zones.json).
POOL = {"name": "v5e", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "provisioning": "flex-start",
        "zone": "us-west4-a"}  # fmt: skip


def dev_config(bucket: dict[str, Any]) -> Any:
    return load({"gcp:project": "proj-1234", "gcp:region": "us-west4", "tpu-stack:tpuPools": [POOL],
                 "tpu-stack:bucket": bucket}, stack="dev")  # fmt: skip


def pods(config: Any) -> list[dict[str, Any]]:
    found = [t for w in workloads.workloads(config) for o in w.objects for t in templates(o)]
    assert found
    return found


def test_prod_training_pods_keep_a_bounded_file_cache_on_a_volume_of_their_own() -> None:
    """The cache was unlimited (max-size-mb -1) in the sidecar's default emptyDir with no ephemeral-storage limit:
    a large dataset filled the boot disk and the kubelet evicted the TPU pod."""
    config = stack_config("prod")
    for template in pods(config):
        pod = template["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["gke-gcsfuse-cache"] == CACHE_VOLUME
        assert "file-cache:max-size-mb:30412" in options(volumes["datasets"])
        assert pod["securityContext"]["fsGroup"] == 65534  # the sidecar's group owns the cache volume
        for volume in volumes.values():
            if "csi" in volume:
                assert "file-cache:max-size-mb:-1" not in options(volume)
        assert template["metadata"]["annotations"]["gke-gcsfuse/ephemeral-storage-limit"] == "0"


def test_the_file_cache_size_comes_from_bucket_file_cache_gb() -> None:
    (template, *_) = pods(dev_config({**WRITERS, "fileCacheGb": 20}))
    volumes = {v["name"]: v for v in template["spec"]["volumes"]}
    assert volumes["gke-gcsfuse-cache"] == {"name": "gke-gcsfuse-cache", "emptyDir": {"sizeLimit": "20Gi"}}
    assert "file-cache:max-size-mb:18432" in options(volumes["datasets"])  # 20 * 1024 * 0.9


def test_a_file_cache_gb_of_0_turns_the_cache_off() -> None:
    for template in pods(dev_config({**WRITERS, "fileCacheGb": 0})):
        assert [v["name"] for v in template["spec"]["volumes"]] == ["datasets", "checkpoints"]
        assert not [o for v in template["spec"]["volumes"] for o in options(v) if o.startswith("file-cache:")]
        assert "fsGroup" not in template["spec"]["securityContext"]


def test_a_file_cache_that_does_not_fit_the_boot_disk_is_refused() -> None:
    """33 GiB is the most a pod on GKE's default boot disk can keep (the exact line: test_config's CASES)."""
    with pytest.raises(ConfigError, match=r"^tpu-stack:bucket\.fileCacheGb: 34 GiB does not fit .* use at most 33,"):
        dev_config({**WRITERS, "fileCacheGb": 34})
    assert dev_config({**WRITERS, "fileCacheGb": 33})


def test_autopilot_pods_keep_no_file_cache() -> None:
    """Autopilot bounds a pod's ephemeral storage by its requests: a cache volume would get the pod evicted."""
    capacity = [{"tpuVersion": "v5e", "topology": "2x4", "provisioning": "flex-start"}]
    config = load(
        {
            "gcp:project": "proj-1234",
            "gcp:region": "us-central1",
            "tpu-stack:cluster": {"mode": "autopilot"},
            "tpu-stack:queues": {"autopilotCapacity": capacity},
            "tpu-stack:bucket": WRITERS,
        },
        stack="dev",
    )
    for template in pods(config):
        assert [v["name"] for v in template["spec"]["volumes"]] == ["datasets", "checkpoints"]
        assert not [o for v in template["spec"]["volumes"] for o in options(v) if o.startswith("file-cache:")]
