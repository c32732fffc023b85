"""pytest plugin for `make mutate` only (pyproject [tool.mutmut]): the pack's modules by their file paths.

The pack imports `rules` and `guardrails.<domain>` from its own folder, while mutmut names each mutant after the
file's path (`policies.guardrails.gke.…`) and activates it only in a module of that name. So each module is
imported once under that name and handed out for the pack's own imports as well; the policies then run mutated
exactly as they are tested.
"""

import importlib
import sys

for domain in ("props", "gke", "iam_storage", "kubernetes", "kueue", "cluster", "workloads", "access", "monitoring"):
    sys.modules.setdefault(f"guardrails.{domain}", importlib.import_module(f"policies.guardrails.{domain}"))
sys.modules.setdefault("guardrails", importlib.import_module("policies.guardrails"))
sys.modules.setdefault("rules", importlib.import_module("policies.rules"))
