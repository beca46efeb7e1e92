"""controller/reconciler/trust.py: records migc cannot have written, and the per-pool budget."""

from __future__ import annotations

import datetime as dt

from controller import state as st
from controller.assignment import Target
from controller.reconciler.trust import SKEW, future_since, held, untrusted
from controller.state import NodeView, Phase
from unit.controller.support import NOW, FakeKube, context, in_flight, node, parsed, pod


def _view(obj: dict[str, object]) -> NodeView:
    return NodeView.from_obj(obj)


def test_untrusted() -> None:
    assert untrusted(_view(in_flight("n", Phase.DRAINING, "whole"))) is None
    forged = in_flight("n", Phase.APPLYING, "whole")
    forged["spec"] = {}
    why = untrusted(_view(forged))
    assert why is not None and "not cordoned" in why
    no_target = in_flight("n", Phase.VERIFYING, "whole")
    del no_target["metadata"]["annotations"][st.TARGET]
    assert "without migc.dev/target-config" in (untrusted(_view(no_target)) or "")
    tainted = in_flight("n", Phase.DRAINING, "whole")
    tainted["spec"] = {"taints": [{"key": st.TAINT_KEY, "effect": "NoSchedule"}]}
    assert untrusted(_view(tainted)) is None  # an earlier version's cordon
    # Done and Failed are written without a cordon too (a failure found before cordoning).
    assert untrusted(_view(node("n", annotations={st.PHASE: "Failed"}))) is None
    assert untrusted(_view(node("n"))) is None


def test_future_since_tolerates_clock_skew() -> None:
    def at(t: dt.datetime, phase: Phase = Phase.DRAINING) -> NodeView:
        return _view(in_flight("n", phase, "whole", since=t))

    assert not future_since(at(NOW + SKEW), NOW)
    assert future_since(at(NOW + SKEW + dt.timedelta(seconds=1)), NOW)
    idle = _view(node("n", annotations={st.PHASE_SINCE: st.fmt_time(NOW + dt.timedelta(days=1))}))
    assert not future_since(idle, NOW)


def test_held_acts_on_max_unavailable_per_pool_closest_to_done_first() -> None:
    a = parsed({"v": "whole", "c": "whole", "d": "whole", "f": "whole"}, max_unavailable=2)
    targets = {n: Target("a100", "whole") for n in ("v", "c", "d", "f")}
    nodes = {
        "c": _view(in_flight("c", Phase.CORDONED, "whole")),
        "d": _view(in_flight("d", Phase.DRAINING, "whole")),
        "f": _view(in_flight("f", Phase.FAILED, "whole")),
        "v": _view(in_flight("v", Phase.VERIFYING, "whole")),
    }
    ctx = context(FakeKube())
    assert held(ctx, nodes, targets, a) == {"c", "d"}  # Verifying, then a cordoned Failed node
    assert ctx.acting == {"v", "f"}
    # v finishes; the next pass keeps f and takes the next closest, d.
    nodes["v"] = _view(node("v"))
    assert held(ctx, nodes, targets, a) == {"c"}
    assert ctx.acting == {"f", "d"}


def test_the_rank_with_one_slot() -> None:
    a = parsed({n: "whole" for n in "vafdc"}, max_unavailable=1)
    targets = {n: Target("a100", "whole") for n in "vafdc"}
    order = [("v", Phase.VERIFYING), ("a", Phase.APPLYING), ("f", Phase.FAILED), ("d", Phase.DRAINING)]
    nodes = {"c": _view(in_flight("c", Phase.CORDONED, "whole"))}
    # Add the phases closest to done last: each one added takes the single slot.
    for name, phase in reversed(order):
        nodes[name] = _view(in_flight(name, phase, "whole"))
        ctx = context(FakeKube())
        held(ctx, nodes, targets, a)
        assert ctx.acting == {name}, phase


def test_nodes_acted_on_keep_their_slots() -> None:
    a = parsed({"x": "whole", "y": "whole"}, max_unavailable=1)
    targets = {n: Target("a100", "whole") for n in ("x", "y")}
    ctx = context(FakeKube())
    ctx.acting = {"y"}  # y was being drained last pass
    nodes = {
        "x": _view(in_flight("x", Phase.VERIFYING, "whole")),  # a forged claim, closer to done
        "y": _view(in_flight("y", Phase.DRAINING, "whole")),
    }
    assert held(ctx, nodes, targets, a) == {"x"}


