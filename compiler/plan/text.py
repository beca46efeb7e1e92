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
    out = [summary(plan)]
    for label, lines in summary_items(plan):
        out.append(f"  {label}:")
        out.extend(f"    {line}" for line in lines)
        if label.startswith("cost") and lines:
            out.append(f"    ({ALL_BALANCED})")
    if plan.has_changes:
        for cluster in plan.clusters:
            changes = [c for c in plan.changes if c.cluster == cluster]
            removed = [r for r in plan.removed if r.cluster == cluster]
            if not changes and not removed:
                continue
            out.append("")
            out.append(f"cluster {cluster}")
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
        caps = capacity_changes(plan) if detail else []
        if caps:
            out.append("")
            out.append("capacity per pool (instances, before → after)")
            for row in caps:
                out.append(
                    f"  {row.cluster}/{row.pool} {pool_label(plan, row.cluster, row.pool, row.resource)}: "
                    f"{row.before} → {row.after}"
                )
        rows = tenant_changes(plan) if detail else []
        if rows:
            out.append("")
            note = estimate_note(rows)
            out.append(f"tenant capacity per pool (served of requested, before → after{note})")
            for t in rows:
                label = pool_label(plan, t.cluster, t.pool, t.resource)
                out.append(f"  {t.cluster}/{t.pool} {t.tenant} {label}: {tenant_text(t)}")
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
                f"{u.served} of {u.requested} {pool_label(plan, u.cluster, u.pool, u.resource)}"
            )
    out += fairness_text(plan)
    if plan.spread:
        out.append("")
        out.append("spread (served replicas per node and per domain)")
        for spread in plan.spread:
            out.append(f"  {spread.cluster}/{spread.workload} ({spread.spread}): {spread_text(spread)}")
    if detail and plan.has_changes and plan.costs:
        out.append("")
        out.append("GPUs in use and cost per hour (before → after; GPU Operator all-balanced default)")
        out.append(f"  ({ALL_BALANCED})")
        for cost in plan.costs:
            out.append(
                f"  {cost.cluster}: {cost.gpus_before} → {cost.gpus_after} of {cost.gpus_total} GPUs, "
                f"{money(cost.per_hour_before)} → {money(cost.per_hour_after)}; all-balanced: "
                f"{cost.gpus_balanced} GPUs, {money(cost.per_hour_balanced)}, "
                f"{cost.unmet_balanced} demanded instances unserved"
            )
    return "\n".join(out) + "\n" + hami_text(plan) + dra_text(plan.dra)
