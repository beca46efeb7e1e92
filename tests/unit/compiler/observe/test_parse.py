"""compiler/observe/parse.py: pod requests, hints and nodes read from Kubernetes JSON, and no input
that crashes the reader. (Split from tests/test_observe.py; the snapshot reader is in test_read.py,
the Prometheus client in test_prometheus.py.)"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest
import statusfleet as sf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.observe.parse import parse_duration, parse_node, parse_objects, parse_pod, parse_preference

NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)


def test_durations_and_preferences() -> None:
    assert parse_duration("15m") == 900
    assert parse_duration("1h30m") == 5400
    assert parse_duration("90s") == 90
    assert parse_duration("2d") == 172800
    for bad in ("", "15", "m", "soon", "-5m", "1.5h", "0s"):
        assert parse_duration(bad) is None, bad
    assert parse_preference("1g.10gb, 2g.20gb,1g.10gb") == ("1g.10gb", "2g.20gb")
    assert parse_preference("nvidia.com/mig-1g.10gb.me") == ("1g.10gb+me",)
    for bad in ("", "1g.10gb,", "big", "1g.10gb;2g.20gb", "0g.10gb"):
        assert parse_preference(bad) is None, bad


def test_pod_requests_follow_the_scheduler() -> None:
    # kubernetes pkg/api/v1/resource/helpers.go: app containers and sidecars add up, a plain init
    # container runs alone first, so the pod needs at least its amount.
    obj = sf.pod("p", "search", "nvidia.com/mig-1g.10gb", node="n1")
    spec = obj["spec"]
    spec["containers"].append({"name": "b", "resources": {"requests": {"nvidia.com/mig-1g.10gb": 1}}})
    spec["initContainers"] = [
        {"name": "warm", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "3", "nvidia.com/gpu": "1"}}},
        {"name": "side", "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/mig-2g.20gb": "1"}}},
    ]
    pod, diags = parse_pod(obj, NOW)
    assert diags == []
    assert pod is not None
    assert dict(pod.requests) == {
        "nvidia.com/mig-1g.10gb": 3,
        "nvidia.com/gpu": 1,
        "nvidia.com/mig-2g.20gb": 1,
    }
    assert pod.node == "n1" and not pod.pending and pod.pending_seconds is None


def test_pods_without_gpus_or_finished_are_ignored() -> None:
    assert parse_pod(sf.pod("cpu", "search", None, node="n1"), NOW) == (None, [])
    done = sf.pod("done", "search", "nvidia.com/gpu", node="n1", phase="Succeeded")
    assert parse_pod(done, NOW) == (None, [])


def test_pending_pod_hints_and_wait() -> None:
    obj = sf.pod(
        "w",
        "fraud",
        "nvidia.com/mig-1g.20gb",
        created="2026-12-01T05:40:00Z",
        annotations={"migc.dev/profile-preference": "1g.20gb,2g.20gb", "migc.dev/max-wait-time": "15m"},
    )
    pod, diags = parse_pod(obj, NOW)
    assert diags == [] and pod is not None
    assert pod.pending and pod.pending_seconds == 1200.0
    assert pod.profile_preference == ("1g.20gb", "2g.20gb")
    assert pod.max_wait_seconds == 900 and pod.waited_too_long


def test_running_pod_start_time() -> None:
    obj = sf.pod("r", "fraud", "nvidia.com/mig-1g.20gb", node="n1")
    pod, _ = parse_pod(obj, NOW)
    assert pod is not None and pod.started is None  # no status.startTime: unknown
    obj["status"]["startTime"] = "2026-12-01T05:50:00Z"
    pod, _ = parse_pod(obj, NOW)
    assert pod is not None and pod.started == dt.datetime(2026, 12, 1, 5, 50, tzinfo=dt.UTC)
    obj["status"]["startTime"] = "yesterday"  # malformed: unknown, as if absent
    pod, _ = parse_pod(obj, NOW)
    assert pod is not None and pod.started is None


def test_malformed_hints_warn_naming_the_pod() -> None:
    obj = sf.pod(
        "odd",
        "fraud",
        "nvidia.com/mig-1g.20gb",
        annotations={"migc.dev/profile-preference": "fast please", "migc.dev/max-wait-time": "soon"},
    )
    pod, diags = parse_pod(obj, NOW)
    assert pod is not None and pod.profile_preference == () and pod.max_wait_seconds is None
    assert [d.code for d in diags] == ["MIGC401", "MIGC401"]
    assert all("pod fraud/odd" in d.message for d in diags)


def test_bad_quantities_are_warnings() -> None:
    obj = sf.pod("q", "search", "nvidia.com/gpu", node="n1")
    obj["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "half"
    pod, diags = parse_pod(obj, NOW)
    assert pod is None and [d.code for d in diags] == ["MIGC402"]
    assert "pod search/q" in diags[0].message


def test_node_labels_allocatable_and_rollout() -> None:
    doc = sf.prod_assignment()
    obj = sf.node("gpu-a100-use1-04", "a100", "migc-a100-sxm4-80gb-a2aaace0e3", doc, {})
    obj["metadata"]["annotations"].update(
        {
            "migc.dev/phase": "Draining",
            "migc.dev/phase-since": "2026-12-01T05:55:00Z",
            "migc.dev/attempts": "2",
        }
    )
    obj["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "many"
    node, diags = parse_node(obj)
    assert node is not None
    assert [d.code for d in diags] == ["MIGC402"]
    assert node.config == "migc-a100-sxm4-80gb-a2aaace0e3" and node.mig_state == "success"
    assert node.gpu_count == 8 and node.gpu_product == "NVIDIA-A100-SXM4-80GB"
    assert "nvidia.com/mig-1g.10gb" not in dict(node.allocatable)
    assert dict(node.allocatable)["nvidia.com/mig-2g.20gb"] == 5
    assert node.rollout.in_progress and node.rollout.attempts == 2
    assert node.rollout.since == dt.datetime(2026, 12, 1, 5, 55, tzinfo=dt.UTC)


# --- no input crashes the reader ---------------------------------------------------------------------
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6) | st.floats(allow_nan=True),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
SAMPLE = [
    sf.node("gpu-a100-use1-04", "a100", "migc-a100-sxm4-80gb-a2aaace0e3", sf.prod_assignment(), {}),
    sf.pod(
        "p",
        "search",
        "nvidia.com/mig-1g.10gb",
        node="gpu-a100-use1-04",
        annotations={"migc.dev/max-wait-time": "15m"},
    ),
]


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_value_anywhere_is_survived(data: st.DataObject) -> None:
    obj = copy.deepcopy(data.draw(st.sampled_from(SAMPLE)))
    path = data.draw(st.sampled_from(_paths(obj)[1:]))
    value = data.draw(JSON)
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    nodes, pods, diags, _ = parse_objects([(obj, "f.json")], NOW)
    assert len(nodes) + len(pods) <= 1
    assert all(d.code in ("MIGC401", "MIGC402") for d in diags)


@pytest.mark.parametrize("field", ["containers", "initContainers"])
def test_container_lists_of_the_wrong_type(field: str) -> None:
    obj = sf.pod("p", "search", "nvidia.com/mig-1g.10gb", node="n")
    obj["spec"][field] = 5
    pod, diags = parse_pod(obj, NOW)
    assert diags == [] and (pod is None if field == "containers" else pod is not None)
