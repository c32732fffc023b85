"""The offline validator refuses what the API server would refuse on create, and accepts what it would admit.

Rule messages quoted below are the CRDs' own (vendor/crds, Kueue v0.19.2 and JobSet v0.12.0).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import celpy
import pytest

from offline import validate as v

Obj = dict[str, Any]

# Rules of the vendored CRDs that cannot be evaluated here. Empty today: every create-time rule parses and uses
# only functions celpy has. A CRD update that adds one must show up here, not pass quietly.
EXPECTED_UNSUPPORTED: frozenset[v.UnsupportedRule] = frozenset()

KUEUE = "kueue.x-k8s.io/v1beta2"


def resource_flavor() -> Obj:
    return {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": {"name": "v5e-4x4"},
        "spec": {
            "nodeLabels": {
                "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                "cloud.google.com/gke-tpu-topology": "4x4",
            },
            "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def cluster_queue() -> Obj:
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": {
            "cohortName": "tpu",
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": ["google.com/tpu"],
                    "flavors": [{"name": "v5e-4x4", "resources": [{"name": "google.com/tpu", "nominalQuota": 24}]}],
                }
            ],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "dws", "onFlavors": ["v5e-4x4"]}]},
        },
    }


def local_queue() -> Obj:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": "team-a", "namespace": "team-a"},
        "spec": {"clusterQueue": "team-a"},
    }


def admission_check() -> Obj:
    return {
        "apiVersion": KUEUE,
        "kind": "AdmissionCheck",
        "metadata": {"name": "dws"},
        "spec": {
            "controllerName": "kueue.x-k8s.io/provisioning-request",
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "dws-config"},
        },
    }


def provisioning_request_config() -> Obj:
    return {
        "apiVersion": KUEUE,
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": "dws-config"},
        "spec": {"provisioningClassName": "queued-provisioning.gke.io", "managedResources": ["google.com/tpu"]},
    }


def cohort() -> Obj:
    return {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "tpu"}, "spec": {}}


def jobset() -> Obj:
    pod_spec = {
        "restartPolicy": "Never",
        "nodeSelector": {
            "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
            "cloud.google.com/gke-tpu-topology": "4x4",
        },
        "containers": [
            {
                "name": "worker",
                "image": "us-docker.pkg.dev/proj/train/worker:1.0.0",
                "ports": [{"containerPort": 8471}],
                "resources": {"limits": {"google.com/tpu": 4}},
            }
        ],
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "train",
            "namespace": "team-a",
            "labels": {"kueue.x-k8s.io/queue-name": "team-a"},
            "annotations": {"alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"},
        },
        "spec": {
            "failurePolicy": {"maxRestarts": 4},
            "replicatedJobs": [
                {
                    "name": "slice",
                    "replicas": 2,
                    "template": {
                        "spec": {"parallelism": 4, "completions": 4, "backoffLimit": 0, "template": {"spec": pod_spec}}
                    },
                }
            ],
        },
    }


def deployment() -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "sax-admin-server", "namespace": "sax"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "sax-admin-server"}},
            "template": {
                "metadata": {"labels": {"app": "sax-admin-server"}},
                "spec": {
                    "serviceAccountName": "sax-sa",
                    "containers": [
                        {
                            "name": "sax-admin-server",
                            "image": "us-docker.pkg.dev/cloud-tpu-images/inference/sax-admin-server:v1.1.0",
                            "ports": [{"containerPort": 10000}],
                        }
                    ],
                },
            },
        },
    }


def namespace() -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}


def priority_class() -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "very-high"},
        "value": 1000,
        "globalDefault": False,
    }


def service_account() -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sax-sa", "namespace": "sax"}}


def service() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "sax-http-lb", "namespace": "sax"},
        "spec": {
            "type": "LoadBalancer",
            "selector": {"app": "sax-http"},
            "ports": [{"port": 8888, "targetPort": 8888}],
        },
    }


VALID_CUSTOM: dict[str, Callable[[], Obj]] = {
    "ResourceFlavor": resource_flavor,
    "ClusterQueue": cluster_queue,
    "LocalQueue": local_queue,
    "AdmissionCheck": admission_check,
    "ProvisioningRequestConfig": provisioning_request_config,
    "Cohort": cohort,
    "JobSet": jobset,
}
VALID_CORE: dict[str, Callable[[], Obj]] = {
    "Namespace": namespace,
    "PriorityClass": priority_class,
    "ServiceAccount": service_account,
    "Deployment": deployment,
    "Service": service,
}


# --- what is known --------------------------------------------------------------------------------------------


def test_known_custom_kinds_are_the_vendored_crds_versions() -> None:
    known = v.known_custom_kinds()
    kueue_kinds = {
        "AdmissionCheck",
        "ClusterQueue",
        "Cohort",
        "LocalQueue",
        "MultiKueueCluster",
        "MultiKueueConfig",
        "ProvisioningRequestConfig",
        "ResourceFlavor",
        "Topology",
        "WorkloadPriorityClass",
    }
    expected = {(f"kueue.x-k8s.io/{ver}", k) for k in kueue_kinds for ver in ("v1beta1", "v1beta2")}
    monitoring = {
        (f"monitoring.googleapis.com/{ver}", k)
        for k in ("PodMonitoring", "ClusterPodMonitoring")
        for ver in ("v1", "v1alpha1")
    }
    lws = {("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")}
    assert known == expected | {("jobset.x-k8s.io/v1alpha2", "JobSet")} | monitoring | lws


def test_unsupported_rules_are_exactly_the_listed_ones() -> None:
    assert v.unsupported_rules() == EXPECTED_UNSUPPORTED


def test_every_create_time_rule_compiles_to_a_program() -> None:
    rules = [r for crd in v.load_crds().versions.values() for r in crd.rules if not r.update_only]
    assert len(rules) >= 20  # the CRDs carry about two dozen create-time rules
    assert all(not isinstance(v.compile_rule(r.rule), str) for r in rules)


def test_a_rule_with_a_function_celpy_lacks_is_reported_not_passed() -> None:
    reason = v.compile_rule("isQuantity(self.quota) && self.name.lowerAscii() == 'x'")
    assert reason == "uses functions celpy lacks: isQuantity, lowerAscii"
    assert str(v.compile_rule("self.all(x,")).startswith("does not parse")


def test_crds_come_from_the_folder_given(tmp_path: Path) -> None:
    (tmp_path / "kueue").mkdir(parents=True)
    shutil.copy(v.CRD_DIR / "kueue" / "kueue.x-k8s.io_cohorts.yaml", tmp_path / "kueue")
    assert set(v.load_crds(tmp_path).versions) == {(KUEUE, "Cohort"), ("kueue.x-k8s.io/v1beta1", "Cohort")}
    with pytest.raises(FileNotFoundError):
        v.load_crds(tmp_path / "missing")


def test_crds_are_the_repos_own_copies() -> None:
    assert v.load_crds().root == (Path(__file__).resolve().parents[2] / "vendor" / "crds")


# --- custom resources: valid ----------------------------------------------------------------------------------


@pytest.mark.parametrize("make", VALID_CUSTOM.values(), ids=VALID_CUSTOM.keys())
def test_valid_custom_resource_passes(make: Callable[[], Obj]) -> None:
    assert v.validate_object(make()) == []


def test_numbers_sent_as_floats_are_accepted() -> None:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 24.0
    js = jobset()
    js["spec"]["replicatedJobs"][0]["replicas"] = 2.0
    assert v.validate_all([cq, js]) == []


def test_defaults_are_applied_before_rules_without_touching_the_input() -> None:
    # The preemption rule reads self.reclaimWithinCohort; it only exists once the CRD's default is filled in.
    cq = cluster_queue()
    cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    assert v.validate_object(cq) == []
    assert cq["spec"]["preemption"] == {"withinClusterQueue": "LowerPriority"}
    assert "stopPolicy" not in cq["spec"]


# --- custom resources: unknown fields and version selection ---------------------------------------------------


def test_v1beta1_cohort_field_is_unknown_in_v1beta2() -> None:
    cq = cluster_queue()
    cq["spec"]["cohort"] = cq["spec"].pop("cohortName")
    assert v.validate_object(cq) == ["ClusterQueue/team-a: spec.cohort: unknown field"]


def test_v1beta1_cohort_field_is_accepted_in_v1beta1() -> None:
    cq = cluster_queue()
    cq["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    cq["spec"]["cohort"] = cq["spec"].pop("cohortName")
    assert v.validate_object(cq) == []
    cq["spec"]["cohortName"] = "tpu"
    assert v.validate_object(cq) == ["ClusterQueue/team-a: spec.cohortName: unknown field"]


def test_unknown_field_deep_in_a_jobset_pod_template_is_rejected() -> None:
    js = jobset()
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["imagePolicy"] = "x"
    assert v.validate_object(js) == [
        "JobSet/train: spec.replicatedJobs[0].template.spec.template.spec.containers[0].imagePolicy: unknown field"
    ]


def test_unknown_top_level_field_is_rejected() -> None:
    lq = local_queue()
    lq["specs"] = {}
    assert v.validate_object(lq) == ["LocalQueue/team-a: specs: unknown field"]


def test_schema_errors_name_the_path() -> None:
    cq = cluster_queue()
    cq["spec"]["queueingStrategy"] = "FIFO"
    del cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
    assert v.validate_object(cq) == [
        "ClusterQueue/team-a: spec.queueingStrategy: 'FIFO' is not one of ['StrictFIFO', 'BestEffortFIFO']",
        "ClusterQueue/team-a: spec.resourceGroups[0].flavors[0].resources[0]: 'nominalQuota' is a required property",
    ]


def test_quantity_must_be_int_or_quantity_string() -> None:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "24 chips"
    [error] = v.validate_object(cq)
    assert error.startswith("ClusterQueue/team-a: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: ")
    assert "does not match" in error
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "24Ki"
    assert v.validate_object(cq) == []


def test_go_regexp_patterns_are_honoured() -> None:
    # AdmissionCheck parameters.kind uses `^(?i)...`, which Python's re refuses; RE2 (as the server) accepts it.
    ac = admission_check()
    ac["spec"]["parameters"]["kind"] = "provisioningrequestconfig"
    assert v.validate_object(ac) == []
    ac["spec"]["parameters"]["kind"] = "1Config"
    [error] = v.validate_object(ac)
    assert error.startswith("AdmissionCheck/dws: spec.parameters.kind: '1Config' does not match")


def test_list_map_keys_must_be_unique() -> None:
    cq = cluster_queue()
    flavors = cq["spec"]["resourceGroups"][0]["flavors"]
    flavors.append(flavors[0])
    assert v.validate_object(cq) == [
        "ClusterQueue/team-a: spec.resourceGroups[0].flavors[1]: duplicate entry name='v5e-4x4'"
    ]


def test_list_set_items_must_be_unique() -> None:
    prc = provisioning_request_config()
    prc["spec"]["managedResources"] = ["google.com/tpu", "google.com/tpu"]
    assert v.validate_object(prc) == [
        "ProvisioningRequestConfig/dws-config: spec.managedResources[1]: duplicate entry 'google.com/tpu'"
    ]


# --- custom resources: CEL rules ------------------------------------------------------------------------------


def test_rule_flavors_must_have_the_same_number_of_resources_as_the_covered_resources() -> None:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"][0]["coveredResources"] = ["google.com/tpu", "cpu"]
    assert v.validate_object(cq) == [
        "ClusterQueue/team-a: spec.resourceGroups[0]: flavors must have the same number of resources as the "
        "coveredResources"
    ]


def test_rule_borrowing_limit_must_be_nil_when_cohort_is_empty() -> None:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 8
    assert v.validate_object(cq) == []  # in a cohort: fine
    del cq["spec"]["cohortName"]
    assert v.validate_object(cq) == ["ClusterQueue/team-a: spec: borrowingLimit must be nil when cohort is empty"]


def test_rule_reclaim_never_forbids_borrow_within_cohort() -> None:
    cq = cluster_queue()
    cq["spec"]["preemption"] = {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}
    assert v.validate_object(cq) == [
        "ClusterQueue/team-a: spec.preemption: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
    ]


def test_rule_startup_policy_and_depends_on_are_mutually_exclusive() -> None:
    js = jobset()
    first = js["spec"]["replicatedJobs"][0]
    js["spec"]["replicatedJobs"].append(
        {**first, "name": "second", "dependsOn": [{"name": "slice", "status": "Ready"}]}
    )
    assert v.validate_object(js) == []
    js["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    assert v.validate_object(js) == ["JobSet/train: spec: StartupPolicy and DependsOn APIs are mutually exclusive"]


def test_rule_that_reads_a_missing_field_rejects_the_object() -> None:
    # "!has(self.topologyName) || self.nodeLabels.size() >= 1": with no nodeLabels the server errors, so do we.
    rf = resource_flavor()
    rf["spec"] = {"topologyName": "tpu-topology"}
    [error] = v.validate_object(rf)
    assert error.startswith("ResourceFlavor/v5e-4x4: spec: at least one nodeLabel is required when topology is set")
    assert "could not be evaluated" in error


def test_rules_using_old_self_are_skipped_on_create() -> None:
    crd = v.load_crds().versions[("jobset.x-k8s.io/v1alpha2", "JobSet")]
    [immutable] = [r for r in crd.rules if r.path == "spec.failurePolicy"]
    assert immutable.rule == "self == oldSelf" and immutable.update_only
    # Evaluated without an old object the rule errors, which would reject the object...
    with pytest.raises(celpy.CELEvalError, match="oldSelf"):
        v.compile_rule(immutable.rule).evaluate({"self": celpy.json_to_cel({"maxRestarts": 4})})
    # ...yet a JobSet that sets failurePolicy is admitted: the rule is not evaluated on create.
    assert "failurePolicy" in jobset()["spec"]
    assert v.validate_object(jobset()) == []


def test_update_only_rules_are_classified_by_old_self() -> None:
    crd = v.load_crds().versions[(KUEUE, "ResourceFlavor")]
    spec_rules = [r for r in crd.rules if r.path == "spec"]
    assert [(r.message, r.update_only) for r in spec_rules] == [
        ("at least one nodeLabel is required when topology is set", False),
        ("nodeLabels are immutable when topologyName is set", True),
        ("tolerations are immutable when topologyName is set", True),
        ("topologyName is immutable when topologyName is set", True),
    ]


# --- core kinds -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", VALID_CORE.values(), ids=VALID_CORE.keys())
def test_valid_core_object_passes(make: Callable[[], Obj]) -> None:
    assert v.validate_object(make()) == []


def test_unknown_field_in_deployment_spec_fails_strict() -> None:
    d = deployment()
    d["spec"]["replica"] = 2
    assert v.validate_object(d) == ["Deployment/sax-admin-server: spec.replica: unknown field"]


def test_secret_fields_the_plan_holds_encrypted_or_unknown_are_not_checked() -> None:
    """A Secret's stringData is a secret output: "[secret]" when known, "[unknown]" while it is made from an output
    the engine does not know yet (a MultiKueue kubeconfig holds a worker's new token); neither is its value."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "w-kubeconfig", "namespace": "kueue-system"},
              "type": "Opaque"}  # fmt: skip
    assert v.validate_object({**secret, "stringData": "[secret]"}) == []
    assert v.validate_object({**secret, "stringData": "[unknown]"}) == []
    assert v.validate_object({**secret, "stringData": "plain text"}) == [
        "Secret/w-kubeconfig: stringData: 'plain text' is not of type 'object', 'null'"
    ]


