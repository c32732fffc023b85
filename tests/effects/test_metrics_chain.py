"""Managed Prometheus scrapes each controller: every link from the collector to the controller's /metrics, checked on
the rendered objects of dev and prod (the charts' and the stack's), and the scrape objects compared whole.

The chain, as GoogleCloudPlatform/prometheus-engine documents it (examples/inference-optimized-gateway/secret.yaml;
pkg/operator/apis/monitoring/v1/http_types.go at 2ffde4ec): the PodMonitoring selects the controller's pods and
names the port; its `authorization.credentials.secret` is a Secret of the PodMonitoring's own namespace, read by
the collectors' ServiceAccount `gmp-system/collector`, which RBAC must let `get` it; the Secret is a
`kubernetes.io/service-account-token` whose token (key `token`) Kubernetes' token controller fills for the
ServiceAccount its annotation names; that ServiceAccount must be bound to a role allowing `get` on the
non-resource URL /metrics (the charts' `<release>-metrics-reader`), which the controller's authorization filter asks
the API server about, creating a TokenReview and a SubjectAccessReview under its own ServiceAccount (the charts'
`kueue-metrics-auth-role` and `jobset-proxy-role`). RBAC is evaluated here as Kubernetes does (rbac/v1 PolicyRule
matching: verbs, apiGroups, resources, resourceNames, nonResourceURLs; "*" matches all).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from offline.engine import Plan

RELEASES = {"kueue": "kueue-system", "jobset": "jobset-system"}
CONTROLLERS = {"kueue": "kueue-controller-manager", "jobset": "jobset-controller"}
COLLECTOR = ("gmp-system", "collector")
INSTALLS = {"kueue": "KueueInstall", "jobset": "JobSetInstall"}
REVIEWS = (("authentication.k8s.io", "tokenreviews"), ("authorization.k8s.io", "subjectaccessreviews"))
AUTH_BINDINGS = {"kueue": "kueue-metrics-auth-rolebinding", "jobset": "jobset-proxy-rolebinding"}
"""The charts' bindings that let each controller create the reviews (roles kueue-metrics-auth-role,
jobset-proxy-role)."""


def objects(plan: Plan) -> list[dict[str, Any]]:
    return [r["inputs"] for r in plan.resources if r["type"].startswith("kubernetes:") and r["inputs"].get("kind")]


def find(objs: list[dict[str, Any]], kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    (found,) = [
        o
        for o in objs
        if o["kind"] == kind and o["metadata"]["name"] == name and o["metadata"].get("namespace") == namespace
    ]
    return found


def _matches(values: list[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def rule_allows(
    rule: dict[str, Any], verb: str, *, group: str = "", resource: str = "", name: str = "", url: str = ""
) -> bool:
    if not _matches(rule.get("verbs", []), verb):
        return False
    if url:
        return any(u == url or (u.endswith("*") and url.startswith(u[:-1])) for u in rule.get("nonResourceURLs", []))
    names = rule.get("resourceNames") or []
    return (
        _matches(rule.get("apiGroups", []), group)
        and _matches(rule.get("resources", []), resource)
        and (not names or name in names)
    )


def allowed(
    objs: list[dict[str, Any]], subject: tuple[str, str], verb: str, *, namespace: str | None = None, **what: str
) -> bool:
    """Whether ServiceAccount `subject` (namespace, name) may `verb` the resource or URL, through any binding."""
    account = {"kind": "ServiceAccount", "namespace": subject[0], "name": subject[1]}
    for binding in objs:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        scope = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        if scope is not None and scope != namespace:
            continue
        if not any({k: s.get(k) for k in account} == account for s in binding.get("subjects", [])):
            continue
        ref = binding["roleRef"]
        role_namespace = scope if ref["kind"] == "Role" else None
        roles = [
            o
            for o in objs
            if o["kind"] == ref["kind"]
            and o["metadata"]["name"] == ref["name"]
            and o["metadata"].get("namespace") == role_namespace
        ]
        if any(rule_allows(rule, verb, **what) for role in roles for rule in role.get("rules", [])):
            return True
    return False


@pytest.mark.parametrize("stack", ["dev", "prod"])
@pytest.mark.parametrize("release", ["kueue", "jobset"])
def test_every_link_from_collector_to_metrics(plans: dict[str, Plan], stack: str, release: str) -> None:
    objs = objects(plans[stack])
    namespace = RELEASES[release]
    (monitoring,) = [o for o in objs if o["kind"] == "PodMonitoring" and o["metadata"]["namespace"] == namespace]
    (endpoint,) = monitoring["spec"]["endpoints"]

    # 1. It selects the controller's pods, on the container port serving the metrics.
    deployment = find(objs, "Deployment", CONTROLLERS[release], namespace)
    pod = deployment["spec"]["template"]
    assert monitoring["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    ports = {p.get("name"): p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
    assert ports["metrics"] == endpoint["port"] == 8443
    assert (endpoint["scheme"], endpoint["path"]) == ("https", "/metrics")

    # 2. Its token is a Secret of its own namespace, filled by Kubernetes for the reader account.
    reference = endpoint["authorization"]["credentials"]["secret"]
    assert endpoint["authorization"]["type"] == "Bearer" and "namespace" not in reference
    secret = find(objs, "Secret", reference["name"], namespace)
    assert secret["type"] == "kubernetes.io/service-account-token" and reference["key"] == "token"
    reader = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    find(objs, "ServiceAccount", reader, namespace)

    # 3. The collectors may read that Secret, and no other of the namespace.
    assert allowed(objs, COLLECTOR, "get", namespace=namespace, resource="secrets", name=reference["name"])
    webhook_cert = find(objs, "Secret", f"{release}-webhook-server-cert", namespace)["metadata"]["name"]
    assert not allowed(objs, COLLECTOR, "get", namespace=namespace, resource="secrets", name=webhook_cert)
    assert not allowed(objs, COLLECTOR, "list", namespace="default", resource="secrets", name=reference["name"])

    # 4. The reader may get /metrics, through the chart's own metrics-reader role, and nothing else of the API.
    assert allowed(objs, (namespace, reader), "get", url="/metrics")
    role = find(objs, "ClusterRole", f"{release}-metrics-reader")
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert not allowed(objs, (namespace, reader), "get", group="", resource="secrets", name=reference["name"])
    assert not allowed(objs, (namespace, reader), "get", url="/api")

    # 5. The controller may check that token: its metrics filter asks the API server through a TokenReview (who is
    # it?) and a SubjectAccessReview (may it get /metrics?), both created under the controller's own ServiceAccount.
    controller = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    assert controller == CONTROLLERS[release]
    for group, resource in REVIEWS:
        assert allowed(objs, (namespace, controller), "create", group=group, resource=resource), resource


@pytest.mark.parametrize("release", ["kueue", "jobset"])
def test_without_the_charts_auth_binding_the_controller_could_not_check_a_token(
    plans: dict[str, Plan], release: str
) -> None:
    objs = objects(plans["dev"])
    without = [
        o for o in objs if not (o["kind"] == "ClusterRoleBinding" and o["metadata"]["name"] == AUTH_BINDINGS[release])
    ]
    assert len(without) == len(objs) - 1
    subject = (RELEASES[release], CONTROLLERS[release])
    for group, resource in REVIEWS:
        assert allowed(objs, subject, "create", group=group, resource=resource)
        assert not allowed(without, subject, "create", group=group, resource=resource)
    assert not allowed(objs, subject, "create", group="authentication.k8s.io", resource="subjectaccessreviews")


def test_the_rbac_model_tells_a_missing_link() -> None:
    """The model is not vacuous: a binding to another account, or a role for another URL, allows nothing."""
    role = {
        "kind": "ClusterRole",
        "metadata": {"name": "r"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }
    binding = {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "b"},
        "roleRef": {"kind": "ClusterRole", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "ns"}],
    }
    assert allowed([role, binding], ("ns", "reader"), "get", url="/metrics")
    assert not allowed([role, binding], ("other", "reader"), "get", url="/metrics")
    assert not allowed([role, binding], ("ns", "reader"), "get", url="/metrics/cadvisor")
    assert not allowed([role, binding], ("ns", "reader"), "list", url="/metrics")


# ---- the scrape objects, whole ------------------------------------------------------------------------------------

LABELS = {
    "app.kubernetes.io/name": "kueue",
    "app.kubernetes.io/instance": "kueue",
    "control-plane": "controller-manager",
}
KUEUE_SCRAPE = [
    {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "gmp-metrics-reader", "namespace": "kueue-system"},
    },
    {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "name": "gmp-metrics-reader-token",
            "namespace": "kueue-system",
            "annotations": {"kubernetes.io/service-account.name": "gmp-metrics-reader"},
        },
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "kueue-gmp-metrics-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kueue-metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "gmp-metrics-reader", "namespace": "kueue-system"}],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "gmp-system-collector-reads-gmp-metrics-reader-token", "namespace": "kueue-system"},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": ["gmp-metrics-reader-token"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "gmp-system-collector-reads-gmp-metrics-reader-token", "namespace": "kueue-system"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "gmp-system-collector-reads-gmp-metrics-reader-token",
        },
        "subjects": [{"kind": "ServiceAccount", "name": "collector", "namespace": "gmp-system"}],
    },
    {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": {"name": "kueue-controller", "namespace": "kueue-system"},
        "spec": {
            "selector": {"matchLabels": LABELS},
            "endpoints": [
                {
                    "port": 8443,
                    "path": "/metrics",
                    "scheme": "https",
                    "interval": "30s",
                    # The controller's certificate is self-signed (no cert-manager); the token still travels over TLS.
                    "tls": {"insecureSkipVerify": True},
                    "authorization": {
                        "type": "Bearer",
                        "credentials": {"secret": {"name": "gmp-metrics-reader-token", "key": "token"}},
                    },
                }
            ],
        },
    },
]


JOBSET_SCRAPE = [
    {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "gmp-metrics-reader", "namespace": "jobset-system"},
    },
    {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "name": "gmp-metrics-reader-token",
            "namespace": "jobset-system",
            "annotations": {"kubernetes.io/service-account.name": "gmp-metrics-reader"},
        },
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "jobset-gmp-metrics-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "jobset-metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "gmp-metrics-reader", "namespace": "jobset-system"}],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "gmp-system-collector-reads-gmp-metrics-reader-token", "namespace": "jobset-system"},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": ["gmp-metrics-reader-token"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "gmp-system-collector-reads-gmp-metrics-reader-token", "namespace": "jobset-system"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "gmp-system-collector-reads-gmp-metrics-reader-token",
        },
        "subjects": [{"kind": "ServiceAccount", "name": "collector", "namespace": "gmp-system"}],
    },
    {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": {"name": "jobset-controller", "namespace": "jobset-system"},
        "spec": {
            "selector": {
                "matchLabels": {
                    "app.kubernetes.io/name": "jobset",
                    "app.kubernetes.io/instance": "jobset",
                    "app.kubernetes.io/component": "controller",
                }
            },
            "endpoints": [
                {
                    "port": 8443,
                    "path": "/metrics",
                    "scheme": "https",
                    "interval": "30s",
                    "tls": {"insecureSkipVerify": True},
                    "authorization": {
                        "type": "Bearer",
                        "credentials": {"secret": {"name": "gmp-metrics-reader-token", "key": "token"}},
                    },
                }
            ],
        },
    },
]
SCRAPE = {"kueue": KUEUE_SCRAPE, "jobset": JOBSET_SCRAPE}


@pytest.mark.parametrize("stack", ["dev", "prod"])
@pytest.mark.parametrize("release", ["kueue", "jobset"])
def test_the_stack_declares_exactly_these_scrape_objects(plans: dict[str, Plan], stack: str, release: str) -> None:
    declared = [
        r["inputs"]
        for r in plans[stack].resources
        if r["type"].startswith("kubernetes:")
        and "ControllerMetrics" in r["urn"]
        and r["name"].startswith(f"{release}-metrics")
    ]
    key = lambda o: (o["kind"], o["metadata"]["name"])  # noqa: E731
    assert sorted(declared, key=key) == sorted(SCRAPE[release], key=key)


@pytest.mark.parametrize("release", ["kueue", "jobset"])
def test_the_scrape_objects_go_to_the_cluster_and_only_the_token_waits_for_its_account(
    plans: dict[str, Plan], release: str
) -> None:
    """Through the cluster's own provider (any other would write them to another cluster), protected with prod,
    after the chart and the namespace; the token Secret also after its ServiceAccount, which nothing else waits for."""
    plan = plans["prod"]
    prefix = "urn:pulumi:prod::tpu-stack::"
    component = f"{prefix}pulumi:pulumi:Stack$tpu-stack:index:ControllerMetrics::{release}-metrics"
    install = f"{prefix}tpu-stack:index:{INSTALLS[release]}$"
    waits = {
        f"{install}kubernetes:core/v1:Namespace::{release}-namespace",
        f"{install}kubernetes:helm.sh/v4:Chart::{release}-chart",
    }
    account = (
        f"{prefix}tpu-stack:index:ControllerMetrics$kubernetes:core/v1:ServiceAccount::{release}-metrics-serviceaccount"
    )
    children = [r for r in plan.resources if r["parent"] == component]
    assert sorted(r["type"].rsplit(":", 1)[1] for r in children) == [
        "ClusterRoleBinding",
        "PodMonitoring",
        "Role",
        "RoleBinding",
        "Secret",
        "ServiceAccount",
    ]
    for child in children:
        assert child["provider"] == f"{prefix}tpu-stack:index:GkeCluster$pulumi:providers:kubernetes::tpu-prod-k8s"
        assert child["protect"] is True
        extra = {account} if child["type"] == "kubernetes:core/v1:Secret" else set()
        assert set(child["dependencies"]) == waits | extra, child["name"]


# ---- the ports the controller listens on --------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_kueue_listens_on_the_ports_it_is_called_and_scraped_on(plans: dict[str, Plan], stack: str) -> None:
    """The controller reads its listen ports from its Configuration (the `kueue-manager-config` ConfigMap it is
    started with, `--config`), not from the container ports: a webhook served elsewhere than 9443 refuses every
    Workload and Job (failurePolicy Fail); metrics served elsewhere than 8443 leave Kueue unscraped and its alerts
    silent."""
    objs = objects(plans[stack])
    config_map = find(objs, "ConfigMap", "kueue-manager-config", "kueue-system")
    config = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])
    assert config["webhook"] == {"port": 9443}
    assert config["metrics"]["bindAddress"] == ":8443"

    deployment = find(objs, "Deployment", "kueue-controller-manager", "kueue-system")
    (manager,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--config=/controller_manager_config.yaml" in manager["args"]
    ports = {p["name"]: p["containerPort"] for p in manager["ports"]}
    (webhook_port,) = find(objs, "Service", "kueue-webhook-service", "kueue-system")["spec"]["ports"]
    assert webhook_port["targetPort"] == ports["webhook-server"] == config["webhook"]["port"]

    monitoring = find(objs, "PodMonitoring", "kueue-controller", "kueue-system")
    (endpoint,) = monitoring["spec"]["endpoints"]
    assert endpoint["port"] == ports["metrics"] == int(config["metrics"]["bindAddress"].rsplit(":", 1)[1])
