"""The plan as plain text (the default of ``migc plan``)."""

from __future__ import annotations

from compiler.plan.data import Plan
from compiler.plan.dra import dra_text
from compiler.plan.fairness import fairness_text
from compiler.plan.formatting import (
    capacity_changes,
    estimate_note,
    gpu_lines,
    money,
    pool_kind,
    pool_label,
    summary,
    tenant_changes,
    tenant_text,
)
from compiler.plan.hami import hami_text
from compiler.plan.overview import ALL_BALANCED, group_changes, node_names, summary_items, transition_text
from compiler.plan.spread import spread_text


def to_text(plan: Plan, *, detail: bool = False) -> str:
    """Summary first, then the node changes (grouped; per GPU with ``detail``), then the sections."""
    out = _summary(plan)
    if plan.has_changes:
        for cluster in plan.clusters:
            out += _cluster_changes(plan, cluster, detail)
        if detail:
            out += _capacity(plan) + _tenants(plan)
        out += _evictions(plan)
    out += _unmet(plan)
    out += fairness_text(plan)
    out += _spread(plan)
    if detail and plan.has_changes:
        out += _costs(plan)
    return "\n".join(out) + "\n" + hami_text(plan) + dra_text(plan.dra)


def _summary(plan: Plan) -> list[str]:
    out = [summary(plan)]
    for label, lines in summary_items(plan):
        out.append(f"  {label}:")
        out.extend(f"    {line}" for line in lines)
        if label.startswith("cost") and lines:
            out.append(f"    ({ALL_BALANCED})")
    return out


def _cluster_changes(plan: Plan, cluster: str, detail: bool) -> list[str]:
    """One cluster's changed nodes (per GPU with ``detail``, else grouped) and removed nodes."""
    changes = [c for c in plan.changes if c.cluster == cluster]
    removed = [r for r in plan.removed if r.cluster == cluster]
    if not changes and not removed:
        return []
    out = ["", f"cluster {cluster}"]
    if detail:
        for c in changes:
            sign = "+" if c.before is None else "~"
            out.append(f"  {sign} node {c.node} ({c.where}): {c.reason}")
            out.extend("      " + line for line in gpu_lines(c, pool_kind(plan, c.cluster, c.pool)))
    else:
        for group in group_changes(changes, plan.pool_kinds):
            sign = "+" if group.new else "~"
            what = (
                f"node {group.nodes[0]}"
                if len(group.nodes) == 1
                else f"{len(group.nodes)} nodes {node_names(group.nodes)}"
            )
            out.append(f"  {sign} {what} ({group.where}): {group.reason}")
            out.extend("      " + transition_text(group, move) for move in group.transitions)
    for r in removed:
        out.append(f"  - node {r.node} (pool {r.pool}): no longer in the policy; left as deployed")
    return out


def _capacity(plan: Plan) -> list[str]:
    caps = capacity_changes(plan)
    if not caps:
        return []
    out = ["", "capacity per pool (instances, before → after)"]
    for row in caps:
        out.append(
            f"  {row.cluster}/{row.pool} {pool_label(plan, row.cluster, row.pool, row.resource)}: "
            f"{row.before} → {row.after}"
        )
    return out


def _tenants(plan: Plan) -> list[str]:
    rows = tenant_changes(plan)
    if not rows:
        return []
    note = estimate_note(rows)
    out = ["", f"tenant capacity per pool (served of requested, before → after{note})"]
    for t in rows:
        label = pool_label(plan, t.cluster, t.pool, t.resource)
        out.append(f"  {t.cluster}/{t.pool} {t.tenant} {label}: {tenant_text(t)}")
    return out


def _evictions(plan: Plan) -> list[str]:
    if not plan.snapshot_given:
        return []
    if not plan.evictions:
        return ["", "expected evictions: none (no GPU pods on reconfigured nodes)"]
    out = ["", f"expected evictions ({len(plan.evictions)} GPU pods on reconfigured nodes)"]
    for e in plan.evictions:
        res = ", ".join(f"{k}={v}" for k, v in e.resources)
        out.append(f"  {e.node}: {e.namespace}/{e.pod} ({res})")
    return out


def _unmet(plan: Plan) -> list[str]:
    if not plan.unmet:
        return []
    out = ["", "unmet demand"]
    for u in plan.unmet:
        out.append(
            f"  {u.cluster}/{u.pool} {u.tenant}/{u.workload} ({u.priority_tier}): "
            f"{u.served} of {u.requested} {pool_label(plan, u.cluster, u.pool, u.resource)}"
        )
    return out


def _spread(plan: Plan) -> list[str]:
    if not plan.spread:
        return []
    out = ["", "spread (served replicas per node and per domain)"]
    for spread in plan.spread:
        out.append(f"  {spread.cluster}/{spread.workload} ({spread.spread}): {spread_text(spread)}")
    return out


def _costs(plan: Plan) -> list[str]:
    if not plan.costs:
        return []
    out = [
        "",
        "GPUs in use and cost per hour (before → after; GPU Operator all-balanced default)",
        f"  ({ALL_BALANCED})",
    ]
    for cost in plan.costs:
        out.append(
            f"  {cost.cluster}: {cost.gpus_before} → {cost.gpus_after} of {cost.gpus_total} GPUs, "
            f"{money(cost.per_hour_before)} → {money(cost.per_hour_after)}; all-balanced: "
            f"{cost.gpus_balanced} GPUs, {money(cost.per_hour_balanced)}, "
            f"{cost.unmet_balanced} demanded instances unserved"
        )
    return out
