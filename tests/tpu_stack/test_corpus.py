"""`tpu-stack why` on every situation of the corpus (tests/tpu_stack/corpus), against local fake API servers.

Each case's objects are served by one fake API server per cluster (a MultiKueue stack's manager and each worker, the
workers at the endpoints the stack outputs, reached with the same user's token); the command runs with the fixture
stack's outputs, as a user runs it, and its answer is checked against what the case's author wrote from the sources:
the state, the outcome its exit code tells, who can change it, phrases with the numbers, and wrong answers it must
not give. The same cases, recorded as `kubectl get -o json` files, give the same answers with `--recorded`.
"""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kueue_queues import kueue_objects
from components.multikueue import admission_check as multikueue_check
from tests.fixtures import stack_config, stack_plan
from tests.tpu_stack import corpus_cases
from tests.tpu_stack import kueue_objects as k
from tests.tpu_stack.corpus_cases import MANAGER, Case
from tests.tpu_stack.fake_api import FakeApi, serving
from tpu_stack import cli

CASES = corpus_cases.load()
EXIT = {"runs": 0, "waits": 6, "stopped": 7}


@pytest.fixture(scope="module")
def outputs() -> dict[str, dict[str, Any]]:
    """Stack -> its outputs, as `pulumi stack output --json --show-secrets` gives them."""
    return {stack: stack_plan(stack, render_charts=False).outputs for stack in sorted({c.stack for c in CASES})}


@pytest.fixture(autouse=True)
def _clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "clock", lambda: k.NOW)


def _closed_port() -> int:
    """A local port nothing listens on: a worker that does not answer."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _clusters(case: Case) -> Iterator[dict[str, str]]:
    """Serve each cluster of the case; cluster -> its URL."""
    with ExitStack() as stack:
        urls = {}
        for name, cluster in case.clusters.items():
            if cluster.unreachable:
                urls[name] = f"http://127.0.0.1:{_closed_port()}"
                continue
            api = FakeApi()
            for obj in cluster.objects:
                api.add(obj)
            api.forbidden.update(cluster.forbidden)
            stack.enter_context(serving(api))
            urls[name] = api.server
        yield urls


def _outputs_file(outputs: dict[str, dict[str, Any]], case: Case, urls: dict[str, str], folder: Path) -> Path:
    saved = json.loads(json.dumps(outputs[case.stack]))
    for worker, entry in (saved.get("multiKueue") or {}).get("workers", {}).items():
        entry["clusterEndpoint"] = urls.get(worker, f"http://127.0.0.1:{_closed_port()}")
    path = folder / f"{case.stack}-outputs.json"
    path.write_text(json.dumps(saved))
    return path


def _run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _check(case: Case, code: int, out: str, err: str) -> None:
    expect = case.expect
    assert err == "", f"{case.id}: {err}"
    answer = json.loads(out)
    said = f"{answer['reason']} {answer['change']}"
    assert (answer["state"], answer["outcome"]) == (expect["state"], expect["outcome"]), f"{case.id}: {said}"
    assert code == EXIT[expect["outcome"]], case.id
    assert sorted(answer["who"]) == sorted(expect["who"]), f"{case.id}: {said}"
    missing = [phrase for phrase in expect["says"] if phrase not in said]
    assert not missing, f"{case.id}: {missing} not in: {said}"
    wrong = [phrase for phrase in expect.get("never", []) if phrase in said]
    assert not wrong, f"{case.id}: {wrong} in: {said}"


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_why_answers_each_case_as_its_sources_say(
    case: Case, outputs: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    with _clusters(case) as urls:
        api_url = urls[MANAGER]
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(FakeApi(port=int(api_url.rsplit(":", 1)[1])).kubeconfig()))
        saved = _outputs_file(outputs, case, urls, tmp_path)
        code, out, err = _run("--outputs", saved, "--kubeconfig", kubeconfig, *case.ask, "--json")
    _check(case, code, out, err)


RECORDABLE = [case for case in CASES if not any(c.forbidden or c.unreachable for c in case.clusters.values())]


@pytest.mark.parametrize("case", RECORDABLE, ids=[case.id for case in RECORDABLE])
def test_a_recorded_state_gives_the_same_answer(case: Case, outputs: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """`kubectl get KINDS -A -o json > DIR/x.json` on each cluster (a worker's in DIR/<worker>/), read with
    --recorded: no cluster, the same answer."""
    for name, cluster in case.clusters.items():
        folder = tmp_path / "state" / name if name else tmp_path / "state"
        folder.mkdir(parents=True, exist_ok=True)
        listing = {"apiVersion": "v1", "kind": "List", "items": cluster.objects}
        (folder / "objects.json").write_text(json.dumps(listing))
    saved = tmp_path / "outputs.json"
    saved.write_text(json.dumps(outputs[case.stack]))
    code, out, err = _run("--outputs", saved, "--recorded", tmp_path / "state", *case.ask, "--json")
    _check(case, code, out, err)


def test_the_corpus_covers_every_class_with_its_sources() -> None:
    """At least 30 situations; every class of the issue; each case cites the source of what its objects say."""
    assert len(CASES) >= 30
    assert len({case.id for case in CASES}) == len(CASES)
    assert {case.cls for case in CASES} == set(corpus_cases.CLASSES)
    for case in CASES:
        assert case.sources, case.id
        for source in case.sources:
            assert {"at", "path", "lines", "quote"} <= set(source), case.id
        assert case.expect["outcome"] in corpus_cases.OUTCOMES, case.id
        assert set(case.expect["who"]) <= set(corpus_cases.ACTORS), case.id
        assert case.expect["says"], case.id


@pytest.mark.parametrize("stack", ["dev", "prod", "multiregion"])
def test_the_shared_queues_are_the_ones_the_stack_declares(stack: str) -> None:
    """The corpus's ClusterQueues, LocalQueues and Cohorts carry the specs components/kueue_queues.py declares for
    the fixture stack (each worker's for a manager's workers), with only the CRDs' defaults added."""
    shared = yaml.safe_load((corpus_cases.CORPUS / "shared.yaml").read_text())
    config = stack_config(stack)
    sets = {f"{stack}-queues": config}
    if config.is_manager:
        sets = {"multiregion-manager-queues": config.manager_queues}
        for worker, name in zip(config.worker_configs, ("east", "japan"), strict=True):
            sets[f"multiregion-{name}-queues"] = worker
    defaults = {"stopPolicy", "borrowWithinCohort", "flavorFungibility"}
    for name, declared_from in sets.items():
        objects = kueue_objects(declared_from) + ([multikueue_check()] if name.endswith("manager-queues") else [])
        declared = {
            (o["kind"], o["metadata"]["name"]): o
            for o in objects
            if o["kind"] in ("ClusterQueue", "LocalQueue", "Cohort", "AdmissionCheck")
        }
        for obj in shared[name]:
            spec = declared[(obj["kind"], obj["metadata"]["name"])]["spec"]
            ours = {key: value for key, value in obj["spec"].items() if key not in defaults}
            mine = {key: value for key, value in spec.items() if key not in defaults}
            if "preemption" in ours:
                ours["preemption"] = {key: v for key, v in ours["preemption"].items() if key not in defaults}
            assert json.loads(json.dumps(ours), parse_int=str) == json.loads(json.dumps(mine), parse_int=str), (
                f"{name}: {obj['kind']} {obj['metadata']['name']}"
            )
