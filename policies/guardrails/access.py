"""Who reaches what inside the cluster: the sources NetworkPolicies admit, the rights RBAC grants, and where the
MultiKueue manager's credentials for its workers live.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, ResourceValidationArgs, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from .kueue import _kueue, _object_cluster
from .props import NETWORK_POLICY, as_list, prop, say

WIDEST_PREFIX = {4: 8, 6: 16}
"""Widest client range a serving NetworkPolicy (like its load balancer) admits."""
CONTROLLER_NAMESPACES = ("kueue-system", "jobset-system", "lws-system")
"""The charts' controller namespaces: the API server calls their webhooks from the control plane, which has no
pod-network address to select, so their webhook ports admit any source (components/network_policies.py)."""
KUEUE_NAMESPACE = "kueue-system"
"""Where the stack installs Kueue, and the one namespace Kueue reads MultiKueue kubeconfigs from."""
KUBECONFIG_KEY = "kubeconfig"
SECRET = "kubernetes:core/v1:Secret"
ROLES = ("Role", "ClusterRole")
BINDINGS = ("RoleBinding", "ClusterRoleBinding")
WIDE_ROLES = ("cluster-admin", "admin", "edit")
"""Kubernetes' built-in user-facing ClusterRoles: all of a namespace's objects (admin, edit) or of the cluster."""
EVERYONE = ("system:anonymous", "system:unauthenticated", "system:authenticated")


def _rbac_kind(args: ResourceValidationArgs, kinds: tuple[str, ...]) -> bool:
    return args.resource_type.startswith("kubernetes:rbac.authorization.k8s.io/") and (
        args.resource_type.rsplit(":", 1)[-1] in kinds
    )


def _peer_problem(peer: Any) -> str | None:
    """Why a `from` peer admits every source, or a large part of the internet; None when it is a selection."""
    cidr = prop(peer, "ipBlock.cidr")
    if cidr is not None:
        try:
            network = ipaddress.ip_network(str(cidr), strict=False)
        except ValueError:
            return f"ipBlock {cidr} is not a CIDR range"
        if network.prefixlen < WIDEST_PREFIX[network.version]:
            return f"ipBlock {cidr} admits a large part of the internet"
        return None
    namespaces = peer.get("namespaceSelector") if isinstance(peer, Mapping) else None
    pods = peer.get("podSelector") if isinstance(peer, Mapping) else None
    if isinstance(namespaces, Mapping) and not namespaces and not pods:
        return "namespaceSelector {} admits every pod of every namespace"
    return None


def validate_network_policy_sources(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """An ingress rule names its sources: a rule without `from` (or with an empty one) admits every address that can
    route to the pod, internet clients of a load balancer included. The servers admit their client ranges, training
    pods their own namespace, the controllers the metrics collectors; only the charts' controller namespaces admit
    any source, and only on listed (webhook) ports."""
    if args.resource_type != NETWORK_POLICY:
        return
    namespace = prop(args.props, "metadata.namespace")
    for index, rule in enumerate(as_list(prop(args.props, "spec.ingress"))):
        peers = as_list(prop(rule, "from"))
        if not peers:
            if namespace in CONTROLLER_NAMESPACES and as_list(prop(rule, "ports")):
                continue
            say(
                report,
                f"spec.ingress[{index}] has no `from`, so it admits every source: list the clients (ipBlock of the "
                "client ranges, or pod and namespace selectors)",
            )
            continue
        for peer in peers:
            problem = _peer_problem(peer)
            if problem:
                say(report, f"spec.ingress[{index}]: {problem}; admit only the clients that need the pods")


def validate_rbac(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """No role grants every verb or every resource, and no binding hands out Kubernetes' built-in wide roles or binds
    everyone: the stack's accounts get what their controller calls (the MultiKueue manager on a worker: Kueue's
    create-multikueue-kubeconfig.sh rules, components/multikueue.py), and a token copied from one of them must not
    open the whole cluster."""
    if _rbac_kind(args, ROLES):
        for index, rule in enumerate(as_list(args.props.get("rules"))):
            wild = [field for field in ("verbs", "resources", "apiGroups") if "*" in as_list(prop(rule, field))]
            if wild:
                say(
                    report,
                    f"rules[{index}] grants '*' {' and '.join(wild)}: name the verbs, resources and API groups the "
                    "account calls",
                )
    elif _rbac_kind(args, BINDINGS):
        ref = prop(args.props, "roleRef.name")
        if prop(args.props, "roleRef.kind") == "ClusterRole" and ref in WIDE_ROLES:
            say(
                report,
                f"roleRef is the built-in ClusterRole {ref!r}, far more than any account of the stack needs: bind a "
                "role with the rules the account calls",
            )
        for subject in as_list(args.props.get("subjects")):
            if prop(subject, "name") in EVERYONE:
                say(
                    report,
                    f"subject {prop(subject, 'name')} is everyone who reaches the API server: bind named accounts",
                )


def _known_keys(resource: PolicyResource) -> set[str]:
    """The data keys of a Secret, as far as preview knows them (its token is computed on a new stack)."""
    keys: set[str] = set()
    for field in ("data", "stringData"):
        try:
            value = resource.props.get(field)
            keys |= {str(key) for key in value} if isinstance(value, Mapping) else set()
        except UnknownValueError:
            continue
    return keys


def validate_multikueue_credentials(args: StackValidationArgs, report: ReportViolation) -> None:
    """A MultiKueue kubeconfig carries the manager's token for a worker. Kueue reads it only from a Secret in its own
    namespace (kueue pkg/controller/admissionchecks/multikueue/multikueuecluster.go, the clusters reconciler's
    configNamespace), where only Kueue and the cluster's admins read Secrets; anywhere else the token is readable by
    whoever reads that namespace's Secrets and dispatch breaks. Each MultiKueueCluster names such a Secret of the
    stack, and each MultiKueueConfig only MultiKueueClusters of the stack (no dispatch to an unreviewed cluster)."""
    resources = list(args.resources)
    by_urn = {resource.urn: resource for resource in resources}
    clusters = [r for r in resources if _kueue(r, "MultiKueueCluster")]
    referenced = {
        (_object_cluster(r, by_urn), str(prop(r.props, "spec.clusterSource.kubeConfig.location")))
        for r in clusters
        if prop(r.props, "spec.clusterSource.kubeConfig.locationType", "Secret") == "Secret"
    }
    kubeconfigs: set[tuple[str | None, str]] = set()
    for secret in (r for r in resources if r.resource_type == SECRET):
        name = str(prop(secret.props, "metadata.name") or secret.name)
        namespace = prop(secret.props, "metadata.namespace")
        where = _object_cluster(secret, by_urn)
        if KUBECONFIG_KEY not in _known_keys(secret) and (where, name) not in referenced:
            continue
        if namespace == KUEUE_NAMESPACE:
            kubeconfigs.add((where, name))
            continue
        report(
            f"Secret {name!r} holds a MultiKueue kubeconfig (a worker's token) in namespace {namespace!r}: Kueue reads "
            f"them only from {KUEUE_NAMESPACE}, and elsewhere whoever reads that namespace's Secrets gets the token; "
            f"put it in {KUEUE_NAMESPACE}",
            secret.urn,
        )
    for cluster in clusters:
        key = (_object_cluster(cluster, by_urn), str(prop(cluster.props, "spec.clusterSource.kubeConfig.location")))
        if key in referenced and key not in kubeconfigs:
            report(
                f"MultiKueueCluster {prop(cluster.props, 'metadata.name')!r} names Secret {key[1]!r}, which the stack "
                f"does not declare in {KUEUE_NAMESPACE} with a kubeconfig: name the worker's kubeconfig Secret",
                cluster.urn,
            )
    names = {(_object_cluster(r, by_urn), str(prop(r.props, "metadata.name"))) for r in clusters}
    for config in (r for r in resources if _kueue(r, "MultiKueueConfig")):
        where = _object_cluster(config, by_urn)
        unknown = [str(c) for c in as_list(prop(config.props, "spec.clusters")) if (where, str(c)) not in names]
        if unknown:
            report(
                f"MultiKueueConfig {prop(config.props, 'metadata.name')!r} dispatches to {', '.join(unknown)}, which "
                "the stack declares no MultiKueueCluster for: list only the stack's workers",
                config.urn,
            )
