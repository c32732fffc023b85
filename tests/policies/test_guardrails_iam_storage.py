"""policies/guardrails/iam_storage.py: what may be granted on a bucket, the servers' folder-limited write, and the
roles no project-wide grant may carry."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from tests.policies.test_rules import check, res

MEMBER = "principal://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p.svc.id.goog/subject/ns/llm/sa/vllm"
CACHE_ONLY = {
    "title": "vllm-cache-only",
    "expression": 'resource.name.startsWith("projects/_/buckets/b/objects/vllm-cache/")',
}


def grant(name: str, role: str, member: str = MEMBER, **inputs: Any) -> dict[str, Any]:
    return res("gcp:storage/bucketIAMMember:BucketIAMMember", name, {"bucket": "b", "role": role, "member": member,
                                                                     **inputs})  # fmt: skip


def messages(rules: ModuleType, resources: list[dict[str, Any]], policy: str) -> list[tuple[str, str]]:
    return [(v["urn"].rsplit("::", 1)[1], v["message"]) for v in check(rules, resources) if v["policy"] == policy]


def test_the_servers_read_everywhere_and_write_only_where_their_condition_says(rules: ModuleType) -> None:
    viewer = grant("viewer", "roles/storage.objectViewer")
    assert messages(rules, [viewer, grant("cache", "roles/storage.objectUser", condition=CACHE_ONLY)],
                    "bucket-grants") == []  # fmt: skip
    assert messages(rules, [viewer, grant("cache", "roles/storage.objectUser")], "bucket-grants") == [
        ("cache", f"{MEMBER} reads bucket b and holds roles/storage.objectUser there without a condition: it may "
                  "overwrite and delete every object; keep the condition that limits its writes to its folder"),
    ]  # fmt: skip


def test_a_writer_of_the_whole_bucket_is_a_writer(rules: ModuleType) -> None:
    """Training writers hold objectUser on the bucket and nothing else: their checkpoints are theirs to manage."""
    assert messages(rules, [grant("trainer", "roles/storage.objectUser", member="principal://x/ns/training/sa/t")],
                    "bucket-grants") == []  # fmt: skip


@pytest.mark.parametrize(
    "role", ["roles/storage.objectAdmin", "roles/storage.admin", "roles/storage.legacyBucketOwner", "roles/owner"]
)
def test_bucket_grants_are_object_roles(rules: ModuleType, role: str) -> None:
    assert messages(rules, [grant("reader", role)], "bucket-grants") == [
        ("reader", f"{role} on a bucket reaches past its objects (folder or bucket IAM policies, the bucket itself): "
                   "grant roles/storage.objectViewer to read or roles/storage.objectUser to write"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "role",
    ["roles/iam.serviceAccountTokenCreator", "roles/iam.serviceAccountUser", "roles/iam.workloadIdentityUser",
     "roles/iam.serviceAccountKeyAdmin"],
)  # fmt: skip
def test_no_project_wide_grant_to_act_as_every_service_account(rules: ModuleType, role: str) -> None:
    member = "serviceAccount:tpu-dev-nodes@proj.iam.gserviceaccount.com"
    project = res("gcp:projects/iAMMember:IAMMember", "nodes-role", {"role": role, "member": member})
    assert messages(rules, [project], "least-privilege-iam") == [
        ("nodes-role", f"{role} on a whole project/folder/organization lets the member act as every service account "
                       "in it: grant it on the one service account that needs it"),
    ]  # fmt: skip
    # On one service account, the way the stack grants a workload its Google account, it is that account only.
    one = res(
        "gcp:serviceaccount/iAMMember:IAMMember",
        "wi-user",
        {"role": role, "member": member, "serviceAccountId": "projects/p/serviceAccounts/a"},
    )
    assert messages(rules, [one], "least-privilege-iam") == []
