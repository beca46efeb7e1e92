"""What the other objective order would have cost: a second solve, made only when planning.

``PartitionPolicy.spec.objective`` decides whether the solver first keeps deployed nodes
(``disruption``) or first frees GPUs (``gpus``). The plan re-solves with those two goals swapped
(everything else, the time limit included, as ``compile`` solves) and states in one line how many
GPUs and node changes that order would have given. That solve only counts (``solve(...,
metrics_only=True)``): it stops after the last of the two swapped goals and skips the split pass
and the LP bound, which changes none of the numbers the line reports. Without a deployed layout the
disruption goal is empty and the two orders coincide, so nothing is solved.
"""

from __future__ import annotations

import dataclasses

from compiler.catalog import Catalog
from compiler.diagnostics import has_errors
from compiler.model import CurrentState, Objective, Policy, objective_order
from compiler.plan.data import OrderCost, OrderOutcome
from compiler.solve.result import Solution


def swapped(order: tuple[Objective, ...]) -> tuple[Objective, ...]:
    """``order`` completed, with ``gpus`` and ``disruption`` trading places."""
    full = objective_order(order)
    i, j = full.index("gpus"), full.index("disruption")
    out = list(full)
    out[i], out[j] = out[j], out[i]
    return tuple(out)


def outcome(solution: Solution) -> OrderOutcome:
    """GPUs used, deployed nodes and GPUs changed, and replicas unmet of a solution's MIG pools."""
    pools = solution.pools
    deployed = [n for p in pools for n in p.nodes if n.current is not None]
    return OrderOutcome(
        gpus_used=sum(p.gpus_used for p in pools),
        nodes_changed=sum(1 for n in deployed if n.changed),
        gpus_changed=sum(len(n.changed_gpus) for n in deployed),
        unmet=sum(d.unmet for p in pools for d in p.demand),
        proven=all(p.optimal for p in pools),
    )


def other_order(
    policy: Policy,
    catalog: Catalog,
    current: CurrentState,
    solution: Solution,
    *,
    time_limit_s: float = 60.0,
) -> OrderCost | None:
    """The chosen solution against the one the swapped order gives; None without a deployed layout
    on any solved node (the orders then coincide) or when the second solve finds no answer."""
    if not any(n.current is not None for p in solution.pools for n in p.nodes):
        return None
    from compiler.solve import solve  # the solver (HiGHS) loads only when a plan needs it

    chosen = objective_order(policy.partition.objective)
    other = swapped(chosen)
    alt_policy = dataclasses.replace(policy, partition=dataclasses.replace(policy.partition, objective=other))
    # HAMi pools keep their own order; only the outcome's counts are read from this solution
    alt = solve(alt_policy, catalog, current, time_limit_s=time_limit_s, hami=False, metrics_only=True)
    if has_errors(list(alt.diagnostics)):
        return None
    return OrderCost(order=chosen, other=other, chosen=outcome(solution), alternative=outcome(alt))
