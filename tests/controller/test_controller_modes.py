"""Dry run, pauses, maintenance windows, invalid assignments, leader election, endpoints."""

from __future__ import annotations

import datetime as dt
import logging
import urllib.error
import urllib.request
from typing import Any

import pytest
from conftest import Cluster, assignment, writes
from emulation import CONFIGMAPS, assignment_configmap
from emulation import NODES as NODES_RES

from controller import state as st

OLD, NEW = "all-1g.10gb", "all-3g.40gb"
NODES = ["n0", "n1", "n2"]
# idle passes come quickly, so "nothing happened" is cheap to show
FAST_IDLE: dict[str, Any] = {"loop__resync_interval": 0.05}


def _prepare(cluster: Cluster, **kw: object) -> dict[str, object]:
    cluster.add_nodes(NODES, OLD)
    cluster.add_pod("train-1", "n1", namespace="ml")
    return assignment(dict.fromkeys(NODES, NEW), **kw)  # type: ignore[arg-type]


def _node_writes(cluster: Cluster) -> list[str]:
    return [str(c.name) for c in writes(cluster.controller_calls()) if c.resource == "nodes"]


def test_dry_run_logs_every_step_and_writes_nothing(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="migc.controller")
    doc = _prepare(cluster, max_unavailable=2)
    cluster.set_assignment(doc)
    ctl = cluster.start(dry_run=True, **FAST_IDLE)
    cluster.settle(ctl)

    calls = cluster.controller_calls()
    assert calls and writes(calls) == []  # not even the Lease
    assert {c.verb for c in calls} <= {"get", "list", "watch"}
    planned = [r for r in caplog.records if r.getMessage() == "dry-run: would reconfigure node"]
    # Fewest GPU pods first, in batches of maxUnavailable; logged once, not on every pass.
    assert [(r.migc["node"], r.migc["batch"]) for r in planned] == [("n0", 1), ("n2", 1), ("n1", 2)]  # type: ignore[attr-defined]
    steps = [r.getMessage() for r in caplog.records if r.migc.get("node") == "n1"]  # type: ignore[attr-defined]
    assert any("would evict" in m for m in steps) and any("ml/train-1" in m for m in steps)
    assert any(f"{st.MIG_CONFIG}={NEW}" in m for m in steps)
    assert any("would uncordon" in m for m in steps)


def test_paused_assignment_starts_nothing_until_unpaused(cluster: Cluster) -> None:
    doc = _prepare(cluster)
    cluster.set_assignment(doc, paused=True)
    ctl = cluster.start(**FAST_IDLE)
    cluster.settle(ctl)
    assert _node_writes(cluster) == []
    cluster.set_assignment(doc)
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NODES, NEW)))


def test_paused_node_is_left_alone(cluster: Cluster) -> None:
    doc = _prepare(cluster)
    cluster.annotate("n2", {st.PAUSED: "true"})
    ctl = cluster.start(**FAST_IDLE)
    cluster.set_assignment(doc)
    cluster.wait(lambda: cluster.converged({"n0": NEW, "n1": NEW}))
    cluster.settle(ctl)
    assert "n2" not in _node_writes(cluster)
    assert ctl.metrics.drift._value.get() == 1
    cluster.annotate("n2", {st.PAUSED: None})
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NODES, NEW)))


def test_maintenance_window_gates_new_work(cluster: Cluster) -> None:
    window = {"days": ["Sat"], "start": "23:00", "end": "02:00", "timezone": "UTC"}
    doc = _prepare(cluster, windows=[window])
    cluster.clock.fixed = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)  # a Monday noon
    ctl = cluster.start(**FAST_IDLE)
    cluster.set_assignment(doc)
    cluster.settle(ctl)
    assert _node_writes(cluster) == []
    cluster.clock.fixed = dt.datetime(2026, 11, 29, 1, 30, tzinfo=dt.UTC)  # Sunday 01:30: Saturday's window
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NODES, NEW)))


