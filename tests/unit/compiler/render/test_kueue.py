"""compiler/render/kueue.py: one ClusterQueue per tenant (guaranteed as nominal quota, the rest of
its hard limit as borrowing), a LocalQueue per namespace, a ResourceFlavor per GPU resource.
tests/test_render_kueue.py checks the same objects against Kueue's CRDs and webhook."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from test_render_support import policy

from compiler.model import Quota, Tenant
from compiler.render.kueue import CPU_MEMORY_FLAVOR, KUEUE_API, flavor_name, kueue_objects


def _objects(*extra: Tenant) -> dict[str, dict[str, Any]]:
    pol = policy()
    pol = replace(pol, tenants=(*pol.tenants, *extra))
    return dict(kueue_objects(pol, pol.clusters[0]))


def _gpu_quotas(cq: dict[str, Any]) -> dict[str, tuple[int, int]]:
    out = {}
    for group in cq["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for res in flavor["resources"]:
                if "borrowingLimit" in res:
                    out[res["name"]] = (res["nominalQuota"], res["borrowingLimit"])
    return out


def test_flavor_names_are_the_resource_without_its_domain() -> None:
    assert flavor_name("nvidia.com/mig-1g.10gb") == "mig-1g.10gb"
    assert flavor_name("nvidia.com/gpu") == "gpu"
    assert flavor_name("example.com/a/b") == "example.com-a-b"


def test_nominal_quota_is_the_guarantee_and_borrowing_the_rest_of_the_burst() -> None:
    objs = _objects()
    search = objs["tenants/search/clusterqueue-migc-search.yaml"]
    # search: guaranteed 8 x 1g.10gb; burst 12 x 1g.10gb and 2 x 2g.20gb
    assert _gpu_quotas(search) == {"nvidia.com/mig-1g.10gb": (8, 4), "nvidia.com/mig-2g.20gb": (0, 2)}
    research = objs["tenants/research/clusterqueue-migc-research.yaml"]
    assert _gpu_quotas(research) == {"nvidia.com/gpu": (2, 4)}  # guaranteed 2 GPUs, burst 6
    assert search["spec"]["cohortName"] == research["spec"]["cohortName"] == "migc-east"
    expr = search["spec"]["namespaceSelector"]["matchExpressions"][0]
    assert expr == {
        "key": "kubernetes.io/metadata.name",
        "operator": "In",
        "values": ["search", "search-dev"],
    }


def test_each_resource_is_its_own_group_and_cpu_memory_never_block() -> None:
    search = _objects()["tenants/search/clusterqueue-migc-search.yaml"]
    covered = [g["coveredResources"] for g in search["spec"]["resourceGroups"]]
    assert covered == [["nvidia.com/mig-1g.10gb"], ["nvidia.com/mig-2g.20gb"], ["cpu", "memory"]]
    last = search["spec"]["resourceGroups"][-1]["flavors"][0]
    assert last["name"] == CPU_MEMORY_FLAVOR
    assert [r["name"] for r in last["resources"]] == ["cpu", "memory"]


def test_local_queues_per_namespace_and_one_flavor_per_resource() -> None:
    objs = _objects()
    local = {p: o for p, o in objs.items() if o["kind"] == "LocalQueue"}
    assert sorted(local) == [
        "tenants/research/research/localqueue-migc.yaml",
        "tenants/search/search-dev/localqueue-migc.yaml",
        "tenants/search/search/localqueue-migc.yaml",
    ]
    assert local["tenants/search/search-dev/localqueue-migc.yaml"]["spec"] == {"clusterQueue": "migc-search"}
    flavors = sorted(o["metadata"]["name"] for o in objs.values() if o["kind"] == "ResourceFlavor")
    assert flavors == ["gpu", "mig-1g.10gb", "mig-2g.20gb", CPU_MEMORY_FLAVOR]
    assert all(o["apiVersion"] == KUEUE_API for o in objs.values())


def test_a_tenant_without_quota_gets_no_queue() -> None:
    idle = Tenant("idle", ("idle",), "low", guaranteed=Quota(), burst=Quota())
    objs = _objects(idle)
    assert not any("/idle/" in p for p in objs)
