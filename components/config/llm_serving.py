"""LLM serving with vLLM (`tpu-stack:serving`): OpenAI-compatible servers on TPU pool groups.

A server is one model behind one internal load balancer, with one replica per slice of its pool group. Everything
that must agree with the pool is derived here from the pool's slice math: tensor parallelism is the slice's chips
(or `tensorParallelSize` of a single-host slice's), a single-host slice is one vLLM pod (a Deployment), a multi-host
slice is one LeaderWorkerSet group with one pod per VM (size = VMs per slice). The weights must fit the HBM of the
chips they are sharded over at the dtype's bytes per parameter, within the share of HBM the server is told to use
(`--gpu-memory-utilization`); what does not fit is refused, one line each.

Sources: vLLM's TPU backend (vllm-project/tpu-inference) runs multi-host slices over Ray
(`TPU_MULTIHOST_BACKEND=ray`, a Ray head in the group's leader, the other hosts joining it; tag v0.27.0
`examples/offload/gke/benchmarks/multi-host/deploy-baseline.yaml`), as the LeaderWorkerSet project's own TPU
example does (kubernetes-sigs/lws v0.10.0 `docs/examples/vllm/TPU/lws.yaml`); GKE's single-host tutorial serves
from a Deployment (GoogleCloudPlatform/kubernetes-engine-samples `ai-ml/vllm-tpu/vllm-llama3-70b.yaml`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from components import credentials, tpu_catalog
from components.config.base import (
    BUILT_IN_NAMESPACES,
    PROJECT,
    RESERVED_NAMESPACES,
    ConfigModel,
    image_digest,
    kubernetes_name,
    source_range,
)
from components.config.pools import TpuPoolConfig
from components.config.serving import (
    READER_ROLE,
    WRITER_ROLE,
    BucketConfig,
    BucketMount,
    IdentityForm,
    SaxmlConfig,
    WorkloadRef,
    file_cache_max_mib,
    optional_folder,
    pinned_image,
)

KEY = f"{PROJECT}:serving"
VLLM_IMAGE = "vllm/vllm-tpu:v0.27.0"
"""vLLM's TPU image (Docker Hub `vllm/vllm-tpu`, built from vllm-project/tpu-inference); the release tag of
tpu-inference v0.27.0 (2026-08-20). GKE's tutorial and LWS's example run `:latest`, which is never pinned."""
LWS_VERSION = "v0.10.0"
"""The LeaderWorkerSet chart (`oci://registry.k8s.io/lws/charts/lws`); its versions keep the leading `v`."""
SERVER_PORT = 8000
RAY_PORT = 6379
"""The Ray head's GCS port in the group's leader, which the other hosts of the slice join."""
MEMORY_UTILIZATION = 0.9
"""Share of each chip's HBM the server may use (`--gpu-memory-utilization`, vLLM's default 0.9 passed explicitly):
the weights must fit in it, the rest of it holds the KV cache."""
BYTES_PER_PARAMETER: dict[str, float] = {
    "bfloat16": 2,
    "float16": 2,
    "float32": 4,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
}
VLLM_DTYPES = ("bfloat16", "float16", "float32")
"""Passed as `--dtype`; the quantized types are read by vLLM from the checkpoint's own quantization config."""
SERVING_TPU_VERSIONS = ("v5e", "v6e")
"""TPU versions the stack serves vLLM on: the ones vLLM's TPU backend and GKE's vLLM tutorials run on."""
CACHE_VOLUME = "vllm-cache"
HF_CACHE = "/cache/huggingface"
"""Where a Hugging Face model's files land, in the server's bucket folder: vLLM's `--download-dir` for the weights
and huggingface_hub's `HF_HUB_CACHE` for the config and tokenizer files, which would otherwise go to the
container's `~/.cache/huggingface/hub` and be fetched again on every start."""
MODEL_VOLUME = "model"
MULTI_HOST_ENV: tuple[tuple[str, str], ...] = (
    ("TPU_MULTIHOST_BACKEND", "ray"),
    ("MODEL_IMPL_TYPE", "vllm"),
    ("TPU_BACKEND_TYPE", "jax"),
    ("JAX_PLATFORMS", ""),
    ("RAY_health_check_failure_threshold", "100"),
    ("RAY_health_check_timeout_ms", "20000"),
    ("RAY_health_check_period_ms", "10000"),
    ("RAY_num_heartbeats_timeout", "300000"),
    ("RAY_raylet_heartbeat_timeout_milliseconds", "3000000"),
    ("RAY_grpc_keepalive_timeout_ms", "3000000"),
    ("RAY_RESERVE_CPU_FOR_RAYLET", "1"),
)
"""Environment of every pod of a multi-host group, as vLLM TPU's own multi-host runs set it (tpu-inference v0.27.0
`.buildkite/scripts/run_multihost.sh`, head and workers; `examples/offload/gke/benchmarks/multi-host/
deploy-baseline.yaml`): Ray as the multi-host backend; vLLM's own model code (`MODEL_IMPL_TYPE=vllm`) on the JAX
backend, since with the default `auto` most architectures, Llama's included, resolve to the Flax implementation
(`models/common/model_loader.py` resolve_model_architecture), which the release's support matrix lists as failing
multi-host (README, Core Features: multi-host Flax Failing, Torchax Untested); and Ray's relaxed health checks, so
hosts busy loading and compiling for many minutes are not declared dead. Recovery does not rely on Ray noticing a
lost host: LeaderWorkerSet recreates the whole group when any of its pods restarts (`RecreateGroupOnPodRestart`)."""
STARTUP_MINUTES = 60
"""How long a server may take to become healthy: download (first start), load and XLA compilation of a 70B model
take tens of minutes (about 16 on v6e by GKE's sample, kubernetes-engine-samples commit 64dcc999)."""
ROLLOUT_DEADLINE_SECONDS = (STARTUP_MINUTES + 15) * 60
"""A Deployment's `progressDeadlineSeconds`: a new pod may take the startup probe's hour plus scheduling and the
~10 GB image pull before it is ready and the rollout progresses. At the default 600 the Deployment reports
ProgressDeadlineExceeded mid-rollout and `kubectl rollout status` gives up."""
STACK_ARGS = (
    "--model",
    "--served-model-name",
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--max-model-len",
    "--dtype",
    "--host",
    "--port",
    "--download-dir",
    "--gpu-memory-utilization",
)
"""Engine arguments the stack derives; engineArgs may not set them again."""
_HF_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_ENGINE_ARG = re.compile(r"^--[a-z0-9][a-z0-9_-]*(=.*)?$")
"""`--name` or `--name=value`; vLLM reads `_` in a name as `-` (vllm utils/argparse_utils.py,
FlexibleArgumentParser)."""
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
Dtype = Literal["bfloat16", "float16", "float32", "fp8", "int8", "int4"]
SERVER_NAME_MAX = 40
"""LeaderWorkerSet names its StatefulSets `<server>-<group>` and pods `<server>-<group>-<host>`; the revision-hash
label of a StatefulSet's pods (`<statefulset>-<hash>`) must stay a 63-character label value."""


