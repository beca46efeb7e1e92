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
  wait. The idleSurge slots are there for the nodes admission took out beyond maxUnavailable
  because they ran no GPU pod (admission.py), so of the nodes acted on at most ``maxUnavailable``
  run a pod a drain would wait for (``pods.blocking``, with DRA claims): a forged or inherited
  record, or a pod bound to a surge node after admission listed the pods, never has more busy
  nodes drained at once than ``maxUnavailable`` — such a node waits, cordoned, for a slot. The
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


def _busy_nodes(ctx: Context) -> set[str]:
    """The nodes running a pod a drain would wait for (``pods.blocking`` with DRA claims, as the
    admission's idle surge reads them)."""
    out = set()
    for pod in ctx.kube.list_pods():
        node = (pod.get("spec") or {}).get("nodeName")
        if node and podlib.blocking(pod, dra=True):
            out.add(node)
    return out


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
    on at most its maxUnavailable plus its idleSurge, both capped as admission caps them (a pool
    the assignment does not name: one), so that a node admitted by the surge is not parked: first
    the ones it acted on in its last pass (``ctx.acting``), then the nodes closest to done; the
    rest wait; of those acted on, at most maxUnavailable run a pod a drain would wait for (the pods
    are listed only where a pool has more in flight than its maxUnavailable). Updates
    ``ctx.acting`` to the nodes acted on now."""
    by_pool: dict[str | None, list[tuple[bool, int, str, str]]] = {}
    for name, n in nodes.items():
        if n.phase in _RANK and (n.unschedulable or n.legacy_taint):
            key = (name not in ctx.acting, _RANK[n.phase], n.annotations.get(st.STARTED_AT, ""), name)
            by_pool.setdefault(pool_of(name, n, targets), []).append(key)
    pools = {p.name: p for p in assignment.pools} if assignment is not None else {}
    over: set[str] = set()
    acting: set[str] = set()
    busy: set[str] | None = None  # nodes running a pod a drain waits for, listed once if needed
    for pool_name, ranked in by_pool.items():
        pool = pools.get(pool_name or "")
        most, surge = (
            (max_unavailable(ctx, pool, targets, assignment), idle_surge(ctx, pool, targets, assignment))
            if pool and assignment
            else (1, 0)
        )
        limit = most + surge
        ranked.sort()
        if len(ranked) > most and busy is None:
            busy = _busy_nodes(ctx)
        taken: list[str] = []
        busy_taken = 0
        for *_, name in ranked:
            is_busy = busy is not None and name in busy
            if len(taken) < limit and not (is_busy and busy_taken >= most):
                taken.append(name)
                busy_taken += is_busy
        acting.update(taken)
        for *_, name in ranked:
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
    return over
