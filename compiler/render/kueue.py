"""Optional Kueue objects (``migc compile --with kueue``), API ``kueue.x-k8s.io/v1beta2`` (Kueue ≥ 0.15).

* one ResourceFlavor per GPU resource (``nvidia.com/mig-<profile>`` or ``nvidia.com/gpu``). The
  extended resource already steers pods onto nodes that offer it, so flavors carry no node labels;
  a flavor per GPU *model* would force splitting a tenant's model-agnostic quota between models,
  which the policy does not say how to do;
* one ClusterQueue per tenant, all in one Cohort per cluster, ``nominalQuota`` = guaranteed and
  ``borrowingLimit`` = hard limit − guaranteed (hard = burst where set, see ``compiler.render.quota``),
  admitting the tenant's namespaces; each resource is its own resource group so every flavor lists
  exactly the resource it covers;
* cpu and memory: Kueue admits a workload only if the ClusterQueue covers every resource its pods
  request (``resource cpu unavailable in ClusterQueue``), and migc only budgets GPUs. Every
  ClusterQueue therefore also covers ``cpu`` and ``memory`` with one flavor (``migc-cpu-memory``) and a
  nominal quota no cluster reaches (:data:`CPU_MEMORY_QUOTA`), so they never block admission. Other
  resources pods may request (``ephemeral-storage``, ``hugepages-*``) are for Kueue's Configuration
  ``resources.excludeResourcePrefixes`` (docs/DEPLOYING.md);
* one LocalQueue named ``migc`` in each tenant namespace.

Kueue's webhook (``pkg/webhooks/clusterqueue_webhook.go``) wants each flavor in one resource group
only, resource names in each flavor in the order of ``coveredResources``, and borrowing only with a
cohort; tests/test_render_kueue.py checks the objects against the vendored CRDs and those rules.
"""

from __future__ import annotations

from typing import Any

from compiler.model import Cluster, Policy
from compiler.render.manifests import Obj, metadata
from compiler.render.quota import hard_limits, quota_counts, resource_name, tenants_in

KUEUE_API = "kueue.x-k8s.io/v1beta2"
LOCAL_QUEUE = "migc"
CPU_MEMORY_FLAVOR = "migc-cpu-memory"
# "Unlimited": far above any cluster, yet small enough that Kueue's int64 sums over a cohort of
# thousands of ClusterQueues (cpu in millicores, memory in bytes) cannot overflow.
CPU_MEMORY_QUOTA = {"cpu": "100k", "memory": "1Pi"}


def flavor_name(resource: str) -> str:
    return resource.removeprefix("nvidia.com/").replace("/", "-")


def kueue_objects(policy: Policy, cluster: Cluster) -> list[tuple[str, Obj]]:
    out: list[tuple[str, Obj]] = []
    cohort = f"migc-{cluster.name}"
    flavors: set[str] = set()
    for tenant in tenants_in(policy, cluster.name):
        hard = hard_limits(tenant)
        if not hard:
            continue
        guaranteed = quota_counts(tenant.guaranteed)
        groups: list[dict[str, Any]] = []
        for resource, limit in sorted(hard.items(), key=lambda kv: resource_name(kv[0])):
            rname = resource_name(resource)
            flavor = flavor_name(rname)
            flavors.add(flavor)
            nominal = min(guaranteed.get(resource, 0), limit)
            groups.append(
                {
                    "coveredResources": [rname],
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [
                                {
                                    "name": rname,
                                    "nominalQuota": nominal,
                                    "borrowingLimit": max(0, limit - nominal),
                                }
                            ],
                        }
                    ],
                }
            )
        groups.append(
            {
                "coveredResources": sorted(CPU_MEMORY_QUOTA),
                "flavors": [
                    {
                        "name": CPU_MEMORY_FLAVOR,
                        "resources": [
                            {"name": name, "nominalQuota": quota}
                            for name, quota in sorted(CPU_MEMORY_QUOTA.items())
                        ],
                    }
                ],
            }
        )
        flavors.add(CPU_MEMORY_FLAVOR)
        queue = f"migc-{tenant.name}"
        cq: Obj = {
            "apiVersion": KUEUE_API,
            "kind": "ClusterQueue",
            "metadata": metadata(queue, extra_labels={"migc.dev/tenant": tenant.name}),
            "spec": {
                "cohortName": cohort,
                "namespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "In",
                            "values": sorted(tenant.namespaces),
                        }
                    ]
                },
                "queueingStrategy": "BestEffortFIFO",
                "preemption": {
                    "reclaimWithinCohort": "Any",
                    "withinClusterQueue": "LowerPriority",
                },
                "resourceGroups": groups,
            },
        }
        out.append((f"tenants/{tenant.name}/clusterqueue-{queue}.yaml", cq))
        for ns in sorted(tenant.namespaces):
            lq: Obj = {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": metadata(LOCAL_QUEUE, ns, extra_labels={"migc.dev/tenant": tenant.name}),
                "spec": {"clusterQueue": queue},
            }
            out.append((f"tenants/{tenant.name}/{ns}/localqueue-{LOCAL_QUEUE}.yaml", lq))
    for flavor in sorted(flavors):
        rf: Obj = {
            "apiVersion": KUEUE_API,
            "kind": "ResourceFlavor",
            "metadata": metadata(flavor),
            "spec": {},
        }
        out.append((f"kueue/resourceflavor-{flavor}.yaml", rf))
    return out
