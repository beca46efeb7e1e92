"""`migc compile` (placeholder until its issue lands: it refuses to run instead of pretending)."""

from __future__ import annotations

import click


@click.command(name="compile")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("'migc compile' is not implemented yet")
