"""The Kueue and JobSet charts rendered offline as the kubernetes provider renders them in a real preview.

Expectations are written out from the charts themselves (kueue 0.19.2, jobset 0.12.0 in vendor/charts) and
from the provider's naming (`<Chart resource name>:<namespace>/<name>`, pulumi-kubernetes yaml/v2 Register).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pulumi
import pytest

from offline import __main__ as cli
from offline import charts, policy_check
from offline.engine import Plan
from offline.validate import validate_all
from tests.fixtures import stack_path, stack_plan

STACKS = ("dev", "prod")
KUEUE_CHART_URN = "urn:pulumi:{stack}::tpu-stack::tpu-stack:index:KueueInstall$kubernetes:helm.sh/v4:Chart::kueue-chart"
JOBSET_CHART_URN = (
    "urn:pulumi:{stack}::tpu-stack::tpu-stack:index:JobSetInstall$kubernetes:helm.sh/v4:Chart::jobset-chart"
)


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    return {stack: stack_plan(stack) for stack in STACKS}


def rendered(plan: Plan) -> list[dict[str, Any]]:
    return [r for r in plan.resources if r.get("rendered")]


def named(plan: Plan, name: str, kind: str = "Deployment") -> dict[str, Any]:
    (found,) = [r for r in plan.resources if r["name"] == name and r["type"].endswith(f":{kind}")]
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_the_controllers_are_rendered_as_children_of_their_charts(plans: dict[str, Plan], stack: str) -> None:
    plan = plans[stack]
    kueue = named(plan, "kueue-chart:kueue-system/kueue-controller-manager")
    jobset = named(plan, "jobset-chart:jobset-system/jobset-controller")
    assert kueue["type"] == jobset["type"] == "kubernetes:apps/v1:Deployment"
    assert kueue["parent"] == KUEUE_CHART_URN.format(stack=stack)
    assert jobset["parent"] == JOBSET_CHART_URN.format(stack=stack)
    assert kueue["urn"] == (
        f"urn:pulumi:{stack}::tpu-stack::kubernetes:helm.sh/v4:Chart$kubernetes:apps/v1:Deployment::"
        "kueue-chart:kueue-system/kueue-controller-manager"
    )
    images = {c["image"] for r in (kueue, jobset) for c in r["inputs"]["spec"]["template"]["spec"]["containers"]}
    assert images == {"registry.k8s.io/kueue/kueue:v0.19.2", "registry.k8s.io/jobset/jobset:v0.12.0"}
    assert kueue["rendered"] is jobset["rendered"] is True


@pytest.mark.parametrize("stack", STACKS)
def test_the_charts_bring_their_crds_cluster_scoped(plans: dict[str, Plan], stack: str) -> None:
    crds = {
        r["name"]
        for r in rendered(plans[stack])
        if r["type"] == "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
    }
    kueue = {
        "admissionchecks", "clusterqueues", "cohorts", "localqueues", "multikueueclusters", "multikueueconfigs",
        "provisioningrequestconfigs", "resourceflavors", "topologies", "workloadpriorityclasses", "workloads",
    }  # fmt: skip
    assert crds == {f"kueue-chart:{k}.kueue.x-k8s.io" for k in kueue} | {"jobset-chart:jobsets.jobset.x-k8s.io"}


@pytest.mark.parametrize("stack", STACKS)
def test_what_each_chart_renders(plans: dict[str, Plan], stack: str) -> None:
    by_chart = Counter(r["parent"].rsplit("::", 1)[-1] for r in rendered(plans[stack]))
    # kueue 0.19.2 renders 78 objects with the stack's values; jobset 0.12.0 renders 21.
    assert by_chart == {"kueue-chart": 78, "jobset-chart": 21}
    kinds = Counter(r["inputs"]["kind"] for r in rendered(plans[stack]))
    assert kinds["MutatingWebhookConfiguration"] == kinds["ValidatingWebhookConfiguration"] == 2
    assert kinds["Deployment"] == 2 and kinds["CustomResourceDefinition"] == 12


@pytest.mark.parametrize("stack", STACKS)
def test_namespaced_objects_take_the_charts_namespace_and_cluster_objects_none(
    plans: dict[str, Plan], stack: str
) -> None:
    for record in rendered(plans[stack]):
        metadata = record["inputs"]["metadata"]
        kind = record["inputs"]["kind"]
        chart_namespace = "kueue-system" if record["name"].startswith("kueue-chart:") else "jobset-system"
        if kind in ("ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "APIService"):
            assert "namespace" not in metadata, record["name"]
            assert "/" not in record["name"]
        elif record["name"] == "kueue-chart:kube-system/kueue-visibility-server-auth-reader":
            assert metadata["namespace"] == "kube-system"  # the chart's own choice: API server auth reader role
        elif kind not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            assert metadata["namespace"] == chart_namespace, record["name"]
            assert record["name"].endswith(f"{chart_namespace}/{metadata['name']}")
    # The kueue chart's template itself writes a namespace on its (cluster-scoped) webhook configurations; the
    # provider keeps what the template writes, and names the resource with it.
    webhook = named(
        plans[stack], "kueue-chart:kueue-system/kueue-mutating-webhook-configuration", "MutatingWebhookConfiguration"
    )
    assert webhook["inputs"]["metadata"]["namespace"] == "kueue-system"


@pytest.mark.parametrize("stack", STACKS)
def test_secret_data_is_kept_secret(plans: dict[str, Plan], stack: str) -> None:
    secrets = [r for r in rendered(plans[stack]) if r["inputs"]["kind"] == "Secret"]
    assert {s["name"] for s in secrets} == {
        "kueue-chart:kueue-system/kueue-webhook-server-cert",
        "jobset-chart:jobset-system/jobset-webhook-server-cert",
    }
    assert all(s["inputs"].get("data", "[secret]") == "[secret]" for s in secrets)


@pytest.mark.parametrize("stack", STACKS)
def test_every_rendered_object_is_one_the_api_server_accepts(plans: dict[str, Plan], stack: str) -> None:
    assert validate_all([r["inputs"] for r in rendered(plans[stack])]) == []


def test_rendered_with_exactly_the_values_the_program_passes(plans: dict[str, Plan]) -> None:
    """dev: the controllers land on the system pool with requests sized for at most 64 nodes (config/queues.py)."""
    plan = plans["dev"]
    kueue = named(plan, "kueue-chart:kueue-system/kueue-controller-manager")["inputs"]["spec"]["template"]["spec"]
    assert kueue["nodeSelector"] == {"cloud.google.com/gke-nodepool": "system"}
    (manager,) = [c for c in kueue["containers"] if c["name"] == "manager"]
    assert manager["resources"] == {"requests": {"cpu": "500m", "memory": "512Mi"},
                                    "limits": {"cpu": "1", "memory": "1Gi"}}  # fmt: skip
    config = named(plan, "kueue-chart:kueue-system/kueue-manager-config", "ConfigMap")["inputs"]["data"][
        "controller_manager_config.yaml"
    ]
    assert "manageJobsWithoutQueueName: false" in config
    assert "- jobset.x-k8s.io/jobset" in config
    jobset = named(plan, "jobset-chart:jobset-system/jobset-controller")["inputs"]["spec"]["template"]["spec"]
    assert jobset["nodeSelector"] == {"cloud.google.com/gke-nodepool": "system"}


def chart_resource(**values: Any) -> dict[str, Any]:
    return {
        "urn": "urn:pulumi:t::tpu-stack::tpu-stack:index:KueueInstall$kubernetes:helm.sh/v4:Chart::kueue-chart",
        "type": charts.CHART_TYPE,
        "name": "kueue-chart",
        "inputs": {
            "name": "kueue",
            "chart": "oci://registry.k8s.io/kueue/charts/kueue",
            "version": "0.19.2",
            "namespace": "kueue-system",
            "values": values,
        },
    }


def test_a_changed_value_changes_the_render_not_a_cached_one() -> None:
    def node_selector(values: dict[str, Any]) -> dict[str, str]:
        records = charts.children(chart_resource(controllerManager={"nodeSelector": values}), "1.33")
        (deployment,) = [r for r in records if r["inputs"]["kind"] == "Deployment"]
        selector: dict[str, str] = deployment["inputs"]["spec"]["template"]["spec"]["nodeSelector"]
        return selector

    assert node_selector({"pool": "a"}) == {"pool": "a"}
    assert node_selector({"pool": "b"}) == {"pool": "b"}


def test_a_chart_with_an_unknown_input_renders_nothing() -> None:
    """The provider's Construct returns no children while any input is unknown (new stack, namespace pending)."""
    resource = chart_resource()
    resource["inputs"]["namespace"] = "[unknown]"
    assert charts.children(resource, "1.33") == []


