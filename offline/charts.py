"""Render the program's Helm charts offline, as the kubernetes provider renders them during a real preview.

`kubernetes.helm.v4.Chart` is a remote component: the engine hands it to the provider's Construct, which runs
Helm's template engine and registers every object itself, so under the mock engine no child is ever
registered. This module does what that Construct does (pulumi-kubernetes `provider/pkg/provider/helm/v4/
chart.go` and `yaml/v2/yaml.go`), with the pinned helm (offline/helm.py) and the chart archives in vendor/:

- `helm template` with the Chart's own inputs (release name, namespace, values), CRDs included, hooks off;
- namespaced objects without a namespace get the Chart's namespace;
- each object becomes a child of the Chart named `<Chart resource name>:<namespace>/<name>` (cluster-scoped:
  `<Chart resource name>:<name>`), typed `kubernetes:<group>/<version>:<Kind>`, Secret data marked secret;
- the program's resource transforms run on each child as the engine runs them (those registered with the Chart,
  then with each ancestor, then the stack's: pulumi pkg/resource/deploy/source_eval.go, RegisterResource), so
  the render shows what the provider is asked to apply; a transform may change the props and `ignore_changes`
  (an option the render does not record makes it fail rather than show something the engine would not do);
- a Chart with an unknown input registers no children; neither does one whose provider's kubeconfig is unknown
  (a new stack's preview, before the cluster exists): the provider cannot run the chart against a cluster
  that does not exist (pulumi-kubernetes issue 3027 reports the preview failing there; `unrenderable` names
  such Charts so the report can say so).

Differences that remain: the provider renders with the live cluster's API versions (`--dry-run=server`);
offline the Kubernetes minor of the config stands in for it. Dependencies between children (namespaces,
CRDs before their objects) are not recorded. Values are checked first against the chart's own
values.yaml, so a misspelled key fails here instead of being ignored by helm.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import re
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pulumi
import yaml

from offline import helm
from offline.markers import SECRET, contains_unknown
from offline.vendor import CHART_DIR, REPO

CHART_TYPE = "kubernetes:helm.sh/v4:Chart"
CACHE_DIR = REPO / "build" / ".chart-cache"
_CACHE_FORMAT = "1"
"""Bump when what is cached changes, so old entries are not read."""

# Built-in kinds that live outside namespaces (the provider asks the API server; the set is fixed per minor).
CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "CertificateSigningRequest",
        "ClusterRole",
        "ClusterRoleBinding",
        "CSIDriver",
        "CSINode",
        "CustomResourceDefinition",
        "FlowSchema",
        "IngressClass",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PriorityClass",
        "PriorityLevelConfiguration",
        "RuntimeClass",
        "StorageClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
    }
)


class ChartError(ValueError):
    """A chart the offline preview cannot render as asked: not vendored, or a values key the chart lacks."""


@dataclass(frozen=True)
class Transforms:
    """The program's resource transforms: `by_urn` those registered with each resource, `stack` the stack's."""

    by_urn: Mapping[str, Sequence[pulumi.ResourceTransform]] = field(default_factory=dict)
    stack: Sequence[pulumi.ResourceTransform] = ()

    def for_children_of(self, urn: str, parents: Mapping[str, str | None]) -> list[pulumi.ResourceTransform]:
        """What the engine runs on a child of `urn` that has none of its own: `urn`'s, its ancestors' (nearest
        first), then the stack's."""
        found: list[pulumi.ResourceTransform] = []
        current: str | None = urn
        while current:
            found += self.by_urn.get(current, ())
            current = parents.get(current)
        return found + list(self.stack)


NO_TRANSFORMS = Transforms()
_OPTIONS_NOT_RECORDED = (
    "protect", "delete_before_replace", "replace_on_changes", "retain_on_delete", "depends_on", "deleted_with",
    "custom_timeouts", "aliases", "provider", "providers", "parent", "additional_secret_outputs", "replace_with",
    "hide_diffs", "version", "import_", "id", "urn",
)  # fmt: skip
"""Options a transform could set that a rendered child's record does not show: setting one fails the render."""


def type_token(api_version: str, kind: str) -> str:
    """The type token the provider registers a rendered object with, as the typed classes of pulumi_kubernetes do:
    `kubernetes:core/v1:Namespace`, `kubernetes:apps/v1:Deployment`, `kubernetes:kueue.x-k8s.io/v1beta2:...`."""
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    return f"kubernetes:{group_version}:{kind}"


def _name(transform: pulumi.ResourceTransform) -> str:
    return str(getattr(transform, "__qualname__", transform))


