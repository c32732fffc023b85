"""The `tpu-stack` commands end to end: the dev and prod stacks' outputs (from the offline engine, as `pulumi
stack output --json` gives them) and a local HTTP server speaking the Kubernetes API calls the commands make
(tests/tpu_stack/fake_api.py). Every error is checked as the exact line a user reads, with its exit code.
"""

from __future__ import annotations

import copy
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config.stack import StackConfig
from components.kueue_queues import kueue_objects
from components.workloads import workloads
from offline import validate
from offline.engine import run_program
from tests.conftest import BASE
from tests.fixtures import stack_config, stack_data, stack_plan
from tests.tpu_stack import kueue_objects as k
from tests.tpu_stack.fake_api import TOKEN, FakeApi, Request, serving
from tpu_stack import cli, kueue
from tpu_stack import stack as stack_module
from tpu_stack.why import PodsReadySettings

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"
JOBS = "/apis/batch/v1/namespaces/{ns}/jobs"
PODS = "/api/v1/namespaces/{ns}/pods"
IMAGE = "us-docker.pkg.dev/my-project/train/jax:0.6.2"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Stack name -> a file of its outputs, as `pulumi stack output --json --show-secrets` writes them."""
    folder = tmp_path_factory.mktemp("outputs")
    files = {}
    for stack in ("dev", "prod"):
        files[stack] = folder / f"{stack}.json"
        files[stack].write_text(json.dumps(stack_plan(stack, render_charts=False).outputs))
    return files


@pytest.fixture(autouse=True)
def _clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ages count to the objects' NOW, not the machine's."""
    monkeypatch.setattr(cli, "clock", lambda: k.NOW)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApi]:
    with serving(FakeApi()) as running:
        yield running


def kubeconfig(api: FakeApi, tmp_path: Path, **changes: Any) -> Path:
    config = api.kubeconfig()
    config["users"][0]["user"] = changes.get("user", config["users"][0]["user"])
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


# ---- outputs and help ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_stack_config_output_is_the_config_the_stack_was_deployed_with(outputs: dict[str, Path], stack: str) -> None:
    """`submit` rebuilds the config model from output stackConfig: it must equal what the program loaded."""
    exported = json.loads(outputs[stack].read_text())["stackConfig"]
    assert StackConfig.model_validate(exported) == stack_config(stack)


def test_help_names_the_five_commands_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for command in ("submit", "list", "why", "logs", "delete"):
        assert f"    {command} " in text
    assert "  5  submit --wait: not running before --timeout" in text
    assert "  3  no such workload (logs: or no pod of it yet)" in text
    assert "  6  why: the workload waits, and runs without being submitted again" in text
    assert (
        "  7  why (and submit --wait): stopped for good: failed, deactivated, or it can never run as submitted" in text
    )


# ---- submit --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_dry_run_prints_what_make_workloads_generates(outputs: dict[str, Path], stack: str) -> None:
    """With the generated image and command, every generated workload comes out of submit unchanged, and is
    valid against the vendored JobSet CRD and the Kubernetes schemas (offline/validate.py)."""
    config = stack_config(stack)
    teams = {ref["namespace"]: team for team, ref in json.loads(outputs[stack].read_text())["queues"].items()}
    for generated in workloads(config):
        main = next(obj for obj in generated.objects if obj["kind"] in ("Job", "JobSet"))
        pods = (
            [main["spec"]["template"]["spec"]]
            if main["kind"] == "Job"
            else [job["template"]["spec"]["template"]["spec"] for job in main["spec"]["replicatedJobs"]]
        )
        container = pods[0]["containers"][0]
        code, out, err = run(
            "--outputs", outputs[stack], "submit", generated.name, "--team", teams[generated.queue.namespace],
            "--pool", generated.pool, "--slices", str(generated.slices), "--image", container["image"],
            "--dry-run", *(["--jobset"] if main["kind"] == "JobSet" else []), "--", *container["command"],
        )  # fmt: skip
        assert (code, err) == (0, ""), generated.name
        printed = list(yaml.safe_load_all(out))
        assert printed == list(generated.objects), generated.name
        assert validate.validate_all(printed) == [], generated.name


def test_dry_run_of_a_training_jobset_with_env_priority_and_the_bucket(outputs: dict[str, Path]) -> None:
    code, out, _ = run(
        "--outputs", outputs["dev"], "submit", "train-2", "--team", "training", "--pool", "multislice",
        "--slices", "2", "--image", IMAGE, "--env", "STEPS=1000", "--priority", "high", "--dry-run",
        "--", "python", "-m", "train", "--steps", "1000",
    )  # fmt: skip
    assert code == 0
    (jobset,) = yaml.safe_load_all(out)
    assert validate.validate_all([jobset]) == []
    assert jobset["kind"] == "JobSet"
    assert jobset["metadata"]["namespace"] == "training"
    assert jobset["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "training-queue"}
    (slices,) = jobset["spec"]["replicatedJobs"]
    assert slices["replicas"] == 2
    assert slices["template"]["spec"]["parallelism"] == slices["template"]["spec"]["completions"] == 2
    pod = slices["template"]["spec"]["template"]
    assert pod["spec"]["priorityClassName"] == "high"
    assert pod["spec"]["serviceAccountName"] == "trainer"
    # dev's multislice is a ladder (spot, then flex-start): the pods ask only for the shape, Kueue adds the rest.
    assert pod["spec"]["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "2x4",
    }
    assert "tolerations" not in pod["spec"]
    (container,) = pod["spec"]["containers"]
    assert container["image"] == IMAGE
    assert container["command"] == ["python", "-m", "train", "--steps", "1000"]
    assert container["env"] == [{"name": "STEPS", "value": "1000"}]
    # A v6e 4t VM (180 vCPU, 720 GiB) less GKE's reservations, its DaemonSets and the FUSE sidecar
    # (tests/components/test_workloads.py works the numbers out).
    assert container["resources"] == {
        "requests": {"google.com/tpu": 4, "cpu": "178230m", "memory": "698757Mi"},
        "limits": {"google.com/tpu": 4, "memory": "700805Mi"},
    }
    mounts = {m["mountPath"]: m.get("readOnly", False) for m in container["volumeMounts"]}
    assert mounts == {"/data": True, "/checkpoints": False}
    assert pod["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"


def test_without_a_command_the_image_entrypoint_runs(outputs: dict[str, Path]) -> None:
    code, out, _ = run(
        "--outputs", outputs["dev"], "submit", "one", "--team", "research", "--pool", "flex-v6e",
        "--image", IMAGE, "--dry-run",
    )  # fmt: skip
    (job,) = yaml.safe_load_all(out)
    assert code == 0
    assert "command" not in job["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        (
            ["--team", "physics"],
            "error: --team physics: no such team; this stack's teams are research, training",
        ),
        (
            ["--pool", "v7"],
            "error: --pool v7: no such pool group; this stack's pool groups are flex-v6e, multislice (ladder: "
            "multislice-spot, multislice)",
        ),
        (
            ["--pool", "multislice-spot"],
            "error: --pool multislice-spot: pool group multislice-spot is a rung of ladder multislice, and Kueue may "
            "admit a workload of its shape on any rung; submit to --pool multislice",
        ),
        (
            ["--slices", "4"],
            "error: --slices 4: no rung of ladder multislice can take it (multislice-spot: 1 slice(s); multislice: 3 "
            "slice(s))",
        ),
        (
            ["--team", "training", "--pool", "flex-v6e", "--slices", "1"],
            "error: --pool flex-v6e: team training may hold 0 (share 0 + borrowing limit 0), less than one slice (4 "
            "TPU chips); submit to another pool group, or ask the platform team for a share of this one",
        ),
        (
            ["--image", "python:latest"],
            "error: --image 'python:latest' is not pinned; use an explicit version tag or an @sha256 digest, never "
            "latest",
        ),
        (
            ["--env", "2FAST=1"],
            "error: --env '2FAST=1': give NAME=VALUE, NAME of letters, digits and '_'",
        ),
        (
            ["--priority", "urgent"],
            "error: --priority urgent: no such priority class; this stack has very-low, low, medium, high, very-high",
        ),
        (
            ["--name", "x" * 50],
            "error: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx': its pod names would be 3 character(s) "
            "longer than 63; shorten it",
        ),
        (
            ["--name", "Train_2"],
            "error: 'Train_2': a name is lowercase letters, digits and '-', starting with a letter",
        ),
        (
            ["--containers-per-vm", "2"],
            "error: --containers-per-vm 2: a ct6e-standard-4t VM runs 1 container (all 4 chips)",
        ),
        (
            ["--max-exec-time", "two days"],
            "error: --max-exec-time 'two days' is not a duration; use a number and a unit, e.g. 3600s, 90m, 24h, 7d",
        ),
        (
            ["--max-exec-time", "0s"],
            "error: --max-exec-time 0s: give a time of 1s or more (Kueue refuses 0)",
        ),
        (
            ["--max-exec-time", "100000d"],
            "error: --max-exec-time 100000d: Kueue reads the limit as a 32-bit number of seconds, at most 2147483647s "
            "(about 68 years)",
        ),
    ],
)
def test_a_request_the_stack_cannot_run_is_one_line_and_exit_2(
    outputs: dict[str, Path], arguments: list[str], line: str
) -> None:
    """Checked before anything reaches the cluster (no kubeconfig here)."""
    given = {"--name": "train-2", "--team": "research", "--pool": "multislice", "--slices": "2", "--image": IMAGE}
    for flag, value in zip(arguments[::2], arguments[1::2], strict=True):
        given[flag] = value
    name = given.pop("--name")
    flags = [word for pair in given.items() for word in pair]
    code, out, err = run("--outputs", outputs["dev"], "submit", name, *flags)
    assert (code, out, err) == (2, "", line + "\n")


