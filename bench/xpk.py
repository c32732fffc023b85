"""Google's xpk, the peer the offline preview is measured against, in its own virtualenv.

`xpk cluster create ... --dry-run` prints every gcloud/kubectl command it would run (cluster, one node pool
per slice, JobSet and Kueue installs, Kueue objects) without running any. What makes it work offline, found
by reading xpk 1.16.0:
- a dry run skips the check (and auto-download) of gcloud, kubectl and kueuectl, and answers its own
  lookups (GKE versions, existing clusters, "latest xpk on PyPI") with placeholders: no credentials and no
  network are needed;
- telemetry is on by default: after every command xpk starts a detached process that posts to
  play.googleapis.com. `TELEMETRY_ENABLED=false` turns it off, so nothing outlives the measured process;
- xpk reads `~/.config/xpk/config.yaml` (project, zone, custom binaries path); a scratch `HOME` keeps a
  developer's own settings out of the measurement. A dry run writes nothing there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench import stacks

VERSION = "1.16.0"
VENV = Path(__file__).resolve().parent / ".xpk-venv"
TPU_TYPE = "v5litepod-8"
"""v5e, 8 chips, 2x4: the same slice as `ct5lp-hightpu-4t` with topology 2x4."""


def executable() -> Path:
    return VENV / "bin" / "xpk"


def installed() -> bool:
    site = list((VENV / "lib").glob(f"python3*/site-packages/xpk-{VERSION}.dist-info"))
    return executable().exists() and bool(site)


def ensure_installed() -> Path:
    """Install the pinned xpk into bench/.xpk-venv unless it is already there; returns the executable."""
    if not installed():
        print(f"Installing xpk=={VERSION} into {VENV} (once, about a minute) ...", flush=True)
        for step in (
            [sys.executable, "-m", "venv", str(VENV)],
            [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             f"xpk=={VERSION}"],
        ):  # fmt: skip
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(step[-2:])} failed: {done.stderr.strip().splitlines()[-1:]}")
    return executable()


def command(slices: int) -> list[str]:
    return [
        str(executable()),
        "cluster",
        "create",
        "--cluster",
        "c",
        f"--tpu-type={TPU_TYPE}",
        f"--num-slices={slices}",
        "--flex",
        "--project",
        "p",
        "--zone",
        stacks.ZONE,
        "--dry-run",
    ]


def environment(home: Path) -> dict[str, str]:
    """The caller's environment minus cloud settings, with a scratch HOME and telemetry off."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "CLOUDSDK_", "KUBECONFIG", "XPK_"))}
    return {**keep, "HOME": str(home), "TELEMETRY_ENABLED": "false"}


def node_pools_planned(output: str) -> int:
    """How many node pools the printed plan creates (a sanity check that the dry run covered all slices)."""
    return sum(1 for line in output.splitlines() if "node-pools create" in line)
