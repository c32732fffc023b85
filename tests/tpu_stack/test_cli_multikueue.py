"""`tpu-stack list`, `why` and `logs` on a MultiKueue manager answer from the worker that runs the workload.

Three local fake API servers: the multiregion fixture stack's manager and its two workers, each worker at the
`multiKueue.workers.<name>.clusterEndpoint` the stack outputs (here the local server's URL), reached with the user's
own credentials from the manager's kubeconfig (the same token; on GKE the same Google identity at each cluster's DNS
endpoint). Objects follow Kueue v0.19.2's MultiKueue (pkg/controller/admissionchecks/multikueue/workload.go): the
manager's Workload records the worker in status.clusterName and its check says "The workload was admitted on
"<worker>""; the worker's copy of the Workload and its Job have the manager's names (cloneForCreate; the Job
adapter's SyncJob), and the pods run on the worker only.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures import stack_plan
from tests.tpu_stack import corpus_cases
from tests.tpu_stack import kueue_objects as k
from tests.tpu_stack.fake_api import TOKEN, FakeApi, serving
from tpu_stack import cli

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
V6E = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "2x2"}
EAST, JAPAN = "tpu-mr-east5", "tpu-mr-japan"


@pytest.fixture(scope="module")
def outputs() -> dict[str, Any]:
    return stack_plan("multiregion", render_charts=False).outputs


@pytest.fixture(autouse=True)
def _clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "clock", lambda: k.NOW)


@pytest.fixture
def clusters() -> Iterator[dict[str, FakeApi]]:
    """The manager ("") and both workers, each serving on its own port, with their idle queues (the corpus's
    shared objects, tests/tpu_stack/corpus/shared.yaml)."""
    shared = yaml.safe_load((corpus_cases.CORPUS / "shared.yaml").read_text())
    sets = {"": "multiregion-manager-queues", EAST: "multiregion-east-queues", JAPAN: "multiregion-japan-queues"}
    with ExitStack() as stack:
        apis = {name: stack.enter_context(serving(FakeApi())) for name in sets}
        for name, objects in sets.items():
            for obj in shared[objects]:
                apis[name].add(obj)
        yield apis


def _files(outputs: dict[str, Any], clusters: dict[str, FakeApi], folder: Path) -> tuple[Path, Path]:
    saved = json.loads(json.dumps(outputs))
    for worker, entry in saved["multiKueue"]["workers"].items():
        entry["clusterEndpoint"] = clusters[worker].server
    (folder / "outputs.json").write_text(json.dumps(saved))
    (folder / "kubeconfig").write_text(yaml.safe_dump(clusters[""].kubeconfig()))
    return folder / "outputs.json", folder / "kubeconfig"


def _run(files: tuple[Path, Path], *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["--outputs", str(files[0]), "--kubeconfig", str(files[1]), *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _manager_workload(job: str, *, worker: str | None, pods_ready: bool | None) -> dict[str, Any]:
    """A training Job of one v6e 2x2 pod on the manager; admitted on `worker`, or dispatched to both workers."""
    if worker is None:
        reserved = "Quota reserved in ClusterQueue training-cluster-queue"
        unsatisfied = "The workload has not all checks ready"
        conditions = [
            k.condition("QuotaReserved", "True", "QuotaReserved", reserved, k.ago(minutes=10)),
            k.condition("Admitted", "False", "UnsatisfiedChecks", unsatisfied, k.ago(minutes=10)),
        ]
        checks = [{"name": "multikueue", "state": "Pending", "message": "", "lastTransitionTime": k.ago(minutes=10)}]
    else:
        conditions = k.admitted_conditions("training-cluster-queue", k.ago(minutes=20))
        checks = [
            {"name": "multikueue", "state": "Ready", "message": f'The workload was admitted on "{worker}"',
             "lastTransitionTime": k.ago(minutes=20)}
        ]  # fmt: skip
        if pods_ready is not None:
            conditions.append(
                k.condition("PodsReady", "True" if pods_ready else "False", "Started" if pods_ready else "WaitForStart",
                            "", k.ago(minutes=15))
            )  # fmt: skip
    workload = k.workload(
        "Job", job, "training", "training-queue", pods=1, chips_per_pod=4, labels=V6E, conditions=conditions,
        admission=k.admission("training-cluster-queue", "main", "east-flex-v6e", 1, 4), checks=checks,
        created=k.ago(hours=1),
    )  # fmt: skip
    if worker is not None:
        workload["status"]["clusterName"] = worker
    else:
        workload["status"]["nominatedClusterNames"] = [EAST, JAPAN]
    return workload


def _copy(workload: dict[str, Any], flavor: str, *, admitted: bool) -> dict[str, Any]:
    """The worker's copy: the manager's name, namespace and spec, MultiKueue's origin label, no owner."""
    copy = json.loads(json.dumps(workload))
    copy["metadata"] = {
        "name": workload["metadata"]["name"],
        "namespace": "training",
        "uid": "uid-copy-" + workload["metadata"]["name"],
        "creationTimestamp": k.ago(minutes=30),
        "labels": {"kueue.x-k8s.io/multikueue-origin": "multikueue"},
    }
    if admitted:
        copy["status"] = {
            "conditions": [
                *k.admitted_conditions("training-cluster-queue", k.ago(minutes=20)),
                k.condition("PodsReady", "True", "Started", "", k.ago(minutes=15)),
            ],
            "admission": k.admission("training-cluster-queue", "main", flavor, 1, 4),
        }
    else:
        message = (
            "couldn't assign flavors to pod set main: insufficient unused quota for google.com/tpu in flavor "
            f"{flavor}, 4 more needed"
        )
        copy["status"] = {"conditions": k.pending_conditions(message, k.ago(minutes=10))}
    return copy


