"""Serving and identity: the stack's bucket, the Kubernetes service accounts that use it through Workload
Identity, and Saxml on a pool group.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator

from components import images, tpu_catalog
from components.config.base import (
    BUILT_IN_NAMESPACES,
    DIGEST,
    PROJECT,
    RESERVED_NAMESPACES,
    ConfigModel,
    kubernetes_name,
    source_range,
    zone_region,
)
from components.config.pools import POD_EPHEMERAL_HEADROOM_MIB, TpuPoolConfig

IdentityForm = Literal["principal", "iamServiceAccount"]
SAXML_IMAGES = "us-docker.pkg.dev/cloud-tpu-images/inference"
BUCKET_NAME_MAX = 63
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*[a-z0-9]$")
_IAM_ACCOUNT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
_SAX_CELL = re.compile(r"^/sax/[A-Za-z0-9_-]+$")


def bucket_name_problem(name: str) -> str | None:
    """Cloud Storage naming rules; dotted names are refused as they need domain verification."""
    if not 3 <= len(name) <= BUCKET_NAME_MAX:
        return f"{name!r} is {len(name)} characters; Cloud Storage allows 3 to {BUCKET_NAME_MAX}"
    if not _BUCKET_NAME.match(name):
        return (
            f"{name!r} is not a bucket name: lowercase letters, digits, '-' and '_', starting and ending with "
            "a letter or digit (dotted names need domain verification)"
        )
    if name.startswith("goog") or "google" in name:
        return f"{name!r} cannot start with 'goog' or contain 'google'"
    return None


class WorkloadRef(ConfigModel):
    """A Kubernetes service account whose pods reach Google Cloud through Workload Identity.

    `principal` grants roles to the KSA's own principal (no Google service account, no key, no annotation);
    `iamServiceAccount` is the older form: a Google service account the KSA impersonates.
    """

    namespace: str
    """Namespace of the KSA: `default`, a team's or Saxml's."""
    service_account: str
    """The Kubernetes service account (KSA), created by the stack; not `default`, which every pod that names no
    account runs as."""
    identity: IdentityForm = "principal"
    """Workload Identity form: roles granted to the KSA's own principal, or to a Google service account it
    impersonates."""
    iam_service_account: str | None = None
    """Account id of the Google service account (`identity: iamServiceAccount` only).

    Default: `<namespace>-<serviceAccount>`"""
    data_path: str = "datasets"
    """Folder of the bucket this KSA's pods mount read-only at `/data`."""
    checkpoint_path: str | None = None
    """Folder a writer's pods mount read-write at `/checkpoints` (a reader with one is a config error).

    Default: `checkpoints/<namespace>`"""

    _names = field_validator("namespace", "service_account")(kubernetes_name)
    _paths = field_validator("data_path", "checkpoint_path")(lambda path: optional_folder(path))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.service_account}"

    @property
    def iam_account_id(self) -> str:
        return self.iam_service_account or f"{self.namespace}-{self.service_account}"[:30].rstrip("-")

    def problems(self) -> list[tuple[str, str]]:
        """(config field, message): the Google service account id must be valid where one is created."""
        if self.identity == "principal":
            if self.iam_service_account is not None:
                return [("iamServiceAccount", "applies only with identity: iamServiceAccount")]
            return []
        if not _IAM_ACCOUNT_ID.match(self.iam_account_id):
            field = "iamServiceAccount" if self.iam_service_account else "identity"
            return [
                (
                    field,
                    f"Google service account id {self.iam_account_id!r} must be 6-30 lowercase letters, digits and "
                    "'-', starting with a letter; set iamServiceAccount",
                )
            ]
        return []


READER_ROLE = "roles/storage.objectViewer"
WRITER_ROLE = "roles/storage.objectUser"
_FOLDER = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")


