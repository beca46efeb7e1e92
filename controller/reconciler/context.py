"""What every phase handler shares: the API, settings, metrics, and the few writes they all make.

Memory here holds only backoff timers and "already logged" markers; losing it (a restart, a new
leader) changes nothing but timing, because every decision is derived from the Node objects.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller import pods as podlib
from controller import state as st
from controller.assignment import Assignment, ConfigSpec, Target
from controller.claims import HeldCache
from controller.dra import DraPlan
from controller.errors import ControllerError
from controller.kube import Kube
from controller.logs import log
from controller.metrics import Metrics
from controller.reconciler.migparted import MountedConfigs
from controller.settings import Settings
from controller.state import NodeView, Phase

Annotations = dict[str, str | None]


def truthy(v: str | None) -> bool:
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


@dataclass(frozen=True)
class Step:
    """One node's situation in this pass: what a phase handler decides from."""

    node: NodeView
    desired: Target | None  # what the current valid assignment wants for it (None: not covered)
    assignment: Assignment | None  # the assignment whose configs apply (the last valid one)
    now: dt.datetime

    @property
    def retarget(self) -> Target | None:
        """The new target when the assignment changed under a node in flight, else None."""
        d = self.desired
        if d is None or d.config == self.node.target:
            return None
        # A rollback holds the node at its previous config -- unless the node already carries
        # what the assignment wants: there is nothing to roll back then, whatever the
        # annotation claims (``migc.dev/rolling-back`` is writable by anyone who can patch Nodes).
        if self.node.rolling_back and not self.node.converged_to(d.config):
            return None
        return d

    @property
    def config(self) -> ConfigSpec | None:
        if self.assignment is None or self.node.target is None:
            return None
        return self.assignment.configs.get(self.node.target)

    @property
    def t(self) -> str:
        return st.fmt_time(self.now)


class Backoff:
    """Per-node exponential backoff timers (monotonic clock; memory only, by design)."""

    def __init__(self, base: float, cap: float) -> None:
        self.base, self.cap = base, cap
        self._at: dict[str, float] = {}
        self._delay: dict[str, float] = {}

    def active(self, node: str) -> bool:
        return self._at.get(node, 0.0) > time.monotonic()

    def bump(self, node: str) -> float:
        delay = min(self.cap, self._delay.get(node, self.base / 2) * 2)
        self._delay[node] = delay
        self._at[node] = time.monotonic() + delay
        return delay

    def reset(self, node: str) -> None:
        self._at.pop(node, None)
        self._delay.pop(node, None)

    def reset_delay(self, node: str) -> None:
        self._delay.pop(node, None)