def _server_name(name: str) -> str:
    """A DNS-1035 label (LeaderWorkerSet and Service names must be), short enough for the names LWS derives."""
    kubernetes_name(name)
    if len(name) > SERVER_NAME_MAX:
        raise ValueError(f"{name!r} is {len(name)} characters; a server name has at most {SERVER_NAME_MAX}")
    return name


def _hf_id(model: str | None) -> str | None:
    if model is not None and not _HF_ID.match(model):
        raise ValueError(
            f"{model!r} is not a Hugging Face model id like meta-llama/Llama-3.1-8B-Instruct; for weights in the "
            "stack's bucket use modelFolder"
        )
    return model


def _engine_args(args: tuple[str, ...]) -> tuple[str, ...]:
    for index, arg in enumerate(args):
        problem = _credential_arg_problem(index, arg)
        if problem:
            raise ValueError(problem)
        if not _ENGINE_ARG.match(arg):
            # The item is not repeated: it may hold a value that is a credential of no known form.
            raise ValueError(
                f"item {index} is not an engine argument (not repeated here); write --name or --name=value, the name "
                "in lower case, one per item"
            )
        flag = credentials.flag_name(arg)
        if flag in STACK_ARGS:
            raise ValueError(f"{flag} is derived by the stack from the server and its pool; remove it")
    return args


