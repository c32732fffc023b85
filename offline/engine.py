"""Run the Pulumi program with the SDK's mock engine and record every registration.

This is how the stack previews with no cloud credentials and no Pulumi CLI: the program in `__main__.py`
runs unchanged; a MockMonitor subclass records what the real engine would receive (type, name, parent,
dependencies, options, camelCase inputs). The CLI runs a stack file through `run_stack` (the benchmarks time
the CLI); the tests call `run_program` with inline config, or `run_stack` for the dev and prod files.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import difflib
import gc
import json
import logging
import os
import runpy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import config as runtime_config
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime.proto import resource_pb2, source_pb2
from pulumi.runtime.stack import run_pulumi_func

from components.config import PROJECT, ConfigError, load
from offline import charts
from offline.markers import SECRET, UNKNOWN
from offline.vendor import REPO

PROGRAM = REPO / "__main__.py"
MOCK_PROJECT_NUMBER = "123456789012"
_UNSAFE_ENV_PREFIXES = ("GOOGLE_", "CLOUDSDK_", "KUBECONFIG", "PULUMI_CONFIG")


@dataclass
class Plan:
    """What one run of the program declared: plan.json's content."""

    project: str
    stack: str
    resources: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    violations: list[dict[str, Any]] = field(default_factory=list)
    unrendered_in_new_stack: list[str] = field(default_factory=list)
    """Charts a new stack's preview cannot render (their cluster does not exist yet); shown in the report."""
    summary: dict[str, Any] = field(default_factory=dict)
    """Capacity and queues, from the config the program ran with (offline/summary.py); set by the preview."""
    adoption: Any = None
    """An adopted stack's first update (offline/adopted.py Judged); set by the preview when the stack imports."""
    logged: list[tuple[str, str]] = field(default_factory=list)
    """(level, message) of what the program logged (`pulumi.log.warn` ...), which the real engine prints."""
    config: dict[str, str] = field(default_factory=dict)
    """The stack config the program ran with, as the engine hands it to the program and the policy pack."""

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "stack": self.stack,
            "summary": self.summary,
            "resources": self.resources,
            "outputs": self.outputs,
            "violations": self.violations,
            **({"adoption": self.adoption.to_json()} if self.adoption is not None else {}),
        }

    def by_type(self, type_token: str) -> list[dict[str, Any]]:
        return [r for r in self.resources if r["type"] == type_token]

    def one(self, type_token: str, name: str) -> dict[str, Any]:
        matches = [r for r in self.resources if r["type"] == type_token and r["name"] == name]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} resources of type {type_token} named {name}")
        return matches[0]


