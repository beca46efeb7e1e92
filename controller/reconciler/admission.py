"""Admission: which Idle nodes start a reconfiguration now (budget, windows, checks), and the cordon.

The budget of a pool is its ``maxUnavailable`` nodes out of Idle (``out_nodes``), plus its
``idleSurge``: up to that many more nodes, but only ones that run no GPU pod when they are admitted
(their re-carve evicts nothing), so that a node draining a busy node or sitting Failed does not hold
an idle GPU back from a pending pod. A node with GPU pods is never admitted beyond maxUnavailable.
The nodes out are counted from the Node objects each pass, so a restarted controller keeps to both.

Nothing here touches a node that cannot finish: a target config the MIG manager does not know (not
in the mig-parted ConfigMap) is refused with an Event, a metric and a log line, and the node keeps
running untouched until the ConfigMap has it.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping

from controller import pods as podlib
from controller import state as st
from controller.assignment import Assignment, Pool, Target
from controller.errors import ControllerError, NotFoundError
from controller.logs import log
from controller.reconciler.context import Annotations, Context, device_plugin_only, incompatible
from controller.reconciler.dra import dynamic_conflict, missing_node_labels, unverifiable
from controller.reconciler.migparted import MigPartedError, device_plugin_names
from controller.state import NodeView, Phase


def candidates(
    nodes: Mapping[str, NodeView], targets: Mapping[str, Target], assignment: Assignment, pool: str
) -> list[str]:
    out = []
    for name, t in sorted(targets.items()):
        n = nodes[name]
        if (
            t.pool == pool
            and n.phase == Phase.IDLE
            and not n.converged_to(t.config)
            and not n.paused
            and n.annotations.get(st.HELD_REVISION) != assignment.revision
        ):
            out.append(name)
    return out


def pool_of(name: str, node: NodeView, targets: Mapping[str, Target]) -> str | None:
    """The pool a node counts against: the assignment's, else the one migc recorded on it."""
    if name in targets:
        return targets[name].pool
    return node.annotations.get(st.POOL)


def out_of_service(node: NodeView) -> bool:
    """Whether the node is out of service, by its real state or by a migc phase that holds it.

    Counted whatever the migc.dev/* annotations claim: a cordon (anyone's: a node a human
    cordoned is out as surely as one migc cordoned), a phase migc writes only with a cordon,
    and a MIG manager that says it is reconfiguring the node (state pending or rebooting).
    """
    return node.unschedulable or node.legacy_taint or node.phase in st.CORDONED_PHASES or node.mig_busy


def out_nodes(nodes: Mapping[str, NodeView], targets: Mapping[str, Target], pool: str) -> set[str]:
    # Counted from the Node objects (not from memory), so the budget holds across restarts.
    return {name for name, n in nodes.items() if pool_of(name, n, targets) == pool and out_of_service(n)}


def pool_size(pool: Pool, targets: Mapping[str, Target]) -> int:
    return sum(1 for t in targets.values() if t.pool == pool.name)


def max_unavailable(ctx: Context, pool: Pool, targets: Mapping[str, Target], assignment: Assignment) -> int:
    """The pool's maxUnavailable, capped at the number of nodes the pool has."""
    size = pool_size(pool, targets)
    if pool.max_unavailable > size:
        ctx.once(
            ("cap", pool.name, assignment.revision, size),
            logging.WARNING,
            "maxUnavailable is larger than the pool; capped at the pool size",
            pool=pool.name,
            max_unavailable=pool.max_unavailable,
            nodes=size,
        )
    return max(1, min(pool.max_unavailable, size))


def idle_surge(ctx: Context, pool: Pool, targets: Mapping[str, Target], assignment: Assignment) -> int:
    """The pool's idleSurge, capped so that maxUnavailable (capped) plus it is at most the number of
    nodes the pool has; never negative."""
    room = pool_size(pool, targets) - max_unavailable(ctx, pool, targets, assignment)
    if pool.idle_surge > room:
        ctx.once(  # DEBUG: harmless, and every pool with maxUnavailable = its size would say it
            ("surge-cap", pool.name, assignment.revision, room),
            logging.DEBUG,
            "idleSurge is larger than the pool leaves beside maxUnavailable; capped",
            pool=pool.name,
            idle_surge=pool.idle_surge,
            capped_at=max(0, room),
        )
    return max(0, min(pool.idle_surge, room))