def _credential_arg_problem(index: int, arg: str) -> str | None:
    """A credential among the engine arguments is readable by anyone who can read the server's Deployment or
    LeaderWorkerSet and is kept in the stack's state; the line never repeats it."""
    flag = credentials.secret_flag(arg)
    if flag is None and not credentials.contains_credential(arg):
        return None
    what = f"sets {flag}" if flag else "holds a credential (not repeated here)"
    return (
        f"item {index} {what}: arguments are readable by anyone who can read the server's Deployment or "
        "LeaderWorkerSet, and are kept in the stack's state; remove it (a Hugging Face token belongs in the Secret "
        "that serving.huggingFaceToken names)"
    )


_TOKEN_NOT_NAME = (
    "this is the token itself (not repeated here), not the name of the Secret that holds it; create the Secret in the "
    "serving namespace (kubectl create secret generic hf-token --from-literal=token=<token>) and give its name"
)


class HuggingFaceTokenConfig(ConfigModel):
    """A Secret the operator creates in the serving namespace; only its name is in the config, never the token."""

    secret: str
    """Name of the Secret in the serving namespace; mounted as a file for servers with a Hugging Face `model`."""
    key: str = "token"
    """Key of the Secret that holds the token."""

    _secret = field_validator("secret")(kubernetes_name)

    @model_validator(mode="before")
    @classmethod
    def _not_a_token(cls, data: object) -> object:
        """The token pasted where the Secret's settings go, as the mapping or as one of its values."""
        values = data.values() if isinstance(data, dict) else [data]
        if any(isinstance(value, str) and credentials.contains_credential(value) for value in values):
            raise ValueError(_TOKEN_NOT_NAME)
        return data

    @field_validator("key")
    @classmethod
    def _key(cls, key: str) -> str:
        if not _SECRET_KEY.match(key):
            raise ValueError(f"{key!r} is not a Secret key; use letters, digits, '-', '_' or '.'")
        return key


class ServingServiceConfig(ConfigModel):
    """Each server's internal load balancer: only these client ranges reach it (required)."""

    source_ranges: tuple[Annotated[str, AfterValidator(source_range)], ...] = ()
    """Client CIDRs of every server's internal load balancer (required, /8 or narrower)."""


class LlmServerConfig(ConfigModel):
    """One model served by vLLM on a pool group: `replicas` slices of it, one replica per slice."""

    name: str
    """DNS label of at most 40 characters: the Deployment or LeaderWorkerSet, and `<name>-lb`."""
    pool: str
    """The TPU pool group (v5e or v6e; not queued, not Saxml's): one replica per slice."""
    model: str | None = None
    """A Hugging Face model id, on a single-host pool with one replica: the server downloads it once into the bucket
    (`cacheFolder`). Several replicas or multi-host slices read `modelFolder` (they would download at once)."""
    model_folder: str | None = None
    """A folder of the stack's bucket holding the weights (config, tokenizer, safetensors), mounted read-only."""
    served_model_name: str | None = None
    """The `model` clients name in requests; defaults to the Hugging Face id, or the server's name."""
    billions_of_parameters: float = Field(gt=0)
    """Model size: with `dtype`, the weights must fit 90% of a slice's HBM."""
    dtype: Dtype = "bfloat16"
    """Weight type: bfloat16, float16, float32, fp8, int8 or int4 (bytes per parameter for the sizing check)."""
    replicas: int = Field(default=1, ge=1)
    """Slices the server holds; all servers of a pool group together at most its `slices`."""
    max_model_len: int = Field(gt=0)
    """vLLM's `--max-model-len`."""
    engine_args: tuple[str, ...] = ()
    """Further vLLM arguments (`--name=value`, the name in lower case; vLLM takes `_` for `-`); the ones the stack
    derives and credential flags (`--api-key`, `--hf-token`) are refused."""
    image: str = VLLM_IMAGE
    """The vLLM TPU image, pinned: a release (major.minor.patch, `v0.27.0`), a dated build or full commit tag, or an
    `@sha256:` digest; never `latest`, `nightly` or `v0.27`."""
    tensor_parallel_size: int | None = Field(default=None, ge=1)
    """Chips the model is sharded over, for a model whose attention heads the slice's chips do not divide (vLLM
    refuses those): a divisor of a single-host slice's chips, the rest of which stay idle; the weights must fit
    these chips' HBM.

    Default: every chip of the slice"""

    _name = field_validator("name")(_server_name)
    _model = field_validator("model")(_hf_id)
    _folder = field_validator("model_folder")(optional_folder)
    _args = field_validator("engine_args")(_engine_args)
    _image = field_validator("image")(pinned_image)

    @model_validator(mode="after")
    def _one_source(self) -> LlmServerConfig:
        if (self.model is None) == (self.model_folder is None):
            raise ValueError("set exactly one of model (a Hugging Face id) or modelFolder (a folder of the bucket)")
        return self

    @property
    def weights_gb(self) -> float:
        return self.billions_of_parameters * BYTES_PER_PARAMETER[self.dtype]

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model or self.name


