"""`migc plan` (placeholder until its issue lands: it refuses to run instead of pretending)."""

from __future__ import annotations

import click


@click.command(name="plan")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("'migc plan' is not implemented yet")
