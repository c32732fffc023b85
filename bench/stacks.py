"""Generated stacks for the benchmarks: the cluster xpk's dry-run plans, at any number of slices.

`xpk cluster create --tpu-type=v5litepod-8 --num-slices=N --flex --zone us-west4-a` asks for N v5e 2x4
slices (`ct5lp-hightpu-4t`, 2 VMs each) on flex-start in one zone; here that is one pool group of N slices in
an otherwise dev-like stack. The zone is one that offers v5e on flex-start (vendor/data/tpu_zones.json): the
config refuses any other. Files are written to a scratch folder, never next to the real stacks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SLICE_COUNTS = (1, 3, 16, 64, 256)
DEPLOY_SLICES = (1, 16, 64, 256)
"""The sizes the `pulumi up` model reports beside xpk and Cluster Toolkit."""
ZONE = "us-west4-a"


def name(slices: int) -> str:
    return f"bench-{slices}"


def slices_of(stack: str) -> int | None:
    """The number of slices of a generated stack's name; None for any other stack."""
    prefix = name(0)[:-1]
    return int(stack[len(prefix) :]) if stack.startswith(prefix) and stack[len(prefix) :].isdigit() else None


def config(slices: int) -> dict[str, Any]:
    """The `config:` of a dev-like stack with `slices` flex-start v5e 2x4 slices."""
    return {
        "gcp:project": "tpu-stack-bench",
        "gcp:region": ZONE.rsplit("-", 1)[0],
        "tpu-stack:throwaway": True,
        "tpu-stack:labels": {"team": "ml-platform"},
        "tpu-stack:cluster": {
            "name": "tpu-bench",
            "releaseChannel": "RAPID",
            "minMasterVersion": "1.33",
            "systemPool": {"machineType": "e2-standard-4", "minNodes": 1, "maxNodes": 3},
        },
        "tpu-stack:tpuPools": [
            {
                "name": "flex",
                "machineType": "ct5lp-hightpu-4t",
                "topology": "2x4",
                "slices": slices,
                "provisioning": "flex-start",
                "zone": ZONE,
            }
        ],
    }


def write(directory: Path, slices: int) -> Path:
    """Write Pulumi.bench-<slices>.yaml into `directory` and return its path."""
    path = directory / f"Pulumi.{name(slices)}.yaml"
    path.write_text(yaml.safe_dump({"config": config(slices)}, sort_keys=False))
    return path
