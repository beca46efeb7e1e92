"""Seeded synthetic demand: named mixes of profile shapes across tenants and tiers, and shifts of it.

A mix is written in shapes (compute slices, memory slices) rather than names so that the same mix
means the same thing on every model (``1g.10gb`` on an A100-80GB is ``1g.18gb`` on an H200).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from bench.demand import TIERS, WHOLE, Pod
from bench.geometry import Geometry

Shape = tuple[int, int]  # (compute slices, memory slices); (0, k) = k whole GPUs

MIXES: dict[str, tuple[tuple[Shape, float], ...]] = {
    # many small inference replicas, a few medium ones
    "inference": (((1, 1), 0.55), ((1, 2), 0.10), ((2, 2), 0.20), ((3, 4), 0.15)),
    # every MIG shape equally likely, plus single whole GPUs
    "uniform": (((1, 1), 1), ((1, 2), 1), ((2, 2), 1), ((3, 4), 1), ((4, 4), 1), ((0, 1), 1)),
    # large slices and multi-GPU training jobs
    "training": (
        ((3, 4), 0.30),
        ((4, 4), 0.30),
        ((2, 2), 0.15),
        ((0, 1), 0.10),
        ((0, 2), 0.08),
        ((0, 4), 0.05),
        ((0, 8), 0.02),
    ),
    # exactly the shapes all-balanced offers, in its proportions (its best case)
    "balanced-shaped": (((1, 1), 0.5), ((2, 2), 0.25), ((3, 4), 0.25)),
}


def profile_for(geo: Geometry, shape: Shape) -> str | None:
    for p in geo.profiles:
        if (p.compute_slices, p.memory_slices) == shape:
            return p.name
    return None


def generate(geo: Geometry, mix: str, pods: int, seed: int, tenants: int = 8) -> list[Pod]:
    """``pods`` pods drawn from ``mix``; each tenant has one tier, drawn once."""
    rng = random.Random(f"{mix}:{pods}:{seed}:{tenants}")
    tier_of = {f"t{i:03d}": rng.choice(TIERS)[0] for i in range(tenants)}
    shapes = [s for s, _ in MIXES[mix]]
    weights = [w for _, w in MIXES[mix]]
    out: list[Pod] = []
    for _ in range(pods):
        shape = rng.choices(shapes, weights)[0]
        tenant = f"t{rng.randrange(tenants):03d}"
        if shape[0] == 0:
            out.append(Pod(WHOLE, shape[1], tenant, tier_of[tenant]))
            continue
        name = profile_for(geo, shape)
        if name is None:  # a model without this shape (A30): fall back to a whole GPU
            out.append(Pod(WHOLE, 1, tenant, tier_of[tenant]))
        else:
            out.append(Pod(name, 1, tenant, tier_of[tenant]))
    return out


def shift(pods: Sequence[Pod], pct: float, seed: int) -> list[Pod]:
    """Each (tenant, resource, size) group grows or shrinks by a uniform random ±``pct`` percent."""
    rng = random.Random(f"shift:{pct}:{seed}")
    groups: dict[Pod, int] = {}
    for p in pods:
        groups[p] = groups.get(p, 0) + 1
    out: list[Pod] = []
    for pod, n in sorted(groups.items()):
        factor = 1 + rng.uniform(-pct, pct) / 100
        out.extend([pod] * max(0, round(n * factor)))
    return out
