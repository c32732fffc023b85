"""One source for the config reference: the stack file schema, the README's config tables and Pulumi.yaml's config
sections are generated from the config models (offline/configdocs.py), each test here fails when its file drifts,
and the schema flags in an editor what the program refuses at preview."""

from __future__ import annotations

import copy
import itertools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from components.config import ConfigError, load
from components.config.base import ConfigModel
from components.config.monitoring import MonitoringConfig
from offline import configdocs
from offline.engine import REPO, _engine_config, read_stack_file
from offline.stack_files import stack_files
from tests.fixtures import FIXTURE_STACKS, STACKS_DIR, stack_data, stack_path

STACK_FILES = [*stack_files().values(), *(stack_path(stack) for stack in FIXTURE_STACKS)]
"""Every stack file of the users (whatever its name and content) and every fixture stack."""
EVERY_STACK_FILE = pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: str(p.relative_to(REPO)))


def _between(text: str, begin: str, end: str) -> str:
    return text[text.index(begin) : text.index(end) + len(end)]


# ---- each generated artifact fails its test when it drifts from the models --------------------------------------
def test_the_stack_schema_is_generated_from_the_models() -> None:
    committed = configdocs.SCHEMA_FILE.read_text()
    assert committed == configdocs.schema_text(), "schema/stack.schema.json is stale: run `make config-docs`"


def test_the_readme_config_reference_is_generated_from_the_models() -> None:
    readme = configdocs.README.read_text()
    committed = _between(readme, configdocs.README_BEGIN, configdocs.README_END)
    assert committed == configdocs.readme_block(), "docs/config.md is stale: run `make config-docs`"


def test_pulumi_yaml_config_is_generated_from_the_models() -> None:
    project = configdocs.PROJECT_FILE.read_text()
    committed = _between(project, configdocs.YAML_BEGIN, configdocs.YAML_END)
    assert committed == configdocs.project_block(), "Pulumi.yaml's config is stale: run `make config-docs`"


def test_nothing_drifted_so_the_check_command_passes() -> None:
    assert configdocs.drifted() == []
    assert configdocs.main([]) == 0


def test_a_changed_docstring_makes_the_schema_and_the_readme_drift(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a reviewer sees when a model changed and `make config-docs` was not run."""
    real = configdocs.field_docs

    def edited(model: type[Any]) -> dict[str, str]:
        docs = real(model)
        if model is MonitoringConfig:
            docs["pending_minutes"] = "Minutes until a queue with pending workloads pages someone."
        return docs

    monkeypatch.setattr(configdocs, "field_docs", edited)
    assert configdocs.drifted() == [configdocs.SCHEMA_FILE, configdocs.README]
    assert (
        "| `pendingMinutes` | Minutes until a queue with pending workloads pages someone. At least 1. | `30` |"
        in configdocs.readme_block()
    )
    assert configdocs.main([]) == 1


def test_a_new_key_drifts_all_three(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key added to the models (here: one more `tpu-stack:` key) is missing from every committed file."""
    monkeypatch.setitem(configdocs.STACK_KEYS, "monitoring2", "monitoring")
    assert configdocs.drifted() == [configdocs.SCHEMA_FILE, configdocs.README, configdocs.PROJECT_FILE]


def _descriptions(node: Any, definitions: dict[str, Any], path: str = "") -> list[str]:
    """Paths of schema properties without a description (their own or their model's)."""
    missing = []
    if isinstance(node, dict):
        for name, prop in node.get("properties", {}).items():
            if not configdocs._description(prop, definitions):
                missing.append(f"{path}{name}")
        for key, value in node.items():
            if key != "properties":
                missing += _descriptions(value, definitions, path)
        for name, prop in node.get("properties", {}).items():
            missing += _descriptions(prop, definitions, f"{path}{name}.")
    return missing


def test_every_key_and_field_is_described() -> None:
    """A field without a docstring would be an empty row in the README and a bare key in the editor."""
    schema = configdocs.stack_schema()
    definitions = schema["definitions"]
    assert _descriptions({"properties": schema["properties"]}, definitions) == []
    undescribed = [f"{name}: {p}" for name, model in definitions.items() for p in _descriptions(model, definitions)]
    assert undescribed == []


SCHEMA: dict[str, Any] = json.loads(configdocs.SCHEMA_FILE.read_text())


# ---- the generator's rules, on a hand-made schema ---------------------------------------------------------------
def test_rows_follow_models_lists_maps_and_stated_defaults() -> None:
    definitions = {
        "Window": {
            "description": "A window.\n\nMore about windows.",
            "properties": {"start": {"type": "string", "description": "Start | end."}},
            "required": ["start"],
        },
        "Entry": {"properties": {"n": {"type": "integer", "default": 1, "description": "N."}}},
    }
    model = {
        "properties": {
            "mode": {"enum": ["a", "b"], "type": "string", "default": "a", "description": "How."},
            "count": {"type": "integer", "minimum": 1, "default": 3, "description": "How many."},
            "window": {"anyOf": [{"$ref": "#/definitions/Window"}, {"type": "null"}]},
            "other": {"$ref": "#/definitions/Window", "description": "Another window."},
            "entries": {
                "type": "array",
                "items": {"$ref": "#/definitions/Entry"},
                "default": [{"n": 1}, {"n": 2}],
                "description": "Entries.",
            },
            "byName": {"type": "object", "additionalProperties": {"$ref": "#/definitions/Entry"}, "description": "M."},
            "name": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Name.\n\nDefault: the key"},
        },
        "required": ["mode"],
    }
    assert list(configdocs.rows(model, definitions)) == [
        configdocs.Row("mode", "How. One of `a`, `b`.", "required"),
        configdocs.Row("count", "How many. At least 1.", "`3`"),
        configdocs.Row("window", "A window.", ""),
        configdocs.Row("window.start", "Start | end.", "required"),
        configdocs.Row("other", "Another window. Fields as `window`.", ""),
        configdocs.Row("entries[]", "Entries.", "`[{}, {n: 2}]`"),
        configdocs.Row("entries[].n", "N.", "`1`"),
        configdocs.Row("byName", "M. Fields as `entries[]`.", ""),
        configdocs.Row("name", "Name.", "the key"),
    ]


class _DocumentedForTheTest(ConfigModel):
    """Only for the test below."""

    first: int = 1
    """First line,
    second line."""
    bare: str = ""
    last: bool = False
    """Last."""


def test_field_docs_are_the_strings_right_below_each_field() -> None:
    assert configdocs.field_docs(_DocumentedForTheTest) == {"first": "First line,\nsecond line.", "last": "Last."}


# ---- the schema in use: stack files as an editor checks them ------------------------------------------------------
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)


