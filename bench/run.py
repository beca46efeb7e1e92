"""``python -m bench``: runs M1–M4, prints tables, optionally writes them to a Markdown file.

Never asserts on time. Structural facts that must hold (migc's gap to the optimum is 0, every
layout it picks is feasible, no baseline beats the optimum) are reported as ``CHECK FAILED`` lines
and make the exit status 1, so a broken solver cannot hide behind a table.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import baselines, harness, openb, scale, startup, synthetic
from bench.demand import TIERS, Pod, profile_counts, whole_gpus
from bench.geometry import Geometry, geometry
from bench.optimum import (
    Measure,
    Served,
    max_served,
    measure_pods,
    measure_slices,
    min_disruption,
    min_gpus,
    pareto_gain,
    served_of,
)
from compiler.catalog import GpuModel, load_catalog

# --- configuration -------------------------------------------------------------------------------


# The most tenants a policy may have (compiler/validate/rules/limits.py MAX_TENANTS, MIGC144): a larger
# generated policy is refused before anything is timed.
M5_TENANTS = 1_000


@dataclass(frozen=True)
class Config:
    name: str
    models: tuple[str, ...] = ("A100-SXM4-80GB", "H100-80GB")
    mixes: tuple[str, ...] = tuple(synthetic.MIXES)
    synth_sizes: tuple[int, ...] = (200,)
    synth_seeds: tuple[int, ...] = (1,)
    openb_first: tuple[int, ...] = (500,)
    openb_windows: tuple[int, ...] = (300,)
    openb_window_seeds: tuple[int, ...] = (1,)
    m2_fractions: tuple[float, ...] = (0.6,)
    m2_size: int = 300
    m3_small_seeds: tuple[int, ...] = (1, 2)
    m3_small_shifts: tuple[float, ...] = (30.0, 60.0, 100.0)
    m3_shifts: tuple[float, ...] = (10.0, 30.0)
    m3_large_size: int = 1000
    m3_windows: tuple[int, int, int] = (300, 75, 3)  # window pods, step, count
    m4_sizes: tuple[int, ...] = (1000, 10000)
    m4_repeats: int = 1
    startup_repeats: int = 5
    m4_tenants: int = scale.TENANTS
    # M5: (GPUs, tenants, workloads pinned to one pool, solver time limit s); at most M5_TENANTS
    m5_cases: tuple[tuple[int, int, bool, float], ...] = (
        (40000, M5_TENANTS, True, 60.0),
        (40000, M5_TENANTS, False, 10.0),
    )
    trace: str = openb.DEFAULT_TRACE


QUICK = Config(name="quick")
TINY = Config(
    name="tiny (smoke test: every section end to end in seconds, numbers meaningless)",
    synth_sizes=(30,),
    synth_seeds=(1,),
    openb_first=(40,),
    openb_windows=(30,),
    openb_window_seeds=(3,),
    m2_fractions=(0.5,),
    m2_size=40,
    m3_small_seeds=(1,),
    m3_small_shifts=(100.0,),
    m3_shifts=(30.0,),
    m3_large_size=60,
    m3_windows=(40, 10, 2),
    m4_sizes=(96,),
    m4_tenants=12,
    m5_cases=((96, 12, False, 5.0),),
    startup_repeats=1,
)
FULL = Config(
    name="full",
    synth_sizes=(100, 1000, 10000),
    synth_seeds=(1, 2, 3),
    openb_first=(100, 1000, 7064),
    openb_windows=(500,),
    openb_window_seeds=(1, 2, 3, 4, 5),
    m2_fractions=(0.5, 0.8),
    m2_size=2000,
    m3_small_seeds=(1, 2, 3, 4, 5),
    m3_small_shifts=(10.0, 30.0, 60.0, 100.0),
    m3_shifts=(5.0, 10.0, 30.0, 50.0),
    m3_large_size=5000,
    m3_windows=(1000, 100, 6),
    m4_sizes=(1000, 10000, 80000),
    m4_repeats=3,
    m5_cases=(
        (40000, M5_TENANTS, True, 60.0),
        (40000, M5_TENANTS, False, 60.0),
        (40000, M5_TENANTS, False, 10.0),
    ),
)


@dataclass
class Checks:
    failed: list[str] = field(default_factory=list)

    def expect(self, ok: bool, what: str) -> None:
        if not ok:
            self.failed.append(what)


# --- formatting ----------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown pipe table, column-aligned so it reads in a terminal too."""
    cells = [[str(h) for h in headers], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), sep, *[line(r) for r in cells[1:]]])


def ratio(value: float, best: float) -> str:
    if best <= 0:
        return "n/a"
    return f"{value / best:.3f}"


def geq(served: Served, unit: float = 7.0) -> str:
    """Served measure per tier (critical/high/low): GPU-equivalents of compute slices, or pods (unit 1)."""
    digits = 1 if unit != 1.0 else 0
    return "/".join(f"{v / unit:.{digits}f}" for _, v in served.measure)


