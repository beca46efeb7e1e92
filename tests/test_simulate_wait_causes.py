"""``waitCauses`` (``Result.wait_causes``, ``_Run.cause_check``): why pods waited, sampled once per
interval on the state between events, each pending pod's interval put down to the first cause that
holds of the fleet — a free instance (``fits``), GPUs whose re-carve evicts nobody (``idleGpus``),
empty GPUs only on nodes whose re-carve drains other pods (``busyNode``), room on a node out of Idle
(``cordoned``), free compute slices only spread over GPUs in use (``fragmented``), or not even those
(``noRoom``). One hand-made timeline per cause."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from nosync import settings

from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.exitcodes import ExitCode
from compiler.model import PartitionPolicy
from compiler.simulate.engine import IDLE, WAIT_CAUSES, Settings, _Run, simulate
from compiler.simulate.report import result_dict
from compiler.simulate.trace import TracePod

A100 = load_catalog().by_product("NVIDIA-A100-SXM4-80GB")
assert A100 is not None
POLICY = PartitionPolicy(mode="dynamic")  # interval 15m
SLOW = PartitionPolicy(mode="dynamic", min_dwell_seconds=3600, stabilization_seconds=86_400)
FOUR_MILLI = 550  # a 4g.40gb pod: its re-carve keeps MIG on
MILLIS = [100, 200, 400, FOUR_MILLI, 1000]  # one pod of each MIG size and a whole GPU


def pod(name: str, at: float, secs: float, milli: int = 1000, cpu: int = 0) -> TracePod:
    return TracePod(name, at, secs, 1, milli, 0, cpu)


def only(causes: dict[str, float], **want: float) -> bool:
    """The causes are ``want`` and every other cause is 0."""
    return causes == {c: want.get(c, 0.0) for c in WAIT_CAUSES}


def test_a_pod_held_on_an_idle_gpu_is_put_down_to_idle_gpus() -> None:
    """The 1g pod of tests/test_simulate_idle.py waits 87,660 s on a GPU where nothing runs (the
    scaleDownWindow keeps its 7g.80gb): every sampled interval of it is ``idleGpus`` (98 samples of
    900 s from 6,300 s to 93,600 s); with the idle pass it is served within one interval."""
    assert A100 is not None
    trace = [TracePod("big", 0, 3600, 1, 1000, 0), TracePod("small", 6000, 600, 1, 100, 0)]
    one = settings(nodes=1, gpus_per_node=1, idle_pass=False)
    held = simulate(trace, A100, one, "default", POLICY)
    assert held.waits["1g"] == [(87660.0, False)]
    assert held.wait_causes is not None and only(held.wait_causes["1g"], idleGpus=88_200.0)
    served = simulate(trace, A100, replace(one, idle_pass=True), "default", POLICY)
    assert served.wait_causes is not None and only(served.wait_causes["1g"], idleGpus=900.0)


def test_empty_gpus_on_a_busy_node_are_busy_node_under_node_scope_and_idle_gpus_under_gpu_scope() -> None:
    """``big`` (4g.40gb) waits while GPU 1 of its node is empty and ``a`` runs on GPU 0. The device
    plugin's drain (``"node"``) would evict ``a``: ``busyNode``, until the node is cordoned for the
    re-carve (``cordoned``, 2 samples). Under ``"gpu"`` GPU 1's re-carve evicts nobody: ``idleGpus``."""
    assert A100 is not None
    trace = [pod("a", 0, 200_000, milli=100), pod("big", 100, 100_000, milli=FOUR_MILLI)]
    s = Settings(nodes=1, gpus_per_node=2, idle_pass=False)
    node = simulate(trace, A100, s, "default", SLOW)
    assert node.waits["4g"] == [(89060.0, False)]
    assert node.wait_causes is not None and only(node.wait_causes["4g"], busyNode=87_300.0, cordoned=1800.0)
    gpu = simulate(trace, A100, replace(s, drain_scope="gpu"), "default", SLOW)
    assert gpu.wait_causes is not None and only(gpu.wait_causes["4g"], idleGpus=87_300.0)


def test_a_pod_waiting_for_the_only_gpu_is_no_room() -> None:
    """Two whole-GPU pods, one GPU: the second waits for the first to end; nothing a re-carve could
    do."""
    assert A100 is not None
    trace = [pod("a", 0, 10_000), pod("b", 10, 5000)]
    res = simulate(trace, A100, settings(nodes=1, gpus_per_node=1), "naive", POLICY)
    assert res.waits["7g"] == [(60.0, False), (10_050.0, False)]
    assert res.wait_causes is not None and only(res.wait_causes["7g"], noRoom=9900.0)


