"""controller/reconciler/admission.py: which Idle nodes start now, within budget, and the cordon."""

from __future__ import annotations

import dataclasses
from typing import Any

from controller import state as st
from controller.assignment import Target
from controller.reconciler.admission import (
    Admission,
    candidates,
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
    context,
    gpu_operator_configmaps,
    in_flight,
    node,
    parsed,
    pod,
    sample,
)

NAMES = ("n0", "n1", "n2")


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
