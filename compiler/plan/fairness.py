"""The split of each priority tier the solver could not serve in full, with the rule that made it.

Per cluster and tier (highest first), each MIG or whole-GPU workload's instances served and
requested, summed over its pools, smallest served fraction first. A tier served in full has no
split to show. HAMi shares are packed by their own pass (compiler.solve.hami) and are not listed.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from compiler.model import Policy
from compiler.plan.data import FairShare, FairTier, Plan
from compiler.solve.result import FAIRNESS_RULE, Solution


def fair_tiers(policy: Policy, solution: Solution) -> tuple[FairTier, ...]:
    got: dict[tuple[str, str], dict[tuple[str, str], list[int]]] = {}
    for result in solution.pools:
        for row in result.demand:
            per = got.setdefault((result.cluster, row.priority_tier), {})
            acc = per.setdefault((row.tenant, row.workload), [0, 0])
            acc[0] += row.served
            acc[1] += row.requested

    def rank(tier: str) -> int:
        try:
            return -policy.partition.tier_value(tier)
        except KeyError:
            return 0

    out = []
    for (cluster, tier), per in sorted(got.items(), key=lambda kv: (kv[0][0], rank(kv[0][1]), kv[0][1])):
        if all(s >= r for s, r in per.values()):
            continue
        shares = sorted(
            (FairShare(t, w, s, r) for (t, w), (s, r) in per.items()),
            key=lambda f: (Fraction(f.served, f.requested) if f.requested else Fraction(1), f.workload),
        )
        out.append(FairTier(cluster, tier, FAIRNESS_RULE, tuple(shares)))
    return tuple(out)


def _pct(share: FairShare) -> str:
    return f"{share.served / share.requested:.0%}" if share.requested else "-"


def fairness_text(plan: Plan) -> list[str]:
    if not plan.fairness:
        return []
    out = ["", f"fair share of tiers not served in full (rule: {FAIRNESS_RULE})"]
    for ft in plan.fairness:
        served = sum(s.served for s in ft.shares)
        wanted = sum(s.requested for s in ft.shares)
        out.append(f"  {ft.cluster} tier {ft.tier}: {served} of {wanted} instances")
        for s in ft.shares:
            out.append(f"    {s.tenant}/{s.workload}: {s.served} of {s.requested} ({_pct(s)})")
    return out


def fairness_markdown(plan: Plan) -> list[str]:
    if not plan.fairness:
        return []
    out = ["", "### Fair share of tiers not served in full", "", f"Rule: {FAIRNESS_RULE}.", ""]
    out.append("| cluster | tier | tenant | workload | served | requested | served fraction |")
    out.append("|---|---|---|---|---:|---:|---:|")
    for ft in plan.fairness:
        for s in ft.shares:
            cells = (ft.cluster, ft.tier, s.tenant, s.workload, str(s.served), str(s.requested), _pct(s))
            out.append("| " + " | ".join(cells) + " |")
    return out


def fairness_json(plan: Plan) -> list[dict[str, Any]]:
    return [
        {
            "cluster": ft.cluster,
            "tier": ft.tier,
            "rule": ft.rule,
            "workloads": [
                {"tenant": s.tenant, "workload": s.workload, "served": s.served, "requested": s.requested}
                for s in ft.shares
            ],
        }
        for ft in plan.fairness
    ]
