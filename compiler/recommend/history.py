"""Demand history over the stabilization window, and the demand a proposal is sized for (pure).

Each ``migc recommend`` run observes, per (tenant, profile), the running and pending instances: a
:class:`Sample`. The samples of earlier runs live in the ObservedDemand state file
(:mod:`compiler.recommend.state`); this module decides which of them to keep and what they say.

* **Sample-and-hold**: a sample's counts are taken to hold until the next sample. The *window* at
  ``now`` is ``[now − stabilizationWindow, now]``; its samples are the one in force at the window's
  start (the newest at or before it), every later one, and the observation of this run.
* **Continuity**: a gap longer than :func:`stale_after` (three intervals, at
  least the window) between two samples, or between the newest and now, breaks the history; what
  lies before the gap is dropped.
* **Covered**: the window is covered when a continuous sample is in force at its start, i.e. the
  demand has been watched for the whole window. Until then the stabilizationWindow gate blocks.
* **Persisted shortage** (the stabilizationWindow gate, :func:`window_gate`): the window is covered
  and every profile the proposal adds capacity for that is short now had a pending pod in every one
  of the window's samples.
* **Sizing** (per (tenant, profile), in instances; ``declared`` is what the Workloads ask for now):
  ``sized = clamp(declared, min, max(max, keep))``, ``min`` / ``max`` of running + pending over the
  window when it is covered (else ``sized = declared``) and ``keep`` the most running + pending at any
  sample of the last ``scaleDownWindow`` (:func:`peaks`; ``max(keep, declared)`` until the history
  covers that window); then, when ``u`` pending pods of that key are past their max wait,
  ``sized = max(sized, min(now, min + u))``. Capacity therefore grows only to the demand that
  persisted for the whole window (a burst shorter than the window never counts) and shrinks only to
  the peak of the scaleDownWindow (Kubernetes HPA's scale-down stabilization: demand that comes back
  within a day finds its capacity there, so a daily peak does not re-carve nodes twice a day).
* **The remembered surplus comes last** (:func:`capped`): the window's memory may keep capacity
  nobody is asking for, but never against a pod that is waiting now. Of a key's ``sized``, the part
  up to its running + pending now is *current* demand; the rest (``sized − now``: the scaleDownWindow's
  peak, or a declared capacity above the demand) is the *surplus*, served only with capacity left
  after all current demand of every key: the fleet's compute slices minus the slices of every key's
  running + pending now (the pods that wait now count even before their shortage has persisted
  through the window). What is left is handed out one instance at a time, keys in turn (sorted
  order), while the instance's slices fit; the rest of the surplus is cut. Slices are a measure, not
  a packing: a GPU's placement rules may leave a slice dark, so a surplus that fits by slices may
  still not fit on the GPUs (the cut errs toward keeping memory, never toward cutting current demand).
  ``migc recommend`` (``recommend(surplus="last")``, as Workload replicas: a lower priority than the
  current demand cannot be said in replicas without a new Workload, so the cut is applied) and
  ``migc simulate``'s default loop (``Settings.surplus="last"``) size this way when asked; the
  default of both is ``"kept"`` (:data:`SURPLUS_MODELS`): measured in bench/RESULTS.md Round 9, the
  cut holds fewer idle GPUs but loses a matrix cell's overall p95, so it did not land.
* **Bounds**: a sample is stored at most every :func:`spacing` (half an interval, at least
  window / (MAX_SAMPLES − 4)); a run sooner than that still evaluates its own observation (which
  only widens the window's min–max) but stores nothing. Samples older than the one in force at the
  window's start only serve the scaleDownWindow peak: they are merged into buckets of
  :func:`bucket` seconds (aligned to the epoch; a bucket's counts are the most of each key, its time
  its oldest sample's), and those older than the one in force at the scaleDownWindow's start are
  pruned; at most MAX_SAMPLES are kept, and only keys with demand are written.
  Should a history still exceed MAX_HISTORY_BYTES (a very large fleet), the oldest samples are
  dropped: the window is then not covered and no change is proposed (safe, and the gate says why).
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from compiler.catalog import Catalog
from compiler.formatting import duration
from compiler.model import PartitionPolicy, Policy
from compiler.recommend import gates as g

MAX_SAMPLES = 100
# about what the history may take in the state file: parsing and writing YAML of this size takes a few
# seconds (ruamel, pure Python); the default 10m window with a 15m interval holds only 2 samples anyway
MAX_HISTORY_BYTES = 512 * 1024

Key = tuple[str, str]  # (tenant, profile)
# how the remembered surplus is sized (:func:`capped`): "kept", as much as current demand (the
# default: bench/RESULTS.md Round 9); "last", only with the room current demand leaves
# "busy" (migc simulate only): "last", but the surplus first keeps the capacity it holds on busy nodes
SURPLUS_MODELS = ("kept", "last", "busy")


@dataclass(frozen=True)
class Sample:
    at: dt.datetime
    counts: tuple[tuple[str, str, int, int], ...]  # (tenant, profile, running, pending), sorted, non-zero

    def total(self, key: Key) -> int:
        for t, p, r, q in self.counts:
            if (t, p) == key:
                return r + q
        return 0

    def totals(self) -> dict[Key, int]:
        return {(t, p): r + q for t, p, r, q in self.counts}

    def pending(self, tenant: str, profile: str | None) -> int:
        """Pending instances of ``tenant`` (of ``profile``, or every profile); the counts are sorted."""
        counts = self.counts
        i = bisect.bisect_left(counts, (tenant,))
        total = 0
        while i < len(counts) and counts[i][0] == tenant:
            if profile is None or counts[i][1] == profile:
                total += counts[i][3]
            i += 1
        return total


@dataclass(frozen=True)
class Stats:
    """Running + pending instances of one (tenant, profile) over the window."""

    samples: int
    low: int
    mean: float  # time-weighted (sample-and-hold) over the part of the window the samples cover
    high: int


@dataclass(frozen=True)
class Window:
    samples: tuple[Sample, ...]  # the in-force one at the start, the later ones, this run's
    covered: bool
    since: dt.datetime  # oldest continuous sample (this run's time when there is none)


def sample(at: dt.datetime, demand: Mapping[Key, Sequence[int]]) -> Sample:
    """The sample of one observation: ``demand`` is (tenant, profile) → [running, pending]."""
    rows = sorted((t, p, int(v[0]), int(v[1])) for (t, p), v in demand.items() if v[0] + v[1] > 0)
    return Sample(at, tuple(rows))


def stale_after(policy: PartitionPolicy) -> float:
    """Seconds after which the history no longer proves continuity: three intervals, at least the window."""
    return float(max(3 * policy.interval_seconds, policy.stabilization_seconds))


def spacing(policy: PartitionPolicy) -> float:
    """The least time between two stored samples."""
    return max(policy.interval_seconds / 2, policy.stabilization_seconds / (MAX_SAMPLES - 4))


def continuous(history: Sequence[Sample], now: dt.datetime, policy: PartitionPolicy) -> tuple[Sample, ...]:
    """The samples of ``history`` (oldest first) not cut off from ``now`` by a gap (later ones: dropped)."""
    limit = stale_after(policy)
    kept: list[Sample] = []
    after = now
    for s in sorted((s for s in history if s.at <= now), key=lambda s: s.at, reverse=True):
        if (after - s.at).total_seconds() > limit:
            break
        kept.append(s)
        after = s.at
    return tuple(reversed(kept))


def longest(policy: PartitionPolicy) -> int:
    """The history must reach back this far: the longer of the two windows."""
    return max(policy.stabilization_seconds, policy.scale_down_seconds)


def bucket(policy: PartitionPolicy) -> float:
    """Width of the buckets older samples are merged into (only their peak is used)."""
    return max(policy.interval_seconds, longest(policy) / (MAX_SAMPLES // 2))


def _in_force_at(hist: Sequence[Sample], at: dt.datetime) -> int | None:
    """Index of the sample of ``hist`` (oldest first) in force at ``at``: the newest at or before it."""
    i = bisect.bisect_right([s.at for s in hist], at)
    return i - 1 if i else None


def _span(
    history: Sequence[Sample], current: Sample, policy: PartitionPolicy, seconds: int
) -> tuple[list[Sample], tuple[Sample, ...], bool]:
    """The continuous history before ``current``; the samples of the last ``seconds`` (the one in force
    at their start, every later one, ``current``); whether a sample is in force at the start."""
    hist = [s for s in continuous(history, current.at, policy) if s.at < current.at]
    first = _in_force_at(hist, current.at - dt.timedelta(seconds=seconds))
    # nothing in force at the start: every sample is after it
    return hist, (*hist[first or 0 :], current), first is not None or seconds == 0


def peaks(history: Sequence[Sample], current: Sample, policy: PartitionPolicy) -> tuple[dict[Key, int], bool]:
    """Per (tenant, profile), the most running + pending at any sample of the scaleDownWindow (the one
    in force at its start, every later one, this run's), and whether the history covers that window."""
    _, samples, covered = _span(history, current, policy, longest(policy))
    out: dict[Key, int] = {}
    for s in samples:
        for key, n in s.totals().items():
            out[key] = max(out.get(key, 0), n)
    return out, covered


def window(history: Sequence[Sample], current: Sample, policy: PartitionPolicy) -> Window:
    """The window at ``current.at`` over the continuous ``history`` plus this run's ``current`` sample."""
    hist, samples, covered = _span(history, current, policy, policy.stabilization_seconds)
    return Window(samples, covered, hist[0].at if hist else current.at)


def stats(win: Window, now: dt.datetime, policy: PartitionPolicy) -> dict[Key, Stats]:
    """Per (tenant, profile) seen in the window: samples, min, time-weighted mean and max of the total."""
    totals = [s.totals() for s in win.samples]
    keys = sorted({k for t in totals for k in t})
    start = now - dt.timedelta(seconds=policy.stabilization_seconds)
    pairs = zip(win.samples, win.samples[1:], strict=False)
    held = [(nxt.at - max(s.at, start)).total_seconds() for s, nxt in pairs]  # how long each held
    span = sum(held)
    out: dict[Key, Stats] = {}
    for key in keys:
        values = [t.get(key, 0) for t in totals]
        weighted = sum(v * x for v, x in zip(values, held, strict=False))  # the last sample holds 0s
        mean = weighted / span if span > 0 else float(values[-1])
        out[key] = Stats(len(values), min(values), mean, max(values))
    return out


def sized(
    declared: int,
    st: Stats | None,
    covered: bool,
    now_total: int,
    urgent: int,
    keep: tuple[int, bool] | None = None,
) -> int:
    """Instances a (tenant, profile) is sized for (the rule in the module docstring).

    ``keep``: the key's peak over the scaleDownWindow and whether the history covers that window
    (:func:`peaks`); None: no scale-down window (the stabilizationWindow's peak alone)."""
    low = st.low if st is not None else now_total
    high = st.high if st is not None else now_total
    if keep is not None:
        peak, whole = keep
        high = max(high, peak if whole else max(peak, declared))
    out = min(max(declared, low), high) if covered else declared
    if urgent > 0:
        out = max(out, min(now_total, low + urgent))
    return out


def capped(
    sized: Mapping[Key, int],
    now: Mapping[Key, int],
    slices: Mapping[str, int],
    room: int | None,
    held: Mapping[Key, int] | None = None,
) -> dict[Key, int]:
    """``sized`` with each key's surplus over its running + pending ``now`` cut to the ``room``
    (the fleet's compute slices; None: unknown, nothing is cut) left after every key's current demand
    (module docstring, "The remembered surplus comes last"). A profile missing from ``slices`` counts
    7 slices (a whole GPU). ``held``: per key, surplus instances kept first whatever the room (the
    capacity it already holds on busy nodes, whose re-carve would evict; their slices are taken from
    the room before the rest is handed out)."""
    out = {k: min(n, now.get(k, 0)) for k, n in sized.items()}
    if room is None:
        return dict(sized)
    free = room - sum(n * slices.get(k[1], 7) for k, n in now.items() if n > 0)
    for k, n in (held or {}).items():
        if k in out and n > 0:
            got = min(n, sized[k] - out[k])
            out[k] += got
            free -= got * slices.get(k[1], 7)
    left = {k: n - out[k] for k, n in sorted(sized.items()) if n > out[k]}
    while left and free > 0:
        granted = False
        for k in list(left):
            cost = slices.get(k[1], 7)
            if cost > free:
                continue
            out[k] += 1
            free -= cost
            granted = True
            left[k] -= 1
            if not left[k]:
                del left[k]
        if not granted:
            break
    return out


def room(policy: Policy, catalog: Catalog) -> int | None:
    """The fleet's compute slices (:func:`capped`'s ``room``): per pool, nodes × GPUs × its model's
    compute slices (7, a whole GPU as ``migc recommend`` counts one, where the model has no MIG); None
    for an empty fleet."""
    total = 0
    for c in policy.clusters:
        for pool in c.pools:
            model = catalog.get(pool.gpu_model)
            per = model.compute_slices if model is not None and model.compute_slices > 0 else 7
            total += len(pool.node_names) * pool.gpus_per_node * per
    return total or None


def pending_low(win: Window, tenant: str, profile: str | None) -> int:
    """The least pending instances of ``tenant`` (of ``profile``, or all) over the window; 0 if not covered.

    What a rule's headroom counts: pending pods that persisted through the whole window.
    """
    if not win.covered:
        return 0
    return min(s.pending(tenant, profile) for s in win.samples)


def record(
    history: Sequence[Sample],
    current: Sample,
    policy: PartitionPolicy,
    max_bytes: int = MAX_HISTORY_BYTES,
) -> tuple[Sample, ...]:
    """The history to store after this run: continuous, pruned to the window, capped (module docstring)."""
    hist = [s for s in continuous(history, current.at, policy) if s.at < current.at]
    if not hist or (current.at - hist[-1].at).total_seconds() >= spacing(policy):
        hist.append(current)
    far = _in_force_at(hist, current.at - dt.timedelta(seconds=longest(policy)))
    hist = hist[far or 0 :]
    cut = _in_force_at(hist, current.at - dt.timedelta(seconds=policy.stabilization_seconds))
    if cut:  # older than the window's in-force sample: only their peak is used
        hist = merged(hist[:cut], bucket(policy)) + hist[cut:]
    hist = hist[-MAX_SAMPLES:]
    size = sum(sample_bytes(s) for s in hist)
    while len(hist) > 1 and size > max_bytes:
        size -= sample_bytes(hist[0])
        hist = hist[1:]
    return tuple(hist)


def merged(samples: Sequence[Sample], width: float) -> list[Sample]:
    """``samples`` (oldest first) merged per bucket of ``width`` seconds since the epoch: the bucket's
    time is its oldest sample's, its counts the most of each key's running and pending."""
    out: list[Sample] = []
    slot: float | None = None
    for s in samples:
        b = s.at.timestamp() // width
        if out and b == slot:
            most: dict[Key, tuple[int, int]] = {(t, p): (r, q) for t, p, r, q in out[-1].counts}
            for t, p, r, q in s.counts:
                r0, q0 = most.get((t, p), (0, 0))
                most[(t, p)] = (max(r0, r), max(q0, q))
            out[-1] = Sample(out[-1].at, tuple(sorted((t, p, r, q) for (t, p), (r, q) in most.items())))
        else:
            out.append(s)
            slot = b
    return out


def sample_bytes(s: Sample) -> int:
    """At least what one sample takes in the YAML of the state file (counts below 10^6)."""
    return 40 + sum(len(t) + len(p) + 27 for t, p, _, _ in s.counts)


def short_in(sample: Sample) -> frozenset[str]:
    """Profiles short in ``sample``: some pod of them (any tenant) was pending.

    The one shortage the history can show honestly: it holds running and pending per (tenant,
    profile), not the capacity deployed at the time.
    """
    return frozenset(c[1] for c in sample.counts if c[3] > 0)


def short_through(win: Window, profiles: Iterable[str]) -> tuple[str, ...]:
    """Of ``profiles``, those *not* short in every sample of the window (sorted)."""
    short = [short_in(s) for s in win.samples]
    return tuple(p for p in sorted(set(profiles)) if not all(p in x for x in short))


def change_gates(
    win: Window,
    now: dt.datetime,
    policy: PartitionPolicy,
    urgent: Iterable[str],
    current: Mapping[str, int],
    proposed: Mapping[str, int],
    changing: Sequence[str],
    last_change: Mapping[str, dt.datetime],
    recent_changes: Iterable[dt.datetime],
    failures: tuple[int, dt.datetime | None],
) -> list[g.Gate]:
    """The gates every change passes after the mode, rollout and threshold-or-disruption ones, in the
    order the evidence lists them: stabilizationWindow (:func:`window_gate`), minDwell,
    dailyChangeBudget, backoff. The one list ``migc recommend`` (compiler/recommend/engine.py) and the
    replay's loop (compiler/simulate/engine.py) both ask, so the two cannot drift apart.
    ``changing``: the names of the nodes the change touches; ``recent_changes``: when nodes changed
    (at least those of the last day); ``failures``: (count, time of the last) as
    :func:`compiler.recommend.gates.count_failures` keeps them."""
    return [
        window_gate(win, now, policy, urgent, adds=g.added_profiles(current, proposed)),
        g.min_dwell(changing, last_change, now, policy),
        g.daily_budget(len(changing), g.changes_last_day(recent_changes, now), policy),
        g.backoff(*failures, now, policy),
    ]


def window_gate(
    win: Window,
    now: dt.datetime,
    policy: PartitionPolicy,
    urgent: Iterable[str] = (),
    *,
    adds: Iterable[str] = (),
) -> g.Gate:
    """stabilizationWindow: the shortage the proposal serves persisted through the whole window.

    Passes when the history covers the window *and* every profile the proposal adds capacity for
    (``adds``) that is short now (this run's sample has a pending pod of it) was short in every
    sample of the window: the one in force at the window's start, every later one, and this run's.
    A burst shorter than the window (in effect max(window, interval): a shortage must be seen by
    consecutive runs) never passes. Capacity a proposal adds for a profile nobody waits for now is a
    by-product of re-carving a GPU, not a shortage: it serves no pending pod (the threshold or the
    disruption rule weighs it) and does not hold the change back. A pod past its max wait overrides.
    One rule for ``migc recommend`` and ``migc simulate``'s default loop.
    """
    w = policy.stabilization_seconds
    watched = (now - win.since).total_seconds()
    n = len(win.samples)
    pods = tuple(urgent)
    now_short = short_in(win.samples[-1]) if win.samples else frozenset()
    serves = sorted(p for p in set(adds) if p in now_short)
    if win.covered:
        brief = short_through(win, serves)
        if not brief:
            short = f"; {', '.join(serves)} short in every one" if serves else ""
            return g.Gate(
                "stabilizationWindow",
                True,
                f"demand watched for {duration(watched)} >= {duration(w)} "
                f"({n} sample(s) in the window{short})",
            )
        why = (
            f"{', '.join(brief)} not short (no pending pod) in all {n} sample(s) "
            f"of the {duration(w)} window"
        )
    else:
        why = f"demand watched for {duration(watched)} < {duration(w)}"
    if pods:
        text = f"{why}, overridden: {len(pods)} pod(s) past max-wait"
        return g.Gate("stabilizationWindow", True, text, overridden=True)
    return g.Gate("stabilizationWindow", False, why)
