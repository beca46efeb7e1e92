"""compiler/plan/json.py: the plan for tools, deterministic and strict JSON."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from test_render_support import WHOLE

from compiler.model import GpuLayout
from compiler.plan.data import Cost, Eviction, NodeChange
from compiler.plan.json import to_dict, to_json
from unit.compiler.plan.plans import empty_plan, two_node_change


def test_changes_carry_both_layouts_per_gpu() -> None:
    plan = two_node_change()
    doc = to_dict(plan)
    assert doc["hasChanges"] is True and doc["nodesTotal"] == 3
    assert doc["summary"].startswith("2 of 3 nodes change (4 GPUs reconfigured)")
    first = doc["changes"][0]
    assert first["node"] == "a100-01" and first["changedGpus"] == [0, 1]
    assert first["before"][0] == {"migEnabled": False, "profiles": {}}
    assert first["after"][0] == {"migEnabled": True, "profiles": {"1g.10gb": 7}}
    assert doc["removed"] == [{"cluster": "east", "pool": "a100", "node": "a100-09"}]


def test_a_new_node_has_null_before() -> None:
    change = NodeChange(
        "east", "a100", "n", "A100", None, (GpuLayout.of({"7g.80gb": 1}), WHOLE), (0, 1), "new"
    )
    (row,) = to_dict(replace(empty_plan(), changes=(change,)))["changes"]
    assert row["before"] is None and row["after"][1] == {"migEnabled": False, "profiles": {}}


def test_evictions_are_null_without_a_snapshot_and_a_list_with_one() -> None:
    assert to_dict(empty_plan())["evictions"] is None
    pod = Eviction("east", "n", "ml", "p", (("nvidia.com/gpu", 1),))
    with_snapshot = replace(empty_plan(), snapshot_given=True, evictions=(pod,))
    assert to_dict(with_snapshot)["evictions"] == [
        {"cluster": "east", "node": "n", "namespace": "ml", "pod": "p", "resources": {"nvidia.com/gpu": 1}}
    ]
    assert to_dict(replace(empty_plan(), snapshot_given=True))["evictions"] == []


def test_json_is_compact_sorted_and_one_line() -> None:
    plan = two_node_change()
    text = to_json(plan)
    assert text.endswith("}\n") and text.count("\n") == 1
    assert json.loads(text) == to_dict(plan)
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":")) + "\n"


def test_a_non_finite_number_is_refused_rather_than_written() -> None:
    cost = Cost("east", 8, 1, 1, 1, 0, float("nan"), 1.0, 1.0, ())
    with pytest.raises(ValueError, match="not JSON compliant"):
        to_json(replace(empty_plan(), costs=(cost,)))