def test_a_ladder_takes_what_one_of_its_rungs_can_hold(outputs: dict[str, Path]) -> None:
    """dev: the spot rung has one slice, the flex-start rung three. research may hold all 24 flex-start chips (no
    borrowing limit there), so 3 slices run on the flex-start rung; Kueue skips the spot rung they do not fit.
    training may hold 16 flex-start chips (share 8 + borrowing limit 8): 3 slices fit no rung."""
    code, out, err = run(
        "--outputs", outputs["dev"], "submit", "big", "--team", "research", "--pool", "multislice", "--slices", "3",
        "--image", IMAGE, "--dry-run",
    )  # fmt: skip
    assert (code, err) == (0, "")
    (jobset,) = yaml.safe_load_all(out)
    assert jobset["spec"]["replicatedJobs"][0]["replicas"] == 3
    code, out, err = run(
        "--outputs", outputs["dev"], "submit", "big", "--team", "training", "--pool", "multislice", "--slices", "3",
        "--image", IMAGE, "--dry-run",
    )  # fmt: skip
    assert (code, out, err) == (
        2,
        "",
        "error: --slices 3: no rung of ladder multislice can take it (multislice-spot: 1 slice(s); multislice: 24 TPU "
        "chips, but team training may hold 16 (share 8 + borrowing limit 8))\n",
    )


def test_queued_groups_take_one_slice_per_workload(outputs: dict[str, Path]) -> None:
    """prod's train ladder: burst is queued, so no workload of the ladder may take two slices, whatever the team
    may hold of train (training 32 chips, research 16)."""
    for team in ("training", "research"):
        code, _, err = run(
            "--outputs", outputs["prod"], "submit", "big", "--team", team, "--pool", "train", "--slices", "2",
            "--image", IMAGE,
        )  # fmt: skip
        assert (code, err) == (
            2,
            "error: --slices 2: rung burst of ladder train is queued provisioning, which provisions one slice per "
            "workload, and Kueue may admit the workload on any rung whose quota holds it; submit one slice per "
            "workload, as `make workloads` does\n",
        ), team
    code, _, err = run(
        "--outputs", outputs["prod"], "submit", "x", "--team", "training", "--pool", "serve", "--image", IMAGE
    )
    assert (code, err) == (
        2,
        "error: --pool serve: pool group serve serves Saxml, whose model servers hold all its slices; it is not Kueue "
        "capacity: submit to another pool group (this stack's: train (ladder: train, burst))\n",
    )


def test_a_vllm_servers_pool_group_is_named_as_one(tmp_path: Path) -> None:
    """The llm stack's pool groups both serve vLLM servers (Pulumi.llm.yaml): none is Kueue capacity."""
    path = tmp_path / "llm.json"
    path.write_text(json.dumps(stack_plan("llm").outputs))
    code, _, err = run("--outputs", path, "submit", "x", "--pool", "llm-v6e", "--image", IMAGE)
    assert (code, err) == (
        2,
        "error: --pool llm-v6e: pool group llm-v6e serves the vLLM server 'llama-31-70b', whose replicas hold its "
        "slices; it is not Kueue capacity, and this stack has none\n",
    )


def test_a_draining_pool_group_is_named_as_one(tmp_path: Path) -> None:
    """dev with multislice-spot drained (off its ladder and research's shares): a submit to it says why it takes
    none."""
    config = copy.deepcopy(stack_data("dev"))
    next(e for e in config["tpu-stack:tpuPools"] if e["name"] == "multislice-spot")["drain"] = True
    config["tpu-stack:queues"]["ladders"]["multislice"] = ["multislice"]
    del config["tpu-stack:queues"]["teams"][0]["shares"]["multislice-spot"]
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(run_program(config, stack="dev").outputs))
    code, _, err = run(
        "--outputs", path, "submit", "x", "--team", "research", "--pool", "multislice-spot", "--image", IMAGE
    )
    assert (code, err) == (
        2,
        "error: --pool multislice-spot: pool group multislice-spot is draining (drain: true): its chips are out of "
        "every queue until it is removed; it is not Kueue capacity: submit to another pool group (this stack's: "
        "flex-v6e, multislice (ladder: multislice))\n",
    )


def test_a_ladder_with_a_queued_rung_takes_one_slice_even_where_its_quota_holds_more(tmp_path: Path) -> None:
    """A reservation of 2 v5e 2x4 slices, then a queued group of 2: a 2-slice JobSet fits both rungs' quotas (16
    chips each), so Kueue could admit it on the queued rung when the reservation is busy, and its ProvisioningRequest
    would ask for two slices of pods, which queued provisioning does not provision (one slice per workload). It was
    accepted, since the reservation could take it."""
    pools = [
        {"name": "reserved", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "slices": 2,
         "provisioning": "reservation", "reservation": "r", "zone": "us-west4-a"},
        {"name": "dws", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "slices": 2, "provisioning": "queued",
         "zone": "us-west4-a"},
    ]  # fmt: skip
    # us-west4-a: v5e by reservation and on flex-start, which queued provisioning needs (vendor/data/tpu_zones.json).
    config = {
        **BASE,
        "gcp:region": "us-west4",
        "tpu-stack:tpuPools": pools,
        "tpu-stack:queues": {"ladders": {"v5e": ["reserved", "dws"]}},
    }
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(run_program(config, stack="dev").outputs))
    code, out, err = run("--outputs", path, "submit", "two", "--slices", "2", "--image", IMAGE, "--dry-run")
    assert (code, out, err) == (
        2,
        "",
        "error: --slices 2: rung dws of ladder v5e is queued provisioning, which provisions one slice per workload, "
        "and Kueue may admit the workload on any rung whose quota holds it; submit one slice per workload, as `make "
        "workloads` does\n",
    )
    code, out, err = run("--outputs", path, "submit", "one", "--image", IMAGE, "--dry-run")
    assert (code, err) == (0, "")


