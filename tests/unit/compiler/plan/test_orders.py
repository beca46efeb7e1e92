"""compiler/plan/orders.py: the other objective order's outcome, and when it is known without solving."""

from __future__ import annotations

from dataclasses import replace

from test_render_support import BALANCED, SEVEN_SMALL, WHOLE, policy, solution

from compiler.catalog import load_catalog
from compiler.model import CurrentState, Objective, Policy
from compiler.plan.data import OrderOutcome
from compiler.plan.orders import orders_agree, other_order, outcome, swapped
from compiler.solve.result import ServedDemand, Solution

A100 = {"a100-01": (BALANCED,) * 8, "a100-02": (SEVEN_SMALL,) * 8}
DEMAND = (
    ServedDemand("search", "bert", "1g.10gb", 8, 8, "high"),
    ServedDemand("research", "notebooks", "gpu", 6, 6, "low"),
)


def _steady(lower_bound: float) -> Solution:
    """Every node deployed and unchanged, all demand served, proven optimal; GPUs used = 2 per pool."""
    current = {**A100, "h200-0": (WHOLE,) * 8, "h200-1": (WHOLE,) * 8, "l40s-01": (WHOLE,) * 4}
    sol = solution(A100, h200=(WHOLE,) * 8, demand=DEMAND, current=current)
    return Solution(pools=tuple(replace(p, gpus_used=2, lower_bound_gpus=lower_bound) for p in sol.pools))


def _with_order(*order: Objective) -> Policy:
    pol = policy()
    return replace(pol, partition=replace(pol.partition, objective=order))


def test_swapped_completes_the_order_then_trades_gpus_and_disruption() -> None:
    assert swapped(("gpus",)) == ("disruption", "gpus", "preference")
    assert swapped(()) == ("gpus", "disruption", "preference")
    assert swapped(("preference", "gpus")) == ("preference", "disruption", "gpus")


def test_outcome_counts_changes_of_deployed_nodes_only() -> None:
    deployed_before = {"a100-01": (SEVEN_SMALL,) * 8, "a100-02": (SEVEN_SMALL,) * 8}
    demand = (ServedDemand("search", "bert", "1g.10gb", 10, 7, "high"),)
    sol = solution(A100, demand=demand, current=deployed_before)  # h200 and l40s nodes are new
    assert outcome(sol) == OrderOutcome(gpus_used=0, nodes_changed=1, gpus_changed=8, unmet=3, proven=True)


def test_orders_agree_in_the_steady_state_and_the_second_solve_is_skipped() -> None:
    catalog = load_catalog()
    steady = _steady(lower_bound=1.5)  # ceil(1.5) = 2 = gpus_used: the bound proves the GPUs minimal
    assert orders_agree(policy(), catalog, steady)
    cost = other_order(policy(), catalog, CurrentState(), steady)
    assert cost is not None
    assert cost.order == ("disruption", "gpus", "preference")
    assert cost.other == ("gpus", "disruption", "preference")
    assert cost.alternative == cost.chosen == outcome(steady)


def test_orders_do_not_agree_without_each_proof() -> None:
    catalog = load_catalog()
    assert not orders_agree(policy(), catalog, _steady(lower_bound=1.0))  # 1 GPU per pool might do
    assert not orders_agree(_with_order("gpus", "preference", "disruption"), catalog, _steady(1.5))
    unproven = Solution(pools=tuple(replace(p, optimal=False) for p in _steady(1.5).pools))
    assert not orders_agree(policy(), catalog, unproven)
    short = Solution(
        pools=tuple(
            replace(p, demand=tuple(replace(d, served=d.requested - 1) for d in p.demand))
            for p in _steady(1.5).pools
        )
    )
    assert not orders_agree(policy(), catalog, short)
    assert not orders_agree(policy(), catalog, Solution(pools=()))


def test_no_deployed_layout_means_no_other_order() -> None:
    fresh = solution(A100, demand=DEMAND)  # current=None on every node
    assert other_order(policy(), load_catalog(), CurrentState(), fresh) is None
