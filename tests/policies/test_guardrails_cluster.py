"""policies/guardrails/cluster.py: legacy ABAC and the kubelet's read-only port, on the cluster and on every place a
pool's nodes take their kubelet settings from."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.policies.test_rules import check, put, res

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"


def messages(rules: ModuleType, resource: dict[str, object]) -> list[str]:
    return [v["message"] for v in check(rules, [resource]) if v["policy"] == "no-legacy-cluster-access"]


def test_legacy_abac_stays_off(rules: ModuleType) -> None:
    assert messages(rules, res(CLUSTER, "tpu-dev", {"enableLegacyAbac": True})) == [
        "enableLegacyAbac is true: RBAC and IAM no longer bound what accounts may do; set it false"
    ]
    assert messages(rules, res(CLUSTER, "tpu-dev", {"enableLegacyAbac": False})) == []


@pytest.mark.parametrize(
    ("type_", "path"),
    [
        (NODE_POOL, "nodeConfig.kubeletConfig"),
        (CLUSTER, "nodeConfig.kubeletConfig"),
        (CLUSTER, "nodePoolDefaults.nodeConfigDefaults"),
        (CLUSTER, "nodePoolAutoConfig.nodeKubeletConfig"),
    ],
)
def test_the_kubelet_read_only_port_stays_closed(rules: ModuleType, type_: str, path: str) -> None:
    resource = res(type_, "nodes", {})
    put(resource, f"{path}.insecureKubeletReadonlyPortEnabled", "TRUE")
    assert messages(rules, resource) == [
        f"{path}.insecureKubeletReadonlyPortEnabled is TRUE: the kubelet's read-only port serves the node's pods "
        "without authentication; set it FALSE"
    ]
    put(resource, f"{path}.insecureKubeletReadonlyPortEnabled", "FALSE")
    assert messages(rules, resource) == []
