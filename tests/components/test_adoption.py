"""An adopted stack's imports (`cluster.adopted.imports`, components/adoption.py): the `import` option on exactly the
resources listed, as the engine receives it; bad entries are one line each."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from components.config import ConfigError, load
from offline.engine import run_program
from tests.conftest import BASE, StackRunner

POOL = {"name": "tpu", "tpuVersion": "v6e", "topology": "2x2", "slices": 2, "provisioning": "spot",
        "zone": "us-central1-b"}  # fmt: skip
NODE_POOL = "gcp:container/nodePool:NodePool"
# The engine's URNs (pulumi/pulumi pkg/resource/deploy/deployment.go generateURN, sdk/go/common/resource/urn/urn.go
# New): urn:pulumi:STACK::PROJECT::TYPE::NAME, TYPE the chain of every ancestor's type below the root stack, joined
# by `$`; a top-level resource's TYPE is its own type alone.
POOL_URN = "urn:pulumi:dev::tpu-stack::tpu-stack:index:TpuSlicePools$gcp:container/nodePool:NodePool::"
CLUSTER_URN = "urn:pulumi:dev::tpu-stack::tpu-stack:index:GkeCluster$gcp:container/cluster:Cluster::c"
NAMESPACE_URN = "urn:pulumi:dev::tpu-stack::tpu-stack:index:KueueInstall$kubernetes:core/v1:Namespace::kueue-namespace"


def _adopted(imports: list[dict[str, str]]) -> dict[str, Any]:
    return {"tpu-stack:cluster": {"name": "c", "adopted": {"imports": imports}}, "tpu-stack:tpuPools": [POOL]}


def test_the_listed_resources_and_only_they_are_imported(run: StackRunner) -> None:
    pool_id = "projects/proj-1234/locations/us-central1/clusters/c/nodePools/tpu-1"
    namespace = {"urn": NAMESPACE_URN, "id": "kueue-system"}
    plan = run(_adopted([{"urn": POOL_URN + "tpu-1", "id": pool_id}, namespace]))
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
    namespace = {"urn": NAMESPACE_URN, "id": "kueue-system"}
    cluster = {"urn": CLUSTER_URN, "id": "projects/proj-1234/locations/us-central1/clusters/c"}
    plan = run(_adopted([{"urn": POOL_URN + "tpu-1", "id": pool_id}, cluster, namespace]))
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
        ([{"urn": "urn:pulumi:dev::tpu-stack::NodePool::a", "id": "x"}],
         "tpu-stack:cluster.adopted.imports[0].urn: 'NodePool' is not a resource type of the program"),
        ([{"urn": "urn:pulumi:dev::tpu-stack::tpu-stack:index:TpuSlicePools::a", "id": "x"}],
         "tpu-stack:cluster.adopted.imports[0].urn: 'tpu-stack:index:TpuSlicePools' is not a resource type"),
        ([{"urn": "tpu-stack:index:TpuSlicePools$gcp:container/nodePool:NodePool::a", "id": "x"}],
         "tpu-stack:cluster.adopted.imports[0].urn: 'tpu-stack:index:TpuSlicePools$gcp:container/nodePool:NodePool::a' "
         "is not a URN (urn:pulumi:STACK::tpu-stack::TYPE::NAME"),
        ([{"urn": "urn:pulumi:prod::tpu-stack::tpu-stack:index:TpuSlicePools$gcp:container/nodePool:NodePool::a",
           "id": "x"}],
         "tpu-stack:cluster.adopted.imports[0].urn: names stack 'prod', not 'dev'"),
        ([{"urn": POOL_URN + "a", "id": ""}],
         "tpu-stack:cluster.adopted.imports[0].id: empty; the ID the provider reads the resource by"),
        ([{"urn": POOL_URN + "a", "id": "x"}, {"urn": POOL_URN + "a", "id": "y"}],
         f"tpu-stack:cluster.adopted.imports[1]: {POOL_URN}a is imports[0] already"),
        ([{"urn": POOL_URN + "a"}], "tpu-stack:cluster.adopted.imports[0].id: required; add it"),
        # The form before URNs (type and name) matched two same-named resources under different parents alike.
        ([{"type": NODE_POOL, "name": "a", "id": "x"}],
         "tpu-stack:cluster.adopted.imports[0]: names its resource by type and name (an older tpu-stack adopt), which "
         "resources under different parents share; write its URN instead (urn:"),
    ],
)  # fmt: skip
def test_bad_import_entries_are_one_line_each(imports: list[dict[str, str]], line: str) -> None:
    with pytest.raises(ConfigError) as error:
        load({**BASE, **_adopted(imports)}, stack="dev")
    assert any(found.startswith(line) for found in error.value.lines), error.value.lines
    assert len(error.value.lines) == 1, error.value.lines


# Two resources of one type and name under different parents, one of them two levels down (its URN chains both
# ancestors' types, where the SDK's mock monitor keeps only the parent's). Only the URN listed is imported.
_SAME_NAMES = """
import pulumi
from components.adoption import import_existing
from components.config.adopted import ImportConfig

LISTED = "urn:pulumi:dev::tpu-stack::test:index:Outer$test:index:Inner$kubernetes:core/v1:Namespace::same"
pulumi.runtime.register_stack_transformation(import_existing([ImportConfig(urn=LISTED, id="kube-system")]))
outer = pulumi.ComponentResource("test:index:Outer", "outer")
inner = pulumi.ComponentResource("test:index:Inner", "inner", opts=pulumi.ResourceOptions(parent=outer))
other = pulumi.ComponentResource("test:index:Other", "other")
for parent in (inner, other, outer, None):
    pulumi.CustomResource(
        "kubernetes:core/v1:Namespace", "same", {"metadata": {"name": "kube-system"}},
        opts=pulumi.ResourceOptions(parent=parent),
    )
"""


def test_only_the_resource_with_the_listed_urn_is_imported(tmp_path: Path) -> None:
    program = tmp_path / "__main__.py"
    program.write_text(textwrap.dedent(_SAME_NAMES))
    plan = run_program({}, stack="dev", program=program)
    namespaces = [r for r in plan.resources if r["type"] == "kubernetes:core/v1:Namespace"]
    assert len(namespaces) == 4
    # The mock names a resource's parent by the mock's URN; the one imported is Outer's Inner's child.
    imported = [(r["parent"], r["importId"]) for r in namespaces if r["importId"]]
    assert imported == [("urn:pulumi:dev::tpu-stack::test:index:Outer$test:index:Inner::inner", "kube-system")]
