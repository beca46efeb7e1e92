"""``migc simulate --mode fill``: FGD's packing protocol (Weng et al., USENIX ATC '23) on a MIG fleet.

Pods drawn from the trace at random (``seed``, with replacement: FGD inflates the trace's workload
the same way) arrive one by one and never leave; each is placed at once or counted as failed;
arrivals stop with the pod whose request brings the GPU share requested to 100 % of the fleet's GPUs.
A pod asks for ``f`` = ``gpu_milli / 1000`` of one GPU, or ``num_gpu`` whole GPUs on one node; under
MIG it gets the profile the replay maps it to (:func:`compiler.simulate.trace.profile_for`): its
share is rounded up to a profile.

* ``allocationRatio``: Σ ``f`` of the pods placed / GPUs of the fleet (FGD's GPU allocation ratio).
* ``migRoundingCeiling``: the most any MIG packing of these requests can allocate, / GPUs: the
  fractional knapsack over the requests (value ``f``, size its rounded share — profile compute
  slices / the GPU's, or ``k`` — capacity the fleet's GPUs), placement ignored; an upper bound.
* ``roundedShareRatio``: Σ ``f`` / Σ rounded share over the requests: what a fleet full of the
  requests' mix allocates (the issue's "rounding caps any packing at 0.927"; not a bound, a packing
  may keep the pods that round up least).
* Policies: ``first-fit`` — per-pod carving (:mod:`compiler.simulate.carve`, the DRA driver's rule):
  the first GPU, in order, where the profile has a free placement; ``best-fit`` — the GPU where it
  fits with the fewest compute slices left free afterwards (ties: the first); ``migc-static`` — the
  solver's layout (``migc compile``, :func:`compiler.simulate.engine.solver_static`) for the shape
  mix of the requests, scaled to the fleet, each pod first fit into a free instance of its profile.
  A pod of ``k ≥ 2`` whole GPUs needs ``k`` GPUs of one node where the full profile fits (empty ones;
  ``migc-static``: ``k`` free full-GPU instances of one node): the first such node (``best-fit``:
  the one with the fewest such GPUs left, then the first).

With no departures a GPU only fills, so the GPUs are kept grouped by their state (memory slices and
compute used) and a pod looks at each state once, not at each GPU: 777 × 8 GPUs take about a second.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass

from compiler.catalog import Catalog, GpuModel
from compiler.simulate.carve import CarvedGpu, Carver
from compiler.simulate.engine import Settings, solver_static
from compiler.simulate.trace import TracePod, full_profile, profile_for

POLICIES = ("first-fit", "best-fit", "migc-static")


@dataclass(frozen=True)
class FillResult:
    policy: str
    placed: int
    failed: int
    allocated_share: float  # Σ f of the placed pods, in GPUs
    capacity: int  # GPUs

    @property
    def ratio(self) -> float:
        return self.allocated_share / self.capacity if self.capacity else 0.0


def share(pod: TracePod) -> float:
    """The GPUs one pod requests: ``num_gpu`` when it asks for several, else ``gpu_milli / 1000``."""
    return float(pod.num_gpu) if pod.num_gpu > 1 else min(pod.gpu_milli, 1000) / 1000.0


def arrivals(trace: Sequence[TracePod], capacity: int, seed: int, gpus_per_node: int) -> list[TracePod]:
    """Pods drawn at random (``seed``) from the trace's pods that fit a node, with replacement, up to
    the one whose request brings the total to ``capacity`` GPUs."""
    rng = random.Random(seed)
    pool = [p for p in trace if share(p) > 0 and p.num_gpu <= gpus_per_node]
    out: list[TracePod] = []
    total = 0.0
    while pool and total < capacity - 1e-9:  # 10 × 0.1 is 0.999…
        pod = pool[rng.randrange(len(pool))]
        out.append(pod)
        total += share(pod)
    return out


def rounded(model: GpuModel, pod: TracePod, mapping: str) -> float:
    """The GPUs one pod takes once its request is rounded up to a profile (``k`` for ``k`` GPUs)."""
    prof, count = profile_for(pod, model, mapping)
    p = model.profile(prof)
    assert p is not None
    return count * p.compute_slices / model.compute_slices


def rounded_share_ratio(model: GpuModel, pods: Sequence[TracePod], mapping: str) -> float:
    """Σ f / Σ rounded share over ``pods`` (module docstring)."""
    total = sum(rounded(model, p, mapping) for p in pods)
    return sum(share(p) for p in pods) / total if total else 0.0


def rounding_ceiling(model: GpuModel, pods: Sequence[TracePod], capacity: int, mapping: str) -> float:
    """The fractional knapsack bound on Σ f (module docstring), / ``capacity``."""
    items = sorted(((share(p), rounded(model, p, mapping)) for p in pods), key=lambda x: -x[0] / x[1])
    room, got = float(capacity), 0.0
    for f, r in items:
        if room <= 0:
            break
        take = min(1.0, room / r)
        got += f * take
        room -= r * take
    return got / capacity if capacity else 0.0


class _Carving:
    """The fleet under ``first-fit`` / ``best-fit``: GPUs grouped by state, nodes by empty GPUs."""

    def __init__(self, model: GpuModel, nodes: int, gpn: int, best: bool) -> None:
        self.carver = Carver(model)
        self.gpn, self.best = gpn, best
        self.gpus = [CarvedGpu() for _ in range(nodes * gpn)]
        self.by_state: dict[tuple[int, int], list[int]] = {(0, 0): list(range(nodes * gpn))}  # heaps
        self.empty = [gpn] * nodes  # empty GPUs per node
        self.by_empty: dict[int, list[int]] = {gpn: list(range(nodes))}  # heaps (lazy deletion)
        self.full = full_profile(model).name

    def _state(self, g: int) -> tuple[int, int]:
        return (self.gpus[g].mask, self.gpus[g].compute)

    def _carve(self, g: int, prof: str, start: int) -> None:
        if self._state(g) == (0, 0):
            node = g // self.gpn
            self.empty[node] -= 1
            heapq.heappush(self.by_empty.setdefault(self.empty[node], []), node)
        self.carver.carve(self.gpus[g], prof, start)
        heapq.heappush(self.by_state.setdefault(self._state(g), []), g)

    def place(self, prof: str, count: int) -> bool:
        if count > 1:
            return self._place_whole(count)
        best: tuple[int, int, int] | None = None  # (compute left or 0 for first-fit, GPU, start)
        for state, heap in self.by_state.items():
            while heap and self._state(heap[0]) != state:
                heapq.heappop(heap)  # that GPU has moved on to another state
            if not heap:
                continue
            g = heap[0]
            start = self.carver.start(self.gpus[g], prof)
            if start is None:
                continue
            cand = (self.carver.left(self.gpus[g], prof) if self.best else 0, g, start)
            if best is None or cand < best:
                best = cand
        if best is None:
            return False
        _, g, start = best
        heapq.heappop(self.by_state[self._state(g)])
        self._carve(g, prof, start)
        return True

    def _place_whole(self, count: int) -> bool:
        pick: tuple[int, int] | None = None  # (empty GPUs, node)
        for e, heap in self.by_empty.items():
            if e < count:
                continue
            while heap and self.empty[heap[0]] != e:
                heapq.heappop(heap)
            if heap and (pick is None or ((e, heap[0]) < pick if self.best else heap[0] < pick[1])):
                pick = (e, heap[0])
        if pick is None:
            return False
        node = pick[1]
        took = 0
        for g in range(node * self.gpn, (node + 1) * self.gpn):
            if took < count and self._state(g) == (0, 0):
                self._carve(g, self.full, 0)
                took += 1
        return True


class _Static:
    """``migc-static``: free instances per GPU of fixed layouts; first fit per profile (a cursor:
    with no departures a GPU without a free instance of a profile never gets one)."""

    def __init__(self, layouts: Sequence[dict[str, int]], gpn: int, full: str) -> None:
        self.free = [dict(x) for x in layouts]
        self.gpn, self.full = gpn, full
        self.cursor: dict[str, int] = {}
        self.node_full = [
            sum(self.free[g].get(full, 0) for g in range(n * gpn, (n + 1) * gpn))
            for n in range(len(layouts) // gpn)
        ]
        self.node_cursor: dict[int, int] = {}

    def place(self, prof: str, count: int) -> bool:
        if count > 1:
            n = self.node_cursor.get(count, 0)
            while n < len(self.node_full) and self.node_full[n] < count:
                n += 1
            self.node_cursor[count] = n
            if n == len(self.node_full):
                return False
            took = 0
            for g in range(n * self.gpn, (n + 1) * self.gpn):
                if took < count and self.free[g].get(self.full, 0):
                    self.free[g][self.full] -= 1
                    took += 1
            self.node_full[n] -= count
            return True
        g = self.cursor.get(prof, 0)
        while g < len(self.free) and not self.free[g].get(prof, 0):
            g += 1
        self.cursor[prof] = g
        if g == len(self.free):
            return False
        self.free[g][prof] -= 1
        if prof == self.full:
            self.node_full[g // self.gpn] -= 1
        return True


def fill_order(
    pods: Sequence[TracePod],
    catalog: Catalog,
    model: GpuModel,
    nodes: int,
    gpus_per_node: int,
    policy: str,
    mapping: str = "compute",
) -> FillResult:
    """Place ``pods`` in this order under ``policy`` (module docstring), none ever leaving."""
    capacity = nodes * gpus_per_node
    fleet: _Carving | _Static
    if policy == "migc-static":
        want: dict[tuple[str, int], float] = {}
        for pod in pods:
            key = profile_for(pod, model, mapping)
            want[key] = want.get(key, 0.0) + 1.0
        s = Settings(nodes=nodes, gpus_per_node=gpus_per_node, mapping=mapping)
        fleet = _Static(
            solver_static(catalog, model, s, want, fill=True), gpus_per_node, full_profile(model).name
        )
    else:
        fleet = _Carving(model, nodes, gpus_per_node, best=policy == "best-fit")
    placed = failed = 0
    got = 0.0
    for pod in pods:
        prof, count = profile_for(pod, model, mapping)
        if fleet.place(prof, count):
            placed += 1
            got += share(pod)
        else:
            failed += 1
    return FillResult(policy, placed, failed, got, capacity)
