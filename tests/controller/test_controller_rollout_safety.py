"""Issue 10 (controller side, first part): the MIG manager's ``rebooting`` state gets its own
allowance, and a revision that fails on too many nodes stops widening (nothing else is touched)."""

from __future__ import annotations

from typing import Any

from conftest import CONFIGS, Cluster, assignment, writes
from emulation import NODES, PODS, revision_of
from kubernetes import client

from controller import state as st

OLD, NEW, OTHER = "all-1g.10gb", "all-3g.40gb", "all-balanced"


def _ann(cluster: Cluster, node: str) -> dict[str, str]:
    return dict(cluster.node(node)["metadata"].get("annotations") or {})


def _two_pools(a: list[str], b: list[str], config: str) -> dict[str, Any]:
    doc = assignment(dict.fromkeys(a, config), max_unavailable=2, pool="a")
    doc["pools"].append(assignment(dict.fromkeys(b, config), max_unavailable=2, pool="b")["pools"][0])
    doc["revision"] = revision_of(doc)
    return doc


WHOLE = "all-disabled-8gpu-whole-gpus"  # MIG off: going to NEW is a MIG mode change


def test_rebooting_gets_the_reboot_allowance(cluster: Cluster) -> None:
    """Upstream's sequence: pending -> rebooting -> (reboot) -> pending -> success (NVIDIA/
    mig-parted@bd7160f4 pkg/mig/reconfigure/reconfigure.go:158, :184-203; the new manager pod
    runs again from the start). Only a MIG *mode* change reboots; this test used to reboot on a
    MIG-to-MIG change, which upstream applies without one."""
    cluster.add_nodes(["n0"], WHOLE)
    cluster.mig.mode, cluster.mig.reboot_delay, cluster.mig.post_reboot_delay = "reboot", 0.6, 0.2
    cluster.start(apply__apply_timeout=0.5, apply__reboot_timeout=10.0)
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    assert cluster.mig.handled == [("n0", NEW, "reboot"), ("n0", NEW, "reboot")]  # before and after
    assert cluster.mig.rebooted == ["n0"]
    stages = [
        ann[st.REBOOTED_STAGE]
        for c in writes(cluster.controller_calls())
        if c.resource == "nodes"
        for ann in [((c.body or {}).get("metadata") or {}).get("annotations") or {}]
        if ann.get(st.REBOOTED_STAGE)
    ]
    assert stages == ["rebooting", "applying"]


def test_a_long_apply_after_the_reboot_gets_its_own_apply_timeout(cluster: Cluster) -> None:
    """Issue 23 item 2: the apply after the reboot (30 minutes on a big node, here 0.45s against
    an apply timeout of 0.5s) used to be timed from the start of the whole apply, so the node
    failed with a misleading "operand does not shut down" message."""
    cluster.add_nodes(["n0"], WHOLE)
    cluster.mig.mode, cluster.mig.reboot_delay, cluster.mig.post_reboot_delay = "reboot", 0.6, 0.45
    cluster.start(apply__apply_timeout=0.5, apply__reboot_timeout=0.7, failures__max_attempts=1)
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    assert st.LAST_ERROR not in _ann(cluster, "n0")


def test_rebooting_past_the_allowance_fails_the_node(cluster: Cluster) -> None:
    cluster.add_nodes(["n0"], WHOLE)
    cluster.mig.mode, cluster.mig.reboot_delay = "reboot", 30.0
    cluster.start(apply__apply_timeout=0.2, apply__reboot_timeout=0.3, failures__max_attempts=1)
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed")
    assert "did not come back from the MIG manager's reboot within 0.3s" in _ann(cluster, "n0")[st.LAST_ERROR]


def test_rollout_halts_after_max_failures_and_touches_nothing_else(cluster: Cluster) -> None:
    a, b = ["n0", "n1"], ["m0", "m1"]
    cluster.add_nodes(a + b, OLD)
    for n in b:  # held back until pool a has failed, so that the order is deterministic
        cluster.annotate(n, {st.PAUSED: "true"})
    cluster.mig.decide = lambda node, config, attempt: "failed" if config == NEW else "success"
    ctl = cluster.start(failures__max_attempts=1, failures__max_failures=2)
    doc = _two_pools(a, b, NEW)
    cluster.set_assignment(doc)
    cluster.wait(lambda: all(_ann(cluster, n).get(st.PHASE) == "Failed" for n in a))
    for n in b:
        cluster.annotate(n, {st.PAUSED: None})
    before = len(cluster.controller_calls())
    cluster.settle(ctl, 10)

    later = writes(cluster.controller_calls()[before:])
    assert not [c for c in later if c.resource == "nodes" and c.name in b], "the rollout widened"
    events = writes(cluster.controller_calls())
    halted = [c.body for c in events if c.resource == "events" and c.body.get("reason") == "RolloutHalted"]
    assert len(halted) == 1 and "2 nodes failed (n0, n1)" in halted[0]["message"]
    assert ctl.metrics.halted._value.get() == 1

    # A new revision (a config that works) starts again: the failed nodes are re-targeted and
    # the held-back pool proceeds.
    cluster.set_assignment(_two_pools(a, b, OTHER))
    cluster.wait(lambda: cluster.converged(dict.fromkeys(a + b, OTHER)), timeout=30)
    assert ctl.metrics.halted._value.get() == 0


