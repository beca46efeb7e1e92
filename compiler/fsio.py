"""Safe file access for every path migc reads or writes.

Reading: :func:`read_bounded` stats the path (following links, as a reader would), refuses anything
that is not a regular file (FIFO, device, socket, directory: MIGC015) before opening it, opens
without blocking (a FIFO swapped in between the stat and the open cannot hang the run), checks the
open file again with ``fstat``, and reads at most ``limit`` bytes (MIGC016 beyond). A symlink
loop or a link to nothing is MIGC017. Size limits per kind of file are the ``*_LIMIT`` constants
below; the policy loader keeps its own 4 MiB (``compiler.load.MAX_FILE_BYTES``, MIGC002).

Writing: :func:`write_file_atomic` writes into a fresh temporary file (``O_CREAT | O_EXCL``, which
never follows a link) in the target's directory and renames it over the target, so a symlink at
the target is replaced, never written through, and a reader never sees half a file. A new file
gets ``0666 & ~umask`` as an editor's would, a rewritten one keeps its mode; an optional check sees
the bytes read back before the rename. :func:`write_files_atomic` stages several files and renames
them back to back only once all are written and checked.
:func:`refuse_symlink` is the check for output *directories* given on the command line: migc
does not write through a symlinked ``--out`` or ``--svg`` directory (MIGC320).

Locking: :class:`OutputLock` is an advisory ``fcntl.flock`` on ``.<out>.migc-lock`` next to an
output directory, so two ``migc compile`` runs never write one ``--out`` at the same time (MIGC322).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from compiler.diagnostics import Diagnostic, DiagnosticError, make

MiB = 1024 * 1024
ASSIGNMENT_LIMIT = 16 * MiB  # a NodeAssignment ConfigMap; the API server caps a ConfigMap at 1 MiB
CAPACITY_LIMIT = 16 * MiB  # a CapacityReport ConfigMap
INDEX_LIMIT = 64 * MiB  # .migc-index.json: one line per rendered file
RENDERED_LIMIT = 64 * MiB  # any rendered file compared by --check
SNAPSHOT_LIMIT = 512 * MiB  # `kubectl get pods -A -o json` of a large cluster


class ReadRefused(DiagnosticError):
    """A path that is not a readable regular file within its limit; carries the coded diagnostic."""


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def not_regular(shown: str, mode: int, what: str) -> Diagnostic:
    return make(
        "MIGC015", f"{shown} is {file_kind(mode)}, not a regular file; refusing to read {what}", file=shown
    )


def link_problem(shown: str, exc: OSError) -> Diagnostic | None:
    """MIGC017 for a symlink loop or a dangling link at ``shown``; None for any other error."""
    if exc.errno == errno.ELOOP:
        return make("MIGC017", f"{shown}: symbolic link loop", file=shown)
    if exc.errno == errno.ENOENT and os.path.islink(shown):
        return make(
            "MIGC017", f"{shown}: symbolic link to {os.readlink(shown)!r}, which does not exist", file=shown
        )
    return None


def read_bounded(path: Path, limit: int, *, what: str, shown: str | None = None) -> bytes:
    """The bytes of the regular file ``path`` (links followed), at most ``limit`` of them.

    Raises :class:`ReadRefused` (MIGC015 not a regular file, MIGC016 over ``limit``, MIGC017 link
    loop or dangling link) or :class:`OSError` (missing file, permissions) for the caller to report.
    """
    name = shown if shown is not None else str(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        link = link_problem(str(path), exc)
        if link is not None:
            raise ReadRefused(link) from exc
        raise
    if not stat.S_ISREG(st.st_mode):
        raise ReadRefused(not_regular(name, st.st_mode, what))
    if st.st_size > limit:
        raise ReadRefused(_too_large(name, st.st_size, limit, what))
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between the stat and the open
            raise ReadRefused(not_regular(name, st.st_mode, what))
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(MiB, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # grew after the stat
                raise ReadRefused(_too_large(name, total, limit, what))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _too_large(shown: str, size: int, limit: int, what: str) -> Diagnostic:
    return make(
        "MIGC016",
        f"{shown} is larger than the {limit // MiB} MiB migc reads for {what} (at least {size} bytes)",
        file=shown,
    )


def refuse_symlink(path: Path, option: str) -> Diagnostic | None:
    """MIGC320 when the output directory ``path`` given as ``option`` is a symbolic link."""
    if os.path.islink(path):
        return make(
            "MIGC320",
            f"{option} {path} is a symbolic link (to {os.readlink(path)!r}); migc does not write through "
            "links: pass the directory it points to",
            file=str(path),
        )
    return None


def current_umask() -> int:
    """The process's umask (read from /proc where it can be, else set and restored at once)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode(path: Path) -> int:
    """The mode a rewrite of ``path`` gets: the mode of the regular file there now (a user's file keeps
    its mode), else what any editor would create, ``0o666`` less the umask."""
    try:
        st = os.stat(path, follow_symlinks=False)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    except OSError:
        pass
    return 0o666 & ~current_umask()


