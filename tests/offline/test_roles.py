"""The deploy and preview identities' roles, derived from what a stack declares (issue 27, defect 3; review points 3, 4,
7 and 8). Expected roles written from Google's role pages: docs.cloud.google.com/iam/docs/roles-permissions/container
(roles/container.admin: "To set a service account on nodes, you must also have the Service Account User role ... on
the user-managed service account"), .../compute (roles/compute.admin: every compute.* permission, resource policies
included), and iam/docs/setting-limits-on-granting-roles (the `iam.googleapis.com/modifiedGrantsByRole` condition).
"""

from __future__ import annotations

import pytest

from offline import roles
from offline.__main__ import main
from tests.fixtures import FIXTURE_STACKS, stack_path, stack_plan

STACK_GRANTS = "['roles/artifactregistry.reader', 'roles/container.defaultNodeServiceAccount']"


def test_prods_deploy_roles_follow_its_resource_types() -> None:
    needed = roles.deploy_roles(r["type"] for r in stack_plan("prod", render_charts=False).resources)
    granted = {(grant.role, grant.on) for grant in needed}
    assert granted == {
        ("roles/serviceusage.serviceUsageAdmin", "project"),
        ("roles/compute.networkAdmin", "project"),
        ("roles/compute.securityAdmin", "project"),
        ("roles/container.admin", "project"),
        # Nodes run as the stack's node account, which the same first `up` creates: the project, then narrowed.
        ("roles/iam.serviceAccountUser", "project"),
        ("roles/iam.serviceAccountAdmin", "project"),
        ("roles/resourcemanager.projectIamAdmin", "project"),
        ("roles/storage.admin", "project"),
        ("roles/monitoring.alertPolicyEditor", "project"),
        ("roles/monitoring.dashboardEditor", "project"),
    }


def test_calendar_requests_add_compute_admin() -> None:
    needed = roles.deploy_roles(["gcp:compute/futureReservation:FutureReservation"])
    assert [grant.role for grant in needed] == ["roles/compute.admin"]


def test_tpu7x_workload_policies_add_compute_admin() -> None:
    """Ironwood's multi-host pools are placed by a Compute workload policy (compute.resourcePolicies.*)."""
    needed = roles.deploy_roles(["gcp:compute/resourcePolicy:ResourcePolicy"])
    assert [grant.role for grant in needed] == ["roles/compute.admin"]


def test_a_type_without_a_row_stops_the_command() -> None:
    with pytest.raises(roles.UnknownType, match="no IAM role is known for gcp:new/thing:Thing"):
        roles.deploy_roles(["gcp:new/thing:Thing"])


@pytest.mark.parametrize("stack", FIXTURE_STACKS)
def test_the_roles_command_knows_every_type_of_every_fixture_stack(
    stack: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new resource type without a row fails here, not in front of a user."""
    assert main(["roles", "--stack", stack, "--config", str(stack_path(stack))]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Roles of the identity that runs `pulumi up --stack {stack}`:")
    if stack == "ironwood":
        assert "roles/compute.admin on the project" in out and "ResourcePolicy" in out


def test_the_node_account_user_is_granted_on_the_project_for_a_new_stack_then_narrowed() -> None:
    """The first `up` creates the node service account and, in the same update, the cluster and pools that run as it:
    there is no account to grant the role on before that `up`."""
    text = roles.render("multiregion", stack_plan("multiregion", render_charts=False).resources)
    line = next(line for line in text.splitlines() if "roles/iam.serviceAccountUser" in line)
    assert line.startswith("  roles/iam.serviceAccountUser on the project (a new stack; narrow it after the first")
    narrow = text[text.index("Once the node service accounts exist") :]
    for account in ("tpu-mr-manager-nodes", "tpu-mr-east5-nodes", "tpu-mr-japan-nodes"):
        assert f"{account}@tpu-stack-multiregion.iam.gserviceaccount.com" in narrow


def test_project_iam_admin_may_grant_only_the_roles_the_stack_grants() -> None:
    """Without a condition, roles/resourcemanager.projectIamAdmin lets the deploy identity grant itself roles/owner."""
    records = stack_plan("prod", render_charts=False).resources
    assert roles.project_iam_condition(records) == (
        f"api.getAttribute('iam.googleapis.com/modifiedGrantsByRole', []).hasOnly({STACK_GRANTS})"
    )
    text = roles.render("prod", records)
    line = next(line for line in text.splitlines() if "roles/resourcemanager.projectIamAdmin" in line)
    assert "with the condition below" in line
    condition = f"api.getAttribute('iam.googleapis.com/modifiedGrantsByRole', []).hasOnly({STACK_GRANTS})"
    assert f"    condition: {condition}" in text.splitlines()


def test_the_preview_identity_reads_a_gs_state_backend() -> None:
    """roles/viewer reads no object data; a preview takes no lock in pulumi's gs:// backend (pkg/backend/diy)."""
    text = roles.render("prod", stack_plan("prod", render_charts=False).resources)
    preview = text[text.index("pulumi preview") :]
    assert "roles/storage.objectViewer on the state bucket" in preview
    assert "roles/storage.objectAdmin on the state bucket" in text[: text.index("pulumi preview")]


def test_the_cluster_viewer_role_is_said_to_reach_the_cluster_not_to_read_its_objects() -> None:
    """roles/container.clusterViewer holds container.clusters.get and list: the cluster and its endpoint, no
    Kubernetes object (those are container.<kind>.get/list, in roles/container.viewer)."""
    text = roles.render("prod", stack_plan("prod", render_charts=False).resources)
    (line,) = [line for line in text.splitlines() if "roles/container.clusterViewer" in line]
    assert "Kubernetes objects" not in line.replace("no Kubernetes objects", "")
    assert "get and list the cluster" in line
