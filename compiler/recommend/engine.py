"""``recommend``: observed demand → Workload replicas → the real solver → gates → a proposal (pure).

How observed pods become a policy change (documented in docs/recommend.md):

1. Every running or pending pod asking for ``nvidia.com/mig-<profile>`` (or whole ``nvidia.com/gpu``)
   belongs to the Tenant listing its namespace; its demand is counted per (tenant, profile).
2. Each (tenant, profile) maps to the tenant's Workloads whose ``need`` names that profile (first
   in the preference list counts; whole-GPU workloads count GPUs ÷ ``need.gpus``). The wanted replicas
   of that group equal the observed instances; the difference goes to the group's first Workload by
   name (never below 0). Demand no Workload describes is reported (MIGC424), never invented.
3. A rule whose ``when`` holds on the pending pods asks for headroom for its ``prefer.maximize``
   profile: each tenant's Workloads of that profile are provisioned for the sized instances *plus*
   the tenant's pending pods that matched the rule in every sample of the window (the least of them;
   none before the window is covered), so more instances of that profile in the proposal.
   A rule with ``pools`` gives its headroom only to a Workload whose replicas can land on nothing but
   those pools (its ``pools`` are among the rule's, or every pool of its cluster that has the profile
   is), so the extra instances are carved on the listed pools' GPUs; a tenant with no such Workload
   gets none (MIGC428, and the evidence says so).
4. Sizing follows the demand history over the stabilization window
   (:mod:`compiler.recommend.history`): each (tenant, profile) is sized for ``clamp(declared, min,
   max)`` of its running + pending instances over the window once the window is covered (else
   ``declared``), raised to ``min(now, min + u)`` when ``u`` of its pending pods are past their max
   wait. Bursts and dips shorter than the window change nothing.
5. The proposed policy is solved with the deployed layout as the starting point (the solver's own
   change-minimising objective); gain and gates (:mod:`compiler.recommend.gates`) decide.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from compiler.catalog import Catalog
from compiler.diagnostics import Diagnostic, make
from compiler.formatting import duration, layout_counts
from compiler.model import WHOLE_GPU, CurrentState, GpuLayout, NodeLayout, Policy, Rule, Workload
from compiler.observe import Observation, ObservedPod
from compiler.observe.dra import DRIVER as DRA_DRIVER
from compiler.observe.model import ObservedNode, profile_of
from compiler.recommend import disruption as dis
from compiler.recommend import gates as g
from compiler.recommend import history as h
from compiler.recommend.state import State, change_horizon
from compiler.solve import solve
from compiler.solve.demand import sized_resource
from compiler.solve.result import NodeResult, Solution

if TYPE_CHECKING:
    from controller.dra import DeviceGpus


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


@dataclass(frozen=True)
class NodeDisruption:
    """What re-carving one node is expected to destroy (:mod:`compiler.recommend.disruption`)."""

    node: str
    gpus: int  # GPUs on the node (all out while it is re-carved)
    changed_gpus: int
    running: int  # GPU pods running on it: every one blocks the drain
    loss: float | None  # GPU-seconds its running pods are expected to lose; None: a start is unknown
    outage: float  # GPU-seconds the node is out
    # GPU-seconds of further wait expected for the running pods the change leaves without an instance
    # (dis.displaced; a pod without startTime or creationTimestamp counts 0: a lower bound)
    displaced: float = 0.0
    # which pods the change drains (dis.DRAIN_SCOPES): "node", every running GPU pod; "gpu" (static DRA
    # pools), those holding a device on a changing GPU or whose GPU is not known: ``drained`` of them
    scope: str = "node"
    drained: int | None = None  # None: all ``running`` ones

    @property
    def cost(self) -> float | None:
        return None if self.loss is None else self.loss + self.outage + self.displaced

    def to_dict(self) -> dict[str, object]:
        return {
            "node": self.node,
            "gpus": self.gpus,
            "changedGpus": self.changed_gpus,
            "running": self.running,
            "scope": self.scope,
            "drained": self.running if self.drained is None else self.drained,
            "loss": _rounded(self.loss),
            "outage": round(self.outage, 3),
            "displaced": round(self.displaced, 3),
            "cost": _rounded(self.cost),
        }


def total_cost(nodes: Sequence[NodeDisruption]) -> float | None:
    """Σ of the nodes' costs; None when one is unknown."""
    costs = [n.cost for n in nodes]
    return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


@dataclass(frozen=True)
class TenantDemand:
    """The instances a tenant's pods ask for of one profile now."""

    tenant: str
    profile: str
    running: int
    pending: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)  # the JSON keys are the field names


@dataclass(frozen=True)
class WindowDemand:
    """One (tenant, profile) over the stabilization window, and what it is sized for."""

    tenant: str
    profile: str
    running: int  # now
    pending: int  # now
    samples: int
    low: int
    mean: float  # weighted by time
    high: int
    sized_for: int

    def to_dict(self) -> dict[str, object]:
        return {
            "tenant": self.tenant,
            "profile": self.profile,
            "running": self.running,
            "pending": self.pending,
            "samples": self.samples,
            "min": self.low,
            "mean": round(self.mean, 3),
            "max": self.high,
            "sizedFor": self.sized_for,
        }


@dataclass(frozen=True)
class Kept:
    """The most running + pending instances of a (tenant, profile) at any sample of the scaleDownWindow:
    its capacity is shrunk no lower."""

    tenant: str
    profile: str
    instances: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)  # the JSON keys are the field names


@dataclass(frozen=True)
class RuleEffect:
    """What a fired rule did for one tenant: ``replicas`` more on ``workload`` ("" and 0: no Workload in
    the rule's pools could take them, MIGC428)."""

    rule: str
    tenant: str
    profile: str
    workload: str
    replicas: int

    def to_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "tenant": self.tenant,
            "profile": self.profile,
            "workload": self.workload or None,
            "replicas": self.replicas,
        }


@dataclass(frozen=True)
class ReplicaChange:
    """A Workload whose replicas the proposal changes."""

    workload: str
    old: int
    new: int

    def to_dict(self) -> dict[str, object]:
        return {"workload": self.workload, "from": self.old, "to": self.new}


@dataclass(frozen=True)
class NodeChange:
    """One node of the plan of the change: GPUs reconfigured, deployed and proposed layout (as text)."""

    node: str
    gpus: int
    deployed: str
    proposed: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)  # the JSON keys are the field names


