"""Observation + policy + deployed assignment → :class:`FleetStatus`.

Which node belongs to which pool: a named pool lists its nodes; a selector pool takes every node
whose labels match its ``matchLabels`` (first pool in cluster/pool name order wins). What a node
should carry comes from the NodeAssignment: by name, or for selector pools from the pool's
``configCounts``, nodes that already carry a counted config keeping it (in name order) and the
rest taking the remaining configs in name order — the multiset is what the controller enforces.

Which pod sits on which MIG instance is not visible through the Kubernetes API (the device plugin
picks); the bars fill each GPU's instances of a resource with the node's pods in name order. DCGM
usage is matched to instances of the same profile on the same GPU in ``GPU_I_ID`` order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from compiler.catalog import Catalog, GpuModel
from compiler.catalog.layouts import place
from compiler.model import NodePool, Policy
from compiler.observe.model import (
    GPU_RESOURCE,
    Counts,
    Observation,
    ObservedNode,
    is_gpu_resource,
    profile_of,
    resource_of,
)
from compiler.observe.parse import known_resources
from compiler.observe.prometheus import InstanceUsage
from compiler.render.names import ALL_DISABLED
from compiler.status.model import (
    Cost,
    FleetStatus,
    GpuView,
    NodeStatus,
    PendingPod,
    PoolStatus,
    Slot,
    TenantStatus,
)

NO_TENANT = "-"


@dataclass(frozen=True)
class Filters:
    pools: tuple[str, ...] = ()
    tenants: tuple[str, ...] = ()
    free_only: bool = False


def _counts(d: Mapping[str, float]) -> Counts:
    return tuple(sorted((k, int(v)) for k, v in d.items() if v))


def _add(into: dict[str, int], items: Iterable[tuple[str, int]], sign: int = 1) -> None:
    for k, v in items:
        into[k] = into.get(k, 0) + sign * v


def _config_devices(doc: Mapping[str, Any] | None, config: str) -> list[Mapping[str, Any]] | None:
    if doc is None:
        return None
    cfg = (doc.get("configs") or {}).get(config)
    if not isinstance(cfg, dict) or not isinstance(cfg.get("devices"), list):
        return None
    return [d for d in cfg["devices"] if isinstance(d, dict)]


def stock_equivalent(doc: Mapping[str, Any] | None, have: str, want: str) -> bool:
    """The node carries the GPU Operator's stock ``all-disabled`` where migc assigns a config that is
    MIG-disabled on every GPU too (``all-disabled-8gpu-whole-gpus``): the same GPU geometry.

    The GPU Operator's node labeler puts ``nvidia.com/mig.config=all-disabled`` on every MIG-capable
    node without the label (cluster-behaviour.md, "NVIDIA GPU Operator"), so on a fresh cluster each
    such node carries it; it is not drift in MIG terms. What the device plugin advertises is still
    compared (a time-slicing config not yet applied shows as differing allocatable).
    """
    if have != ALL_DISABLED or have == want:
        return False
    devices = _config_devices(doc, want)
    return bool(devices) and all(d.get("migEnabled") is False for d in devices or ())


def _expected_resources(doc: Mapping[str, Any] | None, config: str) -> dict[str, int] | None:
    if doc is None:
        return None
    cfg = (doc.get("configs") or {}).get(config)
    if not isinstance(cfg, dict) or not isinstance(cfg.get("resources"), dict):
        return None
    out = {str(k): v for k, v in cfg["resources"].items() if isinstance(v, int) and not isinstance(v, bool)}
    return out if len(out) == len(cfg["resources"]) else None


class _Shares:
    """GPU share of one unit of a resource on a pool's model."""

    def __init__(self, pool: NodePool, model: GpuModel | None) -> None:
        self.pool, self.model = pool, model

    def of(self, resource: str) -> float:
        profile = profile_of(resource)
        if profile is None:
            return 1.0 / self.pool.shares_per_gpu
        prof = self.model.profile(profile) if self.model else None
        if prof is None or not self.model or not self.model.compute_slices:
            return 0.0
        return prof.compute_slices / self.model.compute_slices

    def total(self, counts: Iterable[tuple[str, int]]) -> float:
        return sum(self.of(r) * n for r, n in counts)

    def memory_and_compute(self, counts: Iterable[tuple[str, int]]) -> tuple[float, float]:
        """GPU memory (GB) and compute slices held, counted as the quota renderer counts them."""
        memory = compute = 0.0
        for resource, n in counts:
            profile = profile_of(resource)
            if profile is None:
                share = self.of(resource)
                memory += (self.model.memory_gb if self.model else 0.0) * share * n
                compute += (self.model.compute_slices if self.model else 0) * share * n
            elif self.model is not None and (prof := self.model.profile(profile)) is not None:
                memory += prof.memory_gb * n
                compute += prof.compute_slices * n
        return memory, compute


