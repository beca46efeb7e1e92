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
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from compiler.catalog import GpuModel, Profile
from compiler.diagnostics import make
from compiler.fsio import ReadRefused, read_bounded

TRACE_LIMIT = 256 * 1024 * 1024
COLUMNS = ("name", "num_gpu", "gpu_milli", "qos", "creation_time", "deletion_time", "scheduled_time")
# openb qos classes; LS = latency-sensitive is served first, BE = best effort last
PRIORITY = {"LS": 3, "Guaranteed": 2, "Burstable": 1, "BE": 0}


class TraceError(Exception):
    def __init__(self, diagnostic: object) -> None:
        super().__init__(str(getattr(diagnostic, "message", diagnostic)))
        self.diagnostic = diagnostic


@dataclass(frozen=True)
class TracePod:
    name: str
    arrival: float
    duration: float
    num_gpu: int
    gpu_milli: int
    priority: int


@dataclass(frozen=True)
class Trace:
    pods: tuple[TracePod, ...]  # sorted by (arrival, name)
    skipped_no_gpu: int
    skipped_never_ran: int


def _fail(path: str, why: str, line: int = 0) -> TraceError:
    return TraceError(make("MIGC425", f"trace {path}: {why}", file=path, line=line))


def read_trace(path: Path) -> Trace:
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
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise _fail(shown, f"missing column(s) {', '.join(missing)}", 1)
    pods: list[TracePod] = []
    no_gpu = never = 0
    for row in reader:
        line = reader.line_num
        try:
            num_gpu = int(row["num_gpu"])
            milli = int(row["gpu_milli"] or 0)
            created = float(row["creation_time"])
            sched = row["scheduled_time"].strip()
            deleted = row["deletion_time"].strip()
            start = float(sched) if sched else None
            end = float(deleted) if deleted else None
        except (ValueError, TypeError, AttributeError) as exc:
            raise _fail(shown, f"line {line}: {exc}", line) from exc
        if num_gpu <= 0:
            no_gpu += 1
            continue
        if start is None or end is None or end < start:
            never += 1
            continue
        pods.append(
            TracePod(
                str(row["name"]),
                created,
                end - start,
                num_gpu,
                milli if num_gpu == 1 else 1000,
                PRIORITY.get(str(row["qos"]), 0),
            )
        )
    pods.sort(key=lambda p: (p.arrival, p.name))
    return Trace(tuple(pods), no_gpu, never)


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
