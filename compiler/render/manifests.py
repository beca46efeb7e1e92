"""Builders for every object ``migc compile`` renders, as plain dicts in canonical key order.

Each builder returns ``(relative path, object)``; :func:`compiler.render.render` turns them into
bytes. Keys are inserted in the order ``kubectl get -o yaml`` users read (apiVersion, kind,
metadata, then spec/data); where order is free (labels, data keys, lists of names) it is sorted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from compiler.catalog import Catalog, GpuModel
from compiler.model import Cluster, GpuLayout, NodeLayout, NodePool, Policy, Tenant
from compiler.render import names
from compiler.render.emit import FlowList, canonical_json, dump_json, dump_yaml
from compiler.render.quota import hard_limits, quota_counts, resource_name, tenants_in
from compiler.solve.result import PoolResult, Solution

API_VERSION = "migc.dev/v1alpha1"
SYSTEM_NAMESPACE = "migc-system"
ASSIGNMENT_NAME = "migc-assignment"
ASSIGNMENT_KEY = "assignment.json"
MIG_CONFIGMAP = "migc-mig-parted-config"
DEVICE_PLUGIN_CONFIGMAP = "migc-device-plugin-config"
ASSIGNMENT_PATH = f"{SYSTEM_NAMESPACE}/configmap-{ASSIGNMENT_NAME}.yaml"
SHARD_KEY = "nodes.json"
# The assignment ConfigMap stays one object while its data fits in SHARD_BYTES; above that, the
# named nodes of each pool move into shard ConfigMaps of at most SHARD_BYTES each. The bound is
# well under the API server's 1 MiB per object and under the 256 KiB that client-side apply
# (Argo CD's default, kubectl's last-applied-configuration annotation) can carry: Kubernetes caps
# the total size of an object's annotations at 256 KiB (apimachinery, validation/objectmeta.go,
# TotalAnnotationSizeLimitB).
SHARD_BYTES = 128 * 1024

Obj = dict[str, Any]


def labels(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    # app.kubernetes.io/instance is deliberately absent: Argo CD's legacy tracking owns that label.
    out = {"app.kubernetes.io/managed-by": "migc", "app.kubernetes.io/part-of": "migc"}
    out.update(extra or {})
    return dict(sorted(out.items()))


def metadata(
    name: str,
    namespace: str | None = None,
    *,
    extra_labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = labels(extra_labels)
    if annotations:
        meta["annotations"] = dict(sorted(annotations.items()))
    return meta


def tenant_namespaces(tenant: Tenant) -> Obj:
    """An admission policy binding's ``matchResources``: the tenant's namespaces, by name label."""
    return {
        "namespaceSelector": {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted(tenant.namespaces)}
            ]
        }
    }


# --------------------------------------------------------------------------------------------- MIG configs


@dataclass(frozen=True)
class MigConfig:
    """One named config: a mig-parted layout plus the device-plugin config its nodes get."""

    name: str
    model_key: str  # "" for all-disabled configs, which are the same on every model
    layout: NodeLayout
    device_plugin_config: str
    pools: tuple[str, ...]  # pools whose nodes use it, for the readable comment

    def any_mig(self) -> bool:
        return any(g.mig_enabled for g in self.layout)

    @property
    def key(self) -> tuple[str, NodeLayout, str]:
        return (self.model_key, self.layout, self.device_plugin_config)


def _model(catalog: Catalog, key: str) -> GpuModel | None:
    return catalog.get(key)


def _config_key(model_key: str, layout: NodeLayout, dp: str) -> tuple[str, NodeLayout, str]:
    return ("" if all(not g.mig_enabled for g in layout) else model_key, layout, dp)


def collect_configs(cluster: Cluster, solution: Solution, catalog: Catalog) -> dict[str, MigConfig]:
    """One config per distinct (model, node layout, device-plugin config) of the cluster, by name.

    Names come from the content. When one readable name would cover several variants (``all-disabled``
    on 4- and 8-GPU nodes, or on a time-sliced and a plain pool) each variant gets a suffix naming what
    differs (``-4gpu``, ``-time-slicing-4``): the assignment lists one device entry per GPU index and
    one device-plugin config per name, and the controller verifies exact counts.
    """
    raw: dict[str, dict[tuple[str, NodeLayout, str], set[str]]] = {}
    for result in _pool_results(cluster, solution):
        model = _model(catalog, result.gpu_model)
        pool = _pool(cluster, result.pool)
        seen: set[tuple[int, ...]] = set()
        for node in result.nodes:
            ids = layout_ids(node.gpus)
            if ids in seen:
                continue  # a node like one before it in this pool: same name, same key
            seen.add(ids)
            name = names.mig_config_name(model, result.gpu_model, node.gpus)
            key = _config_key(result.gpu_model, node.gpus, node_device_plugin_config(pool, node.gpus))
            raw.setdefault(name, {}).setdefault(key, set()).add(result.pool)
    out: dict[str, MigConfig] = {}
    for name in sorted(raw):
        variants = raw[name]
        lengths = {len(k[1]) for k in variants}
        plugins = {k[2] for k in variants}
        for key, pools in sorted(variants.items(), key=lambda kv: (len(kv[0][1]), kv[0][2], kv[0][0])):
            model_key, layout, dp = key
            final = name
            if len(lengths) > 1:
                final += f"-{len(layout)}gpu"
            if len(plugins) > 1:
                final += "-" + dp.removeprefix("migc-")
            if final in out or not names.is_label_value(final):
                final = f"migc-{names.content_hash(model_key + dp, layout)}"
            out[final] = MigConfig(final, model_key, layout, dp, tuple(sorted(pools)))
    return dict(sorted(out.items()))


def layout_ids(layout: NodeLayout) -> tuple[int, ...]:
    """Identity of a node's GPU layout objects: the solver hands one object per distinct GPU layout
    to every GPU that carries it, so 10,000 nodes have a few dozen of these. A key for work done
    once per kind of node, valid while the solution holding the objects is alive."""
    return tuple(map(id, layout))


def config_for(configs: Mapping[str, MigConfig], pool: NodePool, layout: NodeLayout) -> MigConfig:
    wanted = _config_key(pool.gpu_model, layout, node_device_plugin_config(pool, layout))
    for cfg in configs.values():
        if cfg.key == wanted:
            return cfg
    raise KeyError(wanted)


def _pool_results(cluster: Cluster, solution: Solution) -> list[PoolResult]:
    """The pools migc lays out: DynamicMIG pools (the DRA driver carves per claim) have no config."""
    dynamic = {p.name for p in cluster.pools if p.dra_dynamic}
    return [p for p in solution.pools if p.cluster == cluster.name and p.pool not in dynamic]


def _pool(cluster: Cluster, name: str) -> NodePool:
    for pool in cluster.pools:
        if pool.name == name:
            return pool
    raise KeyError(name)


def _mig_parted_entries(layout: NodeLayout, device_filter: tuple[str, ...] = ()) -> list[Obj]:
    """mig-parted entries for one node layout; ``device_filter`` (PCI ids) pins them to one GPU model.

    mig-parted applies an entry only to GPUs whose PCI device id matches its ``device-filter``
    (``api/spec/v1/spec.go``, ``pkg/types/device.go``), so a config solved for an A100 does nothing on
    a mislabelled H100 node, whose allocatable resources the controller then finds wrong, instead of
    carving the H100 with the A100's layout.
    """

    def entry(devices: Any, gpu: GpuLayout) -> Obj:
        item: Obj = {}
        if device_filter:
            item["device-filter"] = FlowList(device_filter) if len(device_filter) > 1 else device_filter[0]
        item["devices"] = devices
        item["mig-enabled"] = gpu.mig_enabled
        if gpu.mig_enabled:
            item["mig-devices"] = {name: count for name, count in gpu.profiles}
        return item

    if len(set(layout)) == 1:
        return [entry("all", layout[0])]
    groups: dict[GpuLayout, list[int]] = {}
    for index, gpu in enumerate(layout):
        groups.setdefault(gpu, []).append(index)
    return [entry(FlowList(indices), gpu) for gpu, indices in sorted(groups.items(), key=lambda kv: kv[1][0])]


def mig_parted_text(configs: Mapping[str, MigConfig], catalog: Catalog) -> str:
    """The ``config.yaml`` mig-parted reads, with a readable comment above every config."""
    lines = ["version: v1", "mig-configs:"]
    always = {names.ALL_DISABLED: MigConfig(names.ALL_DISABLED, "", (GpuLayout.whole(),), "", ())}
    merged = dict(configs)
    for key, value in always.items():
        merged.setdefault(key, value)
    for name in sorted(merged):
        cfg = merged[name]
        if cfg.name == names.ALL_DISABLED and not cfg.pools:
            comment = "every GPU MIG-disabled: the GPU Operator's default for nodes without a migc config"
        else:
            model = _model(catalog, cfg.model_key)
            where = ", ".join(cfg.pools)
            title = cfg.model_key or "any model"
            described = names.node_description(model, cfg.layout)
            comment = f"{title} ({len(cfg.layout)} GPUs; pools {where}): {described}"
        lines.append(f"  # {comment}")
        # all-disabled configs are model-independent (model_key ""): no filter, they fit every GPU.
        model = _model(catalog, cfg.model_key) if cfg.model_key else None
        entries = _mig_parted_entries(cfg.layout, model.pci_device_ids if model is not None else ())
        body = dump_yaml({name: entries})
        lines.extend("  " + line for line in body.rstrip("\n").split("\n"))
    return "\n".join(lines) + "\n"


def mig_parted_configmap(
    cluster: Cluster, configs: Mapping[str, MigConfig], catalog: Catalog
) -> tuple[str, Obj]:
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(
            MIG_CONFIGMAP,
            cluster.gpu_operator_namespace,
            annotations={"migc.dev/usage": "set the GPU Operator's migManager.config.name to this ConfigMap"},
        ),
        "data": {"config.yaml": mig_parted_text(configs, catalog)},
    }
    return f"gpu-operator/configmap-{MIG_CONFIGMAP}.yaml", obj


# ------------------------------------------------------------------------------------- device plugin


# DRA nodes: the device plugin is kept off (docs/dra.md); the name only says which strategy a plugin
# that ran by mistake would use (the cluster's), so the NodeAssignment's migStrategy agrees with it.
DRA_DEVICE_PLUGIN_CONFIG = "migc-dra"
DRA_DEVICE_PLUGIN_CONFIG_MIXED = "migc-dra-mixed"


def node_device_plugin_config(pool: NodePool, layout: NodeLayout) -> str:
    if pool.is_dra:
        mixed = any(g.mig_enabled for g in layout)
        return DRA_DEVICE_PLUGIN_CONFIG_MIXED if mixed else DRA_DEVICE_PLUGIN_CONFIG
    any_mig = any(g.mig_enabled for g in layout)
    mode = pool.sharing.mode if pool.is_shared else "none"
    return names.device_plugin_config_name(any_mig, mode, pool.sharing.replicas)


def _device_plugin_body(name: str) -> Obj:
    body: Obj = {"version": "v1"}
    if name in (DRA_DEVICE_PLUGIN_CONFIG, DRA_DEVICE_PLUGIN_CONFIG_MIXED):  # no plugin runs on DRA nodes
        body["flags"] = {"migStrategy": "mixed" if name == DRA_DEVICE_PLUGIN_CONFIG_MIXED else "none"}
        return body
    if name == "migc-mig-mixed":
        body["flags"] = {"migStrategy": "mixed"}
        return body
    body["flags"] = {"migStrategy": "none"}
    for prefix, key in (("migc-time-slicing-", "timeSlicing"), ("migc-mps-", "mps")):
        if name.startswith(prefix):
            replicas = int(name.removeprefix(prefix))
            body["sharing"] = {key: {"resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}}
    return body


def device_plugin_configmap(cluster: Cluster, used: Iterable[str]) -> tuple[str, Obj]:
    # The whole-GPU config is always there: it is the operator's default for unlabelled nodes
    # (compiler/render/operator.py), and a default missing from the ConfigMap stops the plugin.
    data = {name: dump_yaml(_device_plugin_body(name)) for name in sorted({*used, names.WHOLE_GPUS_CONFIG})}
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(
            DEVICE_PLUGIN_CONFIGMAP,
            cluster.gpu_operator_namespace,
            annotations={
                "migc.dev/usage": "set the GPU Operator's devicePlugin.config.name to this ConfigMap; "
                "migc-controller labels nodes with nvidia.com/device-plugin.config"
            },
        ),
        "data": data,
    }
    return f"gpu-operator/configmap-{DEVICE_PLUGIN_CONFIGMAP}.yaml", obj


def expected_resources(pool: NodePool, layout: NodeLayout) -> dict[str, int]:
    """Allocatable counts the controller verifies once the node is configured (mixed strategy).

    On a DRA pool the device plugin must not run, so nothing is allocatable: ``nvidia.com/gpu`` 0 (and,
    as on every node, no ``nvidia.com/mig-*`` not expected); its devices are in ResourceSlices.
    """
    if pool.is_dra:
        return {"nvidia.com/gpu": 0}
    out: dict[str, int] = {}
    whole = sum(1 for g in layout if not g.mig_enabled)
    any_mig = any(g.mig_enabled for g in layout)
    shares = 1 if any_mig else pool.shares_per_gpu
    if pool.sharing.hami is not None:
        shares = pool.sharing.hami.split_count  # HAMi advertises splitCount vGPUs per GPU
    out["nvidia.com/gpu"] = whole * shares
    for gpu in layout:
        for name, count in gpu.profiles:
            key = resource_name(name)
            out[key] = out.get(key, 0) + count
    return dict(sorted(out.items()))


# ----------------------------------------------------------------------------------------- assignment


def assignment_document(
    cluster: Cluster, solution: Solution, configs: Mapping[str, MigConfig]
) -> dict[str, Any]:
    """The NodeAssignment (``schema/assignment.schema.json``) with its content-hash revision."""
    config_entries: dict[str, Any] = {}
    pools: list[dict[str, Any]] = []
    for result in _pool_results(cluster, solution):
        pool = _pool(cluster, result.pool)
        if pool.sharing.hami is not None and pool.sharing.hami.operating_mode == "mig":
            # HAMi carves MIG on these nodes itself; the MIG manager is kept off them
            # (render/hami.py MIG_MODE_NODE_LABELS) and migc-controller must not touch them.
            continue
        node_entries = []
        counts: dict[str, int] = {}
        done: dict[tuple[int, ...], MigConfig] = {}  # per kind of node of this pool (see layout_ids)
        for node in result.nodes:
            ids = layout_ids(node.gpus)
            cfg = done.get(ids)
            if cfg is None:
                cfg = done[ids] = config_for(configs, pool, node.gpus)
                config_entries[cfg.name] = {
                    "devices": [
                        {"migEnabled": g.mig_enabled, "profiles": dict(g.profiles)} for g in node.gpus
                    ],
                    "migStrategy": "mixed" if cfg.any_mig() else "none",
                    "devicePluginConfig": cfg.device_plugin_config,
                    "resources": expected_resources(pool, node.gpus),
                }
            node_entries.append({"name": node.name, "config": cfg.name})
            counts[cfg.name] = counts.get(cfg.name, 0) + 1
        item: dict[str, Any] = {
            "name": pool.name,
            "gpuModel": pool.gpu_model,
            "maxUnavailable": max(1, pool.max_unavailable),
            "idleSurge": pool.idle_surge,
            "maintenanceWindows": [
                {"days": list(w.days), "start": w.start, "end": w.end, "timezone": w.timezone}
                for w in pool.maintenance_windows
            ],
            "nodes": [] if pool.uses_selector else sorted(node_entries, key=lambda n: n["name"]),
        }
        if pool.uses_selector:
            item["selector"] = dict(pool.node_selector)
            item["configCounts"] = dict(sorted(counts.items()))
        pools.append(item)
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "NodeAssignment",
        "cluster": cluster.name,
        "migConfigMap": {"namespace": cluster.gpu_operator_namespace, "name": MIG_CONFIGMAP},
        "configs": dict(sorted(config_entries.items())),
        "pools": sorted(pools, key=lambda p: p["name"]),
    }
    doc["revision"] = hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()
    return doc


def system_json_configmap(
    name: str, key: str, doc: Mapping[str, Any], revision_annotation: str, revision: str
) -> Obj:
    """A ConfigMap in migc-system carrying one JSON document, its revision also as an annotation."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(name, SYSTEM_NAMESPACE, annotations={revision_annotation: revision}),
        "data": {key: dump_json(doc)},
    }


