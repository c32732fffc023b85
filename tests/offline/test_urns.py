"""URN snapshots (offline/urns.py): engine URNs, and which changes replace a resource, on small programs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from offline import urns
from offline.engine import Plan, run_program
from tests.fixtures import stack_plan

HEADER = """
import pulumi


class Group(pulumi.ComponentResource):
    def __init__(self, name, type_token="tpu-stack:index:Group", opts=None, child="data"):
        super().__init__(type_token, name, None, opts)
        pulumi.CustomResource("gcp:storage/bucket:Bucket", child, {}, opts=pulumi.ResourceOptions(parent=self))
"""


def run(tmp_path: Path, body: str) -> Plan:
    program = tmp_path / "program.py"
    program.write_text(HEADER + textwrap.dedent(body))
    return run_program({}, stack="dev", program=program)


PREFIX = "urn:pulumi:dev::tpu-stack::"


def test_engine_urns_leave_out_the_stack_type_and_chain_every_ancestor_type(tmp_path: Path) -> None:
    plan = run(
        tmp_path,
        """
        outer = Group("outer", "tpu-stack:index:Outer")
        Group("inner", "tpu-stack:index:Inner", opts=pulumi.ResourceOptions(parent=outer), child="deep")
        """,
    )
    assert urns.engine_urns(plan) == sorted(
        [
            f"{PREFIX}tpu-stack:index:Outer::outer",
            f"{PREFIX}tpu-stack:index:Outer$gcp:storage/bucket:Bucket::data",
            f"{PREFIX}tpu-stack:index:Outer$tpu-stack:index:Inner::inner",
            f"{PREFIX}tpu-stack:index:Outer$tpu-stack:index:Inner$gcp:storage/bucket:Bucket::deep",
        ]
    )


def test_a_rename_without_alias_vanishes_and_the_message_says_how_to_update(tmp_path: Path) -> None:
    before = urns.engine_urns(run(tmp_path, 'Group("ml")'))
    drift = urns.compare(run(tmp_path, 'Group("training")'), before)
    assert drift.vanished == [f"{PREFIX}tpu-stack:index:Group::ml"]
    assert drift.appeared == [f"{PREFIX}tpu-stack:index:Group::training"]
    message = drift.message()
    assert f"- {PREFIX}tpu-stack:index:Group::ml" in message
    assert "python -m offline.urns --update" in message and "Alias" in message


def test_an_alias_carries_the_old_urn_and_children_inherit_it(tmp_path: Path) -> None:
    before = urns.engine_urns(run(tmp_path, 'Group("ml")'))
    after = run(
        tmp_path,
        """
        Group(
            "training",
            "tpu-stack:index:Storage",
            opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(name="ml", type_="tpu-stack:index:Group")]),
        )
        """,
    )
    drift = urns.compare(after, before)
    assert drift.vanished == []
    assert drift.carried == {
        f"{PREFIX}tpu-stack:index:Group::ml": f"{PREFIX}tpu-stack:index:Storage::training",
        f"{PREFIX}tpu-stack:index:Group$gcp:storage/bucket:Bucket::data": (
            f"{PREFIX}tpu-stack:index:Storage$gcp:storage/bucket:Bucket::data"
        ),
    }


def test_moving_a_resource_under_a_component_needs_a_no_parent_alias(tmp_path: Path) -> None:
    before = urns.engine_urns(run(tmp_path, 'pulumi.CustomResource("gcp:storage/bucket:Bucket", "logs", {})'))
    moved = """
        group = Group("ml")
        pulumi.CustomResource("gcp:storage/bucket:Bucket", "logs", {}, opts=pulumi.ResourceOptions(parent=group, EXTRA))
        """
    plain = urns.compare(run(tmp_path, moved.replace("EXTRA", "aliases=[]")), before)
    assert plain.vanished == [f"{PREFIX}gcp:storage/bucket:Bucket::logs"]
    aliased = urns.compare(run(tmp_path, moved.replace("EXTRA", "aliases=[pulumi.Alias(parent=None)]")), before)
    assert aliased.vanished == [] and f"{PREFIX}gcp:storage/bucket:Bucket::logs" in aliased.carried


def test_new_resources_alone_only_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(urns, "SNAPSHOTS", tmp_path / "snapshots")
    urns.write_snapshot("dev", urns.engine_urns(run(tmp_path, 'Group("ml")')))
    grown = run(tmp_path, 'Group("ml")\nGroup("serving", child="weights")')
    with pytest.warns(urns.SnapshotOutdated, match="python -m offline.urns --update"):
        drift = urns.check(grown)
    assert drift.vanished == [] and len(drift.appeared) == 2


def test_update_writes_sorted_engine_urns_and_check_mode_fails_on_vanished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(urns, "SNAPSHOTS", tmp_path)
    assert urns.main(["--update", "--stack", "dev"]) == 0
    lines = (tmp_path / "urns-dev.txt").read_text().splitlines()
    assert lines == sorted(lines) and all(line.startswith("urn:pulumi:dev::tpu-stack::") for line in lines)
    assert not any("pulumi:pulumi:Stack" in line for line in lines)
    assert urns.main(["--stack", "dev"]) == 0
    (tmp_path / "urns-dev.txt").write_text("\n".join([*lines, f"{PREFIX}gcp:storage/bucket:Bucket::gone"]) + "\n")
    assert urns.main(["--stack", "dev"]) == 1
    assert "gcp:storage/bucket:Bucket::gone" in capsys.readouterr().out


def test_cluster_targets_are_the_cluster_components_resources_and_what_they_need() -> None:
    """What a new stack creates first with `pulumi up --target ...`: the cluster, its system pool, the node
    identity and the kubernetes provider, and the APIs and VPC they depend on (the engine refuses a target that
    depends on a skipped create); nothing in the cluster, no TPU pool, no chart."""
    targets = urns.cluster_targets(stack_plan("dev", render_charts=False))
    prefix = "urn:pulumi:dev::tpu-stack::tpu-stack:index:GkeCluster$"
    assert f"{prefix}gcp:container/cluster:Cluster::tpu-dev" in targets
    assert f"{prefix}gcp:container/nodePool:NodePool::tpu-dev-system" in targets
    assert f"{prefix}gcp:serviceaccount/account:Account::tpu-dev-nodes" in targets
    assert f"{prefix}pulumi:providers:kubernetes::tpu-dev-k8s" in targets
    needed = ("tpu-stack:index:GkeCluster::tpu-dev", "tpu-stack:index:ProjectServices", "tpu-stack:index:StackNetwork")
    assert all(urn.startswith(prefix) or any(n in urn for n in needed) for urn in targets)
    assert "urn:pulumi:dev::tpu-stack::tpu-stack:index:StackNetwork$gcp:compute/network:Network::network-vpc" in targets
    assert not any("NodePool::multislice" in urn or "helm.sh" in urn for urn in targets)
