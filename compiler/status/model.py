"""The fleet status ``migc status`` shows: frozen, sorted, unit-explicit.

Amounts of GPU resources are counts per resource name (``nvidia.com/mig-1g.10gb``, ``nvidia.com/gpu``).
Where different resources must be added up (cost, fragmentation, tenant totals) the unit is the
*GPU share*: a MIG instance is worth its compute slices over the model's (a 1g on an A100 is 1/7), a
whole GPU 1, a time-sliced share 1/replicas.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any

from compiler.diagnostics import Diagnostic
from compiler.observe.model import Counts

SCHEMA_VERSION = "migc.dev/v1alpha1"
COUNT_FIELDS = frozenset(
    {"capacity", "allocated", "free", "requests", "guaranteed", "burst"}
)  # Counts → object


@dataclass(frozen=True)
class Slot:
    """One bar segment of a GPU: a MIG instance, a whole GPU, or one time-sliced share."""

    resource: str  # nvidia.com/mig-1g.10gb, nvidia.com/gpu; "" = memory slices no instance covers
    start: float  # left edge, fraction of the GPU's width (0–1)
    width: float  # fraction of the GPU's width
    share: float  # GPU share (cost unit)
    tenant: str = ""  # "" while free; "-" for a pod whose namespace belongs to no tenant
    pod: str = ""  # namespace/name
    engine_active: float | None = None  # DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0–1
    memory_used_mib: float | None = None  # DCGM_FI_DEV_FB_USED


@dataclass(frozen=True)
class GpuView:
    index: int
    mig_enabled: bool
    slots: tuple[Slot, ...]
    known: bool = True  # False: the node's config is not in the assignment, so the layout is unknown


@dataclass(frozen=True)
class NodeStatus:
    name: str
    cluster: str
    pool: str
    gpu_model: str
    capacity: Counts  # allocatable
    allocated: Counts  # requests of the pods bound to the node
    free: Counts
    config: str  # what the node carries (nvidia.com/mig.config or migc.dev/applied-config)
    expected_config: str  # what the assignment says
    mig_state: str
    phase: str  # the controller's migc.dev/phase
    phase_since: dt.datetime | None
    last_error: str
    unschedulable: bool
    drift: tuple[str, ...]  # reasons; empty = in line with the assignment
    gpus: tuple[GpuView, ...]
    pods: tuple[str, ...]
    used_instances: int | None = None  # instances/GPUs with engine activity; None without Prometheus
    mean_engine_active: float | None = None

    @property
    def rolling_out(self) -> bool:
        return self.phase not in ("", "Idle") or self.mig_state in ("pending", "rebooting", "failed")

    @property
    def has_free(self) -> bool:
        return any(c > 0 for _, c in self.free)


@dataclass(frozen=True)
class PoolStatus:
    cluster: str
    name: str
    gpu_model: str
    nodes: int
    nodes_seen: int
    gpus: int
    capacity: Counts
    allocated: Counts
    free: Counts
    allocated_share: float  # GPU shares held by pods
    free_share: float
    fragmented_share: float  # free shares no pending pod or declared request can use
    price_per_gpu_hour: float | None
    cost_per_hour: float | None
    idle_cost_per_hour: float | None
    balanced_gpus_needed: int | None  # GPUs all-balanced would need for the allocated MIG instances


@dataclass(frozen=True)
class TenantStatus:
    name: str
    namespaces: tuple[str, ...]
    allocated: Counts
    guaranteed: Counts  # profiles as resources, whole GPUs as nvidia.com/gpu
    burst: Counts
    allocated_share: float
    pending: int
    cost_per_hour: float | None
    above_guarantee: tuple[str, ...]  # resources held beyond the guarantee (borrowed)
    starved: tuple[str, ...]  # resources with pending pods while below the guarantee
    memory_gb: tuple[float, float, float] = (0.0, 0.0, 0.0)  # held, guaranteed, burst (0 = no quota)
    compute_slices: tuple[float, float, float] = (0.0, 0.0, 0.0)  # held, guaranteed, burst


@dataclass(frozen=True)
class PendingPod:
    pod: str
    tenant: str
    requests: Counts
    pending_seconds: float | None
    max_wait_seconds: int | None
    preference: tuple[str, ...]

    @property
    def over_max_wait(self) -> bool:
        return (
            self.max_wait_seconds is not None
            and self.pending_seconds is not None
            and self.pending_seconds > self.max_wait_seconds
        )


@dataclass(frozen=True)
class Cost:
    per_hour: float  # every priced GPU
    allocated_per_hour: float
    idle_per_hour: float
    whole_gpu_per_pod_per_hour: float  # if every GPU pod had whole GPUs (one per instance asked for)
    savings_vs_whole_gpu_per_hour: float
    savings_vs_balanced_per_hour: float  # MIG pools: GPUs all-balanced would need minus GPUs in use, priced


@dataclass(frozen=True)
class FleetStatus:
    source: str
    taken_at: dt.datetime
    expected_from: str  # where the expected layouts come from
    with_usage: bool
    nodes: tuple[NodeStatus, ...]
    pools: tuple[PoolStatus, ...]
    tenants: tuple[TenantStatus, ...]
    pending: tuple[PendingPod, ...]
    missing_nodes: tuple[str, ...]  # in the assignment, not in the cluster
    unmanaged_nodes: tuple[str, ...]  # GPU nodes in the cluster no pool of the policy selects
    cost: Cost
    warnings: tuple[Diagnostic, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The status as ``migc status -o json`` writes it (keys sorted there): every field under its
        own name, counts as objects, times in RFC 3339 UTC, and each node's ``rolling_out`` and each
        pending pod's ``over_max_wait``."""
        body = _jsonable(self)
        assert isinstance(body, dict)
        for node, n in zip(body["nodes"], self.nodes, strict=True):
            node["rolling_out"] = n.rolling_out
        for pod, p in zip(body["pending"], self.pending, strict=True):
            pod["over_max_wait"] = p.over_max_wait
        return {"apiVersion": SCHEMA_VERSION, "kind": "FleetStatus", **body}


def _jsonable(value: Any) -> Any:
    """A status record as JSON: times in RFC 3339 UTC, (name, value) pairs and count fields as objects,
    records as objects of their fields, a diagnostic as its own dict."""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if (
        isinstance(value, tuple)
        and value
        and all(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) for v in value)
    ):
        return {k: _jsonable(v) for k, v in value}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Diagnostic):  # a dataclass too: its own dict, severity by name
        return value.as_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            out[f.name] = dict(item) if f.name in COUNT_FIELDS else _jsonable(item)
        return out
    return value
