"""HAMi pools and needs (MIGC170-MIGC177): a HAMi need has a HAMi pool that can hold it, HAMi settings
sit only on HAMi pools, MIG mode only on MIG-capable models, memory oversubscription is flagged.

HAMi semantics follow HAMi v2.10.0 (pkg/device/nvidia/device.go, charts/hami/values.yaml): one share
(vGPU) sits on one GPU; a GPU holds at most ``devicesplitcount`` shares and hands out its memory times
``devicememoryscaling``.
"""

from __future__ import annotations

from typing import Any

from compiler.validate.build import hami_need
from compiler.validate.common import PathT, listing
from compiler.validate.context import Context, Obj, PoolInfo, isolation
from compiler.validate.registry import needs_fleet, rule


def _doc(ctx: Context) -> Any:
    assert ctx.fleet is not None
    return ctx.fleet.doc


def _hami(pool: PoolInfo) -> dict[str, Any]:
    sharing: dict[str, Any] = pool.raw.get("sharing", {})
    hami: dict[str, Any] = sharing.get("hami", {})
    return hami


def pool_memory_mib(pool: PoolInfo) -> int:
    """MiB one GPU of a HAMi pool hands out (0 for an unknown model)."""
    if pool.model is None:
        return 0
    return int(pool.model.memory_gb * 1024 * float(_hami(pool).get("memoryScaling", 1)))


@rule("hami-pool-settings", codes=("MIGC173", "MIGC174", "MIGC176"), when=needs_fleet)
def check_pool_settings(ctx: Context) -> None:
    """HAMi settings only on HAMi pools; MIG mode needs a MIG-capable model; scaling > 1 warns."""
    doc = _doc(ctx)
    for pool in ctx.pool_list:
        sharing = pool.raw.get("sharing", {})
        base: PathT = (*pool.path, "sharing")
        if pool.sharing_mode != "hami":
            if "hami" in sharing:
                ctx.add(
                    doc.at(
                        "MIGC176",
                        f"pool '{pool.name}': sharing.hami is set but sharing.mode is {pool.sharing_mode}",
                        (*base, "hami"),
                    )
                )
            continue
        if "replicas" in sharing:
            ctx.add(
                doc.at(
                    "MIGC176",
                    f"pool '{pool.name}': a HAMi pool's share count is "
                    "sharing.hami.splitCount, not sharing.replicas",
                    (*base, "replicas"),
                )
            )
        hami = _hami(pool)
        if hami.get("operatingMode") == "mig" and pool.model is not None and not pool.model.mig_capable:
            ctx.add(
                doc.at(
                    "MIGC174",
                    f"pool '{pool.name}': {pool.model.model} does not support MIG; "
                    "use operatingMode hami-core",
                    (*base, "hami", "operatingMode"),
                )
            )
        scaling = float(hami.get("memoryScaling", 1))
        if scaling > 1:
            ctx.add(
                doc.at(
                    "MIGC173",
                    f"pool '{pool.name}': memoryScaling {scaling:g} hands out "
                    f"{scaling:g}x each GPU's memory; pods may together exceed the physical memory",
                    (*base, "hami", "memoryScaling"),
                )
            )


def _pools_of(ctx: Context, w: Obj) -> list[PoolInfo] | None:
    cluster = w.spec.get("cluster", ctx.clusters[0] if len(ctx.clusters) == 1 else None)
    if cluster is None or cluster not in ctx.clusters:
        return None  # MIGC120 / MIGC105 (workloads family)
    in_cluster = {name: p for (c, name), p in ctx.pools.items() if c == cluster}
    wanted = w.spec.get("pools")
    if wanted is None:
        return sorted(in_cluster.values(), key=lambda p: p.name)
    if any(name not in in_cluster for name in wanted):
        return None  # MIGC106
    return [in_cluster[name] for name in wanted]


