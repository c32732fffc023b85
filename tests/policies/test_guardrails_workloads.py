"""policies/guardrails/workloads.py: servers off the host network (Saxml's model-server JobSets too), and no literal
credential in a workload, without flagging names, settings and paths that only look like one."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from components import llm_serving, saxml
from tests.policies.test_rules import check, res

JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
TPU = {"requests": {"google.com/tpu": 4}, "limits": {"google.com/tpu": 4}}


def jobset(labels: dict[str, str], *, host_network: bool) -> dict[str, Any]:
    pod = {"hostNetwork": host_network, "containers": [{"name": "server", "image": "x:1.0.0", "resources": TPU}]}
    job = {"name": "server", "template": {"spec": {"template": {"spec": pod}}}}
    return res(
        JOBSET, "servers", {"metadata": {"name": "servers", "labels": labels}, "spec": {"replicatedJobs": [job]}}
    )


def policies(rules: ModuleType, resource: dict[str, Any]) -> list[str]:
    return [v["policy"] for v in check(rules, [resource])]


def test_the_policy_knows_the_serving_components_labels(rules: ModuleType) -> None:
    from guardrails import workloads

    assert {saxml.PART_OF[workloads.PART_OF], llm_serving.PART_OF[workloads.PART_OF]} == set(workloads.SERVING_PARTS)


@pytest.mark.parametrize("part", ["saxml", "llm-serving"])
def test_a_serving_jobset_stays_off_the_host_network_tpu_pods_included(rules: ModuleType, part: str) -> None:
    found = [v for v in check(rules, [jobset({"app.kubernetes.io/part-of": part}, host_network=True)])]
    assert [(v["policy"], v["message"]) for v in found] == [
        (
            "no-host-network-servers",
            "a pod template of this JobSet sets hostNetwork: its pods serve clients and must stay off the host "
            "network (it bypasses Workload Identity and the serving NetworkPolicies); remove hostNetwork",
        )
    ]
    assert policies(rules, jobset({"app.kubernetes.io/part-of": part}, host_network=False)) == []


def test_a_training_jobset_of_tpu_pods_may_use_the_host_network(rules: ModuleType) -> None:
    assert policies(rules, jobset({"app": "trainer"}, host_network=True)) == []


def server(container: dict[str, Any]) -> dict[str, Any]:
    spec = {"template": {"spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-tpu:v0.27.0", **container}]}}}
    return res(DEPLOYMENT, "server", {"metadata": {"name": "server"}, "spec": spec})


@pytest.mark.parametrize(
    "container",
    [
        {"env": [{"name": "HF_HUB_DISABLE_IMPLICIT_TOKEN", "value": "1"}]},
        {"env": [{"name": "TOKEN_BUDGET", "value": "4096"}]},
        {"env": [{"name": "HF_TOKEN_SECRET", "value": "hf-token"}]},
        {"env": [{"name": "HF_TOKEN_PATH", "value": "/var/run/secrets/huggingface/token"}]},
        {"args": ["--served-model-name=acme-sk-llama-31-70b-instruct-v2"]},
        {"args": ["--model=acme/llama-33-70b-sk-instruct-finetuned-v2", "--download-dir=/models/sk-cache"]},
        {"args": ["--max_num_seqs=128", "--api-key"]},  # the flag with no value: vLLM refuses to start, no key leaks
    ],
    ids=["a switch", "a number", "a Secret's name", "a path", "an sk- name", "an sk- model id and path", "no value"],
)
def test_names_settings_and_paths_are_not_credentials(rules: ModuleType, container: dict[str, Any]) -> None:
    assert policies(rules, server(container)) == []


SETS_KEY = (
    "container 'vllm': an argument sets --api-key; arguments are readable by anyone who can read the object: pass "
    "the credential from a Secret (an environment variable from secretKeyRef, or a mounted file)"
)


@pytest.mark.parametrize(
    "args",
    [
        ["--api_key=acme-internal-llm-key-7781"],
        ["--API-KEY=acme-internal-llm-key-7781"],
        ["--api-key acme-internal-llm-key-7781"],
        ["--api-key", "acme-internal-llm-key-7781"],
    ],
)
def test_a_credential_flag_with_a_value_however_written(rules: ModuleType, args: list[str]) -> None:
    found = [v for v in check(rules, [server({"args": args})]) if v["policy"] == "no-literal-secrets"]
    assert [v["message"] for v in found] == [SETS_KEY]
    assert all("acme-internal-llm-key-7781" not in v["message"] for v in found)


def test_a_credential_flag_inside_a_leaders_shell_script(rules: ModuleType) -> None:
    script = "ray start --head && exec python3 -m vllm.entrypoints.openai.api_server --port 8000 --api_key=k-7781"
    leader = {"spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-tpu:v0.27.0", "command": ["/bin/sh", "-c"],
                                       "args": [script]}]}}  # fmt: skip
    resource = res(LWS, "group", {"spec": {"leaderWorkerTemplate": {"leaderTemplate": leader}}})
    found = [v["message"] for v in check(rules, [resource]) if v["policy"] == "no-literal-secrets"]
    assert found == [SETS_KEY]


def test_a_credential_by_its_name_is_still_refused(rules: ModuleType) -> None:
    found = check(rules, [server({"env": [{"name": "OPENAI_API_KEY", "value": "team-shared-key"}]})])
    assert [v["policy"] for v in found] == ["no-literal-secrets"]
    assert "team-shared-key" not in found[0]["message"]
