"""Lifecycle of the vLLM servers (example stack `llm`): the first `up`, a model change and a replica change on each
kind of server, a new slice shape, the same changes in a protected stack, and `pulumi destroy`.

Expected steps are written out by hand: a model or replica change updates the server's Deployment or
LeaderWorkerSet in place (the controllers roll it out: a Deployment's pods, an LWS's groups one at a time) and
touches nothing else; what replaces or deletes a server is a new name or namespace, which a protected stack refuses.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from offline.lifecycle import Transition
from tests.lifecycle.catalogue import CATALOGUE
from tests.lifecycle.conftest import Records, plan, stack_config, step

OLD = "llama-33-70b"
SINGLE = "llm-serving-llama-31-70b"
MULTI = "llm-serving-llama-33-70b"
Change = Callable[[dict[str, Any]], None]


def ops(transition: Transition) -> dict[str, list[str]]:
    """op -> names, for every op but `same`."""
    found: dict[str, list[str]] = {}
    for s in transition.steps:
        if s.op != "same":
            found.setdefault(s.op, []).append(s.name)
    return {op: sorted(names) for op, names in found.items()}


def server(config: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in config["tpu-stack:serving"]["servers"] if s["name"] == name)
    return found


PROTECTED_ALERTS = {"tpu-stack:monitoring": {"notificationChannels": ["projects/tpu-stack-llm/notificationChannels/1"]}}
"""A protected stack names a channel its alerts notify (issue 27, defect 11)."""


def edited(change: Change, stack: str = "llm") -> Records:
    config = copy.deepcopy(stack_config("llm"))
    change(config)
    return plan(stack, {**config, **PROTECTED_ALERTS} if stack == "prod" else config)


@pytest.fixture(scope="module")
def deployed() -> Records:
    return plan("llm", stack_config("llm"))


@pytest.fixture(scope="module")
def deployed_protected() -> Records:
    """The same servers in a protected stack (prod's protection: every resource carries `protect`)."""
    return plan("prod", {**stack_config("llm"), **PROTECTED_ALERTS})


def test_first_up_creates_everything_and_breaks_no_rule(deployed: Records) -> None:
    steps = step([], deployed)
    assert steps.refused == []
    assert len(steps.of("create")) == len(deployed)
    assert CATALOGUE.breaches(deployed, {}) == []


def new_model_single(config: dict[str, Any]) -> None:
    server(config, "llama-31-70b")["model"] = "meta-llama/Llama-3.3-70B-Instruct"


def new_model_multi(config: dict[str, Any]) -> None:
    server(config, "llama-33-70b")["modelFolder"] = "models/Llama-3.3-70B-Instruct-v2"


@pytest.mark.parametrize(("change", "updated"), [(new_model_single, SINGLE), (new_model_multi, MULTI)])
def test_a_model_change_updates_only_that_server_in_place(deployed: Records, change: Change, updated: str) -> None:
    assert ops(step(deployed, edited(change))) == {"update": [updated]}


def more_replicas_single(config: dict[str, Any]) -> None:
    """A Hugging Face model is served by one replica (its replicas would download at once); more replicas read the
    weights from the bucket."""
    single = server(config, "llama-31-70b")
    single["modelFolder"] = "models/Llama-3.1-70B-Instruct"
    single["servedModelName"] = single.pop("model")
    single["replicas"] = 2


def fewer_replicas_multi(config: dict[str, Any]) -> None:
    server(config, "llama-33-70b")["replicas"] = 1


@pytest.mark.parametrize(("change", "updated"), [(more_replicas_single, SINGLE), (fewer_replicas_multi, MULTI)])
def test_a_replica_change_updates_only_that_server_in_place(deployed: Records, change: Change, updated: str) -> None:
    down = edited(change)
    assert ops(step(deployed, down)) == {"update": [updated]}
    assert ops(step(down, deployed)) == {"update": [updated]}


def test_a_new_slice_shape_replaces_the_pools_and_rolls_the_group_size_out_in_place(deployed: Records) -> None:
    """4x4 -> 4x8 v5e: 8 VMs per slice, so the LeaderWorkerSet's groups grow from 4 to 8 pods (tensor parallel 32);
    the node pools are new slices (placementPolicy.tpuTopology is never updated in place)."""

    def bigger(config: dict[str, Any]) -> None:
        next(p for p in config["tpu-stack:tpuPools"] if p["name"] == "llm-v5e")["topology"] = "4x8"

    new = edited(bigger)
    steps = ops(step(deployed, new))
    assert steps["replace"] == ["llm-v5e-0", "llm-v5e-1", "llm-v5e-2"]
    assert MULTI in steps["update"] and MULTI not in steps.get("replace", [])
    lws = next(r for r in new if r["name"] == MULTI)["inputs"]["spec"]["leaderWorkerTemplate"]
    assert lws["size"] == 8


def test_a_protected_stack_takes_model_and_replica_changes_but_refuses_a_renamed_server(
    deployed_protected: Records,
) -> None:
    assert ops(step(deployed_protected, edited(new_model_multi, "prod"))) == {"update": [MULTI]}
    assert ops(step(deployed_protected, edited(more_replicas_single, "prod"))) == {"update": [SINGLE]}

    def renamed(config: dict[str, Any]) -> None:
        server(config, "llama-33-70b")["name"] = "llama-33"

    steps = step(deployed_protected, edited(renamed, "prod"))
    refused = sorted(s.name for s in steps.of("refuse"))
    assert refused == sorted(
        [MULTI, f"{MULTI}-lb", f"llm-serving-allow-{OLD}-clients", f"llm-serving-allow-{OLD}-group"]
    )
    assert all("pulumi state unprotect" in line for line in steps.refused)


def test_destroy_deletes_the_servers_before_the_lws_chart_and_keeps_only_the_bucket(deployed: Records) -> None:
    """Not a throwaway stack: the bucket (weights, downloads, compilation cache) is kept; nothing waits on a
    finalizer of the LWS controller (LeaderWorkerSets carry none)."""
    steps = step(deployed, [])
    assert [s.name for s in steps.of("refuse")] == ["data-bucket"]
    order = [s.name for s in steps.of("delete")]
    # Kept: the bucket and its component (a parent goes after its children), and the Cloud Storage API the bucket
    # waits for (and its component): a destroy never reaches what a kept resource depends on.
    assert {r["name"] for r in deployed} - set(order) == {"data-bucket", "data", "apis-storage", "apis"}
    assert order.index(MULTI) < order.index("lws-chart")
    assert order.index("lws-chart:lws-system/lws-controller-manager") < order.index("lws-namespace")


def named(records: Records, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(r for r in records if r["name"] == name)
    return found


def test_a_load_balancer_the_provider_would_await_until_the_model_serves_is_caught(deployed: Records) -> None:
    """The servers' startup probes allow 60 minutes; without waitFor the provider's Service await (10 minutes)
    would also wait for them to be ready."""
    broken = copy.deepcopy(deployed)
    del named(broken, f"{MULTI}-lb")["inputs"]["metadata"]["annotations"]["pulumi.com/waitFor"]
    assert CATALOGUE.breaches(broken, {}) == [
        f"slow-pods-behind-awaited-services: {MULTI}-lb: selects pods that may take 60 minutes to become ready, "
        "longer than the provider's 10-minute Service await; annotate it pulumi.com/waitFor (or skipAwait)"
    ]


def test_leaderworkersets_that_may_reach_the_lws_webhooks_before_they_serve_are_caught(deployed: Records) -> None:
    """Two hand-made breaches: the LeaderWorkerSet no longer waits for the LWS chart, and the chart's controller is
    ready on LWS's own /readyz (a plain ping) instead of when its webhook server listens."""
    broken = copy.deepcopy(deployed)
    chart = named(broken, "lws-chart")
    lws = named(broken, MULTI)
    lws["dependencies"] = [d for d in lws["dependencies"] if d not in (chart["urn"], chart.get("parent"))]
    (controller,) = [r for r in broken if r["name"] == "lws-chart:lws-system/lws-controller-manager"
                     and r["type"] == "kubernetes:apps/v1:Deployment"]  # fmt: skip
    (manager,) = controller["inputs"]["spec"]["template"]["spec"]["containers"]
    manager["readinessProbe"] = {"httpGet": {"path": "/readyz", "port": 8081}, "initialDelaySeconds": 5}
    assert CATALOGUE.breaches(broken, {}) == [
        f"objects-after-their-webhooks: {MULTI} is created before lws-chart serves the webhooks that intercept it "
        "(mleaderworkerset.kb.io, vleaderworkerset.kb.io)",
        "webhook-backends-ready-when-serving: lws-chart:lws-system/lws-controller-manager: ready before its webhook "
        "server listens on 9443, so waiting for its chart does not wait for the webhooks",
    ]


def test_the_webhook_rule_finds_kueues_leaderworkerset_webhooks_from_the_chart_alone(deployed: Records) -> None:
    """Kueue v0.19.2's chart registers fail-closed webhooks for LeaderWorkerSets in every namespace but kube-system
    and kueue-system, whether or not Kueue integrates them (pkg/controller/jobframework/setup.go sets up a no-op
    webhook for kinds not enabled, served only while Kueue's pod is). The generic rule derives that from the
    rendered webhook configurations: without the wait on Kueue's chart, the first `up` sends the LeaderWorkerSet to
    a webhook with no endpoints. The rule's code names no kind (offline/webhooks.py)."""
    assert CATALOGUE.breaches(deployed, {}) == []
    broken = copy.deepcopy(deployed)
    chart = named(broken, "kueue-chart")
    lws = named(broken, MULTI)
    lws["dependencies"] = [d for d in lws["dependencies"] if d not in (chart["urn"], chart.get("parent"))]
    assert CATALOGUE.breaches(broken, {}) == [
        f"objects-after-their-webhooks: {MULTI} is created before kueue-chart serves the webhooks that intercept it "
        "(mleaderworkerset.kb.io, vleaderworkerset.kb.io)"
    ]
