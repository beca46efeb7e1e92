"""Pools allocated through Kubernetes DRA (MIGC160-MIGC169, MIGC190): what cannot work is refused.

Upstream behaviour each rule encodes (read at kubernetes-sigs/dra-driver-nvidia-gpu ``95932046``,
kubernetes ``resource.k8s.io/v1``; docs/dra.md has the full table):

* ``resource.k8s.io/v1`` is served from Kubernetes 1.34; partitionable devices (what DynamicMIG
  advertises) are on by default from 1.36 (MIGC161, MIGC162);
* ``pkg/featuregates/featuregates.go`` ValidateFeatureGates: DynamicMIG excludes MPSSupport (MIGC164);
  the gates are per installation, so one cluster's driver is DynamicMIG or not (MIGC169);
* ``cmd/gpu-kubelet-plugin/nvlib.go`` isDynamicMIGCapable: no MIG hardware, no DynamicMIG (MIGC165);
  Ampere with MIG mode off advertises nothing (MIGC166);
* ``cmd/gpu-kubelet-plugin/driver.go`` DestroyUnknownMIGDevices: a DynamicMIG driver destroys MIG
  devices it did not create, so it shares no node with mig-parted or the device plugin (MIGC167).
"""

from __future__ import annotations

from typing import Any

from compiler.validate.common import PathT
from compiler.validate.context import Context, PoolInfo
from compiler.validate.registry import needs_fleet, rule

DRA_V1 = (1, 34)  # resource.k8s.io/v1 GA
PARTITIONABLE_DEFAULT_ON = (1, 36)  # DRAPartitionableDevices beta, on by default
# MIG-capable Ampere parts: MIG mode toggles only with a GPU reset (nvlib.go supportsMIGModeToggle:
# arch >= Hopper toggles without one). Catalog keys of those models start with these.
AMPERE_MODELS = ("A100", "A30")


def allocation(pool: PoolInfo) -> str:
    return str(pool.raw.get("allocation", "device-plugin"))


def dra_mig(pool: PoolInfo) -> str:
    return str(pool.raw.get("dra", {}).get("mig", "static"))


def is_dynamic(pool: PoolInfo) -> bool:
    return allocation(pool) == "dra" and dra_mig(pool) == "dynamic"


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _doc(ctx: Context) -> Any:
    assert ctx.fleet is not None
    return ctx.fleet.doc


def _cluster_raw(ctx: Context, name: str) -> tuple[int, dict[str, Any]]:
    assert ctx.fleet is not None
    for ci, cluster in enumerate(ctx.fleet.spec["clusters"]):
        if str(cluster["name"]) == name:
            return ci, cluster
    raise KeyError(name)


def _at(pool: PoolInfo, *keys: str | int) -> PathT:
    return (*pool.path, *keys)


@rule(
    "dra-settings", codes=("MIGC160", "MIGC163", "MIGC164", "MIGC165", "MIGC166", "MIGC168"), when=needs_fleet
)
def check_pool_settings(ctx: Context) -> None:
    """What a pool's ``allocation`` / ``dra`` settings contradict within the pool itself."""
    doc = _doc(ctx)
    for pool in ctx.pool_list:
        if allocation(pool) != "dra":
            if "dra" in pool.raw:
                ctx.add(
                    doc.at(
                        "MIGC160",
                        f"pool '{pool.name}': dra is set but allocation is {allocation(pool)}",
                        _at(pool, "dra"),
                    )
                )
            continue
        mode = pool.sharing_mode
        dynamic = dra_mig(pool) == "dynamic"
        if mode == "mps" and dynamic:
            ctx.add(
                doc.at(
                    "MIGC164",
                    f"pool '{pool.name}': the DRA driver's DynamicMIG and MPSSupport "
                    "feature gates exclude each other",
                    _at(pool, "sharing", "mode"),
                )
            )
        elif mode != "none":
            ctx.add(
                doc.at(
                    "MIGC163",
                    f"pool '{pool.name}': sharing {mode} configures a device plugin, "
                    "which does not run on a DRA pool",
                    _at(pool, "sharing", "mode"),
                )
            )
        if not dynamic:
            continue
        if pool.model is not None and not pool.mig:
            why = "has no MIG" if not pool.model.mig_capable else "is partitioning: none"
            where = "partitioning" if pool.model.mig_capable else "gpuProduct"
            ctx.add(
                doc.at(
                    "MIGC165",
                    f"pool '{pool.name}': dra.mig dynamic but {pool.model.model} {why}",
                    _at(pool, where) if where in pool.raw else _at(pool, "dra", "mig"),
                )
            )
        elif (
            pool.model is not None
            and pool.model.model.startswith(AMPERE_MODELS)
            and not pool.raw.get("dra", {}).get("migModeEnabled", False)
        ):
            ctx.add(
                doc.at(
                    "MIGC166",
                    f"pool '{pool.name}': {pool.model.model} is Ampere; the DRA driver "
                    "cannot switch MIG mode on there, so DynamicMIG advertises nothing until it is on",
                    _at(pool, "dra", "mig"),
                )
            )
        reserve = pool.raw.get("reserve", {})
        if reserve.get("wholeGpus") or reserve.get("wholeNodes"):
            ctx.add(
                doc.at(
                    "MIGC168",
                    f"pool '{pool.name}': a DynamicMIG pool has no layout that could keep GPUs whole",
                    _at(pool, "reserve"),
                )
            )


