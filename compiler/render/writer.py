"""Atomic writing of the rendered tree, pruning through the index, and drift comparison.

Ownership rule: migc owns every cluster directory it renders (``<out>/<cluster>/``) and every
file an earlier run listed in a ``.migc-index.json``; anything else under ``<out>`` (a README a
human put there) is carried across untouched.

Atomicity: the new tree is written into ``.<out>.migc-tmp-<pid>`` next to ``<out>``, the files
migc does not own are copied in, then ``<out>`` is renamed to ``.<out>.migc-old`` and the new tree
renamed into place, and the backup deleted. A failure or a kill before the first rename leaves
``<out>`` untouched; a kill between the two renames leaves the backup, which the next run restores
before doing anything else (MIGC305).

Test hook: ``MIGC_TEST_FAULT_AFTER_FILES=N`` raises :class:`InjectedFault` after N files were
written; ``MIGC_TEST_FAULT_AFTER_FILES=kill:N`` sends the process SIGKILL instead, like an OOM kill.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from compiler.diagnostics import Diagnostic, make

INDEX_NAME = ".migc-index.json"
FAULT_ENV = "MIGC_TEST_FAULT_AFTER_FILES"


class InjectedFault(RuntimeError):
    """Raised by the test hook; never in normal use."""


@dataclass(frozen=True)
class Drift:
    stale: tuple[str, ...]
    missing: tuple[str, ...]
    extra: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not (self.stale or self.missing or self.extra)


def _disk_files(root: Path) -> set[str]:
    if not root.is_dir():
        return set()
    out: set[str] = set()
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            out.add((Path(dirpath) / name).relative_to(root).as_posix())
    return out


def read_index(root: Path) -> set[str] | None:
    """Files earlier runs generated under ``root`` (paths relative to it); None when there is no index."""
    found: set[str] | None = None
    if not root.is_dir():
        return None
    for index in sorted(root.glob(f"*/{INDEX_NAME}")):
        try:
            data = json.loads(index.read_text(encoding="utf-8"))
            listed = data.get("files", {}) if isinstance(data, dict) else {}
        except (OSError, ValueError):
            listed = {}
        cluster = index.parent.name
        found = found if found is not None else set()
        found.add(f"{cluster}/{INDEX_NAME}")
        found.update(f"{cluster}/{p}" for p in listed if isinstance(p, str))
    return found


def _owned_dirs(files: Mapping[str, bytes]) -> set[str]:
    return {p.split("/", 1)[0] for p in files}


def compare(files: Mapping[str, bytes], root: Path) -> Drift:
    """What ``migc compile --out root`` would change: stale, missing and extra files."""
    on_disk = _disk_files(root)
    indexed = read_index(root) or set()
    owned = _owned_dirs(files)
    stale, missing = [], []
    for path, data in files.items():
        if path not in on_disk:
            missing.append(path)
        elif (root / path).read_bytes() != data:
            stale.append(path)
    extra = sorted(
        p for p in on_disk if p not in files and (p in indexed or (p.split("/", 1)[0] in owned and "/" in p))
    )
    return Drift(tuple(sorted(stale)), tuple(sorted(missing)), tuple(extra))


def _fault_plan() -> tuple[int, bool] | None:
    raw = os.environ.get(FAULT_ENV, "").strip()
    if not raw:
        return None
    kill = raw.startswith("kill:")
    return int(raw.removeprefix("kill:")), kill


def _backup_path(out: Path) -> Path:
    return out.parent / f".{out.name}.migc-old"


def recover(out: Path) -> list[Diagnostic]:
    """Undo a swap that a kill interrupted between its two renames."""
    backup = _backup_path(out)
    if not backup.exists():
        return []
    if out.exists():
        shutil.rmtree(backup, ignore_errors=True)
        return []
    os.rename(backup, out)
    return [
        make("MIGC305", f"restored {out} from {backup} left by an interrupted `migc compile`", file=str(out))
    ]


def write_tree(files: Mapping[str, bytes], out: Path) -> list[Diagnostic]:
    """Replace ``out`` by ``files`` atomically; returns diagnostics (errors mean nothing was changed)."""
    out = Path(out)
    diagnostics: list[Diagnostic] = []
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        diagnostics.extend(recover(out))
    except OSError as exc:
        return [make("MIGC301", f"cannot prepare {out}: {exc.strerror or exc}", file=str(out))]
    if out.exists() and not out.is_dir():
        return [make("MIGC301", f"{out} exists and is not a directory", file=str(out))]
    old_index = read_index(out)
    on_disk = _disk_files(out)
    if on_disk and old_index is None:
        return [
            make(
                "MIGC300",
                f"{out} holds {len(on_disk)} files and no {INDEX_NAME}; refusing to replace a directory "
                "migc did not write",
                file=str(out),
            )
        ]
    owned = _owned_dirs(files)
    foreign = sorted(
        p
        for p in on_disk
        if p not in (old_index or set()) and p.split("/", 1)[0] not in owned and p not in files
    )
    tmp = out.parent / f".{out.name}.migc-tmp-{os.getpid()}"
    plan = _fault_plan()
    try:
        for leftover in out.parent.glob(f".{out.name}.migc-tmp-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        tmp.mkdir()
        for count, (path, data) in enumerate(sorted(files.items()), start=1):
            target = tmp / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            if plan is not None and count >= plan[0]:
                if plan[1]:
                    os.kill(os.getpid(), signal.SIGKILL)
                raise InjectedFault(f"{FAULT_ENV}: failing after {count} files")
        for path in foreign:
            target = tmp / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(out / path, target)
        if out.exists():
            backup = _backup_path(out)
            os.rename(out, backup)
            try:
                os.rename(tmp, out)
            except OSError:
                os.rename(backup, out)
                raise
            shutil.rmtree(backup, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        return [*diagnostics, make("MIGC301", f"cannot write {out}: {exc.strerror or exc}", file=str(out))]
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return diagnostics
