"""compiler/plan/hami.py: the HAMi part of the plan, the same facts in text, markdown and JSON."""

from __future__ import annotations

from dataclasses import replace

from test_render_support import policy

from compiler.model import HamiNeed, Need, Workload
from compiler.plan.data import HamiRequest
from compiler.plan.hami import hami_json, hami_markdown, hami_requests, hami_text
from compiler.solve.result import HamiGpu, HamiPoolResult, HamiShare
from unit.compiler.plan.plans import empty_plan

GIB = 1024


def _pool() -> HamiPoolResult:
    busy = HamiGpu(
        "t4-0",
        0,
        memory_mib=16 * GIB,
        cores=100,
        slots=10,
        shares=(HamiShare("a", "infer", 2, 4 * GIB, 25), HamiShare("b", "tiny", 1, 2 * GIB, 10)),
    )
    idle = HamiGpu("t4-0", 1, memory_mib=16 * GIB, cores=100, slots=10)
    return HamiPoolResult("east", "t4", "Tesla-T4", (busy, idle), (), optimal=False)


def test_requests_are_the_container_limits_of_each_hami_workload_by_name() -> None:
    mem = Workload("z-mem", "a", 2, Need(hami=HamiNeed(memory_mib=3000, cores=30)), "shared", "low", "east")
    pct = Workload("a-pct", "b", 1, Need(hami=HamiNeed(memory_percent=25)), "shared", "high", "east")
    pol = replace(policy(), workloads=(*policy().workloads, mem, pct))
    assert hami_requests(pol) == (
        HamiRequest(
            "east",
            "a-pct",
            "b",
            (("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "25")),
            "migc-high",
        ),
        HamiRequest(
            "east",
            "z-mem",
            "a",
            (("nvidia.com/gpu", "1"), ("nvidia.com/gpucores", "30"), ("nvidia.com/gpumem", "3000")),
            "migc-low",
        ),
    )
    assert hami_requests(policy()) == ()  # no HAMi need in the policy


def test_text_sums_each_gpu_and_counts_idle_ones() -> None:
    req = HamiRequest("east", "infer", "a", (("nvidia.com/gpu", "1"),), "migc-low")
    text = hami_text(replace(empty_plan(), hami=(_pool(),), hami_requests=(req,)))
    assert text.splitlines() == [
        "",
        "HAMi pools (per GPU: shares; memory, cores, slots used/total)",
        "  east/t4 (Tesla-T4): 1 of 2 GPUs carry shares (not proven optimal)",
        # 2 × 4 GiB + 2 GiB = 10 of 16 GiB; 2 × 25 + 10 = 60 %; 3 replicas in 10 slots
        "    t4-0 GPU 0: a/infer x2, b/tiny x1; memory 10.0Gi/16.0Gi (free 6.0Gi), cores 60/100%, slots 3/10",
        "    1 GPU(s) idle",
        "  pods request (container limits):",
        "    infer (a): nvidia.com/gpu: 1; priorityClassName: migc-low",
    ]


def test_markdown_has_a_row_per_gpu_with_shares() -> None:
    md = hami_markdown(replace(empty_plan(), hami=(_pool(),)))
    assert "**east/t4** (Tesla-T4): 1 of 2 GPUs carry shares (not proven optimal); 1 idle" in md
    rows = [line for line in md if line.startswith("| t4-0")]
    assert rows == ["| t4-0 | 0 | a/infer x2, b/tiny x1 | 10.0Gi / 16.0Gi | 60% / 100% | 3 / 10 |"]


def test_json_lists_only_gpus_with_shares_and_is_null_without_hami() -> None:
    doc = hami_json(replace(empty_plan(), hami=(_pool(),)))
    assert doc is not None
    (pool,) = doc["pools"]
    assert (pool["gpusTotal"], pool["gpusUsed"], pool["optimal"]) == (2, 1, False)
    assert pool["gpus"] == [_pool().gpus[0].document()]
    assert doc["workloads"] == []
    plan = empty_plan()
    assert hami_json(plan) is None and hami_text(plan) == "" and hami_markdown(plan) == []
