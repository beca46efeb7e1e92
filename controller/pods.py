"""Which pods block a MIG reconfiguration: the ones using GPUs, except DaemonSet pods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"


def is_gpu_resource(name: str) -> bool:
    return name == GPU_RESOURCE or name.startswith(MIG_RESOURCE_PREFIX)


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


def blocking(pod: Mapping[str, Any]) -> bool:
    """A pod that must be gone before the node's GPUs can be repartitioned."""
    return uses_gpu(pod) and not is_daemonset_pod(pod) and not finished(pod)


def ref(pod: Mapping[str, Any]) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))
