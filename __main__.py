"""tpu-stack: GKE cluster, TPU slice pools, batch scheduling and serving, one stack per environment.

Only wiring lives here; each component owns one responsibility and every derived value comes from the
validated config model (components/config/).
"""

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi

from components import workload_identity
from components.adoption import import_existing
from components.bucket import Bucket
from components.config import load_from_pulumi
from components.config.base import JOBSET_NAMESPACE, KUEUE_NAMESPACE, LWS_NAMESPACE
from components.config.queues import flavor_labels, queue_refs
from components.config.serving import WRITER_ROLE
from components.config.stack import StackConfig
from components.controller_metrics import ControllerMetrics
from components.gke_cluster import GkeCluster
from components.jobset_install import CONTROLLER_LABELS as JOBSET_LABELS
from components.jobset_install import JobSetInstall
from components.kueue_install import CONTROLLER_LABELS as KUEUE_LABELS
from components.kueue_install import KueueInstall
from components.kueue_queues import KueueQueues
from components.llm_serving import LlmServing
from components.lws_install import LwsInstall
from components.monitoring import Monitoring
from components.multikueue import MultiKueueManager, MultiKueueWorker
from components.network_policies import (
    JOBSET_API_SERVER_PORTS,
    KUEUE_API_SERVER_PORTS,
    LWS_API_SERVER_PORTS,
    NamespacePolicies,
    controller_policies,
    training_policies,
)
from components.project import ProjectServices, StackNetwork
from components.saxml import Saxml
from components.tpu_slice_pools import TpuSlicePools
from components.workload_identity import BucketRole, WorkloadIdentity, WorkloadServiceAccounts

config = load_from_pulumi()
for warning in config.warnings:  # valid, but rarely meant: `pulumi preview` shows each as a warning
    pulumi.log.warn(warning)
# In protected stacks every resource is protected (children inherit it from their component, a chart's
# rendered objects from the Chart): `pulumi destroy` and replacements stop until `pulumi state unprotect`.
protected = pulumi.ResourceOptions(protect=config.protected)
if config.cluster.adopted is not None and config.cluster.adopted.imports:
    # An adopted cluster's existing resources are imported, not created (docs/adopt.md).
    pulumi.runtime.register_stack_transformation(import_existing(config.cluster.adopted.imports))


def needs(*apis: str) -> pulumi.ResourceOptions:
    """`protected`, waiting for the APIs a component's resources call: a component's children are registered only
    after it, and it only after what it depends on exists."""
    return pulumi.ResourceOptions(protect=config.protected, depends_on=services.of(*apis))


# --- an empty project: the APIs the stack calls, then its own VPC (or an existing network named in config) ---
services = ProjectServices("apis", config=config, opts=protected)
vpc = (
    StackNetwork("network", config=config, depends_on=services.of("compute"), opts=protected)
    if config.owns_network
    else None
)
network: pulumi.Input[str] = vpc.network.name if vpc else config.vpc_name


@dataclass
class Worker:
    """What the manager needs of a worker: its DNS endpoint, its token for the manager, and what must exist there
    before the manager dispatches to it."""

    endpoint: pulumi.Output[str]
    token: pulumi.Output[str]
    ready: list[pulumi.Resource]


@dataclass
class BatchCluster:
    """One cluster of the stack and what its batch scheduling is made of."""

    cluster: GkeCluster
    jobset: JobSetInstall
    kueue: KueueInstall
    queues: KueueQueues
    monitoring: Monitoring


