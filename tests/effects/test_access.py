"""Who reaches each stack's control plane, how the control plane reaches the nodes, and where private nodes' traffic
leaves the VPC; then the cluster, its system pool and its network objects compared whole.

Platform rules the access model applies (GKE's control-plane access and network isolation pages, facts §10):
- the DNS endpoint answers any network when `allowExternalTraffic` is on; IAM decides who gets in; a Google front
  end with a publicly trusted certificate serves it, so a kubeconfig for it names no CA (the system's roots verify);
- the IP endpoints exist only when `ipEndpointsConfig.enabled`; then the provider turns authorized networks on
  whenever `masterAuthorizedNetworksConfig` is sent: only its CIDRs (and Google Cloud's public ranges if
  `gcpPublicCidrsAccessEnabled`) reach the public IP endpoint; sent without it, any address does;
- in-cluster clients (the Managed Prometheus collectors, the kubelets) use the cluster's internal endpoint and the
  cluster CA their service account token or kubelet credentials carry (what the collectors may read there:
  test_metrics_chain.py); private nodes have no external address;
- GKE's own firewall rule lets the control plane reach private nodes on tcp 443 and 10250 only;
- Cloud NAT with ALL_SUBNETWORKS_ALL_IP_RANGES translates the primary and secondary (pod) ranges of every subnetwork
  of the router's network in the router's region.
A GitHub-hosted runner has an address outside Google Cloud (here 203.0.113.50), an operator's laptop likewise.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
import yaml

from offline.engine import Plan, run_program
from offline.vendor import REPO
from tests.conftest import StackRunner
from tests.effects.conftest import shared
from tests.fixtures import stack_data

CLUSTER = "gcp:container/cluster:Cluster"
FIREWALL = "gcp:compute/firewall:Firewall"
GKE_CONTROL_PLANE_RULE = {443, 10250}
CI_RUNNER = "203.0.113.50"
OPERATOR = "198.51.100.7"
GCP_PUBLIC = "34.16.0.9"
"""An address in Google Cloud's public ranges (a Compute Engine VM with an external IP)."""


def external_paths(cluster: dict[str, Any], client: str) -> set[str]:
    """The control plane endpoints `client` (an address outside the VPC) reaches, by the rules above."""
    endpoints = cluster["controlPlaneEndpointsConfig"]
    paths = set()
    if endpoints["dnsEndpointConfig"].get("allowExternalTraffic") is True:
        paths.add("dns")
    if endpoints["ipEndpointsConfig"].get("enabled") is not False:
        networks = cluster.get("masterAuthorizedNetworksConfig")
        if networks is None or _authorized(networks, client):
            paths.add("ip")
    return paths


def _authorized(networks: dict[str, Any], client: str) -> bool:
    address = ipaddress.ip_address(client)
    if any(address in ipaddress.ip_network(block["cidrBlock"]) for block in networks.get("cidrBlocks", [])):
        return True
    return networks.get("gcpPublicCidrsAccessEnabled") is True and client == GCP_PUBLIC


def access(plan: Plan) -> dict[str, Any]:
    """The stack's access table, read from what it declares."""
    cluster = plan.one(CLUSTER, f"tpu-{plan.stack}")["inputs"]
    private = (cluster.get("privateClusterConfig") or {}).get("enablePrivateNodes") is True
    nats = plan.by_type("gcp:compute/routerNat:RouterNat")
    firewalls = plan.by_type(FIREWALL)
    return {
        "ci-hosted-runner": sorted(external_paths(cluster, CI_RUNNER)),
        "operator": sorted(external_paths(cluster, OPERATOR)),
        "gcp-vm": sorted(external_paths(cluster, GCP_PUBLIC)),
        "nodes": "internal endpoint, private addresses only" if private else "internal endpoint, external addresses",
        "node egress": [(n["inputs"]["region"], n["inputs"]["sourceSubnetworkIpRangesToNat"]) for n in nats]
        or "each node's external address",
        "control plane to node ports": sorted(
            GKE_CONTROL_PLANE_RULE | {int(p) for f in firewalls for a in f["inputs"]["allows"] for p in a["ports"]}
        )
        if private
        else "any (public nodes)",
    }


