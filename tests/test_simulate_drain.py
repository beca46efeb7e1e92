"""``Settings.drain_scope``: the replay drains per node (device plugin) or per GPU (static DRA).

mig-parted applies a MIG config GPU by GPU and skips a GPU whose MIG devices already equal the config
(NVIDIA/mig-parted@bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d cmd/nvidia-mig-parted/apply/config.go:46
``WalkSelectedMigConfigForEachGPU``, :92-95 "Skipping -- already set to desired value"), so under
``"gpu"`` a pod on an unchanged GPU runs through its node's re-carve — unless a GPU of the node turns
MIG on or off, which re-carves every GPU (mode.go) — ; under ``"node"`` the controller drains every GPU
pod of the node (controller/pods.py ``blocking``: nothing in the device plugin's API says which pod
holds which GPU). Hand-made traces on A100-SXM4-80GB (all-balanced: 2 × 1g, 2g, 3g); the pods that
make a GPU be re-carved ask a 4g.40gb (MIG stays on) unless the test is about a mode change.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from nosync import settings

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.exitcodes import ExitCode
from compiler.model import PartitionPolicy
from compiler.recommend import disruption as dis
from compiler.simulate.engine import (
    IDLE,
    Result,
    Settings,
    _Fleet,
    _Pod,
    _Run,
    balanced_layout,
    cover,
    simulate,
)
from compiler.simulate.trace import TracePod, profile_for

A100 = load_catalog().by_product("NVIDIA-A100-SXM4-80GB")
POLICY = PartitionPolicy(mode="dynamic")
ONE_G, WHOLE = "1g.10gb", "7g.80gb"
FOUR_MILLI = 550  # gpu_milli of a 4g.40gb pod (4/7 >= 0.55): a re-carve that keeps MIG on


def pod(name: str, at: float, secs: float, milli: int = 1000, num: int = 1) -> TracePod:
    return TracePod(name, at, secs, num, milli, 0)


def busy_and_idle() -> list[TracePod]:
    """``a`` (1g) from 0 for 10,000 s binds on GPU 0; ``big`` (a 4g.40gb) arrives at 100: one of the
    node's two balanced GPUs must be re-carved for it (MIG stays on), and GPU 1 is idle."""
    return [pod("a", 0, 10_000, milli=100), pod("big", 100, 500, milli=FOUR_MILLI)]


def test_gpu_scope_leaves_the_pod_on_an_unchanged_gpu_running() -> None:
    """(a) ``"gpu"``: only GPU 1 (idle) changes; ``a`` is never evicted and ends at its natural end,
    10,000 s (the replay's last event); ``big`` waits for GPU 1's re-carve only, 60 s.
    ``"node"``: the node is drained whole: ``a`` blocks it, is evicted at 100 + 1800 s of grace
    (1,900 s of run time lost) and runs again; ``big`` waits 1,800 + 60 s."""
    assert A100 is not None
    gpu = simulate(
        busy_and_idle(), A100, settings(nodes=1, gpus_per_node=2, drain_scope="gpu"), "naive", POLICY
    )
    assert (gpu.evictions, gpu.lost_gpu_seconds, gpu.reconfigurations, gpu.gpu_reconfigurations) == (
        0,
        0.0,
        1,
        1,
    )
    assert gpu.waits == {"1g": [(0.0, False)], "4g": [(60.0, False)]}
    assert gpu.hours * 3600 == 10_000.0  # a ran once, start to end
    node = simulate(busy_and_idle(), A100, settings(nodes=1, gpus_per_node=2), "naive", POLICY)
    assert node.evictions == 1 and node.lost_gpu_seconds == pytest.approx(1900 / 7)
    assert node.waits == {"1g": [(60.0, False)], "4g": [(1860.0, False)]}
    assert node.hours * 3600 == 1960.0 + 10_000.0  # evicted, re-bound when the node is back, run again