def _pool_index(policy: Policy) -> tuple[dict[str, tuple[str, NodePool]], list[tuple[str, NodePool]]]:
    """Named nodes → (cluster, pool), and the selector pools in cluster/pool name order."""
    named: dict[str, tuple[str, NodePool]] = {}
    selectors: list[tuple[str, NodePool]] = []
    for cluster in policy.clusters:
        for pool in cluster.pools:
            if pool.uses_selector:
                selectors.append((cluster.name, pool))
            else:
                for name in pool.node_names:
                    named.setdefault(name, (cluster.name, pool))
    return named, selectors


def _pool_of(
    index: tuple[dict[str, tuple[str, NodePool]], list[tuple[str, NodePool]]], node: ObservedNode
) -> tuple[str, NodePool] | None:
    named, selectors = index
    if node.name in named:
        return named[node.name]
    for cluster, pool in selectors:
        if all(node.label(k) == v for k, v in pool.node_selector):
            return cluster, pool
    return None


def _expected_configs(
    doc: Mapping[str, Any] | None, pool: NodePool, nodes: Sequence[ObservedNode]
) -> dict[str, str]:
    if doc is None:
        return {}
    entry = next(
        (p for p in doc.get("pools") or [] if isinstance(p, dict) and p.get("name") == pool.name), None
    )
    if entry is None:
        return {}
    out = {str(n["name"]): str(n["config"]) for n in entry.get("nodes") or [] if isinstance(n, dict)}
    counts = {str(k): int(v) for k, v in (entry.get("configCounts") or {}).items()}
    if counts:
        rest: list[ObservedNode] = []
        for node in sorted(nodes, key=lambda n: n.name):
            cfg = node.config
            if cfg is not None and counts.get(cfg, 0) > 0:
                counts[cfg] -= 1
                out[node.name] = cfg
            else:
                rest.append(node)
        remaining = [c for c in sorted(counts) for _ in range(counts[c])]
        for node, cfg in zip(rest, remaining, strict=False):
            out[node.name] = cfg
    return out


def _gpu_views(
    node: ObservedNode,
    pool: NodePool,
    model: GpuModel | None,
    devices: list[Mapping[str, Any]] | None,
    occupants: dict[str, list[tuple[str, str, int]]],
    usage: Sequence[InstanceUsage],
) -> tuple[GpuView, ...]:
    shares = _Shares(pool, model)
    if devices is None:
        count = node.gpu_count or pool.gpus_per_node
        return tuple(GpuView(i, False, (Slot("", 0.0, 1.0, 0.0),), known=False) for i in range(count))
    by_gpu: dict[int, list[InstanceUsage]] = {}
    for u in usage:
        by_gpu.setdefault(u.gpu, []).append(u)
    views = []
    for index, dev in enumerate(devices):
        profiles = _device_profiles(dev)
        mig = bool(dev.get("migEnabled"))
        gpu_usage = sorted(by_gpu.get(index, []), key=lambda u: (u.profile, _id_order(u.instance)))
        slots = _slot_layout(pool, model, mig, profiles)
        views.append(GpuView(index, mig, _fill_slots(slots, occupants, gpu_usage, shares)))
    return tuple(views)


