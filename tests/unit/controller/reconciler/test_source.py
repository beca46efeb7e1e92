"""controller/reconciler/source.py: the assignment and the DraPlan, parsed once, refused loudly."""

from __future__ import annotations

import json

from controller import dra as dralib
from controller.assignment import content_revision
from controller.reconciler.source import AssignmentSource, DraPlanSource
from unit.controller.support import (
    NOW,
    FakeKube,
    assignment_configmap,
    assignment_doc,
    configmap,
    context,
    sample,
)

KEY = ("migc-system", "migc-assignment")


def test_no_configmap_yet() -> None:
    loaded = AssignmentSource(context(FakeKube())).load(NOW)
    assert (loaded.assignment, loaded.valid, loaded.paused) == (None, False, False)


def test_a_valid_assignment_is_parsed_once_per_content() -> None:
    doc = assignment_doc({"n0": "whole"})
    kube = FakeKube(configmaps=[assignment_configmap(doc, **{"migc.dev/paused": "yes"})])
    src = AssignmentSource(context(kube))
    first = src.load(NOW)
    assert first.valid and first.paused and first.assignment is not None
    assert first.assignment.revision == doc["revision"]
    assert src.load(NOW).assignment is first.assignment  # the same content: not parsed again


def test_a_refused_assignment_keeps_the_last_valid_one_and_is_reported_once() -> None:
    kube = FakeKube(configmaps=[assignment_configmap(assignment_doc({"n0": "whole"}))])
    ctx = context(kube)
    src = AssignmentSource(ctx)
    good = src.load(NOW).assignment
    kube.configmaps[KEY]["data"]["assignment.json"] = "{not json"
    for _ in range(3):
        bad = src.load(NOW)
        assert bad.assignment is good and not bad.valid  # in-flight nodes finish with the last valid one
    assert [e["reason"] for e in kube.events] == ["InvalidAssignment"]
    assert sample(ctx, "migc_assignment_refusals_total", reason="invalid") == 1
    kube.configmaps[KEY]["data"] = {}
    assert not src.load(NOW).valid
    assert "has no key assignment.json" in kube.events[-1]["message"]  # a new content: reported again


def test_an_assignment_for_another_cluster_is_refused() -> None:
    kube = FakeKube(configmaps=[assignment_configmap(assignment_doc({"n0": "whole"}, cluster="east"))])
    ctx = context(kube)  # serves cluster "test"
    loaded = AssignmentSource(ctx).load(NOW)
    assert loaded.assignment is None and not loaded.valid
    assert sample(ctx, "migc_assignment_refusals_total", reason="wrong-cluster") == 1
    assert kube.events[0]["reason"] == "AssignmentForAnotherCluster"


def test_a_sharded_assignment_waits_for_its_shards_without_refusing() -> None:
    full = assignment_doc({"n0": "whole"})
    index = json.loads(json.dumps(full))
    index["pools"][0]["nodes"] = []
    index["pools"][0]["nodeShards"] = ["migc-assignment-0"]
    index["revision"] = content_revision(full)
    kube = FakeKube(configmaps=[assignment_configmap(index)])
    ctx = context(kube)
    src = AssignmentSource(ctx)
    waiting = src.load(NOW)
    assert waiting.assignment is None and not waiting.valid and kube.events == []
    shard = {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "NodeAssignmentShard",
        "cluster": "test",
        "pool": "a100",
        "nodes": {"n0": "whole"},
    }
    kube.configmaps[("migc-system", "migc-assignment-0")] = configmap(
        "migc-system", "migc-assignment-0", {"nodes.json": json.dumps(shard)}
    )
    loaded = src.load(NOW)
    assert (
        loaded.valid and loaded.assignment is not None and loaded.assignment.pools[0].named == {"n0": "whole"}
    )


def _draplan(cluster: str = "test") -> str:
    return json.dumps({"apiVersion": "migc.dev/v1alpha1", "kind": "DraPlan", "cluster": cluster,
                       "revision": "d" * 64, "pools": []})  # fmt: skip


def test_draplan_source() -> None:
    kube = FakeKube()
    ctx = context(kube)
    src = DraPlanSource(ctx)
    assert (src.load(NOW).plan, src.load(NOW).valid) == (None, True)  # no ConfigMap: no pool on DRA
    cm = configmap("migc-system", dralib.DRA_CONFIGMAP, {dralib.DRA_KEY: _draplan()})
    kube.configmaps[("migc-system", dralib.DRA_CONFIGMAP)] = cm
    good = src.load(NOW)
    assert good.valid and good.plan is not None and good.plan.revision == "d" * 64
    kube.configmaps[("migc-system", dralib.DRA_CONFIGMAP)]["data"][dralib.DRA_KEY] = _draplan("east")
    for _ in range(2):
        bad = src.load(NOW)
        assert bad.plan is good.plan and not bad.valid
    assert [e["reason"] for e in kube.events] == ["InvalidDraPlan"]
    assert sample(ctx, "migc_assignment_refusals_total", reason="dra-wrong-cluster") == 1
