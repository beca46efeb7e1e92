"""compiler/render/hami.py: HAMi's device-plugin nodeconfig, the HamiPlan, quotas on HAMi's
resource names (HAMi v2.10.0), and the two HAMi diagnostics."""

from __future__ import annotations

import json
from dataclasses import replace

from test_render_support import policy, pools

from compiler.model import (
    Cluster,
    HamiNeed,
    HamiSettings,
    Need,
    NodePool,
    Policy,
    Quota,
    Sharing,
    Span,
    Workload,
)
from compiler.render.hami import (
    MIG_MODE_NODE_LABELS,
    NODE_LABELS,
    device_plugin_config,
    hami_diagnostics,
    hami_objects,
    hami_quota_hard,
    node_labels,
    plan_document,
)
from compiler.solve.result import HamiGpu, HamiPoolResult, HamiShare, ServedDemand, Solution

SETTINGS = HamiSettings(split_count=4, memory_scaling=1.5, core_scaling=1.0, node_policy="spread")
T4 = NodePool(
    "t4",
    "east",
    "Tesla-T4",
    "Tesla-T4",
    1,
    ("t4-b", "t4-a"),
    mig=False,
    sharing=Sharing("hami", 1, SETTINGS),
    span=Span("fleet.yaml", 30, 7, "$.spec.nodePools[3]"),
)


def _policy(vgpus: int = 0, memory_mib: int = 0) -> Policy:
    """The test policy with a HAMi pool, a HAMi workload of search, and search's HAMi guarantee."""
    base = policy()
    infer = Workload("infer", "search", 3, Need(hami=HamiNeed(memory_mib=2048)), "shared", "high", "east")
    tenants = tuple(
        replace(t, guaranteed=replace(t.guaranteed, hami_vgpus=vgpus, hami_memory_mib=memory_mib))
        if t.name == "search"
        else t
        for t in base.tenants
    )
    return replace(
        base,
        clusters=(Cluster("east", (*pools(), T4)),),
        tenants=tenants,
        workloads=(*base.workloads, infer),
    )


def _solution() -> Solution:
    gpu = HamiGpu(
        "t4-a", 0, memory_mib=24576, cores=100, slots=4, shares=(HamiShare("search", "infer", 2, 2048, 0),)
    )
    result = HamiPoolResult(
        "east", "t4", "Tesla-T4", (gpu,), (ServedDemand("search", "infer", "vgpu", 3, 2, "high"),), True
    )
    return Solution(pools=(), hami=(result,))


def test_nodeconfig_has_one_entry_per_node_sorted_with_the_pools_settings() -> None:
    config = device_plugin_config(Cluster("east", (*pools(), T4)))
    assert [e["name"] for e in config["nodeconfig"]] == ["t4-a", "t4-b"]  # MIG pools are not HAMi's
    entry = config["nodeconfig"][0]
    assert (entry["devicesplitcount"], entry["devicememoryscaling"], entry["devicecorescaling"]) == (
        4,
        1.5,
        1.0,
    )
    assert entry["operatingmode"] == "hami-core" and entry["migstrategy"] == "none"


def test_node_labels_keep_the_mig_manager_off_only_in_mig_mode() -> None:
    assert node_labels(T4) == NODE_LABELS == {"gpu": "on", "nvidia.com/gpu.deploy.device-plugin": "false"}
    mig = replace(T4, sharing=Sharing("hami", 1, replace(SETTINGS, operating_mode="mig")))
    assert node_labels(mig) == MIG_MODE_NODE_LABELS
    assert MIG_MODE_NODE_LABELS["nvidia.com/gpu.deploy.mig-manager"] == "false"


def test_plan_lists_pools_and_what_each_hami_workload_requests_and_gets() -> None:
    pol = _policy()
    doc = plan_document(pol, pol.clusters[0], _solution())
    (pool,) = doc["pools"]
    assert pool["nodes"] == ["t4-b", "t4-a"] and pool["podAnnotations"] == {
        "hami.io/gpu-scheduler-policy": "spread",
        "hami.io/node-scheduler-policy": "spread",
    }
    assert doc["workloads"] == [
        {
            "name": "infer",
            "tenant": "search",
            "replicas": 3,
            "served": 2,
            "pools": ["t4"],
            "resources": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "2048"},
            "priorityClassName": "migc-high",
        }
    ]


def test_quota_on_hamis_names_takes_the_burst_where_set() -> None:
    pol = _policy(vgpus=2, memory_mib=4096)
    pol = replace(
        pol,
        tenants=tuple(
            replace(t, burst=replace(t.burst, hami_vgpus=5)) if t.name == "search" else t for t in pol.tenants
        ),
    )
    assert hami_quota_hard(pol, "search") == {
        "limits.nvidia.com/gpumem": "4096",
        "requests.nvidia.com/gpu": "5",
    }
    assert hami_quota_hard(pol, "research") == {}
    objs = dict(hami_objects(pol, pol.clusters[0], _solution()))
    assert sorted(objs) == [
        "hami/configmap-hami-device-plugin.yaml",
        "migc-system/configmap-migc-hami.yaml",
        "tenants/search/search-dev/resourcequota-migc-hami.yaml",
        "tenants/search/search/resourcequota-migc-hami.yaml",
    ]
    plan = json.loads(objs["migc-system/configmap-migc-hami.yaml"]["data"]["plan.json"])
    assert plan == plan_document(pol, pol.clusters[0], _solution())


def test_a_cluster_without_hami_gets_nothing() -> None:
    pol = policy()
    assert hami_objects(pol, pol.clusters[0], Solution(pools=())) == []


def test_selector_pools_and_mixed_gpu_quotas_are_diagnosed_at_their_source() -> None:
    selector = replace(T4, node_selector=(("pool", "t4"),), node_count=2)
    pol = replace(_policy(vgpus=1), clusters=(Cluster("east", (*pools(), selector)),))
    pol = replace(
        pol,
        tenants=tuple(
            replace(t, guaranteed=Quota(gpus=1, hami_vgpus=1)) if t.name == "search" else t
            for t in pol.tenants
        ),
    )
    by_code = {d.code: d for d in hami_diagnostics(pol)}
    assert sorted(by_code) == ["MIGC315", "MIGC316"]
    assert (by_code["MIGC315"].file, by_code["MIGC315"].line) == ("fleet.yaml", 30)
    assert "tenant search" in by_code["MIGC316"].message and by_code["MIGC316"].line == 4  # tenants.yaml:4
    assert hami_diagnostics(policy()) == []