def assignment_configmap(doc: Mapping[str, Any]) -> tuple[str, Obj]:
    obj = system_json_configmap(
        ASSIGNMENT_NAME, ASSIGNMENT_KEY, doc, "migc.dev/revision", str(doc["revision"])
    )
    return ASSIGNMENT_PATH, obj


def assignment_configmaps(doc: Mapping[str, Any]) -> list[tuple[str, Obj]]:
    """The assignment as ConfigMaps: one while it fits in ``SHARD_BYTES``, else an index and shards.

    Sharded form (``schema/assignment.schema.json``, ``nodeShards``): the index keeps everything
    but the named nodes, and names per pool the shard ConfigMaps that hold them
    (``NodeAssignmentShard``, key ``nodes.json``, one node a line). A node lands in shard
    ``h(name) mod k`` (h: the first 8 bytes of SHA-256; k: the smallest power of two that keeps
    every shard within ``SHARD_BYTES``), so changing one node's config touches one shard, and adding
    or removing a node touches one shard unless k doubles. The revision stays the content hash of
    the whole document with the nodes inline: a reader that puts the shards back recomputes it, so
    a half-synced set (index and shards from different revisions) is seen, never acted on.
    """
    # The indented document is at least as long as the compact one (it only adds whitespace):
    # a compact form over the bound shards without writing the large single form first.
    if len(canonical_json(doc).encode("utf-8")) <= SHARD_BYTES:
        single = assignment_configmap(doc)
        if len(single[1]["data"][ASSIGNMENT_KEY].encode("utf-8")) <= SHARD_BYTES:
            return [single]
    revision = str(doc["revision"])
    index = dict(doc)
    pools: list[dict[str, Any]] = []
    shards: list[tuple[str, Obj]] = []
    for pool in doc["pools"]:
        nodes = pool.get("nodes") or []
        if not nodes:
            pools.append(dict(pool))
            continue
        buckets = _shard_buckets(nodes)
        names = []
        for i, bucket in enumerate(buckets):
            name = f"{ASSIGNMENT_NAME}-{pool['name']}-{i}-of-{len(buckets)}"
            names.append(name)
            shard = _shard_document(str(doc["cluster"]), str(pool["name"]), bucket)
            obj = system_json_configmap(name, SHARD_KEY, shard, "migc.dev/revision", revision)
            # The shard's annotation names the revision it was rendered with, but a shard whose
            # nodes did not change is the same object in the next revision: keep it byte-stable.
            del obj["metadata"]["annotations"]
            obj["metadata"]["labels"] = labels({"migc.dev/assignment-shard-of": ASSIGNMENT_NAME})
            shards.append((f"{SYSTEM_NAMESPACE}/configmap-{name}.yaml", obj))
        pools.append({**pool, "nodes": [], "nodeShards": names})
    index["pools"] = pools
    return [assignment_configmap(index), *shards]


