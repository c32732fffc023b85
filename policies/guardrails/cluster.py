"""GKE clusters and their VPC: where a cluster may run, who reaches its control plane's IP endpoint, the metadata
endpoints its nodes serve, and firewall rules to its nodes. Every stack, protected or not.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs
from pulumi_policy.proxy import UnknownValueError

from .props import CLUSTER, NODE_POOL, as_list, prop, say

FIREWALL = "gcp:compute/firewall:Firewall"
WIDEST_PREFIX = {4: 8, 6: 16}
"""Widest source range a rule to the nodes or the control plane may admit (the load-balancer policy's bound)."""
_ZONE = re.compile(r"^(?P<region>[a-z]+-[a-z]+\d+)-[a-z]$")
_SUBNETWORK_REGION = re.compile(r"(?:^|/)regions/(?P<region>[^/]+)/subnetworks/[^/]+$")
LEGACY_ENDPOINTS_KEY = "disable-legacy-endpoints"


def _region(location: str) -> str:
    """The region of a cluster location (a zone names its region)."""
    match = _ZONE.match(location)
    return match["region"] if match else location


def validate_cluster_placement(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """What GKE refuses when it creates the cluster: an Autopilot cluster in a zone (Autopilot clusters are regional:
    GKE's "Compare features in Autopilot and Standard clusters") or without a release channel ("Autopilot clusters can
    only be enrolled in a release channel": GKE's release channels page), and a subnetwork of another region than the
    cluster's (subnetworks are regional; a cluster's nodes use one of its own region)."""
    if args.resource_type != CLUSTER:
        return
    props = args.props
    location = str(props.get("location") or "")
    if prop(props, "enableAutopilot") is True:
        if _ZONE.match(location):
            say(report, f"Autopilot clusters are regional: set location to the region {_region(location)}, not a zone")
        if prop(props, "releaseChannel.channel") == "UNSPECIFIED":
            say(report, "Autopilot clusters are always on a release channel: set releaseChannel.channel to REGULAR")
    subnetwork = props.get("subnetwork")
    match = _SUBNETWORK_REGION.search(subnetwork) if isinstance(subnetwork, str) else None
    if match and location and match["region"] != _region(location):
        say(
            report,
            f"subnetwork {subnetwork} is in {match['region']} but the cluster is in {_region(location)}: use a "
            "subnetwork of the cluster's region",
        )


def _wide(cidr: str) -> bool:
    """A range that covers every address, or a large part of the internet; a malformed one counts as wide."""
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return True
    return network.prefixlen < WIDEST_PREFIX[network.version]


def validate_control_plane_exposure(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """The control plane's IP endpoint answers from the internet unless authorized networks limit it (GKE turns them
    on whenever masterAuthorizedNetworksConfig is sent); the stack leaves it off by default and, when asked for,
    admits only listed client ranges (docs/security.md). This holds in every stack: a dev cluster's API is as
    reachable as prod's."""
    if args.resource_type != CLUSTER:
        return
    props = args.props
    if prop(props, "controlPlaneEndpointsConfig.ipEndpointsConfig.enabled") is False:
        return
    if prop(props, "privateClusterConfig.enablePrivateEndpoint") is True:
        return  # only the private address answers
    networks = props.get("masterAuthorizedNetworksConfig")
    if not isinstance(networks, Mapping):
        say(
            report,
            "the control plane's IP endpoint is on with no authorized networks, so it answers every address: set "
            "controlPlaneEndpointsConfig.ipEndpointsConfig.enabled false (clients use the DNS endpoint) or list the "
            "clients in masterAuthorizedNetworksConfig.cidrBlocks",
        )
        return
    if networks.get("gcpPublicCidrsAccessEnabled") is True:
        say(
            report,
            "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled admits every Google Cloud public address to "
            "the IP endpoint: set it false",
        )
    for block in as_list(networks.get("cidrBlocks")):
        cidr = str(prop(block, "cidrBlock") or "")
        if _wide(cidr):
            say(
                report,
                f"authorized network {cidr} opens the control plane's IP endpoint to a large part of the internet: "
                f"list client ranges of /{WIDEST_PREFIX[4]} or narrower",
            )


def _metadata_problem(props: Mapping[str, Any], path: str) -> str | None:
    metadata = prop(props, path)
    if not isinstance(metadata, Mapping) or not metadata:
        return None  # GKE's default: legacy endpoints off since 1.12
    value = metadata.get(LEGACY_ENDPOINTS_KEY)
    if value is None:
        return (
            f"{path} leaves out {LEGACY_ENDPOINTS_KEY}: with other metadata set the provider removes GKE's default "
            f"'true', turning the legacy metadata endpoints on; add {LEGACY_ENDPOINTS_KEY}: 'true'"
        )
    if str(value).lower() != "true":
        return (
            f"{path}.{LEGACY_ENDPOINTS_KEY} is {value!r}: the legacy metadata endpoints (v0.1, v1beta1) answer any "
            "pod without the Metadata-Flavor header, the node's credentials included; set it 'true'"
        )
    return None


def validate_legacy_metadata(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Nodes serve only the v1 metadata API (GKE "Protecting cluster metadata"; pulumi-gcp 10.2.0 NodeConfig.metadata:
    from GKE 1.12 the API sets disable-legacy-endpoints true, and metadata set without it makes the provider unset
    it)."""
    if args.resource_type not in (NODE_POOL, CLUSTER):
        return
    problem = _metadata_problem(args.props, "nodeConfig.metadata")
    if problem:
        say(report, problem)


READONLY_PORT_PATHS = {
    NODE_POOL: ("nodeConfig.kubeletConfig",),
    CLUSTER: (
        "nodeConfig.kubeletConfig",
        "nodePoolDefaults.nodeConfigDefaults",
        "nodePoolAutoConfig.nodeKubeletConfig",
    ),
}
"""Where pulumi-gcp 10.2.0 sets `insecureKubeletReadonlyPortEnabled` (TRUE or FALSE) for a pool's nodes, the
cluster's default pool, new pools and auto-provisioned pools."""
READONLY_PORT = "insecureKubeletReadonlyPortEnabled"


def validate_legacy_cluster_access(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """No access around the cluster's authentication: legacy ABAC, with which "identities in the system, including
    service accounts, nodes, and controllers, will have statically granted permissions beyond those provided by the
    RBAC configuration or IAM" (pulumi-gcp 10.2.0 Cluster.enable_legacy_abac; GKE "Harden your cluster's security":
    leave legacy ABAC disabled), and the kubelet's read-only port (10255), which answers without authentication
    with every pod's spec on the node ("strongly recommended to set this to FALSE": pulumi-gcp 10.2.0, GKE "Disable
    the kubelet read-only port")."""
    if args.resource_type not in READONLY_PORT_PATHS:
        return
    props = args.props
    if args.resource_type == CLUSTER and props.get("enableLegacyAbac") is True:
        say(report, "enableLegacyAbac is true: RBAC and IAM no longer bound what accounts may do; set it false")
    for path in READONLY_PORT_PATHS[args.resource_type]:
        if str(prop(props, f"{path}.{READONLY_PORT}", "")).upper() == "TRUE":
            say(
                report,
                f"{path}.{READONLY_PORT} is TRUE: the kubelet's read-only port serves the node's pods without "
                "authentication; set it FALSE",
            )


def validate_firewall_sources(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A rule that allows traffic in to the nodes from every address (or a large part of the internet) bypasses
    every other control the stack puts in front of them; the stack's own rule admits only the control plane's range.
    Deny rules, egress rules and disabled rules open nothing."""
    if args.resource_type != FIREWALL:
        return
    props = args.props
    if str(props.get("direction") or "INGRESS") != "INGRESS" or props.get("disabled") is True:
        return
    if not as_list(props.get("allows")):
        return
    try:
        ranges = [str(r) for r in as_list(props.get("sourceRanges"))]
    except UnknownValueError:
        return  # computed from the cluster (its control plane's range): known, and checked, on `up`
    for cidr in ranges:
        if _wide(cidr):
            say(
                report,
                f"sourceRanges {cidr} lets traffic in to the nodes from a large part of the internet: admit only the "
                f"sources that need them (/{WIDEST_PREFIX[4]} or narrower, or sourceServiceAccounts)",
            )


PROJECT_SERVICE = "gcp:projects/service:Service"


def validate_project_apis_stay_on(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """The stack turns APIs on and never off: a project's APIs serve everything in it, not only this stack, so a
    `destroy` (or a replaced Service) that disabled one would break whatever else uses it (pulumi-gcp 10.2.0
    `projects.Service`: `disable_on_destroy` true disables the service on delete, `disable_dependent_services` true
    disables the services that depend on it too; unset, both leave them on)."""
    if args.resource_type != PROJECT_SERVICE:
        return
    for field in ("disableOnDestroy", "disableDependentServices"):
        if prop(args.props, field) is True:
            say(
                report,
                f"{field} is true, so deleting this resource turns {args.props.get('service')} off for the whole "
                "project: leave it unset or false",
            )
