"""A pool's ``idleSurge``: beyond its ``maxUnavailable`` nodes out of Idle, up to that many more,
but only nodes that run no GPU pod when admitted (their re-carve evicts nothing).

Why: with maxUnavailable 1 a node draining a busy node (grace up to 30 minutes) or a Failed node
waiting for a human holds the one slot, and an idle node whose re-carve would serve a pending pod
sat idle all that time. The scenarios check, from the emulator's request log (real HTTP):

* an idle node goes beside the node holding the slot, and no more than limit + idleSurge are out;
* a node running GPU pods never goes beyond maxUnavailable, whatever the surge;
* without the field (assignments compiled before it) one node at a time, exactly as before;
* a Failed node holding the slot does not hold an idle node back, but the max_failures halt does;
* the in-flight budget (``trust.held``) acts on limit + idleSurge nodes, so none admitted by the
  surge is parked.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from conftest import FAST, Cluster, assert_within_budget, assignment, max_cordoned, writes
from emulation import NODES, PODS, Call
from kubernetes import client

from controller import state as st
from controller.kube import Kube
from controller.metrics import Metrics
from controller.reconciler import Reconciler
from controller.runner import utcnow

OLD, NEW = "all-1g.10gb", "all-3g.40gb"
NAMES = ["n0", "n1", "n2"]
GRACE = 60.0  # a GPU pod keeps its node Draining until the scenario ends the pod


def _ann(cluster: Cluster, node: str) -> dict[str, str]:
    return dict(cluster.node(node)["metadata"].get("annotations") or {})


def _cordoned(cluster: Cluster, node: str) -> bool:
    return bool(cluster.node(node)["spec"].get("unschedulable"))


def _cordon_order(calls: list[Call]) -> list[tuple[str, bool]]:
    """(node, cordoned?) of every successful cordon / uncordon, in request order."""
    out = []
    for c in writes(calls):
        spec = (c.body or {}).get("spec") or {}
        if c.resource == "nodes" and not c.refused and "unschedulable" in spec:
            out.append((str(c.name), bool(spec["unschedulable"])))
    return out


def _surge_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        str(getattr(r, "migc", {}).get("node"))
        for r in caplog.records
        if r.getMessage() == "admitted beyond maxUnavailable: runs no GPU pod"
    ]


def _setup(cluster: Cluster, busy: list[str], idle: list[str]) -> None:
    """Nodes on OLD; one GPU pod (ml/train-<node>) on each of ``busy``; ``idle`` held back by
    migc.dev/paused until the scenario lets them go (admission would otherwise take the idle nodes
    first: fewest GPU pods first)."""
    cluster.add_nodes(busy + idle, OLD)
    for n in busy:
        cluster.add_pod(f"train-{n}", n, namespace="ml")
    for n in idle:
        cluster.annotate(n, {st.PAUSED: "true"})


def _release(cluster: Cluster, nodes: list[str]) -> None:
    for n in nodes:
        cluster.annotate(n, {st.PAUSED: None})


def test_an_idle_node_goes_beside_a_draining_one_within_limit_plus_surge(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """maxUnavailable 1, idleSurge 1. n0 runs a GPU pod and drains on its grace; n1 and n2 run
    none. n1 goes beside n0; n2 waits while n0 and n1 are out (limit 2), and goes once n1 is back,
    n0 still draining."""
    caplog.set_level(logging.INFO)
    _setup(cluster, ["n0"], ["n1", "n2"])
    ctl = cluster.start(drain__grace_timeout=GRACE)
    cluster.set_assignment(assignment(dict.fromkeys(NAMES, NEW), max_unavailable=1, idle_surge=1))
    cluster.wait(lambda: cluster.phases()["n0"] == "Draining")
    cluster.mig.gate.clear()  # applies stay pending: n1 stays out until the gate opens
    _release(cluster, ["n1", "n2"])
    cluster.wait(lambda: cluster.phases()["n1"] == "Applying")
    cluster.settle(ctl)
    assert cluster.phases() == {"n0": "Draining", "n1": "Applying", "n2": "Idle"}
    assert not _cordoned(cluster, "n2")  # n0 and n1 out: limit + idleSurge reached
    cluster.mig.gate.set()
    cluster.wait(lambda: cluster.converged({"n1": NEW, "n2": NEW}))
    assert cluster.phases()["n0"] == "Draining"  # n2 went while n0 was still draining
    assert {p["metadata"]["name"] for p in cluster.emu.pods()} >= {"train-n0"}  # nothing evicted
    cluster.emu.remove(PODS, "ml", "train-n0")  # the job finishes on its own
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NAMES, NEW)))

    calls = cluster.controller_calls()
    assert not [c for c in calls if c.subresource == "eviction"]
    assert_within_budget(calls, 1, set(), set(), {"ml/train-n0": "n0"}, idle_surge=1)
    assert max_cordoned(calls) == 2  # the surge was used, and never exceeded
    order = _cordon_order(calls)
    assert order.index(("n2", True)) > order.index(("n1", False)), order  # n2 only after n1 was back
    assert order.index(("n2", True)) < order.index(("n0", False)), order  # ... and before n0 was
    assert _surge_lines(caplog) == ["n1", "n2"]


def test_a_busy_node_never_goes_beyond_max_unavailable(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Two busy nodes and an idle one, maxUnavailable 1, idleSurge 3 (capped at 2 by the pool's
    3 nodes): while n0 drains, n1 (busy) stays Idle, before and after the idle n2 went by the
    surge; n1 goes only once n0 is back."""
    caplog.set_level(logging.INFO)
    _setup(cluster, ["n0", "n1"], ["n2"])
    ctl = cluster.start(drain__grace_timeout=GRACE)
    cluster.set_assignment(assignment(dict.fromkeys(NAMES, NEW), max_unavailable=1, idle_surge=3))
    cluster.wait(lambda: cluster.phases()["n0"] == "Draining")
    cluster.settle(ctl)
    assert cluster.phases()["n1"] == "Idle" and not _cordoned(cluster, "n1")
    _release(cluster, ["n2"])
    cluster.wait(lambda: cluster.converged({"n2": NEW}))
    cluster.settle(ctl)
    assert cluster.phases() == {"n0": "Draining", "n1": "Idle", "n2": "Idle"}
    assert not _cordoned(cluster, "n1")
    cluster.emu.remove(PODS, "ml", "train-n0")
    cluster.wait(lambda: cluster.phases()["n1"] == "Draining")
    assert cluster.converged({"n0": NEW})
    cluster.emu.remove(PODS, "ml", "train-n1")
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NAMES, NEW)))

    calls = cluster.controller_calls()
    pods = {"ml/train-n0": "n0", "ml/train-n1": "n1"}
    assert_within_budget(calls, 1, set(), set(), pods, idle_surge=2)
    order = _cordon_order(calls)
    assert order.index(("n1", True)) > order.index(("n0", False)), order
    assert _surge_lines(caplog) == ["n2"]


