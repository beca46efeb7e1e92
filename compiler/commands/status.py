"""`migc status`: capacity, allocation, usage, pending pods, rollouts, drift and cost of a fleet.

The observed state comes from snapshot files (``kubectl get pods,nodes -A -o json``) or a live
cluster (kubeconfig or in-cluster, read-only list calls). What nodes should carry comes from
``--against DIR`` (a rendered output's NodeAssignment) or, without it, from solving the policy.
The table or JSON goes to stdout, diagnostics to stderr; ``--html FILE`` also writes the console.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from compiler.catalog import load_catalog
from compiler.commands._common import (
    cannot_write,
    cluster_source_options,
    emit_diagnostics,
    fail,
    load_and_validate,
    observation_time,
    paths_argument,
    read_cluster_source,
    require_one_cluster_source,
    result_format_option,
)
from compiler.commands._files import write_files
from compiler.commands.compile import compile_policy
from compiler.current import ASSIGNMENT_FILE, read_assignment, state_from_assignment
from compiler.diagnostics import Diagnostic, has_errors, make
from compiler.exitcodes import ExitCode
from compiler.observe import Observation, ObserveError
from compiler.observe.prometheus import InstanceUsage, instance_usage
from compiler.render import manifests
from compiler.status import Filters, build_status, to_html, to_json, to_markdown, to_text


@click.command(name="status")
@paths_argument
@cluster_source_options
@click.option(
    "--against",
    default="output",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Rendered output whose NodeAssignment says what nodes should carry; a cluster without one "
    "there is compared with the solved policy.",
)
@click.option("--prometheus", default=None, help="Prometheus base URL for DCGM exporter usage.")
@click.option(
    "--timeout", default=10.0, show_default=True, type=click.FloatRange(0.1, 600), help="Seconds per request."
)
@click.option("--pool", "pools", multiple=True, help="Only these pools (repeatable).")
@click.option(
    "--tenant", "tenants", multiple=True, help="Only these tenants and the nodes they use (repeatable)."
)
@click.option("--free", "free_only", is_flag=True, help="Only nodes and pools with free GPU capacity.")
@result_format_option(["text", "json", "markdown"], "Format of the report on stdout.")
@click.option(
    "--html", "html_file", default=None, type=click.Path(dir_okay=False), help="Also write the HTML console."
)
@click.option("--now", default=None, help="Time the snapshot describes (RFC 3339, default: now).")
@click.option("--exit-code", is_flag=True, help="Exit 3 when a node shown drifts from the assignment.")
def command(
    paths: tuple[str, ...],
    snapshots: tuple[str, ...],
    kubeconfig: str | None,
    context: str | None,
    in_cluster: bool,
    against: str,
    prometheus: str | None,
    timeout: float,
    pools: tuple[str, ...],
    tenants: tuple[str, ...],
    free_only: bool,
    fmt: str,
    html_file: str | None,
    now: str | None,
    exit_code: bool,
) -> int:
    """Show GPU capacity, allocation, use, pending pods, rollouts, drift and cost per node, pool and tenant.

    Exit status: 0 shown, 1 invalid policy or unreadable cluster state, 2 usage error, 3 with
    --exit-code when a node drifts.
    """
    require_one_cluster_source(snapshots, kubeconfig, context, in_cluster)
    moment = observation_time(now)
    if isinstance(moment, Diagnostic):
        return fail([moment])
    catalog = load_catalog()
    loaded, diagnostics = load_and_validate(paths, catalog)
    if loaded is None or has_errors(diagnostics):
        return fail(diagnostics, summary="status")
    policy = loaded
    for name, known, option in (
        (pools, {p.name for c in policy.clusters for p in c.pools}, "--pool"),
        (tenants, {t.name for t in policy.tenants}, "--tenant"),
    ):
        unknown = sorted(set(name) - known)
        if unknown:
            raise click.BadParameter(f"not in the policy: {', '.join(unknown)}", param_hint=option)

    assignments: dict[str, dict[str, Any]] = {}
    sources: set[str] = set()
    unrendered = []
    for cluster in policy.clusters:
        path = Path(against) / cluster.name / ASSIGNMENT_FILE
        if not path.exists():
            unrendered.append(cluster)
            continue
        sources.add(f"{Path(against)}{os.sep}")
        try:
            doc = read_assignment(path)
            state_from_assignment(doc)  # the structure compile and the controller rely on
            assignments[cluster.name] = doc
        except (ValueError, KeyError, TypeError) as exc:
            diagnostics.append(
                make("MIGC405", f"no usable assignment for cluster {cluster.name}: {exc}", file=str(path))
            )
    if unrendered and not has_errors(diagnostics):
        # no rendered output for these clusters: compare with what compiling the policy would assign
        sources.add("the solved policy")
        result = compile_policy(paths, Path(against))
        diagnostics = list(result.diagnostics)
        if result.failed or result.solution is None:
            return fail(diagnostics, summary="status")
        for cluster in unrendered:
            configs = manifests.collect_configs(cluster, result.solution, catalog)
            assignments[cluster.name] = manifests.assignment_document(cluster, result.solution, configs)
    expected_from = " and ".join(sorted(sources))

    observation: Observation | None = None
    if not has_errors(diagnostics):
        try:
            observation = read_cluster_source(
                moment, snapshots, kubeconfig, context, in_cluster, timeout=timeout
            )
        except ObserveError as exc:
            diagnostics.append(exc.diagnostic)
    usage: tuple[InstanceUsage, ...] | None = None
    if observation is not None and prometheus is not None:
        got, more = instance_usage(prometheus, timeout)
        diagnostics.extend(more)
        usage = None if more else got
    if observation is not None:
        diagnostics.extend(observation.warnings)
    if observation is None or has_errors(diagnostics):
        return fail(diagnostics, summary="status")
    emit_diagnostics(diagnostics, "text", to_stderr=True)
    status = build_status(
        policy,
        catalog,
        observation,
        assignments,
        expected_from=expected_from,
        usage=usage,
        filters=Filters(pools=pools, tenants=tenants, free_only=free_only),
    )
    if html_file is not None:
        try:
            html_path = Path(html_file)
            write_files(html_path.parent, {html_path.name: to_html(status)})
        except OSError as exc:
            return fail([cannot_write(html_file, exc)])
    render = {"json": to_json, "markdown": to_markdown}.get(fmt, to_text)
    click.echo(render(status), nl=False)
    click.echo(
        f"migc: {len(status.nodes)} nodes, {len(status.pending)} pending GPU pods, "
        f"{sum(1 for n in status.nodes if n.drift)} drifted" + (f"; wrote {html_file}" if html_file else ""),
        err=True,
    )
    return ExitCode.DRIFT if exit_code and any(n.drift for n in status.nodes) else ExitCode.OK
