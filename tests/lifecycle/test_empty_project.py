"""From an empty project to the first `up` (issue 27): APIs, network, the cluster phase as the README and the deploy
workflow run it, then the rest; judged by the engine model (offline/lifecycle.py) and the catalogue.

An empty project has no API on and may have no network (constraints/compute.skipDefaultNetworkCreation). Service Usage
and Resource Manager are turned on by hand before anything (the provider calls both to enable any API; the catalogue's
`apis-on-by-hand` rule holds the plan to it), with Cloud KMS, STS and IAM credentials for the secrets and CI. The first
`up` of a new stack runs in two phases: the resources `python -m offline.urns --cluster-targets` lists (the cluster's
component and everything it depends on), with the preview skipped, since the kubernetes provider renders the charts
against a live cluster; then the whole stack, whose preview is the first that shows the charts' objects.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from offline.engine import Plan
from offline.lifecycle import depends_on
from offline.urns import _Resolver, cluster_targets, target_flags
from offline.vendor import REPO
from tests.fixtures import stack_data, stack_path, stack_plan
from tests.lifecycle.catalogue import CATALOGUE
from tests.lifecycle.conftest import Records, plan, step

STACKS = ("dev", "prod", "llm", "multiregion")


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    return {stack: stack_plan(stack) for stack in STACKS}


def _phase_one(plan: Plan) -> Records:
    """The records the cluster phase's `--target` list names (engine URNs mapped back to the plan's)."""
    targets = set(cluster_targets(plan))
    resolver = _Resolver(plan)
    return [r for r in plan.resources if resolver.current(r["urn"]) in targets]


@pytest.mark.parametrize("stack", STACKS)
def test_from_nothing_the_first_up_creates_everything_and_breaks_no_rule(plans: dict[str, Plan], stack: str) -> None:
    records = plans[stack].resources
    steps = step([], records)
    assert steps.refused == []
    assert len(steps.of("create")) == len(records)
    assert CATALOGUE.breaches(records, {}) == []


@pytest.mark.parametrize("stack", STACKS)
def test_the_cluster_phase_is_closed_and_creates_nothing_in_the_cluster(plans: dict[str, Plan], stack: str) -> None:
    """`--target` skips what is not listed, and the engine refuses a target that needs a skipped create: the list
    holds every dependency and parent of its members, and no chart or Kubernetes object (their provider renders and
    applies them against the cluster being created)."""
    first = _phase_one(plans[stack])
    urns = {r["urn"] for r in first}
    declared = {r["urn"] for r in plans[stack].resources}
    for record in first:
        assert set(record["dependencies"]) <= urns, record["name"]
        assert record["parent"] in urns or record["parent"] not in declared, record["name"]  # or the root stack
    types = {r["type"] for r in first}
    assert not any(t.startswith("kubernetes:") for t in types)
    assert "gcp:projects/service:Service" in types and "gcp:compute/network:Network" in types
    assert "pulumi:providers:kubernetes" in types
    assert not any(r["type"] == "gcp:container/nodePool:NodePool" and r["name"] != f"{r['inputs']['cluster']}-system"
                   for r in first)  # fmt: skip


def test_in_the_cluster_phase_apis_come_first_then_the_network_then_the_cluster(plans: dict[str, Plan]) -> None:
    records = {r["urn"]: r for r in plans["prod"].resources}

    def urn(type_token: str, name: str) -> str:
        return plans["prod"].one(type_token, name)["urn"]

    cluster = urn("gcp:container/cluster:Cluster", "tpu-prod")
    assert depends_on(records, cluster, urn("gcp:projects/service:Service", "apis-container"))
    assert depends_on(records, cluster, urn("gcp:compute/subnetwork:Subnetwork", "tpu-prod-nodes"))
    assert depends_on(records, urn("gcp:compute/subnetwork:Subnetwork", "tpu-prod-nodes"),
                      urn("gcp:compute/network:Network", "network-vpc"))  # fmt: skip
    assert depends_on(records, urn("gcp:compute/network:Network", "network-vpc"),
                      urn("gcp:projects/service:Service", "apis-compute"))  # fmt: skip
    bucket = next(r for r in plans["prod"].resources if r["type"] == "gcp:storage/bucket:Bucket")
    assert depends_on(records, bucket["urn"], urn("gcp:projects/service:Service", "apis-storage"))


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_second_phase_creates_the_rest_and_touches_nothing_of_the_first(plans: dict[str, Plan], stack: str) -> None:
    first = _phase_one(plans[stack])
    steps = step(first, plans[stack].resources)
    assert steps.refused == []
    assert len(steps.of("create")) == len(plans[stack].resources) - len(first)
    assert steps.of("replace") == [] and steps.of("delete") == [] and steps.of("update") == []


def test_the_readme_and_the_workflow_run_the_cluster_phase_without_a_preview() -> None:
    """A new stack's charts are rendered by the kubernetes provider from a live cluster: the cluster phase runs with
    the preview skipped (what the Automation API behind pulumi/actions does: `up --yes --skip-preview`,
    pulumi/pulumi sdk/nodejs/automation/stack.ts), and the README says a new stack's preview cannot show the charts'
    objects before its cluster exists."""
    readme = (REPO / "README.md").read_text()
    first = readme[readme.index("**First deployment of a new stack.**") :]
    first = first[: first.index("\n\n`Pulumi.yaml`")]
    assert "--skip-preview $(.venv/bin/python -m offline.urns --cluster-targets --stack dev)" in first
    assert "cannot show or check what its charts create before its cluster\nexists" in first
    workflow = (REPO / ".github" / "workflows" / "deploy.yml").read_text()
    assert "--cluster-urns" in workflow


def test_each_day0_rule_catches_its_breach(plans: dict[str, Plan]) -> None:
    records = copy.deepcopy(plans["prod"].resources)
    services = {r["name"]: r["urn"] for r in records if r["type"] == "gcp:projects/service:Service"}
    component = next(r for r in records if r["type"] == "tpu-stack:index:Bucket")
    component["dependencies"] = [d for d in component["dependencies"] if d != services["apis-storage"]]
    # Both of prod's buckets (datasets, checkpoints) wait for the Cloud Storage API through their component.
    assert CATALOGUE.breaches(records, {}) == [
        "api-before-first-resource: data-bucket may be created before storage.googleapis.com is enabled",
        "api-before-first-resource: data-checkpoints may be created before storage.googleapis.com is enabled",
    ]

    records = copy.deepcopy(plans["prod"].resources)
    cluster = next(r for r in records if r["type"] == "gcp:container/cluster:Cluster")
    subnet = next(r for r in records if r["type"] == "gcp:compute/subnetwork:Subnetwork")
    cluster["dependencies"] = [d for d in cluster["dependencies"] if d != subnet["urn"]]
    assert CATALOGUE.breaches(records, {}) == [
        "network-before-cluster: tpu-prod may be created before its subnetwork tpu-prod-nodes"
    ]

    records = copy.deepcopy(plans["prod"].resources)
    subnet = next(r for r in records if r["type"] == "gcp:compute/subnetwork:Subnetwork")
    subnet["inputs"]["secondaryIpRanges"][0]["ipCidrRange"] = "10.0.0.0/21"
    # 8 system nodes x 256 + 28 TPU VMs x 32 = 2,944 > 2,048.
    assert CATALOGUE.breaches(records, {}) == [
        "ranges-hold-the-largest: tpu-prod: pod range 10.0.0.0/21 holds 2048 addresses, its pools need 2944"
    ]


def test_an_empty_project_with_no_default_network_needs_nothing_of_it() -> None:
    """No resource of a stack names the `default` network (organisations may have none)."""
    for stack in STACKS:
        config: dict[str, Any] = stack_data(stack)
        assert all(r["inputs"].get("network") != "default" for r in plan(stack, config))


RECORDING_PULUMI = """\
import json, os, sys

