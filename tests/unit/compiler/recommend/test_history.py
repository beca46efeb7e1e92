"""Demand history over the stabilization window: which samples count, their statistics, the sizing rule,
and the bounds on what the state file keeps (compiler/recommend/history.py, docs/recommend.md)."""

from __future__ import annotations

import datetime as dt

import pytest

from compiler.model import PartitionPolicy
from compiler.recommend import history as h
from compiler.recommend.state import STATE_LIMIT, State, dump_state

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
P = PartitionPolicy(mode="dynamic", interval_seconds=300, stabilization_seconds=600)  # 5m, 10m
KEY = ("ml", "1g.10gb")


def at(minutes_ago: float) -> dt.datetime:
    return NOW - dt.timedelta(minutes=minutes_ago)


def s(minutes_ago: float, running: int, pending: int = 0) -> h.Sample:
    return h.sample(at(minutes_ago), {KEY: [running, pending]})


def test_the_window_holds_the_sample_in_force_at_its_start_and_every_later_one() -> None:
    hist = (s(25, 1), s(15, 2), s(11, 3), s(6, 4), s(1, 5))
    win = h.window(hist, s(0, 6), P)
    # 12:00 - 10m = 11:50: 11:49 (3) is in force then; 11:45 and 11:35 are not in the window
    assert [x.total(KEY) for x in win.samples] == [3, 4, 5, 6]
    assert win.covered and win.since == at(25)


def test_the_window_is_covered_only_when_a_sample_is_in_force_at_its_start() -> None:
    assert not h.window((s(9, 2),), s(0, 2), P).covered  # watched 9 minutes of 10
    assert h.window((s(10, 2),), s(0, 2), P).covered  # exactly the window
    assert not h.window((), s(0, 2), P).covered
    zero = PartitionPolicy(mode="dynamic", stabilization_seconds=0)
    assert h.window((), s(0, 2), zero).covered  # no window: nothing to wait for


def test_a_gap_longer_than_three_intervals_cuts_the_history() -> None:
    # stale after max(3 x 5m, 10m) = 15m: the gap 11:29 -> 11:45 (16m) cuts what lies before it
    hist = (s(40, 9), s(31, 9), s(15, 2), s(5, 2))
    assert h.continuous(hist, NOW, P) == (s(15, 2), s(5, 2))
    assert h.continuous((s(16, 2),), NOW, P) == ()  # the newest is too old itself
    assert h.continuous((s(15, 2),), NOW, P) == (s(15, 2),)
    assert h.continuous((s(5, 2), h.sample(NOW + dt.timedelta(minutes=1), {})), NOW, P) == (s(5, 2),)


def test_stats_are_min_time_weighted_mean_and_max_of_running_plus_pending() -> None:
    # window 11:50-12:00: 11:48 holds 10 until 11:52 (2m), 11:52 holds 20 for 6m, 11:58 holds 4 for 2m
    win = h.window((s(12, 10), s(8, 15, 5), s(2, 4)), s(0, 30), P)
    st = h.stats(win, NOW, P)[KEY]
    assert (st.samples, st.low, st.high) == (4, 4, 30)
    assert st.mean == pytest.approx((10 * 2 + 20 * 6 + 4 * 2) / 10)
    # a key seen in some samples only counts 0 in the others
    other = h.sample(at(5), {("web", "gpu"): [2, 0]})
    both = h.stats(h.window((s(12, 1), other), s(0, 1), P), NOW, P)
    assert both[("web", "gpu")].low == 0 and both[("web", "gpu")].high == 2
    # nothing before this run: the mean is the observation
    assert h.stats(h.window((), s(0, 7), P), NOW, P)[KEY].mean == 7.0


@pytest.mark.parametrize(
    ("declared", "low", "high", "covered", "now", "urgent", "sized"),
    [
        (10, 18, 25, True, 20, 0, 18),  # demand above the declared all window: grow to the min
        (10, 8, 25, True, 20, 0, 10),  # a burst: the min is below the declared: keep
        (10, 4, 8, True, 6, 0, 8),  # demand below the declared all window: shrink to the max
        (10, 4, 12, True, 6, 0, 10),  # a dip: keep
        (10, 18, 25, False, 20, 0, 10),  # window not covered yet: keep
        (10, 18, 25, False, 20, 3, 20),  # 3 pods past max wait: min(now 20, min 18 + 3)
        (10, 8, 25, True, 20, 1, 10),  # urgency adds to the min, not to the declared
        (10, 8, 25, True, 20, 5, 13),
    ],
)
def test_the_sizing_rule(
    declared: int, low: int, high: int, covered: bool, now: int, urgent: int, sized: int
) -> None:
    st = h.Stats(3, low, (low + high) / 2, high)
    assert h.sized(declared, st, covered, now, urgent) == sized


