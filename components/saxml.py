"""Saxml: admin server, one multi-host model server per slice of a TPU pool group, HTTP server and its Service.

Each slice's model servers are a JobSet of their own, named by the slice's index (`sax-model-server-set-<i>`),
shaped from the pool's config (parallelism = completions = VMs per slice, `google.com/tpu` = chips per VM, the
pool's node labels), so serving cannot ask for a slice the pools do not have. One JobSet per slice, because a
JobSet's replicated jobs cannot change in place: more slices add JobSets and leave the running ones alone, and a
disruption of one slice restarts only that slice's servers (each slice serves on its own). Every pod runs as one
Workload Identity KSA with object access to the stack's bucket only; the admin server keeps its state under
`gs://<bucket>/sax-root`, where model and HTTP servers find it. CPU servers run on the system pool, never on TPU
nodes. The HTTP Service is an internal load balancer unless config opens it, and then only to listed source ranges.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import disruptions, gcs_fuse, jobset_install, network_policies, pod_security, tpu_catalog
from components.config.cluster import SYSTEM_NODE_SELECTOR
from components.config.pools import TpuPoolConfig
from components.config.serving import WRITER_ROLE, SaxmlConfig, file_cache_gib, saxml_mounts
from components.config.stack import StackConfig
from components.pod_template import pod_template
from components.workload_identity import BucketRole, WorkloadIdentity

ADMIN_PORT = 10000
MODEL_PORT = 10001
HTTP_PORT = 8888
MODEL_SERVER_SET = "sax-model-server-set"
INTERNAL_LB = "networking.gke.io/load-balancer-type"
ONE_SLICE_PER_NODE_POOL = {tpu_catalog.EXCLUSIVE_TOPOLOGY: tpu_catalog.NODE_POOL_LABEL}
HTTP_PATHS = ("publish", "generate", "listcell", "unpublish")
# Requests for the CPU servers, so the scheduler spreads them over the system pool like any controller.
ADMIN_RESOURCES = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}
HTTP_RESOURCES = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
PART_OF = {"app.kubernetes.io/part-of": "saxml"}


def sax_root(bucket: str) -> str:
    return f"gs://{bucket}/sax-root"


def admin_server(saxml: SaxmlConfig, bucket: str) -> k8s.apps.v1.DeploymentSpecArgsDict:
    """Deployment spec of the admin server: it tracks model servers and keeps its state in the bucket.

    The image serves the cell named by SAX_CELL, `/sax/test` when unset, and its entrypoint takes no arguments
    (google/saxml v1.1.0 saxml/tools/docker/Dockerfile.admin), so the configured cell goes in the environment:
    model servers of any other cell would never find their admin server."""
    return _cpu_deployment(
        "sax-admin-server",
        saxml,
        image=saxml.images.admin_server,
        port=ADMIN_PORT,
        env=[{"name": "GSBUCKET", "value": bucket}, {"name": "SAX_CELL", "value": saxml.cell}],
        resources=ADMIN_RESOURCES,
    )


def http_server(saxml: SaxmlConfig, bucket: str) -> k8s.apps.v1.DeploymentSpecArgsDict:
    """Deployment spec of the HTTP server: publish, list, generate, unpublish over REST."""
    return _cpu_deployment(
        "sax-http",
        saxml,
        image=saxml.images.http_server,
        port=HTTP_PORT,
        env=[{"name": "SAX_ROOT", "value": sax_root(bucket)}],
        resources=HTTP_RESOURCES,
    )


def _cpu_deployment(
    app: str, saxml: SaxmlConfig, *, image: str, port: int, env: list[dict[str, str]], resources: dict[str, Any]
) -> k8s.apps.v1.DeploymentSpecArgsDict:
    """A restricted CPU pod on the system pool: non-root, read-only root, no API token (Saxml never calls it)."""
    container = {"name": app, "image": image, "ports": [{"containerPort": port}], "env": env, "resources": resources}
    pod = {
        "metadata": {"labels": {"app": app, **PART_OF}},
        "spec": {
            "serviceAccountName": saxml.service_account,
            "nodeSelector": dict(SYSTEM_NODE_SELECTOR),  # Saxml needs TPU pools: always a Standard cluster
            **pod_security.cpu_pod(container, port=port),
        },
    }
    return {"replicas": 1, "selector": {"match_labels": {"app": app}}, "template": pod_template(pod)}


def model_server_set_name(index: int) -> str:
    """Slice `index`'s JobSet: its name never depends on how many slices there are."""
    return f"{MODEL_SERVER_SET}-{index}"


