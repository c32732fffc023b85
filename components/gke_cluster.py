"""GkeCluster: the cluster, its CPU system pool, a least-privilege node identity, the in-cluster provider."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import yaml

from components.config import SYSTEM_POOL_NAME, MaintenanceConfig, StackConfig, version_below_floor

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
SHIELDED = gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
    enable_secure_boot=True, enable_integrity_monitoring=True
)
# Never below the provider's defaults (pulumi-gcp 10.x bridges the Terraform provider: clusters 90 minutes,
# node pools 2 hours): a shorter timeout only makes a long create fail sooner and leaves it half-recorded.
CLUSTER_TIMEOUTS = pulumi.CustomTimeouts(create="90m", update="90m", delete="90m")
NODE_POOL_TIMEOUTS = pulumi.CustomTimeouts(create="120m", update="120m", delete="120m")


def kubeconfig(name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig that authenticates with gke-gcloud-auth-plugin, so no token is stored in state."""
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "gke-gcloud-auth-plugin",
            "provideClusterInfo": True,
            "installHint": "gcloud components install gke-gcloud-auth-plugin",
        }
    }
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": name,
                    "cluster": {
                        "server": f"https://{endpoint}",
                        "certificate-authority-data": ca_certificate,
                    },
                }
            ],
            "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
        },
        sort_keys=False,
    )


class GkeCluster(pulumi.ComponentResource):
    """Standard cluster (default pool removed, Workload Identity, system pool) or Autopilot.

    Attributes are annotated where assigned: class annotations of resources are evaluated by the SDK.
    """

    def __init__(self, name: str, *, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-stack:index:GkeCluster", name, None, opts)
        cluster_config = config.cluster
        child = pulumi.ResourceOptions(parent=self)

        self.node_service_account: gcp.serviceaccount.Account = gcp.serviceaccount.Account(
            f"{name}-nodes",
            account_id=cluster_config.node_service_account_id,
            display_name=f"GKE nodes of {cluster_config.name}",
            project=config.project,
            opts=child,
        )
        node_member = self.node_service_account.email.apply(lambda email: f"serviceAccount:{email}")
        self.node_roles = [
            gcp.projects.IAMMember(
                f"{name}-nodes-{role.split('/')[-1].replace('.', '-')}",
                project=config.project,
                role=role,
                member=node_member,
                opts=child,
            )
            for role in cluster_config.node_service_account_roles
        ]

        protect = config.is_prod
        common: dict[str, Any] = {
            "name": cluster_config.name,
            "project": config.project,
            "location": config.cluster_location,
            "release_channel": gcp.container.ClusterReleaseChannelArgs(channel=cluster_config.release_channel),
            "min_master_version": config.initial_master_version,
            "deletion_protection": cluster_config.deletion_protection,
            "network": cluster_config.network,
            "subnetwork": cluster_config.subnetwork,
            "resource_labels": config.resource_labels,
            "maintenance_policy": _maintenance_policy(cluster_config.maintenance),
            # Dataplane V2: eBPF datapath that enforces the stack's NetworkPolicies.
            "datapath_provider": "ADVANCED_DATAPATH",
            "enable_shielded_nodes": True,
            # Pods mount the stack's bucket through Cloud Storage FUSE (components/gcs_fuse.py).
            "addons_config": gcp.container.ClusterAddonsConfigArgs(
                gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(enabled=True)
            ),
            # Managed collection runs the PodMonitorings of the Kueue and JobSet controllers
            # (on by default since GKE 1.27; stated, not assumed).
            "monitoring_config": gcp.container.ClusterMonitoringConfigArgs(
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True)
            ),
            **_access(config),
        }
        if cluster_config.mode == "autopilot":
            self.cluster: gcp.container.Cluster = gcp.container.Cluster(
                name,
                enable_autopilot=True,
                cluster_autoscaling=gcp.container.ClusterClusterAutoscalingArgs(
                    auto_provisioning_defaults=gcp.container.ClusterClusterAutoscalingAutoProvisioningDefaultsArgs(
                        service_account=self.node_service_account.email, oauth_scopes=[CLOUD_PLATFORM_SCOPE]
                    )
                ),
                opts=pulumi.ResourceOptions(parent=self, protect=protect, custom_timeouts=CLUSTER_TIMEOUTS),
                **common,
            )
            self.system_pool: gcp.container.NodePool | None = None
        else:
            self.cluster = gcp.container.Cluster(
                name,
                remove_default_node_pool=True,
                initial_node_count=1,
                workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                    workload_pool=config.workload_pool
                ),
                # The default pool only lives until removal; it still must not run as the default compute SA.
                node_config=gcp.container.ClusterNodeConfigArgs(
                    service_account=self.node_service_account.email,
                    oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                    workload_metadata_config=gcp.container.ClusterNodeConfigWorkloadMetadataConfigArgs(
                        mode="GKE_METADATA"
                    ),
                ),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    protect=protect,
                    custom_timeouts=CLUSTER_TIMEOUTS,
                    ignore_changes=["nodeConfig", "initialNodeCount"],
                ),
                **common,
            )
            self.system_pool = self._system_pool(name, config)

        floor = cluster_config.min_master_version
        # Registered as an output, so a failed check fails the update (an unused apply would not).
        self.master_version: pulumi.Output[str] = self.cluster.master_version.apply(
            lambda version: check_version_floor(version, floor)
        )
        self.nat: gcp.compute.RouterNat | None = self._nat(name, config) if config.private_nodes else None
        # Without the IP endpoint, clients (CI, operators, this program's provider) use the DNS endpoint.
        endpoint = (
            self.cluster.endpoint
            if config.ip_endpoint
            else self.cluster.control_plane_endpoints_config.apply(_dns_endpoint)
        )
        self.kubeconfig: pulumi.Output[str] = pulumi.Output.secret(
            pulumi.Output.all(
                self.cluster.name,
                endpoint,
                self.cluster.master_auth.apply(lambda auth: auth.cluster_ca_certificate),
            ).apply(lambda args: kubeconfig(args[0], args[1], args[2]))
        )
        # In-cluster objects need schedulable CPU nodes (controllers, webhooks); TPU pools are not waited for.
        self.provider: k8s.Provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[p for p in [self.system_pool] if p]),
        )
        self.register_outputs(
            {"name": self.cluster.name, "endpoint": self.cluster.endpoint, "masterVersion": self.master_version}
        )

    def _nat(self, name: str, config: StackConfig) -> gcp.compute.RouterNat:
        """Egress for private nodes (image pulls, pip, Google APIs): a Cloud Router with NAT in the region."""
        network = config.cluster.network or "default"
        router = gcp.compute.Router(
            f"{name}-router",
            name=f"{config.cluster.name}-nat",
            project=config.project,
            region=config.region,
            network=network,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return gcp.compute.RouterNat(
            f"{name}-nat",
            name=f"{config.cluster.name}-nat",
            project=config.project,
            region=config.region,
            router=router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _system_pool(self, name: str, config: StackConfig) -> gcp.container.NodePool:
        pool = config.cluster.system_pool
        return gcp.container.NodePool(
            f"{name}-system",
            name=SYSTEM_POOL_NAME,
            project=config.project,
            cluster=self.cluster.name,
            location=config.cluster_location,
            # Per zone (GKE's meaning); minNodes/maxNodes are totals over the pool's zones.
            initial_node_count=config.system_pool_initial_nodes_per_zone,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                total_min_node_count=pool.min_nodes,
                total_max_node_count=pool.max_nodes,
                location_policy="BALANCED",
            ),
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            node_config=gcp.container.NodePoolNodeConfigArgs(
                machine_type=pool.machine_type,
                disk_size_gb=pool.disk_size_gb,
                service_account=self.node_service_account.email,
                oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA"
                ),
                shielded_instance_config=SHIELDED,
                resource_labels=config.resource_labels,
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                custom_timeouts=NODE_POOL_TIMEOUTS,
                ignore_changes=["initialNodeCount", "nodeCount"],
            ),
        )