def test_a_change_of_mig_mode_drains_and_recarves_the_whole_node_under_gpu_scope_too() -> None:
    """``big`` asks a whole GPU (MIG off): turning GPU 1's MIG mode off makes mig-parted's apply walk
    every GPU of the node and clear the MIG configuration of each in MIG mode, then reset all GPUs
    when the mode change is pending (NVIDIA/mig-parted@bd7160f4 cmd/nvidia-mig-parted/apply/apply.go
    :258-272 ``AssertMigMode`` then ``ApplyMigMode``; mode.go:88-94 ``ClearMigConfig``, :119-129
    ``ResetAllGPUs``), and the controller drains every pod (migparted.py ``changing_gpus``: None).
    So under ``"gpu"`` too ``a`` on GPU 0 is evicted after the grace (1,900 s of run lost), and both
    GPUs are re-carved (2 × 60 s): ``big`` waits 1,800 + 120 s, ``a`` 120 s. Only the layouts of GPU 1
    change (one GPU reconfigured); under ``"node"`` the outage counts that one GPU (60 s)."""
    assert A100 is not None
    trace = [pod("a", 0, 10_000, milli=100), pod("big", 100, 500)]
    gpu = simulate(trace, A100, Settings(nodes=1, gpus_per_node=2, drain_scope="gpu"), "naive", POLICY)
    assert (gpu.evictions, gpu.gpu_reconfigurations) == (1, 1)
    assert gpu.lost_gpu_seconds == pytest.approx(1900 / 7)
    assert gpu.waits == {"1g": [(120.0, False)], "7g": [(1920.0, False)]}
    node = simulate(trace, A100, Settings(nodes=1, gpus_per_node=2), "naive", POLICY)
    assert node.waits == {"1g": [(60.0, False)], "7g": [(1860.0, False)]}


def test_gpu_scope_drains_every_pod_when_it_retries_a_failed_apply() -> None:
    """The MIG manager's first apply of GPU 1 fails (seed 1 of ``failure_rate`` 0.5): ``a`` keeps
    running on GPU 0 through it, but the node's ``nvidia.com/mig.config.state`` is then ``failed``,
    and on the retry (after the 300 s backoff) the controller's per-GPU drain cannot tell what is on
    the GPUs, so it drains every GPU pod (controller/reconciler/drain.py ``_changing``: "is not
    success"): ``a`` is evicted after the grace, and ``big`` waits 60 + 300 + 1,800 + 60 s. Without
    a failure ``a`` runs through the re-carve of GPU 1."""
    assert A100 is not None
    trace = [pod("a", 0, 100_000, milli=100), pod("big", 100, 500, milli=FOUR_MILLI)]
    s = settings(nodes=1, gpus_per_node=2, drain_scope="gpu", failure_rate=0.5, seed=1)
    res = simulate(trace, A100, s, "naive", POLICY)
    assert (res.failures, res.evictions) == (1, 1)
    assert res.waits["4g"] == [(60.0 + 300.0 + 1800.0 + 60.0, False)]
    ok = simulate(trace, A100, settings(nodes=1, gpus_per_node=2, drain_scope="gpu"), "naive", POLICY)
    assert (ok.failures, ok.evictions) == (0, 0)


def test_an_unknown_drain_scope_is_refused() -> None:
    assert A100 is not None
    with pytest.raises(ValueError, match="drain scope 'rack'"):
        simulate(
            busy_and_idle(), A100, Settings(nodes=1, gpus_per_node=2, drain_scope="rack"), "naive", POLICY
        )


def test_gpu_scope_still_cordons_the_whole_node() -> None:
    """A 1g pod arriving at 120, while GPU 1 is re-carved (100–160), does not bind on GPU 0's free 1g:
    the node is cordoned from admission until Idle again, also under ``"gpu"``."""
    assert A100 is not None
    trace = [*busy_and_idle(), pod("c", 120, 50, milli=100)]
    res = simulate(trace, A100, settings(nodes=1, gpus_per_node=2, drain_scope="gpu"), "naive", POLICY)
    assert res.evictions == 0
    assert sorted(res.waits["1g"]) == [(0.0, False), (40.0, False)]