def test_the_schema_is_a_valid_draft_07_schema() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)


@pytest.mark.every_stack_file
@EVERY_STACK_FILE
def test_every_stack_file_matches_the_schema(path: Path) -> None:
    assert [error.message for error in VALIDATOR.iter_errors(yaml.safe_load(path.read_text()))] == []


@pytest.mark.every_stack_file
@EVERY_STACK_FILE
def test_a_stack_files_modeline_leads_editors_to_the_schema(path: Path) -> None:
    """yaml-language-server takes a modeline only among the comments that open the document, matches it with
    these two expressions, and resolves a relative path from the file's folder (redhat-developer/
    yaml-language-server src/languageservice/services/modelineUtil.ts, yamlSchemaService.ts resolveSchemaRef).
    A stack file without one (`pulumi stack init` writes none) is fine; the fixture stacks and the examples have one."""
    opening = list(itertools.takewhile(lambda line: line.startswith("#"), path.read_text().splitlines()))
    modelines = [line for line in opening if re.match(r"^#\s+(?:yaml-language-server\s*:|\$schema:)", line)]
    if path.parent == STACKS_DIR:
        assert modelines == ["# yaml-language-server: $schema=../../../schema/stack.schema.json"]
    for modeline in modelines:
        found = re.search(r"\$schema(?:=|:[^\S\r\n]*)(\S+)", modeline)
        assert found is not None and (path.parent / found.group(1)).resolve() == configdocs.SCHEMA_FILE


DEV = yaml.safe_load(stack_path("dev").read_text())


def _errors(document: dict[str, Any]) -> list[tuple[list[str | int], str]]:
    return sorted((list(e.absolute_path), e.message) for e in VALIDATOR.iter_errors(document))


def _rename(mapping: dict[str, Any], old: str, new: str) -> None:
    mapping[new] = mapping.pop(old)


def _mistake(name: str) -> dict[str, Any]:
    """The dev stack file with one mistake."""
    document = copy.deepcopy(DEV)
    config = document["config"]
    if name == "tpuPool":
        _rename(config, "tpu-stack:tpuPools", "tpu-stack:tpuPool")
    elif name == "maxNode":
        _rename(config["tpu-stack:cluster"]["systemPool"], "maxNodes", "maxNode")
    elif name == "topolgy":
        _rename(config["tpu-stack:tpuPools"][1], "topology", "topolgy")
    elif name == "borrowingLimits":
        _rename(config["tpu-stack:queues"]["teams"][1], "borrowingLimit", "borrowingLimits")
    elif name == "namespace":
        _rename(config, "tpu-stack:labels", "tpu-stak:labels")
    return document


