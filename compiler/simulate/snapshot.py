"""The replay's state at one instant, written as ``migc recommend``'s own inputs.

``migc simulate`` runs recommend's decision (:func:`compiler.recommend.engine.recommend`) on objects
it builds in memory. :func:`write_inputs` writes those objects as the files a user would hand to
``migc recommend``, so the one decision can be checked from the outside::

    migc recommend DEST/policy --snapshot DEST/cluster.json --against DEST/output \\
        --state DEST/observed-demand.yaml --now <obs.taken_at> --dry-run

Layout under ``dest`` (a directory that does not exist yet, or an empty one):

* ``policy/fleet.yaml``, ``policy/tenants.yaml``, ``policy/workloads.yaml``,
  ``policy/partition.yaml`` — the Fleet, the Tenants, the Workloads and the PartitionPolicy, dumped
  with ruamel.yaml (the loader's library) in a fixed key order;
* ``output/`` — ``migc compile``'s rendered tree of the deployed layouts (:func:`compiler.render.render`
  of a solution that keeps every node of ``current`` as it is, written by
  :func:`compiler.render.writer.write_tree`), of which :func:`compiler.current.read_current` reads
  the NodeAssignment; an empty directory when nothing is deployed;
* ``cluster.json`` — a ``kubectl get pods,nodes -A -o json`` List of the observed nodes and pods;
* ``observed-demand.yaml`` — the ObservedDemand state, dumped by :func:`compiler.recommend.state.dump_state`.

Nothing is written that its reader does not take back unchanged. Every field of every policy type is
either written or must keep its default (:data:`WRITTEN`, :data:`DERIVED`; anything else set is a
:class:`SnapshotRefused` naming the field), and before anything lands under ``dest`` each file is
read back by the reader ``migc recommend`` uses — the policy loader and validation, the snapshot
parser at ``obs.taken_at``, the state reader at ``obs.taken_at``, and ``read_current`` — and compared
with what was given; the first difference is refused, named by its path. The files are staged in a
temporary directory beside ``dest`` and renamed into place only once all of them read back, so a
refusal leaves nothing behind.

What reads back as something else by design (the writer accepts it and says so here):

* ``Policy.source_files`` becomes the written file names (the loader records them);
* a named pool's ``NodePool.node_count`` of 0 reads back as ``len(node_names)``, what the loader
  resolves (only selector pools use it);
* ``CurrentState.backends`` of ``()`` reads back as ``device-plugin`` (``dra-static`` for a static
  DRA pool) for every pool the output lays out, what every rendered assignment records (only
  ``migc plan`` reads it);
* ``State.updated`` of ``None`` is written as ``obs.taken_at`` (the state file always carries
  ``updated``; the reader uses it only to judge a state without history stale);
* ``Observation.source`` and ``Observation.warnings`` are the reader's own; ``State.notes`` is
  neither written nor compared (recommend does not read it).

What is refused, besides the policy fields of no table (HAMi, DynamicMIG, sharing, quotas, reserve,
maintenance windows, selectors, labels, targets, spread, ``need.gpuMemoryGB``/``computeSlices``):
anything the reader would take as something else — a time that is naive or not whole seconds; a
pending pod whose ``created`` is not ``taken_at − pending_seconds`` (the reader counts the wait from
``creationTimestamp``); a pod or node name that is no Kubernetes name, a resource that is no catalog
profile, a ``max_wait_seconds`` of 0, pods or nodes out of the reader's order; a node label that
disagrees with the field read from it (``nvidia.com/mig.config``, ``…/gpu.product``, ``…/gpu.count``);
a policy that does not validate (a zero duration, MIGC114; a rule naming a pool the fleet lacks); a
pool price other than the Fleet pricing of its model; a state whose history the reader would drop
as stale, or a change after ``updated`` or more than a day (or the minDwell, when longer) before
it (``dump_state`` keeps neither).
Several clusters and pools are written as such. :meth:`Inputs.recommend_args` are the arguments of
the dry run above; ``obs.taken_at`` is its ``--now``, so recommend's ``now`` must be it too.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from compiler.catalog import Catalog, load_catalog
from compiler.current import read_current
from compiler.diagnostics import Diagnostic
from compiler.fsio import write_files_atomic
from compiler.load import load_text
from compiler.model import (
    Cluster,
    CurrentState,
    GpuLayout,
    Need,
    NodePool,
    PartitionPolicy,
    Policy,
    PriorityTier,
    Rule,
    RuleCondition,
    Tenant,
    Workload,
)
from compiler.observe import Observation
from compiler.observe.model import GPU_RESOURCE, ObservedNode, ObservedPod, profile_of
from compiler.observe.parse import (
    APPLIED,
    ATTEMPTS,
    GPU_COUNT,
    GPU_PRODUCT,
    LAST_ERROR,
    MAX_WAIT,
    MIG_CONFIG,
    MIG_STATE,
    PAUSED,
    PHASE,
    PHASE_SINCE,
    PREVIOUS,
    PROFILE_PREFERENCE,
    STARTED_AT,
    TARGET,
    parse_objects,
)
from compiler.recommend.state import State, change_horizon, dump_state, parse_state, refused_keys
from compiler.render import render
from compiler.render.dra import CLAIM_NAME, class_name
from compiler.render.writer import write_tree
from compiler.schemas import API_VERSION
from compiler.solve.result import NodeResult, PoolResult, Solution
from compiler.validate import validate

POLICY_DIR = "policy"
OUTPUT_DIR = "output"
CLUSTER_FILE = "cluster.json"
STATE_FILE = "observed-demand.yaml"
FLEET_FILE = "fleet.yaml"
TENANTS_FILE = "tenants.yaml"
WORKLOADS_FILE = "workloads.yaml"
PARTITION_FILE = "partition.yaml"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class SnapshotRefused(ValueError):
    """The objects cannot be written as inputs ``migc recommend`` reads back unchanged (the message
    names the field), or ``dest`` is not a fresh directory. Nothing was written."""


@dataclass(frozen=True)
class Inputs:
    """Where :func:`write_inputs` put each of ``migc recommend``'s inputs, and the instant they show."""

    root: Path
    policy: Path  # the policy directory (POLICY_PATH)
    output: Path  # --against
    cluster: Path  # --snapshot
    state: Path  # --state
    now: dt.datetime  # --now: the observation's taken_at

    def recommend_args(self) -> list[str]:
        """``migc recommend``'s arguments for these inputs (a dry run, at ``now``)."""
        return [
            "recommend",
            str(self.policy),
            "--snapshot",
            str(self.cluster),
            "--against",
            str(self.output),
            "--state",
            str(self.state),
            "--now",
            _stamp(self.now, "now"),
            "--dry-run",
        ]


