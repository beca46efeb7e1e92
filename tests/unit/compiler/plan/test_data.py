"""compiler/plan/data.py: the plan's records and the two facts derived from them."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest
from test_render_support import WHOLE

from compiler.plan.data import NodeChange, RemovedNode
from unit.compiler.plan.plans import empty_plan, two_node_change


def test_where_names_the_pool_and_a_selector_placeholder() -> None:
    change = NodeChange("east", "h200", "h200-0", "H200-141GB", None, (WHOLE,), (0,), "new")
    assert change.where == "pool h200, H200-141GB"
    assert replace(change, selector=True).where == (
        "pool h200, H200-141GB; selector pool: stands for any matching node"
    )


def test_a_plan_has_changes_when_a_node_changes_or_is_removed() -> None:
    assert not empty_plan().has_changes
    assert two_node_change().has_changes
    only_removed = replace(empty_plan(), removed=(RemovedNode("east", "a100", "gone"),))
    assert only_removed.has_changes


def test_records_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        empty_plan().nodes_total = 3  # type: ignore[misc]
