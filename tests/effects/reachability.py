"""Who reaches whom through a stack's NetworkPolicies, as IBM's network-config-analyzer (NCA) computes it.

NCA reads NetworkPolicies, pods and namespaces offline and answers with the allowed connections between every pair
of endpoints (pods, and IP ranges outside the cluster). `make` installs it in `.nca-venv` (requirements-nca.txt).
Here the answer is turned into a matrix of named endpoints: pods by `namespace/name`, outside addresses by the name
the test gives them, connections as `TCP 80,443; UDP 53` or `all`.

NCA, like GKE Dataplane V2 (Cilium), never matches a pod by an ipBlock: `0.0.0.0/0` means addresses outside the
cluster's pods.
"""

from __future__ import annotations

import ipaddress
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from offline.vendor import REPO

NCA = REPO / ".nca-venv" / "bin" / "nca"
NCA_VERSION = "2.1.0"
Matrix = dict[tuple[str, str], str]


@dataclass(frozen=True)
class Pod:
    """A representative pod: `namespace/name` and the labels its controller gives it."""

    key: str
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]


def _pod(pod: Pod, index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "labels": dict(pod.labels)},
        "spec": {"containers": [{"name": "main", "image": "example.invalid/main:1"}]},
        "status": {"phase": "Running", "podIP": f"10.4.{index // 250}.{index % 250 + 1}", "hostIP": "10.128.0.9"},
    }


def _namespace(name: str) -> dict[str, Any]:
    """As the API server stores it: every namespace carries its own name as a label (Kubernetes 1.22+)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {NAME_LABEL: name}}}


NAME_LABEL = "kubernetes.io/metadata.name"


def analyze(
    policies: Sequence[Mapping[str, Any]], pods: Sequence[Pod], namespaces: Iterable[str]
) -> list[tuple[str, str, str]]:
    """NCA's connectivity map, one (source, destination, connections) per allowed pair, sources and destinations as
    NCA names them (`ns/name[Pod]`, `a.b.c.d-e.f.g.h`)."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "policies.yaml").write_text(yaml.safe_dump_all([dict(p) for p in policies]))
        (folder / "namespaces.yaml").write_text(
            yaml.safe_dump({"apiVersion": "v1", "kind": "NamespaceList", "items": [_namespace(n) for n in namespaces]})
        )
        (folder / "pods.yaml").write_text(
            yaml.safe_dump({"apiVersion": "v1", "kind": "PodList", "items": [_pod(p, i) for i, p in enumerate(pods)]})
        )
        result = subprocess.run(
            [
                str(NCA),
                "--connectivity",
                str(folder / "policies.yaml"),
                "--ns_list",
                str(folder / "namespaces.yaml"),
                "--pod_list",
                str(folder / "pods.yaml"),
                "--output_format",
                "txt_no_fw_rules",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    if result.returncode != 0:
        raise RuntimeError(f"nca failed ({result.returncode}): {result.stderr or result.stdout}")
    pairs = []
    for line in result.stdout.splitlines():
        match = re.fullmatch(r"(\S+) => (\S+) : (.+)", line.strip())
        if match:
            pairs.append((match[1], match[2], match[3]))
    return pairs


_CUBE = re.compile(r"\{protocols:(?P<protocols>[A-Z]+(?:, [A-Z]+)*)(?:,dst_ports:(?P<ports>[0-9,\-]+))?\}")


def connections(*texts: str) -> str:
    """NCA's connection texts for one pair (it may write a pair on several lines) in the matrix's form: `all`, or per
    protocol its destination ports (`TCP 80,443; UDP 53`); a protocol without ports is open on every port."""
    if "All connections" in texts:
        return "all"
    ports: dict[str, list[tuple[int, int]]] = {}
    for text in texts:
        cubes = list(_CUBE.finditer(text))
        if not cubes or _CUBE.sub("", text).strip(","):
            raise ValueError(f"connections NCA wrote in a form this reader does not know: {text!r}")
        for cube in cubes:
            ranges = [(1, 65535)]
            if cube["ports"]:
                ranges = [_port_range(part) for part in cube["ports"].split(",")]
            for protocol in cube["protocols"].split(", "):
                ports.setdefault(protocol, []).extend(ranges)
    return "; ".join(f"{protocol} {_ranges_text(ranges)}" for protocol, ranges in sorted(ports.items()))


def _port_range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def _ranges_text(ranges: list[tuple[int, int]]) -> str:
    merged: list[list[int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return ",".join(str(low) if low == high else f"{low}-{high}" for low, high in merged)


def _addresses_in(peer: str, addresses: Mapping[str, str]) -> list[str]:
    """The named outside addresses inside NCA's range `peer` (`a.b.c.d-e.f.g.h`, `a.b.c.d` or a CIDR)."""
    if "-" in peer:
        low, high = (ipaddress.ip_address(part) for part in peer.split("-", 1))
        inside = [name for name, ip in addresses.items() if low <= ipaddress.ip_address(ip) <= high]  # type: ignore[operator]
    elif "/" in peer:
        network = ipaddress.ip_network(peer)
        inside = [name for name, ip in addresses.items() if ipaddress.ip_address(ip) in network]
    else:
        inside = [name for name, ip in addresses.items() if ipaddress.ip_address(ip) == ipaddress.ip_address(peer)]
    return inside


def _endpoints(peer: str, addresses: Mapping[str, str]) -> list[str]:
    if peer.endswith("[Pod]"):
        return [peer.removesuffix("[Pod]")]
    return _addresses_in(peer, addresses)


def matrix(
    policies: Sequence[Mapping[str, Any]],
    pods: Sequence[Pod],
    namespaces: Iterable[str],
    addresses: Mapping[str, str],
    *,
    guarded: Iterable[str],
) -> Matrix:
    """(source, destination) -> connections for every allowed pair with a pod of a `guarded` namespace (one the
    stack writes policies for) at either end; pods elsewhere and outside addresses talk freely among themselves."""
    watched = set(guarded)
    texts: dict[tuple[str, str], list[str]] = {}
    for source, destination, text in analyze(policies, pods, namespaces):
        for src in _endpoints(source, addresses):
            for dst in _endpoints(destination, addresses):
                if src.split("/", 1)[0] in watched or dst.split("/", 1)[0] in watched:
                    texts.setdefault((src, dst), []).append(text)
    return {pair: connections(*found) for pair, found in texts.items()}


def differences(expected: Matrix, found: Matrix) -> list[str]:
    """Readable lines for every pair whose connections differ (`none` for a pair that is not allowed)."""
    lines = []
    for pair in sorted(set(expected) | set(found)):
        want, got = expected.get(pair, "none"), found.get(pair, "none")
        if want != got:
            lines.append(f"{pair[0]} -> {pair[1]}: expected {want}, analyzer says {got}")
    return lines
