"""``migc version``: tool version, policy apiVersion, and the GPU catalog it was built with."""

from __future__ import annotations

import click

from compiler import __version__
from compiler.catalog import accepted_names, load_catalog
from compiler.exitcodes import ExitCode
from compiler.schemas import API_VERSION


@click.command(name="version")
@click.option(
    "--catalog", "show_catalog", is_flag=True, help="Also list every catalog model and its gpu.product names."
)
def command(show_catalog: bool) -> int:
    """Print the migc version, the policy apiVersion it reads and the catalog size."""
    catalog = load_catalog()
    mig = sum(1 for m in catalog.models if m.mig_capable)
    click.echo(f"migc {__version__}")
    click.echo(f"policy apiVersion: {API_VERSION}")
    click.echo(f"catalog: {len(catalog.models)} GPU models ({mig} MIG-capable)")
    if show_catalog:
        for m in catalog.models:
            products = ", ".join(m.gpu_products) or "-"
            kind = f"MIG, {len(m.profiles)} profiles" if m.mig_capable else "no MIG"
            also = ", ".join(n for n in accepted_names(m) if n not in m.gpu_products) or "-"
            click.echo(f"  {m.model:<16} {kind:<18} gpu.product: {products}; also accepted: {also}")
        click.echo("  (each also with -SHARED appended, as GFD labels time-sliced GPUs, or without NVIDIA-)")
    return ExitCode.OK
