"""LP relaxation bound on the GPUs a pool needs for what it was asked to carry."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.catalog.layouts import enumerate_layouts
from compiler.model import WHOLE_GPU
from compiler.solve.demand import DemandItem
from compiler.solve.lexmilp import Level, Milp
from compiler.solve.plan_types import PoolDecision


def lp_bound(decision: PoolDecision, items: Sequence[DemandItem]) -> float:
    """min sum(n_l) over fractional layout counts covering the served MIG instances and reservations,
    plus the whole GPUs (exclusive and multi-GPU replicas, guarantee reservations) and, for a shared
    pool, served replicas / sharing replicas. Dropping instances from a valid layout keeps it valid,
    so layouts made of the demanded profiles only give the same bound as all layouts.
    """
    pool = decision.pool
    whole = 0.0
    need: dict[str, int] = {}
    for (i, resource), served in sorted(decision.served.items()):
        item = items[i]
        if item.kind == "shared":
            whole += served * item.size / max(1, pool.sharing.replicas)
        elif resource == WHOLE_GPU:
            whole += served * item.size
        else:
            need[resource] = need.get(resource, 0) + served
    for (_tenant, resource), count in sorted(decision.reserved.items()):
        if resource == WHOLE_GPU:
            whole += count
        else:
            need[resource] = need.get(resource, 0) + count
    if not need or decision.model is None:
        return round(whole, 6)
    cols = [
        lay
        for lay in enumerate_layouts(decision.model, allow_media_extensions=True)
        if all(name in need for name, _ in lay.profiles)
    ]
    m = Milp()
    var = {lay: m.var("n", 0, integer=False) for lay in cols}
    for q, amount in sorted(need.items()):
        m.row({var[lay]: lay.counts().get(q, 0) for lay in cols}, lb=amount)
    res = m.solve([Level("gpus", "min", {v: 1 for v in var.values()})], time_limit=10.0, relax=True)
    if res is None:
        return round(whole, 6)
    return round(whole + sum(res.values), 6)
