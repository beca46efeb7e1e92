"""The cost of one HiGHS run on a tiny model: what lexmilp adds around HiGHS per run.

``python -m bench.highs_runs [--solves 1500]`` solves a two-variable, two-level program again and
again and prints wall and CPU milliseconds per HiGHS run. HiGHS itself needs well under a
millisecond here, so the figure is mostly the hand-off around each run (compiler/solve/lexmilp.py
``_run_guarded``: the worker pool, formerly a thread started per run). A replay with
``--decision recommend`` makes ~25 such runs per exact solve (bench/RESULTS.md Round 16).
Measured, never asserted.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from compiler.solve import lexmilp


def measure(solves: int) -> tuple[float, float, int]:
    """(wall ms per run, CPU ms per run, runs) over ``solves`` solves of the tiny program."""
    m = lexmilp.Milp()
    x, y = m.var("x", 0, 10), m.var("y", 0, 10)
    m.row({x: 1, y: 1}, lb=3)
    levels = [lexmilp.Level("sum", "min", {x: 1, y: 1}), lexmilp.Level("x", "max", {x: 1})]
    m.solve(levels)  # the banner and the first worker out of the way
    wall, cpu, runs = time.perf_counter(), time.process_time(), 0
    for _ in range(solves):
        res = m.solve(levels)
        assert res is not None
        runs += res.highs_runs
    return (time.perf_counter() - wall) / runs * 1e3, (time.process_time() - cpu) / runs * 1e3, runs


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.highs_runs", description=__doc__.split("\n")[0])
    ap.add_argument("--solves", type=int, default=1500)
    args = ap.parse_args(argv)
    wall, cpu, runs = measure(args.solves)
    print(f"{wall:.3f} ms wall and {cpu:.3f} ms CPU per HiGHS run ({runs} runs)")


if __name__ == "__main__":
    main()
