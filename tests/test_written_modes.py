"""Files migc writes besides output/ (``plan --svg``, ``status --html``, recommend's policy edits) get
the mode a plain write would give them: 0666 less the umask for a new file, the old mode for a
replaced one; not mkstemp's 0600 (issue 25, item 14)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from statusfleet import status_argv, write_snapshot

from compiler.cli import main
from compiler.fsio import write_file_atomic

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_svg_and_html_files_are_0644_under_umask_022(
    tmp_path: Path, umask: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    svg = tmp_path / "svg"
    assert main(["plan", "examples/lab", "--from-scratch", "--svg", str(svg)]) == 0
    files = sorted(svg.glob("*.svg"))
    assert files and {mode(f) for f in files} == {0o644}
    html = tmp_path / "fleet.html"
    snap = write_snapshot(tmp_path / "cluster.json")
    assert main(status_argv("--snapshot", str(snap), "--html", str(html))) == 0
    assert mode(html) == 0o644
    capsys.readouterr()


def test_a_replaced_file_keeps_its_mode_and_the_umask_counts(tmp_path: Path) -> None:
    kept = tmp_path / "workloads.yaml"
    kept.write_text("old")
    kept.chmod(0o640)
    write_file_atomic(kept, b"new")
    assert kept.read_bytes() == b"new" and mode(kept) == 0o640
    old = os.umask(0o077)
    try:
        write_file_atomic(tmp_path / "private.html", b"x")
    finally:
        os.umask(old)
    assert mode(tmp_path / "private.html") == 0o600
