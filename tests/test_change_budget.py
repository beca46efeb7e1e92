"""compile/plan warn (MIGC423) when a change reconfigures more nodes than dailyChangeBudget allows."""

from __future__ import annotations

from compiler.commands.compile import change_budget
from compiler.model import GpuLayout, PartitionPolicy, Policy, Span
from compiler.solve.result import NodeResult, PoolResult, Solution

OLD = (GpuLayout.of({"1g.10gb": 7}),)
NEW = (GpuLayout.of({"3g.40gb": 2}),)


def solution(changed: int, unchanged: int, new_nodes: int) -> Solution:
    nodes = [NodeResult(f"c{i}", NEW, OLD, (0,)) for i in range(changed)]
    nodes += [NodeResult(f"u{i}", OLD, OLD, ()) for i in range(unchanged)]
    nodes += [NodeResult(f"n{i}", NEW, None, (0,)) for i in range(new_nodes)]  # first rollout: not counted
    pool = PoolResult("east", "a100", "A100-SXM4-80GB", tuple(nodes), (), (), True)
    return Solution(pools=(pool,))


def policy(budget: int) -> Policy:
    part = PartitionPolicy(daily_change_budget=budget, span=Span("partition.yaml", 4, 9, "metadata.name"))
    return Policy(clusters=(), tenants=(), workloads=(), partition=part)


def test_budget_exceeded_is_a_warning_at_the_partition_policy() -> None:
    diags = change_budget(policy(2), solution(changed=3, unchanged=5, new_nodes=4))
    assert [(d.code, d.severity.name, d.file, d.line) for d in diags] == [
        ("MIGC423", "WARNING", "partition.yaml", 4)
    ]
    assert "reconfigures 3 nodes" in diags[0].message


def test_within_budget_unlimited_or_first_rollout_is_silent() -> None:
    assert change_budget(policy(3), solution(changed=3, unchanged=1, new_nodes=0)) == []
    assert change_budget(policy(0), solution(changed=30, unchanged=0, new_nodes=0)) == []
    assert change_budget(policy(1), solution(changed=0, unchanged=2, new_nodes=9)) == []
