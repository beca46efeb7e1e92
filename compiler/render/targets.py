"""Patches that bind a workload to the object that runs its pods (``Workload.spec.target``).

For every workload with a target migc renders, beside the cluster's objects (never listed in the
cluster's kustomization), ``<cluster>/patches/<namespace>/`` holding one patch per target plus a
kustomize ``Component`` listing them, so an application's kustomization adds
``components: [<path to output>/<cluster>/patches/<namespace>]`` and its pods request exactly what the
solution reserved:

* the GPU resources as container ``limits`` (extended resources: Kubernetes sets the request equal to
  the limit): HAMi ``nvidia.com/gpu`` + ``nvidia.com/gpumem`` (or ``-percentage``) + ``nvidia.com/gpucores``;
  the MIG profile the solver chose (``nvidia.com/mig-<profile>``); or ``nvidia.com/gpu`` for whole or
  time-sliced GPUs;
* ``priorityClassName: migc-<tier>``, HAMi's scheduler-policy pod annotations on HAMi pools, and with
  ``--with kueue`` the ``kueue.x-k8s.io/queue-name`` label (the tenant namespace's LocalQueue ``migc``);
* for a workload with a ``spread``: the pod label ``migc.dev/workload: <name>`` and one
  ``topologySpreadConstraints`` entry per key (``kubernetes.io/hostname`` for minNodes/maxPerNode, the
  spread's ``topologyKey`` for maxPerDomain), ``maxSkew: 1``, ``whenUnsatisfiable: ScheduleAnyway``.
  The solver places the *capacity* per node/domain exactly; the scheduler only *prefers* to spread the
  pods. A hard ``DoNotSchedule`` would be wrong here: the kube-scheduler counts every node that passes
  the pod's node affinity as a domain, including nodes without the MIG resource (their count stays
  0), so a second replica on any node would exceed ``maxSkew`` (kubernetes
  pkg/scheduler/framework/plugins/podtopologyspread/filtering.go: the minimum is taken over all
  eligible domains; resource fit is another plugin). Entries merge with the pod's own by
  ``topologyKey`` (k8s.io/api core/v1 ``TopologySpreadConstraint``: patchMergeKey topologyKey).

With ``target.container`` the patch is a strategic-merge patch (containers merge by name, kustomize's
``patchesStrategicMerge`` semantics from k8s.io/api's ``patchMergeKey``); without it the component's
``replacements`` set the keys in the first container's ``resources.limits``, creating ``resources`` and
``limits`` where the container has none (see :func:`first_container_limits`: a JSON 6902 patch cannot).
"""

from __future__ import annotations

from typing import Any

from compiler.diagnostics import Diagnostic, at
from compiler.model import HOSTNAME_KEY, WHOLE_GPU, Cluster, Policy, Workload
from compiler.render import dra
from compiler.render.hami import pod_annotations
from compiler.render.quota import resource_name
from compiler.solve.hami import pod_resources
from compiler.solve.result import Solution

Obj = dict[str, Any]
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOAD_LABEL = "migc.dev/workload"
LOCAL_QUEUE = "migc"


def resolved_resources(workload: Workload, solution: Solution) -> tuple[dict[str, str], list[str]]:
    """What each pod requests, and the other resources the solution also used for it (ignored)."""
    if workload.need.hami is not None:
        return pod_resources(workload.need.hami), []
    served: dict[str, int] = {}
    for pool in solution.pools:
        if pool.cluster != workload.cluster:
            continue
        for d in pool.demand:
            if d.workload == workload.name and d.served:
                served[d.resource] = served.get(d.resource, 0) + d.served
    if not served:
        return {}, []
    ranked = sorted(served, key=lambda r: (-served[r], r))
    chosen = ranked[0]
    count = max(1, workload.need.gpus) if chosen == WHOLE_GPU else 1
    return {resource_name(chosen): str(count)}, ranked[1:]


def _pod_template_path(kind: str) -> list[str]:
    return ["spec", "jobTemplate", "spec", "template"] if kind == "CronJob" else ["spec", "template"]


def _nest(path: list[str], leaf: Obj) -> Obj:
    out: Obj = leaf
    for key in reversed(path):
        out = {key: out}
    return out


