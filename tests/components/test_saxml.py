"""Saxml: the seed's serving scenario derived from the pool config, valid Kubernetes objects, sizing, exposure.

Seed saxml-multihost-tpu: a 175B model (~350 GB) on two ct5lp-hightpu-4t 4x8 slices, model servers as a
JobSet with replicas 2 and parallelism = completions = 8, an admin server, an HTTP server behind a load balancer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from components import jobset_install, tpu_catalog
from components.config.base import ConfigError
from components.config.stack import load
from offline import __main__ as cli
from offline import validate
from offline.engine import Plan, run_program
from offline.vendor import VENDOR
from tests.conftest import BASE, StackRunner
from tests.effects.controllers import crash, disruption, jobset_run
from tests.fixtures import stack_plan
from tests.registration_options import changed_paths, replaced_by, replacement_options

JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE = "kubernetes:core/v1:Service"
KSA = "kubernetes:core/v1:ServiceAccount"
NODE_POOL = "gcp:container/nodePool:NodePool"
BUCKET = "proj-1234-dev-tpu-stack"
SERVE = {"name": "serve", "machineType": "ct5lp-hightpu-4t", "topology": "4x8", "slices": 2, "zone": "us-central1-a"}
MODEL_175B = {"name": "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test", "billionsOfParameters": 175}
CLIENTS = {"sourceRanges": ["10.20.0.0/24"]}
SEED = {"tpu-stack:tpuPools": [SERVE], "tpu-stack:saxml": {"pool": "serve", "model": MODEL_175B, "service": CLIENTS}}


def with_saxml(pool: dict[str, Any] | None = None, **saxml: Any) -> dict[str, Any]:
    return {"tpu-stack:tpuPools": [pool or SERVE], "tpu-stack:saxml": {"pool": "serve", "service": CLIENTS, **saxml}}


def kube(plan: Plan, type_token: str, name: str) -> dict[str, Any]:
    (found,) = [r for r in plan.by_type(type_token) if r["inputs"]["metadata"]["name"] == name]
    return found


def pod_of(plan: Plan) -> dict[str, Any]:
    jobset = kube(plan, JOBSET, "sax-model-server-set-0")["inputs"]
    (job,) = jobset["spec"]["replicatedJobs"]
    pod: dict[str, Any] = job["template"]["spec"]["template"]["spec"]
    return pod


def saxml_objects(plan: Plan) -> list[dict[str, Any]]:
    """The Kubernetes objects the Saxml component declares (itself or through its Workload Identity child)."""
    by_urn = {r["urn"]: r for r in plan.resources}

    def under_saxml(resource: dict[str, Any]) -> bool:
        parent = by_urn.get(resource.get("parent") or "")
        while parent is not None:
            if parent["type"] == "tpu-stack:index:Saxml":
                return True
            parent = by_urn.get(parent.get("parent") or "")
        return False

    return [r for r in plan.resources if r["type"].startswith("kubernetes:") and r["custom"] and under_saxml(r)]


@pytest.fixture(scope="module")
def seed_plan() -> Plan:
    from offline.engine import run_program

    return run_program({**BASE, **SEED}, stack="dev")


# ---- the seed scenario -------------------------------------------------------------------------------------


def test_seed_model_servers_one_per_4x8_slice(seed_plan: Plan) -> None:
    """The seed's JobSet of 2 replicas becomes one JobSet per slice (see the lifetime tests below for why)."""
    for index in (0, 1):
        jobset = kube(seed_plan, JOBSET, f"sax-model-server-set-{index}")["inputs"]
        assert jobset["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
        assert jobset["metadata"]["namespace"] == "saxml"
        annotations = jobset["metadata"]["annotations"]
        assert annotations["alpha.jobset.sigs.k8s.io/exclusive-topology"] == "cloud.google.com/gke-nodepool"
        assert jobset["spec"]["failurePolicy"] == {
            "maxRestarts": 4,
            "rules": [
                {
                    "name": "DisruptionTarget",
                    "action": "RestartJobSetAndIgnoreMaxRestarts",
                    "onJobFailureReasons": ["PodFailurePolicy"],
                }
            ],
        }
        (job,) = jobset["spec"]["replicatedJobs"]
        assert (job["name"], job["replicas"]) == ("sax-model-server", 1)
        spec = job["template"]["spec"]
        assert (spec["parallelism"], spec["completions"], spec["backoffLimit"]) == (8, 8, 0)
        assert spec["podFailurePolicy"] == {
            "rules": [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
        }


def test_seed_model_server_pod(seed_plan: Plan) -> None:
    pod = pod_of(seed_plan)
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "4x8",
    }
    # Off the host network, so the pods act as sax-sa (Workload Identity), not as the node's account.
    assert "hostNetwork" not in pod and "dnsPolicy" not in pod
    assert pod["serviceAccountName"] == "sax-sa"
    assert pod["automountServiceAccountToken"] is False
    # fsGroup: the FUSE sidecar's group (65534), which writes the file cache volume the pod declares.
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}, "fsGroup": 65534}
    (container,) = pod["containers"]
    assert container["image"] == "us-docker.pkg.dev/cloud-tpu-images/inference/sax-model-server:v1.1.0"
    assert container["args"] == [
        "--port=10001",
        "--sax_cell=/sax/test",
        "--platform_chip=tpuv5e",
        "--platform_topology=4x8",
    ]
    assert container["ports"] == [{"containerPort": 10001}, {"containerPort": 8471}]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "privileged": False,
    }
    assert container["env"] == [
        {"name": "SAX_ROOT", "value": f"gs://{BUCKET}/sax-root"},
        {"name": "MEGASCALE_NUM_SLICES", "value": ""},
    ]
    # ct5lp-hightpu-4t: 112 vCPU / 192 GiB less the kernel's 2%, GKE's reservations (350m, 10776 MiB + 100 MiB
    # eviction), GKE's DaemonSets (1000m, 2048Mi) and the FUSE sidecar (250m, 256Mi); see test_workloads.
    assert container["resources"] == {
        "requests": {"google.com/tpu": 4, "cpu": "110400m", "memory": "179495Mi"},
        "limits": {"google.com/tpu": 4, "memory": "181543Mi"},
    }


