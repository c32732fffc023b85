"""GkeCluster: Standard and Autopilot shapes, identity, protection, kubeconfig."""

from __future__ import annotations

import pytest

from tests.conftest import StackRunner

CLUSTER = "gcp:container/cluster:Cluster"


def test_standard_cluster_removes_default_pool_and_enables_workload_identity(run: StackRunner) -> None:
    plan = run({"tpu-stack:cluster": {"name": "c1"}})
    (cluster,) = plan.by_type(CLUSTER)
    inputs = cluster["inputs"]
    assert inputs["removeDefaultNodePool"] is True
    assert inputs["workloadIdentityConfig"] == {"workloadPool": "proj-1234.svc.id.goog"}
    assert inputs["releaseChannel"] == {"channel": "RAPID"}
    assert inputs["nodeConfig"]["serviceAccount"] == "c1-nodes@proj-1234.iam.gserviceaccount.com"
    assert inputs["deletionProtection"] is False
    assert cluster["protect"] is False
    assert cluster["customTimeouts"] == {"create": "90m", "update": "90m", "delete": "90m"}
    assert "minMasterVersion" not in inputs  # on a channel: GKE picks the version, the floor is checked


def test_version_floor_pins_the_initial_version_only_without_a_channel(run: StackRunner) -> None:
    plan = run({"tpu-stack:cluster": {"releaseChannel": "UNSPECIFIED", "minMasterVersion": "1.33"}})
    (cluster,) = plan.by_type(CLUSTER)
    assert cluster["inputs"]["minMasterVersion"] == "1.33"


def test_a_channel_version_below_the_floor_stops_the_update() -> None:
    import pulumi
    import pytest

    from components.gke_cluster import check_version_floor

    assert check_version_floor("1.34.1-gke.1000000", "1.33") == "1.34.1-gke.1000000"
    check_version_floor("1.33.0-gke.1712000", "1.33.0-gke.1712000")
    assert check_version_floor("", "1.33") == ""  # not reported yet
    with pytest.raises(pulumi.RunError) as error:
        check_version_floor("1.33.0-gke.1500000", "1.33.0-gke.1712000")
    assert str(error.value) == (
        "tpu-stack:cluster.minMasterVersion: the release channel gave the cluster 1.33.0-gke.1500000, below the "
        "floor 1.33.0-gke.1712000; choose a channel that offers 1.33.0-gke.1712000 or newer (cluster.releaseChannel)"
    )


def test_nodes_run_as_a_dedicated_account_with_only_minimal_roles(run: StackRunner) -> None:
    plan = run()
    roles = sorted(m["inputs"]["role"] for m in plan.by_type("gcp:projects/iAMMember:IAMMember"))
    # GKE's documented minimum for custom node service accounts, plus image pulls from Artifact Registry.
    assert roles == ["roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount"]
    (system,) = plan.by_type("gcp:container/nodePool:NodePool")
    assert system["inputs"]["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert system["inputs"]["autoscaling"] == {
        "totalMinNodeCount": 1,
        "totalMaxNodeCount": 3,
        "locationPolicy": "BALANCED",
    }


@pytest.mark.parametrize(
    ("location", "min_nodes", "max_nodes", "per_zone"),
    [
        (None, 4, 8, 2),  # regional: 3 zones x 2 = 6 nodes to start, 4..8 in total
        (None, 1, 3, 1),  # regional: 3 zones x 1 = 3
        ("us-central1-b", 4, 8, 4),  # zonal: one zone
    ],
)
def test_system_pool_sizes_are_totals_and_the_initial_count_is_per_zone(
    run: StackRunner, location: str | None, min_nodes: int, max_nodes: int, per_zone: int
) -> None:
    where = {"location": location} if location else {}
    cluster = {"systemPool": {"minNodes": min_nodes, "maxNodes": max_nodes}, **where}
    (system,) = run({"tpu-stack:cluster": cluster}).by_type("gcp:container/nodePool:NodePool")
    assert system["inputs"]["initialNodeCount"] == per_zone
    assert system["inputs"]["autoscaling"]["totalMinNodeCount"] == min_nodes
    assert system["inputs"]["autoscaling"]["totalMaxNodeCount"] == max_nodes
    assert system["customTimeouts"] == {"create": "120m", "update": "120m", "delete": "120m"}


