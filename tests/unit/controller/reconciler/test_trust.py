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
    """maxUnavailable 1 + idleSurge 1: ``b``, which this controller admitted by the surge and which
    runs no GPU pod, is acted on beside ``a``; a third in-flight node waits. A node not admitted by
    the surge (``c``, or ``b`` after a restart: ``surged`` is in memory only) counts against
    maxUnavailable; without the field only one is acted on."""
    names = ("a", "b", "c")
    targets = {n: Target("a100", "whole") for n in names}
    nodes = {
        "a": _view(in_flight("a", Phase.DRAINING, "whole")),
        "b": _view(in_flight("b", Phase.APPLYING, "whole")),
        "c": _view(in_flight("c", Phase.CORDONED, "whole")),
    }
    surge = parsed(dict.fromkeys(names, "whole"), idle_surge=1)
    ctx = context(FakeKube())
    ctx.surged = {"b"}
    assert held(ctx, nodes, targets, surge) == {"c"}
    assert ctx.acting == {"a", "b"} and ctx.acting_busy == {"a"}
    ctx = context(FakeKube())  # a restart: nobody known to be a surge node
    assert held(ctx, nodes, targets, surge) == {"a", "c"}
    assert ctx.acting == {"b"}  # closest to done
    ctx = context(FakeKube())
    ctx.surged = {"b"}
    assert held(ctx, nodes, targets, parsed(dict.fromkeys(names, "whole"))) == {"a", "c"}


def test_held_caps_the_surge_as_admission_does() -> None:
    """idleSurge 5 in a pool of 3 with maxUnavailable 2: 2 + 1 acted on, never more than the pool."""
    names = ("a", "b", "c", "d")
    targets = {n: Target("a100", "whole") for n in names[:3]}
    nodes = {n: _view(in_flight(n, Phase.DRAINING, "whole")) for n in names}
    a = parsed(dict.fromkeys(names[:3], "whole"), max_unavailable=2, idle_surge=5)
    ctx = context(FakeKube())
    ctx.surged = {"c", "d"}  # d claims the pool but is not in the assignment
    assert held(ctx, nodes, targets, a) == {"d"}
    assert ctx.acting == {"a", "b", "c"}


def test_a_drained_node_keeps_counting_against_max_unavailable() -> None:
    """maxUnavailable 1 + idleSurge 1. ``n1`` was admitted in the regular slot and is Applying, its
    pods gone; ``n0``, which runs a GPU pod, is cordoned (by a human: admission takes it at no
    cost). A node whose pods have been drained is not an idle one: ``n0`` waits until ``n1`` is
    out of flight, so two busy nodes are never taken apart at once."""
    targets = {n: Target("a100", "whole") for n in ("n0", "n1")}
    nodes = {
        "n0": _view(in_flight("n0", Phase.CORDONED, "whole")),
        "n1": _view(in_flight("n1", Phase.APPLYING, "whole")),
    }
    a = parsed(dict.fromkeys(targets, "whole"), idle_surge=1)
    ctx = context(FakeKube(pods=[pod("p0", "n0")]))
    ctx.acting = ctx.acting_busy = {"n1"}
    assert held(ctx, nodes, targets, a) == {"n0"}
    nodes["n1"] = _view(node("n1"))
    assert held(ctx, nodes, targets, a) == set()


def test_a_surge_node_that_turns_busy_takes_no_slot_from_a_drain() -> None:
    """maxUnavailable 1 + idleSurge 1: ``a`` holds the slot and drains; ``s`` was admitted by the
    surge, but a GPU pod was bound to it after admission listed the pods (a direct nodeName, a
    static pod). ``s`` now counts against maxUnavailable, and ``a``, which held that slot, keeps
    it: ``s`` waits cordoned (closer to done though it is) until ``a`` is back; when its own pod
    list fails it is treated as busy too."""
    targets = {n: Target("a100", "whole") for n in ("a", "s")}
    nodes = {
        "a": _view(in_flight("a", Phase.DRAINING, "whole")),
        "s": _view(in_flight("s", Phase.APPLYING, "whole")),
    }
    a = parsed(dict.fromkeys(targets, "whole"), idle_surge=1)
    kube = FakeKube(pods=[pod("pa", "a")])
    ctx = context(kube)
    ctx.acting, ctx.acting_busy, ctx.surged = {"a", "s"}, {"a"}, {"s"}
    assert held(ctx, nodes, targets, a) == set()  # s still idle: both acted on
    kube.pods.append(pod("ps", "s"))
    assert held(ctx, nodes, targets, a) == {"s"}
    assert ctx.acting == ctx.acting_busy == {"a"}
    # a claim only through a ResourceClaim is a pod a drain waits for too (pods.blocking with DRA)
    claim = pod("pc", "s", resource=None)
    claim["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "s-gpu"}]
    kube.pods = [pod("pa", "a"), claim]
    assert held(ctx, nodes, targets, a) == {"s"}
    nodes["a"] = _view(node("a"))  # a is back: s takes the slot, and drains its pod there
    assert held(ctx, nodes, targets, a) == set() and ctx.acting_busy == {"s"}


def test_a_surge_node_whose_pods_cannot_be_listed_counts_as_busy() -> None:
    """Where a surge node's pod list fails, it is not known to be idle: it counts against
    maxUnavailable (one slot, taken by ``a``, which held it), it is not acted on."""
    from controller.errors import ControllerError

    targets = {n: Target("a100", "whole") for n in ("a", "s")}
    nodes = {n: _view(in_flight(n, Phase.DRAINING, "whole")) for n in ("a", "s")}
    kube = FakeKube()

    def refuse(node: str | None = None) -> list[dict[str, object]]:
        raise ControllerError("list pods: 500")

    kube.list_pods = refuse  # type: ignore[method-assign]
    ctx = context(kube)
    ctx.acting, ctx.acting_busy, ctx.surged = {"a", "s"}, {"a"}, {"s"}
    assert held(ctx, nodes, targets, parsed(dict.fromkeys(targets, "whole"), idle_surge=1)) == {"s"}
