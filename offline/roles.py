"""The IAM roles the identities that run `pulumi` need, derived from the resource types a stack declares.

`python -m offline roles --stack NAME` runs the stack offline and prints, for each role, where it is granted and
which of the stack's resource types need it. A type this table has no row for stops the command: a new kind of
resource is a question about its permissions before it ships. Roles are Google's predefined ones
(cloud.google.com/iam/docs/roles-permissions), the narrowest that hold the create, update, delete and IAM-policy
permissions each type's provider calls.
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
    "gcp:container/cluster:Cluster": (
        Grant(
            "roles/container.admin",
            "project",
            "clusters and node pools, and every Kubernetes object in them (CRDs, ClusterRoles, webhooks)",
        ),
        Grant(
            "roles/iam.serviceAccountUser",
            "node service account",
            "create nodes that run as the stack's node service account (iam.serviceAccounts.actAs)",
        ),
    ),
    "gcp:container/nodePool:NodePool": (
        Grant(
            "roles/container.admin",
            "project",
            "clusters and node pools, and every Kubernetes object in them (CRDs, ClusterRoles, webhooks)",
        ),
        Grant(
            "roles/iam.serviceAccountUser",
            "node service account",
            "create nodes that run as the stack's node service account (iam.serviceAccounts.actAs)",
        ),
    ),
    "gcp:serviceaccount/account:Account": (
        Grant("roles/iam.serviceAccountAdmin", "project", "the node and workload service accounts and their IAM"),
    ),
    "gcp:serviceaccount/iAMMember:IAMMember": (
        Grant("roles/iam.serviceAccountAdmin", "project", "the node and workload service accounts and their IAM"),
    ),
    "gcp:projects/iAMMember:IAMMember": (
        Grant("roles/resourcemanager.projectIamAdmin", "project", "the node account's project roles"),
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
    ("preview", Grant("roles/container.clusterViewer", "project", "read the cluster's Kubernetes objects")),
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


def render(stack: str, records: Sequence[Mapping[str, Any]]) -> str:
    needed = deploy_roles(str(r["type"]) for r in records)
    lines = [f"Roles of the identity that runs `pulumi up --stack {stack}`:"]
    for grant, types in needed.items():
        short = ", ".join(t.split(":")[-1] for t in types)
        lines.append(f"  {grant.role} on the {grant.on}: {grant.why} ({short})")
    lines += [f"  {g.role} on the {g.on}: {g.why}" for who, g in BACKEND_GRANTS if who == "deploy"]
    lines.append(f"Roles of the identity that runs `pulumi preview --stack {stack}` (pull requests):")
    lines += [f"  {g.role} on the {g.on}: {g.why}" for who, g in BACKEND_GRANTS if who == "preview"]
    return "\n".join(lines)
