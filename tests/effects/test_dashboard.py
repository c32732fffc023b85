"""dev's dashboard compared whole to one written by hand, and its PromQL charts evaluated by promtool on synthetic
Kueue series: each queue's charts show that queue only, pending workloads split by status, TPU quota by flavor.

A chart is its query: another aggregation, filter or group-by shows another number under the same title.
Cloud Monitoring's API form leaves out fields at their default (0, empty lists), so the first row's xPos and
the first tiles' yPos are absent (test_monitoring.py checks the read-back)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from offline.engine import Plan
from tests.effects import promtool

CLUSTER = 'resource.label."cluster_name"="tpu-dev"'


def position(x: int, y: int) -> dict[str, int]:
    return {**({"xPos": x} if x else {}), **({"yPos": y} if y else {})}


def header(y: int, title: str) -> dict[str, Any]:
    widget = {"title": title, "text": {"content": title, "format": "MARKDOWN"}}
    return {**position(0, y), "width": 48, "height": 4, "widget": widget}


def chart(x: int, y: int, title: str, *data_sets: dict[str, Any]) -> dict[str, Any]:
    return {
        **position(x, y),
        "width": 12,
        "height": 16,
        "widget": {"title": title, "xyChart": {"dataSets": list(data_sets)}},
    }


def tpu_series(
    metric: str, resource: str, pool: tuple[str, str], *, per_node: bool, count: bool = False
) -> dict[str, Any]:
    model, topology = pool
    aggregation: dict[str, Any] = {
        "alignmentPeriod": "60s",
        "perSeriesAligner": "ALIGN_MEAN",
        "crossSeriesReducer": "REDUCE_MEAN",
    }
    if per_node:
        aggregation["groupByFields"] = ["resource.label.node_name"]
    query: dict[str, Any] = {
        "filter": f'metric.type="kubernetes.io/{metric}" resource.type="{resource}" {CLUSTER} '
        f'metric.label."model"="{model}" metric.label."tpu_topology"="{topology}"',
        "aggregation": aggregation,
    }
    if count:
        query["secondaryAggregation"] = {
            "alignmentPeriod": "60s",
            "perSeriesAligner": "ALIGN_MEAN",
            "crossSeriesReducer": "REDUCE_COUNT",
        }
    return {"timeSeriesQuery": {"timeSeriesFilter": query}, "plotType": "STACKED_AREA" if count else "LINE"}


def promql(query: str) -> dict[str, Any]:
    return {"timeSeriesQuery": {"prometheusQuery": query}, "plotType": "LINE"}


def pool_row(y: int, name: str, pool: tuple[str, str], nodes: int) -> list[dict[str, Any]]:
    where = f"pool {name} ({pool[0]} {pool[1]})"
    return [
        header(y, f"TPU pool group {name}"),
        chart(
            0,
            y + 4,
            f"TPU duty cycle, {where}",
            tpu_series("container/accelerator/duty_cycle", "k8s_container", pool, per_node=False),
        ),
        chart(
            12,
            y + 4,
            f"TensorCore utilization, {where}",
            tpu_series("node/accelerator/tensorcore_utilization", "k8s_node", pool, per_node=True),
        ),
        chart(
            24,
            y + 4,
            f"HBM bandwidth utilization, {where}",
            tpu_series("node/accelerator/memory_bandwidth_utilization", "k8s_node", pool, per_node=True),
        ),
        chart(
            36,
            y + 4,
            f"Nodes, {where}: {nodes} at full size",
            tpu_series("node/accelerator/tensorcore_utilization", "k8s_node", pool, per_node=True, count=True),
        ),
    ]


def queue_row(y: int, queue: str) -> list[dict[str, Any]]:
    tpu = f'cluster_queue="{queue}",resource="google.com/tpu"'
    return [
        header(y, f"ClusterQueue {queue}"),
        chart(
            0,
            y + 4,
            f"Pending workloads, {queue}",
            promql(f'sum by (status) (kueue_pending_workloads{{cluster_queue="{queue}"}})'),
        ),
        chart(
            12,
            y + 4,
            f"Admitted workloads, {queue}",
            promql(f'sum(kueue_admitted_active_workloads{{cluster_queue="{queue}"}})'),
        ),
        chart(
            24,
            y + 4,
            f"TPU quota usage, {queue}",
            promql(f"sum by (flavor) (kueue_cluster_queue_resource_usage{{{tpu}}})"),
            promql(f"sum by (flavor) (kueue_cluster_queue_nominal_quota{{{tpu}}})"),
        ),
    ]


# Pulumi.dev.yaml: flex-v6e is one ct6e-standard-4t 2x2 slice (one VM); multislice three v6e 2x4 slices of two VMs;
# multislice-spot one v6e 2x4 slice (two VMs), the first rung of the multislice ladder.
DEV_DASHBOARD = {
    "displayName": "tpu-stack dev: TPU fleet and queues (tpu-dev)",
    "mosaicLayout": {
        "columns": 48,
        "tiles": [
            *pool_row(0, "flex-v6e", ("tpu-v6e-slice", "2x2"), 1),
            *pool_row(20, "multislice", ("tpu-v6e-slice", "2x4"), 6),
            *pool_row(40, "multislice-spot", ("tpu-v6e-slice", "2x4"), 2),
            *queue_row(60, "research-cluster-queue"),
            *queue_row(80, "training-cluster-queue"),
        ],
    },
}


def dashboard(plan: Plan) -> dict[str, Any]:
    (resource,) = plan.by_type("gcp:monitoring/dashboard:Dashboard")
    assert resource["inputs"]["project"] == f"tpu-stack-{plan.stack}"
    data: dict[str, Any] = json.loads(resource["inputs"]["dashboardJson"])
    return data


def test_the_dev_dashboard_whole(plans: dict[str, Plan]) -> None:
    assert dashboard(plans["dev"]) == DEV_DASHBOARD


RESEARCH = 'cluster_queue="research-cluster-queue"'
TRAINING = 'cluster_queue="training-cluster-queue"'
TPU = 'resource="google.com/tpu"'
SERIES = {
    f'kueue_pending_workloads{{{RESEARCH},status="active"}}': "2",
    f'kueue_pending_workloads{{{RESEARCH},status="inadmissible"}}': "1",
    f'kueue_pending_workloads{{{TRAINING},status="active"}}': "5",
    f"kueue_admitted_active_workloads{{{RESEARCH}}}": "3",
    f"kueue_admitted_active_workloads{{{TRAINING}}}": "7",
    f'kueue_cluster_queue_resource_usage{{{RESEARCH},flavor="flex-v6e",{TPU}}}': "4",
    f'kueue_cluster_queue_resource_usage{{{RESEARCH},flavor="multislice",{TPU}}}': "8",
    f'kueue_cluster_queue_resource_usage{{{RESEARCH},flavor="multislice",resource="cpu"}}': "96",
    f'kueue_cluster_queue_resource_usage{{{TRAINING},flavor="multislice",{TPU}}}': "16",
    f'kueue_cluster_queue_nominal_quota{{{RESEARCH},flavor="flex-v6e",{TPU}}}': "4",
    f'kueue_cluster_queue_nominal_quota{{{RESEARCH},flavor="multislice",{TPU}}}': "8",
}
"""Kueue's gauges as Managed Prometheus stores them, for both queues, with a CPU usage series the TPU chart skips."""
RESEARCH_CHARTS: dict[str, list[list[tuple[str | None, str | None, int]]]] = {
    "Pending workloads, research-cluster-queue": [[("status", "active", 2), ("status", "inadmissible", 1)]],
    "Admitted workloads, research-cluster-queue": [[(None, None, 3)]],
    "TPU quota usage, research-cluster-queue": [
        [("flavor", "flex-v6e", 4), ("flavor", "multislice", 8)],
        [("flavor", "flex-v6e", 4), ("flavor", "multislice", 8)],
    ],
}
"""What each research chart must plot at that moment, written by hand: (label, value, sample) per line."""