class LlmServingConfig(ConfigModel):
    """vLLM servers (`tpu-stack:serving`), all in one namespace as one Workload Identity KSA."""

    namespace: str = "llm"
    """Where every server runs (created by the stack; built-in, system, Saxml's and team namespaces are refused)."""
    service_account: str = "vllm"
    """The KSA the server pods use; through Workload Identity it reads the bucket (`roles/storage.objectViewer`) and
    writes only under `cacheFolder` (`roles/storage.objectUser` with an IAM condition)."""
    identity: IdentityForm = "principal"
    """Workload Identity form, as for bucket readers and writers."""
    iam_service_account: str | None = None
    """The IAM service account of the `iamServiceAccount` identity form."""
    hugging_face_token: HuggingFaceTokenConfig | None = None
    """A Secret the operator creates in the namespace with the Hugging Face token (the token never enters the
    config or the state); none for public models."""
    cache_folder: str = "vllm-cache"
    """Folder of the bucket where each server keeps its Hugging Face downloads and XLA compilation cache
    (`<cacheFolder>/<server>`), so a restart neither downloads nor compiles again."""
    service: ServingServiceConfig = ServingServiceConfig()
    """The servers' internal load balancers."""
    servers: tuple[LlmServerConfig, ...] = ()
    """One OpenAI-compatible server each (at least one)."""
    lws_version: str = LWS_VERSION
    """The LeaderWorkerSet chart version (`oci://registry.k8s.io/lws/charts/lws`; its versions keep the `v`)."""
    lws_image_digest: str | None = None
    """`sha256:` digest pinning the LeaderWorkerSet controller image; unset, the chart's tag."""

    _names = field_validator("namespace", "service_account")(kubernetes_name)
    _cache = field_validator("cache_folder")(optional_folder)

    @field_validator("lws_version")
    @classmethod
    def _lws_version(cls, version: str) -> str:
        if not re.match(r"^v\d+\.\d+\.\d+$", version):
            raise ValueError(f"{version!r} is not an LWS chart version like v0.10.0 (its chart versions keep the 'v')")
        return version

    _digest = field_validator("lws_image_digest")(image_digest)

    @property
    def lws_image_tag(self) -> str | None:
        """The chart's image tag with the digest appended (`v0.10.0@sha256:...`), or None: the chart's own tag."""
        return f"{self.lws_version}@{self.lws_image_digest}" if self.lws_image_digest else None

    @property
    def workload(self) -> WorkloadRef:
        return WorkloadRef(
            namespace=self.namespace,
            service_account=self.service_account,
            identity=self.identity,
            iam_service_account=self.iam_service_account,
        )

    def bucket_grants(self, bucket: str) -> list[tuple[str, dict[str, str] | None]]:
        """(role, IAM condition) of the servers on the stack's bucket `bucket`: read anywhere (model folders; the
        mounts list the bucket, a permission Cloud Storage checks on the bucket, not on an object prefix), write
        and delete only objects under the cache folder, so a server cannot overwrite or delete the checkpoints and
        datasets beside it. The bucket has uniform bucket-level access, which IAM conditions need."""
        prefix = f"projects/_/buckets/{bucket}/objects/{self.cache_folder}/"
        return [
            (READER_ROLE, None),
            (
                WRITER_ROLE,
                {
                    "title": "vllm-cache-only",
                    "description": f"Write and delete only under {self.cache_folder}/ (Hugging Face downloads, "
                    "XLA cache)",
                    "expression": f'resource.name.startsWith("{prefix}")',
                },
            ),
        ]


