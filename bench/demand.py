"""Demand as the bench sees it: a list of pods, each asking for one MIG profile or k whole GPUs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

WHOLE = "gpu"
"""Resource name of a whole (MIG-disabled) GPU; a pod with it asks for ``count`` GPUs on one node."""

TIERS: tuple[tuple[str, int], ...] = (("critical", 1_000_000), ("high", 100_000), ("low", 1_000))
"""migc's default priority tiers, highest first (same names and values as ``PartitionPolicy``)."""


@dataclass(frozen=True, order=True)
class Pod:
    resource: str  # MIG profile name, or WHOLE
    count: int = 1  # whole GPUs on one node when resource is WHOLE; always 1 for a profile
    tenant: str = "t000"
    tier: str = "high"


def tier_rank(tier: str) -> int:
    """0 for the highest tier."""
    for i, (name, _) in enumerate(TIERS):
        if name == tier:
            return i
    raise KeyError(tier)


def profile_counts(pods: Iterable[Pod]) -> dict[str, int]:
    """Instances per MIG profile (whole-GPU pods left out), sorted by name."""
    c = Counter(p.resource for p in pods if p.resource != WHOLE)
    return dict(sorted(c.items()))


def whole_gpus(pods: Iterable[Pod]) -> int:
    return sum(p.count for p in pods if p.resource == WHOLE)


def whole_sizes(pods: Iterable[Pod]) -> dict[int, int]:
    """Whole-GPU pods by size k → how many."""
    c = Counter(p.count for p in pods if p.resource == WHOLE)
    return dict(sorted(c.items()))


def describe(pods: Iterable[Pod]) -> str:
    pods = list(pods)
    parts = [f"{n}×{name}" for name, n in profile_counts(pods).items()]
    parts += [f"{n}×{k}gpu" for k, n in whole_sizes(pods).items()]
    return ", ".join(parts) or "nothing"
