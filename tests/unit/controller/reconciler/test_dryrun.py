"""controller/reconciler/dryrun.py: --dry-run logs what a pass would do, once, and writes nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from controller.assignment import Target
from controller.reconciler.dryrun import batches, dry_run
from controller.state import NodeView, Phase
from unit.controller.support import (
    NOW,
    FakeKube,
    Records,
    capture,
    context,
    gpu_operator_configmaps,
    in_flight,
    node,
    parsed,
    pod,
)


@pytest.fixture
def records() -> Iterator[Records]:
    yield from capture()


def _run(kube: FakeKube, paused: bool = False) -> None:
    a = parsed({n: "all-1g.10gb" for n in kube.nodes}, max_unavailable=1)
    targets = {n: Target("a100", "all-1g.10gb") for n in kube.nodes}
    nodes = {n: NodeView.from_obj(o) for n, o in kube.nodes.items()}
    ctx = context(kube)
    dry_run(ctx, nodes, targets, a, paused, NOW)
    dry_run(ctx, nodes, targets, a, paused, NOW)  # the same situation: logged once


def test_logs_each_node_and_step_in_batches_and_writes_nothing(records: Records) -> None:
    kube = FakeKube([node("n0"), node("n1")], pods=[pod("train", "n0", namespace="ml")],
                    configmaps=gpu_operator_configmaps())  # fmt: skip
    _run(kube)
    assert kube.writes == []
    plans = [
        f
        for f, m in zip(records.fields(), records.messages(), strict=True)
        if m == "dry-run: would reconfigure node"
    ]
    # n1 (no GPU pod) first; maxUnavailable 1: one node per batch.
    assert [(f["node"], f["batch"], f["to"]) for f in plans] == [
        ("n1", 1, "all-1g.10gb"),
        ("n0", 2, "all-1g.10gb"),
    ]
    steps = [m for m in records.messages() if m.startswith("dry-run: would ") and "reconfigure" not in m]
    assert len(steps) == 2 * 7  # cordon, wait, evict, label, wait for success, verify, uncordon
    assert "dry-run: would wait up to 100s for GPU pods to finish: ['ml/train']" in steps


def test_a_config_unknown_to_the_mig_manager_is_refused_in_the_log(records: Records) -> None:
    kube = FakeKube([node("n0")], configmaps=gpu_operator_configmaps(["whole"]))
    _run(kube)
    assert any(m.startswith("dry-run: would refuse config all-1g.10gb") for m in records.messages())
    assert kube.writes == []


def test_paused_and_in_flight(records: Records) -> None:
    kube = FakeKube(
        [in_flight("n0", Phase.DRAINING, "all-1g.10gb"), node("n1")], configmaps=gpu_operator_configmaps()
    )
    _run(kube, paused=True)
    assert records.messages() == [
        "dry-run: would continue node",
        "dry-run: rollout paused; would start nothing",
    ]
    assert kube.writes == []


def _naive_batches(order: list[str], busy: set[str], limit: int, surge: int) -> dict[str, tuple[int, bool]]:
    """The rule read literally: each batch walks what is left in order; any node while fewer than
    ``limit`` are taken, after that only nodes outside ``busy`` while fewer than limit + surge."""
    out: dict[str, tuple[int, bool]] = {}
    number = 0
    while len(out) < len(order):
        number += 1
        taken = 0
        for name in [n for n in order if n not in out]:
            if taken < limit or (name not in busy and taken < limit + surge):
                taken += 1
                out[name] = (number, taken > limit)
    return out


@settings(max_examples=300, deadline=None)
@given(hs.lists(hs.booleans(), max_size=12), hs.integers(1, 4), hs.integers(0, 4))
def test_batches_follow_the_admission_rule(busy: list[bool], limit: int, surge: int) -> None:
    order = [f"n{i:02d}" for i in range(len(busy))]
    heavy = {n for n, b in zip(order, busy, strict=True) if b}
    assert batches(order, heavy, limit, surge) == _naive_batches(order, heavy, limit, surge)
    if not surge:  # no surge: batches of maxUnavailable in order, as before the field
        assert batches(order, heavy, limit, 0) == {n: (i // limit + 1, False) for i, n in enumerate(order)}


def test_idle_nodes_go_beside_the_batch_with_idle_surge(records: Records) -> None:
    kube = FakeKube([node("b"), node("i0"), node("i1")], pods=[pod("train", "b")],
                    configmaps=gpu_operator_configmaps())  # fmt: skip
    a = parsed(dict.fromkeys(kube.nodes, "all-1g.10gb"), max_unavailable=1, idle_surge=1)
    targets = {n: Target("a100", "all-1g.10gb") for n in kube.nodes}
    nodes = {n: NodeView.from_obj(o) for n, o in kube.nodes.items()}
    dry_run(context(kube), nodes, targets, a, False, NOW)
    plans = [
        (f["node"], f["batch"], "beyond_max_unavailable" in f)
        for f, m in zip(records.fields(), records.messages(), strict=True)
        if m == "dry-run: would reconfigure node"
    ]
    # i0 takes the maxUnavailable slot, i1 (no GPU pod either) goes beside it; b (busy) after them.
    assert plans == [("i0", 1, False), ("i1", 1, True), ("b", 2, False)]
    assert kube.writes == []
