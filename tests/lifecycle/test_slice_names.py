"""Names that survive change: a change that only resizes a pool group deletes or replaces none of the slices it keeps.

A GKE node pool's name is its identity (the provider replaces a pool whose name changes; a Pulumi alias keeps the
URN, not the pool), so slice i's name must not depend on how many slices there are. Slice i is `<name>-<i>`; a pool
group deployed with one slice by an earlier version, whose node pool is `<name>`, keeps that name for slice 0 with
`legacyFirstSliceName: true`.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.config.pools import TpuPoolConfig
from offline.engine import run_program
from offline.lifecycle import transition
from tests.conftest import BASE
from tests.lifecycle.catalogue import CATALOGUE

NODE_POOL = "gcp:container/nodePool:NodePool"


def _group(slices: int, **fields: Any) -> dict[str, Any]:
    """A multi-host v5e 2x4 spot pool group (fixed size, so every slice holds running VMs) with its Saxml servers,
    and a single-host flex-start group for Kueue; in us-west4-a, which gives v5e on spot and on flex-start
    (vendor/data/tpu_zones.json)."""
    serve = {"name": "serve", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "zone": "us-west4-a",
             "provisioning": "spot", "slices": slices, **fields}  # fmt: skip
    flex = {"name": "flex", "machineType": "ct5lp-hightpu-4t", "provisioning": "flex-start",
            "zone": "us-west4-a", "slices": slices, **fields}  # fmt: skip
    saxml = {"pool": "serve", "service": {"sourceRanges": ["10.20.0.0/24"]}}
    return {**BASE, "gcp:region": "us-west4", "tpu-stack:tpuPools": [serve, flex], "tpu-stack:saxml": saxml}


@functools.cache
def _plan(slices: int, legacy: bool) -> list[dict[str, Any]]:
    fields = {"legacyFirstSliceName": True} if legacy else {}
    return run_program(_group(slices, **fields), stack="dev").resources


def _steps(old: int, new: int, *, legacy: bool = False) -> dict[str, list[str]]:
    """op -> names of the node pools and model-server JobSets the engine would touch going from `old` to `new`
    slices."""
    steps = transition(_plan(old, legacy), _plan(new, legacy), CATALOGUE)
    touched = {"gcp:container/nodePool:NodePool", "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"}
    return {
        op: sorted(s.name for s in steps.of(op) if s.type in touched)
        for op in ("create", "replace", "delete", "refuse")
    }


def test_growing_one_slice_to_two_keeps_the_running_slice() -> None:
    """The defect: pools were `<name>` for one slice and `<name>-<i>` for several, so 1 -> 2 deleted the running
    `serve` and created `serve-0` and `serve-1`, while the plan's capacity row said only "slices 1 -> 2"."""
    assert _steps(1, 2) == {
        "create": ["flex-1", "saxml-model-servers-1", "serve-1"],
        "replace": [],
        "delete": [],
        "refuse": [],
    }


@pytest.mark.parametrize(("old", "new"), [(1, 3), (3, 1), (2, 4), (4, 2), (2, 1)])
def test_a_resize_touches_only_the_slices_it_adds_or_removes(old: int, new: int) -> None:
    """Both directions: growing creates slices old..new-1, shrinking deletes slices new..old-1, and every slice
    below both counts (its node pool and, on a serving group, its model servers) is neither replaced nor deleted."""
    grown = [f"{name}-{i}" for i in range(min(old, new), max(old, new)) for name in ("flex", "serve")]
    servers = [f"saxml-model-servers-{i}" for i in range(min(old, new), max(old, new))]
    expected = sorted(grown + servers)
    steps = _steps(old, new)
    assert steps == {
        "create": expected if new > old else [],
        "replace": [],
        "delete": expected if new < old else [],
        "refuse": [],
    }


def test_a_pool_group_deployed_with_one_slice_keeps_its_node_pool() -> None:
    """An earlier version named a one-slice group's node pool `<name>`: with legacyFirstSliceName it stays slice 0,
    and growing adds `<name>-1`; nothing is deleted."""
    assert _steps(1, 3, legacy=True) == {
        "create": ["flex-1", "flex-2", "saxml-model-servers-1", "saxml-model-servers-2", "serve-1", "serve-2"],
        "replace": [],
        "delete": [],
        "refuse": [],
    }
    one = _plan(1, legacy=True)
    assert sorted(r["inputs"]["name"] for r in one if r["type"] == NODE_POOL and r["name"] in ("flex", "serve")) == [
        "flex",
        "serve",
    ]


@settings(max_examples=60, deadline=None)
@given(
    old=st.integers(min_value=1, max_value=12),
    new=st.integers(min_value=1, max_value=12),
    legacy=st.booleans(),
)
def test_slice_names_never_depend_on_the_count(old: int, new: int, legacy: bool) -> None:
    """For any two slice counts, the slices both have keep their names, and every name is unique."""

    def names(slices: int) -> list[str]:
        pool = TpuPoolConfig(name="grp", tpu_version="v5e", slices=slices, legacy_first_slice_name=legacy)
        return pool.node_pool_names

    before, after = names(old), names(new)
    kept = min(old, new)
    assert before[:kept] == after[:kept]
    assert len(set(after)) == new
    assert after[0] == ("grp" if legacy else "grp-0")
