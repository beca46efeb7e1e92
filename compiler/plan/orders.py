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


# How far above ``gpus_used - 1`` a pool's LP bound must be to prove ``gpus_used`` minimal: the
# bound is HiGHS's LP optimum (tolerances ~1e-7), rounded to 6 decimals; true fractional parts of
# such bounds are multiples of small fractions (1/8, 1/7, ...), far above this margin.
_BOUND_MARGIN = 0.01


def orders_agree(policy: Policy, catalog: Catalog, solution: Solution) -> bool:
    """Whether the swapped order provably gives the chosen solution's outcome, so the second solve
    can be skipped. True only when all of these hold:

    1. ``gpus`` and ``disruption`` are next to each other in the chosen order (the levels before
       them, guarantees and served demand, are then the same in both orders, and so is the set S
       of solutions optimal on those levels);
    2. every solved pool was proven optimal, holds no guarantee reservation, serves all of its
       demand, and every node of it is deployed and left unchanged;
    3. every demand item of the policy has exactly one option (pool and resource), so every
       solution in S serves the same instances from the same pools;
    4. every pool's GPUs used is the ceiling of its LP bound for those instances
       (``lower_bound_gpus``), which by 3 bounds the GPUs of that pool in every solution in S.

    Then (4) the chosen solution uses the fewest GPUs of any solution in S, pool by pool, so the
    swapped order's ``gpus`` optimum is the chosen one's; among the solutions with those GPUs the
    chosen one keeps every deployed node (2), so the swapped order's ``disruption`` optimum keeps
    them all too: the same GPUs used, no node or GPU changed, nothing unmet, proven. This is the
    common steady state (a plan against the output the same policy compiled), where the second
    solve cost ~1 s of CPU at 80,000 GPUs to find exactly that.
    """
    full = objective_order(policy.partition.objective)
    if abs(full.index("gpus") - full.index("disruption")) != 1 or not solution.pools:
        return False
    for p in solution.pools:
        if not p.optimal or p.reserved or any(d.unmet for d in p.demand):
            return False
        if any(n.current is None or n.changed or n.changed_gpus for n in p.nodes):
            return False
        if p.lower_bound_gpus <= p.gpus_used - 1 + _BOUND_MARGIN:
            return False
    from compiler.solve.demand import build_demand

    return all(len(item.options) == 1 for c in policy.clusters for item in build_demand(policy, c, catalog))


def other_order(
    policy: Policy,
    catalog: Catalog,
    current: CurrentState,
    solution: Solution,
    *,
    time_limit_s: float = 60.0,
) -> OrderCost | None:
    """The chosen solution against the one the swapped order gives; None without a deployed layout
    on any solved node (the orders then coincide) or when the second solve finds no answer. Where
    :func:`orders_agree` proves the answer, it is given without the second solve."""
    if not any(n.current is not None for p in solution.pools for n in p.nodes):
        return None
    chosen = objective_order(policy.partition.objective)
    other = swapped(chosen)
    if orders_agree(policy, catalog, solution):
        mine = outcome(solution)
        return OrderCost(order=chosen, other=other, chosen=mine, alternative=mine)
    from compiler.solve import solve  # the solver (HiGHS) loads only when a plan needs it

    alt_policy = dataclasses.replace(policy, partition=dataclasses.replace(policy.partition, objective=other))
    # HAMi pools keep their own order; only the outcome's counts are read from this solution
    alt = solve(alt_policy, catalog, current, time_limit_s=time_limit_s, hami=False, metrics_only=True)
    if has_errors(list(alt.diagnostics)):
        return None
    return OrderCost(order=chosen, other=other, chosen=outcome(solution), alternative=outcome(alt))
