"""compiler/plan/overview.py: node changes grouped the way a reviewer reads them, and the summary."""

from __future__ import annotations

from dataclasses import replace

from test_render_support import BALANCED, SEVEN_SMALL, WHOLE

from compiler.plan.data import CapacityRow, Cost, NodeChange, TenantRow, Unmet
from compiler.plan.overview import group_changes, node_names, spans, summary_items, transition_text
from unit.compiler.plan.plans import empty_plan

SMALL = "7x 1g.10gb"
MIG_OFF = "whole GPU (MIG off)"


def _change(node: str, changed: tuple[int, ...], pool: str = "a100", new: bool = False) -> NodeChange:
    before = None if new else (WHOLE,) * 8
    after = tuple(SEVEN_SMALL if i in changed else WHOLE for i in range(8))
    return NodeChange("east", pool, node, "A100", before, after, changed, "demand moved")


def test_spans_collapses_runs() -> None:
    assert spans([5, 0, 2, 1]) == "0-2, 5"
    assert spans([3]) == "3"
    assert spans([]) == ""


def test_node_names_lists_six_then_counts_the_rest() -> None:
    assert node_names(["a", "b"], quote="`") == "`a`, `b`"
    assert node_names([f"n{i}" for i in range(8)]) == "n0, n1, n2, n3, n4, n5 and 2 more"


def test_nodes_changing_the_same_way_are_one_group_in_first_seen_order() -> None:
    changes = [
        _change("n2", (0, 1)),
        _change("n9", (0,)),  # one GPU changes: another shape
        _change("n1", (6, 7)),  # same shape as n2 (two GPUs, same before → after), other indices
        _change("n3", (0, 1), new=True),  # new node: its own group
        _change("n4", (0, 1), pool="b"),
    ]
    groups = group_changes(changes)
    assert [g.nodes for g in groups] == [("n2", "n1"), ("n9",), ("n3",), ("n4",)]
    first = groups[0]
    assert first.gpus == 4 and not first.new
    assert transition_text(first, first.transitions[0]) == f"2 nodes × 2 GPUs: {MIG_OFF} → {SMALL}"
    assert groups[2].new and transition_text(groups[2], groups[2].transitions[0]).startswith(
        "2 GPUs (0-1): (not deployed) → "
    )
    lone = groups[1]
    assert transition_text(lone, lone.transitions[0]) == f"GPU 0: {MIG_OFF} → {SMALL}"


def test_one_node_lists_each_transition_with_its_gpus() -> None:
    after = (BALANCED, BALANCED, SEVEN_SMALL) + (WHOLE,) * 5
    change = NodeChange("east", "a100", "n1", "A100", (WHOLE,) * 8, after, (0, 1, 2), "r")
    (group,) = group_changes([change])
    assert [transition_text(group, t) for t in group.transitions] == [
        f"2 GPUs (0-1): {MIG_OFF} → 1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb",
        f"GPU 2: {MIG_OFF} → {SMALL}",
    ]


def test_summary_of_a_plan_without_changes_lists_only_unmet_demand() -> None:
    assert summary_items(empty_plan(nodes_total=2)) == []
    unmet = Unmet("east", "a100", "search", "bert", "1g.10gb", requested=8, served=5, priority_tier="high")
    other = replace(unmet, workload="gpt", requested=2, served=0)
    items = summary_items(replace(empty_plan(), unmet=(unmet, other)))
    assert items == [
        ("unmet demand", ["5 of 10 instances/GPUs asked by 2 workload(s) not served (see below)"])
    ]


def test_summary_of_a_change_sums_tenants_per_unit_and_prices_the_gpus() -> None:
    plan = replace(
        empty_plan(nodes_total=2),
        changes=(_change("n1", (0,)),),
        capacity=(
            CapacityRow("east", "a100", "1g.10gb", 0, 7),
            CapacityRow("east", "a100", "gpu", 8, 7),
            CapacityRow("east", "a100", "2g.20gb", 1, 1),  # unchanged: not listed
        ),
        tenants=(
            TenantRow("east", "search", "1g.10gb", requested=8, before=0, after=4, pool="a100"),
            TenantRow("east", "search", "1g.10gb", requested=4, before=0, after=3, pool="b"),
        ),
        costs=(Cost("east", 16, 8, 9, 16, 2, 28.0, 31.5, 56.0, ()),),
    )
    assert dict(summary_items(plan)) == {
        "capacity": ["east/a100: 1g.10gb 0 → 7, whole GPU 8 → 7"],
        "tenants (served of requested; before is estimated)": ["search: 1g.10gb 0 → 7 of 12"],
        "cost per hour (GPUs in use)": [
            "east: $28.00/h → $31.50/h (8 → 9 of 16 GPUs); all-balanced: $56.00/h (16 GPUs, "
            "2 demanded instances unserved)"
        ],
        "unmet demand": ["none: all demand is served"],
    }
