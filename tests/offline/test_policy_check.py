"""The policy pack over whole stacks (design §5: every stack previews with zero mandatory violations) and the
preview CLI's policy report and exit codes (design §3)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from pulumi_policy import ResourceValidationArgs, ResourceValidationPolicy

from offline import __main__ as cli
from offline import policy_check
from offline.engine import run_stack
from tests.fixtures import FIXTURE_STACKS, stack_path, stack_plan

STACKS = FIXTURE_STACKS
TEAM_CONFIG: dict[str, Any] = json.loads(policy_check.TEAM_CONFIG.read_text())


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Stack -> view -> the resources that view evaluates: a new stack's run (computed values unknown) and the
    deployed stack's run (values known)."""
    return {
        stack: {"new": stack_plan(stack, known_outputs=False).resources, "deployed": stack_plan(stack).resources}
        for stack in STACKS
    }


@pytest.mark.parametrize("view", policy_check.VIEWS, ids=lambda view: view.name)
@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_has_no_mandatory_violation_in_each_real_engine_view(
    runs: dict[str, dict[str, list[dict[str, Any]]]], stack: str, view: policy_check.View
) -> None:
    found = policy_check.evaluate(runs[stack][view.name], stack=stack, view=view, config=TEAM_CONFIG)
    assert [v for v in found if v["level"] == "mandatory"] == []
    # Nothing is left unchecked for want of a value either: no "can't run policy during preview" notes.
    assert [v["message"] for v in found if "during preview" in v["message"]] == []


def test_a_new_stack_leaves_computed_values_unknown_and_its_charts_unrendered(
    runs: dict[str, dict[str, list[dict[str, Any]]]],
) -> None:
    new = {r["name"]: r for r in runs["dev"]["new"]}
    deployed = {r["name"]: r for r in runs["dev"]["deployed"]}
    assert new["flex-v6e"]["inputs"]["nodeConfig"]["serviceAccount"] == "[unknown]"
    assert (
        deployed["flex-v6e"]["inputs"]["nodeConfig"]["serviceAccount"]
        == "tpu-dev-nodes@tpu-stack-dev.iam.gserviceaccount.com"
    )
    assert not any(r.get("rendered") for r in runs["dev"]["new"])
    assert sum(1 for r in runs["dev"]["deployed"] if r.get("rendered")) == 99


def test_a_deployed_idle_flex_pool_reads_back_zero_nodes_and_zero_for_unset_counts(
    runs: dict[str, dict[str, list[dict[str, Any]]]],
) -> None:
    """dev's flex-v6e: the seed's --min-nodes=0 --max-nodes=1; GKE reports the idle pool at size 0."""
    (pool,) = [r for r in runs["dev"]["deployed"] if r["name"] == "flex-v6e" and r["type"] == policy_check.NODE_POOL]
    outputs = policy_check.DEPLOYED.stack_props(pool)
    assert outputs["nodeCount"] == 0
    assert outputs["autoscaling"] == {
        "minNodeCount": 0,
        "maxNodeCount": 1,
        "locationPolicy": "ANY",
        "totalMinNodeCount": 0,
        "totalMaxNodeCount": 0,
    }
    assert policy_check.NEW_STACK.stack_props(pool)["nodeCount"] == "[unknown]"


def test_the_chart_reaches_the_pack_without_props_in_both_views(
    runs: dict[str, dict[str, list[dict[str, Any]]]],
) -> None:
    seen: dict[str, list[Any]] = {}

    def record(args: ResourceValidationArgs, report: Any) -> None:
        if args.resource_type == "kubernetes:helm.sh/v4:Chart":
            seen.setdefault(args.name, []).append(dict(args.props))

    rules = ModuleType("recording_rules")
    rules.POLICIES = [ResourceValidationPolicy(name="record", description="records", validate=record)]  # type: ignore[attr-defined]
    for view in policy_check.VIEWS:
        policy_check.evaluate(runs["dev"][view.name], stack="dev", rules=rules, view=view)
    assert seen == {"jobset-chart": [{}, {}], "kueue-chart": [{}, {}]}


def test_prod_protects_what_the_protection_policy_checks() -> None:
    """The protection policy must see prod's options; dropping `protect` is what it catches."""
    plan = stack_plan("prod")
    unprotected = [{**r, "protect": False} for r in plan.resources]
    found = policy_check.evaluate(unprotected, stack="prod", config=TEAM_CONFIG)
    mandatory = [v for v in found if v["level"] == "mandatory"]
    assert {v["policy"] for v in mandatory} == {"protected-stack-resources"}
    analyzed = {r["urn"] for r in plan.resources if policy_check.analyzed(r)}
    assert {v["urn"] for v in mandatory} == analyzed
    assert len(mandatory) > 150  # every node pool, chart object, namespace, IAM binding, ...
    assert policy_check.evaluate(plan.resources, stack="prod", config=TEAM_CONFIG) == []


