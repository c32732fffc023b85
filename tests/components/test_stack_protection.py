"""A protected stack is protected whatever its name: `tpu-stack:protected: true` does for `prod-us` all that the name
does for `prod` (components/stacks.py), in the program, the policy pack and the deploy order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config.base import ConfigError
from components.config.stack import load
from components.stacks import file_problem, file_setting, is_protected
from offline import __main__ as cli
from offline import commands, policy_check, stack_files
from offline.engine import run_stack
from offline.stack_files import deploy_order
from tests.conftest import StackRunner
from tests.fixtures import stack_data, stack_path, stack_plan

BASE = {"gcp:project": "proj-1234", "gcp:region": "us-central1"}
CHANNEL = {"tpu-stack:monitoring": {"notificationChannels": ["projects/proj-1234/notificationChannels/1"]}}
CLUSTER = "gcp:container/cluster:Cluster"


def prod_as(tmp_path: Path, name: str, **changes: Any) -> Path:
    """The prod fixture stack file under another name, with config keys changed (None removes one)."""
    document = yaml.safe_load(stack_path("prod").read_text())
    for key, value in changes.items():
        key = f"tpu-stack:{key}"
        if value is None:
            document["config"].pop(key, None)
        else:
            document["config"][key] = value
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


# ---- the setting --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("  tpu-stack:protected: true", True),
        ("  tpu-stack:protected: True  # our production", True),
        ('  "tpu-stack:protected": "true"', True),
        ("  tpu-stack:protected: 'false'", False),
        ("  tpu-stack:protected: maybe", None),
        ("  tpu-stack:protectedStacks: true", None),
        ("# tpu-stack:protected: true", None),
    ],
)
def test_a_stack_file_is_read_for_the_key_without_a_yaml_parser(line: str, expected: bool | None) -> None:
    assert file_setting(f"config:\n  gcp:project: p\n{line}\n") is expected


def test_protection_is_the_name_or_the_key() -> None:
    assert (is_protected("prod"), is_protected("production"), is_protected("prod-us")) == (True, True, False)
    assert (is_protected("prod-us", "true"), is_protected("prod-us", True), is_protected("dev", "false")) == (
        True,
        True,
        False,
    )


def test_the_key_protects_a_stack_of_any_name_and_demands_a_notification_channel() -> None:
    assert load({**BASE, "tpu-stack:protected": "true", **CHANNEL}, stack="prod-us").protected is True
    assert load(BASE, stack="prod-us").protected is False
    assert load({**BASE, **CHANNEL}, stack="production").protected is True
    with pytest.raises(ConfigError) as error:
        load({**BASE, "tpu-stack:protected": "true"}, stack="prod-us")
    assert error.value.lines == [
        "tpu-stack:monitoring.notificationChannels: prod-us is a protected stack and its alert policies would notify "
        "nobody; list the channels to notify, projects/<project>/notificationChannels/<id> (gcloud beta monitoring "
        "channels list; create one with gcloud beta monitoring channels create)"
    ]


def test_protected_false_on_a_stack_protected_by_its_name_is_refused() -> None:
    with pytest.raises(ConfigError) as error:
        load({**BASE, "tpu-stack:protected": "false", **CHANNEL}, stack="prod")
    assert error.value.lines == [
        "tpu-stack:protected: the prod stack is protected by its name; remove `protected: false`, or give an "
        "unprotected stack another name"
    ]


def test_the_key_takes_only_true_or_false() -> None:
    with pytest.raises(ConfigError) as error:
        load({**BASE, "tpu-stack:protected": "yes"}, stack="dev")
    assert error.value.lines == ["tpu-stack:protected: 'yes' is not true or false"]


def test_a_cluster_kept_from_deletion_in_an_unprotected_stack_is_a_warning() -> None:
    cluster = {"tpu-stack:cluster": {"deletionProtection": True}}
    assert load({**BASE, **cluster}, stack="prod-us").warnings == [
        "tpu-stack:cluster.deletionProtection: true, but the prod-us stack is not protected: `pulumi destroy` would "
        "delete everything but the cluster; set tpu-stack:protected: true if it is a production stack"
    ]
    assert load({**BASE, **cluster, **CHANNEL, "tpu-stack:protected": "true"}, stack="prod-us").warnings == []
    assert load({**BASE, **cluster, **CHANNEL}, stack="prod").warnings == []


# ---- the program --------------------------------------------------------------------------------------------------


def test_the_key_protects_the_cluster(run: StackRunner) -> None:
    plan = run({"tpu-stack:protected": "true", **CHANNEL}, stack="prod-us")
    (cluster,) = plan.by_type(CLUSTER)
    assert cluster["protect"] is True


def test_prod_under_another_name_with_the_key_is_protected_exactly_as_prod(tmp_path: Path) -> None:
    """The prod fixture sets the key; a copy named prod-us protects the same resources. Without the key the copy
    protects only its buckets (every stack that is not throwaway keeps its data) and its preview warns (its cluster
    keeps deletionProtection)."""
    assert stack_data("prod")["tpu-stack:protected"] is True
    prod = stack_plan("prod", render_charts=False)
    ours = run_stack("prod-us", config_file=prod_as(tmp_path, "prod-us"), render_charts=False)
    protected = sorted(r["urn"].split("::", 1)[1] for r in prod.resources if r["protect"])
    assert len(protected) > 100
    assert sorted(r["urn"].split("::", 1)[1] for r in ours.resources if r["protect"]) == protected
    bare = run_stack("prod-us", config_file=prod_as(tmp_path, "prod-us", protected=None), render_charts=False)
    assert {r["type"] for r in bare.resources if r["protect"]} == {"gcp:storage/bucket:Bucket"}
    assert any("cluster.deletionProtection: true, but the prod-us stack" in m for _, m in bare.logged)


# ---- the policy pack ----------------------------------------------------------------------------------------------


def test_the_policy_pack_reads_the_key_from_the_stack_config_the_cli_hands_it(tmp_path: Path) -> None:
    """The CLI starts the pack with the stack's config in PULUMI_CONFIG: an unprotected resource of prod-us is refused
    when its config sets the key, as in prod, and passes when it does not."""
    plan = run_stack("prod-us", config_file=prod_as(tmp_path, "prod-us"), render_charts=False)
    resources = [{**r, "protect": False} if r["type"] == CLUSTER else r for r in plan.resources]
    team = commands.read_policy_config(policy_check.TEAM_CONFIG)  # prod's reviewed tag-pinned images
    found = policy_check.evaluate(resources, stack="prod-us", config=team, stack_config=plan.config)
    assert [(v["policy"], v["level"], v["urn"].rsplit("::", 1)[1]) for v in found if v["level"] == "mandatory"] == [
        ("protected-stack-resources", "mandatory", "tpu-prod")
    ]
    unset = {k: v for k, v in plan.config.items() if k != "tpu-stack:protected"}
    assert [v for v in policy_check.evaluate(resources, stack="prod-us", config=team, stack_config=unset)
            if v["level"] == "mandatory"] == []  # fmt: skip


def test_a_preview_of_prod_under_another_name_passes_the_pack_as_prod_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The images-by-digest exceptions and the cluster-network rules of a protected stack apply to prod-us too."""
    policies = str(policy_check.TEAM_CONFIG)
    found = {}
    for stack, path in (("prod", stack_path("prod")), ("prod-us", prod_as(tmp_path, "prod-us"))):
        out = tmp_path / stack
        assert cli.main(["preview", "--stack", stack, "--config", str(path), "--out", str(out), "--quiet",
                         "--policy-config", policies]) == 0, capsys.readouterr().err  # fmt: skip
        violations = json.loads((out / "plan.json").read_text())["violations"]
        found[stack] = sorted((v["policy"], v["urn"].split("::", 1)[1]) for v in violations)
    assert found["prod-us"] == found["prod"]


