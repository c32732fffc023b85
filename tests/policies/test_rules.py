"""Every policy against minimal resources in plan.json shape: a clean baseline, then one change per violation.

The resources run through offline/policy_check.py, i.e. the real pulumi_policy args (unknown-checking
proxies, resource options, stack resources). Facts behind the pool shapes: docs facts.md §1-2 and §6.
"""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any

import pytest

from components.config import ConfigError, load
from offline import policy_check

SA = "tpu-dev-nodes@proj.iam.gserviceaccount.com"
LABELS = {"managed-by": "pulumi", "app": "tpu-stack", "env": "dev"}


def res(type_: str, name: str, inputs: dict[str, Any], *, stack: str = "dev", protect: bool = False) -> dict[str, Any]:
    return {
        "urn": f"urn:pulumi:{stack}::tpu-stack::{type_}::{name}",
        "type": type_,
        "name": name,
        "parent": None,
        "dependencies": [],
        "custom": True,
        "remote": False,
        "protect": protect,
        "ignoreChanges": [],
        "inputs": inputs,
    }


def pool(name: str, machine: str = "ct5lp-hightpu-4t", **inputs: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "cluster": "tpu-dev",
        "name": name,
        "nodeLocations": ["us-central1-a"],
        "nodeConfig": {
            "machineType": machine,
            "serviceAccount": SA,
            "workloadMetadataConfig": {"mode": "GKE_METADATA"},
            "resourceLabels": LABELS,
        },
        "management": {"autoRepair": True, "autoUpgrade": False},
    }
    for key, value in inputs.items():
        base[key] = {**base[key], **value} if isinstance(value, dict) and key in base else value
    return res("gcp:container/nodePool:NodePool", name, base)


def flex_pool(name: str = "flex", topology: str = "2x4", vms: int = 2) -> dict[str, Any]:
    return pool(
        name,
        initialNodeCount=0,
        nodeConfig={"flexStart": True, "reservationAffinity": {"consumeReservationType": "NO_RESERVATION"}},
        autoscaling={"minNodeCount": 0, "maxNodeCount": vms},
        management={"autoRepair": False},
        placementPolicy={"tpuTopology": topology, "type": ""},
    )


def pod_template(container: dict[str, Any]) -> dict[str, Any]:
    return {"template": {"spec": {"containers": [container]}}}


def serving_pod(container: dict[str, Any], topology: str, accelerator: str = "tpu-v5-lite-podslice") -> dict[str, Any]:
    """A pod template that runs on the slices of one shape, as the stack's servers select them."""
    selector = {"cloud.google.com/gke-tpu-accelerator": accelerator, "cloud.google.com/gke-tpu-topology": topology}
    return {"template": {"spec": {"nodeSelector": selector, "containers": [container]}}}


def baseline() -> list[dict[str, Any]]:
    """A small stack every policy accepts."""
    tpu = {"requests": {"google.com/tpu": 4}, "limits": {"google.com/tpu": 4}}
    return [
        res(
            "gcp:container/cluster:Cluster",
            "tpu-dev",
            {
                "name": "tpu-dev",
                "deletionProtection": False,
                "releaseChannel": {"channel": "UNSPECIFIED"},
                "resourceLabels": LABELS,
                "workloadIdentityConfig": {"workloadPool": "proj.svc.id.goog"},
                "nodeConfig": {"serviceAccount": SA, "workloadMetadataConfig": {"mode": "GKE_METADATA"}},
                "datapathProvider": "ADVANCED_DATAPATH",
                "controlPlaneEndpointsConfig": {"ipEndpointsConfig": {"enabled": False}},
            },
        ),
        pool("system", "e2-standard-4", initialNodeCount=1, management={"autoUpgrade": True}),
        flex_pool(),
        pool(
            "burst",
            initialNodeCount=0,
            queuedProvisioning={"enabled": True},
            nodeConfig={"flexStart": True, "reservationAffinity": {"consumeReservationType": "NO_RESERVATION"}},
            autoscaling={"totalMaxNodeCount": 2, "locationPolicy": "ANY"},
            management={"autoRepair": False},
            placementPolicy={"tpuTopology": "2x4", "type": ""},
        ),
        pool("serve", nodeCount=8, placementPolicy={"tpuTopology": "4x8", "type": ""}),
        pool("single", "ct6e-standard-8t", nodeCount=3),
        res(
            "gcp:storage/bucket:Bucket",
            "data-bucket",
            {
                "uniformBucketLevelAccess": True,
                "publicAccessPrevention": "enforced",
                "versioning": {"enabled": True},
                "labels": LABELS,
            },
        ),
        res("gcp:projects/iAMMember:IAMMember", "log-writer", {"role": "roles/logging.logWriter", "member": "x"}),
        res("gcp:storage/bucketIAMMember:BucketIAMMember", "writer", {"role": "roles/storage.objectUser"}),
        res(
            "kubernetes:core/v1:Service",
            "sax-http-lb",
            {
                "metadata": {
                    "name": "sax-http-lb",
                    "annotations": {"networking.gke.io/load-balancer-type": "Internal"},
                },
                "spec": {
                    "type": "LoadBalancer",
                    "ports": [{"port": 8888}],
                    "loadBalancerSourceRanges": ["10.20.0.0/24"],
                },
            },
        ),
        res(
            "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
            "servers",
            {
                "kind": "JobSet",
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "server",
                            "template": {
                                # One server on the 8 VMs of the 4x8 slice of `serve`: it holds them at rest.
                                "spec": {
                                    "parallelism": 8,
                                    **serving_pod(
                                        {
                                            "name": "model-server",
                                            "image": "us-docker.pkg.dev/x/sax-model-server:v1.1.0",
                                            "securityContext": {"privileged": False},
                                            "resources": tpu,
                                        },
                                        "4x8",
                                    ),
                                },
                            },
                        }
                    ]
                },
            },
        ),
        # Three single-host servers, one on each VM of `single` (ct6e-standard-8t: one VM is a 2x4 slice).
        res(
            "kubernetes:apps/v1:Deployment",
            "llm",
            {
                "kind": "Deployment",
                "spec": {
                    "replicas": 3,
                    **serving_pod(
                        {"name": "vllm", "image": "registry/vllm@sha256:" + "b" * 64, "resources": tpu},
                        "2x4",
                        "tpu-v6e-slice",
                    ),
                },
            },
        ),
        res(
            "kubernetes:apps/v1:Deployment",
            "http",
            {"kind": "Deployment", "spec": pod_template({"name": "http", "image": "registry/x@sha256:" + "a" * 64})},
        ),
        {
            **res("kubernetes:helm.sh/v4:Chart", "kueue", {"chart": "oci://registry.k8s.io/kueue/charts/kueue"}),
            "custom": False,
            "remote": True,
            "inputs": {"chart": "oci://registry.k8s.io/kueue/charts/kueue", "version": "0.19.2"},
        },
        flavor("flex", {"cloud.google.com/gke-tpu-topology": "2x4", "cloud.google.com/gke-nodepool": "flex"}),
        cluster_queue("team", {"flex": 8}),
    ]