MISSPELLED = {
    "tpuPool": (["config"], "'tpu-stack:tpuPool' does not match any of the regexes: '^(gcp|kubernetes|pulumi):[^:]+$'"),
    "maxNode": (
        ["config", "tpu-stack:cluster", "systemPool"],
        "Additional properties are not allowed ('maxNode' was unexpected)",
    ),
    "topolgy": (
        ["config", "tpu-stack:tpuPools", 1],
        "Additional properties are not allowed ('topolgy' was unexpected)",
    ),
    "borrowingLimits": (
        ["config", "tpu-stack:queues", "teams", 1],
        "Additional properties are not allowed ('borrowingLimits' was unexpected)",
    ),
    "namespace": (["config"], "'tpu-stak:labels' does not match any of the regexes: '^(gcp|kubernetes|pulumi):[^:]+$'"),
}


@pytest.mark.parametrize("name", sorted(MISSPELLED))
def test_a_misspelled_key_is_flagged_by_the_schema_and_refused_by_the_program(name: str) -> None:
    document = _mistake(name)
    assert _errors(document) == [MISSPELLED[name]]
    with pytest.raises(ConfigError):
        load(_engine_config(document["config"]), stack="dev")


def test_wrong_types_and_choices_are_flagged() -> None:
    document = copy.deepcopy(DEV)
    pool = document["config"]["tpu-stack:tpuPools"][1]
    pool["slices"], pool["provisioning"] = "3", "flexstart"
    document["config"]["tpu-stack:cluster"]["minMasterVersion"] = 1.33
    assert _errors(document) == [
        (["config", "tpu-stack:cluster", "minMasterVersion"], "1.33 is not of type 'string'"),
        (
            ["config", "tpu-stack:tpuPools", 1, "provisioning"],
            "'flexstart' is not one of ['flex-start', 'queued', 'on-demand', 'spot', 'reservation']",
        ),
        (["config", "tpu-stack:tpuPools", 1, "slices"], "'3' is not of type 'integer'"),
    ]


def test_top_level_values_as_the_cli_writes_them_are_accepted() -> None:
    """`pulumi config set tpu-stack:throwaway true` stores the string "true", and any later save of the file by the
    CLI re-encodes a YAML `true` the same way (pulumi/pulumi pkg/cmd/pulumi/config/config.go: "Top level entries are
    always treated as strings"; sdk/go/common/resource/config/object.go MarshalString). The program reads both."""
    for text in ("true", "false"):
        document = copy.deepcopy(DEV)
        document["config"]["tpu-stack:throwaway"] = text
        assert _errors(document) == []
        assert load(_engine_config(document["config"]), stack="dev").throwaway is (text == "true")
    document["config"]["tpu-stack:throwaway"] = "yes"
    assert _errors(document) == [
        (["config", "tpu-stack:throwaway"], "'yes' is not valid under any of the given schemas"),
    ]


def test_a_top_level_number_would_take_the_clis_text_too() -> None:
    """No top-level key is a number today; should one come, its text form is what strconv.Atoi / ParseFloat read."""
    entry = {"type": "integer", "minimum": 1, "default": 3, "description": "N."}
    integer = jsonschema.Draft7Validator(configdocs._as_the_cli_writes(entry))
    assert [integer.is_valid(v) for v in (3, "3", "+3", "-3", "three", "3.0", 0)] == [
        True, True, True, True, False, False, False,
    ]  # fmt: skip
    number = jsonschema.Draft7Validator(configdocs._as_the_cli_writes({"type": "number"}))
    assert [number.is_valid(v) for v in (1.5, "1.5", "-.5", "2e3", "1.5x", "")] == [
        True, True, True, True, False, False,
    ]  # fmt: skip
    assert configdocs._as_the_cli_writes({"type": "object"}) == {"type": "object"}


def test_encrypted_values_are_for_provider_and_pulumi_keys_only() -> None:
    document = copy.deepcopy(DEV)
    document["config"]["gcp:impersonateServiceAccount"] = {"secure": "v1:AAAA"}
    document["config"]["kubernetes:kubeconfig"] = {"secure": "v1:BBBB"}
    assert _errors(document) == []
    document["config"]["tpu-stack:cluster"] = {"secure": "v1:CCCC"}
    document["config"]["tpu-stack:throwaway"] = {"secure": "v1:DDDD"}
    assert _errors(document) == [
        (["config", "tpu-stack:cluster"], "Additional properties are not allowed ('secure' was unexpected)"),
        (["config", "tpu-stack:throwaway"], "{'secure': 'v1:DDDD'} is not valid under any of the given schemas"),
    ]


