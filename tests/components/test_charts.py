"""JobSet and Kueue installs: Helm v4 charts from the official OCI registries, pinned, in their own namespaces.

`helm.v4.Chart` is a remote component: under mocks its children are not registered, so its inputs are what
can be asserted (chart, version, namespace, values). Facts §3: chart versions have no `v`; Kueue's whole
controller config is one YAML string in `managerConfig.controllerManagerConfigYaml`; JobSets opt in with the
queue-name label (`manageJobsWithoutQueueName: false`).
"""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pytest
import yaml

from components.config.base import ConfigError
from components.jobset_install import leave_cert_data_to_the_controller as transform
from offline.engine import Plan, run_program
from offline.vendor import VENDOR
from tests.conftest import BASE, StackRunner

CHART = "kubernetes:helm.sh/v4:Chart"
NAMESPACE = "kubernetes:core/v1:Namespace"
POOL = {"name": "multislice", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "slices": 3,
        "zone": "us-central1-a"}  # fmt: skip
# Top-level fields of Kueue's Configuration (config.kueue.x-k8s.io/v1beta2, apis/config/v1beta2 in Kueue).
KUEUE_CONFIG_FIELDS = {
    "apiVersion", "kind", "namespace", "manageJobsWithoutQueueName", "managedJobsNamespaceSelector",
    "internalCertManagement", "waitForPodsReady", "clientConnection", "integrations", "multiKueue", "fairSharing",
    "admissionFairSharing", "resources", "featureGates", "objectRetentionPolicies", "webhook", "leaderElection",
    "metrics", "health", "pprofBindAddress", "controller", "tls",
}  # fmt: skip
CONTROLLER_POD = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "runAsGroup": 65532,
    "seccompProfile": {"type": "RuntimeDefault"},
}
KUEUE_DIGEST = "sha256:" + "1" * 64
JOBSET_DIGEST = "sha256:" + "2" * 64


@pytest.fixture(scope="module")
def plan() -> Plan:
    return run_program({**BASE, "tpu-stack:tpuPools": [POOL]}, stack="dev")


def chart(plan: Plan, name: str) -> dict[str, Any]:
    (found,) = [r for r in plan.by_type(CHART) if r["inputs"]["name"] == name]
    return found


def kueue_config(plan: Plan) -> dict[str, Any]:
    values = chart(plan, "kueue")["inputs"]["values"]
    text = values["managerConfig"]["controllerManagerConfigYaml"]
    assert isinstance(text, str), "the chart takes the controller config as one YAML string"
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def test_jobset_chart_from_its_oci_registry_pinned_in_its_namespace(plan: Plan) -> None:
    jobset = chart(plan, "jobset")
    assert jobset["remote"] is True
    assert jobset["inputs"] == {
        "name": "jobset",
        "chart": "oci://registry.k8s.io/jobset/charts/jobset",
        "version": "0.12.0",
        "namespace": "jobset-system",
        "values": {
            "image": {"pullPolicy": "Always"},
            "controller": {
                "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
                "nodeSelector": {"cloud.google.com/gke-nodepool": "system"},
                # The image's own user (USER 65532:65532 in JobSet's Dockerfile): checkov wants a UID > 10000.
                "podSecurityContext": CONTROLLER_POD,
                "annotations": {
                    "checkov.io/skip1": "CKV_K8S_38=a controller watches and writes the Kubernetes API with its "
                    "service account token",
                    "checkov.io/skip2": "CKV_K8S_43=image pinned by the chart's tag; set "
                    "tpu-stack:charts.jobsetImageDigest to pin its digest",
                },
            },
            # Both would need APIs GKE does not have (cert-manager, the Prometheus operator's ServiceMonitor).
            "certManager": {"enable": False},
            "prometheus": {"enable": False},
        },
    }


def test_kueue_chart_from_its_oci_registry_pinned_in_its_namespace(plan: Plan) -> None:
    kueue = chart(plan, "kueue")
    inputs = kueue["inputs"]
    assert (inputs["chart"], inputs["version"], inputs["namespace"]) == (
        "oci://registry.k8s.io/kueue/charts/kueue",
        "0.19.2",
        "kueue-system",
    )
    values = inputs["values"]
    assert {
        k: values[k] for k in ("enableCertManager", "enablePrometheus", "enableVisibilityAPF", "enableKueueViz")
    } == {
        "enableCertManager": False,
        "enablePrometheus": False,
        "enableVisibilityAPF": False,
        "enableKueueViz": False,
    }
    assert values["controllerManager"] == {
        "manager": {
            "image": {"pullPolicy": "Always"},
            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            "podSecurityContext": CONTROLLER_POD,
        },
        "nodeSelector": {"cloud.google.com/gke-nodepool": "system"},
    }


def test_kueue_controller_config_manages_only_labelled_jobs_and_jobsets(plan: Plan) -> None:
    config = kueue_config(plan)
    assert set(config) <= KUEUE_CONFIG_FIELDS
    assert (config["apiVersion"], config["kind"]) == ("config.kueue.x-k8s.io/v1beta2", "Configuration")
    assert config["manageJobsWithoutQueueName"] is False
    assert config["integrations"] == {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}
    # Queues cover only chips here, so a TPU pod that also requests CPU or memory must stay admissible.
    assert config["resources"] == {"excludeResourcePrefixes": ["cpu", "memory", "ephemeral-storage"]}
    assert "featureGates" not in config


