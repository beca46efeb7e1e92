"""Pods that ask for GPUs through DRA ResourceClaims (``resource.k8s.io/v1``), read at the edge.

On a DRA pool a pod asks for its GPU in a ResourceClaim, not in its containers' limits (docs/dra.md):
migc renders one DeviceClass per MIG profile, ``mig-<profile>.migc.dev``, and whole GPUs use the
driver's ``gpu.nvidia.com`` (compiler/render/dra.py ``class_name``). Without reading the claims,
``migc recommend`` would not see that demand at all, nor know which GPU a running pod holds.

What a claim says (kubernetes/api@10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2 ``resource/v1/types.go``):

* ``spec.devices.requests[]`` (:1207, at most ``DeviceRequestsMaxSize`` = 32, :1236): each either
  ``exactly`` (:1277; ``deviceClassName`` :1320, ``allocationMode`` :1354 — ExactCount, the
  default, or All — and ``count`` :1361, default 1) or ``firstAvailable`` (:1302, at most
  ``FirstAvailableDeviceRequestMaxSize`` = 8, :1566): sub-requests the scheduler tries in order.
  A ``firstAvailable`` request counts as its first alternative until it is allocated, then as the
  one the scheduler chose (a result's ``request`` is ``<request>/<subrequest>``, :2041-2050); the
  alternatives' profiles are the pod's profile preference (what ``migc.dev/profile-preference``
  says on a device-plugin pod).
  ``All`` asks for every matching device of a pool: no count can be told, so the request is left
  out with a MIGC402 warning; an allocation mode the API does not define is left out the same way
  ("Clients must refuse to handle requests with unknown modes", :1350).
* ``status.allocation.devices.results[]`` and ``status.reservedFor[]``: the devices a running pod
  holds (:mod:`controller.claimstatus`, the reading the controller's per-GPU drain uses too).
* A claim is one allocation (``reservedFor`` lists every pod allowed to use it, at most 256,
  :1902-1920): one that several pods name is their demand once, counted by one of them
  (:meth:`Claims.share`), and what it asks for is read once per claim, its warnings said once.

A request for a class migc does not know (another driver's, or the driver's generic
``mig.nvidia.com`` whose profile sits in a CEL selector) is not GPU demand migc can size: the
generic MIG class is reported once (MIGC402), any other class is not a GPU's. Everything is bounded
(requests, alternatives, counts) and checked; a malformed claim is a warning, never an exception.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from compiler.catalog import load_catalog
from compiler.diagnostics import Diagnostic, make
from compiler.observe.model import GPU_RESOURCE, resource_of
from compiler.observe.names import valid_name
from controller.claimstatus import (
    MAX_RESULTS,
    NOT_ALLOCATED,
    Device,
    allocated,
    as_mapping,
    claim_names,
    reserved_uids,
)

# the NVIDIA DRA driver's name (compiler/render/dra.py DRIVER, controller/dra.py DRIVER) and the most
# ResourceSlices one node may publish before the controller stops reading (controller/dra.py
# MAX_SLICES); repeated here so that reading a snapshot imports neither the renderer nor the
# controller's jsonschema (tests/unit/compiler/observe/test_dra.py checks they agree)
DRIVER = "gpu.nvidia.com"
MAX_SLICES = 256

Slices = tuple[tuple[str, tuple[Mapping[str, Any], ...]], ...]
"""Per node name (sorted), the ResourceSlices of the NVIDIA DRA driver that name it."""

MAX_REQUESTS = 32  # resource/v1 DeviceRequestsMaxSize (types.go:1236)
MAX_ALTERNATIVES = 8  # resource/v1 FirstAvailableDeviceRequestMaxSize (types.go:1566)
MAX_COUNT = 1024  # instances one request may ask for (parse.MAX_POD_INSTANCES)
GENERIC_MIG_CLASS = "mig.nvidia.com"  # the driver chart's MIG class: its profile is in a selector


@functools.cache
def class_resources() -> Mapping[str, str]:
    """DeviceClass name → the resource name migc counts it as (``nvidia.com/mig-1g.10gb``, …)."""
    from compiler.render.dra import class_name  # the renderer's naming, only once a claim is read

    out = {class_name("gpu"): GPU_RESOURCE}
    for model in load_catalog().models:
        for p in model.profiles:
            out[class_name(p.name)] = resource_of(p.name)
    return out


@dataclass(frozen=True)
class ClaimedGpus:
    """What a pod's ResourceClaims ask for and hold.

    ``requests``: resource → instances; ``preference``: the profiles of a ``firstAvailable`` request in
    the scheduler's order; ``devices``: the devices of :data:`DRIVER` allocated to the pod, None when
    that cannot be told (a claim missing, not allocated, or not reserved for the pod: the controller
    then drains the pod)."""

    requests: Mapping[str, int]
    preference: tuple[str, ...]
    devices: tuple[Device, ...] | None


def _count(spec: Mapping[str, Any], where: str, notes: list[str]) -> int | None:
    """The devices one ``exactly`` request or sub-request asks for (None: not told, noted)."""
    mode = spec.get("allocationMode", "ExactCount") or "ExactCount"
    if mode != "ExactCount":
        notes.append(f"{where}: allocationMode {str(mode)[:32]!r} asks for no count; not counted")
        return None
    count = spec.get("count", 1)
    if count is None:
        count = 1
    if not isinstance(count, int) or isinstance(count, bool) or not 0 < count <= MAX_COUNT:
        notes.append(f"{where}: count {str(count)[:32]!r} is not a whole number 1–{MAX_COUNT}; not counted")
        return None
    return count


def _request(
    req: Mapping[str, Any], where: str, notes: list[str], generic: list[str], chosen: str | None = None
) -> tuple[str, int, tuple[str, ...]] | None:
    """(resource, count, preference) of one device request, or None when it is no GPU request.
    ``chosen``: the sub-request an allocation of a ``firstAvailable`` request got; it is what the
    claim holds (its first alternative otherwise, or when no alternative has that name)."""
    known = class_resources()
    if isinstance(req.get("exactly"), Mapping):
        alternatives = [req["exactly"]]
    elif isinstance(req.get("firstAvailable"), list):
        alternatives = [a for a in req["firstAvailable"][: MAX_ALTERNATIVES + 1] if isinstance(a, Mapping)]
        if len(alternatives) > MAX_ALTERNATIVES:
            notes.append(f"{where}: more than {MAX_ALTERNATIVES} firstAvailable alternatives; not counted")
            return None
    else:
        return None
    classes = [a.get("deviceClassName") for a in alternatives]
    if any(c == GENERIC_MIG_CLASS for c in classes):
        generic.append(where)
    resources = [known.get(c) if isinstance(c, str) else None for c in classes]
    names = [a.get("name") for a in alternatives]
    pick = names.index(chosen) if chosen is not None and len(alternatives) > 1 and chosen in names else 0
    resource = resources[pick] if resources else None
    if resource is None:
        return None  # not a GPU class migc renders (the alternative counted is not a GPU's)
    count = _count(alternatives[pick], where, notes)
    if count is None:
        return None
    preference = tuple(r.removeprefix("nvidia.com/mig-") for r in resources if r and r != GPU_RESOURCE)
    return resource, count, preference if len(alternatives) > 1 else ()


def _chosen(claim: Mapping[str, Any]) -> dict[str, str]:
    """Request name → the sub-request its allocation got, from ``status.allocation.devices.results``
    (each result's ``request`` is ``<main request>/<subrequest>`` for a ``firstAvailable`` one,
    kubernetes/api@10b39a39 resource/v1/types.go:2041-2050); empty when not allocated or unreadable."""
    status = as_mapping(claim.get("status"))
    results = as_mapping(as_mapping(status.get("allocation")).get("devices")).get("results")
    out: dict[str, str] = {}
    for r in results[:MAX_RESULTS] if isinstance(results, list) else []:
        name = r.get("request") if isinstance(r, Mapping) else None
        if isinstance(name, str) and name.count("/") == 1:
            main, sub = name.split("/")
            out.setdefault(main, sub)
    return out


def claim_requests(
    claim: Mapping[str, Any], where: str, notes: list[str], generic: list[str]
) -> tuple[dict[str, int], tuple[str, ...]]:
    """The GPU instances one ResourceClaim asks for, and the profile preference of its first
    ``firstAvailable`` request (``notes``: MIGC402 texts; ``generic``: where the driver's generic
    MIG class is used)."""
    devices = as_mapping(as_mapping(claim.get("spec")).get("devices"))
    listed = devices.get("requests")
    if not isinstance(listed, list):
        return {}, ()
    if len(listed) > MAX_REQUESTS:
        notes.append(f"{where}: more than {MAX_REQUESTS} device requests; not counted")
        return {}, ()
    out: dict[str, int] = {}
    preference: tuple[str, ...] = ()
    chosen = _chosen(claim)
    for i, req in enumerate(listed):
        if not isinstance(req, Mapping):
            continue
        name = req.get("name")
        picked = chosen.get(name) if isinstance(name, str) else None
        got = _request(req, f"{where} request {i}", notes, generic, picked)
        if got is None:
            continue
        resource, count, pref = got
        out[resource] = out.get(resource, 0) + count
        preference = preference or pref
    return out, preference


def pod_claims(pod: Mapping[str, Any], claims: Claims, file: str = "") -> ClaimedGpus | None:
    """What ``pod``'s ResourceClaims ask for and hold; None when it names no claim.

    A claim is one allocation whoever uses it: named twice by the pod it is asked for once, and one
    several pods name counts as demand for one of them only (:meth:`Claims.share`); the devices it
    holds are every user's (the controller drains each pod reserved on a changing GPU)."""
    listed = as_mapping(pod.get("spec")).get("resourceClaims")
    if not listed:
        return None
    names = claim_names(pod)
    if isinstance(names, str):
        return ClaimedGpus({}, (), None)
    meta = as_mapping(pod.get("metadata"))
    namespace = str(meta.get("namespace") or "default")
    me = (namespace, str(meta.get("name")))
    uid = meta.get("uid") if isinstance(meta.get("uid"), str) else None
    requests: dict[str, int] = {}
    preference: tuple[str, ...] = ()
    devices: list[Device] = []
    known = True  # every claim read and held by the pod
    for name in dict.fromkeys(names):  # the same claim named twice is one allocation
        key = (namespace, name)
        claim = claims.by_name.get(key)
        if claim is None:
            if known:
                claims.missing(f"pod {me[0]}/{me[1]}", f"ResourceClaim {namespace}/{name}", file)
            known = False
            continue
        if claims.owner.get(key, me) == me:
            asked, pref = claims.asked(key)
            for k, v in asked.items():
                requests[k] = requests.get(k, 0) + v
            preference = preference or pref
        # every claim, a GPU's or not, as the controller reads them (controller/claims.py ``held``):
        # one it cannot read makes what the pod holds unknown, and the pod is drained
        got = claims.held(key, uid)
        if isinstance(got, str):
            known = False
        else:
            devices.extend(d for d in got if d.driver == DRIVER)
    return ClaimedGpus(requests, preference, tuple(devices) if known else None)


