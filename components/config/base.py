"""What every part of the config shares: the base model, the error type, and the name, label, duration and
location rules that Google Cloud, GKE and Kubernetes apply.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata

from pulumi import RunError
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from components.credentials import redact

PROJECT = "tpu-stack"
# GKE node pool names: a DNS label of at most 40 characters. Cluster names: at most 40, start with a letter.
DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
GKE_NAME_MAX = 40
_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?[smhd])+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class ConfigError(RunError):
    """Invalid stack configuration; `lines` holds one message per problem.

    A RunError, so the real engine prints the lines without a traceback. A line never repeats a credential it
    quotes (a token pasted where a name belongs): that part reads `[redacted]`.
    """

    def __init__(self, lines: list[str]) -> None:
        lines = [redact(line) for line in lines]
        self.lines = lines
        super().__init__("\n".join(lines))


class ConfigModel(BaseModel):
    """Every config model: camelCase keys in YAML, snake_case fields; an unknown key is an error; frozen.

    Each field's docstring is its entry in the config reference (offline/configdocs.py, `make config-docs`)."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True, strict=False
    )


def dns_label_problem(name: str, what: str) -> str | None:
    if len(name) > GKE_NAME_MAX:
        return f"{what} {name!r} is {len(name)} characters; GKE allows at most {GKE_NAME_MAX}: shorten it"
    if not DNS_LABEL.match(name):
        return f"{what} {name!r} must be a DNS label: lowercase letters, digits and '-', starting with a letter"
    return None


def parse_duration(text: str) -> int:
    """'24h' -> 86400 seconds; units s, m, h, d, also combined as Go writes durations ('1h30m', '45m0s').

    The one parser of the repo: config run limits and the custom timeouts the offline policy check reads."""
    if not _DURATION.match(text):
        raise ValueError(f"{text!r} is not a duration; use a number and a unit, e.g. 3600s, 90m, 24h, 7d")
    return round(sum(float(number) * _DURATION_UNITS[unit] for number, unit in _DURATION_PART.findall(text)))


GCP_LABEL_MAX = 63
GCP_LABELS_PER_RESOURCE = 64
GCP_LABEL_MAX_BYTES = 128


def _gcp_label_chars(text: str) -> bool:
    """Lowercase letters of any script (Unicode Ll, Lo), digits, '_' and '-'."""
    return all(
        unicodedata.category(c) in ("Ll", "Lo") or unicodedata.category(c).startswith("N") or c in "_-" for c in text
    )


def gcp_label_problem(key: str, value: str) -> str | None:
    """Google Cloud resource labels: keys 1-63 characters starting with a lowercase letter, values 0-63; both of
    lowercase letters, digits, '_' and '-' (international lowercase letters too), each at most 128 bytes."""
    if not (1 <= len(key) <= GCP_LABEL_MAX and len(key.encode()) <= GCP_LABEL_MAX_BYTES and _gcp_label_chars(key)) or (
        unicodedata.category(key[0]) not in ("Ll", "Lo")
    ):
        return (
            f"label key {key!r} must be 1-{GCP_LABEL_MAX} lowercase letters, digits, '_' or '-', starting with a "
            "lowercase letter (Google Cloud labels)"
        )
    if len(value) > GCP_LABEL_MAX or len(value.encode()) > GCP_LABEL_MAX_BYTES or not _gcp_label_chars(value):
        return (
            f"value {value!r} must be at most {GCP_LABEL_MAX} lowercase letters, digits, '_' or '-' "
            "(Google Cloud labels)"
        )
    return None


def gcp_label_value(text: str) -> str:
    """`text` as a Google Cloud label value: stack names may hold upper case and '.'."""
    return re.sub(r"[^a-z0-9_-]", "-", text.lower())[:GCP_LABEL_MAX]


K8S_LABEL_MAX = 63
K8S_PREFIX_MAX = 253
_K8S_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_K8S_NAME_RULE = "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"


