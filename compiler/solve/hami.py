"""Exact packing of HAMi shares onto the GPUs of ``sharing: hami`` pools.

A HAMi share (one replica of a ``need.hami`` workload) sits on one GPU and takes memory (MiB), cores
(percent) and one of the GPU's ``splitCount`` slots (HAMi v2.10.0, pkg/device/nvidia/device.go:
``devicesplitcount``, ``devicememoryscaling``, ``devicecorescaling``). Packing them is a vector bin
packing; it is solved exactly, per cluster, as a lexicographic integer program (compiler.solve.lexmilp)
with the same levels as MIG pools:

1. ``guarantees``: shares of tenants' ``guaranteed.hami.vgpus`` served (up to the guarantee);
2. ``served-<tier>``: replicas served, one level per priority tier, highest first;
3. ``gpus``: GPUs carrying a share, fewest first;
4. ``disruption``: replicas moved away from the GPU they are deployed on (when that is known).

``x[w, g]`` counts replicas of workload ``w`` on GPU ``g`` (0/1 with ``distinctGpus``); identical GPUs
of a pool are ordered (``used[g] >= used[g+1]``) to cut symmetric branches when nothing is deployed.
``first_fit_decreasing`` and ``whole_gpu_per_pod`` are the baselines the bench compares with.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from compiler.catalog import Catalog
from compiler.diagnostics import Diagnostic, Severity, at
from compiler.model import Cluster, CurrentState, HamiNeed, NodePool, Policy, Workload
from compiler.solve.lexmilp import Level, Milp
from compiler.solve.result import HamiGpu, HamiPoolResult, HamiShare, ServedDemand

RES_GPU = "nvidia.com/gpu"  # vGPUs on HAMi nodes (HAMi v2.10.0 charts/hami/values.yaml resourceName)
RES_MEM = "nvidia.com/gpumem"  # MiB (resourceMem)
RES_MEM_PCT = "nvidia.com/gpumem-percentage"  # (resourceMemPercentage)
RES_CORES = "nvidia.com/gpucores"  # percent of one GPU (resourceCores)

GpuKey = tuple[str, str, int]
"""(pool, node, GPU index)."""


@dataclass(frozen=True)
class GpuCap:
    key: GpuKey
    memory_mib: int
    cores: int  # percent; 100 × coreScaling
    slots: int  # splitCount


@dataclass(frozen=True)
class ShareItem:
    """All replicas of one workload; ``memory_mib`` maps each GPU it may use to the MiB a share takes."""

    name: str
    tenant: str
    tier_value: int
    replicas: int
    memory_mib: Mapping[GpuKey, int]
    cores: int
    distinct: bool = False


@dataclass(frozen=True)
class Packing:
    counts: tuple[tuple[str, GpuKey, int], ...]  # (workload, GPU, replicas), sorted
    objectives: tuple[tuple[str, int], ...]  # level name → optimum, in level order
    optimal: bool

    def served(self, name: str) -> int:
        return sum(c for w, _, c in self.counts if w == name)

    def gpus_used(self) -> int:
        return len({g for _, g, c in self.counts if c})


def level_names(items: Sequence[ShareItem], guarantees: Mapping[str, int]) -> list[str]:
    names = ["guarantees"] if any(guarantees.values()) else []
    names += [f"served-{v}" for v in sorted({i.tier_value for i in items}, reverse=True)]
    return [*names, "gpus", "disruption"]


def evaluate(
    counts: Mapping[tuple[str, GpuKey], int],
    items: Sequence[ShareItem],
    guarantees: Mapping[str, int],
    current: Mapping[tuple[str, GpuKey], int],
) -> dict[str, int]:
    """The level values of a placement (used by the exhaustive check and the baselines)."""
    served = {i.name: sum(c for (w, _), c in counts.items() if w == i.name) for i in items}
    out: dict[str, int] = {}
    if any(guarantees.values()):
        per_tenant: dict[str, int] = {}
        for i in items:
            per_tenant[i.tenant] = per_tenant.get(i.tenant, 0) + served[i.name]
        out["guarantees"] = sum(min(per_tenant.get(t, 0), g) for t, g in guarantees.items())
    for v in sorted({i.tier_value for i in items}, reverse=True):
        out[f"served-{v}"] = sum(served[i.name] for i in items if i.tier_value == v)
    out["gpus"] = len({g for (_, g), c in counts.items() if c})
    out["disruption"] = sum(max(0, c - counts.get(k, 0)) for k, c in current.items())
    return out


def fits(
    counts: Mapping[tuple[str, GpuKey], int], gpus: Sequence[GpuCap], items: Sequence[ShareItem]
) -> bool:
    by_name = {i.name: i for i in items}
    for g in gpus:
        mem = cores = slots = 0
        for (w, k), c in counts.items():
            if k != g.key or not c:
                continue
            item = by_name[w]
            if k not in item.memory_mib or (item.distinct and c > 1):
                return False
            mem += c * item.memory_mib[k]
            cores += c * item.cores
            slots += c
        if mem > g.memory_mib or cores > g.cores or slots > g.slots:
            return False
    return all(sum(c for (w, _), c in counts.items() if w == i.name) <= i.replicas for i in items)


class _PackModel:
    """The integer program of one cluster's packing, built in the order HiGHS gets its columns and rows.

    The order can be part of the answer: HiGHS's search, and so which of several equal optima it
    returns, may depend on the order of columns and rows; each step adds them in a fixed order
    (GPUs, then workloads × GPUs, then per-GPU capacity rows, …), called in the order :func:`pack` uses.
    """

    def __init__(self, gpus: Sequence[GpuCap], items: Sequence[ShareItem]) -> None:
        self.gpus = gpus
        self.items = items
        self.m = Milp()
        self.x: dict[tuple[str, GpuKey], int] = {}
        self.used: dict[GpuKey, int] = {}

    def add_placements(self) -> None:
        """One ``used`` column per GPU, then one ``x`` column per (workload, GPU) that can hold a
        share, each tied to its GPU's ``used`` (no share on an unused GPU)."""
        m = self.m
        for g in self.gpus:
            self.used[g.key] = m.var(f"used[{g.key}]", 0, 1)
        for i in self.items:
            for g in self.gpus:
                cap = _share_cap(i, g)
                if cap <= 0:
                    continue
                col = m.var(f"x[{i.name},{g.key}]", 0, cap)
                self.x[(i.name, g.key)] = col
                m.row({col: 1, self.used[g.key]: -cap}, ub=0)

    def add_capacities(self) -> None:
        """Memory, cores and slots of each GPU, and each workload's replica count."""
        m, x, used = self.m, self.x, self.used
        for g in self.gpus:
            on = [(i, x[(i.name, g.key)]) for i in self.items if (i.name, g.key) in x]
            # capacities only on a used GPU: the same integer points, a much tighter LP relaxation
            m.row({**{c: i.memory_mib[g.key] for i, c in on}, used[g.key]: -g.memory_mib}, ub=0)
            m.row({**{c: i.cores for i, c in on}, used[g.key]: -g.cores}, ub=0)
            m.row({**{c: 1 for _, c in on}, used[g.key]: -g.slots}, ub=0)
            m.row({used[g.key]: 1, **{c: -1 for _, c in on}}, ub=0)  # used only when it carries a share
        for i in self.items:
            m.row({c: 1 for (w, _), c in x.items() if w == i.name}, ub=i.replicas)

    def order_identical_gpus(self) -> None:
        """Identical GPUs of a pool (same capacity, same allowed items) are interchangeable: fill them
        in order, which cuts the symmetric branches (only when nothing is deployed: otherwise which
        GPU a share sits on matters to the disruption level)."""
        items, used = self.items, self.used
        for a, b in itertools.pairwise(self.gpus):
            same = (a.key[0], a.memory_mib, a.cores, a.slots) == (b.key[0], b.memory_mib, b.cores, b.slots)
            if same and all(i.memory_mib.get(a.key) == i.memory_mib.get(b.key) for i in items):
                self.m.row({used[a.key]: 1, used[b.key]: -1}, lb=0)

    def guarantee_level(self, guarantees: Mapping[str, int]) -> Level:
        """One column per guaranteed tenant, bounded by its guarantee and by the shares it is served."""
        reach: dict[int, int] = {}
        for tenant, amount in sorted(guarantees.items()):
            gcol = self.m.var(f"guarantee[{tenant}]", 0, amount)
            tenant_cols = {c: -1 for (w, _), c in self.x.items() if _tenant(self.items, w) == tenant}
            self.m.row({gcol: 1, **tenant_cols}, ub=0)
            reach[gcol] = 1
        return Level("guarantees", "max", reach)

    def served_levels(self) -> list[Level]:
        """One level per priority tier, highest first: the replicas of that tier served."""
        levels: list[Level] = []
        for v in sorted({i.tier_value for i in self.items}, reverse=True):
            names = {i.name for i in self.items if i.tier_value == v}
            levels.append(Level(f"served-{v}", "max", {c: 1 for (w, _), c in self.x.items() if w in names}))
        return levels

    def disruption_level(self, current: Mapping[tuple[str, GpuKey], int]) -> Level:
        """One column per deployed (workload, GPU): the replicas that leave it."""
        moved: dict[int, int] = {}
        for (w, k), c in sorted(current.items()):
            d = self.m.var(f"moved[{w},{k}]", 0, c)
            if (w, k) in self.x:
                self.m.row({d: 1, self.x[(w, k)]: 1}, lb=c)
            else:
                self.m.row({d: 1}, lb=c)
            moved[d] = 1
        return Level("disruption", "min", moved)


