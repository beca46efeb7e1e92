"""How much of the tenants' guarantees the clusters can cover (compiler/render/quota.py ``_servable``):
where every holder may use the same clusters the answer is computed in closed form, without
networkx; it must be the max flow networkx finds on the same graph, and the general case (holders
on different clusters) still goes through networkx."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_render_support import policy

from compiler.model import Quota, Tenant
from compiler.render import quota

_SCALE = quota._SCALE


def _max_flow(
    holders: list[tuple[Tenant, float]], placement: dict[str, tuple[str, ...]], capacity: dict[str, float]
) -> float:
    graph: nx.DiGraph[Any] = nx.DiGraph()
    for tenant, amount in holders:
        graph.add_edge("source", ("t", tenant.name), capacity=round(amount * _SCALE))
        for cluster in placement[tenant.name]:
            graph.add_edge(("t", tenant.name), ("c", cluster), capacity=round(amount * _SCALE))
    for cluster, have in capacity.items():
        if graph.has_node(("c", cluster)):
            graph.add_edge(("c", cluster), "sink", capacity=round(have * _SCALE))
    if not graph.has_node("sink"):
        return 0.0
    return float(nx.maximum_flow_value(graph, "source", "sink")) / _SCALE


_amount = st.one_of(st.integers(0, 40).map(float), st.sampled_from([0.5, 1.25, 2.001, 7.9999, 0.0004]))
_clusters = st.lists(st.sampled_from(["east", "west", "north"]), min_size=0, max_size=3, unique=True)


@settings(max_examples=300, deadline=None)
@given(
    amounts=st.lists(_amount, min_size=1, max_size=6),
    shared=_clusters,
    spread=st.lists(_clusters, min_size=6, max_size=6),
    same=st.booleans(),
    have=st.dictionaries(st.sampled_from(["east", "west", "north"]), _amount, max_size=3),
)
def test_servable_is_the_max_flow(
    amounts: list[float], shared: list[str], spread: list[list[str]], same: bool, have: dict[str, float]
) -> None:
    holders = [
        (Tenant(name=f"t{i}", namespaces=(f"t{i}",), priority_tier="high"), a) for i, a in enumerate(amounts)
    ]
    placement = {t.name: tuple(sorted(shared if same else spread[i])) for i, (t, _) in enumerate(holders)}
    assert quota._servable(holders, placement, have) == _max_flow(holders, placement, have)


def test_one_cluster_needs_no_networkx(monkeypatch: pytest.MonkeyPatch) -> None:
    holders = [
        (Tenant(name=n, namespaces=(n,), priority_tier="high"), a) for n, a in (("a", 3.0), ("b", 2.5))
    ]
    monkeypatch.setitem(sys.modules, "networkx", None)  # an import of it now fails
    placement = {"a": ("east",), "b": ("east",)}
    assert quota._servable(holders, placement, {"east": 4.0}) == 4.0
    assert quota._servable(holders, placement, {"east": 9.0}) == 5.5
    with pytest.raises(ImportError):  # and the general case does need it
        quota._servable(holders, {"a": ("east",), "b": ("west",)}, {"east": 4.0, "west": 1.0})


def test_hard_limits_take_the_burst_where_set_else_the_guarantee() -> None:
    tenant = Tenant(
        "t",
        ("t",),
        "high",
        guaranteed=Quota(profiles=(("1g.10gb", 8), ("3g.40gb", 1)), gpus=2),
        burst=Quota(profiles=(("1g.10gb", 12),)),
    )
    assert quota.hard_limits(tenant) == {"1g.10gb": 12, "3g.40gb": 1, "gpu": 2}
    assert quota.quota_counts(Quota()) == {}
    assert quota.resource_name("gpu") == "nvidia.com/gpu"
    assert quota.resource_name("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"


def test_a_tenant_lands_where_its_workloads_run_or_everywhere_without_any() -> None:
    pol = policy()
    clusters = (pol.clusters[0], replace(pol.clusters[0], name="west"))
    idle = Tenant("idle", ("idle",), "low")
    pol = replace(pol, clusters=clusters, tenants=(*pol.tenants, idle))
    assert quota.tenant_clusters(pol) == {
        "research": ("east",),
        "search": ("east",),
        "idle": ("east", "west"),
    }
    assert [t.name for t in quota.tenants_in(pol, "west")] == ["idle"]
    assert [t.name for t in quota.tenants_in(pol, "east")] == ["idle", "research", "search"]