# Every compared field of every policy type the writer walks: written to the policy files, or
# derived by the loader from what is written (and then checked by the read-back). Any other field
# must keep its default. tests/unit/compiler/simulate/test_snapshot.py walks dataclasses.fields of
# each type against these tables, so a field added to the model fails there until it is placed.
WRITTEN: Mapping[type, frozenset[str]] = {
    Policy: frozenset({"clusters", "tenants", "workloads", "partition", "fleet_name"}),
    Cluster: frozenset({"name", "pools", "gpu_operator_namespace", "kubernetes_version"}),
    NodePool: frozenset(
        {
            "name",
            "cluster",
            "gpu_product",
            "gpus_per_node",
            "node_names",
            "max_unavailable",
            "idle_surge",
            "allocation",
        }
    ),
    Tenant: frozenset({"name", "namespaces", "priority_tier", "create_namespaces"}),
    Workload: frozenset(
        {"name", "tenant", "replicas", "need", "isolation", "priority_tier", "cluster", "pools"}
    ),
    Need: frozenset({"profiles", "gpus"}),
    PartitionPolicy: frozenset(
        {
            "mode",
            "interval_seconds",
            "reconfiguration_threshold_pct",
            "stabilization_seconds",
            "scale_down_seconds",
            "min_dwell_seconds",
            "backoff_initial_seconds",
            "backoff_max_seconds",
            "backoff_factor",
            "daily_change_budget",
            "unmet_demand",
            "allow_media_extensions",
            "objective",
            "tiers",
            "rules",
            "pricing",
        }
    ),
    PriorityTier: frozenset({"name", "value", "description"}),
    Rule: frozenset({"name", "when", "maximize", "pools"}),
    RuleCondition: frozenset({"pending_pods_greater_than", "max_requested_memory_gb_below", "profile"}),
}
DERIVED: Mapping[type, frozenset[str]] = {
    Policy: frozenset({"source_files"}),  # the written file names
    NodePool: frozenset({"gpu_model", "node_count", "mig", "price_per_gpu_hour"}),  # product, names, pricing
}


