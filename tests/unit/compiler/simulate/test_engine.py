"""compiler/simulate/engine.py: the replay on fleets of one GPU, where every wait can be worked out
by hand, and the Result's statistics (censored percentiles, rates) on hand-made waits.

A100-SXM4-80GB; a pod of 100 milli-GPU maps to 1g.10gb (size class "1g"). The recarving policies
(naive, default) have their own scenario tests in tests/test_simulate.py; here the static and per-pod
baselines, whose answers do not depend on the recommend loop, and the layout the cover carves on a GPU
(``Settings.layouts``: "fewest", the default, or "maximal", its spare room to what the fleet wants most).
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from compiler.catalog import GpuModel, load_catalog
from compiler.model import PartitionPolicy
from compiler.simulate import engine
from compiler.simulate.engine import BASELINES, Result, Settings, maximal, simulate
from compiler.simulate.trace import TracePod

_A100 = load_catalog().get("A100-SXM4-80GB")
assert _A100 is not None
A100: GpuModel = _A100
ONE_GPU = Settings(nodes=1, gpus_per_node=1)


def pod(name: str, arrival: float, duration: float, milli: int = 100, num_gpu: int = 1) -> TracePod:
    return TracePod(name, arrival, duration, num_gpu, milli if num_gpu == 1 else 1000, 0)


def _waits(res: Result) -> list[tuple[float, bool]]:
    return sorted(w for ws in res.waits.values() for w in ws)


def test_mig_off_gives_each_fraction_a_whole_gpu() -> None:
    res = simulate([pod("a", 0, 100), pod("b", 0, 100)], A100, ONE_GPU, "mig-off", PartitionPolicy())
    assert _waits(res) == [(0.0, False), (100.0, False)]  # b waits until a leaves the only GPU
    assert set(res.waits) == {"1g"}  # the size class is the pod's, not the whole GPU it got
    assert res.percentile(None, 50) == (0.0, False) and res.percentile("1g", 100) == (100.0, False)
    assert res.never_served == 0 and res.reconfigurations == 0


def test_per_pod_carves_one_instance_per_start() -> None:
    trace = [pod("a", 0, 100), pod("b", 0, 100), pod("c", 50, 10)]
    res = simulate(trace, A100, ONE_GPU, "per-pod", PartitionPolicy())
    assert _waits(res) == [(0.0, False)] * 3 and res.instances_carved == 3


def test_per_pod_waits_for_a_placement_to_free() -> None:
    # a 4g.40gb holds the only start (0) of another 4g.40gb: the second waits until the first ends
    trace = [pod("a", 0, 100, milli=500), pod("b", 10, 100, milli=500)]
    res = simulate(trace, A100, ONE_GPU, "per-pod", PartitionPolicy())
    assert res.waits == {"4g": [(0.0, False), (90.0, False)]}


def test_a_pod_larger_than_any_node_is_censored_and_never_served() -> None:
    trace = [pod("big", 0, 100, num_gpu=2), pod("a", 0, 100)]
    res = simulate(trace, A100, ONE_GPU, "static-balanced", PartitionPolicy())
    assert res.never_served == 1 and res.censored() == 1 and res.censored("1g") == 0
    (wait,) = res.waits["2x7g"]
    assert wait[1] is True


def test_percentiles_that_reach_a_censored_wait_are_lower_bounds() -> None:
    res = Result(
        "x", hours=2.0, waits={"1g": [(10.0, False), (5.0, True), (20.0, False)], "7g": [(1.0, False)]}
    )
    assert res.percentile("7g", 50) == (1.0, False)
    assert res.percentile("1g", 50) == (10.0, True)  # the censored 5 s lies below it
    assert res.percentile(None, 25) == (1.0, False)
    assert res.percentile("3g", 50) == (0.0, False)  # no pod of that size
    assert res.censored() == 1


def test_rates_use_the_trace_span_and_the_fleet_slices() -> None:
    res = Result(
        "x", hours=4.0, reconfigurations=6, busy_slice_seconds=7 * 3600.0, total_slices=7, trace_hours=2.0
    )
    assert res.per_hour == 3.0  # over the trace's 2 h, not the replay's 4 h
    assert res.utilisation == pytest.approx(0.25)  # 7 slice-hours of 7 slices x 4 h


def test_maximal_means_no_further_instance_fits() -> None:
    assert maximal(A100, (("7g.80gb", 1),))
    assert maximal(A100, (("1g.10gb", 4), ("3g.40gb", 1)))
    assert not maximal(A100, (("1g.10gb", 1),))
    assert not maximal(A100, ())  # an empty GPU is not maximal


def test_every_baseline_named_replays() -> None:
    assert len(set(BASELINES)) == len(BASELINES)
    for baseline in BASELINES:
        res = simulate([pod("a", 0, 60)], A100, ONE_GPU, baseline, PartitionPolicy())
        assert res.baseline == baseline and res.never_served == 0, baseline


@pytest.mark.parametrize(("failed", "surge", "admitted"), [(2, 0, 3), (3, 0, 0), (2, 1, 4), (3, 2, 0)])
def test_a_revision_that_failed_on_max_failures_nodes_admits_no_more(
    failed: int, surge: int, admitted: int
) -> None:
    """controller/reconciler/admission.py ``_halted``: with ``--max-failures`` 3 (controller/defaults.py)
    a revision whose rollout failed on 3 nodes admits no new node, though maxUnavailable slots are
    left. 8 idle one-GPU nodes whose targets all differ, maxUnavailable 5: with 2 Failed nodes 3 more
    are admitted (the budget), one more with idleSurge 1 (they run no pod); with 3 Failed, none (the
    halt, not the budget: 2 slots are free, and the surge's too)."""
    from compiler.simulate import engine

    s = Settings(nodes=8, gpus_per_node=1, max_unavailable=5, idle_surge=surge)
    fleet = engine._Fleet(A100, s, {"7g.80gb": 1})
    run = engine._Run([], A100, s, "naive", PartitionPolicy(mode="dynamic"), fleet, Result("naive", 0.0), 0.0)
    for gi in range(8):
        fleet.target[gi] = {"1g.10gb": 7}
    for node in range(failed):
        fleet.state[node] = engine.FAILED
    run._admit(0.0)
    assert sum(1 for st in fleet.state[failed:] if st != engine.IDLE) == admitted
    assert engine.MAX_FAILURES == 3  # the controller's default, read from controller/defaults.py


# ---- issue 22 item 2: with layouts="maximal" every layout the replay carves is maximal (no dark slice) ---


def test_a_lone_4g_need_gets_a_maximal_layout_whose_extras_are_the_demanded_small_profile() -> None:
    """``layouts="maximal"``. 1 node x 2 balanced GPUs (2 x 1g.10gb + 2g.20gb + 3g.40gb each); the
    demand is one 4g.40gb and
    one 2g.20gb. The two 2g.20gb already there cover the 2g (one is spare), so GPU 0 (the first of
    the GPUs that serve nothing short) needs a 4g.40gb alone: 4 of 7 compute slices. The layouts
    serving it equally that are maximal: 4g + 3g, 4g + 2g + 1g.10gb, 4g + 2g + 1g.20gb,
    4g + 3 x 1g.10gb, 4g + 1g.20gb + 2 x 1g.10gb, 4g + 2 x 1g.20gb. The demand wants 2g.20gb and
    4g.40gb once each (the smaller first: 2g.20gb), then nobody wants 1g.10gb (smallest next), so the
    extras are one 2g.20gb (the most 2g.20gb that fit next to a 4g.40gb: its placements 0, 2, 4, the
    4g takes 0-3), then one 1g.10gb in the last memory slice: GPU 0 gets 4g + 2g + 1g.10gb, planned
    for the 4g alone, the 2g and the 1g its spare room. The cover does not count spare room as serving
    the demand, so GPU 1's 2g.20gb is now the one that serves the 2g demand: GPU 1 serves something,
    the batching step leaves it alone. Capacity: GPU 0's 3 instances and GPU 1's balanced 4. The old
    tie rule (fewer slices) carved a lone 4g.40gb on GPU 0 (3 compute slices dark)."""
    from compiler.simulate import engine

    s = Settings(nodes=1, gpus_per_node=2, layouts="maximal")
    fleet = engine._Fleet(A100, s, engine.balanced_layout(A100))
    spare: dict[int, dict[str, int]] = {}
    changes, cap = engine.cover(fleet, {"4g.40gb": 1, "2g.20gb": 1}, [(0, 0.0)], spare=spare)
    assert changes == {0: {"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}}
    assert spare == {0: {"2g.20gb": 1, "1g.10gb": 1}}
    assert cap == {"4g.40gb": 1, "2g.20gb": 2, "1g.10gb": 3, "3g.40gb": 1}
    assert all(maximal(A100, tuple(sorted(lay.items()))) for lay in changes.values())


def test_the_default_layouts_carve_the_lone_4g_with_no_spare_room() -> None:
    """The same fleet and demand with the default ``layouts="fewest"`` (main's rule): GPU 0 gets the
    layout serving its 4g.40gb need with the fewest slices, a lone 4g.40gb (3 compute slices dark, not
    maximal), no spare room; GPU 1 serves the 2g.20gb and is left alone."""
    from compiler.simulate import engine

    fleet = engine._Fleet(A100, Settings(nodes=1, gpus_per_node=2), engine.balanced_layout(A100))
    spare: dict[int, dict[str, int]] = {}
    changes, cap = engine.cover(fleet, {"4g.40gb": 1, "2g.20gb": 1}, [(0, 0.0)], spare=spare)
    assert changes == {0: {"4g.40gb": 1}}
    assert spare == {0: {}}
    assert cap == {"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2, "3g.40gb": 1}
    assert not maximal(A100, (("4g.40gb", 1),))


@pytest.mark.parametrize(
    ("demand", "layout"),
    [
        # extras to the profile wanted most (instances), smaller first on a tie
        ({"4g.40gb": 1, "1g.10gb": 5}, {"4g.40gb": 1, "1g.10gb": 3}),
        ({"4g.40gb": 1, "3g.40gb": 4, "1g.10gb": 2}, {"4g.40gb": 1, "3g.40gb": 1}),
        # nothing else wanted: the smallest profile fills the room (3 of 1g.10gb at slots 4, 5, 6)
        ({"4g.40gb": 1}, {"4g.40gb": 1, "1g.10gb": 3}),
    ],
)
def test_the_spare_room_goes_to_what_the_fleet_wants_most(
    demand: dict[str, int], layout: dict[str, int]
) -> None:
    """``_carve_layout`` for a need of one 4g.40gb (4 compute slices, memory slices 0-3): the room
    left (3 compute, 4 memory slices at 4-7) goes, profile by profile in ``_rank`` order of the
    fleet-wide demand, to as many instances as fit: 3 x 1g.10gb (starts 4, 5, 6; 1g.10gb has no start
    at 7), or one 3g.40gb (start 4)."""
    from compiler.simulate import engine

    need = (("4g.40gb", 1),)
    got = dict(engine._carve_layout(A100, need, engine._rank(A100, demand)))
    assert got == layout and maximal(A100, tuple(sorted(got.items())))


class _Recorder:
    """A disruption rule that lets a node change through only where the benefit beats ``bar``, and
    records what it is asked (node, benefit) and the refusals it is told of without being asked."""

    def __init__(self, bar: float) -> None:
        self.bar = bar
        self.asked: list[tuple[int, float]] = []
        self.told = 0

    def __call__(
        self,
        node: int,
        before: dict[str, int],
        after: dict[str, int],
        changes: Mapping[int, dict[str, int]],
        bonus: float,
        mine: dict[str, int],
    ) -> bool:
        self.asked.append((node, bonus))
        return bonus > self.bar

    def refused(self, times: int) -> None:
        self.told += times


def _two_node_fleet() -> engine._Fleet:
    return engine._Fleet(A100, Settings(nodes=2, gpus_per_node=2), engine.balanced_layout(A100))


def test_a_multi_gpu_pod_asking_no_more_than_one_refused_is_not_weighed_again() -> None:
    """``cover``'s multi-GPU step: once the rule turns a 2 × 7g pod down on both nodes, a pod behind
    it asking the same for less benefit gets no node either (the rule's answer rises with the
    benefit, nothing changed meanwhile): it is not asked again, but both refusals are counted; a pod
    asking the same for *more* benefit is asked, and the one it lets through changes the fleet, after
    which a pod of less benefit is asked again."""
    from compiler.simulate import engine

    whole = "7g.80gb"
    rule = _Recorder(bar=50.0)
    big = [engine.BigPod(2, whole, b) for b in (40.0, 30.0, 30.0, 45.0, 60.0, 20.0)]
    changes, _ = engine.cover(_two_node_fleet(), {whole: 12}, [(0, 0.0), (1, 0.0)], weigh=rule, big=big)
    # 40 asked on both nodes; 30, 30 told (2 refusals each); 45 asked (more than 40): refused on both;
    # 60 passes on node 0; 20 is asked again on node 1 (the fleet changed), refused
    assert rule.asked == [(0, 40.0), (1, 40.0), (0, 45.0), (1, 45.0), (0, 60.0), (1, 20.0)]
    assert rule.told == 4
    assert changes == {0: {whole: 1}, 1: {whole: 1}}


def test_a_multi_gpu_pod_of_no_benefit_is_always_weighed() -> None:
    """A pod queued this instant (benefit 0) is weighed by the pending one-instance pods' waits
    instead (``_RuleWeigh``): no refusal of another pod speaks for it."""
    from compiler.simulate import engine

    rule = _Recorder(bar=50.0)
    big = [engine.BigPod(2, "7g.80gb", b) for b in (40.0, 0.0)]
    engine.cover(_two_node_fleet(), {"7g.80gb": 4}, [(0, 0.0), (1, 0.0)], weigh=rule, big=big)
    assert rule.asked == [(0, 40.0), (1, 40.0), (0, 0.0), (1, 0.0)] and rule.told == 0


def test_whole_gpus_whose_pods_ended_count_as_idle_for_a_multi_gpu_pod() -> None:
    """``release`` leaves a GPU's busy count at 0 for the profile it ran, not absent. Two whole GPUs
    whose pods have ended are idle: a 2-GPU pod takes them as they are, and the disruption rule is
    not asked about a change (before, such GPUs did not count as idle and the rule was asked about a
    change of nothing — counted as a refusal when it said no)."""
    whole = "7g.80gb"
    fleet = engine._Fleet(A100, Settings(nodes=1, gpus_per_node=2), {whole: 1})
    fleet.busy = [{whole: 0}, {whole: 0}]  # what release leaves behind
    rule = _Recorder(bar=1e12)
    changes, _ = engine.cover(fleet, {whole: 2}, [(0, 0.0)], weigh=rule, big=[engine.BigPod(2, whole, 5.0)])
    assert changes == {} and rule.asked == [] and rule.told == 0


def test_the_loop_weighs_the_wait_of_the_pods_present_attempt_as_recommend_sees_it() -> None:
    """migc recommend reads a pending pod's wait from its creationTimestamp, and an evicted pod is
    re-created: the wait before its eviction is not seen (docs/recommend.md, *The cost model*). The
    replay's cover weighs the same: a pod that waited 5,000 s, ran and was evicted, and has been
    pending again for 300 s counts 300 s in the disruption rule's benefit (``_RuleWeigh``), in a
    multi-GPU pod's benefit (``BigPod``) and in the gates' max-wait (``_waiting``) — while the
    replay's wait statistics keep both attempts (``waited``)."""
    s = Settings(nodes=1, gpus_per_node=2, max_wait_seconds=600)
    policy = PartitionPolicy(mode="dynamic")
    small = engine._Pod(pod("small", 0.0, 100.0), 0.0, "1g.10gb", 1, "1g")
    big = engine._Pod(pod("big", 0.0, 100.0, num_gpu=2), 0.0, "7g.80gb", 2, "2x7g")
    fleet = engine._Fleet(A100, s, {"7g.80gb": 1})
    run = engine._Run([small, big], A100, s, "default", policy, fleet, Result("default", 0.0), 0.0)
    for i in (0, 1):
        run.waited[i] = 5000.0  # the first attempt's wait, before it ran and was evicted
        run.enqueue(i, 9700.0)  # pending again since 9,700 s
    now = 10_000.0
    weigh = engine._RuleWeigh(run, now, {"1g.10gb": 1, "7g.80gb": 2})
    assert weigh._waits("1g.10gb") == [300.0]
    assert [b.benefit for b in run.big_pods(now)] == [2 * 300.0]
    assert sorted(w.waited_seconds for w in run._waiting(now)) == [300.0, 300.0]
    assert not any(w.late for w in run._waiting(now))  # 300 s < the 600 s max wait


def test_a_multi_gpu_pod_takes_another_nodes_ended_whole_gpus_instead_of_re_carving() -> None:
    """The effect a user sees of the idleness test: node 1's two whole GPUs ran pods that ended
    (zero counts), node 0 is carved into 1g instances. A pending 2-GPU pod fits node 1 as it is, so
    the cover (here naive's, no rule) changes nothing — before, it re-carved node 0 to two whole
    GPUs, a drain of node 0 that served nobody."""
    whole = "7g.80gb"
    fleet = engine._Fleet(A100, Settings(nodes=2, gpus_per_node=2), {"1g.10gb": 7})
    for gi in (2, 3):
        fleet.layout[gi] = {whole: 1}
        fleet.target[gi] = {whole: 1}
    fleet.busy = [{}, {}, {whole: 0}, {whole: 0}]  # node 1's pods ended (release's zero counts)
    changes, _ = engine.cover(fleet, {whole: 2}, [(0, 0.0), (1, 0.0)], big=[engine.BigPod(2, whole, 5.0)])
    assert changes == {}
