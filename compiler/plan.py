"""What a change to the policy does to the fleet: the diff of a :class:`Solution` against what is deployed.

A :class:`Plan` answers the reviewer's questions, per cluster: which nodes get reconfigured and
why (per GPU, before → after), how capacity per pool and profile moves, what each tenant gets
before → after, which demand stays unmet, which GPU pods get evicted (given a cluster snapshot),
and what the GPUs in use cost per hour before, after, and under the GPU Operator's ``all-balanced``
default. It renders as text, markdown (a pull-request comment), JSON, and SVG slice pictures.

What each tenant was served before comes from the CapacityReport the previous render wrote next
to its assignment (:func:`compiler.current.read_capacity`), so it reflects the demand that was in
force then. Where there is none (older output, or one that does not match the deployed assignment)
it is estimated, and labelled so: the deployed layout is served the *new* demand greedily (higher
priority tiers first, most constrained workloads first, each in its preference order).
"GPUs in use" counts GPUs that carry at least one instance serving demand; cost = GPUs in use ×
the pool's $/GPU-hour from the policy's ``pricing``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from compiler.catalog import Catalog, GpuModel
from compiler.catalog.layouts import place
from compiler.current import RecordedCapacity
from compiler.diagnostics import Diagnostic, make
from compiler.model import WHOLE_GPU, CurrentState, GpuLayout, NodeLayout, NodePool, Policy
from compiler.solve.demand import DemandItem, build_demand
from compiler.solve.result import Solution

# ------------------------------------------------------------------------------------------ data


@dataclass(frozen=True)
class NodeChange:
    cluster: str
    pool: str
    node: str
    gpu_model: str
    before: NodeLayout | None  # None: nothing deployed yet
    after: NodeLayout
    changed_gpus: tuple[int, ...]
    reason: str
    selector: bool = False  # a placeholder for one of the nodes a selector pool matches

    @property
    def where(self) -> str:
        extra = "; selector pool: stands for any matching node" if self.selector else ""
        return f"pool {self.pool}, {self.gpu_model}{extra}"


@dataclass(frozen=True)
class RemovedNode:
    cluster: str
    pool: str
    node: str


@dataclass(frozen=True)
class CapacityRow:
    cluster: str
    pool: str
    resource: str  # profile name or "gpu"
    before: int
    after: int


@dataclass(frozen=True)
class TenantRow:
    cluster: str
    tenant: str
    resource: str
    requested: int  # asked of this pool in the new solution
    before: int  # served by the deployed layout: recorded, or estimated when ``estimated``
    after: int  # served by the target layout (solver)
    pool: str = ""
    estimated: bool = True
    requested_before: int | None = None  # asked of this pool when the deployed layout was rendered


@dataclass(frozen=True)
class Unmet:
    cluster: str
    pool: str
    tenant: str
    workload: str
    resource: str
    requested: int
    served: int
    priority_tier: str


@dataclass(frozen=True)
class Eviction:
    cluster: str
    node: str
    namespace: str
    pod: str
    resources: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Cost:
    cluster: str
    gpus_total: int
    gpus_before: int
    gpus_after: int
    gpus_balanced: int
    unmet_balanced: int  # demanded instances the all-balanced default could not serve
    per_hour_before: float | None
    per_hour_after: float | None
    per_hour_balanced: float | None
    unpriced_pools: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    clusters: tuple[str, ...]
    nodes_total: int
    changes: tuple[NodeChange, ...]
    removed: tuple[RemovedNode, ...]
    capacity: tuple[CapacityRow, ...]
    tenants: tuple[TenantRow, ...]
    unmet: tuple[Unmet, ...]
    evictions: tuple[Eviction, ...]
    costs: tuple[Cost, ...]
    snapshot_given: bool = False
    solution: Mapping[str, Any] = field(default_factory=dict)

    @property
    def has_changes(self) -> bool:
        return bool(self.changes or self.removed)


# ----------------------------------------------------------------------------------------- build


def _pool_of(policy: Policy, cluster: str, pool: str) -> NodePool | None:
    for c in policy.clusters:
        if c.name == cluster:
            for p in c.pools:
                if p.name == pool:
                    return p
    return None


def layout_counts(layouts: Iterable[NodeLayout | None], pool: NodePool | None) -> dict[str, int]:
    """Instances per resource of some nodes; whole GPUs under ``"gpu"`` (time-sliced: per replica)."""
    shares = (
        pool.sharing.replicas if (pool is not None and not pool.mig and pool.sharing.mode != "none") else 1
    )
    out: dict[str, int] = {}
    for layout in layouts:
        for gpu in layout or ():
            if not gpu.mig_enabled:
                out[WHOLE_GPU] = out.get(WHOLE_GPU, 0) + shares
            for name, count in gpu.profiles:
                out[name] = out.get(name, 0) + count
    return out


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
    """GPUs carrying at least one instance that serves demand, filling the fullest GPUs first."""
    gpus = [g for layout in layouts for g in (layout or ())]
    shares = (
        pool.sharing.replicas if (pool is not None and not pool.mig and pool.sharing.mode != "none") else 1
    )
    used = [False] * len(gpus)
    for resource in sorted(served):
        need = served[resource]
        holders = []
        for i, g in enumerate(gpus):
            have = (
                (shares if not g.mig_enabled else 0) if resource == WHOLE_GPU else g.counts().get(resource, 0)
            )
            if have:
                holders.append((not used[i], -have, i, have))
        for _, _, i, have in sorted(holders):
            if need <= 0:
                break
            used[i] = True
            need -= have
    return sum(used)


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
        shares = pool.sharing.replicas if (not pool.mig and pool.sharing.mode != "none") else 1
        caps[WHOLE_GPU] = max(0, caps[WHOLE_GPU] - _reserved(pool) * shares)
    return caps


def build_plan(
    policy: Policy,
    solution: Solution,
    catalog: Catalog,
    current: CurrentState,
    *,
    pods: Sequence[Mapping[str, Any]] | None = None,
    solution_dict: Mapping[str, Any] | None = None,
    recorded: RecordedCapacity | None = None,
) -> Plan:
    """The plan of ``solution`` against ``current``; ``recorded`` gives the exact tenant "before"."""
    deployed = current.as_dict()
    recorded = recorded if recorded is not None else RecordedCapacity()
    changes: list[NodeChange] = []
    capacity: list[CapacityRow] = []
    unmet: list[Unmet] = []
    targets: set[tuple[str, str, str]] = set()
    costs: list[Cost] = []
    # (cluster, tenant, pool, resource) → [requested after, served before, served after, requested before]
    tenant_rows: dict[tuple[str, str, str, str], list[int]] = {}
    estimated_clusters: set[str] = set()
    nodes_total = 0

    for cluster in sorted(policy.clusters, key=lambda c: c.name):
        results = [r for r in solution.pools if r.cluster == cluster.name]
        caps_before: dict[tuple[str, str], int] = {}
        caps_balanced: dict[tuple[str, str], int] = {}
        layouts: dict[str, tuple[list[NodeLayout | None], list[NodeLayout], list[NodeLayout | None]]] = {}
        after_served: dict[tuple[str, str, str], int] = {}
        for result in sorted(results, key=lambda r: r.pool):
            pool = _pool_of(policy, result.cluster, result.pool)
            model = catalog.get(result.gpu_model)
            befores: list[NodeLayout | None] = []
            afters: list[NodeLayout] = []
            for node in result.nodes:
                key = (result.cluster, result.pool, node.name)
                targets.add(key)
                befores.append(deployed.get(key))
                afters.append(node.gpus)
            nodes_total += len(result.nodes)
            balanced: list[NodeLayout | None] = (
                [_balanced(model, pool) for _ in result.nodes] if pool is not None else list(afters)
            )
            layouts[result.pool] = (befores, afters, balanced)
            for resource, n in _demand_capacity(befores, pool).items():
                caps_before[(result.pool, resource)] = n
            for resource, n in _demand_capacity(balanced, pool).items():
                caps_balanced[(result.pool, resource)] = n
            cap_before = layout_counts(befores, pool)
            cap_after = layout_counts(afters, pool)
            for resource in sorted(set(cap_before) | set(cap_after)):
                capacity.append(
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
                if before is None:
                    changed = tuple(range(len(node.gpus)))
                    reason = "new node: no layout deployed yet"
                elif len(before) != len(node.gpus):
                    changed = tuple(range(len(node.gpus)))
                    reason = f"GPU count changed ({len(before)} → {len(node.gpus)})"
                else:
                    changed = tuple(
                        i for i, (b, a) in enumerate(zip(before, node.gpus, strict=True)) if b != a
                    )
                    reason = (
                        f"pool {result.pool} capacity {delta}"
                        if delta
                        else f"pool {result.pool} rebalanced (capacity unchanged)"
                    )
                if changed:
                    changes.append(
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
            for row in result.demand:
                key3 = (row.tenant, result.pool, row.resource)
                after_served[key3] = after_served.get(key3, 0) + row.served
                key4 = (cluster.name, row.tenant, result.pool, row.resource)
                acc = tenant_rows.setdefault(key4, [0, 0, 0, 0])
                acc[0] += row.requested
                acc[2] += row.served
                if row.unmet > 0:
                    unmet.append(
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

        items = build_demand(policy, cluster, catalog)
        served_balanced = _serve(items, caps_balanced)
        if recorded.covers(cluster.name):
            was = recorded.by_pool(cluster.name)
            served_before = {key: served for key, (_, served) in was.items()}
            for (tenant, pool_name, resource), (requested, _) in was.items():
                key4 = (cluster.name, tenant, pool_name, resource)
                tenant_rows.setdefault(key4, [0, 0, 0, 0])[3] += requested
        else:
            served_before = _serve(items, caps_before)
            if results:
                estimated_clusters.add(cluster.name)
        for (tenant, pool_name, resource), n in served_before.items():
            tenant_rows.setdefault((cluster.name, tenant, pool_name, resource), [0, 0, 0, 0])[1] += n

        gpus = {"total": 0, "before": 0, "after": 0, "balanced": 0}
        money = [0.0, 0.0, 0.0]
        unpriced: set[str] = set()
        for pool_name, (befores, afters, balanced) in sorted(layouts.items()):
            pool = _pool_of(policy, cluster.name, pool_name)
            used = (
                gpus_in_use(befores, _pool_served(served_before, pool_name), pool),
                gpus_in_use(afters, _pool_served(after_served, pool_name), pool),
                gpus_in_use(balanced, _pool_served(served_balanced, pool_name), pool),
            )
            gpus["total"] += sum(len(a) for a in afters)
            gpus["before"] += used[0]
            gpus["after"] += used[1]
            gpus["balanced"] += used[2]
            price = _price(policy, pool) if pool is not None else None
            if price is None:
                if any(used):
                    unpriced.add(pool_name)
                continue
            for i in range(3):
                money[i] += used[i] * price
        if results:
            priced = not unpriced
            costs.append(
                Cost(
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
            )

    removed = tuple(RemovedNode(*key) for key in sorted(deployed) if key not in targets)
    changed_nodes = {(c.cluster, c.node) for c in changes}
    tenants = tuple(
        TenantRow(
            c,
            t,
            r,
            v[0],
            v[1],
            v[2],
            pool=p,
            estimated=c in estimated_clusters,
            requested_before=None if c in estimated_clusters else v[3],
        )
        for (c, t, p, r), v in sorted(tenant_rows.items())
    )
    return Plan(
        clusters=tuple(sorted({p.cluster for p in solution.pools})),
        nodes_total=nodes_total,
        changes=tuple(changes),
        removed=removed,
        capacity=tuple(capacity),
        tenants=tenants,
        unmet=tuple(unmet),
        evictions=_evictions(pods or (), changed_nodes),
        costs=tuple(costs),
        snapshot_given=pods is not None,
        solution=dict(solution_dict or {}),
    )


# -------------------------------------------------------------------------------------- snapshot


class SnapshotError(ValueError):
    pass


def parse_snapshot(text: str) -> list[dict[str, Any]]:
    """Pods from ``kubectl get pods -A -o json`` or ``{"pods": [{namespace, name, node, resources}]}``.

    Returns ``[{"namespace", "name", "node", "resources": {name: count}}]`` for pods that hold GPU
    resources and have not finished.
    """
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SnapshotError(f"not JSON: {exc}") from exc
    out: list[dict[str, Any]] = []
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        for item in data["items"]:
            if not isinstance(item, dict):
                continue
            meta = item.get("metadata") or {}
            spec = item.get("spec") or {}
            phase = (item.get("status") or {}).get("phase", "")
            if phase in ("Succeeded", "Failed") or not spec.get("nodeName"):
                continue
            resources: dict[str, int] = {}
            for container in spec.get("containers") or []:
                res = container.get("resources") or {}
                amounts = {**(res.get("requests") or {}), **(res.get("limits") or {})}
                for name, value in amounts.items():
                    if str(name).startswith("nvidia.com/"):
                        try:
                            resources[name] = resources.get(name, 0) + int(str(value))
                        except ValueError:
                            continue
            if resources:
                out.append(
                    {
                        "namespace": str(meta.get("namespace", "")),
                        "name": str(meta.get("name", "")),
                        "node": str(spec["nodeName"]),
                        "resources": resources,
                    }
                )
        return out
    if isinstance(data, dict) and isinstance(data.get("pods"), list):
        for pod in data["pods"]:
            if not isinstance(pod, dict) or "node" not in pod or "name" not in pod:
                raise SnapshotError("every entry of 'pods' needs 'name' and 'node'")
            resources = {
                str(k): int(v)
                for k, v in (pod.get("resources") or {}).items()
                if str(k).startswith("nvidia.com/")
            }
            if resources:
                out.append(
                    {
                        "namespace": str(pod.get("namespace", "")),
                        "name": str(pod["name"]),
                        "node": str(pod["node"]),
                        "resources": resources,
                    }
                )
        return out
    raise SnapshotError("expected a Kubernetes List with 'items' or an object with 'pods'")


def _evictions(pods: Iterable[Mapping[str, Any]], changed: set[tuple[str, str]]) -> tuple[Eviction, ...]:
    by_node: dict[str, str] = {}
    for cluster, node in changed:
        by_node.setdefault(node, cluster)
    out = []
    for pod in pods:
        node = str(pod.get("node", ""))
        if node in by_node:
            res = pod.get("resources") or {}
            out.append(
                Eviction(
                    by_node[node],
                    node,
                    str(pod.get("namespace", "")),
                    str(pod.get("name", "")),
                    tuple(sorted((str(k), int(v)) for k, v in res.items())),
                )
            )
    return tuple(sorted(out, key=lambda e: (e.cluster, e.node, e.namespace, e.pod)))


def snapshot_diagnostic(path: str, exc: Exception) -> Diagnostic:
    return make("MIGC304", f"cannot read the cluster snapshot: {exc}", file=path)


# ------------------------------------------------------------------------------------- formatting


def gpu_text(gpu: GpuLayout | None) -> str:
    if gpu is None:
        return "(not deployed)"
    if not gpu.mig_enabled:
        return "whole GPU (MIG off)"
    if not gpu.profiles:
        return "MIG on, no instances"
    return " + ".join(f"{c}x {n}" for n, c in sorted(gpu.profiles, key=_size_key))


def _size_key(item: tuple[str, int]) -> tuple[int, str]:
    """Larger instances first: ``7g.80gb`` before ``3g.40gb`` before ``1g.10gb``."""
    head = item[0].split("g", 1)[0]
    return (-int(head) if head.isdigit() else 0, item[0])


def _resource_label(resource: str) -> str:
    return "whole GPU" if resource == WHOLE_GPU else resource


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}/h"


def _summary(plan: Plan) -> str:
    if not plan.has_changes:
        return f"No changes: all {plan.nodes_total} nodes already carry their target layout."
    gpus = sum(len(c.changed_gpus) for c in plan.changes)
    extra = f", {len(plan.removed)} deployed nodes no longer in the policy" if plan.removed else ""
    return (
        f"{len(plan.changes)} of {plan.nodes_total} nodes change ({gpus} GPUs reconfigured){extra} "
        f"in {len(plan.clusters)} cluster(s)."
    )


def _gpu_lines(change: NodeChange) -> list[str]:
    lines = []
    for i in change.changed_gpus:
        before = change.before[i] if change.before is not None and i < len(change.before) else None
        lines.append(f"gpu {i}: {gpu_text(before)} → {gpu_text(change.after[i])}")
    return lines


def _capacity_changes(plan: Plan) -> list[CapacityRow]:
    return [r for r in plan.capacity if r.before != r.after]


def _tenant_changes(plan: Plan) -> list[TenantRow]:
    return [r for r in plan.tenants if r.before != r.after]


def _estimate_note(rows: Sequence[TenantRow]) -> str:
    """Which "before" figures are estimates rather than the recorded ones."""
    estimated = sorted({r.cluster for r in rows if r.estimated})
    if not estimated:
        return ""
    if len(estimated) == len({r.cluster for r in rows}):
        return "; before is estimated"
    return f"; before is estimated in {', '.join(estimated)}"


def _tenant_text(row: TenantRow) -> str:
    if row.requested_before is None:
        return f"{row.before} → {row.after} of {row.requested}"
    return f"{row.before} of {row.requested_before} → {row.after} of {row.requested}"


def _requested_cell(row: TenantRow) -> str:
    if row.requested_before is None or row.requested_before == row.requested:
        return str(row.requested)
    return f"{row.requested_before} → {row.requested}"


def to_text(plan: Plan) -> str:
    out = [_summary(plan)]
    if plan.has_changes:
        for cluster in plan.clusters:
            changes = [c for c in plan.changes if c.cluster == cluster]
            removed = [r for r in plan.removed if r.cluster == cluster]
            if not changes and not removed:
                continue
            out.append("")
            out.append(f"cluster {cluster}")
            for c in changes:
                sign = "+" if c.before is None else "~"
                out.append(f"  {sign} node {c.node} ({c.where}): {c.reason}")
                out.extend("      " + line for line in _gpu_lines(c))
            for r in removed:
                out.append(f"  - node {r.node} (pool {r.pool}): no longer in the policy; left as deployed")
        caps = _capacity_changes(plan)
        if caps:
            out.append("")
            out.append("capacity per pool (instances, before → after)")
            for row in caps:
                out.append(
                    f"  {row.cluster}/{row.pool} {_resource_label(row.resource)}: {row.before} → {row.after}"
                )
        rows = _tenant_changes(plan)
        if rows:
            out.append("")
            note = _estimate_note(rows)
            out.append(f"tenant capacity per pool (served of requested, before → after{note})")
            for t in rows:
                label = _resource_label(t.resource)
                out.append(f"  {t.cluster}/{t.pool} {t.tenant} {label}: {_tenant_text(t)}")
        if plan.snapshot_given:
            out.append("")
            if plan.evictions:
                out.append(f"expected evictions ({len(plan.evictions)} GPU pods on reconfigured nodes)")
                for e in plan.evictions:
                    res = ", ".join(f"{k}={v}" for k, v in e.resources)
                    out.append(f"  {e.node}: {e.namespace}/{e.pod} ({res})")
            else:
                out.append("expected evictions: none (no GPU pods on reconfigured nodes)")
    if plan.unmet:
        out.append("")
        out.append("unmet demand")
        for u in plan.unmet:
            out.append(
                f"  {u.cluster}/{u.pool} {u.tenant}/{u.workload} ({u.priority_tier}): "
                f"{u.served} of {u.requested} {_resource_label(u.resource)}"
            )
    if plan.has_changes and plan.costs:
        out.append("")
        out.append("GPUs in use and cost per hour (before → after; GPU Operator all-balanced default)")
        for cost in plan.costs:
            out.append(
                f"  {cost.cluster}: {cost.gpus_before} → {cost.gpus_after} of {cost.gpus_total} GPUs, "
                f"{_money(cost.per_hour_before)} → {_money(cost.per_hour_after)}; all-balanced: "
                f"{cost.gpus_balanced} GPUs, {_money(cost.per_hour_balanced)}, "
                f"{cost.unmet_balanced} demanded instances unserved"
            )
    return "\n".join(out) + "\n"


def svg_name(change: NodeChange) -> str:
    return f"{change.cluster}-{change.node}.svg"


def to_markdown(plan: Plan, svg_dir: str | None = None) -> str:
    out = ["## migc plan", "", _summary(plan)]
    if plan.has_changes:
        out += ["", "### Nodes to reconfigure", ""]
        out += ["| cluster | pool | node | GPU | before | after |", "|---|---|---|---|---|---|"]
        for c in plan.changes:
            for i in c.changed_gpus:
                before = c.before[i] if c.before is not None and i < len(c.before) else None
                out.append(
                    f"| {c.cluster} | {c.pool} | `{c.node}` | {i} | {gpu_text(before)} "
                    f"| {gpu_text(c.after[i])} |"
                )
        for r in plan.removed:
            out.append(f"| {r.cluster} | {r.pool} | `{r.node}` | all | deployed | removed from policy |")
        out += ["", "Why:", ""]
        for c in plan.changes:
            out.append(f"- `{c.node}`{' (selector pool placeholder)' if c.selector else ''}: {c.reason}")
        if svg_dir is not None:
            out += ["", "<details><summary>Slice pictures</summary>", ""]
            for c in plan.changes:
                out.append(f"![{c.node}]({svg_dir.rstrip('/')}/{svg_name(c)})")
            out += ["", "</details>"]
        caps = _capacity_changes(plan)
        if caps:
            out += ["", "### Capacity per pool", "", "| cluster | pool | resource | before | after |"]
            out.append("|---|---|---|---:|---:|")
            for row in caps:
                out.append(
                    f"| {row.cluster} | {row.pool} | {_resource_label(row.resource)} "
                    f"| {row.before} | {row.after} |"
                )
        rows = _tenant_changes(plan)
        if rows:
            out += ["", f"### Tenant capacity per pool (served of requested{_estimate_note(rows)})", ""]
            out += [
                "| cluster | pool | tenant | resource | before | after | requested |",
                "|---|---|---|---|---:|---:|---:|",
            ]
            for t in rows:
                out.append(
                    f"| {t.cluster} | {t.pool} | {t.tenant} | {_resource_label(t.resource)} | {t.before} "
                    f"| {t.after} | {_requested_cell(t)} |"
                )
        if plan.snapshot_given:
            out += ["", "### Expected evictions", ""]
            if plan.evictions:
                out += ["| node | pod | GPU resources |", "|---|---|---|"]
                for e in plan.evictions:
                    res = ", ".join(f"{k}={v}" for k, v in e.resources)
                    out.append(f"| `{e.node}` | `{e.namespace}/{e.pod}` | {res} |")
            else:
                out.append("None: no GPU pods run on the reconfigured nodes.")
    if plan.unmet:
        out += [
            "",
            "### Unmet demand",
            "",
            "| cluster | pool | tenant | workload | tier | served | requested |",
        ]
        out.append("|---|---|---|---|---|---:|---:|")
        for u in plan.unmet:
            out.append(
                f"| {u.cluster} | {u.pool} | {u.tenant} | {u.workload} | {u.priority_tier} | {u.served} "
                f"| {u.requested} {_resource_label(u.resource)} |"
            )
    if plan.has_changes and plan.costs:
        out += ["", "### GPUs in use and cost per hour", ""]
        out += ["| cluster | before | after | all-balanced default |", "|---|---:|---:|---:|"]
        for cost in plan.costs:
            out.append(
                f"| {cost.cluster} | {cost.gpus_before} GPUs, {_money(cost.per_hour_before)} "
                f"| {cost.gpus_after} GPUs, {_money(cost.per_hour_after)} "
                f"| {cost.gpus_balanced} GPUs, {_money(cost.per_hour_balanced)} "
                f"({cost.unmet_balanced} instances unserved) |"
            )
    return "\n".join(out) + "\n"


def _layout_json(layout: NodeLayout | None) -> list[dict[str, Any]] | None:
    if layout is None:
        return None
    return [{"migEnabled": g.mig_enabled, "profiles": dict(g.profiles)} for g in layout]


def to_json(plan: Plan) -> str:
    doc = {
        "summary": _summary(plan),
        "hasChanges": plan.has_changes,
        "nodesTotal": plan.nodes_total,
        "changes": [
            {
                "cluster": c.cluster,
                "pool": c.pool,
                "node": c.node,
                "gpuModel": c.gpu_model,
                "reason": c.reason,
                "changedGpus": list(c.changed_gpus),
                "before": _layout_json(c.before),
                "after": _layout_json(c.after),
            }
            for c in plan.changes
        ],
        "removed": [{"cluster": r.cluster, "pool": r.pool, "node": r.node} for r in plan.removed],
        "capacity": [vars(r) for r in plan.capacity],
        "tenants": [vars(r) for r in plan.tenants],
        "unmet": [vars(u) for u in plan.unmet],
        "evictions": None
        if not plan.snapshot_given
        else [
            {
                "cluster": e.cluster,
                "node": e.node,
                "namespace": e.namespace,
                "pod": e.pod,
                "resources": dict(e.resources),
            }
            for e in plan.evictions
        ],
        "costs": [{**vars(c), "unpriced_pools": list(c.unpriced_pools)} for c in plan.costs],
        "solution": plan.solution,
    }
    return json.dumps(doc, sort_keys=True, indent=2) + "\n"


# ------------------------------------------------------------------------------------------- SVG

_PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)  # fmt: skip
_CELL = 34
_ROW = 26
_LABEL = 52


def _colour(model: GpuModel | None, profile: str) -> str:
    names = [p.name for p in model.profiles] if model is not None else []
    index = names.index(profile) if profile in names else sum(map(ord, profile))
    return _PALETTE[index % len(_PALETTE)]


def _bar(model: GpuModel | None, gpu: GpuLayout | None, x: int, y: int, slots: int) -> list[str]:
    width = slots * _CELL
    parts = [f'<rect x="{x}" y="{y}" width="{width}" height="{_ROW - 6}" fill="#f4f4f4" stroke="#999"/>']
    if gpu is None or not gpu.mig_enabled or not gpu.profiles:
        text = "not deployed" if gpu is None else ("whole GPU" if not gpu.mig_enabled else "MIG on, empty")
        fill = "#d0d0d0" if gpu is not None and not gpu.mig_enabled else "#f4f4f4"
        parts.append(
            f'<rect x="{x}" y="{y}" width="{width}" height="{_ROW - 6}" fill="{fill}" stroke="#999"/>'
        )
        parts.append(f'<text x="{x + width // 2}" y="{y + 14}" text-anchor="middle">{escape(text)}</text>')
        return parts
    witness = place(model, gpu.counts()) if model is not None else None
    placed: list[tuple[str, int, int]] = list(witness) if witness is not None else []
    if (
        witness is None
    ):  # not provable on this model: draw side by side so the picture still says what it holds
        start = 0
        for name, count in gpu.profiles:
            prof = model.profile(name) if model is not None else None
            size = prof.memory_slices if prof is not None else 1
            for _ in range(count):
                placed.append((name, start, size))
                start += size
    for name, start, size in placed:
        px = x + start * _CELL
        parts.append(
            f'<rect x="{px + 1}" y="{y + 1}" width="{size * _CELL - 2}" height="{_ROW - 8}" '
            f'fill="{_colour(model, name)}" rx="3"><title>{escape(name)} at slice {start}</title></rect>'
        )
        parts.append(
            f'<text x="{px + size * _CELL // 2}" y="{y + 14}" text-anchor="middle" fill="#fff" '
            f'font-size="{9 if size == 1 else 11}">{escape(name)}</text>'
        )
    return parts


def to_svg(change: NodeChange, model: GpuModel | None) -> str:
    """One node: a row per GPU, before and after side by side, a column per memory slice."""
    slots = model.memory_slices if model is not None and model.memory_slices else 8
    panel = slots * _CELL
    width = _LABEL + 2 * panel + 40
    rows = len(change.after)
    used = sorted(
        {n for layout in (change.before or (), change.after) for gpu in layout for n, _ in gpu.profiles},
        key=lambda n: _size_key((n, 0)),
    )
    legend_y = 48 + rows * _ROW + 14
    height = legend_y + (22 if used else 0)
    left, right = _LABEL, _LABEL + panel + 30
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(change.cluster)}/{escape(change.node)}: MIG layout before and after</title>",
        f'<text x="4" y="16" font-size="13" font-weight="bold">{escape(change.node)} '
        f"({escape(change.pool)}, {escape(change.gpu_model)})</text>",
        f'<text x="{left}" y="40" font-weight="bold">before</text>',
        f'<text x="{right}" y="40" font-weight="bold">after</text>',
    ]
    for i, after in enumerate(change.after):
        y = 48 + i * _ROW
        before = change.before[i] if change.before is not None and i < len(change.before) else None
        marker = " *" if i in change.changed_gpus else ""
        body.append(f'<text x="4" y="{y + 14}">GPU {i}{marker}</text>')
        body.extend(_bar(model, before, left, y, slots))
        body.extend(_bar(model, after, right, y, slots))
    note = "* changed GPU; one column per memory slice"
    body.append(f'<text x="4" y="{legend_y - 2}" fill="#555">{note}</text>')
    x = 4
    for name in used:
        colour = _colour(model, name)
        body.append(f'<rect x="{x}" y="{legend_y + 4}" width="12" height="12" fill="{colour}"/>')
        body.append(f'<text x="{x + 16}" y="{legend_y + 14}">{escape(name)}</text>')
        x += 22 + 7 * len(name)
    body.append("</svg>")
    return "\n".join(body) + "\n"


def write_svgs(plan: Plan, catalog: Catalog, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for change in plan.changes:
        path = directory / svg_name(change)
        path.write_text(to_svg(change, catalog.get(change.gpu_model)), encoding="utf-8")
        written.append(path)
    return written