def _device_profiles(dev: Mapping[str, Any]) -> dict[str, int]:
    """The ``profiles`` of one mig-parted device entry, keeping only integer counts: the document
    comes from a cluster's ConfigMap and may have been edited by hand."""
    raw_profiles = dev.get("profiles") or {}
    if not isinstance(raw_profiles, dict):
        return {}
    return {str(k): v for k, v in raw_profiles.items() if isinstance(v, int) and not isinstance(v, bool)}


def _slot_layout(
    pool: NodePool, model: GpuModel | None, mig: bool, profiles: Mapping[str, int]
) -> list[tuple[str, float, float]]:
    """Where each bar segment of one GPU sits: ``(resource, left, span)`` as fractions of the GPU.

    A GPU without MIG is ``shares_per_gpu`` equal segments (a HAMi GPU is one: its shares are sized,
    not equal); a MIG GPU has one segment per instance at its memory-slice placement, and an empty
    segment for each slice no instance covers. A model without memory slices draws nothing.
    """
    if not mig:
        n = pool.shares_per_gpu
        return [(GPU_RESOURCE, i / n, 1 / n) for i in range(n)]
    if model is None or not model.memory_slices:
        return []
    slots: list[tuple[str, float, float]] = []
    covered = [False] * model.memory_slices
    for name, start, size in _placed_instances(model, profiles):
        slots.append((resource_of(name), start / model.memory_slices, size / model.memory_slices))
        for i in range(start, min(start + size, model.memory_slices)):
            covered[i] = True
    for i, c in enumerate(covered):
        if not c:
            slots.append(("", i / model.memory_slices, 1 / model.memory_slices))
    return slots


def _placed_instances(model: GpuModel, profiles: Mapping[str, int]) -> list[tuple[str, int, int]]:
    """``(profile, first memory slice, slices)`` per instance: the catalog's placement, or, for a
    config that cannot be placed (hand-edited), the instances side by side in profile name order,
    at most as many of each as the GPU has memory slices."""
    witness = place(model, profiles) if profiles else ()
    if witness is not None:
        return list(witness)
    placed: list[tuple[str, int, int]] = []
    pos = 0
    for name, count in sorted(profiles.items()):
        prof = model.profile(name)
        size = prof.memory_slices if prof else 1
        for _ in range(max(0, min(count, model.memory_slices))):  # a GPU holds no more
            placed.append((name, pos, size))
            pos += size
    return placed


def _fill_slots(
    slots: Sequence[tuple[str, float, float]],
    occupants: dict[str, list[tuple[str, str, int]]],
    gpu_usage: Sequence[InstanceUsage],
    shares: _Shares,
) -> tuple[Slot, ...]:
    """The segments left to right, each given the next pod holding its resource on the node (taken
    from ``occupants``, which the node's later GPUs continue from) and the first unmatched DCGM
    sample of its profile (a whole GPU: a sample without an instance)."""
    made: list[Slot] = []
    used_usage: set[int] = set()
    for resource, left, span in sorted(slots, key=lambda s: s[1]):
        tenant, pod = _take_occupant(occupants, resource)
        active = mem = None
        want_profile = profile_of(resource) or ""
        for i, u in enumerate(gpu_usage):
            if i in used_usage or not resource:
                continue
            if (want_profile and u.profile == want_profile) or (not want_profile and not u.instance):
                used_usage.add(i)
                active, mem = u.engine_active, u.memory_used_mib
                break
        share = shares.of(resource) if resource else 0.0
        made.append(Slot(resource, round(left, 6), round(span, 6), share, tenant, pod, active, mem))
    return tuple(made)


def _take_occupant(occupants: dict[str, list[tuple[str, str, int]]], resource: str) -> tuple[str, str]:
    """``(tenant, pod)`` of the next pod holding one ``resource`` (a pod holding several fills as
    many segments); ``("", "")`` for an empty segment or when no pod is left."""
    if not resource or not occupants.get(resource):
        return "", ""
    tenant, pod, left_over = occupants[resource][0]
    if left_over > 1:
        occupants[resource][0] = (tenant, pod, left_over - 1)
    else:
        occupants[resource].pop(0)
    return tenant, pod


def _id_order(instance: str) -> tuple[int, str]:
    return (int(instance), "") if instance.isdigit() else (1 << 30, instance)