# ------------------------------------------------------------------------------------------- checks


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _refuse_unwritten(obj: Any, where: str) -> None:
    """:class:`SnapshotRefused` for the first compared field of ``obj`` that is neither written nor
    derived and is off its default (a field without a default that is not written: always)."""
    kind = type(obj)
    known = WRITTEN.get(kind, frozenset()) | DERIVED.get(kind, frozenset())
    for f in dataclasses.fields(obj):
        if not f.compare or f.name in known:
            continue
        value = getattr(obj, f.name)
        default = _default(f)
        if default is dataclasses.MISSING or value != default:
            raise SnapshotRefused(
                f"{where}.{f.name} = {value!r}: {kind.__name__}.{f.name} is not written by the snapshot "
                f"writer (compiler/simulate/snapshot.py); only its default {default!r} is accepted"
            )


def _check_policy(policy: Policy) -> None:
    _refuse_unwritten(policy, "policy")
    for ci, cluster in enumerate(policy.clusters):
        _refuse_unwritten(cluster, f"policy.clusters[{ci}]")
        for pi, pool in enumerate(cluster.pools):
            where = f"policy.clusters[{ci}].pools[{pi}]"
            _refuse_unwritten(pool, where)
            if pool.node_count not in (0, len(pool.node_names)):
                raise SnapshotRefused(
                    f"{where}.node_count = {pool.node_count}: a pool of named nodes has "
                    f"{len(pool.node_names)} nodes (0 is read as that too)"
                )
    for ti, tenant in enumerate(policy.tenants):
        _refuse_unwritten(tenant, f"policy.tenants[{ti}]")
    for wi, workload in enumerate(policy.workloads):
        _refuse_unwritten(workload, f"policy.workloads[{wi}]")
        _refuse_unwritten(workload.need, f"policy.workloads[{wi}].need")
    part = policy.partition
    _refuse_unwritten(part, "policy.partition")
    for i, tier in enumerate(part.tiers):
        _refuse_unwritten(tier, f"policy.partition.tiers[{i}]")
    for i, rule in enumerate(part.rules):
        _refuse_unwritten(rule, f"policy.partition.rules[{i}]")
        _refuse_unwritten(rule.when, f"policy.partition.rules[{i}].when")


def first_difference(want: Any, got: Any, where: str) -> str | None:
    """The path of the first compared field where ``got`` differs from ``want``, with both values;
    ``None`` when they are equal."""
    if want == got:
        return None
    if dataclasses.is_dataclass(want) and type(want) is type(got) and not isinstance(want, type):
        for f in dataclasses.fields(want):
            if f.compare:
                found = first_difference(getattr(want, f.name), getattr(got, f.name), f"{where}.{f.name}")
                if found is not None:
                    return found
    if isinstance(want, tuple) and isinstance(got, tuple) and len(want) == len(got):
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found is not None:
                return found
    return f"{where}: {_short(want)} is read back as {_short(got)}"


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _refuse_diagnostics(what: str, diags: Sequence[Diagnostic], errors_only: bool = False) -> None:
    shown = [d for d in diags if not errors_only or d.severity.name == "ERROR"]
    if shown:
        d = shown[0]
        more = f" (and {len(shown) - 1} more)" if len(shown) > 1 else ""
        raise SnapshotRefused(f"{what} does not read back: {d.code} {d.message}{more}")


