"""The Kubernetes API calls the command makes, through the official client, on plain JSON objects.

The client's ApiClient does the transport: TLS and credentials from the kubeconfig, including GKE's
`gke-gcloud-auth-plugin` exec credential and its refresh. Bodies and results stay JSON, as the API server writes
them, so a Job or JobSet goes out exactly as `make workloads` writes it (the typed models would re-validate it,
and read back every Kueue object through a schema of their own).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import urllib3
import yaml
from kubernetes import client as kube_client
from kubernetes import config as kube_config
from kubernetes.config.config_exception import ConfigException

from tpu_stack.kueue import JOBSET_GROUP, JOBSET_VERSION, KUEUE_GROUP, KUEUE_VERSION, Obj

TIMEOUT_SECONDS = 30
PAGE_SIZE = 500
"""Items per list request (`limit`, followed by `continue`), as kubectl pages its lists: a list of thousands of
Workloads is several bounded responses, not one that the API server must build and hold whole."""
PROVISIONING = ("autoscaling.x-k8s.io", "v1", "provisioningrequests")
"""ProvisioningRequest API Kueue's provisioning admission check uses (autoscaling.x-k8s.io/v1)."""
RESOURCES: dict[tuple[str, str], tuple[str, str, bool]] = {
    ("kueue.x-k8s.io", "Workload"): (KUEUE_VERSION, "workloads", True),
    ("kueue.x-k8s.io", "LocalQueue"): (KUEUE_VERSION, "localqueues", True),
    ("kueue.x-k8s.io", "ClusterQueue"): (KUEUE_VERSION, "clusterqueues", False),
    ("kueue.x-k8s.io", "Cohort"): (KUEUE_VERSION, "cohorts", False),
    ("kueue.x-k8s.io", "AdmissionCheck"): (KUEUE_VERSION, "admissionchecks", False),
    ("kueue.x-k8s.io", "ResourceFlavor"): (KUEUE_VERSION, "resourceflavors", False),
    ("autoscaling.x-k8s.io", "ProvisioningRequest"): ("v1", "provisioningrequests", True),
    ("jobset.x-k8s.io", "JobSet"): (JOBSET_VERSION, "jobsets", True),
    ("batch", "Job"): ("v1", "jobs", True),
    ("", "Pod"): ("v1", "pods", True),
    ("", "Event"): ("v1", "events", True),
    ("", "Service"): ("v1", "services", True),
}
"""(API group, kind) -> (version `tpu-stack` reads, plural, namespaced): the kinds the commands read."""


class ClusterError(Exception):
    """A call the cluster refused or could not answer; the message is one line."""


class KubeconfigError(ClusterError):
    """The kubeconfig cannot be used from this machine."""


class NotFound(ClusterError):
    pass


class Forbidden(ClusterError):
    """401 or 403: the credentials were refused, or the account may not do this."""


class Unauthorized(Forbidden):
    """401: the cluster refused the credentials, whatever the call."""


class Conflict(ClusterError):
    pass


def path(group: str, version: str, plural: str, *, namespace: str | None = None, name: str | None = None) -> str:
    """`/api/v1/...` for the core group (""), `/apis/<group>/<version>/...` otherwise."""
    root = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    where = f"/namespaces/{namespace}" if namespace else ""
    return f"{root}{where}/{plural}" + (f"/{name}" if name else "")


def object_path(obj: Obj) -> str:
    """The API path of an object as `kubectl get -o json` prints it (its apiVersion's group, kind and name)."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    found = RESOURCES.get((group, str(obj.get("kind"))))
    if found is None:
        raise ClusterError(f"{obj.get('apiVersion')} {obj.get('kind')} is not a kind tpu-stack reads")
    version, plural, namespaced = found
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") if namespaced else None
    return path(group, version, plural, namespace=namespace or None, name=str(meta.get("name")))


def kueue_path(plural: str, *, namespace: str | None = None, name: str | None = None) -> str:
    return path(KUEUE_GROUP, KUEUE_VERSION, plural, namespace=namespace, name=name)


def jobset_path(*, namespace: str, name: str | None = None) -> str:
    return path(JOBSET_GROUP, JOBSET_VERSION, "jobsets", namespace=namespace, name=name)


def job_path(*, namespace: str, name: str | None = None) -> str:
    return path("batch", "v1", "jobs", namespace=namespace, name=name)


def _exec_plugin(kubeconfig: dict[str, Any], context: str | None) -> Obj | None:
    """The exec credential plugin of the context's user, if it signs in with one."""
    context_name = context or kubeconfig.get("current-context")
    contexts = {c.get("name"): c.get("context", {}) for c in kubeconfig.get("contexts", []) or []}
    if context is not None and context not in contexts:
        names = ", ".join(str(name) for name in contexts) or "none"
        raise KubeconfigError(f"--context {context}: no such context in the kubeconfig; its contexts: {names}")
    user_name = (contexts.get(context_name) or {}).get("user")
    for user in kubeconfig.get("users", []) or []:
        if user.get("name") == user_name:
            found = (user.get("user") or {}).get("exec")
            return dict(found) if isinstance(found, dict) else None
    return None


