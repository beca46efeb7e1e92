"""`migc simulate`: replay an openb pod trace on a simulated MIG fleet under several re-partitioning policies.

Results (text table or JSON, :data:`compiler.simulate.report.FORMATS`) go to stdout; progress and
diagnostics to stderr. The model is described
in :mod:`compiler.simulate.engine` and :mod:`compiler.simulate.trace` (docs/simulate.md).
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from compiler.catalog import Catalog, GpuModel, load_catalog
from compiler.commands._common import (
    FiniteFloatRange,
    Seconds,
    disruption_options,
    emit_diagnostics,
    fail,
    ignore_option,
    result_format_option,
)
from compiler.diagnostics import Diagnostic, has_errors, make
from compiler.exitcodes import ExitCode
from compiler.formatting import duration
from compiler.fsio import write_file_atomic
from compiler.model import IDLE_SURGE, CurrentState, PartitionPolicy, Policy
from compiler.observe import Observation
from compiler.pipeline import load_and_validate
from compiler.recommend import report as recommend_report
from compiler.recommend.engine import Recommendation
from compiler.recommend.state import State
from compiler.simulate import fill as fl
from compiler.simulate.engine import (
    BASELINES,
    DECISIONS,
    DEMAND_MODELS,
    DRAIN_SCOPES,
    EVICTION_MODELS,
    LAYOUT_RULES,
    SYNC_SECONDS,
    WHOLE_GPU_MODES,
    Result,
    Settings,
    Snapshot,
    recommend_policy,
    simulate,
    whole_gpu_conflicts,
)
from compiler.simulate.report import FORMATS, Fill, Replay
from compiler.simulate.snapshot import SnapshotRefused, check_policy, write_inputs
from compiler.simulate.trace import MAX_NODE_RESOURCE, TraceError, TracePod, read_trace
from compiler.validate.common import parse_duration

SIZES = ("1g", "2g", "3g", "4g", "7g")


def _duration(text: str | None, flag: str) -> int | None:
    if text is None:
        return None
    secs = parse_duration(text)
    if secs is None:
        raise click.BadParameter(f"{text!r} is not a duration such as 15m", param_hint=flag)
    return secs


def _node_resource(column: str, what: str, openb: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--node-cpu-milli`` / ``--node-memory-mib``: what every node has of the trace's ``column``."""
    return click.option(
        f"--node-{column.replace('_', '-')}",
        f"node_{column}",
        default=None,
        type=click.IntRange(1, MAX_NODE_RESOURCE),
        help=f"{what} (openb's 8-GPU nodes: {openb}): a pod binds only on a node with its trace's {column} "
        f"left [default: not modelled].",
    )


REPLAY_ONLY = (
    "policy_path",
    "baseline",
    "time_scale",
    "reconfigure_seconds",
    "drain_seconds",
    "drain_grace",
    "eviction",
    "demand_model",
    "demand_window",
    "disruption",
    "failure_rate",
    "sync_seconds",
    "pdb_fraction",
    "pdb_seconds",
    "operator_retry",
    "max_unavailable",
    "idle_surge",
    "max_wait",
    "idle_pass",
    "drain_scope",
    "whole_gpu",
    "layouts",
    "decision",
    "snapshot_at",
    "snapshot_dir",
    "node_cpu_milli",
    "node_memory_mib",
)


