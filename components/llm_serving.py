"""LlmServing: vLLM's OpenAI-compatible servers on TPU slices, each behind its own internal load balancer.

Every server's shape comes from its pool (components/config/llm_serving.py): a single-host slice runs one vLLM pod
per replica (a Deployment); a multi-host slice runs one LeaderWorkerSet group per replica, one pod per VM, the
group created, placed on one slice (one node pool, `exclusive-topology`) and restarted together
(`RecreateGroupOnPodRestart`). In a group the leader starts a Ray head, waits until every host of the slice has
joined it, then starts the API server with tensor parallelism over all the slice's chips; the other hosts join the
leader's Ray head (vLLM's TPU backend runs multi-host over Ray: `TPU_MULTIHOST_BACKEND=ray`). Only leaders serve:
the load balancer selects them, and a leader is ready only when its whole group serves the model.

Weights come from the stack's bucket through Cloud Storage FUSE: a Hugging Face model is downloaded once, by its
one pod, into `<cacheFolder>/<server>` (read-write), a bucket model is read from its folder (read-only, through a
bounded file cache when the weights fit it); the XLA compilation cache lives beside the downloads, so restarts skip
compilation. The server identity reads the bucket and writes only under `<cacheFolder>`. A Hugging Face token, when
configured, is read from a Secret the operator creates, mounted as a file: its value never enters the stack state.
"""

from __future__ import annotations

import dataclasses
import functools
import shlex
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import gcs_fuse, network_policies, pod_security, tpu_catalog
from components.config.llm_serving import (
    HF_CACHE,
    MULTI_HOST_ENV,
    RAY_PORT,
    ROLLOUT_DEADLINE_SECONDS,
    SERVER_PORT,
    STARTUP_MINUTES,
    LlmServingConfig,
    ServerShape,
)
from components.config.stack import StackConfig
from components.pod_template import pod_template
from components.workload_identity import BucketRole, WorkloadIdentity

LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
INTERNAL_LB = "networking.gke.io/load-balancer-type"
EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
"""LWS annotation: each group gets a value of this node label to itself; per node pool = per slice."""
SKIP_AWAIT = "pulumi.com/skipAwait"
WAIT_FOR = "pulumi.com/waitFor"
LOAD_BALANCER_ADDRESS = "jsonpath={.status.loadBalancer.ingress[0].ip}"
"""What `pulumi up` waits for on a server's Service: the internal load balancer's address, which the `endpoint`
output needs, and not the API servers behind it. Without it the provider's Service await also waits until no
selected pod is unready (pulumi-kubernetes provider/pkg/await/service.go checkAndLogStatus: `endpointsPending`
while the Endpoints list any notReadyAddresses) and fails after its 10 minutes while a model loads; a `waitFor`
annotation replaces that await (metadata/overrides.go ReadyCondition; await.go Creation and Update use the
built-in await only when no such annotation is set; CHANGELOG 4.18.4)."""
PART_OF = {"app.kubernetes.io/part-of": "llm-serving"}
API_SERVER = "api-server"
RAY_WORKER = "ray-worker"
TOKEN_DIR = "/var/run/secrets/huggingface"
SHM_SIZE = "16Gi"
"""Shared memory for the server's and Ray's worker processes (the container default is 64 MiB)."""
# Why the server pods differ from the restricted profile; the keys are checkov check ids.
SERVER_EXCEPTIONS = {
    **pod_security.TPU_EXCEPTIONS,
    **pod_security.CPU_LIMIT_EXCEPTION,
}
WORKER_EXCEPTIONS = {
    "CKV_K8S_8": "Ray workers serve no endpoint: the leader's /health fails when a host is lost and the group is "
    "recreated",
    "CKV_K8S_9": "Ray workers serve no endpoint: the load balancer only selects the group's leader",
}


