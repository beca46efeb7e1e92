"""compiler/validate/rules/consumers.py: what Kubernetes quota, admission and the device plugin accept.

The per-namespace verdict (``demand_verdict``) is checked on hand-made rows: the ResourceQuota gives
each of a tenant's namespaces the full limit, so demand must fit its own namespace, and demand of
unknown namespace must fit what is left over all of them.
"""

from __future__ import annotations

from validate_support import A100_POOL, fleet, run, tenant, workload

from compiler.validate.rules.consumers import Asked, demand_verdict, hard_limit_field

MPS = (
    "- name: l4\n  gpuProduct: NVIDIA-L4\n  gpusPerNode: 4\n  nodes: {names: [n9]}\n"
    "  sharing: {mode: mps, replicas: 2}\n"
)


def _codes(*texts: str) -> list[str]:
    return [d.code for d in run(*texts)[1]]


def test_the_hard_limit_is_the_burst_else_the_guarantee() -> None:
    spec: dict[str, object] = {"guaranteed": {"gpus": 2, "profiles": {"1g.10gb": 4}}, "burst": {"gpus": 3}}
    assert hard_limit_field(spec, "gpu") == ("spec", "burst", "gpus")
    assert hard_limit_field(spec, "1g.10gb") == ("spec", "guaranteed", "profiles", "1g.10gb")
    assert hard_limit_field(spec, "3g.40gb") is None


def test_demand_in_a_known_namespace_must_fit_it() -> None:
    rows = [Asked("a", "", 3, "ns1"), Asked("b", "", 2, "ns2")]
    code, message = demand_verdict("t", "", "1g.10gb", 2, "burst.profiles", ["ns1", "ns2"], rows) or ("", "")
    assert code == "MIGC134"
    assert "in namespace ns1 ask for 3 nvidia.com/mig-1g.10gb (a 3, b 2)" in message
    assert "refuse pods asking for 1 of them" in message
    assert demand_verdict("t", "", "gpu", 3, "burst.gpus", ["ns1", "ns2"], rows) is None


def test_demand_of_unknown_namespace_fits_the_room_left_or_is_a_warning() -> None:
    # limit 2 per namespace, 2 namespaces: room 4 in all, 2 in any one
    assert demand_verdict("t", "", "gpu", 2, "burst.gpus", ["a", "b"], [Asked("w", "", 2, None)]) is None
    verdict = demand_verdict("t", "", "gpu", 2, "burst.gpus", ["a", "b"], [Asked("w", "", 3, None)])
    assert (
        verdict is not None and verdict[0] == "MIGC135" and "spread over its namespaces (a, b)" in verdict[1]
    )
    verdict = demand_verdict("t", "c1", "gpu", 2, "burst.gpus", ["a", "b"], [Asked("w", "", 5, None)])
    assert verdict is not None and verdict[0] == "MIGC134" and verdict[1].startswith("cluster c1: tenant 't'")
    assert "4 over its 2 namespaces" in verdict[1] and "asking for 1 of them" in verdict[1]


def test_a_workload_past_its_tenants_quota_through_validate() -> None:
    t = tenant("t", "namespaces: [t]\nguaranteed: {profiles: {1g.10gb: 2}}")
    assert _codes(fleet(), t, workload("w", "tenant: t\nreplicas: 3\nneed: {profile: 1g.10gb}")) == [
        "MIGC134"
    ]
    assert _codes(fleet(), t, workload("w", "tenant: t\nreplicas: 2\nneed: {profile: 1g.10gb}")) == []


def test_gb_and_slices_cannot_be_enforced_as_limits() -> None:
    assert _codes(fleet(), tenant("t", "namespaces: [t]\nguaranteed: {gpuMemoryGB: 20}"), workload()) == [
        "MIGC131"
    ]
    burst = tenant("t", "namespaces: [t]\nguaranteed: {gpus: 1}\nburst: {gpus: 1, computeSlices: 3}")
    assert _codes(fleet(), burst, workload()) == ["MIGC130"]


def test_mps_beside_mig_and_an_old_kubernetes() -> None:
    assert _codes(fleet(A100_POOL + MPS), tenant(), workload()) == ["MIGC132"]
    assert (
        _codes(
            fleet(MPS), tenant(), workload("w", "tenant: t\nreplicas: 1\nisolation: shared\nneed: {gpus: 1}")
        )
        == []
    )
    old = fleet().replace("    - name: c\n", "    - name: c\n      kubernetesVersion: '1.29'\n")
    assert _codes(old, tenant(), workload()) == ["MIGC133"]
    assert _codes(old.replace("1.29", "1.30"), tenant(), workload()) == []
