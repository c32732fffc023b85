"""Lifecycle scenarios for dev and prod: the first `up`, each kind of update from today's deployed state, and
`pulumi destroy`, judged by the engine model (offline/lifecycle.py) and the catalogue (catalogue.py).

Expected steps are written out by hand from the stack files: which node pools, queues and namespaces a change
creates, replaces or deletes, and which steps the engine refuses.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from offline.vendor import REPO
from tests.lifecycle.catalogue import CATALOGUE
from tests.lifecycle.conftest import Records, changed, plan, stack_config, step, upgraded_chart


def only(steps: Any, op: str) -> list[str]:
    return sorted(s.name for s in steps.of(op))


# --- day 0: the first `up` -----------------------------------------------------------------------------------


def test_first_up_creates_everything_and_breaks_no_rule(deployed: dict[str, Records]) -> None:
    for stack, records in deployed.items():
        steps = step([], records)
        assert steps.refused == [], stack
        assert len(steps.of("create")) == len(records), stack
        assert CATALOGUE.breaches(records, {}) == [], stack


# --- day 1 and 2: updates ------------------------------------------------------------------------------------


def _slices(count: int, pool: str) -> Any:
    def change(config: dict[str, Any]) -> None:
        for entry in config["tpu-stack:tpuPools"]:
            if entry["name"] == pool:
                entry["slices"] = count

    return change


def test_dev_slices_3_to_5_to_3(deployed: dict[str, Records]) -> None:
    five = changed("dev", _slices(5, "multislice"))
    grow = step(deployed["dev"], five)
    assert grow.refused == []
    assert only(grow, "create") == ["multislice-3", "multislice-4"]
    # 2 more v5e 2x4 slices = 16 more chips, none of them in a team's share: the cohort's pool grows from 8 to 24
    # chips in place (no queue is recreated), and the dashboard shows the new slices.
    assert only(grow, "update") == ["monitoring-dashboard", "queues-cohort-tpu-stack"]
    cohort = next(r for r in five if r["name"] == "queues-cohort-tpu-stack")
    (multislice,) = [f for f in cohort["inputs"]["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "multislice"]
    assert multislice["resources"] == [{"name": "google.com/tpu", "nominalQuota": 24}]
    assert only(grow, "replace") == [] and only(grow, "delete") == []
    shrink = step(five, deployed["dev"])
    assert shrink.refused == []
    assert only(shrink, "delete") == ["multislice-3", "multislice-4"]
    assert only(shrink, "create") == [] and only(shrink, "replace") == []


def test_prod_adds_train_slices_but_refuses_to_delete_them(deployed: dict[str, Records]) -> None:
    four = changed("prod", _slices(4, "train"))
    grow = step(deployed["prod"], four)
    assert grow.refused == []
    assert only(grow, "create") == ["train-2", "train-3"]
    shrink = step(four, deployed["prod"])
    assert only(shrink, "delete") == []
    assert only(shrink, "refuse") == ["train-2", "train-3"]
    assert all("pulumi state unprotect" in line for line in shrink.refused)


def _pool(name: str, **fields: Any) -> Any:
    def change(config: dict[str, Any]) -> None:
        (entry,) = [e for e in config["tpu-stack:tpuPools"] if e["name"] == name]
        entry.update(fields)
        for key in [k for k, v in fields.items() if v is None]:
            del entry[key]

    return change


def _pools(names: tuple[str, ...], **fields: Any) -> Any:
    def change(config: dict[str, Any]) -> None:
        for name in names:
            _pool(name, **fields)(config)

    return change


def test_dev_new_slice_shape_replaces_the_pools_in_place_of_updating_them(deployed: dict[str, Records]) -> None:
    """GKE's provider applies no topology change to an existing pool (the update sends none): a 4x4 slice is a new
    pool, deleted first (its name is fixed). The multislice ladder's rungs share one shape, so both groups change;
    their flavors and the cohort (which holds the chips no team was given: 3 x 16 - 16 flex-start, 16 - 8 spot)
    follow in place. The teams' shares are whole chips (8), so the ClusterQueues do not change."""
    steps = step(deployed["dev"], changed("dev", _pools(("multislice", "multislice-spot"), topology="4x4")))
    assert steps.refused == []
    # The spot group is one slice deployed with its node pool named after the group (legacyFirstSliceName).
    assert only(steps, "replace") == ["multislice-0", "multislice-1", "multislice-2", "multislice-spot"]
    assert only(steps, "update") == [
        "monitoring-dashboard", "queues-cohort-tpu-stack", "queues-resourceflavor-multislice",
        "queues-resourceflavor-multislice-spot"]  # fmt: skip
    assert only(steps, "create") == [] and only(steps, "delete") == []


