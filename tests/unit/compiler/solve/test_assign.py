"""Minimum disruption: unchanged demand changes nothing; a shift touches the fewest nodes (brute force)."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from test_solve_support import Need, as_current, policy, pool, profile_need, whole_gpu_jobs_pack, workload

from compiler.catalog import load_catalog
from compiler.catalog.layouts import enumerate_layouts
from compiler.model import CurrentState, GpuLayout, Policy, Workload
from compiler.solve import solve
from compiler.solve.assign import assign_pool, changed_indices
from compiler.solve.plan_types import PoolDecision
from compiler.solve.result import Solution

CAT = load_catalog()
WHOLE = GpuLayout.whole()
TIERS = ("high", "low")


def _touched(sol: Solution) -> tuple[int, int]:
    nodes = sum(1 for p in sol.pools for n in p.nodes if n.changed)
    gpus = sum(len(n.changed_gpus) for p in sol.pools for n in p.nodes)
    return nodes, gpus


def _random_fleet_policy(seed: int, replicas_scale: int = 1) -> Policy:
    rng = random.Random(seed)
    pools = [
        pool("a100", nodes=40, gpus_per_node=8, reserve_gpus=3, reserve_nodes=1),
        pool("h100", "H100-80GB", nodes=25, gpus_per_node=8),
    ]
    ws = []
    profiles = ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
    for i in range(20):
        if rng.random() < 0.8:
            need = profile_need(rng.choice(profiles))
        else:
            need = Need(gpus=rng.choice([1, 2, 4, 8]))
        ws.append(
            workload(
                f"w{i:02d}",
                need,
                rng.randint(1, 12) * replicas_scale,
                tenant_name=f"t{i % 5}",
                tier=rng.choice(TIERS),
            )
        )
    return policy(pools, ws)


@pytest.mark.slow
def test_unchanged_demand_changes_nothing() -> None:
    for seed in range(6):
        pol = _random_fleet_policy(seed)
        first = solve(pol, CAT)
        assert _touched(first)[0] == sum(len(p.nodes) for p in first.pools)  # nothing deployed: all new
        again = solve(pol, CAT, as_current(first))
        assert _touched(again) == (0, 0), seed
        assert [p.layout_counts for p in again.pools] == [p.layout_counts for p in first.pools]
        assert whole_gpu_jobs_pack(pol, first)
        # a shift with multi-GPU replicas: kept nodes may host them, re-laid nodes must still fit them
        shifted = _random_fleet_policy(seed, replicas_scale=2)
        moved = solve(shifted, CAT, as_current(first))
        assert whole_gpu_jobs_pack(shifted, moved), seed


def test_identical_new_nodes_compare_equal() -> None:
    pol = policy([pool(nodes=6, gpus_per_node=4)], [workload("w", profile_need("3g.40gb"), 24)])
    sol = solve(pol, CAT)
    # twelve GPUs of {3g.40gb: 2} fill three nodes; the free GPUs stay together as three whole nodes
    three_g = GpuLayout.of({"3g.40gb": 2})
    assert Counter(n.gpus for n in sol.pools[0].nodes) == {(three_g,) * 4: 3, (WHOLE,) * 4: 3}


def test_growing_one_workload_touches_one_node() -> None:
    base = [
        workload("a", profile_need("3g.40gb"), 40),
        workload("b", profile_need("1g.10gb"), 30, tenant_name="t2"),
    ]
    pol = policy([pool(nodes=10, gpus_per_node=8)], base)
    first = solve(pol, CAT)
    grown = policy(
        [pool(nodes=10, gpus_per_node=8)],
        [workload("a", profile_need("3g.40gb"), 42), base[1]],
    )
    again = solve(grown, CAT, as_current(first))
    assert _touched(again) == (1, 1)  # one more 2 x 3g.40gb GPU: one whole GPU changes on one node


def test_assign_keeps_matching_gpus_in_place() -> None:
    a = GpuLayout.of({"3g.40gb": 2})
    b = GpuLayout.of({"1g.10gb": 7})
    p = pool(nodes=2, gpus_per_node=3)
    model = CAT.get("A100-SXM4-80GB")
    current = {"p-n00": (a, WHOLE, b), "p-n01": (WHOLE, a, WHOLE)}
    # target: two a, one b, three whole -> nothing needs to move
    dec = PoolDecision(
        pool=p, model=model, layouts={a: 2, b: 1}, patterns={}, kept={}, served={}, reserved={}
    )
    nodes = assign_pool(dec, current)
    assert [n.changed_gpus for n in nodes] == [(), ()]
    # target: one a, two b -> one a becomes b in place, on one node only
    dec = PoolDecision(
        pool=p, model=model, layouts={a: 1, b: 2}, patterns={}, kept={}, served={}, reserved={}
    )
    nodes = assign_pool(dec, current)
    assert sum(len(n.changed_gpus) for n in nodes) == 1
    assert changed_indices((a, b), None) == (0, 1)
    assert changed_indices((a, b), (a,)) == (1,)


def _options(model_name: str, profiles: set[str]) -> list[GpuLayout]:
    model = CAT.get(model_name)
    assert model is not None
    return [WHOLE] + [lay for lay in enumerate_layouts(model) if all(n in profiles for n, _ in lay.profiles)]


def _served(cap: Counter[str], whole: int, workloads: list[Workload]) -> tuple[tuple[int, ...], int]:
    cap = Counter(cap)
    whole_used = 0
    out = []
    for tier in TIERS:
        got = 0
        for w in workloads:
            if w.priority_tier != tier:
                continue
            if w.need.gpus:
                take = min(w.replicas, whole - whole_used)
                whole_used += take
            else:
                take = min(w.replicas, cap[w.need.profiles[0]])
                cap[w.need.profiles[0]] -= take
            got += take
        out.append(got)
    return tuple(out), whole_used


def _brute_force_min_disruption(
    model_name: str, current: list[tuple[GpuLayout, ...]], workloads: list[Workload], target: tuple[int, ...]
) -> tuple[int, int]:
    """Fewest (nodes touched, GPUs changed) over every fleet layout that serves ``target`` = (served per
    tier..., GPUs used), i.e. every solution as good as the solver's on the levels above disruption."""
    gpn = len(current[0])
    profiles = {w.need.profiles[0] for w in workloads if w.need.profiles}
    profiles |= {n for node in current for g in node for n, _ in g.profiles}
    names = sorted(profiles)
    node_options = list(itertools.combinations_with_replacement(_options(model_name, profiles), gpn))
    vectors = []
    for opt in node_options:
        cap: Counter[str] = Counter()
        for g in opt:
            cap.update(g.counts())
        whole = sum(1 for g in opt if not g.mig_enabled)
        vectors.append((*(cap[n] for n in names), whole, gpn - whole))
    per_node_cost = []
    for cur in current:
        cur_c = Counter(cur)
        costs = []
        for opt in node_options:
            keep = sum((Counter(opt) & cur_c).values())
            costs.append((0 if keep == gpn else 1, gpn - keep))
        per_node_cost.append(costs)
    memo: dict[tuple[int, ...], bool] = {}
    best = (10**9, 10**9)
    for combo in itertools.product(range(len(node_options)), repeat=len(current)):
        total = tuple(map(sum, zip(*(vectors[j] for j in combo), strict=True)))
        ok = memo.get(total)
        if ok is None:
            cap = Counter(dict(zip(names, total[: len(names)], strict=True)))
            served, whole_used = _served(cap, total[-2], workloads)
            ok = memo[total] = (*served, total[-1] + whole_used) == target
        if not ok:
            continue
        nodes = sum(per_node_cost[i][j][0] for i, j in enumerate(combo))
        gpus = sum(per_node_cost[i][j][1] for i, j in enumerate(combo))
        best = min(best, (nodes, gpus))
    return best