@rule("hami-need", codes=("MIGC170", "MIGC171", "MIGC172", "MIGC175"), when=needs_fleet)
def check_need(ctx: Context) -> None:
    """A HAMi need: isolation shared, a HAMi pool it may use, fits one GPU, enough slots or GPUs."""
    for w in ctx.workloads:
        raw = w.spec["need"].get("hami")
        if raw is None:
            continue
        iso = isolation(w.spec)
        if iso != "shared":
            ctx.add(
                w.doc.at(
                    "MIGC175",
                    f"workload '{w.name}': a HAMi share is isolation shared, not {iso}",
                    ("spec", "isolation"),
                )
            )
        pools = _pools_of(ctx, w)
        if pools is None:
            continue
        hami_pools = [p for p in pools if p.sharing_mode == "hami" and p.model is not None]
        if not hami_pools:
            ctx.add(
                w.doc.at(
                    "MIGC170",
                    f"workload '{w.name}' asks for a HAMi share but none of its pools "
                    f"({listing(p.name for p in pools)}) is a HAMi pool",
                    ("spec", "need", "hami"),
                )
            )
            continue
        need = hami_need(raw)
        fitting = [p for p in hami_pools if 0 < need.memory_on(pool_memory_mib(p)) <= pool_memory_mib(p)]
        if not fitting:
            biggest = max(pool_memory_mib(p) for p in hami_pools)
            ctx.add(
                w.doc.at(
                    "MIGC171",
                    f"workload '{w.name}' asks for {raw['memory']} of GPU memory per "
                    f"replica; the GPUs of its HAMi pools hand out at most {biggest} MiB",
                    ("spec", "need", "hami", "memory"),
                )
            )
            continue
        replicas = int(w.spec["replicas"])
        gpus = sum(p.total_gpus for p in fitting)
        slots = sum(p.total_gpus * int(_hami(p).get("splitCount", 10)) for p in fitting)
        if need.distinct_gpus and replicas > gpus:
            ctx.add(
                w.doc.at(
                    "MIGC172",
                    f"workload '{w.name}': {replicas} replicas on distinct GPUs, but its "
                    f"HAMi pools have {gpus} GPUs",
                    ("spec", "replicas"),
                )
            )
        elif replicas > slots:
            ctx.add(
                w.doc.at(
                    "MIGC172",
                    f"workload '{w.name}': {replicas} replicas, but its HAMi pools hold "
                    f"at most {slots} shares (GPUs x splitCount)",
                    ("spec", "replicas"),
                )
            )


@rule("hami-quota", codes=("MIGC177",), when=needs_fleet)
def check_quota(ctx: Context) -> None:
    """A tenant's HAMi quota has a HAMi pool to apply to."""
    if any(p.sharing_mode == "hami" for p in ctx.pool_list):
        return
    for t in ctx.tenants:
        for key in ("guaranteed", "burst"):
            if "hami" in t.spec.get(key, {}):
                ctx.add(
                    t.doc.at(
                        "MIGC177",
                        f"tenant '{t.name}': {key}.hami limits HAMi pools, but the fleet has none",
                        ("spec", key, "hami"),
                    )
                )


@rule("workload-target", codes=("MIGC178", "MIGC179"))
def check_target(ctx: Context) -> None:
    """A target's namespace is one of the tenant's (or the tenant has one); no two workloads share one."""
    namespaces = {t.name: [str(n) for n in t.spec["namespaces"]] for t in ctx.tenants}
    seen: dict[tuple[str, ...], str] = {}
    for w in ctx.workloads:
        target = w.spec.get("target")
        if target is None:
            continue
        owned = namespaces.get(str(w.spec["tenant"]))
        if owned is None:
            continue  # unknown tenant: MIGC104
        ns = target.get("namespace")
        if ns is None and len(owned) != 1:
            ctx.add(
                w.doc.at(
                    "MIGC178",
                    f"workload '{w.name}': tenant {w.spec['tenant']} has namespaces "
                    f"{', '.join(owned)}; set target.namespace",
                    ("spec", "target"),
                )
            )
            continue
        ns = ns or owned[0]
        if ns not in owned:
            ctx.add(
                w.doc.at(
                    "MIGC178",
                    f"workload '{w.name}': target namespace '{ns}' is not one of tenant "
                    f"{w.spec['tenant']}'s ({', '.join(owned)})",
                    ("spec", "target", "namespace"),
                )
            )
            continue
        key = (str(target["kind"]), ns, str(target["name"]), str(target.get("container", "")))
        if key in seen:
            ctx.add(
                w.doc.at(
                    "MIGC179",
                    f"workload '{w.name}' targets {key[0]} {ns}/{key[2]} like workload '{seen[key]}'",
                    ("spec", "target"),
                )
            )
        else:
            seen[key] = w.name
