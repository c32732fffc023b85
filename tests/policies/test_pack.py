"""The pack as the Pulumi CLI sees it: PulumiPolicy.yaml, a __main__.py that only builds the pack, and the
policies' names and levels as the analyzer server reports and applies them."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from types import ModuleType

import yaml
from google.protobuf import struct_pb2
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel, Policy
from pulumi_policy.policy import _PolicyAnalyzerServicer

from offline.policy_check import POLICY_DIR

EXPECTED = {
    "flex-start-pool-shape": "mandatory",
    "queued-pool-shape": "mandatory",
    "tpu-topology-and-node-count": "mandatory",
    "multi-host-pool-single-zone": "mandatory",
    "workload-identity": "mandatory",
    "no-default-compute-service-account": "mandatory",
    "bucket-hardening": "mandatory",
    "least-privilege-iam": "mandatory",
    "no-open-load-balancer": "mandatory",
    "no-privileged-containers": "mandatory",
    "no-host-namespaces": "mandatory",
    "cluster-network": "mandatory",
    "default-deny-network-policy": "mandatory",
    "kueue-quota-within-chips": "mandatory",
    "kueue-ladder-order": "mandatory",
    "pinned-charts-and-images": "mandatory",
    "images-by-digest": "mandatory",
    "protected-stack-resources": "mandatory",
    "ironwood-workload-policy": "mandatory",
    "tpu-node-auto-upgrade": "advisory",
    "cluster-placement": "mandatory",
    "control-plane-not-public": "mandatory",
    "project-apis-stay-on": "mandatory",
    "kueue-topologies": "mandatory",
    "no-legacy-metadata-endpoints": "mandatory",
    "firewall-sources": "mandatory",
    "no-host-network-servers": "mandatory",
    "no-literal-secrets": "mandatory",
    "network-policy-sources": "mandatory",
    "rbac-least-privilege": "mandatory",
    "multikueue-credentials": "mandatory",
    "alert-policies": "mandatory",
    "kueue-ladder-cost-order": "mandatory",
    "bucket-in-tpu-region": "advisory",
    "idle-tpu-capacity": "advisory",
    "bucket-grants": "mandatory",
    "webhooks-fail-closed": "mandatory",
    "kueue-queue-namespaces": "mandatory",
    "queued-flavors-provision": "mandatory",
    "no-global-default-priority": "mandatory",
    "no-legacy-cluster-access": "mandatory",
    "required-labels": "advisory",
}


def test_pulumi_policy_yaml_runs_python_in_the_pack_virtualenv() -> None:
    manifest = yaml.safe_load((POLICY_DIR / "PulumiPolicy.yaml").read_text())
    assert manifest["runtime"] == {"name": "python", "options": {"virtualenv": "venv"}}
    assert manifest["description"]
    pins = (POLICY_DIR / "requirements.txt").read_text().split()
    assert "pulumi-policy==1.21.0" in pins


def test_main_only_sets_the_import_path_and_builds_the_pack() -> None:
    tree = ast.parse((POLICY_DIR / "__main__.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))]
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "PolicyPack"]
    assert len(calls) == 1
    keywords = {k.arg: k.value for k in calls[0].keywords}
    assert ast.literal_eval(keywords["name"]) == "tpu-stack"
    assert ast.unparse(keywords["policies"]) == "rules.POLICIES"
    top_level_calls = [n.value for n in tree.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)]
    assert [ast.unparse(call.func) for call in top_level_calls] == ["PolicyPack"]


def test_the_cli_entry_point_finds_rules_and_the_catalog_from_the_pack_folder() -> None:
    """Run __main__.py as the CLI would (cwd = the pack), with PolicyPack swapped for a recorder (no server)."""
    script = """
import json, runpy
import pulumi_policy
seen = {}
class Recorder:
    def __init__(self, **kwargs):
        seen.update(kwargs)