# The real program, exporting what the stack hands its clients: the kubeconfig (a secret output) in clear.
PROGRAM = f"""
import runpy
import pulumi

program = runpy.run_path({str(REPO / "__main__.py")!r}, run_name="__main__")
pulumi.export("kubeconfigText", pulumi.Output.unsecret(program["cluster"].kubeconfig))
pulumi.export("reportedEndpoints", program["cluster"].cluster.control_plane_endpoints_config)
"""


@pytest.fixture(scope=shared)
def handed_out(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    program = tmp_path_factory.mktemp("program") / "program.py"
    program.write_text(PROGRAM)
    outputs = {}
    for stack in ("dev", "prod"):
        plan = run_program(stack_data(stack), stack=stack, program=program)
        outputs[stack] = plan.outputs
    return outputs


def kubeconfig_access(outputs: dict[str, Any]) -> dict[str, str]:
    """Where the stack's kubeconfig sends CI and operators, trusting what, authenticated how."""
    config = yaml.safe_load(outputs["kubeconfigText"])
    (cluster,) = config["clusters"]
    (user,) = config["users"]
    endpoints = outputs["reportedEndpoints"]  # the typed output: Python names
    dns = (endpoints.get("dns_endpoint_config") or endpoints["dnsEndpointConfig"])["endpoint"]
    server = cluster["cluster"]["server"]
    trusted = "cluster CA only" if "certificate-authority-data" in cluster["cluster"] else "the system's public roots"
    if cluster["cluster"].get("insecure-skip-tls-verify"):
        trusted = "nothing (TLS unverified)"
    return {
        "endpoint": "DNS endpoint" if server == f"https://{dns}" else server,
        "trusts": trusted,
        "authenticates": user["user"].get("exec", {}).get("command", "a stored credential"),
    }


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_ci_and_operators_use_the_dns_endpoint_and_its_public_certificate(
    handed_out: dict[str, dict[str, Any]], stack: str
) -> None:
    assert kubeconfig_access(handed_out[stack]) == {
        "endpoint": "DNS endpoint",
        "trusts": "the system's public roots",
        "authenticates": "gke-gcloud-auth-plugin",
    }
    config = yaml.safe_load(handed_out[stack]["kubeconfigText"])
    names = {config["current-context"], config["clusters"][0]["name"], config["users"][0]["name"]}
    assert names == {f"tpu-{stack}"}  # gcloud names all three after the cluster


def test_the_kubeconfig_reading_sees_a_pinned_cluster_ca() -> None:
    """The reading is not vacuous: the cluster CA named in the kubeconfig would be the only root, and fail."""
    text = yaml.safe_dump(
        {
            "clusters": [
                {"cluster": {"server": "https://gke-1.us-central1.gke.goog", "certificate-authority-data": "bW9jaw=="}}
            ],
            "users": [{"user": {"token": "t"}}],
        }
    )
    outputs = {
        "kubeconfigText": text,
        "reportedEndpoints": {"dnsEndpointConfig": {"endpoint": "gke-1.us-central1.gke.goog"}},
    }
    assert kubeconfig_access(outputs) == {
        "endpoint": "DNS endpoint",
        "trusts": "cluster CA only",
        "authenticates": "a stored credential",
    }


ACCESS = {
    # Issue 27, defect 10: every stack's nodes are private (organisations enforce vmExternalIpAccess).
    "dev": {
        "ci-hosted-runner": ["dns"],
        "operator": ["dns"],
        "gcp-vm": ["dns"],
        "nodes": "internal endpoint, private addresses only",
        "node egress": [("us-east5", "ALL_SUBNETWORKS_ALL_IP_RANGES")],
        "control plane to node ports": [443, 8082, 9443, 10250],
    },
    "prod": {
        "ci-hosted-runner": ["dns"],
        "operator": ["dns"],
        "gcp-vm": ["dns"],
        "nodes": "internal endpoint, private addresses only",
        "node egress": [("us-west4", "ALL_SUBNETWORKS_ALL_IP_RANGES")],
        # GKE's rule (443 kubelet proxy, 10250 kubelet) and the stack's: Kueue's visibility API and both webhooks.
        "control plane to node ports": [443, 8082, 9443, 10250],
    },
}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_who_reaches_the_control_plane_and_how_nodes_get_out(plans: dict[str, Plan], stack: str) -> None:
    assert access(plans[stack]) == ACCESS[stack]


def test_an_ip_endpoint_admits_its_networks_and_no_one_else(run: StackRunner) -> None:
    plane = {"ipEndpoint": True, "authorizedNetworks": ["198.51.100.0/24"]}
    cluster = run({"tpu-stack:cluster": {"name": "tpu-dev", "controlPlane": plane}}).one(CLUSTER, "tpu-dev")["inputs"]
    assert external_paths(cluster, OPERATOR) == {"dns", "ip"}
    assert external_paths(cluster, CI_RUNNER) == {"dns"}
    assert external_paths(cluster, GCP_PUBLIC) == {"dns"}  # Google Cloud's public ranges are not let in


def test_the_access_model_sees_a_wider_control_plane() -> None:
    """The model is not vacuous: the IP endpoint on without networks admits every address."""
    wide = {
        "controlPlaneEndpointsConfig": {
            "dnsEndpointConfig": {"allowExternalTraffic": False},
            "ipEndpointsConfig": {"enabled": True},
        }
    }
    assert external_paths(wide, CI_RUNNER) == {"ip"}
    gcp = {**wide, "masterAuthorizedNetworksConfig": {"cidrBlocks": [], "gcpPublicCidrsAccessEnabled": True}}
    assert external_paths(gcp, GCP_PUBLIC) == {"ip"} and external_paths(gcp, CI_RUNNER) == set()


def webhook_pod_ports(plan: Plan) -> set[int]:
    """Pod ports behind every Service a webhook configuration or APIService points the API server at."""
    objects = [r["inputs"] for r in plan.resources if r.get("rendered")]
    called = set()
    for obj in objects:
        if obj["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            called |= {
                (w["clientConfig"]["service"]["namespace"], w["clientConfig"]["service"]["name"])
                for w in obj["webhooks"]
            }
        elif obj["kind"] == "APIService" and obj["spec"].get("service"):
            called.add((obj["spec"]["service"]["namespace"], obj["spec"]["service"]["name"]))
    named = {
        (o["metadata"]["namespace"], p["name"]): p["containerPort"]
        for o in objects
        if o["kind"] == "Deployment"
        for c in o["spec"]["template"]["spec"]["containers"]
        for p in c.get("ports", [])
        if "name" in p
    }
    ports = set()
    for obj in objects:
        key = (obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if obj["kind"] == "Service" and key in called:
            for port in obj["spec"]["ports"]:
                target = port.get("targetPort", port["port"])
                ports.add(named[(key[0], target)] if isinstance(target, str) else target)
    return ports


def test_on_private_nodes_the_control_plane_reaches_every_webhook_port(plans: dict[str, Plan]) -> None:
    plan = plans["prod"]
    (firewall,) = plan.by_type(FIREWALL)
    # The API server calls webhooks over TCP (HTTPS): a rule for another protocol opens nothing to them.
    tcp = {int(p) for a in firewall["inputs"]["allows"] if a["protocol"] == "tcp" for p in a["ports"]}
    assert webhook_pod_ports(plan) == {8082, 9443}
    assert webhook_pod_ports(plan) <= GKE_CONTROL_PLANE_RULE | tcp
    # Whole: from where the API server's calls come (the konnectivity agents: prod's node and pod ranges), to the
    # stack's nodes only, ingress, on the stack's VPC.
    assert firewall["inputs"] == {
        "name": "tpu-prod-cp-webhooks",
        "project": "tpu-stack-prod",
        "description": "GKE control plane of tpu-prod to the webhooks on its nodes",
        "network": "tpu-stack-prod",
        "direction": "INGRESS",
        "allows": [{"protocol": "tcp", "ports": ["8082", "9443"]}],
        "sourceRanges": ["10.48.0.0/20", "10.0.0.0/14"],
        "targetServiceAccounts": ["tpu-prod-nodes@tpu-stack-prod.iam.gserviceaccount.com"],
    }


# ---- the objects, whole --------------------------------------------------------------------------------------------

SCOPE = "https://www.googleapis.com/auth/cloud-platform"


REGIONS = {"dev": "us-east5", "prod": "us-west4"}
"""The fixture stacks' regions: zones there offer the TPUs they ask for (vendor/data/tpu_zones.json)."""


def cluster_inputs(stack: str, channel: str, protection: bool) -> dict[str, Any]:
    return {
        "name": f"tpu-{stack}",
        "project": f"tpu-stack-{stack}",
        "location": REGIONS[stack],
        "releaseChannel": {"channel": channel},
        "deletionProtection": protection,
        "resourceLabels": {"app": "tpu-stack", "env": stack, "managed-by": "pulumi", "team": "ml-platform"},
        "datapathProvider": "ADVANCED_DATAPATH",
        "enableShieldedNodes": True,
        "addonsConfig": {"gcsFuseCsiDriverConfig": {"enabled": True}},
        "monitoringConfig": {"managedPrometheus": {"enabled": True}},
        "controlPlaneEndpointsConfig": {
            "dnsEndpointConfig": {"allowExternalTraffic": True},
            "ipEndpointsConfig": {"enabled": False},
        },
        # Issue 27: the stack's VPC and the cluster's subnetwork, its named ranges, Cloud DNS, private nodes.
        "network": f"tpu-stack-{stack}",
        "subnetwork": f"tpu-{stack}-nodes",
        "ipAllocationPolicy": {
            "clusterSecondaryRangeName": f"tpu-{stack}-pods",
            "servicesSecondaryRangeName": f"tpu-{stack}-services",
        },
        "dnsConfig": {"clusterDns": "CLOUD_DNS", "clusterDnsScope": "CLUSTER_SCOPE"},
        "privateClusterConfig": {"enablePrivateNodes": True},
        "removeDefaultNodePool": True,
        "initialNodeCount": 1,
        "workloadIdentityConfig": {"workloadPool": f"tpu-stack-{stack}.svc.id.goog"},
        "nodeConfig": {
            "serviceAccount": f"tpu-{stack}-nodes@tpu-stack-{stack}.iam.gserviceaccount.com",
            "oauthScopes": [SCOPE],
            "workloadMetadataConfig": {"mode": "GKE_METADATA"},
        },
    }


DEV_CLUSTER = cluster_inputs("dev", "RAPID", protection=False)
PROD_CLUSTER = {
    **cluster_inputs("prod", "REGULAR", protection=True),
    "maintenancePolicy": {
        "recurringWindow": {
            "startTime": "2026-01-03T02:00:00Z",
            "endTime": "2026-01-03T08:00:00Z",
            "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
        }
    },
}


def system_pool(stack: str, machine: str, low: int, high: int, per_zone: int) -> dict[str, Any]:
    return {
        "name": "system",
        "project": f"tpu-stack-{stack}",
        "cluster": f"tpu-{stack}",
        "location": REGIONS[stack],
        "initialNodeCount": per_zone,
        "maxPodsPerNode": 110,  # GKE's default, stated: ForceNew, it sizes the pod range (issue 27)
        "autoscaling": {"totalMinNodeCount": low, "totalMaxNodeCount": high, "locationPolicy": "BALANCED"},
        "management": {"autoRepair": True, "autoUpgrade": True},
        "nodeConfig": {
            "machineType": machine,
            "diskSizeGb": 100,
            "serviceAccount": f"tpu-{stack}-nodes@tpu-stack-{stack}.iam.gserviceaccount.com",
            "oauthScopes": [SCOPE],
            "workloadMetadataConfig": {"mode": "GKE_METADATA"},
            "shieldedInstanceConfig": {"enableSecureBoot": True, "enableIntegrityMonitoring": True},
            "resourceLabels": {"app": "tpu-stack", "env": stack, "managed-by": "pulumi", "team": "ml-platform"},
        },
    }


WHOLE = {
    "dev": {
        (CLUSTER, "tpu-dev"): DEV_CLUSTER,
        # 1..3 nodes over us-east5's three zones: one per zone to start.
        ("gcp:container/nodePool:NodePool", "tpu-dev-system"): system_pool("dev", "e2-standard-4", 1, 3, 1),
        ("gcp:serviceaccount/account:Account", "tpu-dev-nodes"): {
            "accountId": "tpu-dev-nodes",
            "displayName": "GKE nodes of tpu-dev",
            "project": "tpu-stack-dev",
        },
    },
    "prod": {
        (CLUSTER, "tpu-prod"): PROD_CLUSTER,
        # 4..8 nodes over three zones: two per zone to start.
        ("gcp:container/nodePool:NodePool", "tpu-prod-system"): system_pool("prod", "e2-standard-8", 4, 8, 2),
        ("gcp:serviceaccount/account:Account", "tpu-prod-nodes"): {
            "accountId": "tpu-prod-nodes",
            "displayName": "GKE nodes of tpu-prod",
            "project": "tpu-stack-prod",
        },
        ("gcp:compute/router:Router", "tpu-prod-router"): {
            "name": "tpu-prod-nat",
            "project": "tpu-stack-prod",
            "region": "us-west4",
            "network": "tpu-stack-prod",  # the stack's VPC (issue 27: no default network is needed)
        },
        ("gcp:compute/routerNat:RouterNat", "tpu-prod-nat"): {
            "name": "tpu-prod-nat",
            "project": "tpu-stack-prod",
            "region": "us-west4",
            "router": "tpu-prod-nat",
            "natIpAllocateOption": "AUTO_ONLY",
            "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES",
            "logConfig": {"enable": True, "filter": "ERRORS_ONLY"},
        },
    },
}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_cluster_pool_account_and_nat_whole(plans: dict[str, Plan], stack: str) -> None:
    for (type_token, name), expected in WHOLE[stack].items():
        assert plans[stack].one(type_token, name)["inputs"] == expected, name
    # Issue 27, defect 10: dev's nodes are private too, and reach out through their region's NAT.
    assert [r["name"] for r in plans["dev"].by_type("gcp:compute/routerNat:RouterNat")] == ["tpu-dev-nat"]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_node_roles_are_the_minimum(plans: dict[str, Plan], stack: str) -> None:
    members = {
        (m["inputs"]["role"], m["inputs"]["member"], m["inputs"]["project"])
        for m in plans[stack].by_type("gcp:projects/iAMMember:IAMMember")
        if m["name"].startswith(f"tpu-{stack}-nodes-")
    }
    account = f"serviceAccount:tpu-{stack}-nodes@tpu-stack-{stack}.iam.gserviceaccount.com"
    assert members == {
        ("roles/container.defaultNodeServiceAccount", account, f"tpu-stack-{stack}"),
        ("roles/artifactregistry.reader", account, f"tpu-stack-{stack}"),
    }
    # Named after the role: a new name would replace the grant (revoked, then granted again).
    names = {m["name"] for m in plans[stack].by_type("gcp:projects/iAMMember:IAMMember") if "-nodes-" in m["name"]}
    assert names == {
        f"tpu-{stack}-nodes-container-defaultNodeServiceAccount",
        f"tpu-{stack}-nodes-artifactregistry-reader",
    }


def test_the_kubeconfig_whole() -> None:
    """Every field counts: kubectl needs the context and current-context, the plugin needs the cluster info."""
    from components.gke_cluster import kubeconfig

    assert yaml.safe_load(kubeconfig("tpu-prod", "gke-0123.us-central1.gke.goog")) == {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "tpu-prod", "cluster": {"server": "https://gke-0123.us-central1.gke.goog"}}],
        "users": [
            {
                "name": "tpu-prod",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin",
                        "provideClusterInfo": True,
                        "installHint": "gcloud components install gke-gcloud-auth-plugin",
                    }
                },
            }
        ],
        "contexts": [{"name": "tpu-prod", "context": {"cluster": "tpu-prod", "user": "tpu-prod"}}],
        "current-context": "tpu-prod",
    }


