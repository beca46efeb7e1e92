"""The HAMi part of ``migc plan``: per HAMi pool and GPU the tenants' shares with memory, cores and
slots used of total, and per workload with a HAMi need what its pods request.

The same facts in every format: text ("HAMi pools" and "pods request" lines), markdown (a table
per pool and one of pod requests) and JSON (key ``hami``; null when the policy has no HAMi pool and
no HAMi workload). The JSON lists only the GPUs that carry shares (the per-GPU shape of the rendered
``HamiPlan``, ``compiler/render/hami.py``) and counts the rest in ``gpusTotal``/``gpusUsed``, so a
large idle pool stays small.
"""

from __future__ import annotations

from typing import Any

from compiler.model import Policy
from compiler.plan.data import HamiRequest, Plan
from compiler.solve.hami import pod_resources
from compiler.solve.result import HamiGpu


def hami_requests(policy: Policy) -> tuple[HamiRequest, ...]:
    """Per workload with a HAMi need (sorted by name): what its pods request."""
    out = []
    for w in sorted(policy.workloads, key=lambda w: w.name):
        if w.need.hami is None:
            continue
        out.append(
            HamiRequest(
                cluster=w.cluster,
                workload=w.name,
                tenant=w.tenant,
                resources=tuple(pod_resources(w.need.hami).items()),
                priority_class=f"migc-{w.priority_tier}",
            )
        )
    return tuple(out)


def _gib(mib: int) -> str:
    return f"{mib / 1024:.1f}Gi"


def _shares(g: HamiGpu) -> str:
    return ", ".join(f"{s.tenant}/{s.workload} x{s.replicas}" for s in g.shares)


def _resources(r: HamiRequest) -> str:
    return ", ".join(f"{k}: {v}" for k, v in r.resources)


def hami_text(plan: Plan) -> str:
    """Extra plan lines for HAMi pools; empty when the plan has none."""
    if not plan.hami:
        return ""
    out = ["", "HAMi pools (per GPU: shares; memory, cores, slots used/total)"]
    for r in plan.hami:
        out.append(
            f"  {r.cluster}/{r.pool} ({r.gpu_model}): {r.gpus_used} of {len(r.gpus)} GPUs carry shares"
            + ("" if r.optimal else " (not proven optimal)")
        )
        for g in r.gpus:
            if not g.shares:
                continue
            out.append(
                f"    {g.node} GPU {g.index}: {_shares(g)}; "
                f"memory {_gib(g.used_memory_mib)}/{_gib(g.memory_mib)} "
                f"(free {_gib(g.memory_mib - g.used_memory_mib)}), cores {g.used_cores}/{g.cores}%, "
                f"slots {g.used_slots}/{g.slots}"
            )
        idle = sum(1 for g in r.gpus if not g.shares)
        if idle:
            out.append(f"    {idle} GPU(s) idle")
    if plan.hami_requests:
        out.append("  pods request (container limits):")
        for w in plan.hami_requests:
            pc = w.priority_class
            out.append(f"    {w.workload} ({w.tenant}): {_resources(w)}; priorityClassName: {pc}")
    return "\n".join(out) + "\n"


def hami_markdown(plan: Plan) -> list[str]:
    """Markdown sections: one table per HAMi pool (GPUs with shares) and one of pod requests."""
    if not plan.hami and not plan.hami_requests:
        return []
    out = ["", "### HAMi pools"]
    for r in plan.hami:
        idle = len(r.gpus) - r.gpus_used
        proven = "" if r.optimal else " (not proven optimal)"
        out += [
            "",
            f"**{r.cluster}/{r.pool}** ({r.gpu_model}): {r.gpus_used} of {len(r.gpus)} GPUs carry shares"
            f"{proven}" + (f"; {idle} idle" if idle else ""),
        ]
        if r.gpus_used:
            out += [
                "",
                "| node | GPU | shares | memory used / total | cores used / total | slots used / total |",
                "|---|---|---|---|---|---|",
            ]
            for g in r.gpus:
                if g.shares:
                    out.append(
                        f"| {g.node} | {g.index} | {_shares(g)} | {_gib(g.used_memory_mib)} / "
                        f"{_gib(g.memory_mib)} | {g.used_cores}% / {g.cores}% | {g.used_slots} / {g.slots} |"
                    )
    if plan.hami_requests:
        out += [
            "",
            "Pods request (container limits):",
            "",
            "| cluster | workload | tenant | resources | priorityClassName |",
            "|---|---|---|---|---|",
        ]
        for w in plan.hami_requests:
            out.append(f"| {w.cluster} | {w.workload} | {w.tenant} | {_resources(w)} | {w.priority_class} |")
    return out


def hami_json(plan: Plan) -> dict[str, Any] | None:
    """The ``hami`` key of the plan JSON; None when the plan has no HAMi pool and no HAMi workload."""
    if not plan.hami and not plan.hami_requests:
        return None
    return {
        "pools": [
            {
                "cluster": r.cluster,
                "pool": r.pool,
                "gpuModel": r.gpu_model,
                "optimal": r.optimal,
                "gpusTotal": len(r.gpus),
                "gpusUsed": r.gpus_used,
                "gpus": [g.document() for g in r.gpus if g.shares],
            }
            for r in plan.hami
        ],
        "workloads": [
            {
                "cluster": w.cluster,
                "name": w.workload,
                "tenant": w.tenant,
                "resources": dict(w.resources),
                "priorityClassName": w.priority_class,
            }
            for w in plan.hami_requests
        ],
    }
