"""The CapacityReport: what each tenant asked for and got in each pool, as rendered.

``migc plan`` diffs a new solution against what is deployed. Layouts can be read back from the
NodeAssignment, but what each workload was *served* by them cannot be recomputed without the
policy that was in force then (re-serving the new demand on the old layout shows the wrong
"before" when demand changed). So the solver's own figures are rendered next to the assignment,
as ConfigMap ``migc-system/migc-capacity`` (key ``capacity.json``, ``schema/capacity.schema.json``).

Only pool-level aggregates per workload and resource are stored, never per-node data, so the size
grows with the number of workloads, not nodes, and stays far below the 1 MiB ConfigMap limit.
The controller does not read it; it is bound to the assignment it describes by
``assignmentRevision`` so a reader can tell when the two no longer belong together.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.model import Cluster
from compiler.render.manifests import API_VERSION, SYSTEM_NAMESPACE, Obj, system_json_configmap
from compiler.solve.result import ServedDemand, Solution

CAPACITY_NAME = "migc-capacity"
CAPACITY_KEY = "capacity.json"
CAPACITY_KIND = "CapacityReport"
CAPACITY_PATH = f"{SYSTEM_NAMESPACE}/configmap-{CAPACITY_NAME}.yaml"


def capacity_document(cluster: Cluster, solution: Solution, assignment_revision: str) -> dict[str, Any]:
    """The CapacityReport of one cluster (``schema/capacity.schema.json``)."""
    pools = []
    dynamic = {p.name for p in cluster.pools if p.dra_dynamic}  # no layout: in no assignment (docs/dra.md)
    mine = (p for p in solution.pools if p.cluster == cluster.name and p.pool not in dynamic)
    for result in sorted(mine, key=lambda p: p.pool):
        pools.append(
            {
                "name": result.pool,
                "gpuModel": result.gpu_model,
                "gpus": sum(len(node.gpus) for node in result.nodes),
                "gpusUsed": result.gpus_used,
                "capacity": result.capacity(),
                "reserved": [
                    {"tenant": tenant, "resource": resource, "instances": n}
                    for tenant, resource, n in sorted(result.reserved)
                ],
                "demand": [d.to_dict() for d in sorted(result.demand, key=_demand_order)],
            }
        )
    return {
        "apiVersion": API_VERSION,
        "kind": CAPACITY_KIND,
        "cluster": cluster.name,
        "assignmentRevision": assignment_revision,
        "pools": pools,
    }


def _demand_order(d: ServedDemand) -> tuple[str, str, str]:
    return (d.tenant, d.workload, d.resource)


def capacity_configmap(doc: Mapping[str, Any]) -> tuple[str, Obj]:
    obj = system_json_configmap(
        CAPACITY_NAME, CAPACITY_KEY, doc, "migc.dev/assignment-revision", str(doc["assignmentRevision"])
    )
    return CAPACITY_PATH, obj