@click.command(name="simulate")
@click.option(
    "--mode",
    default="replay",
    show_default=True,
    type=click.Choice(["replay", "fill"]),
    help="replay: the time replay of the trace; fill: FGD's packing protocol (random arrivals from "
    "--seed, no departures, until the requests reach 100 % of the GPUs).",
)
@click.option(
    "--trace",
    "trace_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Pod trace in the Alibaba openb CSV format.",
)
@click.option("--gpu-product", required=True, help="GPU model of every node (e.g. NVIDIA-A100-SXM4-80GB).")
@click.option("--nodes", required=True, type=click.IntRange(1, 10000), help="Nodes in the simulated fleet.")
@click.option("--gpus-per-node", default=8, show_default=True, type=click.IntRange(1, 16))
@click.option(
    "--policy",
    "policy_path",
    default=None,
    type=click.Path(),
    help="Policy set (file or directory) whose PartitionPolicy drives 'default' "
    "[default: the PartitionPolicy defaults, mode dynamic].",
)
@click.option(
    "--baseline",
    default="all",
    show_default=True,
    type=click.Choice([*BASELINES, "all"]),
    help="Which policy to replay.",
)
@click.option(
    "--time-scale",
    default=1.0,
    show_default=True,
    type=FiniteFloatRange(min=0.001),
    help="Divide arrival times by this (pods arrive X times faster; run times unchanged).",
)
@click.option(
    "--mapping",
    default="compute",
    show_default=True,
    type=click.Choice(["compute", "memory"]),
    help="Map a pod's GPU fraction to a profile by compute slices or by memory.",
)
@disruption_options(
    "Default loop: re-carve a node only when the pending GPU-time its change avoids beats the "
    "GPU-time its drain is expected to destroy plus the wait it displaces (expected), or regardless "
    "(off).",
    "Reconfiguration cost per changed GPU (the node is out meanwhile).",
)
@click.option(
    "--eviction",
    default="restart",
    show_default=True,
    type=click.Choice(EVICTION_MODELS),
    help="What an evicted pod does when it runs again: restart (loses its progress) or resume.",
)
@click.option(
    "--demand",
    "demand_model",
    default="history",
    show_default=True,
    type=click.Choice(DEMAND_MODELS),
    help="Demand the default loop plans for: the demand at each evaluation (what recommend observes), "
    "the peak over the stabilizationWindow, or recommend's sizing from its demand history "
    "(docs/simulate.md).",
)
@click.option(
    "--demand-window",
    default=None,
    help="How far back --demand peak looks (e.g. 6h) [default: the policy's stabilizationWindow].",
)
@click.option(
    "--failure-rate",
    default=0.0,
    show_default=True,
    type=FiniteFloatRange(0, 1, max_open=True),
    help="Probability that one MIG reconfiguration of a node fails (seeded, deterministic; below 1).",
)
@click.option(
    "--configmap-sync-delay",
    "sync_seconds",
    default=SYNC_SECONDS,
    show_default=True,
    type=Seconds(),
    help="Seconds a new layout's config name waits in the mig-parted ConfigMap before the controller "
    "labels a drained node with it (controller --configmap-sync-delay: the kubelet's refresh of the MIG "
    "manager's mounted copy).",
)
@click.option(
    "--pdb-fraction",
    default=0.0,
    show_default=True,
    type=FiniteFloatRange(0, 1),
    help="Fraction of pods a PodDisruptionBudget protects (drawn per pod from --seed): their eviction "
    "is refused for --pdb-seconds; the controller retries with its backoff and fails the node past "
    "grace + its 1800 s eviction timeout.",
)
@click.option(
    "--pdb-seconds",
    default=900.0,
    show_default=True,
    type=Seconds(),
    help="How long a PodDisruptionBudget refuses a protected pod's eviction once the grace is over.",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(0),
    help="Seed of the --failure-rate draws (--mode fill: of the arrival draws).",
)
@click.option(
    "--operator-retry",
    default="1h",
    show_default=True,
    help="How long a node that failed every automatic attempt waits for a human's retry.",
)
@click.option(
    "--max-unavailable",
    default=1,
    show_default=True,
    type=click.IntRange(1, 10000),
    help="Nodes reconfiguring at once.",
)
@click.option(
    "--idle-surge",
    default=IDLE_SURGE,
    show_default=True,
    type=click.IntRange(0, 10000),
    help="Nodes running no GPU pod that may reconfigure beyond --max-unavailable (NodePool idleSurge).",
)
@click.option("--max-wait", default=None, help="migc.dev/max-wait-time given to every pod (e.g. 15m).")
@click.option(
    "--idle-pass/--no-idle-pass",
    default=None,
    help="Default loop with --decision cover: at each evaluation first re-carve idle nodes (no GPU pod "
    "on them) for the pods waiting, past the stabilizationWindow, the scaleDownWindow and the "
    "disruption rule, within minDwell, the dailyChangeBudget and the backoff (docs/simulate.md, "
    "heldOnIdleGpu). [default: on with --decision cover; --idle-pass is a usage error with "
    "--decision recommend]",
)
@click.option(
    "--drain-scope",
    default="node",
    show_default=True,
    type=click.Choice(DRAIN_SCOPES),
    help="Which pods a node's re-carve drains: node, every GPU pod of the node (device-plugin nodes: "
    "nothing in the API maps a pod to a GPU); gpu, only the pods on GPUs whose layout changes (static "
    "DRA nodes; the MIG manager skips unchanged GPUs). The node is cordoned either way (docs/simulate.md).",
)
@click.option(
    "--whole-gpu",
    default="mig-disabled",
    show_default=True,
    type=click.Choice(WHOLE_GPU_MODES),
    help="What a whole GPU is on the loop's fleet (naive and default): mig-disabled, a GPU with MIG "
    "off, so turning MIG on or off re-carves every GPU of the node; full-instance, every GPU stays "
    "in MIG mode and a whole-GPU pod takes a full-profile instance (7g.80gb on A100-80GB), so no "
    "change turns MIG on or off (optimistic: the instance's fewer SMs and missing NVLink are not "
    "modelled). Only with --drain-scope gpu, --decision cover and a baseline that re-carves "
    "(docs/simulate.md, Whole GPUs).",
)
@click.option(
    "--layouts",
    default="fewest",
    show_default=True,
    type=click.Choice(LAYOUT_RULES),
    help="The layout a re-carve gives a GPU: fewest, the catalog layout serving the most of its need "
    "with the fewest slices (may leave slices dark); maximal, a maximal layout whose extra instances "
    "are spare room for what the fleet wants most (docs/simulate.md, bench/RESULTS.md Round 12).",
)
@click.option(
    "--decision",
    default="cover",
    show_default=True,
    type=click.Choice(DECISIONS),
    help="What decides the default loop's changes: cover, the replay's greedy cover weighed node by "
    "node; recommend, migc recommend's own decision (its sizing, the exact solver from the deployed "
    "layout, the disruption rule and gates) on the replay's state (docs/simulate.md, The decision).",
)
@click.option(
    "--snapshot-at",
    default=None,
    help="With --decision recommend: at the first evaluation this long after the replay's start "
    "(e.g. 36h), write recommend's inputs and the decision there to --snapshot-dir.",
)
@click.option(
    "--snapshot-dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="A new or empty directory for --snapshot-at: policy/, output/, cluster.json, "
    "observed-demand.yaml (run `migc recommend` on them) and decision.json (the replay's evidence).",
)
@_node_resource("cpu_milli", "CPU of each node in millicores", 96000)
@_node_resource("memory_mib", "Memory of each node in MiB", 393216)
@result_format_option(list(FORMATS), "Format of the results.")
@ignore_option
def command(
    mode: str,
    trace_path: str,
    gpu_product: str,
    nodes: int,
    gpus_per_node: int,
    policy_path: str | None,
    baseline: str,
    time_scale: float,
    mapping: str,
    reconfigure_seconds: float,
    drain_seconds: float,
    drain_grace: float,
    eviction: str,
    demand_model: str,
    demand_window: str | None,
    disruption: str,
    failure_rate: float,
    sync_seconds: float,
    pdb_fraction: float,
    pdb_seconds: float,
    seed: int,
    operator_retry: str,
    max_unavailable: int,
    idle_surge: int,
    max_wait: str | None,
    idle_pass: bool | None,
    drain_scope: str,
    whole_gpu: str,
    layouts: str,
    decision: str,
    snapshot_at: str | None,
    snapshot_dir: Path | None,
    node_cpu_milli: int | None,
    node_memory_mib: int | None,
    fmt: str,
    ignore: tuple[str, ...],  # applied where diagnostics are printed (_common.emit_diagnostics)
) -> int:
    """Replay a pod trace (openb CSV) on a simulated MIG fleet and compare re-partitioning policies.

    Exit status: 0 ok, 1 unreadable trace, unknown GPU product or invalid policy, 2 usage error.
    """
    if mode == "fill":
        ctx = click.get_current_context()
        given = [
            f"--{name.replace('_path', '').replace('_model', '').replace('_', '-')}"
            for name in REPLAY_ONLY
            if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
        ]
        if given:
            raise click.UsageError(f"{', '.join(given)}: only for --mode replay (--mode fill has no time)")
    catalog = load_catalog()
    model = catalog.by_product(gpu_product)
    if model is None or not model.mig_capable:
        known = ", ".join(sorted(p for m in catalog.models if m.mig_capable for p in m.gpu_products[:1]))
        why = f"--gpu-product {gpu_product!r} is not a MIG-capable catalog model; known: {known}"
        return fail([make("MIGC426", why)])
    if mode == "fill":
        return _fill(trace_path, catalog, model, nodes, gpus_per_node, mapping, seed, fmt)
    if decision == "recommend":
        _recommend_options(baseline, bool(idle_pass), demand_model, demand_window, layouts)
    _whole_gpu_options(whole_gpu, drain_scope, decision, baseline)
    idle = decision == "cover" if idle_pass is None else idle_pass
    snap = _snapshot(snapshot_at, snapshot_dir, decision, baseline)
    wait_s = _duration(max_wait, "--max-wait")
    window_s = _duration(demand_window, "--demand-window")
    operator_s = _duration(operator_retry, "--operator-retry")
    policy = PartitionPolicy(mode="dynamic")
    if policy_path is not None:
        loaded, diags = load_and_validate([policy_path])
        if loaded is None or has_errors(diags):
            return fail(diags)
        policy = replace(loaded.partition, mode="dynamic")
    settings = Settings(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        mapping=mapping,
        time_scale=time_scale,
        reconfigure_seconds=reconfigure_seconds,
        drain_seconds=drain_seconds,
        drain_grace_seconds=drain_grace,
        eviction=eviction,
        demand=demand_model,
        demand_window_seconds=float(window_s or 0),
        disruption=disruption,
        failure_rate=failure_rate,
        sync_seconds=sync_seconds,
        pdb_fraction=pdb_fraction,
        pdb_seconds=pdb_seconds,
        seed=seed,
        operator_retry_seconds=float(operator_s or 0),
        max_unavailable=max_unavailable,
        idle_surge=idle_surge,
        max_wait_seconds=wait_s,
        idle_pass=idle,
        drain_scope=drain_scope,
        whole_gpu=whole_gpu,
        layouts=layouts,
        decision=decision,
        node_cpu_milli=node_cpu_milli,
        node_memory_mib=node_memory_mib,
    )
    try:
        trace = read_trace(Path(trace_path), resources=settings.resources())
    except TraceError as exc:
        return fail([exc.diagnostic])
    if decision == "recommend":  # recommend's policy (and the snapshot's), read back before the replay
        try:
            check_policy(recommend_policy(trace.pods, model, settings, policy), catalog)
        except SnapshotRefused as exc:
            return fail([make("MIGC449", f"--decision recommend: {exc}")])
    chosen = BASELINES if baseline == "all" else (baseline,)
    started = time.perf_counter()
    replayed = _replay(trace.pods, model, settings, chosen, policy, catalog, snap, snapshot_at, snapshot_dir)
    if isinstance(replayed, int):
        return replayed
    results = replayed
    run = Replay(
        trace=Path(trace_path).name,
        pods=len(trace.pods),
        skipped_no_gpu=trace.skipped_no_gpu,
        skipped_never_ran=trace.skipped_never_ran,
        gpu_model=model.model,
        settings=settings,
        demand_window_seconds=window_s,
        operator_retry_seconds=operator_s,
        results=tuple(results),
        ignored=trace.ignored,
        too_big=sum(1 for p in trace.pods if not settings.fits_node(p)),
    )
    click.echo(FORMATS[fmt](run), nl=False)
    emit_diagnostics(_decision_findings(results), "text", to_stderr=True)
    click.echo(f"migc: simulated {len(chosen)} baseline(s) in {time.perf_counter() - started:.1f}s", err=True)
    return ExitCode.OK


