"""Prometheus metrics (own registry) and the /healthz, /readyz, /metrics endpoint."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from controller.state import Phase


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
            "Assigned nodes whose nvidia.com/mig.config differs from the target.",
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
        self.leader = Gauge("migc_leader", "1 while this replica holds the leader Lease.", registry=r)
        for phase in Phase:
            self.nodes.labels(phase=phase.value)


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
