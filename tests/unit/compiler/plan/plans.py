"""Hand-made plans for the plan writers' unit tests (no solver, no policy files)."""

from __future__ import annotations

from test_render_support import SEVEN_SMALL, WHOLE

from compiler.plan.data import NodeChange, Plan, RemovedNode


def empty_plan(nodes_total: int = 0, clusters: tuple[str, ...] = ("east",)) -> Plan:
    """A plan with nothing in it: each test adds what it looks at with ``dataclasses.replace``."""
    return Plan(
        clusters=clusters,
        nodes_total=nodes_total,
        changes=(),
        removed=(),
        capacity=(),
        tenants=(),
        unmet=(),
        evictions=(),
        costs=(),
    )


def two_node_change() -> Plan:
    """Two a100 nodes of cluster east that change the same way (GPUs 0 and 1: whole → 7x 1g.10gb),
    and one deployed node no longer in the policy."""
    before = (WHOLE,) * 8
    after = (SEVEN_SMALL, SEVEN_SMALL) + (WHOLE,) * 6
    changes = tuple(
        NodeChange(
            "east", "a100", n, "A100-SXM4-80GB", before, after, (0, 1), "pool a100 capacity +14 1g.10gb"
        )
        for n in ("a100-01", "a100-02")
    )
    return Plan(
        clusters=("east",),
        nodes_total=3,
        changes=changes,
        removed=(RemovedNode("east", "a100", "a100-09"),),
        capacity=(),
        tenants=(),
        unmet=(),
        evictions=(),
        costs=(),
    )
