"""The corpus of users' config mistakes (tests/corpora/config_mistakes.yaml), each run as a user runs it: a stack file
through `python -m offline preview --config FILE`. Each must stop with exit 2 and exactly its one error line, register
nothing, and never repeat a credential it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config import ConfigError
from offline import __main__ as cli
from offline.engine import read_stack_file, run_program
from tests.fixtures import FIXTURE_STACKS, stack_path

CORPUS = Path(__file__).resolve().parent.parent / "corpora" / "config_mistakes.yaml"
DATA = yaml.safe_load(CORPUS.read_text())
CASES: list[dict[str, Any]] = DATA["cases"]
AREAS = (
    "pools",
    "queues and ladders",
    "serving",
    "MultiKueue",
    "bucket and FUSE",
    "cluster and control plane",
    "monitoring",
    "whole-file YAML",
)
STACK = "corpus"


def _base(name: str) -> dict[str, Any]:
    text = stack_path(name).read_text() if name in FIXTURE_STACKS else DATA["bases"][name]
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def stack_file(case: dict[str, Any], folder: Path) -> Path:
    """The case as the stack file a user would have: the whole `file`, or the base with `config` put in it."""
    path = folder / f"Pulumi.{STACK}.yaml"
    if case.get("missing"):
        return path
    if "file" in case:
        path.write_text(case["file"])
        return path
    data = _base(case["base"])
    data["config"].update(yaml.safe_load(case["config"]))
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_every_area_of_the_model_has_at_least_five_cases() -> None:
    counts = {area: sum(case["area"] == area for case in CASES) for area in AREAS}
    assert all(count >= 5 for count in counts.values()), counts
    assert {case["area"] for case in CASES} == set(AREAS)
    assert len({case["case"] for case in CASES}) == len(CASES)


def test_the_development_guide_counts_the_corpus_as_it_is() -> None:
    """docs/development.md states the corpus's size per area; a case added or removed without it fails here."""
    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "development.md").read_text().split())
    counts = ", ".join(f"{area} {sum(case['area'] == area for case in CASES)}" for area in AREAS)
    assert f"{len(CASES)} stack files as users write them, at least five in each area of the model ({counts})" in text


@pytest.mark.parametrize("case", CASES, ids=[case["case"] for case in CASES])
def test_the_mistake_is_one_line_naming_its_key(
    case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = stack_file(case, tmp_path)
    code = cli.main(["preview", "--stack", STACK, "--config", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2, err or out
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors == ["error: " + case["error"].replace("{file}", str(path))]
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()  # no plan written
    if "secret" in case:
        assert case["secret"] not in out + err


@pytest.mark.parametrize("case", [c for c in CASES if "config" in c], ids=lambda case: case["case"])
def test_the_program_registers_nothing(case: dict[str, Any], tmp_path: Path) -> None:
    """Under the engine too (the program's own check, before any resource): what `pulumi preview` would run."""
    recorded: list[dict[str, Any]] = []
    config = read_stack_file(stack_file(case, tmp_path))
    with pytest.raises(ConfigError) as raised:
        run_program(config, stack=STACK, recorded=recorded)
    assert recorded == []
    assert raised.value.lines == [case["error"]]
    if "secret" in case:
        assert case["secret"] not in str(raised.value)
