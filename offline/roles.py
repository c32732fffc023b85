"""The IAM roles the identities that run `pulumi` need, derived from the resource types a stack declares.

`python -m offline roles --stack NAME` runs the stack offline and prints, for each role, where it is granted and
which of the stack's resource types need it. A type this table has no row for stops the command: a new kind of
resource is a question about its permissions before it ships. Roles are Google's predefined ones
(cloud.google.com/iam/docs/roles-permissions), the narrowest that hold the create, update, delete and IAM-policy
permissions each type's provider calls. Where a role could grant its holder more than the stack needs, the command
prints the limit to grant it with: roles/resourcemanager.projectIamAdmin only for the roles the stack grants
(docs.cloud.google.com/iam/docs/setting-limits-on-granting-roles), roles/iam.serviceAccountUser narrowed to the
node service accounts once they exist (docs/security.md, The identities that run pulumi).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Grant:
    role: str
    on: str
    """Where it is granted: `project`, `node service account`, `state bucket`, `secrets key`."""
    why: str


NODE_ACCOUNT_USER = Grant(
    "roles/iam.serviceAccountUser",
    "project",
    "create nodes that run as the stack's node service accounts (iam.serviceAccounts.actAs; GKE: \"To set a "
    "service account on nodes, you must also have the Service Account User role on the user-managed service "
    'account")',
)
"""On the project, because a new stack's first `up` creates the node service account and, in the same update, the
cluster and pools that run as it: there is no account to grant it on before. Narrowed to those accounts afterwards
(`narrowing`). The stack does not grant it to the deploy identity itself: the grant would need that identity named in
config, and IAM changes take minutes to reach every check, so a cluster created right after the grant can still be
refused (docs.cloud.google.com/iam/docs/access-change-propagation)."""

PROJECT_IAM_ADMIN = "roles/resourcemanager.projectIamAdmin"

DEPLOY_ROLES: Mapping[str, tuple[Grant, ...]] = {
    "gcp:projects/service:Service": (
        Grant("roles/serviceusage.serviceUsageAdmin", "project", "enable the APIs the stack calls"),
    ),
    "gcp:compute/network:Network": (Grant("roles/compute.networkAdmin", "project", "the VPC, subnetworks, Cloud NAT"),),
    "gcp:compute/subnetwork:Subnetwork": (
        Grant("roles/compute.networkAdmin", "project", "the VPC, subnetworks, Cloud NAT"),
    ),
    "gcp:compute/router:Router": (Grant("roles/compute.networkAdmin", "project", "the VPC, subnetworks, Cloud NAT"),),
    "gcp:compute/routerNat:RouterNat": (
        Grant("roles/compute.networkAdmin", "project", "the VPC, subnetworks, Cloud NAT"),
    ),
    "gcp:compute/firewall:Firewall": (
        Grant("roles/compute.securityAdmin", "project", "the firewall rule from the control plane to the webhooks"),
    ),
    "gcp:compute/futureReservation:FutureReservation": (
        Grant("roles/compute.admin", "project", "calendar-mode future reservations (compute.futureReservations.*)"),
    ),
    # compute.resourcePolicies.* is in roles/compute.admin (every compute.* permission); the copies of Google's role
    # page at hand cut off before a narrower role's list, so the stack asks for the one that surely holds it.
    "gcp:compute/resourcePolicy:ResourcePolicy": (
        Grant(
            "roles/compute.admin",
            "project",
            "TPU7x workload policies that place multi-host slices (compute.resourcePolicies.*)",
        ),
    ),
    "gcp:container/cluster:Cluster": (
        Grant(
            "roles/container.admin",
            "project",
            "clusters and node pools, and every Kubernetes object in them (CRDs, ClusterRoles, webhooks)",
        ),
        NODE_ACCOUNT_USER,
    ),
    "gcp:container/nodePool:NodePool": (
        Grant(
            "roles/container.admin",
            "project",
            "clusters and node pools, and every Kubernetes object in them (CRDs, ClusterRoles, webhooks)",
        ),
        NODE_ACCOUNT_USER,
    ),
    "gcp:serviceaccount/account:Account": (
        Grant("roles/iam.serviceAccountAdmin", "project", "the node and workload service accounts and their IAM"),
    ),
    "gcp:serviceaccount/iAMMember:IAMMember": (
        Grant("roles/iam.serviceAccountAdmin", "project", "the node and workload service accounts and their IAM"),
    ),
    "gcp:projects/iAMMember:IAMMember": (
        Grant(PROJECT_IAM_ADMIN, "project", "the node accounts' project roles, with the condition below"),
    ),
    "gcp:storage/bucket:Bucket": (Grant("roles/storage.admin", "project", "the data bucket and its IAM"),),
    "gcp:storage/bucketIAMMember:BucketIAMMember": (
        Grant("roles/storage.admin", "project", "the data bucket and its IAM"),
    ),
    "gcp:monitoring/alertPolicy:AlertPolicy": (
        Grant("roles/monitoring.alertPolicyEditor", "project", "the alert policies"),
    ),
    "gcp:monitoring/dashboard:Dashboard": (Grant("roles/monitoring.dashboardEditor", "project", "the dashboard"),),
}
"""Resource type -> what the deploy identity needs to create, change and delete it."""

NEEDS_NO_GRANT = ("tpu-stack:", "pulumi:providers:", "kubernetes:")
"""Components, provider resources, and Kubernetes objects (roles/container.admin reaches the Kubernetes API)."""

BACKEND_GRANTS: tuple[tuple[str, Grant], ...] = (
    ("deploy", Grant("roles/storage.objectAdmin", "state bucket", "read and write the stack's state and its lock")),
    (
        "preview",
        # pulumi's DIY backend reads the state and takes no lock for a preview (pkg/backend/diy/backend.go: Preview
        # calls no Lock; Update, Refresh, Destroy and Import do); roles/viewer grants no object reads.
        Grant("roles/storage.objectViewer", "state bucket", "read the stack's state (a preview takes no lock)"),
    ),
    ("deploy", Grant("roles/cloudkms.cryptoKeyEncrypterDecrypter", "secrets key", "encrypt and decrypt its secrets")),
    ("preview", Grant("roles/cloudkms.cryptoKeyDecrypter", "secrets key", "decrypt its secrets")),
    ("preview", Grant("roles/viewer", "project", "read every resource the preview diffs")),
    (
        "preview",
        Grant(
            "roles/container.clusterViewer",
            "project",
            "get and list the cluster, which the kubernetes provider needs to reach its endpoint; it grants no "
            "Kubernetes objects (container.<kind>.get/list are roles/container.viewer's)",
        ),
    ),
)
"""What each identity needs whatever the stack declares: a `gs://` state backend, the Cloud KMS key of the stack's
secrets, and the preview's read access."""


