"""Issue 23: a 100-node pool, maxUnavailable 10, against the upstream-following emulator: GPU
pods under a PodDisruptionBudget, applies that fail once, a controller killed and replaced mid
rollout, and a second revision while the first is in flight. Judged from the request log."""

from __future__ import annotations

import pytest
from conftest import (
    CONFIGS,
    FAST,
    Cluster,
    assert_cordons_are_marked,
    assert_mig_config_never_removed,
    assert_only_gpu_pods_evicted,
    assert_within_budget,
    assignment,
    tuned,
)

from controller import state as st

OLD, NEW, OTHER = "all-1g.10gb", "all-3g.40gb", "all-balanced"
NODES = [f"gpu-{i:03d}" for i in range(100)]
FLAKY = {"gpu-007", "gpu-023", "gpu-051"}  # the MIG manager fails their first apply


@pytest.mark.slow
def test_hundred_nodes_two_revisions_restart_failures_and_pdbs(cluster: Cluster) -> None:
    cluster.add_nodes(NODES, OLD)
    pod_node: dict[str, str] = {}
    gpu_pods: set[str] = set()
    for i, n in enumerate(NODES):
        if i % 4 == 0:
            name = f"svc-{n}" if i % 8 == 0 else f"train-{n}"
            cluster.add_pod(name, n, namespace="ml", gpu="nvidia.com/mig-1g.10gb")
            pod_node[f"ml/{name}"] = n
            gpu_pods.add(f"ml/{name}")
    # A PodDisruptionBudget over the svc pods: each is refused twice before it may go.
    refusals: dict[str, int] = {}

    def pdb(ns: str, name: str) -> bool:
        if not name.startswith("svc-"):
            return True
        refusals[name] = refusals.get(name, 0) + 1
        return refusals[name] > 2

    cluster.emu.api.eviction_gate = pdb
    cluster.mig.decide = lambda node, config, attempt: (
        "failed" if node in FLAKY and attempt == 1 else "success"
    )
    settings = tuned(
        FAST,
        failures__max_attempts=2,
        failures__backoff=0.05,
        failures__max_failures=5,
        loop__resync_interval=0.2,
    )
    first = cluster.start(settings, leader__identity="ctl-a")
    cluster.set_assignment(assignment(dict.fromkeys(NODES, NEW), max_unavailable=10))
    cluster.wait(lambda: sum(1 for n in NODES if cluster.converged({n: NEW})) >= 25, timeout=60)
    cluster.kill(first)  # mid rollout, between two requests
    cluster.start(settings, leader__identity="ctl-b")
    cluster.wait(lambda: sum(1 for n in NODES if cluster.converged({n: NEW})) >= 50, timeout=60)
    second = {n: (OTHER if i < 50 else NEW) for i, n in enumerate(NODES)}
    cluster.set_assignment(assignment(second, max_unavailable=10))
    cluster.wait(lambda: cluster.converged(second), timeout=120)

    calls = cluster.controller_calls()
    assert_within_budget(calls, 10, set(), set(), pod_node)  # <= 10 out; labels in the ConfigMap
    assert_cordons_are_marked(calls)
    assert_mig_config_never_removed(calls)
    assert assert_only_gpu_pods_evicted(calls, gpu_pods) <= gpu_pods  # never a delete
    # The PDB was honoured: every svc eviction that went through had been refused twice first.
    for c in calls:
        if c.subresource == "eviction" and not c.refused and str(c.name).startswith("svc-"):
            assert refusals[str(c.name)] >= 3
    assert any(c.subresource == "eviction" and c.refused for c in calls)
    # The flaky nodes failed once and recovered by the automatic retry; nothing halted for good.
    for n in FLAKY:
        assert cluster.converged({n: second[n]})
    assert {h[0] for h in cluster.mig.handled if h[2] == "failed"} == FLAKY
    # No node is left cordoned, and none carries a label the ConfigMap does not define.
    for n, obj in cluster.emu.nodes().items():
        assert not obj["spec"].get("unschedulable"), n
        assert obj["metadata"]["labels"][st.MIG_CONFIG] in CONFIGS
