"""F1: fairness inside a tier: migc's smallest served fraction per workload vs an exhaustive max-min.

``python -m bench.fairness`` (``--cases N``; ``--tiny`` for the smoke test)

Small seeded instances: one pool of 1-3 A100-SXM4-80GB GPUs, 3-5 workloads of one tier, each asking
for one MIG profile (1g.10gb, 2g.20gb, 3g.40gb or 4g.40gb) with 1-6 replicas, more than the GPUs can
hold. The oracle is the bench's own: it enumerates every valid layout of each GPU
(:mod:`bench.geometry`, independent of migc's catalog code), every served vector ``s``
(0 ≤ s_w ≤ demand_w) whose per-profile totals some choice of layouts covers, and reports

- max-min: the largest min_w s_w / demand_w over all feasible vectors;
- max-min at max served: the same, among the vectors that serve the most replicas (migc serves the
  most replicas per tier first, then shares them, so this is the value it should reach).

migc: ``compiler.solve.solve`` on the same demand (one tenant per workload, tier ``high``), its
served replicas per workload read from the solution.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from bench import harness
from bench.demand import Pod
from bench.geometry import Geometry, geometry
from compiler.catalog import load_catalog

PROFILES = ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb")
MODEL = "A100-SXM4-80GB"


@dataclass(frozen=True)
class Case:
    seed: int
    gpus: int
    demand: tuple[tuple[str, int], ...]  # per workload: (profile, replicas)


@dataclass(frozen=True)
class Row:
    case: Case
    max_served: int
    migc_served: int
    migc_min: Fraction
    oracle_min: Fraction  # max-min over every feasible vector
    oracle_min_at_max: Fraction  # max-min among the vectors serving the most replicas


def make_case(seed: int, geo: Geometry) -> Case:
    rng = random.Random(f"fairness:{seed}")
    while True:
        gpus = rng.randint(1, 3)
        n = rng.randint(3, 5)
        demand = tuple((rng.choice(PROFILES), rng.randint(1, 6)) for _ in range(n))
        slices = sum(geo.slices(p) * k for p, k in demand)
        if slices > gpus * geo.model.compute_slices:  # over capacity: someone must be shorted
            return Case(seed, gpus, demand)


def coverable(geo: Geometry, gpus: int) -> list[dict[str, int]]:
    """Per-profile instance counts some choice of ``gpus`` layouts provides (maximal ones suffice:
    a sub-multiset of a valid layout is valid)."""
    out: set[tuple[tuple[str, int], ...]] = set()
    for combo in itertools.combinations_with_replacement(geo.maximal, gpus):
        total: dict[str, int] = {}
        for layout in combo:
            for name, count in layout:
                total[name] = total.get(name, 0) + count
        out.add(tuple(sorted(total.items())))
    return [dict(t) for t in sorted(out)]


def oracle(geo: Geometry, case: Case) -> tuple[int, Fraction, Fraction]:
    """(most replicas servable, max-min fraction, max-min fraction among the most-served vectors)."""
    caps = coverable(geo, case.gpus)
    best_total = -1
    best_min = Fraction(0)
    best_min_at_max = Fraction(0)
    for served in itertools.product(*(range(k + 1) for _, k in case.demand)):
        need: dict[str, int] = {}
        for (profile, _), s in zip(case.demand, served, strict=True):
            need[profile] = need.get(profile, 0) + s
        if not any(all(cap.get(p, 0) >= c for p, c in need.items()) for cap in caps):
            continue
        fraction = min(Fraction(s, k) for (_, k), s in zip(case.demand, served, strict=True))
        best_min = max(best_min, fraction)
        total = sum(served)
        if total > best_total:
            best_total, best_min_at_max = total, fraction
        elif total == best_total:
            best_min_at_max = max(best_min_at_max, fraction)
    return best_total, best_min, best_min_at_max


def migc(case: Case) -> tuple[int, Fraction]:
    """(replicas migc serves, its smallest served fraction per workload)."""
    catalog = load_catalog()
    model = catalog.get(MODEL)
    assert model is not None
    pods = [Pod(profile, 1, f"w{i}", "high") for i, (profile, k) in enumerate(case.demand) for _ in range(k)]
    policy = harness.build_policy(model, pods, 1, case.gpus)
    solution = harness.solve(policy, catalog)
    served: dict[str, int] = {}
    for d in solution.pool(harness.CLUSTER, harness.POOL).demand:
        served[d.tenant] = served.get(d.tenant, 0) + d.served
    fractions = [Fraction(served.get(f"w{i}", 0), k) for i, (_, k) in enumerate(case.demand)]
    return sum(served.values()), min(fractions)


def run(n: int) -> list[Row]:
    model = load_catalog().get(MODEL)
    assert model is not None
    geo = geometry(model)
    rows = []
    for seed in range(1, n + 1):
        case = make_case(seed, geo)
        total, best_min, best_at_max = oracle(geo, case)
        served, low = migc(case)
        rows.append(Row(case, total, served, low, best_min, best_at_max))
    return rows


def _pct(f: Fraction) -> str:
    return f"{float(f):.0%}"


def render(rows: Sequence[Row]) -> str:
    lines = [
        "| seed | GPUs | demand (profile × replicas per workload) | served: migc / most possible "
        "| min served fraction: migc | oracle max-min at most served | oracle max-min (any total) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        demand = ", ".join(f"{p}×{k}" for p, k in r.case.demand)
        lines.append(
            f"| {r.case.seed} | {r.case.gpus} | {demand} | {r.migc_served} / {r.max_served} "
            f"| {_pct(r.migc_min)} | {_pct(r.oracle_min_at_max)} | {_pct(r.oracle_min)} |"
        )
    equal = sum(1 for r in rows if r.migc_min == r.oracle_min_at_max)
    at_max = sum(1 for r in rows if r.migc_served == r.max_served)
    zero = sum(1 for r in rows if r.migc_min == 0 and r.oracle_min_at_max > 0)
    lines += [
        "",
        f"migc serves the most replicas on {at_max} of {len(rows)} cases and reaches the oracle's max-min "
        f"fraction at that total on {equal} of {len(rows)}; it leaves a workload at 0 where the oracle "
        f"does not on {zero}.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fairness", description=__doc__)
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--tiny", action="store_true", help="3 cases, for the smoke test")
    args = ap.parse_args(argv)
    rows = run(3 if args.tiny else args.cases)
    print(render(rows))
    bad = [r for r in rows if r.migc_served != r.max_served]
    for r in bad:
        failed = f"CHECK FAILED: seed {r.case.seed}: migc served {r.migc_served}, most {r.max_served}"
        print(failed, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
