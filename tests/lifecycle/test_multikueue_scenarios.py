"""Lifecycle of the multiregion stack (a MultiKueue manager, tpu-mr-manager, and two workers, tpu-mr-east5 and
tpu-mr-japan): the first `up`, a third worker added, a worker removed, the manager's tokens rotated, and `pulumi
destroy`, judged by the engine model (offline/lifecycle.py) and the catalogue (catalogue.py).

Expected steps are written out by hand from Pulumi.multiregion.yaml. A worker's resources carry its name as their
prefix (`tpu-mr-east5-...`, its node pools their pool group's); the manager's have none. A worker's access for the
manager (ServiceAccount, the read ClusterRole and its binding, the dispatch ClusterRole and its RoleBinding per team
namespace, the token Secret of each generation) is `<worker>-multikueue-*`; the manager's dispatch objects are
`multikueue-*`.
"""

from __future__ import annotations

import copy
from typing import Any

from offline.lifecycle import Op, Transition, depends_on
from offline.markers import SECRET, UNKNOWN
from tests.lifecycle.catalogue import CATALOGUE
from tests.lifecycle.conftest import Records, changed, step

STACK = "multiregion"
WORKER_PREFIXES = {"tpu-mr-east5": ("tpu-mr-east5", "east-"), "tpu-mr-japan": ("tpu-mr-japan", "japan-")}
"""What a worker's resource names start with: the worker's name, or its pool groups' (their node pools)."""


def only(steps: Transition, op: Op) -> list[str]:
    return sorted(s.name for s in steps.of(op))


def named(records: Records, name: str) -> dict[str, Any]:
    """The resource named `name` (not the component of the same name: a GkeCluster's, a TpuSlicePools')."""
    (found,) = [r for r in records if r["name"] == name and (r.get("custom", True) or r.get("remote"))]
    return found


def tpu_quota(records: Records, name: str) -> dict[str, int]:
    """flavor -> nominal google.com/tpu quota of a ClusterQueue or Cohort record."""
    groups = named(records, name)["inputs"]["spec"].get("resourceGroups") or []
    return {f["name"]: f["resources"][0]["nominalQuota"] for group in groups for f in group["flavors"]}


# --- day 0: the first `up` ----------------------------------------------------------------------------------------


def test_first_up_creates_everything_and_breaks_no_rule(multiregion: Records) -> None:
    """Every ordering rule holds in each cluster: a worker's Kueue objects wait for the worker's own Kueue chart,
    its token Secret for its own ServiceAccount, its team namespaces go before its own controller."""
    steps = step([], multiregion)
    assert steps.refused == []
    assert len(steps.of("create")) == len(multiregion)
    assert CATALOGUE.breaches(multiregion, {}) == []


def test_the_catalogue_holds_each_worker_to_its_own_cluster(multiregion: Records) -> None:
    """The same rules, broken in a worker: a flavor that does not wait for tpu-mr-east5's Kueue chart (the
    manager's chart is no webhook of tpu-mr-east5's) and a token Secret that does not wait for its account."""
    broken = copy.deepcopy(multiregion)
    flavor = named(broken, "tpu-mr-east5-queues-resourceflavor-east-flex-v6e")
    chart = named(broken, "tpu-mr-east5-kueue-chart")
    flavor["dependencies"] = [d for d in flavor["dependencies"] if d != chart["urn"]]
    token = named(broken, "tpu-mr-japan-multikueue-token-1")
    account = named(broken, "tpu-mr-japan-multikueue-account")
    token["dependencies"] = [d for d in token["dependencies"] if d != account["urn"]]
    assert CATALOGUE.breaches(broken, {}) == [
        "objects-after-their-webhooks: tpu-mr-east5-queues-resourceflavor-east-flex-v6e is created before "
        "tpu-mr-east5-kueue-chart serves the webhooks that intercept it (mresourceflavor.kb.io, "
        "vresourceflavor.kb.io)",
        "token-secret-after-account: tpu-mr-japan-multikueue-token-1 may be created before its ServiceAccount "
        "'multikueue-manager'",
    ]


# --- a third worker -----------------------------------------------------------------------------------------------

USE1 = "tpu-mr-use1"


