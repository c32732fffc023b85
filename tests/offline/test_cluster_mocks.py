"""The mock engine reports of a cluster what GKE reports, per configuration, and nothing it does not (issue 27).

Expectations written by hand from the sources: the GKE API reference (IPEndpointsConfig.privateEndpoint and
publicEndpoint: "Output only ... Only populated if enabled"; PrivateClusterConfig.masterIpv4CidrBlock, peeringName)
and terraform-provider-google's flatteners, which build the state pulumi-gcp returns
(google/services/container/resource_container_cluster.go at e03b762: flattenControlPlaneEndpointsConfig reports the
DNS endpoint's four fields and the IP endpoints' `enabled` only; flattenPrivateClusterConfig sets
enable_private_endpoint = !enablePublicEndpoint, private_endpoint and public_endpoint from the IP endpoints,
peering_name and master_ipv4_cidr_block from PrivateClusterConfig, enable_private_nodes from
networkConfig.defaultEnablePrivateNodes).
"""

from __future__ import annotations

from typing import Any

import pytest

from offline.engine import PUBLIC_ENDPOINT, _computed_outputs, cluster_outputs
from tests.fixtures import stack_plan


def _cluster(ip: bool, *, master: str | None = None, private: bool = True, **extra: Any) -> dict[str, Any]:
    private_config: dict[str, Any] = {"enablePrivateNodes": True} if private else {}
    if master:
        private_config["masterIpv4CidrBlock"] = master
    return {
        "name": "c",
        "project": "p-123456",
        "location": "us-central1",
        "subnetwork": "c-nodes",
        "controlPlaneEndpointsConfig": {
            "dnsEndpointConfig": {"allowExternalTraffic": True},
            "ipEndpointsConfig": {"enabled": ip},
        },
        **({"privateClusterConfig": private_config} if private_config else {}),
        **extra,
    }


SUBNET = {"urn:subnet": {"name": "c-nodes", "ipCidrRange": "10.48.0.0/24"}}


