"""The DRA part of the plan: per DRA pool (or pool switching backend) what happens, in order.

* A backend switch (read from the previous output: ``CurrentState.backends``) lists the steps per
  node in the order they must happen, which workloads' pod templates change (limits ↔ resourceClaims),
  and how many nodes may be away at once without leaving a tenant below its guarantee: the
  ``maxUnavailable`` nodes holding most of a guaranteed resource are taken out (and the ``idleSurge``
  nodes the controller may re-carve beside them), and the batch shrinks until what the rest of the
  cluster holds still covers every guarantee. When not even one node can
  go, the plan says so instead of proposing a step.
* A DynamicMIG pool has no layout; the solver's answer for it says whether its demand and the
  guarantees fit its GPUs at all, and the catalog's placements give the worst-case fragmentation:
  the fewest instances of the smallest demanded profile that leave one GPU no placement for the
  largest demanded profile (the driver creates instances wherever the scheduler allocates).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from compiler.catalog import Catalog, GpuModel
from compiler.model import WHOLE_GPU, Cluster, CurrentState, NodeLayout, NodePool, Policy
from compiler.solve.result import PoolResult, Solution


@dataclass(frozen=True)
class DraPool:
    cluster: str
    pool: str
    before: str  # "device-plugin" | "dra-static" | "dra-dynamic" | "" (not deployed)
    after: str
    steps: tuple[str, ...]  # per node, in order (a migration), else ()
    templates: tuple[str, ...]  # workloads whose pod template changes
    batch: int  # nodes away at once during the migration (0: none can go)
    guard: str  # why fewer nodes than maxUnavailable + idleSurge may be away, or ""
    fits: bool | None  # DynamicMIG: demand and guarantees fit the GPUs (None: not dynamic)
    gpus_used: int
    gpus_total: int
    fragmentation: str


def backend(pool: NodePool) -> str:
    return f"dra-{pool.dra_mig}" if pool.is_dra else "device-plugin"


_OFF = {
    "device-plugin": "label nvidia.com/gpu.deploy.device-plugin=false (device plugin off)",
    "dra-static": "remove the node from the DRA driver's kubelet-plugin affinity (driver off)",
    "dra-dynamic": "remove the node from the DRA driver's kubelet-plugin affinity (driver off; "
    "its MIG devices go with their claims)",
}
_ON = {
    "device-plugin": "label nvidia.com/gpu.deploy.device-plugin=true; verify allocatable nvidia.com/mig-*",
    "dra-static": "DRA kubelet plugin starts (driver values affinity); verify ResourceSlices per DraPlan",
    "dra-dynamic": "DRA kubelet plugin starts with DynamicMIG; verify ResourceSlices advertise the GPUs",
}


def _layout_step(before: str, after: str) -> str:
    if after == "dra-dynamic":
        return (
            "label nvidia.com/gpu.deploy.mig-manager=false; the layout is destroyed: the driver "
            "destroys MIG devices it did not create at start (driver.go DestroyUnknownMIGDevices)"
        )
    if before == "dra-dynamic":
        return "label nvidia.com/gpu.deploy.mig-manager=true; the MIG manager applies the solved layout"
    return "layout kept where unchanged (mig-parted skips GPUs already as desired), else re-applied"


def steps(before: str, after: str) -> tuple[str, ...]:
    return (
        "cordon; drain the node's GPU pods (Eviction API, PDBs respected)",
        _OFF[before],
        _layout_step(before, after),
        _ON[after],
        "uncordon",
    )


def _holdings(layout: NodeLayout) -> dict[str, int]:
    out: dict[str, int] = {}
    for gpu in layout:
        if not gpu.mig_enabled:
            out[WHOLE_GPU] = out.get(WHOLE_GPU, 0) + 1
        for name, count in gpu.profiles:
            out[name] = out.get(name, 0) + count
    return out


def _batch(policy: Policy, cluster: Cluster, pool: NodePool, solution: Solution) -> tuple[int, str]:
    """Most nodes of ``pool`` that may be away at once while every guarantee stays covered."""
    per_node: list[dict[str, int]] = []
    total: dict[str, int] = {}
    for result in solution.pools:
        if result.cluster != cluster.name:
            continue
        for node in result.nodes:
            held = _holdings(node.gpus)
            for name, count in held.items():
                total[name] = total.get(name, 0) + count
            if result.pool == pool.name:
                per_node.append(held)
    guaranteed: dict[str, int] = {}
    for tenant in policy.tenants:
        clusters = {w.cluster for w in policy.workloads if w.tenant == tenant.name}
        if clusters and cluster.name not in clusters:
            continue  # its guarantee is held where its workloads run (compiler.render.quota.tenant_clusters)
        for name, count in tenant.guaranteed.profiles:
            guaranteed[name] = guaranteed.get(name, 0) + count
        if tenant.guaranteed.gpus:
            guaranteed[WHOLE_GPU] = guaranteed.get(WHOLE_GPU, 0) + tenant.guaranteed.gpus
    # the idleSurge nodes the controller may take beside maxUnavailable run no pod when they go, but
    # their instances are away too: the worst case is that they are the next ones holding most
    most = pool.max_unavailable + pool.idle_surge
    limit = min(most, len(per_node)) if per_node else most
    last = ""
    for away in range(limit, 0, -1):
        short = []
        for r, need in sorted(guaranteed.items()):
            left = total.get(r, 0) - sum(sorted((n.get(r, 0) for n in per_node), reverse=True)[:away])
            if left < need:
                short.append(f"{r} ({left} left of {need} guaranteed)")
        if not short:
            budget = f"maxUnavailable {pool.max_unavailable}"
            if pool.idle_surge:
                budget += f" + idleSurge {pool.idle_surge}"
            why = "" if away == limit else f"{budget} would leave too little"
            return min(away, pool.max_unavailable), why  # busy nodes go maxUnavailable at a time
        last = ", ".join(short)
    return 0, f"even one node away leaves {last}: add capacity before migrating"


def _blockers(model: GpuModel, small: str, large: str) -> int:
    """Fewest ``small`` instances whose placements overlap every placement of ``large`` on one GPU."""
    s, big = model.profile(small), model.profile(large)
    if s is None or big is None or not big.placements:
        return 0
    spans = [set(range(p, p + s.memory_slices)) for p in s.placements]
    targets = [set(range(p, p + big.memory_slices)) for p in big.placements]
    for k in range(1, len(spans) + 1):
        for chosen in combinations(range(len(spans)), k):
            if any(spans[a] & spans[b] for a, b in combinations(chosen, 2)):
                continue  # instances never overlap
            if all(any(spans[c] & t for c in chosen) for t in targets):
                return k
    return 0


def _fragmentation(result: PoolResult, model: GpuModel | None) -> str:
    demanded = sorted({d.resource for d in result.demand if d.requested and d.resource != WHOLE_GPU})
    if model is None or len(demanded) < 2:
        return "one profile demanded: no fragmentation between profiles"

    def size(r: str) -> int:
        prof = model.profile(r)
        return prof.memory_slices if prof is not None else 0

    by_size = sorted(demanded, key=lambda r: (size(r), r))
    small, large = by_size[0], by_size[-1]
    k = _blockers(model, small, large)
    small_count = sum(d.requested for d in result.demand if d.resource == small)
    large_count = sum(d.requested for d in result.demand if d.resource == large)
    gpus = sum(len(n.gpus) for n in result.nodes)
    blocked = min(gpus, small_count // k) if k else 0
    prof = model.profile(large)
    room = (gpus - blocked) * (prof.max_count if prof else 0)
    verdict = "still fit" if room >= large_count else f"{large_count - room} cannot be placed"
    return (
        f"worst case: {k} {small} on a GPU leave no placement for {large}; {small_count} {small} "
        f"can block {blocked} of {gpus} GPUs, and the {large_count} {large} demanded {verdict}"
    )


def dra_pools(
    policy: Policy, solution: Solution, catalog: Catalog, current: CurrentState
) -> tuple[DraPool, ...]:
    before = dict(current.backends)
    out: list[DraPool] = []
    for cluster in sorted(policy.clusters, key=lambda c: c.name):
        for pool in cluster.pools:
            after, was = backend(pool), before.get((cluster.name, pool.name), "")
            if not pool.is_dra and was in ("", "device-plugin"):
                continue
            migrating = bool(was) and was != after
            result = next(
                (r for r in solution.pools if r.cluster == cluster.name and r.pool == pool.name), None
            )
            templates = sorted({d.workload for d in result.demand if d.served} if result else set())
            targeted = {w.name for w in policy.workloads if w.target is not None}
            batch, guard = _batch(policy, cluster, pool, solution) if migrating else (0, "")
            fits = None
            if pool.dra_dynamic and result is not None:
                fits = all(d.unmet == 0 for d in result.demand)
            out.append(
                DraPool(
                    cluster=cluster.name,
                    pool=pool.name,
                    before=was,
                    after=after,
                    steps=steps(was, after) if migrating else (),
                    templates=tuple(t for t in templates if t in targeted) if migrating else (),
                    batch=batch,
                    guard=guard,
                    fits=fits,
                    gpus_used=result.gpus_used if result else 0,
                    gpus_total=pool.total_gpus,
                    fragmentation=_fragmentation(result, catalog.get(pool.gpu_model))
                    if pool.dra_dynamic and result is not None
                    else "",
                )
            )
    return tuple(out)


def dra_text(rows: tuple[DraPool, ...]) -> str:
    if not rows:
        return ""
    out = ["", "DRA pools"]
    for r in rows:
        head = f"  {r.cluster}/{r.pool}: {r.after}"
        if r.steps:
            head += f" (migrating from {r.before}; {r.batch} node(s) at a time)"
        out.append(head)
        if r.guard:
            out.append(f"    guarantee guard: {r.guard}")
        for i, step in enumerate(r.steps, 1):
            out.append(f"    {i}. {step}")
        if r.templates:
            out.append(f"    pod templates that change: {', '.join(r.templates)} (patches/<namespace>/)")
        if r.fits is not None:
            verdict = "fit" if r.fits else "do NOT fit"
            out.append(
                f"    demand and guarantees {verdict} the pool's GPUs "
                f"(solver: {r.gpus_used} of {r.gpus_total} GPUs)"
            )
            out.append(f"    {r.fragmentation}")
    return "\n".join(out) + "\n"


def dra_markdown(rows: tuple[DraPool, ...]) -> list[str]:
    """The same as :func:`dra_text`, as a markdown section (the PR review)."""
    if not rows:
        return []
    out = ["", "### DRA pools"]
    for r in rows:
        head = f"**{r.cluster}/{r.pool}**: `{r.after}`"
        if r.steps:
            head += f", migrating from `{r.before}`, {r.batch} node(s) at a time"
        out += ["", head]
        if r.guard:
            out += ["", f"> guarantee guard: {r.guard}"]
        if r.steps:
            out.append("")
            out += [f"{i}. {step}" for i, step in enumerate(r.steps, 1)]
        if r.templates:
            out += ["", f"Pod templates that change: {', '.join(f'`{t}`' for t in r.templates)}"]
        if r.fits is not None:
            verdict = "fit" if r.fits else "**do not fit**"
            out += [
                "",
                f"Demand and guarantees {verdict} the pool's GPUs (solver: {r.gpus_used} of "
                f"{r.gpus_total} GPUs); {r.fragmentation}.",
            ]
    return out


def dra_json(rows: tuple[DraPool, ...]) -> list[dict[str, object]]:
    """JSON key ``dra``: one object per DRA pool or pool switching backend."""
    return [
        {
            "cluster": r.cluster,
            "pool": r.pool,
            "before": r.before or None,
            "after": r.after,
            "steps": list(r.steps),
            "podTemplatesChanging": list(r.templates),
            "nodesAtOnce": r.batch if r.steps else None,
            "guarantee": r.guard or None,
            "fits": r.fits,
            "gpusUsed": r.gpus_used,
            "gpusTotal": r.gpus_total,
            "fragmentation": r.fragmentation or None,
        }
        for r in rows
    ]
