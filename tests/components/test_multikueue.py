"""MultiKueue on the multiregion stack: the manager's queues and dispatch objects, the workers' own queues over their
own pools, the access the manager has on each worker, and all of it valid for the API servers and the policy pack.

Every expectation is written by hand from Pulumi.multiregion.yaml. A ct6e-standard-4t VM has 4 chips; a single-host
slice is 2x2 = 4 chips, a 4x4 slice 16 chips on 4 VMs:
- manager tpu-mr-manager in us-central1, no TPU pool groups;
- worker tpu-mr-east5 (us-east5): east-flex-v6e, 2 flex-start 2x2 slices in us-east5-b = 8 chips; east-queued-v6e,
  one queued 4x4 slice in us-east5-b = 16 chips;
- worker tpu-mr-japan (asia-northeast1): japan-flex-v6e, 2 flex-start 2x2 slices in asia-northeast1-b = 8 chips;
  japan-queued-v6e, one queued 4x4 slice in asia-northeast1-b = 16 chips;
- research holds east-flex-v6e 4, japan-flex-v6e 4, east-queued-v6e 16; training east-flex-v6e 4, japan-flex-v6e 4,
  japan-queued-v6e 16.
A team's ClusterQueue lists every flavor of its cluster, 0 where the team has no share (config/queues.py team_chips);
the Cohort holds what no team holds, and lists only flavors with chips left (kueue_queues.cohort): here none.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
import yaml

from offline import policy_check, validate
from offline.engine import Plan, run_program
from offline.lifecycle import depends_on
from offline.markers import SECRET, UNKNOWN
from offline.vendor import REPO
from tests.fixtures import stack_data, stack_plan

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"
API = "kueue.x-k8s.io/v1beta2"
TPU = "google.com/tpu"
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
SECRET_TYPE = "kubernetes:core/v1:Secret"
MANAGER, EAST, JAPAN = "tpu-mr-manager", "tpu-mr-east5", "tpu-mr-japan"
CLUSTERS = (MANAGER, EAST, JAPAN)
PREFIX = {MANAGER: "", EAST: "tpu-mr-east5-", JAPAN: "tpu-mr-japan-"}
"""The Pulumi name prefix of each cluster's objects: the manager's have none, a worker's its name."""

# The real program, with the token each worker's token controller would write into its Secret (the mock engine
# computes no Secret data), and the manager's kubeconfig Secrets' text exported unsecreted for the test to read.
PROGRAM = f"""
import runpy
import pulumi
import components.multikueue as multikueue


managers = []
worker_init, manager_init = multikueue.MultiKueueWorker.__init__, multikueue.MultiKueueManager.__init__


def worker(self, name, **kwargs):
    worker_init(self, name, **kwargs)
    self.token = pulumi.Output.secret(f"token-of-{{name}}")


def manager(self, name, **kwargs):
    manager_init(self, name, **kwargs)
    managers.append(self)


# The classes are the ones every later run in this process imports: patched for this run only.
multikueue.MultiKueueWorker.__init__ = worker
multikueue.MultiKueueManager.__init__ = manager
try:
    runpy.run_path({str(REPO / "__main__.py")!r}, run_name="__main__")
finally:
    multikueue.MultiKueueWorker.__init__, multikueue.MultiKueueManager.__init__ = worker_init, manager_init
(only,) = managers
pulumi.export("kubeconfigs", {{w: pulumi.Output.unsecret(s.string_data) for w, s in only.kubeconfigs.items()}})
"""


@pytest.fixture(scope="module")
def plan() -> Plan:
    return stack_plan("multiregion")


