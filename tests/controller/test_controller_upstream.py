"""Issue 23: the controller against a GPU Operator that behaves as upstream does at HEAD.

The emulator (emulation.py) follows NVIDIA/mig-parted@bd7160f4's Go reconfigure
(pkg/mig/reconfigure/reconfigure.go), NVIDIA/gpu-operator@a22dbf67 and
NVIDIA/k8s-device-plugin@1b826acc; each scenario names the upstream behaviour it exercises.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import CONFIGS, DEVICE_PLUGIN_CONFIGS, Cluster, assignment, writes
from emulation import GPU_CLIENT_KEY, OPERANDS, OPERATOR_NAMESPACE, PAUSED, Call, revision_of
from emulation import NODES as NODES_RES
from emulation import PODS as PODS_RES

from controller import state as st

OLD, NEW, OTHER = "all-1g.10gb", "all-3g.40gb", "all-balanced"


def _ann(cluster: Cluster, node: str) -> dict[str, str]:
    return dict(cluster.node(node)["metadata"].get("annotations") or {})


def _labels(cluster: Cluster, node: str) -> dict[str, str]:
    return dict(cluster.node(node)["metadata"].get("labels") or {})


def _events(calls: list[Call], reason: str) -> list[dict[str, Any]]:
    return [
        c.body
        for c in calls
        if c.resource == "events" and c.verb == "create" and c.body.get("reason") == reason
    ]


def _phases_written(calls: list[Call], node: str) -> list[str]:
    return [
        str(((c.body.get("metadata") or {}).get("annotations") or {})[st.PHASE])
        for c in writes(calls)
        if c.resource == "nodes"
        and c.name == node
        and st.PHASE in ((c.body.get("metadata") or {}).get("annotations") or {})
    ]


# --- item 1: a revision whose ConfigMap arrives late ----------------------------------------------
def test_mid_rollout_revision_waits_for_a_late_mig_parted_configmap(cluster: Cluster) -> None:
    cluster.add_nodes(["n0", "n1"], OLD)
    cluster.add_pod("train", "n0", namespace="ml")
    cluster.set_mig_parted({OLD: CONFIGS[OLD], NEW: CONFIGS[NEW]})
    ctl = cluster.start(drain__grace_timeout=60.0, apply__apply_timeout=10.0, failures__max_attempts=1)
    cluster.set_assignment(assignment({"n0": NEW, "n1": OLD}), mig_parted=False)
    cluster.wait(lambda: cluster.phases()["n0"] == "Draining")
    # Argo CD syncs the new assignment first; the ConfigMap naming OTHER comes later.
    cluster.set_assignment(assignment({"n0": OTHER, "n1": OTHER}), mig_parted=False)
    cluster.settle(ctl, 3)
    cluster.emu.remove(PODS_RES, "ml", "train")
    cluster.settle(ctl, 10)
    assert cluster.phases()["n0"] == "Draining" and _ann(cluster, "n0")[st.TARGET] == OTHER  # waits
    assert cluster.phases()["n1"] == "Idle"  # admission refuses it meanwhile, untouched
    cluster.set_mig_parted(CONFIGS)
    cluster.wait(lambda: cluster.converged({"n0": OTHER, "n1": OTHER}))
    calls = cluster.controller_calls()
    assert "Failed" not in _phases_written(calls, "n0")
    assert _events(calls, "MigConfigMissing")  # said why it waited
    assert not _events(calls, "RolloutHalted")


# A held or refused rollout leaves the controller idle, so it passes once per resync: at FAST's
# 0.5 s each settle() of n passes waited n/2 s. What shows that no node is touched is the number of
# passes, not the time, so the scenarios that settle on a hold resync every 0.1 s (issue 27).
IDLE_RESYNC = 0.1


# --- item 3: GPU DaemonSets -----------------------------------------------------------------------
def test_gpu_daemonset_without_the_client_selector_holds_the_node_untouched(cluster: Cluster) -> None:
    cluster.add_nodes(["n0", "n1"], OLD)
    cluster.emu.run(
        lambda api: api.add_client_daemonset("monitoring", "gpu-probe", {"kubernetes.io/os": "linux"}, None)
    )
    cluster.emu.run(
        lambda api: api.add_client_daemonset("ml", "gpu-agent", {st.MIG_CAPABLE: "true"}, "nvidia.com/gpu")
    )
    ctl = cluster.start(failures__max_attempts=1, loop__resync_interval=IDLE_RESYNC)
    cluster.set_assignment(assignment({"n0": NEW, "n1": NEW}))
    cluster.wait(lambda: len(_events(cluster.controller_calls(), "GpuDaemonSetBlocks")) >= 2)
    cluster.settle(ctl, 5)
    calls = cluster.controller_calls()
    assert not [c for c in writes(calls) if c.resource == "nodes"]  # nothing touched: no cordon, no failure
    message = _events(calls, "GpuDaemonSetBlocks")[0]["message"]
    assert "ml/gpu-agent-n" in message and GPU_CLIENT_KEY in message
    # The owner adds the selector the MIG manager understands: it pauses the DaemonSet itself.
    for n in ("n0", "n1"):
        cluster.emu.patch(NODES_RES, None, n, {"metadata": {"labels": {GPU_CLIENT_KEY: "true"}}})
    cluster.emu.run(lambda api: api.remove(PODS_RES, "ml", "gpu-agent-n0"))
    cluster.emu.run(lambda api: api.remove(PODS_RES, "ml", "gpu-agent-n1"))
    cluster.emu.run(
        lambda api: api.add_client_daemonset("ml", "gpu-agent", {GPU_CLIENT_KEY: "true"}, "nvidia.com/gpu")
    )
    cluster.wait(lambda: cluster.converged({"n0": NEW, "n1": NEW}))
    assert {p["metadata"]["name"] for p in cluster.emu.pods()} >= {"gpu-agent-n0", "gpu-agent-n1"}  # back
    assert not cluster.mig.errors


def test_the_mig_manager_fails_while_a_gpu_client_runs(cluster: Cluster) -> None:
    """Why the controller holds such nodes: upstream's apply destroys the GPU instances, which
    NVML refuses while a process holds them (pkg/mig/config/config.go:142-147, :243-246)."""
    cluster.add_nodes(["n0"], OLD)
    cluster.add_pod("gpu-agent", "n0", namespace="ml", daemonset=True)  # not drained, not paused
    cluster.label("n0", {st.MIG_CONFIG: NEW})
    cluster.wait(lambda: _labels(cluster, "n0").get(st.MIG_STATE) == "failed")
    assert "In use by another client" in cluster.mig.errors["n0"]
    assert {_labels(cluster, "n0")[f"nvidia.com/gpu.deploy.{o}"] for o in OPERANDS} == {"true"}  # restored


# --- the restore flag and the already-applied fast path ------------------------------------------
def test_after_a_success_a_failure_leaves_the_operands_paused_and_a_retry_recovers(cluster: Cluster) -> None:
    """NoRestartK8sDaemonsetsOnExit (reconfigure.go:517, :550) is set for good by the first
    success of the manager's process: a later failure does not re-enable the GPU clients."""
    cluster.add_nodes(["n0"], OLD)
    cluster.mig.decide = lambda node, config, attempt: (
        "failed" if config == OTHER and attempt == 1 else "success"
    )
    ctl = cluster.start(failures__max_attempts=1)
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    cluster.set_assignment(assignment({"n0": OTHER}))
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed")
    assert cluster.mig.restore_skipped == ["n0"]
    assert {_labels(cluster, "n0")[f"nvidia.com/gpu.deploy.{o}"] for o in OPERANDS} == {PAUSED}
    cluster.annotate("n0", {st.RETRY: "true"})  # restarts the manager: a new process
    cluster.wait(lambda: cluster.converged({"n0": OTHER}))
    assert {_labels(cluster, "n0")[f"nvidia.com/gpu.deploy.{o}"] for o in OPERANDS} == {"true"}
    del ctl


