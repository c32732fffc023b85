"""Cloud Storage FUSE volumes: pods read datasets and write checkpoints in the stack's bucket as files.

GKE's Cloud Storage FUSE CSI driver (cluster add-on `gcsFuseCsiDriverConfig`) injects a sidecar into every pod
whose template carries `gke-gcsfuse/volumes: "true"` and mounts CSI ephemeral volumes with the pod's own
Workload Identity: the KSA that already holds its role on this bucket, so no other grant exists. Mount options
follow GKE's recommendations for training: the metadata cache kept for the job's life, a file cache with
parallel downloads, range reads cached; checkpoint volumes also never cache a missing file (a new checkpoint
is seen at once). Each volume shows one folder of the bucket (`only-dir`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from components.config.serving import BucketMount

DRIVER = "gcsfuse.csi.storage.gke.io"
VOLUMES_ANNOTATION = "gke-gcsfuse/volumes"
# "0" lifts the sidecar's limit on Standard clusters: a TPU pod owns its VM, and a capped sidecar would throttle
# the input pipeline or be killed with the file cache in memory.
SIDECAR_LIMITS = {
    "gke-gcsfuse/cpu-limit": "0",
    "gke-gcsfuse/memory-limit": "0",
    "gke-gcsfuse/ephemeral-storage-limit": "0",
}
_CACHES = (
    "implicit-dirs",
    "metadata-cache:ttl-secs:-1",
    "metadata-cache:stat-cache-max-size-mb:-1",
    "metadata-cache:type-cache-max-size-mb:-1",
    "file-cache:max-size-mb:-1",
    "file-cache:cache-file-for-range-read:true",
    "file-cache:enable-parallel-downloads:true",
)
READ_OPTIONS = _CACHES
WRITE_OPTIONS = (*_CACHES, "metadata-cache:negative-ttl-secs:0")


def mount_options(mount: BucketMount) -> str:
    """The CSI volume's `mountOptions`: comma-separated, no spaces, as the driver takes them."""
    return ",".join([*(READ_OPTIONS if mount.read_only else WRITE_OPTIONS), f"only-dir={mount.folder}"])


def volume(bucket: str, mount: BucketMount) -> dict[str, Any]:
    """A CSI ephemeral volume of `mount.folder` in `bucket`; read-only volumes are read-only at the driver too."""
    return {
        "name": mount.volume,
        "csi": {
            "driver": DRIVER,
            "readOnly": mount.read_only,
            "volumeAttributes": {"bucketName": bucket, "mountOptions": mount_options(mount)},
        },
    }


def attach(pod: dict[str, Any], bucket: str, mounts: Sequence[BucketMount]) -> dict[str, str]:
    """Add the volumes to pod spec `pod` and mount them in each of its containers; returns the annotations the
    pod template needs (none without mounts)."""
    if not mounts:
        return {}
    pod["volumes"] = [*pod.get("volumes", []), *(volume(bucket, m) for m in mounts)]
    for container in pod["containers"]:
        container["volumeMounts"] = [
            *container.get("volumeMounts", []),
            *({"name": m.volume, "mountPath": m.mount_path, "readOnly": m.read_only} for m in mounts),
        ]
    return {VOLUMES_ANNOTATION: "true", **SIDECAR_LIMITS}
