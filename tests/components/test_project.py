"""An empty project (issue 27, defects 3, 4 and 10): the APIs the stack calls, its own VPC and subnetworks with
ranges sized from the largest node count, private nodes, pods per node, Cloud DNS.

Expectations written by hand from the sources: GKE's pod block per node (cloud.google.com/kubernetes-engine/docs/
how-to/flexible-pod-cidr: 9-16 pods a /27, 65-128 a /24), the 4 addresses every subnet keeps (cloud.google.com/vpc/
docs/subnets), xpk's `--max-pods-per-node 15` for TPU pools (src/xpk/core/nodepool.py), and the provider's fields
(terraform-provider-google resource_container_cluster.go ip_allocation_policy, dns_config; google_project_service
disable_on_destroy).
"""

from __future__ import annotations

from typing import Any

import pytest

from components.config import ConfigError, load
from components.config.network import addresses_per_node, prefix_holding
from offline.catalogue import CATALOGUE
from offline.engine import read_stack_file, run_program
from tests.conftest import StackRunner
from tests.fixtures import STACKS_DIR, stack_data, stack_plan

CLUSTER = "gcp:container/cluster:Cluster"
SERVICE = "gcp:projects/service:Service"
NODE_POOL = "gcp:container/nodePool:NodePool"


def test_pod_blocks_follow_gkes_table() -> None:
    assert [addresses_per_node(n) for n in (8, 9, 15, 16, 17, 32, 64, 65, 110, 128, 129, 256)] == [
        16, 32, 32, 32, 64, 64, 128, 256, 256, 256, 512, 512]  # fmt: skip
    assert [prefix_holding(n) for n in (256, 257, 65536, 70912)] == [24, 23, 16, 15]


def test_the_stack_enables_the_apis_it_calls_and_never_disables_them() -> None:
    plan = stack_plan("prod", render_charts=False)
    enabled = {r["inputs"]["service"]: r["inputs"] for r in plan.by_type(SERVICE)}
    assert sorted(enabled) == [
        "cloudresourcemanager.googleapis.com", "compute.googleapis.com", "container.googleapis.com",
        "dns.googleapis.com", "iam.googleapis.com", "iamcredentials.googleapis.com", "logging.googleapis.com",
        "monitoring.googleapis.com", "storage.googleapis.com"]  # fmt: skip
    assert all(i == {"project": "tpu-stack-prod", "service": s, "disableOnDestroy": False} for s, i in enabled.items())


def test_a_workload_that_impersonates_a_google_account_gets_the_iam_credentials_api(run: StackRunner) -> None:
    """With `identity: iamServiceAccount` the GKE metadata server mints the pod's token by impersonating the Google
    service account through the IAM Service Account Credentials API; where that API is off it answers "Unable to
    generate access token; IAM returned 403 Forbidden: IAM Service Account Credentials API has not been used in
    project ..." (google/kctf#194). prod's research reader uses that form; the principal form needs no API."""
    plan = stack_plan("prod", render_charts=False)
    (service,) = [r for r in plan.by_type(SERVICE) if r["inputs"]["service"] == "iamcredentials.googleapis.com"]
    assert service["inputs"] == {"project": "tpu-stack-prod", "service": "iamcredentials.googleapis.com",
                                 "disableOnDestroy": False}  # fmt: skip
    identity = plan.one("tpu-stack:index:WorkloadIdentity", "research-analyst")
    assert service["urn"] in identity["dependencies"]
    principal_only = run({"tpu-stack:bucket": {"readers": [{"namespace": "default", "serviceAccount": "analyst"}]}})
    assert "iamcredentials.googleapis.com" not in {r["inputs"]["service"] for r in principal_only.by_type(SERVICE)}


def test_kube_dns_needs_no_cloud_dns_api(run: StackRunner) -> None:
    plan = run({"tpu-stack:cluster": {"dns": "kube-dns"}})
    assert "dns.googleapis.com" not in {r["inputs"]["service"] for r in plan.by_type(SERVICE)}
    assert plan.one(CLUSTER, "tpu-cluster")["inputs"]["dnsConfig"] == {"clusterDns": "KUBE_DNS"}


