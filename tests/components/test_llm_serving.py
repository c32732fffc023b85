"""vLLM serving: sizing against the slice's HBM, the objects' shape from the pool, exposure, identity and the
config lines that refuse what does not fit.

Expectations are written out by hand from the TPU pages: v5e has 16 GB of HBM per chip, v6e 32 GB; a 70B model in
bfloat16 is 70 x 2 = 140 GB of weights, and a server may fill 90% of the slice's HBM with them
(`--gpu-memory-utilization=0.9`). v5e 2x4 = 8 chips = 128 GB (115.2 usable): too small; v5e 4x4 = 16 chips on 4 VMs
of 4 = 256 GB: fits, tensor parallel 16 over a 4-pod LeaderWorkerSet group; v6e ct6e-standard-8t 2x4 = 8 chips on
one VM = 256 GB: fits, one pod (GKE's vLLM tutorial serves Llama 3.1 70B there); v6e 2x2 = 4 chips = 128 GB: too
small, and the next v6e slice is 2x4.
"""

from __future__ import annotations

from typing import Any

import pytest

from components.config.base import ConfigError
from components.config.serving import file_cache_max_mib
from components.config.stack import StackConfig, load
from offline import validate
from offline.engine import Plan, run_program
from offline.vendor import REPO
from tests.conftest import BASE, StackRunner
from tests.fixtures import stack_config, stack_plan

LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE = "kubernetes:core/v1:Service"
POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
CLIENTS = {"sourceRanges": ["10.20.0.0/24"]}
V5E_4X4 = {"name": "serve", "machineType": "ct5lp-hightpu-4t", "topology": "4x4", "slices": 2, "zone": "us-central1-a"}
V6E_8T = {"name": "serve", "machineType": "ct6e-standard-8t", "slices": 2, "zone": "us-central1-b"}
LLAMA_70B = {"name": "llama", "pool": "serve", "modelFolder": "models/Llama-3.1-70B-Instruct",
             "servedModelName": "meta-llama/Llama-3.1-70B-Instruct", "billionsOfParameters": 70,
             "maxModelLen": 4096}  # fmt: skip
"""Weights copied into the stack's bucket: what multi-host slices and several replicas read."""
HF_LLAMA = {"name": "llama", "pool": "serve", "model": "meta-llama/Llama-3.1-70B-Instruct", "billionsOfParameters": 70,
            "maxModelLen": 4096}  # fmt: skip
"""Downloaded from Hugging Face by the server itself: one pod, once."""
KEY = "tpu-stack:serving"
S0 = f"{KEY}.servers[0]"


def config(pool: dict[str, Any], *servers: dict[str, Any], **serving: Any) -> dict[str, Any]:
    return {
        "tpu-stack:tpuPools": [pool],
        KEY: {"service": CLIENTS, "servers": list(servers) or [LLAMA_70B], **serving},
    }


def loaded(extra: dict[str, Any]) -> StackConfig:
    return load({**BASE, **extra}, stack="dev")


def load_stack(stack: str) -> StackConfig:
    return stack_config(stack)


def config_error(extra: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as error:
        loaded(extra)
    return error.value.lines


def kube(plan: Plan, type_token: str, name: str) -> dict[str, Any]:
    (found,) = [r for r in plan.by_type(type_token) if r["inputs"]["metadata"]["name"] == name]
    return found


@pytest.fixture(scope="module")
def example() -> Plan:
    """The example stack: Llama 3.1 70B on two v6e 2x4 single-host slices, Llama 3.3 70B on v5e 4x4 slices."""
    return stack_plan("llm", render_charts=False)


# ---- sizing ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pool", "kind", "tensor_parallel", "hosts", "chips_per_host"),
    [
        ({"machineType": "ct5lp-hightpu-4t", "topology": "4x4"}, "LeaderWorkerSet", 16, 4, 4),
        ({"machineType": "ct6e-standard-8t", "zone": "us-central1-b"}, "Deployment", 8, 1, 8),
        ({"machineType": "ct6e-standard-4t", "topology": "2x4", "zone": "us-central1-b"}, "LeaderWorkerSet", 8, 2, 4),
        ({"machineType": "ct5lp-hightpu-4t", "topology": "8x8"}, "LeaderWorkerSet", 64, 16, 4),
    ],
)
def test_a_70b_bf16_model_fits_these_slices_sharded_over_every_chip(
    pool: dict[str, Any], kind: str, tensor_parallel: int, hosts: int, chips_per_host: int
) -> None:
    (shape,) = loaded(config({"name": "serve", "zone": "us-central1-a", **pool})).server_shapes
    assert (shape.kind, shape.tensor_parallel_size, shape.hosts, shape.chips_per_host) == (
        kind, tensor_parallel, hosts, chips_per_host,
    )  # fmt: skip
    assert f"--tensor-parallel-size={tensor_parallel}" in shape.engine_args


