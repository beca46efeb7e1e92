"""Issue 12 item 2: the metrics operators of dynamic MIG watch, against the API emulator.

``migc_reconfigurations_total{pool,result}`` counts finished node reconfigurations;
``migc_gpu_pod_pending_seconds{profile}`` is the time GPU pods waited to be scheduled.
"""

from __future__ import annotations

import urllib.request
from typing import Any

from conftest import Cluster, assignment
from emulation import PODS

from controller.metrics import Metrics, requested_profile, scheduling_delay

OLD, NEW = "all-1g.10gb", "all-3g.40gb"
NODES = ["n0", "n1"]
CREATED = "2026-12-01T06:00:00Z"


def _pod(name: str, resources: dict[str, str], *, node: str | None, scheduled: str | None) -> dict[str, Any]:
    """A pod as the API server returns it: ``creationTimestamp`` set on create; the binding subresource
    sets ``spec.nodeName`` and the ``PodScheduled=True`` condition, whose lastTransitionTime is the
    bind time (kubernetes pkg/registry/core/pod/storage/storage.go setPodHostAndAnnotations,
    pkg/api/v1/pod/util.go UpdatePodCondition). Until then the scheduler keeps PodScheduled=False
    (pkg/scheduler/schedule_one.go handleSchedulingFailure)."""
    cond: dict[str, str] = (
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled}
        if scheduled
        else {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    )
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"limits": resources}}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}", "creationTimestamp": CREATED},
        "spec": spec,
        "status": {"phase": "Running" if scheduled else "Pending", "conditions": [cond]},
    }


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text: str = r.read().decode()
    return text


def test_rollout_counts_reconfigurations_and_pending_time_by_profile(cluster: Cluster) -> None:
    cluster.add_nodes(NODES, OLD)
    # scheduled before the controller started: history, not counted (a restart counts no pod twice)
    cluster.emu.upsert(
        PODS, "ml", "old", _pod("old", {"nvidia.com/gpu": "1"}, node="n0", scheduled="2026-12-01T06:00:07Z")
    )
    waiting = _pod("waiting", {"nvidia.com/mig-3g.40gb": "1"}, node=None, scheduled=None)
    cluster.emu.upsert(PODS, "ml", "waiting", waiting)
    ctl = cluster.start(http=True, loop__resync_interval=0.05)
    assert ctl.endpoint is not None
    port = ctl.endpoint.port
    cluster.set_assignment(assignment(dict.fromkeys(NODES, NEW)))
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NODES, NEW)))
    cluster.wait(lambda: 'migc_reconfigurations_total{pool="a100",result="success"} 2.0' in _metrics(port))
    text = _metrics(port)
    assert 'result="failed"' not in text
    assert "migc_gpu_pod_pending_seconds_count{" not in text  # nothing was scheduled yet

    # the new layout has the 3g.40gb instance: the scheduler binds the waiting pod 95 s after creation
    bound = _pod("waiting", {"nvidia.com/mig-3g.40gb": "1"}, node="n0", scheduled="2026-12-01T06:01:35Z")
    cluster.emu.upsert(PODS, "ml", "waiting", bound)
    fresh = _pod("fresh", {"nvidia.com/gpu": "1"}, node="n1", scheduled="2026-12-01T06:00:02Z")
    cluster.emu.upsert(PODS, "ml", "fresh", fresh)
    want = 'migc_gpu_pod_pending_seconds_count{profile="3g.40gb"} 1.0'
    cluster.wait(lambda: want in _metrics(port))
    cluster.wait(lambda: 'migc_gpu_pod_pending_seconds_count{profile="gpu"} 1.0' in _metrics(port))
    text = _metrics(port)
    assert 'migc_gpu_pod_pending_seconds_sum{profile="3g.40gb"} 95.0' in text
    assert 'migc_gpu_pod_pending_seconds_bucket{le="60.0",profile="3g.40gb"} 0.0' in text
    assert 'migc_gpu_pod_pending_seconds_bucket{le="120.0",profile="3g.40gb"} 1.0' in text
    assert 'migc_gpu_pod_pending_seconds_sum{profile="gpu"} 2.0' in text  # "old" was never observed
    # later sweeps see the same pods again: each is observed once
    n = len(cluster.controller_calls())
    cluster.wait(lambda: len(cluster.controller_calls()) > n + 4)
    assert want in _metrics(port)


def test_profile_label_is_bounded() -> None:
    def pod(*limits: dict[str, str]) -> dict[str, Any]:
        return {"spec": {"containers": [{"resources": {"limits": lim}} for lim in limits]}}

    assert requested_profile(pod({"nvidia.com/mig-1g.10gb": "1", "cpu": "2"})) == "1g.10gb"
    assert requested_profile(pod({"nvidia.com/mig-1g.10gb.me": "1"})) == "1g.10gb.me"
    assert requested_profile(pod({"nvidia.com/mig-1c.3g.40gb": "1"})) == "1c.3g.40gb"
    assert requested_profile(pod({"nvidia.com/gpu": "2"})) == "gpu"
    assert requested_profile(pod({"nvidia.com/mig-1g.10gb": "1"}, {"nvidia.com/mig-2g.20gb": "1"})) == "other"
    assert requested_profile(pod({"nvidia.com/mig-anything-a-user-types": "1"})) == "other"


def test_only_scheduled_gpu_pods_are_observed_once_and_not_on_the_first_sweep() -> None:
    m = Metrics()
    before = _pod("before", {"nvidia.com/gpu": "1"}, node="n0", scheduled="2026-12-01T06:00:10Z")
    pending = _pod("p", {"nvidia.com/mig-1g.10gb": "1"}, node=None, scheduled=None)
    cpu = _pod("cpu", {"cpu": "1"}, node="n0", scheduled="2026-12-01T06:00:30Z")
    m.observe_pods([before, pending, cpu])
    assert scheduling_delay(pending) is None and scheduling_delay(before) == 10.0
    bound = _pod("p", {"nvidia.com/mig-1g.10gb": "1"}, node="n0", scheduled="2026-12-01T06:00:20Z")
    m.observe_pods([before, bound, cpu])
    m.observe_pods([before, bound, cpu])
    samples = {
        (s.name, s.labels.get("profile"), s.labels.get("le")): s.value
        for family in m.registry.collect()
        if family.name == "migc_gpu_pod_pending_seconds"
        for s in family.samples
    }
    assert samples[("migc_gpu_pod_pending_seconds_count", "1g.10gb", None)] == 1.0
    assert samples[("migc_gpu_pod_pending_seconds_sum", "1g.10gb", None)] == 20.0
    assert ("migc_gpu_pod_pending_seconds_count", "gpu", None) not in samples
