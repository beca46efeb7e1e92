"""Kubernetes Node and Pod JSON (as the API serves it, camelCase) → :mod:`compiler.observe.model`.

Malformed parts of an object are warnings that name the object (MIGC401, MIGC402), never an
exception: a cluster always holds something odd, and ``migc status`` must still show the rest.

What a cluster says is input like a policy file, and anyone with patch rights on a pod or node
can write it, so it is bounded and validated here, at the edge, before status or recommend see it:

* resource names: ``nvidia.com/gpu``, ``nvidia.com/gpu.shared`` and ``nvidia.com/mig-<profile>``
  for a profile of the catalog; any other ``nvidia.com/mig-*`` name is reported once (MIGC402, with
  the first pod or node that uses it and how many do) and left out;
* quantities: Kubernetes quantities (:mod:`compiler.observe.quantity`), whole, at most
  :data:`MAX_POD_INSTANCES` per resource of a pod and :data:`MAX_NODE_INSTANCES` per resource of a
  node; ``nvidia.com/gpu.count`` at most :data:`MAX_GPUS_PER_NODE`; ``migc.dev/attempts`` at most
  :data:`MAX_ATTEMPTS`; anything else is a MIGC402 warning and the value is left out; all pods
  together at most :data:`MAX_OBSERVED_INSTANCES` instances (pods past it, in namespace/name order,
  are left out with one MIGC402), so what status and recommend build per instance stays bounded;
* timestamps: RFC 3339 exactly as the API writes it (``2026-12-01T06:00:00Z``, optional fraction
  and offset), years :data:`MIN_YEAR`–:data:`MAX_YEAR`; anything else is a warning and unknown.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from compiler.catalog import load_catalog
from compiler.diagnostics import Diagnostic, make
from compiler.observe import dra
from compiler.observe.model import (
    GPU_RESOURCE,
    MIG_PREFIX,
    SHARED_SUFFIX,
    Counts,
    ObservedNode,
    ObservedPod,
    Rollout,
    is_gpu_resource,
    profile_of,
)
from compiler.observe.names import MAX_NAME_CHARS, valid_name
from compiler.observe.quantity import parse_count

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
STARTED_AT = "migc.dev/started-at"
PREVIOUS = "migc.dev/previous-config"
# Hints users put on pods (issue 11): a profile preference list and a maximum wait.
PROFILE_PREFERENCE = "migc.dev/profile-preference"
MAX_WAIT = "migc.dev/max-wait-time"

_PROFILE = re.compile(r"^[1-9][0-9]*g\.[0-9]+gb(\+me)?$")
_DURATION = re.compile(r"^(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$")
_FINISHED = ("Succeeded", "Failed")

# Bounds on what one object may claim (module docstring). A DGX node has 8 GPUs of at most 7 MIG
# instances; time-slicing multiplies a GPU by its replicas. The bounds sit far above any real node
# and far below what would make a view or a demand count allocate noticeably.
MAX_POD_INSTANCES = 1024  # instances of one resource one pod asks for
MAX_NODE_INSTANCES = 4096  # allocatable instances of one resource on one node
MAX_GPUS_PER_NODE = 64  # nvidia.com/gpu.count
MAX_ATTEMPTS = 1_000_000  # migc.dev/attempts
MAX_OBSERVED_INSTANCES = 1_000_000  # GPU instances all pods of one observation ask for, together
MIN_YEAR, MAX_YEAR = 1970, 2999
MAX_DURATION_SECONDS = 366 * 86400  # migc.dev/max-wait-time
_RFC3339 = re.compile(
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)


@functools.cache
def known_resources() -> frozenset[str]:
    """The GPU resource names migc knows: whole, shared, and one per MIG profile of the catalog."""
    names = {GPU_RESOURCE, GPU_RESOURCE + SHARED_SUFFIX}
    for model in load_catalog().models:
        names.update(MIG_PREFIX + p.name.replace("+", ".") for p in model.profiles)
    return frozenset(names)


def strict_time(value: str) -> dt.datetime | None:
    """``value`` as an RFC 3339 timestamp with a zone, years MIN_YEAR–MAX_YEAR; ``None`` otherwise."""
    m = _RFC3339.match(value)
    if m is None:
        return None
    year = int(m.group(1))
    if not MIN_YEAR <= year <= MAX_YEAR:
        return None
    try:
        t = dt.datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:  # month 13, day 45, hour 25 …
        return None
    try:
        return t.astimezone(dt.UTC)
    except (OverflowError, ValueError):
        return None


def parse_time(value: Any) -> dt.datetime | None:
    """An RFC 3339 timestamp as the API writes it (``2026-12-01T06:00:00Z``); ``None`` if absent/bad."""
    if not isinstance(value, str) or not value:
        return None
    return strict_time(value)


def _time_field(value: Any, what: str, diags: list[Diagnostic], file: str) -> dt.datetime | None:
    """:func:`parse_time`, with a MIGC402 warning when ``value`` is present but not a timestamp."""
    t = parse_time(value)
    if t is None and value not in (None, ""):
        diags.append(
            make(
                "MIGC402",
                f"{what} {_shown(value)} is not an RFC 3339 timestamp between {MIN_YEAR} and {MAX_YEAR}; "
                "taken as unknown",
                file=file,
            )
        )
    return t


def _shown(value: Any, limit: int = 80) -> str:
    """``repr`` of ``value``, at most ``limit`` characters (a hostile value can be megabytes)."""
    text = repr(value) if not isinstance(value, str) or len(value) <= limit else repr(value[:limit]) + "…"
    return text if len(text) <= limit + 10 else text[: limit + 10] + "…"


def parse_duration(text: str) -> int | None:
    """``15m``, ``1h30m``, ``90s``, ``2d`` → seconds; ``None`` when malformed, zero or over 366 days."""
    if len(text) > 32:
        return None
    m = _DURATION.match(text.strip())
    if m is None or not any(m.groups()):
        return None
    d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    total = ((d * 24 + h) * 60 + mi) * 60 + s
    return total if 0 < total <= MAX_DURATION_SECONDS else None


def parse_preference(text: str) -> tuple[str, ...] | None:
    """``1g.10gb,2g.20gb`` (``nvidia.com/mig-…`` names accepted) → profiles; ``None`` if malformed."""
    if len(text) > 1024:
        return None
    out: list[str] = []
    for item in text.split(","):
        name = profile_of(item.strip()) or item.strip()
        if not _PROFILE.match(name):
            return None
        if name not in out:
            out.append(name)
    return tuple(out) or None


class Unknown:
    """Resource names outside :func:`known_resources`: the first object using each, and how many do."""

    def __init__(self) -> None:
        self.first: dict[str, tuple[str, str]] = {}  # name → (object, file)
        self.count: dict[str, int] = {}

    def add(self, name: str, where: str, file: str) -> None:
        if name not in self.first:
            if len(self.first) >= 100:  # reported names are bounded too; the rest only counted
                name = "…"
            self.first.setdefault(name, (where, file))
        self.count[name] = self.count.get(name, 0) + 1

    def diagnostics(self) -> list[Diagnostic]:
        out = []
        for name, (where, file) in sorted(self.first.items()):
            n = self.count[name]
            more = f" and {n - 1} more object(s)" if n > 1 else ""
            what = "other resource names" if name == "…" else f"resource {_shown(name)}"
            out.append(
                make(
                    "MIGC402",
                    f"{what} (on {where}{more}) is no MIG profile of the catalog nor "
                    f"{GPU_RESOURCE}; not counted",
                    file=file,
                )
            )
        return out


def _counts(items: Mapping[str, int]) -> Counts:
    return tuple(sorted((k, v) for k, v in items.items() if v))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str | int | float | bool)}


def _container_gpus(
    container: Any, where: str, warn: list[str], unknown: Unknown | None = None, file: str = ""
) -> dict[str, int]:
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
        if name not in known_resources():
            if unknown is not None:
                unknown.add(name, where, file)
            continue
        n, why = parse_count(value, MAX_POD_INSTANCES)
        if n is None:
            warn.append(f"{where}: {name} quantity {_shown(value)} {why}; ignored")
            continue
        out[name] = n
    return out


def pod_requests(
    spec: Mapping[str, Any], where: str, warn: list[str], unknown: Unknown | None = None, file: str = ""
) -> dict[str, int]:
    """Effective GPU requests of a pod, the way the scheduler computes them.

    kubernetes ``pkg/api/v1/resource/helpers.go`` (PodRequests, v1.31): the sum over app containers
    plus restartable (sidecar) init containers, and at least the largest request of any other init
    container, which runs alone before them.
    """
    total: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for c in _list(spec.get("containers")):
        for k, v in _container_gpus(c, where, warn, unknown, file).items():
            total[k] = total.get(k, 0) + v
    for c in _list(spec.get("initContainers")):
        amounts = _container_gpus(c, where, warn, unknown, file)
        if isinstance(c, dict) and c.get("restartPolicy") == "Always":
            for k, v in amounts.items():
                total[k] = total.get(k, 0) + v
        else:
            for k, v in amounts.items():
                init_peak[k] = max(init_peak.get(k, 0), v)
    for k, v in init_peak.items():
        total[k] = max(total.get(k, 0), v)
    for k, v in sorted(total.items()):
        if v > MAX_POD_INSTANCES:  # containers that each stay within the bound, summed
            warn.append(f"{where}: {v:,} x {k} in all is more than {MAX_POD_INSTANCES:,}; ignored")
            del total[k]
    return total


def _mapping(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``obj[key]`` when it is a mapping, else empty: a snapshot may hold anything there."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _skipped_pod(name: Any, namespace: Any, file: str) -> Diagnostic:
    return make(
        "MIGC402",
        f"a Pod named {_shown(name)} in namespace {_shown(namespace)} was skipped: not a "
        "Kubernetes object name (lower-case letters, digits, '-' and '.')",
        file=file,
    )


def _profile_preference(
    annotations: Mapping[str, str], where: str, diags: list[Diagnostic], file: str
) -> tuple[str, ...]:
    """The pod's ``migc.dev/profile-preference`` hint; a malformed one is a MIGC401 warning and none."""
    if PROFILE_PREFERENCE not in annotations:
        return ()
    parsed = parse_preference(annotations[PROFILE_PREFERENCE])
    if parsed is not None:
        return parsed
    diags.append(
        make(
            "MIGC401",
            f"{where}: {PROFILE_PREFERENCE}={annotations[PROFILE_PREFERENCE]!r} is not a "
            "comma-separated list of MIG profiles (e.g. 1g.10gb,2g.20gb); ignored",
            file=file,
        )
    )
    return ()


