"""Compute workload policies of multi-host TPU7x node pools: each pool names one the stack declares, of its slice's
topology and size, in its region."""

from __future__ import annotations

from pulumi_policy import PolicyResource, ReportViolation, StackValidationArgs

from components import tpu_catalog

from .gke import pool_machine, pool_max_nodes
from .props import NODE_POOL, prop

RESOURCE_POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
HIGH_THROUGHPUT = "HIGH_THROUGHPUT"
""""Ironwood (TPU7x) supports the High throughput workload policy" (cloud.google.com/kubernetes-engine/docs/concepts/
tpu-ironwood)."""


def _region(location: str) -> str:
    """A node pool's location is its cluster's: a region, or a zone of it."""
    parts = location.split("-")
    return "-".join(parts[:2]) if len(parts) == 3 else location


def validate_workload_policies(args: StackValidationArgs, report: ReportViolation) -> None:
    """A multi-host TPU7x pool is placed by a HIGH_THROUGHPUT workload policy (GKE's Ironwood page: the policy
    "replaces the --tpu-topology flag used by other TPU versions"), and its VMs must be the policy's accelerator
    topology in chips over the chips of one VM: the policy sets the gang size of the pool's managed instance group,
    and Compute refuses any other size ("Requested invalid target size '16' for a Managed Instance Group in the gang
    mode of size '8'. Should be equal to the gang size.", a tpu7x-128 pool created with a policy left over with 2x4x4,
    AI-Hypercomputer/xpk issues 751 and 752). So the pool names a policy the stack declares (a policy made elsewhere
    may hold another topology, which no preview can see), in the pool's project and region ("The resource policy must
    be in the same project and region as the node pool", pulumi-gcp 10.2.0 NodePoolPlacementPolicyArgs.policy_name),
    whose topology is the pool's slice and whose VMs are the pool's nodes."""
    resources = list(args.resources)
    policies: dict[str, PolicyResource] = {}
    for resource in resources:
        if resource.resource_type == RESOURCE_POLICY:
            policies[str(resource.props.get("name") or resource.name)] = resource
    for pool in (r for r in resources if r.resource_type == NODE_POOL):
        machine = pool_machine(pool.props)
        if machine is None or machine.version is not tpu_catalog.IRONWOOD:
            continue
        name = prop(pool.props, "placementPolicy.policyName")
        stated = str(prop(pool.props, "placementPolicy.tpuTopology") or "")
        if not name:
            topology = stated or machine.single_host_topology
            if machine.is_valid_topology(topology) and machine.vms(topology) > 1:
                report(
                    f"a multi-host TPU7x pool ({topology}) needs a workload policy: set placementPolicy.policyName to "
                    f"a HIGH_THROUGHPUT workload policy with acceleratorTopology {topology}",
                    pool.urn,
                )
            continue  # an invalid shape is the topology policy's; a single-host slice needs no workload policy
        policy = policies.get(str(name))
        if policy is None:
            report(
                f"placementPolicy.policyName {name!r} is not a workload policy of this stack, so its topology cannot "
                "be checked before GKE creates the pool; declare the policy in the stack",
                pool.urn,
            )
            continue
        kind = prop(policy.props, "workloadPolicy.type")
        accelerator = str(prop(policy.props, "workloadPolicy.acceleratorTopology") or "")
        # A pool may leave its topology to the policy, as gcloud's --placement-policy does.
        topology = stated or accelerator
        if kind != HIGH_THROUGHPUT or not accelerator:
            report(
                f"workload policy {name!r} is {kind or 'not a workload policy'}"
                f"{'' if accelerator else ' without an accelerator topology'}: TPU7x slices need type HIGH_THROUGHPUT "
                f"with acceleratorTopology {topology or 'of the slice'}",
                pool.urn,
            )
            continue
        if accelerator != topology or not machine.is_valid_topology(accelerator):
            report(
                f"workload policy {name!r} places {accelerator} slices but the pool is {topology}: a policy's topology "
                f"is its own, give the pool a policy of {topology}",
                pool.urn,
            )
            continue
        nodes, vms = pool_max_nodes(pool.props), machine.vms(accelerator)
        if nodes is not None and nodes != vms:
            report(
                f"the pool holds {nodes} VMs but workload policy {name!r} gangs {accelerator} = "
                f"{machine.chips(accelerator)} chips / {machine.chips_per_vm} per VM = {vms} VMs: GKE refuses any "
                f"other size; set the pool's node count to {vms}",
                pool.urn,
            )
        pool_region = _region(str(pool.props.get("location") or ""))
        for field, here, there in (
            ("region", pool_region, str(policy.props.get("region") or "")),
            ("project", str(pool.props.get("project") or ""), str(policy.props.get("project") or "")),
        ):
            if here and there and here != there:
                report(
                    f"workload policy {name!r} is in {field} {there} but the pool in {here}: GKE finds a policy only "
                    f"in the pool's own {field}",
                    pool.urn,
                )
