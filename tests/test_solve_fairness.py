"""One fairness rule inside a priority tier, across tenants and inside one (issue 26, item 3).

The rule (compiler/solve/milp.py, level 1): within a tier, the served fractions of its workloads
(replicas served / replicas asked) are maximised leximin -- the smallest fraction as large as
possible, then the next smallest, and so on -- before the tier's raw replica count, which then
breaks ties. Every expected answer here comes from an exhaustive search: every multiset of GPU
layouts, every served vector, ranked by (per tier, highest first: sorted fractions, replicas
served), then fewest GPUs. The search knows nothing of the solver's levels or its model.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_solve_support import Need, policy, pool, profile_need, served, workload

from compiler.catalog import load_catalog
from compiler.catalog.layouts import enumerate_layouts
from compiler.model import GpuLayout, Workload
from compiler.solve import solve
from compiler.solve.lexmilp import Level, Milp
from compiler.solve.result import Solution

CAT = load_catalog()
MODEL = "A100-SXM4-80GB"
WHOLE = GpuLayout.whole()
TIERS = ("high", "low")  # default tier values: high above low

Key = tuple[object, ...]


def _profile(w: Workload) -> str:
    return w.need.profiles[0] if w.need.profiles else "gpu"


def key_of(ws: Sequence[Workload], got: Sequence[int]) -> Key:
    """Per tier, highest first: (sorted served fractions, replicas served)."""
    out: list[object] = []
    for tier in TIERS:
        idx = [j for j, w in enumerate(ws) if w.priority_tier == tier]
        if idx:
            out.append(tuple(sorted(Fraction(got[j], ws[j].replicas) for j in idx)))
            out.append(sum(got[j] for j in idx))
    return tuple(out)


def exhaustive(gpus: int, ws: Sequence[Workload], model_name: str = MODEL) -> tuple[Key, int]:
    """(the best key over every layout multiset and served vector, fewest GPUs at that key).

    Each workload names one profile, or is one whole GPU per replica. A GPU is whole or carries a
    valid layout of demanded profiles (dropping instances keeps a layout valid, so others never
    help); a served vector fits when, per profile, it asks for at most what the layouts carry.
    """
    model = CAT.get(model_name)
    assert model is not None
    demanded = {_profile(w) for w in ws}
    options = [WHOLE] + [
        lay for lay in enumerate_layouts(model) if all(n in demanded for n, _ in lay.profiles)
    ]
    ranges = [range(w.replicas + 1) for w in ws]
    best_for_cap: dict[tuple[tuple[str, int], ...], tuple[Key, int]] = {}
    best: tuple[Key, int] | None = None
    for combo in itertools.combinations_with_replacement(options, gpus):
        cap: Counter[str] = Counter()
        for lay in combo:
            cap.update(lay.counts() if lay.mig_enabled else {"gpu": 1})
        frozen = tuple(sorted(cap.items()))
        if frozen not in best_for_cap:
            top: tuple[Key, int] = ((), 0)
            for got in itertools.product(*ranges):
                need: Counter[str] = Counter()
                for w, g in zip(ws, got, strict=True):
                    need[_profile(w)] += g
                if all(need[p] <= cap[p] for p in need):
                    top = max(top, (key_of(ws, got), -need["gpu"]))  # a whole-GPU replica uses its GPU
            best_for_cap[frozen] = top
        key, whole = best_for_cap[frozen]
        used = sum(1 for lay in combo if lay.mig_enabled) - whole
        if best is None or (key, -used) > (best[0], -best[1]):
            best = (key, used)
    assert best is not None
    return best


def _got(sol: Solution, ws: Sequence[Workload]) -> list[int]:
    # a whole-GPU replica of one GPU is one instance, so instances served = replicas served
    return [served(sol, w.name) for w in ws]


def _check(gpus: int, ws: Sequence[Workload]) -> list[int]:
    sol = solve(policy([pool(nodes=1, gpus_per_node=gpus)], ws), CAT)
    assert all(p.optimal for p in sol.pools)
    got = _got(sol, ws)
    key, used = exhaustive(gpus, ws)
    assert key_of(ws, got) == key, (gpus, [(w.name, _profile(w), w.replicas, w.tenant) for w in ws], got)
    assert sum(p.gpus_used for p in sol.pools) == used
    return got


def _seven(replicas: Sequence[int], *, one_tenant: bool) -> list[Workload]:
    return [
        workload(f"w{j}", profile_need("7g.80gb"), r, tenant_name="t" if one_tenant else f"t{j}")
        for j, r in enumerate(replicas)
    ]


@pytest.mark.parametrize("one_tenant", [True, False], ids=["one tenant", "five tenants"])
def test_issue_case_seven_g_on_eight_gpus(one_tenant: bool) -> None:
    """9/7/5/3/1 x 7g.80gb on 8 GPUs: 2/2/2/1/1 inside one tenant and across five (it was 4/1/1/1/1
    across tenants: at least one each, then whatever the solver landed on)."""
    assert _check(8, _seven([9, 7, 5, 3, 1], one_tenant=one_tenant)) == [2, 2, 2, 1, 1]


@pytest.mark.parametrize("one_tenant", [True, False], ids=["one tenant", "three tenants"])
def test_issue_case_three_g_on_sixteen_slots(one_tenant: bool) -> None:
    """10/6/2 x 3g.40gb on 8 GPUs (16 slots of 3g): 9/5/2, inside one tenant and across three."""
    ws = [
        workload(f"w{j}", profile_need("3g.40gb"), r, tenant_name="t" if one_tenant else f"t{j}")
        for j, r in enumerate([10, 6, 2])
    ]
    assert _check(8, ws) == [9, 5, 2]


def test_a_large_profile_is_not_zeroed_to_gain_one_replica() -> None:
    """3 GPUs; 3g.40gb x 1 next to 1g.10gb x 3, 2g.20gb x 3 and 2g.20gb x 6 (bench F1 seed 12).
    The most replicas (12) leave the 3g workload at 0; the rule gives every workload at least
    2/3 of its ask and serves 11: a share for the large profile costs the tier one replica."""
    ws = [
        workload("big", profile_need("3g.40gb"), 1, tenant_name="a"),
        workload("small", profile_need("1g.10gb"), 3, tenant_name="b"),
        workload("mid", profile_need("2g.20gb"), 3, tenant_name="c"),
        workload("wide", profile_need("2g.20gb"), 6, tenant_name="d"),
    ]
    got = _check(3, ws)
    assert got[0] == 1
    assert min(Fraction(g, w.replicas) for g, w in zip(got, ws, strict=True)) == Fraction(2, 3)
    assert sum(got) == 11


def test_a_higher_tier_still_comes_first() -> None:
    """Fairness is inside a tier: a low workload gets nothing while the high tier is short."""
    ws = [
        workload("hi-a", profile_need("7g.80gb"), 3, tenant_name="a", tier="high"),
        workload("hi-b", profile_need("7g.80gb"), 2, tenant_name="b", tier="high"),
        workload("lo", profile_need("7g.80gb"), 2, tenant_name="c", tier="low"),
    ]
    assert _check(4, ws) == [2, 2, 0]


def test_merged_workloads_and_other_tenants_share_one_rule() -> None:
    """Two workloads of one tenant with the same need are one demand item for the solver; their
    fractions still count one by one next to another tenant's workload."""
    ws = [
        workload("a1", profile_need("7g.80gb"), 6, tenant_name="a"),
        workload("a2", profile_need("7g.80gb"), 2, tenant_name="a"),
        workload("b", profile_need("7g.80gb"), 4, tenant_name="b"),
    ]
    assert _check(5, ws) == [2, 1, 2]


