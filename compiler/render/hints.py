"""Pods that keep asking ``nvidia.com/gpu: 1`` with hints, on device-plugin pools.

Enabled per tenant by ``Tenant.spec.rewriteGpuRequests``.

A team can keep its data scientists' pods as they are — ``nvidia.com/gpu: 1`` plus an annotation
``migc.dev/profile-preference: "1g.10gb,2g.20gb"`` (the same annotation ``migc recommend`` reads) or
``migc.dev/gpu-memory-gb: "12"`` — and have them served by MIG slices. Per such tenant and cluster
migc renders a MutatingAdmissionPolicy (``admissionregistration.k8s.io/v1``, GA in Kubernetes 1.36;
``v1beta1`` on 1.34-1.35, where the ``MutatingAdmissionPolicy`` feature gate and the v1beta1 API must
be enabled) and its binding on the tenant's namespaces. On pod CREATE it picks

1. the first profile of the preference annotation that the tenant's quota names and the cluster's
   device-plugin MIG pools offer, else
2. the smallest such profile with at least the hinted GPU memory,

and replaces ``nvidia.com/gpu`` with ``nvidia.com/mig-<profile>`` (``+`` → ``.``) in the limits (and
requests) of every app container asking exactly one GPU (the first 16 containers). Limits: the policy
sees one pod, not the cluster: it does not know whether that profile is free (a DRA claim's
``firstAvailable`` does); a hint naming no usable profile leaves the pod unchanged, so it asks for a
whole GPU as written. ``tests/test_dra_hints.py`` evaluates the expressions with a real CEL library.
"""

from __future__ import annotations

from compiler.catalog import Catalog
from compiler.model import WHOLE_GPU, Cluster, Policy, Tenant
from compiler.render.manifests import Obj, metadata, tenant_namespaces
from compiler.render.quota import hard_limits, resource_name, tenants_in

PREFERENCE = "migc.dev/profile-preference"
MEMORY_HINT = "migc.dev/gpu-memory-gb"
MAX_CONTAINERS = 16
MAP_GA = (1, 36)


def api_version(cluster: Cluster) -> str:
    major, minor = (int(x) for x in cluster.kubernetes_version.split(".")[:2])
    return "admissionregistration.k8s.io/" + ("v1" if (major, minor) >= MAP_GA else "v1beta1")


def profiles_for(tenant: Tenant, cluster: Cluster, catalog: Catalog) -> list[tuple[str, float]]:
    """(profile, GB) the tenant may be rewritten to: named by its quota, on a device-plugin MIG pool."""
    memory: dict[str, float] = {}
    for pool in cluster.pools:
        model = catalog.get(pool.gpu_model)
        if pool.is_dra or not pool.mig or model is None:
            continue
        for prof in model.profiles:
            memory.setdefault(prof.name, prof.memory_gb)
    named = [r for r in hard_limits(tenant) if r != WHOLE_GPU and r in memory]
    return sorted(((r, memory[r]) for r in named), key=lambda rm: (rm[1], rm[0]))


def _asking(where: str) -> str:
    """Indices of app containers whose ``where`` (limits / requests) ask exactly one nvidia.com/gpu."""
    c = "object.spec.containers[i]"
    indices = ", ".join(str(i) for i in range(MAX_CONTAINERS))
    return (
        f"[{indices}].filter(i, i < size(object.spec.containers) && has({c}.resources) && "
        f"has({c}.resources.{where}) && 'nvidia.com/gpu' in {c}.resources.{where} && "
        f"string({c}.resources.{where}['nvidia.com/gpu']) == '1')"
    )


def _ops(where: str) -> str:
    base = "'/spec/containers/' + string(i) + '/resources/" + where + "/"
    return (
        f"variables.{where}.map(i, JSONPatch{{op: 'remove', path: {base}nvidia.com~1gpu'}}) + "
        f"variables.{where}.map(i, JSONPatch{{op: 'add', "
        f"path: {base}' + variables.resource[variables.profile], "
        "value: '1'})"
    )


def policy_spec(profiles: list[tuple[str, float]]) -> Obj:
    names = ", ".join(f"'{p}'" for p, _ in profiles)
    memory = ", ".join(f"'{p}': {gb:.1f}" for p, gb in profiles)
    resources = ", ".join(f"'{p}': '{resource_name(p).replace('/', '~1')}'" for p, _ in profiles)
    ann = "object.metadata.annotations"
    variables = [
        ("allowed", f"[{names}]"),
        ("memory", f"{{{memory}}}"),
        ("resource", f"{{{resources}}}"),
        (
            "preferred",
            f"'{PREFERENCE}' in {ann} ? {ann}['{PREFERENCE}'].split(',').map(p, p.trim())"
            ".filter(p, p in variables.allowed) : []",
        ),
        (
            "needGB",
            f"'{MEMORY_HINT}' in {ann} && {ann}['{MEMORY_HINT}'].matches('^[0-9]+([.][0-9]+)?$') ? "
            f"double({ann}['{MEMORY_HINT}']) : -1.0",
        ),
        (
            "fitting",
            "variables.needGB < 0.0 ? [] : "
            "variables.allowed.filter(p, variables.memory[p] >= variables.needGB)",
        ),
        (
            "profile",
            "size(variables.preferred) > 0 ? variables.preferred[0] : "
            "(size(variables.fitting) > 0 ? variables.fitting[0] : '')",
        ),
        ("limits", _asking("limits")),
        ("requests", _asking("requests")),
    ]
    return {
        "failurePolicy": "Fail",
        "reinvocationPolicy": "Never",
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ]
        },
        "matchConditions": [
            {
                "name": "hinted",
                "expression": f"has(object.metadata.annotations) && ('{PREFERENCE}' in {ann} || "
                f"'{MEMORY_HINT}' in {ann})",
            }
        ],
        "variables": [{"name": n, "expression": e} for n, e in variables],
        "mutations": [
            {
                "patchType": "JSONPatch",
                "jsonPatch": {
                    "expression": f"variables.profile == '' ? [] : {_ops('limits')} + {_ops('requests')}"
                },
            }
        ],
    }


def hint_objects(policy: Policy, cluster: Cluster, catalog: Catalog) -> list[tuple[str, Obj]]:
    out: list[tuple[str, Obj]] = []
    version = api_version(cluster)
    for tenant in tenants_in(policy, cluster.name):
        profiles = profiles_for(tenant, cluster, catalog) if tenant.rewrite_gpu_requests else []
        if not profiles:
            continue
        name = f"migc-gpu-hints-{tenant.name}"
        label = {"migc.dev/tenant": tenant.name}
        mutating: Obj = {
            "apiVersion": version,
            "kind": "MutatingAdmissionPolicy",
            "metadata": metadata(name, extra_labels=label),
            "spec": policy_spec(profiles),
        }
        binding: Obj = {
            "apiVersion": version,
            "kind": "MutatingAdmissionPolicyBinding",
            "metadata": metadata(name, extra_labels=label),
            "spec": {
                "policyName": name,
                "matchResources": tenant_namespaces(tenant),
            },
        }
        base = f"tenants/{tenant.name}"
        out.append((f"{base}/mutatingadmissionpolicy-{name}.yaml", mutating))
        out.append((f"{base}/mutatingadmissionpolicybinding-{name}.yaml", binding))
    return out
