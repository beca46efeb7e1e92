"""Discrete-event replay of a pod trace on a MIG fleet, with the recommend gates in the loop.

Model (documented in docs/simulate.md):

* **Fleet**: ``nodes`` × ``gpus_per_node`` GPUs of one catalog model; each GPU carries one layout
  (a multiset of profiles from :func:`compiler.catalog.layouts.enumerate_layouts`).
* **Scheduler**: after every arrival, departure and finished reconfiguration, pending pods are bound
  per profile in (priority, arrival) order to free instances on nodes that are not reconfiguring; a
  pod that does not fit is skipped for the next one (backfilling). A multi-GPU pod needs its
  full-GPU instances on one node.
* **Re-partitioning** (:func:`cover`): only GPUs with no running pod are re-carved (nothing is
  evicted). GPUs are taken in order of how little of the current demand they serve; each gets the
  catalog layout that serves the most slice-weighted shortage (the demand the fleet cannot serve now
  plus what that GPU served), if that beats its current layout. At most ``max_unavailable`` nodes
  reconfigure at once.
* **Rollout**: a node being re-carved is cordoned for ``drain_seconds + reconfigure_seconds ×
  changed GPUs`` (default 0 + 60 s per GPU: the 30–90 s per GPU seen in practice); its new layout
  counts once it is back.
* **Policies** (``--baseline``): ``naive`` re-partitions whenever a pod is left pending (no gates);
  ``default`` runs the recommend loop every ``interval`` with the real gates of
  :mod:`compiler.recommend.gates` (threshold, stabilizationWindow, minDwell, dailyChangeBudget,
  max-wait urgency, rules); ``static-balanced`` keeps the model's all-balanced layout;
  ``static-optimal`` keeps the layout that covers the trace's time-averaged demand, scaled to the fleet.
  Dynamic policies start from all-balanced.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from compiler.catalog import GpuModel
from compiler.catalog.layouts import enumerate_layouts
from compiler.model import PartitionPolicy
from compiler.recommend import gates as g
from compiler.simulate.trace import TracePod, profile_for

EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
BASELINES = ("naive", "default", "static-balanced", "static-optimal")


@dataclass(frozen=True)
class Settings:
    nodes: int
    gpus_per_node: int = 8
    mapping: str = "compute"
    time_scale: float = 1.0
    reconfigure_seconds: float = 60.0
    drain_seconds: float = 0.0
    max_unavailable: int = 1
    max_wait_seconds: int | None = None  # migc.dev/max-wait-time given to every pod (None: no hint)


@dataclass
class Result:
    baseline: str
    hours: float
    reconfigurations: int = 0  # node reconfigurations
    gpu_reconfigurations: int = 0
    gpus_touched: int = 0
    nodes_touched: int = 0
    waits: dict[str, list[float]] = field(default_factory=dict)  # size class → waits (s) of served pods
    never_served: int = 0
    busy_slice_seconds: float = 0.0
    total_slices: int = 0
    evaluations: int = 0
    blocked: dict[str, int] = field(default_factory=dict)  # gate → evaluations it blocked
    rules_fired: int = 0

    @property
    def per_hour(self) -> float:
        return self.reconfigurations / self.hours if self.hours > 0 else 0.0

    @property
    def utilisation(self) -> float:
        denom = self.total_slices * self.hours * 3600
        return self.busy_slice_seconds / denom if denom > 0 else 0.0

    def percentile(self, size: str | None, q: float) -> float:
        vals = sorted(v for k, vs in self.waits.items() if size is None or k == size for v in vs)
        if not vals:
            return 0.0
        i = min(len(vals) - 1, max(0, math.ceil(q / 100 * len(vals)) - 1))
        return vals[i]


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


class _Fleet:
    def __init__(self, model: GpuModel, s: Settings, layout: Layout) -> None:
        self.model = model
        self.s = s
        n = s.nodes * s.gpus_per_node
        self.layout: list[Layout] = [dict(layout) for _ in range(n)]
        self.busy: list[Layout] = [{} for _ in range(n)]
        self.node_busy_until = [0.0] * s.nodes
        self.slices = {p.name: p.compute_slices for p in model.profiles}

    def node(self, gpu: int) -> int:
        return gpu // self.s.gpus_per_node

    def capacity(self) -> Layout:
        out: Layout = {}
        for lay in self.layout:
            for p, c in lay.items():
                out[p] = out.get(p, 0) + c
        return out


@functools.lru_cache(maxsize=200_000)
def _best_layout(model: GpuModel, need: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """The catalog layout serving the most slice-weighted ``need`` (ties: fewer slices, then sorted)."""
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


def cover(
    fleet: _Fleet, demand: Layout, now: float, extra: Layout | None = None
) -> tuple[dict[int, Layout], Layout]:
    """GPUs to re-carve (gpu → new layout) and the resulting capacity; see the module docstring."""
    cap = fleet.capacity()
    want = dict(demand)
    for p, n in (extra or {}).items():
        want[p] = want.get(p, 0) + n
    short = {p: n - cap.get(p, 0) for p, n in want.items() if n > cap.get(p, 0)}
    if not short:
        return {}, cap
    slices = fleet.slices
    spare = {p: max(0, c - want.get(p, 0)) for p, c in cap.items()}
    free_nodes = [i for i in range(fleet.s.nodes) if fleet.node_busy_until[i] <= now]
    cands: list[tuple[int, int]] = []
    for i in free_nodes:
        for gi in range(i * fleet.s.gpus_per_node, (i + 1) * fleet.s.gpus_per_node):
            if any(fleet.busy[gi].values()):
                continue
            lay = fleet.layout[gi]
            # slices of this GPU the demand needs (instances beyond the spare of their profile)
            needed = sum(max(0, c - spare.get(p, 0)) * slices[p] for p, c in lay.items())
            cands.append((needed, gi))
    cands.sort()
    changes: dict[int, Layout] = {}
    nodes: set[int] = set()
    for _, gi in cands:
        if not short:
            break
        node = fleet.node(gi)
        if node not in nodes and len(nodes) >= fleet.s.max_unavailable:
            continue
        old = fleet.layout[gi]
        # what this GPU serves now that nobody else would: removing it adds to the shortage
        lost = {p: max(0, c - spare.get(p, 0)) for p, c in old.items()}
        need = dict(short)
        for p, n in lost.items():
            if n:
                need[p] = need.get(p, 0) + n
        new = dict(_best_layout(fleet.model, _key(need)))
        gain = sum(min(c, need.get(p, 0)) * slices[p] for p, c in new.items())
        keep = sum(n * slices[p] for p, n in lost.items())
        if gain <= keep or new == old:
            continue
        changes[gi] = new
        nodes.add(node)
        for p, c in old.items():
            cap[p] -= c
        for p, c in new.items():
            cap[p] = cap.get(p, 0) + c
        spare = {p: max(0, c - want.get(p, 0)) for p, c in cap.items()}
        short = {p: n - cap.get(p, 0) for p, n in want.items() if n > cap.get(p, 0)}
    return changes, {p: c for p, c in cap.items() if c}


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
_RECONFIGURED, _DEPARTURE, _ARRIVAL, _TICK = 0, 1, 2, 3


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
            if p.count <= s.gpus_per_node:
                self.events.append((p.arrival, self.seq, _ARRIVAL, i))
                self.seq += 1
        heapq.heapify(self.events)
        self.pending: dict[str, list[tuple[int, float, int]]] = {}  # profile → sorted [(-prio, arrival, pod)]
        self.bound: dict[int, list[tuple[int, int]]] = {}  # pod → [(gpu, count)]
        self.pending_since: dict[int, float] = {}
        self.busy_slices = 0
        self.last_t = start
        self.touched_gpus: set[int] = set()
        self.touched_nodes: set[int] = set()
        self.node_last_change: dict[str, dt.datetime] = {}
        self.change_log: list[dt.datetime] = []
        self.first_seen: dt.datetime | None = None
        self.pattern: tuple[str, ...] = ()
        self.pending_layout: dict[int, dict[int, Layout]] = {}  # node → gpu → layout applied when back
        self.interval = float(policy.interval_seconds)
        if baseline == "default":
            self.push(start + self.interval, _TICK, 0)
        self.done = 0

    def push(self, t: float, kind: int, payload: int) -> None:
        heapq.heappush(self.events, (t, self.seq, kind, payload))
        self.seq += 1

    def demand(self) -> Layout:
        d: Layout = {}
        for lay in self.fleet.busy:
            for p, c in lay.items():
                d[p] = d.get(p, 0) + c
        for p, q in self.pending.items():
            d[p] = d.get(p, 0) + sum(self.pods[i].count for _, _, i in q)
        return d

    def try_bind(self, i: int, now: float) -> bool:
        fleet, p, gpn = self.fleet, self.pods[i], self.s.gpus_per_node
        for node in range(self.s.nodes):
            if fleet.node_busy_until[node] > now:
                continue
            free = [
                (gi, fleet.layout[gi].get(p.profile, 0) - fleet.busy[gi].get(p.profile, 0))
                for gi in range(node * gpn, (node + 1) * gpn)
            ]
            if sum(f for _, f in free if f > 0) < p.count:
                continue
            need = p.count
            took: list[tuple[int, int]] = []
            for gi, f in free:
                if need and f > 0:
                    k = min(f, need)
                    fleet.busy[gi][p.profile] = fleet.busy[gi].get(p.profile, 0) + k
                    took.append((gi, k))
                    need -= k
            self.bound[i] = took
            self.busy_slices += fleet.slices[p.profile] * p.count
            return True
        return False

    def free_counts(self, now: float) -> Layout:
        out: Layout = {}
        fleet, gpn = self.fleet, self.s.gpus_per_node
        for node in range(self.s.nodes):
            if fleet.node_busy_until[node] > now:
                continue
            for gi in range(node * gpn, (node + 1) * gpn):
                busy = fleet.busy[gi]
                for p, c in fleet.layout[gi].items():
                    f = c - busy.get(p, 0)
                    if f > 0:
                        out[p] = out.get(p, 0) + f
        return out

    def schedule(self, now: float) -> None:
        if not self.pending:
            return
        free = self.free_counts(now)
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
        for n, item in enumerate(q):
            i = item[2]
            if free.get(prof, 0) <= 0:
                kept.extend(q[n:])
                break
            if pods[i].count <= free.get(prof, 0) and self.try_bind(i, now):
                free[prof] -= pods[i].count
                self.res.waits.setdefault(pods[i].size, []).append(now - pods[i].arrival)
                self.pending_since.pop(i, None)
                self.push(now + pods[i].src.duration, _DEPARTURE, i)
            else:
                kept.append(item)
        return kept

    def apply(self, changes: dict[int, Layout], now: float) -> None:
        fleet, s, res = self.fleet, self.s, self.res
        by_node: dict[int, dict[int, Layout]] = {}
        for gi, lay in changes.items():
            by_node.setdefault(fleet.node(gi), {})[gi] = lay
        for node, gl in sorted(by_node.items()):
            cost = s.drain_seconds + s.reconfigure_seconds * len(gl)
            fleet.node_busy_until[node] = now + cost
            for gi in gl:
                fleet.layout[gi] = {}  # carved away while the node is out
            self.pending_layout[node] = gl
            self.push(now + cost, _RECONFIGURED, node)
            res.reconfigurations += 1
            res.gpu_reconfigurations += len(gl)
            self.touched_gpus.update(gl)
            self.touched_nodes.add(node)
            when = EPOCH + dt.timedelta(seconds=now)
            self.node_last_change[f"node-{node}"] = when
            self.change_log.append(when)

    def _waiting(self, now: float) -> list[g.PendingPod]:
        """The pending pods as the gates see them (none where neither max-wait nor rules need them)."""
        if self.s.max_wait_seconds is None and not self.policy.rules:
            return []
        mem = {p.name: p.memory_gb for p in self.model.profiles}
        pods = self.pods
        return [
            g.PendingPod(pods[i].src.name, p, now - pods[i].arrival, self.s.max_wait_seconds, mem.get(p))
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

    def evaluate(self, now: float) -> None:
        """One recommend evaluation: the cover of the demand, applied where every gate passes."""
        res, policy = self.res, self.policy
        res.evaluations += 1
        when = EPOCH + dt.timedelta(seconds=now)
        if not self.pending:  # nothing waits: nothing is short, the pattern ends
            self.first_seen, self.pattern = None, ()
            return
        waiting = self._waiting(now)
        extra = self._rule_extra(waiting)
        d = self.demand()
        cur = self.fleet.capacity()
        changes, new_cap = cover(self.fleet, d, now, extra)
        if not changes:
            self.first_seen, self.pattern = None, ()
            return
        short = tuple(sorted(p for p, n in d.items() if n > cur.get(p, 0)))
        if short != self.pattern:
            self.pattern, self.first_seen = short, when
        gain = g.gain_pct(cur, new_cap, d, self.fleet.slices)
        urgent = g.urgent_pods(waiting, cur, new_cap)
        nodes = sorted({f"node-{self.fleet.node(gi)}" for gi in changes})
        checks = [
            g.threshold(gain, policy, urgent),
            g.stabilization(self.first_seen, when, policy, urgent),
            g.min_dwell(nodes, self.node_last_change, when, policy),
            g.daily_budget(
                len(nodes),
                g.changes_last_day(self.change_log[-max(policy.daily_change_budget, 1) * 2 :], when),
                policy,
            ),
        ]
        failed = [c.name for c in checks if not c.passed]
        for name in failed:
            res.blocked[name] = res.blocked.get(name, 0) + 1
        if not failed:
            self.apply(changes, now)
            self.first_seen, self.pattern = None, ()

    def _handle(self, t: float, kind: int, x: int, progress: Callable[[float], None] | None) -> None:
        """The state change of one arrival, departure or finished reconfiguration."""
        if kind == _ARRIVAL:
            p = self.pods[x]
            bisect.insort(self.pending.setdefault(p.profile, []), (-p.src.priority, p.arrival, x))
            self.pending_since[x] = t
            self.done += 1
            if progress and self.done % 500 == 0:
                progress(self.done / len(self.pods))
        elif kind == _DEPARTURE:
            pod = self.pods[x]
            for gi, k in self.bound.pop(x):
                self.fleet.busy[gi][pod.profile] -= k
            self.busy_slices -= self.fleet.slices[pod.profile] * pod.count
        elif kind == _RECONFIGURED:
            for gi, lay in self.pending_layout.pop(x, {}).items():
                self.fleet.layout[gi] = lay

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
            t, _, kind, x = heapq.heappop(events)
            if kind != _TICK:
                last_activity = t
            self.res.busy_slice_seconds += self.busy_slices * (t - self.last_t)
            self.last_t = t
            self._handle(t, kind, x, progress)
            self.schedule(t)
            if kind == _TICK:
                if not self._tick(t, last_activity, horizon):
                    break
            elif self.baseline == "naive" and self.pending:
                changes, _ = cover(self.fleet, self.demand(), t)
                if changes:
                    self.apply(changes, t)
                    self.schedule(t)


def simulate(
    trace: Sequence[TracePod],
    model: GpuModel,
    s: Settings,
    baseline: str,
    policy: PartitionPolicy,
    progress: Callable[[float], None] | None = None,
) -> Result:
    pods = _trace_pods(trace, model, s)
    start = min((p.arrival for p in pods), default=0.0)
    end_arrival = max((p.arrival for p in pods), default=0.0)
    span = max(end_arrival - start, 1.0)
    if baseline == "static-optimal":
        layouts = optimal_static(model, s, average_demand(pods, span))
        fleet = _Fleet(model, s, {})
        fleet.layout = layouts
    else:
        fleet = _Fleet(model, s, balanced_layout(model))
    res = Result(baseline, hours=0.0, total_slices=s.nodes * s.gpus_per_node * model.compute_slices)
    too_big = [p for p in pods if p.count > s.gpus_per_node]
    run = _Run(pods, model, s, baseline, policy, fleet, res, start)
    run.run(progress)
    res.hours = max(run.last_t - start, 1.0) / 3600
    res.never_served = sum(len(q) for q in run.pending.values()) + len(too_big)
    res.gpus_touched = len(run.touched_gpus)
    res.nodes_touched = len(run.touched_nodes)
    return res
