"""bench.compare_rules: old vs new clause counts on hand-made matrix cells."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.compare_rules import compare, matrix_clauses


def row(name: str, recarves: int, p95: dict[str, float], held: int = 0) -> dict[str, Any]:
    waits = {k: {"p95": v, "pods": 100} for k, v in p95.items()}
    return {
        "baseline": name,
        "reconfigurations": recarves,
        "evictions": 0,
        "traceHours": 100.0,
        "hours": 100.0,
        "waitSeconds": waits,
        "neverServed": 0,
        "heldOnIdleGpu": held,
        "blockedBy": {"disruption": 3},
    }


def cell(default: dict[str, Any]) -> dict[str, Any]:
    rows = [
        row("naive", 50, {"all": 1000.0, "1g": 1000.0, "7g": 0.0}),
        row("mig-off", 0, {"all": 0.0, "1g": 2000.0, "7g": 100.0}),
        row("per-pod", 0, {"all": 0.0, "1g": 0.0, "7g": 5000.0}),
        default,
    ]
    key = {"trace": "t", "nodes": 8, "timeScale": 1.0, "reconf": "60", "failureRate": 0.0, "seed": 0}
    return key | {"results": rows}


def test_clauses_of_one_cell() -> None:
    rows = {
        r["baseline"]: r
        for r in cell(row("default", 10, {"all": 1200.0, "1g": 1100.0, "7g": 400.0}))["results"]
    }
    got = matrix_clauses(rows, "default")
    assert got is not None
    # 10 ≤ 50 / 5; 1,200 ≤ 1.2 × 1,000; 1g 1,100 ≤ 1,200 and 7g 400 > max(0, 300): p95 classes fails;
    # vs static: 1g 1,100 ≤ mig-off's 2,000, 7g 400 > max(300, 100); vs per-pod: 1g 1,100 > 300
    assert got == {
        "re-carves": True,
        "p95 all": True,
        "p95 classes": False,
        "never served": True,
        "held 0": True,
        "target": False,
        "vs static": False,
        "vs per-pod": False,
    }
    quiet = dict(rows) | {"naive": row("naive", 50, {"all": 0.0})}
    assert matrix_clauses(quiet, "default") is None  # not contended


def test_compare_counts_cells_per_clause(tmp_path: Path) -> None:
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text(
        json.dumps(cell(row("default", 11, {"all": 2000.0, "1g": 2000.0, "7g": 0.0}, held=4))) + "\n"
    )
    new.write_text(json.dumps(cell(row("default", 10, {"all": 900.0, "1g": 900.0, "7g": 0.0}))) + "\n")
    text = compare("matrix", old, new)
    assert "| default | old | 1 | 0 | 0 | 0 | 1 | 0 | 0 | 1 | 0 |" in text
    assert "| default | new | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 0 |" in text


def test_naive_from_judges_the_new_cells_against_another_runs_naive(tmp_path: Path) -> None:
    """``--naive-from``: the new loop (p95 1,300 s) misses 1.2 × its own naive's 1,000 s but meets
    1.2 × the other run's naive (2,000 s); the old cells keep their own naive."""
    old, new, other = tmp_path / "old.jsonl", tmp_path / "new.jsonl", tmp_path / "other.jsonl"
    mine = row("default", 10, {"all": 1300.0, "1g": 1300.0, "7g": 0.0})
    old.write_text(json.dumps(cell(mine)) + "\n")
    new.write_text(json.dumps(cell(mine)) + "\n")
    slower = cell(row("default", 0, {"all": 0.0}))
    slower["results"][0] = row("naive", 50, {"all": 2000.0, "1g": 2000.0, "7g": 0.0})
    other.write_text(json.dumps(slower) + "\n")
    assert "| default | new | 1 | 1 | 0 |" in compare("matrix", old, new)
    text = compare("matrix", old, new, naive_from=other)
    assert "| default | old | 1 | 1 | 0 |" in text and "| default | new | 1 | 1 | 1 |" in text