def _tenant_quota(counts: Iterable[tuple[str, int]], gpus: int) -> Counts:
    out = {resource_of(p): n for p, n in counts}
    if gpus:
        out[GPU_RESOURCE] = out.get(GPU_RESOURCE, 0) + gpus
    return _counts(out)


def _wanted_resources(
    policy: Policy, pool: NodePool, model: GpuModel | None, pending: Iterable[str]
) -> set[str]:
    """Resources some pending pod, workload or tenant quota of ``pool`` can use."""
    wanted = set(pending)
    for w in policy.workloads:
        if w.cluster != pool.cluster or (w.pools and pool.name not in w.pools):
            continue
        if w.need.gpus:
            wanted.add(GPU_RESOURCE)
        wanted.update(resource_of(p) for p in w.need.profiles)
        if w.need.kind == "resources" and model is not None:
            fits = [
                p
                for p in model.profiles
                if p.memory_gb >= w.need.gpu_memory_gb
                and p.compute_slices >= w.need.compute_slices
                and not p.media_extensions
            ]
            if fits:
                best = min(fits, key=lambda p: (p.memory_gb, p.compute_slices, p.name))
                wanted.add(resource_of(best.name))
    for t in policy.tenants:
        for q in (t.guaranteed, t.burst):
            wanted.update(resource_of(p) for p, _ in q.profiles)
            if q.gpus:
                wanted.add(GPU_RESOURCE)
    return wanted


def _balanced_gpus(model: GpuModel | None, allocated: Mapping[str, int]) -> int | None:
    """GPUs the GPU Operator's all-balanced layout would need to carry the allocated resources.

    An instance of a profile the balanced layout lacks takes the smallest balanced instance that
    holds it (memory and compute at least as large); one larger than every balanced instance, and
    every whole GPU, takes a GPU of its own. ``None`` for models without MIG.
    """
    if model is None or not model.balanced:
        return None
    per_gpu = dict(model.balanced)
    need: dict[str, int] = {}
    own_gpus = allocated.get(GPU_RESOURCE, 0)
    for resource, n in allocated.items():
        profile = profile_of(resource)
        prof = model.profile(profile) if profile else None
        if prof is None:
            continue
        holders = [
            p
            for p in model.profiles
            if p.name in per_gpu and p.memory_gb >= prof.memory_gb and p.compute_slices >= prof.compute_slices
        ]
        if not holders:
            own_gpus += n
            continue
        best = min(holders, key=lambda p: (p.memory_gb, p.compute_slices, p.name))
        need[best.name] = need.get(best.name, 0) + n
    return max((math.ceil(n / per_gpu[p]) for p, n in need.items()), default=0) + own_gpus


def _pool_members(
    policy: Policy, observation: Observation
) -> tuple[dict[tuple[str, str], list[ObservedNode]], list[str]]:
    """The observed nodes of each (cluster, pool), and the GPU nodes no pool claims."""
    membership: dict[str, tuple[str, NodePool]] = {}  # node → (cluster, pool)
    unmanaged: list[str] = []
    index = _pool_index(policy)
    for node in observation.nodes:
        found = _pool_of(index, node)
        if found is not None:
            membership[node.name] = found
        elif node.allocatable:
            unmanaged.append(node.name)
    nodes_by_pool: dict[tuple[str, str], list[ObservedNode]] = {}
    for node in observation.nodes:
        if node.name in membership:
            c, p = membership[node.name]
            nodes_by_pool.setdefault((c, p.name), []).append(node)
    return nodes_by_pool, unmanaged


def _missing_nodes(pool: NodePool, seen: Sequence[ObservedNode]) -> list[str]:
    """The named nodes of ``pool`` not observed (or how many selector nodes are short)."""
    if not pool.uses_selector:
        seen_names = {n.name for n in seen}
        return [n for n in pool.node_names if n not in seen_names]
    if len(seen) < pool.node_count:
        return [f"{pool.name}: {pool.node_count - len(seen)} of {pool.node_count} selector nodes"]
    return []


