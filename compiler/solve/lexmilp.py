"""A small lexicographic MILP on top of HiGHS (``highspy``).

Each level optimises one integer-valued objective; its optimum is then fixed as a constraint
before the next level runs, so the levels are strictly lexicographic (no big-M weights to tune).
All objective coefficients passed in are integers, so fixing at ``value ± 0.5`` is exact.

The value fixed is always evaluated from the point HiGHS returns (integers rounded), never taken
from the objective HiGHS reports: the two can disagree at scale (HiGHS 1.16 once reported 5239
for a point using 5240 GPUs), and fixing the reported value made every later level infeasible.
When HiGHS claims a better value than its point has, the claim is checked by asking for a point
at least one unit better; a proof that none exists makes the point's value the proven optimum.

``time_limit`` is one wall-clock budget for all levels together: each HiGHS run gets what is
left of it, and when it runs out the best point so far is returned with the level that was not
proven and why (:attr:`LexResult.cause`).
"""

from __future__ import annotations

import math
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import highspy
import numpy as np

Sense = Literal["min", "max"]
INF = math.inf


@dataclass(frozen=True)
class Level:
    name: str
    sense: Sense
    coefs: Mapping[int, int]
    # column -> (columns, d): d * column <= the columns' sum, where that, the column's own bounds and
    # the rows fixing earlier levels of the same sense (where it counts positively) are its only
    # constraints: before this level runs, such a column of the previous point is raised to
    # min(upper bound, floor(sum / d)), which keeps the point feasible and may prove the level
    # trivially
    raise_to: Mapping[int, tuple[Sequence[int], int]] = field(default_factory=dict)
    # a bound on the objective at every feasible point (max: from above; min: from below) that is
    # tighter than the column bounds give, e.g. a tier's replicas: a point reaching it is proven
    bound: float | None = None
    # an earlier level of the same sense whose fixed optimum bounds this objective at every point
    # left feasible (e.g. nested counts: workloads at >= 1/2 of their demand are among those at
    # >= 1/3); a point reaching it is proven
    bounded_by: str = ""
    # stop the run after this level (``LexResult.stopped``) when its proven optimum does not reach
    # ``bound``: the caller then builds the model this case needs and solves it again
    stop_unless_bound: bool = False


@dataclass
class LexResult:
    values: list[float]
    objectives: dict[str, float] = field(default_factory=dict)
    level_seconds: dict[str, float] = field(default_factory=dict)
    optimal: bool = True  # every level proven optimal (gap 0)
    failed_level: str = ""  # first level that did not prove optimality ("" = none)
    cause: str = ""  # why ``failed_level`` is not proven: TIME_LIMIT, or a sentence on numerical trouble
    seconds: float = 0.0
    stopped: str = ""  # a ``stop_unless_bound`` level whose optimum fell short of its bound ("" = none)
    highs_runs: int = 0  # HiGHS runs made (levels proven without one do not count)

    def unproven(self, level: str, cause: str) -> None:
        """Record the first level that could not be proven optimal, and why."""
        self.optimal = False
        if not self.failed_level:
            self.failed_level = level
            self.cause = cause


TIME_LIMIT = "time limit"
_MIN_RUN_S = 0.05  # below this, a HiGHS run cannot do anything useful
_VERIFY_ROUNDS = 3  # how often a claimed-better objective is chased before giving up
_GRACE_S = 1.0  # how long past the deadline a HiGHS run may take to notice its time limit


_BANNER_LOCK = threading.Lock()
_banner_done = False


def new_highs() -> highspy.Highs:
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

    def feasible(self, point: np.ndarray, tol: float = 1e-6) -> bool:
        """Whether ``point`` is integral where it must be and within every bound and row."""
        lb, ub = np.array(self.lb), np.array(self.ub)
        if len(point) != len(lb) or (point < lb - tol).any() or (point > ub + tol).any():
            return False
        ints = np.array(self.integer, dtype=bool)
        if (np.abs(point[ints] - np.round(point[ints])) > tol).any():
            return False
        for lo, up, coefs in self.rows:
            value = sum(c * point[col] for col, c in coefs.items())
            if value < lo - tol or value > up + tol:
                return False
        return True

    def _highs(self, time_limit: float, relax: bool) -> highspy.Highs:
        h = new_highs()
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
        self,
        levels: Sequence[Level],
        time_limit: float = 30.0,
        relax: bool = False,
        start: Mapping[str, float] | None = None,
    ) -> LexResult | None:
        """Optimise ``levels`` in order within ``time_limit`` seconds of wall clock for all of them.

        ``start``: a point by column name (names it lacks read 0); when it is integral and satisfies
        every bound and row, the first level starts from it as from a previous level's point, so
        levels it already reaches a bound of are proven without HiGHS. Otherwise it is ignored.
        ``None`` when not even the first level found a feasible point.
        """
        run = _LexRun(self, time.perf_counter() + time_limit, relax)
        if start is not None and not relax:
            point = np.array([float(start.get(name, 0.0)) for name in self.names])
            if self.feasible(point):
                run.result = LexResult(values=list(point))
        ends = _chain_ends(levels)
        for i, level in enumerate(levels):
            if not run.level(level, levels[i : ends[i] + 1]):
                break
        result = run.result
        if result is not None:
            result.seconds = time.perf_counter() - run.started
            result.highs_runs = run.runs
        return result


