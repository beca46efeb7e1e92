"""O1: the two objective orders on the M3 demand shifts (issue 14).

``MIGC_SHARED_DIR=/work/shared python -m bench.orders`` (``--tiny`` for the smoke test)

For every M3 case of ``python -m bench --full`` (small 3-node cases, synthetic ±x% shifts, openb
windows sliding by creation time), migc solves the demand before the shift from scratch (no
deployed state, so both orders give the same answer), then the demand after the shift against that
answer twice: with ``PartitionPolicy.spec.objective`` ``[gpus, disruption, preference]``
(fewest GPUs first) and ``[disruption, gpus, preference]`` (least disruption first). Each row shows
nodes touched / GPUs changed / GPUs used (counted by the bench from the layouts, as M3 does) and
replicas left unmet (must be equal: served demand outranks both goals).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from bench import harness, openb, run, synthetic
from bench.geometry import geometry
from bench.optimum import min_gpus
from compiler.catalog import GpuModel, load_catalog
from compiler.model import Objective, Policy

GPUS_FIRST: tuple[Objective, ...] = ("gpus", "disruption", "preference")
DISRUPTION_FIRST: tuple[Objective, ...] = ("disruption", "gpus", "preference")


@dataclass(frozen=True)
class Outcome:
    nodes: int
    gpus_changed: int
    gpus_used: int
    unmet: int


@dataclass(frozen=True)
class Row:
    case: str
    gpus_before: int
    gpus_first: Outcome
    disruption_first: Outcome


def with_order(policy: Policy, order: tuple[Objective, ...]) -> Policy:
    return replace(policy, partition=replace(policy.partition, objective=order))


def compare(
    model: GpuModel, label: str, before: list[Any], after: list[Any], nodes: int, per_node: int
) -> Row:
    catalog = load_catalog()
    geo = geometry(model)
    p1 = harness.build_policy(model, before, nodes, per_node)
    s1 = harness.solve(p1, catalog)
    state1 = harness.node_states(s1.pool(harness.CLUSTER, harness.POOL))
    current = harness.current_state(s1)
    p2 = harness.build_policy(model, after, nodes, per_node)
    outcomes = []
    for order in (GPUS_FIRST, DISRUPTION_FIRST):
        s2 = harness.solve(with_order(p2, order), catalog, current)
        rb = harness.read_back(geo, s2, p2)
        touched, changed = harness.changes(state1, rb.nodes)
        outcomes.append(Outcome(touched, changed, rb.gpus_used, rb.unmet))
    return Row(label, harness.read_back(geo, s1, p1).gpus_used, outcomes[0], outcomes[1])


def cases(cfg: run.Config, model: GpuModel) -> list[tuple[str, list[Any], list[Any], int, int]]:
    """The M3 cases of ``cfg`` (the same seeds, shifts and windows as ``bench.run.run_m3``)."""
    geo = geometry(model)
    out: list[tuple[str, list[Any], list[Any], int, int]] = []
    for seed in cfg.m3_small_seeds:
        before = run._small_demand(geo, seed, 7)
        for pct in cfg.m3_small_shifts:
            after = synthetic.shift(before, pct, seed)
            if min_gpus(geo, after).gpus <= 12:
                out.append((f"small s={seed} ±{pct:.0f}%", before, after, 3, 4))
        other = run._small_demand(geo, seed, 7, "balanced-shaped")
        out.append((f"small s={seed} inference→balanced-shaped mix", before, other, 3, 4))
    for mix in cfg.mixes[:2]:
        before = synthetic.generate(geo, mix, cfg.m3_large_size, 11)
        for pct in cfg.m3_shifts:
            after = synthetic.shift(before, pct, 11)
            nodes = run.fleet_nodes(before + after)
            out.append((f"synthetic {mix} n={cfg.m3_large_size} ±{pct:.0f}%", before, after, nodes, 8))
    if openb.available(cfg.trace):
        trace = openb.load_trace(cfg.trace)
        n, stride, count = cfg.m3_windows
        for mapping in openb.MAPPINGS:
            windows = [openb.to_pods(geo, w, mapping) for w in openb.sliding_windows(trace, n, stride, count)]
            nodes = max(run.fleet_nodes(w) for w in windows)
            for i in range(1, len(windows)):
                label = f"openb/{mapping} window {i - 1}→{i} ({n} pods, step {stride})"
                out.append((label, windows[i - 1], windows[i], nodes, 8))
    return out


def render(rows: Sequence[Row]) -> str:
    def cell(o: Outcome) -> str:
        return f"{o.nodes} / {o.gpus_changed} / {o.gpus_used}" + (f" (unmet {o.unmet})" if o.unmet else "")

    lines = [
        "| case | GPUs used before | gpus-first: nodes / GPUs changed / GPUs used "
        "| disruption-first: nodes / GPUs changed / GPUs used |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r.case} | {r.gpus_before} | {cell(r.gpus_first)} | {cell(r.disruption_first)} |" for r in rows
    ]

    def total(pick: str) -> tuple[int, int, int]:
        outs = [getattr(r, pick) for r in rows]
        return sum(o.nodes for o in outs), sum(o.gpus_changed for o in outs), sum(o.gpus_used for o in outs)

    g, d = total("gpus_first"), total("disruption_first")
    lines += [
        "",
        f"Over {len(rows)} shifts: gpus-first touched {g[0]} nodes, changed {g[1]} GPUs and used {g[2]} "
        "GPUs; "
        f"disruption-first touched {d[0]} nodes, changed {d[1]} GPUs and used {d[2]} GPUs "
        f"({d[2] - g[2]:+d} GPUs, {d[0] - g[0]:+d} nodes, {d[1] - g[1]:+d} GPUs changed).",
    ]
    return "\n".join(lines)


def problems(rows: Sequence[Row]) -> list[str]:
    """Structural facts: both orders serve the same; each wins its own first goal (or ties)."""
    out = []
    for r in rows:
        g, d = r.gpus_first, r.disruption_first
        if g.unmet != d.unmet:
            out.append(f"{r.case}: unmet differs between the orders ({g.unmet} vs {d.unmet})")
        if g.gpus_used > d.gpus_used:
            out.append(
                f"{r.case}: gpus-first used more GPUs ({g.gpus_used}) than disruption-first ({d.gpus_used})"
            )
        if d.nodes > g.nodes:
            out.append(
                f"{r.case}: disruption-first touched more nodes ({d.nodes}) than gpus-first ({g.nodes})"
            )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.orders", description=__doc__)
    ap.add_argument("--tiny", action="store_true", help="the smoke test's sizes (numbers meaningless)")
    ap.add_argument("--model", default="A100-SXM4-80GB")
    args = ap.parse_args(argv)
    cfg = run.TINY if args.tiny else run.FULL
    model = load_catalog().get(args.model)
    if model is None:
        ap.error(f"unknown model {args.model}")
    rows = [compare(model, *c) for c in cases(cfg, model)]
    print(render(rows))
    bad = problems(rows)
    for line in bad:
        print(f"CHECK FAILED: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