def optional_folder(path: str | None) -> str | None:
    """A folder of the bucket, as Cloud Storage FUSE's only-dir takes it: relative, no '..', no empty part."""
    if path is not None and (not _FOLDER.match(path) or ".." in path.split("/")):
        raise ValueError(
            f"{path!r} is not a folder of the bucket; use a relative path like datasets or checkpoints/team"
        )
    return path


DATA_MOUNT_PATH = "/data"
CHECKPOINT_MOUNT_PATH = "/checkpoints"
MODEL_MOUNT_PATH = "/models"


@dataclass(frozen=True)
class BucketMount:
    """One Cloud Storage FUSE volume: `folder` of the stack's bucket at `mount_path` in every container; of its
    checkpoint bucket with `checkpoints`."""

    volume: str
    folder: str
    mount_path: str
    read_only: bool
    checkpoints: bool = False


class BucketConfig(ConfigModel):
    """The stack's Cloud Storage bucket (one per stack) and the Kubernetes service accounts that may use it.

    Readers get `roles/storage.objectViewer`, writers `roles/storage.objectUser`, on this bucket only.
    The namespaces of readers and writers must exist (`default`, a team namespace, or Saxml's own).
    """

    name: str | None = None
    """Bucket name.

    Default: `<gcp:project>-<stack>-tpu-stack`"""
    location: str | None = None
    """A region, dual-region or multi-region (a zone is an error naming its region).

    Default: `gcp:region`"""

    noncurrent_version_days: int = Field(default=30, ge=1)
    """Days an overwritten object version is kept (versioning is on)."""
    checkpoint_bucket: str | None = None
    """Name of the checkpoint bucket, which the stack creates when it has writers: hierarchical namespace (directory
    renames, which checkpointers commit with, are atomic there), no versioning, in `gcp:region`. Writers mount their
    `checkpointPath` from it; the bucket above keeps the datasets, models and caches.

    Default: `<bucket name>-ckpt`"""
    checkpoint_soft_delete_days: int = 0
    """Days Cloud Storage keeps a deleted checkpoint restorable (and billed): 7 to 90, or 0 for none, so a checkpoint
    a trainer rotates out is gone at once."""
    file_cache_gb: int | None = Field(default=None, ge=0)
    """GiB of a TPU node's boot disk the Cloud Storage FUSE file cache of a pod may fill (its read-only folders);
    `0` turns the cache off, and more than the node holds is an error (see *Data and checkpoints*). Autopilot pods
    get none (their ephemeral storage is bounded by their requests).

    Default: what fits the pool's boot disk (33 on GKE's default 100 GiB)"""
    project_number: int | None = Field(default=None, gt=0)
    """Number of `gcp:project`, for `principal://` members.

    Default: looked up (resourcemanager.projects.get)"""
    readers: tuple[WorkloadRef, ...] = ()
    """KSAs granted `roles/storage.objectViewer` on this bucket."""
    writers: tuple[WorkloadRef, ...] = ()
    """KSAs granted `roles/storage.objectUser` on this bucket."""

    @field_validator("location")
    @classmethod
    def _location(cls, location: str | None) -> str | None:
        region = None if location is None else zone_region(location)
        if region is not None:
            raise ValueError(
                f"{location!r} is a zone; a bucket lives in a region ({region}), a dual-region or a multi-region "
                "such as US"
            )
        return location

    @property
    def grants(self) -> list[tuple[str, int, WorkloadRef, str]]:
        """(list name, index, workload, role) for every reader and writer."""
        return [("readers", i, w, READER_ROLE) for i, w in enumerate(self.readers)] + [
            ("writers", i, w, WRITER_ROLE) for i, w in enumerate(self.writers)
        ]


DEFAULT_ACCOUNT = "default"
"""The service account Kubernetes puts in every namespace and gives every pod that names none
(https://kubernetes.io/docs/concepts/security/service-accounts/#default-service-accounts)."""


