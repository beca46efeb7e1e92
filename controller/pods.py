"""Which pods block a MIG reconfiguration: the ones using GPUs, except DaemonSet pods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"
# the device plugin's name for a shared (time-sliced or MPS) GPU when its config sets renameByDefault
# (NVIDIA/k8s-device-plugin@1b826acc api/config/v1/consts.go:26 DefaultSharedResourceNameSuffix):
# such a pod holds a GPU as much as one asking nvidia.com/gpu (MIG ones renamed so start nvidia.com/mig-)
SHARED_GPU_RESOURCE = GPU_RESOURCE + ".shared"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"


def is_gpu_resource(name: str) -> bool:
    return name in (GPU_RESOURCE, SHARED_GPU_RESOURCE) or name.startswith(MIG_RESOURCE_PREFIX)


def uses_gpu(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = c.get("resources") or {}
        for kind in ("requests", "limits"):
            if any(is_gpu_resource(k) for k in (res.get(kind) or {})):
                return True
    return False


def is_daemonset_pod(pod: Mapping[str, Any]) -> bool:
    # DaemonSet pods would be recreated on the node at once (they tolerate unschedulable), and the
    # GPU Operator's own operands are stopped by the MIG manager itself.
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("kind") == "DaemonSet" for r in refs)


def finished(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def claims_devices(pod: Mapping[str, Any]) -> bool:
    """Whether the pod asks for devices through DRA (``spec.resourceClaims``): on a DRA node that
    is how a pod holds a GPU or a MIG device; nothing is in its resource limits then."""
    claims = (pod.get("spec") or {}).get("resourceClaims")
    return isinstance(claims, list) and len(claims) > 0


def blocking(pod: Mapping[str, Any], *, dra: bool = False) -> bool:
    """A pod that must be gone before the node's GPUs can be repartitioned. On a DRA node
    (``dra``) a pod with any ResourceClaim counts: the controller reads no ResourceClaims, so it
    cannot tell a GPU claim from another driver's, and drains both (the conservative choice)."""
    holds = uses_gpu(pod) or (dra and claims_devices(pod))
    return holds and not is_daemonset_pod(pod) and not finished(pod)


# The MIG manager stops third-party DaemonSet pods only through this nodeSelector key: it sets the
# node's label to paused-for-mig-change and waits for every DaemonSet pod on the node whose
# nodeSelector has the key (NVIDIA/mig-parted@bd7160f4 pkg/mig/reconfigure/reconfigure.go:381-383,
# :412-415, :648-673).
GPU_CLIENT_KEY = "nvidia.com/gpu.deploy.client"


def unmanaged_gpu_daemon(pod: Mapping[str, Any]) -> bool:
    """A DaemonSet pod holding GPUs that neither a drain (it would come straight back: daemon
    pods tolerate the cordon) nor the MIG manager (no ``nvidia.com/gpu.deploy.client`` in its
    nodeSelector) stops: the MIG manager's apply fails on it ("In use by another client")."""
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return uses_gpu(pod) and is_daemonset_pod(pod) and not finished(pod) and GPU_CLIENT_KEY not in selector


def ref(pod: Mapping[str, Any]) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))
