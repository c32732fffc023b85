"""The pod and network policies of policies/guardrails/kubernetes.py, with a violation in every place it can hide.

Where a pod spec lives, from the Kubernetes API types (core/v1, apps/v1, batch/v1) and the CRDs the stack runs:
Pod `spec`; ReplicationController, ReplicaSet, Deployment, StatefulSet, DaemonSet and Job `spec.template.spec`;
CronJob `spec.jobTemplate.spec.template.spec`; JobSet (jobset.x-k8s.io/v1alpha2) `spec.replicatedJobs[].template
.spec.template.spec`, every replicatedJob (a violation also in the second, after a clean first); LeaderWorkerSet
(leaderworkerset.x-k8s.io/v1) `spec.leaderWorkerTemplate.leaderTemplate.spec` and `.workerTemplate.spec` (a violating
worker also beside a clean leader). Within a pod spec, containers run from `containers`, `initContainers` (sidecars
among them) and `ephemeralContainers`. Each violating fixture is refused with its exact message, each legitimate
exception passes; the resources run through the real pulumi_policy arguments (offline/policy_check.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from policies.guardrails.workloads import SERVER_KINDS
from tests.policies.test_rules import check, res

IMAGE = "registry.example/app:1.0.0"
DIGEST = "registry.example/app@sha256:" + "a" * 64
TPU = {"requests": {"google.com/tpu": 4}, "limits": {"google.com/tpu": 4}}
PodSpec = dict[str, Any]


def _job(pod: PodSpec) -> dict[str, Any]:
    return {"template": {"spec": pod}}


KINDS: dict[str, tuple[str, Callable[[PodSpec], dict[str, Any]]]] = {
    "Pod": ("core/v1", lambda pod: pod),
    "ReplicationController": ("core/v1", _job),
    "ReplicaSet": ("apps/v1", _job),
    "Deployment": ("apps/v1", _job),
    "StatefulSet": ("apps/v1", _job),
    "DaemonSet": ("apps/v1", _job),
    "Job": ("batch/v1", _job),
    "CronJob": ("batch/v1", lambda pod: {"jobTemplate": {"spec": _job(pod)}}),
    "JobSet": (
        "jobset.x-k8s.io/v1alpha2",
        lambda pod: {"replicatedJobs": [{"name": "workers", "template": {"spec": _job(pod)}}]},
    ),
    # A violation past the first pod spec of an object: a clean first replicatedJob (driver beside workers is a
    # common shape), a clean leader beside the worker.
    "JobSet/second-replicatedJob": (
        "jobset.x-k8s.io/v1alpha2",
        lambda pod: {
            "replicatedJobs": [
                {"name": "driver", "template": {"spec": _job({"containers": [{"name": "d", "image": DIGEST}]})}},
                {"name": "workers", "template": {"spec": _job(pod)}},
            ]
        },
    ),
    "LeaderWorkerSet/leader": (
        "leaderworkerset.x-k8s.io/v1",
        lambda pod: {
            "leaderWorkerTemplate": {
                "leaderTemplate": {"spec": pod},
                "workerTemplate": {"spec": {"containers": [{"name": "w", "image": DIGEST}]}},
            }
        },
    ),
    "LeaderWorkerSet/worker": (
        "leaderworkerset.x-k8s.io/v1",
        lambda pod: {"leaderWorkerTemplate": {"workerTemplate": {"spec": pod}}},
    ),
    "LeaderWorkerSet/worker-with-leader": (
        "leaderworkerset.x-k8s.io/v1",
        lambda pod: {
            "leaderWorkerTemplate": {
                "leaderTemplate": {"spec": {"containers": [{"name": "l", "image": DIGEST}]}},
                "workerTemplate": {"spec": pod},
            }
        },
    ),
}
PLACES = ("containers", "initContainers", "ephemeralContainers")


def workload(kind: str, pod: PodSpec, *, stack: str = "dev") -> dict[str, Any]:
    group, build = KINDS[kind]
    name = kind.split("/")[0]
    return res(
        f"kubernetes:{group}:{name}",
        "w",
        {"kind": name, "metadata": {"name": "w"}, "spec": build(pod)},
        stack=stack,
        protect=stack == "prod",
    )


def pod_with(place: str, container: dict[str, Any], **pod_fields: Any) -> PodSpec:
    """A pod spec whose `place` holds `container` (a plain main container beside it, so `containers` is never empty)."""
    pod: PodSpec = {"containers": [{"name": "main", "image": IMAGE}], **pod_fields}
    pod.setdefault(place, []).append({"name": "odd", "image": IMAGE, **container})
    return pod


def findings(rules: ModuleType, resource: dict[str, Any], *, stack: str = "dev", config: Any = None) -> list[Any]:
    return [(v["policy"], v["message"]) for v in check(rules, [resource], stack=stack, config=config)]


EVERYWHERE = [(kind, place) for kind in KINDS for place in PLACES]
IDS = [f"{kind}-{place}" for kind, place in EVERYWHERE]


# ---- no-privileged-containers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "place"), EVERYWHERE, ids=IDS)
def test_a_privileged_container_is_found_wherever_it_is(rules: ModuleType, kind: str, place: str) -> None:
    pod = pod_with(place, {"securityContext": {"privileged": True}, "resources": TPU})
    assert findings(rules, workload(kind, pod)) == [
        (
            "no-privileged-containers",
            "container(s) odd run privileged: remove securityContext.privileged (TPUs do not need it)",
        )
    ]


def test_privileged_false_is_no_violation(rules: ModuleType) -> None:
    pod = pod_with("initContainers", {"securityContext": {"privileged": False, "allowPrivilegeEscalation": False}})
    assert findings(rules, workload("JobSet", pod)) == []


# ---- no-host-namespaces ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("field", ["hostPID", "hostIPC"])
def test_host_pid_and_ipc_are_found_in_every_kind(rules: ModuleType, kind: str, field: str) -> None:
    pod = pod_with("containers", {"resources": TPU}, **{field: True})  # a TPU pod may not either
    assert findings(rules, workload(kind, pod)) == [
        ("no-host-namespaces", f"pod sets {field}: remove it, no workload of the stack needs the node's {field[4:]}")
    ]


@pytest.mark.parametrize(("kind", "place"), EVERYWHERE, ids=IDS)
def test_added_capabilities_are_found_wherever_they_are(rules: ModuleType, kind: str, place: str) -> None:
    pod = pod_with(place, {"securityContext": {"capabilities": {"add": ["NET_ADMIN", "SYS_TIME"]}}})
    assert findings(rules, workload(kind, pod)) == [
        ("no-host-namespaces", "container odd adds capabilities NET_ADMIN, SYS_TIME: drop ALL and add none")
    ]


SERVERS = [kind for kind in KINDS if kind.split("/")[0] in SERVER_KINDS]
"""Kinds that keep pods serving (policies/guardrails/workloads.py): never on the host network, TPU pods included."""
BATCH = [kind for kind in KINDS if kind not in SERVERS]


def server_host_network(kind: str) -> tuple[str, str]:
    return (
        "no-host-network-servers",
        f"a pod template of this {kind.split('/')[0]} sets hostNetwork: its pods serve clients and must stay off the "
        "host network (it bypasses Workload Identity and the serving NetworkPolicies); remove hostNetwork",
    )


@pytest.mark.parametrize("kind", KINDS)
def test_the_host_network_without_tpus_is_found_in_every_kind(rules: ModuleType, kind: str) -> None:
    pod = pod_with("initContainers", {}, hostNetwork=True)
    served = [server_host_network(kind)] if kind in SERVERS else []
    assert findings(rules, workload(kind, pod)) == [
        (
            "no-host-namespaces",
            "pod on the host network requests no google.com/tpu: remove hostNetwork (it also "
            "bypasses Workload Identity and NetworkPolicies)",
        ),
        *served,
    ]


@pytest.mark.parametrize("kind", BATCH)
@pytest.mark.parametrize("part", ["requests", "limits"])
def test_a_tpu_pod_may_use_the_host_network(rules: ModuleType, kind: str, part: str) -> None:
    """Multislice DCN traffic: the one exception, whether the chips are requested or only limited, for batch pods."""
    pod = pod_with("containers", {"resources": {part: {"google.com/tpu": 4}}}, hostNetwork=True)
    assert findings(rules, workload(kind, pod)) == []


@pytest.mark.parametrize("kind", SERVERS)
def test_a_serving_tpu_pod_may_not_use_the_host_network(rules: ModuleType, kind: str) -> None:
    """vLLM's Deployments and LeaderWorkerSets (leader or workers) serve clients: the TPU exception is not theirs."""
    pod = pod_with("containers", {"resources": TPU}, hostNetwork=True)
    assert findings(rules, workload(kind, pod)) == [server_host_network(kind)]


