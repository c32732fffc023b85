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
from typing import Any

import urllib3
from kubernetes import config as kube_config
from kubernetes.config.config_exception import ConfigException

from tpu_stack.kueue import JOBSET_GROUP, JOBSET_VERSION, KUEUE_GROUP, KUEUE_VERSION, Obj

TIMEOUT_SECONDS = 30
PROVISIONING = ("autoscaling.x-k8s.io", "v1", "provisioningrequests")
"""ProvisioningRequest API Kueue's provisioning admission check uses (autoscaling.x-k8s.io/v1)."""


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


class Cluster:
    """One cluster, reached with `kubeconfig` (a parsed kubeconfig) and its `context` (default: current-context).

    With `path`, the kubeconfig is loaded from that file, so relative paths in it (certificate-authority,
    client-certificate, client-key, tokenFile) are resolved against the file's directory, as kubectl does; the
    client resolves them against the current directory when given the parsed dict (kube_config.py _get_base_path).
    """

    def __init__(
        self,
        kubeconfig: dict[str, Any],
        *,
        path: Path | None = None,
        context: str | None = None,
        timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        self.plugin = _exec_plugin(kubeconfig, context)
        problem = _exec_plugin_problem(self.plugin)
        if problem:
            raise KubeconfigError(problem)
        try:
            if path is not None:
                self.api = kube_config.new_client_from_config(
                    config_file=str(path), context=context, persist_config=False
                )
            else:
                self.api = kube_config.new_client_from_config_dict(kubeconfig, context=context, persist_config=False)
        except (ConfigException, ValueError, KeyError, OSError) as error:
            raise KubeconfigError(f"the kubeconfig cannot be used: {error}") from None
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
            raise ClusterError(f"cannot reach the cluster at {self.server}: {error}") from None
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
        items: list[Obj] = self._call("GET", resource, query=list(query.items())).get("items", []) or []
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