@pytest.mark.parametrize(
    ("pool", "server", "line"),
    [
        ({"machineType": "ct5lp-hightpu-4t", "topology": "2x4"}, {},
         "a 70B model in bfloat16 needs 140 GB of HBM for its weights; pool 'serve' slices (2x4, 8 v5e chips) hold "
         "128 GB, of which the server uses 90%: use topology 4x4 or larger"),
        # 140 GB / 28.8 usable GB a v6e chip = 5 chips: an 8-chip VM holds them, a single-host server (a Deployment);
        # a 2x4 of the 4-chip type would be two VMs, a multi-host server that vLLM on TPUs does not support on GKE.
        ({"machineType": "ct6e-standard-4t", "topology": "2x2", "zone": "us-central1-b"}, {},
         "a 70B model in bfloat16 needs 140 GB of HBM for its weights; pool 'serve' slices (2x2, 4 v6e chips) hold "
         "128 GB, of which the server uses 90%: use machineType ct6e-standard-8t, a 2x4 slice on one VM"),
        # 80 GB / 14.4 usable GB a v5e chip = 6 chips: the 8-chip v5e VM.
        ({"machineType": "ct5lp-hightpu-4t", "topology": "2x2"}, {"billionsOfParameters": 40},
         "a 40B model in bfloat16 needs 80 GB of HBM for its weights; pool 'serve' slices (2x2, 4 v5e chips) hold "
         "64 GB, of which the server uses 90%: use machineType ct5lp-hightpu-8t, a 2x4 slice on one VM"),
        # A 1-chip v6e VM holds 28.8 usable GB; 20B x 2 = 40 GB needs 2 chips: the 4-chip VM, a 2x2 slice.
        ({"machineType": "ct6e-standard-1t", "zone": "us-central1-b"}, {"billionsOfParameters": 20},
         "a 20B model in bfloat16 needs 40 GB of HBM for its weights; pool 'serve' slices (1x1, 1 v6e chips) hold "
         "32 GB, of which the server uses 90%: use machineType ct6e-standard-4t, a 2x2 slice on one VM"),
        # An 8-chip v5e VM is a fixed 2x4 slice: the next size is a multi-host slice of the 4-chip machine type.
        ({"machineType": "ct5lp-hightpu-8t"}, {},
         "a 70B model in bfloat16 needs 140 GB of HBM for its weights; pool 'serve' slices (2x4, 8 v5e chips) hold "
         "128 GB, of which the server uses 90%: use machineType ct5lp-hightpu-4t with topology 4x4 or larger"),
        # 405B x 2 = 810 GB: 29 v6e chips at 28.8 usable GB each, the 32-chip 4x8.
        ({"machineType": "ct6e-standard-8t", "zone": "us-central1-b"}, {"billionsOfParameters": 405},
         "a 405B model in bfloat16 needs 810 GB of HBM for its weights; pool 'serve' slices (2x4, 8 v6e chips) hold "
         "256 GB, of which the server uses 90%: use machineType ct6e-standard-4t with topology 4x8 or larger"),
        # float32: 4 bytes a parameter; 70 x 4 = 280 GB > 230.4 usable of a 4x4 v5e.
        ({"machineType": "ct5lp-hightpu-4t", "topology": "4x4"}, {"dtype": "float32"},
         "a 70B model in float32 needs 280 GB of HBM for its weights; pool 'serve' slices (4x4, 16 v5e chips) hold "
         "256 GB, of which the server uses 90%: use topology 4x8 or larger"),
        # 2000B x 2 = 4000 GB: 278 v5e chips, more than the largest (256-chip) v5e slice.
        ({"machineType": "ct5lp-hightpu-4t", "topology": "16x16"}, {"billionsOfParameters": 2000},
         "a 2000B model in bfloat16 needs 4000 GB of HBM for its weights; pool 'serve' slices (16x16, 256 v5e chips) "
         "hold 4096 GB, of which the server uses 90%: no v5e slice is that large; use a smaller dtype or a TPU "
         "version with more HBM per chip"),
    ],
)  # fmt: skip
def test_weights_that_do_not_fit_the_slice_are_one_line_naming_the_slice_that_would(
    pool: dict[str, Any], server: dict[str, Any], line: str
) -> None:
    pool = {"name": "serve", "zone": "us-central1-a", **pool}
    assert config_error(config(pool, {**LLAMA_70B, **server})) == [f"{S0}.billionsOfParameters: {line}"]


@pytest.mark.parametrize(("dtype", "topology"), [("int8", "2x4"), ("fp8", "2x4"), ("int4", "2x2")])
def test_quantized_weights_need_fewer_bytes_per_parameter(dtype: str, topology: str) -> None:
    """70B at 1 byte = 70 GB fits a v5e 2x4 (115.2 usable GB); at half a byte 35 GB fits a 2x2 (57.6)."""
    pool = {**V5E_4X4, "topology": topology}
    (shape,) = loaded(config(pool, {**LLAMA_70B, "dtype": dtype})).server_shapes
    # vLLM reads a quantized checkpoint's scheme from the checkpoint: no --dtype is passed for these.
    assert not any(arg.startswith("--dtype") for arg in shape.engine_args)


# ---- the LeaderWorkerSet of a multi-host server ----------------------------------------------------------------


def lws_spec(plan: Plan, name: str = "llama") -> dict[str, Any]:
    spec: dict[str, Any] = kube(plan, LWS, name)["inputs"]["spec"]
    return spec


