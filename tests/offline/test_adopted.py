"""The offline preview of an adopted stack: every existing resource imported (`= import`), none replaced, the
in-place changes of the first update, the charts' takeovers, all recorded in plan.json.

Each fixture cluster is adopted from its saved outputs (tests/fixtures/adopt/) and its stack file previewed with
`--existing`. The expected imports are written from the saved outputs by hand: what exists and the program declares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline import __main__ as cli
from tests.fixtures.adopt import ADOPTED_CLUSTERS, adopted

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
NAMESPACE = "kubernetes:core/v1:Namespace"
CQ = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
LQ = "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
RF = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
PC = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
PRIORITIES = {(PC, name) for name in ("very-low", "low", "medium", "high", "very-high")}
INSTALL_NAMESPACES = {(NAMESPACE, "kueue-system"), (NAMESPACE, "jobset-system")}


def _pools(location: str, cluster: str, *names: str) -> set[tuple[str, str]]:
    return {(NODE_POOL, f"projects/tpu-proj/locations/{location}/clusters/{cluster}/nodePools/{n}") for n in names}


EXPECTED_IMPORTS = {
    # The cluster, its four slice pools (not default-pool: outside the stack), the installs' namespaces, xpk's queue
    # objects and PriorityClasses (not dws-config, not Kubernetes' system-cluster-critical).
    "xpk-multislice": {(CLUSTER, "projects/tpu-proj/locations/us-east5/clusters/xpk-ms")}
    | _pools("us-east5", "xpk-ms", *(f"xpk-ms-np-{i}" for i in range(4)))
    | INSTALL_NAMESPACES
    | {(CQ, "cluster-queue"), (LQ, "default/multislice-queue"), (RF, "4xv5litepod-16")}
    | PRIORITIES,
    "xpk-flex": {(CLUSTER, "projects/tpu-proj/locations/us-east5/clusters/xpk-flex")}
    | _pools("us-east5", "xpk-flex", "xpk-flex-np-0", "xpk-flex-np-1")
    | INSTALL_NAMESPACES
    | {(CQ, "cluster-queue"), (LQ, "default/multislice-queue"), (RF, "2xv6e-16")}
    | PRIORITIES,
    # Cluster Toolkit's system pool is the stack's system pool.
    "toolkit-v6e": {(CLUSTER, "projects/tpu-proj/locations/us-central1/clusters/gke-tpu-v6e")}
    | _pools("us-central1", "gke-tpu-v6e", "system", "gke-tpu-v6e-pool-0", "gke-tpu-v6e-pool-1")
    | INSTALL_NAMESPACES
    | {(CQ, "cluster-queue"), (LQ, "default/user-queue"), (RF, "tpuv6e-flavor")}
    | PRIORITIES,
}


def _imported(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in plan["resources"] if r.get("importId")]


@pytest.mark.parametrize("name", ADOPTED_CLUSTERS)
def test_every_existing_resource_is_imported_and_none_replaced(name: str) -> None:
    found = adopted(name)
    imported = _imported(found.plan)
    assert {(r["type"], r["importId"]) for r in imported} == EXPECTED_IMPORTS[name]
    for resource in imported:
        judged = resource["import"]
        assert judged["existing"] and judged["id"] == resource["importId"], resource["name"]
        assert not [c for c in judged["changes"] if c["replaces"]], resource["name"]
    # Nothing the cluster has is created again: every other resource of the plan is new or a chart's object.
    assert found.plan["adoption"]["judged"] is True
    assert f"= {len(EXPECTED_IMPORTS[name])} to import" in found.preview
    assert "refused:" not in found.preview
    assert found.code == 0, found.preview  # no mandatory violation with the policy config adopt wrote


def test_an_xpk_stack_fails_its_preview_without_the_exceptions_adopt_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = adopted("xpk-multislice")
    args = [
        "preview",
        "--stack",
        "xpk-multislice",
        "--config",
        str(found.stack_file),
        "--existing",
        str(found.existing),
    ]
    assert cli.main([*args, "--out", str(tmp_path / "b"), "--policy-config", "policies/config.json"]) == 1
    assert "[mandatory] no-default-compute-service-account" in capsys.readouterr().out


def test_the_pack_sees_an_xpk_pools_kept_metadata_mode_and_needs_its_exception(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The engine resets each ignoreChanges path of the program's inputs to the imported state's value before the pack
    # sees them (step_generator.go continueStepsFromImport: processIgnoreChanges, then analyzeAll). xpk's pools report
    # no metadata mode (node-pools.json), so the kept `nodeConfig.workloadMetadataConfig` is removed from what the pack
    # sees: workload-identity finds no GKE_METADATA on each of the four slices, in both views.
    found = adopted("xpk-multislice")
    config = json.loads(found.policy_config.read_text())
    del config["workload-identity"]
    without = tmp_path / "policy-config.json"
    without.write_text(json.dumps(config))
    args = ["preview", "--stack", "xpk-multislice", "--config", str(found.stack_file)]
    args += ["--existing", str(found.existing), "--out", str(tmp_path / "b"), "--policy-config", str(without)]
    assert cli.main(args) == 1
    plan = json.loads((tmp_path / "b" / "plan.json").read_text())
    flagged = sorted(
        (v["urn"].rsplit("::", 1)[1], tuple(v["views"]))
        for v in plan["violations"]
        if v["level"] == "mandatory" and v["policy"] == "workload-identity"
    )
    assert flagged == [(f"xpk-ms-np-{i}", ("new", "deployed")) for i in range(4)]
    assert all("found None" in v["message"] for v in plan["violations"] if v["policy"] == "workload-identity"), plan[
        "violations"
    ]
    assert not [v for v in plan["violations"] if v["level"] == "mandatory" and v["policy"] != "workload-identity"]
    # With the exceptions adopt wrote, the same preview passes (test_every_existing_resource_is_imported_...).
    assert not [v for v in found.plan["violations"] if v["policy"] == "workload-identity"]
    assert found.code == 0


def test_the_kept_maintenance_policy_holds_toolkit_slices_upgrades() -> None:
    # Cluster Toolkit's cluster is on REGULAR with a daily window and a NO_MINOR_OR_NODE_UPGRADES exclusion
    # (toolkit-v6e/cluster.json); adopt keeps maintenancePolicy (cluster.adopted.keep), so the engine shows the
    # stack policy the imported window and exclusion (the update's outputs; step_generator.go AnalyzeResources), and
    # tpu-node-auto-upgrade has nothing to say about either slice. What remains: the resource labels the cluster and
    # its three pools keep (ghpc_* only, cluster.json / node-pools.json) lack the stack's managed-by, app, env.
    found = adopted("toolkit-v6e")
    assert "maintenancePolicy" in found.adoption.config["tpu-stack:cluster"]["adopted"]["keep"]
    remaining = sorted((v["policy"], v["level"], v["urn"].rsplit("::", 1)[1]) for v in found.plan["violations"])
    assert remaining == [
        ("required-labels", "advisory", name)
        for name in ("gke-tpu-v6e", "gke-tpu-v6e-pool-0", "gke-tpu-v6e-pool-1", "gke-tpu-v6e-system")
    ]
    # xpk's cluster (RAPID) has no maintenance policy to keep: each of its slices still gets the advisory.
    xpk = adopted("xpk-multislice")
    # And its cluster keeps resource labels without the stack's (cluster.adopted.keep: resourceLabels).
    advised = sorted((v["policy"], v["urn"].rsplit("::", 1)[1]) for v in xpk.plan["violations"])
    assert advised == [("required-labels", "xpk-ms")] + [("tpu-node-auto-upgrade", f"xpk-ms-np-{i}") for i in range(4)]
    assert {v["level"] for v in xpk.plan["violations"]} == {"advisory"}


def test_the_exceptions_name_each_adopted_default_account_pool_for_90_days() -> None:
    from datetime import UTC, datetime, timedelta

    found = adopted("xpk-multislice")
    config = json.loads(found.policy_config.read_text())
    # The team's own exceptions stay: the file is policies/config.json with the adopted pools added.
    team = json.loads(Path("policies/config.json").read_text())
    assert config["images-by-digest"] == team["images-by-digest"]
    entries = config["no-default-compute-service-account"]["exceptions"]
    day = (datetime.now(UTC).date() + timedelta(days=90)).isoformat()
    assert [(e["nodePool"], e["until"]) for e in entries] == [
        (f"projects/tpu-proj/locations/us-east5/clusters/xpk-ms/nodePools/xpk-ms-np-{i}", day) for i in range(4)
    ]
    assert all("Compute Engine default account" in e["reason"] and "xpk-ms" in e["reason"] for e in entries)
    # Cluster Toolkit's pools run as the blueprint's own account: nothing to excuse.
    toolkit = json.loads(adopted("toolkit-v6e").policy_config.read_text())
    assert "no-default-compute-service-account" not in toolkit


def test_a_new_pool_group_on_the_default_account_still_fails_with_the_exceptions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = adopted("xpk-multislice")

    def second_group(config: dict[str, Any]) -> None:
        group = {**config["tpu-stack:tpuPools"][0], "name": "more", "slices": 1, "accelerator": "v5litepod-8"}
        group["adopted"] = {"serviceAccount": "default", "oauthScopes": group["adopted"]["oauthScopes"]}
        config["tpu-stack:tpuPools"].append(group)

    path = _stack_with(found, tmp_path, second_group)
    args = ["preview", "--stack", "xpk-multislice", "--config", str(path), "--existing", str(found.existing)]
    code = cli.main([*args, "--out", str(tmp_path / "b"), "--policy-config", str(found.policy_config)])
    assert code == 1
    plan = json.loads((tmp_path / "b" / "plan.json").read_text())
    flagged = [v["urn"].rsplit("::", 1)[1] for v in plan["violations"] if v["level"] == "mandatory"]
    assert flagged == ["more-0"], flagged  # the new group's pool only: the adopted four keep their exceptions


@pytest.mark.parametrize("name", ADOPTED_CLUSTERS)
def test_the_preview_marks_each_import_and_lists_its_changes(name: str) -> None:
    found = adopted(name)
    cluster = next(r for r in _imported(found.plan) if r["type"] == CLUSTER)
    assert "  = container:Cluster" in found.preview  # the preview's short type (offline/report.py short_type)
    # tpu-stack's hardened defaults are in-place updates of the imported cluster: it turns off the public IP endpoint
    # (the kubeconfig uses the DNS endpoint). deletionProtection stays as the import reads it (true).
    changes = {c["path"]: (c["old"], c["new"]) for c in cluster["import"]["changes"]}
    assert changes["controlPlaneEndpointsConfig.ipEndpointsConfig.enabled"] == (True, False)
    assert "deletionProtection" not in changes
    assert "      ~ controlPlaneEndpointsConfig.ipEndpointsConfig.enabled: true -> false" in found.preview


def test_xpk_slices_keep_their_metadata_mode_and_upgrade_settings_as_found() -> None:
    # Turning on the GKE metadata server re-creates a pool's nodes, through its upgrade settings; the stack's
    # upgrade settings take the whole slice down at once. Both stay as found; each is an opt-in of the report.
    found = adopted("xpk-multislice")
    for pool in (r for r in _imported(found.plan) if r["type"] == NODE_POOL):
        paths = [c["path"] for c in pool["import"]["changes"]]
        assert not [p for p in paths if p.startswith(("nodeConfig.workloadMetadataConfig", "upgradeSettings"))], paths
    kept = found.adoption.config["tpu-stack:tpuPools"][0]["adopted"]["keep"]
    assert "nodeConfig.workloadMetadataConfig" in kept and "upgradeSettings" in kept
    opt_in = [line for line in found.report.splitlines() if line.startswith("  - ") and "opt in" in line]
    assert len(opt_in) == 2, opt_in
    assert "xpk-ms-np-0 .. xpk-ms-np-3" in opt_in[0] and "re-creates" in opt_in[0]
    # The real engine shows the pack the kept (old) mode (step_generator.go processIgnoreChanges before analyzeAll):
    # workload-identity gets a dated exception per kept pool too.
    policy = json.loads(found.policy_config.read_text())
    assert len(policy["workload-identity"]["exceptions"]) == 4


def test_kueue_objects_applied_over_as_they_are_change_nothing() -> None:
    # xpk's ClusterQueue as the API server serves it (v1beta2, its CRD's defaults filled in) is what the stack
    # declares: the apply changes nothing. A real preview still shows an update, since pulumi-kubernetes imports a
    # custom resource with apiVersion, kind and name only.
    found = adopted("xpk-multislice")
    queue = next(r for r in _imported(found.plan) if r["type"] == CQ)
    assert queue["import"]["changes"] == []
    assert queue["import"]["shown"] == ["spec"]


def test_the_flavor_gets_the_tpu_toleration_in_place_over_kubectls_fields() -> None:
    found = adopted("xpk-multislice")
    flavor = next(r for r in _imported(found.plan) if r["type"] == RF)
    [change] = flavor["import"]["changes"]
    assert change["path"] == "spec.tolerations" and change["old"] is None
    assert flavor["import"]["managers"] == ["kubectl-client-side-apply (Update)"]


def test_the_adopted_stacks_charts_render_in_a_new_stacks_preview() -> None:
    # The engine's import step reads the cluster before the rest of the preview, so its kubeconfig is known and the
    # charts render; a stack that creates its cluster cannot (README, first deployment).
    found = adopted("xpk-multislice")
    assert "cannot render before the cluster exists" not in found.preview


def test_plan_json_records_the_charts_takeovers_and_the_first_up() -> None:
    found = adopted("xpk-multislice")
    taken = {(r["inputs"]["kind"], r["name"]): r["takeover"] for r in found.plan["resources"] if "takeover" in r}
    # Kueue v0.17.1's controller: the chart's selector adds two labels to the one kustomize gave it.
    deployment = taken[("Deployment", "kueue-chart:kueue-system/kueue-controller-manager")]
    assert deployment["blocked"].startswith('spec.selector {"matchLabels": {"control-plane": "controller-manager"}}')
    assert "kubectl (Apply)" in deployment["managers"]
    crd = taken[("CustomResourceDefinition", "jobset-chart:jobsets.jobset.x-k8s.io")]
    assert crd == {"managers": ["kubectl (Apply)"], "blocked": None}
    adoption = found.plan["adoption"]
    assert adoption["firstUpEnvironment"] == {
        "PULUMI_K8S_UPSERT_EXISTING_OBJECTS": "true",
        "PULUMI_K8S_ENABLE_PATCH_FORCE": "true",
    }
    assert adoption["deleteAfter"] == ["Deployment jobset-system/jobset-controller-manager"]


def _stack_with(found: Any, tmp_path: Path, edit: Any) -> Path:
    data = yaml.safe_load(found.stack_file.read_text())
    edit(data["config"])
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_an_import_that_names_no_resource_is_one_config_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = adopted("xpk-multislice")

    def typo(config: dict[str, Any]) -> None:
        entry = config["tpu-stack:cluster"]["adopted"]["imports"][1]
        entry["urn"] = entry["urn"].replace("::jobset-namespace", "::jobset-namespac")

    path = _stack_with(found, tmp_path, typo)
    args = ["preview", "--stack", "xpk-multislice", "--config", str(path), "--out", str(tmp_path / "b"), "--quiet"]
    code = cli.main(args)
    assert code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: tpu-stack:cluster.adopted.imports[1]: the program declares no resource with URN "
        "urn:pulumi:xpk-multislice::tpu-stack::tpu-stack:index:JobSetInstall$kubernetes:core/v1:Namespace"
        "::jobset-namespac; fix the URN or remove the entry"
    ]


def test_a_replacement_of_an_imported_resource_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Without adopted.serviceAccount the program gives xpk's nodes the stack's node account, and a node pool's service
    # account is ForceNew (node_config.go): the engine refuses to replace a resource the program still imports.
    found = adopted("xpk-multislice")

    def drop_keep(config: dict[str, Any]) -> None:
        del config["tpu-stack:tpuPools"][0]["adopted"]["serviceAccount"]

    path = _stack_with(found, tmp_path, drop_keep)
    args = ["preview", "--stack", "xpk-multislice", "--config", str(path), "--existing", str(found.existing)]
    code = cli.main([*args, "--out", str(tmp_path / "b")])
    printed = capsys.readouterr()
    assert code == 1
    refused = [line for line in printed.err.splitlines() if line.startswith("refused:")]
    assert len(refused) == 4
    assert refused[0].startswith(
        "refused: xpk-ms-np-0 (gcp:container/nodePool:NodePool): nodeConfig.serviceAccount default -> "
        "xpk-ms-nodes@tpu-proj.iam.gserviceaccount.com would replace a resource the program imports"
    )
    assert "(replaces it: refused)" in printed.out
    plan = json.loads((tmp_path / "b" / "plan.json").read_text())
    pool = next(r for r in plan["resources"] if r["name"] == "xpk-ms-np-0")
    assert any(c["path"] == "nodeConfig.serviceAccount" and c["replaces"] for c in pool["import"]["changes"])


def test_without_saved_outputs_the_preview_still_shows_the_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = adopted("xpk-flex")
    args = ["preview", "--stack", "xpk-flex", "--config", str(found.stack_file), "--out", str(tmp_path)]
    cli.main(args)
    out = capsys.readouterr().out
    assert "  = container:NodePool" in out and "pass --existing DIR" in out
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["adoption"] == {"judged": False}
    assert not any("import" in r for r in plan["resources"])


KEPT_NETWORK = {
    # From each fixture's saved outputs (tests/fixtures/adopt/*/cluster.json, subnetwork.json), written out by hand:
    # network, subnetwork, the subnetwork's primary range, the cluster's pod and Service ranges, private nodes, DNS.
    "xpk-multislice": ("default", "default", "10.202.0.0/20", "10.36.0.0/14", "34.118.224.0/20", False, "kube-dns"),
    "xpk-flex": ("default", "default", "10.202.0.0/20", "10.40.0.0/14", "34.118.224.0/20", False, "kube-dns"),
    "toolkit-v6e": (
        "gke-tpu-v6e-net-0", "gke-tpu-v6e-sub-0", "192.168.0.0/18", "10.4.0.0/14", "10.0.32.0/20", True, "kube-dns"
    ),
}  # fmt: skip
NETWORK_TYPES = ("gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork", "gcp:compute/router:Router",
                 "gcp:compute/routerNat:RouterNat")  # fmt: skip


@pytest.mark.parametrize("name", ADOPTED_CLUSTERS)
def test_the_adopted_stack_keeps_the_network_ranges_nodes_and_dns_it_finds(name: str) -> None:
    found = adopted(name)
    cluster = found.adoption.config["tpu-stack:cluster"]
    ranges = cluster["ipRanges"]
    assert (cluster["network"], cluster["subnetwork"], ranges["nodes"], ranges["pods"], ranges["services"],
            cluster["privateNodes"], cluster["dns"]) == KEPT_NETWORK[name]  # fmt: skip
    # No VPC, subnetwork or NAT of the stack's own: the cluster's network and its egress stay as they are.
    assert not [r["name"] for r in found.plan["resources"] if r["type"] in NETWORK_TYPES]
    imported = next(r for r in _imported(found.plan) if r["type"] == CLUSTER)
    changed = {c["path"].split(".")[0] for c in imported["import"]["changes"]}
    assert not changed & {"network", "subnetwork", "ipAllocationPolicy", "privateClusterConfig", "networkingMode",
                          "defaultMaxPodsPerNode", "datapathProvider"}  # fmt: skip


@pytest.mark.parametrize(("name", "pods"), [("xpk-multislice", 15), ("xpk-flex", 15), ("toolkit-v6e", 110)])
def test_each_pool_keeps_its_max_pods_per_node(name: str, pods: int) -> None:
    # xpk 1.16.0 creates multi-host TPU pools with --max-pods-per-node 15; Cluster Toolkit's gke-node-pool sets none,
    # so GKE reports its default 110. maxPodsPerNode is ForceNew: the stack's 15 would replace the toolkit's slices.
    found = adopted(name)
    assert [p["maxPodsPerNode"] for p in found.adoption.config["tpu-stack:tpuPools"]] == [pods]
    for pool in (r for r in _imported(found.plan) if r["type"] == NODE_POOL):
        assert pool["inputs"]["maxPodsPerNode"] in (pods, 110), pool["name"]  # 110: Cluster Toolkit's system pool
        assert not [c for c in pool["import"]["changes"] if c["path"] == "maxPodsPerNode"], pool["name"]


def test_toolkit_private_nodes_keep_their_peering_range_and_their_network_egress() -> None:
    found = adopted("toolkit-v6e")
    cluster = found.adoption.config["tpu-stack:cluster"]
    assert cluster["controlPlane"] == {"masterIpv4Cidr": "172.16.0.32/28"}  # gke-cluster's master_ipv4_cidr_block
    assert cluster["adopted"]["existingNat"] is True
    # The webhook rule opens the charts' ports to the nodes the controllers run on: the adopted system pool's account.
    [rule] = [r for r in found.plan["resources"] if r["type"] == "gcp:compute/firewall:Firewall"]
    # gke-cluster's system pool runs as the account the blueprint `use`s: workload_service_account gke-wl-sa.
    assert rule["inputs"]["targetServiceAccounts"] == ["gke-wl-sa@tpu-proj.iam.gserviceaccount.com"]
    assert rule["inputs"]["sourceRanges"] == ["192.168.0.0/18", "10.4.0.0/14", "172.16.0.32/28"]


@pytest.mark.parametrize("name", ADOPTED_CLUSTERS)
def test_every_imported_google_resource_is_protected(name: str) -> None:
    # Whatever the stack's name (none of the fixtures' is prod): `pulumi import` protects by default, and so does adopt.
    found = adopted(name)
    google = [r for r in _imported(found.plan) if r["type"].startswith("gcp:")]
    assert {r["type"] for r in google} == {CLUSTER, NODE_POOL}
    assert [r["name"] for r in google if r["protect"] is not True] == []
    assert [r["name"] for r in google if r["retainOnDelete"]] == []
    # The preview says so: each imported pool's description line (under its row) ends in [protect].
    lines = found.preview.splitlines()
    for pool in (r["name"] for r in google if r["type"] == NODE_POOL):
        row = next(i for i, line in enumerate(lines) if line.startswith("  = container:NodePool") and pool in line)
        assert lines[row + 1].endswith("[protect]"), pool


def _stack_records(found: Any, edit: Any) -> list[dict[str, Any]]:
    from components.config import load
    from offline.engine import _engine_config, run_program

    data = yaml.safe_load(found.stack_file.read_text())["config"]
    edit(data)
    minor = load(_engine_config(data), stack="xpk-multislice").cluster.kubernetes_minor
    return run_program(data, stack="xpk-multislice", kubernetes_version=minor).resources


def test_destroying_an_adopted_stack_refuses_at_the_slices_until_unprotected() -> None:
    from offline.lifecycle import transition
    from tests.lifecycle.catalogue import CATALOGUE

    found = adopted("xpk-multislice")
    state = found.plan["resources"]
    destroyed = transition(state, [], CATALOGUE)
    refused = {s.name for s in destroyed.of("refuse")}
    assert {"xpk-ms", "xpk-ms-np-0", "xpk-ms-np-1", "xpk-ms-np-2", "xpk-ms-np-3"} <= refused
    assert not {"xpk-ms", "xpk-ms-np-0"} & {s.name for s in destroyed.of("delete")}

    # One slice let go on purpose: `pulumi state unprotect` of its URN, then slices 4 -> 3 and its import entry gone.
    def three_slices(config: dict[str, Any]) -> None:
        config["tpu-stack:tpuPools"][0]["slices"] = 3
        imports = config["tpu-stack:cluster"]["adopted"]["imports"]
        kept = [i for i in imports if not i["urn"].endswith("::xpk-ms-np-3")]
        config["tpu-stack:cluster"]["adopted"]["imports"] = kept

    smaller = _stack_records(found, three_slices)
    refused_first = transition(state, smaller, CATALOGUE)
    assert [s.name for s in refused_first.of("refuse")] == ["xpk-ms-np-3"]
    unprotected = [{**r, "protect": False} if r["name"] == "xpk-ms-np-3" else r for r in state]
    released = transition(unprotected, smaller, CATALOGUE)
    assert released.refused == [] and released.names("delete") == ["xpk-ms-np-3"]


def test_moving_slices_off_the_default_account_previews_clean(tmp_path: Path) -> None:
    """docs/adopt.md, Moving slices off the default account, step 1 on xpk's four reserved slices: the last one given
    back (unprotected first), the group drained, a new group of one slice on the stack's node account."""
    found = adopted("xpk-multislice")

    def step_one(config: dict[str, Any]) -> None:
        old = config["tpu-stack:tpuPools"][0]
        new = {k: v for k, v in old.items() if k not in ("adopted", "maxPodsPerNode")}
        new.update(name="xpk-ms-v2", slices=1, zoneUnlisted=True)
        old.update(slices=3, drain=True)
        config["tpu-stack:tpuPools"].append(new)
        gone = ("xpk-ms-np-3", "queues-resourceflavor-4xv5litepod-16")  # the slice, and the flavor the drain drops
        adopted_ = config["tpu-stack:cluster"]["adopted"]
        adopted_["imports"] = [i for i in adopted_["imports"] if i["urn"].rsplit("::", 1)[-1] not in gone]

    path = _stack_with(found, tmp_path, step_one)
    policy = json.loads(found.policy_config.read_text())
    entries = policy["no-default-compute-service-account"]["exceptions"]
    policy["no-default-compute-service-account"]["exceptions"] = [e for e in entries if "np-3" not in e["nodePool"]]
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    args = ["preview", "--stack", "xpk-multislice", "--config", str(path), "--existing", str(found.existing)]
    code = cli.main([*args, "--out", str(tmp_path / "b"), "--policy-config", str(tmp_path / "policy.json")])
    plan = json.loads((tmp_path / "b" / "plan.json").read_text())
    pools = {r["name"]: r for r in plan["resources"] if r["type"] == NODE_POOL}
    assert code == 0, [v["message"] for v in plan["violations"] if v["level"] == "mandatory"]
    assert sorted(pools) == ["xpk-ms-np-0", "xpk-ms-np-1", "xpk-ms-np-2", "xpk-ms-system", "xpk-ms-v2-0"]
    new = pools["xpk-ms-v2-0"]
    assert new["importId"] is None
    assert new["inputs"]["nodeConfig"]["serviceAccount"] == "xpk-ms-nodes@tpu-proj.iam.gserviceaccount.com"
    assert new["inputs"]["nodeConfig"]["reservationAffinity"]["values"] == ["tpu-res"]
    # The kept slices are still imported and replaced by nothing.
    assert all(pools[f"xpk-ms-np-{i}"]["import"]["existing"] for i in range(3))
    assert not [c for i in range(3) for c in pools[f"xpk-ms-np-{i}"]["import"]["changes"] if c["replaces"]]


