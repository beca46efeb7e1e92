"""Per-pod GPU limits as a ValidatingAdmissionPolicy (``admissionregistration.k8s.io/v1``, GA in 1.30).

Why not a LimitRange. LimitRanger (kubernetes ``plugin/pkg/admission/limitranger/admission.go``)
enforces a ``type: Pod`` ``max[r]`` by requiring every pod to carry a limit for ``r``: a CPU-only pod
is rejected ("maximum … usage per Pod is N. No limit is specified"), and with several GPU resources
listed every pod is. ``type: Container`` rules would need a ``default`` for each resource, which gives
every container a GPU it did not ask for. A CEL policy can say what we mean: *if* a pod asks for
``r``, it may ask for at most ``N``.

One policy and one binding per tenant (both cluster-scoped). The binding selects the tenant's
namespaces by ``kubernetes.io/metadata.name``; the policy matches pod CREATE (a pod's extended
resources cannot change afterwards). Per GPU resource a variable holds the pod's *effective* amount,
Kubernetes' rule for init containers (``k8s.io/component-helpers/resource/helpers.go``): the larger of
(sum over app containers + sidecars) and (largest plain init container + sidecars). The sidecar term
on the init side counts every sidecar, not only the ones started before that init container: an
upper bound, so it can only reject a pod the exact rule would also put over the limit when the
sidecars are themselves GPU users. Limits are read first and requests second: for extended
resources the API server makes them equal and fills a missing request from the limit.

Quantities reach CEL as the API server serialises them (``"2"``); extended resources must be whole
numbers, so ``int(string(q))`` reads them. From 1000 on the canonical form is ``"1k"``, which ``int``
cannot parse: the evaluation fails and ``failurePolicy: Fail`` refuses the pod, which is what a pod
asking for a thousand GPUs deserves. ``sum()`` and ``max()`` are the list functions of
Kubernetes' CEL library (``k8s.io/apiserver/pkg/cel/library/lists.go``), available in every
version that serves the v1 API.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from compiler.catalog import Catalog
from compiler.model import Cluster, Policy, Tenant
from compiler.render.manifests import Obj, metadata, tenant_namespaces
from compiler.render.quota import hard_limits, per_node_max, resource_name, tenants_in

ADMISSION_API = "admissionregistration.k8s.io/v1"
MIN_KUBERNETES = (1, 30)  # ValidatingAdmissionPolicy admissionregistration.k8s.io/v1 is GA from 1.30


def policy_name(tenant: str) -> str:
    return f"migc-gpu-{tenant}"


def variable_name(resource: str) -> str:
    """A CEL identifier for an extended resource: ``nvidia.com/mig-1g.10gb`` → ``nvidia_com_mig_1g_10gb``."""
    return re.sub(r"[^A-Za-z0-9_]", "_", resource)


def _amount(container: str, resource: str) -> str:
    """CEL: how much of ``resource`` one container asks for (limit, else request, else 0)."""
    key = f"'{resource}'"
    res = f"{container}.resources"
    return (
        f"(!has({container}.resources) ? 0 : "
        f"has({res}.limits) && {key} in {res}.limits ? int(string({res}.limits[{key}])) : "
        f"has({res}.requests) && {key} in {res}.requests ? int(string({res}.requests[{key}])) : 0)"
    )


def effective_expression(resource: str) -> str:
    """CEL: the pod's effective amount of ``resource`` (init-container rule, see the module docstring)."""
    amount = _amount("c", resource)
    app = f"variables.containers.map(c, {amount}).sum()"
    sidecars = f"variables.sidecars.map(c, {amount}).sum()"
    inits = f"([0] + variables.inits.map(c, {amount})).max()"
    return f"[{app} + {sidecars}, {inits} + {sidecars}].max()"


# Containers grouped the way the effective-request rule needs them. ``restartPolicy: Always`` on an
# init container makes it a sidecar (KEP-753, beta and on by default since 1.29).
_VARIABLES = (
    ("containers", "object.spec.containers"),
    (
        "sidecars",
        "has(object.spec.initContainers) ? object.spec.initContainers.filter(c, "
        "has(c.restartPolicy) && c.restartPolicy == 'Always') : []",
    ),
    (
        "inits",
        "has(object.spec.initContainers) ? object.spec.initContainers.filter(c, "
        "!has(c.restartPolicy) || c.restartPolicy != 'Always') : []",
    ),
)


def admission_objects(tenant: Tenant, limits: Mapping[str, int]) -> list[tuple[str, Obj]]:
    """The policy and its binding for one tenant; ``limits`` maps extended resource → most per pod."""
    if not limits:
        return []
    name = policy_name(tenant.name)
    label = {"migc.dev/tenant": tenant.name}
    variables = [{"name": n, "expression": e} for n, e in _VARIABLES]
    validations = []
    for resource, most in sorted(limits.items()):
        var = variable_name(resource)
        variables.append({"name": var, "expression": effective_expression(resource)})
        validations.append(
            {
                "expression": f"variables.{var} <= {most}",
                "messageExpression": (
                    f"'pod asks for ' + string(variables.{var}) + ' {resource}; tenant {tenant.name} "
                    f"allows at most {most} per pod (its quota, or the most one node offers)'"
                ),
                "reason": "Forbidden",
            }
        )
    policy: Obj = {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": metadata(name, extra_labels=label),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "variables": variables,
            "validations": validations,
        },
    }
    binding: Obj = {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": metadata(name, extra_labels=label),
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": tenant_namespaces(tenant),
        },
    }
    base = f"tenants/{tenant.name}"
    return [
        (f"{base}/validatingadmissionpolicy-{name}.yaml", policy),
        (f"{base}/validatingadmissionpolicybinding-{name}.yaml", binding),
    ]


def per_pod_limits(tenant: Tenant, node_max: Mapping[str, int]) -> dict[str, int]:
    """Extended resource → most one pod of the tenant may ask for.

    No pod can get more than the tenant's hard limit, nor more than one node can ever offer; a bigger
    request would sit Pending forever instead of failing fast. A resource the tenant may not use at
    all (limit 0) is left to the ResourceQuota, which rejects any request for it.
    """
    out: dict[str, int] = {}
    for resource, limit in hard_limits(tenant).items():
        most = min(limit, node_max.get(resource, limit))
        if most > 0:
            out[resource_name(resource)] = most
    return dict(sorted(out.items()))


def cluster_admission(policy: Policy, cluster: Cluster, catalog: Catalog) -> list[tuple[str, Obj]]:
    """Every tenant's policy and binding in one cluster."""
    node_max = per_node_max(cluster, catalog)
    out: list[tuple[str, Obj]] = []
    for tenant in tenants_in(policy, cluster.name):
        out.extend(admission_objects(tenant, per_pod_limits(tenant, node_max)))
    return out
