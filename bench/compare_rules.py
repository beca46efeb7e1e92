"""Old vs new loop on the same cells: the count of cells meeting each of issue 22's Done-when clauses.

``python -m bench.compare_rules matrix OLD.jsonl NEW.jsonl`` (files of ``python -m bench.matrix``)
and ``python -m bench.compare_rules report OLD.jsonl NEW.jsonl`` (files of ``python -m
bench.report_workload run``) print a Markdown table: per loop row (``default``,
``default-noidle``, ``default+idle``), old and new, how many cells (traces) meet each clause,
then one line per cell. The baselines that do not use the loop's decision come from each file's
own run, so a clause against them (naive, per-pod, the static layouts, MIG off) is judged within one
run — unless ``--naive-from FILE`` gives NEW's cells the naive rows of FILE's same cells (for a
change naive shares, such as the admission's idleSurge in Round 23). Measured, never asserted.

A round that re-runs only the rows its change can move (``bench.matrix --baselines
naive,default``) takes the other baselines' rows from the run that has them with ``--others-from
FILE``: each cell of OLD and NEW gets, for every baseline it lacks, the row of FILE's same cell
(their code did not change, so their rows did not either). OLD, NEW and FILE may each be several
files joined by commas (``A-n4.jsonl.gz,A-n816.jsonl.gz``), gzipped or not; ``--seed N`` keeps
the cells of seed N only (the failure axis has three); ``--moved`` adds what moved (the rows
that differ, sums of re-carves, evictions and held pods over the contended cells, p95 ratios,
:func:`moved`). So Round 25's axis C, seed 2::

    python -m bench.compare_rules matrix \
        bench/round24/final-C-n4.jsonl.gz,bench/round24/final-C-n816.jsonl.gz \
        bench/round25/C-n4.jsonl.gz,bench/round25/C-n816.jsonl.gz \
        --others-from bench/round22/C.jsonl.gz --seed 2 --moved

Matrix clauses (contended cells only: naive's overall p95 wait above 0; classes with ≥ 20 pods):

* ``re-carves``: ≥ 5× fewer than naive where naive re-carves at least once per 10 hours, else no more;
* ``p95 all``: overall p95 ≤ max(1.2 × naive's, 5 min);
* ``p95 classes``: every class's p95 ≤ max(1.2 × naive's, 5 min);
* ``vs static``: every class's p95 ≤ max(5 min, the best of static-peak, static-average,
  static-optimal and MIG off for that class);
* ``never served``: no more pods never served than naive;
* ``held 0``: heldOnIdleGpu 0;
* ``vs per-pod``: no class worse than max(1.2 × per-pod's, 5 min);
* ``target``: re-carves, p95 all, p95 classes and never served together (bench.matrix ``verdict``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.matrix import LOOPS, p95, verdict
from bench.report_workload import verdicts

FIVE_MIN = 300.0
STATICS = ("static-peak", "static-average", "static-optimal", "mig-off")
MATRIX_CLAUSES = (
    "re-carves",
    "p95 all",
    "p95 classes",
    "vs static",
    "never served",
    "held 0",
    "vs per-pod",
    "target",
)


def _cells(path: Path) -> list[dict[str, Any]]:
    """The cells of ``path``: one JSON line each, gzipped when the name ends in .gz; a path whose
    name holds commas is several files, read in turn."""
    if "," in str(path):
        return [c for part in str(path).split(",") if part for c in _cells(Path(part))]
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            text = fh.read()
    else:
        text = path.read_text(encoding="utf-8")
    return [json.loads(t) for t in text.splitlines() if t.strip()]


def _key(cell: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(cell.get(k) for k in ("trace", "nodes", "timeScale", "reconf", "failureRate", "seed"))



def matrix_clauses(rows: dict[str, dict[str, Any]], loop: str) -> dict[str, bool] | None:
    """The clauses for ``loop`` on one cell; None when the cell is not contended."""
    naive, me = rows["naive"], rows[loop]
    if p95(naive, "all") <= 0:
        return None
    classes = [c for c, w in me["waitSeconds"].items() if c != "all" and w["pods"] >= 20]
    hours = naive["traceHours"] or naive["hours"]
    if naive["reconfigurations"] >= hours / 10:  # naive re-carves at least once per 10 hours
        recarves = me["reconfigurations"] * 5 <= naive["reconfigurations"]
    else:
        recarves = me["reconfigurations"] <= naive["reconfigurations"]
    out = {
        "re-carves": recarves,
        "p95 all": p95(me, "all") <= max(1.2 * p95(naive, "all"), FIVE_MIN),
        "p95 classes": all(p95(me, c) <= max(1.2 * p95(naive, c), FIVE_MIN) for c in classes),
        "never served": me["neverServed"] <= naive["neverServed"],
        "held 0": (me.get("heldOnIdleGpu") or 0) == 0,
        "target": verdict(rows, loop) == "meets",
    }
    best = {c: min((p95(rows[s], c) for s in STATICS if s in rows), default=0.0) for c in classes}
    out["vs static"] = all(p95(me, c) <= max(FIVE_MIN, best[c]) for c in classes)
    if "per-pod" in rows:
        pp = rows["per-pod"]
        out["vs per-pod"] = all(p95(me, c) <= max(1.2 * p95(pp, c), FIVE_MIN) for c in classes)
    return out


def per_class(
    olds: dict[tuple[Any, ...], dict[str, Any]], news: dict[tuple[Any, ...], dict[str, Any]], keys: list[Any]
) -> list[str]:
    """Per size class, on the contended cells where it has ≥ 20 pods: how many the loop's p95 meets
    max(1.2 × naive's, 5 min) and max(5 min, the best static baseline's), old and new."""
    counts: dict[tuple[str, str, str], list[int]] = {}  # (loop, rule, class) → [cells, vs naive, vs static]
    for label, cells in (("old", olds), ("new", news)):
        for k in keys:
            rows = _rows(cells[k])
            if p95(rows["naive"], "all") <= 0:
                continue
            for loop in LOOPS:
                if loop not in rows:
                    continue
                me = rows[loop]
                for c, w in me["waitSeconds"].items():
                    if c == "all" or w["pods"] < 20:
                        continue
                    best = min((p95(rows[s], c) for s in STATICS if s in rows), default=0.0)
                    tally = counts.setdefault((loop, label, c), [0, 0, 0])
                    tally[0] += 1
                    tally[1] += p95(me, c) <= max(1.2 * p95(rows["naive"], c), FIVE_MIN)
                    tally[2] += p95(me, c) <= max(FIVE_MIN, best)
    out = [
        "| loop | rule | class | cells (≥ 20 pods) | p95 ≤ max(1.2 × naive, 5 min) "
        "| p95 ≤ max(5 min, best static) |",
        "|---|---|---|---:|---:|---:|",
    ]
    for (loop, label, c), (n, a, b) in sorted(
        counts.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1] != "old")
    ):
        out.append(f"| {loop} | {label} | {c} | {n} | {a} | {b} |")
    return out


def _moves(new: float, old: float) -> int:
    """+1 when ``new`` is better (lower) than ``old`` beyond a 1 % band, −1 when worse, else 0."""
    if new < old * 0.99:
        return 1
    return -1 if new > old * 1.01 else 0


def _totals(pairs: list[Any], who: str, field: str) -> str:
    """"old → new": Σ of ``field`` of row ``who`` over the (old rows, new rows) ``pairs``."""
    old, new = (sum((pair[side][who].get(field) or 0) for pair in pairs) for side in (0, 1))
    return f"{old:,} → {new:,}"


def moved(
    olds: dict[tuple[Any, ...], dict[str, Any]], news: dict[tuple[Any, ...], dict[str, Any]], keys: list[Any]
) -> list[str]:
    """What moved between OLD and NEW (``--moved``): per loop, the rows that differ, and over the
    cells OLD's naive contends (its overall p95 above 0) the sums of the loop's re-carves, evictions
    and heldOnIdleGpu, the median of its overall p95 new / old (cells where old is above 0) with the
    cells better / worse beyond 1 %, its classes (≥ 20 pods in OLD) better / worse / same, and
    naive's re-carves and overall p95 the same way."""
    out = [
        "| loop | cells | loop rows differ | naive rows differ | contended (old naive) "
        "| loop re-carves old → new | loop evictions old → new | loop heldOnIdleGpu old → new "
        "| loop p95 all: median new/old, better / worse | loop classes better / worse / same "
        "| naive re-carves old → new | naive p95 all: better / worse |",
        "|---|---:|---:|---:|---:|---|---|---|---|---|---|---|",
    ]
    for loop in LOOPS:
        pairs = [(_rows(olds[k]), _rows(news[k])) for k in keys]
        pairs = [(o, n) for o, n in pairs if loop in o and loop in n]
        if not pairs:
            continue
        differ = sum(o[loop] != n[loop] for o, n in pairs)
        naive_differ = sum(o["naive"] != n["naive"] for o, n in pairs)
        hot = [(o, n) for o, n in pairs if p95(o["naive"], "all") > 0]
        ratios = [p95(n[loop], "all") / p95(o[loop], "all") for o, n in hot if p95(o[loop], "all") > 0]
        median = f"{statistics.median(ratios):.3f}" if ratios else "–"
        ups = [_moves(p95(n[loop], "all"), p95(o[loop], "all")) for o, n in hot]
        cls = [
            _moves(p95(n[loop], c), p95(o[loop], c))
            for o, n in hot
            for c, w in o[loop]["waitSeconds"].items()
            if c != "all" and w["pods"] >= 20
        ]
        naive_ups = [_moves(p95(n["naive"], "all"), p95(o["naive"], "all")) for o, n in hot]
        out.append(
            f"| {loop} | {len(pairs)} | {differ} | {naive_differ} | {len(hot)} "
            f"| {_totals(hot, loop, 'reconfigurations')} "
            f"| {_totals(hot, loop, 'evictions')} "
            f"| {_totals(hot, loop, 'heldOnIdleGpu')} "
            f"| {median}, {ups.count(1)} / {ups.count(-1)} "
            f"| {cls.count(1)} / {cls.count(-1)} / {cls.count(0)} "
            f"| {_totals(hot, 'naive', 'reconfigurations')} "
            f"| {naive_ups.count(1)} / {naive_ups.count(-1)} |"
        )
    return out