def test_toolkit_slices_are_left_as_gke_node_pool_made_them() -> None:
    # gke-node-pool gives its pools GKE_METADATA and maxSurge 0 / maxUnavailable 1 (cluster-toolkit 1047080
    # modules/compute/gke-node-pool/main.tf:23-26,133-136,244-246): the first up changes neither on a running slice.
    found = adopted("toolkit-v6e")
    [pool] = found.adoption.config["tpu-stack:tpuPools"]
    assert "nodeConfig.workloadMetadataConfig" not in pool["adopted"]["keep"]
    assert not [f for f in found.adoption.findings if f.kind == "opt-in" and "GKE_METADATA" in f.line]
    for record in (r for r in _imported(found.plan) if r["type"] == NODE_POOL):
        paths = [c["path"] for c in record["import"]["changes"]]
        assert not [p for p in paths if p.startswith(("nodeConfig.workloadMetadataConfig", "upgradeSettings"))], (
            record["name"], paths)  # fmt: skip
    assert "workload-identity" not in json.loads(found.policy_config.read_text())


def test_toolkit_cpu_pool_is_named_and_left_outside_the_stack() -> None:
    # enable_pathways_for_tpus: true makes gke-cluster's cpu-np (n4-standard-64, 0..100 nodes; main.tf:525-575).
    found = adopted("toolkit-v6e")
    [line] = [f.line for f in found.adoption.findings if "cpu-np" in f.line]
    assert line.startswith("node pool cpu-np (n4-standard-64): not adopted")
    assert "neither updates nor deletes it" in line and "gcloud container node-pools" in line
    # Not in the program, so neither imported nor deleted: the engine never learns of it.
    assert not [r for r in found.plan["resources"] if r["type"] == NODE_POOL and r["name"] == "cpu-np"]
    assert "cpu-np" in found.report


