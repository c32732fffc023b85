"""Check Kubernetes objects offline the way the API server would admit them on create.

A wrong field in a Kueue or JobSet object is otherwise found only by `pulumi up` against a live cluster.
Custom resources (`kueue.x-k8s.io`, `jobset.x-k8s.io`, `leaderworkerset.x-k8s.io`, `monitoring.googleapis.com`) are
checked against the upstream CRDs vendored in `vendor/crds` (provenance in vendor/README.md) for the version named
in `apiVersion`: schema defaults applied first (as the API server does), unknown fields rejected, RE2 patterns,
list-map/set uniqueness, then the CRDs' `x-kubernetes-validations` CEL rules with `cel-python`. Rules that use
`oldSelf` only guard updates: `validate_update` runs them on an old and a new object. Core kinds go to
`kubernetes_validate` in strict mode.

`kubernetes_version` picks the core schemas: the newest schema set shipped by `kubernetes_validate` that is
not newer than the asked minor (1.33 -> 1.33.0; anything newer than the last shipped set -> that set). The
CRD schemas do not depend on it.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import celpy
import jsonschema
import kubernetes_validate
import kubernetes_validate.utils
import re2
import yaml
from celpy import celtypes
from jsonschema.exceptions import ValidationError
from packaging.version import Version

from offline.markers import SECRET, UNKNOWN
from offline.vendor import CRD_DIR

CRD_GROUPS = frozenset({"kueue.x-k8s.io", "jobset.x-k8s.io", "leaderworkerset.x-k8s.io", "monitoring.googleapis.com"})
# Groups whose kinds are compiled into the API server; only these may go to kubernetes_validate, whose file
# lookup keeps just the first label of a group (it would take "apps.example.com/v1" for "apps/v1").
_BUILTIN_GROUPS = frozenset({"", "apps", "batch", "autoscaling", "policy"})

# Function names celpy resolves itself (macros are handled by its evaluator, not its function table).
_CEL_MACROS = frozenset({"has", "dyn", "all", "exists", "exists_one", "map", "filter", "reduce", "min"})
_CEL_FUNCTIONS = frozenset(celpy.evaluation.base_functions) | _CEL_MACROS | {"isURL"}
_OLD_SELF = re.compile(r"\boldSelf\b")

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
# Kinds whose names the API server checks more strictly than a DNS-1123 subdomain.
_NAME_RULES = {"Namespace": "dns1123-label", "Service": "dns1035-label"}


@dataclass(frozen=True)
class UnsupportedRule:
    """A CRD rule this validator cannot evaluate; listed so a test pins the set instead of it passing quietly."""

    api_version: str
    kind: str
    path: str
    rule: str
    reason: str


@dataclass(frozen=True)
class CelRule:
    """One `x-kubernetes-validations` entry of a CRD version, with where it sits in the schema."""

    path: str
    rule: str
    message: str
    update_only: bool


@dataclass
class CrdVersion:
    """One served version of one CRD: its schema made strict, and a validator built on first use."""

    group: str
    version: str
    kind: str
    scope: str
    schema: dict[str, Any]
    rules: list[CelRule] = field(default_factory=list)
    _validator: Any = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def validator(self) -> Any:
        if self._validator is None:
            self._validator = _Draft7Re2(self.schema)
        return self._validator


@dataclass(frozen=True)
class CrdSet:
    """Every CRD version found in one folder, keyed by (apiVersion, kind)."""

    root: Path
    versions: dict[tuple[str, str], CrdVersion]
    unsupported: frozenset[UnsupportedRule]


# ---------------------------------------------------------------------------------------------------------------
# public API


def validate_object(obj: Mapping[str, Any], *, kubernetes_version: str = "1.33") -> list[str]:
    """Errors the API server would give creating `obj`, each as "Kind/name: json.path: message"; [] if none."""
    data = _plain(obj)
    if not isinstance(data, dict):
        return [f"<not an object>: expected a mapping, got {type(obj).__name__}"]
    # A field the plan holds as a secret (a Secret's data) is encrypted in the engine: opaque, nothing to check; so is
    # a secret the engine cannot know yet (made from a new resource's output: a worker's token), which it shows unknown.
    data = {key: value for key, value in data.items() if value not in (SECRET, UNKNOWN)}
    api_version, kind = data.get("apiVersion"), data.get("kind")
    who = f"{kind if isinstance(kind, str) and kind else '<no kind>'}/{_name_of(data)}"
    if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
        return [f"{who}: apiVersion and kind are required"]
    errors = [f"{who}: {e}" for e in _metadata_errors(kind, data.get("metadata"))]
    group = api_version.rpartition("/")[0]
    if group in CRD_GROUPS:
        crd = load_crds().versions.get((api_version, kind))
        if crd is None:
            return [*errors, f"{who}: no schema for {api_version}/{kind}"]
        errors += [f"{who}: {e}" for e in _custom_resource_errors(crd, data)]
    elif group in _BUILTIN_GROUPS or group.endswith(".k8s.io"):
        errors += [f"{who}: {e}" for e in _core_errors(data, kubernetes_version)]
    else:
        errors.append(f"{who}: no schema for {api_version}/{kind}")
    return errors


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Errors the API server would give updating custom resource `old` to `new` in place: the CRD's transition
    rules (those that read `oldSelf`), evaluated where the schema correlates the old and the new value (object
    properties, map values, items of `x-kubernetes-list-type: map` lists by their keys), as the API server
    does. [] for kinds without a vendored CRD (their update rules live in the API server or a webhook)."""
    old_data, new_data = _plain(old), _plain(new)
    api_version, kind = new_data.get("apiVersion"), new_data.get("kind")
    crd = load_crds().versions.get((api_version, kind))
    if crd is None or (old_data.get("apiVersion"), old_data.get("kind")) != (api_version, kind):
        return []
    old_data, new_data = copy.deepcopy(old_data), copy.deepcopy(new_data)
    _apply_defaults(crd.schema, old_data)
    _apply_defaults(crd.schema, new_data)
    return [f"{kind}/{_name_of(new_data)}: {e}" for e in _transition_errors(crd.schema, old_data, new_data, "")]