def _third_worker(config: dict[str, Any]) -> None:
    """Trillium in us-east1 (us-east1-d offers v6e, but not on flex-start: vendor/data/tpu_zones.json): two spot 2x2
    slices, 8 chips; research gets 4."""
    config["tpu-stack:multiKueue"]["workers"].append({
        "name": USE1, "region": "us-east1",
        "tpuPools": [{"name": "use1-spot-v6e", "machineType": "ct6e-standard-4t", "provisioning": "spot",
                      "zone": "us-east1-d", "slices": 2, "maxRunDuration": "24h"}],
    })  # fmt: skip
    config["tpu-stack:queues"]["teams"][0]["shares"]["use1-spot-v6e"] = 4


def test_a_third_worker_is_created_and_the_manager_dispatches_to_it(multiregion: Records) -> None:
    """The new cluster and everything in it are created; on the manager a kubeconfig Secret, a MultiKueueCluster and
    the new pool group's flavor. The MultiKueueConfig lists the third cluster and the manager's queues and Cohort
    take its chips, all in place; the other two clusters do not change at all."""
    with_use1 = changed(STACK, _third_worker)
    steps = step(multiregion, with_use1)
    assert steps.refused == []
    assert only(steps, "replace") == [] and only(steps, "delete") == []
    on_manager = ["multikueue-multikueuecluster-tpu-mr-use1", "multikueue-tpu-mr-use1-kubeconfig",
                  "queues-resourceflavor-use1-spot-v6e"]  # fmt: skip
    created = only(steps, "create")
    assert [n for n in created if not n.startswith((USE1, "use1-spot-v6e"))] == on_manager
    assert sorted(s.name for s in steps.of("create") if s.type.startswith("gcp:")) == [
        "tpu-mr-use1", "tpu-mr-use1-cp-webhooks", "tpu-mr-use1-monitoring-dashboard",
        "tpu-mr-use1-monitoring-pods-not-starting",
        "tpu-mr-use1-monitoring-tpu-idle-while-waiting", "tpu-mr-use1-nat", "tpu-mr-use1-nodes", "tpu-mr-use1-nodes",
        "tpu-mr-use1-nodes-artifactregistry-reader", "tpu-mr-use1-nodes-container-defaultNodeServiceAccount",
        "tpu-mr-use1-router", "tpu-mr-use1-system", "use1-spot-v6e-0", "use1-spot-v6e-1",
    ]  # fmt: skip
    assert sorted(s.name for s in steps.of("create") if s.type.startswith("kubernetes:kueue.x-k8s.io")) == [
        "multikueue-multikueuecluster-tpu-mr-use1",
        "queues-resourceflavor-use1-spot-v6e",
        "tpu-mr-use1-queues-clusterqueue-research-cluster-queue",
        "tpu-mr-use1-queues-clusterqueue-training-cluster-queue",
        "tpu-mr-use1-queues-cohort-tpu-stack",
        "tpu-mr-use1-queues-localqueue-research-research-queue",
        "tpu-mr-use1-queues-localqueue-training-training-queue",
        "tpu-mr-use1-queues-resourceflavor-use1-spot-v6e",
    ]
    for access in ("account", "read-role", "read-binding", "dispatch-role", "dispatch-research", "dispatch-training",
                   "token-1"):  # fmt: skip
        assert f"tpu-mr-use1-multikueue-{access}" in created
    # The bucket writer's service account, which the dispatched workloads run as.
    assert "tpu-mr-use1-identities-training-trainer" in created
    assert "tpu-mr-use1-kueue-chart" in created and "tpu-mr-use1-k8s" in created
    assert only(steps, "update") == [
        "multikueue-multikueueconfig-multikueue", "queues-clusterqueue-research-cluster-queue",
        "queues-clusterqueue-training-cluster-queue", "queues-cohort-tpu-stack",
    ]  # fmt: skip
    config = named(with_use1, "multikueue-multikueueconfig-multikueue")["inputs"]["spec"]
    assert config == {"clusters": ["tpu-mr-east5", "tpu-mr-japan", "tpu-mr-use1"]}
    # research holds 4 of the 8 new chips everywhere; training none; the Cohorts keep the other 4.
    assert tpu_quota(with_use1, "queues-clusterqueue-research-cluster-queue") == {
        "east-flex-v6e": 4, "east-queued-v6e": 16, "japan-flex-v6e": 4, "japan-queued-v6e": 0, "use1-spot-v6e": 4,
    }  # fmt: skip
    assert tpu_quota(with_use1, "queues-clusterqueue-training-cluster-queue")["use1-spot-v6e"] == 0
    assert tpu_quota(with_use1, "queues-cohort-tpu-stack") == {"use1-spot-v6e": 4}
    assert tpu_quota(with_use1, "tpu-mr-use1-queues-clusterqueue-research-cluster-queue") == {"use1-spot-v6e": 4}
    assert tpu_quota(with_use1, "tpu-mr-use1-queues-clusterqueue-training-cluster-queue") == {"use1-spot-v6e": 0}
    assert tpu_quota(with_use1, "tpu-mr-use1-queues-cohort-tpu-stack") == {"use1-spot-v6e": 4}
    # Nothing of the two workers changes.
    changed_names = {s.name for s in steps.steps if s.op != "same"}
    for prefixes in WORKER_PREFIXES.values():
        assert [n for n in changed_names if n.startswith(prefixes)] == []
    # The manager dispatches to tpu-mr-use1 only once its Kueue, queues and the manager's binding there exist.
    state = {r["urn"]: r for r in with_use1}
    cluster = named(with_use1, "multikueue-multikueuecluster-tpu-mr-use1")["urn"]
    for needed in ("tpu-mr-use1-kueue-chart", "tpu-mr-use1-queues-clusterqueue-research-cluster-queue",
                   "tpu-mr-use1-multikueue-read-binding", "tpu-mr-use1-multikueue-dispatch-research",
                   "multikueue-tpu-mr-use1-kubeconfig"):  # fmt: skip
        assert depends_on(state, cluster, named(with_use1, needed)["urn"]), needed
    assert CATALOGUE.breaches(with_use1, {}) == []


