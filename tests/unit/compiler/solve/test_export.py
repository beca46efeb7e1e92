"""compiler/solve/export.py: the Solution document (``migc plan -o json``) from a Solution built by hand.

Two clusters given out of order, one pool with a changed node, a reservation and two workloads of
one tenant on one resource: every number below is a sum of the inputs written here.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from compiler.diagnostics import make
from compiler.model import GpuLayout
from compiler.solve.export import API_VERSION, layout_to_dict, solution_to_dict
from compiler.solve.result import NodeResult, PoolResult, ServedDemand, Solution

REPO = Path(__file__).resolve().parents[4]
SEVEN = GpuLayout.of({"1g.10gb": 7})
MIXED = GpuLayout.of({"3g.40gb": 1, "1g.10gb": 4})
WHOLE = GpuLayout.whole()


def _solution() -> Solution:
    west = PoolResult(
        cluster="west",
        pool="a100",
        gpu_model="A100-SXM4-80GB",
        nodes=(
            NodeResult("n1", (SEVEN, MIXED), (SEVEN, SEVEN), (1,)),
            NodeResult("n2", (WHOLE, WHOLE), None, (0, 1)),
        ),
        demand=(
            ServedDemand("t", "a", "1g.10gb", 10, 9, "high"),
            ServedDemand("t", "b", "1g.10gb", 2, 1, "high"),
            ServedDemand("t", "c", "3g.40gb", 1, 1, "high"),
        ),
        layout_counts=((SEVEN, 1), (MIXED, 1), (WHOLE, 2)),
        optimal=True,
        lower_bound_gpus=1.5,
        gpus_used=2,
        solve_seconds=3.25,
        reserved=(("t", "1g.10gb", 2), ("u", "gpu", 1)),
    )
    east = PoolResult(
        "east", "z", "L40S", (NodeResult("e1", (WHOLE,), (WHOLE,), ()),), (), ((WHOLE, 1),), False
    )
    return Solution(pools=(west, east), diagnostics=(make("MIGC201", "unmet demand"),))


def test_layouts_are_written_as_counts() -> None:
    assert layout_to_dict(MIXED) == {"migEnabled": True, "profiles": {"1g.10gb": 4, "3g.40gb": 1}}
    assert layout_to_dict(WHOLE) == {"migEnabled": False, "profiles": {}}


def test_summary_sums_every_pool() -> None:
    doc = solution_to_dict(_solution())
    assert doc["apiVersion"] == API_VERSION and doc["kind"] == "Solution"
    assert doc["summary"] == {
        "optimal": False,  # one pool (east) is the heuristic's
        "gpusTotal": 5,
        "gpusUsed": 2,
        "lowerBoundGpus": 1.5,
        "nodesChanged": 2,
        "gpusChanged": 3,
        "requested": 13,
        "served": 11,
        "unmet": 2,
    }
    assert [d["code"] for d in doc["diagnostics"]] == ["MIGC201"]


def test_clusters_sorted_and_each_gpu_shows_before_and_after() -> None:
    doc = solution_to_dict(_solution())
    assert [c["name"] for c in doc["clusters"]] == ["east", "west"]
    (pool,) = doc["clusters"][1]["pools"]
    n1, n2 = pool["nodes"]
    assert (n1["changed"], n1["changedGpus"]) == (True, [1])
    assert [g["changed"] for g in n1["gpus"]] == [False, True]
    assert n1["gpus"][1]["current"] == layout_to_dict(SEVEN) and n1["gpus"][1]["profiles"] == {
        "1g.10gb": 4,
        "3g.40gb": 1,
    }
    assert n2["gpus"][0]["current"] is None  # nothing deployed known
    assert pool["capacity"] == {"1g.10gb": 11, "3g.40gb": 1, "gpu": 2}
    assert pool["demand"][1] == {
        "tenant": "t", "workload": "b", "resource": "1g.10gb", "priorityTier": "high",
        "requested": 2, "served": 1, "unmet": 1,
    }  # fmt: skip


def test_tenants_merge_workloads_and_reservations_per_resource() -> None:
    (pool,) = solution_to_dict(_solution())["clusters"][1]["pools"]
    assert pool["tenants"] == [
        {
            "tenant": "t",
            "resources": [
                {"resource": "1g.10gb", "requested": 12, "served": 10, "unmet": 2, "reserved": 2},
                {"resource": "3g.40gb", "requested": 1, "served": 1, "unmet": 0, "reserved": 0},
            ],
        },
        {
            "tenant": "u",
            "resources": [{"resource": "gpu", "requested": 0, "served": 0, "unmet": 0, "reserved": 1}],
        },
    ]


def test_no_timing_reaches_the_document() -> None:
    sol = _solution()
    again = Solution(
        pools=tuple(PoolResult(**{**p.__dict__, "solve_seconds": 99.0}) for p in sol.pools),
        diagnostics=sol.diagnostics,
    )
    assert json.dumps(solution_to_dict(sol)) == json.dumps(solution_to_dict(again))


def test_the_document_holds_its_schema() -> None:
    schema = json.loads((REPO / "schema" / "solution.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(solution_to_dict(_solution()), schema)