def test_without_the_field_one_node_at_a_time_as_before(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """The first scenario with an assignment compiled before idleSurge: the idle nodes wait for
    the draining one, and the pool never has two nodes out."""
    caplog.set_level(logging.INFO)
    _setup(cluster, ["n0"], ["n1", "n2"])
    ctl = cluster.start(drain__grace_timeout=GRACE)
    doc = assignment(dict.fromkeys(NAMES, NEW), max_unavailable=1)
    assert "idleSurge" not in doc["pools"][0]
    cluster.set_assignment(doc)
    cluster.wait(lambda: cluster.phases()["n0"] == "Draining")
    _release(cluster, ["n1", "n2"])
    cluster.settle(ctl)
    assert cluster.phases() == {"n0": "Draining", "n1": "Idle", "n2": "Idle"}
    assert not cluster.converged({"n1": NEW}) and not cluster.converged({"n2": NEW})  # never started
    cluster.emu.remove(PODS, "ml", "train-n0")
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NAMES, NEW)))

    calls = cluster.controller_calls()
    assert_within_budget(calls, 1, set(), set(), {"ml/train-n0": "n0"})
    assert max_cordoned(calls) == 1
    assert [n for n, on in _cordon_order(calls) if on] == ["n0", "n1", "n2"]
    assert _surge_lines(caplog) == []


