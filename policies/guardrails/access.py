"""Who reaches what inside the cluster: the sources NetworkPolicies admit, the rights RBAC grants, and where the
MultiKueue manager's credentials for its workers live.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, ResourceValidationArgs, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from components import multikueue_rules

from .kueue import _kueue, _object_cluster
from .props import NETWORK_POLICY, as_list, prop, say

WIDEST_PREFIX = {4: 8, 6: 16}
"""Widest client range a serving NetworkPolicy (like its load balancer) admits."""
WEBHOOK_PORTS = {"kueue-system": (9443, 8082), "jobset-system": (9443,), "lws-system": (9443,)}
"""The charts' controller namespaces and the pod ports the API server calls there (components/network_policies.py
KUEUE_API_SERVER_PORTS, JOBSET_API_SERVER_PORTS, LWS_API_SERVER_PORTS: the webhook Services' 443 -> 9443 and Kueue's
visibility APIService 443 -> 8082). The calls come from the control plane, which has no pod-network address to
select, so these ports, and only these, admit any source."""
CONTROLLER_NAMESPACES = tuple(WEBHOOK_PORTS)
KUEUE_NAMESPACE = "kueue-system"
"""Where the stack installs Kueue, and the one namespace Kueue reads MultiKueue kubeconfigs from."""
KUBECONFIG_KEY = "kubeconfig"
SECRET = "kubernetes:core/v1:Secret"
ROLES = ("Role", "ClusterRole")
BINDINGS = ("RoleBinding", "ClusterRoleBinding")
WIDE_ROLES = ("cluster-admin", "admin", "edit")
"""Kubernetes' built-in user-facing ClusterRoles: all of a namespace's objects (admin, edit) or of the cluster."""
EVERYONE = ("system:anonymous", "system:unauthenticated", "system:authenticated")
EVERY_ACCOUNT = "system:serviceaccounts"
"""The group of every service account of the cluster; `system:serviceaccounts:<namespace>` is every account of a
namespace (Kubernetes RBAC, "Referring to subjects")."""
ESCALATING_VERBS = ("escalate", "bind", "impersonate")
"""Verbs that step past RBAC itself: grant rights the account lacks (escalate, bind) or act as another user, group or
service account (impersonate) (Kubernetes "RBAC good practices", privilege escalation risks)."""
SENSITIVE = (("", "secrets", ("get", "list", "watch")), ("", "serviceaccounts/token", ("create",)))
"""Reading Secrets or minting service account tokens: every credential of the namespace or cluster. The charts'
controllers need their own webhook certificates; the stack's own roles read one named Secret or none."""
CHART_TYPES = ("kubernetes:helm.sh/v4:Chart", "kubernetes:helm.sh/v3:Release")


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
    if _selects_all(namespaces) and (pods is None or _selects_all(pods)):
        return "a namespaceSelector with no labels or expressions admits every pod of every namespace"
    return None


def _selects_all(selector: Any) -> bool:
    """A label selector with no requirement (`{}`, `{matchLabels: {}}`, `{matchExpressions: []}`) selects everything."""
    if not isinstance(selector, Mapping):
        return False
    return not prop(selector, "matchLabels") and not prop(selector, "matchExpressions")


def _webhook_ports_only(namespace: Any, ports: list[Any]) -> bool:
    """Every port of the rule is one the API server calls in that controller namespace: TCP, a number, no range."""
    allowed = WEBHOOK_PORTS.get(str(namespace), ())
    return bool(ports) and all(
        prop(port, "port") in allowed
        and prop(port, "endPort") is None
        and prop(port, "protocol", "TCP") == "TCP"
        and not isinstance(prop(port, "port"), bool)
        for port in ports
    )


