"""The GitHub workflows do what the README promises (their schema is checked by `make lint`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline import plandiff
from offline.engine import REPO
from tests.fixtures import stack_path

WORKFLOWS = REPO / ".github" / "workflows"


def load(name: str) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    return data


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [step for step in job["steps"] if str(step.get("uses", "")).startswith(action + "@")]


def runs(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) for step in job["steps"])


def test_pull_requests_run_the_offline_checks_without_credentials() -> None:
    workflow = load("pull-request.yml")
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    offline = workflow["jobs"]["offline"]
    assert "id-token" not in offline.get("permissions", {})
    assert "make test" in runs(offline)
    assert "make preview STACK=" in runs(offline) and "Pulumi.*.yaml" in runs(offline)
    (upload,) = steps_using(offline, "actions/upload-artifact")
    assert upload["with"]["path"] == "build/" and upload["if"] == "always()"


def test_pull_requests_preview_every_stack_with_the_policy_pack_and_comment() -> None:
    preview = load("pull-request.yml")["jobs"]["preview"]
    assert preview["needs"] == "offline"
    assert "head.repo.full_name == github.repository" in preview["if"]  # forks get no cloud identity
    assert preview["permissions"]["id-token"] == "write" and preview["permissions"]["pull-requests"] == "write"
    assert preview["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.offline.outputs.stacks) }}"
    assert "needs.offline.outputs.stacks != '[]'" in preview["if"]  # no stack file: no matrix to run
    assert stacks_step(load("pull-request.yml")["jobs"]["offline"]) == "${{ steps.stacks.outputs.stacks }}"
    (auth,) = steps_using(preview, "google-github-actions/auth")
    assert "workload_identity_provider" in auth["with"] and "credentials_json" not in auth["with"]
    (pulumi,) = steps_using(preview, "pulumi/actions")
    assert pulumi["uses"] == "pulumi/actions@8e5e406f4007fca908480587cb9893c07090f58d"
    assert pulumi["with"]["command"] == "preview" and pulumi["with"]["comment-on-pr"] is True
    assert pulumi["with"]["policyPacks"] == "policies"
    # The reviewed exceptions (prod's tag-pinned images) reach the real CLI as --policy-pack-config.
    assert pulumi["with"]["policyPackConfigs"] == "policies/config.json"


def test_deploys_dev_then_prod_behind_an_environment() -> None:
    workflow = load("deploy.yml")
    assert workflow[True]["push"]["branches"] == ["main"]
    up = workflow["jobs"]["up"]
    assert up["needs"] == "test" and up["strategy"]["max-parallel"] == 1
    assert up["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.test.outputs.stacks) }}"
    assert up["if"] == "needs.test.outputs.stacks != '[]'"
    assert stacks_step(workflow["jobs"]["test"]) == "${{ steps.stacks.outputs.stacks }}"
    assert up["environment"] == "${{ matrix.stack }}"
    install, cluster, everything = steps_using(up, "pulumi/actions")
    assert install["with"] == {"pulumi-version": "3.272.0"}  # no command: the action installs the CLI only
    for pulumi in (cluster, everything):
        assert pulumi["with"]["command"] == "up" and pulumi["with"]["policyPacks"] == "policies"
        assert pulumi["with"]["policyPackConfigs"] == "policies/config.json"
    # A new stack's charts need its cluster: the cluster's resources go first (README: First deployment), and only
    # while the state has no cluster; a deployed stack's changes, those inside GkeCluster too, go through one `up`.
    assert cluster["with"]["target"] == "${{ steps.cluster.outputs.urns }}" and "target" not in everything["with"]
    assert cluster["if"] == "steps.cluster.outputs.urns != ''"
    (urns,) = [step for step in up["steps"] if step.get("id") == "cluster"]
    assert "python -m offline.urns --cluster-urns --stack" in urns["run"]


def stacks_step(job: dict[str, Any]) -> str:
    """The job's output `stacks`, after checking that the step it names lists the stack files present."""
    (step,) = [step for step in job["steps"] if step.get("id") == "stacks"]
    assert step["run"] == 'python3 -m offline.stack_files >> "$GITHUB_OUTPUT"'
    return str(job["outputs"]["stacks"])


