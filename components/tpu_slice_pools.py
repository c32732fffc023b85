"""TpuSlicePools: one GKE node pool per TPU slice of a pool group, fields as the gcloud flags send them."""

from __future__ import annotations

import pulumi
from pulumi_gcp import compute, container

from components.config.pools import TOPOLOGY_MANAGER_POLICY, TOPOLOGY_MANAGER_SCOPE, TpuPoolConfig
from components.config.stack import StackConfig
from components.gke_cluster import CLOUD_PLATFORM_SCOPE, NODE_POOL_TIMEOUTS
from components.workload_policy import placement_policy, workload_policy

RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"
# Autoscaled pools resize themselves. Labels and taints are not ignored: Kueue's flavors are built from the
# same config, and GKE reports its own taints (google.com/tpu) apart, in nodeConfig.effectiveTaints.
AUTOSCALED_FIELDS = ["initialNodeCount", "nodeCount"]


class TpuSlicePools(pulumi.ComponentResource):
    """All slices of one pool group; `node_pools` has one entry per slice, in slice order."""

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        pool: TpuPoolConfig,
        cluster: container.Cluster,
        node_service_account_email: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:TpuSlicePools", name, None, opts)
        self.future_reservation: compute.FutureReservation | None = self._future_reservation(name, config, pool)
        depends_on: list[pulumi.Resource] = [self.future_reservation] if self.future_reservation else []
        self.workload_policy: compute.ResourcePolicy | None = workload_policy(
            name, config=config, pool=pool, parent=self
        )
        # An adopted pool group keeps the fields it lists as they exist (the state's values, from the import).
        ignore = [*(AUTOSCALED_FIELDS if pool.autoscaled else []), *(pool.adopted.keep if pool.adopted else ())]
        node_config = _node_config(config, pool, node_service_account_email)
        zones = config.node_locations(pool)
        self.node_pools: list[container.NodePool] = [
            container.NodePool(
                node_pool_name,
                name=node_pool_name,
                project=config.project,
                cluster=cluster.name,
                location=config.cluster_location,
                # Updated in place (terraform-provider-google v7.45.0 resource_container_node_pool.go: node_locations
                # Optional+Computed, sent with UpdateNodePool): GKE adds and removes the nodes of the zones.
                node_locations=list(zones) if zones else None,
                initial_node_count=0 if pool.autoscaled else None,
                # ForceNew in the provider: sizes each node's block of the pod range (components/config/network.py).
                max_pods_per_node=pool.max_pods_per_node,
                node_count=None if pool.autoscaled else pool.vms_per_slice,
                autoscaling=_autoscaling(pool, spread=pool.zone is None and zones is not None),
                management={"auto_repair": pool.auto_repair, "auto_upgrade": config.auto_upgrade(pool)},
                placement_policy=placement_policy(pool, self.workload_policy),
                queued_provisioning={"enabled": True} if pool.provisioning == "queued" else None,
                # Reservation-backed pools surge no node (config: upgrade_max_unavailable); updated in place
                # (upgrade_settings is not ForceNew), so deployed pools are not replaced.
                upgrade_settings=_upgrade_settings(pool),
                node_config=node_config,
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=depends_on,
                    custom_timeouts=NODE_POOL_TIMEOUTS,
                    ignore_changes=ignore or None,
                    # The provider updates no placement policy in place (placement_policy.tpu_topology is not
                    # ForceNew and the node pool update sends no topology): a new slice shape is a new pool. The
                    # engine creates first for a replaceOnChanges replacement; the pool's name is fixed, so delete
                    # first.
                    replace_on_changes=["placementPolicy.tpuTopology"],
                    delete_before_replace=True,
                ),
            )
            for node_pool_name in pool.node_pool_names
        ]
        self.register_outputs({"nodePools": [p.name for p in self.node_pools]})

    def _future_reservation(
        self, name: str, config: StackConfig, pool: TpuPoolConfig
    ) -> compute.FutureReservation | None:
        """The calendar-mode request, built as gcloud builds TPU requests: an aggregate reservation of chips.

        A submitted request cannot be modified, cancelled or deleted, so any change submits a new request under a
        new name (replace) and `pulumi destroy` only forgets it (retain_on_delete): Compute deletes the reservation
        it auto-created at the window's end. Protected in protected stacks like everything else: a new window
        there is an explicit step (unprotect the request and its pools), never a request submitted by an `up`
        that then fails on the protected pools.
        """
        window, calendar = pool.future_reservation, pool.calendar
        if window is None or calendar is None:
            return None
        accelerator_type = f"projects/{config.project}/zones/{pool.zone}/acceleratorTypes/{calendar.accelerator_type}"
        return compute.FutureReservation(
            f"{name}-calendar",
            name=pool.reservation_name,
            reservation_name=pool.reservation_name,
            project=config.project,
            zone=pool.zone,
            reservation_mode="CALENDAR",
            planning_status="SUBMITTED",
            time_window={
                "start_time": window.start_time.isoformat().replace("+00:00", "Z"),
                "end_time": window.end_time.isoformat().replace("+00:00", "Z"),
            },
            aggregate_reservation={
                "vm_family": calendar.vm_family,
                "workload_type": window.workload_type,
                "reserved_resources": [
                    {"accelerator": {"accelerator_count": pool.total_chips, "accelerator_type": accelerator_type}}
                ],
            },
            # Calendar mode requires auto-delete of the auto-created reservation at the window's end.
            auto_delete_auto_created_reservations=True,
            specific_reservation_required=True,
            opts=pulumi.ResourceOptions(
                parent=self,
                retain_on_delete=True,
                # The default name is a digest of the request: a changed request is a new name, which the provider
                # replaces (deleting first: here only forgetting). So the request's own fields never need diffing,
                # and ignoring them keeps Compute's read-back forms (of an imported request too) from showing as an
                # update Compute would refuse. A name given in config names one request: change it with the window.
                ignore_changes=CALENDAR_REQUEST_FIELDS if window.name is None or window.existing else None,
                # The import ID format of google_compute_future_reservation; an ID the state already holds
                # is no import (the engine imports only when the state has no resource with that ID).
                import_=(
                    f"projects/{config.project}/zones/{pool.zone}/futureReservations/{pool.reservation_name}"
                    if window.existing
                    else None
                ),
            ),
        )