@dataclass(frozen=True)
class ServerShape:
    """A server on its pool: what the Kubernetes objects are built from."""

    server: LlmServerConfig
    pool: TpuPoolConfig
    spare_slices: int
    """Slices of the pool no server replica holds: a rollout may start a new replica there first."""

    @property
    def multi_host(self) -> bool:
        return self.pool.multi_host

    @property
    def kind(self) -> str:
        return "LeaderWorkerSet" if self.multi_host else "Deployment"

    @property
    def tensor_parallel_size(self) -> int:
        """vLLM shards the model over every chip of the slice (one replica per slice), or over the server's
        `tensorParallelSize` of them."""
        return self.server.tensor_parallel_size or self.pool.chips_per_slice

    @property
    def hosts(self) -> int:
        """Pods of one replica: one per VM of the slice (the LeaderWorkerSet group size)."""
        return self.pool.vms_per_slice

    @property
    def chips_per_host(self) -> int:
        return self.pool.machine.chips_per_vm

    @property
    def hbm_gb(self) -> float:
        """HBM of the chips the model is sharded over: its weights must fit there."""
        return self.tensor_parallel_size * self.pool.machine.version.hbm_gb_per_chip

    @property
    def usable_hbm_gb(self) -> float:
        return self.hbm_gb * MEMORY_UTILIZATION

    @property
    def max_surge(self) -> int:
        """One replica above `replicas` during a rollout when the pool has a slice to put it on, else none."""
        return 1 if self.spare_slices > 0 else 0

    @property
    def max_unavailable(self) -> int:
        """With a spare slice nothing goes down first; without one, one replica at a time (never both 0)."""
        return 0 if self.max_surge else 1

    @property
    def file_cache_gib(self) -> int:
        """The FUSE file cache of a bucket model's weights: as large as the node's boot disk holds when the weights
        fit in it, else none. Weights larger than the cache would all be written to the boot disk and evicted
        again on their one read (gcsfuse caches each file it reads, evicting the least recently used), so they are
        read straight from the bucket instead."""
        limit = self.pool.file_cache_limit_gib
        return limit if self.server.weights_gb * 1e9 <= file_cache_max_mib(limit) * 2**20 else 0

    def mounts(self, serving: LlmServingConfig) -> list[BucketMount]:
        """The server's cache folder read-write at /cache; a bucket model's folder read-only at /models."""
        cache = f"{serving.cache_folder}/{self.server.name}"
        mounts = [BucketMount(CACHE_VOLUME, cache, "/cache", read_only=False)]
        if self.server.model_folder is not None:
            mounts.append(BucketMount(MODEL_VOLUME, self.server.model_folder, "/models", read_only=True))
        return mounts

    @property
    def engine_args(self) -> list[str]:
        """The API server's arguments: the ones derived from the server and its slice, then `engineArgs`."""
        server = self.server
        args = [
            "--host=0.0.0.0",
            f"--port={SERVER_PORT}",
            f"--model={server.model or '/models'}",
            f"--served-model-name={server.model_name}",
            f"--tensor-parallel-size={self.tensor_parallel_size}",
            f"--max-model-len={server.max_model_len}",
            f"--gpu-memory-utilization={MEMORY_UTILIZATION}",
        ]
        if server.dtype in VLLM_DTYPES:
            args.append(f"--dtype={server.dtype}")
        if server.model is not None:
            args.append(f"--download-dir={HF_CACHE}")
        return [*args, *server.engine_args]


