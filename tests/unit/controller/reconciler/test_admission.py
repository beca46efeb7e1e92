"""controller/reconciler/admission.py: which Idle nodes start now, within budget, and the cordon."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest

from controller import state as st
from controller.assignment import Target, parse
from controller.reconciler.admission import (
    Admission,
    candidates,
    idle_surge,
    max_unavailable,
    out_nodes,
    out_of_service,
    pool_of,
    start_record,
)
from controller.state import NodeView, Phase
from unit.controller.support import (
    NOW,
    SETTINGS,
    FakeKube,
    Records,
    assignment_doc,
    capture,
    context,
    gpu_operator_configmaps,
    in_flight,
    node,
    parsed,
    pod,
    sample,
)

NAMES = ("n0", "n1", "n2")


@pytest.fixture
def records() -> Iterator[Records]:
    yield from capture()


def _views(kube: FakeKube) -> dict[str, NodeView]:
    return {n: NodeView.from_obj(o) for n, o in kube.nodes.items()}


def _admit(kube: FakeKube, max_unavailable: int = 1, **kw: Any) -> tuple[FakeKube, Any]:
    a = parsed(dict.fromkeys(kube.nodes, "all-1g.10gb"), max_unavailable=max_unavailable)
    ctx = context(kube, **kw)
    targets = {n: Target("a100", "all-1g.10gb") for n in kube.nodes}
    Admission(ctx, _views(kube), targets, a, NOW).run()
    return kube, ctx


def test_candidates() -> None:
    a = parsed({"n0": "whole", "n1": "whole", "n2": "whole", "n3": "whole", "n4": "whole"})
    done = {st.MIG_CONFIG: "whole", st.MIG_STATE: "success"}
    nodes = {
        "n0": NodeView.from_obj(node("n0")),
        "n1": NodeView.from_obj(node("n1", labels=done)),  # converged already
        "n2": NodeView.from_obj(node("n2", annotations={st.PAUSED: "true"})),
        "n3": NodeView.from_obj(node("n3", annotations={st.HELD_REVISION: a.revision})),  # rolled back
        "n4": NodeView.from_obj(in_flight("n4", Phase.DRAINING, "whole")),  # not Idle
    }
    targets = {n: Target("a100", "whole") for n in nodes}
    assert candidates(nodes, targets, a, "a100") == ["n0"]
    assert candidates(nodes, targets, a, "other") == []


def test_out_of_service_counts_any_cordon_and_a_busy_mig_manager() -> None:
    assert out_of_service(NodeView.from_obj(node("n", unschedulable=True)))  # a human's cordon
    assert out_of_service(NodeView.from_obj(node("n", labels={st.MIG_STATE: "rebooting"})))
    assert out_of_service(NodeView.from_obj(node("n", annotations={st.PHASE: "Applying"})))
    assert not out_of_service(NodeView.from_obj(node("n", annotations={st.PHASE: "Failed"})))
    nodes = {
        "a": NodeView.from_obj(node("a", unschedulable=True)),
        "b": NodeView.from_obj(node("b", unschedulable=True, annotations={st.POOL: "p"})),
        "c": NodeView.from_obj(node("c")),
    }
    assert pool_of("a", nodes["a"], {"a": Target("p", "x")}) == "p"
    assert pool_of("b", nodes["b"], {}) == "p"  # left the assignment: the pool migc recorded
    assert out_nodes(nodes, {"a": Target("p", "x")}, "p") == {"a", "b"}


def test_max_unavailable_is_capped_at_the_pool_size() -> None:
    a = parsed({"n0": "whole", "n1": "whole"}, max_unavailable=5)
    ctx = context(FakeKube())
    (pool,) = a.pools
    assert max_unavailable(ctx, pool, {"n0": Target("a100", "whole")}, a) == 1
    assert max_unavailable(ctx, pool, {n: Target("a100", "whole") for n in ("n0", "n1")}, a) == 2
    assert max_unavailable(ctx, pool, {}, a) == 1  # never 0: a pool always moves


def test_start_record() -> None:
    a = parsed({"n0": "all-1g.10gb"})
    n = NodeView.from_obj(
        node(
            "n0",
            unschedulable=True,
            labels={st.MIG_CONFIG: "whole", st.DEVICE_PLUGIN_CONFIG: "migc-whole-gpus"},
        )
    )
    rec = start_record(n, Target("a100", "all-1g.10gb"), a, "T")
    assert rec[st.PHASE] == "Cordoned" and rec[st.TARGET] == "all-1g.10gb" and rec[st.REVISION] == a.revision
    assert (rec[st.PREVIOUS], rec[st.PREVIOUS_DP]) == (
        "whole",
        "migc-whole-gpus",
    )  # what a rollback returns to
    assert rec[st.PRE_CORDONED] == "true" and rec[st.ATTEMPTS] == "0" and rec[st.LAST_ERROR] is None
    assert start_record(NodeView.from_obj(node("n0")), Target("a100", "x"), a, "T")[st.PRE_CORDONED] is None


def test_admits_max_unavailable_nodes_fewest_gpu_pods_first() -> None:
    kube = FakeKube(
        [node(n) for n in NAMES],
        pods=[pod("a", "n0"), pod("b", "n0"), pod("c", "n1")],
        configmaps=gpu_operator_configmaps(),
    )
    _admit(kube, max_unavailable=2)
    cordoned = sorted(n for n in NAMES if kube.phase(n) == "Cordoned")
    assert cordoned == ["n1", "n2"]  # n2 has no GPU pod, n1 one; n0 (two) waits
    assert kube.nodes["n2"]["spec"]["unschedulable"] is True
    assert kube.annotations("n2")[st.CORDONED] == "true" and "taints" not in kube.nodes["n2"]["spec"]


def test_the_budget_counts_nodes_out_for_any_reason() -> None:
    kube = FakeKube(
        [node("n0", unschedulable=True), node("n1"), node("n2")], configmaps=gpu_operator_configmaps()
    )
    kube.nodes["n0"]["metadata"]["annotations"][st.HELD_REVISION] = "x"
    _admit(kube, max_unavailable=1)
    assert [n for n in NAMES if kube.phase(n) == "Cordoned"] == ["n0"]  # cordoned already: costs nothing more


def test_a_config_the_mig_manager_does_not_know_touches_no_node() -> None:
    kube = FakeKube([node(n) for n in NAMES], configmaps=gpu_operator_configmaps(["whole"]))
    _, ctx = _admit(kube, max_unavailable=3)
    assert kube.node_writes() == []
    assert sample(ctx, "migc_assignment_refusals_total", reason="config-missing") == 1
    assert [e["reason"] for e in kube.events] == ["MigConfigMissing"]  # once, not once per node


def test_a_device_plugin_config_missing_touches_no_node() -> None:
    cms = gpu_operator_configmaps()
    cms[1] = {**cms[1], "data": {"migc-whole-gpus": ""}}
    kube = FakeKube([node("n0")], configmaps=cms)
    _, ctx = _admit(kube)
    assert kube.node_writes() == []
    assert sample(ctx, "migc_assignment_refusals_total", reason="device-plugin-config-missing") == 1
    # The check can be switched off (--device-plugin-configmap '').
    kube = FakeKube([node("n0")], configmaps=cms)
    off = dataclasses.replace(SETTINGS, api=dataclasses.replace(SETTINGS.api, device_plugin_configmap=""))
    _admit(kube, settings=off)
    assert kube.phase("n0") == "Cordoned"


def test_an_impossible_config_fails_the_node_without_cordoning_it() -> None:
    kube = FakeKube([node("n0", mig_capable=False)], configmaps=gpu_operator_configmaps())
    _admit(kube)
    assert kube.phase("n0") == "Failed" and "unschedulable" not in kube.nodes["n0"]["spec"]
    assert st.RETRY_AFTER not in kube.annotations("n0")  # permanent: no automatic retry


def test_a_gpu_daemonset_nothing_stops_holds_the_node() -> None:
    kube = FakeKube(
        [node("n0")], pods=[pod("exporter", "n0", daemonset=True)], configmaps=gpu_operator_configmaps()
    )
    _admit(kube)
    assert kube.node_writes() == [] and kube.events[-1]["reason"] == "GpuDaemonSetBlocks"


def test_rollout_halts_after_max_failures_in_one_revision() -> None:
    a = parsed({n: "all-1g.10gb" for n in ("f0", "f1", "f2", "n0")}, max_unavailable=4)
    failed = {st.PHASE: "Failed", st.REVISION: a.revision, st.TARGET: "all-1g.10gb"}
    kube = FakeKube(
        [node(n, annotations=failed) for n in ("f0", "f1", "f2")] + [node("n0")],
        configmaps=gpu_operator_configmaps(),
    )
    ctx = context(kube)
    targets = {n: Target("a100", "all-1g.10gb") for n in kube.nodes}
    Admission(ctx, _views(kube), targets, a, NOW).run()
    assert kube.phase("n0") == "Idle"
    assert sample(ctx, "migc_rollout_halted") == 1
    assert [e["reason"] for e in kube.events] == ["RolloutHalted"]


def _surge(
    kube: FakeKube, max_unavailable: int = 1, idle_surge: int | None = 1, **kw: Any
) -> tuple[FakeKube, Any]:
    nodes = dict.fromkeys(kube.nodes, "all-1g.10gb")
    a = parsed(nodes, max_unavailable=max_unavailable, idle_surge=idle_surge)
    ctx = context(kube, **kw)
    targets = {n: Target("a100", "all-1g.10gb") for n in kube.nodes}
    Admission(ctx, _views(kube), targets, a, NOW).run()
    return kube, ctx


def _cordoned(kube: FakeKube) -> list[str]:
    return sorted(n for n in kube.nodes if kube.phase(n) == "Cordoned")


def test_idle_surge_admits_an_idle_node_beside_the_one_holding_the_slot(records: Records) -> None:
    """d drains (out: the one maxUnavailable slot); i0 and i1 run no GPU pod: one of them goes by
    the surge (name order), the other waits (limit + surge = 2 out)."""
    kube = FakeKube(
        [in_flight("d", Phase.DRAINING, "all-1g.10gb"), node("i0"), node("i1")],
        pods=[pod("train", "d")],
        configmaps=gpu_operator_configmaps(),
    )
    _surge(kube, idle_surge=1)
    assert _cordoned(kube) == ["i0"]
    (line,) = [f for f, m in zip(records.fields(), records.messages(), strict=True) if "beyond" in m]
    assert line == {"node": "i0", "pool": "a100", "max_unavailable": 1, "idle_surge": 1, "out": 2}
    assert "admitted beyond maxUnavailable: runs no GPU pod" in records.messages()
    # A second surge slot lets both go.
    kube = FakeKube(
        [in_flight("d", Phase.DRAINING, "all-1g.10gb"), node("i0"), node("i1")],
        pods=[pod("train", "d")],
        configmaps=gpu_operator_configmaps(),
    )
    _surge(kube, idle_surge=2)
    assert _cordoned(kube) == ["i0", "i1"]


def test_without_idle_surge_the_slot_holder_blocks_every_node() -> None:
    for surge in (None, 0):
        kube = FakeKube(
            [in_flight("d", Phase.DRAINING, "all-1g.10gb"), node("i0")], configmaps=gpu_operator_configmaps()
        )
        _surge(kube, idle_surge=surge)
        assert _cordoned(kube) == [] and kube.node_writes() == [], surge


def test_a_busy_node_never_goes_by_the_surge() -> None:
    """b0 runs a GPU pod, b1 a pod holding a device through a ResourceClaim (what a drain of a
    static DRA node waits for): neither is admitted beyond maxUnavailable, whatever the surge."""
    claim = pod("dra", "b1", resource=None)
    claim["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "c"}]
    kube = FakeKube(
        [in_flight("d", Phase.DRAINING, "all-1g.10gb"), node("b0"), node("b1"), node("i")],
        pods=[pod("train", "b0"), claim],
        configmaps=gpu_operator_configmaps(),
    )
    _surge(kube, idle_surge=3)  # capped at 4 - 1 = 3
    assert _cordoned(kube) == ["i"]


def test_idle_nodes_take_the_regular_slot_first() -> None:
    """Nothing out: the idle node takes the maxUnavailable slot, the second idle one the surge, the
    busy one waits (it would be beyond maxUnavailable)."""
    kube = FakeKube([node("b"), node("i0"), node("i1")], pods=[pod("train", "b")],
                    configmaps=gpu_operator_configmaps())  # fmt: skip
    _surge(kube, idle_surge=1)
    assert _cordoned(kube) == ["i0", "i1"]
    # With room for a busy node inside maxUnavailable it goes as before.
    kube = FakeKube([node("b"), node("i0")], pods=[pod("train", "b")], configmaps=gpu_operator_configmaps())
    _surge(kube, max_unavailable=2, idle_surge=0)
    assert _cordoned(kube) == ["b", "i0"]


def test_a_node_cordoned_by_someone_else_costs_nothing_more_with_a_surge() -> None:
    """h (a human's cordon) is out already: it is admitted (busy or not) and counts once; the
    surge then has no room left for i (d + h = maxUnavailable 1 + idleSurge 1)."""
    kube = FakeKube(
        [in_flight("d", Phase.DRAINING, "all-1g.10gb"), node("h", unschedulable=True), node("i")],
        pods=[pod("train", "h")],
        configmaps=gpu_operator_configmaps(),
    )
    _surge(kube, idle_surge=1)
    assert _cordoned(kube) == ["h"]


def test_the_surge_is_halted_and_windowed_like_any_admission() -> None:
    failed = {st.PHASE: "Failed", st.TARGET: "all-1g.10gb"}
    a = parsed({n: "all-1g.10gb" for n in ("f", "i")}, max_unavailable=1, idle_surge=1)
    failed[st.REVISION] = a.revision
    kube = FakeKube([node("f", unschedulable=True, annotations=failed), node("i")],
                    configmaps=gpu_operator_configmaps())  # fmt: skip
    targets = {n: Target("a100", "all-1g.10gb") for n in kube.nodes}
    halt = dataclasses.replace(SETTINGS, failures=dataclasses.replace(SETTINGS.failures, max_failures=1))
    Admission(context(kube, settings=halt), _views(kube), targets, a, NOW).run()
    assert kube.phase("i") == "Idle" and [e["reason"] for e in kube.events] == ["RolloutHalted"]
    Admission(context(kube), _views(kube), targets, a, NOW).run()  # max_failures 3: not halted
    assert kube.phase("i") == "Cordoned"  # the Failed node holds the slot; i goes by the surge
    # Outside the pool's maintenance windows nothing goes, not even by the surge (NOW is 12:00 UTC).
    for start, end, phase in (("01:00", "02:00", "Idle"), ("11:00", "13:00", "Cordoned")):
        doc = assignment_doc({"d": "all-1g.10gb", "i": "all-1g.10gb"}, idle_surge=1)
        doc["pools"][0]["maintenanceWindows"] = [{"start": start, "end": end, "timezone": "UTC"}]
        windowed = parse(json.dumps(doc))
        kube = FakeKube([in_flight("d", Phase.DRAINING, "all-1g.10gb"), node("i")],
                        configmaps=gpu_operator_configmaps())  # fmt: skip
        targets = {n: Target("a100", "all-1g.10gb") for n in kube.nodes}
        Admission(context(kube), _views(kube), targets, windowed, NOW).run()
        assert kube.phase("i") == phase, start


def test_idle_surge_is_capped_at_what_the_pool_leaves() -> None:
    ctx = context(FakeKube())
    a = parsed({"n0": "whole", "n1": "whole", "n2": "whole"}, max_unavailable=2, idle_surge=5)
    (pool,) = a.pools
    targets = {n: Target("a100", "whole") for n in ("n0", "n1", "n2")}
    assert (max_unavailable(ctx, pool, targets, a), idle_surge(ctx, pool, targets, a)) == (2, 1)
    assert idle_surge(ctx, pool, {"n0": Target("a100", "whole")}, a) == 0  # maxUnavailable took it all
    assert idle_surge(ctx, dataclasses.replace(pool, idle_surge=-4), targets, a) == 0  # never negative
    (absent,) = parsed({"n0": "whole", "n1": "whole"}).pools
    assert idle_surge(ctx, absent, targets, a) == 0