# ---- the deploy order ---------------------------------------------------------------------------------------------


def test_a_stack_protected_by_the_key_deploys_after_every_unprotected_one(tmp_path: Path) -> None:
    files = {"dev": "config: {}\n", "prod": "config: {}\n", "zeta": "config: {}\n"}
    files["acme-prod"] = "config:\n  gcp:project: acme\n  tpu-stack:protected: true  # our production\n"
    for name, text in files.items():
        (tmp_path / f"Pulumi.{name}.yaml").write_text(text)
    paths = {name: tmp_path / f"Pulumi.{name}.yaml" for name in files}
    assert deploy_order(paths) == ["dev", "zeta", "acme-prod", "prod"]


# ---- the cluster of a protected stack (config time, not only the policy pack at preview) -------------------------


def test_a_protected_stack_keeps_its_cluster_from_deletion_by_default() -> None:
    """The key and the name both turn the cluster's deletionProtection on without it being written; an unprotected
    stack keeps the provider's default (off)."""
    assert load({**BASE, "tpu-stack:protected": "true", **CHANNEL}, stack="prod-us").cluster.deletion_protection
    assert load({**BASE, **CHANNEL}, stack="prod").cluster.deletion_protection
    assert load(BASE, stack="prod-us").cluster.deletion_protection is False


