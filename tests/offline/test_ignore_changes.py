"""ignoreChanges as the engine applies it before the policy pack sees a resource: each ignored path of the new inputs
takes the old state's value (pulumi/pulumi pkg/resource/deploy/step_generator.go processIgnoreChanges, and
sdk/go/common/resource/properties_path.go ParsePropertyPath and PropertyPath.reset, at 1b59498).

Every expectation is written by hand from those two functions.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from offline.ignore_changes import apply, parse_path


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("nodeConfig", ["nodeConfig"]),
        ("nodeConfig.workloadMetadataConfig.mode", ["nodeConfig", "workloadMetadataConfig", "mode"]),
        ("spec.containers[0].image", ["spec", "containers", 0, "image"]),
        ('metadata.labels["app.kubernetes.io/name"]', ["metadata", "labels", "app.kubernetes.io/name"]),
        ("items[*].name", ["items", "*", "name"]),
        ("a-b.c", ["a-b", "c"]),  # any run of characters up to '.' or '[' is a name
    ],
)
def test_paths_parse_as_the_engine_parses_them(text: str, parts: list[Any]) -> None:
    assert parse_path(text) == parts


@pytest.mark.parametrize("text", [".a", "a.", "a[x]", "a[0", 'a["b'])
def test_a_path_the_engine_cannot_parse_is_skipped(text: str) -> None:
    # processIgnoreChanges: `if err != nil { continue }` - the path changes nothing and is not reported.
    assert parse_path(text) is None
    new = {"a": [1], "b": 2}
    assert apply(new, {"a": [9], "b": 3}, [text]) == ({"a": [1], "b": 2}, [])


def test_a_nested_path_takes_the_old_value_and_leaves_its_siblings() -> None:
    new = {"nodeConfig": {"workloadMetadataConfig": {"mode": "GKE_METADATA"}, "machineType": "ct6e-standard-4t"}}
    old = {"nodeConfig": {"workloadMetadataConfig": {"mode": "GCE_METADATA"}, "machineType": "n2-standard-8"}}
    given = copy.deepcopy(new)
    found, invalid = apply(new, old, ["nodeConfig.workloadMetadataConfig"])
    assert found == {
        "nodeConfig": {"workloadMetadataConfig": {"mode": "GCE_METADATA"}, "machineType": "ct6e-standard-4t"}
    }
    assert invalid == []
    assert new == given  # the program's inputs are copied, not changed (inputs.Copy())


def test_a_leaf_the_old_state_lacks_is_removed() -> None:
    # reset, leaf key not in old: "we want to delete this from new" - an xpk pool reports no metadata mode.
    new = {"nodeConfig": {"workloadMetadataConfig": {"mode": "GKE_METADATA"}, "spot": False}}
    old = {"nodeConfig": {"spot": False}}
    assert apply(new, old, ["nodeConfig.workloadMetadataConfig"]) == ({"nodeConfig": {"spot": False}}, [])


def test_a_leaf_under_a_parent_the_old_state_lacks_is_removed_too() -> None:
    # Old lacks `maintenancePolicy` altogether: the walk goes on with a null old value, whose leaf does not exist.
    new = {"maintenancePolicy": {"dailyMaintenanceWindow": {"startTime": "03:00"}, "x": 1}}
    assert apply(new, {}, ["maintenancePolicy.dailyMaintenanceWindow"]) == ({"maintenancePolicy": {"x": 1}}, [])


def test_a_deeper_path_under_a_missing_old_parent_is_a_path_error_and_changes_nothing() -> None:
    # a.b.c with old {} : at `b` old is null and new an object -> false (one of the two is no object).
    new = {"a": {"b": {"c": 1}}}
    assert apply(new, {}, ["a.b.c"]) == ({"a": {"b": {"c": 1}}}, ["a.b.c"])


def test_a_path_the_program_does_not_set_takes_the_old_value() -> None:
    # Leaf present in old, parent an object in new: set. A top-level key absent from new is set as well.
    new: dict[str, Any] = {"nodeConfig": {}}
    old = {"nodeConfig": {"gvnic": {"enabled": True}}, "upgradeSettings": {"maxSurge": 0, "maxUnavailable": 1}}
    found, invalid = apply(new, old, ["nodeConfig.gvnic", "upgradeSettings"])
    assert found == old and invalid == []


def test_an_intermediate_key_only_the_old_state_has_is_a_path_error() -> None:
    # "Old has this key but new doesn't, but we still searching for the leaf item to set so this is a path error."
    new = {"name": "p"}
    found, invalid = apply(new, {"nodeConfig": {"gvnic": {"enabled": True}}}, ["nodeConfig.gvnic.enabled"])
    assert found == {"name": "p"} and invalid == ["nodeConfig.gvnic.enabled"]


def test_a_list_index_takes_the_old_element() -> None:
    new = {"spec": {"containers": [{"name": "a", "image": "new:1"}, {"name": "b", "image": "b:1"}]}}
    old = {"spec": {"containers": [{"name": "a", "image": "old:1"}, {"name": "b", "image": "b:0"}]}}
    found, invalid = apply(new, old, ["spec.containers[0].image"])
    assert found["spec"]["containers"] == [{"name": "a", "image": "old:1"}, {"name": "b", "image": "b:1"}]
    assert invalid == []
    found, _ = apply(new, old, ["spec.containers[1]"])
    assert found["spec"]["containers"][1] == {"name": "b", "image": "b:0"}


def test_an_index_one_list_lacks_is_a_path_error_and_one_both_lack_is_no_change() -> None:
    new = {"taints": [{"key": "a"}]}
    old = {"taints": [{"key": "x"}, {"key": "y"}]}
    # Leaf index only old has: arrays are never grown or shrunk -> error, no change.
    assert apply(new, old, ["taints[1]"]) == (new, ["taints[1]"])
    # Leaf index neither has: the same (absent in both) -> fine.
    assert apply(new, old, ["taints[5]"]) == (new, [])
    # An index on the way to the leaf that one list lacks -> error.
    assert apply(new, old, ["taints[1].key"]) == (new, ["taints[1].key"])


def test_a_wildcard_resets_every_element() -> None:
    new = {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]}
    old = {"taints": [{"key": "a", "effect": "NoExecute"}, {"key": "b", "effect": "PreferNoSchedule"}]}
    found, invalid = apply(new, old, ["taints[*].effect"])
    assert [t["effect"] for t in found["taints"]] == ["NoExecute", "PreferNoSchedule"] and invalid == []
    # Object wildcard at the leaf: new takes old's keys and loses its own.
    found, invalid = apply({"labels": {"a": "1", "b": "2"}}, {"labels": {"a": "0", "c": "3"}}, ["labels.*"])
    assert found == {"labels": {"a": "0", "c": "3"}} and invalid == []