def pinned_image(image: str) -> str:
    name, _, digest = image.partition("@")
    if digest and not DIGEST.match(digest):
        raise ValueError(f"{image!r}: {digest!r} is not a digest; write @sha256: and its 64 hex digits")
    tag = name.rsplit("/", 1)[-1].partition(":")[2]
    if not digest and (not tag or tag == "latest"):
        raise ValueError(f"{image!r} is not pinned; use an explicit version tag or an @sha256 digest, never latest")
    moving = images.moving_tag_problem(image)
    if moving:
        raise ValueError(f"{image!r}: {moving}")
    return image


class SaxmlImagesConfig(ConfigModel):
    """Saxml images of the GKE sample, pinned."""

    admin_server: str = f"{SAXML_IMAGES}/sax-admin-server:v1.1.0"
    """Image of the admin server; a release (major.minor.patch, `v1.1.0`), a dated build or full commit tag, or an
    `@sha256:` digest, never untagged or a tag its publisher moves (`latest`, `nightly`, `main`, `v1.1`)."""
    model_server: str = f"{SAXML_IMAGES}/sax-model-server:v1.1.0"
    """Image of the model servers, pinned the same way."""
    http_server: str = f"{SAXML_IMAGES}/sax-http:v1.0.0"
    """Image of the HTTP server, pinned the same way."""

    _pinned = field_validator("admin_server", "model_server", "http_server")(pinned_image)


class SaxmlServiceConfig(ConfigModel):
    """The `sax-http-lb` Service: an internal load balancer unless `external`; sourceRanges always required."""

    external: bool = False
    """An external load balancer instead of the internal one."""
    source_ranges: tuple[Annotated[str, AfterValidator(source_range)], ...] = ()
    """Client CIDRs allowed to call the HTTP API, /8 or narrower; required, also for the internal load balancer
    (the NetworkPolicy admits the same)."""


class SaxmlModelConfig(ConfigModel):
    """The model the pool must hold: about 2 GB of HBM per billion parameters."""

    name: str
    """The Saxml model class to publish, e.g. `saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test`."""
    billions_of_parameters: float = Field(gt=0)
    """Its size; checked to fit one slice of the pool."""

    @property
    def memory_gb(self) -> float:
        return 2 * self.billions_of_parameters

    def chips(self, version: tpu_catalog.TpuVersion) -> int:
        return math.ceil(self.memory_gb / version.hbm_gb_per_chip)


class SaxmlConfig(ConfigModel):
    """Saxml serving on a TPU pool group: one model server per slice of `pool`, with its admin and HTTP servers
    on the system pool."""

    pool: str
    """The TPU pool group that serves (its slices are not Kueue capacity)."""
    model: SaxmlModelConfig | None = None
    """The model to serve, checked to fit one slice (about 2 GB of HBM per billion parameters)."""
    namespace: str = "saxml"
    """Where Saxml runs; created unless Kubernetes has it built in (`default`, as in the Saxml tutorial, is used
    but never declared, so `pulumi destroy` cannot delete it). `kube-*` and the charts' namespaces are refused."""
    service_account: str = "sax-sa"
    """The KSA all Saxml pods use."""
    identity: IdentityForm = "principal"
    """Workload Identity form, as for bucket readers and writers."""
    iam_service_account: str | None = None
    """Account id of the Google service account (`identity: iamServiceAccount` only).

    Default: `<namespace>-<serviceAccount>`"""
    cell: str = "/sax/test"
    """Saxml cell, `/sax/<name>`: the model servers' `--sax_cell` and the admin server's `SAX_CELL`."""
    model_path: str = "models"
    """Folder of the bucket the model servers mount read-only at `/models` (publish checkpoints from there)."""
    max_restarts: int = Field(default=4, ge=0)
    """JobSet `failurePolicy.maxRestarts` of each slice's model servers: how often they restart together after a
    failure of their own (a crash) before their JobSet fails. Disruptions (node upgrades, repairs, maintenance,
    preemptions) restart them without counting."""
    images: SaxmlImagesConfig = SaxmlImagesConfig()
    """Saxml's images, as in the GKE sample."""
    service: SaxmlServiceConfig = SaxmlServiceConfig()
    """The `sax-http-lb` Service."""

    _model_path = field_validator("model_path")(lambda path: optional_folder(path))

    @field_validator("cell")
    @classmethod
    def _cell(cls, cell: str) -> str:
        if not _SAX_CELL.match(cell):
            raise ValueError(f"{cell!r} is not a Saxml cell; use /sax/<name>, e.g. /sax/test")
        return cell

    @property
    def declares_namespace(self) -> bool:
        """Never declare a built-in namespace: the stack would own it and delete it on destroy."""
        return self.namespace not in BUILT_IN_NAMESPACES

    @property
    def workload(self) -> WorkloadRef:
        return WorkloadRef(
            namespace=self.namespace,
            service_account=self.service_account,
            identity=self.identity,
            iam_service_account=self.iam_service_account,
        )