@pytest.fixture(scope="module")
def with_tokens(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    program = tmp_path_factory.mktemp("multikueue") / "program.py"
    program.write_text(PROGRAM)
    return run_program(stack_data("multiregion"), stack="multiregion", program=program)


def test_the_token_patch_is_for_its_own_run_only(with_tokens: Plan) -> None:
    """Runs after `with_tokens` share this process's modules: they see the real classes again."""
    import components.multikueue as multikueue

    assert multikueue.MultiKueueWorker.__init__.__qualname__ == "MultiKueueWorker.__init__"
    assert multikueue.MultiKueueManager.__init__.__qualname__ == "MultiKueueManager.__init__"


def provider_cluster(plan: Plan, record: dict[str, Any]) -> str | None:
    """The cluster whose kubernetes provider writes `record` (its own provider, else its parent's)."""
    by_urn = {r["urn"]: r for r in plan.resources}
    while record is not None:
        if record.get("provider"):
            return str(record["provider"]).rsplit("::", 1)[1].removesuffix("-k8s")
        record = by_urn.get(record.get("parent") or "")  # type: ignore[assignment]
    return None


def objects(plan: Plan, kind: str, cluster: str) -> dict[str, dict[str, Any]]:
    """`namespace/name` (or `name`) -> the Kueue object of `kind` written to `cluster`, checking its Pulumi name
    carries the cluster's prefix."""
    found = {}
    for record in plan.by_type(KUEUE + kind):
        if provider_cluster(plan, record) != cluster:
            continue
        assert record["name"].startswith(PREFIX[cluster]) and (
            cluster != MANAGER or not record["name"].startswith(("tpu-mr-east5-", "tpu-mr-japan-"))
        ), record["name"]
        metadata = record["inputs"]["metadata"]
        key = f"{metadata['namespace']}/{metadata['name']}" if "namespace" in metadata else metadata["name"]
        found[key] = record["inputs"]
    return found


def record(plan: Plan, name: str, type_token: str | None = None) -> dict[str, Any]:
    (found,) = [r for r in plan.resources if r["name"] == name and type_token in (None, r["type"])]
    return found


def flavors(queue: dict[str, Any]) -> dict[str, int]:
    """flavor -> nominal google.com/tpu quota, in the listed order."""
    (group,) = queue["spec"]["resourceGroups"]
    assert group["coveredResources"] == [TPU]
    quotas = {}
    for flavor in group["flavors"]:
        (resource,) = flavor["resources"]
        assert set(resource) == {"name", "nominalQuota"} and resource["name"] == TPU
        quotas[flavor["name"]] = resource["nominalQuota"]
    return quotas


# ---- the teams' queues: the same names everywhere ------------------------------------------------------------------


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_cluster_has_the_teams_queues_under_the_same_names(plan: Plan, cluster: str) -> None:
    """A workload submitted to research/research-queue on the manager is copied to research/research-queue on the
    worker: the LocalQueues, their ClusterQueues and namespaces must be the same on every cluster."""
    local_queues = objects(plan, "LocalQueue", cluster)
    assert {key: queue["spec"] for key, queue in local_queues.items()} == {
        "research/research-queue": {"clusterQueue": "research-cluster-queue"},
        "training/training-queue": {"clusterQueue": "training-cluster-queue"},
    }
    queues = objects(plan, "ClusterQueue", cluster)
    assert sorted(queues) == ["research-cluster-queue", "training-cluster-queue"]
    for team in ("research", "training"):
        spec = queues[f"{team}-cluster-queue"]["spec"]
        assert spec["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": team}}
        assert spec["cohortName"] == "tpu-stack"
    namespaces = [
        r["inputs"]["metadata"]["name"]
        for r in plan.by_type("kubernetes:core/v1:Namespace")
        if provider_cluster(plan, r) == cluster and r["name"].startswith(f"{PREFIX[cluster]}queues-namespace-")
    ]
    assert sorted(namespaces) == ["research", "training"]
    assert list(objects(plan, "Cohort", cluster)) == ["tpu-stack"]


def test_the_stack_outputs_the_teams_queues_once(plan: Plan) -> None:
    assert plan.outputs["queues"] == {
        "research": {"namespace": "research", "localQueue": "research-queue", "clusterQueue": "research-cluster-queue"},
        "training": {"namespace": "training", "localQueue": "training-queue", "clusterQueue": "training-cluster-queue"},
    }
    assert plan.outputs["clusterName"] == MANAGER
    # The pool groups a workload submitted to the manager can name are the workers'.
    assert sorted(plan.outputs["tpuPools"]) == [
        "east-flex-v6e",
        "east-queued-v6e",
        "japan-flex-v6e",
        "japan-queued-v6e",
    ]
    assert plan.outputs["multiKueue"]["shapes"] == {
        "ct6e-standard-4t 2x2": ["tpu-mr-east5 (us-east5)", "tpu-mr-japan (asia-northeast1)"],
        "ct6e-standard-4t 4x4": ["tpu-mr-east5 (us-east5)", "tpu-mr-japan (asia-northeast1)"],
    }
    workers = plan.outputs["multiKueue"]["workers"]
    assert {name: worker["region"] for name, worker in workers.items()} == {EAST: "us-east5", JAPAN: "asia-northeast1"}
    assert workers[JAPAN]["pools"]["japan-queued-v6e"] == {
        "machineType": "ct6e-standard-4t",
        "topology": "4x4",
        "provisioning": "queued",
        "zone": "asia-northeast1-b",
        "chips": 16,
    }


# ---- admission checks: MultiKueue on the manager, provisioning on the worker with queued capacity ------------------