def server_shapes(serving: LlmServingConfig, pools: tuple[TpuPoolConfig, ...]) -> list[ServerShape]:
    """Each server with its pool (servers whose pool does not exist are left out: serving_problems says so)."""
    by_name = {pool.name: pool for pool in pools}
    held: dict[str, int] = {}
    for server in serving.servers:
        held[server.pool] = held.get(server.pool, 0) + server.replicas
    return [
        ServerShape(server, by_name[server.pool], by_name[server.pool].slices - held[server.pool])
        for server in serving.servers
        if server.pool in by_name
    ]


GATED_PUBLISHERS = ("meta-llama/", "google/gemma")
"""Hugging Face publishers whose models are gated: a download needs the token of an account that accepted their
terms (huggingface.co/docs/hub/models-gated; meta-llama's and google's gemma repositories answer "Cannot access gated
repo ... You must be authenticated to access it" without one)."""


def llm_serving_warnings(serving: LlmServingConfig) -> list[str]:
    """A gated model downloaded without a token: valid config, a server that never starts."""
    if serving.hugging_face_token is not None:
        return []
    return [
        f"{KEY}.servers[{index}].model: {server.model} is gated on Hugging Face (its publisher's terms must be "
        "accepted) and the download fails without a token; set serving.huggingFaceToken to the Secret holding the "
        "token of an account that accepted them"
        for index, server in enumerate(serving.servers)
        if server.model is not None and server.model.startswith(GATED_PUBLISHERS)
    ]


def serving_pools(serving: LlmServingConfig | None) -> dict[str, str]:
    """Pool group -> why it is not Kueue capacity: the replicas of a server hold its slices."""
    if serving is None:
        return {}
    return {
        server.pool: f"serves the vLLM server {server.name!r}, whose replicas hold its slices"
        for server in reversed(serving.servers)
    }


def llm_serving_problems(
    serving: LlmServingConfig,
    *,
    pools: tuple[TpuPoolConfig, ...],
    taken_namespaces: dict[str, str],
    saxml_pool: str | None,
) -> list[str]:
    """Problems of `tpu-stack:serving`: its namespace is its own (`taken_namespaces`: namespace -> owner), servers
    run on existing, servable pools that hold their replicas and their weights."""
    problems = [f"{KEY}.{field}: {message}" for field, message in serving.workload.problems()]
    if not serving.service.source_ranges:
        problems.append(
            f"{KEY}.service.sourceRanges: required (the client CIDRs allowed to call the servers' internal load "
            f"balancers on port {SERVER_PORT}); list them"
        )
    if serving.namespace in BUILT_IN_NAMESPACES or serving.namespace in RESERVED_NAMESPACES:
        problems.append(f"{KEY}.namespace: {serving.namespace!r} belongs to the system; give the servers their own")
    elif serving.namespace in taken_namespaces:
        problems.append(
            f"{KEY}.namespace: {serving.namespace!r} is already {taken_namespaces[serving.namespace]}'s namespace; "
            "give the servers their own"
        )
    if not serving.servers:
        problems.append(f"{KEY}.servers: no server is listed; add one or remove tpu-stack:serving")
    names: dict[str, int] = {}
    for index, server in enumerate(serving.servers):
        where = f"{KEY}.servers[{index}]"
        if server.name in names:
            problems.append(f"{where}.name: {server.name!r} is already servers[{names[server.name]}]")
        owner = next((i for i, other in enumerate(serving.servers) if f"{other.name}-lb" == server.name), None)
        if owner is not None:
            # A multi-host server's LeaderWorkerSet takes a headless Service of its own name only if none exists
            # (lws v0.10.0 pkg/utils/controller/controller_utils.go CreateHeadlessServiceIfNotExists).
            problems.append(
                f"{where}.name: {server.name!r} is the name of servers[{owner}]'s load balancer Service; choose "
                "another name"
            )
        names.setdefault(server.name, index)
        problems += _server_problems(server, where, pools, saxml_pool)
    problems += _replica_problems(serving, pools)
    return problems


