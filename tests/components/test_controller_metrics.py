"""The metrics reader of each controller: its token Secret is created only after its ServiceAccount.

Kubernetes' token controller (kubernetes pkg/controller/serviceaccount/tokens_controller.go, syncSecret) deletes
a `kubernetes.io/service-account-token` Secret whose ServiceAccount it cannot find, so a Secret created in
parallel with its account can vanish and leave the scrape without a token. The order is the engine's: the
`dependencies` the program registers (plan.json's), which `pulumi up` waits on and `pulumi destroy` reverses.
"""

from __future__ import annotations

import pytest

from offline.engine import Plan
from tests.fixtures import stack_plan

STACKS = ("dev", "prod")
COMPONENT = "urn:pulumi:{stack}::tpu-stack::tpu-stack:index:ControllerMetrics$kubernetes:core/v1:"


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    return {stack: stack_plan(stack, render_charts=False) for stack in STACKS}


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("release", ["kueue", "jobset"])
def test_the_token_secret_waits_for_its_service_account(plans: dict[str, Plan], stack: str, release: str) -> None:
    plan = plans[stack]
    secret = plan.one("kubernetes:core/v1:Secret", f"{release}-metrics-secret")
    account = plan.one("kubernetes:core/v1:ServiceAccount", f"{release}-metrics-serviceaccount")
    assert secret["inputs"]["type"] == "kubernetes.io/service-account-token"
    assert secret["inputs"]["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "gmp-metrics-reader"}
    assert account["inputs"]["metadata"] == {"name": "gmp-metrics-reader", "namespace": f"{release}-system"}
    assert account["urn"] == COMPONENT.format(stack=stack) + f"ServiceAccount::{release}-metrics-serviceaccount"
    assert account["urn"] in secret["dependencies"]
    # and not the other way round: destroy deletes the Secret before its account
    assert secret["urn"] not in account["dependencies"]


@pytest.mark.parametrize("stack", STACKS)
def test_the_scrape_objects_still_wait_for_their_chart(plans: dict[str, Plan], stack: str) -> None:
    plan = plans[stack]
    chart = f"urn:pulumi:{stack}::tpu-stack::tpu-stack:index:KueueInstall$kubernetes:helm.sh/v4:Chart::kueue-chart"
    for kind in ("ServiceAccount", "Secret"):
        (resource,) = [r for r in plan.resources if r["name"] == f"kueue-metrics-{kind.lower()}"]
        assert chart in resource["dependencies"], kind
