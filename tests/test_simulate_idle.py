"""heldOnIdleGpu counts the pods the default loop holds on an idle GPU they fit after a re-carve for
longer than one interval plus the reconfiguration time (issue 22 item 3); with the idle pass
(``Settings.idle_pass``, on by default since bench/RESULTS.md Round 21; ``--no-idle-pass`` turns it
off) the loop holds none where no limit the user sets holds the node; since the pool's
``idleSurge`` (default 0; bench/RESULTS.md Round 23) the pass also runs while another node drains,
and its node goes out beside the drain."""

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
from compiler.simulate.trace import TracePod

A100 = load_catalog().by_product("NVIDIA-A100-SXM4-80GB")
assert A100 is not None
POLICY = PartitionPolicy(mode="dynamic")  # interval 15m, scaleDownWindow 24h, minDwell 1h
ONE = settings(nodes=1, gpus_per_node=1, idle_pass=True)  # 60 s per changed GPU
# a whole-GPU pod runs for an hour, then a 1g pod arrives on the idle GPU, still carved 7g.80gb
TRACE = [TracePod("big", 0, 3600, 1, 1000, 0), TracePod("small", 6000, 600, 1, 100, 0)]


def test_a_remembered_peak_kept_as_much_as_a_waiting_pod_holds_the_idle_gpu() -> None:
    """The shipped sizing (``Settings.surplus="kept"``, the default): the scaleDownWindow keeps the
    7g.80gb the whole-GPU pod used for 24 h as if a pod asked for it, and the cover finds that
    re-carving it loses more kept capacity than the 1g pod gains: the 1g pod waits 87,660 s on a GPU
    where nothing runs (the issue's 88,260 s), counted once."""
    assert A100 is not None
    res = simulate(TRACE, A100, replace(ONE, idle_pass=False, surplus="kept"), "default", POLICY)
    assert res.waits == {"7g": [(1860.0, False)], "1g": [(87660.0, False)]}
    assert res.held_on_idle == 1 and res.idle_recarves == 0
    # the disruption rule is not what holds it: with the outage charged on the busy share (0 here)
    # the cover still keeps the 7g.80gb for the window's peak, and the rule is never asked
    s = replace(ONE, idle_pass=False, outage="busy", surplus="kept")
    busy = simulate(TRACE, A100, s, "default", POLICY)
    assert busy.waits == res.waits and busy.held_on_idle == 1
    assert busy.blocked.get("disruption", 0) == 0


def test_a_remembered_peak_comes_after_the_pod_waiting_now() -> None:
    """``Settings.surplus="last"`` (compiler/recommend/history.py ``capped``, not the default:
    bench/RESULTS.md Round 9):
    the remembered 7g.80gb is served only with the slices left after the 1g pod that waits now
    (7 − 1 = 6 < 7: none), so the cover re-carves the idle GPU without the idle pass. The 1g pod,
    first seen at 6,300 s, runs once the stabilizationWindow has seen it twice (7,200 s) and the GPU
    is re-carved (60 s): 1,260 s, within the first look + one interval + the reconfiguration."""
    assert A100 is not None
    s = replace(ONE, idle_pass=False, surplus="last")
    res = simulate(TRACE, A100, s, "default", POLICY)
    assert res.waits == {"7g": [(1860.0, False)], "1g": [(1260.0, False)]}
    assert res.held_on_idle == 0 and res.evictions == 0
    first_look = 6300 - 6000
    limit = first_look + POLICY.interval_seconds + s.reconfigure_seconds * s.gpus_per_node
    assert dict(res.waits)["1g"][0][0] <= limit