def test_unknown_values_keys_are_named_with_their_path() -> None:
    defaults = {"controllerManager": {"manager": {"resources": {}}, "nodeSelector": {}}, "replicas": 1}
    values = {
        "controllerManager": {"manger": {}, "nodeSelector": {"any": "label"}, "manager": {"resources": {"x": 1}}},
        "replica": 2,
    }
    assert charts.unknown_value_keys(values, defaults) == ["controllerManager.manger", "replica"]


def test_fields_of_an_object_the_chart_renders_whole_are_accepted_misspellings_around_it_are_not() -> None:
    """JobSet's template renders `with .Values.controller.podSecurityContext` whole (toYaml): every
    PodSecurityContext field passes through, though values.yaml lists only runAsNonRoot and seccompProfile."""
    archive = charts.CHART_DIR / "jobset-0.12.0.tgz"
    whole = charts.whole_values(archive)
    assert {"controller.podSecurityContext", "controller.securityContext", "controller.annotations"} <= whole
    values = {"controller": {"podSecurityContext": {"runAsUser": 65532}, "podSecurityContex": {"runAsUser": 1}}}
    defaults = charts.chart_defaults(archive)
    assert charts.unknown_value_keys(values, defaults, whole=whole) == ["controller.podSecurityContex"]


@pytest.mark.parametrize("stack", STACKS)
def test_the_controllers_run_as_their_images_user_and_pull_every_time(plans: dict[str, Plan], stack: str) -> None:
    """Both images run as 65532:65532 (USER in the Kueue and JobSet Dockerfiles); checkov CKV_K8S_40 and 15."""
    for name in ("kueue-chart:kueue-system/kueue-controller-manager", "jobset-chart:jobset-system/jobset-controller"):
        pod = named(plans[stack], name)["inputs"]["spec"]["template"]["spec"]
        assert pod["securityContext"] == {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "runAsGroup": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        assert [c["imagePullPolicy"] for c in pod["containers"]] == ["Always"]


def test_a_misspelled_values_key_fails_the_preview_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from components import kueue_install

    real = kueue_install.chart_values

    def misspelled(config: Any) -> dict[str, Any]:
        values = real(config)
        values["controllerManager"]["nodeSelectr"] = values["controllerManager"].pop("nodeSelector")
        return values

    monkeypatch.setattr(kueue_install, "chart_values", misspelled)
    assert (
        cli.main(["preview", "--stack", "dev", "--config", str(stack_path("dev")), "--out", str(tmp_path), "--quiet"])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: chart kueue 0.19.2 (resource kueue-chart): values key(s) controllerManager.nodeSelectr not in the "
        "chart's values.yaml; fix the spelling (helm would silently ignore them)"
    ]
    assert not (tmp_path / "plan.json").exists()


def test_a_chart_version_that_is_not_vendored_fails_the_preview(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text(stack_path("dev").read_text() + "  tpu-stack:charts:\n    kueueVersion: 0.19.1\n")
    assert cli.main(["preview", "--stack", "dev", "--config", str(stack_file), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: chart oci://registry.k8s.io/kueue/charts/kueue version 0.19.1 is not vendored "
        "(vendor/charts/kueue-0.19.1.tgz); use a vendored version or add it with vendor/refresh.sh"
    ]


def test_plan_json_holds_the_rendered_children_one_per_line(tmp_path: Path) -> None:
    argv = ["preview", "--stack", "prod", "--config", str(stack_path("prod")), "--out", str(tmp_path), "--quiet"]
    assert cli.main([*argv, "--policy-config", str(policy_check.TEAM_CONFIG)]) == 0
    text = (tmp_path / "plan.json").read_text()
    plan = json.loads(text)
    children = [r for r in plan["resources"] if r.get("rendered")]
    assert len(children) == 99
    lines = text.splitlines()
    assert sum(1 for line in lines if '"rendered": true' in line) == 99
    assert (tmp_path / "manifests" / "kueue-chart.yaml").is_file()
    assert (tmp_path / "manifests" / "jobset-chart.yaml").is_file()


# ---- the JobSet chart's webhook cert Secret: applied without the data its controller owns -------------------

CERT_SECRET = "jobset-chart:jobset-system/jobset-webhook-server-cert"


def test_the_jobset_chart_itself_renders_empty_cert_data_keys() -> None:
    """What jobset 0.12.0's templates/internalcert/secret.yaml renders (jobset issue 1205)."""
    request = charts.ChartRequest("jobset-chart", "jobset", "oci://registry.k8s.io/jobset/charts/jobset", "0.12.0",
                                  "jobset-system", {})  # fmt: skip
    (secret,) = [o for o in charts.rendered_objects(request, "1.33") if o["kind"] == "Secret"]
    assert secret["data"] == {"ca.crt": "", "ca.key": "", "tls.crt": "", "tls.key": ""}


@pytest.mark.parametrize("stack", STACKS)
def test_the_jobset_cert_secret_is_applied_without_data_and_its_data_ignored(
    plans: dict[str, Plan], stack: str
) -> None:
    """The program's transform on the JobSet Chart runs on the Secret as the engine runs it: the provider applies
    the Secret as the fixed chart renders it (jobset PR 1248: no `data`), and ignores `data` on updates."""
    secret = named(plans[stack], CERT_SECRET, "Secret")
    assert secret["inputs"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "labels": {
                "helm.sh/chart": "jobset-0.12.0",
                "app.kubernetes.io/managed-by": "Helm",
                "app.kubernetes.io/version": "0.12.0",
                "app.kubernetes.io/name": "jobset",
                "app.kubernetes.io/instance": "jobset",
                "app.kubernetes.io/component": "webhook",
            },
            "name": "jobset-webhook-server-cert",
            "namespace": "jobset-system",
        },
    }
    assert secret["ignoreChanges"] == ["data"]
    # Kueue 0.19.2's chart declares no data on its cert Secret: nothing to leave out there.
    kueue = named(plans[stack], "kueue-chart:kueue-system/kueue-webhook-server-cert", "Secret")
    assert "data" not in kueue["inputs"] and kueue["ignoreChanges"] == []
    others = [r for r in rendered(plans[stack]) if r["name"] != CERT_SECRET]
    assert all(r["ignoreChanges"] == [] for r in others)


def _child(name: str = "c:ns/x", **inputs: Any) -> dict[str, Any]:
    return {"type": "kubernetes:core/v1:ConfigMap", "name": name, "ignoreChanges": [], "inputs": inputs}


def test_transforms_run_in_the_engines_order_chart_then_ancestors_then_stack() -> None:
    def tag(label: str) -> Any:
        def add(args: Any) -> Any:
            return pulumi.ResourceTransformResult({**args.props, "seen": [*args.props.get("seen", []), label]},
                                                  args.opts)  # fmt: skip

        return add

    transforms = charts.Transforms({"chart": [tag("chart")], "install": [tag("install")]}, [tag("stack")])
    parents = {"chart": "install", "install": "stack-urn", "stack-urn": None}
    ordered = transforms.for_children_of("chart", parents)
    assert charts.transformed(_child(), ordered)["inputs"] == {"seen": ["chart", "install", "stack"]}


def test_a_transform_setting_an_option_the_render_does_not_record_fails_it() -> None:
    def protect(args: Any) -> Any:
        return pulumi.ResourceTransformResult(args.props, pulumi.ResourceOptions.merge(args.opts,
                                              pulumi.ResourceOptions(protect=True)))  # fmt: skip

    with pytest.raises(charts.ChartError, match=r"sets protect on c:ns/x; the offline render records only props"):
        charts.transformed(_child(), [protect])
