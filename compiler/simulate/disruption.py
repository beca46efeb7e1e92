"""The default loop's disruption rule: is re-carving a node worth what its drain destroys?

Both sides are GPU-seconds, estimated only from what ``migc recommend`` could observe at the moment
of the decision (how long each running pod has run, how long each pending pod has waited) — never
from the trace's future:

* **cost** of re-carving a node = Σ over its running GPU pods of ``f × E² / (E + G)`` plus
  ``gpus_per_node × outage``. ``f``: the fraction of a GPU the pod holds (slices / 7, ``k`` for
  ``k`` whole GPUs); ``E``: how long it has run; ``G``: the controller's drain grace. A pod still
  running when the grace ends is evicted and (restart model) loses ``E``; with run times that are
  scale-invariant (the longer a job has run, the longer it is expected to go on: P(T > E + G | T > E)
  = E / (E + G)) the expected loss is ``E × E / (E + G)``. The outage is the reconfiguration time
  (``drain_seconds + reconfigure_seconds × changed GPUs``), during which the whole node is out.
* **benefit** = Σ over the pending pods the change serves of ``f × W``, ``W`` the time the pod has
  waited so far: by the same scale-invariance, the median further wait of a pod that has waited
  ``W`` without capacity is ``W``, which the change avoids.

A node is re-carved only when ``benefit > cost × (1 + reconfigurationThreshold / 100)``: the
threshold that already asks a change to serve more than 20 % of the shortage also asks it to save
20 % more GPU-time than it destroys. The only constant is the controller's grace ``G``.
"""

from __future__ import annotations

from collections.abc import Iterable


def expected_loss(elapsed: float, grace: float) -> float:
    """GPU-time (per GPU held) an eviction at the end of the grace is expected to throw away."""
    if elapsed <= 0:
        return 0.0
    return elapsed * elapsed / (elapsed + grace)


def node_cost(running: Iterable[tuple[float, float]], grace: float, outage_gpu_seconds: float) -> float:
    """Cost of re-carving a node: ``running`` = (GPU fraction, seconds run) of each of its GPU pods."""
    return sum(f * expected_loss(e, grace) for f, e in running) + outage_gpu_seconds


def worth(benefit: float, cost: float, threshold_pct: float) -> bool:
    """Whether the pending GPU-time a change avoids beats what it destroys by the threshold."""
    return benefit > cost * (1.0 + threshold_pct / 100.0)