def test_project_and_region_are_required_unless_an_environment_may_hold_them() -> None:
    document = copy.deepcopy(DEV)
    del document["config"]["gcp:project"]
    assert _errors(document) == [(["config"], "'gcp:project' is a required property")]
    document["environment"] = ["tpu-stack/dev"]
    assert _errors(document) == []


# ---- Pulumi.yaml as the Pulumi CLI reads it ---------------------------------------------------------------------
PROJECT: dict[str, Any] = yaml.safe_load(configdocs.PROJECT_FILE.read_text())


def test_pulumi_yaml_is_a_project_file_the_cli_accepts() -> None:
    """The CLI validates every Pulumi.yaml against this schema (pulumi/pulumi sdk/go/common/workspace/project.go
    ValidateProject); `type: object` is in it since v3.187.0."""
    schema = json.loads((REPO / "vendor" / "schemas" / "pulumi-project.json").read_text())
    assert [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(PROJECT)] == []


def _accepts(kind: str, items: dict[str, Any] | None, value: Any) -> bool:
    """pulumi/pulumi sdk/go/common/workspace/project.go ValidateConfigValue (v3.259.0)."""
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and value.lstrip("+-").isdigit()
        )
    if kind == "boolean":
        return isinstance(value, bool) or value in ("true", "false")
    if kind == "object":
        return isinstance(value, dict)
    if not isinstance(value, list) or items is None:
        return False
    return all(_accepts(items["type"], items.get("items"), v) for v in value)


def engine_config_problems(project: dict[str, Any], config: dict[str, Any], stack: str) -> list[str]:
    """What the Pulumi CLI refuses before the program runs, for the project's own keys (pulumi/pulumi
    pkg/workspace/config.go mergeConfig, validateStackConfigValue at v3.259.0): a declared key without a `default`
    or `value` is required, and a stack value must have the declared type."""
    problems = []
    name = project["name"]
    for key, declared in (project.get("config") or {}).items():
        full = key if ":" in key else f"{name}:{key}"
        if not full.startswith(f"{name}:"):
            continue
        if full not in config:
            if "default" not in declared and "value" not in declared:
                problems.append(f"Stack '{stack}' is missing configuration value '{key}'")
            continue
        if "type" in declared and not _accepts(declared["type"], declared.get("items"), config[full]):
            problems.append(f"Stack '{stack}' with configuration key '{key}' must be of type '{declared['type']}'")
    return problems


@pytest.mark.every_stack_file
@EVERY_STACK_FILE
def test_the_cli_takes_every_stack_file_with_the_declared_types(path: Path) -> None:
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    assert engine_config_problems(PROJECT, read_stack_file(path), stack) == []


def test_the_cli_rules_catch_a_breach() -> None:
    """A key declared without a default is required of every stack, and a value of another type is refused."""
    project = copy.deepcopy(PROJECT)
    project["config"]["saxml"] = {"type": "object", "description": "Saxml."}
    config = stack_data("dev")
    config["tpu-stack:cluster"] = [config["tpu-stack:cluster"]]
    assert engine_config_problems(project, config, "dev") == [
        "Stack 'dev' with configuration key 'cluster' must be of type 'object'",
        "Stack 'dev' is missing configuration value 'saxml'",
    ]


def test_every_config_key_the_program_reads_is_in_pulumi_yaml() -> None:
    declared = {f"tpu-stack:{key}" for key in PROJECT["config"]} | set(PROJECT["template"]["config"])
    assert declared == {*configdocs.GCP_KEYS, *(f"tpu-stack:{key}" for key in configdocs.STACK_KEYS)}


@pytest.mark.every_stack_file
@EVERY_STACK_FILE
def test_the_project_defaults_the_cli_fills_in_change_nothing(path: Path) -> None:
    """The CLI sets every declared key a stack leaves out to its default before the program runs; the offline engine
    does not, so the defaults must be what the model assumes anyway (an empty object is all of its defaults)."""
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    given = read_stack_file(path)
    defaults = {f"tpu-stack:{key}": declared["default"] for key, declared in PROJECT["config"].items()}
    if path.parent == STACKS_DIR:
        assert set(defaults) - set(given)  # the stack leaves some out, so the check checks something
    assert load(_engine_config({**defaults, **given}), stack=stack) == load(_engine_config(given), stack=stack)