def _computed_outputs(
    type_token: str, name: str, inputs: Mapping[str, Any], registered: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Outputs the cloud computes beside the inputs it echoes; without them `apply` callbacks never run under mocks.

    Only what the real platform reports, each value from its source: the GKE API reference (cloud.google.com/
    kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters) as terraform-provider-google's flatteners
    read it into the state pulumi-gcp returns (google/services/container/resource_container_cluster.go at e03b762:
    flattenControlPlaneEndpointsConfig, flattenPrivateClusterConfig), and what the other providers' reads fill in.
    `registered`: URN -> inputs of what the program registered so far (a cluster's subnetwork, for the address GKE
    gives a Private Service Connect control plane there). A type not listed computes nothing here: its state is its
    inputs, as the provider echoes them.
    """
    project = inputs.get("project", "mock-project")
    resource_name = inputs.get("name", name)
    if type_token == "gcp:container/cluster:Cluster":
        return cluster_outputs(str(project), str(resource_name), inputs, registered or {})
    if type_token == "gcp:serviceaccount/account:Account":
        # email, name (the resource name) and member: resource_google_service_account.go Read.
        email = f"{inputs.get('accountId')}@{project}.iam.gserviceaccount.com"
        return {
            "email": email,
            "name": f"projects/{project}/serviceAccounts/{email}",
            "member": f"serviceAccount:{email}",
        }
    if type_token == "gcp:storage/bucket:Bucket":
        # url: resource_storage_bucket.go Read sets url = "gs://" + name; selfLink: the bucket's API selfLink.
        return {
            "url": f"gs://{resource_name}",
            "selfLink": f"https://www.googleapis.com/storage/v1/b/{resource_name}",
        }
    if type_token in ("gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork"):
        # selfLink: the Compute API's selfLink of the network or subnetwork (the program passes `name` on).
        subnetwork = type_token == "gcp:compute/subnetwork:Subnetwork"
        where = f"regions/{inputs.get('region')}/subnetworks" if subnetwork else "global/networks"
        return {"selfLink": f"https://www.googleapis.com/compute/v1/projects/{project}/{where}/{resource_name}"}
    if type_token == "kubernetes:core/v1:Service" and inputs.get("spec", {}).get("type") == "LoadBalancer":
        # status.loadBalancer.ingress: the address the load balancer controller writes (a documentation address).
        return {"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.20"}]}}}
    return {}


DNS_ENDPOINT_SUFFIX = "gke.goog"
PUBLIC_ENDPOINT = "192.0.2.10"
"""A documentation address (RFC 5737) standing for the external address GKE gives an IP endpoint."""
CHANNEL_VERSION = "1.33.5-gke.1308000"
"""A 1.33 patch the REGULAR and STABLE channels have reported, for clusters on another channel than these two."""
REGULAR_VERSION = "1.34.3-gke.1318000"
"""A REGULAR version: its "Default patch version for cluster creation" in GKE's release notes (current versions table,
https://cloud.google.com/kubernetes-engine/docs/release-notes), the version Cluster Toolkit's TPU7x example asks for."""
RAPID_VERSION = "1.35.2-gke.1842000"
"""A Rapid version GKE's dynamic slicing page names ("1.35.2-gke.1842000 or later, in the Rapid channel",
cloud.google.com/kubernetes-engine/docs/how-to/use-gke-dynamic-slicing)."""
MINOR_VERSIONS = {
    "1.33": CHANNEL_VERSION,
    "1.34": "1.34.0-gke.2201000",
    "1.35": RAPID_VERSION,
}
"""A patch GKE has reported for each minor, for a cluster without a channel created at a minor (`1.34`): GKE creates it
at a patch of that minor. 1.34.0-gke.2201000 is the version GKE's Ironwood page names (cloud.google.com/
kubernetes-engine/docs/concepts/tpu-ironwood, Availability). A minor not listed reports the minor itself."""


def cluster_outputs(
    project: str, name: str, inputs: Mapping[str, Any], registered: Mapping[str, Any]
) -> dict[str, Any]:
    """What GKE reports of a cluster where the program or a stack policy reads it, per configuration:

    - controlPlaneEndpointsConfig.dnsEndpointConfig.endpoint, on every cluster: `gke-<36 hex>.<region>.gke.goog` (the
      form a real cluster's kubectl error shows in GoogleCloudPlatform/gcpdiag#115), one per cluster. The flattener
      reports its four fields and, of the IP endpoints, `enabled` only.
    - endpoint: the external IP with the IP endpoints on, else the DNS hostname (reported by a real cluster with
      ipEndpointsConfig.enabled false: gke-labs/kube-agents#1797, #1806).
    - privateClusterConfig as flattenPrivateClusterConfig builds it: enablePrivateEndpoint is the negation of
      ipEndpointsConfig.enablePublicEndpoint (the provider sends true with the IP endpoints on, nothing with them off,
      expandControlPlaneEndpointsConfig); privateEndpoint and publicEndpoint are "Output only ... Only populated if
      enabled" (IPEndpointsConfig in the API reference): empty with the IP endpoints off; the internal one is in the
      peering range of a cluster created with masterIpv4CidrBlock (GKE picks; here its second address), else in the
      node subnetwork (Private Service Connect); masterIpv4CidrBlock and peeringName only for a peering cluster;
      enablePrivateNodes from networkConfig.defaultEnablePrivateNodes. Autopilot reports the same fields.
    - masterVersion: a full version pinned (`1.34.0-gke.2201000`) as pinned; else on a channel the channel's version
      (RAPID_VERSION on RAPID, REGULAR_VERSION on REGULAR, else CHANNEL_VERSION); without a channel a patch of the
      minor pinned (MINOR_VERSIONS).
    """
    import hashlib
    import ipaddress

    from components.config.base import zone_region

    location = str(inputs.get("location") or "")
    digest = hashlib.sha256(f"{project}/{location}/{name}".encode()).hexdigest()
    dns = f"gke-{digest[:36]}.{zone_region(location) or location}.{DNS_ENDPOINT_SUFFIX}"
    sent = inputs.get("controlPlaneEndpointsConfig") or {}
    ip_enabled = (sent.get("ipEndpointsConfig") or {}).get("enabled") is not False
    dns_sent = sent.get("dnsEndpointConfig") or {}
    endpoints = {
        "dnsEndpointConfig": {
            "endpoint": dns,
            "allowExternalTraffic": bool(dns_sent.get("allowExternalTraffic")),
            "enableK8sTokensViaDns": bool(dns_sent.get("enableK8sTokensViaDns")),
            "enableK8sCertsViaDns": bool(dns_sent.get("enableK8sCertsViaDns")),
        },
        "ipEndpointsConfig": {"enabled": ip_enabled},
    }
    private_sent = inputs.get("privateClusterConfig") or {}
    master = str(private_sent.get("masterIpv4CidrBlock") or "")
    private_endpoint = ""
    if ip_enabled and master:
        private_endpoint = str(ipaddress.ip_network(master)[2])
    elif ip_enabled:
        subnet = next(
            (
                r
                for r in registered.values()
                if isinstance(r, Mapping) and r.get("name") == inputs.get("subnetwork") and r.get("ipCidrRange")
            ),
            None,
        )
        private_endpoint = str(ipaddress.ip_network(subnet["ipCidrRange"])[2]) if subnet else ""
    private = {
        "enablePrivateEndpoint": not ip_enabled,
        "privateEndpoint": private_endpoint,
        "privateEndpointSubnetwork": "",
        "publicEndpoint": PUBLIC_ENDPOINT if ip_enabled else "",
        "masterGlobalAccessConfig": {"enabled": False},
        "peeringName": f"gke-n{digest[36:52]}-{digest[52:56]}-{digest[56:60]}-peer" if master else "",
        "masterIpv4CidrBlock": master,
        "enablePrivateNodes": private_sent.get("enablePrivateNodes") is True,
    }
    pinned = str(inputs.get("minMasterVersion") or "")
    channel = (inputs.get("releaseChannel") or {}).get("channel")
    if "-gke." in pinned:
        version = pinned
    elif channel not in (None, "UNSPECIFIED"):
        version = {"RAPID": RAPID_VERSION, "REGULAR": REGULAR_VERSION}.get(str(channel), CHANNEL_VERSION)
    else:
        version = MINOR_VERSIONS.get(pinned, pinned) if pinned else CHANNEL_VERSION
    return {
        "name": name,
        "endpoint": PUBLIC_ENDPOINT if ip_enabled else dns,
        "controlPlaneEndpointsConfig": endpoints,
        "privateClusterConfig": private,
        # masterAuth.clusterCaCertificate: base64 of the cluster CA (a stand-in; the kubeconfig names no CA).
        "masterAuth": {"clusterCaCertificate": "bW9jay1jYQ=="},
        "masterVersion": version,
        "selfLink": f"https://container.googleapis.com/v1/projects/{project}/locations/{location}/clusters/{name}",
    }


class _Mocks(pulumi.runtime.Mocks):
    """`known_outputs`: the cloud's computed outputs (emails, endpoints) are filled in, as for a deployed stack;
    without, a resource reports only its inputs and everything else stays unknown, as in a new stack's preview
    (the SDK resolves an output the engine did not return to unknown during preview)."""

    def __init__(self, known_outputs: bool = True) -> None:
        self.known_outputs = known_outputs

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[Any, Any]]:
        computed = _computed_outputs(args.typ, args.name, args.inputs) if self.known_outputs else {}
        state = {**args.inputs, **computed}
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        # No failures is an empty list: the SDK's mock monitor iterates it (None raises TypeError).
        if args.token == "gcp:organizations/getProject:getProject":
            project = args.args.get("projectId", "mock-project")
            return {"projectId": project, "number": MOCK_PROJECT_NUMBER, "name": project}, []
        return {}, []


