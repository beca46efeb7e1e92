"""Discrete-event replay of a pod trace on a MIG fleet, with the recommend gates in the loop.

Model (documented in docs/simulate.md):

* **Fleet**: ``nodes`` × ``gpus_per_node`` GPUs of one catalog model; each GPU carries one layout
  (a multiset of profiles from :func:`compiler.catalog.layouts.enumerate_layouts`).
* **Scheduler**: after every arrival, departure, eviction and finished reconfiguration, pending pods
  are bound per profile in (priority, queued-at) order to free instances on schedulable nodes; a pod
  that does not fit is skipped for the next one (backfilling). A multi-GPU pod needs its full-GPU
  instances on one node.
* **Rollout** — follows migc's controller, not a convenient shortcut:

  - a node being re-carved is cordoned as a whole (controller/reconciler/admission.py ``cordon``):
    nothing new binds anywhere on it, also on GPUs whose layout does not change;
  - every GPU pod on the node blocks the reconfiguration (controller/pods.py ``blocking``: any pod
    using ``nvidia.com/gpu`` or ``nvidia.com/mig-*`` that is not finished), not only the pods on
    changed GPUs;
  - with ``drain_scope="gpu"`` (static DRA nodes: the ResourceClaims say which pod holds which GPU;
    mig-parted skips a GPU whose MIG devices already match, NVIDIA/mig-parted@bd7160f4
    cmd/nvidia-mig-parted/apply/config.go:92-95) the node is still cordoned whole, but only the
    pods on GPUs whose target differs block and are evicted; the others run through the apply,
    each node's new layouts go to its GPUs so that busy GPUs keep theirs where the node's new
    multiset allows (:func:`_keep_busy`), and the disruption rule charges only the drained pods
    (:func:`compiler.recommend.disruption.change_cost`);
  - the controller waits up to ``drain.grace_timeout`` (controller/settings.py, default 1800 s) for
    them to finish, then evicts the rest (controller/reconciler/drain.py ``draining``/``_evict``);
    an evicted pod goes back to the queue; with ``eviction="restart"`` (default: the trace's pods
    are batch pods without checkpoints) it loses its progress and runs its full duration again,
    with ``"resume"`` it runs only what was left. Evictions and the lost GPU-seconds are counted;
  - then the node is out for ``drain_seconds + reconfigure_seconds × changed GPUs`` (default
    0 + 60 s per GPU: the 30–90 s per GPU seen in practice), and its new layout counts once it is
    back (uncordoned);
  - admission is the controller's (controller/reconciler/admission.py): Idle nodes whose layout
    differs from the latest revision's, fewest GPU pods first, while fewer than ``max_unavailable``
    nodes are out of Idle (a Failed node keeps its slot), and up to ``idle_surge`` more that run no
    GPU pod (the pool's ``idleSurge``);
  - a new revision re-targets nodes in flight as the controller does (``Step.retarget``): a
    draining node keeps its grace clock (drain.py), an applying node finishes and applies again,
    still cordoned (apply.py), a Failed node restarts with the new target (failed.py);
  - with ``failure_rate`` a MIG manager apply fails (seeded draws, in event order): the node stays
    Failed and cordoned, the controller retries after ``failures.backoff × 2^(n−1)`` while
    ``n < failures.max_attempts``, then a human after ``operator_retry_seconds`` (controller/settings.py).
* **Re-partitioning** (:func:`cover`), on the latest revision's layouts: nodes are taken in order of
  expected disruption (:mod:`compiler.recommend.disruption`), then fewest running GPU pods; pending
  multi-GPU pods first get their full GPUs on one node; then, on each node, GPUs are taken in order
  of how little of the demand they serve, and each gets the catalog layout that serves the most
  slice-weighted shortage (the demand the fleet cannot serve plus what that GPU served), if that
  beats its current layout. Once a node changes (it drains anyway), its GPUs that serve nothing of
  the demand get the layout serving the most of the whole demand: one drain instead of several later.
  A GPU's new layout is the catalog layout serving the most of its need, ties to fewer slices
  (``Settings.layouts`` "fewest", the default; it may leave slices dark, e.g. a lone 4g.40gb). With
  "maximal" every layout it carves is maximal (:func:`_carve_layout`): among the layouts that serve a GPU's
  need equally, one where no further instance fits, its spare room given to the profiles the
  fleet-wide demand wants most (smaller first on a tie). The spare room is real capacity (pods bind
  to it) but the cover plans without it (``_Fleet.spare``): it neither counts as serving the demand
  (so it makes no other GPU look unneeded) nor as declared capacity for the default loop's sizing.
* **Policies** (``--baseline``): ``naive`` makes a new revision whenever the latest one leaves a pod
  without capacity (no gate at all: the rollout gate is ``migc recommend``'s own); ``default`` runs
  the recommend loop every ``interval``, sized as ``migc recommend`` sizes from its history (the
  default ``demand="history"``: the window's clamp and the scaleDownWindow's peak; ``"now"``: the
  running + pending instances observed then; ``"peak"``: the peak over the window), with the
  disruption rule (its displaced wait included) (``disruption="expected"``; the gain threshold with
  ``"off"``) and the real gates of :mod:`compiler.recommend.gates` (minDwell, dailyChangeBudget,
  backoff from the Failed nodes, max-wait urgency, rules), recommend's rollout gate (which its idle
  pass, :meth:`_Run.idle_pass`, is not held by) and its
  stabilizationWindow gate (:func:`compiler.recommend.history.window_gate`: the shortage of what the
  change adds persisted through the window) on a demand history kept as recommend's state file keeps
  it, one sample of running and pending instances per profile at each evaluation;
  ``static-balanced`` keeps the model's all-balanced layout; ``static-optimal`` keeps the
  layout that covers the trace's time-averaged demand, scaled to the fleet; ``mig-off`` gives every
  pod whole GPUs (a fraction takes one); ``static-peak``/``static-average`` keep the solver's layout
  (:func:`solver_static`) for the peak / the time-averaged pods per shape; ``per-pod`` carves an
  instance per pod at the first free placement (:mod:`compiler.simulate.carve`), destroyed when it
  ends, nothing evicted. Dynamic policies start from all-balanced.
* **Waits**: a pod's wait is the total time it spent pending (over all its attempts, when it was
  evicted). Pods still pending when the replay ends — and pods larger than a node — are *censored*:
  their wait so far is counted and marked, so a percentile that reaches one is a lower bound.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import heapq
import math
import random
from collections import Counter, deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from compiler.catalog import Catalog, GpuModel, load_catalog
from compiler.catalog.layouts import enumerate_layouts
from compiler.diagnostics import Diagnostic, has_errors
from compiler.model import (
    IDLE_SURGE,
    Cluster,
    CurrentState,
    GpuLayout,
    Need,
    NodePool,
    PartitionPolicy,
    Policy,
    Tenant,
    Workload,
)
from compiler.observe import Observation
from compiler.recommend import disruption as dis
from compiler.recommend import gates as g
from compiler.recommend import history as h
from compiler.recommend.engine import Recommendation, recommend
from compiler.recommend.state import State
from compiler.simulate import decision as rd
from compiler.simulate.carve import CarvedGpu, Carver
from compiler.simulate.trace import TracePod, full_profile, profile_for
from compiler.solve import solve
from controller import defaults

EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
BASELINES = (
    "naive",
    "default",
    "static-balanced",
    "static-optimal",
    "mig-off",
    "static-peak",
    "static-average",
    "per-pod",
)
RECARVING = ("naive", "default")  # the policies that re-carve nodes (the counters below are theirs)
# why a pending pod waits, in the order _Run.cause_check tries them (Result.wait_causes)
WAIT_CAUSES = ("fits", "idleGpus", "busyNode", "cordoned", "fragmented", "noRoom")
EVICTION_MODELS = ("restart", "resume")
DEMAND_MODELS = ("now", "peak", "history")
SURPLUS_MODELS = h.SURPLUS_MODELS  # Settings.surplus
DRAIN_SCOPES = dis.DRAIN_SCOPES  # Settings.drain_scope
LAYOUT_RULES = ("fewest", "maximal")  # Settings.layouts
DECISIONS = ("cover", "recommend")  # Settings.decision
# Settings.whole_gpu: what a whole GPU is on the loop's fleet (docs/simulate.md, *Whole GPUs*)
WHOLE_GPU_MODES = ("mig-disabled", "full-instance")
# controller/settings.py Settings.drain.grace_timeout (one constant, shared with migc recommend)
DRAIN_GRACE_SECONDS = dis.DRAIN_GRACE_SECONDS
# controller/settings.py Settings.failures' defaults, read from the one module both sides import:
# after the n-th failed apply the controller retries by itself after backoff × 2^(n−1) while
# n < max_attempts; then a human decides; a revision with max_failures failed nodes admits no more
FAILURE_BACKOFF_SECONDS = defaults.FAILURE_BACKOFF_SECONDS
MAX_ATTEMPTS = defaults.MAX_ATTEMPTS
MAX_FAILURES = defaults.MAX_FAILURES
# controller/settings.py Settings.drain's eviction retries and Settings.apply's ConfigMap wait, from the
# same module: a refused eviction is tried again after backoff, doubling up to its cap, until the
# node fails past grace + eviction_timeout; a new config name waits the kubelet's refresh
EVICTION_TIMEOUT_SECONDS = defaults.EVICTION_TIMEOUT_SECONDS
EVICTION_BACKOFF_SECONDS = defaults.EVICTION_BACKOFF_SECONDS
EVICTION_BACKOFF_MAX_SECONDS = defaults.EVICTION_BACKOFF_MAX_SECONDS
SYNC_SECONDS = defaults.CONFIGMAP_SYNC_DELAY_SECONDS


@dataclass(frozen=True)
class Settings:
    nodes: int
    gpus_per_node: int = 8
    mapping: str = "compute"
    time_scale: float = 1.0
    reconfigure_seconds: float = dis.RECONFIGURE_SECONDS  # per changed GPU
    drain_seconds: float = 0.0  # fixed per node (e.g. the MIG manager pausing the GPU operands)
    drain_grace_seconds: float = DRAIN_GRACE_SECONDS
    eviction: str = "restart"  # restart: an evicted pod runs its full duration again; resume: the rest
    max_unavailable: int = 1
    # NodePool.idleSurge: idle nodes (no GPU pod) admitted beyond max_unavailable
    # (controller/reconciler/admission.py; the policy's default, compiler.model.IDLE_SURGE)
    idle_surge: int = IDLE_SURGE
    max_wait_seconds: int | None = None  # migc.dev/max-wait-time given to every pod (None: no hint)
    # what the default loop plans for: "history", migc recommend's sizing on the replay's history
    # (compiler/recommend/history.py: the window's clamp and the scaleDownWindow's peak); "now", the
    # demand of the moment; "peak", the peak over the window (docs/simulate.md)
    demand: str = "history"
    demand_window_seconds: float = 0.0  # how far back the peak looks (0: the stabilizationWindow)
    # default loop: re-carve a node only when the pending GPU-time its change avoids beats the
    # GPU-time its drain is expected to destroy by the reconfigurationThreshold
    # (compiler/recommend/disruption.py)
    disruption: str = "expected"
    # how much of a node the disruption rule's outage charges (compiler/recommend/disruption.py
    # OUTAGE_CHARGES): "node", every GPU of it; "busy", the GPU share its running pods hold (0 on an
    # idle node; measured in bench/RESULTS.md Round 8, not the default)
    outage: str = "node"
    # demand="history": "kept", the scaleDownWindow's remembered surplus counts as much as the pods
    # waiting now; "last", it is served only with the capacity left after every profile's running +
    # pending now (compiler/recommend/history.py capped; measured in bench/RESULTS.md Round 9: it holds
    # fewer idle GPUs but loses a matrix cell's overall p95, so it is not the default); "busy", "last"
    # but the surplus first keeps the capacity it holds on nodes that are not idle (Round 9b)
    surplus: str = "kept"
    failure_rate: float = 0.0  # probability that one MIG manager apply fails (seeded, deterministic)
    seed: int = 0
    operator_retry_seconds: float = 3600.0  # a human retries a node past the automatic attempts
    # default loop with decision "cover": re-carve idle nodes for the pods waiting, ahead of the gates
    # (_Run.idle_pass); on by default since bench/RESULTS.md Round 21 (issue 22 item 3: an idle GPU is
    # not held against a pending pod). With decision "recommend" the cover, and so this pass, never runs
    idle_pass: bool = True
    # which pods a node's re-carve drains (compiler/recommend/disruption.py DRAIN_SCOPES): "node", every
    # GPU pod of the node (the device-plugin backend: controller/pods.py ``blocking``, nothing in the
    # API maps a pod to a GPU); "gpu", only the pods on GPUs whose layout changes (static DRA nodes,
    # where the ResourceClaims say which pod holds which GPU; mig-parted skips unchanged GPUs,
    # NVIDIA/mig-parted@bd7160f4 cmd/nvidia-mig-parted/apply/config.go:92-95). Both cordon the node
    # from admission until it is Idle again (_Run._blocking)
    drain_scope: str = "node"
    # what a whole GPU is on the loop's fleet (naive and default; docs/simulate.md, *Whole GPUs*):
    # "mig-disabled", a GPU with MIG mode off (pods ask nvidia.com/gpu), so a change between it and a
    # carved layout turns MIG on or off, which mig-parted applies to the whole node: it clears every
    # GPU in MIG mode and resets all GPUs (NVIDIA/mig-parted@bd7160f4
    # cmd/nvidia-mig-parted/apply/mode.go:88-94, :119-129); "full-instance", every GPU stays in MIG
    # mode and a pod of k whole GPUs takes k instances of the full profile (7g.80gb on A100-80GB) on one
    # node, so no change turns MIG on or off and only the GPUs whose layout changes are re-carved. It
    # changes what a change re-carves only under drain_scope "gpu" (under "node" every pod of the node
    # is drained anyway), so it is refused with "node", and with decision "recommend" (its inputs model
    # a whole GPU as MIG disabled). Optimistic: a pod runs its trace duration on the instance, whose
    # fewer SMs (98 of an A100's 108) and missing GPU peer-to-peer are not modelled
    whole_gpu: str = "mig-disabled"
    # which layout the replay's cover carves on a GPU for its need (docs/simulate.md): "fewest", the
    # catalog layout serving the most of the need, ties to fewer slices (may leave slices dark, e.g. a
    # lone 4g.40gb); "maximal", a maximal layout whose extra instances are spare room (_carve_layout;
    # measured in bench/RESULTS.md Round 12: not the default, it loses a contended cell's target)
    layouts: str = "fewest"
    # what decides the default loop's changes (docs/simulate.md, *The decision*): "cover", the
    # replay's own greedy cover of the sized demand, weighed node by node; "recommend", migc
    # recommend's decision itself (compiler/recommend/engine.py ``recommend``: its sizing, the exact
    # solver from the deployed layout, the disruption rule on the whole proposal and its gates), on
    # the replay's state as recommend would observe it (compiler/simulate/decision.py)
    decision: str = "cover"
    # the controller's wait before it labels a node with a config name new to the mig-parted ConfigMap
    # (controller/reconciler/apply.py ``_mounted``, migparted.py ``MountedConfigs``): the kubelet's
    # refresh of the MIG manager's mounted copy (_Run._sync_left)
    sync_seconds: float = SYNC_SECONDS
    # PodDisruptionBudgets: the fraction of pods one protects (drawn per pod from ``seed``, apart from
    # the failure draws) and how long it refuses their eviction (HTTP 429) once the grace is over;
    # the controller retries with its backoff and fails the node past grace + eviction_timeout
    # (controller/reconciler/drain.py; _Run._evict_all). The trace has none: 0 by default
    pdb_fraction: float = 0.0
    pdb_seconds: float = 900.0
    # what one node holds besides its GPUs (docs/simulate.md, *Node CPU and memory*): None, not
    # modelled (the trace's column is listed as ignored); else a pod binds only on a node with its
    # cpu_milli / memory_mib left, as the kube-scheduler's NodeResourcesFit filter admits it
    # (kubernetes/kubernetes@007f7ae7 pkg/scheduler/framework/plugins/noderesources/fit.go
    # fitsRequest), and a pod asking more than a node holds is never served (openb's 8-GPU G2 node:
    # 96,000 mCPU, 393,216 MiB)
    node_cpu_milli: int | None = None
    node_memory_mib: int | None = None

    def resources(self) -> tuple[str, ...]:
        """The trace columns these settings model besides GPUs (``read_trace(resources=…)``)."""
        given = (("cpu_milli", self.node_cpu_milli), ("memory_mib", self.node_memory_mib))
        return tuple(column for column, n in given if n is not None)

    def fits_node(self, pod: TracePod) -> bool:
        """Whether ``pod`` fits an empty node: its GPUs, and the CPU and memory modelled."""
        return (
            pod.num_gpu <= self.gpus_per_node
            and (self.node_cpu_milli is None or pod.cpu_milli <= self.node_cpu_milli)
            and (self.node_memory_mib is None or pod.memory_mib <= self.node_memory_mib)
        )


def eviction_retry(blocked: float) -> float | None:
    """When, after the grace, a pod whose eviction a PDB refuses for ``blocked`` seconds is evicted:
    the controller's first attempt at 0, then retries after its backoff (controller/reconciler/drain.py
    ``_evict``: ``Backoff.bump``, context.py: base, doubling up to the cap), the first at or after
    ``blocked``; None when that is past ``eviction_timeout`` (the node fails "drain timed out")."""
    at, delay = 0.0, EVICTION_BACKOFF_SECONDS / 2
    while at < blocked:
        delay = min(EVICTION_BACKOFF_MAX_SECONDS, delay * 2)
        at += delay
    return at if at < EVICTION_TIMEOUT_SECONDS else None


@dataclass(frozen=True)
class DecisionFinding:
    """A diagnostic code ``migc recommend``'s decision reported in the replay (``--decision
    recommend``): the first such diagnostic, the evaluations that reported the code and how many
    different messages it had (one per distinct shortfall, say: bounded, where one line per
    evaluation would be thousands)."""

    first: Diagnostic
    evaluations: int
    distinct: int


@dataclass
class Result:
    baseline: str
    hours: float
    reconfigurations: int = 0  # node reconfigurations
    gpu_reconfigurations: int = 0
    gpus_touched: int = 0
    nodes_touched: int = 0
    waits: dict[str, list[tuple[float, bool]]] = field(default_factory=dict)  # size → (wait s, censored)
    never_served: int = 0
    busy_slice_seconds: float = 0.0
    total_slices: int = 0
    evaluations: int = 0
    blocked: dict[str, int] = field(default_factory=dict)  # gate → evaluations it blocked
    rules_fired: int = 0
    evictions: int = 0
    lost_gpu_seconds: float = 0.0  # run time thrown away by evictions, in whole-GPU seconds
    drain_waits: int = 0  # node rollouts that had to wait for running pods
    drains: int = 0  # nodes cordoned (admitted by the rollout); > reconfigurations when re-targeted back
    revisions: int = 0  # proposals handed to the controller (new assignment revisions)
    retargets: int = 0  # nodes in flight whose target a new revision changed (controller: step.retarget)
    failures: int = 0  # failed MIG manager applies (--failure-rate)
    sync_waits: int = 0  # applies that waited for the kubelet to refresh the ConfigMap (sync_seconds)
    evictions_blocked: int = 0  # pods whose eviction a PDB refused at least once (pdb_fraction)
    drain_timeouts: int = 0  # nodes failed "drain timed out": a PDB held a pod past the eviction timeout
    # naive and default (None elsewhere): pending pods that, sampled once per interval, could run on
    # an idle node (Idle, no GPU pod: a re-carve evicts nobody) once re-carved, and stayed so longer
    # than one interval plus one node's reconfiguration (_Run.held_check)
    held_on_idle: int | None = None
    # naive and default (None elsewhere): GPU layouts applied where one more instance would still
    # fit (dark slices: a catalog layout holds this one and more)
    non_maximal: int | None = None
    # naive and default (None elsewhere): why pods waited, sampled once per interval with the held
    # counter (_Run.cause_check): size class → cause (WAIT_CAUSES) → pending pod-seconds
    wait_causes: dict[str, dict[str, float]] | None = None
    instances_carved: int = 0  # per-pod: MIG instances created (one per pod start)
    idle_recarves: int = 0  # default: revisions made by the idle pass (_Run.idle_pass)
    revision_times: list[float] = field(default_factory=list)  # when each revision was made (replay s)
    # decision "recommend" with a snapshot asked for (simulate's ``snapshot``): the instant (RFC 3339),
    # the directory written and whether the decision there proposed a change
    snapshot: dict[str, object] | None = None
    # decision "recommend": what recommend's decision reported (unmet demand, solver limits …) per
    # diagnostic code (DecisionFinding); None for the other decisions
    decision_diagnostics: dict[str, DecisionFinding] | None = None

    # first to last arrival: the same for every baseline of a trace, so rates compare the same period
    # (the replay's own length grows with the work a policy throws away and runs again)
    trace_hours: float = 0.0

    @property
    def per_hour(self) -> float:
        """Re-carves per hour of the trace (first to last arrival)."""
        hours = self.trace_hours or self.hours
        return self.reconfigurations / hours if hours > 0 else 0.0

    @property
    def utilisation(self) -> float:
        denom = self.total_slices * self.hours * 3600
        return self.busy_slice_seconds / denom if denom > 0 else 0.0

    def percentile(self, size: str | None, q: float) -> tuple[float, bool]:
        """The ``q``-th percentile wait and whether it is only a lower bound.

        Censored waits are lower bounds of the true waits, so the order statistic is a lower bound of
        the true percentile; it is exact only when no censored wait lies at or below it.
        """
        vals = sorted(v for k, vs in self.waits.items() if size is None or k == size for v in vs)
        if not vals:
            return 0.0, False
        i = min(len(vals) - 1, max(0, math.ceil(q / 100 * len(vals)) - 1))
        x = vals[i][0]
        return x, any(c for v, c in vals[: i + 1] if c) or any(c and v <= x for v, c in vals[i + 1 :])

    def censored(self, size: str | None = None) -> int:
        return sum(1 for k, vs in self.waits.items() if size is None or k == size for _, c in vs if c)


@dataclass
class _Pod:
    src: TracePod
    arrival: float
    profile: str
    count: int
    size: str


Layout = dict[str, int]


def _key(v: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((k, n) for k, n in v.items() if n > 0))


IDLE, DRAINING, RECONFIGURING, FAILED = 0, 1, 2, 3


class _Fleet:
    def __init__(self, model: GpuModel, s: Settings, layout: Layout) -> None:
        self.model = model
        self.s = s
        n = s.nodes * s.gpus_per_node
        self.layout: list[Layout] = [dict(layout) for _ in range(n)]  # deployed
        self.target: list[Layout] = [dict(layout) for _ in range(n)]  # the latest revision wants
        # per GPU, the instances of its target carved as spare room (_carve_layout's extras), not for
        # the demand: no Workload asks for them, so the default loop's sizing does not count them
        # as declared (Fleet.declared)
        self.spare: list[Layout] = [{} for _ in range(n)]
        self.busy: list[Layout] = [{} for _ in range(n)]
        self.state = [IDLE] * s.nodes
        self.slices = {p.name: p.compute_slices for p in model.profiles}
        # a whole GPU: MIG off, or with Settings.whole_gpu "full-instance" one full-profile instance
        self.whole: Layout = {full_profile(model).name: 1}

    def redone(self, node: int, changes: Mapping[int, Layout]) -> Collection[int]:
        """The GPUs mig-parted re-carves to give ``node``'s GPUs ``changes``: those that change, or with
        ``drain_scope="gpu"`` every GPU of the node when one of them turns MIG on or off — mig-parted
        then clears every GPU in MIG mode and resets all GPUs of the node
        (NVIDIA/mig-parted@bd7160f4 cmd/nvidia-mig-parted/apply/mode.go:88-94, :119-129), and the
        controller drains every pod (controller/reconciler/migparted.py ``changing_gpus``). Under
        ``"node"`` every pod is drained anyway and the outage counts the GPUs whose layout changes.
        With ``whole_gpu="full-instance"`` a whole GPU is a full-profile instance of a GPU in MIG
        mode: no change turns MIG on or off, so only the GPUs that change are re-carved."""
        whole = self.whole
        if self.s.drain_scope == "gpu" and self.s.whole_gpu == "mig-disabled" and any(
            (self.layout[gi] == whole) != (dict(new) == whole) for gi, new in changes.items()
        ):
            return self.gpus(node)
        return changes.keys()

    def node(self, gpu: int) -> int:
        return gpu // self.s.gpus_per_node

    def gpus(self, node: int) -> range:
        return range(node * self.s.gpus_per_node, (node + 1) * self.s.gpus_per_node)

    def gpus_all(self) -> range:
        return range(len(self.target))

    def wanted(self, node: int) -> dict[int, Layout]:
        """The node's GPUs whose target differs from their deployed layout, with the target."""
        return {gi: dict(self.target[gi]) for gi in self.gpus(node) if self.layout[gi] != self.target[gi]}

    def differs(self, node: int) -> bool:
        """Whether the node's deployed layout is not what the latest revision wants."""
        return any(self.layout[gi] != self.target[gi] for gi in self.gpus(node))

    def capacity(self) -> Layout:
        """Instances per profile of the latest revision."""
        out: Layout = {}
        for lay in self.target:
            for p, c in lay.items():
                out[p] = out.get(p, 0) + c
        return out

    def planned(self, gpu: int) -> Layout:
        """The GPU's target layout less its spare room: the instances the cover planned it for."""
        if not self.spare[gpu]:
            return self.target[gpu]  # Settings.layouts "fewest": never any spare room
        return _minus(self.target[gpu], self.spare[gpu])

    def declared(self) -> Layout:
        """:meth:`capacity` less the spare room (``spare``): what the Workloads of the latest revision
        would declare. migc recommend's proposal declares the sized replicas and the solver may carve
        more (its fill level); the replay's revision is its layouts, so the instances carved only to
        fill a GPU are taken out here."""
        if not any(self.spare):
            return self.capacity()
        out: Layout = {}
        for gi in range(len(self.target)):
            for p, c in self.planned(gi).items():
                out[p] = out.get(p, 0) + c
        return out


