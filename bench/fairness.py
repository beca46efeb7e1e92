"""F1: fairness inside a tier: migc's split of a short tier vs an exhaustive leximin search.

``python -m bench.fairness`` (``--cases N``; ``--tiny`` for the smoke test; ``--scale W,R,G`` times
one larger short tier instead: W workloads of up to R replicas on G GPUs, no oracle)

The rule (compiler/solve/milp.py, level 1): inside a priority tier, across tenants and inside one,
the served fractions (replicas served / asked) of the tier's workloads are maximised leximin --
the smallest as large as possible, then the next -- and only then the tier's replicas served.

Cases: the issue's two (26: five tenants asking 9/7/5/3/1 × 7g.80gb of 8 GPUs, three asking
10/6/2 × 3g.40gb of 8), then small seeded instances: one pool of 1-3 A100-SXM4-80GB GPUs, 3-5
workloads of one tier (one tenant each), each asking for one MIG profile (1g.10gb, 2g.20gb,
3g.40gb or 4g.40gb) with 1-6 replicas, more than the GPUs can hold. The oracle is the bench's own:
it enumerates every valid layout of each GPU (:mod:`bench.geometry`, independent of migc's catalog
code), every served vector ``s`` (0 ≤ s_w ≤ demand_w) whose per-profile totals some choice of
layouts covers, and reports

- leximin: the lexicographically largest sorted vector of fractions s_w / demand_w, and the most
  replicas among the vectors that reach it (what the rule asks of migc);
- most: the most replicas any vector serves (what the rule may give up to be fair);
- max-min at most served: the best smallest fraction among the vectors serving the most
  replicas (the reading before issue 26, when migc maximised replicas first).

migc: ``compiler.solve.solve`` on the same demand (one tenant per workload, tier ``high``), its
served replicas per workload read from the solution, and its wall time.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from bench import harness
from bench.demand import Pod
from bench.geometry import Geometry, Layout, geometry
from compiler.catalog import load_catalog

PROFILES = ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb")
MODEL = "A100-SXM4-80GB"


@dataclass(frozen=True)
class Case:
    seed: int
    gpus: int
    demand: tuple[tuple[str, int], ...]  # per workload: (profile, replicas)
    label: str = ""  # shown instead of the seed (the issue's cases)


ISSUE_CASES = (
    Case(0, 8, tuple(("7g.80gb", k) for k in (9, 7, 5, 3, 1)), "issue 26: 7g"),
    Case(0, 8, tuple(("3g.40gb", k) for k in (10, 6, 2)), "issue 26: 3g"),
)


@dataclass(frozen=True)
class Oracle:
    most: int  # the most replicas any feasible vector serves
    leximin: tuple[Fraction, ...]  # the best sorted vector of served fractions
    served_at_leximin: int  # the most replicas among the vectors reaching ``leximin``
    min_at_most: Fraction  # the best smallest fraction among the vectors serving ``most``
    slices_at_leximin: int = 0  # compute slices of the vector reaching ``leximin`` with the most replicas
    slices_at_most: int = 0  # the most compute slices among the vectors serving ``most`` (pods-first)
    asked_slices: int = 0  # compute slices the whole demand asks for


@dataclass(frozen=True)
class Row:
    case: Case
    oracle: Oracle
    migc_fractions: tuple[Fraction, ...]  # sorted
    migc_served: int
    migc_seconds: float
    migc_slices: int = 0

    @property
    def fair(self) -> bool:
        return (
            self.migc_fractions == self.oracle.leximin and self.migc_served == self.oracle.served_at_leximin
        )


def make_case(seed: int, geo: Geometry) -> Case:
    rng = random.Random(f"fairness:{seed}")
    while True:
        gpus = rng.randint(1, 3)
        n = rng.randint(3, 5)
        demand = tuple((rng.choice(PROFILES), rng.randint(1, 6)) for _ in range(n))
        slices = sum(geo.slices(p) * k for p, k in demand)
        if slices > gpus * geo.model.compute_slices:  # over capacity: someone must be shorted
            return Case(seed, gpus, demand)


def coverable(geo: Geometry, gpus: int, profiles: Sequence[str] | None = None) -> list[dict[str, int]]:
    """Per-profile instance counts some choice of ``gpus`` layouts provides (maximal ones suffice:
    a sub-multiset of a valid layout is valid), counting only ``profiles`` when given (each
    maximal layout cut down to them; cuts another cut contains are dropped)."""
    keep = set(profiles) if profiles is not None else None
    cuts: set[Layout] = set()
    for layout in geo.maximal:
        cuts.add(tuple((n, c) for n, c in layout if keep is None or n in keep))
    options = sorted(
        c for c in cuts if not any(o != c and all(dict(o).get(n, 0) >= k for n, k in c) for o in cuts)
    )
    out: set[tuple[tuple[str, int], ...]] = set()
    for combo in itertools.combinations_with_replacement(options, gpus):
        total: dict[str, int] = {}
        for layout in combo:
            for name, count in layout:
                total[name] = total.get(name, 0) + count
        out.add(tuple(sorted(total.items())))
    return [dict(t) for t in sorted(out)]


def oracle(geo: Geometry, case: Case) -> Oracle:
    caps = coverable(geo, case.gpus, [p for p, _ in case.demand])
    most = -1
    min_at_most = Fraction(0)
    slices_at_most = 0
    best: tuple[tuple[Fraction, ...], int, int] | None = None
    for served in itertools.product(*(range(k + 1) for _, k in case.demand)):
        need: dict[str, int] = {}
        for (profile, _), s in zip(case.demand, served, strict=True):
            need[profile] = need.get(profile, 0) + s
        if not any(all(cap.get(p, 0) >= c for p, c in need.items()) for cap in caps):
            continue
        fractions = tuple(sorted(Fraction(s, k) for (_, k), s in zip(case.demand, served, strict=True)))
        total = sum(served)
        slices = sum(geo.slices(p) * s for (p, _), s in zip(case.demand, served, strict=True))
        if best is None or (fractions, total, slices) > best:
            best = (fractions, total, slices)
        if total > most:
            most, min_at_most, slices_at_most = total, fractions[0], slices
        elif total == most:
            min_at_most = max(min_at_most, fractions[0])
            slices_at_most = max(slices_at_most, slices)
    assert best is not None  # serving nothing is always feasible
    asked = sum(geo.slices(p) * k for p, k in case.demand)
    return Oracle(most, best[0], best[1], min_at_most, best[2], slices_at_most, asked)


def migc(case: Case, geo: Geometry) -> tuple[tuple[Fraction, ...], int, float, int]:
    """(migc's sorted served fractions, replicas it serves, solve wall seconds, compute slices
    it serves)."""
    catalog = load_catalog()
    model = catalog.get(MODEL)
    assert model is not None
    pods = [Pod(profile, 1, f"w{i}", "high") for i, (profile, k) in enumerate(case.demand) for _ in range(k)]
    policy = harness.build_policy(model, pods, 1, case.gpus)
    started = time.perf_counter()
    solution = harness.solve(policy, catalog)
    seconds = time.perf_counter() - started
    served: dict[str, int] = {}
    slices = 0
    for d in solution.pool(harness.CLUSTER, harness.POOL).demand:
        served[d.tenant] = served.get(d.tenant, 0) + d.served
        slices += geo.slices(d.resource) * d.served
    fractions = tuple(sorted(Fraction(served.get(f"w{i}", 0), k) for i, (_, k) in enumerate(case.demand)))
    return fractions, sum(served.values()), seconds, slices


def run(n: int, issue: bool = True) -> list[Row]:
    model = load_catalog().get(MODEL)
    assert model is not None
    geo = geometry(model)
    cases = [*(ISSUE_CASES if issue else ()), *(make_case(seed, geo) for seed in range(1, n + 1))]
    rows = []
    for case in cases:
        fractions, served, seconds, slices = migc(case, geo)
        rows.append(Row(case, oracle(geo, case), fractions, served, seconds, slices))
    return rows


def _pct(f: Fraction) -> str:
    return f"{float(f):.0%}"


def _split(fractions: Sequence[Fraction]) -> str:
    return " ".join(str(f) for f in fractions)


def render(rows: Sequence[Row]) -> str:
    lines = [
        "| case | GPUs | demand (profile × replicas per workload) "
        "| served: migc / at leximin / most possible | min served fraction: migc / oracle leximin "
        "| sorted fractions: migc | = oracle leximin "
        "| before: max-min at most served | slice share: migc / pods-first | migc solve s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        demand = ", ".join(f"{p}×{k}" for p, k in r.case.demand)
        o = r.oracle
        lines.append(
            f"| {r.case.label or r.case.seed} | {r.case.gpus} | {demand} "
            f"| {r.migc_served} / {o.served_at_leximin} / {o.most} "
            f"| {_pct(r.migc_fractions[0])} / {_pct(o.leximin[0])} | {_split(r.migc_fractions)} "
            f"| {'yes' if r.fair else 'NO'} | {_pct(o.min_at_most)} "
            f"| {_pct(Fraction(r.migc_slices, o.asked_slices))} "
            f"/ {_pct(Fraction(o.slices_at_most, o.asked_slices))} "
            f"| {r.migc_seconds:.2f} |"
        )
    fair = sum(1 for r in rows if r.fair)
    raised = sum(1 for r in rows if r.oracle.leximin[0] > r.oracle.min_at_most)
    served = sum(r.migc_served for r in rows)
    most = sum(r.oracle.most for r in rows)
    short = sum(1 for r in rows if r.migc_served < r.oracle.most)
    slices = sum(r.migc_slices for r in rows)
    slices_most = sum(r.oracle.slices_at_most for r in rows)
    asked = sum(r.oracle.asked_slices for r in rows)
    lines += [
        "",
        f"migc's split equals the oracle's leximin split (sorted fractions and replicas) on {fair} of "
        f"{len(rows)} cases. The rule raises the smallest served fraction above the best one at the "
        f"most replicas on {raised} cases, and serves fewer replicas than the most possible on {short}: "
        f"{served} of {most} replicas in all ({most - served} given up to be fair, "
        f"{(most - served) / most:.0%}). Compute slices served: {slices} under the rule, {slices_most} "
        f"at the most replicas (the most slices among those points), of {asked} asked "
        f"({slices / asked:.0%} vs {slices_most / asked:.0%}).",
    ]
    return "\n".join(lines)


def scale(workloads: int, max_replicas: int, gpus: int) -> str:
    """One larger short tier, timed: seeded workloads of one tier, one tenant per 7 workloads,
    each asking for one of ``PROFILES``; the solve's wall time, replicas served and smallest
    fraction (no oracle at this size)."""
    catalog = load_catalog()
    model = catalog.get(MODEL)
    assert model is not None
    rng = random.Random(f"fairness-scale:{workloads}:{max_replicas}:{gpus}")
    demand = [(rng.choice(PROFILES), rng.randint(1, max_replicas)) for _ in range(workloads)]
    pods = [Pod(p, 1, f"t{i % 7}-w{i}", "high") for i, (p, k) in enumerate(demand) for _ in range(k)]
    policy = harness.build_policy(model, pods, max(1, gpus // 8), min(8, gpus))
    started = time.perf_counter()
    solution = harness.solve(policy, catalog)
    seconds = time.perf_counter() - started
    rows = solution.pool(harness.CLUSTER, harness.POOL).demand
    low = min(Fraction(d.served, d.requested) for d in rows)
    served = sum(d.served for d in rows)
    asked = sum(k for _, k in demand)
    optimal = solution.pool(harness.CLUSTER, harness.POOL).optimal
    return (
        f"| {workloads} | {max_replicas} | {gpus} | {asked} | {served} | {_pct(low)} | {seconds:.2f} "
        f"| {'yes' if optimal else 'no'} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fairness", description=__doc__)
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument(
        "--tiny", action="store_true", help="the issue's 2 cases and 3 seeded ones, for the smoke test"
    )
    ap.add_argument("--scale", default="", help="W,R,G[;W,R,G...]: time larger short tiers instead")
    args = ap.parse_args(argv)
    if args.scale:
        print(
            "| workloads | replicas up to | GPUs | asked | served | min served fraction | solve s | proven |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for spec in args.scale.split(";"):
            n, most, gpus = (int(x) for x in spec.split(","))
            print(scale(n, most, gpus))
        return 0
    rows = run(3 if args.tiny else args.cases)
    print(render(rows))
    bad = [r for r in rows if not r.fair]
    for r in bad:
        failed = (
            f"CHECK FAILED: case {r.case.label or r.case.seed}: migc split {_split(r.migc_fractions)} "
            f"serving {r.migc_served}, leximin {_split(r.oracle.leximin)} "
            f"serving {r.oracle.served_at_leximin}"
        )
        print(failed, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
