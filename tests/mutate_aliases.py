"""pytest plugin for `make mutate` only (pyproject [tool.mutmut]): the pack's `rules` is policies/rules.py.

The pack imports `rules` from its own folder, while mutmut names each mutant after the file's path
(`policies.rules.…`) and activates it only in a module of that name. So the module is imported once under
that name and handed out for `import rules` as well; the policies then run mutated exactly as they are tested.
"""

import importlib
import sys

sys.modules.setdefault("rules", importlib.import_module("policies.rules"))
