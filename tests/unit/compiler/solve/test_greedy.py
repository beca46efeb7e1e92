"""compiler/solve/greedy.py: the first-fit-decreasing fallback, as its module docstring promises it.

What a user gets when HiGHS fails or runs out of time (``solve(..., method="greedy")`` forces it):
guarantees are held first, then demand by priority tier, larger instances first, each into the
first opened GPU with room. One A100 (7 compute, 8 memory slices) keeps every case small enough to
count by hand: a 3g.40gb takes 3 compute and 4 memory slices, a 1g.10gb one of each.
"""

from __future__ import annotations

from test_solve_support import policy, pool, profile_need, served, tenant, workload

from compiler.catalog import load_catalog
from compiler.model import GpuLayout, Quota
from compiler.solve import solve
from compiler.solve.demand import DemandItem, Guarantee, Option
from compiler.solve.greedy import greedy_cluster
from compiler.solve.plan_types import RESERVE
from compiler.solve.result import Solution

CAT = load_catalog()
ONE_GPU = [pool(nodes=1, gpus_per_node=1)]


def codes(sol: Solution) -> list[str]:
    return [d.code for d in sol.diagnostics]


def test_larger_instances_go_first_within_a_tier() -> None:
    pol = policy(
        ONE_GPU, [workload("small", profile_need("1g.10gb"), 7), workload("big", profile_need("3g.40gb"))]
    )
    sol = solve(pol, CAT, method="greedy")
    # the 3g.40gb first; four 1g.10gb fill the 4 compute slices it leaves; 3 are unmet (MIGC201)
    assert (served(sol, "big"), served(sol, "small")) == (1, 4)
    assert [n.gpus for n in sol.pools[0].nodes] == [
        (GpuLayout(mig_enabled=True, profiles=(("1g.10gb", 4), ("3g.40gb", 1))),)
    ]
    assert codes(sol) == ["MIGC201"] and not sol.pools[0].optimal  # marked as the heuristic's


def test_a_higher_tier_goes_first_whatever_its_size() -> None:
    pol = policy(
        ONE_GPU,
        [
            workload("notebooks", profile_need("1g.10gb"), 7, tenant_name="crit", tier="critical"),
            workload("training", profile_need("3g.40gb"), 2, tenant_name="lo", tier="low"),
        ],
    )
    sol = solve(pol, CAT, method="greedy")
    # size orders only within a tier: the critical 1g.10gb fill the GPU before the low 3g.40gb
    assert (served(sol, "notebooks"), served(sol, "training")) == (7, 0)


def test_a_guarantee_is_held_for_its_tenant_only() -> None:
    tenants = [tenant("a", guaranteed=Quota(profiles=(("1g.10gb", 7),))), tenant("b")]
    pol = policy(
        ONE_GPU,
        [
            workload("wa", profile_need("1g.10gb"), 2, tenant_name="a"),
            workload("wb", profile_need("1g.10gb"), 3, tenant_name="b"),
        ],
        tenants=tenants,
    )
    sol = solve(pol, CAT, method="greedy")
    # all 7 instances are a's: its 2 replicas take 2 of them, 5 stay held idle, b gets none
    assert (served(sol, "wa"), served(sol, "wb")) == (2, 0)
    assert sol.pools[0].reserved == (("a", "1g.10gb", 5),)
    assert [n.gpus for n in sol.pools[0].nodes] == [
        (GpuLayout(mig_enabled=True, profiles=(("1g.10gb", 7),)),)
    ]


def test_a_guarantee_the_gpus_cannot_hold_is_reported_with_what_was_held() -> None:
    pol = policy(ONE_GPU, [], tenants=[tenant("a", guaranteed=Quota(profiles=(("3g.40gb", 3),)))])
    sol = solve(pol, CAT, method="greedy")
    # two 3g.40gb fill the 8 memory slices: two held, the third short (MIGC200, an error)
    assert sol.pools[0].reserved == (("a", "3g.40gb", 2),)
    (d,) = sol.diagnostics
    assert d.code == "MIGC200" and "guaranteed 3 x 3g.40gb" in d.message and "room for 2" in d.message


def test_whole_gpu_replicas_take_the_first_node_with_room_and_the_reserve_comes_off_the_last() -> None:
    """greedy_cluster directly: 3 nodes of 4 GPUs, one whole node and 2 GPUs reserved -> free [4, 2]."""
    p = pool("p", "A100-SXM4-80GB", nodes=3, gpus_per_node=4, reserve_gpus=2, reserve_nodes=1)
    pol = policy([p], [])

    def whole(name: str, size: int, replicas: int) -> DemandItem:
        return DemandItem(name, "high", 0, "whole", size, (Option("p", "gpu"),), ((name, replicas),))

    items = [whole("two", 2, 1), whole("three", 3, 1), whole("one", 1, 3)]
    out = greedy_cluster(pol.clusters[0], CAT, items, [Guarantee("g", "gpu", 1, ("p",))], {})
    d = out.decisions["p"]
    # the guarantee's GPU first (node 0: 3 left); then 3 GPUs (node 0: 0 left), 2 (node 1: 0 left);
    # no GPU is left for the singles
    assert out.shortfall == {} and d.reserved == {("g", "gpu"): 1}
    assert d.served == {(1, "gpu"): 1, (0, "gpu"): 1}
    assert d.patterns == {(3,): 1, (2,): 1, RESERVE: 1}
    assert d.gpus_used == 6 and not d.optimal  # 1 single (the held GPU) + 3 + 2
