"""The Fleet: unique cluster, pool and node names; GPU products and partitioning; reserves,
``maxUnavailable`` and maintenance windows of each pool."""

from __future__ import annotations

from compiler.catalog import accepted_names
from compiler.load import LoadedDocument
from compiler.validate.common import PathT, suggest, time_zones
from compiler.validate.context import Context, PoolInfo
from compiler.validate.registry import needs_fleet, rule
from compiler.validate.rules.limits import MAX_POOL_NODES
from compiler.validate.rules.shared import dupes


def _doc(ctx: Context) -> LoadedDocument:
    assert ctx.fleet is not None
    return ctx.fleet.doc


@rule("fleet-unique-names", codes=("MIGC103",), when=needs_fleet)
def check_unique_names(ctx: Context) -> None:
    """Cluster names are unique; pool names and node names are unique within a cluster."""
    assert ctx.fleet is not None
    doc = ctx.fleet.doc
    clusters = ctx.fleet.spec["clusters"]
    dupes(
        ctx,
        [(str(c["name"]), doc, ("spec", "clusters", i, "name")) for i, c in enumerate(clusters)],
        "cluster",
    )
    for ci, cluster in enumerate(clusters):
        cname = str(cluster["name"])
        base: PathT = ("spec", "clusters", ci, "nodePools")
        pools = cluster["nodePools"]
        dupes(
            ctx,
            [(str(p["name"]), doc, (*base, pi, "name")) for pi, p in enumerate(pools)],
            "pool",
            f" in cluster {cname}",
        )
        nodes: list[tuple[str, LoadedDocument, PathT]] = []
        for pi, pool in enumerate(pools):
            names = pool["nodes"].get("names")
            if names is not None:
                nodes.extend((str(n), doc, (*base, pi, "nodes", "names", ni)) for ni, n in enumerate(names))
            else:
                pname = str(pool["name"])
                count = int(pool["nodes"]["count"])
                if count > MAX_POOL_NODES:
                    continue  # MIGC143; not expanded into names
                nodes.extend((f"{pname}-{i}", doc, (*base, pi, "nodes", "count")) for i in range(count))
        dupes(ctx, nodes, "node", f" in cluster {cname}")


def product_suggestion(ctx: Context, value: str) -> str:
    """``; did you mean 'X'? (MODEL is accepted as: ...)`` within the value's GPU family, or a pointer.

    Edit distance alone crosses families (``NVIDIA-H100-SXM5-80GB`` is nearest to
    ``NVIDIA-A100-SXM4-80GB``, another GPU with other profiles), so the candidate is the catalog model
    of the same chip (:meth:`Catalog.same_family`), shown with every name migc accepts for it.
    """
    models = ctx.catalog.same_family(value)
    if not models:
        return "; no catalog model of that GPU family (`migc version --catalog` lists them all)"
    model, others = models[0], models[1:]
    names = accepted_names(model)
    # the gpu.product labels GFD writes come first; an alias only when no label is near
    best = suggest(value, model.gpu_products) or suggest(value, names) or f"; did you mean '{names[0]}'?"
    rest = f"; other models of that family: {', '.join(m.model for m in others)}" if others else ""
    return f"{best} ({model.model} is accepted as: {', '.join(names)}{rest})"


@rule("pool-hardware", codes=("MIGC100", "MIGC119", "MIGC121"), when=needs_fleet)
def check_pool_hardware(ctx: Context) -> None:
    """The GPU product is in the catalog, MIG only where the model supports it, no sharing on MIG."""
    doc = _doc(ctx)
    for pool in ctx.pool_list:
        raw = pool.raw
        if pool.model is None:
            ctx.add(
                doc.at(
                    "MIGC100",
                    f"unknown GPU product '{raw['gpuProduct']}'"
                    + product_suggestion(ctx, str(raw["gpuProduct"])),
                    (*pool.path, "gpuProduct"),
                )
            )
        if pool.partitioning == "mig" and pool.model is not None and not pool.model.mig_capable:
            ctx.add(
                doc.at(
                    "MIGC121",
                    f"pool '{pool.name}': {pool.model.model} does not support MIG; set partitioning: none",
                    (*pool.path, "partitioning") if "partitioning" in raw else (*pool.path, "gpuProduct"),
                )
            )
        if (
            pool.sharing_mode != "none"
            and pool.partitioning == "mig"
            and (pool.model is None or pool.model.mig_capable)
        ):
            ctx.add(
                doc.at(
                    "MIGC119",
                    f"pool '{pool.name}' is partitioned with MIG and also uses {pool.sharing_mode} sharing; "
                    "MPS and time-slicing apply only to pools with partitioning: none",
                    (*pool.path, "sharing", "mode"),
                )
            )