class Claims:
    """The ResourceClaims and the NVIDIA driver's ResourceSlices of one observation, as read.

    Claims by (namespace, name), the last copy winning; slices of :data:`DRIVER` per node, at most
    :data:`MAX_SLICES` per node (a node publishing more is a broken or hostile driver:
    its extra slices are left out with a warning, and ``device_gpus`` then maps nothing there)."""

    def __init__(self) -> None:
        self.by_name: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.slices: dict[str, list[Mapping[str, Any]]] = {}
        self.generic: list[str] = []  # where the driver's generic MIG class is asked for
        # the pod (namespace, name) that counts a claim's requests as its demand (:meth:`share`)
        self.owner: dict[tuple[str, str], tuple[str, str]] = {}
        self._over: dict[str, str] = {}  # node → file of the first slice past the bound
        self._files: dict[tuple[str, str], str] = {}
        self._asked: dict[tuple[str, str], tuple[dict[str, int], tuple[str, ...]]] = {}
        self._notes: list[Diagnostic] = []
        self._held: dict[tuple[str, str], tuple[tuple[Device, ...] | str, frozenset[str]]] = {}
        self._missing: tuple[str, str, str] | None = None  # the first pod naming a claim not observed
        self._missing_pods = 0

    def add(self, obj: Mapping[str, Any], file: str, diags: list[Diagnostic]) -> None:
        meta = as_mapping(obj.get("metadata"))
        if obj.get("kind") == "ResourceClaim":
            name, namespace = meta.get("name"), meta.get("namespace") or "default"
            if valid_name(name) and valid_name(namespace, namespace=True):
                self.by_name[(str(namespace), str(name))] = obj
                self._files[(str(namespace), str(name))] = file
            else:
                diags.append(make("MIGC402", "a ResourceClaim without a valid name was skipped", file=file))
            return
        spec = as_mapping(obj.get("spec"))
        node = spec.get("nodeName")
        if spec.get("driver") != DRIVER or not valid_name(node):
            return  # another driver's devices, or a slice of no node: no GPU of a node migc lays out
        listed = self.slices.setdefault(str(node), [])
        if len(listed) >= MAX_SLICES:
            self._over.setdefault(str(node), file)
            return
        listed.append(obj)

    def asked(self, key: tuple[str, str]) -> tuple[dict[str, int], tuple[str, ...]]:
        """What the claim ``key`` (observed) asks for (:func:`claim_requests`), read once however many
        pods name it: its MIGC402 notes are said once, and the work stays one pass over the claims."""
        got = self._asked.get(key)
        if got is None:
            notes: list[str] = []
            got = claim_requests(self.by_name[key], f"ResourceClaim {key[0]}/{key[1]}", notes, self.generic)
            self._notes.extend(make("MIGC402", n, file=self._files[key]) for n in notes)
            self._asked[key] = got
        return got

    def held(self, key: tuple[str, str], pod_uid: str | None) -> tuple[Device, ...] | str:
        """:func:`controller.claimstatus.allocated` of the claim ``key`` (observed) for the pod
        ``pod_uid``, the claim read once however many pods name it (one reserved for 256 pods and
        named by many more would otherwise read its ``reservedFor`` once per pod)."""
        got = self._held.get(key)
        if got is None:
            claim = self.by_name[key]
            got = self._held[key] = (allocated(claim, None), reserved_uids(claim))
        devices, reserved = got
        if devices == NOT_ALLOCATED or pod_uid is None or pod_uid in reserved:
            return devices
        return "not reserved for this pod"

    def missing(self, pod: str, claim: str, file: str) -> None:
        """``pod`` names ``claim``, which the observation does not hold (said once, with a count)."""
        self._missing = self._missing or (pod, claim, file)
        self._missing_pods += 1

    def share(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """Which pod counts each claim's requests as its demand. A claim several pods name (directly,
        ``resourceClaimName``) is allocated once and its devices shared by every pod reserved on it
        (kubernetes/api@10b39a39 resource/v1/types.go:1902-1920): counted once, by a running pod
        naming it if there is one (the allocation exists: running demand), else by the first pod in
        namespace/name order. Pods :func:`compiler.observe.parse.parse_pod` leaves out (finished, or
        not named as the API admits) count nothing."""
        best: dict[tuple[str, str], tuple[bool, str, str]] = {}
        for pod in pods:
            meta, spec = as_mapping(pod.get("metadata")), as_mapping(pod.get("spec"))
            name, namespace = meta.get("name"), meta.get("namespace") or "default"
            node = spec.get("nodeName")
            if not valid_name(name) or not valid_name(namespace, namespace=True):
                continue
            if node and not valid_name(node):
                continue
            if as_mapping(pod.get("status")).get("phase") in ("Succeeded", "Failed"):
                continue
            names = claim_names(pod)
            if isinstance(names, str):
                continue
            rank = (not node, str(namespace), str(name))
            for claim in names:
                key = (str(namespace), claim)
                if key not in best or rank < best[key]:
                    best[key] = rank
        self.owner = {key: (ns, name) for key, (_, ns, name) in best.items()}

    def diagnostics(self) -> list[Diagnostic]:
        out = [*self._notes]
        out += [
            make(
                "MIGC402",
                f"node {node}: more than {MAX_SLICES} ResourceSlices of {DRIVER}; the rest left out "
                "(which GPU a pod holds there is not told)",
                file=file,
            )
            for node, file in sorted(self._over.items())
        ]
        if self._missing is not None:
            pod, claim, file = self._missing
            more = f" and {self._missing_pods - 1} more" if self._missing_pods > 1 else ""
            out.append(
                make(
                    "MIGC402",
                    f"{pod}{more} name(s) a ResourceClaim the observation does not hold ({claim}): what "
                    "such a pod asks for through claims is not counted and what it holds is not known (a "
                    "snapshot of a cluster with DRA pools: kubectl get pods,nodes,resourceclaims,"
                    "resourceslices -A -o json)",
                    file=file,
                )
            )
        if self.generic:
            more = f" and {len(self.generic) - 1} more" if len(self.generic) > 1 else ""
            out.append(
                make(
                    "MIGC402",
                    f"{self.generic[0]}{more}: asks for the driver's class {GENERIC_MIG_CLASS}, whose "
                    "profile is in a CEL selector migc does not read; not counted (use the class "
                    "migc renders per profile, mig-<profile>.migc.dev: docs/dra.md)",
                )
            )
        return out

    def per_node(self) -> Slices:
        return tuple((node, tuple(self.slices[node])) for node in sorted(self.slices))
