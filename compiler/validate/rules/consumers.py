"""What the real consumers of the output accept (MIGC130–MIGC133): Kubernetes quota and admission,
the NVIDIA device plugin under the GPU Operator. Each rule names the upstream behaviour it encodes;
see docs/ARCHITECTURE.md ("Per-pod limits, enforceable quotas and the GPU Operator")."""

from __future__ import annotations

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
