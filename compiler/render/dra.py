"""Kubernetes DRA (``resource.k8s.io/v1``) for ``allocation: dra`` pools, through NVIDIA's DRA driver.

What is rendered per cluster with DRA pools (docs/dra.md explains each choice and its source):

* ``dra/deviceclass-mig-<profile>.migc.dev.yaml``: one DeviceClass per MIG profile the cluster's
  tenants and workloads use on DRA pools, with a CEL selector on the driver's device attributes
  (``type == 'mig'`` and ``profile``, cmd/gpu-kubelet-plugin/mig.go ``CommonAttributesMig``, shared by
  static and dynamic MIG). Whole GPUs use the driver's own class ``gpu.nvidia.com``
  (deployments/helm/.../templates/deviceclass-gpu.yaml), which migc does not render.
* ``tenants/<t>/<ns>/resourceclaimtemplate-mig-<profile>.yaml`` per profile the tenant may use, and
  ``resourceclaimtemplate-migc-<workload>.yaml`` per targeted workload on a DRA pool: a preference
  list becomes a prioritized list (``firstAvailable``, KEP-4816), so the scheduler takes the first
  profile that is free.
* ``tenants/<t>/<ns>/resourcequota-migc-dra.yaml``: the tenant's hard limits on the quota keys the
  API server's claim evaluator charges, ``<class>.deviceclass.resource.k8s.io/devices``
  (kubernetes ``pkg/quota/v1/evaluator/core/resource_claims.go``, see :data:`QUOTA_SUFFIX`).
* ``migc-system/configmap-migc-dra.yaml`` (``dra.json``, kind ``DraPlan``,
  ``schema/draplan.schema.json``): per DRA pool its mode,
  the node labels the pool needs (device plugin off; for DynamicMIG the MIG manager off too), and,
  for static pools, the devices per profile each node's ResourceSlices must publish.
* ``dra-settings/`` (not objects, outside the kustomization): Helm values for the DRA driver and the
  Kueue Configuration's ``deviceClassMappings``.
* patches for targeted workloads on DRA pools: ``resourceClaims`` in the pod template and
  ``resources.claims`` in the container instead of ``limits`` (:func:`target_patch`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from compiler.catalog import Catalog
from compiler.diagnostics import Diagnostic, at
from compiler.model import HOSTNAME_KEY, WHOLE_GPU, Cluster, NodePool, Policy, Tenant, Workload
from compiler.render.emit import canonical_json, dump_json
from compiler.render.manifests import SYSTEM_NAMESPACE, Obj, metadata
from compiler.render.quota import hard_limits, resource_name, tenants_in
from compiler.solve.result import Solution

DRA_API = "resource.k8s.io/v1"
# kubernetes-sigs/dra-driver-nvidia-gpu at this commit is what the classes, values and fixtures follow.
DRIVER_REPO = "kubernetes-sigs/dra-driver-nvidia-gpu"
DRIVER_COMMIT = "95932046683719c43b6a0dd9613c2e5aad5d6703"
DRIVER = "gpu.nvidia.com"  # the driver name and the attribute domain of its devices
WHOLE_GPU_CLASS = "gpu.nvidia.com"  # the driver chart's DeviceClass for full GPUs (type 'gpu')
CLASS_DOMAIN = "migc.dev"
# kubernetes pkg/quota/v1/evaluator/core/resource_claims.go (V1ResourceByDeviceClass) and
# k8s.io/api core/v1 ResourceClaimsPerClass: a claim is charged per device class under this key.
QUOTA_SUFFIX = ".deviceclass.resource.k8s.io/devices"
CLAIM_NAME = "migc-gpu"  # the pod-level resourceClaims entry and the container's claims entry
FIRST_AVAILABLE_MAX = 8  # resource.k8s.io/v1 FirstAvailableDeviceRequestMaxSize
SETTINGS_DIR = "dra-settings"
DRIVER_VALUES = f"{SETTINGS_DIR}/dra-driver-values.yaml"
KUEUE_CONFIG = f"{SETTINGS_DIR}/kueue-configuration.yaml"
KUEUE_MAX_MAPPINGS = 16  # kueue pkg/config/validation.go validateDeviceClassMappings
PLAN_NAME = "migc-dra"
PLAN_KEY = "dra.json"
DEPLOY_DEVICE_PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
DEPLOY_MIG_MANAGER = "nvidia.com/gpu.deploy.mig-manager"
DEPLOY_CLIENT = "nvidia.com/gpu.deploy.client"


def dra_pools(cluster: Cluster) -> tuple[NodePool, ...]:
    return tuple(p for p in cluster.pools if p.is_dra)


def slug(profile: str) -> str:
    """A profile as a DNS-subdomain part: ``1g.10gb+me`` → ``1g.10gb-me``."""
    return profile.replace("+", "-")


def class_name(resource: str) -> str:
    """The DeviceClass of a quota key: ``mig-1g.10gb.migc.dev``, or the driver's class for whole GPUs."""
    return WHOLE_GPU_CLASS if resource == WHOLE_GPU else f"mig-{slug(resource)}.{CLASS_DOMAIN}"


