"""The repo's root, and where it keeps the upstream files it vendors (vendor/README.md: sources, tags, sums).

A module of its own so that reading a path imports nothing else: the command line finds the stack files and
the preview renders charts from here without loading the SDK or the schema validator.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENDOR = REPO / "vendor"
CRD_DIR = VENDOR / "crds"
CHART_DIR = VENDOR / "charts"
DATA_DIR = VENDOR / "data"
