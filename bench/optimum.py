"""Reference optima the bench judges migc against, built from the bench's own geometry.

* :func:`min_gpus`: the exact cutting-stock integer program (one integer column per maximal
  layout, cover every profile's demand), its LP relaxation as the lower bound;
* :func:`max_served`: on a fixed number of GPUs, demand served tier by tier (true lexicographic
  order: each tier is maximised with the tiers above it fixed at their optimum);
* :func:`min_disruption`: exhaustive search over which GPUs change, for small fleets.

Whole-GPU pods ask for k ∈ {1, 2, 4, 8} GPUs on one node. With 8-GPU nodes such sizes always pack
into ceil(total/8) nodes largest-first (each size divides the next), so only their GPU total
matters for the count and the node constraint never binds; the bench states that assumption
rather than modelling nodes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bench.demand import TIERS, WHOLE, Pod, profile_counts, whole_gpus
from bench.geometry import Geometry, Layout
from bench.milp import Model


@dataclass(frozen=True)
class MinGpus:
    gpus: int  # optimum: MIG GPUs + whole GPUs
    lp_bound: float  # LP relaxation of the same model (+ whole GPUs)
    optimal: bool
    layouts: tuple[tuple[Layout, int], ...]  # an optimal choice of layouts (MIG GPUs only)


def min_gpus(geo: Geometry, pods: Sequence[Pod]) -> MinGpus:
    return min_gpus_counts(geo, profile_counts(pods), whole_gpus(pods))


def min_gpus_counts(geo: Geometry, demand: Mapping[str, int], whole: int = 0) -> MinGpus:
    demand = {k: v for k, v in demand.items() if v > 0}
    if not demand:
        return MinGpus(whole, float(whole), True, ())
    m = Model()
    cols = {lay: m.var(1.0) for lay in geo.maximal}
    for name, need in sorted(demand.items()):
        geo.profile(name)  # unknown profile: KeyError, not a silent zero
        m.row({c: float(dict(lay).get(name, 0)) for lay, c in cols.items()}, lb=float(need))
    exact = m.solve()
    relaxed = m.solve(relax=True)
    if not exact.optimal:
        return MinGpus(-1, relaxed.objective + whole, False, ())
    chosen = tuple((lay, round(exact.values[c])) for lay, c in cols.items() if round(exact.values[c]))
    return MinGpus(round(exact.objective) + whole, relaxed.objective + whole, True, chosen)


Measure = Callable[[Geometry, Pod], float]


def measure_slices(geo: Geometry, pod: Pod) -> float:
    """Compute slices a pod occupies (a whole GPU counts all the GPU's compute slices)."""
    if pod.resource == WHOLE:
        return float(pod.count * geo.model.compute_slices)
    return float(geo.slices(pod.resource))


def measure_pods(geo: Geometry, pod: Pod) -> float:
    return 1.0


@dataclass(frozen=True)
class Served:
    """Per tier (highest first): pods served and the measure served."""

    pods: tuple[tuple[str, int], ...]
    measure: tuple[tuple[str, float], ...]
    optimal: bool = True

    def key(self) -> tuple[float, ...]:
        """Lexicographic comparison key: the measure served per tier, highest tier first."""
        return tuple(v for _, v in self.measure)


def served_of(geo: Geometry, served: Sequence[Pod], measure: Measure) -> Served:
    pods = {t: 0 for t, _ in TIERS}
    meas = {t: 0.0 for t, _ in TIERS}
    for p in served:
        pods[p.tier] += 1
        meas[p.tier] += measure(geo, p)
    return Served(tuple((t, pods[t]) for t, _ in TIERS), tuple((t, meas[t]) for t, _ in TIERS))


def max_served(geo: Geometry, pods: Sequence[Pod], fleet_gpus: int, measure: Measure) -> Served:
    """The lexicographic optimum of served demand on ``fleet_gpus`` GPUs."""
    m = Model(maximize=True)
    layout_cols = {lay: m.var() for lay in geo.maximal}
    groups: dict[tuple[str, str, int], int] = {}
    for p in pods:
        key = (p.tier, p.resource, p.count)
        groups[key] = groups.get(key, 0) + 1
    serve_cols = {key: m.var(ub=float(n)) for key, n in sorted(groups.items())}
    fleet: dict[int, float] = {c: 1.0 for c in layout_cols.values()}
    for (_, res, k), c in serve_cols.items():
        if res == WHOLE:
            fleet[c] = float(k)
    m.row(fleet, ub=float(fleet_gpus))
    for name in sorted({res for (_, res, _) in groups if res != WHOLE}):
        row = {c: 1.0 for (_, res, _), c in serve_cols.items() if res == name}
        for lay, c in layout_cols.items():
            row[c] = -float(dict(lay).get(name, 0))
        m.row(row, ub=0.0)
    optimal = True
    for tier, _ in TIERS:
        weights = {c: measure(geo, Pod(res, k, tier=t)) for (t, res, k), c in serve_cols.items() if t == tier}
        if not weights:
            continue
        m.costs = [0.0] * len(m.costs)
        for c, w in weights.items():
            m.costs[c] = w
        res_tier = m.solve()
        if not res_tier.optimal:
            optimal = False
            break
        # fix this tier at its optimum (minus a rounding guard) before optimising the next one
        m.row(dict(weights), lb=res_tier.objective - 1e-6)
        last = res_tier
    counts = {t: 0 for t, _ in TIERS}
    meas = {t: 0.0 for t, _ in TIERS}
    if optimal and serve_cols:
        for (t, res, k), c in serve_cols.items():
            n = round(last.values[c])
            counts[t] += n
            meas[t] += n * measure(geo, Pod(res, k, tier=t))
    return Served(tuple((t, counts[t]) for t, _ in TIERS), tuple((t, meas[t]) for t, _ in TIERS), optimal)


# --- minimum disruption -------------------------------------------------------------------------

GpuState = Layout | None
"""A GPU's layout for the disruption search: a MIG multiset, or ``None`` for a whole GPU."""


@dataclass(frozen=True)
class Disruption:
    nodes: int  # nodes with at least one changed GPU
    gpus: int  # GPUs whose layout changes
    found: bool = True


def _used(state: Sequence[GpuState], whole_demand: int) -> int:
    mig = sum(1 for s in state if s)  # MIG GPUs with at least one instance
    whole = sum(1 for s in state if s is None)
    return mig + min(whole, whole_demand)


def min_disruption(
    geo: Geometry,
    current: Sequence[Sequence[GpuState]],
    demand: Mapping[str, int],
    whole_demand: int,
    budget: int,
) -> Disruption:
    """Fewest nodes touched, then fewest GPUs changed, to serve ``demand`` using at most ``budget``
    GPUs (GPUs carrying instances, plus whole GPUs that whole-GPU demand needs).

    Exhaustive over the subsets of GPUs that change, in increasing (nodes, GPUs) order, so the
    first subset that works is the minimum. Kept GPUs keep their current layout; the changed ones
    must cover what the kept ones do not, with the fewest GPUs (the cutting-stock optimum), the
    rest of them left whole and idle. Exponential: meant for fleets of a dozen GPUs.
    """
    gpus = [(n, i) for n, node in enumerate(current) for i in range(len(node))]
    subsets: list[tuple[int, int, tuple[int, ...]]] = []
    for size in range(len(gpus) + 1):
        for sub in itertools.combinations(range(len(gpus)), size):
            subsets.append((len({gpus[j][0] for j in sub}), size, sub))
    subsets.sort()
    cache: dict[tuple[tuple[str, int], ...], int] = {}
    for nodes, size, sub in subsets:
        changed = set(sub)
        kept = [current[n][i] for j, (n, i) in enumerate(gpus) if j not in changed]
        residual = dict(demand)
        for s in kept:
            for name, c in s or ():
                if name in residual:
                    residual[name] -= c
        residual_key = tuple(sorted((k, v) for k, v in residual.items() if v > 0))
        whole_kept = sum(1 for s in kept if s is None)
        whole_left = max(0, whole_demand - whole_kept)
        if residual_key not in cache:
            cover = min_gpus_counts(geo, dict(residual_key))
            if not cover.optimal:
                # a failed MILP must not read as "-1 GPUs suffice": that would end the search early
                raise RuntimeError(f"reference MILP failed on residual demand {residual_key}")
            cache[residual_key] = cover.gpus
        need = cache[residual_key] + whole_left
        if need <= size and _used(kept, whole_demand) + need <= budget:
            return Disruption(nodes, size)
    return Disruption(-1, -1, found=False)


def lower_bound_ratio(value: float, bound: float) -> float:
    return value / bound if bound > 0 else (1.0 if value == 0 else math.inf)