def quota_key(resource: str) -> str:
    return class_name(resource) + QUOTA_SUFFIX


def selector(profile: str) -> str:
    """CEL selecting the driver's MIG devices of one profile (attribute names: mig.go CommonAttributesMig)."""
    return (
        f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'mig' && "
        f"device.attributes['{DRIVER}'].profile == '{profile}'"
    )


def _model_profiles(pools: Iterable[NodePool], catalog: Catalog) -> set[str]:
    out: set[str] = set()
    for pool in pools:
        model = catalog.get(pool.gpu_model)
        if model is not None and pool.mig:
            out.update(p.name for p in model.profiles)
    return out


def _served_on_dra(cluster: Cluster, solution: Solution) -> dict[str, dict[str, int]]:
    """workload → resource → instances served on the cluster's DRA pools."""
    names = {p.name for p in dra_pools(cluster)}
    out: dict[str, dict[str, int]] = {}
    for result in solution.pools:
        if result.cluster != cluster.name or result.pool not in names:
            continue
        for d in result.demand:
            if d.served:
                per = out.setdefault(d.workload, {})
                per[d.resource] = per.get(d.resource, 0) + d.served
    return out


def workload_on_dra(workload: Workload, cluster: Cluster, solution: Solution) -> bool:
    """Whether the solution serves the workload on a DRA pool (MIGC190 keeps targets on one backend)."""
    return workload.cluster == cluster.name and workload.name in _served_on_dra(cluster, solution)


def alternatives(workload: Workload, served: dict[str, int], catalog: Catalog, cluster: Cluster) -> list[str]:
    """The profiles a workload's claim asks for, first choice first.

    A preference list keeps the user's order (the profiles DRA pools have); any other need asks for
    what the solution served, most served first. At most :data:`FIRST_AVAILABLE_MAX`.
    """
    offered = _model_profiles(dra_pools(cluster), catalog)
    by_served = sorted(served, key=lambda r: (-served[r], r))
    wanted = [p for p in workload.need.profiles if p in offered] if workload.need.kind == "profiles" else []
    return (wanted or by_served)[:FIRST_AVAILABLE_MAX]


def _used_resources(policy: Policy, cluster: Cluster, solution: Solution, catalog: Catalog) -> set[str]:
    """Quota keys (profiles, ``gpu``) the cluster's DRA pools serve or a tenant there may ask for."""
    pools = dra_pools(cluster)
    offered = _model_profiles(pools, catalog)
    used: set[str] = set()
    for tenant in tenants_in(policy, cluster.name):
        used.update(r for r in hard_limits(tenant) if r in offered)
        if WHOLE_GPU in hard_limits(tenant) and any(not p.dra_dynamic for p in pools):
            used.add(WHOLE_GPU)
    for per in _served_on_dra(cluster, solution).values():
        used.update(per)
    for w in policy.workloads:
        if w.cluster == cluster.name and w.need.kind == "profiles" and workload_on_dra(w, cluster, solution):
            used.update(p for p in w.need.profiles if p in offered)
    return used


