"""The config package's floors: a module imports only the domains below it, so no import ever closes a circle."""

from __future__ import annotations

import ast
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[2] / "components" / "config"
BELOW = {
    "base": set(),
    "adopted": {"base"},
    "network": {"base"},
    "cluster": {"base", "adopted", "network"},
    "monitoring": {"base"},
    "pools": {"base", "adopted", "network"},
    "multikueue": {"base", "network", "pools"},
    "controllers": {"base", "pools"},
    "queues": {"base", "pools", "controllers"},
    "serving": {"base", "pools"},
    "llm_serving": {"base", "pools", "serving"},
    "stack": {
        "base",
        "adopted",
        "network",
        "cluster",
        "monitoring",
        "multikueue",
        "pools",
        "controllers",
        "queues",
        "serving",
        "llm_serving",
    },
}


def config_imports(module: str) -> set[str]:
    tree = ast.parse((CONFIG / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("components.config"):
            found.add(node.module.removeprefix("components.config").removeprefix(".") or "__init__")
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("components.config")}
    return found


def test_every_module_of_the_package_has_a_floor() -> None:
    assert {p.stem for p in CONFIG.glob("*.py")} - {"__init__"} == set(BELOW)


def test_each_domain_imports_only_the_floors_below_it() -> None:
    assert {module: config_imports(module) - BELOW[module] for module in BELOW} == {module: set() for module in BELOW}