def _running_on(clusters: dict[str, FakeApi], worker: str, workload: dict[str, Any], job: str) -> None:
    clusters[worker].add(_copy(workload, "japan-flex-v6e" if worker == JAPAN else "east-flex-v6e", admitted=True))
    labels = {"batch.kubernetes.io/job-name": job, "batch.kubernetes.io/job-completion-index": "0"}
    pod = k.pod(f"{job}-0-x7k2p", "training", labels, running=True)
    clusters[worker].add({"apiVersion": "v1", "kind": "Pod", **pod})
    clusters[worker].logs[f"/api/v1/namespaces/training/pods/{job}-0-x7k2p"] = f"{job} on {worker}\nstep 100\n"


def test_why_and_logs_follow_the_workload_to_its_worker(
    outputs: dict[str, Any], clusters: dict[str, FakeApi], tmp_path: Path
) -> None:
    files = _files(outputs, clusters, tmp_path)
    workload = _manager_workload("tune-1", worker=JAPAN, pods_ready=True)
    clusters[""].add(workload)
    _running_on(clusters, JAPAN, workload, "tune-1")
    code, out, err = _run(files, "why", "tune-1")
    assert (code, err) == (0, "")
    assert out == (
        "On worker tpu-mr-japan (asia-northeast1): Running: admitted 20m ago by training-cluster-queue on flavor "
        "japan-flex-v6e (4 TPU chips); 1 of 1 pods are running. Nothing holds it back.\n"
    )
    code, out, err = _run(files, "logs", "tune-1")
    assert (code, out, err) == (0, "tune-1 on tpu-mr-japan\nstep 100\n", "")
    # The worker was read with the user's own token; the manager served no pod and no log, the other worker nothing.
    japan = [(r.method, r.path) for r in clusters[JAPAN].requests]
    assert ("GET", "/api/v1/namespaces/training/pods/tune-1-0-x7k2p/log") in japan
    assert ("GET", f"{KUEUE}/namespaces/training/workloads/{workload['metadata']['name']}") in japan
    assert not [r for r in clusters[""].requests if r.path.startswith("/api/v1/namespaces/training/pods")]
    assert clusters[EAST].requests == []


def _busy(api: FakeApi, flavor: str) -> None:
    """Both teams of a worker hold all 4 of their chips of its single-host flavor."""
    for queue in ("research-cluster-queue", "training-cluster-queue"):
        obj = api.objects[f"{KUEUE}/clusterqueues/{queue}"]
        for entry in obj["status"]["flavorsReservation"]:
            if entry["name"] == flavor:
                entry["resources"] = [{"name": "google.com/tpu", "total": "4", "borrowed": "0"}]


