"""A new revision on a 20-node pool with maxUnavailable 2, judged from the emulator's request log."""

from __future__ import annotations

import pytest
from conftest import (
    Cluster,
    assert_cordons_are_marked,
    assert_mig_config_never_removed,
    assert_only_gpu_pods_evicted,
    assignment,
    max_cordoned,
    writes,
)

from controller import state as st

NODES = [f"gpu-{i:02d}" for i in range(20)]


@pytest.mark.slow
def test_new_revision_rolls_out_within_budget_evicting_only_gpu_pods(cluster: Cluster) -> None:
    cluster.add_nodes(NODES, "all-1g.10gb")
    gpu_pods = set()
    for i, node in enumerate(NODES):
        if i % 3 == 0:  # some nodes busy with GPU work
            cluster.add_pod(f"train-{i}", node, namespace="ml", gpu="nvidia.com/mig-1g.10gb")
            gpu_pods.add(f"ml/train-{i}")
        cluster.add_pod(f"web-{i}", node, gpu=None)  # no GPU: stays
        # DaemonSet without GPU resources (like the real dcgm-exporter): stays. One holding GPUs
        # would hold the node (test_controller_upstream.py: the MIG manager fails on it).
        cluster.add_pod(f"dcgm-{i}", node, namespace="gpu-operator", daemonset=True, gpu=None)
    cluster.set_assignment(assignment(dict.fromkeys(NODES, "all-1g.10gb")))
    cluster.start()
    cluster.wait(lambda: cluster.controller_calls() != [])

    new = assignment(dict.fromkeys(NODES, "all-3g.40gb"), max_unavailable=2)
    cluster.set_assignment(new)
    cluster.wait(lambda: cluster.converged(dict.fromkeys(NODES, "all-3g.40gb")), timeout=40)

    calls = cluster.controller_calls()
    assert max_cordoned(calls) == 2  # the budget was used, and never exceeded
    assert_cordons_are_marked(calls)
    assert_mig_config_never_removed(calls)
    evicted = assert_only_gpu_pods_evicted(calls, gpu_pods)
    assert evicted == gpu_pods
    remaining = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in cluster.emu.pods()}
    assert {f"default/web-{i}" for i in range(20)} <= remaining
    assert {f"gpu-operator/dcgm-{i}" for i in range(20)} <= remaining

    # Nodes with the fewest running GPU pods went first (ties by name).
    cordon_order = [
        str(c.name)
        for c in calls
        if c.verb == "patch"
        and c.resource == "nodes"
        and ((c.body.get("metadata") or {}).get("annotations") or {}).get(st.PHASE) == "Cordoned"
    ]
    assert sorted(cordon_order) == sorted(NODES) and len(cordon_order) == 20  # each node exactly once
    idle_first = [n for i, n in enumerate(NODES) if i % 3 != 0]
    assert cordon_order[: len(idle_first)] == idle_first

    # Every node got the device-plugin label with the MIG config, and allocatable matches.
    for n in NODES:
        obj = cluster.node(n)
        assert obj["metadata"]["labels"][st.DEVICE_PLUGIN_CONFIG] == "mixed"
        assert obj["status"]["allocatable"]["nvidia.com/mig-3g.40gb"] == "16"
        assert "nvidia.com/mig-1g.10gb" not in obj["status"]["allocatable"]
    # Only node/pod/lease/event/configmap calls; nothing forced.
    assert {c.resource for c in writes(calls)} <= {"nodes", "pods", "leases"}