def test_ip_endpoints_off_and_no_master_range_report_no_private_address() -> None:
    """Private Service Connect with the IP endpoints off (prod's default): neither a private endpoint nor a master
    range, the DNS name as `endpoint`."""
    out = cluster_outputs("p-123456", "c", _cluster(False), SUBNET)
    assert out["privateClusterConfig"] == {
        "enablePrivateEndpoint": True,
        "privateEndpoint": "",
        "privateEndpointSubnetwork": "",
        "publicEndpoint": "",
        "masterGlobalAccessConfig": {"enabled": False},
        "peeringName": "",
        "masterIpv4CidrBlock": "",
        "enablePrivateNodes": True,
    }
    assert out["endpoint"] == out["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]["endpoint"]
    assert out["controlPlaneEndpointsConfig"]["ipEndpointsConfig"] == {"enabled": False}


def test_ip_endpoints_on_report_both_addresses_the_private_one_in_the_node_subnetwork() -> None:
    out = cluster_outputs("p-123456", "c", _cluster(True), SUBNET)
    private = out["privateClusterConfig"]
    assert (private["enablePrivateEndpoint"], private["publicEndpoint"]) == (False, PUBLIC_ENDPOINT)
    assert private["privateEndpoint"] == "10.48.0.2"  # in the node range: GKE picks it; the mock its second address
    assert (private["peeringName"], private["masterIpv4CidrBlock"]) == ("", "")
    assert out["endpoint"] == PUBLIC_ENDPOINT


def test_ip_endpoints_on_in_an_unknown_subnetwork_name_no_address() -> None:
    """The mock cannot know an existing subnetwork's range: it reports no address rather than invent one."""
    assert cluster_outputs("p-123456", "c", _cluster(True), {})["privateClusterConfig"]["privateEndpoint"] == ""


def test_a_peering_cluster_reports_its_range_and_peering_and_an_endpoint_only_when_enabled() -> None:
    on = cluster_outputs("p-123456", "c", _cluster(True, master="172.16.0.32/28"), SUBNET)["privateClusterConfig"]
    assert on["masterIpv4CidrBlock"] == "172.16.0.32/28"
    assert on["privateEndpoint"] == "172.16.0.34"
    assert on["peeringName"].startswith("gke-n") and on["peeringName"].endswith("-peer")
    off = cluster_outputs("p-123456", "c", _cluster(False, master="172.16.0.32/28"), SUBNET)["privateClusterConfig"]
    assert (off["masterIpv4CidrBlock"], off["privateEndpoint"], off["publicEndpoint"]) == ("172.16.0.32/28", "", "")


def test_public_nodes_report_private_nodes_false() -> None:
    out = cluster_outputs("p-123456", "c", _cluster(False, private=False), SUBNET)
    assert out["privateClusterConfig"]["enablePrivateNodes"] is False


def test_autopilot_reports_the_same_fields() -> None:
    out = cluster_outputs("p-123456", "c", _cluster(False, enableAutopilot=True), SUBNET)
    assert out["privateClusterConfig"]["privateEndpoint"] == ""
    assert out["endpoint"].endswith(".us-central1.gke.goog")


def test_the_dns_endpoint_fields_are_the_flatteners_four() -> None:
    sent = _cluster(False)
    sent["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]["enableK8sTokensViaDns"] = True
    dns = cluster_outputs("p-123456", "c", sent, {})["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]
    assert set(dns) == {"endpoint", "allowExternalTraffic", "enableK8sTokensViaDns", "enableK8sCertsViaDns"}
    assert (dns["allowExternalTraffic"], dns["enableK8sTokensViaDns"], dns["enableK8sCertsViaDns"]) == (
        True,
        True,
        False,
    )
    assert dns["endpoint"].startswith("gke-") and dns["endpoint"].endswith(".us-central1.gke.goog")
    assert len(dns["endpoint"].split(".")[0]) == len("gke-") + 36


@pytest.mark.parametrize(
    ("pinned", "reported"),
    [
        ("1.33", "1.33.5-gke.1308000"),
        ("1.33.2-gke.1111000", "1.33.2-gke.1111000"),
        # Found by tests/properties: a cluster with no channel created at minor 1.34 reported the Regular channel's
        # 1.33 patch, and the program's floor check failed a valid stack.
        ("1.34", "1.34.0-gke.2201000"),
        ("1.35", "1.35.2-gke.1842000"),
    ],
)
def test_the_version_is_the_channels_or_the_full_one_pinned(pinned: str, reported: str) -> None:
    assert cluster_outputs("p-123456", "c", _cluster(False, minMasterVersion=pinned), {})["masterVersion"] == reported


@pytest.mark.parametrize(
    ("channel", "reported"),
    [("RAPID", "1.35.2-gke.1842000"), ("REGULAR", "1.34.3-gke.1318000"), ("STABLE", "1.33.5-gke.1308000")],
)
def test_each_channel_reports_a_version_it_has_carried(channel: str, reported: str) -> None:
    """REGULAR: 1.34.3-gke.1318000 was its "Default patch version for cluster creation" (GKE release notes,
    https://cloud.google.com/kubernetes-engine/docs/release-notes, current versions table), the version Cluster
    Toolkit's TPU7x example asks for."""
    cluster = _cluster(False, releaseChannel={"channel": channel}, minMasterVersion="1.33")
    assert cluster_outputs("p-123456", "c", cluster, {})["masterVersion"] == reported


def test_types_without_computed_outputs_get_none_invented() -> None:
    """A project service or an IAM grant has no `name` of its own: the mock adds nothing to its inputs."""
    assert (
        _computed_outputs("gcp:projects/service:Service", "apis-compute", {"service": "compute.googleapis.com"}) == {}
    )
    assert _computed_outputs("gcp:projects/iAMMember:IAMMember", "m", {"role": "roles/x"}) == {}


def test_the_recorded_prod_cluster_reports_no_private_endpoint() -> None:
    """In the program's own run, prod (IP endpoints off, no master range) reads no private address of its cluster;
    the stack still previews (the webhook rule's sources are its config's ranges)."""
    plan = stack_plan("prod", render_charts=False)
    assert plan.outputs["clusterEndpoint"].endswith(".us-west4.gke.goog")
