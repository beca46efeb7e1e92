"""controller/reconciler/drain.py: wait for GPU pods, then evict (never delete), within timeouts."""

from __future__ import annotations

import datetime as dt
from typing import Any

from controller import state as st
from controller.assignment import Target
from controller.errors import NotFoundError, TemporaryError
from controller.reconciler.context import Context, Step
from controller.reconciler.drain import cordoned, draining
from controller.state import NodeView, Phase
from unit.controller.support import (
    NOW,
    FakeKube,
    context,
    gpu_operator_configmaps,
    in_flight,
    parsed,
    pod,
    sample,
)

A = parsed({"n0": "all-1g.10gb"})
T = Target("a100", "all-1g.10gb")


def _draining(since_s: float, pods: list[dict[str, Any]], **kw: Any) -> tuple[FakeKube, Context, Step]:
    obj = in_flight("n0", Phase.DRAINING, "all-1g.10gb", since=NOW - dt.timedelta(seconds=since_s), **kw)
    kube = FakeKube([obj], pods=pods, configmaps=gpu_operator_configmaps())
    return kube, context(kube), Step(NodeView.from_obj(obj), T, A, NOW)


def test_cordoned_moves_to_draining_and_takes_a_new_target_along() -> None:
    obj = in_flight("n0", Phase.CORDONED, "all-1g.10gb")
    kube = FakeKube([obj])
    out = cordoned(context(kube), Step(NodeView.from_obj(obj), T, A, NOW))
    assert out is not None and out.phase == Phase.DRAINING and out.target == "all-1g.10gb"
    a = parsed({"n0": "all-3g.40gb"})
    kube = FakeKube([obj])
    out = cordoned(context(kube), Step(NodeView.from_obj(obj), Target("a100", "all-3g.40gb"), a, NOW))
    assert out is not None and out.target == "all-3g.40gb" and out.annotations[st.REVISION] == a.revision


def test_no_gpu_pods_goes_straight_to_applying() -> None:
    others = [pod("cpu", "n0", resource="cpu"), pod("ds", "n0", daemonset=True)]
    others[1]["spec"]["nodeSelector"] = {"nvidia.com/gpu.deploy.client": "true"}
    others.append(pod("elsewhere", "n1"))
    kube, ctx, step = _draining(0, others)
    out = draining(ctx, step)
    assert out is not None and out.phase == Phase.APPLYING and kube.evictions == []


def test_gpu_pods_get_the_grace_period_then_are_evicted() -> None:
    kube, ctx, step = _draining(99, [pod("train", "n0", namespace="ml")])
    assert draining(ctx, step) is None and kube.evictions == []
    kube, ctx, step = _draining(
        100, [pod("train", "n0", namespace="ml"), pod("done", "n0", phase="Succeeded")]
    )
    assert draining(ctx, step) is None
    assert kube.evictions == [("ml", "train")]
    assert sample(ctx, "migc_evictions_total", result="evicted") == 1
    assert [verb for verb, _, _ in kube.writes] == ["evict"]  # evicted, never deleted or patched


def test_terminating_pods_are_not_evicted_again() -> None:
    kube, ctx, step = _draining(150, [pod("t", "n0", deletionTimestamp="2026-12-01T11:59:00Z")])
    assert draining(ctx, step) is None and kube.writes == []


def test_a_disruption_budget_is_waited_out_with_backoff() -> None:
    kube, ctx, step = _draining(150, [pod("a", "n0"), pod("b", "n0")])
    kube.evict_errors[("default", "a")] = TemporaryError("HTTP 429", status=429)
    kube.evict_errors[("default", "b")] = NotFoundError("HTTP 404", status=404)
    assert draining(ctx, step) is None
    assert sample(ctx, "migc_evictions_total", result="blocked") == 1
    assert sample(ctx, "migc_evictions_total", result="gone") == 1
    assert ctx.evict.active("n0")
    draining(ctx, step)  # backing off: no new eviction call
    assert len([w for w in kube.writes if w[0] == "evict"]) == 2


def test_drain_times_out_after_grace_plus_eviction_timeout() -> None:
    _, ctx, step = _draining(300, [pod("stuck", "n0", namespace="ml")])
    out = draining(ctx, step)
    assert out is not None and out.phase == Phase.FAILED
    assert out.annotations[st.LAST_ERROR] == "drain timed out; GPU pods still running: ml/stuck"


def test_an_unmanaged_gpu_daemonset_fails_the_node_after_the_timeouts() -> None:
    ds = [pod("exporter", "n0", daemonset=True, namespace="mon")]
    kube, ctx, step = _draining(10, ds)
    assert draining(ctx, step) is None and kube.node_writes() == []
    kube, ctx, step = _draining(300, ds)
    out = draining(ctx, step)
    assert out is not None and out.phase == Phase.FAILED and "mon/exporter" in out.annotations[st.LAST_ERROR]


def test_a_node_that_already_carries_its_target_is_never_drained() -> None:
    labels = {st.MIG_CONFIG: "all-1g.10gb", st.MIG_STATE: "success"}
    kube, ctx, step = _draining(500, [pod("train", "n0")], labels=labels)
    out = draining(ctx, step)
    assert out is not None and out.phase == Phase.VERIFYING and kube.evictions == []
