"""A pool's ``gpu`` counts one way in the plan and the status: what the device plugin advertises,
so a time-sliced pool's units are its shares (as the ResourceQuota counts them) and are labelled so;
a GPU that cannot run MIG is not "MIG off" (issue 25, item 12)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compiler.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_time_sliced_units_are_shares_and_kept_apart_from_whole_gpus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", str(ROOT / "examples" / "prod"), "--from-scratch"]) == 0
    out = capsys.readouterr().out
    # 2 nodes × 4 L40S × 4 replicas: 32 nvidia.com/gpu, 16 per node as the status shows them
    assert "prod-east/l40s: GPU share (time-slicing ×4) 0 → 32" in out
    assert "whole GPU 0 → 32" not in out
    assert "research: GPU share (time-slicing ×4) 0 → 12 of 12, whole GPU 0 → 8 of 8" in out
    assert "whole GPU, time-slicing ×4" in out  # the L40S GPUs' layout line


def test_a_gpu_without_mig_is_not_mig_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "p"
    shutil.copytree(ROOT / "examples" / "prod", policy)
    fleet = policy / "fleet.yaml"
    text = fleet.read_text().replace("gpuProduct: NVIDIA-L40S", "gpuProduct: NVIDIA-L4")
    text = text.replace("    NVIDIA-L40S: 1.6\n", "    NVIDIA-L4: 0.8\n")
    text = text.replace("          sharing:\n            mode: time-slicing\n            replicas: 4\n", "")
    fleet.write_text(text)
    workloads = policy / "workloads.yaml"
    workloads.write_text(workloads.read_text().replace("  isolation: shared\n", "  isolation: exclusive\n"))
    assert main(["plan", str(policy), "--from-scratch", "--detail"]) == 0
    out = capsys.readouterr().out
    block = out.split("(pool l40s", 1)[1].split("\n  ", 2)[1]
    assert "whole GPU" in block and "MIG off" not in block


def test_status_says_a_shared_pool_s_gpu_counts_are_shares(capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = ROOT / "examples" / "snapshots" / "prod-east.json"
    assert main(["status", str(ROOT / "examples" / "prod"), "--snapshot", str(snapshot)]) == 0
    out = capsys.readouterr().out
    assert "  l40s: 8 GPUs advertised as 32 nvidia.com/gpu (shared, 4 per GPU)" in out  # 16 per node
    assert "a100: " not in out.split("Pools", 1)[1].split("Tenants", 1)[0]  # whole GPUs need no note
