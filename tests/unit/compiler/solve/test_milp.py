"""compiler/solve/milp.py: the exact pool-level model of one cluster, on instances small enough to
solve by hand (one A100-SXM4-80GB GPU: 7 compute, 8 memory slices; 3g.40gb = 3 + 4, 4g.40gb = 4 + 4,
1g.10gb = 1 + 1), checked against the level order its module docstring states.
"""

from __future__ import annotations

from test_solve_support import policy, pool, profile_need, tenant, workload

from compiler.catalog import load_catalog
from compiler.model import GpuLayout, Policy, Quota
from compiler.solve.demand import build_demand, tenant_guarantees
from compiler.solve.milp import ClusterOutcome, job_patterns, solve_cluster

CAT = load_catalog()


def _solve(
    pol: Policy, current: dict[tuple[str, str], tuple[GpuLayout, ...]] | None = None
) -> ClusterOutcome:
    cluster = pol.clusters[0]
    guarantees, _ = tenant_guarantees(pol, CAT)
    return solve_cluster(
        cluster, CAT, build_demand(pol, cluster, CAT), guarantees[cluster.name], current or {}, 30.0
    )


def test_job_patterns_are_every_multiset_that_fits_a_node() -> None:
    assert job_patterns([4, 2, 2], 8) == [
        (2,), (2, 2), (2, 2, 2), (2, 2, 2, 2), (4,), (4, 2), (4, 2, 2), (4, 4),
    ]  # fmt: skip
    assert job_patterns([3], 2) == []


def test_a_tier_short_of_room_is_shared_leximin_not_by_count() -> None:
    pol = policy(
        [pool("p", nodes=1, gpus_per_node=1)],
        [
            workload("big", profile_need("4g.40gb"), 1, tenant_name="a"),
            workload("small", profile_need("1g.10gb"), 7, tenant_name="b"),
        ],
    )
    out = _solve(pol)
    # 7 x 1g.10gb would serve the most replicas but leave big at 0; leximin serves big (1/1)
    # and the 3 1g.10gb the remaining 3 compute slices hold (3/7)
    served = out.decisions["p"].served
    assert sorted(served.values()) == [1, 3]
    assert out.decisions["p"].layouts == {GpuLayout.of({"4g.40gb": 1, "1g.10gb": 3}): 1}
    assert out.fair_tiers  # the rule was needed


def test_spare_room_is_filled_but_a_deployed_layout_that_serves_is_kept() -> None:
    pol = policy(
        [pool("p", nodes=1, gpus_per_node=1)],
        [workload("w", profile_need("3g.40gb")), workload("v", profile_need("1g.10gb"))],
    )
    fresh = _solve(pol).decisions["p"]
    # nothing deployed: the layout is maximal in the profiles asked for (3g.40gb + 4 x 1g.10gb
    # use all 7 compute slices; 2 x 3g.40gb would not serve v)
    assert fresh.layouts == {GpuLayout.of({"3g.40gb": 1, "1g.10gb": 4}): 1}
    deployed = (GpuLayout.of({"3g.40gb": 1, "1g.10gb": 1}),)  # serves both, 3 slices idle
    kept = _solve(pol, {("p", "p-n00"): deployed}).decisions["p"]
    # disruption comes before fill: the node that already serves is left as it is
    assert kept.layouts == {deployed[0]: 1}
    assert sum(kept.kept.values()) == 1


def test_a_guarantee_the_pool_cannot_hold_is_a_shortfall() -> None:
    pol = policy(
        [pool("p", nodes=1, gpus_per_node=1)],
        [],
        tenants=[tenant("t1", guaranteed=Quota(profiles=(("3g.40gb", 3),)))],
    )
    out = _solve(pol)
    assert out.shortfall == {("t1", "3g.40gb"): 1}  # two 3g.40gb use the 8 memory slices
    assert out.decisions["p"].reserved == {("t1", "3g.40gb"): 2}


def test_pools_no_item_shares_are_solved_apart_and_both_answer() -> None:
    pol = policy(
        [pool("a", nodes=1, gpus_per_node=2), pool("b", nodes=1, gpus_per_node=2)],
        [
            workload("wa", profile_need("7g.80gb"), 2, pools=["a"]),
            workload("wb", profile_need("1g.10gb"), 1, pools=["b"]),
        ],
    )
    out = _solve(pol)
    assert out.unsolved == () and out.result is not None and out.result.optimal
    assert out.decisions["a"].layouts == {GpuLayout.of({"7g.80gb": 1}): 2}
    assert out.decisions["a"].gpus_used == 2 and out.decisions["b"].gpus_used == 1
