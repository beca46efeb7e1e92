"""Optimality: an exhaustive search over layout multisets agrees with the solver on random small pools."""

from __future__ import annotations

import itertools
import random
from collections import Counter

from test_solve_support import Need, policy, pool, profile_need, workload

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


def _best(model: GpuModel, gpus: int, workloads: list[Workload]) -> tuple[int, int, int]:
    """(served high, served low, -GPUs used), maximised lexicographically by brute force.

    Every multiset of ``gpus`` GPU layouts (whole, or a valid layout made of demanded profiles:
    dropping instances keeps a layout valid, so other profiles never help) is tried; capacity goes
    to the higher tier first, which is optimal when every workload names one profile.
    """
    demanded = {w.need.profiles[0] for w in workloads if w.need.profiles}
    options = [WHOLE] + [
        lay for lay in enumerate_layouts(model) if all(n in demanded for n, _ in lay.profiles)
    ]
    best = (-1, -1, -(10**9))
    for combo in itertools.combinations_with_replacement(options, gpus):
        cap: Counter[str] = Counter()
        whole = 0
        mig_gpus = 0
        for lay in combo:
            if lay.mig_enabled:
                mig_gpus += 1
                cap.update(lay.counts())
            else:
                whole += 1
        served = []
        whole_used = 0
        for tier in TIERS:
            got = 0
            for w in workloads:
                if w.priority_tier != tier:
                    continue
                if w.need.gpus:
                    take = min(w.replicas, whole - whole_used)
                    whole_used += take
                else:
                    q = w.need.profiles[0]
                    take = min(w.replicas, cap[q])
                    cap[q] -= take
                got += take
            served.append(got)
        score = (served[0], served[1], -(mig_gpus + whole_used))
        best = max(best, score)
    return best


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


def test_solver_matches_exhaustive_search_on_random_instances() -> None:
    checked = 0
    for seed in range(300):
        model, nodes, gpn, ws = _instance(seed)
        pol = policy([pool("p", model.model, nodes=nodes, gpus_per_node=gpn)], ws)
        sol = solve(pol, CAT)
        (p,) = sol.pools
        assert p.optimal
        got = [0, 0]
        for d in p.demand:
            got[TIERS.index(d.priority_tier)] += d.served
        for node in p.nodes:
            for gpu in node.gpus:
                assert not gpu.mig_enabled or is_feasible(model, gpu.counts())
        expected = _best(model, nodes * gpn, ws)
        assert (got[0], got[1], -p.gpus_used) == expected, (seed, model.model, nodes, gpn, ws)
        assert p.lower_bound_gpus <= p.gpus_used + 1e-6
        checked += 1
    assert checked == 300
