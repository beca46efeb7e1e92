"""Why pods waited, over a matrix: ``waitCauses`` (docs/simulate.md, *Counters*) summed per size class.

``python -m bench.causes FILE.jsonl [FILE.jsonl …]`` (files of ``python -m bench.matrix``) prints a
Markdown table: per policy that has the counter (naive and the loop rows) and size class, over the
contended cells (naive's overall p95 above 0) where the class has ≥ 20 pods, the pending pod-hours
and the share of each cause; then the same for the loop only on the cells where its p95 for that
class misses max(1.2 × naive's, 5 min) — what the misses are made of. Measured, never asserted.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.matrix import FIVE_MIN, LOOPS, p95
from compiler.simulate.engine import WAIT_CAUSES

POLICIES = ("naive", *LOOPS)



def tally(cells: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], list[float]]:
    """(scope, policy, class) → [cells, pod-hours per cause…]; scope ``all`` or ``missed``."""
    out: dict[tuple[str, str, str], list[float]] = {}
    for cell in cells:
        rows = {r["baseline"]: r for r in cell["results"]}
        naive = rows.get("naive")
        if naive is None or p95(naive, "all") <= 0:
            continue
        for name in POLICIES:
            row = rows.get(name)
            if row is None or not row.get("waitCauses"):
                continue
            for cls, w in row["waitSeconds"].items():
                if cls == "all" or w["pods"] < 20:
                    continue
                causes = row["waitCauses"].get(cls, dict.fromkeys(WAIT_CAUSES, 0.0))
                scopes = ["all"]
                if name != "naive" and p95(row, cls) > max(1.2 * p95(naive, cls), FIVE_MIN):
                    scopes.append("missed")
                for scope in scopes:
                    t = out.setdefault((scope, name, cls), [0.0] * (1 + len(WAIT_CAUSES)))
                    t[0] += 1
                    for j, c in enumerate(WAIT_CAUSES, 1):
                        t[j] += causes[c]
    return out


def table(cells: Iterable[dict[str, Any]]) -> str:
    head = " | ".join(WAIT_CAUSES)
    lines = [
        f"| scope | policy | class | cells (≥ 20 pods) | pending pod-h | {head} |",
        "|---|---|---|---:|---:|" + "---:|" * len(WAIT_CAUSES),
    ]
    order = {name: i for i, name in enumerate(POLICIES)}
    for (scope, name, cls), t in sorted(
        tally(cells).items(), key=lambda kv: (kv[0][0], order[kv[0][1]], len(kv[0][2]), kv[0][2])
    ):
        total = sum(t[1:])
        shares = " | ".join(f"{100 * x / total:.0f} %" if total else "–" for x in t[1:])
        label = "contended" if scope == "all" else "the loop misses the class"
        lines.append(f"| {label} | {name} | {cls} | {int(t[0])} | {total:,.0f} | {shares} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.causes", description=__doc__.split("\n")[0])
    ap.add_argument("files", type=Path, nargs="+")
    args = ap.parse_args(argv)
    texts = (f.read_text(encoding="utf-8") for f in args.files)
    cells = [json.loads(t) for text in texts for t in text.splitlines() if t.strip()]
    print(table(cells))


if __name__ == "__main__":
    main()
