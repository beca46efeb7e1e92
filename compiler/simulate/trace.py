"""Reading an Alibaba openb pod list and mapping each pod to MIG instances.

Trace format (github.com/alibaba/clusterdata, cluster-trace-gpu-v2023/csv/openb_pod_list_*.csv):
``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,
scheduled_time``, times in seconds. A pod asks for ``gpu_milli``/1000 of one GPU (``num_gpu`` = 1) or
``num_gpu`` whole GPUs.

Which pods are replayed: pods with ``num_gpu`` ≥ 1 that ran in the traced cluster (both
``scheduled_time`` and ``deletion_time`` set); they arrive at ``creation_time`` and hold their
instance for ``deletion_time − scheduled_time`` seconds. Pods without GPUs and pods the traced cluster
never ran (no run time is known) are counted as skipped.

Mapping a fraction ``f`` of a GPU to a MIG profile (``--mapping``):

* ``compute`` (default): the profile with the fewest compute slices ``c`` such that
  ``c / model.compute_slices ≥ f``; among equal ``c`` the one with least memory.
* ``memory``: the profile with the least memory ``m`` such that ``m / model.memory_gb ≥ f``; among
  equal memory the one with fewest compute slices.

``num_gpu = k`` ≥ 2 (and ``f = 1``) maps to ``k`` instances of the full-GPU profile on one node.
Media-extension (+me) profiles are never used.

Every value is checked where it is read (MIGC425 with the line and column of the bad field): times
must be finite numbers of seconds in ``[0, MAX_TRACE_SECONDS]`` (``inf``, ``nan`` or ``1e300``
would make the replay run for ever or overflow), ``num_gpu`` a whole number ``0..MAX_POD_GPUS`` and
``gpu_milli`` ``0..1000``.

Columns the replay does not model are counted, not dropped without a word (:data:`IGNORED_COLUMNS`):
``gpu_spec`` (the GPU models a pod may run on; the replayed fleet has one model, so every pod runs on
it), and ``cpu_milli`` and ``memory_mib`` unless the fleet's nodes are given that resource
(``migc simulate --node-cpu-milli`` / ``--node-memory-mib``): then the column is read
(``read_trace(resources=…)``, a whole number ``0..MAX_NODE_RESOURCE``, "" is 0), the replay places a
pod only on a node with that much of it left, and the column is no longer listed as ignored.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from compiler.catalog import GpuModel, Profile
from compiler.diagnostics import DiagnosticError, make
from compiler.fsio import ReadRefused, read_bounded

TRACE_LIMIT = 256 * 1024 * 1024
MAX_TRACE_SECONDS = 366 * 86400  # a year; the openb traces span 149 days (1.3e7 s)
MAX_POD_GPUS = 64  # num_gpu of one pod (openb: at most 8)
# cpu_milli and memory_mib of one pod or node (openb: at most 128,000 mCPU and 786,432 MiB per node)
MAX_NODE_RESOURCE = 2**40
RESOURCE_COLUMNS = ("cpu_milli", "memory_mib")  # what a node may be given besides GPUs (read_trace)
COLUMNS = ("name", "num_gpu", "gpu_milli", "qos", "creation_time", "deletion_time", "scheduled_time")
# openb qos classes; LS = latency-sensitive is served first, BE = best effort last
PRIORITY = {"LS": 3, "Guaranteed": 2, "Burstable": 1, "BE": 0}
# columns read but not modelled: per column, how many replayed pods give it a value (Trace.ignored)
IGNORED_COLUMNS = ("gpu_spec", "cpu_milli", "memory_mib")


class TraceError(DiagnosticError):
    """A trace that cannot be replayed (MIGC425): which file, line and column, and why."""


@dataclass(frozen=True)
class TracePod:
    name: str
    arrival: float
    duration: float
    num_gpu: int
    gpu_milli: int
    priority: int
    cpu_milli: int = 0  # read only where the replay models it (read_trace ``resources``); else 0
    memory_mib: int = 0


@dataclass(frozen=True)
class Trace:
    pods: tuple[TracePod, ...]  # sorted by (arrival, name)
    skipped_no_gpu: int
    skipped_never_ran: int
    # per column of IGNORED_COLUMNS the trace has: the replayed pods that give it a value (not "", not 0)
    ignored: tuple[tuple[str, int], ...] = ()


def _fail(path: str, why: str, line: int = 0, col: int = 0) -> TraceError:
    return TraceError(make("MIGC425", f"trace {path}: {why}", file=path, line=line, col=col))


def _columns(raw_line: str) -> list[int]:
    """1-based column where each comma-separated field of ``raw_line`` starts (quotes respected)."""
    starts, quoted = [1], False
    for i, ch in enumerate(raw_line):
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            starts.append(i + 2)
    return starts


class _Row:
    """One CSV record with the position of each field, for MIGC425 at line:column."""

    def __init__(self, path: str, row: dict[str, str], header: list[str], line: int, raw_line: str) -> None:
        self.path, self.row, self.line = path, row, line
        self.index = {name: i for i, name in enumerate(header)}
        self.starts = _columns(raw_line)

    def fail(self, name: str, why: str) -> TraceError:
        i = self.index.get(name, 0)
        col = self.starts[i] if i < len(self.starts) else 1
        value = str(self.row.get(name) or "")[:40]
        return _fail(self.path, f"line {self.line}, column {name}: {value!r} {why}", self.line, col)

    def text(self, name: str) -> str:
        value = self.row.get(name)
        return value.strip() if isinstance(value, str) else ""

    def whole(self, name: str, low: int, high: int, default: int | None = None) -> int:
        text = self.text(name)
        if not text and default is not None:
            return default
        if len(text) > 20 or not text.lstrip("-").isascii() or not text.lstrip("-").isdigit():
            raise self.fail(name, f"is not a whole number (expected {low}..{high})")
        n = int(text)
        if not low <= n <= high:
            raise self.fail(name, f"is outside {low}..{high}")
        return n

    def seconds(self, name: str, optional: bool = False) -> float | None:
        text = self.text(name)
        if not text and optional:
            return None
        try:
            t = float(text) if len(text) <= 40 else math.nan
        except ValueError:
            t = math.nan
        if not math.isfinite(t) or not 0 <= t <= MAX_TRACE_SECONDS:
            raise self.fail(name, f"is not a time in seconds between 0 and {MAX_TRACE_SECONDS} (a year)")
        return t


SHAPE_COLUMNS = ("name", "num_gpu", "gpu_milli")  # enough for --mode fill (no departures, no times)


def read_trace(path: Path, *, times: bool = True, resources: tuple[str, ...] = ()) -> Trace:
    """The trace's GPU pods. ``times=False`` (``--mode fill``): only the shape columns are read and
    needed (openb's ``multigpu20`` list has no times); every GPU pod is kept, arrival 0, no run time.
    ``resources``: the columns of :data:`RESOURCE_COLUMNS` the replay models; each must be in the
    header, is read into :class:`TracePod` and is not counted in :attr:`Trace.ignored`."""
    shown = str(path)
    try:
        raw = read_bounded(path, TRACE_LIMIT, what="a pod trace")
    except ReadRefused as exc:
        raise TraceError(exc.diagnostic) from exc
    except OSError as exc:
        raise _fail(shown, exc.strerror or str(exc)) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(shown, "not UTF-8") from exc
    lines = text.splitlines()
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = list(reader.fieldnames or ())
    except csv.Error as exc:
        raise _fail(shown, f"not CSV: {exc}", 1, 1) from exc
    missing = [c for c in (*(COLUMNS if times else SHAPE_COLUMNS), *resources) if c not in header]
    if missing:
        raise _fail(shown, f"missing column(s) {', '.join(missing)}", 1, 1)
    pods: list[TracePod] = []
    no_gpu = never = 0
    ignored = dict.fromkeys((c for c in IGNORED_COLUMNS if c in header and c not in resources), 0)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # a NUL byte, an unterminated quote …
            raise _fail(shown, f"line {reader.line_num}: not CSV: {exc}", reader.line_num, 1) from exc
        line = reader.line_num
        r = _Row(shown, row, header, line, lines[line - 1] if 0 < line <= len(lines) else "")
        got = _pod(r, times, resources)
        if got == "no-gpu":
            no_gpu += 1
        elif got == "never-ran":
            never += 1
        else:
            assert isinstance(got, TracePod)
            pods.append(got)
            _count_ignored(r, ignored)
    pods.sort(key=lambda p: (p.arrival, p.name))
    return Trace(tuple(pods), no_gpu, never, tuple(ignored.items()))


def _pod(r: _Row, times: bool, resources: tuple[str, ...] = ()) -> TracePod | str:
    """One row's pod, or why it is skipped ("no-gpu", "never-ran"). Every field the mode reads is
    checked first, so a bad time is refused even on a row that would be skipped."""
    num_gpu = r.whole("num_gpu", 0, MAX_POD_GPUS)
    milli = r.whole("gpu_milli", 0, 1000, default=0)
    asks = {c: r.whole(c, 0, MAX_NODE_RESOURCE, default=0) for c in resources}
    cpu, memory = asks.get("cpu_milli", 0), asks.get("memory_mib", 0)
    name, share = str(r.row["name"]), milli if num_gpu == 1 else 1000
    if not times:
        return "no-gpu" if num_gpu <= 0 else TracePod(name, 0.0, 0.0, num_gpu, share, 0, cpu, memory)
    created = r.seconds("creation_time")
    assert created is not None
    start = r.seconds("scheduled_time", optional=True)
    end = r.seconds("deletion_time", optional=True)
    if num_gpu <= 0:
        return "no-gpu"
    if start is None or end is None or end < start:
        return "never-ran"
    priority = PRIORITY.get(str(r.row["qos"]), 0)
    return TracePod(name, created, end - start, num_gpu, share, priority, cpu, memory)


def _count_ignored(r: _Row, ignored: dict[str, int]) -> None:
    for column in ignored:
        if r.text(column) not in ("", "0"):
            ignored[column] += 1


def ignored_note(ignored: tuple[tuple[str, int], ...]) -> str:
    """One line naming what the replay left out ("" when the trace gives none of it)."""
    why = {
        "gpu_spec": "the fleet has one GPU model",
        "cpu_milli": "GPUs are the only resource modelled",
        "memory_mib": "GPUs are the only resource modelled",
    }
    parts = [f"{column} on {n} pods ({why[column]})" for column, n in ignored if n]
    return "not modelled: " + "; ".join(parts) if parts else ""


def usable_profiles(model: GpuModel) -> tuple[Profile, ...]:
    return tuple(p for p in model.profiles if not p.media_extensions)


def full_profile(model: GpuModel) -> Profile:
    return max(usable_profiles(model), key=lambda p: (p.compute_slices, p.memory_gb))


def profile_for(pod: TracePod, model: GpuModel, mapping: str) -> tuple[str, int]:
    """The profile and instance count one pod needs (see the module docstring)."""
    if pod.num_gpu > 1 or pod.gpu_milli >= 1000:
        return full_profile(model).name, pod.num_gpu
    f = max(pod.gpu_milli, 1) / 1000.0
    profiles = usable_profiles(model)
    if mapping == "memory":
        fits = [p for p in profiles if p.memory_gb / model.memory_gb >= f - 1e-9]
        best = min(fits, key=lambda p: (p.memory_gb, p.compute_slices, p.name))
    else:
        fits = [p for p in profiles if p.compute_slices / model.compute_slices >= f - 1e-9]
        best = min(fits, key=lambda p: (p.compute_slices, p.memory_gb, p.name))
    return best.name, 1
