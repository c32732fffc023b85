"""Admission webhooks as the API server applies them: which object a fail-closed webhook intercepts, and what an
object must wait for so that its webhooks answer.

Derived from the plan, never listed: every Mutating- and ValidatingWebhookConfiguration the stack declares or a chart
renders, each webhook with its failure policy (admissionregistration.k8s.io/v1 defaults it to Fail), rules (API
groups, versions, resources, operations, scope), namespaceSelector and objectSelector, and the Service it calls.
An object of the plan is intercepted when a rule names its group, version and resource (the CRD's plural where the
plan renders the CRD, else the API machinery's guess from the kind), for CREATE or UPDATE, and both selectors match:
the namespaceSelector on its namespace's labels (`kubernetes.io/metadata.name` and the labels the stack gives the
Namespace), not applied to cluster-scoped objects but a Namespace itself; the objectSelector on its own labels
(kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#matching-requests-rules,
#matching-requests-namespaceselector, #matching-requests-objectselector; k8s.io/api admissionregistration/v1
types.go FailurePolicyType default Fail). A new chart, a new kind or a new webhook needs no new rule here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offline.charts import CLUSTER_SCOPED

Record = Mapping[str, Any]
CONFIG_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
CHART = "kubernetes:helm.sh/v4:Chart"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every Namespace (NamespaceDefaultLabelName, Kubernetes 1.22+)."""
WRITE_OPERATIONS = ("CREATE", "UPDATE", "*")


@dataclass(frozen=True)
class Webhook:
    """One fail-closed webhook: `name` as `<configuration record> <webhook>`, the cluster (kubernetes provider) it
    is registered in, the chart that renders it, and the Service it calls."""

    name: str
    cluster: str | None
    chart: str | None
    """URN of the chart whose object the configuration is (None: declared by the stack)."""
    service: tuple[str, str]
    """(namespace, name) of the Service the API server calls."""
    rules: tuple[Mapping[str, Any], ...]
    namespace_selector: Mapping[str, Any] | None
    object_selector: Mapping[str, Any] | None


def cluster_of(records: Sequence[Record]) -> dict[str, str | None]:
    """URN -> the kubernetes provider that writes the record (its own, else its parent's, as a chart's objects)."""
    by_urn = {str(r["urn"]): r for r in records}
    found: dict[str, str | None] = {}

    def writer(record: Record) -> str | None:
        urn = str(record["urn"])
        if urn not in found:
            parent = by_urn.get(str(record.get("parent") or ""))
            found[urn] = record.get("provider") or (writer(parent) if parent is not None else None)
        return found[urn]

    for record in records:
        writer(record)
    return found


def fail_closed(records: Sequence[Record]) -> list[Webhook]:
    """Every webhook of the plan whose failurePolicy is Fail (the v1 default when unset)."""
    clusters = cluster_of(records)
    found = []
    for record in records:
        if not str(record["type"]).endswith(CONFIG_KINDS) or not isinstance(record.get("inputs"), Mapping):
            continue
        chart = str(record["parent"]) if record.get("rendered") else None
        for webhook in record["inputs"].get("webhooks") or ():
            service = (webhook.get("clientConfig") or {}).get("service")
            if webhook.get("failurePolicy", "Fail") != "Fail" or not service:
                continue
            found.append(
                Webhook(
                    name=f"{record['name']} {webhook['name']}",
                    cluster=clusters[str(record["urn"])],
                    chart=chart,
                    service=(str(service.get("namespace")), str(service.get("name"))),
                    rules=tuple(webhook.get("rules") or ()),
                    namespace_selector=webhook.get("namespaceSelector"),
                    object_selector=webhook.get("objectSelector"),
                )
            )
    return found


def guess_resource(kind: str) -> str:
    """The resource of a kind no CRD in the plan names: k8s.io/apimachinery pkg/api/meta/restmapper.go
    UnsafeGuessKindToResource (lower case; `-s` takes `-es`, `-y` takes `-ies`, else `-s`; `endpoints` stays)."""
    lower = kind.lower()
    if lower == "endpoints":
        return lower
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


