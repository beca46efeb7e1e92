"""Compile a policy set up to (not including) rendering: :func:`compile_policy` runs
:func:`compiler.pipeline.collect_policy`, reads what ``--out`` holds, solves, and runs the
post-solve checks registered in :data:`POST_SOLVE_CHECKS` with the codes they may emit, as
validation rules are (:mod:`compiler.validate.registry`): each reads the policy and the solution
and returns diagnostics; they run only when nothing before them is an error.

Every check that reports after the solve is registered the same way, by what it reads:
:data:`POST_SOLVE_CHECKS` (the policy and the solution; every command that compiles),
:data:`PLAN_CHECKS` (the spread rows ``migc plan`` shows) and :data:`RENDER_CHECKS` (the rendered
files, before ``migc compile`` writes or prints them). A check that reports a code it does not
declare is a programming error (a ``ValueError``), as an undeclared code of a validation rule is:
``migc explain`` and ``--ignore`` rely on the declarations.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from compiler.catalog import Catalog, load_catalog
from compiler.current import read_current
from compiler.diagnostics import Collector, Diagnostic, has_errors, make
from compiler.load import display_path
from compiler.model import CurrentState, Policy
from compiler.pipeline import collect_policy
from compiler.render import check_quotas, oversized
from compiler.render.dra import dra_diagnostics
from compiler.render.hami import hami_diagnostics
from compiler.render.targets import target_diagnostics
from compiler.solve import solve
from compiler.solve.result import Solution

if TYPE_CHECKING:  # compiler.plan is loaded by `migc plan` only, never by `migc compile`
    from compiler.plan.data import SpreadRow


@dataclass(frozen=True)
class Compiled:
    """Everything a run produced up to (not including) writing; ``policy``/``solution`` None on errors."""

    policy: Policy | None
    solution: Solution | None
    catalog: Catalog
    current: CurrentState
    diagnostics: tuple[Diagnostic, ...]
    source_label: str

    @property
    def failed(self) -> bool:
        return self.policy is None or self.solution is None or has_errors(self.diagnostics)


def source_label(paths: Sequence[str], base: Path | None = None) -> str:
    """Policy paths for the generated-file header: normalised and sorted (argument order is irrelevant).

    With ``base`` (the directory that holds ``--out``) the paths are written relative to it, so the
    header, and with it ``--check``, does not depend on the working directory:
    ``migc compile examples/prod --out output`` and ``cd examples && migc compile prod --out
    ../output`` render the same bytes. A policy outside ``base`` is shown as typed.
    """
    if base is None:
        shown = {display_path(Path(p)) for p in paths}
    else:
        root = os.path.abspath(base)
        shown = set()
        for p in paths:
            rel = os.path.relpath(os.path.abspath(p), root)
            shown.add(Path(rel).as_posix() if not rel.startswith("..") else display_path(Path(p)))
    return ", ".join(sorted(shown))


def compile_policy(paths: Sequence[str], against: Path | None, label_base: Path | None = None) -> Compiled:
    """Load, validate, read the deployed state from ``against``, solve, and run the post-solve checks.

    ``label_base``: the directory the file headers name policy paths relative to (see :func:`source_label`).
    ``diagnostics`` are every stage's, merged by one :class:`Collector` (exact repeats dropped,
    sorted); ``--ignore`` is the command's, applied when it reports.
    """
    catalog = load_catalog()
    label = source_label(paths, label_base)
    diagnostics = Collector()
    policy = collect_policy(paths, diagnostics, catalog)
    if policy is None or diagnostics.has_errors():
        return Compiled(None, None, catalog, CurrentState(), tuple(diagnostics.finish()), label)
    current, more = read_current(against, policy)
    diagnostics.extend(more)
    solution = solve(policy, catalog, current)
    diagnostics.extend(solution.diagnostics)
    if not diagnostics.has_errors():
        diagnostics.extend(post_solve(policy, solution, catalog))
    return Compiled(policy, solution, catalog, current, tuple(diagnostics.finish()), label)


def change_budget(policy: Policy, solution: Solution) -> list[Diagnostic]:
    """MIGC423 per cluster where more deployed nodes change than ``dailyChangeBudget`` allows per day.

    Only nodes with a known deployed layout count: a first rollout is not a re-partitioning.
    """
    budget = policy.partition.daily_change_budget
    if budget <= 0:
        return []
    changed: dict[str, int] = {}
    for pool in solution.pools:
        changed[pool.cluster] = changed.get(pool.cluster, 0) + sum(
            1 for n in pool.nodes if n.current is not None and n.changed
        )
    part = policy.partition
    span = part.budget_span if part.budget_span.file else part.span  # at the field, where it is written
    return [
        make(
            "MIGC423",
            f"cluster {cluster}: this change reconfigures {count} nodes, "
            f"more than dailyChangeBudget {budget}",
            file=span.file,
            line=span.line,
            col=span.col,
            path=span.path,
        )
        for cluster, count in sorted(changed.items())
        if count > budget
    ]


@dataclass(frozen=True)
class PostSolveCheck:
    """A check of the solved policy, with the codes it may emit (``migc explain`` documents each)."""

    name: str
    codes: tuple[str, ...]
    run: Callable[[Policy, Solution, Catalog], list[Diagnostic]]


@dataclass(frozen=True)
class PlanCheck:
    """A check of the spread rows ``migc plan`` shows (one per workload with a spread), with its codes."""

    name: str
    codes: tuple[str, ...]
    run: Callable[[Policy, Sequence[SpreadRow]], list[Diagnostic]]


@dataclass(frozen=True)
class RenderCheck:
    """A check of the rendered files (path → bytes) before they are written, with its codes."""

    name: str
    codes: tuple[str, ...]
    run: Callable[[Mapping[str, bytes]], list[Diagnostic]]


POST_SOLVE_CHECKS: tuple[PostSolveCheck, ...] = (
    # MIGC134/135: the demand the solver's picks put above a quota (render/quota.py
    # check_demand_within_quota, through validate/rules/consumers.py demand_verdict)
    PostSolveCheck(
        "quotas",
        ("MIGC134", "MIGC135", "MIGC250", "MIGC251", "MIGC252", "MIGC253", "MIGC255", "MIGC310"),
        check_quotas,
    ),
    PostSolveCheck("hami", ("MIGC315", "MIGC316"), lambda p, _s, _c: hami_diagnostics(p)),
    PostSolveCheck("targets", ("MIGC317", "MIGC318"), lambda p, s, _c: target_diagnostics(p, s)),
    PostSolveCheck("dra", ("MIGC330", "MIGC331", "MIGC332", "MIGC333"), dra_diagnostics),
    PostSolveCheck("change-budget", ("MIGC423",), lambda p, s, _c: change_budget(p, s)),
)

def _spread(policy: Policy, rows: Sequence[SpreadRow]) -> list[Diagnostic]:
    # imported here, not at the top: `migc compile` never loads compiler.plan
    from compiler.plan.spread import spread_warnings

    return spread_warnings(policy, rows)


PLAN_CHECKS: tuple[PlanCheck, ...] = (PlanCheck("spread", ("MIGC256",), _spread),)

RENDER_CHECKS: tuple[RenderCheck, ...] = (RenderCheck("configmap-size", ("MIGC306",), oversized),)


def registered_checks() -> tuple[PostSolveCheck | PlanCheck | RenderCheck, ...]:
    """Every check that reports after the solve, in the order the pipeline runs them."""
    return (*POST_SOLVE_CHECKS, *PLAN_CHECKS, *RENDER_CHECKS)


def _declared(name: str, codes: Iterable[str], found: list[Diagnostic]) -> list[Diagnostic]:
    """``found``, refused (a programming error) when it holds a code check ``name`` does not declare."""
    undeclared = sorted({d.code for d in found} - set(codes))
    if undeclared:
        raise ValueError(f"check {name} reported {', '.join(undeclared)}, which it does not declare")
    return found


def post_solve(policy: Policy, solution: Solution, catalog: Catalog) -> list[Diagnostic]:
    """Every registered post-solve check, in registry order."""
    out: list[Diagnostic] = []
    for check in POST_SOLVE_CHECKS:
        out.extend(_declared(check.name, check.codes, check.run(policy, solution, catalog)))
    return out


def plan_checks(policy: Policy, rows: Sequence[SpreadRow]) -> list[Diagnostic]:
    """Every registered check of the plan's spread rows, in registry order."""
    out: list[Diagnostic] = []
    for check in PLAN_CHECKS:
        out.extend(_declared(check.name, check.codes, check.run(policy, rows)))
    return out


def render_checks(files: Mapping[str, bytes]) -> list[Diagnostic]:
    """Every registered check of the rendered files, in registry order."""
    out: list[Diagnostic] = []
    for check in RENDER_CHECKS:
        out.extend(_declared(check.name, check.codes, check.run(files)))
    return out
