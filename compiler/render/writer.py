"""Safe, atomic writing of the rendered tree; pruning through the index; drift comparison.

Ownership rule: migc owns every cluster directory it renders now (``<out>/<cluster>/``): such a
directory is replaced as a whole, and every file in it that is not rendered any more is removed
(and reported). A cluster directory an earlier run wrote (it holds a ``.migc-index.json``) that the
policy does not produce now is kept as it is, with MIGC324, unless ``prune`` is set; then it is
removed and reported. Anything else under ``<out>`` (a README a human put there) is carried
across untouched: regular files are copied, symbolic links are recreated as links and never
dereferenced, and a FIFO, device or socket makes the run refuse (MIGC321) before anything is
written.

Safety: a symlinked ``<out>`` is refused (MIGC320); entries are examined with ``lstat`` and never
followed; files are read with :func:`compiler.fsio.read_bounded` (limits per kind there).

One run at a time: the whole write holds :class:`compiler.fsio.OutputLock` on ``<out>``; a second
run fails at once with MIGC322.

Atomicity: the new tree is written into ``.<out>.migc-tmp-<pid>-<random>`` next to ``<out>``, the
carried entries are added, then ``<out>`` is renamed to ``.<out>.migc-old``, the new tree renamed
into place, and the backup deleted. A failure or a kill before the first rename leaves ``<out>``
untouched; a kill between the two renames leaves the backup, which the next run restores before
doing anything else (MIGC305). A run removes its own temporary tree, and (holding the lock) the
trees of runs whose process is gone.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from compiler.diagnostics import Diagnostic, has_errors, make
from compiler.fsio import (
    INDEX_LIMIT,
    RENDERED_LIMIT,
    OutputBusy,
    OutputLock,
    ReadRefused,
    file_kind,
    read_bounded,
    refuse_symlink,
)

INDEX_NAME = ".migc-index.json"


@dataclass(frozen=True)
class Drift:
    stale: tuple[str, ...]
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def clean(self) -> bool:
        return not (self.stale or self.missing or self.extra)


@dataclass(frozen=True)
class Written:
    """What :func:`write_tree` did: diagnostics (errors mean ``<out>`` is unchanged) and what it removed."""

    diagnostics: tuple[Diagnostic, ...] = ()
    removed_files: tuple[str, ...] = ()  # no longer rendered, inside a cluster directory migc rewrote
    removed_clusters: tuple[tuple[str, int], ...] = ()  # (cluster, files in it), only with prune
    kept_clusters: tuple[str, ...] = ()  # earlier clusters not produced now, kept (no prune)
    carried: tuple[str, ...] = field(default=())  # foreign entries carried across

    @property
    def failed(self) -> bool:
        return has_errors(list(self.diagnostics))


def _scan(root: Path) -> dict[str, int]:
    """Every non-directory entry under ``root`` (relative POSIX path → ``lstat`` mode); links not followed."""
    out: dict[str, int] = {}
    if not root.is_dir() or root.is_symlink():
        return out
    stack = [("", os.fspath(root))]  # (relative POSIX prefix, path on disk)
    while stack:
        prefix, here = stack.pop()
        with os.scandir(here) as entries:
            for entry in entries:
                mode = entry.stat(follow_symlinks=False).st_mode
                rel = prefix + entry.name
                if stat.S_ISDIR(mode):
                    stack.append((rel + "/", entry.path))
                else:
                    out[rel] = mode
    return out


def read_index(
    root: Path, on_disk: Mapping[str, int] | None = None
) -> tuple[dict[str, set[str]], list[Diagnostic]]:
    """Cluster → files (relative to ``root``) an earlier run generated there, from each ``.migc-index.json``.

    Only clusters whose index is a regular file count; an index that is a link, a FIFO or too large
    is a coded error (never followed or read), a malformed one lists just itself.
    """
    disk = _scan(root) if on_disk is None else on_disk
    found: dict[str, set[str]] = {}
    diagnostics: list[Diagnostic] = []
    for path, mode in sorted(disk.items()):
        parts = path.split("/")
        if len(parts) != 2 or parts[1] != INDEX_NAME:
            continue
        cluster = parts[0]
        shown = str(root / path)
        if not stat.S_ISREG(mode):
            diagnostics.append(
                make("MIGC015", f"{shown} is {file_kind(mode)}, not a regular file; not read", file=shown)
            )
            continue
        try:
            data = json.loads(read_bounded(root / path, INDEX_LIMIT, what="an output index", shown=shown))
            listed = data.get("files", {}) if isinstance(data, dict) else {}
        except ReadRefused as exc:
            diagnostics.append(exc.diagnostic)
            continue
        except (OSError, ValueError):
            listed = {}
        files = {f"{cluster}/{INDEX_NAME}"}
        files.update(f"{cluster}/{p}" for p in listed if isinstance(p, str))
        found[cluster] = files
    return found, diagnostics


def _owned_dirs(files: Mapping[str, bytes]) -> set[str]:
    return {p.split("/", 1)[0] for p in files}


def _top(path: str) -> str:
    return path.split("/", 1)[0]


def compare(files: Mapping[str, bytes], root: Path, *, prune: bool = False) -> Drift:
    """What ``migc compile --out root`` (with ``prune``) would change: stale, missing and extra files.

    A rendered path that is a link or a special file on disk is stale (it is never read); a regular
    file is read with the rendered-file limit.
    """
    on_disk = _scan(root)
    indexed, diagnostics = read_index(root, on_disk)
    owned = _owned_dirs(files)
    stale, missing = [], []
    for path, data in files.items():
        mode = on_disk.get(path)
        if mode is None:
            missing.append(path)
            continue
        if not stat.S_ISREG(mode):
            stale.append(path)
            continue
        try:
            if read_bounded(root / path, RENDERED_LIMIT, what="a rendered file") != data:
                stale.append(path)
        except ReadRefused:
            stale.append(path)
    extra = sorted(
        p for p in on_disk if p not in files and (_top(p) in owned or (prune and _top(p) in indexed))
    )
    return Drift(tuple(sorted(stale)), tuple(sorted(missing)), tuple(extra), tuple(diagnostics))


def _backup_path(out: Path) -> Path:
    return out.parent / f".{out.name}.migc-old"


def _remove(path: Path) -> None:
    """Remove a file, a link (never its target) or a directory tree (links inside are not followed)."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def recover(out: Path) -> list[Diagnostic]:
    """Undo a swap that a kill interrupted between its two renames."""
    backup = _backup_path(out)
    if not os.path.lexists(backup):
        return []
    if os.path.lexists(out) or backup.is_symlink() or not backup.is_dir():
        _remove(backup)
        return []
    os.rename(backup, out)
    return [
        make("MIGC305", f"restored {out} from {backup} left by an interrupted `migc compile`", file=str(out))
    ]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_orphans(out: Path) -> None:
    """Temporary trees of earlier runs into ``out`` whose process is gone (call with the lock held)."""
    prefix = f".{out.name}.migc-tmp-"
    for leftover in out.parent.glob(f"{prefix}*"):
        pid = leftover.name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or not _alive(int(pid)):
            _remove(leftover)