def _server_problems(
    server: LlmServerConfig, where: str, pools: tuple[TpuPoolConfig, ...], saxml_pool: str | None
) -> list[str]:
    pool = next((p for p in pools if p.name == server.pool), None)
    if pool is None:
        names = ", ".join(p.name for p in pools) or "none"
        return [f"{where}.pool: {server.pool!r} names no TPU pool; tpuPools: {names}"]
    if pool.problems():
        return []  # reported on the pool's own key
    version = pool.machine.version.name
    if version not in SERVING_TPU_VERSIONS:
        return [
            f"{where}.pool: pool {pool.name!r} is TPU {version} ({pool.machine.name}); the stack serves vLLM on "
            f"{', '.join(SERVING_TPU_VERSIONS)}"
        ]
    if pool.name == saxml_pool:
        return [f"{where}.pool: pool {pool.name!r} serves Saxml, whose model servers hold all its slices"]
    if pool.provisioning == "queued":
        return [
            f"{where}.pool: pool {pool.name!r} is queued-provisioning, whose nodes exist only for Kueue-admitted "
            "jobs; serve on an on-demand, reservation, spot or flex-start pool"
        ]
    if server.model is not None and pool.multi_host:
        return [
            f"{where}.model: pool {pool.name!r} slices are multi-host ({pool.vms_per_slice} VMs), and every host "
            "would download the Hugging Face model at once into one bucket folder, with no lock between pods; copy "
            "the weights into the bucket and set modelFolder"
        ]
    if server.model is not None and server.replicas > 1:
        return [
            f"{where}.model: {server.replicas} replicas would each download the Hugging Face model at once into one "
            "bucket folder, with no lock between pods; copy the weights into the bucket and set modelFolder, or serve "
            "it with replicas: 1"
        ]
    tensor = server.tensor_parallel_size
    if tensor is not None and pool.multi_host and tensor != pool.chips_per_slice:
        return [
            f"{where}.tensorParallelSize: pool {pool.name!r} slices are multi-host, and a multi-host server shards "
            f"over all {pool.chips_per_slice} chips of a slice; remove it or serve on a single-host pool"
        ]
    if tensor is not None and pool.chips_per_slice % tensor:
        divisors = [str(n) for n in range(1, pool.chips_per_slice + 1) if pool.chips_per_slice % n == 0]
        return [
            f"{where}.tensorParallelSize: {tensor} does not divide the {pool.chips_per_slice} chips of pool "
            f"{pool.name!r} slices; use {', '.join(divisors[:-1])} or {divisors[-1]}"
        ]
    shape = ServerShape(server, pool, 0)
    if tensor is not None and tensor < pool.chips_per_slice and server.weights_gb > shape.usable_hbm_gb:
        return [
            f"{where}.billionsOfParameters: a {server.billions_of_parameters:g}B model in {server.dtype} needs "
            f"{server.weights_gb:g} GB of HBM for its weights; tensorParallelSize {tensor} shards it over {tensor} "
            f"{version} chips, which hold {shape.hbm_gb:g} GB, of which the server uses {MEMORY_UTILIZATION:.0%}: "
            f"raise tensorParallelSize (at most {pool.chips_per_slice}, the slice's chips)"
        ]
    if server.weights_gb > shape.usable_hbm_gb:
        return [
            f"{where}.billionsOfParameters: a {server.billions_of_parameters:g}B model in {server.dtype} needs "
            f"{server.weights_gb:g} GB of HBM for its weights; pool {pool.name!r} slices ({pool.slice_topology}, "
            f"{pool.chips_per_slice} {version} chips) hold {shape.hbm_gb:g} GB, of which the server uses "
            f"{MEMORY_UTILIZATION:.0%}: {_fitting_slice(pool, server)}"
        ]
    return []


