"""HAMi render: the example compiles into objects valid against the Kubernetes schemas, a HAMi
device-plugin config valid against HAMi v2.10.0's format, HAMi quotas and the HAMi plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from compiler.catalog import load_catalog
from compiler.pipeline import load_and_validate
from compiler.render import render
from compiler.render.hami import hami_diagnostics
from compiler.solve.pipeline import solve

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "tests" / "schemas" / "hami-v2.10.0-device-plugin-config.schema.json"


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    policy, _ = load_and_validate([ROOT / "examples" / "hami"])
    assert policy is not None
    catalog = load_catalog()
    return render(policy, solve(policy, catalog), catalog, source_label="examples/hami")


def _obj(files: dict[str, bytes], path: str) -> dict[str, Any]:
    obj = yaml.safe_load(files[path])
    assert isinstance(obj, dict)
    return obj


def test_every_object_is_valid_kubernetes(files: dict[str, bytes]) -> None:
    version = latest_version()
    for path, data in files.items():
        if (
            path.endswith(".yaml")
            and not path.endswith("kustomization.yaml")
            and "/patches/" not in path
            and "/gpu-operator-settings/" not in path
        ):
            kubernetes_validate.validate(yaml.safe_load(data), version, strict=True)


def test_device_plugin_config_matches_hami_format(files: dict[str, bytes]) -> None:
    cm = _obj(files, "infer/hami/configmap-hami-device-plugin.yaml")
    assert cm["metadata"] == {**cm["metadata"], "name": "hami-device-plugin", "namespace": "kube-system"}
    config = json.loads(cm["data"]["config.json"])
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    assert not list(validator.iter_errors(config))
    by_node = {e["name"]: e for e in config["nodeconfig"]}
    assert sorted(by_node) == ["infer-a100-01", "infer-l40s-01", "infer-l40s-02"]
    assert by_node["infer-a100-01"]["operatingmode"] == "mig"
    assert by_node["infer-l40s-01"]["devicesplitcount"] == 8
    # the schema is strict: a misspelt key fails
    bad = {"nodeconfig": [{**by_node["infer-l40s-01"], "devicesplitcnt": 8}]}
    assert list(validator.iter_errors(bad))


def test_hami_quota_uses_hami_resource_names(files: dict[str, bytes]) -> None:
    quota = _obj(files, "infer/tenants/search/search/resourcequota-migc-hami.yaml")
    assert quota["spec"] == {
        "hard": {
            "limits.nvidia.com/gpucores": "600",
            "limits.nvidia.com/gpumem": str(320 * 1024),
            "requests.nvidia.com/gpu": "16",
        }
    }


def test_plan_lists_shares_per_gpu_and_pod_resources(files: dict[str, bytes]) -> None:
    cm = _obj(files, "infer/migc-system/configmap-migc-hami.yaml")
    plan = json.loads(cm["data"]["plan.json"])
    l40s = next(p for p in plan["pools"] if p["name"] == "l40s")
    assert l40s["nodeLabels"] == {"gpu": "on", "nvidia.com/gpu.deploy.device-plugin": "false"}
    assert l40s["podAnnotations"]["hami.io/gpu-scheduler-policy"] == "binpack"
    for gpu in l40s["gpus"]:
        used = sum(s["replicas"] * s["memoryMiB"] for s in gpu["shares"])
        assert used == gpu["memoryMiB"]["used"] <= gpu["memoryMiB"]["total"] == 48 * 1024
        assert gpu["cores"]["used"] <= 100 and gpu["slots"]["used"] <= 8
    wl = {w["name"]: w for w in plan["workloads"]}
    assert wl["embedder"]["resources"] == {
        "nvidia.com/gpu": "1",
        "nvidia.com/gpucores": "30",
        "nvidia.com/gpumem": "12288",
    }
    assert wl["reranker"]["resources"]["nvidia.com/gpumem-percentage"] == "25"
    assert all(w["served"] == w["replicas"] for w in plan["workloads"])


def test_assignment_expects_split_count_vgpus_on_hami_nodes(files: dict[str, bytes]) -> None:
    cm = _obj(files, "infer/migc-system/configmap-migc-assignment.yaml")
    doc = json.loads(cm["data"]["assignment.json"])
    pool = next(p for p in doc["pools"] if p["name"] == "l40s")
    config = doc["configs"][pool["nodes"][0]["config"]]
    assert config["resources"]["nvidia.com/gpu"] == 4 * 8  # 4 GPUs × splitCount 8


def test_selector_pool_and_shared_gpu_name_warn() -> None:
    from dataclasses import replace

    policy, _ = load_and_validate([ROOT / "examples" / "hami"])
    assert policy is not None
    cluster = policy.clusters[0]
    pools = tuple(
        replace(p, node_selector=(("pool", "x"),)) if p.name == "l40s" else p for p in cluster.pools
    )
    tenants = tuple(
        replace(t, burst=replace(t.burst, gpus=2)) if t.name == "search" else t for t in policy.tenants
    )
    changed = replace(policy, clusters=(replace(cluster, pools=pools),), tenants=tenants)
    assert [d.code for d in hami_diagnostics(changed)] == ["MIGC315", "MIGC316"]
    assert hami_diagnostics(policy) == []


def test_plan_text_shows_hami_gpus_and_pod_resources(capsys: pytest.CaptureFixture[str]) -> None:
    from compiler.cli import main

    assert main(["plan", str(ROOT / "examples" / "hami")]) == 0
    out = capsys.readouterr().out
    assert "HAMi pools" in out
    assert "infer/l40s (L40S): 6 of 8 GPUs carry shares" in out
    assert "search/embedder x1, search/reranker x1; memory 24.0Gi/48.0Gi (free 24.0Gi), cores 70/100%" in out
    assert "embedder (search): nvidia.com/gpu: 1, nvidia.com/gpucores: 30, nvidia.com/gpumem: 12288" in out


def _plan_out(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    from compiler.cli import main

    capsys.readouterr()
    assert main(["plan", *argv]) == 0
    return capsys.readouterr().out


def test_plan_json_carries_the_hami_pools_and_pod_requests(
    files: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """`plan -o json` key ``hami``: per pool the GPUs that carry shares, in the rendered HamiPlan's
    per-GPU shape (and the same values), idle GPUs only counted; per workload what its pods request."""
    doc = json.loads(_plan_out(capsys, str(ROOT / "examples" / "hami"), "--from-scratch", "-o", "json"))
    hami = doc["hami"]
    rendered = json.loads(_obj(files, "infer/migc-system/configmap-migc-hami.yaml")["data"]["plan.json"])
    pools = {p["name"]: p for p in rendered["pools"]}
    assert [(p["cluster"], p["pool"]) for p in hami["pools"]] == [("infer", "a100"), ("infer", "l40s")]
    for p in hami["pools"]:
        carrying = [g for g in pools[p["pool"]]["gpus"] if g["shares"]]
        assert p["gpus"] == carrying
        assert (p["gpusTotal"], p["gpusUsed"]) == (len(pools[p["pool"]]["gpus"]), len(carrying))
    l40s = hami["pools"][1]
    assert (l40s["gpuModel"], l40s["gpusTotal"], l40s["gpusUsed"], l40s["optimal"]) == ("L40S", 8, 6, True)
    assert l40s["gpus"][1]["memoryMiB"] == {"total": 49152, "used": 24576}
    assert [s["workload"] for s in l40s["gpus"][1]["shares"]] == ["embedder", "reranker"]
    embedder = next(w for w in hami["workloads"] if w["name"] == "embedder")
    assert embedder == {
        "cluster": "infer",
        "name": "embedder",
        "tenant": "search",
        "resources": {"nvidia.com/gpu": "1", "nvidia.com/gpucores": "30", "nvidia.com/gpumem": "12288"},
        "priorityClassName": "migc-high",
    }
    assert [w["name"] for w in hami["workloads"]] == [w["name"] for w in rendered["workloads"]]
    # a policy without HAMi pools or workloads: the key is there, null
    prod = json.loads(_plan_out(capsys, str(ROOT / "examples" / "prod"), "--from-scratch", "-o", "json"))
    assert prod["hami"] is None


def test_plan_markdown_has_a_hami_table_per_pool_and_the_pod_requests(
    capsys: pytest.CaptureFixture[str],
) -> None:
    md = _plan_out(capsys, str(ROOT / "examples" / "hami"), "--from-scratch", "-o", "markdown")
    assert "\n### HAMi pools\n" in md
    assert "**infer/l40s** (L40S): 6 of 8 GPUs carry shares; 2 idle\n" in md
    assert (
        "| infer-l40s-01 | 1 | search/embedder x1, search/reranker x1 | 24.0Gi / 48.0Gi | 70% / 100% "
        "| 2 / 8 |\n" in md
    )
    assert (
        "| infer | reranker | search | nvidia.com/gpu: 1, nvidia.com/gpucores: 40, "
        "nvidia.com/gpumem-percentage: 25 | migc-high |\n" in md
    )
    # one table row per GPU that carries shares: 3 on the A100s, 6 on the L40Ss
    assert md.count("| infer-a100-01 |") == 3 and md.count("| infer-l40s-0") == 6
    prod = _plan_out(capsys, str(ROOT / "examples" / "prod"), "--from-scratch", "-o", "markdown")
    assert "HAMi" not in prod


def test_hami_mig_mode_keeps_the_mig_manager_off_and_the_node_out_of_the_assignment(
    files: dict[str, bytes],
) -> None:
    """operatingMode mig: HAMi switches MIG on itself. The GPU Operator sets
    nvidia.com/gpu.deploy.mig-manager=true only where the key is absent (NVIDIA/gpu-operator@a22dbf67
    controllers/state_manager.go:486-490), so "false" keeps its MIG manager -- which would apply
    all-disabled -- off the node; and migc-controller is not given the node to reconfigure."""
    plan = json.loads(_obj(files, "infer/migc-system/configmap-migc-hami.yaml")["data"]["plan.json"])
    labels = {p["name"]: p["nodeLabels"] for p in plan["pools"]}
    assert labels["a100"]["nvidia.com/gpu.deploy.mig-manager"] == "false"
    assert "nvidia.com/gpu.deploy.mig-manager" not in labels["l40s"]  # hami-core: MIG stays off
    cm = _obj(files, "infer/migc-system/configmap-migc-assignment.yaml")
    assert [p["name"] for p in json.loads(cm["data"]["assignment.json"])["pools"]] == ["l40s"]
