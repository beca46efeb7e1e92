"""compiler/advise/tree.py: the sharing-mode decision per pool, each step's code, and the costs and
risks of the current mode, on hand-made pools and solver results (no solver run).

The policy is tests/test_render_support.py's: pool ``a100`` (2 x 8 A100-SXM4-80GB, MIG, $3.50/h),
``h200`` (2 x 8, MIG), ``l40s`` (1 x 4 L40S, time-slicing x4); workloads ``bert`` (search, hardware
isolation, 1g.10gb, pinned to a100) and ``notebooks`` (research, shared, tier low, pinned to l40s).
"""

from __future__ import annotations

from dataclasses import replace

from test_render_support import policy

from compiler.advise.tree import SMALL_POOL_GPUS, advise_pool, current_mode
from compiler.catalog import load_catalog
from compiler.model import Need, NodePool, PartitionPolicy, Policy, Sharing, Workload
from compiler.solve.result import PoolResult, ServedDemand

CATALOG = load_catalog()


def _pool(p: Policy, name: str) -> NodePool:
    return next(x for x in p.clusters[0].pools if x.name == name)


def _result(pool: NodePool, *demand: ServedDemand, gpus_used: int = 0) -> PoolResult:
    return PoolResult(pool.cluster, pool.name, pool.gpu_model, (), demand, (), True, gpus_used=gpus_used)


def _codes(p: Policy, pool: NodePool, result: PoolResult) -> list[str]:
    return [f.code for f in advise_pool(p, CATALOG, pool, result).findings]


BERT = ServedDemand("search", "bert", "1g.10gb", 8, 8, "high")


def test_current_mode_names_mig_sharing_and_whole_gpus() -> None:
    p = policy()
    assert current_mode(_pool(p, "a100")) == "mig"
    assert current_mode(_pool(p, "l40s")) == "time-slicing x4"
    assert current_mode(replace(_pool(p, "l40s"), sharing=Sharing())) == "whole-gpu"
    assert current_mode(replace(_pool(p, "l40s"), sharing=Sharing("mps", 2))) == "mps x2"


def test_hardware_isolation_on_a_mig_model_is_mig_with_a_static_layout_for_one_profile() -> None:
    p = policy()
    a100 = _pool(p, "a100")
    advice = advise_pool(p, CATALOG, a100, _result(a100, BERT, gpus_used=2))
    assert (advice.recommended, advice.partition_mode, advice.current) == ("mig", "static", "mig")
    assert [f.code for f in advice.findings] == ["MIGC500", "MIGC507", "MIGC514"]  # no MIGC511: unchanged
    assert "tenant(s) search ask for hardware isolation (1g.10gb)" in advice.findings[0].message
    # 16 GPUs, 2 used: 14 idle at $3.50/h each
    assert advice.findings[2].message == "2 of 16 GPU(s) serve declared demand; 14 idle ($49.00/h)"


def test_two_profiles_on_a_large_pool_pay_for_a_dynamic_layout() -> None:
    p = policy()
    a100 = _pool(p, "a100")
    seg = ServedDemand("search", "bert", "3g.40gb", 2, 2, "high")
    advice = advise_pool(p, CATALOG, a100, _result(a100, BERT, seg, gpus_used=16))
    assert advice.partition_mode == "dynamic"
    assert [f.code for f in advice.findings] == ["MIGC500", "MIGC508"]  # every GPU used: no MIGC514


def test_a_small_pool_stays_static_and_a_dynamic_policy_is_warned_about() -> None:
    p = policy()
    p = replace(p, partition=PartitionPolicy(mode="dynamic", pricing=p.partition.pricing))
    small = replace(_pool(p, "a100"), node_names=("a100-01",), gpus_per_node=SMALL_POOL_GPUS - 1)
    seg = ServedDemand("search", "bert", "3g.40gb", 2, 2, "high")
    advice = advise_pool(p, CATALOG, small, _result(small, BERT, seg, gpus_used=3))
    assert advice.partition_mode == "static"  # two profiles, but under 4 GPUs
    assert [(f.code, f.severity) for f in advice.findings] == [
        ("MIGC500", "note"),
        ("MIGC506", "note"),
        ("MIGC513", "warning"),
    ]


def test_shared_work_is_mps_for_one_tenant_unless_it_is_best_effort() -> None:
    p = policy()
    l40s = _pool(p, "l40s")
    notebooks = ServedDemand("research", "notebooks", "gpu", 6, 6, "low")
    advice = advise_pool(p, CATALOG, l40s, _result(l40s, notebooks, gpus_used=4))
    # notebooks run at the lowest tier (low): best effort, time-slicing as today
    assert advice.recommended == "time-slicing"
    assert [f.code for f in advice.findings] == ["MIGC503"]
    assert "best-effort work of tier low (notebooks)" in advice.findings[0].message
    high = replace(p, workloads=tuple(replace(w, priority_tier="high") for w in p.workloads))
    advice = advise_pool(high, CATALOG, l40s, _result(l40s, notebooks, gpus_used=4))
    assert advice.recommended == "mps"  # L40S is compute capability 8.9: MPS with limits
    assert [f.code for f in advice.findings] == ["MIGC502", "MIGC511"]
    assert advice.findings[1].message.startswith("current mode time-slicing x4, advised mps: time-slicing")


def test_isolation_on_a_model_without_mig_costs_whole_gpus_and_shared_tenants_are_a_risk() -> None:
    p = policy()
    isolated = Workload(
        "vit", "search", 3, Need(profiles=("1g.10gb",)), "hardware", "high", "east", ("l40s",)
    )
    p = replace(p, workloads=(*p.workloads, isolated))
    l40s = _pool(p, "l40s")
    advice = advise_pool(p, CATALOG, l40s, _result(l40s))  # both are pinned to l40s: both served
    assert advice.recommended == "whole-gpu" and advice.partition_mode is None
    assert [(f.code, f.severity) for f in advice.findings] == [
        ("MIGC501", "warning"),
        ("MIGC510", "warning"),  # research and search share time-sliced GPUs today
        ("MIGC511", "warning"),
        ("MIGC514", "note"),
    ]
    assert advice.findings[0].message.endswith("a whole GPU per replica (3 GPU(s))")
    assert "tenants research, search share GPU memory" in advice.findings[1].message
    assert advice.findings[3].message == "0 of 4 GPU(s) serve declared demand; 4 idle"  # L40S unpriced


def test_multi_gpu_training_is_whole_gpus_and_a_pool_with_no_demand_gets_no_advice() -> None:
    p = policy()
    train = Workload("train", "research", 2, Need(gpus=2), "hardware", "low", "east", ("h200",))
    with_train = replace(p, workloads=(*p.workloads, train))
    h200 = _pool(p, "h200")
    advice = advise_pool(with_train, CATALOG, h200, _result(h200, gpus_used=16))
    assert advice.recommended == "whole-gpu"
    assert [f.code for f in advice.findings] == ["MIGC505", "MIGC511"]
    assert "multi-GPU training (train: 2 GPU(s) per replica)" in advice.findings[0].message
    assert "MIG is enabled on GPUs that serve whole-GPU work only" in advice.findings[1].message
    idle = advise_pool(p, CATALOG, h200, _result(h200))
    assert idle.recommended is None and [f.code for f in idle.findings] == ["MIGC512"]
