"""A cluster consistent with a compiled NodeAssignment, as `kubectl get pods,nodes -A -o json` shows it.

Used by the ``migc status`` tests (snapshot files and the API emulator). Nodes carry what GPU
Feature Discovery, the MIG manager and the device plugin set once a config is applied
(cluster-behaviour.md): ``nvidia.com/gpu.product``, ``nvidia.com/gpu.count``,
``nvidia.com/mig.config`` with ``nvidia.com/mig.config.state=success`` on MIG-capable nodes (on nodes
without MIG the controller's ``migc.dev/applied-config``), and allocatable equal to the config's
resources (mixed strategy: ``nvidia.com/mig-<profile>``, ``+`` written as ``.``).

Pods: every resource of every node is allocated but one unit (a single unit is allocated), one pod
per unit, in namespaces of the tenants that use that resource in examples/prod.

The command-line tests of ``migc status`` also take their argv (:func:`status_argv`), snapshot files
(:func:`write_snapshot`) and kubeconfig (:func:`kubeconfig`) from here.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
NAMESPACES = {
    "nvidia.com/mig-1g.10gb": ("search", "fraud"),
    "nvidia.com/mig-1g.10gb.me": ("speech",),
    "nvidia.com/mig-1g.20gb": ("fraud",),
    "nvidia.com/mig-2g.20gb": ("search", "speech"),
    "nvidia.com/mig-3g.40gb": ("recsys",),
    "nvidia.com/mig-4g.40gb": ("recsys",),
    "nvidia.com/mig-7g.80gb": ("research",),
    "nvidia.com/mig-2g.35gb": ("speech",),
    "nvidia.com/mig-3g.71gb": ("recsys",),
    "nvidia.com/mig-7g.141gb": ("genai",),
    "nvidia.com/gpu": ("genai", "research"),
}
PRODUCTS = {
    "a100": "NVIDIA-A100-SXM4-80GB",
    "h100": "NVIDIA-H100-80GB-HBM3",
    "h200": "NVIDIA-H200",
    "l40s": "NVIDIA-L40S",
}
CREATED = "2026-12-01T05:00:00Z"
OBSERVED = "2026-12-01T06:00:00Z"  # the --now the command-line tests observe the fleet at


def prod_assignment() -> dict[str, Any]:
    path = ROOT / "output/prod-east/migc-system/configmap-migc-assignment.yaml"
    doc: dict[str, Any] = json.loads(yaml.safe_load(path.read_text())["data"]["assignment.json"])
    return doc


def node_names(doc: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, str]]]:
    """Node → (pool, config, extra labels); selector pools get nodes named ``<pool>-node-NN``."""
    out: dict[str, tuple[str, str, dict[str, str]]] = {}
    for pool in doc["pools"]:
        for n in pool["nodes"]:
            out[n["name"]] = (pool["name"], n["config"], {})
        i = 1
        for cfg, count in sorted((pool.get("configCounts") or {}).items()):
            for _ in range(count):
                out[f"gpu-{pool['name']}-use1a-{i:02d}"] = (pool["name"], cfg, dict(pool["selector"]))
                i += 1
    return out


def node(name: str, pool: str, config: str, doc: dict[str, Any], extra: dict[str, str]) -> dict[str, Any]:
    cfg = doc["configs"][config]
    labels = {
        "kubernetes.io/hostname": name,
        "nvidia.com/gpu.product": PRODUCTS[pool]
        + ("-SHARED" if cfg["devicePluginConfig"].startswith("migc-time") else ""),
        "nvidia.com/gpu.count": str(len(cfg["devices"])),
        "nvidia.com/device-plugin.config": cfg["devicePluginConfig"],
        **extra,
    }
    annotations: dict[str, str] = {"migc.dev/phase": "Idle"}
    if pool == "l40s":
        labels["nvidia.com/mig.capable"] = "false"
        annotations["migc.dev/applied-config"] = config
    else:
        labels.update(
            {
                "nvidia.com/mig.capable": "true",
                "nvidia.com/mig.config": config,
                "nvidia.com/mig.config.state": "success",
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": annotations,
            "creationTimestamp": CREATED,
        },
        "spec": {},
        "status": {
            "allocatable": {
                "cpu": "190",
                "memory": "2000Gi",
                "pods": "110",
                **{k: str(v) for k, v in cfg["resources"].items()},
            },
            "capacity": {
                "cpu": "192",
                "memory": "2048Gi",
                "pods": "110",
                **{k: str(v) for k, v in cfg["resources"].items()},
            },
        },
    }


def pod(
    name: str,
    namespace: str,
    resource: str | None,
    count: int = 1,
    *,
    node: str | None = None,
    phase: str | None = None,
    created: str = CREATED,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    limits = {resource: str(count)} if resource else {}
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "registry.example/app:1",
                "resources": {"limits": {**limits, "cpu": "2"}, "requests": {"cpu": "1"}},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "creationTimestamp": created}
    if annotations:
        meta["annotations"] = annotations
    status: dict[str, Any] = {"phase": phase or ("Running" if node else "Pending")}
    if node is None:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def fleet(doc: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole cluster as one ``List`` (what ``kubectl get pods,nodes -A -o json`` prints)."""
    doc = copy.deepcopy(doc or prod_assignment())
    items: list[dict[str, Any]] = []
    for name, (pool, config, extra) in sorted(node_names(doc).items()):
        items.append(node(name, pool, config, doc, extra))
        for resource, n in sorted(doc["configs"][config]["resources"].items()):
            used = n - 1 if n > 1 else n
            spaces = ("research-notebooks",) if pool == "l40s" else NAMESPACES.get(resource, ("default",))
            for i in range(used):
                ns = spaces[i % len(spaces)]
                short = resource.removeprefix("nvidia.com/").replace(".", "-")
                items.append(pod(f"{ns}-{name}-{short}-{i}", ns, resource, node=name))
    items.append(pod("cpu-only", "search", None, node=sorted(node_names(doc))[0]))
    items.append(
        pod(
            "finished", "search", "nvidia.com/mig-1g.10gb", node=sorted(node_names(doc))[0], phase="Succeeded"
        )
    )
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def write_snapshot(path: Path, cluster: dict[str, Any] | None = None) -> Path:
    """``cluster`` (default: :func:`fleet`) written to ``path`` as a snapshot file; returns ``path``."""
    path.write_text(json.dumps(cluster if cluster is not None else fleet()))
    return path