def node_label_key_problem(key: str) -> str | None:
    """Kubernetes label (and taint) keys: an optional DNS-subdomain prefix and '/', then a name of 1-63 characters."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > K8S_PREFIX_MAX or not _DNS_SUBDOMAIN.match(prefix)):
        return (
            f"key {key!r}: prefix {prefix!r} must be a DNS subdomain (lowercase letters, digits, '-' and '.', at "
            f"most {K8S_PREFIX_MAX} characters), e.g. example.com/team"
        )
    if len(name) > K8S_LABEL_MAX or not _K8S_LABEL_NAME.match(name):
        return f"key {key!r}: the name {name!r} must be 1-{K8S_LABEL_MAX} {_K8S_NAME_RULE} (Kubernetes labels)"
    return None


def node_label_value_problem(value: str) -> str | None:
    """Kubernetes label (and taint) values: empty, or at most 63 characters of the name's form."""
    if value and (len(value) > K8S_LABEL_MAX or not _K8S_LABEL_NAME.match(value)):
        return f"value {value!r} must be at most {K8S_LABEL_MAX} {_K8S_NAME_RULE} (Kubernetes labels)"
    return None


_PROJECT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
_ZONE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z]$")


def project_id_problem(project: str) -> str | None:
    if project.isdigit():
        return f"{project!r} is a project number; give the project id (e.g. tpu-stack-dev)"
    if not _PROJECT_ID.match(project):
        return (
            f"{project!r} is not a project id: 6-30 lowercase letters, digits and '-', starting with a letter and "
            "not ending with '-'"
        )
    return None


def zone_region(location: str) -> str | None:
    """The region of a zone (`us-east5-a` -> `us-east5`); None if `location` is not a zone."""
    match = _ZONE.match(location.lower())
    return match.group(1) if match else None


def is_zone(location: str) -> bool:
    """`us-east5-a` is a zone, `us-east5` a region."""
    return location.count("-") == 2


KUEUE_NAMESPACE = "kueue-system"
JOBSET_NAMESPACE = "jobset-system"
LWS_NAMESPACE = "lws-system"
"""The LeaderWorkerSet chart's CRD names its conversion webhook Service in `lws-system`: the chart lives there."""
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
"""An OCI image digest as a reference carries it after `@`."""
BUILT_IN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
"""Namespaces every cluster has; the stack uses them but never declares (owns) them."""
RESERVED_NAMESPACES = (
    "kube-system",
    "kube-public",
    "kube-node-lease",
    KUEUE_NAMESPACE,
    JOBSET_NAMESPACE,
    LWS_NAMESPACE,
)


def cluster_name(name: str) -> str:
    """A GKE cluster name (the stack's, a MultiKueue worker's): a DNS label of at most 40 characters."""
    problem = dns_label_problem(name, "cluster name")
    if problem:
        raise ValueError(problem)
    return name


def region_problem(region: str, key: str) -> str | None:
    """Why `region` (the value of `key`) is no region: a zone names its region."""
    zone_of = zone_region(region)
    if zone_of is not None:
        return f"{region!r} is a zone; {key} takes its region: {zone_of}"
    if not REGION.match(region):
        return f"{region!r} is not a region like us-east5"
    return None


def kubernetes_name(name: str) -> str:
    """Queue, team, namespace and service account names: DNS labels of at most 63 characters."""
    if len(name) > 63 or not DNS_LABEL.match(name):
        raise ValueError(
            f"{name!r} must be a DNS label of at most 63 characters: lowercase letters, digits and '-', "
            "starting with a letter"
        )
    return name


def optional_kubernetes_name(name: str | None) -> str | None:
    return None if name is None else kubernetes_name(name)


WIDEST_PREFIX = {4: 8, 6: 16}
"""Widest client range a load balancer may admit (IPv4 /8, IPv6 /16); the policy pack uses the same bound."""


def source_range(cidr: str) -> str:
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        raise ValueError(f"{cidr!r} is not a CIDR range like 203.0.113.0/24") from None
    if network.prefixlen == 0:
        raise ValueError(f"{cidr!r} admits every address; list the client CIDRs instead")
    if network.prefixlen < WIDEST_PREFIX[network.version]:
        raise ValueError(
            f"{cidr!r} covers a large part of the internet; list client CIDRs of /{WIDEST_PREFIX[network.version]} "
            "or narrower"
        )
    return cidr


def image_digest(digest: str | None) -> str | None:
    """An optional controller image digest (`sha256:` and 64 hex digits), as the charts' pinning keys take it."""
    if digest is not None and not DIGEST.match(digest):
        raise ValueError(f"{digest!r} is not an image digest; write sha256: and its 64 hex digits")
    return digest