def test_already_applied_config_succeeds_at_once_without_stopping_anything(cluster: Cluster) -> None:
    """isConfigAlreadyApplied (reconfigure.go:142-146): success, no operand paused."""
    cluster.add_nodes(["n0"], NEW)
    cluster.emu.patch(NODES_RES, None, "n0", {"metadata": {"labels": {st.MIG_STATE: "failed"}}})
    cluster.start()
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    assert [h[:2] for h in cluster.mig.handled] == [("n0", NEW)]
    deleted_operands = [
        c
        for c in cluster.emu.calls()
        if c.resource == "pods" and c.verb == "delete" and c.namespace == OPERATOR_NAMESPACE
    ]
    assert deleted_operands == []


def test_a_node_cannot_join_with_success_for_a_config_the_mig_manager_lacks(cluster: Cluster) -> None:
    """A joining node's GPUs carry its label's layout, read from the mig-parted file. A node that
    claims success for a config the file lacks cannot exist upstream (validateMigConfig fails
    first, reconfigure.go:137-140), so the emulator refuses it rather than start it with MIG off on
    every GPU -- the demo's nodes once did, and the manager's already-applied path (:142-146) then
    skipped a real change to all-disabled and the plugin kept publishing the old MIG devices."""
    cluster.set_mig_parted({OLD: CONFIGS[OLD]})
    with pytest.raises(ValueError, match=f"does not define {NEW}: upsert the ConfigMap first"):
        cluster.add_nodes(["n0"], NEW)
    assert cluster.emu.get(NODES_RES, None, "n0") is None
    cluster.add_nodes(["n1"], OLD)
    assert cluster.mig.applied["n1"] == cluster.mig.layout(OLD, 8)
    assert all(enabled and profiles for enabled, profiles in cluster.mig.applied["n1"])