def test_the_stacks_own_vpc_and_the_clusters_subnetwork() -> None:
    plan = stack_plan("prod", render_charts=False)
    (vpc,) = plan.by_type("gcp:compute/network:Network")
    assert vpc["inputs"] == {
        "name": "tpu-stack-prod",
        "project": "tpu-stack-prod",
        "description": "Network of the prod stack's GKE clusters",
        "autoCreateSubnetworks": False,
        "routingMode": "REGIONAL",
        "mtu": 8896,
    }
    (subnet,) = plan.by_type("gcp:compute/subnetwork:Subnetwork")
    # prod at its largest: 8 system nodes (/24 each: 2,048), train 2 x 4, burst 4, serve 2 x 8 TPU VMs (/27 each:
    # 28 x 32 = 896): 2,944 pod addresses, twice that is 5,888 -> a /19; 36 nodes + 4 + 1 + Saxml's load balancer.
    assert subnet["inputs"] == {
        "name": "tpu-prod-nodes",
        "project": "tpu-stack-prod",
        "region": "us-west4",
        "network": "tpu-stack-prod",
        "ipCidrRange": "10.48.0.0/20",
        "secondaryIpRanges": [
            {"rangeName": "tpu-prod-pods", "ipCidrRange": "10.0.0.0/14"},
            {"rangeName": "tpu-prod-services", "ipCidrRange": "10.32.0.0/20"},
        ],
        "privateIpGoogleAccess": True,
    }
    cluster = plan.one(CLUSTER, "tpu-prod")
    assert (cluster["inputs"]["network"], cluster["inputs"]["subnetwork"]) == ("tpu-stack-prod", "tpu-prod-nodes")
    assert cluster["inputs"]["ipAllocationPolicy"] == {
        "clusterSecondaryRangeName": "tpu-prod-pods",
        "servicesSecondaryRangeName": "tpu-prod-services",
    }
    assert cluster["inputs"]["dnsConfig"] == {"clusterDns": "CLOUD_DNS", "clusterDnsScope": "CLUSTER_SCOPE"}


def test_tpu_pools_run_fifteen_pods_per_node_and_the_system_pool_gkes_default() -> None:
    """Defect 4: without maxPodsPerNode every TPU VM took a /24 of the pod range; ForceNew, so chosen now, once."""
    plan = stack_plan("prod", render_charts=False)
    pods = {r["name"]: r["inputs"].get("maxPodsPerNode") for r in plan.by_type(NODE_POOL)}
    assert pods == {"tpu-prod-system": 110, "train-0": 15, "train-1": 15, "burst": 15, "serve-0": 15, "serve-1": 15}


@pytest.mark.parametrize("stack", ["dev", "llm", "multiregion", "prod"])
def test_every_cluster_has_private_nodes_and_cloud_nat(stack: str) -> None:
    """Defect 10: no node has an external address (constraints/compute.vmExternalIpAccess), each region a NAT."""
    plan = stack_plan(stack, render_charts=False)
    clusters = plan.by_type(CLUSTER)
    assert all(c["inputs"]["privateClusterConfig"] == {"enablePrivateNodes": True} for c in clusters)
    assert len(plan.by_type("gcp:compute/routerNat:RouterNat")) == len(clusters)


def test_the_multiregion_clusters_have_subnetworks_apart_in_one_vpc() -> None:
    plan = stack_plan("multiregion", render_charts=False)
    assert len(plan.by_type("gcp:compute/network:Network")) == 1
    subnets = {r["inputs"]["name"]: (r["inputs"]["region"], r["inputs"]["ipCidrRange"])
               for r in plan.by_type("gcp:compute/subnetwork:Subnetwork")}  # fmt: skip
    assert subnets == {
        "tpu-mr-manager-nodes": ("us-central1", "10.48.0.0/20"),
        "tpu-mr-east5-nodes": ("us-east5", "10.112.0.0/20"),
        "tpu-mr-japan-nodes": ("asia-northeast1", "10.176.0.0/20"),
    }


def _prod_with(**cluster: Any) -> dict[str, Any]:
    data = stack_data("prod")
    data["tpu-stack:cluster"] = {**data["tpu-stack:cluster"], **cluster}
    return data


def _lines(config: dict[str, Any], stack: str = "prod") -> list[str]:
    from offline.engine import _engine_config

    with pytest.raises(ConfigError) as error:
        load(_engine_config(config), stack=stack)
    return error.value.lines


def test_a_pod_range_too_small_for_the_largest_cluster_is_one_line() -> None:
    lines = _lines(_prod_with(ipRanges={"pods": "10.0.0.0/21"}))
    assert lines == [
        "tpu-stack:cluster.ipRanges.pods: 10.0.0.0/21 holds 2,048 pod addresses; at their largest the pools need "
        "2,944 (cluster.systemPool 8 x 256, tpuPools[0] 8 x 32, tpuPools[1] 4 x 32, tpuPools[2] 16 x 32: nodes x the "
        "block of their maxPodsPerNode): use a /20 or wider, or lower maxPodsPerNode"
    ]


