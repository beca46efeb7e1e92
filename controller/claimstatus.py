"""A pod's ResourceClaim names and a claim's allocated devices, read from their JSON (pure).

A pod names its claims in ``spec.resourceClaims``: directly (``resourceClaimName``) or through a
template, whose generated claim's name the kubelet reads from ``status.resourceClaimStatuses``
(k8s.io/api core/v1 types.go:4516-4597, :5452, vendored at kubernetes-sigs/dra-driver-nvidia-gpu@
95932046). The kube-scheduler's DRA plugin writes the allocation into the claim's
``status.allocation.devices.results``: one ``{request, driver, pool, device}`` per device, at
most 32 (k8s.io/api resource/v1 types.go:1730-1792, AllocationResultsMaxSize :1749).

Shared by the controller (:mod:`controller.claims`, which reads the claims from the API server while
a node drains) and ``migc recommend`` (compiler/observe, which reads them from a snapshot or a
list call to price a change per GPU): one reading of the same objects. Everything here is input
from the cluster: what is not shaped as the API says is a reason (a string), never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_CLAIMS = 32  # per pod (a pod spec may list more; past this the pod counts as unknown)
MAX_RESULTS = 32  # resource/v1 AllocationResultsMaxSize (types.go:1749)
NOT_ALLOCATED = "not allocated"  # what :func:`allocated` says of a claim with no status.allocation
OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


@dataclass(frozen=True)
class Device:
    driver: str
    pool: str
    device: str


def as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def claim_names(pod: Mapping[str, Any]) -> list[str] | str:
    """The names of the ResourceClaims the pod uses, or why they cannot be told."""
    spec = as_mapping(pod.get("spec"))
    status = as_mapping(pod.get("status"))
    listed = spec.get("resourceClaims") or []
    if not isinstance(listed, list) or len(listed) > MAX_CLAIMS:
        return f"spec.resourceClaims is not a list of at most {MAX_CLAIMS}"
    generated: dict[str, str | None] = {}
    statuses = status.get("resourceClaimStatuses")
    for s in statuses[:MAX_CLAIMS] if isinstance(statuses, list) else []:
        if isinstance(s, Mapping) and isinstance(s.get("name"), str):
            name = s.get("resourceClaimName")
            generated[s["name"]] = name if isinstance(name, str) else None
    out = []
    for c in listed:
        if not isinstance(c, Mapping) or not isinstance(c.get("name"), str):
            return "a spec.resourceClaims entry without a name"
        direct = c.get("resourceClaimName")
        name = direct if isinstance(direct, str) else generated.get(c["name"])
        if not isinstance(name, str) or not OBJECT_NAME.fullmatch(name):
            return f"claim {c['name'][:64]!r}: no ResourceClaim name in the pod's status yet"
        out.append(name)
    return out


def reserved_uids(claim: Mapping[str, Any]) -> frozenset[str]:
    """The pod UIDs ``claim`` is reserved for (``status.reservedFor``, at most 256 entries read:
    ResourceClaimReservedForMaxSize)."""
    reserved = as_mapping(claim.get("status")).get("reservedFor")
    listed = reserved if isinstance(reserved, list) else []
    return frozenset(
        r["uid"] for r in listed[:256] if isinstance(r, Mapping) and isinstance(r.get("uid"), str)
    )


def allocated(claim: Mapping[str, Any], pod_uid: str | None) -> tuple[Device, ...] | str:
    """The devices allocated to ``claim``, or why they cannot be told. With ``pod_uid`` the claim
    must be reserved for that pod ("a Pod which references a ResourceClaim which is not reserved
    for that Pod will not be started", resource/v1 types.go:1613-1615): else it is not the claim
    the running pod uses."""
    status = claim.get("status")
    allocation = status.get("allocation") if isinstance(status, Mapping) else None
    if not isinstance(allocation, Mapping):
        return NOT_ALLOCATED
    if pod_uid is not None and pod_uid not in reserved_uids(claim):
        return "not reserved for this pod"
    devices = allocation.get("devices")
    results = devices.get("results") if isinstance(devices, Mapping) else None
    if not isinstance(results, list) or len(results) > MAX_RESULTS:
        return f"status.allocation.devices.results is not a list of at most {MAX_RESULTS}"
    out = []
    for r in results:
        fields = [r.get(k) if isinstance(r, Mapping) else None for k in ("driver", "pool", "device")]
        if not all(isinstance(f, str) and 0 < len(f) <= 253 for f in fields):
            return "an allocation result without driver, pool and device"
        out.append(Device(*(str(f) for f in fields)))
    return tuple(out)