def test_manager_queues_wait_for_a_worker_and_no_worker_queue_names_multikueue(plan: Plan) -> None:
    for queue in objects(plan, "ClusterQueue", MANAGER).values():
        assert queue["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue"}]}
    assert list(objects(plan, "AdmissionCheck", MANAGER)) == ["multikueue"]
    assert objects(plan, "ProvisioningRequestConfig", MANAGER) == {}
    # Each worker's queued 4x4 slice comes through a ProvisioningRequest, for that flavor only.
    for cluster, pool in ((EAST, "east-queued-v6e"), (JAPAN, "japan-queued-v6e")):
        for queue in objects(plan, "ClusterQueue", cluster).values():
            assert queue["spec"]["admissionChecksStrategy"] == {
                "admissionChecks": [{"name": f"{pool}-provisioning", "onFlavors": [pool]}]
            }
        assert objects(plan, "AdmissionCheck", cluster) == {
            f"{pool}-provisioning": {
                "apiVersion": API,
                "kind": "AdmissionCheck",
                "metadata": {"name": f"{pool}-provisioning"},
                "spec": {
                    "controllerName": "kueue.x-k8s.io/provisioning-request",
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "ProvisioningRequestConfig",
                        "name": f"{pool}-provisioning",
                    },
                },
            }
        }
        assert objects(plan, "ProvisioningRequestConfig", cluster) == {
            f"{pool}-provisioning": {
                "apiVersion": API,
                "kind": "ProvisioningRequestConfig",
                "metadata": {"name": f"{pool}-provisioning"},
                "spec": {
                    "provisioningClassName": "queued-provisioning.gke.io",
                    "managedResources": [TPU],
                    "retryStrategy": {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800},
                },
            }
        }


# ---- quotas: each worker's from its own pools, the manager's the union ---------------------------------------------


def test_each_worker_queues_exactly_its_own_pools_chips(plan: Plan) -> None:
    """tpu-mr-east5: research 4 of east-flex-v6e's 8 and all 16 of east-queued-v6e; training the other 4 flex chips
    and none of the queued slice. tpu-mr-japan: research 4 of japan-flex-v6e's 8 and none of the 4x4 slice; training
    the other 4 and all 16. Every chip is a team's, so the Cohort holds none (no resource groups)."""
    east = objects(plan, "ClusterQueue", EAST)
    assert flavors(east["research-cluster-queue"]) == {"east-flex-v6e": 4, "east-queued-v6e": 16}
    assert flavors(east["training-cluster-queue"]) == {"east-flex-v6e": 4, "east-queued-v6e": 0}
    japan = objects(plan, "ClusterQueue", JAPAN)
    assert flavors(japan["research-cluster-queue"]) == {"japan-flex-v6e": 4, "japan-queued-v6e": 0}
    assert flavors(japan["training-cluster-queue"]) == {"japan-flex-v6e": 4, "japan-queued-v6e": 16}
    for cluster in (EAST, JAPAN, MANAGER):
        assert objects(plan, "Cohort", cluster)["tpu-stack"]["spec"] == {}, cluster
    assert sorted(objects(plan, "ResourceFlavor", EAST)) == ["east-flex-v6e", "east-queued-v6e"]
    assert sorted(objects(plan, "ResourceFlavor", JAPAN)) == ["japan-flex-v6e", "japan-queued-v6e"]


def test_manager_queues_hold_the_workers_chips_together(plan: Plan) -> None:
    """The manager admits what one of its workers can run: its flavors are both workers', with the same numbers,
    in the workers' order."""
    manager = objects(plan, "ClusterQueue", MANAGER)
    assert flavors(manager["research-cluster-queue"]) == {
        "east-flex-v6e": 4, "east-queued-v6e": 16, "japan-flex-v6e": 4, "japan-queued-v6e": 0,
    }  # fmt: skip
    assert flavors(manager["training-cluster-queue"]) == {
        "east-flex-v6e": 4, "east-queued-v6e": 0, "japan-flex-v6e": 4, "japan-queued-v6e": 16,
    }  # fmt: skip
    assert list(flavors(manager["research-cluster-queue"])) == [
        "east-flex-v6e", "east-queued-v6e", "japan-flex-v6e", "japan-queued-v6e"]  # fmt: skip
    manager_flavors = objects(plan, "ResourceFlavor", MANAGER)
    assert sorted(manager_flavors) == ["east-flex-v6e", "east-queued-v6e", "japan-flex-v6e", "japan-queued-v6e"]
    # The same flavors as on the workers: a workload's node selectors mean the same on either side.
    for cluster in (EAST, JAPAN):
        for name, flavor in objects(plan, "ResourceFlavor", cluster).items():
            assert manager_flavors[name] == flavor, name
    single = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "2x2",
              "cloud.google.com/gke-flex-start": "true"}  # fmt: skip
    assert manager_flavors["east-flex-v6e"]["spec"]["nodeLabels"] == single
    assert manager_flavors["east-queued-v6e"]["spec"]["tolerations"] == [
        {"key": TPU, "operator": "Exists", "effect": "NoSchedule"},
        {"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"},
    ]
    assert plan.outputs["flavors"]["japan-queued-v6e"] == {**single, "cloud.google.com/gke-tpu-topology": "4x4"}