def _shard_of(name: str, k: int) -> int:
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big") % k


def _shard_document(cluster: str, pool: str, nodes: Iterable[Mapping[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "NodeAssignmentShard",
        "cluster": cluster,
        "pool": pool,
        "nodes": {n["name"]: n["config"] for n in sorted(nodes, key=lambda n: n["name"])},
    }


def _shard_buckets(nodes: list[Mapping[str, str]]) -> list[list[Mapping[str, str]]]:
    """Nodes per shard for the smallest power-of-two shard count that keeps each within the bound."""
    # One node's line in the shard: 4 spaces, two quoted strings, ": ", ",\n" (json.dumps escapes
    # nothing in a valid node or config name), plus the envelope of the shard document.
    envelope = 512
    sizes = [len(n["name"].encode("utf-8")) + len(n["config"].encode("utf-8")) + 12 for n in nodes]
    k = 1
    while True:
        totals = [envelope] * k
        for node, size in zip(nodes, sizes, strict=True):
            totals[_shard_of(node["name"], k)] += size
        if max(totals) <= SHARD_BYTES or k >= len(nodes):
            break
        k *= 2
    buckets: list[list[Mapping[str, str]]] = [[] for _ in range(k)]
    for node in nodes:
        buckets[_shard_of(node["name"], k)].append(node)
    return buckets


def system_namespace() -> tuple[str, Obj]:
    obj: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(SYSTEM_NAMESPACE)}
    return f"{SYSTEM_NAMESPACE}/namespace-{SYSTEM_NAMESPACE}.yaml", obj


# ------------------------------------------------------------------------------------ cluster-scoped


def priority_classes(policy: Policy) -> list[tuple[str, Obj]]:
    out = []
    for tier in sorted(policy.partition.tiers, key=lambda t: t.name):
        name = f"migc-{tier.name}"
        obj: Obj = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": metadata(name),
            "value": tier.value,
            "globalDefault": False,
            "description": tier.description or f"migc priority tier {tier.name}",
        }
        out.append((f"cluster/priorityclass-{name}.yaml", obj))
    return out