def test_seed_slices_are_the_tutorials_node_pools(seed_plan: Plan) -> None:
    """gcloud container node-pools create tpu1|tpu2 --machine-type=ct5lp-hightpu-4t --tpu-topology=4x8 --num-nodes=8"""
    pools = [p["inputs"] for p in seed_plan.by_type(NODE_POOL) if p["name"].startswith("serve-")]
    shapes = [(p["name"], p["nodeConfig"]["machineType"], p["placementPolicy"]["tpuTopology"], p["nodeCount"])
              for p in pools]  # fmt: skip
    assert shapes == [("serve-0", "ct5lp-hightpu-4t", "4x8", 8), ("serve-1", "ct5lp-hightpu-4t", "4x8", 8)]


def test_seed_admin_and_http_servers(seed_plan: Plan) -> None:
    admin = kube(seed_plan, DEPLOYMENT, "sax-admin-server")["inputs"]["spec"]["template"]["spec"]
    (container,) = admin["containers"]
    assert container["image"] == "us-docker.pkg.dev/cloud-tpu-images/inference/sax-admin-server:v1.1.0"
    assert container["ports"] == [{"containerPort": 10000}]
    assert container["env"] == [{"name": "GSBUCKET", "value": BUCKET}, {"name": "SAX_CELL", "value": "/sax/test"}]
    http = kube(seed_plan, DEPLOYMENT, "sax-http")["inputs"]["spec"]["template"]["spec"]
    (container,) = http["containers"]
    assert container["image"] == "us-docker.pkg.dev/cloud-tpu-images/inference/sax-http:v1.0.0"
    assert container["ports"] == [{"containerPort": 8888}]
    assert container["env"] == [{"name": "SAX_ROOT", "value": f"gs://{BUCKET}/sax-root"}]
    service = kube(seed_plan, SERVICE, "sax-http-lb")["inputs"]["spec"]
    assert service["type"] == "LoadBalancer"
    labels = kube(seed_plan, DEPLOYMENT, "sax-http")["inputs"]["spec"]["template"]["metadata"]["labels"]
    assert service["selector"] == {"app": "sax-http"} and labels["app"] == "sax-http"
    assert [(p["port"], p["targetPort"]) for p in service["ports"]] == [(8888, 8888)]


def test_every_pod_runs_as_the_one_workload_identity_ksa(seed_plan: Plan) -> None:
    (account,) = [r["inputs"]["metadata"] for r in saxml_objects(seed_plan) if r["type"] == KSA]
    assert (account["namespace"], account["name"]) == ("saxml", "sax-sa")
    specs = [pod_of(seed_plan)] + [
        kube(seed_plan, DEPLOYMENT, name)["inputs"]["spec"]["template"]["spec"]
        for name in ("sax-admin-server", "sax-http")
    ]
    assert {spec["serviceAccountName"] for spec in specs} == {"sax-sa"}
    (binding,) = seed_plan.by_type("gcp:storage/bucketIAMMember:BucketIAMMember")
    assert binding["inputs"]["bucket"] == BUCKET
    assert binding["inputs"]["role"] == "roles/storage.objectUser"
    assert binding["inputs"]["member"].endswith("/subject/ns/saxml/sa/sax-sa")


