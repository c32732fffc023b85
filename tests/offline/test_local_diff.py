"""`make plan-diff` (offline/local_diff.py) on a git repository of the project with the dev fixture stack: two commits
compared, and a working tree with an uncommitted edit on a branch behind its base, merged into it as GitHub merges a
pull request. Expectations by hand: a v5e 2x4 slice is 2 VMs of 4 chips (8 chips); dev's multislice group has 3
slices (24 chips), of which research holds 8 and training 8, the cohort the other 8."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from offline import local_diff
from offline.vendor import REPO
from tests.fixtures import stack_path

PROJECT = ("components", "offline", "policies", "vendor", "schema", "__main__.py", "Pulumi.yaml", ".gitignore")
"""What a preview and the diff need of the project (its code as it is now, committed or not)."""


def git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def write_dev(repo: Path, slices: int = 3, training_share: int = 8) -> None:
    dev = yaml.safe_load(stack_path("dev").read_text())
    config = dev["config"]
    next(p for p in config["tpu-stack:tpuPools"] if p["name"] == "multislice")["slices"] = slices
    next(t for t in config["tpu-stack:queues"]["teams"] if t["name"] == "training")["shares"]["multislice"] = (
        training_share
    )
    (repo / "Pulumi.dev.yaml").write_text(yaml.safe_dump(dev, sort_keys=False))


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main: `dev` (the fixture stack), then `a slice added` (multislice 3 -> 4 slices). Branch `share` from `dev`,
    checked out."""
    root = tmp_path_factory.mktemp("project")
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    for name in listed:
        if name.split("/")[0] in PROJECT and (REPO / name).is_file() and not (REPO / name).is_symlink():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    git(root, "init", "-q", "-b", "main")
    write_dev(root)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "dev")
    write_dev(root, slices=4)
    git(root, "commit", "-qam", "a slice added")
    git(root, "checkout", "-q", "-b", "share", "main~1")
    return root


def test_one_revision_against_another(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fourth slice: one node pool more (2 VMs, scaled from zero as flex-start), 8 chips more that no team holds,
    so the cohort's share grows from 8 to 16; the dashboard charts the new pool."""
    out = tmp_path / "comment.md"
    assert local_diff.main(["--repo", str(repo), "--base", "main~1", "--head", "main", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text == out.read_text()
    base, head = git(repo, "rev-parse", "--short", "main~1").strip(), git(repo, "rev-parse", "--short", "main").strip()
    assert text.startswith(
        "## Plan diff\n\nWhat merging this pull request changes in each stack: offline plans of the base "
        f"`{base}` and of the merge with `{head}`,"
    )
    for line in (
        "- `dev`: 1 to create, 2 to update, 0 to replace, 0 to delete",
        "| `multislice` | slices 3 → 4, VMs 6 → 8, chips 24 → 32 |",
        "| cohort `tpu-stack` (no team's share) | `multislice` | 8 → 16 | |",
        "- `gcp:container/nodePool:NodePool` `multislice-3`: ct6e-standard-4t 2x4 nodes=0..2 flex-start us-east5-b",
    ):
        assert line in text.splitlines(), line


def test_the_working_tree_is_merged_into_the_base_as_a_pull_request(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On branch `share`, behind main by the fourth slice, training's share grows 8 -> 16 chips, not committed. The
    comment is what the pull request would get: main's fourth slice is not taken away (the branch merges into main),
    the edit is in; the cohort keeps 32 - 8 - 16 = 8 chips. The work tree, the index and every ref are untouched."""
    write_dev(repo, training_share=16)
    before = [git(repo, *args) for args in (["status", "--porcelain"], ["show-ref"], ["diff", "--cached"])]
    assert local_diff.main(["--repo", str(repo), "--base", "main", "--out", str(tmp_path / "comment.md")]) == 0
    text = capsys.readouterr().out
    assert [git(repo, *args) for args in (["status", "--porcelain"], ["show-ref"], ["diff", "--cached"])] == before
    assert before[0] == " M Pulumi.dev.yaml\n"
    assert "of the merge with `working tree`" in text
    lines = text.splitlines()
    assert "- `dev`: 0 to create, 2 to update, 0 to replace, 0 to delete" in lines
    assert "| `training` | `multislice` | 8 → 16 | 8 |" in lines
    assert "| cohort `tpu-stack` (no team's share) | `multislice` | 16 → 8 | |" in lines
    assert "multislice-3" not in text and "**Capacity**" not in text
    git(repo, "checkout", "--", "Pulumi.dev.yaml")


def test_a_head_that_does_not_merge_or_a_revision_that_is_none_is_one_line(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(repo, "checkout", "-q", "-b", "clash", "main~1")
    write_dev(repo, slices=2)
    git(repo, "commit", "-qam", "two slices")
    args = ["--repo", str(repo), "--out", str(tmp_path / "comment.md")]
    assert local_diff.main([*args, "--base", "main", "--head", "clash"]) == 2
    assert local_diff.main([*args, "--base", "no-such-branch"]) == 2
    assert local_diff.main([*args, "--base=--upload-pack=x"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: the head does not merge cleanly into the base (conflicts in Pulumi.dev.yaml): GitHub runs no workflow "
        "for such a pull request either; merge or rebase on the base first",
        f"error: 'no-such-branch' is not a commit of {repo}: name a branch, a tag or a commit (BASE=main)",
        "error: '--upload-pack=x' is not a revision: name a branch, a tag or a commit (BASE=main)",
    ]
    assert not (tmp_path / "comment.md").exists()
    git(repo, "checkout", "-q", "share")


def test_make_plan_diff_runs_the_module_with_base_and_an_optional_head() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "\nBASE ?= HEAD\nHEAD ?=\nplan-diff: $(STAMP) $(HELM)\n" in makefile
    assert "\t$(PY) -m offline.local_diff --base '$(BASE)' $(if $(HEAD),--head '$(HEAD)')\n" in makefile


def test_protection_dropped_with_a_replacement_exits_1_after_printing_the_comment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The head's `python -m offline diff` exits 1 with the comment written and a line per unsafe stack
    (tests/offline/test_plandiff.py holds when): the laptop run prints both and fails as the pull request's check."""
    line = "error: stack prod-us: this change drops protection and replaces ..."

    def diff(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        Path(command[command.index("--out") + 1]).write_text("## Plan diff\n")
        return subprocess.CompletedProcess(command, 1, "", line + "\n")

    monkeypatch.setattr(local_diff, "preview_all", lambda *_: None)
    monkeypatch.setattr(local_diff.subprocess, "run", diff)
    monkeypatch.setattr(local_diff, "export", lambda *_: None)
    monkeypatch.setattr(local_diff, "commit", lambda _repo, rev: rev)
    monkeypatch.setattr(local_diff, "merged_tree", lambda *_: "tree")
    monkeypatch.setattr(local_diff, "_git", lambda *_: "abc1234\n")
    out = tmp_path / "comment.md"
    assert local_diff.main(["--repo", str(tmp_path), "--base", "main", "--head", "pr", "--out", str(out)]) == 1
    printed = capsys.readouterr()
    assert (printed.out, printed.err, out.read_text()) == ("## Plan diff\n", line + "\n", "## Plan diff\n")