@dataclass(frozen=True)
class Recommendation:
    """One evaluation: the demand, the proposal, its gates and the state to write back. Each row is a
    frozen record with named fields; :meth:`to_dict` is the JSON evidence, and
    :mod:`compiler.recommend.report` holds its text, markdown and JSON forms (``FORMATS``)."""

    now: dt.datetime
    demand: tuple[TenantDemand, ...]
    current: tuple[tuple[str, int], ...]  # profile → instances deployed
    proposed: tuple[tuple[str, int], ...]  # profile → instances after the change
    replicas: tuple[ReplicaChange, ...]  # workloads that change
    nodes: tuple[str, ...]  # nodes whose layout changes
    gain: float
    gates: tuple[g.Gate, ...]
    rules: tuple[str, ...]  # rules that fired
    urgent: tuple[str, ...]
    state: State  # the state to write back
    diagnostics: tuple[Diagnostic, ...]
    rule_effects: tuple[RuleEffect, ...] = ()  # what each fired rule did
    node_plan: tuple[NodeChange, ...] = ()  # the plan of the change
    since: dt.datetime | None = None  # the demand has been watched without a gap since
    window: tuple[WindowDemand, ...] = ()  # per (tenant, profile) over the window
    covered: bool = False  # the history covers the whole stabilization window
    window_seconds: int = 0  # the stabilizationWindow
    # per (tenant, profile) the most running + pending at any sample of the scaleDownWindow: capacity
    # is shrunk no lower (until the history covers that window, no lower than declared either)
    keep: tuple[Kept, ...] = ()
    keep_covered: bool = False
    keep_seconds: int = 0  # the longer of scaleDownWindow and stabilizationWindow
    # the disruption rule ("expected"; "off": the gain threshold instead): the pending GPU-seconds the
    # proposal avoids, the pending instances it serves, and each changed node's expected cost
    disruption: str = "off"
    benefit: float = 0.0
    served_pending: int = 0
    node_costs: tuple[NodeDisruption, ...] = ()
    drain_grace_seconds: float = dis.DRAIN_GRACE_SECONDS
    reconfigure_seconds: float = dis.RECONFIGURE_SECONDS
    drain_seconds: float = dis.DRAIN_SECONDS  # D: the node's fixed pause per change (operands paused)
    # the changed nodes' proposed GPU layouts by node name (what `migc compile` renders from the
    # proposed replicas against the deployed layout; migc simulate applies them). Not in the JSON
    # evidence: `plan` says the same per node in words
    targets: tuple[tuple[str, NodeLayout], ...] = ()

    @property
    def cost(self) -> float | None:
        """Σ of the changed nodes' costs (None when one is unknown)."""
        return total_cost(self.node_costs)

    @property
    def proposed_change(self) -> bool:
        return bool(self.replicas) and g.all_passed(self.gates)

    def to_dict(self) -> dict[str, object]:
        """The evidence as plain data (``migc recommend -o json``; neither the state nor the diagnostics)."""
        return {
            "proposed": self.proposed_change,
            "gain": round(self.gain, 3),
            "demand": [d.to_dict() for d in self.demand],
            "window": {
                "seconds": self.window_seconds,
                "covered": self.covered,
                "since": self.since.strftime("%Y-%m-%dT%H:%M:%SZ") if self.since else None,
                "demand": [w.to_dict() for w in self.window],
            },
            "scaleDownWindow": {
                "seconds": self.keep_seconds,
                "covered": self.keep_covered,
                "kept": [k.to_dict() for k in self.keep],
            },
            "capacity": {"current": dict(self.current), "proposed": dict(self.proposed)},
            "gates": [
                {"name": x.name, "passed": x.passed, "overridden": x.overridden, "why": x.why}
                for x in self.gates
            ],
            "rules": list(self.rules),
            "ruleEffects": [e.to_dict() for e in self.rule_effects],
            "urgent": list(self.urgent),
            "replicas": [r.to_dict() for r in self.replicas],
            "nodes": list(self.nodes),
            "plan": [n.to_dict() for n in self.node_plan],
            "disruption": {
                "model": self.disruption,
                "benefit": round(self.benefit, 3),
                "servedPending": self.served_pending,
                "cost": _rounded(self.cost),
                "drainGraceSeconds": self.drain_grace_seconds,
                "reconfigureSeconds": self.reconfigure_seconds,
                "drainSeconds": self.drain_seconds,
                "nodes": [d.to_dict() for d in self.node_costs],
            },
        }


def _tenant_of(policy: Policy) -> dict[str, str]:
    return {ns: t.name for t in policy.tenants for ns in t.namespaces}


def _slices(catalog: Catalog) -> dict[str, int]:
    out: dict[str, int] = {"gpu": 7}
    for model in catalog.models:
        for p in model.profiles:
            out.setdefault(p.name, p.compute_slices)
    return out


def observed_demand(
    policy: Policy, obs: Observation
) -> tuple[dict[tuple[str, str], list[int]], list[g.PendingPod], list[Diagnostic]]:
    """(tenant, profile) → [running, pending] instances; the pending pods; MIGC424 for unowned pods."""
    owner = _tenant_of(policy)
    demand: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    pending: list[g.PendingPod] = []
    diags: list[Diagnostic] = []
    unowned: set[str] = set()
    for pod in obs.pods:
        tenant = owner.get(pod.namespace)
        if tenant is None:
            unowned.add(pod.namespace)
            continue
        for resource, count in pod.requests:
            profile = profile_of(resource) or "gpu"
            demand[(tenant, profile)][1 if pod.pending else 0] += count
            if pod.pending:
                pending.append(
                    g.PendingPod(
                        pod.key, profile, pod.pending_seconds or 0.0, pod.max_wait_seconds, _memory(profile)
                    )
                )
    for ns in sorted(unowned):
        diags.append(make("MIGC424", f"GPU pods in namespace {ns}, which no Tenant lists, are not counted"))
    return dict(demand), pending, diags


def _memory(profile: str) -> float | None:
    try:
        return float(profile.split(".")[1].split("gb")[0])
    except (IndexError, ValueError):
        return None


def _matches(policy: Policy, catalog: Catalog, w: Workload, profile: str) -> bool:
    """Whether ``w`` is sized by pods asking for ``profile``: every ``need`` form compile accepts
    counts, resolved as compile resolves it (``compiler.solve.demand.sized_resource``)."""
    if w.need.kind == "hami":
        return False  # HAMi shares are nvidia.com/gpu slices of HAMi's own accounting, not sized here
    cluster = next((c for c in policy.clusters if c.name == w.cluster), None)
    if cluster is None:
        return False
    return sized_resource(w, cluster, catalog) == profile


def pools_serving(policy: Policy, catalog: Catalog, cluster: str, profile: str) -> frozenset[str]:
    """Names of the MIG pools of ``cluster`` whose GPU model has ``profile`` (``gpu``: every pool)."""
    out: set[str] = set()
    for c in policy.clusters:
        if c.name != cluster:
            continue
        for pool in c.pools:
            model = catalog.get(pool.gpu_model)
            if profile == "gpu" or (pool.mig and model is not None and model.profile(profile) is not None):
                out.add(pool.name)
    return frozenset(out)


