"""Build a :class:`Plan`: the diff of a :class:`Solution` against what is deployed.

What each tenant was served before comes from the CapacityReport the previous render wrote next
to its assignment (:func:`compiler.current.read_capacity`), so it reflects the demand that was in
force then. Where there is none (older output, or one that does not match the deployed assignment)
it is estimated, and labelled so: the deployed layout is served the *new* demand greedily (higher
priority tiers first, most constrained workloads first, each in its preference order).
"GPUs in use" counts GPUs that carry at least one instance serving demand; cost = GPUs in use ×
the pool's $/GPU-hour from the policy's ``pricing``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from compiler.catalog import Catalog, GpuModel
from compiler.current import RecordedCapacity
from compiler.formatting import layout_counts
from compiler.model import WHOLE_GPU, Cluster, CurrentState, GpuLayout, NodeLayout, NodePool, Policy
from compiler.plan.data import CapacityRow, Cost, NodeChange, Plan, RemovedNode, SpreadRow, TenantRow, Unmet
from compiler.plan.dra import dra_pools
from compiler.plan.fairness import fair_tiers
from compiler.plan.hami import hami_requests
from compiler.plan.snapshot import evictions_on
from compiler.plan.spread import spread_rows
from compiler.solve.demand import DemandItem, build_demand
from compiler.solve.result import PoolResult, Solution


def _pool_of(policy: Policy, cluster: str, pool: str) -> NodePool | None:
    for c in policy.clusters:
        if c.name == cluster:
            for p in c.pools:
                if p.name == pool:
                    return p
    return None


def _delta_text(before: Mapping[str, int], after: Mapping[str, int]) -> str:
    parts = []
    for resource in sorted(set(before) | set(after)):
        diff = after.get(resource, 0) - before.get(resource, 0)
        if diff:
            label = "whole GPUs" if resource == WHOLE_GPU else resource
            parts.append(f"{diff:+d} {label}")
    return ", ".join(parts)


def _serve(
    items: Sequence[DemandItem], capacity: Mapping[tuple[str, str], int]
) -> dict[tuple[str, str, str], int]:
    """Greedy estimate of what ``capacity`` ((pool, resource) → units) serves: higher tiers first.

    Each demand item takes its options in preference order (as the solver lists them), so a
    workload counts as served wherever the deployed layout could have run it. Units are instances
    (MIG), GPUs (whole) or shares (time-sliced), as in :class:`ServedDemand`. Returns
    ``(tenant, pool, resource) → units``.
    """
    left = dict(capacity)
    out: dict[tuple[str, str, str], int] = {}
    # Within a tier the most constrained items go first, so a flexible workload does not take the
    # only capacity a pinned one could use.
    for item in sorted(items, key=lambda i: (-i.tier_value, len(i.options), i.tenant, i.workloads, i.kind)):
        unit = 1 if item.kind == "mig" else max(1, item.size)
        remaining = item.replicas
        for option in item.options:
            if remaining <= 0:
                break
            key = (option.pool, option.resource)
            take = min(remaining, left.get(key, 0) // unit)
            if take > 0:
                left[key] -= take * unit
                served_key = (item.tenant, option.pool, option.resource)
                out[served_key] = out.get(served_key, 0) + take * unit
                remaining -= take
    return out


def _requested_units(items: Sequence[DemandItem]) -> int:
    return sum(i.replicas * (1 if i.kind == "mig" else max(1, i.size)) for i in items)


def _pool_served(served: Mapping[tuple[str, str, str], int], pool: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for (_, p, resource), n in served.items():
        if p == pool:
            out[resource] = out.get(resource, 0) + n
    return out


def gpus_in_use(
    layouts: Sequence[NodeLayout | None], served: Mapping[str, int], pool: NodePool | None
) -> int:
    """GPUs carrying at least one instance that serves demand, filling the fullest GPUs first.

    Per resource (in name order) the GPUs holding it are taken already-used first, then most
    instances first, then by index, until the served units are covered. A fleet has few distinct
    layouts: each GPU gets the number of its layout (nodes and GPUs are looked up once per
    object), and per resource the units each GPU holds are one array lookup, so an 80k-GPU pool
    costs one walk over its nodes and a few array passes per resource. A GPU holds one count of a
    resource, so it sits in exactly one "units held" group; within a group the GPUs are taken in
    index order, which is what counting the first ``ceil(need / units)`` candidates does.
    """
    shares = pool.shares_per_gpu if pool is not None else 1
    kinds: list[GpuLayout] = []
    kind_of: dict[int, int] = {}  # id(GpuLayout) -> its number
    node_kinds: dict[int, list[int]] = {}  # id(NodeLayout) -> its GPUs' numbers
    per_gpu: list[int] = []
    for layout in layouts:
        if not layout:
            continue
        ks = node_kinds.get(id(layout))
        if ks is None:
            ks = []
            for g in layout:
                k = kind_of.get(id(g))
                if k is None:
                    k = kind_of[id(g)] = len(kinds)
                    kinds.append(g)
                ks.append(k)
            node_kinds[id(layout)] = ks
        per_gpu.extend(ks)
    kind = np.array(per_gpu, dtype=np.int64)
    units: dict[str, np.ndarray] = {}  # resource -> units each layout number holds
    for k, g in enumerate(kinds):
        if not g.mig_enabled and shares:
            units.setdefault(WHOLE_GPU, np.zeros(len(kinds), dtype=np.int64))[k] = shares
        for name, count in g.profiles:
            if count and name != WHOLE_GPU:
                units.setdefault(name, np.zeros(len(kinds), dtype=np.int64))[k] = count
    used = np.zeros(len(per_gpu), dtype=bool)
    for resource in sorted(served):
        need = served[resource]
        held = units.get(resource)
        if held is None or need <= 0:
            continue
        holding = held[kind]
        levels = sorted((int(v) for v in np.unique(holding) if v > 0), reverse=True)
        groups = {have: np.flatnonzero(holding == have) for have in levels}
        for want_used in (True, False):  # already-used GPUs first, then fresh ones; most held first
            for have in levels:
                if need <= 0:
                    break
                members = groups[have]
                candidates = members[used[members] == want_used]
                take = min(len(candidates), -(-need // have))
                if take and not want_used:
                    used[candidates[:take]] = True
                need -= take * have
    return int(used.sum())


def _balanced(model: GpuModel | None, pool: NodePool) -> NodeLayout:
    if model is None or not pool.mig or not model.mig_capable or not model.balanced:
        return tuple(GpuLayout.whole() for _ in range(pool.gpus_per_node))
    return tuple(GpuLayout.of(dict(model.balanced)) for _ in range(pool.gpus_per_node))


def _price(policy: Policy, pool: NodePool) -> float | None:
    if pool.price_per_gpu_hour is not None:
        return pool.price_per_gpu_hour
    return dict(policy.partition.pricing).get(pool.gpu_model)


def _reserved(pool: NodePool | None) -> int:
    if pool is None:
        return 0
    return pool.reserve_whole_gpus + pool.reserve_whole_nodes * pool.gpus_per_node


def _demand_capacity(layouts: Sequence[NodeLayout | None], pool: NodePool | None) -> dict[str, int]:
    caps = layout_counts(layouts, pool)
    if WHOLE_GPU in caps and pool is not None:
        caps[WHOLE_GPU] = max(0, caps[WHOLE_GPU] - _reserved(pool) * pool.shares_per_gpu)
    return caps


_Layouts = tuple[list[NodeLayout | None], list[NodeLayout], list[NodeLayout | None]]


def build_plan(
    policy: Policy,
    solution: Solution,
    catalog: Catalog,
    current: CurrentState,
    *,
    pods: Sequence[Mapping[str, Any]] | None = None,
    solution_dict: Mapping[str, Any] | None = None,
    recorded: RecordedCapacity | None = None,
    spread: Sequence[SpreadRow] | None = None,
) -> Plan:
    """The plan of ``solution`` against ``current``; ``recorded`` gives the exact tenant "before";
    ``spread``: :func:`spread_rows` of the solution when the caller has them already."""
    b = _PlanBuilder(policy, catalog, current, recorded if recorded is not None else RecordedCapacity())
    for cluster in sorted(policy.clusters, key=lambda c: c.name):
        b.add_cluster(cluster, [r for r in solution.pools if r.cluster == cluster.name])
    return b.plan(solution, pods=pods, solution_dict=solution_dict, spread=spread)


def _change_reason(
    before: NodeLayout | None, after: NodeLayout, pool: str, delta: str
) -> tuple[tuple[int, ...], str]:
    """The GPUs of a node that change and why, in the words of the plan."""
    if before is None:
        return tuple(range(len(after))), "new node: no layout deployed yet"
    if len(before) != len(after):
        return tuple(range(len(after))), f"GPU count changed ({len(before)} → {len(after)})"
    if before == after:  # tuple equality tries identity first (a kept node)
        return (), ""
    changed = tuple(i for i, (b, a) in enumerate(zip(before, after, strict=True)) if b != a)
    reason = f"pool {pool} capacity {delta}" if delta else f"pool {pool} rebalanced (capacity unchanged)"
    return changed, reason


class _PlanBuilder:
    """Accumulates a plan cluster by cluster, pool by pool: node changes, capacity rows, unmet
    demand, tenant rows (requested/served, before and after) and the cost of each cluster."""

    def __init__(
        self, policy: Policy, catalog: Catalog, current: CurrentState, recorded: RecordedCapacity
    ) -> None:
        self.policy = policy
        self.catalog = catalog
        self.current = current
        self.deployed = current.as_dict()
        self.recorded = recorded
        self.changes: list[NodeChange] = []
        self.capacity: list[CapacityRow] = []
        self.unmet: list[Unmet] = []
        self.targets: set[tuple[str, str, str]] = set()
        self.costs: list[Cost] = []
        # (cluster, tenant, pool, resource) → [requested after, served before, served after, requested before]
        self.tenant_rows: dict[tuple[str, str, str, str], list[int]] = {}
        self.estimated_clusters: set[str] = set()
        self.nodes_total = 0

    def add_cluster(self, cluster: Cluster, results: list[PoolResult]) -> None:
        caps_before: dict[tuple[str, str], int] = {}
        caps_balanced: dict[tuple[str, str], int] = {}
        layouts: dict[str, _Layouts] = {}
        after_served: dict[tuple[str, str, str], int] = {}
        for result in sorted(results, key=lambda r: r.pool):
            layouts[result.pool] = self._add_pool(cluster, result, caps_before, caps_balanced, after_served)
        items = build_demand(self.policy, cluster, self.catalog)
        served_balanced = _serve(items, caps_balanced)
        served_before = self._served_before(cluster, items, caps_before, bool(results))
        if results:
            self.costs.append(
                self._cost(cluster, items, layouts, served_before, after_served, served_balanced)
            )

    def _add_pool(
        self,
        cluster: Cluster,
        result: PoolResult,
        caps_before: dict[tuple[str, str], int],
        caps_balanced: dict[tuple[str, str], int],
        after_served: dict[tuple[str, str, str], int],
    ) -> _Layouts:
        """One pool's layouts before / after / balanced, its capacity rows, node changes and demand rows."""
        pool = _pool_of(self.policy, result.cluster, result.pool)
        model = self.catalog.get(result.gpu_model)
        befores: list[NodeLayout | None] = []
        afters: list[NodeLayout] = []
        for node in result.nodes:
            key = (result.cluster, result.pool, node.name)
            self.targets.add(key)
            # a DynamicMIG pool has no deployed layout and never changes (solve/assign.py assign_pool)
            befores.append(node.current if pool is not None and pool.dra_dynamic else self.deployed.get(key))
            afters.append(node.gpus)
        self.nodes_total += len(result.nodes)
        balanced: list[NodeLayout | None] = (
            [_balanced(model, pool)] * len(result.nodes) if pool is not None else list(afters)
        )
        for resource, n in _demand_capacity(befores, pool).items():
            caps_before[(result.pool, resource)] = n
        for resource, n in _demand_capacity(balanced, pool).items():
            caps_balanced[(result.pool, resource)] = n
        cap_before = layout_counts(befores, pool)
        cap_after = layout_counts(afters, pool)
        for resource in sorted(set(cap_before) | set(cap_after)):
            self.capacity.append(
                CapacityRow(
                    result.cluster,
                    result.pool,
                    resource,
                    cap_before.get(resource, 0),
                    cap_after.get(resource, 0),
                )
            )
        delta = _delta_text(cap_before, cap_after)
        for node, before in zip(result.nodes, befores, strict=True):
            changed, reason = _change_reason(before, node.gpus, result.pool, delta)
            if changed:
                self.changes.append(
                    NodeChange(
                        result.cluster,
                        result.pool,
                        node.name,
                        result.gpu_model,
                        before,
                        node.gpus,
                        changed,
                        reason,
                        selector=pool is not None and pool.uses_selector,
                    )
                )
        self._add_demand_rows(cluster, result, after_served)
        return befores, afters, balanced

    def _add_demand_rows(
        self, cluster: Cluster, result: PoolResult, after_served: dict[tuple[str, str, str], int]
    ) -> None:
        for row in result.demand:
            key3 = (row.tenant, result.pool, row.resource)
            after_served[key3] = after_served.get(key3, 0) + row.served
            key4 = (cluster.name, row.tenant, result.pool, row.resource)
            acc = self.tenant_rows.setdefault(key4, [0, 0, 0, 0])
            acc[0] += row.requested
            acc[2] += row.served
            if row.unmet > 0:
                self.unmet.append(
                    Unmet(
                        result.cluster,
                        result.pool,
                        row.tenant,
                        row.workload,
                        row.resource,
                        row.requested,
                        row.served,
                        row.priority_tier,
                    )
                )

    def _served_before(
        self,
        cluster: Cluster,
        items: Sequence[DemandItem],
        caps_before: Mapping[tuple[str, str], int],
        has_results: bool,
    ) -> dict[tuple[str, str, str], int]:
        """What each tenant was served before: recorded by the previous render, else estimated."""
        if self.recorded.covers(cluster.name):
            was = self.recorded.by_pool(cluster.name)
            served_before = {key: served for key, (_, served) in was.items()}
            for (tenant, pool_name, resource), (requested, _) in was.items():
                key4 = (cluster.name, tenant, pool_name, resource)
                self.tenant_rows.setdefault(key4, [0, 0, 0, 0])[3] += requested
        else:
            served_before = _serve(items, caps_before)
            if has_results:
                self.estimated_clusters.add(cluster.name)
        for (tenant, pool_name, resource), n in served_before.items():
            self.tenant_rows.setdefault((cluster.name, tenant, pool_name, resource), [0, 0, 0, 0])[1] += n
        return served_before

    def _cost(
        self,
        cluster: Cluster,
        items: Sequence[DemandItem],
        layouts: Mapping[str, _Layouts],
        served_before: Mapping[tuple[str, str, str], int],
        after_served: Mapping[tuple[str, str, str], int],
        served_balanced: Mapping[tuple[str, str, str], int],
    ) -> Cost:
        """GPUs in use and $/h before, after and with the balanced layout."""
        gpus = {"total": 0, "before": 0, "after": 0, "balanced": 0}
        money = [0.0, 0.0, 0.0]
        unpriced: set[str] = set()
        for pool_name, (befores, afters, balanced) in sorted(layouts.items()):
            pool = _pool_of(self.policy, cluster.name, pool_name)
            used = (
                gpus_in_use(befores, _pool_served(served_before, pool_name), pool),
                gpus_in_use(afters, _pool_served(after_served, pool_name), pool),
                gpus_in_use(balanced, _pool_served(served_balanced, pool_name), pool),
            )
            gpus["total"] += sum(len(a) for a in afters)
            gpus["before"] += used[0]
            gpus["after"] += used[1]
            gpus["balanced"] += used[2]
            price = _price(self.policy, pool) if pool is not None else None
            if price is None:
                if any(used):
                    unpriced.add(pool_name)
                continue
            for i in range(3):
                money[i] += used[i] * price
        priced = not unpriced
        return Cost(
            cluster=cluster.name,
            gpus_total=gpus["total"],
            gpus_before=gpus["before"],
            gpus_after=gpus["after"],
            gpus_balanced=gpus["balanced"],
            unmet_balanced=_requested_units(items) - sum(served_balanced.values()),
            per_hour_before=round(money[0], 2) if priced else None,
            per_hour_after=round(money[1], 2) if priced else None,
            per_hour_balanced=round(money[2], 2) if priced else None,
            unpriced_pools=tuple(sorted(unpriced)),
        )

    def plan(
        self,
        solution: Solution,
        *,
        pods: Sequence[Mapping[str, Any]] | None,
        solution_dict: Mapping[str, Any] | None,
        spread: Sequence[SpreadRow] | None,
    ) -> Plan:
        policy = self.policy
        removed = tuple(RemovedNode(*key) for key in sorted(self.deployed) if key not in self.targets)
        changed_nodes = {(c.cluster, c.node) for c in self.changes}
        estimated = self.estimated_clusters
        tenants = tuple(
            TenantRow(
                c,
                t,
                r,
                v[0],
                v[1],
                v[2],
                pool=p,
                estimated=c in estimated,
                requested_before=None if c in estimated else v[3],
            )
            for (c, t, p, r), v in sorted(self.tenant_rows.items())
        )
        return Plan(
            clusters=tuple(sorted({p.cluster for p in solution.pools})),
            nodes_total=self.nodes_total,
            changes=tuple(self.changes),
            removed=removed,
            capacity=tuple(self.capacity),
            tenants=tenants,
            unmet=tuple(self.unmet),
            evictions=evictions_on(pods or (), changed_nodes),
            costs=tuple(self.costs),
            snapshot_given=pods is not None,
            solution=dict(solution_dict or {}),
            spread=tuple(spread) if spread is not None else spread_rows(policy, solution),
            hami=solution.hami,
            hami_requests=hami_requests(policy),
            dra=dra_pools(policy, solution, self.catalog, self.current),
            pool_kinds={
                (c.name, p.name): (p.mig, p.sharing.mode if p.is_shared else "none", p.shares_per_gpu)
                for c in policy.clusters
                for p in c.pools
            },
            fairness=fair_tiers(policy, solution),
        )
