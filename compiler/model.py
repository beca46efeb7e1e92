"""The validated policy: frozen, fully resolved, deterministic in order.

``compiler.validate`` is the only producer of a :class:`Policy`; every later stage (solve, plan,
render) takes one and may rely on these invariants:

* every name is a DNS-1123 label and unique where it must be;
* every cross-reference (workload → tenant, tenant → tier, workload → cluster/pool) resolves;
* every MIG profile a workload or quota names exists in the catalog of at least one pool it can use;
* tuples are sorted by name (or kept in the order the user gave where order means preference).

Mappings are stored as sorted tuples of pairs so the dataclasses stay hashable and iteration order
never depends on input order or ``PYTHONHASHSEED``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

Isolation = Literal["hardware", "shared", "exclusive"]
SharingMode = Literal["none", "time-slicing", "mps", "hami"]
HamiMode = Literal["hami-core", "mig"]
HamiPolicy = Literal["binpack", "spread"]
PartitionMode = Literal["static", "dynamic"]
Allocation = Literal["device-plugin", "dra"]
DraMig = Literal["static", "dynamic"]
Strictness = Literal["error", "warning"]

WHOLE_GPU = "gpu"
"""Quota/served-demand key for a whole (MIG-disabled) GPU, next to profile names like ``1g.10gb``."""

IDLE_SURGE = 0
"""NodePool.idleSurge's default: nodes running no GPU pod the controller may re-carve beyond
maxUnavailable, so that a draining or Failed node does not hold an idle GPU against a pending pod
(issue 22); ``migc simulate``'s replay models the same default (compiler/simulate/engine.py). 0:
with 1 the loop's per-size-class clause fell on one matrix axis by more than the landing rule
declared before the run allowed (bench/RESULTS.md Round 23), so the surge is the user's choice."""