def device_classes(resources: Iterable[str]) -> list[tuple[str, Obj]]:
    out = []
    for resource in sorted(r for r in resources if r != WHOLE_GPU):
        name = class_name(resource)
        obj: Obj = {
            "apiVersion": DRA_API,
            "kind": "DeviceClass",
            "metadata": metadata(name, annotations={"migc.dev/profile": resource}),
            "spec": {"selectors": [{"cel": {"expression": selector(resource)}}]},
        }
        out.append((f"dra/deviceclass-{name}.yaml", obj))
    return out


def _exactly(resource: str, count: int = 1) -> Obj:
    return {"deviceClassName": class_name(resource), "allocationMode": "ExactCount", "count": count}


def claim_spec(resources: list[str], count: int = 1) -> Obj:
    """One request named ``gpu``: ``exactly`` for one alternative, ``firstAvailable`` for several."""
    if len(resources) == 1:
        request: Obj = {"name": "gpu", "exactly": _exactly(resources[0], count)}
    else:
        request = {
            "name": "gpu",
            "firstAvailable": [
                {"name": f"{slug(r).replace('.', '-')}", **_exactly(r, count)} for r in resources
            ],
        }
    return {"devices": {"requests": [request]}}


def _template(name: str, namespace: str, tenant: Tenant, spec: Obj, note: str) -> Obj:
    return {
        "apiVersion": DRA_API,
        "kind": "ResourceClaimTemplate",
        "metadata": metadata(
            name,
            namespace,
            extra_labels={"migc.dev/tenant": tenant.name},
            annotations={"migc.dev/claim": note},
        ),
        "spec": {"spec": spec},
    }


def template_name(resource: str) -> str:
    return "gpu" if resource == WHOLE_GPU else f"mig-{slug(resource)}"


def tenant_objects(
    policy: Policy, cluster: Cluster, solution: Solution, catalog: Catalog, used: set[str]
) -> list[tuple[str, Obj]]:
    """Per tenant namespace: a claim template per usable resource, one per targeted workload, the quota."""
    out: list[tuple[str, Obj]] = []
    served = _served_on_dra(cluster, solution)
    for tenant in tenants_in(policy, cluster.name):
        hard = hard_limits(tenant)
        mine = sorted(
            r
            for r in used
            if r in hard
            or any(r in served.get(w.name, {}) for w in policy.workloads if w.tenant == tenant.name)
        )
        label = {"migc.dev/tenant": tenant.name}
        for ns in sorted(tenant.namespaces):
            base = f"tenants/{tenant.name}/{ns}"
            for r in mine:
                name = template_name(r)
                note = f"one {r} device" if r != WHOLE_GPU else "one whole GPU"
                out.append(
                    (
                        f"{base}/resourceclaimtemplate-{name}.yaml",
                        _template(name, ns, tenant, claim_spec([r]), note),
                    )
                )
            quota = {quota_key(r): str(v) for r, v in hard.items() if r in used}
            if quota:
                obj: Obj = {
                    "apiVersion": "v1",
                    "kind": "ResourceQuota",
                    "metadata": metadata(
                        "migc-dra",
                        ns,
                        extra_labels=label,
                        annotations={
                            "migc.dev/quota": "DRA devices per DeviceClass, charged per ResourceClaim by "
                            "the API server (a firstAvailable request: its largest alternative per class)"
                        },
                    ),
                    "spec": {"hard": dict(sorted(quota.items()))},
                }
                out.append((f"{base}/resourcequota-migc-dra.yaml", obj))
        for w in sorted(policy.workloads, key=lambda w: w.name):
            if w.tenant != tenant.name or w.target is None or w.name not in served:
                continue
            out.append(workload_template(w, tenant, served[w.name], catalog, cluster))
    return out