@pytest.mark.parametrize("amount", [0, "0", None])
def test_zero_tpus_is_no_tpu_pod(rules: ModuleType, amount: Any) -> None:
    pod = pod_with("containers", {"resources": {"limits": {"google.com/tpu": amount}}}, hostNetwork=True)
    assert [policy for policy, _ in findings(rules, workload("Job", pod))] == ["no-host-namespaces"]


def test_dropping_capabilities_and_host_fields_set_false_pass(rules: ModuleType) -> None:
    pod = pod_with(
        "containers",
        {"securityContext": {"capabilities": {"drop": ["ALL"], "add": []}}},
        hostPID=False,
        hostIPC=False,
        hostNetwork=False,
    )
    assert findings(rules, workload("LeaderWorkerSet/worker", pod)) == []


# ---- pinned-versions and images-by-digest ---------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "place"), EVERYWHERE, ids=IDS)
@pytest.mark.parametrize(
    ("image", "problem"),
    [
        ("registry.example/app", "has no tag: pin a version tag or a digest"),
        ("registry.example:5000/team/app", "has no tag: pin a version tag or a digest"),
        ("registry.example/app:latest", "uses :latest: pin a version tag or a digest"),
    ],
)
def test_an_unpinned_image_is_found_wherever_it_is(
    rules: ModuleType, kind: str, place: str, image: str, problem: str
) -> None:
    pod = pod_with(place, {"image": image})
    assert findings(rules, workload(kind, pod)) == [
        ("pinned-charts-and-images", f"container 'odd': image {image!r} {problem}")
    ]


