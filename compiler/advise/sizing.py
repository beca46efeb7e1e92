"""Sizing: per priced GPU model, the fewest GPUs that serve a cluster's declared demand.

Nothing is packed here: for each model a synthetic policy puts every declared workload of the
cluster on pools of that model only, and :func:`compiler.solve.solve` (the solver ``migc compile``
uses) answers. Its lexicographic levels serve as many replicas as possible first, then minimise the
GPUs used, so ``gpus_used`` is the optimum the table reports (MIGC520).

The synthetic policy:

* MIG-capable model: one MIG pool; non-MIG model: one pool of whole GPUs. Shared workloads get a
  time-sliced pool of the same model next to it (the cluster's own replicas factor, else 4).
* A profile the model lacks becomes its memory and compute (the solver then picks the smallest
  fitting profile); on a model without MIG an isolated replica takes one whole GPU (if it fits
  the GPU's memory), which is the only isolation such a GPU offers.
* Quotas (guarantees, burst) and reserves are left out: the table sizes the demand, not the policy.
  Pools are made large enough for one GPU per replica, so the size never limits the answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from compiler.advise.model import ClusterSizing, Finding, SizingRow
from compiler.catalog import Catalog, GpuModel
from compiler.model import Cluster, Need, NodePool, Policy, Quota, Sharing, Tenant, Workload
from compiler.solve import solve

DEFAULT_GPUS_PER_NODE = 8
DEFAULT_SHARING_REPLICAS = 4
MAIN_POOL = "sizing"
SHARED_POOL = "sizing-shared"


def _gpus_per_node(policy: Policy, model: str) -> int:
    sizes = [p.gpus_per_node for c in policy.clusters for p in c.pools if p.gpu_model == model]
    return max(sizes) if sizes else DEFAULT_GPUS_PER_NODE


def _sharing_replicas(cluster: Cluster) -> int:
    factors = [p.sharing.replicas for p in cluster.pools if not p.mig and p.sharing.mode != "none"]
    return max(factors) if factors else DEFAULT_SHARING_REPLICAS


def _profile_size(catalog: Catalog, cluster: Cluster, name: str) -> tuple[float, int] | None:
    """(memory GB, compute slices) of a profile, from a model of the cluster first, else any model."""
    models = [catalog.get(p.gpu_model) for p in sorted(cluster.pools, key=lambda p: p.name)]
    ordered = [m for m in models if m is not None] + list(catalog.models)
    for m in ordered:
        prof = m.profile(name)
        if prof is not None:
            return prof.memory_gb, prof.compute_slices
    return None


def _retarget(w: Workload, model: GpuModel, catalog: Catalog, cluster: Cluster, mig: bool) -> Workload:
    """The workload as it would run on pools of ``model`` only."""
    if w.isolation == "shared":
        return replace(w, pools=(SHARED_POOL,))
    if w.isolation == "exclusive" or w.need.kind == "gpus":
        return replace(w, pools=(MAIN_POOL,))
    need = w.need
    if need.kind == "profiles":
        kept = tuple(p for p in need.profiles if model.profile(p) is not None)
        if mig and kept:
            return replace(w, pools=(MAIN_POOL,), need=Need(profiles=kept))
        size = _profile_size(catalog, cluster, need.profiles[0])
        if size is None:  # validation guarantees the profile exists somewhere; keep it unservable
            return replace(w, pools=(MAIN_POOL,))
        need = Need(gpu_memory_gb=size[0], compute_slices=size[1])
    if mig:
        return replace(w, pools=(MAIN_POOL,), need=need)
    if need.gpu_memory_gb > model.memory_gb:
        return replace(w, pools=(MAIN_POOL,), need=need)  # no option: counted as unserved
    return replace(w, pools=(MAIN_POOL,), need=Need(gpus=1), isolation="exclusive")


def _pool(
    cluster: str, name: str, model: GpuModel, per_node: int, gpus: int, mig: bool, sharing: Sharing
) -> NodePool:
    nodes = max(1, math.ceil(gpus / per_node))
    return NodePool(
        name=name,
        cluster=cluster,
        gpu_product=model.gpu_products[0] if model.gpu_products else model.model,
        gpu_model=model.model,
        gpus_per_node=per_node,
        node_names=tuple(f"{name}-{i:04d}" for i in range(nodes)),
        mig=mig,
        sharing=sharing,
    )


def synthetic_policy(
    policy: Policy, catalog: Catalog, cluster: Cluster, model: GpuModel
) -> tuple[Policy, int]:
    """The one-model policy :func:`size_cluster` solves, and its GPUs per node."""
    mig = model.mig_capable and bool(model.profiles)
    per_node = _gpus_per_node(policy, model.model)
    declared = [w for w in policy.workloads if w.cluster == cluster.name and w.replicas > 0]
    workloads = tuple(_retarget(w, model, catalog, cluster, mig) for w in declared)
    main_gpus = sum(w.replicas * max(1, w.need.gpus) for w in workloads if w.isolation != "shared")
    replicas = _sharing_replicas(cluster)
    shared_gpus = sum(w.replicas * max(1, w.need.gpus) for w in workloads if w.isolation == "shared")
    # one spare node on top of one GPU per replica: multi-GPU replicas never lack a free node
    pools = [_pool(cluster.name, MAIN_POOL, model, per_node, main_gpus + per_node, mig, Sharing())]
    if shared_gpus:
        pools.append(
            _pool(
                cluster.name,
                SHARED_POOL,
                model,
                per_node,
                math.ceil(shared_gpus / replicas) + per_node,
                False,
                Sharing("time-slicing", replicas),
            )
        )
    used = {w.tenant for w in workloads}
    tenants = tuple(
        Tenant(t.name, t.namespaces, t.priority_tier, Quota(), Quota(), t.create_namespaces)
        for t in policy.tenants
        if t.name in used
    )
    synthetic = Policy(
        clusters=(
            Cluster(cluster.name, tuple(pools), cluster.gpu_operator_namespace, cluster.kubernetes_version),
        ),
        tenants=tenants,
        workloads=workloads,
        partition=replace(policy.partition, rules=(), pricing=()),
        fleet_name=policy.fleet_name,
    )
    return synthetic, per_node


def _balanced_gpus(model: GpuModel, synthetic: Policy) -> int | None:
    """GPUs needed when every MIG GPU carries the model's all-balanced layout (None without MIG)."""
    if not (model.mig_capable and model.balanced):
        return None
    slots = []  # (memory GB, compute slices, per GPU, name), smallest first
    for name, count in model.balanced:
        prof = model.profile(name)
        if prof is not None:
            slots.append((prof.memory_gb, prof.compute_slices, count, name))
    slots.sort()
    items: list[tuple[float, int]] = []
    whole = 0
    for w in synthetic.workloads:
        if w.isolation == "shared" or w.isolation == "exclusive" or w.need.kind == "gpus":
            if w.isolation != "shared":
                whole += w.replicas * max(1, w.need.gpus)
            continue
        if w.need.kind == "profiles":
            prof = model.profile(w.need.profiles[0])
            if prof is None:
                continue
            size = (prof.memory_gb, prof.compute_slices)
        else:
            size = (w.need.gpu_memory_gb, w.need.compute_slices)
        if any(m >= size[0] and c >= size[1] for m, c, _, _ in slots):
            items.extend([size] * w.replicas)
        else:
            whole += w.replicas  # nothing balanced fits: a whole GPU
    items.sort(reverse=True)

    def fits(gpus: int) -> bool:
        free = {name: count * gpus for _, _, count, name in slots}
        for mem, comp in items:
            for m, c, _, name in slots:
                if m >= mem and c >= comp and free[name]:
                    free[name] -= 1
                    break
            else:
                return False
        return True

    low, high = 0, len(items)
    while low < high:  # smallest GPU count the greedy smallest-fit assignment succeeds with
        mid = (low + high) // 2
        if fits(mid):
            high = mid
        else:
            low = mid + 1
    return low + whole


