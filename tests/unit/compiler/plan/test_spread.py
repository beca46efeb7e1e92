"""compiler/plan/spread.py: a spread workload's replicas per node and domain, and MIGC256 when one
maintenance wave of a pool takes more replicas than the spread lets one node hold."""

from __future__ import annotations

from dataclasses import replace

from test_render_support import policy

from compiler.model import Cluster, Policy, Share, Span, Spread
from compiler.plan.data import SpreadRow
from compiler.plan.spread import most_per_node, spread_rows, spread_text, spread_warnings
from compiler.solve.result import PoolResult, ServedDemand, Solution

SPAN = Span("workloads.yaml", 7, 3, "$.spec.spread")


def _policy(spread: Spread, max_unavailable: int = 1) -> Policy:
    base = policy()
    (cluster,) = base.clusters
    pools = tuple(
        replace(p, labels=(("zone", "z1"),), max_unavailable=max_unavailable) if p.name == "a100" else p
        for p in cluster.pools
    )
    workloads = tuple(replace(w, spread=spread, span=SPAN) if w.name == "bert" else w for w in base.workloads)
    return replace(base, clusters=(Cluster(cluster.name, pools),), workloads=workloads)


def _solution(*per_node: tuple[str, int]) -> Solution:
    served = sum(c for _n, c in per_node)
    a100 = PoolResult(
        "east",
        "a100",
        "A100-SXM4-80GB",
        (),
        (ServedDemand("search", "bert", "1g.10gb", 8, served, "high"),),
        (),
        True,
        spread=tuple(("bert", n, c) for n, c in per_node),
    )
    return Solution(pools=(a100,))


def test_most_per_node_is_the_cap_or_what_min_nodes_leaves_for_one_node() -> None:
    (bert,) = [w for w in policy().workloads if w.name == "bert"]
    assert most_per_node(replace(bert, spread=Spread(max_per_node=Share(percent=50))), 9) == 4  # floor
    assert most_per_node(replace(bert, spread=Spread(max_per_node=Share(count=3))), 9) == 3
    assert most_per_node(replace(bert, spread=Spread(min_nodes=3)), 9) == 7  # 2 nodes hold one each
    assert most_per_node(replace(bert, spread=Spread(min_nodes=5)), 2) == 1


def test_rows_count_replicas_per_node_domain_and_worst_wave() -> None:
    spread = Spread(max_per_node=Share(percent=50), topology_key="zone", max_per_domain=Share(count=6))
    (row,) = spread_rows(_policy(spread), _solution(("a100-01", 5), ("a100-02", 3)))
    assert row == SpreadRow(
        cluster="east",
        workload="bert",
        spread="maxPerNode 50%, maxPerDomain 6 of zone",
        topology_key="zone",
        requested=8,
        served=8,
        by_node=(("a100", "a100-01", 5), ("a100", "a100-02", 3)),
        by_domain=(("z1", 8),),
        most_per_node=4,
        waves=(("a100", 1, 5),),  # maxUnavailable 1: the node holding most goes first
    )
    assert spread_text(row) == "8 of 8 served; per node a100-01 5, a100-02 3; per zone z1 8"


def test_a_wave_over_the_per_node_cap_warns_at_the_workload() -> None:
    pol = _policy(Spread(max_per_node=Share(percent=50)))
    (warning,) = spread_warnings(pol, spread_rows(pol, _solution(("a100-01", 5), ("a100-02", 3))))
    assert warning.code == "MIGC256"
    assert (warning.file, warning.line, warning.col) == ("workloads.yaml", 7, 3)
    assert "pool a100's maxUnavailable 1" in warning.message and "holding 5 of its 8" in warning.message
    assert warning.message.endswith("lets one node hold 4")


def test_an_even_spread_within_the_cap_is_quiet() -> None:
    pol = _policy(Spread(max_per_node=Share(percent=50)))
    assert spread_warnings(pol, spread_rows(pol, _solution(("a100-01", 4), ("a100-02", 4)))) == []
    # two nodes down at once hold all 8: over the cap of 4
    wide = _policy(Spread(max_per_node=Share(percent=50)), max_unavailable=2)
    rows = spread_rows(wide, _solution(("a100-01", 4), ("a100-02", 4)))
    assert rows[0].waves == (("a100", 2, 8),)
    assert len(spread_warnings(wide, rows)) == 1


def test_workloads_without_spread_have_no_row_and_a_domain_only_spread_has_no_waves() -> None:
    assert spread_rows(policy(), _solution(("a100-01", 8))) == ()
    (row,) = spread_rows(_policy(Spread(topology_key="zone", max_per_domain=Share(count=8))), _solution())
    assert row.waves == () and row.most_per_node == 0 and row.by_node == ()
    assert spread_text(row) == "0 of 8 served"