def _no_stack_trace() -> source_pb2.StackTrace:
    return source_pb2.StackTrace()


# The SDK captures the Python stack of every registration for the engine's diagnostics (source positions);
# the offline plan records none, and the capture costs about a tenth of each registration.
sdk_resource._get_stack_trace = _no_stack_trace

_WORKER_LOOPS: set[asyncio.AbstractEventLoop] = set()


@atexit.register
def _close_worker_loops() -> None:
    """The SDK gives each gRPC worker thread an event loop; close them before interpreter teardown."""
    for loop in _WORKER_LOOPS:
        if not loop.is_closed() and not loop.is_running():
            loop.close()


class DuplicateUrn(Exception):
    """The program registered a second resource of one URN, which the engine refuses: pulumi
    pkg/resource/deploy/step_generator.go generateURN bails the deployment with sdk/go/common/diag/errors.go
    GetDuplicateResourceURNError, whose message this carries."""


class _RecordingMonitor(mocks.MockMonitor):
    """Keeps what the real engine would receive, in registration order."""

    def __init__(self, recorded: list[dict[str, Any]], known_outputs: bool = True) -> None:
        self.computing = _Mocks(known_outputs)
        super().__init__(self.computing)
        self.recorded = recorded
        self.transforms: dict[str, list[pulumi.ResourceTransform]] = {}
        """URN -> the transforms registered with it, which the engine runs on its children (offline/charts.py)."""

    def Invoke(self, request: Any) -> Any:
        response = super().Invoke(request)
        _WORKER_LOOPS.add(asyncio.get_event_loop())  # the SDK's mock gave this worker thread a loop
        return response

    def _registered(self, type_token: str) -> dict[str, Any]:
        """URN -> state of what is registered so far, for a cluster's outputs (its subnetwork's range); a copy taken
        at once (dict.copy holds the GIL), since gRPC worker threads register side by side."""
        if type_token != "gcp:container/cluster:Cluster":
            return {}
        return {urn: registration.state for urn, registration in self.resources.copy().items()}

    def RegisterResource(self, request: Any) -> Any:
        """What the SDK's MockMonitor does, in one pass over the wire form: the response is the request's own
        serialized inputs plus the computed outputs (the mock deserialized and re-serialized every input)."""
        if request.type == "pulumi:pulumi:Stack":
            return super().RegisterResource(request)
        urn = self.make_urn(request.parent, request.type, request.name)
        if urn in self.resources:
            raise DuplicateUrn(f"Duplicate resource URN '{urn}'; try giving it a unique name")
        inputs = _plain(json_format.MessageToDict(request.object))
        # An imported resource's outputs are known even in a new stack's preview: the engine's import step reads it
        # through its provider before the rest of the preview (pulumi pkg/resource/deploy/step.go ImportStep.Apply).
        known = self.computing.known_outputs or bool(request.importId)
        computed = (
            _computed_outputs(request.type, request.name, inputs, self._registered(request.type)) if known else {}
        )
        state = struct_pb2.Struct()
        state.CopyFrom(request.object)
        if computed:
            state.update(computed)
        resource_id = f"{request.name}-id"
        self.resources[urn] = mocks.MockMonitor.ResourceRegistration(urn, resource_id, {**inputs, **computed})
        self.recorded.append(
            {
                "urn": urn,
                "type": request.type,
                "name": request.name,
                "parent": request.parent or None,
                "dependencies": sorted(set(request.dependencies)),
                "custom": bool(request.custom),
                "remote": bool(request.remote),
                "protect": bool(request.protect),
                "ignoreChanges": list(request.ignoreChanges),
                "customTimeouts": _timeouts(request),
                **_lifecycle_options(request),
                "provider": request.provider.rsplit("::", 1)[0] if request.provider else None,
                "inputs": inputs,
            }
        )
        if request.transforms:
            self.transforms[urn] = mocks._resolve_callbacks(request.transforms)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id, object=state)


