"""The plan: no change, a resized pool, an added tenant, demand above capacity, evictions, cost, SVG."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

from test_render_support import BALANCED, SEVEN_SMALL, WHOLE, default_solution, policy, solution

from compiler.catalog import load_catalog
from compiler.commands._files import write_files
from compiler.formatting import layout_counts
from compiler.model import CurrentState, GpuLayout, HamiSettings, NodeLayout, Sharing
from compiler.plan import build_plan, parse_snapshot, svg_files, to_json, to_markdown, to_svg, to_text
from compiler.plan.diff import gpus_in_use
from compiler.solve.result import ServedDemand, Solution
from compiler.status.build import _Shares

CATALOG = load_catalog()


def deployed(sol: Solution) -> CurrentState:
    """The state after ``sol`` was rolled out."""
    return CurrentState(
        nodes=tuple(sorted(((p.cluster, p.pool, n.name), n.gpus) for p in sol.pools for n in p.nodes))
    )


BASE_DEMAND = (
    ServedDemand("search", "bert", "1g.10gb", 8, 8, "high"),
    ServedDemand("research", "notebooks", "gpu", 6, 6, "low"),
)


def test_no_change_reports_nothing() -> None:
    sol = default_solution()
    plan = build_plan(policy(), sol, CATALOG, deployed(sol))
    assert not plan.has_changes
    assert plan.changes == () and plan.removed == ()
    assert to_text(plan) == "No changes: all 5 nodes already carry their target layout.\n"
    md = to_markdown(plan, "svg")
    assert "Nodes to reconfigure" not in md and "No changes" in md
    assert json.loads(to_json(plan))["hasChanges"] is False


def test_first_rollout_marks_every_node_new() -> None:
    plan = build_plan(policy(), default_solution(), CATALOG, CurrentState())
    assert len(plan.changes) == 5
    assert all(c.before is None and c.reason.startswith("new node") for c in plan.changes)
    assert "+ node a100-01" in to_text(plan)


def test_one_pool_resized() -> None:
    before = default_solution()
    after = solution(
        {"a100-01": (BALANCED,) * 8, "a100-02": (SEVEN_SMALL,) * 8},
        demand=BASE_DEMAND,
        current={"a100-01": (BALANCED,) * 8, "a100-02": (SEVEN_SMALL,) * 6 + (WHOLE,) * 2},
    )
    plan = build_plan(policy(), after, CATALOG, deployed(before))
    assert [(c.pool, c.node, c.changed_gpus) for c in plan.changes] == [("a100", "a100-02", (6, 7))]
    change = plan.changes[0]
    assert change.reason == "pool a100 capacity +14 1g.10gb, -2 whole GPUs"
    rows = {(r.pool, r.resource): (r.before, r.after) for r in plan.capacity}
    assert rows[("a100", "1g.10gb")] == (58, 72)
    assert rows[("a100", "gpu")] == (2, 0)
    assert rows[("h200", "7g.141gb")] == (16, 16)
    text = to_text(plan, detail=True)
    assert "~ node a100-02 (pool a100, A100-SXM4-80GB)" in text
    assert "gpu 6: whole GPU (MIG off) → 7x 1g.10gb" in text
    assert "a100-01" not in text  # untouched nodes are not listed
    md = to_markdown(plan, detail=True)
    assert "| east | a100 | `a100-02` | 7 | whole GPU (MIG off) | 7x 1g.10gb |" in md
    # Grouped (the default): one line for both GPUs, the summary first.
    text = to_text(plan)
    assert text.splitlines()[0] == "1 of 5 nodes change (2 GPUs reconfigured) in 1 cluster(s)."
    assert "    east/a100: 1g.10gb 58 → 72, whole GPU 2 → 0\n" in text
    assert "      2 GPUs (6-7): whole GPU (MIG off) → 7x 1g.10gb\n" in text
    assert "gpu 6:" not in text and "a100-01" not in text
    md = to_markdown(plan)
    assert "| east | a100 | `a100-02` | 6-7 | whole GPU (MIG off) | 7x 1g.10gb |" in md


def test_tenant_added() -> None:
    before = default_solution()
    seg = GpuLayout.of({"3g.40gb": 2})
    after = solution(
        {"a100-01": (BALANCED,) * 8, "a100-02": (SEVEN_SMALL,) * 6 + (seg, seg)},
        demand=(*BASE_DEMAND, ServedDemand("vision", "seg", "3g.40gb", 2, 2, "high")),
    )
    plan = build_plan(policy(extra_tenant=True), after, CATALOG, deployed(before))
    assert [c.node for c in plan.changes] == ["a100-02"]
    tenants = {(t.tenant, t.resource): (t.before, t.after, t.requested) for t in plan.tenants}
    # The deployed balanced node already has 8 3g.40gb, so the estimate says vision was servable before.
    assert tenants[("vision", "3g.40gb")] == (2, 2, 2)
    assert tenants[("search", "1g.10gb")] == (8, 8, 8)
    doc = json.loads(to_json(plan))
    assert doc["changes"][0]["after"][6] == {"migEnabled": True, "profiles": {"3g.40gb": 2}}
    assert doc["hasChanges"] is True


def test_tenant_added_on_a_full_pool_shows_capacity_gain() -> None:
    full: NodeLayout = (SEVEN_SMALL,) * 8
    before = solution({"a100-01": full, "a100-02": full}, demand=BASE_DEMAND)
    seg = GpuLayout.of({"3g.40gb": 2})
    after = solution(
        {"a100-01": full, "a100-02": (SEVEN_SMALL,) * 7 + (seg,)},
        demand=(*BASE_DEMAND, ServedDemand("vision", "seg", "3g.40gb", 2, 2, "high")),
    )
    plan = build_plan(policy(extra_tenant=True), after, CATALOG, deployed(before))
    tenants = {(t.tenant, t.resource): (t.before, t.after) for t in plan.tenants}
    assert tenants[("vision", "3g.40gb")] == (0, 2)
    text = to_text(plan, detail=True)
    assert "east/a100 vision 3g.40gb: 0 → 2 of 2" in text and "before is estimated" in text
    summary = to_text(plan)
    assert "  tenants (served of requested; before is estimated):\n" in summary
    assert "\n    vision: 3g.40gb 0 → 2 of 2\n" in summary


def test_demand_above_capacity_is_listed_as_unmet() -> None:
    sol = solution(
        {"a100-01": (BALANCED,) * 8, "a100-02": (BALANCED,) * 8},
        demand=(
            ServedDemand("search", "bert", "1g.10gb", 40, 32, "high"),
            ServedDemand("research", "notebooks", "gpu", 20, 16, "low"),
        ),
    )
    plan = build_plan(policy(), sol, CATALOG, deployed(sol))
    assert not plan.has_changes
    assert [(u.workload, u.requested, u.served) for u in plan.unmet] == [
        ("bert", 40, 32),
        ("notebooks", 20, 16),
    ]
    text = to_text(plan)
    assert "unmet demand" in text and "east/a100 search/bert (high): 32 of 40 1g.10gb" in text
    assert "east/l40s research/notebooks (low): 16 of 20 GPU share (time-slicing ×4)" in text
    assert "| east | a100 | search | bert | high | 32 | 40 1g.10gb |" in to_markdown(plan)
    assert len(json.loads(to_json(plan))["unmet"]) == 2


def test_evictions_from_a_kubectl_snapshot() -> None:
    snapshot = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "metadata": {"namespace": "search", "name": "bert-0"},
                "spec": {
                    "nodeName": "a100-02",
                    "containers": [{"resources": {"limits": {"nvidia.com/mig-1g.10gb": "1", "cpu": "2"}}}],
                },
                "status": {"phase": "Running"},
            },
            {
                "metadata": {"namespace": "search", "name": "web"},
                "spec": {"nodeName": "a100-02", "containers": [{"resources": {"limits": {"cpu": "1"}}}]},
            },
            {
                "metadata": {"namespace": "search", "name": "done"},
                "spec": {
                    "nodeName": "a100-02",
                    "containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}],
                },
                "status": {"phase": "Succeeded"},
            },
            {
                "metadata": {"namespace": "search", "name": "elsewhere"},
                "spec": {
                    "nodeName": "a100-01",
                    "containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}],
                },
            },
        ],
    }
    pods = parse_snapshot(json.dumps(snapshot))
    assert [p["name"] for p in pods] == ["bert-0", "elsewhere"]
    before = default_solution()
    after = solution({"a100-01": (BALANCED,) * 8, "a100-02": (SEVEN_SMALL,) * 8}, demand=BASE_DEMAND)
    plan = build_plan(policy(), after, CATALOG, deployed(before), pods=pods)
    assert [(e.node, e.pod, e.resources) for e in plan.evictions] == [
        ("a100-02", "bert-0", (("nvidia.com/mig-1g.10gb", 1),))
    ]
    assert "a100-02: search/bert-0 (nvidia.com/mig-1g.10gb=1)" in to_text(plan)


def test_cost_before_after_and_balanced() -> None:
    before = default_solution()
    plan = build_plan(policy(), before, CATALOG, CurrentState())
    (cost,) = plan.costs
    # bert's 8 x 1g.10gb fit on the 1g-heavy GPUs of a100-02 (7 + 1 -> 2 GPUs); the 6 notebook shares
    # need 2 time-sliced L40S (4 replicas each); nothing runs on the H200s. Nothing deployed before.
    assert (cost.gpus_before, cost.gpus_after, cost.gpus_total) == (0, 4, 36)
    assert cost.per_hour_after == 2 * 3.5 + 2 * 1.5
    # all-balanced: 2 x 1g.10gb per A100 GPU -> 4 GPUs, plus the same 2 L40S.
    assert (cost.gpus_balanced, cost.unmet_balanced) == (6, 0)
    assert cost.per_hour_balanced == 4 * 3.5 + 2 * 1.5


def test_svg_draws_every_instance_and_is_well_formed(tmp_path: Path) -> None:
    before = default_solution()
    after = solution({"a100-01": (BALANCED,) * 8, "a100-02": (SEVEN_SMALL,) * 8}, demand=BASE_DEMAND)
    plan = build_plan(policy(), after, CATALOG, deployed(before))
    (change,) = plan.changes
    svg = to_svg(change, CATALOG.get("A100-SXM4-80GB"))
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    instance_rects = [r for r in root.iter(f"{ns}rect") if r.find(f"{ns}title") is not None]
    # before: 6 GPUs x 7 instances; after: 8 GPUs x 7 instances.
    assert len(instance_rects) == 6 * 7 + 8 * 7
    assert svg.count(">whole GPU<") == 2
    written = write_files(tmp_path / "svg", svg_files(plan, CATALOG))
    assert [p.name for p in written] == ["east-a100-02.svg"]
    assert "![a100-02](svg/east-a100-02.svg)" in to_markdown(plan, "svg")


def test_identical_nodes_and_gpus_are_grouped_with_detail_on_request() -> None:
    twins = solution({"a100-01": (BALANCED,) * 8, "a100-02": (BALANCED,) * 8}, demand=BASE_DEMAND)
    plan = build_plan(policy(), twins, CATALOG, CurrentState())
    text = to_text(plan)
    balanced = to_text(plan, detail=True).split("gpu 0: (not deployed) → ", 1)[1].split("\n", 1)[0]
    assert "  + 2 nodes a100-01, a100-02 (pool a100, A100-SXM4-80GB): new node: no layout deployed" in text
    assert f"      2 nodes × 8 GPUs: (not deployed) → {balanced}\n" in text
    assert "gpu 0:" not in text
    detail = to_text(plan, detail=True)
    assert detail.count(f": (not deployed) → {balanced}") == 16
    md = to_markdown(plan)
    assert f"| east | a100 | 2: `a100-01`, `a100-02` | 8 per node | (not deployed) | {balanced} |" in md
    assert "- `a100-01`, `a100-02`: new node: no layout deployed yet" in md
    # The summary leads: nodes, capacity per pool, tenants, cost, unmet demand, all-balanced explained.
    head = text.split("\ncluster ", 1)[0]
    for label in ("  capacity:", "  tenants (served of requested", "  cost per hour", "  unmet demand:"):
        assert label in head
    assert "all-balanced: the GPU Operator's stock mig-parted config" in head


def test_many_nodes_in_a_group_are_abbreviated() -> None:
    from compiler.plan.overview import node_names, spans

    assert node_names([f"n{i}" for i in range(10)]) == "n0, n1, n2, n3, n4, n5 and 4 more"
    assert spans([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"


def test_whole_gpu_capacity_counts_shares_of_time_slicing_and_one_per_hami_gpu() -> None:
    """A time-sliced GPU advertises ``replicas`` nvidia.com/gpu; a HAMi GPU is one GPU whose shares are
    sized by memory and cores (compiler.plan.hami), so plan and status count it once."""
    base = replace(policy().clusters[0].pools[0], mig=False, reserve_whole_gpus=0, reserve_whole_nodes=0)
    sliced = replace(base, sharing=Sharing("time-slicing", 4))
    hami = replace(base, sharing=Sharing("hami", hami=HamiSettings(split_count=8)))
    layouts: list[NodeLayout | None] = [(WHOLE, WHOLE)]
    assert layout_counts(layouts, sliced) == {"gpu": 8}
    assert layout_counts(layouts, hami) == {"gpu": 2}
    assert layout_counts(layouts, base) == {"gpu": 2}
    assert gpus_in_use(layouts, {"gpu": 5}, sliced) == 2
    assert gpus_in_use(layouts, {"gpu": 1}, hami) == 1
    assert _Shares(sliced, None).of("nvidia.com/gpu") == 0.25
    assert _Shares(hami, None).of("nvidia.com/gpu") == 1.0


def _gpus_in_use_by_definition(
    layouts: list[NodeLayout | None], served: dict[str, int], shares: int
) -> int:
    """The rule spelled out GPU by GPU, resource by resource (the quadratic form the plan used to run):
    per resource in name order, holders already used first, then most instances, then by index."""
    gpus = [g for layout in layouts for g in (layout or ())]
    used = [False] * len(gpus)
    for resource in sorted(served):
        need = served[resource]
        holders = []
        for i, g in enumerate(gpus):
            have = (shares if not g.mig_enabled else 0) if resource == "gpu" else g.counts().get(resource, 0)
            if have:
                holders.append((not used[i], -have, i, have))
        for _, _, i, have in sorted(holders):
            if need <= 0:
                break
            used[i] = True
            need -= have
    return sum(used)


def test_gpus_in_use_matches_its_definition_on_random_fleets() -> None:
    import random

    choices = (BALANCED, SEVEN_SMALL, WHOLE, GpuLayout.of({"3g.40gb": 2}), GpuLayout.of({}))
    resources = ("gpu", "1g.10gb", "2g.20gb", "3g.40gb")
    for seed in range(200):
        rng = random.Random(seed)
        layouts: list[NodeLayout | None] = [
            None if rng.random() < 0.1 else tuple(rng.choice(choices) for _ in range(rng.randint(1, 8)))
            for _ in range(rng.randint(0, 6))
        ]
        # the same node object twice, and equal layouts as distinct objects (gpus_in_use looks
        # nodes and GPUs up by object)
        if layouts and rng.random() < 0.5:
            layouts.append(layouts[rng.randrange(len(layouts))])
        if rng.random() < 0.5:
            layouts.append(tuple(GpuLayout(g.mig_enabled, g.profiles) for g in rng.choices(choices, k=4)))
        served = {r: rng.randint(0, 20) for r in resources if rng.random() < 0.7}
        expected = _gpus_in_use_by_definition(layouts, served, 1)
        assert gpus_in_use(layouts, served, None) == expected, seed


def test_plan_json_is_one_compact_deterministic_line() -> None:
    sol = default_solution()
    text = to_json(build_plan(policy(), sol, CATALOG, CurrentState()))
    assert text.endswith("\n") and text.count("\n") == 1  # compact: no indentation
    assert text == to_json(build_plan(policy(), sol, CATALOG, CurrentState()))
    assert json.loads(text)["nodesTotal"] == 5


def test_the_other_order_swaps_gpus_and_disruption_in_the_completed_order() -> None:
    from compiler.plan.orders import swapped

    assert swapped(()) == ("gpus", "disruption", "preference")
    assert swapped(("gpus",)) == ("disruption", "gpus", "preference")
    assert swapped(("preference",)) == ("preference", "gpus", "disruption")
    assert swapped(("disruption", "preference", "gpus")) == ("gpus", "preference", "disruption")


def test_the_other_order_line_names_each_difference() -> None:
    from compiler.plan.data import OrderCost, OrderOutcome
    from compiler.plan.formatting import order_line

    chosen = OrderOutcome(gpus_used=1212, nodes_changed=22, gpus_changed=130, unmet=0, proven=True)
    cost = OrderCost(
        order=("disruption", "gpus", "preference"),
        other=("gpus", "disruption", "preference"),
        chosen=chosen,
        alternative=OrderOutcome(gpus_used=1200, nodes_changed=59, gpus_changed=410, unmet=0, proven=True),
    )
    assert order_line(cost) == (
        "gpus first ([gpus, disruption, preference]) would use 12 fewer GPUs (1200 instead of 1212) "
        "and change 37 more deployed nodes (59 instead of 22; 410 instead of 130 GPUs)"
    )
    back = OrderCost(
        order=cost.other,
        other=cost.order,
        chosen=cost.alternative,
        alternative=replace(chosen, gpus_changed=131, unmet=3, proven=False, nodes_changed=59),
    )
    assert order_line(back) == (
        "disruption first ([disruption, gpus, preference]) would use 12 more GPUs (1212 instead of 1200), "
        "change as many deployed nodes (59) but 279 fewer GPUs (131 instead of 410) and leave 3 replicas "
        "unmet instead of 0 (not proven optimal within the solver's time limit)"
    )
