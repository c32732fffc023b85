"""Prometheus' rule unit tester, `promtool test rules`, from Debian's `prometheus` package: `python -m
tests.effects.promtool` (run by `make`) installs it at .promtool/bin/promtool.

The package is taken by apt (`apt-get download` of the pinned version, checked by apt against the archive's signed
index), or, where apt does not carry that version (another distribution), from the same path of Debian's archive;
either way the .deb must have the pinned SHA-256 (the one Debian's index lists for it). Only the promtool binary is
unpacked: nothing is installed system-wide and no Prometheus server is started.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

from offline.vendor import REPO

PACKAGE = "prometheus"
VERSION = "2.42.0+ds-5+deb12u1"
"""Debian 12 (bookworm)'s prometheus, the version `apt-cache policy prometheus` offers there."""
DEB = f"{PACKAGE}_{VERSION}_amd64.deb"
DEB_SHA256 = "81d59a24fce84f7fbe97a45a4f2914b6a5881b5cd1db2a6a0e129e515e1a5f55"
"""SHA256 of pool/main/p/prometheus/prometheus_2.42.0+ds-5+deb12u1_amd64.deb in bookworm's Packages index."""
ARCHIVE_URL = f"https://deb.debian.org/debian/pool/main/p/prometheus/{DEB}"
INSTALLED = REPO / ".promtool" / "bin" / "promtool"
_MEMBER = "./usr/bin/promtool"


class PromtoolMissing(RuntimeError):
    """promtool is not installed where the tests look for it."""


def binary() -> Path:
    if not INSTALLED.is_file():
        raise PromtoolMissing(f"promtool {VERSION} is not installed at {INSTALLED.relative_to(REPO)}; run `make unit`")
    return INSTALLED


def _apt_download(folder: Path) -> Path | None:
    """The pinned .deb through apt, or None where apt is missing or does not carry this version."""
    if shutil.which("apt-get") is None:
        return None
    done = subprocess.run(
        ["apt-get", "download", f"{PACKAGE}={VERSION}"], cwd=folder, capture_output=True, text=True, check=False
    )
    debs = sorted(folder.glob("*.deb"))
    return debs[0] if done.returncode == 0 and len(debs) == 1 else None


def _archive_download(folder: Path, url: str = ARCHIVE_URL) -> Path:
    target = folder / DEB
    with urllib.request.urlopen(url, timeout=300) as response:
        target.write_bytes(response.read())
    return target


def promtool_from_deb(deb: bytes) -> bytes:
    """The promtool binary inside a .deb (an `ar` archive whose data.tar.* holds the files), if its SHA-256 is the
    pinned one."""
    digest = hashlib.sha256(deb).hexdigest()
    if digest != DEB_SHA256:
        raise RuntimeError(f"{DEB} has SHA-256 {digest}, expected {DEB_SHA256}")
    if not deb.startswith(b"!<arch>\n"):
        raise RuntimeError(f"{DEB} is not an ar archive")
    offset = 8
    while offset + 60 <= len(deb):
        header = deb[offset : offset + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        body = deb[offset + 60 : offset + 60 + size]
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as data:
                member = data.extractfile(_MEMBER)
                if member is None:
                    raise RuntimeError(f"{_MEMBER} missing from {DEB}")
                return member.read()
        offset += 60 + size + size % 2
    raise RuntimeError(f"no data.tar member in {DEB}")


def install(target: Path = INSTALLED, url: str = ARCHIVE_URL) -> Path:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        deb = _apt_download(folder) or _archive_download(folder, url)
        binary_bytes = promtool_from_deb(deb.read_bytes())
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(binary_bytes)
    target.chmod(0o755)
    return target


if __name__ == "__main__":
    path = install()
    print(subprocess.run([str(path), "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0])
    sys.exit(0)
