"""Turn workloads and tenant guarantees into solver demand, per cluster.

A workload replica is served in exactly one way: a MIG instance of one profile in one pool
(``mig``), ``k`` whole GPUs on one node (``whole``), or ``k`` time-sliced/MPS replicas of a
non-MIG pool (``shared``). Workloads that ask for the same thing (same tenant, tier, kind, size and
options) are merged into one :class:`DemandItem` so the integer program stays small when a fleet has
thousands of workloads; the result is split back per workload in name order.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from compiler.catalog import Catalog, GpuModel, Profile
from compiler.model import WHOLE_GPU, Cluster, NodePool, Policy, Spread, Workload

Kind = Literal["mig", "whole", "shared"]


@dataclass(frozen=True, order=True)
class Option:
    pool: str
    resource: str  # MIG profile name, or "gpu" for whole GPUs / shared replicas
    rank: int = 0  # preference rank among the workload's profiles (0 = most preferred)


@dataclass(frozen=True)
class DemandItem:
    tenant: str
    tier: str
    tier_value: int
    kind: Kind
    size: int  # whole GPUs (whole) or shared replicas (shared) per workload replica; 1 for mig
    options: tuple[Option, ...]  # sorted by (rank, pool, resource); empty = nothing can serve it
    workloads: tuple[tuple[str, int], ...]  # (workload name, replicas), sorted by name
    reason: str = ""  # why no option exists (for the diagnostic)
    spread: Spread | None = None  # the one workload's spread (a spread workload is never merged)

    @property
    def replicas(self) -> int:
        return sum(r for _, r in self.workloads)


@dataclass(frozen=True)
class Guarantee:
    tenant: str
    resource: str  # profile name or "gpu"
    amount: int
    pools: tuple[str, ...]  # pools of the cluster that can hold it


def is_shared_pool(pool: NodePool) -> bool:
    return pool.is_shared  # HAMi pools: compiler.solve.hami


def offers_whole(pool: NodePool) -> bool:
    """Whole, unshared GPUs: any MIG pool (MIG disabled per GPU) or a non-MIG pool without sharing."""
    return pool.mig or pool.sharing.mode == "none"


def pool_model(pool: NodePool, catalog: Catalog) -> GpuModel | None:
    return catalog.get(pool.gpu_model) or catalog.by_product(pool.gpu_product)


def mig_model(pool: NodePool, catalog: Catalog) -> GpuModel | None:
    model = pool_model(pool, catalog)
    if not pool.mig or model is None or not model.mig_capable or not model.profiles:
        return None
    return model


def smallest_fitting(model: GpuModel, memory_gb: float, compute: int) -> Profile | None:
    """The smallest non-``+me`` profile with at least this memory and compute.

    "Smallest" is the share of the memory-slice axis it blocks; ties go to fewer compute slices,
    then less memory, then name.
    """
    fitting = [
        p
        for p in model.profiles
        if not p.media_extensions and p.memory_gb >= memory_gb and p.compute_slices >= compute
    ]
    if not fitting:
        return None
    return min(fitting, key=lambda p: (p.memory_slices, p.compute_slices, p.memory_gb, p.name))


def node_labels(pool: NodePool) -> dict[str, str]:
    """Labels every node of the pool carries: its ``labels`` and its selector's matchLabels."""
    return {**dict(pool.labels), **dict(pool.node_selector)}


def _candidate_pools(cluster: Cluster, workload: Workload) -> list[NodePool]:
    pools = sorted(cluster.pools, key=lambda p: p.name)
    if workload.pools:
        allowed = set(workload.pools)
        pools = [p for p in pools if p.name in allowed]
    key = workload.spread.topology_key if workload.spread is not None else ""
    if key:  # the scheduler keeps pods with a topology spread off nodes without the key
        pools = [p for p in pools if key in node_labels(p)]
    return pools


