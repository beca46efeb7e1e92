"""Tenants: unique names, namespaces claimed once, tiers, quotas within what the fleet can provide,
and bursts not below guarantees."""

from __future__ import annotations

import math
from collections.abc import Sequence

from compiler.model import WHOLE_GPU
from compiler.validate.common import PathT
from compiler.validate.context import Context, Obj, PoolInfo
from compiler.validate.registry import rule
from compiler.validate.rules.shared import (
    allow_me,
    check_profile_known,
    check_tier,
    dupes,
    me_named_by_workloads,
)


def _in_order(ctx: Context) -> list[Obj]:
    return sorted(ctx.tenants, key=lambda t: (t.doc.file, t.doc.index))


@rule("tenant-unique-names", codes=("MIGC103",))
def check_unique_names(ctx: Context) -> None:
    """Tenant names are unique."""
    dupes(ctx, [(t.name, t.doc, ("metadata", "name")) for t in ctx.tenants], "tenant")


@rule("tenant-namespaces", codes=("MIGC108",))
def check_namespaces(ctx: Context) -> None:
    """A namespace belongs to one tenant."""
    claimed: dict[str, Obj] = {}
    for t in _in_order(ctx):
        for ni, ns in enumerate(t.spec["namespaces"]):
            owner = claimed.get(ns)
            if owner is not None and owner.name != t.name:
                ctx.add(
                    t.doc.at(
                        "MIGC108",
                        f"namespace '{ns}' is claimed by tenant '{t.name}' and by tenant '{owner.name}' "
                        f"({owner.where()})",
                        ("spec", "namespaces", ni),
                    )
                )
            else:
                claimed.setdefault(ns, t)


#: Namespaces no tenant may claim: Kubernetes' own (``kube-system``, ``kube-public``,
#: ``kube-node-lease`` and any future ``kube-*``), ``default``, migc's ``migc-system`` (it renders that
#: Namespace itself) and each cluster's GPU Operator namespace (``gpuOperatorNamespace``).
RESERVED_NAMESPACES = ("default", "migc-system")
RESERVED_PREFIX = "kube-"


def _operator_namespaces(ctx: Context) -> dict[str, list[str]]:
    """GPU Operator namespace → the clusters that run the operator there (empty without a valid Fleet)."""
    if not ctx.fleet_ok or ctx.fleet is None:
        return {}
    out: dict[str, list[str]] = {}
    for cluster in ctx.fleet.spec["clusters"]:
        ns = str(cluster.get("gpuOperatorNamespace", "gpu-operator"))
        out.setdefault(ns, [])
        if str(cluster["name"]) not in out[ns]:
            out[ns].append(str(cluster["name"]))
    return out


def _reserved_because(ns: str, operator: dict[str, list[str]]) -> str | None:
    if ns.startswith(RESERVED_PREFIX):
        return "kube-* namespaces belong to Kubernetes"
    if ns == "default":
        return "'default' is where objects without a namespace land"
    if ns == "migc-system":
        return "migc-system is migc's own namespace (it renders that Namespace itself)"
    if ns in operator:
        return f"it is the GPU Operator's namespace of cluster {', '.join(operator[ns])}"
    return None


@rule("tenant-reserved-namespaces", codes=("MIGC140",))
def check_reserved_namespaces(ctx: Context) -> None:
    """No tenant claims a system namespace: it would get a ResourceQuota and LimitRange (and for
    migc-system a second Namespace object that breaks ``kubectl kustomize``)."""
    operator = _operator_namespaces(ctx)
    for t in _in_order(ctx):
        for ni, ns in enumerate(t.spec["namespaces"]):
            why = _reserved_because(str(ns), operator)
            if why is not None:
                ctx.add(
                    t.doc.at(
                        "MIGC140",
                        f"tenant '{t.name}' claims namespace '{ns}', which is reserved: {why}",
                        ("spec", "namespaces", ni),
                    )
                )


@rule("tenant-tier", codes=("MIGC117",))
def check_tiers(ctx: Context) -> None:
    """A tenant's ``priorityClass`` is a tier."""
    for t in _in_order(ctx):
        check_tier(ctx, t, ("spec", "priorityClass"))


def _profile_bound(profile: str, pools: Sequence[PoolInfo]) -> int:
    """Most instances of ``profile`` the fleet could ever hold: max per GPU × partitionable GPUs."""
    bound = 0
    for pool in pools:
        if pool.mig and pool.model is not None:
            prof = pool.model.profile(profile)
            if prof is not None:
                bound += prof.max_count * pool.partitionable_gpus()
    return bound


def _check_profile_bound(
    ctx: Context, t: Obj, path: PathT, profile: str, count: int, pools: Sequence[PoolInfo]
) -> bool:
    """MIGC110 when one tenant alone is guaranteed more than the bound; returns whether it fits."""
    bound = _profile_bound(profile, pools)
    if count > bound:
        ctx.add(
            t.doc.at(
                "MIGC110",
                f"tenant '{t.name}' is guaranteed {count} × {profile}, but the fleet can provide "
                f"at most {bound} "
                "(profile maximum per GPU × partitionable GPUs of pools that have it)",
                path,
            )
        )
        return False
    return True


_NAMES_SHOWN = 10  # longer lists of tenants are summarised ("… and 340 more")


