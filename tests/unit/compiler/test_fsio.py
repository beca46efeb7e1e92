"""compiler/fsio.py: bounded reads that refuse what is not a regular file, atomic writes, output locks.

The CLI-level behaviour (a FIFO as --current, a symlinked --out, two compiles at once) is in
tests/test_fs_safety.py; these call the functions directly.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from compiler.fsio import (
    MiB,
    OutputBusy,
    OutputLock,
    ReadRefused,
    new_file_mode,
    read_bounded,
    refuse_symlink,
    write_file_atomic,
    write_files_atomic,
)


def _code(exc: pytest.ExceptionInfo[ReadRefused]) -> str:
    return exc.value.diagnostic.code


def test_read_bounded_returns_the_bytes_up_to_the_limit_and_refuses_one_more(tmp_path: Path) -> None:
    f = tmp_path / "a.json"
    f.write_bytes(b"x" * 10)
    assert read_bounded(f, 10, what="a test file") == b"x" * 10
    with pytest.raises(ReadRefused) as exc:
        read_bounded(f, 9, what="a test file", shown="shown/a.json")
    assert _code(exc) == "MIGC016"
    assert exc.value.diagnostic.file == "shown/a.json"  # the name the user gave, not the resolved one
    assert "a test file" in exc.value.diagnostic.message


def test_read_bounded_refuses_a_directory_and_a_fifo_without_blocking(tmp_path: Path) -> None:
    with pytest.raises(ReadRefused) as exc:
        read_bounded(tmp_path, MiB, what="x")
    assert _code(exc) == "MIGC015" and "a directory" in exc.value.diagnostic.message
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ReadRefused) as exc:  # no writer: an open() would hang, the stat refuses first
        read_bounded(fifo, MiB, what="x")
    assert _code(exc) == "MIGC015" and "FIFO" in exc.value.diagnostic.message


def test_read_bounded_follows_links_but_names_loops_and_dangling_links(tmp_path: Path) -> None:
    target = tmp_path / "real"
    target.write_bytes(b"data")
    (tmp_path / "link").symlink_to(target)
    assert read_bounded(tmp_path / "link", MiB, what="x") == b"data"
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    with pytest.raises(ReadRefused) as exc:
        read_bounded(tmp_path / "dangling", MiB, what="x")
    assert _code(exc) == "MIGC017" and "does not exist" in exc.value.diagnostic.message
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    with pytest.raises(ReadRefused) as exc:
        read_bounded(tmp_path / "loop1", MiB, what="x")
    assert _code(exc) == "MIGC017" and "loop" in exc.value.diagnostic.message
    with pytest.raises(FileNotFoundError):  # a plain missing file is the caller's to report
        read_bounded(tmp_path / "missing", MiB, what="x")


def test_refuse_symlink_only_for_a_link(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "out")
    assert refuse_symlink(tmp_path / "out", "--out") is None
    diag = refuse_symlink(tmp_path / "via", "--out")
    assert diag is not None and diag.code == "MIGC320" and diag.message.startswith("--out ")


def test_write_file_atomic_replaces_a_symlink_instead_of_writing_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    target = tmp_path / "file.yaml"
    target.symlink_to(victim)
    write_file_atomic(target, b"new")
    assert victim.read_bytes() == b"keep"
    assert not target.is_symlink() and target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".migc-tmp")] == []


def test_a_rewrite_keeps_the_mode_and_a_new_file_gets_0666_less_the_umask(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"old")
    f.chmod(0o600)
    write_file_atomic(f, b"new")
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    old = os.umask(0o027)
    try:
        assert new_file_mode(tmp_path / "fresh") == 0o640
    finally:
        os.umask(old)


def test_a_failed_check_leaves_every_target_as_it_was(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"A0")
    b.write_bytes(b"B0")
    seen: list[bytes] = []

    def refuse(data: bytes) -> None:
        seen.append(data)
        raise ValueError("bad bytes")

    with pytest.raises(ValueError, match="bad bytes"):
        write_files_atomic([(a, b"A1", None), (b, b"B1", refuse)])
    assert seen == [b"B1"]  # the check saw the bytes read back from the temporary file
    assert (a.read_bytes(), b.read_bytes()) == (b"A0", b"B0")  # a was not renamed before b was checked
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]  # temporary files removed


def test_a_second_output_lock_is_refused_at_once_and_released_after(tmp_path: Path) -> None:
    out = tmp_path / "out"
    lock_file = tmp_path / ".out.migc-lock"
    with OutputLock(out):
        assert lock_file.read_text(encoding="ascii") == f"{os.getpid()}\n"
        with pytest.raises(OutputBusy) as exc, OutputLock(out):
            pass
        assert exc.value.diagnostic.code == "MIGC322"
        assert f"pid {os.getpid()}" in exc.value.diagnostic.message
    assert not lock_file.exists()  # removed on release
    with OutputLock(out):  # and can be taken again
        pass
