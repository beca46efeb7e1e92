"""Phase Failed: wait for a human (retry / rollback annotations), a new revision, or the backoff."""

from __future__ import annotations

import logging
from typing import Any

from controller import state as st
from controller.logs import log
from controller.reconciler.context import Annotations, Context, Step, incompatible
from controller.state import NodeView, Phase


def failed(ctx: Context, step: Step) -> NodeView | None:
    node, now = step.node, step.now
    restart: Annotations = {st.PHASE: Phase.DRAINING.value, st.PHASE_SINCE: step.t, st.RETRY_AFTER: None}
    spec: dict[str, Any] | None = None
    if not (node.unschedulable or node.legacy_taint):
        # Failed before it was cordoned (a permanent error found at admission, or a Failed
        # record someone else wrote): a restart goes back to Idle, so that admission decides
        # again -- the maintenance window, the pool's budget and the checks -- and only
        # admission ever cordons a node.
        return _uncordoned(ctx, step)
    if node.wants_rollback:
        return _rollback(ctx, node, restart, spec)
    if node.wants_retry:
        reason = incompatible(node, step.config)
        if reason is not None:
            # Cordoning and draining again would end the same way: fail again at once.
            return ctx.fail(node, reason, now, permanent=True, extra={st.RETRY: None, st.ATTEMPTS: "0"})
        log(logging.INFO, "retrying on request", node=node.name, config=node.target)
        return ctx.patch(node, {**restart, st.RETRY: None, st.ATTEMPTS: "0"}, spec=spec)
    desired = step.retarget
    if desired is not None:
        record = ctx.retarget_record(desired, step.assignment)
        assignment = step.assignment
        reason = incompatible(node, assignment.configs.get(desired.config) if assignment else None)
        if reason is not None:
            return ctx.fail(node, reason, now, permanent=True, extra=record)
        log(logging.INFO, "new revision re-targets a failed node", node=node.name, to=desired.config)
        return ctx.patch(node, {**restart, **record}, spec=spec)
    retry_after = node.since(st.RETRY_AFTER)
    if node.attempts < ctx.s.failures.max_attempts and retry_after is not None and now >= retry_after:
        log(logging.INFO, "automatic retry after backoff", node=node.name, attempt=node.attempts + 1)
        return ctx.patch(node, restart, spec=spec)
    return None


def _rollback(ctx: Context, node: NodeView, restart: Annotations, spec: dict[str, Any] | None) -> NodeView:
    previous = node.annotations.get(st.PREVIOUS)
    if not previous:
        log(logging.ERROR, "rollback requested but no previous config is recorded", node=node.name)
        return ctx.patch(
            node,
            {st.ROLLBACK: None, st.LAST_ERROR: "rollback requested but no previous config is recorded"},
        )
    log(logging.INFO, "rolling back on request", node=node.name, to=previous, abandoned=node.target)
    # Hold the node at the previous config until the assignment's revision changes.
    return ctx.patch(
        node,
        {
            **restart,
            st.ROLLBACK: None,
            st.RETRY: None,
            st.TARGET: previous,
            st.ROLLING_BACK: "true",
            st.ATTEMPTS: "0",
            st.HELD_REVISION: node.annotations.get(st.REVISION),
        },
        spec=spec,
    )


def _uncordoned(ctx: Context, step: Step) -> NodeView | None:
    node = step.node
    retry_after = node.since(st.RETRY_AFTER)
    due = node.attempts < ctx.s.failures.max_attempts and retry_after is not None and step.now >= retry_after
    if not (node.wants_rollback or node.wants_retry or step.retarget is not None or due):
        return None
    ann: Annotations = dict.fromkeys(st.TRANSIENT)
    ann.update({st.PHASE: Phase.IDLE.value, st.PHASE_SINCE: step.t, st.RETRY: None, st.ROLLBACK: None})
    if node.wants_rollback:
        # Nothing was changed on the node: "back" is where it is; hold it there.
        ann[st.HELD_REVISION] = node.annotations.get(st.REVISION)
    log(logging.INFO, "failed node was never cordoned; handing it back to admission", node=node.name)
    return ctx.patch(node, ann)
