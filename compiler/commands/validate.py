"""``migc validate PATH...``: load and check a policy set; print diagnostics; exit 0 valid, 1 invalid."""

from __future__ import annotations

import sys

import click

from compiler.commands._common import count_files, load_and_validate, output_format_option, paths_argument
from compiler.diagnostics import Severity
from compiler.report import emit

EXIT_OK = 0
EXIT_INVALID = 1


@click.command(name="validate")
@paths_argument
@output_format_option
@click.option("--strict", is_flag=True, help="Fail (exit 1) on warnings too, not only on errors.")
def command(paths: tuple[str, ...], output_format: str, strict: bool) -> int:
    """Check policy files (or directories of them) against the schemas and semantic rules.

    Diagnostics go to stdout in the chosen format, a one-line summary to stderr.
    Exit status: 0 valid, 1 invalid (or warnings with --strict), 2 usage error.
    """
    _, diagnostics = load_and_validate(paths)
    emit(diagnostics, output_format, out=sys.stdout, err=sys.stderr, files=count_files(paths))
    worst = max((d.severity for d in diagnostics), default=None)
    if worst is None:
        return EXIT_OK
    if worst >= Severity.ERROR or (strict and worst >= Severity.WARNING):
        return EXIT_INVALID
    return EXIT_OK
