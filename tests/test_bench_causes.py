"""bench.causes: waitCauses summed per policy and size class, on hand-made cells."""

from __future__ import annotations

from typing import Any

from bench.causes import table, tally
from compiler.simulate.engine import WAIT_CAUSES


def row(name: str, p95: dict[str, float], causes: dict[str, dict[str, float]] | None) -> dict[str, Any]:
    waits = {k: {"p95": v, "pods": 30} for k, v in p95.items()}
    return {"baseline": name, "waitSeconds": waits, "waitCauses": causes}


def cause(**kw: float) -> dict[str, float]:
    return dict.fromkeys(WAIT_CAUSES, 0.0) | kw


def test_contended_cells_are_summed_and_the_misses_apart() -> None:
    naive = row("naive", {"1g": 100.0, "all": 100.0}, {"1g": cause(busyNode=1.0, cordoned=1.0)})
    # the loop misses 1g here (50,000 s > max(1.2 x 100, 300)) ...
    miss = row("default", {"1g": 50_000.0, "all": 0.0}, {"1g": cause(busyNode=90.0, noRoom=10.0)})
    # ... and meets it here; a static row has no counter and is left out
    meet = row("default", {"1g": 200.0, "all": 0.0}, {"1g": cause(idleGpus=4.0)})
    static = row("static-peak", {"1g": 0.0, "all": 0.0}, None)
    quiet = row("naive", {"1g": 0.0, "all": 0.0}, {"1g": cause(fits=5.0)})  # not contended: left out
    cells = [
        {"results": [naive, miss, static]},
        {"results": [naive, meet]},
        {"results": [quiet, row("default", {"1g": 0.0, "all": 0.0}, {"1g": cause(fits=7.0)})]},
    ]
    t = tally(cells)
    assert t[("all", "default", "1g")] == [2, 0.0, 4.0, 90.0, 0.0, 0.0, 10.0]
    assert t[("missed", "default", "1g")] == [1, 0.0, 0.0, 90.0, 0.0, 0.0, 10.0]
    assert t[("all", "naive", "1g")] == [2, 0.0, 0.0, 2.0, 2.0, 0.0, 0.0]
    assert ("missed", "naive", "1g") not in t and not any(k[1] == "static-peak" for k in t)
    text = table(cells)
    missed = "| the loop misses the class | default | 1g | 1 | 100 | 0 % | 0 % | 90 % | 0 % | 0 % | 10 % |"
    assert missed in text
