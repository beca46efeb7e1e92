"""compiler/render/capacity.py: the CapacityReport the plan reads its tenant "before" from."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
from test_render_support import default_solution, pools

from compiler.model import Cluster
from compiler.render.capacity import CAPACITY_PATH, capacity_configmap, capacity_document
from compiler.solve.result import Solution

REV = "0123456789abcdef"  # a NodeAssignment revision: 12-64 hex digits
SCHEMA = Path(__file__).resolve().parents[4] / "schema" / "capacity.schema.json"


def test_the_report_lists_each_pool_with_capacity_and_demand_and_matches_its_schema() -> None:
    doc = capacity_document(Cluster("east", pools()), default_solution(), REV)
    jsonschema.validate(doc, json.loads(SCHEMA.read_text(encoding="utf-8")))
    assert (doc["kind"], doc["cluster"], doc["assignmentRevision"]) == ("CapacityReport", "east", REV)
    by_pool = {p["name"]: p for p in doc["pools"]}
    assert list(by_pool) == ["a100", "h200", "l40s"]
    a100 = by_pool["a100"]
    # a100-01: 8 x (2 + 1 + 1); a100-02: 6 x 7 x 1g.10gb and 2 whole GPUs
    assert a100["capacity"] == {"1g.10gb": 16 + 42, "2g.20gb": 8, "3g.40gb": 8, "gpu": 2}
    assert a100["gpus"] == 16
    assert a100["demand"] == [
        {
            "tenant": "search",
            "workload": "bert",
            "resource": "1g.10gb",
            "priorityTier": "high",
            "requested": 8,
            "served": 8,
        }
    ]


def test_reserved_instances_are_sorted_and_dynamic_pools_left_out() -> None:
    base = default_solution()
    reserved = (("search", "1g.10gb", 2), ("research", "gpu", 1))
    sol = Solution(pools=tuple(replace(p, reserved=reserved) if p.pool == "a100" else p for p in base.pools))
    cluster_pools = tuple(
        replace(p, allocation="dra", dra_mig="dynamic") if p.name == "h200" else p for p in pools()
    )
    doc = capacity_document(Cluster("east", cluster_pools), sol, REV)
    assert [p["name"] for p in doc["pools"]] == ["a100", "l40s"]  # a DynamicMIG pool has no layout
    assert doc["pools"][0]["reserved"] == [
        {"tenant": "research", "resource": "gpu", "instances": 1},
        {"tenant": "search", "resource": "1g.10gb", "instances": 2},
    ]
    assert capacity_document(Cluster("west", pools()), sol, "r")["pools"] == []  # another cluster's


def test_the_configmap_carries_the_report_and_its_revision() -> None:
    doc = capacity_document(Cluster("east", pools()), default_solution(), REV)
    path, obj = capacity_configmap(doc)
    assert path == CAPACITY_PATH == "migc-system/configmap-migc-capacity.yaml"
    assert obj["metadata"]["namespace"] == "migc-system" and obj["metadata"]["name"] == "migc-capacity"
    assert obj["metadata"]["annotations"] == {"migc.dev/assignment-revision": REV}
    assert json.loads(obj["data"]["capacity.json"]) == doc