def test_a_pool_the_assignment_does_not_name_gets_one_slot() -> None:
    nodes = {n: _view(in_flight(n, Phase.DRAINING, "whole", extra={st.POOL: "gone"})) for n in ("p", "q")}
    nodes["idle"] = _view(node("idle"))
    nodes["uncordoned-failed"] = _view(node("uncordoned-failed", annotations={st.PHASE: "Failed"}))
    ctx = context(FakeKube())
    assert held(ctx, nodes, {}, None) == {"q"}  # name order breaks the tie; the others are not in flight


def test_held_leaves_room_for_the_idle_surge() -> None:
    """maxUnavailable 1 + idleSurge 1: two in-flight nodes are acted on (the one admitted by the
    surge is not parked), a third waits; without the field only one is acted on."""
    names = ("a", "b", "c")
    targets = {n: Target("a100", "whole") for n in names}
    nodes = {
        "a": _view(in_flight("a", Phase.DRAINING, "whole")),
        "b": _view(in_flight("b", Phase.APPLYING, "whole")),
        "c": _view(in_flight("c", Phase.CORDONED, "whole")),
    }
    ctx = context(FakeKube())
    assert held(ctx, nodes, targets, parsed(dict.fromkeys(names, "whole"), idle_surge=1)) == {"c"}
    assert ctx.acting == {"a", "b"}
    ctx = context(FakeKube())
    assert held(ctx, nodes, targets, parsed(dict.fromkeys(names, "whole"))) == {"a", "c"}
    assert ctx.acting == {"b"}  # closest to done


def test_held_caps_the_surge_as_admission_does() -> None:
    """idleSurge 5 in a pool of 3 with maxUnavailable 2: 2 + 1 acted on, never more than the pool."""
    names = ("a", "b", "c")
    targets = {n: Target("a100", "whole") for n in names}
    nodes = {n: _view(in_flight(n, Phase.DRAINING, "whole")) for n in names}
    nodes["x"] = _view(in_flight("x", Phase.DRAINING, "whole"))  # claims the pool; not in the assignment
    a = parsed(dict.fromkeys(names, "whole"), max_unavailable=2, idle_surge=5)
    ctx = context(FakeKube())
    assert held(ctx, nodes, targets, a) == {"x"}
    assert ctx.acting == {"a", "b", "c"}


def test_the_surge_slots_never_drain_more_busy_nodes_than_max_unavailable() -> None:
    """maxUnavailable 1 + idleSurge 1, three in-flight nodes: ``a`` and ``b`` Draining with a GPU pod
    on each (a record someone wrote, or a pod bound to a surge node after admission listed the
    pods), ``c`` Applying with none. Of the two slots only one may go to a node a drain would evict
    from: ``a`` and ``c`` are acted on, ``b`` waits cordoned. Once ``a``'s pod is gone it no longer
    counts as busy and ``b`` still waits (two slots: ``a``, ``c``); with ``a`` back, ``b`` goes."""
    names = ("a", "b", "c")
    targets = {n: Target("a100", "whole") for n in names}
    nodes = {
        "a": _view(in_flight("a", Phase.DRAINING, "whole")),
        "b": _view(in_flight("b", Phase.DRAINING, "whole")),
        "c": _view(in_flight("c", Phase.APPLYING, "whole")),
    }
    a = parsed(dict.fromkeys(names, "whole"), idle_surge=1)
    kube = FakeKube(pods=[pod("pa", "a"), pod("pb", "b")])
    ctx = context(kube)
    assert held(ctx, nodes, targets, a) == {"b"}
    assert ctx.acting == {"a", "c"}
    kube.pods = [pod("pb", "b")]
    assert held(ctx, nodes, targets, a) == {"b"}
    nodes["a"] = _view(node("a"))
    assert held(ctx, nodes, targets, a) == set()
    assert ctx.acting == {"b", "c"}
    # a claim only through a ResourceClaim counts as busy too (pods.blocking with DRA)
    claim = pod("pc", "c", resource=None)
    claim["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "c-gpu"}]
    kube.pods = [pod("pb", "b"), claim]
    ctx = context(kube)
    assert held(ctx, nodes, targets, a) == {"b"}  # both busy, one slot: c, closer to done (Applying)
    assert ctx.acting == {"c"}