def _rows(cell: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["baseline"]: r for r in cell["results"]}


def _rows_by_cell(path: Path) -> dict[tuple[Any, ...], dict[str, dict[str, Any]]]:
    """Each cell of ``path`` (by its key) with its rows by baseline."""
    return {_key(c): _rows(c) for c in _cells(path)}


def with_naive(cells: dict[tuple[Any, ...], dict[str, Any]], naive_from: Path) -> None:
    """Judge ``cells`` against another run's naive: each cell's ``naive`` row becomes the row of the
    same cell in ``naive_from`` (a cell it lacks keeps its own). For a change to what naive shares
    with the loop (the admission, Round 23), so the loop is also held to the naive it was held to."""
    others = _rows_by_cell(naive_from)
    for k, cell in cells.items():
        row = others.get(k, {}).get("naive")
        if row is not None:
            cell["results"] = [row if r["baseline"] == "naive" else r for r in cell["results"]]


def with_others(cells: dict[tuple[Any, ...], dict[str, Any]], others_from: Path) -> None:
    """Give each of ``cells`` the rows of the baselines it lacks from ``others_from``'s same cell
    (module docstring); a cell ``others_from`` lacks keeps what it has."""
    others = _rows_by_cell(others_from)
    for k, cell in cells.items():
        have = {r["baseline"] for r in cell["results"]}
        extra = [r for b, r in others.get(k, {}).items() if b not in have]
        if extra:
            cell["results"] = [*cell["results"], *extra]