def external_service_stack(tmp_path: Path) -> Path:
    """prod with Saxml's Service external: valid config (source ranges set), not always valid policy."""
    data: dict[str, Any] = yaml.safe_load(stack_path("prod").read_text())
    data["config"]["tpu-stack:saxml"]["service"] = {"external": True, "sourceRanges": ["203.0.113.0/24"]}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_preview_exits_1_and_reports_the_policy_the_resource_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack_file = external_service_stack(tmp_path)
    policy_config = tmp_path / "policy-config.json"
    ranges = {"no-open-load-balancer": {"allowedSourceRanges": ["10.0.0.0/8"]}}
    policy_config.write_text(json.dumps({**TEAM_CONFIG, **ranges}))
    argv = ["preview", "--stack", "prod", "--config", str(stack_file), "--out", str(tmp_path), "--quiet"]
    assert cli.main([*argv, "--policy-config", str(policy_config)]) == 1
    out = capsys.readouterr().out
    assert "[mandatory] no-open-load-balancer: kubernetes:core/v1:Service saxml-http-lb" in out
    assert "203.0.113.0/24 is outside the allowed ranges (10.0.0.0/8)" in out
    assert "Policies: 1 mandatory" in out
    violations = json.loads((tmp_path / "plan.json").read_text())["violations"]
    mandatory = [v for v in violations if v["level"] == "mandatory"]
    assert [v["policy"] for v in mandatory] == ["no-open-load-balancer"]
    assert mandatory[0]["urn"].endswith("kubernetes:core/v1:Service::saxml-http-lb")

    # Without the allowed ranges the range is narrow enough: the same stack passes.
    assert cli.main([*argv, "--policy-config", str(policy_check.TEAM_CONFIG)]) == 0
    assert "Policies: all passed" in capsys.readouterr().out


def test_a_bad_policy_config_is_exit_2_before_the_program_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy_config = tmp_path / "policy-config.json"
    policy_config.write_text(json.dumps({"no-such-policy": "mandatory"}))
    out_dir = tmp_path / "out"
    argv = ["preview", "--stack", "dev", "--config", str(stack_path("dev")), "--out", str(out_dir)]
    assert cli.main([*argv, "--policy-config", str(policy_config)]) == 2
    assert "error: policy config: policy config names unknown policies: no-such-policy" in capsys.readouterr().err
    assert not out_dir.exists()


def digest_violations(stack: str, config: dict[str, Any] | None) -> list[str]:
    """Images the images-by-digest policy reports in the stack's deployed view (each once: prod runs the model
    server's image in one JobSet per slice)."""
    found = policy_check.evaluate(stack_plan(stack).resources, stack=stack, config=config)
    return sorted(
        {v["message"].split("image ")[1].split(" is not")[0] for v in found if v["policy"] == "images-by-digest"}
    )


def test_prod_runs_images_by_digest_or_by_a_reviewed_exception_that_is_still_used() -> None:
    """Without the team's config prod's tag-pinned images are violations; each exception names one of them, so
    one whose image got its digest (and is gone from prod) fails here until it is removed."""
    tagged = digest_violations("prod", None)
    assert tagged == [
        "'registry.k8s.io/jobset/jobset:v0.12.0'",
        "'registry.k8s.io/kueue/kueue:v0.19.2'",
        "'us-docker.pkg.dev/cloud-tpu-images/inference/sax-admin-server:v1.1.0'",
        "'us-docker.pkg.dev/cloud-tpu-images/inference/sax-http:v1.0.0'",
        "'us-docker.pkg.dev/cloud-tpu-images/inference/sax-model-server:v1.1.0'",
    ]
    excepted = sorted(f"'{e['image']}'" for e in TEAM_CONFIG["images-by-digest"]["exceptions"])
    assert excepted == tagged
    assert all(len(e["reason"]) > 40 for e in TEAM_CONFIG["images-by-digest"]["exceptions"])
    assert digest_violations("prod", TEAM_CONFIG) == []


