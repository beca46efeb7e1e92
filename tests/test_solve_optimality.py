"""Optimality: an exhaustive search over layout multisets agrees with the solver on random small pools.

Inside a tier the ranking is the fairness rule's (test_solve_fairness.key_of: sorted served
fractions, then replicas served), searched over every served vector.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Sequence

import networkx as nx
import pytest
from test_solve_fairness import Key, exhaustive, key_of
from test_solve_support import Need, policy, pool, profile_need, served, workload

from compiler.catalog import GpuModel, load_catalog
from compiler.catalog.layouts import enumerate_layouts, is_feasible
from compiler.model import GpuLayout, Workload
from compiler.solve import solve

CAT = load_catalog()
WHOLE = GpuLayout.whole()
TIERS = ("high", "low")  # default tier values: high 100000 > low 1000


def _model(name: str) -> GpuModel:
    m = CAT.get(name)
    assert m is not None
    return m


def _instance(seed: int) -> tuple[GpuModel, int, int, list[Workload]]:
    rng = random.Random(seed)
    if rng.random() < 0.5:
        model = _model("A30-24GB")
        nodes, gpn = rng.choice([(1, 1), (1, 2), (2, 1), (1, 3), (2, 2)])
        nprof = rng.choice([1, 2, 3])
    else:
        model = _model("A100-SXM4-80GB")
        nodes, gpn = rng.choice([(1, 1), (1, 2), (2, 1), (1, 3)])
        nprof = rng.choice([1, 2])
    plain = [p.name for p in model.profiles if not p.media_extensions]
    chosen = rng.sample(plain, nprof)
    ws = []
    for i in range(rng.randint(1, 3)):
        ws.append(
            workload(
                f"w{i}",
                profile_need(rng.choice(chosen)),
                rng.randint(1, 9),
                tenant_name=f"t{i}",
                tier=rng.choice(TIERS),
            )
        )
    if rng.random() < 0.3:
        ws.append(
            workload(
                "whole",
                Need(gpus=1),
                rng.randint(1, 2),
                tenant_name="tw",
                tier=rng.choice(TIERS),
                isolation="exclusive",
            )
        )
    return model, nodes, gpn, ws


@pytest.mark.slow
def test_solver_matches_exhaustive_search_on_random_instances() -> None:
    checked = 0
    for seed in range(300):
        model, nodes, gpn, ws = _instance(seed)
        pol = policy([pool("p", model.model, nodes=nodes, gpus_per_node=gpn)], ws)
        sol = solve(pol, CAT)
        (p,) = sol.pools
        assert p.optimal
        for node in p.nodes:
            for gpu in node.gpus:
                assert not gpu.mig_enabled or is_feasible(model, gpu.counts())
        key, used = exhaustive(nodes * gpn, ws, model.model)
        assert (key_of(ws, [served(sol, w.name) for w in ws]), p.gpus_used) == (key, used), (
            seed,
            model.model,
            nodes,
            gpn,
            ws,
        )
        assert p.lower_bound_gpus <= p.gpus_used + 1e-6
        checked += 1
    assert checked == 300


def _best_with_preferences(model: GpuModel, gpus: int, workloads: list[Workload]) -> tuple[Key, int, int]:
    """(fairness key, -GPUs used, -preference penalty) maximised by brute force over layout
    multisets; replicas are routed to profiles by ``_route``."""
    demanded = {n for w in workloads for n in w.need.profiles}
    options = [WHOLE] + [
        lay for lay in enumerate_layouts(model) if all(n in demanded for n, _ in lay.profiles)
    ]
    best: tuple[Key, int, int] = ((), -(10**9), -(10**9))
    memo: dict[tuple[tuple[str, int], ...], tuple[Key, int]] = {}
    for combo in itertools.combinations_with_replacement(options, gpus):
        cap: Counter[str] = Counter()
        for lay in combo:
            cap.update(lay.counts())
        frozen = tuple(sorted(cap.items()))
        if frozen not in memo:
            memo[frozen] = _route(cap, workloads)
        key, penalty = memo[frozen]
        used = sum(1 for lay in combo if lay.mig_enabled)
        best = max(best, (key, -used, -penalty))
    return best


@pytest.mark.slow
def test_preference_lists_match_exhaustive_search() -> None:
    model = _model("A30-24GB")
    plain = ["1g.6gb", "2g.12gb", "4g.24gb"]
    for seed in range(60):
        rng = random.Random(1000 + seed)
        nodes, gpn = rng.choice([(1, 1), (1, 2), (2, 1), (1, 3)])
        ws = []
        for i in range(rng.randint(1, 3)):
            prefs = rng.sample(plain, rng.choice([1, 2, 3]))
            ws.append(workload(f"w{i}", profile_need(*prefs), rng.randint(1, 6), tenant_name=f"t{i}"))
        sol = solve(policy([pool("p", model.model, nodes=nodes, gpus_per_node=gpn)], ws), CAT)
        (p,) = sol.pools
        penalty = 0
        for d in p.demand:
            w = next(w for w in ws if w.name == d.workload)
            penalty += d.served * w.need.profiles.index(d.resource)
        got = (key_of(ws, [served(sol, w.name) for w in ws]), -p.gpus_used, -penalty)
        assert got == _best_with_preferences(model, nodes * gpn, ws), (seed, nodes, gpn, ws)


def _maximal(model: GpuModel, allowed: set[str]) -> list[GpuLayout]:
    usable = [lay for lay in enumerate_layouts(model) if all(n in allowed for n, _ in lay.profiles)]
    present = {lay.profiles for lay in usable}

    def grows(lay: GpuLayout) -> bool:
        for name in allowed:
            counts = lay.counts()
            counts[name] = counts.get(name, 0) + 1
            if GpuLayout.of(counts).profiles in present:
                return True
        return False

    return [lay for lay in usable if not grows(lay)]


@pytest.mark.slow
def test_choice_between_two_pools_matches_exhaustive_search() -> None:
    a30, a100 = _model("A30-24GB"), _model("A100-SXM4-80GB")
    names = ["1g.6gb", "2g.12gb", "1g.10gb", "2g.20gb", "3g.40gb"]
    for seed in range(40):
        rng = random.Random(5000 + seed)
        g1, g2 = rng.choice([1, 2]), rng.choice([1, 2])
        ws = []
        for i in range(rng.randint(1, 3)):
            prefs = rng.sample(names, rng.choice([1, 2, 3]))
            ws.append(workload(f"w{i}", profile_need(*prefs), rng.randint(1, 8), tenant_name=f"t{i}"))
        demanded = {n for w in ws for n in w.need.profiles}
        # every layout is maximal over the demanded profiles or whole; smaller layouts never do better
        opts1 = [WHOLE, *_maximal(a30, demanded & {"1g.6gb", "2g.12gb"})]
        opts2 = [WHOLE, *_maximal(a100, demanded & {"1g.10gb", "2g.20gb", "3g.40gb"})]
        memo: dict[tuple[tuple[str, int], ...], tuple[Key, int]] = {}
        best: tuple[Key, int, int] = ((), -(10**9), -(10**9))
        for c1 in itertools.combinations_with_replacement(opts1, g1):
            for c2 in itertools.combinations_with_replacement(opts2, g2):
                cap: Counter[str] = Counter()
                for lay in (*c1, *c2):
                    cap.update(lay.counts())
                key = tuple(sorted(cap.items()))
                if key not in memo:
                    memo[key] = _route(cap, ws)
                fair, penalty = memo[key]
                used = sum(1 for lay in (*c1, *c2) if lay.mig_enabled)
                best = max(best, (fair, -used, -penalty))
        pools_ = [pool("p1", "A30-24GB", nodes=1, gpus_per_node=g1), pool("p2", nodes=1, gpus_per_node=g2)]
        sol = solve(policy(pools_, ws), CAT)
        penalty = 0
        for p in sol.pools:
            for d in p.demand:
                w = next(w for w in ws if w.name == d.workload)
                penalty += d.served * w.need.profiles.index(d.resource)
        got = (key_of(ws, [served(sol, w.name) for w in ws]), -sum(p.gpus_used for p in sol.pools), -penalty)
        assert got == best, (seed, g1, g2, ws)


def _route(cap: Counter[str], workloads: list[Workload]) -> tuple[Key, int]:
    """(fairness key, least preference penalty) of the best routing onto ``cap``: every served
    vector is tried, best fairness key first (sorted served fractions, then replicas served:
    test_solve_fairness.key_of); the first that routes (a feasible flow from workloads to the
    profiles they list) fixes the key, and the least rank-weighted flow over the vectors with
    that key is the penalty."""
    vectors = sorted(
        itertools.product(*(range(w.replicas + 1) for w in workloads)),
        key=lambda got: key_of(workloads, got),
        reverse=True,
    )
    best: Key | None = None
    penalty = 0
    for got in vectors:
        key = key_of(workloads, got)
        if best is not None and key != best:
            break
        cost = _flow_cost(cap, workloads, got)
        if cost is None:
            continue
        penalty = cost if best is None else min(penalty, cost)
        best = key
    assert best is not None  # serving nothing always routes
    return best, penalty


def _flow_cost(cap: Counter[str], workloads: list[Workload], got: Sequence[int]) -> int | None:
    """Least total preference rank of routing exactly ``got`` replicas per workload, or None."""
    g: nx.DiGraph[object] = nx.DiGraph()
    total = sum(got)
    g.add_node("t", demand=total)
    for w, n in zip(workloads, got, strict=True):
        g.add_node(("w", w.name), demand=-n)
        for rank, name in enumerate(w.need.profiles):
            g.add_edge(("w", w.name), ("p", name), capacity=n, weight=rank)
    for name in {n for w in workloads for n in w.need.profiles}:
        g.add_edge(("p", name), "t", capacity=cap.get(name, 0), weight=0)
    try:
        flow = nx.min_cost_flow(g)
    except nx.NetworkXUnfeasible:
        return None
    return int(nx.cost_of_flow(g, flow))
