"""controller/reconciler/context.py: what every phase shares (checks, backoff, the writes)."""

from __future__ import annotations

import datetime as dt
import types

import pytest

from controller import state as st
from controller.assignment import ConfigSpec, Target
from controller.errors import TemporaryError
from controller.reconciler import context as ctxmod
from controller.reconciler.context import (
    Annotations,
    Backoff,
    Step,
    allocatable_diff,
    device_plugin_only,
    incompatible,
)
from controller.state import NodeView, Phase
from unit.controller.support import NOW, FakeKube, context, in_flight, node, parsed, sample

MIG = ConfigSpec("all-1g.10gb", "mixed", "mixed", {}, ({"migEnabled": True},))
WHOLE = ConfigSpec("whole", "none", "migc-whole-gpus", {}, ({"migEnabled": False},))


def _view(obj: dict[str, object]) -> NodeView:
    return NodeView.from_obj(obj)


def test_allocatable_diff_reads_counts_defensively() -> None:
    want = {"nvidia.com/mig-1g.10gb": 14}
    assert allocatable_diff({"nvidia.com/mig-1g.10gb": "14", "cpu": "64"}, want) == {}
    assert allocatable_diff({}, want) == {"nvidia.com/mig-1g.10gb": (14, 0)}
    assert allocatable_diff({"nvidia.com/mig-1g.10gb": "lots"}, want) == {"nvidia.com/mig-1g.10gb": (14, -1)}
    # A stale MIG resource counts, a stale whole-GPU count does not (nvidia.com/gpu is no MIG resource).
    stale = {"nvidia.com/mig-1g.10gb": "14", "nvidia.com/mig-3g.40gb": "2", "nvidia.com/gpu": "0"}
    assert allocatable_diff(stale, want) == {"nvidia.com/mig-3g.40gb": (0, 2)}
    assert list(allocatable_diff({"nvidia.com/mig-z": "1", "nvidia.com/mig-a": "1"}, {})) == [
        "nvidia.com/mig-a",
        "nvidia.com/mig-z",
    ]


def test_incompatible_and_device_plugin_only() -> None:
    mig_node, plain = _view(node("n0")), _view(node("n1", mig_capable=False))
    assert incompatible(mig_node, MIG) is None and incompatible(plain, WHOLE) is None
    assert incompatible(plain, None) is None  # a rollback to a config no longer described
    reason = incompatible(plain, MIG)
    assert reason is not None and "not MIG-capable" in reason and "n1" in reason and "<unset>" in reason
    assert device_plugin_only(plain, WHOLE) and device_plugin_only(plain, None)
    assert not device_plugin_only(mig_node, WHOLE)  # the MIG manager must switch MIG off there


def test_step_retarget_and_config() -> None:
    a = parsed({"n0": "all-3g.40gb", "n1": "all-1g.10gb"})
    moving = _view(in_flight("n0", Phase.DRAINING, "all-1g.10gb"))
    step = Step(moving, Target("a100", "all-3g.40gb"), a, NOW)
    assert step.retarget == Target("a100", "all-3g.40gb")
    assert step.config is not None and step.config.name == "all-1g.10gb"  # the node's own target
    assert Step(moving, Target("a100", "all-1g.10gb"), a, NOW).retarget is None
    assert Step(moving, None, a, NOW).retarget is None
    assert Step(moving, None, None, NOW).config is None
    rolling = _view(in_flight("n0", Phase.DRAINING, "all-1g.10gb", extra={st.ROLLING_BACK: "true"}))
    assert Step(rolling, Target("a100", "all-3g.40gb"), a, NOW).retarget is None  # held at the old config
    # ... unless the node already carries what the assignment wants: nothing to roll back then.
    there = in_flight(
        "n0",
        Phase.DRAINING,
        "all-1g.10gb",
        labels={st.MIG_CONFIG: "all-3g.40gb", st.MIG_STATE: "success"},
        extra={st.ROLLING_BACK: "true"},
    )
    assert Step(_view(there), Target("a100", "all-3g.40gb"), a, NOW).retarget == Target("a100", "all-3g.40gb")
    assert step.t == "2026-12-01T12:00:00.000000Z"