def _share_cap(i: ShareItem, g: GpuCap) -> int:
    """How many replicas of ``i`` GPU ``g`` can hold on its own (0: none, or ``i`` may not use it):
    the bound of the ``x`` column, and the big-M that ties it to ``used``."""
    per = i.memory_mib.get(g.key)
    if per is None or per > g.memory_mib or i.cores > g.cores:
        return 0
    cap = min(
        i.replicas,
        g.slots,
        g.memory_mib // per if per else g.slots,
        g.cores // i.cores if i.cores else g.slots,
    )
    return min(cap, 1) if i.distinct else cap


def pack(
    gpus: Sequence[GpuCap],
    items: Sequence[ShareItem],
    guarantees: Mapping[str, int] | None = None,
    current: Mapping[tuple[str, GpuKey], int] | None = None,
    time_limit: float = 30.0,
) -> Packing | None:
    """The lexicographically best placement; ``None`` when HiGHS found no point (time limit)."""
    guarantees = {t: g for t, g in (guarantees or {}).items() if g}
    current = {k: c for k, c in (current or {}).items() if c}
    model = _PackModel(gpus, items)
    model.add_placements()
    model.add_capacities()
    if not current:
        model.order_identical_gpus()
    levels = [model.guarantee_level(guarantees)] if guarantees else []
    levels += model.served_levels()
    levels.append(Level("gpus", "min", dict.fromkeys(model.used.values(), 1)))
    levels.append(model.disruption_level(current))
    result = model.m.solve(levels, time_limit=time_limit)
    if result is None:
        return None
    x = model.x
    counts = tuple(
        sorted((w, k, round(result.values[c])) for (w, k), c in x.items() if round(result.values[c]))
    )
    placed = {(w, k): c for w, k, c in counts}
    objectives = evaluate(placed, items, guarantees, current)
    return Packing(
        counts=counts,
        objectives=tuple((name, objectives[name]) for name in level_names(items, guarantees)),
        optimal=result.optimal,
    )


