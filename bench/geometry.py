"""The bench's own, independent view of MIG geometry: every valid layout of a GPU model.

Deliberately not ``compiler.catalog.layouts``: the reference optimum must not share the code it
judges. This enumerates every set of pairwise non-overlapping placements (profile, start) on the
memory-slice axis, then keeps the multisets within the compute budget and the max counts. It
reads only the catalog's facts (slices, max counts, placement starts).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from compiler.catalog import GpuModel, Profile

Layout = tuple[tuple[str, int], ...]
"""A canonical multiset of profile names: sorted ``(name, count)`` pairs, no zero counts."""


def canon(counts: Mapping[str, int]) -> Layout:
    return tuple(sorted((k, v) for k, v in counts.items() if v))


@dataclass(frozen=True)
class Geometry:
    model: GpuModel
    profiles: tuple[Profile, ...]  # usable profiles (no +me), sorted by (compute, memory, name)
    layouts: frozenset[Layout]  # every valid non-empty multiset
    maximal: tuple[Layout, ...]  # layouts no other valid layout strictly contains, sorted

    def profile(self, name: str) -> Profile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise KeyError(f"{self.model.model} has no usable profile {name}")

    def feasible(self, counts: Mapping[str, int]) -> bool:
        key = canon(counts)
        return not key or key in self.layouts

    def slices(self, name: str) -> int:
        return self.profile(name).compute_slices


def _contains(big: Layout, small: Layout) -> bool:
    b = dict(big)
    return all(b.get(k, 0) >= v for k, v in small)


@functools.cache
def geometry(model: GpuModel) -> Geometry:
    profiles = tuple(
        sorted(
            (p for p in model.profiles if not p.media_extensions),
            key=lambda p: (p.compute_slices, p.memory_slices, p.name),
        )
    )
    spans = sorted(
        (start, start + p.memory_slices, p.name)
        for p in profiles
        for start in p.placements
        if start + p.memory_slices <= model.memory_slices
    )
    by_name = {p.name: p for p in profiles}
    found: set[Layout] = set()

    def walk(i: int, chosen: list[tuple[int, int, str]]) -> None:
        if chosen:
            counts: dict[str, int] = {}
            for _, _, name in chosen:
                counts[name] = counts.get(name, 0) + 1
            compute = sum(by_name[n].compute_slices * c for n, c in counts.items())
            too_many = any(by_name[n].max_count < c for n, c in counts.items())
            if compute <= model.compute_slices and not too_many:
                found.add(canon(counts))
            elif compute > model.compute_slices:
                return  # adding spans only adds compute
        for j in range(i, len(spans)):
            s, e, name = spans[j]
            if all(e <= cs or s >= ce for cs, ce, _ in chosen):
                chosen.append(spans[j])
                walk(j + 1, chosen)
                chosen.pop()

    walk(0, [])
    layouts = frozenset(found)
    maximal = tuple(sorted(x for x in layouts if not any(y != x and _contains(y, x) for y in layouts)))
    return Geometry(model=model, profiles=profiles, layouts=layouts, maximal=maximal)
