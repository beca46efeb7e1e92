"""The plan shows how a tier that cannot be served in full is shared, and by which rule (issue 26)."""

from __future__ import annotations

import json

from test_solve_support import policy, pool, profile_need, workload

from compiler.catalog import load_catalog
from compiler.model import CurrentState
from compiler.plan import Plan, build_plan, to_json, to_markdown, to_text
from compiler.solve import solve
from compiler.solve.result import FAIRNESS_RULE

CAT = load_catalog()


def _short_plan() -> Plan:
    # the case: five tenants ask 9/7/5/3/1 x 7g.80gb of 8 GPUs; a low tier gets nothing
    ws = [
        workload(f"w{j}", profile_need("7g.80gb"), r, tenant_name=f"t{j}")
        for j, r in enumerate([9, 7, 5, 3, 1])
    ]
    ws.append(workload("later", profile_need("7g.80gb"), 2, tenant_name="t9", tier="low"))
    pol = policy([pool(nodes=1, gpus_per_node=8)], ws)
    return build_plan(pol, solve(pol, CAT), CAT, CurrentState())


def test_the_split_of_a_short_tier_is_in_every_format() -> None:
    plan = _short_plan()
    assert [(ft.cluster, ft.tier) for ft in plan.fairness] == [("c1", "high"), ("c1", "low")]
    high = plan.fairness[0]
    assert high.rule == FAIRNESS_RULE
    # smallest served fraction first: 2/9, 2/7, 1/3, 2/5, 1/1
    assert [(s.workload, s.served, s.requested) for s in high.shares] == [
        ("w0", 2, 9),
        ("w1", 2, 7),
        ("w3", 1, 3),
        ("w2", 2, 5),
        ("w4", 1, 1),
    ]
    text = to_text(plan)
    assert f"(rule: {FAIRNESS_RULE})" in text
    assert "  c1 tier high: 8 of 25 instances" in text
    assert "    t0/w0: 2 of 9 (22%)" in text and "    t9/later: 0 of 2 (0%)" in text
    md = to_markdown(plan)
    assert "### Fair share of tiers not served in full" in md
    assert "| c1 | high | t0 | w0 | 2 | 9 | 22% |" in md
    doc = json.loads(to_json(plan))
    assert doc["fairness"][0] == {
        "cluster": "c1",
        "tier": "high",
        "rule": FAIRNESS_RULE,
        "workloads": [
            {"tenant": t, "workload": w, "served": s, "requested": r}
            for t, w, s, r in [
                ("t0", "w0", 2, 9),
                ("t1", "w1", 2, 7),
                ("t3", "w3", 1, 3),
                ("t2", "w2", 2, 5),
                ("t4", "w4", 1, 1),
            ]
        ],
    }


def test_a_tier_served_in_full_shows_no_split() -> None:
    ws = [workload(f"w{j}", profile_need("7g.80gb"), r, tenant_name=f"t{j}") for j, r in enumerate([3, 2, 1])]
    pol = policy([pool(nodes=1, gpus_per_node=8)], ws)
    plan = build_plan(pol, solve(pol, CAT), CAT, CurrentState())
    assert plan.fairness == ()
    assert "fair share" not in to_text(plan) and json.loads(to_json(plan))["fairness"] == []