def model_server_set(saxml: SaxmlConfig, pool: TpuPoolConfig, bucket: str, *, cache_gib: int) -> dict[str, Any]:
    """JobSet spec of one slice's servers: one child Job, one pod per VM; any pod failing restarts them all.

    A disruption (node upgrade, repair, maintenance, preemption) restarts them without counting; only failures of
    their own count against `maxRestarts` (disruptions.py). Without the rule, every upgrade of a node counted one
    restart for the servers' whole life, and the one after `maxRestarts` failed the JobSet for good.

    Not on the host network: Workload Identity applies only to pods on the pod network, and the servers of a
    slice reach each other (ICI port) and the admin server through pod IPs, which the namespace policy allows.
    """
    machine = pool.machine
    chips = {tpu_catalog.TPU_RESOURCE: machine.chips_per_vm}
    host = pool.tpu_container_requests  # the node's CPU and memory: a model server owns its VM
    resources = {"requests": {**chips, **host}, "limits": {**chips, **pool.tpu_container_limits}}
    pod: dict[str, Any] = {
        "serviceAccountName": saxml.service_account,
        "restartPolicy": "Never",
        "nodeSelector": pool.node_labels,
        **pod_security.tpu_pod_fields(),
        "containers": [
            {
                "name": "sax-model-server",
                "image": saxml.images.model_server,
                "imagePullPolicy": "Always",
                "args": [
                    f"--port={MODEL_PORT}",
                    f"--sax_cell={saxml.cell}",
                    f"--platform_chip={machine.version.platform_chip}",
                    f"--platform_topology={pool.slice_topology}",
                ],
                "ports": [{"containerPort": MODEL_PORT}, {"containerPort": tpu_catalog.ICI_PORT}],
                "securityContext": pod_security.tpu_container_security(),
                "env": [
                    {"name": "SAX_ROOT", "value": sax_root(bucket)},
                    # Each slice serves on its own: unset the multislice variable the TPU runtime would read.
                    {"name": "MEGASCALE_NUM_SLICES", "value": ""},
                ],
                "resources": resources,
            }
        ],
    }
    # Checkpoints to publish are read from the bucket through Cloud Storage FUSE, as sax-sa.
    annotations = gcs_fuse.attach(pod, bucket, saxml_mounts(saxml), cache_gib=cache_gib)
    if pool.taints:
        pod["tolerations"] = [t.toleration for t in pool.taints]
    return {
        "failurePolicy": disruptions.jobset_policy(saxml.max_restarts),
        "replicatedJobs": [
            {
                "name": "sax-model-server",
                "replicas": 1,
                "template": {
                    "spec": {
                        "parallelism": pool.vms_per_slice,
                        "completions": pool.vms_per_slice,
                        **disruptions.child_job_policy(),
                        "template": {"metadata": {"labels": dict(PART_OF), "annotations": annotations}, "spec": pod},
                    }
                },
            }
        ],
    }


def http_service(saxml: SaxmlConfig) -> tuple[dict[str, str], k8s.core.v1.ServiceSpecArgsDict]:
    """(annotations, spec) of `sax-http-lb`: internal unless external is configured, always range-limited then."""
    annotations = {} if saxml.service.external else {INTERNAL_LB: "Internal"}
    spec: k8s.core.v1.ServiceSpecArgsDict = {
        "type": "LoadBalancer",
        "selector": {"app": "sax-http"},
        "ports": [{"name": "http", "protocol": "TCP", "port": HTTP_PORT, "target_port": HTTP_PORT}],
        # Internal or not, only the listed clients; Local keeps their addresses for the NetworkPolicy.
        "load_balancer_source_ranges": list(saxml.service.source_ranges),
        "external_traffic_policy": "Local",
    }
    return annotations, spec


def image_exceptions(*images: str) -> dict[str, str]:
    """The digest exception, only while an image is pinned by tag."""
    return {} if all(pod_security.has_digest(i) for i in images) else dict(pod_security.TAG_EXCEPTION)


def model_server_exceptions(saxml: SaxmlConfig) -> dict[str, str]:
    """Documented TPU-pod exceptions of the model servers (they request the node's CPU and memory, no CPU limit)."""
    return {
        **pod_security.TPU_EXCEPTIONS,
        **pod_security.CPU_LIMIT_EXCEPTION,
        **image_exceptions(saxml.images.model_server),
    }


def policies(saxml: SaxmlConfig, namespace: str) -> list[network_policies.Policy]:
    """Default deny; Saxml pods reach each other (admin only from them); clients reach only the HTTP port."""
    return [
        network_policies.default_deny(namespace),
        network_policies.allow_platform_egress(namespace),
        network_policies.allow_same_namespace(namespace, PART_OF),
        network_policies.allow_clients(
            namespace, "allow-http-clients", {"app": "sax-http"}, HTTP_PORT, saxml.service.source_ranges
        ),
    ]


def _load_balancer_ip(status: k8s.core.v1.outputs.ServiceStatus | None) -> str:
    """The Service's first ingress address; empty until the load balancer exists (and in previews)."""
    balancer = status.load_balancer if status else None
    ingress = (balancer.ingress if balancer else None) or []
    return (ingress[0].ip or ingress[0].hostname or "") if ingress else ""


