"""The gates a proposed re-partitioning must pass: small pure functions of (observations, state, policy, now).

Each gate returns a :class:`Gate` (name, passed, why) so the evidence can show every decision. None of
them reads a clock, a file or the cluster; ``migc recommend`` and ``migc simulate`` call the same code.

Definitions (documented in docs/recommend.md):

* **demand** — per MIG profile, the instances pods ask for: running pods plus pending pods.
* **served(capacity)** — Σ over profiles of ``min(capacity[p], demand[p]) × slices(p)``: the compute
  slices of demand a layout can serve at once.
* **gain** — ``(served(proposed) − served(current)) / (Σ demand[p] × slices(p) − served(current)) × 100``:
  the share of the current *shortage* (slice-weighted demand the deployed layout cannot serve) that the
  proposal removes. 0 when nothing is short. A change is proposed only when gain >
  ``reconfigurationThreshold``: with the default 20, a change that serves one more small pod while
  many bigger ones keep waiting is not worth a drain.
* **urgency override** — a pending pod past its ``migc.dev/max-wait-time`` whose profile the proposal
  adds capacity for makes the proposal *urgent*: the threshold and ``stabilizationWindow`` gates pass
  (reported as overridden). ``minDwell``, ``dailyChangeBudget`` and ``backoff`` still hold: they
  protect nodes from flapping, which a waiting pod does not justify.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from compiler.formatting import duration
from compiler.model import PartitionPolicy, Rule
from compiler.recommend import disruption as dis

Vector = Mapping[str, int]
"""profile → instances."""

DAY = dt.timedelta(days=1)


@dataclass(frozen=True)
class Gate:
    name: str
    passed: bool
    why: str
    overridden: bool = False  # passed only because of the max-wait urgency rule


@dataclass(frozen=True)
class PendingPod:
    """What the gates need of one pending pod (built from an ObservedPod or a simulated pod)."""

    key: str
    profile: str
    waited_seconds: float
    max_wait_seconds: int | None = None
    memory_gb: float | None = None

    @property
    def late(self) -> bool:
        """Whether it has waited past its ``migc.dev/max-wait-time``."""
        return self.max_wait_seconds is not None and self.waited_seconds > self.max_wait_seconds


def served(capacity: Vector, demand: Vector, slices: Mapping[str, int]) -> int:
    """Compute slices of ``demand`` that ``capacity`` serves at once."""
    return sum(min(capacity.get(p, 0), n) * slices.get(p, 1) for p, n in demand.items() if n > 0)


def gain_pct(current: Vector, proposed: Vector, demand: Vector, slices: Mapping[str, int]) -> float:
    """Share (percent) of the slice-weighted shortage of ``current`` that ``proposed`` serves."""
    total = sum(n * slices.get(p, 1) for p, n in demand.items() if n > 0)
    now = served(current, demand, slices)
    if total <= now:
        return 0.0
    return 100.0 * (served(proposed, demand, slices) - now) / (total - now)


def urgent_pods(pending: Iterable[PendingPod], current: Vector, proposed: Vector) -> tuple[str, ...]:
    """Pods past their max wait whose profile gains instances in the proposal (sorted keys)."""
    return tuple(
        sorted(p.key for p in pending if p.late and proposed.get(p.profile, 0) > current.get(p.profile, 0))
    )


def threshold(gain: float, policy: PartitionPolicy, urgent: Sequence[str] = ()) -> Gate:
    limit = policy.reconfiguration_threshold_pct
    if gain > limit:
        return Gate("threshold", True, f"gain {gain:.1f}% > reconfigurationThreshold {limit:g}%")
    if urgent and gain > 0:
        return Gate(
            "threshold",
            True,
            f"gain {gain:.1f}% <= {limit:g}%, overridden: {len(urgent)} pod(s) past max-wait ({urgent[0]})",
            overridden=True,
        )
    return Gate("threshold", False, f"gain {gain:.1f}% <= reconfigurationThreshold {limit:g}%")


def added_profiles(current: Vector, proposed: Vector) -> tuple[str, ...]:
    """Profiles ``proposed`` has more instances of than ``current`` (sorted): what a change adds."""
    return tuple(sorted(p for p, n in proposed.items() if n > current.get(p, 0)))


def young(
    nodes: Iterable[str], last_change: Mapping[str, dt.datetime], now: dt.datetime, policy: PartitionPolicy
) -> list[str]:
    """The ``nodes`` changed less than ``minDwell`` ago, sorted (a node never changed is old enough);
    what :func:`min_dwell` holds, and what ``migc simulate``'s idle pass leaves alone."""
    return sorted(
        n
        for n in nodes
        if n in last_change and (now - last_change[n]).total_seconds() < policy.min_dwell_seconds
    )


def min_dwell(
    changing: Iterable[str], last_change: Mapping[str, dt.datetime], now: dt.datetime, policy: PartitionPolicy
) -> Gate:
    """Every node the proposal changes has kept its layout at least ``minDwell`` (unknown = old enough)."""
    young_nodes = young(changing, last_change, now, policy)
    if young_nodes:
        return Gate(
            "minDwell",
            False,
            f"{len(young_nodes)} node(s) changed less than {duration(policy.min_dwell_seconds)} ago: "
            f"{', '.join(young_nodes[:5])}",
        )
    return Gate(
        "minDwell", True, f"every changed node kept its layout >= {duration(policy.min_dwell_seconds)}"
    )


