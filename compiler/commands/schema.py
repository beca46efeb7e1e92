"""``migc schema [KIND]``: print the JSON Schema of a policy kind (or the editor schema for all kinds)."""

from __future__ import annotations

import click

from compiler.exitcodes import ExitCode
from compiler.schemas import KINDS, dumps, kind_schemas, policy_schema


@click.command(name="schema")
@click.argument("kind", required=False)
def command(kind: str | None) -> int:
    """Print the JSON Schema (draft 2020-12) of KIND (Fleet, Tenant, Workload, PartitionPolicy).

    Without KIND, print the editor schema that accepts any policy document (it refers to the
    per-kind schemas by relative file name, as they lie in the repository's schema/ folder).
    """
    if kind is None:
        click.echo(dumps(policy_schema()), nl=False)
        return ExitCode.OK
    by_lower = {k.lower(): k for k in KINDS}
    wanted = by_lower.get(kind.lower())
    if wanted is None:
        raise click.UsageError(f"unknown kind '{kind}'; kinds: {', '.join(KINDS)}")
    click.echo(dumps(kind_schemas()[wanted]), nl=False)
    return ExitCode.OK
