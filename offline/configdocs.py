"""The config reference, generated from the config models (components/config/), which are its one source:

- `schema/stack.schema.json`: a JSON Schema of `Pulumi.<stack>.yaml`; editors with yaml-language-server complete
  and check stack files with it (each stack file names it in its first line);
- the README's config tables, between the `config-reference` markers;
- `Pulumi.yaml`'s `config:` and `template:` sections, between the same markers.

What a key means is its field's attribute docstring (the string right below the field), or the docstring of its
model class; a last paragraph `Default: ...` describes a default the model derives instead of holding. The
program never reads these docstrings, so they cost a preview nothing.

`python -m offline.configdocs` exits 1 naming each file that drifted from the models; `--write` (`make
config-docs`) rewrites them.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import itertools
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from components.config.base import PROJECT, ConfigModel
from components.config.stack import GCP_KEYS, NAMESPACES, STACK_KEYS, StackConfig

REPO = Path(__file__).resolve().parent.parent
README = REPO / "docs" / "config.md"
PROJECT_FILE = REPO / "Pulumi.yaml"
SCHEMA_FILE = REPO / "schema" / "stack.schema.json"
SCHEMA_PATH = "./schema/stack.schema.json"
MODELINE = f"# yaml-language-server: $schema={SCHEMA_PATH}"
"""First line of every stack file: yaml-language-server reads a modeline only among the comments that open the
document, and resolves a relative path from the stack file's folder."""
README_BEGIN = "<!-- config-reference:begin (generated from components/config/ by `make config-docs`) -->"
README_END = "<!-- config-reference:end -->"
YAML_BEGIN = "# config-reference:begin (generated from components/config/ by `make config-docs`)"
YAML_END = "# config-reference:end"
TEMPLATE_DESCRIPTION = "TPU platform on GKE"
DEFAULT_PREFIX = "Default: "
_DEFS = "definitions"


# ---- the one source: docstrings of the models ----------------------------------------------------------------
@cache
def _module_tree(module: str) -> ast.Module:
    return ast.parse(inspect.getsource(sys.modules[module]))


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> its attribute docstring: the string literal right below the field's annotated assignment."""
    tree = _module_tree(model.__module__)
    found = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == model.__name__]
    if len(found) != 1:
        raise LookupError(f"{model.__module__}.{model.__name__}: expected one class definition, found {len(found)}")
    body = found[0].body
    docs = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _models() -> dict[str, type[ConfigModel]]:
    """Every config model by class name (the name pydantic gives its schema definition)."""
    found: dict[str, type[ConfigModel]] = {}
    pending = list(ConfigModel.__subclasses__())
    while pending:
        model = pending.pop()
        if model.__name__ in found and found[model.__name__] is not model:
            raise LookupError(f"two config models are named {model.__name__}; rename one")
        found[model.__name__] = model
        pending += model.__subclasses__()
    return found


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def _prose(text: str) -> str:
    """A docstring as editors show it: its paragraphs, each on one line."""
    return "\n\n".join(_paragraphs(text))


# ---- the schema of Pulumi.<stack>.yaml -------------------------------------------------------------------------
def _clean(node: Any) -> Any:
    """Drop pydantic's titles (the field name again) and defaults that say nothing (null, a whole model's
    defaults, which each of its own fields shows)."""
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned = {key: _clean(value) for key, value in node.items() if key != "title"}
    if isinstance(cleaned.get("description"), str):
        cleaned["description"] = _prose(cleaned["description"])
    refers = "$ref" in node or any("$ref" in branch for branch in node.get("anyOf", ()))
    if "default" in cleaned and (cleaned["default"] is None or (refers and isinstance(cleaned["default"], dict))):
        del cleaned["default"]
    if "properties" in node:  # a property named "title" or "default" is not a keyword
        cleaned["properties"] = {name: _clean(value) for name, value in node["properties"].items()}
    return cleaned


def _describe(definitions: dict[str, Any], models: dict[str, type[ConfigModel]]) -> None:
    """Each definition's properties take their field's docstring; its own description is the class docstring."""
    for name, definition in definitions.items():
        model = models.get(name)
        if model is None:  # not a config model (an enum): described by pydantic or not at all
            continue
        docs = field_docs(model)
        for field_name, field in model.model_fields.items():
            alias = field.alias or field_name
            if alias in definition.get("properties", {}) and field_name in docs:
                definition["properties"][alias]["description"] = _prose(docs[field_name])


