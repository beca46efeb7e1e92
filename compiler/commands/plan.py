"""`migc plan`: what compiling PATHS would change against a rendered output (default ``output/``).

The plan (text, markdown for a pull-request comment, or JSON) goes to stdout; diagnostics and the
summary line go to stderr. ``--exit-code`` exits 3 when anything would change.
"""

from __future__ import annotations

from pathlib import Path

import click

from compiler import report
from compiler.commands._common import paths_argument
from compiler.commands._files import write_files
from compiler.commands.compile import EXIT_DRIFT, EXIT_INVALID, EXIT_OK, compile_policy, emit_diagnostics
from compiler.current import read_capacity
from compiler.diagnostics import has_errors
from compiler.plan import (
    SnapshotError,
    build_plan,
    parse_snapshot,
    snapshot_diagnostic,
    svg_files,
    to_json,
    to_markdown,
    to_text,
)
from compiler.solve.export import solution_to_dict


@click.command(name="plan")
@paths_argument
@click.option(
    "--against",
    default="output",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Rendered output that describes what is deployed now.",
)
@click.option(
    "--output-format",
    "-o",
    "fmt",
    default="text",
    show_default=True,
    type=click.Choice(["text", "markdown", "json"]),
    help="Format of the plan.",
)
@click.option(
    "--svg",
    "svg_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Write one SVG per changed node (before/after slice bars) into this directory.",
)
@click.option("--exit-code", is_flag=True, help="Exit 3 when the plan contains changes.")
@click.option(
    "--snapshot",
    default=None,
    type=click.Path(dir_okay=False),
    help="Pods of the cluster (kubectl get pods -A -o json) to list the GPU pods a rollout evicts.",
)
def command(
    paths: tuple[str, ...],
    against: str,
    fmt: str,
    svg_dir: str | None,
    exit_code: bool,
    snapshot: str | None,
) -> int:
    """Show what compiling policy PATHS would change: nodes, GPUs, capacity, evictions and cost.

    Exit status: 0 (also with changes, unless --exit-code), 1 invalid or infeasible policy,
    2 usage error, 3 changes present with --exit-code.
    """
    result = compile_policy(paths, Path(against))
    diagnostics = list(result.diagnostics)
    recorded, more = read_capacity(Path(against))
    diagnostics.extend(more)
    pods = None
    if snapshot is not None:
        try:
            pods = parse_snapshot(Path(snapshot).read_text(encoding="utf-8"))
        except (OSError, SnapshotError) as exc:
            diagnostics.append(snapshot_diagnostic(snapshot, exc))
    emit_diagnostics(diagnostics, "text", to_stderr=True)
    if result.failed or result.policy is None or result.solution is None or has_errors(diagnostics):
        click.echo(report.summary(diagnostics, what="plan"), err=True)
        return EXIT_INVALID
    plan = build_plan(
        result.policy,
        result.solution,
        result.catalog,
        result.current,
        pods=pods,
        solution_dict=solution_to_dict(result.solution),
        recorded=recorded,
    )
    if svg_dir is not None:
        write_files(Path(svg_dir), svg_files(plan, result.catalog))
    if fmt == "json":
        click.echo(to_json(plan), nl=False)
    elif fmt == "markdown":
        click.echo(to_markdown(plan, svg_dir), nl=False)
    else:
        click.echo(to_text(plan), nl=False)
    return EXIT_DRIFT if exit_code and plan.has_changes else EXIT_OK
