"""Shared pieces of the commands: load + validate a policy set, the common options (output format,
cluster source), ``--now``, reading the observed cluster, and the exit path of a command that fails.

Every command imports them from here so all read policies, clusters and times and report
diagnostics the same way.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click

from compiler import report
from compiler.diagnostics import Collector, Diagnostic, ignorable, make
from compiler.exitcodes import ExitCode
from compiler.observe import Observation, read_cluster, read_snapshots
from compiler.observe.read import LIST_TIMEOUT_S
from compiler.recommend import disruption
from compiler.report import FORMATS

F = TypeVar("F", bound=Callable[..., Any])


def output_format_option(func: F) -> F:
    """``--output-format/-o text|json|github|sarif`` (default text), passed as ``output_format``."""
    decorated: F = click.option(
        "--output-format",
        "--output",
        "-o",
        "output_format",
        type=click.Choice(FORMATS),
        default="text",
        show_default=True,
        help="Format of stdout, which here holds the diagnostics: text for people, json for tools, "
        "github for Actions annotations, sarif for code scanning (-o/--output means the format of "
        "stdout in every command).",
    )(func)
    return decorated


def emit_diagnostics(
    diagnostics: Collector | Iterable[Diagnostic], fmt: str, *, to_stderr: bool
) -> list[Diagnostic]:
    """Print ``diagnostics`` in ``fmt`` (see :data:`compiler.report.FORMATS`); nothing when there are none.
    Returns what was printed, for the summary line.

    The one place every command's diagnostics pass through: the run's :class:`Collector` (or one
    made of the list given) is finished here, once, with the ``--ignore`` codes of the running
    command, so every command that has the option applies it the same way (cfn-lint suppresses
    in its runner so): exact repeats dropped, sorted, warnings and notes of an ignored code left
    out, errors always kept.
    """
    collector = diagnostics if isinstance(diagnostics, Collector) else Collector(diagnostics)
    shown = collector.finish(ignored_codes())
    text = report.render(shown, fmt)
    if text:
        click.echo(text, nl=False, err=to_stderr)
    return shown


def fail(
    diagnostics: Collector | Iterable[Diagnostic],
    *,
    summary: str | None = None,
    status: int = ExitCode.INVALID,
) -> int:
    """The exit path of a command that cannot go on: ``diagnostics`` as text on stderr, then, when
    ``summary`` names the command, its one-line summary (``migc: 1 error`` …); returns ``status``."""
    shown = emit_diagnostics(diagnostics, "text", to_stderr=True)
    if summary is not None:
        click.echo(report.summary(shown, what=summary), err=True)
    return status


def cannot_write(path: str, exc: OSError) -> Diagnostic:
    """MIGC301 for an output file the command could not write."""
    return make("MIGC301", f"cannot write {path}: {exc.strerror or exc}", file=path)


def result_format_option(choices: Sequence[str], help: str | None = None) -> Callable[[F], F]:
    """``--output-format/-o`` for what the command prints on stdout, one of ``choices`` (default text),
    passed as ``fmt``. (Diagnostics' formats are :func:`output_format_option`'s.)"""
    return click.option(
        "--output-format",
        "--output",
        "-o",
        "fmt",
        default="text",
        show_default=True,
        type=click.Choice(list(choices)),
        help=help,
    )


def observation_time(now: str | None) -> dt.datetime | Diagnostic:
    """The time ``--now`` names (RFC 3339 with a time zone; without the option the current second),
    or MIGC406 when it names none."""
    if now is None:
        return dt.datetime.now(dt.UTC).replace(microsecond=0)
    try:
        t = dt.datetime.fromisoformat(now.replace("Z", "+00:00"))
    except ValueError:
        t = None
    if t is None or t.tzinfo is None:
        return make("MIGC406", f"--now {now!r} is not an RFC 3339 timestamp with a time zone")
    return t


def cluster_source_options(func: F) -> F:
    """Where the observed cluster comes from: ``--snapshot FILE...`` or a live cluster
    (``--kubeconfig``/``--context``/``--in-cluster``); check with :func:`require_one_cluster_source`."""
    options = (
        click.option(
            "--snapshot",
            "snapshots",
            multiple=True,
            type=click.Path(dir_okay=False),
            help="Cluster state from `kubectl get pods,nodes -A -o json` (repeat for several files; "
            "on DRA pools `kubectl get pods,nodes,resourceclaims,resourceslices -A -o json`).",
        ),
        click.option(
            "--kubeconfig", default=None, type=click.Path(dir_okay=False), help="Read a live cluster."
        ),
        click.option("--context", default=None, help="Kubeconfig context (default: the current one)."),
        click.option("--in-cluster", is_flag=True, help="Read the cluster migc runs in (service account)."),
    )
    decorated = func
    for option in reversed(options):
        decorated = option(decorated)
    return decorated


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange that refuses ``nan`` and ``±inf`` too (a usage error): FloatRange lets
    ``nan`` through (it fails no comparison) and ``inf`` where no max is set, and what a command then
    did with them was not input checking (``NaN`` / ``Infinity`` printed as JSON, a replay or a solver
    wait that never ends, an internal error)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)


class Seconds(FiniteFloatRange):
    """Seconds in ``[0, disruption.MAX_SECONDS]`` (G, R and D): beyond it a node of the replay is out
    for ever (``1e300`` is finite) and the replay never ends."""

    name = "seconds"

    def __init__(self) -> None:
        super().__init__(min=0, max=disruption.MAX_SECONDS)


def disruption_options(disruption_help: str, reconfigure_help: str) -> Callable[[F], F]:
    """``--disruption``, ``--drain-grace``, ``--reconfigure-seconds`` and ``--drain-seconds``: the
    inputs of the disruption rule (compiler/recommend/disruption.py), one declaration for recommend
    and simulate."""

    def decorate(func: F) -> F:
        options = (
            click.option(
                "--disruption",
                "disruption",
                default="expected",
                show_default=True,
                type=click.Choice(disruption.MODELS),
                help=disruption_help,
            ),
            click.option(
                "--drain-grace",
                default=disruption.DRAIN_GRACE_SECONDS,
                show_default=True,
                type=Seconds(),
                help="Seconds the controller lets a cordoned node's GPU pods finish before evicting them "
                "(controller --drain-grace-timeout).",
            ),
            click.option(
                "--reconfigure-seconds",
                default=disruption.RECONFIGURE_SECONDS,
                show_default=True,
                type=Seconds(),
                help=reconfigure_help,
            ),
            click.option(
                "--drain-seconds",
                default=disruption.DRAIN_SECONDS,
                show_default=True,
                type=Seconds(),
                help="Fixed outage per re-carved node, whatever its GPUs (the GPU Operator pausing "
                "the node's GPU operands around the apply): priced B × (D + R × GPUs changed).",
            ),
        )
        decorated = func
        for option in reversed(options):
            decorated = option(decorated)
        return decorated

    return decorate


def require_one_cluster_source(
    snapshots: Sequence[str], kubeconfig: str | None, context: str | None, in_cluster: bool
) -> None:
    """Exactly one of snapshot files or a live cluster, else a usage error (exit 2)."""
    live = kubeconfig is not None or context is not None or in_cluster
    if bool(snapshots) == live:
        raise click.UsageError("give either --snapshot FILE... or --kubeconfig/--context/--in-cluster")


def read_cluster_source(
    moment: dt.datetime,
    snapshots: Sequence[str],
    kubeconfig: str | None,
    context: str | None,
    in_cluster: bool,
    *,
    timeout: float = LIST_TIMEOUT_S,
) -> Observation:
    """The cluster :func:`cluster_source_options` named, observed at ``moment``: the snapshot files, or
    the live cluster (``timeout`` seconds per request). Raises :class:`compiler.observe.ObserveError`."""
    if snapshots:
        return read_snapshots(snapshots, moment)
    return read_cluster(
        moment, kubeconfig=kubeconfig, context=context, in_cluster=in_cluster, timeout=timeout
    )


def paths_argument(func: F) -> F:
    """One or more policy files or directories (directories are searched for *.yaml/*.yml)."""
    decorated: F = click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))(func)
    return decorated


def _ignore_codes(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    codes = tuple(dict.fromkeys(c.strip().upper() for v in values for c in v.split(",") if c.strip()))
    for code in codes:
        problem = ignorable(code)
        if problem is not None:
            raise click.BadParameter(problem, ctx=ctx, param=param)
    ctx.meta[_IGNORE_KEY] = codes  # read by emit_diagnostics, for the whole command
    return codes


_IGNORE_KEY = "migc.ignore"


def ignored_codes() -> tuple[str, ...]:
    """The codes ``--ignore`` named on the running command (none outside a command)."""
    ctx = click.get_current_context(silent=True)
    return tuple(ctx.meta.get(_IGNORE_KEY, ())) if ctx is not None else ()


def ignore_option(func: F) -> F:
    """``--ignore CODE`` (repeatable, or comma-separated): leave out warnings and notes of CODE."""
    decorated: F = click.option(
        "--ignore",
        "ignore",
        multiple=True,
        metavar="CODE",
        callback=_ignore_codes,
        help="Leave out warnings and notes with this code (repeat, or separate codes with commas). "
        "Errors cannot be ignored: an invalid policy set has nothing to build.",
    )(func)
    return decorated
