"""What each pod gets from GKE's Cloud Storage FUSE CSI driver: its volumes and annotations read the way the driver
reads them, then held to what the pod should get.

The driver, as in GoogleCloudPlatform/gcs-fuse-csi-driver at 5fcdc04a (main, August 2026):
- webhook (pkg/webhook/mutatingwebhook.go, config.go): injects the sidecar when `gke-gcsfuse/volumes` parses as a
  bool true (`true`/`True`); `gke-gcsfuse/<resource>-limit` and `-request` override the defaults (cmd/webhook/main.go:
  250m CPU, 256Mi memory, 5Gi ephemeral storage, requests and limits alike); a limit of "0" with no request leaves
  the default request and no limit (populateResource, prepareResourceList drops zero limits); a pod volume named
  `gke-gcsfuse-cache` replaces the sidecar's own emptyDir cache volume (GetSidecarContainerVolumeSpec);
- node driver (pkg/csi_driver/utils.go parseRequestArguments, parseVolumeAttributes): `ro` when the kubelet publishes
  the volume read-only (an inline volume's `csi.readOnly`), then the `mountOptions` attribute split on ",";
- mounter (pkg/util/util.go prepareMountOptions): `ro`/`rw` and `o=<option>` go to the kernel mount;
- sidecar (pkg/sidecar_mounter/sidecar_mounter_config.go prepareMountArgs): an option with ":" and no "=" is a
  config-file setting, its value after the last ":"; any other is a gcsfuse flag `name[=value]`; a few flags are
  refused and dropped (DisallowedFlags); `file-cache:max-size-mb` other than 0 turns the file cache on, in the
  volume's own directory of the cache volume (`cache-dir`); without it there is no file cache.
gcsfuse's settings (GoogleCloudPlatform/gcsfuse cfg/params.yaml at 7b392927): `file-cache.max-size-mb` in MiB,
`metadata-cache.ttl-secs` -1 = never expire, `metadata-cache.negative-ttl-secs` 0 = no negative cache,
`metadata-cache.stat-cache-max-size-mb` and `type-cache-max-size-mb` -1 = unbounded. Each volume's settings and flags
are compared whole, per kind of volume (read-only with or without a file cache, writable).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from components import gcs_fuse, workloads
from components.config.serving import BucketMount
from components.config.stack import StackConfig
from offline.engine import Plan

SIDECAR_DEFAULTS = {"cpu": "250m", "memory": "256Mi", "ephemeral-storage": "5Gi"}
"""The webhook's default requests and limits (cmd/webhook/main.go flags sidecar-*-request / -limit)."""
DISALLOWED = {
    "log-file",
    "log-format",
    "o",
    "cache-dir",
    "temp-dir",
    "config-file",
    "foreground",
    "key-file",
    "token-url",
    "reuse-token-from-url",
    "prometheus-port",
    "kernel-params-file",
}
"""Flags the sidecar refuses (sidecar_mounter_config.go DisallowedFlags): dropped with a warning, the mount goes on."""
KNOWN_SETTINGS = {
    "implicit-dirs",
    "only-dir",
    "metadata-cache:ttl-secs",
    "metadata-cache:negative-ttl-secs",
    "metadata-cache:stat-cache-max-size-mb",
    "metadata-cache:type-cache-max-size-mb",
    "file-cache:max-size-mb",
    "file-cache:cache-file-for-range-read",
    "file-cache:enable-parallel-downloads",
}
"""gcsfuse settings (cfg/params.yaml) the stack may use; anything else would be a typo gcsfuse fails on or ignores."""
CACHE_VOLUME = "gke-gcsfuse-cache"


@dataclass
class Mount:
    """One volume as gcsfuse runs it."""

    kernel_options: set[str] = field(default_factory=set)
    flags: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)

    @property
    def file_cache_mib(self) -> int | None:
        """The file cache's bound in MiB, None when the cache is off (the sidecar passes no cache-dir)."""
        size = self.settings.get("file-cache:max-size-mb")
        return None if size in (None, "0") else int(size)


def mount(volume: dict[str, Any]) -> Mount:
    """What the node driver, mounter and sidecar make of an inline CSI volume."""
    options = {"ro"} if volume["csi"].get("readOnly") else set()
    options |= {o for o in str(volume["csi"]["volumeAttributes"].get("mountOptions", "")).split(",") if o}
    # The mounter keeps ro/rw and `o=<option>` for the kernel's mount; the sidecar gets the rest.
    kernel = {o for o in options if o in ("ro", "rw") or o.startswith("o=")}
    result = Mount(kernel_options={o.removeprefix("o=") for o in kernel})
    for option in sorted(options - kernel):
        if "=" not in option and ":" in option and "https" not in option:
            key, _, value = option.rpartition(":")
            target, name = result.settings, key
        else:
            name, _, value = option.partition("=")
            target = result.flags
        if name in DISALLOWED:
            result.dropped.append(option)
        else:
            target[name] = value
    return result