def test_dev_flex_start_to_spot_replaces_the_pool(deployed: dict[str, Records]) -> None:
    """flexStart, spot and reservationAffinity are ForceNew in the provider: the pool is recreated, the flavor's
    node labels (gke-flex-start out, gke-spot in) change in place."""
    steps = step(deployed["dev"], changed("dev", _pool("flex-v6e", provisioning="spot", maxRunDuration=None)))
    assert steps.refused == []
    assert only(steps, "replace") == ["flex-v6e"]
    assert only(steps, "update") == ["queues-resourceflavor-flex-v6e"]


def test_prod_refuses_to_replace_its_reserved_pools(deployed: dict[str, Records]) -> None:
    """The train ladder's rungs (train, burst) change shape together; every pool of a protected stack is protected."""
    steps = step(deployed["prod"], changed("prod", _pools(("train", "burst"), topology="2x4")))
    assert only(steps, "refuse") == ["burst", "train-0", "train-1"]
    assert only(steps, "replace") == []


def test_prod_deployed_before_upgrade_settings_updates_its_reserved_pools_in_place(
    deployed: dict[str, Records],
) -> None:
    """Issue 27, defect 7: prod's reservation-backed train slices gain upgradeSettings (no surge node). The field is
    not ForceNew (terraform-provider-google resource_container_node_pool.go, upgrade_settings; the update sends it
    with UpdateNodePoolRequest), so the pools of a protected stack are updated, never replaced or refused."""
    before = copy.deepcopy(deployed["prod"])
    for record in before:
        record["inputs"].pop("upgradeSettings", None)
    steps = step(before, deployed["prod"])
    assert steps.refused == []
    assert only(steps, "update") == ["train-0", "train-1"]
    assert only(steps, "replace") == [] and only(steps, "create") == [] and only(steps, "delete") == []


def _fixed(config: dict[str, Any]) -> None:
    """The stack as it was deployed before its pool groups scaled to zero."""
    for entry in config["tpu-stack:tpuPools"]:
        entry.pop("scaleToZero", None)


def test_slices_deployed_fixed_scale_to_zero_in_place(deployed: dict[str, Records]) -> None:
    """Issue 27, defect 8: dev's spot slice and llm's serving slices were fixed (nodeCount). Scaling them to zero adds
    autoscaling (updated in place) and initialNodeCount 0, which is ForceNew but ignored on autoscaled pools: the
    engine resets an ignored path to the old inputs' value and drops it where the old inputs had none (pulumi
    sdk/go/common/resource/properties_path.go, PropertyPath.reset), so the provider sees no change there and the
    pools, with whatever runs on them, are kept."""
    steps = step(changed("dev", _fixed), deployed["dev"])
    assert steps.refused == []
    assert only(steps, "update") == ["multislice-spot"]
    assert only(steps, "replace") == [] and only(steps, "create") == [] and only(steps, "delete") == []
    llm = stack_config("llm")
    served = step(changed("llm", _fixed), plan("llm", llm))
    assert served.refused == []
    assert only(served, "update") == ["llm-v5e-0", "llm-v5e-1", "llm-v5e-2", "llm-v6e-0", "llm-v6e-1"]
    assert only(served, "replace") == [] and only(served, "create") == [] and only(served, "delete") == []


def test_checkpoints_get_their_bucket_beside_the_deployed_one(deployed: dict[str, Records]) -> None:
    """Issue 27, defect 6, on a stack deployed before it: the checkpoint bucket and the writer's role on it are
    created; the datasets' bucket, whose hierarchical namespace could only be set by replacing it (ForceNew, Cloud
    Storage sets it at creation only), is not touched. prod's trainer held its role on the datasets' bucket already."""
    checkpoint_parts = [r for r in deployed["prod"] if "checkpoints" in r["name"]]
    before = [r for r in deployed["prod"] if r not in checkpoint_parts]
    steps = step(before, deployed["prod"])
    assert steps.refused == []
    assert only(steps, "create") == ["data-checkpoints", "training-trainer-checkpoints-storage-objectUser"]
    assert only(steps, "update") == [] and only(steps, "replace") == [] and only(steps, "delete") == []


