"""compiler/validate/rules/tenants.py: namespaces (claimed twice, reserved), tiers, and guarantees
against what the fleet can hold. Fleet: one A100-SXM4-80GB pool of 2 nodes x 8 GPUs; a 3g.40gb fits
at most twice per GPU, so the fleet holds at most 2 x 16 = 32 of them and 16 whole GPUs."""

from __future__ import annotations

import pytest
from validate_support import codes, declared, fleet, run, tenant, workload

from compiler.validate.rules import tenants as tenant_rules

W3G = workload("w", "tenant: a\nreplicas: 1\nneed: {profile: 3g.40gb}")


def test_the_family_declares_what_it_reports() -> None:
    assert {"MIGC103", "MIGC108", "MIGC110", "MIGC111", "MIGC117", "MIGC123", "MIGC140"} <= declared(
        tenant_rules
    )


def test_a_namespace_claimed_twice_names_the_first_owner() -> None:
    _, diags = run(fleet(), tenant("a", "namespaces: [shared]"), tenant("b", "namespaces: [shared]"), W3G)
    (d,) = diags
    assert d.code == "MIGC108" and d.file == "f2.yaml"
    assert "namespace 'shared' is claimed by tenant 'b' and by tenant 'a' (f1.yaml:" in d.message


@pytest.mark.parametrize(
    ("namespace", "why"),
    [
        ("kube-public", "kube-* namespaces belong to Kubernetes"),
        ("default", "'default' is where objects without a namespace land"),
        ("migc-system", "migc's own namespace"),
        ("gpu-operator", "the GPU Operator's namespace of cluster c"),
    ],
)
def test_system_namespaces_are_reserved(namespace: str, why: str) -> None:
    _, diags = run(fleet(), tenant("a", f"namespaces: [{namespace}]"), W3G)
    assert [(d.code, why in d.message) for d in diags] == [("MIGC140", True)]


def test_an_unknown_tier_is_migc117() -> None:
    _, diags = run(fleet(), tenant("a", "namespaces: [a]\npriorityClass: urgent"), W3G)
    assert codes(diags) == ["MIGC117"]


@pytest.mark.parametrize(("count", "ok"), [(32, True), (33, False)])
def test_one_tenant_guaranteed_more_than_the_fleet_holds(count: int, ok: bool) -> None:
    policy, diags = run(
        fleet(), tenant("a", f"namespaces: [a]\nguaranteed: {{profiles: {{3g.40gb: {count}}}}}"), W3G
    )
    assert (policy is not None, codes(diags)) == ((True, []) if ok else (False, ["MIGC110"]))


def test_guarantees_that_fit_alone_but_not_together() -> None:
    a = tenant("a", "namespaces: [a]\nguaranteed: {profiles: {3g.40gb: 20}}")
    b = tenant("b", "namespaces: [b]\nguaranteed: {profiles: {3g.40gb: 20}}")
    _, diags = run(fleet(), a, b, W3G)
    (d,) = diags
    assert d.code == "MIGC110" and "tenants a, b are guaranteed 40 × 3g.40gb together" in d.message
    assert "at most 32" in d.message


def test_whole_gpus_and_burst_below_the_guarantee() -> None:
    over = tenant("a", "namespaces: [a]\nguaranteed: {gpus: 17}")
    assert codes(run(fleet(), over, W3G)[1]) == ["MIGC111"]
    low = tenant("a", "namespaces: [a]\nguaranteed: {gpus: 2}\nburst: {gpus: 1}")
    _, diags = run(fleet(), low, W3G)
    assert [(d.code, d.message) for d in diags] == [("MIGC123", "burst gpus 1 is below the guaranteed 2")]