# ---- the manager's dispatch objects --------------------------------------------------------------------------------


def test_the_manager_dispatch_objects_whole(plan: Plan) -> None:
    assert objects(plan, "MultiKueueCluster", MANAGER) == {
        worker: {
            "apiVersion": API,
            "kind": "MultiKueueCluster",
            "metadata": {"name": worker},
            "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": f"{worker}-kubeconfig"}}},
        }
        for worker in (EAST, JAPAN)
    }
    assert objects(plan, "MultiKueueConfig", MANAGER) == {
        "multikueue": {
            "apiVersion": API,
            "kind": "MultiKueueConfig",
            "metadata": {"name": "multikueue"},
            "spec": {"clusters": ["tpu-mr-east5", "tpu-mr-japan"]},
        }
    }
    assert objects(plan, "AdmissionCheck", MANAGER) == {
        "multikueue": {
            "apiVersion": API,
            "kind": "AdmissionCheck",
            "metadata": {"name": "multikueue"},
            "spec": {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "multikueue"},
            },
        }
    }
    # Workers dispatch nothing.
    for cluster in (EAST, JAPAN):
        assert objects(plan, "MultiKueueCluster", cluster) == objects(plan, "MultiKueueConfig", cluster) == {}


def test_the_manager_dispatches_only_once_the_worker_can_take_it(plan: Plan) -> None:
    """A MultiKueueCluster waits for its kubeconfig and for the worker's Kueue, queues and the manager's binding
    there; the MultiKueueConfig for both clusters; the AdmissionCheck for the config; the manager's queues for the
    check (a ClusterQueue naming a missing check is inactive)."""
    state = {r["urn"]: r for r in plan.resources}

    def waits(name: str, other: str) -> bool:
        return depends_on(state, record(plan, name)["urn"], record(plan, other)["urn"])

    for worker in (EAST, JAPAN):
        cluster = f"multikueue-multikueuecluster-{worker}"
        for needed in (
            f"multikueue-{worker}-kubeconfig", f"{worker}-kueue-chart", f"{worker}-multikueue-read-binding",
            f"{worker}-multikueue-dispatch-research", f"{worker}-multikueue-dispatch-training",
            f"{worker}-queues-clusterqueue-research-cluster-queue",
            f"{worker}-queues-localqueue-training-training-queue", "kueue-chart",
        ):  # fmt: skip
            assert waits(cluster, needed), (cluster, needed)
        assert waits("multikueue-multikueueconfig-multikueue", cluster)
        # The kubeconfig names the worker's token, so it waits for the token Secret (and the endpoint's cluster).
        assert waits(f"multikueue-{worker}-kubeconfig", f"{worker}-multikueue-token-1")
    assert waits("multikueue-admissioncheck-multikueue", "multikueue-multikueueconfig-multikueue")
    for team in ("research", "training"):
        assert waits(f"queues-clusterqueue-{team}-cluster-queue", "multikueue-admissioncheck-multikueue")


def test_kubeconfig_secrets_are_secret_and_name_the_workers_dns_endpoint_and_token(
    plan: Plan, with_tokens: Plan
) -> None:
    """Kueue reads each worker's kubeconfig from a Secret in kueue-system (key `kubeconfig`). In the stack's own
    plan the token is not known until the worker's token controller writes it; with the token known, the Secret's
    stringData is a secret. The kubeconfig is the worker's DNS endpoint (publicly trusted: no CA) and the token."""
    for worker in (EAST, JAPAN):
        secret = record(plan, f"multikueue-{worker}-kubeconfig", SECRET_TYPE)
        assert provider_cluster(plan, secret) == MANAGER
        assert secret["inputs"] == {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": f"{worker}-kubeconfig",
                "namespace": "kueue-system",
                "labels": {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "multikueue"},
            },
            "type": "Opaque",
            "stringData": UNKNOWN,
        }
        known = record(with_tokens, f"multikueue-{worker}-kubeconfig", SECRET_TYPE)
        assert known["inputs"]["stringData"] == SECRET
        endpoint = record(with_tokens, f"{worker}-k8s")["inputs"]["clusterIdentifier"]
        region = {EAST: "us-east5", JAPAN: "asia-northeast1"}[worker]
        assert re.fullmatch(rf"gke-[0-9a-f]{{36}}\.{region}\.gke\.goog", endpoint), endpoint
        text = with_tokens.outputs["kubeconfigs"][worker]["kubeconfig"]
        assert yaml.safe_load(text) == {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": worker, "cluster": {"server": f"https://{endpoint}"}}],
            "users": [{"name": "multikueue-manager", "user": {"token": f"token-of-{worker}-multikueue"}}],
            "contexts": [{"name": worker, "context": {"cluster": worker, "user": "multikueue-manager"}}],
            "current-context": worker,
        }


