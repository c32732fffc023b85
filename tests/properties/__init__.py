"""Properties over generated stack configs and over changes between two of them (hypothesis).

`stacks.py` writes configs the way a user writes `Pulumi.<stack>.yaml`, from the rules docs/config.md states and the
TPU shapes of the vendored xpk catalog, never asking the program which configs it accepts; `expected.py` holds what
must hold for every one of them, worked out from GKE's, Kueue's and the engine's rules; the tests run the program on
each config or change and compare. `conftest.py` has the run budgets (hypothesis profiles) and counts the runs.
"""