def _decision_findings(results: Sequence[Result]) -> list[Diagnostic]:
    """What recommend's decision reported in the replay (``--decision recommend``), one line per code:
    how often, and the first message (``-o json``'s ``decisionDiagnostics`` has the counts too). The
    replay runs recommend lazily: where a gate holds every proposal before the solve, the solver's
    findings (MIGC201 …) are not there, the demand's and the sizing's (MIGC424, MIGC428) are."""
    out: list[Diagnostic] = []
    for r in results:
        for code, f in sorted((r.decision_diagnostics or {}).items()):
            message = (
                f"recommend's decision reported {code} at {f.evaluations} of {r.evaluations} evaluation(s) "
                f"(an evaluation a gate holds before the solve has none of the solver's findings; "
                f"{f.distinct} distinct message(s)); the first: {f.first.message}"
            )
            out.append(replace(f.first, message=message))
    return out


def _replay(
    pods: Sequence[TracePod],
    model: GpuModel,
    settings: Settings,
    chosen: Sequence[str],
    policy: PartitionPolicy,
    catalog: Catalog,
    snap: Snapshot | None,
    snapshot_at: str | None,
    snapshot_dir: Path | None,
) -> list[Result] | int:
    """Every chosen baseline replayed, a progress bar on stderr; an exit status where the snapshot
    could not be written or the replay ended before ``--snapshot-at``."""
    results: list[Result] = []
    for b in chosen:

        def progress(frac: float, name: str = b) -> None:
            bar = "#" * int(frac * 30)
            print(f"\r{name:<16}[{bar:<30}] {frac * 100:3.0f}%", end="", file=sys.stderr, flush=True)

        try:
            results.append(simulate(pods, model, settings, b, policy, progress, catalog, snap))
        except SnapshotRefused as exc:
            print(file=sys.stderr)
            return fail([make("MIGC448", f"--snapshot-dir {snapshot_dir}: {exc}")])
        print(f"\r{b:<16}[{'#' * 30}] done", file=sys.stderr, flush=True)
    if snap is not None and not any(r.snapshot is not None for r in results):
        ran = max((r.hours for r in results if r.baseline == "default"), default=0.0) * 3600
        return fail(
            [
                make(
                    "MIGC448",
                    f"--snapshot-at {snapshot_at}: the replay ended {duration(ran)} after its start, "
                    f"before an evaluation that late; nothing was written to {snapshot_dir} (give an "
                    "instant within the replay)",
                )
            ]
        )
    return results


