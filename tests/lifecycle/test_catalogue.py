"""The catalogue itself: every type the stacks declare has a rule, every rule a source, and each plan check
finds the breach it exists for (a hand-made one, on a copy of dev's or prod's plan)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from offline.lifecycle import transition
from tests.lifecycle.catalogue import CATALOGUE, ENGINE, REFUSES, REPLACES, REQUIRES
from tests.lifecycle.conftest import Records


def test_every_type_the_stacks_declare_has_a_replacement_rule(
    deployed: dict[str, Records], multiregion: Records
) -> None:
    """A new kind of object is a question to research before it ships, not a silent pass."""
    declared = {r["type"] for records in [*deployed.values(), multiregion] for r in records}
    assert sorted(declared - set(CATALOGUE.replaces)) == []


def test_an_unknown_type_stops_the_model() -> None:
    record = {"urn": "u", "type": "gcp:new/thing:Thing", "name": "t", "inputs": {"a": 1}}
    with pytest.raises(KeyError, match="no replacement rule for gcp:new/thing:Thing"):
        transition([record], [{**record, "inputs": {"a": 2}}], CATALOGUE)


def test_every_entry_names_its_source() -> None:
    sources = [e.source for e in REPLACES + REFUSES] + [r.source for r in REQUIRES] + [s for _, s in ENGINE.values()]
    assert all(len(source) > 20 for source in sources)
    assert len({r.id for r in REQUIRES}) == len(REQUIRES)


def _named(records: Records, name: str) -> dict[str, Any]:
    return next(r for r in records if r["name"] == name)


def _without_dependency(records: Records, name: str, on: str) -> Records:
    """`name` no longer waits for `on` (nor for the component that holds it)."""
    broken = copy.deepcopy(records)
    target = _named(broken, on)
    record = _named(broken, name)
    record["dependencies"] = [d for d in record["dependencies"] if d not in (target["urn"], target.get("parent"))]
    return broken


@pytest.mark.parametrize(
    ("stack", "name", "on", "rule"),
    [
        ("dev", "queues-resourceflavor-multislice", "kueue-chart", "objects-after-their-webhooks"),
        ("prod", "saxml-model-servers-0", "kueue-chart", "objects-after-their-webhooks"),
        ("dev", "kueue-metrics-secret", "kueue-metrics-serviceaccount", "token-secret-after-account"),
        ("dev", "queues-namespace-research", "kueue-chart", "queue-namespaces-before-kueue"),
    ],
)
def test_each_ordering_rule_catches_a_missing_dependency(
    deployed: dict[str, Records], stack: str, name: str, on: str, rule: str
) -> None:
    assert CATALOGUE.breaches(deployed[stack], {}) == []
    breaches = CATALOGUE.breaches(_without_dependency(deployed[stack], name, on), {})
    assert [line.split(":")[0] for line in breaches] == [rule]
    assert name in breaches[0]


def test_protection_and_slice_shape_rules_catch_their_breach(deployed: dict[str, Records]) -> None:
    prod = copy.deepcopy(deployed["prod"])
    _named(prod, "serve-0")["protect"] = False
    assert CATALOGUE.breaches(prod, {}) == [
        "protected-means-all: serve-0 is not protected: destroy deletes it before the protected cluster stops"
    ]
    dev = copy.deepcopy(deployed["dev"])
    _named(dev, "multislice-1")["replaceOnChanges"] = []
    assert CATALOGUE.breaches(dev, {}) == [
        "slice-shape-replaces-pool: multislice-1: a new topology would be planned as an update the provider never "
        "applies"
    ]


def test_access_rules_catch_an_unreachable_control_plane_or_webhook(deployed: dict[str, Records]) -> None:
    prod = copy.deepcopy(deployed["prod"])
    prod.remove(_named(prod, "tpu-prod-cp-webhooks"))
    assert CATALOGUE.breaches(prod, {}) == [
        "control-plane-reaches-webhooks: jobset-chart:jobset-mutating-webhook-configuration "
        "mutate-jobset-x-k8s-io-v1alpha2-jobset.x-k8s.io: no firewall rule lets the control plane reach port 9443 "
        "on private nodes",
        "control-plane-reaches-webhooks: kueue-chart:v1beta1.visibility.kueue.x-k8s.io: no firewall rule lets the "
        "control plane reach port 8082 on private nodes",
        "control-plane-reaches-webhooks: kueue-chart:kueue-system/kueue-mutating-webhook-configuration "
        "mappwrapper.kb.io: no firewall rule lets the control plane reach port 9443 on private nodes",
    ]
    dev = copy.deepcopy(deployed["dev"])
    policy = _named(dev, "kueue-policies-allow-api-server-calls")
    policy["inputs"]["spec"]["ingress"][0]["ports"] = [{"protocol": "TCP", "port": 9443}]
    del _named(dev, "tpu-dev-k8s")["inputs"]["clusterIdentifier"]
    (cluster,) = [r for r in dev if r["type"] == "gcp:container/cluster:Cluster"]
    cluster["inputs"]["masterAuthorizedNetworksConfig"] = {"cidrBlocks": []}
    assert CATALOGUE.breaches(dev, {}) == [
        "clients-reach-control-plane: tpu-dev: authorized networks on with no CIDR admit only the nodes",
        "clients-reach-control-plane: tpu-dev-k8s: no clusterIdentifier, a new kubeconfig replaces every object",
        "control-plane-reaches-webhooks: kueue-chart:v1beta1.visibility.kueue.x-k8s.io: no NetworkPolicy in "
        "kueue-system admits port 8082",
    ]


def test_the_cert_rule_catches_a_chart_secret_applied_with_data(deployed: dict[str, Records]) -> None:
    dev = copy.deepcopy(deployed["dev"])
    _named(dev, "jobset-chart:jobset-system/jobset-webhook-server-cert")["inputs"]["data"] = {"tls.crt": ""}
    assert CATALOGUE.breaches(dev, {}) == [
        "rotator-owned-cert-data: jobset-chart:jobset-system/jobset-webhook-server-cert: applies data its cert "
        "rotator owns"
    ]


def test_monitoring_rules_catch_validated_alerts_and_zero_positions(deployed: dict[str, Records]) -> None:
    dev = copy.deepcopy(deployed["dev"])
    alert = _named(dev, "monitoring-pending-research-cluster-queue")
    del alert["inputs"]["conditions"][0]["conditionPrometheusQueryLanguage"]["disableMetricValidation"]
    dashboard = _named(dev, "monitoring-dashboard")
    dashboard["inputs"]["dashboardJson"] = json.dumps({"displayName": "d", "mosaicLayout": {"columns": 48, "tiles": [
        {"xPos": 0, "width": 24, "height": 8, "widget": {"title": "t"}}]}})  # fmt: skip
    assert CATALOGUE.breaches(dev, {}) == [
        "alerts-on-unscraped-series: monitoring-pending-research-cluster-queue: its query reads series Managed "
        "Prometheus has not scraped yet on a new project",
        "dashboard-in-api-form: monitoring-dashboard: mosaicLayout.tiles[0].xPos is a zero value the API drops, so "
        "every update diffs",
    ]


def test_ladder_rules_catch_a_rung_out_of_order_or_a_queue_that_stops_early(deployed: dict[str, Records]) -> None:
    prod = copy.deepcopy(deployed["prod"])
    research = _named(prod, "queues-clusterqueue-research-cluster-queue")["inputs"]["spec"]
    research["resourceGroups"][0]["flavors"].reverse()
    training = _named(prod, "queues-clusterqueue-training-cluster-queue")["inputs"]["spec"]
    del training["flavorFungibility"]  # Kueue's defaults: whenCanBorrow MayStopSearch
    assert CATALOGUE.breaches(prod, {}) == [
        "ladder-flavors-in-order: queues-clusterqueue-research-cluster-queue: lists ladder train as ['burst', "
        "'train'], not ['train', 'burst']",
        "ladder-flavors-in-order: queues-clusterqueue-training-cluster-queue: stops at a rung it fits only by "
        "borrowing or preempting",
    ]


def test_ladder_rule_catches_a_queue_that_borrows_downstream_before_taking_back_its_own(
    deployed: dict[str, Records],
) -> None:
    """Kueue's default preference, BorrowingOverPreemption, would send prod's training to borrow research's idle
    burst slice rather than reclaim its own reserved train slice (flavorassigner.go isPreferred)."""
    prod = copy.deepcopy(deployed["prod"])
    training = _named(prod, "queues-clusterqueue-training-cluster-queue")["inputs"]["spec"]
    training["flavorFungibility"]["preference"] = "BorrowingOverPreemption"
    assert CATALOGUE.breaches(prod, {}) == [
        "ladder-flavors-in-order: queues-clusterqueue-training-cluster-queue: borrows on a later rung before taking "
        "back its own on an earlier"
    ]


def test_queue_webhook_rules_catch_what_the_crds_let_through(deployed: dict[str, Records]) -> None:
    """Kueue's ClusterQueue webhook refuses a resource covered by two groups and a check on a flavor the queue does
    not list; neither is a CRD rule, so offline/validate.py passes both."""
    dev = copy.deepcopy(deployed["dev"])
    spec = _named(dev, "queues-clusterqueue-training-cluster-queue")["inputs"]["spec"]
    (group,) = spec["resourceGroups"]
    spec["resourceGroups"] = [{**group, "flavors": group["flavors"][:1]}, {**group, "flavors": group["flavors"][1:]}]
    prod = copy.deepcopy(deployed["prod"])
    checks = _named(prod, "queues-clusterqueue-training-cluster-queue")["inputs"]["spec"]["admissionChecksStrategy"]
    checks["admissionChecks"][0]["onFlavors"] = ["burst-2"]
    assert CATALOGUE.breaches(dev, {}) == [
        "one-resource-group-per-resource: queues-clusterqueue-training-cluster-queue: google.com/tpu in more than one "
        "place of its resource groups"
    ]
    assert CATALOGUE.breaches(prod, {}) == [
        "admission-checks-on-listed-flavors: queues-clusterqueue-training-cluster-queue: admission check "
        "burst-provisioning on flavors it lacks: ['burst-2']"
    ]


def test_a_queue_that_does_not_wait_for_its_flavor_is_caught(deployed: dict[str, Records]) -> None:
    broken = _without_dependency(
        deployed["prod"], "queues-clusterqueue-research-cluster-queue", "queues-resourceflavor-burst"
    )
    assert CATALOGUE.breaches(broken, {}) == [
        "clusterqueues-after-their-flavors: queues-clusterqueue-research-cluster-queue may be created before its "
        "ResourceFlavor burst (and deleted after it)"
    ]


def test_a_clusterqueue_update_is_refused_only_on_its_concurrent_admission_policy(deployed: dict[str, Records]) -> None:
    old = _named(deployed["prod"], "queues-clusterqueue-research-cluster-queue")
    new = copy.deepcopy(old)
    new["inputs"]["spec"]["resourceGroups"][0]["flavors"].reverse()
    assert CATALOGUE.refuses(old, new, ["spec.resourceGroups[0].flavors[0].name"]) == []
    (refused,) = CATALOGUE.refuses(old, new, ["spec.concurrentAdmissionPolicy.migration.mode"])
    assert refused.startswith("spec.concurrentAdmissionPolicy.migration.mode: immutable (kubernetes-sigs/kueue v0.19.2")


def test_the_webhook_rule_reads_selectors_scopes_and_failure_policies() -> None:
    """Hand-made plans: a fail-closed webhook on `widgets` (any group) in namespaces labelled `team: a`, another
    that ignores failures, and one with an objectSelector; the Service each calls is rendered by chart `c`. Only the
    objects a fail-closed webhook really intercepts must wait for `c`."""
    chart = {"urn": "c", "type": "kubernetes:helm.sh/v4:Chart", "name": "c-chart", "inputs": {}, "provider": "p",
             "dependencies": []}  # fmt: skip

    def rendered(kind: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"urn": f"c:{name}", "type": kind, "name": f"c-chart:{name}", "parent": "c", "rendered": True,
                "inputs": inputs, "dependencies": []}  # fmt: skip

    def hook(name: str, **fields: Any) -> dict[str, Any]:
        rule = {"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["widgets"], "operations": ["CREATE"]}
        return {"name": name, "clientConfig": {"service": {"namespace": "sys", "name": "hooks"}}, "rules": [rule],
                **fields}  # fmt: skip

    config = rendered(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration",
        "hooks",
        {"metadata": {"name": "hooks"}, "webhooks": [
            hook("team-a.example", namespaceSelector={"matchLabels": {"team": "a"}}),
            hook("lenient.example", failurePolicy="Ignore"),
            hook("labelled.example", objectSelector={"matchExpressions": [{"key": "x", "operator": "Exists"}]}),
        ]},
    )  # fmt: skip
    service = rendered("kubernetes:core/v1:Service", "sys/hooks", {"metadata": {"name": "hooks", "namespace": "sys"},
                       "spec": {"ports": [{"port": 443, "targetPort": 9443}]}})  # fmt: skip

    def obj(name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
        return {"urn": name, "type": "kubernetes:example.com/v1:Widget", "name": name, "provider": "p",
                "dependencies": [], "inputs": {"metadata": {"name": name, "namespace": namespace,
                                                            "labels": labels or {}}}}  # fmt: skip

    namespace = {"urn": "ns-a", "type": "kubernetes:core/v1:Namespace", "name": "ns-a", "provider": "p",
                 "dependencies": [], "inputs": {"metadata": {"name": "a", "labels": {"team": "a"}}}}  # fmt: skip
    records = [chart, config, service, namespace, obj("in-a", "a"), obj("in-b", "b"), obj("labelled", "b", {"x": "1"})]

    def webhook_breaches() -> list[str]:
        return [line for line in CATALOGUE.breaches(records, {}) if line.startswith("objects-after-their-webhooks")]

    assert webhook_breaches() == [
        "objects-after-their-webhooks: in-a is created before c-chart serves the webhooks that intercept it "
        "(team-a.example)",
        "objects-after-their-webhooks: labelled is created before c-chart serves the webhooks that intercept it "
        "(labelled.example)",
    ]
    for record in records[4:]:
        record["dependencies"] = ["c"]
    assert webhook_breaches() == []


# ---- webhooks the plan cannot wait for, conversion webhooks, and backends read by their chart --------------------


def _crd_with_conversion() -> list[dict[str, Any]]:
    """Chart `c` renders a CRD of `gadgets` (example.com v1alpha1 served, v1 the storage version) whose conversion
    is a webhook on Service sys/hooks, and that Service."""
    chart = {"urn": "c", "type": "kubernetes:helm.sh/v4:Chart", "name": "c-chart", "inputs": {}, "provider": "p",
             "dependencies": []}  # fmt: skip
    crd = {"urn": "c:crd", "type": "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
           "name": "c-chart:gadgets.example.com", "parent": "c", "rendered": True, "dependencies": [],
           "inputs": {"metadata": {"name": "gadgets.example.com"}, "spec": {
               "group": "example.com", "scope": "Namespaced", "names": {"kind": "Gadget", "plural": "gadgets"},
               "versions": [{"name": "v1alpha1", "served": True, "storage": False},
                            {"name": "v1", "served": True, "storage": True}],
               "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {
                   "service": {"namespace": "sys", "name": "hooks", "path": "/convert"}}}}}}}  # fmt: skip
    service = {"urn": "c:svc", "type": "kubernetes:core/v1:Service", "name": "c-chart:sys/hooks", "parent": "c",
               "rendered": True, "dependencies": [],
               "inputs": {"metadata": {"name": "hooks", "namespace": "sys"},
                          "spec": {"ports": [{"port": 443}]}}}  # fmt: skip
    return [chart, crd, service]


def _gadget(version: str, *, waits: bool = False) -> dict[str, Any]:
    return {"urn": f"g-{version}", "type": f"kubernetes:example.com/{version}:Gadget", "name": f"gadget-{version}",
            "provider": "p", "dependencies": ["c"] if waits else [],
            "inputs": {"metadata": {"name": "g", "namespace": "team"}}}  # fmt: skip


def _webhook_breaches(records: Records) -> list[str]:
    return [line for line in CATALOGUE.breaches(records, {}) if line.startswith("objects-after-their-webhooks")]


def test_an_object_in_a_version_that_needs_conversion_waits_for_the_conversion_webhook() -> None:
    """The API server calls a CRD's conversion webhook only for objects in a version other than the one it converts
    to (apiextensions-apiserver pkg/apiserver/conversion/converter.go getObjectsToConvert: "Only sent item for
    conversion, if the apiVersion is different"); objects are stored in the storage version, so one the stack writes
    in it is never sent, and one in another version is sent on every write and read: it waits for the webhook's
    backend, like an admission webhook's. Kueue's ClusterQueues, LocalQueues, Cohorts, Workloads and MultiKueueClusters
    and LWS's LeaderWorkerSets convert by webhook; the stack writes each in its storage version (v1beta2, v1)."""
    assert _webhook_breaches([*_crd_with_conversion(), _gadget("v1")]) == []
    assert _webhook_breaches([*_crd_with_conversion(), _gadget("v1alpha1")]) == [
        "objects-after-their-webhooks: gadget-v1alpha1 is created before c-chart serves the webhooks that intercept "
        "it (conversion)"
    ]
    assert _webhook_breaches([*_crd_with_conversion(), _gadget("v1alpha1", waits=True)]) == []


def test_a_fail_closed_webhook_outside_the_cluster_is_reported() -> None:
    """A fail-closed webhook that calls a URL (clientConfig.url): the plan has nothing to wait for, and an object it
    intercepts fails to be created whenever that URL does not answer; the catalogue names it instead of skipping it."""
    chart, _, _ = _crd_with_conversion()
    rule = {"apiGroups": ["example.com"], "apiVersions": ["*"], "resources": ["gadgets"], "operations": ["CREATE"]}
    kind = "kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration"
    configuration = {"urn": "c:hooks", "type": kind, "name": "c-chart:hooks", "parent": "c", "rendered": True,
                     "dependencies": [],
                     "inputs": {"metadata": {"name": "hooks"}, "webhooks": [
                         {"name": "outside.example", "clientConfig": {"url": "https://hooks.example.com/v"},
                          "rules": [rule]}]}}  # fmt: skip
    assert _webhook_breaches([chart, configuration, _gadget("v1", waits=True)]) == [
        "objects-after-their-webhooks: c-chart:hooks outside.example: calls https://hooks.example.com/v, outside the "
        "cluster, which the stack cannot wait for; gadget-v1 fails to be created while it does not answer"
    ]


def test_a_mirrored_controller_image_is_still_ready_when_it_serves(deployed: dict[str, Records]) -> None:
    """Kueue's and JobSet's readiness includes their webhook server (their main.go), whatever registry the image
    comes from: the rule knows them by their chart, not by the upstream image's name."""
    dev = copy.deepcopy(deployed["dev"])
    for name in ("kueue-chart:kueue-system/kueue-controller-manager", "jobset-chart:jobset-system/jobset-controller"):
        (container,) = _named(dev, name)["inputs"]["spec"]["template"]["spec"]["containers"]
        container["image"] = container["image"].replace("registry.k8s.io", "europe-docker.pkg.dev/mirror/k8s")
    assert [line for line in CATALOGUE.breaches(dev, {}) if "webhook-backends-ready" in line] == []


def test_a_controller_that_would_keep_its_old_config_is_caught(deployed: dict[str, Records]) -> None:
    """Kueue reads its Configuration once, at start (kueue v0.19.2 cmd/kueue/main.go apply): a changed ConfigMap alone
    leaves waitForPodsReady and MultiKueue as they were until the pods restart. The chart's config checksum on the
    pod template is what rolls them; a Deployment without it is reported."""
    dev = copy.deepcopy(deployed["dev"])
    assert CATALOGUE.breaches(dev, {}) == []
    kueue = _named(dev, "kueue-chart:kueue-system/kueue-controller-manager")
    del kueue["inputs"]["spec"]["template"]["metadata"]["annotations"]["charts.kueue.x-k8s.io/config-checksum"]
    assert CATALOGUE.breaches(dev, {}) == [
        "controllers-roll-on-config: kueue-chart:kueue-system/kueue-controller-manager: mounts ConfigMap "
        "kueue-manager-config the stack writes, with no config checksum on its pod template: a changed config is "
        "not read until the pods restart"
    ]


def test_a_jobset_update_is_refused_on_its_webhook_fields_and_its_crd_rules(deployed: dict[str, Records]) -> None:
    """JobSet v0.12.0: the webhook refuses a change to replicatedJobs or managedBy of a running JobSet
    (pkg/webhooks/jobset_webhook.go ValidateUpdate); failurePolicy is `self == oldSelf` in the CRD."""
    old = _named(deployed["prod"], "saxml-model-servers-0")
    managed = copy.deepcopy(old)
    managed["inputs"]["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    (refused,) = CATALOGUE.refuses(old, managed, ["spec.managedBy"])
    assert refused.startswith("spec.managedBy: immutable (kubernetes-sigs/jobset v0.12.0")
    restarts = copy.deepcopy(old)
    restarts["inputs"]["spec"]["failurePolicy"]["maxRestarts"] += 1
    assert any("Value is immutable" in r for r in CATALOGUE.refuses(old, restarts, ["spec.failurePolicy.maxRestarts"]))
