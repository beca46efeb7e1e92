"""The disruption rule (compiler/recommend/disruption.py), shared by recommend and simulate."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from statusfleet import pod

from compiler.catalog import load_catalog
from compiler.model import CurrentState
from compiler.observe import read_snapshots
from compiler.pipeline import load_and_validate
from compiler.recommend import disruption as dis
from compiler.recommend.engine import recommend
from compiler.recommend.history import sample
from compiler.recommend.report import evidence_markdown
from compiler.recommend.state import State
from compiler.simulate import engine
from controller.settings import Settings


def test_grace_constant_is_the_controllers_default() -> None:
    # the compiler may not import the controller (import-linter): the constant is repeated, checked here
    assert Settings().drain.grace_timeout == dis.DRAIN_GRACE_SECONDS
    assert engine.DRAIN_GRACE_SECONDS == dis.DRAIN_GRACE_SECONDS  # simulate uses the same one
    assert engine.Settings(nodes=1).reconfigure_seconds == dis.RECONFIGURE_SECONDS


def test_expected_loss_by_hand() -> None:
    # E = 600 s, G = 1800 s: 600² / 2400 = 150 s; E = 0: nothing to lose
    assert dis.expected_loss(600, 1800) == pytest.approx(150.0)
    assert dis.expected_loss(0, 1800) == 0.0
    # a pod that has run 30 days loses almost all of it: 2592000² / 2593800
    assert dis.expected_loss(2_592_000, 1800) == pytest.approx(2_592_000 * 2_592_000 / 2_593_800)


def test_node_cost_and_outage_by_hand() -> None:
    # one 1g pod (1/7) for 600 s and one whole-GPU pod for 1800 s; 8 GPUs, 2 changed, 60 s each
    outage = dis.outage([1 / 7, 1.0], 8, 2, 60.0)
    assert outage == 8 * 120
    cost = dis.node_cost([(1 / 7, 600.0), (1.0, 1800.0)], 1800.0, outage)
    assert cost == pytest.approx(150 / 7 + 900 + 960)
    # charged on the busy share instead, the outage stops their 8/7 GPUs for 120 s
    assert dis.outage([1 / 7, 1.0], 8, 2, 60.0, charge="busy") == pytest.approx(8 / 7 * 120)


def test_the_busy_outage_of_an_idle_node_is_zero() -> None:
    """Issue 22 item 2 (charge "busy"): carving idle GPUs evicts nothing and stops no work, so an
    idle node's re-carve costs nothing whatever its GPUs, the GPUs changed or the operand pause;
    the default charge ("node") is every GPU of the node."""
    assert dis.outage([], 8, 4, 60.0, charge="busy") == 0.0
    assert dis.outage([], 8, 8, 90.0, drain_seconds=300.0, charge="busy") == 0.0
    assert dis.outage([], 8, 4, 60.0) == 8 * 240
    assert dis.busy_share([]) == 0.0


def test_the_busy_outage_is_the_busy_share_times_pause_plus_reconfiguration() -> None:
    # a 4-GPU pod and three 1g pods hold 4 3/7 GPUs; 300 s operand pause + 3 changed GPUs × 90 s
    held = [4.0, 1 / 7, 1 / 7, 1 / 7]
    assert dis.busy_share(held) == pytest.approx(4 + 3 / 7)
    got = dis.outage(held, 8, 3, 90.0, drain_seconds=300.0, charge="busy")
    assert got == pytest.approx((4 + 3 / 7) * (300 + 270))
    # a node whose 8 GPUs are all busy is charged the same either way
    assert dis.outage([1.0] * 8, 8, 4, 60.0, charge="busy") == dis.outage([1.0] * 8, 8, 4, 60.0)
    # the arithmetic: a waiting 1g pod (f = 1/7) outweighs an idle node's busy outage at
    # once, where the node charge (8 GPUs × 240 s = 1,920 GPU-s) asks it to wait 13,440 s
    assert dis.worth(1 / 7 * 1.0, dis.outage([], 8, 4, 60.0, charge="busy"), 20)
    assert not dis.worth(1 / 7 * 13_440.0, dis.outage([], 8, 4, 60.0), 0)
    with pytest.raises(ValueError, match="outage charge 'gpu'"):
        dis.outage(held, 8, 3, 90.0, charge="gpu")


def test_newly_served_takes_the_queue_after_those_served_already() -> None:
    waits = [900.0, 600.0, 300.0]  # 3 pending instances, longest waiting first
    # demand 5 = 2 running + 3 pending; capacity 3 -> 4: the first pending one was served already,
    # the change serves the second
    assert dis.newly_served(waits, 5, 3, 4) == 600.0
    assert dis.newly_served(waits, 5, 2, 5) == 900.0 + 600.0 + 300.0
    assert dis.newly_served(waits, 5, 5, 7) == 0.0  # nothing more to serve
    assert dis.newly_served(waits, 5, 4, 3) == 0.0  # capacity lost


def test_worth_is_strictly_above_the_threshold() -> None:
    assert dis.worth(121.0, 100.0, 20)
    assert not dis.worth(120.0, 100.0, 20)
    assert not dis.worth(0.0, 0.0, 20)


# ---- the disruption gate in migc recommend, numbers by hand ------------------------------------------

NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
CATALOG = load_catalog()
POLICY = """apiVersion: migc.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  clusters:
    - name: east
      nodePools:
        - {name: a100, gpuProduct: NVIDIA-A100-SXM4-80GB, gpusPerNode: 1, nodes: {names: [node-a]}}