def test_the_matrices_are_the_stack_files_present_protected_ones_last(tmp_path: Path) -> None:
    """A stack file added is previewed and deployed, one removed is not, with no edit of a workflow; a merge deploys
    the unprotected stacks first and prod (components/stacks.py PROTECTED_STACKS) last, one at a time. The step runs
    on a runner's own Python before anything is installed: no module outside the standard library."""
    for name in ("Pulumi.yaml", "Pulumi.prod.yaml", "Pulumi.ourdev.yaml", "Pulumi.dev.yaml", "Pulumi.eu.west.yaml"):
        (tmp_path / name).write_text("config: {}\n")
    command = [sys.executable, "-S", "-m", "offline.stack_files", "--root", str(tmp_path)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout == 'stacks=["dev", "eu.west", "ourdev", "prod"]\n'
    (tmp_path / "Pulumi.dev.yaml").unlink()
    (tmp_path / "Pulumi.production.yaml").write_text("config: {}\n")
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout == 'stacks=["eu.west", "ourdev", "prod", "production"]\n'
    (tmp_path / "Pulumi.acme.yaml").write_text("config:\n  tpu-stack:protected: true\n")  # protected by its file
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout == 'stacks=["eu.west", "ourdev", "acme", "prod", "production"]\n'


def test_every_action_is_pinned_to_a_commit_with_its_version_in_a_comment() -> None:
    """A tag can be moved to other code; a full commit SHA cannot. The comment says which release it is."""
    for path in WORKFLOWS.glob("*.yml"):
        for line in path.read_text().splitlines():
            if "uses:" in line:
                assert re.search(r"uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line), (path.name, line)


def test_checkouts_do_not_keep_the_token_and_jobs_get_only_the_permissions_they_use() -> None:
    for path in WORKFLOWS.glob("*.yml"):
        workflow = yaml.safe_load(path.read_text())
        assert workflow["permissions"] == {}, path.name
        for name, job in workflow["jobs"].items():
            permissions = job["permissions"]
            # Jobs that read the repository read it, no more; the commenting job reads none of it.
            assert permissions.get("contents", "read") == "read", (path.name, name)
            assert "contents" in permissions or not steps_using(job, "actions/checkout"), (path.name, name)
            for step in steps_using(job, "actions/checkout"):
                assert step["with"]["persist-credentials"] is False, (path.name, name)
            if "id-token" in permissions:  # only jobs that authenticate to Google Cloud
                assert steps_using(job, "google-github-actions/auth"), (path.name, name)
            # Writing to pull requests: the real preview's comment (same-repository branches only) and the plan diff.
            if permissions.get("pull-requests") == "write":
                assert (path.name, name) in {("pull-request.yml", "preview"), ("plan-diff-comment.yml", "comment")}
            assert {v for k, v in permissions.items() if k not in ("id-token", "pull-requests")} <= {"read"}


def test_pull_requests_run_the_security_scan() -> None:
    offline = load("pull-request.yml")["jobs"]["offline"]
    assert "make scan" in runs(offline)


def pulumi_commands(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The job's pulumi/actions steps that run a command (an install-only step has none)."""
    return [step for step in steps_using(job, "pulumi/actions") if "command" in step["with"]]


@pytest.mark.parametrize(("workflow", "job"), [("pull-request.yml", "preview"), ("deploy.yml", "up")])
def test_pulumi_steps_get_the_login_secret_of_each_documented_backend(workflow: str, job: str) -> None:
    """Pulumi Cloud needs PULUMI_ACCESS_TOKEN, the passphrase provider PULUMI_CONFIG_PASSPHRASE; a Cloud KMS
    secrets provider needs neither (the federated Google identity decrypts)."""
    for pulumi in pulumi_commands(load(workflow)["jobs"][job]):
        assert pulumi["env"] == {
            "PULUMI_ACCESS_TOKEN": "${{ secrets.PULUMI_ACCESS_TOKEN }}",
            "PULUMI_CONFIG_PASSPHRASE": "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}",
        }
        assert pulumi["with"]["cloud-url"] == "${{ vars.PULUMI_BACKEND_URL }}"


PARALLEL = 256
"""Steps `pulumi` runs at once: GKE's node pool operations per cluster (100 assumed: what xpk sends at once) plus
the stack's other resources, so that GKE, not the engine, bounds how many slice pools are created at once."""


@pytest.mark.parametrize(("workflow", "job"), [("pull-request.yml", "preview"), ("deploy.yml", "up")])
def test_pulumi_is_not_left_at_its_default_of_4_steps_per_cpu(workflow: str, job: str) -> None:
    """Without `parallel` the action passes no --parallel and the CLI runs 4 x GOMAXPROCS steps at once (16 on a
    4-vCPU hosted runner): 256 slice pools would be created in 16 waves."""
    for pulumi in pulumi_commands(load(workflow)["jobs"][job]):
        assert pulumi["with"]["parallel"] == PARALLEL


def test_readme_runs_pulumi_up_with_the_workflows_parallelism() -> None:
    readme = (REPO / "README.md").read_text()
    ups = [line for line in readme.splitlines() if line.startswith("pulumi up ")]
    assert len(ups) == 3
    assert [line for line in ups if f"--parallel {PARALLEL}" not in line] == []


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_stack_files_name_the_cloud_kms_secrets_provider_of_their_project(stack: str) -> None:
    data = yaml.safe_load(stack_path(stack).read_text())
    project = data["config"]["gcp:project"]
    assert data["secretsprovider"] == f"gcpkms://projects/{project}/locations/global/keyRings/pulumi/cryptoKeys/{stack}"


def test_readme_documents_every_secret_and_variable_the_workflows_read() -> None:
    readme = (REPO / "README.md").read_text() + "".join(p.read_text() for p in (REPO / "docs").glob("*.md"))
    read = set()
    for path in WORKFLOWS.glob("*.yml"):
        read |= set(re.findall(r"\$\{\{ (?:secrets|vars)\.([A-Z_]+) \}\}", path.read_text()))
    assert read >= {"PULUMI_ACCESS_TOKEN", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_BACKEND_URL"}
    assert [name for name in sorted(read) if f"`{name}`" not in readme] == []


# --- the plan diff comment: built without privileges, posted by a workflow that runs no pull request code -------


def test_pull_requests_build_the_plan_diff_with_a_read_only_token_and_no_secrets() -> None:
    workflow = load("pull-request.yml")
    job = workflow["jobs"]["plan-diff"]
    assert job["permissions"] == {"contents": "read"}
    assert "secrets." not in yaml.safe_dump(job) and "needs" not in job  # runs beside the tests, needs nothing
    (checkout,) = steps_using(job, "actions/checkout")
    assert checkout["with"] == {"persist-credentials": False, "fetch-depth": 2}
    script = runs(job)
    # The base is the merge commit's first parent: exactly what GitHub merged the pull request into.
    assert "git worktree add --detach base HEAD^1" in script
    assert 'make -C "$dir" preview STACK="$stack"' in script and "for dir in . base" in script
    assert ".venv/bin/python -m offline diff --base base/build --head build --out build/plan-diff/comment.md" in script
    assert "--base-stacks base --head-stacks ." in script  # a stack file without a plan is a failed preview
    # The number goes through the environment, never into the script's text.
    (write,) = [step for step in job["steps"] if "pr-number" in str(step.get("run", ""))]
    assert write["env"]["PR_NUMBER"] == "${{ github.event.pull_request.number }}"
    assert "${{" not in write["run"]
    upload = next(s for s in steps_using(job, "actions/upload-artifact") if s["with"]["name"] == "plan-diff")
    assert upload["with"]["path"] == "build/plan-diff/"
    # Protection dropped with a replace or delete (exit 1) fails the check, and its comment is still posted.
    assert '--head-label "${HEAD_SHA:0:7}" || status=$?' in write["run"] and write["run"].endswith('exit "$status"\n')
    assert upload["if"] == "${{ !cancelled() }}"


def test_no_workflow_runs_on_pull_request_target() -> None:
    """pull_request_target runs with the base's secrets and a write token: the plan diff needs neither."""
    for path in WORKFLOWS.glob("*.yml"):
        assert "pull_request_target" not in load(path.name)[True], path.name


def test_the_plan_diff_comment_is_posted_after_the_pull_request_run_with_least_privilege() -> None:
    workflow = load("plan-diff-comment.yml")
    assert workflow[True] == {"workflow_run": {"workflows": [load("pull-request.yml")["name"]], "types": ["completed"]}}
    assert workflow["permissions"] == {}
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert "github.event.workflow_run.event == 'pull_request'" in job["if"]
    # Nothing but the artifact download and one script; no checkout, no cache, no other action.
    assert [step.get("uses", "run").split("@")[0] for step in job["steps"]] == ["actions/download-artifact", "run"]
    (download,) = steps_using(job, "actions/download-artifact")
    assert download["with"] == {
        "name": "plan-diff",
        "path": "${{ runner.temp }}/plan-diff",  # outside the workspace: nothing there is ever run
        "github-token": "${{ github.token }}",
        "run-id": "${{ github.event.workflow_run.id }}",
    }


def test_the_privileged_job_reads_the_artifact_as_data_only() -> None:
    (job,) = load("plan-diff-comment.yml")["jobs"].values()
    (post,) = [step for step in job["steps"] if "run" in step]
    script = post["run"]
    # No expression is expanded into the script: what the run reports arrives through the environment.
    assert "${{" not in script
    assert post["env"]["RUN_HEAD_SHA"] == "${{ github.event.workflow_run.head_sha }}"
    # The artifact is read with head (bounded) and wc, never executed, sourced or passed to an interpreter.
    assert re.findall(r'"\$(?:ARTIFACT|comment)[^"]*"', script) == [
        '"$ARTIFACT/pr-number"', '"$ARTIFACT/comment.md"', '"$ARTIFACT/pr-number"', '"$ARTIFACT/comment.md"',
        '"$comment"', '"$comment"', '"$comment"',
    ]  # fmt: skip
    assert 'head -c 20 "$ARTIFACT/pr-number"' in script and 'head -c "$limit" "$comment"' in script
    for runner in ("source ", ". $", "bash ", "sh ", "python", "eval", "xargs", "GITHUB_ENV", "GITHUB_PATH"):
        assert runner not in script, runner
    assert not re.search(r"(^|[|;&(])\s*make\b", script, re.MULTILINE)
    # The number is a number, and names the pull request whose head the reported run built.
    assert '[[ "$number" =~ ^[1-9][0-9]{0,9}$ ]]' in script
    assert '"repos/$REPOSITORY/pulls/$number" --jq .head.sha' in script and '[ "$head" != "$RUN_HEAD_SHA" ]' in script
    # One comment per pull request: found by the marker, among the workflow token's own comments only.
    assert "marker='<!-- tpu-stack:plan-diff -->'" in script
    assert '.user.login == \\"github-actions[bot]\\"' in script
    assert "--method PATCH" in script and "--method POST" in script


# --- the posting script itself, run with a stand-in `gh` that answers as the GitHub API would -----------------

FAKE_GH = """\
import json, os, subprocess, sys

args = sys.argv[1:]
with open(os.environ["GH_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
assert args[0] == "api", args
method, jq, fields, path, rest = "GET", None, [], None, args[1:]
while rest:
    arg = rest.pop(0)
    if arg == "--method":
        method = rest.pop(0)
    elif arg == "--jq":
        jq = rest.pop(0)
    elif arg == "-F":
        fields.append(rest.pop(0))
    elif arg != "--paginate":
        path = arg
if method != "GET":
    (field,) = fields
    assert field.startswith("body=@"), field
    with open(field.removeprefix("body=@"), encoding="utf-8") as body:
        posted = {"method": method, "path": path, "body": body.read()}
    with open(os.environ["GH_POSTED"], "a") as out:
        out.write(json.dumps(posted) + "\\n")
    print("{}")
else:
    with open(os.environ["GH_RESPONSES"]) as responses:
        data = json.load(responses)[path]
    # gh api --jq prints strings raw, as jq -r does.
    sys.stdout.write(subprocess.run(["jq", "-r", jq], input=json.dumps(data), capture_output=True, text=True,
                                    check=True).stdout)
"""

HEADER = (
    "> Computed offline by this pull request's own code (a fork's too), so it says whatever that code has it say. "
    "For a pull request from this repository, the `pulumi preview` comments are authoritative."
)
WARNING = (
    "> **This pull request changes the code that computes this comment** (`offline/`, `.github/`, "
    "`components/config/`, `policies/` or the `Makefile`): read those changes before this comment."
)


@dataclass
class Posted:
    code: int
    stdout: str
    calls: list[list[str]]
    posted: list[dict[str, str]]


def _post(
    tmp_path: Path,
    *,
    number: str = "42",
    comment: str | None = "## Plan diff\n\nno changes\n",
    head: str = "c0ffee",
    files: tuple[str, ...] = ("README.md",),
    comments: tuple[dict[str, Any], ...] = (),
) -> Posted:
    """Runs the posting step's script as the runner does (bash -eo pipefail), `gh` being FAKE_GH."""
    if shutil.which("jq") is None:
        pytest.skip("jq is needed to apply the script's --jq filters as gh does")
    (job,) = load("plan-diff-comment.yml")["jobs"].values()
    (post,) = [step for step in job["steps"] if "run" in step]
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "gh").write_text(f"#!{sys.executable}\n{FAKE_GH}")
    (tools / "gh").chmod(0o755)
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    if comment is not None:
        (artifact / "pr-number").write_text(number + "\n")
        (artifact / "comment.md").write_text(comment)
    responses = {
        "repos/o/r/pulls/42": {"number": 42, "head": {"sha": head}},
        "repos/o/r/pulls/42/files": [{"filename": name} for name in files],
        "repos/o/r/issues/42/comments": list(comments),
    }
    (tmp_path / "responses.json").write_text(json.dumps(responses))
    (tmp_path / "script.sh").write_text(post["run"])
    env = {
        "PATH": f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "GH_LOG": str(tmp_path / "calls.jsonl"),
        "GH_POSTED": str(tmp_path / "posted.jsonl"),
        "GH_RESPONSES": str(tmp_path / "responses.json"),
        "RUNNER_TEMP": str(tmp_path),
        **{key: value.replace("${{ runner.temp }}", str(tmp_path)) for key, value in post["env"].items()},
        "GH_TOKEN": "token",
        "REPOSITORY": "o/r",
        "RUN_HEAD_SHA": "c0ffee",
        "ARTIFACT": str(artifact),
    }
    # GitHub's `shell: bash` for a run step: bash --noprofile --norc -eo pipefail {0}
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(tmp_path / "script.sh")],
        env=env, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip

    def lines(name: str) -> list[Any]:
        path = tmp_path / name
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    return Posted(done.returncode, done.stdout, lines("calls.jsonl"), lines("posted.jsonl"))


def test_the_first_run_posts_one_comment_under_fixed_lines_the_pull_request_cannot_change(tmp_path: Path) -> None:
    done = _post(tmp_path)
    assert done.code == 0
    assert done.posted == [
        {
            "method": "POST",
            "path": "repos/o/r/issues/42/comments",
            "body": f"<!-- tpu-stack:plan-diff -->\n{HEADER}\n\n## Plan diff\n\nno changes\n",
        }
    ]


def test_later_runs_edit_the_workflows_own_marked_comment(tmp_path: Path) -> None:
    marker = "<!-- tpu-stack:plan-diff -->"
    comments = (
        {"id": 5, "user": {"login": "someone"}, "body": f"{marker} quoted by a person"},
        {"id": 6, "user": {"login": "github-actions[bot]"}, "body": "another workflow's comment"},
        {"id": 7, "user": {"login": "github-actions[bot]"}, "body": f"{marker}\nthe earlier diff"},
    )
    done = _post(tmp_path, comments=comments)
    assert done.code == 0
    assert [(p["method"], p["path"]) for p in done.posted] == [("PATCH", "repos/o/r/issues/comments/7")]


def test_a_pull_request_that_moved_on_gets_its_comment_from_the_newer_run(tmp_path: Path) -> None:
    done = _post(tmp_path, head="beef")
    assert done.code == 0 and done.posted == []
    assert done.calls == [["api", "repos/o/r/pulls/42", "--jq", ".head.sha"]]
    assert "Pull request #42 is at beef, not at this run's c0ffee: the newer run comments." in done.stdout


def test_a_number_that_is_not_one_stops_before_any_call(tmp_path: Path) -> None:
    done = _post(tmp_path, number="42; rm -rf /")
    assert done.code == 1 and done.calls == [] and done.posted == []
    assert "::error::the artifact's pr-number is not a pull request number" in done.stdout


def test_a_run_that_uploaded_no_comment_posts_nothing_and_stays_green(tmp_path: Path) -> None:
    done = _post(tmp_path, comment=None)
    assert done.code == 0 and done.calls == [] and done.posted == []


@pytest.mark.parametrize(
    "changed", ["offline/plandiff.py", ".github/workflows/pull-request.yml", "components/config/queues.py", "Makefile"]
)
def test_a_pull_request_that_changes_the_diffs_own_code_is_flagged(tmp_path: Path, changed: str) -> None:
    done = _post(tmp_path, files=("README.md", changed))
    (posted,) = done.posted
    assert posted["body"].splitlines()[:5] == ["<!-- tpu-stack:plan-diff -->", HEADER, ">", WARNING, ""]


def test_the_comment_is_cut_at_the_same_byte_bound_as_the_diff_at_a_whole_line(tmp_path: Path) -> None:
    """Lines of 100 characters with a 3-byte `→` in each: 700 of them are 71,400 bytes but 70,000 characters."""
    bound = re.search(r"\blimit=(\d+) ", runs(load("plan-diff-comment.yml")["jobs"]["comment"]))
    assert bound is not None and int(bound.group(1)) == plandiff.MAX_BYTES == 60_000
    line = "- `a` → `b` " + "x" * 87
    assert (len(line), len(line.encode())) == (99, 101)
    done = _post(tmp_path, comment="".join(f"{line}\n" for _ in range(700)))
    (posted,) = done.posted
    body = posted["body"].splitlines()
    kept = body[3:-2]
    # 60,000 bytes hold 588 whole lines of 102 bytes (newline included); the 589th is cut, not sent in part.
    assert kept == [line] * 588
    assert body[-2:] == ["", "… cut at the size GitHub allows; the run's `plan-diff-plans` artifact holds both plans."]
    assert len(posted["body"]) <= 65_536


# --- the deploy job's cluster phase: only while the state holds no cluster of the plan ------------------------------

FAKE_PULUMI = """\
import json, os, shutil, sys

with open(os.environ["PULUMI_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["stack", "export"]:
    shutil.copy(os.environ["PULUMI_STATE"], sys.argv[sys.argv.index("--file") + 1])
"""


def _cluster_step(tmp_path: Path, state: dict[str, Any]) -> tuple[list[list[str]], str]:
    """Runs the deploy job's `cluster` step as the runner does (bash -eo pipefail) in a checkout holding the dev fixture
    as Pulumi.dev.yaml, `pulumi` answering `stack export` with `state`; returns pulumi's calls and GITHUB_OUTPUT."""
    (step,) = [s for s in load("deploy.yml")["jobs"]["up"]["steps"] if s.get("id") == "cluster"]
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "pulumi").write_text(f"#!{sys.executable}\n{FAKE_PULUMI}")
    (tools / "pulumi").chmod(0o755)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(stack_path("dev"), checkout / "Pulumi.dev.yaml")
    (checkout / ".venv").symlink_to(REPO / ".venv")
    (tmp_path / "state.json").write_text(json.dumps(state))
    (tmp_path / "script.sh").write_text(step["run"])
    env = {
        "PATH": f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "PYTHONPATH": str(REPO),
        "HOME": str(tmp_path),
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "PULUMI_LOG": str(tmp_path / "calls.jsonl"),
        "PULUMI_STATE": str(tmp_path / "state.json"),
        **{key: value for key, value in step["env"].items() if "${{" not in value},
        "STACK": "dev",
        "PULUMI_BACKEND_URL": "gs://state-bucket",
    }
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(tmp_path / "script.sh")],
        cwd=checkout, env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    return calls, (tmp_path / "output").read_text()


