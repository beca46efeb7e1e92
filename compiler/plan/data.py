"""The plan's data: what changes per node, capacity, tenants, unmet demand, evictions and cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.model import NodeLayout
from compiler.plan.dra import DraPool
from compiler.solve.result import HamiPoolResult


@dataclass(frozen=True)
class NodeChange:
    cluster: str
    pool: str
    node: str
    gpu_model: str
    before: NodeLayout | None  # None: nothing deployed yet
    after: NodeLayout
    changed_gpus: tuple[int, ...]
    reason: str
    selector: bool = False  # a placeholder for one of the nodes a selector pool matches

    @property
    def where(self) -> str:
        extra = "; selector pool: stands for any matching node" if self.selector else ""
        return f"pool {self.pool}, {self.gpu_model}{extra}"


@dataclass(frozen=True)
class RemovedNode:
    cluster: str
    pool: str
    node: str


@dataclass(frozen=True)
class CapacityRow:
    cluster: str
    pool: str
    resource: str  # profile name or "gpu"
    before: int
    after: int


@dataclass(frozen=True)
class TenantRow:
    cluster: str
    tenant: str
    resource: str
    requested: int  # asked of this pool in the new solution
    before: int  # served by the deployed layout: recorded, or estimated when ``estimated``
    after: int  # served by the target layout (solver)
    pool: str = ""
    estimated: bool = True
    requested_before: int | None = None  # asked of this pool when the deployed layout was rendered


@dataclass(frozen=True)
class Unmet:
    cluster: str
    pool: str
    tenant: str
    workload: str
    resource: str
    requested: int
    served: int
    priority_tier: str


@dataclass(frozen=True)
class FairShare:
    """One workload's part of a short tier: instances served and requested (over its pools)."""

    tenant: str
    workload: str
    served: int
    requested: int


@dataclass(frozen=True)
class FairTier:
    """A priority tier of a cluster the solver could not serve in full, and how it shared it."""

    cluster: str
    tier: str
    rule: str  # compiler.solve.result.FAIRNESS_RULE
    shares: tuple[FairShare, ...]  # smallest served fraction first, then workload name


@dataclass(frozen=True)
class Eviction:
    cluster: str
    node: str
    namespace: str
    pod: str
    resources: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Cost:
    cluster: str
    gpus_total: int
    gpus_before: int
    gpus_after: int
    gpus_balanced: int
    unmet_balanced: int  # demanded instances the all-balanced default could not serve
    per_hour_before: float | None
    per_hour_after: float | None
    per_hour_balanced: float | None
    unpriced_pools: tuple[str, ...]


@dataclass(frozen=True)
class OrderOutcome:
    """What one objective order gives on the MIG pools (deployed nodes only count as changed)."""

    gpus_used: int
    nodes_changed: int
    gpus_changed: int
    unmet: int
    proven: bool  # every pool's levels proven optimal within the time limit


@dataclass(frozen=True)
class OrderCost:
    """The chosen objective order against the one with ``gpus`` and ``disruption`` swapped."""

    order: tuple[str, ...]
    other: tuple[str, ...]
    chosen: OrderOutcome
    alternative: OrderOutcome


@dataclass(frozen=True)
class SpreadRow:
    """A workload with ``spread``: its served replicas per node (pool, node, replicas; per-node
    spreads only) and per domain of its topology key, and per pool the worst maintenance wave
    (pool, maxUnavailable, replicas on the maxUnavailable nodes holding most)."""

    cluster: str
    workload: str
    spread: str  # as the policy asks it, e.g. "maxPerNode 50%"
    topology_key: str  # the spread's node label for domains ("" when none)
    requested: int
    served: int
    by_node: tuple[tuple[str, str, int], ...]
    by_domain: tuple[tuple[str, int], ...]
    most_per_node: int  # the most one node may hold under the spread (0: no per-node spread)
    waves: tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class HamiRequest:
    """What each pod of a workload with a HAMi need requests (container limits; HAMi reads limits)."""

    cluster: str
    workload: str
    tenant: str
    resources: tuple[tuple[str, str], ...]  # resource name -> amount, sorted by name
    priority_class: str


@dataclass(frozen=True)
class Plan:
    clusters: tuple[str, ...]
    nodes_total: int
    changes: tuple[NodeChange, ...]
    removed: tuple[RemovedNode, ...]
    capacity: tuple[CapacityRow, ...]
    tenants: tuple[TenantRow, ...]
    unmet: tuple[Unmet, ...]
    evictions: tuple[Eviction, ...]
    costs: tuple[Cost, ...]
    snapshot_given: bool = False
    solution: Mapping[str, Any] = field(default_factory=dict)
    spread: tuple[SpreadRow, ...] = ()
    other_order: OrderCost | None = None  # set by `migc plan` against a deployed layout
    hami: tuple[HamiPoolResult, ...] = ()  # the packing of every `sharing: hami` pool
    hami_requests: tuple[HamiRequest, ...] = ()  # per workload with a HAMi need, sorted by name
    dra: tuple[DraPool, ...] = ()  # DRA pools and backend migrations (compiler/plan/dra.py)
    # (cluster, pool) → (MIG-partitioned, sharing mode, nvidia.com/gpu per GPU): how a pool's "gpu" counts
    pool_kinds: Mapping[tuple[str, str], tuple[bool, str, int]] = field(default_factory=dict)
    fairness: tuple[FairTier, ...] = ()  # per cluster, tiers highest first: the split of short tiers

    @property
    def has_changes(self) -> bool:
        """Nodes whose layout changes or that leave the policy (the node sections' subject)."""
        return bool(self.changes or self.removed)

    @property
    def migrations(self) -> tuple[DraPool, ...]:
        """The pools whose allocation backend changes: each of their nodes is cordoned and drained in
        turn (compiler/plan/dra.py ``steps``), whether or not its layout changes (a DynamicMIG pool's
        nodes never do: solve/assign.py ``assign_pool``)."""
        return tuple(r for r in self.dra if r.before and r.before != r.after)

    @property
    def pending(self) -> bool:
        """Anything to roll out: a node change or a backend migration (``--exit-code``, ``hasChanges``)."""
        return self.has_changes or bool(self.migrations)