def _on_demand_rung(config: dict[str, Any]) -> None:
    """A third rung for the multislice ladder: one fixed on-demand v6e 2x4 slice, billed while up, so tried first:
    the spot rung scales to zero and flex-start is made on request, both come after it (issue 27, defect 8). Its
    label keeps the pods Kueue admits on it off the spot and flex-start nodes (which carry the shape labels too)."""
    config["tpu-stack:tpuPools"].append({
        "name": "multislice-on-demand", "machineType": "ct6e-standard-4t", "topology": "2x4", "zone": "us-east5-b",
        "labels": {"pool": "multislice-on-demand"}})  # fmt: skip
    config["tpu-stack:queues"]["ladders"]["multislice"].insert(0, "multislice-on-demand")


def test_dev_a_rung_added_to_a_ladder_then_removed(deployed: dict[str, Records]) -> None:
    """The new slice's node pool `multislice-on-demand-0` (and its component) and ResourceFlavor are created; both
    teams' ClusterQueues list the new flavor first, before the spot and flex-start rungs, in place, and those rungs'
    flavors take places 1 and 2: Kueue's webhook refuses only a changed concurrentAdmissionPolicy and the CRD has no
    transition rule on a ClusterQueue (catalogue Refuses), so nothing is replaced and no running workload is evicted.
    The queues wait for the new flavor (it exists before they name it); the cohort takes its 8 chips (no team has a
    share of them) and the dashboard shows the slice. Removing the rung reverses it: the queues drop the flavor in
    place before the flavor and the node pool are deleted."""
    with_rung = changed("dev", _on_demand_rung)
    added = step(deployed["dev"], with_rung)
    assert added.refused == []
    assert only(added, "create") == [
        "multislice-on-demand", "multislice-on-demand-0", "queues-resourceflavor-multislice-on-demand"]  # fmt: skip
    assert only(added, "update") == [
        "monitoring-dashboard", "queues-clusterqueue-research-cluster-queue",
        "queues-clusterqueue-training-cluster-queue", "queues-cohort-tpu-stack", "queues-resourceflavor-multislice",
        "queues-resourceflavor-multislice-spot",
    ]  # fmt: skip
    assert only(added, "replace") == [] and only(added, "delete") == []
    research = next(r for r in with_rung if r["name"] == "queues-clusterqueue-research-cluster-queue")
    listed = [f["name"] for f in research["inputs"]["spec"]["resourceGroups"][0]["flavors"]]
    assert listed == ["flex-v6e", "multislice-on-demand", "multislice-spot", "multislice"]
    assert CATALOGUE.breaches(with_rung, {}) == []
    removed = step(with_rung, deployed["dev"])
    assert removed.refused == []
    assert only(removed, "delete") == only(added, "create")
    assert only(removed, "update") == only(added, "update")
    order = [s.name for s in removed.steps if s.op in ("update", "delete")]
    assert order.index("queues-clusterqueue-research-cluster-queue") < order.index(
        "queues-resourceflavor-multislice-on-demand"
    )


def _add_team(config: dict[str, Any]) -> None:
    teams = config["tpu-stack:queues"]["teams"]
    teams.append({"name": "eval", "shares": {"flex-v6e": 4}})
    teams[0]["shares"] = {"multislice-spot": 8, "multislice": 8}  # research gives its flex-v6e chips to eval


def test_dev_team_added_then_removed(deployed: dict[str, Records]) -> None:
    with_eval = changed("dev", _add_team)
    added = step(deployed["dev"], with_eval)
    assert added.refused == []
    assert only(added, "create") == [
        "eval-policies", "eval-policies-allow-platform-egress", "eval-policies-allow-same-namespace",
        "eval-policies-default-deny", "monitoring-pending-eval-cluster-queue", "queues-clusterqueue-eval-cluster-queue",
        "queues-localqueue-eval-eval-queue", "queues-namespace-eval",
    ]  # fmt: skip
    # The pods-not-starting alert watches every team's namespace: eval's joins its query, in place.
    assert only(added, "update") == [
        "monitoring-dashboard", "monitoring-pods-not-starting",
        "queues-clusterqueue-research-cluster-queue"]  # fmt: skip
    removed = step(with_eval, deployed["dev"])
    assert removed.refused == []
    assert only(removed, "delete") == only(added, "create")


