"""What the first `pulumi up` of an adopted stack does with the objects of a Kueue or JobSet that xpk or Cluster
Toolkit installed: the stack's charts declare many of the same objects, and they exist already.

A Helm v4 Chart's objects are not imported: the kubernetes provider registers them itself (a remote component) and
creates each. What a create of an object that exists does is read in pulumi-kubernetes (provider/pkg/await/await.go
Creation and patchForce, provider/pkg/provider/provider.go Create, CHANGELOG 4.29.0; at 9497796):
- by default the create is a plain create and the API server answers AlreadyExists: `pulumi up` fails there. A
  preview does not show it: a dry-run create that meets AlreadyExists is reported as a create that cannot be previewed
  (provider.go Create, `failedPreview`);
- with the provider's `upsertExistingObjects` (or PULUMI_K8S_UPSERT_EXISTING_OBJECTS=true) the create is a
  server-side apply of the chart's object under pulumi's field manager. Outside a preview it is not forced
  (patchForce is given no live object), so a field another manager (`kubectl`, `helm`, `kubectl-client-side-apply`)
  owns with another value is a conflict that fails the apply, unless `enablePatchForce` (or
  PULUMI_K8S_ENABLE_PATCH_FORCE=true) forces it: pulumi's manager then owns the fields it applies;
- a field the API server never lets change fails the apply however it is forced: a Deployment's `spec.selector`
  (apps/v1 validation, and pulumi-kubernetes lists it ForceNew: provider/pkg/provider/diff.go), a RoleBinding's or
  ClusterRoleBinding's `roleRef`, a Secret's `type`. Such an object must be deleted before the first `up` (xpk's own
  Kueue upgrade deletes the controller Deployment the same way: xpk core/kueue_manager.py __prepare_for_upgrade);
- objects of the old install the charts do not declare stay: a Deployment among them is a second controller of the
  same kind, a webhook configuration or APIService among them still routes to the install's namespace.
Both settings are for that first `up` only: upserts stay dangerous afterwards (a renamed resource's create followed by
the old one's delete removes the object: the option's own description in provider/pkg/gen/schema.go).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from offline.charts import CHART_TYPE, CLUSTER_SCOPED
from offline.imports import Existing, Verdict, api_group, managers

UPSERT = "PULUMI_K8S_UPSERT_EXISTING_OBJECTS"
PATCH_FORCE = "PULUMI_K8S_ENABLE_PATCH_FORCE"
IMMUTABLE: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "selector"),
    "StatefulSet": ("spec", "selector"),
    "DaemonSet": ("spec", "selector"),
    "RoleBinding": ("roleRef",),
    "ClusterRoleBinding": ("roleRef",),
    "Secret": ("type",),
}
"""Fields the API server refuses to change on an existing object, by kind (Kubernetes apps/v1 and rbac/v1
validation: ValidateDeploymentUpdate, ValidateRoleBindingUpdate; core/v1 ValidateSecretUpdate)."""
INSTALL_KINDS = ("Deployment", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "APIService")
"""Old install objects that keep acting when left behind: controllers, and what routes API calls to them."""
HELM_RELEASE = ("meta.helm.sh/release-namespace", "meta.helm.sh/release-name")
"""The annotations Helm's install puts on every object of a release (helm pkg/action/validate.go setMetadataVisitor)."""


@dataclass(frozen=True)
class Takeover:
    """A chart object that exists: the first `up` applies the chart's object over it."""

    urn: str
    kind: str
    namespace: str | None
    name: str
    managers: tuple[str, ...]
    """The live object's other field managers: a field they own with another value conflicts unless forced."""
    blocked: str | None = None
    """An immutable field the chart's object changes (`spec.selector: {...} -> {...}`): the apply fails."""
    helm_release: str | None = None
    """The Helm release that installed it, `namespace/name` (Cluster Toolkit installs with Helm)."""

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    def to_json(self) -> dict[str, Any]:
        """plan.json's `takeover` of a rendered object."""
        return {
            "managers": list(self.managers),
            "blocked": self.blocked,
            **({"helmRelease": self.helm_release} if self.helm_release else {}),
        }


