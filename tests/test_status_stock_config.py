"""``migc status`` on a fresh cluster: the GPU Operator's node labeler puts its stock
``nvidia.com/mig.config=all-disabled`` on every MIG-capable node (cluster-behaviour.md, "NVIDIA GPU
Operator"; NVIDIA/gpu-operator controllers/nodelabeling_controller.go), which is the same GPU geometry
as migc's ``all-disabled-8gpu-whole-gpus``: no drift, and the node's pods are shown on its GPUs
(issue 25, item 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from statusfleet import fleet, status_argv, write_snapshot

from compiler.cli import main

ROOT = Path(__file__).resolve().parents[1]
WHOLE = "all-disabled-8gpu-whole-gpus"


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def stock(cluster: dict[str, object], config: str = "all-disabled") -> tuple[dict[str, object], list[str]]:
    names = []
    for item in cluster["items"]:  # type: ignore[attr-defined]
        labels = item["metadata"].get("labels", {})
        if item["kind"] == "Node" and labels.get("nvidia.com/mig.config") == WHOLE:
            labels["nvidia.com/mig.config"] = config
            names.append(item["metadata"]["name"])
    assert names
    return cluster, names


def test_stock_all_disabled_is_not_drift_and_keeps_the_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, names = stock(fleet())
    snap = write_snapshot(tmp_path / "cluster.json", cluster)
    assert main(status_argv("--snapshot", str(snap), "-o", "json")) == 0
    doc = json.loads(capsys.readouterr().out)
    nodes = {n["name"]: n for n in doc["nodes"]}
    for name in names:
        assert nodes[name]["config"] == "all-disabled"
        assert nodes[name]["drift"] == []
        pods = [s["pod"] for g in nodes[name]["gpus"] for s in g["slots"] if s["pod"]]
        assert len(pods) == 7 and all(g["known"] for g in nodes[name]["gpus"])
    html = tmp_path / "fleet.html"
    assert main(status_argv("--snapshot", str(snap), "--html", str(html))) == 0
    page = html.read_text(encoding="utf-8")
    assert all(f"{name}-gpu-0" in page for name in ["genai-" + names[0]])


def test_another_config_on_those_nodes_is_still_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, names = stock(fleet(), config="all-1g.10gb")
    snap = write_snapshot(tmp_path / "cluster.json", cluster)
    assert main(status_argv("--snapshot", str(snap), "-o", "json")) == 0
    nodes = {n["name"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    assert nodes[names[0]]["drift"] == [f"carries all-1g.10gb, assignment says {WHOLE}"]