def test_a_missing_dns_endpoint_stops_the_update_with_what_is_missing() -> None:
    """The DNS endpoint is reported for every cluster; the webhook rule reads nothing GKE may not report (issue 27)."""
    import pulumi

    from components.gke_cluster import _dns_endpoint

    with pytest.raises(pulumi.RunError) as dns:
        _dns_endpoint(None)
    assert str(dns.value) == (
        "the cluster reports no DNS endpoint (controlPlaneEndpointsConfig.dnsEndpointConfig.endpoint); the "
        "kubeconfig and the kubernetes provider need it"
    )


def test_prods_network_objects_belong_to_the_cluster_and_are_protected(plans: dict[str, Plan]) -> None:
    """Children of the cluster's component: its protection covers them, and `destroy` cannot drop the path the
    control plane takes to the webhooks or the nodes' way out while the cluster stays."""
    component = "urn:pulumi:prod::tpu-stack::pulumi:pulumi:Stack$tpu-stack:index:GkeCluster::tpu-prod"
    for type_token, name in (
        ("gcp:compute/router:Router", "tpu-prod-router"),
        ("gcp:compute/routerNat:RouterNat", "tpu-prod-nat"),
        (FIREWALL, "tpu-prod-cp-webhooks"),
    ):
        resource = plans["prod"].one(type_token, name)
        assert (resource["parent"], resource["protect"]) == (component, True), name