@dataclass(frozen=True)
class Leftover:
    """An object of the old install that no chart declares: it stays as it is."""

    kind: str
    namespace: str | None
    name: str
    acts: bool
    """A controller, webhook configuration or APIService: it keeps acting beside the chart's."""

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    @property
    def delete(self) -> str:
        where = f" -n {self.namespace}" if self.namespace else ""
        return f"kubectl delete {self.kind.lower()}{where} {self.name}"


@dataclass
class Plan:
    """The charts' first `up` over an existing install."""

    takeovers: list[Takeover] = field(default_factory=list)
    leftovers: list[Leftover] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    """The charts' Secrets (`namespace/name`): adopt reads no Secret, so whether they exist is not known; where one
    does, the chart takes it over like the rest."""
    helm_releases: set[str] = field(default_factory=set)
    """`namespace/name` of the Helm releases whose objects the stack takes over or imports."""
    forced_imports: bool = False
    """An imported object's apply changes a field of an object another manager also manages."""

    @property
    def blocked(self) -> list[Takeover]:
        return [t for t in self.takeovers if t.blocked]

    @property
    def settings(self) -> dict[str, str]:
        """The environment of the first `up`: upserts when a chart object exists, forcing when another manager
        owns one (or its managers were not saved, and may)."""
        found: dict[str, str] = {}
        if self.takeovers:
            found[UPSERT] = "true"
        if self.forced_imports or any(t.managers for t in self.takeovers):
            found[PATCH_FORCE] = "true"
        return found


def _get(tree: Any, path: Sequence[str]) -> Any:
    for part in path:
        if not isinstance(tree, Mapping):
            return None
        tree = tree.get(part)
    return tree


def _blocked(kind: str, chart_object: Mapping[str, Any], live: Mapping[str, Any]) -> str | None:
    path = IMMUTABLE.get(kind)
    if path is None:
        return None
    old, new = _get(live, path), _get(chart_object, path)
    if new is None or old is None or old == new:
        return None
    return f"{'.'.join(path)} {json.dumps(old, sort_keys=True)} -> {json.dumps(new, sort_keys=True)}"


def plan(resources: Sequence[Mapping[str, Any]], existing: Existing, verdicts: Sequence[Verdict] = ()) -> Plan:
    """The charts' rendered objects (plan resources marked `rendered`) against the live objects of the cluster; what
    the program declares itself is imported (offline/imports.py, `verdicts`), not taken over."""
    found = Plan(forced_imports=any(v.changes and v.managers for v in verdicts))
    declared: set[tuple[str, str, str | None, str]] = set()
    # An install is what lives in a chart's namespace (the release namespace), not every namespace it writes to.
    charts = [r.get("inputs") or {} for r in resources if r["type"] == CHART_TYPE]
    namespaces = {str(chart.get("namespace")) for chart in charts}
    # Cluster-wide objects of an install carry its release name first (the kustomize namePrefix of the release
    # manifests, the chart's fullname): kueue-, jobset-.
    prefixes = tuple(f"{chart.get('name')}-" for chart in charts)
    for record in resources:
        obj = record.get("inputs") or {}
        metadata = obj.get("metadata") or {}
        if not str(record["type"]).startswith("kubernetes:") or "kind" not in obj:
            continue
        kind, name, namespace = str(obj.get("kind")), str(metadata.get("name")), metadata.get("namespace")
        if kind in CLUSTER_SCOPED or (record.get("rendered") and not namespace):
            namespace = None  # the provider clears a namespace a chart sets on a cluster-wide kind (provider.go Diff)
        declared.add((api_group(obj), kind, namespace, name))
        live = existing.object(api_group(obj), kind, namespace, name)
        if live is not None and helm_release(live):
            found.helm_releases.add(str(helm_release(live)))
        if not record.get("rendered"):
            continue
        if kind == "Secret":
            found.unread.append(f"{namespace}/{name}")
            continue
        if live is None:
            continue
        others = managers(live) or (["unknown"] if not (live.get("metadata") or {}).get("managedFields") else [])
        release = helm_release(live)
        found.takeovers.append(
            Takeover(str(record["urn"]), kind, namespace, name, tuple(others), _blocked(kind, obj, live), release)
        )
    for live in existing.objects:
        metadata = live.get("metadata") or {}
        kind, name, namespace = str(live.get("kind")), str(metadata.get("name")), metadata.get("namespace")
        if (api_group(live), kind, namespace, name) in declared or not _of_install(live, namespaces, prefixes):
            continue
        found.leftovers.append(Leftover(kind, namespace, name, kind in INSTALL_KINDS))
    return found


