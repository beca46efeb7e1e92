"""HAMi objects of one cluster: the device-plugin node configuration, the HAMi plan, HAMi quotas.

Formats follow HAMi v2.10.0 (github.com/Project-HAMi/HAMi, tag v2.10.0):

* ``charts/hami/templates/device-plugin/configmap.yaml``: ConfigMap ``hami-device-plugin`` (release
  name ``hami``) with key ``config.json``; its body is ``DevicePluginConfigs`` of
  ``pkg/device/nvidia/device.go``: ``{"nodeconfig": [{"name", "operatingmode", "devicesplitcount",
  "devicememoryscaling", "devicecorescaling", "migstrategy", "filterdevices", ...}]}``, one entry per
  node, matched by node name. Point the chart at it with
  ``devicePlugin.nodeConfiguration.externalConfigName: hami-device-plugin``.
* ``charts/hami/values.yaml``: the device plugin runs on nodes labelled ``gpu: "on"``
  (``devicePlugin.nvidiaNodeSelector``); resource names ``nvidia.com/gpu`` (vGPUs), ``nvidia.com/gpumem``
  (MiB), ``nvidia.com/gpumem-percentage``, ``nvidia.com/gpucores`` (percent).
* ``pkg/device/quota.go``: HAMi enforces ResourceQuota keys ``limits.nvidia.com/gpumem`` and
  ``limits.nvidia.com/gpucores`` itself (``managedQuotaName`` only reads ``limits.*``); the vGPU count
  is an extended resource the API server's quota admission counts as ``requests.nvidia.com/gpu``.
* ``pkg/util/types.go``: pod annotations ``hami.io/node-scheduler-policy`` and
  ``hami.io/gpu-scheduler-policy`` (binpack|spread).

The GPU Operator's own device plugin must not run on HAMi nodes: the node label
``nvidia.com/gpu.deploy.device-plugin: "false"`` (GPU Operator node labels) switches it off.
"""

from __future__ import annotations

from typing import Any

from compiler.diagnostics import Diagnostic, make
from compiler.model import Cluster, NodePool, Policy
from compiler.render.emit import dump_json
from compiler.render.manifests import metadata
from compiler.render.quota import tenants_in
from compiler.solve.hami import RES_CORES, RES_GPU, RES_MEM, pod_resources
from compiler.solve.result import HamiPoolResult, Solution

HAMI_VERSION = "v2.10.0"
HAMI_NAMESPACE = "kube-system"
CONFIGMAP = "hami-device-plugin"
PLAN_CONFIGMAP = "migc-hami"
NODE_LABELS = {"gpu": "on", "nvidia.com/gpu.deploy.device-plugin": "false"}
# operatingMode mig: HAMi turns MIG on and carves the instances itself, so the GPU Operator's MIG
# manager must stay off the node -- it applies nvidia.com/mig.config on start and on every change
# (the operator's labeler gives a MIG-capable node all-disabled) and would switch MIG off under
# HAMi. The operator sets nvidia.com/gpu.deploy.mig-manager=true only where the key is absent
# (NVIDIA/gpu-operator@a22dbf67 controllers/state_manager.go:486-490, hasMIGManagerLabel :363-370),
# and the MIG manager DaemonSet selects gpu.deploy.mig-manager=true
# (assets/state-mig-manager/0600_daemonset.yaml:17-18): "false" keeps it off. Such pools are also
# left out of the NodeAssignment (manifests.assignment_document), so migc-controller never
# relabels or cordons them.
MIG_MODE_NODE_LABELS = {**NODE_LABELS, "nvidia.com/gpu.deploy.mig-manager": "false"}


def hami_mig_mode(pool: NodePool) -> bool:
    """Whether HAMi manages MIG on the pool's nodes itself (operatingMode: mig)."""
    return pool.sharing.hami is not None and pool.sharing.hami.operating_mode == "mig"


def node_labels(pool: NodePool) -> dict[str, str]:
    return dict(MIG_MODE_NODE_LABELS if hami_mig_mode(pool) else NODE_LABELS)


Obj = dict[str, Any]


def node_config(pool: NodePool, node: str) -> Obj:
    """One ``nodeconfig`` entry (DevicePluginConfigs in HAMi's pkg/device/nvidia/device.go)."""
    h = pool.sharing.hami
    assert h is not None
    return {
        "name": node,
        "operatingmode": h.operating_mode,
        "devicesplitcount": h.split_count,
        "devicememoryscaling": h.memory_scaling,
        "devicecorescaling": h.core_scaling,
        "migstrategy": "none",
        "filterdevices": {"uuid": [], "index": []},
        "enablegetpreferredallocation": False,
    }


def device_plugin_config(cluster: Cluster) -> Obj:
    """The ``config.json`` body: every node of every HAMi pool of the cluster, sorted by name."""
    entries = [
        node_config(pool, node)
        for pool in cluster.pools
        if pool.sharing.mode == "hami"
        for node in pool.node_names
    ]
    return {"nodeconfig": sorted(entries, key=lambda e: str(e["name"]))}


def pod_annotations(pool: NodePool) -> dict[str, str]:
    h = pool.sharing.hami
    assert h is not None
    return {"hami.io/gpu-scheduler-policy": h.gpu_policy, "hami.io/node-scheduler-policy": h.node_policy}


