"""compiler/plan/dra.py: a backend switch step by step, how many nodes may go at once without a
tenant dropping below its guarantee, and a DynamicMIG pool's fit and worst-case fragmentation."""

from __future__ import annotations

from dataclasses import replace

from test_render_support import default_solution, policy

from compiler.catalog import load_catalog
from compiler.model import Cluster, CurrentState, DraMig, NodePool, Policy, Quota
from compiler.plan.dra import DraPool, backend, dra_json, dra_pools, dra_text, steps
from compiler.solve.result import ServedDemand, Solution

WAS_DEVICE_PLUGIN = CurrentState(backends=((("east", "a100"), "device-plugin"),))


def _policy(
    search_guarantee: int = 8, max_unavailable: int = 1, dra_mig: DraMig = "static", idle_surge: int = 0
) -> Policy:
    """The test policy with its a100 pool on DRA."""
    base = policy()
    (cluster,) = base.clusters
    pools = tuple(
        replace(p, allocation="dra", max_unavailable=max_unavailable, dra_mig=dra_mig, idle_surge=idle_surge)
        if p.name == "a100"
        else p
        for p in cluster.pools
    )
    tenants = tuple(
        replace(t, guaranteed=Quota(profiles=(("1g.10gb", search_guarantee),))) if t.name == "search" else t
        for t in base.tenants
    )
    return replace(base, clusters=(Cluster("east", pools),), tenants=tenants)


def _rows(
    pol: Policy, current: CurrentState = WAS_DEVICE_PLUGIN, sol: Solution | None = None
) -> tuple[DraPool, ...]:
    return dra_pools(pol, sol or default_solution(), load_catalog(), current)


def test_backend_and_the_order_of_a_migration() -> None:
    assert backend(NodePool("p", "c", "X", "X", 8, ("n",))) == "device-plugin"
    assert (
        backend(NodePool("p", "c", "X", "X", 8, ("n",), allocation="dra", dra_mig="dynamic")) == "dra-dynamic"
    )
    got = steps("device-plugin", "dra-dynamic")
    assert got[0].startswith("cordon; drain") and got[-1] == "uncordon"
    assert "device plugin off" in got[1]
    assert "the layout is destroyed" in got[2]  # DynamicMIG: the driver destroys what it did not create
    assert got[3].startswith("DRA kubelet plugin starts with DynamicMIG")
    assert "the MIG manager applies the solved layout" in steps("dra-dynamic", "dra-static")[2]


def test_a_switch_takes_out_as_many_nodes_as_the_guarantees_allow() -> None:
    # default_solution: a100-01 holds 16 x 1g.10gb, a100-02 42 x 1g.10gb and 2 whole GPUs; the cluster
    # 58 x 1g.10gb and 6 whole GPUs (l40s-01 has 4). Guarantees: search 8 x 1g.10gb, research 2 GPUs.
    (row,) = _rows(_policy())  # maxUnavailable 1; h200 and l40s stay on the device plugin: no row
    assert (row.pool, row.before, row.after, row.batch, row.guard) == (
        "a100",
        "device-plugin",
        "dra-static",
        1,
        "",
    )
    # idleSurge 1: an idle node may go beside the one draining, so both nodes may be away, which
    # leaves 0 of 8 guaranteed 1g.10gb: the guard says the surge is too much here
    (surge,) = _rows(_policy(idle_surge=1))
    assert (surge.batch, surge.guard) == (1, "maxUnavailable 1 + idleSurge 1 would leave too little")
    assert row.steps == steps("device-plugin", "dra-static")
    assert row.templates == () and row.fits is None  # bert has no target; not a DynamicMIG pool
    # both a100 nodes away leaves 0 of 8 guaranteed 1g.10gb: one at a time
    (two,) = _rows(_policy(max_unavailable=2))
    assert (two.batch, two.guard) == (1, "maxUnavailable 2 would leave too little")
    (two,) = _rows(_policy(max_unavailable=2, idle_surge=1))
    assert (two.batch, two.guard) == (1, "maxUnavailable 2 + idleSurge 1 would leave too little")
    # a guarantee of 50: the larger node away leaves 58 - 42 = 16
    (none,) = _rows(_policy(search_guarantee=50))
    assert none.batch == 0
    assert none.guard == (
        "even one node away leaves 1g.10gb (16 left of 50 guaranteed): add capacity before migrating"
    )


def test_a_dra_pool_already_on_its_backend_has_no_steps() -> None:
    (row,) = _rows(_policy(), CurrentState(backends=((("east", "a100"), "dra-static"),)))
    assert row.steps == () and row.batch == 0
    assert dra_text((row,)).splitlines() == ["", "DRA pools", "  east/a100: dra-static"]
    assert dra_json((row,))[0]["nodesAtOnce"] is None


def test_dynamic_pool_fit_and_worst_case_fragmentation() -> None:
    # A100-80GB: 3g.40gb sits at slices 0 or 4, so two 1g.10gb (one in 0-3, one in 4-6) block a GPU;
    # 10 x 1g.10gb block 5 of 16 GPUs, the other 11 hold 2 x 3g.40gb each: the 4 demanded fit.
    demand = (
        ServedDemand("search", "bert", "1g.10gb", 10, 10, "high"),
        ServedDemand("vision", "seg", "3g.40gb", 4, 3, "high"),
    )
    base = default_solution()
    sol = Solution(pools=tuple(replace(p, demand=demand) if p.pool == "a100" else p for p in base.pools))
    (row,) = _rows(_policy(dra_mig="dynamic"), CurrentState(), sol)
    assert row.fits is False  # one 3g.40gb unmet
    assert row.fragmentation == (
        "worst case: 2 1g.10gb on a GPU leave no placement for 3g.40gb; 10 1g.10gb can block 5 of 16 "
        "GPUs, and the 4 3g.40gb demanded still fit"
    )
    assert "demand and guarantees do NOT fit the pool's GPUs (solver: 0 of 16 GPUs)" in dra_text((row,))
    (one,) = _rows(_policy(dra_mig="dynamic"), CurrentState())
    assert one.fits is True and one.fragmentation == "one profile demanded: no fragmentation between profiles"


def test_pools_on_the_device_plugin_before_and_after_have_no_row() -> None:
    assert _rows(policy(), CurrentState()) == ()
    assert dra_text(()) == "" and dra_json(()) == []
