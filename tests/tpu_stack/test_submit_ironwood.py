"""`tpu-stack submit` on TPU7x (the ironwood fixture's outputs): the user's image, command and environment in every
container of the pod (one per NUMA node), and Kueue's placement request on the placed pool group."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from offline import validate
from tests.fixtures import stack_plan
from tpu_stack import cli

IMAGE = "us-docker.pkg.dev/my-project/train/jax:0.6.2"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("outputs") / "ironwood.json"
    path.write_text(json.dumps(stack_plan("ironwood", render_charts=False).outputs))
    return path


def run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_a_two_slice_train_jobset_runs_the_command_in_both_containers_and_asks_for_one_block(outputs: Path) -> None:
    code, out, err = run(
        "--outputs", outputs, "submit", "pretrain", "--pool", "train", "--slices", "2", "--image", IMAGE,
        "--env", "STEPS=1000", "--dry-run", "--", "python", "-m", "train",
    )  # fmt: skip
    assert (code, err) == (0, "")
    (jobset,) = yaml.safe_load_all(out)
    assert validate.validate_all([jobset]) == []
    (slices,) = jobset["spec"]["replicatedJobs"]
    assert (slices["replicas"], slices["template"]["spec"]["parallelism"]) == (2, 16)
    pod = slices["template"]["spec"]["template"]
    for container in pod["spec"]["containers"]:
        assert container["image"] == IMAGE
        assert container["command"] == ["python", "-m", "train"]
        assert container["env"] == [{"name": "STEPS", "value": "1000"}]
        assert container["resources"]["limits"]["google.com/tpu"] == 2
    assert len(pod["spec"]["containers"]) == 2
    annotations = pod["metadata"]["annotations"]
    assert annotations["kueue.x-k8s.io/podset-slice-required-topology"] == "cloud.google.com/gke-nodepool"
    assert annotations["kueue.x-k8s.io/podset-slice-size"] == "16"
    assert annotations["kueue.x-k8s.io/podset-required-topology"] == "cloud.google.com/gce-topology-block"


def test_the_flex_start_group_is_not_placed_by_topology(outputs: Path) -> None:
    code, out, _ = run("--outputs", outputs, "submit", "probe", "--pool", "burst", "--image", IMAGE, "--dry-run")
    assert code == 0
    (jobset,) = yaml.safe_load_all(out)  # a multi-host slice runs as a JobSet
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    assert not [key for key in annotations if key.startswith("kueue.x-k8s.io/podset")]
    assert [c["name"] for c in template["spec"]["containers"]] == ["jax-tpu-1", "jax-tpu-2"]
