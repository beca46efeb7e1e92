"""The model builder: schema-valid, rule-checked documents → a frozen :class:`compiler.model.Policy`.

Only reached without errors, so every lookup below succeeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compiler.load import LoadedDocument
from compiler.model import (
    IDLE_SURGE,
    Cluster,
    HamiNeed,
    HamiSettings,
    MaintenanceWindow,
    Need,
    NodePool,
    PartitionPolicy,
    Policy,
    Quota,
    Rule,
    RuleCondition,
    Sharing,
    Span,
    Target,
    Tenant,
    Workload,
    frozen_counts,
    objective_order,
)
from compiler.schemas import DAYS
from compiler.validate.common import parse_duration, resolve_max_unavailable
from compiler.validate.context import (
    Context,
    Obj,
    default_tier,
    isolation,
    spread_applies,
    spread_from_raw,
)


def mib(text: str) -> int:
    """``12Gi`` / ``500Mi`` → MiB (the schema allows only these two suffixes)."""
    return int(text[:-2]) * (1024 if text.endswith("Gi") else 1)


def _quota(raw: dict[str, Any] | None) -> Quota:
    raw = raw or {}
    hami = raw.get("hami", {})
    return Quota(
        hami_vgpus=int(hami.get("vgpus", 0)),
        hami_memory_mib=mib(str(hami["memory"])) if "memory" in hami else 0,
        hami_cores=int(hami.get("cores", 0)),
        profiles=frozen_counts({str(k): int(v) for k, v in raw.get("profiles", {}).items()}),
        gpus=int(raw.get("gpus", 0)),
        gpu_memory_gb=float(raw.get("gpuMemoryGB", 0.0)),
        compute_slices=int(raw.get("computeSlices", 0)),
    )


def _pool(ctx: Context, fleet: Obj, pricing: dict[str, float], cname: str, ci: int, pi: int) -> NodePool:
    raw = fleet.spec["clusters"][ci]["nodePools"][pi]
    info = ctx.pools[(cname, str(raw["name"]))]
    assert info.model is not None
    names = raw["nodes"].get("names")
    selector = raw["nodes"].get("selector", {}).get("matchLabels", {})
    node_names = (
        tuple(sorted(str(n) for n in names))
        if names is not None
        else tuple(sorted(f"{info.name}-{i}" for i in range(info.node_count)))
    )
    sharing_raw = raw.get("sharing", {})
    mode = str(sharing_raw.get("mode", "none"))
    reserve = raw.get("reserve", {})
    return NodePool(
        name=info.name,
        cluster=cname,
        gpu_product=str(raw["gpuProduct"]),
        gpu_model=info.model.model,
        gpus_per_node=info.gpus_per_node,
        node_names=node_names,
        node_selector=tuple(sorted((str(k), str(v)) for k, v in selector.items())),
        node_count=info.node_count,
        max_unavailable=resolve_max_unavailable(raw.get("maxUnavailable"), info.node_count),
        idle_surge=int(raw.get("idleSurge", IDLE_SURGE)),
        maintenance_windows=tuple(
            MaintenanceWindow(
                days=tuple(str(d) for d in w.get("days") or DAYS),  # unset or empty: every day
                start=str(w["start"]),
                end=str(w["end"]),
                timezone=str(w.get("timezone", "UTC")),
            )
            for w in raw.get("maintenanceWindows", [])
        ),
        reserve_whole_gpus=int(reserve.get("wholeGpus", 0)),
        reserve_whole_nodes=int(reserve.get("wholeNodes", 0)),
        mig=info.mig,
        sharing=_sharing(mode, sharing_raw),
        price_per_gpu_hour=pricing.get(info.model.model),
        labels=tuple(sorted((str(k), str(v)) for k, v in raw.get("labels", {}).items())),
        span=fleet.span(("spec", "clusters", ci, "nodePools", pi)),
        allocation=raw.get("allocation", "device-plugin"),
        dra_mig=raw.get("dra", {}).get("mig", "static"),
        mig_mode_enabled=bool(raw.get("dra", {}).get("migModeEnabled", False)),
    )


def _sharing(mode: str, raw: dict[str, Any]) -> Sharing:
    if mode == "none":
        return Sharing()
    if mode != "hami":
        return Sharing(mode=mode, replicas=int(raw.get("replicas", 1)))  # type: ignore[arg-type]
    h = raw.get("hami", {})
    d = HamiSettings()
    return Sharing(
        mode="hami",
        hami=HamiSettings(
            split_count=int(h.get("splitCount", d.split_count)),
            memory_scaling=float(h.get("memoryScaling", d.memory_scaling)),
            core_scaling=float(h.get("coreScaling", d.core_scaling)),
            operating_mode=h.get("operatingMode", d.operating_mode),
            node_policy=h.get("nodePolicy", d.node_policy),
            gpu_policy=h.get("gpuPolicy", d.gpu_policy),
        ),
    )


def hami_need(raw: dict[str, Any]) -> HamiNeed:
    memory = str(raw["memory"])
    return HamiNeed(
        memory_mib=mib(memory) if not memory.endswith("%") else 0,
        memory_percent=int(memory[:-1]) if memory.endswith("%") else 0,
        cores=int(raw.get("cores", 0)),
        distinct_gpus=bool(raw.get("distinctGpus", False)),
    )


def _clusters(ctx: Context, fleet: Obj, pricing: dict[str, float]) -> tuple[Cluster, ...]:
    clusters: list[Cluster] = []
    for ci, raw_cluster in enumerate(fleet.spec["clusters"]):
        cname = str(raw_cluster["name"])
        pools = [_pool(ctx, fleet, pricing, cname, ci, pi) for pi in range(len(raw_cluster["nodePools"]))]
        clusters.append(
            Cluster(
                name=cname,
                pools=tuple(sorted(pools, key=lambda p: p.name)),
                gpu_operator_namespace=str(raw_cluster.get("gpuOperatorNamespace", "gpu-operator")),
                kubernetes_version=str(raw_cluster.get("kubernetesVersion", "1.31")),
                span=fleet.span(("spec", "clusters", ci)),
            )
        )
    return tuple(sorted(clusters, key=lambda c: c.name))


def _tenants(ctx: Context) -> tuple[Tenant, ...]:
    tier = default_tier(ctx)
    return tuple(
        sorted(
            (
                Tenant(
                    name=t.name,
                    namespaces=tuple(sorted(str(n) for n in t.spec["namespaces"])),
                    priority_tier=str(t.spec.get("priorityClass", tier)),
                    guaranteed=_quota(t.spec.get("guaranteed")),
                    burst=_quota(t.spec.get("burst")),
                    create_namespaces=bool(t.spec.get("createNamespaces", True)),
                    span=t.span(("metadata", "name")),
                    rewrite_gpu_requests=bool(t.spec.get("rewriteGpuRequests", False)),
                )
                for t in ctx.tenants
            ),
            key=lambda t: t.name,
        )
    )


def _need(need_raw: dict[str, Any]) -> Need:
    if "profile" in need_raw:
        return Need(profiles=(str(need_raw["profile"]),))
    if "profiles" in need_raw:
        return Need(profiles=tuple(str(p) for p in need_raw["profiles"]))
    if "gpus" in need_raw:
        return Need(gpus=int(need_raw["gpus"]))
    if "hami" in need_raw:
        return Need(hami=hami_need(need_raw["hami"]))
    return Need(
        gpu_memory_gb=float(need_raw.get("gpuMemoryGB", 0.0)),
        compute_slices=int(need_raw.get("computeSlices", 0)),
    )


def _target(raw: dict[str, Any] | None, tenants: tuple[Tenant, ...], tenant: str) -> Target | None:
    if raw is None:
        return None
    namespaces = next(t.namespaces for t in tenants if t.name == tenant)
    return Target(
        api_version=str(raw["apiVersion"]),
        kind=str(raw["kind"]),
        name=str(raw["name"]),
        namespace=str(raw.get("namespace", namespaces[0])),
        container=str(raw.get("container", "")),
    )


def _workloads(ctx: Context, tenants: tuple[Tenant, ...]) -> tuple[Workload, ...]:
    tier_of = {t.name: t.priority_tier for t in tenants}
    tier_spread = {t.name: t.spread for t in ctx.tiers}
    workloads: list[Workload] = []
    for w in ctx.workloads:
        spec = w.spec
        tier = str(spec.get("priorityClass", tier_of[str(spec["tenant"])]))
        spread = spread_from_raw(spec.get("spread"))
        if spread is None and spread_applies(spec):
            spread = tier_spread.get(tier)  # the tier's default
        workloads.append(
            Workload(
                name=w.name,
                tenant=str(spec["tenant"]),
                replicas=int(spec["replicas"]),
                need=_need(spec["need"]),
                isolation=isolation(spec),  # type: ignore[arg-type]
                priority_tier=tier,
                cluster=str(spec.get("cluster", ctx.clusters[0])),
                pools=tuple(sorted(str(p) for p in spec.get("pools", []))),
                span=w.span(("metadata", "name")),
                target=_target(spec.get("target"), tenants, str(spec["tenant"])),
                spread=spread,
            )
        )
    return tuple(sorted(workloads, key=lambda w: w.name))


def build(ctx: Context, documents: Sequence[LoadedDocument]) -> Policy:
    """The :class:`Policy` of a policy set that validated without errors."""
    fleet = ctx.fleet
    assert fleet is not None
    pricing: dict[str, float] = {}
    for key, value in sorted(fleet.spec.get("pricing", {}).items()):
        model = ctx.catalog.by_product(key)
        if model is not None:
            pricing[model.model] = float(value)
    tenants = _tenants(ctx)
    return Policy(
        clusters=_clusters(ctx, fleet, pricing),
        tenants=tenants,
        workloads=_workloads(ctx, tenants),
        partition=_build_partition(ctx, pricing),
        fleet_name=fleet.name,
        source_files=tuple(sorted({d.file for d in documents})),
    )


def _seconds(raw: Any, default: int) -> int:
    if raw is None:
        return default
    parsed = parse_duration(str(raw))
    return default if parsed is None else parsed


def _rule(r: dict[str, Any]) -> Rule:
    when = r["when"]
    return Rule(
        name=str(r["name"]),
        when=RuleCondition(
            pending_pods_greater_than=int(when.get("pendingPodsGreaterThan", 0)),
            max_requested_memory_gb_below=(
                float(when["maxRequestedMemoryGBBelow"]) if "maxRequestedMemoryGBBelow" in when else None
            ),
            profile=str(when["profile"]) if "profile" in when else None,
        ),
        maximize=str(r["prefer"]["maximize"]),
        pools=tuple(sorted(str(x) for x in r.get("pools", []))),
    )


def _build_partition(ctx: Context, pricing: dict[str, float]) -> PartitionPolicy:
    frozen_pricing = tuple(sorted(pricing.items()))
    p = ctx.partition
    if p is None:
        return PartitionPolicy(pricing=frozen_pricing)
    spec = p.spec
    defaults = PartitionPolicy()
    backoff = spec.get("backoff", {})
    return PartitionPolicy(
        mode=spec.get("mode", defaults.mode),
        interval_seconds=_seconds(spec.get("interval"), defaults.interval_seconds),
        reconfiguration_threshold_pct=float(
            spec.get("reconfigurationThreshold", defaults.reconfiguration_threshold_pct)
        ),
        stabilization_seconds=_seconds(spec.get("stabilizationWindow"), defaults.stabilization_seconds),
        scale_down_seconds=_seconds(spec.get("scaleDownWindow"), defaults.scale_down_seconds),
        min_dwell_seconds=_seconds(spec.get("minDwell"), defaults.min_dwell_seconds),
        backoff_initial_seconds=_seconds(backoff.get("initial"), defaults.backoff_initial_seconds),
        backoff_max_seconds=_seconds(backoff.get("max"), defaults.backoff_max_seconds),
        backoff_factor=float(backoff.get("factor", defaults.backoff_factor)),
        daily_change_budget=int(spec.get("dailyChangeBudget", defaults.daily_change_budget)),
        unmet_demand=spec.get("unmetDemand", defaults.unmet_demand),
        allow_media_extensions=bool(spec.get("allowMediaExtensions", defaults.allow_media_extensions)),
        objective=objective_order(spec.get("objective", [])),
        tiers=tuple(ctx.tiers),
        rules=tuple(_rule(r) for r in spec.get("rules", [])),
        pricing=frozen_pricing,
        span=p.span(("metadata", "name")),
        budget_span=p.span(("spec", "dailyChangeBudget")) if "dailyChangeBudget" in spec else Span(),
    )
