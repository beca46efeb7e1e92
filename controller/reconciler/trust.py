"""What the controller believes of a node's migc.dev/* record, and how many nodes it acts on.

The record lives in Node annotations so that a restarted controller resumes where the last one
stopped; but anything that may patch Nodes (a kubelet on its own node, a labelling DaemonSet, a
human with ``kubectl annotate``) can write it too. So the record is never trusted on its own:

* a phase migc writes only in the same PATCH as a cordon (Cordoned, Draining, Applying,
  Verifying) on a node that is not cordoned, or without a target, was not written by migc: the
  record is reset to Idle and reported (Warning Event ``MigcStateReset``), never acted on;
* a ``phase-since`` in the future is set to now (it would otherwise hold every timeout off);
* per pool, at most ``maxUnavailable`` + ``idleSurge`` nodes in a cordoned phase are acted on
  (drained, relabelled, verified, retried) in one pass, whatever their annotations say; the others
  wait. The idleSurge slots go only to the nodes this controller admitted beyond maxUnavailable
  because they ran no GPU pod (admission.py; ``Context.surged``, in memory only, so nothing
  forged can claim one, and after a restart there are none) and that still run no pod a drain
  would wait for (``pods.blocking``, with DRA claims, from the node's own pod list). Every other
  in-flight node — one whose pods were drained included — counts against ``maxUnavailable``, the
  ones that held such a slot last pass first, so a node mid-drain is never parked for a surge
  node that turned busy, and never more busy nodes are taken apart at once than maxUnavailable. The
  nodes acted on in the last pass keep their slots while they stay in flight: the ranking below
  changes as a node moves (Failed -> Draining on a retry, Verifying -> Failed) and reads a
  forgeable ``started-at``, so a choice made afresh each pass could park a node already drained
  or relabelled and start another, more than the budget taken apart at once;
* a node that already carries its target (``NodeView.converged_to``) is never drained
  (``drain.draining``), and a rollback claim on a node that carries the assignment's config is
  ignored (``Step.retarget``).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping

from controller import pods as podlib
from controller import state as st
from controller.assignment import Assignment, Target
from controller.errors import ControllerError
from controller.reconciler.admission import idle_surge, max_unavailable, pool_of
from controller.reconciler.context import Context
from controller.state import NodeView, Phase

# Clock skew tolerated between controller replicas before a phase-since counts as "future".
SKEW = dt.timedelta(seconds=60)

# Which in-flight nodes go first when more claim a phase than the budget allows: the ones
# closest to giving the node back. A cordoned Failed node holds its slot before any node that
# is still to be drained: it is out because of a change, like one in flight.
_RANK = {Phase.VERIFYING: 0, Phase.APPLYING: 1, Phase.FAILED: 2, Phase.DRAINING: 3, Phase.CORDONED: 4}


def untrusted(node: NodeView) -> str | None:
    """Why ``node``'s phase cannot have been written by migc, else None."""
    phase = node.phase
    if phase in st.CORDONED_PHASES and not (node.unschedulable or node.legacy_taint):
        return (
            f"phase {phase.value} on a node that is not cordoned (migc writes it only together with "
            "spec.unschedulable=true)"
        )
    if phase in st.CORDONED_PHASES and not node.target:
        return f"phase {phase.value} without {st.TARGET}"
    return None


def _still_idle(ctx: Context, name: str) -> bool:
    """Whether a node admitted by the idle surge still runs no pod a drain would wait for
    (``pods.blocking`` with DRA claims), from its own pod list; where that list fails, not."""
    try:
        pods = ctx.kube.list_pods(node=name)
    except ControllerError:
        return False
    return not any(isinstance(p, dict) and podlib.blocking(p, dra=True) for p in pods)


def future_since(node: NodeView, now: dt.datetime) -> bool:
    since = node.since()
    return node.phase != Phase.IDLE and since is not None and since > now + SKEW


def held(
    ctx: Context,
    nodes: Mapping[str, NodeView],
    targets: Mapping[str, Target],
    assignment: Assignment | None,
) -> set[str]:
    """The cordoned in-flight nodes the controller does NOT act on this pass: per pool it acts
    on at most its maxUnavailable (a pool the assignment does not name: one) of the nodes that
    count against it — the ones that held such a slot last pass (``ctx.acting_busy``) first, then
    the ones it acted on (``ctx.acting``), then the nodes closest to done — plus up to its
    idleSurge (capped as admission caps it) of the nodes it admitted by the surge
    (``ctx.surged``) that still run no pod a drain waits for; the rest wait. Updates
    ``ctx.acting`` and ``ctx.acting_busy``, and forgets the surge nodes no longer in flight."""
    by_pool: dict[str | None, list[tuple[bool, int, str, str]]] = {}
    for name, n in nodes.items():
        if n.phase in _RANK and (n.unschedulable or n.legacy_taint):
            key = (name not in ctx.acting, _RANK[n.phase], n.annotations.get(st.STARTED_AT, ""), name)
            by_pool.setdefault(pool_of(name, n, targets), []).append(key)
    pools = {p.name: p for p in assignment.pools} if assignment is not None else {}
    over: set[str] = set()
    acting: set[str] = set()
    acting_busy: set[str] = set()
    flying = {name for ranked in by_pool.values() for *_, name in ranked}
    ctx.surged &= flying  # a surge node back in Idle (or gone) is one no more
    for pool_name, ranked in by_pool.items():
        pool = pools.get(pool_name or "")
        most, surge = (
            (max_unavailable(ctx, pool, targets, assignment), idle_surge(ctx, pool, targets, assignment))
            if pool and assignment
            else (1, 0)
        )
        ranked.sort()
        names = [name for *_, name in ranked]
        # the surge's slots go only to nodes this controller admitted by it that still run no pod a
        # drain waits for; every other node counts against maxUnavailable, the ones that held such a
        # slot last pass first (a node mid-drain is never parked for one that turned busy)
        idle = [n for n in names if n in ctx.surged and _still_idle(ctx, n)] if surge else []
        counted = sorted((n for n in names if n not in idle), key=lambda n: n not in ctx.acting_busy)
        taken = counted[:most] + idle[:surge]
        acting_busy.update(counted[:most])
        acting.update(taken)
        for name in names:
            if name in acting:
                continue
            over.add(name)
            ctx.once(
                ("held", name, nodes[name].phase, assignment.revision if assignment else None),
                logging.WARNING,
                "more nodes claim a migc phase than the pool's maxUnavailable (+ idleSurge); "
                "not acting on this one",
                node=name,
                pool=pool_name,
                phase=nodes[name].phase.value,
                max_unavailable=most,
                idle_surge=surge,
            )
    ctx.acting = acting
    ctx.acting_busy = acting_busy
    return over
