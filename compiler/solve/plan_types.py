"""Intermediate pool-level decision, shared by the exact MILP, the greedy fallback and node assignment."""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.catalog import GpuModel
from compiler.model import GpuLayout, NodeLayout, NodePool

Pattern = tuple[int, ...]
"""Sizes (whole GPUs) of the multi-GPU replicas one node hosts, sorted descending."""

RESERVE: Pattern = (0,)
"""Marker pattern for a reserved whole node (all GPUs MIG-disabled and unallocated)."""


@dataclass
class PoolDecision:
    pool: NodePool
    model: GpuModel | None
    layouts: dict[GpuLayout, int]  # MIG layouts -> GPUs (whole GPUs are everything else)
    patterns: dict[Pattern, int]  # multi-GPU node patterns -> nodes (RESERVE -> reserved whole nodes)
    kept: dict[tuple[NodeLayout, Pattern], int]  # (current node layout, hosted pattern) -> nodes kept as is
    served: dict[tuple[int, str], int]  # (demand item index, resource) -> replicas served here
    reserved: dict[tuple[str, str], int]  # (tenant, resource) -> idle instances held for a guarantee
    gpus_used: int = 0
    lower_bound_gpus: float = 0.0
    optimal: bool = True
    solve_seconds: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)
    # pools solved node by node (serving a workload with a per-node spread): each node's MIG
    # layouts, and the replicas of each spread item (demand item index) per node
    per_node: bool = False
    node_layouts: dict[str, dict[GpuLayout, int]] = field(default_factory=dict)
    spread_served: dict[tuple[int, str], int] = field(default_factory=dict)

    @property
    def whole_gpus(self) -> int:
        return self.pool.total_gpus - sum(self.layouts.values())


def pattern_size(pattern: Pattern, gpus_per_node: int) -> int:
    return gpus_per_node if pattern == RESERVE else sum(pattern)