def test_submit_creates_the_jobset_as_the_dry_run_prints_it(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    config = kubeconfig(api, tmp_path)
    argv: list[str | Path] = ["--outputs", outputs["dev"], "--kubeconfig", config, "submit", "train-2", "--team",
                              "training", "--pool", "multislice", "--slices", "2", "--image", IMAGE, "--", "python",
                              "-m", "train"]  # fmt: skip
    code, out, err = run(*argv)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "submitted JobSet training/train-2: 2 slice(s) of ladder multislice (multislice-spot, then multislice) (16 TPU "
        "chips) via training/training-queue",
        "  mounts /data <- gs://tpu-stack-dev-dev-tpu-stack/datasets (read-only)",
        "  mounts /checkpoints <- gs://tpu-stack-dev-dev-tpu-stack-ckpt/checkpoints/training (read-write)",
        "Follow it with `tpu-stack why train-2` and `tpu-stack logs train-2`.",
    ]
    (create,) = [r for r in api.requests if r.method == "POST"]
    assert create.path == JOBSETS.format(ns="training")
    assert create.query == {"fieldValidation": ["Strict"]}
    split = argv.index("--")
    _, dry, _ = run(*argv[:split], "--dry-run", *argv[split:])
    assert create.body == yaml.safe_load(dry)
    assert api.objects[JOBSETS.format(ns="training") + "/train-2"]["spec"]["replicatedJobs"][0]["replicas"] == 2


