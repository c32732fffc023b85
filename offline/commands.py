"""The offline commands behind `python -m offline`: preview (plan, policy report, manifests) and workloads.

`offline/__main__.py` parses the command line, loads this module and the SDK modules every program uses, then
forks the new-stack view, so both processes share what is loaded.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from pulumi import RunError

from components import workloads
from components.config import ConfigError, StackConfig, load
from offline import adopted, charts, engine, helm, imports, parallel, policy_check, report, summary
from offline.engine import REPO, DuplicateUrn, Plan, run_stack
from offline.imports import ExistingError

EXIT_OK, EXIT_VIOLATION, EXIT_CONFIG = 0, 1, 2
NewStackFindings = tuple[list[dict[str, Any]], list[str]]
"""The new-stack view's violations, and the charts it cannot render."""


def preview(
    stack: str,
    config_file: Path | None,
    out: Path | None,
    quiet: bool,
    policy_config: Path | None = None,
    new_stack: parallel.Background[NewStackFindings] | None = None,
    verbose: bool = False,
    existing: Path | None = None,
) -> int:
    """Capacity and queues first, then the resources by component, the outputs, an adopted stack's first update, and
    the policy report last."""
    plan = evaluate(stack, config_file, policy_config, new_stack, existing)
    refused = adopted.judge(plan, stack_config(stack, config_file), existing)
    if not quiet:
        print(report.render_plan(plan, verbose=verbose))
        print()
        print(report.render_outputs(plan))
        print()
        if plan.adoption:
            print(adopted.render(plan, stack))
            print()
    print(report.render_violations(plan))
    for line in refused:
        print(f"refused: {line}", file=sys.stderr)
    out_dir = out or REPO / "build" / stack
    report.write(plan, out_dir)
    print(f"Wrote plan.json, manifests/ and graph.mmd to {out_dir}/")
    failed = refused or any(v["level"] == "mandatory" for v in plan.violations)
    return EXIT_VIOLATION if failed else EXIT_OK


def print_roles(stack: str, config_file: Path | None) -> int:
    """The roles of the deploy and preview identities, from the types the stack declares (offline/roles.py)."""
    from offline import roles

    plan = run_stack(stack, config_file=config_file, render_charts=False)
    try:
        print(roles.render(stack, plan.resources))
    except roles.UnknownType as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return EXIT_CONFIG
    return EXIT_OK


def stack_config(stack: str, config_file: Path | None) -> StackConfig:
    """The validated config of a stack file, read as the engine passes it to the program."""
    path = config_file or REPO / f"Pulumi.{stack}.yaml"
    written: dict[str, str] = {}
    config = engine.read_stack_file(path, written)
    return load(engine._engine_config(config), stack=stack, written=written)


def write_workloads(stack: str, config_file: Path | None, out: Path | None) -> int:
    """One YAML file per workload in <out>/workloads/ (old files there are removed first)."""
    found = workloads.workloads(stack_config(stack, config_file).manager_queues)  # a manager's: its workers' pools
    out_dir = (out or REPO / "build" / stack) / "workloads"
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.yaml"):
        old.unlink()
    for workload in found:
        (out_dir / f"{workload.name}.yaml").write_text(yaml.safe_dump_all(workload.objects, sort_keys=False))
        queue = f"{workload.queue.namespace}/{workload.queue.local_queue}"
        print(f"  {workload.name}.yaml: {workload.slices} slice(s) of {workload.pool} via {queue}")
    print(f"Wrote {len(found)} workload(s) to {out_dir}/; submit one with `kubectl create -f <file>`")
    return EXIT_OK


def read_policy_config(path: Path | None) -> dict[str, Any]:
    """The policy pack config file (JSON, as `pulumi preview --policy-pack-config` reads); {} without one."""
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise policy_check.PolicyConfigError(f"{path}: {error}") from None
    if not isinstance(data, dict):
        raise policy_check.PolicyConfigError(f"{path}: expected a JSON object of policy names")
    return data


def imported_olds(
    resources: list[dict[str, Any]], stack: str, config_file: Path | None, existing: Path | None
) -> dict[str, dict[str, Any]]:
    """URN -> what the import of each resource the program imports reads, from the saved outputs (`--existing`):
    the old state the engine resets ignoreChanges paths to before the pack sees them. {} without saved outputs."""
    if existing is None or not any(r.get("importId") for r in resources):
        return {}
    project = stack_config(stack, config_file).project
    return imports.imported_inputs(resources, imports.read_existing(existing), project)


