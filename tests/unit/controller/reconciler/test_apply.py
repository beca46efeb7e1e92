"""controller/reconciler/apply.py: relabel a drained node, wait for the MIG manager, verify, count."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from controller import state as st
from controller.assignment import Target
from controller.reconciler.apply import applying, done, start_apply, verifying
from controller.reconciler.context import Context, Step
from controller.state import NodeView, Phase
from unit.controller.support import (
    NOW,
    SETTINGS,
    FakeKube,
    context,
    gpu_operator_configmaps,
    in_flight,
    parsed,
    pod,
    sample,
)

A = parsed({"n0": "all-1g.10gb"})
T = Target("a100", "all-1g.10gb")
OK = {"nvidia.com/mig-1g.10gb": "14"}
SUCCESS = {st.MIG_CONFIG: "all-1g.10gb", st.MIG_STATE: "success"}


def _setup(obj: dict[str, Any], *, configmaps: bool = True) -> tuple[FakeKube, Context, Step]:
    kube = FakeKube([obj], configmaps=gpu_operator_configmaps() if configmaps else ())
    ctx = context(kube)
    return kube, ctx, Step(NodeView.from_obj(obj), T, A, NOW)


def _ago(seconds: float) -> dt.datetime:
    return NOW - dt.timedelta(seconds=seconds)


# --- start_apply -------------------------------------------------------------------------------


def test_start_apply_labels_the_node_and_clears_a_stale_state() -> None:
    obj = in_flight(
        "n0", Phase.DRAINING, "all-1g.10gb", labels={st.MIG_CONFIG: "whole", st.MIG_STATE: "success"}
    )
    kube, ctx, step = _setup(obj)
    out = start_apply(ctx, step)
    assert out is not None and out.phase == Phase.APPLYING
    assert out.labels[st.MIG_CONFIG] == "all-1g.10gb" and st.MIG_STATE not in out.labels
    assert out.labels[st.DEVICE_PLUGIN_CONFIG] == "mixed"
    (write,) = kube.node_writes()
    assert write["metadata"]["labels"][st.MIG_STATE] is None  # removed in the same PATCH


def test_start_apply_waits_for_the_mig_parted_configmap_then_fails_after_the_apply_timeout() -> None:
    obj = in_flight("n0", Phase.DRAINING, "all-1g.10gb")
    kube, ctx, step = _setup(obj, configmaps=False)
    assert start_apply(ctx, step) is None and kube.node_writes() == []
    assert kube.events[-1]["reason"] == "MigConfigMissing"
    late = in_flight("n0", Phase.DRAINING, "all-1g.10gb", since=_ago(600))
    kube, ctx, step = _setup(late, configmaps=False)
    out = start_apply(ctx, step)
    assert out is not None and out.phase == Phase.FAILED and st.MIG_CONFIG not in out.labels
    assert "the node was not relabelled" in out.annotations[st.LAST_ERROR]


def test_start_apply_waits_for_the_kubelets_copy() -> None:
    s = dataclasses.replace(SETTINGS, apply=dataclasses.replace(SETTINGS.apply, configmap_sync_delay=90.0))
    obj = in_flight("n0", Phase.DRAINING, "all-1g.10gb")
    kube = FakeKube([obj], configmaps=gpu_operator_configmaps())
    assert start_apply(context(kube, s), Step(NodeView.from_obj(obj), T, A, NOW)) is None
    assert kube.node_writes() == []


def test_without_mig_only_the_device_plugin_config_changes() -> None:
    a = parsed({"n0": "whole"})
    obj = in_flight("n0", Phase.DRAINING, "whole", mig_capable=False, labels={st.MIG_CONFIG: "stale"})
    kube = FakeKube([obj], configmaps=gpu_operator_configmaps())
    out = start_apply(context(kube), Step(NodeView.from_obj(obj), Target("a100", "whole"), a, NOW))
    assert out is not None and out.phase == Phase.VERIFYING
    assert out.annotations[st.APPLIED] == "whole" and out.labels[st.DEVICE_PLUGIN_CONFIG] == "migc-whole-gpus"
    assert out.labels[st.MIG_CONFIG] == "stale"  # nothing acts on it there


def test_same_label_again_restarts_the_mig_manager_instead_of_removing_the_label() -> None:
    obj = in_flight(
        "n0", Phase.DRAINING, "all-1g.10gb", labels={st.MIG_CONFIG: "all-1g.10gb", st.MIG_STATE: "failed"}
    )
    kube, ctx, step = _setup(obj)
    out = start_apply(ctx, step)
    assert out is not None and out.labels[st.DEPLOY_MIG_MANAGER] == "false"
    assert out.labels[st.MIG_CONFIG] == "all-1g.10gb" and out.phase == Phase.DRAINING
    # While its pod runs, wait; once it is gone, switch it back on.
    kube.pods = [pod("mm", "n0", resource=None, labels={"app": st.MIG_MANAGER_APP})]
    assert start_apply(ctx, Step(out, T, A, NOW)) is None
    kube.pods = []
    back = start_apply(ctx, Step(out, T, A, NOW))
    assert back is not None and back.phase == Phase.APPLYING and back.labels[st.DEPLOY_MIG_MANAGER] == "true"


def test_a_target_no_assignment_describes_is_released_unchanged() -> None:
    obj = in_flight("n0", Phase.DRAINING, "gone")
    _, ctx, _ = _setup(obj)
    out = start_apply(ctx, Step(NodeView.from_obj(obj), None, A, NOW))
    assert out is not None and out.phase == Phase.DONE and not out.unschedulable
    assert st.MIG_CONFIG not in out.labels


# --- applying ----------------------------------------------------------------------------------


def test_applying_follows_the_mig_managers_state() -> None:
    _, ctx, step = _setup(in_flight("n0", Phase.APPLYING, "all-1g.10gb", labels=SUCCESS))
    out = applying(ctx, step)
    assert out is not None and out.phase == Phase.VERIFYING
    failed = {st.MIG_CONFIG: "all-1g.10gb", st.MIG_STATE: "failed"}
    _, ctx, step = _setup(in_flight("n0", Phase.APPLYING, "all-1g.10gb", labels=failed))
    out = applying(ctx, step)
    assert out is not None and out.phase == Phase.FAILED
    assert out.annotations[st.LAST_ERROR] == "MIG manager reported failed for config all-1g.10gb"


def test_applying_times_out_with_the_reason_pending_means() -> None:
    pending = {st.MIG_CONFIG: "all-1g.10gb", st.MIG_STATE: "pending"}
    _, ctx, step = _setup(in_flight("n0", Phase.APPLYING, "all-1g.10gb", labels=pending, since=_ago(599)))
    assert applying(ctx, step) is None
    _, ctx, step = _setup(in_flight("n0", Phase.APPLYING, "all-1g.10gb", labels=pending, since=_ago(600)))
    out = applying(ctx, step)
    assert out is not None and out.phase == Phase.FAILED
    assert "did not finish within 600s (state=pending)" in out.annotations[st.LAST_ERROR]
    assert "GPU client pod" in out.annotations[st.LAST_ERROR]


def test_a_reboot_gets_its_own_clock_and_the_apply_after_it_a_fresh_one() -> None:
    rebooting = {st.MIG_CONFIG: "all-1g.10gb", st.MIG_STATE: "rebooting"}
    obj = in_flight("n0", Phase.APPLYING, "all-1g.10gb", labels=rebooting, since=_ago(3000))
    kube, ctx, step = _setup(obj)
    seen = applying(ctx, step)  # long past the apply timeout, but rebooting: start the reboot clock
    assert seen is not None and seen.phase == Phase.APPLYING
    assert seen.annotations[st.REBOOTED_STAGE] == "rebooting" and seen.since(st.REBOOTED) == NOW
    later = NOW + dt.timedelta(seconds=899)
    assert applying(ctx, Step(seen, T, A, later)) is None
    timed_out = applying(ctx, Step(seen, T, A, later + dt.timedelta(seconds=1)))
    assert (
        timed_out is not None
        and "did not come back from the MIG manager's reboot within 900s"
        in (timed_out.annotations[st.LAST_ERROR])
    )
    kube.nodes["n0"]["metadata"]["labels"][st.MIG_STATE] = "pending"
    back = applying(ctx, Step(NodeView.from_obj(kube.nodes["n0"]), T, A, later))
    assert (
        back is not None
        and back.annotations[st.REBOOTED_STAGE] == "applying"
        and back.since(st.REBOOTED) == later
    )


# --- verifying, done ---------------------------------------------------------------------------


def test_verifying_uncordons_when_allocatable_matches() -> None:
    _, ctx, step = _setup(in_flight("n0", Phase.VERIFYING, "all-1g.10gb", labels=SUCCESS, allocatable=OK))
    out = verifying(ctx, step)
    assert out is not None and out.phase == Phase.DONE and not out.unschedulable


def test_verifying_waits_then_fails_with_the_difference() -> None:
    short = {"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "1"}
    _, ctx, step = _setup(in_flight("n0", Phase.VERIFYING, "all-1g.10gb", allocatable=short, since=_ago(59)))
    assert verifying(ctx, step) is None
    _, ctx, step = _setup(in_flight("n0", Phase.VERIFYING, "all-1g.10gb", allocatable=short, since=_ago(60)))
    out = verifying(ctx, step)
    assert out is not None and out.phase == Phase.FAILED and out.unschedulable
    assert out.annotations[st.LAST_ERROR] == (
        "allocatable does not match config all-1g.10gb: nvidia.com/mig-1g.10gb: want 14 have 7, "
        "nvidia.com/mig-3g.40gb: want 0 have 1"
    )


def test_verifying_takes_a_new_target_back_to_draining() -> None:
    obj = in_flight("n0", Phase.VERIFYING, "all-1g.10gb", allocatable=OK)
    kube = FakeKube([obj])
    a = parsed({"n0": "all-3g.40gb"})
    out = verifying(context(kube), Step(NodeView.from_obj(obj), Target("a100", "all-3g.40gb"), a, NOW))
    assert (
        out is not None and out.phase == Phase.DRAINING and out.target == "all-3g.40gb" and out.unschedulable
    )


def test_done_clears_the_record_and_counts_the_result() -> None:
    started = _ago(120)
    obj = in_flight("n0", Phase.DONE, "all-1g.10gb", labels=SUCCESS, since=started, allocatable=OK)
    obj["spec"] = {}
    _, ctx, step = _setup(obj)
    out = done(ctx, step)
    assert out is not None and out.phase == Phase.IDLE
    assert not set(st.TRANSIENT) & set(out.annotations)
    assert sample(ctx, "migc_reconfigurations_total", pool="a100", result="success") == 1
    assert sample(ctx, "migc_reconfiguration_duration_seconds_sum") == 120.0
    abandoned = in_flight("n0", Phase.DONE, "all-1g.10gb", labels={st.MIG_CONFIG: "whole"})
    _, ctx, step = _setup(abandoned)
    done(ctx, step)
    assert sample(ctx, "migc_reconfigurations_total", pool="a100", result="abandoned") == 1
    assert sample(ctx, "migc_reconfiguration_duration_seconds_count") == 0
    rolled = in_flight(
        "n0", Phase.DONE, "whole", labels={st.MIG_CONFIG: "whole"}, extra={st.ROLLING_BACK: "true"}
    )
    _, ctx, step = _setup(rolled)
    done(ctx, step)
    assert sample(ctx, "migc_reconfigurations_total", pool="a100", result="rolled-back") == 1
