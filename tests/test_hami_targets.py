"""Workload targets: the patches migc renders make ``kubectl kustomize`` give a Deployment's pods
exactly the resources the solution reserved (HAMi shares and MIG profiles), the priority class and
the Kueue queue label."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from compiler.catalog import load_catalog
from compiler.model import Policy, Target
from compiler.pipeline import load_and_validate
from compiler.render import manifest_stream, render
from compiler.render.targets import resolved_resources
from compiler.solve.pipeline import solve
from compiler.solve.result import Solution

ROOT = Path(__file__).resolve().parents[1]
KUBECTL = shutil.which("kubectl")
APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: %(name)s, namespace: %(ns)s}
spec:
  selector: {matchLabels: {app: %(name)s}}
  template:
    metadata: {labels: {app: %(name)s}}
    spec:
      containers:
      - {name: sidecar, image: busybox}
      - name: %(container)s
        image: app
        resources: {limits: {cpu: "2"}, requests: {cpu: "1"}}
"""


def _compile(path: str, with_kueue: bool = True) -> tuple[Policy, Solution, dict[str, bytes]]:
    policy, _ = load_and_validate([ROOT / path])
    assert policy is not None
    return _render(policy, with_kueue)


def _render(policy: Policy, with_kueue: bool = True) -> tuple[Policy, Solution, dict[str, bytes]]:
    catalog = load_catalog()
    solution = solve(policy, catalog)
    return policy, solution, render(policy, solution, catalog, with_kueue=with_kueue, source_label="x")


def _write(files: dict[str, bytes], root: Path) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def _kustomize(
    tmp_path: Path, files: dict[str, bytes], cluster: str, ns: str, app: str
) -> list[dict[str, object]]:
    assert KUBECTL is not None
    _write(files, tmp_path / "out")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "deploy.yaml").write_text(app)
    (tmp_path / "app" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [deploy.yaml]\n"
        f"components: [../out/{cluster}/patches/{ns}]\n"
    )
    done = subprocess.run(
        [KUBECTL, "kustomize", str(tmp_path / "app")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _container(deploy: dict[str, object], name: str) -> dict[str, object]:
    spec = deploy["spec"]["template"]["spec"]  # type: ignore[index]
    return next(c for c in spec["containers"] if c["name"] == name)


def test_patches_are_beside_not_in_the_cluster_kustomization() -> None:
    _, _, files = _compile("examples/hami")
    kustomization = yaml.safe_load(files["infer/kustomization.yaml"])
    assert not [r for r in kustomization["resources"] if r.startswith("patches/")]
    assert "infer/patches/search/kustomization.yaml" in files
    assert b"kind: Component" in files["infer/patches/search/kustomization.yaml"]
    index = json.loads(files["infer/.migc-index.json"])
    assert "patches/search/deployment-embedder-server.yaml" in index["files"]  # pruned like the rest
    assert b"deployment-embedder" not in manifest_stream(files)  # not objects of the cluster


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH")
def test_kubectl_kustomize_applies_hami_patches(tmp_path: Path) -> None:
    policy, solution, files = _compile("examples/hami")
    app = APP % {"name": "embedder", "ns": "search", "container": "server"}
    app += "---\n" + (APP % {"name": "reranker", "ns": "search", "container": "main"}).replace(
        "      - {name: sidecar, image: busybox}\n", ""
    )
    docs = {d["metadata"]["name"]: d for d in _kustomize(tmp_path, files, "infer", "search", app)}  # type: ignore[index]
    for name, container in (("embedder", "server"), ("reranker", "main")):
        w = next(w for w in policy.workloads if w.name == name)
        expected, _ = resolved_resources(w, solution)
        limits = _container(docs[name], container)["resources"]["limits"]  # type: ignore[index]
        # kustomize's replacements write the quantity unquoted (1, not "1"): a Quantity takes either
        assert {k: str(v) for k, v in limits.items() if k.startswith("nvidia.com/")} == expected
        assert limits["cpu"] == "2"  # the rest of the container is kept
        pod = docs[name]["spec"]["template"]  # type: ignore[index]
        assert pod["spec"]["priorityClassName"] == "migc-high"
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "migc"
        assert pod["metadata"]["labels"]["app"] == name
        assert pod["metadata"]["annotations"]["hami.io/gpu-scheduler-policy"] == "binpack"
    assert "nvidia.com/gpu" not in str(_container(docs["embedder"], "sidecar"))
    # what the pods request is what the solver placed: 1 vGPU with 12288 MiB and 30% per replica
    l40s = next(r for r in solution.hami if r.pool == "l40s")
    shares = {(s.memory_mib, s.cores) for g in l40s.gpus for s in g.shares if s.workload == "embedder"}
    assert shares == {(12288, 30)}


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH")
def test_kubectl_kustomize_applies_the_mig_profile_the_solver_chose(tmp_path: Path) -> None:
    policy, _ = load_and_validate([ROOT / "examples" / "lab"])
    assert policy is not None
    target = Target("apps/v1", "Deployment", "detector", "vision", "main")
    policy = replace(
        policy,
        workloads=tuple(
            replace(w, target=target) if w.name == "detector-dev" else w for w in policy.workloads
        ),
    )
    _, solution, files = _render(policy, with_kueue=False)
    w = next(w for w in policy.workloads if w.name == "detector-dev")
    expected, others = resolved_resources(w, solution)
    assert list(expected) == ["nvidia.com/mig-1g.20gb"] and not others  # 16 GB, 1 slice → smallest fitting
    docs = _kustomize(
        tmp_path, files, "lab", "vision", APP % {"name": "detector", "ns": "vision", "container": "main"}
    )
    limits = _container(docs[0], "main")["resources"]["limits"]  # type: ignore[index]
    assert limits == {"cpu": "2", "nvidia.com/mig-1g.20gb": "1"}
    pod = docs[0]["spec"]["template"]  # type: ignore[index]
    assert pod["spec"]["priorityClassName"] == "migc-high"
    assert "kueue.x-k8s.io/queue-name" not in pod["metadata"]["labels"]


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH")
@pytest.mark.parametrize(
    "resources",
    ["", '        resources: {requests: {cpu: "1"}}\n', '        resources: {limits: {cpu: "2"}}\n'],
    ids=["no-resources", "requests-only", "limits"],
)
def test_kubectl_kustomize_sets_first_container_limits_with_or_without_limits(
    tmp_path: Path, resources: str
) -> None:
    """A target without ``container`` gets its first container's limits set whether or not that
    container has ``resources.limits`` (a JSON 6902 add failed with "doc is missing path"), and keeps
    what the container had."""
    policy, solution, files = _compile("examples/hami", with_kueue=False)
    app = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: reranker, namespace: search}\nspec:\n"
        "  selector: {matchLabels: {app: r}}\n  template:\n    metadata: {labels: {app: r}}\n    spec:\n"
        "      containers:\n      - name: main\n        image: app\n" + resources
        + "      - {name: second, image: busybox}\n"
    )
    app += "---\n" + APP % {"name": "embedder", "ns": "search", "container": "server"}
    doc = next(
        d for d in _kustomize(tmp_path, files, "infer", "search", app) if d["metadata"]["name"] == "reranker"  # type: ignore[index]
    )
    w = next(w for w in policy.workloads if w.name == "reranker")
    expected, _ = resolved_resources(w, solution)
    limits = _container(doc, "main")["resources"]["limits"]  # type: ignore[index]
    assert {k: str(v) for k, v in limits.items() if k.startswith("nvidia.com/")} == expected
    if "limits" in resources:
        assert limits["cpu"] == "2"
    if "requests" in resources:
        assert _container(doc, "main")["resources"]["requests"] == {"cpu": "1"}  # type: ignore[index]
    assert "resources" not in _container(doc, "second")
    assert "TargetLimits" not in yaml.safe_dump(doc)  # the local-config source is not in the build