def rule_target(policy: Policy, catalog: Catalog, group: Sequence[Workload], rule: Rule) -> Workload | None:
    """The Workload of ``group`` (sorted by name) that takes ``rule``'s headroom, or None.

    Without ``pools`` the first one. With ``pools``, the first whose replicas can only be placed on
    those pools: its own ``pools`` (or, when it has none, every pool of its cluster that has the
    profile) are all named by the rule.
    """
    if not rule.pools:
        return group[0] if group else None
    allowed = set(rule.pools)
    for w in group:
        where = set(w.pools) if w.pools else set(pools_serving(policy, catalog, w.cluster, rule.maximize))
        if where and where <= allowed:
            return w
    return None


def wanted_replicas(
    policy: Policy,
    catalog: Catalog,
    demand: dict[tuple[str, str], list[int]],
    headroom: Sequence[tuple[Rule, Mapping[str, int]]] = (),
    size: Callable[[tuple[str, str], int], int] | None = None,
) -> tuple[dict[str, int], list[Diagnostic], list[RuleEffect]]:
    """workload name → replicas wanted (only workloads that change); MIGC424/MIGC428; rule effects.

    ``size(key, declared)``: the instances a (tenant, profile) is sized for, given the instances its
    Workloads declare now (default: its running + pending instances in ``demand``); keys it is asked
    about are those of ``demand`` plus the rules' (``size`` may know more keys: pass them in
    ``demand`` with zero counts).

    ``headroom``: each fired rule with, per tenant, the pending pods of that tenant it matched; that
    many instances of the rule's ``prefer.maximize`` profile are added for the tenant, on the Workload
    :func:`rule_target` picks.
    """
    out: dict[str, int] = {}
    diags: list[Diagnostic] = []
    effects: list[RuleEffect] = []
    extra_keys = {(t, r.maximize) for r, per in headroom for t, n in per.items() if n > 0}
    for tenant, profile in sorted(set(demand) | extra_keys):
        group = sorted(
            (w for w in policy.workloads if w.tenant == tenant and _matches(policy, catalog, w, profile)),
            key=lambda w: w.name,
        )
        new = {w.name: w.replicas for w in group}
        if (tenant, profile) in demand:
            running, pending = demand[(tenant, profile)]
            if group:
                new[group[0].name] = _sized_replicas(group, (tenant, profile), running + pending, size)
            elif running + pending > 0:  # not when seen earlier in the window only
                diags.append(
                    make(
                        "MIGC424",
                        f"tenant {tenant}: {running + pending} x {profile} observed, but no Workload "
                        "of the tenant asks for it",
                    )
                )
        for rule, per_tenant in headroom:
            count = per_tenant.get(tenant, 0)
            if rule.maximize != profile or count <= 0:
                continue
            effect, missing = _rule_headroom(policy, catalog, group, rule, tenant, count)
            effects.append(effect)
            if missing is not None:
                diags.append(missing)
            else:
                new[effect.workload] += count
        out.update({w.name: new[w.name] for w in group if new[w.name] != w.replicas})
    return out, diags, effects


