"""``solve(policy, catalog, current) -> Solution``: demand -> exact pool-level MILP -> node assignment."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Literal

from compiler.catalog import Catalog
from compiler.catalog.layouts import is_feasible
from compiler.diagnostics import Diagnostic, Severity, at, sort_key
from compiler.model import WHOLE_GPU, Cluster, CurrentState, GpuLayout, NodeLayout, NodePool, Policy, Workload
from compiler.solve.assign import assign_pool
from compiler.solve.bounds import lp_bound
from compiler.solve.demand import DemandItem, Guarantee, build_demand, split_served, tenant_guarantees
from compiler.solve.greedy import greedy_cluster
from compiler.solve.hami import solve_hami
from compiler.solve.lexmilp import TIME_LIMIT, LexResult
from compiler.solve.milp import ClusterOutcome, solve_cluster
from compiler.solve.plan_types import PoolDecision
from compiler.solve.result import (
    HamiPoolResult,
    NodeResult,
    PoolResult,
    ServedDemand,
    Solution,
    tally_by_object,
)

Method = Literal["exact", "greedy"]


def solve(
    policy: Policy,
    catalog: Catalog,
    current: CurrentState | None = None,
    *,
    time_limit_s: float = 60.0,
    method: Method = "exact",
    hami: bool = True,
    metrics_only: bool = False,
) -> Solution:
    """Choose a layout for every GPU of every pool, one integer program per cluster.

    ``time_limit_s`` is one wall-clock budget for the whole solve: every cluster, component and
    level gets what is left of it. When it runs out the best point proven so far is kept (or,
    without any point, the cluster falls back to first-fit decreasing) and the pools are marked
    ``optimal=False`` with MIGC203 saying which level was cut short and why.
    ``method="greedy"`` forces that heuristic (benchmarks compare against it).
    ``hami=False`` leaves HAMi pools out (``Solution.hami`` empty), for a caller that compares the
    MIG answers of two objective orders (HAMi pools keep their own order).
    ``metrics_only=True`` is for such a comparison too: each integer program stops after the last
    of the ``gpus`` and ``disruption`` goals and skips the split pass (``milp.solve_cluster``), and
    neither the LP bound (``lower_bound_gpus`` stays 0) nor the spread's cost (MIGC205) is
    computed, nor the pools' ``layout_counts`` (left empty) or MIGC204 notes. GPUs used, the nodes
    and GPUs changed against ``current`` and the replicas unmet are
    those of the full solve; layouts, profiles served and spare room are not the ones ``compile``
    writes, so such a solution is for counting only, never for rendering.
    """
    deadline = time.perf_counter() + time_limit_s
    diags: list[Diagnostic] = []
    per_cluster_guarantees, nowhere = tenant_guarantees(policy, catalog)
    for tenant, resource, amount in nowhere:
        t = policy.tenant(tenant)
        diags.append(
            at(
                "MIGC200",
                f"tenant {tenant}: guaranteed {amount} x {resource}, but no pool in any cluster where it "
                f"runs offers {resource}",
                t.span,
                severity=Severity.ERROR,
            )
        )
    deployed = current.as_dict() if current is not None else {}
    pools: list[PoolResult] = []
    for cluster in sorted(policy.clusters, key=lambda c: c.name):
        cur = {(pool, node): lay for (cl, pool, node), lay in sorted(deployed.items()) if cl == cluster.name}
        results, cluster_diags = _solve_cluster(
            policy,
            catalog,
            cluster,
            per_cluster_guarantees.get(cluster.name, []),
            cur,
            _Budget(time_limit_s, deadline),
            method,
            metrics_only,
        )
        pools.extend(results)
        diags.extend(cluster_diags)
    pools.sort(key=lambda p: (p.cluster, p.pool))
    shared: tuple[HamiPoolResult, ...] = ()
    if hami:
        shared, hami_diags = solve_hami(policy, catalog, time_limit_s, current)  # sharing: hami pools
        diags.extend(hami_diags)
    # Diagnostic equality ignores the message, so two findings on one tenant would collapse in a set
    unique = {(*sort_key(d), d.hint): d for d in diags}
    return Solution(pools=tuple(pools), diagnostics=tuple(unique[k] for k in sorted(unique)), hami=shared)


def _solve_cluster(
    policy: Policy,
    catalog: Catalog,
    cluster: Cluster,
    guarantees: Sequence[Guarantee],
    current: Mapping[tuple[str, str], NodeLayout],
    budget: _Budget,
    method: Method,
    metrics_only: bool = False,
) -> tuple[list[PoolResult], list[Diagnostic]]:
    diags: list[Diagnostic] = []
    started = time.perf_counter()
    items = build_demand(policy, cluster, catalog)
    if method == "exact":
        outcome = _exact(policy, catalog, cluster, items, guarantees, current, budget, metrics_only, diags)
    else:
        outcome = greedy_cluster(cluster, catalog, items, guarantees, current)
    elapsed = time.perf_counter() - started
    greedy_pools = set(outcome.unsolved) if method == "exact" else {p.name for p in cluster.pools}
    unmet_sev = Severity.ERROR if policy.partition.unmet_demand == "error" else Severity.WARNING
    diags.extend(_greedy_spread(policy, cluster, items, greedy_pools))
    if method == "exact" and not outcome.unsolved and not metrics_only:
        diags.extend(
            _spread_cost(policy, cluster, catalog, items, guarantees, current, outcome, budget, unmet_sev)
        )

    diags.extend(_guarantee_diagnostics(policy, cluster.name, guarantees, outcome))

    rows = _demand_rows(items, outcome.decisions)
    workloads = {w.name: w for w in policy.workloads if w.cluster == cluster.name}
    diags.extend(_unservable(items, workloads, cluster.name, unmet_sev))
    diags.extend(_unmet_diagnostics(rows, workloads, cluster.name, unmet_sev))

    results: list[PoolResult] = []
    for pool in sorted(cluster.pools, key=lambda p: p.name):
        result, more = _pool_result(cluster, pool, outcome, items, rows, current, elapsed, metrics_only)
        results.append(result)
        diags.extend(more)
    return results, diags


def _exact(
    policy: Policy,
    catalog: Catalog,
    cluster: Cluster,
    items: Sequence[DemandItem],
    guarantees: Sequence[Guarantee],
    current: Mapping[tuple[str, str], NodeLayout],
    budget: _Budget,
    metrics_only: bool,
    diags: list[Diagnostic],
) -> ClusterOutcome:
    """The exact solve of one cluster; pools it could not solve in time are laid out greedily
    (MIGC203, as is a level left unproven)."""
    outcome = solve_cluster(
        cluster,
        catalog,
        items,
        guarantees,
        current,
        budget.left(),
        _burst_limits(policy, cluster.name),
        policy.partition.objective,
        metrics_only=metrics_only,
    )
    if outcome.unsolved:
        why = (
            f"the {budget.total:g}s solver time limit ran out"
            if budget.left() <= 0.1
            else "HiGHS found no feasible point"
        )
        diags.append(
            at(
                "MIGC203",
                f"cluster {cluster.name}: {why} before pool(s) {', '.join(outcome.unsolved)} were "
                "solved; they are laid out by the greedy heuristic",
                cluster.span,
            )
        )
        _greedy_for_unsolved(outcome, cluster, catalog, items, guarantees, current)
    elif outcome.result is not None and not outcome.result.optimal:
        message = _unproven_message(cluster.name, outcome.result, budget)
        diags.append(at("MIGC203", message, cluster.span))
    return outcome


def _unservable(
    items: Sequence[DemandItem], workloads: Mapping[str, Workload], cluster: str, severity: Severity
) -> list[Diagnostic]:
    """MIGC202 for each workload no pool of the cluster can serve at all."""
    out: list[Diagnostic] = []
    for item in items:
        if item.options:
            continue
        for name, replicas in item.workloads:
            out.append(
                at(
                    "MIGC202",
                    f"workload {name} (tenant {item.tenant}): none of its {replicas} replica(s) can be "
                    f"served in cluster {cluster}: {item.reason}",
                    workloads[name].span,
                    severity=severity,
                )
            )
    return out


def _pool_result(
    cluster: Cluster,
    pool: NodePool,
    outcome: ClusterOutcome,
    items: Sequence[DemandItem],
    rows: Sequence[tuple[str, ServedDemand]],
    current: Mapping[tuple[str, str], NodeLayout],
    elapsed: float,
    metrics_only: bool,
) -> tuple[PoolResult, list[Diagnostic]]:
    """One pool's nodes (the decision assigned to them) and its result row."""
    dec = outcome.decisions[pool.name]
    pool_current = {node: lay for (pname, node), lay in current.items() if pname == pool.name}
    nodes = assign_pool(dec, pool_current)
    # a note, and the full solve of the same policy has already said it
    diags = [] if metrics_only else list(_invalid_current(dec, pool_current, cluster.name))
    demand = tuple(
        sorted(
            (r for (pname, r) in rows if pname == pool.name),
            key=lambda d: (d.tenant, d.workload, d.resource),
        )
    )
    result = PoolResult(
        cluster=cluster.name,
        pool=pool.name,
        gpu_model=pool.gpu_model,
        nodes=nodes,
        demand=demand,
        layout_counts=() if metrics_only else _layout_counts(nodes),
        optimal=dec.optimal,
        lower_bound_gpus=0.0 if metrics_only else lp_bound(dec, items),
        gpus_used=dec.gpus_used,
        solve_seconds=elapsed,
        reserved=tuple(sorted((t, r, c) for (t, r), c in dec.reserved.items())),
        spread=tuple(
            sorted((items[i].workloads[0][0], node, c) for (i, node), c in dec.spread_served.items())
        ),
    )
    return result, diags