# --- a worker removed ---------------------------------------------------------------------------------------------


def _without_japan(config: dict[str, Any]) -> None:
    """tpu-mr-japan goes, and the teams' shares of its pool groups with it."""
    multikueue = config["tpu-stack:multiKueue"]
    multikueue["workers"] = [w for w in multikueue["workers"] if w["name"] != "tpu-mr-japan"]
    for team in config["tpu-stack:queues"]["teams"]:
        team["shares"] = {pool: chips for pool, chips in team["shares"].items() if not pool.startswith("japan-")}


def test_a_removed_worker_is_deleted_after_the_manager_stops_dispatching_to_it(multiregion: Records) -> None:
    """Everything of tpu-mr-japan is deleted: its cluster, node pools, charts, queues, the manager's access there, its
    monitoring. On the manager the MultiKueueConfig drops it and the team queues its two flavors, in place and
    before the deletes; its MultiKueueCluster goes before its kubeconfig Secret and before the worker's Kueue
    objects and the manager's binding there (it waits for them on `up`), and the manager's flavors of the worker's
    pool groups go after the queues that named them stopped naming them."""
    without = changed(STACK, _without_japan)
    steps = step(multiregion, without)
    assert steps.refused == []
    assert only(steps, "create") == [] and only(steps, "replace") == []
    assert only(steps, "update") == [
        "multikueue-multikueueconfig-multikueue", "queues-clusterqueue-research-cluster-queue",
        "queues-clusterqueue-training-cluster-queue",
    ]  # fmt: skip
    assert named(without, "multikueue-multikueueconfig-multikueue")["inputs"]["spec"] == {"clusters": ["tpu-mr-east5"]}
    assert tpu_quota(without, "queues-clusterqueue-training-cluster-queue") == {
        "east-flex-v6e": 4,
        "east-queued-v6e": 0,
    }
    deleted = only(steps, "delete")
    of_japan = sorted(r["name"] for r in multiregion if r["name"].startswith(WORKER_PREFIXES["tpu-mr-japan"]))
    on_manager = ["multikueue-multikueuecluster-tpu-mr-japan", "multikueue-tpu-mr-japan-kubeconfig",
                  "queues-resourceflavor-japan-flex-v6e", "queues-resourceflavor-japan-queued-v6e"]  # fmt: skip
    assert deleted == sorted(of_japan + on_manager)
    gone = ("tpu-mr-japan", "japan-flex-v6e-0", "japan-flex-v6e-1", "japan-queued-v6e", "tpu-mr-japan-k8s",
            "tpu-mr-japan-kueue-chart", "tpu-mr-japan-multikueue-token-1", "tpu-mr-japan-multikueue-read-binding",
            "tpu-mr-japan-multikueue-dispatch-training", "tpu-mr-japan-identities-training-trainer")  # fmt: skip
    assert set(gone) <= set(deleted)
    order = [s.name for s in steps.steps if s.op in ("update", "delete")]
    first_delete = min(order.index(name) for name in deleted)
    assert order.index("multikueue-multikueueconfig-multikueue") < first_delete
    mk_cluster = order.index("multikueue-multikueuecluster-tpu-mr-japan")
    worker_kueue = [n for n in deleted if n.startswith(("tpu-mr-japan-queues-", "tpu-mr-japan-kueue-chart"))]
    assert len(worker_kueue) > 10
    assert all(mk_cluster < order.index(name) for name in worker_kueue)
    assert mk_cluster < order.index("multikueue-tpu-mr-japan-kubeconfig")
    assert mk_cluster < order.index("tpu-mr-japan-multikueue-read-binding")
    assert mk_cluster < order.index("tpu-mr-japan-multikueue-dispatch-research")
    for flavor in ("queues-resourceflavor-japan-flex-v6e", "queues-resourceflavor-japan-queued-v6e"):
        for team in ("research", "training"):
            assert order.index(f"queues-clusterqueue-{team}-cluster-queue") < order.index(flavor)
    assert CATALOGUE.breaches(without, {}) == []