def _bucket_grant(bucket: BucketConfig, namespace: str) -> tuple[WorkloadRef, str] | None:
    """(KSA, role) of the bucket KSA of `namespace`, writers first."""
    grants = sorted(bucket.grants, key=lambda grant: grant[3] != WRITER_ROLE)
    return next(((w, role) for _f, _i, w, role in grants if w.namespace == namespace), None)


def bucket_service_account(bucket: BucketConfig, namespace: str) -> str | None:
    """The KSA in `namespace` that holds a role on the bucket (writers first), so jobs there can use it."""
    grant = _bucket_grant(bucket, namespace)
    return grant[0].service_account if grant else None


def bucket_mounts(bucket: BucketConfig, namespace: str) -> list[BucketMount]:
    """What pods running as the bucket KSA of `namespace` mount: its data folder read-only and, for a writer,
    its checkpoint folder read-write. The volumes act with the pod's own KSA, so they match its bucket role."""
    grant = _bucket_grant(bucket, namespace)
    if grant is None:
        return []
    workload, role = grant
    mounts = [BucketMount("datasets", workload.data_path, DATA_MOUNT_PATH, read_only=True)]
    if role == WRITER_ROLE:
        folder = workload.checkpoint_path or f"checkpoints/{namespace}"
        mounts.append(BucketMount("checkpoints", folder, CHECKPOINT_MOUNT_PATH, read_only=False, checkpoints=True))
    return mounts


def saxml_mounts(saxml: SaxmlConfig) -> list[BucketMount]:
    """The model servers read checkpoints from `saxml.modelPath` of the bucket, mounted read-only at /models."""
    return [BucketMount("models", saxml.model_path, MODEL_MOUNT_PATH, read_only=True)]


FILE_CACHE_FILL_PERCENT = 90
"""gcsfuse keeps its file cache at or below max-size-mb (an LRU by object size); the cache volume is 10% larger, for
filesystem blocks and eviction lag, so the kubelet never finds the volume above its sizeLimit and evicts the pod."""


def file_cache_gib(bucket: BucketConfig, pool: TpuPoolConfig, *, autopilot: bool) -> int:
    """Size of the file cache volume of a pod on `pool`: bucket.fileCacheGb, else what fits the pool's boot disk."""
    if autopilot:
        return 0
    return pool.file_cache_limit_gib if bucket.file_cache_gb is None else bucket.file_cache_gb


def file_cache_max_mib(cache_gib: int) -> int:
    """gcsfuse's file-cache:max-size-mb for a cache volume of `cache_gib` (its MB are MiB)."""
    return cache_gib * 1024 * FILE_CACHE_FILL_PERCENT // 100


def bucket_name(bucket: BucketConfig, *, project: str, stack: str) -> str:
    """`bucket.name`, else `<project>-<stack>-tpu-stack` (stack names may hold upper case, '.' and '_')."""
    stack = re.sub(r"[^a-z0-9-]", "-", stack.lower())
    return bucket.name or f"{project}-{stack}-{PROJECT}"