# ---- on each worker: the manager's account, its rights and its token -----------------------------------------------

LABELS = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "multikueue"}
DISPATCH = ["create", "delete", "get", "list", "watch"]


@pytest.mark.parametrize("worker", [EAST, JAPAN])
def test_each_worker_gives_the_manager_an_account_a_role_and_a_token(plan: Plan, worker: str) -> None:
    """The manager reads Jobs, JobSets, Workloads and queues everywhere (its clients watch every namespace) and
    creates and deletes only in the teams' namespaces, research and training: never a Job in kube-system."""
    account = record(plan, f"{worker}-multikueue-account")
    read_role = record(plan, f"{worker}-multikueue-read-role")
    read_binding = record(plan, f"{worker}-multikueue-read-binding")
    dispatch_role = record(plan, f"{worker}-multikueue-dispatch-role")
    dispatch = {team: record(plan, f"{worker}-multikueue-dispatch-{team}") for team in ("research", "training")}
    token = record(plan, f"{worker}-multikueue-token-1")
    resources = (account, read_role, read_binding, dispatch_role, token, *dispatch.values())
    assert {provider_cluster(plan, r) for r in resources} == {worker}
    assert account["inputs"] == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "multikueue-manager", "namespace": "kueue-system", "labels": LABELS},
        "automountServiceAccountToken": False,
    }
    read = ["get", "list", "watch"]
    assert read_role["inputs"] == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "multikueue-manager-read", "labels": LABELS},
        "rules": [
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": read},
            {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
            {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": read},
            {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": read},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": read},
        ],
    }
    subjects = [{"kind": "ServiceAccount", "name": "multikueue-manager", "namespace": "kueue-system"}]
    assert read_binding["inputs"] == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "multikueue-manager-read", "labels": LABELS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "multikueue-manager-read"},
        "subjects": subjects,
    }
    assert dispatch_role["inputs"] == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "multikueue-manager-dispatch", "labels": LABELS},
        "rules": [
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete"]},
            {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["create", "delete"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"],
             "verbs": ["create", "delete", "update", "patch"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["patch", "update"]},
        ],
    }  # fmt: skip
    for team, binding in dispatch.items():
        assert binding["inputs"] == {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "multikueue-manager-dispatch", "namespace": team, "labels": LABELS},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "multikueue-manager-dispatch",
            },
            "subjects": subjects,
        }
        # In the team's namespace, which the worker's queues create.
        assert record(plan, f"{worker}-queues-namespace-{team}")["urn"] in binding["dependencies"]
    assert token["inputs"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "multikueue-manager-token-1",
            "namespace": "kueue-system",
            "labels": LABELS,
            "annotations": {"kubernetes.io/service-account.name": "multikueue-manager"},
        },
        "type": "kubernetes.io/service-account-token",
    }
    # The token controller deletes a token Secret whose account does not exist (yet).
    assert account["urn"] in token["dependencies"]
    assert {account["urn"], read_role["urn"]} <= set(read_binding["dependencies"])


def test_workers_have_the_bucket_writers_service_account(plan: Plan) -> None:
    """The manager's workloads run on a worker as their own service account: training/trainer (bucket.writers) exists
    on every cluster, in the namespace the cluster's queues create; its grant is made once, for the principal of the
    project's pool, which names no cluster."""
    accounts = [
        r for r in plan.by_type("kubernetes:core/v1:ServiceAccount") if r["inputs"]["metadata"]["name"] == "trainer"
    ]
    assert sorted(str(provider_cluster(plan, r)) for r in accounts) == [EAST, JAPAN, MANAGER]
    for worker in (EAST, JAPAN):
        (account,) = [r for r in accounts if provider_cluster(plan, r) == worker]
        assert account["inputs"]["metadata"] == {
            "name": "trainer",
            "namespace": "training",
            "labels": {"app.kubernetes.io/managed-by": "pulumi"},
        }
        assert record(plan, f"{worker}-queues-namespace-training")["urn"] in account["dependencies"]
    grants = [r for r in plan.by_type("gcp:storage/bucketIAMMember:BucketIAMMember")]
    assert len(grants) == len({r["name"] for r in grants})  # one grant per role, not one per cluster


# ---- the GKE clusters ----------------------------------------------------------------------------------------------


