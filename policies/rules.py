"""The stack's CrossGuard policies, assembled from their domain modules in guardrails/ (gke, iam_storage,
kubernetes, kueue, capacity); each policy's check lives there.

`PolicyPack(...)` starts a gRPC server, so `__main__.py` only builds the pack from `POLICIES`; the offline
preview (offline/policy_check.py) and the tests run these same objects through the real `pulumi_policy` args.
"""

from __future__ import annotations

from guardrails.access import validate_multikueue_credentials, validate_network_policy_sources, validate_rbac
from guardrails.capacity import validate_idle_capacity
from guardrails.cluster import (
    validate_cluster_placement,
    validate_control_plane_exposure,
    validate_firewall_sources,
    validate_legacy_cluster_access,
    validate_legacy_metadata,
    validate_project_apis_stay_on,
)
from guardrails.gke import (
    ADOPTED_POOL_EXCEPTIONS_SCHEMA,
    REQUIRED_LABELS_SCHEMA,
    validate_auto_upgrade,
    validate_cluster_network,
    validate_flex_start,
    validate_labels,
    validate_node_service_account,
    validate_protected,
    validate_queued,
    validate_single_zone,
    validate_topology,
    validate_workload_identity,
)
from guardrails.iam_storage import (
    validate_bucket,
    validate_bucket_grants,
    validate_bucket_region,
    validate_least_privilege,
)
from guardrails.kubernetes import (
    IMAGE_DIGESTS_SCHEMA,
    SOURCE_RANGES_SCHEMA,
    validate_default_deny,
    validate_host_namespaces,
    validate_image_digests,
    validate_load_balancer,
    validate_pinned,
    validate_privileged,
    validate_webhooks_fail_closed,
)
from guardrails.kueue import (
    validate_ladder_cost_order,
    validate_ladders,
    validate_priority_classes,
    validate_queue_namespaces,
    validate_queued_flavors,
    validate_quota,
    validate_topologies,
)
from guardrails.monitoring import validate_alert_policies
from guardrails.props import PROTECTED_STACKS_SCHEMA
from guardrails.workload_policy import validate_workload_policies
from guardrails.workloads import validate_literal_secrets, validate_server_host_network
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