class Context:
    def __init__(
        self, kube: Kube, settings: Settings, metrics: Metrics, clock: Callable[[], dt.datetime]
    ) -> None:
        self.kube = kube
        self.s = settings
        self.metrics = metrics
        self.clock = clock
        self.retry = Backoff(settings.api.retry_backoff, settings.api.retry_backoff_max)
        self.evict = Backoff(settings.drain.eviction_backoff, settings.drain.eviction_backoff_max)
        self.mounted = MountedConfigs(settings.apply.configmap_sync_delay)
        self._logged: set[tuple[Any, ...]] = set()
        # The cordoned in-flight nodes this controller acted on in its last pass (trust.held):
        # they keep their slots, so that a node half done is never parked for another.
        self.acting: set[str] = set()
        # Of those, the ones that held a maxUnavailable slot (trust.held): a node that may evict keeps
        # its slot before one that turned busy in a surge slot.
        self.acting_busy: set[str] = set()
        # The nodes this controller admitted beyond maxUnavailable because they ran no GPU pod
        # (admission.py, the pool's idleSurge), while they are in flight. In memory only: after a
        # restart no node is known to be one, so every in-flight node counts against maxUnavailable.
        self.surged: set[str] = set()
        # The DraPlan of this pass (the last valid one; None: no pool is on DRA).
        self.dra: DraPlan | None = None
        # The devices running pods hold through ResourceClaims (the per-GPU drain of DRA nodes).
        self.claims = HeldCache()

    # --- logging -----------------------------------------------------------------------------
    def once(self, key: tuple[Any, ...], level: int, msg: str, **fields: Any) -> None:
        if key not in self._logged:
            self._logged.add(key)
            log(level, msg, **fields)

    def seen(self, key: tuple[Any, ...]) -> bool:
        """Mark ``key``; whether it was marked already."""
        if key in self._logged:
            return True
        self._logged.add(key)
        return False

    def forget(self, key: tuple[Any, ...]) -> None:
        self._logged.discard(key)

    # --- writes ------------------------------------------------------------------------------
    def patch(
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
            # A spec write (cordon, uncordon; a taint list, when one is rewritten, is replaced as
            # a whole) is conditional on the node being unchanged since we read it, so a
            # concurrent change from someone else is never lost (a real API server answers 409
            # and we retry from a fresh read).
            if node.resource_version:
                meta["resourceVersion"] = node.resource_version
        return NodeView.from_obj(self.kube.patch_node(node.name, body))

    def event(
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
            "reportingInstance": self.s.leader.identity,
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
        }
        try:
            self.kube.create_event(namespace, body)
        except ControllerError as exc:
            # An Event is best effort: the state (annotations) and the metric already record it.
            log(logging.WARNING, "could not create event", object=name, reason=reason, error=str(exc))

    def assignment_event(self, reason: str, message: str, now: dt.datetime) -> None:
        self.event(self.s.api.namespace, "ConfigMap", "v1", self.s.api.assignment_name, reason, message, now)

    @staticmethod
    def cordon(ann: Annotations) -> tuple[Annotations, dict[str, Any]]:
        """The annotations and spec of a cordon: no taint (see ``state.CORDONED``)."""
        return {**ann, st.CORDONED: "true"}, {"unschedulable": True}

    def uncordon(self, node: NodeView, ann: Annotations) -> NodeView:
        spec: dict[str, Any] = {}
        if node.legacy_taint:  # written by an earlier version: remove it, keep everyone else's
            spec["taints"] = [dict(x) for x in node.taints if x.get("key") != st.TAINT_KEY]
        if not truthy(node.annotations.get(st.PRE_CORDONED)):
            spec["unschedulable"] = False  # a cordon a human set before us stays
        return self.patch(node, {**ann, st.CORDONED: None}, spec=spec)

    def reset(self, node: NodeView, why: str, now: dt.datetime) -> NodeView:
        """Back to Idle without acting: the node's migc.dev/* record does not follow from the
        assignment and the node's real state (someone else wrote it). Reported as a Warning
        Event on the Node and a log line; the cordon, labels and pods are left as they are."""
        claimed = {k: v for k, v in sorted(node.annotations.items()) if k.startswith(st.P)}
        ann: Annotations = dict.fromkeys(st.TRANSIENT)
        ann.update({st.PHASE: Phase.IDLE.value, st.PHASE_SINCE: st.fmt_time(now)})
        updated = self.patch(node, ann)
        self.metrics.state_resets.inc()
        log(logging.WARNING, "migc record reset: not written by this controller", node=node.name, why=why)
        shown = ", ".join(f"{k.removeprefix(st.P)}={v[:64]!r}" for k, v in list(claimed.items())[:12])
        self.event(
            self.s.api.node_event_namespace,
            "Node",
            "v1",
            node.name,
            "MigcStateReset",
            f"migc.dev/* annotations reset to Idle and not acted on: {why} (they claimed {shown}); "
            "only the migc controller writes migc.dev/phase, target-config and phase-since",
            now,
        )
        return updated

    def release(self, node: NodeView, now: dt.datetime) -> NodeView:
        """Hand a node back to the scheduler unchanged (Done, then Idle on the next step)."""
        return self.uncordon(node, {st.PHASE: Phase.DONE.value, st.PHASE_SINCE: st.fmt_time(now)})

    @staticmethod
    def retarget_record(desired: Target, assignment: Assignment | None) -> Annotations:
        return {
            st.TARGET: desired.config,
            st.POOL: desired.pool,
            st.ATTEMPTS: "0",
            st.REVISION: assignment.revision if assignment else None,
        }

    def fail(
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
        if attempts < self.s.failures.max_attempts and not permanent:
            delay = self.s.failures.backoff * 2 ** (attempts - 1)
            ann[st.RETRY_AFTER] = st.fmt_time(now + dt.timedelta(seconds=delay))
        updated = self.patch(node, ann)
        pool = extra.get(st.POOL) or node.annotations.get(st.POOL, "")
        self.metrics.reconfigurations.labels(pool=pool, result="failed").inc()
        log(
            logging.ERROR,
            "reconfiguration failed; node stays cordoned"
            if node.cordoned_by_migc
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
        self.event(
            self.s.api.node_event_namespace,
            "Node",
            "v1",
            node.name,
            "MigReconfigurationFailed",
            f"{reason} (attempt {attempts}); "
            + (
                f"automatic retry at {ann[st.RETRY_AFTER]}"
                if ann[st.RETRY_AFTER]
                else f"node stays cordoned: annotate {st.RETRY}=true to retry, "
                f"{st.ROLLBACK}=true to roll back"
            ),
            now,
        )
        return updated
