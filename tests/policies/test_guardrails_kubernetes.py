"""policies/guardrails/kubernetes.py: the controllers' admission webhooks fail closed, but for the ones Kueue's chart
makes Ignore for integrations the stack leaves off."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from tests.policies.test_rules import check, res

MUTATING = "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration"
VALIDATING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration"


def webhooks(type_: str, name: str, **policies: str | None) -> dict[str, Any]:
    hooks = [{"name": hook} | ({"failurePolicy": p} if p else {}) for hook, p in policies.items()]
    return res(type_, name, {"metadata": {"name": name}, "webhooks": hooks})


def messages(rules: ModuleType, resource: dict[str, Any]) -> list[str]:
    return [v["message"] for v in check(rules, [resource]) if v["policy"] == "webhooks-fail-closed"]


@pytest.mark.parametrize(
    ("type_", "name", "hook"),
    [
        (MUTATING, "kueue-mutating-webhook-configuration", "mjobset.kb.io"),
        (VALIDATING, "kueue-validating-webhook-configuration", "vworkload.kb.io"),
        (MUTATING, "jobset-mutating-webhook-configuration", "mutate-jobset-x-k8s-io-v1alpha2-jobset.x-k8s.io"),
        (MUTATING, "lws-mutating-webhook-configuration", "mpod.kb.io"),  # LWS's pod webhook is not Kueue's
    ],
)
def test_a_webhook_set_to_ignore_is_refused(rules: ModuleType, type_: str, name: str, hook: str) -> None:
    assert messages(rules, webhooks(type_, name, **{hook: "Ignore"})) == [
        f"webhook {hook} has failurePolicy Ignore: while its controller is down, objects would be admitted unchecked "
        "(Kueue's: unsuspended, outside every quota); set it to Fail"
    ]
    assert messages(rules, webhooks(type_, name, **{hook: "Fail"})) == []
    assert messages(rules, webhooks(type_, name, **{hook: None})) == []  # the API's default is Fail


def test_kueues_webhooks_of_integrations_left_off_stay_as_its_chart_renders_them(rules: ModuleType) -> None:
    mutating = webhooks(
        MUTATING,
        "kueue-mutating-webhook-configuration",
        **{"mpod.kb.io": "Ignore", "mdeployment.kb.io": "Ignore", "mstatefulset.kb.io": "Ignore"},
    )
    validating = webhooks(
        VALIDATING,
        "kueue-validating-webhook-configuration",
        **{"vpod.kb.io": "Ignore", "vdeployment.kb.io": "Ignore", "vstatefulset.kb.io": "Ignore"},
    )
    assert messages(rules, mutating) == messages(rules, validating) == []  # fmt: skip
