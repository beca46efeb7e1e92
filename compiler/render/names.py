"""Readable, stable names for mig-parted configs and device-plugin configs.

A mig-parted config name is the value of the node label ``nvidia.com/mig.config``, so it must be a
valid label value (at most 63 characters, ``[A-Za-z0-9._-]``, alphanumeric at both ends). Names are
derived from the content only (never from pool or node names), so two pools of one model that want
the same node layout share one config, and a config keeps its name across runs while its content
is unchanged.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from compiler.catalog import GpuModel
from compiler.model import GpuLayout, NodeLayout

LABEL_VALUE_MAX = 63
ALL_DISABLED = "all-disabled"
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")


def is_label_value(value: str) -> bool:
    return len(value) <= LABEL_VALUE_MAX and bool(_LABEL_VALUE.match(value))


def profile_order(model: GpuModel | None, profiles: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """Largest instances first (memory slices, then compute slices), then by name: reads like the GPU."""

    def key(item: tuple[str, int]) -> tuple[int, int, str]:
        prof = model.profile(item[0]) if model is not None else None
        if prof is None:
            return (0, 0, item[0])
        return (-prof.memory_slices, -prof.compute_slices, item[0])

    return sorted(profiles, key=key)


def gpu_token(model: GpuModel | None, gpu: GpuLayout) -> str:
    """``3x2g.20gb-1x1g.10gb``; ``whole`` for MIG off; ``mig-empty`` for MIG on without instances."""
    if not gpu.mig_enabled:
        return "whole"
    if not gpu.profiles:
        return "mig-empty"
    return "-".join(f"{count}x{name.replace('+', '.')}" for name, count in profile_order(model, gpu.profiles))


def gpu_description(model: GpuModel | None, gpu: GpuLayout) -> str:
    if not gpu.mig_enabled:
        return "MIG disabled (whole GPU)"
    if not gpu.profiles:
        return "MIG enabled, no instances"
    return " + ".join(f"{count}x {name}" for name, count in profile_order(model, gpu.profiles))


def runs(layout: NodeLayout) -> list[tuple[int, int, GpuLayout]]:
    """Maximal runs of consecutive identical GPUs: ``(first index, last index, layout)``."""
    out: list[tuple[int, int, GpuLayout]] = []
    for index, gpu in enumerate(layout):
        if out and out[-1][2] == gpu and out[-1][1] == index - 1:
            out[-1] = (out[-1][0], index, gpu)
        else:
            out.append((index, index, gpu))
    return out


def node_description(model: GpuModel | None, layout: NodeLayout) -> str:
    parts = []
    for first, last, gpu in runs(layout):
        where = f"gpu {first}" if first == last else f"gpu {first}-{last}"
        parts.append(f"{where}: {gpu_description(model, gpu)}")
    return "; ".join(parts)


def content_hash(model_key: str, layout: NodeLayout) -> str:
    text = (
        model_key
        + "|"
        + "|".join(
            ("on:" if g.mig_enabled else "off:") + ",".join(f"{n}={c}" for n, c in g.profiles) for g in layout
        )
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def mig_config_name(model: GpuModel | None, model_key: str, layout: NodeLayout) -> str:
    """The readable config name, or ``migc-<model>-<hash>`` when the readable one is not a label value.

    Every GPU MIG-disabled maps to mig-parted's conventional ``all-disabled`` (the name the GPU Operator
    puts on unlabelled nodes), whatever the model.
    """
    if all(not g.mig_enabled for g in layout):
        return ALL_DISABLED
    short = model.short_name if model is not None else model_key.lower()
    parts = runs(layout)
    if len(parts) == 1:
        body = gpu_token(model, parts[0][2])
    else:
        body = "_".join(f"{last - first + 1}gpu-{gpu_token(model, gpu)}" for first, last, gpu in parts)
    name = f"migc-{short}-{body}"
    if is_label_value(name):
        return name
    hashed = f"migc-{short}-{content_hash(model_key, layout)}"
    if is_label_value(hashed):
        return hashed
    return f"migc-{content_hash(model_key, layout)}"


def device_plugin_config_name(any_mig: bool, sharing_mode: str, replicas: int) -> str:
    """Key in the device-plugin ConfigMap; the value of the node label ``nvidia.com/device-plugin.config``.

    MIG nodes always use the ``mixed`` strategy (see ``compiler.render`` for why not ``single``);
    sharing (time-slicing / MPS) applies only to nodes without MIG, so MPS is never combined with MIG.
    """
    if any_mig:
        return "migc-mig-mixed"
    if sharing_mode == "time-slicing":
        return f"migc-time-slicing-{replicas}"
    if sharing_mode == "mps":
        return f"migc-mps-{replicas}"
    return "migc-whole-gpus"