---
apiVersion: migc.dev/v1alpha1
kind: Tenant
metadata: {name: search}
spec: {namespaces: [search]}
---
apiVersion: migc.dev/v1alpha1
kind: Workload
metadata: {name: bert}
spec: {tenant: search, replicas: 1, need: {profile: 1g.10gb}}
---
apiVersion: migc.dev/v1alpha1
kind: PartitionPolicy
metadata: {name: p}
spec: {mode: dynamic, stabilizationWindow: 1m}
"""
# 1 running 1g.10gb pod on node-a and 4 pending ones created at 05:00 (W = 3600 s each); the window
# (1m) is covered by a sample of the same demand 2 minutes ago
WATCHED = State(history=(sample(NOW - dt.timedelta(minutes=2), {("search", "1g.10gb"): [1, 4]}),))
BENEFIT = 4 * 3600 / 7  # the 4 pending instances are served: Σ f × W = 2057.1 GPU-s
OUTAGE = 1 * 60.0 * 1  # node-a: 1 GPU, out 60 s while its 1 changed GPU is re-carved


def _recommend(tmp_path: Path, running: dict[str, Any], **kw: Any) -> Any:
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    policy, diags = load_and_validate([str(tmp_path / "policy.yaml")])
    assert policy is not None, diags
    pods = [running] + [pod(f"wait-{i}", "search", "nvidia.com/mig-1g.10gb") for i in range(4)]
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}), encoding="utf-8")
    obs = read_snapshots((str(snap),), NOW)
    return recommend(policy, CATALOG, CurrentState(), obs, WATCHED, NOW, time_limit_s=30, **kw)


def _running(started: str | None, created: str | None = "2026-12-01T05:00:00Z") -> dict[str, Any]:
    obj = pod("run-0", "search", "nvidia.com/mig-1g.10gb", node="node-a", created=created or "")
    if started is not None:
        obj["status"]["startTime"] = started
    if created is None:
        del obj["metadata"]["creationTimestamp"]
    return obj


def _gate(rec: Any) -> Any:
    return next(x for x in rec.gates if x.name == "disruption")


def test_a_young_running_pod_lets_the_change_through(tmp_path: Path) -> None:
    rec = _recommend(tmp_path, _running("2026-12-01T05:50:00Z"))  # E = 600 s
    assert rec.benefit == pytest.approx(BENEFIT) and rec.served_pending == 4
    (node,) = rec.node_costs
    assert (node.node, node.gpus, node.changed_gpus, node.running) == ("node-a", 1, 1, 1)
    assert node.loss == pytest.approx(600 * 600 / 2400 / 7)  # f × E²/(E+G) = 21.4 GPU-s
    assert node.outage == OUTAGE and rec.cost == pytest.approx(150 / 7 + 60)
    assert _gate(rec).passed and rec.proposed_change  # 2057 > 81.4 × 1.2
    assert "benefit 2,057 GPU-s > cost 81 GPU-s x 1.2" in _gate(rec).why
    md = evidence_markdown(rec)
    assert "| node-a | 1 | 1 | 21 | 60 | 0 | 81 |" in md and "**Verdict:** worth it" in md


def test_a_months_old_running_pod_blocks_it(tmp_path: Path) -> None:
    rec = _recommend(tmp_path, _running("2026-09-02T06:00:00Z"))  # 90 days: E = 7,776,000 s
    e = 90 * 86400
    assert rec.cost == pytest.approx(e * e / (e + 1800) / 7 + 60)  # ≈ 1,110,600 GPU-s
    assert not _gate(rec).passed and not rec.proposed_change
    assert "benefit 2,057 GPU-s <= cost 1,110,6" in _gate(rec).why
    assert "**Verdict:** **not worth it**" in evidence_markdown(rec)


def test_urgency_does_not_override_the_disruption_rule(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    late = {"migc.dev/max-wait-time": "15m"}
    obj = _running("2026-09-02T06:00:00Z")
    rec = _recommend(tmp_path / "p", obj)
    assert not rec.urgent  # no hint yet
    # the same with every pending pod past a 15m max wait: the window would be overridden, the rule not
    (tmp_path / "q").mkdir()
    policy_text = POLICY.replace("stabilizationWindow: 1m", "stabilizationWindow: 1h")
    (tmp_path / "q" / "policy.yaml").write_text(policy_text, encoding="utf-8")
    policy, _ = load_and_validate([str(tmp_path / "q" / "policy.yaml")])
    assert policy is not None
    pods = [obj] + [pod(f"w-{i}", "search", "nvidia.com/mig-1g.10gb", annotations=late) for i in range(4)]
    snap = tmp_path / "q" / "snap.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}), encoding="utf-8")
    rec = recommend(
        policy, CATALOG, CurrentState(), read_snapshots((str(snap),), NOW), State(), NOW, time_limit_s=30
    )
    assert len(rec.urgent) == 4
    gates = {x.name: x for x in rec.gates}
    assert gates["stabilizationWindow"].overridden and not gates["disruption"].passed


def test_without_start_time_the_creation_time_is_an_upper_bound(tmp_path: Path) -> None:
    # no status.startTime: E = now − creationTimestamp (the pod cannot have run longer), here 600 s
    (tmp_path / "a").mkdir()
    rec = _recommend(tmp_path / "a", _running(None, created="2026-12-01T05:50:00Z"))
    assert rec.cost == pytest.approx(150 / 7 + 60) and rec.proposed_change
    # neither: the cost is unknown and the change is held (conservative), the evidence says so
    (tmp_path / "b").mkdir()
    rec = _recommend(tmp_path / "b", _running(None, created=None))
    assert rec.cost is None and rec.node_costs[0].loss is None
    assert not _gate(rec).passed and "cost unknown" in _gate(rec).why
    assert "| node-a | 1 | 1 | unknown | 60 | 0 | unknown |" in evidence_markdown(rec)


def test_disruption_off_is_the_gain_threshold(tmp_path: Path) -> None:
    rec = _recommend(tmp_path, _running("2026-09-02T06:00:00Z"), disruption="off")
    names = [x.name for x in rec.gates]
    assert "disruption" not in names and rec.node_costs == () and rec.proposed_change
    assert "### Disruption" not in evidence_markdown(rec)


def test_grace_and_reconfigure_time_are_options(tmp_path: Path) -> None:
    # G = 0: a pod is evicted at once and loses all of E = 600 s; 90 s per changed GPU
    rec = _recommend(
        tmp_path, _running("2026-12-01T05:50:00Z"), drain_grace_seconds=0, reconfigure_seconds=90
    )
    assert rec.cost == pytest.approx(600 / 7 + 90)


def test_displaced_by_hand() -> None:
    """The wait a change imposes on the running pods it leaves without an instance on the node."""
    # a pod holding 8 whole GPUs that waited 27,000 s before it started; the node keeps no 7g
    assert dis.displaced([("7g.80gb", 8, 8.0, 27_000.0)], {"4g.40gb": 2}) == pytest.approx(216_000.0)
    # two 4g pods, the node keeps one 4g instance: the one that waited least (50 s) is counted
    two = [("4g.40gb", 1, 4 / 7, 100.0), ("4g.40gb", 1, 4 / 7, 50.0)]
    assert dis.displaced(two, {"4g.40gb": 1}) == pytest.approx(4 / 7 * 50)
    assert dis.displaced(two, {"4g.40gb": 2, "3g.40gb": 1}) == 0.0  # both keep an instance
    assert dis.displaced(two, {}) == pytest.approx(4 / 7 * 150)


def _three_g(created: str) -> dict[str, Any]:
    obj = pod("run-0", "search", "nvidia.com/mig-3g.40gb", node="node-a", created=created)
    obj["status"]["startTime"] = "2026-12-01T05:50:00Z"  # E = 600 s
    return obj


def test_a_change_that_displaces_a_pod_that_waited_long_is_charged_its_wait(tmp_path: Path) -> None:
    """node-a's running 3g pod has no 3g instance in the proposal (7 x 1g): it goes back to the queue,
    expected to wait again what it waited before it started (W0 = startTime - creationTimestamp)."""
    (tmp_path / "a").mkdir()
    short = _recommend(tmp_path / "a", _three_g("2026-12-01T05:00:00Z"))  # W0 = 3000 s
    (node,) = short.node_costs
    assert node.displaced == pytest.approx(3 / 7 * 3000)  # 1,285.7 GPU-s
    assert short.cost == pytest.approx(3 / 7 * 150 + 60 + 3 / 7 * 3000)  # 1,410 GPU-s
    assert _gate(short).passed  # 2,057 > 1,410 x 1.2
    (tmp_path / "b").mkdir()
    long = _recommend(tmp_path / "b", _three_g("2026-12-01T04:00:00Z"))  # W0 = 6600 s
    assert long.node_costs[0].displaced == pytest.approx(3 / 7 * 6600)  # 2,828.6 GPU-s
    assert not _gate(long).passed and not long.proposed_change  # 2,057 <= 2,953 x 1.2
    assert "| node-a | 1 | 1 | 64 | 60 | 2,829 | 2,953 |" in evidence_markdown(long)
