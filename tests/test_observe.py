"""The observed-state reader: pod requests, hints, nodes, snapshot files and the Prometheus client."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import statusfleet as sf

from compiler.observe import ObserveError, read_snapshots
from compiler.observe.parse import parse_duration, parse_node, parse_pod, parse_preference
from compiler.observe.prometheus import FB_USED, GR_ENGINE_ACTIVE, instance_usage

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


def test_snapshot_files_merge(tmp_path: Path) -> None:
    whole = sf.fleet()
    nodes = {
        "kind": "NodeList",
        "items": [{k: v for k, v in i.items() if k != "kind"} for i in whole["items"] if i["kind"] == "Node"],
    }
    pods = {"kind": "List", "items": [i for i in whole["items"] if i["kind"] == "Pod"]}
    (tmp_path / "nodes.json").write_text(json.dumps(nodes))
    (tmp_path / "pods.json").write_text(json.dumps(pods))
    (tmp_path / "all.json").write_text(json.dumps(whole))
    split = read_snapshots([tmp_path / "nodes.json", tmp_path / "pods.json"], NOW)
    one = read_snapshots([tmp_path / "all.json"], NOW)
    assert split.nodes == one.nodes and split.pods == one.pods
    assert len(one.nodes) == 11
    # one pod per allocated unit; the CPU-only and the finished pod are not kept
    assert len(one.pods) == sum(1 for i in whole["items"] if i["kind"] == "Pod") - 2


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "neither a Kubernetes List"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_unusable_snapshot_is_an_error(tmp_path: Path, content: bytes, why: str) -> None:
    path = tmp_path / "snap.json"
    path.write_bytes(content)
    with pytest.raises(ObserveError) as info:
        read_snapshots([path], NOW)
    assert info.value.diagnostic.code == "MIGC400" and why in info.value.diagnostic.message


def test_only_regular_bounded_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ObserveError, match="not a regular file"):
        read_snapshots([tmp_path], NOW)
    with pytest.raises(ObserveError, match="No such file"):
        read_snapshots([tmp_path / "missing.json"], NOW)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ObserveError, match="not a regular file"):  # must not block on the pipe
        read_snapshots([fifo], NOW)
    big = tmp_path / "big.json"
    big.write_text(json.dumps(sf.fleet()))
    monkeypatch.setattr("compiler.observe.read.MAX_SNAPSHOT_BYTES", 1000)
    with pytest.raises(ObserveError, match="more than the 1000"):
        read_snapshots([big], NOW)


# --- Prometheus ----------------------------------------------------------------------------------
# The HTTP API's instant query answer (prometheus web/api/v1/api.go): {"status": "success",
# "data": {"resultType": "vector", "result": [{"metric": {...}, "value": [<unix time>, "<value>"]}]}}
# and for a failure {"status": "error", "errorType": ..., "error": ...} with a 4xx/5xx code.
def dcgm_sample(
    metric: str, node: str, gpu: int, value: float, gi: str = "", profile: str = "", **extra: str
) -> dict[str, Any]:
    labels = {
        "__name__": metric,
        "Hostname": node,
        "gpu": str(gpu),
        "modelName": "NVIDIA A100-SXM4-80GB",
        **extra,
    }
    if gi:
        labels.update({"GPU_I_ID": gi, "GPU_I_PROFILE": profile})
    return {"metric": labels, "value": [1764568800.0, repr(value)]}


class FakePrometheus:
    """A Prometheus query endpoint on 127.0.0.1 answering from a fixed table of samples."""

    def __init__(
        self, samples: dict[str, list[dict[str, Any]]], *, status: int = 200, delay: float = 0.0
    ) -> None:
        self.samples, self.status, self.delay = samples, status, delay
        self.queries: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                q = parse_qs(url.query).get("query", [""])[0]
                outer.queries.append(q)
                body: dict[str, Any]
                time.sleep(outer.delay)
                if url.path != "/api/v1/query":
                    code, body = 404, {"status": "error", "errorType": "not_found", "error": "no route"}
                elif outer.status != 200:
                    code, body = outer.status, {"status": "error", "errorType": "internal", "error": "boom"}
                else:
                    code = 200
                    body = {
                        "status": "success",
                        "data": {"resultType": "vector", "result": outer.samples.get(q, [])},
                    }
                raw = json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakePrometheus:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def prometheus() -> Iterator[FakePrometheus]:
    samples = {
        GR_ENGINE_ACTIVE: [
            dcgm_sample(GR_ENGINE_ACTIVE, "gpu-a100-use1-01", 0, 0.8),
            dcgm_sample(
                GR_ENGINE_ACTIVE, "gpu-a100-use1-04", 2, 0.25, "3", "1g.10gb", namespace="search", pod="p"
            ),
            dcgm_sample(GR_ENGINE_ACTIVE, "", 1, 0.5),  # no node: not attributable, dropped
        ],
        FB_USED: [dcgm_sample(FB_USED, "gpu-a100-use1-01", 0, 61000.0)],
    }
    with FakePrometheus(samples) as server:
        yield server


def test_usage_from_prometheus(prometheus: FakePrometheus) -> None:
    usage, diags = instance_usage(prometheus.url, timeout=5)
    assert diags == []
    assert sorted(prometheus.queries) == sorted([GR_ENGINE_ACTIVE, FB_USED])
    whole, inst = usage
    assert (whole.node, whole.gpu, whole.instance, whole.engine_active, whole.memory_used_mib) == (
        "gpu-a100-use1-01",
        0,
        "",
        0.8,
        61000.0,
    )
    assert (inst.node, inst.gpu, inst.instance, inst.profile, inst.pod) == (
        "gpu-a100-use1-04",
        2,
        "3",
        "1g.10gb",
        "search/p",
    )
    assert inst.memory_used_mib is None


def test_usage_reads_the_lowercase_hostname_of_newer_dcgm_exporters() -> None:
    """dcgm-exporter's main branch labels the node ``hostname`` (NVIDIA/dcgm-exporter d5e5f510, #655)."""
    sample = dcgm_sample(GR_ENGINE_ACTIVE, "", 0, 0.4)
    sample["metric"]["hostname"] = sample["metric"].pop("Hostname") or "gpu-h100-use1-01"
    with FakePrometheus({GR_ENGINE_ACTIVE: [sample], FB_USED: []}) as server:
        usage, diags = instance_usage(server.url, timeout=5)
    assert diags == [] and [(u.node, u.gpu, u.engine_active) for u in usage] == [("gpu-h100-use1-01", 0, 0.4)]


