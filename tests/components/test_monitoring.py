"""Observability of dev and prod: PodMonitorings of both controllers, one dashboard naming every pool group and
ClusterQueue of the stack, the alert policies, and the dashboard URL output."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.config.base import ConfigError
from components.config.queues import queue_refs
from components.config.stack import load
from offline import validate
from offline.engine import Plan
from tests.fixtures import stack_config, stack_plan

STACKS = ("dev", "prod")
DASHBOARD = "gcp:monitoring/dashboard:Dashboard"
ALERT = "gcp:monitoring/alertPolicy:AlertPolicy"
POD_MONITORING = "kubernetes:monitoring.googleapis.com/v1:PodMonitoring"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


@pytest.fixture(scope="module")
def plans() -> dict[str, Plan]:
    return {stack: stack_plan(stack, render_charts=False) for stack in STACKS}


def config_of(stack: str) -> Any:

    return stack_config(stack)


def dashboard_of(plan: Plan) -> dict[str, Any]:
    (dashboard,) = plan.by_type(DASHBOARD)
    data: dict[str, Any] = json.loads(dashboard["inputs"]["dashboardJson"])
    return data


def titles(plan: Plan) -> list[str]:
    return [tile["widget"]["title"] for tile in dashboard_of(plan)["mosaicLayout"]["tiles"]]


@pytest.mark.parametrize("stack", STACKS)
def test_one_dashboard_names_every_pool_group_and_cluster_queue(plans: dict[str, Plan], stack: str) -> None:
    config = config_of(stack)
    expected_pools = {pool.name for pool in config.tpu_pools}
    expected_queues = {ref.cluster_queue for ref in queue_refs(config.queues).values()}
    shown = titles(plans[stack])
    for name in expected_pools:
        # a row header, duty cycle, TensorCore, HBM bandwidth and node count
        assert sum(f"pool {name} " in t or t == f"TPU pool group {name}" for t in shown) == 5, name
    for name in expected_queues:
        assert sum(t.endswith(f", {name}") or t == f"ClusterQueue {name}" for t in shown) == 4, name


def test_dev_and_prod_dashboards_cover_their_own_names() -> None:
    """Written out from the stack files, independently of the config model."""
    dev = {"flex-v6e", "multislice", "research-cluster-queue", "training-cluster-queue"}
    prod = {"train", "burst", "serve", "training-cluster-queue", "research-cluster-queue"}
    for stack, names in (("dev", dev), ("prod", prod)):
        text = " ".join(titles(stack_plan(stack, render_charts=False)))
        assert all(name in text for name in names), stack


# ---- the dashboard as the Monitoring API returns it, and the provider's comparison ---------------------------------
# What the provider keeps after a create or refresh is the API's GET response (resourceMonitoringDashboardRead). The
# API writes proto3 JSON: scalars at their default (0, "", false) and empty lists are left out; it also adds fields
# the program never sent (name, etag, and defaults such as a data set's targetAxis, seen in
# hashicorp/terraform-provider-google#7242). The provider's diff (monitoringDashboardDiffSuppress) first removes
# from the read-back every key the program does not send (removeComputedKeys), then compares for equality.
SERVER_ADDED_DATASET = {"targetAxis": "Y1", "minAlignmentPeriod": "60s"}


def api_read_back(sent: Any) -> Any:
    """The GET response for what was sent: proto3 JSON of the stored dashboard, plus fields the server fills in."""

    def proto3(value: Any) -> Any:
        if isinstance(value, dict):
            kept = {key: proto3(item) for key, item in value.items()}
            return {key: item for key, item in kept.items() if item not in (0, "", [], False)}
        return [proto3(item) for item in value] if isinstance(value, list) else value

    def server_fields(value: Any) -> Any:
        if isinstance(value, dict):
            out = {key: server_fields(item) for key, item in value.items()}
            if "timeSeriesQuery" in out:
                out.update(SERVER_ADDED_DATASET)
            if "dataSets" in out:
                out["chartOptions"] = {"mode": "COLOR"}
            return out
        return [server_fields(item) for item in value] if isinstance(value, list) else value

    return {**server_fields(proto3(sent)), "name": "projects/p/dashboards/d", "etag": "e"}


def remove_computed_keys(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The provider's removeComputedKeys: drop from the read-back what the program does not send, at every depth."""
    for key in list(old):
        if new.get(key) is None:
            del old[key]
        elif isinstance(old[key], dict):
            old[key] = remove_computed_keys(old[key], new[key])
        elif isinstance(old[key], list):
            for index, item in enumerate(old[key]):
                if isinstance(item, dict) and len(new[key]) > index:
                    old[key][index] = remove_computed_keys(item, new[key][index])
    return old