def test_maintenance_times_are_written_in_utc_whatever_the_machines_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time
    from datetime import UTC, datetime, timedelta, timezone

    from components.gke_cluster import _rfc3339

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        assert _rfc3339(datetime(2026, 1, 3, 2, 0, tzinfo=UTC)) == "2026-01-03T02:00:00Z"
        assert _rfc3339(datetime(2026, 1, 3, 3, 0, tzinfo=timezone(timedelta(hours=1)))) == "2026-01-03T02:00:00Z"
    finally:
        monkeypatch.undo()
        time.tzset()


GKE_CLUSTER = "urn:pulumi:prod::tpu-stack::pulumi:pulumi:Stack$tpu-stack:index:GkeCluster::tpu-prod"
CHILD = "urn:pulumi:prod::tpu-stack::tpu-stack:index:GkeCluster$"
OPTIONS = {
    # GKE writes the default pool's config and size back; the pool is removed right after creation.
    (CLUSTER, "tpu-prod"): {
        "parent": GKE_CLUSTER,
        "protect": True,
        "ignoreChanges": ["nodeConfig", "initialNodeCount"],
        "customTimeouts": {"create": "90m", "update": "90m", "delete": "90m"},
        # The node account, and the network it is created in: the stack's VPC and the cluster's subnetwork.
        "dependencies": [
            f"{CHILD}gcp:compute/subnetwork:Subnetwork::tpu-prod-nodes",
            f"{CHILD}gcp:serviceaccount/account:Account::tpu-prod-nodes",
            "urn:pulumi:prod::tpu-stack::tpu-stack:index:StackNetwork$gcp:compute/network:Network::network-vpc",
        ],
    },
    # The autoscaler owns the size: an update must never reset it to the initial count.
    ("gcp:container/nodePool:NodePool", "tpu-prod-system"): {
        "parent": GKE_CLUSTER,
        "protect": True,
        "ignoreChanges": ["initialNodeCount", "nodeCount"],
        "customTimeouts": {"create": "120m", "update": "120m", "delete": "120m"},
        "dependencies": [
            f"{CHILD}gcp:container/cluster:Cluster::tpu-prod",
            f"{CHILD}gcp:serviceaccount/account:Account::tpu-prod-nodes",
        ],
    },
}


