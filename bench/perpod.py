"""The loop against per-pod carving, cell by cell: which size classes each one wins, and the evidence why.

``python -m bench.perpod FILE.jsonl [FILE.jsonl ...]`` (files of ``python -m bench.matrix``) prints,
for every contended cell (naive's overall p95 wait above 0) and every loop row in it (``default``,
``default+idle``, ``default-noidle``, ``default+recommend``), per size class with ≥ 20 pods:

* **per-pod wins** the class where the loop's p95 is above max(1.2 × per-pod's, 5 min) — the issue's
  "no class worse than max(1.2 × it, 5 min)" fails there;
* **the loop wins** the class where per-pod's p95 is above max(1.2 × the loop's, 5 min);
* otherwise the two are within the bound of each other.

Issue 22 asks the loop to win the classes per-pod starves (whole- and multi-GPU jobs, which
fragmentation blocks) and lose none beyond the bound, "or, where per-pod carving wins, RESULTS says
so and why". The why is read off each row, not assumed: per-pod never drains (0 evictions, an
instance created per pod start: ``instancesCarved``), while every re-carve of the loop cordons a
node and drains it (``drains``, ``evictions``) and a change waits for the disruption rule
(``blockedBy.disruption``); where per-pod's whole-GPU classes wait, no GPU of a node was empty when
they arrived (fragmentation), which the loop avoids by carving whole GPUs on purpose. Measured,
never asserted.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.matrix import LOOPS, p95

FIVE_MIN = 300.0



def duel(rows: dict[str, dict[str, Any]], loop: str) -> dict[str, str] | None:
    """Per class (≥ 20 pods in the loop's row): "per-pod", "loop" or "even"; None when the cell is not
    contended or lacks per-pod or the loop."""
    if "per-pod" not in rows or loop not in rows or p95(rows["naive"], "all") <= 0:
        return None
    me, pp = rows[loop], rows["per-pod"]
    out: dict[str, str] = {}
    for c, w in me["waitSeconds"].items():
        if c == "all" or w["pods"] < 20:
            continue
        mine, theirs = p95(me, c), p95(pp, c)
        if mine > max(1.2 * theirs, FIVE_MIN):
            out[c] = "per-pod"
        elif theirs > max(1.2 * mine, FIVE_MIN):
            out[c] = "loop"
        else:
            out[c] = "even"
    return out


def _cells(paths: Iterable[Path]) -> list[dict[str, Any]]:
    return [json.loads(t) for p in paths for t in p.read_text(encoding="utf-8").splitlines() if t.strip()]


def _name(cell: dict[str, Any]) -> str:
    parts = [cell["trace"], f"{cell['nodes']}×8", f"ts{cell['timeScale']:g}", str(cell["reconf"])]
    parts.append(f"fail {cell['failureRate']:g}" + (f" s{cell['seed']}" if cell["failureRate"] else ""))
    return " ".join(parts)


def _won(got: dict[str, str], who: str, me: dict[str, Any], pp: dict[str, Any]) -> str:
    """The classes ``who`` wins, each with the loop's and per-pod's p95 (s)."""
    picked = [c for c, w in got.items() if w == who]
    return ", ".join(f"{c} {round(p95(me, c))}/{round(p95(pp, c))}" for c in picked) or "–"


def report(cells: Sequence[dict[str, Any]]) -> str:
    """The per-class summary, then one line per (contended cell, loop) with the evidence."""
    tally: dict[tuple[str, str], list[int]] = {}  # (loop, class) → [cells, per-pod wins, loop wins, even]
    lines: list[str] = []
    for cell in cells:
        rows = {r["baseline"]: r for r in cell["results"]}
        for loop in LOOPS:
            got = duel(rows, loop)
            if got is None:
                continue
            for c, who in got.items():
                t = tally.setdefault((loop, c), [0, 0, 0, 0])
                t[0] += 1
                t[{"per-pod": 1, "loop": 2, "even": 3}[who]] += 1
            me, pp = rows[loop], rows["per-pod"]
            lines.append(
                f"| {_name(cell)} | {loop} | {_won(got, 'per-pod', me, pp)} | {_won(got, 'loop', me, pp)} | "
                f"{me['drains']} | {me['evictions']} | {me['blockedBy'].get('disruption', 0)} | "
                f"{pp['instancesCarved']} |"
            )
    head = [
        "| loop | class | contended cells (≥ 20 pods) | per-pod wins | loop wins | within the bound |",
        "|---|---|---:|---:|---:|---:|",
    ]
    head += [
        f"| {loop} | {c} | {n} | {a} | {b} | {e} |"
        for (loop, c), (n, a, b, e) in sorted(tally.items(), key=lambda kv: (kv[0][0], len(kv[0][1]), kv[0]))
    ]
    cols = (
        "| cell | loop | per-pod wins (loop/per-pod p95 s) | loop wins (loop/per-pod p95 s) | loop drains "
        "| loop evictions | turned down by the disruption rule | per-pod instances created |"
    )
    return "\n".join([*head, "", cols, "|---|---|---|---|---:|---:|---:|---:|", *lines])


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.perpod", description=__doc__.split("\n")[0])
    ap.add_argument("files", type=Path, nargs="+")
    args = ap.parse_args(argv)
    print(report(_cells(args.files)))


if __name__ == "__main__":
    main()