def _group_version_kind(record: Record) -> tuple[str, str, str] | None:
    """('jobset.x-k8s.io', 'v1alpha2', 'JobSet') of a `kubernetes:<group>/<version>:<Kind>` record; core is ''."""
    kind_type = str(record["type"])
    if not kind_type.startswith("kubernetes:") or kind_type == CHART or kind_type.startswith("kubernetes:helm"):
        return None
    group_version, _, kind = kind_type.removeprefix("kubernetes:").partition(":")
    group, _, version = group_version.rpartition("/")
    return ("" if group == "core" else group), version, kind


def crds(records: Sequence[Record]) -> dict[tuple[str, str], tuple[str, str]]:
    """(group, kind) -> (plural, scope) of every CRD the plan declares or renders."""
    found = {}
    for record in records:
        if not str(record["type"]).endswith(":CustomResourceDefinition"):
            continue
        spec = record["inputs"].get("spec") or {}
        names = spec.get("names") or {}
        if names.get("kind") and names.get("plural"):
            found[(str(spec.get("group")), str(names["kind"]))] = (str(names["plural"]), str(spec.get("scope")))
    return found


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector: matchLabels and every matchExpression hold (an empty or absent selector: all)."""
    if not selector:
        return True
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or ():
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or ()
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


@dataclass(frozen=True)
class Plan:
    """What interception needs of a plan, computed once."""

    clusters: Mapping[str, str | None]
    crds: Mapping[tuple[str, str], tuple[str, str]]
    namespace_labels: Mapping[tuple[str | None, str], Mapping[str, str]]

    @classmethod
    def of(cls, records: Sequence[Record]) -> Plan:
        clusters = cluster_of(records)
        labels = {
            (clusters[str(r["urn"])], str(r["inputs"]["metadata"]["name"])): dict(
                r["inputs"]["metadata"].get("labels") or {}
            )
            for r in records
            if str(r["type"]) == "kubernetes:core/v1:Namespace" and isinstance(r["inputs"].get("metadata"), Mapping)
        }
        return cls(clusters, crds(records), labels)


def intercepts(webhook: Webhook, record: Record, plan: Plan) -> bool:
    """Whether the API server calls `webhook` when the record's object is created or updated in its cluster."""
    gvk = _group_version_kind(record)
    metadata = (record.get("inputs") or {}).get("metadata")
    if gvk is None or not isinstance(metadata, Mapping) or plan.clusters.get(str(record["urn"])) != webhook.cluster:
        return False
    group, version, kind = gvk
    plural, scope = plan.crds.get((group, kind), (guess_resource(kind), ""))
    cluster_scoped = scope == "Cluster" or (not scope and kind in CLUSTER_SCOPED)
    if not any(_rule_matches(rule, group, version, plural, cluster_scoped) for rule in webhook.rules):
        return False
    labels = metadata.get("labels") or {}
    if not selects(webhook.object_selector, labels):
        return False
    if kind == "Namespace":
        return selects(webhook.namespace_selector, {NAMESPACE_NAME_LABEL: str(metadata.get("name")), **labels})
    if cluster_scoped:
        return True
    namespace = str(metadata.get("namespace") or "default")
    namespace_labels = plan.namespace_labels.get((webhook.cluster, namespace), {})
    return selects(webhook.namespace_selector, {**namespace_labels, NAMESPACE_NAME_LABEL: namespace})


def _rule_matches(rule: Mapping[str, Any], group: str, version: str, plural: str, cluster_scoped: bool) -> bool:
    def has(field: str, value: str) -> bool:
        listed = rule.get(field) or ()
        return "*" in listed or value in listed

    listed = [str(r) for r in rule.get("resources") or ()]
    # `x/status` names a subresource only; `*/*` is every resource and subresource, `*` every resource.
    resources = {r for r in listed if "/" not in r} | ({"*"} if "*/*" in listed else set())
    scope = rule.get("scope", "*")
    return (
        has("apiGroups", group)
        and has("apiVersions", version)
        and ("*" in resources or plural in resources)
        and any(op in WRITE_OPERATIONS for op in rule.get("operations") or ())
        and (scope == "*" or (scope == "Cluster") == cluster_scoped)
    )
