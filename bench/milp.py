"""A tiny linear-program builder over highspy, used only by the bench's reference models."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import highspy

from compiler.solve.lexmilp import new_highs

INF = math.inf


def _quiet_highs() -> highspy.Highs:
    """A silent HiGHS instance whose copyright banner does not reach the bench's report on stdout
    (compiler.solve.lexmilp.new_highs parks fd 1 for the process's first construction)."""
    return new_highs()


@dataclass(frozen=True)
class MilpResult:
    optimal: bool  # HiGHS proved optimality (for the relaxation: solved to optimality)
    objective: float
    values: tuple[float, ...]


@dataclass
class Model:
    """Columns with bounds and costs, rows as sparse ``{column: coefficient}`` with bounds."""

    maximize: bool = False
    costs: list[float] = field(default_factory=list)
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    rows: list[tuple[float, float, dict[int, float]]] = field(default_factory=list)

    def var(self, cost: float = 0.0, lb: float = 0.0, ub: float = INF, integer: bool = True) -> int:
        self.costs.append(cost)
        self.lower.append(lb)
        self.upper.append(ub)
        self.integer.append(integer)
        return len(self.costs) - 1

    def row(self, coefs: dict[int, float], lb: float = -INF, ub: float = INF) -> None:
        self.rows.append((lb, ub, {k: v for k, v in coefs.items() if v}))

    def solve(self, relax: bool = False, time_limit: float = 120.0) -> MilpResult:
        h = _quiet_highs()
        # No "threads" option: HiGHS has one process-wide scheduler, and a run asking for a different
        # thread count than the one it was first started with fails with status "Not Set" (seen when
        # the bench runs after the compiler's solver in one pytest process).
        h.setOptionValue("time_limit", time_limit)
        # exact integer optimum: no relative/absolute gap tolerance
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("mip_abs_gap", 0.0)
        inf = highspy.kHighsInf
        for c, lb, ub in zip(self.costs, self.lower, self.upper, strict=True):
            h.addCol(c, lb, inf if ub == INF else ub, 0, [], [])
        for lb, ub, coefs in self.rows:
            idx = sorted(coefs)
            vals = [coefs[i] for i in idx]
            h.addRow(-inf if lb == -INF else lb, inf if ub == INF else ub, len(idx), idx, vals)
        if not relax:
            for i, is_int in enumerate(self.integer):
                if is_int:
                    h.changeColIntegrality(i, highspy.HighsVarType.kInteger)
        if self.maximize:
            h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        h.run()
        status = h.getModelStatus()
        optimal = status == highspy.HighsModelStatus.kOptimal
        if not optimal:
            return MilpResult(False, math.nan, ())
        values = tuple(float(v) for v in h.getSolution().col_value)
        return MilpResult(True, float(h.getInfo().objective_function_value), values)
