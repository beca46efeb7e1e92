"""Spread (issue 14): GPUs used and solve time with and without a workload's ``spread``.

One A100-SXM4-80GB pool of ``nodes`` 8-GPU nodes, filled to about 60% of its compute slices by
three tiers: a critical 1g.10gb inference workload (the one that asks for spread), a high 3g.40gb
one and a low 2g.20gb one. The same policy is solved with the inference workload's spread set to
``maxPerNode`` of twice a fair share (at least 10%) and ``minNodes: <nodes/2>``, and without it;
each row gives GPUs used, served replicas, the most inference replicas the solver placed on one
node (with spread), the most 1g.10gb instances one node carries (where, without spread, the
scheduler may put them all), and the solve's wall time (best of 3); then the inference workload
grows by 10% and the policy is solved again against the first answer as the deployed state: nodes
changed and that solve's time.

Run: ``python -m bench.spread [NODES ...]`` (default 4 16 64); prints a markdown table.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Sequence

from compiler.catalog import load_catalog
from compiler.model import Cluster, CurrentState, Need, NodePool, Policy, Share, Spread, Tenant, Workload
from compiler.solve import solve
from compiler.solve.result import Solution

MODEL = "A100-SXM4-80GB"


def policy(nodes: int, spread: Spread | None) -> Policy:
    pool = NodePool(
        name="a100",
        cluster="bench",
        gpu_product=MODEL,
        gpu_model=MODEL,
        gpus_per_node=8,
        node_names=tuple(f"a100-{i:04d}" for i in range(nodes)),
    )
    slices = nodes * 8 * 7
    # about 60% of the compute slices: 20% each to 1g (1 slice), 3g (3 slices), 2g (2 slices)
    demand = [
        ("inference", "critical", "1g.10gb", slices * 20 // 100),
        ("batch", "high", "3g.40gb", slices * 20 // 100 // 3),
        ("notebooks", "low", "2g.20gb", slices * 20 // 100 // 2),
    ]
    workloads = tuple(
        Workload(
            name=name,
            tenant=name,
            replicas=replicas,
            need=Need(profiles=(profile,)),
            isolation="hardware",
            priority_tier=tier,
            cluster="bench",
            spread=spread if name == "inference" else None,
        )
        for name, tier, profile, replicas in demand
    )
    tenants = tuple(Tenant(name=n, namespaces=(n,), priority_tier=tier) for n, tier, _p, _r in demand)
    return Policy(clusters=(Cluster(name="bench", pools=(pool,)),), tenants=tenants, workloads=workloads)


def _measure(pol: Policy) -> tuple[Solution, float]:
    catalog = load_catalog()
    best = float("inf")
    sol = None
    for _ in range(3):
        started = time.perf_counter()
        sol = solve(pol, catalog)
        best = min(best, time.perf_counter() - started)
    assert sol is not None
    return sol, best


def _shift(pol: Policy, first: Solution) -> tuple[int, float]:
    """Nodes changed and seconds when inference grows by 10%, against ``first`` as deployed."""
    grown = tuple(
        dataclasses.replace(w, replicas=w.replicas * 11 // 10) if w.name == "inference" else w
        for w in pol.workloads
    )
    current = CurrentState(
        nodes=tuple(((p.cluster, p.pool, n.name), n.gpus) for p in first.pools for n in p.nodes)
    )
    started = time.perf_counter()
    sol = solve(dataclasses.replace(pol, workloads=grown), load_catalog(), current)
    seconds = time.perf_counter() - started
    return sum(1 for p in sol.pools for n in p.nodes if n.changed), seconds


def _most_on_one_node(sol: Solution) -> int:
    """Most 1g.10gb instances one node carries (an upper bound on inference replicas there)."""
    return max(sum(g.counts().get("1g.10gb", 0) for g in n.gpus) for p in sol.pools for n in p.nodes)


def rows(sizes: Sequence[int]) -> list[list[str]]:
    out = []
    for nodes in sizes:
        spread = Spread(min_nodes=max(2, nodes // 2), max_per_node=Share(percent=max(10, 200 // nodes)))
        for label, pol in (("without", policy(nodes, None)), ("with", policy(nodes, spread))):
            sol, seconds = _measure(pol)
            changed, shift_seconds = _shift(pol, sol)
            served = {d.workload: 0 for p in sol.pools for d in p.demand}
            for p in sol.pools:
                for d in p.demand:
                    served[d.workload] += d.served
            per_node = [c for p in sol.pools for _w, _n, c in p.spread]
            inference = next(w for w in pol.workloads if w.name == "inference")
            out.append(
                [
                    f"{nodes} x 8 {MODEL}",
                    label if label == "without" else f"with ({spread.text()})",
                    str(sum(p.gpus_used for p in sol.pools)),
                    f"{served['inference']}/{inference.replicas}",
                    f"{sum(served.values())}/{sum(w.replicas for w in pol.workloads)}",
                    str(max(per_node)) if per_node else "-",
                    str(_most_on_one_node(sol)),
                    f"{seconds:.2f}",
                    "yes" if all(p.optimal for p in sol.pools) else "no",
                    f"{changed} nodes, {shift_seconds:.2f} s",
                ]
            )
    return out


def table(data: list[list[str]]) -> str:
    headers = [
        "pool",
        "spread on inference",
        "GPUs used",
        "inference served",
        "all served",
        "most inference replicas on one node",
        "most 1g.10gb instances on one node",
        "solve s",
        "proved",
        "inference +10%: changed",
    ]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in data]
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    sizes = [int(a) for a in argv] or [4, 16, 64]
    print(table(rows(sizes)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