@pytest.mark.parametrize(("stack", "protect"), [("prod", True), ("production", True), ("staging", False)])
def test_protected_stacks_protect_the_cluster(run: StackRunner, stack: str, protect: bool) -> None:
    alerts = {"notificationChannels": ["projects/proj-1234/notificationChannels/1"]}  # protected stacks name one
    plan = run({"tpu-stack:cluster": {"name": "c1", "deletionProtection": True}, "tpu-stack:monitoring": alerts},
               stack=stack)  # fmt: skip
    (cluster,) = plan.by_type(CLUSTER)
    assert cluster["protect"] is protect and cluster["inputs"]["deletionProtection"] is True


def test_autopilot_has_no_node_pools(run: StackRunner) -> None:
    plan = run({"tpu-stack:cluster": {"name": "ap", "mode": "autopilot"}})
    (cluster,) = plan.by_type(CLUSTER)
    assert cluster["inputs"]["enableAutopilot"] is True
    assert plan.by_type("gcp:container/nodePool:NodePool") == []


def test_kubeconfig_is_a_secret_using_the_gke_auth_plugin(run: StackRunner) -> None:
    from components.gke_cluster import kubeconfig

    plan = run()
    assert plan.outputs["kubeconfig"] == "[secret]"
    text = kubeconfig("c", "gke-0123.us-east5.gke.goog")
    assert "command: gke-gcloud-auth-plugin" in text and "server: https://gke-0123.us-east5.gke.goog" in text
    assert "token" not in text


def test_in_cluster_provider_waits_for_the_system_pool_only(run: StackRunner) -> None:
    plan = run({"tpu-stack:tpuPools": [{"name": "ms", "machineType": "ct5lp-hightpu-4t", "topology": "2x4",
                                        "zone": "us-central1-a"}]})  # fmt: skip
    (provider,) = plan.by_type("pulumi:providers:kubernetes")
    pools = {p["urn"]: p["name"] for p in plan.by_type("gcp:container/nodePool:NodePool")}
    assert [pools[d] for d in provider["dependencies"] if d in pools] == ["tpu-cluster-system"]


def test_no_maintenance_policy_unless_configured(run: StackRunner) -> None:
    (cluster,) = run().by_type(CLUSTER)
    assert "maintenancePolicy" not in cluster["inputs"]


def test_maintenance_window_and_exclusions_hold_node_upgrades_during_training(run: StackRunner) -> None:
    maintenance = {
        "recurringWindow": {
            "startTime": "2026-01-03T03:00:00+01:00",
            "endTime": "2026-01-03T09:00:00+01:00",
            "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
        },
        "exclusions": [{"name": "llm-run", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-15T00:00:00Z"}],
    }
    (cluster,) = run({"tpu-stack:cluster": {"maintenance": maintenance}}).by_type(CLUSTER)
    assert cluster["inputs"]["maintenancePolicy"] == {
        "recurringWindow": {
            "startTime": "2026-01-03T02:00:00Z",
            "endTime": "2026-01-03T08:00:00Z",
            "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
        },
        "maintenanceExclusions": [
            {
                "exclusionName": "llm-run",
                "startTime": "2026-12-01T00:00:00Z",
                "endTime": "2027-01-15T00:00:00Z",
                "exclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES"},
            }
        ],
    }


def test_tpu_pools_auto_upgrade_on_a_channel_and_not_without_one(run: StackRunner) -> None:
    pool = {"name": "v5e", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "zone": "us-central1-a"}
    on_channel = run({"tpu-stack:tpuPools": [pool]}).by_type("gcp:container/nodePool:NodePool")
    assert {p["name"]: p["inputs"]["management"]["autoUpgrade"] for p in on_channel} == {
        "tpu-cluster-system": True,
        "v5e-0": True,
    }
    static = run({"tpu-stack:cluster": {"releaseChannel": "UNSPECIFIED"}, "tpu-stack:tpuPools": [pool]})
    upgrades = {
        p["name"]: p["inputs"]["management"]["autoUpgrade"] for p in static.by_type("gcp:container/nodePool:NodePool")
    }
    assert upgrades["v5e-0"] is False