def _add_prod_team(config: dict[str, Any]) -> None:
    teams = config["tpu-stack:queues"]["teams"]
    teams.append({"name": "eval", "shares": {"burst": 8}})
    teams[1]["shares"] = {}  # research hands half of burst's 16 chips to eval; the cohort keeps the other 8


def test_prod_team_added_then_removal_refused(deployed: dict[str, Records]) -> None:
    """Adding a team is ordinary; removing one would delete its namespace with its jobs: prod refuses it."""
    with_eval = changed("prod", _add_prod_team)
    added = step(deployed["prod"], with_eval)
    assert added.refused == []
    assert len(added.of("create")) == 8 and "queues-namespace-eval" in only(added, "create")
    assert only(added, "update") == [
        "monitoring-dashboard", "monitoring-pods-not-starting", "queues-clusterqueue-research-cluster-queue",
        "queues-cohort-tpu-stack"]  # fmt: skip
    removed = step(with_eval, deployed["prod"])
    assert only(removed, "delete") == []
    assert "queues-namespace-eval" in only(removed, "refuse")


def _no_teams(config: dict[str, Any]) -> None:
    """dev as the multislice seed has it: one ClusterQueue, one LocalQueue in `default` (its ladder kept)."""
    config["tpu-stack:queues"] = {"ladders": config["tpu-stack:queues"]["ladders"]}
    config["tpu-stack:bucket"] = {}


def _renamed_queue(config: dict[str, Any]) -> None:
    _no_teams(config)
    config["tpu-stack:queues"]["clusterQueue"] = "tpu-queue"


def test_a_renamed_cluster_queue_replaces_its_local_queue() -> None:
    """LocalQueue.spec.clusterQueue is immutable (the CRD's transition rule): the LocalQueue is recreated, deleted
    first, pointing at the new ClusterQueue; the old ClusterQueue goes."""
    steps = step(changed("dev", _no_teams), changed("dev", _renamed_queue))
    assert steps.refused == []
    assert only(steps, "create") == ["monitoring-pending-tpu-queue", "queues-clusterqueue-tpu-queue"]
    assert only(steps, "replace") == ["queues-localqueue-default-multislice-queue"]
    assert only(steps, "delete") == ["monitoring-pending-cluster-queue", "queues-clusterqueue-cluster-queue"]


DIGEST = "us-docker.pkg.dev/cloud-tpu-images/inference/sax-model-server:v1.1.0@sha256:" + "a" * 64


def _pin_model_server(config: dict[str, Any]) -> None:
    config["tpu-stack:saxml"]["images"] = {"modelServer": DIGEST}


def as_unprotected(config: dict[str, Any]) -> dict[str, Any]:
    """prod's config for a stack of another name that is not protected: without `tpu-stack:protected`."""
    return {key: value for key, value in config.items() if key != "tpu-stack:protected"}


def test_pinning_the_model_server_by_digest_replaces_the_jobset_or_asks_for_unprotect() -> None:
    """A running JobSet's replicatedJobs cannot change (JobSet's webhook): a new image is a new JobSet, deleted first
    (its name is fixed). Unprotected stacks do it; prod refuses until the JobSet is unprotected on purpose."""
    prod = stack_config("prod")
    pinned = copy.deepcopy(prod)
    _pin_model_server(pinned)
    staging = step(plan("staging", as_unprotected(prod)), plan("staging", as_unprotected(pinned)))
    assert staging.refused == []
    assert only(staging, "replace") == ["saxml-model-servers-0", "saxml-model-servers-1"]
    protected = step(plan("prod", prod), plan("prod", pinned))
    assert only(protected, "refuse") == ["saxml-model-servers-0", "saxml-model-servers-1"]
    assert "pulumi state unprotect" in protected.refused[0]


START = (datetime.now(UTC) + timedelta(days=20)).replace(hour=0, minute=0, second=0, microsecond=0)
"""Calendar windows may start at most 120 days ahead and not in the past."""


CALENDAR_TPU = {"us-east5": ("ct6e-standard-4t", "us-east5-b"), "us-west4": ("ct5lp-hightpu-4t", "us-west4-a")}


def _calendar(days: int, **window: Any) -> Any:
    def change(config: dict[str, Any]) -> None:
        end = START + timedelta(days=days)
        # A zone that offers the TPU in the stack's region (vendor/data/tpu_zones.json): dev's us-east5 has Trillium,
        # prod's us-west4 v5e.
        machine, zone = CALENDAR_TPU[config["gcp:region"]]
        config["tpu-stack:tpuPools"].append({
            "name": "cal", "machineType": machine, "topology": "4x4", "slices": 2, "zone": zone,
            "provisioning": "reservation",
            "futureReservation": {"startTime": START.isoformat(), "endTime": end.isoformat(), **window}})  # fmt: skip

    return change


