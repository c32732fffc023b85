"""Turn a Plan into what people read (the grouped plan, totals, policy report) and what tools read
(build/<stack>/plan.json, manifests/*.yaml, graph.mmd)."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from offline.charts import CHART_TYPE
from offline.engine import Plan
from offline.vendor import REPO

COMPONENT_PREFIX = "tpu-stack:index:"


def _get(data: dict[str, Any], path: str) -> Any:
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _node_pool(inputs: dict[str, Any]) -> str:
    scaling = inputs.get("autoscaling") or {}
    if "totalMaxNodeCount" in scaling:
        nodes = f"0..{scaling['totalMaxNodeCount']} total"
    elif scaling:
        nodes = f"{scaling.get('minNodeCount', 0)}..{scaling.get('maxNodeCount')}"
    else:
        nodes = str(inputs.get("nodeCount"))
    node_config = inputs.get("nodeConfig") or {}
    mode = (
        "flex-start"
        if node_config.get("flexStart")
        else "queued"
        if _get(inputs, "queuedProvisioning.enabled")
        else "spot"
        if node_config.get("spot")
        else _get(node_config, "reservationAffinity.consumeReservationType") or "on-demand"
    )
    topology = _get(inputs, "placementPolicy.tpuTopology") or "-"
    zones = ",".join(inputs.get("nodeLocations") or []) or "cluster zones"
    return f"{node_config.get('machineType')} {topology} nodes={nodes} {mode} {zones}"


def _k8s(inputs: dict[str, Any]) -> str:
    metadata = inputs.get("metadata") or {}
    namespace = metadata.get("namespace")
    return f"{inputs.get('kind')} {namespace + '/' if namespace else ''}{metadata.get('name')}"


SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "gcp:container/nodePool:NodePool": _node_pool,
    "gcp:container/cluster:Cluster": lambda i: (
        f"{i.get('location')} channel={_get(i, 'releaseChannel.channel')} "
        f"autopilot={bool(i.get('enableAutopilot'))} deletionProtection={i.get('deletionProtection')}"
    ),
    "gcp:projects/iAMMember:IAMMember": lambda i: f"{i.get('role')} -> {i.get('member')}",
    "gcp:storage/bucketIAMMember:BucketIAMMember": lambda i: (
        f"{i.get('role')} on {i.get('bucket')} -> {i.get('member')}"
    ),
    "gcp:storage/bucket:Bucket": lambda i: (
        f"{i.get('location')} publicAccessPrevention={i.get('publicAccessPrevention')} "
        f"versioning={_get(i, 'versioning.enabled')}"
    ),
    "gcp:compute/futureReservation:FutureReservation": lambda i: (
        f"{_get(i, 'specificSkuProperties.instanceProperties.machineType')} "
        f"x{_get(i, 'specificSkuProperties.totalCount')} "
        f"{_get(i, 'timeWindow.startTime')} -> {_get(i, 'timeWindow.endTime')}"
    ),
    CHART_TYPE: lambda i: f"{i.get('chart')} {i.get('version')} ns={i.get('namespace')}",
}


def summary(resource: dict[str, Any]) -> str:
    inputs = resource["inputs"]
    if resource["type"] in SUMMARIES:
        return SUMMARIES[resource["type"]](inputs)
    if resource["type"].startswith("kubernetes:") and "kind" in inputs:
        return _k8s(inputs)
    return ""


def component_names(plan: Plan) -> dict[str, str]:
    """URN -> name of its nearest ComponentResource ancestor ("stack" for top-level resources), for every
    resource at once: asking per resource would rebuild the URN index each time (quadratic in resources)."""
    by_urn = {r["urn"]: r for r in plan.resources}
    names = {}
    for resource in plan.resources:
        parent = resource["parent"]
        while parent in by_urn and not by_urn[parent]["type"].startswith(COMPONENT_PREFIX):
            parent = by_urn[parent]["parent"]
        names[resource["urn"]] = by_urn[parent]["name"] if parent in by_urn else "stack"
    return names


def group_names(plan: Plan) -> dict[str, str]:
    """URN -> the group a resource is shown and written with: its component, or for objects rendered from a
    chart, the Chart resource (`kueue-chart`)."""
    names = component_names(plan)
    by_urn = {r["urn"]: r for r in plan.resources}
    for resource in plan.resources:
        if resource.get("rendered"):
            names[resource["urn"]] = by_urn[resource["parent"]]["name"]
    return names


def render_plan(plan: Plan) -> str:
    lines = [f"Previewing stack '{plan.stack}' of project '{plan.project}' (offline, mock engine)", ""]
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    components = {r["name"]: r["type"] for r in plan.resources if r["type"].startswith(COMPONENT_PREFIX)}
    charts = {r["name"] for r in plan.resources if r["type"] == CHART_TYPE}
    group = group_names(plan)
    for resource in plan.resources:
        if resource["custom"]:
            groups[group[resource["urn"]]].append(resource)
    for name, resources in groups.items():
        kind = components.get(name, "").removeprefix(COMPONENT_PREFIX) or "Stack"
        if name in charts:
            kind = f"Chart (rendered offline from vendor/charts, {len(resources)} objects)"
        lines.append(f"{kind} {name}")
        for resource in resources:
            flags = " [protect]" if resource["protect"] else ""
            lines.append(f"  + {resource['type']:<52} {resource['name']:<40} {summary(resource)}{flags}")
        lines.append("")
    custom = sum(1 for r in plan.resources if r["custom"])
    rendered = sum(1 for r in plan.resources if r.get("rendered"))
    lines.append(
        f"Resources: + {len(plan.resources)} to create ({custom} cloud/cluster resources of which {rendered} "
        f"rendered from charts, {len(plan.resources) - custom} components)"
    )
    return "\n".join(lines)


VIEW_NAMES = {"new": "new stack", "deployed": "deployed stack at rest"}


def render_violations(plan: Plan) -> str:
    views = "policies run as the real engine runs them: preview of a new stack, and of the deployed stack at rest"
    lines = [f"Policy report ({views})"]
    if plan.unrendered_in_new_stack:
        lines.append(
            f"  note: in a new stack's preview, {', '.join(plan.unrendered_in_new_stack)} cannot render before "
            "the cluster exists; see the README (first deployment)"
        )
    if not plan.violations:
        lines.append("Policies: all passed")
        return "\n".join(lines)
    by_urn = {r["urn"]: r for r in plan.resources}
    for level in ("mandatory", "advisory"):
        for violation in (v for v in plan.violations if v["level"] == level):
            resource = by_urn.get(violation.get("urn") or "")
            where = f"{resource['type']} {resource['name']}" if resource else "stack"
            seen = ", ".join(VIEW_NAMES.get(view, view) for view in violation.get("views", []))
            lines.append(f"  [{level}] {violation['policy']}: {where}" + (f" ({seen})" if seen else ""))
            lines.append(f"      {violation['message']}")
    mandatory = sum(1 for v in plan.violations if v["level"] == "mandatory")
    lines.append(f"Policies: {mandatory} mandatory, {len(plan.violations) - mandatory} advisory")
    return "\n".join(lines)


def render_outputs(plan: Plan) -> str:
    lines = ["Outputs:"]
    for key, value in plan.outputs.items():
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        lines.append(f"  {key}: {text if len(text) < 160 else text[:157] + '...'}")
    return "\n".join(lines)


def manifests(plan: Plan) -> dict[str, list[dict[str, Any]]]:
    """Kubernetes objects the stack creates, grouped by component; a chart's rendered objects by chart."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    component = group_names(plan)
    for resource in plan.resources:
        inputs = resource["inputs"]
        if resource["type"].startswith("kubernetes:") and "apiVersion" in inputs and "kind" in inputs:
            # Whole objects (`status` is the KubernetesObject output placeholder, not part of the manifest).
            obj = {k: v for k, v in inputs.items() if k != "status"}
            grouped[component[resource["urn"]]].append(obj)
    return dict(grouped)