def gpu_pod_counts(ctx: Context) -> tuple[dict[str, int], dict[str, list[str]], set[str]]:
    """Per node: how many GPU pods a drain would wait for, the GPU DaemonSet pods nothing stops
    (``pods.unmanaged_gpu_daemon``), and the nodes where a pod runs that a drain of a static DRA
    node would wait for (any ResourceClaim, ``pods.blocking(dra=True)``): such a node is never
    admitted by the idle surge, whatever pool it is in."""
    counts: dict[str, int] = {}
    daemons: dict[str, list[str]] = {}
    busy: set[str] = set()
    for pod in ctx.kube.list_pods():
        node = (pod.get("spec") or {}).get("nodeName")
        if node and podlib.blocking(pod):
            counts[node] = counts.get(node, 0) + 1
        if node and podlib.blocking(pod, dra=True):
            busy.add(node)
        if node and podlib.unmanaged_gpu_daemon(pod):
            daemons.setdefault(node, []).append("/".join(podlib.ref(pod)))
    return counts, daemons, busy


def start_record(node: NodeView, target: Target, assignment: Assignment, t: str) -> Annotations:
    """The migc.dev/* record a reconfiguration starts with."""
    return {
        st.PHASE: Phase.CORDONED.value,
        st.PHASE_SINCE: t,
        st.STARTED_AT: t,
        st.TARGET: target.config,
        st.REVISION: assignment.revision,
        st.POOL: target.pool,
        st.PREVIOUS: node.current_config,
        st.PREVIOUS_DP: node.labels.get(st.DEVICE_PLUGIN_CONFIG),
        st.ATTEMPTS: "0",
        st.LAST_ERROR: None,
        st.RETRY_AFTER: None,
        st.ROLLING_BACK: None,
        st.PRE_CORDONED: "true" if node.unschedulable else None,
    }


