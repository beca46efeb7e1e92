"""The exact pool-level model of one cluster: how many GPUs of each pool carry each MIG layout.

Cutting-stock style: one integer column per (pool, valid layout) counts GPUs; demand variables say
which pool and profile serves each demand item; node patterns place multi-GPU replicas (``k``
whole GPUs on one node) and reserved whole nodes exactly; "kept" variables count current nodes
left untouched, so the number of nodes touched is optimised here, jointly with the layout choice.

Levels, strictly lexicographic (each optimum is fixed before the next level runs):

0. guarantee shortfall (minimise; non-zero means an infeasible guarantee, reported as an error);
1. replicas served, one level per priority tier, highest tier first (maximise);
2. GPUs used: carrying an instance, a whole-GPU replica or a guarantee reservation (minimise);
3. nodes left unchanged relative to ``current`` (maximise), then 4. GPUs changed, then
5. instances displaced (minimise) -- only when a current state is known;
6. preference penalty: rank of the chosen profile in a workload's preference list (minimise);
   then burst room: instances of profiles tenants may burst to, up to the largest such limit per
   profile, on GPUs that are used anyway (maximise; per group of pools solved together);
7. fill: compute slices carried by MIG GPUs (without ``+me``), so spare room is offered as
   instances (maximise).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from compiler.catalog import Catalog, GpuModel
from compiler.catalog.layouts import enumerate_layouts, is_feasible, layout_compute_slices
from compiler.model import WHOLE_GPU, Cluster, GpuLayout, NodeLayout, NodePool
from compiler.solve.demand import DemandItem, Guarantee, is_shared_pool, mig_model
from compiler.solve.lexmilp import Level, LexResult, Milp
from compiler.solve.plan_types import RESERVE, Pattern, PoolDecision, pattern_size


@dataclass
class ClusterOutcome:
    decisions: dict[str, PoolDecision]
    shortfall: dict[tuple[str, str], int]  # (tenant, resource) -> guaranteed amount that cannot be held
    result: LexResult | None
    # pools of components for which HiGHS found no point (time ran out first): left to the caller
    unsolved: tuple[str, ...] = ()


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


def _columns(
    model: GpuModel, allowed: set[str], current_layouts: set[GpuLayout]
) -> list[GpuLayout]:
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


def solve_cluster(
    cluster: Cluster,
    catalog: Catalog,
    items: Sequence[DemandItem],
    guarantees: Sequence[Guarantee],
    current: Mapping[tuple[str, str], NodeLayout],
    time_limit: float,
    burst: Mapping[str, int] | None = None,
) -> ClusterOutcome:
    """Solve the cluster. ``current`` maps (pool, node) to its deployed layout; ``burst`` maps a
    profile to the largest burst limit a tenant of the cluster has for it (spare room goes there).

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
        remaining = time_limit - (time.perf_counter() - started)
        part = _solve_component(members, catalog, items, ids, gs, current, remaining, burst or {})
        if part.result is None:
            unsolved.extend(sorted(names))
            continue
        outcome.decisions.update(part.decisions)
        outcome.shortfall.update(part.shortfall)
        _merge_result(outcome, part.result)
    if outcome.result is None:  # no pools, or no component solved: nothing proven
        outcome.result = LexResult(values=[], optimal=not unsolved)
    outcome.unsolved = tuple(unsolved)
    outcome.result.seconds = time.perf_counter() - started
    return outcome


def _merge_result(outcome: ClusterOutcome, part: LexResult) -> None:
    """Fold one component's result into the cluster's: optimal only if every component is; the
    first unproven level (and its cause) is the one reported."""
    if outcome.result is None:
        outcome.result = part
        return
    outcome.result.objectives.update(part.objectives)
    if not part.optimal:
        outcome.result.unproven(part.failed_level, part.cause)