class UnknownType(KeyError):
    pass


def deploy_roles(types: Iterable[str]) -> dict[Grant, list[str]]:
    """Grant -> the declared types that need it, in the order the table lists the grants."""
    needed: dict[Grant, list[str]] = {}
    for type_token in sorted(set(types)):
        if type_token.startswith(NEEDS_NO_GRANT):
            continue
        if type_token not in DEPLOY_ROLES:
            raise UnknownType(f"no IAM role is known for {type_token}: add it to offline/roles.py DEPLOY_ROLES")
        for grant in DEPLOY_ROLES[type_token]:
            needed.setdefault(grant, []).append(type_token)
    return needed


def project_iam_condition(records: Sequence[Mapping[str, Any]]) -> str:
    """The IAM condition that lets roles/resourcemanager.projectIamAdmin add or remove only the project roles the
    stack grants (the `iam.googleapis.com/modifiedGrantsByRole` attribute: the roles a setIamPolicy call adds or
    removes; iam/docs/setting-limits-on-granting-roles). Without it the deploy identity could grant itself any role."""
    granted = sorted({str(r["inputs"]["role"]) for r in records if r["type"] == "gcp:projects/iAMMember:IAMMember"})
    listed = ", ".join(f"'{role}'" for role in granted)
    return f"api.getAttribute('iam.googleapis.com/modifiedGrantsByRole', []).hasOnly([{listed}])"


def node_accounts(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The e-mail addresses of the stack's node service accounts (the accounts each GkeCluster creates)."""
    by_urn = {r["urn"]: r for r in records}
    return sorted(
        f"{r['inputs']['accountId']}@{r['inputs']['project']}.iam.gserviceaccount.com"
        for r in records
        if r["type"] == "gcp:serviceaccount/account:Account"
        and (by_urn.get(r.get("parent") or "") or {}).get("type") == "tpu-stack:index:GkeCluster"
    )


def render(stack: str, records: Sequence[Mapping[str, Any]]) -> str:
    needed = deploy_roles(str(r["type"]) for r in records)
    lines = [f"Roles of the identity that runs `pulumi up --stack {stack}`:"]
    for grant, types in needed.items():
        short = ", ".join(t.split(":")[-1] for t in types)
        where = (
            "the project (a new stack; narrow it after the first `up`, below)" if grant == NODE_ACCOUNT_USER else
            f"the {grant.on}"
        )  # fmt: skip
        lines.append(f"  {grant.role} on {where}: {grant.why} ({short})")
        if grant.role == PROJECT_IAM_ADMIN:
            lines.append(f"    condition: {project_iam_condition(records)}")
    lines += [f"  {g.role} on the {g.on}: {g.why}" for who, g in BACKEND_GRANTS if who == "deploy"]
    if NODE_ACCOUNT_USER in needed:
        lines.append(
            "Once the node service accounts exist (after the first `up`), grant roles/iam.serviceAccountUser on each "
            "of them instead and remove the project grant, which lets its holder act as every service account of "
            "the project:"
        )
        lines += [f"  {account}" for account in node_accounts(records)]
    lines.append(f"Roles of the identity that runs `pulumi preview --stack {stack}` (pull requests):")
    lines += [f"  {g.role} on the {g.on}: {g.why}" for who, g in BACKEND_GRANTS if who == "preview"]
    return "\n".join(lines)