def _write_file(path: Path, data: bytes) -> None:
    """Create one new file of the temporary tree (never an existing path, never through a link)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o644)
    try:
        view = memoryview(data)
        while view:  # os.write may write less than asked
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _carry(src: Path, dst: Path, mode: int) -> None:
    """Copy one foreign entry into the new tree: a link as a link, a regular file by content."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(src), dst)
        return
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(src, flags)
    with os.fdopen(fd, "rb") as reader:
        if not stat.S_ISREG(os.fstat(reader.fileno()).st_mode):
            raise OSError(f"{src} changed while it was copied")
        out_fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(out_fd, "wb") as writer:
            shutil.copyfileobj(reader, writer)
            os.fchmod(writer.fileno(), stat.S_IMODE(mode))


def write_tree(files: Mapping[str, bytes], out: Path, *, prune: bool = False) -> Written:
    """Replace ``out`` by ``files`` atomically, holding the output lock; see the module docstring."""
    link = refuse_symlink(Path(out), "--out")
    out = Path(out)
    if out.name in ("", ".", ".."):  # "." or "sub/..": the lock and the swap need the real name
        out = Path(os.path.abspath(out))
    if link is not None:
        return Written((link,))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return Written((make("MIGC301", f"cannot prepare {out}: {exc.strerror or exc}", file=str(out)),))
    try:
        with OutputLock(out):
            return _write_locked(files, out, prune)
    except OutputBusy as exc:
        return Written((exc.diagnostic,))
    except OSError as exc:
        return Written((make("MIGC301", f"cannot lock {out}: {exc.strerror or exc}", file=str(out)),))


@dataclass(frozen=True)
class _Replacement:
    """What replacing ``<out>`` means, worked out from the tree on disk before anything is written:
    the cluster directories an earlier run wrote that are not rendered now (``gone``; removed with
    ``prune``, else kept), the files of rendered clusters that are not rendered any more, and the
    foreign entries carried across."""

    gone: tuple[str, ...]
    dropped: frozenset[str]
    removed_files: tuple[str, ...]
    carried: tuple[str, ...]

    @classmethod
    def of(
        cls,
        files: Mapping[str, bytes],
        on_disk: Mapping[str, int],
        indexed: Mapping[str, set[str]],
        prune: bool,
    ) -> _Replacement:
        owned = _owned_dirs(files)
        gone = sorted(c for c in indexed if c not in owned)
        dropped = set(gone) if prune else set()
        # Everything under (or named as) a cluster directory rendered now is migc's: replaced or removed.
        removed_files = sorted(p for p in on_disk if _top(p) in owned and p not in files)
        carried = sorted(
            p for p in on_disk if p not in files and _top(p) not in owned and _top(p) not in dropped
        )
        return cls(tuple(gone), frozenset(dropped), tuple(removed_files), tuple(carried))


