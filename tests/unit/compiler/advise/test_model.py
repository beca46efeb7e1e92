"""compiler/advise/model.py: a sizing row's derived money and completeness, and the JSON form of the
advice (``migc advise -o json``: camelCase keys a tool reads)."""

from __future__ import annotations

import pytest

from compiler.advise.model import Advice, ClusterSizing, Finding, PoolAdvice, SizingRow


def _row(gpus: int = 4, balanced: int | None = 6, whole: int = 10, served: int = 9) -> SizingRow:
    return SizingRow("A100-SXM4-80GB", 3.25, True, gpus, 8, 1, served, 9, balanced, whole, True)


def test_a_row_s_cost_and_savings_are_gpu_differences_times_the_price() -> None:
    row = _row()
    assert row.cost_per_hour == 13.0  # 4 x 3.25
    assert row.balanced_saving_per_hour == 6.5  # (6 - 4) x 3.25
    assert row.whole_saving_per_hour == 19.5  # (10 - 4) x 3.25
    assert _row(balanced=None).balanced_saving_per_hour is None  # a model without MIG has no baseline
    assert _row(gpus=12).whole_saving_per_hour == -6.5  # the optimum can cost more than a GPU per pod
    assert row.complete and not _row(served=8).complete


def test_a_row_in_json_carries_the_derived_values_under_stable_names() -> None:
    d = _row().to_dict()
    assert d == {
        "gpuModel": "A100-SXM4-80GB",
        "mig": True,
        "pricePerGpuHour": 3.25,
        "gpus": 4,
        "gpusPerNode": 8,
        "nodes": 1,
        "costPerHour": 13.0,
        "replicasServed": 9,
        "replicasWanted": 9,
        "complete": True,
        "optimal": True,
        "allBalancedGpus": 6,
        "savingVsAllBalancedPerHour": 6.5,
        "wholeGpuPerPodGpus": 10,
        "savingVsWholeGpuPerPodPerHour": 19.5,
    }


def test_the_advice_nests_pools_sizing_and_findings_in_order() -> None:
    note = Finding("MIGC507", "note", "one profile only")
    a = PoolAdvice("east", "a100", "A100-SXM4-80GB", 16, "mig", "mig", "static", (note,))
    b = PoolAdvice("east", "l40s", "L40S", 4, "time-slicing x4", None, None, ())
    sizing = ClusterSizing("east", (_row(),), (Finding("MIGC520", "note", "cheapest"),))
    advice = Advice((a, b), (sizing,), (Finding("MIGC530", "warning", "observed"),))
    d = advice.to_dict()
    assert [p["pool"] for p in d["pools"]] == ["a100", "l40s"]
    assert d["pools"][0]["partitionMode"] == "static" and d["pools"][0]["gpuModel"] == "A100-SXM4-80GB"
    assert d["pools"][0]["findings"] == [
        {"code": "MIGC507", "severity": "note", "message": "one profile only"}
    ]
    assert d["pools"][1]["recommended"] is None and d["pools"][1]["partitionMode"] is None
    assert d["sizing"][0]["cluster"] == "east" and d["sizing"][0]["rows"][0]["costPerHour"] == 13.0
    assert d["findings"] == [{"code": "MIGC530", "severity": "warning", "message": "observed"}]


def test_a_pool_is_looked_up_by_cluster_and_name() -> None:
    a = PoolAdvice("east", "a100", "A100-SXM4-80GB", 16, "mig", "mig", "static", ())
    b = PoolAdvice("west", "a100", "A100-SXM4-80GB", 8, "mig", "mig", "static", ())
    advice = Advice((a, b), ())
    assert advice.pool("west", "a100") is b
    with pytest.raises(KeyError):
        advice.pool("east", "l40s")
