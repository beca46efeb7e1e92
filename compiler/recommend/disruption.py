"""The disruption rule: is re-carving a node worth what its drain destroys?

For users, the same model with a worked example and its measured weak spots: docs/recommend.md,
"The cost model" (tests/test_docs_cost_model.py keeps its numbers equal to these functions').

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
    8 × 240 = 1,920 GPU-s, which a waiting 1g pod (``f = 1/7``) only outweighs after
    1,920 × 1.2 × 7 = 16,128 s at the default threshold of 20 (13,440 s at threshold 0).

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

* **drain scope** (:data:`DRAIN_SCOPES`, :func:`change_cost`): which running pods a change costs.
  mig-parted applies a MIG config GPU by GPU and skips a GPU whose MIG devices already equal the
  config (NVIDIA/mig-parted@bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d
  ``cmd/nvidia-mig-parted/apply/config.go:46`` ``WalkSelectedMigConfigForEachGPU`` in
  ``ApplyMigConfig``, ``:92-95`` "Skipping -- already set to desired value"), so pods on unchanged
  GPUs can keep running through the apply; a busy GPU that must change makes the apply fail, so the
  pods on changing GPUs must be gone first.

  - ``"node"`` (default; the device-plugin backend): the controller cannot tell which pod holds
    which GPU (nothing in the API maps a pod to a device), so every GPU pod of the node blocks the
    drain (controller/pods.py ``blocking``) and is charged: the loss and the displaced wait count
    every running pod, the outage every GPU of the node (or the busy share, ``charge="busy"``).
  - ``"gpu"`` (static DRA nodes, where a pod's ResourceClaim status names its devices): only the
    pods holding a device on a changing GPU are drained and charged (their loss and displaced wait);
    the node is still cordoned for the apply (the operand pause and the changed GPUs' re-carve), so
    the outage charges the node's GPUs less the share that the pods on unchanged GPUs keep running
    (``charge="busy"``: the share of the pods drained). An idle GPU's change costs no loss at all.

A change is made only when ``benefit > cost × (1 + reconfigurationThreshold / 100)``: the threshold
that asks a change to serve more than 20 % of the shortage also asks it to save 20 % more GPU-time
than it destroys. The only constant is the controller's grace ``G``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from controller import defaults

# how long the controller lets GPU pods finish (controller/settings.py Settings.drain.grace_timeout's
# default: the one constant both sides read)
DRAIN_GRACE_SECONDS = defaults.DRAIN_GRACE_SECONDS
# the MIG manager's reconfiguration time per changed GPU: the 30–90 s per GPU seen in practice
RECONFIGURE_SECONDS = 60.0
# D: a node's fixed pause per change, whatever its GPUs (the GPU Operator's MIG manager stops the
# node's GPU operands — device plugin, GFD, DCGM exporter — around the apply and starts them again).
# 0 unless set (`--drain-seconds` of recommend and simulate): the pause depends on the operator's
# version and the operands deployed, so it is the user's to state, not ours to guess
DRAIN_SECONDS = 0.0
# the most `--drain-grace`, `--reconfigure-seconds` and `--drain-seconds` take: a week, beyond any grace
# or pause a real node is given, and a bound on how long the replay keeps a node out (a node out for
# 1e300 s kept it evaluating for ever)
MAX_SECONDS = 7 * 86400.0
# --disruption of recommend and simulate: apply the rule, or fall back to the gain threshold
MODELS = ("expected", "off")
# how much of a node its outage charges (module docstring): every GPU of it, or its busy share
OUTAGE_CHARGES = ("node", "busy")
# which pods a node's change drains and is charged for (module docstring): every GPU pod of the node
# (the device plugin: no pod-to-GPU mapping in the API), or only those on the GPUs that change (DRA)
DRAIN_SCOPES = ("node", "gpu")


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


@dataclass(frozen=True)
class RunningPod:
    """One running GPU pod of a node as the disruption rule sees it.

    ``held``: per resource, (profile, instances, fraction of one GPU they make); ``elapsed``: seconds
    it has run (None: unknown); ``waited``: seconds it waited before it started; ``on_changed``:
    whether it holds a device on a GPU the change re-carves (True where that is not known)."""

    held: tuple[tuple[str, int, float], ...]
    elapsed: float | None
    waited: float
    on_changed: bool = True

    @property
    def fraction(self) -> float:
        return sum(f for _, _, f in self.held)


@dataclass(frozen=True)
class ChangeCost:
    """The cost of one node's change in GPU-seconds: the running pods' expected ``loss`` (None when a
    charged pod's run time is unknown), the ``outage`` and the ``displaced`` wait."""

    loss: float | None
    outage: float
    displaced: float

    @property
    def total(self) -> float | None:
        return None if self.loss is None else self.loss + self.outage + self.displaced


def change_cost(
    pods: Sequence[RunningPod],
    gpus_on_node: int,
    changed_gpus: int,
    after: Mapping[str, int],
    grace: float,
    reconfigure_seconds: float,
    drain_seconds: float = 0.0,
    charge: str = "node",
    scope: str = "node",
) -> ChangeCost:
    """What re-carving one node costs (module docstring), for ``migc recommend`` and the replay.

    ``pods``: the node's running GPU pods; ``after``: the node's instances per profile once changed;
    ``scope``: :data:`DRAIN_SCOPES` — ``"node"`` charges every pod, ``"gpu"`` only those with
    ``on_changed`` (the others keep running through the apply: they lose nothing, are displaced
    from nothing, and the GPU share they hold is not out of service)."""
    if scope not in DRAIN_SCOPES:
        raise ValueError(f"drain scope {scope!r}: expected one of {', '.join(DRAIN_SCOPES)}")
    drained = list(pods) if scope == "node" else [p for p in pods if p.on_changed]
    loss: float | None = 0.0
    for p in drained:
        if p.elapsed is None or loss is None:
            loss = None
            continue
        loss += p.fraction * expected_loss(p.elapsed, grace)
    if scope == "node":
        out = outage(
            (p.fraction for p in pods), gpus_on_node, changed_gpus, reconfigure_seconds, drain_seconds, charge
        )
        room: Mapping[str, int] = after
    else:
        kept = [p for p in pods if not p.on_changed]
        if charge == "node":  # the node's GPUs less what keeps running on its unchanged GPUs
            share = max(0.0, gpus_on_node - busy_share(p.fraction for p in kept))
            out = outage((), 1, changed_gpus, reconfigure_seconds, drain_seconds, "node") * share
        else:
            out = outage(
                (p.fraction for p in drained),
                gpus_on_node,
                changed_gpus,
                reconfigure_seconds,
                drain_seconds,
                charge,
            )
        left = dict(after)  # the instances the kept pods go on holding are not there for the drained
        for p in kept:
            for name, n, _ in p.held:
                left[name] = left.get(name, 0) - n
        room = left
    moved = displaced([(name, n, f, p.waited) for p in drained for name, n, f in p.held], room)
    return ChangeCost(loss, out, moved)
