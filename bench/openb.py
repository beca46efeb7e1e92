"""The Alibaba GPU trace v2023 ("openb", used by FGD, USENIX ATC'23) mapped to MIG profiles.

A pod asks for ``num_gpu`` GPUs and, when that is one, ``gpu_milli`` thousandths of it; the trace has
no GPU-memory field, so turning a fraction into a MIG profile is a modelling choice, made explicit
here and selectable:

* ``compute``: ``ceil(gpu_milli × compute_slices / 1000)`` slices → the smallest profile with at
  least that many compute slices (ties: less memory);
* ``memory``: ``gpu_milli / 1000 × GPU memory`` GB → the smallest profile with at least that much
  memory (ties: fewer compute slices).

``num_gpu ≥ 2`` or ``gpu_milli ≥ 1000`` → whole GPUs (k on one node); CPU-only pods are dropped.
The trace's QoS classes become migc's priority tiers: LS and Guaranteed → critical, Burstable →
high, BE → low. The trace has no tenants; every pod belongs to tenant ``openb``.
"""

from __future__ import annotations

import csv
import math
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bench.demand import WHOLE, Pod
from bench.geometry import Geometry

Mapping = Literal["compute", "memory"]
MAPPINGS: tuple[Mapping, ...] = ("compute", "memory")
QOS_TIER = {"LS": "critical", "Guaranteed": "critical", "Burstable": "high", "BE": "low"}
DEFAULT_TRACE = "openb_pod_list_default.csv"


def shared_dir() -> Path:
    """``$MIGC_SHARED_DIR``, else ``<repo>/../shared`` (where CI and the workspace put it)."""
    env = os.environ.get("MIGC_SHARED_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared"


def trace_path(name: str = DEFAULT_TRACE) -> Path:
    return shared_dir() / "data" / "openb" / name


def available(name: str = DEFAULT_TRACE) -> bool:
    return trace_path(name).is_file()


@dataclass(frozen=True)
class TracePod:
    name: str
    num_gpu: int
    gpu_milli: int
    qos: str
    creation_time: int


def load_trace(name: str = DEFAULT_TRACE) -> tuple[TracePod, ...]:
    """GPU pods of the trace, sorted by (creation_time, name)."""
    out: list[TracePod] = []
    with trace_path(name).open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            num_gpu = int(row["num_gpu"])
            if num_gpu <= 0:
                continue
            out.append(
                TracePod(
                    name=row["name"],
                    num_gpu=num_gpu,
                    gpu_milli=int(row["gpu_milli"]),
                    qos=row["qos"],
                    creation_time=int(row["creation_time"]),
                )
            )
    return tuple(sorted(out, key=lambda p: (p.creation_time, p.name)))


def to_pod(geo: Geometry, pod: TracePod, mapping: Mapping) -> Pod:
    tier = QOS_TIER.get(pod.qos, "low")
    if pod.num_gpu >= 2 or pod.gpu_milli >= 1000:
        return Pod(WHOLE, pod.num_gpu, "openb", tier)
    milli = max(1, pod.gpu_milli)
    if mapping == "compute":
        slices = math.ceil(milli * geo.model.compute_slices / 1000)
        cands = sorted(geo.profiles, key=lambda p: (p.compute_slices, p.memory_gb, p.name))
        prof = next(p for p in cands if p.compute_slices >= slices)
    else:
        gb = milli / 1000 * geo.model.memory_gb
        cands = sorted(geo.profiles, key=lambda p: (p.memory_gb, p.compute_slices, p.name))
        # a 1e-9 slack so that exactly 500 milli of 80 GB still fits a 40 GB profile
        prof = next(p for p in cands if p.memory_gb >= gb - 1e-9)
    if prof.compute_slices >= geo.model.compute_slices:
        return Pod(WHOLE, 1, "openb", tier)  # the full-GPU profile is a whole GPU for every method
    return Pod(prof.name, 1, "openb", tier)


def to_pods(geo: Geometry, trace: tuple[TracePod, ...], mapping: Mapping) -> list[Pod]:
    return [to_pod(geo, p, mapping) for p in trace]


def fractional(trace: tuple[TracePod, ...]) -> tuple[TracePod, ...]:
    """Only the pods asking for a fraction of one GPU (creation-time order kept)."""
    return tuple(p for p in trace if p.num_gpu == 1 and p.gpu_milli < 1000)


def first_n(trace: tuple[TracePod, ...], n: int) -> tuple[TracePod, ...]:
    return trace[:n]


def random_window(trace: tuple[TracePod, ...], n: int, seed: int) -> tuple[TracePod, ...]:
    """``n`` consecutive pods by creation time from a seeded random start."""
    start = random.Random(seed).randrange(0, max(1, len(trace) - n + 1))
    return trace[start : start + n]


def sliding_windows(trace: tuple[TracePod, ...], n: int, step: int, count: int) -> list[tuple[TracePod, ...]]:
    """``count`` windows of ``n`` pods by creation time, each ``step`` pods after the previous one."""
    return [trace[i * step : i * step + n] for i in range(count) if i * step + n <= len(trace)]
