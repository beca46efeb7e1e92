"""compiler/formatting.py: the one money, duration and layout-count formatter every report uses.

Each value as a reader sees it in ``migc plan``, ``status``, ``advise`` and ``recommend`` — these
functions replaced one copy per report, so the expectations are the copies' outputs.
"""

from __future__ import annotations

from dataclasses import replace

from test_render_support import policy

from compiler.formatting import duration, layout_counts, money
from compiler.model import GpuLayout, HamiSettings, Sharing
from compiler.plan import formatting as plan_formatting
from compiler.recommend.engine import layout_text

A = GpuLayout(True, (("1g.10gb", 7),))
B = GpuLayout(True, (("3g.40gb", 1), ("1g.10gb", 4)))
WHOLE = GpuLayout(False)


def test_money_is_dollars_with_thousands_and_cents_and_a_word_for_no_price() -> None:
    assert money(1234.5) == "$1,234.50"  # status and advise: their /h is in the sentence or header
    assert money(0.004) == "$0.00"
    assert money(-43.9) == "$-43.90"  # a saving that is a loss keeps its sign
    assert money(None) == "-"
    # the plan's wording: a rate, and "n/a" for a pool with no price
    assert money(1234.5, unit="/h", missing="n/a") == "$1,234.50/h"
    assert plan_formatting.money(1234.5) == "$1,234.50/h" and plan_formatting.money(None) == "n/a"


def test_a_duration_uses_each_unit_from_two_of_it_and_truncates() -> None:
    cases = {
        0: "0s",
        119.9: "119s",
        120: "2m",
        7199: "119m",
        7200: "2h00m",
        3 * 3600 + 5 * 60 + 59: "3h05m",
        2 * 86400 - 1: "47h59m",
        2 * 86400: "2d0h",
        3 * 86400 + 2 * 3600 + 3599: "3d2h",
    }
    assert {s: duration(s) for s in cases} == cases
    assert duration(None) == "?"  # status: a pod whose creation time the snapshot lacks


def test_layout_counts_sums_instances_over_nodes_and_gpus_in_first_seen_order() -> None:
    # the same layout object on many GPUs (as the solver shares them) is counted once per GPU
    nodes = [(A, A, B), None, (WHOLE, A)]
    assert layout_counts(nodes) == {"1g.10gb": 25, "3g.40gb": 1, "gpu": 1}
    assert list(layout_counts([(WHOLE, B)])) == ["gpu", "3g.40gb", "1g.10gb"]
    assert layout_counts([]) == {} and layout_counts([None, ()]) == {}


def test_a_shared_pool_counts_what_its_device_plugin_advertises_per_whole_gpu() -> None:
    base = replace(policy().clusters[0].pools[0], mig=False, reserve_whole_gpus=0, reserve_whole_nodes=0)
    sliced = replace(base, sharing=Sharing("time-slicing", 4))
    hami = replace(base, sharing=Sharing("hami", hami=HamiSettings(split_count=8)))
    nodes = [(WHOLE, WHOLE, A)]
    assert layout_counts(nodes, sliced) == {"gpu": 8, "1g.10gb": 7}
    assert layout_counts(nodes, hami) == layout_counts(nodes) == {"gpu": 2, "1g.10gb": 7}


def test_recommend_writes_a_node_s_layout_from_the_same_counts() -> None:
    assert layout_text((A, B, WHOLE, WHOLE)) == "11 x 1g.10gb, 1 x 3g.40gb, 2 whole GPUs"
    assert layout_text((WHOLE,)) == "1 whole GPU"
    assert layout_text((GpuLayout(True),)) == "no instances" and layout_text(None) == "nothing deployed"
