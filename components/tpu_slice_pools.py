"""TpuSlicePools: one GKE node pool per TPU slice of a pool group, fields as the gcloud flags send them."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.config import StackConfig, TpuPoolConfig
from components.gke_cluster import CLOUD_PLATFORM_SCOPE, NODE_POOL_TIMEOUTS

RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"
# Autoscaled pools resize themselves. Labels and taints are not ignored: Kueue's flavors are built from the
# same config, and GKE reports its own taints (google.com/tpu) apart, in nodeConfig.effectiveTaints.
AUTOSCALED_FIELDS = ["initialNodeCount", "nodeCount"]


class TpuSlicePools(pulumi.ComponentResource):
    """All slices of one pool group; `node_pools` has one entry per slice, in slice order.

    Attributes are annotated in __init__, not on the class: the SDK evaluates class annotations of
    every resource, and naming `gcp.compute` there would import that whole (very large) module.
    """

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        pool: TpuPoolConfig,
        cluster: gcp.container.Cluster,
        node_service_account_email: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:TpuSlicePools", name, None, opts)
        self.future_reservation: gcp.compute.FutureReservation | None = self._future_reservation(name, config, pool)
        depends_on: list[pulumi.Resource] = [self.future_reservation] if self.future_reservation else []
        ignore = AUTOSCALED_FIELDS if pool.autoscaled else []
        self.node_pools: list[gcp.container.NodePool] = [
            gcp.container.NodePool(
                node_pool_name,
                name=node_pool_name,
                project=config.project,
                cluster=cluster.name,
                location=config.cluster_location,
                node_locations=[pool.zone] if pool.zone else None,
                initial_node_count=0 if pool.autoscaled else None,
                node_count=None if pool.autoscaled else pool.vms_per_slice,
                autoscaling=_autoscaling(pool),
                management=gcp.container.NodePoolManagementArgs(
                    auto_repair=pool.auto_repair, auto_upgrade=config.auto_upgrade(pool)
                ),
                # `type` is required by the provider schema, but GKE never reports it for TPU pools: an
                # empty string is left out of the API request (as gcloud does) and reads back equal.
                placement_policy=(
                    gcp.container.NodePoolPlacementPolicyArgs(type="", tpu_topology=pool.explicit_topology)
                    if pool.explicit_topology
                    else None
                ),
                queued_provisioning=(
                    gcp.container.NodePoolQueuedProvisioningArgs(enabled=True)
                    if pool.provisioning == "queued"
                    else None
                ),
                node_config=_node_config(config, pool, node_service_account_email),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=depends_on,
                    custom_timeouts=NODE_POOL_TIMEOUTS,
                    ignore_changes=ignore,
                ),
            )
            for node_pool_name in pool.node_pool_names
        ]
        self.register_outputs({"nodePools": [p.name for p in self.node_pools]})

    def _future_reservation(
        self, name: str, config: StackConfig, pool: TpuPoolConfig
    ) -> gcp.compute.FutureReservation | None:
        """The calendar-mode request, built as gcloud builds TPU requests: an aggregate reservation of chips.

        A submitted request cannot be modified, cancelled or deleted, so any change submits a new request
        (replace) and `pulumi destroy` only forgets it (retain_on_delete): Compute deletes the reservation it
        auto-created at the window's end.
        """
        window, calendar = pool.future_reservation, pool.calendar
        if window is None or calendar is None:
            return None
        return gcp.compute.FutureReservation(
            f"{name}-calendar",
            name=pool.reservation_name,
            reservation_name=pool.reservation_name,
            project=config.project,
            zone=pool.zone,
            reservation_mode="CALENDAR",
            planning_status="SUBMITTED",
            time_window=gcp.compute.FutureReservationTimeWindowArgs(
                start_time=window.start_time.isoformat().replace("+00:00", "Z"),
                end_time=window.end_time.isoformat().replace("+00:00", "Z"),
            ),
            aggregate_reservation=gcp.compute.FutureReservationAggregateReservationArgs(
                vm_family=calendar.vm_family,
                workload_type=window.workload_type,
                reserved_resources=[
                    gcp.compute.FutureReservationAggregateReservationReservedResourceArgs(
                        accelerator=gcp.compute.FutureReservationAggregateReservationReservedResourceAcceleratorArgs(
                            accelerator_count=pool.total_chips,
                            accelerator_type=(
                                f"projects/{config.project}/zones/{pool.zone}/acceleratorTypes/"
                                f"{calendar.accelerator_type}"
                            ),
                        )
                    )
                ],
            ),
            # Calendar mode requires auto-delete of the auto-created reservation at the window's end.
            auto_delete_auto_created_reservations=True,
            specific_reservation_required=True,
            opts=CALENDAR_REQUEST_OPTIONS.merge(pulumi.ResourceOptions(parent=self)),
        )


CALENDAR_REQUEST_OPTIONS = pulumi.ResourceOptions(retain_on_delete=True, replace_on_changes=["*"])
"""A submitted calendar request is immutable and cannot be deleted: replace it on change, never delete it."""


def _autoscaling(pool: TpuPoolConfig) -> gcp.container.NodePoolAutoscalingArgs | None:
    if pool.provisioning == "queued":
        # gcloud --enable-queued-provisioning --flex-start --total-max-nodes=N --location-policy=ANY
        return gcp.container.NodePoolAutoscalingArgs(total_max_node_count=pool.vms_per_slice, location_policy="ANY")
    if pool.autoscaled:
        # Flex-start, and calendar-mode pools that hold a slice only while their reservation is active.
        # gcloud --min-nodes/--max-nodes are per-zone bounds: a multi-host slice has exactly one zone (required),
        # a single-host pool without `zone` may hold one VM in each of the cluster's zones.
        return gcp.container.NodePoolAutoscalingArgs(min_node_count=0, max_node_count=pool.vms_per_slice)
    return None


def _node_config(
    config: StackConfig, pool: TpuPoolConfig, service_account: pulumi.Input[str]
) -> gcp.container.NodePoolNodeConfigArgs:
    affinity = pool.reservation_affinity
    seconds = pool.max_run_duration_seconds
    return gcp.container.NodePoolNodeConfigArgs(
        machine_type=pool.machine.name,
        service_account=service_account,
        oauth_scopes=[CLOUD_PLATFORM_SCOPE],
        workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
        flex_start=True if pool.flex_start else None,
        spot=True if pool.provisioning == "spot" else None,
        reservation_affinity=(
            gcp.container.NodePoolNodeConfigReservationAffinityArgs(
                consume_reservation_type=affinity[0],
                key=RESERVATION_NAME_KEY if affinity[1] else None,
                values=affinity[1] or None,
            )
            if affinity
            else None
        ),
        max_run_duration=f"{seconds}s" if seconds else None,
        labels=pool.labels or None,
        taints=[
            gcp.container.NodePoolNodeConfigTaintArgs(key=t.key, value=t.value, effect=t.effect) for t in pool.taints
        ]
        or None,
        resource_labels={**config.resource_labels, "tpu-pool": pool.name},
    )