def _write_snapshot(
    dest: Path, policy: Policy, current: CurrentState, obs: Observation, state: State, rec: Recommendation
) -> None:
    """recommend's inputs (compiler/simulate/snapshot.py) and, beside them, the replay's evidence of
    the decision it made on them (``migc recommend -o json``'s form)."""
    try:
        write_inputs(dest, policy, current, obs, state)
        write_file_atomic(dest / "decision.json", recommend_report.to_json(rec).encode("utf-8"))
    except OSError as exc:  # the directory went away or became unwritable during the replay
        raise SnapshotRefused(f"cannot write it: {exc.strerror or exc}") from exc


def _recommend_options(
    baseline: str, idle_pass: bool, demand_model: str, demand_window: str | None, layouts: str
) -> None:
    """``--decision recommend`` replaces the cover of the default loop, so the options that only
    steer that cover (its sizing, its idle pass, its layouts) would be accepted and ignored: a usage
    error names them, as does a baseline without the default loop."""
    ignored = [
        flag
        for flag, given in (
            ("--idle-pass", idle_pass),
            (f"--demand {demand_model}", demand_model != "history"),
            ("--demand-window", demand_window is not None),
            (f"--layouts {layouts}", layouts != "fewest"),
            (f"--baseline {baseline}", baseline not in ("default", "all")),
        )
        if given
    ]
    if ignored:
        raise click.UsageError(
            f"{', '.join(ignored)}: not with --decision recommend (migc recommend's decision sizes "
            "from the demand history and carves the solver's layouts in the default loop; the "
            "baseline must be default or all)"
        )


