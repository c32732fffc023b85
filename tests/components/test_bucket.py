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
    (bucket,) = plan.by_type(BUCKET)
    return bucket


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


@pytest.mark.parametrize(
    ("stack", "throwaway", "protect", "force_destroy"),
    [("prod", False, True, None), ("dev", False, True, None), ("dev", True, False, True)],
)
def test_protected_and_kept_unless_throwaway(
    run: StackRunner, stack: str, throwaway: bool, protect: bool, force_destroy: bool | None
) -> None:
    bucket = the_bucket(run({"tpu-stack:throwaway": throwaway}, stack=stack))
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
        {"tpu-stack:throwaway": True},
        "prod",
        "tpu-stack:throwaway: the prod stack is protected and keeps its data (its bucket is protected); remove it",
    ),
    (
        "throwaway production",
        {"tpu-stack:throwaway": True},
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
