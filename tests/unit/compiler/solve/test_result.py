"""compiler/solve/result.py: a served-demand row is written one way, by ``ServedDemand.to_dict``, in
both documents a reader or a tool gets it from — the CapacityReport the cluster carries
(``schema/capacity.schema.json``, no ``unmet``) and the solution export of ``migc plan -o json``."""

from __future__ import annotations

from test_render_support import default_solution, policy

from compiler.render.capacity import capacity_document
from compiler.solve.export import solution_to_dict
from compiler.solve.result import ServedDemand


def test_a_row_names_every_field_as_the_schemas_do() -> None:
    row = ServedDemand("search", "bert", "1g.10gb", 40, 32, "high")
    assert row.to_dict() == {
        "tenant": "search",
        "workload": "bert",
        "resource": "1g.10gb",
        "priorityTier": "high",
        "requested": 40,
        "served": 32,
    }
    assert row.unmet == 8


def test_the_capacity_report_and_the_export_write_the_same_rows() -> None:
    sol = default_solution()  # bert: 8 of 8 1g.10gb in pool a100; notebooks: 6 of 6 whole GPUs in l40s
    bert = {
        "tenant": "search",
        "workload": "bert",
        "resource": "1g.10gb",
        "priorityTier": "high",
        "requested": 8,
        "served": 8,
    }
    report = capacity_document(policy().clusters[0], sol, "rev")
    assert {p["name"]: p["demand"] for p in report["pools"]}["a100"] == [bert]
    (east,) = solution_to_dict(sol)["clusters"]
    exported = {p["name"]: p["demand"] for p in east["pools"]}
    assert exported["a100"] == [{**bert, "unmet": 0}]
    assert list(exported["l40s"][0]) == [*bert, "unmet"]  # the key order both documents had
    assert exported["l40s"][0]["resource"] == "gpu" and exported["l40s"][0]["priorityTier"] == "low"