@pytest.mark.parametrize("surplus", ["last", "busy"])
def test_smaller_pods_waiting_on_an_idle_node_are_not_held_by_a_remembered_7g_peak(surplus: str) -> None:
    """Round 8's traced case on a hand-made trace: two 8-GPU nodes; eight whole-GPU pods run on
    each for an hour (16 × 7g.80gb, the peak the scaleDownWindow remembers for 24 h); then node 0
    stays busy with eight long whole-GPU pods while 4g, 3g, 2g and 1g pods arrive — no 7g pod waits,
    node 1 is idle. Kept as much as the waiting pods, the remembered 16 × 7g holds node 1's 8 × 7g
    and the pods wait for hours; served last, the surplus finds no room (8 × 7 slices busy + the
    waiting pods' slices leave less than the 8 kept 7g), node 1 is re-carved and every small pod is
    served within the first look + one interval + the node's reconfiguration. ``"busy"`` keeps first
    only what the surplus holds on busy nodes (none here: node 0's 8 × 7g run pods), the same."""
    assert A100 is not None
    trace = [TracePod(f"old{k}", 0, 3600, 1, 1000, 0) for k in range(16)]
    trace += [TracePod(f"long{k}", 3700, 200_000, 1, 1000, 0) for k in range(8)]
    sizes = [500, 500, 400, 400, 250, 250, 250, 100, 100, 100]  # gpu_milli: 4g, 3g, 2g, 1g
    trace += [TracePod(f"s{k}", 6000, 3000, 1, m, 0) for k, m in enumerate(sizes)]
    s = Settings(nodes=2, gpus_per_node=8, surplus=surplus, idle_pass=False)  # the sizing alone
    kept = simulate(trace, A100, replace(s, surplus="kept"), "default", POLICY)
    last = simulate(trace, A100, s, "default", POLICY)
    small = ("4g", "3g", "2g", "1g")
    assert kept.held_on_idle and kept.held_on_idle > 0
    assert max(w for p in small for w, _ in kept.waits.get(p, [])) > 20_000
    limit = (6300 - 6000) + POLICY.interval_seconds + s.reconfigure_seconds * s.gpus_per_node
    waits = [(w, c) for p in small for w, c in last.waits.get(p, [])]
    assert len(waits) == len(sizes) and not any(c for _, c in waits)
    assert max(w for w, _ in waits) <= limit
    assert last.held_on_idle == 0


def test_an_idle_gpu_is_recarved_for_the_pod_that_waits() -> None:
    """With the idle pass the evaluation at 6,300 s re-carves the idle GPU (60 s): 360 s. The
    whole-GPU pod is served the same way at the first evaluation (900 s + 60 s), not after the
    stabilizationWindow's second sample."""
    assert A100 is not None
    res = simulate(TRACE, A100, ONE, "default", POLICY)
    assert res.waits == {"7g": [(960.0, False)], "1g": [(360.0, False)]}
    assert res.held_on_idle == 0 and res.idle_recarves == 2 and res.reconfigurations == 2
    assert res.evictions == 0
    limit = POLICY.interval_seconds + ONE.reconfigure_seconds * ONE.gpus_per_node
    assert all(w <= limit for ws in res.waits.values() for w, _ in ws)


def test_held_on_idle_counts_a_pod_a_limit_holds() -> None:
    """With dailyChangeBudget 1 (a limit the user sets, kept by the idle pass) the day's one
    re-carve is spent on the whole-GPU pod: the 1g pod waits on the idle GPU until the budget's day
    has passed, and the counter says so."""
    assert A100 is not None
    res = simulate(TRACE, A100, ONE, "default", replace(POLICY, daily_change_budget=1))
    assert res.held_on_idle == 1
    assert dict(res.waits)["1g"][0][0] > 80_000


def test_a_busy_node_is_not_an_idle_gpu() -> None:
    """A node with a pod running is drained whole by the controller: its free GPUs are not idle
    ones, and the idle pass leaves it to the disruption rule (no eviction from it)."""
    assert A100 is not None
    trace = [TracePod("long", 0, 50_000, 1, 100, 0), TracePod("whole", 1000, 600, 1, 1000, 0)]
    res = simulate(trace, A100, settings(nodes=1, gpus_per_node=2, idle_pass=True), "default", POLICY)
    assert res.idle_recarves == 0 and res.held_on_idle == 0


def _trace(tmp_path: Path, *rows: str) -> Path:
    """An openb pod list of ``rows`` (after the header)."""
    path = tmp_path / "t.csv"
    header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    path.write_text(header + "scheduled_time\n" + "".join(r + "\n" for r in rows))
    return path


