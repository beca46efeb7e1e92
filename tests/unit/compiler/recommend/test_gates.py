"""Each recommend gate on its own: threshold, window, dwell, budget, backoff, max-wait urgency, rules."""

from __future__ import annotations

import datetime as dt

from compiler.model import PartitionPolicy, Rule, RuleCondition
from compiler.recommend import gates as g
from compiler.recommend import history as h

NOW = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
SLICES = {"1g.10gb": 1, "2g.20gb": 2, "3g.40gb": 3, "7g.80gb": 7}
P = PartitionPolicy(mode="dynamic")


def ago(seconds: float) -> dt.datetime:
    return NOW - dt.timedelta(seconds=seconds)


def test_gain_is_the_share_of_the_slice_weighted_shortage_removed() -> None:
    demand = {"1g.10gb": 4, "3g.40gb": 2}  # 4 + 6 = 10 slices
    current = {"3g.40gb": 2}  # serves 6
    proposed = {"1g.10gb": 4, "3g.40gb": 1}  # serves 4 + 3 = 7
    assert g.served(current, demand, SLICES) == 6
    assert g.gain_pct(current, proposed, demand, SLICES) == 25.0  # 1 of the 4 short slices
    assert g.gain_pct(proposed, current, demand, SLICES) == -100 / 3  # 3 short, 1 more lost
    assert g.gain_pct(demand, demand, demand, SLICES) == 0.0  # nothing short
    assert g.gain_pct(current, proposed, {}, SLICES) == 0.0
    # capacity beyond demand serves nothing more
    assert g.served({"1g.10gb": 100}, {"1g.10gb": 2}, SLICES) == 2


def test_threshold_strictly_above() -> None:
    assert not g.threshold(20.0, P).passed
    assert g.threshold(20.1, P).passed
    assert not g.threshold(5.0, PartitionPolicy(reconfiguration_threshold_pct=10)).passed


def test_urgency_overrides_threshold_and_window_but_only_for_a_real_gain() -> None:
    pods = [
        g.PendingPod("a/late", "1g.10gb", waited_seconds=1000, max_wait_seconds=900),
        g.PendingPod("a/young", "1g.10gb", waited_seconds=10, max_wait_seconds=900),
        g.PendingPod("a/other", "3g.40gb", waited_seconds=5000, max_wait_seconds=60),  # proposal adds none
    ]
    urgent = g.urgent_pods(pods, {"1g.10gb": 0, "3g.40gb": 1}, {"1g.10gb": 2, "3g.40gb": 1})
    assert urgent == ("a/late",)
    t = g.threshold(5.0, P, urgent)
    assert t.passed and t.overridden
    assert not g.threshold(0.0, P, urgent).passed  # nothing gained: no override
    # the window gate (compiler/recommend/history.py) on a window watched only 30 s
    young = h.window((), h.sample(ago(0), {("a", "1g.10gb"): [0, 1]}), P)
    w = h.window_gate(young, NOW, P, urgent, adds=["1g.10gb"])
    assert w.passed and w.overridden
    assert not h.window_gate(young, NOW, P, adds=["1g.10gb"]).passed


def test_added_profiles_are_the_ones_the_proposal_has_more_of() -> None:
    current = {"1g.10gb": 2, "3g.40gb": 1}
    assert g.added_profiles(current, {"1g.10gb": 3, "3g.40gb": 0, "7g.80gb": 1}) == ("1g.10gb", "7g.80gb")
    assert g.added_profiles(current, current) == ()
    assert g.added_profiles(current, {"1g.10gb": 1}) == ()  # a pure shrink adds nothing


def test_min_dwell_names_young_nodes() -> None:
    last = {"n1": ago(100), "n2": ago(7200)}
    gate = g.min_dwell(["n1", "n2", "n3"], last, NOW, P)
    assert not gate.passed and "n1" in gate.why and "n2" not in gate.why
    assert g.min_dwell(["n2", "n3"], last, NOW, P).passed
    assert g.min_dwell(["n1"], last, NOW, PartitionPolicy(min_dwell_seconds=60)).passed


def test_young_lists_the_nodes_min_dwell_holds() -> None:
    """What the gate holds and the replay's idle pass leaves alone: changed less than minDwell ago
    (strictly), sorted; a node never changed is old enough."""
    last = {"n3": ago(100), "n1": ago(50), "n2": ago(7200), "n4": ago(P.min_dwell_seconds)}
    assert g.young(["n4", "n3", "n2", "n1", "n9"], last, NOW, P) == ["n1", "n3"]
    assert g.young([], last, NOW, P) == []


def test_daily_budget() -> None:
    history = [ago(3600), ago(86400 - 1), ago(86400 + 1)]
    assert g.changes_last_day(history, NOW) == 2
    assert g.daily_budget(5, 2, PartitionPolicy(daily_change_budget=0)).passed
    assert g.daily_budget(1, 2, PartitionPolicy(daily_change_budget=3)).passed
    assert not g.daily_budget(2, 2, PartitionPolicy(daily_change_budget=3)).passed


def test_backoff_is_exponential_and_capped() -> None:
    pol = PartitionPolicy(backoff_initial_seconds=300, backoff_max_seconds=3600, backoff_factor=2.0)
    assert [g.backoff_seconds(n, pol) for n in range(6)] == [0, 300, 600, 1200, 2400, 3600]
    assert g.backoff_seconds(1000, pol) == 3600
    assert g.backoff(0, None, NOW, pol).passed
    assert not g.backoff(2, ago(599), NOW, pol).passed
    assert g.backoff(2, ago(600), NOW, pol).passed


def test_mode_and_interval() -> None:
    assert not g.mode(PartitionPolicy()).passed
    assert g.mode(P).passed
    assert g.interval_due(None, NOW, P)
    assert not g.interval_due(ago(899), NOW, P)
    assert g.interval_due(ago(900), NOW, P)


def test_rules_fire_on_count_profile_and_memory() -> None:
    small = Rule(
        "small", RuleCondition(pending_pods_greater_than=1, max_requested_memory_gb_below=20), "1g.10gb"
    )
    big = Rule("big", RuleCondition(pending_pods_greater_than=0, profile="3g.40gb"), "3g.40gb")
    pods = [
        g.PendingPod("a/1", "1g.10gb", 5, memory_gb=10),
        g.PendingPod("a/2", "1g.10gb", 5, memory_gb=10),
    ]
    assert [r.name for r in g.fired_rules([small, big], pods)] == ["small"]
    assert g.fired_rules([small], pods[:1]) == ()  # not more than 1 pending
    heavy = [*pods, g.PendingPod("a/3", "3g.40gb", 5, memory_gb=40)]
    assert [r.name for r in g.fired_rules([small, big], heavy)] == ["big"]  # a 40 GB pod breaks "below 20"
