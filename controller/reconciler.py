"""One reconciliation pass: read everything, move each node at most one step, admit new nodes.

The pass is level-triggered and idempotent: it derives every decision from what the API server
returns now (the assignment ConfigMap, Node labels/annotations/taints, pods), never from memory.
Memory holds only backoff timers and "already logged" markers, so losing it (a restart, a new
leader) changes nothing but timing.

Per node (annotations ``migc.dev/*``)::

    Idle -> Cordoned -> Draining -> Applying -> Verifying -> Done -> Idle
                            \\__________\\___________\\_____-> Failed

Crash-safety rule: every write that changes what the node *is* (cordon, label, uncordon) carries
the matching phase annotation in the same PATCH, so no state exists in which a node is cordoned
or relabelled without migc's record of it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from controller import pods as podlib
from controller import state as st
from controller.assignment import ASSIGNMENT_KEY, Assignment, ConfigSpec, Target, parse, resolve
from controller.errors import ControllerError, InvalidAssignmentError, NotFoundError, TemporaryError
from controller.kube import Kube
from controller.logs import log
from controller.metrics import Health, Metrics
from controller.settings import Settings
from controller.state import NodeView, Phase

Annotations = dict[str, str | None]


def _truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in ("true", "1", "yes")


def allocatable_diff(
    allocatable: Mapping[str, str], expected: Mapping[str, int]
) -> dict[str, tuple[int, int]]:
    """Resource -> (expected, actual) for every mismatch; MIG resources not expected must be 0."""

    def count(v: str | None) -> int:
        try:
            return int(v or 0)
        except ValueError:
            return -1

    diff = {k: (v, count(allocatable.get(k))) for k, v in expected.items() if count(allocatable.get(k)) != v}
    for k, v in allocatable.items():
        if k.startswith(podlib.MIG_RESOURCE_PREFIX) and k not in expected and count(v) != 0:
            diff[k] = (0, count(v))
    return dict(sorted(diff.items()))


def incompatible(node: NodeView, cfg: ConfigSpec | None) -> str | None:
    """Why ``cfg`` can never be applied to ``node`` (a permanent error), else None."""
    if cfg is None or node.mig_capable or not cfg.mig_enabled:
        return None
    return (
        f"config {cfg.name} enables MIG but node {node.name} is not MIG-capable "
        f"({st.MIG_CAPABLE}={node.labels.get(st.MIG_CAPABLE, '<unset>')}): the GPU Operator runs no MIG "
        "manager there; fix the pool's gpuModel or node selection in the policy, or relabel the node"
    )


def device_plugin_only(node: NodeView, cfg: ConfigSpec | None) -> bool:
    """Whether applying ``cfg`` is only a device-plugin change (no MIG manager involved).

    The GPU Operator deploys the MIG manager only on nodes labelled ``nvidia.com/mig.capable=true``;
    on any other node nobody would ever answer ``nvidia.com/mig.config`` with a state. A MIG-capable
    node keeps the MIG manager path even for an all-disabled config: there it must switch MIG off.
    ``cfg`` is None only for a rollback to a config the assignment no longer describes, which on a
    node without MIG cannot have enabled MIG either.

    Such a node is still cordoned and drained of GPU pods, like any other reconfiguration. The
    device plugin restarts with the new sharing config and re-advertises ``nvidia.com/gpu`` with a
    different count (GPUs x replicas); pods already running keep their devices, but after e.g.
    time-slicing-4 -> whole GPUs the node would be running more GPU pods than it now advertises,
    and the pods were admitted under a sharing (isolation) promise that no longer holds. Draining
    also keeps maxUnavailable and maintenance windows meaning the same thing for every pool.
    """
    return not node.mig_capable and (cfg is None or not cfg.mig_enabled)


class Reconciler:
    def __init__(
        self,
        kube: Kube,
        settings: Settings,
        metrics: Metrics,
        clock: Callable[[], dt.datetime],
        health: Health | None = None,
    ) -> None:
        self.kube = kube
        self.s = settings
        self.metrics = metrics
        self.clock = clock
        self.health = health
        self.busy = False
        self._retry_at: dict[str, float] = {}
        self._retry_delay: dict[str, float] = {}
        self._evict_at: dict[str, float] = {}
        self._evict_delay: dict[str, float] = {}
        self._parsed: tuple[str, Assignment] | None = None
        self._last_valid: Assignment | None = None
        self._reported_invalid: str | None = None
        self._logged: set[tuple[Any, ...]] = set()

    # --- helpers -----------------------------------------------------------------------------
    def _once(self, key: tuple[Any, ...], level: int, msg: str, **fields: Any) -> None:
        if key not in self._logged:
            self._logged.add(key)
            log(level, msg, **fields)

    def _backing_off(self, table: dict[str, float], node: str) -> bool:
        return table.get(node, 0.0) > time.monotonic()

    def _back_off(
        self, at: dict[str, float], delays: dict[str, float], node: str, base: float, cap: float
    ) -> float:
        delay = min(cap, delays.get(node, base / 2) * 2)
        delays[node] = delay
        at[node] = time.monotonic() + delay
        return delay

    def _patch(
        self,
        node: NodeView,
        annotations: Annotations,
        *,
        labels: Annotations | None = None,
        spec: dict[str, Any] | None = None,
    ) -> NodeView:
        meta: dict[str, Any] = {"annotations": annotations}
        if labels:
            meta["labels"] = labels
        body: dict[str, Any] = {"metadata": meta}
        if spec is not None:
            body["spec"] = spec
            # The taint list is replaced as a whole; make the write conditional on the node being
            # unchanged since we read it, so a concurrent taint from someone else is never lost
            # (a real API server answers 409 and we retry from a fresh read).
            if node.resource_version:
                meta["resourceVersion"] = node.resource_version
        return NodeView.from_obj(self.kube.patch_node(node.name, body))

    def _event(
        self,
        namespace: str,
        kind: str,
        api_version: str,
        name: str,
        reason: str,
        message: str,
        now: dt.datetime,
    ) -> None:
        ts = st.fmt_time(now).split(".")[0] + "Z"
        digest = hashlib.sha256(f"{name}|{reason}|{message}|{ts}".encode()).hexdigest()[:12]
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.migc.{digest}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": api_version,
                "kind": kind,
                "name": name,
                **({"namespace": namespace} if kind != "Node" else {}),
            },
            "reason": reason,
            "message": message[:1024],
            "type": "Warning",
            "source": {"component": "migc-controller"},
            "reportingComponent": "migc-controller",
            "reportingInstance": self.s.identity,
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
        }
        try:
            self.kube.create_event(namespace, body)
        except ControllerError as exc:
            # An Event is best effort: the state (annotations) and the metric already record it.
            log(logging.WARNING, "could not create event", object=name, reason=reason, error=str(exc))

    # --- assignment --------------------------------------------------------------------------
    def _load_assignment(self, now: dt.datetime) -> tuple[Assignment | None, bool, bool]:
        """(assignment to use for configs, whether it is valid now, whether the rollout is paused)."""
        ns, name = self.s.namespace, self.s.assignment_name
        try:
            cm = self.kube.get_configmap(ns, name)
        except NotFoundError:
            self._once(
                ("no-assignment",), logging.INFO, "no assignment ConfigMap yet", configmap=f"{ns}/{name}"
            )
            return self._last_valid, False, False
        paused = _truthy(((cm.get("metadata") or {}).get("annotations") or {}).get(st.PAUSED))
        text = (cm.get("data") or {}).get(ASSIGNMENT_KEY)
        digest = hashlib.sha256((text or "").encode()).hexdigest()
        if self._parsed is not None and self._parsed[0] == digest:
            return self._parsed[1], True, paused
        try:
            if text is None:
                raise InvalidAssignmentError(f"ConfigMap {ns}/{name} has no key {ASSIGNMENT_KEY}")
            assignment = parse(text)
        except InvalidAssignmentError as exc:
            # Permanent: retrying the same content cannot help. Report once per content, keep
            # finishing in-flight nodes, admit nothing until a valid revision arrives.
            if self._reported_invalid != digest:
                self._reported_invalid = digest
                log(
                    logging.ERROR,
                    "invalid assignment; no new reconfigurations until it is fixed",
                    configmap=f"{ns}/{name}",
                    error=str(exc),
                )
                self._event(ns, "ConfigMap", "v1", name, "InvalidAssignment", str(exc), now)
            return self._last_valid, False, paused
        self._parsed = (digest, assignment)
        self._last_valid = assignment
        log(
            logging.INFO,
            "assignment loaded",
            revision=assignment.revision,
            cluster=assignment.cluster,
            pools=len(assignment.pools),
            configs=len(assignment.configs),
        )
        return assignment, True, paused

    # --- the pass ----------------------------------------------------------------------------
    def reconcile_once(self) -> None:
        now = self.clock()
        assignment, valid, paused = self._load_assignment(now)
        nodes = {n.name: n for n in map(NodeView.from_obj, self.kube.list_nodes())}
        if self.health is not None:
            self.health.api_ok()
        targets: dict[str, Target] = {}
        if assignment is not None and valid:
            carried = {
                n.name: (n.target if n.phase != Phase.IDLE and n.target else n.current_config) or ""
                for n in nodes.values()
            }
            targets = {
                k: v
                for k, v in resolve(assignment, {n: v.labels for n, v in nodes.items()}, carried).items()
                if k in nodes
            }
        self._gauges(nodes, targets)

        if self.s.dry_run:
            self._dry_run(nodes, targets, assignment if valid else None, paused, now)
            return

        for name in sorted(nodes):
            node = nodes[name]
            if node.phase == Phase.IDLE or self._backing_off(self._retry_at, name):
                continue
            try:
                # Steps that need no waiting (Cordoned -> Draining -> Applying when no GPU pod runs;
                # Verifying -> Done -> Idle) chain within one pass, each its own write.
                updated = None
                for _ in range(len(Phase)):
                    step = self._advance(node, targets.get(name), assignment, now)
                    if step is None or step.phase == node.phase:
                        updated = step or updated
                        break
                    updated = node = step
                    if step.phase == Phase.IDLE:
                        break
            except NotFoundError:
                continue  # the node was deleted under us
            except ControllerError as exc:
                delay = self._back_off(
                    self._retry_at, self._retry_delay, name, self.s.retry_backoff, self.s.retry_backoff_max
                )
                level = logging.WARNING if isinstance(exc, TemporaryError) else logging.ERROR
                log(
                    level,
                    "step failed; will retry",
                    node=name,
                    phase=node.phase.value,
                    error=str(exc),
                    retry_in=round(delay, 3),
                )
                continue
            self._retry_delay.pop(name, None)
            if updated is not None:
                nodes[name] = updated

        if assignment is not None and valid:
            if paused:
                self._once(
                    ("paused", assignment.revision),
                    logging.INFO,
                    "rollout paused by annotation on the assignment",
                    annotation=st.PAUSED,
                )
            else:
                self._logged.discard(("paused", assignment.revision))
                self._admit(nodes, targets, assignment, now)
        self.busy = any(n.phase != Phase.IDLE for n in nodes.values())
        self._gauges(nodes, targets)

    def _gauges(self, nodes: Mapping[str, NodeView], targets: Mapping[str, Target]) -> None:
        counts = dict.fromkeys(Phase, 0)
        for name, n in nodes.items():
            if name in targets or n.phase != Phase.IDLE:
                counts[n.phase] += 1
        for phase, c in counts.items():
            self.metrics.nodes.labels(phase=phase.value).set(c)
        self.metrics.drift.set(
            sum(1 for name, t in targets.items() if nodes[name].current_config != t.config)
        )

    # --- admission ---------------------------------------------------------------------------
    def _candidates(
        self, nodes: Mapping[str, NodeView], targets: Mapping[str, Target], assignment: Assignment, pool: str
    ) -> list[str]:
        out = []
        for name, t in sorted(targets.items()):
            n = nodes[name]
            if (
                t.pool == pool
                and n.phase == Phase.IDLE
                and n.current_config != t.config
                and not n.paused
                and n.annotations.get(st.HELD_REVISION) != assignment.revision
            ):
                out.append(name)
        return out

    def _in_flight(self, nodes: Mapping[str, NodeView], targets: Mapping[str, Target], pool: str) -> int:
        # Counted from the annotations on the Nodes (not from memory), so the budget holds across
        # restarts; a node keeps counting against the pool it was admitted for.
        busy = 0
        for name, n in nodes.items():
            if n.phase == Phase.IDLE:
                continue
            owner = n.annotations.get(st.POOL) or (targets[name].pool if name in targets else None)
            busy += owner == pool
        return busy

    def _gpu_pod_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for pod in self.kube.list_pods():
            node = (pod.get("spec") or {}).get("nodeName")
            if node and podlib.blocking(pod):
                counts[node] = counts.get(node, 0) + 1
        return counts

    def _admit(
        self,
        nodes: dict[str, NodeView],
        targets: Mapping[str, Target],
        assignment: Assignment,
        now: dt.datetime,
    ) -> None:
        pod_counts: dict[str, int] | None = None
        for pool in assignment.pools:
            candidates = [
                c
                for c in self._candidates(nodes, targets, assignment, pool.name)
                if not self._backing_off(self._retry_at, c)
            ]
            budget = pool.max_unavailable - self._in_flight(nodes, targets, pool.name)
            if not candidates or budget <= 0:
                continue
            if not pool.in_window(now):
                self._once(
                    ("window", pool.name, assignment.revision, now.strftime("%Y%m%d%H")),
                    logging.INFO,
                    "outside the pool's maintenance windows; waiting",
                    pool=pool.name,
                    waiting=len(candidates),
                )
                continue
            if pod_counts is None:
                pod_counts = self._gpu_pod_counts()
            counts = pod_counts
            candidates.sort(key=lambda c: (counts.get(c, 0), c))
            for name in candidates[:budget]:
                try:
                    reason = incompatible(nodes[name], assignment.configs.get(targets[name].config))
                    if reason is not None:
                        # Known before touching the node: record the failure without cordoning it
                        # (nothing was changed, its pods keep running) and never retry on our own.
                        record = self._start_record(nodes[name], targets[name], assignment, now)
                        nodes[name] = self._fail(nodes[name], reason, now, permanent=True, extra=record)
                        continue
                    nodes[name] = self._cordon(nodes[name], targets[name], assignment, now)
                except NotFoundError:
                    continue
                except ControllerError as exc:
                    delay = self._back_off(
                        self._retry_at,
                        self._retry_delay,
                        name,
                        self.s.retry_backoff,
                        self.s.retry_backoff_max,
                    )
                    log(
                        logging.WARNING,
                        "cordon failed; will retry",
                        node=name,
                        error=str(exc),
                        retry_in=round(delay, 3),
                    )

    def _start_record(
        self, node: NodeView, target: Target, assignment: Assignment, now: dt.datetime
    ) -> Annotations:
        """The migc.dev/* record a reconfiguration starts with."""
        t = st.fmt_time(now)
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

    @staticmethod
    def _cordon_spec(node: NodeView) -> dict[str, Any]:
        taints = [dict(x) for x in node.taints if x.get("key") != st.TAINT_KEY]
        taints.append({"key": st.TAINT_KEY, "value": "true", "effect": st.TAINT_EFFECT})
        return {"unschedulable": True, "taints": taints}

    def _cordon(self, node: NodeView, target: Target, assignment: Assignment, now: dt.datetime) -> NodeView:
        ann = self._start_record(node, target, assignment, now)
        updated = self._patch(node, ann, spec=self._cordon_spec(node))
        log(
            logging.INFO,
            "cordoned",
            node=node.name,
            pool=target.pool,
            to=target.config,
            previous=node.current_config,
            revision=assignment.revision,
        )
        return updated

    # --- per-phase steps ---------------------------------------------------------------------
    def _retarget(self, desired: Target, assignment: Assignment | None) -> Annotations:
        return {
            st.TARGET: desired.config,
            st.POOL: desired.pool,
            st.ATTEMPTS: "0",
            st.REVISION: assignment.revision if assignment else None,
        }

    def _advance(
        self, node: NodeView, desired: Target | None, assignment: Assignment | None, now: dt.datetime
    ) -> NodeView | None:
        if node.paused:
            self._once(
                ("node-paused", node.name, node.phase),
                logging.INFO,
                "node paused by annotation",
                node=node.name,
                phase=node.phase.value,
            )
            return None
        self._logged.discard(("node-paused", node.name, node.phase))
        phase = node.phase
        if phase == Phase.DONE:
            return self._finish(node, now)
        if phase == Phase.FAILED:
            return self._failed(node, desired, assignment, now)
        t = st.fmt_time(now)
        if not node.target:
            # A phase without a target cannot be continued; hand the node back to the scheduler.
            log(logging.WARNING, "node has a migc phase but no target; releasing it", node=node.name)
            return self._uncordon(node, {st.PHASE: Phase.DONE.value, st.PHASE_SINCE: t})
        retarget = desired is not None and not node.rolling_back and desired.config != node.target
        if retarget and desired is not None:
            log(
                logging.INFO,
                "new target for a node in flight",
                node=node.name,
                phase=phase.value,
                old=node.target,
                new=desired.config,
            )
        if phase == Phase.CORDONED:
            ann: Annotations = {st.PHASE: Phase.DRAINING.value, st.PHASE_SINCE: t}
            if retarget and desired is not None:
                ann.update(self._retarget(desired, assignment))
            log(logging.INFO, "draining", node=node.name)
            return self._patch(node, ann)
        if phase == Phase.DRAINING:
            if retarget and desired is not None:
                return self._patch(node, self._retarget(desired, assignment))
            return self._drain(node, assignment, now)
        if phase == Phase.APPLYING:
            return self._applying(node, desired if retarget else None, assignment, now)
        # Verifying
        if retarget and desired is not None:
            return self._patch(
                node,
                {st.PHASE: Phase.DRAINING.value, st.PHASE_SINCE: t, **self._retarget(desired, assignment)},
            )
        return self._verify(node, assignment, now)

    def _config(self, node: NodeView, assignment: Assignment | None) -> ConfigSpec | None:
        if assignment is None or node.target is None:
            return None
        return assignment.configs.get(node.target)

    def _drain(self, node: NodeView, assignment: Assignment | None, now: dt.datetime) -> NodeView | None:
        remaining = [p for p in self.kube.list_pods(node.name) if podlib.blocking(p)]
        if not remaining:
            self._evict_at.pop(node.name, None)
            self._evict_delay.pop(node.name, None)
            return self._start_apply(node, assignment, now)
        since = node.since() or now
        elapsed = (now - since).total_seconds()
        names = sorted("/".join(podlib.ref(p)) for p in remaining)
        if elapsed < self.s.drain_grace_timeout:
            self._once(
                ("wait-pods", node.name, since),
                logging.INFO,
                "waiting for GPU pods to finish",
                node=node.name,
                pods=names,
                grace_seconds=self.s.drain_grace_timeout,
            )
            return None
        if elapsed >= self.s.drain_grace_timeout + self.s.eviction_timeout:
            return self._fail(node, f"drain timed out; GPU pods still running: {', '.join(names)}", now)
        if self._backing_off(self._evict_at, node.name):
            return None
        blocked = []
        for pod in remaining:
            if podlib.terminating(pod):
                continue  # evicted already; waiting for its grace period
            ns, name = podlib.ref(pod)
            try:
                self.kube.evict(ns, name)
            except NotFoundError:
                self.metrics.evictions.labels(result="gone").inc()
                continue
            except TemporaryError as exc:
                if exc.status != 429:
                    raise
                # 429 = a PodDisruptionBudget does not allow it now. Never forced: wait it out.
                self.metrics.evictions.labels(result="blocked").inc()
                blocked.append(f"{ns}/{name}")
                continue
            self.metrics.evictions.labels(result="evicted").inc()
            log(logging.INFO, "evicted", node=node.name, pod=f"{ns}/{name}")
        if blocked:
            delay = self._back_off(
                self._evict_at,
                self._evict_delay,
                node.name,
                self.s.eviction_backoff,
                self.s.eviction_backoff_max,
            )
            log(
                logging.INFO,
                "eviction blocked by a disruption budget; backing off",
                node=node.name,
                pods=blocked,
                retry_in=round(delay, 3),
            )
        return None

    def _start_apply(
        self, node: NodeView, assignment: Assignment | None, now: dt.datetime
    ) -> NodeView | None:
        target = node.target
        assert target is not None
        cfg = self._config(node, assignment)
        dp = cfg.device_plugin_config if cfg else node.annotations.get(st.PREVIOUS_DP)
        if cfg is None and not node.rolling_back:
            self._once(
                ("no-config", node.name, target),
                logging.WARNING,
                "target config is not in the current assignment; waiting",
                node=node.name,
                config=target,
            )
            return None
        reason = incompatible(node, cfg)
        if reason is not None:
            return self._fail(node, reason, now, permanent=True)
        t = st.fmt_time(now)
        if device_plugin_only(node, cfg):
            # No MIG manager runs here (and none would set a state): switch only the device
            # plugin's sharing config, record the config in migc's own annotation, and let
            # verification wait for the re-advertised allocatable. A stale mig.config label is
            # left alone: nothing acts on it on such a node.
            dp_labels: Annotations = {st.DEVICE_PLUGIN_CONFIG: dp} if dp else {}
            updated = self._patch(
                node,
                {st.PHASE: Phase.VERIFYING.value, st.PHASE_SINCE: t, st.APPLIED: target},
                labels=dp_labels,
            )
            log(
                logging.INFO,
                "node is not MIG-capable: applying the device plugin config only; verifying",
                node=node.name,
                config=target,
                device_plugin_config=dp,
            )
            return updated
        if node.current_config == target:
            if node.labels.get(st.MIG_STATE) == "success":
                return self._patch(node, {st.PHASE: Phase.VERIFYING.value, st.PHASE_SINCE: t})
            # The MIG manager only acts on a *change* of the label, so a retry of the same config
            # removes it first; the next pass sets it again.
            log(
                logging.INFO,
                "clearing the MIG config label so the MIG manager sees the retry",
                node=node.name,
            )
            return self._patch(node, {st.PHASE_SINCE: t}, labels={st.MIG_CONFIG: None, st.MIG_STATE: None})
        labels: Annotations = {st.MIG_CONFIG: target, st.MIG_STATE: None}
        if dp:
            labels[st.DEVICE_PLUGIN_CONFIG] = dp
        # Clearing the state label in the same write: a stale "success" from the previous config
        # must not be read as the answer to this change.
        updated = self._patch(node, {st.PHASE: Phase.APPLYING.value, st.PHASE_SINCE: t}, labels=labels)
        log(logging.INFO, "applying", node=node.name, config=target, device_plugin_config=dp)
        return updated

    def _applying(
        self, node: NodeView, retarget: Target | None, assignment: Assignment | None, now: dt.datetime
    ) -> NodeView | None:
        mig_state = node.labels.get(st.MIG_STATE)
        t = st.fmt_time(now)
        if mig_state == "success":
            if retarget is not None:
                # Finish the current step, then re-target; the node stays cordoned and in budget.
                return self._patch(
                    node,
                    {
                        st.PHASE: Phase.DRAINING.value,
                        st.PHASE_SINCE: t,
                        **self._retarget(retarget, assignment),
                    },
                )
            log(logging.INFO, "MIG manager reported success; verifying", node=node.name)
            return self._patch(node, {st.PHASE: Phase.VERIFYING.value, st.PHASE_SINCE: t})
        if mig_state == "failed":
            return self._fail(node, f"MIG manager reported failed for config {node.target}", now)
        elapsed = (now - (node.since() or now)).total_seconds()
        if elapsed >= self.s.apply_timeout:
            return self._fail(
                node,
                f"MIG manager did not finish within {self.s.apply_timeout:g}s (state={mig_state or 'unset'})",
                now,
            )
        return None

    def _verify(self, node: NodeView, assignment: Assignment | None, now: dt.datetime) -> NodeView | None:
        cfg = self._config(node, assignment)
        t = st.fmt_time(now)
        if cfg is None:
            if not node.rolling_back:
                self._once(
                    ("no-config", node.name, node.target),
                    logging.WARNING,
                    "target config is not in the current assignment; waiting",
                    node=node.name,
                )
                return None
            diff: dict[str, tuple[int, int]] = {}  # a rollback to a config no longer described
        else:
            diff = allocatable_diff(node.allocatable, cfg.resources)
        if not diff:
            log(logging.INFO, "verified; uncordoning", node=node.name, config=node.target)
            return self._uncordon(node, {st.PHASE: Phase.DONE.value, st.PHASE_SINCE: t})
        if (now - (node.since() or now)).total_seconds() >= self.s.verify_timeout:
            pretty = ", ".join(f"{k}: want {w} have {h}" for k, (w, h) in diff.items())
            return self._fail(node, f"allocatable does not match config {node.target}: {pretty}", now)
        return None

    def _uncordon(self, node: NodeView, ann: Annotations) -> NodeView:
        taints = [dict(x) for x in node.taints if x.get("key") != st.TAINT_KEY]
        spec: dict[str, Any] = {"taints": taints}
        if not _truthy(node.annotations.get(st.PRE_CORDONED)):
            spec["unschedulable"] = False  # a cordon a human set before us stays
        return self._patch(node, ann, spec=spec)

    def _fail(
        self,
        node: NodeView,
        reason: str,
        now: dt.datetime,
        *,
        permanent: bool = False,
        extra: Annotations | None = None,
    ) -> NodeView:
        """Failed, with an Event. ``permanent``: retrying cannot help, so no automatic retry.

        ``extra`` is written in the same PATCH (a new target's record) and restarts the count.
        """
        extra = extra or {}
        attempts = (0 if st.ATTEMPTS in extra else node.attempts) + 1
        ann: Annotations = {
            **extra,
            st.PHASE: Phase.FAILED.value,
            st.PHASE_SINCE: st.fmt_time(now),
            st.ATTEMPTS: str(attempts),
            st.LAST_ERROR: reason[:1024],
            st.RETRY_AFTER: None,
        }
        if attempts < self.s.max_attempts and not permanent:
            delay = self.s.failure_backoff * 2 ** (attempts - 1)
            ann[st.RETRY_AFTER] = st.fmt_time(now + dt.timedelta(seconds=delay))
        updated = self._patch(node, ann)
        pool = extra.get(st.POOL) or node.annotations.get(st.POOL, "")
        self.metrics.reconfigurations.labels(pool=pool, result="failed").inc()
        log(
            logging.ERROR,
            "reconfiguration failed; node stays cordoned"
            if node.has_taint
            else "reconfiguration failed before the node was touched",
            node=node.name,
            pool=pool,
            config=extra.get(st.TARGET) or node.target,
            attempts=attempts,
            permanent=permanent,
            error=reason,
            next=("automatic retry at " + str(ann[st.RETRY_AFTER]))
            if ann[st.RETRY_AFTER]
            else f"waiting for a new revision, {st.RETRY}=true or {st.ROLLBACK}=true",
        )
        self._event(
            self.s.node_event_namespace,
            "Node",
            "v1",
            node.name,
            "MigReconfigurationFailed",
            f"{reason} (attempt {attempts})",
            now,
        )
        return updated

    def _failed(
        self, node: NodeView, desired: Target | None, assignment: Assignment | None, now: dt.datetime
    ) -> NodeView | None:
        t = st.fmt_time(now)
        restart: Annotations = {st.PHASE: Phase.DRAINING.value, st.PHASE_SINCE: t, st.RETRY_AFTER: None}
        spec: dict[str, Any] | None = None
        if not node.has_taint:
            # Failed before it was cordoned (a permanent error found at admission): a restart
            # cordons first, in the same write, like an admission.
            restart.update(
                {st.PHASE: Phase.CORDONED.value, st.PRE_CORDONED: "true" if node.unschedulable else None}
            )
            spec = self._cordon_spec(node)
        if node.wants_rollback:
            previous = node.annotations.get(st.PREVIOUS)
            if not previous:
                log(logging.ERROR, "rollback requested but no previous config is recorded", node=node.name)
                return self._patch(
                    node,
                    {
                        st.ROLLBACK: None,
                        st.LAST_ERROR: "rollback requested but no previous config is recorded",
                    },
                )
            log(logging.INFO, "rolling back on request", node=node.name, to=previous, abandoned=node.target)
            # Hold the node at the previous config until the assignment's revision changes.
            return self._patch(
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
        if node.wants_retry:
            reason = incompatible(node, self._config(node, assignment))
            if reason is not None:
                # Cordoning and draining again would end the same way: fail again at once.
                return self._fail(node, reason, now, permanent=True, extra={st.RETRY: None, st.ATTEMPTS: "0"})
            log(logging.INFO, "retrying on request", node=node.name, config=node.target)
            return self._patch(node, {**restart, st.RETRY: None, st.ATTEMPTS: "0"}, spec=spec)
        if desired is not None and not node.rolling_back and desired.config != node.target:
            retarget = self._retarget(desired, assignment)
            reason = incompatible(node, assignment.configs.get(desired.config) if assignment else None)
            if reason is not None:
                return self._fail(node, reason, now, permanent=True, extra=retarget)
            log(logging.INFO, "new revision re-targets a failed node", node=node.name, to=desired.config)
            return self._patch(node, {**restart, **retarget}, spec=spec)
        retry_after = node.since(st.RETRY_AFTER)
        if node.attempts < self.s.max_attempts and retry_after is not None and now >= retry_after:
            log(logging.INFO, "automatic retry after backoff", node=node.name, attempt=node.attempts + 1)
            return self._patch(node, restart, spec=spec)
        return None

    def _finish(self, node: NodeView, now: dt.datetime) -> NodeView:
        pool = node.annotations.get(st.POOL, "")
        started = node.since(st.STARTED_AT)
        ann: Annotations = dict.fromkeys(st.TRANSIENT)
        ann.update({st.PHASE: Phase.IDLE.value, st.PHASE_SINCE: st.fmt_time(now)})
        updated = self._patch(node, ann)
        result = "rolled-back" if node.rolling_back else "success"
        self.metrics.reconfigurations.labels(pool=pool, result=result).inc()
        if started is not None and result == "success":
            self.metrics.duration.observe(max(0.0, (now - started).total_seconds()))
        log(logging.INFO, "done", node=node.name, pool=pool, config=node.current_config, result=result)
        return updated

    # --- dry run -----------------------------------------------------------------------------
    def _dry_run(
        self,
        nodes: Mapping[str, NodeView],
        targets: Mapping[str, Target],
        assignment: Assignment | None,
        paused: bool,
        now: dt.datetime,
    ) -> None:
        """Log the steps a real run would take, once per distinct situation; write nothing."""
        key = (
            "dry-run",
            assignment.revision if assignment else None,
            paused,
            tuple(sorted((n, v.phase.value, v.target, v.current_config) for n, v in nodes.items())),
        )
        if key in self._logged:
            return
        self._logged.add(key)
        self.busy = False
        for name in sorted(nodes):
            n = nodes[name]
            if n.phase != Phase.IDLE:
                log(
                    logging.INFO,
                    "dry-run: would continue node",
                    node=name,
                    phase=n.phase.value,
                    config=n.target,
                )
        if assignment is None:
            log(logging.INFO, "dry-run: no valid assignment; nothing to do")
            return
        if paused:
            log(logging.INFO, "dry-run: rollout paused; would start nothing")
            return
        pod_list = self.kube.list_pods()
        by_node: dict[str, list[str]] = {}
        for p in pod_list:
            nn = (p.get("spec") or {}).get("nodeName")
            if nn and podlib.blocking(p):
                by_node.setdefault(nn, []).append("/".join(podlib.ref(p)))
        for pool in assignment.pools:
            cands = self._candidates(nodes, targets, assignment, pool.name)
            cands.sort(key=lambda c: (len(by_node.get(c, [])), c))
            if cands and not pool.in_window(now):
                log(logging.INFO, "dry-run: outside the maintenance windows; would wait", pool=pool.name)
            for i, name in enumerate(cands):
                cfg = assignment.configs[targets[name].config]
                batch = i // pool.max_unavailable + 1
                common = {"node": name, "pool": pool.name, "batch": batch}
                busy = sorted(by_node.get(name, []))
                labels = f"{st.MIG_CONFIG}={cfg.name} {st.DEVICE_PLUGIN_CONFIG}={cfg.device_plugin_config}"
                reason = incompatible(nodes[name], cfg)
                if reason is not None:
                    steps = [f"fail without touching the node (permanent, no retry): {reason}"]
                elif device_plugin_only(nodes[name], cfg):
                    steps = [
                        f"cordon: spec.unschedulable=true, taint {st.TAINT_KEY}:{st.TAINT_EFFECT}",
                        f"wait up to {self.s.drain_grace_timeout:g}s for GPU pods to finish: {busy}",
                        "evict the GPU pods still running via the Eviction API (PDB 429s are waited out)",
                        f"set label {st.DEVICE_PLUGIN_CONFIG}={cfg.device_plugin_config} only "
                        f"(not MIG-capable: no MIG manager, no {st.MIG_CONFIG})",
                        f"verify allocatable {dict(sorted(cfg.resources.items()))}",
                        "uncordon",
                    ]
                else:
                    steps = [
                        f"cordon: spec.unschedulable=true, taint {st.TAINT_KEY}:{st.TAINT_EFFECT}",
                        f"wait up to {self.s.drain_grace_timeout:g}s for GPU pods to finish: {busy}",
                        "evict the GPU pods still running via the Eviction API (PDB 429s are waited out)",
                        f"set labels {labels}",
                        f"wait up to {self.s.apply_timeout:g}s for {st.MIG_STATE}=success",
                        f"verify allocatable {dict(sorted(cfg.resources.items()))}",
                        "uncordon",
                    ]
                log(
                    logging.INFO,
                    "dry-run: would reconfigure node",
                    **common,
                    **{"from": nodes[name].current_config, "to": cfg.name},
                )
                for j, step in enumerate(steps, 1):
                    log(logging.INFO, f"dry-run: would {step}", **common, step=j)
