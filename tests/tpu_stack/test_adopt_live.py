"""`tpu-stack adopt --project --location --cluster` with `--kubeconfig`: the cluster read live from the GKE API (a
local fake of clusters.get and nodePools.list) and its Kubernetes API (tests/tpu_stack/fake_api.py), with the user's
own credentials. Live and saved outputs of the same cluster give the same stack file."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.adopt import ADOPT_DIR, adopted
from tests.tpu_stack import fake_gke
from tests.tpu_stack.fake_api import FakeApi, serving
from tpu_stack import adopt, cli

PATHS = {
    "Namespace": ("/api/v1", "namespaces"),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses"),
    "ResourceFlavor": ("/apis/kueue.x-k8s.io/v1beta2", "resourceflavors"),
    "ClusterQueue": ("/apis/kueue.x-k8s.io/v1beta2", "clusterqueues"),
    "LocalQueue": ("/apis/kueue.x-k8s.io/v1beta2", "localqueues"),
    "ProvisioningRequestConfig": ("/apis/kueue.x-k8s.io/v1beta2", "provisioningrequestconfigs"),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions"),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles"),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings"),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
    "MutatingWebhookConfiguration": ("/apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations"),
    "ValidatingWebhookConfiguration": ("/apis/admissionregistration.k8s.io/v1", "validatingwebhookconfigurations"),
    "APIService": ("/apis/apiregistration.k8s.io/v1", "apiservices"),
    "Deployment": ("/apis/apps/v1", "deployments"),
    "Service": ("/api/v1", "services"),
    "ServiceAccount": ("/api/v1", "serviceaccounts"),
    "ConfigMap": ("/api/v1", "configmaps"),
    "Secret": ("/api/v1", "secrets"),
}
"""Where the Kubernetes API serves each kind (its group, version and plural), written out from the API reference."""
CUSTOM = ("kueue.x-k8s.io/v1beta2",)


def _cluster_api(folder: Path) -> FakeApi:
    """The objects of a fixture's saved `kubectl get` outputs at their API paths. A list of a built-in kind names no
    apiVersion or kind per item (the API server writes them on the list only; kubectl adds them back)."""
    api = FakeApi()
    for path in sorted(folder.glob("*.json")):
        if path.name in ("cluster.json", "node-pools.json", "subnetwork.json"):
            continue
        for obj in json.loads(path.read_text())["items"]:
            root, plural = PATHS[obj["kind"]]
            namespace = obj["metadata"].get("namespace")
            where = f"{root}/namespaces/{namespace}/{plural}" if namespace else f"{root}/{plural}"
            served = (
                obj
                if obj["apiVersion"] in CUSTOM
                else {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
            )
            api.put(where, served)
    # A Secret adopt must never read: the old install's webhook certificate.
    api.put("/api/v1/namespaces/kueue-system/secrets", {"metadata": {"name": "kueue-webhook-server-cert"}, "data": {}})
    return api


@pytest.fixture
def gke(monkeypatch: pytest.MonkeyPatch) -> Iterator[fake_gke.FakeGke]:
    folder = ADOPT_DIR / "xpk-multislice"
    cluster = json.loads((folder / "cluster.json").read_text())
    pools = json.loads((folder / "node-pools.json").read_text())
    subnetwork = json.loads((folder / "subnetwork.json").read_text())
    fake = fake_gke.FakeGke("tpu-proj", "us-east5", cluster, pools, subnetwork, forbidden_projects={"other-proj"})

    # The user's Application Default Credentials, as gcloud prints their access token.
    monkeypatch.setattr(adopt, "adc_token", lambda: fake_gke.TOKEN)
    with serving(fake) as served:
        monkeypatch.setattr(adopt, "GKE_API", served.server)
        monkeypatch.setattr(adopt, "COMPUTE_API", served.server)
        yield served


def _adopt(tmp_path: Path, kubeconfig: dict[str, Any], *extra: str) -> tuple[int, str, str]:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    out, err = io.StringIO(), io.StringIO()
    args = ["--kubeconfig", str(path), "adopt", "xpk-multislice", "--project", "tpu-proj", "--location", "us-east5",
            "--cluster", "xpk-ms", "--stack-dir", str(tmp_path), "--out", str(tmp_path / "adopt"), *extra]  # fmt: skip
    code = cli.main(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_live_and_saved_outputs_give_the_same_stack_file(gke: fake_gke.FakeGke, tmp_path: Path) -> None:
    with serving(_cluster_api(ADOPT_DIR / "xpk-multislice")) as api:
        code, _, err = _adopt(tmp_path, api.kubeconfig())
    assert code == 0, err
    live = yaml.safe_load((tmp_path / "Pulumi.xpk-multislice.yaml").read_text())
    saved = yaml.safe_load(adopted("xpk-multislice").stack_file.read_text())
    assert live == saved
    # The two GKE calls and the Compute API's subnetwork (its node range), with the user's token; the Kubernetes
    # reads with the kubeconfig's; never a Secret.
    assert [(r.path, token) for r, token in gke.requests] == [
        ("/v1/projects/tpu-proj/locations/us-east5/clusters/xpk-ms", f"Bearer {fake_gke.TOKEN}"),
        ("/v1/projects/tpu-proj/locations/us-east5/clusters/xpk-ms/nodePools", f"Bearer {fake_gke.TOKEN}"),
        ("/compute/v1/projects/tpu-proj/regions/us-east5/subnetworks/default", f"Bearer {fake_gke.TOKEN}"),
    ]
    assert api.requests and all(r.method == "GET" for r in api.requests)
    assert not [r.path for r in api.requests if "/secrets" in r.path]


def test_what_was_read_is_saved_for_the_preview_without_a_credential(gke: fake_gke.FakeGke, tmp_path: Path) -> None:
    with serving(_cluster_api(ADOPT_DIR / "xpk-multislice")) as api:
        code, out, _ = _adopt(tmp_path, api.kubeconfig())
    assert code == 0
    saved = tmp_path / "adopt" / "existing"
    assert sorted(p.name for p in saved.iterdir()) == [
        "cluster.json",
        "kubernetes.json",
        "node-pools.json",
        "subnetwork.json",
    ]
    text = "".join(p.read_text() for p in saved.iterdir())
    assert fake_gke.TOKEN not in text and "test-token" not in text
    assert f"--existing {saved}" in out


def test_a_cluster_without_kueue_adopts_with_no_queues(gke: fake_gke.FakeGke, tmp_path: Path) -> None:
    # Kueue's and JobSet's APIs are not served (404): nothing of them to adopt, and the stack installs both.
    api = _cluster_api(ADOPT_DIR / "xpk-multislice")
    api.absent = {"/apis/kueue.x-k8s.io", "/apis/jobset.x-k8s.io"}
    with serving(api) as served:
        code, _, err = _adopt(tmp_path, served.kubeconfig())
    assert code == 0, err
    config = yaml.safe_load((tmp_path / "Pulumi.xpk-multislice.yaml").read_text())["config"]
    assert set(config["tpu-stack:queues"]) == {"priorityClasses"}  # PriorityClasses are Kubernetes', not Kueue's
    imported = {entry["urn"].split("::")[2] for entry in config["tpu-stack:cluster"]["adopted"]["imports"]}
    assert not [t for t in imported if "kueue.x-k8s.io" in t]


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (("--cluster", "gone"), "error: GKE API http://127.0.0.1:{port}/v1/projects/tpu-proj/locations/us-east5/clusters/"
         "gone: 404 Not found: projects/tpu-proj/locations/us-east5/clusters/gone."),
        (("--project", "other-proj"), "error: GKE API http://127.0.0.1:{port}/v1/projects/other-proj/locations/us-east5/"
         "clusters/xpk-ms: 403 Required 'container.clusters.get' permission for 'other-proj'."),
    ],
)  # fmt: skip
def test_gke_api_refusals_are_one_line(
    gke: fake_gke.FakeGke, tmp_path: Path, flags: tuple[str, str], line: str
) -> None:
    with serving(_cluster_api(ADOPT_DIR / "xpk-multislice")) as api:
        code, _, err = _adopt(tmp_path, api.kubeconfig(), *flags)
    assert code == 2
    assert err.splitlines() == [line.format(port=gke.port)]
    assert not (tmp_path / "Pulumi.xpk-multislice.yaml").exists()


def test_a_subnetwork_the_compute_api_refuses_is_one_line(gke: fake_gke.FakeGke, tmp_path: Path) -> None:
    gke.subnetwork = None  # e.g. a Shared VPC host project's subnetwork the account cannot read
    with serving(_cluster_api(ADOPT_DIR / "xpk-multislice")) as api:
        code, _, err = _adopt(tmp_path, api.kubeconfig())
    assert code == 2
    where = "projects/tpu-proj/regions/us-east5/subnetworks/default"
    assert err.splitlines() == [
        f"error: Compute API http://127.0.0.1:{gke.port}/compute/v1/{where}: 404 The resource '{where}' was not found"
    ]
    assert not (tmp_path / "Pulumi.xpk-multislice.yaml").exists()


@pytest.mark.parametrize(
    ("gcloud", "line"),
    [
        (None, "error: gcloud is not on PATH: install the Google Cloud CLI to read the cluster live, or use --from"),
        ("#!/bin/sh\necho 'ERROR: (gcloud.auth.application-default.print-access-token) Could not automatically "
         "determine credentials.' >&2\nexit 1\n",
         "error: no Application Default Credentials: run `gcloud auth application-default login`, or use --from"),
    ],
)  # fmt: skip
def test_no_application_default_credentials_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, gcloud: str | None, line: str
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if gcloud is not None:
        (bin_dir / "gcloud").write_text(gcloud)
        (bin_dir / "gcloud").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    code, _, err = _adopt(tmp_path, FakeApi().kubeconfig())
    assert code == 2
    assert err.splitlines() == [line]


def test_the_token_is_what_gcloud_prints(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gcloud").write_text(
        '#!/bin/sh\n[ "$*" = "auth application-default print-access-token" ] && echo ya29.t\n'
    )
    (bin_dir / "gcloud").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert adopt.adc_token() == "ya29.t"


def test_a_refused_kubeconfig_is_one_line(gke: fake_gke.FakeGke, tmp_path: Path) -> None:
    with serving(_cluster_api(ADOPT_DIR / "xpk-multislice")) as api:
        code, _, err = _adopt(tmp_path, api.kubeconfig(token="stale"))
    assert code == 4
    assert len(err.splitlines()) == 1 and err.startswith("error: forbidden (401): Unauthorized")
