"""What the real consumers of the output accept (MIGC130–MIGC133): Kubernetes quota and admission,
the NVIDIA device plugin under the GPU Operator. Each rule names the upstream behaviour it encodes;
see docs/ARCHITECTURE.md ("Per-pod limits, enforceable quotas and the GPU Operator")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from compiler.model import WHOLE_GPU
from compiler.validate.context import Context, Obj
from compiler.validate.registry import needs_fleet, rule

UNCOUNTABLE = ("gpuMemoryGB", "computeSlices")
ADMISSION_POLICY_MIN = (1, 30)  # admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is GA in 1.30


def _in_order(ctx: Context) -> list[Obj]:
    return sorted(ctx.tenants, key=lambda t: (t.doc.file, t.doc.index))


@rule("quota-countable", codes=("MIGC130", "MIGC131"))
def check_countable_limits(ctx: Context) -> None:
    """MIGC130: a burst in GB or slices; MIGC131: only GB/slices, so nothing would limit the tenant.

    A ResourceQuota counts extended resources by name (``requests.nvidia.com/mig-1g.10gb``) and the
    device plugin advertises no GPU-memory or compute-slice resource, so neither Kubernetes nor an
    admission policy (which sees one pod, not the namespace's total) can hold a tenant to N GB. A
    guaranteed amount in GB or slices stays valid: it is capacity the layout must provide (MIGC252/253).
    """
    for t in _in_order(ctx):
        guaranteed = t.spec.get("guaranteed", {})
        burst = t.spec.get("burst", {})
        for key in UNCOUNTABLE:
            if burst.get(key):
                ctx.add(
                    t.doc.at(
                        "MIGC130",
                        f"tenant '{t.name}': burst {key} {burst[key]} cannot be enforced: Kubernetes counts "
                        "GPU resources by name (nvidia.com/mig-<profile>, nvidia.com/gpu), not by memory or "
                        "slices; write the burst as profiles or gpus",
                        ("spec", "burst", key),
                    )
                )
        if any(q.get("profiles") or q.get("gpus") for q in (guaranteed, burst)):
            continue
        for key in UNCOUNTABLE:
            if guaranteed.get(key):
                ctx.add(
                    t.doc.at(
                        "MIGC131",
                        f"tenant '{t.name}' has only a {key} guarantee, which no quota can enforce: its "
                        "namespaces would get no GPU limit at all; add profiles or gpus "
                        "(guaranteed or burst)",
                        ("spec", "guaranteed", key),
                    )
                )


@rule("cluster-mps-beside-mig", codes=("MIGC132",), when=needs_fleet)
def check_mps_beside_mig(ctx: Context) -> None:
    """MIGC132: MPS beside MIG in one cluster.

    The GPU Operator gives the device plugin one ``MIG_STRATEGY`` for the whole cluster (ClusterPolicy
    ``mig.strategy``; environment beats the per-node config file), MIG pools need ``mixed``, and the
    plugin refuses to start MPS sharing under ``mixed``: NVIDIA/k8s-device-plugin
    ``cmd/nvidia-device-plugin/main.go`` validateFlags, "using --mig-strategy=mixed is not supported
    with MPS". Time-slicing has no such rule and stays allowed beside MIG.
    """
    fleet = ctx.fleet
    assert fleet is not None
    for cluster in fleet.spec["clusters"]:
        cname = str(cluster["name"])
        pools = [p for p in ctx.pool_list if p.cluster == cname]
        mig = sorted({p.name for p in pools if p.mig})
        for pool in pools:
            if pool.sharing_mode == "mps" and not pool.mig and mig:
                ctx.add(
                    fleet.doc.at(
                        "MIGC132",
                        f"cluster {cname}: pool '{pool.name}' shares GPUs with MPS, but MIG pools "
                        f"({', '.join(mig)}) need the device plugin's mixed MIG strategy, which the "
                        "GPU Operator sets for the whole cluster and under which the plugin refuses MPS",
                        (*pool.path, "sharing", "mode"),
                    )
                )


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@rule("cluster-admission-policy-api", codes=("MIGC133",), when=needs_fleet)
def check_kubernetes_version(ctx: Context) -> None:
    """MIGC133: a Kubernetes without ValidatingAdmissionPolicy v1, which the per-pod GPU limits use."""
    fleet = ctx.fleet
    assert fleet is not None
    for ci, cluster in enumerate(fleet.spec["clusters"]):
        version = cluster.get("kubernetesVersion")
        if version is not None and _minor(str(version)) < ADMISSION_POLICY_MIN:
            ctx.add(
                fleet.doc.at(
                    "MIGC133",
                    f"cluster {cluster['name']}: Kubernetes {version} has no ValidatingAdmissionPolicy v1 "
                    f"(GA in {ADMISSION_POLICY_MIN[0]}.{ADMISSION_POLICY_MIN[1]}), which migc renders for "
                    "per-pod GPU limits",
                    ("spec", "clusters", ci, "kubernetesVersion"),
                )
            )


def hard_limit_field(spec: dict[str, object], resource: str) -> tuple[str, ...] | None:
    """Where the tenant's hard limit for a countable resource is written (burst beats guaranteed).

    ``resource`` is a profile name or ``"gpu"``; mirrors ``compiler.render.quota.hard_limits``.
    """
    for key in ("burst", "guaranteed"):
        quota = spec.get(key)
        if not isinstance(quota, dict):
            continue
        if resource == WHOLE_GPU:
            if quota.get("gpus"):
                return ("spec", key, "gpus")
        elif resource in (quota.get("profiles") or {}):
            return ("spec", key, "profiles", resource)
    return None


def _limit_at(spec: dict[str, Any], path: tuple[str, ...]) -> int:
    value: Any = spec
    for part in path[1:]:
        value = value[part]
    return int(value)


def _exact_demand(need: dict[str, Any]) -> tuple[str, int] | None:
    """(resource, instances per replica) of a need whose resource is known before solving."""
    if "profile" in need:
        return str(need["profile"]), 1
    if "profiles" in need and len(need["profiles"]) == 1:
        return str(need["profiles"][0]), 1
    if "gpus" in need:
        return WHOLE_GPU, int(need["gpus"])
    return None


@dataclass(frozen=True)
class Asked:
    """Instances of one resource a workload asks for, and the namespace its pods run in (if known)."""

    workload: str
    where: str  # file:line of the workload, or ""
    count: int
    namespace: str | None  # target.namespace, else the tenant's only namespace, else unknown


def demand_verdict(
    tenant: str,
    cluster: str,
    resource: str,
    limit: int,
    field: str,
    namespaces: Sequence[str],
    rows: Sequence[Asked],
) -> tuple[str, str] | None:
    """(code, message) when a tenant's demand for a resource does not fit its per-namespace quota.

    The ResourceQuota is per namespace, each of the tenant's namespaces with the full ``limit``
    (``compiler.render.quota``). Demand whose namespace is known must fit its namespace; demand
    whose namespace is not (a workload without ``target`` of a tenant with several namespaces) must
    fit what is left over all of them, else pods are certainly refused (MIGC134, an error). When it
    fits only split over several namespaces, MIGC135 warns: it depends on where the pods go (and
    Kueue's ClusterQueue, with ``--with kueue``, counts the tenant's total against the limit).
    """
    name = "nvidia.com/gpu" if resource == WHOLE_GPU else f"nvidia.com/mig-{resource}"
    where = f"cluster {cluster}: " if cluster else ""
    known: dict[str, int] = {ns: 0 for ns in namespaces}
    for r in rows:
        if r.namespace is not None:
            known[r.namespace] = known.get(r.namespace, 0) + r.count
    unknown = sum(r.count for r in rows if r.namespace is None)
    total = sum(r.count for r in rows)
    who = ", ".join(f"{r.workload} {r.count}" + (f" ({r.where})" if r.where else "") for r in rows)
    over = sorted(ns for ns, c in known.items() if c > limit)
    rooms = [max(0, limit - c) for c in known.values()]
    if over:
        ns = over[0]
        return "MIGC134", (
            f"{where}tenant '{tenant}': its workloads in namespace {ns} ask for {known[ns]} {name} "
            f"({who}), but its quota admits {limit} per namespace ({field}), so the ResourceQuota "
            f"would refuse pods asking for {known[ns] - limit} of them; raise the burst to at least "
            f"{known[ns]} or lower the replicas"
        )
    if unknown > sum(rooms):
        spread = f" over its {len(known)} namespaces" if len(known) > 1 else ""
        return "MIGC134", (
            f"{where}tenant '{tenant}': its workloads ask for {total} {name} ({who}), but its quota "
            f"admits {limit} per namespace ({field}), {limit * len(known)}{spread}, so the ResourceQuota "
            f"would refuse pods asking for {total - limit * len(known)} of them; raise the burst to at "
            f"least {total} or lower the replicas"
        )
    if unknown > max(rooms, default=0):
        return "MIGC135", (
            f"{where}tenant '{tenant}': its workloads ask for {total} {name} ({who}), more than the "
            f"{limit} its quota admits in one namespace ({field}): they are admitted only if their pods "
            f"are spread over its namespaces ({', '.join(known)}); raise the burst to at least {total} "
            "to admit them in any one"
        )
    return None


@rule("quota-covers-demand", codes=("MIGC134", "MIGC135"))
def check_demand_within_quota(ctx: Context) -> None:
    """MIGC134/135: a tenant's workloads ask for more of a resource than its ResourceQuota admits.

    The rendered ResourceQuota's ``hard`` is the burst (else the guarantee) of each named resource
    (``compiler.render.quota.hard_limits``); pods past it are refused by the API server's quota
    admission, so a plan that provisions them would promise what the cluster refuses. Checked here for
    needs whose resource is known before solving (one profile, whole GPUs); ``migc compile`` checks the
    resources the solver picks (preference lists, GPU memory) after solving, under the same codes.
    A tenant's quota is rendered into each cluster it runs in, so demand is summed per cluster.
    """
    if ctx.incomplete:
        return
    tenants = {t.name: t for t in ctx.tenants}
    one_cluster = ctx.clusters[0] if len(ctx.clusters) == 1 else None
    asked: dict[tuple[str, str, str], list[Asked]] = {}
    for w in sorted(ctx.workloads, key=lambda w: (w.doc.file, w.doc.index)):
        exact = _exact_demand(w.spec["need"])
        cluster = w.spec.get("cluster", one_cluster)
        tenant = tenants.get(str(w.spec["tenant"]))
        if exact is None or cluster is None or tenant is None:
            continue
        resource, per_replica = exact
        count = int(w.spec["replicas"]) * per_replica
        if count:
            namespaces = [str(n) for n in tenant.spec["namespaces"]]
            target = w.spec.get("target") or {}
            ns = target.get("namespace") or (namespaces[0] if len(namespaces) == 1 else None)
            asked.setdefault((tenant.name, str(cluster), resource), []).append(
                Asked(w.name, w.where(), count, None if ns is None else str(ns))
            )
    for (tenant_name, cluster, resource), rows in sorted(asked.items()):
        tenant = tenants[tenant_name]
        path = hard_limit_field(tenant.spec, resource)
        if path is None:
            continue  # no limit at all: MIGC310 (compile) says so
        verdict = demand_verdict(
            tenant_name,
            cluster if len(ctx.clusters) > 1 else "",
            resource,
            _limit_at(tenant.spec, path),
            ".".join(path[1:3]),
            [str(n) for n in tenant.spec["namespaces"]],
            rows,
        )
        if verdict is not None:
            ctx.add(tenant.doc.at(verdict[0], verdict[1], path))