def test_max_failures_zero_never_halts(cluster: Cluster) -> None:
    a, b = ["n0", "n1"], ["m0", "m1"]
    cluster.add_nodes(a + b, OLD)
    for n in b:
        cluster.annotate(n, {st.PAUSED: "true"})
    cluster.mig.decide = lambda node, config, attempt: "failed" if node in a else "success"
    cluster.start(failures__max_attempts=1, failures__max_failures=0)
    cluster.set_assignment(_two_pools(a, b, NEW))
    cluster.wait(lambda: all(_ann(cluster, n).get(st.PHASE) == "Failed" for n in a))
    for n in b:
        cluster.annotate(n, {st.PAUSED: None})
    cluster.wait(lambda: cluster.converged(dict.fromkeys(b, NEW)))


# --- the cordon adds no taint, so the GPU Operator's operands come back (issue 10 item 1) ------------
def test_cordon_adds_no_taint_and_the_device_plugin_comes_back(cluster: Cluster) -> None:
    nodes = ["n0", "n1", "n2"]
    cluster.add_nodes(nodes, OLD)
    cluster.start()
    cluster.set_assignment(assignment(dict.fromkeys(nodes, NEW), max_unavailable=3))
    cluster.wait(lambda: cluster.converged(dict.fromkeys(nodes, NEW)))
    node_patches = [c for c in writes(cluster.controller_calls()) if c.resource == "nodes"]
    assert not [c for c in node_patches if "taints" in ((c.body or {}).get("spec") or {})]
    cordons = [c for c in node_patches if ((c.body or {}).get("spec") or {}).get("unschedulable") is True]
    assert sorted(str(c.name) for c in cordons) == nodes
    assert all(c.body["metadata"]["annotations"][st.CORDONED] == "true" for c in cordons)


def test_an_untolerated_taint_keeps_the_device_plugin_away_and_verification_fails(cluster: Cluster) -> None:
    """What the old migc.dev/reconfiguring:NoSchedule taint did to every node: the device
    plugin's DaemonSet pod cannot return, allocatable never matches, the node fails."""
    cluster.add_nodes(["n0"], OLD)
    taint = {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}
    cluster.emu.patch(NODES, None, "n0", {"spec": {"taints": [taint]}})
    cluster.start(apply__verify_timeout=0.5, failures__max_attempts=1)
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed")
    assert (
        "allocatable does not match config all-3g.40gb: nvidia.com/mig-3g.40gb: want 16 have 0"
        in (_ann(cluster, "n0")[st.LAST_ERROR])
    )
    assert cluster.node("n0")["spec"]["taints"] == [taint]  # someone else's taint is never removed


def test_a_node_tainted_by_an_earlier_version_loses_the_taint_and_converges(cluster: Cluster) -> None:
    cluster.add_nodes(["n0"], OLD)
    doc = assignment({"n0": NEW})
    legacy = {"key": st.TAINT_KEY, "value": "true", "effect": "NoSchedule"}
    other = {"key": "example.com/keep", "value": "x", "effect": "PreferNoSchedule"}
    ann = {
        st.PHASE: "Cordoned",
        st.TARGET: NEW,
        st.POOL: "a100",
        st.REVISION: doc["revision"],
        st.PREVIOUS: OLD,
        st.ATTEMPTS: "0",
        st.PHASE_SINCE: "2026-12-01T00:00:00.000000Z",
    }
    cluster.emu.patch(
        NODES,
        None,
        "n0",
        {"metadata": {"annotations": ann}, "spec": {"unschedulable": True, "taints": [legacy, other]}},
    )
    cluster.start()
    cluster.set_assignment(doc)
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    assert cluster.node("n0")["spec"]["taints"] == [other]


