"""compiler/validate/rules/fleet.py: the Fleet's own rules (names, hardware, pricing, reserve,
maxUnavailable, maintenance windows), each on a one-cluster Fleet written out here."""

from __future__ import annotations

import pytest
from validate_support import codes, declared, fleet, run, tenant, workload

from compiler.validate.rules import fleet as fleet_rules

L40S = """\
- name: l40s
  gpuProduct: NVIDIA-L40S
  gpusPerNode: 4
  nodes: {names: [n9]}
"""


def _a100(extra: str = "", nodes: str = "{names: [n1, n2]}") -> str:
    return f"- name: a100\n  gpuProduct: NVIDIA-A100-SXM4-80GB\n  gpusPerNode: 8\n  nodes: {nodes}\n{extra}"


def test_the_family_declares_what_it_reports() -> None:
    assert declared(fleet_rules) == {
        "MIGC100",
        "MIGC103",
        "MIGC112",
        "MIGC113",
        "MIGC119",
        "MIGC121",
        "MIGC124",
        "MIGC125",
    }


def test_a_node_in_two_pools_is_reported_where_it_repeats() -> None:
    text = fleet(_a100() + L40S.replace("n9", "n2"))
    policy, diags = run(text, tenant(), workload())
    assert policy is None and codes(diags) == ["MIGC103"]
    (d,) = diags
    line = text.splitlines().index("        nodes: {names: [n2]}") + 1
    assert "n2" in d.message and (d.file, d.line) == ("f0.yaml", line)


def test_an_unknown_product_gets_its_family_not_the_nearest_string() -> None:
    _, diags = run(
        fleet(_a100().replace("NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-80G")), tenant(), workload()
    )
    (d,) = [d for d in diags if d.code == "MIGC100"]
    assert (
        "unknown GPU product 'NVIDIA-A100-SXM4-80G'" in d.message and "'NVIDIA-A100-SXM4-80GB'" in d.message
    )


def test_mig_needs_a_mig_gpu_and_excludes_sharing() -> None:
    _, diags = run(
        fleet(L40S + "  partitioning: mig\n"),
        tenant(),
        workload("w", "tenant: t\nreplicas: 1\nneed: {gpus: 1}"),
    )
    assert "MIGC121" in codes(diags)
    shared = _a100("  sharing: {mode: time-slicing, replicas: 2}\n")
    _, diags = run(fleet(shared), tenant(), workload())
    assert "MIGC119" in codes(diags)


@pytest.mark.parametrize(
    ("reserve", "message"),
    [
        ("{wholeNodes: 3}", "reserves 3 whole nodes but has 2"),
        ("{wholeGpus: 9, wholeNodes: 1}", "reserves 9 whole GPUs plus 1 whole nodes but has 16 GPUs"),
    ],
)
def test_a_reserve_larger_than_the_pool(reserve: str, message: str) -> None:
    _, diags = run(fleet(_a100(f"  reserve: {reserve}\n")), tenant(), workload())
    assert [(d.code, message in d.message) for d in diags] == [("MIGC112", True)]


@pytest.mark.parametrize(
    ("value", "bad"), [("2", False), ("3", True), ("'100%'", False), ("'0%'", True), ("'150%'", True)]
)
def test_max_unavailable_bounds(value: str, bad: bool) -> None:
    _, diags = run(fleet(_a100(f"  maxUnavailable: {value}\n")), tenant(), workload())
    assert ("MIGC113" in codes(diags)) is bad


@pytest.mark.parametrize(("value", "bad"), [("0", False), ("2", False), ("3", True)])
def test_idle_surge_bounds(value: str, bad: bool) -> None:
    """An ``idleSurge`` written is at most the pool's 2 nodes; the default (1) is never reported,
    not even on a one-node pool (the controller caps it at the pool's size)."""
    _, diags = run(fleet(_a100(f"  idleSurge: {value}\n")), tenant(), workload())
    assert ("MIGC113" in codes(diags)) is bad
    if bad:
        (d,) = [d for d in diags if d.code == "MIGC113"]
        assert d.message == "pool 'a100': idleSurge 3 is more than its 2 node(s)"


def test_maintenance_windows_need_a_known_zone_and_a_length() -> None:
    window = (
        '  maintenanceWindows:\n    - {days: [Sun], start: "03:00", end: "03:00", timezone: Europe/Berlln}\n'
    )
    _, diags = run(fleet(_a100(window)), tenant(), workload())
    assert sorted(codes(diags)) == ["MIGC124", "MIGC125"]
    assert any("did you mean 'Europe/Berlin'" in d.message for d in diags)


def test_pricing_keys_are_catalog_products() -> None:
    _, diags = run(
        fleet(extra="  pricing: {NVIDIA-A100-SXM4-80GB: 2.0, NVIDIA-Z1: 1.0}\n"), tenant(), workload()
    )
    assert [(d.code, "'NVIDIA-Z1'" in d.message) for d in diags] == [("MIGC100", True)]