class _Budget:
    """The solve's one wall-clock budget: its size and when it ends."""

    def __init__(self, total: float, deadline: float) -> None:
        self.total = total
        self.deadline = deadline

    def left(self) -> float:
        return max(0.0, self.deadline - time.perf_counter())


def _greedy_for_unsolved(
    outcome: ClusterOutcome,
    cluster: Cluster,
    catalog: Catalog,
    items: Sequence[DemandItem],
    guarantees: Sequence[Guarantee],
    current: Mapping[tuple[str, str], NodeLayout],
) -> None:
    """First-fit decreasing for the pools HiGHS left without a point; the solved ones are kept.

    Items of other components keep their index (so ``served`` keys stay valid) with no options.
    """
    names = set(outcome.unsolved)
    sub = dataclasses.replace(cluster, pools=tuple(p for p in cluster.pools if p.name in names))
    masked = [
        item if item.options and item.options[0].pool in names else dataclasses.replace(item, options=())
        for item in items
    ]
    gs = [g for g in guarantees if g.pools and g.pools[0] in names]
    part = greedy_cluster(sub, catalog, masked, gs, current)
    outcome.decisions.update(part.decisions)
    outcome.shortfall.update(part.shortfall)


def _served(items: Sequence[DemandItem], decisions: Mapping[str, PoolDecision]) -> dict[int, int]:
    out: dict[int, int] = {}
    for dec in decisions.values():
        for (i, _res), c in dec.served.items():
            out[i] = out.get(i, 0) + c
    return out