def _lifecycle_options(request: Any) -> dict[str, Any]:
    """The options the engine acts on in an update or a destroy, as the engine receives them:
    `deleteBeforeReplace` is None where the program left it to the provider (named resources get
    delete-before-replace from the provider's diff), `deletedWith` the URN of the resource whose deletion
    deletes this one, `importId` the cloud ID of an existing resource the engine adopts instead of creating."""
    return {
        "replaceOnChanges": list(request.replaceOnChanges),
        "deleteBeforeReplace": bool(request.deleteBeforeReplace) if request.deleteBeforeReplaceDefined else None,
        "retainOnDelete": bool(request.retainOnDelete),
        "deletedWith": request.deletedWith or None,
        "aliases": [_alias(a) for a in request.aliases] + [{"urn": u} for u in request.aliasURNs],
        "importId": request.importId or None,
    }


def _alias(alias: Any) -> dict[str, Any]:
    if alias.WhichOneof("alias") == "urn":
        return {"urn": alias.urn}
    spec = alias.spec
    fields = {"name": spec.name, "type": spec.type, "stack": spec.stack, "project": spec.project}
    return {k: v for k, v in fields.items() if v} | {"parentUrn": spec.parentUrn or None, "noParent": spec.noParent}


def _timeouts(request: Any) -> dict[str, str]:
    if not request.HasField("customTimeouts"):
        return {}
    timeouts = request.customTimeouts
    return {
        k: v for k, v in (("create", timeouts.create), ("update", timeouts.update), ("delete", timeouts.delete)) if v
    }