def _tenant(items: Sequence[ShareItem], name: str) -> str:
    return next(i.tenant for i in items if i.name == name)


def first_fit_decreasing(gpus: Sequence[GpuCap], items: Sequence[ShareItem]) -> dict[tuple[str, GpuKey], int]:
    """Baseline: replicas by tier then size (memory share of the GPU, then cores) descending, each on
    the first GPU it fits."""
    free = {g.key: [g.memory_mib, g.cores, g.slots] for g in gpus}
    order = sorted(
        items,
        key=lambda i: (-i.tier_value, -max(i.memory_mib.values(), default=0), -i.cores, i.name),
    )
    counts: dict[tuple[str, GpuKey], int] = {}
    for i in order:
        for _ in range(i.replicas):
            for g in gpus:
                per = i.memory_mib.get(g.key)
                f = free[g.key]
                if per is None or per > f[0] or i.cores > f[1] or f[2] < 1:
                    continue
                if i.distinct and counts.get((i.name, g.key)):
                    continue
                f[0] -= per
                f[1] -= i.cores
                f[2] -= 1
                counts[(i.name, g.key)] = counts.get((i.name, g.key), 0) + 1
                break
    return counts


def whole_gpu_per_pod(gpus: Sequence[GpuCap], items: Sequence[ShareItem]) -> dict[tuple[str, GpuKey], int]:
    """Baseline: every replica gets a GPU of its own (no sharing), tiers first."""
    taken: set[GpuKey] = set()
    counts: dict[tuple[str, GpuKey], int] = {}
    for i in sorted(items, key=lambda i: (-i.tier_value, i.name)):
        for _ in range(i.replicas):
            g = next(
                (
                    g
                    for g in gpus
                    if g.key not in taken and i.memory_mib.get(g.key, g.memory_mib + 1) <= g.memory_mib
                ),
                None,
            )
            if g is None:
                break
            taken.add(g.key)
            counts[(i.name, g.key)] = 1
    return counts