def labels(shape: ServerShape) -> dict[str, str]:
    """What selects a server's pods; stable for its life (a Deployment's selector cannot change)."""
    return {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": shape.server.name}


def _health(**fields: int) -> dict[str, Any]:
    return {"httpGet": {"path": "/health", "port": SERVER_PORT}, **fields}


def _probes() -> dict[str, Any]:
    """vLLM's /health answers 200 once the engine serves and fails when it dies (a lost Ray host included)."""
    return {
        "startupProbe": _health(periodSeconds=10, failureThreshold=STARTUP_MINUTES * 6),
        "readinessProbe": _health(periodSeconds=10, failureThreshold=3),
        "livenessProbe": _health(periodSeconds=30, timeoutSeconds=10, failureThreshold=4),
    }


def _leader_script(shape: ServerShape) -> str:
    """Start the Ray head, wait until all the slice's hosts (LWS_GROUP_SIZE, set by LWS) have joined, serve. The
    startup probe bounds the wait: a host that never joins restarts the leader, and with it the group."""
    alive = "import ray; ray.init(address='auto'); print(sum(1 for n in ray.nodes() if n['Alive']))"
    serve = shlex.join(["python3", "-m", "vllm.entrypoints.openai.api_server", *shape.engine_args])
    return (
        f"ray start --head --port={RAY_PORT} --disable-usage-stats && "
        f'until [ "$(python3 -c "{alive}")" = "$LWS_GROUP_SIZE" ]; do sleep 5; done && '
        f"exec {serve}"
    )


def _worker_script() -> str:
    """Join the leader's Ray head (LWS_LEADER_ADDRESS, set by LWS), retrying while it starts; give up after 5
    minutes, which restarts the whole group."""
    return (
        "for attempt in $(seq 60); do "
        f'ray start --address="$LWS_LEADER_ADDRESS:{RAY_PORT}" --disable-usage-stats --block && exit 0; '
        "sleep 5; done; exit 1"
    )


def server_pod(shape: ServerShape, serving: LlmServingConfig, bucket: str, *, role: str) -> dict[str, Any]:
    """A pod template of the server: the API server itself (`api-server`: a single-host replica or a group's
    leader) or one of a group's other hosts (`ray-worker`). Not on the host network, so Workload Identity applies
    (the bucket is read as the server's KSA); hosts of a group reach each other through pod IPs."""
    server, pool = shape.server, shape.pool
    chips = {tpu_catalog.TPU_RESOURCE: shape.chips_per_host}
    env: list[dict[str, Any]] = [{"name": "VLLM_XLA_CACHE_PATH", "value": "/cache/xla"}]
    if shape.multi_host:
        env += [{"name": name, "value": value} for name, value in MULTI_HOST_ENV]
    container: dict[str, Any] = {
        "name": "vllm",
        "image": server.image,
        "imagePullPolicy": "Always",
        "env": env,
        "resources": {
            "requests": {**chips, **shape.pool.tpu_container_requests},
            "limits": {**chips, **shape.pool.tpu_container_limits},
        },
        "securityContext": pod_security.tpu_container_security(),
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if not shape.multi_host:
        container["command"] = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
        container["args"] = shape.engine_args
    else:
        container["command"] = ["/bin/sh", "-c"]
        container["args"] = [_leader_script(shape) if role == API_SERVER else _worker_script()]
    if role == API_SERVER:
        container["ports"] = [{"name": "http", "containerPort": SERVER_PORT}]
        if shape.multi_host:
            container["ports"].append({"name": "ray", "containerPort": RAY_PORT})
        container.update(_probes())
    pod: dict[str, Any] = {
        "serviceAccountName": serving.service_account,
        "nodeSelector": pool.node_labels,
        **pod_security.tpu_pod_fields(),
        "containers": [container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}}],
    }
    token = serving.hugging_face_token
    if token is not None and server.model is not None:
        pod["volumes"].append(
            {
                "name": "hf-token",
                "secret": {"secretName": token.secret, "items": [{"key": token.key, "path": "token"}],
                           "defaultMode": 0o400},
            }
        )  # fmt: skip
        container["volumeMounts"].append({"name": "hf-token", "mountPath": TOKEN_DIR, "readOnly": True})
        env.append({"name": "HF_TOKEN_PATH", "value": f"{TOKEN_DIR}/token"})
    if server.model is not None:
        env.append({"name": "HF_HUB_CACHE", "value": HF_CACHE})
    if pool.taints:
        pod["tolerations"] = [t.toleration for t in pool.taints]
    # A bucket model's read-only folder is read through a file cache as large as the node's boot disk holds, if
    # its weights fit there (ServerShape.file_cache_gib); a Hugging Face download into the read-write cache folder
    # is read back uncached.
    annotations = gcs_fuse.attach(pod, bucket, shape.mounts(serving), cache_gib=shape.file_cache_gib)
    component = {"app.kubernetes.io/component": role}
    return {"metadata": {"labels": {**labels(shape), **component, **PART_OF}, "annotations": annotations}, "spec": pod}


