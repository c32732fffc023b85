"""The policy pack over whole stacks (design §5: every stack previews with zero mandatory violations) and the
preview CLI's policy report and exit codes (design §3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline import __main__ as cli
from offline import policy_check
from offline.engine import REPO, run_stack

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in REPO.glob("Pulumi.*.yaml"))


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_has_no_mandatory_violation(stack: str) -> None:
    plan = run_stack(stack)
    found = policy_check.evaluate(plan.resources, stack=stack)
    assert [v for v in found if v["level"] == "mandatory"] == []


def test_prod_protects_what_the_protection_policy_checks() -> None:
    """The protection policy must see prod's options; dropping `protect` is what it catches."""
    plan = run_stack("prod")
    unprotected = [{**r, "protect": False} for r in plan.resources]
    found = policy_check.evaluate(unprotected, stack="prod")
    mandatory = [v for v in found if v["level"] == "mandatory"]
    assert {(v["policy"], v["urn"].rsplit("::", 1)[1]) for v in mandatory} == {
        ("protected-stack-resources", "tpu-prod"),
        ("protected-stack-resources", "data-bucket"),
    }


def external_service_stack(tmp_path: Path) -> Path:
    """prod with Saxml's Service external: valid config (source ranges set), not always valid policy."""
    data: dict[str, Any] = yaml.safe_load((REPO / "Pulumi.prod.yaml").read_text())
    data["config"]["tpu-stack:saxml"]["service"] = {"external": True, "sourceRanges": ["203.0.113.0/24"]}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_preview_exits_1_and_reports_the_policy_the_resource_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack_file = external_service_stack(tmp_path)
    policy_config = tmp_path / "policy-config.json"
    policy_config.write_text(json.dumps({"no-open-load-balancer": {"allowedSourceRanges": ["10.0.0.0/8"]}}))
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

    # Without the policy config the range is narrow enough: the same stack passes.
    assert cli.main(argv) == 0
    assert "Policies: all passed" in capsys.readouterr().out


def test_a_bad_policy_config_is_exit_2_before_the_program_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy_config = tmp_path / "policy-config.json"
    policy_config.write_text(json.dumps({"no-such-policy": "mandatory"}))
    out_dir = tmp_path / "out"
    argv = ["preview", "--stack", "dev", "--out", str(out_dir), "--policy-config", str(policy_config)]
    assert cli.main(argv) == 2
    assert "error: policy config: policy config names unknown policies: no-such-policy" in capsys.readouterr().err
    assert not out_dir.exists()