def test_each_queue_chart_plots_its_queue_only(plans: dict[str, Plan]) -> None:
    tiles = {tile["widget"]["title"]: tile for tile in dashboard(plans["dev"])["mosaicLayout"]["tiles"]}
    tests = []
    for title, lines in RESEARCH_CHARTS.items():
        data_sets = tiles[title]["widget"]["xyChart"]["dataSets"]
        assert len(data_sets) == len(lines), title
        for data_set, samples in zip(data_sets, lines, strict=True):
            expected = [{"labels": "{" + (f'{k}="{v}"' if k else "") + "}", "value": n} for k, v, n in samples]
            tests.append(
                {"expr": data_set["timeSeriesQuery"]["prometheusQuery"], "eval_time": "1m", "exp_samples": expected}
            )
    unit = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": f"{v}x2"} for s, v in SERIES.items()],
                "promql_expr_test": tests,
            }
        ],
    }
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "charts.yaml"
        path.write_text(yaml.safe_dump(unit, sort_keys=False))
        done = subprocess.run(
            [str(promtool.binary()), "test", "rules", path.name],
            cwd=scratch,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stdout


def test_the_dashboard_belongs_to_monitoring_and_its_url_opens_it(plans: dict[str, Plan]) -> None:
    plan = plans["prod"]
    (resource,) = plan.by_type("gcp:monitoring/dashboard:Dashboard")
    assert (
        resource["parent"] == "urn:pulumi:prod::tpu-stack::pulumi:pulumi:Stack$tpu-stack:index:Monitoring::monitoring"
    )
    assert resource["protect"] is True
    # The console URL takes the dashboard's own id, the last part of the name the API gives it.
    assert plan.outputs["dashboardUrl"] == (
        "https://console.cloud.google.com/monitoring/dashboards/custom/monitoring-dashboard-id?project=tpu-stack-prod"
    )


def test_the_api_form_leaves_out_every_default() -> None:
    """proto3 JSON: false, 0, "", empty lists and objects, and null are left out at every depth; true stays."""
    from components.monitoring import proto3_json

    sent = {"a": False, "b": True, "c": None, "d": 0, "e": [], "f": {"g": "", "h": 1.5}, "i": [{"j": 0}, "k"]}
    assert proto3_json(sent) == {"b": True, "f": {"h": 1.5}, "i": [{}, "k"]}