def deployment_spec(shape: ServerShape, serving: LlmServingConfig, bucket: str) -> k8s.apps.v1.DeploymentSpecArgsDict:
    """Single-host slices: one pod per replica; a rollout adds one on a spare slice first when there is one."""
    return {
        "replicas": shape.server.replicas,
        "progress_deadline_seconds": ROLLOUT_DEADLINE_SECONDS,
        "selector": {"match_labels": labels(shape)},
        "strategy": {
            "type": "RollingUpdate",
            "rolling_update": {"max_surge": shape.max_surge, "max_unavailable": shape.max_unavailable},
        },
        "template": pod_template(server_pod(shape, serving, bucket, role=API_SERVER)),
    }


def leader_worker_set_spec(shape: ServerShape, serving: LlmServingConfig, bucket: str) -> dict[str, Any]:
    """Multi-host slices: one group per replica, size = VMs per slice. Workers start with their leader
    (`LeaderCreated`: the leader waits for them); a failed pod recreates its whole group."""
    return {
        "replicas": shape.server.replicas,
        "startupPolicy": "LeaderCreated",
        "rolloutStrategy": {
            "type": "RollingUpdate",
            "rollingUpdateConfiguration": {"maxSurge": shape.max_surge, "maxUnavailable": shape.max_unavailable},
        },
        "networkConfig": {"subdomainPolicy": "Shared"},
        "leaderWorkerTemplate": {
            "size": shape.hosts,
            "restartPolicy": "RecreateGroupOnPodRestart",
            "leaderTemplate": server_pod(shape, serving, bucket, role=API_SERVER),
            "workerTemplate": server_pod(shape, serving, bucket, role=RAY_WORKER),
        },
    }


def load_balancer(shape: ServerShape, serving: LlmServingConfig) -> k8s.core.v1.ServiceSpecArgsDict:
    """`<server>-lb`, an internal load balancer to the API servers, for the listed client ranges only. Not named
    after the server: LeaderWorkerSet names its own headless Service (the group's DNS) after the set."""
    return {
        "type": "LoadBalancer",
        "selector": {**labels(shape), "app.kubernetes.io/component": API_SERVER},
        "ports": [{"name": "http", "protocol": "TCP", "port": SERVER_PORT, "target_port": SERVER_PORT}],
        "load_balancer_source_ranges": list(serving.service.source_ranges),
        # Local keeps the clients' addresses, which the namespace's NetworkPolicy admits by range.
        "external_traffic_policy": "Local",
    }


def policies(shapes: Sequence[ServerShape], serving: LlmServingConfig) -> list[network_policies.Policy]:
    """Default deny; clients reach only the API servers' port; the hosts of a multi-host server reach each other
    on any port (Ray, the TPU runtime), nothing else does."""
    namespace = serving.namespace
    found = [network_policies.default_deny(namespace), network_policies.allow_platform_egress(namespace)]
    for shape in shapes:
        name = shape.server.name
        api = {**labels(shape), "app.kubernetes.io/component": API_SERVER}
        found.append(
            network_policies.allow_clients(
                namespace, f"allow-{name}-clients", api, SERVER_PORT, serving.service.source_ranges
            )
        )
        if shape.multi_host:
            group = network_policies.allow_same_namespace(namespace, labels(shape))
            found.append(dataclasses.replace(group, name=f"allow-{name}-group"))
    return found


def exceptions(shape: ServerShape) -> dict[str, str]:
    """The server's documented scan exceptions (LeaderWorkerSet: its workers' too)."""
    found = {**SERVER_EXCEPTIONS, **(WORKER_EXCEPTIONS if shape.multi_host else {})}
    if not pod_security.has_digest(shape.server.image):
        found.update(pod_security.TAG_EXCEPTION)
    return found


def _load_balancer_address(status: k8s.core.v1.outputs.ServiceStatus | None) -> str:
    """The Service's first ingress address; empty until the load balancer exists (and in previews)."""
    balancer = status.load_balancer if status else None
    ingress = (balancer.ingress if balancer else None) or []
    return (ingress[0].ip or ingress[0].hostname or "") if ingress else ""


