"""`python -m offline preview` writes every Kubernetes object the stack authors to build/<stack>/manifests/,
one multi-document YAML file per component (a chart's rendered objects: one per chart), and those files hold
exactly the objects of plan.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline import __main__ as cli
from offline import policy_check
from tests.fixtures import stack_path

STACKS = ("dev", "prod")


def canonical(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True)


@pytest.fixture(scope="module")
def previews(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for stack in STACKS:
        folder = tmp_path_factory.mktemp(stack)
        argv = ["preview", "--stack", stack, "--config", str(stack_path(stack)), "--out", str(folder), "--quiet"]
        assert cli.main([*argv, "--policy-config", str(policy_check.TEAM_CONFIG)]) == 0
        out[stack] = folder
    return out


@pytest.mark.parametrize("stack", STACKS)
def test_manifests_round_trip_to_the_kubernetes_objects_of_the_plan(previews: dict[str, Path], stack: str) -> None:
    plan = json.loads((previews[stack] / "plan.json").read_text())
    authored = [
        r["inputs"]
        for r in plan["resources"]
        if r["type"].startswith("kubernetes:") and {"apiVersion", "kind"} <= r["inputs"].keys()
    ]
    files = sorted((previews[stack] / "manifests").glob("*.yaml"))
    written = [doc for path in files for doc in yaml.safe_load_all(path.read_text())]
    # Whole objects, every field: nothing the engine receives is dropped or added on the way to the file.
    assert sorted(map(canonical, written)) == sorted(map(canonical, authored))
    kinds = {obj["kind"] for obj in written}
    assert {"Namespace", "ResourceFlavor", "ClusterQueue", "LocalQueue", "Cohort", "PriorityClass"} <= kinds
    assert {"Deployment", "CustomResourceDefinition", "MutatingWebhookConfiguration"} <= kinds  # from the charts
    for obj in written:
        assert {"apiVersion", "kind", "metadata"} <= obj.keys()


@pytest.mark.parametrize("stack", STACKS)
def test_one_manifest_file_per_component(previews: dict[str, Path], stack: str) -> None:
    plan = json.loads((previews[stack] / "plan.json").read_text())
    components = {r["name"] for r in plan["resources"] if r["type"].startswith("tpu-stack:index:") and not r["custom"]}
    charts = {r["name"] for r in plan["resources"] if r["type"] == "kubernetes:helm.sh/v4:Chart"}
    names = {path.stem for path in (previews[stack] / "manifests").glob("*.yaml")}
    assert names <= components | charts
    assert {"queues", "kueue", "jobset", "kueue-chart", "jobset-chart"} <= names
    queues = list(yaml.safe_load_all((previews[stack] / "manifests" / "queues.yaml").read_text()))
    assert {obj["kind"] for obj in queues} >= {"ResourceFlavor", "ClusterQueue", "LocalQueue"}
    # A chart's rendered objects go to <chart>.yaml; the install component's own file holds its namespace.
    assert all(obj["kind"] == "Namespace" for name in ("kueue", "jobset") for obj in yaml.safe_load_all(
        (previews[stack] / "manifests" / f"{name}.yaml").read_text()))  # fmt: skip