def test_workers_accept_kubernetes_tokens_on_their_dns_endpoint_and_the_manager_does_not(plan: Plan) -> None:
    clusters = {r["inputs"]["name"]: r["inputs"] for r in plan.by_type(CLUSTER)}
    assert sorted(clusters) == [EAST, JAPAN, MANAGER]
    for name, location in ((EAST, "us-east5"), (JAPAN, "asia-northeast1")):
        assert clusters[name]["location"] == location
        assert clusters[name]["controlPlaneEndpointsConfig"] == {
            "dnsEndpointConfig": {"allowExternalTraffic": True, "enableK8sTokensViaDns": True},
            "ipEndpointsConfig": {"enabled": False},
        }
    assert clusters[MANAGER]["location"] == "us-central1"
    assert clusters[MANAGER]["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": True},
        "ipEndpointsConfig": {"enabled": False},
    }


def test_each_cluster_has_its_own_provider_and_updates_secrets_in_place(plan: Plan) -> None:
    """Each provider is identified by its cluster's DNS endpoint. The manager's kubeconfig Secrets change with every
    token generation: every provider updates a Secret's data in place (the default replaces it, deleting first)."""
    providers = {r["name"]: r["inputs"] for r in plan.by_type("pulumi:providers:kubernetes")}
    assert sorted(providers) == ["tpu-mr-east5-k8s", "tpu-mr-japan-k8s", "tpu-mr-manager-k8s"]
    for cluster, region in ((MANAGER, "us-central1"), (EAST, "us-east5"), (JAPAN, "asia-northeast1")):
        inputs = providers[f"{cluster}-k8s"]
        assert re.fullmatch(rf"gke-[0-9a-f]{{36}}\.{region}\.gke\.goog", inputs["clusterIdentifier"]), cluster
        assert inputs == {
            "enableServerSideApply": "true",
            "enableConfigMapMutable": "true",
            "enableSecretMutable": "true",
            "clusterIdentifier": inputs["clusterIdentifier"],
            "kubeconfig": SECRET,
        }
    assert len({inputs["clusterIdentifier"] for inputs in providers.values()}) == 3


def test_each_worker_runs_its_own_pools_in_its_region(plan: Plan) -> None:
    """One node pool per slice, named after the group (`-<i>` with more than one slice), in the worker's cluster and
    zone; the manager has only its system pool."""
    pools = {
        r["inputs"]["name"]: (r["inputs"]["cluster"], r["inputs"]["location"], r["inputs"].get("nodeLocations"))
        for r in plan.by_type(NODE_POOL)
        if r["inputs"]["nodeConfig"]["machineType"].startswith("ct")
    }
    assert pools == {
        "east-flex-v6e-0": (EAST, "us-east5", ["us-east5-b"]),
        "east-flex-v6e-1": (EAST, "us-east5", ["us-east5-b"]),
        "east-queued-v6e": (EAST, "us-east5", ["us-east5-b"]),
        "japan-flex-v6e-0": (JAPAN, "asia-northeast1", ["asia-northeast1-b"]),
        "japan-flex-v6e-1": (JAPAN, "asia-northeast1", ["asia-northeast1-b"]),
        "japan-queued-v6e": (JAPAN, "asia-northeast1", ["asia-northeast1-b"]),
    }
    systems = sorted((r["inputs"]["cluster"], r["inputs"]["location"]) for r in plan.by_type(NODE_POOL)
                     if r["inputs"]["name"] == "system")  # fmt: skip
    assert systems == [(EAST, "us-east5"), (JAPAN, "asia-northeast1"), (MANAGER, "us-central1")]
    # Each TPU node pool depends on its own cluster (the policy pack counts chips per cluster by this edge).
    cluster_urns = {r["inputs"]["name"]: r["urn"] for r in plan.by_type(CLUSTER)}
    for node_pool in plan.by_type(NODE_POOL):
        assert cluster_urns[node_pool["inputs"]["cluster"]] in node_pool["dependencies"], node_pool["name"]


# ---- valid for the API servers -------------------------------------------------------------------------------------


def test_every_kubernetes_object_of_the_multiregion_stack_is_valid(plan: Plan) -> None:
    """The vendored Kueue v0.19.2 CRDs (MultiKueueCluster and MultiKueueConfig among them) and core schemas."""
    declared = [r["inputs"] for r in plan.resources if {"apiVersion", "kind"} <= r["inputs"].keys()]
    kueue = [obj for obj in declared if obj["apiVersion"] == API]
    assert sorted({obj["kind"] for obj in kueue}) == [
        "AdmissionCheck", "ClusterQueue", "Cohort", "LocalQueue", "MultiKueueCluster", "MultiKueueConfig",
        "ProvisioningRequestConfig", "ResourceFlavor",
    ]  # fmt: skip
    # Manager: 4 flavors, the Cohort, 2 ClusterQueues, 2 LocalQueues, the check, the config, 2 clusters = 13;
    # each worker: 2 flavors, the provisioning config and check, the Cohort, 2 + 2 queues = 9.
    assert len(kueue) == 31
    assert validate.validate_all(declared, kubernetes_version="1.33") == []


