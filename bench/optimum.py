"""Reference optima the bench judges migc against, built from the bench's own geometry.

* :func:`min_gpus`: the exact cutting-stock integer program (one integer column per maximal
  layout, cover every profile's demand), its LP relaxation as the lower bound;
* :func:`max_served`: on a fixed number of GPUs, demand served tier by tier (true lexicographic
  order: each tier is maximised with the tiers above it fixed at their optimum);
* :func:`pareto_gain`: whether a served vector leaves a tier a replica it could still have
  without taking one from any workload of that tier or above (Pareto efficiency);
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
    """Per tier (highest first): pods served, the measure served, and compute slices served."""

    pods: tuple[tuple[str, int], ...]
    measure: tuple[tuple[str, float], ...]
    optimal: bool = True
    # compute slices served per tier (a whole GPU: all of its slices); for the pods-first reference
    # (:func:`max_served` with :func:`measure_pods`) the most slices among the points serving the
    # most pods in that tier, with the tiers above at their optimum
    slices: tuple[tuple[str, float], ...] = ()

    def key(self) -> tuple[float, ...]:
        """Lexicographic comparison key: the measure served per tier, highest tier first."""
        return tuple(v for _, v in self.measure)


def served_of(geo: Geometry, served: Sequence[Pod], measure: Measure) -> Served:
    pods = {t: 0 for t, _ in TIERS}
    meas = {t: 0.0 for t, _ in TIERS}
    slices = {t: 0.0 for t, _ in TIERS}
    for p in served:
        pods[p.tier] += 1
        meas[p.tier] += measure(geo, p)
        slices[p.tier] += measure_slices(geo, p)
    return Served(
        tuple((t, pods[t]) for t, _ in TIERS),
        tuple((t, meas[t]) for t, _ in TIERS),
        slices=tuple((t, slices[t]) for t, _ in TIERS),
    )


def _fleet_model(
    geo: Geometry, groups: Mapping[tuple[str, ...], int], fleet_gpus: int
) -> tuple[Model, dict[tuple[str, ...], int]]:
    """Layout columns and one served column per group (``(..., tier, resource, k)`` keys, the last
    three fields), at most ``fleet_gpus`` GPUs, each profile's served instances within what the
    chosen layouts carry."""
    m = Model(maximize=True)
    layout_cols = {lay: m.var() for lay in geo.maximal}
    serve_cols = {key: m.var(ub=float(n)) for key, n in sorted(groups.items())}
    fleet: dict[int, float] = {c: 1.0 for c in layout_cols.values()}
    for key, c in serve_cols.items():
        if key[-2] == WHOLE:
            fleet[c] = float(key[-1])
    m.row(fleet, ub=float(fleet_gpus))
    for name in sorted({key[-2] for key in groups if key[-2] != WHOLE}):
        row = {c: 1.0 for key, c in serve_cols.items() if key[-2] == name}
        for lay, c in layout_cols.items():
            row[c] = -float(dict(lay).get(name, 0))
        m.row(row, ub=0.0)
    return m, serve_cols


def _pod_of(key: tuple[str, ...]) -> Pod:
    return Pod(key[-2], int(key[-1]), tier=key[-3])


def max_served(geo: Geometry, pods: Sequence[Pod], fleet_gpus: int, measure: Measure) -> Served:
    """The lexicographic optimum of served demand on ``fleet_gpus`` GPUs.

    With :func:`measure_pods`, each tier's slices are also maximised among the points serving its
    optimum (with the tiers above fixed), without fixing them: the most generous share the
    pods-first rule can give that tier. The tiers below are optimised on pods alone.
    """
    groups: dict[tuple[str, ...], int] = {}
    for p in pods:
        key: tuple[str, ...] = (p.tier, p.resource, str(p.count))
        groups[key] = groups.get(key, 0) + 1
    m, serve_cols = _fleet_model(geo, groups, fleet_gpus)
    optimal = True
    most_slices: dict[str, float] = {}
    for tier, _ in TIERS:
        weights = {c: measure(geo, _pod_of(key)) for key, c in serve_cols.items() if key[0] == tier}
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
        if measure is measure_pods:
            m.costs = [0.0] * len(m.costs)
            for key, c in serve_cols.items():
                if key[0] == tier:
                    m.costs[c] = measure_slices(geo, _pod_of(key))
            share = m.solve()
            optimal = optimal and share.optimal
            most_slices[tier] = max(0.0, round(share.objective, 6))  # no -0.0 from the rounding
    counts = {t: 0 for t, _ in TIERS}
    meas = {t: 0.0 for t, _ in TIERS}
    slices = {t: 0.0 for t, _ in TIERS}
    if optimal and serve_cols:
        for key, c in serve_cols.items():
            n = round(last.values[c])
            t = key[0]
            counts[t] += n
            meas[t] += n * measure(geo, _pod_of(key))
            slices[t] += n * measure_slices(geo, _pod_of(key))
    slices.update(most_slices)
    return Served(
        tuple((t, counts[t]) for t, _ in TIERS),
        tuple((t, meas[t]) for t, _ in TIERS),
        optimal,
        tuple((t, slices[t]) for t, _ in TIERS),
    )


def pareto_gain(geo: Geometry, pods: Sequence[Pod], served: Sequence[Pod], fleet_gpus: int, tier: str) -> int:
    """Replicas the tier could still gain on ``fleet_gpus`` GPUs with every workload (tenant,
    tier, resource, k) of that tier and the tiers above kept at least at what ``served`` gives it;
    0 when ``served`` is Pareto-efficient for the tier (no workload of it can get one more replica
    without another of it or of a tier above losing one; the tiers below may lose). -1 when
    ``served`` does not fit the fleet at all (in this model)."""
    rank = {t: i for i, (t, _) in enumerate(TIERS)}
    groups: dict[tuple[str, ...], int] = {}
    for p in pods:
        key: tuple[str, ...] = (p.tenant, p.tier, p.resource, str(p.count))
        groups[key] = groups.get(key, 0) + 1
    got: dict[tuple[str, ...], int] = {}
    for p in served:
        key = (p.tenant, p.tier, p.resource, str(p.count))
        got[key] = got.get(key, 0) + 1
    m, serve_cols = _fleet_model(geo, groups, fleet_gpus)
    for key, c in serve_cols.items():
        if rank[key[1]] <= rank[tier]:
            m.lower[c] = float(got.get(key, 0))
    tier_cols = [c for key, c in serve_cols.items() if key[1] == tier]
    for c in tier_cols:
        m.costs[c] = 1.0
    res = m.solve()
    if not res.optimal:
        return -1
    return round(res.objective) - sum(got.get(key, 0) for key in serve_cols if key[1] == tier)


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