def test_cpu_servers_request_resources_on_the_system_pool_and_are_not_privileged(seed_plan: Plan) -> None:
    for name in ("sax-admin-server", "sax-http"):
        spec = kube(seed_plan, DEPLOYMENT, name)["inputs"]["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == {"cloud.google.com/gke-nodepool": "system"}, name
        (container,) = spec["containers"]
        assert set(container["resources"]["requests"]) == {"cpu", "memory"}, name
        assert tpu_catalog.TPU_RESOURCE not in container["resources"].get("limits", {}), name
        assert "hostNetwork" not in spec, name


def test_cpu_servers_run_restricted(seed_plan: Plan) -> None:
    """Non-root (the Saxml CPU images need no root), read-only root with a /tmp volume, probes, CPU limits."""
    for name, port in (("sax-admin-server", 10000), ("sax-http", 8888)):
        spec = kube(seed_plan, DEPLOYMENT, name)["inputs"]["spec"]["template"]["spec"]
        assert spec["automountServiceAccountToken"] is False, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        (container,) = spec["containers"]
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False and context["capabilities"] == {"drop": ["ALL"]}, name
        assert context["readOnlyRootFilesystem"] is True and context["runAsNonRoot"] is True, name
        assert context["runAsUser"] > 10000, name
        assert container["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}], name
        assert container["readinessProbe"]["tcpSocket"] == {"port": port}, name
        assert container["livenessProbe"]["tcpSocket"] == {"port": port}, name
        assert set(container["resources"]["limits"]) == {"cpu", "memory"}, name


def test_every_kubernetes_object_is_valid_for_the_api_server(seed_plan: Plan) -> None:
    objects = [r["inputs"] for r in saxml_objects(seed_plan)]
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == [
        "Deployment",
        "Deployment",
        "JobSet",
        "JobSet",
        "Namespace",
        *["NetworkPolicy"] * 4,
        "Service",
        "ServiceAccount",
    ]
    assert validate.validate_all(objects) == []


def test_validation_would_catch_a_wrong_field(seed_plan: Plan) -> None:
    """The check above can fail: a misspelt pod field in the JobSet is refused."""
    import copy

    jobset = copy.deepcopy(kube(seed_plan, JOBSET, "sax-model-server-set-0")["inputs"])
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["nodeSelectr"] = pod.pop("nodeSelector")
    assert validate.validate_object(jobset) == [
        "JobSet/sax-model-server-set-0: spec.replicatedJobs[0].template.spec.template.spec.nodeSelectr: unknown field"
    ]


def test_objects_live_in_the_saxml_namespace_created_first(seed_plan: Plan) -> None:
    objects = saxml_objects(seed_plan)
    (namespace,) = [r for r in objects if r["type"] == "kubernetes:core/v1:Namespace"]
    assert namespace["inputs"]["metadata"]["name"] == "saxml"
    for r in objects:
        if r is not namespace:
            assert r["inputs"]["metadata"]["namespace"] == "saxml", r["name"]
            assert namespace["urn"] in r["dependencies"], r["name"]


def test_model_servers_wait_for_their_identity(seed_plan: Plan) -> None:
    jobset = kube(seed_plan, JOBSET, "sax-model-server-set-0")
    waited = {r["type"] for r in seed_plan.resources if r["urn"] in jobset["dependencies"]}
    assert {KSA, "gcp:storage/bucketIAMMember:BucketIAMMember"} <= waited


@pytest.mark.parametrize("chart_name", ["jobset", "kueue"])
def test_model_servers_wait_for_the_jobset_and_kueue_installs(seed_plan: Plan, chart_name: str) -> None:
    """The JobSet CRD and webhook come with the JobSet chart; Kueue's JobSet webhook (mjobset.kb.io,
    failurePolicy Fail) with the Kueue chart. A JobSet created before either serves is refused, not retried."""
    jobset = kube(seed_plan, JOBSET, "sax-model-server-set-0")
    charts = seed_plan.by_type("kubernetes:helm.sh/v4:Chart")
    (chart,) = [r for r in charts if r["inputs"]["chart"].endswith(f"/{chart_name}")]
    assert chart["urn"] in jobset["dependencies"]


def test_the_built_in_default_namespace_is_used_never_declared(run: StackRunner) -> None:
    # The Saxml tutorial runs in `default`; declaring it would make `pulumi destroy` delete it.
    plan = run(with_saxml(namespace="default"))
    namespaces = [r["inputs"]["metadata"]["name"] for r in plan.by_type("kubernetes:core/v1:Namespace")]
    assert "default" not in namespaces
    assert kube(plan, JOBSET, "sax-model-server-set-0")["inputs"]["metadata"]["namespace"] == "default"
    assert kube(plan, KSA, "sax-sa")["inputs"]["metadata"]["namespace"] == "default"
    assert {r["inputs"]["metadata"]["namespace"] for r in plan.by_type(DEPLOYMENT)} == {"default"}


def test_outputs_give_the_http_address_and_the_api_urls(seed_plan: Plan) -> None:
    saxml = seed_plan.outputs["saxml"]
    assert saxml["httpAddress"] == "192.0.2.20"
    assert saxml["urls"] == {
        "publish": "http://192.0.2.20:8888/publish",
        "generate": "http://192.0.2.20:8888/generate",
        "listcell": "http://192.0.2.20:8888/listcell",
        "unpublish": "http://192.0.2.20:8888/unpublish",
    }
    assert (saxml["namespace"], saxml["serviceAccount"], saxml["cell"], saxml["pool"]) == (
        "saxml",
        "sax-sa",
        "/sax/test",
        "serve",
    )


def test_prod_serves_the_seed_model_and_dev_does_not() -> None:

    prod = stack_plan("prod")
    assert pod_of(prod)["nodeSelector"][tpu_catalog.TOPOLOGY_LABEL] == "4x8"
    assert sorted(r["inputs"]["metadata"]["name"] for r in prod.by_type(JOBSET)) == [
        "sax-model-server-set-0",
        "sax-model-server-set-1",
    ]
    assert validate.validate_all([r["inputs"] for r in prod.resources if r["type"] == JOBSET]) == []
    assert stack_plan("dev").by_type(JOBSET) == []


# ---- configuration --------------------------------------------------------------------------------------------


def test_single_host_v5e_pool_one_pod_per_slice(run: StackRunner) -> None:
    # Saxml's model server knows the chips tpuv2, tpuv3, tpuv4, tpuv4i, tpuv5e (saxml/server/proto_util.py).
    # v5e on flex-start: us-west4-a (vendor/data/tpu_zones.json).
    pool = {"name": "serve", "machineType": "ct5lp-hightpu-4t", "provisioning": "flex-start", "zone": "us-west4-a"}
    plan = run({**with_saxml(pool, model={"name": "llama-8b", "billionsOfParameters": 8}), "gcp:region": "us-west4"})
    jobset = kube(plan, JOBSET, "sax-model-server-set-0")["inputs"]
    (job,) = jobset["spec"]["replicatedJobs"]
    assert (job["replicas"], job["template"]["spec"]["parallelism"], job["template"]["spec"]["completions"]) == (
        1,
        1,
        1,
    )
    pod = pod_of(plan)
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x2",
        "cloud.google.com/gke-flex-start": "true",
    }
    assert pod["containers"][0]["args"][2:] == ["--platform_chip=tpuv5e", "--platform_topology=2x2"]


def test_names_cell_images_and_restarts_from_config(run: StackRunner) -> None:
    image = "europe-docker.pkg.dev/team/sax/sax-model-server@sha256:" + "a" * 64
    plan = run(with_saxml(namespace="serving", serviceAccount="sax", cell="/sax/prod", maxRestarts=1,
                          images={"modelServer": image}))  # fmt: skip
    jobset = kube(plan, JOBSET, "sax-model-server-set-0")["inputs"]
    assert jobset["metadata"]["namespace"] == "serving"
    assert jobset["spec"]["failurePolicy"]["maxRestarts"] == 1
    (container,) = pod_of(plan)["containers"]
    assert container["image"] == image
    assert "--sax_cell=/sax/prod" in container["args"]
    # The admin image serves the cell in SAX_CELL, /sax/test unless set (google/saxml v1.1.0
    # saxml/tools/docker/Dockerfile.admin: ENV SAX_CELL=/sax/test, then admin_config and admin_server with
    # --sax_cell=${SAX_CELL}); its entrypoint passes no arguments through, so the environment is the one way in.
    admin = kube(plan, DEPLOYMENT, "sax-admin-server")["inputs"]["spec"]["template"]["spec"]
    assert {"name": "SAX_CELL", "value": "/sax/prod"} in admin["containers"][0]["env"]
    assert {r["inputs"]["metadata"]["namespace"] for r in plan.by_type(DEPLOYMENT)} == {"serving"}
    assert kube(plan, KSA, "sax")["inputs"]["metadata"]["namespace"] == "serving"


def test_pool_taints_are_tolerated(run: StackRunner) -> None:
    taints = [{"key": "serving", "value": "saxml", "effect": "NO_EXECUTE"}, {"key": "dedicated"}]
    assert pod_of(run(with_saxml({**SERVE, "taints": taints})))["tolerations"] == [
        {"key": "serving", "operator": "Equal", "value": "saxml", "effect": "NoExecute"},
        # A taint without a value is tolerated as Kueue's flavors tolerate it: Exists.
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_iam_service_account_form_annotates_the_saxml_ksa(run: StackRunner) -> None:
    plan = run(with_saxml(identity="iamServiceAccount", iamServiceAccount="sax-iam-sa"))
    assert kube(plan, KSA, "sax-sa")["inputs"]["metadata"]["annotations"] == {
        "iam.gke.io/gcp-service-account": "sax-iam-sa@proj-1234.iam.gserviceaccount.com"
    }


def test_model_servers_select_their_pool_groups_labels(run: StackRunner) -> None:
    """Told apart from a training pool of the same shape by a label, Saxml's pods select it (and Kueue's flavor
    of the training pool the other value)."""
    labelled = {**SERVE, "labels": {"pool": "serve"}}
    train = {**SERVE, "name": "train", "slices": 1, "labels": {"pool": "train"}}
    plan = run({**with_saxml(labelled), "tpu-stack:tpuPools": [labelled, train]})
    assert pod_of(plan)["nodeSelector"] == {
        "pool": "serve",
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "4x8",
    }
    (flavor,) = plan.by_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
    assert flavor["inputs"]["spec"]["nodeLabels"]["pool"] == "train"


# ---- exposure ---------------------------------------------------------------------------------------------------


def test_http_service_is_an_internal_load_balancer_limited_to_its_clients(seed_plan: Plan) -> None:
    service = kube(seed_plan, SERVICE, "sax-http-lb")["inputs"]
    assert service["metadata"]["annotations"] == {"networking.gke.io/load-balancer-type": "Internal"}
    assert service["spec"]["loadBalancerSourceRanges"] == ["10.20.0.0/24"]
    assert service["spec"]["externalTrafficPolicy"] == "Local"  # client addresses reach the NetworkPolicy


def test_external_service_only_with_source_ranges(run: StackRunner) -> None:
    plan = run(with_saxml(service={"external": True, "sourceRanges": ["203.0.113.0/24", "2001:db8::/32"]}))
    service = kube(plan, SERVICE, "sax-http-lb")["inputs"]
    assert "annotations" not in service["metadata"]
    assert service["spec"]["loadBalancerSourceRanges"] == ["203.0.113.0/24", "2001:db8::/32"]
    assert validate.validate_object(service) == []


# ---- sizing and config errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("billions", "version", "expected"),
    [
        (175, "v5e", ("ct5lp-hightpu-4t", "4x8")),  # 350 GB / 16 GB = 22 chips; 4x4 holds 16
        (8, "v6e", ("ct6e-standard-4t", "2x2")),  # 16 GB fits one 32 GB chip: the smallest slice
        (70, "v6e", ("ct6e-standard-4t", "2x4")),  # 140 GB / 32 GB = 5 chips
    ],
)
def test_catalog_sizing(billions: float, version: str, expected: tuple[str, str]) -> None:
    assert tpu_catalog.smallest_topology_for_model(billions, version) == expected


SMALL_SERVE = {**SERVE, "topology": "4x4"}
CASES = [
    ("model too big for the pool", with_saxml(SMALL_SERVE, model=MODEL_175B),
     "tpu-stack:saxml.model.billionsOfParameters: a 175B model needs ~350 GB = 22 v5e chips; pool 'serve' slices "
     "have 16 chips (4x4); use topology 4x8 or larger"),
    ("too big for a single-host machine type",
     with_saxml({"name": "serve", "machineType": "ct5lp-hightpu-8t", "topology": "2x4", "zone": "us-central1-a"},
                model=MODEL_175B),
     "tpu-stack:saxml.model.billionsOfParameters: a 175B model needs ~350 GB = 22 v5e chips; pool 'serve' slices "
     "have 8 chips (2x4); use machineType ct5lp-hightpu-4t with topology 4x8 or larger"),
    ("too big for any slice of the version", with_saxml(model={"name": "huge", "billionsOfParameters": 2100}),
     "tpu-stack:saxml.model.billionsOfParameters: a 2100B model needs ~4200 GB = 263 v5e chips; pool 'serve' slices "
     "have 32 chips (4x8); no v5e slice is that large; use a TPU version with more HBM per chip"),
    ("pool names no pool", {"tpu-stack:tpuPools": [SERVE], "tpu-stack:saxml": {"pool": "serving", "service": CLIENTS}},
     "tpu-stack:saxml.pool: 'serving' names no TPU pool; tpuPools: serve"),
    ("queued pool", {**with_saxml({**SERVE, "provisioning": "queued", "zone": "us-west4-a"}), "gcp:region": "us-west4"},
     "tpu-stack:saxml.pool: pool 'serve' is queued-provisioning, whose nodes exist only for Kueue-admitted jobs; "
     "serve on an on-demand, reservation, spot or flex-start pool"),
    ("external without source ranges", with_saxml(service={"external": True}),
     "tpu-stack:saxml.service.sourceRanges: required, also for the internal load balancer (the client CIDRs "
     "allowed to call the Saxml HTTP API on port 8888); list them"),
    ("internal without source ranges", with_saxml(service={}),
     "tpu-stack:saxml.service.sourceRanges: required, also for the internal load balancer (the client CIDRs "
     "allowed to call the Saxml HTTP API on port 8888); list them"),
    ("half of the internet", with_saxml(service={"external": True, "sourceRanges": ["0.0.0.0/1"]}),
     "tpu-stack:saxml.service.sourceRanges[0]: '0.0.0.0/1' covers a large part of the internet; list client CIDRs "
     "of /8 or narrower"),
    ("open to the internet", with_saxml(service={"external": True, "sourceRanges": ["10.0.0.0/8", "0.0.0.0/0"]}),
     "tpu-stack:saxml.service.sourceRanges[1]: '0.0.0.0/0' admits every address; list the client CIDRs instead"),
    ("not a CIDR", with_saxml(service={"sourceRanges": ["10.0.0.0/33"]}),
     "tpu-stack:saxml.service.sourceRanges[0]: '10.0.0.0/33' is not a CIDR range like 203.0.113.0/24"),
    ("unpinned image", with_saxml(images={"httpServer": "us-docker.pkg.dev/cloud-tpu-images/inference/sax-http"}),
     "tpu-stack:saxml.images.httpServer: 'us-docker.pkg.dev/cloud-tpu-images/inference/sax-http' is not pinned; "
     "use an explicit version tag or an @sha256 digest, never latest"),
    ("latest image", with_saxml(images={"adminServer": "registry:5000/sax-admin-server:latest"}),
     "tpu-stack:saxml.images.adminServer: 'registry:5000/sax-admin-server:latest' is not pinned; use an explicit "
     "version tag or an @sha256 digest, never latest"),
    ("short digest", with_saxml(images={"modelServer": "registry/sax-model-server@sha256:abc"}),
     "tpu-stack:saxml.images.modelServer: 'registry/sax-model-server@sha256:abc': 'sha256:abc' is not a digest; "
     "write @sha256: and its 64 hex digits"),
    ("bad cell", with_saxml(cell="test"),
     "tpu-stack:saxml.cell: 'test' is not a Saxml cell; use /sax/<name>, e.g. /sax/test"),
    ("negative restarts", with_saxml(maxRestarts=-1),
     "tpu-stack:saxml.maxRestarts: the number -1 is too small; use 0 or more"),
    ("model of no size", with_saxml(model={"name": "m", "billionsOfParameters": 0}),
     "tpu-stack:saxml.model.billionsOfParameters: the number 0 is too small; use more than 0"),
    # Kueue's flavor of `train` selects only accelerator and topology, which Saxml's slices carry too; Saxml's
    # JobSet would likewise take train's slices.
    ("a training pool of Saxml's shape",
     {**with_saxml(), "tpu-stack:tpuPools": [SERVE, {**SERVE, "name": "train", "slices": 1}]},
     "tpu-stack:tpuPools: pools 'serve' and 'train' are both ct5lp-hightpu-4t 4x8 and can run each other's pods, and "
     "'serve' serves Saxml, whose model servers hold all its slices; give each a label the other has with another "
     "value (labels: {pool: serve} and {pool: train})"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "extra", "message"), CASES, ids=[c[0] for c in CASES])
def test_saxml_config_errors(case: str, extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load({**BASE, **extra}, stack="dev")
    assert error.value.lines == [message]


@pytest.mark.parametrize("case", ["model too big for the pool", "external without source ranges"])
def test_saxml_config_errors_exit_2_through_the_cli(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, extra, message = next(c for c in CASES if c[0] == case)
    path = tmp_path / "Pulumi.case.yaml"
    path.write_text(yaml.safe_dump({"config": {**BASE, **extra}}))
    out = tmp_path / "out"
    assert cli.main(["preview", "--stack", "case", "--config", str(path), "--out", str(out)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {message}", "1 config error(s); nothing was registered."]
    assert not out.exists()


def test_saxml_namespace_denies_by_default_and_admits_only_its_clients_and_its_own_pods(seed_plan: Plan) -> None:
    policies = {o["metadata"]["name"]: o["spec"] for o in (r["inputs"] for r in saxml_objects(seed_plan))
                if o["kind"] == "NetworkPolicy"}  # fmt: skip
    assert policies["default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    own = {"matchLabels": {"app.kubernetes.io/part-of": "saxml"}}
    # The admin (10000), model (10001) and ICI (8471) ports: only from Saxml's own pods.
    assert policies["allow-same-namespace"]["podSelector"] == own
    assert policies["allow-same-namespace"]["ingress"] == [{"from": [{"podSelector": own}]}]
    clients = policies["allow-http-clients"]
    assert clients["podSelector"] == {"matchLabels": {"app": "sax-http"}}
    assert clients["ingress"] == [
        {"from": [{"ipBlock": {"cidr": "10.20.0.0/24"}}], "ports": [{"protocol": "TCP", "port": 8888}]}
    ]
    assert all(p["metadata"]["namespace"] == "saxml" for p in (r["inputs"] for r in saxml_objects(seed_plan))
               if p["kind"] == "NetworkPolicy")  # fmt: skip
    pod_labels = pod_of_template(seed_plan)
    assert pod_labels == {"app.kubernetes.io/part-of": "saxml"}  # the model servers match `own`


def pod_of_template(plan: Plan) -> dict[str, Any]:
    (job,) = kube(plan, JOBSET, "sax-model-server-set-0")["inputs"]["spec"]["replicatedJobs"]
    labels: dict[str, Any] = job["template"]["spec"]["template"]["metadata"]["labels"]
    return labels


def test_cpu_servers_select_the_system_pool_the_cluster_creates(seed_plan: Plan) -> None:
    """Cross-check: the selector names the CPU node pool the plan really has (GKE labels nodes with it)."""
    pools = seed_plan.by_type("gcp:container/nodePool:NodePool")
    (system,) = [p for p in pools if p["inputs"]["nodeConfig"]["machineType"] == "e2-standard-4"]
    for name in ("sax-admin-server", "sax-http"):
        spec = kube(seed_plan, "kubernetes:apps/v1:Deployment", name)["inputs"]["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == {"cloud.google.com/gke-nodepool": system["inputs"]["name"]}, name


# ---- updates of the model-server JobSet: its spec is immutable, a change replaces it, deleting it first ------

# Written out from jobset v0.12.0: pkg/webhooks/jobset_webhook.go ValidateUpdate (replicatedJobs, managedBy) and
# the CRD's `self == oldSelf` rules (vendor/crds/jobset/jobset.x-k8s.io_jobsets.yaml).
JOBSET_IMMUTABLE = [
    "spec.replicatedJobs",
    "spec.managedBy",
    "spec.failurePolicy",
    "spec.successPolicy",
    "spec.startupPolicy",
    "spec.network",
    "spec.volumeClaimPolicies",
]
DIGEST = "us-docker.pkg.dev/cloud-tpu-images/inference/sax-model-server@sha256:" + "b" * 64


def _model_servers(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    with replacement_options() as options:
        plan = run_program({**BASE, **config}, stack="dev")
    record = kube(plan, JOBSET, "sax-model-server-set-0")
    return record, options[record["urn"]]


@pytest.mark.parametrize(
    ("change", "after", "paths"),
    [
        ("image pinned by digest", with_saxml(images={"modelServer": DIGEST}),
         ['metadata.annotations["checkov.io/skip5"]',  # the tag exception goes; metadata changes in place
          "spec.replicatedJobs[0].template.spec.template.spec.containers[0].image"]),
        ("restarts 4 -> 1", with_saxml(maxRestarts=1), ["spec.failurePolicy.maxRestarts"]),
    ],
)  # fmt: skip
def test_a_change_to_the_model_server_set_replaces_it_deleting_it_first(
    change: str, after: dict[str, Any], paths: list[str]
) -> None:
    """An in-place update of these fields fails preview and up (webhook and CEL); a second JobSet of the same
    name cannot be created beside the old one (AlreadyExists)."""
    old, _ = _model_servers(with_saxml())
    new, registered = _model_servers(after)
    assert old["urn"] == new["urn"], change
    assert changed_paths(old["inputs"], new["inputs"]) == paths
    assert registered == {"replaceOnChanges": JOBSET_IMMUTABLE, "deleteBeforeReplace": True}
    spec_paths = [path for path in paths if path.startswith("spec.")]
    assert spec_paths and all(replaced_by(registered["replaceOnChanges"], path) for path in spec_paths)
    assert not any(replaced_by(registered["replaceOnChanges"], p) for p in paths if p.startswith("metadata"))


def test_the_jobset_crds_immutable_fields_are_the_ones_replaced() -> None:
    """Every `self == oldSelf` rule of the vendored JobSet CRD is under a replaceOnChanges path of the JobSet."""
    crd = yaml.safe_load((VENDOR / "crds" / "jobset" / "jobset.x-k8s.io_jobsets.yaml").read_text())
    (version,) = crd["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    rules = _old_self_rules(spec, "spec")
    assert rules == [
        "spec.failurePolicy",
        "spec.network",
        "spec.replicatedJobs[].dependsOn",
        "spec.startupPolicy",
        "spec.successPolicy",
        "spec.volumeClaimPolicies",
    ]
    assert all(replaced_by(jobset_install.IMMUTABLE_FIELDS, rule.replace("[]", "[0]")) for rule in rules)


def _old_self_rules(schema: dict[str, Any], path: str) -> list[str]:
    found = [path for rule in schema.get("x-kubernetes-validations", []) if rule["rule"] == "self == oldSelf"]
    for key, child in sorted((schema.get("properties") or {}).items()):
        found += _old_self_rules(child, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        found += _old_self_rules(schema["items"], f"{path}[]")
    return found


# ---- what the JobSet controller does with the servers over their life -------------------------------------------


def model_server_sets(plan: Plan) -> dict[str, dict[str, Any]]:
    """Pulumi name -> inputs of every model-server JobSet."""
    return {r["name"]: r["inputs"] for r in plan.by_type(JOBSET)}


def test_a_slices_servers_outlive_any_number_of_disruptions(seed_plan: Plan) -> None:
    """Node upgrades, repairs, maintenance and preemptions stop pods with DisruptionTarget: each restarts the servers
    of that slice without counting against maxRestarts, so a server lives as long as its stack; a crash of its own
    still counts, and the fifth with maxRestarts 4 fails the slice's JobSet (tests/effects/controllers.py models
    jobset v0.12.0 failure_policy.go and the Job's pod failure policy)."""
    sets = model_server_sets(seed_plan)
    assert sorted(sets) == ["saxml-model-servers-0", "saxml-model-servers-1"]
    for spec in (s["spec"] for s in sets.values()):
        upgraded = jobset_run(spec, [disruption()] * 12)
        assert (upgraded.failed, upgraded.restarts, upgraded.counted) == (None, 12, 0)
        assert jobset_run(spec, [crash()] * 4).failed is None
        assert jobset_run(spec, [crash()] * 5).failed == "ReachedMaxRestarts"
        assert jobset_run(spec, [disruption(), crash(), disruption(), crash(), crash(), crash()]).failed is None


def test_resizing_the_serving_pool_keeps_the_running_slices_servers() -> None:
    """One JobSet per slice, named by its index: slices 2 -> 3 adds the third slice's servers and leaves the first two
    untouched (a JobSet's replicatedJobs cannot change in place, so one JobSet for all slices was replaced, every
    server down, by a resize); 3 -> 2 deletes only the third."""
    two = model_server_sets(run_program({**BASE, **with_saxml()}, stack="dev"))
    three = model_server_sets(run_program({**BASE, **with_saxml({**SERVE, "slices": 3})}, stack="dev"))
    assert sorted(three) == ["saxml-model-servers-0", "saxml-model-servers-1", "saxml-model-servers-2"]
    assert {name: three[name] for name in two} == two
    assert three["saxml-model-servers-2"]["metadata"]["name"] == "sax-model-server-set-2"
