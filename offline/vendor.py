"""Where the repo keeps the upstream files it vendors (vendor/README.md lists sources, tags and sums).

A module of its own so that reading a path imports nothing else: the preview renders charts from here without
loading the schema validator.
"""

from pathlib import Path

VENDOR = Path(__file__).resolve().parent.parent / "vendor"
CRD_DIR = VENDOR / "crds"
CHART_DIR = VENDOR / "charts"
DATA_DIR = VENDOR / "data"
