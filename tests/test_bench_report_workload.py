"""bench.report_workload: the report-shaped traces are what its docstring says, and read cleanly."""

from __future__ import annotations

import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench import report_workload as rw
from compiler.catalog import load_catalog
from compiler.simulate.engine import Result
from compiler.simulate.trace import profile_for, read_trace

RATE_4 = rw.RATES[(4, 1)]


def _model() -> Any:
    model = load_catalog().by_product(rw.PRODUCT)
    assert model is not None
    return model


def test_deterministic_per_seed_and_a_higher_rate_keeps_every_job() -> None:
    a, b = rw.jobs(1, 3.0), rw.jobs(1, 3.0)
    assert a == b
    assert rw.to_csv(a) == rw.to_csv(b)
    assert rw.jobs(2, 3.0) != a
    # time rescaling: job i keeps its class, size and run time, and only moves earlier, at a higher rate
    more = rw.jobs(1, 4.0)
    assert len(more) > len(a)
    for x, y in zip(a, more, strict=False):
        assert (x.cls, x.num_gpu, x.gpu_milli, x.duration) == (y.cls, y.num_gpu, y.gpu_milli, y.duration)
        assert y.arrival <= x.arrival


def test_class_shares_sizes_and_run_times_are_the_docstrings() -> None:
    js = rw.jobs(1, RATE_4)
    assert len(js) > 3000
    n = len(js)
    shares = Counter(j.cls for j in js)
    for c in rw.CLASSES:
        assert abs(shares[c.name] / n - c.share) < 0.03, (c.name, shares[c.name] / n)
    multi = Counter(j.num_gpu for j in js if j.cls == "multi-GPU")
    total = sum(multi.values())
    assert set(multi) == {2, 4, 8}
    for k, p in rw.MULTI_SIZES:
        assert abs(multi[k] / total - p) < 0.1
    for j in js:
        c = next(c for c in rw.CLASSES if c.name == j.cls)
        assert rw.MIN_SECONDS <= j.duration <= c.cap_seconds
        if j.cls == "small":
            assert 50 <= j.gpu_milli <= 125 and j.num_gpu == 1
        elif j.cls == "medium":
            assert 143 <= j.gpu_milli <= 428 and j.num_gpu == 1
        else:
            assert j.gpu_milli == 1000
    # heavy tail: the median near the class's, the mean well above it (lognormal: e^(sigma²/2) ×)
    small = sorted(j.duration for j in js if j.cls == "small")
    median = small[len(small) // 2]
    assert 0.8 * 1800 < median < 1.25 * 1800
    assert sum(small) / len(small) > 1.8 * median
    assert max(j.arrival for j in js) < rw.DAYS * 86400


def test_weekdays_and_afternoons_get_more_arrivals() -> None:
    js = rw.jobs(2, RATE_4)
    per_day = Counter(int(j.arrival // 86400) for j in js)
    weekdays = [per_day[d] for d in range(14) if d % 7 < 5]
    weekend = [per_day[d] for d in range(14) if d % 7 >= 5]
    assert len(weekdays) == 10 and len(weekend) == 4
    # intensity 1 against 0.25: every weekday busier than every weekend day
    assert min(weekdays) > 2 * max(weekend)
    by_hour = Counter(int(j.arrival % 86400 // 3600) for j in js)
    afternoon = sum(by_hour[h] for h in range(12, 17))
    night = sum(by_hour[h] for h in (0, 1, 2, 3, 4))
    assert afternoon > 3 * night  # 1 + 0.7 cos(...) peaks at 14:00, 5.7 : 1 at 02:00
    assert rw.intensity(5 * 86400 + 14 * 3600) == pytest.approx(rw.WEEKEND * 1.7)
    assert rw.intensity(14 * 3600) == pytest.approx(1.7)


def test_the_replay_reads_the_trace_without_a_warning_and_maps_the_classes(tmp_path: Path) -> None:
    path = rw.write(tmp_path, 1, 1)
    js = rw.jobs(1, rw.RATES[(1, 1)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = read_trace(path)
    assert trace.skipped_no_gpu == 0 and trace.skipped_never_ran == 0
    assert len(trace.pods) == len(js)
    model = _model()
    by_name = {j.name: j for j in js}
    seen: set[str] = set()
    for pod in trace.pods:
        j = by_name[pod.name]
        assert pod.duration == j.duration and pod.arrival == j.arrival
        prof, count = profile_for(pod, model, "compute")
        size = f"{prof.split('.')[0]}" if count == 1 else f"{count}x{prof.split('.')[0]}"
        assert size in rw.REPLAY_CLASSES[j.cls], (j, prof, count)
        seen.add(size)
        if j.cls == "small":  # < 15 GB under either mapping
            assert prof == "1g.10gb" and profile_for(pod, model, "memory")[0] == "1g.10gb"
    assert seen == {s for classes in rw.REPLAY_CLASSES.values() for s in classes}


def test_class_p95_merges_the_replays_size_classes_with_its_percentile() -> None:
    res = Result("x", hours=1.0)
    res.waits = {
        "2g": [(float(i), False) for i in range(50)],
        "3g": [(float(100 + i), False) for i in range(50)],
    }
    p95, lower, n = rw.class_p95(res, "medium")
    assert (p95, lower, n) == (144.0, False, 100)  # the 95th of 0..49, 100..149 (index 94)
    res.waits["3g"][-1] = (10.0, True)  # a censored wait at or below the percentile: a lower bound
    assert rw.class_p95(res, "medium")[1] is True
    assert rw.class_p95(res, "small") == (0.0, False, 0)


def _row(name: str, recarves: int, per_hour: float, p95: dict[str, float]) -> dict[str, Any]:
    return {
        "baseline": name,
        "reconfigurations": recarves,
        "reconfigurationsPerHour": per_hour,
        "reportClasses": {c: {"p95": v, "lowerBound": False, "pods": 30} for c, v in p95.items()},
    }


def test_verdicts_are_the_issues_clauses() -> None:
    base = {"small": 0.0, "medium": 0.0, "whole-GPU": 0.0, "multi-GPU": 0.0}
    rows = {
        "naive": _row("naive", 50, 3.0, base),
        "mig-off": _row("mig-off", 0, 0.0, base | {"whole-GPU": 1000.0}),
        "default": _row("default", 10, 2.0, {"small": 299.0, "medium": 599.0, "whole-GPU": 1200.0}),
    }
    assert all(rw.verdicts(rows, "default").values())
    rows["default"] = _row("default", 11, 2.1, {"small": 300.0, "medium": 600.0, "whole-GPU": 1201.0})
    assert not any(rw.verdicts(rows, "default").values())
    # the whole-GPU bound has a 5-minute floor
    rows["mig-off"] = _row("mig-off", 0, 0.0, base)
    rows["default"] = _row("default", 0, 0.0, {"small": 0.0, "medium": 0.0, "whole-GPU": 300.0})
    assert rw.verdicts(rows, "default")["whole-GPU ≤ max(1.2 × MIG off, 5 min)"]


@pytest.mark.slow
def test_the_calibrated_rates_give_mig_off_the_reports_before() -> None:
    """The constants in RATES still do what the calibration rule says: small p95 2–4 h with MIG off."""
    for (nodes, seed), rate in rw.RATES.items():
        p95 = rw.mig_off_small_p95(nodes, seed, rate)
        assert 2 * 3600 <= p95 <= 4 * 3600, (nodes, seed, p95)
        assert abs(p95 - rw.TARGET_SECONDS) <= 0.15 * rw.TARGET_SECONDS


def test_run_and_table_cover_every_pod_with_the_four_classes(tmp_path: Path) -> None:
    """The command's path end to end on one trace: every pod falls in one of the four classes (no
    replay size class is left out of REPLAY_CLASSES), and the table shows the clauses per baseline."""
    cell = rw.replay(1, 1, ["naive", "mig-off", "per-pod"], tmp_path, reconf="90+300")
    assert cell["reconf"] == "90+300" and (tmp_path / rw.trace_name(1, 1)).exists()
    for row in cell["results"]:
        replay_sizes = {k for k in row["waitSeconds"] if k != "all"}
        assert replay_sizes <= {s for classes in rw.REPLAY_CLASSES.values() for s in classes}
        assert sum(c["pods"] for c in row["reportClasses"].values()) == cell["pods"]
    out = tmp_path / "report.jsonl"
    out.write_text(json.dumps(cell) + "\n", encoding="utf-8")
    text = rw.table(out)
    assert "small < 5 min" in text and "≥ 5× fewer than naive" in text
    per_pod = next(line for line in text.splitlines() if line.startswith("| per-pod |"))
    assert "meets" in per_pod or "misses" in per_pod
    assert "(reference)" in next(line for line in text.splitlines() if line.startswith("| mig-off |"))