def _fitting_slice(pool: TpuPoolConfig, server: LlmServerConfig) -> str:
    """The smallest slice whose usable HBM holds the weights: one VM of the pool's TPU version where one is large
    enough (a single-host server, the path GKE's vLLM TPU guide supports; multi-host vLLM is experimental, see the
    module's docstring), else the smallest slice of the pool's machine type, else of the version's 4-chip type."""
    version = pool.machine.version
    chips = math.ceil(server.weights_gb / (version.hbm_gb_per_chip * MEMORY_UTILIZATION))
    single_hosts = [m for m in tpu_catalog.MACHINE_TYPES.values() if m.version == version and m.chips_per_vm >= chips]
    if single_hosts:
        machine = min(single_hosts, key=lambda m: m.chips_per_vm)
        return f"use machineType {machine.name}, a {machine.single_host_topology} slice on one VM"
    topology = pool.machine.smallest_topology_with(chips)
    if topology is not None:
        return f"use topology {topology} or larger"
    default = tpu_catalog.MACHINE_TYPES[tpu_catalog.DEFAULT_MACHINE_TYPE[version.name]]
    topology = default.smallest_topology_with(chips)
    if topology is not None:
        return f"use machineType {default.name} with topology {topology} or larger"
    return f"no {version.name} slice is that large; use a smaller dtype or a TPU version with more HBM per chip"


def _replica_problems(serving: LlmServingConfig, pools: tuple[TpuPoolConfig, ...]) -> list[str]:
    """One replica per slice: the servers on a pool group hold at most its slices."""
    problems = []
    for pool in pools:
        on_pool = [(i, s) for i, s in enumerate(serving.servers) if s.pool == pool.name]
        held = sum(s.replicas for _, s in on_pool)
        if on_pool and not pool.problems() and held > pool.slices:
            index, server = on_pool[-1]
            others = f" ({held - server.replicas} held by other servers)" if len(on_pool) > 1 else ""
            problems.append(
                f"{KEY}.servers[{index}].replicas: {server.replicas} replicas{others} need {held} slices of pool "
                f"{pool.name!r}, which has {pool.slices}; one replica runs on one slice: lower replicas or raise "
                f"tpuPools slices"
            )
    return problems


def _within(folder: str, parent: str) -> bool:
    """`folder` of the bucket is `parent` or below it."""
    return folder == parent or folder.startswith(parent + "/")


def cache_folder_problems(serving: LlmServingConfig, bucket: BucketConfig, saxml: SaxmlConfig | None) -> list[str]:
    """The servers' cacheFolder is the one place of the bucket they may write and delete (their roles/storage.objectUser
    grant holds only under it: `bucket_grants`). Weights the stack mounts read-only there (a server's modelFolder,
    Saxml's modelPath) and the teams' data and checkpoints would be writable by every server; a cacheFolder inside a
    server's modelFolder would write downloads and compilation caches among the weights it loads."""
    cache = serving.cache_folder
    key = f"{KEY}.cacheFolder"
    problems = []
    for index, server in enumerate(serving.servers):
        folder = server.model_folder
        if folder is not None and _within(folder, cache):
            problems.append(
                f"{KEY}.servers[{index}].modelFolder: {folder!r} is inside serving.cacheFolder {cache!r}, where every "
                "server may overwrite and delete objects, and the weights are mounted read-only to keep them intact; "
                "keep the weights outside the cache folder"
            )
        elif folder is not None and _within(cache, folder):
            problems.append(
                f"{key}: {cache!r} is inside servers[{index}].modelFolder {folder!r}; the servers would write their "
                "downloads and XLA cache among the weights they load; give the cache a folder of its own"
            )
    if saxml is not None and _within(saxml.model_path, cache):
        problems.append(
            f"{PROJECT}:saxml.modelPath: {saxml.model_path!r} is inside serving.cacheFolder {cache!r}, where the vLLM "
            "servers may overwrite and delete objects, and Saxml mounts its checkpoints read-only to keep them intact; "
            "keep them outside the cache folder"
        )
    for field, index, workload, role in bucket.grants:
        checkpoints = (workload.checkpoint_path or f"checkpoints/{workload.namespace}") if role == WRITER_ROLE else None
        for name, folder in (("dataPath", workload.data_path), ("checkpointPath", checkpoints)):
            if folder is not None and _within(folder, cache):
                problems.append(
                    f"{PROJECT}:bucket.{field}[{index}].{name}: {folder!r} is inside serving.cacheFolder {cache!r}, "
                    "where the vLLM servers may overwrite and delete objects; give the team's data a folder outside it"
                )
    return problems