def _stamp(t: dt.datetime | None, what: str) -> str:
    """``t`` as the API writes a timestamp; whole seconds of an aware time only."""
    if t is None or t.tzinfo is None or t.utcoffset() is None:
        raise SnapshotRefused(f"{what} = {t!r}: a time zone-aware datetime is needed")
    if t.microsecond:
        raise SnapshotRefused(f"{what} = {t.isoformat()}: only whole seconds are written")
    return t.astimezone(dt.UTC).strftime(TIME_FORMAT)


def _duration(seconds: int) -> str:
    """Seconds as the policy language writes a duration (``1h30m``; ``0s``)."""
    if seconds < 0:
        raise SnapshotRefused(f"a duration of {seconds}s cannot be written")
    d, rest = divmod(seconds, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    text = "".join(f"{n}{u}" for n, u in ((d, "d"), (h, "h"), (m, "m"), (s, "s")) if n)
    return text or "0s"


# ------------------------------------------------------------------------------------------- policy


def _doc(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name}, "spec": spec}


def _fleet(policy: Policy) -> dict[str, Any]:
    clusters = []
    for cluster in policy.clusters:
        pools = []
        for pool in cluster.pools:
            pools.append(
                {
                    "name": pool.name,
                    "gpuProduct": pool.gpu_product,
                    "gpusPerNode": pool.gpus_per_node,
                    "nodes": {"names": list(pool.node_names)},
                    "maxUnavailable": pool.max_unavailable,
                    "idleSurge": pool.idle_surge,
                }
            )
            if pool.is_dra:  # static only: dra_mig keeps its default (a DynamicMIG pool is refused)
                pools[-1] |= {"allocation": pool.allocation, "dra": {"mig": pool.dra_mig}}
        clusters.append(
            {
                "name": cluster.name,
                "kubernetesVersion": cluster.kubernetes_version,
                "gpuOperatorNamespace": cluster.gpu_operator_namespace,
                "nodePools": pools,
            }
        )
    spec: dict[str, Any] = {"clusters": clusters}
    if policy.partition.pricing:
        spec["pricing"] = {model: price for model, price in policy.partition.pricing}
    return _doc("Fleet", policy.fleet_name, spec)


def _tenant(tenant: Tenant) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaces": list(tenant.namespaces),
        "priorityClass": tenant.priority_tier,
        "createNamespaces": tenant.create_namespaces,
    }
    return _doc("Tenant", tenant.name, spec)


def _need(need: Need, where: str) -> dict[str, Any]:
    if need.gpus and not need.profiles:
        return {"gpus": need.gpus}
    if need.profiles and not need.gpus:
        return {"profile": need.profiles[0]} if len(need.profiles) == 1 else {"profiles": list(need.profiles)}
    raise SnapshotRefused(f"{where}: {need!r}: exactly one of profiles and gpus is written")


def _workload(workload: Workload, where: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "tenant": workload.tenant,
        "cluster": workload.cluster,
        "replicas": workload.replicas,
        "need": _need(workload.need, f"{where}.need"),
        "isolation": workload.isolation,
        "priorityClass": workload.priority_tier,
    }
    if workload.pools:
        spec["pools"] = list(workload.pools)
    return _doc("Workload", workload.name, spec)


def _rule(rule: Rule) -> dict[str, Any]:
    when: dict[str, Any] = {"pendingPodsGreaterThan": rule.when.pending_pods_greater_than}
    if rule.when.max_requested_memory_gb_below is not None:
        when["maxRequestedMemoryGBBelow"] = rule.when.max_requested_memory_gb_below
    if rule.when.profile is not None:
        when["profile"] = rule.when.profile
    out: dict[str, Any] = {"name": rule.name, "when": when, "prefer": {"maximize": rule.maximize}}
    if rule.pools:
        out["pools"] = list(rule.pools)
    return out


def _partition(part: PartitionPolicy) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "mode": part.mode,
        "interval": _duration(part.interval_seconds),
        "reconfigurationThreshold": part.reconfiguration_threshold_pct,
        "stabilizationWindow": _duration(part.stabilization_seconds),
        "scaleDownWindow": _duration(part.scale_down_seconds),
        "minDwell": _duration(part.min_dwell_seconds),
        "backoff": {
            "initial": _duration(part.backoff_initial_seconds),
            "max": _duration(part.backoff_max_seconds),
            "factor": part.backoff_factor,
        },
        "dailyChangeBudget": part.daily_change_budget,
        "unmetDemand": part.unmet_demand,
        "allowMediaExtensions": part.allow_media_extensions,
        "objective": list(part.objective),
        "priorityTiers": [
            {"name": t.name, "value": t.value, **({"description": t.description} if t.description else {})}
            for t in part.tiers
        ],
    }
    if part.rules:
        spec["rules"] = [_rule(r) for r in part.rules]
    return _doc("PartitionPolicy", "replay", spec)


