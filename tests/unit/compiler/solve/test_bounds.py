"""compiler/solve/bounds.py: the LP bound on the GPUs a pool needs, worked out by hand on one A100.

A100-SXM4-80GB: 7 compute and 8 memory slices; a 1g.10gb takes one of each (at most 7 per GPU), a
4g.40gb 4 and 4 (one per GPU), a 3g.40gb 3 and 4 (3g.40gb + 4 × 1g.10gb fill one GPU).
"""

from __future__ import annotations

from test_solve_support import pool

from compiler.catalog import load_catalog
from compiler.model import Sharing
from compiler.solve.bounds import lp_bound
from compiler.solve.demand import DemandItem, Kind, Option
from compiler.solve.plan_types import PoolDecision

CAT = load_catalog()
A100 = CAT.get("A100-SXM4-80GB")


def item(kind: Kind, size: int = 1) -> DemandItem:
    return DemandItem("t", "high", 0, kind, size, (Option("p", "gpu"),), (("w", 1),))


def decision(
    served: dict[tuple[int, str], int],
    reserved: dict[tuple[str, str], int] | None = None,
    *,
    shared: bool = False,
) -> PoolDecision:
    p = pool("p", "L40S", mig=False, sharing=Sharing("time-slicing", 4)) if shared else pool("p")
    return PoolDecision(p, None if shared else A100, {}, {}, {}, served, reserved or {})


def test_whole_gpus_and_reservations_add_up() -> None:
    items = [item("whole", 2)]
    # 3 replicas of 2 whole GPUs, and a guarantee holding one more whole GPU idle
    assert lp_bound(decision({(0, "gpu"): 3}, {("t", "gpu"): 1}), items) == 7.0


def test_shared_replicas_count_a_fraction_of_a_gpu() -> None:
    assert lp_bound(decision({(0, "gpu"): 5}, shared=True), [item("shared")]) == 1.25  # 5 / 4 replicas


def test_mig_instances_are_a_fractional_cover() -> None:
    items = [item("mig"), item("mig")]
    assert lp_bound(decision({(0, "1g.10gb"): 7}), items) == 1.0
    assert lp_bound(decision({(0, "1g.10gb"): 8}), items) == round(8 / 7, 6)
    assert lp_bound(decision({(0, "4g.40gb"): 2}), items) == 2.0
    # 3g.40gb + 4 × 1g.10gb share one GPU: the bound sees the mixed layout
    assert lp_bound(decision({(0, "3g.40gb"): 1, (1, "1g.10gb"): 4}), items) == 1.0


def test_reserved_instances_count_like_served_ones() -> None:
    items = [item("mig")]
    assert lp_bound(decision({(0, "1g.10gb"): 4}, {("t", "1g.10gb"): 10}), items) == 2.0  # 14 / 7


def test_nothing_served_needs_nothing() -> None:
    assert lp_bound(decision({}), []) == 0.0