def test_a_changed_calendar_window_submits_a_new_request_and_keeps_the_old() -> None:
    """A submitted request cannot change or be deleted: the new window is a new request under its own name (no 409),
    the old one is forgotten, not deleted, and the pools follow the new reservation's name."""
    week, fortnight = changed("dev", _calendar(7)), changed("dev", _calendar(14))
    steps = step(week, fortnight)
    assert steps.refused == []
    assert only(steps, "replace") == ["cal-0", "cal-1", "cal-calendar"]
    (old,) = [r for r in week if r["name"] == "cal-calendar"]
    (new,) = [r for r in fortnight if r["name"] == "cal-calendar"]
    assert old["inputs"]["name"] != new["inputs"]["name"]
    prefix = f"cal-{START:%Y%m%d}-"
    assert old["inputs"]["name"].startswith(prefix) and new["inputs"]["name"].startswith(prefix)


def test_destroy_then_up_takes_back_the_kept_calendar_request() -> None:
    """`pulumi destroy` keeps the request (retainOnDelete); submitting it again is a 409, importing it is not."""
    week = changed("dev", _calendar(7))
    destroyed = step(week, [])
    assert [r["name"] for r in destroyed.retained] == ["cal-calendar"]
    again = step([], week, in_cloud=destroyed.retained)
    assert [s.name for s in again.of("refuse")] == ["cal-calendar"]
    adopted = step([], changed("dev", _calendar(7, existing=True)), in_cloud=destroyed.retained)
    assert adopted.refused == []


def test_a_jobset_chart_upgrade_updates_its_objects_in_place(deployed: dict[str, Records]) -> None:
    """Helm labels every object with the chart version: an upgrade re-applies all of them. None is replaced (no
    selector or Secret data changes), and the cert Secret is re-applied without the data its rotator owns."""
    for stack, records in deployed.items():
        upgraded = upgraded_chart(records, "jobset", "0.12.0", "0.12.1")
        steps = step(records, upgraded)
        assert steps.refused == [] and only(steps, "replace") == [], stack
        jobset_objects = [r["name"] for r in records if r["name"].startswith("jobset-chart:")]
        assert len(jobset_objects) == 21
        # The Chart's version and every labelled object; the CRD and the metrics Service carry no chart label.
        unlabelled = ("jobset-chart:jobsets.jobset.x-k8s.io", "jobset-chart:jobset-system/jobset-metrics-service")
        assert only(steps, "update") == sorted(n for n in ["jobset-chart", *jobset_objects] if n not in unlabelled)
        assert CATALOGUE.breaches(upgraded, {}) == []


def test_a_rotated_kubeconfig_updates_the_provider_and_nothing_else(deployed: dict[str, Records]) -> None:
    """The provider is identified by the cluster's DNS endpoint: a new kubeconfig (CA rotation, the IP endpoint
    turned on or off) updates it in place; without the identifier every object would be replaced (AlreadyExists)."""
    for stack, records in deployed.items():
        rotated = copy.deepcopy(records)
        (provider,) = [r for r in rotated if r["type"] == "pulumi:providers:kubernetes"]
        provider["inputs"]["kubeconfig"] = "a kubeconfig with a rotated CA"
        steps = step(records, rotated)
        assert [(s.op, s.name) for s in steps.steps if s.op != "same"] == [("update", provider["name"])], stack
    # Without it (the provider as it was): dev's named objects would be created again before the old ones go.
    records = deployed["dev"]
    unidentified = copy.deepcopy(records)
    (provider,) = [r for r in unidentified if r["type"] == "pulumi:providers:kubernetes"]
    del provider["inputs"]["clusterIdentifier"]
    rotated = copy.deepcopy(unidentified)
    next(r for r in rotated if r["name"] == provider["name"])["inputs"]["kubeconfig"] = "a rotated kubeconfig"
    replaced = step(unidentified, rotated)
    # Only the objects the program already replaces delete-first (LocalQueues, PriorityClasses) and the charts (no
    # name of their own) come through; every other object's create finds its name taken.
    assert only(replaced, "replace") == [
        "jobset-chart", "kueue-chart", "queues-localqueue-research-research-queue",
        "queues-localqueue-training-training-queue", "queues-priorityclass-high", "queues-priorityclass-low",
        "queues-priorityclass-medium", "queues-priorityclass-very-high", "queues-priorityclass-very-low",
        "tpu-dev-k8s",
    ]  # fmt: skip
    # 135 named objects before the multislice ladder, and its spot rung's ResourceFlavor.
    collisions = [line for line in replaced.refused if "(409/AlreadyExists)" in line]
    assert len(collisions) == len(replaced.refused) == 136


