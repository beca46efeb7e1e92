"""`migc plan`: what compiling PATHS would change against a rendered output (default ``output/``).

The plan (text, markdown for a pull-request comment, or JSON) goes to stdout; diagnostics and the
summary line go to stderr. ``--exit-code`` exits 3 when anything would change.
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import click

from compiler.commands._common import (
    cannot_write,
    emit_diagnostics,
    fail,
    ignore_option,
    paths_argument,
    result_format_option,
)
from compiler.commands._files import write_files
from compiler.current import read_capacity
from compiler.diagnostics import Collector, make
from compiler.exitcodes import ExitCode
from compiler.fsio import SNAPSHOT_LIMIT, ReadRefused, read_bounded, refuse_symlink
from compiler.pipeline.compiled import compile_policy, plan_checks
from compiler.plan import (
    SnapshotError,
    build_plan,
    parse_snapshot,
    snapshot_diagnostic,
    svg_files,
)
from compiler.plan.data import OrderCost
from compiler.plan.orders import other_order
from compiler.plan.report import FORMATS, View
from compiler.plan.spread import spread_rows
from compiler.render.writer import INDEX_NAME
from compiler.solve.export import solution_to_dict


def _render_check(against: Path) -> str | None:
    """Why ``against`` is not a migc render (None when it is): it must hold a cluster directory
    with a ``.migc-index.json`` regular file, as every ``migc compile`` writes."""
    if os.path.islink(against) and not against.exists():
        return f"{against} is a dangling symbolic link"
    if not against.exists():
        return f"{against} does not exist"
    if not against.is_dir():
        return f"{against} is not a directory"
    for index in against.glob(f"*/{INDEX_NAME}"):
        if index.is_file():
            return None
    return f"{against} holds no cluster directory with a {INDEX_NAME}; it was not written by `migc compile`"


@click.command(name="plan")
@paths_argument
@click.option(
    "--against",
    default=None,
    type=click.Path(),
    help="Rendered output that describes what is deployed now (a directory `migc compile` wrote). "
    "[default: output]",
)
@click.option(
    "--from-scratch",
    is_flag=True,
    help="Plan a first rollout: nothing is deployed yet (excludes --against).",
)
@result_format_option(list(FORMATS), "Format of the plan.")
@click.option(
    "--detail",
    is_flag=True,
    help="List every changed GPU of every node instead of grouping identical nodes and GPUs.",
)
@click.option(
    "--svg",
    "svg_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Write one SVG per changed node (before/after slice bars) into this directory "
    "(not through a symbolic link; existing files of the same name are replaced, never written through).",
)
@click.option("--exit-code", is_flag=True, help="Exit 3 when the plan contains changes.")
@click.option(
    "--snapshot",
    default=None,
    type=click.Path(dir_okay=False),
    help="Pods of the cluster (kubectl get pods -A -o json) to list the GPU pods a rollout evicts.",
)
@ignore_option
def command(
    paths: tuple[str, ...],
    against: str | None,
    from_scratch: bool,
    fmt: str,
    detail: bool,
    svg_dir: str | None,
    exit_code: bool,
    snapshot: str | None,
    ignore: tuple[str, ...],  # applied where diagnostics are printed (_common.emit_diagnostics)
) -> int:
    """Show what compiling policy PATHS would change: nodes, GPUs, capacity, evictions and cost.

    --against must name a directory `migc compile` wrote (default output/); a first rollout is
    planned with --from-scratch.
    Exit status: 0 (also with changes, unless --exit-code), 1 invalid or infeasible policy,
    2 usage error (also: --against is not a migc render), 3 changes present with --exit-code.
    """
    if from_scratch and against is not None:
        raise click.UsageError("--from-scratch and --against exclude each other")
    deployed: Path | None = None
    if not from_scratch:
        deployed = Path(against if against is not None else "output")
        why = _render_check(deployed)
        if why is not None:
            hint = "pass the committed output, or --from-scratch to plan a first rollout"
            return fail(
                [make("MIGC323", f"--against {why}; {hint}", file=str(deployed))], status=ExitCode.USAGE
            )
    if svg_dir is not None:
        link = refuse_symlink(Path(svg_dir), "--svg")
        if link is not None:
            return fail([link])
    result = compile_policy(paths, deployed)
    diagnostics = Collector(result.diagnostics)
    recorded, more = read_capacity(deployed)
    diagnostics.extend(more)
    pods = None
    if snapshot is not None:
        try:
            pods = parse_snapshot(read_bounded(Path(snapshot), SNAPSHOT_LIMIT, what="a cluster snapshot"))
        except ReadRefused as exc:
            diagnostics.add(exc.diagnostic)
        except (OSError, SnapshotError) as exc:
            diagnostics.add(snapshot_diagnostic(snapshot, exc))
    spread = None
    if result.policy is not None and result.solution is not None:
        spread = spread_rows(result.policy, result.solution)
        diagnostics.extend(plan_checks(result.policy, spread))
    if result.failed or result.policy is None or result.solution is None or diagnostics.has_errors():
        return fail(diagnostics, summary="plan")
    emit_diagnostics(diagnostics, "text", to_stderr=True)
    # The second solve (the objective order with gpus and disruption swapped) runs in a worker
    # thread while this one builds and encodes the plan: HiGHS releases the GIL while it solves, so
    # on two or more cores its time overlaps the plan's Python work. Its answer does not depend on
    # timing. Started only once the plan is sure to be printed.
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="migc-other-order")
    other: Future[OrderCost | None] = pool.submit(
        other_order, result.policy, result.catalog, result.current, result.solution
    )
    pool.shutdown(wait=False)
    plan = build_plan(
        result.policy,
        result.solution,
        result.catalog,
        result.current,
        pods=pods,
        solution_dict=solution_to_dict(result.solution),
        recorded=recorded,
        spread=spread,
    )
    plan = dataclasses.replace(plan, other_order=other.result())
    if svg_dir is not None:
        try:
            write_files(Path(svg_dir), svg_files(plan, result.catalog))
        except OSError as exc:
            return fail([cannot_write(svg_dir, exc)])
    click.echo(FORMATS[fmt](plan, View(detail=detail, svg_dir=svg_dir)), nl=False)
    return ExitCode.DRIFT if exit_code and plan.pending else ExitCode.OK