def score(served: Served) -> float:
    """Priority-weighted served demand: Σ tier value × measure served in that tier."""
    values = dict(TIERS)
    return sum(values[t] * v for t, v in served.measure)


# --- M1 ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class M1Row:
    instance: str
    model: str
    pods: int
    lp_bound: float
    optimum: int
    migc: int | None
    migc_proved: bool | None
    migc_seconds: float | None
    balanced: int
    whole: int
    greedy: int


def m1_instances(
    cfg: Config, geo: Geometry, mappings: Sequence[openb.Mapping]
) -> list[tuple[str, list[Pod]]]:
    out: list[tuple[str, list[Pod]]] = []
    for mix in cfg.mixes:
        for n in cfg.synth_sizes:
            for seed in cfg.synth_seeds:
                out.append((f"synthetic {mix} n={n} s={seed}", synthetic.generate(geo, mix, n, seed)))
    if openb.available(cfg.trace):
        trace = openb.load_trace(cfg.trace)
        for mapping in mappings:
            for n in cfg.openb_first:
                out.append(
                    (f"openb/{mapping} first {n}", openb.to_pods(geo, openb.first_n(trace, n), mapping))
                )
            for n in cfg.openb_windows:
                for seed in cfg.openb_window_seeds:
                    window = openb.random_window(trace, n, seed)
                    out.append((f"openb/{mapping} window {n} s={seed}", openb.to_pods(geo, window, mapping)))
        # whole-GPU pods are three quarters of the trace and pack trivially; without them the
        # ratios show packing quality alone
        fractional = openb.fractional(trace)
        for mapping in mappings:
            for n in cfg.openb_first:
                pods = openb.to_pods(geo, openb.first_n(fractional, n), mapping)
                out.append((f"openb-fractional/{mapping} first {min(n, len(fractional))}", pods))
    return out


def fleet_nodes(pods: Sequence[Pod], per_node: int = 8) -> int:
    """Nodes enough for one whole GPU per pod: a fleet that never limits the M1 optimum."""
    return max(1, math.ceil(baselines.whole_per_pod_gpus(pods) / per_node))


def run_m1(
    cfg: Config, models: Sequence[GpuModel], mappings: Sequence[openb.Mapping], checks: Checks, use_migc: bool
) -> list[M1Row]:
    catalog = load_catalog()
    rows: list[M1Row] = []
    for model in models:
        geo = geometry(model)
        feasible = baselines.layout_feasibility(geo)
        for label, pods in m1_instances(cfg, geo, mappings):
            opt = min_gpus(geo, pods)
            checks.expect(opt.optimal, f"M1 {label} {model.model}: reference MILP not proved optimal")
            bal = baselines.balanced_gpus(geo, pods)
            whole = baselines.whole_per_pod_gpus(pods)
            greedy = baselines.greedy_gpus(geo, pods, feasible)
            for name, v in (("all-balanced", bal), ("whole-gpu", whole), ("greedy-ff", greedy)):
                checks.expect(
                    v >= opt.gpus, f"M1 {label} {model.model}: {name} {v} beats the optimum {opt.gpus}"
                )
            migc: int | None = None
            proved: bool | None = None
            seconds: float | None = None
            if use_migc:
                policy = harness.build_policy(model, pods, fleet_nodes(pods))
                rb = harness.read_back(geo, harness.solve(policy, catalog), policy)
                migc, proved, seconds = rb.gpus_used, rb.optimal, rb.seconds
                checks.expect(
                    rb.unmet == 0, f"M1 {label} {model.model}: migc left {rb.unmet} unmet on an ample fleet"
                )
                checks.expect(
                    rb.infeasible_layouts == 0,
                    f"M1 {label} {model.model}: migc chose {rb.infeasible_layouts} infeasible layouts",
                )
                checks.expect(
                    migc == opt.gpus, f"M1 {label} {model.model}: migc {migc} GPUs, optimum {opt.gpus}"
                )
                checks.expect(
                    rb.solver_gpus_used == migc,
                    f"M1 {label} {model.model}: migc says {rb.solver_gpus_used} GPUs, bench counts {migc}",
                )
                checks.expect(
                    rb.lp_bound <= migc + 1e-6,
                    f"M1 {label} {model.model}: migc's lower bound {rb.lp_bound} exceeds its answer {migc}",
                )
            rows.append(
                M1Row(
                    label,
                    model.model,
                    len(pods),
                    opt.lp_bound,
                    opt.gpus,
                    migc,
                    proved,
                    seconds,
                    bal,
                    whole,
                    greedy,
                )
            )
    return rows


