"""MultiKueue: how the manager's Kueue reaches its workers, and the objects that make it dispatch.

A workload submitted to a team's LocalQueue on the manager reserves quota in the team's ClusterQueue there, whose
AdmissionCheck is Kueue's MultiKueue controller: it copies the workload and its JobSet or Job to every worker listed
in the MultiKueueConfig, keeps the copy the first worker admits, deletes the others and mirrors its status back
(kueue v0.19.2 pkg/controller/admissionchecks/multikueue, dispatcher AllAtOnce by default).

Credentials. Kueue reads each worker's kubeconfig from a Secret in its own namespace (key `kubeconfig`) and refuses
exec plugins, auth providers, token and CA files and skipped TLS checks there; an inline bearer token is what it
accepts (multikueuecluster.go validateKubeconfig, validateRestConfig). So each worker has a ServiceAccount of its own
for the manager, bound to a ClusterRole with only what the Job and JobSet adapters call (Kueue's
site/static/examples/multikueue/create-multikueue-kubeconfig.sh, its batch, jobset.x-k8s.io and kueue.x-k8s.io
rules), and a token Secret for it. The manager's kubeconfig names the worker's DNS endpoint, which answers with a
publicly trusted certificate (no cluster CA in the kubeconfig) and accepts Kubernetes tokens once the worker's
`enableK8sTokensViaDns` is on; the IP endpoint stays off. The token exists only in Secrets, which the kubernetes
provider keeps encrypted in the state (`data` and `stringData` are secret outputs). A new `multiKueue.tokenGeneration`
makes a new token Secret; the old one is deleted after the manager's kubeconfig names the new one, which revokes
the old token.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components import multikueue_rules
from components.config.base import KUEUE_NAMESPACE
from components.kueue_queues import MULTIKUEUE_CHECK, kueue_object

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
ADMISSION_CHECK = MULTIKUEUE_CHECK
"""The AdmissionCheck every manager ClusterQueue carries, and the MultiKueueConfig it names."""
WORKER_ACCOUNT = multikueue_rules.WORKER_ACCOUNT
"""The ServiceAccount in `kueue-system` on each worker that the manager's Kueue acts as."""
LABELS = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "multikueue"}
KUBECONFIG_KEY = "kubeconfig"
"""The key of the manager's Secret that Kueue reads (kueue.MultiKueueConfigSecretKey)."""


def _rules(rules: tuple[multikueue_rules.Rule, ...]) -> list[k8s.rbac.v1.PolicyRuleArgsDict]:
    return [{"api_groups": r["apiGroups"], "resources": r["resources"], "verbs": r["verbs"]} for r in rules]


READ_RULES = _rules(multikueue_rules.READ_RULES)
"""What the manager reads on a worker, cluster-wide (components/multikueue_rules.py)."""
DISPATCH_RULES = _rules(multikueue_rules.DISPATCH_RULES)
"""What the manager writes on a worker, only in the teams' namespaces (components/multikueue_rules.py)."""


def kubeconfig_secret_name(worker: str) -> str:
    return f"{worker}-kubeconfig"


def token_secret_name(generation: int) -> str:
    return f"{WORKER_ACCOUNT}-token-{generation}"


def admission_check() -> dict[str, Any]:
    """The check that gates every manager ClusterQueue: admitted on the manager means admitted on a worker."""
    return kueue_object(
        "AdmissionCheck",
        ADMISSION_CHECK,
        {
            "controllerName": MULTIKUEUE_CONTROLLER,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": ADMISSION_CHECK},
        },
    )


def multikueue_config(workers: Sequence[str]) -> dict[str, Any]:
    """The workers a workload is copied to; quotas on the manager are the stack's (quotaManagement Manual)."""
    return kueue_object("MultiKueueConfig", ADMISSION_CHECK, {"clusters": list(workers)})


