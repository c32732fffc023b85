"""WorkloadIdentity: a Kubernetes service account and exactly the bucket roles its pods need.

Two forms (facts §5). `principal` grants the roles straight to the KSA's Workload Identity principal: nothing
to impersonate, no annotation. `iamServiceAccount` is the form of the Saxml tutorial: a Google service account
gets the roles, the KSA may act as it (`roles/iam.workloadIdentityUser`) and names it in an annotation.
Either way roles are bound on the resources asked for, never on the project: the tutorial's project-wide
`roles/storage.admin` would let one pod read and delete every bucket of the project.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_gcp import organizations, serviceaccount, storage

from components.config.serving import WorkloadRef
from components.config.stack import StackConfig
from components.iam_roles import PRIMITIVE_ROLES

GSA_ANNOTATION = "iam.gke.io/gcp-service-account"
WORKLOAD_IDENTITY_USER = "roles/iam.workloadIdentityUser"
# Roles that must never reach a workload: primitive roles and bucket administration (IAM, deletion).
FORBIDDEN_ROLES = frozenset({*PRIMITIVE_ROLES, "roles/storage.admin"})


@dataclass(frozen=True)
class BucketRole:
    """`role` on one bucket; `label` keeps the binding's resource name stable and readable. `condition` (an IAM
    condition: title, description, expression) narrows the grant, e.g. to the objects under one folder."""

    label: str
    bucket: pulumi.Input[str]
    role: str
    condition: dict[str, str] | None = None


def principal(project_number: str | int, workload_pool: str, namespace: str, service_account: str) -> str:
    """The IAM principal of a KSA in a cluster's workload identity pool."""
    return (
        f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
        f"{workload_pool}/subject/ns/{namespace}/sa/{service_account}"
    )


def service_account_member(workload_pool: str, namespace: str, service_account: str) -> str:
    """The member that may impersonate a Google service account in the iamServiceAccount form."""
    return f"serviceAccount:{workload_pool}[{namespace}/{service_account}]"


def project_number(config: StackConfig) -> pulumi.Output[str] | None:
    """The project number principal members need: from config, else looked up; None if no one needs it."""
    workloads = [g[2] for g in config.bucket.grants] + [
        serving.workload for serving in (config.saxml, config.serving) if serving is not None
    ]
    if not any(w.identity == "principal" for w in workloads):
        return None
    if config.bucket.project_number is not None:
        return pulumi.Output.from_input(str(config.bucket.project_number))
    return organizations.get_project_output(project_id=config.project).number


def _slug(role: str) -> str:
    return role.split("/")[-1].replace(".", "-")


