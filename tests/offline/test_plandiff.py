"""The pull request comment: real plan pairs from the engine (dev as it is, and dev with a slice added, a team's
share changed, a pool replaced), each comment section written out by hand; prod's protection, chart objects,
aliases and missing plans on small cases."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline import __main__ as cli
from offline import plandiff
from offline.policy_check import TEAM_CONFIG
from tests.fixtures import stack_path

Change = Callable[[dict[str, Any]], None]
Plans = dict[str, dict[str, Any]]


def _build(root: Path, stack: str, change: Change | None = None, *, fixture: str | None = None) -> Plans:
    """The plans `python -m offline preview` writes for the fixture Pulumi.<stack>.yaml (or Pulumi.<fixture>.yaml
    under the name `stack`), after `change` to its config."""
    data = yaml.safe_load(stack_path(fixture or stack).read_text())
    if change:
        change(data["config"])
    root.mkdir(parents=True)
    stack_file = root / f"Pulumi.{stack}.yaml"
    stack_file.write_text(yaml.safe_dump(data, sort_keys=False))
    out = root / "build" / stack
    args = ["preview", "--stack", stack, "--config", str(stack_file), "--out", str(out), "--quiet"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main([*args, "--policy-config", str(TEAM_CONFIG)]) == 0
    return plandiff.load_plans(root / "build")


def _slice_added(config: dict[str, Any]) -> None:
    config["tpu-stack:tpuPools"][1]["slices"] = 4  # multislice: 3 -> 4 slices of 2x4


def _share_changed(config: dict[str, Any]) -> None:
    config["tpu-stack:queues"]["teams"][0]["shares"]["multislice"] = 12  # research: 8 -> 12 chips


def _pool_replaced(config: dict[str, Any]) -> None:
    config["tpu-stack:tpuPools"][0]["provisioning"] = "spot"  # flex-v6e: flex-start -> spot


def _ladder_renamed(config: dict[str, Any]) -> None:
    # Its order cannot be reversed: flex-start tried before the spot slice, billed while up, is refused (a ladder
    # lists capacity that bills while idle first).
    ladders = config["tpu-stack:queues"]["ladders"]
    ladders["v5e-2x4"] = ladders.pop("multislice")


def _upgraded_without_the_legacy_name(config: dict[str, Any]) -> None:
    del config["tpu-stack:tpuPools"][0]["legacyFirstSliceName"]  # flex-v6e, deployed with one slice


def _cluster_renamed(config: dict[str, Any]) -> None:
    config["tpu-stack:cluster"]["name"] = "tpu-dev-b"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Plans]:
    root = tmp_path_factory.mktemp("plans")
    return {
        name: _build(root / name, "dev", change)
        for name, change in (
            ("base", None),
            ("slice", _slice_added),
            ("share", _share_changed),
            ("pool", _pool_replaced),
            ("ladder", _ladder_renamed),
            ("legacy", _upgraded_without_the_legacy_name),
            ("cluster", _cluster_renamed),
        )
    }


def _section(base: Plans, head: Plans, stack: str = "dev") -> str:
    return plandiff.render_stack(plandiff.diff_stack(stack, base.get(stack), head.get(stack)))


# Dev has 36 chips in 5 slices on 9 VMs: flex-v6e 1 x 2x2 (1 VM, 4 chips), multislice 3 x 2x4 (6 VMs, 24 chips),
# multislice-spot 1 x 2x4 (2 VMs, 8 chips; three slices, 52 chips in all, before the spot rung became the ladder's
# first). Its 5 TPU node pools each get the advisory tpu-node-auto-upgrade finding. The ClusterQueues list flex-v6e,
# multislice-spot, multislice (the ladder's rungs in ladder order), so research's multislice quota is flavors[2]; the
# cohort holds only multislice chips (flavors[0]).
SLICE_ADDED = """\
### Stack `dev`: 1 to create, 2 to update, 0 to replace, 0 to delete

**Capacity**

| pool group | change |
|---|---|
| `multislice` | slices 3 → 4, VMs 6 → 8, chips 24 → 32 |

In all: TPU chips 36 → 44, slices 5 → 6, VMs 9 → 11.

**Quotas per team** (chips of `google.com/tpu`; borrowing limit `unlimited` when none is set)