def frozen_counts(items: Mapping[str, int] | Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    """Canonical, hashable form of a ``name → count`` mapping: sorted, zero counts dropped."""
    pairs = items.items() if isinstance(items, Mapping) else items
    merged: dict[str, int] = {}
    for name, count in pairs:
        merged[name] = merged.get(name, 0) + int(count)
    return tuple(sorted((k, v) for k, v in merged.items() if v))


@dataclass(frozen=True, order=True)
class Span:
    """Where a policy object came from, for diagnostics raised after validation."""

    file: str = ""
    line: int = 0
    col: int = 0
    path: str = ""


HOSTNAME_KEY = "kubernetes.io/hostname"  # the node label every kubelet sets: one domain per node


@dataclass(frozen=True, order=True)
class GpuLayout:
    """What one physical GPU carries.

    ``mig_enabled=False`` is a whole GPU (MIG off): used by exclusive and multi-GPU workloads, the
    reserve, and every GPU of a non-MIG pool. ``mig_enabled=True`` with ``profiles=()`` is "MIG on,
    no instances" (mig-parted's ``all-enabled``). ``profiles`` is a canonical multiset
    (see :func:`frozen_counts`); mig-parted rebuilds a GPU from empty, so only the multiset matters.
    """

    mig_enabled: bool
    profiles: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def whole() -> GpuLayout:
        return GpuLayout(mig_enabled=False, profiles=())

    @staticmethod
    def of(counts: Mapping[str, int]) -> GpuLayout:
        return GpuLayout(mig_enabled=True, profiles=frozen_counts(counts))

    def counts(self) -> dict[str, int]:
        return dict(self.profiles)

    def instances(self) -> int:
        return sum(c for _, c in self.profiles)


NodeLayout = tuple[GpuLayout, ...]
"""One entry per GPU index of the node (index 0 first)."""


@dataclass(frozen=True)
class MaintenanceWindow:
    """A weekly window in which the controller may take nodes of a pool out of service."""

    days: tuple[str, ...]  # "Mon".."Sun", never empty: a window written without days lists all seven
    start: str  # "HH:MM"
    end: str  # "HH:MM"; end < start wraps past midnight
    timezone: str = "UTC"


@dataclass(frozen=True)
class HamiSettings:
    """HAMi's per-node device-plugin settings of a ``sharing: hami`` pool (HAMi v2.10.0 nodeconfig)."""

    split_count: int = 10  # devicesplitcount: most vGPUs (pods) per GPU
    memory_scaling: float = 1.0  # devicememoryscaling: > 1 oversubscribes memory
    core_scaling: float = 1.0  # devicecorescaling
    operating_mode: HamiMode = "hami-core"
    node_policy: HamiPolicy = "binpack"  # hami.io/node-scheduler-policy
    gpu_policy: HamiPolicy = "spread"  # hami.io/gpu-scheduler-policy

    def memory_mib(self, memory_gb: float) -> int:
        """MiB HAMi hands out per GPU of ``memory_gb`` GB: the device memory times the scaling."""
        return int(memory_gb * 1024 * self.memory_scaling)

    def cores(self) -> int:
        """Core percent HAMi hands out per GPU: 100 times the core scaling."""
        return int(100 * self.core_scaling)


@dataclass(frozen=True)
class Sharing:
    """How a non-MIG pool shares each GPU (device-plugin ``sharing`` config). ``replicas`` ≥ 2 unless none.

    ``hami`` is set exactly when ``mode == "hami"``.
    """

    mode: SharingMode = "none"
    replicas: int = 1
    hami: HamiSettings | None = None


@dataclass(frozen=True)
class NodePool:
    name: str
    cluster: str
    gpu_product: str  # as nvidia.com/gpu.product shows it, as the user wrote it
    gpu_model: str  # catalog key the product resolved to (e.g. "A100-SXM4-80GB")
    gpus_per_node: int
    node_names: tuple[str, ...]  # sorted; for selector pools the placeholder names of node_ids()
    node_selector: tuple[tuple[str, str], ...] = ()  # matchLabels; non-empty ⇔ nodes are chosen by label
    node_count: int = 0
    max_unavailable: int = 1  # resolved to a node count (percentages rounded down, at least 1)
    idle_surge: int = IDLE_SURGE  # idle nodes (no GPU pod) the controller may also take out beyond it
    maintenance_windows: tuple[MaintenanceWindow, ...] = ()
    reserve_whole_gpus: int = 0  # GPUs kept MIG-disabled and unallocated by demand
    reserve_whole_nodes: int = 0  # nodes kept entirely MIG-disabled and unallocated by demand
    mig: bool = True  # False: never partition (non-MIG model, or the user opted out)
    sharing: Sharing = field(default_factory=Sharing)
    price_per_gpu_hour: float | None = None
    labels: tuple[tuple[str, str], ...] = ()
    span: Span = field(default_factory=Span, compare=False)
    # How pods get the pool's GPUs (docs/dra.md): the NVIDIA device plugin (nvidia.com/mig-* extended
    # resources), or Kubernetes DRA through NVIDIA's DRA driver, with layouts migc solves and the MIG
    # manager applies (dra_mig "static") or instances the driver creates per claim ("dynamic", DynamicMIG).
    allocation: Allocation = "device-plugin"
    dra_mig: DraMig = "static"
    mig_mode_enabled: bool = False  # dra.migModeEnabled: MIG mode already on (Ampere DynamicMIG)

    @property
    def is_dra(self) -> bool:
        return self.allocation == "dra"

    @property
    def dra_dynamic(self) -> bool:
        """DynamicMIG: no migc layout; the DRA driver creates an instance per prepared claim."""
        return self.allocation == "dra" and self.dra_mig == "dynamic"

    @property
    def dra_static(self) -> bool:
        """A static DRA pool: migc's layouts, applied by the MIG manager, drained per GPU."""
        return self.allocation == "dra" and self.dra_mig != "dynamic"

    @property
    def uses_selector(self) -> bool:
        return bool(self.node_selector)

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * len(self.node_names)

    @property
    def is_shared(self) -> bool:
        """Whole GPUs are shared (time-slicing or MPS); HAMi pools are packed by ``compiler.solve.hami``."""
        return not self.mig and self.sharing.mode in ("time-slicing", "mps")

    @property
    def shares_per_gpu(self) -> int:
        """How many ``nvidia.com/gpu`` the device plugin advertises per whole GPU of this pool."""
        return self.sharing.replicas if self.is_shared else 1


@dataclass(frozen=True)
class Cluster:
    name: str
    pools: tuple[NodePool, ...]
    gpu_operator_namespace: str = "gpu-operator"
    kubernetes_version: str = "1.31"
    span: Span = field(default_factory=Span, compare=False)


@dataclass(frozen=True)
class Quota:
    """Per-resource amounts. ``profiles`` keys are MIG profile names (``1g.10gb``); ``gpus`` whole GPUs."""

    profiles: tuple[tuple[str, int], ...] = ()
    gpus: int = 0
    gpu_memory_gb: float = 0.0
    compute_slices: int = 0
    hami_vgpus: int = 0  # nvidia.com/gpu on HAMi pools
    hami_memory_mib: int = 0  # nvidia.com/gpumem
    hami_cores: int = 0  # nvidia.com/gpucores, percent of one GPU


@dataclass(frozen=True)
class PriorityTier:
    name: str  # e.g. "critical"; rendered as PriorityClass "migc-<name>"
    value: int  # PriorityClass value; higher is served first by the solver too
    description: str = ""
    spread: Spread | None = None  # default spread of its MIG-instance and single-GPU workloads


@dataclass(frozen=True)
class Tenant:
    name: str
    namespaces: tuple[str, ...]
    priority_tier: str
    guaranteed: Quota = field(default_factory=Quota)
    burst: Quota = field(default_factory=Quota)
    create_namespaces: bool = True
    span: Span = field(default_factory=Span, compare=False)
    # rewrite nvidia.com/gpu: 1 + hint annotations to a MIG profile at admission (compiler/render/hints.py)
    rewrite_gpu_requests: bool = False


@dataclass(frozen=True)
class HamiNeed:
    """A HAMi share of one GPU: memory in MiB or in percent of the GPU (exactly one > 0), cores in %."""

    memory_mib: int = 0
    memory_percent: int = 0
    cores: int = 0  # 0 = no core limit
    distinct_gpus: bool = False  # every replica on a different GPU

    def memory_on(self, gpu_memory_mib: int) -> int:
        """MiB this share takes on a GPU that offers ``gpu_memory_mib`` (HAMi rounds percent down)."""
        if self.memory_mib:
            return self.memory_mib
        return gpu_memory_mib * self.memory_percent // 100


@dataclass(frozen=True)
class Need:
    """What one replica needs. Exactly one form is set.

    * ``profiles``: one exact profile, or a preference list (first = most preferred);
    * ``gpu_memory_gb`` / ``compute_slices``: the compiler picks the smallest fitting profile per model;
    * ``gpus``: k whole GPUs on one node (multi-GPU / exclusive).
    """

    profiles: tuple[str, ...] = ()
    gpu_memory_gb: float = 0.0
    compute_slices: int = 0
    gpus: int = 0
    hami: HamiNeed | None = None  # a HAMi share of one GPU per replica

    @property
    def kind(self) -> Literal["profiles", "resources", "gpus", "hami"]:
        if self.hami is not None:
            return "hami"
        if self.gpus:
            return "gpus"
        if self.profiles:
            return "profiles"
        return "resources"


@dataclass(frozen=True)
class Target:
    """The object that runs a workload's pods (``spec.target``); ``namespace`` resolved."""

    api_version: str
    kind: str
    name: str
    namespace: str
    container: str = ""  # "" = the first container


@dataclass(frozen=True)
class Share:
    """A cap on replicas: ``count`` replicas, or ``percent`` of the replicas served (0 = unset).

    ``percent`` rounds down: at most ``floor(percent * served / 100)`` replicas.
    """

    count: int = 0
    percent: int = 0

    @property
    def is_set(self) -> bool:
        return bool(self.count or self.percent)

    def text(self) -> str:
        return f"{self.percent}%" if self.percent else str(self.count)

    def cap(self, served: int) -> int:
        """Most replicas allowed when ``served`` replicas are served."""
        return self.count if self.count else self.percent * served // 100


@dataclass(frozen=True)
class Spread:
    """``Workload.spec.spread``: how the served replicas must be spread over nodes and failure domains.

    ``min_nodes``: on at least that many nodes (every replica on its own node when fewer are
    served); ``max_per_node`` / ``max_per_domain``: at most that many per node / per value of the
    node label ``topology_key``. All are hard constraints of the solver.
    """

    min_nodes: int = 0
    max_per_node: Share = field(default_factory=Share)
    topology_key: str = ""
    max_per_domain: Share = field(default_factory=Share)

    @property
    def per_node(self) -> bool:
        """Whether the solver needs per-node served counts for it."""
        return self.min_nodes > 1 or self.max_per_node.is_set

    def text(self) -> str:
        parts = []
        if self.min_nodes:
            parts.append(f"minNodes {self.min_nodes}")
        if self.max_per_node.is_set:
            parts.append(f"maxPerNode {self.max_per_node.text()}")
        if self.topology_key:
            parts.append(f"maxPerDomain {self.max_per_domain.text()} of {self.topology_key}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Workload:
    name: str
    tenant: str
    replicas: int
    need: Need
    isolation: Isolation
    priority_tier: str  # resolved: the workload's own or its tenant's
    cluster: str  # resolved: required when the fleet has several clusters
    pools: tuple[str, ...] = ()  # allowed pools in that cluster; empty = any pool that can serve it
    span: Span = field(default_factory=Span, compare=False)
    target: Target | None = None
    spread: Spread | None = None  # resolved: the workload's own or its tier's


@dataclass(frozen=True)
class RuleCondition:
    pending_pods_greater_than: int = 0
    max_requested_memory_gb_below: float | None = None
    profile: str | None = None  # only pods asking for this profile count


@dataclass(frozen=True)
class Rule:
    """When pending demand matches ``when``, prefer layouts that maximise ``maximize`` instances."""

    name: str
    when: RuleCondition
    maximize: str  # profile name
    pools: tuple[str, ...] = ()  # empty = every pool whose model has the profile


Objective = Literal["gpus", "disruption", "preference"]
# The default order: disruption before GPUs. A fixed on-premises fleet pays for its GPUs whether they
# carry anything or not, while every reconfigured node drains its GPU pods; over the bench's 43 demand
# shifts (bench/RESULTS.md, O1) disruption-first touched 45 nodes instead of 92 for 1.5% more GPUs.
OBJECTIVES: tuple[Objective, ...] = ("disruption", "gpus", "preference")


def objective_order(named: Sequence[Objective]) -> tuple[Objective, ...]:
    """``PartitionPolicy.spec.objective`` completed: the goals named, then the rest in default order."""
    first = tuple(dict.fromkeys(named))
    return first + tuple(o for o in OBJECTIVES if o not in first)


@dataclass(frozen=True)
class PartitionPolicy:
    mode: PartitionMode = "static"
    interval_seconds: int = 900
    reconfiguration_threshold_pct: float = 20.0
    stabilization_seconds: int = 600
    # capacity is shrunk only to the peak over this window (HPA's scale-down stabilization window)
    scale_down_seconds: int = 86400
    min_dwell_seconds: int = 3600
    backoff_initial_seconds: int = 300
    backoff_max_seconds: int = 7200
    backoff_factor: float = 2.0
    daily_change_budget: int = 0  # node reconfigurations per day per cluster; 0 = unlimited
    unmet_demand: Strictness = "warning"
    allow_media_extensions: bool = False  # +me profiles are only chosen when a workload names them
    # order of the solver's levels after guarantees and served demand (see compiler.solve.milp)
    objective: tuple[Objective, ...] = OBJECTIVES
    tiers: tuple[PriorityTier, ...] = (
        PriorityTier("critical", 1_000_000, "Never starved; served first by the solver."),
        PriorityTier("high", 100_000, "Production workloads."),
        PriorityTier("low", 1_000, "Best effort: research, batch, burst."),
    )
    rules: tuple[Rule, ...] = ()
    pricing: tuple[tuple[str, float], ...] = ()  # catalog model → $ per GPU-hour
    span: Span = field(default_factory=Span, compare=False)
    budget_span: Span = field(default_factory=Span, compare=False)  # spec.dailyChangeBudget, when set

    def tier_value(self, name: str) -> int:
        for tier in self.tiers:
            if tier.name == name:
                return tier.value
        raise KeyError(name)


@dataclass(frozen=True)
class Policy:
    clusters: tuple[Cluster, ...]
    tenants: tuple[Tenant, ...]
    workloads: tuple[Workload, ...]
    partition: PartitionPolicy = field(default_factory=PartitionPolicy)
    fleet_name: str = "fleet"
    source_files: tuple[str, ...] = ()  # as given on the command line, relative and sorted

    def tenant(self, name: str) -> Tenant:
        for t in self.tenants:
            if t.name == name:
                return t
        raise KeyError(name)

    def cluster(self, name: str) -> Cluster:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(name)


@dataclass(frozen=True)
class CurrentState:
    """What is deployed now (read back from a previously rendered ``output/``): per node, its GPUs.

    Keys are ``(cluster, pool, node)``. An empty state means "nothing deployed": every node is new.
    """

    nodes: tuple[tuple[tuple[str, str, str], NodeLayout], ...] = ()
    # HAMi shares deployed: ((cluster, pool, node, GPU index, workload), replicas), sorted
    hami: tuple[tuple[tuple[str, str, str, int, str], int], ...] = ()
    # how each deployed pool was allocated: ((cluster, pool), "device-plugin" | "dra-static" | "dra-dynamic")
    backends: tuple[tuple[tuple[str, str], str], ...] = ()

    def as_dict(self) -> dict[tuple[str, str, str], NodeLayout]:
        return dict(self.nodes)