def _whole_gpu_options(whole_gpu: str, drain_scope: str, decision: str, baseline: str) -> None:
    """``--whole-gpu`` where it would be accepted and ignored is a usage error naming every reason at
    once (:func:`compiler.simulate.engine.whole_gpu_conflicts`)."""
    why = whole_gpu_conflicts(whole_gpu, drain_scope, decision, baseline)
    if why:
        raise click.UsageError(f"--whole-gpu {whole_gpu}: {'; '.join(why)}")


def _uncreatable(dest: Path) -> str | None:
    """Why ``dest`` (absent or an empty directory) cannot be written at the end of a long replay, or
    None: its nearest existing ancestor must be a directory this user may write into (the snapshot
    is staged beside ``dest`` and renamed onto it)."""
    probe = Path(os.path.abspath(dest)).parent
    while True:
        try:
            st = os.stat(probe)
        except (FileNotFoundError, NotADirectoryError):
            if probe.parent == probe:
                return f"{probe} does not exist"
            probe = probe.parent
            continue
        if not stat.S_ISDIR(st.st_mode):
            return f"{probe} is not a directory"
        if not os.access(probe, os.W_OK | os.X_OK):
            return f"{probe} is not writable"
        return None


def _snapshot(at: str | None, dest: Path | None, decision: str, baseline: str) -> Snapshot | None:
    """``--snapshot-at`` / ``--snapshot-dir``, checked before the replay (usage errors)."""
    if at is None and dest is None:
        return None
    if at is None or dest is None:
        raise click.UsageError("--snapshot-at and --snapshot-dir go together")
    if decision != "recommend" or baseline not in ("default", "all"):
        raise click.UsageError(
            "--snapshot-at needs --decision recommend and --baseline default (or all): it writes "
            "the inputs of migc recommend's decision in the default loop"
        )
    seconds = _duration(at, "--snapshot-at")
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise click.UsageError(f"--snapshot-dir {dest}: must be a new or empty directory")
    why = _uncreatable(dest)
    if why is not None:
        raise click.UsageError(f"--snapshot-dir {dest}: {why}")
    return Snapshot(float(seconds or 0), dest, _write_snapshot)