def checkpoint_bucket_name(bucket: BucketConfig, *, data_bucket: str) -> str:
    """`bucket.checkpointBucket`, else the datasets' bucket's name with `-ckpt`."""
    return bucket.checkpoint_bucket or f"{data_bucket}-ckpt"


SOFT_DELETE_DAYS = (7, 90)
"""Cloud Storage keeps soft-deleted objects 7 to 90 days; 0 turns soft delete off (pulumi-gcp 10.2.0,
storage.Bucket soft_delete_policy.retention_duration_seconds)."""


def serving_problems(
    bucket: BucketConfig,
    saxml: SaxmlConfig | None,
    *,
    name: str,
    namespaces: list[str],
    pools: tuple[TpuPoolConfig, ...],
) -> list[str]:
    """Problems of `tpu-stack:bucket` (whose name is `name`) and `tpu-stack:saxml`: grants only in `namespaces`,
    Saxml only on one of `pools`."""
    problems: list[str] = []
    key = f"{PROJECT}:bucket"
    problem = bucket_name_problem(name)
    if problem and bucket.name is None:
        problem = f"the derived name {problem}: set bucket.name"
    if problem:
        problems.append(f"{key}.name: {problem}")
    if bucket.writers:
        problems += _checkpoint_problems(bucket, name)
    seen: dict[str, str] = {}
    if saxml is not None:
        seen[saxml.workload.key] = "Saxml's service account (saxml.serviceAccount)"
    for field, index, workload, _role in bucket.grants:
        where = f"{key}.{field}[{index}]"
        problems += [f"{where}.{f}: {message}" for f, message in workload.problems()]
        if field == "readers" and workload.checkpoint_path is not None:
            problems.append(
                f"{where}.checkpointPath: a reader holds {READER_ROLE} and cannot write checkpoints; move this entry "
                "to bucket.writers or remove checkpointPath"
            )
        if workload.service_account == DEFAULT_ACCOUNT:
            does = "read the bucket" if field == "readers" else "write and delete the bucket's objects"
            problems.append(
                f"{where}.serviceAccount: {DEFAULT_ACCOUNT!r} is the account of every pod in namespace "
                f"{workload.namespace} that names none, and each of them would {does}; name an account of its own, "
                f"e.g. {'analyst' if field == 'readers' else 'trainer'}"
            )
        elif workload.key in seen:
            problems.append(f"{where}: {workload.key} is already {seen[workload.key]}; list it once")
        elif workload.namespace not in namespaces:
            problems.append(
                f"{where}.namespace: {workload.namespace!r} is not a namespace the stack has; use one of "
                f"{', '.join(namespaces)} (team namespaces come from tpu-stack:queues.teams)"
            )
        seen.setdefault(workload.key, f"listed in bucket.{field}[{index}]")
    problems += _file_cache_problems(bucket, pools)
    if saxml is not None:
        problems += _saxml_problems(saxml, pools)
    return problems


def _checkpoint_problems(bucket: BucketConfig, data_bucket: str) -> list[str]:
    """The checkpoint bucket's name and soft delete (it exists when the stack has writers)."""
    key = f"{PROJECT}:bucket"
    problems = []
    name = checkpoint_bucket_name(bucket, data_bucket=data_bucket)
    problem = bucket_name_problem(name)
    if problem and bucket.checkpoint_bucket is None:
        problem = f"the derived name {problem}: set bucket.checkpointBucket"
    if problem:
        problems.append(f"{key}.checkpointBucket: {problem}")
    elif name == data_bucket:
        problems.append(
            f"{key}.checkpointBucket: {name!r} is the datasets' bucket (bucket.name); checkpoints need a bucket of "
            "their own with hierarchical namespace"
        )
    days = bucket.checkpoint_soft_delete_days
    low, high = SOFT_DELETE_DAYS
    if days != 0 and not low <= days <= high:
        problems.append(
            f"{key}.checkpointSoftDeleteDays: {days} days; Cloud Storage keeps soft-deleted objects {low} to {high} "
            "days, or 0 turns soft delete off"
        )
    return problems


