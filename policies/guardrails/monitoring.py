"""Cloud Monitoring: the stack's alert policies stay on, with PromQL conditions the Monitoring API accepts."""

from __future__ import annotations

import re

from pulumi_policy import ReportViolation, ResourceValidationArgs
from pulumi_policy.proxy import UnknownValueError

from .props import as_list, prop, say

ALERT_POLICY = "gcp:monitoring/alertPolicy:AlertPolicy"
PROTO_DURATION_MAX_SECONDS = 315_576_000_000
"""google.protobuf.Duration's range (google/protobuf/duration.proto), how the API takes `duration`."""
EVALUATION_STEP_SECONDS = 30
_DURATION = re.compile(r"^(?P<seconds>\d+)(?:\.\d{1,9})?s$")


def _seconds(value: object) -> float | None:
    """A protobuf JSON duration ("60s", "1.5s") in seconds; None when it is not one."""
    if not isinstance(value, str) or not _DURATION.match(value):
        return None
    return float(value[:-1])


def validate_alert_policies(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """An alert policy switched off raises no incident: the stack's alerts (pending workloads, idle TPUs, provisioning
    that never comes) stay enabled. A PromQL condition's `duration` is a non-negative google.protobuf.Duration and its
    `evaluationInterval` a positive multiple of 30 seconds (Monitoring API v3, AlertPolicy.Condition.
    PrometheusQueryLanguageCondition; pulumi-gcp 10.2.0 AlertPolicyConditionConditionPrometheusQueryLanguage): the
    API refuses others when `pulumi up` creates the policy."""
    if args.resource_type != ALERT_POLICY:
        return
    props = args.props
    if props.get("enabled") is False:
        say(report, "enabled is false: the alert raises no incident; remove `enabled: false`, or the policy itself")
    for index, condition in enumerate(as_list(props.get("conditions"))):
        promql = prop(condition, "conditionPrometheusQueryLanguage")
        if promql is None:
            continue
        where = f"conditions[{index}].conditionPrometheusQueryLanguage"
        try:
            duration, interval = promql.get("duration"), promql.get("evaluationInterval")
        except UnknownValueError:
            continue
        seconds = _seconds(duration)
        if duration is not None and (seconds is None or seconds > PROTO_DURATION_MAX_SECONDS):
            say(
                report,
                f"{where}.duration {duration!r} is not a duration Cloud Monitoring accepts: write whole seconds like "
                f"'1800s', at most {PROTO_DURATION_MAX_SECONDS}s",
            )
        step = _seconds(interval)
        if interval is not None and (step is None or step <= 0 or step % EVALUATION_STEP_SECONDS):
            say(
                report,
                f"{where}.evaluationInterval {interval!r} is not a positive multiple of {EVALUATION_STEP_SECONDS} "
                "seconds, which Cloud Monitoring requires: use '60s'",
            )