def _fill(
    trace_path: str,
    catalog: Catalog,
    model: GpuModel,
    nodes: int,
    gpus_per_node: int,
    mapping: str,
    seed: int,
    fmt: str,
) -> int:
    """``--mode fill``: FGD's protocol (compiler/simulate/fill.py), every policy on the same draws."""
    try:
        trace = read_trace(Path(trace_path), times=False)
    except TraceError as exc:
        return fail([exc.diagnostic])
    started = time.perf_counter()
    capacity = nodes * gpus_per_node
    pods = fl.arrivals(trace.pods, capacity, seed, gpus_per_node)
    results = tuple(
        fl.fill_order(pods, catalog, model, nodes, gpus_per_node, p, mapping) for p in fl.POLICIES
    )
    run = Fill(
        trace=Path(trace_path).name,
        trace_pods=len(trace.pods),
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        gpu_model=model.model,
        mapping=mapping,
        seed=seed,
        requests=len(pods),
        requested_gpus=sum(fl.share(p) for p in pods),
        mig_rounding_ceiling=fl.rounding_ceiling(model, pods, capacity, mapping),
        rounded_share_ratio=fl.rounded_share_ratio(model, pods, mapping),
        results=results,
    )
    click.echo(FORMATS[fmt](run), nl=False)
    click.echo(f"migc: filled {len(fl.POLICIES)} policies in {time.perf_counter() - started:.1f}s", err=True)
    return ExitCode.OK