def _refuse_existing(
    out: Path, on_disk: Mapping[str, int], indexed: Mapping[str, set[str]], index_diags: list[Diagnostic]
) -> tuple[Diagnostic, ...]:
    """Why the tree at ``out`` must not be replaced (empty: it may): an index that cannot be read, or
    files without any index (a directory migc did not write)."""
    if index_diags:
        return tuple(index_diags)
    if on_disk and not indexed:
        return (
            make(
                "MIGC300",
                f"{out} holds {len(on_disk)} files and no {INDEX_NAME}; refusing to replace a directory "
                "migc did not write",
                file=str(out),
            ),
        )
    return ()


def _uncarriable(out: Path, on_disk: Mapping[str, int], carried: Sequence[str]) -> tuple[Diagnostic, ...]:
    """MIGC321 per foreign entry that is neither a regular file nor a link (a FIFO, device, socket):
    the run refuses before it writes anything."""
    special = [p for p in carried if not (stat.S_ISREG(on_disk[p]) or stat.S_ISLNK(on_disk[p]))]
    return tuple(
        make(
            "MIGC321",
            f"{out / p} is {file_kind(on_disk[p])}; migc cannot carry it into the new output, "
            "nothing was written",
            file=str(out / p),
        )
        for p in special
    )


def _fill(
    tmp: Path, files: Mapping[str, bytes], out: Path, carried: Sequence[str], on_disk: Mapping[str, int]
) -> None:
    """The new tree in ``tmp``: every rendered file (in path order), then the carried entries."""
    made = {""}  # directories of the new tree created so far (relative), "" is tmp itself
    for path, data in sorted(files.items()):
        parent = path.rpartition("/")[0]
        if parent not in made:  # one mkdir per new directory, parents first
            parts = parent.split("/")
            for depth in range(1, len(parts) + 1):
                sub = "/".join(parts[:depth])
                if sub not in made:
                    os.mkdir(tmp / sub)
                    made.add(sub)
        _write_file(tmp / path, data)
    for path in carried:
        _carry(out / path, tmp / path, on_disk[path])


def _swap(tmp: Path, out: Path) -> None:
    """``tmp`` becomes ``out``: the old tree renamed to the backup, the new one into place (the old
    one back when that fails), the backup removed; a kill between the renames is undone by
    :func:`recover`."""
    if os.path.lexists(out):
        backup = _backup_path(out)
        os.rename(out, backup)
        try:
            os.rename(tmp, out)
        except OSError:
            os.rename(backup, out)
            raise
        _remove(backup)
    else:
        os.rename(tmp, out)


def _kept_notes(out: Path, kept: Sequence[str]) -> list[Diagnostic]:
    """MIGC324 per cluster directory of an earlier run that this policy does not produce (no prune)."""
    return [
        make(
            "MIGC324",
            f"{out / cluster} was written by an earlier run and is not produced by this policy; "
            "kept (pass --prune to remove it)",
            file=str(out / cluster),
        )
        for cluster in kept
    ]


def _write_locked(files: Mapping[str, bytes], out: Path, prune: bool) -> Written:
    """The write, with the lock held: recover and tidy, refuse what must not be replaced, plan, write
    the new tree next to ``out`` and swap it in (see the module docstring)."""
    try:
        diagnostics = recover(out)
        _remove_orphans(out)
    except OSError as exc:
        return Written((make("MIGC301", f"cannot prepare {out}: {exc.strerror or exc}", file=str(out)),))
    if os.path.lexists(out) and not out.is_dir():
        return Written((make("MIGC301", f"{out} exists and is not a directory", file=str(out)),))
    on_disk = _scan(out)
    indexed, index_diags = read_index(out, on_disk)
    refused = _refuse_existing(out, on_disk, indexed, index_diags)
    if refused:
        return Written(refused)
    plan = _Replacement.of(files, on_disk, indexed, prune)
    special = _uncarriable(out, on_disk, plan.carried)
    if special:
        return Written(special)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.migc-tmp-{os.getpid()}-", dir=out.parent))
    try:
        _fill(tmp, files, out, plan.carried, on_disk)
        _swap(tmp, out)
    except OSError as exc:
        _remove(tmp)
        return Written(
            (*diagnostics, make("MIGC301", f"cannot write {out}: {exc.strerror or exc}", file=str(out)))
        )
    except BaseException:
        _remove(tmp)
        raise
    kept = [] if prune else list(plan.gone)
    diagnostics += _kept_notes(out, kept)
    return Written(
        diagnostics=tuple(diagnostics),
        removed_files=plan.removed_files,
        removed_clusters=tuple((c, sum(1 for p in on_disk if _top(p) == c)) for c in sorted(plan.dropped)),
        kept_clusters=tuple(kept),
        carried=plan.carried,
    )
