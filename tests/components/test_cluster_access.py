"""Who reaches the control plane, and how the control plane reaches the nodes (issue 17, defects 1, 2, 4 and 6).

Every expectation here is a platform fact, written by hand:
- the DNS endpoint (`gke-<id>.<region>.gke.goog`) is served by a Google front end with a publicly trusted
  certificate: a kubeconfig for it carries no certificate-authority-data (gcloud's kubeconfig.Cluster leaves it
  out for `--dns-endpoint`); the cluster CA signs only the IP endpoints;
- terraform-provider-google turns authorized networks on whenever masterAuthorizedNetworksConfig is sent;
- on private nodes GKE's own firewall rule admits the control plane on tcp 443 and 10250 only, while Kueue's
  webhook (9443) and visibility APIService (8082) and JobSet's webhook (9443) use failurePolicy Fail;
- pulumi-kubernetes replaces its provider, and every object under it, on a kubeconfig change unless
  clusterIdentifier is set and unchanged.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from offline import __main__ as cli
from offline.engine import Plan, run_program
from offline.vendor import REPO
from tests.conftest import BASE, StackRunner
from tests.fixtures import stack_data, stack_plan

CLUSTER = "gcp:container/cluster:Cluster"
FIREWALL = "gcp:compute/firewall:Firewall"
PROVIDER = "pulumi:providers:kubernetes"
DNS_ENDPOINT = re.compile(r"^gke-[0-9a-f]{36}\.(us-east5|us-west4)\.gke\.goog$")
"""The form GKE gives the DNS endpoint (a real cluster's: gke-94fc1769e0c844e99793ee485d88c68c0b39.europe-west1
.gke.goog, GoogleCloudPlatform/gcpdiag#115), in the stack's region: dev runs in us-east5, prod in us-west4."""

# The real program, plus what a test needs to read: the kubeconfig unsecreted and what the cluster reported.
PROGRAM = f"""
import runpy
import pulumi

program = runpy.run_path({str(REPO / "__main__.py")!r}, run_name="__main__")
cluster = program["cluster"]
pulumi.export("kubeconfigText", pulumi.Output.unsecret(cluster.kubeconfig))
reported = cluster.cluster.control_plane_endpoints_config
pulumi.export("reportedDnsEndpoint", reported.apply(lambda c: c.dns_endpoint_config.endpoint))
pulumi.export("masterVersion", cluster.master_version)
"""


def run_with_kubeconfig(tmp_path: Path, stack: str) -> Plan:
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    return run_program(stack_data(stack), stack=stack, program=program)


def one(plan: Plan, type_token: str) -> dict[str, Any]:
    (resource,) = plan.by_type(type_token)
    return resource


# --- defect 1: the kubeconfig names the DNS endpoint and trusts the public roots there ---------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_kubeconfig_points_at_the_dns_endpoint_without_the_cluster_ca(tmp_path: Path, stack: str) -> None:
    plan = run_with_kubeconfig(tmp_path, stack)
    config = yaml.safe_load(plan.outputs["kubeconfigText"])
    (entry,) = config["clusters"]
    server = entry["cluster"]["server"]
    host = server.removeprefix("https://")
    assert server.startswith("https://") and DNS_ENDPOINT.match(host), server
    # Only the server: no certificate-authority-data (it would be the only root, and the front end's certificate
    # is not signed by it), and TLS is verified (no insecure-skip-tls-verify).
    assert entry["cluster"] == {"server": server}
    (user,) = config["users"]
    assert user["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    # The endpoint it names is the one GKE reports for this cluster, and the stack lets clients reach it.
    assert host == plan.outputs["reportedDnsEndpoint"]
    assert one(plan, CLUSTER)["inputs"]["controlPlaneEndpointsConfig"]["dnsEndpointConfig"] == {
        "allowExternalTraffic": True
    }


def test_the_kubeconfig_writer_leaves_the_ca_out() -> None:
    from components.gke_cluster import kubeconfig

    config = yaml.safe_load(kubeconfig("tpu-prod", "gke-0123.us-east5.gke.goog"))
    assert config["clusters"] == [{"name": "tpu-prod", "cluster": {"server": "https://gke-0123.us-east5.gke.goog"}}]


def test_a_cluster_without_a_dns_endpoint_stops_the_update_instead_of_an_empty_server() -> None:
    from pulumi_gcp.container.outputs import (
        ClusterControlPlaneEndpointsConfig as Endpoints,
    )
    from pulumi_gcp.container.outputs import (
        ClusterControlPlaneEndpointsConfigDnsEndpointConfig as Dns,
    )

    from components.gke_cluster import _dns_endpoint

    reported = Endpoints(dns_endpoint_config=Dns(endpoint="gke-1.us-east5.gke.goog"))
    assert _dns_endpoint(reported) == "gke-1.us-east5.gke.goog"
    with pytest.raises(pulumi.RunError, match=r"the cluster reports no DNS endpoint"):
        _dns_endpoint(Endpoints(dns_endpoint_config=Dns(allow_external_traffic=True)))


# --- defect 2: the IP endpoint is off unless asked for, and then only for its networks ---------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_stacks_reach_the_cluster_by_dns_only(stack: str) -> None:
    cluster = one(stack_plan(stack, render_charts=False), CLUSTER)["inputs"]
    assert cluster["controlPlaneEndpointsConfig"]["ipEndpointsConfig"] == {"enabled": False}
    # Sent at all, the provider turns authorized networks on; with no CIDR they would admit only the nodes.
    assert "masterAuthorizedNetworksConfig" not in cluster


def test_an_ip_endpoint_admits_only_its_authorized_networks(run: StackRunner) -> None:
    plane = {"ipEndpoint": True, "authorizedNetworks": ["203.0.113.0/24", "198.51.100.7/32"]}
    cluster = one(run({"tpu-stack:cluster": {"controlPlane": plane}}), CLUSTER)["inputs"]
    assert cluster["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": True},
        "ipEndpointsConfig": {"enabled": True},
    }
    assert cluster["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [
            {"cidrBlock": "203.0.113.0/24", "displayName": "203.0.113.0/24"},
            {"cidrBlock": "198.51.100.7/32", "displayName": "198.51.100.7/32"},
        ],
        "gcpPublicCidrsAccessEnabled": False,
    }


