"""GPU usage from Prometheus: the DCGM exporter's per-GPU and per-MIG-instance metrics.

One instant query per metric through the HTTP API (``GET /api/v1/query``, Prometheus
``web/api/v1/api.go``), with a total deadline: ``timeout`` bounds the whole exchange (connect,
headers and body), not each read, so a server that sends one byte every second cannot hold the
command past it. The request runs in a daemon thread that is abandoned at the deadline.

The DCGM exporter (NVIDIA/dcgm-exporter ``internal/pkg/counters``, 3.x/4.x) labels every sample
with ``Hostname`` (the node; ``hostname`` since NVIDIA/dcgm-exporter d5e5f510, #655 "Rename
Hostname label to hostname": both are read), ``gpu`` (the device index)
and, for a MIG instance, ``GPU_I_ID`` and ``GPU_I_PROFILE``; with Kubernetes pod mapping enabled
also ``namespace`` and ``pod``. Metrics used:

* ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``: ratio (0–1) of time the graphics engine was active;
* ``DCGM_FI_DEV_FB_USED``: frame-buffer memory in use, MiB.
"""

from __future__ import annotations

import json
import math
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from compiler.diagnostics import Diagnostic, make

GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
FB_USED = "DCGM_FI_DEV_FB_USED"
MAX_RESPONSE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, order=True)
class InstanceUsage:
    """Usage of one GPU (``instance`` = "") or one MIG instance (``instance`` = GPU_I_ID)."""

    node: str
    gpu: int
    instance: str
    profile: str = ""
    engine_active: float | None = None  # 0–1
    memory_used_mib: float | None = None
    pod: str = ""  # namespace/name when the exporter maps pods


class PrometheusError(Exception):
    pass


def _fetch(url: str, base_url: str, promql: str, timeout: float) -> bytes:
    """The body at ``url``, all of it within ``timeout`` seconds (at most MAX_RESPONSE_BYTES + 1)."""
    result: list[bytes] = []
    failure: list[PrometheusError] = []

    def get() -> None:
        try:
            # The socket's per-read timeout is longer than the total deadline, so a silent server
            # is always reported by the deadline below ("no complete answer ... within"), never by a
            # read timeout that would race it.
            with urllib.request.urlopen(url, timeout=timeout + 1.0) as resp:
                result.append(resp.read(MAX_RESPONSE_BYTES + 1))
        except urllib.error.HTTPError as exc:
            failure.append(PrometheusError(f"HTTP {exc.code} for {promql}"))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            failure.append(PrometheusError(f"cannot reach {base_url}: {reason}"))
        except Exception as exc:  # http.client's own errors (a malformed status line …)
            failure.append(PrometheusError(f"cannot read {base_url}: {type(exc).__name__}: {exc}"))

    worker = threading.Thread(target=get, name="migc-prometheus", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise PrometheusError(f"no complete answer to {promql} within {timeout:g}s")
    if failure:
        raise failure[0]
    return result[0]


def query(base_url: str, promql: str, timeout: float) -> list[tuple[dict[str, str], float]]:
    """An instant vector: ``[(labels, value)]``; raises :class:`PrometheusError` on any failure."""
    url = base_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    if not url.startswith(("http://", "https://")):
        raise PrometheusError(f"{base_url!r} is not an http(s) URL")
    raw = _fetch(url, base_url, promql, timeout)
    if len(raw) > MAX_RESPONSE_BYTES:
        raise PrometheusError(f"the answer to {promql} is larger than {MAX_RESPONSE_BYTES} bytes")
    try:
        body = json.loads(raw)
        if body.get("status") != "success":
            raise PrometheusError(f"{promql}: {body.get('errorType', '')} {body.get('error', '')}".strip())
        data = body["data"]
        if data.get("resultType") != "vector":
            raise PrometheusError(f"{promql}: expected a vector, got {data.get('resultType')}")
        out: list[tuple[dict[str, str], float]] = []
        for sample in data["result"]:
            value = float(sample["value"][1])
            if math.isfinite(value):
                out.append(({str(k): str(v) for k, v in sample["metric"].items()}, value))
        return out
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise PrometheusError(f"{promql}: not a Prometheus query answer ({exc})") from exc


def instance_usage(
    base_url: str, timeout: float = 10.0
) -> tuple[tuple[InstanceUsage, ...], list[Diagnostic]]:
    """Usage per GPU and MIG instance; on failure no usage and one MIGC404 warning."""
    merged: dict[tuple[str, int, str], dict[str, object]] = {}
    try:
        for metric, field in ((GR_ENGINE_ACTIVE, "engine_active"), (FB_USED, "memory_used_mib")):
            for labels, value in query(base_url, metric, timeout):
                node = labels.get("Hostname") or labels.get("hostname", "")
                try:
                    gpu = int(labels.get("gpu", ""))
                except ValueError:
                    continue
                if not node:
                    continue
                key = (node, gpu, labels.get("GPU_I_ID", ""))
                entry = merged.setdefault(key, {"profile": labels.get("GPU_I_PROFILE", "")})
                entry[field] = value
                if labels.get("pod"):
                    entry["pod"] = f"{labels.get('namespace', '')}/{labels['pod']}"
    except PrometheusError as exc:
        return (), [make("MIGC404", f"no usage from Prometheus: {exc}")]
    usage = []
    for (node, gpu, inst), e in sorted(merged.items()):
        active, mem = e.get("engine_active"), e.get("memory_used_mib")
        usage.append(
            InstanceUsage(
                node=node,
                gpu=gpu,
                instance=inst,
                profile=str(e.get("profile", "")),
                engine_active=float(active) if isinstance(active, float) else None,
                memory_used_mib=float(mem) if isinstance(mem, float) else None,
                pod=str(e.get("pod", "")),
            )
        )
    return tuple(usage), []