class Admission:
    """One pass of admission over every pool of a valid, unpaused assignment."""

    def __init__(
        self,
        ctx: Context,
        nodes: dict[str, NodeView],
        targets: Mapping[str, Target],
        assignment: Assignment,
        now: dt.datetime,
    ) -> None:
        self.ctx = ctx
        self.nodes = nodes
        self.targets = targets
        self.assignment = assignment
        self.now = now
        self._pod_counts: dict[str, int] | None = None
        self._daemons: dict[str, list[str]] = {}
        self._busy: set[str] = set()  # nodes running a pod a drain waits for (``gpu_pod_counts``)
        self._mig_configs: frozenset[str] | MigPartedError | None = None
        self._dp_configs: frozenset[str] | MigPartedError | None = None
        self.failures: list[str] = []

    def run(self) -> None:
        revision = self.assignment.revision
        self.failures = sorted(
            name
            for name, n in self.nodes.items()
            if n.phase == Phase.FAILED and n.annotations.get(st.REVISION) == revision
        )
        for pool in self.assignment.pools:
            if self._halted():
                break
            self._pool(pool)
        self.ctx.metrics.halted.set(1 if self._halted() else 0)

    def _halted(self) -> bool:
        """Whether this revision already failed on ``max_failures`` nodes (reported once)."""
        limit = self.ctx.s.failures.max_failures
        if not limit or len(self.failures) < limit:
            self.ctx.forget(("halted", self.assignment.revision))
            return False
        if not self.ctx.seen(("halted", self.assignment.revision)):
            message = (
                f"rollout of revision {self.assignment.revision} halted: {len(self.failures)} nodes failed "
                f"({', '.join(self.failures[:10])}); no new node is admitted until a new revision, or "
                f"until failed nodes are retried ({st.RETRY}=true) or rolled back ({st.ROLLBACK}=true)"
            )
            log(logging.ERROR, "rollout halted", revision=self.assignment.revision, failed=self.failures)
            self.ctx.assignment_event("RolloutHalted", message, self.now)
        return True

    def _pool(self, pool: Pool) -> None:
        """Admit the pool's waiting nodes, fewest GPU pods first, while ``out | {node}`` stays within
        maxUnavailable; beyond it, up to idleSurge more that run no GPU pod now. "Now" is the pod
        list of this pass: a GPU pod bound to a surge node between that list and its cordon makes it
        count against maxUnavailable from then on (trust.held), so it is drained only in a
        maxUnavailable slot.
        The halt and the maintenance windows hold surge admissions as any other."""
        ctx = self.ctx
        waiting = [
            c
            for c in candidates(self.nodes, self.targets, self.assignment, pool.name)
            if not ctx.retry.active(c)
        ]
        limit = max_unavailable(ctx, pool, self.targets, self.assignment)
        surge = idle_surge(ctx, pool, self.targets, self.assignment)
        out = out_nodes(self.nodes, self.targets, pool.name)
        # full: no node can go, not even one running no GPU pod (a node cordoned already still can)
        full = len(out) >= limit + surge
        if not waiting or (full and not any(self.nodes[c].unschedulable for c in waiting)):
            return
        if not pool.in_window(self.now):
            ctx.once(
                ("window", pool.name, self.assignment.revision, self.now.strftime("%Y%m%d%H")),
                logging.INFO,
                "outside the pool's maintenance windows; waiting",
                pool=pool.name,
                waiting=len(waiting),
            )
            return
        if self._pod_counts is None:
            self._pod_counts, self._daemons, self._busy = gpu_pod_counts(ctx)
        counts = self._pod_counts
        waiting.sort(key=lambda c: (counts.get(c, 0), c))
        for name in waiting:
            if self._halted():
                break
            node = self.nodes[name]
            beyond = not (node.unschedulable or node.legacy_taint) and len(out | {name}) > limit
            # a node cordoned already (by someone else) costs nothing more; any other node beyond
            # maxUnavailable goes only by the surge: no pod a drain would wait for (``_busy``, which
            # has every node ``counts`` has), and within limit + surge
            if beyond and (name in self._busy or len(out | {name}) > limit + surge):
                continue
            try:
                if self._admit(name):
                    out.add(name)
                    ctx.surged.discard(name)
                    if beyond:
                        ctx.surged.add(name)  # trust.held: it may keep a surge slot while idle
                        log(
                            logging.INFO,
                            "admitted beyond maxUnavailable: runs no GPU pod",
                            node=name,
                            pool=pool.name,
                            max_unavailable=limit,
                            idle_surge=surge,
                            out=len(out),
                        )
            except NotFoundError:
                continue
            except ControllerError as exc:
                delay = ctx.retry.bump(name)
                log(
                    logging.WARNING,
                    "cordon failed; will retry",
                    node=name,
                    error=str(exc),
                    retry_in=round(delay, 3),
                )

    def _admit(self, name: str) -> bool:
        """Start ``name``'s reconfiguration; whether it was cordoned (it counts as out then)."""
        ctx, node, target = self.ctx, self.nodes[name], self.targets[name]
        cfg = self.assignment.configs.get(target.config)
        t = st.fmt_time(self.now)
        reason = incompatible(node, cfg)
        if reason is not None:
            # Known before touching the node: record the failure without cordoning it (nothing
            # was changed, its pods keep running) and never retry on our own.
            record = start_record(node, target, self.assignment, t)
            self.nodes[name] = ctx.fail(node, reason, self.now, permanent=True, extra=record)
            self.failures.append(name)
            return False
        conflict = dynamic_conflict(ctx.dra, name, node, target.pool)
        if conflict is not None:
            if not ctx.seen(("dra-dynamic", name, self.assignment.revision)):
                log(logging.ERROR, "node held: a DynamicMIG pool covers it", node=name, error=conflict)
                ctx.event(
                    ctx.s.api.node_event_namespace, "Node", "v1", name, "DraDynamicPool", conflict, self.now
                )
            return False
        missing = missing_node_labels(ctx.dra, name, node, target.pool)
        if missing:
            if not ctx.seen(("dra-labels", name, self.assignment.revision, tuple(missing.items()))):
                wanted = ", ".join(f"{k}={v}" for k, v in missing.items())
                message = (
                    f"node {name} is in static DRA pool {target.pool} but lacks the labels its DraPlan "
                    f"names ({wanted}): the device plugin would run beside the DRA driver; label the "
                    "node, it is not touched until then"
                )
                log(logging.WARNING, "node held: DRA node labels missing", node=name, missing=missing)
                ctx.event(
                    ctx.s.api.node_event_namespace,
                    "Node",
                    "v1",
                    name,
                    "DraNodeLabelsMissing",
                    message,
                    self.now,
                )
            return False
        why = unverifiable(ctx.dra, name, target.pool, self.assignment.configs.get(target.config))
        if why is not None:
            # draining a node whose new layout nothing could verify: wait for the DraPlan instead
            if not ctx.seen(("dra-unverifiable", name, self.assignment.revision, ctx.dra is None)):
                log(logging.WARNING, "node held: its DRA config cannot be verified", node=name, error=why)
                ctx.event(ctx.s.api.node_event_namespace, "Node", "v1", name, "DraPlanMissing", why, self.now)
            return False
        daemons = self._daemons.get(name)
        if daemons:
            # The MIG manager's apply would fail on them (GPU in use), and a drain cannot
            # remove them: leave the node running, untouched, and say what to change.
            if not ctx.seen(("gpu-daemonset", name, tuple(daemons))):
                message = (
                    f"DaemonSet pods holding GPUs on node {name}: {', '.join(sorted(daemons)[:10])}; the MIG "
                    f"manager stops a GPU DaemonSet only when its nodeSelector has "
                    f'{podlib.GPU_CLIENT_KEY}: "true" (a drain cannot: DaemonSet pods tolerate the '
                    "cordon), and its apply fails while they hold the GPUs. Add that nodeSelector to the "
                    "DaemonSet; the node is not touched until then"
                )
                log(
                    logging.WARNING, "node held: GPU DaemonSet pods nothing can stop", node=name, pods=daemons
                )
                ctx.event(
                    ctx.s.api.node_event_namespace,
                    "Node",
                    "v1",
                    name,
                    "GpuDaemonSetBlocks",
                    message,
                    self.now,
                )
            return False
        ctx.forget(("gpu-daemonset", name))
        if not device_plugin_only(node, cfg) and not self._mig_parted_has(target.config):
            return False
        if cfg is not None and not self._device_plugin_has(cfg.device_plugin_config):
            return False
        ann, spec = ctx.cordon(start_record(node, target, self.assignment, t))
        self.nodes[name] = ctx.patch(node, ann, spec=spec)
        log(
            logging.INFO,
            "cordoned",
            node=name,
            pool=target.pool,
            to=target.config,
            previous=node.current_config,
            revision=self.assignment.revision,
        )
        return True

    def _mig_parted_has(self, config: str) -> bool:
        """Whether the MIG manager's ConfigMap defines ``config``; refuses (once) when not."""
        if self._mig_configs is None:
            try:
                self._mig_configs = self.ctx.mounted.read(self.ctx.kube, self.assignment.raw["migConfigMap"])
            except MigPartedError as exc:
                self._mig_configs = exc
        known = self._mig_configs
        if isinstance(known, frozenset) and config in known:
            self.ctx.forget(("mig-parted", self.assignment.revision, config))
            return True
        ref = self.assignment.raw["migConfigMap"]
        message = (
            str(known)
            if isinstance(known, MigPartedError)
            else f"config {config} is not defined in mig-parted ConfigMap {ref['namespace']}/{ref['name']}"
        )
        if not self.ctx.seen(("mig-parted", self.assignment.revision, config)):
            self.ctx.metrics.refusals.labels(reason="config-missing").inc()
            log(
                logging.ERROR,
                "target config refused: the MIG manager could not apply it; no node is touched",
                config=config,
                revision=self.assignment.revision,
                error=message,
            )
            self.ctx.assignment_event(
                "MigConfigMissing", f"{message}; no node is touched until it is", self.now
            )
        return False

    def _device_plugin_has(self, name: str) -> bool:
        """Whether the device-plugin ConfigMap has config ``name``; refuses (once) when not."""
        ref = self.ctx.s.api.device_plugin_configmap
        if not ref:
            return True
        if self._dp_configs is None:
            try:
                self._dp_configs = device_plugin_names(self.ctx.kube, ref)
            except MigPartedError as exc:
                self._dp_configs = exc
        known = self._dp_configs
        if isinstance(known, frozenset) and name in known:
            self.ctx.forget(("device-plugin", self.assignment.revision, name))
            return True
        message = (
            str(known)
            if isinstance(known, MigPartedError)
            else f"device-plugin config {name} is not a key of device-plugin ConfigMap {ref}"
        )
        if not self.ctx.seen(("device-plugin", self.assignment.revision, name)):
            self.ctx.metrics.refusals.labels(reason="device-plugin-config-missing").inc()
            log(
                logging.ERROR,
                "target refused: the device plugin's config-manager would exit on it; no node is touched",
                device_plugin_config=name,
                revision=self.assignment.revision,
                error=message,
            )
            self.ctx.assignment_event(
                "DevicePluginConfigMissing",
                f"{message}: the device plugin's config-manager exits on an unknown name and the node "
                "would stay without GPUs; sync the rendered device-plugin ConfigMap (or set "
                "--device-plugin-configmap); no node is touched until it has it",
                self.now,
            )
        return False