def _options(
    workload: Workload, cluster: Cluster, catalog: Catalog
) -> tuple[Kind, int, tuple[Option, ...], str]:
    need = workload.need
    pools = _candidate_pools(cluster, workload)
    opts: list[Option] = []
    if workload.isolation == "shared":
        size = max(1, need.gpus)
        for pool in pools:
            if not is_shared_pool(pool):
                continue
            model = pool_model(pool, catalog)
            if need.gpu_memory_gb and model is not None and model.memory_gb < need.gpu_memory_gb:
                continue
            if size <= pool.gpus_per_node * pool.sharing.replicas:
                opts.append(Option(pool.name, WHOLE_GPU))
        why = "no time-sliced or MPS pool in the cluster can host it" if not opts else ""
        return "shared", size, _ordered(opts), why
    if workload.isolation == "exclusive" or need.kind == "gpus":
        size = max(1, need.gpus)
        for pool in pools:
            if offers_whole(pool) and size <= pool.gpus_per_node:
                opts.append(Option(pool.name, WHOLE_GPU))
        why = f"no pool offers {size} whole unshared GPU(s) on one node" if not opts else ""
        return "whole", size, _ordered(opts), why
    for pool in pools:
        model = mig_model(pool, catalog)
        if model is None:
            continue
        if need.kind == "profiles":
            for rank, name in enumerate(need.profiles):
                if model.profile(name) is not None:
                    opts.append(Option(pool.name, name, rank))
        else:
            prof = smallest_fitting(model, need.gpu_memory_gb, need.compute_slices)
            if prof is not None:
                opts.append(Option(pool.name, prof.name))
    if opts:
        why = ""
    elif need.kind == "profiles":
        why = f"no MIG pool it may use offers {', '.join(need.profiles)}"
    else:
        why = (
            f"no MIG profile in the pools it may use has {need.gpu_memory_gb:g} GB and "
            f"{need.compute_slices} compute slice(s)"
        )
    return "mig", 1, _ordered(opts), why


def sized_resource(workload: Workload, cluster: Cluster, catalog: Catalog) -> str | None:
    """The one resource ``migc recommend`` sizes a workload by: the profile compile serves its
    replicas with where it may go first (an exact profile; the first of a preference list; for
    ``gpuMemoryGB``/``computeSlices`` the smallest fitting profile of its first pool's GPU model), or
    ``gpu`` for whole-GPU, exclusive and time-sliced/MPS needs. None when no pool can serve it."""
    if workload.need.kind == "profiles":
        return workload.need.profiles[0]
    kind, _size, options, _why = _options(workload, cluster, catalog)
    if kind != "mig":
        return WHOLE_GPU
    return options[0].resource if options else None


def build_demand(policy: Policy, cluster: Cluster, catalog: Catalog) -> tuple[DemandItem, ...]:
    """Demand items of one cluster, merged and sorted deterministically."""
    merged: dict[tuple[str, str, Kind, int, tuple[Option, ...], str, str], list[tuple[str, int]]] = {}
    spreads: dict[str, Spread] = {}
    for w in sorted(policy.workloads, key=lambda w: w.name):
        if w.cluster != cluster.name or w.replicas <= 0 or w.need.hami is not None:
            continue  # HAMi shares are packed by compiler.solve.hami
        kind, size, opts, why = _options(w, cluster, catalog)
        alone = ""
        if w.spread is not None:  # its caps count its own replicas: an item of its own
            alone = w.name
            spreads[w.name] = w.spread
        key = (w.tenant, w.priority_tier, kind, size, opts, why, alone)
        merged.setdefault(key, []).append((w.name, w.replicas))
    items = []
    for (tenant, tier, kind, size, opts, why, alone), wls in merged.items():
        items.append(
            DemandItem(
                tenant=tenant,
                tier=tier,
                tier_value=_tier_value(policy, tier),
                kind=kind,
                size=size,
                options=opts,
                workloads=tuple(sorted(wls)),
                reason=why,
                spread=spreads.get(alone),
            )
        )
    return tuple(sorted(items, key=lambda i: (i.tenant, i.workloads, i.kind, i.size)))