def test_small_shift_touches_minimum_nodes_brute_force() -> None:
    rng = random.Random(2024)
    checked = 0
    for _ in range(20):
        profiles = rng.sample(["1g.6gb", "2g.12gb", "4g.24gb"], 2)
        ws = [
            workload(f"w{i}", profile_need(rng.choice(profiles)), rng.randint(1, 4), tenant_name=f"t{i}",
                     tier=rng.choice(TIERS))
            for i in range(3)
        ]
        fleet = [pool("p", "A30-24GB", nodes=3, gpus_per_node=2)]
        first = solve(policy(fleet, ws), CAT)
        # shift: one workload grows or shrinks by one or two replicas
        k = rng.randrange(len(ws))
        delta = rng.choice([-2, -1, 1, 2])
        shifted = list(ws)
        w = ws[k]
        shifted[k] = workload(
            w.name, w.need, max(1, w.replicas + delta), tenant_name=w.tenant, tier=w.priority_tier
        )
        if checked % 2:
            current = as_current(first)
            cur_nodes = [n.gpus for n in first.pools[0].nodes]
        else:  # an arbitrary deployed state (hand-made, drifted): any valid layouts
            opts = _options("A30-24GB", set(profiles))
            cur_nodes = [(rng.choice(opts), rng.choice(opts)) for _ in range(3)]
            current = CurrentState(
                nodes=tuple((("c1", "p", f"p-n{i:02d}"), node) for i, node in enumerate(cur_nodes))
            )
        second = solve(policy(fleet, shifted), CAT, current)
        (p,) = second.pools
        served = [0, 0]
        for d in p.demand:
            served[TIERS.index(d.priority_tier)] += d.served
        target = (*served, p.gpus_used)
        expected = _brute_force_min_disruption("A30-24GB", cur_nodes, shifted, target)
        assert _touched(second) == expected, (profiles, ws, shifted)
        checked += 1
    assert checked == 20


