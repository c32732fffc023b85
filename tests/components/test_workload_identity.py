"""Workload Identity: both forms exactly as GKE documents them (facts §5), and least privilege everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.config.base import ConfigError
from components.config.stack import load
from offline.engine import MOCK_PROJECT_NUMBER, Plan, run_program
from tests.conftest import BASE, StackRunner
from tests.fixtures import stack_plan

KSA = "kubernetes:core/v1:ServiceAccount"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
GSA = "gcp:serviceaccount/account:Account"
GSA_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"
CLUSTER = "gcp:container/cluster:Cluster"
PROJECT_LEVEL = (
    "gcp:projects/iAMMember:IAMMember",
    "gcp:projects/iAMBinding:IAMBinding",
    "gcp:projects/iAMPolicy:IAMPolicy",
)
PRIMITIVE = {"roles/owner", "roles/editor", "roles/viewer"}
TRAINER = {"namespace": "default", "serviceAccount": "trainer"}
PRINCIPAL = (
    f"principal://iam.googleapis.com/projects/{MOCK_PROJECT_NUMBER}/locations/global/workloadIdentityPools/"
    "proj-1234.svc.id.goog/subject/ns/default/sa/trainer"
)
SAXML = {"pool": "serve", "service": {"sourceRanges": ["10.20.0.0/24"]}}
SERVE_POOL = {"name": "serve", "machineType": "ct5lp-hightpu-4t", "topology": "4x8", "slices": 2,
              "zone": "us-central1-a"}  # fmt: skip


def bucket_with(**access: list[dict[str, Any]]) -> dict[str, Any]:
    return {"tpu-stack:bucket": access}


def ksa(plan: Plan, name: str) -> dict[str, Any]:
    (found,) = [r["inputs"] for r in plan.by_type(KSA) if r["inputs"]["metadata"]["name"] == name]
    return found


def test_principal_form_grants_the_ksa_principal_on_the_bucket_only(run: StackRunner) -> None:
    plan = run(bucket_with(writers=[TRAINER]))
    # A writer holds its role on the datasets' bucket and on the checkpoint bucket (issue 27, defect 6): folder
    # renames on a hierarchical namespace bucket need storage.folders.rename and .create, which Storage Object User
    # holds (Cloud Storage "Rename and move folders", required roles), as it holds storage.objects.list, which
    # Cloud Storage FUSE's storage layout call needs ("Get the storage layout", required roles).
    assert [b["inputs"] for b in plan.by_type(BUCKET_MEMBER)] == [
        {"bucket": "proj-1234-dev-tpu-stack", "role": "roles/storage.objectUser", "member": PRINCIPAL},
        {"bucket": "proj-1234-dev-tpu-stack-ckpt", "role": "roles/storage.objectUser", "member": PRINCIPAL},
    ]
    assert ksa(plan, "trainer") == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "trainer", "namespace": "default", "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
    }
    assert [r["name"] for r in plan.by_type(GSA)] == ["tpu-cluster-nodes"]
    assert plan.by_type(GSA_MEMBER) == []
    assert plan.outputs["identities"] == {
        "default/trainer": {"member": PRINCIPAL, "googleServiceAccount": None, "roles": ["roles/storage.objectUser"]}
    }


def test_readers_get_object_viewer(run: StackRunner) -> None:
    plan = run(bucket_with(readers=[{"namespace": "default", "serviceAccount": "eval"}], writers=[TRAINER]))
    roles = sorted(
        (r["inputs"]["member"].rsplit("/", 1)[-1], r["inputs"]["bucket"], r["inputs"]["role"])
        for r in plan.by_type(BUCKET_MEMBER)
    )
    assert roles == [
        ("eval", "proj-1234-dev-tpu-stack", "roles/storage.objectViewer"),  # readers: the datasets only
        ("trainer", "proj-1234-dev-tpu-stack", "roles/storage.objectUser"),
        ("trainer", "proj-1234-dev-tpu-stack-ckpt", "roles/storage.objectUser"),
    ]


def test_configured_project_number_is_used(run: StackRunner) -> None:
    plan = run({"tpu-stack:bucket": {"projectNumber": "42", "writers": [TRAINER]}})
    members = {b["inputs"]["member"] for b in plan.by_type(BUCKET_MEMBER)}  # on both buckets
    assert members == {PRINCIPAL.replace(MOCK_PROJECT_NUMBER, "42")}


def test_iam_service_account_form_as_in_the_saxml_tutorial(run: StackRunner) -> None:
    plan = run(bucket_with(writers=[{**TRAINER, "identity": "iamServiceAccount"}]))
    email = "default-trainer@proj-1234.iam.gserviceaccount.com"
    (account,) = [r for r in plan.by_type(GSA) if r["name"] == "default-trainer-gsa"]
    assert account["inputs"]["accountId"] == "default-trainer"
    (impersonation,) = plan.by_type(GSA_MEMBER)
    assert impersonation["inputs"] == {
        "serviceAccountId": f"projects/proj-1234/serviceAccounts/{email}",
        "role": "roles/iam.workloadIdentityUser",
        "member": "serviceAccount:proj-1234.svc.id.goog[default/trainer]",
    }
    assert ksa(plan, "trainer")["metadata"]["annotations"] == {"iam.gke.io/gcp-service-account": email}
    members = {b["inputs"]["member"] for b in plan.by_type(BUCKET_MEMBER)}  # on both buckets
    assert members == {f"serviceAccount:{email}"}
    assert plan.outputs["identities"]["default/trainer"]["googleServiceAccount"] == email


def test_explicit_google_service_account_id(run: StackRunner) -> None:
    plan = run(bucket_with(writers=[{**TRAINER, "identity": "iamServiceAccount", "iamServiceAccount": "sax-iam-sa"}]))
    assert [r["inputs"]["accountId"] for r in plan.by_type(GSA) if r["name"] == "default-trainer-gsa"] == ["sax-iam-sa"]


@pytest.mark.parametrize("identity", ["principal", "iamServiceAccount"])
def test_only_members_of_the_identity_pool_wait_for_the_cluster_that_creates_it(
    run: StackRunner, identity: str
) -> None:
    plan = run(bucket_with(writers=[{**TRAINER, "identity": identity}]))
    (cluster,) = plan.by_type(CLUSTER)
    members = plan.by_type(BUCKET_MEMBER) + plan.by_type(GSA_MEMBER)
    assert members
    for binding in members:
        in_pool = ".svc.id.goog" in binding["inputs"]["member"]
        assert (cluster["urn"] in binding["dependencies"]) == in_pool, binding["name"]
        assert not [d for d in binding["dependencies"] if "NodePool" in d or "kubernetes" in d], binding["name"]


def test_a_ksa_in_a_team_namespace_waits_for_that_namespace(run: StackRunner) -> None:
    plan = run(
        {
            "tpu-stack:tpuPools": [SERVE_POOL],
            "tpu-stack:queues": {"teams": [{"name": "ml", "shares": {"serve": 8}}]},
            **bucket_with(writers=[{"namespace": "ml", "serviceAccount": "trainer"}]),
        }
    )
    (namespace,) = [r for r in plan.by_type("kubernetes:core/v1:Namespace") if r["inputs"]["metadata"]["name"] == "ml"]
    (resource,) = [r for r in plan.by_type(KSA) if r["inputs"]["metadata"]["name"] == "trainer"]
    assert resource["inputs"]["metadata"]["namespace"] == "ml"
    assert namespace["urn"] in resource["dependencies"]


def roles_in(plan: Plan) -> list[tuple[str, str]]:
    return [(r["type"], r["inputs"]["role"]) for r in plan.resources if isinstance(r["inputs"].get("role"), str)]


@pytest.mark.parametrize("identity", ["principal", "iamServiceAccount"])
def test_no_project_level_storage_role_and_no_primitive_role(identity: str) -> None:
    config = {**BASE, "tpu-stack:tpuPools": [SERVE_POOL], "tpu-stack:saxml": {**SAXML, "identity": identity},
              **bucket_with(writers=[{**TRAINER, "identity": identity}])}  # fmt: skip
    for plan in (run_program(config, stack="dev"), stack_plan("prod"), stack_plan("dev")):
        roles = roles_in(plan)
        assert roles, plan.stack
        assert not [role for _, role in roles if role in PRIMITIVE]
        assert not [(t, role) for t, role in roles if t in PROJECT_LEVEL and role.startswith("roles/storage.")]
        # Every storage grant is a binding on one of the stack's buckets (datasets, checkpoints).
        buckets = {b["inputs"]["name"] for b in plan.by_type("gcp:storage/bucket:Bucket")}
        storage = [r for r in plan.resources if str(r["inputs"].get("role", "")).startswith("roles/storage.")]
        assert storage and {r["type"] for r in storage} == {BUCKET_MEMBER}
        assert {r["inputs"]["bucket"] for r in storage} == buckets


def test_a_forbidden_role_is_refused_by_the_component(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text(
        "from components.config import load_from_pulumi\n"
        "from components.config.serving import WorkloadRef\n"
        "from components.gke_cluster import GkeCluster\n"
        "from components.workload_identity import BucketRole, WorkloadIdentity\n"
        "config = load_from_pulumi()\n"
        "cluster = GkeCluster('c', config=config, network='tpu-stack-dev')\n"
        "WorkloadIdentity('w', config=config, workload=WorkloadRef(namespace='a', service_account='b'),\n"
        "    bucket_roles=[BucketRole('b', 'bucket', 'roles/storage.admin')], provider=cluster.provider,\n"
        "    cluster=cluster.cluster, project_number='1')\n"
    )
    with pytest.raises(ValueError, match=r"a/b: roles/storage.admin is never granted to a workload"):
        run_program(BASE, stack="dev", program=program)


CASES = [
    ("listed twice", bucket_with(readers=[TRAINER], writers=[TRAINER]),
     "tpu-stack:bucket.writers[0]: default/trainer is already listed in bucket.readers[0]; list it once"),
    ("Saxml's own account", {"tpu-stack:tpuPools": [SERVE_POOL], "tpu-stack:saxml": SAXML,
                             **bucket_with(readers=[{"namespace": "saxml", "serviceAccount": "sax-sa"}])},
     "tpu-stack:bucket.readers[0]: saxml/sax-sa is already Saxml's service account (saxml.serviceAccount); "
     "list it once"),
    ("derived account id too short", {"tpu-stack:tpuPools": [SERVE_POOL],
                                      "tpu-stack:queues": {"teams": [{"name": "ml", "shares": {"serve": 8}}]},
                                      **bucket_with(writers=[{"namespace": "ml", "serviceAccount": "b",
                                                              "identity": "iamServiceAccount"}])},
     "tpu-stack:bucket.writers[0].identity: Google service account id 'ml-b' must be 6-30 lowercase letters, digits "
     "and '-', starting with a letter; set iamServiceAccount"),
    ("namespace the stack does not have", bucket_with(writers=[{"namespace": "research", "serviceAccount": "x"}]),
     "tpu-stack:bucket.writers[0].namespace: 'research' is not a namespace the stack has; use one of default "
     "(team namespaces come from tpu-stack:queues.teams)"),
    ("account id without the form", bucket_with(writers=[{**TRAINER, "iamServiceAccount": "trainer-gsa"}]),
     "tpu-stack:bucket.writers[0].iamServiceAccount: applies only with identity: iamServiceAccount"),
    ("unknown form", bucket_with(writers=[{**TRAINER, "identity": "key"}]),
     "tpu-stack:bucket.writers[0].identity: the text 'key' is not accepted; use 'principal' or 'iamServiceAccount'"),
    ("namespace not a DNS label", bucket_with(writers=[{"namespace": "Team_A", "serviceAccount": "x"}]),
     "tpu-stack:bucket.writers[0].namespace: 'Team_A' must be a DNS label of at most 63 characters: lowercase "
     "letters, digits and '-', starting with a letter"),
    ("project number not a number", {"tpu-stack:bucket": {"projectNumber": "my-project"}},
     "tpu-stack:bucket.projectNumber: the text 'my-project' is not a whole number; write one like 4"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "extra", "message"), CASES, ids=[c[0] for c in CASES])
def test_identity_config_errors(case: str, extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load({**BASE, **extra}, stack="dev")
    assert error.value.lines == [message]
