"""An adopted stack's imports (`cluster.adopted.imports`, components/adoption.py): the `import` option on exactly the
resources listed, as the engine receives it; bad entries are one line each."""

from __future__ import annotations

from typing import Any

import pytest

from components.config import ConfigError, load
from tests.conftest import BASE, StackRunner

POOL = {"name": "tpu", "tpuVersion": "v6e", "topology": "2x2", "slices": 2, "provisioning": "spot",
        "zone": "us-central1-b"}  # fmt: skip
NODE_POOL = "gcp:container/nodePool:NodePool"


def _adopted(imports: list[dict[str, str]]) -> dict[str, Any]:
    return {"tpu-stack:cluster": {"name": "c", "adopted": {"imports": imports}}, "tpu-stack:tpuPools": [POOL]}


def test_the_listed_resources_and_only_they_are_imported(run: StackRunner) -> None:
    pool_id = "projects/proj-1234/locations/us-central1/clusters/c/nodePools/tpu-1"
    namespace = {"type": "kubernetes:core/v1:Namespace", "name": "kueue-namespace", "id": "kueue-system"}
    plan = run(_adopted([{"type": NODE_POOL, "name": "tpu-1", "id": pool_id}, namespace]))
    imported = {(r["type"], r["name"]): r["importId"] for r in plan.resources if r["importId"]}
    assert imported == {
        (NODE_POOL, "tpu-1"): pool_id,
        ("kubernetes:core/v1:Namespace", "kueue-namespace"): "kueue-system",
    }
    assert plan.one(NODE_POOL, "tpu-0")["importId"] is None


def test_imported_google_resources_are_protected_in_any_stack(run: StackRunner) -> None:
    # `pulumi import` protects what it imports unless told not to (pulumi/pulumi pkg/cmd/pulumi/operations/import.go,
    # --protect defaults to true); adoption does the same for what holds capacity, whatever the stack's name.
    pool_id = "projects/proj-1234/locations/us-central1/clusters/c/nodePools/tpu-1"
    namespace = {"type": "kubernetes:core/v1:Namespace", "name": "kueue-namespace", "id": "kueue-system"}
    cluster = {
        "type": "gcp:container/cluster:Cluster",
        "name": "c",
        "id": "projects/proj-1234/locations/us-central1/clusters/c",
    }
    plan = run(_adopted([{"type": NODE_POOL, "name": "tpu-1", "id": pool_id}, cluster, namespace]))
    assert plan.one(NODE_POOL, "tpu-1")["protect"] is True
    assert plan.one("gcp:container/cluster:Cluster", "c")["protect"] is True
    # Not imported: the stack's own, as any dev stack's. retainOnDelete stays off: a refused delete, not an orphan.
    assert plan.one(NODE_POOL, "tpu-0")["protect"] is False
    assert plan.one(NODE_POOL, "tpu-1")["retainOnDelete"] is False


def test_a_stack_without_imports_imports_nothing(run: StackRunner) -> None:
    plan = run({"tpu-stack:tpuPools": [POOL]})
    assert not [r for r in plan.resources if r["importId"]]


@pytest.mark.parametrize(
    ("imports", "line"),
    [
        ([{"type": "NodePool", "name": "a", "id": "x"}],
         "tpu-stack:cluster.adopted.imports[0].type: 'NodePool' is not a resource type of the program"),
        ([{"type": "tpu-stack:index:TpuSlicePools", "name": "a", "id": "x"}],
         "tpu-stack:cluster.adopted.imports[0].type: 'tpu-stack:index:TpuSlicePools' is not a resource type"),
        ([{"type": NODE_POOL, "name": "a", "id": ""}],
         "tpu-stack:cluster.adopted.imports[0].id: empty; the ID the provider reads the resource by"),
        ([{"type": NODE_POOL, "name": "a", "id": "x"}, {"type": NODE_POOL, "name": "a", "id": "y"}],
         "tpu-stack:cluster.adopted.imports[1]: gcp:container/nodePool:NodePool a is imports[0] already"),
        ([{"type": NODE_POOL, "name": "a"}], "tpu-stack:cluster.adopted.imports[0].id: required; add it"),
    ],
)  # fmt: skip
def test_bad_import_entries_are_one_line_each(imports: list[dict[str, str]], line: str) -> None:
    with pytest.raises(ConfigError) as error:
        load({**BASE, **_adopted(imports)}, stack="dev")
    assert any(found.startswith(line) for found in error.value.lines), error.value.lines
