"""`migc explain` (placeholder until its issue lands: it refuses to run instead of pretending)."""

from __future__ import annotations

import click


@click.command(name="explain")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("'migc explain' is not implemented yet")
