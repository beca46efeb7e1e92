"""controller/reconciler/dra.py: static DRA nodes verified from ResourceSlices, DynamicMIG nodes kept out."""

from __future__ import annotations

import json
from typing import Any

from controller import dra as dralib
from controller import state as st
from controller.assignment import Assignment, Target, parse
from controller.reconciler.context import Step
from controller.reconciler.dra import (
    dynamic_conflict,
    missing_node_labels,
    slices_mismatch,
    static_pool,
    unverifiable,
)
from controller.state import NodeView, Phase
from unit.controller.support import CONFIGS, NOW, FakeKube, assignment_doc, context, in_flight, node, parsed

DEPLOY_DP = "nvidia.com/gpu.deploy.device-plugin"
PLAN = dralib.parse_document(
    {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "DraPlan",
        "cluster": "test",
        "revision": "b" * 64,
        "pools": [
            {"name": "dra-a", "gpuModel": "A100", "mig": "static", "driver": dralib.DRIVER,
             "nodeLabels": {DEPLOY_DP: "false"}, "nodes": [{"name": "n0", "devices": {"1g.10gb": 14}}]},
            {"name": "dra-sel", "gpuModel": "A100", "mig": "static", "driver": dralib.DRIVER,
             "nodeLabels": {}, "selector": {"pool": "sel"}, "nodes": []},
            {"name": "dyn", "gpuModel": "H100", "mig": "dynamic", "driver": dralib.DRIVER,
             "nodeLabels": {}, "selector": {"pool": "dyn"}, "nodes": []},
        ],
    }
)  # fmt: skip
DRA_CFG = {**CONFIGS["all-1g.10gb"], "devicePluginConfig": "migc-dra-mixed", "resources": {}}


def _assignment(config: str = "all-1g.10gb") -> Assignment:
    doc = assignment_doc({"n0": "all-1g.10gb"}, pool="dra-a")
    doc["configs"] = {config: DRA_CFG}
    doc["pools"][0]["nodes"] = [{"name": "n0", "config": config}]
    return parse(json.dumps(doc))


ONE_POOL: dict[str, Any] = {
    "apiVersion": "migc.dev/v1alpha1",
    "kind": "DraPlan",
    "cluster": "test",
    "revision": "c" * 64,
    "pools": [
        {
            "name": "dra-a",
            "gpuModel": "A100",
            "mig": "static",
            "driver": dralib.DRIVER,
            "nodeLabels": {},
            "nodes": [],
        }
    ],
}


def _slices(*profiles: str) -> list[dict[str, Any]]:
    devices = [{"name": f"mig-{i}", "attributes": {"type": {"string": "mig"}, "profile": {"string": p}}}
               for i, p in enumerate(profiles)]  # fmt: skip
    return [
        {
            "metadata": {"name": "n0-slice"},
            "spec": {"driver": dralib.DRIVER, "nodeName": "n0", "devices": devices,
                     "pool": {"name": "n0", "generation": 1, "resourceSliceCount": 1}},
        }
    ]  # fmt: skip


def _step(target: Target | None, **kw: Any) -> Step:
    obj = in_flight("n0", Phase.VERIFYING, "all-1g.10gb", **kw)
    return Step(NodeView.from_obj(obj), target, _assignment(), NOW)


def test_static_pool_from_the_plan_the_assignment_or_the_record() -> None:
    assert static_pool(None, _step(Target("dra-a", "all-1g.10gb"))) is None
    assert static_pool(PLAN, _step(Target("x", "all-1g.10gb"))) is PLAN.pools[0]  # listed by name
    other = Step(NodeView.from_obj(in_flight("n5", Phase.VERIFYING, "c")), None, None, NOW)
    assert static_pool(PLAN, other) is None  # recorded pool a100: not on DRA
    rec = in_flight("n5", Phase.VERIFYING, "c", extra={st.POOL: "dra-sel"})
    assert static_pool(PLAN, Step(NodeView.from_obj(rec), None, None, NOW)) is PLAN.pools[1]


def test_slices_mismatch_compares_the_published_devices() -> None:
    kube = FakeKube()
    ctx = context(kube)
    step = _step(Target("dra-a", "all-1g.10gb"))
    kube.slices = _slices(*["1g.10gb"] * 14)
    assert slices_mismatch(ctx, step, PLAN.pools[0]) is None
    kube.slices = _slices(*["1g.10gb"] * 13, "3g.40gb")
    why = slices_mismatch(ctx, step, PLAN.pools[0])
    assert why is not None and why.endswith("1g.10gb: want 14 have 13, 3g.40gb: want 0 have 1")
    kube.slices = _slices("1g.10gb", "1g.10gb")
    kube.slices[0]["spec"]["pool"]["resourceSliceCount"] = 2
    assert "not usable yet" in (slices_mismatch(ctx, step, PLAN.pools[0]) or "")


def test_a_plan_and_an_assignment_of_different_renders_wait() -> None:
    plan = dralib.parse_document(
        {
            **ONE_POOL,
            "pools": [{**ONE_POOL["pools"][0], "nodes": [{"name": "n0", "devices": {"gpu": 2}}]}],
        }
    )
    why = slices_mismatch(context(FakeKube()), _step(Target("dra-a", "all-1g.10gb")), plan.pools[0])
    assert why is not None and "different renders" in why


def test_unverifiable_needs_a_static_pool_for_a_dra_config() -> None:
    cfg = _assignment().configs["all-1g.10gb"]
    assert unverifiable(PLAN, "n0", "dra-a", cfg) is None
    assert "no DraPlan is synced" in (unverifiable(None, "n0", "dra-a", cfg) or "")
    assert "no static DRA pool for it (pool dyn)" in (unverifiable(PLAN, "n9", "dyn", cfg) or "")
    plain = parsed({"n0": "all-1g.10gb"}).configs["all-1g.10gb"]
    assert unverifiable(None, "n0", "a100", plain) is None  # a device-plugin config: allocatable proves it


def test_dynamic_conflict_and_missing_labels() -> None:
    dyn = NodeView.from_obj(node("n7", labels={"pool": "dyn"}))
    assert "DynamicMIG" in (dynamic_conflict(PLAN, "n7", dyn, "a100") or "")
    assert dynamic_conflict(PLAN, "n0", NodeView.from_obj(node("n0")), "dra-a") is None
    assert dynamic_conflict(None, "n7", dyn, "a100") is None
    bare = NodeView.from_obj(node("n0"))
    assert missing_node_labels(PLAN, "n0", bare, "dra-a") == {DEPLOY_DP: "false"}
    labelled = NodeView.from_obj(node("n0", labels={DEPLOY_DP: "false"}))
    assert missing_node_labels(PLAN, "n0", labelled, "dra-a") == {}
    assert missing_node_labels(None, "n0", bare, "dra-a") == {}
    assert missing_node_labels(PLAN, "n9", bare, "a100") == {}
