"""compiler/validate/rules/spread.py: a workload's spread against the nodes of the pools that may
serve it (fleet: one A100 pool, nodes n1 and n2, so 2 nodes), and unmetDemand deciding whether a
fleet too small is a warning or an error."""

from __future__ import annotations

import pytest
from validate_support import A100_POOL, context, fleet, partition, run, tenant, workload

from compiler.diagnostics import Severity
from compiler.validate.rules.spread import pool_labels, strict_unmet


def _spread(
    spread: str, replicas: int = 4, need: str = "{profile: 1g.10gb}", *more: str
) -> list[tuple[str, Severity, str]]:
    w = workload("w", f"tenant: t\nreplicas: {replicas}\nneed: {need}\nspread: {spread}")
    _, diags = run(fleet(), tenant(), w, *more)
    return [(d.code, d.severity, d.message) for d in diags]


def test_min_nodes_above_the_fleet_is_a_warning_saying_how_many_are_served() -> None:
    ((code, sev, msg),) = _spread("{minNodes: 3}")
    assert (code, sev) == ("MIGC151", Severity.WARNING)
    assert "spread.minNodes is 3, but its pools (a100) have 2 node(s)" in msg
    assert "at most 2 of its 4 replica(s) can be served" in msg and "stay pending" in msg


def test_under_unmet_demand_error_it_stays_an_error() -> None:
    ((code, sev, _),) = _spread("{minNodes: 3}", 4, "{profile: 1g.10gb}", partition("unmetDemand: error"))
    assert (code, sev) == ("MIGC151", Severity.ERROR)


def test_min_nodes_above_the_replicas_is_always_an_error() -> None:
    assert [(c, s) for c, s, _ in _spread("{minNodes: 2}", 1)] == [("MIGC151", Severity.ERROR)]


@pytest.mark.parametrize(
    ("cap", "replicas", "expected"),
    [
        ("2", 4, []),  # 2 a node on 2 nodes hold 4
        ("1", 4, ["at most 1 per node on 2 node(s) holds 2 of its 4 replicas"]),
        ("'20%'", 4, ["20% of its 4 replica(s) is less than one replica per node"]),
        ("'25%'", 4, ["at most 25% per node on 2 node(s) can never place every served replica"]),
        ("'50%'", 4, []),
    ],
)
def test_max_per_node_against_the_nodes(cap: str, replicas: int, expected: list[str]) -> None:
    found = _spread(f"{{maxPerNode: {cap}}}", replicas)
    assert [c for c, _, _ in found] == ["MIGC152"] * len(expected)
    for (_, _, msg), words in zip(found, expected, strict=True):
        assert words in msg


def test_spread_does_not_apply_to_multi_gpu_replicas() -> None:
    assert [c for c, _, _ in _spread("{minNodes: 1}", 1, "{gpus: 2}")] == ["MIGC150"]


def test_a_topology_key_no_node_carries() -> None:
    found = _spread("{topologyKey: zone, maxPerDomain: 2}")
    assert [c for c, _, _ in found] == ["MIGC153"]
    assert "carries the label zone" in found[0][2] and "they carry no labels" in found[0][2]


def test_pool_labels_merge_labels_and_selector() -> None:
    pools = (
        "- name: p\n  gpuProduct: NVIDIA-A100-SXM4-80GB\n  gpusPerNode: 8\n  labels: {zone: a, rack: r1}\n"
        "  nodes: {selector: {matchLabels: {rack: r2}}, count: 2}\n"
    )
    ctx = context(fleet(pools))
    assert pool_labels(ctx.pool_list[0]) == {"zone": "a", "rack": "r2"}  # the selector's value wins
    assert not strict_unmet(ctx) and strict_unmet(context(fleet(A100_POOL), partition("unmetDemand: error")))