def _plain(value: Any) -> Any:
    """Inputs in wire form as JSON data: ints stay ints, unknowns and secrets become markers."""
    if isinstance(value, dict):
        signature = value.get(rpc._special_sig_key)
        if signature == rpc._special_secret_sig:
            # A secret whose value preview cannot know yet (a new cluster's kubeconfig) is unknown first.
            return UNKNOWN if _plain(value.get("value")) == UNKNOWN else SECRET
        if signature is not None:
            return UNKNOWN  # a resource reference or an asset: no plain value
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value == rpc.UNKNOWN or not isinstance(value, str | int | float | bool | type(None)):
        return UNKNOWN  # the wire form's unknown, or an SDK object with no plain value
    return value


def read_stack_file(path: Path, written: dict[str, str] | None = None) -> dict[str, Any]:
    """The `config:` mapping of a Pulumi.<stack>.yaml file; a key given twice in one mapping is an error (YAML
    keys are unique; PyYAML would silently keep the last), and so is an unquoted date or time (see
    `_node_problems`). `written` (optional) receives the text of every unquoted number as typed, by config key
    (`tpu-stack:cluster.minMasterVersion` -> `1.30`): YAML reads 1.30 as 1.3, and a message about it quotes the
    text."""
    loader = yaml.SafeLoader(path.read_text())
    try:
        node = loader.get_single_node()
        numbers = {} if written is None else written
        problems = _node_problems(node, "", path.name, numbers) if node is not None else []
        if problems:
            raise ConfigError(problems)
        data = (loader.construct_document(node) if node is not None else None) or {}
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise ConfigError([f"{path}{where}: {problem}; fix the YAML (indentation, '-' list items)"]) from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise ConfigError([f"{path}: a stack file is a mapping with a `config:` key"])
    outside = [_outside_config_problem(str(key), path.name) for key in data if key not in STACK_FILE_KEYS]
    if outside:
        raise ConfigError(outside)
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError([f"{path}: `config` must be a mapping of keys to values"])
    # The real engine hands the program the decrypted text; the preview has only the ciphertext.
    encrypted = [
        f"{_full_key(str(key))}: is encrypted ({{secure: ...}}); settings under {PROJECT}: are plain, none is a "
        "secret, and the preview cannot read an encrypted one: set it with `pulumi config set` without --secret"
        for key, value in config.items()
        if _full_key(str(key)).startswith(f"{PROJECT}:") and isinstance(value, dict) and set(value) == {"secure"}
    ]
    if encrypted:
        raise ConfigError(encrypted)
    return config


