"""GkeCluster: the cluster, its CPU system pool, a least-privilege node identity, the in-cluster provider."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypeVar

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_gcp import compute, container, projects, serviceaccount

from components.config.cluster import SYSTEM_POOL_NAME, MaintenanceConfig, version_below_floor
from components.config.network import AddressPlan
from components.config.stack import StackConfig
from components.network_policies import JOBSET_API_SERVER_PORTS, KUEUE_API_SERVER_PORTS

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
SHIELDED: container.NodePoolNodeConfigShieldedInstanceConfigArgsDict = {
    "enable_secure_boot": True,
    "enable_integrity_monitoring": True,
}
# Never below the provider's defaults (pulumi-gcp 10.x bridges the Terraform provider: clusters 90 minutes,
# node pools 2 hours): a shorter timeout only makes a long create fail sooner and leaves it half-recorded.
CLUSTER_TIMEOUTS = pulumi.CustomTimeouts(create="90m", update="90m", delete="90m")
NODE_POOL_TIMEOUTS = pulumi.CustomTimeouts(create="120m", update="120m", delete="120m")

GKE_CONTROL_PLANE_PORTS = (443, 10250)
"""What GKE's own firewall rule lets the control plane reach on private nodes (HTTPS, kubelet)."""
CHART_API_SERVER_PORTS = (KUEUE_API_SERVER_PORTS, JOBSET_API_SERVER_PORTS)
"""Pod ports the API server calls in each installed chart (webhooks and APIServices with failurePolicy Fail);
a chart the stack adds puts its tuple here."""
WEBHOOK_PORTS = tuple(sorted({port for ports in CHART_API_SERVER_PORTS for port in ports} - {*GKE_CONTROL_PLANE_PORTS}))
"""What the stack's firewall rule opens from the control plane to the nodes: the charts' ports GKE does not."""


def kubeconfig(name: str, dns_endpoint: str) -> str:
    """A kubeconfig for the control plane's DNS endpoint, written as `gcloud container clusters get-credentials
    --dns-endpoint` writes it: no certificate-authority-data. A Google front end with a publicly trusted
    certificate answers there, so the system's roots verify it; the cluster CA signs only the IP endpoints and,
    named here, would be the only root and fail every handshake. gke-gcloud-auth-plugin authenticates, so no
    token is stored in state."""
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
                    "cluster": {"server": f"https://{dns_endpoint}"},
                }
            ],
            "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
        },
        sort_keys=False,
    )


T = TypeVar("T")


