"""What a cluster reports about its GPUs: nodes and the pods that ask for GPU resources.

Plain frozen dataclasses, built only by :mod:`compiler.observe.parse` from Kubernetes JSON (a
``kubectl get pods,nodes -A -o json`` snapshot or a live API read). ``migc status`` and, later,
``migc recommend`` consume them; nothing here knows about policies.

Resource names are the device plugin's extended resources: ``nvidia.com/gpu`` (whole GPUs or
time-sliced/MPS shares) and ``nvidia.com/mig-<profile>`` under the mixed strategy, with a ``+`` of
the profile name written as ``.`` (``nvidia.com/mig-1g.10gb.me``). A pod that asks through DRA
ResourceClaims carries the same names for what its claims ask (compiler/observe/dra.py).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.diagnostics import Diagnostic

GPU_RESOURCE = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
SHARED_SUFFIX = ".shared"  # device plugin with renameByDefault: nvidia.com/gpu.shared

Counts = tuple[tuple[str, int], ...]
"""A sorted ``resource → count`` mapping with zero counts dropped (hashable)."""


def is_gpu_resource(name: str) -> bool:
    """Whether ``name`` is a GPU resource migc manages (whole, shared or a MIG instance)."""
    return name == GPU_RESOURCE or name == GPU_RESOURCE + SHARED_SUFFIX or name.startswith(MIG_PREFIX)


def profile_of(resource: str) -> str | None:
    """``nvidia.com/mig-1g.10gb.me`` → ``1g.10gb+me``; ``None`` for whole or shared GPUs."""
    if not resource.startswith(MIG_PREFIX):
        return None
    name = resource[len(MIG_PREFIX) :]
    if name.endswith(".me"):
        name = name[: -len(".me")] + "+me"
    return name


def resource_of(profile: str) -> str:
    """Inverse of :func:`profile_of` (``gpu`` → ``nvidia.com/gpu``)."""
    if profile == "gpu":
        return GPU_RESOURCE
    return MIG_PREFIX + profile.replace("+", ".")


@dataclass(frozen=True)
class Rollout:
    """The migc controller's record on a node (``migc.dev/*`` annotations, see controller/state.py)."""

    phase: str  # Idle, Cordoned, Draining, Applying, Verifying, Done, Failed
    target_config: str = ""
    since: dt.datetime | None = None
    attempts: int = 0
    last_error: str = ""
    paused: bool = False
    started: dt.datetime | None = None  # migc.dev/started-at: when the current reconfiguration began
    previous_config: str = ""  # migc.dev/previous-config: kept after a reconfiguration finished

    @property
    def in_progress(self) -> bool:
        return self.phase not in ("Idle", "")


@dataclass(frozen=True)
class ObservedNode:
    name: str
    labels: tuple[tuple[str, str], ...]
    allocatable: Counts  # GPU resources only
    mig_config: str | None  # nvidia.com/mig.config (what the MIG manager was asked to apply)
    mig_state: str | None  # nvidia.com/mig.config.state: pending, rebooting, success, failed
    applied_config: str | None  # migc.dev/applied-config (nodes without a MIG manager)
    gpu_product: str | None  # nvidia.com/gpu.product (GPU Feature Discovery)
    gpu_count: int | None  # nvidia.com/gpu.count
    rollout: Rollout
    unschedulable: bool = False

    def label(self, key: str) -> str | None:
        for k, v in self.labels:
            if k == key:
                return v
        return None

    @property
    def config(self) -> str | None:
        """The config the node carries: the MIG manager's label, else migc's own annotation."""
        return self.mig_config if self.mig_config is not None else self.applied_config


@dataclass(frozen=True)
class ObservedPod:
    namespace: str
    name: str
    phase: str  # Pending, Running, Unknown (finished pods are not kept)
    node: str | None  # spec.nodeName; None while unscheduled
    requests: Counts  # effective GPU requests of the pod (see parse.pod_requests)
    created: dt.datetime | None
    pending_seconds: float | None  # unscheduled pods: seconds since creation at observation time
    profile_preference: tuple[str, ...] = ()  # migc.dev/profile-preference, first = most preferred
    max_wait_seconds: int | None = None  # migc.dev/max-wait-time
    priority_class: str = ""
    # status.startTime: when the kubelet accepted the pod on its node (None while unscheduled, or absent)
    started: dt.datetime | None = None
    # asks through DRA ResourceClaims only (compiler/observe/dra.py): ``requests`` holds what they ask;
    # a pod that asks in its limits too is not ``claimed`` (its requests add both up)
    claimed: bool = False
    # a claimed pod's allocated devices of the NVIDIA DRA driver as (driver, pool, device); None when
    # they cannot be told (a claim missing, not allocated, not reserved for the pod) or not claimed
    devices: tuple[tuple[str, str, str], ...] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def pending(self) -> bool:
        return self.node is None and self.phase == "Pending"

    @property
    def waited_too_long(self) -> bool:
        return (
            self.pending
            and self.max_wait_seconds is not None
            and self.pending_seconds is not None
            and self.pending_seconds > self.max_wait_seconds
        )


@dataclass(frozen=True)
class Observation:
    """Everything read at one moment. ``warnings`` name the object they concern (never fatal)."""

    taken_at: dt.datetime
    source: str  # "snapshot a.json, b.json" or "cluster https://…"
    nodes: tuple[ObservedNode, ...] = ()  # sorted by name
    pods: tuple[ObservedPod, ...] = ()  # sorted by namespace, name; GPU pods only
    warnings: tuple[Diagnostic, ...] = field(default=())
    # the NVIDIA DRA driver's ResourceSlices as read (JSON), per node name: where each device is
    # (controller/dra.py ``device_gpus`` maps them to GPU indices; parse.py bounds them)
    resource_slices: tuple[tuple[str, tuple[Mapping[str, Any], ...]], ...] = ()

    @functools.cached_property
    def _slices_by_node(self) -> dict[str, tuple[Mapping[str, Any], ...]]:
        return dict(self.resource_slices)

    def slices_of(self, node: str) -> tuple[Mapping[str, Any], ...]:
        return self._slices_by_node.get(node, ())

    def pods_on(self, node: str) -> tuple[ObservedPod, ...]:
        return tuple(p for p in self.pods if p.node == node)

    @property
    def pending(self) -> tuple[ObservedPod, ...]:
        return tuple(p for p in self.pods if p.pending)