# --- token rotation -----------------------------------------------------------------------------------------------


def _rotated(config: dict[str, Any]) -> None:
    config["tpu-stack:multiKueue"]["tokenGeneration"] = 2


def deployed_kubeconfigs(records: Records) -> Records:
    """`records` as the state holds them after `up`: the manager's kubeconfig Secrets known (a secret). The mock
    engine computes no Secret data, so its plan holds them unknown, as a preview whose token Secrets are new does."""
    records = copy.deepcopy(records)
    for record in records:
        if record["name"].startswith("multikueue-") and record["name"].endswith("-kubeconfig"):
            assert record["inputs"]["stringData"] == UNKNOWN
            record["inputs"]["stringData"] = SECRET
    return records


def test_a_new_token_generation_rotates_the_tokens_and_updates_the_kubeconfigs_in_place(
    multiregion: Records,
) -> None:
    """multiKueue.tokenGeneration 1 -> 2: each worker gets a token Secret of its own for generation 2
    (multikueue-manager-token-2), the manager's kubeconfig Secrets name the new token and are updated in place
    (enableSecretMutable), and the generation-1 Secrets are deleted, which revokes their tokens. The engine deletes
    after it creates and updates, so the kubeconfigs never name a revoked token. Nothing else changes."""
    rotated = changed(STACK, _rotated)
    steps = step(deployed_kubeconfigs(multiregion), rotated)
    assert steps.refused == []
    assert sorted((s.op, s.name, s.why) for s in steps.steps if s.op != "same") == [
        ("create", "tpu-mr-east5-multikueue-token-2", ""),
        ("create", "tpu-mr-japan-multikueue-token-2", ""),
        ("delete", "tpu-mr-east5-multikueue-token-1", ""),
        ("delete", "tpu-mr-japan-multikueue-token-1", ""),
        ("update", "multikueue-tpu-mr-east5-kubeconfig", "changes stringData"),
        ("update", "multikueue-tpu-mr-japan-kubeconfig", "changes stringData"),
    ]
    order = [s.name for s in steps.steps if s.op != "same"]
    for worker in WORKER_PREFIXES:
        new = named(rotated, f"{worker}-multikueue-token-2")
        assert new["inputs"]["metadata"]["name"] == "multikueue-manager-token-2"
        # The kubeconfig is written from the new token Secret: it is updated after the new token exists, and the
        # old token is revoked only after that.
        kubeconfig = named(rotated, f"multikueue-{worker}-kubeconfig")
        assert new["urn"] in kubeconfig["dependencies"]
        assert order.index(f"multikueue-{worker}-kubeconfig") < order.index(f"{worker}-multikueue-token-1")
    assert named(rotated, "tpu-mr-manager-k8s")["inputs"]["enableSecretMutable"] == "true"


def test_a_protected_stack_refuses_to_revoke_the_old_token_until_it_is_unprotected(multiregion: Records) -> None:
    """In a protected stack every resource is protected: the old token Secrets' delete is refused, and `pulumi up`
    fails at its preview with nothing applied, so the current token Secrets are unprotected first
    (docs/multiregion.md)."""

    def protect(records: Records) -> Records:
        records = copy.deepcopy(records)
        for record in records:
            record["protect"] = True
        return records

    steps = step(protect(deployed_kubeconfigs(multiregion)), protect(changed(STACK, _rotated)))
    assert only(steps, "refuse") == ["tpu-mr-east5-multikueue-token-1", "tpu-mr-japan-multikueue-token-1"]
    assert all("pulumi state unprotect" in line for line in steps.refused)
    assert only(steps, "create") == ["tpu-mr-east5-multikueue-token-2", "tpu-mr-japan-multikueue-token-2"]


