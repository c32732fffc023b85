"""URN snapshots of the fixture stacks (tests/fixtures/stacks/): a resource whose URN changes is replaced.

Renaming a resource, changing its type or moving it under another parent changes its URN, and `pulumi up`
then replaces it: for a cluster or a TPU slice that is an outage and an hour of provisioning; for a bucket,
lost data. `tests/snapshots/urns-<stack>.txt` holds the URNs of each fixture stack, sorted, one per line, and
tests/test_safety.py compares the program against them (the users' own stack files change as a team edits them:
what a change of theirs replaces is the plan diff's to say, `make plan-diff`):
- a URN that vanished fails the test, unless an alias on the resource that replaces it carries it;
- a URN that appeared (a new resource) only warns: adding resources is routine, but the snapshot should be
  regenerated in the same change so that a later rename of the new resource is caught too.
To regenerate after a deliberate change: `python -m offline.urns --update` (or `make urns`).
`python -m offline.urns` alone prints the differences and exits 1 if any URN vanished.

The snapshots hold the URNs the Pulumi engine assigns, which differ from the mock monitor's (plan.json):
the engine leaves the root stack type out of top-level URNs and chains every ancestor's type below it
(`A$B$type`), where the mock prefixes `pulumi:pulumi:Stack` and keeps only the parent's last type. So a URN
in a failure message is the one to put in an alias. Aliases follow the engine's rules: an alias spec defaults
to the resource's name, type and parent, and children inherit their parent's aliases.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offline.engine import REPO, Plan, run_stack
from offline.stack_files import stack_files

FIXTURES = REPO / "tests" / "fixtures" / "stacks"
STACKS = tuple(stack_files(FIXTURES))
"""The stacks with a URN snapshot: the fixture stacks."""
SNAPSHOTS = REPO / "tests" / "snapshots"
ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
UPDATE_COMMAND = "python -m offline.urns --update"


class SnapshotOutdated(UserWarning):
    """New resources are not in the URN snapshot yet."""


def snapshot_path(stack: str) -> Path:
    return SNAPSHOTS / f"urns-{stack}.txt"


def read_snapshot(stack: str) -> list[str] | None:
    path = snapshot_path(stack)
    return [line for line in path.read_text().splitlines() if line.strip()] if path.exists() else None


def write_snapshot(stack: str, urns: list[str]) -> Path:
    path = snapshot_path(stack)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{urn}\n" for urn in sorted(urns)))
    return path


def _urn(stack: str, project: str, prefix: str, type_token: str, name: str) -> str:
    qualified = f"{prefix}${type_token}" if prefix else type_token
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


def _qualified_type(urn: str) -> str:
    """The type part of an engine URN; "" for the root stack (its children carry no prefix)."""
    parts = urn.split("::")
    qualified = parts[2] if len(parts) >= 4 else ""
    return "" if qualified == ROOT_STACK_TYPE else qualified.removeprefix(f"{ROOT_STACK_TYPE}$")


def engine_urn_of(plan: Plan) -> dict[str, str]:
    """The engine's URN of each resource of the plan, by the mock's: what `cluster.adopted.imports` and
    `pulumi state` commands name (components/adoption.py builds the same)."""
    resolver = _Resolver(plan)
    return {str(r["urn"]): resolver.current(str(r["urn"])) for r in plan.resources}


class _Resolver:
    """Engine URNs of a plan's resources, and every former URN their aliases carry."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.by_urn = {r["urn"]: r for r in plan.resources}
        self._current: dict[str, str] = {}
        self._former: dict[str, set[str]] = {}

    def current(self, mock_urn: str) -> str:
        """The URN the engine gives the resource registered as `mock_urn`."""
        if mock_urn not in self._current:
            resource = self.by_urn[mock_urn]
            prefix = _qualified_type(self.current(resource["parent"])) if resource["parent"] in self.by_urn else ""
            self._current[mock_urn] = _urn(
                self.plan.stack, self.plan.project, prefix, resource["type"], resource["name"]
            )
        return self._current[mock_urn]

    def known(self, mock_urn: str) -> set[str]:
        """The current engine URN of the resource and every former one its (or its ancestors') aliases carry."""
        if mock_urn not in self._former:
            resource = self.by_urn[mock_urn]
            urns = {self.current(mock_urn)}
            for prefix in self._prefixes(resource["parent"]):
                urns.add(_urn(self.plan.stack, self.plan.project, prefix, resource["type"], resource["name"]))
            for alias in resource.get("aliases") or []:
                urns |= self._alias_urns(resource, alias)
            self._former[mock_urn] = urns
        return self._former[mock_urn]

    def _prefixes(self, parent: str | None) -> set[str]:
        """Type prefixes a child of `parent` had: the parent's current one and those of its former URNs."""
        if not parent:
            return {""}
        if parent in self.by_urn:
            return {_qualified_type(u) for u in self.known(parent)}
        return {_qualified_type(parent)}

    def _alias_urns(self, resource: dict[str, Any], alias: dict[str, Any]) -> set[str]:
        if "urn" in alias:
            return {alias["urn"]}
        if alias.get("noParent"):
            prefixes = {""}
        elif alias.get("parentUrn"):
            prefixes = self._prefixes(alias["parentUrn"])
        else:
            prefixes = self._prefixes(resource["parent"])
        return {
            _urn(
                alias.get("stack") or self.plan.stack,
                alias.get("project") or self.plan.project,
                prefix,
                alias.get("type") or resource["type"],
                alias.get("name") or resource["name"],
            )
            for prefix in prefixes
        }


