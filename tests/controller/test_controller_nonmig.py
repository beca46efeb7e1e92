"""Pools without MIG (time-sliced L40S and the like): the GPU Operator runs no MIG manager on a node
that is not labelled ``nvidia.com/mig.capable=true``, and the emulator's fake MIG manager behaves
the same, so a controller that waited for ``nvidia.com/mig.config.state`` there would hang."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import demo
import pytest
import yaml
from conftest import (
    CONFIGS,
    Cluster,
    assert_cordons_are_marked,
    assert_only_gpu_pods_evicted,
    assignment,
    writes,
)
from emulation import (
    GPU_COUNT,
    MIG_CAPABLE,
    NODES,
    assignment_configmap,
    fleet_nodes,
    mig_capable_model,
    revision_of,
)

from controller import state as st
from controller.assignment import parse
from controller.reconciler import device_plugin_only, incompatible

WHOLE, SLICED = "all-disabled-4gpu-whole-gpus", "all-disabled-4gpu-time-slicing-4"
L40S = ["l40s-0", "l40s-1"]


def _labels_written(calls: list[Any], node: str) -> list[dict[str, Any]]:
    return [
        ((c.body or {}).get("metadata") or {}).get("labels") or {}
        for c in writes(calls)
        if c.resource == "nodes" and c.name == node
    ]


def _ann(cluster: Cluster, node: str) -> dict[str, str]:
    return dict(cluster.node(node)["metadata"].get("annotations") or {})


def _cordon_writes(calls: list[Any], node: str) -> list[Any]:
    return [
        c
        for c in writes(calls)
        if c.resource == "nodes"
        and c.name == node
        and ((c.body or {}).get("spec") or {}).get("unschedulable")
    ]


# Once converged (or with the forged phases reset) nothing is in flight, so the controller passes
# once per resync: at FAST's 0.5 s each settle() of 8 passes waited 4 s. What shows that nothing
# more happens is the number of passes, not the time, so this scenario resyncs every 0.1 s (issue 27).
IDLE_RESYNC = 0.1


def test_time_sliced_pool_rolls_out_with_the_device_plugin_label_only(cluster: Cluster) -> None:
    cluster.add_nodes(L40S[:1], WHOLE, mig_capable="false")
    cluster.add_nodes(L40S[1:], WHOLE, mig_capable=None)  # GFD label missing altogether
    cluster.add_pod("infer-0", "l40s-0", namespace="ml")
    cluster.set_assignment(assignment(dict.fromkeys(L40S, SLICED), pool="l40s", gpu_model="L40S"))
    ctl = cluster.start(loop__resync_interval=IDLE_RESYNC)
    cluster.wait(lambda: cluster.converged(dict.fromkeys(L40S, SLICED)))

    calls = cluster.controller_calls()
    for n in L40S:
        obj = cluster.node(n)
        labels = obj["metadata"]["labels"]
        assert labels[st.DEVICE_PLUGIN_CONFIG] == "migc-time-slicing-4"
        assert st.MIG_CONFIG not in labels and st.MIG_STATE not in labels
        assert not any(st.MIG_CONFIG in w or st.MIG_STATE in w for w in _labels_written(calls, n))
        # Advertised by the fake device plugin from gpu.count x replicas, not copied from the config.
        assert obj["status"]["allocatable"]["nvidia.com/gpu"] == "16"
        assert _ann(cluster, n)[st.APPLIED] == SLICED
        assert len(_cordon_writes(calls, n)) == 1  # still cordoned (and drained) once
    assert cluster.mig.handled == []
    assert sorted(cluster.device_plugin.handled) == [(n, "migc-time-slicing-4") for n in L40S]
    assert_cordons_are_marked(calls)
    assert assert_only_gpu_pods_evicted(calls, {"ml/infer-0"}) == {"ml/infer-0"}
    # The result is counted right after the Done -> Idle patch the wait above sees (apply.done):
    # wait for the count rather than read it at once.
    successes = ctl.metrics.reconfigurations.labels(pool="l40s", result="success")
    cluster.wait(lambda: successes._value.get() == 2)

    # Converged means converged: further passes start nothing new.
    before = len(writes(cluster.controller_calls()))
    cluster.settle(ctl)
    assert not [c for c in writes(cluster.controller_calls())[before:] if c.resource == "nodes"]


def test_wrong_advertised_count_fails_verification(cluster: Cluster) -> None:
    cluster.add_nodes(["l40s-0"], WHOLE, mig_capable="false")
    # GFD sees 3 GPUs (one fell off the bus): the plugin advertises 12, the config wants 16.
    cluster.emu.patch(NODES, None, "l40s-0", {"metadata": {"labels": {GPU_COUNT: "3"}}})
    cluster.set_assignment(assignment({"l40s-0": SLICED}, pool="l40s", gpu_model="L40S"))
    cluster.start(apply__verify_timeout=0.3)
    cluster.wait(lambda: _ann(cluster, "l40s-0").get(st.PHASE) == "Failed")
    err = _ann(cluster, "l40s-0")[st.LAST_ERROR]
    assert "nvidia.com/gpu: want 16 have 12" in err


def test_mig_config_on_a_node_without_mig_fails_once_without_touching_it(cluster: Cluster) -> None:
    cluster.add_nodes(["l40s-0"], WHOLE, mig_capable="false")
    cluster.add_pod("infer-0", "l40s-0", namespace="ml")
    cluster.set_assignment(assignment({"l40s-0": "all-1g.10gb"}))
    ctl = cluster.start()
    cluster.wait(lambda: _ann(cluster, "l40s-0").get(st.PHASE) == "Failed")
    cluster.settle(ctl, passes=12)

    ann = _ann(cluster, "l40s-0")
    assert ann[st.PHASE] == "Failed" and ann[st.ATTEMPTS] == "1" and st.RETRY_AFTER not in ann
    assert "enables MIG but node l40s-0 is not MIG-capable" in ann[st.LAST_ERROR]
    calls = cluster.controller_calls()
    assert _cordon_writes(calls, "l40s-0") == []  # never cordoned: nothing was changed
    assert not [c for c in calls if c.resource == "pods" and c.subresource == "eviction"]
    assert not any(st.MIG_CONFIG in w for w in _labels_written(calls, "l40s-0"))
    assert not cluster.node("l40s-0")["spec"].get("unschedulable")
    events = [c for c in calls if c.resource == "events" and c.verb == "create"]
    assert [e.body["reason"] for e in events] == ["MigReconfigurationFailed"]
    assert "not MIG-capable" in events[0].body["message"]
    assert cluster.mig.handled == [] and cluster.device_plugin.handled == []

    # A human's retry cannot help while the node has no MIG: it fails again at once, untouched.
    cluster.annotate("l40s-0", {st.RETRY: "true"})
    cluster.wait(lambda: st.RETRY not in _ann(cluster, "l40s-0"))
    cluster.settle(ctl)
    assert _ann(cluster, "l40s-0")[st.PHASE] == "Failed"
    assert _cordon_writes(cluster.controller_calls(), "l40s-0") == []

    # A corrected policy (a config without MIG) rolls the node out: cordon, drain, device plugin.
    cluster.set_assignment(assignment({"l40s-0": SLICED}, pool="l40s", gpu_model="L40S"))
    cluster.wait(lambda: cluster.converged({"l40s-0": SLICED}))
    calls = cluster.controller_calls()
    assert len(_cordon_writes(calls, "l40s-0")) == 1
    assert_cordons_are_marked(calls)
    assert cluster.node("l40s-0")["status"]["allocatable"]["nvidia.com/gpu"] == "16"


def test_mig_capable_node_with_an_all_disabled_config_still_uses_the_mig_manager(cluster: Cluster) -> None:
    cluster.add_nodes(["a100-0"], "all-1g.10gb")
    cluster.set_assignment(assignment({"a100-0": "all-disabled-8gpu-whole-gpus"}))
    cluster.start()
    cluster.wait(lambda: cluster.converged({"a100-0": "all-disabled-8gpu-whole-gpus"}))
    labels = cluster.node("a100-0")["metadata"]["labels"]
    assert labels[st.MIG_CONFIG] == "all-disabled-8gpu-whole-gpus"
    assert labels[st.MIG_STATE] == "success"
    assert labels[st.DEVICE_PLUGIN_CONFIG] == "migc-whole-gpus"
    assert cluster.mig.handled == [("a100-0", "all-disabled-8gpu-whole-gpus", "success")]
    assert cluster.device_plugin.handled == []


def test_mode_decisions_follow_the_capability_label() -> None:
    doc = assignment({"a": "all-1g.10gb", "b": "all-disabled-8gpu-whole-gpus"})
    configs = parse(json.dumps(doc)).configs
    mig, off = configs["all-1g.10gb"], configs["all-disabled-8gpu-whole-gpus"]
    for value, capable in (("true", True), ("false", False), (None, False), ("True", False)):
        labels = {MIG_CAPABLE: value} if value is not None else {}
        node = st.NodeView("n", labels, {}, False, (), {}, None)
        assert node.mig_capable is capable
        assert (incompatible(node, mig) is None) is capable
        assert incompatible(node, off) is None
        assert device_plugin_only(node, off) is not capable
        assert not device_plugin_only(node, mig) or not capable


def test_fleet_labels_mig_capability_from_configs_and_gpu_models() -> None:
    doc = assignment({"a": "all-disabled-8gpu-whole-gpus"})
    sliced = assignment({"l": SLICED}, pool="l40s", gpu_model="L40S")
    doc["pools"] += sliced["pools"]
    doc["configs"].update(sliced["configs"])
    doc["configs"]["all-1g.10gb"] = CONFIGS["all-1g.10gb"]
    odd = {**sliced["pools"][0], "name": "odd", "nodes": [{"name": "m", "config": "all-1g.10gb"}]}
    doc["pools"].append(odd)
    fleet = fleet_nodes(doc)
    assert fleet["a"][0][MIG_CAPABLE] == "true"  # A100: MIG-capable even with MIG off
    assert fleet["l"][0][MIG_CAPABLE] == "false"  # L40S: no MIG
    assert fleet["l"][0][GPU_COUNT] == "4"
    assert fleet["m"][0][MIG_CAPABLE] == "true"  # a MIG config says the hardware has MIG
    assert [m for m in ("L40S", "L4", "T4", "RTX-4090", "A10G") if mig_capable_model(m)] == []
    assert all(mig_capable_model(m) for m in ("A100-SXM4-80GB", "A30-24GB", "H100-80GB", "H200-141GB"))


def test_demo_converges_with_a_time_sliced_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = assignment({"a100-0": "all-1g.10gb", "a100-1": "all-3g.40gb"})
    sliced = assignment(dict.fromkeys(L40S, SLICED), pool="l40s", gpu_model="L40S")
    doc["pools"] += sliced["pools"]
    doc["configs"].update(sliced["configs"])
    doc["revision"] = revision_of(doc)
    target = tmp_path / "demo" / "migc-system" / "configmap-migc-assignment.yaml"
    target.parent.mkdir(parents=True)
    target.write_text(yaml.safe_dump(assignment_configmap(doc)))

    assert demo.main(["--output", str(tmp_path), "--timeout", "25"]) == 0
    out = capsys.readouterr().out
    assert "converged in" in out and "0 nodes drifting" in out
    lines = [" ".join(line.split()) for line in out.splitlines()]
    for n in L40S:
        mine = [line for line in lines if f" {n} " in line and "->" in line]
        assert not any("-> Applying" in line for line in mine)  # no MIG manager to wait for there
        assert f"{n} all-disabled-4gpu-time-slicing-4" in lines


def test_dry_run_plans_the_device_plugin_only_path_and_the_permanent_failure(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="migc.controller")
    cluster.add_nodes(L40S, WHOLE, mig_capable="false")
    cluster.set_assignment(assignment({"l40s-0": SLICED, "l40s-1": "all-1g.10gb"}, pool="l40s"))
    ctl = cluster.start(dry_run=True, loop__resync_interval=0.05)
    cluster.settle(ctl)
    assert writes(cluster.controller_calls()) == []

    def steps(node: str) -> list[str]:
        return [r.getMessage() for r in caplog.records if getattr(r, "migc", {}).get("node") == node]

    sliced = steps("l40s-0")
    assert any(f"{st.DEVICE_PLUGIN_CONFIG}=migc-time-slicing-4 only" in m for m in sliced)
    assert not any(f"{st.MIG_CONFIG}=" in m or st.MIG_STATE in m for m in sliced)
    assert any("verify allocatable {'nvidia.com/gpu': 16}" in m for m in sliced)
    failing = steps("l40s-1")
    assert any("fail without touching the node" in m and "not MIG-capable" in m for m in failing)
    assert not any("cordon" in m for m in failing)