def test_missing_required_field_fails() -> None:
    d = deployment()
    del d["spec"]["template"]["spec"]["containers"][0]["name"]
    assert v.validate_object(d) == [
        "Deployment/sax-admin-server: spec.template.spec.containers[0]: 'name' is a required property"
    ]


def test_core_schema_version_is_newest_shipped_not_newer_than_asked() -> None:
    assert v.core_schema_version("1.33") == "1.33.0"
    assert v.core_schema_version("v1.31.4-gke.100") == "1.31.0"
    assert v.core_schema_version("1.99") == "1.37.0"  # newest kubernetes_validate 1.37.0 ships
    with pytest.raises(ValueError, match="no schemas as old"):
        v.core_schema_version("1.20")


def test_kubernetes_version_selects_core_schemas() -> None:
    # ValidatingAdmissionPolicy went GA (admissionregistration.k8s.io/v1) in 1.30.
    vap = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": {"validations": [{"expression": "true"}]},
    }
    assert v.validate_object(vap, kubernetes_version="1.33") == []
    assert v.validate_object(vap, kubernetes_version="1.29") == [
        "ValidatingAdmissionPolicy/p: no schema for admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"
    ]


# --- identity and metadata ------------------------------------------------------------------------------------


def test_unknown_api_version_or_kind_is_an_error() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert v.validate_object(widget) == ["Widget/w: no schema for example.com/v1/Widget"]
    lookalike = {**deployment(), "apiVersion": "apps.example.com/v1"}
    assert v.validate_object(lookalike) == ["Deployment/sax-admin-server: no schema for apps.example.com/v1/Deployment"]
    assert v.validate_object({**cluster_queue(), "apiVersion": "kueue.x-k8s.io/v1"}) == [
        "ClusterQueue/team-a: no schema for kueue.x-k8s.io/v1/ClusterQueue"
    ]
    assert v.validate_object({**cluster_queue(), "kind": "ClusterQueues"}) == [
        "ClusterQueues/team-a: no schema for kueue.x-k8s.io/v1beta2/ClusterQueues"
    ]
    assert v.validate_object({"metadata": {"name": "x"}}) == ["<no kind>/x: apiVersion and kind are required"]