def test_why_of_a_dispatched_workload_reads_every_worker(
    outputs: dict[str, Any], clusters: dict[str, FakeApi], tmp_path: Path
) -> None:
    files = _files(outputs, clusters, tmp_path)
    _busy(clusters[EAST], "east-flex-v6e")
    _busy(clusters[JAPAN], "japan-flex-v6e")
    workload = _manager_workload("tune-2", worker=None, pods_ready=None)
    clusters[""].add(workload)
    clusters[EAST].add(_copy(workload, "east-flex-v6e", admitted=False))
    clusters[JAPAN].add(_copy(workload, "japan-flex-v6e", admitted=False))
    code, out, _ = _run(files, "why", "tune-2", "--json")
    answer = json.loads(out)
    assert (code, answer["state"], answer["outcome"]) == (6, "Provisioning", "waits")
    assert "MultiKueue copied it to 2 workers" in answer["reason"]
    for worker, region, flavor in ((EAST, "us-east5", "east-flex-v6e"), (JAPAN, "asia-northeast1", "japan-flex-v6e")):
        assert (
            f"on {worker} ({region}): waiting for quota. It needs 4 TPU chips; on {flavor}: training-cluster-queue "
            "holds 4 of its nominal 4, and 8 of the cohort's 8 are in use"
        ) in answer["reason"]
    code, _, err = _run(files, "logs", "tune-2")
    assert (code, err) == (
        3,
        "error: tune-2 runs on no worker yet: MultiKueue has not admitted it on one; `tpu-stack why tune-2` tells "
        "why\n",
    )


def test_list_on_the_manager_names_the_worker_and_reads_pods_only_there(
    outputs: dict[str, Any], clusters: dict[str, FakeApi], tmp_path: Path
) -> None:
    """A workload Kueue keeps PodsReady on needs no pod read; one without it (waitForPodsReady turned off) is
    answered from its worker's pods, one list for the namespace there."""
    files = _files(outputs, clusters, tmp_path)
    ready = _manager_workload("tune-1", worker=JAPAN, pods_ready=True)
    unknown = _manager_workload("tune-3", worker=EAST, pods_ready=None)
    unknown["metadata"]["creationTimestamp"] = k.ago(minutes=50)
    waiting = _manager_workload("tune-2", worker=None, pods_ready=None)
    waiting["metadata"]["creationTimestamp"] = k.ago(minutes=40)
    for workload in (ready, unknown, waiting):
        clusters[""].add(workload)
    _running_on(clusters, EAST, unknown, "tune-3")
    code, out, err = _run(files, "list")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "NAME    KIND  TEAM      QUEUE           FLAVOR         ADMITTED  AGE  STATE         CLUSTER",
        "tune-1  Job   training  training-queue  east-flex-v6e  yes       1h   Running       tpu-mr-japan",
        "tune-3  Job   training  training-queue  east-flex-v6e  yes       50m  Running       tpu-mr-east5",
        "tune-2  Job   training  training-queue  east-flex-v6e  no        40m  Provisioning  -",
    ]
    assert [(r.path, r.query.get("limit")) for r in clusters[EAST].requests] == [
        ("/api/v1/namespaces/training/pods", ["500"])
    ]
    assert clusters[JAPAN].requests == []


def test_a_worker_that_refuses_the_user_is_named(
    outputs: dict[str, Any], clusters: dict[str, FakeApi], tmp_path: Path
) -> None:
    """The user's Google identity has no role on a worker (403 there): the manager's record still says where it runs
    and that its pods are ready, and the refusal is named."""
    files = _files(outputs, clusters, tmp_path)
    workload = _manager_workload("tune-1", worker=JAPAN, pods_ready=True)
    clusters[""].add(workload)
    clusters[JAPAN].forbidden.add(("*", "/"))
    code, out, _ = _run(files, "why", "tune-1")
    path = f"{KUEUE}/namespaces/training/workloads/{workload['metadata']['name']}"
    assert (code, out) == (
        0,
        "Running on worker tpu-mr-japan (asia-northeast1): MultiKueue admitted it there and Kueue reports all its pods "
        f'ready; tpu-mr-japan could not be read: forbidden (403): GET {path} is forbidden: User "dev" cannot do this. '
        "Nothing holds it back.\n",
    )
    assert clusters[JAPAN].requests[0].path == path
    assert TOKEN  # the same token signs in everywhere; a refused one would be a 401 named the same way
