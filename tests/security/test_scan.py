"""The scan input: JobSets become one Job per replicated job, carrying the JobSet's documented exceptions."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from offline.engine import REPO
from security.__main__ import annotate, chart_exceptions, collect, unwrap
from tests.fixtures import FIXTURE_STACKS, stack_plan

SCANNED = FIXTURE_STACKS
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


EXCEPTIONS: list[dict[str, Any]] = [
    {"kind": "ClusterRole", "name": "manager-role", "checks": {"CKV_K8S_155": "own webhooks only"}},
    {"kind": "Deployment", "namespace": "ns", "name": "ctl", "checks": {"CKV_K8S_43": "tag", "CKV_K8S_38": "api"}},
]


def test_listed_chart_objects_get_their_exceptions_after_the_skips_they_have() -> None:
    deployment: dict[str, Any] = {"kind": "Deployment", "metadata": {"name": "ctl", "namespace": "ns",
                                                    "annotations": {"checkov.io/skip1": "CKV_K8S_11=cpu"}}}  # fmt: skip
    role: dict[str, Any] = {"kind": "ClusterRole", "metadata": {"name": "manager-role"}}
    other = {"kind": "Deployment", "metadata": {"name": "ctl", "namespace": "elsewhere"}}
    annotate([deployment, role, other], EXCEPTIONS)
    assert deployment["metadata"]["annotations"] == {
        "checkov.io/skip1": "CKV_K8S_11=cpu",
        "checkov.io/skip2": "CKV_K8S_38=api",
        "checkov.io/skip3": "CKV_K8S_43=tag",
    }
    assert role["metadata"]["annotations"] == {"checkov.io/skip1": "CKV_K8S_155=own webhooks only"}
    assert "annotations" not in other["metadata"]


def test_every_reviewed_chart_exception_has_a_reason_checkov_can_read() -> None:
    for entry in chart_exceptions():
        assert entry["kind"] and entry["name"] and entry["checks"]
        for check, reason in entry["checks"].items():
            assert check.startswith(("CKV_K8S_", "CKV2_K8S_"))
            assert len(reason) > 20 and "=" not in reason, f"{check}: checkov splits the annotation at '='"


def test_every_reviewed_chart_exception_names_an_object_the_charts_render() -> None:
    """A stale entry (the chart renamed or dropped the object) would hide nothing and mislead the reader. The
    scanned stacks render the Kueue and JobSet charts (all of them) and the LWS chart (llm)."""
    rendered = {
        (r["inputs"]["kind"], r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"])
        for stack in SCANNED
        for r in stack_plan(stack).resources
        if r.get("rendered")
    }
    for entry in chart_exceptions():
        assert (entry["kind"], entry.get("namespace"), entry["name"]) in rendered


def test_the_scan_covers_every_stack_file_present(tmp_path: Path) -> None:
    """`make scan` scans the stack files present: one a team adds is scanned, one it removes is not, with no other
    edit. (The project file Pulumi.yaml is not a stack.)"""
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    for name in ("Pulumi.yaml", "Pulumi.prod.yaml", "Pulumi.ourdev.yaml", "Pulumi.dev.yaml"):
        (tmp_path / name).write_text("config: {}\n")
    show = "print-scan-stacks: ; @echo $(SCAN_STACKS)"
    done = subprocess.run(
        ["make", "-s", "--eval", show, "print-scan-stacks"], cwd=tmp_path, capture_output=True, text=True
    )
    assert (done.returncode, done.stdout.split()) == (0, ["dev", "ourdev", "prod"]), done.stderr


LWS: dict[str, Any] = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "metadata": {"name": "llama", "namespace": "llm", "annotations": {"checkov.io/skip1": "CKV_K8S_8=no endpoint"}},
    "spec": {
        "replicas": 2,
        "leaderWorkerTemplate": {
            "size": 4,
            "leaderTemplate": {"metadata": {"labels": {"role": "leader"}}, "spec": POD},
            "workerTemplate": {"metadata": {"labels": {"role": "worker"}}, "spec": {**POD, "restartPolicy": "Always"}},
        },
    },
}


def test_a_leaderworkerset_becomes_its_leader_and_worker_statefulsets_with_its_annotations() -> None:
    leaders, workers = unwrap(LWS)
    assert [(s["kind"], s["metadata"]["name"]) for s in (leaders, workers)] == [
        ("StatefulSet", "llama"), ("StatefulSet", "llama-workers"),
    ]  # fmt: skip
    assert (leaders["spec"]["replicas"], workers["spec"]["replicas"]) == (2, 3)
    assert leaders["spec"]["template"]["metadata"]["labels"] == {"role": "leader"}
    assert workers["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert all(
        s["metadata"]["annotations"] == {"checkov.io/skip1": "CKV_K8S_8=no endpoint"} for s in (leaders, workers)
    )
