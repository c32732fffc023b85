"""Cloud Storage FUSE volumes: pods read datasets and write checkpoints in the stack's bucket as files.

GKE's Cloud Storage FUSE CSI driver (cluster add-on `gcsFuseCsiDriverConfig`) injects a sidecar into every pod
whose template carries `gke-gcsfuse/volumes: "true"` and mounts CSI ephemeral volumes with the pod's own
Workload Identity: the KSA that already holds its role on this bucket, so no other grant exists. Mount options
follow GKE's recommendations for training: the metadata cache kept for the job's life, and on read-only folders a
file cache with parallel downloads, range reads cached; checkpoint volumes never cache a missing file (a new
checkpoint is seen at once) and keep no file cache (a checkpoint is read back once). Each volume shows one folder of
the bucket (`only-dir`). Checkpoint volumes are folders of the checkpoint bucket, whose hierarchical namespace lets a
checkpointer commit by renaming a directory: gcsfuse renames directories atomically there, and on a flat bucket only
below `rename-dir-limit` and never one with subdirectories (gcsfuse docs/semantics.md, "Missing features").

The file cache lives on the node's boot disk, which a TPU pod shares with the OS, images and logs: it is bounded.
The pod declares the driver's cache volume (`gke-gcsfuse-cache`, which the sidecar then uses instead of its own
unbounded emptyDir) with a sizeLimit, and gcsfuse keeps the cache below it (`file-cache:max-size-mb`, an LRU that
evicts files, and reads an object larger than the cache straight from the bucket). The kubelet evicts a pod only
when an emptyDir exceeds its sizeLimit, or the pod its summed ephemeral-storage limits, of which it has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from components.config.serving import BucketMount, file_cache_max_mib

DRIVER = "gcsfuse.csi.storage.gke.io"
VOLUMES_ANNOTATION = "gke-gcsfuse/volumes"
CACHE_VOLUME = "gke-gcsfuse-cache"
"""The driver's name for the sidecar's file cache volume: a pod volume of this name replaces its default emptyDir."""
SIDECAR_GROUP = 65534
"""The sidecar runs as 65534:65534; the pod's fsGroup gives it the cache volume, as the driver asks of custom cache
volumes."""
# "0" lifts the sidecar's limits on Standard clusters (its requests stay the driver's defaults): a TPU pod owns its VM,
# and a capped sidecar would throttle the input pipeline. An ephemeral-storage limit would make the kubelet enforce
# it on the whole pod (the sum of its containers' limits), writable layers included; the cache volume's sizeLimit
# bounds the cache instead.
SIDECAR_LIMITS = {
    "gke-gcsfuse/cpu-limit": "0",
    "gke-gcsfuse/memory-limit": "0",
    "gke-gcsfuse/ephemeral-storage-limit": "0",
}
_METADATA = (
    "implicit-dirs",
    "metadata-cache:ttl-secs:-1",
    "metadata-cache:stat-cache-max-size-mb:-1",
    "metadata-cache:type-cache-max-size-mb:-1",
)
_FILE_CACHE = ("file-cache:cache-file-for-range-read:true", "file-cache:enable-parallel-downloads:true")
WRITE_OPTIONS = (*_METADATA, "metadata-cache:negative-ttl-secs:0")


def read_options(max_size_mib: int) -> tuple[str, ...]:
    """Options of a read-only folder whose file cache may hold `max_size_mib` (none at 0: the cache is off)."""
    if max_size_mib <= 0:
        return _METADATA
    return (*_METADATA, f"file-cache:max-size-mb:{max_size_mib}", *_FILE_CACHE)


def mount_options(mount: BucketMount, max_size_mib: int = 0) -> str:
    """The CSI volume's `mountOptions`: comma-separated, no spaces, as the driver takes them."""
    options = read_options(max_size_mib) if mount.read_only else WRITE_OPTIONS
    return ",".join([*options, f"only-dir={mount.folder}"])


def volume(bucket: str, mount: BucketMount, max_size_mib: int = 0) -> dict[str, Any]:
    """A CSI ephemeral volume of `mount.folder` in `bucket`; read-only volumes are read-only at the driver too."""
    return {
        "name": mount.volume,
        "csi": {
            "driver": DRIVER,
            "readOnly": mount.read_only,
            "volumeAttributes": {"bucketName": bucket, "mountOptions": mount_options(mount, max_size_mib)},
        },
    }


def attach(
    pod: dict[str, Any],
    bucket: str,
    mounts: Sequence[BucketMount],
    *,
    cache_gib: int,
    checkpoint_bucket: str | None = None,
) -> dict[str, str]:
    """Add the volumes to pod spec `pod` and mount them in each of its containers, with a file cache of `cache_gib`
    shared by the read-only folders (each volume keeps its own, so they split it); returns the annotations the pod
    template needs (none without mounts). Checkpoint mounts are folders of `checkpoint_bucket`, the others of
    `bucket`."""
    if not mounts:
        return {}
    if any(m.checkpoints for m in mounts) and checkpoint_bucket is None:
        raise ValueError("a checkpoint mount needs the checkpoint bucket")
    cached = [m for m in mounts if m.read_only] if cache_gib > 0 else []
    per_volume = file_cache_max_mib(cache_gib) // len(cached) if cached else 0
    volumes = [
        volume(str(checkpoint_bucket) if m.checkpoints else bucket, m, per_volume if m in cached else 0) for m in mounts
    ]
    if cached:
        volumes.append({"name": CACHE_VOLUME, "emptyDir": {"sizeLimit": f"{cache_gib}Gi"}})
        pod["securityContext"] = {**pod.get("securityContext", {}), "fsGroup": SIDECAR_GROUP}
    pod["volumes"] = [*pod.get("volumes", []), *volumes]
    for container in pod["containers"]:
        container["volumeMounts"] = [
            *container.get("volumeMounts", []),
            *({"name": m.volume, "mountPath": m.mount_path, "readOnly": m.read_only} for m in mounts),
        ]
    return {VOLUMES_ANNOTATION: "true", **SIDECAR_LIMITS}