def transformed(record: Mapping[str, Any], transforms: Sequence[pulumi.ResourceTransform]) -> dict[str, Any]:
    """`record` after each transform, as the engine applies them to the provider's registration of the child."""
    result_record = dict(record)
    for transform in transforms:
        given = pulumi.ResourceOptions(ignore_changes=list(result_record["ignoreChanges"]) or None)
        args = pulumi.ResourceTransformArgs(
            custom=True,
            type_=result_record["type"],
            name=result_record["name"],
            props=copy.deepcopy(result_record["inputs"]),
            opts=given,
        )
        result = transform(args)
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise ChartError(f"transform {_name(transform)} is asynchronous; the offline render runs plain ones")
        if result is None:
            continue
        opts = result.opts or given
        changed = [
            n for n in _OPTIONS_NOT_RECORDED if (getattr(opts, n, None) or None) != (getattr(given, n, None) or None)
        ]
        if changed:
            raise ChartError(
                f"transform {_name(transform)} sets {', '.join(changed)} on {result_record['name']}; the offline "
                "render records only props and ignore_changes of a chart's children"
            )
        result_record["inputs"] = dict(result.props)
        result_record["ignoreChanges"] = list(opts.ignore_changes or [])
    return result_record


@dataclass(frozen=True)
class ChartRequest:
    """What the program asked of one Chart resource."""

    resource_name: str
    release: str
    chart: str
    version: str
    namespace: str
    values: Mapping[str, Any]

    @property
    def chart_name(self) -> str:
        """`oci://registry.k8s.io/kueue/charts/kueue` -> `kueue`."""
        return self.chart.rstrip("/").rsplit("/", 1)[-1]

    @property
    def archive(self) -> Path:
        return CHART_DIR / f"{self.chart_name}-{self.version}.tgz"


def request(resource: Mapping[str, Any]) -> ChartRequest | None:
    """The Chart's inputs, or None when one is unknown (the provider then renders nothing)."""
    inputs = resource["inputs"]
    if contains_unknown(inputs):
        return None
    return ChartRequest(
        resource_name=resource["name"],
        release=str(inputs.get("name") or resource["name"]),
        chart=str(inputs.get("chart") or ""),
        version=str(inputs.get("version") or ""),
        namespace=str(inputs.get("namespace") or "default"),
        values=inputs.get("values") or {},
    )


@cache
def chart_defaults(archive: Path) -> dict[str, Any]:
    """The chart's own values.yaml."""
    with tarfile.open(archive) as packed:
        member = next(m for m in packed.getmembers() if m.name.count("/") == 1 and m.name.endswith("/values.yaml"))
        handle = packed.extractfile(member)
        assert handle is not None
        return yaml.load(handle.read(), Loader=yaml.CSafeLoader) or {}


_WHOLE_VALUE = re.compile(r"\b(?:toYaml|with)\s+\.Values\.([A-Za-z0-9_.]+)")


@cache
def whole_values(archive: Path) -> frozenset[str]:
    """Values paths the chart's templates render whole (`toYaml .Values.x`, or `with .Values.x` then `toYaml .`):
    a Kubernetes object such as a securityContext, whose every field the chart passes through."""
    with tarfile.open(archive) as packed:
        texts = [
            handle.read().decode()
            for member in packed.getmembers()
            if "/templates/" in member.name and (handle := packed.extractfile(member)) is not None
        ]
    return frozenset(path for text in texts for path in _WHOLE_VALUE.findall(text))


def unknown_value_keys(
    values: Mapping[str, Any], defaults: Any, prefix: str = "", whole: frozenset[str] = frozenset()
) -> list[str]:
    """Dotted keys of `values` that the chart's values.yaml does not define. Below a default that is an
    empty mapping (nodeSelector: {}), a list or a scalar, or a path in `whole`, any content is the chart's
    to accept."""
    if not isinstance(defaults, Mapping) or not defaults or prefix.rstrip(".") in whole:
        return []
    unknown = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if key not in defaults:
            unknown.append(path)
        elif isinstance(value, Mapping):
            unknown += unknown_value_keys(value, defaults[key], f"{path}.", whole)
    return unknown


def check(chart: ChartRequest) -> None:
    """Raise ChartError unless the chart is vendored and every values key is one the chart defines."""
    _check_vendored(chart)
    unknown = unknown_value_keys(chart.values, chart_defaults(chart.archive), whole=whole_values(chart.archive))
    if unknown:
        keys = ", ".join(unknown)
        raise ChartError(
            f"chart {chart.chart_name} {chart.version} (resource {chart.resource_name}): values key(s) {keys} "
            "not in the chart's values.yaml; fix the spelling (helm would silently ignore them)"
        )


def _check_vendored(chart: ChartRequest) -> None:
    if not chart.archive.is_file():
        raise ChartError(
            f"chart {chart.chart} version {chart.version} is not vendored (vendor/charts/{chart.archive.name}); "
            "use a vendored version or add it with vendor/refresh.sh"
        )


def _cached(chart: ChartRequest, kubernetes_version: str) -> Path:
    """Where the render of exactly this archive, release, namespace, minor and values is kept. A cached render
    exists only for values that passed `check` with that archive: a hit needs no check again."""
    _check_vendored(chart)
    return CACHE_DIR / f"{_cache_key(chart, kubernetes_version)}.json"