def test_the_cluster_and_its_pool_keep_what_gke_changes_and_their_timeouts(plans: dict[str, Plan]) -> None:
    for (type_token, name), expected in OPTIONS.items():
        resource = plans["prod"].one(type_token, name)
        assert {key: resource[key] for key in expected} == expected, name


def test_prods_kubernetes_provider_whole(plans: dict[str, Plan]) -> None:
    """Server-side apply, ConfigMaps and Secrets patched in place, identified by the DNS endpoint, created once the
    system pool (controllers, webhooks) and the control plane's way to the webhooks exist."""
    (provider,) = plans["prod"].by_type("pulumi:providers:kubernetes")
    dns_endpoint = plans["prod"].outputs["clusterEndpoint"]  # with the IP endpoint off, GKE's endpoint is the DNS one
    assert dns_endpoint.endswith(".us-west4.gke.goog")
    assert provider["inputs"] == {
        "enableServerSideApply": "true",
        "enableConfigMapMutable": "true",
        "enableSecretMutable": "true",
        "clusterIdentifier": dns_endpoint,
        "kubeconfig": "[secret]",
    }
    assert sorted(provider["dependencies"]) == [
        f"{CHILD}gcp:compute/firewall:Firewall::tpu-prod-cp-webhooks",
        f"{CHILD}gcp:container/cluster:Cluster::tpu-prod",
        f"{CHILD}gcp:container/nodePool:NodePool::tpu-prod-system",
    ]
    assert (provider["parent"], provider["protect"]) == (GKE_CLUSTER, True)


