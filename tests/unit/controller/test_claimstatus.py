"""controller/claimstatus.py: a pod's claim names and a claim's allocation, read from their JSON.

Claims are shaped as k8s.io/api resource/v1 says (types.go:1730-1792: ``status.allocation.devices
.results[] {request, driver, pool, device}``, ``status.reservedFor[] {resource, name, uid}``), pods
as core/v1 (``spec.resourceClaims[]``, ``status.resourceClaimStatuses[]``), built here by hand."""

from __future__ import annotations

from typing import Any

import pytest

from controller.claimstatus import MAX_CLAIMS, MAX_RESULTS, Device, allocated, claim_names


def pod(uid: str = "u-1", **claims: str | None) -> dict[str, Any]:
    """A pod whose claims are ``entry name → generated claim name`` (None: not generated yet)."""
    return {
        "metadata": {"name": "p", "namespace": "team-a", "uid": uid},
        "spec": {"resourceClaims": [{"name": k, "resourceClaimTemplateName": "gpu-1g"} for k in claims]},
        "status": {"resourceClaimStatuses": [{"name": k, "resourceClaimName": v} for k, v in claims.items()]},
    }


def claim(devices: list[str], reserved: tuple[str, ...] = ("u-1",), node: str = "n1") -> dict[str, Any]:
    results = [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": d} for d in devices]
    return {
        "metadata": {"name": "c", "namespace": "team-a"},
        "status": {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": "p", "uid": u} for u in reserved],
        },
    }


def test_claim_names_follow_the_direct_name_or_the_generated_one() -> None:
    assert claim_names(pod(gpu="p-gpu-x7k2q", extra="p-extra-9")) == ["p-gpu-x7k2q", "p-extra-9"]
    direct = {"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "shared-gpu"}]}}
    assert claim_names(direct) == ["shared-gpu"]  # a direct name needs no status
    assert claim_names({"spec": {}}) == []  # no claims at all


@pytest.mark.parametrize(
    ("the_pod", "why"),
    [
        (pod(gpu=None), "no ResourceClaim name in the pod's status yet"),
        (pod(gpu="Not_A_Name"), "no ResourceClaim name"),
        ({"spec": {"resourceClaims": [{"resourceClaimName": "x"}]}}, "without a name"),
        ({"spec": {"resourceClaims": "gpu"}}, "not a list"),
        ({"spec": {"resourceClaims": [{"name": "c", "resourceClaimName": "x"}] * (MAX_CLAIMS + 1)}}, "most"),
    ],
)
def test_claim_names_that_cannot_be_told_are_a_reason(the_pod: dict[str, Any], why: str) -> None:
    got = claim_names(the_pod)
    assert isinstance(got, str) and why in got


def test_the_allocation_is_read_only_for_the_pod_it_is_reserved_for() -> None:
    c = claim(["gpu-0-mig-1g10gb-19-0", "gpu-3"])
    expected = (
        Device("gpu.nvidia.com", "n1", "gpu-0-mig-1g10gb-19-0"),
        Device("gpu.nvidia.com", "n1", "gpu-3"),
    )
    assert allocated(c, "u-1") == expected
    assert allocated(c, None) == expected  # no uid to check against
    assert allocated(c, "u-2") == "not reserved for this pod"
    assert allocated({"status": {}}, "u-1") == "not allocated"
    assert allocated({}, None) == "not allocated"


@pytest.mark.parametrize(
    "results",
    [
        "gpu-0",
        [{"driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0"}] * (MAX_RESULTS + 1),
        [{"driver": "gpu.nvidia.com", "pool": "n1"}],
        [{"driver": "gpu.nvidia.com", "pool": "n1", "device": "x" * 254}],
        [{"driver": 7, "pool": "n1", "device": "gpu-0"}],
        ["gpu-0"],
    ],
)
def test_a_hostile_allocation_is_a_reason_never_a_crash(results: Any) -> None:
    c = {"status": {"allocation": {"devices": {"results": results}}}}
    assert isinstance(allocated(c, None), str)


def test_hostile_statuses_and_reservations_are_a_reason_never_a_crash() -> None:
    """Shapes a real API server would not serve, but an object read from the cluster is input:
    a status list that is a number, a reservation whose uid is a list (unhashable) or a
    number. Each is an answer (a reason, or "not reserved"), never a TypeError out of the
    drain step (which then fails every pass and leaves the node cordoned in Draining)."""
    odd = pod(gpu="p-gpu")
    odd["status"]["resourceClaimStatuses"] = 5
    assert "no ResourceClaim name" in str(claim_names(odd))
    for uid in (["u-1"], {"u": 1}, 7):
        c = claim(["gpu-0"])
        c["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": uid}]
        assert allocated(c, "u-1") == "not reserved for this pod"