class GkeCluster(pulumi.ComponentResource):
    """Standard cluster (default pool removed, Workload Identity, system pool) or Autopilot.

    Attributes are annotated where assigned: the SDK evaluates a resource class's own annotations (for its outputs),
    which would load every SDK module they name on every run.
    """

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        network: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`network`: the stack's VPC (its name, an output of the network resource, so everything here waits for it)
        or an existing network's name."""
        super().__init__("tpu-stack:index:GkeCluster", name, None, opts)
        cluster_config = config.cluster
        child = pulumi.ResourceOptions(parent=self)
        plan = config.address_plan
        self.network: pulumi.Input[str] = network
        self.subnetwork: compute.Subnetwork | None = self._subnetwork(name, config) if config.owns_network else None

        self.node_service_account: serviceaccount.Account = serviceaccount.Account(
            f"{name}-nodes",
            account_id=cluster_config.node_service_account_id,
            display_name=f"GKE nodes of {cluster_config.name}",
            project=config.project,
            opts=child,
        )
        self.node_service_account_email: pulumi.Output[str] = self.node_service_account.email
        node_member = self.node_service_account_email.apply(lambda email: f"serviceAccount:{email}")
        self.node_roles: list[projects.IAMMember] = [
            projects.IAMMember(
                f"{name}-nodes-{role.split('/')[-1].replace('.', '-')}",
                project=config.project,
                role=role,
                member=node_member,
                opts=child,
            )
            for role in cluster_config.node_service_account_roles
        ]

        autopilot = cluster_config.mode == "autopilot"
        adopted = cluster_config.adopted
        plane = cluster_config.control_plane
        self.cluster: container.Cluster = container.Cluster(
            name,
            name=cluster_config.name,
            project=config.project,
            location=config.cluster_location,
            release_channel={"channel": cluster_config.release_channel},
            min_master_version=config.initial_master_version,
            deletion_protection=cluster_config.deletion_protection,
            network=network,
            subnetwork=self.subnetwork.name if self.subnetwork else cluster_config.subnetwork,
            ip_allocation_policy=_ip_allocation_policy(config, self.subnetwork is not None),
            resource_labels=config.resource_labels,
            maintenance_policy=_maintenance_policy(cluster_config.maintenance),
            # Dataplane V2: eBPF datapath that enforces the stack's NetworkPolicies.
            datapath_provider="ADVANCED_DATAPATH",
            enable_shielded_nodes=True,
            # Pods mount the stack's bucket through Cloud Storage FUSE (components/gcs_fuse.py).
            addons_config={"gcs_fuse_csi_driver_config": {"enabled": True}},
            # Managed collection runs the PodMonitorings of the Kueue and JobSet controllers
            # (on by default since GKE 1.27; stated, not assumed).
            monitoring_config={"managed_prometheus": {"enabled": True}},
            # Clients reach the control plane by its DNS endpoint; the IP endpoint only when asked for.
            control_plane_endpoints_config={
                "dns_endpoint_config": (
                    {"allow_external_traffic": True, "enable_k8s_tokens_via_dns": True}
                    if plane.kubernetes_tokens_via_dns
                    else {"allow_external_traffic": True}
                ),
                "ip_endpoints_config": {"enabled": config.ip_endpoint},
            },
            # The provider turns authorized networks on whenever this is sent, so it is sent only with the IP
            # endpoint on, and then always with networks (the config refuses an IP endpoint without any).
            master_authorized_networks_config=(
                {
                    "cidr_blocks": [{"cidr_block": c, "display_name": c} for c in plane.authorized_networks],
                    "gcp_public_cidrs_access_enabled": False,
                }
                if config.ip_endpoint
                else None
            ),
            private_cluster_config=_private_cluster_config(config),
            # Cloud DNS for GKE answers pods' queries on every node (no kube-dns Deployment to scale with the
            # cluster: xpk's large-scale guide moves off kube-dns past 1,000 VMs). Autopilot always uses it.
            dns_config=(
                None
                if autopilot
                else {"cluster_dns": "CLOUD_DNS", "cluster_dns_scope": "CLUSTER_SCOPE"}
                if cluster_config.dns == "cloud-dns"
                else {"cluster_dns": "KUBE_DNS"}
            ),
            # Autopilot provisions nodes itself, as the node service account.
            enable_autopilot=True if autopilot else None,
            cluster_autoscaling=(
                {
                    "auto_provisioning_defaults": {
                        "service_account": self.node_service_account_email,
                        "oauth_scopes": [CLOUD_PLATFORM_SCOPE],
                    }
                }
                if autopilot
                else None
            ),
            # An adopted cluster's default-pool stays where it exists (adopted.defaultPool): the provider deletes it on
            # the update that turns this on.
            remove_default_node_pool=None if autopilot or (adopted and adopted.default_pool) else True,
            initial_node_count=None if autopilot else 1,
            workload_identity_config=None if autopilot else {"workload_pool": config.workload_pool},
            # The default pool only lives until removal; it still must not run as the default compute SA.
            node_config=(
                None
                if autopilot
                else {
                    "service_account": self.node_service_account_email,
                    "oauth_scopes": [CLOUD_PLATFORM_SCOPE],
                    "workload_metadata_config": {"mode": "GKE_METADATA"},
                }
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=config.protected,
                custom_timeouts=CLUSTER_TIMEOUTS,
                ignore_changes=(None if autopilot else ["nodeConfig", "initialNodeCount"])
                if not adopted or not adopted.keep
                else [*([] if autopilot else ["nodeConfig", "initialNodeCount"]), *adopted.keep],
            ),
        )
        self.system_pool: container.NodePool | None = None if autopilot else self._system_pool(name, config)

        floor = cluster_config.min_master_version
        # Registered as an output, so a failed check fails the update (an unused apply would not).
        self.master_version: pulumi.Output[str] = self.cluster.master_version.apply(
            lambda version: check_version_floor(version, floor)
        )
        self.nat: compute.RouterNat | None = self._nat(name, config) if config.makes_nat else None
        self.webhook_firewall: compute.Firewall | None = (
            self._webhook_firewall(name, config, plan) if config.private_nodes else None
        )
        # Every client (this program's provider, CI, operators) uses the DNS endpoint: IAM decides who gets in,
        # from any network, whether or not the IP endpoint is on.
        self.dns_endpoint: pulumi.Output[str] = self._reported(self.cluster.control_plane_endpoints_config).apply(
            _dns_endpoint
        )
        self.kubeconfig: pulumi.Output[str] = pulumi.Output.secret(
            pulumi.Output.all(self.cluster.name, self.dns_endpoint).apply(lambda args: kubeconfig(args[0], args[1]))
        )
        # In-cluster objects need schedulable CPU nodes (controllers, webhooks) and, on private nodes, the
        # control plane's way to the webhooks; TPU pools are not waited for.
        # clusterIdentifier: the provider (and every object under it) is replaced only when it changes. The DNS
        # endpoint names one cluster for its whole life: CA rotation and the IP endpoint do not touch this
        # kubeconfig, a change to it (the auth plugin's settings, say) updates the provider in place, and a
        # replaced cluster (its endpoint unknown until it exists) replaces the provider and its objects.
        self.provider: k8s.Provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            cluster_identifier=self.dns_endpoint,
            enable_server_side_apply=True,
            # A ConfigMap whose data changes is otherwise replaced (pulumi-kubernetes diff.go), which a protected
            # stack refuses: the charts' controller configs (Kueue's is derived from the queues) update in place,
            # and the charts roll their controllers on a config checksum.
            enable_config_map_mutable=True,
            # Likewise a Secret whose data changes (MultiKueue's kubeconfigs when their token rotates) is updated in
            # place instead of replaced (diff.go forceNewProperties).
            enable_secret_mutable=True,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[r for r in [self.system_pool, self.webhook_firewall] if r]
            ),
        )
        self.register_outputs(
            {
                "name": self.cluster.name,
                "endpoint": self.cluster.endpoint,
                "masterVersion": self.master_version,
            }
        )

    def _reported(self, output: pulumi.Output[T]) -> pulumi.Output[T]:
        """A cluster output GKE completes (the DNS endpoint in control_plane_endpoints_config),
        read once GKE has reported the cluster: these outputs also carry the program's own inputs, known even before
        the cluster exists (a new stack's preview), and those name no endpoint. `endpoint` exists only in GKE's
        answer. (Output.all would hand the typed value on as a plain dict.)"""
        return self.cluster.endpoint.apply(lambda _: output)

    def _nat(self, name: str, config: StackConfig) -> compute.RouterNat:
        """Egress for private nodes (image pulls, pip, Google APIs): a Cloud Router with NAT in the region."""
        router = compute.Router(
            f"{name}-router",
            name=f"{config.cluster.name}-nat",
            project=config.project,
            region=config.region,
            network=self.network,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return compute.RouterNat(
            f"{name}-nat",
            name=f"{config.cluster.name}-nat",
            project=config.project,
            region=config.region,
            router=router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config={"enable": True, "filter": "ERRORS_ONLY"},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _subnetwork(self, name: str, config: StackConfig) -> compute.Subnetwork:
        """The cluster's subnetwork in the stack's VPC: the node range, and the pod and Service ranges as named
        secondary ranges the cluster uses (so they are declared and reviewed here, not picked by GKE)."""
        plan = config.address_plan
        cluster = config.cluster
        return compute.Subnetwork(
            f"{name}-nodes",
            name=cluster.subnetwork_name,
            project=config.project,
            region=config.region,
            network=self.network,
            ip_cidr_range=plan.nodes_range,
            secondary_ip_ranges=[
                {"range_name": pods_range_name(config), "ip_cidr_range": plan.pods_range},
                {"range_name": services_range_name(config), "ip_cidr_range": plan.services_range},
            ],
            # Private nodes reach Google APIs (images, Cloud Storage, the metadata server's tokens) on Google's network.
            private_ip_google_access=True,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _webhook_firewall(self, name: str, config: StackConfig, plan: AddressPlan) -> compute.Firewall:
        """The charts' webhooks and APIServices (failurePolicy Fail) listen on pod ports GKE's control-plane rule does
        not open (it opens 443 and 10250 from a peering range). Where the API server's calls come from depends on the
        cluster: through the konnectivity tunnel, from the konnectivity agents in the cluster (pods, or nodes if the
        agents run on the host network); from the control plane's /28 on a VPC-peering cluster that does not tunnel.
        GKE reports no address of a Private Service Connect control plane with its IP endpoints off, so the sources
        are the ranges the config holds, known before the cluster exists: the node and pod ranges and, when given,
        the peering range. Only the stack's nodes (its node service account) are opened, on those ports only."""
        sources = [plan.nodes_range, plan.pods_range] + [
            c for c in [config.cluster.control_plane.master_ipv4_cidr] if c is not None
        ]
        return compute.Firewall(
            f"{name}-cp-webhooks",
            name=config.cluster.webhook_firewall_name,
            project=config.project,
            network=self.network,
            description=f"GKE control plane of {config.cluster.name} to the webhooks on its nodes",
            direction="INGRESS",
            # A size alone (an existing cluster's GKE-picked pod range) names no addresses.
            source_ranges=[c for c in sources if not c.startswith("/")],
            # The nodes the charts' controllers run on: the system pool's account (an adopted one keeps its own).
            target_service_accounts=[_system_pool_account(config) or self.node_service_account_email],
            allows=[{"protocol": "tcp", "ports": [str(port) for port in WEBHOOK_PORTS]}],
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _system_pool(self, name: str, config: StackConfig) -> container.NodePool:
        pool = config.cluster.system_pool
        adopted = config.cluster.adopted.system_pool if config.cluster.adopted else None
        return container.NodePool(
            f"{name}-system",
            name=SYSTEM_POOL_NAME,
            project=config.project,
            cluster=self.cluster.name,
            location=config.cluster_location,
            # Per zone (GKE's meaning); min_nodes/max_nodes are totals over the pool's zones.
            initial_node_count=config.system_pool_initial_nodes_per_zone,
            max_pods_per_node=pool.max_pods_per_node,
            autoscaling={
                "total_min_node_count": pool.min_nodes,
                "total_max_node_count": pool.max_nodes,
                "location_policy": "BALANCED",
            },
            management={"auto_repair": True, "auto_upgrade": True},
            node_config={
                "machine_type": pool.machine_type,
                "disk_size_gb": pool.disk_size_gb,
                # An adopted system pool keeps its nodes' account and scopes (ForceNew in node_config.go).
                "service_account": (
                    adopted.service_account if adopted and adopted.service_account else self.node_service_account_email
                ),
                "oauth_scopes": list(adopted.oauth_scopes)
                if adopted and adopted.oauth_scopes
                else [CLOUD_PLATFORM_SCOPE],
                "workload_metadata_config": {"mode": "GKE_METADATA"},
                "shielded_instance_config": SHIELDED,
                "resource_labels": config.resource_labels,
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                custom_timeouts=NODE_POOL_TIMEOUTS,
                ignore_changes=["initialNodeCount", "nodeCount", *(adopted.keep if adopted else ())],
            ),
        )


def _system_pool_account(config: StackConfig) -> str | None:
    """An adopted system pool's own node service account (an email; GKE's `default` names none to target)."""
    adopted = config.cluster.adopted.system_pool if config.cluster.adopted else None
    account = adopted.service_account if adopted else None
    return account if account and "@" in account else None


def _dns_endpoint(endpoints: container.outputs.ClusterControlPlaneEndpointsConfig | None) -> str:
    """The control plane's DNS name (`gke-<id>.<region>.gke.goog`), which GKE always reports for a cluster."""
    dns = endpoints.dns_endpoint_config if endpoints else None
    endpoint = (dns.endpoint if dns else None) or ""
    if not endpoint:
        raise pulumi.RunError(
            "the cluster reports no DNS endpoint (controlPlaneEndpointsConfig.dnsEndpointConfig.endpoint); the "
            "kubeconfig and the kubernetes provider need it"
        )
    return endpoint


def pods_range_name(config: StackConfig) -> str:
    return f"{config.cluster.name}-pods"


def services_range_name(config: StackConfig) -> str:
    return f"{config.cluster.name}-services"


def _ip_allocation_policy(config: StackConfig, own_subnetwork: bool) -> container.ClusterIpAllocationPolicyArgsDict:
    """VPC-native ranges: the stack's subnetwork's named secondary ranges, or in an existing subnetwork the ranges
    (or sizes) GKE creates there. Every field is ForceNew in the provider: chosen once, when the cluster is made."""
    plan = config.address_plan
    if own_subnetwork:
        return {
            "cluster_secondary_range_name": pods_range_name(config),
            "services_secondary_range_name": services_range_name(config),
        }
    return {"cluster_ipv4_cidr_block": plan.pods_range, "services_ipv4_cidr_block": plan.services_range}


def _private_cluster_config(config: StackConfig) -> container.ClusterPrivateClusterConfigArgsDict | None:
    """Private nodes; with `controlPlane.masterIpv4Cidr`, the peering range GKE creates the control plane in."""
    master = config.cluster.control_plane.master_ipv4_cidr
    if not config.private_nodes:
        return None
    if master is None:
        return {"enable_private_nodes": True}
    return {"enable_private_nodes": True, "master_ipv4_cidr_block": master}


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


def _maintenance_policy(maintenance: MaintenanceConfig) -> container.ClusterMaintenancePolicyArgsDict | None:
    """When GKE may upgrade; None leaves GKE's default (any time). Exclusions need a window (config checks)."""
    if not maintenance.has_window:
        return None
    policy: container.ClusterMaintenancePolicyArgsDict = {}
    if maintenance.daily_start_time is not None:
        policy["daily_maintenance_window"] = {"start_time": maintenance.daily_start_time}
    window = maintenance.recurring_window
    if window is not None:
        policy["recurring_window"] = {
            "start_time": _rfc3339(window.start_time),
            "end_time": _rfc3339(window.end_time),
            "recurrence": window.recurrence,
        }
    if maintenance.exclusions:
        policy["maintenance_exclusions"] = [
            {
                "exclusion_name": exclusion.name,
                "start_time": _rfc3339(exclusion.start_time),
                "end_time": _rfc3339(exclusion.end_time),
                "exclusion_options": {"scope": exclusion.scope},
            }
            for exclusion in maintenance.exclusions
        ]
    return policy
