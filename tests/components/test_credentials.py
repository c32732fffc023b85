"""What reads as a credential (components/credentials.py), for the config model's error lines and the policy pack:
whole PEM blocks, OpenAI keys only in their own forms, vLLM's credential flags however written, and environment
variables named for a credential that hold one."""

from __future__ import annotations

import pytest

from components import credentials

PEM = (
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nQWERTYbodyOfTheKey0123\n"
    "-----END PRIVATE KEY-----\n"
)


def test_a_pem_key_is_redacted_whole_its_body_too() -> None:
    line = f"tpu-stack:cluster.name: cluster name {PEM!r} is 124 characters; shorten it"
    redacted = "tpu-stack:cluster.name: cluster name '[redacted]\\n' is 124 characters; shorten it"
    assert credentials.redact(line) == redacted
    assert "QWERTYbodyOfTheKey0123" not in credentials.redact(PEM)


def test_a_pem_key_cut_short_is_redacted_to_the_end() -> None:
    cut = "key: -----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234\nabcdef"
    assert credentials.redact(cut) == "key: [redacted]"


SK_NAMES = [
    "acme-sk-llama-31-70b-instruct-v2",
    "acme/llama-33-70b-sk-instruct-finetuned-v2",
    "--served-model-name=acme-sk-llama-31-70b-instruct-v2",
    "models/sk-llama-3.1-70b-instruct-finetuned",
    "gs://acme-models/sk-checkpoints/llama-70b-step-000000120000",
    "sk-learn-models",  # a folder of scikit-learn models
    "sk-project-alpha-2025-llama-finetune-runs",
]


@pytest.mark.parametrize("text", SK_NAMES)
def test_names_paths_and_model_ids_with_sk_are_not_keys(text: str) -> None:
    assert not credentials.contains_credential(text)
    assert credentials.redact(text) == text


OPENAI_KEYS = [
    "sk-proj-4f9Qm2Lx8Vt1Zr6Wc3Yb0Kd7",
    "sk-svcacct-0Zkr4NUd4f_6LkfHfi3LlC8xKZQePX",
    "sk-admin-JWARXiHjpLXSh6W_0pFGb3sW7yr0cK",
    "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",  # the older form: 48 letters and digits
]


@pytest.mark.parametrize("key", OPENAI_KEYS)
@pytest.mark.parametrize("around", ["{}", "--api-key={}", "Authorization: Bearer {}", "'{}'", 'token="{}"'])
def test_openai_keys_are_found_where_a_value_starts(key: str, around: str) -> None:
    text = around.format(key)
    assert credentials.contains_credential(text)
    assert key not in credentials.redact(text)


@pytest.mark.parametrize(
    ("arg", "flag"),
    [
        ("--api-key=acme-internal-llm-key-7781", "--api-key"),
        ("--api_key=acme-internal-llm-key-7781", "--api-key"),  # vLLM reads `_` as `-`
        ("--API-KEY=acme-internal-llm-key-7781", "--api-key"),
        ("--api-key acme-internal-llm-key-7781", "--api-key"),  # flag and value as one item
        ("--api-k=acme-internal-llm-key-7781", "--api-key"),  # argparse takes an unambiguous start
        ("--hf_token=hf_x", "--hf-token"),
        ("exec python3 -m vllm.entrypoints.openai.api_server --port 8000 '--api-key=abc'", "--api-key"),
        ("--api-server-count=2", None),
        ("--api=1", None),  # too short to be one option
        ("--hf-config-path=/config", None),
        ("--max_model_len=8192", None),
        ("--served-model-name=api-key-demo", None),
    ],
)
def test_credential_flags_however_written(arg: str, flag: str | None) -> None:
    assert credentials.secret_flag(arg) == flag


def test_a_flag_alone_gives_no_value_a_flag_with_text_after_it_does() -> None:
    assert credentials.credential_flags("--api-key") == [("--api-key", False)]
    assert credentials.credential_flags("--api-key=") == [("--api-key", True)]
    assert credentials.credential_flags("serve --api-key x --port 8000") == [("--api-key", True)]


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("HF_TOKEN", "team-token-abc", True),
        ("OPENAI_API_KEY", "team-shared-key", True),
        ("DB_PASSWORD", "hunter2", True),
        ("CLIENT_SECRET", "abc123", True),
        ("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1", False),  # a switch
        ("USE_AUTH_TOKEN", "true", False),
        ("TOKEN_BUDGET", "4096", False),  # the word is not what it names
        ("MAX_TOKEN", "4096", False),
        ("HF_TOKEN_SECRET", "hf-token", False),  # the Secret's name
        ("HF_TOKEN_SECRET", "Zx9-pasted!value", True),
        ("HF_TOKEN_PATH", "/var/run/secrets/huggingface/token", False),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/var/secrets/google/key.json", False),
        ("API_KEY_FILE", "keys/api", False),
        ("HF_TOKEN", "", False),
    ],
)
def test_environment_variables_named_for_a_credential(name: str, value: str, secret: bool) -> None:
    assert credentials.secret_env(name, value) is secret
