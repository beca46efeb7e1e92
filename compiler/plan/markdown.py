"""The plan as markdown, for a pull-request comment."""

from __future__ import annotations

from compiler.plan.data import Plan
from compiler.plan.formatting import (
    capacity_changes,
    estimate_note,
    gpu_text,
    money,
    requested_cell,
    resource_label,
    summary,
    tenant_changes,
)
from compiler.plan.svg import svg_name


def to_markdown(plan: Plan, svg_dir: str | None = None, *, detail: bool = False) -> str:
    out = ["## migc plan", "", summary(plan)]
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
        caps = capacity_changes(plan)
        if caps:
            out += ["", "### Capacity per pool", "", "| cluster | pool | resource | before | after |"]
            out.append("|---|---|---|---:|---:|")
            for row in caps:
                out.append(
                    f"| {row.cluster} | {row.pool} | {resource_label(row.resource)} "
                    f"| {row.before} | {row.after} |"
                )
        rows = tenant_changes(plan)
        if rows:
            out += ["", f"### Tenant capacity per pool (served of requested{estimate_note(rows)})", ""]
            out += [
                "| cluster | pool | tenant | resource | before | after | requested |",
                "|---|---|---|---|---:|---:|---:|",
            ]
            for t in rows:
                out.append(
                    f"| {t.cluster} | {t.pool} | {t.tenant} | {resource_label(t.resource)} | {t.before} "
                    f"| {t.after} | {requested_cell(t)} |"
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
                f"| {u.requested} {resource_label(u.resource)} |"
            )
    if plan.has_changes and plan.costs:
        out += ["", "### GPUs in use and cost per hour", ""]
        out += ["| cluster | before | after | all-balanced default |", "|---|---:|---:|---:|"]
        for cost in plan.costs:
            out.append(
                f"| {cost.cluster} | {cost.gpus_before} GPUs, {money(cost.per_hour_before)} "
                f"| {cost.gpus_after} GPUs, {money(cost.per_hour_after)} "
                f"| {cost.gpus_balanced} GPUs, {money(cost.per_hour_balanced)} "
                f"({cost.unmet_balanced} instances unserved) |"
            )
    return "\n".join(out) + "\n"
