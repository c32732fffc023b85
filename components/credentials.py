"""What a credential looks like, for the config model (which refuses one where it does not belong and never repeats it
in an error line) and the policy pack (which refuses one written literally into a workload).

Pure standard library, so the policy pack (which runs in its own virtualenv) imports the same rules.
"""

from __future__ import annotations

import re

TOKEN_PATTERNS = (
    re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}"),
    # Hugging Face user access tokens: `hf_` and 34 letters and digits (huggingface_hub's token docs).
    re.compile(r"AIza[0-9A-Za-z_-]{35}"),
    # Google API keys.
    re.compile(r"(?<![A-Za-z0-9])ya29\.[0-9A-Za-z_-]{20,}"),
    # Google OAuth 2.0 access tokens.
    re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    # GitHub tokens.
    re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}"),
    # OpenAI-style API keys.
    re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"),
    # JSON Web Tokens, which Kubernetes service account tokens are.
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    # PEM private keys (a service account key file's `private_key`).
)
"""Forms of credentials that never occur in a name, path, image or setting the stack takes."""
REDACTED = "[redacted]"

SECRET_FLAGS = ("--api-key", "--hf-token")
"""vLLM arguments whose value is a credential: the OpenAI server's `--api-key` and the engine's `--hf-token`
(vllm ModelConfig.hf_token, "the token to use as HTTP bearer authorization for remote files"). A value there is
readable by whoever can read the Deployment or LeaderWorkerSet, and is kept in the stack's state."""

_SECRET_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)(?:_|$)", re.IGNORECASE
)
_NOT_A_VALUE = ("_PATH", "_FILE", "_DIR")


def contains_credential(text: str) -> bool:
    """`text` holds something of a credential's form."""
    return any(pattern.search(text) for pattern in TOKEN_PATTERNS)


def redact(text: str) -> str:
    """`text` with every credential-shaped part replaced, for error lines and reports."""
    for pattern in TOKEN_PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def secret_flag(arg: str) -> str | None:
    """The credential flag `arg` sets (`--hf-token=...` or `--hf-token` alone, its value the next item), or None."""
    flag = arg.partition("=")[0]
    return flag if flag in SECRET_FLAGS else None


def secret_env_name(name: str) -> bool:
    """An environment variable named for a credential (HF_TOKEN, OPENAI_API_KEY, DB_PASSWORD), not for a file that
    holds one (HF_TOKEN_PATH, GOOGLE_APPLICATION_CREDENTIALS_FILE)."""
    return bool(_SECRET_NAME.search(name)) and not name.upper().endswith(_NOT_A_VALUE)
