"""One reconciliation pass: read everything, move each node at most one chain of steps, admit new nodes.

The pass is level-triggered and idempotent: it derives every decision from what the API server
returns now (the assignment ConfigMap, Node labels/annotations/taints, pods), never from memory.
Memory holds only backoff timers, "already logged" markers and which in-flight nodes the last
pass acted on (``Context.acting``: they keep their budget slots, see ``trust.held``). Losing it (a
restart, a new leader) changes timing, and which of more in-flight claims than ``maxUnavailable``
go first: a fresh controller ranks them by phase alone.

Per node (annotations ``migc.dev/*``)::

    Idle -> Cordoned -> Draining -> Applying -> Verifying -> Done -> Idle
                            \\__________\\___________\\_____-> Failed

Crash-safety rule: every write that changes what the node *is* (cordon, label, uncordon) carries
the matching phase annotation in the same PATCH, so no state exists in which a node is cordoned
or relabelled without migc's record of it.

Errors follow the taxonomy in ``controller.errors``: a temporary error backs the node off and is
retried; a permanent one is logged at ERROR and retried only after the same backoff (the next
read may differ); an unexpected exception in one node's step is contained to that node.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping

from controller import state as st
from controller.assignment import Target, resolve
from controller.errors import ControllerError, NotFoundError, TemporaryError
from controller.kube import Kube
from controller.logs import log
from controller.metrics import Health, Metrics
from controller.reconciler.admission import Admission
from controller.reconciler.context import Context, Step
from controller.reconciler.dryrun import dry_run
from controller.reconciler.phases import run_chain
from controller.reconciler.source import AssignmentSource, DraPlanSource, Loaded
from controller.reconciler.trust import future_since, held, untrusted
from controller.settings import Settings
from controller.state import NodeView, Phase


class Reconciler:
    def __init__(
        self,
        kube: Kube,
        settings: Settings,
        metrics: Metrics,
        clock: Callable[[], dt.datetime],
        health: Health | None = None,
    ) -> None:
        self.ctx = Context(kube, settings, metrics, clock)
        self.source = AssignmentSource(self.ctx)
        self.dra_source = DraPlanSource(self.ctx)
        self.health = health
        self.busy = False

    def reconcile_once(self) -> None:
        ctx = self.ctx
        now = ctx.clock()
        loaded = self.source.load(now)
        dra = self.dra_source.load(now)
        ctx.dra = dra.plan
        for mode in ("static", "dynamic"):
            count = sum(1 for p in dra.plan.pools if p.mig == mode) if dra.plan is not None else 0
            ctx.metrics.dra_pools.labels(mig=mode).set(count)
        nodes = {n.name: n for n in map(NodeView.from_obj, ctx.kube.list_nodes())}
        if self.health is not None:
            self.health.api_ok()
        targets = self._targets(loaded, nodes)
        self._gauges(nodes, targets)
        if ctx.metrics.pending_due(ctx.s.loop.resync_interval):
            ctx.metrics.observe_pods(ctx.kube.list_pods())  # GPU pods' pending time, at most once a resync
        if ctx.s.dry_run:
            self.busy = False
            dry_run(ctx, nodes, targets, loaded.assignment if loaded.valid else None, loaded.paused, now)
            return
        self._distrust(nodes, now)
        over = held(ctx, nodes, targets, loaded.assignment)
        for name in sorted(nodes):
            n = nodes[name]
            if n.phase == Phase.IDLE or ctx.retry.active(name) or name in over:
                continue  # ``over``: beyond the pool's budget, waits until others finish
            self._continue(nodes, name, Step(n, targets.get(name), loaded.assignment, now))
        assignment = loaded.assignment
        if assignment is not None and loaded.valid and dra.valid:
            if loaded.paused:
                ctx.once(
                    ("paused", assignment.revision),
                    logging.INFO,
                    "rollout paused by annotation on the assignment",
                    annotation=st.PAUSED,
                )
            else:
                ctx.forget(("paused", assignment.revision))
                Admission(ctx, nodes, targets, assignment, now).run()
        self.busy = any(n.phase != Phase.IDLE for n in nodes.values())
        self._gauges(nodes, targets)

    def _distrust(self, nodes: dict[str, NodeView], now: dt.datetime) -> None:
        """Reset every record that does not follow from the node's real state (trust.py)."""
        ctx = self.ctx
        for name in sorted(nodes):
            n = nodes[name]
            try:
                why = untrusted(n)
                if why is not None:
                    nodes[name] = ctx.reset(n, why, now)
                elif future_since(n, now):
                    log(logging.WARNING, "phase-since is in the future; restarting its clock", node=name)
                    nodes[name] = ctx.patch(n, {st.PHASE_SINCE: st.fmt_time(now)})
            except NotFoundError:
                continue
            except ControllerError as exc:
                ctx.retry.bump(name)
                log(logging.WARNING, "could not reset node record; will retry", node=name, error=str(exc))

    def _targets(self, loaded: Loaded, nodes: Mapping[str, NodeView]) -> dict[str, Target]:
        if loaded.assignment is None or not loaded.valid:
            return {}
        carried = {
            n.name: (n.target if n.phase != Phase.IDLE and n.target else n.current_config) or ""
            for n in nodes.values()
        }
        resolved = resolve(loaded.assignment, {n: v.labels for n, v in nodes.items()}, carried)
        return {k: v for k, v in resolved.items() if k in nodes}

    def _continue(self, nodes: dict[str, NodeView], name: str, step: Step) -> None:
        ctx = self.ctx
        try:
            updated = run_chain(ctx, step)
        except NotFoundError:
            return  # the node was deleted under us
        except Exception as exc:
            # Temporary errors are expected (conflicts, throttling); anything else is logged at
            # ERROR. Either way only this node backs off: one bad step never stops the pass.
            delay = ctx.retry.bump(name)
            level = logging.WARNING if isinstance(exc, TemporaryError) else logging.ERROR
            log(
                level,
                "step failed; will retry",
                node=name,
                phase=step.node.phase.value,
                error=str(exc) if isinstance(exc, TemporaryError) else f"{type(exc).__name__}: {exc}",
                retry_in=round(delay, 3),
            )
            return
        ctx.retry.reset_delay(name)
        if updated is not None:
            nodes[name] = updated

    def _gauges(self, nodes: Mapping[str, NodeView], targets: Mapping[str, Target]) -> None:
        counts = dict.fromkeys(Phase, 0)
        for name, n in nodes.items():
            if name in targets or n.phase != Phase.IDLE:
                counts[n.phase] += 1
        metrics = self.ctx.metrics
        for phase, c in counts.items():
            metrics.nodes.labels(phase=phase.value).set(c)
        metrics.drift.set(sum(1 for name, t in targets.items() if not nodes[name].converged_to(t.config)))
