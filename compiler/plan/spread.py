"""Spread in the plan: each spread workload's served replicas per node and per failure domain, and
MIGC256 when one maintenance wave of a pool (``maxUnavailable`` nodes down at once, the ones holding
most of the workload first) would take more of its replicas than its spread lets one node hold."""

from __future__ import annotations

from collections.abc import Iterable

from compiler.diagnostics import Diagnostic, at
from compiler.model import Policy, Workload
from compiler.plan.data import SpreadRow
from compiler.solve.demand import node_labels
from compiler.solve.result import PoolResult, Solution


def most_per_node(w: Workload, served: int) -> int:
    """The most replicas one node may hold under the workload's spread: maxPerNode's cap, else
    what minNodes leaves for one node (every other of the minNodes nodes holds one)."""
    spread = w.spread
    assert spread is not None
    if spread.max_per_node.is_set:
        return spread.max_per_node.cap(served)
    return max(1, served - max(0, spread.min_nodes - 1))


def spread_rows(policy: Policy, solution: Solution) -> tuple[SpreadRow, ...]:
    """One row per workload with a spread, sorted by (cluster, workload)."""
    rows = []
    results_of: dict[str, list[PoolResult]] = {}
    for r in solution.pools:
        results_of.setdefault(r.cluster, []).append(r)
    for w in sorted(policy.workloads, key=lambda w: (w.cluster, w.name)):
        spread = w.spread
        if spread is None or w.need.hami is not None:
            continue
        pools = {p.name: p for p in policy.cluster(w.cluster).pools}
        results = results_of.get(w.cluster, [])
        per_pool: dict[str, int] = {}
        for r in results:
            for d in r.demand:
                if d.workload == w.name and d.served:
                    per_pool[r.pool] = per_pool.get(r.pool, 0) + d.served
        served = sum(per_pool.values())
        by_node = tuple(
            (r.pool, node, count) for r in results for name, node, count in r.spread if name == w.name
        )
        domains: dict[str, int] = {}
        if spread.topology_key:
            for pool_name, count in per_pool.items():
                value = node_labels(pools[pool_name]).get(spread.topology_key, "")
                domains[value] = domains.get(value, 0) + count
        waves = []
        if spread.per_node:
            for pool_name in sorted({p for p, _n, _c in by_node}):
                pool = pools[pool_name]
                counts = sorted((c for p, _n, c in by_node if p == pool_name), reverse=True)
                waves.append((pool_name, pool.max_unavailable, sum(counts[: pool.max_unavailable])))
        rows.append(
            SpreadRow(
                cluster=w.cluster,
                workload=w.name,
                spread=spread.text(),
                topology_key=spread.topology_key,
                requested=w.replicas,
                served=served,
                by_node=by_node,
                by_domain=tuple(sorted(domains.items())),
                most_per_node=most_per_node(w, served) if spread.per_node else 0,
                waves=tuple(waves),
            )
        )
    return tuple(rows)


def spread_warnings(policy: Policy, rows: Iterable[SpreadRow]) -> list[Diagnostic]:
    """MIGC256 per (workload, pool) whose worst maintenance wave removes more than one node may hold."""
    workloads = {w.name: w for w in policy.workloads}
    out = []
    for row in rows:
        span = workloads[row.workload].span
        for pool, unavailable, lost in row.waves:
            if lost <= row.most_per_node:
                continue
            out.append(
                at(
                    "MIGC256",
                    f"workload {row.workload} (cluster {row.cluster}): pool {pool}'s maxUnavailable "
                    f"{unavailable} lets one maintenance wave take down nodes holding {lost} of its "
                    f"{row.served} served replicas; its spread ({row.spread}) lets one node hold "
                    f"{row.most_per_node}",
                    span,
                )
            )
    return out


def spread_text(row: SpreadRow) -> str:
    """``18 of 18 served; per node h100-a 9, h100-b 9; per topology.kubernetes.io/zone east 4``."""
    parts = [f"{row.served} of {row.requested} served"]
    if row.by_node:
        parts.append("per node " + ", ".join(f"{node} {count}" for _p, node, count in row.by_node))
    if row.by_domain:
        parts.append(f"per {row.topology_key} " + ", ".join(f"{d or '(none)'} {c}" for d, c in row.by_domain))
    return "; ".join(parts)
