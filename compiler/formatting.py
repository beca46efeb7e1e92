"""Money, durations and layout counts, written one way for every report.

``migc plan``, ``status``, ``advise`` and ``recommend`` each had their own copy of these (two money
formatters, two duration formatters, two ``layout_counts``); the reports kept their own wording, so
where two copies wrote a value differently the difference is a parameter here, not a second function:
``plan`` writes an unpriced cost ``n/a`` and a price ``$1.00/h``, ``status`` and ``advise`` write
``-`` and ``$1.00`` (their ``/h`` is part of the sentence or the column header).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from compiler.model import WHOLE_GPU, GpuLayout, NodePool


def money(value: float | None, *, unit: str = "", missing: str = "-") -> str:
    """``$1,234.50`` followed by ``unit`` (``"/h"``); ``missing`` where there is no price."""
    return missing if value is None else f"${value:,.2f}{unit}"


def duration(seconds: float | None) -> str:
    """``90s``, ``15m``, ``1h05m``, ``3d2h`` (truncated, never rounded up); ``?`` when unknown.

    Below 2 minutes in seconds, below 2 hours in minutes, below 2 days in hours and minutes, then in
    days and hours: each unit is used once there are two of it, so a value never reads as "1m".
    """
    if seconds is None:
        return "?"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 2 * 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600}h"


def layout_counts(
    layouts: Iterable[Sequence[GpuLayout] | None], pool: NodePool | None = None
) -> dict[str, int]:
    """Instances per resource of some nodes' layouts (a node not deployed is ``None``); whole GPUs
    under ``"gpu"``, keys in the order they first appear.

    A time-sliced or MPS GPU counts ``sharing.replicas`` of ``pool`` (what the device plugin
    advertises); a HAMi GPU, or one of no pool given, counts one (HAMi's shares are planned by memory
    and cores, ``compiler.plan.hami``).
    """
    shares = pool.shares_per_gpu if pool is not None else 1
    # count each distinct layout object once, then add its instances that many times: fleets share
    # a handful of layout objects between thousands of GPUs
    times: dict[int, int] = {}
    objects: dict[int, GpuLayout] = {}
    for layout in layouts:
        for gpu in layout or ():
            key = id(gpu)
            if key in times:
                times[key] += 1
            else:
                times[key] = 1
                objects[key] = gpu
    out: dict[str, int] = {}
    for key, n in times.items():
        gpu = objects[key]
        if not gpu.mig_enabled:
            out[WHOLE_GPU] = out.get(WHOLE_GPU, 0) + shares * n
        for name, count in gpu.profiles:
            out[name] = out.get(name, 0) + count * n
    return out
