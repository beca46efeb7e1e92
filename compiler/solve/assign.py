"""Node assignment: turn a pool-level decision into one layout per GPU index of every node.

The integer program already chose, per group of identical current nodes, how many nodes stay
exactly as deployed (that is where "nodes touched" is minimised, jointly with the layout counts).
What is left here is linear in the number of GPUs, so 10,000 nodes take milliseconds:

1. kept nodes get their current layout back (lowest node names of each group first);
2. re-laid nodes that must host a multi-GPU pattern (or be a reserved whole node) are the ones
   with the most whole GPUs already, and those whole GPUs are kept where they are;
3. every other re-laid GPU keeps its current layout while the target still needs that layout, so
   the GPUs changed equal the pool-level lower bound ``sum(max(0, current - target))``;
4. the remaining target GPUs fill the free positions in canonical (sorted) order, so new nodes get
   sorted layouts and identical nodes compare equal.

A pool the integer program solved node by node (it serves a workload with a per-node spread)
already has each node's layouts; only their GPU indices are chosen here, each GPU keeping its
deployed layout where the node still carries it.

Ties are broken by node name and GPU index only: the result does not depend on input order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

from compiler.model import GpuLayout, NodeLayout
from compiler.solve.plan_types import RESERVE, Pattern, PoolDecision, pattern_size
from compiler.solve.result import NodeResult

WHOLE = GpuLayout.whole()


def changed_indices(target: NodeLayout, current: NodeLayout | None) -> tuple[int, ...]:
    if current is None:
        return tuple(range(len(target)))
    if current == target:  # a kept node: tuple equality tries identity first, where `!=` calls __eq__
        return ()
    return tuple(i for i, lay in enumerate(target) if i >= len(current) or current[i] != lay)


def assign_pool(decision: PoolDecision, current: Mapping[str, NodeLayout]) -> tuple[NodeResult, ...]:
    """Node results of one pool, sorted by node name. ``current`` maps node name to its deployed layout.

    A DynamicMIG pool's nodes never change: the DRA driver creates an instance per prepared claim and
    destroys it after, and migc deploys no layout there (no assignment entry, no MIG manager:
    docs/dra.md), so the solver's layouts only check that the demand fits; each node's result says
    it as it is (deployed = target), so no plan, recommend proposal or change budget counts it."""
    out = _assign(decision, current)
    if not decision.pool.dra_dynamic:
        return out
    return tuple(replace(n, current=n.gpus, changed_gpus=()) for n in out)


def _assign(decision: PoolDecision, current: Mapping[str, NodeLayout]) -> tuple[NodeResult, ...]:
    pool = decision.pool
    gpn = pool.gpus_per_node
    names = sorted(pool.node_names)
    targets: dict[str, list[GpuLayout | None]] = {}

    if decision.model is None:  # non-MIG pool (or MIG disabled): every GPU whole
        for name in names:
            targets[name] = [WHOLE] * gpn
        return _results(names, targets, current)

    if decision.per_node:
        for name in names:
            targets[name] = _node_slots(decision.node_layouts.get(name, {}), gpn, current.get(name))
        return _results(names, targets, current)

    a = _Assigner(decision, current, names)
    a.keep_nodes()
    relaid = [n for n in names if n not in a.targets]
    for name in relaid:
        a.targets[name] = [None] * gpn
    a.host_patterns(relaid)
    a.keep_matching(relaid)
    a.fill_canonical(relaid)
    return _results(names, a.targets, current)


class _Assigner:
    """The four steps of the module docstring on one pool the integer program solved by group:
    ``targets`` (node → one layout or None per GPU index) fills up step by step while
    ``remaining`` counts the target GPUs of each layout not placed yet."""

    def __init__(self, decision: PoolDecision, current: Mapping[str, NodeLayout], names: list[str]) -> None:
        self.decision = decision
        self.current = current
        self.names = names
        self.gpn = decision.pool.gpus_per_node
        self.targets: dict[str, list[GpuLayout | None]] = {}
        self.remaining: Counter[GpuLayout] = Counter(decision.layouts)
        self.remaining[WHOLE] = decision.whole_gpus
        self.patterns_left: Counter[Pattern] = Counter(decision.patterns)

    def keep_nodes(self) -> None:
        """1. Kept nodes get their current layout back, the lowest names of each group first."""
        groups: dict[NodeLayout, list[str]] = {}
        for name in self.names:
            cur = self.current.get(name)
            if cur is not None and len(cur) == self.gpn:
                groups.setdefault(cur, []).append(name)
        taken: dict[NodeLayout, int] = {}
        for (group, pattern), count in sorted(self.decision.kept.items()):
            members = groups.get(group, [])
            start = taken.get(group, 0)
            chosen = members[start : start + count]
            for name in chosen:
                self.targets[name] = list(group)
            for lay, per_node in Counter(group).items():
                self.remaining[lay] -= per_node * len(chosen)
            if pattern:
                self.patterns_left[pattern] -= len(chosen)
            taken[group] = start + count

    def _whole_now(self, name: str) -> int:
        cur = self.current.get(name)
        return sum(1 for lay in cur[: self.gpn] if lay == WHOLE) if cur is not None else 0

    def host_patterns(self, relaid: list[str]) -> None:
        """2. Multi-GPU patterns (and reserved whole nodes) go to the re-laid nodes with the most
        whole GPUs now, on those whole GPUs first."""
        gpn = self.gpn
        hosts = sorted(relaid, key=lambda n: (-self._whole_now(n), n))
        todo = sorted(
            (p for p, c in self.patterns_left.items() for _ in range(max(0, c))),
            key=lambda p: (-pattern_size(p, gpn), p != RESERVE, p),
        )
        for pattern, name in zip(todo, hosts, strict=False):
            size = pattern_size(pattern, gpn)
            cur = self.current.get(name)
            slots = self.targets[name]
            preferred = [i for i in range(gpn) if cur is not None and i < len(cur) and cur[i] == WHOLE]
            others = [i for i in range(gpn) if i not in preferred]
            for i in (preferred + others)[:size]:
                slots[i] = WHOLE
            self.remaining[WHOLE] -= size

    def keep_matching(self, relaid: list[str]) -> None:
        """3. Every other re-laid GPU keeps its current layout while the target still needs it."""
        for name in relaid:
            cur = self.current.get(name)
            if cur is None:
                continue
            slots = self.targets[name]
            for i in range(min(self.gpn, len(cur))):
                if slots[i] is None and self.remaining[cur[i]] > 0:
                    slots[i] = cur[i]
                    self.remaining[cur[i]] -= 1

    def fill_canonical(self, relaid: list[str]) -> None:
        """4. The remaining target GPUs fill the free positions in sorted order (a new node: all
        its layouts sorted, so identical new nodes compare equal)."""
        remaining = self.remaining
        leftover = [lay for lay in sorted(remaining) for _ in range(max(0, remaining[lay]))]
        pos = 0
        for name in relaid:
            slots = self.targets[name]
            fresh = self.current.get(name) is None
            for i in range(self.gpn):
                if slots[i] is None:
                    slots[i] = leftover[pos] if pos < len(leftover) else WHOLE
                    pos += 1
            if fresh:
                self.targets[name] = list[GpuLayout | None](sorted(lay for lay in slots if lay is not None))
        # the decision's counts cover every GPU exactly; anything else is a bug in the model above
        assert pos == len(leftover), (
            f"{self.decision.pool.name}: {len(leftover)} target GPUs for {pos} free positions"
        )


def _node_slots(layouts: Mapping[GpuLayout, int], gpn: int, cur: NodeLayout | None) -> list[GpuLayout | None]:
    """One node of a pool solved node by node: its MIG layouts (whole GPUs for the rest) on its
    GPU indices, each GPU keeping its deployed layout while the node still carries it; the rest in
    canonical order (a new node: all sorted)."""
    remaining: Counter[GpuLayout] = Counter(layouts)
    remaining[WHOLE] = gpn - sum(layouts.values())
    slots: list[GpuLayout | None] = [None] * gpn
    if cur is not None and len(cur) == gpn:
        for i, lay in enumerate(cur):
            if remaining[lay] > 0:
                slots[i] = lay
                remaining[lay] -= 1
    leftover = iter(sorted(lay for lay, c in remaining.items() for _ in range(max(0, c))))
    for i in range(gpn):
        if slots[i] is None:
            slots[i] = next(leftover)
    return slots


def _results(
    names: list[str], targets: Mapping[str, list[GpuLayout | None]], current: Mapping[str, NodeLayout]
) -> tuple[NodeResult, ...]:
    out = []
    for name in names:
        gpus = tuple(lay if lay is not None else WHOLE for lay in targets[name])
        cur = current.get(name)
        out.append(NodeResult(name=name, gpus=gpus, current=cur, changed_gpus=changed_indices(gpus, cur)))
    return tuple(out)
