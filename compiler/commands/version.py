"""`migc version` (placeholder until its issue lands: it refuses to run instead of pretending)."""

from __future__ import annotations

import click


@click.command(name="version")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("'migc version' is not implemented yet")
