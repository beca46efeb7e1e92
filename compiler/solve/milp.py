"""The exact pool-level model of one cluster: how many GPUs of each pool carry each MIG layout.

Cutting-stock style: one integer column per (pool, valid layout) counts GPUs; demand variables say
which pool and profile serves each demand item; node patterns place multi-GPU replicas (``k``
whole GPUs on one node) and reserved whole nodes exactly; "kept" variables count current nodes
left untouched, so the number of nodes touched is optimised here, jointly with the layout choice.

Levels, strictly lexicographic (each optimum is fixed before the next level runs):

0. guarantee shortfall (minimise; non-zero means an infeasible guarantee, reported as an error);
1. per priority tier, highest first: fairness, then replicas served (maximise). Fairness is one
   rule across tenants and inside one: the served fractions (replicas served / asked) of the
   tier's workloads are maximised leximin -- the smallest as large as possible, then the next --
   written as counts over thresholds (``add_fairness``), so a workload of a large profile is not
   left at 0 to serve a replica more; only then the tier's replicas. A tier that can be served in
   full needs no rule: it is solved first without one (its served level stops the run when it
   falls short, and the component is built again with the tier's fairness levels). Inside one
   demand item, ``demand.split_served`` gives the same split back per workload (the leximin
   split of the item's total). Then, per tier served in full, the workloads with a replica (moot);
2. GPUs used: carrying an instance, a whole-GPU replica or a guarantee reservation (minimise);
3. nodes left unchanged relative to ``current`` (maximise), then 4. GPUs changed, then
5. instances displaced (minimise) -- only when a current state is known;
6. preference penalty: rank of the chosen profile in a workload's preference list (minimise);
   levels 2, 3-5 and 6 are the goals ``gpus``, ``disruption`` and ``preference``, listed here in
   that order; the default order puts ``disruption`` first (``compiler.model.OBJECTIVES``), and
   ``PartitionPolicy.spec.objective`` may name another;
   then burst room: instances of profiles tenants may burst to, up to the largest such limit per
   profile, on GPUs that are used anyway (maximise; per group of pools solved together);
7. fill: compute slices carried by MIG GPUs (without ``+me``), so spare room is offered as
   instances (maximise).

Once proven, the levels run again with the chosen layouts fixed and no deployed state, so which
pool serves how much of a workload depends on the policy and the layouts alone
(``_split_from_layouts``): ``compile`` then ``compile --check`` is a fixpoint with one solve.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TypeVar

from compiler.catalog import Catalog, GpuModel
from compiler.catalog.layouts import enumerate_layouts, is_feasible, layout_compute_slices
from compiler.model import (
    OBJECTIVES,
    WHOLE_GPU,
    Cluster,
    GpuLayout,
    NodeLayout,
    NodePool,
    Objective,
    Share,
    objective_order,
)
from compiler.solve.demand import DemandItem, Guarantee, is_shared_pool, mig_model, node_labels
from compiler.solve.lexmilp import Level, LexResult, Milp
from compiler.solve.plan_types import RESERVE, Pattern, PoolDecision, pattern_size

_K = TypeVar("_K")


@dataclass(frozen=True)
class _Fixed:
    """What a pool's split is derived from: its chosen layouts, node patterns and shared GPUs."""

    layouts: dict[GpuLayout, int]
    patterns: dict[Pattern, int]
    shared_gpus: int
    nodes: dict[str, dict[GpuLayout, int]]  # per-node layouts of pools that serve a spread workload


@dataclass
class ClusterOutcome:
    decisions: dict[str, PoolDecision]
    shortfall: dict[tuple[str, str], int]  # (tenant, resource) -> guaranteed amount that cannot be held
    result: LexResult | None
    # pools of components for which HiGHS found no point (time ran out first): left to the caller
    unsolved: tuple[str, ...] = ()
    # priority tiers (values) whose replicas could not all be served and were shared by the
    # leximin rule (module doc, 1); a tier served in full needs no rule
    fair_tiers: frozenset[int] = field(default_factory=frozenset)
    # the point by column name, kept only where ``fair_tiers`` is not empty: the split pass starts
    # from it (``_split_from_layouts``)
    point: dict[str, float] = field(default_factory=dict)


def job_patterns(sizes: Sequence[int], gpus_per_node: int) -> list[Pattern]:
    """Every non-empty multiset of the given multi-GPU sizes fitting one node, sorted."""
    sizes = sorted(set(sizes), reverse=True)
    out: list[Pattern] = []

    def rec(i: int, left: int, acc: list[int]) -> None:
        if i == len(sizes):
            if acc:
                out.append(tuple(acc))
            return
        k = sizes[i]
        rec(i + 1, left, acc)
        count = 1
        while count * k <= left:
            rec(i + 1, left - count * k, acc + [k] * count)
            count += 1

    rec(0, gpus_per_node, [])
    return sorted(out)


def _columns(model: GpuModel, allowed: set[str], current_layouts: set[GpuLayout]) -> list[GpuLayout]:
    """Maximal layouts made of the profiles this pool may carry, plus the deployed ones.

    Only maximal layouts (no allowed instance can be added) are needed: served demand is bounded by
    capacity, not equal to it, so a smaller layout never serves more with fewer GPUs, and idle
    instances are offered as burst capacity anyway. Deployed layouts are added so they can be kept.
    This keeps the integer program small (about 20 columns instead of 77 on a 7-slice GPU).
    """
    usable = [
        lay
        for lay in enumerate_layouts(model, allow_media_extensions=True)
        if all(name in allowed for name, _ in lay.profiles)
    ]
    present = {lay.profiles for lay in usable}

    def grows(lay: GpuLayout, name: str) -> bool:
        counts = lay.counts()
        counts[name] = counts.get(name, 0) + 1
        return GpuLayout.of(counts).profiles in present

    cols = {lay for lay in usable if not any(grows(lay, name) for name in allowed)}
    for lay in current_layouts:
        if lay.mig_enabled and is_feasible(model, lay.counts()):
            cols.add(lay)
    return sorted(cols)


class _PoolVars:
    def __init__(self, pool: NodePool, model: GpuModel | None) -> None:
        self.pool = pool
        self.model = model
        self.columns: list[GpuLayout] = []
        self.n: dict[GpuLayout, int] = {}
        self.patterns: list[Pattern] = []
        self.y: dict[Pattern, int] = {}
        self.kept: dict[tuple[NodeLayout, Pattern], int] = {}
        self.shared_used: int | None = None
        self.x: dict[tuple[int, str], int] = {}  # (item, resource) -> var
        self.r: dict[tuple[str, str], int] = {}  # (tenant, resource) -> var
        self.used: dict[int, int] = {}  # GPUs-used expression
        self.change: dict[int, int] = {}  # GPUs-changed expression
        self.displaced: dict[int, int] = {}  # instances-displaced expression
        # pools serving a workload with a per-node spread: one layout count per node and layout
        self.per_node = False
        self.nn: dict[tuple[str, GpuLayout], int] = {}
        self.xn: dict[tuple[int, str, str], int] = {}  # (item, node, resource) -> replicas there
        self.node_kept: dict[str, int] = {}  # node -> 1 when left exactly as deployed


