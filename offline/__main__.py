"""Command line: `python -m offline preview --stack dev`; exit 0 clean, 1 policy violation, 2 bad config.

`python -m offline workloads --stack dev` writes example workloads bound to the stack's queues.
`python -m offline roles --stack dev` prints the IAM roles the deploy and preview identities need.
`python -m offline diff --base DIR --head DIR` writes the pull request comment comparing two builds' plans.
This module only parses the command line: a preview loads the modules both of its runs need, then forks its
new-stack view here, so the two processes share what is loaded and run side by side.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from pathlib import Path
from typing import Any

from offline import parallel
from offline.vendor import REPO

EXIT_CONFIG = 2
SHARED_MODULES = (
    "offline.commands",
    "pulumi_gcp.compute",
    "pulumi_gcp.container",
    "pulumi_gcp.monitoring",
    "pulumi_gcp.organizations",
    "pulumi_gcp.projects",
    "pulumi_gcp.serviceaccount",
    "pulumi_gcp.storage",
    "pulumi_kubernetes.apiextensions",
    "pulumi_kubernetes.apps.v1",
    "pulumi_kubernetes.core.v1",
    "pulumi_kubernetes.helm.v4",
    "pulumi_kubernetes.meta.v1",
    "pulumi_kubernetes.networking.v1",
    "pulumi_kubernetes.rbac.v1",
    "pulumi_kubernetes.scheduling.v1",
)
"""What a preview's two runs both load: the preview itself and the typed SDK modules the stacks' programs use. The
SDKs load a module on its first use; loaded before the fork, these are loaded once instead of once per process, and
they are most of a preview's start-up (pulumi_gcp.compute, most of a second, since every stack declares a network).
Only a matter of time: a module missing here loads when the program uses it."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m offline", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    preview = commands.add_parser("preview", help="run the program offline and report the plan and policies")
    preview.add_argument("--stack", required=True, help="stack name; reads Pulumi.<stack>.yaml")
    preview.add_argument("--config", type=Path, help="stack config file to use instead of Pulumi.<stack>.yaml")
    preview.add_argument("--out", type=Path, help="output folder (default build/<stack>)")
    preview.add_argument("--quiet", action="store_true", help="print only the policy report")
    preview.add_argument("--verbose", action="store_true", help="list every object a chart renders, not counts")
    preview.add_argument(
        "--existing",
        type=Path,
        metavar="DIR",
        help="saved outputs of the cluster an adopted stack imports (`tpu-stack adopt` writes adopt/STACK/existing): "
        "judge each import and the charts' first update against them",
    )
    preview.add_argument(
        "--policy-config",
        type=Path,
        help="policy pack config JSON (the format of `pulumi preview --policy-pack-config`)",
    )
    diff = commands.add_parser("diff", help="compare two builds' plans as one Markdown pull request comment")
    diff.add_argument("--base", type=Path, required=True, help="build folder of the base (<stack>/plan.json each)")
    diff.add_argument("--head", type=Path, required=True, help="build folder of the pull request")
    diff.add_argument("--out", type=Path, help="Markdown file to write (default: standard output)")
    diff.add_argument("--base-label", help="how the comment names the base (its commit)")
    diff.add_argument("--head-label", help="how the comment names the head (its commit)")
    for side in ("base", "head"):
        diff.add_argument(
            f"--{side}-stacks",
            type=Path,
            help=f"the {side}'s project folder: a stack with a Pulumi.<stack>.yaml but no plan failed its preview",
        )
    roles = commands.add_parser("roles", help="print the IAM roles the identities running pulumi need")
    roles.add_argument("--stack", required=True, help="stack name; reads Pulumi.<stack>.yaml")
    roles.add_argument("--config", type=Path, help="stack config file to use instead of Pulumi.<stack>.yaml")
    jobs = commands.add_parser("workloads", help="write example Jobs and JobSets bound to the stack's queues")
    jobs.add_argument("--stack", required=True, help="stack name; reads Pulumi.<stack>.yaml")
    jobs.add_argument("--config", type=Path, help="stack config file to use instead of Pulumi.<stack>.yaml")
    jobs.add_argument("--out", type=Path, help="output folder (default build/<stack>); files go to its workloads/")
    return parser


def _new_stack_view(args: argparse.Namespace) -> Any:
    from offline import commands

    pack_config = commands.read_policy_config(args.policy_config)
    return commands.new_stack_findings(args.stack, args.config, pack_config, args.existing)


def _load_shared_modules() -> None:
    # Loading creates ~300k objects that live as long as the process: cyclic collection while they load only re-scans
    # them (a quarter of the loading), and frozen afterwards no later collection, in either process, scans them again.
    gc.disable()
    try:
        for name in SHARED_MODULES:
            module = importlib.import_module(name)
            getattr(module, "__all__", None)  # a lazily imported SDK module loads on its first attribute access
    finally:
        gc.freeze()
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "diff":
        from offline import plandiff  # reads two plan.json files: no program run, no SDK

        return plandiff.main(args)
    if args.config is None and not (REPO / f"Pulumi.{args.stack}.yaml").exists():
        print(f"error: no Pulumi.{args.stack}.yaml; pass --config FILE or create the stack file", file=sys.stderr)
        return EXIT_CONFIG
    if args.config is not None and not args.config.is_file():
        print(f"error: --config {args.config}: no such file; give the path of a stack file", file=sys.stderr)
        return EXIT_CONFIG
    if args.command == "preview":
        _load_shared_modules()  # before the fork, so the child shares them (it starts no thread)
    new_stack = parallel.Background(lambda: _new_stack_view(args)) if args.command == "preview" else None
    from offline import commands

    return commands.run(args, new_stack)


if __name__ == "__main__":
    code = main()
    # Everything still alive is freed by the exit itself; without this, interpreter teardown runs full
    # collections over the SDK's objects, about 0.3 s of a 0.7 s preview.
    gc.freeze()
    sys.exit(code)