@pytest.mark.parametrize(
    ("cluster", "line"),
    [
        (
            {"deletionProtection": False},
            "tpu-stack:cluster.deletionProtection: {stack} is a protected stack and its cluster must be kept from "
            "deletion; remove `deletionProtection: false`",
        ),
        (
            {"privateNodes": False},
            "tpu-stack:cluster.privateNodes: {stack} is a protected stack and its nodes must have no external IP "
            "addresses; remove `privateNodes: false`",
        ),
        (
            {"controlPlane": {"ipEndpoint": True, "authorizedNetworks": ["203.0.113.0/24"]}},
            "tpu-stack:cluster.controlPlane.ipEndpoint: {stack} is a protected stack and its control plane is reached "
            "only through its DNS endpoint; remove `ipEndpoint: true` (and its authorizedNetworks)",
        ),
    ],
)
@pytest.mark.parametrize(("stack", "key"), [("prod-us", {"tpu-stack:protected": "true"}), ("production", {})])
def test_what_the_policy_pack_refuses_in_a_protected_cluster_is_refused_by_the_config(
    cluster: dict[str, Any], line: str, stack: str, key: dict[str, str]
) -> None:
    with pytest.raises(ConfigError) as error:
        load({**BASE, **key, **CHANNEL, "tpu-stack:cluster": cluster}, stack=stack)
    assert error.value.lines == [line.format(stack=stack)]
    assert load({**BASE, **CHANNEL, "tpu-stack:cluster": cluster}, stack="dev")  # unprotected: accepted


# ---- a stack file the deploy order could misread ------------------------------------------------------------------

KEY_LINE = "tpu-stack:protected: write it as one line `  tpu-stack:protected: true` (or false) under `config:`"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("config:\n  gcp:project: p\n  tpu-stack:protected: true  # ours\n", None),
        ("config:\n  tpu-stack:protected: false\n", None),
        ("config:\n  gcp:project: p\n", None),
        ("# tpu-stack:protected: true is what prod-us sets\nconfig:\n  gcp:project: p\n", None),
        ("config:\n  tpu-stack:protectedStacks: x\n", None),  # another key (the program refuses it)
        ("config: {gcp:project: p, tpu-stack:protected: true}\n", f"{KEY_LINE}, not 'config: {{gcp:project: p, "
         "tpu-stack:protected: true}'"),
        ("config:\n  tpu-stack:protected: yes\n", f"{KEY_LINE}, not 'tpu-stack:protected: yes'"),
        ("config:\n  tpu-stack:protected:\n    true\n", f"{KEY_LINE}, not 'tpu-stack:protected:'"),
        ("config:\n  tpu-stack:protected: true\n  tpu-stack:protected: false\n",
         "tpu-stack:protected: set 2 times; keep one line"),
        ("environment:\n  - prod-settings\nconfig:\n  gcp:project: p\n",
         "tpu-stack:protected: the file imports an ESC environment, which may set the key where the deploy order "
         "cannot read it; set `tpu-stack:protected: true` (or false) in the file itself"),
        ("environment:\n  - prod-settings\nconfig:\n  tpu-stack:protected: false\n", None),
    ],
)  # fmt: skip
def test_a_stack_file_that_sets_the_key_in_a_form_the_deploy_order_cannot_read_is_an_error(
    text: str, problem: str | None
) -> None:
    assert file_problem(text) == problem


def test_the_workflows_stack_list_stops_on_such_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m offline.stack_files` (the deploy and preview matrices) exits 2 naming the file, so no stack deploys
    in an order that misread one."""
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  gcp:project: p\n")
    (tmp_path / "Pulumi.acme.yaml").write_text("config: {tpu-stack:protected: true}\n")
    assert stack_files.main(["--root", str(tmp_path)]) == 2
    assert capsys.readouterr() == (
        "",
        f"error: {tmp_path / 'Pulumi.acme.yaml'}: {KEY_LINE}, not 'config: {{tpu-stack:protected: true}}'\n",
    )