def test_toolkit_system_pool_keeps_its_gvnic() -> None:
    # gke-cluster turns gVNIC on for its COS_CONTAINERD system pool (main.tf:484-486); the stack's system pool sets
    # none, and the first up must not take it off the nodes the controllers run on.
    found = adopted("toolkit-v6e")
    assert "nodeConfig.gvnic" in found.adoption.config["tpu-stack:cluster"]["adopted"]["systemPool"]["keep"]
    [system] = [r for r in _imported(found.plan) if r["type"] == NODE_POOL and r["inputs"]["name"] == "system"]
    assert not [c for c in system["import"]["changes"] if c["path"].startswith("nodeConfig.gvnic")]


def test_the_first_up_removes_no_label_cluster_toolkit_set() -> None:
    # Cluster Toolkit labels the cluster and every pool with ghpc_blueprint, ghpc_deployment (shared) and ghpc_module,
    # ghpc_role (per module: gke-cluster/scheduler on the cluster and its system pool, gke-node-pool/compute on the
    # TPU pools); its billing by deployment reads them. The provider updates labels in place (UpdateCluster
    # desiredResourceLabels; node_config.go UpdateNodePool ResourceLabels), but a label dropped is lost to billing.
    found = adopted("toolkit-v6e")
    assert found.adoption.config["tpu-stack:labels"] == {
        "ghpc_blueprint": "gke-tpu-v6e",
        "ghpc_deployment": "gke-tpu-v6e",
    }
    for resource in (r for r in _imported(found.plan) if r["type"] in (CLUSTER, NODE_POOL)):
        removed = [
            c["path"] for c in resource["import"]["changes"] if "resourceLabels" in c["path"] and c["new"] is None
        ]
        assert removed == [], resource["name"]


def test_xpks_autoscaling_profile_is_kept_as_found() -> None:
    # xpk creates the cluster with --autoscaling-profile=optimize-utilization (commands/cluster.py:1342). The stack
    # sets no cluster_autoscaling on a Standard cluster, and the block is Optional+Computed
    # (terraform-provider-google resource_container_cluster.go "cluster_autoscaling"), so the imported value stays.
    found = adopted("xpk-multislice")
    assert "clusterAutoscaling" in found.adoption.config["tpu-stack:cluster"]["adopted"]["keep"]
    cluster = next(r for r in _imported(found.plan) if r["type"] == CLUSTER)
    assert not [c for c in cluster["import"]["changes"] if c["path"].startswith("clusterAutoscaling")]
    assert "autoscaling profile OPTIMIZE_UTILIZATION kept" in found.report