# ------------------------------------------------------------------------------------------- tenants


def _fmt_quota(counts: Mapping[str, float]) -> str:
    return ",".join(f"{k}={int(v) if float(v).is_integer() else v}" for k, v in sorted(counts.items()))


def _quota_summary(tenant: Tenant, which: str) -> str:
    quota = tenant.guaranteed if which == "guaranteed" else tenant.burst
    counts: dict[str, float] = {k: float(v) for k, v in quota_counts(quota).items()}
    if quota.gpu_memory_gb:
        counts["gpuMemoryGB"] = quota.gpu_memory_gb
    if quota.compute_slices:
        counts["computeSlices"] = float(quota.compute_slices)
    return _fmt_quota(counts) or "none"


def tenant_objects(policy: Policy, cluster: Cluster) -> list[tuple[str, Obj]]:
    """Owned Namespaces and per namespace a ResourceQuota (per-pod limits: ``compiler.render.admission``)."""
    out: list[tuple[str, Obj]] = []
    for tenant in tenants_in(policy, cluster.name):
        tenant_label = {"migc.dev/tenant": tenant.name}
        hard = hard_limits(tenant)
        for ns in sorted(tenant.namespaces):
            base = f"tenants/{tenant.name}"
            if tenant.create_namespaces:
                ns_obj: Obj = {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": metadata(
                        ns,
                        extra_labels=tenant_label,
                        # Deleting a namespace deletes every workload in it: never let a sync prune one.
                        annotations={
                            "argocd.argoproj.io/sync-options": "Prune=false",
                            "kustomize.toolkit.fluxcd.io/prune": "disabled",
                        },
                    ),
                }
                out.append((f"{base}/namespace-{ns}.yaml", ns_obj))
            if not hard:
                continue
            annotations = {
                "migc.dev/guaranteed": _quota_summary(tenant, "guaranteed"),
                "migc.dev/burst": _quota_summary(tenant, "burst"),
                "migc.dev/priority-class": f"migc-{tenant.priority_tier}",
            }
            quota: Obj = {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": metadata("migc-gpu", ns, extra_labels=tenant_label, annotations=annotations),
                "spec": {
                    "hard": dict(sorted((f"requests.{resource_name(r)}", str(v)) for r, v in hard.items()))
                },
            }
            out.append((f"{base}/{ns}/resourcequota-migc-gpu.yaml", quota))
    return out
