"""controller/assignment.py: the compiler -> controller contract, parsed, bounded and resolved."""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import pytest

from controller import assignment as am
from controller.assignment import Target
from controller.errors import IncompleteAssignmentError, InvalidAssignmentError, WrongClusterError
from unit.controller.support import assignment_doc


def _text(doc: dict[str, Any]) -> str:
    return json.dumps(doc)


def _window(doc: dict[str, Any], start: str, zone: str) -> None:
    doc["pools"][0]["maintenanceWindows"] = [{"start": start, "end": "02:00", "timezone": zone}]


def test_parse_reads_configs_pools_and_windows() -> None:
    doc = assignment_doc({"n0": "all-1g.10gb", "n1": "whole"}, max_unavailable=2)
    doc["pools"][0]["maintenanceWindows"] = [
        {"days": [], "start": "22:00", "end": "04:00", "timezone": "UTC"}
    ]
    a = am.parse(_text(doc), cluster="test")
    assert (a.cluster, a.revision) == ("test", doc["revision"])
    assert a.configs["all-1g.10gb"].resources == {"nvidia.com/mig-1g.10gb": 14}
    assert a.configs["all-1g.10gb"].mig_enabled and not a.configs["whole"].mig_enabled
    (pool,) = a.pools
    assert (
        pool.named == {"n0": "all-1g.10gb", "n1": "whole"}
        and pool.selector is None
        and pool.max_unavailable == 2
    )
    (w,) = pool.windows
    assert w.days == frozenset(range(7))  # no days listed: every day, not never
    assert pool.in_window(dt.datetime(2026, 12, 1, 3, 0, tzinfo=dt.UTC))
    assert not pool.in_window(dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC))


def test_idle_surge_is_read_and_absent_is_zero() -> None:
    (pool,) = am.parse(_text(assignment_doc({"n0": "whole"}, idle_surge=3))).pools
    assert pool.idle_surge == 3 and isinstance(pool.idle_surge, int)
    doc = assignment_doc({"n0": "whole"})
    assert "idleSurge" not in doc["pools"][0]
    (pool,) = am.parse(_text(doc)).pools
    assert pool.idle_surge == 0  # compiled before the field: no surge, the old behaviour
    (pool,) = am.parse(_text(assignment_doc({"n0": "whole"}, idle_surge=0))).pools
    assert pool.idle_surge == 0
    doc = assignment_doc({"n0": "whole"})
    doc["pools"][0]["idleSurge"] = 2.0  # JSON Schema's "integer" admits it: a Python int all the same
    (pool,) = am.parse(_text(doc)).pools
    assert pool.idle_surge == 2 and type(pool.idle_surge) is int


@pytest.mark.parametrize("value", [-1, 1.5, "1", True, None, 10001])
def test_parse_refuses_a_bad_idle_surge(value: Any) -> None:
    doc = assignment_doc({"n0": "whole"})
    doc["pools"][0]["idleSurge"] = value
    with pytest.raises(InvalidAssignmentError, match="idleSurge"):
        am.parse(_text(doc))


def test_a_pool_without_windows_is_always_open() -> None:
    (pool,) = am.parse(_text(assignment_doc({"n0": "whole"}))).pools
    assert pool.in_window(dt.datetime(2026, 12, 6, 12, 0, tzinfo=dt.UTC))


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda d: d.update(revision="not-a-hash"), "revision"),  # the schema's pattern
        (lambda d: d.update(revision="abcdef0123456789\n"), "not a content hash"),
        (lambda d: d["pools"][0]["nodes"].append({"name": "n0", "config": "whole"}), "assigned twice"),
        (lambda d: d["pools"][0].update(selector={"a": "b"}), "either named nodes or a selector"),
        (lambda d: d["pools"][0].update(nodes=[], selector={}), "empty selector"),
        (lambda d: d["pools"][0].update(configCounts={"nope": 1}), "unknown config 'nope'"),
        (lambda d: d["configs"].update({"bad name!": d["configs"]["whole"]}), "not a valid label value"),
        (lambda d: _window(d, "24:00", "UTC"), "start"),
        (lambda d: _window(d, "01:00", "America"), "unknown time zone 'America'"),  # a tzdata directory
        (lambda d: _window(d, "01:00", "../etc"), "not a time zone name"),
        (lambda d: d.pop("pools"), "pools"),
    ],
)  # fmt: skip
def test_parse_refuses(edit: Any, match: str) -> None:
    doc = assignment_doc({"n0": "whole"})
    edit(doc)
    with pytest.raises(InvalidAssignmentError, match=match):
        am.parse(_text(doc))


def test_wrong_cluster() -> None:
    text = _text(assignment_doc({"n0": "whole"}, cluster="east"))
    with pytest.raises(WrongClusterError, match=r"addressed to cluster 'east'.*serves cluster 'west'"):
        am.parse(text, cluster="west")
    assert am.parse(text).cluster == "east"  # no identity: any cluster


