"""The disruption rule: is re-carving a node worth what its drain destroys?

One implementation for ``migc recommend`` (the ``disruption`` gate, :mod:`compiler.recommend.engine`)
and ``migc simulate``'s default loop (:mod:`compiler.simulate.engine`, node by node in its cover).
Both sides are GPU-seconds, estimated only from what can be observed at the moment of the decision
(how long each running pod has run, how long each pending pod has waited) — never from the future:

* **cost** of re-carving a node = Σ over its running GPU pods of ``f × E² / (E + G)`` plus the
  outage ``gpus on the node × (drain_seconds + reconfigure_seconds × changed GPUs)`` plus the
  **displaced wait** (:func:`displaced`): Σ ``f × W₀`` over the running pods the change leaves
  without an instance on the node, ``W₀`` the time the pod waited before it started
  (``status.startTime − metadata.creationTimestamp``). ``f``: the
  fraction of a GPU the pod holds (slices / 7, ``k`` for ``k`` whole GPUs); ``E``: how long it has
  run; ``G``: the controller's drain grace. A pod still running when the grace ends is evicted and
  (restart model) loses ``E``; with run times that are scale-invariant (the longer a job has run, the
  longer it is expected to go on: P(T > E + G | T > E) = E / (E + G)) the expected loss is
  ``E × E / (E + G)``. During the outage the whole node is out (it is cordoned for the change).
* **benefit** = Σ over the pending pods the change serves of ``f × W``, ``W`` the time the pod has
  waited so far: by the same scale-invariance, the median further wait of a pod that has waited
  ``W`` without capacity is ``W``, which the change avoids. Per profile, the pods are served in
  queue order (longest waiting first), after the ones the capacity before the change already serves
  (:func:`newly_served`).

* **displaced wait**: a pod whose instance the change removes goes back to the queue (it is evicted
  after the grace, or finishes and its successor finds no instance). By the same scale-invariance
  as the benefit, its further wait for capacity is expected to be what it waited the last time,
  ``W₀``: the change is charged that wait, just as it is credited the waits it ends. Per profile, the
  instances running beyond what the node keeps are displaced, the pods that waited least counted
  first (a lower bound: which pods the scheduler binds again is not known). Without this term two
  shortages trade one node back and forth (each side's pods have just started when the other's
  wait has grown, so draining them looks free); with it, a change must end more waiting than it
  causes.

A change is made only when ``benefit > cost × (1 + reconfigurationThreshold / 100)``: the threshold
that asks a change to serve more than 20 % of the shortage also asks it to save 20 % more GPU-time
than it destroys. The only constant is the controller's grace ``G``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

# controller/settings.py Settings.drain.grace_timeout: how long the controller lets GPU pods finish
# (the compiler may not import the controller; tests/test_recommend_disruption.py asserts they agree)
DRAIN_GRACE_SECONDS = 1800.0
# the MIG manager's reconfiguration time per changed GPU: the 30–90 s per GPU seen in practice
RECONFIGURE_SECONDS = 60.0
# --disruption of recommend and simulate: apply the rule, or fall back to the gain threshold
MODELS = ("expected", "off")


def expected_loss(elapsed: float, grace: float) -> float:
    """GPU-time (per GPU held) an eviction at the end of the grace is expected to throw away."""
    if elapsed <= 0:
        return 0.0
    return elapsed * elapsed / (elapsed + grace)


def node_cost(running: Iterable[tuple[float, float]], grace: float, outage_gpu_seconds: float) -> float:
    """Cost of re-carving a node: ``running`` = (GPU fraction, seconds run) of each of its GPU pods."""
    return sum(f * expected_loss(e, grace) for f, e in running) + outage_gpu_seconds


def outage(
    gpus_on_node: int, changed_gpus: int, reconfigure_seconds: float, drain_seconds: float = 0.0
) -> float:
    """GPU-seconds the node is out while it is re-carved (every GPU of it: the node is cordoned)."""
    return gpus_on_node * (drain_seconds + reconfigure_seconds * changed_gpus)


def newly_served(waits: Sequence[float], demand: int, before: int, after: int) -> float:
    """Σ of the waits of the pending instances of one profile that the change serves (see below)."""
    return sum(served_waits(waits, demand, before, after))


def served_waits(waits: Sequence[float], demand: int, before: int, after: int) -> Sequence[float]:
    """The waits of the pending instances of one profile that the change serves.

    ``waits``: the pending instances' waits in queue order; ``demand``: running + pending instances
    of the profile; ``before``/``after``: the profile's instances before and after the change. The
    first ``min(before, demand) − running`` pending instances are served already; the next
    ``min(after, demand) − min(before, demand)`` are the ones the change serves.
    """
    n = max(0, demand)
    running = max(0, n - len(waits))
    first = max(0, min(before, n) - running)
    more = min(after, n) - min(before, n)
    if more <= 0:
        return ()
    return waits[first : first + more]


def worth(benefit: float, cost: float, threshold_pct: float) -> bool:
    """Whether the pending GPU-time a change avoids beats what it destroys by the threshold."""
    return benefit > cost * (1.0 + threshold_pct / 100.0)


def displaced(running: Iterable[tuple[str, int, float, float]], after: Mapping[str, int]) -> float:
    """GPU-seconds of further wait a change imposes on the running pods it leaves without an instance.

    ``running``: one entry per GPU pod on the node, (profile, instances it holds, fraction of a GPU it
    holds in all, seconds it waited before it started); ``after``: the node's instances per profile
    once the change is made. Per profile, the pods that waited least are kept out first, until the
    instances left running fit ``after`` (a lower bound; see the module docstring).
    """
    by_profile: dict[str, list[tuple[float, int, float]]] = {}
    for profile, count, f, waited in running:
        by_profile.setdefault(profile, []).append((max(0.0, waited), count, f))
    total = 0.0
    for profile, pods in by_profile.items():
        excess = sum(c for _, c, _ in pods) - max(0, after.get(profile, 0))
        for waited, count, f in sorted(pods):
            if excess <= 0:
                break
            total += f * waited
            excess -= count
    return total
