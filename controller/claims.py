"""Which devices a pod holds through DRA: its ResourceClaims' allocation, read and checked.

A pod names its claims in ``spec.resourceClaims``: directly (``resourceClaimName``) or through a
template, whose generated claim's name the kubelet reads from ``status.resourceClaimStatuses``
(k8s.io/api core/v1 types.go:4516-4597, :5452, vendored at kubernetes-sigs/dra-driver-nvidia-gpu@
95932046). The kube-scheduler's DRA plugin writes the allocation into the claim's
``status.allocation.devices.results``: one ``{request, driver, pool, device}`` per device, at
most 32 (k8s.io/api resource/v1 types.go:1730-1792, AllocationResultsMaxSize :1749).

Everything here is input from the cluster: a claim that cannot be read, is not allocated, or is
not shaped like that is reported as a reason (the caller then keeps draining the pod), never
raised as anything but the controller's own errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.errors import PermanentError
from controller.kube import Kube

MAX_CLAIMS = 32  # per pod (a pod spec may list more; past this the pod counts as unknown)
MAX_RESULTS = 32  # resource/v1 AllocationResultsMaxSize (types.go:1749)
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


@dataclass(frozen=True)
class Device:
    driver: str
    pool: str
    device: str


@dataclass(frozen=True)
class Held:
    """The devices a pod holds, or why that cannot be told."""

    devices: tuple[Device, ...]
    unknown: str | None  # None: ``devices`` is all of them


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def claim_names(pod: Mapping[str, Any]) -> list[str] | str:
    """The names of the ResourceClaims the pod uses, or why they cannot be told."""
    spec = _mapping(pod.get("spec"))
    status = _mapping(pod.get("status"))
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
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            return f"claim {c['name'][:64]!r}: no ResourceClaim name in the pod's status yet"
        out.append(name)
    return out


def allocated(claim: Mapping[str, Any], pod_uid: str | None) -> tuple[Device, ...] | str:
    """The devices allocated to ``claim``, or why they cannot be told. With ``pod_uid`` the claim
    must be reserved for that pod ("a Pod which references a ResourceClaim which is not reserved
    for that Pod will not be started", resource/v1 types.go:1613-1615): else it is not the claim
    the running pod uses."""
    status = claim.get("status")
    allocation = status.get("allocation") if isinstance(status, Mapping) else None
    if not isinstance(allocation, Mapping):
        return "not allocated"
    if pod_uid is not None:
        reserved = status.get("reservedFor") if isinstance(status, Mapping) else None
        listed = reserved if isinstance(reserved, list) else []
        uids = {r["uid"] for r in listed[:256] if isinstance(r, Mapping) and isinstance(r.get("uid"), str)}
        if pod_uid not in uids:
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


def held(kube: Kube, pod: Mapping[str, Any]) -> Held:
    """Every device ``pod`` holds through its ResourceClaims (read one by one from the API).

    A claim that is gone, forbidden, too big or not JSON (PermanentError) makes the answer
    unknown; a TemporaryError (the API server busy or away) is raised: the caller retries.
    """
    names = claim_names(pod)
    if isinstance(names, str):
        return Held((), names)
    meta = _mapping(pod.get("metadata"))
    namespace = meta.get("namespace")
    uid = meta.get("uid") if isinstance(meta.get("uid"), str) else None
    if not isinstance(namespace, str) or not _NAME.fullmatch(namespace):
        return Held((), "the pod has no namespace")
    found: list[Device] = []
    for name in names:
        try:
            claim = kube.get_resource_claim(namespace, name)
        except PermanentError as exc:  # NotFoundError included
            return Held((), f"ResourceClaim {namespace}/{name}: {str(exc)[:200]}")
        got = allocated(claim, uid)
        if isinstance(got, str):
            return Held((), f"ResourceClaim {namespace}/{name}: {got}")
        found.extend(got)
    return Held(tuple(found), None)


class HeldCache:
    """What each running pod's claims hold, read once per pod.

    A Draining node is looked at every ``--poll-interval`` (2 s) for up to ``--drain-grace-timeout``
    (30 min): without this, every pass would read every claim again. While a pod runs its claims'
    allocations do not change: "a claim that is in use or might be in use because it has been
    reserved must not get deallocated" (k8s.io/api resource/v1 types.go:1613-1617, ReservedFor,
    vendored at kubernetes-sigs/dra-driver-nvidia-gpu@95932046). So a pod's devices, once read,
    are kept by its UID and claim names; an answer that says nothing (a claim missing or
    unreadable) is not kept and is read again the next pass. At most ``limit`` pods are
    remembered (then it starts over).
    """

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._held: dict[tuple[str, tuple[str, ...]], tuple[Device, ...]] = {}

    def held(self, kube: Kube, pod: Mapping[str, Any]) -> Held:
        uid = _mapping(pod.get("metadata")).get("uid")
        names = claim_names(pod)
        key = (uid, tuple(names)) if isinstance(uid, str) and uid and isinstance(names, list) else None
        if key is not None and key in self._held:
            return Held(self._held[key], None)
        found = held(kube, pod)
        if key is not None and found.unknown is None:
            if len(self._held) >= self.limit:
                self._held.clear()
            self._held[key] = found.devices
        return found