def _file_cache_problems(bucket: BucketConfig, pools: tuple[TpuPoolConfig, ...]) -> list[str]:
    """A file cache larger than a node can hold would fill its boot disk, and the kubelet evicts the TPU pod."""
    wanted = bucket.file_cache_gb
    valid = [pool for pool in pools if not pool.problems()]
    if wanted is None or not valid:
        return []
    tightest = min(valid, key=lambda pool: pool.file_cache_limit_gib)
    limit = tightest.file_cache_limit_gib
    if wanted <= limit:
        return []
    return [
        f"{PROJECT}:bucket.fileCacheGb: {wanted} GiB does not fit the {tightest.boot_disk_gib} GiB boot disk of pool "
        f"{tightest.name!r} ({tightest.allocatable_ephemeral_mib // 1024} GiB allocatable after GKE's reservations, "
        f"{POD_EPHEMERAL_HEADROOM_MIB // 1024} GiB kept for the pod's containers); use at most {limit}, or 0 to turn "
        "the file cache off"
    ]


def _saxml_problems(saxml: SaxmlConfig, pools: tuple[TpuPoolConfig, ...]) -> list[str]:
    key = f"{PROJECT}:saxml"
    problems = [f"{key}.{field}: {message}" for field, message in saxml.workload.problems()]
    if not saxml.service.source_ranges:
        problems.append(
            f"{key}.service.sourceRanges: required, also for the internal load balancer (the client CIDRs allowed "
            "to call the Saxml HTTP API on port 8888); list them"
        )
    if saxml.namespace in RESERVED_NAMESPACES:
        problems.append(
            f"{key}.namespace: {saxml.namespace!r} belongs to the system; use default or a namespace of your own"
        )
    pool = next((p for p in pools if p.name == saxml.pool), None)
    if pool is None:
        names = ", ".join(p.name for p in pools) or "none"
        return [*problems, f"{key}.pool: {saxml.pool!r} names no TPU pool; tpuPools: {names}"]
    if pool.problems():
        return problems
    if pool.machine.version.platform_chip is None:
        known = ", ".join(v.name for v in tpu_catalog.VERSIONS.values() if v.platform_chip)
        problems.append(
            f"{key}.pool: pool {pool.name!r} is TPU {pool.machine.version.name}, a chip Saxml's model server does "
            f"not know (--platform_chip); serve on {known}"
        )
    if pool.provisioning == "queued":
        problems.append(
            f"{key}.pool: pool {pool.name!r} is queued-provisioning, whose nodes exist only for Kueue-admitted "
            "jobs; serve on an on-demand, reservation, spot or flex-start pool"
        )
    model = saxml.model
    if model is not None:
        version = pool.machine.version
        chips = model.chips(version)
        if chips > pool.chips_per_slice:
            problems.append(
                f"{key}.model.billionsOfParameters: a {model.billions_of_parameters:g}B model needs "
                f"~{model.memory_gb:g} GB = {chips} {version.name} chips; pool {pool.name!r} slices have "
                f"{pool.chips_per_slice} chips ({pool.slice_topology}); {_fitting_slice(pool, model)}"
            )
    return problems


def _fitting_slice(pool: TpuPoolConfig, model: SaxmlModelConfig) -> str:
    version = pool.machine.version
    topology = pool.machine.smallest_topology_with(model.chips(version))
    if topology is not None:
        return f"use topology {topology} or larger"
    fitting = tpu_catalog.smallest_topology_for_model(model.billions_of_parameters, version.name)
    if fitting is not None:
        return f"use machineType {fitting[0]} with topology {fitting[1]} or larger"
    return f"no {version.name} slice is that large; use a TPU version with more HBM per chip"
