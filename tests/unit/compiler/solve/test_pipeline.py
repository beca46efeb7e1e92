"""compiler/solve/pipeline.py: ``solve()`` end to end on one- and two-GPU policies, and what it tells
the user: MIGC200 (a guarantee nowhere), MIGC201 (unmet replicas), MIGC204 (a deployed layout that
does not fit), the greedy method's marking, and ``name_list``'s summary of long lists.
"""

from __future__ import annotations

from test_solve_support import as_current, policy, pool, profile_need, served, tenant, unmet, workload

from compiler.catalog import load_catalog
from compiler.model import CurrentState, GpuLayout, Quota
from compiler.solve.pipeline import NAMES_SHOWN, name_list, solve

CAT = load_catalog()


def test_name_list_summarises_past_the_limit() -> None:
    assert name_list(["a", "b"]) == "a, b"
    names = [f"t{i:02d}" for i in range(NAMES_SHOWN + 3)]
    assert name_list(names) == ", ".join(names[:NAMES_SHOWN]) + " … and 3 more"
    assert name_list(["a", "b", "c"], limit=2) == "a, b … and 1 more"


def test_pools_sorted_and_every_workload_split_back() -> None:
    pol = policy(
        [pool("z", nodes=1, gpus_per_node=1), pool("a", nodes=1, gpus_per_node=1)],
        [
            workload("w1", profile_need("3g.40gb"), 2, pools=["z"]),
            workload("w2", profile_need("1g.10gb"), 3, pools=["a"]),
        ],
    )
    sol = solve(pol, CAT)
    assert [p.pool for p in sol.pools] == ["a", "z"]
    assert (served(sol, "w1"), served(sol, "w2")) == (2, 3) and sol.diagnostics == ()
    assert all(p.optimal for p in sol.pools)
    z = sol.pool("c1", "z")
    assert z.capacity() == {"3g.40gb": 2} and z.gpus_used == 1 and z.lower_bound_gpus == 1.0


def test_unmet_replicas_are_one_migc201_per_workload() -> None:
    pol = policy([pool("p", nodes=1, gpus_per_node=1)], [workload("w", profile_need("7g.80gb"), 3)])
    sol = solve(pol, CAT)
    assert (served(sol, "w"), unmet(sol, "w")) == (1, 2)
    (d,) = sol.diagnostics
    assert d.code == "MIGC201" and "gets 1 of 3" in d.message and "2 x 7g.80gb (pool p)" in d.message


def test_a_guarantee_no_cluster_offers_is_migc200_at_the_tenant() -> None:
    pol = policy(
        [pool("l4", "L4", mig=False)],
        [],
        tenants=[tenant("t1", guaranteed=Quota(profiles=(("1g.10gb", 2),)))],
    )
    codes = [(d.code, d.message) for d in solve(pol, CAT).diagnostics]
    assert codes == [
        (
            "MIGC200",
            "tenant t1: guaranteed 2 x 1g.10gb, but no pool in any cluster where it runs offers 1g.10gb",
        )
    ]


def test_a_deployed_layout_that_does_not_fit_is_migc204_and_re_laid() -> None:
    pol = policy([pool("p", nodes=1, gpus_per_node=1)], [workload("w", profile_need("1g.10gb"))])
    bad = CurrentState(nodes=((("c1", "p", "p-n00"), (GpuLayout.of({"7g.80gb": 2}),)),))
    sol = solve(pol, CAT, bad)
    assert [d.code for d in sol.diagnostics] == ["MIGC204"]
    assert "node p-n00 of pool c1/p" in sol.diagnostics[0].message
    assert served(sol, "w") == 1 and sol.pools[0].nodes[0].changed


def test_solving_again_on_its_own_output_changes_nothing() -> None:
    pol = policy(
        [pool("p", nodes=2, gpus_per_node=2)], [workload("w", profile_need("2g.20gb", "1g.10gb"), 9)]
    )
    first = solve(pol, CAT)
    again = solve(pol, CAT, as_current(first))
    assert [n.gpus for n in again.pools[0].nodes] == [n.gpus for n in first.pools[0].nodes]
    assert not any(n.changed for n in again.pools[0].nodes)


def test_greedy_and_metrics_only_are_marked_as_such() -> None:
    pol = policy([pool("p", nodes=1, gpus_per_node=1)], [workload("w", profile_need("1g.10gb"), 2)])
    greedy = solve(pol, CAT, method="greedy")
    assert not greedy.pools[0].optimal and served(greedy, "w") == 2
    counted = solve(pol, CAT, metrics_only=True)
    assert counted.pools[0].layout_counts == () and counted.pools[0].lower_bound_gpus == 0.0
    assert served(counted, "w") == 2
