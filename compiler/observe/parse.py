"""Kubernetes Node and Pod JSON (as the API serves it, camelCase) → :mod:`compiler.observe.model`.

Malformed parts of an object are warnings that name the object (MIGC401, MIGC402), never an
exception: a cluster always holds something odd, and ``migc status`` must still show the rest.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from typing import Any

from compiler.diagnostics import Diagnostic, make
from compiler.observe.model import (
    GPU_RESOURCE,
    Counts,
    ObservedNode,
    ObservedPod,
    Rollout,
    is_gpu_resource,
    profile_of,
)

# Node labels set by the GPU Operator's components and annotations set by the migc controller
# (controller/state.py; the compiler may not import the controller, so the names are repeated).
MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_COUNT = "nvidia.com/gpu.count"
PHASE = "migc.dev/phase"
TARGET = "migc.dev/target-config"
PHASE_SINCE = "migc.dev/phase-since"
ATTEMPTS = "migc.dev/attempts"
LAST_ERROR = "migc.dev/last-error"
APPLIED = "migc.dev/applied-config"
PAUSED = "migc.dev/paused"
# Hints users put on pods (issue 11): a profile preference list and a maximum wait.
PROFILE_PREFERENCE = "migc.dev/profile-preference"
MAX_WAIT = "migc.dev/max-wait-time"

_PROFILE = re.compile(r"^[1-9][0-9]*g\.[0-9]+gb(\+me)?$")
_DURATION = re.compile(r"^(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$")
_FINISHED = ("Succeeded", "Failed")


def parse_time(value: Any) -> dt.datetime | None:
    """An RFC 3339 timestamp as the API writes it (``2026-12-01T06:00:00Z``); ``None`` if absent/bad."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


def parse_duration(text: str) -> int | None:
    """``15m``, ``1h30m``, ``90s``, ``2d`` → seconds; ``None`` when malformed or zero."""
    m = _DURATION.match(text.strip())
    if m is None or not any(m.groups()):
        return None
    d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    total = ((d * 24 + h) * 60 + mi) * 60 + s
    return total or None


def parse_preference(text: str) -> tuple[str, ...] | None:
    """``1g.10gb,2g.20gb`` (``nvidia.com/mig-…`` names accepted) → profiles; ``None`` if malformed."""
    out: list[str] = []
    for item in text.split(","):
        name = profile_of(item.strip()) or item.strip()
        if not _PROFILE.match(name):
            return None
        if name not in out:
            out.append(name)
    return tuple(out) or None


def _count(value: Any) -> int | None:
    """An extended-resource quantity: the API only admits whole numbers for ``nvidia.com/*``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _counts(items: Mapping[str, int]) -> Counts:
    return tuple(sorted((k, v) for k, v in items.items() if v))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str | int | float | bool)}


def _container_gpus(container: Any, where: str, warn: list[str]) -> dict[str, int]:
    """A container's GPU requests; for extended resources a missing request defaults to the limit."""
    if not isinstance(container, dict):
        return {}
    res = container.get("resources") or {}
    if not isinstance(res, dict):
        return {}
    merged: dict[str, Any] = {}
    for kind in ("limits", "requests"):  # requests win where both are given (the API makes them equal)
        section = res.get(kind) or {}
        if isinstance(section, dict):
            merged.update({str(k): v for k, v in section.items() if is_gpu_resource(str(k))})
    out: dict[str, int] = {}
    for name, value in merged.items():
        n = _count(value)
        if n is None:
            warn.append(f"{where}: {name} quantity {value!r} is not a whole number; ignored")
            continue
        out[name] = n
    return out


def pod_requests(spec: Mapping[str, Any], where: str, warn: list[str]) -> dict[str, int]:
    """Effective GPU requests of a pod, the way the scheduler computes them.

    kubernetes ``pkg/api/v1/resource/helpers.go`` (PodRequests, v1.31): the sum over app containers
    plus restartable (sidecar) init containers, and at least the largest request of any other init
    container, which runs alone before them.
    """
    total: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for c in _list(spec.get("containers")):
        for k, v in _container_gpus(c, where, warn).items():
            total[k] = total.get(k, 0) + v
    for c in _list(spec.get("initContainers")):
        amounts = _container_gpus(c, where, warn)
        if isinstance(c, dict) and c.get("restartPolicy") == "Always":
            for k, v in amounts.items():
                total[k] = total.get(k, 0) + v
        else:
            for k, v in amounts.items():
                init_peak[k] = max(init_peak.get(k, 0), v)
    for k, v in init_peak.items():
        total[k] = max(total.get(k, 0), v)
    return total