def _gpus_of(pool: NodePool, catalog: Catalog) -> list[GpuCap]:
    model = catalog.get(pool.gpu_model)
    settings = pool.sharing.hami
    if model is None or settings is None:
        return []
    memory = settings.memory_mib(model.memory_gb)
    return [
        GpuCap((pool.name, node, i), memory, settings.cores(), settings.split_count)
        for node in pool.node_names
        for i in range(pool.gpus_per_node)
    ]


def _item(w: Workload, policy: Policy, gpus: Sequence[GpuCap]) -> ShareItem:
    assert w.need.hami is not None
    allowed = set(w.pools)
    try:
        tier = policy.partition.tier_value(w.priority_tier)
    except KeyError:
        tier = 0
    return ShareItem(
        name=w.name,
        tenant=w.tenant,
        tier_value=tier,
        replicas=w.replicas,
        memory_mib={
            g.key: w.need.hami.memory_on(g.memory_mib) for g in gpus if not allowed or g.key[0] in allowed
        },
        cores=w.need.hami.cores,
        distinct=w.need.hami.distinct_gpus,
    )


@dataclass(frozen=True)
class _ClusterShares:
    """What one cluster's packing is about: its HAMi pools and GPUs, the workloads that want shares
    there, the guarantees of their tenants, and the shares already deployed on GPUs that still exist."""

    cluster: Cluster
    pools: tuple[NodePool, ...]
    gpus: tuple[GpuCap, ...]
    workloads: tuple[Workload, ...]
    items: tuple[ShareItem, ...]
    guarantees: Mapping[str, int]
    placed: Mapping[tuple[str, GpuKey], int]


def _cluster_shares(
    policy: Policy,
    catalog: Catalog,
    cluster: Cluster,
    deployed: Sequence[tuple[tuple[str, str, str, int, str], int]],
) -> _ClusterShares | None:
    """The packing input of ``cluster``; ``None`` when it has no ``sharing: hami`` pool."""
    pools = [p for p in sorted(cluster.pools, key=lambda p: p.name) if p.sharing.mode == "hami"]
    if not pools:
        return None
    gpus = [g for p in pools for g in _gpus_of(p, catalog)]
    workloads = [
        w for w in policy.workloads if w.cluster == cluster.name and w.need.hami is not None and w.replicas
    ]
    items = [_item(w, policy, gpus) for w in workloads]
    guarantees = {
        t.name: t.guaranteed.hami_vgpus
        for t in policy.tenants
        if t.guaranteed.hami_vgpus and any(w.tenant == t.name for w in workloads)
    }
    placed = _still_deployed(cluster.name, gpus, workloads, deployed)
    return _ClusterShares(
        cluster, tuple(pools), tuple(gpus), tuple(workloads), tuple(items), guarantees, placed
    )


def _still_deployed(
    cluster: str,
    gpus: Sequence[GpuCap],
    workloads: Sequence[Workload],
    deployed: Sequence[tuple[tuple[str, str, str, int, str], int]],
) -> dict[tuple[str, GpuKey], int]:
    """The deployed shares of ``cluster`` that still matter: on a GPU the policy still has, of a
    workload that still wants HAMi shares there (the rest cannot stay where they are anyway)."""
    known = {g.key for g in gpus}
    names = {w.name for w in workloads}
    return {
        (w, (p, n, i)): c
        for (cl, p, n, i, w), c in deployed
        if cl == cluster and (p, n, i) in known and w in names
    }


def _pack_or_first_fit(c: _ClusterShares, time_limit_s: float) -> Packing:
    """The exact packing, or first-fit-decreasing (not optimal, no level values) when HiGHS found no
    point in time: a feasible placement is always written."""
    packing = pack(c.gpus, c.items, c.guarantees, c.placed, time_limit=time_limit_s)
    if packing is not None:
        return packing
    return Packing(
        counts=tuple(sorted((w, k, n) for (w, k), n in first_fit_decreasing(c.gpus, c.items).items())),
        objectives=(),
        optimal=False,
    )


