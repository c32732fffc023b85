"""Turn a Plan into what people read (the grouped plan, totals, policy report) and what tools read
(build/<stack>/plan.json, manifests/*.yaml, graph.mmd)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from offline import summary
from offline.charts import CHART_TYPE
from offline.engine import Plan
from offline.imports import show_value
from offline.vendor import REPO

COMPONENT_PREFIX = "tpu-stack:index:"
PROTECTED = "`pulumi destroy` and replacements stop until `pulumi state unprotect`"


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
        "queued"  # queued provisioning runs on flex-start capacity: both flags are set
        if _get(inputs, "queuedProvisioning.enabled")
        else "flex-start"
        if node_config.get("flexStart")
        else "spot"
        if node_config.get("spot")
        else _get(node_config, "reservationAffinity.consumeReservationType") or "on-demand"
    )
    topology = _get(inputs, "placementPolicy.tpuTopology") or "-"
    zones = ",".join(inputs.get("nodeLocations") or []) or "cluster zones"
    return f"{node_config.get('machineType')} {topology} nodes={nodes} {mode} {zones}"


def _k8s(inputs: dict[str, Any]) -> str:
    """The object's own name (its kind is in the type token)."""
    metadata = inputs.get("metadata") or {}
    namespace = metadata.get("namespace")
    return f"{namespace + '/' if namespace else ''}{metadata.get('name')}"


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
    "gcp:compute/resourcePolicy:ResourcePolicy": lambda i: (
        f"{i.get('name')} {_get(i, 'workloadPolicy.type')} {_get(i, 'workloadPolicy.acceleratorTopology')} "
        f"{i.get('region')}"
    ),
    CHART_TYPE: lambda i: f"{i.get('chart')} {i.get('version')} ns={i.get('namespace')}",
}


def describe(resource: dict[str, Any]) -> str:
    """One line of what a resource is: a pool's shape, a role and its member, a Kubernetes object's name."""
    inputs = resource["inputs"]
    if resource["type"] in SUMMARIES:
        return SUMMARIES[resource["type"]](inputs)
    if resource["type"].startswith("kubernetes:") and "kind" in inputs and not resource.get("rendered"):
        return _k8s(inputs)  # a rendered object's name already says it (`<chart>:<namespace>/<name>`)
    return ""


ARCHITECTURE = (
    "ProjectServices",
    "StackNetwork",
    "GkeCluster",
    "TpuSlicePools",
    "JobSetInstall",
    "KueueInstall",
    "KueueQueues",
    "NamespacePolicies",
    "ControllerMetrics",
    "Bucket",
    "WorkloadIdentity",
    "Saxml",
    "Monitoring",
)
"""Components in the order the architecture builds them (README, Architecture): cluster and capacity first,
then scheduling, data, serving and monitoring. A component not listed follows them, by type."""


def component_names(plan: Plan) -> dict[str, str]:
    """URN -> name of its nearest ComponentResource ancestor ("stack" for top-level resources), for every
    resource at once: asking per resource would rebuild the URN index each time (quadratic in resources)."""
    return {urn: name for urn, (_kind, name) in _components(plan).items()}


def _components(plan: Plan) -> dict[str, tuple[str, str]]:
    """URN -> (type, name) of the nearest ComponentResource ancestor; ("Stack", "stack") at the top."""
    by_urn = {r["urn"]: r for r in plan.resources}
    found = {}
    for resource in plan.resources:
        parent = resource["parent"]
        while parent in by_urn and not by_urn[parent]["type"].startswith(COMPONENT_PREFIX):
            parent = by_urn[parent]["parent"]
        owner = by_urn.get(parent)
        kind = owner["type"].removeprefix(COMPONENT_PREFIX) if owner else "Stack"
        found[resource["urn"]] = (kind, owner["name"] if owner else "stack")
    return found


def group_names(plan: Plan) -> dict[str, str]:
    """URN -> the group a resource's manifests are written with: its component, or for objects rendered from a
    chart, the Chart resource (`kueue-chart`)."""
    names = component_names(plan)
    by_urn = {r["urn"]: r for r in plan.resources}
    for resource in plan.resources:
        if resource.get("rendered"):
            names[resource["urn"]] = by_urn[resource["parent"]]["name"]
    return names


def _group_order(group: tuple[str, str], pools: list[str]) -> tuple[int, str, int, str]:
    """Architecture order of components; pool groups in the order of the capacity table, the rest by name."""
    kind, name = group
    rank = ARCHITECTURE.index(kind) + 1 if kind in ARCHITECTURE else len(ARCHITECTURE) + 1
    return (rank, kind, pools.index(name) if kind == "TpuSlicePools" and name in pools else len(pools), name)