def _sized_replicas(
    group: Sequence[Workload],
    key: tuple[str, str],
    observed: int,
    size: Callable[[tuple[str, str], int], int] | None,
) -> int:
    """The replicas of ``group``'s first Workload (by name) once the group is sized for its demand:
    the difference between the instances wanted (``observed`` running + pending, or what ``size``
    says) and those declared goes to it, never below 0; whole-GPU Workloads count GPUs ÷ need.gpus."""
    first = group[0]
    per = max(first.need.gpus if key[1] == "gpu" else 1, 1)
    declared = sum(w.replicas for w in group)
    wanted = observed if size is None else size(key, declared * per)
    return max(0, first.replicas + -(-wanted // per) - declared)


def _rule_headroom(
    policy: Policy, catalog: Catalog, group: Sequence[Workload], rule: Rule, tenant: str, count: int
) -> tuple[RuleEffect, Diagnostic | None]:
    """What ``rule``'s headroom of ``count`` instances does for ``tenant``: the Workload that takes
    it (:func:`rule_target`), or none and MIGC428."""
    profile = rule.maximize
    target = rule_target(policy, catalog, group, rule)
    if target is not None:
        return RuleEffect(rule.name, tenant, profile, target.name, count), None
    which = f"asking for {profile} is confined to pools {', '.join(rule.pools)}"
    return RuleEffect(rule.name, tenant, profile, "", 0), make(
        "MIGC428",
        f"rule {rule.name}: no Workload of tenant {tenant} "
        f"{which if group else f'asks for {profile}'}, "
        f"so its headroom of {count} x {profile} is not proposed",
    )


def capacity(solution: Solution, which: str) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for pool in solution.pools:
        for node in pool.nodes:
            for name, n in layout_counts([node.gpus if which == "target" else node.current]).items():
                out[name] += n
    return dict(sorted(out.items()))


def layout_text(layout: Sequence[GpuLayout] | None) -> str:
    """A node's instances summed over its GPUs: ``7 x 1g.10gb, 1 x 3g.40gb, 1 whole GPU``."""
    if layout is None:
        return "nothing deployed"
    counts = layout_counts([layout])
    whole = counts.pop(WHOLE_GPU, 0)
    parts = [f"{n} x {name}" for name, n in sorted(counts.items())]
    if whole:
        parts.append(f"{whole} whole GPU{'s' if whole > 1 else ''}")
    return ", ".join(parts) or "no instances"


def pending_waits(policy: Policy, obs: Observation) -> dict[str, list[float]]:
    """profile → the waits of the pending instances of the Tenants' pods, longest first (queue order)."""
    owner = _tenant_of(policy)
    out: dict[str, list[float]] = defaultdict(list)
    for pod in obs.pods:
        if not pod.pending or pod.namespace not in owner:
            continue
        for resource, count in pod.requests:
            out[profile_of(resource) or "gpu"] += [pod.pending_seconds or 0.0] * count
    return {p: sorted(w, reverse=True) for p, w in sorted(out.items())}


def held(pod: ObservedPod, slices: Mapping[str, int]) -> list[tuple[str, int, float]]:
    """Per resource ``pod`` asks for: (profile, or ``gpu``; instances; fraction of one GPU they make:
    slices / 7 per MIG instance, 1 per whole GPU)."""
    out: list[tuple[str, int, float]] = []
    for resource, n in pod.requests:
        name = profile_of(resource)
        out.append((name or "gpu", n, n * (slices.get(name, 7) / 7 if name is not None else 1.0)))
    return out


def node_disruption(
    solution: Solution,
    obs: Observation,
    now: dt.datetime,
    slices: Mapping[str, int],
    grace_seconds: float,
    reconfigure_seconds: float,
    drain_seconds: float = dis.DRAIN_SECONDS,
    per_gpu: Collection[tuple[str, str]] = (),
) -> tuple[NodeDisruption, ...]:
    """The expected cost of every node the proposal changes, cheapest first (then by name).

    ``per_gpu``: the (cluster, pool) pairs that are static DRA pools. There the controller drains only
    the pods holding a device on a GPU that changes (controller/reconciler/drain.py ``per_gpu``), so
    the change is priced at drain scope ``gpu`` (:func:`dis.change_cost`): a pod is charged unless its
    claims' devices are all known to be on GPUs the change leaves alone (:func:`_on_changed`).
    Elsewhere (the device plugin: nothing in the API maps a pod to a GPU) every running pod is charged.

    A running pod's run time ``E`` is ``now − status.startTime``; without a startTime, ``now −
    creationTimestamp`` (an upper bound: the pod cannot have started before it was created, so its
    cost is over- rather than under-estimated); with neither, the node's cost is unknown. The wait
    before it started, for the displaced term, is ``startTime − creationTimestamp`` (0 without both).
    """
    out: list[NodeDisruption] = []
    on: dict[str, list[ObservedPod]] = defaultdict(list)  # node → its GPU pods (one pass, large fleets)
    for p in obs.pods:
        if p.node is not None and not p.pending:
            on[p.node].append(p)
    seen = {node.name: node for node in obs.nodes}
    for pool in solution.pools:
        scope = "gpu" if (pool.cluster, pool.pool) in per_gpu else "node"
        for n in pool.nodes:
            if not n.changed:
                continue
            running = on.get(n.name, [])
            changing, where = frozenset(range(len(n.gpus))), None
            if scope == "gpu":
                changing, where = _per_gpu(n, seen.get(n.name), _located(obs, n.name, len(n.gpus)))
            pods = [_running(p, now, slices, _on_changed(p, where, changing)) for p in running]
            # a MIG mode change re-carves every GPU (``_changing``): each is out for its reconfiguration
            redone = len(changing) if scope == "gpu" else len(n.changed_gpus)
            price = dis.change_cost(
                pods,
                len(n.gpus),
                redone,
                layout_counts([n.gpus]),
                grace_seconds,
                reconfigure_seconds,
                drain_seconds,
                scope=scope,
            )
            drained = sum(1 for p in pods if p.on_changed) if scope == "gpu" else len(running)
            out.append(
                NodeDisruption(
                    n.name,
                    len(n.gpus),
                    len(n.changed_gpus),
                    len(running),
                    price.loss,
                    price.outage,
                    price.displaced,
                    scope=scope,
                    drained=drained,
                )
            )
    return tuple(sorted(out, key=lambda d: (d.cost is None, d.cost or 0.0, d.node)))


def _running(
    p: ObservedPod, now: dt.datetime, slices: Mapping[str, int], on_changed: bool = True
) -> dis.RunningPod:
    """A running pod for :func:`compiler.recommend.disruption.change_cost`: what it holds, how long it
    has run (``now − startTime``, else ``now − creationTimestamp``, else unknown), waited before it
    started (``startTime − creationTimestamp``, 0 without both), and whether it is drained."""
    start = p.started or p.created
    elapsed = None if start is None else max(0.0, (now - start).total_seconds())
    waited = (p.started - p.created).total_seconds() if p.started and p.created else 0.0
    return dis.RunningPod(tuple(held(p, slices)), elapsed, waited, on_changed)


def _changing(n: NodeResult) -> frozenset[int]:
    """The GPU indices mig-parted re-carves to move node ``n`` to its new layouts: the GPUs whose
    layout changes, or every GPU when one changes MIG mode (mig-parted then clears every GPU the
    config selects, NVIDIA/mig-parted@bd7160f4 cmd/nvidia-mig-parted/apply/mode.go:88-94, as the
    controller's ``migparted.changing_gpus`` reads it)."""
    cur = n.current
    if cur is None or len(cur) != len(n.gpus):
        return frozenset(range(len(n.gpus)))
    if any(a.mig_enabled != b.mig_enabled for a, b in zip(cur, n.gpus, strict=True)):
        return frozenset(range(len(n.gpus)))
    return frozenset(n.changed_gpus)


def _located(obs: Observation, node: str, gpus: int) -> DeviceGpus | None:
    """Where the NVIDIA DRA driver's devices on ``node`` are ((pool, device) → GPU index) and what it
    publishes on each GPU (controller/dra.py ``device_gpus``, the reading the controller's per-GPU
    drain uses), None when it cannot be told."""
    from controller.dra import device_gpus  # only for a static DRA pool's change (it loads jsonschema)

    found = device_gpus(obs.slices_of(node), node, gpus)
    return None if found.problem is not None else found


def _per_gpu(
    n: NodeResult, node: ObservedNode | None, located: DeviceGpus | None
) -> tuple[frozenset[int], Mapping[tuple[str, str], int] | None]:
    """The GPUs a change of ``n`` re-carves and where each device is, as the controller's per-GPU drain
    reads them (controller/reconciler/drain.py ``_where``, ``_changing``); where it would drain every
    GPU pod, every GPU and no device mapping (each running pod is then charged):

    * the node is not observed, has no ``nvidia.com/gpu.count`` or one other than the pool's GPUs
      (the controller maps devices with the label's count: ``device_gpus`` then refuses the slices),
      or its ``nvidia.com/mig.config.state`` is not ``success`` (what is on its GPUs is not known);
    * the slices cannot be read (``_located``);
    * a GPU's published layout disagrees with the deployed one (the node is mid-rollout, or was
      changed by hand): mig-parted's view of that GPU is unknown, which the controller counts as a
      mode change (migparted.changing_gpus ``_now``), re-carving every GPU."""
    everything = frozenset(range(len(n.gpus)))
    if node is None or node.gpu_count != len(n.gpus) or node.mig_state != "success" or located is None:
        return everything, None
    if n.current is None or len(n.current) != len(n.gpus):
        return everything, located.gpus
    for i, deployed in enumerate(n.current):
        published = located.layouts.get(i)
        if published is None or published[0] != deployed.mig_enabled:
            return everything, located.gpus
        if deployed.mig_enabled and {p: c for p, c in published[1] if c} != deployed.counts():
            return everything, located.gpus
    return _changing(n), located.gpus


def _on_changed(
    p: ObservedPod, where: Mapping[tuple[str, str], int] | None, changing: Collection[int]
) -> bool:
    """Whether the controller drains ``p`` for a change of the GPUs ``changing`` (True unless every
    device its claims hold is known to be on a GPU that does not change; a pod that asks in its
    limits too, the device plugin's way, is not ``claimed`` and is drained: nothing says which GPU
    it has)."""
    if where is None or not p.claimed or p.devices is None:
        return True
    for driver, pool, device in p.devices:
        gpu = where.get((pool, device)) if driver == DRA_DRIVER else None
        if gpu is None or gpu in changing:
            return True
    return False


def pending_benefit(
    waits: Mapping[str, Sequence[float]],
    demand: Mapping[str, int],
    current: Mapping[str, int],
    proposed: Mapping[str, int],
    slices: Mapping[str, int],
) -> tuple[float, int]:
    """Pending GPU-seconds the change from ``current`` to ``proposed`` capacity avoids; instances served.

    ``demand``: running + pending instances per profile; per profile the pending instances are served
    in queue order after the ones ``current`` serves already (:func:`dis.served_waits`)."""
    benefit, served = 0.0, 0
    for p, w in waits.items():
        n, before, after = demand.get(p, 0), current.get(p, 0), proposed.get(p, 0)
        got = dis.served_waits(w, n, before, after)
        if got:
            benefit += slices.get(p, 7) / 7 * sum(got)
        served += len(got)
    return benefit, served


def benefit_bound(
    waits: Mapping[str, Sequence[float]],
    demand: Mapping[str, int],
    deployed: Mapping[str, int],
    slices: Mapping[str, int],
    gpus: int,
) -> float:
    """An upper bound on :func:`pending_benefit` of *any* proposal on ``gpus`` GPUs, before a solve.

    ``deployed``: instances per profile the deployed layout has (at most the solver's ``current``:
    where in doubt, fewer). Per profile ``p`` (``s`` compute slices, ``7`` for a whole GPU; every GPU
    holds at most 7 of them), the change serves ``m`` pending instances only with ``min(after, n) =
    b + m`` instances of ``p`` after it (``b = min(deployed, n)``), so over the profiles it serves
    ``sum (b + m) × s ≤ 7 × gpus``; and the ``m`` it serves are, in queue order, the first ``m``
    after those ``b`` serves already (:func:`dis.served_waits`), each worth ``s / 7 × wait``.
    For every λ ≥ 0, ``7 × gpus × λ + Σ_p s × max(0, Σ_i (w_i / 7 − λ)⁺ − λ × b)`` is at least the
    benefit of every such choice (Lagrangian relaxation of the slices); the least over λ at the
    waits (a convex function of λ, searched by bisection) is returned. Where many pods wait on a
    fleet their running pods fill, this is far below the wait of every pending pod."""
    rows: list[tuple[int, int, list[float], list[float]]] = []  # (s, b, w / 7 longest first, prefix sums)
    for p, w in waits.items():
        n = max(0, demand.get(p, 0))
        running = max(0, n - len(w))
        b = min(deployed.get(p, 0), n)
        rest = [x / 7 for x in w[max(0, b - running) :]]
        if rest:
            prefix = [0.0]
            for x in rest:
                prefix.append(prefix[-1] + x)
            rows.append((slices.get(p, 7), b, rest, prefix))
    if not rows:
        return 0.0

    def bound(lam: float) -> float:
        total = 7 * gpus * lam
        for s, b, rest, prefix in rows:
            lo, hi = 0, len(rest)  # how many of rest (longest first) exceed lam
            while lo < hi:
                mid = (lo + hi) // 2
                if rest[mid] > lam:
                    lo = mid + 1
                else:
                    hi = mid
            total += s * max(0.0, prefix[lo] - lam * lo - lam * b)
        return total

    points = sorted({0.0, *(x for _, _, rest, _ in rows for x in rest)})
    lo, hi = 0, len(points) - 1
    while lo < hi:  # the first point from which the bound no longer falls
        mid = (lo + hi) // 2
        if bound(points[mid + 1]) >= bound(points[mid]):
            hi = mid
        else:
            lo = mid + 1
    return bound(points[lo])


def _deployed(policy: Policy, current: CurrentState) -> tuple[dict[str, int], int]:
    """Instances per profile the deployed layout has on the policy's pools (a DynamicMIG pool's none:
    the solver counts its nodes as their target), and the pools' GPUs."""
    deployed = current.as_dict()
    layouts: list[NodeLayout | None] = []
    gpus = 0
    for c in policy.clusters:
        for pool in c.pools:
            gpus += pool.gpus_per_node * len(pool.node_names)
            if not pool.dra_dynamic:
                layouts += [deployed.get((c.name, pool.name, name)) for name in pool.node_names]
    return layout_counts(layouts), gpus


@dataclass(frozen=True)
class _Demand:
    """What the Tenants' pods ask for now and over the window: what the proposal is sized from."""

    counts: Mapping[tuple[str, str], list[int]]  # (tenant, profile) → [running, pending] instances now
    pending: Sequence[g.PendingPod]
    diagnostics: Sequence[Diagnostic]  # MIGC424 for the pods of namespaces no Tenant lists
    fired: tuple[Rule, ...]
    sample: h.Sample  # this evaluation's sample
    window: h.Window
    stats: Mapping[tuple[str, str], h.Stats]  # per (tenant, profile) over the window
    # each fired rule with, per tenant, its matched pending pods that persisted through the window
    headroom: Sequence[tuple[Rule, Mapping[str, int]]]
    keep: Mapping[tuple[str, str], int]  # the most over the scaleDownWindow
    keep_covered: bool
    late: Mapping[tuple[str, str], int]  # pending pods past their max wait


def _watch_demand(policy: Policy, obs: Observation, state: State, now: dt.datetime) -> _Demand:
    """Step 1: the observed demand, the rules it fires and its history over the windows."""
    part = policy.partition
    demand, pending, diags = observed_demand(policy, obs)
    fired = g.fired_rules(part.rules, pending)
    owner = _tenant_of(policy)
    current_sample = h.sample(now, demand)
    win = h.window(state.history, current_sample, part)
    tenants = sorted({owner[ns] for pod in pending if (ns := pod.key.split("/", 1)[0]) in owner})
    headroom = [(r, {t: h.pending_low(win, t, r.when.profile) for t in tenants}) for r in fired]
    keep, keep_covered = h.peaks(state.history, current_sample, part)
    late: dict[tuple[str, str], int] = defaultdict(int)
    for pod in pending:
        tenant = owner.get(pod.key.split("/", 1)[0])
        if tenant is not None and pod.late:
            late[(tenant, pod.profile)] += 1
    return _Demand(
        demand,
        pending,
        diags,
        fired,
        current_sample,
        win,
        h.stats(win, now, part),
        headroom,
        keep,
        keep_covered,
        late,
    )


@dataclass(frozen=True)
class _Sizing:
    """Step 2: the replicas each Workload is wanted at, and the instances each (tenant, profile) is
    sized for (:func:`compiler.recommend.history.sized`)."""

    wanted: Mapping[str, int]  # workload → replicas, for those that change
    sized: Mapping[tuple[str, str], int]
    diagnostics: Sequence[Diagnostic]  # MIGC424/MIGC428
    effects: Sequence[RuleEffect]


def _size(policy: Policy, catalog: Catalog, d: _Demand, surplus: str = "kept") -> _Sizing:
    if surplus not in ("kept", "last"):  # "busy" needs the nodes' state: the replay's alone
        raise ValueError(f"surplus {surplus!r}: expected one of kept, last")
    sized: dict[tuple[str, str], int] = {}
    cut: dict[tuple[str, str], int] = {}  # the remembered surplus served last (h.capped)

    def size(key: tuple[str, str], declared: int) -> int:
        running, pend = d.counts.get(key, [0, 0])
        n = h.sized(
            declared,
            d.stats.get(key),
            d.window.covered,
            running + pend,
            d.late.get(key, 0),
            (d.keep.get(key, 0), d.keep_covered),
        )
        sized[key] = min(n, cut.get(key, n))
        return sized[key]

    # "last": the keys the scaleDownWindow remembers are sized too (as the replay sizes them)
    remembered = d.keep if surplus == "last" else {}
    known = {**{k: [0, 0] for k in (*d.stats, *remembered)}, **d.counts}
    now = {k: v[0] + v[1] for k, v in d.counts.items()}
    for again in (False, True):  # sized, then with the surplus cut to the room current demand leaves
        if again and surplus == "kept":
            break
        if again:
            cut = h.capped(sized, now, _slices(catalog), h.room(policy, catalog))
            if cut == sized:
                break
            sized.clear()
        wanted, diags, effects = wanted_replicas(policy, catalog, known, d.headroom, size)
        for key in d.stats:  # keys no Workload describes: sized as if nothing were declared
            if key not in sized:
                size(key, 0)
    return _Sizing(wanted, sized, diags, effects)


@dataclass(frozen=True)
class _Proposal:
    """Step 3: the proposed policy solved from the deployed layout, and what it changes."""

    solution: Solution
    current: dict[str, int]  # capacity deployed, per profile
    proposed: dict[str, int]  # capacity after the change
    gain: float
    changing: list[str]  # nodes whose layout changes
    urgent: tuple[str, ...]


Solver = Callable[[Policy, Catalog, CurrentState, float], Solution]
"""What solves the proposed policy from the deployed layout: (policy, catalog, current, time limit in
seconds) → the solution. :func:`exact` by default; ``migc simulate`` passes the same function memoised
on its inputs (the solve is pure: equal inputs, equal solution)."""


def exact(policy: Policy, catalog: Catalog, current: CurrentState, time_limit_s: float) -> Solution:
    """The solver ``migc compile`` runs (:func:`compiler.solve.solve`, the exact method)."""
    return solve(policy, catalog, current, time_limit_s=time_limit_s)


def _solve_proposal(
    policy: Policy,
    catalog: Catalog,
    current: CurrentState,
    d: _Demand,
    sizing: _Sizing,
    slices: Mapping[str, int],
    time_limit_s: float,
    solver: Solver = exact,
) -> _Proposal:
    workloads = tuple(replace(w, replicas=sizing.wanted.get(w.name, w.replicas)) for w in policy.workloads)
    solution = solver(replace(policy, workloads=workloads), catalog, current, time_limit_s)
    cur_cap = capacity(solution, "current")
    new_cap = capacity(solution, "target")
    want: dict[str, int] = defaultdict(int)  # the demand the proposal is sized for, per profile
    for (_, p), n in sizing.sized.items():
        want[p] += n
    return _Proposal(
        solution,
        cur_cap,
        new_cap,
        g.gain_pct(cur_cap, new_cap, want, slices),
        sorted({n.name for pool in solution.pools for n in pool.nodes if n.changed}),
        g.urgent_pods(d.pending, cur_cap, new_cap),
    )


@dataclass(frozen=True)
class _Weighed:
    """Step 4: the gates that weigh the proposal (the disruption rule's, or the gain threshold) and the
    disruption rule's evidence."""

    gates: list[g.Gate]
    node_costs: tuple[NodeDisruption, ...] = ()
    benefit: float = 0.0
    served_pending: int = 0


def _weigh(
    policy: Policy,
    obs: Observation,
    now: dt.datetime,
    d: _Demand,
    prop: _Proposal,
    slices: Mapping[str, int],
    disruption: str,
    grace_seconds: float,
    reconfigure_seconds: float,
    drain_seconds: float,
) -> _Weighed:
    part = policy.partition
    if disruption != "expected":
        return _Weighed([g.threshold(prop.gain, part, prop.urgent)])
    per_gpu = {(c.name, p.name) for c in policy.clusters for p in c.pools if p.dra_static}
    node_costs = node_disruption(
        prop.solution, obs, now, slices, grace_seconds, reconfigure_seconds, drain_seconds, per_gpu
    )
    observed: dict[str, int] = defaultdict(int)
    for (_, p), (run, pend) in d.counts.items():
        observed[p] += run + pend
    benefit, served_pending = pending_benefit(
        pending_waits(policy, obs), observed, prop.current, prop.proposed, slices
    )
    # the threshold is applied by the disruption rule to GPU-time saved vs destroyed; the share of
    # the shortage is not asked a second time (as in migc simulate's default loop)
    gates = [
        g.Gate("threshold", True, f"gain {prop.gain:.1f}%: applied by the disruption rule"),
        g.disruption(benefit, total_cost(node_costs), part),
    ]
    return _Weighed(gates, node_costs, benefit, served_pending)


def _failures(obs: Observation, state: State) -> tuple[int, dt.datetime | None]:
    """backoff: a Failed rollout the controller recorded on a node counts once (by its time)."""
    failed = [
        n.rollout.since for n in obs.nodes if n.rollout.phase == "Failed" and n.rollout.since is not None
    ]
    return g.count_failures(state.failures, state.last_failure, failed, state.last_change)


def _rolling(obs: Observation) -> list[str]:
    """The nodes still rolling out (a Failed one aside: it waits for a human or its retry)."""
    return sorted(n.name for n in obs.nodes if n.rollout.in_progress and n.rollout.phase != "Failed")


def _rollout_gate(obs: Observation) -> g.Gate:
    rolling = _rolling(obs)
    return g.Gate(
        "rollout",
        not rolling,
        "no rollout in progress"
        if not rolling
        else f"{len(rolling)} node(s) still rolling out: {', '.join(rolling[:5])}",
    )


def _cheapest_change(
    policy: Policy,
    obs: Observation,
    now: dt.datetime,
    slices: Mapping[str, int],
    grace: float,
    reconf: float,
    drain: float,
) -> float | None:
    """A lower bound on the cost of any proposal that changes a node: the least, over the pools'
    nodes, of the expected loss of its running pods (0 where unknown) plus the outage of one changed
    GPU (``change_cost`` grows with the GPUs changed, and the displaced wait is ≥ 0). On a static DRA
    pool (priced per GPU, :func:`node_disruption`) a node's least is that of its cheapest GPU: any
    change re-carves at least one GPU, charges at least the pods on it (and those whose GPU is not
    known), and keeps running at most the others. None when a pool shares GPUs (time-slicing or
    HAMi): there capacity can change with no node re-carved."""
    pools = [pool for c in policy.clusters for pool in c.pools]
    if any(pool.sharing.mode != "none" for pool in pools):
        return None
    on: dict[str, list[ObservedPod]] = defaultdict(list)
    for p in obs.pods:
        if p.node is not None and not p.pending:
            on[p.node].append(p)
    best: float | None = None
    for pool in pools:
        per_gpu = pool.dra_static
        for name in pool.node_names:
            running = on.get(name, [])
            # where the controller would drain every pod (node_disruption's ``_per_gpu``) the real
            # cost is only higher: charging just one GPU's pods here stays a lower bound
            located = _located(obs, name, pool.gpus_per_node) if per_gpu and running else None
            where = located.gpus if located is not None else None
            for gpu in range(pool.gpus_per_node) if per_gpu else (None,):
                drained = [gpu is None or _on_changed(p, where, {gpu}) for p in running]
                pods = [_running(p, now, slices, d) for p, d in zip(running, drained, strict=True)]
                price = dis.change_cost(
                    pods, pool.gpus_per_node, 1, {}, grace, reconf, drain, scope="gpu" if per_gpu else "node"
                )
                cost = (price.loss or 0.0) + price.outage
                best = cost if best is None else min(best, cost)
    return best


def _node_limits(policy: Policy, state: State, now: dt.datetime) -> list[g.Gate]:
    """The minDwell and dailyChangeBudget gates as a change of any one node would meet them: the
    budget with one node more, minDwell when every node of the fleet changed less than it ago (both
    only get harder with more nodes changing)."""
    part = policy.partition
    last = state.node_last_change()
    names = [n for c in policy.clusters for pool in c.pools for n in pool.node_names]
    budget = g.daily_budget(1, g.changes_last_day((t for _, t in state.changes), now), part)
    every = bool(names) and all(
        n in last and (now - last[n]).total_seconds() < part.min_dwell_seconds for n in names
    )
    young = g.Gate(
        "minDwell",
        not every,
        f"every node changed less than {duration(part.min_dwell_seconds)} ago"
        if every
        else "a node kept its layout long enough",
    )
    return [budget, young]


def held_before_solve(
    policy: Policy,
    obs: Observation,
    state: State,
    now: dt.datetime,
    d: _Demand,
    sizing_changes: bool,
    disruption: str,
    failures: tuple[int, dt.datetime | None],
    grace: float,
    reconf: float,
    slices: Mapping[str, int],
    drain: float = dis.DRAIN_SECONDS,
    current: CurrentState | None = None,
) -> g.Gate | None:
    """A gate that blocks every proposal whatever the solver returns, or None: the mode, the rollout,
    no Workload's replicas changing, the backoff; the stabilizationWindow while the history does not
    cover it and no pod is past its max wait; and with the disruption rule, the dailyChangeBudget
    with no node change left, minDwell while every node changed less than it ago, and a benefit
    that cannot beat the cheapest node change even if every pending pod were served (a proposal that
    changes no node changes no capacity, so it serves nobody: benefit 0, and ``benefit > cost × (1 +
    threshold)`` fails for any cost ≥ 0). When one blocks, the decision (no change) and the state
    written back are those of the full evaluation; only the evidence of what the solver would have
    proposed is missing (``recommend(lazy=True)``)."""
    part = policy.partition
    for gate in (g.mode(part), _rollout_gate(obs)):
        if not gate.passed:
            return gate
    if not sizing_changes:
        return g.Gate("replicas", False, "no Workload's replicas change: nothing to propose")
    if not d.window.covered and not any(pod.late for pod in d.pending):
        return g.Gate("stabilizationWindow", False, "the demand history does not cover the window yet")
    if disruption == "expected":  # a proposal that changes no node changes no capacity: benefit 0
        for gate in _node_limits(policy, state, now):
            if not gate.passed:
                return gate
        waits = pending_waits(policy, obs)
        most = sum(slices.get(p, 7) / 7 * sum(w) for p, w in waits.items())
        least = _cheapest_change(policy, obs, now, slices, grace, reconf, drain)
        if least is not None and not dis.worth(most, least, part.reconfiguration_threshold_pct):
            return g.Gate(
                "disruption",
                False,
                f"benefit at most {most:,.0f} GPU-s (every pending pod served) <= the cheapest node "
                f"change {least:,.0f} GPU-s x {1 + part.reconfiguration_threshold_pct / 100:g}",
            )
        if least is not None and current is not None:
            observed: dict[str, int] = defaultdict(int)
            for (_, p), (run, pend) in d.counts.items():
                observed[p] += run + pend
            deployed, gpus = _deployed(policy, current)
            room = benefit_bound(waits, observed, deployed, slices, gpus)
            if not dis.worth(room, least, part.reconfiguration_threshold_pct):
                return g.Gate(
                    "disruption",
                    False,
                    f"benefit at most {room:,.0f} GPU-s (the pending pods the fleet's slices could "
                    f"serve) <= the cheapest node change {least:,.0f} GPU-s x "
                    f"{1 + part.reconfiguration_threshold_pct / 100:g}",
                )
    backoff = g.backoff(*failures, now, part)
    return None if backoff.passed else backoff


def _gates(
    policy: Policy,
    obs: Observation,
    state: State,
    now: dt.datetime,
    d: _Demand,
    prop: _Proposal,
    weighed: _Weighed,
    failures: tuple[int, dt.datetime | None],
) -> list[g.Gate]:
    """Step 5: every gate, in the order the evidence lists them."""
    part = policy.partition
    return [
        g.mode(part),
        _rollout_gate(obs),
        *weighed.gates,
        *h.change_gates(
            d.window,
            now,
            part,
            prop.urgent,
            prop.current,
            prop.proposed,
            prop.changing,
            state.node_last_change(),
            (t for _, t in state.changes),
            failures,
        ),
    ]


def _next_state(
    policy: Policy,
    state: State,
    now: dt.datetime,
    d: _Demand,
    changing: Sequence[str],
    ok: bool,
    failures: tuple[int, dt.datetime | None],
) -> State:
    """Step 6: the state to write back: the sample recorded, and the change when one is proposed;
    the node changes of the last day (of the last minDwell when that is longer: ``change_horizon``),
    sorted, as the state file keeps them (``dump_state``), so the next evaluation reads the same
    state from memory (``migc simulate``) as from the file."""
    changes = state.changes + (tuple((n, now) for n in changing) if ok else ())
    keep = change_horizon(policy.partition)
    return State(
        updated=now,
        history=h.record(state.history, d.sample, policy.partition),
        last_change=now if ok else state.last_change,
        changes=tuple(sorted((n, t) for n, t in changes if 0 <= (now - t).total_seconds() < keep)),
        failures=failures[0],
        last_failure=failures[1],
    )


def _window_rows(d: _Demand, sizing: _Sizing) -> tuple[WindowDemand, ...]:
    rows = []
    for (t, p), st in sorted(d.stats.items()):
        running, pending = d.counts.get((t, p), [0, 0])
        rows.append(
            WindowDemand(t, p, running, pending, st.samples, st.low, st.mean, st.high, sizing.sized[(t, p)])
        )
    return tuple(rows)


def _node_plan(solution: Solution) -> tuple[NodeChange, ...]:
    """The changed nodes: GPUs reconfigured, deployed and proposed layout, by node name."""
    rows = (
        (n.name, len(n.changed_gpus), layout_text(n.current), layout_text(n.gpus))
        for pool in solution.pools
        for n in pool.nodes
        if n.changed
    )
    return tuple(NodeChange(*row) for row in sorted(rows))


def recommend(
    policy: Policy,
    catalog: Catalog,
    current: CurrentState,
    obs: Observation,
    state: State,
    now: dt.datetime,
    *,
    time_limit_s: float = 60.0,
    disruption: str = "expected",
    drain_grace_seconds: float = dis.DRAIN_GRACE_SECONDS,
    reconfigure_seconds: float = dis.RECONFIGURE_SECONDS,
    drain_seconds: float = dis.DRAIN_SECONDS,
    surplus: str = "kept",
    solver: Solver = exact,
    lazy: bool = False,
) -> Recommendation:
    """One evaluation. ``disruption``: "expected" weighs the proposal by the disruption rule (and the
    threshold is applied there, as in ``migc simulate``'s default loop); "off": the gain threshold.
    ``surplus``: "kept" (default) or "last", the remembered surplus served only with the room current
    demand leaves (:func:`compiler.recommend.history.capped`; bench/RESULTS.md Round 9).
    ``solver``: what solves the proposed policy (:data:`Solver`). ``lazy``: when a gate blocks every
    proposal before the solve (:func:`held_before_solve`), skip the solve: the decision and the state
    are the same, the evidence has no proposal (``migc simulate`` calls it so at every interval)."""
    slices = _slices(catalog)
    demand = _watch_demand(policy, obs, state, now)
    sizing = _size(policy, catalog, demand, surplus)
    failures = _failures(obs, state)
    if lazy:
        blocked = held_before_solve(
            policy,
            obs,
            state,
            now,
            demand,
            bool(sizing.wanted),
            disruption,
            failures,
            drain_grace_seconds,
            reconfigure_seconds,
            slices,
            drain_seconds,
            current,
        )
        if blocked is not None:
            return _unsolved(policy, state, now, demand, sizing, failures, blocked, disruption)
    prop = _solve_proposal(policy, catalog, current, demand, sizing, slices, time_limit_s, solver)
    weighed = _weigh(
        policy,
        obs,
        now,
        demand,
        prop,
        slices,
        disruption,
        drain_grace_seconds,
        reconfigure_seconds,
        drain_seconds,
    )
    gates = _gates(policy, obs, state, now, demand, prop, weighed, failures)
    ok = bool(sizing.wanted) and g.all_passed(gates)
    return Recommendation(
        now=now,
        **_watched(policy, demand, sizing, disruption),
        current=tuple(prop.current.items()),
        proposed=tuple(prop.proposed.items()),
        nodes=tuple(prop.changing),
        gain=prop.gain,
        gates=tuple(gates),
        urgent=prop.urgent,
        state=_next_state(policy, state, now, demand, prop.changing, ok, failures),
        diagnostics=(*demand.diagnostics, *sizing.diagnostics, *prop.solution.diagnostics),
        benefit=weighed.benefit,
        served_pending=weighed.served_pending,
        node_costs=weighed.node_costs,
        drain_grace_seconds=drain_grace_seconds,
        reconfigure_seconds=reconfigure_seconds,
        drain_seconds=drain_seconds,
        node_plan=_node_plan(prop.solution),
        targets=tuple(
            sorted((n.name, n.gpus) for pool in prop.solution.pools for n in pool.nodes if n.changed)
        ),
    )


def _watched(policy: Policy, demand: _Demand, sizing: _Sizing, disruption: str) -> dict[str, Any]:
    """The evidence that comes before the solve, the same in a full and a lazy evaluation: the
    demand, the window and the scaleDownWindow, the sizing's replicas and the rules' effects."""
    part = policy.partition
    old = {w.name: w.replicas for w in policy.workloads}
    return {
        "demand": tuple(TenantDemand(t, p, r, q) for (t, p), (r, q) in sorted(demand.counts.items())),
        "replicas": tuple(ReplicaChange(k, old[k], v) for k, v in sorted(sizing.wanted.items())),
        "rules": tuple(r.name for r in demand.fired),
        "rule_effects": tuple(sizing.effects),
        "since": demand.window.since,
        "covered": demand.window.covered,
        "window_seconds": part.stabilization_seconds,
        "keep": tuple(Kept(t, p, n) for (t, p), n in sorted(demand.keep.items())),
        "keep_covered": demand.keep_covered,
        "keep_seconds": h.longest(part),
        "disruption": disruption,
        "window": _window_rows(demand, sizing),
    }


def _unsolved(
    policy: Policy,
    state: State,
    now: dt.datetime,
    demand: _Demand,
    sizing: _Sizing,
    failures: tuple[int, dt.datetime | None],
    blocked: g.Gate,
    disruption: str,
) -> Recommendation:
    """``recommend(lazy=True)`` when ``blocked`` holds every proposal back: no solve, no change; the
    state written back is the full evaluation's (the sample recorded, no change), and so is the
    evidence that comes before the solve (the demand, the window, the sizing's replicas and rule
    effects, the scaleDownWindow); what the solve gives (capacity, nodes, plan, costs) is absent."""
    return Recommendation(
        now=now,
        **_watched(policy, demand, sizing, disruption),
        current=(),
        proposed=(),
        nodes=(),
        gain=0.0,
        gates=(blocked,),
        urgent=(),
        state=_next_state(policy, state, now, demand, (), False, failures),
        diagnostics=(*demand.diagnostics, *sizing.diagnostics),
    )