def _greedy_spread(
    policy: Policy, cluster: Cluster, items: Sequence[DemandItem], greedy_pools: set[str]
) -> list[Diagnostic]:
    """MIGC206 for each spread workload with a pool laid out by the greedy fallback: first-fit
    decreasing knows nothing of spread, so its placement is not known to comply."""
    out = []
    workloads = {w.name: w for w in policy.workloads}
    for item in items:
        if item.spread is None:
            continue
        pools = sorted({o.pool for o in item.options} & greedy_pools)
        if not pools:
            continue
        name = item.workloads[0][0]
        out.append(
            at(
                "MIGC206",
                f"workload {name} (cluster {cluster.name}): pool(s) {', '.join(pools)} were laid out by "
                f"the greedy fallback, which does not enforce spread ({item.spread.text()}); its replicas "
                "may not be spread as asked",
                workloads[name].span,
            )
        )
    return out


def _spread_cost(
    policy: Policy,
    cluster: Cluster,
    catalog: Catalog,
    items: Sequence[DemandItem],
    guarantees: Sequence[Guarantee],
    current: Mapping[tuple[str, str], NodeLayout],
    outcome: ClusterOutcome,
    budget: _Budget,
    severity: Severity,
) -> list[Diagnostic]:
    """MIGC205 when a spread workload is short of replicas that the fleet would serve without
    spread: spread is a hard constraint, so those replicas stay unserved (and MIGC201 counts them)
    rather than break it. Only then is the cluster solved again without any spread, to tell the
    cost of the spread from a plain lack of capacity."""
    served = _served(items, outcome.decisions)
    short = [
        i
        for i, item in enumerate(items)
        if item.spread is not None and item.options and served.get(i, 0) < item.replicas
    ]
    if not short:
        return []
    plain = [dataclasses.replace(item, spread=None) for item in items]
    free = solve_cluster(
        cluster,
        catalog,
        plain,
        guarantees,
        current,
        budget.left(),
        _burst_limits(policy, cluster.name),
        policy.partition.objective,
    )
    if free.unsolved or free.result is None or not free.result.optimal:
        return []
    without = _served(plain, free.decisions)
    workloads = {w.name: w for w in policy.workloads}
    out = []
    for i in short:
        item = items[i]
        spread = item.spread
        assert spread is not None
        got, could = served.get(i, 0), without.get(i, 0)
        if could <= got:
            continue
        name = item.workloads[0][0]
        out.append(
            at(
                "MIGC205",
                f"workload {name} (cluster {cluster.name}): its spread ({spread.text()}) holds {got} of its "
                f"{item.replicas} replicas; without the spread the fleet would serve {could}",
                workloads[name].span,
                severity=severity,
            )
        )
    return out


