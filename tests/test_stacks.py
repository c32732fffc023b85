"""Every stack file at the top, whatever its name and content, passes what holds for any config; the fixture stacks
have the shapes the platform team agreed on.

The top-level `Pulumi.<stack>.yaml` files are the users': a team edits, adds and removes them. The tests marked
`every_stack_file` are the only ones that read them (tests/conftest.py stops any other), and they check each file
present generically, as CI checks it before a deploy: the stack schema, `make preview` exits 0 (a valid config and no
mandatory policy violation in either view), the lifecycle catalogue's rules for a first `up`, and what the security
scan reads (the rendered manifests and example workloads). The last test makes a team's edits to a copy of the
fixture stacks and checks the result the same way, with no other edit.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from components.config.stack import load
from components.stacks import file_is_protected, file_problem
from offline import __main__ as cli
from offline import configdocs, policy_check
from offline.engine import REPO, Plan, _engine_config, read_stack_file
from offline.stack_files import deploy_order, stack_files
from security.__main__ import collect
from tests.fixtures import FIXTURE_STACKS, stack_data, stack_path, stack_plan
from tests.guard import UsersStackFileRead, refusal
from tests.lifecycle.catalogue import CATALOGUE

USERS_STACKS = stack_files()
SCHEMA = jsonschema.Draft7Validator(json.loads(configdocs.SCHEMA_FILE.read_text()))


def problems(stack: str, path: Path, out: Path) -> list[str]:
    """What must hold for any stack file, one line per problem; [] when the stack may be deployed."""
    document = yaml.safe_load(path.read_text())
    found = [f"schema: {list(e.absolute_path)}: {e.message}" for e in SCHEMA.iter_errors(document)]
    order = file_problem(path.read_text())  # the deploy order reads the key from the text (components/stacks.py)
    found += [f"deploy order: {order}"] if order else []
    preview = ["--stack", stack, "--config", str(path), "--out", str(out / stack)]
    code = cli.main(["preview", *preview, "--quiet", "--policy-config", str(policy_check.TEAM_CONFIG)])
    if code != 0:
        return [*found, f"`make preview STACK={stack}` exits {code} (1: a mandatory policy violation, 2: bad config)"]
    plan = json.loads((out / stack / "plan.json").read_text())
    declared = {r["type"] for r in plan["resources"]}
    found += [f"catalogue: no replacement rule for {t}" for t in sorted(declared - set(CATALOGUE.replaces))]
    found += [f"catalogue: {line}" for line in CATALOGUE.breaches(plan["resources"], plan["outputs"])]
    if cli.main(["workloads", *preview]) != 0:
        return [*found, f"`make workloads STACK={stack}` failed"]
    if collect(out, [stack], out / "scan") == 0:
        found.append("scan: nothing rendered to scan")
    return found


@pytest.mark.every_stack_file
@pytest.mark.parametrize("stack", USERS_STACKS)
def test_every_stack_file_may_be_deployed(stack: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = problems(stack, USERS_STACKS[stack], tmp_path)
    assert found == [], capsys.readouterr().err


EVERY_FILE = {
    **{f"fixture {s}": (s, stack_path(s)) for s in FIXTURE_STACKS},
    **{s: (s, p) for s, p in USERS_STACKS.items()},
}


@pytest.mark.every_stack_file
@pytest.mark.parametrize("where", EVERY_FILE)
def test_the_deploy_order_reads_protection_as_the_program_does(where: str) -> None:
    """The workflows order the stacks before anything is installed, from each file's text (components/stacks.py):
    what they read must be what the program decides, or a protected stack would deploy among the unprotected."""
    stack, path = EVERY_FILE[where]
    config = load(_engine_config(read_stack_file(path)), stack=stack)
    assert file_problem(path.read_text()) is None
    assert file_is_protected(stack, path) is config.protected


@pytest.mark.every_stack_file
def test_no_two_stack_files_manage_one_cluster() -> None:
    """Two stacks with the same project, location and cluster name would each hold the cluster in their own state:
    each `up` would undo the other's changes and a destroy of one would delete the other's cluster."""
    clusters: dict[tuple[str, str, str], str] = {}
    for stack, path in USERS_STACKS.items():
        config = load(_engine_config(read_stack_file(path)), stack=stack)
        key = (config.project, config.cluster_location, config.cluster.name)
        assert key not in clusters, f"{stack} and {clusters[key]} both manage cluster {key}"
        clusters[key] = stack


# ---- a team's own stacks: edited, added, removed -------------------------------------------------------------------


def team_edits(dev: dict[str, Any]) -> None:
    """What a team does to its copy of dev: grows a pool group, adds a ladder rung, a team and a vLLM server. Each
    pool the edits make the same shape as another carries a label of its own (the config refuses it otherwise)."""
    config = dev["config"]
    pools = config["tpu-stack:tpuPools"]
    for pool in pools:
        pool.setdefault("labels", {"pool": pool["name"]})
    multislice = next(p for p in pools if p["name"] == "multislice")
    multislice["slices"] = 4
    pools.append(
        {
            "name": "multislice-od",
            "machineType": "ct6e-standard-4t",
            "topology": "2x4",
            "slices": 1,
            "provisioning": "on-demand",
            "zone": "us-east5-b",
            "labels": {"pool": "multislice-od"},
        }
    )
    pools.append({"name": "serve-v6e", "machineType": "ct6e-standard-4t", "provisioning": "on-demand",
                  "zone": "us-east5-a", "labels": {"pool": "serve-v6e"}})  # fmt: skip
    queues = config["tpu-stack:queues"]
    # on-demand, billed while up: before spot and flex-start, which dev makes on request (issue 27, defect 8)
    queues["ladders"]["multislice"].insert(0, "multislice-od")
    queues["teams"].append({"name": "inference", "shares": {"multislice": 8, "multislice-od": 8}})
    config["tpu-stack:serving"] = {
        "huggingFaceToken": {"secret": "hf-token"},
        "service": {"sourceRanges": ["10.20.0.0/24"]},
        "servers": [{"name": "llama-31-8b", "pool": "serve-v6e", "model": "meta-llama/Llama-3.1-8B-Instruct",
                     "billionsOfParameters": 8, "replicas": 1, "maxModelLen": 4096}],
    }  # fmt: skip


def test_a_team_edits_dev_adds_a_stack_and_removes_one_with_no_other_edit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fresh clone's stacks (here the fixture stacks) after a team's changes: dev edited, `ourdev` added as
    `pulumi stack init` writes it (no comments, a passphrase salt), llm removed. The stack list the scan and the
    workflows read follows, prod still deploys last, and the stacks changed pass every generic check."""
    root = tmp_path / "repo"
    root.mkdir()
    for stack in FIXTURE_STACKS:
        shutil.copy(stack_path(stack), root / f"Pulumi.{stack}.yaml")
    shutil.copy(REPO / "Makefile", root / "Makefile")
    dev = yaml.safe_load(stack_path("dev").read_text())
    team_edits(dev)
    (root / "Pulumi.dev.yaml").write_text(yaml.safe_dump(dev, sort_keys=False))
    config = {**copy.deepcopy(stack_data("dev")), "gcp:project": "our-ml-dev", "tpu-stack:cluster": {"name": "our-dev"}}
    ours = {"encryptionsalt": "v1:c2FsdA==:v1:bm9uY2U=:dGFn", "config": config}
    (root / "Pulumi.ourdev.yaml").write_text(yaml.safe_dump(ours, sort_keys=False))
    (root / "Pulumi.llm.yaml").unlink()

    assert list(stack_files(root)) == ["dev", "ironwood", "multiregion", "ourdev", "prod"]
    assert deploy_order(stack_files(root)) == ["dev", "ironwood", "multiregion", "ourdev", "prod"]
    show = "print-scan-stacks: ; @echo $(SCAN_STACKS)"
    scanned = subprocess.run(["make", "-s", "--eval", show, "print-scan-stacks"], cwd=root, capture_output=True,
                             text=True, check=True).stdout.split()  # fmt: skip
    assert scanned == ["dev", "ironwood", "multiregion", "ourdev", "prod"]
    for stack in ("dev", "ourdev"):
        assert problems(stack, stack_files(root)[stack], tmp_path / "build") == [], capsys.readouterr().err
    capacity = json.loads((tmp_path / "build" / "dev" / "plan.json").read_text())["summary"]["capacity"]
    assert (capacity["multislice"]["slices"], capacity["multislice-od"]["chips"], capacity["serve-v6e"]["chips"]) == (
        4, 8, 4,
    )  # fmt: skip