def test_new_nodes_and_partial_current() -> None:
    ws = [workload("w", profile_need("2g.20gb"), 9)]
    small = policy([pool(nodes=2, gpus_per_node=4)], ws)
    first = solve(small, CAT)
    big = policy([pool(nodes=4, gpus_per_node=4)], ws)
    again = solve(big, CAT, as_current(first))
    nodes = {n.name: n for n in again.pools[0].nodes}
    assert not nodes["p-n00"].changed and not nodes["p-n01"].changed
    assert nodes["p-n02"].current is None and nodes["p-n02"].changed_gpus == (0, 1, 2, 3)
    # a current state for another pool or cluster is ignored, not an error
    stray = CurrentState(nodes=(*as_current(first).nodes, (("other", "p", "x"), (WHOLE,))))
    assert _touched(solve(small, CAT, stray)) == (0, 0)


def test_invalid_current_layout_is_relaid_with_a_note() -> None:
    ws = [workload("w", profile_need("1g.10gb"), 3)]
    pol = policy([pool(nodes=1, gpus_per_node=2)], ws)
    bogus = GpuLayout.of({"3g.40gb": 3})  # does not fit one A100
    cur = CurrentState(nodes=((("c1", "p", "p-n00"), (bogus, WHOLE)),))
    sol = solve(pol, CAT, cur)
    assert any(d.code == "MIGC204" for d in sol.diagnostics)
    node = sol.pools[0].nodes[0]
    assert bogus not in node.gpus and 0 in node.changed_gpus


def test_nodes_touched_is_minimised_before_gpus_changed() -> None:
    # p-n00 = [A, C], p-n01 = [A, B]; the new demand needs A, B and two full 7g GPUs. Keeping the
    # first A (name order) would touch both nodes; the optimum keeps p-n01 whole and re-lays p-n00.
    a = GpuLayout.of({"3g.40gb": 2})
    b = GpuLayout.of({"1g.10gb": 7})
    c = GpuLayout.of({"2g.20gb": 3})
    cur = CurrentState(nodes=((("c1", "p", "p-n00"), (a, c)), (("c1", "p", "p-n01"), (a, b))))
    ws = [
        workload("x", profile_need("3g.40gb"), 2),
        workload("y", profile_need("1g.10gb"), 7),
        workload("z", profile_need("7g.80gb"), 2),
    ]
    sol = solve(policy([pool(nodes=2, gpus_per_node=2)], ws), CAT, cur)
    nodes = {n.name: n for n in sol.pools[0].nodes}
    assert not nodes["p-n01"].changed
    assert nodes["p-n00"].changed_gpus == (0, 1)
    assert _touched(sol) == (1, 2)


def test_multi_gpu_replica_gets_whole_gpus_on_one_node_even_if_current_scatters_them() -> None:
    a = GpuLayout.of({"7g.80gb": 1})
    cur = CurrentState(
        nodes=((("c1", "p", "p-n00"), (WHOLE, a, WHOLE, a)), (("c1", "p", "p-n01"), (a, WHOLE, a, WHOLE)))
    )
    ws = [workload("train", Need(gpus=4), 1), workload("serve", profile_need("7g.80gb"), 4)]
    pol = policy([pool(nodes=2, gpus_per_node=4)], ws)
    sol = solve(pol, CAT, cur)
    assert whole_gpu_jobs_pack(pol, sol)
    assert sorted(sum(1 for g in n.gpus if g == WHOLE) for n in sol.pools[0].nodes) == [0, 4]
    assert _touched(sol) == (2, 4)