def _packing_diagnostics(
    policy: Policy, c: _ClusterShares, packing: Packing, time_limit_s: float
) -> list[Diagnostic]:
    """MIGC231 (time limit hit), then MIGC230 per workload short of its replicas, then MIGC232 per
    tenant short of its guarantee."""
    cluster = c.cluster
    unmet_sev = Severity.ERROR if policy.partition.unmet_demand == "error" else Severity.WARNING
    diags: list[Diagnostic] = []
    if not packing.optimal:
        diags.append(
            at(
                "MIGC231",
                f"cluster {cluster.name}: the HAMi packing hit the {time_limit_s:g}s "
                "time limit; it is feasible but may not be optimal",
                cluster.span,
            )
        )
    served_by_tenant: dict[str, int] = {}
    for w in c.workloads:
        got = packing.served(w.name)
        served_by_tenant[w.tenant] = served_by_tenant.get(w.tenant, 0) + got
        if got < w.replicas:
            diags.append(
                at(
                    "MIGC230",
                    f"workload {w.name} (tenant {w.tenant}, tier {w.priority_tier}) gets "
                    f"{got} of {w.replicas} HAMi share(s) in cluster {cluster.name}",
                    w.span,
                    unmet_sev,
                )
            )
    for tenant, amount in sorted(c.guarantees.items()):
        if served_by_tenant.get(tenant, 0) < amount:
            diags.append(
                at(
                    "MIGC232",
                    f"tenant {tenant}: guaranteed {amount} HAMi share(s) in cluster "
                    f"{cluster.name}, but its workloads get {served_by_tenant.get(tenant, 0)}",
                    policy.tenant(tenant).span,
                    Severity.ERROR,
                )
            )
    return diags


def solve_hami(
    policy: Policy, catalog: Catalog, time_limit_s: float = 60.0, current: CurrentState | None = None
) -> tuple[tuple[HamiPoolResult, ...], tuple[Diagnostic, ...]]:
    """Pack every cluster's HAMi workloads onto its ``sharing: hami`` pools, one exact solve per cluster.

    ``current`` (the shares deployed, read back from the previous output's HamiPlan) drives the
    disruption level: among the best placements, the one that moves the fewest deployed replicas.
    """
    deployed = current.hami if current is not None else ()
    results: list[HamiPoolResult] = []
    diags: list[Diagnostic] = []
    for cluster in sorted(policy.clusters, key=lambda c: c.name):
        shares = _cluster_shares(policy, catalog, cluster, deployed)
        if shares is None:
            continue
        packing = _pack_or_first_fit(shares, time_limit_s)
        diags += _packing_diagnostics(policy, shares, packing, time_limit_s)
        by_name = {w.name: w for w in shares.workloads}
        for pool in shares.pools:
            results.append(_pool_result(cluster.name, pool, shares.gpus, packing, by_name))
    return tuple(results), tuple(diags)


def _pool_result(
    cluster: str, pool: NodePool, gpus: Sequence[GpuCap], packing: Packing, workloads: Mapping[str, Workload]
) -> HamiPoolResult:
    shares: dict[GpuKey, list[HamiShare]] = {}
    served: dict[str, int] = {}
    for name, key, count in packing.counts:
        if key[0] != pool.name:
            continue
        w = workloads[name]
        assert w.need.hami is not None
        cap = next(g for g in gpus if g.key == key)
        shares.setdefault(key, []).append(
            HamiShare(w.tenant, name, count, w.need.hami.memory_on(cap.memory_mib), w.need.hami.cores)
        )
        served[name] = served.get(name, 0) + count
    mine = [g for g in gpus if g.key[0] == pool.name]
    demand = tuple(
        ServedDemand(w.tenant, w.name, "vgpu", w.replicas, served.get(w.name, 0), w.priority_tier)
        for w in sorted(workloads.values(), key=lambda w: (w.tenant, w.name))
        if not w.pools or pool.name in w.pools
    )
    return HamiPoolResult(
        cluster=cluster,
        pool=pool.name,
        gpu_model=pool.gpu_model,
        gpus=tuple(
            HamiGpu(
                g.key[1],
                g.key[2],
                g.memory_mib,
                g.cores,
                g.slots,
                tuple(sorted(shares.get(g.key, []), key=lambda s: (s.tenant, s.workload))),
            )
            for g in sorted(mine, key=lambda g: g.key)
        ),
        demand=demand,
        optimal=packing.optimal,
        objectives=packing.objectives,
    )


def pod_resources(need: HamiNeed) -> dict[str, str]:
    """What each pod of a HAMi workload requests, as container limits (HAMi reads limits)."""
    out = {RES_GPU: "1"}
    if need.memory_mib:
        out[RES_MEM] = str(need.memory_mib)
    else:
        out[RES_MEM_PCT] = str(need.memory_percent)
    if need.cores:
        out[RES_CORES] = str(need.cores)
    return dict(sorted(out.items()))
