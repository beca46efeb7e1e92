"""Pieces shared by the plan's text, markdown and JSON forms."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.model import WHOLE_GPU, GpuLayout
from compiler.plan.data import CapacityRow, NodeChange, Plan, TenantRow


def gpu_text(gpu: GpuLayout | None) -> str:
    if gpu is None:
        return "(not deployed)"
    if not gpu.mig_enabled:
        return "whole GPU (MIG off)"
    if not gpu.profiles:
        return "MIG on, no instances"
    return " + ".join(f"{c}x {n}" for n, c in sorted(gpu.profiles, key=size_key))


def size_key(item: tuple[str, int]) -> tuple[int, str]:
    """Larger instances first: ``7g.80gb`` before ``3g.40gb`` before ``1g.10gb``."""
    head = item[0].split("g", 1)[0]
    return (-int(head) if head.isdigit() else 0, item[0])


def resource_label(resource: str) -> str:
    return "whole GPU" if resource == WHOLE_GPU else resource


def money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}/h"


def summary(plan: Plan) -> str:
    if not plan.has_changes:
        return f"No changes: all {plan.nodes_total} nodes already carry their target layout."
    gpus = sum(len(c.changed_gpus) for c in plan.changes)
    extra = f", {len(plan.removed)} deployed nodes no longer in the policy" if plan.removed else ""
    return (
        f"{len(plan.changes)} of {plan.nodes_total} nodes change ({gpus} GPUs reconfigured){extra} "
        f"in {len(plan.clusters)} cluster(s)."
    )


def gpu_lines(change: NodeChange) -> list[str]:
    lines = []
    for i in change.changed_gpus:
        before = change.before[i] if change.before is not None and i < len(change.before) else None
        lines.append(f"gpu {i}: {gpu_text(before)} → {gpu_text(change.after[i])}")
    return lines


def capacity_changes(plan: Plan) -> list[CapacityRow]:
    return [r for r in plan.capacity if r.before != r.after]


def tenant_changes(plan: Plan) -> list[TenantRow]:
    return [r for r in plan.tenants if r.before != r.after]


def estimate_note(rows: Sequence[TenantRow]) -> str:
    """Which "before" figures are estimates rather than the recorded ones."""
    estimated = sorted({r.cluster for r in rows if r.estimated})
    if not estimated:
        return ""
    if len(estimated) == len({r.cluster for r in rows}):
        return "; before is estimated"
    return f"; before is estimated in {', '.join(estimated)}"


def tenant_text(row: TenantRow) -> str:
    if row.requested_before is None:
        return f"{row.before} → {row.after} of {row.requested}"
    return f"{row.before} of {row.requested_before} → {row.after} of {row.requested}"


def requested_cell(row: TenantRow) -> str:
    if row.requested_before is None or row.requested_before == row.requested:
        return str(row.requested)
    return f"{row.requested_before} → {row.requested}"
