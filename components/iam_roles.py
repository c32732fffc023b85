"""Which IAM roles the stack refuses to grant, and why: one list for the config model and the policy pack.

Pure standard library, so the policy pack (which runs in its own virtualenv) imports the same rules.
"""

from __future__ import annotations

PRIMITIVE_ROLES = ("roles/owner", "roles/editor", "roles/viewer")
"""Basic roles: each grants thousands of permissions across every service of the project."""
STORAGE_ROLE_PREFIX = "roles/storage."
IMPERSONATION_ROLES = (
    "roles/iam.serviceAccountTokenCreator",
    "roles/iam.serviceAccountOpenIdTokenCreator",
    "roles/iam.serviceAccountUser",
    "roles/iam.serviceAccountKeyAdmin",
    "roles/iam.serviceAccountAdmin",
    "roles/iam.workloadIdentityUser",
)
"""Roles that let a member act as a service account (mint its tokens or keys, run as it, change its policy): granted
on a project, folder or organization they cover every service account there, those of other workloads included
(https://cloud.google.com/iam/docs/service-account-permissions). The stack grants them only on one account (a
workload's Workload Identity user)."""
ROLE_FORMS = ("roles/", "projects/", "organizations/")
"""Predefined roles, and custom roles of a project or an organization."""


def role_problem(role: str, *, wide: bool) -> str | None:
    """Why `role` must not be granted, or None. `wide`: the grant covers a whole project, folder or organization
    (where a storage role reaches every bucket in it)."""
    if role in PRIMITIVE_ROLES:
        return f"{role} is a primitive role: grant a predefined role scoped to what the member uses"
    if wide and role in IMPERSONATION_ROLES:
        return (
            f"{role} on a whole project/folder/organization lets the member act as every service account in it: grant "
            "it on the one service account that needs it"
        )
    if wide and role.startswith(STORAGE_ROLE_PREFIX):
        return (
            f"{role} on a whole project/folder/organization: grant roles/storage.objectUser "
            "(or objectViewer) on the one bucket instead"
        )
    return None
