"""Valid MIG layouts of a GPU model, derived from the catalog's placement tables (never hand-listed).

A layout is a multiset of GPU-instance profiles. It is valid when the instances can be put at
starts the catalog lists for their profile without overlapping on the memory-slice axis, their
compute slices fit the GPU, no profile exceeds its ``maxCount``, and at most one instance carries
media extensions (``+me``). mig-parted rebuilds a changed GPU from empty and lets NVML choose the
slots, so only the multiset matters downstream; :func:`place` gives one concrete witness placement
for pictures and for explaining why a layout is valid.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from compiler.catalog import GpuModel, Profile
from compiler.model import GpuLayout, frozen_counts

Placed = tuple[str, int, int]
"""(profile name, start memory slice, memory slices occupied)."""


def _usable_profiles(model: GpuModel, allow_media_extensions: bool) -> tuple[Profile, ...]:
    return tuple(p for p in model.profiles if allow_media_extensions or not p.media_extensions)


def _within_budgets(model: GpuModel, counts: Mapping[str, int]) -> bool:
    """Compute-slice budget, per-profile maxCount and the one-``+me``-per-GPU rule."""
    compute = 0
    media = 0
    for name, count in counts.items():
        if count < 0:
            return False
        if count == 0:
            continue
        prof = model.profile(name)
        if prof is None or count > prof.max_count:
            return False
        compute += prof.compute_slices * count
        if prof.media_extensions:
            media += count
    return compute <= model.compute_slices and media <= 1


@functools.cache
def enumerate_layouts(model: GpuModel, *, allow_media_extensions: bool = False) -> tuple[GpuLayout, ...]:
    """Every non-empty valid layout of ``model`` (sorted; MIG enabled), or ``()`` for non-MIG models.

    The empty "MIG on, nothing carried" layout is left out on purpose: an idle GPU is better left
    whole (MIG disabled), which the solver models separately, so offering it would only add a
    dominated column to the integer program.

    Walks the memory-slice axis left to right; at each slot either leaves it empty or starts an
    instance there. With at most 8 slots this visits a few hundred partial placements per model.
    """
    if not model.mig_capable or not model.profiles:
        return ()
    profiles = _usable_profiles(model, allow_media_extensions)
    by_start: dict[int, list[Profile]] = {}
    for prof in profiles:
        for start in prof.placements:
            by_start.setdefault(start, []).append(prof)
    found: set[tuple[tuple[str, int], ...]] = set()
    counts: dict[str, int] = {}

    def walk(slot: int, compute: int, media: int) -> None:
        if slot >= model.memory_slices:
            if counts:
                found.add(frozen_counts(counts))
            return
        walk(slot + 1, compute, media)
        for prof in by_start.get(slot, ()):
            if slot + prof.memory_slices > model.memory_slices:
                continue
            if compute + prof.compute_slices > model.compute_slices:
                continue
            if counts.get(prof.name, 0) + 1 > prof.max_count:
                continue
            if prof.media_extensions and media:
                continue
            counts[prof.name] = counts.get(prof.name, 0) + 1
            walk(slot + prof.memory_slices, compute + prof.compute_slices, media + prof.media_extensions)
            counts[prof.name] -= 1
            if not counts[prof.name]:
                del counts[prof.name]

    walk(0, 0, 0)
    return tuple(sorted(GpuLayout(mig_enabled=True, profiles=f) for f in found))


def is_feasible(model: GpuModel, counts: Mapping[str, int]) -> bool:
    """Whether one GPU of ``model`` can carry exactly these instances (``+me`` profiles allowed)."""
    return place(model, counts) is not None


def place(model: GpuModel, counts: Mapping[str, int]) -> tuple[Placed, ...] | None:
    """A witness placement of ``counts`` on one GPU, sorted by start slice; ``None`` when infeasible.

    Deterministic: larger instances are placed first, each at its lowest free listed start, with
    backtracking; the empty multiset places trivially.
    """
    return _place(model, frozen_counts(counts)) if model.mig_capable or not counts else None


@functools.cache
def _place(model: GpuModel, counts: tuple[tuple[str, int], ...]) -> tuple[Placed, ...] | None:
    if any(c < 0 for _, c in counts):
        return None
    if not _within_budgets(model, dict(counts)):
        return None
    instances: list[Profile] = []
    for name, count in counts:
        prof = model.profile(name)
        assert prof is not None  # _within_budgets rejected unknown names
        instances.extend([prof] * count)
    instances.sort(key=lambda p: (-p.memory_slices, -p.compute_slices, p.name))
    used = [False] * model.memory_slices
    chosen: list[Placed] = []

    def fits(start: int, size: int) -> bool:
        return start + size <= model.memory_slices and not any(used[start : start + size])

    def mark(start: int, size: int, value: bool) -> None:
        for i in range(start, start + size):
            used[i] = value

    def go(i: int, min_start: int) -> bool:
        if i == len(instances):
            return True
        prof = instances[i]
        # identical instances are interchangeable: force increasing starts to avoid re-trying permutations
        same_as_previous = i > 0 and instances[i - 1].name == prof.name
        for start in sorted(prof.placements):
            if same_as_previous and start < min_start:
                continue
            if not fits(start, prof.memory_slices):
                continue
            mark(start, prof.memory_slices, True)
            chosen.append((prof.name, start, prof.memory_slices))
            if go(i + 1, start + 1):
                return True
            chosen.pop()
            mark(start, prof.memory_slices, False)
        return False

    if not go(0, 0):
        return None
    return tuple(sorted(chosen, key=lambda t: (t[1], t[0])))


def layout_compute_slices(model: GpuModel, layout: GpuLayout) -> int:
    """Compute slices a layout occupies (all of them for a whole GPU)."""
    if not layout.mig_enabled:
        return model.compute_slices
    return sum(_profile(model, name).compute_slices * count for name, count in layout.profiles)


def layout_memory_slices(model: GpuModel, layout: GpuLayout) -> int:
    """Memory slices a layout occupies (all of them for a whole GPU)."""
    if not layout.mig_enabled:
        return model.memory_slices
    return sum(_profile(model, name).memory_slices * count for name, count in layout.profiles)


def _profile(model: GpuModel, name: str) -> Profile:
    prof = model.profile(name)
    if prof is None:
        raise KeyError(f"{model.model} has no MIG profile {name}")
    return prof
