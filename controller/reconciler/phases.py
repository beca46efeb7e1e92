"""The dispatcher: one handler per phase, each an idempotent step from what the Node says now.

A handler reads only the ``Step`` (the node as the API returned it, its desired target, the
assignment) and writes at most one PATCH, so a restart between any two calls resumes exactly
where the annotations say the node is (kopf's handler model: idempotent, restart-safe).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from controller import state as st
from controller.logs import log
from controller.reconciler.apply import applying, done, verifying
from controller.reconciler.context import Context, Step
from controller.reconciler.drain import cordoned, draining
from controller.reconciler.failed import failed
from controller.state import NodeView, Phase

Handler = Callable[[Context, Step], NodeView | None]

HANDLERS: Mapping[Phase, Handler] = {
    Phase.CORDONED: cordoned,
    Phase.DRAINING: draining,
    Phase.APPLYING: applying,
    Phase.VERIFYING: verifying,
    Phase.DONE: done,
    Phase.FAILED: failed,
}


def advance(ctx: Context, step: Step) -> NodeView | None:
    """One step of a node out of Idle; the node after the write, or None when nothing changed."""
    node = step.node
    if node.paused:
        ctx.once(
            ("node-paused", node.name, node.phase),
            logging.INFO,
            "node paused by annotation",
            node=node.name,
            phase=node.phase.value,
        )
        return None
    ctx.forget(("node-paused", node.name, node.phase))
    if node.legacy_taint:
        # Cordoned by an earlier version, which also tainted the node: the taint keeps the GPU
        # Operator's device plugin from coming back after the MIG manager stopped it, so
        # replace it by the cordon annotation before going on (the cordon stays).
        log(logging.INFO, "replacing an earlier version's taint by the cordon annotation", node=node.name)
        taints = [dict(t) for t in node.taints if t.get("key") != st.TAINT_KEY]
        return ctx.patch(node, {st.CORDONED: "true"}, spec={"taints": taints})
    if node.phase not in (Phase.DONE, Phase.FAILED):
        if not node.target:
            # A phase without a target cannot be continued; hand the node back to the scheduler.
            log(logging.WARNING, "node has a migc phase but no target; releasing it", node=node.name)
            return ctx.release(node, step.now)
        if step.retarget is not None:
            log(
                logging.INFO,
                "new target for a node in flight",
                node=node.name,
                phase=node.phase.value,
                old=node.target,
                new=step.retarget.config,
            )
    return HANDLERS[node.phase](ctx, step)


def run_chain(ctx: Context, step: Step) -> NodeView | None:
    """Steps that need no waiting (Cordoned -> Draining -> Applying when no GPU pod runs;
    Verifying -> Done -> Idle) chain within one pass, each its own write."""
    updated = None
    for _ in range(len(Phase)):
        nxt = advance(ctx, step)
        if nxt is None or nxt.phase == step.node.phase:
            return nxt or updated
        updated = nxt
        if nxt.phase == Phase.IDLE:
            break
        step = Step(nxt, step.desired, step.assignment, step.now)
    return updated
