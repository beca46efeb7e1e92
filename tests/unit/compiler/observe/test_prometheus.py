"""compiler/observe/prometheus.py: DCGM exporter samples from a Prometheus instant query, merged per
GPU and MIG instance.

Answers are the HTTP API's shape (prometheus/prometheus web/api/v1/api.go: ``{"status": "success",
"data": {"resultType": "vector", "result": [{"metric": {...}, "value": [ts, "v"]}]}}``); the network
is replaced by a function returning those bytes. Then the real HTTP exchange and its deadline,
against tests/fakeprometheus.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fakeprometheus import FakePrometheus, dcgm_sample

from compiler.observe.prometheus import (
    FB_USED,
    GR_ENGINE_ACTIVE,
    InstanceUsage,
    PrometheusError,
    instance_usage,
    query,
)


def _vector(*samples: tuple[dict[str, str], str]) -> bytes:
    result = [{"metric": m, "value": [1700000000.0, v]} for m, v in samples]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


def _serve(monkeypatch: pytest.MonkeyPatch, answers: dict[str, bytes]) -> list[str]:
    urls: list[str] = []

    def fetch(url: str, base_url: str, promql: str, timeout: float) -> bytes:
        urls.append(url)
        return answers[promql]

    monkeypatch.setattr("compiler.observe.prometheus._fetch", fetch)
    return urls


def test_query_returns_labels_and_finite_values(monkeypatch: pytest.MonkeyPatch) -> None:
    urls = _serve(monkeypatch, {"up": _vector(({"job": "a"}, "1"), ({"job": "b"}, "NaN"), ({}, "+Inf"))})
    assert query("http://prom:9090/", "up", 1.0) == [({"job": "a"}, 1.0)]  # NaN and Inf dropped
    assert urls == ["http://prom:9090/api/v1/query?query=up"]  # one slash, the query URL-encoded


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"status": "error", "errorType": "bad_data", "error": "parse error"}', "up: bad_data parse error"),
        (b'{"status": "success", "data": {"resultType": "matrix", "result": []}}', "expected a vector"),
        (b"<html>proxy login</html>", "not a Prometheus query answer"),
        (b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}}]}}', "not a"),
        (b"[1, 2]", "not a Prometheus query answer"),
    ],
)
def test_a_bad_answer_is_a_prometheus_error(
    monkeypatch: pytest.MonkeyPatch, body: bytes, message: str
) -> None:
    _serve(monkeypatch, {"up": body})
    with pytest.raises(PrometheusError, match=message):
        query("http://prom", "up", 1.0)


def test_only_http_urls_are_queried(monkeypatch: pytest.MonkeyPatch) -> None:
    urls = _serve(monkeypatch, {})
    with pytest.raises(PrometheusError, match="is not an http"):
        query("file:///etc/passwd", "up", 1.0)
    assert urls == []  # refused before any request


def test_an_oversized_answer_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("compiler.observe.prometheus.MAX_RESPONSE_BYTES", 10)
    _serve(monkeypatch, {"up": _vector(({"job": "a"}, "1"))})
    with pytest.raises(PrometheusError, match="larger than 10 bytes"):
        query("http://prom", "up", 1.0)


def test_usage_merges_both_metrics_per_gpu_and_instance_sorted(monkeypatch: pytest.MonkeyPatch) -> None:
    mig: dict[str, Any] = {"Hostname": "n2", "gpu": "0", "GPU_I_ID": "3", "GPU_I_PROFILE": "1g.10gb"}
    _serve(
        monkeypatch,
        {
            GR_ENGINE_ACTIVE: _vector(
                (mig | {"namespace": "ml", "pod": "train-0"}, "0.25"),
                ({"hostname": "n1", "gpu": "1"}, "0.5"),  # the newer lower-case label
                ({"Hostname": "n1", "gpu": "x"}, "0.9"),  # no device index: skipped
                ({"gpu": "0"}, "0.9"),  # no node: skipped
            ),
            FB_USED: _vector((mig, "2048"), ({"Hostname": "n1", "gpu": "1"}, "100")),
        },
    )
    usage, warnings = instance_usage("http://prom")
    assert warnings == []
    assert usage == (
        InstanceUsage("n1", 1, "", "", 0.5, 100.0, ""),
        InstanceUsage("n2", 0, "3", "1g.10gb", 0.25, 2048.0, "ml/train-0"),
    )


def test_a_failed_query_is_one_warning_and_no_usage(monkeypatch: pytest.MonkeyPatch) -> None:
    _serve(monkeypatch, {GR_ENGINE_ACTIVE: _vector(({"Hostname": "n1", "gpu": "0"}, "1")), FB_USED: b"oops"})
    usage, warnings = instance_usage("http://prom")
    assert usage == ()  # nothing half-merged from the first metric
    assert [w.code for w in warnings] == ["MIGC404"]
    assert warnings[0].message.startswith("no usage from Prometheus: DCGM_FI_DEV_FB_USED")


# --- over HTTP, against a real server on 127.0.0.1 (moved from tests/test_observe.py) ---------


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