def parse_pod(
    obj: Mapping[str, Any], now: dt.datetime, file: str = ""
) -> tuple[ObservedPod | None, list[Diagnostic]]:
    """One Pod; ``None`` when it asks for no GPU resource or has finished."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    name, namespace = meta.get("name"), meta.get("namespace") or "default"
    if not isinstance(name, str) or not name or not isinstance(namespace, str):
        return None, [make("MIGC402", "a Pod without a usable name or namespace was skipped", file=file)]
    where = f"pod {namespace}/{name}"
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    assert isinstance(spec, dict) and isinstance(status, dict)
    raw_phase = status.get("phase")
    phase = raw_phase if isinstance(raw_phase, str) and raw_phase else "Pending"
    if phase in _FINISHED:
        return None, []
    notes: list[str] = []
    requests = pod_requests(spec, where, notes)
    diags = [make("MIGC402", n, file=file) for n in notes]
    if not any(requests.values()):
        return None, diags
    annotations = _str_map(meta.get("annotations"))
    preference: tuple[str, ...] = ()
    if PROFILE_PREFERENCE in annotations:
        parsed = parse_preference(annotations[PROFILE_PREFERENCE])
        if parsed is None:
            diags.append(
                make(
                    "MIGC401",
                    f"{where}: {PROFILE_PREFERENCE}={annotations[PROFILE_PREFERENCE]!r} is not a "
                    "comma-separated list of MIG profiles (e.g. 1g.10gb,2g.20gb); ignored",
                    file=file,
                )
            )
        else:
            preference = parsed
    max_wait: int | None = None
    if MAX_WAIT in annotations:
        max_wait = parse_duration(annotations[MAX_WAIT])
        if max_wait is None:
            diags.append(
                make(
                    "MIGC401",
                    f"{where}: {MAX_WAIT}={annotations[MAX_WAIT]!r} is not a duration "
                    "such as 15m, 1h30m or 90s; ignored",
                    file=file,
                )
            )
    node = spec.get("nodeName") if isinstance(spec.get("nodeName"), str) and spec.get("nodeName") else None
    created = parse_time(meta.get("creationTimestamp"))
    pending_for = None
    if node is None and phase == "Pending" and created is not None:
        pending_for = max(0.0, (now - created).total_seconds())
    pod = ObservedPod(
        namespace=namespace,
        name=name,
        phase=phase,
        node=node,
        requests=_counts(requests),
        created=created,
        pending_seconds=pending_for,
        profile_preference=preference,
        max_wait_seconds=max_wait,
        priority_class=str(spec.get("priorityClassName") or ""),
        started=parse_time(status.get("startTime")),
    )
    return pod, diags


def parse_node(obj: Mapping[str, Any], file: str = "") -> tuple[ObservedNode | None, list[Diagnostic]]:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None, [make("MIGC402", "a Node without a name was skipped", file=file)]
    labels = _str_map(meta.get("labels"))
    ann = _str_map(meta.get("annotations"))
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    assert isinstance(spec, dict) and isinstance(status, dict)
    diags: list[Diagnostic] = []
    alloc: dict[str, int] = {}
    raw_alloc = status.get("allocatable") if isinstance(status.get("allocatable"), dict) else {}
    assert isinstance(raw_alloc, dict)
    for k, v in raw_alloc.items():
        if not is_gpu_resource(str(k)):
            continue
        n = _count(v)
        if n is None:
            diags.append(
                make("MIGC402", f"node {name}: allocatable {k}={v!r} is not a whole number", file=file)
            )
            continue
        alloc[str(k)] = n
    gpu_count = _count(labels.get(GPU_COUNT)) if GPU_COUNT in labels else None
    attempts = _count(ann.get(ATTEMPTS, "0"))
    rollout = Rollout(
        phase=ann.get(PHASE, "Idle"),
        target_config=ann.get(TARGET, ""),
        since=parse_time(ann.get(PHASE_SINCE)),
        attempts=attempts or 0,
        last_error=ann.get(LAST_ERROR, ""),
        paused=ann.get(PAUSED, "").strip().lower() in ("true", "1", "yes"),
    )
    node = ObservedNode(
        name=name,
        labels=tuple(sorted(labels.items())),
        allocatable=_counts(alloc),
        mig_config=labels.get(MIG_CONFIG),
        mig_state=labels.get(MIG_STATE),
        applied_config=ann.get(APPLIED),
        gpu_product=labels.get(GPU_PRODUCT),
        gpu_count=gpu_count,
        rollout=rollout,
        unschedulable=bool(spec.get("unschedulable")),
    )
    return node, diags


def parse_objects(
    objects: Iterable[tuple[Mapping[str, Any], str]], now: dt.datetime
) -> tuple[tuple[ObservedNode, ...], tuple[ObservedPod, ...], list[Diagnostic]]:
    """Nodes and GPU pods among ``(object, file)`` pairs; other kinds are ignored, the last copy wins."""
    nodes: dict[str, ObservedNode] = {}
    pods: dict[tuple[str, str], ObservedPod] = {}
    diags: list[Diagnostic] = []
    for obj, file in objects:
        kind = obj.get("kind")
        if kind == "Node":
            node, more = parse_node(obj, file)
            diags.extend(more)
            if node is not None:
                nodes[node.name] = node
        elif kind == "Pod":
            pod, more = parse_pod(obj, now, file)
            diags.extend(more)
            if pod is not None:
                pods[(pod.namespace, pod.name)] = pod
    return (
        tuple(nodes[k] for k in sorted(nodes)),
        tuple(pods[k] for k in sorted(pods)),
        diags,
    )


def whole_gpu(resource: str) -> bool:
    return resource.startswith(GPU_RESOURCE) and profile_of(resource) is None