def flavor(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return res(
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor",
        f"flavor-{name}",
        {"kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {"nodeLabels": labels}},
    )


def cluster_queue(name: str, quotas: dict[str, int], kind: str = "ClusterQueue") -> dict[str, Any]:
    flavors = [
        {"name": f, "resources": [{"name": "google.com/tpu", "nominalQuota": float(q), "borrowingLimit": 64}]}
        for f, q in quotas.items()
    ]
    return res(
        f"kubernetes:kueue.x-k8s.io/v1beta2:{kind}",
        f"{kind.lower()}-{name}",
        {"kind": kind, "metadata": {"name": name}, "spec": {"resourceGroups": [{"flavors": flavors}]}},
    )


def find(resources: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(r for r in resources if r["name"] == name)


def put(resource: dict[str, Any], path: str, value: Any) -> None:
    """Set inputs at a dotted path (creating mappings); value None deletes the key."""
    *parents, last = path.split(".")
    data = resource["inputs"]
    for key in parents:
        data = data.setdefault(key, {})
    if value is None:
        data.pop(last, None)
    else:
        data[last] = value


def check(
    rules: ModuleType, resources: list[dict[str, Any]], *, stack: str = "dev", config: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return policy_check.evaluate(resources, stack=stack, config=config, rules=rules)


def changed(name: str, *edits: tuple[str, Any]) -> list[dict[str, Any]]:
    resources = copy.deepcopy(baseline())
    for path, value in edits:
        put(find(resources, name), path, value)
    return resources


def only(found: list[dict[str, Any]], policy: str) -> list[dict[str, Any]]:
    others = [v for v in found if v["policy"] != policy]
    assert not others, others
    assert found, f"{policy} reported nothing"
    return found


def test_the_baseline_passes_every_policy(rules: ModuleType) -> None:
    assert check(rules, baseline()) == []


# --- flex-start-pool-shape -------------------------------------------------------------------------------


FLEX_CASES: list[tuple[tuple[tuple[str, Any], ...], str]] = [
    ((("autoscaling.maxNodeCount", 4),),
     "autoscaling max is 4: a flex-start slice is all-or-nothing; set autoscaling.maxNodeCount to the slice's 2 VMs"),
    # gcloud --total-max-nodes: without a per-zone maximum the total one is the slice's size.
    ((("autoscaling", {"minNodeCount": 0, "totalMaxNodeCount": 3}),),
     "autoscaling max is 3: a flex-start slice is all-or-nothing; set autoscaling.maxNodeCount to the slice's 2 VMs"),
    ((("autoscaling.minNodeCount", 1.0),),
     "autoscaling.minNodeCount is 1: flex-start pools scale from zero; set it to 0"),
    # gcloud --total-min-nodes: the location-independent floor must be 0 as well.
    ((("autoscaling.totalMinNodeCount", 2),),
     "autoscaling.totalMinNodeCount is 2: flex-start pools scale from zero; set it to 0"),
    ((("initialNodeCount", 2),),
     "initialNodeCount is 2: flex-start pools start empty; set initialNodeCount to 0 or leave it unset"),
    ((("management.autoRepair", None),),
     "multi-host flex-start slices are not repaired node by node: set management.autoRepair false"),
    ((("management", None),),
     "multi-host flex-start slices are not repaired node by node: set management.autoRepair false"),
    ((("nodeConfig.reservationAffinity", None),),
     "flex-start pools must not consume reservations: set nodeConfig.reservationAffinity.consumeReservationType to "
     "NO_RESERVATION (found None)"),
    ((("nodeConfig.spot", True),),
     "flex-start and spot exclude each other: remove nodeConfig.spot or nodeConfig.flexStart"),
    ((("autoscaling", None),),
     "flex-start pools scale from zero: set autoscaling with minNodeCount 0 and a maxNodeCount"),
]  # fmt: skip


@pytest.mark.parametrize(("edits", "expected"), FLEX_CASES)
def test_flex_start_pool_shape(rules: ModuleType, edits: tuple[tuple[str, Any], ...], expected: str) -> None:
    # Some edits also change the chips Kueue may count on; only this policy's findings matter here.
    found = [v for v in check(rules, changed("flex", *edits)) if v["policy"] == "flex-start-pool-shape"]
    assert [v["message"] for v in found] == [expected]
    assert {v["level"] for v in found} == {"mandatory"}
    assert {v["urn"] for v in found} == {"urn:pulumi:dev::tpu-stack::gcp:container/nodePool:NodePool::flex"}


def test_a_flex_pool_sized_by_its_total_maximum_passes(rules: ModuleType) -> None:
    assert check(rules, changed("flex", ("autoscaling", {"minNodeCount": 0, "totalMaxNodeCount": 2}))) == []


def test_single_host_flex_pools_may_hold_several_slices_and_keep_auto_repair(rules: ModuleType) -> None:
    resources = baseline()
    single = flex_pool("flex-v6e")
    put(single, "nodeConfig.machineType", "ct6e-standard-4t")
    put(single, "placementPolicy", None)
    put(single, "autoscaling.maxNodeCount", 3)
    put(single, "management.autoRepair", True)
    assert check(rules, [*resources, single]) == []
    put(single, "autoscaling.maxNodeCount", 0)
    assert [v["message"] for v in only(check(rules, [*resources, single]), "flex-start-pool-shape")] == [
        "flex-start pools need room to scale up: set autoscaling.maxNodeCount to at least 1"
    ]


# --- queued-pool-shape -----------------------------------------------------------------------------------


QUEUED_CASES: list[tuple[tuple[tuple[str, Any], ...], str]] = [
    ((("autoscaling", {"maxNodeCount": 2, "locationPolicy": "ANY"}),),
     "queued-provisioning pools scale by total: set autoscaling.totalMaxNodeCount"),
    ((("management.autoRepair", True),),
     "queued-provisioning nodes are not repaired in place: set management.autoRepair false"),
    # GKE's default is auto-repair on: leaving management out is not "off".
    ((("management", None),), "queued-provisioning nodes are not repaired in place: set management.autoRepair false"),
    ((("nodeConfig.reservationAffinity.consumeReservationType", "ANY_RESERVATION"),),
     "queued-provisioning pools must not consume reservations: set nodeConfig.reservationAffinity."
     "consumeReservationType to NO_RESERVATION (found 'ANY_RESERVATION')"),
    ((("nodeConfig.spot", True),), "queued provisioning and spot exclude each other: remove nodeConfig.spot"),
    ((("nodeConfig.flexStart", None),),
     "GKE runs queued provisioning on flex-start capacity: set nodeConfig.flexStart true"),
    ((("autoscaling.locationPolicy", "BALANCED"),),
     "queued-provisioning pools take the slice in whichever zone has it: set autoscaling.locationPolicy ANY "
     "(found 'BALANCED')"),
    ((("nodeCount", 2),),
     "nodeCount is 2: queued-provisioning pools start empty; set nodeCount to 0 or leave it unset"),
]  # fmt: skip


@pytest.mark.parametrize(("edits", "expected"), QUEUED_CASES)
def test_queued_pool_shape(rules: ModuleType, edits: tuple[tuple[str, Any], ...], expected: str) -> None:
    found = [v for v in check(rules, changed("burst", *edits)) if v["policy"] == "queued-pool-shape"]
    assert [(v["message"], v["level"]) for v in found] == [(expected, "mandatory")]


# --- tpu-topology-and-node-count -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "edits", "expected"),
    [
        ("serve", (("placementPolicy.tpuTopology", "4x5"),), "'4x5' is not valid for ct5lp-hightpu-4t; valid: 2x2"),
        ("serve", (("nodeCount", 4),), "set nodeCount to 8"),
        ("burst", (("autoscaling.totalMaxNodeCount", 4.0),), "set autoscaling.totalMaxNodeCount to 2"),
        ("serve", (("placementPolicy.type", "COMPACT"),), "remove placementPolicy.type ('COMPACT')"),
        ("single", (("placementPolicy", {"tpuTopology": "2x4"}),), "remove placementPolicy.tpuTopology"),
        ("serve", (("nodeConfig.machineType", "ct9-hightpu-4t"),), "not a known TPU machine type"),
    ],
)
def test_topology_matches_machine_type_and_node_counts(
    rules: ModuleType, name: str, edits: tuple[tuple[str, Any], ...], expected: str
) -> None:
    found = [v for v in check(rules, changed(name, *edits)) if v["policy"] == "tpu-topology-and-node-count"]
    assert len(found) == 1 and expected in found[0]["message"], found
    assert found[0]["level"] == "mandatory"


def test_three_d_topologies_follow_the_generation_rules(rules: ModuleType) -> None:
    reserved = {"reservationAffinity": {"consumeReservationType": "SPECIFIC_RESERVATION", "values": ["v5p"]}}
    v5p = pool("v5p", "ct5p-hightpu-4t", nodeCount=16, placementPolicy={"tpuTopology": "4x4x4", "type": ""},
               nodeConfig=reserved)  # fmt: skip
    assert check(rules, [v5p]) == []
    put(v5p, "placementPolicy.tpuTopology", "4x4x2")  # v5p takes sorted shapes only
    assert "not valid for ct5p-hightpu-4t" in only(check(rules, [v5p]), "tpu-topology-and-node-count")[0]["message"]


# --- multi-host-pool-single-zone -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zones", "spans"), [(["us-central1-a", "us-central1-b"], "2 zones"), (None, "all cluster zones")]
)
def test_multi_host_pools_sit_in_one_zone(rules: ModuleType, zones: list[str] | None, spans: str) -> None:
    found = only(check(rules, changed("serve", ("nodeLocations", zones))), "multi-host-pool-single-zone")
    assert [v["message"] for v in found] == [f"multi-host TPU pool spans {spans}: set nodeLocations to one zone"]


def test_single_host_pools_may_span_zones(rules: ModuleType) -> None:
    assert check(rules, changed("single", ("nodeLocations", ["us-central1-a", "us-central1-b"]))) == []


# --- workload-identity -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "path", "value", "expected"),
    [
        ("tpu-dev", "workloadIdentityConfig", None, "set workloadIdentityConfig.workloadPool"),
        ("tpu-dev", "nodeConfig.workloadMetadataConfig.mode", "GCE_METADATA", "nodeConfig.workloadMetadataConfig"),
        ("serve", "nodeConfig.workloadMetadataConfig", None, "set nodeConfig.workloadMetadataConfig.mode to"),
    ],
)
def test_workload_identity(rules: ModuleType, name: str, path: str, value: Any, expected: str) -> None:
    found = only(check(rules, changed(name, (path, value))), "workload-identity")
    assert expected in found[0]["message"] and found[0]["level"] == "mandatory"


def test_autopilot_clusters_always_run_workload_identity(rules: ModuleType) -> None:
    autopilot = res(
        "gcp:container/cluster:Cluster",
        "ap",
        {
            "enableAutopilot": True,
            "resourceLabels": LABELS,
            "clusterAutoscaling": {"autoProvisioningDefaults": {"serviceAccount": SA}},
            "controlPlaneEndpointsConfig": {"ipEndpointsConfig": {"enabled": False}},
        },
    )
    assert check(rules, [autopilot]) == []


# --- no-default-compute-service-account ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "set nodeConfig.serviceAccount to a dedicated node service account"),
        ("default", "set nodeConfig.serviceAccount to a dedicated node service account"),
        ("123-compute@developer.gserviceaccount.com", "is the Compute Engine default service account"),
    ],
)
def test_no_default_compute_service_account(rules: ModuleType, value: str | None, expected: str) -> None:
    for name in ("serve", "tpu-dev"):
        found = only(
            check(rules, changed(name, ("nodeConfig.serviceAccount", value))), "no-default-compute-service-account"
        )
        assert expected in found[0]["message"] and found[0]["level"] == "mandatory"


SERVE_POOL = "projects/tpu-proj/locations/us-central1/clusters/tpu-dev/nodePools/serve"


def _adopted_serve(*edits: tuple[str, Any]) -> list[dict[str, Any]]:
    """The `serve` pool as an adopted one reads: its project and location given, on the default account."""
    return changed(
        "serve", ("project", "tpu-proj"), ("location", "us-central1"), ("nodeConfig.serviceAccount", "default"), *edits
    )


def _exception(policy: str, pool: str, until: str) -> dict[str, Any]:
    return {policy: {"exceptions": [{"nodePool": pool, "reason": "adopted from xpk; ForceNew", "until": until}]}}


@pytest.mark.parametrize(
    ("policy", "edit"),
    [
        ("no-default-compute-service-account", ("nodeConfig.serviceAccount", "default")),
        ("workload-identity", ("nodeConfig.workloadMetadataConfig.mode", "GCE_METADATA")),
    ],
)
def test_an_adopted_pools_dated_exception_holds_until_its_day(
    rules: ModuleType, policy: str, edit: tuple[str, Any]
) -> None:
    resources = changed("serve", ("project", "tpu-proj"), ("location", "us-central1"), edit)
    assert only(check(rules, resources), policy)  # without the exception: the violation
    assert check(rules, resources, config=_exception(policy, SERVE_POOL, "2999-12-31")) == []
    # Past its day the exception is the violation again, with the date and the way out.
    [expired] = only(check(rules, resources, config=_exception(policy, SERVE_POOL, "2020-01-31")), policy)
    assert expired["message"].startswith(f"exception for node pool {SERVE_POOL} expired 2020-01-31; ")
    assert "docs/adopt.md" in expired["message"] and expired["level"] == "mandatory"


