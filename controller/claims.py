"""Which devices a pod holds through DRA: its ResourceClaims, read from the API server and checked.

How a pod names its claims and what a claim's allocation says is read by
:mod:`controller.claimstatus` (shared with the compiler). Everything here is input from the cluster:
a claim that cannot be read, is not allocated, or is not shaped like that is reported as a reason
(the caller then keeps draining the pod), never raised as anything but the controller's own errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.claimstatus import (
    MAX_CLAIMS,
    MAX_RESULTS,
    OBJECT_NAME,
    Device,
    allocated,
    as_mapping,
    claim_names,
)
from controller.errors import PermanentError
from controller.kube import Kube

__all__ = ["MAX_CLAIMS", "MAX_RESULTS", "Device", "Held", "HeldCache", "allocated", "claim_names", "held"]


@dataclass(frozen=True)
class Held:
    """The devices a pod holds, or why that cannot be told."""

    devices: tuple[Device, ...]
    unknown: str | None  # None: ``devices`` is all of them


def held(kube: Kube, pod: Mapping[str, Any]) -> Held:
    """Every device ``pod`` holds through its ResourceClaims (read one by one from the API).

    A claim that is gone, forbidden, too big or not JSON (PermanentError) makes the answer
    unknown; a TemporaryError (the API server busy or away) is raised: the caller retries.
    """
    names = claim_names(pod)
    if isinstance(names, str):
        return Held((), names)
    meta = as_mapping(pod.get("metadata"))
    namespace = meta.get("namespace")
    uid = meta.get("uid") if isinstance(meta.get("uid"), str) else None
    if not isinstance(namespace, str) or not OBJECT_NAME.fullmatch(namespace):
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
        uid = as_mapping(pod.get("metadata")).get("uid")
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
