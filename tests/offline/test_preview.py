"""The offline preview CLI and the plan.json contract other tools read (design §3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offline import __main__ as cli
from tests.fixtures import stack_path, stack_plan

PLAN_KEYS = {"project", "stack", "summary", "resources", "outputs", "violations"}
RESOURCE_KEYS = {"urn", "type", "name", "parent", "dependencies", "custom", "remote", "protect", "ignoreChanges",
                 "customTimeouts", "replaceOnChanges", "deleteBeforeReplace", "retainOnDelete", "deletedWith",
                 "aliases", "importId", "inputs"}  # fmt: skip


@pytest.fixture(scope="module")
def dev_plan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("dev")
    assert (
        cli.main(["preview", "--stack", "dev", "--config", str(stack_path("dev")), "--out", str(out), "--quiet"]) == 0
    )
    return json.loads((out / "plan.json").read_text())


def test_plan_json_has_every_registered_resource_in_the_contract_shape(dev_plan: dict[str, object]) -> None:
    assert set(dev_plan) >= PLAN_KEYS
    assert (dev_plan["project"], dev_plan["stack"]) == ("tpu-stack", "dev")
    resources = dev_plan["resources"]
    assert isinstance(resources, list)
    in_memory = stack_plan("dev").resources
    assert [r["urn"] for r in resources] == [r["urn"] for r in in_memory]
    urns = {r["urn"] for r in resources}
    by_urn = {r["urn"]: r for r in resources}
    for resource in resources:
        assert set(resource) >= RESOURCE_KEYS, resource["urn"]
        # plan.json keeps the mock monitor's URNs: the parent's own type (the stack's for top-level resources),
        # '$', the resource's type (offline/urns.py derives the engine's full-chain URNs from these records).
        parent = resource["parent"]
        qualified = resource["type"]
        if parent is not None:
            qualified = f"{by_urn[parent]['type'] if parent in by_urn else 'pulumi:pulumi:Stack'}${qualified}"
        assert resource["urn"] == f"urn:pulumi:dev::tpu-stack::{qualified}::{resource['name']}"
        assert (
            resource["parent"] is None
            or resource["parent"] in urns
            or resource["parent"].endswith("Stack::tpu-stack-dev")
        )
        assert set(resource["dependencies"]) <= urns
        assert isinstance(resource["custom"], bool) and isinstance(resource["protect"], bool)


def test_inputs_use_camel_case_wire_names_and_integers(dev_plan: dict[str, object]) -> None:
    resources = dev_plan["resources"]
    assert isinstance(resources, list)
    pool = next(r for r in resources if r["name"] == "multislice-0")
    inputs = pool["inputs"]
    assert inputs["nodeConfig"]["machineType"] == "ct6e-standard-4t"
    assert inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 2, "locationPolicy": "ANY"}
    assert isinstance(inputs["autoscaling"]["maxNodeCount"], int)
    assert "node_config" not in inputs


def test_preview_prints_grouped_plan_totals_and_writes_artifacts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["preview", "--stack", "dev", "--config", str(stack_path("dev")), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "TpuSlicePools multislice" in out and "GkeCluster tpu-dev" in out
    assert "ct6e-standard-4t 2x4 nodes=0..2 flex-start us-east5-b" in out
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert f"Resources: + {len(plan['resources'])} to create" in out
    assert (tmp_path / "graph.mmd").read_text().startswith("graph LR")
    assert "Outputs:" in out


def test_secrets_never_reach_the_plan(dev_plan: dict[str, object]) -> None:
    outputs = dev_plan["outputs"]
    assert isinstance(outputs, dict)
    assert outputs["kubeconfig"] == "[secret]"


def test_a_stack_file_that_is_not_yaml_is_a_one_line_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack_file = tmp_path / "Pulumi.broken.yaml"
    stack_file.write_text("config:\n  tpu-stack:bucket:\n    writers:\n  - namespace: default\n   - x\n")
    assert cli.main(["preview", "--stack", "broken", "--config", str(stack_file), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"error: {stack_file}:4: expected <block end>, but found '-'; fix the YAML (indentation, '-' list items)",
        "1 config error(s); nothing was registered.",
    ]
    assert not (tmp_path / "plan.json").exists()