# --- item 4: a stale state under the target label -------------------------------------------------
def test_stale_failed_state_under_the_target_label_is_reapplied(cluster: Cluster) -> None:
    cluster.add_nodes(["n0"], NEW)
    cluster.add_pod("train", "n0", namespace="ml", gpu="nvidia.com/mig-3g.40gb")
    # An earlier change to NEW failed: the label says NEW, the GPUs still carry OLD.
    cluster.mig.applied["n0"] = cluster.mig.layout(OLD, 8)
    cluster.emu.patch(NODES_RES, None, "n0", {"metadata": {"labels": {st.MIG_STATE: "failed"}}})
    ctl = cluster.start()
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: cluster.converged({"n0": NEW}) or st.LAST_ERROR in _ann(cluster, "n0"))
    assert st.LAST_ERROR not in _ann(cluster, "n0"), _ann(cluster, "n0")[st.LAST_ERROR]
    calls = cluster.controller_calls()
    assert [c.name for c in calls if c.subresource == "eviction"] == ["train"]  # drained first
    restarts = [
        ((c.body.get("metadata") or {}).get("labels") or {}).get(st.DEPLOY_MIG_MANAGER)
        for c in writes(calls)
        if c.resource == "nodes"
    ]
    assert [r for r in restarts if r] == ["false", "true"]  # the manager was restarted to apply it
    assert cluster.mig.applied["n0"] == cluster.mig.layout(NEW, 8)
    assert ctl.metrics.drift._value.get() == 0


# --- item 5: device-plugin config names ------------------------------------------------------------
def test_unknown_device_plugin_config_is_refused_before_any_node_is_touched(cluster: Cluster) -> None:
    cluster.add_nodes(["n0"], OLD)
    doc = assignment({"n0": NEW})
    doc["configs"][NEW] = dict(doc["configs"][NEW], devicePluginConfig="migc-mig-mixed-v2")
    doc["revision"] = revision_of(doc)
    ctl = cluster.start(loop__resync_interval=IDLE_RESYNC)
    cluster.set_assignment(doc)
    cluster.wait(lambda: _events(cluster.controller_calls(), "DevicePluginConfigMissing") != [])
    cluster.settle(ctl, 5)
    calls = cluster.controller_calls()
    assert not [c for c in writes(calls) if c.resource == "nodes"]
    assert "config-manager exits" in _events(calls, "DevicePluginConfigMissing")[0]["message"]
    cluster.set_device_plugin_configs(
        {**DEVICE_PLUGIN_CONFIGS, "migc-mig-mixed-v2": DEVICE_PLUGIN_CONFIGS["mixed"]}
    )
    cluster.wait(lambda: cluster.converged({"n0": NEW}))


def test_the_device_plugin_never_comes_back_with_an_unknown_config(cluster: Cluster) -> None:
    """Why: the config-manager exits on a name the ConfigMap lacks (cmd/config-manager/
    main.go:351-356), so the plugin publishes nothing and verification would time out."""
    cluster.add_nodes(["n0"], OLD)
    cluster.label("n0", {st.DEVICE_PLUGIN_CONFIG: "nope", st.MIG_CONFIG: NEW})
    cluster.wait(lambda: _labels(cluster, "n0").get(st.MIG_STATE) == "success")
    cluster.wait(lambda: cluster.emu.api.plugin.failed != [])
    assert cluster.node("n0")["status"]["allocatable"].get("nvidia.com/mig-3g.40gb") in (None, "0")


# --- verification is not circular ------------------------------------------------------------------
def test_verification_fails_when_the_plugin_publishes_another_geometry(cluster: Cluster) -> None:
    """The device plugin publishes what the mig-parted file put on the GPUs, not the
    assignment's ``resources``: a ConfigMap whose NEW differs from the assignment's NEW fails
    verification."""
    cluster.add_nodes(["n0"], OLD)
    cluster.set_mig_parted({**CONFIGS, NEW: CONFIGS[OTHER]})  # NEW means another layout there
    cluster.start(failures__max_attempts=1, apply__verify_timeout=0.5)
    cluster.set_assignment(assignment({"n0": NEW}), mig_parted=False)
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed")
    error = _ann(cluster, "n0")[st.LAST_ERROR]
    assert "allocatable does not match config all-3g.40gb" in error
    assert (
        "nvidia.com/mig-3g.40gb: want 16 have 8" in error
        and "nvidia.com/mig-1g.10gb: want 0 have 16" in error
    )


