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
from compiler.plan.overview import ALL_BALANCED, group_changes, node_names, spans, summary_items
from compiler.plan.svg import svg_name


def to_markdown(plan: Plan, svg_dir: str | None = None, *, detail: bool = False) -> str:
    """Summary first, then the node table (identical nodes and GPUs grouped; per GPU with ``detail``)."""
    out = ["## migc plan", "", summary(plan)]
    items = summary_items(plan)
    if items:
        out.append("")
        for label, lines in items:
            text = lines[0] if len(lines) == 1 else "<br>".join(lines)
            out.append(f"- **{label}**: {text}")
        if plan.has_changes and plan.costs:
            out.append(f"- _{ALL_BALANCED}_")
    if plan.has_changes:
        out += ["", "### Nodes to reconfigure", ""]
        if detail:
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
        else:
            groups = group_changes(plan.changes)
            out += ["| cluster | pool | nodes | GPUs | before | after |", "|---|---|---|---|---|---|"]
            for g in groups:
                nodes = node_names(g.nodes, "`")
                count = f"{len(g.nodes)}: {nodes}" if len(g.nodes) > 1 else nodes
                for move in g.transitions:
                    gpus = f"{move.gpus} per node" if len(g.nodes) > 1 else spans(move.indices)
                    out.append(
                        f"| {g.cluster} | {g.pool} | {count} | {gpus} | {move.before} | {move.after} |"
                    )
            for r in plan.removed:
                out.append(f"| {r.cluster} | {r.pool} | `{r.node}` | all | deployed | removed from policy |")
            out += ["", "Why:", ""]
            for g in groups:
                placeholder = " (selector pool placeholder)" if g.selector else ""
                out.append(f"- {node_names(g.nodes, '`')}{placeholder}: {g.reason}")
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
        out += ["", "### GPUs in use and cost per hour", "", f"_{ALL_BALANCED}._", ""]
        out += ["| cluster | before | after | all-balanced default |", "|---|---:|---:|---:|"]
        for cost in plan.costs:
            out.append(
                f"| {cost.cluster} | {cost.gpus_before} GPUs, {money(cost.per_hour_before)} "
                f"| {cost.gpus_after} GPUs, {money(cost.per_hour_after)} "
                f"| {cost.gpus_balanced} GPUs, {money(cost.per_hour_balanced)} "
                f"({cost.unmet_balanced} instances unserved) |"
            )
    return "\n".join(out) + "\n"