POLICIES: list[ResourceValidationPolicy | StackValidationPolicy] = [
    ResourceValidationPolicy(
        name="flex-start-pool-shape",
        description="Flex-start node pools scale 0..one slice with no reservation, no spot, no multi-host auto-repair.",
        validate=validate_flex_start,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="queued-pool-shape",
        description="Queued pools: flex-start, NO_RESERVATION, totalMaxNodeCount, location policy ANY, no auto-repair, "
        "no spot.",
        validate=validate_queued,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="tpu-topology-and-node-count",
        description="TPU topology is valid for the machine type and node counts equal the slice's VMs.",
        validate=validate_topology,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="multi-host-pool-single-zone",
        description="A multi-host TPU slice pool sits in exactly one zone.",
        validate=validate_single_zone,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="workload-identity",
        description="The cluster has a workload pool and every node pool serves the GKE metadata server.",
        validate=validate_workload_identity,
        config_schema=ADOPTED_POOL_EXCEPTIONS_SCHEMA,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-default-compute-service-account",
        description="Nodes run as a dedicated service account, not the Compute Engine default one.",
        validate=validate_node_service_account,
        config_schema=ADOPTED_POOL_EXCEPTIONS_SCHEMA,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="bucket-hardening",
        description="Buckets use uniform access, enforced public access prevention and versioning.",
        validate=validate_bucket,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="least-privilege-iam",
        description="No primitive roles anywhere and no project-level storage admin.",
        validate=validate_least_privilege,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-open-load-balancer",
        description="External LoadBalancer Services list source ranges, within the allowed ones.",
        validate=validate_load_balancer,
        enforcement_level=MANDATORY,
        config_schema=SOURCE_RANGES_SCHEMA,
    ),
    ResourceValidationPolicy(
        name="no-privileged-containers",
        description="No container runs privileged; TPU pods get their chips without it on GKE 1.28+.",
        validate=validate_privileged,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-host-namespaces",
        description="No hostPID, hostIPC or added capabilities; the host network only for TPU pods.",
        validate=validate_host_namespaces,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="cluster-network",
        description="Dataplane V2; in protected stacks private nodes and no control-plane IP endpoint.",
        validate=validate_cluster_network,
        enforcement_level=MANDATORY,
        config_schema=PROTECTED_STACKS_SCHEMA,
    ),
    StackValidationPolicy(
        name="default-deny-network-policy",
        description="Every namespace the stack creates has a default-deny NetworkPolicy.",
        validate=validate_default_deny,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="kueue-quota-within-chips",
        description="For every ResourceFlavor, Kueue's nominal TPU quota is at most the chips its node pools provide.",
        validate=validate_quota,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="kueue-topologies",
        description="Topology-aware flavors name a Topology the stack declares; kubernetes.io/hostname is only a "
        "Topology's lowest level.",
        validate=validate_topologies,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="kueue-ladder-order",
        description="Every ClusterQueue that lists a capacity ladder's flavors lists all of them, in ladder order, and "
        "tries the next rung before borrowing or preempting.",
        validate=validate_ladders,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="pinned-charts-and-images",
        description="Helm charts pin one exact version; container images pin a release tag (not latest, nightly or "
        "another moving tag) or a digest.",
        validate=validate_pinned,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="images-by-digest",
        description="In protected stacks every container image is pinned by @sha256 digest, or a reviewed exception.",
        validate=validate_image_digests,
        enforcement_level=MANDATORY,
        config_schema=IMAGE_DIGESTS_SCHEMA,
    ),
    ResourceValidationPolicy(
        name="protected-stack-resources",
        description="In protected stacks every resource is protected: nothing is deleted or replaced by accident.",
        validate=validate_protected,
        enforcement_level=MANDATORY,
        config_schema=PROTECTED_STACKS_SCHEMA,
    ),
    StackValidationPolicy(
        name="ironwood-workload-policy",
        description="Every multi-host TPU7x node pool names a HIGH_THROUGHPUT workload policy of the stack whose "
        "accelerator topology is the pool's slice, in VMs its node count, in its region and project.",
        validate=validate_workload_policies,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="tpu-node-auto-upgrade",
        description="TPU pools do not auto-upgrade, unless a release channel requires auto-upgrade on every pool.",
        validate=validate_auto_upgrade,
        enforcement_level=ADVISORY,
    ),
    StackValidationPolicy(
        name="bucket-in-tpu-region",
        description="The stack's buckets are in the region of its TPU pools: no data transfer between regions.",
        validate=validate_bucket_region,
        enforcement_level=ADVISORY,
    ),
    StackValidationPolicy(
        name="idle-tpu-capacity",
        description="No fixed on-demand or spot TPU slice is billed while no queue and no server can hold it.",
        validate=validate_idle_capacity,
        enforcement_level=ADVISORY,
    ),
    ResourceValidationPolicy(
        name="cluster-placement",
        description="Autopilot clusters are regional and on a release channel; a cluster's subnetwork is in its "
        "region.",
        validate=validate_cluster_placement,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="project-apis-stay-on",
        description="The stack's APIs are left on when it is destroyed (they serve the whole project).",
        validate=validate_project_apis_stay_on,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="control-plane-not-public",
        description="In every stack the control plane's IP endpoint is off or admits only listed client ranges.",
        validate=validate_control_plane_exposure,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-legacy-metadata-endpoints",
        description="Nodes keep the legacy metadata endpoints off (disable-legacy-endpoints true).",
        validate=validate_legacy_metadata,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="firewall-sources",
        description="No firewall rule lets traffic in to the nodes from anywhere.",
        validate=validate_firewall_sources,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-host-network-servers",
        description="Serving pods (Deployments, LeaderWorkerSets, StatefulSets, the serving components' JobSets) are "
        "never on the host network.",
        validate=validate_server_host_network,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-literal-secrets",
        description="No credential is written into a workload's environment or arguments, or into a ConfigMap.",
        validate=validate_literal_secrets,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="network-policy-sources",
        description="Ingress rules name their sources; only the controllers' webhook ports admit any.",
        validate=validate_network_policy_sources,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="rbac-least-privilege",
        description="No '*', escalate, bind or impersonate; the stack's own roles read no Secrets beyond a named "
        "one; MultiKueue roles within Kueue's dispatch rules; no bindings to cluster-admin, admin, edit, everyone or "
        "every service account.",
        validate=validate_rbac,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="multikueue-credentials",
        description="MultiKueue kubeconfigs live in kueue-system and name only the stack's worker clusters.",
        validate=validate_multikueue_credentials,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="alert-policies",
        description="Alert policies are enabled, with PromQL durations and intervals Cloud Monitoring accepts.",
        validate=validate_alert_policies,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="kueue-ladder-cost-order",
        description="Every capacity ladder tries capacity that bills while idle before capacity made on request.",
        validate=validate_ladder_cost_order,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="bucket-grants",
        description="Bucket grants are object roles only; a member that reads the whole bucket writes only where its "
        "IAM condition allows.",
        validate=validate_bucket_grants,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="webhooks-fail-closed",
        description="The controllers' admission webhooks fail closed, but for Kueue's webhooks of integrations left "
        "off.",
        validate=validate_webhooks_fail_closed,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="kueue-queue-namespaces",
        description="Team ClusterQueues select their own namespaces; each LocalQueue points at a ClusterQueue that "
        "selects its namespace.",
        validate=validate_queue_namespaces,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="queued-flavors-provision",
        description="A ClusterQueue that lists a queued-provisioning flavor runs a ProvisioningRequest admission "
        "check on it.",
        validate=validate_queued_flavors,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-global-default-priority",
        description="No PriorityClass of the stack is the cluster's global default.",
        validate=validate_priority_classes,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-legacy-cluster-access",
        description="Legacy ABAC off; the kubelet read-only port never turned on.",
        validate=validate_legacy_cluster_access,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="required-labels",
        description="Labelled GCP resources carry the required labels.",
        validate=validate_labels,
        enforcement_level=ADVISORY,
        config_schema=REQUIRED_LABELS_SCHEMA,
    ),
]
