"""Which object a webhook intercepts, as the API server matches requests (offline/webhooks.py)."""

from __future__ import annotations

from typing import Any

from offline import webhooks

CHART = {"urn": "c", "type": "kubernetes:helm.sh/v4:Chart", "name": "c-chart", "inputs": {}, "provider": "p",
         "dependencies": []}  # fmt: skip


def _configuration(**webhook: Any) -> dict[str, Any]:
    """A fail-closed webhook on Kueue's workloads, v1beta2 only, rendered by chart `c`."""
    rule = {"apiGroups": ["kueue.x-k8s.io"], "apiVersions": ["v1beta2"], "resources": ["workloads"],
            "operations": ["CREATE", "UPDATE"]}  # fmt: skip
    hook = {"name": "vworkload.kb.io", "clientConfig": {"service": {"namespace": "kueue-system", "name": "hooks"}},
            "rules": [rule], **webhook}  # fmt: skip
    return {"urn": "c:hooks", "type": "kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration",
            "name": "c-chart:hooks", "parent": "c", "rendered": True, "dependencies": [],
            "inputs": {"metadata": {"name": "hooks"}, "webhooks": [hook]}}  # fmt: skip


def _workload(version: str) -> dict[str, Any]:
    return {"urn": f"w-{version}", "type": f"kubernetes:kueue.x-k8s.io/{version}:Workload", "name": f"w-{version}",
            "provider": "p", "dependencies": [],
            "inputs": {"metadata": {"name": "w", "namespace": "team"}}}  # fmt: skip


def _intercepted(configuration: dict[str, Any], version: str) -> bool:
    records = [CHART, configuration, _workload(version)]
    (hook,) = webhooks.fail_closed(records)
    return webhooks.intercepts(hook, records[2], webhooks.Plan.of(records))


def test_match_policy_equivalent_intercepts_another_version_of_the_resource() -> None:
    """matchPolicy defaults to Equivalent (admissionregistration.k8s.io/v1): a request for the same resource through
    another version is converted to one the rules list and sent to the webhook (kubernetes.io/docs/reference/
    access-authn-authz/extensible-admission-controllers/#matching-requests-matchpolicy). A Workload written as v1beta1
    meets the v1beta2 webhook; with matchPolicy Exact it does not."""
    assert _intercepted(_configuration(), "v1beta2")
    assert _intercepted(_configuration(), "v1beta1")
    assert _intercepted(_configuration(matchPolicy="Equivalent"), "v1beta1")
    assert not _intercepted(_configuration(matchPolicy="Exact"), "v1beta1")
    assert _intercepted(_configuration(matchPolicy="Exact"), "v1beta2")


def test_a_url_webhook_is_fail_closed_too() -> None:
    """A webhook that calls a URL (clientConfig.url) is listed with its URL and no Service: the stack cannot order
    anything against a backend outside the cluster, which the catalogue reports (it was skipped without a word)."""
    config = _configuration(clientConfig={"url": "https://hooks.example.com/validate"})
    (hook,) = webhooks.fail_closed([CHART, config])
    assert (hook.service, hook.url) == (None, "https://hooks.example.com/validate")