| team | flavor | quota | borrowing limit |
|---|---|---|---|
| cohort `tpu-stack` (no team's share) | `multislice` | 8 → 16 | |

**Added** (1)

- `gcp:container/nodePool:NodePool` `multislice-3`: ct6e-standard-4t 2x4 nodes=0..2 flex-start us-east5-b

**Changed in place** (2)

- `kubernetes:kueue.x-k8s.io/v1beta2:Cohort` `queues-cohort-tpu-stack`: inputs: \
`spec.resourceGroups[0].flavors[name=multislice].resources[name=google.com/tpu].nominalQuota` `8` → `16`
- `gcp:monitoring/dashboard:Dashboard` `monitoring-dashboard`: inputs: `dashboardJson`

**Policy findings** of this pull request: 0 mandatory, 6 advisory (1 new, 0 resolved)
- new: [advisory] `tpu-node-auto-upgrade`: `gcp:container/nodePool:NodePool` `multislice-3`: TPU pool may be \
upgraded, restarting its slices, at any time: give cluster 'tpu-dev' a maintenancePolicy (a window, and exclusions \
of scope NO_MINOR_OR_NODE_UPGRADES over training runs)
"""

SHARE_CHANGED = """\
### Stack `dev`: 0 to create, 2 to update, 0 to replace, 0 to delete

**Quotas per team** (chips of `google.com/tpu`; borrowing limit `unlimited` when none is set)

| team | flavor | quota | borrowing limit |
|---|---|---|---|
| `research` | `multislice` | 8 → 12 | unlimited |
| cohort `tpu-stack` (no team's share) | `multislice` | 8 → 4 | |

**Changed in place** (2)

- `kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue` `queues-clusterqueue-research-cluster-queue`: inputs: \
`spec.resourceGroups[0].flavors[name=multislice].resources[name=google.com/tpu].nominalQuota` `8` → `12`
- `kubernetes:kueue.x-k8s.io/v1beta2:Cohort` `queues-cohort-tpu-stack`: inputs: \
`spec.resourceGroups[0].flavors[name=multislice].resources[name=google.com/tpu].nominalQuota` `8` → `4`

**Policy findings** of this pull request: 0 mandatory, 5 advisory (0 new, 0 resolved)
"""

POOL_REPLACED = """\
### Stack `dev`: 0 to create, 1 to update, 1 to replace, 0 to delete

**Capacity**

| pool group | change |
|---|---|
| `flex-v6e` | provisioning flex-start → spot, **replaces running slice(s)** `flex-v6e`: deleted and created again, \
what runs on them stops |

In all: TPU chips 36, slices 5, VMs 9.

**Replaced** (1): deleted and created again; what runs on them stops

- `gcp:container/nodePool:NodePool` `flex-v6e`: its provider replaces it when `initialNodeCount`, \
`nodeConfig.flexStart`, `nodeConfig.reservationAffinity`, `nodeConfig.spot` change; inputs: `autoscaling`, \
`initialNodeCount` `0` → `unset`, `nodeConfig.flexStart` `true` → `unset`, `nodeConfig.reservationAffinity`, \
`nodeConfig.spot` `unset` → `true`, `nodeCount` `unset` → `1`

**Changed in place** (1)

- `kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor` `queues-resourceflavor-flex-v6e`: inputs: \
`spec.nodeLabels.cloud.google.com/gke-flex-start` `true` → `unset`, `spec.nodeLabels.cloud.google.com/gke-spot` \
`unset` → `true`

**Policy findings** of this pull request: 0 mandatory, 5 advisory (0 new, 0 resolved)
"""


LADDER_RENAMED = """\
### Stack `dev`: 0 to create, 2 to update, 0 to replace, 0 to delete

**Capacity**

| pool group | change |
|---|---|
| `multislice` | ladder multislice 2/2 → v5e-2x4 2/2 |
| `multislice-spot` | ladder multislice 1/2 → v5e-2x4 1/2 |

In all: TPU chips 36, slices 5, VMs 9.

**Changed in place** (2)

- `kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor` `queues-resourceflavor-multislice`: inputs: \
`metadata.labels.tpu-stack/ladder` `multislice` → `v5e-2x4`
- `kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor` `queues-resourceflavor-multislice-spot`: inputs: \
`metadata.labels.tpu-stack/ladder` `multislice` → `v5e-2x4`

**Policy findings** of this pull request: 0 mandatory, 5 advisory (0 new, 0 resolved)
"""


def test_a_running_slice_deleted_by_a_new_name_is_called_out(dev: dict[str, Plans]) -> None:
    """A stack deployed when a one-slice group's node pool was named `<name>`, upgraded without
    legacyFirstSliceName: no capacity number changes, yet the running slice is deleted and created again as
    `<name>-0`. The capacity section says so (a resize alone deletes only the slices it removes)."""
    section = _section(dev["base"], dev["legacy"])
    assert section.splitlines()[:7] == [
        "### Stack `dev`: 1 to create, 0 to update, 0 to replace, 1 to delete",
        "",
        "**Capacity**",
        "",
        "| pool group | change |",
        "|---|---|",
        "| `flex-v6e` | **deletes running slice(s)** `flex-v6e` and creates `flex-v6e-0`: a node pool cannot be "
        "renamed; a group deployed with one slice keeps its name with `legacyFirstSliceName: true` |",
    ]
    assert "deletes running slice" not in _section(dev["base"], dev["slice"])


@pytest.mark.parametrize(
    ("head", "expected"),
    [("slice", SLICE_ADDED), ("share", SHARE_CHANGED), ("pool", POOL_REPLACED), ("ladder", LADDER_RENAMED)],
    ids=["slice-added", "share-changed", "pool-replaced", "ladder-renamed"],
)
def test_the_comment_on_each_kind_of_change(dev: dict[str, Plans], head: str, expected: str) -> None:
    assert _section(dev["base"], dev[head]) == expected


def test_a_renamed_cluster_replaces_every_kubernetes_object_it_held(dev: dict[str, Plans]) -> None:
    """The provider is named after the cluster: its objects move to a new provider resource whose clusterIdentifier
    differs, which replaces them all (into the new cluster), listed as one line with counts by kind; the TPU pools
    are replaced for their `cluster`."""
    lines = _section(dev["base"], dev["cluster"]).splitlines()
    # 11 each: the cluster, its component, provider, node account and its 2 roles, system pool, and (issue 27) its
    # subnetwork, router, NAT and webhook rule, all named after the cluster.
    assert lines[0] == "### Stack `dev`: 11 to create, 2 to update, 150 to replace, 11 to delete"
    start = lines.index("**Replaced** (150): deleted and created again; what runs on them stops")
    moved = lines[start + 2]
    # 46 objects the program declares with the provider, 99 the charts render (Kueue 78, JobSet 21).
    assert moved.startswith(
        "- 145 resources, each: moves to provider tpu-dev-b-k8s, which replaces it (changed: clusterIdentifier): "
        "52 ClusterRole, 14 NetworkPolicy, 12 CustomResourceDefinition, "
    )
    assert moved.endswith(", 1 Cohort (99 of them rendered by `jobset-chart`, `kueue-chart`)")
    pools = ["flex-v6e", "multislice-0", "multislice-1", "multislice-2", "multislice-spot"]  # spot: 1 slice
    assert lines[start + 3 : start + 8] == [
        f"- `gcp:container/nodePool:NodePool` `{pool}`: its provider replaces it when `cluster`, "
        "`nodeConfig.serviceAccount` change; inputs: `cluster` `tpu-dev` → `tpu-dev-b`, `nodeConfig.serviceAccount` "
        "`tpu-dev-nodes@tpu-stack-dev.iam.gserviceaccount.com` → "
        "`tpu-dev-b-nodes@tpu-stack-dev.iam.gserviceaccount.com`"
        for pool in pools
    ]
    assert lines[start + 8] == ""


K8S = "urn:pulumi:s::p::pulumi:providers:kubernetes::"
NAMESPACE = "urn:pulumi:s::p::kubernetes:core/v1:Namespace::ns"


def _namespace_on(provider: str, cluster: str, **options: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A provider for `cluster` and a Namespace it manages."""
    settings = {"clusterIdentifier": cluster, "kubeconfig": "[secret]"}
    return (
        _record(K8S + provider, settings, **options),
        _record(NAMESPACE, {"metadata": {"name": "ns"}}, provider=K8S + provider),
    )


def test_a_provider_renamed_under_an_alias_or_for_the_same_cluster_replaces_nothing() -> None:
    """The engine skips DiffConfig for an aliased provider; a new provider resource for the same cluster (same
    clusterIdentifier) answers "no replace" and the object is diffed as usual."""
    base = _plan(*_namespace_on("old", "a"))
    aliased = _plan(*_namespace_on("new", "a", aliases=[{"urn": K8S + "old"}]))
    assert plandiff.diff_stack("s", base, aliased).steps == []
    same_cluster = plandiff.diff_stack("s", base, _plan(*_namespace_on("new", "a")))
    assert [(s.op, s.name) for s in same_cluster.steps] == [("create", "new"), ("delete", "old")]
    other_cluster = plandiff.diff_stack("s", base, _plan(*_namespace_on("new", "b")))
    assert [(s.op, s.name, s.why) for s in other_cluster.steps] == [
        ("replace", "ns", "moves to provider new, which replaces it (changed: clusterIdentifier)"),
        ("create", "new", ""),
        ("delete", "old", ""),
    ]


def test_the_cli_writes_one_comment_for_every_stack(dev: dict[str, Plans], tmp_path: Path) -> None:
    out = tmp_path / "comment.md"
    base_dir = _folder(dev, "base", tmp_path)
    head_dir = _folder(dev, "slice", tmp_path)
    args = ["diff", "--base", str(base_dir), "--head", str(head_dir), "--out", str(out)]
    assert cli.main([*args, "--base-label", "abc1234", "--head-label", "def5678"]) == 0
    text = out.read_text()
    assert text.startswith(
        "## Plan diff\n\nWhat merging this pull request changes in each stack: offline plans of the base `abc1234` "
        "and of the merge with `def5678`,"
    )
    assert text.endswith(SLICE_ADDED)
    assert text.count("### Stack ") == 1


def _folder(plans: dict[str, Plans], name: str, root: Path) -> Path:
    """A build folder holding `plans[name]` as plan.json files."""
    folder = root / name
    for stack, plan in plans[name].items():
        (folder / stack).mkdir(parents=True)
        (folder / stack / "plan.json").write_text(json.dumps(plan))
    return folder


def test_the_diff_cli_without_plans_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff", "--base", str(tmp_path / "a"), "--head", str(tmp_path / "b")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: no plan.json under {tmp_path / 'a'} or {tmp_path / 'b'}; run `python -m offline preview` first"
    ]


def test_a_protected_stack_refuses_a_pool_replacement(tmp_path_factory: pytest.TempPathFactory) -> None:
    """prod protects everything: replacing the serving pools stops `pulumi up`, and the comment says so first."""
    root = tmp_path_factory.mktemp("prod")

    def spot(config: dict[str, Any]) -> None:
        config["tpu-stack:tpuPools"][2]["provisioning"] = "spot"  # serve: on-demand -> spot

    base, head = _build(root / "base", "prod"), _build(root / "head", "prod", spot)
    section = _section(base, head, "prod")
    assert (
        section.splitlines()[0]
        == "### Stack `prod`: 0 to create, 0 to update, 0 to replace, 0 to delete, **4 refused**"
    )
    refused = section[section.index("**Refused** (4)") :].split("\n\n")[1].splitlines()
    # Saxml's model servers select the pools' spot label: their JobSets are replaced too (replaceOnChanges).
    selector = "spec.replicatedJobs[0].template.spec.template.spec.nodeSelector.cloud.google.com/gke-spot"
    assert refused == [
        *(
            f"- `kubernetes:jobset.x-k8s.io/v1alpha2:JobSet` `saxml-model-servers-{i}`: replace (replaceOnChanges: "
            f"{selector}) of a protected resource: `pulumi state unprotect` first"
            for i in (0, 1)
        ),
        *(
            f"- `gcp:container/nodePool:NodePool` `serve-{i}`: replace (changes nodeConfig.spot) of a protected "
            "resource: `pulumi state unprotect` first"
            for i in (0, 1)
        ),
    ]


def test_a_chart_change_is_one_line_per_chart(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Pinning the Kueue image by digest changes the chart's values and one rendered object: counted by kind under
    the chart, with the input that changed."""
    digest = "sha256:" + "a" * 64

    def pin(config: dict[str, Any]) -> None:
        config["tpu-stack:charts"] = {"kueueImageDigest": digest}

    root = tmp_path_factory.mktemp("chart")
    section = _section(_build(root / "base", "dev"), _build(root / "head", "dev", pin))
    changed = section[section.index("**Changed in place**") :].split("\n\n")[1].splitlines()
    assert changed == [
        "- `kubernetes:helm.sh/v4:Chart` `kueue-chart`: inputs: `values.controllerManager.manager.image.tag` "
        "`unset` → `v0.19.2@" + digest + "`",
        "- `kueue-chart` renders 1 of these: 1 Deployment; inputs: `spec.template.spec.containers[name=manager].image`",
    ]


# --- small cases, records written by hand -------------------------------------------------------------------


def _record(urn: str, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
    kind = urn.split("::")[2].split("$")[-1]
    name = urn.rsplit("::", 1)[-1]
    return {"urn": urn, "type": kind, "name": name, "parent": None, "dependencies": [], "custom": True,
            "protect": False, "ignoreChanges": [], "replaceOnChanges": [], "deleteBeforeReplace": None,
            "retainOnDelete": False, "aliases": [], "provider": None, "inputs": inputs, **options}  # fmt: skip


def _plan(*records: dict[str, Any], violations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"project": "p", "stack": "s", "summary": {"capacity": {}, "queues": {"cohort": None, "teams": {},
            "cohortQuota": {}}}, "resources": list(records), "outputs": {}, "violations": violations or []}  # fmt: skip


ACCOUNT = "urn:pulumi:s::p::gcp:serviceaccount/account:Account::"


def test_a_resource_renamed_under_an_alias_is_kept_not_replaced() -> None:
    old = _record(ACCOUNT + "old", {"accountId": "a"})
    by_urn = _record(ACCOUNT + "new", {"accountId": "a"}, aliases=[{"urn": ACCOUNT + "old"}])
    by_name = _record(ACCOUNT + "new", {"accountId": "a"}, aliases=[{"name": "old", "noParent": True}])
    for new in (by_urn, by_name):
        diff = plandiff.diff_stack("s", _plan(old), _plan(new))
        assert diff.steps == [] and diff.renamed == {ACCOUNT + "old": ACCOUNT + "new"}
        assert "Renamed under an alias (kept, not replaced): 1." in plandiff.render_stack(diff)


def test_a_type_the_catalogue_does_not_know_is_named_not_fatal() -> None:
    urn = "urn:pulumi:s::p::gcp:new/thing:Thing::t"
    section = plandiff.render_stack(
        plandiff.diff_stack("s", _plan(_record(urn, {"a": 1})), _plan(_record(urn, {"a": 2})))
    )
    assert "- `gcp:new/thing:Thing` `t`: inputs: `a` `1` → `2`" in section
    assert (
        "No replacement rule in `offline/catalogue.py` for `gcp:new/thing:Thing`: their updates may replace." in section
    )


def test_a_protected_resource_the_head_drops_is_a_refused_delete() -> None:
    kept = _record(ACCOUNT + "kept", {"accountId": "kept"}, protect=True)
    section = plandiff.render_stack(plandiff.diff_stack("s", _plan(kept), _plan()))
    assert (
        section.splitlines()[0] == "### Stack `s`: 0 to create, 0 to update, 0 to replace, 0 to delete, **1 refused**"
    )
    assert (
        "- `gcp:serviceaccount/account:Account` `kept`: delete of a protected resource: `pulumi state unprotect` first"
        in section.splitlines()
    )


def test_new_and_missing_stacks() -> None:
    urn = ACCOUNT + "a"
    new_stack = plandiff.render_stack(plandiff.diff_stack("s", None, _plan(_record(urn, {"accountId": "a"}))))
    assert new_stack.startswith("### Stack `s`: new stack, 1 to create, 0 to update, 0 to replace, 0 to delete\n")
    gone = plandiff.render_stack(plandiff.diff_stack("s", _plan(_record(urn, {})), None))
    assert gone.splitlines()[0] == "### Stack `s`: no plan on this pull request"


def test_a_failed_preview_is_told_from_a_new_or_removed_stack(tmp_path: Path) -> None:
    """The workflow passes each side's project folder: a stack file without a plan is a preview that failed."""
    plan = _plan(_record(ACCOUNT + "a", {"accountId": "a"}))
    base, head = tmp_path / "base", tmp_path / "head"
    for stack in ("dev", "llm", "prod"):  # the base has all three files; dev's preview wrote no plan
        (base / f"Pulumi.{stack}.yaml").parent.mkdir(parents=True, exist_ok=True)
        (base / f"Pulumi.{stack}.yaml").write_text("config: {}\n")
    for stack in ("dev", "llm"):  # the head removes prod's file; llm's preview wrote no plan
        (head / f"Pulumi.{stack}.yaml").parent.mkdir(parents=True, exist_ok=True)
        (head / f"Pulumi.{stack}.yaml").write_text("config: {}\n")
    for folder, stacks in ((base / "build", ("llm", "prod")), (head / "build", ("dev",))):
        for stack in stacks:
            (folder / stack).mkdir(parents=True)
            (folder / stack / "plan.json").write_text(json.dumps({**plan, "stack": stack}))
    out = tmp_path / "comment.md"
    args = ["diff", "--base", str(base / "build"), "--head", str(head / "build"), "--out", str(out)]
    assert cli.main([*args, "--base-stacks", str(base), "--head-stacks", str(head)]) == 0
    lines = out.read_text().splitlines()
    assert lines[4:8] == [
        "- `dev`: preview of the base failed",
        "- `llm`: preview failed on this pull request",
        "- `prod`: stack file removed on this pull request",
        "",
    ]
    assert lines[8:11] == [
        "### Stack `dev`: preview of the base failed",
        "",
        "The base branch has this stack file, but its preview wrote no plan (see the job log): there is nothing to "
        "compare this pull request's plan with.",
    ]
    assert "new stack" not in out.read_text()


def test_policy_findings_new_resolved_and_mandatory() -> None:
    urn = ACCOUNT + "a"
    kept = {"policy": "kept", "level": "mandatory", "urn": urn, "message": "still wrong"}
    fixed = {"policy": "fixed", "level": "advisory", "urn": urn, "message": "was wrong"}
    added = {"policy": "added", "level": "advisory", "urn": None, "message": "new"}
    quiet = {"policy": "quiet", "level": "advisory", "urn": urn, "message": "as before"}
    base = _plan(_record(urn, {}), violations=[kept, fixed, quiet])
    head = _plan(_record(urn, {}), violations=[kept, added, quiet])
    lines = plandiff.render_stack(plandiff.diff_stack("s", base, head)).splitlines()
    start = lines.index("**Policy findings** of this pull request: 1 mandatory, 2 advisory (1 new, 1 resolved)")
    assert lines[start + 1 :] == [
        "- new: [advisory] `added`: stack: new",
        "- [mandatory] `kept`: `gcp:serviceaccount/account:Account` `a`: still wrong",
        "- resolved: [advisory] `fixed`: `gcp:serviceaccount/account:Account` `a`: was wrong",
    ]


def test_quota_rows_for_a_team_added_and_removed_and_a_pool_group_removed() -> None:
    pool = {"machineType": "ct5lp-hightpu-4t", "topology": "2x4", "provisioning": "flex-start", "reservation": None,
            "calendar": False, "slices": 1, "vmsPerSlice": 2, "vms": 2, "chips": 8, "zone": "z",
            "usedBy": "kueue"}  # fmt: skip

    def team(quota: int, limit: int | None) -> dict[str, Any]:
        return {"namespace": "n", "localQueue": "l", "clusterQueue": "c",
                "flavors": {"v5e": {"nominalQuota": quota, "borrowingLimit": limit}}}  # fmt: skip

    base = {"capacity": {"v5e": pool, "old": pool}, "queues": {"cohort": "c", "teams": {"a": team(8, None)},
            "cohortQuota": {}}}  # fmt: skip
    head = {"capacity": {"v5e": pool}, "queues": {"cohort": "c", "teams": {"b": team(4, 2)}, "cohortQuota": {"v5e": 4}}}
    assert plandiff._capacity_lines(base, head, plandiff.StackDiff("s", None, None))[4:7] == [
        "| `old` | removed (was ct5lp-hightpu-4t 2x4, flex-start, 1 slice(s), 2 VM(s), 8 chips, z, for kueue) |",
        "",
        "In all: TPU chips 16 → 8, slices 2 → 1, VMs 4 → 2.",
    ]
    assert plandiff._queue_lines(base, head)[4:-1] == [
        "| `a` (team removed) | `v5e` | 8 → — | unlimited → — |",
        "| `b` (team added) | `v5e` | — → 4 | — → 2 |",
        "| cohort `c` (no team's share) | `v5e` | 0 → 4 | |",
    ]


def test_a_queue_in_no_cohort_has_no_borrowing_limit_to_show() -> None:
    def one_queue(chips: int) -> dict[str, Any]:
        return {"capacity": {}, "queues": {"cohort": None, "cohortQuota": {}, "teams": {"default": {
                "namespace": "default", "localQueue": "q", "clusterQueue": "c",
                "flavors": {"v5e": {"nominalQuota": chips, "borrowingLimit": None}}}}}}  # fmt: skip

    assert plandiff._queue_lines(one_queue(16), one_queue(24))[4:-1] == ["| `default` | `v5e` | 16 → 24 | - |"]


def test_text_from_the_plans_cannot_break_out_of_inline_code() -> None:
    assert plandiff._code("a|b") == "`a\\|b`"
    assert plandiff._code("x`y") == "`` x`y ``"


def _renamed_accounts(count: int, *, protect: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """Base and head plans of `count` service accounts whose display names change (one `→` line each)."""
    records = [_record(ACCOUNT + f"a{i:02}", {"accountId": f"a{i:02}", "displayName": "old"}, protect=protect)
               for i in range(count)]  # fmt: skip
    changed = [{**r, "inputs": {**r["inputs"], "displayName": "new"}} for r in records]
    return _plan(*records), _plan(*changed)


def test_a_comment_over_the_size_limit_is_cut_in_bytes_at_a_line_protected_stacks_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bound counts UTF-8 bytes, as the posting workflow cuts (each `→` is 3 bytes): this comment is within
    the limit in characters but not in bytes. prod (protected) comes first, every stack keeps its line at the top,
    and the note names the stacks not shown in full."""
    monkeypatch.setattr(plandiff, "MAX_BYTES", 3_700)
    monkeypatch.setattr(plandiff, "NOTE_BYTES", 800)
    dev, llm, prod = _renamed_accounts(30), _renamed_accounts(1), _renamed_accounts(1, protect=True)
    base, head = {"dev": dev[0], "llm": llm[0], "prod": prod[0]}, {"dev": dev[1], "llm": llm[1], "prod": prod[1]}
    text = plandiff.render(base, head)
    monkeypatch.setattr(plandiff, "MAX_BYTES", 1_000_000)
    whole = plandiff.render(base, head)
    assert len(whole) < 3_700 < len(whole.encode())
    assert len(text.encode()) <= 3_700
    lines = text.splitlines()
    assert lines[4:8] == [
        "- `prod`: 0 to create, 1 to update, 0 to replace, 0 to delete",
        "- `dev`: 0 to create, 30 to update, 0 to replace, 0 to delete",
        "- `llm`: 0 to create, 1 to update, 0 to replace, 0 to delete",
        "",
    ]
    assert lines[8] == "### Stack `prod`: 0 to create, 1 to update, 0 to replace, 0 to delete"
    dev_start = lines.index("### Stack `dev`: 0 to create, 30 to update, 0 to replace, 0 to delete")
    shown = lines[dev_start + 4 : -2]
    account = "- `gcp:serviceaccount/account:Account` `a{:02}`: inputs: `displayName` `old` → `new`"
    assert shown == [account.format(i) for i in range(len(shown))] and 0 < len(shown) < 30
    assert lines[-2:] == [
        "",
        "… cut at the size GitHub allows: `dev`, `llm` not shown in full; the run's `plan-diff-plans` artifact holds "
        "both plans.",
    ]


def test_a_long_list_ends_with_how_many_more() -> None:
    records = [_record(ACCOUNT + f"a{i:02}", {"accountId": f"a{i:02}"}) for i in range(45)]
    lines = plandiff.render_stack(plandiff.diff_stack("s", None, _plan(*records))).splitlines()
    start = lines.index("**Added** (45)")
    assert lines[start + 2] == "- `gcp:serviceaccount/account:Account` `a00`"
    assert lines[start + 41] == "- `gcp:serviceaccount/account:Account` `a39`"
    assert lines[start + 42] == "- … and 5 more (the run's `plan-diff-plans` artifact holds both plans)"


def test_the_base_plans_config_changes_nothing_for_a_change_free_pull_request(dev: dict[str, Plans]) -> None:
    section = _section(dev["base"], copy.deepcopy(dev["base"]))
    assert section.splitlines()[0] == "### Stack `dev`: no changes"


def _calendar_plan(slices: int) -> dict[str, Any]:
    from datetime import UTC, datetime, timedelta

    from offline.engine import run_program
    from tests.conftest import BASE

    start = (datetime.now(UTC) + timedelta(days=20)).replace(hour=0, minute=0, second=0, microsecond=0)
    window = {"startTime": start.isoformat(), "endTime": (start + timedelta(days=7)).isoformat()}
    pool = {"name": "cal", "machineType": "ct6e-standard-4t", "topology": "2x4", "slices": slices,
            "zone": "us-central1-b", "provisioning": "reservation", "futureReservation": window}  # fmt: skip
    plan = run_program({**BASE, "tpu-stack:tpuPools": [pool]}, stack="dev")
    return {"project": plan.project, "stack": "dev", "resources": plan.resources, "outputs": plan.outputs}


def test_running_slices_a_change_replaces_are_called_out_with_the_capacity() -> None:
    """Found by tests/properties: growing a calendar-mode group submits a new request for all its chips (a submitted
    request cannot change) and moves the running slice to it, which the comment showed only under Replaced while
    the capacity row read "slices 1 → 2". The capacity row says which running slices go, and why."""
    section = plandiff.render_stack(plandiff.diff_stack("dev", _calendar_plan(1), _calendar_plan(2)))
    row = next(line for line in section.splitlines() if line.startswith("| `cal` |"))
    assert row.startswith("| `cal` | reservation cal-")  # the request's name: `cal-<start date>-<digest>`
    assert row.endswith(
        ", slices 1 → 2, VMs 2 → 4, chips 8 → 16, **replaces running slice(s)** `cal-0`: deleted and created again, "
        "what runs on them stops; a calendar-mode request cannot change: the group's slices move to a new request, "
        "submitted now and usable once Compute approves it |"
    )


# ---- protection dropped in the same change as a replace or delete -------------------------------------------------


def _unprotected_and_reshaped(config: dict[str, Any]) -> None:
    """The key removed and, in the same change, the training slices' shape: 4x4 -> 2x4 (ForceNew: replaced)."""
    del config["tpu-stack:protected"]
    for pool in config["tpu-stack:tpuPools"][:2]:  # train and its ladder's second rung, burst: one shape
        pool["topology"] = "2x4"


def _unprotected(config: dict[str, Any]) -> None:
    del config["tpu-stack:protected"]


@pytest.fixture(scope="module")
def prod_us(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Plans]:
    """The prod fixture as prod-us, protected by the key; the key dropped alone; the key dropped with a reshape."""
    root = tmp_path_factory.mktemp("prod-us")
    return {
        name: _build(root / name, "prod-us", change, fixture="prod")
        for name, change in (("base", None), ("alone", _unprotected), ("reshaped", _unprotected_and_reshaped))
    }


def test_protection_dropped_with_a_replacement_fails_the_check_naming_the_stack_and_resources(
    prod_us: dict[str, Plans], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The engine refuses a replacement only while old and new are both protected (pulumi/pulumi
    pkg/resource/deploy/step_generator.go, `new.Protect && old.Protect`): dropping the key in the same change would
    replace the training slices. The check fails with one line; the comment is still written and says it first."""
    out = tmp_path / "comment.md"
    base, head = _folder(prod_us, "base", tmp_path), _folder(prod_us, "reshaped", tmp_path)
    assert cli.main(["diff", "--base", str(base), "--head", str(head), "--out", str(out)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: stack prod-us: this change drops protection and replaces gcp:container/nodePool:NodePool burst, "
        "gcp:container/nodePool:NodePool train-0, gcp:container/nodePool:NodePool train-1; land the change that drops "
        "protection on its own and deploy it first, then this one"
    ]
    section = out.read_text().split("### Stack `prod-us`", 1)[1]
    assert "**Protection dropped with replacements or deletes**" in section.split("**Capacity**")[0]


def test_protection_dropped_alone_passes_the_check(
    prod_us: dict[str, Plans], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "comment.md"
    base, head = _folder(prod_us, "base", tmp_path), _folder(prod_us, "alone", tmp_path)
    assert cli.main(["diff", "--base", str(base), "--head", str(head), "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""
    assert "Protection dropped" not in out.read_text()
