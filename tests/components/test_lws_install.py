"""The LeaderWorkerSet install: its chart from the official OCI registry, pinned, hardened like Kueue's and JobSet's,
rendered offline from the vendored archive (lws v0.10.0), its webhooks reachable, its namespace fenced.

Expectations come from the chart itself (kubernetes-sigs/lws v0.10.0 `charts/lws`): the webhook Service
`lws-webhook-service` sends 443 to the controller's 9443; the CRD's conversion webhook names that Service in
`lws-system`; the webhook certificate Secret is rendered with no data (the controller's rotator fills it).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from offline.engine import Plan, run_program
from offline.validate import validate_all
from tests.conftest import BASE
from tests.fixtures import stack_plan

CHART = "kubernetes:helm.sh/v4:Chart"
POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
CONTROLLER_POD = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "runAsGroup": 65532,
    "seccompProfile": {"type": "RuntimeDefault"},
}
MULTI_HOST = {"name": "serve", "machineType": "ct5lp-hightpu-4t", "topology": "4x4", "zone": "us-central1-a"}
SINGLE_HOST = {"name": "serve", "machineType": "ct6e-standard-8t", "zone": "us-central1-b"}
SERVER = {"name": "llama", "pool": "serve", "modelFolder": "models/Llama-3.1-70B-Instruct", "billionsOfParameters": 70,
          "maxModelLen": 4096}  # fmt: skip
DIGEST = "sha256:" + "3" * 64


def serving(pool: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        **BASE,
        "tpu-stack:tpuPools": [pool],
        "tpu-stack:serving": {"service": {"sourceRanges": ["10.20.0.0/24"]}, "servers": [SERVER], **extra},
    }


@pytest.fixture(scope="module")
def example() -> Plan:
    """The example stack with its charts rendered."""
    return stack_plan("llm")


def chart(plan: Plan) -> dict[str, Any]:
    (found,) = [r for r in plan.by_type(CHART) if r["inputs"]["name"] == "lws"]
    return found


def rendered(plan: Plan) -> dict[tuple[str, str], dict[str, Any]]:
    """(kind, resource name) -> object: the chart names a Role and its RoleBinding alike."""
    return {
        (r["inputs"]["kind"], r["name"]): r["inputs"]
        for r in plan.resources
        if r.get("rendered") and r["name"].startswith("lws-chart:")
    }


def test_lws_chart_from_its_oci_registry_pinned_in_lws_system(example: Plan) -> None:
    lws = chart(example)
    assert lws["remote"] is True
    assert lws["inputs"] == {
        "name": "lws",
        "chart": "oci://registry.k8s.io/lws/charts/lws",
        "version": "v0.10.0",
        "namespace": "lws-system",
        "values": {
            "enableCertManager": False,
            "enablePrometheus": False,
            "enableDisaggregatedSet": False,
            "image": {"manager": {"pullPolicy": "Always"}},
            # Sized like the Kueue and JobSet controllers for at most 64 nodes (the system pool's 3, no queue pools).
            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            "nodeSelector": {"cloud.google.com/gke-nodepool": "system"},
            "podSecurityContext": CONTROLLER_POD,
        },
    }


def test_an_image_digest_pins_the_controller() -> None:
    plan = run_program(serving(MULTI_HOST, lwsImageDigest=DIGEST), stack="dev")
    assert chart(plan)["inputs"]["values"]["image"] == {"manager": {"pullPolicy": "Always", "tag": f"v0.10.0@{DIGEST}"}}


def test_installed_only_when_a_server_runs_on_multi_host_slices() -> None:
    plan = run_program(serving(SINGLE_HOST), stack="dev")
    assert [r["inputs"]["name"] for r in plan.by_type(CHART)] == ["jobset", "kueue"]
    assert not [r for r in plan.by_type(POLICY) if r["inputs"]["metadata"]["namespace"] == "lws-system"]
    assert plan.by_type("kubernetes:apps/v1:Deployment")  # the single-host server itself


def test_the_chart_renders_its_controller_hardened_on_the_system_pool(example: Plan) -> None:
    objects = rendered(example)
    # lws v0.10.0 renders 19 objects without Prometheus, cert-manager or the DisaggregatedSet webhook.
    assert len(objects) == 19
    kinds = Counter(o["kind"] for o in objects.values())
    assert kinds["CustomResourceDefinition"] == 3 and kinds["Deployment"] == 1
    controller = objects[("Deployment", "lws-chart:lws-system/lws-controller-manager")]["spec"]["template"]["spec"]
    assert controller["nodeSelector"] == {"cloud.google.com/gke-nodepool": "system"}
    assert controller["securityContext"] == CONTROLLER_POD
    (manager,) = controller["containers"]
    assert manager["image"] == "registry.k8s.io/lws/lws:v0.10.0"
    assert manager["imagePullPolicy"] == "Always"
    assert manager["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert manager["resources"] == {"requests": {"cpu": "500m", "memory": "512Mi"},
                                    "limits": {"cpu": "1", "memory": "1Gi"}}  # fmt: skip
    # Ready once the webhook server listens on its port (registered only after the certificate is mounted and
    # injected), not on LWS's own /readyz on 8081, a plain ping: LeaderWorkerSets wait for the chart.
    assert manager["readinessProbe"] == {"tcpSocket": {"port": 9443}, "initialDelaySeconds": 5, "periodSeconds": 10}
    assert {"name": "webhook-server", "containerPort": 9443, "protocol": "TCP"} in manager["ports"]
    assert manager["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8081}
    assert validate_all(objects.values()) == []


def test_the_webhooks_fail_closed_on_a_service_whose_pod_port_the_namespace_admits(example: Plan) -> None:
    """Every LWS webhook (and the CRD's conversion) calls lws-webhook-service in lws-system, which sends 443 to
    9443: the port the lws-system NetworkPolicy admits and GKE's control-plane firewall must admit."""
    objects = rendered(example)
    service = objects[("Service", "lws-chart:lws-system/lws-webhook-service")]["spec"]
    assert service["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": 9443}]
    webhooks = [
        *objects[("MutatingWebhookConfiguration", "lws-chart:lws-mutating-webhook-configuration")]["webhooks"],
        *objects[("ValidatingWebhookConfiguration", "lws-chart:lws-validating-webhook-configuration")]["webhooks"],
    ]
    assert len(webhooks) == 4
    assert {(h["clientConfig"]["service"]["name"], h["clientConfig"]["service"]["namespace"]) for h in webhooks} == {
        ("lws-webhook-service", "lws-system")
    }
    assert {h["failurePolicy"] for h in webhooks} == {"Fail"}
    crd = objects[("CustomResourceDefinition", "lws-chart:leaderworkersets.leaderworkerset.x-k8s.io")]["spec"]
    assert crd["conversion"]["webhook"]["clientConfig"]["service"]["namespace"] == "lws-system"
    policies = {r["inputs"]["metadata"]["name"]: r["inputs"]["spec"] for r in example.by_type(POLICY)
                if r["inputs"]["metadata"]["namespace"] == "lws-system"}  # fmt: skip
    assert sorted(policies) == [
        "allow-api-server-calls",
        "allow-metrics-scrape",
        "allow-platform-egress",
        "default-deny",
    ]
    assert policies["allow-api-server-calls"]["ingress"] == [{"ports": [{"protocol": "TCP", "port": 9443}]}]


def test_the_webhook_certificate_secret_is_rendered_without_data(example: Plan) -> None:
    """Applying it again never contends with the controller's rotator for its keys (unlike jobset 0.12.0's)."""
    secret = rendered(example)[("Secret", "lws-chart:lws-system/lws-webhook-server-cert")]
    assert set(secret) == {"apiVersion", "kind", "metadata"}


def test_the_chart_waits_for_its_namespace(example: Plan) -> None:
    (namespace,) = [r for r in example.by_type("kubernetes:core/v1:Namespace") if r["name"] == "lws-namespace"]
    assert namespace["inputs"]["metadata"]["name"] == "lws-system"
    assert namespace["urn"] in chart(example)["dependencies"]