def _unproven_message(cluster: str, result: LexResult, budget: _Budget) -> str:
    """MIGC203's message, worded after what actually happened."""
    level = result.failed_level
    if result.cause == TIME_LIMIT:
        return (
            f"cluster {cluster}: the {budget.total:g}s solver time limit ran out while level '{level}' "
            "was being optimised; the plan keeps the best point found, which is feasible but may not "
            "be optimal from that level on"
        )
    return (
        f"cluster {cluster}: level '{level}' was not proven optimal ({result.cause}); the plan is "
        "feasible but may not be optimal from that level on"
    )


def _burst_limits(policy: Policy, cluster: str) -> dict[str, int]:
    """Per profile, the largest burst limit of a tenant with workloads in the cluster."""
    running = {w.tenant for w in policy.workloads if w.cluster == cluster}
    out: dict[str, int] = {}
    for t in policy.tenants:
        if t.name not in running:
            continue
        for name, count in t.burst.profiles:
            out[name] = max(out.get(name, 0), count)
    return dict(sorted(out.items()))


def _layout_counts(nodes: Sequence[NodeResult]) -> tuple[tuple[GpuLayout, int], ...]:
    counts: dict[GpuLayout, int] = {}  # tallied by object first, then merged by value
    for gpu, count in tally_by_object(nodes):
        counts[gpu] = counts.get(gpu, 0) + count
    return tuple(sorted(counts.items()))


