"""What a disruption does to a Job or a JobSet: the platform's stops (node upgrades, repairs, maintenance, spot
preemptions, evictions) restart the work; only the program's own failures use up its restarts.

A pod the platform stops carries the condition DisruptionTarget (the kubelet sets it, reason TerminationByKubelet,
on a graceful node shutdown, which is how GKE stops the pods of a preempted Spot VM or of a node under maintenance;
the eviction API, the taint manager and the scheduler set it on the pods they evict, drain or preempt). The Job API
matches a pod failure policy rule on that condition (type and status); JobSet matches its failure policy rules on a
failed child Job's reason, so a child Job fails on a disruption with reason PodFailurePolicy (its only FailJob rule)
and the JobSet restarts on that reason without counting (k8s.io/api batch/v1 types.go PodFailurePolicy,
JobReasonPodFailurePolicy; kubernetes-sigs/jobset v0.12.0 api/jobset/v1alpha2/jobset_types.go FailurePolicyRule,
pkg/controllers/failure_policy.go). Neither API tells a preemption from a kubelet eviction for node pressure (both
TerminationByKubelet): a Job counts its disruptions against a budget, so an eviction loop ends; a JobSet restarts
until someone deletes it (`kubectl get jobset` shows its restarts).
"""

from __future__ import annotations

from typing import Any

DISRUPTION_TARGET = "DisruptionTarget"
POD_FAILURE_POLICY = "PodFailurePolicy"
"""Reason of a Job's Failed condition when a FailJob rule of its podFailurePolicy matched (batch/v1)."""
RESTART_RULE = "DisruptionTarget"
"""Name of the JobSet failure policy rule that restarts a JobSet after a disruption, without counting."""
_DISRUPTED = {"type": DISRUPTION_TARGET, "status": "True"}


def child_job_policy() -> dict[str, Any]:
    """A JobSet's child Job: a disrupted pod fails the Job at once with reason PodFailurePolicy, which the JobSet's
    rule restarts on; any other pod failure fails it too (backoffLimit 0), as BackoffLimitExceeded, which counts."""
    return {"backoffLimit": 0, "podFailurePolicy": {"rules": [{"action": "FailJob", "onPodConditions": [_DISRUPTED]}]}}


def jobset_policy(max_restarts: int) -> dict[str, Any]:
    """A JobSet's failurePolicy: disruptions restart it without counting, anything else within `max_restarts`."""
    rule = {
        "name": RESTART_RULE,
        "action": "RestartJobSetAndIgnoreMaxRestarts",
        "onJobFailureReasons": [POD_FAILURE_POLICY],
    }
    return {"maxRestarts": max_restarts, "rules": [rule]}


def job_policy(vms: int, restarts: int) -> dict[str, Any]:
    """A Job on one slice: a disrupted pod is started again, counted against backoffLimit, which allows `restarts`
    disruptions of the whole slice (each stops all `vms` workers once); any other failure of a container fails the
    Job at once, as backoffLimit 0 would."""
    on_disruption = {"action": "Count", "onPodConditions": [_DISRUPTED]}
    on_error = {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0]}}
    return {"backoffLimit": restarts * vms, "podFailurePolicy": {"rules": [on_disruption, on_error]}}
