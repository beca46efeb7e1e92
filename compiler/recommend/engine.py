"""``recommend``: observed demand → Workload replicas → the real solver → gates → a proposal (pure).

How observed pods become a policy change (documented in docs/recommend.md):

1. Every running or pending pod asking for ``nvidia.com/mig-<profile>`` (or whole ``nvidia.com/gpu``)
   belongs to the Tenant listing its namespace; its demand is counted per (tenant, profile).
2. Each (tenant, profile) maps to the tenant's Workloads whose ``need`` names that profile (first
   in the preference list counts; whole-GPU workloads count GPUs ÷ ``need.gpus``). The wanted replicas
   of that group equal the observed instances; the difference goes to the group's first Workload by
   name (never below 0). Demand no Workload describes is reported (MIGC424), never invented.
3. A rule whose ``when`` holds on the pending pods asks for headroom for its ``prefer.maximize``
   profile: each tenant's Workloads of that profile are provisioned for the observed instances *plus*
   the tenant's pending pods that matched the rule (more instances of that profile in the proposal).
   A rule with ``pools`` gives its headroom only to a Workload whose replicas can land on nothing but
   those pools (its ``pools`` are among the rule's, or every pool of its cluster that has the profile
   is), so the extra instances are carved on the listed pools' GPUs; a tenant with no such Workload
   gets none (MIGC428, and the evidence says so).
4. The proposed policy is solved with the deployed layout as the starting point (the solver's own
   change-minimising objective); gain and gates (:mod:`compiler.recommend.gates`) decide.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from compiler.catalog import Catalog
from compiler.diagnostics import Diagnostic, make
from compiler.model import CurrentState, GpuLayout, Policy, Rule, Workload
from compiler.observe import Observation
from compiler.observe.model import profile_of
from compiler.recommend import gates as g
from compiler.recommend.state import State
from compiler.solve import solve
from compiler.solve.result import Solution


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
    since: dt.datetime | None = None  # the proposal has been wanted continuously since (window start)

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


def _matches(w: Workload, profile: str) -> bool:
    if profile == "gpu":
        return w.need.kind == "gpus"
    return bool(w.need.profiles) and w.need.profiles[0] == profile


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
) -> tuple[dict[str, int], list[Diagnostic], list[tuple[str, str, str, str, int]]]:
    """workload name → replicas wanted (only workloads that change); MIGC424/MIGC428; rule effects.

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
            (w for w in policy.workloads if w.tenant == tenant and _matches(w, profile)), key=lambda w: w.name
        )
        new = {w.name: w.replicas for w in group}
        if (tenant, profile) in demand:
            if not group:
                diags.append(
                    make(
                        "MIGC424",
                        f"tenant {tenant}: {running + pending} x {profile} observed, but no Workload of the "
                        "tenant asks for it",
                    )
                )
            else:
                per = max(group[0].need.gpus if profile == "gpu" else 1, 1)
                observed = -(-(running + pending) // per)
                declared = sum(w.replicas for w in group)
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
            layout = node.gpus if which == "target" else (node.current or ())
            for gpu in layout:
                if not gpu.mig_enabled:
                    out["gpu"] += 1
                for name, n in gpu.profiles:
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


def _fingerprint(replicas: dict[str, int]) -> str:
    text = ";".join(f"{k}={v}" for k, v in sorted(replicas.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def recommend(
    policy: Policy,
    catalog: Catalog,
    current: CurrentState,
    obs: Observation,
    state: State,
    now: dt.datetime,
    *,
    time_limit_s: float = 60.0,
) -> Recommendation:
    part = policy.partition
    slices = _slices(catalog)
    demand, pending, diags = observed_demand(policy, obs)
    fired = g.fired_rules(part.rules, pending)
    owner = _tenant_of(policy)
    headroom: list[tuple[Rule, Mapping[str, int]]] = []
    for r in fired:
        per_tenant: dict[str, int] = defaultdict(int)
        for pod in pending:
            tenant = owner.get(pod.key.split("/", 1)[0])
            if tenant is not None and (r.when.profile is None or pod.profile == r.when.profile):
                per_tenant[tenant] += 1
        headroom.append((r, dict(per_tenant)))
    wanted, more, effects = wanted_replicas(policy, catalog, demand, headroom)
    diags.extend(more)
    new_workloads = tuple(replace(w, replicas=wanted.get(w.name, w.replicas)) for w in policy.workloads)
    proposed_policy = replace(policy, workloads=new_workloads)
    solution = solve(proposed_policy, catalog, current, time_limit_s=time_limit_s)
    cur_cap = capacity(solution, "current")
    new_cap = capacity(solution, "target")
    want = {p: 0 for _, p in demand}
    for (_, p), (running, pend) in demand.items():
        want[p] += running + pend
    gain = g.gain_pct(cur_cap, new_cap, want, slices)
    changing = sorted({n.name for pool in solution.pools for n in pool.nodes if n.changed})
    urgent = g.urgent_pods(pending, cur_cap, new_cap)

    # backoff: a Failed rollout the controller recorded on a node counts once (by its time)
    failures, last_failure = state.failures, state.last_failure
    failed = [
        n.rollout.since for n in obs.nodes if n.rollout.phase == "Failed" and n.rollout.since is not None
    ]
    if failed and (last_failure is None or max(failed) > last_failure):
        failures, last_failure = failures + 1, max(failed)
    elif not failed and state.last_change and last_failure and state.last_change > last_failure:
        failures = 0  # a later change went through
    rolling = sorted(n.name for n in obs.nodes if n.rollout.in_progress and n.rollout.phase != "Failed")

    pattern = _fingerprint(wanted) if wanted else ""
    first_seen = state.first_seen if (pattern and pattern == state.pattern) else (now if pattern else None)
    gates = [
        g.mode(part),
        g.Gate(
            "rollout",
            not rolling,
            "no rollout in progress"
            if not rolling
            else f"{len(rolling)} node(s) still rolling out: {', '.join(rolling[:5])}",
        ),
        g.threshold(gain, part, urgent),
        g.stabilization(first_seen if pattern else now, now, part, urgent),
        g.min_dwell(changing, state.node_last_change(), now, part),
        g.daily_budget(len(changing), g.changes_last_day((t for _, t in state.changes), now), part),
        g.backoff(failures, last_failure, now, part),
    ]
    ok = bool(wanted) and g.all_passed(gates)
    new_state = State(
        updated=now,
        pattern="" if ok else pattern,
        first_seen=None if ok else first_seen,
        demand=tuple(sorted(want.items())),
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
        since=first_seen if pattern else None,
        node_plan=tuple(
            sorted(
                (n.name, len(n.changed_gpus), layout_text(n.current), layout_text(n.gpus))
                for pool in solution.pools
                for n in pool.nodes
                if n.changed
            )
        ),
    )


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
        "| tenant | profile | running | pending |",
        "|---|---|---:|---:|",
    ]
    lines += [f"| {t} | {p} | {r} | {q} |" for t, p, r, q in rec.demand] or ["| – | – | 0 | 0 |"]
    if rec.since is not None and rec.replicas:
        since = rec.since.strftime("%Y-%m-%d %H:%M UTC")
        lines += [
            "",
            f"The capacity this demand needs has been the same since {since} "
            f"({g.duration_text((rec.now - rec.since).total_seconds())}).",
        ]
    cur, new = dict(rec.current), dict(rec.proposed)
    lines += ["", "### Capacity (instances)", "", "| profile | current | proposed |", "|---|---:|---:|"]
    lines += [f"| {p} | {cur.get(p, 0)} | {new.get(p, 0)} |" for p in sorted(set(cur) | set(new))]
    lines += [
        "",
        f"**Gain:** the proposal serves {rec.gain:.1f}% of the slice-weighted demand the current "
        "layout leaves unserved.",
        "",
        "### Gates",
        "",
        "| gate | result | why |",
        "|---|---|---|",
    ]
    for gate in rec.gates:
        res = "overridden" if gate.overridden else ("passed" if gate.passed else "**blocked**")
        lines.append(f"| {gate.name} | {res} | {gate.why} |")
    lines += ["", "### Rules fired", ""]
    for name in rec.rules:
        effects = [e for e in rec.rule_effects if e[0] == name]
        lines += [
            f"- {name}: tenant {tenant}: +{n} x {profile} on Workload {workload}"
            if workload
            else f"- {name}: tenant {tenant}: no Workload asking for {profile} can take it "
            "(in the rule's pools); nothing added (MIGC428)"
            for _, tenant, profile, workload, n in effects
        ] or [f"- {name}: nothing added"]
    if not rec.rules:
        lines.append("- none")
    if rec.urgent:
        lines += ["", "### Pods past their max wait", ""] + [f"- {k}" for k in rec.urgent]
    lines += ["", "### Change", ""]
    lines += [f"- Workload {w}: replicas {a} → {b}" for w, a, b in rec.replicas] or ["- none"]
    if rec.nodes:
        lines.append(
            f"- nodes reconfigured: {len(rec.nodes)} ({', '.join(rec.nodes[:10])}"
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
        lines += [f"| {n} | {k} | {a} | {b} |" for n, k, a, b in rec.node_plan[:MAX_PLAN_ROWS]]
        if len(rec.node_plan) > MAX_PLAN_ROWS:
            lines.append(f"| … {len(rec.node_plan) - MAX_PLAN_ROWS} more node(s) | | | |")
    return "\n".join(lines) + "\n"
