"""Monitoring: one Cloud Monitoring dashboard of the stack's TPU fleet and queues, and the alerts on them.

Everything is derived from the config: a row of TPU charts per pool group (duty cycle, TensorCore and HBM
bandwidth utilization, nodes over time) and a row per ClusterQueue (pending and admitted workloads, TPU quota
usage against nominal quota). TPU series are GKE system metrics (`kubernetes.io/...`) filtered by the
cluster and the group's accelerator and topology; Kueue series are the controller's Prometheus metrics, which
Managed Service for Prometheus stores as `prometheus.googleapis.com/<name>/gauge` and PromQL reads by name.
Those series exist only after the collectors first scrape the controller, and Cloud Monitoring refuses an alert
condition over a metric that does not exist unless its metric validation is off, so conditions over Kueue's
series turn it off (the system metrics they read exist in every project, and stay validated).
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pulumi_gcp import monitoring

from components import tpu_catalog
from components.config.pools import TpuPoolConfig
from components.config.queues import queue_refs
from components.config.stack import StackConfig

DUTY_CYCLE = "kubernetes.io/container/accelerator/duty_cycle"
TENSORCORE = "kubernetes.io/node/accelerator/tensorcore_utilization"
HBM_BANDWIDTH = "kubernetes.io/node/accelerator/memory_bandwidth_utilization"
PENDING = "kueue_pending_workloads"
ADMITTED = "kueue_admitted_active_workloads"
RESERVING = "kueue_reserving_active_workloads"
USAGE = "kueue_cluster_queue_resource_usage"
QUOTA = "kueue_cluster_queue_nominal_quota"
POD_PHASE = "kube_pod_status_phase"
"""GKE's kube state metrics (package on by default from GKE 1.29.2-gke.2000 Standard, 1.27.4-gke.900 Autopilot):
1 for a pod's current phase, with `namespace`, `pod`, `phase`, `uid` (cloud.google.com/kubernetes-engine/docs/how-to/
kube-state-metrics, Pod metrics)."""
SCRAPED_SERIES = ("kueue_", "kube_")
"""Prefixes of the series Managed Prometheus scrapes (Kueue's controller, GKE's kube state metrics): they exist only
once scraped."""
COLUMNS = 48
"""Width of a mosaic layout."""
_WIDTH = 12
_HEIGHT = 16
_HEADER = 4


def _filter(config: StackConfig, metric: str, pool: TpuPoolConfig) -> str:
    resource = "k8s_container" if "/container/" in metric else "k8s_node"
    return (
        f'metric.type="{metric}" resource.type="{resource}" '
        f'resource.label."cluster_name"="{config.cluster.name}" '
        f'metric.label."model"="{pool.machine.version.accelerator}" '
        f'metric.label."tpu_topology"="{pool.slice_topology}"'
    )


def _series(filter_: str, *, group_by: list[str], count_nodes: bool = False) -> dict[str, Any]:
    query: dict[str, Any] = {
        "timeSeriesFilter": {
            "filter": filter_,
            "aggregation": {
                "alignmentPeriod": "60s",
                "perSeriesAligner": "ALIGN_MEAN",
                "crossSeriesReducer": "REDUCE_MEAN",
                "groupByFields": group_by,
            },
        }
    }
    if count_nodes:
        query["timeSeriesFilter"]["secondaryAggregation"] = {
            "alignmentPeriod": "60s",
            "perSeriesAligner": "ALIGN_MEAN",
            "crossSeriesReducer": "REDUCE_COUNT",
        }
    return query


def _chart(title: str, queries: list[dict[str, Any]], kind: str = "LINE") -> dict[str, Any]:
    return {
        "title": title,
        "xyChart": {"dataSets": [{"timeSeriesQuery": q, "plotType": kind} for q in queries]},
    }


def _promql(query: str) -> dict[str, Any]:
    return {"prometheusQuery": query}


def pool_widgets(config: StackConfig, pool: TpuPoolConfig) -> list[dict[str, Any]]:
    """TPU duty cycle, TensorCore and HBM bandwidth utilization, nodes over time of one pool group."""
    where = f"pool {pool.name} ({pool.machine.version.accelerator} {pool.slice_topology})"
    return [
        _chart(f"TPU duty cycle, {where}", [_series(_filter(config, DUTY_CYCLE, pool), group_by=[])]),
        _chart(
            f"TensorCore utilization, {where}",
            [_series(_filter(config, TENSORCORE, pool), group_by=["resource.label.node_name"])],
        ),
        _chart(
            f"HBM bandwidth utilization, {where}",
            [_series(_filter(config, HBM_BANDWIDTH, pool), group_by=["resource.label.node_name"])],
        ),
        _chart(
            f"Nodes, {where}: {pool.total_vms} at full size",
            [_series(_filter(config, TENSORCORE, pool), group_by=["resource.label.node_name"], count_nodes=True)],
            kind="STACKED_AREA",
        ),
    ]


def queue_widgets(cluster_queue: str, cluster: str | None = None) -> list[dict[str, Any]]:
    """Pending and admitted workloads and TPU quota use of one ClusterQueue (of `cluster` only, when given)."""
    selector = _kueue_selector(cluster, f'cluster_queue="{cluster_queue}"')
    tpu = f'{selector},resource="{tpu_catalog.TPU_RESOURCE}"'
    return [
        _chart(f"Pending workloads, {cluster_queue}", [_promql(f"sum by (status) ({PENDING}{{{selector}}})")]),
        _chart(f"Admitted workloads, {cluster_queue}", [_promql(f"sum({ADMITTED}{{{selector}}})")]),
        _chart(
            f"TPU quota usage, {cluster_queue}",
            [
                _promql(f"sum by (flavor) ({USAGE}{{{tpu}}})"),
                _promql(f"sum by (flavor) ({QUOTA}{{{tpu}}})"),
            ],
        ),
    ]


def _row(y: int, title: str, widgets: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    tiles = [
        {
            "xPos": 0,
            "yPos": y,
            "width": COLUMNS,
            "height": _HEADER,
            "widget": {"title": title, "text": {"content": title, "format": "MARKDOWN"}},
        }
    ]
    tiles += [
        {"xPos": i * _WIDTH, "yPos": y + _HEADER, "width": _WIDTH, "height": _HEIGHT, "widget": widget}
        for i, widget in enumerate(widgets)
    ]
    return tiles, y + _HEADER + _HEIGHT


def cluster_queues(config: StackConfig) -> list[str]:
    """The ClusterQueues of the cluster: over its own pool groups, or a MultiKueue manager's over its workers'."""
    has_queues = config.queue_pools or config.is_manager
    return sorted({ref.cluster_queue for ref in queue_refs(config.queues).values()}) if has_queues else []


def _kueue_selector(cluster: str | None, *matchers: str) -> str:
    """A series selector's matchers; in a stack of several clusters (MultiKueue), the collectors' `cluster` label
    tells their Kueue series apart (the manager's and the workers' queues have the same names)."""
    return ",".join([*matchers, *([f'cluster="{cluster}"'] if cluster else [])])


def proto3_json(value: Any) -> Any:
    """`value` as the Monitoring API returns it: proto3 JSON leaves out every field at its default (0, "", false,
    empty lists and objects). The provider ignores only fields the program leaves out, so a dashboard sent with
    `xPos: 0` or `groupByFields: []` never equals what it reads back, and every `pulumi up` would update it."""
    if isinstance(value, dict):
        fields = {key: proto3_json(item) for key, item in value.items()}
        return {key: item for key, item in fields.items() if not _is_default(item)}
    if isinstance(value, list):
        return [proto3_json(item) for item in value]
    return value


def _is_default(value: Any) -> bool:
    if isinstance(value, bool):
        return value is False
    if isinstance(value, int | float | str | list | dict):
        return not value
    return value is None


def dashboard(config: StackConfig, *, cluster_scoped: bool = False) -> dict[str, Any]:
    """The dashboard in the API's own form (proto3_json): one row per TPU pool group, then one per ClusterQueue.
    `cluster_scoped`: one of several clusters in the project (MultiKueue), whose Kueue series it selects."""
    cluster = config.cluster.name if cluster_scoped else None
    tiles: list[dict[str, Any]] = []
    y = 0
    for pool in config.tpu_pools:
        row, y = _row(y, f"TPU pool group {pool.name}", pool_widgets(config, pool))
        tiles += row
    for cluster_queue in cluster_queues(config):
        row, y = _row(y, f"ClusterQueue {cluster_queue}", queue_widgets(cluster_queue, cluster))
        tiles += row
    layout: dict[str, Any] = proto3_json(
        {
            "displayName": f"tpu-stack {config.stack}: TPU fleet and queues ({config.cluster.name})",
            "mosaicLayout": {"columns": COLUMNS, "tiles": tiles},
        }
    )
    return layout


def alert_queries(
    config: StackConfig, *, cluster_scoped: bool = False, pending_alerts: bool = True
) -> dict[str, tuple[str, int]]:
    """Alert name -> (PromQL condition, minutes it must hold); `cluster_scoped` as for the dashboard. Without
    `pending_alerts` (a MultiKueue worker, whose pending copies the manager's alerts already count) no alert per
    ClusterQueue."""
    settings = config.monitoring
    cluster = config.cluster.name if cluster_scoped else None
    alerts = {}
    for cq in cluster_queues(config) if pending_alerts else []:
        selector = _kueue_selector(cluster, f'cluster_queue="{cq}"')
        alerts[f"pending-{cq}"] = (f"sum({PENDING}{{{selector}}}) > 0", settings.pending_minutes)
    scope = f"{{{_kueue_selector(cluster)}}}" if cluster else ""
    if config.tpu_pools and cluster_queues(config):
        tensorcore = "kubernetes_io:node_accelerator_tensorcore_utilization"
        alerts["tpu-idle-while-waiting"] = (
            f'(max({tensorcore}{{monitored_resource="k8s_node",cluster_name="{config.cluster.name}"}}) < 1)'
            f" and on() (sum({PENDING}{scope}) > 0)",
            settings.idle_minutes,
        )
    if config.is_manager and alerts:
        # Quota reserved on the manager but not admitted: no worker has admitted the workload (no capacity in any
        # region, or a worker that cannot be reached or refuses the copies). Waiting for quota is pending-*.
        alerts["waiting-for-a-worker"] = (
            f"sum by (cluster_queue) ({RESERVING}{scope}) - sum by (cluster_queue) ({ADMITTED}{scope}) > 0",
            settings.provisioning_minutes,
        )
    namespaces = sorted({ref.namespace for ref in queue_refs(config.queues).values()})
    if config.queue_pools and not config.is_manager:
        # Pods of a team's namespace: a queue-labelled job is created suspended and gets pods only once Kueue admits
        # it, so a Pending pod there is an admitted workload that does not start (no node for it, an image that does
        # not pull, a container that cannot be created). One series per pod: a new pod after an eviction starts over.
        pods = _kueue_selector(cluster, f'phase="Pending",namespace=~"{"|".join(namespaces)}"')
        alerts["pods-not-starting"] = (
            f"max by (namespace, pod) ({POD_PHASE}{{{pods}}}) > 0",
            settings.not_starting_minutes,
        )
    if any(pool.provisioning == "queued" for pool in config.queue_pools):
        # Quota reserved but not admitted: the workload waits on its admission check, the ProvisioningRequest.
        alerts["queued-provisioning-not-granted"] = (
            f"sum by (cluster_queue) ({RESERVING}{scope}) - sum by (cluster_queue) ({ADMITTED}{scope}) > 0",
            settings.provisioning_minutes,
        )
    return alerts


def reads_scraped_series(query: str) -> bool:
    """True if the PromQL reads a Kueue or kube state series, which exists only once Managed Prometheus scraped it."""
    return any(prefix in query for prefix in SCRAPED_SERIES)


class Monitoring(pulumi.ComponentResource):
    """The dashboard and alert policies; `url` opens the dashboard in the console."""

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        cluster_scoped: bool = False,
        pending_alerts: bool = True,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:Monitoring", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.dashboard: monitoring.Dashboard = monitoring.Dashboard(
            f"{name}-dashboard",
            project=config.project,
            dashboard_json=json.dumps(dashboard(config, cluster_scoped=cluster_scoped), sort_keys=True),
            opts=child,
        )
        project = config.project
        self.url: pulumi.Output[str] = self.dashboard.id.apply(
            lambda dashboard_id: (
                "https://console.cloud.google.com/monitoring/dashboards/custom/"
                f"{dashboard_id.rsplit('/', 1)[-1]}?project={project}"
            )
        )
        channels = list(config.monitoring.notification_channels)
        suffix = f" ({config.cluster.name})" if cluster_scoped else ""
        queries = alert_queries(config, cluster_scoped=cluster_scoped, pending_alerts=pending_alerts)
        self.alerts: list[monitoring.AlertPolicy] = [
            monitoring.AlertPolicy(
                f"{name}-{alert}",
                project=config.project,
                display_name=f"tpu-stack {config.stack}: {alert}{suffix}",
                combiner="OR",
                conditions=[
                    {
                        "display_name": alert,
                        "condition_prometheus_query_language": {
                            "query": query,
                            "duration": f"{minutes * 60}s",
                            "evaluation_interval": "60s",
                            "disable_metric_validation": reads_scraped_series(query),
                        },
                    }
                ],
                notification_channels=channels,
                user_labels=config.resource_labels,
                opts=child,
            )
            for alert, (query, minutes) in queries.items()
        ]
        self.register_outputs({"url": self.url})