def workload_template(
    w: Workload, tenant: Tenant, served: dict[str, int], catalog: Catalog, cluster: Cluster
) -> tuple[str, Obj]:
    assert w.target is not None
    if WHOLE_GPU in served:
        resources, count, note = [WHOLE_GPU], max(1, w.need.gpus), f"{max(1, w.need.gpus)} whole GPU(s)"
    else:
        resources, count = alternatives(w, served, catalog, cluster), 1
        note = "first available of " + ", ".join(resources) if len(resources) > 1 else f"one {resources[0]}"
    name = f"migc-{w.name}"
    ns = w.target.namespace
    return (
        f"tenants/{tenant.name}/{ns}/resourceclaimtemplate-{name}.yaml",
        _template(name, ns, tenant, claim_spec(resources, count), note),
    )


# ------------------------------------------------------------------------------------------- patches


def target_patch(w: Workload, base: Obj) -> tuple[Obj, list[Obj] | None]:
    """The workload's strategic patch with ``resourceClaims``, and, for a target without a container
    name, the ``resources.claims`` the first container needs (set by a kustomize replacement,
    :func:`compiler.render.targets.first_container_replacements`: a JSON 6902 ``add`` fails where
    the container has no ``resources``).

    ``base`` is the device-plugin patch without limits (priority class, labels, spread); the pod
    template gains ``resourceClaims: [{name: migc-gpu, resourceClaimTemplateName: migc-<workload>}]``
    (merged by ``name``, k8s.io/api core/v1 PodSpec ``patchMergeKey``) and the container
    ``resources.claims: [{name: migc-gpu}]``.
    """
    target = w.target
    assert target is not None
    template = (
        base["spec"]["jobTemplate"]["spec"]["template"]
        if target.kind == "CronJob"
        else base["spec"]["template"]
    )
    spec = template["spec"]
    spec["resourceClaims"] = [{"name": CLAIM_NAME, "resourceClaimTemplateName": f"migc-{w.name}"}]
    if target.container:
        spec["containers"] = [{"name": target.container, "resources": {"claims": [{"name": CLAIM_NAME}]}}]
        return base, None
    return base, [{"name": CLAIM_NAME}]


# ---------------------------------------------------------------------------------------- settings


def _node_term(pool: NodePool) -> Obj:
    """One nodeSelectorTerm for the pool's nodes, also requiring the GPU Operator's client label.

    mig-parted v0.15.0 pauses DaemonSets that select ``nvidia.com/gpu.deploy.client`` while it changes
    a node's MIG layout; the driver discovers static partitions only at start (driver docs
    site/content/docs/guides/gpu-allocation/mig.md: "Partitions added after the driver starts are not
    discovered until the GPU kubelet plugin restarts"), so the pause is the restart it needs.
    """
    exprs: list[Obj] = [{"key": DEPLOY_CLIENT, "operator": "In", "values": ["true"]}]
    if pool.uses_selector:
        exprs.extend({"key": k, "operator": "In", "values": [v]} for k, v in pool.node_selector)
    else:
        exprs.append({"key": HOSTNAME_KEY, "operator": "In", "values": list(pool.node_names)})
    return {"matchExpressions": exprs}


def driver_values(cluster: Cluster) -> dict[str, Any]:
    """Helm values for the DRA driver (deployments/helm/dra-driver-nvidia-gpu/values.yaml keys)."""
    pools = dra_pools(cluster)
    values: dict[str, Any] = {
        "nvidiaDriverRoot": "/run/nvidia/driver",
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "featureGates": {"DynamicMIG": any(p.dra_dynamic for p in pools)},
        "kubeletPlugin": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [_node_term(p) for p in pools]
                    }
                }
            }
        },
    }
    return values


