"""Tenant quotas: which clusters a tenant lands in, its hard limits, and whether guarantees fit.

Hard limits. A ResourceQuota has one ``hard`` value per resource, while the policy has two
(guaranteed and burst). We render ``hard = burst`` where the tenant sets a burst for that resource
and ``hard = guaranteed`` otherwise: the quota is the ceiling a tenant may reach when others are
idle; the guarantee is what the *capacity* must cover (checked here, MIGC250-MIGC253) and what
Kueue's ``nominalQuota`` expresses when ``--with kueue`` is used. ResourceQuota cannot span
namespaces, so every namespace of a tenant gets the tenant's full hard limit; only Kueue's
ClusterQueue enforces the tenant-wide total.

Clusters. Tenants are fleet-wide. A tenant's objects are rendered into every cluster one of its
workloads targets; a tenant without workloads is rendered into every cluster (its quota is the
only thing that lets it run anything). A guarantee is a fleet-wide amount that any of the tenant's
clusters may honour, so the feasibility check spreads it over them (a max flow per resource).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compiler.catalog import Catalog
from compiler.diagnostics import Diagnostic, make
from compiler.model import WHOLE_GPU, Cluster, Policy, Quota, Tenant
from compiler.solve.result import Solution, tally_by_object
from compiler.validate.rules.consumers import Asked, demand_verdict


def tenant_clusters(policy: Policy) -> dict[str, tuple[str, ...]]:
    """tenant → the clusters its objects are rendered into (sorted)."""
    all_clusters = tuple(sorted(c.name for c in policy.clusters))
    used: dict[str, set[str]] = {}
    for w in policy.workloads:  # one pass: 500 tenants x 1,500 workloads was 0.3 s per call
        used.setdefault(w.tenant, set()).add(w.cluster)
    out: dict[str, tuple[str, ...]] = {}
    for tenant in policy.tenants:
        mine = used.get(tenant.name)
        out[tenant.name] = tuple(sorted(mine)) if mine else all_clusters
    return out


def tenants_in(policy: Policy, cluster: str) -> tuple[Tenant, ...]:
    placement = tenant_clusters(policy)
    return tuple(sorted((t for t in policy.tenants if cluster in placement[t.name]), key=lambda t: t.name))


def quota_counts(quota: Quota) -> dict[str, int]:
    """Countable resources of a quota: profile names and ``"gpu"`` (whole GPUs)."""
    out = dict(quota.profiles)
    if quota.gpus:
        out[WHOLE_GPU] = quota.gpus
    return out


def hard_limits(tenant: Tenant) -> dict[str, int]:
    """Per countable resource: burst where set, else guaranteed (see the module docstring)."""
    hard = quota_counts(tenant.guaranteed)
    hard.update(quota_counts(tenant.burst))
    return dict(sorted(hard.items()))


def resource_name(resource: str) -> str:
    """Extended resource of a quota key: ``nvidia.com/mig-1g.10gb.me`` or ``nvidia.com/gpu``."""
    if resource == WHOLE_GPU:
        return "nvidia.com/gpu"
    return "nvidia.com/mig-" + resource.replace("+", ".")


def reserved_gpus(cluster: Cluster, pool_name: str) -> int:
    for pool in cluster.pools:
        if pool.name == pool_name:
            return pool.reserve_whole_gpus + pool.reserve_whole_nodes * pool.gpus_per_node
    return 0


def cluster_capacity(
    policy: Policy, solution: Solution, catalog: Catalog, cluster: Cluster, *, dynamic_room: bool = False
) -> dict[str, float]:
    """What tenants can be given in a cluster: instances per profile, whole GPUs, memory GB, compute slices.

    Reserved whole GPUs are not capacity (they are kept out of demand). A whole GPU of a
    time-sliced or MPS pool counts once per replica: that is how many ``nvidia.com/gpu`` the device
    plugin advertises and therefore what a ResourceQuota on ``requests.nvidia.com/gpu`` counts.
    ``dynamic_room``: a DynamicMIG pool (no layout; the DRA driver carves per claim) counts, per
    profile, the most instances its GPUs could hold of that profile alone, instead of the solver's
    carve-up; that is what a burst limit can reach there.
    """
    out: dict[str, float] = {}
    pools = {p.name: p for p in cluster.pools}
    for result in solution.pools:
        if result.cluster != cluster.name or result.pool not in pools:
            continue
        pool = pools[result.pool]
        model = catalog.get(result.gpu_model)
        if dynamic_room and pool.dra_dynamic and model is not None:
            for each in model.profiles:
                out[each.name] = out.get(each.name, 0) + each.max_count * pool.total_gpus
            out[WHOLE_GPU] = out.get(WHOLE_GPU, 0) + pool.total_gpus
            continue
        whole = 0
        for gpu, gpus in tally_by_object(result.nodes):
            if not gpu.mig_enabled:
                whole += gpus
                continue
            for name, count in gpu.profiles:
                out[name] = out.get(name, 0) + count * gpus
                prof = model.profile(name) if model is not None else None
                if prof is not None:
                    # the catalog's memory sizes are whole GB: these float sums are exact in any order
                    out["memoryGB"] = out.get("memoryGB", 0) + prof.memory_gb * count * gpus
                    out["computeSlices"] = out.get("computeSlices", 0) + prof.compute_slices * count * gpus
        whole = max(0, whole - reserved_gpus(cluster, pool.name))
        out[WHOLE_GPU] = out.get(WHOLE_GPU, 0) + whole * pool.shares_per_gpu
        if model is not None:
            out["memoryGB"] = out.get("memoryGB", 0) + whole * model.memory_gb
            out["computeSlices"] = out.get("computeSlices", 0) + whole * model.compute_slices
    return dict(sorted(out.items()))


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _tenant_diag(code: str, message: str, tenant: Tenant, field_path: str) -> Diagnostic:
    # The span points at the tenant's name; one Tenant per document, so the field path is absolute.
    span = tenant.span
    return make(code, message, file=span.file, line=span.line, col=span.col, path=f"$.{field_path}")


def _amounts(quota: Quota) -> dict[str, float]:
    out: dict[str, float] = {k: float(v) for k, v in quota_counts(quota).items()}
    if quota.gpu_memory_gb:
        out["memoryGB"] = float(quota.gpu_memory_gb)
    if quota.compute_slices:
        out["computeSlices"] = float(quota.compute_slices)
    return out


_CODE = {WHOLE_GPU: "MIGC251", "memoryGB": "MIGC252", "computeSlices": "MIGC253"}
_FIELD = {
    WHOLE_GPU: "spec.guaranteed.gpus",
    "memoryGB": "spec.guaranteed.gpuMemoryGB",
    "computeSlices": "spec.guaranteed.computeSlices",
}
_WHAT = {WHOLE_GPU: "whole GPUs", "memoryGB": "GB of GPU memory", "computeSlices": "compute slices"}


def _describe(resource: str) -> str:
    return _WHAT.get(resource, f"{resource} instances")


_BURST_FIELD = {
    WHOLE_GPU: "spec.burst.gpus",
    "memoryGB": "spec.burst.gpuMemoryGB",
    "computeSlices": "spec.burst.computeSlices",
}
_SCALE = 1000  # fixed-point for the flow: GPU memory guarantees may be fractional GB


def _servable(
    holders: list[tuple[Tenant, float]],
    placement: Mapping[str, tuple[str, ...]],
    capacity: Mapping[str, float],
) -> float:
    """Most of the holders' guarantees the clusters can cover, each tenant only from its own clusters.

    A max flow source → tenant (its guarantee) → its clusters → sink (the cluster's capacity): the
    guarantees fit exactly when the flow saturates every tenant edge (Hall's condition).

    Where every holder may use the same clusters (always so with one cluster) the graph is complete
    bipartite and the flow is min(all guarantees, those clusters' capacity), computed without
    building it (networkx alone takes 0.08-0.25 s to import).
    """
    shared = {tuple(placement[t.name]) for t, _ in holders}
    if len(shared) == 1 and len({t.name for t, _ in holders}) == len(holders):
        clusters = [c for c in next(iter(shared)) if c in capacity]
        if not clusters:
            return 0.0
        supply = sum(round(amount * _SCALE) for _, amount in holders)
        return min(supply, sum(round(capacity[c] * _SCALE) for c in dict.fromkeys(clusters))) / _SCALE
    import networkx as nx  # only for guarantees placed on different sets of clusters

    graph: nx.DiGraph[Any] = nx.DiGraph()
    for tenant, amount in holders:
        graph.add_edge("source", ("t", tenant.name), capacity=round(amount * _SCALE))
        for cluster in placement[tenant.name]:
            graph.add_edge(("t", tenant.name), ("c", cluster), capacity=round(amount * _SCALE))
    for cluster, have in capacity.items():
        if graph.has_node(("c", cluster)):
            graph.add_edge(("c", cluster), "sink", capacity=round(have * _SCALE))
    if not graph.has_node("sink"):
        return 0.0
    value: float = nx.maximum_flow_value(graph, "source", "sink")
    return value / _SCALE


NAMES_SHOWN = 10  # longer lists of tenants are summarised ("… and 490 more"), as MIGC200 and MIGC110 do


def _name_list(names: Sequence[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown if len(names) <= NAMES_SHOWN else f"{shown} … and {len(names) - NAMES_SHOWN} more"


def _where(clusters: Sequence[str]) -> str:
    return f"cluster {clusters[0]}" if len(clusters) == 1 else f"clusters {', '.join(clusters)}"


def check_quotas(policy: Policy, solution: Solution, catalog: Catalog) -> list[Diagnostic]:
    """MIGC250-253: guarantees the solved layout cannot honour; MIGC255: burst limits it can never reach.

    A tenant's guarantee may be served by any cluster its objects are rendered into (see
    :func:`tenant_clusters`), so the check is a small flow problem per resource, not a per-cluster sum.
    """
    diagnostics: list[Diagnostic] = []
    placement = tenant_clusters(policy)
    capacities = {
        c.name: cluster_capacity(policy, solution, catalog, c)
        for c in sorted(policy.clusters, key=lambda c: c.name)
    }
    guaranteed: dict[str, list[tuple[Tenant, float]]] = {}
    for tenant in sorted(policy.tenants, key=lambda t: t.name):
        for resource, amount in _amounts(tenant.guaranteed).items():
            guaranteed.setdefault(resource, []).append((tenant, amount))
    for resource in sorted(guaranteed):
        holders = guaranteed[resource]
        total = sum(a for _, a in holders)
        per_cluster = {name: cap.get(resource, 0.0) for name, cap in capacities.items()}
        servable = _servable(holders, placement, per_cluster)
        if total <= servable + 1e-6:
            continue
        clusters = sorted({c for t, _ in holders for c in placement[t.name]})
        have = sum(per_cluster[c] for c in clusters)
        where = _where(clusters)
        # largest guarantees first: the tenants whose guarantee a fix is most likely to lower
        ranked = sorted(holders, key=lambda h: (-h[1], h[0].name))
        who = _name_list([f"{t.name} {_fmt(a)}" for t, a in ranked])
        count = f"{len(holders)} " if len(holders) > NAMES_SHOWN else ""
        diagnostics.append(
            _tenant_diag(
                _CODE.get(resource, "MIGC250"),
                f"{where}: {count}tenants are guaranteed {_fmt(total)} {_describe(resource)} ({who}) "
                "but the solved "
                f"layout provides {_fmt(have)} and can honour {_fmt(servable)} of them: "
                f"short by {_fmt(total - servable)}",
                holders[0][0],
                _FIELD.get(resource, f"spec.guaranteed.profiles.{resource}"),
            )
        )
    room = {
        c.name: cluster_capacity(policy, solution, catalog, c, dynamic_room=True)
        for c in sorted(policy.clusters, key=lambda c: c.name)
    }
    diagnostics.extend(_unreachable_bursts(policy, placement, room))
    diagnostics.extend(check_unlimited(policy, solution))
    diagnostics.extend(check_demand_within_quota(policy, solution))
    return diagnostics


def _unreachable_bursts(
    policy: Policy, placement: Mapping[str, tuple[str, ...]], capacities: Mapping[str, Mapping[str, float]]
) -> list[Diagnostic]:
    """MIGC255 per tenant whose burst limit exceeds what its clusters provide; where more than
    ``NAMES_SHOWN`` tenants exceed the same provision (clusters, resource), one summary for them."""
    groups: dict[tuple[tuple[str, ...], str, float], list[tuple[Tenant, float]]] = {}
    for tenant in sorted(policy.tenants, key=lambda t: t.name):
        burst = _amounts(tenant.burst)
        clusters = tuple(placement[tenant.name])
        for resource in sorted(burst):
            have = sum(capacities[c].get(resource, 0.0) for c in clusters)
            if burst[resource] > have + 1e-9:
                groups.setdefault((clusters, resource, have), []).append((tenant, burst[resource]))
    out: list[Diagnostic] = []
    for (clusters, resource, have), members in sorted(groups.items()):
        field_path = _BURST_FIELD.get(resource, f"spec.burst.profiles.{resource}")
        what = _describe(resource)
        if len(members) > NAMES_SHOWN:
            ranked = sorted(members, key=lambda m: (-m[1], m[0].name))
            names = _name_list([f"{t.name} {_fmt(b)}" for t, b in ranked])
            message = (
                f"{_where(list(clusters))}: {len(members)} tenants may burst to up to {_fmt(ranked[0][1])} "
                f"{what} ({names}) but the solved layout provides only {_fmt(have)}"
            )
            out.append(_tenant_diag("MIGC255", message, members[0][0], field_path))
            continue
        for tenant, limit in members:
            message = (
                f"{_where(list(clusters))}: tenant {tenant.name} may burst to {_fmt(limit)} {what} "
                f"but the solved layout provides only {_fmt(have)}"
            )
            out.append(_tenant_diag("MIGC255", message, tenant, field_path))
    return out


def check_unlimited(policy: Policy, solution: Solution) -> list[Diagnostic]:
    """MIGC310: a tenant is served a GPU resource its quota does not name, so nothing limits it there.

    A ResourceQuota (and the per-pod admission policy) only constrains the resources it lists; the
    solver may serve a workload's ``gpuMemoryGB`` need, or a preference list, with a profile the
    tenant's quota never mentions.
    """
    served: dict[str, dict[str, set[str]]] = {}
    for result in solution.pools:
        for d in result.demand:
            if d.served > 0:
                served.setdefault(d.tenant, {}).setdefault(d.resource, set()).add(result.cluster)
    out: list[Diagnostic] = []
    for tenant in sorted(policy.tenants, key=lambda t: t.name):
        hard = hard_limits(tenant)
        missing = {r: c for r, c in served.get(tenant.name, {}).items() if r not in hard}
        if not missing:
            continue
        clusters = sorted({c for cs in missing.values() for c in cs})
        names = ", ".join(resource_name(r) for r in sorted(missing))
        out.append(
            _tenant_diag(
                "MIGC310",
                f"{_where(clusters)}: tenant {tenant.name} is served {names}, not named in its quota, so "
                f"no ResourceQuota or per-pod limit covers {'it' if len(missing) == 1 else 'them'}",
                tenant,
                "spec.burst" if tenant.burst != Quota() else "spec.guaranteed",
            )
        )
    return out


def check_demand_within_quota(policy: Policy, solution: Solution) -> list[Diagnostic]:
    """MIGC134/135 after solving: the layout serves a tenant more of a resource than its quota admits.

    ``migc validate`` already checks needs whose resource is known up front (one profile, whole GPUs;
    ``compiler.validate.rules.consumers.demand_verdict``); here the resources the solver picked for
    preference lists and GPU-memory needs count too, so the plan never provisions pods the rendered
    ResourceQuota (``hard_limits``, per namespace, per cluster) refuses.
    """
    served: dict[tuple[str, str, str], dict[str, int]] = {}
    for result in solution.pools:
        for d in result.demand:
            if d.served > 0:
                rows = served.setdefault((d.tenant, result.cluster, d.resource), {})
                rows[d.workload] = rows.get(d.workload, 0) + d.served
    tenants = {t.name: t for t in policy.tenants}
    workloads = {w.name: w for w in policy.workloads}
    several = len(policy.clusters) > 1
    out: list[Diagnostic] = []
    for (tenant_name, cluster, resource), rows in sorted(served.items()):
        tenant = tenants.get(tenant_name)
        limit = None if tenant is None else hard_limits(tenant).get(resource)
        if tenant is None or limit is None or sum(rows.values()) <= limit:
            continue  # no limit at all is MIGC310
        key = "burst" if resource in quota_counts(tenant.burst) else "guaranteed"
        label = f"{key}.gpus" if resource == WHOLE_GPU else f"{key}.profiles"
        asked = []
        for name, count in sorted(rows.items()):
            w = workloads.get(name)
            ns = w.target.namespace if w is not None and w.target is not None else None
            if ns is None and len(tenant.namespaces) == 1:
                ns = tenant.namespaces[0]
            asked.append(Asked(name, "", count, ns))
        verdict = demand_verdict(
            tenant_name, cluster if several else "", resource, limit, label, tenant.namespaces, asked
        )
        if verdict is not None:
            where = f"spec.{label}" if resource == WHOLE_GPU else f"spec.{label}.{resource}"
            out.append(_tenant_diag(verdict[0], verdict[1], tenant, where))
    return out


def per_node_max(cluster: Cluster, catalog: Catalog) -> Mapping[str, int]:
    """Most instances of each resource one node of the cluster could ever offer (per-pod limits)."""
    out: dict[str, int] = {}
    for pool in cluster.pools:
        out[WHOLE_GPU] = max(out.get(WHOLE_GPU, 0), pool.gpus_per_node * pool.shares_per_gpu)
        model = catalog.get(pool.gpu_model)
        if model is None or not pool.mig:
            continue
        for prof in model.profiles:
            out[prof.name] = max(out.get(prof.name, 0), prof.max_count * pool.gpus_per_node)
    return out