def validate_all(objs: Iterable[Mapping[str, Any]], *, kubernetes_version: str = "1.33") -> list[str]:
    """All errors of all objects, in order."""
    return [e for obj in objs for e in validate_object(obj, kubernetes_version=kubernetes_version)]


def known_custom_kinds() -> frozenset[tuple[str, str]]:
    """(apiVersion, kind) of every custom resource version the vendored CRDs define."""
    return frozenset(load_crds().versions)


def unsupported_rules() -> frozenset[UnsupportedRule]:
    """CRD rules that are neither evaluated nor update-only (parse failures, functions celpy lacks)."""
    return load_crds().unsupported


def core_schema_version(kubernetes_version: str) -> str:
    """The schema set of kubernetes_validate used for a Kubernetes minor: newest shipped, not newer than asked."""
    match = re.match(r"v?(\d+)\.(\d+)", kubernetes_version)
    if not match:
        raise ValueError(f"not a Kubernetes version: {kubernetes_version!r}")
    wanted = (int(match[1]), int(match[2]))
    shipped = sorted(Version(v) for v in kubernetes_validate.utils.all_versions())
    fitting = [v for v in shipped if (v.major, v.minor) <= wanted]
    if not fitting:
        raise ValueError(f"kubernetes_validate ships no schemas as old as {kubernetes_version} (oldest {shipped[0]})")
    return str(fitting[-1])


def load_crds(root: Path | None = None) -> CrdSet:
    """The CRDs of `root` (default vendor/crds), read once per folder."""
    return _load_crds((root or CRD_DIR).resolve())


def compile_rule(rule: str) -> Any:
    """A celpy program for a CEL rule, or a string saying why it cannot run here (cached per rule text)."""
    return _compile_rule(rule)


# ---------------------------------------------------------------------------------------------------------------
# CRD loading