def _exec_plugin_problem(plugin: Obj | None) -> str | None:
    """The exec credential plugin, when it is not installed (the client would only log it and then call the
    cluster anonymously)."""
    if plugin and shutil.which(str(plugin.get("command", ""))) is None:
        hint = plugin.get("installHint") or "install it"
        return f"the kubeconfig signs in with `{plugin.get('command')}`, which is not on PATH: {hint}"
    return None


def _sign_in_hint(plugin: Obj | None) -> str:
    """What to do about a 401 when an exec plugin signs in: the client logs the plugin's failure and goes on without
    credentials (kube_config.py _load_from_exec_plugin), so the 401 is often the plugin's failure."""
    if not plugin:
        return ""
    command = str(plugin.get("command", ""))
    advice = (
        "run `gcloud auth login` (the plugin uses gcloud's credentials), then try again"
        if Path(command).name == "gke-gcloud-auth-plugin"
        else f"check that `{command}` prints a credential when run by hand"
    )
    return f"; the kubeconfig signs in with `{command}`, which gave no credential the cluster accepts: {advice}"


def _message(body: bytes, reason: str) -> str:
    """The API server's Status message, else the HTTP reason."""
    try:
        said = json.loads(body or b"{}").get("message")
    except (ValueError, AttributeError):
        said = None
    return str(said or reason or body.decode(errors="replace") or "no message")


def worker_server(endpoint: str) -> str:
    """The URL of a MultiKueue worker from its `clusterEndpoint` output: the DNS endpoint's host name (served on
    https by a Google front end with a publicly trusted certificate, docs/multiregion.md), or a URL as it is."""
    return endpoint if "://" in endpoint else f"https://{endpoint}"


def _elsewhere(configuration: kube_client.Configuration, server: str) -> None:
    """Point a loaded configuration at another API server. The kubeconfig loader's refresh hook, which runs before
    every call to renew a token, sets the host and TLS settings back from the kubeconfig
    (kube_config.py KubeConfigLoader._refresh_credentials / _set_config), so the override is applied after it too."""
    original = configuration.refresh_api_key_hook

    def refresh(config: kube_client.Configuration) -> None:
        if original is not None:
            original(config)  # sets the loader's own hook again (kube_config.py _set_config)
        config.refresh_api_key_hook = refresh  # type: ignore[assignment]  # the client annotates it None only
        config.host = server
        config.ssl_ca_cert = None
        config.tls_server_name = None

    refresh(configuration)


class Reader(Protocol):
    """What `list`, `why` and `logs` call: a live cluster (Cluster) or a recorded state (RecordedCluster)."""

    server: str

    def get(self, resource: str) -> Obj: ...

    def list(self, resource: str, **query: str) -> list[Obj]: ...

    def log_lines(self, namespace: str, pod: str, *, container: str | None, follow: bool) -> Iterator[str]: ...

    def close(self) -> None: ...


