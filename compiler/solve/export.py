"""The machine-readable solution (``migc plan --output-format json``) that ``schema/solution.schema.json``
defines.

Deterministic: every list is sorted, no timings (``solve_seconds`` is left out on purpose so two runs
on the same input are byte-identical), no timestamps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compiler.model import GpuLayout
from compiler.solve.result import NodeResult, PoolResult, Solution

API_VERSION = "migc.dev/v1alpha1"


def layout_to_dict(layout: GpuLayout) -> dict[str, Any]:
    return {"migEnabled": layout.mig_enabled, "profiles": dict(layout.profiles)}


def _gpus(n: NodeResult, as_dict: Callable[[GpuLayout], dict[str, Any]]) -> list[Any]:
    gpus = []
    changed = set(n.changed_gpus)
    for i, gpu in enumerate(n.gpus):
        cur = n.current[i] if n.current is not None and i < len(n.current) else None
        after = as_dict(gpu)
        gpus.append(
            {
                "index": i,
                "migEnabled": after["migEnabled"],
                "profiles": after["profiles"],
                "current": None if cur is None else as_dict(cur),
                "changed": i in changed,
            }
        )
    return gpus


def _pool(p: PoolResult) -> dict[str, Any]:
    nodes = []
    # One dict per distinct layout object (the solver and the state reader share them between
    # GPUs), shared by the GPU entries that carry it: the document is for reading and encoding
    # (treat it as read-only), and 80k GPUs then cost 80k small dicts instead of 240k.
    shown: dict[int, tuple[GpuLayout, dict[str, Any]]] = {}

    def as_dict(layout: GpuLayout) -> dict[str, Any]:
        hit = shown.get(id(layout))
        if hit is None:
            hit = shown[id(layout)] = (layout, layout_to_dict(layout))
        return hit[1]

    # Nodes whose GPUs carry the same layout objects (before and after) share one GPU list too:
    # a fleet of identical nodes then costs one list per kind of node, not one dict per GPU.
    node_gpus: dict[tuple[tuple[int, ...], tuple[int, ...] | None, tuple[int, ...]], list[Any]] = {}
    for n in p.nodes:
        key = (
            tuple(map(id, n.gpus)),
            None if n.current is None else tuple(map(id, n.current)),
            n.changed_gpus,
        )
        gpus = node_gpus.get(key)
        if gpus is None:
            gpus = node_gpus[key] = _gpus(n, as_dict)
        nodes.append(
            {"name": n.name, "changed": n.changed, "changedGpus": list(n.changed_gpus), "gpus": gpus}
        )
    tenants: dict[str, dict[str, dict[str, int]]] = {}
    for d in p.demand:
        row = tenants.setdefault(d.tenant, {}).setdefault(
            d.resource, {"requested": 0, "served": 0, "unmet": 0, "reserved": 0}
        )
        row["requested"] += d.requested
        row["served"] += d.served
        row["unmet"] += d.unmet
    for tenant, resource, count in p.reserved:
        row = tenants.setdefault(tenant, {}).setdefault(
            resource, {"requested": 0, "served": 0, "unmet": 0, "reserved": 0}
        )
        row["reserved"] += count
    return {
        "name": p.pool,
        "gpuModel": p.gpu_model,
        "optimal": p.optimal,
        "lowerBoundGpus": p.lower_bound_gpus,
        "gpusUsed": p.gpus_used,
        "gpusTotal": sum(len(n.gpus) for n in p.nodes),
        "nodesChanged": sum(1 for n in p.nodes if n.changed),
        "gpusChanged": sum(len(n.changed_gpus) for n in p.nodes),
        "capacity": p.capacity(),
        "layoutCounts": [{"layout": layout_to_dict(lay), "gpus": c} for lay, c in p.layout_counts],
        "demand": [{**d.to_dict(), "unmet": d.unmet} for d in p.demand],
        "tenants": [
            {"tenant": t, "resources": [{"resource": r, **v} for r, v in sorted(res.items())]}
            for t, res in sorted(tenants.items())
        ],
        "nodes": nodes,
    }


def solution_to_dict(solution: Solution) -> dict[str, Any]:
    clusters: dict[str, list[dict[str, Any]]] = {}
    for p in sorted(solution.pools, key=lambda p: (p.cluster, p.pool)):
        clusters.setdefault(p.cluster, []).append(_pool(p))
    pools = solution.pools
    return {
        "apiVersion": API_VERSION,
        "kind": "Solution",
        "summary": {
            "optimal": all(p.optimal for p in pools),
            "gpusTotal": sum(len(n.gpus) for p in pools for n in p.nodes),
            "gpusUsed": sum(p.gpus_used for p in pools),
            "lowerBoundGpus": round(sum(p.lower_bound_gpus for p in pools), 6),
            "nodesChanged": sum(1 for p in pools for n in p.nodes if n.changed),
            "gpusChanged": sum(len(n.changed_gpus) for p in pools for n in p.nodes),
            "requested": sum(d.requested for p in pools for d in p.demand),
            "served": sum(d.served for p in pools for d in p.demand),
            "unmet": sum(d.unmet for p in pools for d in p.demand),
        },
        "clusters": [{"name": name, "pools": ps} for name, ps in sorted(clusters.items())],
        "diagnostics": [d.as_dict() for d in solution.diagnostics],
    }
