"""`migc compile`: validate → solve (against what ``--out`` holds) → check quotas → render → write.

* default: write ``--out`` atomically (nothing is written when any error diagnostic exists);
* ``--check``: render in memory and compare with ``--out``; exit 3 and list stale/missing/extra files;
* ``--stdout``: print the manifests as one multi-document YAML stream and write nothing (Argo CD
  config management plugin); diagnostics and logs go to stderr so stdout holds manifests only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

import click

from compiler import report
from compiler.commands._common import (
    emit_diagnostics,
    ignore_option,
    output_format_option,
    paths_argument,
)
from compiler.diagnostics import has_errors, make
from compiler.exitcodes import ExitCode
from compiler.fsio import refuse_symlink
from compiler.load import display_path
from compiler.model import Policy
from compiler.pipeline.compiled import compile_policy, render_checks
from compiler.render import manifest_stream, render
from compiler.render.writer import compare, write_tree

# The codes live in compiler.exitcodes; these names stay because `migc plan` imports them from here.


@click.command(name="compile")
@paths_argument
@click.option(
    "--out",
    "out",
    default="output",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Output directory (one sub-directory per cluster).",
)
@click.option("--check", is_flag=True, help="Compare with --out instead of writing; exit 3 when they differ.")
@click.option(
    "--stdout", "to_stdout", is_flag=True, help="Print the manifests as multi-document YAML; write nothing."
)
@click.option(
    "--with",
    "extras",
    multiple=True,
    type=click.Choice(["kueue", "monitoring"]),
    help="Also render optional objects: kueue (ResourceFlavors, ClusterQueues, LocalQueues), "
    "monitoring (Grafana dashboard ConfigMap, PrometheusRule).",
)
@click.option("--cluster", default=None, help="With --stdout: print only this cluster's manifests.")
@click.option(
    "--prune",
    is_flag=True,
    help="Also remove cluster directories an earlier run wrote into --out that this policy does not "
    "produce (without it they are kept, with a warning).",
)
@output_format_option
@ignore_option
def command(
    paths: tuple[str, ...],
    out: str,
    check: bool,
    to_stdout: bool,
    extras: tuple[str, ...],
    cluster: str | None,
    prune: bool,
    output_format: str,
    ignore: tuple[str, ...],  # applied where diagnostics are printed (_common.emit_diagnostics)
) -> int:
    """Compile policy PATHS (files or directories) into Kubernetes manifests under --out.

    The layout deployed now is read from --out, so nodes keep their layout where they can.
    A symlinked --out is refused (pass the directory it points to); only one compile writes an
    --out at a time. Every file removed from --out is reported on stderr.
    Exit status: 0 written (or up to date with --check), 1 invalid or infeasible policy (nothing
    written), 2 usage error, 3 --check found stale, missing or extra files.
    """
    if check and to_stdout:
        raise click.UsageError("--check and --stdout exclude each other")
    out_dir = Path(out)
    log_to_stderr = to_stdout or check
    link = None if to_stdout else refuse_symlink(out_dir, "--out")
    if link is not None:  # written or checked: the same directory either way, never through a link
        emit_diagnostics([link], output_format, to_stderr=log_to_stderr)
        return ExitCode.INVALID
    result = compile_policy(paths, out_dir, label_base=Path(os.path.abspath(out_dir)).parent)
    shown = emit_diagnostics(result.diagnostics, output_format, to_stderr=log_to_stderr)  # --ignore applied
    if result.failed or result.policy is None or result.solution is None:
        click.echo(report.summary(shown, what="compile") + "; nothing was written", err=True)
        return ExitCode.INVALID
    files = render(
        result.policy,
        result.solution,
        result.catalog,
        with_kueue="kueue" in extras,
        with_monitoring="monitoring" in extras,
        source_label=result.source_label,
    )
    too_big = render_checks(files)
    if too_big:
        emit_diagnostics(too_big, output_format, to_stderr=log_to_stderr)
        click.echo(report.summary(too_big, what="compile") + "; nothing was written", err=True)
        return ExitCode.INVALID
    if to_stdout:
        return _print_stream(files, result.policy, cluster)
    if check:
        return _check(files, out_dir, prune, output_format)
    return _write(files, out_dir, prune, output_format, len(result.policy.clusters))


def _print_stream(files: Mapping[str, bytes], policy: Policy, cluster: str | None) -> int:
    """``--stdout``: the manifests (of ``cluster`` alone when named) as one multi-document YAML stream."""
    if cluster is not None and cluster not in {c.name for c in policy.clusters}:
        raise click.BadParameter(f"no cluster named {cluster!r} in the policy", param_hint="--cluster")
    sys.stdout.buffer.write(manifest_stream(files, cluster))
    sys.stdout.flush()
    click.echo(f"migc: {len(files)} files rendered to stdout", err=True)
    return ExitCode.OK


def _check(files: Mapping[str, bytes], out_dir: Path, prune: bool, output_format: str) -> int:
    """``--check``: the rendered files against ``out_dir``; each stale, missing or extra file on stdout
    and MIGC302 (exit 3) when they differ."""
    drift = compare(files, out_dir, prune=prune)
    if drift.diagnostics:
        emit_diagnostics(drift.diagnostics, output_format, to_stderr=True)
    if has_errors(list(drift.diagnostics)):
        return ExitCode.INVALID
    if drift.clean:
        click.echo(f"migc: {display_path(out_dir)} is up to date ({len(files)} files)", err=True)
        return ExitCode.OK
    for label, items in (("stale", drift.stale), ("missing", drift.missing), ("extra", drift.extra)):
        for item in items:
            click.echo(f"{label}: {display_path(out_dir / item)}")
    stale_diag = make(
        "MIGC302",
        f"{display_path(out_dir)} is out of date: {len(drift.stale)} stale, "
        f"{len(drift.missing)} missing, {len(drift.extra)} extra",
        file=display_path(out_dir),
    )
    emit_diagnostics([stale_diag], output_format, to_stderr=True)
    return ExitCode.DRIFT


def _write(files: Mapping[str, bytes], out_dir: Path, prune: bool, output_format: str, clusters: int) -> int:
    """The default: ``out_dir`` replaced atomically; every file removed from it reported on stderr."""
    written = write_tree(files, out_dir, prune=prune)
    emit_diagnostics(written.diagnostics, output_format, to_stderr=False)
    if written.failed:
        click.echo(
            report.summary(list(written.diagnostics), what="compile")
            + f"; {display_path(out_dir)} left unchanged",
            err=True,
        )
        return ExitCode.INVALID
    for name, count in written.removed_clusters:
        click.echo(f"migc: removed {display_path(out_dir / name)}{os.sep} ({count} files; --prune)", err=True)
    for path in written.removed_files:
        click.echo(f"migc: removed {display_path(out_dir / path)} (no longer rendered)", err=True)
    removed = len(written.removed_files) + sum(n for _, n in written.removed_clusters)
    kept = f", kept {len(written.kept_clusters)} other cluster(s)" if written.kept_clusters else ""
    click.echo(
        f"migc: wrote {len(files)} files for {clusters} cluster{'s' if clusters != 1 else ''} "
        f"to {display_path(out_dir)}{os.sep}, removed {removed}{kept}",
        err=True,
    )
    return ExitCode.OK
