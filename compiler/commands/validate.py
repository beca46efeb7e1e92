"""``migc validate PATH...``: load and check policy sets; print diagnostics; exit 0 valid, 1 invalid."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from compiler.commands._common import (
    ignore_option,
    output_format_option,
    paths_argument,
)
from compiler.diagnostics import Collector, Severity
from compiler.exitcodes import ExitCode
from compiler.pipeline import collect_policy, count_files
from compiler.report import emit


def policy_sets(paths: tuple[str, ...]) -> list[list[str]]:
    """Each directory is a policy set of its own; files named directly form one set together.

    So ``migc validate examples/lab examples/prod`` checks two independent fleets, while
    ``migc validate fleet.yaml tenants.yaml`` checks one set split over two files.
    """
    dirs = [p for p in paths if Path(p).is_dir()]
    files = [p for p in paths if not Path(p).is_dir()]
    sets = [[d] for d in dict.fromkeys(dirs)]
    if files:
        sets.append(files)
    return sets


@click.command(name="validate")
@paths_argument
@output_format_option
@click.option("--strict", is_flag=True, help="Fail (exit 1) on warnings too, not only on errors.")
@ignore_option
def command(paths: tuple[str, ...], output_format: str, strict: bool, ignore: tuple[str, ...]) -> int:
    """Check policy sets against the schemas and semantic rules.

    Each PATH directory is one policy set (searched for *.yaml/*.yml); files given directly form
    one set together. Diagnostics go to stdout in the chosen format, a one-line summary to stderr.
    Warnings and notes of a code given with --ignore are left out (and so do not fail --strict);
    errors cannot be ignored. Exit status: 0 valid, 1 invalid (or warnings with --strict), 2 usage
    error (an --ignore code that is unknown or an error).
    """
    collector = Collector()
    for group in policy_sets(paths):
        collect_policy(group, collector)
    diagnostics = collector.finish(ignore)
    emit(diagnostics, output_format, out=sys.stdout, err=sys.stderr, files=count_files(paths))
    worst = max((d.severity for d in diagnostics), default=None)
    if worst is None:
        return ExitCode.OK
    if worst >= Severity.ERROR or (strict and worst >= Severity.WARNING):
        return ExitCode.INVALID
    return ExitCode.OK