def test_multi_host_server_is_one_leaderworkerset_group_per_slice(run: StackRunner) -> None:
    """Two v5e 4x4 slices (4 VMs of 4 chips), two replicas: 2 groups of 4 pods, each pod holding its VM's chips."""
    plan = run(config(V5E_4X4, {**LLAMA_70B, "replicas": 2}))
    lws = kube(plan, LWS, "llama")["inputs"]
    spec = lws["spec"]
    template = spec["leaderWorkerTemplate"]
    assert (spec["replicas"], template["size"]) == (2, 4)
    assert template["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert spec["startupPolicy"] == "LeaderCreated"  # the leader waits for its workers: they must start with it
    # One group per node pool = per slice.
    assert lws["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/exclusive-topology"] == (
        "cloud.google.com/gke-nodepool"
    )
    for role in ("leaderTemplate", "workerTemplate"):
        pod = template[role]["spec"]
        assert pod["nodeSelector"] == {
            "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
            "cloud.google.com/gke-tpu-topology": "4x4",
        }
        (container,) = pod["containers"]
        # ct5lp-hightpu-4t: the node's CPU and memory, as every TPU pod (test_workloads has the arithmetic).
        assert container["resources"]["limits"] == {"google.com/tpu": 4, "memory": "181543Mi"}
        assert container["resources"]["requests"] == {"google.com/tpu": 4, "cpu": "110400m", "memory": "179495Mi"}
        # As vLLM TPU's own multi-host runs (tpu-inference v0.27.0 run_multihost.sh, deploy-baseline.yaml): Ray,
        # vLLM's model code on JAX (the default resolves Llama to Flax, listed failing multi-host), relaxed Ray
        # health checks.
        assert {e["name"]: e["value"] for e in container["env"]} == {
            "VLLM_XLA_CACHE_PATH": "/cache/xla",
            "TPU_MULTIHOST_BACKEND": "ray",
            "MODEL_IMPL_TYPE": "vllm",
            "TPU_BACKEND_TYPE": "jax",
            "JAX_PLATFORMS": "",
            "RAY_health_check_failure_threshold": "100",
            "RAY_health_check_timeout_ms": "20000",
            "RAY_health_check_period_ms": "10000",
            "RAY_num_heartbeats_timeout": "300000",
            "RAY_raylet_heartbeat_timeout_milliseconds": "3000000",
            "RAY_grpc_keepalive_timeout_ms": "3000000",
            "RAY_RESERVE_CPU_FOR_RAYLET": "1",
        }
        assert "hostNetwork" not in pod and pod["serviceAccountName"] == "vllm"


def test_the_leader_starts_a_ray_head_waits_for_the_whole_slice_then_serves(run: StackRunner) -> None:
    template = lws_spec(run(config(V5E_4X4)))["leaderWorkerTemplate"]
    (leader,) = template["leaderTemplate"]["spec"]["containers"]
    (worker,) = template["workerTemplate"]["spec"]["containers"]
    assert leader["command"] == worker["command"] == ["/bin/sh", "-c"]
    (script,) = leader["args"]
    assert script.startswith("ray start --head --port=6379 --disable-usage-stats && until ")
    assert '= "$LWS_GROUP_SIZE" ]; do sleep 5; done && exec python3 -m vllm.entrypoints.openai.api_server ' in script
    assert script.endswith(
        "--host=0.0.0.0 --port=8000 --model=/models --served-model-name=meta-llama/Llama-3.1-70B-Instruct "
        "--tensor-parallel-size=16 --max-model-len=4096 --gpu-memory-utilization=0.9 --dtype=bfloat16"
    )
    (join,) = worker["args"]
    assert 'ray start --address="$LWS_LEADER_ADDRESS:6379" --disable-usage-stats --block' in join
    # Only the leader serves and is probed on vLLM's health endpoint; it is healthy once the whole group serves.
    assert leader["ports"] == [{"name": "http", "containerPort": 8000}, {"name": "ray", "containerPort": 6379}]
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert leader["startupProbe"]["failureThreshold"] * leader["startupProbe"]["periodSeconds"] == 3600
    assert "ports" not in worker and "readinessProbe" not in worker


@pytest.mark.parametrize(("slices", "surge", "unavailable"), [(2, 0, 1), (3, 1, 0)])
def test_a_rollout_uses_a_spare_slice_when_there_is_one(
    run: StackRunner, slices: int, surge: int, unavailable: int
) -> None:
    """Replicas 2: on 2 slices one group goes down at a time; on 3, a new group starts on the spare slice first."""
    plan = run(config({**V5E_4X4, "slices": slices}, {**LLAMA_70B, "replicas": 2}))
    assert lws_spec(plan)["rolloutStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxSurge": surge, "maxUnavailable": unavailable},
    }


# ---- the Deployment of a single-host server -------------------------------------------------------------------


def test_tensor_parallelism_over_part_of_a_single_host_slice(run: StackRunner) -> None:
    """A 40-head model cannot be split 16 or 64 ways, a 28-head one not 8 ways: tensorParallelSize 4 on a v6e 2x4
    VM shards a 32B model (64 GB) over 4 chips (128 GB, 115.2 usable); the pod still holds all 8 of the VM's."""
    qwen = {**LLAMA_70B, "name": "qwen", "modelFolder": "models/Qwen2.5-32B-Instruct", "servedModelName": "qwen",
            "billionsOfParameters": 32, "tensorParallelSize": 4}  # fmt: skip
    plan = run(config(V6E_8T, qwen))
    (container,) = kube(plan, DEPLOYMENT, "qwen")["inputs"]["spec"]["template"]["spec"]["containers"]
    assert "--tensor-parallel-size=4" in container["args"]
    assert container["resources"]["limits"]["google.com/tpu"] == 8
    assert plan.outputs["serving"]["qwen"]["tensorParallelSize"] == 4


def test_single_host_server_is_a_deployment_of_one_pod_per_slice(run: StackRunner) -> None:
    plan = run(config(V6E_8T, {**LLAMA_70B, "replicas": 2, "engineArgs": ["--max-num-seqs=128"]}))
    deployment = kube(plan, DEPLOYMENT, "llama")["inputs"]
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["selector"] == {
        "matchLabels": {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": "llama"}
    }
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    # A new pod may take the startup probe's 60 minutes plus scheduling and the image pull (15 more) before the
    # rollout progresses: at the default 600 s `kubectl rollout status` would give up mid-rollout.
    assert spec["progressDeadlineSeconds"] == 4500
    # The provider's Deployment await (10 minutes) is shorter than a 70B model's load: the probes decide.
    assert deployment["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "2x4",
    }
    (container,) = pod["containers"]
    assert container["command"] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    assert container["args"] == [
        "--host=0.0.0.0", "--port=8000", "--model=/models", "--served-model-name=meta-llama/Llama-3.1-70B-Instruct",
        "--tensor-parallel-size=8", "--max-model-len=4096", "--gpu-memory-utilization=0.9", "--dtype=bfloat16",
        "--max-num-seqs=128",
    ]  # fmt: skip
    # ct6e-standard-8t, 180 vCPU and 1440 GiB: 180000 - 520 reserved - 1250 (DaemonSets, sidecar) = 178230m; memory
    # capacity 1474560 * 0.98 = 1445068 MiB, less 35824 reserved and 100 eviction = 1409144 allocatable, less 2304 =
    # 1406840Mi requested, less the sidecar's 256 = 1408888Mi limit.
    assert container["resources"] == {
        "requests": {"google.com/tpu": 8, "cpu": "178230m", "memory": "1406840Mi"},
        "limits": {"google.com/tpu": 8, "memory": "1408888Mi"},
    }
    assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "privileged": False,
    }
    assert pod["automountServiceAccountToken"] is False