def test_rule_headroom_counts_the_pending_pods_that_persisted_through_the_window() -> None:
    web = ("web", "1g.10gb")
    hist = (
        h.sample(at(12), {KEY: [1, 6], web: [0, 9]}),
        h.sample(at(6), {KEY: [1, 2], ("ml", "3g.40gb"): [0, 3]}),  # web's burst is over
    )
    win = h.window(hist, h.sample(NOW, {KEY: [1, 4], web: [0, 9]}), P)
    assert h.pending_low(win, "ml", "1g.10gb") == 2
    assert h.pending_low(win, "ml", None) == 4  # every profile: 6, 5, 4
    assert h.pending_low(win, "web", "1g.10gb") == 0
    assert h.pending_low(h.window(hist[1:], win.samples[-1], P), "ml", None) == 0  # not covered


def test_record_stores_at_most_one_sample_per_half_interval() -> None:
    assert h.spacing(P) == 150  # max(5m / 2, 10m / 96)
    hist = h.record((s(3, 1),), s(0, 9), P)
    assert hist == (s(3, 1), s(0, 9))
    # a run 2 minutes after the last stored sample stores nothing (its observation was evaluated)
    assert h.record((s(2, 1),), s(0, 9), P) == (s(2, 1),)


def test_record_prunes_to_the_window_and_caps_the_count() -> None:
    short = PartitionPolicy(
        mode="dynamic", interval_seconds=300, stabilization_seconds=600, scale_down_seconds=600
    )
    hist = h.record((s(14, 1), s(12, 2), s(9, 3), s(4, 4)), s(0, 5), short)
    assert [x.total(KEY) for x in hist] == [2, 3, 4, 5]  # 11:48 is in force at 11:50; 11:46 is not
    day = PartitionPolicy(
        mode="dynamic", interval_seconds=60, stabilization_seconds=86400, scale_down_seconds=86400
    )
    assert h.spacing(day) == 900  # 24h / 96: at most ~97 samples in the window
    many = tuple(h.sample(NOW - dt.timedelta(minutes=m), {KEY: [m, 0]}) for m in range(600, 0, -1))
    kept = h.record(many, s(0, 1), day)  # samples a minute apart (written by hand, say)
    assert len(kept) == h.MAX_SAMPLES and kept[-1] == many[-1]  # the newest; 12:00 is too close to it


def test_sample_bytes_is_at_least_what_a_sample_takes_in_the_state_file() -> None:
    """So a history within MAX_HISTORY_BYTES always fits the state file's read limit."""
    big = {(f"tenant-{i:04d}", p): [999999, 999999] for i in range(50) for p in ("1g.10gb+me", "gpu")}
    first = h.sample(at(20), {("z", "gpu"): [1, 0]})
    for demand in ({KEY: [0, 1]}, {KEY: [12, 3], ("a", "gpu"): [1, 0]}, big):
        two = dump_state(State(history=(first, h.sample(NOW, demand))), NOW)
        one = dump_state(State(history=(first,)), NOW)
        assert len(two.encode()) - len(one.encode()) <= h.sample_bytes(h.sample(NOW, demand))
    assert h.MAX_HISTORY_BYTES + len(dump_state(State(), NOW)) < STATE_LIMIT


def test_a_history_too_big_for_the_state_file_drops_its_oldest_samples() -> None:
    tenants = {(f"tenant-{i:04d}", p): [3, 1] for i in range(40) for p in ("1g.10gb", "3g.40gb")}
    long = PartitionPolicy(
        mode="dynamic", stabilization_seconds=8 * 3600, scale_down_seconds=8 * 3600
    )  # 15m interval, 8h window
    hist = tuple(h.sample(at(m), tenants) for m in range(490, 0, -10))  # every 10m: 49 samples
    per = h.sample_bytes(hist[0])
    kept = h.record(hist, h.sample(NOW, tenants), long, max_bytes=30 * per)
    assert len(kept) == 30 and kept[-1].at == NOW and kept[0] == hist[-29]  # the newest 30
    # within the real bound: the 04:00 sample in force at the window's start, the later ones and 12:00
    assert len(h.record(hist, h.sample(NOW, tenants), long)) == 49
    # the window is then not covered: no change is proposed, and the gate says why
    win = h.window(kept[:-1], h.sample(NOW, tenants), long)
    gate = h.window_gate(win, NOW, long)
    assert not win.covered and not gate.passed and "demand watched for" in gate.why