def test_gpu_scope_drains_the_pods_on_the_gpu_that_changes() -> None:
    """``a`` and ``a2`` (1g) take GPU 0's two 1g at 0, ``b`` (1g) GPU 1's at 10, ``a2`` ends at 50: at 100
    ``big`` needs one GPU to become 7g, both are busy. Under ``"gpu"`` the GPU whose pods ran least
    changes (GPU 1: ``b``, 90 s, against ``a``'s 100 s): ``b`` blocks the re-carve, is evicted after the
    grace (1,890 s of run lost) and ``a`` runs on. Under ``"node"`` both are evicted."""
    assert A100 is not None
    trace = [
        pod("a", 0, 10_000, milli=100),
        pod("a2", 0, 50, milli=100),
        pod("b", 10, 20_000, milli=100),
        pod("big", 100, 500, milli=FOUR_MILLI),
    ]
    gpu = simulate(trace, A100, Settings(nodes=1, gpus_per_node=2, drain_scope="gpu"), "naive", POLICY)
    node = simulate(trace, A100, Settings(nodes=1, gpus_per_node=2), "naive", POLICY)
    assert node.evictions == 2
    assert (gpu.evictions, gpu.gpu_reconfigurations) == (1, 1)
    assert gpu.lost_gpu_seconds == pytest.approx(1890 / 7)  # b's run, not a's
    assert gpu.waits["4g"] == [(1860.0, False)]  # the grace, then GPU 1's re-carve


def _fleet_with_busy_gpu0() -> _Fleet:
    assert A100 is not None
    fleet = _Fleet(A100, Settings(nodes=1, gpus_per_node=2), balanced_layout(A100))
    fleet.busy[0] = {ONE_G: 1}
    return fleet


def test_the_gpu_choice_keeps_the_busy_gpus_layout() -> None:
    """(b) The cover finds that one GPU of the node must become 7g. Without ``keep`` (``"node"``:
    every pod of a changed node is drained anyway) it takes GPU 0, where ``a`` runs (both GPUs serve
    the same; ties go by index); with ``keep`` (``"gpu"``: GPU-seconds a GPU's change would evict)
    the node's new multiset {balanced, 7g} is mapped so that the busy GPU keeps balanced."""
    demand = {WHOLE: 1, ONE_G: 1}
    node_changes, node_cap = cover(_fleet_with_busy_gpu0(), demand, [(0, 0.0)])
    assert node_changes == {0: {WHOLE: 1}}
    gpu_changes, gpu_cap = cover(
        _fleet_with_busy_gpu0(), demand, [(0, 0.0)], keep=lambda gi: 700.0 * (gi == 0)
    )
    assert gpu_changes == {1: {WHOLE: 1}}
    assert gpu_cap == node_cap  # the same layouts, on other GPUs
    # an idle node: nothing to keep, one GPU changes either way
    assert A100 is not None
    idle = _Fleet(A100, Settings(nodes=1, gpus_per_node=2), balanced_layout(A100))
    assert list(cover(idle, demand, [(0, 0.0)], keep=lambda gi: 0.0)[0].values()) == [{WHOLE: 1}]
    # a GPU with a pod that has just started (0 GPU-seconds to lose) still keeps its layout first
    assert cover(_fleet_with_busy_gpu0(), demand, [(0, 0.0)], keep=lambda gi: 0.0)[0] == gpu_changes


def test_the_busy_gpu_changes_when_the_new_multiset_drops_its_layout() -> None:
    """Both GPUs must become 7g: no copy of balanced is left, so the busy GPU changes too (and is
    drained under ``"gpu"``): keeping a layout is only possible where the node's target holds it."""
    changes, _ = cover(_fleet_with_busy_gpu0(), {WHOLE: 2}, [(0, 0.0)], keep=lambda gi: 700.0 * (gi == 0))
    assert changes == {0: {WHOLE: 1}, 1: {WHOLE: 1}}


def test_gpu_scope_recarves_idle_gpus_before_busy_ones_and_batches_only_idle_ones() -> None:
    """3 balanced GPUs, ``a`` (1g) on GPU 0, a whole-GPU pod waiting: every GPU serves the demand alike
    (the fleet has 1g to spare). ``"node"`` takes GPU 0 first and, the node being drained anyway,
    batches GPU 1 to 7g as well (GPU 2 is left to serve the 1g); ``"gpu"`` re-carves the idle GPU 1
    for the pod, batches only the idle GPU 2, and leaves the busy GPU 0 as it is: ``a`` is not
    drained."""
    assert A100 is not None

    def fleet() -> _Fleet:
        assert A100 is not None
        f = _Fleet(A100, Settings(nodes=1, gpus_per_node=3), balanced_layout(A100))
        f.busy[0] = {ONE_G: 1}
        return f

    demand = {ONE_G: 1, WHOLE: 1}
    assert cover(fleet(), demand, [(0, 0.0)])[0] == {0: {WHOLE: 1}, 1: {WHOLE: 1}}  # GPU 2 serves the 1g
    changes, _ = cover(fleet(), demand, [(0, 0.0)], keep=lambda gi: 0.0)
    assert changes == {1: {WHOLE: 1}, 2: {WHOLE: 1}}
    trace = [pod("a", 0, 10_000, milli=100), pod("big", 100, 500, milli=FOUR_MILLI)]
    res = simulate(trace, A100, Settings(nodes=1, gpus_per_node=3, drain_scope="gpu"), "naive", POLICY)
    assert (res.evictions, res.gpu_reconfigurations) == (0, 2)


