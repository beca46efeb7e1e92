"""The decision tree: which sharing mode each pool should use, and why (every reason cites a code).

Inputs are the validated policy, the catalog and the solution of that policy (which workloads each
pool actually serves). The tree, in order:

1. workloads that ask for hardware isolation → MIG where the GPU model has it (MIGC500), else whole
   GPUs per replica (MIGC501);
2. only shared workloads → MPS for one cooperative tenant on Volta+ (MIGC502), else time-slicing
   (MIGC503; MIGC504 when the model has no MPS);
3. only whole/multi-GPU workloads → whole GPUs (MIGC505);
4. for MIG: a pool under 4 GPUs (MIGC506) or one profile only (MIGC507) → static layout, else a
   dynamic mode can pay (MIGC508).

Then what the current choice costs or risks (MIGC510, MIGC511, MIGC513).
HAMi (issue 13) hook: a pool mode the tree does not know is reported as its current mode; add its
rule as one more step (a ``_for_…`` function) in :func:`_choose` and a value in
:data:`compiler.advise.model.Mode`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from compiler.advise.gpus import supports_mps
from compiler.advise.model import Finding, Mode, PoolAdvice
from compiler.catalog import Catalog
from compiler.model import NodePool, Policy, Workload
from compiler.solve.result import PoolResult, Solution

SMALL_POOL_GPUS = 4
"""Below this many GPUs a changing layout does not pay for its drains (the issue's "~4 GPUs")."""


def current_mode(pool: NodePool) -> str:
    if pool.mig:
        return "mig"
    if pool.sharing.mode == "none":
        return "whole-gpu"
    return f"{pool.sharing.mode} x{pool.sharing.replicas}"


def _names(items: Sequence[str]) -> str:
    return ", ".join(sorted(set(items)))


def _served(policy: Policy, result: PoolResult) -> list[Workload]:
    """Workloads the pool serves in the solution, and those pinned to it (``pools:``) even when the
    pool's current mode cannot serve them: their needs are what the pool should be set up for."""
    wanted = {d.workload for d in result.demand if d.requested > 0}
    return [
        w
        for w in policy.workloads
        if w.cluster == result.cluster and (w.name in wanted or result.pool in w.pools)
    ]


def advise_pool(policy: Policy, catalog: Catalog, pool: NodePool, result: PoolResult) -> PoolAdvice:
    workloads = _served(policy, result)
    model = catalog.get(pool.gpu_model)
    current = current_mode(pool)
    if not workloads:
        finding = Finding(
            "MIGC512", "note", f"no declared workload is served by this pool ({pool.total_gpus} GPU(s))"
        )
        return PoolAdvice(
            pool.cluster, pool.name, pool.gpu_model, pool.total_gpus, current, None, None, (finding,)
        )
    mig_capable = model is not None and model.mig_capable and bool(model.profiles)
    lowest = min(policy.partition.tiers, key=lambda t: t.value).name if policy.partition.tiers else ""
    profiles = sorted({d.resource for d in result.demand if d.requested > 0 and d.resource != "gpu"})
    mode, findings = _choose(pool, workloads, mig_capable, lowest, profiles)
    partition: Literal["static", "dynamic"] | None = None
    if mode == "mig":
        partition, more = _partition_mode(policy, pool, result)
        findings.extend(more)
    findings.extend(_risks(pool, workloads, mode, current))
    idle = pool.total_gpus - pool.reserve_whole_gpus - pool.reserve_whole_nodes * pool.gpus_per_node
    idle -= result.gpus_used
    if idle > 0:
        price = dict(policy.partition.pricing).get(pool.gpu_model)
        cost = f" (${idle * price:,.2f}/h)" if price is not None else ""
        findings.append(
            Finding(
                "MIGC514",
                "note",
                f"{result.gpus_used} of {pool.total_gpus} GPU(s) serve declared demand; {idle} idle{cost}",
            )
        )
    return PoolAdvice(
        pool.cluster, pool.name, pool.gpu_model, pool.total_gpus, current, mode, partition, tuple(findings)
    )


def _choose(
    pool: NodePool,
    workloads: Sequence[Workload],
    mig_capable: bool,
    lowest_tier: str,
    served_profiles: Sequence[str],
) -> tuple[Mode, list[Finding]]:
    """``lowest_tier``: the policy's lowest-valued priority tier (best-effort work);
    ``served_profiles``: the MIG profiles the pool's solved layout serves."""
    hardware = [w for w in workloads if w.isolation == "hardware" and w.need.kind != "gpus"]
    shared = [w for w in workloads if w.isolation == "shared"]
    whole = [w for w in workloads if w not in hardware and w not in shared]
    if hardware:
        return _for_hardware_isolation(pool, hardware, mig_capable, served_profiles)
    if shared:
        return _for_sharing(pool, shared, lowest_tier)
    return _for_whole_gpus(whole)


def _for_hardware_isolation(
    pool: NodePool, hardware: Sequence[Workload], mig_capable: bool, served_profiles: Sequence[str]
) -> tuple[Mode, list[Finding]]:
    """Step 1: MIG where the model has it (MIGC500), else a whole GPU per replica (MIGC501)."""
    what = _names(served_profiles) or "memory/compute needs"
    asked = (
        f"{len(hardware)} workload(s) of tenant(s) {_names([w.tenant for w in hardware])} ask for "
        f"hardware isolation ({what})"
    )
    if mig_capable:
        return "mig", [Finding("MIGC500", "note", f"{asked}; {pool.gpu_model} supports MIG")]
    replicas = sum(w.replicas for w in hardware)
    return "whole-gpu", [
        Finding(
            "MIGC501",
            "warning",
            f"{asked}, but {pool.gpu_model} has no MIG: isolating them costs a whole GPU per "
            f"replica ({replicas} GPU(s))",
        )
    ]


def _for_sharing(pool: NodePool, shared: Sequence[Workload], lowest_tier: str) -> tuple[Mode, list[Finding]]:
    """Step 2: MPS for one tenant's non-best-effort work on Volta+ (MIGC502), else time-slicing
    (MIGC503; MIGC504 first when the model predates MPS)."""
    tenants = sorted({w.tenant for w in shared})
    low = [w for w in shared if w.priority_tier == lowest_tier]
    if not supports_mps(pool.gpu_model):
        return "time-slicing", [
            Finding("MIGC504", "note", f"{pool.gpu_model} predates Volta: MPS is not available"),
            Finding("MIGC503", "note", f"{len(shared)} shared workload(s): time-slicing is the only sharing"),
        ]
    if len(tenants) == 1 and not low:
        return "mps", [
            Finding(
                "MIGC502",
                "note",
                f"{len(shared)} shared workload(s) of one tenant ({tenants[0]}): MPS runs them "
                f"concurrently with per-client limits on {pool.gpu_model}",
            )
        ]
    why = (
        f"{len(tenants)} tenants ({_names(tenants)})"
        if len(tenants) > 1
        else f"best-effort work of tier {low[0].priority_tier} ({_names([w.name for w in low])})"
    )
    return "time-slicing", [
        Finding("MIGC503", "note", f"shared workloads of {why}: time-slicing suits bursty, mostly idle use")
    ]


def _for_whole_gpus(whole: Sequence[Workload]) -> tuple[Mode, list[Finding]]:
    """Step 3: only whole- or multi-GPU work: whole GPUs (MIGC505)."""
    sizes = _names([f"{w.name}: {w.need.gpus or 1} GPU(s) per replica" for w in whole])
    kind = "multi-GPU training" if any(w.need.gpus > 1 for w in whole) else "whole-GPU work"
    return "whole-gpu", [
        Finding("MIGC505", "note", f"every workload is {kind} ({sizes}): partitioning gains nothing")
    ]


def _partition_mode(
    policy: Policy, pool: NodePool, result: PoolResult
) -> tuple[Literal["static", "dynamic"], list[Finding]]:
    profiles = sorted({d.resource for d in result.demand if d.requested > 0 and d.resource != "gpu"})
    findings: list[Finding] = []
    mode: Literal["static", "dynamic"]
    if pool.total_gpus < SMALL_POOL_GPUS:
        mode = "static"
        findings.append(
            Finding(
                "MIGC506",
                "note",
                f"{pool.total_gpus} GPU(s) (< {SMALL_POOL_GPUS}): a changing layout would not pay for its "
                "drains; keep a static layout",
            )
        )
    elif len(profiles) <= 1:
        mode = "static"
        findings.append(
            Finding(
                "MIGC507", "note", f"one profile only ({_names(profiles) or 'none'}): keep a static layout"
            )
        )
    else:
        mode = "dynamic"
        findings.append(
            Finding(
                "MIGC508",
                "note",
                f"{pool.total_gpus} GPUs serve {len(profiles)} profiles ({_names(profiles)}): "
                "re-partitioning from observed demand can serve more",
            )
        )
    if mode == "static" and policy.partition.mode == "dynamic":
        findings.append(
            Finding(
                "MIGC513",
                "warning",
                "PartitionPolicy mode is dynamic: each re-partitioning of this pool drains nodes for no gain",
            )
        )
    return mode, findings


_COST = {
    ("mig", "whole-gpu"): "MIG is enabled on GPUs that serve whole-GPU work only: nothing is gained, "
    "and every layout change drains nodes",
    ("whole-gpu", "mig"): "whole GPUs are given to work that a MIG slice would serve in isolation",
    ("time-slicing", "mps"): "time-slicing gives no per-client limits and runs one context at a time; "
    "MPS would run the tenant's kernels concurrently",
    ("mps", "time-slicing"): "one MPS server per GPU is a shared fault domain for several tenants or "
    "best-effort work",
    ("time-slicing", "whole-gpu"): "whole-GPU work should not share a GPU",
    ("mps", "whole-gpu"): "whole-GPU work should not share a GPU",
}


def _risks(pool: NodePool, workloads: Sequence[Workload], mode: Mode, current: str) -> list[Finding]:
    out: list[Finding] = []
    base = current.split(" ")[0]
    if base in ("time-slicing", "mps"):
        tenants = sorted({w.tenant for w in workloads})
        if len(tenants) > 1:
            out.append(
                Finding(
                    "MIGC510",
                    "warning",
                    f"{base}: tenants {_names(tenants)} share GPU memory without isolation",
                )
            )
    if base != mode:
        cost = _COST.get((base, mode), f"the workloads it serves are better served by {mode}")
        if base == "mps" and not supports_mps(pool.gpu_model):
            cost = f"{pool.gpu_model} predates Volta, so MPS has no per-client limits there"
        out.append(Finding("MIGC511", "warning", f"current mode {current}, advised {mode}: {cost}"))
    return out


def advise_pools(policy: Policy, catalog: Catalog, solution: Solution) -> tuple[PoolAdvice, ...]:
    out = []
    for cluster in sorted(policy.clusters, key=lambda c: c.name):
        for pool in sorted(cluster.pools, key=lambda p: p.name):
            out.append(advise_pool(policy, catalog, pool, solution.pool(cluster.name, pool.name)))
    return tuple(out)