def test_the_window_gate() -> None:
    covered = h.window((s(12, 2),), s(0, 2), P)
    assert h.window_gate(covered, NOW, P).passed
    assert h.window_gate(covered, NOW, P).why == "demand watched for 12m >= 10m (2 sample(s) in the window)"
    young = h.window((s(4, 2),), s(0, 2), P)
    gate = h.window_gate(young, NOW, P)
    assert not gate.passed and gate.why == "demand watched for 4m < 10m"
    urgent = h.window_gate(young, NOW, P, ("ml/p-1",))
    assert urgent.passed and urgent.overridden and "1 pod(s) past max-wait" in urgent.why


def shortage(minutes_ago: float, pending: dict[str, int], running: int = 1) -> h.Sample:
    """A sample of two tenants: ``pending`` per profile split over them, ``running`` of each."""
    counts: dict[tuple[str, str], list[int]] = {}
    for i, (p, n) in enumerate(sorted(pending.items())):
        counts[("ml" if i % 2 == 0 else "web", p)] = [running, n]
    counts.setdefault(("web", "3g.40gb"), [running, 0])
    return h.sample(at(minutes_ago), counts)


def test_the_window_gate_asks_the_shortage_of_every_added_profile_to_persist() -> None:
    # 11:48 (in force at the window's start 11:50), 11:55 and now: 1g short in all three
    hist = (shortage(12, {"1g.10gb": 2}), shortage(5, {"1g.10gb": 1, "2g.20gb": 3}))
    win = h.window(hist, shortage(0, {"1g.10gb": 4, "2g.20gb": 1}), P)
    assert win.covered and len(win.samples) == 3
    gate = h.window_gate(win, NOW, P, adds=["1g.10gb"])
    assert gate.passed
    assert gate.why == "demand watched for 12m >= 10m (3 sample(s) in the window; 1g.10gb short in every one)"
    # 2g.20gb went short only at 11:55: a burst shorter than the window does not pass
    gate = h.window_gate(win, NOW, P, adds=["2g.20gb", "1g.10gb"])
    assert not gate.passed
    assert gate.why == "2g.20gb not short (no pending pod) in all 3 sample(s) of the 10m window"
    # running demand alone is not a shortage (the history cannot show the capacity deployed then)
    assert h.short_in(win.samples[-1]) == {"1g.10gb", "2g.20gb"}
    assert h.short_through(win, ["3g.40gb", "1g.10gb", "2g.20gb"]) == ("2g.20gb", "3g.40gb")
    # capacity added for a profile nobody waits for now (3g.40gb: running only) is a by-product of
    # re-carving a GPU: it does not hold back the change that serves the persisted 1g.10gb shortage
    gate = h.window_gate(win, NOW, P, adds=["1g.10gb", "3g.40gb"])
    assert gate.passed and gate.why.endswith("; 1g.10gb short in every one)")
    # a change that adds nothing (a pure shrink) needs only the window covered
    assert h.window_gate(win, NOW, P).passed
    assert not h.window_gate(h.window((), shortage(0, {}), P), NOW, P).passed  # not covered


def test_a_shortage_that_paused_inside_the_window_restarts_it() -> None:
    # short at 11:48 and now, but nothing pending at 11:55: not persisted
    hist: tuple[h.Sample, ...] = (shortage(12, {"1g.10gb": 2}), shortage(5, {}))
    win = h.window(hist, shortage(0, {"1g.10gb": 2}), P)
    assert win.covered and not h.window_gate(win, NOW, P, adds=["1g.10gb"]).passed
    # the samples before the one in force at the window's start do not count: short since 11:50 is enough
    hist = (shortage(20, {}), shortage(10, {"1g.10gb": 1}), shortage(5, {"1g.10gb": 1}))
    win = h.window(hist, shortage(0, {"1g.10gb": 1}), P)
    assert [x.at for x in win.samples] == [at(10), at(5), NOW]
    assert h.window_gate(win, NOW, P, adds=["1g.10gb"]).passed
    # a pending pod of any tenant makes the profile short
    mixed = (h.sample(at(10), {("web", "1g.10gb"): [0, 1]}), h.sample(at(5), {("ml", "1g.10gb"): [2, 1]}))
    win = h.window(mixed, h.sample(NOW, {("web", "1g.10gb"): [0, 2]}), P)
    assert h.window_gate(win, NOW, P, adds=["1g.10gb"]).passed


