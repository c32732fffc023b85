"""Which IAM roles the stack refuses to grant, and why: one list for the config model and the policy pack.

Pure standard library, so the policy pack (which runs in its own virtualenv) imports the same rules.
"""

from __future__ import annotations

PRIMITIVE_ROLES = ("roles/owner", "roles/editor", "roles/viewer")
"""Basic roles: each grants thousands of permissions across every service of the project."""
STORAGE_ROLE_PREFIX = "roles/storage."
ROLE_FORMS = ("roles/", "projects/", "organizations/")
"""Predefined roles, and custom roles of a project or an organization."""


def role_problem(role: str, *, wide: bool) -> str | None:
    """Why `role` must not be granted, or None. `wide`: the grant covers a whole project, folder or organization
    (where a storage role reaches every bucket in it)."""
    if role in PRIMITIVE_ROLES:
        return f"{role} is a primitive role: grant a predefined role scoped to what the member uses"
    if wide and role.startswith(STORAGE_ROLE_PREFIX):
        return (
            f"{role} on a whole project/folder/organization: grant roles/storage.objectUser "
            "(or objectViewer) on the one bucket instead"
        )
    return None
