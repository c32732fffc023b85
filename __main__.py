"""tpu-stack: GKE cluster, TPU slice pools, batch scheduling and serving, one stack per environment.

Only wiring lives here; each component owns one responsibility and every derived value comes from the
validated config model (components/config.py).
"""

import pulumi

from components.config import flavor_labels, load_from_pulumi, queue_pools, queue_refs
from components.gke_cluster import GkeCluster
from components.jobset_install import JobSetInstall
from components.kueue_install import KueueInstall
from components.kueue_queues import KueueQueues
from components.tpu_slice_pools import TpuSlicePools

config = load_from_pulumi()

cluster = GkeCluster(config.cluster.name, config=config)
pools = {
    pool.name: TpuSlicePools(
        pool.name,
        config=config,
        pool=pool,
        cluster=cluster.cluster,
        node_service_account_email=cluster.node_service_account.email,
    )
    for pool in config.tpu_pools
}

# --- batch scheduling: JobSet, Kueue and the queues derived from the pools ---
jobset = JobSetInstall("jobset", config=config, provider=cluster.provider)
kueue = KueueInstall("kueue", config=config, provider=cluster.provider, depends_on=[jobset.chart])
queues = KueueQueues("queues", config=config, provider=cluster.provider, kueue_chart=kueue.chart)
pulumi.export(
    "queues",
    {
        team: {"namespace": ref.namespace, "localQueue": ref.local_queue, "clusterQueue": ref.cluster_queue}
        for team, ref in queue_refs(config).items()
    },
)
pulumi.export("flavors", {pool.name: flavor_labels(pool) for pool in queue_pools(config)})

# --- serving and identity: bucket, Workload Identity, Saxml ---

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
        for pool in config.tpu_pools
    },
)