def render_m1(rows: Sequence[M1Row]) -> str:
    body = [
        (
            r.instance,
            r.model,
            r.pods,
            f"{r.lp_bound:.2f}",
            r.optimum,
            "n/a" if r.migc is None else r.migc,
            "n/a" if r.migc is None else r.migc - r.optimum,
            "n/a" if r.migc_proved is None else ("yes" if r.migc_proved else "NO"),
            "n/a" if r.migc_seconds is None else f"{r.migc_seconds:.2f}",
            f"{r.balanced} ({ratio(r.balanced, r.optimum)})",
            f"{r.whole} ({ratio(r.whole, r.optimum)})",
            f"{r.greedy} ({ratio(r.greedy, r.optimum)})",
        )
        for r in rows
    ]
    headers = (
        "instance",
        "model",
        "pods",
        "LP bound",
        "optimum",
        "migc",
        "gap",
        "migc proved",
        "migc solve s",
        "all-balanced (×opt)",
        "whole-gpu (×opt)",
        "greedy-ff (×opt)",
    )
    out = [table(headers, body), ""]
    if rows:
        gaps = [r.migc - r.optimum for r in rows if r.migc is not None]
        out.append(
            f"migc gap to the optimum: max {max(gaps)} GPUs over {len(gaps)} instances"
            if gaps
            else "migc gap to the optimum: not measured (solver not available)"
        )
        columns: tuple[tuple[str, Callable[[M1Row], int]], ...] = (
            ("all-balanced", lambda r: r.balanced),
            ("whole-gpu", lambda r: r.whole),
            ("greedy-ff", lambda r: r.greedy),
        )
        families = sorted({_family(r.instance) for r in rows})
        summary = []
        for fam in families:
            cells: list[str] = [fam]
            for _, get in columns:
                rs = [get(r) / r.optimum for r in rows if r.optimum > 0 and _family(r.instance) == fam]
                cells.append(f"{sum(rs) / len(rs):.3f} / {max(rs):.3f}" if rs else "n/a")
            summary.append(cells)
        out += ["", "Baseline GPUs / optimum, mean / max per instance family:", ""]
        out.append(table(("family", *(name for name, _ in columns)), summary))
    return "\n".join(out)


def _family(instance: str) -> str:
    """``synthetic <mix>`` or ``openb/<mapping>``: the instance label without size and seed."""
    parts = instance.split()
    return " ".join(parts[:2]) if parts[0] == "synthetic" else parts[0]


# --- M2 ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class M2Row:
    instance: str
    model: str
    fleet: int
    demand: Served
    optimum: Served
    migc: Served | None
    balanced: Served
    whole: Served
    greedy: Served
    # migc's first short tier (None: every tier served in full) and the replicas it could still
    # gain there without any workload of it or above losing one (0: Pareto-efficient)
    short_tier: str | None = None
    pareto_gain: int = 0
    migc_seconds: float = 0.0  # wall time of migc's solve (the fairness levels included)


def first_short_tier(s: Served, demand: Served) -> str | None:
    """The highest tier ``s`` serves less of than is asked (pods), or None."""
    for (tier, got), (_, asked) in zip(s.pods, demand.pods, strict=True):
        if got < asked:
            return tier
    return None


def check_migc_m2(label: str, migc: Served, opt: Served, demand: Served, gain: int, checks: Checks) -> None:
    """What holds under migc's rule (fairness inside a short tier, compiler/solve/milp.py level 1):
    every tier the optimum serves in full, migc serves in full; in the first tier the optimum
    cannot serve in full, migc serves no more than the optimum's measure and leaves no replica
    that a workload of the tier could still get without another losing one (``pareto_gain``).
    The tiers below are not comparable (the rule's split of the short tier leaves them other room)."""
    for (tier, o), (_, m), (_, d) in zip(opt.measure, migc.measure, demand.measure, strict=True):
        if o >= d - 1e-6:
            checks.expect(
                m >= d - 1e-6, f"M2 {label}: migc leaves tier {tier} short, the optimum serves it in full"
            )
            continue
        checks.expect(m <= o + 1e-6, f"M2 {label}: migc serves {m:g} in tier {tier}, above the optimum {o:g}")
        checks.expect(gain == 0, f"M2 {label}: migc's tier {tier} could still serve {gain} more (not Pareto)")
        return


