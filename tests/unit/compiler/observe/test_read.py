"""compiler/observe/read.py: snapshot files merged, refused when unusable, and live reading's coded
errors. (Split from tests/test_observe.py.)"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path

import pytest
import statusfleet as sf

from compiler.observe.read import ObserveError, read_cluster, read_snapshots

NOW = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)


def test_snapshot_files_merge(tmp_path: Path) -> None:
    whole = sf.fleet()
    nodes = {
        "kind": "NodeList",
        "items": [{k: v for k, v in i.items() if k != "kind"} for i in whole["items"] if i["kind"] == "Node"],
    }
    pods = {"kind": "List", "items": [i for i in whole["items"] if i["kind"] == "Pod"]}
    (tmp_path / "nodes.json").write_text(json.dumps(nodes))
    (tmp_path / "pods.json").write_text(json.dumps(pods))
    (tmp_path / "all.json").write_text(json.dumps(whole))
    split = read_snapshots([tmp_path / "nodes.json", tmp_path / "pods.json"], NOW)
    one = read_snapshots([tmp_path / "all.json"], NOW)
    assert split.nodes == one.nodes and split.pods == one.pods
    assert len(one.nodes) == 11
    # one pod per allocated unit; the CPU-only and the finished pod are not kept
    assert len(one.pods) == sum(1 for i in whole["items"] if i["kind"] == "Pod") - 2


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "neither a Kubernetes List"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_unusable_snapshot_is_an_error(tmp_path: Path, content: bytes, why: str) -> None:
    path = tmp_path / "snap.json"
    path.write_bytes(content)
    with pytest.raises(ObserveError) as info:
        read_snapshots([path], NOW)
    assert info.value.diagnostic.code == "MIGC400" and why in info.value.diagnostic.message


def test_only_regular_bounded_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ObserveError, match="not a regular file"):
        read_snapshots([tmp_path], NOW)
    with pytest.raises(ObserveError, match="No such file"):
        read_snapshots([tmp_path / "missing.json"], NOW)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ObserveError, match="not a regular file"):  # must not block on the pipe
        read_snapshots([fifo], NOW)
    big = tmp_path / "big.json"
    big.write_text(json.dumps(sf.fleet()))
    monkeypatch.setattr("compiler.observe.read.MAX_SNAPSHOT_BYTES", 1000)
    with pytest.raises(ObserveError, match="more than the 1000"):
        read_snapshots([big], NOW)


def test_live_reading_without_the_client_is_a_coded_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # as if the package were not installed
    with pytest.raises(ObserveError) as info:
        read_cluster(NOW, kubeconfig="/nonexistent")
    assert (
        info.value.diagnostic.code == "MIGC403" and "pip install kubernetes" in info.value.diagnostic.message
    )


def test_live_reading_with_a_broken_kubeconfig(tmp_path: Path) -> None:
    bad = tmp_path / "config"
    bad.write_text("apiVersion: v1\nkind: Config\ncontexts: []\n")
    with pytest.raises(ObserveError) as info:
        read_cluster(NOW, kubeconfig=str(bad))
    assert info.value.diagnostic.code == "MIGC403" and str(bad) in info.value.diagnostic.message