@functools.lru_cache(maxsize=200_000)
def _best_layout(model: GpuModel, need: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """The catalog layout serving the most slice-weighted ``need`` (ties: fewer slices, then sorted).

    The replay's cover carves with it under ``Settings.layouts`` "fewest" (the default), and
    ``static-optimal`` (:func:`optimal_static`) always; "maximal" carves with :func:`_carve_layout`."""
    slices = {p.name: p.compute_slices for p in model.profiles}
    want = dict(need)
    best: tuple[int, int, tuple[tuple[str, int], ...]] | None = None
    for lay in enumerate_layouts(model):
        value = sum(min(c, want.get(p, 0)) * slices[p] for p, c in lay.profiles)
        used = sum(c * slices[p] for p, c in lay.profiles)
        cand = (value, -used, lay.profiles)
        if best is None or cand[:2] > best[:2]:
            best = cand
    return best[2] if best else ()


def _rank(model: GpuModel, demand: Mapping[str, int]) -> tuple[str, ...]:
    """The model's profiles in the order :func:`_carve_layout` gives them a GPU's spare room: the most
    wanted by ``demand`` (instances, fleet-wide) first, then the smaller (fewer compute slices), then
    by name; profiles ``demand`` does not want come last, smallest first."""
    usable = [p for p in model.profiles if not p.media_extensions]  # enumerate_layouts carries no +me
    usable.sort(key=lambda p: (-max(0, demand.get(p.name, 0)), p.compute_slices, p.name))
    return tuple(p.name for p in usable)


@functools.lru_cache(maxsize=200_000)
def _carve_layout(
    model: GpuModel, need: tuple[tuple[str, int], ...], rank: tuple[str, ...]
) -> tuple[tuple[str, int], ...]:
    """The layout the replay carves on a GPU for ``need``: a **maximal** catalog layout (no dark
    slice: no catalog layout holds it and one instance more, :func:`maximal`) among those serving the
    most slice-weighted ``need``; its instances beyond ``need`` (the extras, filling the room ``need``
    leaves) go to the profiles in ``rank`` order (:func:`_rank` of the fleet-wide demand the cover
    works for: the profile the demand wants most first, the smaller first on a tie), compared
    lexicographically: as many extras of the first profile as fit, then of the next; then the sorted
    layout. No slice is left dark for a later pod: every instance that still fits is carved, for the
    profile most likely to be asked for. The replay's policies reserve no capacity (neither
    PartitionPolicy nor a Workload has a reservation field; a NodePool's ``reserveWholeGpus`` /
    ``reserveWholeNodes`` are the solver's, and the replay's fleet has none), so every layout it
    carves is maximal. The extras are the GPU's *spare room* (:func:`cover`: carved, not planned
    with)."""
    slices = {p.name: p.compute_slices for p in model.profiles}
    want = dict(need)
    best: tuple[int, tuple[int, ...], tuple[tuple[str, int], ...]] | None = None
    for lay in enumerate_layouts(model):
        if not maximal(model, lay.profiles):
            continue  # a maximal superset serves the need at least as well
        have = dict(lay.profiles)
        value = sum(min(c, want.get(p, 0)) * slices[p] for p, c in lay.profiles)
        extras = tuple(max(0, have.get(p, 0) - want.get(p, 0)) for p in rank)
        cand = (value, extras, lay.profiles)
        if best is None or cand[:2] > best[:2]:
            best = cand
    return best[2] if best else ()


class Weigh(Protocol):
    """The disruption rule as :func:`cover` asks it, node change by node change."""

    def __call__(
        self,
        node: int,
        before: Layout,
        after: Layout,
        changes: Mapping[int, Layout],
        bonus: float,
        mine: Layout,
    ) -> bool:
        """(node, capacity before, capacity after its change, the GPUs it changes with their new
        layouts, benefit of the multi-GPU pods it places, the node's instances per profile after its
        change) → whether the change is worth it. Its answer for a ``bonus`` > 0 rises with ``bonus``
        (the cost does not depend on it): :meth:`_Cover.place_big` relies on that."""

    def refused(self, times: int) -> None:
        """Count ``times`` refusals :func:`cover` knew without asking (the same change, for less)."""


def _node_after(
    fleet: _Fleet, node: int, lay: Callable[[int], Layout], changes: Mapping[int, Layout]
) -> Layout:
    """The node's instances per profile once ``changes`` are made (``lay``: a GPU's layout so far)."""
    out: Layout = {}
    for gi in fleet.gpus(node):
        for p, c in changes.get(gi, lay(gi)).items():
            out[p] = out.get(p, 0) + c
    return out


@dataclass(frozen=True)
class BigPod:
    """A pending pod asking for ``count`` ≥ 2 full-GPU instances, which must all be on one node."""

    count: int
    profile: str
    benefit: float  # its pending GPU-time avoided (for ``weigh``): count × this attempt's wait


def cover(
    fleet: _Fleet,
    demand: Layout,
    order: Sequence[tuple[int, float]],
    extra: Layout | None = None,
    weigh: Weigh | None = None,
    big: Sequence[BigPod] = (),
    mix: Layout | None = None,
    keep: Callable[[int], float] | None = None,
    frozen: Collection[int] = (),
    spare: dict[int, Layout] | None = None,
) -> tuple[dict[int, Layout], Layout]:
    """GPUs to re-carve (gpu → new layout) and the resulting capacity; see the module docstring.

    Works on the latest revision's layouts (``fleet.target``): what a rollout still applies counts.
    ``order``: the nodes that may change, least disturbing first (with their expected disruption).
    ``weigh``: when set, a node is re-carved only where it says the change is worth its disruption.
    ``big``: pending multi-GPU pods (in queue order; their instances are part of ``demand``): each is
    given ``count`` full GPUs *on one node* — idle full GPUs of one node if there are enough, else
    the first node in ``order`` whose change passes ``weigh`` gets them (idle GPUs first) — and the
    per-GPU cover then works on the rest of the demand and of the GPUs. ``mix``: the demand whose
    mix a changed node's GPUs that serve nothing of ``demand`` are re-carved to (default: ``demand``
    and ``extra``; the idle pass passes the demand the loop sizes for). ``keep`` (``drain_scope="gpu"``):
    the GPU-seconds a GPU's change would evict; each node's new layouts are then mapped onto its GPUs
    so that busy GPUs keep their layouts where the node's new multiset still holds them
    (:func:`_keep_busy`). ``frozen``: GPUs left as they are (their capacity still counts).
    ``spare``: when given, filled with each changed GPU's spare room (the instances of its new layout
    beyond the need it was carved for, :func:`_carve_layout`), for :meth:`_Fleet.declared`.

    The cover plans with each GPU's *planned* layout (:meth:`_Fleet.planned`: its layout less its
    spare room) and the planned capacity: spare room serves pods (the scheduler binds to it) but is
    not counted as serving the demand here, so a GPU whose planned instances are needed is not
    mistaken for one that serves nothing (and batch-re-carved) because another GPU's spare room holds
    the same profile. A GPU changes only when its whole layout changes; the changes returned are
    whole layouts and the capacity returned includes the spare room.
    """
    want = dict(demand)
    for p, n in (extra or {}).items():
        want[p] = want.get(p, 0) + n
    c = _Cover(fleet, order, weigh, want, keep, frozen)
    for pod in big:
        c.place_big(pod)
    c.per_gpu(mix)
    if spare is not None:
        spare.update({gi: c.spare.get(gi, {}) for gi in c.changes})
    cap = dict(c.cap)  # planned capacity; the spare room is real capacity too
    for gi in fleet.gpus_all():
        for p, n in (c.spare.get(gi, {}) if gi in c.changes else fleet.spare[gi]).items():
            cap[p] = cap.get(p, 0) + n
    return {gi: c.real(gi) for gi in c.changes}, {p: n for p, n in cap.items() if n}


class _Cover:
    """One :func:`cover`: ``changes`` (gpu → new layout) and the capacity ``cap`` they give, built
    first for the multi-GPU pods (:meth:`place_big`), then GPU by GPU (:meth:`per_gpu`)."""

    def __init__(
        self,
        fleet: _Fleet,
        order: Sequence[tuple[int, float]],
        weigh: Weigh | None,
        want: Layout,
        keep: Callable[[int], float] | None = None,
        frozen: Collection[int] = (),
    ) -> None:
        self.fleet = fleet
        self.order = order
        self.weigh = weigh
        self.want = want
        self.keep = keep
        self.frozen = set(frozen)
        self.cap = fleet.declared()  # planned capacity: the spare room is left out (see cover)
        self.changes: dict[int, Layout] = {}  # planned layouts (their spare room in ``spare``)
        self.spare: dict[int, Layout] = {}  # changed GPU → its spare room (_carve_layout's extras)
        self.taken: set[int] = set()  # GPUs given to a multi-GPU pod
        # (instances, profile) → (the largest benefit of a multi-GPU pod that got no node, the refusals
        # ``weigh`` gave it) since the last change of this cover: a pod asking the same for no more
        # benefit gets none either, with as many refusals (place_big)
        self.refused_big: dict[tuple[int, str], tuple[float, int]] = {}
        # GPUs not given to one yet (nor frozen)
        self.room = {node: sum(1 for gi in fleet.gpus(node) if gi not in self.frozen) for node, _ in order}

    def lay(self, gi: int) -> Layout:
        """The GPU's planned layout so far (its spare room left out)."""
        return self.changes[gi] if gi in self.changes else self.fleet.planned(gi)

    def real(self, gi: int) -> Layout:
        """The GPU's layout so far, spare room included."""
        if gi in self.changes:
            return _plus(self.changes[gi], self.spare.get(gi, {}))
        return dict(self.fleet.target[gi])

    def place_big(self, pod: BigPod) -> None:
        """``pod.count`` full GPUs on one node: idle ones if a node has enough, else the first
        node in ``order`` whose change ``weigh`` lets through."""
        self.want[pod.profile] = max(0, self.want.get(pod.profile, 0) - pod.count)
        if pod.count > max(self.room.values(), default=0):
            return  # no node has that many GPUs left in this cover
        key = (pod.count, pod.profile)
        known = self.refused_big.get(key)
        if known is not None and 0.0 < pod.benefit <= known[0] and self.weigh is not None:
            # nothing changed since a pod asking the same for as much got no node: neither do idle
            # GPUs appear nor does ``weigh`` (its answer rises with the benefit) let a node through
            self.weigh.refused(known[1])
            return
        if self._on_idle_whole_gpus(pod):
            self.refused_big.clear()
            return
        refusals = self._carve_for(pod)
        if refusals is None:
            self.refused_big.clear()
        elif pod.benefit > 0.0:
            self.refused_big[key] = (max(pod.benefit, known[0] if known else 0.0), refusals)

    def _on_idle_whole_gpus(self, pod: BigPod) -> bool:
        fleet, whole = self.fleet, {pod.profile: 1}
        for node, _ in self.order:
            idle = [
                gi
                for gi in fleet.gpus(node)
                if gi not in self.taken
                and gi not in self.frozen
                and self.lay(gi) == whole
                and not any(fleet.busy[gi].values())
            ]
            if len(idle) >= pod.count:
                self.taken.update(idle[: pod.count])
                self.room[node] -= pod.count
                return True
        return False

    def _carve_for(self, pod: BigPod) -> int | None:
        """Carve ``pod.count`` full GPUs of the first node ``weigh`` lets through: None, or the
        refusals ``weigh`` gave where no node took the pod."""
        fleet, whole, lay = self.fleet, {pod.profile: 1}, self.lay
        refusals = 0
        for node, _ in self.order:
            free = sorted(
                (gi for gi in fleet.gpus(node) if gi not in self.taken and gi not in self.frozen),
                key=lambda gi: (lay(gi) != whole, sum(fleet.busy[gi].values()), gi),
            )
            if len(free) < pod.count:
                continue
            pick = free[: pod.count]
            node_changes = {gi: dict(whole) for gi in pick if lay(gi) != whole}
            after = dict(self.cap)
            for gi in node_changes:
                _replace(after, lay(gi), {pod.profile: 1})
            if self.weigh is not None and not self.weigh(
                node,
                self.cap,
                after,
                node_changes,
                pod.benefit,
                _node_after(fleet, node, self.real, node_changes),
            ):
                refusals += 1
                continue
            self.changes.update(node_changes)
            self.taken.update(pick)
            self.room[node] -= pod.count
            self.cap = after
            return None
        return refusals

    def per_gpu(self, mix: Layout | None) -> None:
        """The per-GPU cover, on the GPUs and the demand the multi-GPU pods left."""
        fleet, lay, want = self.fleet, self.lay, self.want
        rest = dict(self.cap)
        for gi in self.taken:
            for p, n in lay(gi).items():
                rest[p] -= n
        short = _short(want, rest)
        for node, _ in self.order:
            if not short:
                break
            fixed = self.taken | self.frozen if self.frozen else self.taken
            node_cap, node_changes, node_spare = _cover_node(
                fleet, node, want, dict(rest), short, lay, fixed, mix, per_gpu_drain=self.keep is not None
            )
            if not node_changes:
                continue
            if self.keep is not None:
                moved = _keep_busy(fleet, node, lay, node_changes, fixed, self.keep)
                # the spare room goes with its layout (the first changed GPU carved to it)
                by_key: dict[tuple[tuple[str, int], ...], list[Layout]] = {}
                for gi, new in sorted(node_changes.items()):
                    by_key.setdefault(_key(new), []).append(node_spare.get(gi, {}))
                node_spare = {
                    gi: by_key[_key(new)].pop(0) if by_key.get(_key(new)) else {} for gi, new in moved.items()
                }
                node_changes = moved
            real = {gi: _plus(new, node_spare.get(gi, {})) for gi, new in node_changes.items()}
            if self.weigh is not None and not self.weigh(
                node, rest, node_cap, real, 0.0, _node_after(fleet, node, self.real, real)
            ):
                continue  # what the drain is expected to destroy outweighs what the change serves
            for gi, new in node_changes.items():
                _replace(self.cap, lay(gi), new)
            rest = node_cap
            self.changes.update(node_changes)
            self.spare.update(node_spare)
            short = _short(want, rest)


def _minus(a: Mapping[str, int], b: Mapping[str, int]) -> Layout:
    """The instances of ``a`` not in ``b``, per profile."""
    return {p: c - b.get(p, 0) for p, c in a.items() if c > b.get(p, 0)}


def _plus(a: Mapping[str, int], b: Mapping[str, int]) -> Layout:
    """The instances of ``a`` and ``b`` together, per profile."""
    out = dict(a)
    for p, c in b.items():
        out[p] = out.get(p, 0) + c
    return out


def _keep_busy(
    fleet: _Fleet,
    node: int,
    lay: Callable[[int], Layout],
    changes: Mapping[int, Layout],
    fixed: Collection[int],
    evicts: Callable[[int], float],
) -> dict[int, Layout]:
    """``drain_scope="gpu"``: the same multiset of layouts on the node's GPUs (``fixed`` ones aside),
    mapped onto its GPUs so that the change evicts the fewest GPU-seconds, then changes the fewest
    GPUs. ``evicts(gpu)``: what re-carving that GPU would evict.

    A GPU keeps its layout iff a copy of that layout is left in the multiset; a GPU's cost is 0 when it
    keeps its layout and ``evicts(gpu)`` (≥ 0) otherwise, so the copies of each layout go, busiest
    first, to the GPUs that hold it now: the most GPUs possible keep their layout (then fewest
    changed), and among the GPUs that hold one layout the ones evicting most keep it (fewest evicted
    GPU-seconds; then the ones with more instances in use, so that a pod that has just started keeps
    its GPU over an idle one). This greedy solves that assignment problem exactly (its cost matrix is
    0 on a GPU's own layout and a per-GPU constant elsewhere), so no general solver is needed. The
    layouts left go to the GPUs left, in index order: the idle GPUs change first because the busy
    ones keep their layouts first."""
    gpus = [gi for gi in fleet.gpus(node) if gi not in fixed]
    left: dict[tuple[tuple[str, int], ...], int] = {}
    for gi in gpus:
        k = _key(changes.get(gi, lay(gi)))
        left[k] = left.get(k, 0) + 1
    kept: set[int] = set()
    busy = fleet.busy
    for gi in sorted(gpus, key=lambda gi: (-evicts(gi), -sum(busy[gi].values()), gi)):
        k = _key(lay(gi))
        if left.get(k, 0) > 0:
            left[k] -= 1
            kept.add(gi)
    rest = sorted(k for k, n in left.items() for _ in range(n))
    return {gi: dict(k) for gi, k in zip((gi for gi in gpus if gi not in kept), rest, strict=True)}


def _replace(cap: Layout, old: Mapping[str, int], new: Mapping[str, int]) -> None:
    """Replace one GPU's ``old`` layout by ``new`` in the capacity ``cap`` (in place)."""
    for p, c in old.items():
        cap[p] -= c
    for p, c in new.items():
        cap[p] = cap.get(p, 0) + c


def _swap(cap: Layout, old: Mapping[str, int], new: Mapping[str, int], want: Mapping[str, int]) -> Layout:
    """:func:`_replace`, then the spare capacity after it."""
    _replace(cap, old, new)
    return {p: max(0, c - want.get(p, 0)) for p, c in cap.items()}


def _short(want: Mapping[str, int], cap: Mapping[str, int]) -> Layout:
    """The demand ``cap`` leaves unserved, per profile."""
    return {p: n - cap.get(p, 0) for p, n in want.items() if n > cap.get(p, 0)}


def _cover_node(
    fleet: _Fleet,
    node: int,
    want: Layout,
    cap: Layout,
    short: Layout,
    lay: Callable[[int], Layout],
    taken: set[int],
    mix: Layout | None = None,
    per_gpu_drain: bool = False,
) -> tuple[Layout, dict[int, Layout], dict[int, Layout]]:
    """Re-carve one node's GPUs greedily against the shortage; the new capacity, the changes and
    each changed GPU's spare room (its new layout's instances beyond the need it was carved for).

    ``lay``: a GPU's layout so far; ``taken``: GPUs kept for multi-GPU pods (left alone);
    ``per_gpu_drain`` (``drain_scope="gpu"``, where only the changed GPUs are drained): among GPUs
    that serve the demand alike the ones with fewer instances in use are re-carved first, and the
    batching step (below) leaves GPUs with a pod on them alone (re-carving a busy GPU that serves
    nothing of the demand would evict its pods for nothing)."""
    slices = fleet.slices
    spare = {p: max(0, c - want.get(p, 0)) for p, c in cap.items()}
    # slices of each GPU the demand needs (instances beyond the spare of their profile)
    gpus = sorted(
        (gi for gi in fleet.gpus(node) if gi not in taken),
        key=lambda gi: (
            sum(max(0, c - spare.get(p, 0)) * slices[p] for p, c in lay(gi).items()),
            sum(fleet.busy[gi].values()) if per_gpu_drain else 0,
            gi,
        ),
    )
    changes: dict[int, Layout] = {}
    extras: dict[int, Layout] = {}
    # Settings.layouts "maximal": every layout carved is maximal, its extras spare room; "fewest"
    # (the default): the layout serving the most of the need, ties to fewer slices (no spare room)
    carve_maximal = fleet.s.layouts == "maximal"
    rank = _rank(fleet.model, want) if carve_maximal else ()  # who gets a GPU's spare room
    for gi in gpus:
        if not short:
            break
        old = lay(gi)
        # what this GPU serves now that nobody else would: removing it adds to the shortage
        lost = {p: max(0, c - spare.get(p, 0)) for p, c in old.items()}
        need = dict(short)
        for p, n in lost.items():
            if n:
                need[p] = need.get(p, 0) + n
        carved = _carve_for_need(fleet, gi, old, need, lost, rank, carve_maximal)
        if carved is None:
            continue
        changes[gi], extra = carved
        if carve_maximal:
            extras[gi] = extra
        spare = _swap(cap, old, changes[gi], want)
        short = _short(want, cap)
    if changes:
        # The node is drained anyway: also re-carve its GPUs that serve nothing of the demand to
        # the layout serving the most of the whole demand (batching: one drain instead of several)
        whole_mix = _key(want if mix is None else mix)
        mix_rank = _rank(fleet.model, dict(whole_mix)) if carve_maximal else ()
        for gi in gpus:
            if gi in changes:
                continue
            old = lay(gi)
            if any(c - spare.get(p, 0) > 0 for p, c in old.items()):
                continue
            if per_gpu_drain and any(fleet.busy[gi].values()):
                continue
            carved = _carve_for_mix(fleet, gi, old, whole_mix, mix_rank, carve_maximal)
            if carved is None:
                continue
            changes[gi], extra = carved
            if carve_maximal:
                extras[gi] = extra
            spare = _swap(cap, old, changes[gi], want)
    return cap, changes, extras


def _carve_for_need(
    fleet: _Fleet,
    gi: int,
    old: Layout,
    need: Layout,
    lost: Layout,
    rank: tuple[str, ...],
    carve_maximal: bool,
) -> tuple[Layout, Layout] | None:
    """GPU ``gi``'s new planned layout for ``need`` and its spare room, or None where the change
    serves no more than what the GPU serves now (``lost``) or leaves it as it is."""
    slices = fleet.slices
    if carve_maximal:
        new = dict(_carve_layout(fleet.model, _key(need), rank))
    else:
        new = dict(_best_layout(fleet.model, _key(need)))
    gain = sum(min(c, need.get(p, 0)) * slices[p] for p, c in new.items())
    keep = sum(n * slices[p] for p, n in lost.items())
    if gain <= keep or new == old:
        return None
    if not carve_maximal:
        return new, {}
    if new == _plus(old, fleet.spare[gi]):
        return None  # its layout already (the need now takes some of its spare room)
    extra = _minus(new, need)
    return _minus(new, extra), extra  # planned: the spare room is not counted (see cover)


def _carve_for_mix(
    fleet: _Fleet,
    gi: int,
    old: Layout,
    whole_mix: tuple[tuple[str, int], ...],
    mix_rank: tuple[str, ...],
    carve_maximal: bool,
) -> tuple[Layout, Layout] | None:
    """The batching step's new layout for GPU ``gi`` (the most of the whole demand) and its spare
    room, or None where it already carries it."""
    if not carve_maximal:
        new = dict(_best_layout(fleet.model, whole_mix))
        return None if new == old else (new, {})
    new = dict(_carve_layout(fleet.model, whole_mix, mix_rank))
    if new == _plus(old, fleet.spare[gi]):
        return None
    extra = _minus(new, dict(whole_mix))
    return _minus(new, extra), extra


def balanced_layout(model: GpuModel) -> Layout:
    return dict(model.balanced)


def optimal_static(model: GpuModel, s: Settings, avg: Mapping[str, float]) -> list[Layout]:
    """Layouts covering the time-averaged demand scaled to the fleet's slices (greedy, GPU by GPU)."""
    slices = {p.name: p.compute_slices for p in model.profiles}
    total = sum(v * slices[p] for p, v in avg.items())
    n = s.nodes * s.gpus_per_node
    if total <= 0:
        return [balanced_layout(model) for _ in range(n)]
    scale = n * model.compute_slices / total
    need = {p: max(1, round(v * scale)) for p, v in avg.items() if v > 0}
    out: list[Layout] = []
    for _ in range(n):
        lay = dict(_best_layout(model, _key(need))) if need else balanced_layout(model)
        if not any(min(c, need.get(p, 0)) for p, c in lay.items()):
            # demand covered: spread the rest in proportion again
            need = {p: max(1, round(v * scale)) for p, v in avg.items() if v > 0}
            lay = dict(_best_layout(model, _key(need)))
        for p, c in lay.items():
            if p in need:
                need[p] = max(0, need[p] - c)
        need = {p: v for p, v in need.items() if v > 0}
        out.append(lay)
    return out


@functools.lru_cache(maxsize=4096)
def maximal(model: GpuModel, lay: tuple[tuple[str, int], ...]) -> bool:
    """Whether no further instance fits on a GPU carrying ``lay``: no catalog layout holds every
    instance of ``lay`` and more (an empty GPU is not maximal)."""
    have = dict(lay)
    n = sum(have.values())
    for big in enumerate_layouts(model):
        more = dict(big.profiles)
        if sum(more.values()) > n and all(c <= more.get(p, 0) for p, c in have.items()):
            return False
    return True


Shape = tuple[str, int]  # (profile, instances on one node)


def shape_average(pods: Sequence[_Pod], span: float) -> dict[Shape, float]:
    """Per pod shape, the time-averaged number of such pods running (each for its run time)."""
    out: dict[Shape, float] = {}
    for p in pods:
        key = (p.profile, p.count)
        out[key] = out.get(key, 0.0) + p.src.duration / max(span, 1.0)
    return out


def shape_peak(pods: Sequence[_Pod]) -> dict[Shape, float]:
    """Per pod shape, the most such pods running at once had each started on arrival."""
    events: dict[Shape, list[tuple[float, int]]] = {}
    for p in pods:
        ev = events.setdefault((p.profile, p.count), [])
        ev += [(p.arrival, 1), (p.arrival + p.src.duration, -1)]
    out: dict[Shape, float] = {}
    for key, ev in events.items():
        now = most = 0
        for _, d in sorted(ev):  # a departure (-1) before an arrival (+1) at the same instant
            now += d
            most = max(most, now)
        out[key] = float(most)
    return out


def solver_static(
    catalog: Catalog, model: GpuModel, s: Settings, want: Mapping[Shape, float], *, fill: bool
) -> list[Layout]:
    """The solver's layouts (``migc compile``, :func:`compiler.solve.solve`) for ``want`` pods per
    shape: one Workload per shape (``need.profiles`` for a MIG pod; ``need.gpus: k`` whole GPUs on
    one node for a pod of ``k`` full-GPU instances, carried as the full profile); ``fill``: the demand
    scaled to fill the fleet's compute slices (``static-average``), else the demand itself, scaled
    down only when it exceeds the fleet (``static-peak``). A GPU the solver leaves without instances
    gets the all-balanced layout (the GPU Operator's default)."""
    full = full_profile(model).name
    slices = {p.name: p.compute_slices for p in model.profiles}
    fits = {k: v for k, v in want.items() if k[1] <= s.gpus_per_node and v > 0}
    total = sum(v * slices[p] * k for (p, k), v in fits.items())
    n = s.nodes * s.gpus_per_node
    scale = n * model.compute_slices / total if total > 0 else 0.0
    if not fill:
        scale = min(scale, 1.0)
    width = len(str(max(s.nodes - 1, 0)))
    names = tuple(f"node-{i:0{width}d}" for i in range(s.nodes))
    pool = NodePool(
        name="sim",
        cluster="sim",
        gpu_product=model.gpu_products[0] if model.gpu_products else model.model,
        gpu_model=model.model,
        gpus_per_node=s.gpus_per_node,
        node_names=names,
        max_unavailable=s.max_unavailable,
        idle_surge=s.idle_surge,
    )
    policy = PartitionPolicy()
    tier = policy.tiers[-1].name
    workloads = tuple(
        Workload(
            name=f"gpu-{k}" if p == full else "mig-" + p.replace(".", "-").replace("+", "-"),
            tenant="sim",
            replicas=max(1, round(v * scale)),
            need=Need(gpus=k) if p == full else Need(profiles=(p,)),
            isolation="exclusive" if p == full else "hardware",
            priority_tier=tier,
            cluster="sim",
        )
        for (p, k), v in sorted(fits.items())
    )
    doc = Policy(
        clusters=(Cluster("sim", (pool,)),),
        tenants=(Tenant("sim", ("sim",), tier),),
        workloads=workloads,
        partition=policy,
        fleet_name="replay",
    )
    out = [balanced_layout(model) for _ in range(n)]
    if not workloads:
        return out
    index = {name: i for i, name in enumerate(names)}
    for res in solve(doc, catalog, None).pools:
        for node in res.nodes:
            for gi, lay in enumerate(node.gpus):
                out[index[node.name] * s.gpus_per_node + gi] = _from_gpu_layout(lay, full, model)
    return out


def _from_gpu_layout(lay: GpuLayout, full: str, model: GpuModel) -> Layout:
    if not lay.mig_enabled:
        return {full: 1}  # a whole GPU serves what one full-GPU instance serves
    counts = dict(lay.profiles)
    return counts if counts else balanced_layout(model)


def average_demand(pods: Sequence[_Pod], span: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for p in pods:
        out[p.profile] = out.get(p.profile, 0.0) + p.count * p.src.duration / max(span, 1.0)
    return out


def _trace_pods(trace: Sequence[TracePod], model: GpuModel, s: Settings) -> list[_Pod]:
    """The trace's pods with their profile, instance count, size class and scaled arrival."""
    size_of = {p.name: f"{p.compute_slices}g" for p in model.profiles}
    pods: list[_Pod] = []
    for tp in trace:
        prof, count = profile_for(tp, model, s.mapping)
        size = size_of[prof] if count == 1 else f"{count}x{size_of[prof]}"
        pods.append(_Pod(tp, tp.arrival / s.time_scale, prof, count, size))
    return pods


# event kinds, in the order they are handled at one instant: (time, seq, kind, payload)
_RECONFIGURED, _DEPARTURE, _DRAIN_DEADLINE, _RETRY, _ARRIVAL, _TICK = 0, 1, 2, 3, 4, 5
_SYNCED, _EVICT, _DRAIN_TIMEOUT = 6, 7, 8  # the config is mounted; a refused eviction's retry; drain failed


_MISFITS = 16  # how many of a pass's pods that did not fit _Run._asks_more compares a pod with


class _Run:
    """The state of one replay: the fleet, the event queue, the pending queues and the gate history."""

    def __init__(
        self,
        pods: list[_Pod],
        model: GpuModel,
        s: Settings,
        baseline: str,
        policy: PartitionPolicy,
        fleet: _Fleet,
        res: Result,
        start: float,
    ) -> None:
        self.pods = pods
        self.model = model
        self.s = s
        self.baseline = baseline
        self.policy = policy
        self.fleet = fleet
        self.res = res
        self.start = start
        self.events: list[tuple[float, int, int, int]] = []
        self.seq = 0
        for i, p in enumerate(pods):
            if s.fits_node(p.src):
                self.events.append((p.arrival, self.seq, _ARRIVAL, i))
                self.seq += 1
        heapq.heapify(self.events)
        self.pending: dict[str, list[tuple[int, float, int]]] = {}  # profile → sorted [(-prio, queued, pod)]
        self.bound: dict[int, list[tuple[int, int]]] = {}  # running pod → [(gpu, count)]
        self.node_of: dict[int, int] = {}  # running pod → node
        self.started: dict[int, float] = {}  # running pod → start of this attempt
        self.dep_seq: dict[int, int] = {}  # running pod → seq of its departure event (stale ones are dropped)
        self.queued_at: dict[int, float] = {}  # pending pod → since when
        self.waited = [0.0] * len(pods)  # time spent pending, over all attempts
        # how long the running attempt waited: status.startTime − creationTimestamp of the pod object
        # (an evicted pod is re-created by its controller, so an earlier attempt's wait is not seen)
        self.last_wait = [0.0] * len(pods)
        self.remaining = [p.src.duration for p in pods]  # run time left (eviction "resume")
        self.ever_ran: set[int] = set()
        self.multi = [i for i, p in enumerate(pods) if p.count > 1 and s.fits_node(p.src)]  # multi-GPU
        self.node_pods: list[set[int]] = [set() for _ in range(s.nodes)]
        self.busy_slices = 0
        # Settings.node_cpu_milli / node_memory_mib: what each node has left of them (None: not modelled)
        self.cpu_left = [s.node_cpu_milli] * s.nodes if s.node_cpu_milli is not None else None
        self.memory_left = [s.node_memory_mib] * s.nodes if s.node_memory_mib is not None else None
        self.resources = bool(s.resources())  # CPU or memory modelled (Settings.resources)
        self.last_t = start
        self.touched_gpus: set[int] = set()
        self.touched_nodes: set[int] = set()
        self.node_last_change: dict[str, dt.datetime] = {}
        self.change_log: list[dt.datetime] = []
        self.applying: dict[int, dict[int, Layout]] = {}  # node → gpu → layout the MIG manager applies
        self.attempts: dict[int, int] = {}  # failed node → failed applies in a row
        self.failed_at: dict[int, float] = {}  # node → when its last apply failed
        # nodes whose MIG manager's last apply failed (nvidia.com/mig.config.state=failed until one
        # succeeds): what is on their GPUs is not known, so the controller drains every pod there
        self.mig_failed: set[int] = set()
        self.retry_seq: dict[int, int] = {}  # failed node → seq of its retry event
        self.rng = random.Random(s.seed)  # --failure-rate draws, in event order: deterministic
        # what the default loop's backoff gate knows (like migc recommend's state file)
        self.failures = 0
        self.last_failure: float | None = None
        self.last_proposal: float | None = None
        self.drain_seq: dict[int, int] = {}  # draining node → seq of its grace deadline
        self.now_demand: Layout = {}  # running + pending instances per profile
        self.history: deque[tuple[float, Layout]] = deque()  # (since, demand) over the window
        self.samples: tuple[h.Sample, ...] = ()  # the default loop's history, as recommend's state file
        self.keep: tuple[dict[h.Key, int], bool] = ({}, False)  # its scaleDownWindow peaks (h.peaks)
        self.interval = float(policy.interval_seconds)
        if baseline == "default":
            self.push(start + self.interval, _TICK, 0)
        self.done = 0
        # per-pod carving (compiler/simulate/carve.py): the instances carved on each GPU
        self.carver = Carver(model) if baseline == "per-pod" else None
        self.carved = [CarvedGpu() for _ in range(s.nodes * s.gpus_per_node)]
        self.placed: dict[int, list[tuple[int, int]]] = {}  # running pod → [(GPU, placement start)]
        # heldOnIdleGpu (Result.held_on_idle): sampled once per interval, between events
        self.next_check = start + self.interval if res.held_on_idle is not None else math.inf
        self.idle_since: dict[int, float] = {}  # pending pod → first sample it could run on an idle node
        self.held: set[int] = set()  # pods counted in Result.held_on_idle
        self.causes = res.wait_causes  # Result.wait_causes, filled by cause_check (None: not sampled)
        self.cause_keys = [(p.profile, p.count, p.size) for p in pods]  # what cause_check groups by
        self.sized: Layout = {}  # what the last evaluation sized for (the idle pass's mix)
        self.decider: _Recommend | None = None  # Settings.decision "recommend"
        # the mig-parted ConfigMap of the latest revision: each node layout's config name (its content,
        # compiler/render/manifests.py ``collect_configs``) and when it was first in it (the start's
        # layouts: always; a name that leaves the ConfigMap starts over when it returns)
        self.mounted: dict[tuple[tuple[tuple[str, int], ...], ...], float] = dict.fromkeys(
            self._node_layouts(fleet.target), -math.inf
        )
        self.sync_seq: dict[int, int] = {}  # node waiting for the mount → seq of its event
        self.evict_seq: dict[int, int] = {}  # pod a PDB protects, eviction refused → seq of its retry
        self.timeout_seq: dict[int, int] = {}  # draining node with refused evictions → its drain timeout
        self.graced: set[int] = set()  # draining nodes past their grace: a pod that blocks them is evicted
        pdb = random.Random(f"pdb:{s.seed}")  # apart from the failure draws: those stay as they were
        self.protected = (
            frozenset(i for i in range(len(pods)) if pdb.random() < s.pdb_fraction)
            if s.pdb_fraction > 0
            else frozenset()
        )
        self.evict_after = eviction_retry(s.pdb_seconds)  # a protected pod goes this long after the grace

    def push(self, t: float, kind: int, payload: int) -> int:
        heapq.heappush(self.events, (t, self.seq, kind, payload))
        self.seq += 1
        return self.seq - 1

    # ---- demand -------------------------------------------------------------------------------------

    def _demand_add(self, prof: str, n: int, now: float) -> None:
        self.now_demand[prof] = self.now_demand.get(prof, 0) + n
        if self.baseline == "default" and self.s.demand == "peak":
            self.history.append((now, dict(self.now_demand)))

    def observe(self, when: dt.datetime) -> h.Window:
        """One evaluation's observation, as a ``migc recommend`` run makes it: the sample (one tenant;
        per profile the running and pending instances), the window over the history kept so far, and
        the history recorded as recommend's state file would keep it (compiler/recommend/history.py)."""
        counts: dict[tuple[str, str], list[int]] = {}
        multi = self.queued_multi()
        for p, n in self.now_demand.items():
            if n > 0:
                m = multi.get(p, (0, 0))
                q = len(self.pending.get(p, ())) - m[1] + m[0]  # each pending pod's instances
                counts[("sim", p)] = [n - q, q]
        current = h.sample(when, counts)
        win = h.window(self.samples, current, self.policy)
        self.keep = h.peaks(self.samples, current, self.policy)
        self.samples = h.record(self.samples, current, self.policy)
        return win

    def queued_multi(self) -> dict[str, tuple[int, int]]:
        """Per profile, the instances and the number of the pending multi-GPU pods (every other
        pending pod asks one instance)."""
        out: dict[str, tuple[int, int]] = {}
        queued, pods = self.queued_at, self.pods
        for i in self.multi:
            if i in queued:
                k, n = out.get(pods[i].profile, (0, 0))
                out[pods[i].profile] = (k + pods[i].count, n + 1)
        return out

    def history_demand(self, win: h.Window, when: dt.datetime, waiting: Sequence[g.PendingPod]) -> Layout:
        """``demand="history"``: what ``migc recommend`` sizes for (compiler/recommend/history.py).

        Per profile, over recommend's window (sample-and-hold over the stabilizationWindow, covered once
        a sample is in force at its start), ``clamp(declared, min, max(max, kept))``, ``kept`` the peak
        over the scaleDownWindow, ``declared`` standing for the latest revision's instances (what the
        Workloads provision), raised for the pods past their max wait; with ``Settings.surplus``
        "last", the surplus over the running + pending now is served only with the slices left after
        every profile's current demand (:func:`compiler.recommend.history.capped`).
        """
        stats = h.stats(win, when, self.policy)
        late: dict[str, int] = {}
        for w in waiting:
            if w.late:
                late[w.profile] = late.get(w.profile, 0) + 1
        cap = self.fleet.declared()
        out: Layout = {}
        peaks, whole = self.keep
        for key in sorted(set(stats) | set(peaks)):
            p = key[1]
            keep = (peaks.get(key, 0), whole)
            n = h.sized(
                cap.get(p, 0), stats.get(key), win.covered, self.now_demand.get(p, 0), late.get(p, 0), keep
            )
            if n > 0:
                out[p] = n
        if self.s.surplus not in SURPLUS_MODELS:
            raise ValueError(f"surplus {self.s.surplus!r}: expected one of {', '.join(SURPLUS_MODELS)}")
        if self.s.surplus in ("last", "busy"):
            gpus = self.s.nodes * self.s.gpus_per_node
            now = {("sim", p): n for p, n in self.now_demand.items() if n > 0}
            room = gpus * max(self.fleet.slices.values(), default=7)
            held: dict[h.Key, int] | None = None
            if self.s.surplus == "busy":  # what the surplus holds on busy nodes beyond current demand
                fleet = self.fleet
                on_busy: dict[str, int] = {}
                for node in range(self.s.nodes):
                    if fleet.state[node] == IDLE and not self.node_pods[node]:
                        continue
                    for gi in fleet.gpus(node):
                        for p, c in fleet.target[gi].items():
                            on_busy[p] = on_busy.get(p, 0) + c
                held = {("sim", p): max(0, c - self.now_demand.get(p, 0)) for p, c in on_busy.items()}
            sized = {("sim", p): n for p, n in out.items()}
            cut = h.capped(sized, now, self.fleet.slices, room, held)
            out = {k[1]: n for k, n in cut.items() if n > 0}
        return out

    def window_demand(self, now: float) -> Layout:
        """Per profile, the peak of running + pending instances over the last stabilizationWindow."""
        if self.s.demand == "now":
            return {p: n for p, n in self.now_demand.items() if n > 0}
        cut = now - (self.s.demand_window_seconds or self.policy.stabilization_seconds)
        hist = self.history
        while len(hist) > 1 and hist[1][0] <= cut:
            hist.popleft()
        out: Layout = {}
        for _, d in hist:
            for p, n in d.items():
                if n > out.get(p, 0):
                    out[p] = n
        return out

    # ---- scheduler ----------------------------------------------------------------------------------

    def room_for(self, i: int, node: int) -> bool:
        """Whether ``node`` has the CPU and memory pod ``i`` asks for left (what is not modelled: yes)."""
        src, cpu, memory = self.pods[i].src, self.cpu_left, self.memory_left
        fits_cpu = cpu is None or src.cpu_milli <= cpu[node]
        return fits_cpu and (memory is None or src.memory_mib <= memory[node])

    def _hold(self, i: int, node: int, sign: int) -> None:
        """Take (``sign`` −1) or give back (+1) the CPU and memory pod ``i`` asks for on ``node``."""
        src, cpu, memory = self.pods[i].src, self.cpu_left, self.memory_left
        if cpu is not None:
            cpu[node] += sign * src.cpu_milli
        if memory is not None:
            memory[node] += sign * src.memory_mib

    def try_bind(self, i: int, now: float) -> bool:
        fleet, p = self.fleet, self.pods[i]
        for node in range(self.s.nodes):
            if fleet.state[node] != IDLE or not self.room_for(i, node):
                continue  # cordoned (nothing binds anywhere on the node), or no CPU or memory left
            free = [
                (gi, fleet.layout[gi].get(p.profile, 0) - fleet.busy[gi].get(p.profile, 0))
                for gi in fleet.gpus(node)
            ]
            if sum(f for _, f in free if f > 0) < p.count:
                continue
            need = p.count
            took: list[tuple[int, int]] = []
            for gi, f in free:
                if need and f > 0:
                    k = min(f, need)
                    took.append((gi, k))
                    need -= k
            self._bind(i, node, took, now)
            return True
        return False

    def _bind(self, i: int, node: int, took: Sequence[tuple[int, int]], now: float) -> None:
        """Pod ``i`` starts on ``node`` holding ``took`` = [(GPU, instances of its profile)]."""
        fleet, p = self.fleet, self.pods[i]
        for gi, k in took:
            fleet.busy[gi][p.profile] = fleet.busy[gi].get(p.profile, 0) + k
        self.bound[i] = list(took)
        self.node_of[i] = node
        self.node_pods[node].add(i)
        self._hold(i, node, -1)
        self.started[i] = now
        self.ever_ran.add(i)
        self.busy_slices += fleet.slices[p.profile] * p.count
        self.last_wait[i] = now - self.queued_at.pop(i)
        self.waited[i] += self.last_wait[i]
        run = p.src.duration if self.s.eviction == "restart" else self.remaining[i]
        self.dep_seq[i] = self.push(now + run, _DEPARTURE, i)

    def carve_bind(self, i: int, now: float) -> bool | None:
        """``per-pod``: create the pod's instance(s) at the first free placement (compiler/simulate/
        carve.py: the DRA driver's DynamicMIG), first fit over nodes and their GPUs; a pod of ``k``
        full-GPU instances needs ``k`` GPUs of one node where the full profile still fits (empty).
        True: bound; False: no node has the placements (whatever CPU and memory it has left); None:
        only nodes short of the pod's CPU or memory have them."""
        fleet, p, carver = self.fleet, self.pods[i], self.carver
        assert carver is not None
        got: bool | None = False
        for node in range(self.s.nodes):
            spots = []
            for gi in fleet.gpus(node):
                start = carver.start(self.carved[gi], p.profile)
                if start is not None:
                    spots.append((gi, start))
                    if len(spots) == p.count:
                        break
            if len(spots) < p.count:
                continue
            if not self.room_for(i, node):
                got = None  # the placements, not the CPU or memory
                continue
            for gi, start in spots:
                carver.carve(self.carved[gi], p.profile, start)
                fleet.layout[gi] = dict(self.carved[gi].instances)
            self.placed[i] = spots
            self.res.instances_carved += len(spots)
            self._bind(i, node, [(gi, 1) for gi, _ in spots], now)
            return True
        return got

    def _schedule_per_pod(self, now: float) -> None:
        """Pending pods in (priority, queued-at) order over every profile, each carved where it fits.

        Nothing is freed during a pass, so once a pod of ``k`` instances of a profile does not fit,
        no pod of that profile with ``k`` or more does in this pass; a profile whose single instance
        does not fit drops out of the pass (a k-way merge of the sorted queues). Where CPU or memory is
        modelled only a pod no node has the placements for counts so (:meth:`carve_bind` False): one
        short of CPU or memory says nothing of a pod behind it asking less of them."""
        profs = list(self.pending)
        heap = [(self.pending[p][0], k, 0) for k, p in enumerate(profs)]
        heapq.heapify(heap)
        failed: dict[str, int] = {}  # profile → fewest instances that did not fit
        # CPU or memory modelled: per profile, the pods that did not fit in this pass (_asks_more)
        misfits: dict[str, list[int]] | None = {} if self.resources else None
        bound: set[int] = set()
        while heap:
            item, k, pos = heapq.heappop(heap)
            prof = profs[k]
            count = self.pods[item[2]].count
            skip = misfits is not None and self._asks_more(item[2], misfits.get(prof, []))
            if count < failed.get(prof, count + 1) and not skip:
                got = self.carve_bind(item[2], now)
                if got:
                    bound.add(item[2])
                elif got is False:
                    failed[prof] = count
                    if count == 1:
                        continue  # nothing of this profile fits any more
                elif misfits is not None:  # placements there, but not the CPU or memory
                    misfits.setdefault(prof, []).append(item[2])
            queue = self.pending[prof]
            if pos + 1 < len(queue):
                heapq.heappush(heap, (queue[pos + 1], k, pos + 1))
        if bound:
            for prof in profs:
                kept = [x for x in self.pending[prof] if x[2] not in bound]
                if kept:
                    self.pending[prof] = kept
                else:
                    del self.pending[prof]

    def free_counts(self) -> Layout:
        out: Layout = {}
        fleet = self.fleet
        for node in range(self.s.nodes):
            if fleet.state[node] != IDLE:
                continue
            for gi in fleet.gpus(node):
                busy = fleet.busy[gi]
                for p, c in fleet.layout[gi].items():
                    f = c - busy.get(p, 0)
                    if f > 0:
                        out[p] = out.get(p, 0) + f
        return out

    def schedule(self, now: float) -> None:
        if not self.pending:
            return
        if self.carver is not None:
            self._schedule_per_pod(now)
            return
        free = self.free_counts()
        for prof in list(self.pending):
            if free.get(prof, 0) <= 0:
                continue
            kept = self._bind_queue(prof, free, now)
            if kept:
                self.pending[prof] = kept
            else:
                del self.pending[prof]

    def _bind_queue(self, prof: str, free: Layout, now: float) -> list[tuple[int, float, int]]:
        """Bind the pods waiting for ``prof`` in queue order (backfilling); the ones left waiting."""
        pods, q = self.pods, self.pending[prof]
        kept: list[tuple[int, float, int]] = []
        modelled = self.resources
        misfits: list[int] = []  # CPU or memory modelled: the pods that did not fit in this pass
        for n, item in enumerate(q):
            i = item[2]
            if free.get(prof, 0) <= 0:
                kept.extend(q[n:])
                break
            if pods[i].count > free.get(prof, 0) or (modelled and self._asks_more(i, misfits)):
                kept.append(item)
            elif self.try_bind(i, now):
                free[prof] -= pods[i].count
            else:
                kept.append(item)
                if modelled:
                    misfits.append(i)
        return kept

    def _asks_more(self, i: int, misfits: list[int]) -> bool:
        """Whether pod ``i`` asks at least the instances, CPU and memory of one of the last pods of its
        profile that did not fit in this scheduling pass: nothing is freed during a pass, so it does
        not fit either (only a shortcut: the pods so skipped would have been tried in vain)."""
        p = self.pods[i]
        for j in misfits[-_MISFITS:]:
            q = self.pods[j]
            more = p.src.cpu_milli >= q.src.cpu_milli and p.src.memory_mib >= q.src.memory_mib
            if more and p.count >= q.count:
                return True
        return False

    def enqueue(self, i: int, now: float) -> None:
        p = self.pods[i]
        bisect.insort(self.pending.setdefault(p.profile, []), (-p.src.priority, now, i))
        self.queued_at[i] = now

    def release(self, i: int) -> int:
        """Free a running pod's instances; its node."""
        pod, fleet = self.pods[i], self.fleet
        for gi, k in self.bound.pop(i):
            fleet.busy[gi][pod.profile] -= k
        if self.carver is not None:  # per-pod: the pod's instances are destroyed with it
            for gi, start in self.placed.pop(i):
                self.carver.destroy(self.carved[gi], pod.profile, start)
                fleet.layout[gi] = dict(self.carved[gi].instances)
                fleet.busy[gi] = {q: c for q, c in fleet.busy[gi].items() if c > 0}
        self.busy_slices -= fleet.slices[pod.profile] * pod.count
        self.dep_seq.pop(i)
        self.started.pop(i)
        self.evict_seq.pop(i, None)
        node = self.node_of.pop(i)
        self.node_pods[node].discard(i)
        self._hold(i, node, +1)
        return node

    def _node_key(self, target: Sequence[Layout], node: int) -> tuple[tuple[tuple[str, int], ...], ...]:
        """A node's layout in ``target``: its mig-parted config's name is its content."""
        per = self.s.gpus_per_node
        return tuple(_key(target[gi]) for gi in range(node * per, (node + 1) * per))

    def _node_layouts(self, target: Sequence[Layout]) -> set[tuple[tuple[tuple[str, int], ...], ...]]:
        """The node layouts of a revision: one mig-parted config each."""
        return {self._node_key(target, n) for n in range(self.s.nodes)}

    def _sync_left(self, node: int, now: float) -> float:
        """Seconds until the node's target config is surely in the MIG manager's mounted copy
        (controller/reconciler/apply.py ``_mounted``: the controller does not label the node before)."""
        key = self._node_key(self.fleet.target, node)
        return max(0.0, self.mounted.get(key, now) + self.s.sync_seconds - now)

    # ---- rollout (controller/reconciler: admission → drain → apply) -----------------------------------

    def apply(
        self, changes: dict[int, Layout], now: float, spare: Mapping[int, Layout] | None = None
    ) -> None:
        """A new revision: the changed GPUs get their new target layout, and the controller acts.

        Nodes in flight are re-targeted as the controller does (``Step.retarget``,
        controller/reconciler/context.py): a draining node keeps draining on the same grace clock
        (drain.py ``draining`` only rewrites the target record) and is re-carved to the newest target
        when drained; a node the MIG manager is applying finishes that apply and then goes through
        Draining (nothing runs on it) to apply the newest target (apply.py ``applying``); a failed
        node restarts at once with the new target, attempts reset (failed.py ``failed``).
        """
        fleet = self.fleet
        self.res.revisions += 1
        self.res.revision_times.append(now)
        nodes = sorted({fleet.node(gi) for gi in changes})
        for gi, lay in changes.items():
            fleet.target[gi] = lay
            fleet.spare[gi] = dict((spare or {}).get(gi, {}))
        # the revision's ConfigMap (MountedConfigs.read: a name no longer in it is forgotten)
        self.mounted = {k: self.mounted.get(k, now) for k in self._node_layouts(fleet.target)}
        for node in nodes:
            self.node_last_change[f"node-{node}"] = EPOCH + dt.timedelta(seconds=now)
            self.change_log.append(EPOCH + dt.timedelta(seconds=now))
            if fleet.state[node] != IDLE:
                self.res.retargets += 1
            if fleet.state[node] == FAILED:
                self.retry_seq.pop(node, None)
                self.attempts[node] = 0
                self._drain(node, now)
            elif self.s.drain_scope == "gpu" and fleet.state[node] == DRAINING:
                if node in self.graced and self._blocking(node):  # past its grace: drain.py evicts now
                    self._evict_all(node, now)
                if not self._blocking(node):
                    self._drained(node, now)  # re-targeted so that no pod left blocks it
            elif fleet.state[node] == DRAINING and node in self.sync_seq and not self._blocking(node):
                self._drained(node, now)  # waiting for the ConfigMap: the new target's name may be in it
        self._admit(now)

    def _admit(self, now: float) -> None:
        """controller/reconciler/admission.py: Idle nodes whose layout differs from the target, fewest
        GPU pods first (then name), while fewer than ``max_unavailable`` nodes are out of Idle (a
        Failed node keeps counting); beyond that, up to ``idle_surge`` more of them that run no GPU
        pod (NodePool.idleSurge: their re-carve evicts nothing)."""
        fleet = self.fleet
        budget, room = self._slots()
        if not room:
            return
        waiting = sorted(
            (len(self.node_pods[n]), n)
            for n in range(self.s.nodes)
            if fleet.state[n] == IDLE and fleet.differs(n)
        )
        admit = waiting[:budget]
        # the surge: the idle ones left (fewest pods first, so an idle node takes a regular slot first)
        admit += [w for w in waiting[budget:] if not w[0]][: room - len(admit)]
        for _, node in admit:
            fleet.state[node] = DRAINING  # cordon (controller/reconciler/admission.py)
            self.res.drains += 1
            if self._blocking(node):
                self.res.drain_waits += 1
                self.drain_seq[node] = self.push(now + self.s.drain_grace_seconds, _DRAIN_DEADLINE, node)
            else:
                self._drained(node, now)

    def _drained(self, node: int, now: float) -> None:
        """No pod blocks the draining node any more (controller/reconciler/drain.py → apply.py
        ``start_apply``): the controller labels it for the MIG manager once the target's config name
        is surely in the MIG manager's mounted copy (``_mounted``; :meth:`_sync_left`), until then it
        stays Draining (cordoned, on its grace clock: a re-target may give it pods to drain again)."""
        wait = self._sync_left(node, now)
        if wait > 0:
            if node not in self.sync_seq:
                self.res.sync_waits += 1
            self.sync_seq[node] = self.push(now + wait, _SYNCED, node)
            return
        self._reconfigure(node, now)

    def _reconfigure(self, node: int, now: float) -> None:
        """The MIG manager re-carves the GPUs whose target differs; none (re-targeted back) is only a
        verification."""
        self._end_drain(node)
        fleet = self.fleet
        fleet.state[node] = RECONFIGURING
        changed = fleet.wanted(node)
        self.applying[node] = changed
        redone = len(fleet.redone(node, changed))
        cost = self.s.drain_seconds + self.s.reconfigure_seconds * redone if changed else 0.0
        self.push(now + cost, _RECONFIGURED, node)

    def _reconfigured(self, node: int, now: float) -> None:
        """The MIG manager is done: success (new layout; again if re-targeted meanwhile, else
        uncordon) or, with ``failure_rate``, failed (controller/reconciler/context.py ``fail``)."""
        fleet, res = self.fleet, self.res
        changed = self.applying.pop(node)
        if changed and self.s.failure_rate > 0 and self.rng.random() < self.s.failure_rate:
            res.failures += 1
            self.mig_failed.add(node)
            if (
                fleet.wanted(node) != changed
            ):  # re-targeted while applying: failed.py restarts with it at once
                self.attempts.pop(node, None)
                self._drain(node, now)
                return
            self._fail(node, now)
            return
        self.mig_failed.discard(node)
        for gi, lay in changed.items():
            fleet.layout[gi] = lay
            if res.non_maximal is not None and not maximal(self.model, _key(lay)):
                res.non_maximal += 1
        if changed:
            res.reconfigurations += 1
            res.gpu_reconfigurations += len(changed)
            self.touched_gpus.update(changed)
            self.touched_nodes.add(node)
        self.attempts.pop(node, None)
        if fleet.differs(node):  # re-targeted while applying: Draining → apply again
            self._drain(node, now)
            return
        fleet.state[node] = IDLE  # uncordon
        self._admit(now)

    def _end_drain(self, node: int) -> None:
        """The node leaves Draining (its apply starts, or it fails): its grace deadline, drain timeout,
        ConfigMap wait and its pods' refused-eviction retries are void."""
        self.drain_seq.pop(node, None)
        self.timeout_seq.pop(node, None)
        self.sync_seq.pop(node, None)
        self.graced.discard(node)
        for i in self.node_pods[node]:
            self.evict_seq.pop(i, None)

    def _fail(self, node: int, now: float) -> None:
        """The node fails (controller/reconciler/context.py ``fail``): it stays cordoned with its layout
        and is retried by itself after failure_backoff × 2^(n−1) while n < max_attempts, then by a human."""
        self.fleet.state[node] = FAILED
        self._end_drain(node)  # a retry drains on a new grace clock
        self.attempts[node] = self.attempts.get(node, 0) + 1
        self.failed_at[node] = now
        if self.attempts[node] < MAX_ATTEMPTS:  # automatic retry after failure_backoff × 2^(n−1)
            wait = FAILURE_BACKOFF_SECONDS * 2 ** (self.attempts[node] - 1)
        else:  # past max_attempts a human must annotate retry=true
            wait = self.s.operator_retry_seconds
        self.retry_seq[node] = self.push(now + wait, _RETRY, node)

    def _retry(self, node: int, now: float) -> None:
        """Failed → Draining again (failed.py: automatic retry, or a human's retry annotation)."""
        if self.attempts.get(node, 0) >= MAX_ATTEMPTS:
            self.attempts[node] = 0  # the retry annotation resets the count
        self._drain(node, now)

    def _blocking(self, node: int) -> list[int]:
        """The pods that block the node's re-carve, by ``Settings.drain_scope``.

        ``"node"``: every GPU pod on the node (controller/pods.py ``blocking``: the device plugin's
        nodes, where nothing in the API says which pod holds which GPU). ``"gpu"``: only the pods
        holding an instance on a GPU whose target differs from its deployed layout: mig-parted's
        apply walks the GPUs one by one and skips a GPU whose MIG devices already equal the config
        (NVIDIA/mig-parted@bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d
        ``cmd/nvidia-mig-parted/apply/config.go:46``, ``:92-95``), so those pods keep running through
        the apply, while a busy GPU that must change makes it fail; on static DRA nodes the
        controller reads which pod's ResourceClaims hold devices on the changing GPUs and drains
        only those (controller/reconciler/drain.py with controller/reconciler/migparted.py
        ``changing_gpus`` and controller/claims.py ``held``, issue 22 item 2's controller side).
        Either way the node stays cordoned (nothing new binds on any of its GPUs) from admission
        until it is Idle again. After a failed apply (until one succeeds) the MIG manager's
        ``nvidia.com/mig.config.state`` is ``failed``: what is on the GPUs is not known, and the
        controller drains every GPU pod (drain.py ``_changing``), under ``"gpu"`` too.
        """
        pods = self.node_pods[node]
        if self.s.drain_scope == "node" or not pods or node in self.mig_failed:
            return sorted(pods)
        changing = self.fleet.redone(node, self.fleet.wanted(node))
        return sorted(i for i in pods if any(gi in changing for gi, _ in self.bound[i]))

    def _drain(self, node: int, now: float) -> None:
        """Draining again (a re-target, a failed node's retry): apply at once when nothing blocks,
        else wait for the blocking pods on the grace clock a draining node already has, or a new one
        (drain.py). Under ``drain_scope="node"`` the node has no GPU pod here (cordoned since its
        admission and drained), so this is the apply."""
        self.fleet.state[node] = DRAINING
        if not self._blocking(node):
            self._drained(node, now)
        elif node not in self.drain_seq:
            self.res.drain_waits += 1
            self.drain_seq[node] = self.push(now + self.s.drain_grace_seconds, _DRAIN_DEADLINE, node)

    def _evict_all(self, node: int, now: float) -> None:
        """Grace over (controller/reconciler/drain.py ``_evict``): evict every pod that still blocks
        the re-carve (:meth:`_blocking`); requeue it. A pod a PDB protects (``Settings.pdb_fraction``)
        is refused (HTTP 429) for ``pdb_seconds``: it runs on, and is evicted at the controller's first
        retry after that (:func:`eviction_retry`), unless the drain times out first (grace +
        ``eviction_timeout``: the node fails, drain.py ``ctx.fail``, with the pod still on it)."""
        timeout = False
        for i in self._blocking(node):
            if i in self.evict_seq:
                continue  # refused already: the controller's retry is due
            if i not in self.protected:
                self._evict(i, now)
                continue
            self.res.evictions_blocked += 1
            at = self.evict_after
            if at is None:
                timeout = True
            else:
                self.evict_seq[i] = self.push(now + at, _EVICT, i)
        if (timeout or self.evict_seq.keys() & self.node_pods[node]) and node not in self.timeout_seq:
            self.timeout_seq[node] = self.push(now + EVICTION_TIMEOUT_SECONDS, _DRAIN_TIMEOUT, node)

    def _evict(self, i: int, now: float) -> None:
        """Evict pod ``i`` (drain.py ``_evict``) and requeue it (its controller re-creates it)."""
        res, pod, whole = self.res, self.pods[i], self.model.compute_slices
        ran = now - self.started[i]
        self.release(i)
        res.evictions += 1
        if self.s.eviction == "restart":  # batch pods without checkpoints start over
            res.lost_gpu_seconds += ran * pod.count * self.fleet.slices[pod.profile] / whole
        self.remaining[i] = max(0.0, self.remaining[i] - ran)
        self.enqueue(i, now)

    # ---- the recommend loop ---------------------------------------------------------------------------

    def _waiting(self, now: float) -> list[g.PendingPod]:
        """The pending pods as the gates see them (none where neither max-wait nor rules need them),
        each with its present attempt's wait, as migc recommend sees it."""
        if self.s.max_wait_seconds is None and not self.policy.rules:
            return []
        mem = {p.name: p.memory_gb for p in self.model.profiles}
        pods = self.pods
        return [
            g.PendingPod(
                pods[i].src.name,
                p,
                now - self.queued_at[i],  # this attempt's wait: what migc recommend sees
                self.s.max_wait_seconds,
                mem.get(p),
            )
            for p, q in self.pending.items()
            for _, _, i in q
        ]

    def _rule_extra(self, waiting: list[g.PendingPod]) -> Layout:
        """The instances the fired rules ask to maximise (counted as extra demand)."""
        fired = g.fired_rules(self.policy.rules, waiting)
        self.res.rules_fired += len(fired)
        extra: Layout = {}
        for r in fired:
            if r.maximize in self.fleet.slices:
                extra[r.maximize] = extra.get(r.maximize, 0) + sum(
                    1 for w in waiting if r.when.profile is None or w.profile == r.when.profile
                )
        return extra

    def node_order(self, now: float) -> list[tuple[int, float]]:
        """Every node with its expected disruption, least first (then fewest GPU pods, then index).

        Expected disruption (:func:`compiler.recommend.disruption.node_cost` without the outage): the
        GPU-time its running GPU pods are expected to lose to an eviction after the drain grace. All of
        them block the drain, also those on GPUs that do not change. Nodes in flight are included: a
        new revision re-targets them as the controller does.
        """
        out: list[tuple[float, int, int]] = []
        for node in range(self.s.nodes):
            running = self.node_pods[node]
            cost = dis.node_cost(
                ((self.fraction(i), now - self.started[i]) for i in running), self.s.drain_grace_seconds, 0.0
            )
            out.append((cost, len(running), node))
        out.sort()
        return [(node, cost) for cost, _, node in out]

    def fraction(self, i: int) -> float:
        """The fraction of one GPU pod ``i`` holds (``k`` for ``k`` whole GPUs)."""
        p = self.pods[i]
        return p.count * self.fleet.slices[p.profile] / self.model.compute_slices

    def big_pods(self, now: float) -> list[BigPod]:
        """The pending multi-GPU pods in queue order, for :func:`cover`; each one's benefit counts
        the wait of its present attempt only (since it was last queued), as migc recommend reads it
        from the re-created pod's creationTimestamp."""
        queued = self.queued_at
        waiting = sorted((-self.pods[i].src.priority, queued[i], i) for i in self.multi if i in queued)
        return [
            BigPod(self.pods[i].count, self.pods[i].profile, self.pods[i].count * (now - t))
            for _, t, i in waiting
        ]

    def _weigh(self, now: float, want: Layout) -> Weigh:
        """The disruption rule (compiler/recommend/disruption.py) for one evaluation at ``now``
        (:class:`_RuleWeigh`)."""
        return _RuleWeigh(self, now, want)

    def _seen_failures(self) -> None:
        """What ``migc recommend`` reads from the Failed nodes (``gates.count_failures``)."""
        failed = [self.failed_at[n] for n in range(self.s.nodes) if self.fleet.state[n] == FAILED]
        self.failures, self.last_failure = g.count_failures(
            self.failures, self.last_failure, failed, self.last_proposal
        )

    def evaluate(self, now: float) -> None:
        """One recommend evaluation: with ``Settings.decision`` "recommend", migc recommend's own
        (:class:`_Recommend`); else the replay's cover (:meth:`_evaluate`; with ``Settings.idle_pass``
        the idle pass first)."""
        if self.decider is not None:
            self.decider.evaluate(now)
            return
        self._evaluate(now)

    def idle_pass(self, now: float) -> bool:
        """Re-carve idle nodes for the pods waiting now, past the hysteresis (issue 22 item 3: an idle
        GPU is never held against a pending pod that fits it after a re-carve for longer than one
        interval plus the reconfiguration time).

        An idle node is Idle with no GPU pod on it: its re-carve evicts nobody and its outage delays
        nobody, so what the disruption rule, the stabilizationWindow and the scaleDownWindow guard
        against (lost work, a demand signal that does not last) is not at stake. The idle nodes are
        covered (:func:`cover`, the same cover) for the demand of the moment — running plus pending
        instances, so capacity the scaleDownWindow keeps for pods that are gone yields to pods that
        wait — and the proposal passes the limits the user sets on how often nodes change: minDwell
        (a node changed less than that ago is not a candidate), the dailyChangeBudget and the
        backoff, as a pod past its max wait overrides the window and the threshold but not those
        (compiler/recommend/gates.py). On by default since bench/RESULTS.md Round 21. It is not held
        by migc recommend's rollout gate (since Round 23): it changes only idle nodes and leaves the
        nodes in flight as they are, their targets counted as capacity — the multi-GPU pods a node in
        flight is carved for included (:meth:`_not_in_flight`) — and then it changes no more nodes
        than the admission starts now (:meth:`_admission_room`: ``max_unavailable + idle_surge``), so
        no node it changed is left waiting, schedulable on its old layout. With no node in flight it
        changes as many as its cover asks; the admission starts them one slot at a time, and a pod
        bound meanwhile to one that waits is drained when its turn comes (as in Round 22).
        """
        res, fleet = self.res, self.fleet
        when = EPOCH + dt.timedelta(seconds=now)
        young = self._young(when)
        idle = [
            (n, 0.0)
            for n in range(self.s.nodes)
            if fleet.state[n] == IDLE and n not in young and self._idle_gpus(n)
        ]
        # beside a rollout, only as many nodes as the admission starts now (:meth:`_admit`): a changed
        # node left waiting stays schedulable on its old layout, and a pod bound to it meanwhile would
        # have to be drained. With nothing in flight the pass is Round 22's (no cap: with the cap at
        # idleSurge 0 heldOnIdleGpu fell on more cells, bench/RESULTS.md Round 23)
        room = self._admission_room() if self._rolling() else self.s.nodes
        if not idle or room <= 0:
            return False
        mix = dict(self.now_demand)
        for p, n in self.sized.items():
            mix[p] = max(n, mix.get(p, 0))
        # drain_scope "gpu": the GPUs with a pod on them are left as they are (their re-carve would
        # evict it); the idle GPUs of a busy node are re-carved like an idle node's, unless one turns
        # MIG on or off: mig-parted then re-carves every GPU of the node (_Fleet.redone) and the pods
        # on its busy GPUs are drained, so that node is left to the gated loop and the cover is run
        # again without it (with whole_gpu "full-instance" no change turns MIG on or off)
        found = self._idle_cover(idle, mix, self._not_in_flight(self.big_pods(now)))
        if found is None:
            return False
        changes, spare = found
        nodes = sorted({fleet.node(gi) for gi in changes})[:room]  # the first ones; the rest wait
        changes = {gi: lay for gi, lay in changes.items() if fleet.node(gi) in nodes}
        spare = {gi: lay for gi, lay in spare.items() if gi in changes}
        if not self._limits_pass(len(nodes), when):
            return False
        res.idle_recarves += 1
        self.apply(changes, now, spare)
        self.last_proposal = now
        return True

    def _idle_cover(
        self, idle: list[tuple[int, float]], mix: Layout, big: list[BigPod]
    ) -> tuple[dict[int, Layout], dict[int, Layout]] | None:
        """The idle pass's cover of ``idle`` (changes, their spare room), run again without the nodes
        whose change would evict a pod (a MIG mode change on a busy node, ``drain_scope="gpu"``);
        None when nothing is left to change."""
        fleet = self.fleet
        while idle:
            frozen = [gi for n, _ in idle for gi in fleet.gpus(n) if any(fleet.busy[gi].values())]
            spare: dict[int, Layout] = {}
            changes, _ = cover(fleet, self.now_demand, idle, big=big, mix=mix, frozen=frozen, spare=spare)
            if not changes:
                return None
            evicting = {n for n in {fleet.node(gi) for gi in changes} if self._evicts(n, changes)}
            if not evicting:
                return changes, spare
            idle = [(n, d) for n, d in idle if n not in evicting]
        return None

    def _limits_pass(self, nodes: int, when: dt.datetime) -> bool:
        """Whether a change of ``nodes`` nodes now passes the dailyChangeBudget and the backoff (the
        limits the idle pass keeps besides minDwell, compiler/recommend/gates.py)."""
        policy = self.policy
        last_failure = None if self.last_failure is None else EPOCH + dt.timedelta(seconds=self.last_failure)
        checks = [
            g.daily_budget(
                nodes,
                g.changes_last_day(self.change_log[-max(policy.daily_change_budget, 1) * 2 :], when),
                policy,
            ),
            g.backoff(self.failures, last_failure, when, policy),
        ]
        return all(c.passed for c in checks)

    def _slots(self) -> tuple[int, int]:
        """The admission's room now (:meth:`_admit`): nodes of any kind under ``max_unavailable``, and
        nodes running no GPU pod under ``max_unavailable + idle_surge``; none while the rollout is
        halted (controller/reconciler/admission.py ``_halted``: a revision that failed on
        max_failures nodes admits none until a new revision; a failed node of an older revision
        restarts with the new one in ``apply``, so every Failed node here failed under the newest)."""
        state = self.fleet.state
        if MAX_FAILURES and sum(1 for st in state if st == FAILED) >= MAX_FAILURES:
            return 0, 0
        out = sum(1 for st in state if st != IDLE)
        return max(0, self.s.max_unavailable - out), max(0, self.s.max_unavailable + self.s.idle_surge - out)

    def _rolling(self) -> bool:
        """Whether a node is in flight (Draining or Reconfiguring; a Failed node is not): what migc
        recommend's rollout gate holds on."""
        return any(st in (DRAINING, RECONFIGURING) for st in self.fleet.state)

    def _admission_room(self) -> int:
        """How many more Idle nodes running no GPU pod :meth:`_admit` would let out of Idle now: its
        room (:meth:`_slots`) less the Idle nodes without a pod already waiting for it (their target
        differs; they go first)."""
        state, differs = self.fleet.state, self.fleet.differs
        waiting = sum(
            1 for n in range(self.s.nodes) if state[n] == IDLE and not self.node_pods[n] and differs(n)
        )
        return max(0, self._slots()[1] - waiting)

    def _not_in_flight(self, big: list[BigPod]) -> list[BigPod]:
        """The multi-GPU pods (queue order) that no node in flight (Draining, Reconfiguring) is being
        re-carved for: the cover counts a node in flight by its target for single instances
        (``_Fleet.declared``) but looks for a multi-GPU pod's whole GPUs only on the nodes it is
        given, so the idle pass, given the idle nodes alone, would carve such a pod a second node.
        A node in flight holds, first come first served, as many pods as its target has whole GPUs
        that will be free (every GPU once drained; with ``drain_scope="gpu"`` the ones no pod keeps)."""
        fleet, whole, drained = self.fleet, self.fleet.whole, self.s.drain_scope == "node"
        left = {
            n: sum(
                1
                for gi in fleet.gpus(n)
                if fleet.target[gi] == whole and (drained or not any(fleet.busy[gi].values()))
            )
            for n in range(self.s.nodes)
            if fleet.state[n] in (DRAINING, RECONFIGURING)
        }
        out = []
        for pod in big:
            node = next((n for n in sorted(left) if left[n] >= pod.count), None)
            if node is None:
                out.append(pod)
            else:
                left[node] -= pod.count
        return out

    def _young(self, when: dt.datetime) -> set[int]:
        """The nodes changed less than minDwell ago (``gates.young``, what migc recommend's minDwell
        gate holds): a limit the user sets, which the idle pass keeps."""
        names = (f"node-{n}" for n in range(self.s.nodes))
        young = g.young(names, self.node_last_change, when, self.policy)
        return {int(n.removeprefix("node-")) for n in young}

    def _evaluate(self, now: float) -> None:
        """One recommend evaluation: the cover of the demand, applied where every gate passes."""
        res, policy, fleet = self.res, self.policy, self.fleet
        res.evaluations += 1
        when = EPOCH + dt.timedelta(seconds=now)
        self._seen_failures()
        # every evaluation observes and records a sample, as each recommend run does (gates or not)
        win = self.observe(when)
        waiting: list[g.PendingPod] | None = None
        sized = None
        if self.s.demand == "history":
            waiting = self._waiting(now)
            sized = self.history_demand(win, when, waiting)
        # migc recommend's rollout gate: no proposal while a node is out of Idle (Failed aside) — but
        # the idle pass, which leaves the nodes in flight as they are (the admission's idleSurge lets
        # its idle nodes out beside them)
        rolling = self._rolling()
        if rolling:
            res.blocked["rollout"] = res.blocked.get("rollout", 0) + 1
            if not self.s.idle_pass:
                return
        if not self.pending:  # nothing waits: nothing is short
            return
        if waiting is None:
            waiting = self._waiting(now)
        extra = {} if rolling else self._rule_extra(waiting)
        d = sized if sized is not None else self.window_demand(now)
        self.sized = d
        if self.s.idle_pass and self.idle_pass(now):  # idle nodes first: their re-carve evicts nobody
            return
        if rolling:
            return
        cur = fleet.capacity()
        want = dict(d)
        for p, n in extra.items():
            want[p] = want.get(p, 0) + n
        order = self.node_order(now)
        weigh = self._weigh(now, want) if self.s.disruption == "expected" else None
        spare: dict[int, Layout] = {}
        changes, new_cap = cover(
            fleet, d, order, extra, weigh, self.big_pods(now), keep=self._gpu_evicts(now), spare=spare
        )
        if not changes:
            return
        gain = g.gain_pct(cur, new_cap, d, fleet.slices)
        urgent = g.urgent_pods(waiting, cur, new_cap)
        nodes = sorted({f"node-{fleet.node(gi)}" for gi in changes})
        last_failure = None if self.last_failure is None else EPOCH + dt.timedelta(seconds=self.last_failure)
        checks = [
            # with the disruption rule the threshold is already applied, node by node, to the
            # GPU-time saved against the GPU-time destroyed; the share of the shortage a change
            # serves is not asked a second time (a large unservable shortage, e.g. pods wanting a
            # whole node, would otherwise block every smaller change)
            g.threshold(gain, policy, urgent)
            if weigh is None
            else g.Gate("threshold", True, "disruption rule"),
            # migc recommend's gates after it, from the same list (compiler/recommend/history.py
            # change_gates): the stabilizationWindow on the recorded history, minDwell,
            # dailyChangeBudget (the log's tail holds every change of the last day the budget can
            # count), backoff
            *h.change_gates(
                win,
                when,
                policy,
                urgent,
                cur,
                new_cap,
                nodes,
                self.node_last_change,
                self.change_log[-max(policy.daily_change_budget, 1) * 2 :],
                (self.failures, last_failure),
            ),
        ]
        failed = [c.name for c in checks if not c.passed]
        for name in failed:
            res.blocked[name] = res.blocked.get(name, 0) + 1
        if not failed:
            self.apply(changes, now, spare)
            self.last_proposal = now

    def held_check(self, now: float) -> None:
        """One sample of ``Result.held_on_idle``, on the state between events: a pending pod could run
        on an idle node (Idle, no GPU pod on it, so a re-carve evicts nobody; the controller drains
        whole nodes) once that node is re-carved, when the node has as many GPUs as the pod asks for.
        It is counted once, when it has been so for longer than one interval plus one node's
        reconfiguration (``sync_seconds`` + ``drain_seconds`` + ``reconfigure_seconds`` × its GPUs). With
        ``drain_scope="gpu"`` a re-carve of a node's idle GPUs (no pod on them) evicts nobody, so the
        pod counts when an Idle node has at least as many idle GPUs as it asks for. Where CPU or memory
        is modelled, only a node with what the pod asks of them left counts."""
        fleet, s = self.fleet, self.s
        idle = [n for n in range(s.nodes) if fleet.state[n] == IDLE]
        # per kind of pod (a whole GPU, MIG off, or MIG instances): on a busy node only the idle GPUs
        # it needs no MIG mode change on count (a mode change re-carves every GPU, _Fleet.redone)
        if s.drain_scope == "gpu":
            most = {w: max((self._idle_gpus(n, w) for n in idle), default=0) for w in (False, True)}
        else:  # the node's pods are all drained: the kind of pod does not matter (one pass, every event)
            most = dict.fromkeys((False, True), max((self._idle_gpus(n) for n in idle), default=0))
        if not any(most.values()):
            self.idle_since.clear()
            return
        # one node's reconfiguration: the ConfigMap's refresh (a new layout's config name), the operand
        # pause and its GPUs re-carved
        limit = self.interval + s.sync_seconds + s.drain_seconds + s.reconfigure_seconds * s.gpus_per_node
        since = self.idle_since
        wholes = fleet.whole

        def room(i: int) -> int:
            whole = {self.pods[i].profile: 1} == wholes
            if not self.resources:
                return most[whole]
            # CPU and memory modelled: only the idle nodes with what the pod asks of them left count
            w = whole if s.drain_scope == "gpu" else None
            return max((self._idle_gpus(n, w) for n in idle if self.room_for(i, n)), default=0)

        for i in list(since):
            if i not in self.queued_at or self.pods[i].count > room(i):
                del since[i]
        for i in self.queued_at:  # every queued pod fits a node (larger ones are never queued)
            if self.pods[i].count > room(i):
                continue  # only under drain_scope "gpu": not enough idle GPUs on one node
            first = since.setdefault(i, now)
            if now - first > limit and i not in self.held:
                self.held.add(i)
                self.res.held_on_idle = (self.res.held_on_idle or 0) + 1

    def _node_room(self, node: int) -> tuple[Layout, int, int, int]:
        """A node's free instances per profile (deployed, not in use), its free whole GPUs (``whole``
        layout, not in use), its empty GPUs (no instance in use) and its compute slices no instance in use
        holds (on every GPU: what re-carving its GPUs could free)."""
        fleet, whole, empty = self.fleet, 0, 0
        free: Layout = {}
        full = next(iter(fleet.whole))
        slices, unused = fleet.slices, self.model.compute_slices * self.s.gpus_per_node
        for gi in fleet.gpus(node):
            busy, lay = fleet.busy[gi], fleet.layout[gi]
            for p, c in lay.items():
                left = c - busy.get(p, 0)
                if left > 0:
                    free[p] = free.get(p, 0) + left
            used = sum(slices[p] * c for p, c in busy.items())
            unused -= used
            if not used:
                empty += 1
                whole += lay == fleet.whole
        free.pop(full, None)
        return free, whole, empty, unused

    def cause_check(self) -> None:
        """One sample of ``Result.wait_causes``: each pending pod's interval of waiting is put down to
        the first of :data:`WAIT_CAUSES` that holds of the fleet now (between events):

        * ``fits``: an Idle node has a free instance of its profile (for a pod of ``k`` whole GPUs,
          ``k`` free whole GPUs): it waits for its turn, or for CPU or memory;
        * ``idleGpus``: an Idle node has as many GPUs whose re-carve evicts nobody as it asks for
          (:meth:`_idle_gpus`, what ``heldOnIdleGpu`` counts): held by the decision's gates;
        * ``busyNode``: an Idle node has as many empty GPUs (no instance in use), but re-carving them
          drains the node's other GPU pods (``drain_scope="node"``) or turns MIG on or off on a busy
          node (``"gpu"``): the disruption rule weighs that eviction;
        * ``cordoned``: a node out of Idle (draining, re-carving, failed) has a free instance, the
          empty GPUs or the compute slices free the pod asks for: the rollout in flight;
        * ``fragmented``: an Idle node has the compute slices the pod asks for free, spread over GPUs
          in use: a departure, or evicting pods from GPUs partly in use;
        * ``noRoom``: no node has even that many slices free: the fleet is short.

        CPU and memory are not looked at here (a pod they hold counts where its GPUs have room)."""
        causes, fleet, s = self.causes, self.fleet, self.s
        if causes is None or not self.queued_at:
            return
        rooms = [self._node_room(n) for n in range(s.nodes)]
        up = [rooms[n] for n in range(s.nodes) if fleet.state[n] == IDLE]
        down = [rooms[n] for n in range(s.nodes) if fleet.state[n] != IDLE]
        idle = {
            w: max((self._idle_gpus(n, w) for n in range(s.nodes) if fleet.state[n] == IDLE), default=0)
            for w in (False, True)
        }
        wholes, slices = fleet.whole, fleet.slices

        def fits(room: tuple[Layout, int, int, int], profile: str, count: int, whole: bool) -> bool:
            return room[1] >= count if whole else room[0].get(profile, 0) >= count

        for (profile, count, size), pods in Counter(map(self.cause_keys.__getitem__, self.queued_at)).items():
            whole, need = {profile: 1} == wholes, slices[profile] * count
            if any(fits(r, profile, count, whole) for r in up):
                cause = "fits"
            elif idle[whole] >= count:
                cause = "idleGpus"
            elif any(r[2] >= count for r in up):
                cause = "busyNode"
            elif any(r[3] >= need for r in down):  # a free instance or empty GPU has its slices free
                cause = "cordoned"
            elif any(r[3] >= need for r in up):
                cause = "fragmented"
            else:
                cause = "noRoom"
            causes.setdefault(size, dict.fromkeys(WAIT_CAUSES, 0.0))[cause] += pods * self.interval

    def _evicts(self, node: int, changes: Mapping[int, Layout]) -> bool:
        """Whether giving ``node``'s GPUs their layouts in ``changes`` re-carves a GPU a pod runs on
        (:meth:`_Fleet.redone`: with ``drain_scope="gpu"`` a MIG mode change re-carves them all)."""
        mine = {gi: lay for gi, lay in changes.items() if self.fleet.node(gi) == node}
        redone = self.fleet.redone(node, mine)
        return any(gi in redone for i in self.node_pods[node] for gi, _ in self.bound[i])

    def _idle_gpus(self, node: int, whole: bool | None = None) -> int:
        """GPUs of ``node`` whose re-carve evicts nobody: all of them on a node without a GPU pod
        (``drain_scope="node"``: the controller drains whole nodes, so only then), or with
        ``drain_scope="gpu"`` those without a pod on them. ``whole``: for a pod asking whole GPUs
        (True) or MIG instances (False), the re-carve must leave the GPU's MIG mode as deployed — on a
        busy node a mode change re-carves every GPU and drains its pods (:meth:`_Fleet.redone`); with
        ``whole_gpu="full-instance"`` there is no mode change, so ``whole`` does not matter."""
        if self.s.drain_scope == "node" or not self.node_pods[node]:
            return 0 if self.node_pods[node] else self.s.gpus_per_node
        fleet = self.fleet
        if self.s.whole_gpu == "full-instance":
            whole = None  # every GPU is in MIG mode: no re-carve turns MIG on or off (_Fleet.redone)
        return sum(
            1
            for gi in fleet.gpus(node)
            if not any(fleet.busy[gi].values())
            and (whole is None or (fleet.layout[gi] == fleet.whole) == whole)
        )

    def _gpu_evicts(self, now: float) -> Callable[[int], float] | None:
        """``drain_scope="gpu"``: the GPU-seconds the pods on a GPU have run (what re-carving it
        evicts, restart model), for :func:`cover`'s choice of which GPU gets which layout; None under
        ``"node"`` (every GPU pod of a changed node is drained anyway)."""
        if self.s.drain_scope != "gpu":
            return None
        whole, slices, pods = self.model.compute_slices, self.fleet.slices, self.pods
        on: dict[int, float] = {}
        for i, took in self.bound.items():
            ran = now - self.started[i]
            for gi, k in took:
                on[gi] = on.get(gi, 0.0) + k * slices[pods[i].profile] / whole * ran
        return lambda gi: on.get(gi, 0.0)

    # ---- events -------------------------------------------------------------------------------------

    def _handle(
        self, t: float, seq: int, kind: int, x: int, progress: Callable[[float], None] | None
    ) -> None:
        """The state change of one event."""
        if kind == _ARRIVAL:
            p = self.pods[x]
            self.enqueue(x, t)
            self._demand_add(p.profile, p.count, t)
            self.done += 1
            if progress and self.done % 500 == 0:
                progress(self.done / len(self.pods))
        elif kind == _DEPARTURE:
            if self.dep_seq.get(x) != seq:
                return  # the pod was evicted before it finished: this departure is void
            pod = self.pods[x]
            node = self.release(x)
            self._demand_add(pod.profile, -pod.count, t)
            if self.fleet.state[node] == DRAINING and not self._blocking(node):
                self._drained(node, t)
        elif kind in (_DRAIN_DEADLINE, _SYNCED, _EVICT, _DRAIN_TIMEOUT):
            self._drain_event(t, seq, kind, x)
        elif kind == _RECONFIGURED:
            self._reconfigured(x, t)
        elif kind == _RETRY and self.retry_seq.get(x) == seq:
            del self.retry_seq[x]
            self._retry(x, t)

    def _drain_event(self, t: float, seq: int, kind: int, x: int) -> None:
        """A draining node's events: its grace is over, its config is mounted, a refused eviction's
        retry (``x`` the pod), its drain timed out; a stale one (its seq replaced) does nothing."""
        if kind == _DRAIN_DEADLINE:
            if self.drain_seq.get(x) == seq:
                self.graced.add(x)
                self._evict_all(x, t)
                if not self._blocking(x):
                    self._drained(x, t)
        elif kind == _SYNCED:
            if self.sync_seq.get(x) == seq and self.fleet.state[x] == DRAINING and not self._blocking(x):
                self._drained(x, t)
        elif kind == _EVICT:
            if self.evict_seq.get(x) == seq:  # still running (release drops it)
                del self.evict_seq[x]
                node = self.node_of[x]
                if self.fleet.state[node] == DRAINING and x in self._blocking(node):
                    self._evict(x, t)
                    if not self._blocking(node):
                        self._drained(node, t)
        elif self.timeout_seq.get(x) == seq and self.fleet.state[x] == DRAINING and self._blocking(x):
            del self.timeout_seq[x]  # _DRAIN_TIMEOUT
            self.res.drain_timeouts += 1
            for i in self.node_pods[x]:  # the failed node's controller stops evicting
                self.evict_seq.pop(i, None)
            self._fail(x, t)

    def _tick(self, t: float, last_activity: float, horizon: float) -> bool:
        """One evaluation interval; False once nothing can change any more."""
        self.evaluate(t)
        self.schedule(t)
        idle = all(e[2] == _TICK for e in self.events)  # no arrival, departure or rollout left
        if idle and (not self.pending or t - last_activity > horizon):
            return False  # nothing can change any more (the gates had every chance to pass)
        self.push(t + self.interval, _TICK, 0)
        return True

    def run(self, progress: Callable[[float], None] | None) -> None:
        """Replay every event; leaves the end time in ``last_t``."""
        policy, events = self.policy, self.events
        last_activity = self.start
        horizon = max(policy.stabilization_seconds, policy.min_dwell_seconds, 86400) + 2 * self.interval
        while events:
            t, seq, kind, x = heapq.heappop(events)
            while self.next_check <= t:  # the state from the last event until t
                self.held_check(self.next_check)
                self.cause_check()
                self.next_check += self.interval
            if kind != _TICK:
                last_activity = t
            self.res.busy_slice_seconds += self.busy_slices * (t - self.last_t)
            self.last_t = t
            self._handle(t, seq, kind, x, progress)
            self.schedule(t)
            if kind == _TICK:
                if not self._tick(t, last_activity, horizon):
                    break
            elif (
                self.baseline == "naive"
                and self.pending
                and not (events and events[0][0] == t)  # once every event of this instant is in
            ):
                # no gate at all, not even migc recommend's rollout gate: a new revision whenever
                # the latest one leaves a pod without capacity; nodes in flight are re-targeted
                spare: dict[int, Layout] = {}
                changes, _ = cover(
                    self.fleet,
                    self.now_demand,
                    self.node_order(t),
                    big=self.big_pods(t),
                    keep=self._gpu_evicts(t),
                    spare=spare,
                )
                if changes:
                    self.apply(changes, t, spare)
                    self.schedule(t)


class _RuleWeigh:
    """The disruption rule for one evaluation of the default loop: the node's cost is
    :func:`compiler.recommend.disruption.change_cost`, the function migc recommend prices a node with,
    under ``Settings.drain_scope`` (``"gpu"``: only the pods holding an instance on a GPU the change
    re-carves are charged); its benefit the waits of the pending pods the change serves (for a
    multi-GPU pod, its own benefit). Each refusal counts in ``Result.blocked["disruption"]``."""

    def __init__(self, run: _Run, now: float, want: Layout) -> None:
        self.run, self.now = run, now
        self.want = dict(want)
        multi = run.queued_multi()
        for prof, (k, _) in multi.items():  # placed by cover's multi-GPU step, with their own benefit
            self.want[prof] = self.want.get(prof, 0) - k
        # profile → pending one-instance pods (queue order); their waits are listed when asked (_waits)
        self.singles: dict[str, int] = {}
        for prof, q in run.pending.items():
            n = len(q) - multi.get(prof, (0, 0))[1]
            if n > 0:
                self.singles[prof] = n
        self.lists: dict[str, list[float]] = {}

    def _waits(self, prof: str) -> list[float]:
        """The waits of the pending one-instance pods of ``prof``, in queue order: each one's present
        attempt (since it was last queued). An evicted pod is re-created, so migc recommend does not
        see the wait before its eviction, and the replay's decision does not count it either (its
        wait statistics do: ``_Run.waited``)."""
        out = self.lists.get(prof)
        if out is None:
            run, now = self.run, self.now
            pods, queued = run.pods, run.queued_at
            out = [now - queued[i] for _, _, i in run.pending[prof] if pods[i].count == 1]
            self.lists[prof] = out
        return out

    def __call__(
        self,
        node: int,
        before: Layout,
        after: Layout,
        changes: Mapping[int, Layout],
        bonus: float,
        mine: Layout,
    ) -> bool:
        run, now, s, want = self.run, self.now, self.run.s, self.want
        whole, slices = run.model.compute_slices, run.fleet.slices
        changed = run.fleet.redone(node, changes)
        benefit = bonus
        for p in self.singles if not bonus else ():
            d, b, a = want.get(p, 0), before.get(p, 0), after.get(p, 0)
            if min(a, max(0, d)) <= min(b, max(0, d)):
                continue  # the change serves none of them (dis.served_waits)
            served = dis.newly_served(self._waits(p), d, b, a)
            if served:
                benefit += slices[p] / whole * served
        pods, bound = run.pods, run.bound
        running = [
            dis.RunningPod(
                ((pods[i].profile, pods[i].count, run.fraction(i)),),
                now - run.started[i],
                run.last_wait[i],
                any(gi in changed for gi, _ in bound[i]),
            )
            for i in run.node_pods[node]
        ]
        price = dis.change_cost(
            running,
            s.gpus_per_node,
            len(changed),
            mine,
            s.drain_grace_seconds,
            s.reconfigure_seconds,
            s.drain_seconds,
            s.outage,
            s.drain_scope,
        )
        cost = price.total
        assert cost is not None  # every running pod of the replay has a start
        ok = dis.worth(benefit, cost, run.policy.reconfiguration_threshold_pct)
        if not ok:
            self.refused(1)
        return ok

    def refused(self, times: int) -> None:
        blocked = self.run.res.blocked
        blocked["disruption"] = blocked.get("disruption", 0) + times


def _recommend_policy(pods: Sequence[_Pod], model: GpuModel, s: Settings, policy: PartitionPolicy) -> Policy:
    """The policy recommend is handed at the start (compiler/simulate/decision.py): a Workload per
    demand class of the trace, with no replicas declared — recommend never sizes down a (tenant,
    profile) it has not observed, so replicas declared for the start's all-balanced layout would
    hold its instances of profiles no pod asks for (yet) for good, against the demand there is."""
    full = full_profile(model).name
    asked = {  # pods of more GPUs than a node has never arrive
        rd.demand_name(p.profile, full, p.count) for p in pods if s.fits_node(p.src)
    }
    return rd.replay_policy(
        model,
        s.nodes,
        s.gpus_per_node,
        s.max_unavailable,
        policy,
        dict.fromkeys(asked, 0),
        dra=s.drain_scope == "gpu",  # static DRA nodes: the drain and recommend's price are per GPU
        idle_surge=s.idle_surge,
    )


def recommend_policy(
    trace: Sequence[TracePod], model: GpuModel, s: Settings, policy: PartitionPolicy
) -> Policy:
    """The policy ``Settings.decision`` "recommend" starts from on ``trace`` (later ones differ only
    in replicas): what ``migc simulate --snapshot-at`` checks it can write before the replay."""
    return _recommend_policy(_trace_pods(trace, model, s), model, s, policy)


@dataclass(frozen=True)
class Snapshot:
    """``migc simulate --snapshot-at``: at the first evaluation ``after_seconds`` or more after the
    replay's start, ``write(directory, policy, current, observation, state, recommendation)`` is
    handed recommend's inputs there and the decision made on them (the command writes them as
    ``migc recommend``'s files, compiler/simulate/snapshot.py)."""

    after_seconds: float
    directory: Path
    write: Callable[[Path, Policy, CurrentState, Observation, State, Recommendation], None]


class _Recommend:
    """``Settings.decision="recommend"``: at every interval, migc recommend's decision
    (:func:`compiler.recommend.engine.recommend`) on the replay's state as recommend observes a
    cluster (compiler/simulate/decision.py); an accepted proposal's replicas become the declared
    policy (what recommend writes to Git) and its node layouts the new revision the controller rolls
    out. The state file recommend returns is kept for the next interval, as the CLI's is."""

    def __init__(self, run: _Run, catalog: Catalog, snapshot: Snapshot | None = None) -> None:
        self.run, self.catalog, self.snapshot = run, catalog, snapshot
        self.full = full_profile(run.model).name
        self.policy = _recommend_policy(run.pods, run.model, run.s, run.policy)
        self.state = State()
        self.solver = rd.memo_solver()
        self.messages: dict[str, set[str]] = {}  # per code, the messages recommend reported so far
        self.found: dict[str, DecisionFinding] = {}
        run.res.decision_diagnostics = self.found

    def observation(self, now: int) -> Observation:
        run, full = self.run, self.full
        pods = run.pods
        phases = [
            (st, run.failed_at.get(n) if st == FAILED else None) for n, st in enumerate(run.fleet.state)
        ]
        slices, held = self._published() if run.s.drain_scope == "gpu" else (None, {})
        running = (
            rd.Running(
                pods[i].src.name,
                node,
                rd.demand_name(pods[i].profile, full, pods[i].count),
                pods[i].count,
                int(run.started[i]),
                int(run.last_wait[i]),
                held.get(i),
            )
            for i, node in run.node_of.items()
        )
        waiting = (
            rd.Waiting(
                pods[i].src.name,
                rd.demand_name(pods[i].profile, full, pods[i].count),
                pods[i].count,
                now - int(queued),
                run.s.max_wait_seconds,
            )
            for i, queued in run.queued_at.items()
        )
        return rd.observation(EPOCH, now, phases, running, waiting, slices, run.s.gpus_per_node)

    def _published(self) -> tuple[list[dict[str, Any]], dict[int, tuple[tuple[str, str, str], ...]]]:
        """``drain_scope="gpu"`` (static DRA nodes): each node's ResourceSlice as the DRA driver
        publishes what its GPUs carry now (:func:`rd.driver_slice`, of the deployed layouts), and the
        devices each running pod holds: on each GPU it runs on, the next unheld devices of its profile,
        pods in index order. A pod that finds too few (it cannot: pods bind to deployed instances) would
        be left unknown, which recommend charges as drained."""
        run, fleet, gpn = self.run, self.run.fleet, self.run.s.gpus_per_node
        slices: list[dict[str, Any]] = []
        free: dict[int, dict[str, list[str]]] = {}
        for node in range(run.s.nodes):
            layouts = [fleet.layout[g] for g in fleet.gpus(node)]
            obj, names = rd.driver_slice(run.model, node, layouts, self.full)
            slices.append(obj)
            for k, per in enumerate(names):
                free[node * gpn + k] = {p: list(v) for p, v in per.items()}
        held: dict[int, tuple[tuple[str, str, str], ...]] = {}
        for i in sorted(run.bound):
            pool = rd.node_name(run.node_of[i])  # the driver's pool is named after the node
            got: list[tuple[str, str, str]] = []
            for gi, k in run.bound[i]:
                left = free[gi].get(run.pods[i].profile, [])
                got += [(rd.DRA_DRIVER, pool, name) for name in left[:k]]
                del left[:k]
            if len(got) == sum(k for _, k in run.bound[i]):
                held[i] = tuple(sorted(got))
        return slices, held

    def evaluate(self, t: float) -> None:
        run, s, res = self.run, self.run.s, self.run.res
        res.evaluations += 1
        now = int(t)
        snap = self.snapshot
        here = snap is not None and res.snapshot is None and t >= run.start + snap.after_seconds
        current = rd.current_state(run.fleet.target, s.gpus_per_node, self.full)
        obs = self.observation(now)
        when = EPOCH + dt.timedelta(seconds=now)

        def evaluation(lazy: bool) -> Recommendation:
            return recommend(
                self.policy,
                self.catalog,
                current,
                obs,
                self.state,
                when,
                disruption=s.disruption,
                drain_grace_seconds=s.drain_grace_seconds,
                reconfigure_seconds=s.reconfigure_seconds,
                drain_seconds=s.drain_seconds,
                solver=self.solver,
                lazy=lazy,
            )

        # under unmetDemand: error the solver's shortfall (MIGC201, MIGC202) is an error, at which
        # migc recommend exits 1 and writes nothing: the lazy evaluation skips the solve that would
        # report it, so there every evaluation is a full one
        strict = self.policy.partition.unmet_demand == "error"
        rec = evaluation(not strict)
        if here and snap is not None:
            # the snapshot's evidence is the full evaluation's, as the CLI prints it; the replay goes
            # on from the lazy one (the same decision and state), so that its results (blockedBy
            # counts the gates of the evaluation it runs) are those of a replay without a snapshot
            full = evaluation(False)
            snap.write(snap.directory, self.policy, current, obs, self.state, full)
            res.snapshot = {
                "at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "afterSeconds": now - int(run.start),
                "directory": str(snap.directory),
                "proposed": full.proposed_change and not has_errors(full.diagnostics),
            }
        for code in sorted({d.code for d in rec.diagnostics}):
            said = self.messages.setdefault(code, set())
            said.update(d.message for d in rec.diagnostics if d.code == code)
            seen = self.found.get(code)
            first = seen.first if seen else next(d for d in rec.diagnostics if d.code == code)
            self.found[code] = DecisionFinding(first, (seen.evaluations if seen else 0) + 1, len(said))
        if has_errors(rec.diagnostics):  # migc recommend exits 1: no proposal, the state file as it was
            return
        self.state = rec.state
        for gate in rec.gates:
            if not gate.passed:
                res.blocked[gate.name] = res.blocked.get(gate.name, 0) + 1
        res.rules_fired += len(rec.rules)
        if not rec.proposed_change:
            return
        new = {r.workload: r.new for r in rec.replicas}
        self.policy = replace(
            self.policy,
            workloads=tuple(replace(w, replicas=new.get(w.name, w.replicas)) for w in self.policy.workloads),
        )
        fleet = run.fleet
        changes = {
            gi: lay
            for gi, lay in rd.layouts_of(rec.targets, s.gpus_per_node, self.full).items()
            if lay != fleet.target[gi]
        }
        if changes:
            run.apply(changes, t)
            run.last_proposal = t


def whole_gpu_conflicts(
    whole_gpu: str, drain_scope: str, decision: str, baseline: str | None = None
) -> list[str]:
    """Why ``Settings.whole_gpu`` would be accepted and ignored with these settings (none: it is
    honoured), for the replay, ``migc simulate`` and the bench drivers alike. ``full-instance``
    changes which GPUs a change of the loop's fleet re-carves, which only a per-GPU drain sees (under
    drain scope "node" every pod of a changed node is drained whatever the MIG mode); recommend's
    inputs (compiler/simulate/decision.py) model a whole GPU as MIG disabled; and only naive and
    default re-carve GPUs (``baseline``, where one is chosen; "all" holds them)."""
    if whole_gpu == "mig-disabled":
        return []
    return [
        reason
        for reason, given in (
            (
                "only with --drain-scope gpu (under node every GPU pod of a changed node is drained, "
                "whatever the GPUs' MIG mode)",
                drain_scope != "gpu",
            ),
            (
                "not with --decision recommend (recommend's inputs model a whole GPU as one with MIG "
                "disabled)",
                decision != "cover",
            ),
            (
                f"not with --baseline {baseline} (only naive and default re-carve GPUs)",
                baseline is not None and baseline not in (*RECARVING, "all"),
            ),
        )
        if given
    ]


def _check(s: Settings) -> None:
    """Refuse settings no replay can run (the CLI's choices and ranges keep a user from them)."""
    if s.drain_scope not in DRAIN_SCOPES:
        raise ValueError(f"drain scope {s.drain_scope!r}: expected one of {', '.join(DRAIN_SCOPES)}")
    if s.layouts not in LAYOUT_RULES:
        raise ValueError(f"layouts {s.layouts!r}: expected one of {', '.join(LAYOUT_RULES)}")
    if s.decision not in DECISIONS:
        raise ValueError(f"decision {s.decision!r}: expected one of {', '.join(DECISIONS)}")
    if s.whole_gpu not in WHOLE_GPU_MODES:
        raise ValueError(f"whole GPU {s.whole_gpu!r}: expected one of {', '.join(WHOLE_GPU_MODES)}")
    conflicts = whole_gpu_conflicts(s.whole_gpu, s.drain_scope, s.decision)
    if conflicts:
        raise ValueError(f"whole GPU {s.whole_gpu!r}: {'; '.join(conflicts)}")
    if s.idle_surge < 0 or s.max_unavailable < 1:
        raise ValueError(f"max_unavailable {s.max_unavailable}, idle_surge {s.idle_surge}: expected ≥ 1, ≥ 0")


def simulate(
    trace: Sequence[TracePod],
    model: GpuModel,
    s: Settings,
    baseline: str,
    policy: PartitionPolicy,
    progress: Callable[[float], None] | None = None,
    catalog: Catalog | None = None,
    snapshot: Snapshot | None = None,
) -> Result:
    """Replay ``trace`` under ``baseline`` (module docstring); ``catalog`` for the solver of
    ``static-peak``/``static-average`` and recommend's decision (default: the shipped catalog);
    ``snapshot``: recommend's inputs at one instant (``Settings.decision`` "recommend" only)."""
    _check(s)
    pods = _trace_pods(trace, model, s)
    start = min((p.arrival for p in pods), default=0.0)
    end_arrival = max((p.arrival for p in pods), default=0.0)
    span = max(end_arrival - start, 1.0)
    if baseline == "mig-off":  # every pod on whole GPUs (a fraction takes a whole one); class kept
        full = full_profile(model).name
        pods = [replace(p, profile=full, count=max(1, p.count)) for p in pods]
    layouts: list[Layout] | None = None
    if baseline == "static-optimal":
        layouts = optimal_static(model, s, average_demand(pods, span))
    elif baseline in ("static-peak", "static-average"):
        want = shape_peak(pods) if baseline == "static-peak" else shape_average(pods, span)
        layouts = solver_static(catalog or load_catalog(), model, s, want, fill=baseline == "static-average")
    if layouts is not None:
        fleet = _Fleet(model, s, {})
        fleet.layout = layouts
        fleet.target = [dict(x) for x in layouts]
    elif baseline == "mig-off":
        fleet = _Fleet(model, s, {full_profile(model).name: 1})
    elif baseline == "per-pod":
        fleet = _Fleet(model, s, {})  # MIG on, no instance: each pod's is created when it starts
    else:
        fleet = _Fleet(model, s, balanced_layout(model))
    res = Result(baseline, hours=0.0, total_slices=s.nodes * s.gpus_per_node * model.compute_slices)
    if baseline in RECARVING:
        res.held_on_idle = 0
        res.non_maximal = 0
        res.wait_causes = {}
    run = _Run(pods, model, s, baseline, policy, fleet, res, start)
    if baseline == "default" and s.decision == "recommend":
        run.decider = _Recommend(run, catalog or load_catalog(), snapshot)
    run.run(progress)
    end = run.last_t
    res.hours = max(end - start, 1.0) / 3600
    res.trace_hours = span / 3600
    for i, p in enumerate(pods):
        if not s.fits_node(p.src):  # never fits a node: censored from its arrival
            res.waits.setdefault(p.size, []).append((max(0.0, end - p.arrival), True))
        elif i in run.queued_at:  # still pending: censored at the end of the replay
            res.waits.setdefault(p.size, []).append((run.waited[i] + end - run.queued_at[i], True))
        else:
            res.waits.setdefault(p.size, []).append((run.waited[i], False))
    res.never_served = sum(1 for i in range(len(pods)) if i not in run.ever_ran)
    res.gpus_touched = len(run.touched_gpus)
    res.nodes_touched = len(run.touched_nodes)
    return res
