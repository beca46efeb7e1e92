"""The forms of a ``migc simulate`` result on stdout: one home per result.

A run is a :class:`Replay` (``--mode replay``: each baseline's :class:`~compiler.simulate.engine.Result`
over the trace) or a :class:`Fill` (``--mode fill``: FGD's packing protocol, one
:class:`~compiler.simulate.fill.FillResult` per policy). ``FORMATS`` maps each ``migc simulate -o``
choice to the function that writes either (conftest's ``output.Get(format)``, check-jsonschema's
``reporter.py``): ``text`` for a terminal, ``json`` for scripts and bench (``to_dict``). The result
types themselves stay in :mod:`compiler.simulate.engine` and :mod:`compiler.simulate.fill`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from compiler.simulate.engine import WAIT_CAUSES, Result, Settings
from compiler.simulate.fill import FillResult
from compiler.simulate.trace import ignored_note


def _pct(r: Result, size: str | None) -> dict[str, object]:
    """p50/p95/p99 of the waits; ``lowerBound`` names the ones a censored wait makes a lower bound."""
    out: dict[str, object] = {}
    bounds: list[str] = []
    for q in (50, 95, 99):
        v, lower = r.percentile(size, q)
        out[f"p{q}"] = round(v, 1)
        if lower:
            bounds.append(f"p{q}")
    out["pods"] = sum(len(vs) for k, vs in r.waits.items() if size is None or k == size)
    out["censored"] = r.censored(size)
    out["lowerBound"] = bounds
    return out


def result_dict(r: Result) -> dict[str, Any]:
    """One baseline's row of ``results`` (rounded as the JSON shows it; the table reads the same)."""
    sizes = sorted(r.waits, key=lambda k: (len(k), k))
    return {
        "baseline": r.baseline,
        "hours": round(r.hours, 2),
        "reconfigurations": r.reconfigurations,
        "reconfigurationsPerHour": round(r.per_hour, 4),
        "traceHours": round(r.trace_hours, 2),
        "gpuReconfigurations": r.gpu_reconfigurations,
        "gpusTouched": r.gpus_touched,
        "nodesTouched": r.nodes_touched,
        "drainWaits": r.drain_waits,
        "drains": r.drains,
        "revisions": r.revisions,
        "retargets": r.retargets,
        "failures": r.failures,
        "syncWaits": r.sync_waits,
        "evictions": r.evictions,
        "evictionsBlocked": r.evictions_blocked,
        "drainTimeouts": r.drain_timeouts,
        "lostGpuHours": round(r.lost_gpu_seconds / 3600, 1),
        "waitSeconds": {size: _pct(r, size) for size in sizes} | {"all": _pct(r, None)},
        "sliceUtilisation": round(r.utilisation, 4),
        "neverServed": r.never_served,
        "evaluations": r.evaluations,
        "blockedBy": dict(sorted(r.blocked.items())),
        "rulesFired": r.rules_fired,
        "heldOnIdleGpu": r.held_on_idle,
        "nonMaximalLayouts": r.non_maximal,
        "waitCauses": _causes(r),
        "instancesCarved": r.instances_carved,
        "idleRecarves": r.idle_recarves,
        "snapshot": r.snapshot,
        "decisionDiagnostics": _findings(r),
    }


def _causes(r: Result) -> dict[str, dict[str, float]] | None:
    """Why pods waited (``Result.wait_causes``): per size class (and ``all``), pending pod-hours per
    cause, sampled once per interval; None where not sampled (every policy but naive and default)."""
    if r.wait_causes is None:
        return None
    sizes = sorted(r.wait_causes, key=lambda k: (len(k), k))
    total = dict.fromkeys(WAIT_CAUSES, 0.0)
    out: dict[str, dict[str, float]] = {}
    for size in sizes:
        row = r.wait_causes[size]
        out[size] = {c: round(row[c] / 3600, 1) for c in WAIT_CAUSES}
        for c in WAIT_CAUSES:
            total[c] += row[c]
    out["all"] = {c: round(total[c] / 3600, 1) for c in WAIT_CAUSES}
    return out


def _findings(r: Result) -> list[dict[str, object]] | None:
    """``--decision recommend``: per diagnostic code recommend's decision reported, the evaluations
    that reported it, its distinct messages and the first one (code order); None for the other
    decisions."""
    if r.decision_diagnostics is None:
        return None
    return [
        {
            "code": code,
            "severity": str(f.first.severity),
            "evaluations": f.evaluations,
            "distinctMessages": f.distinct,
            "first": f.first.message,
        }
        for code, f in sorted(r.decision_diagnostics.items())
    ]