def test_without_mutable_secrets_a_rotation_would_delete_the_kubeconfigs_first(multiregion: Records) -> None:
    """The kubernetes provider replaces a Secret whose data changes; a named one is deleted first, and Kueue would
    have no kubeconfig for the worker until the new Secret is written."""

    def immutable(records: Records) -> Records:
        records = copy.deepcopy(records)
        del named(records, "tpu-mr-manager-k8s")["inputs"]["enableSecretMutable"]
        return records

    steps = step(immutable(deployed_kubeconfigs(multiregion)), immutable(changed(STACK, _rotated)))
    assert only(steps, "replace") == ["multikueue-tpu-mr-east5-kubeconfig", "multikueue-tpu-mr-japan-kubeconfig"]
    assert only(steps, "update") == []


def test_the_managers_rights_on_a_worker_change_in_place_but_a_new_role_ref_replaces_the_binding(
    multiregion: Records,
) -> None:
    """A ClusterRole's rules update in place; a ClusterRoleBinding's roleRef is immutable (kubernetes
    pkg/apis/rbac/validation ValidateClusterRoleBindingUpdate), which the provider answers with a replacement, the
    old binding deleted first (its name is fixed)."""
    edited = copy.deepcopy(multiregion)
    role = named(edited, "tpu-mr-east5-multikueue-read-role")
    role["inputs"]["rules"][0]["verbs"] = ["get", "list"]
    binding = named(edited, "tpu-mr-japan-multikueue-read-binding")
    binding["inputs"]["roleRef"]["name"] = "multikueue-manager-v2"
    steps = step(multiregion, edited)
    assert steps.refused == []
    assert [(s.op, s.name, s.why) for s in steps.steps if s.op != "same"] == [
        ("update", "tpu-mr-east5-multikueue-read-role", "changes rules[0].verbs"),
        ("replace", "tpu-mr-japan-multikueue-read-binding", "changes roleRef.name"),
    ]


# --- destroy ------------------------------------------------------------------------------------------------------


def test_destroying_the_multiregion_stack_deletes_everything(multiregion: Records) -> None:
    """Nothing is protected (throwaway): every resource of the three clusters goes. The manager stops dispatching
    before a worker's objects go (its MultiKueueClusters first, then their kubeconfigs); in every cluster the team
    namespaces go while that cluster's Kueue controller still removes the Workloads' finalizers."""
    steps = step(multiregion, [])
    assert steps.refused == []
    assert len(steps.of("delete")) == len(multiregion)
    order = [s.name for s in steps.of("delete")]
    for worker in WORKER_PREFIXES:
        mk_cluster = order.index(f"multikueue-multikueuecluster-{worker}")
        for name in (f"{worker}-kueue-chart", f"{worker}-multikueue-read-binding", f"{worker}-multikueue-token-1",
                     f"{worker}-queues-clusterqueue-research-cluster-queue", f"multikueue-{worker}-kubeconfig",
                     worker):  # fmt: skip
            assert mk_cluster < order.index(name), name
    for prefix in ("", "tpu-mr-east5-", "tpu-mr-japan-"):
        controller = order.index(f"{prefix}kueue-chart:kueue-system/kueue-controller-manager")
        for team in ("research", "training"):
            assert order.index(f"{prefix}queues-namespace-{team}") < controller, (prefix, team)
    assert order.index("multikueue-admissioncheck-multikueue") > order.index(
        "queues-clusterqueue-research-cluster-queue"
    )


def test_an_immutable_secret_is_replaced_even_with_mutable_secrets(multiregion: Records) -> None:
    """`immutable: true` on the Secret itself wins over the provider's enableSecretMutable (pulumi-kubernetes
    diff.go, clients.IsImmutable): a rotation would then replace the kubeconfigs, deleting them first."""

    def immutable(records: Records) -> Records:
        records = copy.deepcopy(records)
        for worker in WORKER_PREFIXES:
            named(records, f"multikueue-{worker}-kubeconfig")["inputs"]["immutable"] = True
        return records

    steps = step(immutable(deployed_kubeconfigs(multiregion)), immutable(changed(STACK, _rotated)))
    assert only(steps, "replace") == ["multikueue-tpu-mr-east5-kubeconfig", "multikueue-tpu-mr-japan-kubeconfig"]