def test_backoff_doubles_up_to_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(ctxmod, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    b = Backoff(1.0, 5.0)
    assert not b.active("n0")
    assert [b.bump("n0") for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert b.active("n0") and not b.active("n1")
    clock[0] += 5.0
    assert not b.active("n0")
    b.reset_delay("n0")
    assert b.bump("n0") == 1.0 and b.active("n0")
    b.reset("n0")
    assert not b.active("n0")


def test_fail_schedules_one_automatic_retry_then_waits_for_a_human() -> None:
    kube = FakeKube([in_flight("n0", Phase.APPLYING, "all-1g.10gb")])
    ctx = context(kube)
    first = ctx.fail(_view(kube.nodes["n0"]), "MIG manager reported failed", NOW)
    assert first.phase == Phase.FAILED and first.attempts == 1
    # backoff * 2**(attempts-1) = 300 s
    assert first.annotations[st.RETRY_AFTER] == st.fmt_time(NOW + dt.timedelta(seconds=300))
    assert first.annotations[st.LAST_ERROR] == "MIG manager reported failed"
    second = ctx.fail(first, "again", NOW)
    assert second.attempts == 2 and st.RETRY_AFTER not in second.annotations  # max_attempts 2 reached
    assert sample(ctx, "migc_reconfigurations_total", pool="a100", result="failed") == 2
    event = kube.events[-1]
    assert (
        event["reason"] == "MigReconfigurationFailed" and "annotate migc.dev/retry=true" in event["message"]
    )
    assert event["involvedObject"] == {"apiVersion": "v1", "kind": "Node", "name": "n0"}


def test_fail_permanent_and_with_a_new_record() -> None:
    kube = FakeKube([in_flight("n0", Phase.FAILED, "all-1g.10gb", extra={st.ATTEMPTS: "1"})])
    ctx = context(kube)
    record: Annotations = {st.TARGET: "whole", st.POOL: "b", st.ATTEMPTS: "0"}
    out = ctx.fail(_view(kube.nodes["n0"]), "x" * 2000, NOW, permanent=True, extra=record)
    assert out.attempts == 1 and out.target == "whole"  # the new target's count starts over
    assert st.RETRY_AFTER not in out.annotations and len(out.annotations[st.LAST_ERROR]) == 1024
    assert sample(ctx, "migc_reconfigurations_total", pool="b", result="failed") == 1


def test_spec_writes_are_conditional_annotation_writes_are_not() -> None:
    kube = FakeKube([node("n0")])
    ctx = context(kube)
    n = _view(kube.nodes["n0"])
    ctx.patch(n, {st.PHASE_SINCE: "x"})
    ann, spec = ctx.cordon({st.PHASE: Phase.CORDONED.value})
    assert ann == {st.PHASE: "Cordoned", st.CORDONED: "true"} and spec == {"unschedulable": True}
    ctx.patch(n, ann, spec=spec, labels={"a": "b"})
    first, second = kube.node_writes("n0")
    assert first == {"metadata": {"annotations": {st.PHASE_SINCE: "x"}}}
    assert second["metadata"]["resourceVersion"] == "1" and second["metadata"]["labels"] == {"a": "b"}
    assert kube.nodes["n0"]["spec"]["unschedulable"] is True


def test_uncordon_keeps_a_humans_cordon_and_others_taints() -> None:
    taints = [{"key": st.TAINT_KEY, "effect": "NoSchedule"}, {"key": "dedicated", "effect": "NoSchedule"}]
    obj = in_flight("n0", Phase.VERIFYING, "whole", extra={st.PRE_CORDONED: "true"})
    obj["spec"]["taints"] = taints
    kube = FakeKube([obj])
    ctx = context(kube)
    out = ctx.uncordon(_view(kube.nodes["n0"]), {st.PHASE: Phase.DONE.value})
    assert out.unschedulable  # cordoned before migc came: stays
    assert [t["key"] for t in out.taints] == ["dedicated"] and st.CORDONED not in out.annotations
    kube2 = FakeKube([in_flight("n1", Phase.VERIFYING, "whole")])
    out2 = context(kube2).uncordon(_view(kube2.nodes["n1"]), {})
    assert not out2.unschedulable and "taints" not in kube2.node_writes()[0]["spec"]


def test_events_are_deterministic_bounded_and_best_effort() -> None:
    kube = FakeKube()
    ctx = context(kube)
    ctx.event("default", "Node", "v1", "n0", "R", "m" * 5000, NOW)
    ctx.event("default", "Node", "v1", "n0", "R", "m" * 5000, NOW)
    a, b = kube.events
    assert (
        a["metadata"]["name"] == b["metadata"]["name"]
    )  # the same event twice: one name (a 409, not a flood)
    assert a["metadata"]["name"].startswith("n0.migc.") and len(a["message"]) == 1024
    assert a["firstTimestamp"] == "2026-12-01T12:00:00Z" and a["reportingInstance"] == "ctl-test"
    ctx.assignment_event("InvalidAssignment", "bad", NOW)
    assert kube.events[-1]["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "migc-assignment",
        "namespace": "migc-system",
    }
    kube.event_error = TemporaryError("HTTP 503")
    ctx.event("default", "Node", "v1", "n0", "R", "m", NOW)  # does not raise


def test_reset_goes_back_to_idle_leaving_the_node_as_it_is() -> None:
    kube = FakeKube([in_flight("n0", Phase.APPLYING, "whole", extra={st.REVISION: "r1"})])
    kube.nodes["n0"]["spec"]["unschedulable"] = False
    ctx = context(kube)
    out = ctx.reset(_view(kube.nodes["n0"]), "forged", NOW)
    assert out.phase == Phase.IDLE and out.target is None and out.annotations[st.REVISION] == "r1"
    assert "labels" not in kube.node_writes()[0]["metadata"] and "spec" not in kube.node_writes()[0]
    assert sample(ctx, "migc_state_resets_total") == 1
    assert kube.events[-1]["reason"] == "MigcStateReset" and "forged" in kube.events[-1]["message"]


def test_once_seen_forget() -> None:
    ctx = context(FakeKube())
    assert not ctx.seen(("k",)) and ctx.seen(("k",))
    ctx.forget(("k",))
    assert not ctx.seen(("k",))
