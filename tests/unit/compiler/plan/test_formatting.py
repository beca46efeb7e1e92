"""compiler/plan/formatting.py: the wording the plan's text, markdown and JSON forms share."""

from __future__ import annotations

from dataclasses import replace

from test_render_support import BALANCED, WHOLE

from compiler.model import GpuLayout
from compiler.plan.data import NodeChange, OrderCost, OrderOutcome, RemovedNode, TenantRow
from compiler.plan.formatting import (
    estimate_note,
    gpu_lines,
    gpu_text,
    money,
    order_line,
    requested_cell,
    resource_label,
    size_key,
    summary,
    tenant_text,
)
from unit.compiler.plan.plans import empty_plan


def test_gpu_text_names_what_the_gpu_carries_largest_instances_first() -> None:
    assert gpu_text(None) == "(not deployed)"
    assert gpu_text(BALANCED) == "1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb"
    assert gpu_text(WHOLE) == "whole GPU (MIG off)"  # a MIG-capable pool's GPU with MIG off
    assert gpu_text(WHOLE, (False, "none", 1)) == "whole GPU"
    assert gpu_text(WHOLE, (False, "time-slicing", 4)) == "whole GPU, time-slicing ×4"
    assert gpu_text(GpuLayout(mig_enabled=True, profiles=())) == "MIG on, no instances"


def test_size_key_orders_by_slices_then_name() -> None:
    items = [("1g.10gb", 1), ("7g.80gb", 1), ("1g.10gb+me", 1), ("3g.40gb", 1), ("odd", 1)]
    assert [n for n, _ in sorted(items, key=size_key)] == [
        "7g.80gb",
        "3g.40gb",
        "1g.10gb",
        "1g.10gb+me",
        "odd",
    ]


def test_resource_label_says_what_a_gpu_counts() -> None:
    assert resource_label("1g.10gb") == "1g.10gb"
    assert resource_label("gpu") == "whole GPU"
    assert resource_label("gpu", (False, "mps", 8)) == "GPU share (mps ×8)"


def test_summary_counts_nodes_gpus_and_removed_nodes() -> None:
    assert summary(empty_plan(nodes_total=3)) == "No changes: all 3 nodes already carry their target layout."
    change = NodeChange("east", "a100", "n1", "A100", None, (BALANCED,) * 8, (0, 3, 5), "new")
    plan = replace(
        empty_plan(nodes_total=4), changes=(change,), removed=(RemovedNode("east", "a100", "old"),)
    )
    assert summary(plan) == (
        "1 of 4 nodes change (3 GPUs reconfigured), 1 deployed nodes no longer in the policy in 1 cluster(s)."
    )


def test_gpu_lines_show_before_and_after_of_each_changed_gpu() -> None:
    change = NodeChange("east", "a100", "n1", "A100", (WHOLE,), (BALANCED, BALANCED), (0, 1), "grown")
    assert gpu_lines(change) == [
        f"gpu 0: whole GPU (MIG off) → {gpu_text(BALANCED)}",
        f"gpu 1: (not deployed) → {gpu_text(BALANCED)}",  # the node had one GPU before
    ]


def test_tenant_wording_and_estimate_note() -> None:
    row = TenantRow("east", "search", "1g.10gb", requested=8, before=4, after=8)
    assert tenant_text(row) == "4 → 8 of 8"
    assert requested_cell(row) == "8"
    recorded = replace(row, requested_before=6, estimated=False, cluster="west")
    assert tenant_text(recorded) == "4 of 6 → 8 of 8"
    assert requested_cell(recorded) == "6 → 8"
    assert estimate_note([recorded]) == ""
    assert estimate_note([row]) == "; before is estimated"
    assert estimate_note([row, recorded]) == "; before is estimated in east"


def test_money_is_per_hour_and_na_when_unpriced() -> None:
    assert money(1234.5) == "$1,234.50/h"
    assert money(None) == "n/a"


def _cost(chosen: OrderOutcome, alternative: OrderOutcome) -> OrderCost:
    return OrderCost(
        order=("disruption", "gpus", "preference"),
        other=("gpus", "disruption", "preference"),
        chosen=chosen,
        alternative=alternative,
    )


def test_order_line_compares_the_swapped_order_with_the_chosen_one() -> None:
    chosen = OrderOutcome(gpus_used=1212, nodes_changed=22, gpus_changed=130, unmet=0, proven=True)
    other = OrderOutcome(gpus_used=1200, nodes_changed=59, gpus_changed=410, unmet=0, proven=True)
    assert order_line(_cost(chosen, other)) == (
        "gpus first ([gpus, disruption, preference]) would use 12 fewer GPUs (1200 instead of 1212) "
        "and change 37 more deployed nodes (59 instead of 22; 410 instead of 130 GPUs)"
    )
    same = OrderOutcome(gpus_used=10, nodes_changed=1, gpus_changed=1, unmet=2, proven=False)
    line = order_line(_cost(replace(same, unmet=0), same))
    assert line == (
        "gpus first ([gpus, disruption, preference]) would use as many GPUs (10), change as many deployed "
        "nodes and GPUs (1 node, 1 GPU) and leave 2 replicas unmet instead of 0 "
        "(not proven optimal within the solver's time limit)"
    )
    fewer_gpus = order_line(_cost(same, replace(same, gpus_changed=3, unmet=2, proven=True)))
    assert fewer_gpus.endswith("and change as many deployed nodes (1) but 2 more GPUs (3 instead of 1)")