def _solve_component(
    pools: Sequence[NodePool],
    catalog: Catalog,
    items: Sequence[DemandItem],
    item_ids: Sequence[int],
    guarantees: Sequence[Guarantee],
    current: Mapping[tuple[str, str], NodeLayout],
    time_limit: float,
    burst: Mapping[str, int],
) -> ClusterOutcome:
    m = Milp()
    pv: dict[str, _PoolVars] = {}
    # demand variables first: x[item, pool, resource]
    per_pool_x: dict[str, list[tuple[int, str, int]]] = {p.name: [] for p in pools}  # (item, resource, var)
    item_vars: dict[int, list[int]] = {}
    for i in item_ids:
        item = items[i]
        for opt in item.options:
            var = m.var(f"x[{i},{opt.pool},{opt.resource}]", 0, item.replicas)
            per_pool_x[opt.pool].append((i, opt.resource, var))
            item_vars.setdefault(i, []).append(var)
        if item.options:
            m.row({v: 1 for v in item_vars[i]}, ub=item.replicas)

    shortfall_vars: dict[tuple[str, str], int] = {}
    guarantee_rows: dict[tuple[str, str], dict[int, float]] = {}
    for g in guarantees:
        s = m.var(f"short[{g.tenant},{g.resource}]", 0, g.amount)
        shortfall_vars[(g.tenant, g.resource)] = s
        guarantee_rows[(g.tenant, g.resource)] = {s: 1}

    for pool in pools:
        model = mig_model(pool, catalog)
        v = _PoolVars(pool, model)
        pv[pool.name] = v
        gpn = pool.gpus_per_node
        nodes = len(pool.node_names)
        total = pool.total_gpus
        reserve_nodes = min(pool.reserve_whole_nodes, nodes)
        reserve_gpus = min(pool.reserve_whole_gpus, total - reserve_nodes * gpn)
        xs = per_pool_x[pool.name]

        # guarantee reservations held in this pool
        for g in guarantees:
            if pool.name in g.pools:
                r = m.var(f"r[{g.tenant},{g.resource},{pool.name}]", 0, g.amount)
                v.r[(g.tenant, g.resource)] = r
                row = guarantee_rows[(g.tenant, g.resource)]
                row[r] = 1
                for i, res, var in xs:
                    if items[i].tenant == g.tenant and res == g.resource:
                        row[var] = row.get(var, 0) + (items[i].size if res == WHOLE_GPU else 1)

        if is_shared_pool(pool):
            cap = max(0, total - reserve_nodes * gpn - reserve_gpus)
            u = m.var(f"used[{pool.name}]", 0, cap)
            v.shared_used = u
            row_s: dict[int, float] = {u: -pool.sharing.replicas}
            for i, _res, var in xs:
                row_s[var] = row_s.get(var, 0) + items[i].size
            m.row(row_s, ub=0)
            v.used = {u: 1}
            for i, res, var in xs:
                v.x[(i, res)] = var
            continue

        current_nodes: dict[str, NodeLayout] = {}
        if model is not None:
            for node in pool.node_names:
                deployed = current.get((pool.name, node))
                if deployed is not None:
                    current_nodes[node] = deployed
        cur_layouts = {gpu for deployed in current_nodes.values() for gpu in deployed}
        if model is not None:
            allowed = {res for _i, res, _v in xs if res != WHOLE_GPU}
            allowed |= {res for (_t, res) in v.r if res != WHOLE_GPU}
            # burst profiles may fill spare room on GPUs that are used anyway (never +me)
            allowed |= {q for q in burst if "+me" not in q and model.profile(q) is not None}
            v.columns = _columns(model, allowed, cur_layouts)
            for lay in v.columns:
                v.n[lay] = m.var(f"n[{pool.name},{_lay_name(lay)}]", 0, total)

        multi_sizes = sorted(
            {items[i].size for i, _r, _v in xs if items[i].kind == "whole" and items[i].size >= 2}
        )
        v.patterns = job_patterns(multi_sizes, gpn)
        for p in v.patterns:
            v.y[p] = m.var(f"y[{pool.name},{p}]", 0, nodes)
        # reserved whole nodes behave like a pattern of gpusPerNode whole GPUs with a fixed count
        v.y[RESERVE] = m.var(f"y[{pool.name},reserve]", reserve_nodes, reserve_nodes)
        all_patterns = [*v.patterns, RESERVE]
        m.row({v.y[p]: 1 for p in all_patterns}, ub=nodes)

        # k-GPU replicas fit only in node patterns that hold a k slot
        for k in multi_sizes:
            row_k: dict[int, float] = {}
            for i, _res, var in xs:
                if items[i].kind == "whole" and items[i].size == k:
                    row_k[var] = 1
            for p in v.patterns:
                if k in p:
                    row_k[v.y[p]] = -p.count(k)
            m.row(row_k, ub=0)

        # whole GPUs: 1-GPU replicas + pattern GPUs + reserve + guarantee reservations <= total - MIG GPUs
        row_w: dict[int, float] = {}
        for i, _res, var in xs:
            if items[i].kind == "whole" and items[i].size == 1:
                row_w[var] = row_w.get(var, 0) + 1
        for p in all_patterns:
            row_w[v.y[p]] = pattern_size(p, gpn)
        for (_t, res), r in v.r.items():
            if res == WHOLE_GPU:
                row_w[r] = 1
        for col in v.n.values():
            row_w[col] = 1
        m.row(row_w, ub=total - reserve_gpus)

        # MIG instances per profile
        if model is not None:
            # a row per profile asked for, even one no column carries (then nothing can serve it)
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
                m.row(row_q, ub=0)

        for i, res, var in xs:
            v.x[(i, res)] = var

        used: dict[int, int] = {}
        for col in v.n.values():
            used[col] = 1
        for i, _res, var in xs:
            if items[i].kind == "whole" and items[i].size == 1:
                used[var] = used.get(var, 0) + 1
        for p in v.patterns:
            used[v.y[p]] = sum(p)
        for (_t, res), r in v.r.items():
            if res == WHOLE_GPU:
                used[r] = 1
        v.used = used

        if current_nodes:
            _add_current(m, v, current_nodes, all_patterns)

    for key, row in guarantee_rows.items():
        amount = next(g.amount for g in guarantees if (g.tenant, g.resource) == key)
        m.row(row, lb=amount)

    burst_vars: dict[int, int] = {}
    for q, limit in sorted(burst.items()):
        offer = {
            v.n[lay]: -lay.counts()[q] for v in pv.values() for lay in v.columns if lay.counts().get(q, 0)
        }
        if offer and limit > 0:
            b = m.var(f"burst[{q}]", 0, limit)
            burst_vars[b] = 1
            m.row({b: 1, **offer}, ub=0)
    levels = _levels(items, item_ids, pv, shortfall_vars, burst_vars)
    result = m.solve(levels, time_limit=time_limit)
    decisions: dict[str, PoolDecision] = {}
    shortfall: dict[tuple[str, str], int] = {}
    if result is None:
        return ClusterOutcome(decisions, shortfall, None)
    val = result.values
    for key, s in shortfall_vars.items():
        if round(val[s]) > 0:
            shortfall[key] = round(val[s])
    for name, v in pv.items():
        dec = PoolDecision(
            pool=v.pool,
            model=v.model,
            layouts={lay: round(val[c]) for lay, c in v.n.items() if round(val[c]) > 0},
            patterns={p: round(val[c]) for p, c in v.y.items() if round(val[c]) > 0},
            kept={k: round(val[c]) for k, c in v.kept.items() if round(val[c]) > 0},
            served={k: round(val[c]) for k, c in v.x.items() if round(val[c]) > 0},
            reserved={k: round(val[c]) for k, c in v.r.items() if round(val[c]) > 0},
            gpus_used=round(sum(val[c] * w for c, w in v.used.items())),
            optimal=result.optimal,
            solve_seconds=result.seconds,
        )
        if v.shared_used is not None:
            dec.extra["shared_gpus_used"] = round(val[v.shared_used])
        decisions[name] = dec
    return ClusterOutcome(decisions, shortfall, result)