def _simulate(path: Path, nodes: int, baseline: str) -> list[str]:
    """``migc simulate`` of ``path`` on ``nodes`` one-GPU A100 nodes under ``baseline``."""
    base = ["simulate", "--trace", str(path), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", str(nodes)]
    return [*base, "--gpus-per-node", "1", "--baseline", baseline]


def test_cli_idle_pass_flag_reaches_the_loop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _trace(
        tmp_path, "big,1,1,1,1000,,BE,Running,0,3600,0", "small,1,1,1,100,,BE,Running,6000,6600,6000"
    )
    base = [*_simulate(path, 1, "default"), "-o", "json"]
    # on by default with --decision cover (bench/RESULTS.md Round 21); --no-idle-pass turns it off
    cases: tuple[tuple[list[str], bool, int, int], ...] = (
        ([], True, 0, 2),
        (["--idle-pass"], True, 0, 2),
        (["--no-idle-pass"], False, 1, 0),
    )
    for flag, on, held, recarves in cases:
        assert main([*base, *flag]) == ExitCode.OK
        doc = json.loads(capsys.readouterr().out)
        row = doc["results"][0]
        assert (doc["idlePass"], row["heldOnIdleGpu"], row["idleRecarves"]) == (on, held, recarves)
    # migc recommend's decision has no idle pass: off there, and reported so
    assert main([*base, "--decision", "recommend"]) == ExitCode.OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["idlePass"] is False and doc["results"][0]["idleRecarves"] == 0


def test_the_busy_outage_recarves_an_idle_node_for_a_waiting_1g_pod() -> None:
    """Issue 22 items 2 and 3, with the outage charged on the busy share of the node
    (``Settings.outage="busy"``, compiler/recommend/disruption.py ``outage``): an idle node costs
    nothing to re-carve.

    Eight whole-GPU pods run on one 8-GPU node for an hour (it is carved 8 × 7g.80gb), then a 1g
    pod arrives at 6,000 s, sized from the demand of the moment (``--demand now``: the
    scaleDownWindow, which holds the issue's one-node trace above, is not at stake) and without the
    idle pass. The first evaluation that sees it (6,300 s) starts the stabilizationWindow, the next
    (7,200 s) re-carves the idle node: 8 GPUs × 60 s later the pod runs, 1,680 s after it arrived,
    within 300 s + one interval + the node's reconfiguration. Charged on every GPU of the node (the
    default), the outage is 8 × 8 × 60 = 3,840 GPU-s, which the 1g pod's f × W = W / 7 only beats
    after W > 32,256 s: it waits 33,180 s, counted in heldOnIdleGpu."""
    assert A100 is not None
    trace = [TracePod(f"big{k}", 0, 3600, 1, 1000, 0) for k in range(8)]
    trace.append(TracePod("small", 6000, 600, 1, 100, 0))
    s = settings(nodes=1, gpus_per_node=8, demand="now", outage="busy", idle_pass=False)
    res = simulate(trace, A100, s, "default", POLICY)
    ((wait, censored),) = res.waits["1g"]
    first_look = 6300 - 6000
    assert not censored
    assert wait <= first_look + POLICY.interval_seconds + s.reconfigure_seconds * s.gpus_per_node
    assert res.held_on_idle == 0 and res.evictions == 0
    assert res.blocked.get("disruption", 0) == 0
    node = simulate(trace, A100, replace(s, outage="node"), "default", POLICY)
    assert node.waits["1g"] == [(33180.0, False)] and node.held_on_idle == 1
    assert node.blocked["disruption"] > 30


def test_an_unknown_surplus_model_is_refused() -> None:
    assert A100 is not None
    with pytest.raises(ValueError, match="surplus 'keep'"):
        simulate(TRACE, A100, replace(ONE, idle_pass=False, surplus="keep"), "default", POLICY)


def test_the_idle_pass_is_on_by_default_and_reported_only_for_the_cover() -> None:
    """Round 21: ``Settings`` has the idle pass on (what bench.matrix's ``default`` row runs); the
    replay's JSON says it is on only for ``decision="cover"``: migc recommend's decision, which
    ``decision="recommend"`` runs, has no idle pass."""
    from compiler.simulate.report import Replay

    assert Settings(nodes=1).idle_pass is True
    for decision, shown in (("cover", True), ("recommend", False)):
        s = Settings(nodes=1, decision=decision)
        run = Replay("t.csv", 0, 0, 0, "NVIDIA-A100-SXM4-80GB", s, None, None, ())
        assert run.to_dict()["idlePass"] is shown
    off = Replay("t.csv", 0, 0, 0, "x", replace(s, decision="cover", idle_pass=False), None, None, ())
    assert off.to_dict()["idlePass"] is False


# a 3g pod ``c`` on node 0 until 3,000 s, a long 3g pod ``a`` on node 1 from 500, a long whole-GPU pod
# ``w0`` at 10 (node 2, idle, re-carved 7g at the first evaluation), ``w1`` at 1,000 and ``w2`` at 3,100
DRAINING = [
    TracePod("c", 0, 3000, 1, 400, 0),
    TracePod("a", 500, 100_000, 1, 400, 0),
    TracePod("w0", 10, 100_000, 1, 1000, 0),
    TracePod("w1", 1000, 100_000, 1, 1000, 0),
    TracePod("w2", 3100, 100_000, 1, 1000, 0),
]


@pytest.mark.parametrize("grace", [1800.0, 7200.0])
def test_an_idle_node_is_recarved_beside_a_node_that_drains(grace: float) -> None:
    """3 nodes x 1 balanced GPU (:data:`DRAINING`). At 2,700 s the disruption rule drains node 1
    (``a``'s, the cheaper: it has run less) for ``w1``, on its grace. ``c`` ends at 3,000: node 0 is
    idle while node 1 drains. With ``idleSurge`` 1 (the pool's, default 0) the idle pass at 3,600 re-carves
    node 0 beside the drain (the rollout gate does not hold it, the admission lets it out beyond
    maxUnavailable 1): ``w1``, first in the queue, runs at 3,660 (2,660 s), ``w2`` gets node 1 when
    it is back (2,700 + grace + 60), one pod evicted, and nobody is held on the idle GPU. With
    ``idleSurge`` 0 node 0 waits for node 1: ``w1`` gets node 1, the evicted ``a`` lands on the
    balanced node 0, which then has to be drained in its turn for ``w2`` — two evictions, and with
    a 2 h grace both waiting pods are counted held on node 0's idle GPU."""
    assert A100 is not None
    s = settings(nodes=3, gpus_per_node=1, drain_grace_seconds=grace, idle_surge=1)
    surge = simulate(DRAINING, A100, s, "default", POLICY)
    assert s.idle_pass
    back = 2700 + grace + 60
    assert surge.waits["7g"] == [(950.0, False), (2660.0, False), (back - 3100, False)]
    assert surge.held_on_idle == 0 and surge.evictions == 1
    alone = simulate(DRAINING, A100, replace(s, idle_surge=0), "default", POLICY)
    assert alone.evictions == 2
    assert dict(alone.waits)["7g"][1] == (back - 1000, False)  # w1 waits for node 1
    assert alone.held_on_idle == (2 if grace > 1800 else 0)
    assert sum(w for w, _ in alone.waits["7g"]) > sum(w for w, _ in surge.waits["7g"])


def test_beside_a_rollout_the_idle_pass_changes_no_more_nodes_than_the_admission_starts() -> None:
    """4 nodes x 1 balanced GPU: :data:`DRAINING` with a second short 3g pod ``d`` and a fourth
    whole-GPU pod ``w3`` at 3,100. At 3,600 node 2 drains (for ``w1``, 2 h grace) and nodes 0 and 1
    are idle, both wanted. maxUnavailable 1 + idleSurge 1 leaves room for one beside the drain: the
    pass re-carves node 0 then, node 1 at the next evaluation (4,500) — a node changed but left
    waiting for a slot would stay schedulable on its old layout, and a pod bound to it meanwhile
    would be drained. With idleSurge 2 both go at 3,600. With no node in flight the pass is not
    capped: three idle nodes wanted at once are changed in one revision and admitted a slot at a
    time (Round 22's pass)."""
    assert A100 is not None
    trace = [*DRAINING[:1], TracePod("d", 0, 3000, 1, 400, 0), *DRAINING[1:]]
    trace.append(TracePod("w3", 3100, 100_000, 1, 1000, 0))
    s = settings(nodes=4, gpus_per_node=1, drain_grace_seconds=7200.0, idle_surge=1)
    one = simulate(trace, A100, s, "default", POLICY)
    two = simulate(trace, A100, replace(s, idle_surge=2), "default", POLICY)
    assert one.idle_recarves == 4 and two.idle_recarves == 3  # 900, 3,600 (and 4,500), 101,700
    assert one.waits["7g"] == [(950.0, False), (2660.0, False), (1460.0, False), (6860.0, False)]
    assert two.waits["7g"] == [(950.0, False), (2660.0, False), (560.0, False), (6860.0, False)]
    assert one.evictions == two.evictions == 1
    idle = [TracePod(f"w{k}", 0, 10_000, 1, 1000, 0) for k in range(3)]
    res = simulate(idle, A100, settings(nodes=3, gpus_per_node=1), "default", POLICY)
    assert res.idle_recarves == 1 and res.revisions == 1 and res.evictions == 0
    assert res.waits == {"7g": [(960.0, False), (1020.0, False), (1080.0, False)]}


def test_the_idle_pass_does_not_carve_a_second_node_for_a_pod_a_drain_is_for() -> None:
    """3 nodes x 2 balanced GPUs: two 3g pods until 2,000 s (``c1``, ``c2``), two long 3g pods from
    500 (``a1``, ``a2``), a 2-GPU pod ``w0`` at 10 (the idle pass re-carves the idle node for it at
    the first evaluation: 1,010 s) and another, ``w1``, at 1,000, which the disruption rule drains a
    node for. When the ``c`` pods end, the idle pass finds an idle node beside that drain, but
    ``w1`` is what the draining node's target is carved for: no second node is re-carved for it
    (two re-carves in all; before the fix, four, and the 3g pods evicted for a layout nobody used)."""
    assert A100 is not None
    trace = [
        TracePod("c1", 0, 2000, 1, 400, 0),
        TracePod("c2", 0, 2000, 1, 400, 0),
        TracePod("a1", 500, 100_000, 1, 400, 0),
        TracePod("a2", 500, 100_000, 1, 400, 0),
        TracePod("w0", 10, 100_000, 2, 1000, 0),
        TracePod("w1", 1000, 100_000, 2, 1000, 0),
    ]
    res = simulate(trace, A100, settings(nodes=3, gpus_per_node=2), "default", POLICY)
    assert res.reconfigurations == 2 and res.idle_recarves == 1
    assert res.waits == {"3g": [(0.0, False)] * 4, "2x7g": [(1010.0, False), (2720.0, False)]}


def test_cli_idle_surge_reaches_the_admission(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--idle-surge N`` (default 0) is the replay's admission and is reported (``idleSurge``, the
    text header): two idle 1-GPU nodes, two whole-GPU pods at 0 under naive; with 0 the second node
    waits for the first (p95 120 s), with 1 both go at once (60 s); -1 is a usage error."""
    path = _trace(tmp_path, "a,1,1,1,1000,,BE,Running,0,3600,0", "b,1,1,1,1000,,BE,Running,0,3600,0")
    base = [*_simulate(path, 2, "naive"), "--configmap-sync-delay", "0"]
    for flag, surge, p95 in (([], 0, 120.0), (["--idle-surge", "1"], 1, 60.0)):
        assert main([*base, *flag, "-o", "json"]) == ExitCode.OK
        doc = json.loads(capsys.readouterr().out)
        assert doc["idleSurge"] == surge and doc["results"][0]["waitSeconds"]["all"]["p95"] == p95
        assert main([*base, *flag]) == ExitCode.OK
        assert f"maxUnavailable 1 (+{surge} idle)" in capsys.readouterr().out
    assert main([*base, "--idle-surge", "-1"]) == ExitCode.USAGE