def _pointer(parts: list[str]) -> str:
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def strategic_patch(
    workload: Workload, resources: dict[str, str], annotations: dict[str, str], with_kueue: bool
) -> Obj:
    """Strategic-merge patch: priority class, labels, annotations, and (with a container) its limits."""
    target = workload.target
    assert target is not None
    labels = {QUEUE_LABEL: LOCAL_QUEUE} if with_kueue else {}
    constraints = spread_constraints(workload)
    pod_labels = {**labels, WORKLOAD_LABEL: workload.name} if constraints else labels
    template: Obj = {}
    if pod_labels or annotations:
        template["metadata"] = {k: v for k, v in (("labels", pod_labels), ("annotations", annotations)) if v}
    spec: Obj = {"priorityClassName": f"migc-{workload.priority_tier}"}
    if constraints:
        spec["topologySpreadConstraints"] = constraints
    if target.container:
        spec["containers"] = [{"name": target.container, "resources": {"limits": dict(resources)}}]
    template["spec"] = spec
    meta: Obj = {"name": target.name, "namespace": target.namespace}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": target.api_version,
        "kind": target.kind,
        "metadata": meta,
        **_nest(_pod_template_path(target.kind), template),
    }


def spread_constraints(workload: Workload) -> list[Obj]:
    """The pod's topologySpreadConstraints for its spread (a preference; see the module docstring)."""
    spread = workload.spread
    if spread is None:
        return []
    keys = [HOSTNAME_KEY] if spread.per_node else []
    if spread.topology_key and spread.topology_key not in keys:
        keys.append(spread.topology_key)
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {WORKLOAD_LABEL: workload.name}},
        }
        for key in keys
    ]


LIMITS_KIND = "TargetLimits"  # a local-config object: the source of the replacements, never applied
LOCAL_CONFIG = "config.kubernetes.io/local-config"


def first_container_limits(namespace: str, stem: str, resources: dict[str, str]) -> Obj:
    """The values the first container's ``resources.limits`` must carry, as a local-config object.

    A JSON 6902 ``add`` of ``.../resources/limits/nvidia.com~1gpu`` fails where the container has no
    ``limits`` (kustomize applies JSON patches with gopkg.in/evanphx/json-patch.v4, which has no
    "create missing parents": kubernetes-sigs/kustomize 12f9e639 api/filters/patchjson6902/
    patchjson6902.go), and adding the whole ``limits`` would drop the container's CPU and memory
    limits. Kustomize ``replacements`` with ``options.create`` set exactly the named keys and create
    ``resources``/``limits`` where missing (api/filters/replacement/replacement.go:313); the source
    carries ``config.kubernetes.io/local-config`` so kustomize drops it from the build
    (api/internal/target/kusttarget.go:255 IgnoreLocal).
    """
    return first_container_values(namespace, stem, "limits", dict(sorted(resources.items())))


def _source_name(field: str, stem: str) -> str:
    """The local-config source object of a target's first-container ``resources.<field>``."""
    return f"migc-{field}-{stem}"


def _field(parts: list[str]) -> str:
    """A kustomize field path; keys holding dots or slashes in brackets (kyaml SmarterPathSplitter)."""
    return ".".join(f"[{p}]" if ("." in p or "/" in p) else p for p in parts)


def first_container_replacements(
    kind: str, stem: str, namespace: str, selector: Obj, resources: dict[str, str]
) -> list[Obj]:
    """One kustomize replacement per resource: limits object → the first container's limit."""
    base = [*_pod_template_path(kind), "spec", "containers", "0", "resources", "limits"]
    return [
        {
            "source": {
                "group": "migc.dev",
                "version": "v1alpha1",
                "kind": LIMITS_KIND,
                "name": _source_name("limits", stem),
                "namespace": namespace,
                "fieldPath": _field(["limits", key]),
            },
            "targets": [
                {"select": selector, "fieldPaths": [_field([*base, key])], "options": {"create": True}}
            ],
        }
        for key in sorted(resources)
    ]


def first_container_values(namespace: str, stem: str, field: str, value: Any) -> Obj:
    """Like :func:`first_container_limits`, for one whole ``resources`` field (DRA's ``claims``)."""
    return {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": LIMITS_KIND,
        "metadata": {
            "name": _source_name(field, stem),
            "namespace": namespace,
            "annotations": {LOCAL_CONFIG: "true"},
        },
        field: value,
    }


def first_container_replacement(kind: str, stem: str, namespace: str, selector: Obj, field: str) -> Obj:
    """The first container's ``resources.<field>`` from :func:`first_container_values`, created where
    the container has no ``resources`` (the sequence is copied whole)."""
    path = [*_pod_template_path(kind), "spec", "containers", "0", "resources", field]
    return {
        "source": {
            "group": "migc.dev",
            "version": "v1alpha1",
            "kind": LIMITS_KIND,
            "name": _source_name(field, stem),
            "namespace": namespace,
            "fieldPath": field,
        },
        "targets": [{"select": selector, "fieldPaths": [_field(path)], "options": {"create": True}}],
    }


