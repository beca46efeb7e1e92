"""controller/reconciler/phases.py: the dispatcher and the chain of steps that need no waiting."""

from __future__ import annotations

from controller import state as st
from controller.assignment import Target
from controller.reconciler.context import Step
from controller.reconciler.phases import HANDLERS, advance, run_chain
from controller.state import NodeView, Phase
from unit.controller.support import NOW, FakeKube, context, in_flight, parsed

A = parsed({"n0": "all-1g.10gb"})
T = Target("a100", "all-1g.10gb")
OK = {"nvidia.com/mig-1g.10gb": "14"}
DONE_LABELS = {st.MIG_CONFIG: "all-1g.10gb", st.MIG_STATE: "success"}


def test_every_phase_but_idle_has_a_handler() -> None:
    assert set(HANDLERS) == set(Phase) - {Phase.IDLE}


def test_a_paused_node_is_left_alone() -> None:
    obj = in_flight("n0", Phase.DRAINING, "all-1g.10gb", extra={st.PAUSED: "true"})
    kube = FakeKube([obj])
    assert advance(context(kube), Step(NodeView.from_obj(obj), T, A, NOW)) is None
    assert kube.writes == []


def test_an_earlier_versions_taint_is_replaced_by_the_annotation_first() -> None:
    obj = in_flight("n0", Phase.DRAINING, "all-1g.10gb")
    obj["spec"]["taints"] = [
        {"key": st.TAINT_KEY, "effect": "NoSchedule"},
        {"key": "gpu", "effect": "NoSchedule"},
    ]
    kube = FakeKube([obj])
    out = advance(context(kube), Step(NodeView.from_obj(obj), T, A, NOW))
    assert out is not None and out.phase == Phase.DRAINING and out.unschedulable
    assert [t["key"] for t in out.taints] == ["gpu"] and out.cordoned_by_migc


def test_a_phase_without_a_target_is_released() -> None:
    obj = in_flight("n0", Phase.APPLYING, "all-1g.10gb")
    del obj["metadata"]["annotations"][st.TARGET]
    kube = FakeKube([obj])
    out = advance(context(kube), Step(NodeView.from_obj(obj), T, A, NOW))
    assert out is not None and out.phase == Phase.DONE and not out.unschedulable


def test_verified_node_chains_to_idle_in_one_call() -> None:
    obj = in_flight("n0", Phase.VERIFYING, "all-1g.10gb", labels=DONE_LABELS, allocatable=OK)
    kube = FakeKube([obj])
    out = run_chain(context(kube), Step(NodeView.from_obj(obj), T, A, NOW))
    assert out is not None and out.phase == Phase.IDLE and not out.unschedulable
    phases = [w["metadata"]["annotations"][st.PHASE] for w in kube.node_writes()]
    assert phases == ["Done", "Idle"]  # each step its own write


def test_the_chain_stops_where_it_has_to_wait() -> None:
    obj = in_flight(
        "n0", Phase.APPLYING, "all-1g.10gb", labels={st.MIG_CONFIG: "all-1g.10gb", st.MIG_STATE: "pending"}
    )
    kube = FakeKube([obj])
    assert run_chain(context(kube), Step(NodeView.from_obj(obj), T, A, NOW)) is None
    assert kube.writes == []
    # MIG manager done but allocatable not there yet: Applying -> Verifying, then it waits.
    obj = in_flight("n0", Phase.APPLYING, "all-1g.10gb", labels=DONE_LABELS)
    kube = FakeKube([obj])
    out = run_chain(context(kube), Step(NodeView.from_obj(obj), T, A, NOW))
    assert out is not None and out.phase == Phase.VERIFYING and len(kube.writes) == 1