def _demand_rows(
    items: Sequence[DemandItem], decisions: Mapping[str, PoolDecision]
) -> list[tuple[str, ServedDemand]]:
    """Per (pool, tenant, workload, resource): instances requested and served.

    A workload's unmet replicas are booked against its most preferred option (lowest rank, then
    pool and profile name) so every requested replica appears exactly once.
    """
    out: dict[tuple[str, str, str, str], list[int]] = {}
    tiers: dict[tuple[str, str, str, str], str] = {}
    for i, item in enumerate(items):
        if not item.options:
            continue
        got_by_opt: list[tuple[str, str, int]] = []
        for opt in item.options:
            dec = decisions.get(opt.pool)
            served = dec.served.get((i, opt.resource), 0) if dec is not None else 0
            if served:
                got_by_opt.append((opt.pool, opt.resource, served))
        total = sum(s for _, _, s in got_by_opt)
        first = min(item.options, key=lambda o: (o.rank, o.pool, o.resource))
        queue = list(got_by_opt)
        for name, wanted, got in split_served(item.workloads, total):
            need = got
            while need:
                pool, res, avail = queue[0]
                take = min(avail, need)
                key = (pool, item.tenant, name, res)
                row = out.setdefault(key, [0, 0])
                row[0] += take * item.size
                row[1] += take * item.size
                tiers[key] = item.tier
                need -= take
                if take == avail:
                    queue.pop(0)
                else:
                    queue[0] = (pool, res, avail - take)
            if wanted > got:
                key = (first.pool, item.tenant, name, first.resource)
                row = out.setdefault(key, [0, 0])
                row[0] += (wanted - got) * item.size
                tiers[key] = item.tier
    return [
        (
            pool,
            ServedDemand(
                tenant=tenant,
                workload=wl,
                resource=res,
                requested=req,
                served=srv,
                priority_tier=tiers[(pool, tenant, wl, res)],
            ),
        )
        for (pool, tenant, wl, res), (req, srv) in sorted(out.items())
    ]


def _unmet_diagnostics(
    rows: Sequence[tuple[str, ServedDemand]], workloads: Mapping[str, Workload], cluster: str, sev: Severity
) -> list[Diagnostic]:
    wanted: dict[str, int] = {}
    got: dict[str, int] = {}
    short: dict[str, list[str]] = {}
    for pool, row in rows:
        wanted[row.workload] = wanted.get(row.workload, 0) + row.requested
        got[row.workload] = got.get(row.workload, 0) + row.served
        if row.unmet:
            short.setdefault(row.workload, []).append(f"{row.unmet} x {row.resource} (pool {pool})")
    out = []
    by_tier: dict[str, list[str]] = {}
    for name in sorted(short):
        by_tier.setdefault(workloads[name].priority_tier, []).append(name)
    for tier, names in sorted(by_tier.items()):
        if len(names) > NAMES_SHOWN:  # one summary per tier: a long list helps no one
            out.append(_unmet_summary(tier, names, rows, workloads, cluster, sev, wanted, got))
    for name in sorted(short):
        w = workloads[name]
        if len(by_tier[w.priority_tier]) > NAMES_SHOWN:
            continue
        out.append(
            at(
                "MIGC201",
                f"workload {name} (tenant {w.tenant}, tier {w.priority_tier}) gets {got[name]} of "
                f"{wanted[name]} instance(s) in cluster {cluster}; unmet: {', '.join(short[name])}",
                w.span,
                severity=sev,
            )
        )
    return out


NAMES_SHOWN = 10  # longer lists of tenants are summarised ("… and 340 more")


def name_list(names: Sequence[str], limit: int = NAMES_SHOWN) -> str:
    """``a, b, c`` up to ``limit`` names, then ``… and N more``."""
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} … and {len(names) - limit} more"


def _guarantee_diagnostics(
    policy: Policy, cluster: str, guarantees: Sequence[Guarantee], outcome: ClusterOutcome
) -> list[Diagnostic]:
    """One MIGC200 per (cluster, resource) whose guarantees cannot all be held.

    It states the tenants' joint demand against the room the pools have next to the other
    guarantees, and the smallest set of tenants that cannot be held together: the largest
    guarantees, taken until they exceed that room (no smaller set of tenants does). It is
    reported at the tenant with the largest guarantee of that set.
    """
    out: list[Diagnostic] = []
    short_by_res: dict[str, int] = {}
    for (_, resource), short in outcome.shortfall.items():
        if short > 0:
            short_by_res[resource] = short_by_res.get(resource, 0) + short
    for resource in sorted(short_by_res):
        gs = sorted((g for g in guarantees if g.resource == resource), key=lambda g: (-g.amount, g.tenant))
        demand = sum(g.amount for g in gs)
        room = demand - short_by_res[resource]
        pools = sorted({p for g in gs for p in g.pools})
        alone = _max_alone(outcome.decisions, Guarantee("", resource, 0, tuple(pools)))
        what = "whole GPUs" if resource == WHOLE_GPU else f"x {resource}"
        where = f"(pools {', '.join(pools)} could hold at most {alone} on their own)"
        if len(gs) == 1:
            g = gs[0]
            message = (
                f"tenant {g.tenant}: guaranteed {g.amount} {what} in cluster {cluster} cannot be held: "
                f"next to the other guarantees there is room for {room} {where}"
            )
        else:
            core: list[Guarantee] = []
            for g in gs:
                core.append(g)
                if sum(c.amount for c in core) > room:
                    break
            named = [f"{g.tenant} ({g.amount})" for g in core]
            message = (
                f"{len(gs)} tenants are guaranteed {demand} {what} together in cluster {cluster}, but "
                f"next to the other guarantees there is room for {room} {where}: "
                f"{short_by_res[resource]} short; the smallest set of tenants that cannot be held "
                f"together ({len(core)}): {name_list(named)}"
            )
        first = policy.tenant(gs[0].tenant)
        out.append(at("MIGC200", message, first.span, severity=Severity.ERROR))
    return out


