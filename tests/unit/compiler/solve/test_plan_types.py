"""compiler/solve/plan_types.py: what a pool decision counts as whole GPUs and as node patterns."""

from __future__ import annotations

from test_solve_support import pool

from compiler.model import GpuLayout
from compiler.solve.plan_types import RESERVE, PoolDecision, pattern_size


def test_whole_gpus_are_every_gpu_no_mig_layout_takes() -> None:
    p = pool("p", nodes=2, gpus_per_node=8)  # 16 GPUs
    layouts = {GpuLayout.of({"1g.10gb": 7}): 5, GpuLayout.of({"3g.40gb": 2}): 3}
    decision = PoolDecision(p, None, layouts, {}, {}, {}, {})
    assert decision.whole_gpus == 8
    assert PoolDecision(p, None, {}, {}, {}, {}, {}).whole_gpus == 16


def test_a_reserved_node_is_all_its_gpus_a_pattern_its_replicas() -> None:
    assert pattern_size(RESERVE, 8) == 8
    assert pattern_size((4, 2, 1), 8) == 7
    assert pattern_size((), 8) == 0


def test_defaults_are_a_whole_pool_level_optimal_decision() -> None:
    d = PoolDecision(pool("p"), None, {}, {}, {}, {}, {})
    assert d.optimal and not d.per_node and d.gpus_used == 0
    d.extra["x"] = 1.0
    assert PoolDecision(pool("p"), None, {}, {}, {}, {}, {}).extra == {}  # no shared mutable default