@dataclass(frozen=True)
class Replay:
    """``--mode replay``: the trace, the fleet and loop settings it ran under, one result per baseline."""

    trace: str  # the trace file's name
    pods: int  # GPU pods replayed
    skipped_no_gpu: int
    skipped_never_ran: int
    gpu_model: str
    settings: Settings
    demand_window_seconds: int | None  # --demand-window as given (None: the policy's stabilizationWindow)
    operator_retry_seconds: int | None  # --operator-retry as given
    results: tuple[Result, ...]
    ignored: tuple[tuple[str, int], ...] = ()  # Trace.ignored: trace columns the replay does not model
    # pods that fit no empty node (more GPUs, or with Settings.node_cpu_milli / node_memory_mib more CPU
    # or memory than one holds): never served, censored from their arrival
    too_big: int = 0

    def to_dict(self) -> dict[str, Any]:
        s = self.settings
        return {
            "trace": self.trace,
            "pods": self.pods,
            "nodes": s.nodes,
            "gpusPerNode": s.gpus_per_node,
            "gpuModel": self.gpu_model,
            "timeScale": s.time_scale,
            "mapping": s.mapping,
            "drainGraceSeconds": s.drain_grace_seconds,
            "reconfigureSeconds": s.reconfigure_seconds,
            "drainSeconds": s.drain_seconds,
            "configMapSyncSeconds": s.sync_seconds,
            "pdbFraction": s.pdb_fraction,
            "pdbSeconds": s.pdb_seconds,
            "eviction": s.eviction,
            "demand": s.demand,
            "demandWindowSeconds": self.demand_window_seconds,
            "disruption": s.disruption,
            "failureRate": s.failure_rate,
            "seed": s.seed,
            "operatorRetrySeconds": self.operator_retry_seconds,
            "maxUnavailable": s.max_unavailable,
            "idleSurge": s.idle_surge,
            "idlePass": s.idle_pass and s.decision == "cover",  # the pass is the cover's
            "drainScope": s.drain_scope,
            "wholeGpu": s.whole_gpu,
            "layouts": s.layouts,
            "decision": s.decision,
            "nodeCpuMilli": s.node_cpu_milli,
            "nodeMemoryMib": s.node_memory_mib,
            "podsFittingNoNode": self.too_big,
            "ignoredColumns": dict(self.ignored),
            "results": [result_dict(r) for r in self.results],
        }

    def header(self) -> str:
        s = self.settings
        return (
            f"trace {self.trace}: {self.pods} GPU pods replayed "
            f"({self.skipped_no_gpu} without GPU, "
            f"{self.skipped_never_ran} never ran, skipped); {s.nodes} x {s.gpus_per_node} {self.gpu_model}; "
            f"time scale {s.time_scale:g}; mapping {s.mapping}; drain grace {s.drain_grace_seconds:g} s, "
            f"{s.reconfigure_seconds:g} s per GPU, eviction {s.eviction}, "
            f"maxUnavailable {s.max_unavailable} (+{s.idle_surge} idle); "
            f"disruption rule {s.disruption}; failure rate {s.failure_rate:g}; "
            f"ConfigMap sync {s.sync_seconds:g} s"
            + ("" if not s.pdb_fraction else f"; PDB on {s.pdb_fraction:g} of pods for {s.pdb_seconds:g} s")
            + ("" if s.drain_scope == "node" else f"; drain scope {s.drain_scope}")
            + ("" if s.whole_gpu == "mig-disabled" else f"; whole GPUs {s.whole_gpu}")
            + ("" if s.layouts == "fewest" else f"; layouts {s.layouts}")
            + ("" if s.decision == "cover" else f"; decision {s.decision}")
            + ("" if s.node_cpu_milli is None else f"; {s.node_cpu_milli} mCPU per node")
            + ("" if s.node_memory_mib is None else f"; {s.node_memory_mib} MiB memory per node")
            # only where CPU or memory is modelled: without them the header is byte-identical to before
            + (f"; {self.too_big} pods fit no node (never served)" if self.too_big and s.resources() else "")
        )


@dataclass(frozen=True)
class Fill:
    """``--mode fill``: the draws (seeded arrivals until the requests reach the fleet's GPUs) and one
    result per packing policy, all on the same draws."""

    trace: str
    trace_pods: int
    nodes: int
    gpus_per_node: int
    gpu_model: str
    mapping: str
    seed: int
    requests: int  # arrivals drawn
    requested_gpus: float  # their GPU shares summed
    mig_rounding_ceiling: float  # the allocation ratio MIG's profile rounding allows at best
    rounded_share_ratio: float
    results: tuple[FillResult, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": "fill",
            "trace": self.trace,
            "tracePods": self.trace_pods,
            "nodes": self.nodes,
            "gpusPerNode": self.gpus_per_node,
            "gpuModel": self.gpu_model,
            "mapping": self.mapping,
            "seed": self.seed,
            "capacityGpus": self.nodes * self.gpus_per_node,
            "requests": self.requests,
            "requestedGpus": round(self.requested_gpus, 4),
            "migRoundingCeiling": round(self.mig_rounding_ceiling, 4),
            "roundedShareRatio": round(self.rounded_share_ratio, 4),
            "results": [
                {
                    "policy": r.policy,
                    "placed": r.placed,
                    "failed": r.failed,
                    "allocatedGpus": round(r.allocated_share, 4),
                    "allocationRatio": round(r.ratio, 4),
                }
                for r in self.results
            ],
        }