def kueue_configuration(resources: Iterable[str]) -> dict[str, Any]:
    """Kueue Configuration ``resources.deviceClassMappings``: each class under the device plugin's name.

    Mapping ``mig-1g.10gb.migc.dev`` to ``nvidia.com/mig-1g.10gb`` makes Kueue charge a DRA claim to
    the same ClusterQueue resource a device-plugin pod's limit is charged to, so one tenant quota
    covers both backends (kueue apis/config/v1beta2 configuration_types.go ``DeviceClassMapping``).
    """
    mappings = [
        {"name": resource_name(r), "deviceClassNames": [class_name(r)]}
        for r in sorted(resources, key=resource_name)
    ]
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "resources": {"deviceClassMappings": mappings},
    }


def settings_files(
    policy: Policy, cluster: Cluster, solution: Solution, catalog: Catalog
) -> list[tuple[str, str, dict[str, Any]]]:
    if not dra_pools(cluster):
        return []
    used = _used_resources(policy, cluster, solution, catalog)
    here = f"<output>/{cluster.name}"
    return [
        (
            DRIVER_VALUES,
            f"Helm values for NVIDIA's DRA driver ({DRIVER_REPO} @ {DRIVER_COMMIT[:8]}), e.g.\n"
            "#   helm upgrade --install -n nvidia-dra-driver-gpu --create-namespace \\\n"
            "#     nvidia-dra-driver-gpu \\\n"
            f"#     <chart> -f {here}/{DRIVER_VALUES}",
            driver_values(cluster),
        ),
        (
            KUEUE_CONFIG,
            "Kueue Configuration fragment: merge into the kueue-manager-config ConfigMap's\n"
            "# controller_manager_config.yaml so ClusterQueues (migc compile --with kueue) count DRA claims",
            kueue_configuration(used),
        ),
    ]


# --------------------------------------------------------------------------------------------- plan


def expected_devices(pool: NodePool, solution: Solution) -> dict[str, dict[str, int]]:
    """node → DRA devices per profile (``gpu`` for whole GPUs) its ResourceSlices must publish."""
    out: dict[str, dict[str, int]] = {}
    for result in solution.pools:
        if result.cluster != pool.cluster or result.pool != pool.name:
            continue
        for node in result.nodes:
            counts: dict[str, int] = {}
            for gpu in node.gpus:
                if not gpu.mig_enabled:
                    counts[WHOLE_GPU] = counts.get(WHOLE_GPU, 0) + 1
                for name, count in gpu.profiles:
                    counts[name] = counts.get(name, 0) + count
            out[node.name] = dict(sorted(counts.items()))
    return dict(sorted(out.items()))


def node_labels(pool: NodePool) -> dict[str, str]:
    labels = {DEPLOY_DEVICE_PLUGIN: "false"}
    if pool.dra_dynamic:
        labels[DEPLOY_MIG_MANAGER] = "false"  # the driver owns MIG here; all-disabled would undo it
    return labels


def plan_document(cluster: Cluster, solution: Solution) -> dict[str, Any]:
    pools = []
    for pool in dra_pools(cluster):
        item: dict[str, Any] = {
            "name": pool.name,
            "gpuModel": pool.gpu_model,
            "mig": pool.dra_mig,
            "driver": DRIVER,
            "nodeLabels": node_labels(pool),
        }
        if pool.uses_selector:
            item["selector"] = dict(pool.node_selector)
        item["nodes"] = (
            []
            if pool.dra_dynamic or pool.uses_selector
            else [{"name": n, "devices": d} for n, d in expected_devices(pool, solution).items()]
        )
        pools.append(item)
    doc: dict[str, Any] = {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "DraPlan",
        "cluster": cluster.name,
        "pools": pools,
    }
    doc["revision"] = hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()
    return doc


