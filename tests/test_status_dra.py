"""`migc status` on a static DRA pool: pods that ask through claims, and the node's capacity read from
the NVIDIA DRA driver's ResourceSlices (the device plugin is off there: its allocatable says nothing).

The objects are tests/test_recommend_dra.py's (the driver's slices as tests/controller/emulation.py
``FakeDraDriver`` publishes them, kubernetes-sigs/dra-driver-nvidia-gpu@95932046)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_recommend_dra import CURRENT, NODE, claimed_pod, fleet_objects, published

from compiler.cli import main

ROOT = Path(__file__).resolve().parents[1]
CONFIG = "migc-h100-80gb-6gpu-whole_2gpu-1x3g.40gb-1x2g.20gb-2x1g.10gb"


def _node() -> dict[str, Any]:
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/mig.config": CONFIG,
        "nvidia.com/mig.config.state": "success",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE, "labels": labels},
        "status": {"allocatable": {"nvidia.com/gpu": "0"}},  # the device plugin is off on DRA nodes
    }


def _status(
    tmp_path: Path, items: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    pol = tmp_path / "pol"
    shutil.copytree(ROOT / "examples" / "dra", pol)
    assert main(["compile", str(pol), "--out", str(tmp_path / "out")]) == 0
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    capsys.readouterr()
    argv = ["status", str(pol), "--snapshot", str(snap), "--against", str(tmp_path / "out"), "-o", "json"]
    assert main([*argv, "--now", "2026-12-01T06:00:00Z"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_a_static_dra_nodes_capacity_is_what_the_driver_publishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Six whole GPUs and two of 7 x 1g.10gb published (tests/test_recommend_dra.py ``CURRENT``), five
    pods holding devices through claims (four whole GPUs, counting the one asked in limits too, and a
    1g), one pending claim: capacity, allocated and free come from the slices and the claims; drift
    is still judged on allocatable (what the assignment expects of a DRA node: no device plugin)."""
    items = [*fleet_objects(), _node(), *claimed_pod("waiting", "1g.10gb", None)]
    for o in items:
        if o["kind"] == "Pod" and o["metadata"]["name"] == "limits":
            o["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    doc = _status(tmp_path, items, capsys)
    (node,) = [n for n in doc["nodes"] if n["name"] == NODE]
    assert node["capacity"] == {"nvidia.com/gpu": 6, "nvidia.com/mig-1g.10gb": 14}
    assert node["allocated"] == {"nvidia.com/gpu": 5, "nvidia.com/mig-1g.10gb": 1}
    assert node["free"] == {"nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 13}
    assert node["drift"] == []
    assert [p["pod"] for p in doc["pending"]] == ["search/waiting"]


def test_without_slices_the_node_shows_its_allocatable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [o for o in fleet_objects() if o["kind"] != "ResourceSlice"] + [_node()]
    (node,) = [n for n in _status(tmp_path, items, capsys)["nodes"] if n["name"] == NODE]
    assert node["capacity"] == {}  # allocatable nvidia.com/gpu: 0, as the device plugin being off leaves it
    assert published(NODE, CURRENT)  # (the slices the first test reads)


def _slice(name: str, devices: list[dict[str, Any]], count: int) -> dict[str, Any]:
    pool = {"name": NODE, "generation": 1, "resourceSliceCount": count}
    spec = {"driver": "gpu.nvidia.com", "nodeName": NODE, "pool": pool, "devices": devices}
    meta = {"name": name}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta, "spec": spec}


def test_slices_that_publish_more_than_the_nodes_gpus_carry_are_not_believed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A broken or hostile driver on the 8-GPU node publishing 256 slices of 128 whole GPUs (32,768,
    what the reader's bounds let through) or 9 x 7 1g.10gb (an H100 carries at most 7 per GPU) is not
    the node's capacity: the node shows its allocatable, as when the slices cannot be counted (its
    allocatable is bounded at the edge, parse.MAX_NODE_INSTANCES; 32,768 free GPUs would be shown)."""
    base = [o for o in fleet_objects() if o["kind"] != "ResourceSlice"] + [_node()]

    def whole(k: int, i: int) -> dict[str, Any]:
        return {"name": f"gpu-{k}-{i}", "attributes": {"type": {"string": "gpu"}}}

    def small(i: int) -> dict[str, Any]:
        attrs = {"type": {"string": "mig"}, "profile": {"string": "1g.10gb"}}
        return {"name": f"gpu-{i // 7}-mig-1g10gb-19-{i % 7}", "attributes": attrs}

    huge = [_slice(f"s{k}", [whole(k, i) for i in range(128)], 256) for k in range(256)]
    many = [_slice("s", [small(i) for i in range(63)], 1)]
    for k, hostile in enumerate((huge, many)):
        here = tmp_path / str(k)
        here.mkdir()
        (node,) = [n for n in _status(here, [*base, *hostile], capsys)["nodes"] if n["name"] == NODE]
        assert node["capacity"] == {} and node["free"] == {}
    fine = [_slice("s", [small(i) for i in range(56)], 1)]  # 8 x 7: what the node's GPUs can carry
    (node,) = [n for n in _status(tmp_path, [*base, *fine], capsys)["nodes"] if n["name"] == NODE]
    assert node["capacity"] == {"nvidia.com/mig-1g.10gb": 56}
