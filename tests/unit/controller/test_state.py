"""controller/state.py: the persisted state machine as read back from a Node object."""

from __future__ import annotations

import datetime as dt

import pytest

from controller import state as st
from controller.state import NodeView, Phase
from unit.controller.support import node


def test_from_obj_tolerates_missing_parts() -> None:
    v = NodeView.from_obj({"metadata": {"name": "n0"}})
    assert (v.name, v.phase, v.unschedulable, v.taints, v.resource_version) == (
        "n0",
        Phase.IDLE,
        False,
        (),
        None,
    )
    assert v.target is None and v.attempts == 0 and not v.cordoned_by_migc
    full = NodeView.from_obj(node("n1", unschedulable=True, allocatable={"nvidia.com/gpu": "8"}))
    assert full.unschedulable and full.allocatable["nvidia.com/gpu"] == "8" and full.resource_version == "1"


@pytest.mark.parametrize("value", ["Idle", "Draining", "Failed"])
def test_phase_round_trips(value: str) -> None:
    assert NodeView.from_obj(node("n", annotations={st.PHASE: value})).phase.value == value


def test_converged_to_needs_the_mig_managers_success_on_a_mig_node() -> None:
    labels = {st.MIG_CONFIG: "all-1g.10gb", st.MIG_STATE: "success"}
    assert NodeView.from_obj(node("n", labels=labels)).converged_to("all-1g.10gb")
    assert not NodeView.from_obj(node("n", labels=labels)).converged_to("all-3g.40gb")
    for state in ("failed", "pending", "rebooting"):
        stale = NodeView.from_obj(node("n", labels={**labels, st.MIG_STATE: state}))
        assert not stale.converged_to("all-1g.10gb"), state
    assert not NodeView.from_obj(node("n", labels=labels)).converged_to(None)
    assert not NodeView.from_obj(node("n", labels=labels)).converged_to("")


def test_without_mig_the_config_is_what_migc_recorded() -> None:
    # No MIG manager runs there: a leftover nvidia.com/mig.config label means nothing.
    n = NodeView.from_obj(
        node(
            "n",
            mig_capable=False,
            labels={st.MIG_CONFIG: "all-1g.10gb"},
            annotations={st.APPLIED: "whole"},
        )
    )
    assert n.current_config == "whole" and n.converged_to("whole")
    bare = NodeView.from_obj(node("n", mig_capable=False, labels={st.MIG_CONFIG: "x"}))
    assert bare.current_config == "x"  # nothing recorded: the label is all there is
    # On a MIG-capable node the label wins over migc's annotation.
    mig = NodeView.from_obj(node("n", labels={st.MIG_CONFIG: "a"}, annotations={st.APPLIED: "b"}))
    assert mig.current_config == "a"


def test_flags_and_counters_read_defensively() -> None:
    n = NodeView.from_obj(
        node(
            "n",
            annotations={st.ATTEMPTS: "two", st.PAUSED: " Yes ", st.RETRY: "1", st.ROLLBACK: "false"},
            labels={st.MIG_STATE: "pending"},
        )
    )
    assert n.attempts == 0  # unparseable: no retry budget is invented
    assert n.paused and n.wants_retry and not n.wants_rollback and not n.rolling_back
    assert n.mig_busy
    assert not NodeView.from_obj(node("n", mig_capable=False, labels={st.MIG_STATE: "pending"})).mig_busy


def test_cordoned_by_migc_by_annotation_or_by_an_earlier_versions_taint() -> None:
    assert NodeView.from_obj(node("n", annotations={st.CORDONED: "true"})).cordoned_by_migc
    tainted = NodeView.from_obj(node("n", taints=[{"key": st.TAINT_KEY, "effect": "NoSchedule"}]))
    assert tainted.legacy_taint and tainted.cordoned_by_migc
    other = NodeView.from_obj(node("n", unschedulable=True, taints=[{"key": "x", "effect": "NoSchedule"}]))
    assert not other.cordoned_by_migc  # a human's cordon is not migc's


def test_times_round_trip_and_garbage_is_none() -> None:
    t = dt.datetime(2026, 12, 1, 13, 0, 0, 250000, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    text = st.fmt_time(t)
    assert text == "2026-12-01T12:00:00.250000Z"  # always UTC
    assert st.parse_time(text) == t
    assert st.parse_time(None) is None and st.parse_time("") is None and st.parse_time("yesterday") is None
    n = NodeView.from_obj(node("n", annotations={st.PHASE_SINCE: text, st.RETRY_AFTER: "soon"}))
    assert n.since() == t and n.since(st.RETRY_AFTER) is None


def test_every_transient_key_is_a_migc_key_and_human_keys_are_not_transient() -> None:
    assert all(k.startswith(st.P) for k in st.TRANSIENT)
    assert not {st.RETRY, st.ROLLBACK, st.PAUSED, st.PHASE, st.REVISION} & set(st.TRANSIENT)
    assert {Phase.CORDONED, Phase.DRAINING, Phase.APPLYING, Phase.VERIFYING} == st.CORDONED_PHASES
