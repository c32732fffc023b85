"""Run budgets of the property tests, and the count and time of what they ran (tests/properties/conftest.py prints
them).

`make test` runs the `test` profile: few examples, derandomized (the same configs every run, so a failure reproduces
and the run time is steady), no deadline (a program run takes about a second), and no shrinking: a failure prints the
example as drawn at once, where shrinking it could take minutes of `make test`. `make properties` runs the `deep`
profile: many more, random, for a run before a release or after a change to the config model; set
`TPU_STACK_PROPERTIES=deep` (or a number of examples per property) to choose it with pytest directly; both shrink a
failure to its smallest stack file. The terminal
summary says how many configs and changes ran and how long they took, and build/properties/last-run.json keeps it.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings

EXAMPLES = {"test": {"configs": 24, "changes": 1}, "deep": {"configs": 400, "changes": 25}}
"""Examples per property in each profile: configs, and changes of each kind (`make test`'s run time is measured in
docs/development.md, *Properties*)."""
PROFILE = os.environ.get("TPU_STACK_PROPERTIES", "test")
RECORD = Path(__file__).resolve().parents[2] / "build" / "properties" / "last-run.json"

settings.register_profile(
    "tpu-stack-test",
    derandomize=True,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no Phase.shrink: see the module's docstring
    database=None,
    print_blob=False,
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.register_profile(
    "tpu-stack-deep",
    derandomize=False,
    deadline=None,
    database=None,
    print_blob=True,
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def budget(kind: str) -> settings:
    """The hypothesis settings of a property over `kind` ("configs" or "changes") in the chosen profile."""
    if PROFILE.isdigit():  # examples of configs; of each kind of change, a sixteenth of it
        count = int(PROFILE) if kind == "configs" else max(1, int(PROFILE) // 16)
        return settings(settings.get_profile("tpu-stack-deep"), max_examples=count)
    if PROFILE not in EXAMPLES:
        raise ValueError(f"TPU_STACK_PROPERTIES={PROFILE!r}: use {', '.join(EXAMPLES)} or a number of examples")
    return settings(settings.get_profile(f"tpu-stack-{PROFILE}"), max_examples=EXAMPLES[PROFILE][kind])


@dataclass
class Runs:
    """What the properties ran: per kind, the examples and the seconds they took."""

    count: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    kinds: Counter[str] = field(default_factory=Counter)
    """What the examples were: each change's kind, each config's features."""

    @contextmanager
    def timed(self, kind: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.count[kind] = self.count.get(kind, 0) + 1
            self.seconds[kind] = self.seconds.get(kind, 0.0) + time.perf_counter() - start

    def lines(self) -> list[str]:
        return [f"{self.count[k]} {k} in {self.seconds[k]:.1f} s" for k in sorted(self.count)]

    def seen(self) -> str:
        return ", ".join(f"{name} {n}" for name, n in sorted(self.kinds.items()))


RUNS = Runs()