@pytest.mark.parametrize(
    ("idle_surge", "max_failures", "goes"),
    [
        (1, 2, True),  # the Failed node holds the one slot; the idle node goes by the surge
        (1, 1, False),  # the revision failed on max_failures nodes: halted, surge included
        (None, 2, False),  # no surge: the Failed node holds the pool, as before the field
    ],
)
def test_a_failed_node_holds_the_slot_but_not_an_idle_node_unless_halted(
    cluster: Cluster, idle_surge: int | None, max_failures: int, goes: bool
) -> None:
    _setup(cluster, [], ["n0", "n1"])
    cluster.mig.decide = lambda node, config, attempt: "failed" if node == "n0" else "success"
    ctl = cluster.start(failures__max_attempts=1, failures__max_failures=max_failures)
    cluster.set_assignment(
        assignment(dict.fromkeys(["n0", "n1"], NEW), max_unavailable=1, idle_surge=idle_surge)
    )
    _release(cluster, ["n0"])
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed")
    assert _cordoned(cluster, "n0")  # waits for a human's retry, holding its slot
    _release(cluster, ["n1"])
    if goes:
        cluster.wait(lambda: cluster.converged({"n1": NEW}))
    else:
        cluster.settle(ctl, 10)
        assert not cluster.converged({"n1": NEW})
    assert _ann(cluster, "n0").get(st.PHASE) == "Failed"
    calls = cluster.controller_calls()
    assert (("n1", True) in _cordon_order(calls)) is goes
    assert_within_budget(calls, 1, set(), set(), {}, idle_surge=idle_surge or 0)
    halted = [c for c in writes(calls) if c.resource == "events" and c.body.get("reason") == "RolloutHalted"]
    assert len(halted) == (1 if max_failures == 1 else 0)
    assert ctl.metrics.halted._value.get() == (1 if max_failures == 1 else 0)


def _in_flight(cluster: Cluster, names: list[str], doc: dict[str, Any]) -> None:
    """``names`` as a migc controller leaves them once cordoned (what a restarted one finds)."""
    now = st.fmt_time(utcnow())
    for n in names:
        record = {
            st.PHASE: "Cordoned",
            st.PHASE_SINCE: now,
            st.STARTED_AT: now,
            st.TARGET: NEW,
            st.REVISION: doc["revision"],
            st.POOL: "a100",
            st.PREVIOUS: OLD,
            st.ATTEMPTS: "0",
            st.CORDONED: "true",
        }
        patch = {"metadata": {"annotations": record}, "spec": {"unschedulable": True}}
        cluster.emu.patch(NODES, None, n, patch)


@pytest.mark.parametrize("idle_surge", [1, None])
def test_a_restarted_controller_counts_every_in_flight_node_against_max_unavailable(
    cluster: Cluster, idle_surge: int | None
) -> None:
    """Two cordoned in-flight nodes, no GPU pods, maxUnavailable 1, as a restarted controller finds
    them: which of them the surge admitted is kept in memory only (nothing on the Node says it, so
    nothing forged can claim it), so with idleSurge 1 as without it a fresh controller acts on one
    (relabels it for the MIG manager) and the other waits, cordoned; no third node is admitted."""
    acted_on = {"n0"}
    names = ["n0", "n1", "n2"]
    cluster.add_nodes(names, OLD)
    doc = assignment(dict.fromkeys(names, NEW), max_unavailable=1, idle_surge=idle_surge)
    cluster.set_assignment(doc)
    _in_flight(cluster, ["n0", "n1"], doc)
    cluster.mig.gate.clear()  # applies stay pending: both stay in flight
    cfg = client.Configuration()
    cfg.host = cluster.emu.url
    reconciler = Reconciler(Kube(client.ApiClient(cfg)), FAST, Metrics(), utcnow)
    for _ in range(6):
        reconciler.reconcile_once()
        time.sleep(0.03)  # the fake MIG manager answers in the emulator's loop
    relabelled = {
        str(c.name)
        for c in writes(cluster.controller_calls())
        if c.resource == "nodes" and st.MIG_CONFIG in ((c.body or {}).get("metadata") or {}).get("labels", {})
    }
    assert relabelled == acted_on
    assert cluster.phases() == {n: ("Applying" if n in acted_on else "Cordoned" if n != "n2" else "Idle")
                                for n in names}  # fmt: skip
    assert not _cordoned(cluster, "n2")  # limit + idleSurge out already: admission takes no third
    cluster.mig.gate.set()