def parse_bool(text: str) -> bool:
    """The webhook's ParseBool: true/True and false/False only."""
    if text not in ("true", "True", "false", "False"):
        raise ValueError(text)
    return text.lower() == "true"


def sidecar_resources(annotations: dict[str, str]) -> dict[str, dict[str, str]]:
    """The sidecar's requests and limits: the webhook's populateResource and prepareResourceList."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for resource, default in SIDECAR_DEFAULTS.items():
        request = annotations.get(f"gke-gcsfuse/{resource}-request")
        limit = annotations.get(f"gke-gcsfuse/{resource}-limit")
        if request is None and limit is None:
            request = limit = default
        if limit == "0" and request is None:
            request = default
        request = limit if request is None else request
        limit = request if limit is None else limit
        if request not in (None, "0"):
            requests[resource] = str(request)
        if limit not in (None, "0"):
            limits[resource] = str(limit)
    return {"requests": requests, "limits": limits}


def mib(quantity: str) -> int:
    assert quantity.endswith("Gi"), quantity
    return int(quantity[:-2]) * 1024


@dataclass(frozen=True)
class Expected:
    """What a volume must give its pod, written by hand."""

    folder: str
    read_only: bool
    file_cache_mib: int | None
    settings: dict[str, str]
    """The volume's gcsfuse config-file settings, whole."""


# Metadata cached for the job's life (ttl -1) and unbounded (-1 MiB): a job's folder is listed once, not per read.
METADATA = {
    "metadata-cache:ttl-secs": "-1",
    "metadata-cache:stat-cache-max-size-mb": "-1",
    "metadata-cache:type-cache-max-size-mb": "-1",
}
CACHED_READ = {
    **METADATA,
    "file-cache:max-size-mb": "30412",
    "file-cache:cache-file-for-range-read": "true",
    "file-cache:enable-parallel-downloads": "true",
}
# A new checkpoint is seen at once: no cache of "not found" (negative ttl 0), no file cache.
WRITABLE = {**METADATA, "metadata-cache:negative-ttl-secs": "0"}
TRAINING = {
    "datasets": Expected("datasets", read_only=True, file_cache_mib=30412, settings=CACHED_READ),
    "checkpoints": Expected("checkpoints/training", read_only=False, file_cache_mib=None, settings=WRITABLE),
}
RESEARCH = {"datasets": TRAINING["datasets"]}
SAXML = {"models": Expected("models", read_only=True, file_cache_mib=30412, settings=CACHED_READ)}
BUCKET = "tpu-stack-prod-prod-tpu-stack"
CHECKPOINT_BUCKET = "tpu-stack-prod-prod-tpu-stack-ckpt"
"""Writers' checkpoints live in the checkpoint bucket (issue 27, defect 6), everything else in the datasets'."""
# prod's TPU pools keep GKE's 100 GiB boot disk: a 33 GiB cache volume, of which gcsfuse may fill 90%: 30412 MiB
# (test_gcs_fuse.py derives 33 GiB by hand from the boot disk).
CACHE_GIB = 33


def templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] == "JobSet":
        return [job["template"]["spec"]["template"] for job in obj["spec"]["replicatedJobs"]]
    return [obj["spec"]["template"]] if obj["kind"] in ("Job", "Deployment") else []


def prod_pods(plan: Plan, config: StackConfig) -> list[tuple[str, dict[str, Any], dict[str, Expected]]]:
    found = []
    for workload in workloads.workloads(config):
        expected = TRAINING if workload.queue.namespace == "training" else RESEARCH
        found += [(workload.name, t, expected) for o in workload.objects for t in templates(o)]
    for saxml in plan.by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"):
        found += [("saxml", t, SAXML) for t in templates(saxml["inputs"])]
    return found