def shows_no_change(sent: dict[str, Any]) -> bool:
    """monitoringDashboardDiffSuppress on the next preview: True when the update is suppressed."""
    return remove_computed_keys(json.loads(json.dumps(api_read_back(sent))), sent) == sent


def test_the_comparison_sees_a_zero_position_and_an_empty_list() -> None:
    """The model is not vacuous: the fields the first dashboards sent did change on every update."""
    tile = {"xPos": 0, "yPos": 4, "width": 12, "height": 16, "widget": {"title": "t", "text": {"content": "t"}}}
    assert not shows_no_change({"displayName": "d", "mosaicLayout": {"columns": 48, "tiles": [tile]}})
    aggregation = {"alignmentPeriod": "60s", "groupByFields": []}
    query = {"timeSeriesFilter": {"filter": "f", "aggregation": aggregation}}
    widget = {"title": "t", "xyChart": {"dataSets": [{"timeSeriesQuery": query, "plotType": "LINE"}]}}
    tile = {"xPos": 12, "yPos": 4, "width": 12, "height": 16, "widget": widget}
    assert not shows_no_change({"displayName": "d", "mosaicLayout": {"columns": 48, "tiles": [tile]}})


@pytest.mark.parametrize("stack", STACKS)
def test_the_dashboard_reads_back_unchanged(plans: dict[str, Plan], stack: str) -> None:
    """Sent in the API's own form, the dashboard equals its read-back: no update on the next `pulumi up`."""
    sent = dashboard_of(plans[stack])
    assert shows_no_change(sent)


def test_dev_first_row_is_written_without_zero_positions_or_empty_group_by() -> None:
    """Written out by hand from Pulumi.dev.yaml: flex-v6e is ct6e-standard-4t (2x2, tpu-v6e-slice) on tpu-dev."""
    tiles = dashboard_of(stack_plan("dev", render_charts=False))["mosaicLayout"]["tiles"]
    title = "TPU pool group flex-v6e"
    assert tiles[0] == {
        "width": 48,
        "height": 4,
        "widget": {"title": title, "text": {"content": title, "format": "MARKDOWN"}},
    }
    duty_cycle = (
        'metric.type="kubernetes.io/container/accelerator/duty_cycle" resource.type="k8s_container" '
        'resource.label."cluster_name"="tpu-dev" metric.label."model"="tpu-v6e-slice" metric.label."tpu_topology"="2x2"'
    )
    assert tiles[1] == {
        "yPos": 4,
        "width": 12,
        "height": 16,
        "widget": {
            "title": "TPU duty cycle, pool flex-v6e (tpu-v6e-slice 2x2)",
            "xyChart": {
                "dataSets": [
                    {
                        "plotType": "LINE",
                        "timeSeriesQuery": {
                            "timeSeriesFilter": {
                                "filter": duty_cycle,
                                "aggregation": {
                                    "alignmentPeriod": "60s",
                                    "perSeriesAligner": "ALIGN_MEAN",
                                    "crossSeriesReducer": "REDUCE_MEAN",
                                },
                            }
                        },
                    }
                ]
            },
        },
    }
    assert tiles[2]["xPos"] == 12 and tiles[2]["yPos"] == 4


@pytest.mark.parametrize("stack", STACKS)
def test_dashboard_uses_the_real_metric_names_and_passes_its_schema(plans: dict[str, Plan], stack: str) -> None:
    (dashboard,) = plans[stack].by_type(DASHBOARD)
    text = dashboard["inputs"]["dashboardJson"]
    assert validate.validate_dashboard(text) == []
    for metric in (
        "kubernetes.io/container/accelerator/duty_cycle",
        "kubernetes.io/node/accelerator/tensorcore_utilization",
        "kubernetes.io/node/accelerator/memory_bandwidth_utilization",
        "kueue_pending_workloads",
        "kueue_admitted_active_workloads",
        "kueue_cluster_queue_resource_usage",
        "kueue_cluster_queue_nominal_quota",
    ):
        assert metric in text


