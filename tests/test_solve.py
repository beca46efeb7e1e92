"""Solver behaviour: demand forms, guarantees, unmet demand, whole/multi-GPU, non-MIG pools, output."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import jsonschema
import pytest
from test_solve_support import (
    Need,
    as_current,
    policy,
    pool,
    profile_need,
    served,
    tenant,
    unmet,
    whole_gpu_jobs_pack,
    workload,
)

from compiler.catalog import load_catalog
from compiler.catalog.layouts import is_feasible
from compiler.diagnostics import Severity
from compiler.model import GpuLayout, PartitionPolicy, Policy, Quota, Sharing, Tenant
from compiler.pipeline import load_and_validate
from compiler.solve import solve
from compiler.solve.export import solution_to_dict
from compiler.solve.result import Solution

REPO = Path(__file__).resolve().parents[1]
CAT = load_catalog()
WHOLE = GpuLayout.whole()


def _check_layouts(sol: Solution) -> None:
    for p in sol.pools:
        model = CAT.get(p.gpu_model)
        assert model is not None
        for node in p.nodes:
            for gpu in node.gpus:
                if gpu.mig_enabled:
                    assert model.mig_capable and is_feasible(model, gpu.counts()), (p.pool, node.name, gpu)


def test_exact_profiles_are_packed_into_fewest_gpus() -> None:
    pol = policy([pool(nodes=1)], [workload("w", profile_need("1g.10gb"), replicas=10)])
    sol = solve(pol, CAT)
    _check_layouts(sol)
    (p,) = sol.pools
    assert p.optimal and p.gpus_used == 2 and served(sol, "w") == 10
    assert p.lower_bound_gpus == pytest.approx(10 / 7, abs=1e-6)
    assert p.capacity()["1g.10gb"] >= 10
    assert p.capacity()["gpu"] == 6  # the rest stays whole and free
    assert not sol.diagnostics


def test_two_3g_leave_no_room_for_a_1g_on_the_memory_axis() -> None:
    pol = policy(
        [pool(nodes=1, gpus_per_node=2)],
        [workload("a", profile_need("3g.40gb"), replicas=2), workload("b", profile_need("1g.10gb"), 1)],
    )
    sol = solve(pol, CAT)
    _check_layouts(sol)
    assert sol.pools[0].gpus_used == 2
    assert served(sol, "a") == 2 and served(sol, "b") == 1


def test_resources_need_picks_smallest_fitting_profile_per_model() -> None:
    pol = policy(
        [pool("a100", nodes=1), pool("h200", "H200-141GB", nodes=1)],
        [
            workload("small", Need(gpu_memory_gb=15, compute_slices=1), replicas=3, pools=["a100"]),
            workload("big", Need(gpu_memory_gb=30, compute_slices=2), replicas=2, pools=["h200"]),
        ],
    )
    sol = solve(pol, CAT)
    a100 = sol.pool("c1", "a100")
    h200 = sol.pool("c1", "h200")
    assert {d.resource for d in a100.demand} == {"1g.20gb"}  # 1g.10gb is too small, 2g.20gb has more compute
    assert {d.resource for d in h200.demand} == {"2g.35gb"}
    assert served(sol, "small") == 3 and served(sol, "big") == 2


def test_preference_list_prefers_earlier_profiles_when_free() -> None:
    pol = policy([pool(nodes=1)], [workload("w", profile_need("2g.20gb", "1g.10gb"), replicas=3)])
    sol = solve(pol, CAT)
    rows = {d.resource: d.served for d in sol.pools[0].demand}
    assert rows == {"2g.20gb": 3}


def test_preference_list_falls_back_when_the_first_choice_is_full() -> None:
    # one GPU: at most three 2g, so the fourth replica takes a 1g (2+2+2+1 compute slices)
    pol = policy([pool(nodes=1, gpus_per_node=1)], [workload("w", profile_need("2g.20gb", "1g.10gb"), 4)])
    sol = solve(pol, CAT)
    rows = {d.resource: d.served for d in sol.pools[0].demand}
    assert rows == {"2g.20gb": 3, "1g.10gb": 1}
    assert unmet(sol, "w") == 0


def test_media_extension_only_when_named() -> None:
    pol = policy([pool(nodes=1)], [workload("w", profile_need("1g.10gb"), replicas=20)])
    sol = solve(pol, CAT)
    assert not any("+me" in n for lay, _ in sol.pools[0].layout_counts for n, _ in lay.profiles)
    pol = policy(
        [pool(nodes=1)],
        [workload("w", profile_need("1g.10gb"), 6), workload("v", profile_need("1g.10gb+me"), 2)],
    )
    sol = solve(pol, CAT)
    _check_layouts(sol)
    assert served(sol, "v") == 2
    for node in sol.pools[0].nodes:
        for gpu in node.gpus:
            assert gpu.counts().get("1g.10gb+me", 0) <= 1


def test_higher_tier_is_served_strictly_first() -> None:
    # one GPU: 7 compute slices. critical wants one 4g; low wants seven 1g (more replicas in total)
    pol = policy(
        [pool(nodes=1, gpus_per_node=1)],
        [
            workload("crit", profile_need("4g.40gb"), 1, tenant_name="a", tier="critical"),
            workload("lots", profile_need("1g.10gb"), 7, tenant_name="b", tier="low"),
        ],
    )
    sol = solve(pol, CAT)
    assert served(sol, "crit") == 1 and served(sol, "lots") == 3
    diags = [d for d in sol.diagnostics if d.code == "MIGC201"]
    assert len(diags) == 1 and "lots" in diags[0].message and diags[0].severity == Severity.WARNING
    assert "4 x 1g.10gb" in diags[0].message


def test_unmet_demand_severity_follows_policy() -> None:
    w = [workload("w", profile_need("7g.80gb"), replicas=3)]
    pol = policy([pool(nodes=1, gpus_per_node=2)], w, partition=PartitionPolicy(unmet_demand="error"))
    sol = solve(pol, CAT)
    assert unmet(sol, "w") == 1
    (d,) = [d for d in sol.diagnostics if d.code == "MIGC201"]
    assert d.severity == Severity.ERROR


def test_unservable_workload_is_reported() -> None:
    pol = policy(
        [pool(nodes=1)], [workload("huge", Need(gpu_memory_gb=200), 1), workload("ok", Need(gpus=1))]
    )
    sol = solve(pol, CAT)
    (d,) = [d for d in sol.diagnostics if d.code == "MIGC202"]
    assert "huge" in d.message and "200 GB" in d.message
    assert served(sol, "ok") == 1


def test_guarantee_reserves_capacity_without_demand() -> None:
    t = tenant("g", guaranteed=Quota(profiles=(("2g.20gb", 4),), gpus=1))
    pol = policy([pool(nodes=1)], [], tenants=[t])
    sol = solve(pol, CAT)
    p = sol.pools[0]
    assert not sol.diagnostics
    assert p.capacity()["2g.20gb"] >= 4
    assert dict(((tn, r), c) for tn, r, c in p.reserved) == {("g", "2g.20gb"): 4, ("g", "gpu"): 1}
    assert p.gpus_used == 3  # two GPUs for four 2g (three per GPU) + one whole GPU


def test_guarantee_counts_the_tenants_own_demand() -> None:
    t = tenant("g", guaranteed=Quota(profiles=(("1g.10gb", 5),)))
    pol = policy([pool(nodes=1)], [workload("w", profile_need("1g.10gb"), 3, tenant_name="g")], tenants=[t])
    sol = solve(pol, CAT)
    assert sol.pools[0].reserved == (("g", "1g.10gb", 2),)


def test_infeasible_guarantee_names_tenant_profile_and_numbers() -> None:
    t = tenant("greedy", guaranteed=Quota(profiles=(("1g.10gb", 100),)))
    pol = policy([pool(nodes=1, reserve_gpus=2)], [], tenants=[t])
    sol = solve(pol, CAT)
    errs = [d for d in sol.diagnostics if d.code == "MIGC200"]
    assert len(errs) == 1 and errs[0].severity == Severity.ERROR
    msg = errs[0].message
    assert "greedy" in msg and "1g.10gb" in msg and "100" in msg and "42" in msg  # 6 usable GPUs x 7


def test_jointly_infeasible_guarantees_report_the_shortfall() -> None:
    ts = [tenant(n, guaranteed=Quota(profiles=(("3g.40gb", 2),))) for n in ("a", "b")]
    pol = policy([pool(nodes=1, gpus_per_node=1)], [], tenants=ts)
    sol = solve(pol, CAT)
    errs = [d for d in sol.diagnostics if d.code == "MIGC200"]
    assert len(errs) == 1
    msg = errs[0].message
    assert "guaranteed 4 x 3g.40gb together" in msg and "room for 2" in msg and "2 short" in msg
    assert "at most 2 on their own" in msg and "(2): a (2), b (2)" in msg


def test_guarantee_for_a_profile_no_pool_offers() -> None:
    t = tenant("h", guaranteed=Quota(profiles=(("1g.18gb", 1),)))
    pol = policy([pool(nodes=1)], [], tenants=[t])
    sol = solve(pol, CAT)
    (d,) = [d for d in sol.diagnostics if d.code == "MIGC200"]
    assert "1g.18gb" in d.message and "no pool" in d.message


def _whole_per_node(sol: Solution) -> list[int]:
    return [sum(1 for g in n.gpus if g == WHOLE) for p in sol.pools for n in p.nodes]


def test_multi_gpu_replicas_need_whole_gpus_on_one_node() -> None:
    # two nodes of 4: two 3-GPU replicas and one 2-GPU replica cannot all fit (3+3 and 2 need 3 nodes)
    pol = policy(
        [pool(nodes=2, gpus_per_node=4)],
        [workload("big", Need(gpus=3), 2, isolation="exclusive"), workload("mid", Need(gpus=2), 1)],
    )
    sol = solve(pol, CAT)
    assert served(sol, "big") // 3 + served(sol, "mid") // 2 == 2
    counts = sorted(_whole_per_node(sol), reverse=True)
    assert counts[0] >= 3 and counts[1] >= 2


def test_multi_gpu_and_mig_share_a_node() -> None:
    pol = policy(
        [pool(nodes=1, gpus_per_node=8)],
        [workload("train", Need(gpus=4), 1), workload("inf", profile_need("1g.10gb"), 14)],
    )
    sol = solve(pol, CAT)
    _check_layouts(sol)
    assert served(sol, "train") == 4 and served(sol, "inf") == 14
    assert sol.pools[0].gpus_used == 6
    assert _whole_per_node(sol)[0] == 6


def test_reserved_whole_nodes_and_gpus_stay_whole() -> None:
    pol = policy(
        [pool(nodes=3, gpus_per_node=2, reserve_nodes=1, reserve_gpus=1)],
        [workload("w", profile_need("7g.80gb"), 10)],
    )
    sol = solve(pol, CAT)
    assert served(sol, "w") == 3  # 6 GPUs - 2 (reserved node) - 1 (reserved GPU)
    assert sum(1 for n in sol.pools[0].nodes if all(g == WHOLE for g in n.gpus)) >= 1
    assert sum(_whole_per_node(sol)) == 3


def test_shared_workloads_use_time_sliced_pools() -> None:
    ts = pool("l40s", "L40S", nodes=2, gpus_per_node=4, mig=False, sharing=Sharing("time-slicing", 4))
    pol = policy(
        [pool("a100", nodes=1), ts],
        [
            workload("nb", Need(gpus=1), 30, isolation="shared"),
            workload("x", Need(gpus=1), 40, isolation="shared"),
        ],
    )
    sol = solve(pol, CAT)
    p = sol.pool("c1", "l40s")
    assert served(sol, "nb") + served(sol, "x") == 32  # 8 GPUs x 4 replicas
    assert p.gpus_used == 8
    assert all(g == WHOLE for n in p.nodes for g in n.gpus)
    assert not sol.pool("c1", "a100").demand
    # the two merged workloads share the 32 slots max-min fairly on their served fraction
    assert (served(sol, "nb"), served(sol, "x")) == (14, 18)
    assert sum(1 for d in sol.diagnostics if d.code == "MIGC201") == 2


def test_solver_chooses_between_pools_and_respects_restrictions() -> None:
    pol = policy(
        [pool("a", nodes=1, gpus_per_node=1), pool("b", "H100-80GB", nodes=1, gpus_per_node=1)],
        [
            workload("any", profile_need("3g.40gb"), 4),
            workload("only-a", profile_need("1g.10gb"), 1, pools=["a"]),
        ],
    )
    sol = solve(pol, CAT)
    assert served(sol, "any") == 3 and served(sol, "only-a") == 1
    assert not [d for d in sol.pool("c1", "b").demand if d.workload == "only-a"]


def test_non_mig_pool_is_all_whole() -> None:
    pol = policy([pool("l4", "L4", nodes=2, gpus_per_node=2, mig=False)], [workload("e", Need(gpus=2), 1)])
    sol = solve(pol, CAT)
    assert served(sol, "e") == 2
    assert all(g == WHOLE for n in sol.pools[0].nodes for g in n.gpus)


def test_greedy_fallback_is_valid_and_marked() -> None:
    pol = policy(
        [pool(nodes=2, gpus_per_node=4)],
        [
            workload("a", profile_need("3g.40gb"), 3),
            workload("b", profile_need("1g.10gb"), 9),
            workload("c", Need(gpus=2), 1),
        ],
    )
    exact = solve(pol, CAT)
    greedy = solve(pol, CAT, method="greedy")
    _check_layouts(greedy)
    assert all(not p.optimal for p in greedy.pools) and all(p.optimal for p in exact.pools)
    assert sum(p.gpus_used for p in greedy.pools) >= sum(p.gpus_used for p in exact.pools)
    for name in ("a", "b", "c"):
        assert unmet(greedy, name) == 0 and unmet(exact, name) == 0
    cap = greedy.pools[0].capacity()
    assert cap.get("3g.40gb", 0) >= served(greedy, "a") and cap.get("1g.10gb", 0) >= served(greedy, "b")


def test_rows_sorted_and_pools_sorted() -> None:
    pol = policy(
        [pool("z", nodes=1), pool("a", nodes=1)],
        [workload(f"w{i}", profile_need("1g.10gb"), 2, tenant_name=f"t{i % 3}") for i in range(6)],
    )
    sol = solve(pol, CAT)
    assert [(p.cluster, p.pool) for p in sol.pools] == [("c1", "a"), ("c1", "z")]
    for p in sol.pools:
        keys = [(d.tenant, d.workload, d.resource) for d in p.demand]
        assert keys == sorted(keys)
        assert [n.name for n in p.nodes] == sorted(n.name for n in p.nodes)


def _random_policy(seed: int) -> Policy:
    rng = random.Random(seed)
    pools = [pool("a100", nodes=3, gpus_per_node=4), pool("h100", "H100-80GB", nodes=2, gpus_per_node=4)]
    profiles = ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb"]
    ws = []
    for i in range(12):
        kind = rng.random()
        if kind < 0.6:
            need = profile_need(*rng.sample(profiles, rng.choice([1, 1, 2])))
        elif kind < 0.8:
            need = Need(gpu_memory_gb=rng.choice([8, 15, 30]), compute_slices=rng.choice([1, 2]))
        else:
            need = Need(gpus=rng.choice([1, 2, 4]))
        ws.append(
            workload(
                f"w{i:02d}",
                need,
                rng.randint(1, 6),
                tenant_name=f"t{i % 4}",
                tier=rng.choice(["high", "low"]),
            )
        )
    return policy(pools, ws)


def _shuffled(pol: Policy, seed: int) -> Policy:
    rng = random.Random(seed)
    ws = list(pol.workloads)
    ts = list(pol.tenants)
    rng.shuffle(ws)
    rng.shuffle(ts)
    clusters = tuple(
        c.__class__(name=c.name, pools=tuple(reversed(c.pools))) for c in reversed(pol.clusters)
    )
    return Policy(clusters=clusters, tenants=tuple(ts), workloads=tuple(ws), partition=pol.partition)


def test_deterministic_under_shuffled_input() -> None:
    pol = _random_policy(7)
    first = json.dumps(solution_to_dict(solve(pol, CAT)), sort_keys=True)
    for seed in range(3):
        again = json.dumps(solution_to_dict(solve(_shuffled(pol, seed), CAT)), sort_keys=True)
        assert again == first


_SUBPROCESS = """
import json, sys
sys.path.insert(0, {tests!r})
from test_solve import _random_policy
from compiler.catalog import load_catalog
from compiler.solve import solve
from compiler.solve.export import solution_to_dict
from test_solve_support import as_current
pol = _random_policy(11)
sol = solve(pol, load_catalog())
again = solve(pol, load_catalog(), as_current(sol))
print(json.dumps([solution_to_dict(sol), solution_to_dict(again)], sort_keys=True))
"""


@pytest.mark.slow
def test_deterministic_across_hash_seeds() -> None:
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-c", _SUBPROCESS.format(tests=str(REPO / "tests"))],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.add(proc.stdout)
    assert len(outputs) == 1
    assert not next(iter(outputs)).startswith("Running HiGHS")  # the banner never reaches stdout


def test_export_matches_schema() -> None:
    schema = json.loads((REPO / "schema" / "solution.schema.json").read_text(encoding="utf-8"))
    pol = _random_policy(3)
    sol = solve(pol, CAT)
    again = solve(pol, CAT, as_current(sol))
    for s in (sol, again):
        doc = solution_to_dict(s)
        jsonschema.Draft202012Validator(schema).validate(doc)
    doc = solution_to_dict(again)
    assert doc["summary"]["nodesChanged"] == 0 and doc["summary"]["gpusChanged"] == 0
    first = solution_to_dict(sol)
    assert first["summary"]["gpusChanged"] == first["summary"]["gpusTotal"]  # nothing deployed before
    tenants = {t["tenant"] for c in first["clusters"] for p in c["pools"] for t in p["tenants"]}
    assert tenants == {w.tenant for w in pol.workloads}


@pytest.mark.slow
def test_random_policies_are_valid() -> None:
    for seed in range(15):
        pol = _random_policy(seed)
        sol = solve(pol, CAT)
        _check_layouts(sol)
        for p in sol.pools:
            assert p.optimal
            assert p.gpus_used + 1e-6 >= p.lower_bound_gpus
            cap = Counter(p.capacity())
            need: Counter[str] = Counter()
            for d in p.demand:
                need[d.resource] += d.served
            for res, amount in need.items():
                assert cap[res] >= amount, (seed, p.pool, res)
        # every served k-GPU replica gets k whole GPUs on one node
        assert whole_gpu_jobs_pack(pol, sol), seed


def _example_dirs() -> list[Path]:
    root = REPO / "examples"
    if not root.exists():
        return []
    # policy sets only (other example folders hold manifests, e.g. the discover DaemonSet)
    return sorted(
        d
        for d in root.iterdir()
        if d.is_dir() and any("kind: Fleet" in f.read_text(encoding="utf-8") for f in d.glob("*.yaml"))
    )


@pytest.mark.parametrize("directory", _example_dirs(), ids=lambda d: d.name)
def test_examples_solve(directory: Path) -> None:
    pol, diags = load_and_validate([str(directory)])
    assert pol is not None, [d.message for d in diags]
    sol = solve(pol, CAT)
    _check_layouts(sol)
    assert all(p.optimal for p in sol.pools)
    assert not [d for d in sol.diagnostics if d.severity == Severity.ERROR]
    again = solve(pol, CAT, as_current(sol))
    assert not any(n.changed for p in again.pools for n in p.nodes)


def test_highs_failure_falls_back_to_greedy(monkeypatch: pytest.MonkeyPatch) -> None:
    from compiler.solve import lexmilp

    monkeypatch.setattr(lexmilp.Milp, "solve", lambda self, levels, *args, **kwargs: None)
    pol = policy([pool(nodes=1)], [workload("w", profile_need("2g.20gb"), 5)])
    sol = solve(pol, CAT)
    assert [d.code for d in sol.diagnostics] == ["MIGC203"]
    assert sol.diagnostics[0].severity == Severity.WARNING
    (p,) = sol.pools
    assert not p.optimal and served(sol, "w") == 5
    _check_layouts(sol)


def test_guarantee_applies_in_every_cluster_the_tenant_runs_in() -> None:
    t = tenant("g", guaranteed=Quota(profiles=(("1g.10gb", 3),)))
    pools_ = [
        pool("a", nodes=1, cluster="east"),
        pool("b", nodes=1, cluster="west"),
        pool("c", cluster="idle"),
    ]
    ws = [
        workload("e", profile_need("2g.20gb"), 1, tenant_name="g", cluster="east"),
        workload("w", profile_need("2g.20gb"), 1, tenant_name="g", cluster="west"),
    ]
    sol = solve(policy(pools_, ws, tenants=[t]), CAT)
    held = {p.cluster: p.reserved for p in sol.pools}
    assert held == {"east": (("g", "1g.10gb", 3),), "west": (("g", "1g.10gb", 3),), "idle": ()}


def test_each_infeasible_guarantee_is_reported_even_on_one_tenant() -> None:
    t = tenant("g", guaranteed=Quota(profiles=(("1g.10gb", 50), ("3g.40gb", 9)), gpus=20))
    sol = solve(policy([pool(nodes=1)], [], tenants=[t]), CAT)
    msgs = [d.message for d in sol.diagnostics if d.code == "MIGC200"]
    assert len(msgs) >= 2 and len(set(msgs)) == len(msgs)


def test_repeated_profile_in_preference_list_counts_once() -> None:
    pol = policy([pool(nodes=1, gpus_per_node=1)], [workload("w", profile_need("1g.10gb", "1g.10gb"), 9)])
    sol = solve(pol, CAT)
    assert served(sol, "w") == 7 and unmet(sol, "w") == 2


def test_spare_room_goes_to_burst_profiles() -> None:
    t = Tenant(name="b", namespaces=("b",), priority_tier="high", burst=Quota(profiles=(("1g.20gb", 4),)))
    w = workload("w", profile_need("1g.10gb"), 3, tenant_name="b")
    pol = policy([pool(nodes=1, gpus_per_node=2)], [w], [t])
    sol = solve(pol, CAT)
    p = sol.pools[0]
    assert p.gpus_used == 1 and served(sol, "w") == 3
    assert p.capacity().get("1g.20gb", 0) == 2  # 3 x 1g.10gb + 2 x 1g.20gb fill the memory axis
    assert p.capacity()["gpu"] == 1  # burst never opens a GPU


@pytest.mark.slow
def test_greedy_solutions_are_valid_on_random_policies() -> None:
    for seed in range(10):
        pol = _random_policy(seed)
        t0 = pol.tenants[0]
        guaranteed = dataclasses.replace(t0, guaranteed=Quota(profiles=(("1g.10gb", 3),), gpus=2))
        pol = dataclasses.replace(pol, tenants=(guaranteed, *pol.tenants[1:]))
        exact = solve(pol, CAT)
        greedy = solve(pol, CAT, method="greedy")
        _check_layouts(greedy)
        assert whole_gpu_jobs_pack(pol, greedy), seed
        for p in greedy.pools:
            assert not p.optimal
            cap = Counter(p.capacity())
            used: Counter[str] = Counter()
            for d in p.demand:
                used[d.resource] += d.served
            for _tenant, res, count in p.reserved:
                used[res] += count
            assert all(cap[r] >= c for r, c in used.items()), (seed, p.pool)
        assert all(p.optimal for p in exact.pools)


def test_unproven_level_is_reported_and_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    from compiler.solve import lexmilp

    real = lexmilp.Milp.solve

    def capped(
        self: lexmilp.Milp,
        levels: list[lexmilp.Level],
        time_limit: float = 30.0,
        relax: bool = False,
        start: dict[str, float] | None = None,
    ) -> lexmilp.LexResult | None:
        if relax:
            return real(self, levels, time_limit, relax)
        # as if the time limit struck after the GPU level: keep its point, stop proving
        late = ("kept", "changed", "displaced", "burst", "fill")
        cut = [lv for lv in levels if not lv.name.startswith(late)]
        res = real(self, cut, time_limit, relax, start)
        assert res is not None
        res.optimal = False
        res.failed_level = "fill"
        return res

    monkeypatch.setattr(lexmilp.Milp, "solve", capped)
    pol = policy([pool(nodes=1)], [workload("w", profile_need("2g.20gb"), 5)])
    sol = solve(pol, CAT)
    (d,) = sol.diagnostics
    assert d.code == "MIGC203" and "fill" in d.message
    assert not sol.pools[0].optimal and served(sol, "w") == 5
    _check_layouts(sol)


def test_the_smallest_set_of_tenants_is_named_largest_first() -> None:
    # one A100 holds at most two 3g.40gb: room 2, demand 5; tenant "big" (3) alone already exceeds it
    amounts = (("a", 1), ("big", 3), ("c", 1))
    ts = [tenant(n, guaranteed=Quota(profiles=(("3g.40gb", k),))) for n, k in amounts]
    sol = solve(policy([pool(nodes=1, gpus_per_node=1)], [], tenants=ts), CAT)
    (d,) = [d for d in sol.diagnostics if d.code == "MIGC200"]
    assert "3 tenants are guaranteed 5 x 3g.40gb together" in d.message and "room for 2" in d.message
    assert d.message.endswith("cannot be held together (1): big (3)")


def test_500_tenants_that_do_not_fit_get_a_bounded_explanation() -> None:
    n = 500
    ts = [
        tenant(f"t{i:03d}", guaranteed=Quota(profiles=(("3g.40gb" if i % 2 else "1g.10gb", 1),)))
        for i in range(n)
    ]
    ws = [workload(f"w{i:03d}", profile_need("2g.20gb"), 1, tenant_name=f"t{i:03d}") for i in range(n)]
    sol = solve(policy([pool(nodes=8)], ws, tenants=ts), CAT)
    codes = sorted(d.code for d in sol.diagnostics)
    assert codes == ["MIGC200", "MIGC201"]  # one per (cluster, resource), one per (cluster, tier)
    assert sum(len(d.message) + len(d.hint) for d in sol.diagnostics) < 2000
    (g,) = [d for d in sol.diagnostics if d.code == "MIGC200"]
    # 250 x 3g.40gb next to 250 x 1g.10gb on 64 A100s: the smallest failing set is one more than the room
    room = int(g.message.split("room for ")[1].split(" ")[0])
    assert f"cannot be held together ({room + 1}): t001 (1), " in g.message
    assert f"… and {room + 1 - 10} more" in g.message
    (u,) = [d for d in sol.diagnostics if d.code == "MIGC201"]
    assert u.message.startswith(f"{n - 1} workloads of tier high get 0 of {n - 1} instance(s)")
    assert "… and 489 more" in u.message


def test_a_few_short_workloads_are_each_reported() -> None:
    ws = [workload(f"w{i}", profile_need("7g.80gb"), 1) for i in range(3)]
    sol = solve(policy([pool(nodes=1, gpus_per_node=1)], ws), CAT)
    assert sorted(d.message.split()[1] for d in sol.diagnostics if d.code == "MIGC201") == ["w1", "w2"]
