"""What an import gives the first `pulumi up`, modelled from the providers' sources (offline/imports.py): expectations
written by hand from pulumi-kubernetes provider.go Read/Diff and the Google provider's flatteners."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offline import imports

CQ = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
NS = "kubernetes:core/v1:Namespace"
LIVE_CQ = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {
        "name": "cluster-queue",
        "uid": "u1",
        "resourceVersion": "9",
        "labels": {"app.kubernetes.io/name": "q"},
        "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update"}],
        "annotations": {imports.LAST_APPLIED: "{}"},
    },
    "spec": {"queueingStrategy": "BestEffortFIFO", "namespaceSelector": {}},
    "status": {"pendingWorkloads": 3},
}


def test_a_custom_resource_is_imported_with_apiversion_kind_and_name_only() -> None:
    # provider.go Read with readFromCluster: inputs are the schema's input properties of the kind, and the schema
    # has no Kueue kind, so only what the old inputs held (apiVersion, kind, metadata.name) survives the pruning.
    assert imports.kubernetes_inputs(CQ, LIVE_CQ) == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cluster-queue"},
    }


def test_a_schema_kind_is_imported_as_it_lives_without_what_the_server_writes() -> None:
    live = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "kueue-system",
            "uid": "u",
            "resourceVersion": "1",
            "creationTimestamp": "t",
            "managedFields": [],
            "labels": {"kubernetes.io/metadata.name": "kueue-system"},
            "annotations": {imports.LAST_APPLIED: "{}", "team": "ml"},
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
    assert imports.kubernetes_inputs(NS, live) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "kueue-system",
            "labels": {"kubernetes.io/metadata.name": "kueue-system"},
            "annotations": {"team": "ml"},
        },
        "spec": {"finalizers": ["kubernetes"]},
    }


def test_the_apply_changes_only_what_the_program_sets_otherwise() -> None:
    program = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cluster-queue", "labels": {"app.kubernetes.io/name": "q", "team": "ml"}},
        "spec": {"queueingStrategy": "StrictFIFO", "namespaceSelector": {}},
    }
    changes = imports.kubernetes_changes(program, LIVE_CQ)
    assert [(c.path, c.old, c.new, c.replaces) for c in changes] == [
        ("metadata.labels.team", None, "ml", False),
        ("spec.queueingStrategy", "BestEffortFIFO", "StrictFIFO", False),
    ]


def test_label_keys_with_dots_and_slashes_are_one_path_part() -> None:
    program = {"metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "other"}}}
    [change] = imports.kubernetes_changes(program, LIVE_CQ)
    assert (change.path, change.old, change.new) == ('metadata.labels["app.kubernetes.io/name"]', "q", "other")


def test_equal_node_labels_with_dots_are_no_change_on_a_node_pool() -> None:
    record = {"inputs": {"nodeConfig": {"labels": {"cloud.google.com/gke-nodepool-group": "a"}}}}
    state = {"nodeConfig": {"labels": {"cloud.google.com/gke-nodepool-group": "a"}}}
    assert imports.changes(record, state, ()) == []


def test_a_changed_node_label_with_dots_is_a_change() -> None:
    record = {"inputs": {"nodeConfig": {"labels": {"cloud.google.com/gke-nodepool-group": "b"}}}}
    state = {"nodeConfig": {"labels": {"cloud.google.com/gke-nodepool-group": "a"}}}
    [change] = imports.changes(record, state, ())
    assert change.path == 'nodeConfig.labels["cloud.google.com/gke-nodepool-group"]'
    assert (change.old, change.new) == ("a", "b")


def test_the_preview_shows_what_a_merge_patch_of_the_imported_inputs_sets_or_removes() -> None:
    old = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"finalizers": ["kubernetes"]}}
    new = {"metadata": {"labels": {"a": "1"}}}
    assert imports.merge_patch_paths(old, new) == ["metadata.labels.b", "spec"]


def test_a_saved_secret_is_never_read(tmp_path: Path) -> None:
    (tmp_path / "cluster.json").write_text(json.dumps({"name": "c", "location": "us-east5"}))
    listed = {
        "items": [
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "c2VjcmV0"}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}},
        ]
    }
    (tmp_path / "objects.json").write_text(json.dumps(listed))
    existing = imports.read_existing(tmp_path)
    assert [o["kind"] for o in existing.objects] == ["Namespace"]
    assert existing.node_pools == []


@pytest.mark.parametrize(
    ("files", "line"),
    [
        ({}, "cluster.json: missing; save it with `gcloud container clusters describe CLUSTER --location LOCATION"),
        ({"cluster.json": "{"}, "cluster.json: not JSON"),
        ({"cluster.json": '{"name": "c"}'}, "cluster.json: not a GKE cluster (no name or location)"),
        ({"cluster.json": '{"name": "c", "location": "l"}', "k.json": "[]"},
         "k.json: not `kubectl get -o json` output (no items)"),
        ({"cluster.json": '{"name": "c", "location": "l"}', "subnetwork.json": '{"name": "s"}'},
         "subnetwork.json: not a Compute Engine subnetwork (no ipCidrRange)"),
    ],
)  # fmt: skip
def test_unreadable_saved_outputs_are_one_line(tmp_path: Path, files: dict[str, str], line: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(imports.ExistingError) as error:
        imports.read_existing(tmp_path)
    assert str(error.value).startswith(f"{tmp_path}/{line}") and "\n" not in str(error.value)


def test_an_import_id_finds_the_object_it_names() -> None:
    existing = imports.Existing(
        {"name": "c", "location": "us-east5", "selfLink": "https://container.googleapis.com/v1/projects/p/locations/x"},
        [{"name": "np-0"}],
        [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "d"}}],
    )
    assert existing.project == "p"
    assert existing.find(imports.NODE_POOL, "projects/p/locations/us-east5/clusters/c/nodePools/np-0", "p") == {
        "name": "np-0"
    }
    assert existing.find(imports.NODE_POOL, "projects/p/locations/us-east5/clusters/other/nodePools/np-0", "p") is None
    assert existing.find("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue", "d/q", "p") is not None
    assert existing.find("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue", "q", "p") is None


def test_an_import_entry_naming_no_resource_of_the_program_is_named() -> None:
    urn = f"urn:pulumi:dev::tpu-stack::tpu-stack:index:KueueInstall${NS}::kueue-namespace"
    other = f"urn:pulumi:dev::tpu-stack::tpu-stack:index:JobSetInstall${NS}::kueue-namespace"
    entries = [{"urn": urn, "id": "kueue-system"}, {"urn": other, "id": "y"}]
    assert imports.unmatched(entries, {urn}) == [
        f"tpu-stack:cluster.adopted.imports[1]: the program declares no resource with URN {other}; fix the URN or "
        "remove the entry"
    ]


GKE_CLUSTER = {
    # What `gcloud container clusters describe` prints of a VPC-peering private cluster (the GKE API's Cluster).
    "name": "c",
    "location": "us-central1",
    "network": "net",
    "subnetwork": "sub",
    "networkConfig": {
        "network": "projects/p/global/networks/net",
        "subnetwork": "projects/p/regions/us-central1/subnetworks/sub",
        "defaultEnablePrivateNodes": True,
        "dnsConfig": {"clusterDns": "CLOUD_DNS", "clusterDnsScope": "VPC_SCOPE", "clusterDnsDomain": "c-domain"},
    },
    "ipAllocationPolicy": {
        "useIpAliases": True,
        "clusterIpv4Cidr": "10.4.0.0/14",
        "clusterIpv4CidrBlock": "10.4.0.0/14",
        "clusterSecondaryRangeName": "pods",
        "servicesIpv4CidrBlock": "34.118.224.0/20",
    },
    "privateClusterConfig": {"enablePrivateNodes": True, "masterIpv4CidrBlock": "172.16.0.32/28",
                             "privateEndpoint": "172.16.0.34"},
    "defaultMaxPodsConstraint": {"maxPodsPerNode": "110"},
}  # fmt: skip


def test_an_imported_cluster_reads_back_its_ranges_private_nodes_and_dns_as_the_provider_flattens_them() -> None:
    # resource_container_cluster.go: flattenIPAllocationPolicy (networking_mode VPC_NATIVE, stack_type IPV4 when GKE
    # reports none), flattenPrivateClusterConfig (enable_private_nodes from networkConfig.defaultEnablePrivateNodes),
    # default_max_pods_per_node from defaultMaxPodsConstraint, flattenDnsConfig.
    state = imports.cluster_state(GKE_CLUSTER, project="p")
    assert state["networkingMode"] == "VPC_NATIVE"
    assert state["ipAllocationPolicy"] == {
        "stackType": "IPV4",
        "clusterIpv4CidrBlock": "10.4.0.0/14",
        "servicesIpv4CidrBlock": "34.118.224.0/20",
        "clusterSecondaryRangeName": "pods",
    }
    assert state["privateClusterConfig"] == {"enablePrivateNodes": True, "masterIpv4CidrBlock": "172.16.0.32/28"}
    assert state["defaultMaxPodsPerNode"] == 110
    assert state["dnsConfig"] == {
        "clusterDns": "CLOUD_DNS",
        "clusterDnsScope": "VPC_SCOPE",
        "clusterDnsDomain": "c-domain",
    }
    assert (state["network"], state["subnetwork"]) == ("net", "sub")


def test_a_range_given_as_its_size_is_no_change_and_another_range_replaces() -> None:
    # ip_allocation_policy.cluster_ipv4_cidr_block: ForceNew with tpgresource.CidrOrSizeDiffSuppress.
    state = imports.cluster_state(GKE_CLUSTER, project="p")
    same = {"inputs": {"ipAllocationPolicy": {"clusterIpv4CidrBlock": "/14", "servicesIpv4CidrBlock": "/20"}}}
    assert imports.changes(same, state, ("ipAllocationPolicy",)) == []
    other = {"inputs": {"ipAllocationPolicy": {"clusterIpv4CidrBlock": "10.0.0.0/14"}}}
    [change] = imports.changes(other, state, ("ipAllocationPolicy",))
    assert (change.path, change.old, change.new, change.replaces) == (
        "ipAllocationPolicy.clusterIpv4CidrBlock",
        "10.4.0.0/14",
        "10.0.0.0/14",
        True,
    )


def test_an_imported_pool_reads_back_its_upgrade_settings() -> None:
    # resource_container_node_pool.go flattenNodePoolUpgradeSettings: max_surge and max_unavailable as GKE reports
    # them (0 when it leaves one out), and the strategy.
    pool = {"name": "p", "upgradeSettings": {"maxSurge": 1, "strategy": "SURGE"}}
    state = imports.node_pool_state(pool, project="p", location="l", cluster="c")
    assert state["upgradeSettings"] == {"maxSurge": 1, "maxUnavailable": 0, "strategy": "SURGE"}