class LlmServing(pulumi.ComponentResource):
    """The vLLM servers of `tpu-stack:serving`; `endpoints` maps each server to its OpenAI-compatible base URL.

    `lws_webhooks`: what LeaderWorkerSets wait for: the LWS chart (its CRD and its webhooks) and every other chart
    that registers a fail-closed webhook for them (Kueue's chart does, in every namespace but its own, whether or
    not Kueue integrates LeaderWorkerSets: the catalogue's objects-after-their-webhooks rule finds them).
    """

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        bucket_name: pulumi.Input[str],
        provider: k8s.Provider,
        cluster: pulumi.Resource,
        project_number: pulumi.Input[str] | None = None,
        lws_webhooks: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:LlmServing", name, None, opts)
        assert config.serving is not None, "only built when tpu-stack:serving is set"
        serving = config.serving
        shapes = config.server_shapes
        in_cluster = pulumi.ResourceOptions(parent=self, provider=provider)

        self.namespace: k8s.core.v1.Namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata={"name": serving.namespace, "labels": PART_OF}, opts=in_cluster
        )
        namespace: pulumi.Output[str] = self.namespace.metadata.name
        self.identity: WorkloadIdentity = WorkloadIdentity(
            f"{name}-identity",
            config=config,
            workload=serving.workload,
            bucket_roles=[
                BucketRole("bucket", bucket_name, role, condition)
                for role, condition in serving.bucket_grants(config.bucket_name)
            ],
            provider=provider,
            cluster=cluster,
            namespace=namespace,
            project_number=project_number,
            opts=pulumi.ResourceOptions(parent=self),
        )
        # Pods wait for their KSA and its bucket binding, or the first read of the bucket fails.
        ready = pulumi.ResourceOptions(
            parent=self, provider=provider, depends_on=[self.identity.service_account, *self.identity.bindings]
        )
        bucket = pulumi.Output.from_input(bucket_name)
        self.servers: dict[str, k8s.apps.v1.Deployment | k8s.apiextensions.CustomResource] = {}
        self.services: dict[str, k8s.core.v1.Service] = {}
        for shape in shapes:
            server = shape.server.name
            skips = pod_security.skip_annotations(exceptions(shape))
            if shape.multi_host:
                self.servers[server] = k8s.apiextensions.CustomResource(
                    f"{name}-{server}",
                    api_version=LWS_API_VERSION,
                    kind="LeaderWorkerSet",
                    metadata=_meta(server, namespace, {EXCLUSIVE_TOPOLOGY: tpu_catalog.NODE_POOL_LABEL, **skips}),
                    spec=bucket.apply(functools.partial(leader_worker_set_spec, shape, serving)),
                    opts=pulumi.ResourceOptions.merge(ready, pulumi.ResourceOptions(depends_on=list(lws_webhooks))),
                )
            else:
                # A model loads for longer than the provider's 10-minute Deployment await: `pulumi up` declares the
                # rollout, the probes and the load balancer decide when a replica serves.
                self.servers[server] = k8s.apps.v1.Deployment(
                    f"{name}-{server}",
                    metadata=_meta(server, namespace, {SKIP_AWAIT: "true", **skips}),
                    spec=bucket.apply(functools.partial(deployment_spec, shape, serving)),
                    opts=ready,
                )
            self.services[server] = k8s.core.v1.Service(
                f"{name}-{server}-lb",
                metadata=_meta(f"{server}-lb", namespace, {INTERNAL_LB: "Internal", WAIT_FOR: LOAD_BALANCER_ADDRESS}),
                spec=load_balancer(shape, serving),
                opts=in_cluster,
            )
        self.network_policies: list[k8s.networking.v1.NetworkPolicy] = [
            network_policies.network_policy(name, policy, in_cluster, namespace=namespace)
            for policy in policies(shapes, serving)
        ]
        self.endpoints: dict[str, pulumi.Output[str]] = {
            server: service.status.apply(_load_balancer_address).apply(
                lambda address: f"http://{address}:{SERVER_PORT}/v1" if address else ""
            )
            for server, service in self.services.items()
        }
        self.register_outputs({"endpoints": self.endpoints})


def _meta(
    name: str, namespace: pulumi.Input[str], annotations: dict[str, str] | None = None
) -> k8s.meta.v1.ObjectMetaArgsDict:
    meta: k8s.meta.v1.ObjectMetaArgsDict = {"name": name, "namespace": namespace, "labels": dict(PART_OF)}
    if annotations:
        meta["annotations"] = annotations
    return meta