def test_the_price_of_a_change_counts_only_pods_on_changing_gpus_under_gpu() -> None:
    """(c) compiler/recommend/disruption.py ``change_cost`` (one function for recommend and the replay):
    a node of 8 GPUs with one 1g pod (f = 1/7, run 3,600 s, waited 600 s) on a GPU that does not change
    and one changed GPU. ``"node"``: the pod's expected loss 3600²/5400 / 7, its displaced wait 600 / 7
    (the new layout has no 1g) and 8 GPUs × 60 s — the same whether or not the pod is on the changing
    GPU. ``"gpu"``: no loss, nothing displaced, and the outage of the node's GPUs less the 1/7 the pod
    keeps running: (8 − 1/7) × 60 s; with the pod on the changing GPU it is charged as under "node"."""
    on_unchanged = dis.RunningPod(((ONE_G, 1, 1 / 7),), 3600.0, 600.0, on_changed=False)
    on_changed = dis.RunningPod(((ONE_G, 1, 1 / 7),), 3600.0, 600.0, on_changed=True)
    after = {WHOLE: 1}

    def price(p: dis.RunningPod, scope: str) -> float | None:
        return dis.change_cost([p], 8, 1, after, 1800.0, 60.0, scope=scope).total

    node = 3600 * 3600 / 5400 / 7 + 600 / 7 + 8 * 60
    assert price(on_unchanged, "node") == pytest.approx(node) == price(on_changed, "node")
    assert price(on_unchanged, "gpu") == pytest.approx((8 - 1 / 7) * 60)
    assert price(on_changed, "gpu") == pytest.approx(node)
    # the busy-share outage charge: only the drained pods' share is out
    busy = dis.change_cost([on_unchanged], 8, 1, after, 1800.0, 60.0, charge="busy", scope="gpu")
    assert (busy.loss, busy.outage, busy.displaced) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="drain scope"):
        dis.change_cost([], 8, 1, after, 1800.0, 60.0, scope="rack")


def _run(scope: str) -> _Run:
    """1 node x 2 balanced GPUs; ``a`` (1g) bound on GPU 0 at 0 (waited 0); ``w`` (1g) pending."""
    assert A100 is not None
    s = Settings(nodes=1, gpus_per_node=2, drain_scope=scope)
    tps = [pod("a", 0, 100_000, milli=100), pod("w", 0, 100, milli=100)]
    pods = [_Pod(p, 0.0, *profile_for(p, A100, s.mapping), "1g") for p in tps]
    fleet = _Fleet(A100, s, balanced_layout(A100))
    run = _Run(pods, A100, s, "default", POLICY, fleet, Result("default", 0.0), 0.0)
    run.enqueue(0, 0.0)
    assert run.try_bind(0, 0.0) and run.bound[0] == [(0, 1)]
    del run.pending[ONE_G]
    run.enqueue(1, 0.0)
    return run


