"""`migc recommend`: observed demand → a re-partitioning proposal, gated by the PartitionPolicy.

The proposal is a normal policy change: Workload ``replicas`` edited in place (comments kept) and the
machine-owned ObservedDemand state file rewritten. Evidence (text, markdown for a pull request, or
JSON) goes to stdout; diagnostics to stderr.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
from collections import defaultdict
from pathlib import Path

import click

from compiler.catalog import load_catalog
from compiler.commands._common import (
    cannot_write,
    cluster_source_options,
    disruption_options,
    emit_diagnostics,
    fail,
    observation_time,
    read_cluster_source,
    require_one_cluster_source,
    result_format_option,
)
from compiler.current import read_current
from compiler.diagnostics import Diagnostic, has_errors, make
from compiler.exitcodes import ExitCode
from compiler.fsio import write_files_atomic
from compiler.load import load_paths
from compiler.observe import ObserveError
from compiler.recommend.engine import recommend
from compiler.recommend.report import FORMATS
from compiler.recommend.state import (
    KIND,
    STATE_FILE,
    StateBusy,
    StateLock,
    StateNotWritten,
    edit_replicas,
    prepare_state,
    read_state,
    rebuild_from_cluster,
)
from compiler.validate import unique_sorted, validate


@click.command(name="recommend")
@click.argument("policy_path", type=click.Path())
@cluster_source_options
@click.option(
    "--against",
    default="output",
    show_default=True,
    type=click.Path(),
    help="Rendered output that describes what is deployed now.",
)
@click.option(
    "--state",
    "state_path",
    default=None,
    type=click.Path(dir_okay=False),
    help=f"The ObservedDemand state file. [default: POLICY_PATH/{STATE_FILE}]",
)
@click.option("--now", default=None, help="Time of the observation (RFC 3339, default: now).")
@click.option("--dry-run", is_flag=True, help="Write nothing (neither the policy nor the state file).")
@disruption_options(
    "Propose only when the pending GPU-time the change avoids beats the GPU-time its drains are "
    "expected to destroy plus the wait it displaces, by the reconfigurationThreshold "
    "(docs/recommend.md); off: the gain threshold.",
    "Reconfiguration time per changed GPU (the node is out meanwhile).",
)
@result_format_option(list(FORMATS), "Format of the evidence on stdout.")
def command(
    policy_path: str,
    snapshots: tuple[str, ...],
    kubeconfig: str | None,
    context: str | None,
    in_cluster: bool,
    against: str,
    state_path: str | None,
    now: str | None,
    dry_run: bool,
    disruption: str,
    drain_grace: float,
    reconfigure_seconds: float,
    fmt: str,
) -> int:
    """Propose a re-partitioning from observed demand when the PartitionPolicy's gates allow it.

    Exit status: 0 no change proposed, 1 invalid policy or unreadable cluster, 2 usage error,
    3 a change is proposed (and, without --dry-run, written).
    """
    require_one_cluster_source(snapshots, kubeconfig, context, in_cluster)
    moment = observation_time(now)
    if isinstance(moment, Diagnostic):
        return fail([moment])
    root = Path(policy_path)
    state_file = Path(state_path) if state_path else (root if root.is_dir() else root.parent) / STATE_FILE
    go = functools.partial(
        _recommend,
        policy_path,
        snapshots,
        kubeconfig,
        context,
        in_cluster,
        against,
        state_file,
        moment,
        dry_run,
        disruption,
        drain_grace,
        reconfigure_seconds,
        fmt,
    )
    if dry_run or not state_file.parent.is_dir():  # writes nothing (or cannot): no lock to take
        return go()
    with contextlib.ExitStack() as stack:
        try:  # one run at a time per state file, from reading the policy to writing both files
            stack.enter_context(StateLock(state_file))
        except StateBusy as exc:
            return fail([exc.diagnostic])
        except OSError as exc:  # the lock file cannot be created (read-only directory …)
            why = exc.strerror or str(exc)
            return fail([make("MIGC447", f"cannot lock {state_file}: {why}", file=str(state_file))])
        return go()


def _recommend(
    policy_path: str,
    snapshots: tuple[str, ...],
    kubeconfig: str | None,
    context: str | None,
    in_cluster: bool,
    against: str,
    state_file: Path,
    moment: dt.datetime,
    dry_run: bool,
    disruption: str,
    drain_grace: float,
    reconfigure_seconds: float,
    fmt: str,
) -> int:
    catalog = load_catalog()
    docs, load_diags = load_paths([policy_path])
    # the machine-owned state never blocks the recommender: it is read (and judged) on its own below
    skip = {str(state_file), str(state_file.resolve())}
    docs = [
        d
        for d in docs
        if d.file not in skip and not (isinstance(d.data, dict) and d.data.get("kind") == KIND)
    ]
    load_diags = [d for d in load_diags if d.file not in skip]
    policy, diags = validate(docs, catalog, incomplete=has_errors(load_diags))
    diagnostics: list[Diagnostic] = unique_sorted([*load_diags, *diags])
    if policy is None or has_errors(diagnostics):
        return fail(diagnostics)
    part = policy.partition
    if part.mode != "dynamic":
        span = part.span
        diagnostics.append(
            make(
                "MIGC422",
                "PartitionPolicy mode is static: `migc recommend` proposes no change "
                "(the fields only it reads are listed by MIGC180)",
                file=span.file,
                line=span.line,
                col=span.col,
            )
        )
    current, more = read_current(Path(against), policy)
    diagnostics.extend(more)
    try:
        obs = read_cluster_source(moment, snapshots, kubeconfig, context, in_cluster)
    except ObserveError as exc:
        return fail([*diagnostics, exc.diagnostic])
    diagnostics.extend(obs.warnings)
    state, more = read_state(state_file, moment, policy.partition)
    diagnostics.extend(more)
    state, more = rebuild_from_cluster(state, obs, moment)
    diagnostics.extend(more)
    rec = recommend(
        policy,
        catalog,
        current,
        obs,
        state,
        moment,
        disruption=disruption,
        drain_grace_seconds=drain_grace,
        reconfigure_seconds=reconfigure_seconds,
    )
    diagnostics.extend(rec.diagnostics)
    emit_diagnostics(unique_sorted(diagnostics), "text", to_stderr=True)
    if has_errors(rec.diagnostics):
        return ExitCode.INVALID
    click.echo(FORMATS[fmt](rec), nl=False)
    if not dry_run:
        edited: dict[Path, str] = {}
        if rec.proposed_change:
            by_file: dict[str, dict[tuple[str, str], int]] = defaultdict(dict)
            spans = {w.name: w.span.file for w in policy.workloads}
            for change in rec.replicas:
                by_file[spans[change.workload]][("Workload", change.workload)] = change.new
            for file, changes in sorted(by_file.items()):
                path = Path(file)
                try:
                    edited[path] = edit_replicas(path.read_text(encoding="utf-8"), changes)
                except (OSError, ValueError, UnicodeDecodeError) as exc:
                    emit_diagnostics([make("MIGC427", f"{file}: {exc}", file=file)], "text", to_stderr=True)
                    return ExitCode.INVALID
        # Both files as nearly one step: every temporary file written and the state read back first,
        # then the renames back to back, the state first — a run killed between two renames leaves
        # the change recorded (minDwell and the budget hold) with the Workloads unedited, never
        # Workloads edited with no record of the change.
        try:
            data, check, warned = prepare_state(state_file, rec.state, moment)
            write_files_atomic(
                [(state_file, data, check), *((p, text.encode("utf-8"), None) for p, text in edited.items())]
            )
        except StateNotWritten as exc:
            return fail([exc.diagnostic])
        except OSError as exc:
            return fail([cannot_write(str(exc.filename or state_file), exc)])
        emit_diagnostics(warned, "text", to_stderr=True)
    click.echo(
        ("change proposed" if rec.proposed_change else "no change proposed")
        + (" (dry run: nothing written)" if dry_run else f"; state in {state_file}"),
        err=True,
    )
    return ExitCode.DRIFT if rec.proposed_change else ExitCode.OK