def test_a_digest_in_the_stack_config_ends_its_exception(tmp_path: Path) -> None:
    data: dict[str, Any] = yaml.safe_load(stack_path("prod").read_text())
    digest = "sha256:" + "0" * 64  # any well-formed digest: the policy checks the form, the registry the content
    data["config"]["tpu-stack:charts"] = {**data["config"].get("tpu-stack:charts", {}), "kueueImageDigest": digest}
    stack_file = tmp_path / "Pulumi.prod.yaml"
    stack_file.write_text(yaml.safe_dump(data))
    resources = run_stack("prod", config_file=stack_file).resources
    images = {
        c["image"]
        for r in resources
        if r["type"] == "kubernetes:apps/v1:Deployment"
        for c in r["inputs"]["spec"]["template"]["spec"]["containers"]
    }
    assert f"registry.k8s.io/kueue/kueue:v0.19.2@{digest}" in images
    found = policy_check.evaluate(resources, stack="prod", config={})
    assert "registry.k8s.io/kueue/kueue" not in str([v for v in found if v["policy"] == "images-by-digest"])


@pytest.mark.parametrize("view", policy_check.VIEWS, ids=lambda view: view.name)
def test_no_fixture_stack_bills_idle_tpus_and_llm_did_before_its_pools_scaled_to_zero(
    runs: dict[str, dict[str, list[dict[str, Any]]]], view: policy_check.View
) -> None:
    """Issue 27, defect 8: `idle-tpu-capacity` finds nothing in the fixture stacks. llm's serving groups, fixed as
    they were, hold 2 ct6e-standard-8t VMs for a server of 1 replica (1 VM) and 3 v5e 4x4 slices (12 VMs) for a
    LeaderWorkerSet of 2 groups of 4 pods (8 VMs)."""
    for stack in STACKS:
        found = policy_check.evaluate(runs[stack][view.name], stack=stack, view=view, config=TEAM_CONFIG)
        assert [v for v in found if v["policy"] == "idle-tpu-capacity"] == [], stack
    from offline.engine import run_program
    from tests.fixtures import stack_data

    fixed = stack_data("llm")
    for pool in fixed["tpu-stack:tpuPools"]:
        del pool["scaleToZero"]
    plan = run_program(fixed, stack="llm", known_outputs=view.name == "deployed")
    found = policy_check.evaluate(plan.resources, stack="llm", view=view, config=TEAM_CONFIG)
    assert sorted(v["message"] for v in found if v["policy"] == "idle-tpu-capacity") == [
        "node pool(s) 'llm-v5e-0', 'llm-v5e-1', 'llm-v5e-2': 12 TPU VM(s) of fixed size, and what runs there at rest "
        "(LeaderWorkerSet 'llm-serving-llama-33-70b') holds 8: 4 billed while idle; set scaleToZero on the pool "
        "group (a spare slice is then created only while a rollout needs it)",
        "node pool(s) 'llm-v6e-0', 'llm-v6e-1': 2 TPU VM(s) of fixed size, and what runs there at rest (Deployment "
        "'llm-serving-llama-31-70b') holds 1: 1 billed while idle; set scaleToZero on the pool group (a spare slice "
        "is then created only while a rollout needs it)",
    ]


@pytest.mark.parametrize("view", policy_check.VIEWS, ids=lambda view: view.name)
def test_multiregion_workers_use_the_managers_buckets_across_regions_and_are_told_so(
    runs: dict[str, dict[str, list[dict[str, Any]]]], view: policy_check.View
) -> None:
    """Issue 27, defect 9: multiregion's workers in us-east5 and asia-northeast1 read and write the buckets of the
    manager's region, us-central1 (one datasets' bucket, one checkpoint bucket: MultiKueue copies the workload's spec
    unchanged to the worker, and a requeued workload may resume in the other region). The advisory names both; the
    other stacks keep their TPUs in their buckets' region."""
    for stack in STACKS:
        found = policy_check.evaluate(runs[stack][view.name], stack=stack, view=view, config=TEAM_CONFIG)
        advised = sorted(v["urn"].rsplit("::", 1)[-1] for v in found if v["policy"] == "bucket-in-tpu-region")
        assert advised == (["data-bucket", "data-checkpoints"] if stack == "multiregion" else []), stack
        for finding in (v for v in found if v["policy"] == "bucket-in-tpu-region"):
            assert finding["message"] == (
                "bucket in US-CENTRAL1 and TPU node pools in asia-northeast1 (japan-flex-v6e-0, japan-flex-v6e-1, "
                "japan-queued-v6e), us-east5 (east-flex-v6e-0, east-flex-v6e-1, east-queued-v6e): their pods read and "
                "write it across regions, billed as data transfer between regions and slower than in the region; keep "
                "a stack's TPUs in the bucket's region, or see docs/multiregion.md (Data and checkpoints)"
            )
