"""Cluster snapshots (``kubectl get pods -A -o json``) and the GPU pods a rollout evicts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from compiler.diagnostics import Diagnostic, make
from compiler.plan.data import Eviction


class SnapshotError(ValueError):
    pass


def parse_snapshot(text: str) -> list[dict[str, Any]]:
    """Pods from ``kubectl get pods -A -o json`` or ``{"pods": [{namespace, name, node, resources}]}``.

    Returns ``[{"namespace", "name", "node", "resources": {name: count}}]`` for pods that hold GPU
    resources and have not finished.
    """
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SnapshotError(f"not JSON: {exc}") from exc
    out: list[dict[str, Any]] = []
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        for item in data["items"]:
            if not isinstance(item, dict):
                continue
            meta = item.get("metadata") or {}
            spec = item.get("spec") or {}
            phase = (item.get("status") or {}).get("phase", "")
            if phase in ("Succeeded", "Failed") or not spec.get("nodeName"):
                continue
            resources: dict[str, int] = {}
            for container in spec.get("containers") or []:
                res = container.get("resources") or {}
                amounts = {**(res.get("requests") or {}), **(res.get("limits") or {})}
                for name, value in amounts.items():
                    if str(name).startswith("nvidia.com/"):
                        try:
                            resources[name] = resources.get(name, 0) + int(str(value))
                        except ValueError:
                            continue
            if resources:
                out.append(
                    {
                        "namespace": str(meta.get("namespace", "")),
                        "name": str(meta.get("name", "")),
                        "node": str(spec["nodeName"]),
                        "resources": resources,
                    }
                )
        return out
    if isinstance(data, dict) and isinstance(data.get("pods"), list):
        for pod in data["pods"]:
            if not isinstance(pod, dict) or "node" not in pod or "name" not in pod:
                raise SnapshotError("every entry of 'pods' needs 'name' and 'node'")
            resources = {
                str(k): int(v)
                for k, v in (pod.get("resources") or {}).items()
                if str(k).startswith("nvidia.com/")
            }
            if resources:
                out.append(
                    {
                        "namespace": str(pod.get("namespace", "")),
                        "name": str(pod["name"]),
                        "node": str(pod["node"]),
                        "resources": resources,
                    }
                )
        return out
    raise SnapshotError("expected a Kubernetes List with 'items' or an object with 'pods'")


def evictions_on(pods: Iterable[Mapping[str, Any]], changed: set[tuple[str, str]]) -> tuple[Eviction, ...]:
    by_node: dict[str, str] = {}
    for cluster, node in changed:
        by_node.setdefault(node, cluster)
    out = []
    for pod in pods:
        node = str(pod.get("node", ""))
        if node in by_node:
            res = pod.get("resources") or {}
            out.append(
                Eviction(
                    by_node[node],
                    node,
                    str(pod.get("namespace", "")),
                    str(pod.get("name", "")),
                    tuple(sorted((str(k), int(v)) for k, v in res.items())),
                )
            )
    return tuple(sorted(out, key=lambda e: (e.cluster, e.node, e.namespace, e.pod)))


def snapshot_diagnostic(path: str, exc: Exception) -> Diagnostic:
    return make("MIGC304", f"cannot read the cluster snapshot: {exc}", file=path)