def _selector(w: Workload) -> Obj:
    """The kustomize patch target of a JSON 6902 patch: the workload's target object."""
    t = w.target
    assert t is not None
    group, _, version = t.api_version.rpartition("/")
    return {
        **({"group": group} if group else {}),
        "version": version,
        "kind": t.kind,
        "name": t.name,
        "namespace": t.namespace,
    }


def target_files(
    policy: Policy, cluster: Cluster, solution: Solution, with_kueue: bool
) -> tuple[dict[str, Obj | list[Obj]], list[Diagnostic]]:
    """``patches/<namespace>/...`` files of one cluster (relative to the cluster folder), and notes."""
    files: dict[str, Obj | list[Obj]] = {}
    diags: list[Diagnostic] = []
    entries: dict[str, list[Obj]] = {}
    limits: dict[str, list[str]] = {}  # namespace → the local-config limits files of its component
    replacements: dict[str, list[Obj]] = {}
    pools = {p.name: p for p in cluster.pools}
    hami_pool = {r.pool for r in solution.hami if r.cluster == cluster.name}
    for w in sorted(policy.workloads, key=lambda w: w.name):
        if w.cluster != cluster.name or w.target is None:
            continue
        resources, others = resolved_resources(w, solution)
        span = w.span
        if not resources:
            diags.append(
                at(
                    "MIGC318",
                    f"workload {w.name}: the solution serves none of its replicas; no patch "
                    f"for {w.target.kind} {w.target.namespace}/{w.target.name}",
                    span,
                )
            )
            continue
        t = w.target
        stem = f"{t.kind.lower()}-{t.name}" + (f"-{t.container}" if t.container else "")
        if dra.workload_on_dra(w, cluster, solution):  # resourceClaims instead of limits (docs/dra.md)
            patch, claims = dra.target_patch(w, strategic_patch(w, {}, {}, with_kueue))
            files[f"patches/{t.namespace}/{stem}.yaml"] = patch
            entries.setdefault(t.namespace, []).append({"path": f"{stem}.yaml"})
            if claims is not None:
                files[f"patches/{t.namespace}/{stem}-claims.yaml"] = first_container_values(
                    t.namespace, stem, "claims", claims
                )
                limits.setdefault(t.namespace, []).append(f"{stem}-claims.yaml")
                replacements.setdefault(t.namespace, []).append(
                    first_container_replacement(t.kind, stem, t.namespace, _selector(w), "claims")
                )
            continue
        if others:
            diags.append(
                at(
                    "MIGC317",
                    f"workload {w.name} is served by {', '.join([*resources, *others])}; "
                    f"its patch requests {next(iter(resources))}, the most served",
                    span,
                )
            )
        annotations: dict[str, str] = {}
        if w.need.hami is not None:
            usable = [pools[p] for p in sorted(hami_pool) if not w.pools or p in w.pools]
            if usable:
                annotations = pod_annotations(usable[0])
        files[f"patches/{t.namespace}/{stem}.yaml"] = strategic_patch(w, resources, annotations, with_kueue)
        entries.setdefault(t.namespace, []).append({"path": f"{stem}.yaml"})
        if not t.container:
            limits_file = f"patches/{t.namespace}/{stem}-limits.yaml"
            files[limits_file] = first_container_limits(t.namespace, stem, resources)
            limits.setdefault(t.namespace, []).append(f"{stem}-limits.yaml")
            replacements.setdefault(t.namespace, []).extend(
                first_container_replacements(t.kind, stem, t.namespace, _selector(w), resources)
            )
    for ns, items in sorted(entries.items()):
        component: Obj = {"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component"}
        if ns in limits:
            component["resources"] = sorted(limits[ns])
        component["patches"] = sorted(items, key=lambda e: str(e["path"]))
        if ns in replacements:
            component["replacements"] = replacements[ns]
        files[f"patches/{ns}/kustomization.yaml"] = component
    return dict(sorted(files.items())), diags


def target_diagnostics(policy: Policy, solution: Solution) -> list[Diagnostic]:
    """MIGC317/MIGC318 of every cluster's targets."""
    out: list[Diagnostic] = []
    for cluster in sorted(policy.clusters, key=lambda c: c.name):
        out.extend(target_files(policy, cluster, solution, with_kueue=False)[1])
    return out
