"""Compile a policy set up to (not including) rendering: :func:`compile_policy` runs
:func:`compiler.pipeline.load_and_validate`, reads what ``--out`` holds, solves, and runs the
post-solve checks registered in :data:`POST_SOLVE_CHECKS` with the codes they may emit, as
validation rules are (:mod:`compiler.validate.registry`): each reads the policy and the solution
and returns diagnostics; they run only when nothing before them is an error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from compiler.catalog import Catalog, load_catalog
from compiler.current import read_current
from compiler.diagnostics import Diagnostic, has_errors, make
from compiler.load import display_path
from compiler.model import CurrentState, Policy
from compiler.pipeline import load_and_validate
from compiler.render import check_quotas
from compiler.render.dra import dra_diagnostics
from compiler.render.hami import hami_diagnostics
from compiler.render.targets import target_diagnostics
from compiler.solve import solve
from compiler.solve.result import Solution


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
    """Load, validate, read the deployed state from ``against``, solve, and check quota feasibility.

    ``label_base``: the directory the file headers name policy paths relative to (see :func:`source_label`).
    """
    catalog = load_catalog()
    label = source_label(paths, label_base)
    policy, diagnostics = load_and_validate(paths, catalog)
    if policy is None or has_errors(diagnostics):
        return Compiled(None, None, catalog, CurrentState(), tuple(diagnostics), label)
    current, more = read_current(against, policy)
    diagnostics.extend(more)
    solution = solve(policy, catalog, current)
    diagnostics.extend(solution.diagnostics)
    if not has_errors(diagnostics):
        diagnostics.extend(post_solve(policy, solution, catalog))
    return Compiled(policy, solution, catalog, current, tuple(diagnostics), label)


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


POST_SOLVE_CHECKS: tuple[PostSolveCheck, ...] = (
    PostSolveCheck(
        "quotas", ("MIGC250", "MIGC251", "MIGC252", "MIGC253", "MIGC255", "MIGC310"), check_quotas
    ),
    PostSolveCheck("hami", ("MIGC315", "MIGC316"), lambda p, _s, _c: hami_diagnostics(p)),
    PostSolveCheck("targets", ("MIGC317", "MIGC318"), lambda p, s, _c: target_diagnostics(p, s)),
    PostSolveCheck("dra", ("MIGC330", "MIGC331", "MIGC332", "MIGC333"), dra_diagnostics),
    PostSolveCheck("change-budget", ("MIGC423",), lambda p, s, _c: change_budget(p, s)),
)


def post_solve(policy: Policy, solution: Solution, catalog: Catalog) -> list[Diagnostic]:
    """Every registered post-solve check, in registry order."""
    out: list[Diagnostic] = []
    for check in POST_SOLVE_CHECKS:
        out.extend(check.run(policy, solution, catalog))
    return out