def _pool_doc(pool: NodePool, result: HamiPoolResult) -> Obj:
    return {
        "name": pool.name,
        "gpuModel": pool.gpu_model,
        "nodes": list(pool.node_names),
        "nodeLabels": node_labels(pool),
        "podAnnotations": pod_annotations(pool),
        "optimal": result.optimal,
        "gpus": [g.document() for g in result.gpus],
    }


def plan_document(policy: Policy, cluster: Cluster, solution: Solution) -> Obj:
    """The HAMi plan of a cluster: per pool and GPU the shares, per workload what its pods request."""
    results = {r.pool: r for r in solution.hami if r.cluster == cluster.name}
    pools = {p.name: p for p in cluster.pools}
    workloads = []
    for w in sorted(policy.workloads, key=lambda w: w.name):
        if w.cluster != cluster.name or w.need.hami is None:
            continue
        served = {r.pool: sum(d.served for d in r.demand if d.workload == w.name) for r in results.values()}
        workloads.append(
            {
                "name": w.name,
                "tenant": w.tenant,
                "replicas": w.replicas,
                "served": sum(served.values()),
                "pools": [p for p, n in sorted(served.items()) if n],
                "resources": pod_resources(w.need.hami),
                "priorityClassName": f"migc-{w.priority_tier}",
            }
        )
    return {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "HamiPlan",
        "cluster": cluster.name,
        "hamiVersion": HAMI_VERSION,
        "pools": [_pool_doc(pools[name], results[name]) for name in sorted(results)],
        "workloads": workloads,
    }


def hami_quota_hard(policy: Policy, tenant_name: str) -> dict[str, str]:
    """ResourceQuota ``hard`` on HAMi's names: burst where set, else guaranteed (as for MIG quotas)."""
    t = policy.tenant(tenant_name)
    hard: dict[str, str] = {}
    for key, g, b in (
        (f"requests.{RES_GPU}", t.guaranteed.hami_vgpus, t.burst.hami_vgpus),
        (f"limits.{RES_MEM}", t.guaranteed.hami_memory_mib, t.burst.hami_memory_mib),
        (f"limits.{RES_CORES}", t.guaranteed.hami_cores, t.burst.hami_cores),
    ):
        if b or g:
            hard[key] = str(b or g)
    return dict(sorted(hard.items()))


def hami_objects(policy: Policy, cluster: Cluster, solution: Solution) -> list[tuple[str, Obj]]:
    """Objects for the cluster's HAMi pools and quotas; nothing when the cluster has neither."""
    out: list[tuple[str, Obj]] = []
    if any(p.sharing.mode == "hami" for p in cluster.pools):
        config: Obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(
                CONFIGMAP, HAMI_NAMESPACE, annotations={"migc.dev/hami-version": HAMI_VERSION}
            ),
            "data": {"config.json": dump_json(device_plugin_config(cluster))},
        }
        out.append((f"hami/configmap-{CONFIGMAP}.yaml", config))
        plan: Obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(PLAN_CONFIGMAP, "migc-system"),
            "data": {"plan.json": dump_json(plan_document(policy, cluster, solution))},
        }
        out.append((f"migc-system/configmap-{PLAN_CONFIGMAP}.yaml", plan))
    for tenant in tenants_in(policy, cluster.name):
        hard = hami_quota_hard(policy, tenant.name)
        if not hard:
            continue
        for ns in sorted(tenant.namespaces):
            quota: Obj = {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": metadata("migc-hami", ns, extra_labels={"migc.dev/tenant": tenant.name}),
                "spec": {"hard": hard},
            }
            out.append((f"tenants/{tenant.name}/{ns}/resourcequota-migc-hami.yaml", quota))
    return out


def hami_diagnostics(policy: Policy) -> list[Diagnostic]:
    """MIGC315: a HAMi pool chosen by label selector (HAMi's nodeconfig is keyed by node name);
    MIGC316: a tenant quota counts whole GPUs and HAMi vGPUs under the same nvidia.com/gpu."""
    out: list[Diagnostic] = []
    for cluster in policy.clusters:
        for pool in cluster.pools:
            if pool.sharing.mode == "hami" and pool.uses_selector:
                out.append(
                    make(
                        "MIGC315",
                        f"pool {cluster.name}/{pool.name}: HAMi's device-plugin nodeconfig "
                        "names nodes; the rendered entries use placeholder names "
                        f"{pool.node_names[0]}..",
                        file=pool.span.file,
                        line=pool.span.line,
                        col=pool.span.col,
                        path=pool.span.path,
                    )
                )
    for t in policy.tenants:
        both = (t.guaranteed.gpus or t.burst.gpus) and (t.guaranteed.hami_vgpus or t.burst.hami_vgpus)
        if both:
            out.append(
                make(
                    "MIGC316",
                    f"tenant {t.name}: gpus and hami.vgpus are both counted as "
                    "requests.nvidia.com/gpu; each ResourceQuota caps the sum",
                    file=t.span.file,
                    line=t.span.line,
                    col=t.span.col,
                    path=t.span.path,
                )
            )
    return out