def _host_resources(config: dict[str, Any]) -> None:
    per_vm = {"cpu": "100", "memory": "170Gi"}
    config["tpu-stack:queues"]["hostResources"] = {"train": per_vm, "burst": per_vm}


def _renamed_cluster(config: dict[str, Any]) -> None:
    config["tpu-stack:cluster"]["name"] += "-b"


def test_a_renamed_cluster_takes_every_kubernetes_object_to_the_new_cluster(deployed: dict[str, Records]) -> None:
    """The cluster's name names its provider (`tpu-dev-k8s` -> `tpu-dev-b-k8s`): a new provider resource, whose
    DiffConfig, asked about the old provider's settings, answers "replace" for a changed clusterIdentifier
    (pulumi/pulumi step_generator.go providerChanged; pulumi-kubernetes provider.go DiffConfig). Every Kubernetes
    object is then created in the new cluster before its old copy goes: no name is taken there."""
    records = deployed["dev"]
    renamed = step(records, changed("dev", _renamed_cluster))
    assert renamed.refused == []
    cluster_parts = [
        "tpu-dev{}",
        "tpu-dev{}",
        "tpu-dev{}-k8s",
        "tpu-dev{}-nodes",
        "tpu-dev{}-system",
        "tpu-dev{}-nodes-artifactregistry-reader",
        "tpu-dev{}-nodes-container-defaultNodeServiceAccount",
        # Issue 27: the cluster's subnetwork (named after it, same ranges), NAT and webhook rule. Not modelled: Compute
        # refuses the new subnetwork while the old one, deleted last, holds the same ranges; rename by delete first.
        "tpu-dev{}-cp-webhooks",
        "tpu-dev{}-nat",
        "tpu-dev{}-nodes",
        "tpu-dev{}-router",
    ]
    assert only(renamed, "create") == sorted(name.format("-b") for name in cluster_parts)
    assert only(renamed, "delete") == sorted(name.format("") for name in cluster_parts)
    moved = "moves to provider tpu-dev-b-k8s, which replaces it (changed: clusterIdentifier)"
    kubernetes = sorted(r["name"] for r in records if r["type"].startswith("kubernetes:"))
    assert sum(1 for r in records if r.get("rendered")) == 99  # the charts' objects: Kueue 78, JobSet 21
    assert sorted(s.name for s in renamed.of("replace") if s.why == moved) == kubernetes
    # The TPU pools move with the cluster (`cluster` is ForceNew), and the node service account is renamed too.
    pools = ["flex-v6e", *(f"multislice-{i}" for i in range(3)), "multislice-spot"]  # dev's spot rung: 1 slice
    assert sorted(s.name for s in renamed.of("replace") if s.why != moved) == pools
    assert only(renamed, "update") == ["monitoring-dashboard", "monitoring-tpu-idle-while-waiting"]


def test_prod_refuses_to_move_its_kubernetes_objects_to_a_renamed_cluster(deployed: dict[str, Records]) -> None:
    """The same rename in prod: every object is protected, so each replacement and the old cluster's delete are
    refused; `pulumi up` stops there."""
    records = deployed["prod"]
    renamed = step(records, changed("prod", _renamed_cluster))
    assert renamed.of("replace") == [] and renamed.of("delete") == []
    moved = "moves to provider tpu-prod-b-k8s, which replaces it (changed: clusterIdentifier)"
    refused_moves = sorted(s.name for s in renamed.of("refuse") if moved in s.why)
    assert refused_moves == sorted(r["name"] for r in records if r["type"].startswith("kubernetes:"))
    assert "tpu-prod: delete of a protected resource: `pulumi state unprotect` first" in [
        f"{s.name}: {s.why}" for s in renamed.of("refuse") if s.type == "gcp:container/cluster:Cluster"
    ]


