"""The plan as JSON, for tools."""

from __future__ import annotations

import json
from typing import Any

from compiler.model import NodeLayout
from compiler.plan.data import Plan
from compiler.plan.formatting import summary


def _layout_json(layout: NodeLayout | None) -> list[dict[str, Any]] | None:
    if layout is None:
        return None
    return [{"migEnabled": g.mig_enabled, "profiles": dict(g.profiles)} for g in layout]


def to_json(plan: Plan) -> str:
    doc = {
        "summary": summary(plan),
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
    }
    return json.dumps(doc, sort_keys=True, indent=2, allow_nan=False) + "\n"
