"""The critical-path computation of bench/critical_path.py on small hand-made plans (correctness, not timing)."""

from __future__ import annotations

from typing import Any

import pytest

from bench import critical_path as cp

CLUSTER, POOL, BUCKET = cp.CLUSTER, cp.NODE_POOL, cp.BUCKET
CHART = "kubernetes:helm.sh/v4:Chart"
QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
COMPONENT = "tpu-stack:index:Thing"


def res(
    name: str,
    type_token: str,
    *deps: str,
    parent: str | None = None,
    custom: bool = True,
    remote: bool = False,
    inputs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "urn": f"urn:{name}",
        "type": type_token,
        "name": name,
        "parent": f"urn:{parent}" if parent else None,
        "dependencies": [f"urn:{d}" for d in deps],
        "custom": custom,
        "remote": remote,
        "inputs": inputs or {},
    }


def tpu_pool(name: str, *deps: str, topology: str | None = "2x4", machine: str = "ct5lp-hightpu-4t") -> dict[str, Any]:
    placement = {"placementPolicy": {"tpuTopology": topology, "type": ""}} if topology else {}
    return res(name, POOL, *deps, inputs={"nodeConfig": {"machineType": machine}, **placement})


def chart(name: str, *deps: str) -> dict[str, Any]:
    return res(name, CHART, *deps, custom=False, remote=True, inputs={"chart": f"oci://registry.k8s.io/{name}"})


def names(path: cp.CriticalPath) -> list[str]:
    return [r["name"] for r in path.chain]


def test_a_chain_adds_up_its_create_times() -> None:
    plan = [res("sa", "gcp:serviceaccount/account:Account"), res("gke", CLUSTER, "sa"), tpu_pool("slice", "gke")]
    path = cp.critical_path(plan)
    assert path.minutes == pytest.approx(0.2 + 6 + 7)
    assert names(path) == ["sa", "gke", "slice"]
    assert path.sequential_minutes == pytest.approx(13.2)


def test_parallel_pools_cost_one_pool_on_the_path_and_all_of_them_one_after_another() -> None:
    for slices in (1, 3, 64):
        plan = [res("gke", CLUSTER), *(tpu_pool(f"slice-{i}", "gke") for i in range(slices))]
        path = cp.critical_path(plan)
        assert path.minutes == 13
        assert path.sequential_minutes == 6 + 7 * slices


def test_pool_weights_follow_slice_shape() -> None:
    assert cp.minutes(tpu_pool("multi", topology="2x4")) == 7
    assert cp.minutes(tpu_pool("single", topology=None, machine="ct6e-standard-4t")) == 5
    assert cp.minutes(tpu_pool("single-explicit", topology="2x2")) == 5
    assert cp.minutes(res("system", POOL, inputs={"nodeConfig": {"machineType": "e2-standard-4"}})) == 4


def test_a_cluster_that_removes_its_default_pool_waits_for_the_removal_too() -> None:
    """The provider deletes default-pool inside the cluster's create (resourceContainerClusterCreate)."""
    assert cp.minutes(res("gke", CLUSTER, inputs={"removeDefaultNodePool": True})) == 6.5
    assert cp.minutes(res("gke", CLUSTER, inputs={"removeDefaultNodePool": False})) == 6


def test_components_weigh_nothing_but_pass_on_what_they_wait_for() -> None:
    plan = [
        res("data", BUCKET),
        res("group", COMPONENT, "data", custom=False),
        res("member", "gcp:storage/bucketIAMMember:BucketIAMMember", parent="group"),
    ]
    path = cp.critical_path(plan)
    assert path.minutes == pytest.approx(0.2 + 0.5)
    assert names(path) == ["data", "member"]


def test_kubernetes_objects_wait_for_the_provider_even_without_a_declared_dependency() -> None:
    plan = [
        res("gke", CLUSTER),
        res("k8s", cp.K8S_PROVIDER, "gke"),
        chart("kueue"),
        res("queue", QUEUE, "kueue"),
    ]
    path = cp.critical_path(plan)
    assert path.minutes == pytest.approx(6 + 2 + 0.1)
    assert names(path) == ["gke", "k8s", "kueue", "queue"]