def graph(plan: Plan) -> str:
    """Mermaid graph of dependencies (solid) between custom resources."""
    ids = {r["urn"]: f"r{i}" for i, r in enumerate(plan.resources)}
    lines = ["graph LR"]
    for resource in plan.resources:
        if resource["custom"]:
            lines.append(f'  {ids[resource["urn"]]}["{resource["type"].split(":")[-1]} {resource["name"]}"]')
    for resource in plan.resources:
        for dependency in resource["dependencies"]:
            if dependency in ids and resource["custom"]:
                lines.append(f"  {ids[dependency]} --> {ids[resource['urn']]}")
    return "\n".join(lines) + "\n"


def plan_json(plan: Plan) -> str:
    """plan.json with one resource and one violation per line: a review diff shows which resources changed,
    and the whole file encodes at C speed (an indented dump of the rendered CRDs takes half a second)."""
    data = plan.to_json()

    def lines(items: list[Any]) -> str:
        return "[\n" + ",\n".join(json.dumps(item) for item in items) + "\n  ]" if items else "[]"

    head = {k: data[k] for k in ("project", "stack")}
    return (
        "{\n"
        + "".join(f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in head.items())
        + f'  "resources": {lines(data["resources"])},\n'
        + f'  "outputs": {json.dumps(data["outputs"], indent=2)},\n'
        + f'  "violations": {lines(data["violations"])}\n'
        + "}\n"
    )


MANIFEST_CACHE = REPO / "build" / ".manifest-cache"


def manifest_yaml(objects: list[dict[str, Any]]) -> str:
    """Multi-document YAML of `objects`, memoized by content: the rendered charts' CRDs take PyYAML about a
    second to represent, and they only change with the chart or its values."""
    key = hashlib.sha256(json.dumps(objects).encode()).hexdigest()
    path = MANIFEST_CACHE / f"{key}.yaml"
    if path.is_file():
        return path.read_text()
    text = yaml.dump_all(objects, Dumper=yaml.CSafeDumper, sort_keys=False)
    if len(text) > 100_000:  # small groups are cheap to write again; keep the cache to what pays
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(text)
        partial.replace(path)
    return text


def write(plan: Plan, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(plan_json(plan))
    manifest_dir = out / "manifests"
    if manifest_dir.exists():
        for old in manifest_dir.glob("*.yaml"):
            old.unlink()
    manifest_dir.mkdir(exist_ok=True)
    for component, objects in manifests(plan).items():
        (manifest_dir / f"{component}.yaml").write_text(manifest_yaml(objects))
    (out / "graph.mmd").write_text(graph(plan))
