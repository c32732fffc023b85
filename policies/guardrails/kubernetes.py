"""Kubernetes objects: load balancers, pod privileges and host namespaces, default-deny network policies,
pinned charts and images.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs, StackValidationArgs

from components import images, tpu_catalog

from .props import (
    CHARTS,
    NAMESPACE,
    NETWORK_POLICY,
    PROTECTED_STACKS_SCHEMA,
    SERVICE,
    as_list,
    config_list,
    prop,
    protected_stack,
    say,
    string_list_schema,
)

WIDEST_PREFIX = {4: 8, 6: 16}
"""Widest load-balancer source range (IPv4 /8, IPv6 /16): a shorter prefix covers a large part of the internet."""
INTERNAL_LB_ANNOTATIONS = ("networking.gke.io/load-balancer-type", "cloud.google.com/load-balancer-type")
EXACT_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def validate_load_balancer(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A LoadBalancer without source ranges is open to the internet (external) or the whole VPC (internal)."""
    props = args.props
    if args.resource_type != SERVICE or prop(props, "spec.type") != "LoadBalancer":
        return
    annotations = prop(props, "metadata.annotations", {})
    internal = any(str(annotations.get(key, "")).lower() == "internal" for key in INTERNAL_LB_ANNOTATIONS)
    allowed_text = config_list(args, "allowedSourceRanges", [])
    allowed = [ipaddress.ip_network(r, strict=False) for r in allowed_text]
    ranges = [str(r) for r in as_list(prop(props, "spec.loadBalancerSourceRanges"))]
    if not ranges:
        where = "every address in the VPC" if internal else "every address"
        say(report, f"LoadBalancer open to {where}: set spec.loadBalancerSourceRanges to the client CIDRs")
        return
    for text in ranges:
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            say(report, f"spec.loadBalancerSourceRanges entry {text!r} is not a CIDR range")
            continue
        inside = any(network.version == a.version and network.subnet_of(a) for a in allowed)  # type: ignore[arg-type]
        if allowed and not inside:
            say(
                report,
                f"spec.loadBalancerSourceRanges entry {text} is outside the allowed ranges "
                f"({', '.join(allowed_text)}): narrow it or add it to allowedSourceRanges",
            )
        elif not allowed and network.prefixlen < WIDEST_PREFIX[network.version]:
            say(
                report,
                f"spec.loadBalancerSourceRanges entry {text} covers a large part of the internet: narrow it to "
                f"/{WIDEST_PREFIX[network.version]} or less, or allow it explicitly in allowedSourceRanges",
            )


