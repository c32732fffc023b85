"""The deploy and preview identities' roles, derived from what a stack declares (issue 27, defect 3)."""

from __future__ import annotations

import pytest

from offline import roles
from tests.fixtures import stack_plan


def test_prods_deploy_roles_follow_its_resource_types() -> None:
    needed = roles.deploy_roles(r["type"] for r in stack_plan("prod", render_charts=False).resources)
    granted = {(grant.role, grant.on) for grant in needed}
    assert granted == {
        ("roles/serviceusage.serviceUsageAdmin", "project"),
        ("roles/compute.networkAdmin", "project"),
        ("roles/compute.securityAdmin", "project"),
        ("roles/container.admin", "project"),
        # Nodes run as the stack's node account: creating them acts as it (iam.serviceAccounts.actAs).
        ("roles/iam.serviceAccountUser", "node service account"),
        ("roles/iam.serviceAccountAdmin", "project"),
        ("roles/resourcemanager.projectIamAdmin", "project"),
        ("roles/storage.admin", "project"),
        ("roles/monitoring.alertPolicyEditor", "project"),
        ("roles/monitoring.dashboardEditor", "project"),
    }


def test_calendar_requests_add_compute_admin() -> None:
    needed = roles.deploy_roles(["gcp:compute/futureReservation:FutureReservation"])
    assert [grant.role for grant in needed] == ["roles/compute.admin"]


def test_a_type_without_a_row_stops_the_command() -> None:
    with pytest.raises(roles.UnknownType, match="no IAM role is known for gcp:new/thing:Thing"):
        roles.deploy_roles(["gcp:new/thing:Thing"])


def test_the_preview_identity_reads_a_gs_state_backend() -> None:
    """roles/viewer reads no object data; a preview takes no lock in pulumi's gs:// backend (pkg/backend/diy)."""
    text = roles.render("prod", stack_plan("prod", render_charts=False).resources)
    preview = text[text.index("pulumi preview") :]
    assert "roles/storage.objectViewer on the state bucket" in preview
    assert "roles/storage.objectAdmin on the state bucket" in text[: text.index("pulumi preview")]
