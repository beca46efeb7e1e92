"""controller/reconciler/failed.py: a Failed node waits for a human, a new revision or the backoff."""

from __future__ import annotations

import datetime as dt

from controller import state as st
from controller.assignment import Target
from controller.reconciler.context import Step
from controller.reconciler.failed import failed
from controller.state import NodeView, Phase
from unit.controller.support import NOW, FakeKube, context, in_flight, node, parsed

A = parsed({"n0": "all-1g.10gb"})
T = Target("a100", "all-1g.10gb")
RETRY_AT = st.fmt_time(NOW - dt.timedelta(seconds=1))


def _run(obj: dict[str, object], desired: Target | None = T) -> tuple[FakeKube, NodeView | None]:
    kube = FakeKube([obj])
    out = failed(context(kube), Step(NodeView.from_obj(obj), desired, A, NOW))
    return kube, out


def _failed(**extra: str) -> dict[str, object]:
    return in_flight("n0", Phase.FAILED, "all-1g.10gb", extra={st.ATTEMPTS: "1", **extra})


def test_waits_without_a_reason_to_act() -> None:
    kube, out = _run(_failed())
    assert out is None and kube.writes == []
    future = st.fmt_time(NOW + dt.timedelta(seconds=1))
    assert _run(_failed(**{st.RETRY_AFTER: future}))[1] is None


def test_automatic_retry_once_the_backoff_passed() -> None:
    _, out = _run(_failed(**{st.RETRY_AFTER: RETRY_AT}))
    assert out is not None and out.phase == Phase.DRAINING and st.RETRY_AFTER not in out.annotations
    assert out.attempts == 1 and out.unschedulable  # still cordoned: straight back to draining
    # Out of automatic attempts: a stale retry-after does not restart it.
    assert _run(_failed(**{st.RETRY_AFTER: RETRY_AT, st.ATTEMPTS: "2"}))[1] is None


def test_retry_on_request_restarts_the_count() -> None:
    _, out = _run(_failed(**{st.RETRY: "true", st.ATTEMPTS: "2"}))
    assert out is not None and out.phase == Phase.DRAINING and out.attempts == 0
    assert st.RETRY not in out.annotations


def test_retry_of_an_impossible_config_fails_again_at_once() -> None:
    obj = in_flight("n0", Phase.FAILED, "all-1g.10gb", mig_capable=False, extra={st.RETRY: "true"})
    _, out = _run(obj)
    assert out is not None and out.phase == Phase.FAILED and st.RETRY_AFTER not in out.annotations
    assert "not MIG-capable" in out.annotations[st.LAST_ERROR] and st.RETRY not in out.annotations


def test_rollback_targets_the_previous_config_and_holds_the_revision() -> None:
    _, out = _run(_failed(**{st.ROLLBACK: "true", st.PREVIOUS: "whole", st.REVISION: "r1"}))
    assert out is not None and out.phase == Phase.DRAINING and out.target == "whole"
    assert out.rolling_back and out.annotations[st.HELD_REVISION] == "r1" and out.attempts == 0
    assert st.ROLLBACK not in out.annotations


def test_rollback_without_a_previous_config_says_so_and_stays_failed() -> None:
    _, out = _run(_failed(**{st.ROLLBACK: "true"}))
    assert out is not None and out.phase == Phase.FAILED and out.target == "all-1g.10gb"
    assert out.annotations[st.LAST_ERROR] == "rollback requested but no previous config is recorded"
    assert not out.wants_rollback


def test_a_new_revision_retargets_the_failed_node() -> None:
    a = parsed({"n0": "all-3g.40gb"})
    obj = _failed()
    kube = FakeKube([obj])
    out = failed(context(kube), Step(NodeView.from_obj(obj), Target("a100", "all-3g.40gb"), a, NOW))
    assert out is not None and out.phase == Phase.DRAINING and out.target == "all-3g.40gb"
    assert out.attempts == 0 and out.annotations[st.REVISION] == a.revision


def test_a_failed_node_never_cordoned_goes_back_to_admission() -> None:
    obj = node(
        "n0", annotations={st.PHASE: "Failed", st.TARGET: "all-1g.10gb", st.RETRY: "true", st.POOL: "a100"}
    )
    kube, out = _run(obj)
    assert out is not None and out.phase == Phase.IDLE and not out.unschedulable
    assert not {st.TARGET, st.POOL, st.RETRY} & set(out.annotations)
    assert "spec" not in kube.node_writes()[0]  # only admission cordons
    _, waiting = _run(node("n0", annotations={st.PHASE: "Failed", st.TARGET: "all-1g.10gb"}))
    assert waiting is None