def solve_cluster(
    cluster: Cluster,
    catalog: Catalog,
    items: Sequence[DemandItem],
    guarantees: Sequence[Guarantee],
    current: Mapping[tuple[str, str], NodeLayout],
    time_limit: float,
    burst: Mapping[str, int] | None = None,
    objective: Sequence[Objective] = OBJECTIVES,
    *,
    metrics_only: bool = False,
) -> ClusterOutcome:
    """Solve the cluster. ``current`` maps (pool, node) to its deployed layout; ``burst`` maps a
    profile to the largest burst limit a tenant of the cluster has for it (spare room goes there).

    ``metrics_only`` stops each component after the last of the ``gpus`` and ``disruption`` goals
    (no later preference, burst or fill level) and skips the split pass: the layouts, patterns
    and kept nodes are then a point that is optimal on every level up to there, so GPUs used,
    nodes and GPUs changed and replicas unmet are those of the full solve, while the rest of the
    decision (which profiles serve what, spare room) is not the one ``compile`` would write.

    Pools that share no demand item (no workload may use both) and no guarantee are independent,
    and every level's objective is a sum over pools, so the lexicographic optimum of the cluster is
    the union of the optima of these components: each is solved as its own, much smaller, model.
    """
    started = time.perf_counter()
    pools = sorted(cluster.pools, key=lambda p: p.name)
    parent = {p.name: p.name for p in pools}

    def find(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(names: Sequence[str]) -> None:
        roots = sorted({find(n) for n in names})
        for r in roots[1:]:
            parent[r] = roots[0]

    for item in items:
        union([o.pool for o in item.options])
    for g in guarantees:
        union(list(g.pools))
    components: dict[str, list[NodePool]] = {}
    for p in pools:
        components.setdefault(find(p.name), []).append(p)
    outcome = ClusterOutcome({}, {}, None)
    unsolved: list[str] = []
    for root in sorted(components):
        members = components[root]
        names = {p.name for p in members}
        ids = [i for i, item in enumerate(items) if item.options and item.options[0].pool in names]
        gs = [g for g in guarantees if g.pools and g.pools[0] in names]
        deadline = started + time_limit
        part = _solve_component(
            members,
            catalog,
            items,
            ids,
            gs,
            current,
            deadline,
            burst or {},
            objective=objective,
            metrics_only=metrics_only,
        )
        if part.result is None:
            unsolved.extend(sorted(names))
            continue
        if part.result.optimal and not metrics_only:
            _split_from_layouts(part, members, catalog, items, ids, gs, deadline, burst or {}, objective)
        outcome.decisions.update(part.decisions)
        outcome.shortfall.update(part.shortfall)
        outcome.fair_tiers |= part.fair_tiers
        _merge_result(outcome, part.result)
    if outcome.result is None:  # no pools, or no component solved: nothing proven
        outcome.result = LexResult(values=[], optimal=not unsolved)
    outcome.unsolved = tuple(unsolved)
    outcome.result.seconds = time.perf_counter() - started
    return outcome


def _split_from_layouts(
    part: ClusterOutcome,
    pools: Sequence[NodePool],
    catalog: Catalog,
    items: Sequence[DemandItem],
    item_ids: Sequence[int],
    guarantees: Sequence[Guarantee],
    deadline: float,
    burst: Mapping[str, int],
    objective: Sequence[Objective],
) -> None:
    """Re-derive which pool serves (and holds) what from the chosen layouts alone.

    With the layouts chosen, the split of a workload across equally good pools is a tie the full
    model breaks relative to the deployed state, so a fresh compile and the ``--check`` after it
    (which starts from the output just written) could split differently over the same layouts.
    Solving the levels again with every layout, node pattern and shared-pool size fixed and no
    deployed state gives a split that depends on the policy and the layouts only; it is as good
    on every level (the first answer is one of its points). If that pass does not prove every
    level, the first answer stays.
    """
    fixed = _ComponentModel.fixed_from(part.decisions)
    known: dict[str, float] = {}
    if part.fair_tiers and part.result is not None:
        # with layouts fixed and no deployed state, the levels up to the last tier's served one
        # have the same optima (this pass's model only narrows the first; the first's point is one
        # of its points): the first's point, handed over as a start, proves them without HiGHS
        for name, value in part.result.objectives.items():
            if name == "guarantees" or name.startswith(("fair:", "served:")):
                known[name] = value
    again = _solve_component(
        pools,
        catalog,
        items,
        item_ids,
        guarantees,
        {},
        deadline,
        burst,
        fixed,
        objective,
        fair_tiers=part.fair_tiers,
        start=part.point or None,
        known=known,
    )
    if again.result is None or not again.result.optimal:
        return
    for name, dec in part.decisions.items():
        other = again.decisions[name]
        dec.served = other.served
        dec.reserved = other.reserved
        dec.gpus_used = other.gpus_used
        dec.spread_served = other.spread_served
    part.shortfall = again.shortfall


def _merge_result(outcome: ClusterOutcome, part: LexResult) -> None:
    """Fold one component's result into the cluster's: optimal only if every component is; the
    first unproven level (and its cause) is the one reported."""
    if outcome.result is None:
        outcome.result = part
        return
    outcome.result.objectives.update(part.objectives)
    outcome.result.highs_runs += part.highs_runs
    if not part.optimal:
        outcome.result.unproven(part.failed_level, part.cause)


def _solve_component(
    pools: Sequence[NodePool],
    catalog: Catalog,
    items: Sequence[DemandItem],
    item_ids: Sequence[int],
    guarantees: Sequence[Guarantee],
    current: Mapping[tuple[str, str], NodeLayout],
    deadline: float,
    burst: Mapping[str, int],
    fixed: Mapping[str, _Fixed] | None = None,
    objective: Sequence[Objective] = OBJECTIVES,
    metrics_only: bool = False,
    fair_tiers: frozenset[int] = frozenset(),
    start: Mapping[str, float] | None = None,
    known: Mapping[str, float] | None = None,
) -> ClusterOutcome:
    """Build the component's integer program step by step, solve its levels, read the decisions.

    ``fixed``: per pool, layouts, node patterns and shared GPUs to hold (see ``_split_from_layouts``).
    ``metrics_only``: stop after the last of the ``gpus`` and ``disruption`` levels (see ``solve_cluster``).
    ``fair_tiers``: tiers known to be short, whose fairness levels are built from the start.
    ``start`` and ``known``: a point by column name and level optima it reaches (split pass only).

    A tier of several workloads outside ``fair_tiers`` is solved first as if it could be served
    in full (its served level stops the run when it cannot, ``Level.stop_unless_bound``); the
    model is then built again with that tier's fairness levels. A fleet whose tiers are all
    served in full so pays nothing for the rule; a short tier costs one more build per tier.
    """
    spent = 0
    while True:
        out = _solve_once(
            pools,
            catalog,
            items,
            item_ids,
            guarantees,
            current,
            deadline,
            burst,
            fixed,
            objective,
            metrics_only,
            fair_tiers,
            start,
            known or {},
        )
        if out.result is not None:
            spent += out.result.highs_runs
            out.result.highs_runs = spent
        if out.result is None or not out.result.stopped:
            return out
        fair_tiers = fair_tiers | {int(out.result.stopped.removeprefix("served:"))}


def _solve_once(
    pools: Sequence[NodePool],
    catalog: Catalog,
    items: Sequence[DemandItem],
    item_ids: Sequence[int],
    guarantees: Sequence[Guarantee],
    current: Mapping[tuple[str, str], NodeLayout],
    deadline: float,
    burst: Mapping[str, int],
    fixed: Mapping[str, _Fixed] | None,
    objective: Sequence[Objective],
    metrics_only: bool,
    fair_tiers: frozenset[int],
    start: Mapping[str, float] | None,
    known: Mapping[str, float],
) -> ClusterOutcome:
    """One build and solve of the component (see ``_solve_component``)."""
    b = _ComponentModel(catalog, items, guarantees, current, burst, fixed or {})
    b.add_demand(item_ids, pools)
    b.add_shortfall()
    for pool in pools:
        b.domain_of.update({(pool.name, k): val for k, val in node_labels(pool).items()})
        b.add_pool(pool)
    b.add_spread()
    b.close_guarantees()
    burst_vars = b.add_burst()
    b.add_fairness(item_ids, fair_tiers)
    levels = _levels(
        items,
        item_ids,
        b.pv,
        b.shortfall_vars,
        burst_vars,
        b.fair,
        b.covered,
        b.covered_by,
        objective,
        metrics_only=metrics_only,
    )
    if known:
        levels = [dataclasses.replace(lv, bound=known[lv.name]) if lv.name in known else lv for lv in levels]
    result = b.m.solve(levels, time_limit=deadline - time.perf_counter(), start=start)
    if result is None:
        return ClusterOutcome({}, {}, None)
    point = dict(zip(b.m.names, result.values, strict=True)) if fair_tiers else {}
    return ClusterOutcome(
        b.decisions(result), b.shortfall(result), result, fair_tiers=fair_tiers, point=point
    )


class _ComponentModel:
    """The integer program of one component of pools, built by named steps (see the module doc).

    The order in which variables and rows are created is part of the answer (HiGHS breaks ties by
    it), so the steps run in a fixed order: demand, shortfall, then per pool its reservations,
    columns, node patterns and capacity rows, then the guarantee rows and burst room.
    """

    def __init__(
        self,
        catalog: Catalog,
        items: Sequence[DemandItem],
        guarantees: Sequence[Guarantee],
        current: Mapping[tuple[str, str], NodeLayout],
        burst: Mapping[str, int],
        fixed: Mapping[str, _Fixed],
    ) -> None:
        self.m = Milp()
        self.burst = burst
        self.fixed = fixed
        self.catalog = catalog
        self.items = items
        self.guarantees = guarantees
        self.current = current
        self.pv: dict[str, _PoolVars] = {}
        self.per_pool_x: dict[str, list[tuple[int, str, int]]] = {}  # pool -> (item, resource, var)
        self.shortfall_vars: dict[tuple[str, str], int] = {}
        self.covered: dict[int, int] = {}  # item -> workloads of it served at least one replica
        self.covered_by: dict[int, tuple[int, ...]] = {}  # covered var -> the item's x vars
        # tier -> its fairness levels' (threshold, objective, raise_to) (see ``add_fairness``)
        self.fair: dict[int, list[tuple[Fraction, dict[int, int], dict[int, tuple[list[int], int]]]]] = {}
        self.guarantee_rows: dict[tuple[str, str], dict[int, float]] = {}
        self.served_vars: dict[int, list[int]] = {}  # item -> its x vars (every option)
        # item -> (pool, node, that node's xn vars) for items with a per-node spread
        self.node_served: dict[int, list[tuple[str, str, dict[int, float]]]] = {}
        self.node_served_z: dict[int, dict[int, float]] = {}
        self.domain_of: dict[tuple[str, str], str] = {}  # (pool, label key) -> its value

    @staticmethod
    def fixed_from(decisions: Mapping[str, PoolDecision]) -> dict[str, _Fixed]:
        return {
            name: _Fixed(
                dict(d.layouts),
                dict(d.patterns),
                int(d.extra.get("shared_gpus_used", 0)),
                {node: dict(lays) for node, lays in d.node_layouts.items()},
            )
            for name, d in decisions.items()
        }

    # -- demand and guarantees ---------------------------------------------------------------

    def add_demand(self, item_ids: Sequence[int], pools: Sequence[NodePool]) -> None:
        """x[item, pool, resource]: replicas of an item served by one option; at most its replicas.

        covered[item] <= served replicas, at most the item's number of workloads: how many of its
        workloads get at least one replica (the fair split gives the first replicas to distinct
        workloads), for the per-tier coverage level -- only in tiers with several workloads. In a
        tier served in full it is moot; in a short tier the fairness levels (``add_fairness``),
        whose first threshold counts the workloads with a replica, take its place.
        """
        self.per_pool_x = {p.name: [] for p in pools}
        workloads_per_tier = Counter[int]()
        for i in item_ids:
            if self.items[i].options:
                workloads_per_tier[self.items[i].tier_value] += len(self.items[i].workloads)
        for i in item_ids:
            item = self.items[i]
            xs = []
            for opt in item.options:
                var = self.m.var(f"x[{i},{opt.pool},{opt.resource}]", 0, item.replicas)
                self.per_pool_x[opt.pool].append((i, opt.resource, var))
                xs.append(var)
            if item.options:
                self.served_vars[i] = xs
                self.m.row(dict.fromkeys(xs, 1), ub=item.replicas)
                if workloads_per_tier[item.tier_value] > 1:
                    z = self.m.var(f"covered[{i}]", 0, min(len(item.workloads), item.replicas))
                    self.covered[i] = z
                    self.covered_by[z] = tuple(xs)
                    self.m.row({z: 1, **dict.fromkeys(xs, -1)}, ub=0)

    def add_shortfall(self) -> None:
        """short[tenant, resource]: the part of a guarantee that cannot be held (level 0)."""
        for g in self.guarantees:
            s = self.m.var(f"short[{g.tenant},{g.resource}]", 0, g.amount)
            self.shortfall_vars[(g.tenant, g.resource)] = s
            self.guarantee_rows[(g.tenant, g.resource)] = {s: 1}

    def close_guarantees(self) -> None:
        """shortfall + reservations + the tenant's own served replicas >= guaranteed amount."""
        for key, row in self.guarantee_rows.items():
            amount = next(g.amount for g in self.guarantees if (g.tenant, g.resource) == key)
            self.m.row(row, lb=amount)

    def add_burst(self) -> dict[int, int]:
        """burst[profile] <= instances of it the chosen layouts offer, up to the largest limit."""
        burst_vars: dict[int, int] = {}
        for q, limit in sorted(self.burst.items()):
            offer = {
                v.n[lay]: -lay.counts()[q]
                for v in self.pv.values()
                for lay in v.columns
                if lay.counts().get(q, 0)
            }
            if offer and limit > 0:
                b = self.m.var(f"burst[{q}]", 0, limit)
                burst_vars[b] = 1
                self.m.row({b: 1, **offer}, ub=0)
        return burst_vars

    def add_fairness(self, item_ids: Sequence[int], tiers: Collection[int]) -> None:
        """The leximin rule of each tier in ``tiers``, as counts over thresholds (module doc, 1).

        Per workload w of such a tier (d_w replicas, s_w served: its item's x vars, or, for an item
        of several workloads, a variable of its own whose sum over the item is the item's x vars)
        and per c in 1..d_w: fair[w, c] binary with c * fair[w, c] <= s_w (1 only if w has c
        replicas). For each threshold f in the tier's grid {k / d_w}, ascending, one level
        maximises the workloads at >= f of their demand: the sum over w of fair[w, ceil(f d_w)].
        Lexicographically maximising these counts is leximin on the served fractions: the first
        threshold at which two splits differ is the smallest fraction of the better one's first
        better position. Every coefficient is an integer, so lexmilp's ±0.5 fixing stays exact.
        """
        for tier in sorted(tiers, reverse=True):
            workloads: list[tuple[int, list[int]]] = []  # (replicas, columns summing to s_w)
            for i in item_ids:
                item = self.items[i]
                if item.tier_value != tier or i not in self.served_vars:
                    continue
                xs = self.served_vars[i]
                if len(item.workloads) == 1:
                    workloads.append((item.replicas, list(xs)))
                    continue
                row: dict[int, float] = dict.fromkeys(xs, -1)
                for name, wanted in item.workloads:
                    sw = self.m.var(f"fair-served[{i},{name}]", 0, wanted)
                    row[sw] = 1
                    workloads.append((wanted, [sw]))
                self.m.row(row, lb=0, ub=0)
            have: list[dict[int, int]] = []  # per workload: c -> fair[w, c]
            raise_to: dict[int, tuple[list[int], int]] = {}
            for j, (wanted, cols) in enumerate(workloads):
                per_c = {}
                for c in range(1, wanted + 1):
                    var = self.m.var(f"fair[{tier},{j},{c}]", 0, 1)
                    self.m.row({var: c, **dict.fromkeys(cols, -1)}, ub=0)
                    per_c[c] = var
                    raise_to[var] = (cols, c)
                have.append(per_c)
            grid = sorted({Fraction(k, wanted) for wanted, _ in workloads for k in range(1, wanted + 1)})
            levels: list[tuple[Fraction, dict[int, int], dict[int, tuple[list[int], int]]]] = []
            for f in grid:
                coefs: dict[int, int] = {}
                for (wanted, _), per_c in zip(workloads, have, strict=True):
                    coefs[per_c[math.ceil(f * wanted)]] = 1
                levels.append((f, coefs, {col: raise_to[col] for col in coefs}))
            self.fair[tier] = levels

    # -- one pool ----------------------------------------------------------------------------

    def add_pool(self, pool: NodePool) -> None:
        v = _PoolVars(pool, mig_model(pool, self.catalog))
        self.pv[pool.name] = v
        xs = self.per_pool_x[pool.name]
        self._add_reservations(v, xs)
        if is_shared_pool(pool):
            self._add_shared(v, xs)
            return
        current_nodes = self._current_nodes(v)
        allowed = self._add_columns(v, xs, current_nodes)
        all_patterns = self._add_patterns(v, xs)
        self._add_whole_gpu_row(v, xs, all_patterns)
        if v.model is not None:
            self._add_profile_rows(v, xs, allowed)
        for i, res, var in xs:
            v.x[(i, res)] = var
        v.used = self._used(v, xs)
        spread_xs = [(i, res, var) for i, res, var in xs if _per_node(self.items[i])]
        if spread_xs:
            self._add_nodes(v, spread_xs, all_patterns)
            if current_nodes:
                _add_node_current(self.m, v, current_nodes)
        elif current_nodes:
            _add_current(self.m, v, current_nodes, all_patterns)

    def _add_nodes(
        self, v: _PoolVars, spread_xs: Sequence[tuple[int, str, int]], all_patterns: Sequence[Pattern]
    ) -> None:
        """The pool node by node, for workloads with a per-node spread: nn[node, layout] GPUs of a
        node carry a layout, h[node, pattern] = 1 when it hosts a node pattern, xn[item, node,
        resource] replicas of a spread workload it serves. Per node: MIG GPUs + pattern GPUs +
        single-GPU spread replicas <= gpusPerNode, and spread replicas of a profile <= the node's
        instances of it; summed over nodes, nn, h and xn equal the pool's n, y and x. Workloads
        without spread stay pool-level: any free instance of the pool may serve them."""
        m, pool = self.m, v.pool
        gpn = pool.gpus_per_node
        fixed = self.fixed.get(pool.name)
        v.per_node = True
        counts = {lay: lay.counts() for lay in v.columns}  # the same for every node
        link: dict[int, dict[int, float]] = {}
        for lay in v.columns:
            link[v.n[lay]] = {v.n[lay]: -1}
        for p in all_patterns:
            link[v.y[p]] = {v.y[p]: -1}
        for _i, _res, var in spread_xs:
            link[var] = {var: -1}
        for node in pool.node_names:
            cap: dict[int, float] = {}
            for lay in v.columns:
                if fixed is not None:
                    count = fixed.nodes.get(node, {}).get(lay, 0)
                    nn = m.var(f"nn[{pool.name},{node},{_lay_name(lay)}]", count, count)
                else:
                    nn = m.var(f"nn[{pool.name},{node},{_lay_name(lay)}]", 0, gpn)
                v.nn[(node, lay)] = nn
                link[v.n[lay]][nn] = 1
                cap[nn] = 1
            hosts: dict[int, float] = {}
            for p in all_patterns:
                h = m.var(f"h[{pool.name},{node},{p}]", 0, 1)
                link[v.y[p]][h] = 1
                cap[h] = pattern_size(p, gpn)
                hosts[h] = 1
            m.row(hosts, ub=1)
            per_res: dict[str, dict[int, float]] = {}
            for i, res, var in spread_xs:
                xn = m.var(f"xn[{i},{node},{res}]", 0, self.items[i].replicas)
                v.xn[(i, node, res)] = xn
                link[var][xn] = 1
                if res == WHOLE_GPU:
                    cap[xn] = 1
                else:
                    per_res.setdefault(res, {})[xn] = 1
                rows = self.node_served.setdefault(i, [])
                if not rows or rows[-1][:2] != (pool.name, node):
                    rows.append((pool.name, node, {}))
                rows[-1][2][xn] = 1
            m.row(cap, ub=gpn)
            for res, row in sorted(per_res.items()):
                for lay in v.columns:
                    count = counts[lay].get(res, 0)
                    if count:
                        row[v.nn[(node, lay)]] = -count
                m.row(row, ub=0)
        for row in link.values():
            m.row(row, lb=0, ub=0)

    def add_spread(self) -> None:
        """Each spread workload's caps, as hard rows (after every pool's node rows exist).

        maxPerNode c: replicas on a node <= c; p%: 100 * replicas on a node <= p * served.
        minNodes N: z[node] <= replicas there (z binary), and sum z >= min(N, served), written
        with a binary b as sum z >= N * b and sum z >= served - replicas * b.
        maxPerDomain: as maxPerNode, over the pools carrying each value of the topology key.
        """
        m = self.m
        for i in sorted(self.served_vars):
            item = self.items[i]
            spread = item.spread
            if spread is None:
                continue
            served = dict.fromkeys(self.served_vars[i], 1.0)
            for pool, node, row in self.node_served.get(i, []):
                _cap_row(m, row, served, spread.max_per_node)
                if spread.min_nodes > 1:
                    z = m.var(f"spread-node[{i},{pool},{node}]", 0, 1)
                    row_z = {z: 1.0, **{c: -1.0 for c in row}}
                    m.row(row_z, ub=0)
                    self.node_served_z.setdefault(i, {})[z] = 1
            zs = self.node_served_z.get(i, {})
            if spread.min_nodes > 1 and zs:
                b = m.var(f"spread-enough[{i}]", 0, 1)
                m.row({**zs, b: -spread.min_nodes}, lb=0)
                m.row({**zs, b: item.replicas, **{c: -1.0 for c in served}}, lb=0)
            if spread.topology_key:
                domains: dict[str, dict[int, float]] = {}
                for opt, var in zip(item.options, self.served_vars[i], strict=True):
                    value = self.domain_of.get((opt.pool, spread.topology_key))
                    if value is not None:
                        domains.setdefault(value, {})[var] = 1
                for _value, row in sorted(domains.items()):
                    _cap_row(m, row, served, spread.max_per_domain)

    def _add_reservations(self, v: _PoolVars, xs: Sequence[tuple[int, str, int]]) -> None:
        """r[tenant, resource, pool]: guaranteed units held idle in this pool; the tenant's own
        served replicas of that resource count towards its guarantee too."""
        for g in self.guarantees:
            if v.pool.name not in g.pools:
                continue
            r = self.m.var(f"r[{g.tenant},{g.resource},{v.pool.name}]", 0, g.amount)
            v.r[(g.tenant, g.resource)] = r
            row = self.guarantee_rows[(g.tenant, g.resource)]
            row[r] = 1
            for i, res, var in xs:
                if self.items[i].tenant == g.tenant and res == g.resource:
                    row[var] = row.get(var, 0) + (self.items[i].size if res == WHOLE_GPU else 1)

    def _add_shared(self, v: _PoolVars, xs: Sequence[tuple[int, str, int]]) -> None:
        """A time-sliced/MPS pool: replicas share GPUs ``sharing.replicas`` at a time."""
        pool = v.pool
        gpn = pool.gpus_per_node
        reserve_nodes = min(pool.reserve_whole_nodes, len(pool.node_names))
        reserve_gpus = min(pool.reserve_whole_gpus, pool.total_gpus - reserve_nodes * gpn)
        cap = max(0, pool.total_gpus - reserve_nodes * gpn - reserve_gpus)
        fixed = self.fixed.get(pool.name)
        lo, hi = (fixed.shared_gpus, fixed.shared_gpus) if fixed is not None else (0, cap)
        u = self.m.var(f"used[{pool.name}]", lo, hi)
        v.shared_used = u
        row_s: dict[int, float] = {u: -pool.sharing.replicas}
        for i, _res, var in xs:
            row_s[var] = row_s.get(var, 0) + self.items[i].size
        self.m.row(row_s, ub=0)
        v.used = {u: 1}
        for i, res, var in xs:
            v.x[(i, res)] = var

    def _current_nodes(self, v: _PoolVars) -> dict[str, NodeLayout]:
        if v.model is None:
            return {}
        out: dict[str, NodeLayout] = {}
        for node in v.pool.node_names:
            deployed = self.current.get((v.pool.name, node))
            if deployed is not None:
                out[node] = deployed
        return out

    def _add_columns(
        self, v: _PoolVars, xs: Sequence[tuple[int, str, int]], current_nodes: Mapping[str, NodeLayout]
    ) -> set[str]:
        """n[pool, layout]: GPUs carrying each maximal layout of the profiles this pool may carry
        (asked for, reserved, or burst room on used GPUs -- never ``+me``) or a deployed layout."""
        model = v.model
        if model is None:
            return set()
        allowed = {res for _i, res, _v in xs if res != WHOLE_GPU}
        allowed |= {res for (_t, res) in v.r if res != WHOLE_GPU}
        allowed |= set(self._burst_profiles(model))
        fixed = self.fixed.get(v.pool.name)
        if fixed is not None:
            v.columns = sorted(fixed.layouts)
            for lay in v.columns:
                count = fixed.layouts[lay]
                v.n[lay] = self.m.var(f"n[{v.pool.name},{_lay_name(lay)}]", count, count)
            return allowed
        cur_layouts = {gpu for deployed in current_nodes.values() for gpu in deployed}
        v.columns = _columns(model, allowed, cur_layouts)
        for lay in v.columns:
            v.n[lay] = self.m.var(f"n[{v.pool.name},{_lay_name(lay)}]", 0, v.pool.total_gpus)
        return allowed

    def _burst_profiles(self, model: GpuModel) -> list[str]:
        return [q for q in self.burst if "+me" not in q and model.profile(q) is not None]

    def _add_patterns(self, v: _PoolVars, xs: Sequence[tuple[int, str, int]]) -> list[Pattern]:
        """y[pool, pattern]: nodes laid out as a multiset of multi-GPU replicas; reserved whole
        nodes are a pattern of gpusPerNode whole GPUs with a fixed count. A k-GPU replica fits only
        in a pattern with a k slot."""
        pool = v.pool
        nodes = len(pool.node_names)
        reserve_nodes = min(pool.reserve_whole_nodes, nodes)
        items = self.items
        multi_sizes = sorted(
            {items[i].size for i, _r, _v in xs if items[i].kind == "whole" and items[i].size >= 2}
        )
        v.patterns = job_patterns(multi_sizes, pool.gpus_per_node)
        fixed = self.fixed.get(pool.name)
        for p in v.patterns:
            if fixed is None:
                v.y[p] = self.m.var(f"y[{pool.name},{p}]", 0, nodes)
            else:
                count = fixed.patterns.get(p, 0)
                v.y[p] = self.m.var(f"y[{pool.name},{p}]", count, count)
        v.y[RESERVE] = self.m.var(f"y[{pool.name},reserve]", reserve_nodes, reserve_nodes)
        all_patterns = [*v.patterns, RESERVE]
        self.m.row({v.y[p]: 1 for p in all_patterns}, ub=nodes)
        for k in multi_sizes:
            row_k: dict[int, float] = {
                var: 1 for i, _res, var in xs if items[i].kind == "whole" and items[i].size == k
            }
            for p in v.patterns:
                if k in p:
                    row_k[v.y[p]] = -p.count(k)
            self.m.row(row_k, ub=0)
        return all_patterns

    def _add_whole_gpu_row(
        self, v: _PoolVars, xs: Sequence[tuple[int, str, int]], all_patterns: Sequence[Pattern]
    ) -> None:
        """1-GPU replicas + pattern GPUs + reserve + whole-GPU reservations <= total - MIG GPUs."""
        pool = v.pool
        gpn = pool.gpus_per_node
        reserve_nodes = min(pool.reserve_whole_nodes, len(pool.node_names))
        reserve_gpus = min(pool.reserve_whole_gpus, pool.total_gpus - reserve_nodes * gpn)
        row_w: dict[int, float] = {}
        for i, _res, var in xs:
            if self.items[i].kind == "whole" and self.items[i].size == 1:
                row_w[var] = row_w.get(var, 0) + 1
        for p in all_patterns:
            row_w[v.y[p]] = pattern_size(p, gpn)
        for (_t, res), r in v.r.items():
            if res == WHOLE_GPU:
                row_w[r] = 1
        for col in v.n.values():
            row_w[col] = 1
        self.m.row(row_w, ub=pool.total_gpus - reserve_gpus)

    def _add_profile_rows(self, v: _PoolVars, xs: Sequence[tuple[int, str, int]], allowed: set[str]) -> None:
        """Per MIG profile: served + reserved instances <= instances the chosen layouts carry (a
        row for every profile asked for, even one no column carries: then nothing serves it)."""
        profiles = sorted(allowed | {name for lay in v.columns for name, _ in lay.profiles})
        for q in profiles:
            row_q: dict[int, float] = {}
            for _i, res, var in xs:
                if res == q:
                    row_q[var] = row_q.get(var, 0) + 1
            for (_t, res), r in v.r.items():
                if res == q:
                    row_q[r] = row_q.get(r, 0) + 1
            if not row_q:
                continue
            for lay in v.columns:
                cnt = lay.counts().get(q, 0)
                if cnt:
                    row_q[v.n[lay]] = -cnt
            self.m.row(row_q, ub=0)

    def _used(self, v: _PoolVars, xs: Sequence[tuple[int, str, int]]) -> dict[int, int]:
        """GPUs used: carrying an instance, a whole-GPU replica or a whole-GPU reservation."""
        used: dict[int, int] = dict.fromkeys(v.n.values(), 1)
        for i, _res, var in xs:
            if self.items[i].kind == "whole" and self.items[i].size == 1:
                used[var] = used.get(var, 0) + 1
        for p in v.patterns:
            used[v.y[p]] = sum(p)
        for (_t, res), r in v.r.items():
            if res == WHOLE_GPU:
                used[r] = 1
        return used

    # -- reading the answer ------------------------------------------------------------------

    def shortfall(self, result: LexResult) -> dict[tuple[str, str], int]:
        val = result.values
        return {key: round(val[s]) for key, s in self.shortfall_vars.items() if round(val[s]) > 0}

    def _trim_reservations(self, val: list[float]) -> dict[int, int]:
        """Reservation values cut to what each guarantee still needs next to the tenant's own served
        replicas (in pool order): a reservation beyond that costs nothing on any level, so its
        size would be an accident of the solver's path."""
        out: dict[int, int] = {}
        for (tenant, resource), row in self.guarantee_rows.items():
            amount = next(g.amount for g in self.guarantees if (g.tenant, g.resource) == (tenant, resource))
            rs = [v.r[(tenant, resource)] for v in self.pv.values() if (tenant, resource) in v.r]
            fixed = {self.shortfall_vars[(tenant, resource)], *rs}
            own = sum(c * round(val[col]) for col, c in row.items() if col not in fixed)
            need = max(0, amount - round(val[self.shortfall_vars[(tenant, resource)]]) - round(own))
            for r in rs:
                out[r] = min(round(val[r]), need)
                need -= out[r]
        return out

    def decisions(self, result: LexResult) -> dict[str, PoolDecision]:
        val = list(result.values)
        for col, trimmed in self._trim_reservations(val).items():
            val[col] = trimmed

        def positive(cols: Mapping[_K, int]) -> dict[_K, int]:
            return {k: round(val[c]) for k, c in cols.items() if round(val[c]) > 0}

        out: dict[str, PoolDecision] = {}
        for name, v in self.pv.items():
            dec = PoolDecision(
                pool=v.pool,
                model=v.model,
                layouts=positive(v.n),
                patterns=positive(v.y),
                kept=positive(v.kept),
                served=positive(v.x),
                reserved=positive(v.r),
                gpus_used=round(sum(val[c] * w for c, w in v.used.items())),
                optimal=result.optimal,
                solve_seconds=result.seconds,
            )
            if v.shared_used is not None:
                dec.extra["shared_gpus_used"] = round(val[v.shared_used])
            if v.per_node:
                dec.per_node = True
                for (node, lay), c in v.nn.items():
                    if round(val[c]) > 0:
                        dec.node_layouts.setdefault(node, {})[lay] = round(val[c])
                for (i, node, _res), c in v.xn.items():
                    if round(val[c]) > 0:
                        key = (i, node)
                        dec.spread_served[key] = dec.spread_served.get(key, 0) + round(val[c])
            out[name] = dec
        return out


def _per_node(item: DemandItem) -> bool:
    return item.spread is not None and item.spread.per_node


def _cap_row(m: Milp, row: Mapping[int, float], served: Mapping[int, float], share: Share) -> None:
    """Replicas in ``row`` <= ``share.count``, or <= ``share.percent`` % of the served replicas."""
    if share.count:
        m.row(row, ub=share.count)
    elif share.percent:
        coefs = {c: 100 * w for c, w in row.items()}
        for c in served:
            coefs[c] = coefs.get(c, 0) - share.percent
        m.row(coefs, ub=0)


def _lay_name(lay: GpuLayout) -> str:
    return "+".join(f"{n}x{c}" for n, c in lay.profiles) or "empty"


def _add_current(
    m: Milp, v: _PoolVars, current_nodes: Mapping[str, NodeLayout], all_patterns: Sequence[Pattern]
) -> None:
    """Kept-node variables and the change lower bounds against the deployed layout."""
    _add_kept_nodes(m, v, current_nodes, all_patterns)
    _add_change_bounds(m, v, current_nodes)


def _add_node_current(m: Milp, v: _PoolVars, current_nodes: Mapping[str, NodeLayout]) -> None:
    """Per node of a node-by-node pool: keep[node] = 1 only when its layouts stay exactly as
    deployed; d[node, layout] >= GPUs of a deployed layout the node no longer carries."""
    gpn = v.pool.gpus_per_node
    whole = GpuLayout.whole()
    for node, cur in sorted(current_nodes.items()):
        if len(cur) != gpn:
            continue
        counts = Counter(cur)
        mig = {v.nn[(node, lay)]: 1.0 for lay in v.columns}
        if all(not lay.mig_enabled or lay in v.n for lay in counts):
            k = m.var(f"keep[{v.pool.name},{node}]", 0, 1)
            v.node_kept[node] = k
            m.row({**mig, k: counts.get(whole, 0)}, ub=gpn)  # its whole GPUs stay whole
            for lay, c in counts.items():
                if lay.mig_enabled:
                    m.row({v.nn[(node, lay)]: 1, k: -c}, lb=0)  # and its layouts stay
        for lay, c in sorted(counts.items()):
            if lay == whole:
                d = m.var(f"d[{v.pool.name},{node},whole]", 0, c)
                m.row({d: 1, **{col: -1 for col in mig}}, lb=c - gpn)
            elif lay in v.n:
                d = m.var(f"d[{v.pool.name},{node},{_lay_name(lay)}]", 0, c)
                m.row({d: 1, v.nn[(node, lay)]: 1}, lb=c)
            else:
                continue  # cannot be kept: a constant number of changes
            v.change[d] = 1
            v.displaced[d] = lay.instances()


@dataclass
class _KeptRows:
    """Coefficients of kept-node variables gathered for the rows that tie them to the layout."""

    by_layout: dict[GpuLayout, dict[int, float]]
    whole: dict[int, float]
    pattern: dict[Pattern, dict[int, float]]
    pattern_whole: dict[int, float]
    plain_nodes: dict[int, float]


def _add_kept_nodes(
    m: Milp, v: _PoolVars, current_nodes: Mapping[str, NodeLayout], all_patterns: Sequence[Pattern]
) -> None:
    """keep[pool, node layout, pattern]: nodes of one deployed layout left exactly as they are
    (hosting a pattern in their whole GPUs, or none); each needs the columns it carries."""
    gpn = v.pool.gpus_per_node
    groups = Counter(lay for lay in current_nodes.values() if len(lay) == gpn)
    rows = _KeptRows({}, {}, {p: {} for p in all_patterns}, {}, {})
    for g in sorted(groups):
        counts = Counter(g)
        if any(lay.mig_enabled and lay not in v.n for lay in counts):
            continue  # carries a layout the model cannot produce: it must change anyway
        row_g = _kept_group(m, v, g, counts, groups[g], all_patterns, rows)
        m.row(row_g, ub=groups[g])
    for lay, row in rows.by_layout.items():
        m.row({**row, v.n[lay]: -1}, ub=0)
    for p, row in rows.pattern.items():
        if row:
            m.row({**row, v.y[p]: -1}, ub=0)
    # whole GPUs left for re-laid nodes must still hold the patterns not hosted by kept nodes:
    # total - sum(n) - kept_whole >= sum_p size(p) * (y_p - kept_p)
    row_rw: dict[int, float] = dict.fromkeys(v.n.values(), 1)
    for k, w in rows.whole.items():
        row_rw[k] = row_rw.get(k, 0) + w
    for k, size in rows.pattern_whole.items():
        row_rw[k] = row_rw.get(k, 0) + size
    for p in all_patterns:
        row_rw[v.y[p]] = row_rw.get(v.y[p], 0) + pattern_size(p, gpn)
    m.row(row_rw, ub=v.pool.total_gpus)
    # re-laid pattern nodes fit in the nodes not kept as plain nodes
    row_rn = {v.y[p]: 1.0 for p in all_patterns}
    for k in rows.plain_nodes:
        row_rn[k] = row_rn.get(k, 0) + 1
    m.row(row_rn, ub=len(v.pool.node_names))


def _kept_group(
    m: Milp,
    v: _PoolVars,
    g: NodeLayout,
    counts: Counter[GpuLayout],
    size: int,
    all_patterns: Sequence[Pattern],
    rows: _KeptRows,
) -> dict[int, float]:
    """The keep variables of one group of identical deployed nodes; returns their group row."""
    gpn = v.pool.gpus_per_node
    w_g = counts.get(GpuLayout.whole(), 0)
    row_g: dict[int, float] = {}
    for p in [(), *all_patterns]:
        if p and pattern_size(p, gpn) > w_g:
            continue
        if p == RESERVE and w_g != gpn:
            continue
        k = m.var(f"keep[{v.pool.name},{_node_name(g)},{p}]", 0, size)
        v.kept[(g, p)] = k
        row_g[k] = 1
        for lay, c in counts.items():
            if lay.mig_enabled:
                rows.by_layout.setdefault(lay, {})[k] = c
        rows.whole[k] = w_g
        if p:
            rows.pattern[p][k] = 1
            rows.pattern_whole[k] = -pattern_size(p, gpn)  # pattern hosted by a kept node
        else:
            rows.plain_nodes[k] = 1
    return row_g


def _add_change_bounds(m: Milp, v: _PoolVars, current_nodes: Mapping[str, NodeLayout]) -> None:
    """d[pool, layout] >= max(0, current count - target count): GPUs changed and, weighted by
    their instances, instances displaced."""
    gpn = v.pool.gpus_per_node
    total = v.pool.total_gpus
    whole = GpuLayout.whole()
    cur = Counter(lay for node in current_nodes.values() if len(node) == gpn for lay in node)
    change: dict[int, int] = {}
    displaced: dict[int, int] = {}
    for lay, c in sorted(cur.items()):
        if lay == whole:
            d = m.var(f"d[{v.pool.name},whole]", 0, c)
            # d >= c - (total - sum n)  <=>  d - sum n >= c - total
            m.row({d: 1, **{col: -1 for col in v.n.values()}}, lb=c - total)
        elif lay in v.n:
            d = m.var(f"d[{v.pool.name},{_lay_name(lay)}]", 0, c)
            m.row({d: 1, v.n[lay]: 1}, lb=c)
        else:
            continue  # cannot be kept: a constant number of changes
        change[d] = 1
        displaced[d] = lay.instances()
    v.change = change
    v.displaced = displaced


def _node_name(g: NodeLayout) -> str:
    return "|".join(_lay_name(lay) if lay.mig_enabled else "whole" for lay in g)


def _levels(
    items: Sequence[DemandItem],
    item_ids: Sequence[int],
    pv: Mapping[str, _PoolVars],
    shortfall: Mapping[tuple[str, str], int],
    burst: Mapping[int, int],
    fair: Mapping[int, Sequence[tuple[Fraction, dict[int, int], dict[int, tuple[list[int], int]]]]],
    covered: Mapping[int, int],
    covered_by: Mapping[int, Sequence[int]],
    objective: Sequence[Objective] = OBJECTIVES,
    *,
    metrics_only: bool = False,
) -> list[Level]:
    """The objectives in lexicographic order (see the module doc); empty ones are left out.

    ``objective`` (``PartitionPolicy.spec.objective``) orders the goals after guarantees and
    served demand: ``gpus``, ``disruption`` (its three levels, in their order) and ``preference``.
    ``metrics_only`` ends the list with the last of ``gpus`` and ``disruption`` (a ``preference``
    goal ordered before them stays: it shapes the optimum they are taken at).
    """
    levels: list[Level] = []
    if shortfall:
        levels.append(Level("guarantees", "min", dict.fromkeys(shortfall.values(), 1)))
    levels.extend(_served_levels(items, item_ids, pv, fair, covered, covered_by))
    used: dict[int, int] = {}
    for v in pv.values():
        for c, w in v.used.items():
            used[c] = used.get(c, 0) + w
    pref = _preference(items, pv)
    goals: dict[Objective, list[Level]] = {
        "gpus": [Level("gpus", "min", used)],
        "disruption": _disruption_levels(pv),
        "preference": [Level("preference", "min", pref)] if pref else [],
    }
    left = {"gpus", "disruption"}
    for goal in objective_order(objective):
        if metrics_only and not left:
            return levels
        levels.extend(goals[goal])
        left.discard(goal)
    if metrics_only:
        return levels
    if burst:
        levels.append(Level("burst", "max", burst))
    fill = _fill(pv)
    if fill:
        levels.append(Level("fill", "max", fill))
    return levels


def _served_levels(
    items: Sequence[DemandItem],
    item_ids: Sequence[int],
    pv: Mapping[str, _PoolVars],
    fair: Mapping[int, Sequence[tuple[Fraction, dict[int, int], dict[int, tuple[list[int], int]]]]],
    covered: Mapping[int, int],
    covered_by: Mapping[int, Sequence[int]],
) -> list[Level]:
    """Per priority tier, highest first: the tier's fairness levels (when it is known to be short,
    ``fair``), then its replicas served. A tier of several workloads without fairness levels
    stops the run when it cannot be served in full (``_solve_component`` then adds them). Then,
    per tier served in full, the workloads with a replica (moot there: proven without HiGHS)."""
    tiers = sorted({items[i].tier_value for i in item_ids if items[i].options}, reverse=True)
    out = []
    for tier in tiers:
        prev = ""
        for f, coefs, raise_to in fair.get(tier, ()):
            name = f"fair:{tier}:{f}"
            out.append(Level(name, "max", coefs, raise_to, bounded_by=prev))
            prev = name
        served: dict[int, int] = {}
        for v in pv.values():
            for (i, _res), var in v.x.items():
                if items[i].tier_value == tier:
                    served[var] = 1
        in_tier = [items[i] for i in item_ids if items[i].tier_value == tier and items[i].options]
        wanted = sum(item.replicas for item in in_tier)
        several = sum(len(item.workloads) for item in in_tier) > 1
        out.append(
            Level(
                f"served:{tier}", "max", served, bound=wanted, stop_unless_bound=several and tier not in fair
            )
        )
    for tier in tiers:
        cover = {z: 1 for i, z in covered.items() if items[i].tier_value == tier}
        if cover and tier not in fair:
            out.append(Level(f"covered:{tier}", "max", cover, {z: (covered_by[z], 1) for z in cover}))
    return out


def _disruption_levels(pv: Mapping[str, _PoolVars]) -> list[Level]:
    """Nodes kept as deployed, GPUs changed, instances displaced (only with a current state)."""
    kept = {c: 1 for v in pv.values() for c in [*v.kept.values(), *v.node_kept.values()]}
    change = {c: w for v in pv.values() for c, w in v.change.items()}
    displaced = {c: w for v in pv.values() for c, w in v.displaced.items()}
    out = []
    if kept:
        out.append(Level("kept-nodes", "max", kept))
    if change:
        out.append(Level("changed-gpus", "min", change))
    if any(displaced.values()):
        out.append(Level("displaced", "min", displaced))
    return out


def _preference(items: Sequence[DemandItem], pv: Mapping[str, _PoolVars]) -> dict[int, int]:
    """Rank of the option serving each replica in its workload's preference list."""
    pref: dict[int, int] = {}
    for v in pv.values():
        for (i, res), var in v.x.items():
            rank = next((o.rank for o in items[i].options if o.pool == v.pool.name and o.resource == res), 0)
            if rank:
                pref[var] = rank
    return pref


def _fill(pv: Mapping[str, _PoolVars]) -> dict[int, int]:
    """Compute slices carried by each MIG column; ``+me`` instances are scarce: only demand may
    ask for them, never the filler."""
    fill: dict[int, int] = {}
    for v in pv.values():
        if v.model is None:
            continue
        for lay, c in v.n.items():
            plain = GpuLayout.of({n: k for n, k in lay.profiles if "+me" not in n})
            fill[c] = layout_compute_slices(v.model, plain)
    return fill