@pytest.mark.parametrize("make", [cluster_queue, namespace], ids=["custom", "core"])
def test_missing_metadata_name_is_an_error(make: Callable[[], Obj]) -> None:
    obj = make()
    del obj["metadata"]["name"]
    assert f"{obj['kind']}/<no name>: metadata.name: required" in v.validate_object(obj)


def test_names_follow_the_kinds_rules() -> None:
    assert v.validate_object({**cluster_queue(), "metadata": {"name": "Team_A"}}) == [
        "ClusterQueue/Team_A: metadata.name: 'Team_A' is not a valid dns1123-subdomain name"
    ]
    assert v.validate_object({**cluster_queue(), "metadata": {"name": "team.a"}}) == []
    assert v.validate_object({**namespace(), "metadata": {"name": "team.a"}}) == [
        "Namespace/team.a: metadata.name: 'team.a' is not a valid dns1123-label name"
    ]
    svc = service()
    svc["metadata"]["name"] = "8888-lb"
    assert v.validate_object(svc) == ["Service/8888-lb: metadata.name: '8888-lb' is not a valid dns1035-label name"]


def test_label_keys_and_values_are_checked() -> None:
    js = jobset()
    js["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team a", "bad key/x": "v"}
    assert v.validate_object(js) == [
        "JobSet/train: metadata.labels[kueue.x-k8s.io/queue-name]: invalid value 'team a'",
        "JobSet/train: metadata.labels[bad key/x]: invalid key",
    ]


