"""Reading a stack file as the program will see it: a key given twice and an unquoted date or time are refused,
with the config key each names."""

from __future__ import annotations

from pathlib import Path

import pytest
from pulumi import RunError

from components.config import ConfigError
from offline import __main__ as cli
from offline import commands
from offline.engine import DuplicateUrn, read_stack_file, run_program
from tests.conftest import BASE
from tests.fixtures import stack_data, stack_path

STACK = """\
secretsprovider: gcpkms://projects/p/locations/global/keyRings/pulumi/cryptoKeys/dev
config:
  gcp:project: tpu-stack-dev
  gcp:region: us-central1
  tpu-stack:cluster:
    name: tpu-dev
    systemPool:
      minNodes: 1
      minNodes: 2
  tpu-stack:tpuPools:
    - name: a
      machineType: ct6e-standard-4t
    - name: b
      labels:
        team: x
        team: y
  gcp:region: us-east4
"""


def test_every_key_given_twice_is_one_line_naming_its_config_key(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(STACK)
    with pytest.raises(ConfigError) as error:
        read_stack_file(path)
    assert error.value.lines == [
        "tpu-stack:cluster.systemPool.minNodes: given twice in Pulumi.dev.yaml (lines 8 and 9); YAML keys are unique "
        "and only one value would be read: keep one",
        "tpu-stack:tpuPools[1].labels.team: given twice in Pulumi.dev.yaml (lines 15 and 16); YAML keys are unique "
        "and only one value would be read: keep one",
        "gcp:region: given twice in Pulumi.dev.yaml (lines 4 and 17); YAML keys are unique and only one value would "
        "be read: keep one",
    ]


def test_the_same_key_in_different_mappings_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(STACK.replace("      minNodes: 2\n", "").replace("        team: y\n", "").replace(
        "  gcp:region: us-east4\n", ""))  # fmt: skip
    config = read_stack_file(path)
    assert [pool["name"] for pool in config["tpu-stack:tpuPools"]] == ["a", "b"]
    assert config["tpu-stack:cluster"]["systemPool"] == {"minNodes": 1}


def test_the_fixture_stack_files_have_no_key_twice() -> None:
    for stack, region in (("dev", "us-east5"), ("prod", "us-west4")):
        assert read_stack_file(stack_path(stack))["gcp:region"] == region


def test_an_unquoted_date_or_time_is_one_line_asking_for_quotes(tmp_path: Path) -> None:
    """The Pulumi CLI hands the program an unquoted YAML timestamp as Go's time text ("2026-01-03 02:00:00 +0000
    UTC"), which no RFC 3339 parser reads; quoted, the text arrives as written."""
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(
        "config:\n"
        "  tpu-stack:cluster:\n"
        "    maintenance:\n"
        "      recurringWindow:\n"
        "        startTime: 2026-01-03T02:00:00Z\n"
        '        endTime: "2026-01-03T08:00:00Z"\n'
        "  tpu-stack:tpuPools:\n"
        "    - name: cal\n"
        "      futureReservation:\n"
        "        startTime: 2026-12-01\n"
    )
    with pytest.raises(ConfigError) as error:
        read_stack_file(path)
    assert error.value.lines == [
        "tpu-stack:cluster.maintenance.recurringWindow.startTime: 2026-01-03T02:00:00Z is an unquoted YAML timestamp, "
        'which Pulumi hands the program as Go\'s time text, not as written; quote it: "2026-01-03T02:00:00Z"',
        "tpu-stack:tpuPools[0].futureReservation.startTime: 2026-12-01 is an unquoted YAML timestamp, which Pulumi "
        'hands the program as Go\'s time text, not as written; quote it: "2026-12-01"',
    ]
    path.write_text(path.read_text().replace("2026-01-03T02:00:00Z", '"2026-01-03T02:00:00Z"').replace(
        "2026-12-01", '"2026-12-01"'))  # fmt: skip
    assert read_stack_file(path)["tpu-stack:tpuPools"][0]["futureReservation"]["startTime"] == "2026-12-01"


# ---- the engine refuses a second resource of one URN ----------------------------------------------------------------

TWO_OF_ONE_URN = """\
import pulumi


class Slices(pulumi.ComponentResource):
    def __init__(self, name, node_pool):
        super().__init__("tpu-stack:index:TpuSlicePools", name, None, None)
        pulumi.CustomResource("gcp:container/nodePool:NodePool", node_pool, {"name": node_pool},
                              opts=pulumi.ResourceOptions(parent=self))


Slices("a", "a-1")
Slices("a-1", "a-1")
"""


def test_a_second_resource_of_one_urn_fails_the_run_as_the_engine_does(tmp_path: Path) -> None:
    """Two parents of one type, each with a child of one type and name: the URNs leave the parents' names out, so
    they are one URN, which pulumi's step generator refuses (pkg/resource/deploy/step_generator.go generateURN,
    sdk/go/common/diag/errors.go GetDuplicateResourceURNError). The mock engine overwrote the first silently."""
    program = tmp_path / "program.py"
    program.write_text(TWO_OF_ONE_URN)
    with pytest.raises(DuplicateUrn) as error:
        run_program({}, stack="dev", program=program)
    assert str(error.value) == (
        "Duplicate resource URN 'urn:pulumi:dev::tpu-stack::tpu-stack:index:TpuSlicePools$gcp:container/nodePool:"
        "NodePool::a-1'; try giving it a unique name"
    )
    # The failed run leaves nothing behind: the next one in the same process runs (the SDK kept its pending outputs).
    program.write_text(TWO_OF_ONE_URN.replace('Slices("a-1", "a-1")', 'Slices("b", "b-0")'))
    assert len(run_program({}, stack="dev", program=program).resources) == 4


def test_the_preview_command_says_it_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m offline preview` prints the engine's error as one line and exits 2, no traceback."""
    program = tmp_path / "program.py"
    program.write_text(TWO_OF_ONE_URN)
    monkeypatch.setattr(commands, "run_stack", lambda *args, **kwargs: run_program({}, stack="dev", program=program))
    code = cli.main(["preview", "--stack", "dev", "--config", str(stack_path("dev")), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [
        "error: Duplicate resource URN 'urn:pulumi:dev::tpu-stack::tpu-stack:index:TpuSlicePools$gcp:container/"
        "nodePool:NodePool::a-1'; try giving it a unique name"
    ]


def test_a_program_that_fails_as_it_runs_leaves_the_next_run_clean() -> None:
    """Found by tests/properties: a run that failed after registering (here the cluster's version below its floor, an
    error the program raises from an apply) left tasks of its closed event loop where the Pulumi SDK keeps pending
    outputs for contexts that never set their own (worker threads), and the next run in the process failed with
    "Event loop is closed"."""
    failing = {**BASE, "tpu-stack:cluster": {"releaseChannel": "REGULAR", "minMasterVersion": "1.35"}}
    with pytest.raises(RunError, match=r"below the floor 1\.35"):
        run_program(failing, stack="dev")
    assert run_program(BASE, stack="dev").by_type("gcp:container/cluster:Cluster")


def test_a_run_keeps_no_event_loop_of_its_worker_threads() -> None:
    """Found by the deep property run (hundreds of runs in one process): each run's gRPC worker thread left its event
    loop, with what it referenced of the run, in the engine's set until the process exited: about 5 MB a run."""
    from offline import engine

    run_program(stack_data("dev"), stack="dev")  # its bucket's writer is granted by project number: an invoke
    run_program(stack_data("dev"), stack="dev")
    assert not engine._WORKER_LOOPS