def test_an_autopilot_cluster_whole(run: StackRunner) -> None:
    """No pools of its own: GKE provisions nodes, as the stack's node account with the cloud-platform scope."""
    cluster_config = {
        "name": "ap",
        "mode": "autopilot",
        "privateNodes": True,
        "releaseChannel": "REGULAR",
        "deletionProtection": True,
    }
    alerts = {"notificationChannels": ["projects/proj-1234/notificationChannels/1"]}  # a protected stack's
    plan = run({"tpu-stack:cluster": cluster_config, "tpu-stack:monitoring": alerts}, stack="prod")
    cluster = plan.one(CLUSTER, "ap")
    assert cluster["inputs"] == {
        "name": "ap",
        "project": "proj-1234",
        "location": "us-central1",
        "releaseChannel": {"channel": "REGULAR"},
        "deletionProtection": True,
        "resourceLabels": {"app": "tpu-stack", "env": "prod", "managed-by": "pulumi"},
        "datapathProvider": "ADVANCED_DATAPATH",
        "enableShieldedNodes": True,
        "addonsConfig": {"gcsFuseCsiDriverConfig": {"enabled": True}},
        "monitoringConfig": {"managedPrometheus": {"enabled": True}},
        "controlPlaneEndpointsConfig": {
            "dnsEndpointConfig": {"allowExternalTraffic": True},
            "ipEndpointsConfig": {"enabled": False},
        },
        # The stack's VPC and the cluster's subnetwork with its ranges; Autopilot always uses Cloud DNS (no dnsConfig).
        "network": "tpu-stack-prod",
        "subnetwork": "ap-nodes",
        "ipAllocationPolicy": {"clusterSecondaryRangeName": "ap-pods", "servicesSecondaryRangeName": "ap-services"},
        "privateClusterConfig": {"enablePrivateNodes": True},
        "enableAutopilot": True,
        "clusterAutoscaling": {
            "autoProvisioningDefaults": {
                "serviceAccount": "ap-nodes@proj-1234.iam.gserviceaccount.com",
                "oauthScopes": [SCOPE],
            }
        },
    }
    component = "urn:pulumi:prod::tpu-stack::pulumi:pulumi:Stack$tpu-stack:index:GkeCluster::ap"
    assert (cluster["parent"], cluster["protect"], cluster["ignoreChanges"]) == (component, True, [])
    assert cluster["customTimeouts"] == {"create": "90m", "update": "90m", "delete": "90m"}


