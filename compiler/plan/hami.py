"""The HAMi part of ``migc plan`` (text): per HAMi pool and GPU the tenants' shares with memory,
cores and slots used of total, and per workload with a HAMi or targeted need what its pods request."""

from __future__ import annotations

from compiler.model import Policy
from compiler.solve.hami import pod_resources
from compiler.solve.result import Solution


def _gib(mib: int) -> str:
    return f"{mib / 1024:.1f}Gi"


def hami_text(policy: Policy, solution: Solution) -> str:
    """Extra plan lines for HAMi pools; empty when the policy has none."""
    if not solution.hami:
        return ""
    out = ["", "HAMi pools (per GPU: shares; memory, cores, slots used/total)"]
    for r in solution.hami:
        out.append(
            f"  {r.cluster}/{r.pool} ({r.gpu_model}): {r.gpus_used} of {len(r.gpus)} GPUs carry shares"
            + ("" if r.optimal else " (not proven optimal)")
        )
        for g in r.gpus:
            if not g.shares:
                continue
            shares = ", ".join(f"{s.tenant}/{s.workload} x{s.replicas}" for s in g.shares)
            out.append(
                f"    {g.node} GPU {g.index}: {shares}; "
                f"memory {_gib(g.used_memory_mib)}/{_gib(g.memory_mib)} "
                f"(free {_gib(g.memory_mib - g.used_memory_mib)}), cores {g.used_cores}/{g.cores}%, "
                f"slots {g.used_slots}/{g.slots}"
            )
        idle = sum(1 for g in r.gpus if not g.shares)
        if idle:
            out.append(f"    {idle} GPU(s) idle")
    workloads = [w for w in policy.workloads if w.need.hami is not None]
    if workloads:
        out.append("  pods request (container limits):")
        for w in sorted(workloads, key=lambda w: w.name):
            assert w.need.hami is not None
            res = ", ".join(f"{k}: {v}" for k, v in pod_resources(w.need.hami).items())
            out.append(f"    {w.name} ({w.tenant}): {res}; priorityClassName: migc-{w.priority_tier}")
    return "\n".join(out) + "\n"
