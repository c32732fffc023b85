"""Pod hardening shared by every pod the stack or its example workloads create.

CPU pods get the restricted profile (non-root, read-only root filesystem, no privilege escalation, all
capabilities dropped, RuntimeDefault seccomp). TPU pods get what the TPU runtime allows: seccomp, no
privilege escalation, all capabilities dropped (GKE 1.28+ gives TPU access without privileged mode); they keep
the image's root user and a writable root filesystem. Every remaining exception is written into the object as
a checkov skip annotation with its reason, so the scan and a reader see the same list.
"""

from __future__ import annotations

from typing import Any

NON_ROOT_UID = 65532
"""A high UID/GID outside any host range (checkov asks for > 10000); the Saxml CPU images run as any user."""
SKIP_PREFIX = "checkov.io/skip"
TMP_VOLUME = "tmp"

POD_SECCOMP = {"seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_BASE = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}

# Why TPU pods differ; the keys are checkov check ids.
TPU_EXCEPTIONS = {
    "CKV_K8S_22": "TPU runtime and the example jobs write to the image filesystem (pip, libtpu caches)",
    "CKV_K8S_23": "TPU images run as root: libtpu opens the TPU devices the device plugin mounts",
    "CKV_K8S_40": "TPU images run as root: libtpu opens the TPU devices the device plugin mounts",
}
NO_HOST_RESOURCES = {
    "CKV_K8S_10": "a TPU pod owns its whole VM; set queues.hostResources to request CPU and memory",
    "CKV_K8S_11": "no CPU limit on a TPU pod: throttling the host starves the TPU input pipeline",
    "CKV_K8S_12": "a TPU pod owns its whole VM; set queues.hostResources to request CPU and memory",
    "CKV_K8S_13": "a TPU pod owns its whole VM; set queues.hostResources to request CPU and memory",
}
CPU_LIMIT_EXCEPTION = {"CKV_K8S_11": "no CPU limit on a TPU pod: throttling the host starves the TPU input pipeline"}
TAG_EXCEPTION = {"CKV_K8S_43": "image pinned by tag; set an @sha256 digest in the stack config to remove this"}

# The Kueue and JobSet controllers: their images run as 65532:65532 (`USER` in both projects' Dockerfiles).
CONTROLLER_POD_SECURITY = {
    **POD_SECCOMP,
    "runAsNonRoot": True,
    "runAsUser": NON_ROOT_UID,
    "runAsGroup": NON_ROOT_UID,
}
CONTROLLER_TOKEN_EXCEPTION = {
    "CKV_K8S_38": "a controller watches and writes the Kubernetes API with its service account token"
}


def chart_tag_exception(digest_key: str) -> dict[str, str]:
    """CKV_K8S_43 on a chart's controller until `tpu-stack:charts.<digest_key>` pins its image by digest."""
    return {"CKV_K8S_43": f"image pinned by the chart's tag; set tpu-stack:charts.{digest_key} to pin its digest"}


def cpu_pod(container: dict[str, Any], *, port: int) -> dict[str, Any]:
    """Pod spec fields of a restricted CPU pod around `container` (which gets securityContext, probes, /tmp)."""
    container["securityContext"] = {
        **CONTAINER_BASE,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": NON_ROOT_UID,
        "runAsGroup": NON_ROOT_UID,
    }
    container["imagePullPolicy"] = "Always"
    probe = {"tcpSocket": {"port": port}, "periodSeconds": 10}
    container["readinessProbe"] = {**probe, "initialDelaySeconds": 5}
    container["livenessProbe"] = {**probe, "initialDelaySeconds": 30, "failureThreshold": 6}
    container["volumeMounts"] = [{"name": TMP_VOLUME, "mountPath": "/tmp"}]
    return {
        "automountServiceAccountToken": False,
        "securityContext": {**POD_SECCOMP, "runAsNonRoot": True, "runAsUser": NON_ROOT_UID, "fsGroup": NON_ROOT_UID},
        "volumes": [{"name": TMP_VOLUME, "emptyDir": {"sizeLimit": "1Gi"}}],
        "containers": [container],
    }


def tpu_container_security() -> dict[str, Any]:
    """securityContext of a TPU container: not privileged, no escalation, no capabilities."""
    return {**CONTAINER_BASE, "privileged": False}


def tpu_pod_fields() -> dict[str, Any]:
    """Pod-level fields of every TPU pod: RuntimeDefault seccomp and no Kubernetes API token."""
    return {"automountServiceAccountToken": False, "securityContext": dict(POD_SECCOMP)}


def has_digest(image: str) -> bool:
    return "@sha256:" in image


def skip_annotations(exceptions: dict[str, str]) -> dict[str, str]:
    """`checkov.io/skip<n>: <check>=<reason>`, numbered in check order so the manifest diffs cleanly."""
    return {f"{SKIP_PREFIX}{i}": f"{check}={reason}" for i, (check, reason) in enumerate(sorted(exceptions.items()), 1)}
