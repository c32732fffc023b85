"""The scan input: JobSets become one Job per replicated job, carrying the JobSet's documented exceptions."""

from __future__ import annotations

from pathlib import Path

import yaml

from security.__main__ import collect, unwrap

POD = {"containers": [{"name": "c", "image": "busybox:1.37.0"}], "restartPolicy": "Never"}
JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "train", "namespace": "training", "annotations": {"checkov.io/skip1": "CKV_K8S_23=root"}},
    "spec": {
        "replicatedJobs": [
            {"name": "slice", "replicas": 2, "template": {"spec": {"parallelism": 2, "template": {"spec": POD}}}},
            {"name": "driver", "replicas": 1, "template": {"spec": {"template": {"spec": POD}}}},
        ]
    },
}


def test_a_jobset_becomes_one_job_per_replicated_job_with_its_annotations() -> None:
    jobs = unwrap(JOBSET)
    assert [(j["kind"], j["metadata"]["name"]) for j in jobs] == [("Job", "train-slice"), ("Job", "train-driver")]
    assert all(j["metadata"]["annotations"] == {"checkov.io/skip1": "CKV_K8S_23=root"} for j in jobs)
    assert jobs[0]["spec"] == {"parallelism": 2, "template": {"spec": POD}}


def test_other_objects_pass_unchanged() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    assert unwrap(service) == [service]


def test_collect_reads_manifests_and_workloads_of_each_stack(tmp_path: Path) -> None:
    build = tmp_path / "build"
    (build / "dev" / "manifests").mkdir(parents=True)
    (build / "dev" / "workloads").mkdir(parents=True)
    (build / "dev" / "manifests" / "saxml.yaml").write_text(yaml.safe_dump_all([JOBSET]))
    (build / "dev" / "workloads" / "job.yaml").write_text(yaml.safe_dump({"kind": "Job", "metadata": {"name": "j"}}))
    assert collect(build, ["dev"], build / "scan") == 3
    written = sorted(p.name for p in (build / "scan" / "dev").iterdir())
    assert written == ["manifests-saxml.yaml", "workloads-job.yaml"]