def size_model(
    policy: Policy, catalog: Catalog, cluster: Cluster, model: GpuModel, price: float, time_limit_s: float
) -> SizingRow:
    synthetic, per_node = synthetic_policy(policy, catalog, cluster, model)
    solution = solve(synthetic, catalog, None, time_limit_s=time_limit_s)
    sizes = {
        w.name: (max(1, w.need.gpus) if w.need.kind == "gpus" or w.isolation != "hardware" else 1)
        for w in synthetic.workloads
    }
    served_instances: dict[str, int] = {}
    for pool in solution.pools:
        for row in pool.demand:
            served_instances[row.workload] = served_instances.get(row.workload, 0) + row.served
    served = sum(
        min(w.replicas, served_instances.get(w.name, 0) // sizes[w.name]) for w in synthetic.workloads
    )
    wanted = sum(w.replicas for w in synthetic.workloads)
    gpus = sum(p.gpus_used for p in solution.pools)
    # GPUs over GPUs per node, but never fewer nodes than replicas that need more than half a node
    big = sum(
        w.replicas for w in synthetic.workloads if w.need.gpus * 2 > per_node and w.isolation != "shared"
    )
    nodes = sum(math.ceil(p.gpus_used / per_node) for p in solution.pools if p.pool == SHARED_POOL)
    nodes += max(big, sum(math.ceil(p.gpus_used / per_node) for p in solution.pools if p.pool == MAIN_POOL))
    shared_gpus = sum(p.gpus_used for p in solution.pools if p.pool == SHARED_POOL)
    balanced = _balanced_gpus(model, synthetic)
    return SizingRow(
        gpu_model=model.model,
        price_per_gpu_hour=price,
        mig=model.mig_capable and bool(model.profiles),
        gpus=gpus,
        gpus_per_node=per_node,
        nodes=nodes,
        replicas_served=served,
        replicas_wanted=wanted,
        balanced_gpus=None if balanced is None else balanced + shared_gpus,
        whole_gpus=sum(w.replicas * max(1, w.need.gpus) for w in synthetic.workloads),
        optimal=all(p.optimal for p in solution.pools),
    )


Progress = Callable[[str], None]  # told before each sizing solve (each may take up to its time limit)


def size_cluster(
    policy: Policy,
    catalog: Catalog,
    cluster: Cluster,
    time_limit_s: float = 60.0,
    progress: Progress | None = None,
) -> ClusterSizing:
    findings: list[Finding] = []
    rows: list[SizingRow] = []
    priced = [(name, price) for name, price in policy.partition.pricing if catalog.get(name) is not None]
    for i, (name, price) in enumerate(priced, 1):
        model = catalog.get(name)
        assert model is not None
        if progress is not None:
            step = f"{i} of {len(priced)}, up to {time_limit_s:g} s"
            progress(f"sizing cluster {cluster.name} on {name} ({step})")
        rows.append(size_model(policy, catalog, cluster, model, price, time_limit_s))
    if not rows:
        findings.append(Finding("MIGC523", "note", "the Fleet prices no GPU model: no sizing"))
        return ClusterSizing(cluster.name, (), tuple(findings))
    rows.sort(key=lambda r: (not r.complete, r.cost_per_hour, r.gpu_model))
    isolated = sum(
        w.replicas
        for w in policy.workloads
        if w.cluster == cluster.name and w.isolation == "hardware" and w.need.kind != "gpus"
    )
    for r in sorted(rows, key=lambda r: r.gpu_model):
        if not r.mig and isolated:
            findings.append(
                Finding(
                    "MIGC501",
                    "warning",
                    f"{r.gpu_model} has no MIG: its row gives each of the {isolated} replicas that ask for "
                    "hardware isolation a whole GPU",
                )
            )
        if not r.complete:
            findings.append(
                Finding(
                    "MIGC521",
                    "warning",
                    f"{r.gpu_model} serves {r.replicas_served} of {r.replicas_wanted} declared replicas",
                )
            )
    best = rows[0]
    if best.complete:
        findings.append(
            Finding(
                "MIGC520",
                "note",
                f"cheapest: {best.gpus} x {best.gpu_model} ({best.nodes} node(s) of {best.gpus_per_node}) at "
                f"${best.cost_per_hour:.2f}/h serves all {best.replicas_wanted} replicas",
            )
        )
        versus = [
            f"{best.whole_gpus - best.gpus} GPU(s), ${best.whole_saving_per_hour:.2f}/h "
            "against one whole GPU per pod"
        ]
        if best.balanced_gpus is not None:
            versus.insert(
                0,
                f"{best.balanced_gpus - best.gpus} GPU(s), ${best.balanced_saving_per_hour:.2f}/h "
                "against all-balanced",
            )
        findings.append(Finding("MIGC522", "note", "saving: " + "; ".join(versus)))
    return ClusterSizing(cluster.name, tuple(rows), tuple(findings))


def size_policy(
    policy: Policy, catalog: Catalog, time_limit_s: float = 60.0, progress: Progress | None = None
) -> tuple[ClusterSizing, ...]:
    return tuple(
        size_cluster(policy, catalog, c, time_limit_s, progress)
        for c in sorted(policy.clusters, key=lambda c: c.name)
    )