class Cluster:
    """One cluster, reached with `kubeconfig` (a parsed kubeconfig) and its `context` (default: current-context).

    With `path`, the kubeconfig is loaded from that file, so relative paths in it (certificate-authority,
    client-certificate, client-key, tokenFile) are resolved against the file's directory, as kubectl does; the
    client resolves them against the current directory when given the parsed dict (kube_config.py _get_base_path).
    With `server`, the same user and credentials reach another API server (a MultiKueue worker's DNS endpoint): the
    kubeconfig's certificate authority and TLS server name belong to its own cluster and are dropped, so the
    system's roots verify the worker's certificate.
    """

    def __init__(
        self,
        kubeconfig: dict[str, Any],
        *,
        path: Path | None = None,
        context: str | None = None,
        server: str | None = None,
        timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        self.plugin = _exec_plugin(kubeconfig, context)
        problem = _exec_plugin_problem(self.plugin)
        if problem:
            raise KubeconfigError(problem)
        configuration = type.__call__(kube_client.Configuration)
        try:
            if path is not None:
                kube_config.load_kube_config(
                    config_file=str(path), context=context, client_configuration=configuration, persist_config=False
                )
            else:
                kube_config.load_kube_config_from_dict(
                    kubeconfig, context=context, client_configuration=configuration, persist_config=False
                )
        except (ConfigException, ValueError, KeyError, OSError) as error:
            raise KubeconfigError(f"the kubeconfig cannot be used: {error}") from None
        if server is not None:
            _elsewhere(configuration, server)
        self.api = kube_client.ApiClient(configuration=configuration)
        self.server = str(self.api.configuration.host)
        self.timeout = timeout

    def close(self) -> None:
        self.api.close()

    def _call(
        self,
        method: str,
        resource: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Obj | None = None,
        stream: bool = False,
    ) -> Any:
        """One API call: the parsed JSON result, or with `stream` the unread HTTP response."""
        headers = {"Accept": "application/json", **({"Content-Type": "application/json"} if body is not None else {})}
        request = self.api.param_serialize(
            method=method,
            resource_path=resource,
            query_params=query or [],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        method, url, header_params, payload, _ = request
        timeout = None if stream else self.timeout
        try:
            response = self.api.call_api(
                method, url, header_params=header_params, body=payload, _request_timeout=timeout
            )
        except urllib3.exceptions.HTTPError as error:
            said = str(getattr(error, "reason", None) or error)
            said = said.rsplit("Failed to establish a new connection: ", 1)[-1].rstrip("')\"")
            raise ClusterError(f"cannot reach the cluster at {self.server}: {said}") from None
        if not 200 <= response.status <= 299:
            response.read()
            said = _message(response.data or b"", str(response.reason or ""))
            if response.status == 401:
                raise Unauthorized(f"forbidden (401): {said}{_sign_in_hint(self.plugin)}")
            if response.status == 403:
                raise Forbidden(f"forbidden (403): {said}")
            if response.status == 404:
                raise NotFound(said)
            if response.status == 409:
                raise Conflict(said)
            raise ClusterError(f"the cluster refused {method} {resource} ({response.status}): {said}")
        if stream:
            return response.response
        return json.loads(response.read() or b"{}")

    def get(self, resource: str) -> Obj:
        result: Obj = self._call("GET", resource)
        return result

    def list(self, resource: str, **query: str) -> list[Obj]:
        """Every item, PAGE_SIZE at a time: the API server returns `metadata.continue` while more remain."""
        items: list[Obj] = []
        token = ""
        while True:
            page = [*query.items(), ("limit", str(PAGE_SIZE)), *([("continue", token)] if token else [])]
            answer = self._call("GET", resource, query=page)
            items += answer.get("items", []) or []
            token = str((answer.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    def create(self, resource: str, body: Obj) -> Obj:
        """Create `body`; fields the API does not know are refused (fieldValidation=Strict), never dropped."""
        result: Obj = self._call("POST", resource, query=[("fieldValidation", "Strict")], body=body)
        return result

    def delete(self, resource: str) -> Obj:
        """Delete, and let the garbage collector remove what it owns (pods, the Kueue Workload) afterwards."""
        result: Obj = self._call("DELETE", resource, query=[("propagationPolicy", "Background")])
        return result

    def log_lines(self, namespace: str, pod: str, *, container: str | None, follow: bool) -> Iterator[str]:
        query = [("follow", "true" if follow else "false")]
        if container:
            query.append(("container", container))
        response = self._call(
            "GET", path("", "v1", "pods", namespace=namespace, name=pod) + "/log", query=query, stream=True
        )
        try:
            pending = b""
            for chunk in response.stream(4096, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield line.decode(errors="replace")
            if pending:
                yield pending.decode(errors="replace")
        finally:
            response.release_conn()


def _selected(obj: Obj, selector: str) -> bool:
    """Equality terms of a label selector (`a=b,c=d`), the only kind the commands send."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


FIELDS = ("metadata.name", "metadata.namespace")
"""The field selectors the API server serves for every kind (apimachinery's DefaultMetaV1FieldSelectorConversion),
the only ones the commands send."""


def _fields_selected(obj: Obj, selector: str) -> bool:
    """Equality terms of a field selector on metadata.name and metadata.namespace (`metadata.name=x`)."""
    meta = obj.get("metadata") or {}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if key not in FIELDS:
            raise ClusterError(f'field selector "{key}" is not one a recorded state answers ({", ".join(FIELDS)})')
        if str(meta.get(key.removeprefix("metadata."), "")) != value:
            return False
    return True


class RecordedCluster:
    """A cluster's state recorded as files, for `list`, `why` and `logs` without a cluster (`--recorded DIR`).

    Every `*.json`, `*.yaml` or `*.yml` file directly in `directory` is read: a List (`kubectl get KINDS -A -o json`,
    or `-o yaml`) or a single object. What the files hold is what the cluster "serves": a kind with no file is
    empty, so record every kind `why` reads (docs/workloads.md). Pod logs are read from `logs/<namespace>/<pod>.log`
    when present. Nothing is ever written: create and delete are refused.
    """

    def __init__(self, directory: Path) -> None:
        if not directory.is_dir():
            raise KubeconfigError(f"--recorded {directory}: not a directory")
        self.server = f"the recorded state in {directory}"
        self.directory = directory
        self.objects: dict[str, Obj] = {}
        files = sorted(p for p in directory.iterdir() if p.suffix in (".json", ".yaml", ".yml") and p.is_file())
        for file in files:
            try:
                loaded = json.loads(file.read_text()) if file.suffix == ".json" else yaml.safe_load(file.read_text())
            except (OSError, ValueError, yaml.YAMLError) as error:
                raise KubeconfigError(f"--recorded {file}: {error}") from None
            for obj in _items(loaded):
                try:
                    self.objects[object_path(obj)] = obj
                except ClusterError:
                    continue  # a kind the commands never read

    def get(self, resource: str) -> Obj:
        if resource not in self.objects:
            raise NotFound(f"{resource} is not in {self.server}")
        return self.objects[resource]

    def list(self, resource: str, **query: str) -> list[Obj]:
        """The recorded objects of a collection: `/.../namespaces/<ns>/<plural>`, or `/.../<plural>` for every
        namespace and for cluster-scoped kinds; with `labelSelector` and `fieldSelector` (metadata.name,
        metadata.namespace) answered as the API server answers them, so a lookup by name finds only that name."""
        root, namespace, plural, _ = _split(resource)
        items = []
        for where, obj in self.objects.items():
            their_root, their_namespace, their_plural, _ = _split(where)
            if (their_root, their_plural) == (root, plural) and namespace in (None, their_namespace):
                items.append(obj)
        labels, fields = query.get("labelSelector", ""), query.get("fieldSelector", "")
        return [obj for obj in items if _selected(obj, labels) and _fields_selected(obj, fields)]

    def log_lines(self, namespace: str, pod: str, *, container: str | None, follow: bool) -> Iterator[str]:
        log = self.directory / "logs" / namespace / f"{pod}.log"
        if not log.is_file():
            raise NotFound(f"no recorded log of pod {namespace}/{pod} ({log})")
        yield from log.read_text().splitlines()

    def close(self) -> None:
        pass


def _items(loaded: Any) -> list[Obj]:
    if not isinstance(loaded, dict):
        return []
    if isinstance(loaded.get("items"), list):
        return [item for item in loaded["items"] if isinstance(item, dict)]
    return [loaded] if "kind" in loaded else []


def _split(resource: str) -> tuple[str, str | None, str, str | None]:
    """(API root, namespace, plural, name) of a path `path()` writes."""
    words = resource.strip("/").split("/")
    size = 2 if words[0] == "api" else 3
    root, rest = "/" + "/".join(words[:size]), words[size:]
    namespace = None
    if len(rest) > 2 and rest[0] == "namespaces":  # `/api/v1/namespaces/<name>` is the Namespace object itself
        namespace, rest = rest[1], rest[2:]
    return root, namespace, rest[0], rest[1] if len(rest) > 1 else None
