"""Prometheus metrics (own registry) and the /healthz, /readyz, /metrics endpoint."""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from controller import pods as podlib
from controller.state import Phase

# A MIG profile as the device plugin's mixed strategy names the resource (nvidia.com/mig-<profile>),
# e.g. 1g.10gb, 1g.10gb.me (the "+me" profile), 1c.3g.40gb. Anything else becomes "other", so a pod
# asking for a made-up resource name cannot grow the label set.
_PROFILE = re.compile(r"^(?:[1-9]c\.)?[1-9]g\.[0-9]{1,4}gb(?:\.me)?$")


def requested_profile(pod: Mapping[str, Any]) -> str:
    """The ``profile`` label of a GPU pod: its one MIG profile, ``gpu`` for whole GPUs, else ``other``.

    ``other`` covers pods asking for several GPU resources and names that are no MIG profile.
    """
    spec = pod.get("spec") or {}
    names: set[str] = set()
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = c.get("resources") or {}
        for kind in ("requests", "limits"):
            names.update(k for k in (res.get(kind) or {}) if podlib.is_gpu_resource(k))
    if len(names) != 1:
        return "other"
    (name,) = names
    if name == podlib.GPU_RESOURCE:
        return "gpu"
    profile = name[len(podlib.MIG_RESOURCE_PREFIX) :]
    return profile if _PROFILE.match(profile) else "other"


def _time(value: object) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else None


def scheduling_delay(pod: Mapping[str, Any]) -> float | None:
    """Seconds from a pod's creation to its ``PodScheduled=True`` condition; None while it pends."""
    created = _time((pod.get("metadata") or {}).get("creationTimestamp"))
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            scheduled = _time(cond.get("lastTransitionTime"))
            if created is None or scheduled is None:
                return None
            return max(0.0, (scheduled - created).total_seconds())
    return None


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.reconfigurations = Counter(
            "migc_reconfigurations",
            "Node reconfigurations that finished, by pool and result.",
            ["pool", "result"],
            registry=r,
        )
        self.duration = Histogram(
            "migc_reconfiguration_duration_seconds",
            "Time from cordon to uncordon of a successful node reconfiguration.",
            buckets=(30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400),
            registry=r,
        )
        self.nodes = Gauge("migc_nodes", "Assigned nodes by migc phase.", ["phase"], registry=r)
        self.drift = Gauge(
            "migc_layout_drift_nodes",
            "Assigned nodes that do not carry their target config (label differs, or its state is "
            "not success).",
            registry=r,
        )
        self.evictions = Counter("migc_evictions", "Eviction API calls, by result.", ["result"], registry=r)
        self.refusals = Counter(
            "migc_assignment_refusals",
            "Assignment revisions (or targets in them) refused before any node was touched, by reason.",
            ["reason"],
            registry=r,
        )
        self.halted = Gauge(
            "migc_rollout_halted",
            "1 while the current revision's rollout admits no new node because too many nodes failed.",
            registry=r,
        )
        self.state_resets = Counter(
            "migc_state_resets",
            "Nodes whose migc.dev/* record did not follow from the assignment and the node's real "
            "state (written by someone else) and was reset to Idle without acting on it.",
            registry=r,
        )
        self.leader = Gauge("migc_leader", "1 while this replica holds the leader Lease.", registry=r)
        self.dra_pools = Gauge(
            "migc_dra_pools",
            "Pools of the DraPlan in use, by MIG mode (static: rolled out, verified from ResourceSlices; "
            "dynamic: the DRA driver's DynamicMIG, left alone).",
            ["mig"],
            registry=r,
        )
        self.pending = Histogram(
            "migc_gpu_pod_pending_seconds",
            "Time GPU pods waited from creation to being scheduled, by requested MIG profile "
            "(gpu: whole GPUs; other: several GPU resources or an unknown name).",
            ["profile"],
            buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 10800),
            registry=r,
        )
        self._pending_seen: set[tuple[str, str, str]] | None = None
        self._pending_at: float | None = None
        for phase in Phase:
            self.nodes.labels(phase=phase.value)

    def pending_due(self, interval: float) -> bool:
        """Whether a pod sweep for the pending histogram is due (at most one per ``interval`` s)."""
        now = time.monotonic()
        if self._pending_at is not None and now - self._pending_at < interval:
            return False
        self._pending_at = now
        return True

    def observe_pods(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """Feed ``migc_gpu_pod_pending_seconds`` from a list of all pods, each GPU pod once.

        A GPU pod (not a DaemonSet's) is observed the first time a sweep finds it scheduled; the
        delay is read from its own timestamps, so the sweep cadence does not change the value. The
        first sweep only remembers what is already scheduled: after a restart no pod counts twice.
        """
        scheduled: dict[tuple[str, str, str], tuple[str, float]] = {}
        for pod in pods:
            if not podlib.uses_gpu(pod) or podlib.is_daemonset_pod(pod):
                continue
            delay = scheduling_delay(pod)
            if delay is None:
                continue
            ns, name = podlib.ref(pod)
            key = (ns, name, str((pod.get("metadata") or {}).get("uid", "")))
            scheduled[key] = (requested_profile(pod), delay)
        if self._pending_seen is not None:
            for key in sorted(scheduled.keys() - self._pending_seen):
                profile, delay = scheduled[key]
                self.pending.labels(profile=profile).observe(delay)
        self._pending_seen = set(scheduled)


class Health:
    """Liveness = the main loop keeps turning; readiness = the API answered recently."""

    def __init__(self, stale_after: float) -> None:
        self.stale_after = stale_after
        self._lock = threading.Lock()
        self._loop_at = time.monotonic()
        self._api_ok_at: float | None = None

    def loop_tick(self) -> None:
        with self._lock:
            self._loop_at = time.monotonic()

    def api_ok(self) -> None:
        with self._lock:
            self._api_ok_at = time.monotonic()

    def live(self) -> bool:
        with self._lock:
            return time.monotonic() - self._loop_at < self.stale_after

    def ready(self) -> bool:
        with self._lock:
            return self._api_ok_at is not None and time.monotonic() - self._api_ok_at < self.stale_after


class Endpoint:
    def __init__(self, metrics: Metrics, health: Health, address: str, port: int) -> None:
        metrics_ = metrics
        health_ = health

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    body, ctype, code = generate_latest(metrics_.registry), CONTENT_TYPE_LATEST, 200
                elif path in ("/healthz", "/readyz"):
                    ok = health_.live() if path == "/healthz" else health_.ready()
                    body, ctype, code = (b"ok\n" if ok else b"not ok\n"), "text/plain", 200 if ok else 503
                else:
                    body, ctype, code = b"not found\n", "text/plain", 404
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # probes every few seconds would drown the structured log

        self.server = ThreadingHTTPServer((address, port), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self._thread = threading.Thread(target=self.server.serve_forever, name="migc-http", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