def _unmet_summary(
    tier: str,
    names: Sequence[str],
    rows: Sequence[tuple[str, ServedDemand]],
    workloads: Mapping[str, Workload],
    cluster: str,
    sev: Severity,
    wanted: Mapping[str, int],
    got: Mapping[str, int],
) -> Diagnostic:
    """MIGC201 for many workloads of one tier: totals per (resource, pool), then the workloads."""
    members = set(names)
    unmet: dict[tuple[str, str], int] = {}
    for pool, row in rows:
        if row.workload in members and row.unmet:
            unmet[(row.resource, pool)] = unmet.get((row.resource, pool), 0) + row.unmet
    what = ", ".join(f"{n} x {res} (pool {pool})" for (res, pool), n in sorted(unmet.items()))
    listed = [f"{n} ({got[n]}/{wanted[n]})" for n in names]
    return at(
        "MIGC201",
        f"{len(names)} workloads of tier {tier} get {sum(got[n] for n in names)} of "
        f"{sum(wanted[n] for n in names)} instance(s) in cluster {cluster}; unmet: {what}; "
        f"workloads (served/requested): {name_list(listed)}",
        workloads[names[0]].span,
        severity=sev,
    )


def _max_alone(decisions: Mapping[str, PoolDecision], g: Guarantee) -> int:
    total = 0
    for name in g.pools:
        dec = decisions.get(name)
        if dec is None:
            continue
        pool = dec.pool
        usable = pool.total_gpus - pool.reserve_whole_gpus - pool.reserve_whole_nodes * pool.gpus_per_node
        if g.resource == WHOLE_GPU:
            total += max(0, usable)
        elif dec.model is not None:
            prof = dec.model.profile(g.resource)
            total += max(0, usable) * (prof.max_count if prof is not None else 0)
    return total


def _invalid_current(dec: PoolDecision, current: Mapping[str, NodeLayout], cluster: str) -> list[Diagnostic]:
    out = []
    pool = dec.pool
    members = set(pool.node_names)
    model = dec.model
    fits: dict[GpuLayout, bool] = {}  # a fleet has few distinct layouts: check each once
    # and nodes of one deployed config share one layout tuple (compiler/current.py): judge it once
    judged: dict[int, tuple[NodeLayout, bool]] = {}
    for node in sorted(current):
        if node not in members:
            continue
        lay = current[node]
        hit = judged.get(id(lay))
        if hit is not None:
            bad = hit[1]
        else:
            bad = len(lay) != pool.gpus_per_node
            if not bad and model is not None:
                for g in lay:
                    if g.mig_enabled and g not in fits:
                        fits[g] = is_feasible(model, g.counts())
                bad = any(g.mig_enabled and not fits[g] for g in lay)
            judged[id(lay)] = (lay, bad)  # the tuple is kept, so its id is not reused
        if bad:
            out.append(
                at(
                    "MIGC204",
                    f"node {node} of pool {cluster}/{pool.name}: its deployed layout does not fit "
                    f"{pool.gpus_per_node} x {pool.gpu_model}; it will be re-laid",
                    pool.span,
                )
            )
    return out
