"""`migc recommend`: observed demand → a re-partitioning proposal, gated by the PartitionPolicy.

The proposal is a normal policy change: Workload ``replicas`` edited in place (comments kept) and the
machine-owned ObservedDemand state file rewritten. Evidence (text, markdown for a pull request, or
JSON) goes to stdout; diagnostics to stderr.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import click

from compiler.catalog import Catalog, load_catalog
from compiler.commands._common import (
    cannot_write,
    cluster_source_options,
    disruption_options,
    emit_diagnostics,
    fail,
    ignore_option,
    observation_time,
    read_cluster_source,
    require_one_cluster_source,
    result_format_option,
)
from compiler.current import read_current
from compiler.diagnostics import Collector, Diagnostic, has_errors, make
from compiler.exitcodes import ExitCode
from compiler.fsio import write_files_atomic
from compiler.model import CurrentState, Policy
from compiler.observe import Observation, ObserveError
from compiler.pipeline import collect_policy
from compiler.recommend.engine import Recommendation, recommend
from compiler.recommend.report import FORMATS
from compiler.recommend.state import (
    KIND,
    STATE_FILE,
    State,
    StateBusy,
    StateLock,
    StateNotWritten,
    change_horizon,
    edit_replicas,
    prepare_state,
    read_state,
    rebuild_from_cluster,
)


@dataclass(frozen=True)
class _Request:
    """One run, as its options ask for it (built once by :func:`command`)."""

    policy_path: str
    snapshots: tuple[str, ...]  # the cluster source: snapshot files, or a live cluster
    kubeconfig: str | None
    context: str | None
    in_cluster: bool
    against: Path  # rendered output that describes what is deployed now
    state_file: Path
    moment: dt.datetime  # the time of the observation
    dry_run: bool
    disruption: str
    drain_grace: float
    reconfigure_seconds: float
    drain_seconds: float
    fmt: str  # a key of compiler.recommend.report.FORMATS


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
@ignore_option
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
    drain_seconds: float,
    fmt: str,
    ignore: tuple[str, ...],  # applied where diagnostics are printed (_common.emit_diagnostics)
) -> int:
    """Propose a re-partitioning from observed demand when the PartitionPolicy's gates allow it.

    Exit status: 0 no change proposed, 1 invalid policy or unreadable cluster, 2 usage error,
    3 a change is proposed (and, without --dry-run, written).
    """
    require_one_cluster_source(snapshots, kubeconfig, context, in_cluster)
    if disruption == "off":
        _no_prices_without_the_rule()
    moment = observation_time(now)
    if isinstance(moment, Diagnostic):
        return fail([moment])
    root = Path(policy_path)
    req = _Request(
        policy_path=policy_path,
        snapshots=snapshots,
        kubeconfig=kubeconfig,
        context=context,
        in_cluster=in_cluster,
        against=Path(against),
        state_file=Path(state_path) if state_path else (root if root.is_dir() else root.parent) / STATE_FILE,
        moment=moment,
        dry_run=dry_run,
        disruption=disruption,
        drain_grace=drain_grace,
        reconfigure_seconds=reconfigure_seconds,
        drain_seconds=drain_seconds,
        fmt=fmt,
    )
    if dry_run or not req.state_file.parent.is_dir():  # writes nothing (or cannot): no lock to take
        return _recommend(req)
    with contextlib.ExitStack() as stack:
        try:  # one run at a time per state file, from reading the policy to writing both files
            stack.enter_context(StateLock(req.state_file))
        except StateBusy as exc:
            return fail([exc.diagnostic])
        except OSError as exc:  # the lock file cannot be created (read-only directory …)
            why = exc.strerror or str(exc)
            return fail([make("MIGC447", f"cannot lock {req.state_file}: {why}", file=str(req.state_file))])
        return _recommend(req)


def _no_prices_without_the_rule() -> None:
    """``--disruption off`` weighs the gain, not G, R or D: given with it they would be accepted and
    ignored (and echoed in the evidence as if priced), so a usage error names them."""
    ctx = click.get_current_context()
    given = [
        f"--{name.replace('_', '-')}"
        for name in ("drain_grace", "reconfigure_seconds", "drain_seconds")
        if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
    ]
    if given:
        raise click.UsageError(
            f"{', '.join(given)}: not with --disruption off (the disruption rule's prices; without the "
            "rule the gain threshold decides and nothing is priced)"
        )


def _recommend(req: _Request) -> int:
    """Load the policy, observe the cluster, recommend, print the evidence, write (unless a dry run)."""
    catalog = load_catalog()
    diagnostics = Collector()  # every stage's findings, reported once
    policy = _load_policy(req, catalog, diagnostics)
    if policy is None:
        return fail(diagnostics)
    seen = _observe(req, policy, diagnostics)
    if seen is None:
        return fail(diagnostics)
    rec = recommend(
        policy,
        catalog,
        seen.current,
        seen.cluster,
        seen.state,
        req.moment,
        disruption=req.disruption,
        drain_grace_seconds=req.drain_grace,
        reconfigure_seconds=req.reconfigure_seconds,
        drain_seconds=req.drain_seconds,
    )
    diagnostics.extend(rec.diagnostics)
    emit_diagnostics(diagnostics, "text", to_stderr=True)
    if has_errors(rec.diagnostics):
        return ExitCode.INVALID
    click.echo(FORMATS[req.fmt](rec), nl=False)
    failed = None if req.dry_run else _write(req, policy, rec)
    if failed is not None:
        return failed
    click.echo(
        ("change proposed" if rec.proposed_change else "no change proposed")
        + (" (dry run: nothing written)" if req.dry_run else f"; state in {req.state_file}"),
        err=True,
    )
    return ExitCode.DRIFT if rec.proposed_change else ExitCode.OK


@dataclass(frozen=True)
class _Observed:
    """What the recommendation starts from besides the policy."""

    current: CurrentState  # the deployed layouts (--against)
    cluster: Observation  # the pods and nodes
    state: State  # the ObservedDemand state, rebuilt from the cluster where it was lost


def _observe(req: _Request, policy: Policy, diagnostics: Collector) -> _Observed | None:
    """The deployed layouts, the cluster and the state, what each reports added to ``diagnostics``;
    None when the cluster cannot be read (its diagnostic added)."""
    current, more = read_current(req.against, policy)
    diagnostics.extend(more)
    try:
        obs = read_cluster_source(req.moment, req.snapshots, req.kubeconfig, req.context, req.in_cluster)
    except ObserveError as exc:
        diagnostics.add(exc.diagnostic)
        return None
    diagnostics.extend(obs.warnings)
    state, more = read_state(req.state_file, req.moment, policy.partition)
    diagnostics.extend(more)
    state, more = rebuild_from_cluster(state, obs, req.moment)
    diagnostics.extend(more)
    return _Observed(current, obs, state)


def _load_policy(req: _Request, catalog: Catalog, diagnostics: Collector) -> Policy | None:
    """The validated policy (None when it has errors), its findings added to ``diagnostics``, and
    MIGC422 when it is static.

    The machine-owned state never blocks the recommender: its documents are left out here and it is
    read (and judged) on its own by :func:`compiler.recommend.state.read_state`."""
    skip = {str(req.state_file), str(req.state_file.resolve())}
    policy = collect_policy([req.policy_path], diagnostics, catalog, skip_files=skip, skip_kinds={KIND})
    if policy is None or diagnostics.has_errors():
        return None
    part = policy.partition
    if part.mode != "dynamic":
        span = part.span
        diagnostics.add(
            make(
                "MIGC422",
                "PartitionPolicy mode is static: `migc recommend` proposes no change "
                "(the fields only it reads are listed by MIGC180)",
                file=span.file,
                line=span.line,
                col=span.col,
            )
        )
    return policy


def _edited_workloads(policy: Policy, rec: Recommendation) -> dict[Path, str] | Diagnostic:
    """Each policy file holding a Workload whose replicas the proposal changes, edited in place
    (comments kept); MIGC427 for a file that cannot be edited."""
    edited: dict[Path, str] = {}
    by_file: dict[str, dict[tuple[str, str], int]] = defaultdict(dict)
    spans = {w.name: w.span.file for w in policy.workloads}
    for change in rec.replicas:
        by_file[spans[change.workload]][("Workload", change.workload)] = change.new
    for file, changes in sorted(by_file.items()):
        path = Path(file)
        try:
            edited[path] = edit_replicas(path.read_text(encoding="utf-8"), changes)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            return make("MIGC427", f"{file}: {exc}", file=file)
    return edited


def _write(req: _Request, policy: Policy, rec: Recommendation) -> int | None:
    """The state file and, when a change is proposed, the edited Workloads; an exit code when they
    cannot be written (None when they were)."""
    edited: dict[Path, str] = {}
    if rec.proposed_change:
        done = _edited_workloads(policy, rec)
        if isinstance(done, Diagnostic):
            emit_diagnostics([done], "text", to_stderr=True)
            return ExitCode.INVALID
        edited = done
    # Both files as nearly one step: every temporary file written and the state read back first,
    # then the renames back to back, the state first — a run killed between two renames leaves
    # the change recorded (minDwell and the budget hold) with the Workloads unedited, never
    # Workloads edited with no record of the change.
    try:
        data, check, warned = prepare_state(
            req.state_file, rec.state, req.moment, keep_seconds=change_horizon(policy.partition)
        )
        write_files_atomic(
            [(req.state_file, data, check), *((p, text.encode("utf-8"), None) for p, text in edited.items())]
        )
    except StateNotWritten as exc:
        return fail([exc.diagnostic])
    except OSError as exc:
        return fail([cannot_write(str(exc.filename or req.state_file), exc)])
    emit_diagnostics(warned, "text", to_stderr=True)
    return None