def helm_release(live: Mapping[str, Any]) -> str | None:
    """`namespace/name` of the Helm release an object belongs to, if Helm installed it."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    namespace, name = (annotations.get(key) for key in HELM_RELEASE)
    return f"{namespace}/{name}" if name else None


def _of_install(live: Mapping[str, Any], namespaces: set[str], prefixes: tuple[str, ...]) -> bool:
    """Whether an object belongs to an install the charts replace: it lives in a chart's namespace, routes calls to a
    service there (webhook configurations, APIServices), or is a cluster-wide object named after a release."""
    metadata = live.get("metadata") or {}
    namespace = metadata.get("namespace")
    if namespace:
        return namespace in namespaces and not _generated(live)
    if live.get("kind") in ("ClusterRole", "ClusterRoleBinding") and str(metadata.get("name")).startswith(prefixes):
        return True
    services = [w.get("clientConfig", {}).get("service") or {} for w in live.get("webhooks") or []]
    services.append(_get(live, ("spec", "service")) or {})
    return any(s.get("namespace") in namespaces for s in services if isinstance(s, Mapping))


def _generated(live: Mapping[str, Any]) -> bool:
    """Objects Kubernetes makes in every namespace (the `kube-root-ca.crt` ConfigMap, the `default` ServiceAccount)."""
    return (live.get("metadata") or {}).get("name") in ("kube-root-ca.crt", "default")


def lines(plan_: Plan, stack: str) -> list[str]:
    """The report's part on the charts and the first `up`: what the charts take over, what must go before and after,
    what the old install leaves, the Helm releases, and the environment of the first `pulumi up`."""
    lines: list[str] = []
    if plan_.takeovers:
        lines += ["", "Taken over by the charts (server-side apply over the existing object):"]
        groups: dict[tuple[str, tuple[str, ...], str | None], list[str]] = {}
        for item in plan_.takeovers:
            groups.setdefault((item.kind, item.managers, item.helm_release), []).append(item.ref.split(" ", 1)[1])
        for (kind, managers, release), names in groups.items():
            owners = f"; managed by {', '.join(managers)}" if managers else ""
            helm = f"; Helm release {release}" if release else ""
            listed = ", ".join(names) if len(names) <= 3 else f"{', '.join(names[:3])} and {len(names) - 3} more"
            lines.append(f"  ~ {kind} {listed}{owners}{helm}")
    if plan_.unread:
        lines.append(f"  ~ Secret {', '.join(plan_.unread)}: taken over too where it exists (adopt reads no Secret)")
    if plan_.blocked:
        lines += ["", "Delete before the first `pulumi up` (a field the API server never changes differs):"]
        for item in plan_.blocked:
            where = f" -n {item.namespace}" if item.namespace else ""
            lines.append(f"  - {item.ref}: {item.blocked}: kubectl delete {item.kind.lower()}{where} {item.name}")
    acting = [o for o in plan_.leftovers if o.acts]
    if acting:
        lines += ["", "Delete after the first `pulumi up` (the old install's, still acting beside the charts'):"]
        lines += [f"  - {o.ref}: {o.delete}" for o in acting]
    rest = [o for o in plan_.leftovers if not o.acts]
    if rest:
        lines += ["", "Left by the old install (no chart declares them; harmless, delete when convenient):"]
        lines += [f"  - {o.ref}" for o in rest]
    if plan_.helm_releases:
        lines += ["", "Helm releases whose objects the stack now owns (never `helm uninstall` one: it deletes them):"]
    for release in sorted(plan_.helm_releases):
        namespace, name = release.split("/", 1)
        lines.append(
            f"  - {release}: remove its record with `kubectl delete secret -n {namespace} -l owner=helm,name={name}`"
        )
    env = " ".join(f"{k}={v}" for k, v in plan_.settings.items())
    lines += ["", "The first `pulumi up`:", f"  {env + ' ' if env else ''}pulumi up --stack {stack}"]
    if env:
        lines.append("  and every later update without them (docs/adopt.md, Charts over an existing install)")
    return lines
