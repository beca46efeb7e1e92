"""compiler/plan/diff.py: GPUs in use, and the plan of a solution against a deployed layout."""

from __future__ import annotations

from test_render_support import BALANCED, SEVEN_SMALL, WHOLE, default_solution, policy, pools

from compiler.catalog import load_catalog
from compiler.model import CurrentState, NodeLayout
from compiler.plan.data import Plan, RemovedNode, TenantRow
from compiler.plan.diff import build_plan, gpus_in_use

A100, _H200, L40S = pools()


def test_gpus_in_use_fills_the_fullest_gpus_first() -> None:
    node: NodeLayout = (BALANCED, SEVEN_SMALL, WHOLE)
    assert gpus_in_use([node], {"1g.10gb": 7}, A100) == 1  # the 7x 1g.10gb GPU alone
    assert gpus_in_use([node], {"1g.10gb": 8}, A100) == 2
    assert gpus_in_use([node, None], {"gpu": 1}, A100) == 1  # an undeployed node holds nothing
    assert gpus_in_use([node], {"3g.40gb": 2}, A100) == 1  # only one GPU holds it: the rest unserved
    assert gpus_in_use([node], {}, A100) == 0


def test_gpus_in_use_takes_gpus_already_in_use_before_fresh_ones() -> None:
    # 2g.20gb (name order first) takes GPU 0; 3g.40gb then fits on GPU 0 too rather than on GPU 1
    assert gpus_in_use([(BALANCED, BALANCED)], {"2g.20gb": 1, "3g.40gb": 1}, A100) == 1


def test_gpus_in_use_counts_time_sliced_shares() -> None:
    assert gpus_in_use([(WHOLE,) * 4], {"gpu": 6}, L40S) == 2  # 4 shares per GPU


def _plan() -> tuple[CurrentState, Plan]:
    current = CurrentState(
        nodes=(
            (("east", "a100", "a100-01"), (SEVEN_SMALL,) * 8),
            (("east", "a100", "a100-02"), (SEVEN_SMALL,) * 6 + (WHOLE,) * 2),  # as the target
            (("east", "a100", "a100-99"), (WHOLE,) * 8),  # no longer in the policy
        )
    )
    return current, build_plan(policy(), default_solution(), load_catalog(), current)


def test_changed_new_and_removed_nodes_with_their_reasons() -> None:
    _, plan = _plan()
    by_node = {c.node: c for c in plan.changes}
    assert sorted(by_node) == ["a100-01", "h200-0", "h200-1", "l40s-01"]  # a100-02 is kept
    # a100-01: 8 x 7 = 56 1g.10gb become 8 x (2 + 1 + 1): pool capacity 98 → 58 1g.10gb
    assert by_node["a100-01"].reason == "pool a100 capacity -40 1g.10gb, +8 2g.20gb, +8 3g.40gb"
    assert by_node["a100-01"].changed_gpus == tuple(range(8))
    assert by_node["h200-0"].reason == "new node: no layout deployed yet"
    assert by_node["h200-0"].selector  # the h200 pool selects its nodes by label
    assert plan.removed == (RemovedNode("east", "a100", "a100-99"),)
    assert plan.nodes_total == 5 and plan.clusters == ("east",)
    assert not plan.snapshot_given and plan.evictions == ()


def test_tenants_before_are_estimated_from_the_deployed_layout() -> None:
    _, plan = _plan()
    rows = {(r.tenant, r.resource): r for r in plan.tenants}
    # bert's 8 x 1g.10gb fit the deployed a100 nodes; the l40s node was not deployed: 0 GPUs before
    assert rows[("search", "1g.10gb")] == TenantRow("east", "search", "1g.10gb", 8, 8, 8, pool="a100")
    assert rows[("research", "gpu")] == TenantRow("east", "research", "gpu", 6, 0, 6, pool="l40s")


def test_cost_counts_gpus_in_use_at_each_pools_price() -> None:
    _, plan = _plan()
    (cost,) = plan.costs
    assert cost.gpus_total == 8 * 2 + 8 * 2 + 4
    # before: bert's 8 x 1g.10gb on two 7x GPUs ($3.50); after the same plus 6 notebook shares on
    # two time-sliced L40S GPUs ($1.50)
    assert (cost.gpus_before, cost.gpus_after) == (2, 4)
    assert (cost.per_hour_before, cost.per_hour_after) == (7.0, 10.0)
    assert cost.unpriced_pools == ()


def test_a_snapshot_lists_the_pods_on_changed_nodes_only() -> None:
    current, _ = _plan()
    pods = [
        {
            "namespace": "ml",
            "name": "on-changed",
            "node": "a100-01",
            "resources": {"nvidia.com/mig-1g.10gb": 1},
        },
        {"namespace": "ml", "name": "on-kept", "node": "a100-02", "resources": {"nvidia.com/mig-1g.10gb": 1}},
    ]
    plan = build_plan(policy(), default_solution(), load_catalog(), current, pods=pods)
    assert plan.snapshot_given
    assert [(e.node, e.pod) for e in plan.evictions] == [("a100-01", "on-changed")]
