"""controller/metrics.py: label values a pod cannot inflate, the pending histogram, health, endpoint."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from controller.metrics import Endpoint, Health, Metrics, requested_profile, scheduling_delay
from unit.controller.support import pod


def _scheduled(name: str, created: str | None, scheduled: str | None, **kw: Any) -> dict[str, Any]:
    p = pod(name, "n0", uid=name, **kw)
    if created is not None:
        p["metadata"]["creationTimestamp"] = created
    if scheduled is not None:
        p["status"]["conditions"] = [
            {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-12-01T00:00:00Z"},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled},
        ]
    return p


@pytest.mark.parametrize(
    ("resource", "label"),
    [
        ("nvidia.com/gpu", "gpu"),
        ("nvidia.com/mig-1g.10gb", "1g.10gb"),
        ("nvidia.com/mig-1g.10gb.me", "1g.10gb.me"),
        ("nvidia.com/mig-1c.3g.40gb", "1c.3g.40gb"),
        ("nvidia.com/mig-whatever-i-like", "other"),
        ("nvidia.com/mig-0g.10gb", "other"),
    ],
)
def test_requested_profile(resource: str, label: str) -> None:
    assert requested_profile(pod("p", "n0", resource=resource)) == label


def test_several_gpu_resources_are_other() -> None:
    p = pod("p", "n0", resource="nvidia.com/gpu")
    p["spec"]["containers"].append({"resources": {"requests": {"nvidia.com/mig-1g.10gb": "1"}}})
    assert requested_profile(p) == "other"
    assert requested_profile(pod("q", "n0", resource="cpu")) == "other"


def test_scheduling_delay() -> None:
    assert scheduling_delay(_scheduled("a", "2026-12-01T00:00:00Z", "2026-12-01T00:01:30Z")) == 90.0
    assert scheduling_delay(_scheduled("b", "2026-12-01T00:00:00Z", None)) is None  # still pending
    # A clock step backwards is no negative wait; a time without zone is unreadable.
    assert scheduling_delay(_scheduled("c", "2026-12-01T00:01:00Z", "2026-12-01T00:00:00Z")) == 0.0
    assert scheduling_delay(_scheduled("d", "2026-12-01T00:00:00", "2026-12-01T00:01:00Z")) is None
    assert scheduling_delay(_scheduled("e", None, "2026-12-01T00:01:00Z")) is None


def test_pending_histogram_counts_each_gpu_pod_once_and_not_what_was_there_at_start() -> None:
    m = Metrics()

    def count(profile: str) -> float:
        return m.registry.get_sample_value("migc_gpu_pod_pending_seconds_count", {"profile": profile}) or 0.0

    old = _scheduled("old", "2026-12-01T00:00:00Z", "2026-12-01T00:00:10Z")
    m.observe_pods([old])  # the first sweep (a restart) only remembers
    assert count("gpu") == 0
    new = _scheduled("new", "2026-12-01T00:00:00Z", "2026-12-01T00:00:20Z", resource="nvidia.com/mig-1g.10gb")
    ds = _scheduled("ds", "2026-12-01T00:00:00Z", "2026-12-01T00:00:20Z", daemonset=True)
    m.observe_pods([old, new, ds])
    m.observe_pods([old, new, ds])
    assert (count("gpu"), count("1g.10gb")) == (0, 1)
    total = m.registry.get_sample_value("migc_gpu_pod_pending_seconds_sum", {"profile": "1g.10gb"})
    assert total == 20.0


def test_pending_due_at_most_once_per_interval() -> None:
    m = Metrics()
    assert m.pending_due(3600.0) and not m.pending_due(3600.0)
    assert m.pending_due(0.0)


def test_every_phase_gauge_exists_from_the_start() -> None:
    m = Metrics()
    for phase in ("Idle", "Cordoned", "Draining", "Applying", "Verifying", "Done", "Failed"):
        assert m.registry.get_sample_value("migc_nodes", {"phase": phase}) == 0.0


def test_health_and_endpoint() -> None:
    health = Health(stale_after=60.0)
    assert health.live() and not health.ready()  # ready only once the API answered
    ep = Endpoint(Metrics(), health, "127.0.0.1", 0)
    try:

        def get(path: str) -> tuple[int, bytes]:
            # One request served on a thread of its own (``start`` would serve forever, and its
            # ``stop`` waits out the server's 0.5 s poll).
            threading.Thread(target=ep.server.handle_request, daemon=True).start()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ep.port}{path}", timeout=5) as r:
                    return int(r.status), bytes(r.read())
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read()

        assert get("/healthz") == (200, b"ok\n")
        assert get("/readyz") == (503, b"not ok\n")
        health.api_ok()
        assert get("/readyz?verbose") == (200, b"ok\n")
        code, body = get("/metrics")
        assert code == 200 and b"migc_layout_drift_nodes" in body
        assert get("/other")[0] == 404
    finally:
        ep.server.server_close()
    stale = Health(stale_after=0.0)
    stale.api_ok()
    assert not stale.live() and not stale.ready()