@rule("dra-cluster", codes=("MIGC161", "MIGC162", "MIGC169"), when=needs_fleet)
def check_cluster(ctx: Context) -> None:
    """The cluster's Kubernetes version, and one DynamicMIG setting per driver installation."""
    doc = _doc(ctx)
    for cname in ctx.clusters:
        pools = [p for p in ctx.pool_list if p.cluster == cname and allocation(p) == "dra"]
        if not pools:
            continue
        ci, raw = _cluster_raw(ctx, cname)
        version = str(raw.get("kubernetesVersion", "1.31"))
        where: PathT = ("spec", "clusters", ci, "kubernetesVersion")
        if "kubernetesVersion" not in raw:
            where = _at(pools[0], "allocation")
        names = ", ".join(p.name for p in pools)
        if _minor(version) < DRA_V1:
            ctx.add(
                doc.at(
                    "MIGC161",
                    f"cluster {cname}: Kubernetes {version} serves no resource.k8s.io/v1, "
                    f"which the DRA pools ({names}) are rendered with (1.34 or later)",
                    where,
                )
            )
            continue
        dynamic = [p for p in pools if dra_mig(p) == "dynamic"]
        if dynamic and _minor(version) < PARTITIONABLE_DEFAULT_ON:
            ctx.add(
                doc.at(
                    "MIGC162",
                    f"cluster {cname}: Kubernetes {version} has partitionable devices "
                    f"(DynamicMIG pool {dynamic[0].name}) behind the DRAPartitionableDevices gate",
                    where,
                )
            )
        static = [p for p in pools if dra_mig(p) == "static"]
        if dynamic and static:
            ctx.add(
                doc.at(
                    "MIGC169",
                    f"cluster {cname}: DRA pool '{static[0].name}' is static and "
                    f"'{dynamic[0].name}' dynamic; the driver's DynamicMIG gate is one per cluster",
                    _at(dynamic[0], "dra", "mig"),
                )
            )


def _labels(pool: PoolInfo) -> dict[str, str] | None:
    selector = pool.raw["nodes"].get("selector")
    if selector is None:
        return None
    return {str(k): str(v) for k, v in selector["matchLabels"].items()}


@rule("dra-dynamic-shared-nodes", codes=("MIGC167",), when=needs_fleet)
def check_shared_nodes(ctx: Context) -> None:
    """MIGC167: a dynamic pool's selector can match a node of another (non-dynamic) pool.

    Named nodes in two pools are already MIGC (duplicate node); two selectors overlap unless one key
    has different values in them. A named pool beside a selector pool is checked by the names'
    absence of labels: migc does not know node labels, so only selectors are compared.
    """
    doc = _doc(ctx)
    for pool in ctx.pool_list:
        mine = _labels(pool)
        if not is_dynamic(pool) or mine is None:
            continue
        for other in ctx.pool_list:
            theirs = _labels(other)
            if other is pool or other.cluster != pool.cluster or is_dynamic(other) or theirs is None:
                continue
            if any(k in theirs and theirs[k] != v for k, v in mine.items()):
                continue
            ctx.add(
                doc.at(
                    "MIGC167",
                    f"pool '{pool.name}' (DynamicMIG): its selector can match the nodes "
                    f"of pool '{other.name}' ({allocation(other)}), whose MIG devices the driver "
                    "would destroy at start",
                    _at(pool, "nodes", "selector", "matchLabels"),
                )
            )