def test_prod_controller_config_changes_in_place(deployed: dict[str, Records]) -> None:
    """Kueue's config is a ConfigMap of its chart: with the provider's enableConfigMapMutable it is updated (its
    data would otherwise replace it, which prod refuses), and the chart's config checksum rolls the controller."""
    steps = step(deployed["prod"], changed("prod", _host_resources))
    assert steps.refused == []
    assert only(steps, "update") == [
        "kueue-chart", "kueue-chart:kueue-system/kueue-controller-manager",
        "kueue-chart:kueue-system/kueue-manager-config",
        "queues-clusterqueue-research-cluster-queue", "queues-clusterqueue-training-cluster-queue",
    ]  # fmt: skip

    def without_mutable_config_maps(records: Records) -> Records:
        records = copy.deepcopy(records)
        del next(r for r in records if r["type"] == "pulumi:providers:kubernetes")["inputs"]["enableConfigMapMutable"]
        return records

    before, after = deployed["prod"], changed("prod", _host_resources)
    refused = step(without_mutable_config_maps(before), without_mutable_config_maps(after))
    assert only(refused, "refuse") == ["kueue-chart:kueue-system/kueue-manager-config"]


def test_prod_refuses_a_new_calendar_window_before_submitting_it() -> None:
    """A new window in prod would submit a new, irrevocable request and then fail on the protected pools: the
    protected request refuses its replacement first, so nothing is submitted until the step is taken on purpose."""
    prod = stack_config("prod")
    week, fortnight = copy.deepcopy(prod), copy.deepcopy(prod)
    for config, days in ((week, 7), (fortnight, 14)):
        _calendar(days)(config)
        # Not the 4x4 shape of prod's train ladder: 2 slices of 2x4, 16 chips, a count calendar mode takes.
        config["tpu-stack:tpuPools"][-1]["topology"] = "2x4"
    steps = step(plan("prod", week), plan("prod", fortnight))
    assert only(steps, "create") == [] and only(steps, "replace") == []
    assert only(steps, "refuse") == ["cal-0", "cal-1", "cal-calendar"]


# --- destroy -------------------------------------------------------------------------------------------------


def test_destroying_dev_deletes_everything(deployed: dict[str, Records]) -> None:
    steps = step(deployed["dev"], [])
    assert steps.refused == []
    assert len(steps.of("delete")) == len(deployed["dev"])
    # Workloads' finalizers need the Kueue controller: the team namespaces go before it, the CRDs after them.
    order = [s.name for s in steps.of("delete")]
    for namespace in ("queues-namespace-research", "queues-namespace-training"):
        assert order.index(namespace) < order.index("kueue-chart:kueue-system/kueue-controller-manager")
        assert order.index(namespace) < order.index("kueue-chart:workloads.kueue.x-k8s.io")


def test_destroying_prod_deletes_nothing(deployed: dict[str, Records]) -> None:
    """Every resource is protected, so no delete step is reached before a refusal: nothing holding state, capacity
    or running work goes (the engine deletes a protected resource's dependents first, so all must be protected)."""
    steps = step(deployed["prod"], [])
    assert only(steps, "delete") == [] and only(steps, "forget") == []
    assert len(steps.refused) > 0


# --- Saxml, once: one model-server JobSet to one per slice ---------------------------------------------------------

JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"


def _one_model_server_set(records: Records) -> Records:
    """`records` as the version before per-slice JobSets planned them (components/saxml.py at 970c484^): the slices'
    JobSets `saxml-model-servers-<i>` were one JobSet `saxml-model-servers` named `sax-model-server-set`, its one
    replicated job `sax-model-server` with replicas = slices, the child Jobs `backoffLimit: 0` with no pod failure
    policy, and a failure policy of `maxRestarts` only."""
    servers = sorted((r for r in records if r["type"] == JOBSET and r["name"].startswith("saxml-model-servers-")),
                     key=lambda r: r["name"])  # fmt: skip
    old = copy.deepcopy(servers[0])
    old["urn"] = old["urn"].removesuffix("-0")
    old["name"] = "saxml-model-servers"
    spec = old["inputs"]["spec"]
    old["inputs"]["metadata"]["name"] = "sax-model-server-set"
    spec["failurePolicy"] = {"maxRestarts": spec["failurePolicy"]["maxRestarts"]}
    (job,) = spec["replicatedJobs"]
    job["replicas"] = len(servers)
    del job["template"]["spec"]["podFailurePolicy"]
    return [r for r in records if r not in servers] + [old]