@pytest.mark.parametrize(("kind", "place"), EVERYWHERE, ids=IDS)
def test_a_tag_in_a_protected_stack_is_found_wherever_it_is(rules: ModuleType, kind: str, place: str) -> None:
    pod = pod_with(place, {"image": IMAGE})
    pod["containers"][0]["image"] = DIGEST
    found = findings(rules, workload(kind, pod, stack="prod"), stack="prod")
    assert found == [
        (
            "images-by-digest",
            f"container 'odd': image {IMAGE!r} is not pinned by digest and stack 'prod' is "
            "protected: append @sha256:<digest>, or list the image with its reason under images-by-digest.exceptions "
            "in the policy config",
        )
    ]


def test_reviewed_exceptions_and_unprotected_stacks_pass(rules: ModuleType) -> None:
    pod = pod_with("initContainers", {"image": IMAGE})
    pod["containers"][0]["image"] = DIGEST
    config = {"images-by-digest": {"exceptions": [{"image": IMAGE, "reason": "vendor publishes tags only"}]}}
    assert findings(rules, workload("CronJob", pod, stack="prod"), stack="prod", config=config) == []
    assert findings(rules, workload("CronJob", pod)) == []  # dev is not protected
    no_reason = {"images-by-digest": {"exceptions": [{"image": IMAGE, "reason": " "}]}}
    assert [p for p, _ in findings(rules, workload("CronJob", pod, stack="prod"), stack="prod", config=no_reason)] == [
        "images-by-digest"
    ]


# ---- no-open-load-balancer ------------------------------------------------------------------------------------------


def service(annotations: dict[str, str], ranges: list[str] | None, kind: str = "LoadBalancer") -> dict[str, Any]:
    spec: dict[str, Any] = {"type": kind, "ports": [{"port": 8888}]}
    if ranges is not None:
        spec["loadBalancerSourceRanges"] = ranges
    return res(
        "kubernetes:core/v1:Service", "lb", {"metadata": {"name": "lb", "annotations": annotations}, "spec": spec}
    )


