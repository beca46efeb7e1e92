"""compiler/validate/rules/workloads.py: a workload's tenant, isolation and placement, on one
cluster ``c`` with an A100-SXM4-80GB pool (8 GPUs a node, largest profile 7g.80gb) and an L40S pool
(4 GPUs a node, no MIG)."""

from __future__ import annotations

import pytest
from validate_support import A100_POOL, codes, declared, fleet, run, tenant, workload

from compiler.validate.rules import workloads as workload_rules

POOLS = A100_POOL + "- name: l40s\n  gpuProduct: NVIDIA-L40S\n  gpusPerNode: 4\n  nodes: {names: [n9]}\n"


def _w(spec: str) -> tuple[list[str], list[str]]:
    _, diags = run(fleet(POOLS), tenant(), workload("w", "tenant: t\nreplicas: 1\n" + spec))
    return codes(diags), [d.message for d in diags]


def test_the_family_declares_what_it_reports() -> None:
    assert declared(workload_rules) == {
        "MIGC101", "MIGC103", "MIGC104", "MIGC105", "MIGC106",
        "MIGC107", "MIGC117", "MIGC118", "MIGC120", "MIGC122",
    }  # fmt: skip


def test_an_unknown_tenant_gets_a_suggestion() -> None:
    _, diags = run(
        fleet(), tenant("search"), workload("w", "tenant: serch\nreplicas: 1\nneed: {profile: 1g.10gb}")
    )
    assert [(d.code, d.message) for d in diags] == [
        ("MIGC104", "workload 'w' names unknown tenant 'serch'; did you mean 'search'?")
    ]


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ("isolation: hardware\nneed: {gpus: 1}", "MIGC122"),
        ("isolation: exclusive\nneed: {profile: 1g.10gb}", "MIGC122"),
        ("need: {gpus: 9}", "MIGC118"),  # largest node: 8 GPUs
        ("need: {gpuMemoryGB: 96}", "MIGC107"),  # largest A100 profile: 80 GB
        ("pools: [l40s]\nneed: {profile: 1g.10gb}", "MIGC107"),  # l40s is not MIG-partitioned
        ("pools: [a10]\nneed: {profile: 1g.10gb}", "MIGC106"),
        ("cluster: east\nneed: {profile: 1g.10gb}", "MIGC105"),
    ],
)
def test_a_need_no_pool_it_may_use_can_serve(spec: str, code: str) -> None:
    assert _w(spec)[0] == [code]


def test_what_fits_is_accepted() -> None:
    assert _w("need: {gpus: 8}") == ([], [])
    assert _w("need: {gpuMemoryGB: 80}") == ([], [])
    assert _w("pools: [a100]\nneed: {profiles: [3g.40gb, 1g.10gb]}") == ([], [])


def test_the_message_says_what_was_asked_and_where() -> None:
    _, messages = _w("need: {gpus: 9}")
    assert messages == ["workload 'w' needs 9 GPUs on one node, but its pools have at most 8 per node"]
    _, messages = _w("pools: [a10]\nneed: {profile: 1g.10gb}")
    assert messages[0].startswith("workload 'w' names unknown pool 'a10' of cluster c; pools: a100, l40s")


def test_two_clusters_make_the_cluster_field_required() -> None:
    second = (
        "    - name: d\n      nodePools:\n"
        "      - {name: b, gpuProduct: NVIDIA-A100-SXM4-80GB, gpusPerNode: 8, nodes: {names: [m1]}}\n"
    )
    _, diags = run(fleet() + second, tenant(), workload())
    assert codes(diags) == ["MIGC120"] and "the fleet has c, d" in diags[0].message
