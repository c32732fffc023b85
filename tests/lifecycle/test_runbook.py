"""The day-2 runbook (docs/operations.md, *Runbook*), each procedure's config steps applied to the fixture stacks as
deployed and judged by the engine model (offline/lifecycle.py) over the catalogue: what `pulumi up` would create,
update, replace, delete or refuse at each step, written out by hand from the fixture stack files.

Procedures whose steps other scenarios already preview are linked from the runbook to those tests (rotating
MultiKueue's tokens: test_multikueue_scenarios.py; a new stack's two-phase first `up`: test_empty_project.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config.base import ConfigError
from components.gke_cluster import kubeconfig
from components.multikueue import worker_kubeconfig
from offline import __main__ as cli
from offline.engine import read_stack_file
from tests.fixtures import stack_data, stack_path
from tests.lifecycle.catalogue import CATALOGUE
from tests.lifecycle.conftest import Records, changed, plan, stack_config, step, upgraded_chart

NODE_POOL = "gcp:container/nodePool:NodePool"
Edit = Callable[[dict[str, Any]], None]


def only(steps: Any, op: str) -> list[str]:
    return sorted(s.name for s in steps.of(op))


def touched(steps: Any) -> dict[str, list[str]]:
    """op -> names, every op but `same`."""
    found: dict[str, list[str]] = {}
    for s in steps.steps:
        if s.op != "same":
            found.setdefault(s.op, []).append(s.name)
    return {op: sorted(names) for op, names in found.items()}


def unprotected(records: Records, names: list[str]) -> Records:
    """`records` after `pulumi state unprotect` of the resources named."""
    return [{**r, "protect": False} if r["name"] in names else r for r in records]


def _group(name: str, **fields: Any) -> Edit:
    def edit(config: dict[str, Any]) -> None:
        entry = next(e for e in config["tpu-stack:tpuPools"] if e["name"] == name)
        entry.update(fields)

    return edit


# --- add or remove a team ----------------------------------------------------------------------------------------


def _eval_team(config: dict[str, Any]) -> None:
    """eval takes 4 of multislice's 8 chips no team holds (dev's cohort)."""
    config["tpu-stack:queues"]["teams"].append({"name": "eval", "shares": {"multislice": 4}})


EVAL_OBJECTS = [
    "eval-policies", "eval-policies-allow-platform-egress", "eval-policies-allow-same-namespace",
    "eval-policies-default-deny", "monitoring-pending-eval-cluster-queue", "queues-clusterqueue-eval-cluster-queue",
    "queues-localqueue-eval-eval-queue", "queues-namespace-eval",
]  # fmt: skip


def test_add_a_team(deployed: dict[str, Records]) -> None:
    """The team's namespace, queues, network policies and pending alert are created; the cohort gives up the 4 chips,
    the dashboard shows the queue and the pods-not-starting alert watches its namespace too; no other team's queue
    changes."""
    steps = step(deployed["dev"], changed("dev", _eval_team))
    assert touched(steps) == {
        "create": EVAL_OBJECTS,
        "update": ["monitoring-dashboard", "monitoring-pods-not-starting", "queues-cohort-tpu-stack"],
    }


def test_remove_a_team_in_a_protected_stack_after_unprotecting_exactly_its_objects(
    deployed: dict[str, Records],
) -> None:
    """prod refuses the delete of every object of the team (the plan diff's Refused section lists them); unprotecting
    exactly those (`pulumi state unprotect <urn>` each) lets the next `up` delete them and nothing else."""

    def research_gone(config: dict[str, Any]) -> None:
        config["tpu-stack:queues"]["teams"] = [
            t for t in config["tpu-stack:queues"]["teams"] if t["name"] != "research"
        ]
        config["tpu-stack:bucket"]["readers"] = []

    after = changed("prod", research_gone)
    refused = step(deployed["prod"], after)
    names = only(refused, "refuse")
    assert "queues-namespace-research" in names and "queues-clusterqueue-research-cluster-queue" in names
    assert only(refused, "delete") == [] and only(refused, "replace") == []
    steps = step(unprotected(deployed["prod"], names), after)
    assert steps.refused == []
    assert only(steps, "delete") == names
    # The cohort takes back research's burst share; the reader's identity goes with its grant; the pods-not-starting
    # alert stops watching research's namespace.
    assert only(steps, "update") == ["monitoring-dashboard", "monitoring-pods-not-starting", "queues-cohort-tpu-stack"]


# --- grow and shrink a pool group ---------------------------------------------------------------------------------


def test_grow_then_shrink_a_pool_group_in_a_protected_stack(deployed: dict[str, Records]) -> None:
    """prod's train 2 -> 3 slices creates train-2 (the running train-0 and train-1 stay) and gives training its 16 chips
    (a share of 100%); back to 2, the delete of train-2 is refused until it is unprotected, then it alone goes, after
    the queue gave up its chips (the engine deletes last)."""
    grown = changed("prod", _group("train", slices=3))
    grow = step(deployed["prod"], grown)
    assert touched(grow) == {
        "create": ["train-2"],
        "update": ["monitoring-dashboard", "queues-clusterqueue-training-cluster-queue"],
    }
    shrink = step(grown, deployed["prod"])
    assert only(shrink, "refuse") == ["train-2"] and only(shrink, "delete") == []
    shrink = step(unprotected(grown, ["train-2"]), deployed["prod"])
    assert only(shrink, "delete") == ["train-2"] and shrink.refused == []
    order = [s.name for s in shrink.steps if s.op != "same"]
    assert order.index("queues-clusterqueue-training-cluster-queue") < order.index("train-2")


# --- drain a pool group before removing it --------------------------------------------------------------------------


def _drained_spot(config: dict[str, Any]) -> None:
    """dev's multislice-spot out of every queue: off the ladder, research's share of it gone, drain: true."""
    _group("multislice-spot", drain=True)(config)
    queues = config["tpu-stack:queues"]
    queues["ladders"]["multislice"] = ["multislice"]
    del queues["teams"][0]["shares"]["multislice-spot"]


def _spot_removed(config: dict[str, Any]) -> None:
    _drained_spot(config)
    config["tpu-stack:tpuPools"] = [e for e in config["tpu-stack:tpuPools"] if e["name"] != "multislice-spot"]


def test_drain_a_pool_group_then_remove_it(deployed: dict[str, Records]) -> None:
    """Step 1, drain: the ClusterQueues and the cohort drop the flavor, in place, before the flavor is deleted (Kueue
    keeps a flavor's finalizer while a ClusterQueue names it); the slice's node pool is untouched, so what Kueue
    admitted there runs to its end. Step 2, once `kubectl get workloads -A` shows none on multislice-spot: the
    group's node pool and its component go, and nothing of Kueue changes any more."""
    drained = changed("dev", _drained_spot)
    drain = step(deployed["dev"], drained)
    assert touched(drain) == {
        # multislice is now its ladder's one rung (its flavor's rung label).
        "update": [
            "queues-clusterqueue-research-cluster-queue", "queues-clusterqueue-training-cluster-queue",
            "queues-resourceflavor-multislice",
        ],
        "delete": ["queues-resourceflavor-multislice-spot"],
    }  # fmt: skip
    order = [s.name for s in drain.steps if s.op != "same"]
    for queue in ("queues-clusterqueue-research-cluster-queue", "queues-clusterqueue-training-cluster-queue"):
        assert order.index(queue) < order.index("queues-resourceflavor-multislice-spot")
    assert CATALOGUE.breaches(drained, {}) == []
    remove = step(drained, changed("dev", _spot_removed))
    assert touched(remove) == {"update": ["monitoring-dashboard"], "delete": ["multislice-spot", "multislice-spot"]}


# --- upgrade GKE ----------------------------------------------------------------------------------------------------


def test_upgrade_gke_on_a_channel(deployed: dict[str, Records]) -> None:
    """On a channel GKE upgrades the control plane and the nodes itself, within the maintenance window: a new floor
    (minMasterVersion) changes no resource (the program checks the channel's version against it), and an exclusion
    over a training run updates the cluster in place."""

    def floor(config: dict[str, Any]) -> None:
        config["tpu-stack:cluster"]["minMasterVersion"] = "1.35"

    assert touched(step(deployed["dev"], changed("dev", floor))) == {}

    def exclusion(config: dict[str, Any]) -> None:
        config["tpu-stack:cluster"]["maintenance"]["exclusions"] = [
            {"name": "run-42", "startTime": "2026-12-01T00:00:00Z", "endTime": "2026-12-20T00:00:00Z"}
        ]

    steps = step(deployed["prod"], changed("prod", exclusion))
    assert touched(steps) == {"update": ["tpu-prod"]}
    assert steps.of("update")[0].why.startswith("changes maintenancePolicy")


def test_a_floor_above_the_channels_version_stops_the_preview_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """dev is on RAPID, whose version the engine reports as 1.35.2-gke.1842000 (offline/engine.py RAPID_VERSION): a
    floor of 1.36 stops the preview as it stops `pulumi up`, with one line naming the key, exit 2, no traceback."""
    document = yaml.safe_load(stack_path("dev").read_text())
    document["config"]["tpu-stack:cluster"]["minMasterVersion"] = "1.36"
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    code = cli.main(["preview", "--stack", "dev", "--config", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    assert (code, capsys.readouterr().err.splitlines()) == (
        2,
        [
            "error: tpu-stack:cluster.minMasterVersion: the release channel gave the cluster 1.35.2-gke.1842000, "
            "below the floor 1.36; choose a channel that offers 1.36 or newer (cluster.releaseChannel)"
        ],
    )


def _pinned(version: str) -> Edit:
    def edit(config: dict[str, Any]) -> None:
        config["tpu-stack:cluster"]["releaseChannel"] = "UNSPECIFIED"
        config["tpu-stack:cluster"]["minMasterVersion"] = version

    return edit


def test_upgrade_gke_pinned() -> None:
    """Without a channel the cluster's version is minMasterVersion: 1.33 -> 1.34 upgrades the control plane in place
    (min_master_version is not ForceNew); the node pools are not touched (their nodes upgrade by GKE's node
    upgrade, run by hand: docs/operations.md)."""
    before, after = changed("dev", _pinned("1.33")), changed("dev", _pinned("1.34"))
    steps = step(before, after)
    assert touched(steps) == {"update": ["tpu-dev"]}
    assert steps.of("update")[0].why == "changes minMasterVersion"


# --- upgrade a chart ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_upgrade_the_kueue_chart(deployed: dict[str, Records], stack: str) -> None:
    """kueueVersion 0.19.2 -> 0.19.3, its chart vendored first: every object the chart renders is re-applied in place
    (its labels carry the version), none replaced, none refused, the protected stack included."""
    records = deployed[stack]
    upgraded = upgraded_chart(records, "kueue", "0.19.2", "0.19.3")
    steps = step(records, upgraded)
    assert steps.refused == [] and only(steps, "replace") == [] and only(steps, "delete") == []
    assert "kueue-chart" in only(steps, "update")
    assert CATALOGUE.breaches(upgraded, {}) == []


def test_upgrade_the_lws_chart() -> None:
    """serving.lwsVersion v0.10.0 -> v0.10.1 on the llm stack: its objects in place, the servers untouched."""
    records = plan("llm", stack_data("llm"))
    steps = step(records, upgraded_chart(records, "lws", "v0.10.0", "v0.10.1"))
    assert steps.refused == [] and only(steps, "replace") == [] and only(steps, "delete") == []
    updated = only(steps, "update")
    assert "lws-chart" in updated and not any(name.startswith("llm-serving-") for name in updated)


# --- rotate every credential the stack holds --------------------------------------------------------------------


def test_the_stacks_credentials_and_what_rotating_them_changes(tmp_path: Any) -> None:
    """The kubeconfig output holds no credential (the auth plugin fetches a token, the DNS endpoint's certificate is
    publicly trusted), and the MultiKueue workers' kubeconfigs name the DNS endpoint with no CA: GKE's credential
    rotation (a new CA and control-plane IP; GKE recreates the nodes itself, docs/operations.md) changes no resource
    of the stack and needs no `pulumi up`. The stack declares no service account key. Its Cloud KMS key is the
    backend's, not the program's: another key in `secretsprovider` changes no resource."""
    config = kubeconfig("tpu-dev", "gke-0123.us-central1.gke.goog")
    assert "gke-gcloud-auth-plugin" in config
    assert not any(word in config for word in ("certificate-authority-data", "client-key", "token:", "password"))
    worker = yaml.safe_load(worker_kubeconfig("east", "gke-0456.us-east5.gke.goog", "t0ken"))
    assert worker["clusters"] == [{"name": "east", "cluster": {"server": "https://gke-0456.us-east5.gke.goog"}}]
    records = plan("dev", stack_data("dev"))
    assert not [r for r in records if r["type"] == "gcp:serviceaccount/key:Key"]
    text = stack_path("dev").read_text().replace("cryptoKeys/dev", "cryptoKeys/dev-2026")
    (tmp_path / "Pulumi.dev.yaml").write_text(text)
    assert read_stack_file(tmp_path / "Pulumi.dev.yaml") == stack_data("dev")


def test_a_new_hugging_face_token_secret_rolls_the_server_that_reads_it() -> None:
    """The token lives in a Secret the operator creates, never in the state: a new Secret named in
    serving.huggingFaceToken.secret rolls the server that downloads from Hugging Face, in place."""
    records = plan("llm", stack_data("llm"))

    def new_secret(config: dict[str, Any]) -> None:
        config["tpu-stack:serving"]["huggingFaceToken"]["secret"] = "hf-token-2026"

    steps = step(records, changed("llm", new_secret))
    assert touched(steps) == {"update": ["llm-serving-llama-31-70b"]}


# --- destroy dev, and what a protected stack needs first ------------------------------------------------------------


def test_destroy_dev(deployed: dict[str, Records]) -> None:
    """dev is unprotected and its bucket force-destroyable: `pulumi destroy` deletes everything, nothing refused."""
    bucket = next(r for r in deployed["dev"] if r["type"] == "gcp:storage/bucket:Bucket")
    assert bucket["inputs"]["forceDestroy"] is True
    steps = step(deployed["dev"], [])
    assert steps.refused == [] and len(steps.of("delete")) == len(deployed["dev"])


def test_tear_a_protected_stack_down_in_its_three_steps() -> None:
    """A stack protected by the key (the prod fixture as prod-us): the key removed on its own (only `protect`
    changes), then deletion protection off (the cluster updated in place), then `pulumi destroy` deletes everything.
    The config refuses deletion protection off while the stack is protected, and on prod at all."""
    config = copy.deepcopy(stack_config("prod"))
    assert config["tpu-stack:cluster"]["deletionProtection"] is True
    deployed = plan("prod-us", config)
    del config["tpu-stack:protected"]
    unprotected_stack = plan("prod-us", config)
    dropped = step(deployed, unprotected_stack)
    before = {r["urn"]: {**r, "protect": None} for r in deployed}
    assert {s.op for s in dropped.steps} == {"same", "update"} and dropped.refused == []
    assert [r["name"] for r in unprotected_stack if {**r, "protect": None} != before[r["urn"]]] == []  # only protect
    assert [r["name"] for r in unprotected_stack if r["protect"]] == [
        r["name"] for r in unprotected_stack if r["type"] == "gcp:storage/bucket:Bucket"
    ]  # a bucket that is not throwaway keeps its data in any stack
    config["tpu-stack:cluster"]["deletionProtection"] = False
    unguarded = plan("prod-us", config)
    assert touched(step(unprotected_stack, unguarded)) == {"update": ["tpu-prod"]}
    everything = [{**r, "protect": False} for r in unguarded]  # `pulumi state unprotect` of the buckets
    destroy = step(everything, [])
    assert destroy.refused == [] and len(destroy.of("delete")) == len(everything)
    with pytest.raises(ConfigError, match=r"cluster\.deletionProtection: prod is a protected stack"):
        changed("prod", lambda c: c["tpu-stack:cluster"].update(deletionProtection=False))


# --- recover from a failed `up` -------------------------------------------------------------------------------------


def _created_first(records: Records, share: float) -> Records:
    """What an interrupted first `up` left: a prefix of the engine's creation order (each resource after what it
    depends on), as the state records it."""
    from offline.lifecycle import destroy_order

    order = list(reversed(destroy_order(records)))
    kept = set(order[: int(len(order) * share)])
    return [r for r in records if r["name"] in kept]


def test_recover_from_an_interrupted_first_up(deployed: dict[str, Records]) -> None:
    """After `pulumi cancel` (the lock) and `pulumi refresh` (pending operations resolved), the next `up` creates only
    what the interrupted one did not, and changes nothing it did."""
    records = deployed["dev"]
    done = _created_first(records, 0.5)
    steps = step(done, records)
    assert steps.refused == []
    assert len(steps.of("create")) == len(records) - len(done)
    assert touched(steps).keys() == {"create"}


def test_recover_a_node_pool_gke_created_that_the_state_dropped(deployed: dict[str, Records]) -> None:
    """A pending create cleared (`pulumi refresh --clear-pending-creates`) while GKE made the pool: the next `up`
    would create it again and GKE refuses the name (the provider checks it first, terraform-provider-google
    resource_container_node_pool.go: "already exists"); imported instead (`--import-pending-creates <urn>
    projects/<p>/locations/<region>/clusters/<cluster>/nodePools/<name>`) the state holds it and nothing is created.
    A pool GKE left in ERROR (a stockout) is replaced with `pulumi up --replace <urn>`: every TPU pool is deleted
    before it is created again, so the name is free."""
    records = deployed["dev"]
    pool = next(r for r in records if r["name"] == "multislice-2")
    without = [r for r in records if r is not pool]
    assert [s.name for s in step(without, records, in_cloud=[pool]).of("refuse")] == ["multislice-2"]
    assert touched(step(records, records)) == {}
    tpu_pools = [r for r in records if r["type"] == NODE_POOL and r["inputs"]["nodeConfig"]["machineType"][:2] == "ct"]
    assert len(tpu_pools) == 5 and all(r["deleteBeforeReplace"] for r in tpu_pools)


def test_every_procedure_of_the_runbook_names_tests_that_exist() -> None:
    """docs/operations.md's table links each procedure to the tests that preview it; a renamed or removed test would
    leave a procedure unchecked."""
    import re

    from offline.vendor import REPO

    text = (REPO / "docs" / "operations.md").read_text()
    table = text[text.index("| procedure |") : text.index("\n\n", text.index("| procedure |"))]
    rows = [row for row in table.splitlines()[2:] if row.startswith("| [")]
    assert len(rows) == 12
    for row in rows:
        named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", row)
        assert named, row
        for path, test in named:
            assert re.search(rf"^def {test}\(", (REPO / path).read_text(), re.MULTILINE), f"{path}::{test}"