def test_prometheus_failures_are_one_warning() -> None:
    with FakePrometheus({}, status=500) as server:
        usage, diags = instance_usage(server.url, timeout=5)
    assert usage == () and [d.code for d in diags] == ["MIGC404"] and "HTTP 500" in diags[0].message
    with FakePrometheus({}, delay=2.0) as server:
        started = time.monotonic()
        usage, diags = instance_usage(server.url, timeout=0.3)
        assert time.monotonic() - started < 1.5
    assert usage == () and [d.code for d in diags] == ["MIGC404"]
    usage, diags = instance_usage("ftp://127.0.0.1:1", timeout=1)
    assert [d.code for d in diags] == ["MIGC404"] and "not an http" in diags[0].message


# --- no input crashes the reader ---------------------------------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from compiler.observe.parse import parse_objects  # noqa: E402

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
    import copy as _copy

    obj = _copy.deepcopy(data.draw(st.sampled_from(SAMPLE)))
    path = data.draw(st.sampled_from(_paths(obj)[1:]))
    value = data.draw(JSON)
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    nodes, pods, diags = parse_objects([(obj, "f.json")], NOW)
    assert len(nodes) + len(pods) <= 1
    assert all(d.code in ("MIGC401", "MIGC402") for d in diags)


@pytest.mark.parametrize("field", ["containers", "initContainers"])
def test_container_lists_of_the_wrong_type(field: str) -> None:
    obj = sf.pod("p", "search", "nvidia.com/mig-1g.10gb", node="n")
    obj["spec"][field] = 5
    pod, diags = parse_pod(obj, NOW)
    assert diags == [] and (pod is None if field == "containers" else pod is not None)


def test_live_reading_without_the_client_is_a_coded_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from compiler.observe import read_cluster

    monkeypatch.setitem(sys.modules, "kubernetes", None)  # as if the package were not installed
    with pytest.raises(ObserveError) as info:
        read_cluster(NOW, kubeconfig="/nonexistent")
    assert (
        info.value.diagnostic.code == "MIGC403" and "pip install kubernetes" in info.value.diagnostic.message
    )


def test_live_reading_with_a_broken_kubeconfig(tmp_path: Path) -> None:
    from compiler.observe import read_cluster

    bad = tmp_path / "config"
    bad.write_text("apiVersion: v1\nkind: Config\ncontexts: []\n")
    with pytest.raises(ObserveError) as info:
        read_cluster(NOW, kubeconfig=str(bad))
    assert info.value.diagnostic.code == "MIGC403" and str(bad) in info.value.diagnostic.message
