"""Pieces shared by the plan's text, markdown and JSON forms."""

from __future__ import annotations

from collections.abc import Sequence

from compiler import formatting
from compiler.model import WHOLE_GPU, GpuLayout
from compiler.plan.data import CapacityRow, NodeChange, OrderCost, Plan, TenantRow


def gpu_text(gpu: GpuLayout | None, kind: tuple[bool, str, int] = (True, "none", 1)) -> str:
    """One GPU's layout; ``kind`` is its pool's (MIG-partitioned, sharing mode, shares per GPU):
    "MIG off" only where MIG could be on, a time-sliced GPU says so."""
    if gpu is None:
        return "(not deployed)"
    if not gpu.mig_enabled:
        mig, mode, shares = kind
        if mig:
            return "whole GPU (MIG off)"
        return f"whole GPU, {mode} ×{shares}" if shares > 1 else "whole GPU"
    if not gpu.profiles:
        return "MIG on, no instances"
    return " + ".join(f"{c}x {n}" for n, c in sorted(gpu.profiles, key=size_key))


def size_key(item: tuple[str, int]) -> tuple[int, str]:
    """Larger instances first: ``7g.80gb`` before ``3g.40gb`` before ``1g.10gb``."""
    head = item[0].split("g", 1)[0]
    return (-int(head) if head.isdigit() else 0, item[0])


def resource_label(resource: str, kind: tuple[bool, str, int] = (True, "none", 1)) -> str:
    """A resource of a pool of ``kind``: its ``gpu`` counts what the device plugin advertises, one
    ``nvidia.com/gpu`` per whole GPU, or per share of a time-sliced / MPS GPU (as ``migc status`` and
    the ResourceQuota count them), and says which."""
    if resource != WHOLE_GPU:
        return resource
    _, mode, shares = kind
    return f"GPU share ({mode} ×{shares})" if shares > 1 else "whole GPU"


def pool_label(plan: Plan, cluster: str, pool: str, resource: str) -> str:
    return resource_label(resource, pool_kind(plan, cluster, pool))


def pool_kind(plan: Plan, cluster: str, pool: str) -> tuple[bool, str, int]:
    return plan.pool_kinds.get((cluster, pool), (True, "none", 1))


def money(value: float | None) -> str:
    """A cost per hour as the plan writes it, ``$1,234.50/h`` (``n/a`` unpriced): the plan's wording
    of :func:`compiler.formatting.money`."""
    return formatting.money(value, unit="/h", missing="n/a")


def summary(plan: Plan) -> str:
    if not plan.has_changes and plan.migrations:
        pools = ", ".join(f"{r.cluster}/{r.pool} {r.before} → {r.after}" for r in plan.migrations)
        return (
            f"No layout changes, but {len(plan.migrations)} pool(s) migrate their backend ({pools}): "
            "each of their nodes is cordoned and drained in turn (see DRA pools)."
        )
    if not plan.has_changes:
        return f"No changes: all {plan.nodes_total} nodes already carry their target layout."
    gpus = sum(len(c.changed_gpus) for c in plan.changes)
    extra = f", {len(plan.removed)} deployed nodes no longer in the policy" if plan.removed else ""
    return (
        f"{len(plan.changes)} of {plan.nodes_total} nodes change ({gpus} GPUs reconfigured){extra} "
        f"in {len(plan.clusters)} cluster(s)."
    )


def gpu_lines(change: NodeChange, kind: tuple[bool, str, int] = (True, "none", 1)) -> list[str]:
    lines = []
    for i in change.changed_gpus:
        before = change.before[i] if change.before is not None and i < len(change.before) else None
        lines.append(f"gpu {i}: {gpu_text(before, kind)} → {gpu_text(change.after[i], kind)}")
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


def _more_fewer(diff: int, unit: str) -> str:
    return f"{abs(diff)} {'more' if diff > 0 else 'fewer'} {unit}{'' if abs(diff) == 1 else 's'}"


def order_line(cost: OrderCost) -> str:
    """One line: what the objective order with ``gpus`` and ``disruption`` swapped would have given.

    e.g. "gpus first ([gpus, disruption, preference]) would use 12 fewer GPUs (1200 instead of 1212)
    and change 37 more deployed nodes (59 instead of 22; 410 instead of 130 GPUs)".
    """
    first = "gpus" if cost.other.index("gpus") < cost.other.index("disruption") else "disruption"
    a, c = cost.alternative, cost.chosen
    gpus = a.gpus_used - c.gpus_used
    use = (
        f"use {_more_fewer(gpus, 'GPU')} ({a.gpus_used} instead of {c.gpus_used})"
        if gpus
        else f"use as many GPUs ({a.gpus_used})"
    )
    nodes = a.nodes_changed - c.nodes_changed
    changed = a.gpus_changed - c.gpus_changed
    if nodes:
        change = (
            f"change {_more_fewer(nodes, 'deployed node')} ({a.nodes_changed} instead of {c.nodes_changed}; "
            f"{a.gpus_changed} instead of {c.gpus_changed} GPUs)"
        )
    elif changed:
        change = (
            f"change as many deployed nodes ({a.nodes_changed}) but {_more_fewer(changed, 'GPU')} "
            f"({a.gpus_changed} instead of {c.gpus_changed})"
        )
    else:
        n, g = a.nodes_changed, a.gpus_changed
        change = (
            f"change as many deployed nodes and GPUs ({n} node{'' if n == 1 else 's'}, "
            f"{g} GPU{'' if g == 1 else 's'})"
        )
    parts = [use, change]
    if a.unmet != c.unmet:
        parts.append(f"leave {a.unmet} replicas unmet instead of {c.unmet}")
    proven = "" if a.proven else " (not proven optimal within the solver's time limit)"
    order = ", ".join(cost.other)
    return f"{first} first ([{order}]) would " + ", ".join(parts[:-1]) + f" and {parts[-1]}{proven}"