_CLI_TEXT: dict[str, dict[str, Any]] = {
    "boolean": {"type": "string", "enum": ["true", "false"]},
    "integer": {"type": "string", "pattern": "^[+-]?[0-9]+$"},
    "number": {"type": "string", "pattern": "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"},
}
"""A top-level scalar as the Pulumi CLI writes it: `pulumi config set` stores top-level values as strings, and any
save of the file turns an existing YAML `true` or `3` into `"true"` or `"3"` (pulumi/pulumi
sdk/go/common/resource/config/object.go MarshalString: a scalar becomes text, not an object). The CLI's own type
check of declared keys takes these strings (sdk/go/common/workspace/project.go ValidateConfigValue: "true"/"false"
for a boolean, what strconv.Atoi parses for an integer), and so does the program (pydantic, not strict)."""


def _as_the_cli_writes(entry: dict[str, Any]) -> dict[str, Any]:
    """A top-level key's schema that also takes its scalar value as the CLI's text (`tpu-stack:throwaway: "true"`);
    bounds stay on the typed form, the program checks the text's value."""
    kind = entry.get("type")
    if kind not in _CLI_TEXT:
        return entry
    shared = {key: value for key, value in entry.items() if key in ("default", "description")}
    typed = {key: value for key, value in entry.items() if key not in shared}
    return {**shared, "anyOf": [typed, _CLI_TEXT[kind]]}


def stack_schema() -> dict[str, Any]:
    """JSON Schema of a stack file of this project; draft-07, as yaml-language-server reads 2019-09 and 2020-12
    only since its release 1.20. Top-level scalars also as the CLI's text (`_CLI_TEXT`)."""
    schema = _model_schema()
    config = schema["properties"]["config"]
    config["properties"] = {key: _as_the_cli_writes(entry) for key, entry in config["properties"].items()}
    return schema


def _model_schema() -> dict[str, Any]:
    """The stack file schema as the models declare it (the README's tables and Pulumi.yaml's types read this)."""
    generated = StackConfig.model_json_schema(by_alias=True, ref_template=f"#/{_DEFS}/{{model}}")
    definitions = _clean(generated.pop("$defs"))
    _describe(definitions, _models())
    top = _clean(generated["properties"])
    docs = field_docs(StackConfig)
    config: dict[str, Any] = {}
    keys = {**GCP_KEYS, **{f"{PROJECT}:{name}": field for name, field in STACK_KEYS.items()}}
    for key, field in keys.items():
        entry = top[StackConfig.model_fields[field].alias or field]
        config[key] = {**entry, "description": _prose(docs[field])} if field in docs else entry
    others = sorted(n for n in NAMESPACES if n != PROJECT)
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": f"Pulumi.<stack>.yaml of the {PROJECT} project",
        "description": (
            f"A stack's settings: its secrets provider and its config. Generated from the {PROJECT} config "
            "models (components/config/) by `make config-docs`; the program checks values further before anything "
            "is registered."
        ),
        "type": "object",
        "properties": {
            "secretsprovider": {
                "type": "string",
                "description": "Where the stack's secrets are encrypted, e.g. gcpkms://projects/<project>/...",
            },
            "encryptedkey": {
                "type": "string",
                "description": "The stack's data key, encrypted by the secrets provider (written by pulumi).",
            },
            "encryptionsalt": {
                "type": "string",
                "description": "Salt of the passphrase secrets provider (written by pulumi).",
            },
            "environment": {
                "description": "Pulumi ESC environments whose values this stack imports, or an inline definition.",
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "object"}],
            },
            "config": {
                "type": "object",
                "description": (
                    f"Config keys, each <namespace>:<name>: this project's ({PROJECT}:) and the providers' and "
                    f"Pulumi's ({', '.join(n + ':' for n in others)}); a key under any other namespace, or a "
                    f"{PROJECT} key the program does not read, is a mistake."
                ),
                "properties": config,
                "patternProperties": {
                    f"^({'|'.join(others)}):[^:]+$": {
                        "description": (
                            "A key of a provider or of Pulumi itself; any value, also an encrypted one "
                            "({secure: <ciphertext>}, from `pulumi config set --secret`)."
                        ),
                    }
                },
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
        # The project and region may come from an ESC environment instead of the file.
        "if": {"not": {"required": ["environment"]}},
        "then": {"required": ["config"], "properties": {"config": {"required": list(GCP_KEYS)}}},
        _DEFS: definitions,
    }


def schema_text() -> str:
    return json.dumps(stack_schema(), indent=2, ensure_ascii=False) + "\n"


# ---- reading the schema back: one row per field ----------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    path: str
    meaning: str
    default: str


