"""The plan as markdown, for a pull-request comment."""

from __future__ import annotations

from compiler.plan.data import Plan
from compiler.plan.dra import dra_markdown
from compiler.plan.fairness import fairness_markdown
from compiler.plan.formatting import (
    capacity_changes,
    estimate_note,
    gpu_text,
    money,
    pool_kind,
    pool_label,
    requested_cell,
    summary,
    tenant_changes,
)
from compiler.plan.hami import hami_markdown
from compiler.plan.overview import ALL_BALANCED, group_changes, node_names, spans, summary_items
from compiler.plan.spread import spread_text
from compiler.plan.svg import svg_name


def to_markdown(plan: Plan, svg_dir: str | None = None, *, detail: bool = False) -> str:
    """Summary first, then the node table (identical nodes and GPUs grouped; per GPU with ``detail``)."""
    out = ["## migc plan", "", summary(plan)]
    out += _summary_list(plan)
    if plan.has_changes:
        out += ["", "### Nodes to reconfigure", ""]
        out += _node_table_detail(plan) if detail else _node_table_grouped(plan)
        out += _svg_links(plan, svg_dir)
        out += _capacity_table(plan)
        out += _tenant_table(plan)
        out += _evictions(plan)
    out += _unmet_table(plan)
    out += fairness_markdown(plan)
    out += _spread_table(plan)
    out += hami_markdown(plan)
    out += dra_markdown(plan.dra)
    out += _cost_table(plan)
    return "\n".join(out) + "\n"


def _spread_table(plan: Plan) -> list[str]:
    if not plan.spread:
        return []
    out = ["", "### Spread", "", "| cluster | workload | spread | served replicas |", "|---|---|---|---|"]
    for row in plan.spread:
        out.append(f"| {row.cluster} | {row.workload} | {row.spread} | {spread_text(row)} |")
    return out


def _summary_list(plan: Plan) -> list[str]:
    items = summary_items(plan)
    if not items:
        return []
    out = [""]
    for label, lines in items:
        text = lines[0] if len(lines) == 1 else "<br>".join(lines)
        out.append(f"- **{label}**: {text}")
    if plan.has_changes and plan.costs:
        out.append(f"- _{ALL_BALANCED}_")
    return out


def _removed_rows(plan: Plan) -> list[str]:
    out = []
    for r in plan.removed:
        out.append(f"| {r.cluster} | {r.pool} | `{r.node}` | all | deployed | removed from policy |")
    return out


def _node_table_detail(plan: Plan) -> list[str]:
    """One row per changed GPU, then one reason per node."""
    out = ["| cluster | pool | node | GPU | before | after |", "|---|---|---|---|---|---|"]
    for c in plan.changes:
        for i in c.changed_gpus:
            before = c.before[i] if c.before is not None and i < len(c.before) else None
            kind = pool_kind(plan, c.cluster, c.pool)
            out.append(
                f"| {c.cluster} | {c.pool} | `{c.node}` | {i} | {gpu_text(before, kind)} "
                f"| {gpu_text(c.after[i], kind)} |"
            )
    out += _removed_rows(plan)
    out += ["", "Why:", ""]
    for c in plan.changes:
        out.append(f"- `{c.node}`{' (selector pool placeholder)' if c.selector else ''}: {c.reason}")
    return out


def _node_table_grouped(plan: Plan) -> list[str]:
    """One row per transition of a group of identical nodes, then one reason per group."""
    groups = group_changes(plan.changes, plan.pool_kinds)
    out = ["| cluster | pool | nodes | GPUs | before | after |", "|---|---|---|---|---|---|"]
    for g in groups:
        nodes = node_names(g.nodes, "`")
        count = f"{len(g.nodes)}: {nodes}" if len(g.nodes) > 1 else nodes
        for move in g.transitions:
            gpus = f"{move.gpus} per node" if len(g.nodes) > 1 else spans(move.indices)
            out.append(f"| {g.cluster} | {g.pool} | {count} | {gpus} | {move.before} | {move.after} |")
    out += _removed_rows(plan)
    out += ["", "Why:", ""]
    for g in groups:
        placeholder = " (selector pool placeholder)" if g.selector else ""
        out.append(f"- {node_names(g.nodes, '`')}{placeholder}: {g.reason}")
    return out


def _svg_links(plan: Plan, svg_dir: str | None) -> list[str]:
    if svg_dir is None:
        return []
    out = ["", "<details><summary>Slice pictures</summary>", ""]
    for c in plan.changes:
        out.append(f"![{c.node}]({svg_dir.rstrip('/')}/{svg_name(c)})")
    return [*out, "", "</details>"]


def _capacity_table(plan: Plan) -> list[str]:
    caps = capacity_changes(plan)
    if not caps:
        return []
    out = ["", "### Capacity per pool", "", "| cluster | pool | resource | before | after |"]
    out.append("|---|---|---|---:|---:|")
    for row in caps:
        out.append(
            f"| {row.cluster} | {row.pool} | {pool_label(plan, row.cluster, row.pool, row.resource)} "
            f"| {row.before} | {row.after} |"
        )
    return out


def _tenant_table(plan: Plan) -> list[str]:
    rows = tenant_changes(plan)
    if not rows:
        return []
    out = ["", f"### Tenant capacity per pool (served of requested{estimate_note(rows)})", ""]
    out += [
        "| cluster | pool | tenant | resource | before | after | requested |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for t in rows:
        out.append(
            f"| {t.cluster} | {t.pool} | {t.tenant} | {pool_label(plan, t.cluster, t.pool, t.resource)} "
            f"| {t.before} "
            f"| {t.after} | {requested_cell(t)} |"
        )
    return out


def _evictions(plan: Plan) -> list[str]:
    if not plan.snapshot_given:
        return []
    out = ["", "### Expected evictions", ""]
    if not plan.evictions:
        return [*out, "None: no GPU pods run on the reconfigured nodes."]
    out += ["| node | pod | GPU resources |", "|---|---|---|"]
    for e in plan.evictions:
        res = ", ".join(f"{k}={v}" for k, v in e.resources)
        out.append(f"| `{e.node}` | `{e.namespace}/{e.pod}` | {res} |")
    return out


def _unmet_table(plan: Plan) -> list[str]:
    if not plan.unmet:
        return []
    out = ["", "### Unmet demand", "", "| cluster | pool | tenant | workload | tier | served | requested |"]
    out.append("|---|---|---|---|---|---:|---:|")
    for u in plan.unmet:
        out.append(
            f"| {u.cluster} | {u.pool} | {u.tenant} | {u.workload} | {u.priority_tier} | {u.served} "
            f"| {u.requested} {pool_label(plan, u.cluster, u.pool, u.resource)} |"
        )
    return out


def _cost_table(plan: Plan) -> list[str]:
    if not (plan.has_changes and plan.costs):
        return []
    out = ["", "### GPUs in use and cost per hour", "", f"_{ALL_BALANCED}._", ""]
    out += ["| cluster | before | after | all-balanced default |", "|---|---:|---:|---:|"]
    for cost in plan.costs:
        out.append(
            f"| {cost.cluster} | {cost.gpus_before} GPUs, {money(cost.per_hour_before)} "
            f"| {cost.gpus_after} GPUs, {money(cost.per_hour_after)} "
            f"| {cost.gpus_balanced} GPUs, {money(cost.per_hour_balanced)} "
            f"({cost.unmet_balanced} instances unserved) |"
        )
    return out