def changes_last_day(history: Iterable[dt.datetime], now: dt.datetime) -> int:
    return sum(1 for t in history if now - DAY < t <= now)


def daily_budget(nodes_changing: int, changes_today: int, policy: PartitionPolicy) -> Gate:
    budget = policy.daily_change_budget
    if budget == 0:
        return Gate("dailyChangeBudget", True, "unlimited (dailyChangeBudget 0)")
    if changes_today + nodes_changing <= budget:
        return Gate(
            "dailyChangeBudget",
            True,
            f"{changes_today} + {nodes_changing} node change(s) in 24h <= budget {budget}",
        )
    return Gate(
        "dailyChangeBudget",
        False,
        f"{changes_today} + {nodes_changing} node change(s) in 24h > budget {budget}",
    )


def backoff_seconds(failures: int, policy: PartitionPolicy) -> float:
    """Wait after the ``failures``-th consecutive failure: initial × factor^(failures−1), capped at max."""
    if failures <= 0:
        return 0.0
    wait = policy.backoff_initial_seconds * policy.backoff_factor ** min(failures - 1, 64)
    return float(min(wait, policy.backoff_max_seconds))


_When = TypeVar("_When", dt.datetime, float)  # a time: recommend's datetimes, simulate's seconds


def count_failures(
    failures: int, last_failure: _When | None, failed_since: Sequence[_When], last_change: _When | None
) -> tuple[int, _When | None]:
    """The backoff's failure count and time of the last failure, after reading the nodes the controller
    marks Failed (``failed_since``: when each went Failed): a new failure counts once (by its time); no
    Failed node and a change after the last failure reset the count."""
    if failed_since and (last_failure is None or max(failed_since) > last_failure):
        return failures + 1, max(failed_since)
    if (
        not failed_since
        and last_change is not None
        and last_failure is not None
        and last_change > last_failure
    ):
        return 0, last_failure
    return failures, last_failure


def backoff(
    failures: int, last_failure: dt.datetime | None, now: dt.datetime, policy: PartitionPolicy
) -> Gate:
    """No proposal until the exponential backoff after the last failed or rejected change has passed."""
    if failures <= 0 or last_failure is None:
        return Gate("backoff", True, "no failed or rejected change")
    wait = backoff_seconds(failures, policy)
    ready = last_failure + dt.timedelta(seconds=wait)
    if now >= ready:
        return Gate("backoff", True, f"{failures} failure(s); backoff {duration(wait)} over")
    return Gate(
        "backoff",
        False,
        f"{failures} failure(s); backoff {duration(wait)} until {ready.strftime('%Y-%m-%dT%H:%M:%SZ')}",
    )


def disruption(benefit: float, cost: float | None, policy: PartitionPolicy) -> Gate:
    """The disruption rule (:mod:`compiler.recommend.disruption`) on a whole proposal.

    ``benefit``: pending GPU-seconds the change avoids; ``cost``: GPU-seconds its drains are expected
    to destroy plus the outage (``None``: a running pod on a changed node has no known start, so the
    cost is unknown and the change is held). Max-wait urgency does not override it: a waiting pod's
    wait is already its benefit.
    """
    limit = policy.reconfiguration_threshold_pct
    if cost is None:
        return Gate(
            "disruption", False, "cost unknown: a running GPU pod on a changed node has no start time"
        )
    factor = 1.0 + limit / 100.0
    text = (
        f"benefit {benefit:,.0f} GPU-s {{}} cost {cost:,.0f} GPU-s x {factor:g} "
        f"(reconfigurationThreshold {limit:g}%)"
    )
    if dis.worth(benefit, cost, limit):
        return Gate("disruption", True, text.format(">"))
    return Gate("disruption", False, text.format("<="))


def mode(policy: PartitionPolicy) -> Gate:
    if policy.mode == "dynamic":
        return Gate("mode", True, "mode dynamic")
    return Gate("mode", False, "mode static: changes come only from humans (set mode: dynamic)")


def interval_due(last_run: dt.datetime | None, now: dt.datetime, policy: PartitionPolicy) -> bool:
    """Whether ``interval`` has passed since the last evaluation (the first evaluation is always due)."""
    return last_run is None or (now - last_run).total_seconds() >= policy.interval_seconds


def fired_rules(rules: Iterable[Rule], pending: Sequence[PendingPod]) -> tuple[Rule, ...]:
    """Rules whose ``when`` holds on the pending pods (in policy order)."""
    out: list[Rule] = []
    for r in rules:
        pods = [p for p in pending if r.when.profile is None or p.profile == r.when.profile]
        if len(pods) <= r.when.pending_pods_greater_than:
            continue
        below = r.when.max_requested_memory_gb_below
        if below is not None and not all(p.memory_gb is not None and p.memory_gb < below for p in pods):
            continue
        if not pods:
            continue
        out.append(r)
    return tuple(out)


def all_passed(gates: Iterable[Gate]) -> bool:
    return all(g.passed for g in gates)