def batch_cluster(
    cluster_config: StackConfig, *, prefix: str = "", workers: Mapping[str, Worker] | None = None
) -> BatchCluster:
    """A cluster, its TPU pool groups, JobSet, Kueue, the queues, their network policies, metrics and monitoring.
    `prefix` keeps a worker's resource names apart from the manager's (the stack's own cluster has none);
    `workers`: a MultiKueue manager's workers, which its queues dispatch to."""
    cluster = GkeCluster(
        cluster_config.cluster.name,
        config=cluster_config,
        network=network,
        opts=needs("compute", "container", "iam", "cloudresourcemanager", "dns", "logging", "monitoring"),
    )
    for pool in cluster_config.tpu_pools:
        TpuSlicePools(
            pool.name,
            config=cluster_config,
            pool=pool,
            cluster=cluster.cluster,
            node_service_account_email=cluster.node_service_account_email,
            opts=needs("container", "compute"),
        )
    jobset = JobSetInstall(f"{prefix}jobset", config=cluster_config, provider=cluster.provider, opts=protected)
    kueue = KueueInstall(
        f"{prefix}kueue", config=cluster_config, provider=cluster.provider, depends_on=[jobset.chart], opts=protected
    )
    admission_checks: list[pulumi.Resource] = []
    if workers:
        manager = MultiKueueManager(
            "multikueue",
            workers={name: (w.endpoint, w.token, w.ready) for name, w in workers.items()},
            provider=cluster.provider,
            namespace=kueue.namespace,
            kueue_chart=kueue.chart,
            opts=protected,
        )
        admission_checks.append(manager.admission_check)
    queues = KueueQueues(
        f"{prefix}queues",
        # A manager's queues are derived from its workers' pool groups.
        config=cluster_config.manager_queues if cluster_config.is_manager else cluster_config,
        provider=cluster.provider,
        kueue_chart=kueue.chart,
        jobset_chart=jobset.chart,
        admission_checks=admission_checks,
        opts=protected,
    )
    # Default deny in every namespace the stack creates; then what the controllers and training pods need.
    for release, install, namespace_name, ports in (
        ("jobset", jobset, JOBSET_NAMESPACE, JOBSET_API_SERVER_PORTS),
        ("kueue", kueue, KUEUE_NAMESPACE, KUEUE_API_SERVER_PORTS),
    ):
        NamespacePolicies(
            f"{prefix}{release}-policies",
            policies=controller_policies(namespace_name, ports),
            provider=cluster.provider,
            depends_on=[install.namespace],
            opts=protected,
        )
    # Managed Service for Prometheus scrapes both controllers (their namespaces admit it on the metrics port).
    for release, install, namespace_name, labels in (
        ("jobset", jobset, JOBSET_NAMESPACE, JOBSET_LABELS),
        ("kueue", kueue, KUEUE_NAMESPACE, KUEUE_LABELS),
    ):
        ControllerMetrics(
            f"{prefix}{release}-metrics",
            namespace=namespace_name,
            release=release,
            pod_labels=labels,
            provider=cluster.provider,
            depends_on=[install.namespace, install.chart],
            opts=protected,
        )
    for name, namespace in queues.namespaces.items():
        NamespacePolicies(
            f"{prefix}{name}-policies",
            policies=training_policies(name),
            provider=cluster.provider,
            depends_on=[namespace],
            opts=protected,
        )
    # The dashboard and alert policies from the pools and queues; several clusters share one project's metrics.
    # A MultiKueue worker's pending copies are the manager's workloads, which its own alerts cover (pending: waiting
    # for the manager's quota; waiting-for-a-worker: quota held, no worker admitted yet).
    monitoring = Monitoring(
        f"{prefix}monitoring",
        config=cluster_config,
        cluster_scoped=config.is_manager,
        pending_alerts=cluster_config is config,
        opts=needs("monitoring"),
    )
    return BatchCluster(cluster, jobset, kueue, queues, monitoring)


# --- MultiKueue workers: full clusters in other regions, created alongside the manager ---
workers: dict[str, Worker] = {}
worker_clusters: dict[str, BatchCluster] = {}
for worker_config in config.worker_configs:
    worker_name = worker_config.cluster.name
    built = batch_cluster(worker_config, prefix=f"{worker_name}-")
    access = MultiKueueWorker(
        f"{worker_name}-multikueue",
        token_generation=config.multi_kueue.token_generation if config.multi_kueue else 1,
        provider=built.cluster.provider,
        namespace=built.kueue.namespace,
        # Every namespace with a LocalQueue, `default` included (a team's or the single queue's).
        team_namespaces={
            ref.namespace: built.queues.namespaces.get(ref.namespace)
            for ref in queue_refs(worker_config.queues).values()
        },
        opts=protected,
    )
    worker_clusters[worker_name] = built
    workers[worker_name] = Worker(
        built.cluster.dns_endpoint, access.token, [built.kueue.chart, built.queues, *access.bindings]
    )

# --- the stack's cluster (a MultiKueue stack's manager): batch scheduling from the pools or the workers ---
main = batch_cluster(config, workers=workers)
cluster, jobset, kueue, queues, monitoring = main.cluster, main.jobset, main.kueue, main.queues, main.monitoring
pulumi.export(
    "queues",
    {
        team: {"namespace": ref.namespace, "localQueue": ref.local_queue, "clusterQueue": ref.cluster_queue}
        for team, ref in queue_refs(config.queues).items()
    },
)
pulumi.export("flavors", {pool.name: flavor_labels(pool) for pool in config.manager_queues.queue_pools})
# Capacity ladders: ladder -> its pool groups (flavors) in the order Kueue tries them.
pulumi.export("ladders", {name: [pool.name for pool in rungs] for name, rungs in config.manager_queues.ladders.items()})
# Kueue's waitForPodsReady as every cluster of the stack runs it: `tpu-stack why` times evictions by it.
pulumi.export("waitForPodsReady", config.pods_ready.kueue())

# --- serving and identity: bucket, Workload Identity, Saxml ---
bucket = Bucket("data", config=config, opts=needs("storage"))
project_number = workload_identity.project_number(config)
identities = [
    WorkloadIdentity(
        f"{workload.namespace}-{workload.service_account}",
        config=config,
        workload=workload,
        # Writers hold their role on the checkpoint bucket too, where they mount their checkpoint folder.
        bucket_roles=[
            BucketRole("bucket", bucket.name, role),
            *(
                [BucketRole("checkpoints", bucket.checkpoint_name, role)]
                if bucket.checkpoint_name and role == WRITER_ROLE
                else []
            ),
        ],
        provider=cluster.provider,
        cluster=cluster.cluster,
        namespace=queues.namespace_name(workload.namespace),
        project_number=project_number,
        opts=needs("iam", "storage", "iamcredentials"),
    )
    for _field, _index, workload, role in config.bucket.grants
]
# The manager's workloads run on the workers, as the same Kubernetes service accounts.
for worker_name, built in worker_clusters.items():
    WorkloadServiceAccounts(
        f"{worker_name}-identities",
        identities=identities,
        provider=built.cluster.provider,
        namespace_name=built.queues.namespace_name,
        opts=protected,
    )