def _full_key(key: str) -> str:
    """A config key with its namespace: a key without one is the project's (`cluster` is `tpu-stack:cluster`)."""
    return key if ":" in key else f"{PROJECT}:{key}"


STACK_FILE_KEYS = ("secretsprovider", "encryptedkey", "encryptionsalt", "environment", "config")
"""The top-level keys of a Pulumi.<stack>.yaml (pulumi sdk/go/common/workspace ProjectStack; schema/stack.schema.json
allows these only). The CLI reads the file into that struct without checking it
(sdk/go/common/workspace/loaders.go, projectStackLoader.load), so any other key, such as config typed one indent too
far left, is dropped without a word."""


def _outside_config_problem(key: str, file: str) -> str:
    if ":" in key:
        return f"{key}: is at the top of {file}, outside `config:`, where Pulumi ignores it; indent it under `config:`"
    close = difflib.get_close_matches(key, STACK_FILE_KEYS, n=1, cutoff=0.6)
    fix = f"did you mean {close[0]}? " if close else ""
    return (
        f"{key}: is not a key of a stack file, and Pulumi would ignore it; {fix}a stack file holds "
        f"{', '.join(STACK_FILE_KEYS)}, its settings under `config:`"
    )


_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_NUMBERS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def _node_problems(node: yaml.Node, path: str, file: str, written: dict[str, str]) -> list[str]:
    """One line per key given twice in the same mapping and per unquoted date or time, each named by its config key
    path (`tpu-stack:cluster.name`).

    The Pulumi CLI reads stack files with go-yaml v3, which turns an unquoted timestamp into a Go time, and
    config values keep a Go time as its String() text (`2026-01-03 02:00:00 +0000 UTC`, pulumi/pulumi
    sdk/go/common/resource/config/object.go unmarshalObject): the program would get a time it cannot read."""
    problems: list[str] = []
    if isinstance(node, yaml.ScalarNode) and node.tag in _NUMBERS and node.style is None:
        written[path] = node.value
    if isinstance(node, yaml.ScalarNode) and node.tag == _TIMESTAMP and node.style is None:
        problems.append(
            f"{path}: {node.value} is an unquoted YAML timestamp, which Pulumi hands the program as Go's time text, "
            f'not as written; quote it: "{node.value}"'
        )
    elif isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if path == "config":
                where = key if ":" in key else f"{PROJECT}:{key}"
            else:
                where = f"{path}.{key}" if path else key
            line = key_node.start_mark.line + 1
            if key in first:
                problems.append(
                    f"{where}: given twice in {file} (lines {first[key]} and {line}); YAML keys are unique and only "
                    "one value would be read: keep one"
                )
            first.setdefault(key, line)
            problems += _node_problems(value_node, where, file, written)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            problems += _node_problems(item, f"{path}[{index}]", file, written)
    return problems


def _engine_config(config: Mapping[str, Any]) -> dict[str, str]:
    """Structured values travel as JSON strings, as the CLI passes them to the program."""
    flat = {}
    for key, value in config.items():
        full_key = _full_key(key)
        if isinstance(value, dict) and set(value) == {"secure"}:
            value = SECRET
        flat[full_key] = value if isinstance(value, str) else json.dumps(value)
    return flat