def write_file_atomic(path: Path, data: bytes, check: Callable[[bytes], None] | None = None) -> None:
    """Write ``data`` to ``path``: a new temporary file in the same directory, then a rename over ``path``.

    Whatever ``path`` was (a file, a symlink to anywhere) is replaced by the new regular file; the
    target of a link is never opened. The new file has :func:`new_file_mode`. ``check``, when given,
    is called with the bytes read back from the temporary file before the rename; whatever it
    raises leaves ``path`` as it was.
    """
    write_files_atomic([(path, data, check)])


def write_files_atomic(files: Sequence[tuple[Path, bytes, Callable[[bytes], None] | None]]) -> None:
    """Write several files as nearly one step: every temporary file is written, read back and checked
    first; only then are they renamed over their targets, in the order given, one rename after the
    other. A failure before the renames changes nothing; the temporary files are removed.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, data, check in files:
            mode = new_file_mode(path)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".migc-tmp", dir=path.parent)
            staged.append((tmp, path))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
            if check is not None:
                check(Path(tmp).read_bytes())
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise


class OutputBusy(Exception):
    """Another process holds the lock of the output directory; carries MIGC322."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


class FileLock:
    """``with FileLock(path, wait, busy):`` holds an exclusive ``flock`` on the lock file ``path``.

    The file is opened without following links and removed on release; a run that locked a file
    another run had already removed retries on the new one. A second run waits up to ``wait``
    seconds (0: not at all), then raises ``busy(holder)`` (holder: the pid the file names).
    """

    def __init__(self, path: Path, wait: float, busy: Callable[[str], Exception]) -> None:
        self.path = path
        self.wait = wait
        self.busy = busy
        self._fd: int | None = None

    def __enter__(self) -> FileLock:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        deadline = time.monotonic() + self.wait
        while True:
            fd = os.open(self.path, flags, 0o644)
            try:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                            raise self.busy(holder) from None
                        time.sleep(0.05)
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path, follow_symlinks=False))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the holder before us removed this file on release: lock the new one
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fd is None:
            return
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(self._fd)  # closing releases the flock
            self._fd = None


class OutputLock(FileLock):
    """``with OutputLock(out):`` holds an exclusive advisory lock for the output directory ``out``.

    The lock file ``.<out>.migc-lock`` lies next to ``out`` (``out`` itself is renamed while it is
    replaced, so it cannot carry the lock). A second run does not wait: it raises
    :class:`OutputBusy` at once.
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        super().__init__(out.parent / f".{out.name}.migc-lock", 0.0, self._busy)

    def _busy(self, holder: str) -> Exception:
        return OutputBusy(
            make(
                "MIGC322",
                f"another migc compile (pid {holder or 'unknown'}) is writing {self.out}; "
                "nothing was written",
                file=str(self.out),
            )
        )
