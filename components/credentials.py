"""What a credential looks like, for the config model (which refuses one where it does not belong and never repeats it
in an error line) and the policy pack (which refuses one written literally into a workload).

Pure standard library, so the policy pack (which runs in its own virtualenv) imports the same rules.
"""

from __future__ import annotations

import re

_TOKEN_START = r"(?:^|(?<=[\s='\"`]))"
"""Where a key with a common prefix (`sk-`) may start: the text's start, after whitespace, `=` or a quote. Inside a
word (`acme-sk-llama`, `llama-70b-sk-instruct`) the same letters are a name."""
TOKEN_PATTERNS = (
    re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}"),
    # Hugging Face user access tokens: `hf_` and 34 letters and digits (huggingface_hub's token docs).
    re.compile(r"AIza[0-9A-Za-z_-]{35}"),
    # Google API keys.
    re.compile(r"(?<![A-Za-z0-9])ya29\.[0-9A-Za-z_-]{20,}"),
    # Google OAuth 2.0 access tokens.
    re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    # GitHub tokens.
    re.compile(_TOKEN_START + r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{48}(?![A-Za-z0-9_-]))"),
    # OpenAI API keys: project, service-account and admin keys (`sk-proj-`, `sk-svcacct-`, `sk-admin-`) and the
    # older `sk-` with 48 letters and digits (the forms gitleaks' openai-api-key rule knows,
    # cmd/generate/config/rules/openai.go).
    re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"),
    # JSON Web Tokens, which Kubernetes service account tokens are.
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.DOTALL),
    # PEM private keys (a service account key file's `private_key`): the whole block, its body too, to the END line
    # or, for a key cut short, to the end of the text.
)
"""Forms of credentials that never occur in a name, path, image or setting the stack takes."""
REDACTED = "[redacted]"

SECRET_FLAGS = ("--api-key", "--hf-token")
"""vLLM arguments whose value is a credential: the OpenAI server's `--api-key` and the engine's `--hf-token`
(vllm ModelConfig.hf_token, "the token to use as HTTP bearer authorization for remote files"). A value there is
readable by whoever can read the Deployment or LeaderWorkerSet, and is kept in the stack's state."""
_FLAG = re.compile(r"(?:^|(?<=[\s'\"]))--[A-Za-z0-9][A-Za-z0-9_.-]*")
"""A long option anywhere in an argument: alone, or inside a shell script (`sh -c "... --api-key=x"`)."""

_SECRET_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SECRET_?KEY|CREDENTIALS?)$",
    re.IGNORECASE,
)
"""A variable named for a credential: the name ends with the credential's word (HF_TOKEN, OPENAI_API_KEY,
DB_PASSWORD, CLIENT_SECRET). A name that goes on (TOKEN_BUDGET, HF_TOKEN_PATH, API_KEY_FILE) names something else."""
_SECRET_REFERENCE = re.compile(
    r"(?:TOKEN|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)_SECRET$", re.IGNORECASE
)
"""`HF_TOKEN_SECRET`: the Secret that holds the token, when its value is an object name."""
_OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
"""A Kubernetes object name (DNS-1123 subdomain)."""
_SETTING = re.compile(r"^(?:[+-]?\d+(?:\.\d+)?|true|false|yes|no|on|off)$", re.IGNORECASE)
"""A number or a switch (HF_HUB_DISABLE_IMPLICIT_TOKEN=1, TOKEN_LIMIT=4096): a setting, never a credential."""


def contains_credential(text: str) -> bool:
    """`text` holds something of a credential's form."""
    return any(pattern.search(text) for pattern in TOKEN_PATTERNS)


def redact(text: str) -> str:
    """`text` with every credential-shaped part replaced, for error lines and reports."""
    for pattern in TOKEN_PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def flag_name(flag: str) -> str:
    """A long option as vLLM reads its name: `_` and `-` alike (vllm utils/argparse_utils.py FlexibleArgumentParser
    turns `_` into `-` before parsing), and, for matching credentials only, lower case (argparse would refuse
    `--API-KEY`, but the value is in the object all the same)."""
    return flag.partition("=")[0].replace("_", "-").lower()


def _credential_flag(flag: str) -> str | None:
    """The credential flag `flag` names: itself, or an unambiguous start of it (`--api-k`), which argparse takes for
    the whole option unless a parser turns abbreviations off (Python's argparse, allow_abbrev)."""
    name = flag_name(flag)
    for secret in SECRET_FLAGS:
        first_word = secret.index("-", 2) + 1  # `--api-`: a start this short is ambiguous
        if name == secret or (secret.startswith(name) and len(name) > first_word):
            return secret
    return None


def credential_flags(text: str) -> list[tuple[str, bool]]:
    """(credential flag, whether `text` itself gives it a value) for each credential flag in `text`: an argument
    (`--api-key=v`, `--api_key=v`, `--api-key v` as one item) or a shell script that runs the server."""
    found = []
    for match in _FLAG.finditer(text):
        secret = _credential_flag(match.group())
        if secret is not None:
            found.append((secret, bool(text[match.end() :].strip(" \t\n'\""))))
    return found


def secret_flag(arg: str) -> str | None:
    """The credential flag an argument sets, however written (`--hf-token=...`, `--api_key`, `--API-KEY ...`), or
    None."""
    flags = credential_flags(arg)
    return flags[0][0] if flags else None


def secret_env(name: str, value: str) -> bool:
    """An environment variable named for a credential (HF_TOKEN, OPENAI_API_KEY, DB_PASSWORD) with a value that can be
    one: not a number or switch, not a file's path, not the name of the Secret that holds it
    (HF_TOKEN_SECRET=hf-token)."""
    value = value.strip()
    if not value or _SETTING.match(value) or value.startswith("/"):
        return False
    if _SECRET_REFERENCE.search(name) and _OBJECT_NAME.match(value):
        return False
    return bool(_SECRET_NAME.search(name))