@pytest.mark.parametrize("gpu", [0, 1])
def test_the_replay_weighs_a_change_of_an_idle_gpu_lower_under_gpu_scope(gpu: int) -> None:
    """(c) in the replay: at 5,400 s, re-carving one GPU of the node to 7 × 1g serves ``w`` (waited
    5,400 s: benefit 5400 / 7 = 771 GPU-s). ``"node"``: ``a`` (run 5,400 s) is charged
    5400²/7200 / 7 = 579 plus 2 GPUs × 60 s whichever GPU changes: 699 × 1.2 > 771, not worth it.
    ``"gpu"``: changing idle GPU 1 costs (2 − 1/7) × 60 = 111 GPU-s: worth it; changing GPU 0, where
    ``a`` runs, costs what "node" charges."""
    want = {ONE_G: 2}
    after = {ONE_G: 9, "2g.20gb": 1, "3g.40gb": 1}
    # the fleet's 1g capacity before (one short of a + w) and after the change
    change = {gpu: {ONE_G: 7}}
    node = _run("node")._weigh(5400.0, want)(0, {ONE_G: 1}, {ONE_G: 8}, change, 0.0, after)
    on_gpu = _run("gpu")._weigh(5400.0, want)(0, {ONE_G: 1}, {ONE_G: 8}, change, 0.0, after)
    assert node is False
    assert on_gpu is (gpu == 1)
    # a larger benefit (a multi-GPU pod's 4,000 GPU-s) outweighs even the node-wide price
    assert _run("node")._weigh(5400.0, want)(0, {ONE_G: 1}, {ONE_G: 8}, change, 4000.0, after) is True


def test_the_idle_pass_under_gpu_scope_recarves_idle_gpus_of_a_busy_node() -> None:
    """``--idle-pass`` with ``"gpu"``: the idle GPUs of a node with a pod on it are re-carved for the
    pods waiting, the busy GPU is left as it is (frozen), nothing is evicted; under ``"node"`` the
    node is not idle and the idle pass leaves it to the gated loop."""
    assert A100 is not None
    trace = [pod("a", 0, 200_000, milli=100), pod("big", 100, 500, milli=FOUR_MILLI)]
    s = settings(nodes=1, gpus_per_node=2, idle_pass=True)
    gpu = simulate(trace, A100, settings(**{**s.__dict__, "drain_scope": "gpu"}), "default", POLICY)
    assert (gpu.idle_recarves, gpu.evictions, gpu.reconfigurations) == (1, 0, 1)
    assert gpu.waits["4g"] == [(900.0 - 100.0 + 60.0, False)]  # first evaluation at 900, 60 s re-carve
    node = simulate(trace, A100, s, "default", POLICY)
    assert node.idle_recarves == 0


def test_the_idle_pass_under_gpu_scope_makes_no_mode_change_on_a_busy_node() -> None:
    """A whole GPU (MIG off) for ``big`` on the idle GPU 1 of ``a``'s node is a mode change: mig-parted
    clears and resets every GPU of the node (NVIDIA/mig-parted@bd7160f4 cmd/nvidia-mig-parted/apply/
    mode.go:88-94, :119-129), so that re-carve drains ``a`` too — it is not the eviction-free re-carve
    the idle pass exists for, which skips the disruption rule and the stabilizationWindow. The idle
    pass leaves that node to the gated loop (the run is the one without the idle pass), and carves a
    node without pods instead when there is one (both its GPUs re-carved: 120 s, nobody evicted)."""
    assert A100 is not None
    trace = [pod("a", 0, 200_000, milli=100), pod("big", 100, 500)]
    s = settings(nodes=1, gpus_per_node=2, drain_scope="gpu")
    with_pass = simulate(trace, A100, replace(s, idle_pass=True), "default", POLICY)
    without = simulate(trace, A100, s, "default", POLICY)
    assert with_pass.idle_recarves == 0
    assert (with_pass.evictions, with_pass.waits) == (without.evictions, without.waits)
    two = simulate(trace, A100, replace(s, nodes=2, idle_pass=True), "default", POLICY)
    assert (two.idle_recarves, two.evictions, two.reconfigurations) == (1, 0, 1)
    assert two.waits["7g"] == [(900.0 - 100.0 + 120.0, False)]


def test_held_on_idle_counts_idle_gpus_of_a_busy_node_under_gpu_scope() -> None:
    """Without the idle pass, ``big`` (a 4g.40gb: MIG stays on) waits while GPU 1 of its node is idle:
    under ``"gpu"`` its re-carve would evict nobody, so heldOnIdleGpu counts it once the loop has held
    it past one interval plus one node's reconfiguration; under ``"node"`` the node is not idle (``a``
    runs). A whole GPU there is a mode change, which re-carves GPU 0 too and drains ``a``
    (mode.go:88-94, :119-129): the GPU it waits for is not one whose re-carve evicts nobody, so it is
    not counted."""
    assert A100 is not None
    trace = [pod("a", 0, 200_000, milli=100), pod("big", 100, 100_000, milli=FOUR_MILLI)]
    slow = PartitionPolicy(mode="dynamic", min_dwell_seconds=3600, stabilization_seconds=86_400)
    s = Settings(nodes=1, gpus_per_node=2, idle_pass=False)
    gpu = simulate(trace, A100, replace(s, drain_scope="gpu"), "default", slow)
    node = simulate(trace, A100, s, "default", slow)
    assert node.held_on_idle == 0
    assert gpu.held_on_idle == 1
    whole = [pod("a", 0, 200_000, milli=100), pod("big", 100, 100_000)]
    mode = simulate(whole, A100, replace(s, drain_scope="gpu"), "default", slow)
    assert mode.held_on_idle == 0