def _yaml_text(docs: Sequence[dict[str, Any]]) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 1 << 16  # never fold a scalar
    buf = io.StringIO()
    buf.write("# Written by compiler/simulate/snapshot.py: the replay's policy at one instant.\n")
    yaml.dump_all(list(docs), buf)
    return buf.getvalue()


def policy_files(policy: Policy) -> dict[str, str]:
    """The policy's files (name → YAML text), checked: every field the writer does not write is at
    its default (:class:`SnapshotRefused` otherwise)."""
    _check_policy(policy)
    files = {
        FLEET_FILE: _yaml_text([_fleet(policy)]),
        TENANTS_FILE: _yaml_text([_tenant(t) for t in policy.tenants]),
        PARTITION_FILE: _yaml_text([_partition(policy.partition)]),
    }
    if policy.workloads:  # none where no pod of the trace fits a node: a file of no document is no
        # source file to the loader, so it is not written
        files[WORKLOADS_FILE] = _yaml_text(
            [_workload(w, f"policy.workloads[{i}]") for i, w in enumerate(policy.workloads)]
        )
    return dict(sorted(files.items()))


def _expected_policy(policy: Policy, files: Sequence[str]) -> Policy:
    """``policy`` as the loader resolves it (see the module docstring)."""
    clusters = tuple(
        replace(
            c,
            pools=tuple(replace(p, node_count=p.node_count or len(p.node_names)) for p in c.pools),
        )
        for c in policy.clusters
    )
    return replace(policy, clusters=clusters, source_files=tuple(sorted(files)))


def check_policy(policy: Policy, catalog: Catalog | None = None) -> None:
    """:class:`SnapshotRefused` when ``policy`` would not be written and read back unchanged (what
    :func:`write_inputs` checks first; nothing is written)."""
    cat = catalog if catalog is not None else load_catalog()
    _read_policy_back(policy_files(policy), POLICY_DIR, cat, policy)


def _read_policy_back(files: Mapping[str, str], base: str, catalog: Catalog, want: Policy) -> None:
    docs = []
    diags: list[Diagnostic] = []
    names = [f"{base}/{name}" for name in sorted(files)]
    for name, shown in zip(sorted(files), names, strict=True):
        more_docs, more = load_text(files[name], shown)
        docs.extend(more_docs)
        diags.extend(more)
    _refuse_diagnostics("the policy", diags, errors_only=True)
    back, found = validate(docs, catalog)
    _refuse_diagnostics("the policy", found, errors_only=True)
    if back is None:  # pragma: no cover - validate returns a policy whenever it reports no error
        raise SnapshotRefused("the policy does not read back")
    diff = first_difference(_expected_policy(want, names), back, "policy")
    if diff is not None:
        raise SnapshotRefused(f"the policy does not read back unchanged: {diff}")


# ---------------------------------------------------------------------------------------- cluster


