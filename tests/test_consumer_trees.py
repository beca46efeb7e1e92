"""Every rendered tree builds with the real ``kubectl kustomize`` (issue 25, item 8), and so does every
``patches/<namespace>`` component applied to stand-ins of the objects it targets, whose containers
have no ``resources`` at all (the case a JSON 6902 ``add`` failed on). ``.ci/run`` runs the same
kustomize over every example's tree; this test also covers the components."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.cli import main

ROOT = Path(__file__).resolve().parents[1]
KUBECTL = shutil.which("kubectl")
EXAMPLES = sorted(
    p.parent.relative_to(ROOT / "examples").as_posix()
    for p in [*(ROOT / "examples").glob("*/fleet.yaml"), *(ROOT / "examples").glob("*/*/fleet.yaml")]
)
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH (.ci/run installs it)")
DEPLOY = ROOT / "controller" / "deploy"


def kustomize(path: Path) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    done = subprocess.run([KUBECTL, "kustomize", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{path}: {done.stderr}"
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def stand_in(patch: dict[str, Any]) -> dict[str, Any]:
    """The object a strategic-merge patch targets, with bare containers (no resources)."""
    obj: dict[str, Any] = yaml.safe_load(yaml.safe_dump(patch))
    spec = obj["spec"]["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else obj["spec"]
    pod = spec["template"]["spec"]
    named = [c["name"] for c in pod.get("containers", [])]
    pod["containers"] = [{"name": n, "image": "app"} for n in named] or [{"name": "main", "image": "app"}]
    pod["containers"].append({"name": "other", "image": "busybox"})
    return obj


@needs_kubectl
@pytest.mark.parametrize(
    "example", [e if e in ("lab", "hami") else pytest.param(e, marks=pytest.mark.slow) for e in EXAMPLES]
)
def test_every_tree_and_component_builds_with_kubectl_kustomize(example: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["compile", str(ROOT / "examples" / example), "--out", str(out), "--with", "kueue"]
    assert main([*argv, "--with", "monitoring"]) == 0
    clusters = sorted(p.parent for p in out.glob("*/kustomization.yaml"))
    assert clusters
    for cluster in clusters:
        listed = yaml.safe_load((cluster / "kustomization.yaml").read_text())["resources"]
        assert len(kustomize(cluster)) == len(listed)  # one object per file, every file built
        for component in sorted(cluster.glob("patches/*/kustomization.yaml")):
            comp = yaml.safe_load(component.read_text())
            patches = [yaml.safe_load((component.parent / p["path"]).read_text()) for p in comp["patches"]]
            objects = [stand_in(p) for p in patches if isinstance(p, dict)]  # not the JSON 6902 op lists
            app = tmp_path / "app" / cluster.name / component.parent.name
            app.mkdir(parents=True)
            (app / "objects.yaml").write_text(yaml.safe_dump_all(objects))
            rel = Path("../" * 3) / component.parent.relative_to(tmp_path)
            (app / "kustomization.yaml").write_text(
                yaml.safe_dump({"resources": ["objects.yaml"], "components": [rel.as_posix()]})
            )
            built = kustomize(app)
            assert len(built) == len(objects)
            assert not [d for d in built if d["kind"] == "TargetLimits"]
            for d in built:
                spec = d["spec"]["jobTemplate"]["spec"] if d["kind"] == "CronJob" else d["spec"]
                pod = spec["template"]["spec"]
                limits = {k for c in pod["containers"] for k in c.get("resources", {}).get("limits", {})}
                # a workload on a DRA pool asks through resource claims instead of limits (docs/dra.md)
                claims = pod.get("resourceClaims") and any(
                    c.get("resources", {}).get("claims") for c in pod["containers"]
                )
                assert claims or any(k.startswith("nvidia.com/") for k in limits), d["metadata"]["name"]


def test_the_controller_kustomization_lists_every_manifest_and_the_servicemonitor_is_optional() -> None:
    """controller/deploy/kustomization.yaml names every manifest of the folder; the ServiceMonitor
    (a Prometheus Operator CRD, absent from many clusters) is only in its component (issue 25, item 17)."""
    listed = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in DEPLOY.glob("*.yaml") if p.name != "kustomization.yaml")
    assert not any("ServiceMonitor" in (DEPLOY / name).read_text() for name in listed)
    component = yaml.safe_load((DEPLOY / "servicemonitor" / "kustomization.yaml").read_text())
    assert component["kind"] == "Component"
    assert "kind: ServiceMonitor" in (DEPLOY / "servicemonitor" / component["resources"][0]).read_text()


@needs_kubectl
def test_the_controller_deploy_builds_with_and_without_the_servicemonitor(tmp_path: Path) -> None:
    kinds = [d["kind"] for d in kustomize(DEPLOY)]
    assert "Deployment" in kinds and "ServiceMonitor" not in kinds
    overlay = tmp_path / "overlay"
    shutil.copytree(ROOT / "controller" / "deploy", tmp_path / "deploy")
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources: [../deploy]\ncomponents: [../deploy/servicemonitor]\n", encoding="utf-8"
    )
    assert sorted(d["kind"] for d in kustomize(overlay)) == sorted([*kinds, "ServiceMonitor"])
