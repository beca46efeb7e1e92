"""compiler/validate/rules/shared.py: the checks several rule families call, on a Context built by
hand from small documents (no rule runner: each helper alone)."""

from __future__ import annotations

from validate_support import A100_POOL, context, fleet, partition, workload

from compiler.validate.rules.shared import (
    allow_me,
    check_profile_known,
    check_tier,
    dupes,
    me_named_by_workloads,
)

L40S = "- name: l40s\n  gpuProduct: NVIDIA-L40S\n  gpusPerNode: 4\n  nodes: {names: [n9]}\n"


def test_dupes_points_each_repeat_at_the_first() -> None:
    ctx = context(fleet())
    assert ctx.fleet is not None
    doc = ctx.fleet.doc
    path = ("spec", "clusters", 0, "nodePools", 0, "name")
    dupes(
        ctx, [("a", doc, path), ("b", doc, path), ("a", doc, path), ("a", doc, path)], "pool", " in cluster c"
    )
    line = doc.position(path)[0]
    assert [d.message for d in ctx.diags] == [
        f"pool 'a' is defined twice in cluster c (first at f0.yaml:{line})"
    ] * 2


def test_check_tier_lists_the_tiers_and_suggests() -> None:
    ctx = context(
        fleet(), workload("w", "tenant: t\nreplicas: 1\npriorityClass: hgh\nneed: {profile: 1g.10gb}")
    )
    check_tier(ctx, ctx.workloads[0], ("spec", "priorityClass"))
    (d,) = ctx.diags
    assert d.code == "MIGC117" and d.message.startswith("priority class 'hgh' is not a tier; tiers: ")
    assert d.message.endswith("; did you mean 'high'?")
    ctx.partition_ok = False  # tiers from a broken PartitionPolicy: no judgement
    check_tier(ctx, ctx.workloads[0], ("spec", "priorityClass"))
    assert len(ctx.diags) == 1


def test_check_profile_known_per_scope() -> None:
    ctx = context(fleet(A100_POOL + L40S), workload())
    a100, l40s = ctx.pool_list
    w = ctx.workloads[0]
    assert check_profile_known(ctx, w, ("spec",), "3g.40gb", [a100], on_key=False, what="x:")
    assert not check_profile_known(ctx, w, ("spec",), "3g.40gb", [l40s], on_key=False, what="x:")
    assert not check_profile_known(ctx, w, ("spec",), "3g.40g", [a100, l40s], on_key=False, what="x:")
    assert [d.message for d in ctx.diags] == [
        "x: profile '3g.40gb' cannot be used: no pool it applies to is MIG-partitioned",
        "x: profile '3g.40g' does not exist on A100-SXM4-80GB; did you mean '3g.40gb'?",
    ]


def test_media_extension_profiles_named_and_allowed() -> None:
    ctx = context(
        fleet(),
        workload("a", "tenant: t\nreplicas: 1\nneed: {profiles: [1g.10gb+me, 1g.10gb]}"),
        workload("b", "tenant: t\nreplicas: 1\nneed: {profile: 1g.10gb}"),
    )
    assert me_named_by_workloads(ctx) == {"1g.10gb+me"} and not allow_me(ctx)
    assert allow_me(context(fleet(), partition("allowMediaExtensions: true")))
