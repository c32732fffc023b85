"""A local HTTP server on 127.0.0.1 that answers the two GKE API calls `tpu-stack adopt` makes, as the API does.

- `GET /v1/projects/{project}/locations/{location}/clusters/{cluster}`: projects.locations.clusters.get, the Cluster
  resource (its `nodePools` included);
- `GET /v1/projects/{project}/locations/{location}/clusters/{cluster}/nodePools`: projects.locations.clusters.
  nodePools.list, a ListNodePoolsResponse `{"nodePools": [...]}`;
- `GET /compute/v1/projects/{project}/regions/{region}/subnetworks/{name}`: the Compute API's subnetworks.get, the
  cluster's subnetwork (Compute REST reference, compute.googleapis.com v1)
(GKE REST reference, container.googleapis.com v1; field names as the API writes them, camelCase). Requests need the
OAuth bearer token: 401 without it, 403 for a project the account may not read, 404 for another cluster, each as
Google APIs write errors: `{"error": {"code", "message", "status"}}` (the HTTP mapping of google.rpc.Status,
cloud.google.com/apis/design/errors).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.tpu_stack.fake_api import Request

TOKEN = "adc-access-token"


@dataclass
class FakeGke:
    project: str
    location: str
    cluster: dict[str, Any]
    node_pools: list[dict[str, Any]]
    subnetwork: dict[str, Any] | None = None
    forbidden_projects: set[str] = field(default_factory=set)
    requests: list[tuple[Request, str]] = field(default_factory=list)
    """Each request with the Authorization header it came with."""
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def server(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def handle(self, request: Request, token: str) -> tuple[int, bytes, str]:
        with self.lock:
            self.requests.append((request, token))
        if token != f"Bearer {TOKEN}":
            return _error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        parts = request.path.strip("/").split("/")
        if parts[:2] == ["compute", "v1"]:
            return self._subnetwork(parts[2:])
        if request.method != "GET" or parts[:1] != ["v1"] or len(parts) not in (7, 8):
            return _error(404, "NOT_FOUND", f"{request.path} is not a GKE API method")
        _, _, project, _, location, _, name, *rest = parts
        if project in self.forbidden_projects:
            return _error(403, "PERMISSION_DENIED", f"Required 'container.clusters.get' permission for '{project}'.")
        if (project, location, name) != (self.project, self.location, self.cluster["name"]):
            return _error(404, "NOT_FOUND", f"Not found: projects/{project}/locations/{location}/clusters/{name}.")
        if rest == ["nodePools"]:
            return 200, json.dumps({"nodePools": self.node_pools}).encode(), "application/json"
        if rest:
            return _error(404, "NOT_FOUND", f"{request.path} is not a GKE API method")
        return 200, json.dumps(self.cluster).encode(), "application/json"

    def _subnetwork(self, parts: list[str]) -> tuple[int, bytes, str]:
        if len(parts) != 6 or parts[4] != "subnetworks" or parts[1] in self.forbidden_projects:
            return _error(403, "PERMISSION_DENIED", "Required 'compute.subnetworks.get' permission.")
        link = str((self.subnetwork or {}).get("selfLink", ""))
        if self.subnetwork is None or not link.endswith("/" + "/".join(parts)):
            return _error(404, "NOT_FOUND", f"The resource '{'/'.join(parts)}' was not found")
        return 200, json.dumps(self.subnetwork).encode(), "application/json"


def _error(code: int, status: str, message: str) -> tuple[int, bytes, str]:
    body = {"error": {"code": code, "message": message, "status": status}}
    return code, json.dumps(body).encode(), "application/json"
