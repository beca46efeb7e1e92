"""What the text and markdown plans show first: a summary, and node changes grouped.

The summary answers the reviewer's first questions in a few lines: how many nodes and GPUs
change, how capacity moves per pool and per tenant, what the GPUs in use cost, and what demand
stays unmet. Node changes are then grouped: nodes of one pool that change the same way (same
reason, same before → after on the same number of GPUs) are one entry, and within it identical
GPUs are one line (``3 nodes × 8 GPUs: whole GPU (MIG off) → 7x 1g.10gb``). ``--detail``
keeps the per-GPU listing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from compiler.plan.data import NodeChange, Plan
from compiler.plan.formatting import (
    capacity_changes,
    estimate_note,
    gpu_text,
    money,
    order_line,
    pool_label,
    tenant_changes,
)

ALL_BALANCED = (
    "all-balanced: the GPU Operator's stock mig-parted config, one mix on every GPU "
    "(2x 1g + 1x 2g + 1x 3g on 7-slice GPUs), for comparison"
)
MAX_NAMES = 6  # node names listed per group before "and N more"


@dataclass(frozen=True)
class Transition:
    before: str
    after: str
    gpus: int  # GPUs per node that change this way
    indices: tuple[int, ...]  # which GPUs, when the group is a single node


@dataclass(frozen=True)
class NodeGroup:
    cluster: str
    pool: str
    where: str
    reason: str
    new: bool
    selector: bool
    nodes: tuple[str, ...]
    transitions: tuple[Transition, ...]

    @property
    def gpus(self) -> int:
        return len(self.nodes) * sum(t.gpus for t in self.transitions)


Kinds = Mapping[tuple[str, str], tuple[bool, str, int]]  # Plan.pool_kinds


def _transitions(change: NodeChange, kinds: Kinds) -> dict[tuple[str, str], list[int]]:
    kind = kinds.get((change.cluster, change.pool), (True, "none", 1))
    out: dict[tuple[str, str], list[int]] = {}
    for i in change.changed_gpus:
        before = change.before[i] if change.before is not None and i < len(change.before) else None
        out.setdefault((gpu_text(before, kind), gpu_text(change.after[i], kind)), []).append(i)
    return out


def group_changes(changes: Sequence[NodeChange], kinds: Kinds | None = None) -> list[NodeGroup]:
    """Changes grouped by cluster, pool, reason and per-node transitions, in first-seen order."""
    order: list[tuple[object, ...]] = []
    members: dict[tuple[object, ...], list[NodeChange]] = {}
    for change in changes:
        moves = _transitions(change, kinds or {})
        shape = tuple(sorted((b, a, len(ix)) for (b, a), ix in moves.items()))
        key: tuple[object, ...] = (
            change.cluster,
            change.pool,
            change.where,
            change.reason,
            change.before is None,
            shape,
        )
        if key not in members:
            order.append(key)
            members[key] = []
        members[key].append(change)
    groups = []
    for key in order:
        nodes = members[key]
        first = nodes[0]
        moves = _transitions(first, kinds or {})
        transitions = tuple(
            Transition(b, a, len(ix), tuple(ix) if len(nodes) == 1 else ())
            for (b, a), ix in sorted(moves.items(), key=lambda kv: kv[1][0])
        )
        groups.append(
            NodeGroup(
                cluster=first.cluster,
                pool=first.pool,
                where=first.where,
                reason=first.reason,
                new=first.before is None,
                selector=first.selector,
                nodes=tuple(c.node for c in nodes),
                transitions=transitions,
            )
        )
    return groups


def node_names(names: Sequence[str], quote: str = "") -> str:
    shown = [f"{quote}{n}{quote}" for n in names[:MAX_NAMES]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def spans(indices: Sequence[int]) -> str:
    """``0, 1, 2, 5`` → ``0-2, 5``."""
    parts: list[str] = []
    start = prev = None
    for i in [*sorted(indices), None]:
        if start is not None and prev is not None and (i is None or i != prev + 1):
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if i is not None and start is None:
            start = i
        prev = i
    return ", ".join(parts)


def transition_text(group: NodeGroup, move: Transition) -> str:
    """``3 nodes × 8 GPUs: before → after``; one node: ``GPUs 6, 7: before → after``."""
    plural = "GPU" if move.gpus == 1 else "GPUs"
    if len(group.nodes) == 1:
        which = spans(move.indices)
        head = f"GPU {which}" if move.gpus == 1 else f"{move.gpus} GPUs ({which})"
    else:
        head = f"{len(group.nodes)} nodes × {move.gpus} {plural}"
    return f"{head}: {move.before} → {move.after}"


def summary_items(plan: Plan) -> list[tuple[str, list[str]]]:
    """``(label, lines)`` of the summary: capacity per pool, served per tenant, cost, unmet demand."""
    items: list[tuple[str, list[str]]] = []
    if plan.has_changes:
        pools: dict[tuple[str, str], list[str]] = {}
        for row in capacity_changes(plan):
            pools.setdefault((row.cluster, row.pool), []).append(
                f"{pool_label(plan, row.cluster, row.pool, row.resource)} {row.before} → {row.after}"
            )
        capacity = [f"{c}/{p}: {', '.join(parts)}" for (c, p), parts in sorted(pools.items())]
        items.append(("capacity", capacity or ["unchanged per pool (instances move between nodes)"]))
        changed = tenant_changes(plan)
        tenants: dict[str, dict[str, list[int]]] = {}
        for t in changed:
            # whole GPUs and time-sliced shares are different units: summed apart, labelled apart
            key = pool_label(plan, t.cluster, t.pool, t.resource)
            acc = tenants.setdefault(t.tenant, {}).setdefault(key, [0, 0, 0])
            acc[0] += t.before
            acc[1] += t.after
            acc[2] += t.requested
        served = [
            f"{tenant}: "
            + ", ".join(f"{r} {b} → {a} of {n}" for r, (b, a, n) in sorted(moved.items()))
            for tenant, rows in sorted(tenants.items())
            if (moved := {r: v for r, v in rows.items() if v[0] != v[1]})
        ]
        if changed and not served:
            served = ["every tenant is served as much as before (some from another pool)"]
        note = estimate_note(changed)
        items.append((f"tenants (served of requested{note})", served or ["every tenant is served as before"]))
        items.append(
            (
                "cost per hour (GPUs in use)",
                [
                    f"{cost.cluster}: {money(cost.per_hour_before)} → {money(cost.per_hour_after)} "
                    f"({cost.gpus_before} → {cost.gpus_after} of {cost.gpus_total} GPUs); all-balanced: "
                    f"{money(cost.per_hour_balanced)} ({cost.gpus_balanced} GPUs, "
                    f"{cost.unmet_balanced} demanded instances unserved)"
                    for cost in plan.costs
                ],
            )
        )
    if plan.other_order is not None:
        order = ", ".join(plan.other_order.order)
        items.append((f"objective order [{order}]; the other order", [order_line(plan.other_order)]))
    if plan.unmet:
        missing = sum(u.requested - u.served for u in plan.unmet)
        requested = sum(u.requested for u in plan.unmet)
        workloads = len({(u.cluster, u.tenant, u.workload) for u in plan.unmet})
        items.append(
            (
                "unmet demand",
                [
                    f"{missing} of {requested} instances/GPUs asked by {workloads} workload(s) "
                    "not served (see below)"
                ],
            )
        )
    elif plan.has_changes:
        items.append(("unmet demand", ["none: all demand is served"]))
    return [(label, lines) for label, lines in items if lines]
