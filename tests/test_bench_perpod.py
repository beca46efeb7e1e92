"""bench/perpod.py: which size classes the loop and per-pod carving each win, as issue 22 words it."""

from __future__ import annotations

from typing import Any

from bench.perpod import duel, report


def _row(name: str, p95: dict[str, float], pods: int = 30, **more: Any) -> dict[str, Any]:
    waits = {c: {"p95": v, "pods": pods} for c, v in p95.items()}
    row = {"baseline": name, "waitSeconds": waits, "drains": 0, "evictions": 0, "blockedBy": {}}
    return row | {"instancesCarved": 0} | more


def _rows() -> dict[str, dict[str, Any]]:
    return {
        "naive": _row("naive", {"all": 100.0, "1g": 50.0}),
        # 1g: the loop 4,000 s against per-pod's 100 s (over max(120, 300)); 7g: per-pod 9,000 s
        # against the loop's 1,000 (over max(1,200, 300)); 2g: 350 vs 300, within max(360, 300)
        "default": _row("default", {"all": 900.0, "1g": 4000.0, "2g": 350.0, "7g": 1000.0}, drains=7),
        "per-pod": _row("per-pod", {"all": 800.0, "1g": 100.0, "2g": 300.0, "7g": 9000.0}),
    }


def test_each_class_goes_to_whoever_is_past_the_others_bound() -> None:
    assert duel(_rows(), "default") == {"1g": "per-pod", "2g": "even", "7g": "loop"}


def test_a_class_under_20_pods_and_an_uncontended_cell_are_not_judged() -> None:
    rows = _rows()
    rows["default"]["waitSeconds"]["2g"]["pods"] = 19
    assert "2g" not in (duel(rows, "default") or {})
    rows["naive"]["waitSeconds"]["all"]["p95"] = 0.0
    assert duel(rows, "default") is None
    assert duel(_rows(), "default+idle") is None  # no such row in the cell


def test_the_report_counts_per_class_and_shows_the_evidence_per_cell() -> None:
    cell = {
        "trace": "default",
        "nodes": 4,
        "timeScale": 4.0,
        "reconf": "60",
        "failureRate": 0.0,
        "seed": 0,
        "results": list(_rows().values()),
    }
    text = report([cell])
    assert "| default | 1g | 1 | 1 | 0 | 0 |" in text
    assert "| default | 7g | 1 | 0 | 1 | 0 |" in text
    assert "| default 4×8 ts4 60 fail 0 | default | 1g 4000/100 | 7g 1000/9000 | 7 | 0 | 0 | 0 |" in text
