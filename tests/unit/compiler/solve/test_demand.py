"""compiler/solve/demand.py: how workloads and guarantees become solver demand.

Expected values come from the A100-SXM4-80GB profile table (catalog: 1g.10gb = 1 compute and 1
memory slice of 10 GB, 1g.20gb = 1 compute and 2 memory slices of 20 GB, 2g.20gb = 2 and 2, ...)
and from the docstrings: the smallest fitting profile blocks the fewest memory slices; merged items
are split back max-min fair on the served fraction.
"""

from __future__ import annotations

import pytest
from test_solve_support import policy, pool, profile_need, tenant, workload

from compiler.catalog import load_catalog
from compiler.model import Need, Quota, Sharing
from compiler.solve.demand import (
    Option,
    build_demand,
    guarantee_pools,
    offers_whole,
    smallest_fitting,
    split_served,
    tenant_guarantees,
)

CAT = load_catalog()
A100 = CAT.get("A100-SXM4-80GB")


@pytest.mark.parametrize(
    ("memory_gb", "compute", "expected"),
    [
        (5, 1, "1g.10gb"),  # never the +me twin of the same size
        (15, 1, "1g.20gb"),  # 2 memory slices beat 2g.20gb's 2 memory + 2 compute
        (15, 2, "2g.20gb"),
        (40, 0, "3g.40gb"),  # 3g.40gb and 4g.40gb block 4 memory slices: fewer compute wins
        (80, 1, "7g.80gb"),
        (81, 1, None),
    ],
)
def test_smallest_fitting_blocks_the_fewest_memory_slices(
    memory_gb: float, compute: int, expected: str | None
) -> None:
    assert A100 is not None
    got = smallest_fitting(A100, memory_gb, compute)
    assert (got.name if got else None) == expected


def test_split_served_is_max_min_fair_and_capped() -> None:
    # a wants 1, b wants 3: 2 served go one each (a reaches 1/1 first, b then gets 1/3)
    assert split_served([("a", 1), ("b", 3)], 2) == [("a", 1, 1), ("b", 3, 1)]
    # ties at 0 go to the one wanting fewer (a: 1/2), then b (1/4), then b again (1/4 < 1/2)
    assert split_served([("a", 2), ("b", 4)], 3) == [("a", 2, 1), ("b", 4, 2)]
    # more served than wanted never hands out more than each asked
    assert split_served([("a", 2), ("b", 1)], 10) == [("a", 2, 2), ("b", 1, 1)]
    assert split_served([("solo", 3)], 7) == [("solo", 3, 3)]
    assert split_served([("a", 0), ("b", 2)], 1) == [("a", 0, 0), ("b", 2, 1)]


def test_same_asks_merge_into_one_item_split_by_name() -> None:
    pol = policy(
        [pool("p")],
        [
            workload("zeta", profile_need("1g.10gb"), 2),
            workload("alpha", profile_need("1g.10gb"), 3),
            workload("other", profile_need("3g.40gb"), 1),
        ],
    )
    items = build_demand(pol, pol.clusters[0], CAT)
    by_names = {tuple(n for n, _ in i.workloads): i for i in items}
    assert set(by_names) == {("alpha", "zeta"), ("other",)}
    merged = by_names[("alpha", "zeta")]
    assert merged.workloads == (("alpha", 3), ("zeta", 2)) and merged.replicas == 5
    assert merged.kind == "mig" and merged.options == (Option("p", "1g.10gb"),)


def test_a_preference_list_keeps_its_rank_order_across_pools() -> None:
    pol = policy(
        [pool("b"), pool("a")],
        [workload("w", profile_need("3g.40gb", "1g.10gb"))],
    )
    (item,) = build_demand(pol, pol.clusters[0], CAT)
    assert item.options == (
        Option("a", "3g.40gb", 0),
        Option("b", "3g.40gb", 0),
        Option("a", "1g.10gb", 1),
        Option("b", "1g.10gb", 1),
    )


def test_whole_gpu_needs_fit_one_node_and_skip_shared_pools() -> None:
    shared = pool("ts", "L40S", gpus_per_node=4, mig=False, sharing=Sharing("time-slicing", 4))
    pol = policy(
        [pool("small", gpus_per_node=2), pool("big", gpus_per_node=8), shared],
        [
            workload("train", Need(gpus=4)),
            workload("huge", Need(gpus=16)),
            workload("none", profile_need("9g.1tb")),
        ],
    )
    items = {i.workloads[0][0]: i for i in build_demand(pol, pol.clusters[0], CAT)}
    assert items["train"].kind == "whole" and items["train"].size == 4
    assert items["train"].options == (Option("big", "gpu"),)
    assert items["huge"].options == () and "16 whole unshared GPU(s)" in items["huge"].reason
    assert items["none"].options == () and "9g.1tb" in items["none"].reason
    assert not offers_whole(shared) and offers_whole(pool("m"))


def test_guarantees_go_where_the_tenant_runs_or_nowhere() -> None:
    pol = policy(
        [pool("mig"), pool("l4", "L4", mig=False)],
        [workload("w", profile_need("1g.10gb"))],
        tenants=[tenant("t1", guaranteed=Quota(profiles=(("1g.10gb", 2), ("9g.1tb", 1)), gpus=1))],
    )
    assert guarantee_pools(pol.clusters[0], CAT, "gpu") == ("l4", "mig")
    assert guarantee_pools(pol.clusters[0], CAT, "1g.10gb") == ("mig",)
    per_cluster, nowhere = tenant_guarantees(pol, CAT)
    held = {(g.resource, g.amount, g.pools) for g in per_cluster["c1"]}
    assert held == {("1g.10gb", 2, ("mig",)), ("gpu", 1, ("l4", "mig"))}
    assert nowhere == [("t1", "9g.1tb", 1)]
