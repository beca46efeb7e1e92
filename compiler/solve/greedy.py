"""First-fit-decreasing fallback, used only when HiGHS fails or runs out of time (and by benchmarks).

Guarantees are reserved first, then demand by priority tier (highest first), larger instances
first; each instance goes into the first already-opened GPU of a pool whose layout still has room
for it (checked against the placement tables), else a new GPU. Whole-GPU replicas take the first
node with enough free GPUs. It ignores the current layout beyond what node assignment keeps, so
its pools are always marked ``optimal=False``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from compiler.catalog import Catalog
from compiler.catalog.layouts import is_feasible
from compiler.model import WHOLE_GPU, Cluster, GpuLayout, NodeLayout, NodePool
from compiler.solve.demand import DemandItem, Guarantee, is_shared_pool, mig_model
from compiler.solve.milp import ClusterOutcome
from compiler.solve.plan_types import RESERVE, Pattern, PoolDecision

Layout = tuple[tuple[str, int], ...]  # a MIG layout as sorted (profile, count) pairs


class _PoolState:
    def __init__(self, pool: NodePool, catalog: Catalog) -> None:
        self.pool = pool
        self.model = mig_model(pool, catalog)
        gpn = pool.gpus_per_node
        nodes = len(pool.node_names)
        self.reserve_nodes = min(pool.reserve_whole_nodes, nodes)
        self.node_free = [gpn] * (nodes - self.reserve_nodes)
        # reserved whole GPUs come off the last nodes so multi-GPU replicas keep the first ones
        left = pool.reserve_whole_gpus
        for j in range(len(self.node_free) - 1, -1, -1):
            take = min(left, self.node_free[j])
            self.node_free[j] -= take
            left -= take
        self.first_free = 0  # no node before this one has a free GPU
        self.open: Counter[Layout] = Counter()  # MIG layouts opened -> GPUs
        self.fits: dict[tuple[Layout, str], Layout | None] = {}
        self.order: list[Layout] | None = None  # sorted(self.open), while its keys are unchanged
        self.node_jobs: dict[int, list[int]] = {}
        self.singles = 0
        self.slots = 0
        self.reserved: Counter[tuple[str, str]] = Counter()
        self.held: Counter[tuple[str, str]] = Counter()  # reservation units still idle

    def take_gpus(self, k: int) -> int | None:
        free = self.node_free
        while self.first_free < len(free) and not free[self.first_free]:
            self.first_free += 1  # free GPUs only ever shrink: nodes before this stay full
        for j in range(self.first_free, len(free)):
            if free[j] >= k:
                free[j] -= k
                return j
        return None

    def grown(self, layout: Layout, profile: str) -> Layout | None:
        """``layout`` with one more ``profile`` instance, or None if that does not fit the GPU.

        Memoised: a fleet opens few distinct layouts, but places an instance many times.
        """
        key = (layout, profile)
        if key not in self.fits:
            assert self.model is not None
            counts = dict(layout)
            counts[profile] = counts.get(profile, 0) + 1
            self.fits[key] = tuple(sorted(counts.items())) if is_feasible(self.model, counts) else None
        return self.fits[key]

    def add_instance(self, profile: str) -> bool:
        assert self.model is not None
        for layout in self.open_order():
            bigger = self.grown(layout, profile)
            if bigger is not None:
                self.open[layout] -= 1
                if not self.open[layout]:
                    del self.open[layout]
                    self.order = None
                if bigger not in self.open:
                    self.order = None
                self.open[bigger] += 1
                return True
        if self.grown((), profile) is None or self.take_gpus(1) is None:
            return False
        if ((profile, 1),) not in self.open:
            self.order = None
        self.open[((profile, 1),)] += 1
        return True

    def open_order(self) -> list[Layout]:
        """The opened layouts in sorted order, re-sorted only when one appears or disappears."""
        if self.order is None:
            self.order = sorted(self.open)
        return self.order

    def shared_capacity(self) -> int:
        return sum(self.node_free) * self.pool.sharing.replicas

    def place(self, kind: str, resource: str, size: int) -> bool:
        if kind == "shared":
            if self.slots + size > self.shared_capacity():
                return False
            self.slots += size
            return True
        if resource == WHOLE_GPU:
            j = self.take_gpus(size)
            if j is None:
                return False
            if size >= 2:
                self.node_jobs.setdefault(j, []).append(size)
            else:
                self.singles += 1
            return True
        if self.model is None:
            return False
        return self.add_instance(resource)


def greedy_cluster(
    cluster: Cluster,
    catalog: Catalog,
    items: Sequence[DemandItem],
    guarantees: Sequence[Guarantee],
    current: Mapping[tuple[str, str], NodeLayout],
) -> ClusterOutcome:
    del current  # the heuristic does not try to minimise change
    state = {p.name: _PoolState(p, catalog) for p in sorted(cluster.pools, key=lambda p: p.name)}
    shortfall = _reserve_guarantees(state, guarantees)
    served = _serve_demand(state, items)
    decisions = {name: _decision(st, served[name]) for name, st in state.items()}
    return ClusterOutcome(decisions=decisions, shortfall=shortfall, result=None)


def _reserve_guarantees(
    state: Mapping[str, _PoolState], guarantees: Sequence[Guarantee]
) -> dict[tuple[str, str], int]:
    """Step 1: each guarantee's units placed and held idle, one at a time, in the first of its pools
    with room; (tenant, resource) → the units that found none."""
    shortfall: dict[tuple[str, str], int] = {}
    for g in guarantees:
        got = 0
        for _ in range(g.amount):
            if not any(
                state[name].place("whole" if g.resource == WHOLE_GPU else "mig", g.resource, 1)
                and _hold(state[name], g)
                for name in g.pools
            ):
                break
            got += 1
        if got < g.amount:
            shortfall[(g.tenant, g.resource)] = g.amount - got
    return shortfall


def _serve_demand(
    state: Mapping[str, _PoolState], items: Sequence[DemandItem]
) -> dict[str, Counter[tuple[int, str]]]:
    """Step 2: the demand by tier (highest first), larger instances first, each replica into the first
    of its options with room (a held guarantee unit first); pool → (item, resource) → replicas."""
    served: dict[str, Counter[tuple[int, str]]] = {name: Counter() for name in state}

    def size_key(i: int) -> tuple[int, int, int]:
        item = items[i]
        biggest = 0
        for opt in item.options:
            st = state[opt.pool]
            prof = st.model.profile(opt.resource) if st.model is not None else None
            biggest = max(biggest, prof.memory_slices if prof is not None else 8 * item.size)
        return (-item.tier_value, -biggest, i)

    for i in sorted(range(len(items)), key=size_key):
        item = items[i]
        opts = sorted(item.options, key=lambda o: (o.rank, o.pool, o.resource))
        for _ in range(item.replicas):
            pool = next((o for o in opts if _place_replica(state[o.pool], item, o.resource)), None)
            if pool is None:
                break
            served[pool.pool][(i, pool.resource)] += 1
    return served


def _place_replica(st: _PoolState, item: DemandItem, resource: str) -> bool:
    """One replica of ``item`` as ``resource`` in ``st``'s pool: on a held guarantee unit of its tenant
    (single GPUs or instances: only 1-unit replicas may use them), else on free room."""
    key = (item.tenant, resource)
    if item.kind != "shared" and item.size == 1 and st.held[key] >= 1:
        st.held[key] -= 1
        return True
    return st.place(item.kind, resource, item.size)


def _decision(st: _PoolState, served: Counter[tuple[int, str]]) -> PoolDecision:
    """Step 3: what a pool ended with: its MIG layouts, its multi-GPU node patterns and reserve, the
    GPUs used (for a shared pool, its slots over the replicas per GPU), the held guarantee units."""
    layouts: Counter[GpuLayout] = Counter()
    for lay, count in st.open.items():
        layouts[GpuLayout(mig_enabled=True, profiles=lay)] += count
    patterns: Counter[Pattern] = Counter()
    for jobs in st.node_jobs.values():
        patterns[tuple(sorted(jobs, reverse=True))] += 1
    if st.reserve_nodes:
        patterns[RESERVE] = st.reserve_nodes
    multi = sum(sum(p) * c for p, c in patterns.items() if p != RESERVE)
    used = sum(layouts.values()) + st.singles + multi
    if is_shared_pool(st.pool):
        used = math.ceil(st.slots / max(1, st.pool.sharing.replicas))
    return PoolDecision(
        pool=st.pool,
        model=st.model,
        layouts=dict(layouts),
        patterns=dict(patterns),
        kept={},
        served=dict(served),
        reserved={k: v for k, v in sorted(st.held.items()) if v > 0},
        gpus_used=used,
        optimal=False,
    )


def _hold(st: _PoolState, g: Guarantee) -> bool:
    st.held[(g.tenant, g.resource)] += 1
    return True
