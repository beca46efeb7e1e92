"""compiler/validate/rules/partition.py: the PartitionPolicy's durations, names and the fields that
have no effect where they are written (defaults: backoff 5m..2h, stabilizationWindow per
``PartitionPolicy()``)."""

from __future__ import annotations

import pytest
from validate_support import codes, declared, fleet, partition, run, tenant, workload

from compiler.model import PartitionPolicy
from compiler.validate.rules import partition as partition_rules


def _p(spec: str) -> list[tuple[str, str]]:
    _, diags = run(fleet(), tenant(), workload(), partition(spec))
    return [(d.code, d.message) for d in diags]


def test_the_family_declares_what_it_reports() -> None:
    assert declared(partition_rules) == {"MIGC103", "MIGC114", "MIGC180", "MIGC182"}


def test_a_zero_duration_and_an_inverted_backoff() -> None:
    found = _p("mode: dynamic\ninterval: 0m\nbackoff: {initial: 3h}")
    assert found == [
        ("MIGC114", "$.spec.interval: duration 0m must be longer than zero"),
        ("MIGC114", "backoff initial (3h) is longer than max (2h)"),  # max defaults to 2h
    ]


def test_tier_and_rule_names_are_unique() -> None:
    spec = (
        "mode: dynamic\npriorityTiers:\n  - {name: high, value: 10}\n  - {name: high, value: 5}\n"
        "rules:\n  - {name: r, when: {pendingPodsGreaterThan: 1}, prefer: {maximize: 1g.10gb}}\n"
        "  - {name: r, when: {pendingPodsGreaterThan: 2}, prefer: {maximize: 1g.10gb}}\n"
    )
    assert [c for c, _ in _p(spec)] == ["MIGC103", "MIGC103"]


@pytest.mark.parametrize(
    ("mode", "expected"), [("", ["MIGC180"]), ("mode: static\n", ["MIGC180"]), ("mode: dynamic\n", [])]
)
def test_dynamic_fields_in_static_mode_are_reported_as_without_effect(mode: str, expected: list[str]) -> None:
    found = _p(mode + "minDwell: 1h")
    assert [c for c, _ in found] == expected
    if expected:
        assert found[0][1].startswith("spec.minDwell has no effect: mode is static")


def test_a_scale_down_window_shorter_than_the_stabilization_window() -> None:
    assert [c for c, _ in _p("mode: dynamic\nstabilizationWindow: 30m\nscaleDownWindow: 10m")] == ["MIGC182"]
    assert _p("mode: dynamic\nstabilizationWindow: 30m\nscaleDownWindow: 30m") == []
    default = PartitionPolicy().stabilization_seconds
    shorter = f"{default // 60 - 1}m"
    assert codes(
        run(fleet(), tenant(), workload(), partition(f"mode: dynamic\nscaleDownWindow: {shorter}"))[1]
    ) == ["MIGC182"]