def _kind(resource: dict[str, Any]) -> str:
    return str(resource["inputs"].get("kind") or resource["type"].rsplit(":", 1)[-1])


def rendered_counts(children: list[dict[str, Any]]) -> str:
    """A chart's rendered objects as counts by kind, most first: `44 ClusterRole, 9 CustomResourceDefinition`."""
    counts = Counter(_kind(child) for child in children)
    return ", ".join(f"{count} {kind}" for kind, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def render_plan(plan: Plan, verbose: bool = False) -> str:
    """The stack's capacity and queues first, then the resources by component in architecture order, a chart's
    rendered objects as counts by kind (`verbose`: every one)."""
    lines = [f"Previewing stack '{plan.stack}' of project '{plan.project}' (offline, mock engine)", ""]
    if plan.summary:
        lines += [summary.render(plan.summary), ""]
    owners = _components(plan)
    children: dict[str, list[dict[str, Any]]] = defaultdict(list)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for resource in plan.resources:
        if resource.get("rendered"):
            children[resource["parent"]].append(resource)
        elif resource["custom"] or resource.get("remote"):
            groups[owners[resource["urn"]]].append(resource)
    shown = [r for resources in groups.values() for r in resources]
    every_protected = bool(shown) and all(r["protect"] for r in shown)
    if every_protected:
        lines += [f"Every resource is protected: {PROTECTED}.", ""]
    pools = list((plan.summary or {}).get("capacity") or {})
    rows: list[list[str]] = []
    marks: list[str] = []  # per row: group header, resource, import change, note, or rendered child
    for (kind, name), resources in sorted(groups.items(), key=lambda item: _group_order(item[0], pools)):
        rows.append([f"{kind} {name}"])
        marks.append("group")
        for resource in resources:
            flag = "[protect]" if resource["protect"] and not every_protected else ""
            op = "=" if resource.get("importId") else "+"
            rows.append([op, resource["type"], resource["name"], " ".join(filter(None, [describe(resource), flag]))])
            marks.append("resource")
            for change in (resource.get("import") or {}).get("changes", []):
                replaces = "  (replaces it: refused)" if change["replaces"] else ""
                rows.append(
                    [f"~ {change['path']}: {show_value(change['old'])} -> {show_value(change['new'])}{replaces}"]
                )
                marks.append("change")
            rendered = children.get(resource["urn"], [])
            if rendered:
                more = "" if verbose else " (--verbose lists them)"
                existing = sum(1 for child in rendered if "takeover" in child)
                taken = f"; {existing} of them exist and are taken over" if existing else ""
                rows.append([f"renders {len(rendered)} objects: {rendered_counts(rendered)}{taken}{more}"])
                marks.append("note")
            for child in rendered if verbose else []:
                rows.append(["~" if "takeover" in child else "+", child["type"], child["name"], ""])
                marks.append("child")
    lines += _aligned(rows, marks)
    custom = sum(1 for r in plan.resources if r["custom"])
    rendered_total = sum(1 for r in plan.resources if r.get("rendered"))
    imported = [r for r in plan.resources if r.get("importId")]
    lines.append(
        f"Resources: + {len(plan.resources) - len(imported)} to create: {custom - len(imported)} in the cloud and "
        f"cluster ({rendered_total} rendered from charts), {len(plan.resources) - custom} components"
        + (f"; = {len(imported)} to import" if imported else "")
    )
    return "\n".join(lines)


def short_type(token: str) -> str:
    """A type token as the preview's rows show it, within the width: `container:NodePool` for
    `gcp:container/nodePool:NodePool`, the kind for Kubernetes objects (`ClusterQueue`; the apiVersion is in the
    manifest), `provider:kubernetes` for `pulumi:providers:kubernetes`. plan.json keeps the full token."""
    package, _, rest = token.partition(":")
    module, _, kind = rest.rpartition(":")
    if package == "pulumi" and module == "providers":
        return f"provider:{kind}"
    if package == "kubernetes" and kind:
        return kind
    if package == "gcp" and kind:
        return f"{module.split('/')[0]}:{kind}"
    return token


NAME_WIDTH = 40
"""A longer resource name puts its details on the next line."""


def _aligned(rows: list[list[str]], marks: list[str]) -> list[str]:
    """Resource rows under their group headers, within WIDTH, in columns per group (type, name, details; a name
    longer than NAME_WIDTH pushes its row's details along): details that do not fit go on the lines below."""
    widths: list[tuple[int, int]] = []
    for row, mark in zip(rows, marks, strict=True):
        if mark == "group":
            widths.append((0, 0))
        elif mark in ("resource", "child"):
            type_width, name_width = widths[-1]
            widths[-1] = (max(type_width, len(short_type(row[1]))), min(max(name_width, len(row[2])), NAME_WIDTH))
    lines: list[str] = []
    group = -1
    for row, mark in zip(rows, marks, strict=True):
        if mark == "group":
            group += 1
            lines += ["", row[0]] if lines else [row[0]]
        elif mark == "note":
            lines += summary.wrapped(row[0], "      ", "        ")
        elif mark == "change":
            lines += summary.wrapped(row[0], "      ", "          ")
        else:
            type_width, name_width = widths[group]
            head = f"  {row[0]} {short_type(row[1]):<{type_width}}  {row[2]:<{name_width}}"
            if len(head.rstrip()) > summary.WIDTH:  # a name too long for its row: on a line of its own
                lines += [f"  {row[0]} {short_type(row[1])}", f"      {row[2]}"]
                lines += summary.wrapped(row[3], "      ", "      ") if row[3] else []
            elif not row[3] or len(head) + 2 + len(row[3]) <= summary.WIDTH:
                lines.append(f"{head}  {row[3]}".rstrip())
            else:
                lines += [head.rstrip(), *summary.wrapped(row[3], "      ", "      ")]
    return [*lines, ""]


VIEW_NAMES = {"new": "new stack", "deployed": "deployed stack at rest"}


def render_violations(plan: Plan) -> str:
    """The policy findings, mandatory first; findings of one policy with the same words on several resources of one
    type (an advisory per TPU pool) are one entry naming them."""
    lines = ["Policy report (as the real engine runs the pack: a new stack's preview, the deployed stack at rest)"]
    if plan.unrendered_in_new_stack:
        lines += summary.wrapped(
            f"note: in a new stack's preview, {', '.join(plan.unrendered_in_new_stack)} cannot render before the "
            "cluster exists; see the README (first deployment)"
        )
    if not plan.violations:
        lines.append("Policies: all passed")
        return "\n".join(lines)
    by_urn = {r["urn"]: r for r in plan.resources}
    for level in ("mandatory", "advisory"):
        entries: dict[tuple[str, str, str, tuple[str, ...]], list[str]] = {}
        for violation in (v for v in plan.violations if v["level"] == level):
            resource = by_urn.get(violation.get("urn") or "")
            kind = resource["type"] if resource else "stack"
            views = tuple(VIEW_NAMES.get(view, view) for view in violation.get("views", []))
            names = entries.setdefault((violation["policy"], kind, violation["message"], views), [])
            names.append(resource["name"] if resource else "")
        for (policy, kind, message, views), names in entries.items():
            seen = f" ({', '.join(views)})" if views else ""
            if len(names) == 1:
                where = f"{kind} {names[0]}".rstrip()
                lines += summary.wrapped(f"[{level}] {policy}: {where}{seen}", "  ", "      ")
            else:
                text = f"[{level}] {policy}: {len(names)} {kind}{seen}: {', '.join(names)}"
                lines += summary.wrapped(text, "  ", "      ")
            lines += summary.wrapped(message, "      ", "      ")
    mandatory = sum(1 for v in plan.violations if v["level"] == "mandatory")
    lines.append(f"Policies: {mandatory} mandatory, {len(plan.violations) - mandatory} advisory")
    return "\n".join(lines)


def render_outputs(plan: Plan) -> str:
    lines = ["Outputs:"]
    for key, value in plan.outputs.items():
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        room = summary.WIDTH - len(f"  {key}: ")
        lines.append(f"  {key}: {text if len(text) <= room else text[: room - 3] + '...'}")
    return "\n".join(lines)


def manifests(plan: Plan) -> dict[str, list[dict[str, Any]]]:
    """Kubernetes objects the stack creates, grouped by component; a chart's rendered objects by chart."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    component = group_names(plan)
    for resource in plan.resources:
        inputs = resource["inputs"]
        if resource["type"].startswith("kubernetes:") and "apiVersion" in inputs and "kind" in inputs:
            # Whole objects as applied (`status` is the API server's to write, never part of what is applied).
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
        + f'  "summary": {json.dumps(data["summary"], indent=2)},\n'
        + f'  "resources": {lines(data["resources"])},\n'
        + f'  "outputs": {json.dumps(data["outputs"], indent=2)},\n'
        + f'  "violations": {lines(data["violations"])}'
        + (f',\n  "adoption": {json.dumps(data["adoption"], indent=2)}\n' if "adoption" in data else "\n")
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