def test_the_window_gate_is_overridden_by_a_pod_past_max_wait_when_the_shortage_did_not_persist() -> None:
    win = h.window((shortage(12, {}),), shortage(0, {"1g.10gb": 2}), P)
    assert not h.window_gate(win, NOW, P, adds=["1g.10gb"]).passed
    gate = h.window_gate(win, NOW, P, ("ml/late",), adds=["1g.10gb"])
    assert gate.passed and gate.overridden
    assert gate.why == (
        "1g.10gb not short (no pending pod) in all 2 sample(s) of the 10m window, "
        "overridden: 1 pod(s) past max-wait"
    )


def test_the_scale_down_window_keeps_the_peak_of_older_samples_merged_into_buckets() -> None:
    """Samples older than the stabilizationWindow's in-force one serve only the scaleDownWindow peak:
    they are merged per bucket (the most of each key) and pruned past the scaleDownWindow."""
    hours = PartitionPolicy(
        mode="dynamic", interval_seconds=300, stabilization_seconds=600, scale_down_seconds=7200
    )
    assert h.bucket(hours) == 300  # max(interval, 2h / 50)
    # every 5 minutes for 3 hours; a peak of 9 two hours ago (between the 5-minute samples it is one)
    many = tuple(s(m, 9 if m == 115 else 2, 1 if m == 115 else 0) for m in range(180, 0, -5))
    kept = h.record(many, s(0, 3), hours)
    assert kept[0].at <= at(120) < kept[1].at  # the one in force at the scaleDownWindow's start first
    assert all(x.at > at(125) for x in kept[1:])  # older ones pruned
    peak, covered = h.peaks(kept, s(0, 3), hours)
    assert covered and peak[KEY] == 10  # 9 running + 1 pending, 115 minutes ago
    # merging: two samples in one bucket become one with the most of each count, at the older time
    one = h.merged((s(44, 1, 5), s(41, 4, 0)), 3600.0)
    assert [x.counts for x in one] == [(("ml", "1g.10gb", 4, 5),)] and one[0].at == at(44)


def test_the_scale_down_window_holds_capacity_at_its_peak() -> None:
    """HPA's scale-down stabilization: demand fell 3 -> 1 an hour ago; the 2h window keeps 3."""
    hours = PartitionPolicy(
        mode="dynamic", interval_seconds=300, stabilization_seconds=600, scale_down_seconds=7200
    )
    hist = tuple(s(m, 3 if m > 60 else 1) for m in range(150, 0, -5))
    cur = s(0, 1)
    win = h.window(hist, cur, hours)
    st = h.stats(win, NOW, hours)[KEY]
    assert (st.low, st.high) == (1, 1)
    assert h.sized(3, st, win.covered, 1, 0) == 1  # the stabilizationWindow alone gives it back
    keep = h.peaks(hist, cur, hours)
    assert keep == ({KEY: 3}, True)
    assert h.sized(3, st, win.covered, 1, 0, (keep[0][KEY], keep[1])) == 3
    # an hour of history only: the window is not covered, so nothing shrinks below what is declared
    young = h.peaks(hist[-12:], cur, hours)
    assert young[1] is False
    assert h.sized(3, st, win.covered, 1, 0, (young[0][KEY], young[1])) == 3
    assert h.sized(2, st, win.covered, 1, 0, (young[0][KEY], young[1])) == 2
    # growth is untouched: it still needs the shortage to persist through the stabilizationWindow
    assert h.sized(0, st, win.covered, 1, 0, (keep[0][KEY], keep[1])) == 1


# ---- the remembered surplus comes last (h.capped) -------------------------------------------------

A100_SLICES = {"1g": 1, "2g": 2, "3g": 3, "4g": 4, "7g": 7}


def test_capped_cuts_a_remembered_peak_that_would_hold_capacity_against_waiting_pods() -> None:
    """Round 8's traced case in small: 8 GPUs (56 slices), 7 × 7g running now, the scaleDownWindow
    remembers 8; a 4g and a 3g pod wait now. Current demand takes 49 + 4 + 3 = 56 slices: nothing is
    left for the remembered 8th 7g, which is cut; current demand is never cut."""
    sized = {("t", "7g"): 8, ("t", "4g"): 1, ("t", "3g"): 1}
    now = {("t", "7g"): 7, ("t", "4g"): 1, ("t", "3g"): 1}
    assert h.capped(sized, now, A100_SLICES, 56) == {("t", "7g"): 7, ("t", "4g"): 1, ("t", "3g"): 1}


def test_capped_keeps_the_surplus_that_fits_after_current_demand() -> None:
    """With room left after every key's current demand the window keeps its memory: 16 GPUs."""
    sized = {("t", "7g"): 8, ("t", "4g"): 1}
    now = {("t", "7g"): 7, ("t", "4g"): 1}
    assert h.capped(sized, now, A100_SLICES, 112) == sized