def _node_json(node: ObservedNode) -> dict[str, Any]:
    where = f"obs node {node.name}"
    labels = dict(node.labels)
    if len(labels) != len(node.labels):
        raise SnapshotRefused(f"{where}: labels name one key twice")
    for key, value in (
        (MIG_CONFIG, node.mig_config),
        (MIG_STATE, node.mig_state),
        (GPU_PRODUCT, node.gpu_product),
        (GPU_COUNT, None if node.gpu_count is None else str(node.gpu_count)),
    ):
        if labels.get(key) != value:
            raise SnapshotRefused(
                f"{where}: label {key} is {labels.get(key)!r} but the node's field says {value!r}; "
                "the reader takes the field from the label"
            )
    r = node.rollout
    ann: dict[str, str] = {}
    if r.phase != "Idle":
        ann[PHASE] = r.phase
    if r.target_config:
        ann[TARGET] = r.target_config
    if r.since is not None:
        ann[PHASE_SINCE] = _stamp(r.since, f"{where}: rollout.since")
    if r.attempts:
        ann[ATTEMPTS] = str(r.attempts)
    if r.last_error:
        ann[LAST_ERROR] = r.last_error
    if r.paused:
        ann[PAUSED] = "true"
    if r.started is not None:
        ann[STARTED_AT] = _stamp(r.started, f"{where}: rollout.started")
    if r.previous_config:
        ann[PREVIOUS] = r.previous_config
    if node.applied_config is not None:
        ann[APPLIED] = node.applied_config
    meta: dict[str, Any] = {"name": node.name, "labels": labels}
    if ann:
        meta["annotations"] = ann
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": meta}
    if node.unschedulable:
        out["spec"] = {"unschedulable": True}
    out["status"] = {"allocatable": {k: str(v) for k, v in node.allocatable}}
    return out


def _pod_json(pod: ObservedPod, now: dt.datetime) -> dict[str, Any]:
    where = f"obs pod {pod.key}"
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    if pod.pending and pod.pending_seconds is not None:
        # The reader counts a pending pod's wait from its creationTimestamp to --now.
        waited = pod.pending_seconds
        if waited < 0 or waited != int(waited):
            raise SnapshotRefused(f"{where}: pending_seconds {waited!r} is not a whole number of seconds ≥ 0")
        created = now - dt.timedelta(seconds=int(waited))
        if pod.created != created:
            raise SnapshotRefused(
                f"{where}: pending_seconds {waited:g} needs created = taken_at − pending_seconds = "
                f"{_stamp(created, 'created')}, not {pod.created!r} (the reader computes the wait from "
                "creationTimestamp)"
            )
    if pod.created is not None:
        meta["creationTimestamp"] = _stamp(pod.created, f"{where}: created")
    ann: dict[str, str] = {}
    if pod.profile_preference:
        ann[PROFILE_PREFERENCE] = ",".join(pod.profile_preference)
    if pod.max_wait_seconds is not None:
        ann[MAX_WAIT] = f"{pod.max_wait_seconds}s"
    if ann:
        meta["annotations"] = ann
    status: dict[str, Any] = {"phase": pod.phase}
    if pod.claimed:  # it asks through one ResourceClaim (_claim_json), nothing in its limits
        meta["uid"] = _uid(pod)
        resources: dict[str, Any] = {"claims": [{"name": CLAIM_NAME}]}
        status["resourceClaimStatuses"] = [{"name": CLAIM_NAME, "resourceClaimName": _claim_name(pod)}]
    else:
        amounts = {k: str(v) for k, v in pod.requests}
        resources = {"limits": amounts, "requests": dict(amounts)}
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": resources}]}
    if pod.claimed:
        spec["resourceClaims"] = [{"name": CLAIM_NAME, "resourceClaimTemplateName": CLAIM_NAME}]
    if pod.node is not None:
        spec["nodeName"] = pod.node
    if pod.priority_class:
        spec["priorityClassName"] = pod.priority_class
    if pod.started is not None:
        status["startTime"] = _stamp(pod.started, f"{where}: started")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _uid(pod: ObservedPod) -> str:
    return f"uid-{pod.namespace}-{pod.name}"


def _claim_name(pod: ObservedPod) -> str:
    return f"{pod.name}-{CLAIM_NAME}"[:253]


def _claim_json(pod: ObservedPod) -> dict[str, Any]:
    """The ResourceClaim a claimed pod asks through (kubernetes/api@10b39a39 resource/v1): one exact
    request per resource, of the DeviceClass migc renders for it (compiler/render/dra.py
    ``class_name``), allocated to the pod's ``devices`` and reserved for it when it has them."""
    where = f"obs pod {pod.key}"
    requests = []
    for i, (resource, count) in enumerate(pod.requests):
        profile = profile_of(resource)
        if profile is None and resource != GPU_RESOURCE:
            raise SnapshotRefused(f"{where}: {resource} cannot be asked through a ResourceClaim")
        exact = {"deviceClassName": class_name(profile or "gpu"), "allocationMode": "ExactCount"}
        requests.append({"name": f"r{i}", "exactly": {**exact, "count": count}})
    out: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": _claim_name(pod), "namespace": pod.namespace},
        "spec": {"devices": {"requests": requests}},
    }
    if pod.devices is not None:
        results = [{"request": "r0", "driver": d, "pool": pl, "device": dev} for d, pl, dev in pod.devices]
        out["status"] = {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": pod.name, "uid": _uid(pod)}],
        }
    return out