def test_a_stack_that_cannot_be_deployed_is_named_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The generic checks fail on what a team could get wrong: a config error (exit 2), and the schema with it."""
    dev = yaml.safe_load(stack_path("dev").read_text())
    dev["config"]["tpu-stack:tpuPools"][1]["slices"] = "three"
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(dev))
    assert problems("dev", path, tmp_path / "build") == [
        "schema: ['config', 'tpu-stack:tpuPools', 1, 'slices']: 'three' is not of type 'integer'",
        "`make preview STACK=dev` exits 2 (1: a mandatory policy violation, 2: bad config)",
    ]
    assert "tpu-stack:tpuPools[1].slices" in capsys.readouterr().err


def test_a_stack_file_the_deploy_order_could_misread_is_named(tmp_path: Path) -> None:
    """prod's config in flow style under another name: the program reads the key, the deploy order's line would
    not, and would deploy the stack among the unprotected ones."""
    prod = yaml.safe_load(stack_path("prod").read_text())
    path = tmp_path / "Pulumi.prod-us.yaml"
    path.write_text(yaml.safe_dump({"config": prod["config"]}, default_flow_style=True, width=100_000))
    assert problems("prod-us", path, tmp_path / "build") == [
        "deploy order: tpu-stack:protected: write it as one line `  tpu-stack:protected: true` (or false) under "
        f"`config:`, not {path.read_text().strip()!r}"
    ]


# ---- the fixture stacks: the shapes their expectations were written from -------------------------------------------


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    return {stack: stack_plan(stack) for stack in ("dev", "llm", "prod")}


def shapes(plan: Plan) -> dict[str, tuple[str, int, int, int]]:
    """Pool group -> (topology, slices, VMs per slice, chips of the group), as the stack outputs them."""
    pools = plan.outputs["tpuPools"]
    return {name: (p["topology"], p["slices"], p["vmsPerSlice"], p["chips"]) for name, p in pools.items()}


def tpu_node_counts(plan: Plan) -> dict[str, int]:
    """Node pool -> the most nodes it holds: nodeCount of a fixed pool, the autoscaling maximum otherwise."""
    counts = {}
    for pool in plan.by_type("gcp:container/nodePool:NodePool"):
        inputs = pool["inputs"]
        if not inputs["nodeConfig"]["machineType"].startswith("ct"):
            continue
        scaling = inputs.get("autoscaling") or {}
        counts[inputs["name"]] = inputs.get("nodeCount") or scaling.get("maxNodeCount") or scaling["totalMaxNodeCount"]
    return counts


def test_dev_is_the_flex_start_and_multislice_seeds(plans: dict[str, Plan]) -> None:
    """A ct6e-standard-4t slice is 2x2 = 4 chips on one VM; a v5e 2x4 slice is 8 chips on 2 VMs of 4 chips. The
    multislice ladder's spot rung, tried first, has the flex-start rung's shape: one v5e 2x4 slice (it had three),
    whose single node pool is named after its group."""
    plan = plans["dev"]
    assert shapes(plan) == {
        "flex-v6e": ("2x2", 1, 1, 4),
        "multislice": ("2x4", 3, 2, 24),
        "multislice-spot": ("2x4", 1, 2, 8),
    }
    assert tpu_node_counts(plan) == {
        "flex-v6e": 1, "multislice-0": 2, "multislice-1": 2, "multislice-2": 2, "multislice-spot": 2,
    }  # fmt: skip


def test_prod_trains_bursts_and_serves_on_v5e_slices(plans: dict[str, Plan]) -> None:
    """v5e (4 chips a VM): 4x4 = 16 chips on 4 VMs, 4x8 = 32 chips on 8 VMs. burst has train's shape: the train
    ladder falls back to it."""
    plan = plans["prod"]
    assert shapes(plan) == {"train": ("4x4", 2, 4, 32), "burst": ("4x4", 1, 4, 16), "serve": ("4x8", 2, 8, 64)}
    assert tpu_node_counts(plan) == {"train-0": 4, "train-1": 4, "burst": 4, "serve-0": 8, "serve-1": 8}


def test_llm_serves_one_model_on_single_host_and_one_on_multi_host_slices(plans: dict[str, Plan]) -> None:
    """A ct6e-standard-8t VM is a whole 2x4 slice (8 chips); a v5e 4x4 slice is 16 chips on 4 VMs of 4."""
    plan = plans["llm"]
    assert shapes(plan) == {"llm-v6e": ("2x4", 2, 1, 16), "llm-v5e": ("4x4", 3, 4, 48)}
    served = {name: (s["kind"], s["replicas"], s["hostsPerReplica"]) for name, s in plan.outputs["serving"].items()}
    assert served == {"llama-31-70b": ("Deployment", 1, 1), "llama-33-70b": ("LeaderWorkerSet", 2, 4)}
    assert plan.outputs["flavors"] == {}  # every pool group serves: none is Kueue capacity


def test_the_guard_stops_a_test_that_reads_a_users_stack_file() -> None:
    """tests/conftest.py: outside the generic checks, opening a top-level stack file fails the test at once."""
    with pytest.raises(UsersStackFileRead, match=r"Pulumi\.dev\.yaml belongs to the users"):
        (REPO / "Pulumi.dev.yaml").read_text()
    with pytest.raises(UsersStackFileRead):
        (REPO / "Pulumi.any-name.yaml").open()
    assert stack_path("dev").read_text() and (REPO / "Pulumi.yaml").read_text()


def test_the_guard_follows_dot_dot_and_symlinks(tmp_path: Path) -> None:
    """The path as the kernel resolves it: `tests/../Pulumi.dev.yaml`, a link named anything, a linked folder."""
    with pytest.raises(UsersStackFileRead, match=r"Pulumi\.dev\.yaml belongs to the users"):
        open(REPO / "tests" / ".." / "Pulumi.dev.yaml")  # noqa: SIM115 - refused before it opens
    (tmp_path / "mine.yaml").symlink_to(REPO / "Pulumi.dev.yaml")
    with pytest.raises(UsersStackFileRead, match=r"Pulumi\.dev\.yaml belongs to the users"):
        (tmp_path / "mine.yaml").read_text()
    (tmp_path / "checkout").symlink_to(REPO)
    with pytest.raises(UsersStackFileRead):
        (tmp_path / "checkout" / "Pulumi.prod.yaml").read_text()
    (tmp_path / "fixture.yaml").symlink_to(stack_path("dev"))
    assert (tmp_path / "fixture.yaml").read_text() == stack_path("dev").read_text()


@pytest.mark.parametrize(
    "command",
    [
        ["cat", "Pulumi.dev.yaml"],
        ["cat", str(REPO / "tests" / ".." / "Pulumi.prod.yaml")],
        [sys.executable, "-m", "offline", "preview", "--stack", "dev"],
        [sys.executable, "-m", "offline", "workloads", "--stack", "dev", "--out", "build"],
        [sys.executable, "-m", "offline.urns", "--cluster-urns", "--stack", "dev", "--state", "state.json"],
        ["make", "-s", "preview"],
        ["make", "-C", str(REPO), "scan"],
        ["sh", "-c", "echo start && make preview STACK=prod"],
        ["bash", "-c", "grep -c tpu Pulumi.ourdev.yaml; true"],
    ],
)
def test_the_guard_stops_a_command_that_would_read_a_users_stack_file(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused before the command starts, whichever way it is started."""
    with pytest.raises(UsersStackFileRead):
        subprocess.run(command, cwd=REPO, capture_output=True, check=False)
    monkeypatch.chdir(REPO)
    with pytest.raises(UsersStackFileRead):
        os.system(shlex.join(command))  # refused before the shell starts


def test_the_guard_lets_commands_on_fixtures_and_copies_run(tmp_path: Path) -> None:
    allowed = [
        [sys.executable, "-m", "offline", "preview", "--stack", "dev", "--config", str(stack_path("dev"))],
        [sys.executable, "-m", "offline.stack_files"],
        ["make", "-s", "--eval", "x: ; @true", "x"],  # in a copy of the project, below
        ["cat", "Pulumi.dev.yaml"],  # the copy's own file
        ["git", "-C", str(tmp_path), "checkout", "--", "Pulumi.dev.yaml"],  # git in the copy
    ]
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    for command in allowed:
        assert refusal(command, tmp_path if command[0] in ("make", "cat") else REPO) is None, command
    assert refusal(["git", "-C", str(REPO), "checkout", "--", "Pulumi.dev.yaml"], tmp_path) is not None
    done = subprocess.run(["cat", "Pulumi.dev.yaml"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert done.stdout == "config: {}\n"


@pytest.mark.every_stack_file
def test_the_guard_lets_the_generic_checks_read_them() -> None:
    assert all(path.read_text() for path in USERS_STACKS.values())