def plan_configmap(cluster: Cluster, solution: Solution) -> tuple[str, Obj]:
    doc = plan_document(cluster, solution)
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(PLAN_NAME, SYSTEM_NAMESPACE, annotations={"migc.dev/revision": doc["revision"]}),
        "data": {PLAN_KEY: dump_json(doc)},
    }
    return f"{SYSTEM_NAMESPACE}/configmap-{PLAN_NAME}.yaml", obj


def dra_objects(
    policy: Policy, cluster: Cluster, solution: Solution, catalog: Catalog
) -> list[tuple[str, Obj]]:
    """Every DRA object of the cluster (none without DRA pools)."""
    if not dra_pools(cluster):
        return []
    used = _used_resources(policy, cluster, solution, catalog)
    out = [plan_configmap(cluster, solution)]
    out.extend(device_classes(used))
    out.extend(tenant_objects(policy, cluster, solution, catalog, used))
    return out


# --------------------------------------------------------------------------------------- diagnostics


def dra_diagnostics(policy: Policy, solution: Solution, catalog: Catalog) -> list[Diagnostic]:
    """MIGC330-MIGC333: what the rendered DRA objects cannot do that the policy may expect."""
    out: list[Diagnostic] = []
    for cluster in sorted(policy.clusters, key=lambda c: c.name):
        if not dra_pools(cluster):
            continue
        out.extend(_two_counters(policy, cluster, solution, catalog))
        served = _served_on_dra(cluster, solution)
        for w in sorted(policy.workloads, key=lambda w: w.name):
            if w.target is None or w.name not in served or WHOLE_GPU in served[w.name]:
                continue
            alts = alternatives(w, served[w.name], catalog, cluster)
            if len(alts) > 1:
                out.extend(_prioritized(policy, w, alts))
        used = _used_resources(policy, cluster, solution, catalog)
        if len(used) > KUEUE_MAX_MAPPINGS:
            out.append(
                at(
                    "MIGC333",
                    f"cluster {cluster.name}: {len(used)} DRA device classes, more than the "
                    f"{KUEUE_MAX_MAPPINGS} deviceClassMappings Kueue accepts",
                    cluster.span,
                )
            )
    return out


def _two_counters(policy: Policy, cluster: Cluster, solution: Solution, catalog: Catalog) -> list[Diagnostic]:
    """MIGC330: a profile a tenant may use on both backends is counted by two ResourceQuota keys."""
    dra = _model_profiles(dra_pools(cluster), catalog)
    plugin = _model_profiles((p for p in cluster.pools if not p.is_dra), catalog)
    both = dra & plugin
    out = []
    for tenant in tenants_in(policy, cluster.name):
        shared = sorted(r for r in hard_limits(tenant) if r in both)
        if shared:
            out.append(
                at(
                    "MIGC330",
                    f"cluster {cluster.name}: tenant {tenant.name}'s hard limit on "
                    f"{', '.join(shared)} is rendered as two ResourceQuota keys (requests.nvidia.com/mig-* "
                    "and the DRA class's), each with the full limit",
                    tenant.span,
                )
            )
    return out


def _prioritized(policy: Policy, w: Workload, alts: list[str]) -> list[Diagnostic]:
    """MIGC331: the quota charges a firstAvailable claim on every alternative's class; MIGC332: Kueue."""
    hard = hard_limits(policy.tenant(w.tenant))
    admitted = min((hard[r] for r in alts if r in hard), default=w.replicas)
    out = []
    if admitted < w.replicas:
        out.append(
            at(
                "MIGC331",
                f"workload {w.name}: its claim (first available of {', '.join(alts)}) is "
                f"charged one device of every alternative's class, so tenant {w.tenant}'s quota admits "
                f"{admitted} of its {w.replicas} replicas",
                w.span,
            )
        )
    out.append(
        at(
            "MIGC332",
            f"workload {w.name}: its claim uses firstAvailable ({', '.join(alts)}), which "
            "Kueue does not admit",
            w.span,
        )
    )
    return out