# ---- weights, token, identity ---------------------------------------------------------------------------------


def volumes(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in pod["volumes"]}


def options(volume: dict[str, Any]) -> list[str]:
    return str(volume["csi"]["volumeAttributes"]["mountOptions"]).split(",")


def test_a_hugging_face_model_is_downloaded_into_the_bucket_and_read_back_uncached(example: Plan) -> None:
    pod = kube(example, DEPLOYMENT, "llama-31-70b")["inputs"]["spec"]["template"]["spec"]
    cache = volumes(pod)["vllm-cache"]
    assert cache["csi"]["volumeAttributes"]["bucketName"] == "tpu-stack-llm-llm-tpu-stack"
    assert cache["csi"]["readOnly"] is False
    assert "only-dir=vllm-cache/llama-31-70b" in options(cache)
    # A download into the read-write folder is read back uncached: no file cache can grow on the boot disk.
    assert [o for o in options(cache) if o.startswith("file-cache:")] == []
    assert "gke-gcsfuse-cache" not in volumes(pod)
    (container,) = pod["containers"]
    assert {"name": "VLLM_XLA_CACHE_PATH", "value": "/cache/xla"} in container["env"]
    # The weights (vLLM's --download-dir) and the config and tokenizer files (huggingface_hub's hub cache) land in
    # the same bucket folder, so a restart fetches nothing from huggingface.co.
    assert "--download-dir=/cache/huggingface" in container["args"]
    assert {"name": "HF_HUB_CACHE", "value": "/cache/huggingface"} in container["env"]
    # One replica on two slices: a rollout starts the new pod on the spare slice first.
    spec = kube(example, DEPLOYMENT, "llama-31-70b")["inputs"]["spec"]
    assert (spec["replicas"], spec["strategy"]["rollingUpdate"]) == (1, {"maxSurge": 1, "maxUnavailable": 0})


