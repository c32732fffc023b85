"""Every Pulumi.<stack>.yaml previews offline; dev and prod have the shape the platform team agreed on."""

from __future__ import annotations

from pathlib import Path

import pytest

from offline.engine import REPO, Plan, run_stack

STACKS = sorted(p.name.split(".")[1] for p in REPO.glob("Pulumi.*.yaml"))


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    return {stack: run_stack(stack) for stack in STACKS}


def test_there_are_dev_and_prod_stacks() -> None:
    assert {"dev", "prod"} <= set(STACKS)
    assert Path(REPO / "Pulumi.yaml").exists()


@pytest.mark.parametrize("stack", STACKS)
def test_stack_previews_with_resources(plans: dict[str, Plan], stack: str) -> None:
    assert len(plans[stack].resources) > 10


def test_dev_has_a_flex_start_pool_and_a_multislice_group(plans: dict[str, Plan]) -> None:
    pools = plans["dev"].outputs["tpuPools"]
    assert isinstance(pools, dict)
    provisioning = {name: pool["provisioning"] for name, pool in pools.items()}
    assert "flex-start" in provisioning.values()
    assert any(pool["slices"] > 1 for pool in pools.values())


def test_prod_trains_on_reserved_capacity_serves_on_4x8_slices_and_is_protected(plans: dict[str, Plan]) -> None:
    plan = plans["prod"]
    pools = plan.outputs["tpuPools"]
    assert isinstance(pools, dict)
    assert any(pool["provisioning"] in ("reservation", "on-demand") for pool in pools.values())
    assert any(pool["topology"] == "4x8" and pool["slices"] == 2 for pool in pools.values())
    (cluster,) = plan.by_type("gcp:container/cluster:Cluster")
    assert cluster["inputs"]["deletionProtection"] is True and cluster["protect"] is True


def test_pulumi_yaml_describes_every_config_key_the_program_reads() -> None:
    """`pulumi config` users see these descriptions; a key the model reads but Pulumi.yaml omits is a gap."""
    import yaml

    from components.config import StackConfig

    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    declared = {**project["template"]["config"], **{f"tpu-stack:{k}": v for k, v in project["config"].items()}}
    model_keys = {
        f"tpu-stack:{field.alias or name}" for name, field in StackConfig.model_fields.items() if name != "stack"
    } - {"tpu-stack:project", "tpu-stack:region"} | {"gcp:project", "gcp:region"}
    assert model_keys <= set(declared), sorted(model_keys - set(declared))
    assert all(entry.get("description") for entry in declared.values())