@pytest.mark.parametrize(
    ("annotations", "where"),
    [
        ({}, "every address"),
        ({"networking.gke.io/load-balancer-type": "Internal"}, "every address in the VPC"),
        ({"cloud.google.com/load-balancer-type": "internal"}, "every address in the VPC"),
    ],
)
def test_a_load_balancer_without_ranges_internal_or_not(
    rules: ModuleType, annotations: dict[str, str], where: str
) -> None:
    expected = f"LoadBalancer open to {where}: set spec.loadBalancerSourceRanges to the client CIDRs"
    assert findings(rules, service(annotations, None)) == [("no-open-load-balancer", expected)]
    assert findings(rules, service(annotations, [])) == [("no-open-load-balancer", expected)]


@pytest.mark.parametrize(("cidr", "widest"), [("0.0.0.0/0", 8), ("10.0.0.0/7", 8), ("::/0", 16), ("2001:db8::/15", 16)])
def test_ranges_wider_than_a_slash_8_or_16_are_found(rules: ModuleType, cidr: str, widest: int) -> None:
    assert findings(rules, service({}, ["10.20.0.0/24", cidr])) == [
        (
            "no-open-load-balancer",
            f"spec.loadBalancerSourceRanges entry {cidr} covers a large part of the internet: "
            f"narrow it to /{widest} or less, or allow it explicitly in allowedSourceRanges",
        )
    ]


def test_narrow_ranges_and_other_service_types_pass(rules: ModuleType) -> None:
    assert findings(rules, service({}, ["10.0.0.0/8", "2001:db8::/16"])) == []
    assert findings(rules, service({}, None, kind="ClusterIP")) == []
    assert findings(rules, service({}, ["not-a-cidr"])) == [
        ("no-open-load-balancer", "spec.loadBalancerSourceRanges entry 'not-a-cidr' is not a CIDR range")
    ]


# ---- default-deny-network-policy ------------------------------------------------------------------------------------

DENY: dict[str, Any] = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def namespace_with(*specs: dict[str, Any], namespace: str = "team") -> list[dict[str, Any]]:
    resources = [res("kubernetes:core/v1:Namespace", f"ns-{namespace}", {"metadata": {"name": namespace}})]
    for index, spec in enumerate(specs):
        meta = {"name": f"p{index}", "namespace": namespace}
        resources.append(
            res("kubernetes:networking.k8s.io/v1:NetworkPolicy", f"np-{index}", {"metadata": meta, "spec": spec})
        )
    return resources


def deny_findings(rules: ModuleType, resources: list[dict[str, Any]]) -> list[str]:
    return [v["message"] for v in check(rules, resources) if v["policy"] == "default-deny-network-policy"]


MISSING = (
    "namespace team has no default-deny NetworkPolicy: add one with podSelector {} and policyTypes Ingress and "
    "Egress, then allow what its pods need"
)


@pytest.mark.parametrize(
    "spec",
    [
        {**DENY, "podSelector": {"matchLabels": {"app": "a"}}},
        {**DENY, "podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}},
        {**DENY, "policyTypes": ["Ingress"]},
        {**DENY, "policyTypes": ["Egress"]},
        {**DENY, "ingress": [{}]},
        {**DENY, "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]},
        {"podSelector": {}},
    ],
    ids=["labels", "expressions", "ingress-only", "egress-only", "allows-ingress", "allows-egress", "no-types"],
)
def test_a_policy_that_does_not_deny_everything_is_no_default_deny(rules: ModuleType, spec: dict[str, Any]) -> None:
    assert deny_findings(rules, namespace_with(spec)) == [MISSING]


def test_a_deny_in_another_namespace_does_not_count(rules: ModuleType) -> None:
    resources = namespace_with()
    resources += namespace_with(DENY, namespace="other")[1:]
    assert deny_findings(rules, resources) == [MISSING]


@pytest.mark.parametrize(
    "specs",
    [
        [DENY],
        [{**DENY, "podSelector": {"matchLabels": {}}, "ingress": [], "egress": []}],
        [DENY, {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 53}]}]}],
    ],
    ids=["deny", "empty-selector-and-rules", "deny-beside-allows"],
)
def test_a_deny_passes(rules: ModuleType, specs: list[dict[str, Any]]) -> None:
    assert deny_findings(rules, namespace_with(*copy.deepcopy(specs))) == []