CALENDAR_REQUEST_FIELDS = [
    "timeWindow",
    "aggregateReservation",
    "reservationMode",
    "planningStatus",
    "reservationName",
    "autoDeleteAutoCreatedReservations",
    "specificReservationRequired",
]
"""What a submitted calendar-mode request asks for; Compute refuses to modify any of it."""


def _autoscaling(pool: TpuPoolConfig, *, spread: bool) -> container.NodePoolAutoscalingArgsDict | None:
    """`spread`: the group names no zone and its pools are in the region's zones that offer its TPU."""
    if pool.provisioning == "queued" or (spread and pool.autoscaled):
        # A total bound: gcloud --total-max-nodes=N --location-policy=ANY, as GKE's pages create flex-start and queued
        # pools (docs.cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute-custom, flex-start:
        # --flex-start --enable-autoscaling --num-nodes=0 --total-max-nodes --location-policy=ANY
        # [--enable-queued-provisioning]).
        # --min-nodes/--max-nodes are per zone, --total-min-nodes/--total-max-nodes "across all zones" (GKE, "About
        # cluster autoscaling", autoscaling limits; provider: "Cannot be used with per zone limits"): over several zones
        # a per-zone maximum would let the autoscaler hold a slice in each, more than the Kueue quota counts. ANY takes
        # whichever of the zones has capacity. Updated in place (resource_container_node_pool.go v7.45.0 sends a changed
        # autoscaling block as the cluster update DesiredNodePoolAutoscaling).
        return {"total_max_node_count": pool.vms_per_slice, "location_policy": "ANY"}
    if pool.autoscaled:
        # Flex-start, calendar-mode pools that hold a slice only while their reservation is active, and on-demand or
        # spot groups that scale to zero; GKE scales a multi-host slice's pool atomically. In one zone (the group's,
        # or a zonal cluster's) the per-zone bounds are the pool's.
        scaling: container.NodePoolAutoscalingArgsDict = {"min_node_count": 0, "max_node_count": pool.vms_per_slice}
        if pool.flex_start:
            # As xpk creates flex-start pools (--location-policy=ANY, src/xpk/core/capacity.py at 367c8382): the
            # autoscaler takes whichever of the pool's zones has capacity. Updated in place (gcloud node-pools update
            # --location-policy), so deployed pools are not replaced.
            scaling["location_policy"] = "ANY"
        return scaling
    return None


def _upgrade_settings(pool: TpuPoolConfig) -> container.NodePoolUpgradeSettingsArgsDict | None:
    unavailable = pool.upgrade_max_unavailable
    if unavailable is None:
        return None
    # The strategy is sent with the counts: the provider refuses surge counts unless the strategy is SURGE.
    return {"strategy": "SURGE", "max_surge": 0, "max_unavailable": unavailable}


def _node_config(
    config: StackConfig, pool: TpuPoolConfig, service_account: pulumi.Input[str]
) -> container.NodePoolNodeConfigArgsDict:
    adopted = pool.adopted
    # An adopted pool keeps its nodes' account and scopes: the provider replaces a pool when either changes
    # (node_config.go: service_account and oauth_scopes are ForceNew).
    node_config: container.NodePoolNodeConfigArgsDict = {
        "machine_type": pool.machine.name,
        "service_account": (adopted.service_account if adopted and adopted.service_account else service_account),
        "oauth_scopes": list(adopted.oauth_scopes) if adopted and adopted.oauth_scopes else [CLOUD_PLATFORM_SCOPE],
        "workload_metadata_config": {"mode": "GKE_METADATA"},
        "resource_labels": {**config.resource_labels, "tpu-pool": pool.name},
    }
    if pool.flex_start:
        node_config["flex_start"] = True
    if pool.provisioning == "spot":
        node_config["spot"] = True
    affinity = pool.reservation_affinity
    if affinity:
        reservation: container.NodePoolNodeConfigReservationAffinityArgsDict = {"consume_reservation_type": affinity[0]}
        if affinity[1]:
            reservation["key"] = RESERVATION_NAME_KEY
            reservation["values"] = list(affinity[1])
        node_config["reservation_affinity"] = reservation
    seconds = pool.max_run_duration_seconds
    if seconds:
        node_config["max_run_duration"] = f"{seconds}s"
    if pool.numa_aligned:
        # Updated in place (terraform-provider-google-beta v7.45.0 node_config.go: kubelet_config not ForceNew, sent
        # with UpdateNodePool); GKE applies a new kubelet config to the pool's nodes.
        node_config["kubelet_config"] = {
            "topology_manager": {"policy": TOPOLOGY_MANAGER_POLICY, "scope": TOPOLOGY_MANAGER_SCOPE}
        }
    if pool.labels:
        node_config["labels"] = pool.labels
    if pool.taints:
        node_config["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints]
    return node_config