def _max_wait(annotations: Mapping[str, str], where: str, diags: list[Diagnostic], file: str) -> int | None:
    """The pod's ``migc.dev/max-wait-time`` hint in seconds; a malformed one is a MIGC401 warning."""
    if MAX_WAIT not in annotations:
        return None
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
    return max_wait


def _pending_seconds(
    node: str | None, phase: str, created: dt.datetime | None, now: dt.datetime
) -> float | None:
    """How long an unscheduled pending pod has waited (its age at ``now``); ``None`` for any other pod."""
    if node is None and phase == "Pending" and created is not None:
        return max(0.0, (now - created).total_seconds())
    return None


def parse_pod(
    obj: Mapping[str, Any],
    now: dt.datetime,
    file: str = "",
    unknown: Unknown | None = None,
    claims: dra.Claims | None = None,
) -> tuple[ObservedPod | None, list[Diagnostic]]:
    """One Pod; ``None`` when it asks for no GPU resource or has finished. ``claims``: the
    ResourceClaims observed with it, for a pod that asks through DRA (compiler/observe/dra.py)."""
    meta = _mapping(obj, "metadata")
    name, namespace = meta.get("name"), meta.get("namespace") or "default"
    if not valid_name(name) or not valid_name(namespace, namespace=True):
        return None, [_skipped_pod(name, namespace, file)]
    assert isinstance(name, str) and isinstance(namespace, str)
    where = f"pod {namespace}/{name}"
    spec, status = _mapping(obj, "spec"), _mapping(obj, "status")
    raw_phase = status.get("phase")
    phase = raw_phase if isinstance(raw_phase, str) and raw_phase else "Pending"
    if phase in _FINISHED:
        return None, []
    notes: list[str] = []
    requests = pod_requests(spec, where, notes, unknown, file)
    in_limits = _asks_in_limits(spec)
    claimed = None if claims is None else dra.pod_claims(obj, claims, file)
    if claimed is not None:
        for k, v in claimed.requests.items():
            requests[k] = min(MAX_POD_INSTANCES, requests.get(k, 0) + v)
    diags = [make("MIGC402", n, file=file) for n in notes]
    if not any(requests.values()):
        return None, diags
    annotations = _str_map(meta.get("annotations"))
    preference = _profile_preference(annotations, where, diags, file)
    if not preference and claimed is not None:
        preference = claimed.preference  # a firstAvailable claim says it the way the annotation does
    max_wait = _max_wait(annotations, where, diags, file)
    node = spec.get("nodeName") if isinstance(spec.get("nodeName"), str) and spec.get("nodeName") else None
    if node is not None and not valid_name(node):
        diags.append(
            make("MIGC402", f"{where}: spec.nodeName {_shown(node)} is no node name; skipped", file=file)
        )
        return None, diags
    created = _time_field(meta.get("creationTimestamp"), f"{where}: creationTimestamp", diags, file)
    pod = ObservedPod(
        namespace=namespace,
        name=name,
        phase=phase,
        node=node,
        requests=_counts(requests),
        created=created,
        pending_seconds=_pending_seconds(node, phase, created, now),
        profile_preference=preference,
        max_wait_seconds=max_wait,
        priority_class=str(spec.get("priorityClassName") or ""),
        started=_time_field(status.get("startTime"), f"{where}: status.startTime", diags, file),
        claimed=bool(claimed and claimed.requests) and not in_limits,
        devices=None if in_limits else _devices(claimed),
    )
    return pod, diags