def test_saxml_moves_once_from_one_model_server_jobset_to_one_per_slice() -> None:
    """The first `up` of this version over a stack deployed with one model-server JobSet: the engine creates the
    per-slice JobSets (new URNs) and deletes the old one at the end of the update; a staging stack (unprotected)
    does it, prod refuses the delete until the old JobSet is unprotected on purpose (docs/operations.md)."""
    for stack in ("staging", "prod"):
        config = as_unprotected(stack_config("prod")) if stack == "staging" else stack_config("prod")
        new = plan(stack, config)
        moved = step(_one_model_server_set(new), new)
        servers = [s for s in moved.steps if s.type == JOBSET]
        gone = "delete" if stack == "staging" else "refuse"
        assert [(s.op, s.name) for s in servers if s.op != "same"] == [
            ("create", "saxml-model-servers-0"),
            ("create", "saxml-model-servers-1"),
            (gone, "saxml-model-servers"),
        ], stack
        refused = moved.refused
        if stack == "prod":
            assert len(refused) == 1 and refused[0].startswith(f"saxml-model-servers ({JOBSET}): ")
            assert "pulumi state unprotect" in refused[0]
        else:
            assert refused == []


def test_destroying_a_throwaway_stack_with_a_checkpoint_bucket_deletes_its_folders_first(
    deployed: dict[str, Records],
) -> None:
    """The provider's forceDestroy lists and deletes objects, every version, and never a hierarchical namespace's
    folders (terraform-provider-google resource_storage_bucket.go resourceStorageBucketDelete, L1263-1400 at e03b762:
    Objects.List and Objects.Delete, then Buckets.Delete); Cloud Storage deletes only empty folders
    (storage/docs/json_api/v1/folders/delete). dev's checkpoint bucket has a hierarchical namespace and forceDestroy:
    the destroy procedure removes it with its folders first (`gcloud storage rm --recursive`, Google's command for a
    bucket and everything in it) and refreshes, so the engine finds it gone instead of failing to delete it."""
    (bucket,) = [r for r in deployed["dev"] if (r["inputs"].get("hierarchicalNamespace") or {}).get("enabled")]
    assert bucket["inputs"]["forceDestroy"] is True
    operations = (REPO / "docs" / "operations.md").read_text()
    procedure = operations[operations.index("**Destroying a throwaway stack.**") :]
    procedure = procedure[: procedure.index("\n## ")]
    assert "gcloud storage rm --recursive gs://$(pulumi stack output checkpointBucketName --stack dev)" in procedure
    assert "pulumi destroy --stack dev --refresh" in procedure


def test_a_zone_less_group_deployed_before_node_locations_is_updated_in_place(deployed: dict[str, Records]) -> None:
    """A single-host flex-start group without `zone`, deployed by the previous version (no nodeLocations, per-zone
    autoscaling limits), gets the zone table's zones and a total limit. Neither field forces a new node pool:
    `node_locations` is updated with UpdateNodePoolRequest.Locations and a changed `autoscaling` block with
    ClusterUpdate.DesiredNodePoolAutoscaling (terraform-provider-google v7.45.0 resource_container_node_pool.go,
    nodePoolUpdate), so the pool is updated, never replaced, in a stack that protects it or not. GKE removes the nodes
    of a zone taken out of a pool's locations (NodePool.locations in the GKE API reference); the zones taken out are
    those whose flex-start capacity has no such TPU, so they hold no slice to lose."""

    def zone_less(config: dict[str, Any]) -> None:
        config["tpu-stack:tpuPools"].append(
            {"name": "flex-any", "machineType": "ct6e-standard-8t", "provisioning": "flex-start"}
        )

    now = changed("dev", zone_less)
    (pool,) = [r for r in now if r["name"] == "flex-any-0"]
    # The table's flex-start v6e zones of us-east5 (vendor/data/tpu_zones.json); one VM a slice, across them.
    assert pool["inputs"]["nodeLocations"] == ["us-east5-a", "us-east5-b"]
    assert pool["inputs"]["autoscaling"]["totalMaxNodeCount"] == 1
    before = copy.deepcopy(now)
    for record in before:
        if record["name"] == "flex-any-0":
            record["inputs"].pop("nodeLocations")
            record["inputs"]["autoscaling"] = {"minNodeCount": 0, "maxNodeCount": 1, "locationPolicy": "ANY"}
    steps = step(before, now)
    assert steps.refused == []
    assert only(steps, "update") == ["flex-any-0"]
    assert only(steps, "replace") == [] and only(steps, "create") == [] and only(steps, "delete") == []