def run_m2(
    cfg: Config,
    models: Sequence[GpuModel],
    mappings: Sequence[openb.Mapping],
    checks: Checks,
    use_migc: bool,
    measure: Measure,
) -> list[M2Row]:
    catalog = load_catalog()
    rows: list[M2Row] = []
    model = models[0]
    geo = geometry(model)
    feasible = baselines.layout_feasibility(geo)
    cases: list[tuple[str, list[Pod]]] = [
        (f"synthetic {mix} n={cfg.m2_size}", synthetic.generate(geo, mix, cfg.m2_size, 7))
        for mix in cfg.mixes
    ]
    if openb.available(cfg.trace):
        trace = openb.load_trace(cfg.trace)
        for mapping in mappings:
            cases.append(
                (
                    f"openb/{mapping} first {cfg.m2_size}",
                    openb.to_pods(geo, openb.first_n(trace, cfg.m2_size), mapping),
                )
            )
    for label, pods in cases:
        need = min_gpus(geo, pods).gpus
        for frac in cfg.m2_fractions:
            fleet = max(8, 8 * math.floor(frac * need / 8))
            opt = max_served(geo, pods, fleet, measure)
            demand = served_of(geo, pods, measure)
            checks.expect(opt.optimal, f"M2 {label}: reference MILP not proved optimal")
            bal = served_of(geo, baselines.balanced_served(geo, pods, fleet), measure)
            whole = served_of(geo, baselines.whole_per_pod_served(pods, fleet), measure)
            greedy = served_of(geo, baselines.greedy_served(geo, pods, fleet, feasible), measure)
            for name, s in (("all-balanced", bal), ("whole-gpu", whole), ("greedy-ff", greedy)):
                checks.expect(s.key() <= opt.key(), f"M2 {label} fleet {fleet}: {name} beats the optimum")
            migc: Served | None = None
            short: str | None = None
            gain = 0
            seconds = 0.0
            if use_migc:
                policy = harness.build_policy(model, pods, fleet // 8)
                started = time.perf_counter()
                solution = harness.solve(policy, catalog)
                seconds = time.perf_counter() - started
                rb = harness.read_back(geo, solution, policy)
                migc = served_of(geo, rb.served, measure)
                checks.expect(rb.infeasible_layouts == 0, f"M2 {label}: migc chose infeasible layouts")
                short = first_short_tier(migc, demand)
                if short is not None:
                    gain = pareto_gain(geo, pods, rb.served, fleet, short)
                check_migc_m2(f"{label} fleet {fleet}", migc, opt, demand, gain, checks)
            rows.append(
                M2Row(
                    f"{label} ({frac:.0%} of opt)",
                    model.model,
                    fleet,
                    demand,
                    opt,
                    migc,
                    bal,
                    whole,
                    greedy,
                    short,
                    gain,
                    seconds,
                )
            )
    return rows


def tier_share(s: Served, opt: Served) -> str:
    """Served in each tier as a percentage of the optimum's (— where the optimum serves nothing)."""
    return "/".join(
        "—" if o <= 0 else f"{100 * v / o:.0f}" for (_, v), (_, o) in zip(s.measure, opt.measure, strict=True)
    )


def slice_share(s: Served, demand: Served) -> str:
    """Compute slices served in each tier as a percentage of the slices the tier asks for."""
    return "/".join(
        "—" if d <= 0 else f"{100 * v / d:.0f}"
        for (_, v), (_, d) in zip(s.slices, demand.slices, strict=True)
    )


def _pods(s: Served) -> str:
    return "/".join(str(v) for _, v in s.pods)


def _rounded(key: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(round(v, 6) for v in key)


def render_m2(rows: Sequence[M2Row], measure_name: str) -> str:
    unit = 7.0 if measure_name == "slices" else 1.0

    def cell(s: Served | None, opt: Served) -> str:
        if s is None:
            return "n/a"
        return f"{geq(s, unit)} ({tier_share(s, opt)}%)"

    def rule(s: Served | None, demand: Served) -> str:
        if s is None:
            return "n/a"
        return f"{_pods(s)} ({slice_share(s, demand)}%)"

    body = [
        (
            r.instance,
            r.fleet,
            f"{_pods(r.demand)} ({'/'.join(f'{v:g}' for _, v in r.demand.slices)})",
            rule(r.optimum, r.demand),
            rule(r.migc, r.demand),
            "n/a" if r.migc is None else f"{r.migc_seconds:.1f}",
            "n/a"
            if r.migc is None
            else ("—" if r.short_tier is None else f"{r.short_tier}: {r.pareto_gain}"),
            cell(r.balanced, r.optimum),
            cell(r.whole, r.optimum),
            cell(r.greedy, r.optimum),
        )
        for r in rows
    ]
    what = "GPU-equivalents (compute slices / 7)" if measure_name == "slices" else "pods"
    first = "slices" if measure_name == "slices" else "pods"
    headers = (
        "instance",
        "fleet GPUs",
        "demand pods c/h/l (slices)",
        f"{first}-first optimum: pods (slice share %)",
        "migc, leximin in a short tier: pods (slice share %)",
        "migc solve s",
        "migc's short tier: replicas still gainable",
        f"all-balanced, {what} (% of opt)",
        "whole-gpu",
        "greedy-ff",
    )
    summary = []
    for name, get in (("all-balanced", "balanced"), ("whole-gpu", "whole"), ("greedy-ff", "greedy")):
        worse = sum(1 for r in rows if _rounded(getattr(r, get).key()) < _rounded(r.optimum.key()))
        summary.append(f"{name}: below the lexicographic optimum on {worse} of {len(rows)} instances")
    priced = [r for r in rows if r.migc is not None and r.short_tier is not None]
    if priced:
        pods = sum(dict(r.migc.pods)[r.short_tier] for r in priced if r.migc and r.short_tier)
        opt_pods = sum(dict(r.optimum.pods)[r.short_tier] for r in priced if r.short_tier)
        sl = sum(dict(r.migc.slices)[r.short_tier] for r in priced if r.migc and r.short_tier)
        opt_sl = sum(dict(r.optimum.slices)[r.short_tier] for r in priced if r.short_tier)
        summary.append(
            f"migc's first short tier, summed over the {len(priced)} instances that have one: "
            f"{pods} pods vs {opt_pods} under {first}-first, {sl:g} vs {opt_sl:g} compute slices"
        )
    return "\n".join(
        [
            "Per tier critical/high/low: pods served and, in brackets, the compute slices served as % "
            f"of those the tier asks for. The {first}-first optimum maximises each tier's {first} with "
            "the tiers above fixed"
            + (
                " (its slice share: the most slices among the points serving the most pods)"
                if first == "pods"
                else ""
            )
            + "; migc shares a tier it cannot serve in full by its fairness rule (leximin on each "
            "workload's served fraction, then replicas), so from its first short tier down the two differ "
            "by design. 'Still gainable': replicas migc's first short tier could gain on the fleet with no "
            "workload of it or above losing one (0 = Pareto-efficient; the bench's own model). Baselines: "
            f"{what} per tier, in brackets % of the optimum's.",
            "",
            table(headers, body),
            "",
            *summary,
        ]
    )


# --- M3 ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class M3Row:
    case: str
    gpus_before: int
    gpus_after: int
    migc: tuple[int, int]
    minimum: tuple[int, int] | None  # exhaustive, small cases only
    scratch: tuple[int, int]


def _small_demand(geo: Geometry, seed: int, target: int, mix: str = "inference") -> list[Pod]:
    """The smallest synthetic demand of ``mix`` whose optimum needs ``target`` GPUs."""
    n = 2
    while True:
        pods = synthetic.generate(geo, mix, n, seed, tenants=3)
        if min_gpus(geo, pods).gpus >= target:
            return pods
        n += 1


def run_m3(
    cfg: Config, models: Sequence[GpuModel], mappings: Sequence[openb.Mapping], checks: Checks, use_migc: bool
) -> list[M3Row]:
    if not use_migc:
        return []
    catalog = load_catalog()
    model = models[0]
    geo = geometry(model)
    rows: list[M3Row] = []

    def step(label: str, before: list[Pod], after: list[Pod], nodes: int, per_node: int, exact: bool) -> None:
        p1 = harness.build_policy(model, before, nodes, per_node)
        s1 = harness.solve(p1, catalog)
        state1 = harness.node_states(s1.pool(harness.CLUSTER, harness.POOL))
        # fewest GPUs before least change, the order the exhaustive minimum below assumes (the
        # default puts disruption first; bench.orders compares the two orders on these cases)
        p2 = harness.build_policy(model, after, nodes, per_node)
        p2 = replace(p2, partition=replace(p2.partition, objective=("gpus", "disruption", "preference")))
        s2 = harness.solve(p2, catalog, harness.current_state(s1))
        rb2 = harness.read_back(geo, s2, p2)
        s3 = harness.solve(p2, catalog)
        migc = harness.changes(state1, rb2.nodes)
        pool2 = s2.pool(harness.CLUSTER, harness.POOL)
        reported = (sum(1 for n in pool2.nodes if n.changed), sum(len(n.changed_gpus) for n in pool2.nodes))
        checks.expect(reported == migc, f"M3 {label}: migc reports {reported} changes, bench counts {migc}")
        scratch = harness.changes(state1, harness.node_states(s3.pool(harness.CLUSTER, harness.POOL)))
        opt2 = min_gpus(geo, after).gpus
        minimum = None
        if exact:
            d = min_disruption(
                geo, [list(g) for _, g in state1], profile_counts(after), whole_gpus(after), opt2
            )
            minimum = (d.nodes, d.gpus) if d.found else None
            checks.expect(d.found, f"M3 {label}: no exhaustive solution within {opt2} GPUs")
            if minimum is not None:
                checks.expect(
                    migc == minimum, f"M3 {label}: migc touched {migc} (nodes, GPUs), minimum is {minimum}"
                )
        if before == after:
            checks.expect(migc == (0, 0), f"M3 {label}: unchanged demand changed {migc}")
        checks.expect(rb2.unmet == 0, f"M3 {label}: migc left {rb2.unmet} unmet on an ample fleet")
        # fewest GPUs comes before least change in migc's objective order
        checks.expect(rb2.gpus_used == opt2, f"M3 {label}: migc used {rb2.gpus_used} GPUs, optimum {opt2}")
        gpus1 = harness.read_back(geo, s1, p1).gpus_used
        rows.append(M3Row(label, gpus1, rb2.gpus_used, migc, minimum, scratch))

    # small cases, exact minimum by exhaustive search: 3 nodes × 4 GPUs
    for seed in cfg.m3_small_seeds:
        before = _small_demand(geo, seed, 7)
        step(f"small s={seed} unchanged", before, before, 3, 4, True)
        for pct in cfg.m3_small_shifts:
            after = synthetic.shift(before, pct, seed)
            if min_gpus(geo, after).gpus <= 12:
                step(f"small s={seed} ±{pct:.0f}%", before, after, 3, 4, True)
        # a different mix altogether: most layouts must change
        other = _small_demand(geo, seed, 7, "balanced-shaped")
        step(f"small s={seed} inference→balanced-shaped mix", before, other, 3, 4, True)
    # larger synthetic shifts: migc vs re-solving from scratch
    for mix in cfg.mixes[:2]:
        before = synthetic.generate(geo, mix, cfg.m3_large_size, 11)
        for pct in cfg.m3_shifts:
            after = synthetic.shift(before, pct, 11)
            nodes = fleet_nodes(before + after)
            step(f"synthetic {mix} n={cfg.m3_large_size} ±{pct:.0f}%", before, after, nodes, 8, False)
    # consecutive windows of the openb trace by creation time
    if openb.available(cfg.trace):
        trace = openb.load_trace(cfg.trace)
        n, stride, count = cfg.m3_windows
        for mapping in mappings:
            windows = [openb.to_pods(geo, w, mapping) for w in openb.sliding_windows(trace, n, stride, count)]
            nodes = max(fleet_nodes(w) for w in windows)
            for i in range(1, len(windows)):
                step(
                    f"openb/{mapping} window {i - 1}→{i} ({n} pods, step {stride})",
                    windows[i - 1],
                    windows[i],
                    nodes,
                    8,
                    False,
                )
    return rows


def render_m3(rows: Sequence[M3Row]) -> str:
    def pair(p: tuple[int, int] | None) -> str:
        return "n/a" if p is None else f"{p[0]} / {p[1]}"

    body = [
        (r.case, f"{r.gpus_before}→{r.gpus_after}", pair(r.migc), pair(r.minimum), pair(r.scratch))
        for r in rows
    ]
    headers = ("case", "GPUs used", "migc nodes / GPUs changed", "exact minimum", "re-solve from scratch")
    if not rows:
        return "not measured (solver not available)"
    exact = [r for r in rows if r.minimum is not None]
    same = sum(1 for r in exact if r.migc == r.minimum)
    shifted = [r for r in rows if "unchanged" not in r.case]
    lines = [
        table(headers, body),
        "",
        f"migc equals the exhaustive minimum on {same} of {len(exact)} small cases.",
        f"Over the {len(shifted)} shifted cases: migc touched {sum(r.migc[0] for r in shifted)} nodes and "
        f"changed {sum(r.migc[1] for r in shifted)} GPUs in total; re-solving from scratch touched "
        f"{sum(r.scratch[0] for r in shifted)} nodes and changed {sum(r.scratch[1] for r in shifted)} GPUs.",
    ]
    return "\n".join(lines)


# --- M4 ------------------------------------------------------------------------------------------


def run_m4(cfg: Config, use_migc: bool) -> list[dict[str, Any]]:
    if not use_migc:
        return []
    out = []
    with tempfile.TemporaryDirectory(prefix="migc-bench-") as tmp:
        for size in cfg.m4_sizes:
            out.append(scale.run_size(size, Path(tmp), cfg.m4_repeats, cfg.m4_tenants))
    return out


def render_m4(results: Sequence[dict[str, Any]]) -> str:
    if not results:
        return "not measured (solver not available)"
    body = []
    prev: dict[str, Any] | None = None
    for r in results:
        if "error" in r:
            body.append((r.get("gpus", "?"), "error: " + str(r["error"]), "", "", "", "", "", "", ""))
            prev = None
            continue
        growth = "—"
        if prev is not None:
            t_ratio = r["total_s"] / max(1e-9, prev["total_s"])
            s_ratio = r["solve_s"] / max(1e-9, prev["solve_s"])
            growth = (
                f"×{r['gpus'] / prev['gpus']:.0f} GPUs: total ×{t_ratio:.2f}, solve+assign ×{s_ratio:.2f}"
            )
        body.append(
            (
                r["gpus"],
                r["nodes"],
                r["workloads"],
                f"{r['gpus_used']} ({'optimal' if r['optimal'] else 'NOT proved'}, unmet {r['unmet']})",
                f"{r['validate_s']:.2f} ({r['yaml_s']:.2f})",
                f"{r['solve_s']:.2f}",
                f"{r['total_s']:.2f}"
                + (f" (runs: {', '.join(map(str, r['total_s_all']))})" if r["runs"] > 1 else ""),
                f"{r['peak_rss_mb']:.0f} ({r['rss_before_mb']:.0f})",
                growth,
            )
        )
        prev = r
    via = {str(r.get("validated_by")) for r in results if "validated_by" in r}
    headers = (
        "GPUs",
        "nodes",
        "workloads",
        "GPUs used",
        "load+validate s (YAML parse alone)",
        "solve+assign s",
        "total s (best of runs)",
        "peak RSS MB (at start)",
        "growth vs previous size",
    )
    return "\n".join([table(headers, body), "", "Policy read by: " + ", ".join(sorted(via))])


# --- M5 ------------------------------------------------------------------------------------------


def run_m5(cfg: Config, use_migc: bool) -> list[dict[str, Any]]:
    if not use_migc:
        return []
    out = []
    with tempfile.TemporaryDirectory(prefix="migc-bench-") as tmp:
        for gpus, tenants, pinned, limit in cfg.m5_cases:
            r = scale.run_size(
                gpus, Path(tmp), 1, tenants, timeout=limit + 600, pinned=pinned, time_limit_s=limit
            )
            r.update(tenants=tenants, pinned=pinned, limit=limit)
            out.append(r)
    return out


def render_m5(results: Sequence[dict[str, Any]], checks: Checks) -> str:
    if not results:
        return "not measured (solver not available)"
    body = []
    for r in results:
        shape = f"{r['gpus'] // scale.GPUS_PER_NODE} nodes, {r['tenants']} tenants, " + (
            "each workload pinned to one pool" if r["pinned"] else "workloads on any pool"
        )
        if "error" in r:
            body.append((shape, f"{r['limit']:g}", "error: " + str(r["error"]), "", "", ""))
            checks.expect(False, f"M5 {shape}: {r['error']}")
            continue
        over = r["solve_s"] - r["limit"]
        checks.expect(over < 10.0, f"M5 {shape}: solve took {r['solve_s']:.1f} s on a {r['limit']:g} s limit")
        unproven = "; ".join(r["unproven"]) or "— (every level proven)"
        body.append(
            (
                shape,
                f"{r['limit']:g}",
                f"{r['solve_s']:.2f}",
                f"{r['gpus_used']} (unmet {r['unmet']})",
                f"{r['validate_s']:.2f}",
                unproven,
            )
        )
    headers = ("shape", "time limit s", "solve+assign s", "GPUs used", "load+validate s", "MIGC203")
    return table(headers, body)


# --- driver --------------------------------------------------------------------------------------


def run_startup(cfg: Config, checks: Checks) -> str:
    rows = startup.run(cfg.startup_repeats)
    for r in rows:
        if r.error:
            checks.failed.append(f"S: `{r.command}` failed: {r.error}")
    return startup.render(rows)


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            cwd=root,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_state(root: Path | None = None) -> str:
    """The commit measured and whether the tree differed from it: ``abc1234``, ``abc1234 + uncommitted
    changes to 3 files (bench/run.py, ...)``, or ``unknown (not a git checkout)``."""
    root = root or Path(__file__).resolve().parents[1]
    head = _git(root, "rev-parse", "--short", "HEAD")
    if head is None or not head.strip():
        return "unknown (not a git checkout)"
    status = _git(root, "status", "--porcelain", "--untracked-files=normal")
    if status is None:
        return f"{head.strip()} (working-tree state unknown)"
    changed = sorted({line[3:].strip() for line in status.splitlines() if line.strip()})
    if not changed:
        return f"{head.strip()} (clean working tree)"
    shown = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
    files = "file" if len(changed) == 1 else "files"
    return f"{head.strip()} + uncommitted changes to {len(changed)} {files} ({shown})"


def machine_facts() -> list[str]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    from importlib.metadata import version

    commit = git_state()
    return [
        f"- CPU: {cpu}, {os.cpu_count()} logical CPUs (shared with other work while measuring)",
        f"- memory: {mem}",
        f"- OS: {platform.platform()}",
        f"- Python {platform.python_version()}, highspy {version('highspy')}",
        f"- git commit: {commit}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="small instances, about a minute (default)")
    mode.add_argument(
        "--full", action="store_true", help="every instance class and size, about a minute or two"
    )
    mode.add_argument("--tiny", action="store_true", help="seconds; for the smoke test, numbers meaningless")
    ap.add_argument(
        "--mapping",
        choices=("compute", "memory", "both"),
        default="both",
        help="how openb fractional pods become MIG profiles",
    )
    ap.add_argument(
        "--measure",
        choices=("pods", "slices"),
        default="pods",
        help="M2: what 'demand served' counts within a tier (migc maximises pods served per tier)",
    )
    ap.add_argument(
        "--only",
        default="M1,M2,M3,M4,M5,S",
        help="comma-separated subset of M1,M2,M3,M4,M5,S (CLI startup)",
    )
    ap.add_argument(
        "--models",
        help="comma-separated catalog models for M1 (the first one also for M2/M3); "
        "default A100-SXM4-80GB,H100-80GB",
    )
    ap.add_argument(
        "--trace",
        default=openb.DEFAULT_TRACE,
        help="openb pod list under <shared>/data/openb/, e.g. openb_pod_list_gpushare40.csv",
    )
    ap.add_argument("--results", type=Path, help="also write the tables to this Markdown file")
    args = ap.parse_args(argv)
    cfg = FULL if args.full else TINY if args.tiny else QUICK
    catalog = load_catalog()
    if args.models:
        names = tuple(n.strip() for n in args.models.split(",") if n.strip())
        known = sorted(m.model for m in catalog.models if m.mig_capable)
        unknown = [n for n in names if n not in known]
        if unknown or not names:
            ap.error(
                f"unknown MIG model(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}"
            )
        cfg = replace(cfg, models=names)
    cfg = replace(cfg, trace=args.trace)
    only = {s.strip().upper() for s in args.only.split(",")}
    mappings: tuple[openb.Mapping, ...] = openb.MAPPINGS if args.mapping == "both" else (args.mapping,)
    models = [m for name in cfg.models if (m := catalog.get(name)) is not None]
    use_migc = harness.solver_available()
    measure: Measure = measure_slices if args.measure == "slices" else measure_pods
    checks = Checks()
    command = "python -m bench " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    started = time.perf_counter()
    trace_note = (
        f"found at {openb.trace_path(cfg.trace)}" if openb.available(cfg.trace) else "NOT FOUND (skipped)"
    )
    solver_note = "compiler.solve.solve" if use_migc else "NOT AVAILABLE: only references and baselines ran"
    doc: list[str] = [
        "# migc benchmark results",
        "",
        f"Produced by `{command.strip()}` (mode: {cfg.name}).",
        "",
        *machine_facts(),
        f"- openb trace: {trace_note}",
        f"- migc solver: {solver_note}",
        "",
    ]
    print("\n".join(doc), flush=True)

    def section(title: str, intro: str, produce: Callable[[], str]) -> None:
        t0 = time.perf_counter()
        body = produce()
        text = f"## {title}\n\n{intro}\n\n{body}\n\n(section took {time.perf_counter() - t0:.1f} s)\n"
        print(text, flush=True)
        doc.append(text)

    if "M1" in only:
        section(
            "M1: GPUs used vs the proven optimum and the baselines",
            "Optimum: the bench's own cutting-stock MILP (HiGHS, zero gap tolerance, proved optimal) over "
            "layouts it enumerates itself; LP bound: its relaxation. Every fleet is large enough to serve "
            "everything; `gap` = migc − optimum.",
            lambda: render_m1(run_m1(cfg, models, mappings, checks, use_migc)),
        )
    if "M2" in only:
        section(
            "M2: priority-weighted demand served on a fleet smaller than the demand",
            f"Fleet: a fraction of the M1 optimum, in whole 8-GPU nodes, {models[0].model}. Optimum: "
            f"lexicographic MILP, each tier maximised with the tiers above fixed (measure: {args.measure}). "
            "Baselines admit pods in priority order.",
            lambda: render_m2(run_m2(cfg, models, mappings, checks, use_migc, measure), args.measure),
        )
    if "M3" in only:
        section(
            "M3: disruption when demand shifts",
            "Nodes touched / GPUs whose layout changes, between migc's previous answer and (a) migc given "
            "that answer as `current` and objective `[gpus, disruption, preference]`, "
            "(b) the exhaustive minimum within the optimal GPU count (small cases: "
            "3 nodes × 4 GPUs), (c) migc re-solving from scratch without `current`. Shifts are ±x% per "
            "(tenant, profile) group; openb windows slide by creation time.",
            lambda: render_m3(run_m3(cfg, models, mappings, checks, use_migc)),
        )
    if "M4" in only:
        section(
            "M4: validate + solve + assign at scale",
            f"{cfg.m4_tenants} tenants × {scale.WORKLOADS_PER_TENANT} workloads, "
            f"{len(scale.MODELS)} GPU models "
            f"({', '.join(scale.MODELS)}), {scale.GPUS_PER_NODE} GPUs per node, demand ≈ "
            f"{scale.FILL:.0%} of the fleet's compute slices; YAML written to a temp dir, each size measured "
            f"in a fresh subprocess, best of {cfg.m4_repeats} (wall time; peak resident memory as VmHWM, "
            "which unlike ru_maxrss is not inherited across exec).",
            lambda: render_m4(run_m4(cfg, use_migc)),
        )
    if "M5" in only:
        section(
            "M5: the solver's time limit at 5,000 named nodes",
            "The M4 fleet generator at 40,000 GPUs (5,000 named nodes in 6 pools) with 1,000 tenants × "
            f"{scale.WORKLOADS_PER_TENANT} workloads; pinned: each workload restricted to one pool (6 small "
            "integer programs), open: any pool offering its profile (one large one). The limit is one "
            "wall-clock budget for every level; solve+assign includes building the model, the greedy "
            "fallback for pools HiGHS did not reach and node assignment. One run each, fresh subprocess.",
            lambda: render_m5(run_m5(cfg, use_migc), checks),
        )
    if "S" in only:
        section(
            "S: CLI startup",
            f"`python -m compiler ARGS` (the `migc` entry point) from the repository root, each run a fresh "
            f"interpreter, best of {cfg.startup_repeats}; CPU = user + system of the child. 'heavy imports' "
            "lists which of the solver, renderer and parser libraries the command loaded.",
            lambda: run_startup(cfg, checks),
        )
    verdict = ["## Checks", ""]
    verdict += [f"- CHECK FAILED: {f}" for f in checks.failed] or ["- all structural checks passed"]
    verdict += ["", f"Total bench time: {time.perf_counter() - started:.0f} s.", ""]
    print("\n".join(verdict), flush=True)
    doc.append("\n".join(verdict))
    if args.results:
        args.results.write_text("\n".join(doc), encoding="utf-8")
    return 1 if checks.failed else 0