def test_a_new_stack_runs_the_cluster_phase_with_every_cluster_urn(tmp_path: Path) -> None:
    from offline.urns import cluster_targets
    from tests.fixtures import stack_plan

    calls, output = _cluster_step(tmp_path, {"version": 3, "deployment": {"manifest": {}}})
    assert calls == [["login", "gs://state-bucket"], ["stack", "export", "--stack", "dev", "--file",
                                                      str(tmp_path / "pulumi-state.json")]]  # fmt: skip
    expected = cluster_targets(stack_plan("dev", render_charts=False))
    assert output == "urns<<URNS_END\n" + "".join(f"{urn}\n" for urn in expected) + "URNS_END\n"


def test_a_deployed_stack_skips_the_cluster_phase(tmp_path: Path) -> None:
    """Once the state holds the cluster, the targeted `up` would apply a change inside GkeCluster (the cluster, its
    system pool, the firewall) ahead of and apart from the rest of the update: the step lists nothing and the job
    skips it."""
    cluster = "urn:pulumi:dev::tpu-stack::tpu-stack:index:GkeCluster$gcp:container/cluster:Cluster::tpu-dev"
    state = {"version": 3, "deployment": {"resources": [{"urn": cluster, "type": "gcp:container/cluster:Cluster"}]}}
    _calls, output = _cluster_step(tmp_path, state)
    assert output == "urns<<URNS_END\nURNS_END\n"
