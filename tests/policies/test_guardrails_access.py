"""policies/guardrails/access.py: the sources NetworkPolicies admit and the rights RBAC grants, each violation in
every place it can hide, and the stack's own objects clean."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from components import multikueue_rules
from components.config.base import JOBSET_NAMESPACE, KUEUE_NAMESPACE, LWS_NAMESPACE
from components.network_policies import JOBSET_API_SERVER_PORTS, KUEUE_API_SERVER_PORTS, LWS_API_SERVER_PORTS
from tests.policies.test_rules import check, res

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
RBAC = "kubernetes:rbac.authorization.k8s.io/v1"
CHART_PARENT = "urn:pulumi:dev::tpu-stack::tpu-stack:index:KueueInstall$kubernetes:helm.sh/v4:Chart::kueue-chart"


def findings(rules: ModuleType, resource: dict[str, Any], policy: str) -> list[str]:
    return [v["message"] for v in check(rules, [resource]) if v["policy"] == policy]


def ingress(namespace: str, *rules: dict[str, Any]) -> dict[str, Any]:
    spec = {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": list(rules)}
    return res(NETWORK_POLICY, f"{namespace}-policy", {"metadata": {"namespace": namespace}, "spec": spec})


def test_the_policy_knows_the_ports_the_program_opens_to_the_api_server(rules: ModuleType) -> None:
    from guardrails import access  # the pack's own module, as rules.py imports it

    assert access.WEBHOOK_PORTS == {
        KUEUE_NAMESPACE: KUEUE_API_SERVER_PORTS,
        JOBSET_NAMESPACE: JOBSET_API_SERVER_PORTS,
        LWS_NAMESPACE: LWS_API_SERVER_PORTS,
    }


EVERY_POD = "spec.ingress[0]: a namespaceSelector with no labels or expressions admits every pod of every namespace"


@pytest.mark.parametrize(
    "peer",
    [
        {"namespaceSelector": {}},
        {"namespaceSelector": {"matchLabels": {}}},
        {"namespaceSelector": {"matchExpressions": []}, "podSelector": {"matchLabels": {}}},
        {"namespaceSelector": {"matchLabels": {}, "matchExpressions": []}, "podSelector": {}},
    ],
)
def test_selectors_with_no_entries_admit_everyone(rules: ModuleType, peer: dict[str, Any]) -> None:
    resource = ingress("llm", {"from": [peer], "ports": [{"port": 8000}]})
    assert findings(rules, resource, "network-policy-sources") == [
        f"{EVERY_POD}; admit only the clients that need the pods"
    ]


@pytest.mark.parametrize(
    "peer",
    [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gmp-system"}}},
        {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "client"}}},
        {"podSelector": {}},  # every pod of the policy's own namespace
        {"ipBlock": {"cidr": "10.20.0.0/24"}},
    ],
)
def test_selections_pass(rules: ModuleType, peer: dict[str, Any]) -> None:
    assert findings(rules, ingress("llm", {"from": [peer]}), "network-policy-sources") == []


NO_FROM = (
    "spec.ingress[0] has no `from`, so it admits every source: list the clients (ipBlock of the client ranges, or "
    "pod and namespace selectors)"
)


@pytest.mark.parametrize(
    ("namespace", "ports"),
    [
        ("kueue-system", [{"protocol": "TCP", "port": 9443}, {"protocol": "TCP", "port": 8443}]),  # metrics
        ("kueue-system", [{"protocol": "TCP", "port": 1, "endPort": 65535}]),
        ("kueue-system", [{"protocol": "TCP", "port": 9443, "endPort": 9444}]),
        ("kueue-system", [{"protocol": "UDP", "port": 9443}]),
        ("kueue-system", [{"protocol": "TCP"}]),  # every port
        ("kueue-system", [{"port": "webhook-server"}]),  # a named port can be any number
        ("jobset-system", [{"protocol": "TCP", "port": 8082}]),  # Kueue's visibility port, not JobSet's
        ("training", [{"protocol": "TCP", "port": 9443}]),
    ],
)
def test_a_rule_without_sources_only_on_the_api_servers_ports(
    rules: ModuleType, namespace: str, ports: list[dict[str, Any]]
) -> None:
    assert findings(rules, ingress(namespace, {"ports": ports}), "network-policy-sources") == [NO_FROM]


@pytest.mark.parametrize(
    ("namespace", "ports"),
    [
        ("kueue-system", [{"protocol": "TCP", "port": 9443}, {"protocol": "TCP", "port": 8082}]),
        ("jobset-system", [{"protocol": "TCP", "port": 9443}]),
        ("lws-system", [{"port": 9443}]),
    ],
)
def test_the_webhook_ports_admit_any_source(rules: ModuleType, namespace: str, ports: list[dict[str, Any]]) -> None:
    assert findings(rules, ingress(namespace, {"ports": ports}), "network-policy-sources") == []


def role(kind: str, name: str, rules_: list[dict[str, Any]], *, parent: str | None = None) -> dict[str, Any]:
    resource = res(f"{RBAC}:{kind}", name, {"metadata": {"name": name}, "rules": rules_})
    resource["parent"] = parent
    return resource


@pytest.mark.parametrize("verb", ["escalate", "bind", "impersonate"])
@pytest.mark.parametrize("parent", [None, CHART_PARENT])
def test_no_role_steps_past_rbac(rules: ModuleType, verb: str, parent: str | None) -> None:
    resource = role("ClusterRole", "ops", [{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": [verb]}],
                    parent=parent)  # fmt: skip
    assert findings(rules, resource, "rbac-least-privilege") == [
        f"rules[0] grants {verb}: the account could give itself rights or act as another; no account of the stack "
        "needs it"
    ]


def test_the_stacks_own_roles_read_no_secret_beyond_a_named_one(rules: ModuleType) -> None:
    secrets = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}
    assert findings(rules, role("Role", "reader", [secrets]), "rbac-least-privilege") == [
        "rules[0] grants get secrets, list secrets, watch secrets: every credential in reach; the stack's own roles "
        "read one named Secret at most (resourceNames)"
    ]
    tokens = {"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]}
    assert findings(rules, role("Role", "minter", [tokens]), "rbac-least-privilege") == [
        "rules[0] grants create serviceaccounts/token: every credential in reach; the stack's own roles read one "
        "named Secret at most (resourceNames)"
    ]
    named = {**secrets, "resourceNames": ["gmp-metrics-reader-token"]}  # the metrics collector's role
    assert findings(rules, role("Role", "metrics", [named]), "rbac-least-privilege") == []
    # A chart's controller keeps its own webhook certificate in a Secret.
    assert findings(rules, role("Role", "kueue-manager-secrets-role", [secrets], parent=CHART_PARENT),
                    "rbac-least-privilege") == []  # fmt: skip


def test_the_multikueue_roles_grant_only_what_dispatch_calls(rules: ModuleType) -> None:
    for name, allowed in multikueue_rules.ROLES.items():
        assert findings(rules, role("ClusterRole", name, list(allowed)), "rbac-least-privilege") == []
    widened = [*multikueue_rules.DISPATCH_RULES, {"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]
    assert findings(rules, role("ClusterRole", "multikueue-manager-dispatch", widened), "rbac-least-privilege") == [
        "ClusterRole 'multikueue-manager-dispatch' is the MultiKueue manager's on a worker, and grants more than "
        "Kueue's dispatch calls (create core/pods): keep the rules of components/multikueue_rules.py"
    ]
    read_widened = [{**multikueue_rules.READ_RULES[0], "verbs": ["get", "list", "watch", "delete"]}]
    assert findings(rules, role("ClusterRole", "multikueue-manager-read", read_widened), "rbac-least-privilege") == [
        "ClusterRole 'multikueue-manager-read' is the MultiKueue manager's on a worker, and grants more than "
        "Kueue's dispatch calls (delete batch/jobs): keep the rules of components/multikueue_rules.py"
    ]


def binding(*subjects: dict[str, str]) -> dict[str, Any]:
    return res(
        f"{RBAC}:ClusterRoleBinding",
        "readers",
        {"roleRef": {"kind": "ClusterRole", "name": "kueue-metrics-reader"}, "subjects": list(subjects)},
    )


@pytest.mark.parametrize(
    ("subject", "message"),
    [
        ("system:serviceaccounts", "subject system:serviceaccounts is every service account of the cluster"),
        ("system:serviceaccounts:research",
         "subject system:serviceaccounts:research is every service account of namespace research"),
        ("system:authenticated", "subject system:authenticated is everyone who reaches the API server"),
    ],
)  # fmt: skip
def test_no_binding_to_everyone_or_every_account(rules: ModuleType, subject: str, message: str) -> None:
    resource = binding({"kind": "Group", "name": subject, "apiGroup": "rbac.authorization.k8s.io"})
    assert findings(rules, resource, "rbac-least-privilege") == [f"{message}: bind named accounts"]
    named = binding({"kind": "ServiceAccount", "name": "gmp-metrics-reader", "namespace": "kueue-system"})
    assert findings(rules, named, "rbac-least-privilege") == []