# --- the MIG manager's mounted copy of the mig-parted ConfigMap lags the API (issue 10 item 4) --------
def _labelled(cluster: Cluster, node: str, config: str) -> bool:
    return any(
        ((c.body.get("metadata") or {}).get("labels") or {}).get(st.MIG_CONFIG) == config
        for c in writes(cluster.controller_calls())
        if c.resource == "nodes" and c.name == node
    )


def test_labelling_waits_for_the_kubelet_to_refresh_the_mounted_configmap(cluster: Cluster) -> None:
    cluster.add_nodes(["n0"], OLD)
    cluster.set_mig_parted({OLD: CONFIGS[OLD]})
    cluster.mig.mount_delay = 0.8
    cluster.start(apply__configmap_sync_delay=1.0, failures__max_attempts=1)
    cluster.set_assignment(assignment({"n0": NEW}))  # NEW enters the ConfigMap only now
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    assert cluster.mig.handled == [("n0", NEW, "success")]


def test_without_the_sync_delay_the_manager_does_not_find_the_config(cluster: Cluster) -> None:
    """The check can fail: labelling at once hits the lagging mount ("selected mig-config not
    present") and burns an attempt."""
    cluster.add_nodes(["n0"], OLD)
    cluster.set_mig_parted({OLD: CONFIGS[OLD]})
    cluster.mig.mount_delay = 5.0
    cluster.start(apply__configmap_sync_delay=0.0, failures__max_attempts=1)
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed")
    assert cluster.mig.handled == [("n0", NEW, "not-present")]


def test_config_removed_from_the_configmap_mid_rollout_is_never_labelled(cluster: Cluster) -> None:
    cluster.add_nodes(["n0"], OLD)
    cluster.add_pod("train", "n0", namespace="ml")
    ctl = cluster.start(drain__grace_timeout=60.0, failures__max_attempts=1)
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: cluster.phases()["n0"] == "Draining")
    cluster.set_mig_parted({OLD: CONFIGS[OLD]})  # someone re-synced an older ConfigMap
    cluster.settle(ctl, 2)
    cluster.emu.remove(PODS, "ml", "train")
    cluster.wait(lambda: _ann(cluster, "n0").get(st.PHASE) == "Failed")
    err = _ann(cluster, "n0")[st.LAST_ERROR]
    assert f"config {NEW} is not defined in mig-parted ConfigMap" in err and "not relabelled" in err
    assert not _labelled(cluster, "n0", NEW)
    assert cluster.mig.handled == []


# --- a retry never removes nvidia.com/mig.config (issue 10 item 3) ------------------------------------
def test_retry_restarts_the_mig_manager_and_never_removes_the_label(cluster: Cluster) -> None:
    cluster.add_nodes(["n0"], OLD)
    cluster.mig.decide = lambda node, config, attempt: "failed" if attempt == 1 else "success"
    cluster.start(failures__backoff=0.05)
    cluster.set_assignment(assignment({"n0": NEW}))
    cluster.wait(lambda: cluster.converged({"n0": NEW}))
    assert cluster.mig.handled == [("n0", NEW, "failed"), ("n0", NEW, "success")]
    node_labels = [
        (c.body.get("metadata") or {}).get("labels") or {}
        for c in writes(cluster.controller_calls())
        if c.resource == "nodes"
    ]
    assert not [ls for ls in node_labels if st.MIG_CONFIG in ls and ls[st.MIG_CONFIG] is None]
    assert [ls[st.DEPLOY_MIG_MANAGER] for ls in node_labels if st.DEPLOY_MIG_MANAGER in ls] == [
        "false",
        "true",
    ]
    assert cluster.emu.api.labeled == []  # the node labeler never had a reason to step in
    assert cluster.node("n0")["metadata"]["labels"][st.DEPLOY_MIG_MANAGER] == "true"


def test_the_labeler_races_a_removed_label(cluster: Cluster) -> None:
    """Why the label must stay: removing it (what the retry used to do) lets the GPU Operator's
    labeler put all-disabled there, and the MIG manager applies that first."""
    cluster.add_nodes(["n0"], OLD)
    cfg = client.Configuration()
    cfg.host = cluster.emu.url
    client.CoreV1Api(client.ApiClient(cfg)).patch_node(
        "n0", {"metadata": {"labels": {st.MIG_CONFIG: None}}}, _content_type="application/merge-patch+json"
    )
    cluster.wait(lambda: cluster.node("n0")["metadata"]["labels"].get(st.MIG_CONFIG) == "all-disabled")
    cluster.wait(lambda: [h[:2] for h in cluster.mig.handled] == [("n0", "all-disabled")])
    assert cluster.emu.api.labeled == ["n0"]