ACCESS_ERRORS = [
    (
        "IP endpoint with no networks",
        {"ipEndpoint": True},
        "tpu-stack:cluster.controlPlane.authorizedNetworks: ipEndpoint is true but no network may reach the IP "
        "endpoint; list the CIDRs of its clients, or remove ipEndpoint (the stack's kubeconfig, CI and operators use "
        "the DNS endpoint)",
    ),
    (
        "networks without the IP endpoint",
        {"authorizedNetworks": ["203.0.113.0/24"]},
        "tpu-stack:cluster.controlPlane.authorizedNetworks: these networks only apply to the IP endpoint, which is "
        "off; set controlPlane.ipEndpoint: true or remove them (the DNS endpoint is guarded by IAM, not by networks)",
    ),
]


@pytest.mark.parametrize(("case", "plane", "message"), ACCESS_ERRORS, ids=[c[0] for c in ACCESS_ERRORS])
def test_control_plane_access_mistakes_are_one_line_and_register_nothing(
    case: str, plane: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "Pulumi.case.yaml"
    path.write_text(yaml.safe_dump({"config": {**BASE, "tpu-stack:cluster": {"controlPlane": plane}}}))
    out = tmp_path / "out"
    code = cli.main(["preview", "--stack", "case", "--config", str(path), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.splitlines() == [f"error: {message}", "1 config error(s); nothing was registered."]
    assert "Traceback" not in captured.err + captured.out
    assert not out.exists()


# --- defect 4: the control plane reaches the charts' webhooks on private nodes ---------------------------


def test_webhook_ports_are_the_charts_ports_gke_does_not_open() -> None:
    from components.gke_cluster import WEBHOOK_PORTS

    # Kueue 0.19.2: webhook 9443, visibility APIService 8082; JobSet 0.12.0: webhook 9443.
    assert WEBHOOK_PORTS == (8082, 9443)


def test_private_nodes_open_the_webhook_ports_to_the_control_plane_only() -> None:
    plan = stack_plan("prod", render_charts=False)
    firewall = one(plan, FIREWALL)
    assert firewall["inputs"] == {
        "name": "tpu-prod-cp-webhooks",
        "project": "tpu-stack-prod",
        "network": "tpu-stack-prod",
        "description": "GKE control plane of tpu-prod to the webhooks on its nodes",
        "direction": "INGRESS",
        # prod's node and pod ranges (components/config/network.py default layout): where calls through the
        # konnectivity tunnel come from; prod has no peering range.
        "sourceRanges": ["10.48.0.0/20", "10.0.0.0/14"],
        "targetServiceAccounts": ["tpu-prod-nodes@tpu-stack-prod.iam.gserviceaccount.com"],
        "allows": [{"protocol": "tcp", "ports": ["8082", "9443"]}],
    }
    # Nothing is created in the cluster before the rule exists (the charts' webhooks are failurePolicy Fail).
    assert firewall["urn"] in one(plan, PROVIDER)["dependencies"]


# --- issue 27, defect 1: prod's first `up` does not stop after the cluster ------------------------------------


def test_the_webhook_rule_is_known_before_the_cluster_exists() -> None:
    """A cluster created with its IP endpoints off and no master range reports neither a private endpoint nor a
    masterIpv4CidrBlock (API reference, IPEndpointsConfig.privateEndpoint: "Only populated if enabled";
    terraform-provider-google flattenPrivateClusterConfig reads nothing else). The rule's sources come from the
    config, so they are known in a new stack's preview and nothing waits on a value GKE does not report."""
    plan = stack_plan("prod", render_charts=False, known_outputs=False)
    assert one(plan, FIREWALL)["inputs"]["sourceRanges"] == ["10.48.0.0/20", "10.0.0.0/14"]


def test_a_peering_range_in_config_is_sent_and_opened(run: StackRunner) -> None:
    """With controlPlane.masterIpv4Cidr the cluster is created with that /28 (VPC peering) and the control plane's
    own calls from it are admitted too."""
    plan = run({"tpu-stack:cluster": {"name": "c", "controlPlane": {"masterIpv4Cidr": "172.16.0.32/28"}}})
    cluster = plan.one(CLUSTER, "c")["inputs"]
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": True, "masterIpv4CidrBlock": "172.16.0.32/28"}
    sources = one(plan, FIREWALL)["inputs"]["sourceRanges"]
    assert sources == ["10.48.0.0/20", "10.0.0.0/14", "172.16.0.32/28"]


@pytest.mark.parametrize(
    ("cidr", "message"),
    [
        ("172.16.0.0/24", "'172.16.0.0/24' is not a /28; GKE takes a /28 for the control plane's range"),
        ("8.8.8.0/28", "'8.8.8.0/28' is not a private range; use one of 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16"),
        ("10.48.0.16/28", "10.48.0.16/28 overlaps ipRanges.nodes 10.48.0.0/20; give a /28 apart"),
    ],
)
def test_a_wrong_peering_range_is_one_line(cidr: str, message: str) -> None:
    from components.config import ConfigError, load

    with pytest.raises(ConfigError) as error:
        load({**BASE, "tpu-stack:cluster": {"controlPlane": {"masterIpv4Cidr": cidr}}}, stack="dev")
    key = "controlPlane.masterIpv4Cidr"
    assert error.value.lines == [f"tpu-stack:cluster.{key}: {message}"]


def test_autopilot_private_nodes_open_the_ports_to_its_node_account(run: StackRunner) -> None:
    plan = run({"tpu-stack:cluster": {"name": "ap", "mode": "autopilot", "privateNodes": True}})
    assert one(plan, FIREWALL)["inputs"]["targetServiceAccounts"] == ["ap-nodes@proj-1234.iam.gserviceaccount.com"]


# --- defect 6: a kubeconfig change updates the provider, a new cluster replaces it ------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_provider_is_identified_by_the_clusters_dns_endpoint(stack: str) -> None:
    plan = stack_plan(stack, render_charts=False)
    provider = one(plan, PROVIDER)
    assert DNS_ENDPOINT.match(provider["inputs"]["clusterIdentifier"])
    assert one(plan, CLUSTER)["urn"] in provider["dependencies"]


def test_a_new_cluster_gives_the_provider_a_new_identity() -> None:
    # Before the cluster exists (or while it is replaced) its endpoint is unknown, so is the identifier: the
    # provider and its objects are replaced with the cluster, never kept for one that no longer exists.
    plan = stack_plan("prod", render_charts=False, known_outputs=False)
    assert one(plan, PROVIDER)["inputs"]["clusterIdentifier"] == "[unknown]"


# --- the mocks report what GKE reports where the program reads it ----------------------------------------


def test_the_channel_version_reaches_the_floor_check(tmp_path: Path) -> None:
    plan = run_with_kubeconfig(tmp_path, "prod")
    assert plan.outputs["masterVersion"] == "1.33.5-gke.1308000"
    assert plan.outputs["clusterEndpoint"] == plan.outputs["reportedDnsEndpoint"]