def test_prod_pool_rows_filter_on_the_pools_accelerator_and_topology(plans: dict[str, Plan]) -> None:
    text = json.dumps(dashboard_of(plans["prod"]))
    # serve: v5e 4x8, burst: v5e 4x4 (Pulumi.prod.yaml)
    assert 'metric.label.\\"model\\"=\\"tpu-v5-lite-podslice\\" metric.label.\\"tpu_topology\\"=\\"4x8\\"' in text
    assert 'metric.label.\\"tpu_topology\\"=\\"4x4\\"' in text
    assert 'resource.label.\\"cluster_name\\"=\\"tpu-prod\\"' in text


def test_alert_policies_per_queue_idle_tpus_and_queued_provisioning(plans: dict[str, Plan]) -> None:
    names = {r["name"] for r in plans["prod"].by_type(ALERT)}
    assert names == {
        "monitoring-pending-training-cluster-queue",
        "monitoring-pending-research-cluster-queue",
        "monitoring-tpu-idle-while-waiting",
        "monitoring-queued-provisioning-not-granted",  # prod's burst pool is queued
        "monitoring-pods-not-starting",  # admitted workloads whose pods stay Pending
    }
    dev = {r["name"] for r in plans["dev"].by_type(ALERT)}
    assert "monitoring-queued-provisioning-not-granted" not in dev  # dev has no queued pool
    pending = plans["prod"].one(ALERT, "monitoring-pending-research-cluster-queue")["inputs"]
    (condition,) = pending["conditions"]
    query = condition["conditionPrometheusQueryLanguage"]
    assert query["query"] == 'sum(kueue_pending_workloads{cluster_queue="research-cluster-queue"}) > 0'
    assert query["duration"] == "1800s"  # 30 minutes by default
    assert pending["notificationChannels"] == [PROD_CHANNEL]
    dev_pending = plans["dev"].one(ALERT, "monitoring-pending-research-cluster-queue")["inputs"]
    assert dev_pending.get("notificationChannels", []) == []  # dev names none


@pytest.mark.parametrize("stack", STACKS)
def test_conditions_over_kueue_series_skip_metric_validation(plans: dict[str, Plan], stack: str) -> None:
    """Kueue's series and GKE's kube state series exist only after the first scrape; with validation on, a new
    project refuses the policy."""
    alerts = plans[stack].by_type(ALERT)
    assert alerts
    for alert in alerts:
        (condition,) = alert["inputs"]["conditions"]
        promql = condition["conditionPrometheusQueryLanguage"]
        # every alert of the stack waits on a scraped series
        assert "kueue_" in promql["query"] or "kube_pod_status_phase" in promql["query"], alert["name"]
        assert promql["disableMetricValidation"] is True, alert["name"]
    if stack == "prod":
        pending = plans[stack].one(ALERT, "monitoring-pending-training-cluster-queue")["inputs"]
        assert pending["conditions"][0]["conditionPrometheusQueryLanguage"] == {
            "query": 'sum(kueue_pending_workloads{cluster_queue="training-cluster-queue"}) > 0',
            "duration": "1800s",
            "evaluationInterval": "60s",
            "disableMetricValidation": True,
        }


def test_only_kueue_series_need_validation_off() -> None:
    """A system metric exists in every project: a condition over it alone keeps validation."""
    from components.monitoring import reads_scraped_series

    assert reads_scraped_series("sum(kueue_admitted_active_workloads) > 0")
    assert reads_scraped_series('max by (namespace, pod) (kube_pod_status_phase{phase="Pending"}) > 0')
    assert not reads_scraped_series('max(kubernetes_io:node_accelerator_tensorcore_utilization{cluster_name="c"}) < 1')


def test_notification_channels_and_thresholds_come_from_config(run: Any) -> None:
    channel = "projects/proj/notificationChannels/123"
    plan = run(
        {
            "gcp:region": "us-east5",  # Trillium on flex-start (vendor/data/tpu_zones.json)
            "tpu-stack:tpuPools": [{"name": "v6e", "machineType": "ct6e-standard-4t", "provisioning": "flex-start"}],
            "tpu-stack:monitoring": {"notificationChannels": [channel], "pendingMinutes": 5},
        }
    )
    alerts = plan.by_type(ALERT)
    assert alerts and all(a["inputs"]["notificationChannels"] == [channel] for a in alerts)
    pending = plan.one(ALERT, "monitoring-pending-cluster-queue")["inputs"]
    assert pending["conditions"][0]["conditionPrometheusQueryLanguage"]["duration"] == "300s"


