"""The Argo CD example (examples/argocd/) fits together (issue 25, item 4): the Application's plugin
name is the name Argo CD gives the plugin, and the Component adds a sidecar that Argo CD's
documented contract accepts, built with the real ``kubectl kustomize`` on a stand-in repo-server."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ARGOCD = ROOT / "examples" / "argocd"
KUBECTL = shutil.which("kubectl")

# The volumes of argoproj/argo-cd manifests/base/repo-server/argocd-repo-server-deployment.yaml
# (37ee0097) the sidecar mounts; the stand-in holds only what the patch relies on.
STAND_IN = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: argocd-repo-server}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: argocd-repo-server}}
  template:
    metadata: {labels: {app.kubernetes.io/name: argocd-repo-server}}
    spec:
      containers:
        - {name: argocd-repo-server, image: quay.io/argoproj/argocd}
      volumes:
        - {name: var-files, emptyDir: {}}
        - {name: plugins, emptyDir: {}}
"""


def plugin() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ARGOCD / "cmp" / "plugin.yaml").read_text())
    return doc


def test_the_application_names_the_plugin_argo_cd_registers() -> None:
    """argoproj/argo-cd 37ee0097 cmpserver/plugin/config.go:99-108: the plugin's socket, and so its
    name, is ``<metadata.name>-<spec.version>`` when a version is set, else ``<metadata.name>``."""
    p = plugin()
    registered = p["metadata"]["name"] + (f"-{p['spec']['version']}" if p["spec"].get("version") else "")
    apps = [a for a in yaml.safe_load_all((ARGOCD / "application.yaml").read_text()) if a]
    wanted = [a["spec"]["source"]["plugin"]["name"] for a in apps if "plugin" in a["spec"]["source"]]
    assert wanted == [registered]


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH (.ci/run installs it)")
def test_the_component_adds_the_sidecar_to_the_repo_server(tmp_path: Path) -> None:
    assert KUBECTL is not None
    shutil.copytree(ARGOCD / "cmp", tmp_path / "cmp")
    (tmp_path / "argocd").mkdir()
    (tmp_path / "argocd" / "repo-server.yaml").write_text(STAND_IN)
    (tmp_path / "argocd" / "kustomization.yaml").write_text(
        "resources: [repo-server.yaml]\ncomponents: [../cmp]\nnamespace: argocd\n"
    )
    done = subprocess.run(
        [KUBECTL, "kustomize", str(tmp_path / "argocd")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    docs = {d["kind"]: d for d in yaml.safe_load_all(done.stdout) if d}
    assert yaml.safe_load(docs["ConfigMap"]["data"]["plugin.yaml"]) == plugin()
    assert docs["ConfigMap"]["metadata"]["name"] == "migc-cmp-plugin"
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    (sidecar,) = [c for c in pod["containers"] if c["name"] == "migc"]
    # the contract of docs/operator-manual/config-management-plugins.md, "Register the plugin sidecar"
    assert sidecar["command"] == ["/var/run/argocd/argocd-cmp-server"]
    assert sidecar["securityContext"]["runAsUser"] == 999
    mounts = {m["mountPath"]: m for m in sidecar["volumeMounts"]}
    assert mounts["/home/argocd/cmp-server/config/plugin.yaml"]["subPath"] == "plugin.yaml"
    assert {"/var/run/argocd", "/home/argocd/cmp-server/plugins", "/tmp"} <= set(mounts)
    volumes = {v["name"] for v in pod["volumes"]}
    assert {m["name"] for m in sidecar["volumeMounts"]} <= volumes
    assert "argocd-repo-server" in {c["name"] for c in pod["containers"]}  # the repo-server is kept


def test_the_sidecar_image_is_built_from_this_repository_as_user_999() -> None:
    text = (ARGOCD / "cmp" / "Dockerfile").read_text()
    assert 'pip install --no-cache-dir "."' in text and "USER 999:999" in text
    patch = yaml.safe_load((ARGOCD / "cmp" / "repo-server-patch.yaml").read_text())
    image = patch["spec"]["template"]["spec"]["containers"][0]["image"]
    assert f"-t {image} ." in text