def test_a_layout_the_gpu_cannot_carry_fails_in_the_mig_manager(cluster: Cluster) -> None:
    """Geometry from compiler/catalog: 8 x 1g.10gb does not fit an A100 (7 slices)."""
    cluster.add_nodes(["n0"], OLD)
    bad = {"devices": [{"migEnabled": True, "profiles": {"1g.10gb": 8}}] * 8}
    cluster.set_mig_parted({**CONFIGS, "too-many": {**CONFIGS[OLD], **bad}})
    cluster.label("n0", {st.MIG_CONFIG: "too-many"})
    cluster.wait(lambda: _labels(cluster, "n0").get(st.MIG_STATE) == "failed")
    assert "does not fit a A100-SXM4-80GB" in cluster.mig.errors["n0"]


# --- item 6: a HAMi node in operatingMode mig -----------------------------------------------------
def test_hami_mig_mode_node_is_left_to_hami(cluster: Cluster) -> None:
    """The compiler keeps the MIG manager off HAMi ``mig`` nodes (gpu.deploy.mig-manager=false,
    which the operator honours) and leaves them out of the assignment: nothing relabels, cordons
    or reconfigures the node, although the operator's labeler gives it all-disabled."""
    import json
    from pathlib import Path

    import yaml

    from compiler.catalog import load_catalog
    from compiler.pipeline import load_and_validate
    from compiler.render import render
    from compiler.solve.pipeline import solve

    root = Path(__file__).resolve().parents[2]
    policy, _ = load_and_validate([root / "examples" / "hami"])
    assert policy is not None
    catalog = load_catalog()
    files = render(policy, solve(policy, catalog), catalog, source_label="examples/hami")
    doc = json.loads(
        yaml.safe_load(files["infer/migc-system/configmap-migc-assignment.yaml"])["data"]["assignment.json"]
    )
    plan = json.loads(
        yaml.safe_load(files["infer/migc-system/configmap-migc-hami.yaml"])["data"]["plan.json"]
    )
    (a100,) = [p for p in plan["pools"] if p["name"] == "a100"]
    assert a100["nodeLabels"][st.DEPLOY_MIG_MANAGER] == "false"
    assert "infer-a100-01" not in {n["name"] for p in doc["pools"] for n in p["nodes"]}

    from emulation import NODES as N
    from emulation import node_object

    labels = {**a100["nodeLabels"], st.MIG_CAPABLE: "true", "nvidia.com/gpu.count": "8"}
    cluster.emu.upsert(N, None, "infer-a100-01", node_object("infer-a100-01", labels, {}))
    ctl = cluster.start()
    cluster.set_assignment(doc)
    cluster.label("infer-a100-01", {"gpu": "on"})  # any update: the operator's labeler steps in
    cluster.wait(lambda: cluster.emu.api.labeled == ["infer-a100-01"])
    cluster.settle(ctl, 5)
    assert not [c for c in writes(cluster.controller_calls()) if c.resource == "nodes"]
    assert [h for h in cluster.mig.handled if h[0] == "infer-a100-01"] == []  # no MIG manager there


def test_mid_rollout_revision_waits_for_a_late_device_plugin_config(cluster: Cluster) -> None:
    """A revision that moves a node in flight to a device-plugin config the ConfigMap does not
    have yet: the drained node waits instead of relabelling (the plugin would never come back)."""
    cluster.add_nodes(["n0"], OLD)
    cluster.add_pod("train", "n0", namespace="ml")
    ctl = cluster.start(drain__grace_timeout=60.0, apply__apply_timeout=10.0, failures__max_attempts=1)
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: cluster.phases()["n0"] == "Draining")
    doc = assignment({"n0": NEW})
    doc["configs"][NEW] = dict(doc["configs"][NEW], devicePluginConfig="migc-mig-mixed-v2")
    doc["revision"] = revision_of(doc)
    cluster.set_assignment(doc)
    cluster.settle(ctl, 3)
    cluster.emu.remove(PODS_RES, "ml", "train")
    cluster.settle(ctl, 10)
    assert cluster.phases()["n0"] == "Draining"  # drained, waiting; not relabelled
    assert _labels(cluster, "n0")[st.MIG_CONFIG] == OLD
    assert _events(cluster.controller_calls(), "DevicePluginConfigMissing")
    cluster.set_device_plugin_configs(
        {**DEVICE_PLUGIN_CONFIGS, "migc-mig-mixed-v2": DEVICE_PLUGIN_CONFIGS["mixed"]}
    )
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    assert _labels(cluster, "n0")[st.DEVICE_PLUGIN_CONFIG] == "migc-mig-mixed-v2"
    assert "Failed" not in _phases_written(cluster.controller_calls(), "n0")
