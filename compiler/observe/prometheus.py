"""GPU usage from Prometheus: the DCGM exporter's per-GPU and per-MIG-instance metrics.

One instant query per metric through the HTTP API (``GET /api/v1/query``, Prometheus
``web/api/v1/api.go``), with a timeout. The DCGM exporter (NVIDIA/dcgm-exporter ``internal/pkg/
counters``, 3.x/4.x) labels every sample with ``Hostname`` (the node; ``hostname`` since
NVIDIA/dcgm-exporter d5e5f510, #655 "Rename Hostname label to hostname": both are read), ``gpu``
(the device index)
and, for a MIG instance, ``GPU_I_ID`` and ``GPU_I_PROFILE``; with Kubernetes pod mapping enabled
also ``namespace`` and ``pod``. Metrics used:

* ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``: ratio (0–1) of time the graphics engine was active;
* ``DCGM_FI_DEV_FB_USED``: frame-buffer memory in use, MiB.
"""

from __future__ import annotations

import json
import math
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


def query(base_url: str, promql: str, timeout: float) -> list[tuple[dict[str, str], float]]:
    """An instant vector: ``[(labels, value)]``; raises :class:`PrometheusError` on any failure."""
    url = base_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    if not url.startswith(("http://", "https://")):
        raise PrometheusError(f"{base_url!r} is not an http(s) URL")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            raw = resp.read(MAX_RESPONSE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise PrometheusError(f"HTTP {exc.code} for {promql}") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise PrometheusError(f"cannot reach {base_url}: {reason}") from exc
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
