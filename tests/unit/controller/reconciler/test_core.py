"""controller/reconciler/core.py: one pass over the stand-in API: distrust, continue, admit, gauges."""

from __future__ import annotations

import dataclasses
from typing import Any

from controller import state as st
from controller.errors import TemporaryError
from controller.metrics import Metrics
from controller.reconciler.core import Reconciler
from controller.state import Phase
from unit.controller.support import (
    NOW,
    SETTINGS,
    FakeKube,
    assignment_configmap,
    assignment_doc,
    gpu_operator_configmaps,
    in_flight,
    node,
)


def _reconciler(kube: FakeKube, **settings: Any) -> Reconciler:
    s = dataclasses.replace(SETTINGS, **settings)
    return Reconciler(kube, s, Metrics(), lambda: NOW)


def _kube(nodes: list[dict[str, Any]], assigned: dict[str, str], **kw: Any) -> FakeKube:
    doc = assignment_doc(assigned, **kw)
    return FakeKube(nodes, configmaps=[assignment_configmap(doc), *gpu_operator_configmaps()])


def _gauge(r: Reconciler, name: str, **labels: str) -> float | None:
    return r.ctx.metrics.registry.get_sample_value(name, labels)


def test_a_pass_admits_within_budget_and_sets_the_gauges() -> None:
    kube = _kube([node("n0"), node("n1")], {"n0": "all-1g.10gb", "n1": "all-1g.10gb"})
    r = _reconciler(kube)
    r.reconcile_once()
    # n0 is cordoned and, with no GPU pod to wait for, chained no further in this pass.
    assert (kube.phase("n0"), kube.phase("n1")) == ("Cordoned", "Idle")
    assert r.busy
    assert _gauge(r, "migc_nodes", phase="Cordoned") == 1 and _gauge(r, "migc_nodes", phase="Idle") == 1
    assert _gauge(r, "migc_layout_drift_nodes") == 2
    r.reconcile_once()  # the next pass continues n0: Cordoned -> Draining -> Applying
    assert (
        kube.phase("n0") == "Applying"
        and kube.nodes["n0"]["metadata"]["labels"][st.MIG_CONFIG] == "all-1g.10gb"
    )
    assert kube.phase("n1") == "Idle"  # still out of budget


def test_a_forged_record_is_reset_not_acted_on() -> None:
    forged = in_flight("n0", Phase.APPLYING, "all-3g.40gb")
    forged["spec"] = {}  # not cordoned: migc never wrote that phase
    kube = _kube([forged], {"n0": "all-1g.10gb"})
    r = _reconciler(kube)
    r.reconcile_once()
    assert kube.events[0]["reason"] == "MigcStateReset"
    assert st.MIG_CONFIG not in kube.nodes["n0"]["metadata"]["labels"]  # the forged target was never applied
    assert kube.annotations("n0")[st.TARGET] == "all-1g.10gb"  # admitted afresh to what the assignment wants


def test_one_nodes_failing_step_does_not_stop_the_pass() -> None:
    nodes = [in_flight(n, Phase.CORDONED, "all-1g.10gb") for n in ("n0", "n1")]
    kube = _kube(nodes, {"n0": "all-1g.10gb", "n1": "all-1g.10gb"}, max_unavailable=2)
    kube.patch_errors["n0"] = TemporaryError("HTTP 409", status=409)
    r = _reconciler(kube)
    r.reconcile_once()
    assert kube.phase("n1") == "Applying" and kube.phase("n0") == "Cordoned"
    assert r.ctx.retry.active("n0") and not r.ctx.retry.active("n1")


def test_dry_run_writes_nothing() -> None:
    kube = _kube([node("n0")], {"n0": "all-1g.10gb"})
    r = _reconciler(kube, dry_run=True)
    r.reconcile_once()
    assert kube.writes == [] and not r.busy


def test_no_valid_assignment_admits_nothing_but_in_flight_nodes_finish() -> None:
    ok = {st.MIG_CONFIG: "all-1g.10gb", st.MIG_STATE: "success"}
    flying = in_flight(
        "n0", Phase.VERIFYING, "all-1g.10gb", labels=ok, allocatable={"nvidia.com/mig-1g.10gb": "14"}
    )
    kube = _kube([flying, node("n1")], {"n0": "all-1g.10gb", "n1": "all-1g.10gb"}, max_unavailable=2)
    r = _reconciler(kube)
    r.reconcile_once()  # loads the assignment; n0 verifies and is released, n1 admitted
    assert kube.phase("n0") == "Idle" and kube.phase("n1") == "Cordoned"
    kube.configmaps[("migc-system", "migc-assignment")]["data"]["assignment.json"] = "{"
    kube.nodes["n2"] = node("n2")
    r.reconcile_once()
    assert (
        kube.phase("n1") == "Draining" or kube.phase("n1") == "Applying"
    )  # keeps going on the last valid one
    assert kube.phase("n2") == "Idle"
    assert any(e["reason"] == "InvalidAssignment" for e in kube.events)
