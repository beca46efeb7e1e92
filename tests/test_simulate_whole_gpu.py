"""``Settings.whole_gpu``: what a whole GPU is on the loop's fleet (docs/simulate.md, *Whole GPUs*).

``"mig-disabled"`` (the default): a whole GPU has MIG mode off, so a change between it and a carved
layout turns MIG on or off, which mig-parted applies to the whole node — ``ApplyMigMode`` walks every
selected GPU, clears the MIG configuration of each one in MIG mode and, once a mode change is pending,
resets all GPUs (NVIDIA/mig-parted@bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d
cmd/nvidia-mig-parted/apply/mode.go:88-94 ``ClearMigConfig``, :119-129 ``ResetAllGPUs``).
``"full-instance"``: every GPU stays in MIG mode and a whole-GPU pod takes an instance of the full
profile (7g.80gb on A100-80GB), so no change is a mode change and mig-parted's per-GPU apply re-carves
only the GPUs whose devices differ (apply/config.go:92-95 "Skipping -- already set to desired value").
It matters only where the drain is per GPU (``drain_scope="gpu"``); elsewhere it is refused.
Hand-made traces on A100-SXM4-80GB (all-balanced start: 2 × 1g, 2g, 3g per GPU).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from nosync import settings

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.exitcodes import ExitCode
from compiler.model import PartitionPolicy
from compiler.simulate.engine import Settings, simulate
from compiler.simulate.trace import COLUMNS, TracePod

A100 = load_catalog().by_product("NVIDIA-A100-SXM4-80GB")
POLICY = PartitionPolicy(mode="dynamic")
GPU = settings(nodes=1, gpus_per_node=2, drain_scope="gpu")  # no ConfigMap wait (tests/nosync.py)
FULL = replace(GPU, whole_gpu="full-instance")


def pod(name: str, at: float, secs: float, milli: int = 1000) -> TracePod:
    return TracePod(name, at, secs, 1, milli, 0)


def busy_and_whole() -> list[TracePod]:
    """``a`` (1g) from 0 for 10,000 s binds on GPU 0; ``big`` (a whole GPU) arrives at 100 and needs
    GPU 1 (idle) re-carved to a whole GPU."""
    return [pod("a", 0, 10_000, milli=100), pod("big", 100, 500)]


def test_a_whole_gpu_as_a_full_instance_recarves_only_the_idle_gpu() -> None:
    """Under ``"mig-disabled"`` GPU 1's whole GPU turns MIG off: every GPU of the node is cleared and
    reset, so ``a`` on GPU 0 is drained and evicted after the grace (1,800 s) and ``big`` waits
    1,800 + 2 × 60 s (as in tests/test_simulate_drain.py). As a full-profile instance GPU 1 stays in
    MIG mode: only it is re-carved (60 s), ``a`` runs on undisturbed to its end, and ``big`` waits for
    that one GPU."""
    assert A100 is not None
    off = simulate(busy_and_whole(), A100, GPU, "naive", POLICY)
    assert (off.evictions, off.waits["7g"]) == (1, [(1920.0, False)])
    full = simulate(busy_and_whole(), A100, FULL, "naive", POLICY)
    assert (full.evictions, full.lost_gpu_seconds, full.gpu_reconfigurations) == (0, 0.0, 1)
    assert full.waits == {"1g": [(0.0, False)], "7g": [(60.0, False)]}


def test_the_idle_pass_recarves_the_idle_gpu_of_a_busy_node_for_a_whole_gpu_pod() -> None:
    """The idle pass re-carves only what evicts nobody. A whole GPU (MIG off) on the idle GPU 1 of
    ``a``'s node is a mode change that drains ``a``, so under ``"mig-disabled"`` the pass leaves the node
    to the gated loop (no idle re-carve); as a full instance it is GPU 1's re-carve alone, which the
    pass makes at 900 s, as it re-carves the idle node of tests/test_simulate_drain.py's two-node case
    (there both GPUs, 120 s; here GPU 1 alone, 60 s): nobody is evicted."""
    assert A100 is not None
    trace = [pod("a", 0, 200_000, milli=100), pod("big", 100, 500)]
    off = simulate(trace, A100, replace(GPU, idle_pass=True), "default", POLICY)
    assert off.idle_recarves == 0
    full = simulate(trace, A100, replace(FULL, idle_pass=True), "default", POLICY)
    assert (full.idle_recarves, full.evictions, full.reconfigurations) == (1, 0, 1)
    assert full.waits == {"1g": [(0.0, False)], "7g": [(900.0 - 100.0 + 60.0, False)]}


def test_the_disruption_rule_prices_only_the_changing_gpu_of_a_full_instance_fleet() -> None:
    """The gated loop (no idle pass): ``a`` (a 3g.40gb) runs on GPU 0 from 0 for 400,000 s, ``big`` (a
    whole GPU) arrives at 100,000 s. Under ``"mig-disabled"`` GPU 1's whole GPU is a mode change that
    re-carves GPU 0 too, so the rule charges ``a``'s lost work (it has run over a day) and refuses
    the change until ``big``'s wait outweighs it: ``a`` is then evicted. As a full instance only GPU 1
    changes: the price is its outage alone, the rule never refuses, nobody is evicted, and ``big``
    waits for the stabilizationWindow and one GPU's re-carve."""
    assert A100 is not None
    trace = [pod("a", 0, 400_000, milli=400), pod("big", 100_000, 500)]
    s = replace(GPU, idle_pass=False, demand="now")
    off = simulate(trace, A100, s, "default", POLICY)
    assert off.blocked.get("disruption", 0) > 0 and off.evictions == 1
    (wait, _), = off.waits["7g"]
    assert wait > 86_400
    full = simulate(trace, A100, replace(s, whole_gpu="full-instance"), "default", POLICY)
    assert "disruption" not in full.blocked and full.evictions == 0
    assert full.waits == {"3g": [(0.0, False)], "7g": [(1760.0, False)]}