def validate_network_policy_sources(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """An ingress rule names its sources: a rule without `from` (or with an empty one) admits every address that can
    route to the pod, internet clients of a load balancer included. The servers admit their client ranges, training
    pods their own namespace, the controllers the metrics collectors; only the charts' controller namespaces admit
    any source, and only on the ports the API server calls there (WEBHOOK_PORTS)."""
    if args.resource_type != NETWORK_POLICY:
        return
    namespace = prop(args.props, "metadata.namespace")
    for index, rule in enumerate(as_list(prop(args.props, "spec.ingress"))):
        peers = as_list(prop(rule, "from"))
        if not peers:
            if _webhook_ports_only(namespace, as_list(prop(rule, "ports"))):
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


def _from_chart(args: ResourceValidationArgs) -> bool:
    """Rendered from a chart (its parent is the Chart): a controller's own role, as its project ships it."""
    parent = args.opts.parent or ""
    return parent.rsplit("::", 1)[0].rsplit("$", 1)[-1] in CHART_TYPES


def _grants(rule: Any) -> set[tuple[str, str, str]]:
    """(API group, resource, verb) of every right a rule grants."""
    return {
        (str(group), str(resource), str(verb))
        for group in as_list(prop(rule, "apiGroups"))
        for resource in as_list(prop(rule, "resources"))
        for verb in as_list(prop(rule, "verbs"))
    }


def _role_problems(args: ResourceValidationArgs) -> list[str]:
    problems = []
    rules = as_list(args.props.get("rules"))
    for index, rule in enumerate(rules):
        wild = [field for field in ("verbs", "resources", "apiGroups") if "*" in as_list(prop(rule, field))]
        if wild:
            problems.append(
                f"rules[{index}] grants '*' {' and '.join(wild)}: name the verbs, resources and API groups the "
                "account calls"
            )
        escalating = [str(v) for v in as_list(prop(rule, "verbs")) if v in ESCALATING_VERBS]
        if escalating:
            problems.append(
                f"rules[{index}] grants {', '.join(escalating)}: the account could give itself rights or act as "
                "another; no account of the stack needs it"
            )
        if not _from_chart(args) and not as_list(prop(rule, "resourceNames")):
            sensitive = sorted(
                {f"{verb} {resource}" for group, resource, verb in _grants(rule) for g, r, verbs in SENSITIVE
                 if (group, resource) == (g, r) and verb in verbs}
            )  # fmt: skip
            if sensitive:
                problems.append(
                    f"rules[{index}] grants {', '.join(sensitive)}: every credential in reach; the stack's own "
                    "roles read one named Secret at most (resourceNames)"
                )
    name = str(prop(args.props, "metadata.name") or "")
    allowed = multikueue_rules.ROLES.get(name)
    if allowed is not None and args.resource_type.endswith(":ClusterRole"):
        wanted = {grant for rule in allowed for grant in _grants(rule)}
        extra = sorted({grant for rule in rules for grant in _grants(rule)} - wanted)
        if extra or any(prop(rule, "nonResourceURLs") for rule in rules):
            shown = ", ".join(f"{verb} {group or 'core'}/{resource}" for group, resource, verb in extra[:4])
            problems.append(
                f"ClusterRole {name!r} is the MultiKueue manager's on a worker, and grants more than Kueue's dispatch "
                f"calls ({shown or 'nonResourceURLs'}{', ...' if len(extra) > 4 else ''}): keep the rules of "
                "components/multikueue_rules.py"
            )
    return problems


def validate_rbac(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """No role grants every verb or every resource, steps past RBAC (escalate, bind, impersonate), or, when the stack
    writes it rather than a chart, reads Secrets or mints tokens beyond one named Secret; the MultiKueue manager's
    roles on a worker grant only what Kueue's dispatch calls (Kueue's create-multikueue-kubeconfig.sh rules,
    components/multikueue_rules.py). No binding hands out Kubernetes' built-in wide roles or binds everyone or every
    service account: a token copied from an account of the stack must not open the whole cluster."""
    if _rbac_kind(args, ROLES):
        for problem in _role_problems(args):
            say(report, problem)
    elif _rbac_kind(args, BINDINGS):
        ref = prop(args.props, "roleRef.name")
        if prop(args.props, "roleRef.kind") == "ClusterRole" and ref in WIDE_ROLES:
            say(
                report,
                f"roleRef is the built-in ClusterRole {ref!r}, far more than any account of the stack needs: bind a "
                "role with the rules the account calls",
            )
        for subject in as_list(args.props.get("subjects")):
            name = str(prop(subject, "name"))
            if name == EVERY_ACCOUNT or name.startswith(f"{EVERY_ACCOUNT}:"):
                whose = "the cluster" if name == EVERY_ACCOUNT else f"namespace {name.rsplit(':', 1)[-1]}"
                say(report, f"subject {name} is every service account of {whose}: bind named accounts")
            elif name in EVERYONE:
                say(report, f"subject {name} is everyone who reaches the API server: bind named accounts")


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
