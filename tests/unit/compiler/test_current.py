"""``plan`` reads the deployed assignment once per process (compiler/current.py): the nodes, the
backends and the capacity report's revision come from one parse, and a file rewritten in between is
read again, never served from the earlier parse. Then the documents themselves: an assignment's
nodes and counted placeholders, and a CapacityReport checked against its assignment."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from test_render_support import default_solution, policy

from compiler.catalog import load_catalog
from compiler.current import (
    ASSIGNMENT_FILE,
    RecordedCapacity,
    capacity_rows,
    read_assignment,
    read_capacity,
    read_current,
    state_from_assignment,
)
from compiler.model import CurrentState, GpuLayout
from compiler.render import manifests, render
from compiler.render.writer import write_tree


def _sharded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    monkeypatch.setattr(manifests, "SHARD_BYTES", 1024)  # shard the small test fleet
    files = render(policy(), default_solution(), load_catalog())
    shards = sorted(p for p in files if "configmap-migc-assignment-" in p)
    assert shards, "the assignment was not sharded"
    out = tmp_path / "out"
    assert not write_tree(files, out).failed
    return out, shards


def test_unchanged_files_are_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, _ = _sharded(tmp_path, monkeypatch)
    path = out / "east" / ASSIGNMENT_FILE
    first = read_assignment(path)
    assert read_assignment(path) is first
    state, diagnostics = read_current(out, policy())
    assert diagnostics == [] and len(state.as_dict()) == 5
    recorded, more = read_capacity(out)
    assert more == [] and recorded.clusters == ("east",)
    assert read_assignment(path) is first


def test_a_rewritten_shard_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, shards = _sharded(tmp_path, monkeypatch)
    path = out / "east" / ASSIGNMENT_FILE
    first = read_assignment(path)
    shard = out / shards[0]
    text = shard.read_text()
    # In place (same inode), same size, one node given a config the index lacks: only the
    # modification time tells the two apart.
    stat = shard.stat()
    edited = text.replace(': "migc-', ': "xigc-', 1)
    assert edited != text and len(edited) == len(text)
    shard.write_text(edited)
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    state, diagnostics = read_current(out, policy())
    assert [d.code for d in diagnostics] == ["MIGC303"], diagnostics
    assert state.as_dict() == {}
    shard.write_text(text)  # back as it was: read again, and equal to the first parse
    again = read_assignment(path)
    assert again is not first and again == first


def test_a_replaced_tree_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, _ = _sharded(tmp_path, monkeypatch)
    path = out / "east" / ASSIGNMENT_FILE
    first = read_assignment(path)
    monkeypatch.setattr(manifests, "SHARD_BYTES", 1 << 17)  # the next compile writes one ConfigMap
    assert not write_tree(render(policy(), default_solution(), load_catalog()), out).failed
    second = read_assignment(path)
    assert second is not first
    assert not any(p.get("nodeShards") for p in second["pools"]) and second == first


def test_equal_deployed_layouts_are_one_object(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The solver counts deployed GPUs by layout (80,000 at 10,000 nodes): equal layouts of
    different configs and nodes are handed over as one object, found by identity."""
    out, _ = _sharded(tmp_path, monkeypatch)
    state, _ = read_current(out, policy())
    gpus = [gpu for layout in state.as_dict().values() for gpu in layout]
    distinct = {gpu: gpu for gpu in gpus}
    assert len(distinct) < len(gpus)  # the case this is for: layouts repeat
    assert all(gpu is distinct[gpu] for gpu in gpus)


# --- the assignment and capacity documents read back (hand-made documents) --------------------------

MIG7 = {"migEnabled": True, "profiles": {"1g.10gb": 7}}
OFF = {"migEnabled": False, "profiles": {}}


def test_an_assignment_gives_each_named_node_and_counted_placeholder_its_layout() -> None:
    p = policy()  # pool l40s of cluster east has one node: l40s-01
    doc: dict[str, Any] = {
        "cluster": "east",
        "configs": {"small": {"devices": [MIG7, OFF]}, "whole": {"devices": [OFF, OFF]}},
        "pools": [
            {"name": "a100", "nodes": [{"name": "a100-01", "config": "small"}]},
            # two nodes counted, but the policy names one node in l40s: the surplus is not a target
            {"name": "l40s", "nodes": [], "configCounts": {"whole": 2}},
        ],
    }
    state = state_from_assignment(doc, p)
    small = (GpuLayout.of({"1g.10gb": 7}), GpuLayout.whole())
    assert state == {
        ("east", "a100", "a100-01"): small,
        ("east", "l40s", "l40s-01"): (GpuLayout.whole(), GpuLayout.whole()),
    }
    doc["configs"]["small"] = {"devices": "all"}
    with pytest.raises(ValueError, match="config without a device list"):
        state_from_assignment(doc, p)


def test_nothing_deployed_is_an_empty_state(tmp_path: Path) -> None:
    assert read_current(None) == (CurrentState(), [])
    assert read_current(tmp_path / "missing") == (CurrentState(), [])
    assert read_capacity(tmp_path / "missing") == (RecordedCapacity(), [])


def _row(workload: str, requested: int, served: int) -> dict[str, object]:
    return {
        "tenant": "search",
        "workload": workload,
        "resource": "1g.10gb",
        "requested": requested,
        "served": served,
    }


def _report(**change: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "kind": "CapacityReport",
        "cluster": "east",
        "assignmentRevision": "rev-1",
        "pools": [{"name": "a100", "demand": [_row("bert", 8, 6), _row("t5", 2, 2)]}],
    }
    doc.update(change)
    return doc


def test_capacity_rows_are_checked_against_the_assignment_they_sit_next_to() -> None:
    rows = capacity_rows(_report(), "east", "rev-1")
    assert rows == [
        (("east", "a100", "search", "bert", "1g.10gb"), (8, 6)),
        (("east", "a100", "search", "t5", "1g.10gb"), (2, 2)),
    ]
    recorded = RecordedCapacity(("east",), tuple(rows))
    assert recorded.covers("east") and not recorded.covers("west")
    assert recorded.by_pool("east") == {("search", "a100", "1g.10gb"): (10, 8)}  # workloads summed
    assert recorded.by_pool("west") == {}
    with pytest.raises(ValueError, match="describes cluster 'east', the assignment 'west'"):
        capacity_rows(_report(), "west", "rev-1")
    with pytest.raises(ValueError, match="rendered for assignment revision 'rev-1'"):
        capacity_rows(_report(), "east", "rev-2")


@pytest.mark.parametrize(
    ("row", "why"),
    [
        ({"requested": 2, "served": 3}, "served more than requested"),
        ({"requested": True, "served": 0}, "requested is not a non-negative integer"),
        ({"requested": -1, "served": 0}, "requested is not a non-negative integer"),
        ({"tenant": ""}, "tenant is not a non-empty string"),
    ],
)
def test_a_capacity_row_migc_did_not_write_is_refused(row: dict[str, object], why: str) -> None:
    base = _row("bert", 1, 1)
    doc = _report(pools=[{"name": "a100", "demand": [base | row]}])
    with pytest.raises(ValueError, match=why):
        capacity_rows(doc, "east", "rev-1")
    twice = _report(pools=[{"name": "a100", "demand": [base, base]}])
    with pytest.raises(ValueError, match="listed twice"):
        capacity_rows(twice, "east", "rev-1")