def _tier_value(policy: Policy, tier: str) -> int:
    try:
        return policy.partition.tier_value(tier)
    except KeyError:
        return 0


def guarantee_pools(cluster: Cluster, catalog: Catalog, resource: str) -> tuple[str, ...]:
    out = []
    for pool in sorted(cluster.pools, key=lambda p: p.name):
        if resource == WHOLE_GPU:
            if offers_whole(pool):
                out.append(pool.name)
            continue
        model = mig_model(pool, catalog)
        if model is not None and model.profile(resource) is not None:
            out.append(pool.name)
    return tuple(out)


def tenant_guarantees(
    policy: Policy, catalog: Catalog
) -> tuple[dict[str, list[Guarantee]], list[tuple[str, str, int]]]:
    """Guarantees per cluster, and those no cluster can hold at all: ``(tenant, resource, amount)``.

    A guarantee holds in every cluster where the tenant runs workloads and some pool offers the
    resource (quotas are rendered per cluster); a tenant without workloads gets it in every cluster
    that offers the resource.
    """
    per_cluster: dict[str, list[Guarantee]] = {c.name: [] for c in policy.clusters}
    nowhere: list[tuple[str, str, int]] = []
    for tenant in sorted(policy.tenants, key=lambda t: t.name):
        wanted: list[tuple[str, int]] = list(tenant.guaranteed.profiles)
        if tenant.guaranteed.gpus:
            wanted.append((WHOLE_GPU, tenant.guaranteed.gpus))
        if not wanted:
            continue
        running = {w.cluster for w in policy.workloads if w.tenant == tenant.name}
        for resource, amount in sorted(wanted):
            if amount <= 0:
                continue
            placed = False
            for cluster in sorted(policy.clusters, key=lambda c: c.name):
                if running and cluster.name not in running:
                    continue
                pools = guarantee_pools(cluster, catalog, resource)
                if pools:
                    per_cluster[cluster.name].append(Guarantee(tenant.name, resource, amount, pools))
                    placed = True
            if not placed:
                nowhere.append((tenant.name, resource, amount))
    return per_cluster, nowhere


def split_served(workloads: Sequence[tuple[str, int]], served: int) -> list[tuple[str, int, int]]:
    """Split a merged item's served replicas back over its workloads: (name, wanted, got), in the
    given (name) order.

    Max-min fair on the fraction of each workload's replicas served: every next replica goes to
    the workload with the smallest fraction so far (ties: fewer replicas wanted, then name order).
    This is the leximin allocation (the sorted vector of fractions is lexicographically largest),
    so no workload is left at 0 while a sibling in the same item gets more than its share.
    """
    left = min(served, sum(r for _, r in workloads))
    if len(workloads) == 1:
        return [(workloads[0][0], workloads[0][1], left)]
    got = [0] * len(workloads)
    heap = [(Fraction(0), wanted, j) for j, (_n, wanted) in enumerate(workloads) if wanted > 0]
    heapq.heapify(heap)
    while left > 0 and heap:
        _f, wanted, j = heapq.heappop(heap)
        got[j] += 1
        left -= 1
        if got[j] < wanted:
            heapq.heappush(heap, (Fraction(got[j], wanted), wanted, j))
    return [(name, wanted, got[j]) for j, (name, wanted) in enumerate(workloads)]


def _ordered(options: Sequence[Option]) -> tuple[Option, ...]:
    """One option per (pool, profile) at its best rank; most preferred first, then pool and profile."""
    best: dict[tuple[str, str], Option] = {}
    for o in options:
        key = (o.pool, o.resource)
        if key not in best or o.rank < best[key].rank:
            best[key] = o
    return tuple(sorted(best.values(), key=lambda o: (o.rank, o.pool, o.resource)))