# --- reuse (what keeps validation fast; the speed itself is measured in bench/, not asserted here) -----------


def test_schemas_and_rules_are_built_once_not_per_object(monkeypatch: pytest.MonkeyPatch) -> None:
    objs = [make() for _ in range(30) for make in VALID_CUSTOM.values()]
    v.validate_all(objs[: len(VALID_CUSTOM)])  # first use loads the CRDs and compiles their rules
    built: list[object] = []
    real = v._Draft7Re2

    def counting(*args: object, **kwargs: object) -> object:
        built.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(v, "_Draft7Re2", counting)
    compiled_before = v._compile_rule.cache_info().misses
    assert v.validate_all(objs) == []
    assert built == []
    assert v._compile_rule.cache_info().misses == compiled_before


def test_pod_monitoring_url_rule_is_evaluated() -> None:
    """The Managed Prometheus CRDs check proxy URLs with Kubernetes' CEL isURL, which the validator provides."""
    endpoint = {"port": 8080, "interval": "30s", "proxyUrl": "proxy.internal:3128"}
    monitoring = {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": {"name": "kueue", "namespace": "kueue-system"},
        "spec": {"selector": {"matchLabels": {"app": "kueue"}}, "endpoints": [endpoint]},
    }
    assert v.validate_object(monitoring) == [
        "PodMonitoring/kueue: spec.endpoints[0].proxyUrl: failed rule: isURL(self) && !self.matches('@')"
    ]
    endpoint["proxyUrl"] = "http://proxy.internal:3128"
    assert v.validate_object(monitoring) == []