def test_queues_that_cover_cpu_and_memory_make_kueue_count_them(run: StackRunner) -> None:
    hosts = {"multislice": {"cpu": 100, "memory": "170Gi"}}
    plan = run({"tpu-stack:tpuPools": [POOL], "tpu-stack:queues": {"hostResources": hosts}})
    assert kueue_config(plan)["resources"] == {"excludeResourcePrefixes": ["ephemeral-storage"]}


def test_charts_wait_for_their_namespaces_and_kueue_for_jobset(plan: Plan) -> None:
    namespaces = {r["inputs"]["metadata"]["name"]: r["urn"] for r in plan.by_type(NAMESPACE)}
    jobset, kueue = chart(plan, "jobset"), chart(plan, "kueue")
    assert namespaces["jobset-system"] in jobset["dependencies"]
    assert namespaces["kueue-system"] in kueue["dependencies"]
    # Kueue sets up its JobSet integration when it starts: the JobSet CRD must be there first.
    assert jobset["urn"] in kueue["dependencies"]


def test_chart_versions_come_from_config(run: StackRunner) -> None:
    plan = run({"tpu-stack:charts": {"kueueVersion": "0.19.1", "jobsetVersion": "0.11.1"}})
    assert chart(plan, "kueue")["inputs"]["version"] == "0.19.1"
    assert chart(plan, "jobset")["inputs"]["version"] == "0.11.1"


def test_default_versions_are_the_tags_of_the_offline_crd_schemas(plan: Plan) -> None:
    readme = (VENDOR / "README.md").read_text()
    tags = dict(re.findall(r"kubernetes-sigs/(kueue|jobset) `config/components/crd/bases/` \| `v([\d.]+)`", readme))
    assert tags == {
        "kueue": chart(plan, "kueue")["inputs"]["version"],
        "jobset": chart(plan, "jobset")["inputs"]["version"],
    }


def test_controllers_grow_with_the_cluster_and_follow_autopilot(run: StackRunner) -> None:
    big = {**POOL, "topology": "4x8", "slices": 80}  # 80 slices x 8 VMs = 640 TPU nodes
    plan = run({"tpu-stack:tpuPools": [big]})
    resources = chart(plan, "kueue")["inputs"]["values"]["controllerManager"]["manager"]["resources"]
    assert resources == {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}}
    autopilot = run({"tpu-stack:cluster": {"mode": "autopilot"}})
    assert chart(autopilot, "kueue")["inputs"]["values"]["controllerManager"]["nodeSelector"] == {}
    assert chart(autopilot, "jobset")["inputs"]["values"]["controller"]["nodeSelector"] == {}


def test_image_digests_pin_the_controllers_and_end_the_tag_exception(run: StackRunner) -> None:
    digests = {"kueueImageDigest": KUEUE_DIGEST, "jobsetImageDigest": JOBSET_DIGEST}
    plan = run({"tpu-stack:charts": digests})
    kueue_image = chart(plan, "kueue")["inputs"]["values"]["controllerManager"]["manager"]["image"]
    assert kueue_image == {"pullPolicy": "Always", "tag": f"v0.19.2@{KUEUE_DIGEST}"}
    jobset_values = chart(plan, "jobset")["inputs"]["values"]
    assert jobset_values["image"] == {"pullPolicy": "Always", "tag": f"v0.12.0@{JOBSET_DIGEST}"}
    assert jobset_values["controller"]["annotations"] == {
        "checkov.io/skip1": "CKV_K8S_38=a controller watches and writes the Kubernetes API with its "
        "service account token"
    }


@pytest.mark.parametrize("key", ["kueueImageDigest", "jobsetImageDigest"])
def test_a_malformed_image_digest_is_a_config_error(run: StackRunner, key: str) -> None:
    with pytest.raises(ConfigError) as error:
        run({"tpu-stack:charts": {key: "sha256:abc"}})
    assert error.value.lines == [
        f"tpu-stack:charts.{key}: 'sha256:abc' is not an image digest; write sha256: and its 64 hex digits"
    ]


def test_the_jobset_chart_leaves_only_its_cert_secrets_data_to_the_controller() -> None:
    """jobset issue 1205 / PR 1248: only the webhook cert Secret loses `data` (and ignores it); nothing else."""
    secret = {"apiVersion": "v1", "kind": "Secret", "data": {"tls.crt": ""},
              "metadata": {"name": "jobset-webhook-server-cert", "namespace": "jobset-system"}}  # fmt: skip

    def args(type_: str, props: dict[str, Any]) -> pulumi.ResourceTransformArgs:
        return pulumi.ResourceTransformArgs(True, type_, "jobset-chart:x", props, pulumi.ResourceOptions())

    result = transform(args("kubernetes:core/v1:Secret", secret))
    assert result is not None
    assert result.props == {"apiVersion": "v1", "kind": "Secret", "metadata": secret["metadata"]}
    assert result.opts is not None and result.opts.ignore_changes == ["data"]
    other = {**secret, "metadata": {"name": "jobset-metrics-token", "namespace": "jobset-system"}}
    assert transform(args("kubernetes:core/v1:Secret", other)) is None
    assert transform(args("kubernetes:core/v1:ConfigMap", {**secret, "kind": "ConfigMap"})) is None
    assert transform(args("kubernetes:helm.sh/v4:Chart", {"name": "jobset"})) is None
