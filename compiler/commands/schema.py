"""`migc schema` (placeholder until its issue lands: it refuses to run instead of pretending)."""

from __future__ import annotations

import click


@click.command(name="schema")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("'migc schema' is not implemented yet")
