"""The deployed stack as its outputs tell it: teams and queues, flavors, pool groups, the config, the kubeconfig.

Outputs come from `pulumi stack output --json --show-secrets` (the selected stack, or `--stack NAME`), or from a
file saved from it (`--outputs FILE`; a plan.json of `python -m offline preview` works too, its kubeconfig is
hidden). The program exports them in __main__.py; `stackConfig` is the validated config model the stack was
deployed with, so `submit` builds the workload the way `make workloads` does for that stack.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from components.config.queues import QueueRef
from components.config.stack import StackConfig
from tpu_stack import kueue
from tpu_stack.why import PodsReadySettings, StackView

MULTIKUEUE_CHECK = "multikueue"
"""The AdmissionCheck on every ClusterQueue of a MultiKueue manager (components/kueue_queues.py MULTIKUEUE_CHECK)."""


def provisioning_check(pool: str) -> str:
    """The AdmissionCheck of a queued pool group (components/kueue_queues.py admission_check_name): the command
    does not import the components' Pulumi code, and tests/tpu_stack/test_cli.py checks the two agree."""
    return f"{pool}-provisioning"


HIDDEN = "[secret]"
"""How plan.json of the offline preview (and `pulumi stack output` without --show-secrets) shows a secret."""


class StackError(Exception):
    """The stack's outputs cannot be read or lack what a command needs; the message is one line."""


@dataclass(frozen=True)
class Stack:
    source: str
    """Where the outputs came from: `stack dev` or the file's path."""
    outputs: dict[str, Any]

    def _output(self, key: str) -> Any:
        if key not in self.outputs:
            raise StackError(f"{self.source} has no output {key!r}: run `pulumi up` with this version of the stack")
        return self.outputs[key]

    @cached_property
    def queues(self) -> dict[str, QueueRef]:
        """Team -> namespace, LocalQueue and ClusterQueue (output `queues`; `default` without teams)."""
        return {team: QueueRef.model_validate(ref) for team, ref in self._output("queues").items()}

    @property
    def flavors(self) -> dict[str, dict[str, str]]:
        return dict(self._output("flavors"))

    @property
    def pools(self) -> dict[str, dict[str, Any]]:
        """Pool group -> nodePools, machineType, topology, slices, vmsPerSlice, chips, provisioning (`tpuPools`)."""
        return dict(self._output("tpuPools"))

    def config(self) -> StackConfig:
        """The config model the stack was deployed with (output `stackConfig`). Its checks that depend on the
        date (a future reservation's lead time) ran at deployment and are not run again. A MultiKueue manager's is
        its queues' view: workloads are submitted to the manager for the workers' pool groups."""
        try:
            return StackConfig.model_validate(self._output("stackConfig")).manager_queues
        except ValidationError as error:
            raise StackError(f"{self.source}: output stackConfig is not this version's config: {error}") from None

    def kubeconfig(self) -> dict[str, Any]:
        value = self.outputs.get("kubeconfig")
        if value is None:
            raise StackError(f"{self.source} has no kubeconfig output; pass --kubeconfig FILE")
        if value == HIDDEN:
            raise StackError(
                f"{self.source} hides the kubeconfig: read the outputs with `pulumi stack output --json "
                "--show-secrets`, or pass --kubeconfig FILE"
            )
        loaded = yaml.safe_load(value) if isinstance(value, str) else value
        if not isinstance(loaded, dict):
            raise StackError(f"{self.source}: output kubeconfig is not a kubeconfig")
        return loaded

    @property
    def workers(self) -> dict[str, dict[str, Any]]:
        """MultiKueue worker -> region, clusterEndpoint and pool groups (output `multiKueue.workers`); empty unless
        the stack is a manager."""
        return dict((self.outputs.get("multiKueue") or {}).get("workers") or {})

    def view(self) -> StackView:
        """What `why` needs from the outputs (and the config: the keys a platform team changes, the admission checks
        and service accounts the stack declares)."""
        pools = self.pools
        keys: dict[str, str] = {}
        controllers: dict[str, str] = {}
        check_flavors: dict[str, str] = {}
        accounts: dict[str, str] = {}
        if "stackConfig" in self.outputs:
            config = self.config()
            for index, team in enumerate(config.queues.teams):
                keys[team.cluster_queue] = f"tpu-stack:queues.teams[{index}]"
            if config.is_manager:
                controllers[MULTIKUEUE_CHECK] = kueue.MULTIKUEUE_CONTROLLER
            for pool in config.queue_flavors:
                if pool.provisioning == "queued":
                    controllers[provisioning_check(pool.name)] = kueue.PROVISIONING_CONTROLLER
                    check_flavors[provisioning_check(pool.name)] = pool.name
            for field, index, ref, _role in config.bucket.grants:
                accounts[f"{ref.namespace}/{ref.service_account}"] = f"tpu-stack:bucket.{field}[{index}]"
        return StackView(
            flavors=self.flavors,
            node_pools={name: list(pool["nodePools"]) for name, pool in pools.items()},
            chips_per_slice={name: int(pool["chips"]) // int(pool["slices"]) for name, pool in pools.items()},
            vms_per_slice={name: int(pool["vmsPerSlice"]) for name, pool in pools.items()},
            team_keys=keys,
            local_queues={ref.namespace: ref.local_queue for ref in self.queues.values()},
            check_controllers=controllers,
            check_flavors=check_flavors,
            workers={name: str(worker.get("region", "")) for name, worker in self.workers.items()},
            service_accounts=accounts,
            pods_ready=self.pods_ready,
        )

    @property
    def pods_ready(self) -> PodsReadySettings:
        """Kueue's waitForPodsReady as the stack deployed it (output `waitForPodsReady`); a stack deployed before it
        exported them is read with Kueue's defaults."""
        configured = self.outputs.get("waitForPodsReady")
        return PodsReadySettings.of(configured) if isinstance(configured, dict) else PodsReadySettings()


def from_file(path: Path) -> Stack:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise StackError(f"--outputs {path}: {error}") from None
    if isinstance(data, dict) and isinstance(data.get("outputs"), dict) and "resources" in data:
        data = data["outputs"]  # plan.json of the offline preview
    if not isinstance(data, dict):
        raise StackError(f"--outputs {path}: expected the JSON object of `pulumi stack output --json`")
    return Stack(str(path), data)


def from_pulumi(stack: str | None) -> Stack:
    """`pulumi stack output --json --show-secrets`, run in the current directory (the project's)."""
    pulumi = shutil.which("pulumi")
    if pulumi is None:
        raise StackError(
            "no `pulumi` on PATH to read the stack's outputs; install the Pulumi CLI, or pass --outputs FILE "
            "(saved with `pulumi stack output --json --show-secrets > FILE`)"
        )
    command = [pulumi, "stack", "output", "--json", "--show-secrets", "--non-interactive"]
    if stack:
        command += ["--stack", stack]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise StackError(f"`pulumi stack output` failed: {said}")
    try:
        data = json.loads(done.stdout)
    except ValueError as error:
        raise StackError(f"`pulumi stack output` did not print JSON: {error}") from None
    return Stack(f"stack {stack}" if stack else "the selected stack", data)