def test_the_validator_applies_the_multikueue_crd_rules(plan: Plan) -> None:
    config = copy.deepcopy(objects(plan, "MultiKueueConfig", MANAGER)["multikueue"])
    config["spec"]["clusters"].append("tpu-mr-east5")
    assert validate.validate_object(config) == ["MultiKueueConfig/multikueue: spec.clusters: must be unique"]
    cluster = copy.deepcopy(objects(plan, "MultiKueueCluster", MANAGER)[EAST])
    cluster["spec"]["clusterSource"] = {}
    assert validate.validate_object(cluster) == [
        "MultiKueueCluster/tpu-mr-east5: spec.clusterSource: exactly one of the fields in [kubeConfig "
        "clusterProfileRef] must be set"
    ]


# ---- Kueue's controller configuration ------------------------------------------------------------------------------


def controller_config(plan: Plan, cluster: str) -> dict[str, Any]:
    config_map = record(plan, f"{PREFIX[cluster]}kueue-chart:kueue-system/kueue-manager-config")
    loaded: dict[str, Any] = yaml.safe_load(config_map["inputs"]["data"]["controller_manager_config.yaml"])
    return loaded


def test_only_the_managers_kueue_runs_multikueue(plan: Plan) -> None:
    """Kueue v0.19.2's defaults, stated: copies to every worker at once, orphans collected every minute, a workload
    on a worker lost for 15 minutes dispatched again."""
    assert controller_config(plan, MANAGER)["multiKueue"] == {
        "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
        "gcInterval": "1m0s",
        "origin": "multikueue",
        "workerLostTimeout": "15m0s",
    }
    manager = controller_config(plan, MANAGER)
    for worker in (EAST, JAPAN):
        config = controller_config(plan, worker)
        assert "multiKueue" not in config
        assert config == {key: value for key, value in manager.items() if key != "multiKueue"}


# ---- monitoring: one project, three clusters -----------------------------------------------------------------------


def test_alerts_select_their_own_clusters_kueue_series(plan: Plan) -> None:
    """The queues have the same names on all three clusters: each alert reads its cluster's series only. Workloads
    wait on the manager (its alerts: for its quota, pending-*; holding quota while no worker admits them,
    waiting-for-a-worker); the copies waiting on a worker are the same workloads, so the workers have no pending
    alerts, only theirs about TPUs, queued provisioning and pods that do not start (the pods run there)."""
    alerts = {
        r["inputs"]["displayName"]: r["inputs"]["conditions"][0]["conditionPrometheusQueryLanguage"]["query"]
        for r in plan.by_type("gcp:monitoring/alertPolicy:AlertPolicy")
    }
    prefix = "tpu-stack multiregion: "
    assert alerts[f"{prefix}pending-research-cluster-queue (tpu-mr-manager)"] == (
        'sum(kueue_pending_workloads{cluster_queue="research-cluster-queue",cluster="tpu-mr-manager"}) > 0'
    )
    assert alerts[f"{prefix}queued-provisioning-not-granted (tpu-mr-japan)"] == (
        'sum by (cluster_queue) (kueue_reserving_active_workloads{cluster="tpu-mr-japan"}) - '
        'sum by (cluster_queue) (kueue_admitted_active_workloads{cluster="tpu-mr-japan"}) > 0'
    )
    assert alerts[f"{prefix}pods-not-starting (tpu-mr-japan)"] == (
        'max by (namespace, pod) (kube_pod_status_phase{phase="Pending",namespace=~"research|training",'
        'cluster="tpu-mr-japan"}) > 0'
    )
    assert alerts[f"{prefix}waiting-for-a-worker (tpu-mr-manager)"] == (
        'sum by (cluster_queue) (kueue_reserving_active_workloads{cluster="tpu-mr-manager"}) - '
        'sum by (cluster_queue) (kueue_admitted_active_workloads{cluster="tpu-mr-manager"}) > 0'
    )
    # No TPU to sit idle on the manager.
    assert sorted(alerts) == sorted(
        f"{prefix}{alert} ({cluster})"
        for cluster, names in (
            (MANAGER, ["pending-research-cluster-queue", "pending-training-cluster-queue", "waiting-for-a-worker"]),
            (EAST, ["pods-not-starting", "queued-provisioning-not-granted", "tpu-idle-while-waiting"]),
            (JAPAN, ["pods-not-starting", "queued-provisioning-not-granted", "tpu-idle-while-waiting"]),
        )
        for alert in names
    )  # fmt: skip


