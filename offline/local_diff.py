"""`make plan-diff BASE=<rev> [HEAD=<rev>]`: the comment a pull request gets, between any two revisions, on a laptop.

What a pull request's comment compares is BASE against the merge GitHub makes of the pull request into BASE; so here:
the head (a revision, or without one the working tree: its tracked files as they are and the untracked ones git does
not ignore) is merged into BASE as `git merge-tree` merges (no work tree, no index, no ref changes; a working tree
becomes a commit object first, as `git stash create` makes one), and when the head already holds BASE (a branch
rebased on it) the merge is the head itself. Each side is written out of git into a folder of its own and previews
its own stack files with its own code, as the workflow's `make -C <side> preview` does (with its
`policies/config.json`); the merge's code writes the comment (`python -m offline diff`). A stack whose preview wrote
no plan reads as a failed preview. The installed environment is reused: this Python and its packages, and the
pinned helm of this checkout (`.tools`, linked into each side). Nothing is written to the work tree but the comment,
`build/plan-diff/comment.md`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from offline.stack_files import stack_files
from offline.vendor import REPO

EXIT_OK, EXIT_UNSAFE, EXIT_USAGE = 0, 1, 2
WORKING_TREE = "working tree"


class DiffError(Exception):
    """A revision cannot be read or merged; the message is one line."""


def _git(repo: Path, *args: str, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False, env=env)
    if done.returncode not in ok:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise DiffError(f"git {args[0]}: {said}")
    return done.stdout


def commit(repo: Path, revision: str) -> str:
    """The full commit id `revision` names (a branch, a tag, `HEAD~1`, an id)."""
    if not revision or revision.startswith("-"):
        raise DiffError(f"{revision!r} is not a revision: name a branch, a tag or a commit (BASE=main)")
    found = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}", ok=(0, 1))
    if not found.strip():
        raise DiffError(f"{revision!r} is not a commit of {repo}: name a branch, a tag or a commit (BASE=main)")
    return found.strip()


def working_tree_commit(repo: Path) -> str:
    """A commit object of the working tree as it is (child of HEAD), built in a scratch index: the real index, the
    work tree and every ref stay as they are."""
    with tempfile.TemporaryDirectory(prefix="tpu-stack-index-") as scratch:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(scratch) / "index")}
        _git(repo, "read-tree", "HEAD", env=env)
        _git(repo, "add", "--all", env=env)
        tree = _git(repo, "write-tree", env=env).strip()
    identity = {"GIT_AUTHOR_NAME": "plan-diff", "GIT_AUTHOR_EMAIL": "plan-diff@localhost"}
    identity |= {"GIT_COMMITTER_NAME": "plan-diff", "GIT_COMMITTER_EMAIL": "plan-diff@localhost"}
    return _git(repo, "commit-tree", tree, "-p", "HEAD", "-m", WORKING_TREE, env={**os.environ, **identity}).strip()


def merged_tree(repo: Path, base: str, head: str) -> str:
    """The tree of `head` merged into `base`, as GitHub's merge commit of a pull request holds it."""
    out = _git(repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", base, head, ok=(0, 1))
    tree, *conflicts = [line for line in out.splitlines() if line]
    if conflicts:
        raise DiffError(
            f"the head does not merge cleanly into the base (conflicts in {', '.join(conflicts)}): GitHub runs no "
            "workflow for such a pull request either; merge or rebase on the base first"
        )
    return tree


def export(repo: Path, tree: str, into: Path) -> None:
    """The files of `tree` in `into`, from git's objects (`git archive`): nothing of the work tree is read."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", tree], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)


def preview_all(side: Path, build: Path, label: str) -> None:
    """`make preview` of every stack file of the side, with the side's own code; a failed preview writes no plan."""
    tools = side / ".tools"
    if not tools.exists() and (REPO / ".tools").exists():
        tools.symlink_to((REPO / ".tools").resolve())
    policy = side / "policies" / "config.json"
    for stack, path in stack_files(side).items():
        command = [sys.executable, "-m", "offline", "preview", "--stack", stack, "--config", str(path)]
        command += ["--out", str(build / stack), "--quiet"]
        command += ["--policy-config", str(policy)] if policy.is_file() else []
        done = subprocess.run(command, cwd=side, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            first = next((line for line in done.stderr.splitlines() if line.startswith("error:")), "")
            print(f"offline preview of {stack} at {label} exited {done.returncode} {first}".rstrip(), file=sys.stderr)


def plan_diff(repo: Path, base: str, head: str | None, out: Path) -> tuple[str, list[str]]:
    """The comment comparing `base` with `head` merged into it (`head` None: the working tree), written to `out`;
    and the lines of the stacks that drop protection in the same change as a replace or delete (the pull request's
    check fails on them: offline/plandiff.py `unguarded`)."""
    base_commit = commit(repo, base)
    head_commit = commit(repo, head) if head else working_tree_commit(repo)
    labels = {
        "base": _git(repo, "rev-parse", "--short", base_commit).strip(),
        "head": _git(repo, "rev-parse", "--short", head_commit).strip() if head else WORKING_TREE,
    }
    trees = {"base": f"{base_commit}^{{tree}}", "head": merged_tree(repo, base_commit, head_commit)}
    with tempfile.TemporaryDirectory(prefix="tpu-stack-plan-diff-") as scratch:
        sides = {name: Path(scratch) / name for name in trees}
        builds = {name: Path(scratch) / f"{name}-build" for name in trees}
        for name, tree in trees.items():
            export(repo, tree, sides[name])
            builds[name].mkdir()
            preview_all(sides[name], builds[name], labels[name])
        comment = Path(scratch) / "comment.md"
        command = [sys.executable, "-m", "offline", "diff", "--base", str(builds["base"])]
        command += ["--head", str(builds["head"]), "--out", str(comment)]
        command += ["--base-stacks", str(sides["base"]), "--head-stacks", str(sides["head"])]
        command += ["--base-label", labels["base"], "--head-label", labels["head"]]
        done = subprocess.run(command, cwd=sides["head"], capture_output=True, text=True, check=False)
        if done.returncode not in (EXIT_OK, EXIT_UNSAFE) or not comment.is_file():
            raise DiffError(f"the head's `python -m offline diff` exited {done.returncode}: {done.stderr.strip()}")
        text = comment.read_text()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return text, done.stderr.splitlines() if done.returncode == EXIT_UNSAFE else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offline.local_diff", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD", help="the revision to compare against (default HEAD)")
    parser.add_argument("--head", help="the revision to compare (default: the working tree, uncommitted edits too)")
    parser.add_argument("--repo", type=Path, default=REPO, help="the git checkout (default: this one)")
    parser.add_argument("--out", type=Path, help="where to write the comment (default <repo>/build/plan-diff/)")
    args = parser.parse_args(argv)
    try:
        out = args.out or args.repo / "build" / "plan-diff" / "comment.md"
        text, unsafe = plan_diff(args.repo, args.base, args.head, out)
    except DiffError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(text)
    for line in unsafe:
        print(line, file=sys.stderr)
    return EXIT_UNSAFE if unsafe else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
