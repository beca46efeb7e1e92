"""compiler/model.py: the canonical forms and the small rules the policy records carry (counts,
layouts, shares, spread wording, HAMi arithmetic, objective order, look-ups)."""

from __future__ import annotations

import pytest

from compiler.model import (
    OBJECTIVES,
    Cluster,
    CurrentState,
    GpuLayout,
    HamiNeed,
    HamiSettings,
    Need,
    NodePool,
    PartitionPolicy,
    Policy,
    Share,
    Sharing,
    Spread,
    Tenant,
    frozen_counts,
    objective_order,
)


def test_frozen_counts_is_sorted_merged_and_drops_zeros() -> None:
    assert frozen_counts({"3g.40gb": 1, "1g.10gb": 2, "2g.20gb": 0}) == (("1g.10gb", 2), ("3g.40gb", 1))
    assert frozen_counts([("b", 1), ("a", 2), ("b", 2), ("c", 1), ("c", -1)]) == (("a", 2), ("b", 3))
    assert frozen_counts({}) == ()


def test_equal_multisets_are_equal_layouts_and_whole_differs_from_mig_without_instances() -> None:
    a = GpuLayout.of({"1g.10gb": 2, "3g.40gb": 1})
    b = GpuLayout.of({"3g.40gb": 1, "1g.10gb": 2, "7g.80gb": 0})
    assert a == b and hash(a) == hash(b)
    assert a.instances() == 3 and a.counts() == {"1g.10gb": 2, "3g.40gb": 1}
    assert GpuLayout.whole() != GpuLayout.of({})  # MIG off vs MIG on with no instances (all-enabled)
    assert not GpuLayout.whole().mig_enabled and GpuLayout.whole().instances() == 0


def _pool(nodes: int = 2, mig: bool = True, sharing: Sharing | None = None) -> NodePool:
    return NodePool(
        "p",
        "east",
        "NVIDIA-L40S",
        "L40S",
        4,
        tuple(f"n{i}" for i in range(nodes)),
        mig=mig,
        sharing=sharing or Sharing(),
    )


def test_a_pool_counts_gpus_and_the_shares_its_device_plugin_advertises() -> None:
    assert _pool(3).total_gpus == 12
    sliced = _pool(mig=False, sharing=Sharing("time-slicing", 4))
    assert sliced.is_shared and sliced.shares_per_gpu == 4
    assert _pool(mig=False, sharing=Sharing("mps", 2)).shares_per_gpu == 2
    hami = _pool(mig=False, sharing=Sharing("hami", hami=HamiSettings()))
    assert not hami.is_shared and hami.shares_per_gpu == 1  # HAMi is packed by memory, not replicas
    assert _pool().shares_per_gpu == 1 and not _pool().is_shared


def test_hami_arithmetic_scales_memory_and_cores_and_rounds_percent_down() -> None:
    s = HamiSettings(memory_scaling=1.5, core_scaling=2.0)
    assert s.memory_mib(48.0) == 73728  # 48 GB x 1024 x 1.5
    assert s.cores() == 200
    assert HamiSettings().memory_mib(80.0) == 81920
    assert HamiNeed(memory_mib=5000, memory_percent=50).memory_on(81920) == 5000  # MiB wins when set
    assert HamiNeed(memory_percent=33).memory_on(1000) == 330
    assert HamiNeed(memory_percent=33).memory_on(1001) == 330  # 330.33 rounds down, as HAMi does


def test_a_need_has_one_kind() -> None:
    assert Need(profiles=("1g.10gb",)).kind == "profiles"
    assert Need(gpus=2).kind == "gpus"
    assert Need(gpu_memory_gb=10.0, compute_slices=1).kind == "resources"
    assert Need(gpus=1, hami=HamiNeed(memory_mib=1)).kind == "hami"  # a HAMi share beats the GPU count


def test_a_share_caps_by_count_or_by_percent_rounded_down() -> None:
    assert Share(count=3).cap(100) == 3 and Share(count=3).text() == "3"
    assert Share(percent=50).cap(5) == 2 and Share(percent=50).text() == "50%"
    assert Share(percent=34).cap(3) == 1
    assert not Share().is_set and Share(percent=1).is_set


def test_spread_wording_and_when_it_needs_per_node_counts() -> None:
    spread = Spread(
        min_nodes=2, max_per_node=Share(count=1), topology_key="zone", max_per_domain=Share(percent=50)
    )
    assert spread.text() == "minNodes 2, maxPerNode 1, maxPerDomain 50% of zone"
    assert spread.per_node
    assert not Spread(min_nodes=1).per_node  # one node is no constraint between nodes
    assert not Spread(topology_key="zone", max_per_domain=Share(count=2)).per_node
    assert Spread().text() == ""


def test_objective_order_puts_named_goals_first_then_the_default_order() -> None:
    assert OBJECTIVES == ("disruption", "gpus", "preference")
    assert objective_order(["gpus"]) == ("gpus", "disruption", "preference")
    assert objective_order(["preference", "gpus", "preference"]) == ("preference", "gpus", "disruption")
    assert objective_order([]) == OBJECTIVES


def test_look_ups_by_name_raise_key_error_for_an_unknown_name() -> None:
    p = Policy(
        clusters=(Cluster("east", (_pool(),)),),
        tenants=(Tenant("search", ("search",), "high"),),
        workloads=(),
    )
    assert p.cluster("east").pools[0].name == "p" and p.tenant("search").priority_tier == "high"
    assert p.partition.tier_value("critical") > p.partition.tier_value("high") > p.partition.tier_value("low")
    for lookup in (
        lambda: p.cluster("west"),
        lambda: p.tenant("x"),
        lambda: PartitionPolicy().tier_value("x"),
    ):
        with pytest.raises(KeyError):
            lookup()
    state = CurrentState(nodes=((("east", "p", "n0"), (GpuLayout.whole(),)),))
    assert state.as_dict() == {("east", "p", "n0"): (GpuLayout.whole(),)}
