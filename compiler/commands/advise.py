"""`migc advise`: per pool the sharing mode to use and why; per priced GPU model the fewest GPUs the
declared demand needs, its $/hour and the saving against all-balanced and one whole GPU per pod.

The advice goes to stdout (text, markdown or JSON); diagnostics and the summary line go to stderr.
"""

from __future__ import annotations

import datetime as dt
import sys

import click

from compiler.advise import advise
from compiler.advise.report import FORMATS
from compiler.catalog import load_catalog
from compiler.commands._common import (
    FiniteFloatRange,
    emit_diagnostics,
    fail,
    ignore_option,
    paths_argument,
    result_format_option,
)
from compiler.diagnostics import Collector
from compiler.exitcodes import ExitCode
from compiler.observe import Observation, ObserveError, read_snapshots
from compiler.pipeline import collect_policy
from compiler.solve import solve

# the most --time-limit takes: a day per sizing solve (the solver's wait on its thread overflowed the
# platform's time_t at 1e300 s and aborted the process)
MAX_TIME_LIMIT_S = 86400.0


@click.command(
    name="advise",
    short_help="Advise a sharing mode per pool and size the demand per GPU model, with $/hour.",
)
@paths_argument
@click.option(
    "--snapshot",
    "snapshots",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Observed pods (`kubectl get pods,nodes -A -o json`; repeat for several files) to compare "
    "with the declared demand.",
)
@result_format_option(list(FORMATS), "Format of the advice.")
@click.option(
    "--time-limit",
    default=60.0,
    show_default=True,
    type=FiniteFloatRange(0.1, MAX_TIME_LIMIT_S),
    help="Seconds the solver may spend per sizing solve.",
)
@ignore_option
def command(
    paths: tuple[str, ...],
    snapshots: tuple[str, ...],
    fmt: str,
    time_limit: float,
    ignore: tuple[str, ...],  # applied where diagnostics are printed (_common.emit_diagnostics)
) -> int:
    """Advise a sharing mode per pool and size the demand per GPU model, with $/hour.

    Every recommendation cites its rule (MIGC5xx; `migc explain CODE`). Sizing solves the declared
    demand on each GPU model the Fleet prices, with the solver `migc compile` uses.
    Exit status: 0 advice printed, 1 invalid or infeasible policy or unreadable snapshot, 2 usage error.
    """
    catalog = load_catalog()
    diagnostics = Collector()
    policy = collect_policy(paths, diagnostics, catalog)
    solution = None
    if policy is not None and not diagnostics.has_errors():
        solution = solve(policy, catalog, None, time_limit_s=time_limit)
        diagnostics.extend(solution.diagnostics)
    observation: Observation | None = None
    if snapshots and not diagnostics.has_errors():
        try:
            observation = read_snapshots(snapshots, dt.datetime.now(dt.UTC).replace(microsecond=0))
            diagnostics.extend(observation.warnings)
        except ObserveError as exc:
            diagnostics.add(exc.diagnostic)
    if policy is None or solution is None or diagnostics.has_errors():
        return fail(diagnostics, summary="advise")
    emit_diagnostics(diagnostics, "text", to_stderr=True)
    # each sizing solve may take up to --time-limit: say which one runs, on a terminal (not in logs)
    progress = (lambda what: click.echo(f"migc: {what}…", err=True)) if sys.stderr.isatty() else None
    advice = advise(policy, catalog, solution, observation, time_limit_s=time_limit, progress=progress)
    click.echo(FORMATS[fmt](advice), nl=False)
    return ExitCode.OK
