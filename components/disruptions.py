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
TerminationByKubelet): a Job or a JobSet whose pods the kubelet evicts again and again restarts until someone deletes
it or Kueue's maximum execution time ends it (`tpu-stack submit --max-exec-time`).

A plain DELETE of a pod sets no DisruptionTarget (only the eviction API, the scheduler's preemption, the taint
manager, pod garbage collection and the kubelet add it: kubernetes.io/docs/concepts/workloads/pods/disruptions/
#pod-disruption-conditions); GKE deletes pods so when a node drain times out (disruption type POD_PDB_VIOLATION,
cloud.google.com/kubernetes-engine/docs/reference/rest/v1/DisruptionType), and the container ends by SIGTERM, exit
143. A Job counts such a failure against its backoffLimit instead of failing on it; a JobSet's child Job fails on it
(backoffLimit 0, BackoffLimitExceeded), which uses up one of its restarts.
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


SIGTERM_EXIT = 143
"""A container ended by SIGTERM (128 + 15): how a pod deleted without a disruption condition ends."""


def job_policy(vms: int, restarts: int) -> dict[str, Any]:
    """A Job on one slice: a disrupted pod is started again without counting (Ignore: kubernetes
    pkg/controller/job/pod_failure_policy.go matchPodFailurePolicy does not count it towards backoffLimit); a pod
    deleted without a disruption condition (SIGTERM) is started again, counted against backoffLimit, which allows
    `restarts` such deletions of the whole slice (each stops all `vms` workers once); any other failure of a container
    fails the Job at once, as backoffLimit 0 would. The rules are tried in order, the first match applies."""
    on_disruption = {"action": "Ignore", "onPodConditions": [_DISRUPTED]}
    on_deletion = {"action": "Count", "onExitCodes": {"operator": "In", "values": [SIGTERM_EXIT]}}
    on_error = {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0]}}
    return {"backoffLimit": restarts * vms, "podFailurePolicy": {"rules": [on_disruption, on_deletion, on_error]}}