def status_argv(*args: str) -> list[str]:
    """``migc status examples/prod --now OBSERVED ARGS...`` (run from the repository root)."""
    return ["status", "examples/prod", "--now", OBSERVED, *args]


def kubeconfig(server: str) -> str:
    """A kubeconfig for an API server at ``server`` (token auth, one context)."""
    return (
        "apiVersion: v1\nkind: Config\ncurrent-context: emu\n"
        f"clusters: [{{name: emu, cluster: {{server: '{server}'}}}}]\n"
        "users: [{name: emu, user: {token: test}}]\n"
        "contexts: [{name: emu, context: {cluster: emu, user: emu}}]\n"
    )


TOUR_SNAPSHOT = ROOT / "examples" / "snapshots" / "prod-east.json"


def tour_snapshot() -> dict[str, Any]:
    """The snapshot the README's tour reads (``examples/snapshots/prod-east.json``): :func:`fleet` as
    the committed ``output/`` assigns it, plus three search pods pending for a 1g.10gb."""
    cluster = fleet()
    cluster["items"] += [pod(f"search-pending-{i}", "search", "nvidia.com/mig-1g.10gb") for i in range(3)]
    return cluster


def tour_snapshot_text() -> str:
    return json.dumps(tour_snapshot(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    # `python tests/statusfleet.py` rewrites the tour's snapshot after output/ changed
    TOUR_SNAPSHOT.write_text(tour_snapshot_text(), encoding="utf-8")