def test_patch_structure_without_kubectl() -> None:
    """The same contract checked on the patch files themselves (runs where kubectl is missing)."""
    _, _, files = _compile("examples/hami", with_kueue=False)
    smp = yaml.safe_load(files["infer/patches/search/deployment-embedder-server.yaml"])
    assert smp["kind"] == "Deployment" and smp["metadata"] == {"name": "embedder", "namespace": "search"}
    (container,) = smp["spec"]["template"]["spec"]["containers"]
    assert container == {
        "name": "server",
        "resources": {
            "limits": {"nvidia.com/gpu": "1", "nvidia.com/gpucores": "30", "nvidia.com/gpumem": "12288"}
        },
    }
    limits = yaml.safe_load(files["infer/patches/search/deployment-reranker-limits.yaml"])
    assert limits["kind"] == "TargetLimits"
    assert limits["metadata"]["annotations"] == {"config.kubernetes.io/local-config": "true"}
    assert sorted(limits["limits"]) == [
        "nvidia.com/gpu",
        "nvidia.com/gpucores",
        "nvidia.com/gpumem-percentage",
    ]
    component = yaml.safe_load(files["infer/patches/search/kustomization.yaml"])
    assert component["resources"] == ["deployment-reranker-limits.yaml"]
    paths = [t["fieldPaths"] for r in component["replacements"] for t in r["targets"]]
    assert paths == [
        ["spec.template.spec.containers.0.resources.limits.[nvidia.com/gpu]"],
        ["spec.template.spec.containers.0.resources.limits.[nvidia.com/gpucores]"],
        ["spec.template.spec.containers.0.resources.limits.[nvidia.com/gpumem-percentage]"],
    ]
    assert all(t["options"] == {"create": True} for r in component["replacements"] for t in r["targets"])
    sts = yaml.safe_load(files["infer/patches/research/statefulset-jupyter-notebook.yaml"])
    assert sts["spec"]["template"]["spec"]["priorityClassName"] == "migc-low"