class WorkloadIdentity(pulumi.ComponentResource):
    """KSA `workload.service_account` in `namespace`, bound to `bucket_roles`.

    `namespace` is an input so a caller that creates the namespace passes its output (the KSA waits for it).
    `cluster`: IAM refuses members of a workload identity pool before a cluster has created the pool, so
    the bindings wait for it. `project_number` is needed for the principal form only.
    """

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        workload: WorkloadRef,
        bucket_roles: Sequence[BucketRole],
        provider: k8s.Provider,
        cluster: pulumi.Resource,
        namespace: pulumi.Input[str] | None = None,
        project_number: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:WorkloadIdentity", name, None, opts)
        forbidden = sorted({r.role for r in bucket_roles} & FORBIDDEN_ROLES)
        if forbidden:
            raise ValueError(f"{workload.key}: {', '.join(forbidden)} is never granted to a workload")
        pool = config.workload_pool
        ns, ksa = workload.namespace, workload.service_account
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=[cluster])

        self.google_service_account: serviceaccount.Account | None = None
        self.impersonation: serviceaccount.IAMMember | None = None
        annotations: dict[str, pulumi.Input[str]] = {}
        if workload.identity == "iamServiceAccount":
            self.google_service_account = serviceaccount.Account(
                f"{name}-gsa",
                account_id=workload.iam_account_id,
                display_name=f"Workload Identity of {workload.key}",
                project=config.project,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.impersonation = serviceaccount.IAMMember(
                f"{name}-wi-user",
                service_account_id=self.google_service_account.name,
                role=WORKLOAD_IDENTITY_USER,
                member=service_account_member(pool, ns, ksa),
                opts=after_cluster,
            )
            email: pulumi.Output[str] = self.google_service_account.email
            annotations[GSA_ANNOTATION] = email
            self.member: pulumi.Output[str] = email.apply(lambda address: f"serviceAccount:{address}")
        else:
            if project_number is None:
                raise ValueError(f"{workload.key}: the principal form needs the project number")
            self.member = pulumi.Output.from_input(project_number).apply(
                lambda number: principal(number, pool, ns, ksa)
            )

        metadata: k8s.meta.v1.ObjectMetaArgsDict = {
            "name": ksa,
            "namespace": namespace if namespace is not None else ns,
            "labels": {"app.kubernetes.io/managed-by": "pulumi"},
        }
        if annotations:
            metadata["annotations"] = annotations
        self.service_account: k8s.core.v1.ServiceAccount = k8s.core.v1.ServiceAccount(
            f"{name}-ksa",
            metadata=metadata,
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
        )
        # A principal member names the pool itself; a Google service account member does not need it.
        binding_opts = after_cluster if workload.identity == "principal" else pulumi.ResourceOptions(parent=self)
        self.bindings: list[storage.BucketIAMMember] = [
            storage.BucketIAMMember(
                f"{name}-{grant.label}-{_slug(grant.role)}",
                bucket=grant.bucket,
                role=grant.role,
                member=self.member,
                condition=(
                    storage.BucketIAMMemberConditionArgsDict(
                        title=grant.condition["title"],
                        description=grant.condition.get("description"),
                        expression=grant.condition["expression"],
                    )
                    if grant.condition
                    else None
                ),
                opts=binding_opts,
            )
            for grant in bucket_roles
        ]
        self.key = workload.key
        self.workload = workload
        self.annotations = annotations
        self.roles = list(dict.fromkeys(r.role for r in bucket_roles))
        self.google_service_account_email: pulumi.Output[str] | None = (
            self.google_service_account.email if self.google_service_account else None
        )
        self.register_outputs({"kubernetesServiceAccount": self.key, "member": self.member, "roles": self.roles})

    def summary(self) -> dict[str, Any]:
        """What the stack outputs say about this identity."""
        return {
            "member": self.member,
            "googleServiceAccount": self.google_service_account_email,
            "roles": self.roles,
        }


class WorkloadServiceAccounts(pulumi.ComponentResource):
    """The Kubernetes service accounts of `identities` on another cluster of the stack (a MultiKueue worker, where the
    manager's workloads run as them). A Workload Identity principal names the project's pool, the namespace and the
    account, never the cluster, so the bucket grants made once cover every cluster of the project; a Google service
    account is named by the same annotation. `namespace_name` gives the namespace as an input that waits for it."""

    def __init__(
        self,
        name: str,
        *,
        identities: Sequence[WorkloadIdentity],
        provider: k8s.Provider,
        namespace_name: Callable[[str], pulumi.Input[str]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:WorkloadServiceAccounts", name, None, opts)
        self.service_accounts: list[k8s.core.v1.ServiceAccount] = []
        for identity in identities:
            workload = identity.workload
            metadata: k8s.meta.v1.ObjectMetaArgsDict = {
                "name": workload.service_account,
                "namespace": namespace_name(workload.namespace),
                "labels": {"app.kubernetes.io/managed-by": "pulumi"},
            }
            if identity.annotations:
                metadata["annotations"] = identity.annotations
            self.service_accounts.append(
                k8s.core.v1.ServiceAccount(
                    f"{name}-{workload.namespace}-{workload.service_account}",
                    metadata=metadata,
                    opts=pulumi.ResourceOptions(parent=self, provider=provider),
                )
            )
        self.register_outputs({})
