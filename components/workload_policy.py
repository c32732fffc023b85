"""The Compute workload policy of a multi-host TPU7x pool group, and the node pools' placement policy that names it.

GKE places the VMs of a multi-host Ironwood (TPU7x) node pool with a HIGH_THROUGHPUT workload policy whose accelerator
topology is the slice's ("Workload policy for multi-host node pools",
https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood; `gcloud compute resource-policies create
workload-policy NAME --type=HIGH_THROUGHPUT --accelerator-topology=AxBxC`, then `node-pools create
--placement-policy=NAME`, https://cloud.google.com/kubernetes-engine/docs/how-to/create-dynamic-slices). The policy is
regional: "The resource policy must be in the same project and region as the node pool" (pulumi-gcp 10.2.0
`NodePoolPlacementPolicyArgs.policy_name`). One policy serves every slice of its pool group ("A workload policy is
unique per project, per region, and per topology. You can reuse the same workload policy for multiple node pools",
same page).
"""

from __future__ import annotations

import pulumi
from pulumi_gcp import compute, container

from components.config.pools import WORKLOAD_POLICY_TYPE, TpuPoolConfig, workload_policy_name
from components.config.stack import StackConfig


def workload_policy(
    name: str, *, config: StackConfig, pool: TpuPoolConfig, parent: pulumi.Resource
) -> compute.ResourcePolicy | None:
    """The pool group's workload policy, or None where it needs none (not TPU7x, or single-host).

    Compute updates no workload policy ("You cannot update a workload policy after you create it", Compute Engine's
    workload policy docs), and terraform-provider-google-beta v7.45.0 plans a new name as a PATCH of the new name
    (google-beta/services/compute/resource_compute_resource_policy.go: `name` is not ForceNew): so any change replaces
    it (replaceOnChanges `*`). Every field of `workloadPolicy` is ForceNew in that provider, and the topology is in the
    name: a new slice shape is a new policy, and the node pools, whose placementPolicy.policyName is ForceNew, are
    replaced with it. Deleting first never meets a policy of the same name still there; the engine deletes the node
    pools that use the old policy before it (they depend on it), and `pulumi destroy` deletes both, pools first (the
    policy is not retained: xpk leaves its policies behind, AI-Hypercomputer/xpk issue 752)."""
    topology = pool.workload_policy_topology
    if topology is None:
        return None
    policy_name = workload_policy_name(config.cluster.name, pool)
    return compute.ResourcePolicy(
        f"{name}-workload-policy",
        name=policy_name,
        project=config.project,
        region=config.region,
        description=f"TPU7x {topology} slices of pool group {pool.name} in GKE cluster {config.cluster.name}",
        workload_policy={"type": WORKLOAD_POLICY_TYPE, "accelerator_topology": topology},
        opts=pulumi.ResourceOptions(parent=parent, replace_on_changes=["*"], delete_before_replace=True),
    )


def placement_policy(
    pool: TpuPoolConfig, policy: compute.ResourcePolicy | None
) -> container.NodePoolPlacementPolicyArgsDict | None:
    """The node pool's placementPolicy: the slice topology and, for TPU7x, the workload policy that places it.

    `type` is required by the provider schema but GKE never reports it for TPU pools (facts.md §6): an empty string is
    left out of the request, as gcloud does. With a workload policy the pool still sends its topology, as Cluster
    Toolkit does (GoogleCloudPlatform/cluster-toolkit v1.95.0 modules/compute/resource-policy/outputs.tf
    `tpu_topology = var.workload_policy.accelerator_topology`, passed by modules/compute/gke-node-pool/main.tf): GKE
    reports it back, and tpu_topology is Optional without Computed in the provider, so leaving it out would show a diff
    on every preview."""
    if not pool.explicit_topology:
        return None
    if policy is None:
        return {"type": "", "tpu_topology": pool.explicit_topology}
    return {"type": "", "tpu_topology": pool.explicit_topology, "policy_name": policy.name}