def test_a_node_range_too_small_is_one_line() -> None:
    assert _lines(_prod_with(ipRanges={"nodes": "10.48.0.0/27"})) == [
        "tpu-stack:cluster.ipRanges.nodes: 10.48.0.0/27 holds 32 addresses; 36 nodes at their largest, 1 internal "
        "load balancer(s), the control plane's endpoint and the 4 every subnet keeps need 42: use a /26 or wider"
    ]


def test_overlapping_ranges_are_refused() -> None:
    assert _lines(_prod_with(ipRanges={"services": "10.0.0.0/20"})) == [
        "tpu-stack:cluster.ipRanges.services: 10.0.0.0/20 overlaps pods 10.0.0.0/14; give ranges apart"
    ]


def test_an_existing_network_needs_its_ranges() -> None:
    assert _lines(_prod_with(network="default")) == [
        "tpu-stack:cluster.ipRanges: with an existing network (default) give nodes, pods, services: the stack cannot "
        "know what is free there (a subnetwork's primary range for nodes; for a cluster GKE made the ranges of, what "
        "`gcloud container clusters describe` reports, or their sizes like /14)"
    ]
    assert _lines(_prod_with(subnetwork="mine")) == [
        "tpu-stack:cluster.subnetwork: an existing subnetwork needs its network; set cluster.network, or remove "
        "subnetwork and the stack creates one in its own VPC"
    ]


def test_a_stack_deployed_on_the_default_network_keeps_its_cluster(run: StackRunner) -> None:
    """The settings an existing stack keeps its cluster with: its network, GKE's picked range sizes (the provider
    suppresses a size equal to the state's range, CidrOrSizeDiffSuppress) and the network's node range."""
    ranges = {"nodes": "10.128.0.0/20", "pods": "/14", "services": "/20"}
    plan = run({"tpu-stack:cluster": {"name": "c", "network": "default", "ipRanges": ranges}})
    cluster = plan.one(CLUSTER, "c")["inputs"]
    assert (cluster["network"], cluster.get("subnetwork")) == ("default", None)
    assert cluster["ipAllocationPolicy"] == {"clusterIpv4CidrBlock": "/14", "servicesIpv4CidrBlock": "/20"}
    assert plan.by_type("gcp:compute/network:Network") == plan.by_type("gcp:compute/subnetwork:Subnetwork") == []
    # A size names no addresses: the webhook rule's sources are the node range only.
    assert plan.one("gcp:compute/firewall:Firewall", "c-cp-webhooks")["inputs"]["sourceRanges"] == ["10.128.0.0/20"]


def test_max_pods_per_node_out_of_gkes_bounds_is_refused() -> None:
    data = stack_data("prod")
    data["tpu-stack:tpuPools"][0]["maxPodsPerNode"] = 300
    assert _lines(data) == ["tpu-stack:tpuPools[0].maxPodsPerNode: the number 300 is too large; use 256 or less"]


def test_256_slices_of_prod_fit_with_room_to_spare() -> None:
    """Defect 4's scale: prod with 256 train slices of 4x4 (1,024 TPU VMs) previews; its pod range holds twice what
    1,052 nodes need (8 x 256 + 1,044 x 32 = 35,456 addresses; twice that fits a /15, and the default /14 of 262,144
    holds it with room to grow)."""
    config = read_stack_file(STACKS_DIR.parent / "scale" / "Pulumi.prod-256.yaml")
    plan = run_program(config, stack="prod")
    (subnet,) = plan.by_type("gcp:compute/subnetwork:Subnetwork")
    assert subnet["inputs"]["secondaryIpRanges"][0]["ipCidrRange"] == "10.0.0.0/14"
    assert subnet["inputs"]["ipCidrRange"] == "10.48.0.0/20"
    assert len(plan.by_type(NODE_POOL)) == 1 + 256 + 1 + 2
    assert plan.violations == []
    # The address plan the preview prints: 1,052 nodes (8 system + 1,024 train + 4 burst + 16 serve), 35,456 pod
    # addresses of the /14's 262,144 (7.4 times what they need) and 1,058 node addresses of the /20's 4,096 (the 4
    # every subnet keeps, the control plane's endpoint and Saxml's internal load balancer): room to spare in both.
    from offline.summary import from_outputs

    addresses = from_outputs(plan.outputs)["addresses"]["tpu-prod"]
    assert addresses == {"nodes": "10.48.0.0/20", "pods": "10.0.0.0/14", "services": "10.32.0.0/20",
                         "maxNodes": 1052, "podAddressesNeeded": 35456, "nodeAddressesNeeded": 1058}  # fmt: skip
    assert CATALOGUE.breaches(plan.resources, {}) == []  # ranges-hold-the-largest among them