pulumi_policy.PolicyPack = Recorder
runpy.run_path("__main__.py", run_name="__main__")
print(json.dumps({"name": seen["name"], "level": seen["enforcement_level"].value,
                  "policies": {p.name: p.enforcement_level.value for p in seen["policies"]}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=POLICY_DIR, capture_output=True, text=True, env={}, check=False
    )
    assert done.returncode == 0, done.stderr
    pack = json.loads(done.stdout)
    assert pack == {"name": "tpu-stack", "level": "mandatory", "policies": EXPECTED}


def test_every_policy_has_a_kebab_case_name_a_description_and_its_level(rules: ModuleType) -> None:
    policies: list[Policy] = rules.POLICIES
    assert {p.name: p.enforcement_level.value for p in policies if p.enforcement_level} == EXPECTED
    assert len(policies) == len(EXPECTED)
    for policy in policies:
        assert policy.name.replace("-", "").isalpha() and policy.name.islower(), policy.name
        assert len(policy.description) > 20
        schema = policy.config_schema.properties if policy.config_schema else {}
        assert all("default" in spec and spec["type"] == "array" for spec in schema.values()), policy.name


def _servicer(rules: ModuleType) -> _PolicyAnalyzerServicer:
    return _PolicyAnalyzerServicer("tpu-stack", "0.0.1", rules.POLICIES, EnforcementLevel.MANDATORY)


def test_the_analyzer_server_reports_every_policy_and_its_config_schema(rules: ModuleType) -> None:
    info = _servicer(rules).GetAnalyzerInfo(None, None)
    assert info.name == "tpu-stack" and info.supportsConfig
    levels = {p.name: proto.EnforcementLevel.Name(p.enforcementLevel).lower() for p in info.policies}
    assert levels == EXPECTED
    schemas = {p.name: set(p.configSchema.properties) for p in info.policies if p.configSchema.properties}
    assert schemas == {
        "no-open-load-balancer": {"allowedSourceRanges"},
        "protected-stack-resources": {"protectedStacks"},
        "cluster-network": {"protectedStacks"},
        "required-labels": {"requiredLabels"},
        "images-by-digest": {"protectedStacks", "exceptions"},
        "workload-identity": {"exceptions"},
        "no-default-compute-service-account": {"exceptions"},
    }


def test_the_analyzer_server_runs_the_same_rules_on_a_wire_request(rules: ModuleType) -> None:
    """What `pulumi preview --policy-pack policies` sends for a resource, answered by the pack's own server."""
    properties = struct_pb2.Struct()
    properties.update({"uniformBucketLevelAccess": True, "publicAccessPrevention": "inherited", "labels": {}})
    request = proto.AnalyzeRequest(
        type="gcp:storage/bucket:Bucket",
        urn="urn:pulumi:prod::tpu-stack::gcp:storage/bucket:Bucket::data-bucket",
        name="data-bucket",
        properties=properties,
    )
    response = _servicer(rules).Analyze(request, None)
    found = {(d.policyName, proto.EnforcementLevel.Name(d.enforcementLevel)) for d in response.diagnostics}
    assert found == {
        ("bucket-hardening", "MANDATORY"),
        ("protected-stack-resources", "MANDATORY"),
        ("required-labels", "ADVISORY"),
    }
    hardening = [d.message for d in response.diagnostics if d.policyName == "bucket-hardening"]
    assert any("set publicAccessPrevention 'enforced'" in m for m in hardening)


def test_rules_only_assembles_the_policies_from_their_domain_modules() -> None:
    """Checks live in guardrails/<domain>.py; rules.py defines no check of its own, only POLICIES."""
    tree = ast.parse((POLICY_DIR / "rules.py").read_text())
    assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))]
    assigned = [n.targets[0] for n in tree.body if isinstance(n, ast.Assign)]
    assigned += [n.target for n in tree.body if isinstance(n, ast.AnnAssign)]
    assert sorted(ast.unparse(target) for target in assigned) == ["ADVISORY", "MANDATORY", "POLICIES"]
    imported = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
    assert {m for m in imported if m and m.startswith("guardrails")} == {
        "guardrails.access",
        "guardrails.capacity",
        "guardrails.cluster",
        "guardrails.gke",
        "guardrails.iam_storage",
        "guardrails.kubernetes",
        "guardrails.kueue",
        "guardrails.monitoring",
        "guardrails.props",
        "guardrails.workloads",
        "guardrails.workload_policy",
    }