def test_slices_free_only_on_gpus_in_use_are_fragmented() -> None:
    """Two 3g.40gb pods land on the two GPUs of the node's balanced layout (one 3g.40gb each): 8 of
    its 14 compute slices are free, but on GPUs in use, so a whole-GPU pod waits ``fragmented`` while
    they run (55 samples to 50,000 s), then ``idleGpus`` on the idle node until the 24 h
    stabilizationWindow lets the loop re-carve it. naive drains the node for it at once: its two
    samples find the room on the draining node (``cordoned``)."""
    assert A100 is not None
    trace = [pod("s1", 0, 50_000, milli=400), pod("s2", 1, 50_000, milli=400), pod("w", 100, 5000)]
    s = settings(nodes=1, gpus_per_node=2, idle_pass=False)
    loop = simulate(trace, A100, s, "default", SLOW)
    assert loop.waits["3g"] == [(0.0, False), (0.0, False)]
    assert loop.wait_causes is not None
    assert only(loop.wait_causes["7g"], fragmented=49_500.0, idleGpus=37_800.0)
    naive = simulate(trace, A100, s, "naive", SLOW)
    assert naive.wait_causes is not None and only(naive.wait_causes["7g"], cordoned=1800.0)


def test_a_pod_waiting_for_a_node_being_re_carved_is_cordoned() -> None:
    """naive re-carves the balanced GPU for a whole-GPU pod at once; the re-carve takes 2,000 s, so
    the samples at 900 s and 1,800 s find the room only on a node out of Idle."""
    assert A100 is not None
    s = settings(nodes=1, gpus_per_node=1, reconfigure_seconds=2000)
    res = simulate([pod("w", 0, 5000)], A100, s, "naive", POLICY)
    assert res.waits["7g"] == [(2000.0, False)]
    assert res.wait_causes is not None and only(res.wait_causes["7g"], cordoned=1800.0)


def test_a_pod_waiting_for_cpu_beside_a_free_gpu_is_fits() -> None:
    """A node with 10 CPUs and two whole GPUs: the second pod's GPU is free, its 8 CPUs are not."""
    assert A100 is not None
    trace = [pod("a", 0, 10_000, cpu=8000), pod("b", 10, 5000, cpu=8000)]
    s = settings(nodes=1, gpus_per_node=2, node_cpu_milli=10_000)
    res = simulate(trace, A100, s, "naive", POLICY)
    assert res.waits["7g"][1] == (10_110.0, False)
    assert res.wait_causes is not None and only(res.wait_causes["7g"], fits=9900.0)


def test_the_causes_add_up_to_the_waits_within_the_sampling() -> None:
    """On a random trace (3 nodes, 2 GPUs each, every size), per size class the sampled pod-seconds
    are the waits to within one interval per pod wait (each sample stands for one interval), for
    naive and the loop; the policies that never re-carve have none (None), and the JSON's ``all``
    row sums the classes, in pod-hours."""
    assert A100 is not None
    rng = random.Random(7)
    drawn = (
        pod(f"p{i}", rng.uniform(0, 200_000), rng.uniform(600, 40_000), rng.choice(MILLIS))
        for i in range(150)
    )
    trace = sorted(drawn, key=lambda p: (p.arrival, p.name))
    s = settings(nodes=3, gpus_per_node=2)
    for baseline in ("naive", "default"):
        res = simulate(trace, A100, s, baseline, POLICY)
        assert res.wait_causes is not None and res.wait_causes
        long = {k for k, vs in res.waits.items() if any(w > 2 * POLICY.interval_seconds for w, _ in vs)}
        assert long and long <= set(res.wait_causes)
        for size, causes in res.wait_causes.items():
            waits = [w for w, _ in res.waits[size]]
            waited = sum(1 for w in waits if w > 0)
            assert abs(sum(causes.values()) - sum(waits)) <= waited * POLICY.interval_seconds
        row = json.loads(json.dumps(result_dict(res)))["waitCauses"]
        for c in WAIT_CAUSES:
            total = sum(res.wait_causes[k][c] for k in res.wait_causes) / 3600
            assert abs(row["all"][c] - total) < 0.05 + 0.05 * len(res.wait_causes)
    static = simulate(trace, A100, s, "static-balanced", POLICY)
    assert static.wait_causes is None and result_dict(static)["waitCauses"] is None


def _node(run: Any, n: int, pod: Any) -> tuple[bool, bool, bool, bool]:
    """Node ``n`` for ``pod``, GPU by GPU: (a free instance, GPUs a re-carve evicts nobody on, empty
    GPUs, compute slices free) — each as many as the pod asks."""
    assert A100 is not None
    f, s = run.fleet, run.s
    full = next(iter(f.whole))
    whole, need = pod.profile == full, f.slices[pod.profile] * pod.count
    gs = list(f.gpus(n))
    empty = [g for g in gs if not any(f.busy[g].values())]
    free = sum(max(0, f.layout[g].get(pod.profile, 0) - f.busy[g].get(pod.profile, 0)) for g in gs)
    free_whole = sum(1 for g in empty if f.layout[g] == {full: 1})
    slices = sum(A100.compute_slices - sum(f.slices[q] * c for q, c in f.busy[g].items()) for g in gs)
    if not run.node_pods[n]:
        idle = s.gpus_per_node
    elif s.drain_scope == "node":
        idle = 0
    else:  # idle GPUs that need no MIG mode change for this pod
        idle = sum(1 for g in empty if (f.layout[g] == {full: 1}) == whole)
    k = pod.count
    return (free_whole if whole else free) >= k, idle >= k, len(empty) >= k, slices >= need


