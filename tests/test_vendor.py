"""The repo is self-contained: vendored upstream files match their recorded sums and provenance, and nothing
the project runs or documents reaches for a folder outside the clone."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from tests.guard import USERS_STACK_FILE

REPO = Path(__file__).resolve().parent.parent
VENDOR = REPO / "vendor"


def recorded_sums() -> dict[str, str]:
    lines = (VENDOR / "SHA256SUMS").read_text().splitlines()
    return {path.removeprefix("./"): digest for digest, path in (line.split(maxsplit=1) for line in lines)}


def vendored_files() -> set[str]:
    ours = ("README.md", "SHA256SUMS", "refresh.sh")
    return {str(p.relative_to(VENDOR)) for p in VENDOR.rglob("*") if p.is_file() and p.name not in ours}


def test_every_vendored_file_has_its_recorded_sha256() -> None:
    sums = recorded_sums()
    assert set(sums) == vendored_files()
    for path, digest in sums.items():
        assert hashlib.sha256((VENDOR / path).read_bytes()).hexdigest() == digest, path


def test_the_charts_the_stack_pins_are_vendored() -> None:
    assert {"charts/kueue-0.19.2.tgz", "charts/jobset-0.12.0.tgz", "charts/lws-v0.10.0.tgz"} <= vendored_files()


def test_the_provenance_table_names_every_vendored_folder_and_file() -> None:
    readme = (VENDOR / "README.md").read_text()
    for entry in ("crds/kueue/", "crds/jobset/", "crds/gmp/", "crds/lws/", "charts/kueue-0.19.2.tgz",
                  "charts/jobset-0.12.0.tgz", "charts/lws-v0.10.0.tgz", "data/tpu_catalog_xpk.json",
                  "schemas/pulumi-project.json"):  # fmt: skip
        assert f"`{entry}" in readme, entry
    assert "v0.19.2" in readme and "v0.12.0" in readme and "v0.17.2" in readme and "v0.10.0" in readme
    assert "v3.259.0" in readme


def test_no_tracked_file_points_outside_the_repo() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    outside = ("../" + "shared", "/work" + "/", "TPU_STACK_" + "SHARED")
    offenders = [
        f"{path}: {marker}"
        for path in tracked
        if not path.startswith("vendor/") and not USERS_STACK_FILE.fullmatch(path) and (REPO / path).is_file()
        for marker in outside
        if marker in (REPO / path).read_text(errors="ignore")
    ]
    assert offenders == []