@cache
def _load_crds(root: Path) -> CrdSet:
    if not root.is_dir():
        raise FileNotFoundError(f"CRD folder {root} not found")
    versions: dict[tuple[str, str], CrdVersion] = {}
    unsupported: set[UnsupportedRule] = set()
    for path in sorted(root.glob("*/*.yaml")):
        with path.open() as f:
            doc = yaml.load(f, Loader=yaml.CSafeLoader)
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc["spec"]
        for served in spec["versions"]:
            crd = CrdVersion(
                group=spec["group"],
                version=served["name"],
                kind=spec["names"]["kind"],
                scope=spec["scope"],
                schema=_strict(copy.deepcopy(served["schema"]["openAPIV3Schema"])),
            )
            crd.rules = list(_collect_rules(crd.schema, ""))
            for r in crd.rules:
                program = None if r.update_only else _compile_rule(r.rule)
                if isinstance(program, str):
                    unsupported.add(UnsupportedRule(crd.api_version, crd.kind, r.path, r.rule, program))
            versions[(crd.api_version, crd.kind)] = crd
    return CrdSet(root=root, versions=versions, unsupported=frozenset(unsupported))


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Reject unknown fields: the CRDs leave that to the server's pruning, which would hide typos and old fields."""
    open_ended = "additionalProperties" in schema or schema.get("x-kubernetes-preserve-unknown-fields")
    if "properties" in schema and not open_ended:
        schema["additionalProperties"] = False
    if schema.get("x-kubernetes-int-or-string") and not {"type", "anyOf"} & schema.keys():
        schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    for child in _children(schema):
        _strict(child)
    return schema


