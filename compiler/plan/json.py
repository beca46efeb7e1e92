"""The plan as JSON, for tools."""

from __future__ import annotations

import json
from typing import Any

from compiler.model import NodeLayout
from compiler.plan.data import Plan
from compiler.plan.dra import dra_json
from compiler.plan.fairness import fairness_json
from compiler.plan.formatting import order_line, summary
from compiler.plan.hami import hami_json


def _layout_json(layout: NodeLayout | None) -> list[dict[str, Any]] | None:
    if layout is None:
        return None
    return [{"migEnabled": g.mig_enabled, "profiles": dict(g.profiles)} for g in layout]


def to_dict(plan: Plan) -> dict[str, Any]:
    """The plan as ``migc plan -o json`` writes it (keys sorted there): summary, node changes,
    capacity, tenants, unmet demand, fairness, evictions, costs, the solution, the other order,
    spread, HAMi and DRA sections."""
    return {
        "summary": summary(plan),
        "hasChanges": plan.pending,
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
        "fairness": fairness_json(plan),
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
        "otherOrder": None
        if plan.other_order is None
        else {
            "order": list(plan.other_order.order),
            "otherOrder": list(plan.other_order.other),
            "chosen": vars(plan.other_order.chosen),
            "other": vars(plan.other_order.alternative),
            "text": order_line(plan.other_order),
        },
        "spread": [
            {
                "cluster": r.cluster,
                "workload": r.workload,
                "spread": r.spread,
                "requested": r.requested,
                "served": r.served,
                "perNode": [{"pool": p, "node": n, "replicas": c} for p, n, c in r.by_node],
                "perDomain": dict(r.by_domain),
                "mostPerNode": r.most_per_node,
                "maintenanceWaves": [
                    {"pool": p, "maxUnavailable": k, "replicas": c} for p, k, c in r.waves
                ],
            }
            for r in plan.spread
        ],
        "hami": hami_json(plan),
        "dra": dra_json(plan.dra),
    }


def to_json(plan: Plan) -> str:
    # Compact separators and no indent: the C encoder then writes the whole document in one pass
    # (an indented dump runs the pure-Python encoder, 9x slower on an 80k-GPU plan). Keys stay
    # sorted, so the bytes are deterministic; `jq .` pretty-prints it for a reader.
    return json.dumps(to_dict(plan), sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"