def test_shape_limits_are_checked_on_the_raw_text() -> None:
    with pytest.raises(InvalidAssignmentError, match="more than the limit of 10"):
        am.check_shape("x" * 11, limit=10)
    deep = "[" * 33 + "]" * 33
    with pytest.raises(InvalidAssignmentError, match="nested deeper than 32"):
        am.check_shape(deep)
    am.check_shape("[" * 32 + "]" * 32)
    am.check_shape(json.dumps({"k": "[" * 100}))  # brackets inside strings do not count
    with pytest.raises(InvalidAssignmentError, match="nested deeper"):
        am.parse(deep)  # refused before json.loads recurses


def test_label_and_object_names() -> None:
    assert am.is_label_value("") and am.is_label_value("all-1g.10gb") and am.is_label_value("a" * 63)
    assert not am.is_label_value("a" * 64) and not am.is_label_value("-a") and not am.is_label_value("a b")
    assert am.is_object_name("migc-assignment-0") and am.is_object_name("a.b")
    assert not am.is_object_name("Upper") and not am.is_object_name("a_b") and not am.is_object_name("")


def test_content_revision_ignores_the_revision_and_key_order() -> None:
    a = {"b": 1, "a": [1, "ü"], "revision": "x"}
    b = {"a": [1, "ü"], "b": 1, "revision": "y"}
    assert am.content_revision(a) == am.content_revision(b)
    assert am.content_revision(a) != am.content_revision({"a": [1, "u"], "b": 1})
    assert len(am.content_revision(a)) == 64


def test_resolve_named_and_selector_pools() -> None:
    doc = assignment_doc({"named": "whole"})
    doc["configs"].update(copy.deepcopy(assignment_doc({"x": "all-1g.10gb"})["configs"]))
    doc["pools"].append(
        {"name": "sel", "gpuModel": "A100", "maxUnavailable": 1, "maintenanceWindows": [], "nodes": [],
         "selector": {"pool": "sel"}, "configCounts": {"all-1g.10gb": 1, "whole": 2}}
    )  # fmt: skip
    a = am.parse(_text(doc))
    labels = {n: {"pool": "sel"} for n in ("d", "c", "b", "a")} | {"named": {"pool": "sel"}, "z": {}}
    got = am.resolve(a, labels, {"c": "all-1g.10gb"})
    # "named" belongs to the named pool even though it matches the selector; c keeps its config;
    # the rest fill in name order: a, b get "whole", d has no slot left; z matches nothing.
    assert got == {
        "named": Target("a100", "whole"),
        "c": Target("sel", "all-1g.10gb"),
        "a": Target("sel", "whole"),
        "b": Target("sel", "whole"),
    }


def _sharded() -> tuple[dict[str, Any], dict[str, str | None]]:
    full = assignment_doc({"n0": "whole", "n1": "whole"})
    index = copy.deepcopy(full)
    index["pools"][0]["nodes"] = []
    index["pools"][0]["nodeShards"] = ["migc-assignment-0"]
    shard = {
        "apiVersion": "migc.dev/v1alpha1",
        "kind": "NodeAssignmentShard",
        "cluster": "test",
        "pool": "a100",
        "nodes": {"n1": "whole", "n0": "whole"},
    }
    index["revision"] = am.content_revision(full)  # the revision of the document put back together
    return index, {"migc-assignment-0": json.dumps(shard)}


def test_assemble_puts_shards_back_and_checks_their_revision() -> None:
    index, shards = _sharded()
    assert am.shard_names(json.dumps(index)) == ("migc-assignment-0",)
    doc = am.assemble(json.dumps(index), shards)
    assert doc["pools"][0]["nodes"] == [{"name": "n0", "config": "whole"}, {"name": "n1", "config": "whole"}]
    assert am.parse_document(doc).pools[0].named == {"n0": "whole", "n1": "whole"}
    with pytest.raises(IncompleteAssignmentError, match="not there yet"):
        am.assemble(json.dumps(index), {"migc-assignment-0": None})
    stale = json.loads(shards["migc-assignment-0"] or "")
    stale["nodes"]["n2"] = "whole"
    with pytest.raises(IncompleteAssignmentError, match="do not add up to revision"):
        am.assemble(json.dumps(index), {"migc-assignment-0": json.dumps(stale)})
    stale["pool"] = "other"
    with pytest.raises(InvalidAssignmentError, match="belongs to cluster 'test' pool 'other'"):
        am.assemble(json.dumps(index), {"migc-assignment-0": json.dumps(stale)})
    with pytest.raises(InvalidAssignmentError, match="shards were not put back"):
        am.parse(json.dumps(index))


def test_shard_names_refuses_bad_lists() -> None:
    index, _ = _sharded()
    index["pools"][0]["nodeShards"] = ["a", "a"]
    with pytest.raises(InvalidAssignmentError, match="named twice"):
        am.shard_names(json.dumps(index))
    index["pools"][0]["nodeShards"] = ["Not_A_Name"]
    with pytest.raises(InvalidAssignmentError, match="not a list of ConfigMap names"):
        am.shard_names(json.dumps(index))
    assert am.shard_names(json.dumps(assignment_doc({"n0": "whole"}))) == ()