def _random_case(rng: random.Random, *, one_tenant: bool) -> tuple[int, list[Workload]]:
    gpus = rng.randint(1, 3)
    profiles = rng.sample(["1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"], rng.choice([1, 2]))
    ws = []
    for j in range(rng.randint(2, 4)):
        ws.append(
            workload(
                f"w{j}",
                profile_need(rng.choice(profiles)),
                rng.randint(1, 5),
                tenant_name="t" if one_tenant else f"t{j}",
                tier=rng.choice(TIERS) if rng.random() < 0.3 else "high",
            )
        )
    if rng.random() < 0.25:
        ws.append(
            workload(
                "whole", Need(gpus=1), rng.randint(1, 2), tenant_name="tw", tier="high", isolation="exclusive"
            )
        )
    return gpus, ws


@pytest.mark.slow
@pytest.mark.parametrize("one_tenant", [True, False], ids=["inside one tenant", "across tenants"])
def test_random_small_cases_match_exhaustive_search(one_tenant: bool) -> None:
    rng = random.Random(2600 + one_tenant)
    for _ in range(120):
        gpus, ws = _random_case(rng, one_tenant=one_tenant)
        _check(gpus, ws)


@st.composite
def _small_tier(draw: st.DrawFn) -> tuple[int, list[Workload]]:
    """1-3 GPUs, 2-4 MIG workloads of 1-5 replicas in one or two tiers, across tenants or inside
    one, and sometimes a whole-GPU workload: shrinks to the smallest case that breaks the rule."""
    gpus = draw(st.integers(1, 3))
    one_tenant = draw(st.booleans())
    n = draw(st.integers(2, 4))
    ws = [
        workload(
            f"w{j}",
            profile_need(draw(st.sampled_from(["1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]))),
            draw(st.integers(1, 5)),
            tenant_name="t" if one_tenant else f"t{j}",
            tier=draw(st.sampled_from(TIERS)),
        )
        for j in range(n)
    ]
    if draw(st.booleans()):
        ws.append(
            workload("whole", Need(gpus=1), draw(st.integers(1, 2)), tenant_name="tw", isolation="exclusive")
        )
    return gpus, ws


@pytest.mark.slow
@given(_small_tier())
@settings(max_examples=40, deadline=None)
def test_generated_small_cases_match_exhaustive_search(case: tuple[int, list[Workload]]) -> None:
    """The same oracle on cases hypothesis draws (and shrinks on failure)."""
    _check(*case)


def test_a_tier_served_in_full_builds_no_fairness_levels() -> None:
    """The rule costs nothing where every replica of a tier is served: no fairness level exists."""
    from compiler.solve.demand import build_demand
    from compiler.solve.milp import solve_cluster

    ws = _seven([3, 2, 1], one_tenant=False)
    pol = policy([pool(nodes=1, gpus_per_node=8)], ws)
    (cluster,) = pol.clusters
    items = build_demand(pol, cluster, CAT)
    out = solve_cluster(cluster, CAT, items, [], {}, 30.0)
    assert out.result is not None and out.fair_tiers == frozenset()
    assert not any(name.startswith("fair:") for name in out.result.objectives)
    short = policy([pool(nodes=1, gpus_per_node=4)], ws)
    (cluster,) = short.clusters
    out = solve_cluster(cluster, CAT, build_demand(short, cluster, CAT), [], {}, 30.0)
    assert out.result is not None and out.fair_tiers == frozenset({100000})
    assert any(name.startswith("fair:") for name in out.result.objectives)


def _two_ints() -> tuple[Milp, int, int]:
    """x + y <= 3, 0 <= x, y <= 2 (integers)."""
    m = Milp()
    x, y = m.var("x", 0, 2), m.var("y", 0, 2)
    m.row({x: 1, y: 1}, ub=3)
    return m, x, y


def test_lexmilp_stops_at_a_level_short_of_its_bound() -> None:
    m, x, y = _two_ints()
    full = m.solve(
        [Level("sum", "max", {x: 1, y: 1}, bound=4, stop_unless_bound=True), Level("x", "max", {x: 1})]
    )
    assert full is not None and full.stopped == "sum" and full.objectives == {"sum": 3}
    reached = m.solve(
        [Level("sum", "max", {x: 1, y: 1}, bound=3, stop_unless_bound=True), Level("x", "max", {x: 1})]
    )
    assert reached is not None and reached.stopped == "" and reached.objectives == {"sum": 3, "x": 2}


def test_lexmilp_proves_a_level_from_a_start_point_and_a_bound_without_highs() -> None:
    m, x, y = _two_ints()
    levels = [Level("sum", "max", {x: 1, y: 1}, bound=3), Level("y", "max", {y: 1}, bounded_by="sum")]
    # a start reaching both bounds: no HiGHS run at all, and the start is the answer
    res = m.solve(levels, start={"x": 1, "y": 2})
    assert res is not None and res.highs_runs == 0 and res.values == [1.0, 2.0]
    assert res.objectives == {"sum": 3, "y": 2}
    # an infeasible start (x + y = 4 > 3) is ignored: HiGHS proves the levels
    res = m.solve(levels, start={"x": 2, "y": 2})
    assert res is not None and res.highs_runs >= 1 and res.objectives == {"sum": 3, "y": 2}


def test_lexmilp_raises_a_column_to_its_divided_bound() -> None:
    """b <= floor(s / 3) with s fixed at 7: raised to 1 before the level (2 would break 3b <= s
    had b's bound allowed it); the level is then proven by the raise alone."""
    m = Milp()
    s = m.var("s", 7, 7)
    b = m.var("b", 0, 1)
    m.row({b: 3, s: -1}, ub=0)
    res = m.solve([Level("s", "max", {s: 1}), Level("b", "max", {b: 1}, raise_to={b: ([s], 3)})])
    assert res is not None and res.objectives == {"s": 7, "b": 1}
    assert res.level_seconds["b"] < 1.0 and res.highs_runs == 1


def _threshold_chain() -> tuple[Milp, list[Level], dict[str, float]]:
    """s1 + s2 = 10 (0..10 each) and, per c in 1..5, b1_c, b2_c binary with c * b_c <= s: the
    counts at thresholds c = 1..5 form a chain (each bounded by the one before, every column
    raised), whose optima are 2 throughout (s1 = s2 = 5 alone reaches 2 at c = 5). The start
    point (10, 0) reaches 1 at each."""
    m = Milp()
    s1, s2 = m.var("s1", 0, 10), m.var("s2", 0, 10)
    m.row({s1: 1, s2: 1}, lb=10, ub=10)
    levels: list[Level] = []
    for c in range(1, 6):
        b1, b2 = m.var(f"b1_{c}", 0, 1), m.var(f"b2_{c}", 0, 1)
        m.row({b1: c, s1: -1}, ub=0)
        m.row({b2: c, s2: -1}, ub=0)
        prev = levels[-1].name if levels else ""
        levels.append(Level(f"t{c}", "max", {b1: 1, b2: 1}, {b1: ([s1], c), b2: ([s2], c)}, bounded_by=prev))
    return m, levels, {"s1": 10.0, "s2": 0.0}


def test_a_chain_of_thresholds_is_proven_by_probes_ahead() -> None:
    """Where the point falls short of a chain level's bound, one feasibility run at a level further
    on (``_LexRun._probe_ahead``) proves every level between: at most the head's run and two probes
    here, where a run per level could take five; the optima are those of the chain."""
    m, levels, start = _threshold_chain()
    res = m.solve(levels, start=start)
    assert res is not None and res.optimal
    assert res.objectives == {f"t{c}": 2 for c in range(1, 6)}
    assert res.values[:2] == [5.0, 5.0]
    assert res.highs_runs <= 3


def test_probing_ahead_keeps_every_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """A short tier of 14 workloads (1g-7g, 3-30 replicas, across tenants) on 3 nodes: the same
    fairness optima and split with the probes as with one optimisation per threshold."""
    from compiler.solve import lexmilp
    from compiler.solve.demand import build_demand
    from compiler.solve.milp import solve_cluster

    rng = random.Random(5)
    profiles = ["1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
    ws = [
        workload(f"w{j}", profile_need(rng.choice(profiles)), rng.randint(3, 30), tenant_name=f"t{j}")
        for j in range(14)
    ]
    pol = policy([pool(nodes=3, gpus_per_node=8)], ws)
    (cluster,) = pol.clusters

    def run() -> dict[str, float]:
        out = solve_cluster(cluster, CAT, build_demand(pol, cluster, CAT), [], {}, 60.0)
        assert out.result is not None and out.result.optimal
        fair = {n: v for n, v in out.result.objectives.items() if n.startswith(("fair:", "served:"))}
        assert any(n.startswith("fair:") for n in fair)
        return fair

    probed = run()
    monkeypatch.setattr(lexmilp._LexRun, "_probe_ahead", lambda self, chain: False)
    assert run() == probed
