"""Bucket: hardened (facts §5), protected unless the stack is throwaway, named by the GCS rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config.base import ConfigError
from components.config.stack import load
from offline import __main__ as cli
from offline.engine import Plan
from tests.conftest import BASE, StackRunner

BUCKET = "gcp:storage/bucket:Bucket"


def the_bucket(plan: Plan) -> dict[str, Any]:
    return plan.one(BUCKET, "data-bucket")


def test_bucket_is_hardened_labelled_and_in_the_region(run: StackRunner) -> None:
    plan = run({"tpu-stack:labels": {"team": "ml"}})
    inputs = the_bucket(plan)["inputs"]
    assert inputs["name"] == "proj-1234-dev-tpu-stack"
    assert inputs["project"] == "proj-1234"
    assert inputs["location"] == "US-CENTRAL1"
    assert inputs["uniformBucketLevelAccess"] is True
    assert inputs["publicAccessPrevention"] == "enforced"
    assert inputs["versioning"] == {"enabled": True}
    assert inputs["labels"] == {"managed-by": "pulumi", "app": "tpu-stack", "env": "dev", "team": "ml"}
    assert plan.outputs["bucketUrl"] == "gs://proj-1234-dev-tpu-stack"
    assert plan.outputs["bucketName"] == "proj-1234-dev-tpu-stack"


def test_old_object_versions_expire(run: StackRunner) -> None:
    inputs = the_bucket(run({"tpu-stack:bucket": {"noncurrentVersionDays": 7}}))["inputs"]
    assert inputs["lifecycleRules"] == [
        {"action": {"type": "Delete"}, "condition": {"daysSinceNoncurrentTime": 7, "withState": "ARCHIVED"}}
    ]


def test_name_and_location_from_config(run: StackRunner) -> None:
    inputs = the_bucket(run({"tpu-stack:bucket": {"name": "ml-checkpoints_1", "location": "us"}}))["inputs"]
    assert (inputs["name"], inputs["location"]) == ("ml-checkpoints_1", "US")


ALERTS = {"tpu-stack:monitoring": {"notificationChannels": ["projects/proj-1234/notificationChannels/1"]}}
"""What a protected stack must name (issue 27, defect 11)."""


@pytest.mark.parametrize(
    ("stack", "throwaway", "protect", "force_destroy"),
    [("prod", False, True, None), ("dev", False, True, None), ("dev", True, False, True)],
)
def test_protected_and_kept_unless_throwaway(
    run: StackRunner, stack: str, throwaway: bool, protect: bool, force_destroy: bool | None
) -> None:
    bucket = the_bucket(run({"tpu-stack:throwaway": throwaway, **ALERTS}, stack=stack))
    assert bucket["protect"] is protect
    assert bucket["inputs"].get("forceDestroy") is force_destroy


def test_bucket_waits_for_nothing(run: StackRunner) -> None:
    """The bucket is created in parallel with the cluster: it is off the critical path of `pulumi up`."""
    assert the_bucket(run())["dependencies"] == []


LONG_STACK = "integration-" + "x" * 40
CASES = [
    (
        "derived name too long",
        {},
        LONG_STACK,
        f"tpu-stack:bucket.name: the derived name 'proj-1234-{LONG_STACK}-tpu-stack' is 72 characters; Cloud Storage "
        "allows 3 to 63: set bucket.name",
    ),
    (
        "upper case",
        {"tpu-stack:bucket": {"name": "My-Bucket"}},
        "dev",
        "tpu-stack:bucket.name: 'My-Bucket' is not a bucket name: lowercase letters, digits, '-' and '_', starting "
        "and ending with a letter or digit (dotted names need domain verification)",
    ),
    (
        "dotted",
        {"tpu-stack:bucket": {"name": "data.example.com"}},
        "dev",
        "tpu-stack:bucket.name: 'data.example.com' is not a bucket name: lowercase letters, digits, '-' and '_', "
        "starting and ending with a letter or digit (dotted names need domain verification)",
    ),
    (
        "google in the name",
        {"tpu-stack:bucket": {"name": "my-google-data"}},
        "dev",
        "tpu-stack:bucket.name: 'my-google-data' cannot start with 'goog' or contain 'google'",
    ),
    (
        "throwaway prod",
        {"tpu-stack:throwaway": True, **ALERTS},
        "prod",
        "tpu-stack:throwaway: the prod stack is protected and keeps its data (its bucket is protected); remove it",
    ),
    (
        "throwaway production",
        {"tpu-stack:throwaway": True, **ALERTS},
        "production",
        "tpu-stack:throwaway: the production stack is protected and keeps its data (its bucket is protected); "
        "remove it",
    ),
]


@pytest.mark.parametrize(("case", "extra", "stack", "message"), CASES, ids=[c[0] for c in CASES])
def test_bucket_config_errors(case: str, extra: dict[str, Any], stack: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load({**BASE, **extra}, stack=stack)
    assert error.value.lines == [message]


def test_bad_bucket_name_exits_2_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Pulumi.case.yaml"
    path.write_text(yaml.safe_dump({"config": {**BASE, "tpu-stack:bucket": {"name": "ab"}}}))
    assert cli.main(["preview", "--stack", "case", "--config", str(path), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.splitlines()[0] == (
        "error: tpu-stack:bucket.name: 'ab' is 2 characters; Cloud Storage allows 3 to 63"
    )


# ---- checkpoints (issue 27, defect 6) ---------------------------------------------------------------------------

WRITERS = {"tpu-stack:bucket": {"writers": [{"namespace": "default", "serviceAccount": "trainer"}]}}


def test_checkpoints_get_a_hierarchical_bucket_of_their_own_and_the_datasets_keep_theirs(run: StackRunner) -> None:
    """Checkpointers commit by renaming a directory; Cloud Storage FUSE renames directories only on hierarchical
    namespace buckets (atomically there), and on flat ones only below rename-dir-limit, files only, never a directory
    with subdirectories (gcsfuse docs/semantics.md, "Missing features"; the flag's default is 0, cfg/params.yaml).
    HNS is set when a bucket is created, needs uniform bucket-level access (pulumi-gcp 10.2.0 Bucket
    hierarchical_namespace; the Storage client docs) and is ForceNew in the provider: so a second bucket, created
    beside the first. No versioning and no soft delete by default: a rotated checkpoint is gone when deleted, not
    billed for weeks (pulumi-gcp soft_delete_policy: retention 0 turns soft delete off, else 7 to 90 days)."""
    plan = run(WRITERS)
    assert the_bucket(plan)["inputs"] == the_bucket(run())["inputs"]  # the datasets' bucket is unchanged
    checkpoints = plan.one(BUCKET, "data-checkpoints")
    assert checkpoints["inputs"] == {
        "name": "proj-1234-dev-tpu-stack-ckpt",
        "project": "proj-1234",
        "location": "US-CENTRAL1",
        "uniformBucketLevelAccess": True,
        "publicAccessPrevention": "enforced",
        "hierarchicalNamespace": {"enabled": True},
        "versioning": {"enabled": False},
        "softDeletePolicy": {"retentionDurationSeconds": 0},
        "labels": {"managed-by": "pulumi", "app": "tpu-stack", "env": "dev"},
    }
    assert checkpoints["protect"] is True
    assert plan.outputs["checkpointBucketUrl"] == "gs://proj-1234-dev-tpu-stack-ckpt"


def test_without_writers_there_is_no_checkpoint_bucket(run: StackRunner) -> None:
    plan = run({"tpu-stack:bucket": {"readers": [{"namespace": "default", "serviceAccount": "analyst"}]}})
    assert [b["name"] for b in plan.by_type(BUCKET)] == ["data-bucket"]
    assert "checkpointBucketUrl" not in plan.outputs


def test_checkpoint_bucket_name_soft_delete_and_throwaway_from_config(run: StackRunner) -> None:
    settings = {**WRITERS["tpu-stack:bucket"], "checkpointBucket": "ml-ckpt", "checkpointSoftDeleteDays": 7}
    plan = run({"tpu-stack:bucket": settings, "tpu-stack:throwaway": True})
    checkpoints = plan.one(BUCKET, "data-checkpoints")
    assert checkpoints["inputs"]["name"] == "ml-ckpt"
    assert checkpoints["inputs"]["softDeletePolicy"] == {"retentionDurationSeconds": 7 * 86400}
    # A throwaway stack's destroy deletes the checkpoints with their bucket; any other stack keeps them.
    assert (checkpoints["protect"], checkpoints["inputs"]["forceDestroy"]) == (False, True)


CHECKPOINT_CASES = [
    (
        "soft delete below a week",
        {"checkpointSoftDeleteDays": 3},
        "tpu-stack:bucket.checkpointSoftDeleteDays: 3 days; Cloud Storage keeps soft-deleted objects 7 to 90 days, "
        "or 0 turns soft delete off",
    ),
    (
        "derived name too long",
        {"name": "a" * 60},
        f"tpu-stack:bucket.checkpointBucket: the derived name '{'a' * 60}-ckpt' is 65 characters; Cloud Storage "
        "allows 3 to 63: set bucket.checkpointBucket",
    ),
    (
        "the datasets' bucket",
        {"name": "ml-data", "checkpointBucket": "ml-data"},
        "tpu-stack:bucket.checkpointBucket: 'ml-data' is the datasets' bucket (bucket.name); checkpoints need a "
        "bucket of their own with hierarchical namespace",
    ),
]


@pytest.mark.parametrize(("case", "extra", "message"), CHECKPOINT_CASES, ids=[c[0] for c in CHECKPOINT_CASES])
def test_checkpoint_bucket_config_errors(case: str, extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load({**BASE, "tpu-stack:bucket": {**WRITERS["tpu-stack:bucket"], **extra}}, stack="dev")
    assert error.value.lines == [message]