saxml = (
    Saxml(
        "saxml",
        config=config,
        bucket_name=bucket.name,
        provider=cluster.provider,
        cluster=cluster.cluster,
        project_number=project_number,
        # Kueue's JobSet webhook (failurePolicy Fail) refuses JobSets until its controller serves.
        depends_on=[jobset.chart, kueue.chart],
        opts=needs("iam", "storage", "iamcredentials"),
    )
    if config.saxml
    else None
)
if saxml:
    identities.append(saxml.identity)

# --- LLM serving: vLLM servers; multi-host slices run on LeaderWorkerSet, installed when a server needs it ---
lws = LwsInstall("lws", config=config, provider=cluster.provider, opts=protected) if config.needs_lws else None
if lws:
    NamespacePolicies(
        "lws-policies",
        policies=controller_policies(LWS_NAMESPACE, LWS_API_SERVER_PORTS),
        provider=cluster.provider,
        depends_on=[lws.namespace],
        opts=protected,
    )
llm_serving = (
    LlmServing(
        "llm-serving",
        config=config,
        bucket_name=bucket.name,
        provider=cluster.provider,
        cluster=cluster.cluster,
        project_number=project_number,
        # LeaderWorkerSets go through the LWS chart's webhooks and Kueue's (Kueue's chart registers fail-closed
        # LeaderWorkerSet webhooks in every namespace but its own).
        lws_webhooks=[lws.chart, kueue.chart] if lws else [],
        opts=needs("iam", "storage", "iamcredentials"),
    )
    if config.serving
    else None
)
if llm_serving:
    identities.append(llm_serving.identity)


# --- outputs ---
pulumi.export("clusterName", cluster.cluster.name)
pulumi.export("clusterEndpoint", cluster.cluster.endpoint)
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export(
    "tpuPools",
    {
        pool.name: {
            "nodePools": pool.node_pool_names,
            "machineType": pool.machine.name,
            "topology": pool.slice_topology,
            "slices": pool.slices,
            "vmsPerSlice": pool.vms_per_slice,
            "chips": pool.total_chips,
            "provisioning": pool.provisioning,
            "nodeSelector": pool.node_selector,
        }
        for pool in config.manager_queues.tpu_pools  # a MultiKueue manager's: its workers'
    },
)
if config.is_manager:
    pulumi.export(
        "multiKueue",
        {
            "manager": config.cluster.name,
            "submit": "to the teams' LocalQueues on the manager (output queues), with its kubeconfig",
            "workers": {
                worker.name: {
                    "region": worker.region,
                    "clusterEndpoint": workers[worker.name].endpoint,
                    "pools": {
                        pool.name: {
                            "machineType": pool.machine.name,
                            "topology": pool.slice_topology,
                            "provisioning": pool.provisioning,
                            "zone": pool.zone,
                            "chips": pool.total_chips,
                        }
                        for pool in worker.tpu_pools
                    },
                }
                for worker in config.workers
            },
            "shapes": config.worker_shapes,
        },
    )
# The validated config as deployed: `tpu-stack submit` builds workloads from it with components/workloads.py.
pulumi.export("stackConfig", config.model_dump(mode="json", by_alias=True, exclude_none=True))
pulumi.export("bucketName", bucket.name)
pulumi.export("bucketUrl", bucket.url)
if bucket.checkpoint_name is not None:
    pulumi.export("checkpointBucketName", bucket.checkpoint_name)
    pulumi.export("checkpointBucketUrl", bucket.checkpoint_url)
pulumi.export("dashboardUrl", monitoring.url)
pulumi.export("identities", {identity.key: identity.summary() for identity in identities})
if saxml and config.saxml:
    pulumi.export(
        "saxml",
        {
            "namespace": config.saxml.namespace,
            "serviceAccount": config.saxml.service_account,
            "cell": config.saxml.cell,
            "pool": config.saxml.pool,
            "httpAddress": saxml.http_address,
            "urls": saxml.urls,
        },
    )
if llm_serving and config.serving:
    pulumi.export(
        "serving",
        {
            shape.server.name: {
                "endpoint": llm_serving.endpoints[shape.server.name],
                "model": shape.server.model_name,
                "pool": shape.pool.name,
                "kind": shape.kind,
                "replicas": shape.server.replicas,
                "hostsPerReplica": shape.hosts,
                "chipsPerHost": shape.chips_per_host,
                "tensorParallelSize": shape.tensor_parallel_size,
            }
            for shape in config.server_shapes
        },
    )
