"""Workloads: unique names, a known tenant and tier, an isolation that matches the need, and a need
that the pools the workload may use can serve."""

from __future__ import annotations

from compiler.validate.common import PathT, listing, suggest
from compiler.validate.context import Context, Obj, PoolInfo, isolation
from compiler.validate.registry import needs_fleet, rule
from compiler.validate.rules.shared import check_profile_known, check_tier, dupes


@rule("workload-unique-names", codes=("MIGC103",))
def check_unique_names(ctx: Context) -> None:
    """Workload names are unique."""
    dupes(ctx, [(w.name, w.doc, ("metadata", "name")) for w in ctx.workloads], "workload")


@rule("workload-tenant", codes=("MIGC104",))
def check_tenant(ctx: Context) -> None:
    """A workload's tenant exists (one whose document failed its schema counts as existing)."""
    if ctx.incomplete:
        return
    tenants = {t.name for t in ctx.tenants} | ctx.broken_names.get("Tenant", set())
    for w in ctx.workloads:
        name = w.spec["tenant"]
        if name not in tenants:
            ctx.add(
                w.doc.at(
                    "MIGC104",
                    f"workload '{w.name}' names unknown tenant '{name}'{suggest(name, tenants)}",
                    ("spec", "tenant"),
                )
            )


@rule("workload-tier", codes=("MIGC117",))
def check_tiers(ctx: Context) -> None:
    """A workload's ``priorityClass`` is a tier."""
    for w in ctx.workloads:
        check_tier(ctx, w, ("spec", "priorityClass"))


@rule("workload-isolation", codes=("MIGC122",))
def check_isolation(ctx: Context) -> None:
    """Isolation and need agree: hardware ↔ MIG, exclusive ↔ whole GPUs, shared ↔ one GPU share."""
    for w in ctx.workloads:
        need = w.spec["need"]
        if "hami" in need:
            continue  # rules/hami.py
        iso = isolation(w.spec)
        path: PathT = ("spec", "isolation") if "isolation" in w.spec else ("spec", "need")
        if iso == "hardware" and "gpus" in need:
            message = (
                "isolation hardware means a MIG instance; whole GPUs (need.gpus) are isolation exclusive"
            )
        elif iso == "exclusive" and "gpus" not in need:
            message = (
                "isolation exclusive means whole GPUs; set need.gpus (or use isolation hardware for MIG)"
            )
        elif iso == "shared" and need.get("gpus") != 1:
            message = "isolation shared means one time-sliced/MPS share of a GPU; set need: {gpus: 1}"
        else:
            continue
        ctx.add(w.doc.at("MIGC122", f"workload '{w.name}': {message}", path))


def _workload_pools(ctx: Context, w: Obj) -> list[PoolInfo] | None:
    spec = w.spec
    cluster = spec.get("cluster")
    if cluster is None:
        if len(ctx.clusters) > 1:
            ctx.add(
                w.doc.at(
                    "MIGC120",
                    f"workload '{w.name}' must name its cluster; the fleet has {', '.join(ctx.clusters)}",
                    ("spec",),
                    key=True,
                )
            )
            return None
        cluster = ctx.clusters[0]
    elif cluster not in ctx.clusters:
        ctx.add(
            w.doc.at(
                "MIGC105",
                f"workload '{w.name}' names unknown cluster '{cluster}'; clusters: {', '.join(ctx.clusters)}"
                f"{suggest(cluster, ctx.clusters)}",
                ("spec", "cluster"),
            )
        )
        return None
    in_cluster = {name: p for (c, name), p in ctx.pools.items() if c == cluster}
    wanted = spec.get("pools")
    if wanted is None:
        return sorted(in_cluster.values(), key=lambda p: p.name)
    chosen: list[PoolInfo] = []
    for i, name in enumerate(wanted):
        if name in in_cluster:
            chosen.append(in_cluster[name])
        else:
            ctx.add(
                w.doc.at(
                    "MIGC106",
                    f"workload '{w.name}' names unknown pool '{name}' of cluster {cluster}; pools: "
                    f"{listing(in_cluster)}{suggest(name, in_cluster)}",
                    ("spec", "pools", i),
                )
            )
    return chosen if len(chosen) == len(wanted) else None


def _check_profiles(ctx: Context, w: Obj, pools: list[PoolInfo]) -> None:
    need = w.spec["need"]
    if "profile" in need:
        items: list[tuple[PathT, str]] = [(("spec", "need", "profile"), str(need["profile"]))]
    else:
        items = [(("spec", "need", "profiles", i), str(p)) for i, p in enumerate(need["profiles"])]
    if not any(p.mig for p in pools):
        ctx.add(
            w.doc.at(
                "MIGC107",
                f"workload '{w.name}' needs a MIG profile but none of its pools "
                f"({listing(p.name for p in pools)}) is MIG-partitioned",
                ("spec", "need"),
            )
        )
        return
    for path, profile in items:
        check_profile_known(ctx, w, path, profile, pools, on_key=False, what=f"workload '{w.name}':")


def _check_whole_gpus(ctx: Context, w: Obj, pools: list[PoolInfo]) -> None:
    k = int(w.spec["need"]["gpus"])
    if isolation(w.spec) == "shared":
        if not any(p.sharing_mode != "none" for p in pools):
            ctx.add(
                w.doc.at(
                    "MIGC107",
                    f"workload '{w.name}' wants a shared GPU but none of its pools "
                    f"({listing(p.name for p in pools)}) is time-sliced or MPS-shared",
                    ("spec", "isolation"),
                )
            )
        return
    biggest = max((p.gpus_per_node for p in pools), default=0)
    if k > biggest:
        ctx.add(
            w.doc.at(
                "MIGC118",
                f"workload '{w.name}' needs {k} GPUs on one node, but its pools have at most "
                f"{biggest} per node",
                ("spec", "need", "gpus"),
            )
        )


def _check_size(ctx: Context, w: Obj, pools: list[PoolInfo]) -> None:
    need = w.spec["need"]
    memory = float(need.get("gpuMemoryGB", 0))
    slices = int(need.get("computeSlices", 0))
    fits = [
        p
        for p in pools
        if p.mig
        and p.model is not None
        and any(
            not pr.media_extensions and pr.memory_gb >= memory and pr.compute_slices >= slices
            for pr in p.model.profiles
        )
    ]
    if not fits:
        asked = " and ".join(
            x for x in (f"{memory:g} GB" if memory else "", f"{slices} compute slices" if slices else "") if x
        )
        ctx.add(
            w.doc.at(
                "MIGC107",
                f"workload '{w.name}' needs {asked}, but no MIG profile of its pools "
                f"({listing(p.name for p in pools)}) is that large",
                ("spec", "need"),
            )
        )


@rule(
    "workload-placement",
    codes=("MIGC101", "MIGC105", "MIGC106", "MIGC107", "MIGC118", "MIGC120"),
    when=needs_fleet,
)
def check_placement(ctx: Context) -> None:
    """The workload's cluster and pools exist, and some pool can serve its need."""
    for w in ctx.workloads:
        pools = _workload_pools(ctx, w)
        if pools is None:
            continue
        if any(p.model is None for p in pools):
            continue  # an unknown GPU product (MIGC100): what the pool offers is unknown, not absent
        need = w.spec["need"]
        if "profile" in need or "profiles" in need:
            _check_profiles(ctx, w, pools)
        elif "gpus" in need:
            _check_whole_gpus(ctx, w, pools)
        elif "hami" in need:
            continue  # rules/hami.py
        else:
            _check_size(ctx, w, pools)
