"""The dashboard JSON is checked against the repo's schema of the Monitoring API fields the stack writes, in the
API's proto3 JSON form (fields at their default left out, as the API returns them)."""

from __future__ import annotations

import json
from typing import Any

from offline.validate import validate_dashboard


def chart(**query: Any) -> dict[str, Any]:
    return {"title": "t", "xyChart": {"dataSets": [{"timeSeriesQuery": query, "plotType": "LINE"}]}}


def board(*widgets: dict[str, Any], width: int = 12) -> str:
    """Tiles side by side in row 0: no yPos, and no xPos for the first (the API leaves zero positions out)."""
    tiles = [{"width": width, "height": 8, "widget": w} for w in widgets]
    for i, tile in enumerate(tiles[1:], 1):
        tile["xPos"] = i * width
    return json.dumps({"displayName": "d", "mosaicLayout": {"columns": 48, "tiles": tiles}})


def test_a_valid_dashboard_passes() -> None:
    assert validate_dashboard(board(chart(prometheusQuery="sum(kueue_pending_workloads)"))) == []


def test_an_unknown_widget_field_is_refused() -> None:
    data_set = {"timeSeriesQuery": {"prometheusQuery": "up"}, "plot": "LINE"}
    widget = {"title": "t", "xyChart": {"dataSets": [data_set]}}
    assert validate_dashboard(board(widget)) == [
        "mosaicLayout.tiles[0].widget.xyChart.dataSets[0]: "
        "Additional properties are not allowed ('plot' was unexpected)"
    ]


def test_a_filter_without_a_metric_type_is_refused() -> None:
    (error,) = validate_dashboard(board(chart(timeSeriesFilter={"filter": 'resource.type="k8s_node"'})))
    assert error.startswith("mosaicLayout.tiles[0].widget.xyChart.dataSets[0].timeSeriesQuery.timeSeriesFilter.filter:")


def test_tiles_must_fit_the_48_columns_and_not_overlap() -> None:
    assert validate_dashboard(board(chart(prometheusQuery="up"), width=60)) == [
        "mosaicLayout.tiles[0]: ends at column 60 of 48"
    ]
    data = json.loads(board(chart(prometheusQuery="up"), chart(prometheusQuery="up")))
    data["mosaicLayout"]["tiles"][1]["xPos"] = 6
    assert validate_dashboard(json.dumps(data)) == ["mosaicLayout.tiles[1]: overlaps tiles[0]"]


def test_zero_positions_and_empty_lists_are_refused_as_the_api_never_returns_them() -> None:
    """The provider compares what the program sends with what the API returns; proto3 JSON leaves out zeros and
    empty lists, so a dashboard carrying them would show a change on every update."""
    data = json.loads(board(chart(prometheusQuery="up")))
    data["mosaicLayout"]["tiles"][0]["xPos"] = 0
    assert validate_dashboard(json.dumps(data)) == ["mosaicLayout.tiles[0].xPos: 0 is less than the minimum of 1"]
    aggregation = {"alignmentPeriod": "60s", "groupByFields": []}
    query = {"filter": 'metric.type="kubernetes.io/node/cpu/core_usage_time" ', "aggregation": aggregation}
    (error,) = validate_dashboard(board(chart(timeSeriesFilter=query)))
    assert error == (
        "mosaicLayout.tiles[0].widget.xyChart.dataSets[0].timeSeriesQuery.timeSeriesFilter.aggregation.groupByFields: "
        "[] should be non-empty"
    )