def test_invalid_assignment_is_reported_once_and_never_acted_on(cluster: Cluster) -> None:
    doc = _prepare(cluster)
    broken = dict(doc, pools=[dict(doc["pools"][0], maxUnavailable=0)])  # type: ignore[index]
    cluster.set_assignment(broken)
    ctl = cluster.start(**FAST_IDLE)
    cluster.settle(ctl)
    cm = assignment_configmap(doc)
    cm["data"]["assignment.json"] = "{not json"
    cluster.emu.upsert(CONFIGMAPS, "migc-system", "migc-assignment", cm)
    cluster.settle(ctl)

    events = [c for c in cluster.controller_calls() if c.resource == "events"]
    assert [e.body["reason"] for e in events] == ["InvalidAssignment"] * 2  # once per bad content
    assert "maxUnavailable" in events[0].body["message"]
    assert events[0].body["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "migc-assignment",
        "namespace": "migc-system",
    }
    assert _node_writes(cluster) == []
    cluster.set_assignment(doc)
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NODES, NEW)))


def test_single_active_replica_and_handover_on_graceful_stop(cluster: Cluster) -> None:
    doc = _prepare(cluster)
    cluster.set_assignment(assignment(dict.fromkeys(NODES, OLD)))
    a = cluster.start(leader__identity="ctl-a", leader__lease_duration=5.0)
    cluster.wait(lambda: a.elector.leading)
    b = cluster.start(leader__identity="ctl-b", leader__lease_duration=5.0)
    cluster.set_assignment(doc)
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NODES, NEW)))
    agents = {c.user_agent for c in writes(cluster.controller_calls()) if c.resource == "nodes"}
    assert agents == {"migc-controller/0.1 (ctl-a)"}
    assert not b.elector.leading
    assert b.health.ready() and b.metrics.leader._value.get() == 0  # a ready standby

    a.stop()  # releases the Lease: the standby takes over without waiting for expiry
    cluster.running[0].thread.join(10)
    cluster.wait(lambda: b.elector.leading, timeout=3)
    start = len(cluster.controller_calls())
    cluster.set_assignment(assignment(dict.fromkeys(NODES, OLD)))
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NODES, OLD)))
    agents = {c.user_agent for c in writes(cluster.controller_calls()[start:]) if c.resource == "nodes"}
    assert agents == {"migc-controller/0.1 (ctl-b)"}


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_metrics_and_probes(cluster: Cluster) -> None:
    doc = _prepare(cluster)
    ctl = cluster.start(http=True)
    cluster.set_assignment(doc)
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NODES, NEW)))
    assert ctl.endpoint is not None
    base = f"http://127.0.0.1:{ctl.endpoint.port}"
    cluster.wait(lambda: 'migc_nodes{phase="Idle"} 3.0' in _get(base + "/metrics")[1])
    status, text = _get(base + "/metrics")
    assert status == 200
    assert 'migc_reconfigurations_total{pool="a100",result="success"} 3.0' in text
    assert "migc_reconfiguration_duration_seconds_count 3.0" in text
    assert "migc_layout_drift_nodes 0.0" in text
    assert 'migc_evictions_total{result="evicted"} 1.0' in text
    assert "migc_leader 1.0" in text
    assert _get(base + "/healthz")[0] == 200
    assert _get(base + "/readyz")[0] == 200
    assert _get(base + "/nope")[0] == 404


def test_a_cordon_set_by_a_human_before_the_rollout_is_kept(cluster: Cluster) -> None:
    doc = _prepare(cluster)
    cluster.emu.patch(NODES_RES, None, "n0", {"spec": {"unschedulable": True}})
    cluster.start()
    cluster.set_assignment(doc)
    cluster.wait(
        lambda: (
            all(cluster.node(n)["metadata"]["labels"][st.MIG_CONFIG] == NEW for n in NODES)
            and set(cluster.phases().values()) == {"Idle"}
        )
    )
    n0, n1 = cluster.node("n0"), cluster.node("n1")
    assert n0["spec"]["unschedulable"] is True and not n0["spec"].get("taints")  # theirs kept, none added
    assert n1["spec"]["unschedulable"] is False
    assert st.PRE_CORDONED not in (n0["metadata"].get("annotations") or {})