with open(os.environ["PULUMI_ARGV"], "w") as out:
    json.dump(sys.argv[1:], out)
"""


def _readme_first_up() -> str:
    """The README's first `pulumi up` of a new stack, as written (two lines joined by a backslash)."""
    readme = (REPO / "README.md").read_text()
    block = readme[readme.index("**First deployment of a new stack.**") :]
    block = block[block.index("```bash\n") + len("```bash\n") : block.index("\n```", block.index("```bash"))]
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("pulumi up ") and line.endswith("\\"))
    return "\n".join(lines[start : start + 2])


def test_the_readmes_first_up_hands_pulumi_the_cluster_urns_as_they_are(tmp_path: Path) -> None:
    """The README's line, run by bash as written, with a `pulumi` that records its arguments: the shell removes no
    quotes from a command substitution's output and splits it at whitespace, so the targets must be printed bare
    (`--target=<urn>`); a quoted one reaches the engine with its quotes, and the engine stops at a target it cannot
    find (pulumi pkg/resource/deploy/deployment_executor.go checkTargets). Run in a project directory holding the
    dev fixture as its Pulumi.dev.yaml (the file `pulumi` and the command read there)."""
    if shutil.which("bash") is None:
        pytest.skip("bash runs the README's line")
    line = _readme_first_up()
    assert "$(.venv/bin/python -m offline.urns --cluster-targets --stack dev)" in line
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "pulumi").write_text(f"#!{sys.executable}\n{RECORDING_PULUMI}")
    (tools / "pulumi").chmod(0o755)
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(stack_path("dev"), project / "Pulumi.dev.yaml")
    (project / ".venv").symlink_to(REPO / ".venv")
    env = {
        "PATH": f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "PYTHONPATH": str(REPO),
        "PULUMI_ARGV": str(tmp_path / "argv.json"),
        "HOME": str(tmp_path),
    }
    done = subprocess.run(["bash", "-c", line], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    argv: list[str] = json.loads((tmp_path / "argv.json").read_text())
    targets = [arg.removeprefix("--target=") for arg in argv if arg.startswith("--target=")]
    targets += [argv[i + 1] for i, arg in enumerate(argv) if arg == "--target"]
    assert argv[:2] == ["up", "--stack"] and "--skip-preview" in argv
    assert sorted(targets) == cluster_targets(stack_plan("dev", render_charts=False))


def test_a_urn_the_shell_would_split_or_expand_is_refused() -> None:
    urn = "urn:pulumi:dev::tpu-stack::gcp:container/cluster:Cluster::tpu-dev"
    assert target_flags([urn]) == f"--target={urn}"
    for bad in (f"{urn} x", f"{urn}*", f"{urn}?", f"{urn}[0]", f"'{urn}'"):
        with pytest.raises(ValueError, match="the shell would split or expand"):
            target_flags([bad])


# --- what must be on before the program runs --------------------------------------------------------------------

BY_HAND = {
    # Turns every other API on; it cannot turn itself on (terraform-provider-google #16883).
    "serviceusage.googleapis.com",
    # Enabling any API reads the project through it first: resource_google_project_service.go Create -> Read ->
    # Projects.Get (L212-290 at e03b762); terraform-provider-google #6101, #11435.
    "cloudresourcemanager.googleapis.com",
    # The stack's secrets key; CI's federated identity (token exchange, then impersonation).
    "cloudkms.googleapis.com",
    "sts.googleapis.com",
    "iamcredentials.googleapis.com",
}


def _empty_project_paragraph() -> str:
    readme = (REPO / "README.md").read_text()
    paragraph = readme[readme.index("**An empty project.**") :]
    return paragraph[: paragraph.index("\n\n")]


def test_the_readme_enables_by_hand_what_the_program_needs_before_it_runs() -> None:
    """The google provider reads the project through Cloud Resource Manager when it enables any API, and the program
    looks up the project number through it at start-up: neither works in a project where it is off."""
    from components.project import ENABLED_BY_HAND

    assert set(ENABLED_BY_HAND) == BY_HAND
    paragraph = _empty_project_paragraph()
    by_hand = paragraph[paragraph.index("enable by hand") :]
    assert [api for api in sorted(BY_HAND) if f"`{api}`" not in by_hand] == []


def test_a_project_where_the_stack_itself_turns_resource_manager_on_breaks_the_first_up(
    plans: dict[str, Plan], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scenario from nothing holds only because Service Usage and Resource Manager are on by hand: without
    Resource Manager in that list, the stack's own `apis-cloudresourcemanager` does not help (the other APIs'
    enables read the project at the same time), and each API the stack enables breaks the rule."""
    from components import project

    assert CATALOGUE.breaches(plans["prod"].resources, {}) == []
    monkeypatch.setattr(
        project, "ENABLED_BY_HAND",
        {k: v for k, v in project.ENABLED_BY_HAND.items() if k != "cloudresourcemanager.googleapis.com"},
    )  # fmt: skip
    breaches = CATALOGUE.breaches(plans["prod"].resources, {})
    services = sorted(r["name"] for r in plans["prod"].by_type("gcp:projects/service:Service"))
    assert breaches == [
        f"apis-on-by-hand: {name} enables its API through cloudresourcemanager.googleapis.com, which the project "
        "must have on before the first `pulumi` command (not in components/project.py ENABLED_BY_HAND)"
        for name in services
    ]