def run_program(
    config: Mapping[str, Any],
    *,
    stack: str,
    program: Path = PROGRAM,
    recorded: list[dict[str, Any]] | None = None,
    kubernetes_version: str | None = None,
    known_outputs: bool = True,
) -> Plan:
    """Run `program` under mocks with the given stack config; raises ConfigError for invalid config.

    `recorded` (optional) receives registrations as they happen, so a caller can see what was registered
    even when the program fails. With `kubernetes_version`, the Helm charts the program declares are rendered
    (offline/charts.py) and their objects join the plan as the Charts' children, as in a real preview.
    `known_outputs=False` leaves every value the cloud computes unknown: the inputs of a new stack's preview.
    """
    for key in [k for k in os.environ if k.startswith(_UNSAFE_ENV_PREFIXES)]:
        del os.environ[key]
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    settings.ROOT.set(None)
    recorded = [] if recorded is None else recorded
    monitor = _RecordingMonitor(recorded, known_outputs)
    plan = Plan(project=PROJECT, stack=stack, resources=recorded)
    mocks.set_mocks(monitor.mocks, project=PROJECT, stack=stack, preview=True, monitor=monitor, logger=_log(plan))
    # set_mocks gives the SDK new settings but keeps their pending outputs (MockSettings sets no `outputs`): a run that
    # ended early (the engine's refusal of a duplicate URN) left tasks of its closed loop there, which this run would
    # wait for.
    settings.SETTINGS.outputs = set()
    plan.config = _engine_config(config)
    runtime_config.set_all_config(plan.config)
    # A run builds ~100k SDK objects (outputs, futures, typed args) that live until it ends; cyclic collection
    # during the run only re-scans them (a third of the run at 256 slices), so it waits until the run is over.
    collecting = gc.isenabled()
    gc.disable()
    try:
        loop.run_until_complete(run_pulumi_func(lambda: _run_main(program)))
        plan.outputs = loop.run_until_complete(_stack_outputs())
        transforms = charts.Transforms(monitor.transforms, monitor.get_registered_transforms())
        rendered = charts.render_all(recorded, kubernetes_version, transforms) if kubernetes_version else []
        # Registration order depends on the event loop; a stable order keeps plan.json diffable in reviews.
        plan.resources = sorted(recorded + rendered, key=lambda r: r["urn"])
    finally:
        _close(loop)
        if collecting:
            gc.enable()
    return plan


class _Logged(logging.Handler):
    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def emit(self, record: logging.LogRecord) -> None:
        self.plan.logged.append((record.levelname.lower(), record.getMessage()))


def _log(plan: Plan) -> logging.Logger:
    """Where the SDK's mock engine sends the program's log calls (its Log RPC): into the plan, as the real engine
    keeps them for its own output, not to this process's stderr."""
    logger = logging.Logger("tpu-stack program", logging.INFO)  # the SDK's own debug lines are not the program's
    logger.addHandler(_Logged(plan))
    return logger


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """Close the run's loop and detach it, so a later run (tests run many) starts clean."""
    asyncio.set_event_loop(None)
    loop.close()
    contextvars.Context().run(_forget_pending)
    # The run's worker threads are done (closing the loop shut its executor down): their loops, and all they still
    # reference of the run, would otherwise live until the process exits.
    for worker in [w for w in _WORKER_LOOPS if not w.is_running()]:
        worker.close()
        _WORKER_LOOPS.discard(worker)


def _forget_pending() -> None:
    """Drop what a run left pending where a context that never set its own finds it: the SDK keeps pending outputs and
    RPCs in context variables whose default is the first value ever set, and threads that start without a context
    (gRPC workers) use that default. A run that failed leaves tasks of its closed loop there, which the next run would
    await ("Event loop is closed"). Called in an empty context, which reads the defaults."""
    settings.SETTINGS.outputs.clear()
    settings.SETTINGS.rpc_manager.clear()


def _run_main(program: Path) -> None:
    runpy.run_path(str(program), run_name="__main__")


async def _stack_outputs() -> dict[str, Any]:
    root = settings.get_root_resource()
    outputs: dict[str, Any] = {}
    for key, value in getattr(root, "outputs", {}).items():
        output = pulumi.Output.from_input(value)
        resolved = await output.future()
        outputs[key] = SECRET if await output.is_secret() else _plain(resolved)
    return outputs


def run_stack(
    stack: str, *, config_file: Path | None = None, render_charts: bool = True, known_outputs: bool = True
) -> Plan:
    """Run the stack `stack` with its Pulumi.<stack>.yaml (or `config_file`), charts rendered unless told not to;
    `known_outputs=False` gives the inputs of a new stack's preview (computed values unknown)."""
    path = config_file or REPO / f"Pulumi.{stack}.yaml"
    written: dict[str, str] = {}
    config = read_stack_file(path, written)
    # Checked here first, where the file's text is at hand for the messages; the program checks again as it runs.
    minor = load(_engine_config(config), stack=stack, written=written).cluster.kubernetes_minor
    return run_program(
        config, stack=stack, kubernetes_version=minor if render_charts else None, known_outputs=known_outputs
    )
