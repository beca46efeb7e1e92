"""compiler/validate/rules/policy_rules.py: a PartitionPolicy rule's pools exist, its profiles exist
there (+me only when asked for), and a rule scoped to pools has a Workload it can grow there."""

from __future__ import annotations

from validate_support import A100_POOL, declared, fleet, partition, run, tenant, workload

from compiler.validate.rules import policy_rules

POOLS = (
    A100_POOL
    + "- name: h100\n  gpuProduct: NVIDIA-H100-80GB-HBM3\n  gpusPerNode: 8\n  nodes: {names: [h1]}\n"
)


def _rule(body: str, wl: str = "") -> list[tuple[str, str]]:
    spec = f"mode: dynamic\nrules:\n  - {{name: r, {body}}}\n"
    _, diags = run(fleet(POOLS), tenant(), workload("w", wl) if wl else workload(), partition(spec))
    return [(d.code, d.message) for d in diags]


def test_the_family_declares_what_it_reports() -> None:
    assert declared(policy_rules) == {"MIGC101", "MIGC102", "MIGC106", "MIGC181"}


def test_an_unknown_pool_is_named_with_the_known_ones() -> None:
    found = _rule("pools: [a10], when: {pendingPodsGreaterThan: 1}, prefer: {maximize: 1g.10gb}")
    assert found == [
        ("MIGC106", "rule 'r' names unknown pool 'a10'; pools: a100, h100; did you mean 'a100'?")
    ]


def test_a_profile_the_scope_does_not_offer() -> None:
    found = _rule("when: {pendingPodsGreaterThan: 1}, prefer: {maximize: 1g.5gb}")  # an A100-40GB profile
    assert [c for c, _ in found] == ["MIGC101"]


def test_a_media_extension_profile_only_when_asked_for() -> None:
    found = _rule("when: {pendingPodsGreaterThan: 1}, prefer: {maximize: 1g.10gb+me}")
    assert found == [
        (
            "MIGC102",
            "rule 'r' names '1g.10gb+me' but no workload asks for it and allowMediaExtensions is false",
        )
    ]


def test_a_rule_scoped_to_pools_needs_a_workload_confined_to_them() -> None:
    body = "pools: [h100], when: {pendingPodsGreaterThan: 1}, prefer: {maximize: 1g.10gb}"
    # w may go to both pools (a100 and h100 offer 1g.10gb): the rule's headroom has no workload to grow
    assert [c for c, _ in _rule(body)] == ["MIGC181"]
    confined = "tenant: t\nreplicas: 1\npools: [h100]\nneed: {profile: 1g.10gb}"
    assert _rule(body, confined) == []