def _lay_name(lay: GpuLayout) -> str:
    return "+".join(f"{n}x{c}" for n, c in lay.profiles) or "empty"


def _add_current(
    m: Milp, v: _PoolVars, current_nodes: Mapping[str, NodeLayout], all_patterns: Sequence[Pattern]
) -> None:
    """Kept-node variables and the change lower bounds against the deployed layout."""
    gpn = v.pool.gpus_per_node
    nodes = len(v.pool.node_names)
    total = v.pool.total_gpus
    whole = GpuLayout.whole()
    groups = Counter(lay for lay in current_nodes.values() if len(lay) == gpn)
    kept_by_layout: dict[GpuLayout, dict[int, float]] = {}
    kept_whole: dict[int, float] = {}
    kept_pattern: dict[Pattern, dict[int, float]] = {p: {} for p in all_patterns}
    relaid_pattern_whole: dict[int, float] = {}
    relaid_nodes_row: dict[int, float] = {}
    for g in sorted(groups):
        counts = Counter(g)
        if any(lay.mig_enabled and lay not in v.n for lay in counts):
            continue  # carries a layout the model cannot produce: it must change anyway
        w_g = counts.get(whole, 0)
        row_g: dict[int, float] = {}
        for p in [(), *all_patterns]:
            if p and pattern_size(p, gpn) > w_g:
                continue
            if p == RESERVE and w_g != gpn:
                continue
            k = m.var(f"keep[{v.pool.name},{_node_name(g)},{p}]", 0, groups[g])
            v.kept[(g, p)] = k
            row_g[k] = 1
            for lay, c in counts.items():
                if lay.mig_enabled:
                    kept_by_layout.setdefault(lay, {})[k] = c
            kept_whole[k] = w_g
            if p:
                kept_pattern[p][k] = 1
                relaid_pattern_whole[k] = -pattern_size(p, gpn)  # pattern hosted by a kept node
            if not p:
                relaid_nodes_row[k] = 1
        m.row(row_g, ub=groups[g])
    for lay, row in kept_by_layout.items():
        m.row({**row, v.n[lay]: -1}, ub=0)
    for p, row in kept_pattern.items():
        if row:
            m.row({**row, v.y[p]: -1}, ub=0)
    # whole GPUs left for re-laid nodes must still hold the patterns not hosted by kept nodes:
    # total - sum(n) - kept_whole >= sum_p size(p) * (y_p - kept_p)
    row_rw: dict[int, float] = {c: 1 for c in v.n.values()}
    for k, w in kept_whole.items():
        row_rw[k] = row_rw.get(k, 0) + w
    for k, s in relaid_pattern_whole.items():
        row_rw[k] = row_rw.get(k, 0) + s
    for p in all_patterns:
        row_rw[v.y[p]] = row_rw.get(v.y[p], 0) + pattern_size(p, gpn)
    m.row(row_rw, ub=total)
    # re-laid pattern nodes fit in the nodes not kept as plain nodes
    row_rn = {v.y[p]: 1.0 for p in all_patterns}
    for k in relaid_nodes_row:
        row_rn[k] = row_rn.get(k, 0) + 1
    m.row(row_rn, ub=nodes)

    # GPUs changed >= sum over layouts of max(0, current count - target count)
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
) -> list[Level]:
    levels: list[Level] = []
    if shortfall:
        levels.append(Level("guarantees", "min", {s: 1 for s in shortfall.values()}))
    tiers = sorted({items[i].tier_value for i in item_ids}, reverse=True)
    for tier in tiers:
        coefs: dict[int, int] = {}
        for v in pv.values():
            for (i, _res), var in v.x.items():
                if items[i].tier_value == tier:
                    coefs[var] = 1
        levels.append(Level(f"served:{tier}", "max", coefs))
    used: dict[int, int] = {}
    for v in pv.values():
        for c, w in v.used.items():
            used[c] = used.get(c, 0) + w
    levels.append(Level("gpus", "min", used))
    kept = {c: 1 for v in pv.values() for c in v.kept.values()}
    change = {c: w for v in pv.values() for c, w in v.change.items()}
    displaced = {c: w for v in pv.values() for c, w in v.displaced.items()}
    if kept:
        levels.append(Level("kept-nodes", "max", kept))
    if change:
        levels.append(Level("changed-gpus", "min", change))
    if any(displaced.values()):
        levels.append(Level("displaced", "min", displaced))
    pref: dict[int, int] = {}
    for v in pv.values():
        for (i, res), var in v.x.items():
            rank = next((o.rank for o in items[i].options if o.pool == v.pool.name and o.resource == res), 0)
            if rank:
                pref[var] = rank
    if pref:
        levels.append(Level("preference", "min", pref))
    if burst:
        levels.append(Level("burst", "max", burst))
    fill: dict[int, int] = {}
    for v in pv.values():
        if v.model is None:
            continue
        for lay, c in v.n.items():
            # +me instances are scarce: only demand may ask for them, never the filler
            plain = GpuLayout.of({n: k for n, k in lay.profiles if "+me" not in n})
            fill[c] = layout_compute_slices(v.model, plain)
    if fill:
        levels.append(Level("fill", "max", fill))
    return levels
