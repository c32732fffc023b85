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

`matchPolicy` defaults to Equivalent: a request for a rule's resource through another version of its group is
converted and sent too (#matching-requests-matchpolicy), so a rule's versions matter only under Exact. (Equivalence
across groups, extensions to apps, applies to API groups the clusters the stack supports no longer serve.) A webhook
that calls a URL (clientConfig.url) is listed with it: nothing in the plan is its backend, which the catalogue reports.

A CRD whose conversion is a webhook (spec.conversion.strategy Webhook, its clientConfig a Service) is called, fail
closed, for every object read or written in a version other than the one stored: apiextensions-apiserver
pkg/apiserver/conversion/converter.go sends only objects whose apiVersion differs from the one asked for
(getObjectsToConvert), and objects are stored in the storage version. It is listed as a webhook named `conversion` on
the CRD's other served versions (Exact): an object the stack writes in the storage version never meets it, one in
another version waits for its backend. Kueue's queue, cohort, workload and MultiKueue-cluster CRDs and LWS's
LeaderWorkerSet convert by webhook; the stack writes them in their storage versions (v1beta2, v1).

Kueue's visibility APIServices (v1beta1 and v1beta2 `visibility.kueue.x-k8s.io`, served by its pod on 8082) admit
nothing: no create or update of the stack goes through them, so no object waits for them. What they touch is API
discovery: while registered and unanswered, the namespace controller cannot list every kind and keeps a Namespace
being deleted in Terminating (NamespaceDeletionDiscoveryFailure), retrying until discovery answers (kubernetes
pkg/controller/namespace/deletion/namespaced_resources_deleter.go deleteAllContent). On `destroy` they go with the
Kueue chart, moments after its pods; a Namespace deleted in that moment finishes once they are gone. Kueue's pods are
kept serving across upgrades (one replica, a rolling update that starts the new pod first).
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
    """One fail-closed webhook: `name` as `<configuration record> <webhook>` (a CRD's conversion: `<CRD record>
    conversion`), the cluster (kubernetes provider) it is registered in, the chart that renders it, and the Service
    (or URL) it calls."""

    name: str
    cluster: str | None
    chart: str | None
    """URN of the chart whose object the configuration is (None: declared by the stack)."""
    service: tuple[str, str] | None
    """(namespace, name) of the Service the API server calls; None for a URL."""
    rules: tuple[Mapping[str, Any], ...]
    namespace_selector: Mapping[str, Any] | None
    object_selector: Mapping[str, Any] | None
    url: str | None = None
    """The URL the API server calls (clientConfig.url), outside anything the plan declares."""
    match_policy: str = "Equivalent"


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
    """Every webhook of the plan whose failurePolicy is Fail (the v1 default when unset), and every CRD's
    conversion webhook."""
    clusters = cluster_of(records)
    found = []
    for record in records:
        if not isinstance(record.get("inputs"), Mapping):
            continue
        chart = str(record["parent"]) if record.get("rendered") else None
        if str(record["type"]).endswith(":CustomResourceDefinition"):
            conversion = _conversion(record, clusters[str(record["urn"])], chart)
            found += [conversion] if conversion else []
            continue
        if not str(record["type"]).endswith(CONFIG_KINDS):
            continue
        for webhook in record["inputs"].get("webhooks") or ():
            client = webhook.get("clientConfig") or {}
            service, url = client.get("service"), client.get("url")
            if webhook.get("failurePolicy", "Fail") != "Fail" or not (service or url):
                continue
            found.append(
                Webhook(
                    name=f"{record['name']} {webhook['name']}",
                    cluster=clusters[str(record["urn"])],
                    chart=chart,
                    service=(str(service.get("namespace")), str(service.get("name"))) if service else None,
                    rules=tuple(webhook.get("rules") or ()),
                    namespace_selector=webhook.get("namespaceSelector"),
                    object_selector=webhook.get("objectSelector"),
                    url=None if service else str(url),
                    match_policy=str(webhook.get("matchPolicy") or "Equivalent"),
                )
            )
    return found


def _conversion(crd: Record, cluster: str | None, chart: str | None) -> Webhook | None:
    """A CRD's conversion webhook as a webhook on its served versions but the storage one (None: no webhook)."""
    spec = crd["inputs"].get("spec") or {}
    conversion = spec.get("conversion") or {}
    client = (conversion.get("webhook") or {}).get("clientConfig") or conversion.get("webhookClientConfig") or {}
    service, url = client.get("service"), client.get("url")
    if conversion.get("strategy") != "Webhook" or not (service or url):
        return None
    converted = [str(v["name"]) for v in spec.get("versions") or () if v.get("served") and not v.get("storage")]
    if not converted:
        return None
    names = spec.get("names") or {}
    rule = {
        "apiGroups": [str(spec.get("group"))],
        "apiVersions": converted,
        "resources": [str(names.get("plural"))],
        "operations": ["*"],
        "scope": "Cluster" if spec.get("scope") == "Cluster" else "Namespaced",
    }
    return Webhook(
        name=f"{crd['name']} conversion",
        cluster=cluster,
        chart=chart,
        service=(str(service.get("namespace")), str(service.get("name"))) if service else None,
        rules=(rule,),
        namespace_selector=None,
        object_selector=None,
        url=None if service else str(url),
        match_policy="Exact",
    )


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
    exact = webhook.match_policy == "Exact"
    if not any(_rule_matches(rule, group, version, plural, cluster_scoped, exact=exact) for rule in webhook.rules):
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


def _rule_matches(
    rule: Mapping[str, Any], group: str, version: str, plural: str, cluster_scoped: bool, *, exact: bool
) -> bool:
    """Whether a rule names the object's resource; under Equivalent any version of its group's resource does."""

    def has(field: str, value: str) -> bool:
        listed = rule.get(field) or ()
        return "*" in listed or value in listed or (field == "apiVersions" and not exact)

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
