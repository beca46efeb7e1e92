"""`migc discover`: print this machine's GPUs' MIG geometry as catalog entries (read-only NVML).

stdout gets the data (catalog entries, or the raw capture); stderr gets the per-GPU summary with the
current MIG layout, and any diagnostics. Exit status: 0 ok, 1 cannot discover (no NVML, no driver, no
MIG, no permission), 3 ``--compare`` found a difference with the shipped catalog.
"""

from __future__ import annotations

import json
import sys

import click
import yaml

from compiler import discover, report
from compiler.catalog import CatalogError, load_catalog
from compiler.commands._common import emit_diagnostics, ignore_option
from compiler.diagnostics import Diagnostic, has_errors, make
from compiler.escape import terminal
from compiler.exitcodes import ExitCode


def _print_diagnostics(diagnostics: list[Diagnostic], output_format: str) -> None:
    # stderr, not stdout as `migc validate` does: discover's stdout is the catalog data.
    emit_diagnostics(diagnostics, output_format, to_stderr=True)  # --ignore applied there


@click.command(name="discover")
@click.option(
    "--output",
    "-o",
    "--output-format",
    "--format",
    "fmt",
    type=click.Choice(["yaml", "json", "capture"]),
    default="yaml",
    show_default=True,
    help="yaml/json: catalog entries, one per distinct GPU model; capture: the raw NVML readings as YAML.",
)
@click.option(
    "--compare",
    is_flag=True,
    help="Diff each model against its shipped catalog entry; exit 3 and name every differing field.",
)
@click.option(
    "--gpu",
    "gpu",
    type=click.IntRange(min=0),
    default=None,
    metavar="INDEX",
    help="Only this GPU (nvidia-smi index).",
)
@click.option(
    "--diagnostics-format",
    "output_format",
    type=click.Choice(list(report.FORMATS)),
    default="text",
    show_default=True,
    help="Format of diagnostics on stderr (stdout holds the data; -o/--output is its format, as in "
    "every command; --format and --output-format are the same option).",
)
@click.option("-q", "--quiet", is_flag=True, help="No per-GPU summary on stderr.")
@ignore_option
def command(
    fmt: str,
    compare: bool,
    gpu: int | None,
    output_format: str,
    quiet: bool,
    ignore: tuple[str, ...],  # applied where diagnostics are printed (_common.emit_diagnostics)
) -> None:
    """Read MIG geometry through NVML (never changes MIG mode, instances or resets) and print it.

    Profiles, ids, slice counts, memory, instance counts and placements come straight from the
    driver; the output is a catalog entry for compiler/catalog/data/ (see schema/catalog.schema.json).
    """
    rc = run(fmt=fmt, compare=compare, gpu=gpu, output_format=output_format, quiet=quiet)
    # click's Exit, not sys.exit: compiler.cli.main turns it into its return value like every command.
    click.get_current_context().exit(rc)


def run(*, fmt: str, compare: bool, gpu: int | None, output_format: str, quiet: bool) -> int:
    diagnostics: list[Diagnostic] = []
    try:
        nvml = discover.load_nvml()
        cap, notes = discover.capture(nvml, gpu)
        diagnostics.extend(notes)
        models, notes = discover.models_from_capture(cap) if fmt != "capture" else ([], [])
        diagnostics.extend(notes)
    except discover.DiscoverError as exc:
        _print_diagnostics([*diagnostics, exc.diagnostic], output_format)
        return ExitCode.INVALID
    if not quiet:
        for line in discover.layout_lines(cap):
            click.echo(terminal(line, keep_newlines=False), err=True)  # NVML's strings are input too
    if fmt == "capture":
        data = discover.capture_to_dict(cap)
        click.echo(yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=120), nl=False)
        if diagnostics:
            _print_diagnostics(diagnostics, output_format)
        return ExitCode.INVALID if has_errors(diagnostics) else ExitCode.OK

    catalog = load_catalog()
    entries = []
    differences: list[Diagnostic] = []
    for model in models:
        known = discover.find_in_catalog(model, catalog)
        try:
            entries.append(discover.to_entry(model, known))
        except CatalogError as exc:  # NVML's numbers make no valid catalog entry
            bad = make("MIGC909", f"GPU {model.source_gpu}: {exc}")
            _print_diagnostics([*diagnostics, bad], output_format)
            return ExitCode.INVALID
        if compare:
            differences.extend(discover.compare(model, known))
    if fmt == "json":
        click.echo(json.dumps(entries, indent=2, allow_nan=False))
    else:
        # Every document opens with "---" so that outputs of many nodes concatenate into one stream.
        header = (
            f"# Captured by `migc discover` (read-only NVML), driver {cap.driver_version}.\n"
            "# One document per GPU model; drop a document into compiler/catalog/data/<model>.yaml.\n"
        )
        click.echo(header + "".join("---\n" + discover.dump_yaml_entry(e) for e in entries), nl=False)
    diagnostics.extend(differences)
    if diagnostics:
        _print_diagnostics(diagnostics, output_format)
    if compare:
        summary = (
            f"{len(differences)} difference(s) from the shipped catalog"
            if differences
            else "the shipped catalog matches the GPU"
        )
        click.echo(f"migc discover: {summary}", err=True)
    if has_errors(diagnostics):
        return ExitCode.INVALID
    return ExitCode.DRIFT if differences else ExitCode.OK


def main(argv: list[str] | None = None) -> int:
    """``python -m compiler.commands.discover``: discover alone, without importing the other commands
    (and their dependencies), for a GPU node that only has what discover needs."""
    try:
        rc = command.main(args=argv, prog_name="migc discover", standalone_mode=False)
    except click.exceptions.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except Exception as exc:  # the same last line of defence as compiler.cli.main
        click.echo(f"migc discover: internal error (MIGC000): {type(exc).__name__}: {exc}", err=True)
        return ExitCode.INTERNAL
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