def _cache_key(chart: ChartRequest, kubernetes_version: str) -> str:
    digest = hashlib.sha256(chart.archive.read_bytes()).hexdigest()
    fields = [_CACHE_FORMAT, helm.HELM_VERSION, digest, chart.release, chart.namespace, kubernetes_version]
    payload = json.dumps([fields, chart.values], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def _helm_template(chart: ChartRequest, kubernetes_version: str) -> list[dict[str, Any]]:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as values:
        json.dump(chart.values, values)
        values.flush()
        command = [
            str(helm.binary()), "template", chart.release, str(chart.archive), "--namespace", chart.namespace,
            "--include-crds", "--no-hooks", "--kube-version", kubernetes_version, "--values", values.name,
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise ChartError(f"helm template {chart.chart_name} {chart.version} failed: {done.stderr.strip()}")
    return [doc for doc in yaml.load_all(done.stdout, Loader=yaml.CSafeLoader) if doc]


def rendered_objects(chart: ChartRequest, kubernetes_version: str) -> list[dict[str, Any]]:
    """The chart's objects as helm renders them, cached in build/.chart-cache by everything they depend on."""
    path = _cached(chart, kubernetes_version)
    if path.is_file():
        cached: list[dict[str, Any]] = json.loads(path.read_text())
        return cached
    check(chart)
    objects = _helm_template(chart, kubernetes_version)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(objects))
    partial.replace(path)
    return objects


def _custom_kind_scopes(objects: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Kind -> scope of the custom kinds the chart itself defines (other custom kinds count as namespaced)."""
    scopes: dict[str, str] = {}
    for obj in objects:
        if obj.get("kind") == "CustomResourceDefinition":
            spec = obj.get("spec") or {}
            scopes[str((spec.get("names") or {}).get("kind"))] = str(spec.get("scope"))
    return scopes


def _qualified_type(urn: str) -> str:
    return urn.split("::")[2]


def unrenderable(resources: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the Charts whose kubernetes provider has no kubeconfig yet (its cluster does not exist)."""
    resources = list(resources)
    pending = {r["urn"] for r in resources if r["type"].startswith("pulumi:providers:kubernetes")
               and contains_unknown(r["inputs"].get("kubeconfig"))}  # fmt: skip
    return [r["name"] for r in resources if r["type"] == CHART_TYPE and r.get("provider") in pending]


def children(chart_resource: Mapping[str, Any], kubernetes_version: str) -> list[dict[str, Any]]:
    """Plan records of the Chart's rendered objects, as the provider would register them."""
    chart = request(chart_resource)
    if chart is None:
        return []
    objects = rendered_objects(chart, kubernetes_version)
    scopes = _custom_kind_scopes(objects)
    parent_urn = chart_resource["urn"]
    stack_and_project = parent_urn.split("::")[:2]
    parent_type = _qualified_type(parent_urn).rsplit("$", 1)[-1]
    records = []
    for obj in objects:
        obj = dict(obj)
        kind = str(obj["kind"])
        metadata = dict(obj.get("metadata") or {})
        namespaced = kind not in CLUSTER_SCOPED and scopes.get(kind, "Namespaced") == "Namespaced"
        if namespaced and not metadata.get("namespace"):
            metadata["namespace"] = chart.namespace
        obj["metadata"] = metadata
        if kind == "Secret" and obj.get("apiVersion") == "v1":
            obj.update({key: SECRET for key in ("data", "stringData") if key in obj})
        where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
        name = f"{chart.resource_name}:{where}{metadata['name']}"
        token = type_token(str(obj["apiVersion"]), kind)
        records.append(
            {
                "urn": "::".join([*stack_and_project, f"{parent_type}${token}", name]),
                "type": token,
                "name": name,
                "parent": parent_urn,
                "dependencies": [],
                "custom": True,
                "remote": False,
                "rendered": True,
                # The provider registers each child with the Chart as parent, and the Go SDK gives a child its
                # parent's protect (sdk/go/pulumi/context.go); the Chart gets the program's from Construct.
                "protect": bool(chart_resource.get("protect")),
                "ignoreChanges": [],
                "customTimeouts": {},
                "replaceOnChanges": [],
                "deleteBeforeReplace": None,
                "retainOnDelete": False,
                "deletedWith": None,
                "aliases": [],
                "importId": None,
                "inputs": obj,
            }
        )
    return records


def render_all(
    resources: Iterable[Mapping[str, Any]], kubernetes_version: str, transforms: Transforms = NO_TRANSFORMS
) -> list[dict[str, Any]]:
    """Children of every Chart in `resources`, after the program's `transforms`. Every chart is checked before any
    renders; charts not in the cache render side by side (helm runs in its own process)."""
    resources = list(resources)
    parents = {r["urn"]: r.get("parent") for r in resources}
    skipped = set(unrenderable(resources))
    charts = [r for r in resources if r["type"] == CHART_TYPE and r["name"] not in skipped]
    for resource in charts:
        chart = request(resource)
        if chart is not None and not _cached(chart, kubernetes_version).is_file():
            check(chart)
    with ThreadPoolExecutor(max_workers=max(1, len(charts))) as pool:
        rendered = list(pool.map(lambda resource: children(resource, kubernetes_version), charts))
    return [
        transformed(child, transforms.for_children_of(resource["urn"], parents))
        for resource, records in zip(charts, rendered, strict=True)
        for child in records
    ]
