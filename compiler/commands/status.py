"""`migc status`: capacity, allocation, usage, pending pods, rollouts, drift and cost of a fleet.

The observed state comes from snapshot files (``kubectl get pods,nodes -A -o json``) or a live
cluster (kubeconfig or in-cluster, read-only list calls). What nodes should carry comes from
``--against DIR`` (a rendered output's NodeAssignment) or, without it, from solving the policy.
The table or JSON goes to stdout, diagnostics to stderr; ``--html FILE`` also writes the console.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from compiler.catalog import Catalog, load_catalog
from compiler.commands._common import (
    FiniteFloatRange,
    cannot_write,
    cluster_source_options,
    emit_diagnostics,
    fail,
    ignore_option,
    observation_time,
    paths_argument,
    read_cluster_source,
    require_one_cluster_source,
    result_format_option,
)
from compiler.commands._files import write_files
from compiler.current import ASSIGNMENT_FILE, read_assignment, state_from_assignment
from compiler.diagnostics import Collector, Diagnostic, make
from compiler.exitcodes import ExitCode
from compiler.model import Policy
from compiler.observe import Observation, ObserveError
from compiler.observe.prometheus import InstanceUsage, instance_usage
from compiler.pipeline import collect_policy
from compiler.pipeline.compiled import compile_policy
from compiler.render import manifests
from compiler.status import Filters, FleetStatus, build_status, to_html
from compiler.status.report import FORMATS


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
    "--timeout", default=10.0, show_default=True, type=FiniteFloatRange(0.1, 600), help="Seconds per request."
)
@click.option("--pool", "pools", multiple=True, help="Only these pools (repeatable).")
@click.option(
    "--tenant", "tenants", multiple=True, help="Only these tenants and the nodes they use (repeatable)."
)
@click.option("--free", "free_only", is_flag=True, help="Only nodes and pools with free GPU capacity.")
@result_format_option(list(FORMATS), "Format of the report on stdout.")
@click.option(
    "--html", "html_file", default=None, type=click.Path(dir_okay=False), help="Also write the HTML console."
)
@click.option("--now", default=None, help="Time the snapshot describes (RFC 3339, default: now).")
@click.option("--exit-code", is_flag=True, help="Exit 3 when a node shown drifts from the assignment.")
@ignore_option
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
    ignore: tuple[str, ...],  # applied where diagnostics are printed (_common.emit_diagnostics)
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
    diagnostics = Collector()  # every stage's findings, reported once
    loaded = collect_policy(paths, diagnostics, catalog)
    if loaded is None or diagnostics.has_errors():
        return fail(diagnostics, summary="status")
    policy = loaded
    _check_filters(policy, pools, tenants)
    expected = _expected_layouts(paths, policy, catalog, Path(against), diagnostics)
    if expected is None:
        return fail(diagnostics, summary="status")
    observation: Observation | None = None
    usage: tuple[InstanceUsage, ...] | None = None
    if not diagnostics.has_errors():
        source = _ClusterSource(moment, snapshots, kubeconfig, context, in_cluster, timeout)
        observation, usage = _observe(source, prometheus, diagnostics)
    if observation is None or diagnostics.has_errors():
        return fail(diagnostics, summary="status")
    emit_diagnostics(diagnostics, "text", to_stderr=True)
    status = build_status(
        policy,
        catalog,
        observation,
        expected.assignments,
        expected_from=expected.source,
        usage=usage,
        filters=Filters(pools=pools, tenants=tenants, free_only=free_only),
    )
    return _report(status, fmt, html_file, exit_code)


def _check_filters(policy: Policy, pools: tuple[str, ...], tenants: tuple[str, ...]) -> None:
    """A usage error (exit 2) for a ``--pool`` or ``--tenant`` the policy does not name: a typo
    would otherwise show an empty fleet."""
    for name, known, option in (
        (pools, {p.name for c in policy.clusters for p in c.pools}, "--pool"),
        (tenants, {t.name for t in policy.tenants}, "--tenant"),
    ):
        unknown = sorted(set(name) - known)
        if unknown:
            raise click.BadParameter(f"not in the policy: {', '.join(unknown)}", param_hint=option)


@dataclass(frozen=True)
class _Expected:
    """What each cluster's nodes should carry (its NodeAssignment document) and where that came from
    (the report's "expected layouts from" line)."""

    assignments: dict[str, dict[str, Any]]
    source: str


def _expected_layouts(
    paths: tuple[str, ...], policy: Policy, catalog: Catalog, against: Path, diagnostics: Collector
) -> _Expected | None:
    """Each cluster's NodeAssignment from ``against``, MIGC405 for one that cannot be used; clusters
    with none there are compared with what compiling the policy assigns.

    What goes wrong is added to ``diagnostics``; compiling adds its own, which hold the policy's
    findings again (the collector reports each once). ``None`` when the compile fails: the command
    stops with those diagnostics.
    """
    assignments: dict[str, dict[str, Any]] = {}
    sources: set[str] = set()
    unrendered = []
    for cluster in policy.clusters:
        path = against / cluster.name / ASSIGNMENT_FILE
        if not path.exists():
            unrendered.append(cluster)
            continue
        sources.add(f"{against}{os.sep}")
        try:
            doc = read_assignment(path)
            state_from_assignment(doc)  # the structure compile and the controller rely on
            assignments[cluster.name] = doc
        except (ValueError, KeyError, TypeError) as exc:
            diagnostics.add(
                make("MIGC405", f"no usable assignment for cluster {cluster.name}: {exc}", file=str(path))
            )
    if unrendered and not diagnostics.has_errors():
        # no rendered output for these clusters: compare with what compiling the policy would assign
        sources.add("the solved policy")
        result = compile_policy(paths, against)
        diagnostics.extend(result.diagnostics)
        if result.failed or result.solution is None:
            return None
        for cluster in unrendered:
            configs = manifests.collect_configs(cluster, result.solution, catalog)
            assignments[cluster.name] = manifests.assignment_document(cluster, result.solution, configs)
    return _Expected(assignments, " and ".join(sorted(sources)))


@dataclass(frozen=True)
class _ClusterSource:
    """Where and when the cluster is read (the shared ``--snapshot``/``--kubeconfig`` options)."""

    moment: dt.datetime
    snapshots: tuple[str, ...]
    kubeconfig: str | None
    context: str | None
    in_cluster: bool
    timeout: float


def _observe(
    source: _ClusterSource, prometheus: str | None, diagnostics: Collector
) -> tuple[Observation | None, tuple[InstanceUsage, ...] | None]:
    """The observed cluster and, with ``--prometheus``, its DCGM usage; what goes wrong is added to
    ``diagnostics`` (an unreadable cluster as its diagnostic, usage that cannot be read in full as
    none at all, then the observation's own warnings)."""
    try:
        observation = read_cluster_source(
            source.moment,
            source.snapshots,
            source.kubeconfig,
            source.context,
            source.in_cluster,
            timeout=source.timeout,
        )
    except ObserveError as exc:
        diagnostics.add(exc.diagnostic)
        return None, None
    usage: tuple[InstanceUsage, ...] | None = None
    if prometheus is not None:
        got, more = instance_usage(prometheus, source.timeout)
        diagnostics.extend(more)
        usage = None if more else got
    diagnostics.extend(observation.warnings)
    return observation, usage


def _report(status: FleetStatus, fmt: str, html_file: str | None, exit_code: bool) -> int:
    """The HTML console (when asked: a file, so no ``-o`` choice), the report in ``fmt`` on stdout,
    the one-line summary on stderr; exit 3 with ``--exit-code`` when a node shown drifts."""
    if html_file is not None:
        try:
            html_path = Path(html_file)
            write_files(html_path.parent, {html_path.name: to_html(status)})
        except OSError as exc:
            return fail([cannot_write(html_file, exc)])
    click.echo(FORMATS[fmt](status), nl=False)
    click.echo(
        f"migc: {len(status.nodes)} nodes, {len(status.pending)} pending GPU pods, "
        f"{sum(1 for n in status.nodes if n.drift)} drifted" + (f"; wrote {html_file}" if html_file else ""),
        err=True,
    )
    return ExitCode.DRIFT if exit_code and any(n.drift for n in status.nodes) else ExitCode.OK
