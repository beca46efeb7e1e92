"""compiler/plan/fairness.py: which priority tiers the plan shows as split, in which order, and how."""

from __future__ import annotations

from dataclasses import replace

from test_render_support import policy

from compiler.plan.data import FairShare, FairTier
from compiler.plan.fairness import fair_tiers, fairness_json, fairness_markdown, fairness_text
from compiler.solve.result import FAIRNESS_RULE, PoolResult, ServedDemand, Solution
from unit.compiler.plan.plans import empty_plan


def _pool(cluster: str, pool: str, *demand: ServedDemand) -> PoolResult:
    return PoolResult(cluster, pool, "A100-SXM4-80GB", (), demand, (), True)


def test_a_tier_served_in_full_has_no_split_and_shares_sum_over_pools() -> None:
    solution = Solution(
        pools=(
            _pool("east", "a", ServedDemand("t1", "w1", "1g.10gb", 4, 4, "high")),
            # "low" is short only once w2's two pools are summed: 3 + 1 of 4 + 4
            _pool("east", "b", ServedDemand("t2", "w2", "1g.10gb", 4, 3, "low")),
            _pool("east", "c", ServedDemand("t2", "w2", "1g.10gb", 4, 1, "low")),
        )
    )
    tiers = fair_tiers(policy(), solution)
    assert tiers == (FairTier("east", "low", FAIRNESS_RULE, (FairShare("t2", "w2", 4, 8),)),)


def test_tiers_come_highest_first_and_shares_smallest_fraction_first() -> None:
    solution = Solution(
        pools=(
            _pool(
                "east",
                "a",
                ServedDemand("t", "low-a", "gpu", 2, 1, "low"),  # 1/2
                ServedDemand("t", "high-b", "gpu", 3, 2, "high"),  # 2/3
                ServedDemand("t", "high-a", "gpu", 4, 1, "high"),  # 1/4
                ServedDemand("t", "high-c", "gpu", 0, 0, "high"),  # nothing asked: counts as 1
            ),
        )
    )
    tiers = fair_tiers(policy(), solution)
    assert [t.tier for t in tiers] == ["high", "low"]  # high (100,000) above low (1,000)
    assert [s.workload for s in tiers[0].shares] == ["high-a", "high-b", "high-c"]


def test_clusters_are_sorted_before_tiers_and_an_unknown_tier_ranks_after_known_ones() -> None:
    pol = policy()
    solution = Solution(
        pools=(
            _pool("west", "a", ServedDemand("t", "w", "gpu", 2, 0, "high")),
            _pool("east", "a", ServedDemand("t", "x", "gpu", 2, 0, "adhoc")),
            _pool("east", "b", ServedDemand("t", "y", "gpu", 2, 0, "critical")),
        )
    )
    got = [(t.cluster, t.tier) for t in fair_tiers(pol, solution)]
    assert got == [("east", "critical"), ("east", "adhoc"), ("west", "high")]


def test_text_markdown_and_json_show_the_same_shares() -> None:
    tier = FairTier("east", "low", FAIRNESS_RULE, (FairShare("t", "a", 1, 4), FairShare("t", "b", 0, 0)))
    plan = replace(empty_plan(), fairness=(tier,))
    text = fairness_text(plan)
    assert text[1] == f"fair share of tiers not served in full (rule: {FAIRNESS_RULE})"
    assert text[2:] == ["  east tier low: 1 of 4 instances", "    t/a: 1 of 4 (25%)", "    t/b: 0 of 0 (-)"]
    md = fairness_markdown(plan)
    assert md[-2:] == ["| east | low | t | a | 1 | 4 | 25% |", "| east | low | t | b | 0 | 0 | - |"]
    assert fairness_json(plan) == [
        {
            "cluster": "east",
            "tier": "low",
            "rule": FAIRNESS_RULE,
            "workloads": [
                {"tenant": "t", "workload": "a", "served": 1, "requested": 4},
                {"tenant": "t", "workload": "b", "served": 0, "requested": 0},
            ],
        }
    ]


def test_a_plan_without_short_tiers_prints_nothing() -> None:
    plan = empty_plan()
    assert fairness_text(plan) == [] and fairness_markdown(plan) == [] and fairness_json(plan) == []