def test_held_on_idle_counts_a_whole_gpu_pod_beside_an_idle_gpu_of_a_busy_node() -> None:
    """Without the idle pass and with a slow loop, ``big`` (a whole GPU) waits while GPU 1 is idle.
    Under ``"mig-disabled"`` its re-carve is a mode change that drains ``a``, so heldOnIdleGpu does not
    count it; as a full instance that re-carve evicts nobody, so it counts once held past one interval
    plus one node's reconfiguration."""
    assert A100 is not None
    trace = [pod("a", 0, 200_000, milli=100), pod("big", 100, 100_000)]
    slow = PartitionPolicy(mode="dynamic", min_dwell_seconds=3600, stabilization_seconds=86_400)
    off = simulate(trace, A100, replace(GPU, idle_pass=False), "default", slow)
    full = simulate(trace, A100, replace(FULL, idle_pass=False), "default", slow)
    assert (off.held_on_idle, full.held_on_idle) == (0, 1)


def test_the_other_baselines_and_the_default_are_unchanged() -> None:
    """Only the loop's fleet (naive, default) changes MIG layouts; MIG off, per-pod carving and the
    static baselines replay alike under both settings, and ``"mig-disabled"`` is the default."""
    assert A100 is not None
    assert Settings(nodes=1).whole_gpu == "mig-disabled"
    for baseline in ("mig-off", "per-pod", "static-peak"):
        a = simulate(busy_and_whole(), A100, GPU, baseline, POLICY)
        b = simulate(busy_and_whole(), A100, FULL, baseline, POLICY)
        assert a == b, baseline


@pytest.mark.parametrize(
    "bad",
    [
        settings(nodes=1, whole_gpu="full-instance"),  # drain scope node: every pod is drained anyway
        replace(FULL, decision="recommend"),  # recommend's inputs model a whole GPU as MIG disabled
        replace(GPU, whole_gpu="vgpu"),
    ],
)
def test_settings_it_cannot_honour_are_refused(bad: Settings) -> None:
    assert A100 is not None
    with pytest.raises(ValueError, match="whole GPU"):
        simulate(busy_and_whole(), A100, bad, "naive", POLICY)


def test_cli_and_json_carry_the_whole_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``migc simulate --whole-gpu`` reaches the replay, its JSON and its text header; it is a usage
    error (exit 2) without ``--drain-scope gpu``, with ``--decision recommend``, with a baseline that
    never re-carves and with ``--mode fill``, where it would change nothing (every reason at once)."""
    trace = tmp_path / "t.csv"  # the columns the replay reads (compiler/simulate/trace.py COLUMNS)
    rows = "a,1,100,LS,0,10000,0\nbig,1,1000,LS,100,600,100\n"
    trace.write_text(",".join(COLUMNS) + "\n" + rows, encoding="utf-8")
    base = ["simulate", "--trace", str(trace), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"]
    args = [*base, "--gpus-per-node", "2", "--baseline", "naive", "--drain-scope", "gpu"]
    assert main([*args, "--whole-gpu", "full-instance", "-o", "json"]) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["wholeGpu"] == "full-instance" and doc["results"][0]["evictions"] == 0
    assert main([*args, "-o", "json"]) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["wholeGpu"] == "mig-disabled" and doc["results"][0]["evictions"] == 1
    assert main([*args, "--whole-gpu", "full-instance"]) == ExitCode.OK
    assert "; whole GPUs full-instance" in capsys.readouterr().out
    node = [*base, "--gpus-per-node", "2", "--whole-gpu", "full-instance"]
    assert main(node) == ExitCode.USAGE
    assert "only with --drain-scope gpu" in capsys.readouterr().err
    assert main([*args, "--whole-gpu", "full-instance", "--decision", "recommend"]) == ExitCode.USAGE
    assert "not with --decision recommend" in capsys.readouterr().err
    per_pod = [*base, "--gpus-per-node", "2", "--baseline", "per-pod", "--whole-gpu", "full-instance"]
    assert main(per_pod) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "only with --drain-scope gpu" in err and "not with --baseline per-pod" in err
    assert main([*base, "--mode", "fill", "--whole-gpu", "full-instance"]) == ExitCode.USAGE
    assert "--whole-gpu: only for --mode replay" in capsys.readouterr().err
