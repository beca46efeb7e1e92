"""Cluster snapshots (``kubectl get pods -A -o json``) and the GPU pods a rollout evicts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from compiler.diagnostics import Diagnostic, make
from compiler.plan.data import Eviction


class SnapshotError(ValueError):
    """A snapshot that is not one of the two accepted shapes; the message says where."""


def _reject_constant(name: str) -> Any:
    raise SnapshotError(f"not JSON: {name} is not a JSON number")


def _obj(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SnapshotError(f"{where} is not an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SnapshotError(f"{where} is not a list")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise SnapshotError(f"{where} is not a string")
    return value


def _count(value: Any, where: str, *, quantities: bool = True) -> int | None:
    """A GPU count: an integer or a string of one (a Kubernetes quantity such as ``"2"``).

    With ``quantities`` (kubectl's format) another quantity string (``"500m"``) is skipped (None):
    GPUs are whole, Kubernetes rejects such a request anyway; in migc's own format it is an error.
    """
    if isinstance(value, bool):
        raise SnapshotError(f"{where} is not a count")
    if isinstance(value, int):
        count = value
    elif isinstance(value, str) and value.strip().isdigit():
        count = int(value.strip())
    elif isinstance(value, str) and quantities:
        return None
    else:
        raise SnapshotError(f"{where} is not a count")
    if count < 0 or count > 1_000_000:
        raise SnapshotError(f"{where} is out of range")
    return count


def parse_snapshot(text: str | bytes) -> list[dict[str, Any]]:
    """Pods from ``kubectl get pods -A -o json`` or ``{"pods": [{namespace, name, node, resources}]}``.

    Returns ``[{"namespace", "name", "node", "resources": {name: count}}]`` for pods that hold GPU
    resources and have not finished. Anything else raises :class:`SnapshotError` (strict JSON: no
    ``NaN``/``Infinity``; every field of the expected type).
    """
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except SnapshotError:
        raise
    except RecursionError as exc:
        raise SnapshotError("not JSON: nested too deeply") from exc
    except ValueError as exc:
        raise SnapshotError(f"not JSON: {exc}") from exc
    out: list[dict[str, Any]] = []
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        for n, item in enumerate(data["items"]):
            where = f"items[{n}]"
            if not isinstance(item, dict):
                raise SnapshotError(f"{where} is not an object")
            meta = _obj(item.get("metadata"), f"{where}.metadata")
            spec = _obj(item.get("spec"), f"{where}.spec")
            phase = _obj(item.get("status"), f"{where}.status").get("phase", "")
            node = spec.get("nodeName")
            if phase in ("Succeeded", "Failed") or not node:
                continue
            resources: dict[str, int] = {}
            for c, container in enumerate(_list(spec.get("containers"), f"{where}.spec.containers")):
                cwhere = f"{where}.spec.containers[{c}]"
                res = _obj(_obj(container, cwhere).get("resources"), f"{cwhere}.resources")
                amounts = {
                    **_obj(res.get("requests"), f"{cwhere}.resources.requests"),
                    **_obj(res.get("limits"), f"{cwhere}.resources.limits"),
                }
                for name, value in amounts.items():
                    if name.startswith("nvidia.com/"):
                        count = _count(value, f"{cwhere}.resources {name}")
                        if count is not None:
                            resources[name] = resources.get(name, 0) + count
            if resources:
                out.append(
                    {
                        "namespace": _text(meta.get("namespace", ""), f"{where}.metadata.namespace"),
                        "name": _text(meta.get("name", ""), f"{where}.metadata.name"),
                        "node": _text(node, f"{where}.spec.nodeName"),
                        "resources": resources,
                    }
                )
        return out
    if isinstance(data, dict) and isinstance(data.get("pods"), list):
        for n, pod in enumerate(data["pods"]):
            where = f"pods[{n}]"
            if not isinstance(pod, dict) or "node" not in pod or "name" not in pod:
                raise SnapshotError("every entry of 'pods' needs 'name' and 'node'")
            resources = {}
            for name, value in _obj(pod.get("resources"), f"{where}.resources").items():
                if name.startswith("nvidia.com/"):
                    count = _count(value, f"{where}.resources {name}", quantities=False)
                    if count is not None:
                        resources[name] = count
            if resources:
                out.append(
                    {
                        "namespace": _text(pod.get("namespace", ""), f"{where}.namespace"),
                        "name": _text(pod["name"], f"{where}.name"),
                        "node": _text(pod["node"], f"{where}.node"),
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