def test_one_multi_host_slice_is_a_jobset_that_brings_its_own_service(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    """One object, whatever cluster runs it: JobSet's controller there makes the headless Service (a Service created
    beside a Job stays on a MultiKueue manager, which copies only the Job to the worker)."""
    code, _, _ = run(
        "--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "submit", "one", "--team",
        "research", "--pool", "multislice", "--image", IMAGE,
    )  # fmt: skip
    assert code == 0
    posts = [r for r in api.requests if r.method == "POST"]
    assert [r.path for r in posts] == [JOBSETS.format(ns="research")]
    assert posts[0].body is not None and posts[0].body["spec"]["replicatedJobs"][0]["replicas"] == 1


def test_several_single_host_slices_are_refused_as_multislice(outputs: dict[str, Path]) -> None:
    """GKE's Multislice supports multi-host slice node pools only (cloud.google.com/kubernetes-engine/docs/how-to/
    tpu-multislice): two single-host slices in one JobSet were two unrelated one-VM jobs."""
    code, out, err = run(
        "--outputs", outputs["dev"], "submit", "two", "--team", "research", "--pool", "flex-v6e", "--slices", "2",
        "--image", IMAGE, "--dry-run",
    )  # fmt: skip
    assert (code, out, err) == (
        2,
        "",
        "error: --slices 2: 2x2 slices of ct6e-standard-4t are single-host, and GKE's Multislice joins multi-host "
        "slices only; submit one workload per slice, or use a multi-host pool group\n",
    )


def test_a_name_already_taken_is_refused_with_what_to_do(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    api.put(JOBS.format(ns="research"), {"metadata": {"name": "one"}})
    code, _, err = run(
        "--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "submit", "one", "--team",
        "research", "--pool", "flex-v6e", "--image", IMAGE,
    )  # fmt: skip
    assert (code, err) == (
        1,
        "error: Job research/one already exists: pick another name, or `tpu-stack delete one` first\n",
    )


def test_forbidden_is_exit_4_with_the_api_servers_reason(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    api.forbidden.add(("POST", JOBSETS.format(ns="research")))
    code, _, err = run(
        "--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "submit", "train-2", "--team",
        "research", "--pool", "multislice", "--slices", "2", "--image", IMAGE,
    )  # fmt: skip
    path = JOBSETS.format(ns="research")
    assert (code, err) == (4, f'error: forbidden (403): POST {path} is forbidden: User "dev" cannot do this\n')


def test_a_missing_api_on_create_is_exit_1_not_no_such_workload(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    """The JobSet CRD is not installed: the API server answers 404 to the POST."""
    api.absent.add("/apis/jobset.x-k8s.io")
    code, _, err = run(
        "--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "submit", "train-2", "--team",
        "training", "--pool", "multislice", "--slices", "2", "--image", IMAGE,
    )  # fmt: skip
    path = JOBSETS.format(ns="training")
    assert (code, err) == (
        1,
        f"error: the cluster refused POST {path} (404): the server could not find the requested resource\n",
    )


def test_a_failing_sign_in_plugin_gets_a_hint_with_the_401(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    """The plugin is installed but fails (no gcloud login): the client only logs that and calls without
    credentials, so the 401 says what to do."""
    plugin = tmp_path / "gke-gcloud-auth-plugin"
    plugin.write_text("#!/bin/sh\necho 'no active account' >&2\nexit 1\n")
    plugin.chmod(0o755)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin)}}
    code, _, err = run("--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path, user=user), "list")
    assert (code, err) == (
        4,
        f"error: forbidden (401): Unauthorized; the kubeconfig signs in with `{plugin}`, which gave no credential "
        "the cluster accepts: run `gcloud auth login` (the plugin uses gcloud's credentials), then try again\n",
    )


def test_kubeconfig_paths_are_relative_to_the_file_and_a_context_can_be_chosen(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As kubectl: a relative tokenFile is read next to the kubeconfig, whatever the current directory; --context
    picks a context other than current-context."""
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "token").write_text(TOKEN)
    config = api.kubeconfig()
    config["users"] = [{"name": "fake", "user": {"tokenFile": "token"}}, {"name": "old", "user": {"token": "expired"}}]
    config["contexts"].append({"name": "stale", "context": {"cluster": "fake", "user": "old"}})
    config["current-context"] = "stale"
    (folder / "kubeconfig").write_text(yaml.safe_dump(config))
    monkeypatch.chdir(tmp_path)
    kube = Path("conf/kubeconfig")
    code, out, err = run("--outputs", outputs["dev"], "--kubeconfig", kube, "--context", "fake", "list")
    assert (code, out, err) == (0, "No workloads.\n", "")
    code, _, err = run("--outputs", outputs["dev"], "--kubeconfig", kube, "list")
    assert (code, err) == (4, "error: forbidden (401): Unauthorized\n")
    code, _, err = run("--outputs", outputs["dev"], "--kubeconfig", kube, "--context", "prod", "list")
    assert (code, err) == (2, "error: --context prod: no such context in the kubeconfig; its contexts: fake, stale\n")


def test_refused_credentials_are_exit_4(outputs: dict[str, Path], api: FakeApi, tmp_path: Path) -> None:
    config = kubeconfig(api, tmp_path, user={"token": "expired"})
    code, _, err = run("--outputs", outputs["dev"], "--kubeconfig", config, "list")
    assert (code, err) == (4, "error: forbidden (401): Unauthorized\n")


# ---- submit --wait -------------------------------------------------------------------------------------------


def _evolve(api: FakeApi, request: Request) -> None:
    """Kueue creates the Workload on the second look, admits it on the third; then the pods run."""
    workloads = f"{KUEUE}/namespaces/training/workloads"
    if request.method != "GET" or request.path != workloads:
        return
    looks = sum(1 for r in api.requests if r.method == "GET" and r.path == workloads)
    if looks == 2:
        message = (
            "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
            "multislice, 8 more needed"
        )
        api.put(workloads, _train_workload(k.pending_conditions(message, k.ago(minutes=1)), admitted=False))
    if looks == 3:
        api.put(workloads, _train_workload(k.admitted_conditions("training-cluster-queue", k.ago()), admitted=True))
        for s in (0, 1):
            for w in (0, 1):
                labels = {"jobset.sigs.k8s.io/jobset-name": "train-2", "jobset.sigs.k8s.io/job-index": str(s),
                          "batch.kubernetes.io/job-completion-index": str(w)}  # fmt: skip
                api.put(
                    PODS.format(ns="training"), k.pod(f"train-2-slice-{s}-{w}-abcde", "training", labels, running=True)
                )


def _train_workload(conditions: list[dict[str, Any]], *, admitted: bool) -> dict[str, Any]:
    return k.workload(
        "JobSet",
        "train-2",
        "training",
        "training-queue",
        pods=4,
        chips_per_pod=4,
        labels=k.MULTISLICE_LABELS,
        conditions=conditions,
        admission=k.admission("training-cluster-queue", "slice", "multislice", 4, 16) if admitted else None,
        recorded=not admitted,
    )


def _queues(api: FakeApi, training_reserved: tuple[str, str], training_limit: str | None = "8") -> None:
    for queue in (
        k.cluster_queue("research-cluster-queue", "research", cohort="tpu-stack",
                        quotas={"flex-v6e": ("4", None), "multislice": ("8", None)}),
        k.cluster_queue("training-cluster-queue", "training", cohort="tpu-stack",
                        quotas={"flex-v6e": ("0", "0"), "multislice": ("8", training_limit)},
                        reserved={"multislice": training_reserved}),
    ):  # fmt: skip
        api.put(f"{KUEUE}/clusterqueues", queue)
    api.put(f"{KUEUE}/cohorts", k.cohort("tpu-stack", {"multislice": "8"}))


def test_wait_reports_each_change_until_the_workload_runs(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    _queues(api, ("8", "0"))
    api.hooks.append(_evolve)
    code, out, err = run(
        "--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "submit", "train-2", "--team",
        "training", "--pool", "multislice", "--slices", "2", "--image", IMAGE, "--wait", "--interval", "0.01",
    )  # fmt: skip
    assert (code, err) == (0, "")
    progress = [line.split("] ", 1)[1] for line in out.splitlines() if line.startswith("[")]
    assert progress == [
        "Created: waiting for Kueue to create its Workload.",
        "Pending: waiting for quota. It needs 16 TPU chips; on multislice: held by its borrowing limit: "
        "training-cluster-queue holds 8 of its nominal 8 and may borrow at most 8 from cohort tpu-stack (it borrows 0 "
        "now), so it can take only 8 more while the cohort has 16 idle.",
        "Running: admitted 0s ago by training-cluster-queue on flavor multislice (16 TPU chips); 4 of 4 pods "
        "are running.",
    ]


def test_wait_gives_up_after_the_timeout_with_exit_5(outputs: dict[str, Path], api: FakeApi, tmp_path: Path) -> None:
    code, _, err = run(
        "--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "submit", "one", "--team",
        "research", "--pool", "flex-v6e", "--image", IMAGE, "--wait", "--interval", "0.01", "--timeout", "0.05",
    )  # fmt: skip
    assert code == 5
    assert err == "error: one is not running after 0.05 s (state Created)\n"


# ---- list, why, logs, delete ---------------------------------------------------------------------------------


def test_list_shows_queue_flavor_admission_age_and_state(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 8 more needed"
    )
    pending = _train_workload(k.pending_conditions(message, k.ago(minutes=1)), admitted=False)
    pending["metadata"]["creationTimestamp"] = "2026-05-04T11:00:00Z"
    running = k.workload(
        "Job", "flex-v6e-job", "research", "research-queue", pods=1, chips_per_pod=4, labels=k.FLEX_V6E_LABELS,
        conditions=k.admitted_conditions("research-cluster-queue", k.ago(minutes=20)),
        admission=k.admission("research-cluster-queue", "main", "flex-v6e", 1, 4), created="2026-05-04T10:00:00Z",
    )  # fmt: skip
    api.put(f"{KUEUE}/namespaces/training/workloads", pending)
    api.put(f"{KUEUE}/namespaces/research/workloads", running)
    api.put(
        PODS.format(ns="research"),
        k.pod("flex-v6e-job-x7k2p", "research", {"batch.kubernetes.io/job-name": "flex-v6e-job"}, running=True),
    )
    code, out, _ = run("--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "list")
    assert code == 0
    assert out.splitlines() == [
        "NAME          KIND    TEAM      QUEUE           FLAVOR      ADMITTED  AGE  STATE",
        "flex-v6e-job  Job     research  research-queue  flex-v6e    yes       2h   Running",
        "train-2       JobSet  training  training-queue  multislice  no        1h   Pending",
    ]
    code, out, _ = run(
        "--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "list", "--team", "training"
    )
    assert [line.split()[0] for line in out.splitlines()] == ["NAME", "train-2"]


def test_why_reads_the_cluster_and_names_the_config_key(outputs: dict[str, Path], api: FakeApi, tmp_path: Path) -> None:
    """The borrowing-limit case of test_why.py, read from the API: the team's key comes from output stackConfig."""
    _queues(api, ("8", "0"))
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 8 more needed"
    )
    api.put(
        f"{KUEUE}/namespaces/training/workloads",
        _train_workload(k.pending_conditions(message, k.ago()), admitted=False),
    )
    code, out, err = run("--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "why", "train-2")
    assert (code, err) == (6, "")
    assert out == (
        "Pending: waiting for quota. It needs 16 TPU chips; on multislice: held by its borrowing limit: "
        "training-cluster-queue holds 8 of its nominal 8 and may borrow at most 8 from cohort tpu-stack (it "
        "borrows 0 now), so it can take only 8 more while the cohort has 16 idle. It starts when "
        "training-cluster-queue's own workloads free 8 more TPU chips. The platform team can raise "
        "tpu-stack:queues.teams[1].borrowingLimit.multislice to 16 or more."
        "\n"
    )


def test_why_falls_back_to_kueues_words_when_queues_are_out_of_reach(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    """A team member may not read ClusterQueues or the Cohort (cluster-scoped): Kueue's message still answers."""
    api.forbidden.add(("GET", f"{KUEUE}/clusterqueues"))
    api.forbidden.add(("GET", f"{KUEUE}/cohorts"))
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 8 more needed"
    )
    api.put(
        f"{KUEUE}/namespaces/training/workloads",
        _train_workload(k.pending_conditions(message, k.ago()), admitted=False),
    )
    code, out, _ = run("--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "why", "train-2")
    assert (code, out) == (
        6,
        "Pending: waiting for quota. It needs 16 TPU chips; on multislice: Kueue counts 8 more TPU chips "
        "needed. The ClusterQueues could not be read (403), so these are Kueue's own numbers; Kueue's "
        "kueue-clusterqueue-viewer-role and kueue-cohort-viewer-role, bound cluster-wide, give `why` the "
        "queues' numbers. It starts when quota frees up. Nothing needs changing.\n",
    )


def test_why_with_the_cohort_out_of_reach_does_not_count_it_as_empty(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    """ClusterQueues readable, the Cohort not (the chart's clusterqueue and cohort viewer roles are separate): the
    cohort's own 8 chips are not taken for 0."""
    _queues(api, ("8", "0"))
    api.forbidden.add(("GET", f"{KUEUE}/cohorts"))
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 8 more needed"
    )
    api.put(
        f"{KUEUE}/namespaces/training/workloads",
        _train_workload(k.pending_conditions(message, k.ago()), admitted=False),
    )
    code, out, _ = run("--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "why", "train-2")
    assert (code, out) == (
        6,
        "Pending: waiting for quota. It needs 16 TPU chips; on multislice: Kueue counts 8 more TPU chips "
        "needed; training-cluster-queue holds 8 of its nominal 8 and may borrow at most 8 from cohort "
        "tpu-stack (it borrows 0 now). The Cohort could not be read (403), so these are Kueue's own numbers; "
        "Kueue's kueue-clusterqueue-viewer-role and kueue-cohort-viewer-role, bound cluster-wide, give `why` "
        "the queues' numbers. It starts when quota frees up. Nothing needs changing.\n",
    )


def test_why_names_the_workloads_kueue_preempts_from_its_events(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    """Kueue 0.19 records events with the events.k8s.io recorder; `why` lists them through core/v1 and keeps the
    workload's own (involvedObject), here the scheduler's PreemptedWorkload on the preemptor. training borrows
    16 (no borrowing limit here), so the cohort's 24 are in use and research's nominal 8 is lent."""
    _queues(api, ("24", "16"), training_limit=None)
    message = (
        "couldn't assign flavors to pod set slice: insufficient unused quota for google.com/tpu in flavor "
        "multislice, 8 more needed. Pending the preemption of 1 workload(s)"
    )
    explore = k.workload(
        "JobSet", "explore-1", "research", "research-queue", pods=2, chips_per_pod=4, labels=k.MULTISLICE_LABELS,
        conditions=k.pending_conditions(message, k.ago(minutes=1)), recorded=True,
    )  # fmt: skip
    api.put(f"{KUEUE}/namespaces/research/workloads", explore)
    target = "training/jobset-train-2-3f2a1"
    said = (
        f"Preempted workload {target} (UID: uid-train-2) in ClusterQueue training-cluster-queue; preemptor effective "
        "priority: 100 (base: 100, boost: 0); preemptee effective priority: 100 (base: 100, boost: 0)"
    )
    other = k.workload(
        "JobSet", "other", "research", "research-queue", pods=2, chips_per_pod=4, labels=k.MULTISLICE_LABELS,
        conditions=[], suffix="9e8d7",
    )  # fmt: skip
    events = "/api/v1/namespaces/research/events"
    api.put(events, k.kueue_event(explore, "PreemptedWorkload", said, k.ago(minutes=1)))
    unrelated = k.kueue_event(other, "PreemptedWorkload", said.replace(target, "training/jobset-x-1a2b3"), k.ago())
    unrelated["metadata"]["name"] = "jobset-other-9e8d7.18a2b3c4d5e6f709"
    api.put(events, unrelated)
    code, out, _ = run("--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "why", "explore-1")
    assert (code, out) == (
        6,
        "Pending: Kueue is preempting 1 workload to make room for it: training/jobset-train-2-3f2a1 of "
        "training-cluster-queue (priority 100, the same as this one). It needs 8 TPU chips of flavor multislice; "
        "research-cluster-queue holds 0 of its nominal 8: the chips it lacks are its own nominal quota, lent to other "
        "queues of cohort tpu-stack, and Kueue takes them back (reclaimWithinCohort: Any). It starts once they have "
        "stopped and released their quota; nothing needs changing.\n",
    )


def _only_research_readable(api: FakeApi) -> None:
    """A research team member: Kueue's batch-user and Kubernetes' roles in namespace research only, nothing
    cluster-scoped (so no list of all namespaces' Workloads either)."""
    for prefix in (
        f"{KUEUE}/workloads",
        "/apis/batch/v1/jobs",
        "/apis/jobset.x-k8s.io/v1alpha2/jobsets",
        f"{KUEUE}/namespaces/training",
        "/api/v1/namespaces/training",
        "/apis/batch/v1/namespaces/training",
        "/apis/jobset.x-k8s.io/v1alpha2/namespaces/training",
        f"{KUEUE}/clusterqueues",
        f"{KUEUE}/cohorts",
    ):
        api.forbidden.add(("*", prefix))  # fmt: skip
    api.put(JOBS.format(ns="research"), {"metadata": {"name": "flex-v6e-job"}})
    api.put(
        f"{KUEUE}/namespaces/research/workloads",
        k.workload(
            "Job", "flex-v6e-job", "research", "research-queue", pods=1, chips_per_pod=4, labels=k.FLEX_V6E_LABELS,
            conditions=k.admitted_conditions("research-cluster-queue", k.ago(minutes=20)),
            admission=k.admission("research-cluster-queue", "main", "flex-v6e", 1, 4), created="2026-05-04T10:00:00Z",
        ),
    )  # fmt: skip
    api.put(
        PODS.format(ns="research"),
        k.pod("flex-v6e-job-x7k2p", "research", {"batch.kubernetes.io/job-name": "flex-v6e-job"}, running=True),
    )


def test_a_team_member_limited_to_one_namespace_uses_every_command_without_team(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    """Without --team the commands search every team's namespace and skip those that answer 403."""
    _only_research_readable(api)
    config = kubeconfig(api, tmp_path)
    code, out, err = run("--outputs", outputs["dev"], "--kubeconfig", config, "why", "flex-v6e-job")
    assert (code, err) == (0, "")
    assert out == (
        "Running: admitted 20m ago by research-cluster-queue on flavor flex-v6e (4 TPU chips); 1 of 1 pods are "
        "running. Nothing holds it back.\n"
    )
    code, out, err = run("--outputs", outputs["dev"], "--kubeconfig", config, "list")
    assert (code, err) == (0, "note: namespace training could not be read (403); its workloads are not listed\n")
    assert out.splitlines() == [
        "NAME          KIND  TEAM      QUEUE           FLAVOR    ADMITTED  AGE  STATE",
        "flex-v6e-job  Job   research  research-queue  flex-v6e  yes       2h   Running",
    ]
    code, _, err = run("--outputs", outputs["dev"], "--kubeconfig", config, "why", "ghost")
    assert (code, err) == (
        3,
        "error: no workload 'ghost' in namespace research; namespace training could not be read (403)\n",
    )
    code, out, _ = run("--outputs", outputs["dev"], "--kubeconfig", config, "delete", "flex-v6e-job")
    assert (code, out) == (0, "deleted Job research/flex-v6e-job\n")


def test_forbidden_everywhere_or_in_the_team_named_is_exit_4(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    _only_research_readable(api)
    config = kubeconfig(api, tmp_path)
    code, _, err = run("--outputs", outputs["dev"], "--kubeconfig", config, "why", "train-2", "--team", "training")
    path = f"{KUEUE}/namespaces/training/workloads"
    assert (code, err) == (4, f'error: forbidden (403): GET {path} is forbidden: User "dev" cannot do this\n')
    api.forbidden.add(("*", f"{KUEUE}/namespaces/research"))
    code, _, err = run("--outputs", outputs["dev"], "--kubeconfig", config, "list")
    path = f"{KUEUE}/namespaces/research/workloads"
    assert (code, err) == (
        4,
        f'error: forbidden (403): GET {path} is forbidden: User "dev" cannot do this (no team\'s namespace could be '
        "read: research, training)\n",
    )


def test_why_of_nothing_is_exit_3(outputs: dict[str, Path], api: FakeApi, tmp_path: Path) -> None:
    code, _, err = run("--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "why", "ghost")
    assert (code, err) == (3, "error: no workload 'ghost' in the teams' namespaces\n")


def test_logs_of_the_leader_and_of_a_chosen_worker(outputs: dict[str, Path], api: FakeApi, tmp_path: Path) -> None:
    api.put(
        f"{KUEUE}/namespaces/training/workloads",
        _train_workload(k.admitted_conditions("training-cluster-queue", k.ago()), admitted=True),
    )
    for s in (0, 1):
        for w in (0, 1):
            name = f"train-2-slice-{s}-{w}-abcde"
            labels = {"jobset.sigs.k8s.io/jobset-name": "train-2", "jobset.sigs.k8s.io/job-index": str(s),
                      "batch.kubernetes.io/job-completion-index": str(w)}  # fmt: skip
            api.put(PODS.format(ns="training"), k.pod(name, "training", labels, running=True))
            api.logs[f"{PODS.format(ns='training')}/{name}"] = f"slice {s} worker {w}\nGlobal device count: 16\n"
    config = kubeconfig(api, tmp_path)
    code, out, _ = run("--outputs", outputs["dev"], "--kubeconfig", config, "logs", "train-2")
    assert (code, out) == (0, "slice 0 worker 0\nGlobal device count: 16\n")
    code, out, _ = run(
        "--outputs", outputs["dev"], "--kubeconfig", config, "logs", "train-2", "--slice", "1", "--worker", "1", "-f"
    )
    assert (code, out) == (0, "slice 1 worker 1\nGlobal device count: 16\n")
    (last,) = [r for r in api.requests if r.path.endswith("/log")][-1:]
    assert last.query == {"follow": ["true"], "container": ["jax-tpu"]}
    code, _, err = run("--outputs", outputs["dev"], "--kubeconfig", config, "logs", "train-2", "--slice", "2")
    assert (code, err) == (3, "error: no pod of train-2 for slice 2 worker 0 yet; `tpu-stack why train-2` tells why\n")


def test_logs_reads_the_workload_container_when_another_comes_first(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    """A pod with another container listed before the workload's (an exporter added by a mutating webhook)."""
    api.put(
        f"{KUEUE}/namespaces/training/workloads",
        _train_workload(k.admitted_conditions("training-cluster-queue", k.ago()), admitted=True),
    )
    labels = {"jobset.sigs.k8s.io/jobset-name": "train-2"}
    pod = k.pod("train-2-slice-0-0-abcde", "training", labels, running=True)
    pod["spec"]["containers"].insert(0, {"name": "metrics-exporter", "image": "exporter:1.2.0"})
    api.put(PODS.format(ns="training"), pod)
    api.logs[f"{PODS.format(ns='training')}/train-2-slice-0-0-abcde"] = "step 1\n"
    code, out, _ = run("--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "logs", "train-2")
    assert (code, out) == (0, "step 1\n")
    (request,) = [r for r in api.requests if r.path.endswith("/log")]
    assert request.query["container"] == ["jax-tpu"]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_generated_workloads_run_the_container_logs_reads(stack: str) -> None:
    for generated in workloads(stack_config(stack)):
        main = next(obj for obj in generated.objects if obj["kind"] in ("Job", "JobSet"))
        template = main["spec"]["template"] if main["kind"] == "Job" else main["spec"]["replicatedJobs"][0]["template"]
        pod = template["spec"] if main["kind"] == "Job" else template["spec"]["template"]["spec"]
        assert [c["name"] for c in pod["containers"]] == [kueue.WORKLOAD_CONTAINER], generated.name


def test_the_stacks_provisioning_configs_retry_as_often_as_why_counts() -> None:
    """`why` counts queued-provisioning attempts out of 1 + 3: the stack's ProvisioningRequestConfigs write that
    retry limit (Kueue's default, provisioningrequestconfig_types.go) down (components/config/controllers.py)."""
    configs = [o for o in kueue_objects(stack_config("prod")) if o["kind"] == "ProvisioningRequestConfig"]
    assert configs
    assert [o["spec"]["retryStrategy"]["backoffLimitCount"] for o in configs] == [3] * len(configs)
    assert kueue.PROVISIONING_RETRIES == 3


def test_delete_removes_the_jobset_and_lets_the_collector_take_the_rest(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    api.put(JOBSETS.format(ns="training"), {"metadata": {"name": "train-2"}})
    api.put(
        f"{KUEUE}/namespaces/training/workloads",
        _train_workload(k.admitted_conditions("training-cluster-queue", k.ago()), admitted=True),
    )
    code, out, _ = run("--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "delete", "train-2")
    assert (code, out) == (0, "deleted JobSet training/train-2\n")
    (delete,) = [r for r in api.requests if r.method == "DELETE"]
    assert (delete.path, delete.query) == (
        JOBSETS.format(ns="training") + "/train-2",
        {"propagationPolicy": ["Background"]},
    )


def test_delete_of_a_generated_multi_host_job_takes_its_service(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    """`kubectl create -f` of a make-workloads file leaves a Service nobody owns; delete removes it too."""
    api.put(JOBS.format(ns="research"), {"metadata": {"name": "multislice-job"}})
    service = {
        "metadata": {"name": "multislice-job-svc"},
        "spec": {"clusterIP": "None", "selector": {"job-name": "multislice-job"}},
    }
    api.put("/api/v1/namespaces/research/services", service)
    code, out, _ = run(
        "--outputs",
        outputs["dev"],
        "--kubeconfig",
        kubeconfig(api, tmp_path),
        "delete",
        "multislice-job",
        "--team",
        "research",
    )
    assert (code, out) == (0, "deleted Job research/multislice-job\n")
    assert [r.path for r in api.requests if r.method == "DELETE"] == [
        JOBS.format(ns="research") + "/multislice-job",
        "/api/v1/namespaces/research/services/multislice-job-svc",
    ]


# ---- no cluster to talk to -----------------------------------------------------------------------------------


def test_hidden_kubeconfig_is_one_line_and_exit_2(outputs: dict[str, Path]) -> None:
    """The offline engine's outputs (like `pulumi stack output` without --show-secrets) hide the kubeconfig."""
    code, _, err = run("--outputs", outputs["dev"], "list")
    assert (code, err) == (
        2,
        f"error: {outputs['dev']} hides the kubeconfig: read the outputs with `pulumi stack output --json "
        "--show-secrets`, or pass --kubeconfig FILE\n",
    )


def test_missing_auth_plugin_is_named_with_its_install_hint(outputs: dict[str, Path], tmp_path: Path) -> None:
    """The stack's kubeconfig signs in with gke-gcloud-auth-plugin (components/gke_cluster.py)."""
    saved = json.loads(outputs["dev"].read_text())
    saved["kubeconfig"] = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "tpu-dev", "cluster": {"server": "https://192.0.2.10"}}],
            "users": [{"name": "tpu-dev", "user": {"exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "gke-gcloud-auth-plugin-not-here",
                "installHint": "gcloud components install gke-gcloud-auth-plugin"}}}],
            "contexts": [{"name": "tpu-dev", "context": {"cluster": "tpu-dev", "user": "tpu-dev"}}],
            "current-context": "tpu-dev",
        }
    )  # fmt: skip
    (tmp_path / "outputs.json").write_text(json.dumps(saved))
    code, _, err = run("--outputs", tmp_path / "outputs.json", "list")
    assert (code, err) == (
        2,
        "error: the kubeconfig signs in with `gke-gcloud-auth-plugin-not-here`, which is not on PATH: gcloud "
        "components install gke-gcloud-auth-plugin\n",
    )


def test_an_unreachable_cluster_is_exit_1(outputs: dict[str, Path], tmp_path: Path) -> None:
    with serving(FakeApi()) as api:
        config = kubeconfig(api, tmp_path)
    code, _, err = run("--outputs", outputs["dev"], "--kubeconfig", config, "list")
    assert code == 1
    assert err.startswith(f"error: cannot reach the cluster at {api.server}: ")


def test_no_pulumi_on_path_says_how_to_pass_saved_outputs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert shutil.which("pulumi") is None
    code, _, err = run("--stack", "dev", "list")
    assert (code, err) == (
        2,
        "error: no `pulumi` on PATH to read the stack's outputs; install the Pulumi CLI, or pass --outputs FILE "
        "(saved with `pulumi stack output --json --show-secrets > FILE`)\n",
    )


def test_a_multikueue_manager_gets_one_object_per_workload(tmp_path: Path) -> None:
    """Submitted to the manager, a multi-host slice of a worker's queued pool group is one JobSet (MultiKueue copies
    that object alone to the worker; JobSet makes the headless Service there) and a single-host slice one Job."""
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(stack_plan("multiregion").outputs))
    for pool, kind in (("east-queued-v6e", "JobSet"), ("east-flex-v6e", "Job")):
        code, out, err = run(
            "--outputs", path, "submit", "one", "--team", "research", "--pool", pool, "--image", IMAGE, "--dry-run"
        )
        assert (code, err) == (0, ""), pool
        assert [obj["kind"] for obj in yaml.safe_load_all(out)] == [kind], pool


def test_a_single_host_slice_as_a_jobset_when_asked(outputs: dict[str, Path]) -> None:
    """`--jobset` on a single-host group: a JobSet of one slice, one pod (no multislice)."""
    code, out, err = run(
        "--outputs", outputs["dev"], "submit", "one", "--team", "research", "--pool", "flex-v6e", "--jobset",
        "--image", IMAGE, "--dry-run",
    )  # fmt: skip
    assert (code, err) == (0, "")
    (jobset,) = yaml.safe_load_all(out)
    (job,) = jobset["spec"]["replicatedJobs"]
    assert (jobset["kind"], job["replicas"], job["template"]["spec"]["parallelism"]) == ("JobSet", 1, 1)
    assert validate.validate_all([jobset]) == []


# ---- big clusters, recorded states, exit codes for scripts ------------------------------------------------------


def test_lists_are_read_a_page_at_a_time(outputs: dict[str, Path], api: FakeApi, tmp_path: Path) -> None:
    """1,200 Workloads in one namespace: `list` asks for 500 at a time and follows `continue` (the API server's
    chunking, as kubectl pages), one request per page, none per workload; admitted ones with Kueue's PodsReady need
    no pod list."""
    for index in range(1200):
        workload = _train_workload(k.admitted_conditions("training-cluster-queue", k.ago(minutes=5)), admitted=True)
        workload["metadata"]["name"] = f"jobset-train-{index:04d}-3f2a1"
        workload["metadata"]["ownerReferences"][0]["name"] = f"train-{index:04d}"
        workload["status"]["conditions"].append(k.condition("PodsReady", "True", "Started", "", k.ago(minutes=1)))
        api.add(workload)
    code, out, _ = run("--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "list")
    assert code == 0
    assert len(out.splitlines()) == 1 + 1200
    assert all(line.endswith("Running") for line in out.splitlines()[1:])
    pages = [(r.path, r.query.get("limit"), r.query.get("continue")) for r in api.requests]
    assert pages == [
        (f"{KUEUE}/workloads", ["500"], None),
        (f"{KUEUE}/workloads", ["500"], ["500"]),
        (f"{KUEUE}/workloads", ["500"], ["1000"]),
    ]


def test_why_and_list_read_a_recorded_cluster_state(outputs: dict[str, Path], tmp_path: Path) -> None:
    """`kubectl get ... -A -o json` and `-o yaml` files in a directory stand in for the cluster (docs/workloads.md),
    a pod's log in logs/<namespace>/<pod>.log; nothing is written."""
    state = tmp_path / "state"
    (state / "logs" / "training").mkdir(parents=True)
    workload = _train_workload(k.admitted_conditions("training-cluster-queue", k.ago(minutes=3)), admitted=True)
    pods = [
        {"apiVersion": "v1", "kind": "Pod", **k.pod(f"train-2-slice-{s}-0-abcde", "training",
         {"jobset.sigs.k8s.io/jobset-name": "train-2", "jobset.sigs.k8s.io/job-index": str(s)}, running=True)}
        for s in (0, 1)
    ]  # fmt: skip
    (state / "namespaced.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [workload, *pods]}))
    cluster_queue = k.cluster_queue(
        "training-cluster-queue", "training", cohort=None, quotas={"multislice": ("24", None)},
        reserved={"multislice": ("16", "0")},
    )  # fmt: skip
    (state / "cluster.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [cluster_queue]}))
    (state / "logs" / "training" / "train-2-slice-0-0-abcde.log").write_text("step 7\n")
    base = ("--outputs", outputs["dev"], "--recorded", state, "--at", "2026-05-04T12:00:00Z")
    code, out, _ = run(*base, "list")
    assert (code, out.splitlines()[1]) == (
        0,
        "train-2  JobSet  training  training-queue  multislice  yes       30m  Starting",
    )
    code, out, _ = run(*base, "why", "train-2")
    assert (code, out) == (
        6,
        "Starting: admitted 3m ago by training-cluster-queue on flavor multislice (16 TPU chips); 2 of 4 pods are "
        "running. The rest are being created; `tpu-stack logs train-2` shows the leader's output.\n",
    )
    code, out, _ = run(*base, "logs", "train-2")
    assert (code, out) == (0, "step 7\n")
    code, _, err = run(*base, "delete", "train-2")
    assert (code, err) == (2, "error: a recorded cluster state is read-only: submit and delete need a cluster\n")


def test_a_recorded_state_finds_a_job_by_its_name_among_other_teams_jobs(
    outputs: dict[str, Path], tmp_path: Path
) -> None:
    """`why` looks a job up across namespaces with fieldSelector=metadata.name (as the API server serves it for every
    kind); a recording answers that selector too, so other Jobs of other namespaces are not taken for it: not "in
    several teams' namespaces", and never a namespace where neither its Workload nor its job is."""
    state = tmp_path / "state"
    state.mkdir()
    workload = _train_workload(k.admitted_conditions("training-cluster-queue", k.ago(minutes=3)), admitted=True)
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "train-2", "namespace": "training", "creationTimestamp": k.ago(minutes=4)},
    }
    foreign = [
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace}}
        for name, namespace in (("etl-nightly", "research"), ("probe", "research"), ("backup", "kube-system"))
    ]  # fmt: skip
    items = [workload, jobset, *foreign]
    (state / "objects.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    base = ("--outputs", outputs["dev"], "--recorded", state, "--at", "2026-05-04T12:00:00Z")
    code, out, err = run(*base, "why", "train-2")
    assert (code, err) == (6, "")
    assert out.startswith("Starting: admitted 3m ago by training-cluster-queue on flavor multislice")
    # Only another team's Job and train-2's Workload recorded (no JobSet): the Workload is found, not the Job.
    (state / "objects.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [workload, *foreign]}))
    code, out, err = run(*base, "why", "train-2")
    assert (code, err) == (6, "")
    assert out.startswith("Starting: admitted 3m ago by training-cluster-queue on flavor multislice")


def test_submit_wait_stops_with_exit_7_when_the_workload_fails(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    def finish(api: FakeApi, request: Request) -> None:
        workloads = f"{KUEUE}/namespaces/training/workloads"
        if (
            request.method == "GET"
            and request.path == workloads
            and workloads + "/jobset-train-2-3f2a1" not in (api.objects)
        ):
            failed = k.condition("Finished", "True", "Failed", "jobset failed due to one or more job failures", k.ago())
            api.put(workloads, _train_workload([failed], admitted=False))

    api.hooks.append(finish)
    code, out, _ = run(
        "--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "submit", "train-2", "--team",
        "training", "--pool", "multislice", "--slices", "2", "--image", IMAGE, "--wait", "--interval", "0.01",
    )  # fmt: skip
    assert code == 7
    assert out.splitlines()[-1].endswith("] Failed 0s ago: jobset failed due to one or more job failures.")


def test_the_stack_names_its_provisioning_checks_as_the_components_declare_them() -> None:
    """`why` knows a queued pool group's check by name (tpu_stack/stack.py) without importing the components'
    Pulumi code; they must agree with what components/kueue_queues.py declares."""
    from components.kueue_queues import admission_check_name
    from tpu_stack import stack as stack_module

    config = stack_config("prod")
    queued = [pool for pool in config.queue_flavors if pool.provisioning == "queued"]
    assert queued
    for pool in queued:
        assert stack_module.provisioning_check(pool.name) == admission_check_name(pool)


def test_a_worker_is_reached_with_the_users_credentials_and_the_systems_roots() -> None:
    """The worker's DNS endpoint presents a publicly trusted certificate (docs/multiregion.md): the manager's
    cluster CA and TLS server name are dropped, the user's credentials kept, through every token refresh."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "m", "cluster": {"server": "https://192.0.2.1", "certificate-authority-data": "Y2E=",
                                                "tls-server-name": "kubernetes.default"}}],
        "users": [{"name": "m", "user": {"token": "user-token"}}],
        "contexts": [{"name": "m", "context": {"cluster": "m", "user": "m"}}],
        "current-context": "m",
    }  # fmt: skip
    from tpu_stack import kube

    worker = kube.Cluster(config, server=kube.worker_server("gke-0123.us-east5.gke.goog"))
    for _ in range(2):
        _, url, headers, _, _ = worker.api.param_serialize(
            method="GET", resource_path="/version", header_params={}, auth_settings=["BearerToken"]
        )
        assert (url, headers["authorization"]) == ("https://gke-0123.us-east5.gke.goog/version", "Bearer user-token")
    assert (worker.api.configuration.ssl_ca_cert, worker.api.configuration.tls_server_name) == (None, None)


def test_why_finds_a_job_by_name_across_namespaces_without_reading_every_workload(
    outputs: dict[str, Path], api: FakeApi, tmp_path: Path
) -> None:
    """Without --team, the Job or JobSet is looked up by name across all namespaces (fieldSelector=metadata.name),
    then only its namespace's Workloads are read."""
    api.add({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "train-2",
             "namespace": "training"}})  # fmt: skip
    api.add(_train_workload(k.admitted_conditions("training-cluster-queue", k.ago()), admitted=True))
    code, _, _ = run("--outputs", outputs["dev"], "--kubeconfig", kubeconfig(api, tmp_path), "why", "train-2")
    assert code == 6
    reads = [(r.path, r.query.get("fieldSelector")) for r in api.requests][:3]
    assert reads == [
        ("/apis/jobset.x-k8s.io/v1alpha2/jobsets", ["metadata.name=train-2"]),
        ("/apis/batch/v1/jobs", ["metadata.name=train-2"]),
        (f"{KUEUE}/namespaces/training/workloads", None),
    ]
    assert not [r for r in api.requests if r.path == f"{KUEUE}/workloads"]


def test_a_namespace_objects_path_is_the_namespace_itself() -> None:
    # `/api/v1/namespaces/<name>` names a Namespace; `/api/v1/namespaces/<name>/<plural>` a collection in it.
    from tpu_stack import kube

    assert kube._split("/api/v1/namespaces/kueue-system") == ("/api/v1", None, "namespaces", "kueue-system")
    assert kube._split("/api/v1/namespaces/ns/pods/p") == ("/api/v1", "ns", "pods", "p")
    assert kube._split("/apis/kueue.x-k8s.io/v1beta2/clusterqueues") == (
        "/apis/kueue.x-k8s.io/v1beta2",
        None,
        "clusterqueues",
        None,
    )


def test_why_times_evictions_by_the_settings_the_stack_deployed(outputs: dict[str, Path]) -> None:
    """The stack exports Kueue's waitForPodsReady (output `waitForPodsReady`); `why` reads it instead of assuming
    Kueue's defaults: dev two hours to start and to recover (its flex-start), prod 30 minutes and an hour, both 60 s
    doubling to an hour and three requeues. Outputs of a stack deployed before the export: Kueue 0.19.2's defaults
    (30 minutes, recovery = timeout, no limit: apis/config/v1beta2/defaults.go)."""
    dev, prod = (stack_module.from_file(outputs[s]) for s in ("dev", "prod"))
    assert dev.view().pods_ready == PodsReadySettings(7200, 7200, 60, 3600, 3)
    assert prod.view().pods_ready == PodsReadySettings(1800, 3600, 60, 3600, 3)
    older = {key: value for key, value in dev.outputs.items() if key != "waitForPodsReady"}
    assert stack_module.Stack("old", older).view().pods_ready == PodsReadySettings(1800, 1800, 60, 3600, None)
    off = {**dev.outputs, "waitForPodsReady": {"timeout": "45m0s", "recoveryTimeout": "0s"}}
    assert stack_module.Stack("off", off).view().pods_ready == PodsReadySettings(2700, None, 60, 3600, None)


@pytest.mark.parametrize("kind", ["Job", "JobSet"])
def test_max_exec_time_is_kueues_limit_on_the_time_admitted(outputs: dict[str, Path], kind: str) -> None:
    """`--max-exec-time 36h` labels the job `kueue.x-k8s.io/max-exec-time-seconds: "129600"`: Kueue copies it into
    the Workload's spec.maximumExecutionTimeSeconds (pkg/controller/jobframework/utils.go
    MaximumExecutionTimeSecondsForObject reads the label, a positive integer) and deactivates the workload once its
    time admitted, summed over its admissions, passes it (pkg/controller/core/workload_controller.go
    reconcileMaxExecutionTime), whether its pods ran or waited. Without the flag, no label."""
    pool, slices = ("multislice", "2") if kind == "JobSet" else ("flex-v6e", "1")
    base: list[str | Path] = [
        "--outputs", outputs["dev"], "submit", "train-2", "--team", "research", "--pool", pool, "--slices", slices
    ]  # fmt: skip
    code, out, err = run(*base, "--image", IMAGE, "--max-exec-time", "36h", "--dry-run")
    assert (code, err) == (0, "")
    (obj,) = list(yaml.safe_load_all(out))
    assert obj["kind"] == kind
    assert obj["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": "research-queue",
        "kueue.x-k8s.io/max-exec-time-seconds": "129600",
    }
    assert validate.validate_all([obj]) == []
    _, plain, _ = run(*base, "--image", IMAGE, "--dry-run")
    assert "max-exec-time" not in plain
