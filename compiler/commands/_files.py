"""Writing command outputs other than ``--out`` (``plan --svg``): each file whole or not at all.

A file is written to a temporary name in its directory and renamed over the target, so a reader
never sees half a file and a kill leaves the old file (or none) in place.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path


def write_file_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".migc-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_files(directory: Path, files: Mapping[str, str]) -> list[Path]:
    """Write ``name → text`` into ``directory`` (created if needed); returns the paths, sorted."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in sorted(files):
        path = directory / name
        write_file_atomic(path, files[name].encode("utf-8"))
        written.append(path)
    return written