class _Job:
    """One HiGHS run handed to a worker: ``finished`` is set when it returned or raised (``error``)."""

    def __init__(self, run: Callable[[], object]) -> None:
        self.run = run
        self.finished = threading.Event()
        self.error: BaseException | None = None


class _Worker:
    """A daemon thread that runs the HiGHS runs handed to it, one at a time.

    Idle workers are kept in a pool shared by the process (one per run in flight at once, e.g.
    ``plan``'s two orders), so a run costs a queue hand-off instead of a thread start. A worker
    whose run was abandoned (:meth:`_LexRun._run_guarded`) is retired: it ends after that run and
    never takes another."""

    _idle: ClassVar[list[_Worker]] = []
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="migc-highs", daemon=True)
        self._thread.start()

    @classmethod
    def acquire(cls) -> _Worker:
        with cls._lock:
            if cls._idle:
                return cls._idle.pop()
        return cls()

    def submit(self, run: Callable[[], object]) -> _Job:
        job = _Job(run)
        self._jobs.put(job)
        return job

    def release(self) -> None:
        """Back to the pool: its run is over."""
        with self._lock:
            self._idle.append(self)

    def retire(self) -> None:
        """Never used again: it ends once the run it is in (if any) returns."""
        self._jobs.put(None)

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job.run()
            except BaseException as exc:  # handed to the caller, which raises it in its own thread
                job.error = exc
            finally:
                job.finished.set()


@dataclass
class _Point:
    """What one HiGHS run left behind."""

    status: highspy.HighsModelStatus
    values: np.ndarray | None  # integers rounded; None when HiGHS has no feasible point
    reported: float