def _target(node: dict[str, Any], definitions: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(definition name or None, the schema) of a property, past `$ref` and an optional's `anyOf [X, null]`."""
    branches = [b for b in node.get("anyOf", ()) if b.get("type") != "null"]
    if len(branches) == 1:
        node = {**node, **branches[0]}
        node.pop("anyOf")
    ref = node.get("$ref")
    if ref is None:
        return None, node
    name = ref.rsplit("/", 1)[-1]
    return name, definitions[name]


def _summary(text: str) -> str:
    """The first paragraph of a docstring, on one line."""
    paragraphs = _paragraphs(text)
    return paragraphs[0] if paragraphs else ""


def _split_default(text: str) -> tuple[str, str | None]:
    """(meaning, the `Default: ...` paragraph's text or None)."""
    paragraphs = _paragraphs(text)
    if paragraphs and paragraphs[-1].startswith(DEFAULT_PREFIX):
        return " ".join(paragraphs[:-1]), paragraphs[-1].removeprefix(DEFAULT_PREFIX)
    return " ".join(paragraphs), None


def _constraints(node: dict[str, Any]) -> str:
    """What the schema itself allows, said once for every field: the choices of a Literal, numeric bounds."""
    notes = []
    if "enum" in node:
        notes.append("One of " + ", ".join(f"`{value}`" for value in node["enum"]) + ".")
    if "minimum" in node:
        notes.append(f"At least {node['minimum']}.")
    if "exclusiveMinimum" in node:
        notes.append(f"More than {node['exclusiveMinimum']}.")
    if "maximum" in node:
        notes.append(f"At most {node['maximum']}.")
    if "exclusiveMaximum" in node:
        notes.append(f"Less than {node['exclusiveMaximum']}.")
    return " ".join(notes)


def _flow(value: Any) -> str:
    """A default as YAML flow text."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return value if value and re.fullmatch(r"[\w./@:%+-]+", value) else json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _default(node: dict[str, Any], item: dict[str, Any] | None, required: bool, stated: str | None) -> str:
    if stated is not None:
        return stated
    if required:
        return "required"
    if "default" not in node:
        return ""
    value = node["default"]
    if item is not None and isinstance(value, list):  # a list of models: each entry without its defaults
        defaults = {name: prop.get("default") for name, prop in item.get("properties", {}).items()}
        value = [{k: v for k, v in entry.items() if v is not None and v != defaults.get(k)} for entry in value]
    return f"`{_flow(value)}`"


def rows(model: dict[str, Any], definitions: dict[str, Any], prefix: str = "") -> Iterator[Row]:
    """Every field of `model` and, depth first, of the models inside it; a model met twice in one table is
    expanded the first time and named the second."""
    yield from _rows(model, definitions, prefix, {})


def _rows(model: dict[str, Any], definitions: dict[str, Any], prefix: str, seen: dict[str, str]) -> Iterator[Row]:
    required = set(model.get("required", ()))
    for name, node in model.get("properties", {}).items():
        yield from _field_rows(f"{prefix}{name}", node, definitions, name in required, seen)


def _field_rows(
    path: str, node: dict[str, Any], definitions: dict[str, Any], required: bool, seen: dict[str, str]
) -> Iterator[Row]:
    model_name, target = _target(node, definitions)
    suffix, inner = "", None
    if model_name is None and target.get("type") == "array":
        inner, _ = _target(target.get("items", {}), definitions)
        suffix = "[]"
    elif model_name is None and isinstance(target.get("additionalProperties"), dict):
        inner, _ = _target(target["additionalProperties"], definitions)
        suffix = ".<name>"
    nested = model_name or inner
    meaning, stated = _split_default(_description(node, definitions))
    meaning = " ".join(part for part in (meaning, _constraints(target)) if part)
    item = definitions[inner] if inner else None
    shown = f"{path}[]" if suffix == "[]" and nested else path
    if nested and nested in seen:
        meaning += f" Fields as `{seen[nested]}`."
    yield Row(shown, meaning, _default(target, item, required, stated))
    if nested and nested not in seen:
        seen[nested] = shown if suffix != ".<name>" else f"{path}.<name>"
        below = f"{path}{suffix}." if suffix else f"{path}."
        yield from _rows(definitions[nested], definitions, below, seen)


def _description(node: dict[str, Any], definitions: dict[str, Any]) -> str:
    """A field's docstring, else the first paragraph of its model's (or its items' model's) docstring."""
    if node.get("description"):
        return str(node["description"])
    model_name, target = _target(node, definitions)
    for inner in (target.get("items"), target.get("additionalProperties")):
        if model_name is None and isinstance(inner, dict):
            model_name = _target(inner, definitions)[0]
    return _summary(definitions[model_name].get("description", "")) if model_name else ""


# ---- the README tables ----------------------------------------------------------------------------------------
def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(header: str, table_rows: list[Row]) -> list[str]:
    lines = [f"| {header} | meaning | default |", "|---|---|---|"]
    lines += [f"| `{r.path}` | {_cell(r.meaning)} | {_cell(r.default)} |" for r in table_rows]
    return lines


def readme_block() -> str:
    """The README's config reference: every key in one table, then a table of fields per structured key."""
    schema = _model_schema()
    definitions = schema[_DEFS]
    config = schema["properties"]["config"]
    required = set(schema["then"]["properties"]["config"]["required"])
    top: list[Row] = []
    sections: list[str] = []
    for key, node in config["properties"].items():
        row = next(_field_rows(key, node, definitions, key in required, {}))
        model_name, target = _target(node, definitions)
        item = _target(target["items"], definitions)[0] if target.get("type") == "array" else None
        nested = model_name or item
        if nested is None:
            top.append(row)
            continue
        top.append(Row(key, f"{row.meaning} Fields: [below](#{_anchor(row.path)}).", row.default))
        intro = " ".join(_paragraphs(definitions[nested].get("description", "")))
        sections += ["", f"### `{row.path}`", ""]
        if intro:
            sections += [intro, ""]
        sections += _table("field", list(rows(definitions[nested], definitions)))
    lines = [README_BEGIN, "", *_table("key", top), *sections, "", README_END]
    return "\n".join(lines)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation but '-' and '_' dropped, spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


# ---- Pulumi.yaml ----------------------------------------------------------------------------------------------
def _pulumi_type(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any] | None:
    """The project file's declaration of a key's type (string, integer, boolean, array with items, object)."""
    model_name, target = _target(node, definitions)
    if model_name is not None:
        return {"type": "object"}
    kind = target.get("type")
    if kind == "array":
        items = _pulumi_type(target.get("items", {}), definitions)
        return {"type": "array", "items": items} if items else None
    if kind in ("string", "integer", "boolean", "object"):
        return {"type": kind}
    return None


def project_config() -> dict[str, Any]:
    """Pulumi.yaml's `config:` and `template:` sections.

    The engine treats a key `config:` declares without a default as required, so only keys with a default are
    declared there, with their type (object and array<object> defaults are empty: the model fills them in).
    Keys without one (gcp:project, gcp:region, tpu-stack:saxml) are described under `template.config`, which
    `pulumi new` prompts for.
    """
    schema = _model_schema()
    definitions = schema[_DEFS]
    declared: dict[str, Any] = {}
    prompted: dict[str, Any] = {}
    for key, node in schema["properties"]["config"]["properties"].items():
        model_name, target = _target(node, definitions)
        summary = _summary(_split_default(_description(node, definitions))[0])
        if model_name is not None:
            fields = ", ".join(definitions[model_name].get("properties", {}))
            summary = f"{summary} Fields: {fields}."
        elif target.get("type") == "array" and "$ref" in target.get("items", {}):
            fields = ", ".join(_target(target["items"], definitions)[1].get("properties", {}))
            summary = f"{summary} Each: {fields}."
        typed = _pulumi_type(node, definitions)
        namespace, _, name = key.partition(":")
        field = StackConfig.model_fields[STACK_KEYS[name]] if namespace == PROJECT else None
        if field is not None and typed is not None and not field.is_required() and field.default is not None:
            # A model's default is left out of the schema (its fields show theirs): here it is the empty object.
            declared[name] = {**typed, "default": node.get("default", {}), "description": summary}
        else:
            prompted[key] = {"description": summary}
    return {"config": declared, "template": {"description": TEMPLATE_DESCRIPTION, "config": prompted}}


def project_block() -> str:
    body = yaml.safe_dump(project_config(), sort_keys=False, width=100_000, allow_unicode=True)
    return f"{YAML_BEGIN}\n{body}{YAML_END}"


# ---- writing and checking -------------------------------------------------------------------------------------
def _splice(text: str, begin: str, end: str, block: str, where: Path) -> str:
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"{where.name}: the markers {begin!r} ... {end!r} are missing; put them back around the "
                         "generated config reference")  # fmt: skip
    return text[:start] + block + text[stop + len(end) :]


def generated() -> dict[Path, str]:
    """Each generated file's full text as it should be committed."""
    return {
        SCHEMA_FILE: schema_text(),
        README: _splice(README.read_text(), README_BEGIN, README_END, readme_block(), README),
        PROJECT_FILE: _splice(PROJECT_FILE.read_text(), YAML_BEGIN, YAML_END, project_block(), PROJECT_FILE),
    }


def drifted() -> list[Path]:
    return [path for path, text in generated().items() if not path.exists() or path.read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offline.configdocs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the generated files")
    args = parser.parse_args(argv)
    if args.write:
        for path, text in generated().items():
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
                print(f"wrote {path.relative_to(REPO)}")
        return 0
    stale = drifted()
    for path in stale:
        print(f"{path.relative_to(REPO)}: out of date with components/config/; run `make config-docs`")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