def test_unknown_types_get_the_default_and_foreign_urns_are_ignored() -> None:
    plan = [res("thing", "gcp:compute/network:Network", "not-in-plan")]
    assert cp.critical_path(plan).minutes == 0.5
    assert cp.critical_path([]).minutes == 0


def test_a_dependency_cycle_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"^dependency cycle: urn:a -> urn:b -> urn:a$"):
        cp.critical_path([res("a", CLUSTER, "b"), res("b", CLUSTER, "a")])


def rule(plan: list[dict[str, Any]], name: str) -> cp.Rule:
    return next(r for r in cp.rules(plan) if r.name.startswith(name))


def good_plan() -> list[dict[str, Any]]:
    return [
        res("sa", "gcp:serviceaccount/account:Account"),
        res("role", "gcp:projects/iAMMember:IAMMember", "sa"),
        res("gke", CLUSTER, "sa"),
        tpu_pool("slice-0", "gke"),
        tpu_pool("slice-1", "gke"),
        res("k8s", cp.K8S_PROVIDER, "gke"),
        chart("kueue"),
        chart("jobset"),
        res("flavor", "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor", "kueue"),
        res("queue", QUEUE, "kueue", "flavor"),
        res("data", BUCKET),
    ]


def test_a_well_shaped_plan_meets_every_rule() -> None:
    results = cp.rules(good_plan())
    assert [r.passed for r in results] == [True, True, True], results


def test_a_pool_waiting_for_another_pool_is_reported() -> None:
    plan = [*good_plan(), tpu_pool("slice-2", "slice-1")]
    found = rule(plan, "node pools")
    assert found.passed is False and "slice-2 waits for slice-1" in found.detail


def test_kueue_objects_must_wait_for_the_kueue_chart_and_nothing_heavier() -> None:
    on_pool = [*good_plan(), res("late", QUEUE, "kueue", "slice-0")]
    found = rule(on_pool, "Kueue")
    assert found.passed is False and "late waits for slice-0" in found.detail
    on_jobset = [*good_plan(), res("other", QUEUE, "jobset")]
    found = rule(on_jobset, "Kueue")
    assert found.passed is False and "other waits for jobset" in found.detail
    assert "other does not wait for the Kueue chart" in found.detail


def test_kueue_objects_may_wait_for_what_the_kueue_chart_waits_for() -> None:
    plan = [*good_plan()]
    plan[[r["name"] for r in plan].index("kueue")] = chart("kueue", "jobset")
    assert rule(plan, "Kueue").passed is True


def test_workload_identity_members_may_wait_for_the_cluster_only() -> None:
    member = {"member": "principal://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/"
              "p.svc.id.goog/subject/ns/default/sa/trainer"}  # fmt: skip
    pool_member = res("wi", "gcp:storage/bucketIAMMember:BucketIAMMember", "gke", inputs=member)
    assert rule([*good_plan(), pool_member], "bucket and IAM").passed is True
    on_pool = res("wi", "gcp:storage/bucketIAMMember:BucketIAMMember", "gke", "slice-0", inputs=member)
    found = rule([*good_plan(), on_pool], "bucket and IAM")
    assert found.passed is False and "wi waits for slice-0" in found.detail


def test_bucket_and_iam_must_not_wait_for_the_cluster() -> None:
    plan = [*good_plan(), res("late-data", BUCKET, "gke"), res("ksa-role", "gcp:projects/iAMMember:IAMMember", "k8s")]
    found = rule(plan, "bucket and IAM")
    assert found.passed is False
    assert "late-data waits for gke" in found.detail and "ksa-role waits for gke, k8s" in found.detail


def test_rules_with_nothing_to_check_say_so() -> None:
    plan = [res("gke", CLUSTER), tpu_pool("slice-0", "gke")]
    assert rule(plan, "Kueue").passed is None
    assert rule(plan, "bucket and IAM").passed is None
