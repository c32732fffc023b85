"""A local HTTP server on 127.0.0.1 that speaks the part of the Kubernetes API `tpu-stack` calls.

Objects live at their API paths (`/apis/kueue.x-k8s.io/v1beta2/namespaces/research/workloads/<name>`); a GET of
the collection lists them (with `labelSelector` of `key=value` terms and `fieldSelector` on metadata.name and
metadata.namespace, as the API server serves for every kind; without the namespace, across all namespaces),
`PAGE` at most per response with `limit`, the rest behind `metadata.continue` as the API server pages a list; POST
creates one (409 when it exists, `uid` and `creationTimestamp` filled in), DELETE removes one, GET
`.../pods/<name>/log` returns its text.
Requests need the bearer token, answer 401 without it and 403 on the paths marked forbidden, with the
`Status` objects the API server sends, and 404 on the paths marked absent (an API the cluster does not serve). The
server stops when the test ends, and by itself after `lifetime`
seconds whatever happens.
"""

from __future__ import annotations

import bisect
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qs, urlsplit

from tpu_stack import kube

Obj = dict[str, Any]
TOKEN = "test-token"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Obj | None


@dataclass
class FakeApi:
    objects: dict[str, Obj] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    """Pod API path -> its log text."""
    forbidden: set[tuple[str, str]] = field(default_factory=set)
    """(method, path prefix) the account may not call; method "*" is every method."""
    absent: set[str] = field(default_factory=set)
    """Path prefixes the cluster does not serve (a CRD not installed): 404 for every method."""
    hooks: list[Callable[[FakeApi, Request], None]] = field(default_factory=list)
    """Called before each request: how a test makes the cluster change over time."""
    requests: list[Request] = field(default_factory=list)
    token: str = TOKEN
    """The bearer token this server accepts: another one is refused with 401, as a cluster refuses a user it does not
    know."""
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def put(self, path: str, obj: Obj) -> None:
        self.objects[f"{path}/{obj['metadata']['name']}"] = obj
        self._index = None

    def add(self, obj: Obj) -> None:
        """Put an object at the path its apiVersion, kind, namespace and name give it."""
        self.objects[kube.object_path(obj)] = obj
        self._index = None

    _index: dict[tuple[str, str], list[tuple[str, str]]] | None = None
    """(API root, plural) -> sorted (path, namespace) of the objects, built on the first list after a change."""

    def _collection(self, resource: str) -> list[Obj]:
        """The objects of a collection path: one namespace's, every namespace's, or a cluster-scoped kind's."""
        root, namespace, plural, _ = kube._split(resource)
        if self._index is None:
            index: dict[tuple[str, str], list[tuple[str, str]]] = {}
            for where in sorted(self.objects):
                their_root, their_namespace, their_plural, name = kube._split(where)
                if name is not None:
                    index.setdefault((their_root, their_plural), []).append((where, their_namespace or ""))
            self._index = index
        entries = self._index.get((root, plural), [])
        if namespace is not None:
            prefix = f"{resource}/"
            start = bisect.bisect_left(entries, (prefix, ""))
            found = []
            for where, _ in entries[start:]:
                if not where.startswith(prefix):
                    break
                found.append(self.objects[where])
            return found
        return [self.objects[where] for where, _ in entries]

    @property
    def server(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, token: str = TOKEN) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.server}}],
            "users": [{"name": "fake", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "current-context": "fake",
        }

    def handle(self, request: Request, token: str) -> tuple[int, bytes, str]:
        with self.lock:
            self.requests.append(request)
            for hook in self.hooks:
                hook(self, request)
            if token != f"Bearer {self.token}":
                return _status(401, "Unauthorized", "Unauthorized")
            for method, prefix in self.forbidden:
                if method in (request.method, "*") and request.path.startswith(prefix):
                    said = f'{request.method} {request.path} is forbidden: User "dev" cannot do this'
                    return _status(403, "Forbidden", said)
            if any(request.path.startswith(prefix) for prefix in self.absent):
                return _status(404, "NotFound", "the server could not find the requested resource")
            if request.method == "GET" and request.path.endswith("/log"):
                text = self.logs.get(request.path.removesuffix("/log"))
                return (200, text.encode(), "text/plain") if text is not None else _status(404, "NotFound", "no pod")
            if request.method == "GET":
                return self._get(request)
            if request.method == "POST":
                return self._create(request)
            if request.method == "DELETE":
                self._index = None
                if self.objects.pop(request.path, None) is None:
                    return _status(404, "NotFound", f"{request.path} not found")
                return 200, json.dumps({"kind": "Status", "status": "Success"}).encode(), "application/json"
            return _status(405, "MethodNotAllowed", request.method)

    def _get(self, request: Request) -> tuple[int, bytes, str]:
        if request.path in self.objects:
            return 200, json.dumps(self.objects[request.path]).encode(), "application/json"
        plural = request.path.rsplit("/", 1)[-1]
        if plural not in COLLECTIONS:
            return _status(404, "NotFound", f"{plural} not found")
        items = self._collection(request.path)
        selector = request.query.get("labelSelector", [""])[0]
        for term in filter(None, selector.split(",")):
            key, _, value = term.partition("=")
            items = [obj for obj in items if (obj["metadata"].get("labels") or {}).get(key) == value]
        fields = request.query.get("fieldSelector", [""])[0]
        for term in filter(None, fields.split(",")):
            key, _, value = term.partition("=")
            if key not in ("metadata.name", "metadata.namespace"):
                return _status(400, "BadRequest", f'"{key}" is not a known field selector')
            items = [obj for obj in items if obj["metadata"].get(key.split(".")[1]) == value]
        start = int(request.query.get("continue", ["0"])[0] or 0)
        limit = int(request.query.get("limit", ["0"])[0] or 0)
        end = start + limit if limit else len(items)
        metadata = {"continue": str(end)} if end < len(items) else {}
        page = {"kind": "List", "metadata": metadata, "items": items[start:end]}
        return 200, json.dumps(page).encode(), "application/json"

    def _create(self, request: Request) -> tuple[int, bytes, str]:
        obj = json.loads(json.dumps(request.body))
        path = f"{request.path}/{obj['metadata']['name']}"
        if path in self.objects:
            return _status(409, "AlreadyExists", f'"{obj["metadata"]["name"]}" already exists')
        obj["metadata"].setdefault("uid", f"uid-{obj['metadata']['name']}")
        obj["metadata"].setdefault("creationTimestamp", "2026-05-04T12:00:00Z")
        self.objects[path] = obj
        return 201, json.dumps(obj).encode(), "application/json"


COLLECTIONS = (
    "workloads",
    "pods",
    "events",
    "provisioningrequests",
    "clusterqueues",
    "localqueues",
    "admissionchecks",
    "jobs",
    "jobsets",
    "services",
    # what `tpu-stack adopt` lists (tpu_stack/adopt.py CLUSTER_KINDS, NAMESPACED_KINDS)
    "namespaces",
    "priorityclasses",
    "resourceflavors",
    "cohorts",
    "provisioningrequestconfigs",
    "customresourcedefinitions",
    "clusterroles",
    "clusterrolebindings",
    "mutatingwebhookconfigurations",
    "validatingwebhookconfigurations",
    "apiservices",
    "deployments",
    "serviceaccounts",
    "configmaps",
    "roles",
    "rolebindings",
)
"""Collections the API serves (an empty list when empty); any other unknown path is a 404."""


def _status(code: int, reason: str, message: str) -> tuple[int, bytes, str]:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return code, json.dumps(status).encode(), "application/json"


class Served(Protocol):
    """A fake API the local server answers with: fake_api.FakeApi, fake_gke.FakeGke."""

    port: int

    def handle(self, request: Request, token: str) -> tuple[int, bytes, str]: ...


S = TypeVar("S", bound=Served)


def _handler(api: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 5

        def _serve(self) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            request = Request(self.command, url.path, parse_qs(url.query), body)
            code, payload, kind = api.handle(request, self.headers.get("Authorization", ""))
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serving(api: S, lifetime: float = 20.0) -> Iterator[S]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    server.daemon_threads = True
    api.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    stop = threading.Timer(lifetime, server.shutdown)
    stop.daemon = True
    stop.start()
    try:
        yield api
    finally:
        stop.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