def _node_drift(
    doc: Mapping[str, Any] | None, node: ObservedNode, want: str, have: str, n_cap: Mapping[str, int]
) -> list[str]:
    """Why the node differs from what the deployed assignment says it should carry (empty: it matches)."""
    if doc is None:
        return []
    if not want:
        return ["not in the assignment"]
    if have != want and not stock_equivalent(doc, have, want):
        return [f"carries {have or 'no config'}, assignment says {want}"]
    if node.mig_state == "failed":
        return ["the MIG manager reports failed"]
    if node.rollout.in_progress:
        return []
    exp = _expected_resources(doc, want) or {}
    diff = sorted(
        f"{r} {n_cap.get(r, 0)}/{exp.get(r, 0)}"
        for r in set(exp) | set(n_cap)
        if is_gpu_resource(r) and n_cap.get(r, 0) != exp.get(r, 0)
    )
    return ["allocatable differs (has/expected): " + ", ".join(diff)] if diff else []


def _published_capacity(
    observation: Observation, node: str, gpus: int, model: GpuModel | None
) -> dict[str, int] | None:
    """The GPU resources a static DRA node offers: the devices the NVIDIA DRA driver publishes in its
    ResourceSlices, counted as the controller verifies them (controller/dra.py ``published``: the
    newest complete generation of each pool), a whole GPU as ``nvidia.com/gpu`` and a MIG device as
    ``nvidia.com/mig-<profile>``; None when there are none, or they cannot be counted, or they are
    more than the node's ``gpus`` GPUs can carry (more whole GPUs than ``gpus``, more of a MIG
    profile than ``gpus`` × the catalog's most per GPU: a broken or hostile driver, whose slices the
    reader bounds only at 256 × 128 devices) — then the node's allocatable is shown, as on a
    device-plugin node, bounded at the edge as it is."""
    slices = observation.slices_of(node)
    if not slices:
        return None
    from controller.dra import published  # loads jsonschema: only for a static DRA node's slices

    found = published(slices, node)
    if found.problems or not found.devices:
        return None
    out: dict[str, int] = {}
    for kind, n in found.devices.items():
        resource = resource_of(kind) if kind == "gpu" or kind[:1].isdigit() else None
        if resource is not None and resource in known_resources():
            out[resource] = out.get(resource, 0) + n
    for resource, n in out.items():
        profile = profile_of(resource)
        known = model.profile(profile) if model is not None and profile is not None else None
        most = 1 if profile is None else (known.max_count if known is not None else MAX_PER_GPU)
        if n > gpus * most:
            return None
    return out or None


MAX_PER_GPU = 7  # MIG instances one GPU carries at most (every catalog model: seven 1g slices)


def _add_fragmented(fragmented: float, gpus: Sequence[GpuView], wanted: set[str]) -> float:
    """``fragmented`` plus the node's free instances no pending pod or declared request can use, plus
    the compute no instance covers."""
    for g in gpus:
        for s in g.slots:
            if s.resource and not s.pod and s.resource not in wanted:
                fragmented += s.share
    for g in gpus:
        if g.known and g.mig_enabled:
            fragmented += max(0.0, 1.0 - sum(s.share for s in g.slots if s.resource))
    return fragmented


@dataclass
class _PoolTally:
    """What one pool sums over its nodes."""

    cap: dict[str, int] = field(default_factory=dict)
    alloc: dict[str, int] = field(default_factory=dict)
    gpus: int = 0
    fragmented: float = 0.0
    gpus_in_use: int = 0