def test_capped_shares_the_room_key_by_key_and_never_below_the_sizing() -> None:
    """Room for 9 slices after current demand: granted one instance at a time, keys in sorted order
    (1g, 2g, 1g, 2g, 1g, 2g: 1 + 2 + 1 + 2 + 1 + 2 = 9, then nothing fits); a key sized below its
    current demand stays as sized (that capacity grows only to persisted demand is the window's
    rule, not this function's to undo)."""
    sized = {("t", "1g"): 4, ("t", "2g"): 5, ("t", "3g"): 0}
    now = {("t", "1g"): 0, ("t", "2g"): 0, ("t", "3g"): 2}  # 6 slices of current demand
    out = h.capped(sized, now, A100_SLICES, 15)
    assert out == {("t", "1g"): 3, ("t", "2g"): 3, ("t", "3g"): 0}
    assert sum(n * A100_SLICES[k[1]] for k, n in out.items()) + 6 <= 15


def test_capped_without_a_known_fleet_cuts_nothing() -> None:
    sized = {("t", "7g"): 8}
    assert h.capped(sized, {("t", "7g"): 1}, A100_SLICES, None) == sized
    # an unknown profile counts as a whole GPU (7 slices)
    assert h.capped({("t", "x"): 2}, {}, {}, 13) == {("t", "x"): 1}


def test_capped_keeps_first_what_the_surplus_holds_on_busy_nodes() -> None:
    """``held``: the 7g the surplus sits on on busy nodes is kept whatever the room (re-carving it
    would evict); its slices come off the room, so the 2g surplus gets nothing (without ``held``
    the 7 slices left go to the 2g surplus first: 2g sorts before 7g, and a 7g needs all 7)."""
    sized = {("t", "7g"): 3, ("t", "2g"): 2}
    now = {("t", "7g"): 1, ("t", "2g"): 0, ("t", "1g"): 7}  # 7 + 7 = 14 slices of current demand
    held = {("t", "7g"): 1}
    assert h.capped(sized, now, A100_SLICES, 21, held) == {("t", "7g"): 2, ("t", "2g"): 0}
    assert h.capped(sized, now, A100_SLICES, 21) == {("t", "7g"): 1, ("t", "2g"): 2}  # without
    assert h.capped(sized, now, A100_SLICES, 16, held) == {("t", "7g"): 2, ("t", "2g"): 0}
    assert h.capped(sized, now, A100_SLICES, 16) == {("t", "7g"): 1, ("t", "2g"): 1}


def test_change_gates_are_the_one_list_after_the_threshold_in_the_evidence_order() -> None:
    """``change_gates``: stabilizationWindow, minDwell, dailyChangeBudget, backoff — each judged on
    its own input (an uncovered window, a node changed 10 min ago under minDwell 1h, a budget of 2
    with 2 changes today, a failure 1 min ago under a 5m backoff)."""
    policy = PartitionPolicy(mode="dynamic", daily_change_budget=2)
    win = h.Window(samples=(), covered=False, since=NOW)
    recent = NOW - dt.timedelta(minutes=10)
    gates = h.change_gates(
        win,
        NOW,
        policy,
        (),
        {"1g.10gb": 7},
        {"1g.10gb": 7, "7g.80gb": 1},
        ["node-a"],
        {"node-a": recent},
        [recent, NOW - dt.timedelta(hours=2), NOW - dt.timedelta(days=2)],
        (1, NOW - dt.timedelta(minutes=1)),
    )
    assert [x.name for x in gates] == ["stabilizationWindow", "minDwell", "dailyChangeBudget", "backoff"]
    assert [x.passed for x in gates] == [False, False, False, False]
    old = NOW - dt.timedelta(days=3)
    ok = h.change_gates(
        win, NOW, PartitionPolicy(mode="dynamic"), (), {}, {}, ["node-a"], {"node-a": old}, [old], (0, None)
    )
    assert [x.passed for x in ok[1:]] == [True, True, True]  # the window is still not covered


def test_recommend_and_the_replay_ask_the_same_gate_list() -> None:
    """The replay is a harness around recommend's decision (issue 22 item 1): neither assembles the
    window/dwell/budget/backoff gates by hand."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[4]
    for module in ("compiler/recommend/engine.py", "compiler/simulate/engine.py"):
        text = (root / module).read_text(encoding="utf-8")
        assert "h.change_gates(" in text, module
        assert "g.min_dwell(" not in text and "h.window_gate(" not in text, module
