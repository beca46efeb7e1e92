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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from compiler.catalog import Catalog
from compiler.diagnostics import Diagnostic, make
from compiler.escape import markdown_cell as _md
from compiler.model import CurrentState, GpuLayout, Policy, Rule, Workload
from compiler.observe import Observation, ObservedPod
from compiler.observe.model import profile_of
from compiler.recommend import disruption as dis
from compiler.recommend import gates as g
from compiler.recommend import history as h
from compiler.recommend.state import State
from compiler.solve import solve
from compiler.solve.demand import sized_resource
from compiler.solve.result import Solution


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

    @property
    def cost(self) -> float | None:
        return None if self.loss is None else self.loss + self.outage + self.displaced


def total_cost(nodes: Sequence[NodeDisruption]) -> float | None:
    """Σ of the nodes' costs; None when one is unknown."""
    costs = [n.cost for n in nodes]
    return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


@dataclass(frozen=True)
class Recommendation:
    now: dt.datetime
    demand: tuple[tuple[str, str, int, int], ...]  # (tenant, profile, running, pending)
    current: tuple[tuple[str, int], ...]  # profile → instances deployed
    proposed: tuple[tuple[str, int], ...]  # profile → instances after the change
    replicas: tuple[tuple[str, int, int], ...]  # (workload, old, new) for workloads that change
    nodes: tuple[str, ...]  # nodes whose layout changes
    gain: float
    gates: tuple[g.Gate, ...]
    rules: tuple[str, ...]  # rules that fired
    urgent: tuple[str, ...]
    state: State  # the state to write back
    diagnostics: tuple[Diagnostic, ...]
    # what each fired rule did: (rule, tenant, profile, workload or "" when none in its pools, replicas)
    rule_effects: tuple[tuple[str, str, str, str, int], ...] = ()
    # the plan of the change: (node, GPUs reconfigured, deployed layout, proposed layout)
    node_plan: tuple[tuple[str, int, str, str], ...] = ()
    since: dt.datetime | None = None  # the demand has been watched without a gap since
    # per (tenant, profile) over the window: (tenant, profile, running now, pending now, samples, min,
    # mean, max, instances sized for)
    window: tuple[tuple[str, str, int, int, int, int, float, int, int], ...] = ()
    covered: bool = False  # the history covers the whole stabilization window
    window_seconds: int = 0  # the stabilizationWindow
    # per (tenant, profile) the most running + pending at any sample of the scaleDownWindow: capacity
    # is shrunk no lower (until the history covers that window, no lower than declared either)
    keep: tuple[tuple[str, str, int], ...] = ()
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

    @property
    def cost(self) -> float | None:
        """Σ of the changed nodes' costs (None when one is unknown)."""
        return total_cost(self.node_costs)

    @property
    def proposed_change(self) -> bool:
        return bool(self.replicas) and g.all_passed(self.gates)


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
) -> tuple[dict[str, int], list[Diagnostic], list[tuple[str, str, str, str, int]]]:
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
    effects: list[tuple[str, str, str, str, int]] = []
    extra_keys = {(t, r.maximize) for r, per in headroom for t, n in per.items() if n > 0}
    for tenant, profile in sorted(set(demand) | extra_keys):
        running, pending = demand.get((tenant, profile), [0, 0])
        group = sorted(
            (w for w in policy.workloads if w.tenant == tenant and _matches(policy, catalog, w, profile)),
            key=lambda w: w.name,
        )
        new = {w.name: w.replicas for w in group}
        if (tenant, profile) in demand:
            if not group:
                if running + pending > 0:  # not when seen earlier in the window only
                    diags.append(
                        make(
                            "MIGC424",
                            f"tenant {tenant}: {running + pending} x {profile} observed, but no Workload "
                            "of the tenant asks for it",
                        )
                    )
            else:
                per = max(group[0].need.gpus if profile == "gpu" else 1, 1)
                declared = sum(w.replicas for w in group)
                wanted = running + pending if size is None else size((tenant, profile), declared * per)
                observed = -(-wanted // per)
                new[group[0].name] = max(0, group[0].replicas + observed - declared)
        for rule, per_tenant in headroom:
            count = per_tenant.get(tenant, 0)
            if rule.maximize != profile or count <= 0:
                continue
            target = rule_target(policy, catalog, group, rule)
            if target is None:
                effects.append((rule.name, tenant, profile, "", 0))
                which = f"asking for {profile} is confined to pools {', '.join(rule.pools)}"
                diags.append(
                    make(
                        "MIGC428",
                        f"rule {rule.name}: no Workload of tenant {tenant} "
                        f"{which if group else f'asks for {profile}'}, "
                        f"so its headroom of {count} x {profile} is not proposed",
                    )
                )
                continue
            new[target.name] += count
            effects.append((rule.name, tenant, profile, target.name, count))
        for w in group:
            if new[w.name] != w.replicas:
                out[w.name] = new[w.name]
    return out, diags, effects


def capacity(solution: Solution, which: str) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for pool in solution.pools:
        for node in pool.nodes:
            for name, n in layout_counts(node.gpus if which == "target" else (node.current or ())).items():
                out[name] += n
    return dict(sorted(out.items()))


def layout_text(layout: Sequence[GpuLayout] | None) -> str:
    """A node's instances summed over its GPUs: ``7 x 1g.10gb, 1 x 3g.40gb, 1 whole GPU``."""
    if layout is None:
        return "nothing deployed"
    counts: dict[str, int] = defaultdict(int)
    whole = 0
    for gpu in layout:
        if not gpu.mig_enabled:
            whole += 1
        for name, n in gpu.profiles:
            counts[name] += n
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


def gpu_fraction(pod: ObservedPod, slices: Mapping[str, int]) -> float:
    """The fraction of one GPU ``pod`` holds (:func:`held`, summed)."""
    return sum(f for _, _, f in held(pod, slices))


def node_disruption(
    solution: Solution,
    obs: Observation,
    now: dt.datetime,
    slices: Mapping[str, int],
    grace_seconds: float,
    reconfigure_seconds: float,
) -> tuple[NodeDisruption, ...]:
    """The expected cost of every node the proposal changes, cheapest first (then by name).

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
    for pool in solution.pools:
        for n in pool.nodes:
            if not n.changed:
                continue
            running = on.get(n.name, [])
            loss: float | None = 0.0
            for p in running:
                start = p.started or p.created
                if start is None or loss is None:
                    loss = None
                    continue
                elapsed = max(0.0, (now - start).total_seconds())
                loss += gpu_fraction(p, slices) * dis.expected_loss(elapsed, grace_seconds)
            changed = len(n.changed_gpus)
            outage = dis.outage(
                (gpu_fraction(p, slices) for p in running), len(n.gpus), changed, reconfigure_seconds
            )
            moved = dis.displaced(_holding(running, slices), layout_counts(n.gpus))
            out.append(NodeDisruption(n.name, len(n.gpus), changed, len(running), loss, outage, moved))
    return tuple(sorted(out, key=lambda d: (d.cost is None, d.cost or 0.0, d.node)))


def layout_counts(layout: Sequence[GpuLayout]) -> dict[str, int]:
    """Instances per resource of a node's layout (``gpu`` for a whole GPU)."""
    out: dict[str, int] = defaultdict(int)
    for gpu in layout:
        if not gpu.mig_enabled:
            out["gpu"] += 1
        for name, n in gpu.profiles:
            out[name] += n
    return dict(out)


def _holding(pods: Sequence[ObservedPod], slices: Mapping[str, int]) -> list[tuple[str, int, float, float]]:
    """Per running pod and resource it holds: (resource, instances, GPU fraction, wait before it started)."""
    out: list[tuple[str, int, float, float]] = []
    for p in pods:
        waited = (p.started - p.created).total_seconds() if p.started and p.created else 0.0
        out += [(name, n, f, waited) for name, n, f in held(p, slices)]
    return out


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
) -> Recommendation:
    """One evaluation. ``disruption``: "expected" weighs the proposal by the disruption rule (and the
    threshold is applied there, as in ``migc simulate``'s default loop); "off": the gain threshold."""
    part = policy.partition
    slices = _slices(catalog)
    demand, pending, diags = observed_demand(policy, obs)
    fired = g.fired_rules(part.rules, pending)
    owner = _tenant_of(policy)
    # the demand history over the window decides what each (tenant, profile) is sized for
    current_sample = h.sample(now, demand)
    win = h.window(state.history, current_sample, part)
    headroom: list[tuple[Rule, Mapping[str, int]]] = []
    tenants = {owner[ns] for pod in pending if (ns := pod.key.split("/", 1)[0]) in owner}
    for r in fired:  # a rule's headroom: its matched pending pods that persisted through the window
        per_tenant = {t: h.pending_low(win, t, r.when.profile) for t in sorted(tenants)}
        headroom.append((r, per_tenant))
    stats = h.stats(win, now, part)
    keep, keep_covered = h.peaks(state.history, current_sample, part)
    late: dict[tuple[str, str], int] = defaultdict(int)
    for pod in pending:
        tenant = owner.get(pod.key.split("/", 1)[0])
        if tenant is not None and pod.late:
            late[(tenant, pod.profile)] += 1
    sized: dict[tuple[str, str], int] = {}

    def size(key: tuple[str, str], declared: int) -> int:
        running, pend = demand.get(key, [0, 0])
        sized[key] = h.sized(
            declared,
            stats.get(key),
            win.covered,
            running + pend,
            late.get(key, 0),
            (keep.get(key, 0), keep_covered),
        )
        return sized[key]

    known = {**{k: [0, 0] for k in stats}, **demand}
    wanted, more, effects = wanted_replicas(policy, catalog, known, headroom, size)
    diags.extend(more)
    for key in stats:  # keys no Workload describes: sized as if nothing were declared
        if key not in sized:
            size(key, 0)
    new_workloads = tuple(replace(w, replicas=wanted.get(w.name, w.replicas)) for w in policy.workloads)
    proposed_policy = replace(policy, workloads=new_workloads)
    solution = solve(proposed_policy, catalog, current, time_limit_s=time_limit_s)
    cur_cap = capacity(solution, "current")
    new_cap = capacity(solution, "target")
    want: dict[str, int] = defaultdict(int)  # the demand the proposal is sized for, per profile
    for (_, p), n in sized.items():
        want[p] += n
    gain = g.gain_pct(cur_cap, new_cap, want, slices)
    changing = sorted({n.name for pool in solution.pools for n in pool.nodes if n.changed})
    urgent = g.urgent_pods(pending, cur_cap, new_cap)

    # backoff: a Failed rollout the controller recorded on a node counts once (by its time)
    failed = [
        n.rollout.since for n in obs.nodes if n.rollout.phase == "Failed" and n.rollout.since is not None
    ]
    failures, last_failure = g.count_failures(state.failures, state.last_failure, failed, state.last_change)
    rolling = sorted(n.name for n in obs.nodes if n.rollout.in_progress and n.rollout.phase != "Failed")

    node_costs: tuple[NodeDisruption, ...] = ()
    benefit, served_pending = 0.0, 0
    if disruption == "expected":
        node_costs = node_disruption(solution, obs, now, slices, drain_grace_seconds, reconfigure_seconds)
        observed: dict[str, int] = defaultdict(int)
        for (_, p), (run, pend) in demand.items():
            observed[p] += run + pend
        benefit, served_pending = pending_benefit(
            pending_waits(policy, obs), observed, cur_cap, new_cap, slices
        )
        total = total_cost(node_costs)
        # the threshold is applied by the disruption rule to GPU-time saved vs destroyed; the share of
        # the shortage is not asked a second time (as in migc simulate's default loop)
        weighed = [
            g.Gate("threshold", True, f"gain {gain:.1f}%: applied by the disruption rule"),
            g.disruption(benefit, total, part),
        ]
    else:
        weighed = [g.threshold(gain, part, urgent)]
    gates = [
        g.mode(part),
        g.Gate(
            "rollout",
            not rolling,
            "no rollout in progress"
            if not rolling
            else f"{len(rolling)} node(s) still rolling out: {', '.join(rolling[:5])}",
        ),
        *weighed,
        h.window_gate(win, now, part, urgent, adds=g.added_profiles(cur_cap, new_cap)),
        g.min_dwell(changing, state.node_last_change(), now, part),
        g.daily_budget(len(changing), g.changes_last_day((t for _, t in state.changes), now), part),
        g.backoff(failures, last_failure, now, part),
    ]
    ok = bool(wanted) and g.all_passed(gates)
    new_state = State(
        updated=now,
        history=h.record(state.history, current_sample, part),
        last_change=now if ok else state.last_change,
        changes=state.changes + (tuple((n, now) for n in changing) if ok else ()),
        failures=failures,
        last_failure=last_failure,
    )
    old = {w.name: w.replicas for w in policy.workloads}
    return Recommendation(
        now=now,
        demand=tuple(sorted((t, p, r, q) for (t, p), (r, q) in demand.items())),
        current=tuple(cur_cap.items()),
        proposed=tuple(new_cap.items()),
        replicas=tuple((k, old[k], v) for k, v in sorted(wanted.items())),
        nodes=tuple(changing),
        gain=gain,
        gates=tuple(gates),
        rules=tuple(r.name for r in fired),
        urgent=urgent,
        state=new_state,
        diagnostics=tuple(diags) + solution.diagnostics,
        rule_effects=tuple(effects),
        since=win.since,
        covered=win.covered,
        window_seconds=part.stabilization_seconds,
        keep=tuple((t, p, n) for (t, p), n in sorted(keep.items())),
        keep_covered=keep_covered,
        keep_seconds=h.longest(part),
        disruption=disruption,
        benefit=benefit,
        served_pending=served_pending,
        node_costs=node_costs,
        drain_grace_seconds=drain_grace_seconds,
        reconfigure_seconds=reconfigure_seconds,
        window=tuple(
            (t, p, r, q, st.samples, st.low, st.mean, st.high, sized[(t, p)])
            for (t, p), st in sorted(stats.items())
            for r, q in [demand.get((t, p), [0, 0])]
        ),
        node_plan=tuple(
            sorted(
                (n.name, len(n.changed_gpus), layout_text(n.current), layout_text(n.gpus))
                for pool in solution.pools
                for n in pool.nodes
                if n.changed
            )
        ),
    )