class _StatusBuilder:
    """Walks every pool and node once, summing per-tenant holdings and the fleet's costs."""

    def __init__(
        self,
        policy: Policy,
        observation: Observation,
        usage: Sequence[InstanceUsage] | None,
    ) -> None:
        self.policy = policy
        self.usage = usage
        self.observation = observation
        self.tenant_of_ns = {ns: t.name for t in policy.tenants for ns in t.namespaces}
        self.usage_by_node: dict[str, list[InstanceUsage]] = {}
        for u in usage or ():
            self.usage_by_node.setdefault(u.node, []).append(u)
        self.pods_by_node: dict[str, list[tuple[str, str, Counts]]] = {}
        for pod in observation.pods:
            if pod.node is not None:
                tenant = self.tenant_of_ns.get(pod.namespace, NO_TENANT)
                self.pods_by_node.setdefault(pod.node, []).append((pod.key, tenant, pod.requests))
        self.pending = tuple(
            PendingPod(
                pod=p.key,
                tenant=self.tenant_of_ns.get(p.namespace, NO_TENANT),
                requests=p.requests,
                pending_seconds=p.pending_seconds,
                max_wait_seconds=p.max_wait_seconds,
                preference=p.profile_preference,
            )
            for p in observation.pending
        )
        self.pending_resources = {r for p in self.pending for r, _ in p.requests}
        self.node_rows: list[NodeStatus] = []
        self.pool_rows: list[PoolStatus] = []
        self.missing: list[str] = []
        self.tenant_alloc: dict[str, dict[str, int]] = {}
        self.tenant_share: dict[str, float] = {}
        self.tenant_memory: dict[str, tuple[float, float]] = {}
        self.tenant_cost: dict[str, float] = {}
        self.cost_total = self.cost_alloc = self.cost_idle = self.cost_whole = 0.0
        self.savings_balanced = 0.0

    def add_pool(
        self,
        cluster: str,
        pool: NodePool,
        model: GpuModel | None,
        doc: Mapping[str, Any] | None,
        seen: Sequence[ObservedNode],
    ) -> None:
        shares = _Shares(pool, model)
        expected = _expected_configs(doc, pool, seen)
        self.missing.extend(_missing_nodes(pool, seen))
        tally = _PoolTally()
        wanted = _wanted_resources(self.policy, pool, model, self.pending_resources)
        for node in seen:
            want = expected.get(node.name, "")
            self._add_node(cluster, pool, model, doc, node, want, shares, wanted, tally)
        self._add_pool_row(cluster, pool, model, seen, shares, tally)

    def _add_pods(
        self, pods: Sequence[tuple[str, str, Counts]], shares: _Shares, price: float | None
    ) -> tuple[dict[str, int], dict[str, list[tuple[str, str, int]]]]:
        """A node's allocation and per-resource (tenant, pod, instances) occupants, in pod order (one
        entry per pod, not per instance); credits each pod's tenant."""
        n_alloc: dict[str, int] = {}
        occupants: dict[str, list[tuple[str, str, int]]] = {}
        for key, tenant, requests in pods:
            _add(n_alloc, requests)
            _add(self.tenant_alloc.setdefault(tenant, {}), requests)
            self.tenant_share[tenant] = self.tenant_share.get(tenant, 0.0) + shares.total(requests)
            mem, comp = shares.memory_and_compute(requests)
            old_mem, old_comp = self.tenant_memory.get(tenant, (0.0, 0.0))
            self.tenant_memory[tenant] = (old_mem + mem, old_comp + comp)
            if price is not None:
                self.tenant_cost[tenant] = self.tenant_cost.get(tenant, 0.0) + shares.total(requests) * price
                self.cost_whole += sum(n for _, n in requests) * price
            for r, n in requests:
                occupants.setdefault(r, []).append((tenant, key, n))
        return n_alloc, occupants

    def _add_node(
        self,
        cluster: str,
        pool: NodePool,
        model: GpuModel | None,
        doc: Mapping[str, Any] | None,
        node: ObservedNode,
        want: str,
        shares: _Shares,
        wanted: set[str],
        tally: _PoolTally,
    ) -> None:
        pods = sorted(self.pods_by_node.get(node.name, []))
        n_alloc, occupants = self._add_pods(pods, shares, pool.price_per_gpu_hour)
        n_cap = dict(node.allocatable)
        static_dra = pool.is_dra and not pool.dra_dynamic
        gpus_on = pool.gpus_per_node
        shown = _published_capacity(self.observation, node.name, gpus_on, model) if static_dra else None
        if shown is not None:  # a static DRA node: its capacity is what the driver publishes
            n_cap, allocatable = shown, n_cap
        else:
            allocatable = n_cap
        n_free = {r: max(0, c - n_alloc.get(r, 0)) for r, c in n_cap.items()}
        have = node.config or ""
        # the stock all-disabled has no entry in migc's assignment: its GPUs are those of the equivalent
        # config migc assigns, so the node's pods are shown on them
        devices = _config_devices(doc, want if stock_equivalent(doc, have, want) else have) if have else None
        gpus = _gpu_views(node, pool, model, devices, occupants, self.usage_by_node.get(node.name, []))
        drift = _node_drift(doc, node, want, have, allocatable)
        slots = [s for g in gpus for s in g.slots]
        tally.fragmented = _add_fragmented(tally.fragmented, gpus, wanted)
        tally.gpus_in_use += sum(1 for g in gpus if any(s.pod for s in g.slots))
        used_instances = mean_active = None
        if self.usage is not None:
            actives = [s.engine_active for s in slots if s.engine_active is not None]
            used_instances = sum(1 for a in actives if a > 0.0)
            mean_active = round(sum(actives) / len(actives), 4) if actives else None
        self.node_rows.append(
            NodeStatus(
                name=node.name,
                cluster=cluster,
                pool=pool.name,
                gpu_model=pool.gpu_model,
                capacity=_counts(n_cap),
                allocated=_counts(n_alloc),
                free=_counts(n_free),
                config=have,
                expected_config=want,
                mig_state=node.mig_state or "",
                phase=node.rollout.phase,
                phase_since=node.rollout.since,
                last_error=node.rollout.last_error,
                unschedulable=node.unschedulable,
                drift=tuple(drift),
                gpus=gpus,
                pods=tuple(k for k, _, _ in pods),
                used_instances=used_instances,
                mean_engine_active=mean_active,
            )
        )
        _add(tally.cap, n_cap.items())
        _add(tally.alloc, n_alloc.items())
        tally.gpus += len(gpus)

    def _add_pool_row(
        self,
        cluster: str,
        pool: NodePool,
        model: GpuModel | None,
        seen: Sequence[ObservedNode],
        shares: _Shares,
        tally: _PoolTally,
    ) -> None:
        cap, alloc, price = tally.cap, tally.alloc, pool.price_per_gpu_hour
        free = {r: max(0, c - alloc.get(r, 0)) for r, c in cap.items()}
        alloc_share = shares.total(alloc.items())
        gpu_total = float(tally.gpus)
        free_share = max(0.0, gpu_total - alloc_share) if seen else 0.0
        pool_cost = idle = None
        balanced = _balanced_gpus(model, alloc) if pool.mig else None
        if price is not None:
            pool_cost = tally.gpus * price
            idle = free_share * price
            self.cost_total += pool_cost
            self.cost_alloc += alloc_share * price
            self.cost_idle += idle
            if balanced is not None:
                self.savings_balanced += (balanced - tally.gpus_in_use) * price
        self.pool_rows.append(
            PoolStatus(
                cluster=cluster,
                name=pool.name,
                gpu_model=pool.gpu_model,
                nodes=len(pool.node_names),
                nodes_seen=len(seen),
                gpus=tally.gpus,
                capacity=_counts(cap),
                allocated=_counts(alloc),
                free=_counts(free),
                allocated_share=round(alloc_share, 4),
                free_share=round(free_share, 4),
                fragmented_share=round(tally.fragmented, 4),
                price_per_gpu_hour=price,
                cost_per_hour=None if pool_cost is None else round(pool_cost, 4),
                idle_cost_per_hour=None if idle is None else round(idle, 4),
                balanced_gpus_needed=balanced,
            )
        )

    def tenant_rows(self) -> list[TenantStatus]:
        tenants: list[TenantStatus] = []
        pending_by_tenant: dict[str, list[PendingPod]] = {}
        for waiting_pod in self.pending:
            pending_by_tenant.setdefault(waiting_pod.tenant, []).append(waiting_pod)
        for t in self.policy.tenants:
            held = self.tenant_alloc.get(t.name, {})
            guaranteed = dict(_tenant_quota(t.guaranteed.profiles, t.guaranteed.gpus))
            burst = dict(_tenant_quota(t.burst.profiles, t.burst.gpus))
            waiting = {r for p in pending_by_tenant.get(t.name, []) for r, _ in p.requests}
            memory, compute = self.tenant_memory.get(t.name, (0.0, 0.0))
            tenants.append(
                TenantStatus(
                    name=t.name,
                    memory_gb=(round(memory, 2), t.guaranteed.gpu_memory_gb, t.burst.gpu_memory_gb),
                    compute_slices=(
                        round(compute, 2),
                        float(t.guaranteed.compute_slices),
                        float(t.burst.compute_slices),
                    ),
                    namespaces=t.namespaces,
                    allocated=_counts(held),
                    guaranteed=_counts(guaranteed),
                    burst=_counts(burst),
                    allocated_share=round(self.tenant_share.get(t.name, 0.0), 4),
                    pending=len(pending_by_tenant.get(t.name, [])),
                    cost_per_hour=round(self.tenant_cost[t.name], 4) if t.name in self.tenant_cost else None,
                    above_guarantee=tuple(sorted(r for r, n in held.items() if n > guaranteed.get(r, 0))),
                    starved=tuple(sorted(r for r in waiting if held.get(r, 0) < guaranteed.get(r, 0))),
                )
            )
        return tenants

    def cost(self) -> Cost:
        return Cost(
            per_hour=round(self.cost_total, 4),
            allocated_per_hour=round(self.cost_alloc, 4),
            idle_per_hour=round(self.cost_idle, 4),
            whole_gpu_per_pod_per_hour=round(self.cost_whole, 4),
            savings_vs_whole_gpu_per_hour=round(self.cost_whole - self.cost_alloc, 4),
            savings_vs_balanced_per_hour=round(self.savings_balanced, 4),
        )