def _check_joint_bounds(
    ctx: Context, fitting: list[tuple[Obj, PathT, str, int]], pools: list[PoolInfo]
) -> None:
    """Guarantees that fit one by one can still exceed the bound together; reported at the last tenant."""
    by_key: dict[str, list[tuple[Obj, PathT, int]]] = {}
    for t, path, key, count in fitting:
        by_key.setdefault(key, []).append((t, path, count))
    total_gpus = sum(p.total_gpus for p in pools)
    for key in sorted(by_key):
        entries = by_key[key]
        total = sum(c for _, _, c in entries)
        bound = total_gpus if key == WHOLE_GPU else _profile_bound(key, pools)
        if len(entries) < 2 or total <= bound:
            continue
        names = sorted(t.name for t, _, _ in entries)
        shown = ", ".join(names[:_NAMES_SHOWN])
        if len(names) > _NAMES_SHOWN:
            shown += f" … and {len(names) - _NAMES_SHOWN} more"
        what = "whole GPUs" if key == WHOLE_GPU else f"× {key}"
        last, path, _ = entries[-1]
        ctx.add(
            last.doc.at(
                "MIGC111" if key == WHOLE_GPU else "MIGC110",
                f"tenants {shown} are guaranteed {total} {what} together, but the fleet can provide at most "
                f"{bound}",
                path,
            )
        )


def _check_whole_bounds(ctx: Context, t: Obj, pools: Sequence[PoolInfo]) -> bool:
    """MIGC111 for whole GPUs, GPU memory and compute slices; returns whether the whole GPUs fit."""
    quota = t.spec.get("guaranteed", {})
    total_gpus = sum(p.total_gpus for p in pools)
    total_mem = sum(p.total_gpus * (p.model.memory_gb if p.model else 0.0) for p in pools)
    total_slices = sum(p.total_gpus * (p.model.compute_slices if p.model else 0) for p in pools if p.mig)
    checks = (
        ("gpus", total_gpus, "GPUs"),
        ("gpuMemoryGB", total_mem, "GB of GPU memory"),
        ("computeSlices", total_slices, "compute slices on MIG pools"),
    )
    for key, total, unit in checks:
        if key in quota and math.isfinite(quota[key]) and quota[key] > total:  # infinite: MIGC141
            ctx.add(
                t.doc.at(
                    "MIGC111",
                    f"tenant '{t.name}' is guaranteed {quota[key]} {unit} but the fleet has {total:g}",
                    ("spec", "guaranteed", key),
                )
            )
    return not ("gpus" in quota and quota["gpus"] > total_gpus)


def _check_quota_profiles(
    ctx: Context, t: Obj, me_named: set[str], fitting: list[tuple[Obj, PathT, str, int]]
) -> None:
    all_pools = list(ctx.pools.values())
    for section in ("guaranteed", "burst"):
        quota = t.spec.get(section, {})
        for profile in sorted(quota.get("profiles", {})):
            ppath: PathT = ("spec", section, "profiles", profile)
            if profile.endswith("+me") and profile not in me_named and not allow_me(ctx):
                ctx.add(
                    t.doc.at(
                        "MIGC102",
                        f"{section} quota names '{profile}' but no workload asks for it and "
                        "allowMediaExtensions is false",
                        ppath,
                        key=True,
                    )
                )
                continue
            if not ctx.fleet_ok:
                continue
            known = check_profile_known(
                ctx, t, ppath, profile, all_pools, on_key=True, what=f"{section} quota"
            )
            count = int(quota["profiles"][profile])
            if (
                known
                and section == "guaranteed"
                and _check_profile_bound(ctx, t, ppath, profile, count, all_pools)
            ):
                fitting.append((t, ppath, profile, count))


@rule("tenant-quotas", codes=("MIGC101", "MIGC102", "MIGC110", "MIGC111"))
def check_quotas(ctx: Context) -> None:
    """Quota profiles exist and are asked for; guarantees fit the fleet, one by one and together."""
    all_pools = list(ctx.pools.values())
    me_named = me_named_by_workloads(ctx)
    fitting: list[tuple[Obj, PathT, str, int]] = []  # guarantees within the bound one by one
    for t in _in_order(ctx):
        _check_quota_profiles(ctx, t, me_named, fitting)
        if (
            ctx.fleet_ok
            and _check_whole_bounds(ctx, t, all_pools)
            and t.spec.get("guaranteed", {}).get("gpus")
        ):
            fitting.append((t, ("spec", "guaranteed", "gpus"), WHOLE_GPU, int(t.spec["guaranteed"]["gpus"])))
    if ctx.fleet_ok:
        _check_joint_bounds(ctx, fitting, all_pools)


@rule("tenant-burst", codes=("MIGC123",))
def check_burst(ctx: Context) -> None:
    """A burst quota is not below the guarantee."""
    for t in _in_order(ctx):
        g = t.spec.get("guaranteed", {})
        b = t.spec.get("burst")
        if not b:
            continue
        for key in ("gpus", "gpuMemoryGB", "computeSlices"):
            if key in g and key in b and b[key] < g[key]:
                ctx.add(
                    t.doc.at(
                        "MIGC123",
                        f"burst {key} {b[key]} is below the guaranteed {g[key]}",
                        ("spec", "burst", key),
                    )
                )
        for profile, count in sorted(g.get("profiles", {}).items()):
            burst = b.get("profiles", {})
            if profile in burst and burst[profile] < count:
                ctx.add(
                    t.doc.at(
                        "MIGC123",
                        f"burst {profile} {burst[profile]} is below the guaranteed {count}",
                        ("spec", "burst", "profiles", profile),
                    )
                )
