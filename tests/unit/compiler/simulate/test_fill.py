"""`migc simulate --mode fill`: FGD's protocol, checked against allocation ratios worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.exitcodes import ExitCode
from compiler.simulate.fill import arrivals, fill_order, rounded_share_ratio, rounding_ceiling
from compiler.simulate.trace import TracePod

CATALOG = load_catalog()
A100 = CATALOG.by_product("NVIDIA-A100-SXM4-80GB")
assert A100 is not None


def pod(milli: int, num: int = 1, name: str = "p") -> TracePod:
    return TracePod(name, 0.0, 0.0, num, milli, 0)


def test_seven_tenths_fill_one_gpu_with_seven_1g() -> None:
    """Pods of 0.1 GPU on one GPU: requests stop at 10 pods (1.0 GPU); 1g.10gb has 7 placements and
    the GPU 7 compute slices, so 7 are placed and 3 fail: ratio exactly 0.7 for every policy."""
    assert A100 is not None
    pods = arrivals([pod(100)], capacity=1, seed=5, gpus_per_node=1)
    assert len(pods) == 10
    for policy in ("first-fit", "best-fit", "migc-static"):
        r = fill_order(pods, CATALOG, A100, 1, 1, policy)
        assert (r.placed, r.failed) == (7, 3), policy
        assert r.ratio == pytest.approx(0.7), policy
    # the ceiling: each 0.1 rounds to 1/7 GPU, 7 of them fill the GPU
    assert rounding_ceiling(A100, pods, 1, "compute") == pytest.approx(0.7)
    assert rounded_share_ratio(A100, pods, "compute") == pytest.approx(0.7)


def test_first_fit_and_best_fit_differ_by_hand() -> None:
    """2 GPUs, in this order: 1g (0.1) → GPU0 slice 0; 4g (0.5, start 0 only) → GPU1; 2g (0.25):
    first-fit GPU0 at slice 2, best-fit GPU1 at slice 4 (1 compute slice left, not 4); 3g (0.4): both
    GPU0 at slice 4; second 3g: first-fit GPU1 at slice 4, best-fit nowhere (GPU0 has slices 0 and
    4..7 taken, GPU1 4..5). First-fit allocates 1.65 of 2 GPUs, best-fit 1.25."""
    assert A100 is not None
    order = [pod(100), pod(500), pod(250), pod(400), pod(400)]
    ff = fill_order(order, CATALOG, A100, 1, 2, "first-fit")
    bf = fill_order(order, CATALOG, A100, 1, 2, "best-fit")
    assert (ff.placed, ff.failed) == (5, 0) and ff.ratio == pytest.approx(0.825)
    assert (bf.placed, bf.failed) == (4, 1) and bf.ratio == pytest.approx(0.625)


def test_multi_gpu_pods_need_empty_gpus_on_one_node() -> None:
    """2 nodes × 2 GPUs: a 1g on node 0 leaves one empty GPU there; two pods of 2 GPUs: the first
    takes node 1, the second fails (3 GPUs empty in all, never 2 on one node)."""
    assert A100 is not None
    order = [pod(100), pod(1000, num=2), pod(1000, num=2)]
    r = fill_order(order, CATALOG, A100, 2, 2, "first-fit")
    assert (r.placed, r.failed) == (2, 1) and r.allocated_share == pytest.approx(2.1)
    bf = fill_order(order, CATALOG, A100, 2, 2, "best-fit")
    assert (bf.placed, bf.failed) == (2, 1)


def test_ceiling_keeps_the_requests_that_round_up_least() -> None:
    """One 0.5 (→ 4g, 4/7 GPU) and one 0.45 (→ 4g too) on one GPU: the knapsack keeps the 0.5
    whole and 3/4 of the 0.45 — (0.5 + 0.3375) of 1 GPU; the mix ratio is 0.95 / (8/7)."""
    assert A100 is not None
    pods = [pod(500), pod(450)]
    assert rounding_ceiling(A100, pods, 1, "compute") == pytest.approx(0.5 + 0.45 * 0.75)
    assert rounded_share_ratio(A100, pods, "compute") == pytest.approx(0.95 / (8 / 7))


def test_arrivals_stop_at_capacity_and_follow_the_seed() -> None:
    trace = [pod(100, name="a"), pod(1000, num=2, name="b"), pod(300, name="c"), pod(1000, num=9, name="x")]
    one = arrivals(trace, capacity=16, seed=1, gpus_per_node=8)
    assert one == arrivals(trace, capacity=16, seed=1, gpus_per_node=8)
    assert one != arrivals(trace, capacity=16, seed=2, gpus_per_node=8)
    shares = [p.num_gpu if p.num_gpu > 1 else p.gpu_milli / 1000 for p in one]
    assert sum(shares) >= 16 - 1e-9 and sum(shares[:-1]) < 16
    assert all(p.name != "x" for p in one)  # larger than a node: never drawn


def test_cli_fill_mode_json_and_shape_only_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "shapes.csv"  # openb multigpu20's columns: no times
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,1,100\nb,1,1,0,0\n")
    args = ["simulate", "--mode", "fill", "--trace", str(path), "--gpu-product", "NVIDIA-A100-SXM4-80GB"]
    assert main([*args, "--nodes", "1", "--gpus-per-node", "1", "-o", "json"]) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    assert (doc["tracePods"], doc["requests"], doc["capacityGpus"]) == (1, 10, 1)
    assert [(r["policy"], r["placed"], r["allocationRatio"]) for r in doc["results"]] == [
        ("first-fit", 7, 0.7),
        ("best-fit", 7, 0.7),
        ("migc-static", 7, 0.7),
    ]
    assert doc["migRoundingCeiling"] == 0.7
    # an option of the time replay is refused, not ignored
    assert main([*args, "--nodes", "1", "--time-scale", "4"]) == ExitCode.USAGE
    assert "--time-scale: only for --mode replay" in capsys.readouterr().err
    # the replay still needs the times
    assert main([*args[:2], "replay", *args[3:], "--nodes", "1"]) == ExitCode.INVALID
    assert "MIGC425" in capsys.readouterr().err
