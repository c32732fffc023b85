"""The charts' first `up` over objects that exist (offline/takeover.py), on small hand-made plans and clusters:
expectations written from pulumi-kubernetes await.go (Creation, patchForce) and Kubernetes' update validation."""

from __future__ import annotations

from typing import Any

from offline import takeover
from offline.imports import Existing

CHART = {
    "urn": "chart",
    "type": "kubernetes:helm.sh/v4:Chart",
    "inputs": {"name": "kueue", "namespace": "kueue-system"},
}


def _rendered(kind: str, name: str, namespace: str | None = "kueue-system", **fields: Any) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    obj = {"apiVersion": "apps/v1" if kind == "Deployment" else "v1", "kind": kind, "metadata": metadata, **fields}
    return {"urn": f"{kind}/{name}", "type": f"kubernetes:x:{kind}", "rendered": True, "inputs": obj}


def _live(kind: str, name: str, namespace: str | None = "kueue-system", managers: Any = (), **fields: Any) -> Any:
    metadata: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
    if managers:
        metadata["managedFields"] = [{"manager": m, "operation": op} for m, op in managers]
    return {"apiVersion": "apps/v1" if kind == "Deployment" else "v1", "kind": kind, "metadata": metadata, **fields}


def _existing(*objects: Any) -> Existing:
    return Existing({"name": "c", "location": "l"}, [], list(objects))


def test_nothing_exists_nothing_to_set() -> None:
    plan = takeover.plan([CHART, _rendered("ServiceAccount", "kueue")], _existing())
    assert plan.takeovers == [] and plan.settings == {}


def test_an_existing_object_needs_upserts_and_forcing_over_another_manager() -> None:
    resources = [CHART, _rendered("ServiceAccount", "kueue")]
    plan = takeover.plan(resources, _existing(_live("ServiceAccount", "kueue", managers=[("kubectl", "Apply")])))
    [item] = plan.takeovers
    assert (item.ref, item.managers, item.blocked) == ("ServiceAccount kueue-system/kueue", ("kubectl (Apply)",), None)
    assert plan.settings == {
        "PULUMI_K8S_UPSERT_EXISTING_OBJECTS": "true",
        "PULUMI_K8S_ENABLE_PATCH_FORCE": "true",
    }


def test_an_object_only_pulumi_manages_needs_no_forcing() -> None:
    live = _live("ServiceAccount", "kueue", managers=[("pulumi-kubernetes-2a3f", "Apply")])
    plan = takeover.plan([CHART, _rendered("ServiceAccount", "kueue")], _existing(live))
    assert plan.settings == {"PULUMI_K8S_UPSERT_EXISTING_OBJECTS": "true"}


def test_unknown_managers_are_forced_too() -> None:
    # Saved without --show-managed-fields: who owns what is not known, so forcing is asked for.
    plan = takeover.plan([CHART, _rendered("ServiceAccount", "kueue")], _existing(_live("ServiceAccount", "kueue")))
    assert plan.takeovers[0].managers == ("unknown",)
    assert "PULUMI_K8S_ENABLE_PATCH_FORCE" in plan.settings


def test_another_deployment_selector_must_be_deleted_first() -> None:
    chart = {"matchLabels": {"app": "kueue", "control-plane": "controller-manager"}}
    old = {"matchLabels": {"control-plane": "controller-manager"}}
    resources = [CHART, _rendered("Deployment", "kueue-controller-manager", spec={"selector": chart})]
    plan = takeover.plan(resources, _existing(_live("Deployment", "kueue-controller-manager", spec={"selector": old})))
    [item] = plan.blocked
    assert item.blocked == (
        'spec.selector {"matchLabels": {"control-plane": "controller-manager"}} -> '
        '{"matchLabels": {"app": "kueue", "control-plane": "controller-manager"}}'
    )


def test_a_rolebinding_to_another_role_must_be_deleted_first() -> None:
    resources = [CHART, _rendered("ClusterRoleBinding", "kueue-x", None, roleRef={"name": "new"})]
    plan = takeover.plan(resources, _existing(_live("ClusterRoleBinding", "kueue-x", None, roleRef={"name": "old"})))
    assert plan.blocked[0].blocked == 'roleRef {"name": "old"} -> {"name": "new"}'


def test_a_namespace_the_chart_gives_a_cluster_wide_object_is_cleared() -> None:
    # Kueue's chart writes metadata.namespace on its webhook configurations; the provider clears it.
    resources = [CHART, _rendered("MutatingWebhookConfiguration", "kueue-mutating-webhook-configuration")]
    live = _live("MutatingWebhookConfiguration", "kueue-mutating-webhook-configuration", None)
    plan = takeover.plan(resources, _existing(live))
    assert [t.ref for t in plan.takeovers] == ["MutatingWebhookConfiguration kueue-mutating-webhook-configuration"]


def test_the_old_installs_controller_and_routes_are_left_acting() -> None:
    webhook = {"webhooks": [{"clientConfig": {"service": {"namespace": "kueue-system", "name": "old-svc"}}}]}
    cluster = _existing(
        _live("Deployment", "old-controller"),
        _live("ConfigMap", "old-config"),
        _live("ConfigMap", "kube-root-ca.crt"),
        _live("ValidatingWebhookConfiguration", "old-webhook", None, **webhook),
        _live("ClusterRole", "kueue-old-role", None),
        _live("ClusterRole", "cluster-admin", None),
        _live("ConfigMap", "other", namespace="default"),
    )
    plan = takeover.plan([CHART], cluster)
    assert [(o.ref, o.acts) for o in plan.leftovers] == [
        ("Deployment kueue-system/old-controller", True),
        ("ConfigMap kueue-system/old-config", False),
        ("ValidatingWebhookConfiguration old-webhook", True),
        ("ClusterRole kueue-old-role", False),
    ]
    assert plan.leftovers[0].delete == "kubectl delete deployment -n kueue-system old-controller"


def test_a_helm_installed_object_names_its_release_and_secrets_are_not_read() -> None:
    annotations = {"meta.helm.sh/release-name": "kueue", "meta.helm.sh/release-namespace": "kueue-system"}
    live = _live("ServiceAccount", "kueue", managers=[("helm", "Update")])
    live["metadata"]["annotations"] = annotations
    resources = [CHART, _rendered("ServiceAccount", "kueue"), _rendered("Secret", "kueue-webhook-server-cert")]
    plan = takeover.plan(resources, _existing(live))
    assert plan.takeovers[0].helm_release == "kueue-system/kueue"
    assert plan.helm_releases == {"kueue-system/kueue"}
    assert plan.unread == ["kueue-system/kueue-webhook-server-cert"]
