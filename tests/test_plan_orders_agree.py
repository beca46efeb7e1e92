"""The plan's other-order line without the second solve (compiler/plan/orders.py ``orders_agree``).

Where the chosen solution is proven to be what the swapped order gives too (a steady state: every
node deployed and unchanged, all demand served from single-option items, GPUs at the ceiling of
the LP bound), ``other_order`` reports it without solving. These tests run the real second solve
next to it on generated fleets and require the same answer wherever the shortcut is taken, and
check that each condition, broken, sends the plan back to the solver.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import pytest

from bench import scale
from compiler.catalog import load_catalog
from compiler.model import Objective, Policy
from compiler.pipeline.compiled import Compiled, compile_policy
from compiler.plan import orders
from compiler.plan.data import OrderCost
from compiler.render import render
from compiler.render.writer import write_tree
from compiler.solve.result import Solution

CAT = load_catalog()


def _steady(tmp_path: Path, gpus: int, seed: int, tenants: int, pinned: bool = True) -> Compiled:
    """The policy compiled against its own earlier output (what `migc plan` sees after a merge)."""
    policy_dir, out = tmp_path / f"policy-{gpus}-{seed}", tmp_path / f"out-{gpus}-{seed}"
    scale.write(scale.generate(gpus, seed=seed, tenants=tenants, pinned=pinned), policy_dir)
    first = compile_policy([str(policy_dir)], None)
    assert not first.failed and first.policy is not None and first.solution is not None
    assert not write_tree(render(first.policy, first.solution, first.catalog), out).failed
    again = compile_policy([str(policy_dir)], out)
    assert not again.failed
    return again


Steady = Callable[..., Compiled]


@pytest.fixture(scope="module")
def steady(tmp_path_factory: pytest.TempPathFactory) -> Steady:
    """``_steady``, built once per fleet for the module: the parametrized differential test and the
    shortcut census below compile the same six fleets (issue 27). Every test only reads the result
    (``Compiled`` and what it holds are frozen dataclasses)."""
    built: dict[tuple[int, int, int, bool], Compiled] = {}

    def get(gpus: int, seed: int, tenants: int, pinned: bool = True) -> Compiled:
        key = (gpus, seed, tenants, pinned)
        if key not in built:
            built[key] = _steady(tmp_path_factory.mktemp("steady"), *key)
        return built[key]

    return get


def _solved(c: Compiled) -> OrderCost | None:
    assert c.policy is not None and c.solution is not None
    with mock.patch.object(orders, "orders_agree", return_value=False):
        return orders.other_order(c.policy, c.catalog, c.current, c.solution)


CASES = [(96, 1, 4), (192, 2, 6), (400, 3, 10), (800, 4, 20), (1600, 5, 30), (800, 7, 10)]


@pytest.mark.parametrize(("gpus", "seed", "tenants"), CASES)
def test_where_the_orders_provably_agree_the_second_solve_says_the_same(
    steady: Steady, gpus: int, seed: int, tenants: int
) -> None:
    c = steady(gpus, seed, tenants)
    assert c.policy is not None and c.solution is not None
    quick = orders.other_order(c.policy, c.catalog, c.current, c.solution)
    assert quick == _solved(c)


def test_the_generated_steady_states_take_the_shortcut(steady: Steady) -> None:
    agreed = []
    for gpus, seed, tenants in CASES:
        c = steady(gpus, seed, tenants)
        assert c.policy is not None and c.solution is not None
        agreed.append(orders.orders_agree(c.policy, c.catalog, c.solution))
    assert sum(agreed) >= 4, agreed  # the differential test above is not vacuous


def _broken(solution: Solution, **changes: object) -> Solution:
    pool = dataclasses.replace(solution.pools[0], **changes)  # type: ignore[arg-type]
    return dataclasses.replace(solution, pools=(pool, *solution.pools[1:]))


def test_each_condition_broken_sends_the_plan_to_the_solver(steady: Steady) -> None:
    c = steady(800, 4, 20)
    policy, solution = c.policy, c.solution
    assert policy is not None and solution is not None
    assert orders.orders_agree(policy, CAT, solution)
    first = solution.pools[0]
    node = first.nodes[0]
    changed = dataclasses.replace(node, changed_gpus=(0,))
    assert not orders.orders_agree(policy, CAT, _broken(solution, nodes=(changed, *first.nodes[1:])))
    new = dataclasses.replace(node, current=None)
    assert not orders.orders_agree(policy, CAT, _broken(solution, nodes=(new, *first.nodes[1:])))
    assert not orders.orders_agree(policy, CAT, _broken(solution, optimal=False))
    assert not orders.orders_agree(policy, CAT, _broken(solution, reserved=(("t", "1g.10gb", 1),)))
    loose = first.gpus_used - 1.5  # a bound that does not pin the GPU count
    assert not orders.orders_agree(policy, CAT, _broken(solution, lower_bound_gpus=loose))
    short = dataclasses.replace(first.demand[0], served=first.demand[0].requested - 1)
    assert not orders.orders_agree(policy, CAT, _broken(solution, demand=(short, *first.demand[1:])))
    apart: tuple[Objective, ...] = ("gpus", "preference", "disruption")
    spaced = dataclasses.replace(policy, partition=dataclasses.replace(policy.partition, objective=apart))
    assert not orders.orders_agree(spaced, CAT, solution)


def test_workloads_free_to_move_between_pools_send_the_plan_to_the_solver(steady: Steady) -> None:
    c = steady(800, 4, 20, pinned=False)
    policy: Policy | None = c.policy
    assert policy is not None and c.solution is not None
    assert not orders.orders_agree(policy, CAT, c.solution)
    assert orders.other_order(policy, c.catalog, c.current, c.solution) == _solved(c)