def test_a_daily_maintenance_window(run: StackRunner) -> None:
    (cluster,) = run({"tpu-stack:cluster": {"maintenance": {"dailyStartTime": "03:00"}}}).by_type(CLUSTER)
    assert cluster["inputs"]["maintenancePolicy"] == {"dailyMaintenanceWindow": {"startTime": "03:00"}}


def test_a_named_network_carries_the_cluster_its_nat_and_its_webhook_rule(run: StackRunner) -> None:
    ranges = {"nodes": "10.1.0.0/24", "pods": "10.2.0.0/20", "services": "10.3.0.0/20"}
    cluster_config = {"name": "c", "network": "tpu-vpc", "subnetwork": "tpu-subnet", "ipRanges": ranges}
    plan = run({"tpu-stack:cluster": cluster_config})
    cluster = plan.one(CLUSTER, "c")["inputs"]
    assert (cluster["network"], cluster["subnetwork"]) == ("tpu-vpc", "tpu-subnet")
    assert plan.one("gcp:compute/router:Router", "c-router")["inputs"]["network"] == "tpu-vpc"
    assert plan.one(FIREWALL, "c-cp-webhooks")["inputs"]["network"] == "tpu-vpc"


def test_the_node_grants_belong_to_the_cluster_and_are_protected(plans: dict[str, Plan]) -> None:
    for member in plans["prod"].by_type("gcp:projects/iAMMember:IAMMember"):
        if member["name"].startswith("tpu-prod-nodes-"):
            assert (member["parent"], member["protect"]) == (GKE_CLUSTER, True), member["name"]