def check_pod(name: str, template: dict[str, Any], expected: dict[str, Expected], cache_gib: int) -> None:
    annotations = template["metadata"]["annotations"]
    pod = template["spec"]
    assert parse_bool(annotations["gke-gcsfuse/volumes"]), name
    # A TPU pod owns its VM: the sidecar keeps the driver's requests and has no limit to be throttled or killed by.
    assert sidecar_resources(annotations) == {"requests": SIDECAR_DEFAULTS, "limits": {}}, name
    volumes = {v["name"]: v for v in pod["volumes"]}
    fuse = {n: mount(v) for n, v in volumes.items() if v.get("csi", {}).get("driver") == gcs_fuse.DRIVER}
    assert set(fuse) == set(expected), name
    for volume, got in fuse.items():
        want = expected[volume]
        bucket = CHECKPOINT_BUCKET if volume == "checkpoints" else BUCKET
        assert volumes[volume]["csi"]["volumeAttributes"]["bucketName"] == bucket
        assert got.dropped == [] and set(got.flags) | set(got.settings) <= KNOWN_SETTINGS, (name, volume)
        assert got.kernel_options == ({"ro"} if want.read_only else set()), (name, volume)
        assert got.flags == {"implicit-dirs": "", "only-dir": want.folder}, (name, volume)
        assert got.settings == want.settings, (name, volume)
        assert got.file_cache_mib == want.file_cache_mib, (name, volume)
    for container in pod["containers"]:
        mounts = {m["name"]: m["readOnly"] for m in container["volumeMounts"] if m["name"] in fuse}
        assert mounts == {v: e.read_only for v, e in expected.items()}, name
    cached = [m.file_cache_mib for m in fuse.values() if m.file_cache_mib]
    if cached:
        # The caches live in the pod's own bounded volume, owned by the sidecar's group, and fit it together.
        assert volumes[CACHE_VOLUME] == {"name": CACHE_VOLUME, "emptyDir": {"sizeLimit": f"{cache_gib}Gi"}}, name
        assert pod["securityContext"]["fsGroup"] == 65534, name
        assert sum(cached) <= mib(volumes[CACHE_VOLUME]["emptyDir"]["sizeLimit"])
    else:
        # No file cache: the sidecar's default cache volume is never written to.
        assert CACHE_VOLUME not in volumes, name


def test_prod_pods_get_what_their_volumes_promise(plans: dict[str, Plan], configs: dict[str, StackConfig]) -> None:
    pods = prod_pods(plans["prod"], configs["prod"])
    # prod's train ladder (train, then queued burst) gets one-slice examples only: a queued rung provisions one slice.
    assert {name for name, _, _ in pods} == {"train-1slice", "saxml"}
    for name, template, expected in pods:
        check_pod(name, template, expected, CACHE_GIB)


def test_dev_example_workloads_run_where_no_bucket_account_is_and_mount_nothing(
    configs: dict[str, StackConfig],
) -> None:
    """dev's examples run in `research`, which holds no bucket role: no volume, no sidecar."""
    for workload in workloads.workloads(configs["dev"]):
        for obj in workload.objects:
            for template in templates(obj):
                assert "gke-gcsfuse/volumes" not in template.get("metadata", {}).get("annotations", {})


# ---- the driver's reading of the stack's options, on their own ----------------------------------------------------


def attached(mounts: list[BucketMount], cache_gib: int) -> tuple[dict[str, Any], dict[str, str]]:
    pod: dict[str, Any] = {"containers": [{"name": "main"}, {"name": "loader"}]}
    annotations = gcs_fuse.attach(pod, "bucket", mounts, cache_gib=cache_gib)
    return pod, annotations


READ = BucketMount("datasets", "datasets", "/data", read_only=True)
MORE = BucketMount("eval", "eval/sets", "/eval", read_only=True)
WRITE = BucketMount("checkpoints", "checkpoints/team", "/checkpoints", read_only=False)


def test_read_only_folders_share_one_bounded_cache() -> None:
    pod, annotations = attached([READ, MORE, WRITE], cache_gib=20)
    fuse = {v["name"]: mount(v) for v in pod["volumes"] if "csi" in v}
    # 20 GiB volume, 90% for gcsfuse: 18432 MiB, split between the two read-only folders.
    assert {name: m.file_cache_mib for name, m in fuse.items()} == {"datasets": 9216, "eval": 9216, "checkpoints": None}
    assert {name: m.kernel_options for name, m in fuse.items()} == {
        "datasets": {"ro"},
        "eval": {"ro"},
        "checkpoints": set(),
    }
    assert fuse["eval"].flags == {"implicit-dirs": "", "only-dir": "eval/sets"}
    assert pod["volumes"][-1] == {"name": CACHE_VOLUME, "emptyDir": {"sizeLimit": "20Gi"}}
    assert pod["securityContext"] == {"fsGroup": 65534}
    for container in pod["containers"]:
        assert container["volumeMounts"] == [
            {"name": "datasets", "mountPath": "/data", "readOnly": True},
            {"name": "eval", "mountPath": "/eval", "readOnly": True},
            {"name": "checkpoints", "mountPath": "/checkpoints", "readOnly": False},
        ]
    assert sidecar_resources(annotations) == {"requests": SIDECAR_DEFAULTS, "limits": {}}