def _oracle(run: Any) -> dict[str, dict[str, float]]:
    """The causes of one sample worked out pod by pod and GPU by GPU from docs/simulate.md's table,
    apart from ``_Run.cause_check``'s per-node summaries."""
    f, s = run.fleet, run.s
    out: dict[str, dict[str, float]] = {}
    for i in run.queued_at:
        p = run.pods[i]
        up = [_node(run, n, p) for n in range(s.nodes) if f.state[n] == IDLE]
        down = [_node(run, n, p) for n in range(s.nodes) if f.state[n] != IDLE]
        if any(x[0] for x in up):
            cause = "fits"
        elif any(x[1] for x in up):
            cause = "idleGpus"
        elif any(x[2] for x in up):
            cause = "busyNode"
        elif any(x[0] or x[2] or x[3] for x in down):
            cause = "cordoned"
        elif any(x[3] for x in up):
            cause = "fragmented"
        else:
            cause = "noRoom"
        row = out.setdefault(p.size, dict.fromkeys(WAIT_CAUSES, 0.0))
        row[cause] += run.interval
    return out


def _mixed_trace(seed: int) -> list[TracePod]:
    """120 pods over ~40 h: a quarter asking 2–4 whole GPUs, the rest one GPU or a share of one."""
    rng = random.Random(seed)
    pods = []
    for i in range(120):
        gpus, milli = (rng.choice([2, 3, 4]), 1000) if rng.random() < 0.25 else (1, rng.choice(MILLIS))
        at, secs = rng.uniform(0, 150_000), rng.uniform(600, 30_000)
        cpu = rng.choice([1000, 12_000])
        pods.append(TracePod(f"p{i}", at, secs, gpus, milli, rng.choice([0, 0, 1]), cpu))
    return sorted(pods, key=lambda p: (p.arrival, p.name))


@pytest.mark.parametrize("scope", ["node", "gpu"])
def test_every_sample_is_put_down_as_the_docs_say_and_no_decision_moves(
    scope: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On random traces with multi-GPU pods, failed applies and CPU modelled, every sample of
    ``cause_check`` equals the pod-by-pod reading of the docs (``_oracle``), every cause occurs, and
    with the sampling switched off every other field of the result is the same."""
    assert A100 is not None
    seen: set[str] = set()
    real = _Run.cause_check

    def checked(run: Any) -> None:
        if run.causes is None or not run.queued_at:
            real(run)
            return
        before = {k: dict(v) for k, v in run.causes.items()}
        real(run)
        want = _oracle(run)
        for size in set(want) | set(run.causes):
            for c in WAIT_CAUSES:
                got = run.causes.get(size, {}).get(c, 0.0) - before.get(size, {}).get(c, 0.0)
                assert got == want.get(size, {}).get(c, 0.0), (size, c)
                if got:
                    seen.add(c)

    for seed in (1, 2):
        s = Settings(nodes=3, gpus_per_node=4, drain_scope=scope, failure_rate=0.3, seed=seed)
        for cpu in (None, 16_000):
            trace = _mixed_trace(seed)
            for baseline in ("naive", "default"):
                monkeypatch.setattr(_Run, "cause_check", checked)
                sampled = result_dict(simulate(trace, A100, replace(s, node_cpu_milli=cpu), baseline, POLICY))
                monkeypatch.setattr(_Run, "cause_check", lambda run: None)
                bare = result_dict(simulate(trace, A100, replace(s, node_cpu_milli=cpu), baseline, POLICY))
                assert sampled.pop("waitCauses")
                assert bare.pop("waitCauses") == {"all": dict.fromkeys(WAIT_CAUSES, 0.0)}
                assert sampled == bare
    assert seen == set(WAIT_CAUSES)


def test_the_text_output_says_why_each_re_carving_policy_waited(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``migc simulate`` (text): one line per policy with the counter, its ``all`` row in pod-hours, as
    in the JSON; none for the policies without it."""
    path = tmp_path / "t.csv"
    path.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\nbig,1,1,1,1000,,BE,Running,0,3600,0\nsmall,1,1,1,100,,BE,Running,6000,6600,6000\n"
    )
    base = ["simulate", "--trace", str(path), "--gpu-product", "NVIDIA-A100-SXM4-80GB", "--nodes", "1"]
    base += ["--gpus-per-node", "1", "--no-idle-pass", "--baseline", "all"]
    assert main([*base, "-o", "json"]) == ExitCode.OK
    rows = {r["baseline"]: r["waitCauses"] for r in json.loads(capsys.readouterr().out)["results"]}
    assert main(base) == ExitCode.OK
    text = capsys.readouterr().out
    lines = [line for line in text.splitlines() if line.startswith("  ") and "; noRoom " in line]
    want = [
        f"  {name}: " + "; ".join(f"{c} {rows[name]['all'][c]}" for c in WAIT_CAUSES)
        for name in ("naive", "default")
    ]
    assert lines == want and rows["default"]["all"]["idleGpus"] > 24
    assert "why pods waited" in text
    assert all(v is None for k, v in rows.items() if k not in ("naive", "default"))