def engine_urns(plan: Plan) -> list[str]:
    """The plan's URNs as the Pulumi engine assigns them, sorted."""
    resolver = _Resolver(plan)
    return sorted(resolver.current(r["urn"]) for r in plan.resources)


CLUSTER_COMPONENT = "tpu-stack:index:GkeCluster"


CLUSTER = "gcp:container/cluster:Cluster"


def cluster_targets(plan: Plan, deployed: Collection[str] = ()) -> list[str]:
    """Engine URNs of every GkeCluster component and everything under it (cluster, system pool, node identity,
    subnetwork, NAT, firewall, the kubernetes provider), and of everything those depend on (the APIs, the stack's
    VPC): what a new stack creates first, so that the Helm charts, which the provider renders against a live cluster,
    have one when the rest of the stack is previewed. `--target` creates nothing outside the list, and the engine
    refuses a target that depends on a resource it would skip (pulumi/pulumi pkg/resource/deploy/step_generator.go,
    untargeted dependencies), so the list is closed under dependencies and parents.

    `deployed`: URNs the stack's state holds (`pulumi stack export`). A GkeCluster whose cluster is there is left
    out: a targeted `up` of it would apply whatever changed inside it ahead of the rest of the update, which is the
    whole stack's `up` to do. With every cluster deployed the list is empty."""
    by_urn = {r["urn"]: r for r in plan.resources}
    resolver = _Resolver(plan)
    state = set(deployed)

    def component_of(resource: dict[str, Any]) -> dict[str, Any] | None:
        while resource is not None:
            if resource["type"] == CLUSTER_COMPONENT:
                return resource
            resource = by_urn.get(resource.get("parent") or "")  # type: ignore[assignment]
        return None

    new_components = {
        component["urn"]
        for record in plan.resources
        if record["type"] == CLUSTER and not resolver.known(record["urn"]) & state
        and (component := component_of(record)) is not None
    }  # fmt: skip
    chosen = {r["urn"] for r in plan.resources if (component_of(r) or {}).get("urn") in new_components}
    todo = list(chosen)
    while todo:
        record = by_urn[todo.pop()]
        for needed in [*record.get("dependencies", []), record.get("parent")]:
            if needed in by_urn and needed not in chosen and by_urn[needed]["type"] != ROOT_STACK_TYPE:
                chosen.add(needed)
                todo.append(needed)
    return sorted(resolver.current(urn) for urn in chosen)


def state_urns(export: Path) -> set[str]:
    """The URNs of a `pulumi stack export` file (a stack with no deployment yet has none)."""
    data = json.loads(export.read_text())
    return {str(r["urn"]) for r in (data.get("deployment") or {}).get("resources") or []}


SHELL_UNSAFE = re.compile(r"[\s*?\[\]'\"\\]")
"""What the shell would do something with in an unquoted word: split it (whitespace; the default IFS), expand it as
a file name pattern (`*`, `?`, `[`), or keep it as a literal quote or escape. The README passes the targets through
an unquoted command substitution, where the shell splits and globs the words it prints and removes no quotes (bash
manual, "Command Substitution", "Word Splitting", "Quote Removal": only quotes in the original command are removed).
The engine's URNs are built from type tokens (letters, digits and `:/.$-`) and resource names, which the stack
derives from DNS-label names, so none holds these; a URN that did would be passed as something else, and is
refused."""


def target_flags(targets: list[str]) -> str:
    """`--target=<urn>` for each URN, for an unquoted `$(...)` on the `pulumi up` line: no quotes (the shell would
    hand them to the engine as part of the URN, and the engine refuses a target it cannot find: pulumi
    pkg/resource/deploy/deployment_executor.go checkTargets), and no URN the shell would split or glob."""
    unsafe = [urn for urn in targets if SHELL_UNSAFE.search(urn)]
    if unsafe:
        raise ValueError(f"URN(s) the shell would split or expand, pass them another way: {', '.join(unsafe)}")
    return " ".join(f"--target={urn}" for urn in targets)