def test_without_a_cache_no_volume_folder_caches_files() -> None:
    pod, annotations = attached([READ, WRITE], cache_gib=0)
    assert [v["name"] for v in pod["volumes"]] == ["datasets", "checkpoints"]
    assert all(mount(v).file_cache_mib is None for v in pod["volumes"])
    assert {v["name"]: mount(v).settings for v in pod["volumes"]} == {"datasets": METADATA, "checkpoints": WRITABLE}
    assert "securityContext" not in pod
    assert parse_bool(annotations["gke-gcsfuse/volumes"])


def test_no_mounts_no_sidecar() -> None:
    pod, annotations = attached([], cache_gib=33)
    assert annotations == {} and pod == {"containers": [{"name": "main"}, {"name": "loader"}]}


def test_the_pods_own_security_context_is_kept() -> None:
    pod: dict[str, Any] = {
        "containers": [{"name": "main", "volumeMounts": [{"name": "x", "mountPath": "/x"}]}],
        "securityContext": {"runAsNonRoot": True},
        "volumes": [{"name": "x", "emptyDir": {}}],
    }
    gcs_fuse.attach(pod, "bucket", [READ], cache_gib=10)
    assert pod["securityContext"] == {"runAsNonRoot": True, "fsGroup": 65534}
    assert [v["name"] for v in pod["volumes"]] == ["x", "datasets", CACHE_VOLUME]
    assert [m["name"] for m in pod["containers"][0]["volumeMounts"]] == ["x", "datasets"]


ALL_LIMITS = {
    "gke-gcsfuse/cpu-limit": "500m",
    "gke-gcsfuse/memory-limit": "1Gi",
    "gke-gcsfuse/ephemeral-storage-limit": "50Gi",
}
ZERO_REQUESTS = {
    "gke-gcsfuse/cpu-request": "0",
    "gke-gcsfuse/memory-request": "0",
    "gke-gcsfuse/ephemeral-storage-request": "0",
}
GIVEN = {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "50Gi"}


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, {"requests": SIDECAR_DEFAULTS, "limits": SIDECAR_DEFAULTS}),
        (ALL_LIMITS, {"requests": GIVEN, "limits": GIVEN}),
        (
            {"gke-gcsfuse/memory-limit": "0"},
            {"requests": SIDECAR_DEFAULTS, "limits": {"cpu": "250m", "ephemeral-storage": "5Gi"}},
        ),
        (ZERO_REQUESTS, {"requests": {}, "limits": {}}),
    ],
)
def test_the_webhook_model_reads_annotations_as_the_driver_does(
    annotations: dict[str, str], expected: dict[str, dict[str, str]]
) -> None:
    """The reading itself, on cases of the driver's own TestPrepareConfig (pkg/webhook/mutatingwebhook_test.go, whose
    FakeConfig defaults are the webhook's: 250m, 256Mi, 5Gi)."""
    assert sidecar_resources(annotations) == expected


def test_the_sidecar_model_splits_settings_from_flags_as_the_driver_does() -> None:
    volume = {
        "csi": {
            "readOnly": False,
            "volumeAttributes": {
                "mountOptions": "implicit-dirs,uid=1001,"
                "metadata-cache:ttl-secs:-1,temp-dir=/tmp/x,logging:severity:error,rw,o=noexec"
            },
        }
    }
    got = mount(volume)
    assert got.kernel_options == {"rw", "noexec"}
    assert got.flags == {"implicit-dirs": "", "uid": "1001"}
    assert got.settings == {"metadata-cache:ttl-secs": "-1", "logging:severity": "error"}
    assert got.dropped == ["temp-dir=/tmp/x"]


def test_a_one_gib_cache_is_still_a_cache() -> None:
    pod, _ = attached([READ], cache_gib=1)
    (datasets, cache) = pod["volumes"]
    assert mount(datasets).file_cache_mib == 921  # 1024 MiB * 90%, rounded down
    assert cache == {"name": CACHE_VOLUME, "emptyDir": {"sizeLimit": "1Gi"}}


def test_a_volume_built_without_a_cache_size_caches_no_file() -> None:
    assert mount(gcs_fuse.volume("bucket", READ)).file_cache_mib is None
    assert "file-cache" not in gcs_fuse.mount_options(READ)
    assert mount(gcs_fuse.volume("bucket", READ, 1)).file_cache_mib == 1
    assert gcs_fuse.read_options(0) == gcs_fuse.read_options(-5)
