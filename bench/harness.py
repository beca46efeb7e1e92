"""Runs migc's real solver on bench demand and reads its answer back independently.

The policy is built directly as ``compiler.model`` objects here (M1–M3 measure the solver, not the
loader); M4 goes through YAML files and validation instead (see ``bench/scale.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from bench.demand import TIERS, WHOLE, Pod
from bench.geometry import Geometry
from bench.optimum import GpuState
from compiler.catalog import Catalog, GpuModel
from compiler.model import (
    Cluster,
    CurrentState,
    GpuLayout,
    Need,
    NodePool,
    Policy,
    Tenant,
    Workload,
)
from compiler.solve.result import PoolResult, Solution

CLUSTER = "bench"
POOL = "pool"


def _solve_fn() -> Callable[..., Solution] | None:
    """``compiler.solve.solve``; before the package exports it, its implementation module."""
    import compiler.solve as package

    fn = getattr(package, "solve", None)
    if callable(fn):
        return cast(Callable[..., Solution], fn)
    try:
        from compiler.solve import pipeline
    except ImportError:
        return None
    fn = getattr(pipeline, "solve", None)
    return cast(Callable[..., Solution], fn) if callable(fn) else None


def solver_available() -> bool:
    """Whether migc's solver exists; without it the bench runs only its references and baselines."""
    return _solve_fn() is not None


def _slug(resource: str) -> str:
    return resource.replace(".", "-").replace("+", "-").lower()


def build_policy(model: GpuModel, pods: Sequence[Pod], nodes: int, gpus_per_node: int = 8) -> Policy:
    """One cluster, one pool of ``nodes`` nodes of ``model``; one workload per (tenant, tier, resource, k)."""
    groups: dict[tuple[str, str, str, int], int] = {}
    for p in pods:
        key = (p.tenant, p.tier, p.resource, p.count)
        groups[key] = groups.get(key, 0) + 1
    tenant_tier: dict[str, str] = {}
    for tenant, tier, _, _ in sorted(groups):
        tenant_tier.setdefault(tenant, tier)
    tenants = tuple(
        Tenant(name=t, namespaces=(t,), priority_tier=tier) for t, tier in sorted(tenant_tier.items())
    )
    workloads = []
    for (tenant, tier, res, k), n in sorted(groups.items()):
        need = Need(gpus=k) if res == WHOLE else Need(profiles=(res,))
        workloads.append(
            Workload(
                name=f"{tenant}-{tier}-{_slug(res)}-{k}",
                tenant=tenant,
                replicas=n,
                need=need,
                isolation="exclusive" if res == WHOLE else "hardware",
                priority_tier=tier,
                cluster=CLUSTER,
            )
        )
    pool = NodePool(
        name=POOL,
        cluster=CLUSTER,
        gpu_product=model.gpu_products[0] if model.gpu_products else model.model,
        gpu_model=model.model,
        gpus_per_node=gpus_per_node,
        node_names=tuple(f"node-{i:05d}" for i in range(nodes)),
    )
    return Policy(
        clusters=(Cluster(name=CLUSTER, pools=(pool,)),),
        tenants=tenants,
        workloads=tuple(sorted(workloads, key=lambda w: w.name)),
    )


def solve(
    policy: Policy, catalog: Catalog, current: CurrentState | None = None, time_limit_s: float | None = None
) -> Solution:
    fn = _solve_fn()
    if fn is None:
        raise RuntimeError("compiler.solve.solve is not available")
    if time_limit_s is None:
        return fn(policy, catalog, current)
    return fn(policy, catalog, current, time_limit_s=time_limit_s)


def current_state(solution: Solution) -> CurrentState:
    """What would be deployed after applying ``solution``: feeds the next solve's ``current``."""
    return CurrentState(
        nodes=tuple(
            ((pool.cluster, pool.pool, node.name), node.gpus)
            for pool in solution.pools
            for node in pool.nodes
        )
    )


@dataclass(frozen=True)
class Readback:
    """migc's answer for the bench's single pool, counted by the bench, not by the solver."""

    gpus_used: int  # MIG GPUs carrying an instance + whole GPUs that whole-GPU demand occupies
    solver_gpus_used: int  # what the solver itself reports
    optimal: bool
    lp_bound: float
    infeasible_layouts: int  # target GPU layouts the bench's geometry rejects (must be 0)
    served: tuple[Pod, ...]  # served demand, expanded back to pods (tenant and tier kept)
    unmet: int  # instances or whole GPUs requested and not served
    nodes: tuple[tuple[str, tuple[GpuState, ...]], ...]  # per node, per GPU: layout or None (whole)
    seconds: float


def _state(layout: GpuLayout) -> GpuState:
    return layout.profiles if layout.mig_enabled else None


def node_states(pool: PoolResult) -> tuple[tuple[str, tuple[GpuState, ...]], ...]:
    return tuple((n.name, tuple(_state(g) for g in n.gpus)) for n in pool.nodes)


def read_back(geo: Geometry, solution: Solution, policy: Policy) -> Readback:
    pool = solution.pool(CLUSTER, POOL)
    infeasible = 0
    mig_used = 0
    whole = 0
    for node in pool.nodes:
        for gpu in node.gpus:
            if not gpu.mig_enabled:
                whole += 1
            elif gpu.profiles:
                mig_used += 1
                if not geo.feasible(dict(gpu.profiles)):
                    infeasible += 1
    by_name = {w.name: w for w in policy.workloads}
    served: list[Pod] = []
    whole_served = 0
    unmet = 0
    for d in pool.demand:
        unmet += d.unmet
        w = by_name[d.workload]
        if d.resource == WHOLE:
            k = max(1, w.need.gpus)
            whole_served += d.served
            served.extend([Pod(WHOLE, k, d.tenant, d.priority_tier)] * (d.served // k))
        else:
            served.extend([Pod(d.resource, 1, d.tenant, d.priority_tier)] * d.served)
    return Readback(
        gpus_used=mig_used + min(whole, whole_served),
        solver_gpus_used=pool.gpus_used,
        optimal=pool.optimal,
        lp_bound=pool.lower_bound_gpus,
        infeasible_layouts=infeasible,
        served=tuple(served),
        unmet=unmet,
        nodes=node_states(pool),
        seconds=pool.solve_seconds,
    )


def changes(
    before: Sequence[tuple[str, Sequence[GpuState]]], after: Sequence[tuple[str, Sequence[GpuState]]]
) -> tuple[int, int]:
    """(nodes touched, GPUs changed) between two per-node layouts, matched by node name."""
    old = dict(before)
    nodes = 0
    gpus = 0
    for name, layout in after:
        prev = old.get(name)
        diff = len(layout) if prev is None else sum(1 for a, b in zip(prev, layout, strict=True) if a != b)
        gpus += diff
        nodes += 1 if diff else 0
    return nodes, gpus


TIER_NAMES = tuple(t for t, _ in TIERS)
