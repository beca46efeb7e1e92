"""Hand-made policies and solutions for the render and plan tests (no solver involved).

Kept apart from the solver so render/plan tests pin exact layouts and stay fast.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from compiler.model import (
    Cluster,
    GpuLayout,
    MaintenanceWindow,
    Need,
    NodeLayout,
    NodePool,
    PartitionPolicy,
    Policy,
    Quota,
    Sharing,
    Span,
    Tenant,
    Workload,
)
from compiler.solve.result import NodeResult, PoolResult, ServedDemand, Solution

BALANCED = GpuLayout.of({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1})
SEVEN_SMALL = GpuLayout.of({"1g.10gb": 7})
WHOLE = GpuLayout.whole()


def pools() -> tuple[NodePool, ...]:
    return (
        NodePool(
            name="a100",
            cluster="east",
            gpu_product="NVIDIA-A100-SXM4-80GB",
            gpu_model="A100-SXM4-80GB",
            gpus_per_node=8,
            node_names=("a100-01", "a100-02"),
            max_unavailable=1,
            maintenance_windows=(MaintenanceWindow(("Sat", "Sun"), "02:00", "06:00", "UTC"),),
            price_per_gpu_hour=3.5,
        ),
        NodePool(
            name="h200",
            cluster="east",
            gpu_product="NVIDIA-H200",
            gpu_model="H200-141GB",
            gpus_per_node=8,
            node_names=("h200-0", "h200-1"),
            node_selector=(("node.kubernetes.io/instance-type", "p5e.48xlarge"),),
            node_count=2,
            price_per_gpu_hour=6.0,
        ),
        NodePool(
            name="l40s",
            cluster="east",
            gpu_product="NVIDIA-L40S",
            gpu_model="L40S",
            gpus_per_node=4,
            node_names=("l40s-01",),
            mig=False,
            sharing=Sharing("time-slicing", 4),
            price_per_gpu_hour=1.5,
        ),
    )


def tenants(extra: bool = False) -> tuple[Tenant, ...]:
    out = [
        Tenant(
            "search",
            ("search", "search-dev"),
            "high",
            guaranteed=Quota(profiles=(("1g.10gb", 8),)),
            burst=Quota(profiles=(("1g.10gb", 12), ("2g.20gb", 2))),
            span=Span("tenants.yaml", 4, 9, "$.metadata.name"),
        ),
        Tenant(
            "research",
            ("research",),
            "low",
            guaranteed=Quota(gpus=2),
            burst=Quota(gpus=6),
            create_namespaces=False,
            span=Span("tenants.yaml", 20, 9, "$.metadata.name"),
        ),
    ]
    if extra:
        out.append(
            Tenant(
                "vision",
                ("vision",),
                "high",
                guaranteed=Quota(profiles=(("3g.40gb", 2),)),
                span=Span("tenants.yaml", 40, 9, "$.metadata.name"),
            )
        )
    return tuple(sorted(out, key=lambda t: t.name))


def workloads(extra: bool = False) -> tuple[Workload, ...]:
    out = [
        Workload("bert", "search", 8, Need(profiles=("1g.10gb",)), "hardware", "high", "east", ("a100",)),
        Workload("notebooks", "research", 6, Need(gpus=1), "shared", "low", "east", ("l40s",)),
    ]
    if extra:
        out.append(
            Workload("seg", "vision", 2, Need(profiles=("3g.40gb",)), "hardware", "high", "east", ("a100",))
        )
    return tuple(sorted(out, key=lambda w: w.name))


def policy(extra_tenant: bool = False) -> Policy:
    return Policy(
        clusters=(Cluster("east", pools()),),
        tenants=tenants(extra_tenant),
        workloads=workloads(extra_tenant),
        partition=PartitionPolicy(pricing=(("A100-SXM4-80GB", 3.5),)),
        fleet_name="test",
        source_files=("policy/fleet.yaml",),
    )


def node(name: str, gpus: NodeLayout, current: NodeLayout | None = None) -> NodeResult:
    if current is None:
        changed = tuple(range(len(gpus)))
    else:
        changed = tuple(i for i, (a, b) in enumerate(zip(gpus, current, strict=True)) if a != b)
    return NodeResult(name, gpus, current, changed)


def solution(
    a100: Mapping[str, NodeLayout],
    *,
    h200: NodeLayout | None = None,
    demand: Sequence[ServedDemand] = (),
    current: Mapping[str, NodeLayout] | None = None,
) -> Solution:
    current = current or {}
    h200_layout = h200 or (GpuLayout.of({"7g.141gb": 1}),) * 8
    a100_demand = tuple(d for d in demand if d.resource != "gpu")
    l40_demand = tuple(d for d in demand if d.resource == "gpu")
    return Solution(
        pools=(
            PoolResult(
                "east",
                "a100",
                "A100-SXM4-80GB",
                tuple(node(n, layout, current.get(n)) for n, layout in sorted(a100.items())),
                a100_demand,
                (),
                True,
            ),
            PoolResult(
                "east",
                "h200",
                "H200-141GB",
                (
                    node("h200-0", h200_layout, current.get("h200-0")),
                    node("h200-1", h200_layout, current.get("h200-1")),
                ),
                (),
                (),
                True,
            ),
            PoolResult(
                "east",
                "l40s",
                "L40S",
                (node("l40s-01", (WHOLE,) * 4, current.get("l40s-01")),),
                l40_demand,
                (),
                True,
            ),
        )
    )


def default_solution() -> Solution:
    return solution(
        {"a100-01": (BALANCED,) * 8, "a100-02": (SEVEN_SMALL,) * 6 + (WHOLE,) * 2},
        demand=(
            ServedDemand("search", "bert", "1g.10gb", 8, 8, "high"),
            ServedDemand("research", "notebooks", "gpu", 6, 6, "low"),
        ),
    )