def cluster_json(obs: Observation) -> str:
    """``kubectl get pods,nodes,resourceclaims,resourceslices -A -o json`` of ``obs``'s nodes, pods (a
    claimed pod with its ResourceClaim) and the DRA driver's ResourceSlices, read back at
    ``obs.taken_at`` by :func:`compiler.observe.parse.parse_objects` to the same (refused otherwise)."""
    now = obs.taken_at
    _stamp(now, "obs.taken_at")
    items = [_node_json(n) for n in obs.nodes] + [_pod_json(p, now) for p in obs.pods]
    items += [_claim_json(p) for p in obs.pods if p.claimed]
    items += [dict(s) for _, slices in obs.resource_slices for s in slices]
    text = json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}, indent=2, sort_keys=True
    )
    read = [(item, CLUSTER_FILE) for item in json.loads(text)["items"]]
    nodes, pods, diags, slices = parse_objects(read, now)
    _refuse_diagnostics("the observation", diags)
    compared = (
        ("nodes", obs.nodes, nodes),
        ("pods", obs.pods, pods),
        ("resource_slices", obs.resource_slices, slices),
    )
    for what, want, got in compared:
        diff = first_difference(want, got, f"obs.{what}")
        if diff is not None:
            raise SnapshotRefused(f"the observation does not read back unchanged: {diff}")
    return text + "\n"


# ------------------------------------------------------------------------------------------ state


def state_text(state: State, policy: PartitionPolicy, now: dt.datetime) -> str:
    """The ObservedDemand file of ``state``, as ``migc recommend`` writes it (dated ``state.updated``,
    or ``now`` when unset), refused unless the reader at ``now`` takes it back unchanged."""
    refused = refused_keys(state)
    if refused:
        raise SnapshotRefused(
            f"state.history: demand key(s) the ObservedDemand schema refuses: {refused[:5]}"
        )
    written = state.updated if state.updated is not None else now
    _stamp(written, "state.updated")
    text = dump_state(state, written, keep_seconds=change_horizon(policy))
    back, diags = parse_state(text, STATE_FILE, now, policy)
    diff = first_difference(replace(state, updated=written), back, "state")
    if diff is not None:
        why = f" ({diags[0].code} {diags[0].message})" if diags else ""
        raise SnapshotRefused(f"the state does not read back unchanged: {diff}{why}")
    return text


# ----------------------------------------------------------------------------------------- output


def _solution(policy: Policy, current: CurrentState) -> Solution:
    """A solution that keeps every deployed node of ``current`` as it is, per pool."""
    if current.hami:
        raise SnapshotRefused(f"current.hami = {_short(current.hami)}: HAMi shares are not written")
    pools: dict[tuple[str, str], NodePool] = {
        (p.cluster, p.name): p for c in policy.clusters for p in c.pools
    }
    by_pool: dict[tuple[str, str], list[NodeResult]] = {}
    for (cluster, pool, node), layout in current.nodes:
        found = pools.get((cluster, pool))
        if found is None or node not in found.node_names:
            raise SnapshotRefused(
                f"current.nodes: node {cluster}/{pool}/{node} is no node of the policy's pools"
            )
        if not layout or not all(isinstance(g, GpuLayout) for g in layout):
            raise SnapshotRefused(f"current.nodes: node {node} has no GPU layouts")
        by_pool.setdefault((cluster, pool), []).append(NodeResult(node, layout, layout, ()))
    results = []
    for key, nodes in sorted(by_pool.items()):
        counts: dict[GpuLayout, int] = {}
        for n in nodes:
            for g in n.gpus:
                counts[g] = counts.get(g, 0) + 1
        results.append(
            PoolResult(
                cluster=key[0],
                pool=key[1],
                gpu_model=pools[key].gpu_model,
                nodes=tuple(sorted(nodes, key=lambda n: n.name)),
                demand=(),
                layout_counts=tuple(sorted(counts.items())),
                optimal=True,
            )
        )
    return Solution(pools=tuple(results))