@dataclass
class Drift:
    """How a plan's URNs differ from a snapshot."""

    stack: str
    vanished: list[str] = field(default_factory=list)
    """In the snapshot, gone from the plan, no alias carries them: `pulumi up` would replace these."""
    appeared: list[str] = field(default_factory=list)
    carried: dict[str, str] = field(default_factory=dict)
    """Former URN -> current URN of the resource whose alias carries it."""

    def message(self) -> str:
        lines = []
        if self.vanished:
            lines.append(
                f"{len(self.vanished)} URN(s) of stack {self.stack} vanished: `pulumi up` would delete these "
                "resources and create new ones:"
            )
            lines += [f"  - {urn}" for urn in self.vanished]
        if self.appeared:
            lines.append(f"{len(self.appeared)} URN(s) of stack {self.stack} are new (not in the snapshot):")
            lines += [f"  + {urn}" for urn in self.appeared]
        if self.carried:
            lines.append("Carried by aliases (no replacement):")
            lines += [f"  {old} -> {new}" for old, new in sorted(self.carried.items())]
        if self.vanished:
            lines.append(
                "If this is a rename, keep the resource: give it `aliases=[pulumi.Alias(name=<old name>)]` (type_= "
                "or parent= for a changed type or parent, or the old URN itself) in its ResourceOptions. If the "
                f"replacement is intended, update the snapshot: `{UPDATE_COMMAND}`."
            )
        elif self.appeared:
            lines.append(f"Add them to the snapshot in this change: `{UPDATE_COMMAND}`.")
        return "\n".join(lines)


def compare(plan: Plan, snapshot: list[str]) -> Drift:
    resolver = _Resolver(plan)
    current = {resolver.current(r["urn"]): r["urn"] for r in plan.resources}
    drift = Drift(plan.stack, appeared=sorted(set(current) - set(snapshot)))
    for old in sorted(set(snapshot) - set(current)):
        carrier = next((u for u, mock in current.items() if old in resolver.known(mock)), None)
        if carrier:
            drift.carried[old] = carrier
        else:
            drift.vanished.append(old)
    return drift


def check(plan: Plan) -> Drift:
    """Compare `plan` with its stack's snapshot; warns (SnapshotOutdated) when resources are new."""
    snapshot = read_snapshot(plan.stack)
    if snapshot is None:
        raise FileNotFoundError(f"no URN snapshot {snapshot_path(plan.stack)}; create it: `{UPDATE_COMMAND}`")
    drift = compare(plan, snapshot)
    if drift.appeared and not drift.vanished:
        warnings.warn(drift.message(), SnapshotOutdated, stacklevel=2)
    return drift


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offline.urns", description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the snapshots from the program")
    parser.add_argument(
        "--stack",
        action="append",
        help=f"only this stack (repeatable); snapshots are of the fixture stacks ({', '.join(STACKS)}), the cluster's "
        "targets of the stack's own Pulumi.<stack>.yaml",
    )
    parser.add_argument(
        "--cluster-targets",
        action="store_true",
        help="print `--target=<URN>` for the cluster's resources (first `pulumi up` of a new stack)",
    )
    parser.add_argument(
        "--cluster-urns",
        action="store_true",
        help="print the cluster's resource URNs one per line (the `target` input of the pulumi GitHub action)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        help="with --cluster-targets/--cluster-urns: the stack file (default: Pulumi.<stack>.yaml in the current "
        "directory, the file `pulumi` reads there)",
    )
    parser.add_argument(
        "--state",
        type=Path,
        help="with --cluster-targets/--cluster-urns: a `pulumi stack export` file; clusters it holds are left out",
    )
    args = parser.parse_args(argv)
    if args.cluster_targets or args.cluster_urns:
        if not args.stack or len(args.stack) != 1:
            parser.error("--cluster-targets and --cluster-urns need one --stack")
        (stack,) = args.stack
        config = args.config or Path.cwd() / f"Pulumi.{stack}.yaml"
        if not config.is_file():
            parser.error(f"no stack file {config}: run from the project's directory, or give --config")
        deployed = state_urns(args.state) if args.state else set()
        targets = cluster_targets(run_stack(stack, config_file=config, render_charts=False), deployed)
        if targets:
            print(target_flags(targets) if args.cluster_targets else "\n".join(targets))
        return 0
    unknown = sorted(set(args.stack or ()) - set(STACKS))
    if unknown:
        parser.error(f"no fixture stack {', '.join(unknown)}: snapshots are of {', '.join(STACKS)} ({FIXTURES})")
    vanished = False
    for stack in args.stack or STACKS:
        plan = run_stack(stack, config_file=FIXTURES / f"Pulumi.{stack}.yaml")
        if args.update:
            path = write_snapshot(stack, engine_urns(plan))
            print(f"Wrote {path} ({len(plan.resources)} URNs)")
            continue
        snapshot = read_snapshot(stack)
        if snapshot is None:
            print(f"{stack}: no snapshot; run `{UPDATE_COMMAND}`")
            vanished = True
            continue
        drift = compare(plan, snapshot)
        print(drift.message() or f"{stack}: {len(snapshot)} URNs, unchanged")
        vanished = vanished or bool(drift.vanished)
    return 1 if vanished else 0


if __name__ == "__main__":
    sys.exit(main())