class _LexRun:
    """One lexicographic solve: the HiGHS instance, the deadline and the best point so far."""

    def __init__(self, milp: Milp, deadline: float, relax: bool) -> None:
        self.milp = milp
        self.started = time.perf_counter()
        self.deadline = deadline
        self.relax = relax
        self.h = milp._highs(max(_MIN_RUN_S, deadline - self.started), relax)
        self.n = milp.num_vars
        self.integer = np.array(milp.integer, dtype=bool) if not relax else np.zeros(self.n, dtype=bool)
        self.col_lb = np.array(milp.lb, dtype=float)
        self.col_ub = np.array(milp.ub, dtype=float)
        self.result: LexResult | None = None
        self.abandoned = False  # a HiGHS run ignored the deadline: its instance is off limits
        # set to stop the run in flight: checked by HiGHS's simplex, IPM and MIP interrupt callbacks
        self.stop = threading.Event()
        for hook in (self.h.cbSimplexInterrupt, self.h.cbIpmInterrupt, self.h.cbMipInterrupt):
            hook.subscribe(self._interrupt)
        self.runs = 0  # HiGHS runs made
        self.step = 1  # how many levels ahead in a chain the next probe looks (``_probe_ahead``)

    def gave_up(self) -> bool:
        """A HiGHS run ignored the deadline and was abandoned (its instance is off limits)."""
        return self.abandoned

    # -- one level ---------------------------------------------------------------------------

    def level(self, level: Level, chain: Sequence[Level] = ()) -> bool:
        """Optimise one level and fix its value; False when the run must stop here.

        ``chain``: this level and the ones after it that form a chain with it (``_chain_ends``),
        only to look ahead (``_probe_ahead``): every level is still proven by a bound its point
        reaches or by a HiGHS run of its own, so a chain that does not behave as one costs runs,
        never a wrong optimum.
        """
        if self.abandoned or self.deadline - time.perf_counter() <= _MIN_RUN_S:
            if self.result is not None:
                self.result.unproven(level.name, TIME_LIMIT)
            return False
        cols = np.array(sorted(c for c, v in level.coefs.items() if v), dtype=np.int32)
        coefs = np.array([float(level.coefs[int(c)]) for c in cols])
        level_started = time.perf_counter()
        if self.result is not None and not self.relax:
            prev = np.array(self.result.values)
            for col, (bounding, div) in level.raise_to.items():
                prev[col] = min(self.col_ub[col], float(prev[list(bounding)].sum() // div))
            self.result.values = list(prev)
            value = _evaluate(prev, cols, coefs)
            if value == self._best_bound(level, cols, coefs):
                # the previous point already reaches a bound of the level (every coefficient at its
                # best column bound, the level's own bound, or the optimum of the level bounding
                # it): proven without running HiGHS
                self._finish_level(level, value, cols, coefs, level_started)
                return self._go_on(level, value)
            if level.bounded_by and len(chain) > 1 and self._probe_ahead(chain):
                return self.level(level)  # the probe's point reaches the bound: proven
            if self.gave_up():
                self.result.unproven(level.name, TIME_LIMIT)
                return False
        self._set_objective(level, cols, coefs)
        point = self._run(start=self.result.values if self.result is not None else None)
        if point.values is None:
            return self._no_point(level, point, cols, coefs, level_started)
        if self.result is None:
            self.result = LexResult(values=list(point.values))
        else:
            self.result.values = list(point.values)
        value = _evaluate(point.values, cols, coefs)
        if point.status != highspy.HighsModelStatus.kOptimal:
            # a point, but not a proven one (time limit or trouble): keep it and stop
            self._finish_level(level, value, cols, coefs, level_started)
            self.result.unproven(level.name, self._cause(point.status))
            return False
        value = self._settle_claim(level, point, value, cols, coefs)
        self._finish_level(level, value, cols, coefs, level_started)
        return self._go_on(level, value)

    def _probe_ahead(self, chain: Sequence[Level]) -> bool:
        """Look for a point that keeps the bound of ``chain[0]`` up to a level further on.

        In a chain each level's objective is at most the one before it at every point (the bound
        ``bounded_by`` gives), and a point whose objective at a later level reaches ``k`` reaches
        ``k`` at every level between once its columns are raised (``raise_to``). So where the
        point from the level before falls short of ``k`` (the optimum of the level bounding
        ``chain[0]``), one feasibility run "objective of ``chain[j]`` >= k" with j = ``step``
        either finds a point proving ``chain[0..j]`` without another run (then the next probe
        looks twice as far) or proves that none exists (then it looks half as far; after j = 1
        the level is optimised as usual). Leximin thresholds (compiler/solve/milp.py) form such
        chains: most thresholds keep the count of the one before, and HiGHS's point for one
        threshold is arbitrary at the next, so without this nearly every threshold costs a run.
        True when the point now held reaches ``chain[0]``'s bound.
        """
        assert self.result is not None
        first = chain[0]
        k = self.result.objectives[first.bounded_by]
        while True:
            j = min(self.step, len(chain) - 1)
            if j < 1:
                return False
            target = chain[j]
            cols = np.array(sorted(c for c, v in target.coefs.items() if v), dtype=np.int32)
            coefs = np.array([float(target.coefs[int(c)]) for c in cols])
            self.h.changeColsCost(self.n, np.arange(self.n, dtype=np.int32), np.zeros(self.n))
            row = self._add_bound(first.sense, k, cols, coefs, strict=False)
            probe = self._run(start=None)
            if self.abandoned:
                return False
            self._drop_last_row(row)
            if probe.status == highspy.HighsModelStatus.kInfeasible:
                if j == 1:
                    return False  # the bound drops at the next level: optimise this one
                self.step = j // 2
                continue
            if (
                probe.values is None
                or probe.status != highspy.HighsModelStatus.kOptimal
                or _evaluate(probe.values, cols, coefs) < k - 0.5
            ):
                return False  # time ran out or trouble: the level is optimised as usual
            self.result.values = list(probe.values)
            self.step *= 2
            return True

    def _go_on(self, level: Level, value: float) -> bool:
        """False (and ``stopped`` set) when a ``stop_unless_bound`` level's optimum misses its bound."""
        assert self.result is not None
        if level.stop_unless_bound and level.bound is not None and value != level.bound:
            self.result.stopped = level.name
            return False
        return True

    def _no_point(
        self, level: Level, point: _Point, cols: np.ndarray, coefs: np.ndarray, level_started: float
    ) -> bool:
        """HiGHS returned no point. Before any level: nothing to return. After one: the previous
        point satisfies every row of this level's model, so "infeasible" is numerical trouble; the
        previous point is kept, its value fixed, and the next levels still run."""
        result = self.result
        if result is None:
            return False
        if self.abandoned or point.status != highspy.HighsModelStatus.kInfeasible:
            result.unproven(level.name, self._cause(point.status))
            return False
        prev = np.array(result.values)
        retry = self._run(start=None, presolve=False)
        if retry.values is not None and retry.status == highspy.HighsModelStatus.kOptimal:
            result.values = list(retry.values)
            value = _evaluate(retry.values, cols, coefs)
        elif self.gave_up():
            result.unproven(level.name, TIME_LIMIT)
            return False
        else:
            value = _evaluate(prev, cols, coefs)
            result.unproven(
                level.name,
                f"numerical trouble: HiGHS found level '{level.name}' infeasible although the "
                "previous level's point satisfies it",
            )
        self._finish_level(level, value, cols, coefs, level_started)
        return self.deadline - time.perf_counter() > _MIN_RUN_S

    def _settle_claim(
        self, level: Level, point: _Point, value: float, cols: np.ndarray, coefs: np.ndarray
    ) -> float:
        """The value to fix for a level HiGHS says it solved to optimality.

        When HiGHS reports a better objective than its point evaluates to, ask for a point at
        least one unit better than the point: a proof that there is none makes the point optimal;
        a better point replaces it (and is checked the same way).
        """
        assert self.result is not None
        reported = point.reported
        for _ in range(_VERIFY_ROUNDS):
            if self.relax or not _better(level.sense, reported, value):
                return value
            row = self._add_bound(level.sense, value, cols, coefs, strict=True)
            probe = self._run(start=None)
            if self.gave_up():
                self.result.unproven(level.name, TIME_LIMIT)
                return value
            self._drop_last_row(row)
            if probe.status == highspy.HighsModelStatus.kInfeasible:
                return value  # proven: nothing better than the point exists
            if probe.values is None or probe.status != highspy.HighsModelStatus.kOptimal:
                break
            better = _evaluate(probe.values, cols, coefs)
            if not _better(level.sense, better, value):
                break
            self.result.values = list(probe.values)
            value, reported = better, probe.reported
        self.result.unproven(
            level.name,
            f"numerical trouble: HiGHS reported {reported:g} for level '{level.name}' but its point "
            f"evaluates to {value:g}, and no better point was proven absent",
        )
        return value

    def _finish_level(
        self, level: Level, value: float, cols: np.ndarray, coefs: np.ndarray, level_started: float
    ) -> None:
        assert self.result is not None
        self.result.objectives[level.name] = value
        self.result.level_seconds[level.name] = time.perf_counter() - level_started
        if len(cols) and not self.abandoned:
            self._add_bound(level.sense, value, cols, coefs, strict=False)

    def _bound(self, sense: Sense, cols: np.ndarray, coefs: np.ndarray) -> float:
        """The best value the objective could have on the column bounds alone (may be infinite)."""
        lo = self.col_lb[cols] * coefs
        up = self.col_ub[cols] * coefs
        return float(np.maximum(lo, up).sum() if sense == "max" else np.minimum(lo, up).sum())

    def _best_bound(self, level: Level, cols: np.ndarray, coefs: np.ndarray) -> float:
        """The tightest known bound on the level: column bounds, ``bound``, ``bounded_by``'s optimum."""
        assert self.result is not None
        bounds = [self._bound(level.sense, cols, coefs)]
        if level.bound is not None:
            bounds.append(level.bound)
        if level.bounded_by:
            bounds.append(self.result.objectives[level.bounded_by])
        return min(bounds) if level.sense == "max" else max(bounds)

    # -- HiGHS plumbing ----------------------------------------------------------------------

    def _set_objective(self, level: Level, cols: np.ndarray, coefs: np.ndarray) -> None:
        cost = np.zeros(self.n)
        cost[cols] = coefs
        self.h.changeColsCost(self.n, np.arange(self.n, dtype=np.int32), cost)
        self.h.changeObjectiveSense(
            highspy.ObjSense.kMaximize if level.sense == "max" else highspy.ObjSense.kMinimize
        )

    def _run(self, start: Sequence[float] | None, presolve: bool = True) -> _Point:
        h = self.h
        h.setOptionValue("time_limit", max(_MIN_RUN_S, self.deadline - time.perf_counter()))
        h.setOptionValue("presolve", "on" if presolve else "off")
        if start is not None:
            # the previous level's point is feasible for this one: hand it over as a start
            sol = highspy.HighsSolution()
            sol.col_value = list(start)
            sol.value_valid = True
            h.setSolution(sol)
        self.runs += 1
        if not self._run_guarded():
            self.abandoned = True
            return _Point(highspy.HighsModelStatus.kTimeLimit, None, math.nan)
        status = h.getModelStatus()
        info = h.getInfo()
        if info.primal_solution_status != 2:  # kSolutionStatusFeasible
            return _Point(status, None, info.objective_function_value)
        values = np.array(h.getSolution().col_value, dtype=float)
        if self.integer.any():
            values[self.integer] = np.round(values[self.integer])
        return _Point(status, values, info.objective_function_value)

    def _interrupt(self, event: Any) -> None:
        if self.stop.is_set():
            event.interrupt()

    def _run_guarded(self) -> bool:
        """HiGHS's ``run()`` on a worker thread (:class:`_Worker`), watched against the deadline.

        HiGHS checks its ``time_limit`` only at certain points; if a run is still going
        ``_GRACE_S`` after the deadline it is asked to stop (a user interrupt, honoured at its
        next simplex/IPM/MIP callback), and if it does not stop either, the run is abandoned and
        this instance is never touched again, so the caller always gets control back (the worker
        stuck in it is retired: it ends when that run does, and is never handed a run again).
        False when the run had to be abandoned.

        Not highspy's ``startSolve``/``wait``/``cancelSolve``: in highspy 1.16 (highspy/highs.py,
        ``class Highs``) the lock that marks "a run in flight" is a class attribute
        (``__solver_stopped: RLock = RLock()``), shared by every instance in the process. A run
        abandoned here kept it, and so does a run in ``plan``'s other-order thread: any other
        instance's ``startSolve`` then raised ``HighsError: Solver is already running``. The
        event, the worker and the interrupt callback here belong to this run alone; ``run()``
        releases the GIL while it solves. The worker threads are kept between runs (a thread
        started per run cost about 0.5 ms of hand-off, a sixth of a small run: bench/RESULTS.md
        Round 16).
        """
        self.stop.clear()
        worker = _Worker.acquire()
        job = worker.submit(self.h.run)
        try:
            done = job.finished.wait(max(0.0, self.deadline - time.perf_counter()) + _GRACE_S)
            if not done:
                self.stop.set()
                done = job.finished.wait(_GRACE_S)
        except BaseException:  # KeyboardInterrupt while waiting: stop HiGHS, then pass it on
            self.stop.set()
            worker.retire()
            raise
        if not done:
            worker.retire()
            return False
        worker.release()
        if job.error is not None:
            raise job.error
        return True

    def _add_bound(
        self, sense: Sense, value: float, cols: np.ndarray, coefs: np.ndarray, strict: bool
    ) -> int:
        """Add ``objective >= value`` (max) or ``<= value`` (min); ``strict`` asks for one unit
        better instead. Returns the row's index."""
        tol = 1e-7 if self.relax else 0.5
        if strict:
            tol = -0.5
        lo, up = (value - tol, highspy.kHighsInf) if sense == "max" else (-highspy.kHighsInf, value + tol)
        row = int(self.h.getNumRow())
        self.h.addRow(lo, up, len(cols), cols, coefs)
        return row

    def _drop_last_row(self, row: int) -> None:
        self.h.deleteRows(1, np.array([row], dtype=np.int32))

    def _cause(self, status: highspy.HighsModelStatus) -> str:
        if status == highspy.HighsModelStatus.kTimeLimit or self.deadline - time.perf_counter() <= _MIN_RUN_S:
            return TIME_LIMIT
        return f"numerical trouble: HiGHS stopped with status '{self.h.modelStatusToString(status)}'"


def _chain_ends(levels: Sequence[Level]) -> list[int]:
    """Per level, the index of the last level of its chain: the levels right after it each
    bounded by the one before (``bounded_by``), of the same sense, every objective column raised
    (``raise_to``) -- so that reaching a value at a later level reaches it at every one between."""
    ends = list(range(len(levels)))
    for i in range(len(levels) - 2, -1, -1):
        nxt, cur = levels[i + 1], levels[i]
        if (
            nxt.bounded_by == cur.name
            and nxt.sense == cur.sense
            and all(c in nxt.raise_to for c, v in nxt.coefs.items() if v)
        ):
            ends[i] = ends[i + 1]
    return ends


def _evaluate(values: np.ndarray, cols: np.ndarray, coefs: np.ndarray) -> float:
    """The level's objective at the point (exact for rounded integers and integer coefficients)."""
    return float(np.dot(values[cols], coefs)) if len(cols) else 0.0


def _better(sense: Sense, a: float, b: float) -> bool:
    """``a`` is at least half a unit better than ``b``."""
    return a >= b + 0.5 if sense == "max" else a <= b - 0.5
