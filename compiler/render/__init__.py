"""Render a solved policy into the files Argo CD / Flux sync: ``{relative path: bytes}``.

Per cluster, under ``<cluster>/`` (see docs/ARCHITECTURE.md, "Output contract"):

* ``gpu-operator/`` — the mig-parted ConfigMap (key ``config.yaml``; point the GPU Operator's
  ``migManager.config.name`` at it) and the device-plugin ConfigMap (point ``devicePlugin.config.name``
  at it; nodes select a key with the label ``nvidia.com/device-plugin.config``);
* ``migc-system/`` — the Namespace, the NodeAssignment ConfigMap the controller reads, and the
  CapacityReport ConfigMap (requested and served instances per pool, tenant and workload) that
  ``migc plan`` reads back as the exact "before" (``compiler/render/capacity.py``);
* ``cluster/`` — a PriorityClass per tier; ``kueue/`` — ResourceFlavors (``--with kueue``);
  ``monitoring/`` — Grafana dashboard ConfigMap and PrometheusRule (``--with monitoring``);
* ``tenants/<tenant>/`` — owned Namespaces, per namespace a ResourceQuota, and the tenant's per-pod
  limits as a ValidatingAdmissionPolicy with its binding (``compiler/render/admission.py``);
* ``gpu-operator-settings/`` — Helm values and a ClusterPolicy patch for the GPU Operator (MIG strategy,
  which ConfigMaps to read; ``compiler/render/operator.py``), not objects, so not in the kustomization;
* ``kustomization.yaml`` listing every object file, and ``.migc-index.json`` (file → sha256) that
  the writer uses to prune files a later run no longer generates.

MIG strategy. Every node with MIG enabled gets the device plugin's ``mixed`` strategy, even where
every GPU carries one identical profile and ``single`` would be allowed: under ``single`` a
``1g.10gb`` slice is advertised as ``nvidia.com/gpu``, so a pod asking for ``nvidia.com/mig-1g.10gb``
would not schedule there and a ResourceQuota on ``requests.nvidia.com/gpu`` would count slices as
whole GPUs. One resource name per kind of slice everywhere keeps quotas and requests meaningful.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import yaml

from compiler import __version__
from compiler.catalog import Catalog
from compiler.diagnostics import Diagnostic, make
from compiler.model import Policy
from compiler.render import manifests
from compiler.render.admission import cluster_admission
from compiler.render.capacity import capacity_configmap, capacity_document
from compiler.render.dra import SETTINGS_DIR as DRA_SETTINGS_DIR
from compiler.render.dra import dra_objects
from compiler.render.dra import settings_files as dra_settings_files
from compiler.render.emit import dump_json, dump_yaml, header
from compiler.render.hami import hami_objects
from compiler.render.hints import hint_objects
from compiler.render.kueue import kueue_objects
from compiler.render.monitoring import monitoring_objects
from compiler.render.operator import SETTINGS_DIR, settings_files
from compiler.render.quota import check_quotas
from compiler.render.targets import target_files
from compiler.solve.result import Solution

__all__ = [
    "INDEX_NAME",
    "KUSTOMIZATION",
    "check_quotas",
    "default_source_label",
    "manifest_stream",
    "oversized",
    "render",
]

INDEX_NAME = ".migc-index.json"
KUSTOMIZATION = "kustomization.yaml"

# Kustomize and Argo CD order objects themselves; this order only makes the file list read top-down.
_FOLDER_ORDER = {
    "migc-system": 0, "cluster": 1, "gpu-operator": 2, "hami": 3, "dra": 3, "kueue": 3, "tenants": 4
}


def default_source_label(policy: Policy) -> str:
    return ", ".join(sorted(policy.source_files)) or f"fleet {policy.fleet_name}"


def _file_order(path: str) -> tuple[int, str]:
    return (_FOLDER_ORDER.get(path.split("/", 1)[0], 9), path)


def _is_settings(path: str) -> bool:
    return path.startswith((SETTINGS_DIR + "/", DRA_SETTINGS_DIR + "/"))


def _object_bytes(obj: Mapping[str, Any], banner: str) -> bytes:
    return (banner + dump_yaml(dict(obj))).encode("utf-8")


def render(
    policy: Policy,
    solution: Solution,
    catalog: Catalog,
    *,
    with_kueue: bool = False,
    with_monitoring: bool = False,
    source_label: str | None = None,
    version: str = __version__,
) -> dict[str, bytes]:
    """Every file of the output tree, keyed by path relative to the output root, sorted by path.

    Pure: the same inputs give the same bytes, whatever the input file order or hash seed.
    """
    banner = header(version, source_label if source_label is not None else default_source_label(policy))
    files: dict[str, bytes] = {}
    for cluster in sorted(policy.clusters, key=lambda c: c.name):
        objects: list[tuple[str, dict[str, Any]]] = []
        configs = manifests.collect_configs(cluster, solution, catalog)
        objects.append(manifests.system_namespace())
        assignment = manifests.assignment_document(cluster, solution, configs)
        objects.extend(manifests.assignment_configmaps(assignment))
        objects.append(capacity_configmap(capacity_document(cluster, solution, str(assignment["revision"]))))
        objects.append(manifests.mig_parted_configmap(cluster, configs, catalog))
        objects.append(
            manifests.device_plugin_configmap(cluster, (c.device_plugin_config for c in configs.values()))
        )
        objects.extend(manifests.priority_classes(policy))
        objects.extend(manifests.tenant_objects(policy, cluster))
        objects.extend(cluster_admission(policy, cluster, catalog))
        objects.extend(hami_objects(policy, cluster, solution))  # sharing: hami pools
        objects.extend(dra_objects(policy, cluster, solution, catalog))  # allocation: dra pools
        objects.extend(hint_objects(policy, cluster, catalog))  # Tenant rewriteGpuRequests
        if with_kueue:
            objects.extend(kueue_objects(policy, cluster))
        if with_monitoring:
            objects.extend(monitoring_objects(policy, cluster))
        seen: set[str] = set()
        cluster_files: dict[str, bytes] = {}
        for path, obj in objects:
            if path in seen:
                raise ValueError(f"two objects render to {cluster.name}/{path}")
            seen.add(path)
            cluster_files[path] = _object_bytes(obj, banner)
        ordered = sorted(cluster_files, key=_file_order)
        settings = [*settings_files(cluster), *dra_settings_files(policy, cluster, solution, catalog)]
        for path, usage, doc in settings:
            # Not objects to apply: written next to the tree, left out of the kustomization.
            cluster_files[path] = (banner + f"# {usage}\n" + dump_yaml(doc)).encode("utf-8")
        kustomization = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": ordered,
        }
        cluster_files[KUSTOMIZATION] = _object_bytes(kustomization, banner)
        # patches for the application repositories (Workload.spec.target): beside, never in, the kustomization
        for path, patch in target_files(policy, cluster, solution, with_kueue)[0].items():
            cluster_files[path] = (banner + dump_yaml(patch)).encode("utf-8")
        index = {
            "generator": f"migc {version}",
            "source": source_label if source_label is not None else default_source_label(policy),
            "files": {p: hashlib.sha256(b).hexdigest() for p, b in sorted(cluster_files.items())},
        }
        cluster_files[INDEX_NAME] = dump_json(index).encode("utf-8")
        for path, data in cluster_files.items():
            files[f"{cluster.name}/{path}"] = data
    return dict(sorted(files.items()))


CONFIGMAP_DATA_LIMIT = 1024 * 1024  # bytes of data the API server accepts in one ConfigMap


def oversized(files: Mapping[str, bytes]) -> list[Diagnostic]:
    """MIGC306 for every rendered ConfigMap whose data exceeds what the API server stores."""
    out = []
    for path, data in files.items():
        if "/configmap-" not in path or len(data) <= CONFIGMAP_DATA_LIMIT:
            continue
        obj = yaml.safe_load(data)
        size = sum(len(str(v).encode("utf-8")) for v in (obj.get("data") or {}).values())
        if size > CONFIGMAP_DATA_LIMIT:
            out.append(
                make(
                    "MIGC306",
                    f"{path}: ConfigMap data is {size} bytes, above the API server's {CONFIGMAP_DATA_LIMIT}",
                    file=path,
                )
            )
    return out


def manifest_stream(files: Mapping[str, bytes], cluster: str | None = None) -> bytes:
    """Every object file as one multi-document YAML stream (Argo CD config management plugins).

    The kustomization and the index are not Kubernetes objects and are left out; documents follow
    the kustomization's order, cluster by cluster.
    """
    docs: list[bytes] = []
    clusters = sorted({p.split("/", 1)[0] for p in files})
    for name in clusters:
        if cluster is not None and name != cluster:
            continue
        paths = [p.split("/", 1)[1] for p in files if p.startswith(name + "/")]
        objects = (
            p
            for p in paths
            if p not in (KUSTOMIZATION, INDEX_NAME) and not _is_settings(p) and not p.startswith("patches/")
        )
        for rel in sorted(objects, key=_file_order):
            docs.append(files[f"{name}/{rel}"])
    return b"---\n".join(docs)
