"""The project's stacks: every `Pulumi.<stack>.yaml` at the top of the checkout is one, whatever its name.

What lists stacks reads them from here or globs the same files (the Makefile's scan, the workflows' matrices, the
generic checks in tests/test_stacks.py), so adding, editing or removing a stack file needs no other edit.
`python -m offline.stack_files` prints the list as the workflows' matrices take it (`stacks=["dev", ...]`, a line
for `$GITHUB_OUTPUT`), or exits 2 with a line per stack file whose `tpu-stack:protected` the order could misread
(components/stacks.py `file_problem`). Standard library only: the workflows run it before anything is installed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from components.stacks import file_is_protected, file_problem
from offline.vendor import REPO

PREFIX, SUFFIX = "Pulumi.", ".yaml"


def stack_files(root: Path = REPO) -> dict[str, Path]:
    """Stack name -> its file, for every `Pulumi.<stack>.yaml` in `root` (not `Pulumi.yaml`, the project), by name."""
    found = {p.name[len(PREFIX) : -len(SUFFIX)]: p for p in root.glob(f"{PREFIX}*{SUFFIX}") if p.is_file()}
    return dict(sorted(found.items()))


def deploy_order(files: dict[str, Path]) -> list[str]:
    """The stacks of these files in the order a merge deploys them, one at a time: every unprotected stack (dev and
    its kind) first, so that a change meets a stack that may break before one that must not; the protected ones (by
    name, or `tpu-stack:protected: true` in the file: components/stacks.py) last; by name within each."""
    return sorted(files, key=lambda name: (file_is_protected(name, files[name]), name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offline.stack_files", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO, help="the project's folder (default: this checkout)")
    args = parser.parse_args(argv)
    files = stack_files(args.root)
    texts = {path: path.read_text(encoding="utf-8") for path in files.values()}
    problems = [f"error: {path}: {problem}" for path, text in texts.items() if (problem := file_problem(text))]
    if problems:  # the order would put a protected stack among the unprotected: no matrix, nothing deploys
        print("\n".join(problems), file=sys.stderr)
        return 2
    print(f"stacks={json.dumps(deploy_order(files))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