@pytest.mark.parametrize("stack", STACKS)
def test_both_controllers_are_scraped_over_https_with_a_token(plans: dict[str, Plan], stack: str) -> None:
    monitorings = {r["inputs"]["metadata"]["namespace"]: r["inputs"] for r in plans[stack].by_type(POD_MONITORING)}
    assert set(monitorings) == {"kueue-system", "jobset-system"}
    for monitoring in monitorings.values():
        (endpoint,) = monitoring["spec"]["endpoints"]
        assert endpoint["port"] == 8443 and endpoint["scheme"] == "https"  # the charts' `metrics` container port
        assert endpoint["authorization"]["credentials"]["secret"]["name"] == "gmp-metrics-reader-token"
        assert validate.validate_object(monitoring) == []
    assert monitorings["kueue-system"]["spec"]["selector"]["matchLabels"]["control-plane"] == "controller-manager"
    bindings = [r["inputs"] for r in plans[stack].resources if r["type"].endswith(":ClusterRoleBinding")]
    assert {b["roleRef"]["name"] for b in bindings} >= {"kueue-metrics-reader", "jobset-metrics-reader"}


@pytest.mark.parametrize("stack", STACKS)
def test_controller_namespaces_admit_only_the_collectors_on_the_metrics_port(
    plans: dict[str, Plan], stack: str
) -> None:
    scrape = [r["inputs"] for r in plans[stack].by_type(NETWORK_POLICY) if r["name"].endswith("allow-metrics-scrape")]
    assert {p["metadata"]["namespace"] for p in scrape} == {"kueue-system", "jobset-system"}
    for policy in scrape:
        (rule,) = policy["spec"]["ingress"]
        assert rule["ports"] == [{"protocol": "TCP", "port": 8443}]
        assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gmp-system"}}}]


@pytest.mark.parametrize("stack", STACKS)
def test_outputs_give_the_dashboard_url(plans: dict[str, Plan], stack: str) -> None:
    url = plans[stack].outputs["dashboardUrl"]
    assert url.startswith("https://console.cloud.google.com/monitoring/dashboards/custom/")
    assert url.endswith(f"?project=tpu-stack-{stack}")


def test_kueue_reports_quota_per_cluster_queue(plans: dict[str, Plan]) -> None:
    """kueue_cluster_queue_resource_usage and _nominal_quota exist only with enableClusterQueueResources."""
    chart = plans["dev"].one("kubernetes:helm.sh/v4:Chart", "kueue-chart")
    config = chart["inputs"]["values"]["managerConfig"]["controllerManagerConfigYaml"]
    assert "enableClusterQueueResources: true" in config


PROD_CHANNEL = "projects/tpu-stack-prod/notificationChannels/4518223379601234567"
"""The channel prod's fixture names (tests/fixtures/stacks/Pulumi.prod.yaml)."""


def test_a_protected_stack_whose_alerts_would_notify_nobody_is_refused() -> None:
    """Issue 27, defect 11: prod's alert policies notified nobody (notificationChannels defaulted to none), so an
    incident in a protected stack showed in Cloud Monitoring only. A protected stack must name a channel."""
    data = {"gcp:project": "proj-1234", "gcp:region": "us-central1"}
    with pytest.raises(ConfigError) as error:
        load(data, stack="prod")
    assert error.value.lines == [
        "tpu-stack:monitoring.notificationChannels: prod is a protected stack and its alert policies would notify "
        "nobody; list the channels to notify, projects/<project>/notificationChannels/<id> (gcloud beta monitoring "
        "channels list; create one with gcloud beta monitoring channels create)"
    ]
    channel = {"tpu-stack:monitoring": {"notificationChannels": ["projects/proj-1234/notificationChannels/1"]}}
    assert load({**data, **channel}, stack="prod").monitoring.notification_channels
    assert load(data, stack="dev").monitoring.notification_channels == ()  # other stacks may leave them out


def test_every_alert_of_prod_notifies_its_channel(plans: dict[str, Plan]) -> None:
    alerts = plans["prod"].by_type(ALERT)
    assert alerts and all(a["inputs"]["notificationChannels"] == [PROD_CHANNEL] for a in alerts)