def build_status(
    policy: Policy,
    catalog: Catalog,
    observation: Observation,
    assignments: Mapping[str, Mapping[str, Any]],
    *,
    expected_from: str,
    usage: Sequence[InstanceUsage] | None = None,
    filters: Filters = Filters(),
) -> FleetStatus:
    builder = _StatusBuilder(policy, observation, usage)
    nodes_by_pool, unmanaged = _pool_members(policy, observation)
    for cluster in policy.clusters:
        doc = assignments.get(cluster.name)
        for pool in cluster.pools:
            seen = nodes_by_pool.get((cluster.name, pool.name), [])
            builder.add_pool(cluster.name, pool, catalog.get(pool.gpu_model), doc, seen)
    status = FleetStatus(
        source=observation.source,
        taken_at=observation.taken_at,
        expected_from=expected_from,
        with_usage=usage is not None,
        nodes=tuple(sorted(builder.node_rows, key=lambda n: (n.cluster, n.pool, n.name))),
        pools=tuple(builder.pool_rows),
        tenants=tuple(builder.tenant_rows()),
        pending=builder.pending,
        missing_nodes=tuple(sorted(builder.missing)),
        unmanaged_nodes=tuple(sorted(unmanaged)),
        cost=builder.cost(),
        warnings=observation.warnings,
    )
    return apply_filters(status, filters)


def apply_filters(status: FleetStatus, f: Filters) -> FleetStatus:
    """Keep what ``--pool``, ``--tenant`` and ``--free`` select; totals (cost) stay fleet-wide."""
    nodes, pools, tenants, pending = status.nodes, status.pools, status.tenants, status.pending
    if f.pools:
        nodes = tuple(n for n in nodes if n.pool in f.pools)
        pools = tuple(p for p in pools if p.name in f.pools)
    if f.tenants:
        tenant_pods = {s.pod for n in nodes for g in n.gpus for s in g.slots if s.tenant in f.tenants}
        nodes = tuple(n for n in nodes if tenant_pods & set(n.pods))
        tenants = tuple(t for t in tenants if t.name in f.tenants)
        pending = tuple(p for p in pending if p.tenant in f.tenants)
    if f.free_only:
        nodes = tuple(n for n in nodes if n.has_free)
        pools = tuple(p for p in pools if any(c for _, c in p.free))
    return replace(status, nodes=nodes, pools=pools, tenants=tenants, pending=pending)
