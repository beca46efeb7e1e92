"""compiler/plan/text.py: the plan as a terminal shows it, grouped or per GPU."""

from __future__ import annotations

from dataclasses import replace

from compiler.plan.data import Eviction, Unmet
from compiler.plan.text import to_text
from unit.compiler.plan.plans import empty_plan, two_node_change

MOVE = "whole GPU (MIG off) → 7x 1g.10gb"


def test_no_changes_is_one_line() -> None:
    assert (
        to_text(empty_plan(nodes_total=4)) == "No changes: all 4 nodes already carry their target layout.\n"
    )


def test_identical_nodes_are_one_entry_unless_detail_is_asked() -> None:
    plan = two_node_change()
    assert to_text(plan).splitlines()[-4:] == [
        "cluster east",
        "  ~ 2 nodes a100-01, a100-02 (pool a100, A100-SXM4-80GB): pool a100 capacity +14 1g.10gb",
        f"      2 nodes × 2 GPUs: {MOVE}",
        "  - node a100-09 (pool a100): no longer in the policy; left as deployed",
    ]
    detail = to_text(plan, detail=True).splitlines()
    assert "  ~ node a100-01 (pool a100, A100-SXM4-80GB): pool a100 capacity +14 1g.10gb" in detail
    assert detail.count(f"      gpu 0: {MOVE}") == 2 and detail.count(f"      gpu 1: {MOVE}") == 2


def test_evictions_are_listed_only_when_a_snapshot_was_given() -> None:
    plan = two_node_change()
    assert "expected evictions" not in to_text(plan)
    quiet = to_text(replace(plan, snapshot_given=True)).splitlines()
    assert "expected evictions: none (no GPU pods on reconfigured nodes)" in quiet
    pod = Eviction("east", "a100-01", "ml", "trainer", (("nvidia.com/gpu", 2), ("nvidia.com/mig-1g.10gb", 1)))
    lines = to_text(replace(plan, snapshot_given=True, evictions=(pod,))).splitlines()
    at = lines.index("expected evictions (1 GPU pods on reconfigured nodes)")
    assert lines[at + 1] == "  a100-01: ml/trainer (nvidia.com/gpu=2, nvidia.com/mig-1g.10gb=1)"


def test_unmet_demand_names_the_unit_of_the_pool() -> None:
    unmet = Unmet("east", "l40s", "research", "notebooks", "gpu", requested=6, served=4, priority_tier="low")
    plan = replace(empty_plan(), unmet=(unmet,), pool_kinds={("east", "l40s"): (False, "time-slicing", 4)})
    lines = to_text(plan).splitlines()
    assert lines[-2:] == [
        "unmet demand",
        "  east/l40s research/notebooks (low): 4 of 6 GPU share (time-slicing ×4)",
    ]