def _may_serve(pool: PoolInfo, need: dict[str, Any]) -> bool:
    """Whether the pool's model could carry the need at all (exact profiles only; others: any pool)."""
    wanted = [str(need["profile"])] if "profile" in need else [str(p) for p in need.get("profiles", [])]
    if not wanted:
        return True
    return pool.mig and pool.model is not None and any(pool.model.profile(p) is not None for p in wanted)


@rule("dra-target-backends", codes=("MIGC190",), when=needs_fleet)
def check_target_backends(ctx: Context) -> None:
    """MIGC190: one patch per target, so a targeted workload's pools share one backend."""
    for w in ctx.workloads:
        spec = w.spec
        if "target" not in spec:
            continue
        cluster = str(spec.get("cluster", ctx.clusters[0] if ctx.clusters else ""))
        allowed = {str(p) for p in spec.get("pools", [])}
        pools = [
            p
            for p in ctx.pool_list
            if p.cluster == cluster and (not allowed or p.name in allowed) and _may_serve(p, spec["need"])
        ]
        backends = sorted({allocation(p) for p in pools})
        if len(backends) > 1:
            dra = ", ".join(p.name for p in pools if allocation(p) == "dra")
            ctx.add(
                w.doc.at(
                    "MIGC190",
                    f"workload '{w.name}' has a target and may run on DRA pools ({dra}) "
                    "and device-plugin pools; its pods can ask only one way",
                    ("spec", "pools") if allowed else ("spec", "target"),
                )
            )


MAP_BETA, MAP_GA = (1, 34), (1, 36)  # MutatingAdmissionPolicy: v1beta1 (gate off by default), v1


@rule("hints-admission", codes=("MIGC191", "MIGC192", "MIGC193"), when=needs_fleet)
def check_hints(ctx: Context) -> None:
    """``rewriteGpuRequests``: a MutatingAdmissionPolicy its clusters serve, and a profile to rewrite to."""
    assert ctx.fleet is not None
    versions = {str(c["name"]): str(c.get("kubernetesVersion", "1.31")) for c in ctx.fleet.spec["clusters"]}
    for t in ctx.tenants:
        if not t.spec.get("rewriteGpuRequests"):
            continue
        where = ("spec", "rewriteGpuRequests")
        used = sorted(
            {
                str(w.spec.get("cluster", ctx.clusters[0]))
                for w in ctx.workloads
                if w.spec.get("tenant") == t.name
            }
        ) or sorted(versions)
        old = [c for c in used if c in versions and _minor(versions[c]) < MAP_BETA]
        beta = [c for c in used if c in versions and MAP_BETA <= _minor(versions[c]) < MAP_GA]
        if old:
            ctx.add(
                t.doc.at(
                    "MIGC191",
                    f"tenant '{t.name}': clusters {', '.join(old)} run Kubernetes older "
                    "than 1.34, which serves no MutatingAdmissionPolicy migc renders",
                    where,
                )
            )
        if beta:
            ctx.add(
                t.doc.at(
                    "MIGC192",
                    f"tenant '{t.name}': on clusters {', '.join(beta)} (1.34-1.35) the "
                    "MutatingAdmissionPolicy is v1beta1, off unless its feature gate and API are enabled",
                    where,
                )
            )
        quota = {
            **t.spec.get("guaranteed", {}).get("profiles", {}),
            **t.spec.get("burst", {}).get("profiles", {}),
        }
        if not any(int(v) > 0 for v in quota.values()):
            ctx.add(
                t.doc.at(
                    "MIGC193",
                    f"tenant '{t.name}': rewriteGpuRequests, but its quota names no MIG "
                    "profile to rewrite nvidia.com/gpu to",
                    where,
                )
            )
