"""Writing command outputs other than ``--out`` (``plan --svg``): each file whole, never through a link.

Every file goes through :func:`compiler.fsio.write_file_atomic` (a new temporary file in the same
directory, renamed over the target), so a symbolic link planted at a target path is replaced by
the new file and its target is never opened. The directory itself must not be a symbolic link
(the command checks that first, MIGC320).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from compiler.fsio import write_file_atomic


def write_files(directory: Path, files: Mapping[str, str]) -> list[Path]:
    """Write ``name → text`` into ``directory`` (created if needed); returns the paths, sorted."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in sorted(files):
        path = directory / name
        write_file_atomic(path, files[name].encode("utf-8"))
        written.append(path)
    return written