INGRESS_DENY = {"podSelector": {}, "policyTypes": ["Ingress"]}
EGRESS_DENY = {"podSelector": {}, "policyTypes": ["Egress"]}


@pytest.mark.parametrize(
    "specs",
    [
        [INGRESS_DENY, EGRESS_DENY],
        # policyTypes left out: the API server sets Ingress (and Egress only for a policy with egress rules).
        [{"podSelector": {}}, EGRESS_DENY],
        # Both types governed, only egress allowed somewhere: every pod's ingress is still closed.
        [{**DENY, "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]}, EGRESS_DENY],
    ],
    ids=["one-per-direction", "ingress-by-default", "ingress-closed-beside-egress-rules"],
)
def test_a_deny_split_over_two_policies_passes(rules: ModuleType, specs: list[dict[str, Any]]) -> None:
    """Kubernetes' own default policies deny ingress and egress in two objects (kubernetes.io, Network Policies,
    "Default policies"); together they close the namespace as one would."""
    assert deny_findings(rules, namespace_with(*copy.deepcopy(specs))) == []


def test_two_ingress_denies_still_leave_egress_open(rules: ModuleType) -> None:
    assert deny_findings(rules, namespace_with(INGRESS_DENY, {"podSelector": {}})) == [MISSING]


# ---- the messages name what to change --------------------------------------------------------------------------------


def test_every_privileged_container_is_named(rules: ModuleType) -> None:
    pod = pod_with("containers", {"securityContext": {"privileged": True}})
    pod["containers"][0]["securityContext"] = {"privileged": True}
    assert findings(rules, workload("Deployment", pod)) == [
        (
            "no-privileged-containers",
            "container(s) main, odd run privileged: remove securityContext.privileged (TPUs do not need it)",
        )
    ]


def test_a_container_without_an_image_is_unpinned(rules: ModuleType) -> None:
    pod: PodSpec = {"containers": [{"name": "bare"}]}
    assert findings(rules, workload("Pod", pod)) == [
        ("pinned-charts-and-images", "container 'bare': image '' has no tag: pin a version tag or a digest")
    ]
    assert (
        "images-by-digest",
        "container 'bare': image '' is not pinned by digest and stack 'prod' is protected: "
        "append @sha256:<digest>, or list the image with its reason under images-by-digest.exceptions in the "
        "policy config",
    ) in findings(rules, workload("Pod", pod, stack="prod"), stack="prod")


def test_an_unpinned_chart_is_named(rules: ModuleType) -> None:
    chart = res(
        "kubernetes:helm.sh/v4:Chart",
        "kueue",
        {"chart": "oci://registry.k8s.io/kueue/charts/kueue", "version": "^0.19.0"},
    )
    assert findings(rules, chart) == [
        (
            "pinned-charts-and-images",
            "chart 'oci://registry.k8s.io/kueue/charts/kueue' version '^0.19.0': set `version` to one exact release",
        )
    ]


def test_allowed_ranges_may_be_written_with_host_bits_and_every_entry_is_checked(rules: ModuleType) -> None:
    config = {"no-open-load-balancer": {"allowedSourceRanges": ["10.0.0.1/8", "192.168.0.0/16"]}}
    resource = service({}, ["not-a-cidr", "10.1.0.0/16", "203.0.113.0/24"])
    assert findings(rules, resource, config=config) == [
        ("no-open-load-balancer", "spec.loadBalancerSourceRanges entry 'not-a-cidr' is not a CIDR range"),
        (
            "no-open-load-balancer",
            "spec.loadBalancerSourceRanges entry 203.0.113.0/24 is outside the allowed ranges "
            "(10.0.0.1/8, 192.168.0.0/16): narrow it or add it to allowedSourceRanges",
        ),
    ]


def test_egress_rules_without_policy_types_leave_egress_open(rules: ModuleType) -> None:
    """The API server then sets policyTypes to Ingress and Egress; the rules keep egress open, ingress is closed."""
    allows_dns = {"podSelector": {}, "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]}
    assert deny_findings(rules, namespace_with(allows_dns)) == [MISSING]
    assert deny_findings(rules, namespace_with(allows_dns, EGRESS_DENY)) == []
