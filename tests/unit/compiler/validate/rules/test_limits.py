"""compiler/validate/rules/limits.py: each limit rule alone on a small Context; the limits are
lowered with monkeypatch where reaching the real one would need thousands of documents (the real
values are checked in tests/test_validate_names_limits.py)."""

from __future__ import annotations

import pytest
from validate_support import context, fleet, tenant, workload

from compiler.diagnostics import lookup
from compiler.validate.rules import limits


@pytest.mark.parametrize(
    ("code", "value", "words"),
    [
        ("MIGC143", limits.MAX_POOL_NODES, "more than {:,} nodes"),
        ("MIGC143", limits.MAX_CLUSTER_NODES, "more than {:,}"),
        ("MIGC144", limits.MAX_TENANTS, "more than {:,} tenants"),
        ("MIGC145", limits.MAX_NAMESPACES_PER_TENANT, "more than {:,} namespaces"),
        ("MIGC146", limits.MAX_WORKLOADS, "more than {:,} workloads"),
    ],
)
def test_each_limit_is_the_one_its_explanation_states(code: str, value: int, words: str) -> None:
    """The module keeps its numbers and ``migc explain``'s the same (its docstring asks for it)."""
    assert words.format(value) in " ".join(lookup(code).explanation.split())


def test_the_first_document_past_the_limit_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_TENANTS", 2)
    ctx = context(fleet(), tenant("c"), tenant("a"), tenant("b"))  # files f1, f2, f3: file order, not name
    limits.check_tenants(ctx)
    (d,) = ctx.diags
    assert (d.code, d.file) == ("MIGC144", "f3.yaml")
    assert d.message == "the policy set has 3 tenants; the limit is 2 (this is tenant 3)"
    ctx = context(fleet(), tenant("a"), tenant("b"))
    limits.check_tenants(ctx)
    assert ctx.diags == []


def test_infinite_numbers_are_refused_wherever_they_are() -> None:
    ctx = context(
        fleet(extra="pricing: {NVIDIA-A100-SXM4-80GB: .inf}\n"),
        workload("w", "tenant: t\nreplicas: 1\nneed: {gpuMemoryGB: 1e400}"),
    )
    limits.check_finite(ctx)
    assert sorted(d.message for d in ctx.diags) == [
        "$.spec.need.gpuMemoryGB: inf is not a finite number",
        "$.spec.pricing.NVIDIA-A100-SXM4-80GB: inf is not a finite number",
    ]


def test_a_price_above_the_limit() -> None:
    ctx = context(
        fleet(extra="pricing: {NVIDIA-A100-SXM4-80GB: 1000001.0, NVIDIA-H100-80GB-HBM3: 1000000.0}\n")
    )
    limits.check_prices(ctx)
    assert [d.message for d in ctx.diags] == [
        "price 1e+06 per GPU-hour for 'NVIDIA-A100-SXM4-80GB' is above the limit of 1,000,000"
    ]


def test_nodes_per_pool_and_per_cluster() -> None:
    def pool(name: str, count: int) -> str:
        selector = f"{{selector: {{matchLabels: {{p: {name}}}}}, count: {count}}}"
        return f"- name: {name}\n  gpuProduct: NVIDIA-A100-SXM4-80GB\n  gpusPerNode: 8\n  nodes: {selector}\n"

    ctx = context(fleet(pool("a", 5_000) + pool("b", 5_000)))
    limits.check_nodes(ctx)
    assert ctx.diags == []  # both at the pool limit, the cluster at its limit
    ctx = context(fleet(pool("a", 5_001) + pool("b", 5_000)))
    limits.check_nodes(ctx)
    assert [d.message for d in ctx.diags] == [
        "pool 'a' has 5,001 nodes; the limit is 5,000 per pool",
        "cluster 'c' has 10,001 nodes; the limit is 10,000 per cluster",
    ]


def test_namespaces_per_tenant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_NAMESPACES_PER_TENANT", 2)
    ctx = context(tenant("t", "namespaces: [a, b, c]"), tenant("u", "namespaces: [a, b]"))
    limits.check_namespaces(ctx)
    assert [d.message for d in ctx.diags] == ["tenant 't' has 3 namespaces; the limit is 2 per tenant"]