def test_a_bucket_model_larger_than_the_file_cache_is_read_straight_from_the_bucket(example: Plan) -> None:
    """Llama 3.3 70B is 141.2 GB of weights; the node's cache could hold 30412 MiB (31.9 GB): every shard would be
    written to the boot disk and evicted again on its one read, so the file cache is off."""
    pod = lws_spec(example, "llama-33-70b")["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    found = volumes(pod)
    assert found["model"]["csi"]["readOnly"] is True
    assert "only-dir=models/Llama-3.3-70B-Instruct" in options(found["model"])
    assert [o for o in options(found["model"]) if o.startswith("file-cache:")] == []
    assert [o for o in options(found["vllm-cache"]) if o.startswith("file-cache:")] == []
    assert "gke-gcsfuse-cache" not in found
    (container,) = pod["containers"]
    assert {"name": "model", "mountPath": "/models", "readOnly": True} in container["volumeMounts"]


def test_a_bucket_model_that_fits_the_file_cache_is_read_through_it(run: StackRunner) -> None:
    """An 8B model in bfloat16 is 16 GB: it fits the node's bounded cache volume, 33 GiB of the 100 GiB boot disk,
    90% of it (30412 MiB) for gcsfuse's cache with parallel downloads; the read-write cache folder keeps none."""
    small = {**LLAMA_70B, "modelFolder": "models/Llama-3.1-8B-Instruct", "billionsOfParameters": 8}
    pod = lws_spec(run(config(V5E_4X4, small)))["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    found = volumes(pod)
    assert "file-cache:max-size-mb:30412" in options(found["model"])
    assert "file-cache:enable-parallel-downloads:true" in options(found["model"])
    assert [o for o in options(found["vllm-cache"]) if o.startswith("file-cache:")] == []
    assert found["gke-gcsfuse-cache"] == {"name": "gke-gcsfuse-cache", "emptyDir": {"sizeLimit": "33Gi"}}


def test_the_token_is_a_file_from_the_operators_secret_and_never_in_the_state(example: Plan) -> None:
    hf = kube(example, DEPLOYMENT, "llama-31-70b")["inputs"]["spec"]["template"]["spec"]
    assert volumes(hf)["hf-token"]["secret"] == {
        "secretName": "hf-token",
        "items": [{"key": "token", "path": "token"}],
        "defaultMode": 0o400,
    }
    (container,) = hf["containers"]
    assert {"name": "HF_TOKEN_PATH", "value": "/var/run/secrets/huggingface/token"} in container["env"]
    # The stack declares no Secret in the serving namespace: the operator creates it.
    assert [
        r for r in example.by_type("kubernetes:core/v1:Secret") if r["inputs"]["metadata"]["namespace"] == "llm"
    ] == []
    # A model read from the bucket needs no token.
    bucket_model = lws_spec(example, "llama-33-70b")["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    assert "hf-token" not in volumes(bucket_model)


def test_every_server_pod_runs_as_the_serving_ksa_reading_the_bucket_and_writing_only_its_cache(
    example: Plan,
) -> None:
    """The servers read model folders (and list the bucket: Cloud Storage checks listing on the bucket, not on an
    object prefix) but create, overwrite and delete only objects under vllm-cache/: never the checkpoints and
    datasets beside them."""
    member = (
        "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
        "tpu-stack-llm.svc.id.goog/subject/ns/llm/sa/vllm"
    )
    bindings = {
        b["inputs"]["role"]: b["inputs"] for b in example.by_type("gcp:storage/bucketIAMMember:BucketIAMMember")
    }
    assert bindings == {
        "roles/storage.objectViewer": {
            "bucket": "tpu-stack-llm-llm-tpu-stack", "role": "roles/storage.objectViewer", "member": member,
        },
        "roles/storage.objectUser": {
            "bucket": "tpu-stack-llm-llm-tpu-stack", "role": "roles/storage.objectUser", "member": member,
            "condition": {
                "title": "vllm-cache-only",
                "description": "Write and delete only under vllm-cache/ (Hugging Face downloads, XLA cache)",
                "expression": 'resource.name.startsWith("projects/_/buckets/tpu-stack-llm-llm-tpu-stack/objects/'
                'vllm-cache/")',
            },
        },
    }  # fmt: skip
    template = lws_spec(example, "llama-33-70b")["leaderWorkerTemplate"]
    pods = [template["leaderTemplate"]["spec"], template["workerTemplate"]["spec"],
            kube(example, DEPLOYMENT, "llama-31-70b")["inputs"]["spec"]["template"]["spec"]]  # fmt: skip
    assert {pod["serviceAccountName"] for pod in pods} == {"vllm"}


# ---- exposure -------------------------------------------------------------------------------------------------


def test_each_server_has_an_internal_load_balancer_to_its_api_servers_for_the_listed_clients(example: Plan) -> None:
    service = kube(example, SERVICE, "llama-33-70b-lb")["inputs"]
    # `pulumi up` waits for the load balancer's address only: the API servers behind it load for up to an hour,
    # far beyond the provider's 10-minute Service await, which would otherwise wait for every selected pod.
    assert service["metadata"]["annotations"] == {
        "networking.gke.io/load-balancer-type": "Internal",
        "pulumi.com/waitFor": "jsonpath={.status.loadBalancer.ingress[0].ip}",
    }
    assert service["spec"] == {
        "type": "LoadBalancer",
        # Only leaders: a group's other hosts run Ray workers. LWS's own headless Service takes the name llama-33-70b.
        "selector": {
            "app.kubernetes.io/name": "vllm",
            "app.kubernetes.io/instance": "llama-33-70b",
            "app.kubernetes.io/component": "api-server",
        },
        "ports": [{"name": "http", "protocol": "TCP", "port": 8000, "targetPort": 8000}],
        "loadBalancerSourceRanges": ["10.20.0.0/24"],
        "externalTrafficPolicy": "Local",
    }
    leader = lws_spec(example, "llama-33-70b")["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["labels"]
    worker = lws_spec(example, "llama-33-70b")["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"]
    assert leader["app.kubernetes.io/component"] == "api-server"
    assert worker["app.kubernetes.io/component"] == "ray-worker"


def test_the_namespace_denies_by_default_and_admits_clients_and_a_groups_own_hosts(example: Plan) -> None:
    policies = {r["inputs"]["metadata"]["name"]: r["inputs"]["spec"] for r in example.by_type(POLICY)
                if r["inputs"]["metadata"]["namespace"] == "llm"}  # fmt: skip
    assert sorted(policies) == [
        "allow-llama-31-70b-clients", "allow-llama-33-70b-clients", "allow-llama-33-70b-group",
        "allow-platform-egress", "default-deny",
    ]  # fmt: skip
    assert policies["allow-llama-31-70b-clients"]["ingress"] == [
        {"from": [{"ipBlock": {"cidr": "10.20.0.0/24"}}], "ports": [{"protocol": "TCP", "port": 8000}]}
    ]
    group = {"matchLabels": {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": "llama-33-70b"}}
    # Ray and the TPU runtime use many ports between the hosts of a slice: any port, only among them.
    assert policies["allow-llama-33-70b-group"] == {
        "podSelector": group,
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [{"podSelector": group}]}],
        "egress": [{"to": [{"podSelector": group}]}],
    }


def test_outputs_name_each_endpoint_model_and_shape(example: Plan) -> None:
    assert example.outputs["serving"] == {
        "llama-31-70b": {
            "endpoint": "http://192.0.2.20:8000/v1", "model": "meta-llama/Llama-3.1-70B-Instruct", "pool": "llm-v6e",
            "kind": "Deployment", "replicas": 1, "hostsPerReplica": 1, "chipsPerHost": 8, "tensorParallelSize": 8,
        },
        "llama-33-70b": {
            "endpoint": "http://192.0.2.20:8000/v1", "model": "meta-llama/Llama-3.3-70B-Instruct", "pool": "llm-v5e",
            "kind": "LeaderWorkerSet", "replicas": 2, "hostsPerReplica": 4, "chipsPerHost": 4,
            "tensorParallelSize": 16,
        },
    }  # fmt: skip


def test_every_serving_object_is_valid_for_the_api_server(example: Plan) -> None:
    """The LeaderWorkerSet against the vendored LWS v0.10.0 CRD (unknown fields refused), the rest strictly."""
    objects = [r["inputs"] for r in example.resources if r["type"].startswith("kubernetes:") and r["custom"]
               and r["inputs"]["metadata"].get("namespace") == "llm"]  # fmt: skip
    assert sorted(o["kind"] for o in objects) == [
        "Deployment", "LeaderWorkerSet", *["NetworkPolicy"] * 5, "Service", "Service", "ServiceAccount",
    ]  # fmt: skip
    assert validate.validate_all(objects) == []


def test_servers_wait_for_their_identity_and_leaderworkersets_for_the_lws_and_kueue_charts(example: Plan) -> None:
    """Both charts register fail-closed LeaderWorkerSet webhooks (Kueue's for every namespace but its own)."""
    lws = kube(example, LWS, "llama-33-70b")
    deployment = kube(example, DEPLOYMENT, "llama-31-70b")
    chart = "urn:pulumi:llm::tpu-stack::tpu-stack:index:LwsInstall$kubernetes:helm.sh/v4:Chart::lws-chart"
    kueue = "urn:pulumi:llm::tpu-stack::tpu-stack:index:KueueInstall$kubernetes:helm.sh/v4:Chart::kueue-chart"
    assert kueue in lws["dependencies"] and kueue not in deployment["dependencies"]
    ksa = (
        "urn:pulumi:llm::tpu-stack::tpu-stack:index:WorkloadIdentity$kubernetes:core/v1:ServiceAccount::"
        "llm-serving-identity-ksa"
    )
    assert chart in lws["dependencies"] and chart not in deployment["dependencies"]
    assert ksa in lws["dependencies"] and ksa in deployment["dependencies"]


def test_a_protected_stack_protects_every_serving_resource() -> None:
    alerts = {"tpu-stack:monitoring": {"notificationChannels": ["projects/proj-1234/notificationChannels/1"]}}
    plan = run_program({**BASE, **config(V5E_4X4), **alerts}, stack="prod")
    serving = [r for r in plan.resources if "LlmServing" in r["urn"] or "LwsInstall" in r["urn"]]
    assert serving and all(r["protect"] for r in serving)


# ---- Kueue ----------------------------------------------------------------------------------------------------


def test_serving_pools_are_not_kueue_capacity(run: StackRunner) -> None:
    plan = run({**config(V5E_4X4), "tpu-stack:tpuPools": [V5E_4X4, TRAIN]})
    assert set(plan.outputs["flavors"]) == {"train"}
    (queue,) = [r["inputs"] for r in plan.by_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")]
    flavors = [f["name"] for group in queue["spec"]["resourceGroups"] for f in group["flavors"]]
    assert flavors == ["train"]


def test_a_serving_pool_told_apart_from_a_training_pool_of_its_shape_is_selected_by_its_label(
    run: StackRunner,
) -> None:
    """The mixed config of a serving and a training v5e 4x4 pool, told apart by a label: each side selects its
    own value (the servers' pods in their nodeSelector, Kueue's flavor in its nodeLabels)."""
    serve = {**V5E_4X4, "labels": {"pool": "serve"}}
    train = {**TRAIN_4X4, "labels": {"pool": "train"}}
    plan = run({**config(serve), "tpu-stack:tpuPools": [serve, train]})
    template = lws_spec(plan)["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        assert template[role]["spec"]["nodeSelector"] == {
            "pool": "serve",
            "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
            "cloud.google.com/gke-tpu-topology": "4x4",
        }
    (flavor,) = plan.by_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
    assert flavor["inputs"]["spec"]["nodeLabels"] == {
        "pool": "train",
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "4x4",
    }


# ---- config lines ---------------------------------------------------------------------------------------------

TRAIN_4X4 = {**V5E_4X4, "name": "train", "slices": 1}
SAXML = {"pool": "sax", "service": CLIENTS}
SAX_POOL = {"name": "sax", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "zone": "us-central1-a"}
TRAIN = {"name": "train", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "zone": "us-central1-a"}
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("more replicas than slices", config(V5E_4X4, {**LLAMA_70B, "replicas": 3}),
     f"{S0}.replicas: 3 replicas need 3 slices of pool 'serve', which has 2; one replica runs on one slice: lower "
     "replicas or raise tpuPools slices"),
    ("two servers share too few slices",
     config(V5E_4X4, {**LLAMA_70B, "name": "a"}, {**LLAMA_70B, "name": "b", "replicas": 2}),
     f"{KEY}.servers[1].replicas: 2 replicas (1 held by other servers) need 3 slices of pool 'serve', which has 2; "
     "one replica runs on one slice: lower replicas or raise tpuPools slices"),
    ("no model", config(V5E_4X4, {k: v for k, v in LLAMA_70B.items() if k != "modelFolder"}),
     f"{S0}: set exactly one of model (a Hugging Face id) or modelFolder (a folder of the bucket)"),
    ("both models", config(V5E_4X4, {**LLAMA_70B, "model": "meta-llama/Llama-3.1-70B-Instruct"}),
     f"{S0}: set exactly one of model (a Hugging Face id) or modelFolder (a folder of the bucket)"),
    ("not a Hugging Face id", config(V6E_8T, {**HF_LLAMA, "model": "llama-70b"}),
     f"{S0}.model: 'llama-70b' is not a Hugging Face model id like meta-llama/Llama-3.1-8B-Instruct; for weights "
     "in the stack's bucket use modelFolder"),
    ("not a folder", config(V5E_4X4, {**LLAMA_70B, "modelFolder": "gs://b/models"}),
     f"{S0}.modelFolder: 'gs://b/models' is not a folder of the bucket; use a relative path like datasets or "
     "checkpoints/team"),
    # tpu-inference v0.27.0 models/jax/utils/file_utils.py: a download locks only within its pod (/tmp/lock).
    ("a Hugging Face model on multi-host slices", config(V5E_4X4, HF_LLAMA),
     f"{S0}.model: pool 'serve' slices are multi-host (4 VMs), and every host would download the Hugging Face model "
     "at once into one bucket folder, with no lock between pods; copy the weights into the bucket and set "
     "modelFolder"),
    ("a Hugging Face model with replicas", config(V6E_8T, {**HF_LLAMA, "replicas": 2}),
     f"{S0}.model: 2 replicas would each download the Hugging Face model at once into one bucket folder, with no "
     "lock between pods; copy the weights into the bucket and set modelFolder, or serve it with replicas: 1"),
    ("an argument the stack derives", config(V5E_4X4, {**LLAMA_70B, "engineArgs": ["--tensor-parallel-size=4"]}),
     f"{S0}.engineArgs: --tensor-parallel-size is derived by the stack from the server and its pool; remove it"),
    # vLLM reads `--max_model_len` as `--max-model-len` (vllm utils/argparse_utils.py FlexibleArgumentParser).
    ("an argument the stack derives, with underscores",
     config(V5E_4X4, {**LLAMA_70B, "engineArgs": ["--max_model_len=8192"]}),
     f"{S0}.engineArgs: --max-model-len is derived by the stack from the server and its pool; remove it"),
    # The item is never repeated: it may hold a credential of no known form.
    ("not an argument", config(V5E_4X4, {**LLAMA_70B, "engineArgs": ["--max-num-seqs=64", "max-num-seqs=64"]}),
     f"{S0}.engineArgs: item 1 is not an engine argument (not repeated here); write --name or --name=value, the "
     "name in lower case, one per item"),
    ("an argument in upper case", config(V5E_4X4, {**LLAMA_70B, "engineArgs": ["--MAX-NUM-SEQS=64"]}),
     f"{S0}.engineArgs: item 0 is not an engine argument (not repeated here); write --name or --name=value, the "
     "name in lower case, one per item"),
    ("no max model length", config(V5E_4X4, {k: v for k, v in LLAMA_70B.items() if k != "maxModelLen"}),
     f"{S0}.maxModelLen: required; add it"),
    ("zero replicas", config(V5E_4X4, {**LLAMA_70B, "replicas": 0}),
     f"{S0}.replicas: the number 0 is too small; use 1 or more"),
    ("unpinned image", config(V5E_4X4, {**LLAMA_70B, "image": "vllm/vllm-tpu:latest"}),
     f"{S0}.image: 'vllm/vllm-tpu:latest' is not pinned; use an explicit version tag or an @sha256 digest, never "
     "latest"),
    ("unknown dtype", config(V5E_4X4, {**LLAMA_70B, "dtype": "bf16"}),
     f"{S0}.dtype: the text 'bf16' is not accepted; use 'bfloat16', 'float16', 'float32', 'fp8', 'int8' or 'int4'"),
    ("server name too long", config(V5E_4X4, {**LLAMA_70B, "name": "l" * 41}),
     f"{S0}.name: '{'l' * 41}' is 41 characters; a server name has at most 40"),
    ("server name not a label", config(V5E_4X4, {**LLAMA_70B, "name": "Llama"}),
     f"{S0}.name: 'Llama' must be a DNS label of at most 63 characters: lowercase letters, digits and '-', "
     "starting with a letter"),
    ("unknown pool", config(V5E_4X4, {**LLAMA_70B, "pool": "nope"}),
     f"{S0}.pool: 'nope' names no TPU pool; tpuPools: serve"),
    ("a TPU version vLLM is not served on here",
     config({**V5E_4X4, "machineType": "ct5p-hightpu-4t", "topology": "2x2x4"}),
     f"{S0}.pool: pool 'serve' is TPU v5p (ct5p-hightpu-4t); the stack serves vLLM on v5e, v6e"),
    # In us-west4-a, which gives v5e on flex-start capacity, as queued provisioning needs (vendor/data/tpu_zones.json).
    ("a queued pool", {**config({**V5E_4X4, "provisioning": "queued", "slices": 1, "zone": "us-west4-a"}),
                       "gcp:region": "us-west4"},
     f"{S0}.pool: pool 'serve' is queued-provisioning, whose nodes exist only for Kueue-admitted jobs; serve on an "
     "on-demand, reservation, spot or flex-start pool"),
    ("Saxml's pool", {**config(SAX_POOL, {**LLAMA_70B, "pool": "sax", "dtype": "int8"}), "tpu-stack:saxml": SAXML},
     f"{S0}.pool: pool 'sax' serves Saxml, whose model servers hold all its slices"),
    # LWS would take `llama-lb`, the LoadBalancer Service, as the group's headless Service (it creates one of the
    # set's name only if none exists): the leader's address would never resolve.
    ("a server named after another's load balancer", config(V5E_4X4, LLAMA_70B, {**LLAMA_70B, "name": "llama-lb"}),
     f"{KEY}.servers[1].name: 'llama-lb' is the name of servers[0]'s load balancer Service; choose another name"),
    ("tensor parallelism that does not divide the chips", config(V6E_8T, {**LLAMA_70B, "tensorParallelSize": 3}),
     f"{S0}.tensorParallelSize: 3 does not divide the 8 chips of pool 'serve' slices; use 1, 2, 4 or 8"),
    ("tensor parallelism below a multi-host slice", config(V5E_4X4, {**LLAMA_70B, "tensorParallelSize": 8}),
     f"{S0}.tensorParallelSize: pool 'serve' slices are multi-host, and a multi-host server shards over all 16 "
     "chips of a slice; remove it or serve on a single-host pool"),
    # 70 x 2 = 140 GB; 4 v6e chips hold 128 GB, 115.2 of it usable.
    ("weights that do not fit the chips of the tensor parallelism",
     config(V6E_8T, {**LLAMA_70B, "tensorParallelSize": 4}),
     f"{S0}.billionsOfParameters: a 70B model in bfloat16 needs 140 GB of HBM for its weights; tensorParallelSize 4 "
     "shards it over 4 v6e chips, which hold 128 GB, of which the server uses 90%: raise tensorParallelSize (at most "
     "8, the slice's chips)"),
    ("zero tensor parallelism", config(V6E_8T, {**LLAMA_70B, "tensorParallelSize": 0}),
     f"{S0}.tensorParallelSize: the number 0 is too small; use 1 or more"),
    ("two servers with one name", config({**V5E_4X4, "slices": 2}, LLAMA_70B, LLAMA_70B),
     f"{KEY}.servers[1].name: 'llama' is already servers[0]"),
    ("no servers", {"tpu-stack:tpuPools": [V5E_4X4], KEY: {"service": CLIENTS}},
     f"{KEY}.servers: no server is listed; add one or remove tpu-stack:serving"),
    ("no client ranges", {"tpu-stack:tpuPools": [V5E_4X4], KEY: {"servers": [LLAMA_70B]}},
     f"{KEY}.service.sourceRanges: required (the client CIDRs allowed to call the servers' internal load balancers "
     "on port 8000); list them"),
    ("the LWS namespace", config(V5E_4X4, namespace="lws-system"),
     f"{KEY}.namespace: 'lws-system' belongs to the system; give the servers their own"),
    ("the default namespace", config(V5E_4X4, namespace="default"),
     f"{KEY}.namespace: 'default' belongs to the system; give the servers their own"),
    ("Saxml's namespace",
     {**config(V5E_4X4, namespace="saxml"), "tpu-stack:tpuPools": [V5E_4X4, SAX_POOL], "tpu-stack:saxml": SAXML},
     f"{KEY}.namespace: 'saxml' is already Saxml's namespace; give the servers their own"),
    ("a token Secret that is no name", config(V5E_4X4, huggingFaceToken={"secret": "HF Token"}),
     f"{KEY}.huggingFaceToken.secret: 'HF Token' must be a DNS label of at most 63 characters: lowercase letters, "
     "digits and '-', starting with a letter"),
    ("an LWS version without its v", config(V5E_4X4, lwsVersion="0.10.0"),
     f"{KEY}.lwsVersion: '0.10.0' is not an LWS chart version like v0.10.0 (its chart versions keep the 'v')"),
    ("a malformed LWS digest", config(V5E_4X4, lwsImageDigest="sha256:abc"),
     f"{KEY}.lwsImageDigest: 'sha256:abc' is not an image digest; write sha256: and its 64 hex digits"),
    ("a team share of a serving pool",
     {**config(V5E_4X4), "tpu-stack:tpuPools": [V5E_4X4, TRAIN],
      "tpu-stack:queues": {"teams": [{"name": "research", "shares": {"serve": 8}}]}},
     "tpu-stack:queues.teams[0].shares.serve: pool 'serve' serves the vLLM server 'llama', whose replicas hold its "
     "slices; it is not Kueue capacity"),
    # Kueue's flavor of `train` selects accelerator and topology only, which the serving slices carry as well, and
    # the servers' pods would select the training slices just the same.
    ("a training pool of the serving pool's shape",
     {**config(V5E_4X4), "tpu-stack:tpuPools": [V5E_4X4, TRAIN_4X4]},
     "tpu-stack:tpuPools: pools 'serve' and 'train' are both ct5lp-hightpu-4t 4x4 and can run each other's pods, and "
     "'serve' serves the vLLM server 'llama', whose replicas hold its slices; give each a label the other has with "
     "another value (labels: {pool: serve} and {pool: train})"),
    # A taint keeps training pods off the serving slices, but the servers' pods still fit the training slices.
    ("a serving pool told apart by a taint alone",
     {**config(V5E_4X4), "tpu-stack:tpuPools": [
         {**V5E_4X4, "taints": [{"key": "serving", "value": "llm"}]}, {**TRAIN_4X4, "labels": {"pool": "train"}}]},
     "tpu-stack:tpuPools: pools 'serve' and 'train' are both ct5lp-hightpu-4t 4x4 and can run each other's pods, and "
     "'serve' serves the vLLM server 'llama', whose replicas hold its slices; give each a label the other has with "
     "another value (labels: {pool: serve} and {pool: train})"),
    ("two serving pool groups of one shape",
     config(V5E_4X4, LLAMA_70B, {**LLAMA_70B, "name": "other", "pool": "serve-b"}) | {
         "tpu-stack:tpuPools": [V5E_4X4, {**V5E_4X4, "name": "serve-b"}]},
     "tpu-stack:tpuPools: pools 'serve' and 'serve-b' are both ct5lp-hightpu-4t 4x4 and can run each other's pods, "
     "and 'serve' serves the vLLM server 'llama', whose replicas hold its slices; give each a label the other has "
     "with another value (labels: {pool: serve} and {pool: serve-b})"),
    ("a team in the serving namespace",
     {**config(V5E_4X4), "tpu-stack:tpuPools": [V5E_4X4, TRAIN], "tpu-stack:queues": {"teams": [{"name": "llm"}]}},
     "tpu-stack:queues.teams[0].namespace: 'llm' belongs to the system or another component"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "extra", "line"), CASES, ids=[c[0] for c in CASES])
def test_serving_config_errors_are_one_line_each(case: str, extra: dict[str, Any], line: str) -> None:
    assert config_error(extra) == [line]


@pytest.mark.parametrize(
    "server",
    [
        {"engineArgs": ["--max_num_seqs=128", "--chat-template=templates/sk-llama.jinja"]},
        {"servedModelName": "acme-sk-llama-31-70b-instruct-v2"},
        {"servedModelName": "acme/llama-33-70b-sk-instruct-finetuned-v2"},
        {"modelFolder": "models/sk-llama-3.1-70b-instruct-finetuned"},
    ],
    ids=["underscores and an sk- path in engineArgs", "an sk- served model name", "an sk- model id", "an sk- folder"],
)
def test_names_and_flags_that_only_look_like_credentials_are_accepted(server: dict[str, Any]) -> None:
    """vLLM takes `_` for `-` in flag names; `sk-` inside a name or a path is no OpenAI key."""
    assert loaded(config(V5E_4X4, {**LLAMA_70B, **server})).serving is not None


def test_only_the_serving_identity_needs_the_project_number(run: StackRunner) -> None:
    """No bucket reader or writer and no Saxml: the serving KSA's principal member still gets the project number."""
    plan = run(config(V6E_8T))
    bindings = plan.by_type("gcp:storage/bucketIAMMember:BucketIAMMember")
    assert len(bindings) == 2
    for binding in bindings:
        assert binding["inputs"]["member"].startswith("principal://iam.googleapis.com/projects/123456789012/")


# ---- the README section -------------------------------------------------------------------------------------


def readme_section() -> str:
    """The "LLM serving (vLLM)" section of docs/serving.md, its whitespace folded (sentences wrap across lines)."""
    text = (REPO / "docs" / "serving.md").read_text() + "\n## "
    start = text.index("## LLM serving (vLLM)")
    return " ".join(text[start : text.index("\n## ", start)].split())


def test_the_readme_states_the_host_resources_cache_and_deadline_the_example_gets(example: Plan) -> None:
    """The section's numbers are read back from what the example stack declares, so they cannot go stale."""
    section = readme_section()
    single = kube(example, DEPLOYMENT, "llama-31-70b")["inputs"]["spec"]
    multi = lws_spec(example, "llama-33-70b")["leaderWorkerTemplate"]["leaderTemplate"]
    for machine, template in (("ct6e-standard-8t", single["template"]), ("ct5lp-hightpu-4t", multi)):
        (container,) = template["spec"]["containers"]
        requests, limits = container["resources"]["requests"], container["resources"]["limits"]
        assert f"`{machine}` {requests['cpu']} CPU and {requests['memory']} (limit {limits['memory']})" in section
    assert f"`progressDeadlineSeconds` is {single['progressDeadlineSeconds']}" in section
    pool = next(p for p in load_stack("llm").tpu_pools if p.name == "llm-v5e")
    cache = f"`file-cache:max-size-mb:{file_cache_max_mib(pool.file_cache_limit_gib)}` in a "
    assert cache + f"`{pool.file_cache_limit_gib}Gi` cache volume" in section
