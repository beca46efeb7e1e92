"""The controller against the GPU Operator's operand handling (issue 10): the MIG manager pauses
the device plugin, GFD, DCGM exporter and validator through ``nvidia.com/gpu.deploy.*`` labels
while it applies, the device plugin publishes allocatable only while its pod runs, and a
manager whose operand shutdown wait fails leaves the state at ``pending`` for good
(tests/controller/emulation.py, after NVIDIA/mig-parted@bd7160f4 pkg/mig/reconfigure/reconfigure.go)."""

from __future__ import annotations

from conftest import (
    Cluster,
    assert_cordons_are_marked,
    assert_mig_config_never_removed,
    assignment,
    max_cordoned,
)
from emulation import OPERANDS, OPERATOR_NAMESPACE, PAUSED, Call

from controller import state as st

OLD, NEW = "all-1g.10gb", "all-3g.40gb"


def _ann(cluster: Cluster, node: str) -> dict[str, str]:
    return dict(cluster.node(node)["metadata"].get("annotations") or {})


def _operand_pods(cluster: Cluster, node: str) -> set[str]:
    return {
        str(p["metadata"]["labels"]["app"])
        for p in cluster.emu.pods()
        if p["metadata"]["namespace"] == OPERATOR_NAMESPACE
        and p["spec"]["nodeName"] == node
        and p["metadata"].get("labels", {}).get("app") in OPERANDS.values()
    }


def test_operands_are_paused_while_applying_and_come_back(cluster: Cluster) -> None:
    cluster.add_nodes(["n0"], OLD)
    cluster.wait(lambda: _operand_pods(cluster, "n0") == set(OPERANDS.values()))
    cluster.mig.gate.clear()  # freeze the manager after the operands are down
    cluster.start()
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: cluster.mig.handled != [] and _operand_pods(cluster, "n0") == set())

    node = cluster.node("n0")
    labels = node["metadata"]["labels"]
    assert {labels[f"nvidia.com/gpu.deploy.{o}"] for o in OPERANDS} == {PAUSED}
    assert labels[st.MIG_STATE] == "pending"
    alloc = node["status"]["allocatable"]
    assert alloc["nvidia.com/mig-1g.10gb"] == "0"  # the stopped plugin publishes nothing
    assert _ann(cluster, "n0")[st.PHASE] == "Applying"

    cluster.mig.gate.set()
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    labels = cluster.node("n0")["metadata"]["labels"]
    assert {labels[f"nvidia.com/gpu.deploy.{o}"] for o in OPERANDS} == {"true"}
    assert _operand_pods(cluster, "n0") == set(OPERANDS.values())
    assert cluster.node("n0")["status"]["allocatable"]["nvidia.com/mig-3g.40gb"] == "16"


def test_operand_shutdown_timeout_leaves_pending_and_the_controller_fails_the_node(
    cluster: Cluster,
) -> None:
    cluster.add_nodes(["n0", "n1"], OLD)
    cluster.emu.api.stuck_operands.add(("n0", "device-plugin"))  # its pod never terminates
    cluster.mig.shutdown_timeout = 0.1
    ctl = cluster.start(apply__apply_timeout=0.6, failures__max_attempts=1, failures__max_failures=0)
    cluster.set_assignment(assignment({"n0": NEW, "n1": NEW}))
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed" and cluster.converged({"n1": NEW}))

    node = cluster.node("n0")
    labels = node["metadata"]["labels"]
    assert cluster.mig.stuck == ["n0"]
    assert labels[st.MIG_STATE] == "pending"  # the manager set no final state
    assert labels[f"nvidia.com/gpu.deploy.{'device-plugin'}"] == PAUSED
    assert labels[st.MIG_CONFIG] == NEW  # never removed
    error = _ann(cluster, "n0")[st.LAST_ERROR]
    assert "did not finish within 0.6s (state=pending)" in error
    assert "GPU client pod it waits for" in error and "nvidia.com/gpu.deploy.client" in error
    assert node["spec"]["unschedulable"] is True  # left cordoned for a human
    assert _ann(cluster, "n0")[st.CORDONED] == "true"  # ... with the mark saying migc did it

    def events() -> list[Call]:
        calls = cluster.controller_calls()
        return [c for c in calls if c.resource == "events" and c.verb == "create"]

    cluster.wait(lambda: events() != [])  # written right after the Failed phase
    assert [e.body["involvedObject"]["name"] for e in events()] == ["n0"]
    event = events()[0]
    assert "state=pending" in event.body["message"]
    assert f"{st.RETRY}=true" in event.body["message"]
    assert f"{st.ROLLBACK}=true" in event.body["message"]
    assert ctl.metrics.reconfigurations.labels(pool="a100", result="failed")._value.get() == 1
    calls = cluster.controller_calls()
    assert_cordons_are_marked(calls)
    assert_mig_config_never_removed(calls)


def test_pending_stuck_times_out_and_the_retry_brings_the_operands_back(cluster: Cluster) -> None:
    """After a stuck shutdown a human frees the pod and asks for a retry: the restarted manager
    pauses the still-paused operands, applies and re-enables them all."""
    cluster.add_nodes(["n0"], OLD)
    cluster.emu.api.stuck_operands.add(("n0", "dcgm-exporter"))
    cluster.mig.shutdown_timeout = 0.1
    cluster.start(apply__apply_timeout=0.5, failures__max_attempts=1, loop__resync_interval=0.05)
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed")
    assert cluster.node("n0")["metadata"]["labels"][st.MIG_STATE] == "pending"

    cluster.emu.api.stuck_operands.clear()
    cluster.emu.run(lambda api: api.sync_operands("n0"))  # the pod finally terminates
    cluster.annotate("n0", {st.RETRY: "true"})
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    labels = cluster.node("n0")["metadata"]["labels"]
    assert {labels[f"nvidia.com/gpu.deploy.{o}"] for o in OPERANDS} == {"true"}
    assert _operand_pods(cluster, "n0") == set(OPERANDS.values())
    assert_mig_config_never_removed(cluster.controller_calls())


def test_twenty_node_rollout_converges_through_operand_pauses(cluster: Cluster) -> None:
    nodes = [f"n{i:02d}" for i in range(20)]
    cluster.add_nodes(nodes, OLD)
    cluster.set_assignment(assignment(dict.fromkeys(nodes, OLD)))
    cluster.start()
    cluster.set_assignment(assignment(dict.fromkeys(nodes, NEW), max_unavailable=4))
    cluster.wait(lambda: cluster.converged(dict.fromkeys(nodes, NEW)), timeout=60)

    calls = cluster.controller_calls()
    assert max_cordoned(calls) <= 4
    assert_cordons_are_marked(calls)
    assert_mig_config_never_removed(calls)
    assert sorted(n for n, _c, _m in cluster.mig.handled) == nodes  # each applied once
    for n in nodes:
        assert _operand_pods(cluster, n) == set(OPERANDS.values()), n