def test_cli_and_json_carry_the_drain_scope(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``migc simulate --drain-scope`` reaches the replay and its JSON; refused with ``--mode fill``."""
    rows = (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
        "creation_time,deletion_time,scheduled_time\n"
        "a,1,1,1,100,,LS,Running,0,10000,0\nbig,1,1,1,550,,LS,Running,100,600,100\n"
    )
    trace = tmp_path / "t.csv"
    trace.write_text(rows, encoding="utf-8")
    base = ["simulate", "--trace", str(trace), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"]
    args = [*base, "--gpus-per-node", "2", "--baseline", "naive", "-o", "json"]
    assert main([*args, "--drain-scope", "gpu"]) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["drainScope"] == "gpu" and doc["results"][0]["evictions"] == 0
    assert main(args) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["drainScope"] == "node" and doc["results"][0]["evictions"] == 1
    assert main([*args, "--drain-scope", "rack"]) == ExitCode.USAGE
    assert main([*base, "--mode", "fill", "--drain-scope", "gpu"]) == ExitCode.USAGE
    assert "--drain-scope: only for --mode replay" in capsys.readouterr().err


def _mixed_trace(n: int, seed: int) -> list[TracePod]:
    """``n`` seeded pods of every size (1g to two whole GPUs), arriving faster than they finish."""
    rng = random.Random(seed)
    sizes = [(100, 1), (250, 1), (400, 1), (550, 1), (1000, 1), (1000, 2)]
    out = []
    for k in range(n):
        milli, num = rng.choice(sizes)
        out.append(pod(f"p{k}", k * 120.0, rng.uniform(600, 20_000), milli=milli, num=num))
    return out


@pytest.mark.parametrize(("baseline", "idle"), [("naive", False), ("default", False), ("default", True)])
def test_gpu_scope_never_recarves_a_gpu_with_a_pod_nor_binds_on_a_cordoned_node(
    monkeypatch: pytest.MonkeyPatch, baseline: str, idle: bool
) -> None:
    """On a contended seeded trace with failed applies (re-targets, retries, a human's retry), every
    apply of the MIG manager finds the GPUs it changes without a pod (a busy GPU would make
    mig-parted's apply fail), every bind is on an Idle node (the cordon), and some pods run through
    an apply on their unchanged GPUs (the point of the scope)."""
    assert A100 is not None
    seen = {"applies": 0, "kept": 0, "binds": 0}
    reconfigure, bind = _Run._reconfigure, _Run._bind

    def checked_reconfigure(self: _Run, node: int, now: float) -> None:
        reconfigure(self, node, now)
        for gi in self.applying[node]:
            assert not any(self.fleet.busy[gi].values()), (node, gi, now)
        seen["applies"] += 1
        seen["kept"] += len(self.node_pods[node])

    def checked_bind(self: _Run, i: int, node: int, took: Sequence[tuple[int, int]], now: float) -> None:
        assert self.fleet.state[node] == IDLE, (i, node, now)
        seen["binds"] += 1
        bind(self, i, node, took, now)

    monkeypatch.setattr(_Run, "_reconfigure", checked_reconfigure)
    monkeypatch.setattr(_Run, "_bind", checked_bind)
    s = Settings(nodes=2, gpus_per_node=4, drain_scope="gpu", failure_rate=0.3, seed=3, idle_pass=idle)
    res = simulate(_mixed_trace(400, 1), A100, s, baseline, POLICY)
    assert res.reconfigurations > 0 and res.failures > 0
    assert seen["applies"] > 0 and seen["kept"] > 0 and seen["binds"] >= 400