def _show(w: dict[str, object], q: str) -> str:
    """A percentile for the table: ``>x`` where it is only a lower bound (censored waits)."""
    bounds = w["lowerBound"]
    assert isinstance(bounds, list)
    return f">{w[q]}" if q in bounds else f"{w[q]}"


def _replay_text(run: Replay) -> str:
    rows = [result_dict(r) for r in run.results]
    note = ignored_note(run.ignored)
    out = [run.header(), *([note] if note else []), ""]
    out.append(
        f"{'baseline':<16}{'reconf':>7}{'reconf/h':>10}{'GPUs':>6}{'evict':>7}{'lost GPU-h':>11}"
        f"{'p50 s':>12}{'p95 s':>12}{'p99 s':>12}{'util':>7}{'never':>7}{'cens':>6}"
    )
    for row in rows:
        w = row["waitSeconds"]
        assert isinstance(w, dict)
        a = w["all"]
        out.append(
            f"{row['baseline']!s:<16}{row['reconfigurations']!s:>7}{row['reconfigurationsPerHour']!s:>10}"
            f"{row['gpusTouched']!s:>6}{row['evictions']!s:>7}{row['lostGpuHours']!s:>11}"
            f"{_show(a, 'p50'):>12}{_show(a, 'p95'):>12}{_show(a, 'p99'):>12}"
            f"{row['sliceUtilisation']!s:>7}{row['neverServed']!s:>7}{a['censored']!s:>6}"
        )
    out.append("")
    out.append(
        "p95 pending wait (s) per profile size ('>': a lower bound, censored waits of pods still pending):"
    )
    for row in rows:
        w = row["waitSeconds"]
        assert isinstance(w, dict)
        parts = [f"{k} {_show(v, 'p95')} ({v['pods']} pods)" for k, v in w.items() if k != "all"]
        out.append(f"  {row['baseline']}: " + "; ".join(parts))
    causes = [(row["baseline"], row["waitCauses"]) for row in rows if row["waitCauses"]]
    if causes:
        out.append("")
        out.append(
            "why pods waited (pending pod-hours, sampled once per interval: a free instance; GPUs a re-carve "
            "evicts nobody on; empty GPUs only on nodes with GPU pods; room on a node out of Idle; slices "
            "free only on GPUs in use; no room; docs/simulate.md, Counters):"
        )
        for name, c in causes:
            out.append(f"  {name}: " + "; ".join(f"{k} {v}" for k, v in c["all"].items()))
    for r in run.results:
        if r.snapshot is not None:
            snap = r.snapshot
            said = "proposed a change" if snap["proposed"] else "proposed no change"
            out.append(
                f"snapshot at {snap['at']} ({snap['afterSeconds']} s in): migc recommend's inputs in "
                f"{snap['directory']}; the decision there {said} (decision.json)"
            )
    return "\n".join(out) + "\n"


def _fill_text(run: Fill) -> str:
    doc = run.to_dict()
    lines = [
        f"trace {run.trace}: FGD fill protocol, seed {run.seed}; {run.nodes} x {run.gpus_per_node} "
        f"{run.gpu_model}; {run.requests} requests for {doc['requestedGpus']} GPUs; "
        f"MIG rounding ceiling {doc['migRoundingCeiling']}",
        "",
        f"{'policy':<14}{'placed':>8}{'failed':>8}{'allocated GPUs':>16}{'ratio':>8}",
    ]
    for r in run.results:
        lines.append(
            f"{r.policy:<14}{r.placed:>8}{r.failed:>8}{round(r.allocated_share, 4):>16}{round(r.ratio, 4):>8}"
        )
    return "\n".join(lines) + "\n"


def to_text(run: Replay | Fill) -> str:
    """The table for a terminal: per baseline (replay) or per packing policy (fill)."""
    return _replay_text(run) if isinstance(run, Replay) else _fill_text(run)


def to_json(run: Replay | Fill) -> str:
    return json.dumps(run.to_dict(), indent=2, sort_keys=True) + "\n"


Format = Callable[[Replay | Fill], str]
FORMATS: Mapping[str, Format] = {"text": to_text, "json": to_json}