def multikueue_cluster(worker: str) -> dict[str, Any]:
    return kueue_object(
        "MultiKueueCluster",
        worker,
        {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": kubeconfig_secret_name(worker)}}},
    )


def manager_objects(workers: Sequence[str]) -> list[dict[str, Any]]:
    """Every Kueue object of the manager's dispatch, each after the objects it names."""
    return [*(multikueue_cluster(w) for w in workers), multikueue_config(workers), admission_check()]


def worker_kubeconfig(worker: str, dns_endpoint: str, token: str) -> str:
    """The worker's DNS endpoint and the manager's token there; no CA (a public one signs the DNS endpoint)."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": worker, "cluster": {"server": f"https://{dns_endpoint}"}}],
            "users": [{"name": WORKER_ACCOUNT, "user": {"token": token}}],
            "contexts": [{"name": worker, "context": {"cluster": worker, "user": WORKER_ACCOUNT}}],
            "current-context": worker,
        },
        sort_keys=False,
    )


def _cluster_role(role: k8s.rbac.v1.ClusterRole) -> k8s.rbac.v1.RoleRefArgsDict:
    return {"api_group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.metadata.name}


def _kubeconfig_output(worker: str, endpoint: pulumi.Input[str], token: pulumi.Input[str]) -> pulumi.Output[str]:
    def render(args: list[str]) -> str:
        return worker_kubeconfig(worker, args[0], args[1])

    return pulumi.Output.all(endpoint, token).apply(render)


class MultiKueueWorker(pulumi.ComponentResource):
    """On a worker: the manager's ServiceAccount, what it may read everywhere and write in the teams' namespaces
    (`team_namespaces`: name -> the namespace resource, or None for one the stack does not create), and its token
    (`token`, secret).

    The token Secret of each `token_generation` is a resource of its own: a new generation creates the new Secret,
    the manager's kubeconfigs take its token, then the old Secret is deleted (revoking its token). In a protected
    stack that delete is refused at preview, so nothing is applied until the old Secret is unprotected first."""

    def __init__(
        self,
        name: str,
        *,
        token_generation: int,
        provider: k8s.Provider,
        namespace: k8s.core.v1.Namespace,
        team_namespaces: Mapping[str, k8s.core.v1.Namespace | None],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:MultiKueueWorker", name, None, opts)
        in_cluster = pulumi.ResourceOptions(parent=self, provider=provider)
        labels = LABELS
        self.service_account: k8s.core.v1.ServiceAccount = k8s.core.v1.ServiceAccount(
            f"{name}-account",
            metadata={"name": WORKER_ACCOUNT, "namespace": namespace.metadata.name, "labels": labels},
            automount_service_account_token=False,
            opts=in_cluster,
        )
        subjects: list[k8s.rbac.v1.SubjectArgsDict] = [
            {"kind": "ServiceAccount", "name": self.service_account.metadata.name, "namespace": KUEUE_NAMESPACE}
        ]
        self.read_role: k8s.rbac.v1.ClusterRole = k8s.rbac.v1.ClusterRole(
            f"{name}-read-role",
            metadata={"name": multikueue_rules.READ_ROLE, "labels": labels},
            rules=READ_RULES,
            opts=in_cluster,
        )
        self.read_binding: k8s.rbac.v1.ClusterRoleBinding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-read-binding",
            metadata={"name": f"{WORKER_ACCOUNT}-read", "labels": labels},
            role_ref=_cluster_role(self.read_role),
            subjects=subjects,
            opts=in_cluster,
        )
        self.dispatch_role: k8s.rbac.v1.ClusterRole = k8s.rbac.v1.ClusterRole(
            f"{name}-dispatch-role",
            metadata={"name": multikueue_rules.DISPATCH_ROLE, "labels": labels},
            rules=DISPATCH_RULES,
            opts=in_cluster,
        )
        # Kueue writes a workload's copies in the workload's own namespace (kueue v0.19.2 multikueue/workload.go).
        self.dispatch_bindings: list[k8s.rbac.v1.RoleBinding] = [
            k8s.rbac.v1.RoleBinding(
                f"{name}-dispatch-{team_namespace}",
                metadata={
                    "name": f"{WORKER_ACCOUNT}-dispatch",
                    "namespace": resource.metadata.name if resource is not None else team_namespace,
                    "labels": labels,
                },
                role_ref=_cluster_role(self.dispatch_role),
                subjects=subjects,
                opts=in_cluster,
            )
            for team_namespace, resource in team_namespaces.items()
        ]
        # The token controller fills the Secret only once its ServiceAccount exists; the provider waits for the
        # token before it reports the Secret created.
        self.token_secret: k8s.core.v1.Secret = k8s.core.v1.Secret(
            f"{name}-token-{token_generation}",
            metadata={
                "name": token_secret_name(token_generation),
                "namespace": namespace.metadata.name,
                "labels": labels,
                "annotations": {"kubernetes.io/service-account.name": WORKER_ACCOUNT},
            },
            type="kubernetes.io/service-account-token",
            opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[self.service_account])),
        )
        self.token: pulumi.Output[str] = pulumi.Output.secret(
            self.token_secret.data.apply(lambda data: base64.b64decode((data or {}).get("token", "")).decode())
        )
        self.bindings: list[pulumi.Resource] = [self.read_binding, *self.dispatch_bindings]
        self.register_outputs({})


class MultiKueueManager(pulumi.ComponentResource):
    """On the manager: a kubeconfig Secret and a MultiKueueCluster per worker, the MultiKueueConfig listing them
    and the AdmissionCheck (`admission_check`) the ClusterQueues wait for.

    `workers`: worker name -> (its DNS endpoint, the manager's token there, what must exist on the worker before
    the manager dispatches to it: its Kueue, its queues, the token's binding)."""

    def __init__(
        self,
        name: str,
        *,
        workers: Mapping[str, tuple[pulumi.Input[str], pulumi.Input[str], Sequence[pulumi.Resource]]],
        provider: k8s.Provider,
        namespace: k8s.core.v1.Namespace,
        kueue_chart: pulumi.Resource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:MultiKueueManager", name, None, opts)
        in_cluster = pulumi.ResourceOptions(parent=self, provider=provider)
        self.kubeconfigs: dict[str, k8s.core.v1.Secret] = {}
        declared: dict[str, k8s.apiextensions.CustomResource] = {}
        for worker, (endpoint, token, _ready) in workers.items():
            kubeconfig: pulumi.Output[str] = pulumi.Output.secret(_kubeconfig_output(worker, endpoint, token))
            metadata: k8s.meta.v1.ObjectMetaArgsDict = {
                "name": kubeconfig_secret_name(worker),
                "namespace": namespace.metadata.name,
                "labels": LABELS,
            }
            self.kubeconfigs[worker] = k8s.core.v1.Secret(
                f"{name}-{worker}-kubeconfig",
                metadata=metadata,
                type="Opaque",
                string_data={KUBECONFIG_KEY: kubeconfig},
                opts=in_cluster,
            )
        for obj in manager_objects(list(workers)):
            kind, object_name = obj["kind"], obj["metadata"]["name"]
            depends_on: list[pulumi.Resource] = [kueue_chart]
            if kind == "MultiKueueCluster":
                depends_on += [self.kubeconfigs[object_name], *workers[object_name][2]]
            elif kind == "MultiKueueConfig":
                depends_on += [declared[f"MultiKueueCluster/{w}"] for w in workers]
            else:
                depends_on.append(declared[f"MultiKueueConfig/{ADMISSION_CHECK}"])
            declared[f"{kind}/{object_name}"] = k8s.apiextensions.CustomResource(
                f"{name}-{kind.lower()}-{object_name}",
                api_version=obj["apiVersion"],
                kind=kind,
                metadata=obj["metadata"],
                spec=obj["spec"],
                opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=depends_on)),
            )
        self.admission_check: k8s.apiextensions.CustomResource = declared[f"AdmissionCheck/{ADMISSION_CHECK}"]
        self.register_outputs({})