class Saxml(pulumi.ComponentResource):
    """Saxml on `config.saxml.pool`; `http_address` and `urls` are the endpoints users call.

    `depends_on`: the JobSet and Kueue installs; the model-server JobSet waits for the JobSet CRD and for both
    charts' JobSet webhooks (Kueue's fails closed, refusing JobSets until its controller serves).
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
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:Saxml", name, None, opts)
        assert config.saxml is not None, "only built when tpu-stack:saxml is set"
        saxml = config.saxml
        pool = config.saxml_pool
        cache_gib = file_cache_gib(config.bucket, pool, autopilot=False)  # Saxml needs TPU pools: Standard
        in_cluster = pulumi.ResourceOptions(parent=self, provider=provider)

        # A built-in namespace (`default`, as in the Saxml tutorial) is used, never declared: the stack would
        # own it, and `pulumi destroy` would delete it.
        self.namespace: k8s.core.v1.Namespace | None = (
            k8s.core.v1.Namespace(f"{name}-namespace", metadata={"name": saxml.namespace}, opts=in_cluster)
            if saxml.declares_namespace
            else None
        )
        namespace: pulumi.Output[str] = (
            self.namespace.metadata.name if self.namespace else pulumi.Output.from_input(saxml.namespace)
        )
        self.identity: WorkloadIdentity = WorkloadIdentity(
            f"{name}-identity",
            config=config,
            workload=saxml.workload,
            bucket_roles=[BucketRole("bucket", bucket_name, WRITER_ROLE)],
            provider=provider,
            cluster=cluster,
            namespace=namespace,
            project_number=project_number,
            opts=pulumi.ResourceOptions(parent=self),
        )
        # Pods wait for their KSA; model servers also for the bucket binding, or the first GCS read fails.
        ready = pulumi.ResourceOptions(
            parent=self, provider=provider, depends_on=[self.identity.service_account, *self.identity.bindings]
        )
        bucket = pulumi.Output.from_input(bucket_name)

        self.admin_server: k8s.apps.v1.Deployment = k8s.apps.v1.Deployment(
            f"{name}-admin-server",
            metadata=_meta(
                "sax-admin-server",
                namespace,
                pod_security.skip_annotations(image_exceptions(saxml.images.admin_server)),
            ),
            spec=bucket.apply(lambda b: admin_server(saxml, b)),
            opts=ready,
        )
        spec = bucket.apply(lambda b: model_server_set(saxml, pool, b, cache_gib=cache_gib))
        self.model_servers: list[k8s.apiextensions.CustomResource] = [
            k8s.apiextensions.CustomResource(
                f"{name}-model-servers-{index}",
                api_version="jobset.x-k8s.io/v1alpha2",
                kind="JobSet",
                metadata=_meta(
                    model_server_set_name(index),
                    namespace,
                    {**ONE_SLICE_PER_NODE_POOL, **pod_security.skip_annotations(model_server_exceptions(saxml))},
                ),
                spec=spec,
                opts=pulumi.ResourceOptions.merge(
                    ready,
                    pulumi.ResourceOptions(
                        depends_on=list(depends_on),
                        replace_on_changes=list(jobset_install.IMMUTABLE_FIELDS),
                        delete_before_replace=True,
                    ),
                ),
            )
            for index in range(pool.slices)
        ]
        self.http_server: k8s.apps.v1.Deployment = k8s.apps.v1.Deployment(
            f"{name}-http",
            metadata=_meta(
                "sax-http", namespace, pod_security.skip_annotations(image_exceptions(saxml.images.http_server))
            ),
            spec=bucket.apply(lambda b: http_server(saxml, b)),
            opts=ready,
        )
        annotations, service_spec = http_service(saxml)
        self.service: k8s.core.v1.Service = k8s.core.v1.Service(
            f"{name}-http-lb",
            metadata=_meta("sax-http-lb", namespace, annotations=annotations),
            spec=service_spec,
            opts=in_cluster,
        )
        self.network_policies: list[k8s.networking.v1.NetworkPolicy] = [
            network_policies.network_policy(name, policy, in_cluster, namespace=namespace)
            for policy in policies(saxml, saxml.namespace)
        ]
        self.http_address: pulumi.Output[str] = self.service.status.apply(_load_balancer_ip)
        self.urls: pulumi.Output[dict[str, str]] = self.http_address.apply(
            lambda ip: {path: f"http://{ip}:{HTTP_PORT}/{path}" for path in HTTP_PATHS} if ip else {}
        )
        self.register_outputs({"httpAddress": self.http_address, "urls": self.urls})


def _meta(
    name: str, namespace: pulumi.Input[str], annotations: dict[str, str] | None = None
) -> k8s.meta.v1.ObjectMetaArgsDict:
    meta: k8s.meta.v1.ObjectMetaArgsDict = {"name": name, "namespace": namespace, "labels": dict(PART_OF)}
    if annotations:
        meta["annotations"] = annotations
    return meta