def _expected_current(current: CurrentState, solution: Solution, policy: Policy) -> CurrentState:
    if current.backends:
        return current
    dra = {(c.name, p.name) for c in policy.clusters for p in c.pools if p.is_dra}
    backends = tuple(
        ((p.cluster, p.pool), "dra-static" if (p.cluster, p.pool) in dra else "device-plugin")
        for p in solution.pools
    )
    return replace(current, backends=backends)


def _write_output(out: Path, policy: Policy, current: CurrentState, catalog: Catalog) -> None:
    solution = _solution(policy, current)
    if not solution.pools:
        out.mkdir()
    else:
        files = render(policy, solution, catalog, source_label="compiler/simulate/snapshot.py")
        written = write_tree(files, out)
        _refuse_diagnostics("the deployed layouts", written.diagnostics, errors_only=True)
    back, diags = read_current(out, policy)
    _refuse_diagnostics("the deployed layouts", diags)
    diff = first_difference(_expected_current(current, solution, policy), back, "current")
    if diff is not None:
        raise SnapshotRefused(f"the deployed layouts do not read back unchanged: {diff}")


# ------------------------------------------------------------------------------------------ write


def _fresh(dest: Path) -> bool:
    """Whether ``dest`` exists (then an empty directory, not a link); :class:`SnapshotRefused` otherwise."""
    try:
        st = os.lstat(dest)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise SnapshotRefused(
            f"{dest} is a symbolic link; the snapshot is written into a real directory only"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise SnapshotRefused(f"{dest} exists and is not a directory")
    if any(os.scandir(dest)):
        raise SnapshotRefused(f"{dest} is not empty; give a new or empty directory")
    return True


def write_inputs(
    dest: Path,
    policy: Policy,
    current: CurrentState,
    obs: Observation,
    state: State,
    *,
    catalog: Catalog | None = None,
) -> Inputs:
    """Write ``migc recommend``'s inputs for these objects under ``dest`` (see the module docstring);
    :class:`SnapshotRefused` (a ``ValueError``) naming the field when any of them would not read back
    unchanged, or when ``dest`` is not a new or empty directory — nothing is written then."""
    cat = catalog if catalog is not None else load_catalog()
    dest = Path(dest)
    if dest.name in ("", ".", ".."):  # "." or "sub/..": the staging directory and the rename need a name
        dest = Path(os.path.abspath(dest))
    existed = _fresh(dest)
    texts = policy_files(policy)
    _read_policy_back(texts, str(dest / POLICY_DIR), cat, policy)
    snapshot = cluster_json(obs)
    demand = state_text(state, policy.partition, obs.taken_at)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.migc-tmp-", dir=dest.parent))
    try:
        (tmp / POLICY_DIR).mkdir()
        write_files_atomic(
            [
                *(
                    (tmp / POLICY_DIR / name, text.encode("utf-8"), None)
                    for name, text in sorted(texts.items())
                ),
                (tmp / CLUSTER_FILE, snapshot.encode("utf-8"), None),
                (tmp / STATE_FILE, demand.encode("utf-8"), None),
            ]
        )
        _write_output(tmp / OUTPUT_DIR, policy, current, cat)
        if existed:
            _fresh(dest)  # still empty: the rename below replaces it
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Inputs(
        root=dest,
        policy=dest / POLICY_DIR,
        output=dest / OUTPUT_DIR,
        cluster=dest / CLUSTER_FILE,
        state=dest / STATE_FILE,
        now=obs.taken_at,
    )


__all__ = [
    "DERIVED",
    "WRITTEN",
    "Inputs",
    "SnapshotRefused",
    "check_policy",
    "cluster_json",
    "first_difference",
    "policy_files",
    "state_text",
    "write_inputs",
]