def new_stack_findings(
    stack: str, config_file: Path | None, pack_config: dict[str, Any], existing: Path | None = None
) -> NewStackFindings:
    """The new-stack view: the program run as a brand-new stack's preview sees it (what the cloud computes is
    unknown), the pack over it, and the charts that cannot render before the cluster exists."""
    new_stack = run_stack(stack, config_file=config_file, known_outputs=False)
    found = pack_findings(new_stack, policy_check.NEW_STACK, config_file, pack_config, existing=existing)
    return found, charts.unrenderable(new_stack.resources)


def pack_findings(
    plan: Plan,
    view: policy_check.View,
    config_file: Path | None,
    pack_config: dict[str, Any],
    existing: Path | None = None,
) -> list[dict[str, Any]]:
    """The pack over one run of the program, as the real engine hands it in `view` (an import's old state from
    `existing`)."""
    return policy_check.evaluate(
        plan.resources,
        stack=plan.stack,
        config=pack_config,
        rules=policy_check.load_rules(),
        view=view,
        stack_config=plan.config,
        olds=imported_olds(plan.resources, plan.stack, config_file, existing),
    )


def evaluate(
    stack: str,
    config_file: Path | None,
    policy_config: Path | None = None,
    new_stack: parallel.Background[NewStackFindings] | None = None,
    existing: Path | None = None,
) -> Plan:
    """Run the program (as deployed, and as a new stack) and the policy pack in both real-engine views.

    The new-stack view runs beside the deployed one (`new_stack`, started by the CLI in a forked child;
    offline/parallel.py), or inline here when no one started it. `existing`: an adopted stack's saved outputs, the
    old state of each import (its kept fields are what the pack sees).
    """
    pack_config = read_policy_config(policy_config)
    policy_check.settings(
        policy_check.load_rules().POLICIES, pack_config
    )  # a bad policy config fails before the program runs
    if new_stack is None:
        new_stack = parallel.Background(lambda: new_stack_findings(stack, config_file, pack_config, existing))
    try:
        plan = run_stack(stack, config_file=config_file)
        # The run leaves ~100k SDK objects behind; a cyclic collection now would re-scan them all (80 ms) for
        # nothing, so the policies run with collection paused, as the program did.
        collecting = gc.isenabled()
        gc.disable()
        try:
            deployed = pack_findings(plan, policy_check.DEPLOYED, config_file, pack_config, existing)
        finally:
            if collecting:
                gc.enable()
    except BaseException:
        new_stack.cancel()
        raise
    new_found, plan.unrendered_in_new_stack = new_stack.result()
    plan.violations = policy_check.merge({policy_check.NEW_STACK.name: new_found, policy_check.DEPLOYED.name: deployed})
    plan.summary = summary.from_outputs(plan.outputs)
    return plan


def run(args: argparse.Namespace, new_stack: parallel.Background[NewStackFindings] | None = None) -> int:
    """Run the parsed command; config, chart and policy-config errors and what the program refuses as it runs are
    one `error:` line each, exit 2."""
    try:
        if args.command == "workloads":
            return write_workloads(args.stack, args.config, args.out)
        if args.command == "roles":
            return print_roles(args.stack, args.config)
        return preview(
            args.stack, args.config, args.out, args.quiet, args.policy_config, new_stack, args.verbose, args.existing
        )
    except policy_check.PolicyConfigError as error:
        print(f"error: policy config: {error}", file=sys.stderr)
        return EXIT_CONFIG
    except (charts.ChartError, helm.HelmMissing, ExistingError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    except DuplicateUrn as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    except ConfigError as error:
        for line in error.lines:
            print(f"error: {line}", file=sys.stderr)
        print(f"{len(error.lines)} config error(s); nothing was registered.", file=sys.stderr)
        return EXIT_CONFIG
    except RunError as error:  # after ConfigError, a RunError of its own
        # What the program refuses as it runs (a release channel's version below cluster.minMasterVersion): the real
        # engine prints a RunError's message alone, without a stack trace (pulumi/errors.py, RunError).
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    finally:
        if new_stack is not None:
            new_stack.cancel()  # no-op once its result was taken
