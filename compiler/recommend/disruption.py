"""The disruption rule: is re-carving a node worth what its drain destroys?

One implementation for ``migc recommend`` (the ``disruption`` gate, :mod:`compiler.recommend.engine`)
and ``migc simulate``'s default loop (:mod:`compiler.simulate.engine`, node by node in its cover).
Both sides are GPU-seconds, estimated only from what can be observed at the moment of the decision
(how long each running pod has run, how long each pending pod has waited) — never from the future:

* **cost** of re-carving a node = Σ over its running GPU pods of ``f × E² / (E + G)`` plus the
  **outage** (:func:`outage`) ``B × (drain_seconds + reconfigure_seconds × changed GPUs)`` plus the
  **displaced wait** (:func:`displaced`): Σ ``f × W₀`` over the running pods the change leaves
  without an instance on the node, ``W₀`` the time the pod waited before it started
  (``status.startTime − metadata.creationTimestamp``). ``f``: the
  fraction of a GPU the pod holds (slices / 7, ``k`` for ``k`` whole GPUs); ``E``: how long it has
  run; ``G``: the controller's drain grace. A pod still running when the grace ends is evicted and
  (restart model) loses ``E``; with run times that are scale-invariant (the longer a job has run, the
  longer it is expected to go on: P(T > E + G | T > E) = E / (E + G)) the expected loss is
  ``E × E / (E + G)``.
* **outage** (:func:`outage`): while the node is cordoned, its operands paused (``drain_seconds``)
  and its changed GPUs re-carved (``reconfigure_seconds`` each, one after another), nothing runs on
  it. ``B``, how much of the node is charged, is one of two :data:`OUTAGE_CHARGES`:

  - ``"node"`` (the default): every GPU of the node, busy or idle.
  - ``"busy"``: the node's **busy share**, Σ ``f`` over its running GPU pods (the GPUs they hold;
    0 on an idle node). Idle GPU time has no value, so the outage then costs only the work it stops:
    the running pods' lost progress is already in the first term, the outage adds the time their
    GPU share is out of service before it can run again. An idle node's outage is 0, so it is
    re-carved as soon as a pending pod it serves exists (issue 22: carving idle GPUs evicts nothing
    and comes first); the user's limits (minDwell, dailyChangeBudget, stabilizationWindow, the
    rollout) still apply. Under ``"node"`` an idle 8-GPU node with 4 changed GPUs costs
    8 × 240 = 1,920 GPU-s, which a waiting 1g pod (``f = 1/7``) only outweighs after 13,440 s.

  ``"busy"`` was measured against ``"node"`` on a subset of issue 22's matrix and the report-shaped
  workload declared before running (bench/RESULTS.md, Round 8): it met no clause on more cells and
  one on fewer, so by the landing rule decided before measuring ``"node"`` stays the default;
  ``migc simulate``'s replay selects ``"busy"`` with ``Settings.outage``.
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
# how much of a node its outage charges (module docstring): every GPU of it, or its busy share
OUTAGE_CHARGES = ("node", "busy")


def expected_loss(elapsed: float, grace: float) -> float:
    """GPU-time (per GPU held) an eviction at the end of the grace is expected to throw away."""
    if elapsed <= 0:
        return 0.0
    return elapsed * elapsed / (elapsed + grace)


def node_cost(running: Iterable[tuple[float, float]], grace: float, outage_gpu_seconds: float) -> float:
    """Cost of re-carving a node: ``running`` = (GPU fraction, seconds run) of each of its GPU pods."""
    return sum(f * expected_loss(e, grace) for f, e in running) + outage_gpu_seconds


def busy_share(held: Iterable[float]) -> float:
    """The GPUs a node's running GPU pods hold: Σ of their fractions (``held``), 0 on an idle node."""
    return sum(max(0.0, f) for f in held)


def outage(
    held: Iterable[float],
    gpus_on_node: int,
    changed_gpus: int,
    reconfigure_seconds: float,
    drain_seconds: float = 0.0,
    charge: str = "node",
) -> float:
    """GPU-seconds a node's re-carve is charged for its outage: ``B`` × (operand pause +
    reconfiguration of the changed GPUs), ``B`` = ``gpus_on_node`` (``charge="node"``) or the busy
    share (:func:`busy_share` of ``held``, the GPU fraction of each running GPU pod on the node;
    ``charge="busy"``, 0 on an idle node). See the module docstring."""
    if charge not in OUTAGE_CHARGES:
        raise ValueError(f"outage charge {charge!r}: expected one of {', '.join(OUTAGE_CHARGES)}")
    share = float(gpus_on_node) if charge == "node" else busy_share(held)
    return share * (drain_seconds + reconfigure_seconds * changed_gpus)


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