def compare(
    kind: str,
    old: Path,
    new: Path,
    naive_from: Path | None = None,
    others_from: Path | None = None,
    seed: int | None = None,
    show_moved: bool = False,
) -> str:
    olds = {_key(c): c for c in _cells(old) if seed is None or c.get("seed") == seed}
    news = {_key(c): c for c in _cells(new) if seed is None or c.get("seed") == seed}
    if others_from is not None:
        with_others(olds, others_from)
        with_others(news, others_from)
    if naive_from is not None:
        with_naive(news, naive_from)
    keys = [k for k in olds if k in news]
    judged: dict[tuple[str, str], list[tuple[tuple[Any, ...], dict[str, bool]]]] = {}
    for label, cells in (("old", olds), ("new", news)):
        for k in keys:
            rows = _rows(cells[k])
            for loop in LOOPS:
                if loop not in rows:
                    continue
                got = matrix_clauses(rows, loop) if kind == "matrix" else verdicts(rows, loop)
                if got is not None:
                    if kind == "report":
                        got = {**got, "all clauses": all(got.values())}
                    judged.setdefault((loop, label), []).append((k, got))
    clauses = list(next(iter(judged.values()))[0][1]) if judged else []
    lines = [
        f"| loop | rule | cells | {' | '.join(clauses)} |",
        "|---|---|---:|" + "---:|" * len(clauses),
    ]
    for (loop, label), cells_judged in judged.items():
        counts = [sum(1 for _, g in cells_judged if g.get(c)) for c in clauses]
        lines.append(f"| {loop} | {label} | {len(cells_judged)} | " + " | ".join(map(str, counts)) + " |")
    if kind == "matrix":
        lines += ["", *per_class(olds, news, keys)]
        if show_moved:
            lines += ["", *moved(olds, news, keys)]
    lines += [
        "",
        "| cell | loop | rule | p95 per class s | re-carves | evictions | heldOnIdleGpu | "
        "turned down by the disruption rule | clauses missed |",
        "|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    for k in keys:
        for loop in LOOPS:
            for label, cells in (("old", olds), ("new", news)):
                rows = _rows(cells[k])
                if loop not in rows:
                    continue
                me = rows[loop]
                if kind == "report":
                    shown = ", ".join(f"{c} {round(v['p95'])}" for c, v in me["reportClasses"].items())
                    ok: dict[str, bool] | None = verdicts(rows, loop)
                else:
                    shown = ", ".join(
                        f"{c} {round(w['p95'])}" for c, w in me["waitSeconds"].items() if w["pods"] >= 20
                    )
                    ok = matrix_clauses(rows, loop)
                missed = "not contended" if ok is None else ", ".join(c for c, met in ok.items() if not met)
                cell = " ".join(str(x) for x in k if x is not None)
                lines.append(
                    f"| {cell} | {loop} | {label} | {shown} | {me['reconfigurations']} | {me['evictions']} | "
                    f"{me.get('heldOnIdleGpu')} | {me['blockedBy'].get('disruption', 0)} | {missed} |"
                )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.compare_rules", description=__doc__.split("\n")[0])
    ap.add_argument("kind", choices=("matrix", "report"))
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument(
        "--naive-from",
        type=Path,
        default=None,
        help="judge NEW's cells against this file's naive rows (same cells) instead of their own",
    )
    ap.add_argument(
        "--others-from",
        type=Path,
        default=None,
        help="rows of the baselines a cell lacks (both sides) from this file's same cells",
    )
    ap.add_argument("--seed", type=int, default=None, help="only the cells of this seed")
    ap.add_argument(
        "--moved",
        action="store_true",
        help="matrix: also what moved (rows that differ, sums over the contended cells, p95 ratios)",
    )
    args = ap.parse_args(argv)
    print(compare(args.kind, args.old, args.new, args.naive_from, args.others_from, args.seed, args.moved))


if __name__ == "__main__":
    main()