def _access(config: StackConfig) -> dict[str, Any]:
    """Cluster arguments for private nodes and control-plane access (config.private_nodes, config.ip_endpoint)."""
    plane = config.cluster.control_plane
    args: dict[str, Any] = {
        "control_plane_endpoints_config": gcp.container.ClusterControlPlaneEndpointsConfigArgs(
            dns_endpoint_config=gcp.container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                allow_external_traffic=True
            ),
            ip_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigIpEndpointsConfigArgs(
                enabled=config.ip_endpoint
            ),
        ),
    }
    if config.ip_endpoint:
        args["master_authorized_networks_config"] = gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
            cidr_blocks=[
                gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(cidr_block=c, display_name=c)
                for c in plane.authorized_networks
            ],
            gcp_public_cidrs_access_enabled=False,
        )
    if config.private_nodes:
        args["private_cluster_config"] = gcp.container.ClusterPrivateClusterConfigArgs(enable_private_nodes=True)
    return args


def _dns_endpoint(endpoints: Any) -> str:
    """The control plane's DNS name (`gke-<id>.<region>.gke.goog`); empty until the cluster exists."""
    dns = getattr(endpoints, "dns_endpoint_config", None) if endpoints else None
    return str(getattr(dns, "endpoint", "") or "")


def check_version_floor(version: str, floor: str) -> str:
    """The cluster's version, if not below tpu-stack's floor (on a release channel GKE chooses the version)."""
    if version and version_below_floor(version, floor):
        raise pulumi.RunError(
            f"tpu-stack:cluster.minMasterVersion: the release channel gave the cluster {version}, below the floor "
            f"{floor}; choose a channel that offers {floor} or newer (cluster.releaseChannel)"
        )
    return version


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _maintenance_policy(maintenance: MaintenanceConfig) -> gcp.container.ClusterMaintenancePolicyArgs | None:
    """When GKE may upgrade; None leaves GKE's default (any time). Exclusions need a window (config checks)."""
    if not maintenance.has_window:
        return None
    window = maintenance.recurring_window
    return gcp.container.ClusterMaintenancePolicyArgs(
        daily_maintenance_window=(
            gcp.container.ClusterMaintenancePolicyDailyMaintenanceWindowArgs(start_time=maintenance.daily_start_time)
            if maintenance.daily_start_time is not None
            else None
        ),
        recurring_window=(
            gcp.container.ClusterMaintenancePolicyRecurringWindowArgs(
                start_time=_rfc3339(window.start_time), end_time=_rfc3339(window.end_time), recurrence=window.recurrence
            )
            if window is not None
            else None
        ),
        maintenance_exclusions=[
            gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                exclusion_name=exclusion.name,
                start_time=_rfc3339(exclusion.start_time),
                end_time=_rfc3339(exclusion.end_time),
                exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                    scope=exclusion.scope
                ),
            )
            for exclusion in maintenance.exclusions
        ]
        or None,
    )
