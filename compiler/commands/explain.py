"""``migc explain CODE``: what a diagnostic code means and how to fix it (the registry entry)."""

from __future__ import annotations

import re

import click

from compiler.diagnostics import UnknownCodeError, lookup, registry
from compiler.exitcodes import ExitCode

RANGES = (
    ("MIGC0xx", "syntax and schema"),
    ("MIGC1xx", "semantics"),
    ("MIGC2xx", "solving"),
    ("MIGC3xx", "output"),
    ("MIGC4xx", "observing a cluster"),
    ("MIGC5xx", "advice"),
    ("MIGC9xx", "internal and environment"),
)


def _normalise(code: str) -> str:
    """Accept ``MIGC006``, ``migc006``, ``006`` and ``6``."""
    text = code.strip().upper()
    if re.fullmatch(r"[0-9]{1,3}", text):
        return f"MIGC{int(text):03d}"
    return text


@click.command(
    name="explain", short_help="Explain a diagnostic code such as MIGC006, or list every code."
)
@click.argument("code", required=False)
def command(code: str | None) -> int:
    """Explain diagnostic CODE (e.g. MIGC006); without CODE, list every code."""
    if code is None:
        for entry in registry().values():
            click.echo(f"{entry.code}  {entry.severity!s:<7}  {entry.title}")
        return ExitCode.OK
    try:
        info = lookup(_normalise(code))
    except UnknownCodeError:
        ranges = "; ".join(f"{r} {what}" for r, what in RANGES)
        raise click.UsageError(
            f"unknown diagnostic code '{code}'. Codes are {ranges}. Run 'migc explain' to list them."
        ) from None
    click.echo(f"{info.code} ({info.severity}): {info.title}")
    click.echo()
    click.echo(info.explanation)
    if info.fix:
        click.echo()
        click.echo(f"Fix: {info.fix}")
    return ExitCode.OK
