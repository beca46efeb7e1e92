"""Builders for solver tests: small Policy objects straight from ``compiler.model`` (no YAML)."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.model import (
    Cluster,
    CurrentState,
    GpuLayout,
    NodePool,
    PartitionPolicy,
    Policy,
    Quota,
    Sharing,
    Tenant,
    Workload,
)
from compiler.model import Need as Need
from compiler.solve.result import Solution

CLUSTER = "c1"


def pool(
    name: str = "p",
    model: str = "A100-SXM4-80GB",
    nodes: int = 1,
    gpus_per_node: int = 8,
    *,
    mig: bool = True,
    sharing: Sharing | None = None,
    reserve_gpus: int = 0,
    reserve_nodes: int = 0,
    cluster: str = CLUSTER,
) -> NodePool:
    return NodePool(
        name=name,
        cluster=cluster,
        gpu_product=model,
        gpu_model=model,
        gpus_per_node=gpus_per_node,
        node_names=tuple(f"{name}-n{i:02d}" for i in range(nodes)),
        reserve_whole_gpus=reserve_gpus,
        reserve_whole_nodes=reserve_nodes,
        mig=mig,
        sharing=sharing or Sharing(),
    )


def tenant(name: str = "t1", tier: str = "high", guaranteed: Quota | None = None) -> Tenant:
    return Tenant(name=name, namespaces=(name,), priority_tier=tier, guaranteed=guaranteed or Quota())


def workload(
    name: str,
    need: Need,
    replicas: int = 1,
    *,
    tenant_name: str = "t1",
    tier: str = "high",
    isolation: str = "hardware",
    pools: Sequence[str] = (),
    cluster: str = CLUSTER,
) -> Workload:
    return Workload(
        name=name,
        tenant=tenant_name,
        replicas=replicas,
        need=need,
        isolation=isolation,  # type: ignore[arg-type]
        priority_tier=tier,
        cluster=cluster,
        pools=tuple(pools),
    )


def profile_need(*names: str) -> Need:
    return Need(profiles=tuple(names))


def policy(
    pools: Sequence[NodePool],
    workloads: Sequence[Workload],
    tenants: Sequence[Tenant] | None = None,
    partition: PartitionPolicy | None = None,
) -> Policy:
    if tenants is None:
        names = sorted({w.tenant for w in workloads} or {"t1"})
        tiers = {w.tenant: w.priority_tier for w in workloads}
        tenants = [tenant(n, tiers.get(n, "high")) for n in names]
    clusters: dict[str, list[NodePool]] = {}
    for p in pools:
        clusters.setdefault(p.cluster, []).append(p)
    return Policy(
        clusters=tuple(Cluster(name=c, pools=tuple(ps)) for c, ps in sorted(clusters.items())),
        tenants=tuple(tenants),
        workloads=tuple(workloads),
        partition=partition or PartitionPolicy(),
    )


def as_current(solution: Solution) -> CurrentState:
    return CurrentState(
        nodes=tuple(((p.cluster, p.pool, n.name), n.gpus) for p in solution.pools for n in p.nodes)
    )


def served(solution: Solution, workload_name: str) -> int:
    return sum(d.served for p in solution.pools for d in p.demand if d.workload == workload_name)


def unmet(solution: Solution, workload_name: str) -> int:
    return sum(d.unmet for p in solution.pools for d in p.demand if d.workload == workload_name)


def whole_gpu_jobs_pack(pol: Policy, solution: Solution) -> bool:
    """Whether every served whole-GPU replica (k GPUs) fits k whole GPUs of one node, in every pool."""
    whole = GpuLayout.whole()
    sizes = {w.name: max(1, w.need.gpus) for w in pol.workloads}
    for p in solution.pools:
        jobs = sorted(
            (
                sizes[d.workload]
                for d in p.demand
                if d.resource == "gpu"
                for _ in range(d.served // sizes[d.workload])
            ),
            reverse=True,
        )
        free = [sum(1 for g in n.gpus if g == whole) for n in p.nodes]
        if not _packs(jobs, free):
            return False
    return True


def _packs(jobs: list[int], free: list[int]) -> bool:
    """Exact bin packing by backtracking; bins with equal free space are tried once."""
    if not jobs:
        return True
    k, rest = jobs[0], jobs[1:]
    tried = set()
    for j, f in enumerate(free):
        if f >= k and f not in tried:
            tried.add(f)
            free[j] -= k
            ok = _packs(rest, free)
            free[j] += k
            if ok:
                return True
    return False
