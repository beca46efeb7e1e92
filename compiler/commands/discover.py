"""`migc discover` (placeholder until its issue lands: it refuses to run instead of pretending)."""

from __future__ import annotations

import click


@click.command(name="discover")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("'migc discover' is not implemented yet")
