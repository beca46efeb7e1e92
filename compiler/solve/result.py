"""What the solve stage hands to plan and render. Pure data; no solver logic here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from compiler.diagnostics import Diagnostic
from compiler.model import GpuLayout, NodeLayout

# How the solver shares a priority tier it cannot serve in full (compiler/solve/milp.py, level 1);
# the plan shows it next to each such tier's split.
FAIRNESS_RULE = (
    "leximin on each workload's served fraction (served / requested) inside the tier, across "
    "tenants and inside one: the smallest fraction as large as possible, then the next; then the "
    "most replicas"
)


@dataclass(frozen=True)
class NodeResult:
    """The target layout of one node and how it differs from what is deployed."""

    name: str
    gpus: NodeLayout  # target, one GpuLayout per GPU index
    current: NodeLayout | None  # None = nothing known deployed (new node or no previous output)
    changed_gpus: tuple[int, ...]  # GPU indices whose layout differs from current (all when current is None)

    @property
    def changed(self) -> bool:
        return bool(self.changed_gpus)


@dataclass(frozen=True)
class ServedDemand:
    """Instances of one resource a workload gets (or misses) in one pool.

    ``resource`` is a MIG profile name (``1g.10gb``) or ``"gpu"`` for whole GPUs.
    """

    tenant: str
    workload: str
    resource: str
    requested: int  # instances (replicas × per-replica count) this workload wanted from this pool
    served: int
    priority_tier: str

    @property
    def unmet(self) -> int:
        return self.requested - self.served

    def to_dict(self) -> dict[str, Any]:
        """The row as the CapacityReport (``schema/capacity.schema.json``) and the solution export
        write it (the export adds ``unmet``)."""
        return {
            "tenant": self.tenant,
            "workload": self.workload,
            "resource": self.resource,
            "priorityTier": self.priority_tier,
            "requested": self.requested,
            "served": self.served,
        }


def tally_by_object(nodes: Iterable[NodeResult]) -> list[tuple[GpuLayout, int]]:
    """How many GPUs of ``nodes`` carry each layout *object*, in the order they first appear.

    The solver shares one layout object between all the GPUs that carry it, so 80,000 GPUs become
    a few dozen entries without hashing a dataclass per GPU; equal layouts held by different objects
    are separate entries (merge them by value where that matters)."""
    seen: dict[int, list[Any]] = {}
    for node in nodes:
        for gpu in node.gpus:
            hit = seen.get(id(gpu))
            if hit is None:
                seen[id(gpu)] = [gpu, 1]
            else:
                hit[1] += 1
    return [(gpu, count) for gpu, count in seen.values()]


@dataclass(frozen=True)
class PoolResult:
    cluster: str
    pool: str
    gpu_model: str
    nodes: tuple[NodeResult, ...]  # sorted by node name
    demand: tuple[ServedDemand, ...]  # sorted by (tenant, workload, resource)
    layout_counts: tuple[tuple[GpuLayout, int], ...]  # how many GPUs carry each layout (pool level)
    optimal: bool  # True when the MILP proved optimality; False for the greedy fallback
    lower_bound_gpus: float = 0.0  # LP bound on GPUs needed for the served demand
    gpus_used: int = 0  # GPUs carrying at least one demanded instance or a whole-GPU workload
    solve_seconds: float = field(default=0.0, compare=False)
    # (tenant, resource, instances) held idle in this pool so a tenant's guarantee is met without demand
    reserved: tuple[tuple[str, str, int], ...] = ()
    # (workload, node, replicas) of workloads with a per-node spread, as the solver placed them
    spread: tuple[tuple[str, str, int], ...] = ()

    def capacity(self) -> dict[str, int]:
        """Instances per resource the pool's target layout provides (whole GPUs under ``"gpu"``)."""
        out: dict[str, int] = {}
        for gpu, gpus in tally_by_object(self.nodes):
            if not gpu.mig_enabled:
                out["gpu"] = out.get("gpu", 0) + gpus
            for name, count in gpu.profiles:
                out[name] = out.get(name, 0) + count * gpus
        return dict(sorted(out.items()))


@dataclass(frozen=True)
class Solution:
    pools: tuple[PoolResult, ...]  # sorted by (cluster, pool)
    diagnostics: tuple[Diagnostic, ...] = ()
    hami: tuple[HamiPoolResult, ...] = ()  # sharing: hami pools, sorted by (cluster, pool)

    def pool(self, cluster: str, pool: str) -> PoolResult:
        for p in self.pools:
            if p.cluster == cluster and p.pool == pool:
                return p
        raise KeyError((cluster, pool))


@dataclass(frozen=True)
class HamiShare:
    """Replicas of one workload on one GPU of a HAMi pool; memory (MiB) and cores (%) are per replica."""

    tenant: str
    workload: str
    replicas: int
    memory_mib: int
    cores: int


@dataclass(frozen=True)
class HamiGpu:
    node: str
    index: int
    memory_mib: int  # what HAMi hands out: device memory × memoryScaling
    cores: int  # 100 × coreScaling
    slots: int  # splitCount
    shares: tuple[HamiShare, ...] = ()  # sorted by (tenant, workload)

    @property
    def used_memory_mib(self) -> int:
        return sum(s.replicas * s.memory_mib for s in self.shares)

    @property
    def used_cores(self) -> int:
        return sum(s.replicas * s.cores for s in self.shares)

    @property
    def used_slots(self) -> int:
        return sum(s.replicas for s in self.shares)

    def document(self) -> dict[str, Any]:
        """This GPU as the rendered HamiPlan and the plan JSON show it (one shape for both)."""
        return {
            "node": self.node,
            "index": self.index,
            "memoryMiB": {"total": self.memory_mib, "used": self.used_memory_mib},
            "cores": {"total": self.cores, "used": self.used_cores},
            "slots": {"total": self.slots, "used": self.used_slots},
            "shares": [
                {
                    "tenant": s.tenant,
                    "workload": s.workload,
                    "replicas": s.replicas,
                    "memoryMiB": s.memory_mib,
                    "cores": s.cores,
                }
                for s in self.shares
            ],
        }


@dataclass(frozen=True)
class HamiPoolResult:
    """The packing of HAMi shares onto one ``sharing: hami`` pool (compiler.solve.hami)."""

    cluster: str
    pool: str
    gpu_model: str
    gpus: tuple[HamiGpu, ...]  # sorted by (node, index)
    demand: tuple[ServedDemand, ...]  # resource "vgpu"; sorted by (tenant, workload)
    optimal: bool
    objectives: tuple[tuple[str, int], ...] = ()  # the cluster's level optima, in level order

    @property
    def gpus_used(self) -> int:
        return sum(1 for g in self.gpus if g.shares)