def _children(schema: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    yield from (schema.get("properties") or {}).values()
    for key in ("items", "additionalProperties", "not"):
        if isinstance(schema.get(key), dict):
            yield schema[key]
    for key in ("anyOf", "allOf", "oneOf"):
        yield from schema.get(key) or ()


def _collect_rules(schema: Mapping[str, Any], path: str) -> Iterator[CelRule]:
    for entry in schema.get("x-kubernetes-validations") or ():
        text = entry["rule"]
        yield CelRule(path or "(root)", text, entry.get("message") or text, bool(_OLD_SELF.search(text)))
    for key, sub in (schema.get("properties") or {}).items():
        yield from _collect_rules(sub, f"{path}.{key}" if path else key)
    if isinstance(schema.get("items"), dict):
        yield from _collect_rules(schema["items"], f"{path}[*]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _collect_rules(schema["additionalProperties"], f"{path}[*]")


# ---------------------------------------------------------------------------------------------------------------
# schema validation (custom resources)


@cache
def _re2(pattern: str) -> Any:
    return re2.compile(pattern)


def _re2_pattern(validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """CRD patterns are Go (RE2) regexps; Python's `re` rejects some of them, e.g. `^(?i)...`."""
    if validator.is_type(instance, "string") and not _re2(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_Draft7Re2 = jsonschema.validators.extend(jsonschema.Draft7Validator, {"pattern": _re2_pattern})


def _custom_resource_errors(crd: CrdVersion, obj: dict[str, Any]) -> list[str]:
    """`obj` is the caller's private copy: defaults are filled into it."""
    _apply_defaults(crd.schema, obj)
    schema_errors = sorted(crd.validator().iter_errors(obj), key=lambda e: _path(e.absolute_path))
    errors = [line for e in schema_errors for line in _describe(e)]
    errors += _list_errors(crd.schema, obj, "")
    # The API server runs rules unless the object has type errors; rules would only trip over the wrong types.
    if not any(_is_type_error(e) for e in schema_errors):
        errors += _rule_errors(crd.schema, obj, "")
    return errors


def _apply_defaults(schema: Mapping[str, Any], value: Any) -> None:
    """Structural defaulting as the API server does it before validating: nulls pruned, then defaults filled."""
    if isinstance(value, dict):
        props = schema.get("properties")
        if props:
            for key, sub in props.items():
                if key in value and value[key] is None and not sub.get("nullable"):
                    del value[key]
                if key not in value and "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
                if key in value:
                    _apply_defaults(sub, value[key])
        elif isinstance(schema.get("additionalProperties"), dict):
            for item in value.values():
                _apply_defaults(schema["additionalProperties"], item)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _apply_defaults(schema["items"], item)


def _describe(error: ValidationError) -> list[str]:
    where = _path(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties") or {}
        extra = sorted(k for k in error.instance if k not in known)
        return [f"{_join(where, k)}: unknown field" for k in extra]
    if error.validator == "anyOf" and error.context:
        # int-or-string: say what the string form is missing rather than only "not valid under any".
        inner = [e.message for e in error.context if e.validator != "type"]
        if inner:
            return [f"{where}: {error.message} ({'; '.join(inner)})"]
    return [f"{where}: {error.message}"]


def _is_type_error(error: ValidationError) -> bool:
    if error.validator == "type":
        return True
    return error.validator == "anyOf" and all(e.validator == "type" for e in error.context)


def _list_errors(schema: Mapping[str, Any], value: Any, where: str) -> list[str]:
    """`x-kubernetes-list-type` set/map lists must not repeat an item or key; JSON Schema cannot say that."""
    errors: list[str] = []
    if isinstance(value, list):
        list_type = schema.get("x-kubernetes-list-type")
        if list_type in ("set", "map"):
            keys = schema.get("x-kubernetes-list-map-keys") or []
            seen: set[str] = set()
            for i, item in enumerate(value):
                if list_type == "map" and isinstance(item, dict):
                    ident = json.dumps([item.get(k) for k in keys])
                    what = ", ".join(f"{k}={item.get(k)!r}" for k in keys)
                else:
                    ident = json.dumps(item, sort_keys=True)
                    what = repr(item)
                if ident in seen:
                    errors.append(f"{where}[{i}]: duplicate entry {what}")
                seen.add(ident)
    for sub, child, child_where in _pairs(schema, value, where):
        errors += _list_errors(sub, child, child_where)
    return errors


def _pairs(schema: Mapping[str, Any], value: Any, where: str) -> Iterator[tuple[Mapping[str, Any], Any, str]]:
    """(subschema, value, path) for each child of `value` that the schema describes."""
    if isinstance(value, dict):
        props = schema.get("properties")
        if props:
            for key, child in value.items():
                if key in props:
                    yield props[key], child, _join(where, key)
        elif isinstance(schema.get("additionalProperties"), dict):
            for key, child in value.items():
                yield schema["additionalProperties"], child, f"{where}[{key}]"
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, child in enumerate(value):
            yield schema["items"], child, f"{where}[{i}]"


# ---------------------------------------------------------------------------------------------------------------
# CEL rules


@cache
def _cel_env() -> celpy.Environment:
    return celpy.Environment()


def _is_url(value: celtypes.Value) -> celtypes.BoolType:
    """Kubernetes' CEL `isURL`: an absolute URI (scheme and host) or an absolute path."""
    text = str(value)
    parts = urlsplit(text)
    return celtypes.BoolType(bool(parts.scheme and parts.netloc) or text.startswith("/"))


@cache
def _compile_rule(rule: str) -> Any:
    try:
        ast = _cel_env().compile(rule)
    except celpy.CELParseError as exc:
        return f"does not parse: {str(exc).splitlines()[0]}"
    missing = sorted(
        {
            name
            for node in ast.iter_subtrees()
            if (name := _called_name(node)) is not None and name not in _CEL_FUNCTIONS
        }
    )
    if missing:
        return f"uses functions celpy lacks: {', '.join(missing)}"
    return _cel_env().program(ast, functions={"isURL": _is_url})


def _called_name(node: Any) -> str | None:
    """The function a call node names: `f(x)` and `.f(x)` carry it first, `x.f(y)` second."""
    if node.data in ("ident_arg", "dot_ident_arg"):
        return str(node.children[0])
    if node.data == "member_dot_arg":
        return str(node.children[1])
    return None


def _rule_errors(schema: Mapping[str, Any], value: Any, where: str) -> list[str]:
    if value is None:
        return []
    errors: list[str] = []
    rules = schema.get("x-kubernetes-validations") or ()
    cel_self = celpy.json_to_cel(value) if rules else None
    for entry in rules:
        text = entry["rule"]
        if _OLD_SELF.search(text):
            continue  # update-only: there is no old object on create
        program = _compile_rule(text)
        if isinstance(program, str):
            continue  # listed by unsupported_rules()
        message = entry.get("message") or f"failed rule: {text}"
        at = where + entry.get("fieldPath", "") or "(root)"
        try:
            result = program.evaluate({"self": cel_self})
        except Exception as exc:  # any evaluation failure rejects the object, as on the server
            result = exc
        if isinstance(result, celtypes.BoolType):
            if not result:
                errors.append(f"{at}: {message}")
        else:
            errors.append(f"{at}: {message} (rule could not be evaluated: {_short(result)})")
    for sub, child, child_where in _pairs(schema, value, where):
        errors += _rule_errors(sub, child, child_where)
    return errors


def _transition_errors(schema: Mapping[str, Any], old: Any, new: Any, where: str) -> list[str]:
    if old is None or new is None:
        return []  # a value set or removed has no old self to compare: transition rules do not run
    errors: list[str] = []
    for entry in schema.get("x-kubernetes-validations") or ():
        text = entry["rule"]
        if not _OLD_SELF.search(text):
            continue
        program = _compile_rule(text)
        if isinstance(program, str):
            continue  # listed by unsupported_rules()
        try:
            result = program.evaluate({"self": celpy.json_to_cel(new), "oldSelf": celpy.json_to_cel(old)})
        except Exception as exc:  # an evaluation failure refuses the update, as on the server
            result = exc
        if not (isinstance(result, celtypes.BoolType) and result):
            message = entry.get("message") or f"failed rule: {text}"
            errors.append(f"{where + entry.get('fieldPath', '') or '(root)'}: {message}")
    for sub, old_child, new_child, child_where in _correlated(schema, old, new, where):
        errors += _transition_errors(sub, old_child, new_child, child_where)
    return errors


def _correlated(
    schema: Mapping[str, Any], old: Any, new: Any, where: str
) -> Iterator[tuple[Mapping[str, Any], Any, Any, str]]:
    """(subschema, old value, new value, path) for the children the API server correlates between versions."""
    if isinstance(old, dict) and isinstance(new, dict):
        props = schema.get("properties")
        if props:
            for key, sub in props.items():
                if key in old and key in new:
                    yield sub, old[key], new[key], _join(where, key)
        elif isinstance(schema.get("additionalProperties"), dict):
            for key in old.keys() & new.keys():
                yield schema["additionalProperties"], old[key], new[key], f"{where}[{key}]"
    elif isinstance(old, list) and isinstance(new, list) and isinstance(schema.get("items"), dict):
        if schema.get("x-kubernetes-list-type") != "map":
            return  # atomic and set lists: items have no identity across versions
        keys = schema.get("x-kubernetes-list-map-keys") or []
        before = {json.dumps([item.get(k) for k in keys]): item for item in old if isinstance(item, dict)}
        for i, item in enumerate(new):
            ident = json.dumps([item.get(k) for k in keys]) if isinstance(item, dict) else None
            if ident in before:
                yield schema["items"], before[ident], item, f"{where}[{i}]"


def _short(result: object) -> str:
    if isinstance(result, celpy.CELEvalError) and result.args:
        return str(result.args[0])
    return f"{type(result).__name__}: {result}"


# ---------------------------------------------------------------------------------------------------------------
# core kinds


def _core_errors(data: dict[str, Any], kubernetes_version: str) -> list[str]:
    try:
        kubernetes_validate.validate(data, core_schema_version(kubernetes_version), strict=True)
    except kubernetes_validate.ValidationError as exc:
        return _describe(exc)
    except kubernetes_validate.SchemaNotFoundError:
        return [f"no schema for {data['apiVersion']}/{data['kind']}"]
    return []


# ---------------------------------------------------------------------------------------------------------------
# metadata


def _metadata_errors(kind: str, metadata: Any) -> list[str]:
    """Name rules the API server applies to every object; CRD schemas leave `metadata` as a bare object."""
    if not isinstance(metadata, dict):
        return ["metadata: required"]
    errors: list[str] = []
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        errors.append("metadata.name: required")
    else:
        rule = _NAME_RULES.get(kind, "dns1123-subdomain")
        if not _name_ok(name, rule):
            errors.append(f"metadata.name: {name!r} is not a valid {rule} name")
    namespace = metadata.get("namespace")
    if namespace is not None and not (isinstance(namespace, str) and _name_ok(namespace, "dns1123-label")):
        errors.append(f"metadata.namespace: {namespace!r} is not a valid dns1123-label name")
    for section in ("labels", "annotations"):
        entries = metadata.get(section)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            errors.append(f"metadata.{section}: must be a map of strings")
            continue
        for key, val in entries.items():
            if not _qualified_name_ok(key):
                errors.append(f"metadata.{section}[{key}]: invalid key")
            if not isinstance(val, str):
                errors.append(f"metadata.{section}[{key}]: value must be a string")
            elif section == "labels" and val and not (len(val) <= 63 and _QUALIFIED_NAME.fullmatch(val)):
                errors.append(f"metadata.labels[{key}]: invalid value {val!r}")
    return errors


def _name_ok(name: str, rule: str) -> bool:
    if rule == "dns1123-label":
        return len(name) <= 63 and bool(_DNS1123_LABEL.fullmatch(name))
    if rule == "dns1035-label":
        return len(name) <= 63 and bool(_DNS1035_LABEL.fullmatch(name))
    return len(name) <= 253 and bool(_DNS1123_SUBDOMAIN.fullmatch(name))


def _qualified_name_ok(key: object) -> bool:
    if not isinstance(key, str):
        return False
    prefix, _, name = key.rpartition("/")
    if prefix and not _name_ok(prefix, "dns1123-subdomain"):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.fullmatch(name))


# ---------------------------------------------------------------------------------------------------------------
# small helpers


def _plain(value: Any) -> Any:
    """Plain dicts/lists; whole floats become ints, since Pulumi's wire format sends every number as a float."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _name_of(data: Mapping[str, Any]) -> str:
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) and name else "<no name>"


def _path(parts: Iterable[Any]) -> str:
    where = ""
    for part in parts:
        where = f"{where}[{part}]" if isinstance(part, int) else _join(where, str(part))
    return where or "(root)"


def _join(where: str, key: str) -> str:
    return key if where in ("", "(root)") else f"{where}.{key}"


# ---------------------------------------------------------------------------------------------------------------
# Cloud Monitoring dashboards

DASHBOARD_SCHEMA = Path(__file__).resolve().parent / "schemas" / "dashboard.schema.json"
"""The dashboard fields the stack writes, as the Monitoring API defines them; anything else is refused."""
MOSAIC_COLUMNS = 48


def validate_dashboard(dashboard_json: str) -> list[str]:
    """Errors of a `gcp.monitoring.Dashboard`'s dashboardJson: schema, then tiles inside the grid, not overlapping."""
    try:
        data = json.loads(dashboard_json)
    except json.JSONDecodeError as error:
        return [f"(root): not JSON: {error.msg}"]
    schema = json.loads(DASHBOARD_SCHEMA.read_text())
    errors = [f"{_path(e.absolute_path)}: {e.message}" for e in jsonschema.Draft7Validator(schema).iter_errors(data)]
    if errors:
        return errors
    taken: dict[tuple[int, int], int] = {}
    for index, tile in enumerate(data["mosaicLayout"]["tiles"]):
        x_pos, y_pos = tile.get("xPos", 0), tile.get("yPos", 0)  # the API leaves out zero positions
        if x_pos + tile["width"] > MOSAIC_COLUMNS:
            errors.append(f"mosaicLayout.tiles[{index}]: ends at column {x_pos + tile['width']} of 48")
        for x in range(x_pos, x_pos + tile["width"]):
            for y in range(y_pos, y_pos + tile["height"]):
                if (x, y) in taken:
                    errors.append(f"mosaicLayout.tiles[{index}]: overlaps tiles[{taken[(x, y)]}]")
                    break
                taken[(x, y)] = index
            else:
                continue
            break
    return errors