# ---- the policy pack -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("view", policy_check.VIEWS, ids=lambda view: view.name)
def test_the_multiregion_stack_breaks_no_mandatory_policy(plan: Plan, view: policy_check.View) -> None:
    """Each worker's flavors within its own pools' chips, the manager's within the workers' together; in a new
    stack's preview (computed values unknown) and in the deployed stack's."""
    resources = plan.resources if view.name == "deployed" else stack_plan("multiregion", known_outputs=False).resources
    team_config = json.loads(policy_check.TEAM_CONFIG.read_text())
    found = policy_check.evaluate(resources, stack="multiregion", view=view, config=team_config)
    assert [v for v in found if v["level"] == "mandatory"] == []
    assert [v["message"] for v in found if "during preview" in v["message"]] == []


def test_a_workers_subnetwork_is_its_clusters_own() -> None:
    """On an existing custom-mode network each cluster names its region's subnetwork: a worker's goes to its cluster
    only; each cluster gives its ranges (the stack cannot know what is free in a network it did not make)."""
    config = stack_data("multiregion")
    config["tpu-stack:cluster"]["network"] = "tpu-net"
    config["tpu-stack:cluster"]["ipRanges"] = {"nodes": "10.1.0.0/24", "pods": "10.2.0.0/20", "services": "10.3.0.0/20"}
    for index, worker in enumerate(config["tpu-stack:multiKueue"]["workers"]):
        worker["ipRanges"] = {"nodes": f"10.1{index}.0.0/24", "pods": f"10.2{index}.0.0/20",
                              "services": f"10.3{index}.0.0/20"}  # fmt: skip
    config["tpu-stack:multiKueue"]["workers"][1]["subnetwork"] = "tpu-asia-northeast1"
    clusters = {r["inputs"]["name"]: r["inputs"] for r in run_program(config, stack="multiregion").by_type(CLUSTER)}
    assert clusters[JAPAN]["subnetwork"] == "tpu-asia-northeast1"
    assert "subnetwork" not in clusters[EAST] and "subnetwork" not in clusters[MANAGER]
    assert {c["network"] for c in clusters.values()} == {"tpu-net"}


def test_a_queue_in_default_gets_its_dispatch_binding_too() -> None:
    """Kueue writes a workload's copies in the workload's namespace: every namespace with a worker LocalQueue gets the
    manager's dispatch RoleBinding, `default` too (no team namespace is created there)."""
    config = copy.deepcopy(stack_data("multiregion"))
    config["tpu-stack:queues"]["teams"][0]["namespace"] = "default"
    config["tpu-stack:bucket"] = {}
    plan = run_program(config, stack="multiregion")
    for worker in (EAST, JAPAN):
        bindings = {
            r["inputs"]["metadata"]["namespace"]
            for r in plan.by_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
            if provider_cluster(plan, r) == worker and r["inputs"]["metadata"]["name"] == "multikueue-manager-dispatch"
        }
        assert bindings == {"default", "training"}
        queues = {obj["metadata"]["namespace"] for obj in objects(plan, "LocalQueue", worker).values()}
        assert queues == bindings


def test_each_clusters_dashboard_charts_its_own_queues(plan: Plan) -> None:
    """The queues have the same names on every cluster: each dashboard's queue charts select its own cluster."""
    dashboards = {
        r["name"]: json.loads(r["inputs"]["dashboardJson"]) for r in plan.by_type("gcp:monitoring/dashboard:Dashboard")
    }
    assert sorted(dashboards) == ["monitoring-dashboard", "tpu-mr-east5-monitoring-dashboard",
                                  "tpu-mr-japan-monitoring-dashboard"]  # fmt: skip
    for name, cluster in (("monitoring-dashboard", MANAGER), ("tpu-mr-east5-monitoring-dashboard", EAST)):
        queries = [
            data_set["timeSeriesQuery"]["prometheusQuery"]
            for tile in dashboards[name]["mosaicLayout"]["tiles"]
            for data_set in tile["widget"].get("xyChart", {}).get("dataSets", [])
            if "prometheusQuery" in data_set["timeSeriesQuery"]
        ]
        assert queries, name
        assert all(f'cluster="{cluster}"' in q for q in queries), name
    (pending,) = [
        tile["widget"]["xyChart"]["dataSets"][0]["timeSeriesQuery"]["prometheusQuery"]
        for tile in dashboards["monitoring-dashboard"]["mosaicLayout"]["tiles"]
        if tile["widget"]["title"] == "Pending workloads, research-cluster-queue"
    ]
    assert pending == (
        'sum by (status) (kueue_pending_workloads{cluster_queue="research-cluster-queue",cluster="tpu-mr-manager"})'
    )