def _pod_specs(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every pod spec in an object (Pod, Deployment, Job, JobSet, CronJob, ...): the mappings with `containers`."""
    if isinstance(value, Mapping):
        if isinstance(value.get("containers"), Sequence):
            yield value
        for key, child in value.items():
            if key not in ("containers", "initContainers", "status"):
                yield from _pod_specs(child)
    elif isinstance(value, Sequence) and not isinstance(value, str):
        for child in value:
            yield from _pod_specs(child)


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    kinds = ("initContainers", "containers", "ephemeralContainers")
    return [c for kind in kinds for c in as_list(pod.get(kind)) if isinstance(c, Mapping)]


def _requests_tpu(pod: Mapping[str, Any]) -> bool:
    for container in _containers(pod):
        for part in ("requests", "limits"):
            amount = prop(container, f"resources.{part}", {}).get(tpu_catalog.TPU_RESOURCE)
            if amount not in (None, 0, "0"):
                return True
    return False


NO_POD_SPECS = (*CHARTS, "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition")
"""Kubernetes types that never hold a pod spec; a CRD's schema is large and only describes pods."""


def _workload(args: ResourceValidationArgs) -> bool:
    return args.resource_type.startswith("kubernetes:") and args.resource_type not in NO_POD_SPECS


def validate_privileged(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """No privileged containers: GKE 1.28+ (the stack's floor is 1.33) gives TPU pods their chips without it."""
    if not _workload(args):
        return
    for pod in _pod_specs(args.props.get("spec")):
        privileged = [c.get("name") for c in _containers(pod) if prop(c, "securityContext.privileged") is True]
        if privileged:
            names = ", ".join(str(n) for n in privileged)
            say(report, f"container(s) {names} run privileged: remove securityContext.privileged (TPUs do not need it)")


def validate_host_namespaces(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Host PID/IPC and added capabilities reach the node; the host network only for TPU pods (multislice DCN)."""
    if not _workload(args):
        return
    for pod in _pod_specs(args.props.get("spec")):
        for field in ("hostPID", "hostIPC"):
            if pod.get(field) is True:
                say(report, f"pod sets {field}: remove it, no workload of the stack needs the node's {field[4:]}")
        if pod.get("hostNetwork") is True and not _requests_tpu(pod):
            say(
                report,
                f"pod on the host network requests no {tpu_catalog.TPU_RESOURCE}: remove hostNetwork (it also "
                "bypasses Workload Identity and NetworkPolicies)",
            )
        for container in _containers(pod):
            added = as_list(prop(container, "securityContext.capabilities.add"))
            if added:
                caps = ", ".join(str(c) for c in added)
                say(report, f"container {container.get('name')} adds capabilities {caps}: drop ALL and add none")


def _closed_directions(spec: Mapping[str, Any]) -> set[str]:
    """The directions a NetworkPolicy closes for every pod of its namespace: those it governs with no rule at all.
    Left out, policyTypes is what the API server sets: Ingress, and Egress only for a policy with egress rules,
    which then leave egress open, so only Ingress can be closed."""
    if prop(spec, "podSelector.matchLabels") or prop(spec, "podSelector.matchExpressions"):
        return set()
    types = {str(t) for t in as_list(spec.get("policyTypes"))} or {"Ingress"}
    return {t for t in types if not spec.get(t.lower())}


def validate_default_deny(args: StackValidationArgs, report: ReportViolation) -> None:
    """Every namespace the stack creates denies all ingress and egress by default: one NetworkPolicy or, as
    Kubernetes' own default policies do, one per direction."""
    created = {str(prop(r.props, "metadata.name")) for r in args.resources if r.resource_type == NAMESPACE}
    closed: dict[str, set[str]] = {}
    for r in args.resources:
        if r.resource_type == NETWORK_POLICY:
            namespace = str(prop(r.props, "metadata.namespace"))
            closed.setdefault(namespace, set()).update(_closed_directions(r.props.get("spec") or {}))
    denied = {namespace for namespace, directions in closed.items() if directions >= {"Ingress", "Egress"}}
    for namespace in sorted(created - denied):
        say(
            report,
            f"namespace {namespace} has no default-deny NetworkPolicy: add one with podSelector {{}} and "
            "policyTypes Ingress and Egress, then allow what its pods need",
        )


def _image_problem(image: str) -> str | None:
    if "@sha256:" in image:
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return f"image {image!r} has no tag: pin a version tag or a digest"
    if last.rsplit(":", 1)[1] == "latest":
        return f"image {image!r} uses :latest: pin a version tag or a digest"
    moving = images.moving_tag_problem(image)
    return f"image {image!r}: {moving}" if moving else None


HELM_CHART_LABEL = "helm.sh/chart"
_CHART_LABEL = re.compile(r"^(?P<name>.+?)-(?P<version>v?\d+\.\d+\.\d+\S*)$")


def validate_pinned(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """An unpinned chart or image changes under the stack without a diff in any preview.

    A Helm v4 Chart is a remote component: the real engine shows it to the pack with no properties, so its
    version is checked where the engine does show it, on every object the chart renders (`helm.sh/chart:
    <name>-<version>`), beside their images. A chart resource that does carry properties (a v3 Release, or a
    Chart in a unit test) is checked directly."""
    props = args.props
    if args.resource_type in CHARTS:
        if not props:
            return  # a remote component: its rendered objects carry the version
        version = props.get("version")
        if not isinstance(version, str) or not EXACT_VERSION.match(version):
            say(report, f"chart {props.get('chart')!r} version {version!r}: set `version` to one exact release")
        return
    label = prop(props, "metadata.labels", {}).get(HELM_CHART_LABEL)
    if isinstance(label, str):
        match = _CHART_LABEL.match(label)
        if match is None or not EXACT_VERSION.match(match["version"]):
            say(report, f"rendered from chart {label!r}: pin the chart to one exact release")
    if not _workload(args):
        return
    for pod in _pod_specs(props.get("spec")):
        for container in _containers(pod):
            problem = _image_problem(str(container.get("image") or ""))
            if problem:
                say(report, f"container {container.get('name')!r}: {problem}")


DIGEST_REFERENCE = re.compile(r"@sha256:[0-9a-f]{64}$")


def _digest_exceptions(args: ResourceValidationArgs) -> dict[str, str]:
    """Reviewed image -> reason; an entry without a reason excuses nothing."""
    entries = args.get_config().get("exceptions")
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        return {}
    return {
        str(e["image"]): str(e["reason"])
        for e in entries
        if isinstance(e, Mapping) and e.get("image") and str(e.get("reason") or "").strip()
    }


def validate_image_digests(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A tag can be moved to other content; only a digest names exactly the image a protected stack was reviewed
    with. Tag-pinned images a protected stack still runs are listed, each with its reason, in the policy config
    (`exceptions`), so the list is reviewed and adding the digest ends the exception."""
    if not _workload(args):
        return
    stack = protected_stack(args, args.urn)
    if stack is None:
        return
    excepted = _digest_exceptions(args)
    for pod in _pod_specs(args.props.get("spec")):
        for container in _containers(pod):
            image = str(container.get("image") or "")
            if DIGEST_REFERENCE.search(image) or image in excepted:
                continue
            say(
                report,
                f"container {container.get('name')!r}: image {image!r} is not pinned by digest and stack {stack!r} "
                "is protected: append @sha256:<digest>, or list the image with its reason under "
                "images-by-digest.exceptions in the policy config",
            )


SOURCE_RANGES_SCHEMA = string_list_schema(
    "allowedSourceRanges", [], "CIDR ranges an external LoadBalancer may admit; empty: any range but 0.0.0.0/0"
)


IMAGE_DIGESTS_SCHEMA = PolicyConfigSchema(
    properties={
        "protectedStacks": PROTECTED_STACKS_SCHEMA.properties["protectedStacks"],
        "exceptions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"image": {"type": "string"}, "reason": {"type": "string", "minLength": 1}},
                "required": ["image", "reason"],
                "additionalProperties": False,
            },
            "default": [],
            "description": "Reviewed images a protected stack may still run by tag, each with its reason",
        },
    }
)


WEBHOOK_CONFIGURATIONS = (
    "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration",
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration",
)
KUEUE_OPTIONAL_WEBHOOKS = {
    "kueue-mutating-webhook-configuration": ("mpod.kb.io", "mdeployment.kb.io", "mstatefulset.kb.io"),
    "kueue-validating-webhook-configuration": ("vpod.kb.io", "vdeployment.kb.io", "vstatefulset.kb.io"),
}
"""Kueue's webhooks for plain Pods, Deployments and StatefulSets, which its chart makes `Ignore` while those
integrations are off, as the stack leaves them (kueue v0.19.2 charts/kueue/templates/webhook/manifests.yaml:
`failurePolicy: Fail` only when the framework is in integrations.frameworks)."""


def validate_webhooks_fail_closed(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """The controllers' admission webhooks fail closed (`failurePolicy: Fail`, the API's default): with `Ignore`, an
    object created while the controller is down is admitted unchecked, and Kueue's mutating webhook is what suspends a
    new Job, JobSet or LeaderWorkerSet until Kueue admits it: one created then runs at once, outside every quota."""
    if args.resource_type not in WEBHOOK_CONFIGURATIONS:
        return
    optional = KUEUE_OPTIONAL_WEBHOOKS.get(str(prop(args.props, "metadata.name")), ())
    for webhook in as_list(args.props.get("webhooks")):
        name = prop(webhook, "name")
        if prop(webhook, "failurePolicy", "Fail") != "Fail" and name not in optional:
            say(
                report,
                f"webhook {name} has failurePolicy {prop(webhook, 'failurePolicy')}: while its controller is down, "
                "objects would be admitted unchecked (Kueue's: unsuspended, outside every quota); set it to Fail",
            )
