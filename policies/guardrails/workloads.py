"""Workloads on the cluster: servers never on the host network, and no credential written into any object."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs
from pulumi_policy.proxy import UnknownValueError

from components import credentials

from .kubernetes import _containers, _pod_specs, _workload
from .props import as_list, prop, say

SERVER_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController", "DaemonSet", "LeaderWorkerSet")
"""Kinds that keep pods serving: their pods answer clients and read the bucket as their own service account."""
PART_OF = "app.kubernetes.io/part-of"
SERVING_PARTS = ("saxml", "llm-serving")
"""The stack's serving components (components/saxml.py and components/llm_serving.py PART_OF): whatever their kind,
their workloads serve, Saxml's model servers included, which are JobSets of TPU pods."""
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def validate_server_host_network(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """No serving pod (a vLLM Deployment, a LeaderWorkerSet's leader or workers, Saxml's servers) is on the host
    network: there it acts as the node's service account instead of its own (GKE's Workload Identity limitations),
    the NetworkPolicies that admit only the serving clients do not apply to it (Kubernetes leaves host-network pods
    out of NetworkPolicy), and it binds its ports on the node. The host network is a multislice training
    exception (no-host-namespaces), never a server's: not even a TPU model server's in a JobSet."""
    kind = args.resource_type.rsplit(":", 1)[-1]
    serving = prop(args.props, "metadata.labels", {}).get(PART_OF) in SERVING_PARTS
    if not args.resource_type.startswith("kubernetes:") or not (kind in SERVER_KINDS or serving):
        return
    for pod in _pod_specs(args.props.get("spec")):
        if pod.get("hostNetwork") is True:
            say(
                report,
                f"a pod template of this {kind} sets hostNetwork: its pods serve clients and must stay off the host "
                "network (it bypasses Workload Identity and the serving NetworkPolicies); remove hostNetwork",
            )


def _known(read: Any) -> Any:
    try:
        return read()
    except UnknownValueError:
        return None  # computed by the cloud; a credential is never one of those


def _env_problems(container: Mapping[str, Any]) -> Iterator[str]:
    name = container.get("name")
    for entry in as_list(container.get("env")):
        if not isinstance(entry, Mapping):
            continue
        value = _known(lambda entry=entry: entry.get("value"))
        if not isinstance(value, str) or not value:
            continue
        variable = str(entry.get("name"))
        if credentials.contains_credential(value) or credentials.secret_env(variable, value):
            yield (
                f"container {name!r}: env {variable} is a literal value that reads as a credential (not repeated "
                "here); anyone who can read the object sees it and the stack's state keeps it: take it from a Secret "
                "(valueFrom.secretKeyRef) or mount the Secret as a file"
            )


def _arg_problems(container: Mapping[str, Any]) -> Iterator[str]:
    """A credential flag of vLLM given a value, however written (`--api_key=`, a shell script's `--api-key x`), or a
    credential of a known form anywhere in the command line."""
    name = container.get("name")
    items = [_known(lambda item=item: item) for kind in ("command", "args") for item in as_list(container.get(kind))]
    for index, item in enumerate(items):
        if not isinstance(item, str):
            continue
        valued = [flag for flag, value in credentials.credential_flags(item) if value or index + 1 < len(items)]
        if valued or credentials.contains_credential(item):
            what = f"sets {valued[0]}" if valued else "holds a credential (not repeated here)"
            yield (
                f"container {name!r}: an argument {what}; arguments are readable by anyone who can read the object: "
                "pass the credential from a Secret (an environment variable from secretKeyRef, or a mounted file)"
            )


def validate_literal_secrets(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A credential belongs in a Secret, referenced by the pods that need it: written literally into a workload's
    environment or arguments, or into a ConfigMap, it is readable by whoever can read the object (RBAC's `get` on
    Deployments is common, on Secrets rare) and kept in the stack's state in clear. The stack's own servers read the
    Hugging Face token from a mounted Secret (HF_TOKEN_PATH)."""
    if args.resource_type == CONFIG_MAP:
        data = args.props.get("data")
        for key, value in data.items() if isinstance(data, Mapping) else ():
            if isinstance(value, str) and credentials.contains_credential(value):
                say(report, f"data.{key} holds a credential (not repeated here): keep it in a Secret, not a ConfigMap")
        return
    if not _workload(args):
        return
    for pod in _pod_specs(args.props.get("spec")):
        for container in _containers(pod):
            for problem in (*_env_problems(container), *_arg_problems(container)):
                say(report, problem)
