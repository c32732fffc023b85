"""The run budgets: `make test` never spends its minutes shrinking a failure; `make properties` shrinks it to the
smallest stack file that shows it."""

from __future__ import annotations

from hypothesis import Phase, settings

import tests.properties.budget  # noqa: F401  (registers the profiles)


def test_the_test_profile_does_not_shrink_and_the_deep_profile_does() -> None:
    assert Phase.shrink not in settings.get_profile("tpu-stack-test").phases
    assert Phase.generate in settings.get_profile("tpu-stack-test").phases
    assert Phase.shrink in settings.get_profile("tpu-stack-deep").phases
