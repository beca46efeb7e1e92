"""Phases Cordoned and Draining: wait for GPU pods to finish, then evict them (never delete)."""

from __future__ import annotations

import logging
from typing import Any

from controller import pods as podlib
from controller import state as st
from controller.errors import NotFoundError, TemporaryError
from controller.logs import log
from controller.reconciler.apply import start_apply
from controller.reconciler.context import Annotations, Context, Step
from controller.reconciler.dra import static_pool
from controller.state import NodeView, Phase

Pod = dict[str, Any]


def cordoned(ctx: Context, step: Step) -> NodeView | None:
    """Cordoned -> Draining (taking a new target along, if the assignment changed)."""
    ann: Annotations = {st.PHASE: Phase.DRAINING.value, st.PHASE_SINCE: step.t}
    if step.retarget is not None:
        ann.update(ctx.retarget_record(step.retarget, step.assignment))
    log(logging.INFO, "draining", node=step.node.name)
    return ctx.patch(step.node, ann)


def draining(ctx: Context, step: Step) -> NodeView | None:
    if step.retarget is not None:
        return ctx.patch(step.node, ctx.retarget_record(step.retarget, step.assignment))
    node, now = step.node, step.now
    if node.converged_to(node.target):
        # Nothing to change on this node (its GPU Operator labels say it carries the target
        # already): never drain it, whatever the record claims; verify and give it back.
        log(logging.INFO, "node already carries its target; not draining", node=node.name, config=node.target)
        ctx.evict.reset(node.name)
        return start_apply(ctx, step)
    pods = ctx.kube.list_pods(node.name)
    # On a static DRA node pods hold MIG devices through ResourceClaims, not limits.
    dra = static_pool(ctx.dra, step) is not None
    remaining = [p for p in pods if podlib.blocking(p, dra=dra)]
    daemons = sorted("/".join(podlib.ref(p)) for p in pods if podlib.unmanaged_gpu_daemon(p))
    since = node.since() or now
    elapsed = (now - since).total_seconds()
    if not remaining and daemons:
        # Came after admission: nothing stops them and the MIG manager would fail on them.
        if elapsed >= ctx.s.drain.grace_timeout + ctx.s.drain.eviction_timeout:
            return ctx.fail(
                node,
                f"DaemonSet pods hold GPUs: {', '.join(daemons[:10])}; add nodeSelector "
                f'{podlib.GPU_CLIENT_KEY}: "true" to their DaemonSet so that the MIG manager stops them',
                now,
            )
        ctx.once(
            ("wait-daemons", node.name, since),
            logging.WARNING,
            "waiting: GPU DaemonSet pods on the node",
            node=node.name,
            pods=daemons,
        )
        return None
    if not remaining:
        ctx.evict.reset(node.name)
        return start_apply(ctx, step)
    names = sorted("/".join(podlib.ref(p)) for p in remaining)
    if elapsed < ctx.s.drain.grace_timeout:
        ctx.once(
            ("wait-pods", node.name, since),
            logging.INFO,
            "waiting for GPU pods to finish",
            node=node.name,
            pods=names,
            grace_seconds=ctx.s.drain.grace_timeout,
        )
        return None
    if elapsed >= ctx.s.drain.grace_timeout + ctx.s.drain.eviction_timeout:
        return ctx.fail(node, f"drain timed out; GPU pods still running: {', '.join(names)}", now)
    if not ctx.evict.active(node.name):
        _evict(ctx, node, remaining)
    return None


def _evict(ctx: Context, node: NodeView, remaining: list[Pod]) -> None:
    blocked = []
    for pod in remaining:
        if podlib.terminating(pod):
            continue  # evicted already; waiting for its grace period
        ns, name = podlib.ref(pod)
        try:
            ctx.kube.evict(ns, name)
        except NotFoundError:
            ctx.metrics.evictions.labels(result="gone").inc()
            continue
        except TemporaryError as exc:
            if exc.status != 429:
                raise
            # 429 = a PodDisruptionBudget does not allow it now. Never forced: wait it out.
            ctx.metrics.evictions.labels(result="blocked").inc()
            blocked.append(f"{ns}/{name}")
            continue
        ctx.metrics.evictions.labels(result="evicted").inc()
        log(logging.INFO, "evicted", node=node.name, pod=f"{ns}/{name}")
    if blocked:
        delay = ctx.evict.bump(node.name)
        log(
            logging.INFO,
            "eviction blocked by a disruption budget; backing off",
            node=node.name,
            pods=blocked,
            retry_in=round(delay, 3),
        )