def _asks_in_limits(spec: Mapping[str, Any]) -> bool:
    """Whether a container asks for a GPU resource in its requests or limits (the device plugin's way),
    whatever the amount: controller/pods.py ``uses_gpu``, which then drains the pod wherever it runs."""
    for c in [*_list(spec.get("containers")), *_list(spec.get("initContainers"))]:
        res = c.get("resources") if isinstance(c, dict) else None
        for kind in ("requests", "limits"):
            listed = res.get(kind) if isinstance(res, dict) else None
            if isinstance(listed, dict) and any(is_gpu_resource(str(k)) for k in listed):
                return True
    return False


def _devices(claimed: dra.ClaimedGpus | None) -> tuple[tuple[str, str, str], ...] | None:
    if claimed is None or not claimed.requests or claimed.devices is None:
        return None
    return tuple(sorted((d.driver, d.pool, d.device) for d in claimed.devices))


def parse_node(
    obj: Mapping[str, Any], file: str = "", unknown: Unknown | None = None
) -> tuple[ObservedNode | None, list[Diagnostic]]:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    name = meta.get("name")
    if not valid_name(name):
        return None, [
            make(
                "MIGC402",
                f"a Node named {_shown(name)} was skipped: not a Kubernetes object name "
                "(lower-case letters, digits, '-' and '.')",
                file=file,
            )
        ]
    assert isinstance(name, str)
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
        if str(k) not in known_resources():
            if unknown is not None:
                unknown.add(str(k), f"node {name}", file)
            continue
        n, why = parse_count(v, MAX_NODE_INSTANCES)
        if n is None:
            diags.append(
                make("MIGC402", f"node {name}: allocatable {k}={_shown(v)} {why}; ignored", file=file)
            )
            continue
        alloc[str(k)] = n

    def bounded(key: str, value: Any, limit: int) -> int | None:
        n, why = parse_count(value, limit)
        if n is None:
            diags.append(make("MIGC402", f"node {name}: {key}={_shown(value)} {why}; ignored", file=file))
        return n

    gpu_count = bounded(GPU_COUNT, labels[GPU_COUNT], MAX_GPUS_PER_NODE) if GPU_COUNT in labels else None
    attempts = bounded(ATTEMPTS, ann[ATTEMPTS], MAX_ATTEMPTS) if ATTEMPTS in ann else 0
    rollout = Rollout(
        phase=ann.get(PHASE, "Idle"),
        target_config=ann.get(TARGET, ""),
        since=_time_field(ann.get(PHASE_SINCE), f"node {name}: {PHASE_SINCE}", diags, file),
        attempts=attempts or 0,
        last_error=ann.get(LAST_ERROR, ""),
        paused=ann.get(PAUSED, "").strip().lower() in ("true", "1", "yes"),
        started=_time_field(ann.get(STARTED_AT), f"node {name}: {STARTED_AT}", diags, file),
        previous_config=ann.get(PREVIOUS, "")[:MAX_NAME_CHARS],
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
) -> tuple[tuple[ObservedNode, ...], tuple[ObservedPod, ...], list[Diagnostic], dra.Slices]:
    """Nodes and GPU pods among ``(object, file)`` pairs, and the NVIDIA DRA driver's ResourceSlices per
    node; ResourceClaims say what the pods that use them ask for; other kinds are ignored, the last
    copy wins."""
    nodes: dict[str, ObservedNode] = {}
    pods: dict[tuple[str, str], ObservedPod] = {}
    diags: list[Diagnostic] = []
    unknown = Unknown()
    claims = dra.Claims()
    raw_pods: list[tuple[Mapping[str, Any], str]] = []
    for obj, file in objects:
        kind = obj.get("kind")
        if kind == "Node":
            node, more = parse_node(obj, file, unknown)
            diags.extend(more)
            if node is not None:
                nodes[node.name] = node
        elif kind == "Pod":
            raw_pods.append((obj, file))
        elif kind in ("ResourceClaim", "ResourceSlice"):
            claims.add(obj, file, diags)
    claims.share(obj for obj, _ in raw_pods)  # a claim several pods name is demand once
    for obj, file in raw_pods:  # after every claim: a pod's DRA demand is in its claims
        pod, more = parse_pod(obj, now, file, unknown, claims)
        diags.extend(more)
        if pod is not None:
            pods[(pod.namespace, pod.name)] = pod
    diags.extend(unknown.diagnostics())
    diags.extend(claims.diagnostics())
    kept: list[ObservedPod] = []
    total = 0
    left_out = 0
    for key in sorted(pods):
        n = sum(c for _, c in pods[key].requests)
        if total + n > MAX_OBSERVED_INSTANCES:
            left_out += 1
            continue
        total += n
        kept.append(pods[key])
    if left_out:
        diags.append(
            make(
                "MIGC402",
                f"{left_out} GPU pod(s) left out: together the pods ask for more than "
                f"{MAX_OBSERVED_INSTANCES:,} GPU instances",
            )
        )
    return tuple(nodes[k] for k in sorted(nodes)), tuple(kept), diags, claims.per_node()


def whole_gpu(resource: str) -> bool:
    return resource.startswith(GPU_RESOURCE) and profile_of(resource) is None