def test_others_from_gives_both_sides_the_baselines_they_did_not_rerun(tmp_path: Path) -> None:
    """A round re-runs naive and default only; ``--others-from`` takes per-pod and MIG off from the
    run that has them, for OLD and NEW alike. Without it there is no ``vs per-pod`` column and
    ``vs static`` has no static row to be judged against (the old loop's 1g 1,100 s misses 5 min);
    with it the old loop meets ``vs static`` (1g 1,100 s ≤ MIG off's 2,000 s, 7g 0) and misses
    ``vs per-pod`` (1g 1,100 s > 5 min of per-pod's 0 s), the new loop (1g 200 s, 7g 4,000 s)
    misses ``vs static`` (7g > max(5 min, MIG off's 100 s)) and meets ``vs per-pod`` (7g ≤ 1.2 ×
    per-pod's 5,000 s)."""
    old, new, full = tmp_path / "old.jsonl", tmp_path / "new.jsonl", tmp_path / "full.jsonl"

    def rerun(default: dict[str, Any]) -> dict[str, Any]:
        c = cell(default)
        c["results"] = [r for r in c["results"] if r["baseline"] in ("naive", "default")]
        return c

    old.write_text(json.dumps(rerun(row("default", 10, {"all": 1100.0, "1g": 1100.0, "7g": 0.0}))) + "\n")
    new.write_text(json.dumps(rerun(row("default", 10, {"all": 200.0, "1g": 200.0, "7g": 4000.0}))) + "\n")
    full.write_text(json.dumps(cell(row("default", 99, {"all": 9.0e9}))) + "\n")  # its default is not used
    # clauses: re-carves, p95 all, p95 classes, never served, held 0, target, vs static[, vs per-pod]
    alone = compare("matrix", old, new)
    assert "vs per-pod" not in alone.splitlines()[0]
    assert "| default | old | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 0 |" in alone
    text = compare("matrix", old, new, others_from=full)
    assert "| default | old | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 0 |" in text
    assert "| default | new | 1 | 1 | 1 | 0 | 1 | 1 | 0 | 0 | 1 |" in text
    # the loop's own rows stay (not the other run's default)
    assert "| t 8 1.0 60 0.0 0 | default | new | all 200, 1g 200, 7g 4000 | 10 |" in text


def test_several_gzipped_files_per_side_and_one_seed(tmp_path: Path) -> None:
    """OLD and NEW may each be files joined by commas, gzipped or not; ``--seed`` keeps one seed."""
    import gzip

    def seeded(seed: int, p95_all: float) -> dict[str, Any]:
        return cell(row("default", 10, {"all": p95_all, "1g": p95_all, "7g": 0.0})) | {"seed": seed}

    parts = []
    for name, seed in (("a.jsonl.gz", 1), ("b.jsonl.gz", 2)):
        path = tmp_path / name
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(json.dumps(seeded(seed, 900.0)) + "\n")
        parts.append(str(path))
    new = tmp_path / "new.jsonl"
    new.write_text("".join(json.dumps(seeded(s, 5000.0)) + "\n" for s in (1, 2)))
    both = compare("matrix", Path(",".join(parts)), new)
    assert "| default | old | 2 | 2 | 2 |" in both and "| default | new | 2 | 2 | 0 |" in both
    one = compare("matrix", Path(",".join(parts)), new, seed=2)
    assert "| default | old | 1 | 1 | 1 |" in one and "| t 8 1.0 60 0.0 1 |" not in one


def test_moved_sums_the_loop_and_naive_over_the_contended_cells(tmp_path: Path) -> None:
    """``--moved``: two contended cells and one quiet one (naive p95 0, left out of the sums). The
    loop's re-carves 10 + 20 → 5 + 20, its overall p95 2,000 → 1,000 s (better) and 1,000 →
    1,005 s (within 1 %: neither): median ratio (0.5 + 1.005) / 2; its classes on those cells: 1g
    better, 7g the same on the first, both the same on the second (the second's 1g moves by 0.5 %)."""
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"

    def at(seed: int, default: dict[str, Any], naive_all: float = 1000.0) -> dict[str, Any]:
        c = cell(default) | {"seed": seed}
        c["results"][0] = row("naive", 50, {"all": naive_all, "1g": naive_all, "7g": 0.0})
        return c

    old.write_text(
        json.dumps(at(1, row("default", 10, {"all": 2000.0, "1g": 2000.0, "7g": 0.0}, held=3)))
        + "\n"
        + json.dumps(at(2, row("default", 20, {"all": 1000.0, "1g": 1000.0, "7g": 0.0})))
        + "\n"
        + json.dumps(at(3, row("default", 7, {"all": 0.0, "1g": 0.0, "7g": 0.0}), naive_all=0.0))
        + "\n"
    )
    new.write_text(
        json.dumps(at(1, row("default", 5, {"all": 1000.0, "1g": 1000.0, "7g": 0.0})))
        + "\n"
        + json.dumps(at(2, row("default", 20, {"all": 1005.0, "1g": 1005.0, "7g": 0.0})))
        + "\n"
        + json.dumps(at(3, row("default", 9, {"all": 0.0, "1g": 0.0, "7g": 0.0}), naive_all=0.0))
        + "\n"
    )
    assert "loop rows differ" not in compare("matrix", old, new)
    text = compare("matrix", old, new, show_moved=True)
    assert (
        "| default | 3 | 3 | 0 | 2 | 30 → 25 | 0 → 0 | 3 → 0 | 0.752, 1 / 0 | 1 / 0 / 3 | 100 → 100 | 0 / 0 |"
        in text
    )