def test_an_exception_with_an_impossible_day_is_one_violation_naming_the_pool_and_the_day(
    rules: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI refuses 2026-02-30 before the pack runs (the schema's `format: date`, next test); should such a day
    reach the pack anyway, the policy reports it (fail closed) instead of raising, so the other policies' results
    still come back."""
    monkeypatch.setattr(policy_check, "_validate", lambda *_: None)
    policy = "no-default-compute-service-account"
    [found] = only(check(rules, _adopted_serve(), config=_exception(policy, SERVE_POOL, "2026-02-30")), policy)
    assert found["message"].startswith(
        f"exception for node pool {SERVE_POOL} has an impossible until '2026-02-30'; write a real day as YYYY-MM-DD: "
    )
    assert found["level"] == "mandatory"


def test_an_exception_covers_only_the_pool_it_names(rules: ModuleType) -> None:
    policy = "no-default-compute-service-account"
    # Another cluster, or another pool of the same cluster (a new one on the default account): still a violation.
    for other in (SERVE_POOL.replace("tpu-dev", "tpu-prod"), SERVE_POOL.replace("/serve", "/serve-2")):
        assert only(check(rules, _adopted_serve(), config=_exception(policy, other, "2999-12-31")), policy)
    # The pool's identity is its project, location, cluster and name in the props, not its URN's name.
    moved = _adopted_serve(("location", "us-east5"))
    assert only(check(rules, moved, config=_exception(policy, SERVE_POOL, "2999-12-31")), policy)


def test_an_exception_excuses_nothing_else(rules: ModuleType) -> None:
    # workload-identity's exception is for the pool's metadata mode only: a cluster without a workload pool still fails,
    # and no-default-compute-service-account's exception does not excuse the metadata mode.
    resources = _adopted_serve(("nodeConfig.workloadMetadataConfig.mode", "GCE_METADATA"))
    found = check(rules, resources, config=_exception("no-default-compute-service-account", SERVE_POOL, "2999-12-31"))
    assert [v["policy"] for v in found] == ["workload-identity"]


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        ({"nodePool": SERVE_POOL, "reason": "r"}, "'until' is a required property"),
        ({"nodePool": "serve", "reason": "r", "until": "2999-12-31"}, "does not match"),
        ({"nodePool": SERVE_POOL, "reason": "", "until": "2999-12-31"}, "reason"),
        ({"nodePool": SERVE_POOL, "reason": "r", "until": "next year"}, "does not match"),
        ({"nodePool": SERVE_POOL, "reason": "r", "until": "2026-02-30"}, "'2026-02-30' is not a 'date'"),
    ],
)
def test_a_malformed_exception_is_a_policy_config_error(entry: dict[str, Any], line: str) -> None:
    from offline.policy_check import PolicyConfigError, load_rules, settings

    with pytest.raises(PolicyConfigError) as error:
        settings(load_rules().POLICIES, {"no-default-compute-service-account": {"exceptions": [entry]}})
    assert "no-default-compute-service-account" in str(error.value) and line in str(error.value)


def test_a_service_account_unknown_during_preview_is_not_a_violation(rules: ModuleType) -> None:
    """Before the account exists its email is unknown; the policy skips it rather than fail the preview."""
    assert check(rules, changed("serve", ("nodeConfig.serviceAccount", "[unknown]"))) == []


# --- bucket-hardening ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("uniformBucketLevelAccess", False, "set uniformBucketLevelAccess true (IAM only, no object ACLs)"),
        # A missing input leaves the setting to project or organization defaults, which the stack cannot rely on.
        ("uniformBucketLevelAccess", None, "set uniformBucketLevelAccess true (IAM only, no object ACLs)"),
        ("publicAccessPrevention", "inherited", "set publicAccessPrevention 'enforced' (found 'inherited')"),
        ("publicAccessPrevention", None, "set publicAccessPrevention 'enforced' (found None)"),
        ("versioning", None, "set versioning.enabled true so an overwritten or deleted checkpoint can be restored"),
        (
            "versioning.enabled",
            False,
            "set versioning.enabled true so an overwritten or deleted checkpoint can be restored",
        ),
    ],
)
def test_bucket_hardening(rules: ModuleType, path: str, value: Any, expected: str) -> None:
    found = only(check(rules, changed("data-bucket", (path, value))), "bucket-hardening")
    assert [(v["message"], v["level"]) for v in found] == [(expected, "mandatory")]


def checkpoint_bucket(**inputs: Any) -> dict[str, Any]:
    base = {
        "uniformBucketLevelAccess": True,
        "publicAccessPrevention": "enforced",
        "hierarchicalNamespace": {"enabled": True},
        "versioning": {"enabled": False},
        "softDeletePolicy": {"retentionDurationSeconds": 0},
        "labels": LABELS,
    }
    return res("gcp:storage/bucket:Bucket", "data-checkpoints", {**base, **inputs})


def test_a_hierarchical_namespace_checkpoint_bucket_keeps_no_versions(rules: ModuleType) -> None:
    """Issue 27, defect 6: checkpoints, rewritten and rotated, live in a hierarchical namespace bucket without
    versions; it is hardened like the datasets' bucket otherwise."""
    assert check(rules, [*baseline(), checkpoint_bucket()]) == []
    found = only(check(rules, [*baseline(), checkpoint_bucket(publicAccessPrevention="inherited")]), "bucket-hardening")
    assert [v["message"] for v in found] == ["set publicAccessPrevention 'enforced' (found 'inherited')"]
    flat = checkpoint_bucket(hierarchicalNamespace={"enabled": False})
    found = only(check(rules, [*baseline(), flat]), "bucket-hardening")
    assert [v["message"] for v in found] == [
        "set versioning.enabled true so an overwritten or deleted checkpoint can be restored"
    ]


# --- bucket-in-tpu-region (issue 27, defect 9) ------------------------------------------------------------


def regional(bucket_location: str, *pool_locations: tuple[str, list[str] | None]) -> list[dict[str, Any]]:
    """The baseline's data bucket in `bucket_location`, and a TPU pool per (cluster location, node locations)."""
    resources = changed("data-bucket", ("location", bucket_location))
    for index, (location, zones) in enumerate(pool_locations):
        resources.append(pool(f"tpu-{index}", nodeCount=8, location=location, nodeLocations=zones,
                              nodeConfig={"reservationAffinity": {"consumeReservationType": "SPECIFIC_RESERVATION"}},
                              placementPolicy={"tpuTopology": "4x8", "type": ""}))  # fmt: skip
    return resources


def test_a_bucket_in_another_region_than_its_tpus_is_advised(rules: ModuleType) -> None:
    """Pods read and write the bucket from the TPU VMs: from another region that is data transfer between regions,
    billed and slower. MultiKueue copies a JobSet to a worker unchanged (kueue pkg/controller/jobs/jobset/
    jobset_multikueue_adapter.go, SyncJob: Spec: *localJob.Spec.DeepCopy()), so the bucket a pod's volume names
    cannot differ per worker region."""
    resources = regional("US-CENTRAL1", ("us-east5", ["us-east5-b"]), ("asia-northeast1", ["asia-northeast1-b"]),
                         ("us-central1", ["us-central1-a"]))  # fmt: skip
    found = only(check(rules, resources), "bucket-in-tpu-region")
    assert found == [
        {
            "policy": "bucket-in-tpu-region",
            "level": "advisory",
            "urn": "urn:pulumi:dev::tpu-stack::gcp:storage/bucket:Bucket::data-bucket",
            "message": "bucket in US-CENTRAL1 and TPU node pools in asia-northeast1 (tpu-1), us-east5 (tpu-0): their "
            "pods read and write it across regions, billed as data transfer between regions and slower than in the "
            "region; keep a stack's TPUs in the bucket's region, or see docs/multiregion.md (Data and checkpoints)",
        }
    ]


@pytest.mark.parametrize(
    "pools",
    [[("us-central1", ["us-central1-a"])], [("us-central1-a", ["us-central1-a"])], [("us-east5", ["us-east5-b"])]],
    ids=["same-region", "zonal-cluster", "multi-region"],
)
def test_a_bucket_where_its_tpus_are_or_in_a_multi_region_is_not_advised(
    rules: ModuleType, pools: list[tuple[str, list[str] | None]]
) -> None:
    """A multi- or dual-region location is left alone: which regions it spans is Cloud Storage's to say."""
    location = "US" if pools[0][0] == "us-east5" else "US-CENTRAL1"
    assert check(rules, regional(location, *pools)) == []


# --- least-privilege-iam ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "role", "expected"),
    [
        ("log-writer", "roles/storage.admin", "grant roles/storage.objectUser (or objectViewer) on the one bucket"),
        ("log-writer", "roles/editor", "roles/editor is a primitive role"),
        ("writer", "roles/owner", "roles/owner is a primitive role"),
    ],
)
def test_least_privilege_iam(rules: ModuleType, name: str, role: str, expected: str) -> None:
    found = [v for v in check(rules, changed(name, ("role", role))) if v["policy"] == "least-privilege-iam"]
    assert expected in found[0]["message"] and found[0]["level"] == "mandatory"


def test_storage_admin_on_one_bucket_is_no_project_wide_grant_but_primitive_roles_in_policy_documents_are(
    rules: ModuleType,
) -> None:
    """Storage admin on the one bucket spans no other bucket; that it reaches past the bucket's objects is
    bucket-grants' to say (tests/policies/test_guardrails_iam_storage.py)."""
    found = check(rules, changed("writer", ("role", "roles/storage.admin")))
    assert [v["policy"] for v in found] == ["bucket-grants"]
    document = res(
        "gcp:projects/iAMPolicy:IAMPolicy",
        "policy",
        {"policyData": '{"bindings": [{"role": "roles/viewer", "members": ["user:a@example.com"]}]}'},
    )
    assert "roles/viewer is a primitive role" in only(check(rules, [document]), "least-privilege-iam")[0]["message"]


# --- no-open-load-balancer -------------------------------------------------------------------------------


def external(ranges: list[str] | None) -> list[dict[str, Any]]:
    return changed("sax-http-lb", ("metadata.annotations", None), ("spec.loadBalancerSourceRanges", ranges))


def test_external_load_balancer_needs_source_ranges(rules: ModuleType) -> None:
    found = only(check(rules, external(None)), "no-open-load-balancer")
    assert "set spec.loadBalancerSourceRanges" in found[0]["message"] and found[0]["level"] == "mandatory"
    found = only(check(rules, external(["0.0.0.0/0"])), "no-open-load-balancer")
    assert "0.0.0.0/0 covers a large part of the internet" in found[0]["message"]
    found = only(check(rules, external(["0.0.0.0/1", "128.0.0.0/1"])), "no-open-load-balancer")
    assert len(found) == 2 and "0.0.0.0/1 covers a large part of the internet" in found[0]["message"]
    assert check(rules, external(["203.0.113.0/24"])) == []


def test_internal_load_balancer_needs_source_ranges_too(rules: ModuleType) -> None:
    found = only(check(rules, changed("sax-http-lb", ("spec.loadBalancerSourceRanges", None))), "no-open-load-balancer")
    assert found[0]["message"] == (
        "LoadBalancer open to every address in the VPC: set spec.loadBalancerSourceRanges to the client CIDRs"
    )


def test_allowed_source_ranges_come_from_policy_config(rules: ModuleType) -> None:
    config = {"no-open-load-balancer": {"allowedSourceRanges": ["10.0.0.0/8", "0.0.0.0/0"]}}
    assert check(rules, external(["10.1.0.0/16", "0.0.0.0/0"]), config=config) == []
    config = {"no-open-load-balancer": {"allowedSourceRanges": ["10.0.0.0/8"]}}
    found = only(check(rules, external(["10.1.0.0/16", "203.0.113.0/24"]), config=config), "no-open-load-balancer")
    assert len(found) == 1 and "203.0.113.0/24 is outside the allowed ranges (10.0.0.0/8)" in found[0]["message"]


# --- no-privileged-containers, no-host-namespaces ----------------------------------------------------------


def test_no_privileged_container_even_in_tpu_pods(rules: ModuleType) -> None:
    resources = changed(
        "http",
        (
            "spec.template.spec.containers",
            [{"name": "http", "image": "x:1.0.0", "securityContext": {"privileged": True}}],
        ),
    )
    found = only(check(rules, resources), "no-privileged-containers")
    assert found[0]["message"] == (
        "container(s) http run privileged: remove securityContext.privileged (TPUs do not need it)"
    )
    servers = find(resources, "servers")
    job_pod = servers["inputs"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    job_pod["containers"][0]["securityContext"] = {"privileged": True}  # requests TPUs: still refused
    names = {v["urn"].rsplit("::", 1)[1] for v in check(rules, resources)}
    assert names == {"http", "servers"}


def test_host_namespaces_and_added_capabilities(rules: ModuleType) -> None:
    found = check(rules, changed("http", ("spec.template.spec.hostNetwork", True)))
    assert [v["policy"] for v in found] == ["no-host-namespaces", "no-host-network-servers"]  # a Deployment serves
    assert found[0]["message"].startswith("pod on the host network requests no google.com/tpu: remove hostNetwork")
    found = only(check(rules, changed("http", ("spec.template.spec.hostPID", True))), "no-host-namespaces")
    assert found[0]["message"] == "pod sets hostPID: remove it, no workload of the stack needs the node's PID"
    container = {"name": "http", "image": "x:1.0.0", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}
    found = only(check(rules, changed("http", ("spec.template.spec.containers", [container]))), "no-host-namespaces")
    assert found[0]["message"] == "container http adds capabilities NET_ADMIN: drop ALL and add none"
    resources = changed("servers")
    pod = find(resources, "servers")["inputs"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["hostNetwork"] = True  # a TPU pod may (multislice DCN)
    assert check(rules, resources) == []


# --- public members, project-level storage roles --------------------------------------------------------


def test_public_members_and_any_project_level_storage_role(rules: ModuleType) -> None:
    found = only(check(rules, changed("writer", ("member", "allUsers"))), "least-privilege-iam")
    assert found[0]["message"] == "member allUsers makes the resource public: grant named principals only"
    found = only(check(rules, changed("log-writer", ("role", "roles/storage.objectAdmin"))), "least-privilege-iam")
    assert found[0]["message"].startswith("roles/storage.objectAdmin on a whole project/folder/organization")


def test_members_preview_cannot_know_are_skipped_the_known_ones_checked(rules: ModuleType) -> None:
    """A new stack's IAM members are unknown until their accounts exist; they are never public, so the policy
    passes over them (no "can't run" note) and still checks every member it can read."""
    binding = res(
        "gcp:storage/bucketIAMBinding:BucketIAMBinding",
        "readers",
        {"bucket": "b", "role": "roles/storage.objectViewer", "members": ["[unknown]", "allUsers"]},
    )
    member = res("gcp:storage/bucketIAMMember:BucketIAMMember", "writer-new",
                 {"bucket": "b", "role": "roles/storage.objectUser", "member": "[unknown]"})  # fmt: skip
    found = [v for v in check(rules, [binding, member]) if v["policy"] == "least-privilege-iam"]
    assert [(v["urn"].rsplit("::", 1)[1], v["message"]) for v in found] == [
        ("readers", "member allUsers makes the resource public: grant named principals only")
    ]


# --- cluster-network, default-deny-network-policy -------------------------------------------------------


def test_dataplane_v2_and_in_prod_private_nodes_without_ip_endpoint(rules: ModuleType) -> None:
    found = only(check(rules, changed("tpu-dev", ("datapathProvider", None))), "cluster-network")
    assert found[0]["message"].startswith("set datapathProvider ADVANCED_DATAPATH")
    prod = [r for r in baseline() if r["name"] == "tpu-dev"]
    prod = [{**r, "urn": r["urn"].replace("urn:pulumi:dev", "urn:pulumi:prod")} for r in prod]
    del prod[0]["inputs"]["controlPlaneEndpointsConfig"]  # GKE's default: the IP endpoint on
    messages = [v["message"] for v in check(rules, prod, stack="prod") if v["policy"] == "cluster-network"]
    assert [m.split(":")[0] for m in messages] == [
        "set privateClusterConfig.enablePrivateNodes true",
        "set controlPlaneEndpointsConfig.ipEndpointsConfig.enabled false",
    ]


def namespace(name: str) -> dict[str, Any]:
    return res("kubernetes:core/v1:Namespace", f"ns-{name}", {"kind": "Namespace", "metadata": {"name": name}})


def network_policy(namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": "p", "namespace": namespace}
    return res("kubernetes:networking.k8s.io/v1:NetworkPolicy", f"np-{namespace}", {"metadata": meta, "spec": spec})


def test_every_created_namespace_has_a_default_deny(rules: ModuleType) -> None:
    deny = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    assert check(rules, [*baseline(), namespace("saxml"), network_policy("saxml", deny)]) == []
    ingress_only = {"podSelector": {}, "policyTypes": ["Ingress"]}
    found = only(check(rules, [*baseline(), namespace("saxml"), network_policy("saxml", ingress_only)]),
                 "default-deny-network-policy")  # fmt: skip
    assert found[0]["message"].startswith("namespace saxml has no default-deny NetworkPolicy")


# --- idle-tpu-capacity (issue 27, defect 8) --------------------------------------------------------------


def orphan(**inputs: Any) -> dict[str, Any]:
    """A fixed 4x4 Trillium slice (4 VMs) with a label of its own: no baseline workload or flavor selects it."""
    return pool("orphan", "ct6e-standard-4t", nodeCount=4, placementPolicy={"tpuTopology": "4x4", "type": ""},
                nodeConfig={"labels": {"pool": "orphan"}}, **inputs)  # fmt: skip


def test_a_fixed_slice_nothing_runs_on_is_billed_while_idle(rules: ModuleType) -> None:
    found = only(check(rules, [*baseline(), orphan()]), "idle-tpu-capacity")
    assert found == [
        {
            "policy": "idle-tpu-capacity",
            "level": "advisory",
            "urn": "urn:pulumi:dev::tpu-stack::gcp:container/nodePool:NodePool::orphan",
            "message": "node pool(s) 'orphan': 4 TPU VM(s) of fixed size that no Kueue flavor and no server of the "
            "stack runs on, billed while idle; set scaleToZero on the pool group, or remove it",
        }
    ]


def test_servers_holding_fewer_vms_than_their_pools_leave_the_rest_billed_while_idle(rules: ModuleType) -> None:
    """llm's shape before the fix: three single-host slices for replicas that hold two of them."""
    resources = changed("llm", ("spec.replicas", 2))
    (found,) = only(check(rules, resources), "idle-tpu-capacity")
    assert found["urn"].endswith("::single")
    assert found["message"] == (
        "node pool(s) 'single': 3 TPU VM(s) of fixed size, and what runs there at rest (Deployment 'llm') holds 2: "
        "1 billed while idle; set scaleToZero on the pool group (a spare slice is then created only while a rollout "
        "needs it)"
    )


@pytest.mark.parametrize(
    "inputs",
    [
        {"nodeCount": None, "initialNodeCount": 0, "autoscaling": {"minNodeCount": 0, "maxNodeCount": 4}},
        {"nodeConfig": {"reservationAffinity": {"consumeReservationType": "SPECIFIC_RESERVATION",
                                                "key": "compute.googleapis.com/reservation-name", "values": ["r"]}}},
    ],
    ids=["scales-to-zero", "reserved"],
)  # fmt: skip
def test_slices_that_scale_to_zero_or_are_reserved_anyway_are_not_idle_capacity(
    rules: ModuleType, inputs: dict[str, Any]
) -> None:
    slice_ = orphan()
    for path, value in inputs.items():
        put(slice_, path, {**slice_["inputs"].get(path, {}), **value} if isinstance(value, dict) else value)
    assert check(rules, [*baseline(), slice_]) == []


def test_a_fixed_slice_a_kueue_flavor_runs_on_is_queue_capacity(rules: ModuleType) -> None:
    resources = [*baseline(), orphan(), flavor("orphan", {"pool": "orphan"}), cluster_queue("orphans", {"orphan": 16})]
    assert check(rules, resources) == []


# --- kueue-quota-within-chips ----------------------------------------------------------------------------


def test_quota_may_not_exceed_the_chips_of_matching_pools(rules: ModuleType) -> None:
    resources = baseline()  # flex: 1 pool x 2 VMs x 4 chips = 8 chips, quota 8
    resources.append(cluster_queue("other", {"flex": 4}))
    found = only(check(rules, resources), "kueue-quota-within-chips")
    assert found == [
        {
            "policy": "kueue-quota-within-chips",
            "level": "mandatory",
            "urn": "urn:pulumi:dev::tpu-stack::kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor::flavor-flex",
            "message": "ResourceFlavor 'flex': queues hold 12 google.com/tpu nominal quota but the 1 matching node "
            "pool(s) provide 8 chips; lower the ClusterQueue nominalQuota or add slices",
        }
    ]


def string_quota(name: str, amount: str) -> dict[str, Any]:
    """A ClusterQueue whose google.com/tpu quota is written as a string, which the API server accepts."""
    queue = cluster_queue(name, {"flex": 0})
    queue["inputs"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = amount
    return queue


@pytest.mark.parametrize(("amount", "total"), [("16", "24"), ("16.0", "24"), ("0.016k", "24"), ("16000m", "24")])
def test_a_quota_written_as_a_quantity_string_still_counts(rules: ModuleType, amount: str, total: str) -> None:
    """The baseline's queue holds 8 of flex's 8 chips; "16" more as a string makes 24."""
    found = only(check(rules, [*baseline(), string_quota("strings", amount)]), "kueue-quota-within-chips")
    assert [v["message"] for v in found] == [
        f"ResourceFlavor 'flex': queues hold {total} google.com/tpu nominal quota but the 1 matching node "
        "pool(s) provide 8 chips; lower the ClusterQueue nominalQuota or add slices"
    ]


def test_a_quota_string_that_is_not_a_quantity_is_a_violation(rules: ModuleType) -> None:
    found = only(check(rules, [*baseline(), string_quota("words", "sixteen")]), "kueue-quota-within-chips")
    assert found == [
        {
            "policy": "kueue-quota-within-chips",
            "level": "mandatory",
            "urn": "urn:pulumi:dev::tpu-stack::kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue::clusterqueue-words",
            "message": "ClusterQueue 'clusterqueue-words': nominalQuota 'sixteen' of google.com/tpu in flavor 'flex' "
            "is not a quantity; write the chips as a number, e.g. 16",
        }
    ]


def test_a_quota_string_within_the_chips_passes(rules: ModuleType) -> None:
    resources = baseline()
    find(resources, "clusterqueue-team")["inputs"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0][
        "nominalQuota"
    ] = "8"
    assert check(rules, resources) == []


def test_cohort_quota_counts_beside_the_cluster_queues(rules: ModuleType) -> None:
    """Kueue lends a Cohort's own nominalQuota to its ClusterQueues: it is admitted capacity like theirs."""
    resources = baseline()  # flex: 2 VMs x 4 chips = 8 chips, ClusterQueue 'team' holds 8
    resources.append(cluster_queue("tpu-stack", {"flex": 4}, kind="Cohort"))
    found = only(check(rules, resources), "kueue-quota-within-chips")
    assert [v["message"] for v in found] == [
        "ResourceFlavor 'flex': queues hold 12 google.com/tpu nominal quota but the 1 matching node pool(s) provide "
        "8 chips; lower the ClusterQueue nominalQuota or add slices"
    ]
    alone = [r for r in baseline() if r["name"] != "clusterqueue-team"]
    alone.append(cluster_queue("tpu-stack", {"flex": 9}, kind="Cohort"))
    assert "queues hold 9 google.com/tpu" in only(check(rules, alone), "kueue-quota-within-chips")[0]["message"]
    alone[-1] = cluster_queue("tpu-stack", {"flex": 8}, kind="Cohort")
    assert check(rules, alone) == []


def test_per_zone_autoscaling_maximum_counts_once_per_zone(rules: ModuleType) -> None:
    """autoscaling.maxNodeCount is per zone (gcloud --max-nodes): a single-host pool over 3 zones with max 2
    holds 3 x 2 = 6 VMs of ct6e-standard-4t, 6 x 4 = 24 chips."""
    zones = ["us-central1-a", "us-central1-b", "us-central1-c"]
    wide = pool("wide", "ct6e-standard-4t", autoscaling={"minNodeCount": 0, "maxNodeCount": 2}, nodeLocations=zones)
    labels = {"cloud.google.com/gke-nodepool": "wide"}
    resources = [*baseline(), wide, flavor("wide", labels), cluster_queue("wide", {"wide": 24})]
    assert check(rules, resources) == []
    resources[-1] = cluster_queue("wide", {"wide": 25})
    assert "provide 24 chips" in only(check(rules, resources), "kueue-quota-within-chips")[0]["message"]


def test_pool_labels_come_from_the_catalog_provisioning_mode_and_the_pool(rules: ModuleType) -> None:
    resources = baseline()
    flex_labels = {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
        "cloud.google.com/gke-flex-start": "true",
    }
    resources.append(flavor("all-2x4-flex", flex_labels))
    resources.append(cluster_queue("cohort", {"all-2x4-flex": 8}, kind="Cohort"))
    resources.append(flavor("v6e", {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "team": "a"}))
    resources.append(cluster_queue("v6e", {"v6e": 24}))
    found = only(check(rules, resources), "kueue-quota-within-chips")
    assert [v["urn"].rsplit("::", 1)[1] for v in found] == ["flavor-v6e"]
    assert "0 matching node pool(s) provide 0 chips" in found[0]["message"]
    put(find(resources, "single"), "nodeConfig.labels", {"team": "a"})  # 3 single-host VMs x 8 chips
    assert check(rules, resources) == []


QUEUED_TOLERATION = {"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"}


def tolerating(resource: dict[str, Any], *tolerations: dict[str, str]) -> dict[str, Any]:
    resource["inputs"]["spec"]["tolerations"] = list(tolerations)
    return resource


def test_queued_pools_count_total_max_nodes_and_autopilot_flavors_are_skipped(rules: ModuleType) -> None:
    resources = baseline()
    resources.append(tolerating(flavor("burst", {"cloud.google.com/gke-nodepool": "burst"}), QUEUED_TOLERATION))
    resources.append(cluster_queue("burst", {"burst": 9}))
    # (The queue also runs no ProvisioningRequest check: queued-flavors-provision's, test_guardrails_kueue.py.)
    quota = [v for v in check(rules, resources) if v["policy"] == "kueue-quota-within-chips"]
    assert "provide 8 chips" in quota[0]["message"]
    autopilot = [
        res("gcp:container/cluster:Cluster", "ap", {"enableAutopilot": True, "resourceLabels": LABELS}),
        flavor("v5e-2x4", {"cloud.google.com/gke-tpu-topology": "2x4"}),
        cluster_queue("ap", {"v5e-2x4": 16}),
    ]
    assert [v for v in check(rules, autopilot) if v["policy"] == "kueue-quota-within-chips"] == []


def test_a_flavor_is_backed_only_by_pools_whose_taints_it_tolerates(rules: ModuleType) -> None:
    """GKE taints queued-provisioning nodes (cloud.google.com/gke-queued): pods of a flavor without that toleration
    never run on the queued pool, so its chips back no quota of that flavor."""
    resources = baseline()
    resources.append(flavor("burst", {"cloud.google.com/gke-nodepool": "burst"}))
    resources.append(cluster_queue("burst", {"burst": 8}))
    assert [v["message"] for v in only(check(rules, resources), "kueue-quota-within-chips")] == [
        "ResourceFlavor 'burst': queues hold 8 google.com/tpu nominal quota but the 0 matching node pool(s) provide "
        "0 chips; lower the ClusterQueue nominalQuota or add slices"
    ]


V5E_4X4 = {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice", "cloud.google.com/gke-tpu-topology": "4x4"}
SPOT_TAINT = {"key": "cloud.google.com/gke-spot", "value": "true", "effect": "NO_SCHEDULE"}
SPOT_TOLERATION = {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def ladder_rungs() -> list[dict[str, Any]]:
    """A ladder of v5e 4x4 slices (4 VMs, 16 chips each) as prod and dev declare one: two reserved slices, a queued
    slice (tainted by GKE), two spot slices tainted by the pool; the rungs' flavors share the shape labels."""
    reserved = [pool(f"train-{i}", nodeCount=4, placementPolicy={"tpuTopology": "4x4", "type": ""}) for i in (0, 1)]
    queued = pool(
        "burst-4x4",
        initialNodeCount=0,
        queuedProvisioning={"enabled": True},
        nodeConfig={"flexStart": True, "reservationAffinity": {"consumeReservationType": "NO_RESERVATION"}},
        autoscaling={"totalMaxNodeCount": 4, "locationPolicy": "ANY"},
        management={"autoRepair": False},
        placementPolicy={"tpuTopology": "4x4", "type": ""},
    )
    spot = [
        pool(f"spot-{i}", nodeCount=4, nodeConfig={"spot": True, "taints": [SPOT_TAINT]},
             placementPolicy={"tpuTopology": "4x4", "type": ""})
        for i in (0, 1)
    ]  # fmt: skip
    return [*reserved, queued, *spot]


def test_each_rung_of_a_ladder_is_held_to_its_own_pools(rules: ModuleType) -> None:
    """The reservation rung's flavor (shape labels only) matches the labels of every 4x4 pool, but its pods tolerate
    neither the queued nor the spot taint: only the 2 reserved slices (32 chips) back it, not all 80."""
    resources = [*baseline(), *ladder_rungs()]
    resources.append(flavor("train", V5E_4X4))
    resources.append(tolerating(flavor("burst-4x4", {**V5E_4X4, "cloud.google.com/gke-flex-start": "true"}),
                                QUEUED_TOLERATION))  # fmt: skip
    resources.append(tolerating(flavor("spot", {**V5E_4X4, "cloud.google.com/gke-spot": "true"}), SPOT_TOLERATION))
    resources.append(cluster_queue("rungs", {"train": 32, "burst-4x4": 16, "spot": 32}))
    assert [v for v in check(rules, resources) if v["policy"] == "kueue-quota-within-chips"] == []
    resources.append(cluster_queue("more", {"train": 8}))
    quota = [v for v in check(rules, resources) if v["policy"] == "kueue-quota-within-chips"]
    assert [v["message"] for v in quota] == [
        "ResourceFlavor 'train': queues hold 40 google.com/tpu nominal quota but the 2 matching node pool(s) provide "
        "32 chips; lower the ClusterQueue nominalQuota or add slices"
    ]


# --- kueue-quota-within-chips, per cluster (MultiKueue: a manager and workers in one stack) ---------------
# Where each object lives is what the engine tells stack policies: a Kubernetes object's provider (its URN, which
# the pack finds among the stack's resources) depends on the GKE cluster its kubeconfig is made from, and a node
# pool depends on the cluster it names.

V5E_2X4_FLEX = {"cloud.google.com/gke-tpu-topology": "2x4", "cloud.google.com/gke-flex-start": "true"}
V5E_4X4_FLEX = {"cloud.google.com/gke-tpu-topology": "4x4", "cloud.google.com/gke-flex-start": "true"}
MULTIKUEUE_CHECK = {
    "controllerName": "kueue.x-k8s.io/multikueue",
    "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "multikueue"},
}


def gke_cluster(name: str) -> list[dict[str, Any]]:
    """A cluster as the baseline declares one, and the kubernetes provider made from its kubeconfig."""
    cluster = copy.deepcopy(find(baseline(), "tpu-dev"))
    cluster.update(res("gcp:container/cluster:Cluster", name, {**cluster["inputs"], "name": name}))
    provider = res("pulumi:providers:kubernetes", f"{name}-k8s", {"kubeconfig": "[secret]"})
    provider["dependencies"] = [cluster["urn"]]
    return [cluster, provider]


def slices(cluster: str, name: str, topology: str, vms: int) -> dict[str, Any]:
    """A flex-start pool of `vms` v5e VMs (4 chips each) in `cluster`; node pool names are unique per cluster only."""
    node_pool = flex_pool(name, topology, vms)
    node_pool.update(res("gcp:container/nodePool:NodePool", f"{cluster}-{name}", node_pool["inputs"]))
    node_pool["inputs"]["cluster"] = cluster
    node_pool["dependencies"] = [f"urn:pulumi:dev::tpu-stack::gcp:container/cluster:Cluster::{cluster}"]
    return node_pool


def in_cluster(cluster: str, resource: dict[str, Any]) -> dict[str, Any]:
    """`resource` written by `cluster`'s provider, its Pulumi name prefixed (the same object is in every cluster)."""
    placed = res(resource["type"], f"{cluster}-{resource['name']}", resource["inputs"])
    placed["provider"] = f"urn:pulumi:dev::tpu-stack::pulumi:providers:kubernetes::{cluster}-k8s"
    return placed


def quota_violations(rules: ModuleType, resources: list[dict[str, Any]]) -> list[tuple[str, str]]:
    found = check(rules, resources)
    assert [v for v in found if v["policy"] != "kueue-quota-within-chips"] == []
    return [(v["urn"].rsplit("::", 1)[1], v["message"]) for v in found]


def test_same_named_flavors_of_two_clusters_count_their_own_clusters_pools(rules: ModuleType) -> None:
    """Each region has the shape it has: tpu-east's 'flex' is one v5e 2x4 slice (2 VMs, 8 chips), tpu-west's 'flex'
    one 4x4 slice (4 VMs, 16 chips), and each cluster's queue holds all of its own. Mixed by name, 'flex' would
    hold 8 + 16 = 24 chips against 8 (east) or 16 (west) matching chips."""
    resources = [
        *gke_cluster("tpu-east"), slices("tpu-east", "flex", "2x4", 2),
        in_cluster("tpu-east", flavor("flex", V5E_2X4_FLEX)),
        in_cluster("tpu-east", cluster_queue("team", {"flex": 8})),
        *gke_cluster("tpu-west"), slices("tpu-west", "flex", "4x4", 4),
        in_cluster("tpu-west", flavor("flex", V5E_4X4_FLEX)),
        in_cluster("tpu-west", cluster_queue("team", {"flex": 16})),
    ]  # fmt: skip
    assert quota_violations(rules, resources) == []
    # One chip more in the west is the west's violation alone.
    resources[-1] = in_cluster("tpu-west", cluster_queue("team", {"flex": 17}))
    assert quota_violations(rules, resources) == [
        ("tpu-west-flavor-flex", "ResourceFlavor 'flex': queues hold 17 google.com/tpu nominal quota but the 1 "
         "matching node pool(s) provide 16 chips; lower the ClusterQueue nominalQuota or add slices"),
    ]  # fmt: skip


def test_a_workers_quota_beyond_its_own_pools_is_not_covered_by_another_clusters(rules: ModuleType) -> None:
    """Both workers have a v5e 2x4 flex-start slice (8 chips) and a flavor whose labels match both; tpu-east's queues
    hold 16. Kueue on tpu-east admits against tpu-east's nodes only: 16 > 8, whatever tpu-west has idle."""
    resources = [
        *gke_cluster("tpu-east"), slices("tpu-east", "flex", "2x4", 2),
        in_cluster("tpu-east", flavor("flex", V5E_2X4_FLEX)),
        in_cluster("tpu-east", cluster_queue("team", {"flex": 16})),
        *gke_cluster("tpu-west"), slices("tpu-west", "flex", "2x4", 2),
        in_cluster("tpu-west", flavor("flex", V5E_2X4_FLEX)),
        in_cluster("tpu-west", cluster_queue("team", {"flex": 0})),
    ]  # fmt: skip
    assert quota_violations(rules, resources) == [
        ("tpu-east-flavor-flex", "ResourceFlavor 'flex': queues hold 16 google.com/tpu nominal quota but the 1 "
         "matching node pool(s) provide 8 chips; lower the ClusterQueue nominalQuota or add slices"),
    ]  # fmt: skip


def manager_and_workers(quota: int) -> list[dict[str, Any]]:
    """A MultiKueue manager (an AdmissionCheck of the MultiKueue controller, no TPU pools) over tpu-east (two v5e
    2x4 flex-start slices: 16 chips) and tpu-west (one 2x4 slice, 8 chips; one 4x4 slice, 16 chips). The manager's
    'v5e-2x4' flavor holds `quota`, its 'v5e-4x4' 16; each worker's queues hold their own pools' chips."""
    manager = [
        *gke_cluster("tpu-manager"),
        in_cluster("tpu-manager", res("kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck", "admissioncheck-multikueue",
                                      {"kind": "AdmissionCheck", "metadata": {"name": "multikueue"},
                                       "spec": MULTIKUEUE_CHECK})),
        in_cluster("tpu-manager", flavor("v5e-2x4", V5E_2X4_FLEX)),
        in_cluster("tpu-manager", flavor("v5e-4x4", V5E_4X4_FLEX)),
        in_cluster("tpu-manager", cluster_queue("team", {"v5e-2x4": quota, "v5e-4x4": 16})),
    ]  # fmt: skip
    east = [
        *gke_cluster("tpu-east"), slices("tpu-east", "flex-0", "2x4", 2), slices("tpu-east", "flex-1", "2x4", 2),
        in_cluster("tpu-east", flavor("v5e-2x4", V5E_2X4_FLEX)),
        in_cluster("tpu-east", cluster_queue("team", {"v5e-2x4": 16})),
    ]  # fmt: skip
    west = [
        *gke_cluster("tpu-west"), slices("tpu-west", "flex", "2x4", 2), slices("tpu-west", "flex-4x4", "4x4", 4),
        in_cluster("tpu-west", flavor("v5e-2x4", V5E_2X4_FLEX)),
        in_cluster("tpu-west", flavor("v5e-4x4", V5E_4X4_FLEX)),
        in_cluster("tpu-west", cluster_queue("team", {"v5e-2x4": 8, "v5e-4x4": 16})),
    ]  # fmt: skip
    return [*manager, *east, *west]


def test_a_managers_flavors_count_every_workers_pools(rules: ModuleType) -> None:
    """The manager admits only what a worker admits, so its 'v5e-2x4' may hold the 2x4 slices of both workers:
    16 + 8 = 24 chips (3 node pools), and its 'v5e-4x4' tpu-west's 16 (the 4x4 pool only: the topology label)."""
    assert quota_violations(rules, manager_and_workers(24)) == []
    assert quota_violations(rules, manager_and_workers(25)) == [
        ("tpu-manager-flavor-v5e-2x4", "ResourceFlavor 'v5e-2x4': queues hold 25 google.com/tpu nominal quota but "
         "the 3 matching node pool(s) provide 24 chips; lower the ClusterQueue nominalQuota or add slices"),
    ]  # fmt: skip


def test_without_its_multikueue_check_a_cluster_counts_only_its_own_pools(rules: ModuleType) -> None:
    """The same manager without the MultiKueue AdmissionCheck is a cluster with no TPU pools: its flavors are backed
    by nothing, so any quota there is a violation."""
    resources = [r for r in manager_and_workers(8) if r["name"] != "tpu-manager-admissioncheck-multikueue"]
    assert quota_violations(rules, resources) == [
        ("tpu-manager-flavor-v5e-2x4", "ResourceFlavor 'v5e-2x4': queues hold 8 google.com/tpu nominal quota but the "
         "0 matching node pool(s) provide 0 chips; lower the ClusterQueue nominalQuota or add slices"),
        ("tpu-manager-flavor-v5e-4x4", "ResourceFlavor 'v5e-4x4': queues hold 16 google.com/tpu nominal quota but "
         "the 0 matching node pool(s) provide 0 chips; lower the ClusterQueue nominalQuota or add slices"),
    ]  # fmt: skip


# --- kueue-ladder-cost-order with slices that scale to zero (issue 27, defect 8) -----------------------------


def zero_and_fixed_rungs(order: tuple[str, str]) -> list[dict[str, Any]]:
    """A spot 4x4 slice that scales to zero (made on request like flex-start: nothing bills while idle) and a fixed
    on-demand 4x4 slice (billed while idle), rungs of ladder `l` in `order`."""
    shape = {"tpuTopology": "4x4", "type": ""}
    zero = pool("spot-zero", initialNodeCount=0, autoscaling={"minNodeCount": 0, "maxNodeCount": 4},
                nodeConfig={"spot": True, "labels": {"pool": "spot-zero"}}, placementPolicy=shape)  # fmt: skip
    fixed = pool("od-fixed", nodeCount=4, nodeConfig={"labels": {"pool": "od-fixed"}}, placementPolicy=shape)
    return [*baseline(), zero, fixed, *(rung(name, "l", place) for place, name in enumerate(order))]


def test_a_slice_that_scales_to_zero_is_a_rung_made_on_request(rules: ModuleType) -> None:
    assert check(rules, zero_and_fixed_rungs(("od-fixed", "spot-zero"))) == []
    (found,) = only(check(rules, zero_and_fixed_rungs(("spot-zero", "od-fixed"))), "kueue-ladder-cost-order")
    assert found["message"] == (
        "ResourceFlavor 'spot-zero' is rung 0 of ladder 'l', made on request, before 'od-fixed', which bills while "
        "idle: put the billed rung first"
    )


# --- kueue-ladder-order ----------------------------------------------------------------------------------


def rung(name: str, ladder: str, place: int) -> dict[str, Any]:
    resource = flavor(name, {**V5E_4X4, "pool": name})
    resource["inputs"]["metadata"]["labels"] = {"tpu-stack/ladder": ladder, "tpu-stack/rung": str(place)}
    return resource


TRY_NEXT = {
    "whenCanBorrow": "TryNextFlavor",
    "whenCanPreempt": "TryNextFlavor",
    "preference": "PreemptionOverBorrowing",
}


def laddered_queue(name: str, flavors: list[str], fungibility: dict[str, str] | None = None) -> dict[str, Any]:
    queue = cluster_queue(name, dict.fromkeys(flavors, 0))
    if fungibility is not None:
        queue["inputs"]["spec"]["flavorFungibility"] = fungibility
    return queue


def test_a_ladder_is_listed_whole_in_ladder_order_and_tries_the_next_rung(rules: ModuleType) -> None:
    rungs = [rung("reserved", "v5e", 0), rung("queued", "v5e", 1), rung("spot", "v5e", 2)]
    good = laddered_queue("good", ["flex", "reserved", "queued", "spot"], TRY_NEXT)
    assert check(rules, [*baseline(), *rungs, good]) == []
    queues = [
        laddered_queue("swapped", ["queued", "reserved", "spot"], TRY_NEXT),
        laddered_queue("short", ["reserved", "spot"], TRY_NEXT),
        laddered_queue("defaults", ["reserved", "queued", "spot"]),
        # Kueue's default preference (BorrowingOverPreemption) would send an owner to borrow a later rung while
        # others hold its own earlier one (flavorassigner.go isPreferred).
        laddered_queue(
            "borrows", ["reserved", "queued", "spot"], {**TRY_NEXT, "preference": "BorrowingOverPreemption"}
        ),
        laddered_queue(
            "unset",
            ["reserved", "queued", "spot"],
            {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"},
        ),
    ]
    split = laddered_queue("split", ["reserved"], TRY_NEXT)
    split["inputs"]["spec"]["resourceGroups"].append({"flavors": [{"name": "queued"}, {"name": "spot"}]})
    found = only(check(rules, [*baseline(), *rungs, *queues, split]), "kueue-ladder-order")
    assert [(v["urn"].rsplit("::", 1)[1], v["message"]) for v in found] == [
        ("clusterqueue-swapped", "ClusterQueue 'swapped' lists the flavors of ladder 'v5e' as queued, reserved, spot; "
         "list reserved, queued, spot in that order, in one resource group"),
        ("clusterqueue-short", "ClusterQueue 'short' lists the flavors of ladder 'v5e' as reserved, spot; list "
         "reserved, queued, spot in that order, in one resource group"),
        ("clusterqueue-defaults", "ClusterQueue 'defaults' lists ladder 'v5e' but would stop at a rung it fits only "
         "by borrowing or preempting; set flavorFungibility whenCanBorrow and whenCanPreempt to TryNextFlavor"),
        ("clusterqueue-borrows", "ClusterQueue 'borrows' lists ladder 'v5e' but would borrow on a later rung rather "
         "than take back its own quota on an earlier one; set flavorFungibility preference to PreemptionOverBorrowing"),
        ("clusterqueue-unset", "ClusterQueue 'unset' lists ladder 'v5e' but would borrow on a later rung rather "
         "than take back its own quota on an earlier one; set flavorFungibility preference to PreemptionOverBorrowing"),
        ("clusterqueue-split", "ClusterQueue 'split' lists the flavors of ladder 'v5e' as reserved, queued, spot; list "
         "reserved, queued, spot in that order, in one resource group"),
    ]  # fmt: skip


def deployed_and_idle(resources: list[dict[str, Any]], view: policy_check.View) -> list[dict[str, Any]]:
    return policy_check.evaluate(resources, stack="dev", view=view)


@pytest.mark.parametrize("view", policy_check.VIEWS, ids=lambda view: view.name)
def test_an_autoscaled_pool_provides_its_autoscaling_maximum_in_every_view(view: policy_check.View) -> None:
    """A deployed idle flex pool reads back nodeCount 0 and totalMaxNodeCount 0; its capacity is still its
    maxNodeCount: 2 VMs x 4 chips = 8 chips in its one zone."""
    resources = baseline()
    quota = [v for v in deployed_and_idle(resources, view) if v["policy"] == "kueue-quota-within-chips"]
    assert quota == []
    resources.append(cluster_queue("other", {"flex": 4}))
    quota = [v for v in deployed_and_idle(resources, view) if v["policy"] == "kueue-quota-within-chips"]
    assert [v["message"] for v in quota] == [
        "ResourceFlavor 'flex': queues hold 12 google.com/tpu nominal quota but the 1 matching node pool(s) "
        "provide 8 chips; lower the ClusterQueue nominalQuota or add slices"
    ]


def test_a_per_zone_maximum_counts_once_per_zone(rules: ModuleType) -> None:
    """maxNodeCount is per zone (gcloud --max-nodes): 2 VMs in each of 2 zones = 4 VMs x 4 chips = 16 chips."""
    resources = baseline()
    put(find(resources, "flex"), "nodeLocations", ["us-central1-a", "us-central1-b"])
    resources.append(cluster_queue("other", {"flex": 8}))  # 8 + 8 = 16: fits two zones, not one
    assert [v for v in check(rules, resources) if v["policy"] == "kueue-quota-within-chips"] == []
    resources.append(cluster_queue("more", {"flex": 1}))
    (found,) = [v for v in check(rules, resources) if v["policy"] == "kueue-quota-within-chips"]
    assert (
        "queues hold 17 google.com/tpu nominal quota but the 1 matching node pool(s) provide 16 chips"
        in (found["message"])
    )


# --- images-by-digest ------------------------------------------------------------------------------------

SAX_MODEL = "us-docker.pkg.dev/x/sax-model-server:v1.1.0"


def test_a_protected_stack_runs_images_by_digest_only(rules: ModuleType) -> None:
    """The baseline's model server is tag-pinned: fine in dev, a violation in prod (protected by default)."""
    assert check(rules, baseline()) == []
    found = only(check(rules, prod(baseline(), digests=False), stack="prod"), "images-by-digest")
    assert found == [
        {
            "policy": "images-by-digest",
            "level": "mandatory",
            "urn": "urn:pulumi:prod::tpu-stack::kubernetes:jobset.x-k8s.io/v1alpha2:JobSet::servers",
            "message": f"container 'model-server': image '{SAX_MODEL}' is not pinned by digest and stack 'prod' is "
            "protected: append @sha256:<digest>, or list the image with its reason under images-by-digest.exceptions "
            "in the policy config",
        }
    ]


def test_a_reviewed_exception_with_a_reason_excuses_its_image_only(rules: ModuleType) -> None:
    excepted = {"images-by-digest": {"exceptions": [{"image": SAX_MODEL, "reason": "no digest published yet"}]}}
    assert check(rules, prod(baseline(), digests=False), stack="prod", config=excepted) == []
    no_reason = {"images-by-digest": {"exceptions": [{"image": SAX_MODEL, "reason": " "}]}}
    assert only(check(rules, prod(baseline(), digests=False), stack="prod", config=no_reason), "images-by-digest")
    other = {"images-by-digest": {"exceptions": [{"image": SAX_MODEL.replace("v1.1.0", "v1.0.0"), "reason": "x"}]}}
    assert only(check(rules, prod(baseline(), digests=False), stack="prod", config=other), "images-by-digest")


def model_server(image: str) -> list[dict[str, Any]]:
    """The baseline's model-server job (one server on the 8 VMs of `serve`) with another image."""
    tpu = {"requests": {"google.com/tpu": 4}, "limits": {"google.com/tpu": 4}}
    container = {"name": "model-server", "image": image, "resources": tpu}
    return [{"name": "server", "template": {"spec": {"parallelism": 8, **serving_pod(container, "4x8")}}}]


@pytest.mark.parametrize(
    "image",
    [f"{SAX_MODEL}@sha256:" + "0" * 63, f"{SAX_MODEL}@sha256:" + "A" * 64, f"{SAX_MODEL}@sha512:" + "0" * 64],
)
def test_only_a_full_sha256_digest_pins(rules: ModuleType, image: str) -> None:
    resources = prod(baseline(), digests=False)
    put(find(resources, "servers"), "spec.replicatedJobs", model_server(image))
    assert only(check(rules, resources, stack="prod"), "images-by-digest")
    put(find(resources, "servers"), "spec.replicatedJobs", model_server(f"{SAX_MODEL}@sha256:" + "0" * 64))
    assert check(rules, resources, stack="prod") == []


def test_policy_config_adds_stacks_that_need_digests_and_removes_none(rules: ModuleType) -> None:
    """`protectedStacks` lists more stacks; prod, which the program protects by its name, still needs digests."""
    config = {"images-by-digest": {"protectedStacks": ["staging"]}}
    assert only(check(rules, prod(baseline(), digests=False), stack="prod", config=config), "images-by-digest")
    staging = baseline()
    for resource in staging:
        resource["urn"] = resource["urn"].replace("urn:pulumi:dev::", "urn:pulumi:staging::")
    assert only(check(rules, staging, stack="staging", config=config), "images-by-digest")


# --- pinned-charts-and-images ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["^0.19.0", "0.19.x", None, ">=0.19.0"])
def test_charts_pin_one_exact_version(rules: ModuleType, version: str | None) -> None:
    found = only(check(rules, changed("kueue", ("version", version))), "pinned-charts-and-images")
    assert "set `version` to one exact release" in found[0]["message"] and found[0]["level"] == "mandatory"


def test_a_chart_without_props_is_checked_through_what_it_renders(rules: ModuleType) -> None:
    """The real engine shows a Helm v4 Chart (a remote component) with no props: no finding on the Chart; the
    version is read from the `helm.sh/chart` label of each rendered object."""

    def pinning(resources: list[dict[str, Any]]) -> list[str]:
        return [v["message"] for v in check(rules, resources) if v["policy"] == "pinned-charts-and-images"]

    resources = baseline()
    find(resources, "kueue")["inputs"] = {}
    assert pinning(resources) == []
    rendered = res("kubernetes:core/v1:ServiceAccount", "kueue-chart:kueue-system/kueue-controller-manager", {
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "kueue-controller-manager", "labels": {"helm.sh/chart": "kueue-0.19.2"}},
    })  # fmt: skip
    assert pinning([*resources, rendered]) == []
    for label in ("kueue-latest", "kueue", "kueue-0.19"):
        put(rendered, "metadata.labels", {"helm.sh/chart": label})
        assert pinning([*resources, rendered]) == [f"rendered from chart {label!r}: pin the chart to one exact release"]
    put(rendered, "metadata.labels", {"helm.sh/chart": "kube-state-metrics-5.27.0-rc.1"})
    assert pinning([*resources, rendered]) == []


@pytest.mark.parametrize(
    ("image", "expected"),
    [("registry/app:latest", "uses :latest"), ("registry:5000/app", "has no tag"), ("app", "has no tag")],
)
def test_images_pin_a_tag_or_digest(rules: ModuleType, image: str, expected: str) -> None:
    resources = changed("http", ("spec.template.spec.containers", [{"name": "http", "image": image}]))
    found = only(check(rules, resources), "pinned-charts-and-images")
    assert f"container 'http': image {image!r} {expected}: pin a version tag or a digest" == found[0]["message"]


# --- protected-stack-resources ---------------------------------------------------------------------------


def prod(resources: list[dict[str, Any]], protect: bool = True, digests: bool = True) -> list[dict[str, Any]]:
    """The baseline as stack `prod`: URNs carry the stack name; with `digests` the model server's image too."""
    if digests:
        server = find(resources, "servers")["inputs"]["spec"]["replicatedJobs"][0]["template"]["spec"]
        server["template"]["spec"]["containers"][0]["image"] = f"{SAX_MODEL}@sha256:" + "0" * 64
    for resource in resources:
        resource["urn"] = resource["urn"].replace("urn:pulumi:dev::", "urn:pulumi:prod::")
        resource["protect"] = protect
    put(find(resources, "tpu-dev"), "deletionProtection", True)
    put(find(resources, "tpu-dev"), "privateClusterConfig.enablePrivateNodes", True)
    put(find(resources, "tpu-dev"), "controlPlaneEndpointsConfig.ipEndpointsConfig.enabled", False)
    return resources


def test_protected_stacks_protect_every_resource(rules: ModuleType) -> None:
    """The engine refuses a protected resource only at its own delete step, after its dependents: a node pool, a
    namespace or a chart left unprotected is deleted by `pulumi destroy` before the protected cluster stops it."""
    assert check(rules, prod(baseline()), stack="prod") == []
    resources = prod(baseline(), protect=False)
    found = only(check(rules, resources, stack="prod"), "protected-stack-resources")
    assert sorted(v["urn"].rsplit("::", 1)[1] for v in found) == sorted(r["name"] for r in resources)
    assert all("ResourceOptions(protect=True)" in v["message"] for v in found)
    resources = prod(baseline())
    find(resources, "flex")["protect"] = False
    found = only(check(rules, resources, stack="prod"), "protected-stack-resources")
    assert [v["urn"].rsplit("::", 1)[1] for v in found] == ["flex"]


def test_calendar_requests_are_protected_too(rules: ModuleType) -> None:
    """A calendar request is retained on delete, but an unprotected one is replaced (a new, irrevocable request is
    submitted) before the engine reaches the protected pools that use it and refuses them."""
    request = res(
        "gcp:compute/futureReservation:FutureReservation", "cal", {"name": "cal", "reservationMode": "CALENDAR"}
    )
    resources = prod([*baseline(), request])
    assert check(rules, resources, stack="prod") == []
    find(resources, "cal")["protect"] = False
    assert [v["urn"].rsplit("::", 1)[1] for v in only(check(rules, resources, stack="prod"),
                                                      "protected-stack-resources")] == ["cal"]  # fmt: skip


def test_the_policy_checks_by_default_every_stack_the_program_protects(rules: ModuleType) -> None:
    """A stack named `production` is protected by the program (components/stacks.py), so the policy checks it."""
    resources = [{**r, "urn": r["urn"].replace("urn:pulumi:dev::", "urn:pulumi:production::")} for r in baseline()]
    everything = check(rules, resources, stack="production")
    # Every policy that applies to protected stacks reads the same list.
    assert {v["policy"] for v in everything} == {"protected-stack-resources", "cluster-network", "images-by-digest"}
    found = [v for v in everything if v["policy"] == "protected-stack-resources"]
    unprotected = "stack 'production' is protected: register this resource with ResourceOptions(protect=True)"
    assert [v["urn"].rsplit("::", 1)[1] for v in found if v["message"] == unprotected] == [r["name"] for r in resources]
    assert [(v["urn"].rsplit("::", 1)[1], v["message"]) for v in found if v["message"] != unprotected] == [
        ("tpu-dev", "stack 'production' is protected: set deletionProtection true on the cluster"),
    ]


@pytest.mark.parametrize(("setting", "policies"), [
    ("true", {"protected-stack-resources", "cluster-network", "images-by-digest"}), ("false", set()), (None, set()),
])  # fmt: skip
def test_a_stack_of_any_name_whose_config_protects_it_is_checked_as_prod(
    rules: ModuleType, setting: str | None, policies: set[str]
) -> None:
    """The CLI hands the pack the stack's config (PULUMI_CONFIG): `tpu-stack:protected: true` makes every policy that
    applies to protected stacks apply to `prod-us` too."""
    resources = [{**r, "urn": r["urn"].replace("urn:pulumi:dev::", "urn:pulumi:prod-us::")} for r in baseline()]
    stack_config = {} if setting is None else {"tpu-stack:protected": setting}
    found = policy_check.evaluate(resources, stack="prod-us", rules=rules, stack_config=stack_config)
    assert {v["policy"] for v in found} == policies


def test_protected_stacks_come_from_policy_config(rules: ModuleType) -> None:
    config = {"protected-stack-resources": {"protectedStacks": ["dev"]}}
    resources = baseline()
    found = only(check(rules, resources, config=config), "protected-stack-resources")
    assert {v["urn"].rsplit("::", 1)[1] for v in found} == {r["name"] for r in resources}


@pytest.mark.parametrize("stack", ["prod", "production", "prod-us"])
@pytest.mark.parametrize("listed", [[], ["staging"]])
def test_policy_config_cannot_take_a_stack_the_program_protects_out_of_the_checks(
    rules: ModuleType, stack: str, listed: list[str]
) -> None:
    """The program protects prod and production by name and prod-us by its key (components/stacks.py): a policy
    config that lists other stacks, or none, still checks them (an unprotected cluster is a violation)."""
    resources = [{**r, "urn": r["urn"].replace("urn:pulumi:dev::", f"urn:pulumi:{stack}::")} for r in baseline()]
    config = {p: {"protectedStacks": listed} for p in ("protected-stack-resources", "cluster-network")}
    stack_config = {"tpu-stack:protected": "true"} if stack == "prod-us" else {}
    found = policy_check.evaluate(resources, stack=stack, config=config, rules=rules, stack_config=stack_config)
    assert {v["urn"].rsplit("::", 1)[1] for v in found if v["policy"] == "protected-stack-resources"} == {
        r["name"] for r in resources
    }


# --- advisory: tpu-node-auto-upgrade, required-labels ----------------------------------------------------


def test_auto_upgrade_on_tpu_pools_is_advisory_without_a_release_channel(rules: ModuleType) -> None:
    found = only(check(rules, changed("serve", ("management", None))), "tpu-node-auto-upgrade")
    assert len(found) == 1 and found[0]["urn"].endswith("::serve")
    assert found[0]["level"] == "advisory" and "set management.autoUpgrade false" in found[0]["message"]


@pytest.mark.parametrize("channel", [{"channel": "REGULAR"}, None])
def test_auto_upgrade_off_on_a_release_channel_is_flagged(rules: ModuleType, channel: dict[str, str] | None) -> None:
    """GKE answers 400 "Auto_upgrade cannot be false when release_channel REGULAR is set"; no channel = REGULAR."""
    found = only(check(rules, changed("tpu-dev", ("releaseChannel", channel))), "tpu-node-auto-upgrade")
    assert [v["urn"].rsplit("::", 1)[1] for v in found] == ["flex", "burst", "serve", "single"]
    assert {v["level"] for v in found} == {"advisory"}
    assert "GKE refuses management.autoUpgrade false in a cluster on release channel REGULAR" in found[0]["message"]


def test_tpu_pools_on_a_channel_without_a_maintenance_policy_are_advised_one(rules: ModuleType) -> None:
    on_channel = [
        {**r, "inputs": {**r["inputs"], "management": {"autoRepair": False, "autoUpgrade": True}}}
        if r["type"] == "gcp:container/nodePool:NodePool"
        else r
        for r in changed("tpu-dev", ("releaseChannel", {"channel": "RAPID"}))
    ]
    found = only(check(rules, on_channel), "tpu-node-auto-upgrade")
    assert [v["urn"].rsplit("::", 1)[1] for v in found] == ["flex", "burst", "serve", "single"]
    assert "give cluster 'tpu-dev' a maintenancePolicy" in found[0]["message"]
    window = {"maintenancePolicy": {"dailyMaintenanceWindow": {"startTime": "03:00"}}}
    held = [{**r, "inputs": {**r["inputs"], **window}} if r["name"] == "tpu-dev" else r for r in on_channel]
    assert check(rules, held) == []


def test_missing_labels_are_advisory(rules: ModuleType) -> None:
    found = only(check(rules, changed("data-bucket", ("labels", {"app": "tpu-stack"}))), "required-labels")
    assert found[0]["level"] == "advisory" and found[0]["message"] == "add label(s) managed-by, env to labels"
    found = only(check(rules, baseline(), config={"required-labels": {"requiredLabels": ["team"]}}), "required-labels")
    assert {v["message"] for v in found} == {
        "add label(s) team to resourceLabels",
        "add label(s) team to labels",
        "add label(s) team to nodeConfig.resourceLabels",
    }


# --- how the pack is evaluated ---------------------------------------------------------------------------


def test_policy_config_levels_override_and_disable(rules: ModuleType) -> None:
    resources = changed("data-bucket", ("labels", {}))
    assert {v["level"] for v in check(rules, resources, config={"required-labels": "mandatory"})} == {"mandatory"}
    assert check(rules, resources, config={"required-labels": {"enforcementLevel": "disabled"}}) == []
    assert check(rules, resources, config={"all": "disabled"}) == []


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"no-such-policy": "mandatory"}, "unknown policies: no-such-policy"),
        ({"required-labels": {"labels": []}}, "unknown config property 'labels'"),
        ({"required-labels": "fatal"}, "enforcement level 'fatal' is not one of"),
    ],
)
def test_a_bad_policy_config_is_an_error(rules: ModuleType, config: dict[str, Any], expected: str) -> None:
    with pytest.raises(policy_check.PolicyConfigError, match=expected):
        check(rules, baseline(), config=config)


def test_a_value_unknown_during_preview_makes_the_policy_advisory_as_under_the_cli(rules: ModuleType) -> None:
    found = check(rules, changed("data-bucket", ("publicAccessPrevention", "[unknown]")))
    assert found == [
        {
            "policy": "bucket-hardening",
            "level": "advisory",
            "urn": "urn:pulumi:dev::tpu-stack::gcp:storage/bucket:Bucket::data-bucket",
            "message": "can't run policy 'bucket-hardening' from policy pack 'tpu-stack' during preview: "
            "string value at .publicAccessPrevention can't be known during preview",
        }
    ]


def test_providers_and_local_components_are_not_analyzed(rules: ModuleType) -> None:
    provider = res("pulumi:providers:kubernetes", "k8s", {"kubeconfig": "[secret]"})
    component = {**res("tpu-stack:index:Bucket", "data", {}), "custom": False}
    component["type"] = "gcp:storage/bucket:Bucket"  # a component that would fail bucket-hardening if analyzed
    assert check(rules, [provider, component]) == []


REFUSED_FOR_THE_PROJECT = {
    "roles/owner",
    "roles/editor",
    "roles/viewer",
    "roles/storage.admin",
    "roles/storage.objectViewer",
}


@pytest.mark.parametrize(
    "role",
    [*sorted(REFUSED_FOR_THE_PROJECT), "roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount"],
)
def test_the_config_refuses_the_node_account_roles_the_pack_refuses(rules: ModuleType, role: str) -> None:
    """The node account's roles are project-level grants: the config refuses them up front for the pack's reason."""
    pack = [
        v["message"]
        for v in check(rules, changed("log-writer", ("role", role)))
        if v["policy"] == "least-privilege-iam"
    ]
    try:
        load({"gcp:project": "proj-1234", "gcp:region": "us-central1",
              "tpu-stack:cluster": {"nodeServiceAccountRoles": [role]}}, stack="dev")  # fmt: skip
        refused: list[str] = []
    except ConfigError as error:
        refused = error.lines
    assert bool(pack) == (role in REFUSED_FOR_THE_PROJECT)
    assert refused == [
        f"tpu-stack:cluster.nodeServiceAccountRoles[0]: {message} (node account roles are granted on the whole project)"
        for message in pack
    ]


# --- kueue-topologies ------------------------------------------------------------------------------------


def topology(name: str, labels: list[str]) -> dict[str, Any]:
    levels = [{"nodeLabel": label} for label in labels]
    return res("kubernetes:kueue.x-k8s.io/v1beta2:Topology", f"topology-{name}", {"metadata": {"name": name},
               "spec": {"levels": levels}})  # fmt: skip


def test_placed_flavors_name_a_declared_topology_with_the_node_last(rules: ModuleType) -> None:
    """Kueue v0.19.2: a ClusterQueue with a TAS flavor whose Topology is missing is inactive (TopologyNotFound); the
    Topology CRD takes kubernetes.io/hostname only as the lowest level."""
    placed = flavor("placed", V5E_4X4)
    placed["inputs"]["spec"]["topologyName"] = "tpu-blocks"
    orphan = flavor("orphan", V5E_4X4)
    orphan["inputs"]["spec"]["topologyName"] = "gone"
    good = topology("tpu-blocks", ["cloud.google.com/gce-topology-block", "kubernetes.io/hostname"])
    upside = topology("upside-down", ["kubernetes.io/hostname", "cloud.google.com/gke-nodepool"])
    without = topology("pools-only", ["cloud.google.com/gke-nodepool"])
    found = only(check(rules, [*baseline(), placed, orphan, good, upside, without]), "kueue-topologies")
    assert [(v["urn"].rsplit("::", 1)[1], v["message"]) for v in found] == [
        ("topology-upside-down", "Topology 'upside-down' has levels ['kubernetes.io/hostname', "
         "'cloud.google.com/gke-nodepool']; kubernetes.io/hostname may only be the last (lowest) level"),
        ("flavor-orphan", "ResourceFlavor 'orphan' names Topology 'gone', which the stack does not declare "
         "(pools-only, tpu-blocks, upside-down): its ClusterQueues would go inactive"),
    ]  # fmt: skip


# --- what an adopted resource keeps (ignoreChanges) ------------------------------------------------------------------


def test_a_slice_that_keeps_its_placement_type_is_not_asked_to_remove_it(rules: ModuleType) -> None:
    """An adopted slice keeps GKE's COMPACT (`placementPolicy.type` in ignoreChanges): the engine sends the kept value
    and shows no diff of it (pulumi step_generator.go processIgnoreChanges before analyzeAll), so the policy's reason
    for its removal does not hold. The same value without the keep is still mandatory."""
    kept = changed("serve", ("placementPolicy.type", "COMPACT"))
    find(kept, "serve")["ignoreChanges"] = ["placementPolicy.type"]
    assert check(rules, kept) == []
    other_path = changed("serve", ("placementPolicy.type", "COMPACT"))
    find(other_path, "serve")["ignoreChanges"] = ["placementPolicy.tpuTopology"]
    (found,) = only(check(rules, other_path), "tpu-topology-and-node-count")
    assert "remove placementPolicy.type ('COMPACT')" in found["message"] and found["level"] == "mandatory"


def test_a_cluster_that_keeps_no_node_config_is_not_asked_for_a_node_account(rules: ModuleType) -> None:
    """An adopted Standard cluster ignores `nodeConfig`, and GKE reports none for it (its nodes are in node pools the
    policy checks one by one): nothing to ask of it. A cluster with no nodeConfig that does not keep it, or that keeps
    one naming the default account, is still refused."""
    kept = changed("tpu-dev", ("nodeConfig", None))
    find(kept, "tpu-dev")["ignoreChanges"] = ["nodeConfig"]
    assert check(rules, kept) == []
    not_kept = changed("tpu-dev", ("nodeConfig", None))
    (found,) = only(check(rules, not_kept), "no-default-compute-service-account")
    assert "set nodeConfig.serviceAccount to a dedicated node service account" in found["message"]
    kept_default = changed("tpu-dev", ("nodeConfig.serviceAccount", "default"))
    find(kept_default, "tpu-dev")["ignoreChanges"] = ["nodeConfig"]
    only(check(rules, kept_default), "no-default-compute-service-account")