def disruption_markdown(rec: Recommendation) -> list[str]:
    """The disruption rule's evidence: benefit, cost per changed node, verdict (none when it is off)."""
    if rec.disruption != "expected":
        return []
    grace = g.duration_text(rec.drain_grace_seconds)
    lines = [
        "### Disruption (is the change worth its drains?)",
        "",
        f"**Benefit:** the proposal serves {rec.served_pending} pending instance(s); the GPU-time they "
        f"have waited, Σ f × W = {rec.benefit:,.0f} GPU-s, is what it avoids.",
        "",
        f"**Cost** per changed node: Σ over its running GPU pods of f × E² / (E + G), G = {grace} "
        f"(the controller's drain grace), plus the outage (its GPUs × {rec.reconfigure_seconds:g} s × "
        "GPUs changed), plus the wait it displaces: Σ f × W₀ over the running pods the node keeps no "
        "instance for, W₀ how long each waited before it started.",
        "",
        "| node | GPUs changed | running GPU pods | expected loss (GPU-s) | outage (GPU-s) "
        "| displaced wait (GPU-s) | cost (GPU-s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for d in rec.node_costs[:MAX_PLAN_ROWS]:
        loss = "unknown" if d.loss is None else f"{d.loss:,.0f}"
        cost = "unknown" if d.cost is None else f"{d.cost:,.0f}"
        cells = (d.node, d.changed_gpus, d.running, loss, f"{d.outage:,.0f}", f"{d.displaced:,.0f}", cost)
        lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
    if len(rec.node_costs) > MAX_PLAN_ROWS:
        lines.append(f"| … {len(rec.node_costs) - MAX_PLAN_ROWS} more node(s) | | | | | | |")
    if not rec.node_costs:
        lines.append("| – | 0 | 0 | 0 | 0 | 0 | 0 |")
    gate = next((x for x in rec.gates if x.name == "disruption"), None)
    if gate is not None and not rec.node_costs:
        # no node changes: there is no drain to weigh, so no verdict on one (the gates say why not)
        lines += ["", "**Verdict:** nothing to weigh: the proposal reconfigures no node."]
    elif gate is not None:
        verdict = "worth it" if gate.passed else "**not worth it**"
        lines += ["", f"**Verdict:** {verdict}: {_md(gate.why, 2000)}."]
    return [*lines, ""]


MAX_PLAN_ROWS = 50  # a pull-request body stays readable; `migc plan` lists every node


def evidence_markdown(rec: Recommendation, sources: Sequence[str] = ()) -> str:
    """The pull-request body: demand, capacity, gain, gates, rules and the change."""
    lines = [f"## migc recommend — {rec.now.strftime('%Y-%m-%d %H:%M UTC')}", ""]
    verdict = "**Change proposed.**" if rec.proposed_change else "**No change proposed.**"
    lines += [
        verdict,
        "",
        "### Observed demand (instances)",
        "",
        f"Now, and running + pending over the {g.duration_text(rec.window_seconds)} stabilization window "
        "(samples of earlier runs, held until the next; mean weighted by time).",
        "",
        f"*kept* is the most over the {g.duration_text(rec.keep_seconds)} scaleDownWindow"
        + ("" if rec.keep_covered else " (not covered yet: nothing shrinks below what is declared)")
        + ": capacity is given back no lower.",
        "",
        "| tenant | profile | running | pending | samples | min | mean | max | kept | sized for |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    kept = {(t, p): n for t, p, n in rec.keep}
    lines += [
        f"| {_md(t)} | {_md(p)} | {r} | {q} | {n} | {lo} | {mean:.1f} | {hi} | {kept.get((t, p), 0)} | {s} |"
        for t, p, r, q, n, lo, mean, hi, s in rec.window
    ] or ["| – | – | 0 | 0 | 1 | 0 | 0.0 | 0 | 0 | 0 |"]
    if rec.since is not None:
        since = rec.since.strftime("%Y-%m-%d %H:%M UTC")
        watched = g.duration_text((rec.now - rec.since).total_seconds())
        lines += [
            "",
            f"Demand watched without a gap since {since} ({watched}): "
            + (
                "the window is covered, so each is sized for what persisted through all of it "
                "(declared replicas kept between the window's min and max)."
                if rec.covered
                else "the window is not covered yet, so the declared replicas stay "
                "(only pods past their max wait add instances)."
            ),
        ]
    cur, new = dict(rec.current), dict(rec.proposed)
    lines += ["", "### Capacity (instances)", "", "| profile | current | proposed |", "|---|---:|---:|"]
    lines += [f"| {_md(p)} | {cur.get(p, 0)} | {new.get(p, 0)} |" for p in sorted(set(cur) | set(new))]
    lines += [
        "",
        f"**Gain:** the proposal serves {rec.gain:.1f}% of the slice-weighted demand the current "
        "layout leaves unserved.",
        "",
    ]
    lines += disruption_markdown(rec)
    lines += [
        "### Gates",
        "",
        "| gate | result | why |",
        "|---|---|---|",
    ]
    for gate in rec.gates:
        res = "overridden" if gate.overridden else ("passed" if gate.passed else "**blocked**")
        lines.append(f"| {_md(gate.name)} | {res} | {_md(gate.why, 2000)} |")
    lines += ["", "### Rules fired", ""]
    for name in rec.rules:
        effects = [e for e in rec.rule_effects if e[0] == name]
        lines += [
            f"- {_md(name)}: tenant {_md(tenant)}: +{n} x {_md(profile)} on Workload {_md(workload)}"
            if workload
            else f"- {_md(name)}: tenant {_md(tenant)}: no Workload asking for {_md(profile)} can take it "
            "(in the rule's pools); nothing added (MIGC428)"
            for _, tenant, profile, workload, n in effects
        ] or [f"- {_md(name)}: nothing added (no pending pod it matches waited through the whole window)"]
    if not rec.rules:
        lines.append("- none")
    if rec.urgent:
        lines += ["", "### Pods past their max wait", ""]
        lines += [f"- {_md(k)}" for k in rec.urgent[:MAX_PLAN_ROWS]]
        if len(rec.urgent) > MAX_PLAN_ROWS:
            lines.append(f"- … {len(rec.urgent) - MAX_PLAN_ROWS} more pod(s)")
    lines += ["", "### Change", ""]
    lines += [f"- Workload {_md(w)}: replicas {a} → {b}" for w, a, b in rec.replicas] or ["- none"]
    if rec.nodes:
        lines.append(
            f"- nodes reconfigured: {len(rec.nodes)} ({', '.join(_md(n) for n in rec.nodes[:10])}"
            f"{', …' if len(rec.nodes) > 10 else ''})"
        )
    if rec.node_plan:
        lines += [
            "",
            "### Plan of the change (per node, as `migc compile` will render it)",
            "",
            "| node | GPUs reconfigured | deployed | proposed |",
            "|---|---:|---|---|",
        ]
        lines += [f"| {_md(n)} | {k} | {_md(a)} | {_md(b)} |" for n, k, a, b in rec.node_plan[:MAX_PLAN_ROWS]]
        if len(rec.node_plan) > MAX_PLAN_ROWS:
            lines.append(f"| … {len(rec.node_plan) - MAX_PLAN_ROWS} more node(s) | | | |")
    return "\n".join(lines) + "\n"