@rule("pricing-products", codes=("MIGC100",), when=needs_fleet)
def check_pricing_products(ctx: Context) -> None:
    """Every ``pricing`` key is a GPU product of the catalog."""
    assert ctx.fleet is not None
    for key in sorted(ctx.fleet.spec.get("pricing", {})):
        if ctx.catalog.by_product(key) is None:
            ctx.add(
                ctx.fleet.doc.at(
                    "MIGC100",
                    f"pricing names unknown GPU product '{key}'{product_suggestion(ctx, key)}",
                    ("spec", "pricing", key),
                    key=True,
                )
            )


def _check_reserve(ctx: Context, doc: LoadedDocument, pool: PoolInfo) -> None:
    reserve = pool.raw.get("reserve", {})
    gpus = int(reserve.get("wholeGpus", 0))
    nodes = int(reserve.get("wholeNodes", 0))
    if nodes > pool.node_count:
        ctx.add(
            doc.at(
                "MIGC112",
                f"pool '{pool.name}' reserves {nodes} whole nodes but has {pool.node_count}",
                (*pool.path, "reserve", "wholeNodes"),
            )
        )
    elif gpus + nodes * pool.gpus_per_node > pool.total_gpus:
        ctx.add(
            doc.at(
                "MIGC112",
                f"pool '{pool.name}' reserves {gpus} whole GPUs"
                + (f" plus {nodes} whole nodes" if nodes else "")
                + f" but has {pool.total_gpus} GPUs",
                (*pool.path, "reserve", "wholeGpus"),
            )
        )


@rule("pool-reserve", codes=("MIGC112",), when=needs_fleet)
def check_reserve(ctx: Context) -> None:
    """A pool reserves no more whole GPUs and nodes than it has."""
    for pool in ctx.pool_list:
        _check_reserve(ctx, _doc(ctx), pool)


@rule("pool-max-unavailable", codes=("MIGC113",), when=needs_fleet)
def check_max_unavailable(ctx: Context) -> None:
    """``maxUnavailable`` is at most the pool's node count, or a percentage from 1% to 100%; an
    ``idleSurge`` written is at most the node count too (the default, 1, is capped by the controller)."""
    doc = _doc(ctx)
    for pool in ctx.pool_list:
        surge = pool.raw.get("idleSurge")
        if isinstance(surge, int) and not isinstance(surge, bool) and surge > pool.node_count:
            ctx.add(
                doc.at(
                    "MIGC113",
                    f"pool '{pool.name}': idleSurge {surge} is more than its {pool.node_count} node(s)",
                    (*pool.path, "idleSurge"),
                )
            )
        mu = pool.raw.get("maxUnavailable")
        if isinstance(mu, int) and mu > pool.node_count:
            ctx.add(
                doc.at(
                    "MIGC113",
                    f"pool '{pool.name}': maxUnavailable {mu} is more than its {pool.node_count} node(s)",
                    (*pool.path, "maxUnavailable"),
                )
            )
        elif isinstance(mu, str):
            pct = int(mu.rstrip("%"))
            if pct < 1 or pct > 100:
                ctx.add(
                    doc.at(
                        "MIGC113",
                        f"pool '{pool.name}': maxUnavailable {mu} must be between 1% and 100%",
                        (*pool.path, "maxUnavailable"),
                    )
                )


@rule("pool-maintenance-windows", codes=("MIGC124", "MIGC125"), when=needs_fleet)
def check_windows(ctx: Context) -> None:
    """A window's time zone is a known IANA zone, and it does not start when it ends."""
    doc = _doc(ctx)
    zones = time_zones()
    for pool in ctx.pool_list:
        for wi, window in enumerate(pool.raw.get("maintenanceWindows", [])):
            tz = window.get("timezone")
            if tz is not None and zones and tz not in zones:
                ctx.add(
                    doc.at(
                        "MIGC125",
                        f"pool '{pool.name}': unknown time zone '{tz}'{suggest(str(tz), zones)}",
                        (*pool.path, "maintenanceWindows", wi, "timezone"),
                    )
                )
            if window["start"] == window["end"]:
                ctx.add(
                    doc.at(
                        "MIGC124",
                        f"pool '{pool.name}': maintenance window starts and ends at {window['start']}",
                        (*pool.path, "maintenanceWindows", wi, "end"),
                    )
                )
