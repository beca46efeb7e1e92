"""``plan`` reads the deployed assignment once per process (compiler/current.py): the nodes, the
backends and the capacity report's revision come from one parse, and a file rewritten in between is
read again, never served from the earlier parse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_render_support import default_solution, policy

from compiler.catalog import load_catalog
from compiler.current import ASSIGNMENT_FILE, read_assignment, read_capacity, read_current
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
