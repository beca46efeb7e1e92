"""A small lexicographic MILP on top of HiGHS (``highspy``).

Each level optimises one integer-valued objective; its optimum is then fixed as a constraint
before the next level runs, so the levels are strictly lexicographic (no big-M weights to tune).
All objective coefficients passed in are integers, so fixing at ``optimum ± 0.5`` is exact.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import highspy
import numpy as np

Sense = Literal["min", "max"]
INF = math.inf


@dataclass(frozen=True)
class Level:
    name: str
    sense: Sense
    coefs: Mapping[int, int]


@dataclass
class LexResult:
    values: list[float]
    objectives: dict[str, float] = field(default_factory=dict)
    level_seconds: dict[str, float] = field(default_factory=dict)
    optimal: bool = True  # every level proven optimal (gap 0)
    failed_level: str = ""  # first level that did not prove optimality ("" = none)
    seconds: float = 0.0


_BANNER_LOCK = threading.Lock()
_banner_done = False


def _new_highs() -> highspy.Highs:
    """A silent HiGHS instance.

    HiGHS prints its copyright banner from C++ straight to file descriptor 1 the first time an
    instance is built, which would corrupt data a command writes to stdout; park fd 1 on /dev/null
    for that one construction.
    """
    global _banner_done
    with _BANNER_LOCK:
        if _banner_done:
            h = highspy.Highs()  # type: ignore[no-untyped-call]
        else:
            sys.stdout.flush()
            saved = os.dup(1)
            try:
                with open(os.devnull, "w", encoding="utf-8") as devnull:
                    os.dup2(devnull.fileno(), 1)
                    h = highspy.Highs()  # type: ignore[no-untyped-call]
            finally:
                os.dup2(saved, 1)
                os.close(saved)
            _banner_done = True
    h.silent()
    return h


class Milp:
    """Column/row builder; rows are kept sparse as ``{column: coefficient}`` dicts until solve time."""

    def __init__(self) -> None:
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[bool] = []
        self.names: list[str] = []
        self.rows: list[tuple[float, float, dict[int, float]]] = []

    def var(self, name: str, lb: float = 0.0, ub: float = INF, integer: bool = True) -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(integer)
        self.names.append(name)
        return len(self.lb) - 1

    def row(self, coefs: Mapping[int, float], lb: float = -INF, ub: float = INF) -> None:
        clean = {c: float(v) for c, v in coefs.items() if v}
        if not clean:
            if lb > 1e-9 or ub < -1e-9:
                # an empty row that cannot hold: keep it so the model reports infeasible
                clean = {}
            else:
                return
        self.rows.append((lb, ub, clean))

    @property
    def num_vars(self) -> int:
        return len(self.lb)

    def _highs(self, time_limit: float, relax: bool) -> highspy.Highs:
        h = _new_highs()
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("mip_abs_gap", 0.99)
        h.setOptionValue("time_limit", max(0.1, time_limit))
        h.setOptionValue("random_seed", 0)
        n = self.num_vars
        lp = highspy.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = len(self.rows)
        lp.col_cost_ = np.zeros(n)
        lp.col_lower_ = np.array(self.lb, dtype=float)
        lp.col_upper_ = np.array([u if u != INF else highspy.kHighsInf for u in self.ub], dtype=float)
        big = highspy.kHighsInf
        lp.row_lower_ = np.array([lo if lo != -INF else -big for lo, _, _ in self.rows], dtype=float)
        lp.row_upper_ = np.array([up if up != INF else big for _, up, _ in self.rows], dtype=float)
        starts: list[int] = []
        index: list[int] = []
        value: list[float] = []
        for _, _, coefs in self.rows:
            starts.append(len(index))
            for col in sorted(coefs):
                index.append(col)
                value.append(coefs[col])
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.array([*starts, len(index)], dtype=np.int32)
        lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
        lp.a_matrix_.value_ = np.array(value, dtype=float)
        if not relax and any(self.integer):
            lp.integrality_ = [
                highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in self.integer
            ]
        h.passModel(lp)
        return h

    def solve(
        self, levels: Sequence[Level], time_limit: float = 30.0, relax: bool = False
    ) -> LexResult | None:
        """Optimise ``levels`` in order. ``None`` when not even the first level found a feasible point."""
        started = time.perf_counter()
        h = self._highs(time_limit, relax)
        n = self.num_vars
        result: LexResult | None = None
        for level in levels:
            remaining = time_limit - (time.perf_counter() - started)
            if remaining <= 0.05:
                if result is not None:
                    result.optimal = False
                    result.failed_level = result.failed_level or level.name
                break
            h.setOptionValue("time_limit", remaining)
            cost = np.zeros(n)
            for col, c in level.coefs.items():
                cost[col] += c
            h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
            h.changeObjectiveSense(
                highspy.ObjSense.kMaximize if level.sense == "max" else highspy.ObjSense.kMinimize
            )
            if result is not None:
                # the previous level's point is feasible for this one: hand it over as a start
                sol = highspy.HighsSolution()
                sol.col_value = list(result.values)
                sol.value_valid = True
                h.setSolution(sol)
            level_started = time.perf_counter()
            h.run()
            status = h.getModelStatus()
            if result is not None:
                result.level_seconds[level.name] = time.perf_counter() - level_started
            info = h.getInfo()
            has_point = info.primal_solution_status == 2  # kSolutionStatusFeasible
            if status != highspy.HighsModelStatus.kOptimal:
                if not has_point:
                    if result is not None:
                        result.optimal = False
                        result.failed_level = result.failed_level or level.name
                    break
                values = list(h.getSolution().col_value)
                if result is None:
                    result = LexResult(values=values, optimal=False, failed_level=level.name)
                else:
                    result.values = values
                    result.optimal = False
                    result.failed_level = result.failed_level or level.name
                result.objectives[level.name] = info.objective_function_value
                break
            values = list(h.getSolution().col_value)
            opt = info.objective_function_value
            if result is None:
                result = LexResult(values=values)
                result.level_seconds[level.name] = time.perf_counter() - level_started
            else:
                result.values = values
            result.objectives[level.name] = opt
            cols = sorted(c for c, v in level.coefs.items() if v)
            if cols:
                coef_arr = np.array([float(level.coefs[c]) for c in cols])
                if relax:
                    lo, up = (opt - 1e-7, INF) if level.sense == "max" else (-INF, opt + 1e-7)
                else:
                    lo, up = (opt - 0.5, INF) if level.sense == "max" else (-INF, opt + 0.5)
                h.addRow(
                    lo if lo != -INF else -highspy.kHighsInf,
                    up if up != INF else highspy.kHighsInf,
                    len(cols),
                    np.array(cols, dtype=np.int32),
                    coef_arr,
                )
        if result is not None:
            result.seconds = time.perf_counter() - started
            if not relax:
                result.values = [
                    float(round(v)) if self.integer[i] else v for i, v in enumerate(result.values)
                ]
        return result
