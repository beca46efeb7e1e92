"""Baselines users actually run, modelled as generously as their mechanism allows.

* ``all-balanced``: the GPU Operator's static ``all-balanced`` config on every MIG GPU (the
  catalog's ``balanced`` layout), pods asking for a profile that layout lacks get a whole GPU each.
  GPUs are switched to balanced only as demand needs them (the most favourable static split).
* ``whole-gpu``: no MIG at all, one whole GPU per pod (k for a k-GPU pod).
* ``greedy-ff``: what nos's MIG planner does: pending pods sorted largest first, each placed on the
  first already-partitioned GPU whose layout can be extended feasibly (``is_feasible`` of the
  catalog's layout module), else a new GPU is partitioned for it.

Each exists in two forms: the GPUs needed to serve everything, and, on a fixed fleet, the demand
served when pods are admitted in priority order (highest tier first).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from bench.demand import WHOLE, Pod, profile_counts, tier_rank, whole_gpus
from bench.geometry import Geometry

Feasible = Callable[[Mapping[str, int]], bool]


def layout_feasibility(geo: Geometry) -> Feasible:
    """``compiler.catalog.layouts.is_feasible`` for this model: the same check nos's planner makes."""
    from compiler.catalog.layouts import is_feasible

    model = geo.model
    return lambda counts: is_feasible(model, counts)


def _size_key(geo: Geometry, pod: Pod) -> tuple[int, int, int, str]:
    """Largest first: whole GPUs by count, then profiles by compute then memory slices."""
    if pod.resource == WHOLE:
        return (-pod.count * geo.model.compute_slices, -geo.model.memory_slices, 0, pod.resource)
    prof = geo.profile(pod.resource)
    return (-prof.compute_slices, -prof.memory_slices, 1, pod.resource)


# --- GPUs needed for all of the demand -----------------------------------------------------------


def balanced_gpus(geo: Geometry, pods: Sequence[Pod]) -> int:
    balanced = dict(geo.model.balanced)
    per_profile = profile_counts(pods)
    hosted = [math.ceil(n / balanced[name]) for name, n in per_profile.items() if name in balanced]
    mig = max(hosted, default=0)
    unhosted = sum(n for name, n in per_profile.items() if name not in balanced)
    return mig + unhosted + whole_gpus(pods)


def whole_per_pod_gpus(pods: Sequence[Pod]) -> int:
    return sum(p.count for p in pods)


def greedy_gpus(geo: Geometry, pods: Sequence[Pod], feasible: Feasible) -> int:
    ff = _FirstFit(feasible)
    whole = 0
    for pod in sorted(pods, key=lambda p: _size_key(geo, p)):
        if pod.resource == WHOLE:
            whole += pod.count
            continue
        if not ff.place(pod.resource):
            ff.open(pod.resource)
    return len(ff.gpus) + whole


class _FirstFit:
    """First fit over partitioned GPUs, in opening order.

    Feasibility is downward closed (removing instances keeps a layout valid), so a GPU that once
    rejected profile p rejects it forever as it only fills up; remembering, per profile, the first
    GPU not yet known to reject it gives the same answer as scanning from the start every time,
    in O(pods + GPUs × profiles) checks instead of O(pods × GPUs).
    """

    def __init__(self, feasible: Feasible) -> None:
        self.feasible = feasible
        self.gpus: list[dict[str, int]] = []
        self.start: dict[str, int] = {}

    def place(self, name: str) -> bool:
        i = self.start.get(name, 0)
        while i < len(self.gpus):
            g = self.gpus[i]
            g[name] = g.get(name, 0) + 1
            if self.feasible(g):
                self.start[name] = i
                return True
            g[name] -= 1
            if not g[name]:
                del g[name]
            i += 1
        self.start[name] = i
        return False

    def open(self, name: str) -> None:
        self.gpus.append({name: 1})


# --- demand served on a fixed fleet --------------------------------------------------------------


def _priority_order(pods: Sequence[Pod]) -> list[Pod]:
    """Highest tier first; arrival order (the list order) within a tier."""
    return [p for _, p in sorted(enumerate(pods), key=lambda ip: (tier_rank(ip[1].tier), ip[0]))]


def balanced_served(geo: Geometry, pods: Sequence[Pod], fleet_gpus: int) -> list[Pod]:
    balanced = dict(geo.model.balanced)
    free = fleet_gpus
    open_gpus: list[dict[str, int]] = []  # free slots left per balanced GPU
    served: list[Pod] = []
    for pod in _priority_order(pods):
        if pod.resource in balanced:
            slot = next((g for g in open_gpus if g[pod.resource] > 0), None)
            if slot is None and free > 0:
                free -= 1
                slot = dict(balanced)
                open_gpus.append(slot)
            if slot is not None:
                slot[pod.resource] -= 1
                served.append(pod)
        elif free >= pod.count:
            free -= pod.count
            served.append(pod)
    return served


def whole_per_pod_served(pods: Sequence[Pod], fleet_gpus: int) -> list[Pod]:
    free = fleet_gpus
    served: list[Pod] = []
    for pod in _priority_order(pods):
        if free >= pod.count:
            free -= pod.count
            served.append(pod)
    return served


def greedy_served(geo: Geometry, pods: Sequence[Pod], fleet_gpus: int, feasible: Feasible) -> list[Pod]:
    """Tier by tier, largest first within a tier, first fit; a new GPU only while the fleet has one."""
    free = fleet_gpus
    ff = _FirstFit(feasible)
    served: list[Pod] = []
    ordered = sorted(pods, key=lambda p: (tier_rank(p.tier), _size_key(geo, p)))
    for pod in ordered:
        if pod.resource == WHOLE:
            if free >= pod.count:
                free -= pod.count
                served.append(pod)
            continue
        if ff.place(pod.resource):
            served.append(pod)
        elif free > 0:
            free -= 1
            ff.open(pod.resource)
            served.append(pod)
    return served
