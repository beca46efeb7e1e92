"""The robustness matrix of issue 22: every cell is one ``migc simulate`` replay with every baseline.

``python -m bench.matrix [--traces default,gpushare20,gpushare40,gpushare60,gpuspec10] [--nodes 4,8,16]
[--time-scales 1,2,4,8] [--reconf 60,90+300] [--failure-rates 0,0.2] [--seeds 1,2,3]
[--baselines all] [--no-idle-pass] [--outage node|busy] [--surplus last|kept] [--drain-scope node|gpu]
[--whole-gpu mig-disabled|full-instance] [--layouts fewest|maximal] [--idle-surge N] [--out FILE.jsonl]``;
``python -m bench.matrix --table FILE.jsonl`` prints the Markdown table of the cells a file holds,
with the issue's verdict per cell.

One set of defaults for every cell (PartitionPolicy defaults with ``mode: dynamic``, the replay's
defaults otherwise), printed before the first cell. ``--reconf 90+300`` is 90 s per GPU plus a 300 s
operand pause per node (``--drain-seconds``). Seeds only matter with a failure rate above 0 (a cell
with rate 0 is run once, seed 0). ``--no-idle-pass`` adds the loop without its idle pass
(``Settings.idle_pass`` off; on by default since Round 21) as the row ``default-noidle``;
``--outage busy`` charges the disruption rule's outage on the busy share of the node
(``Settings.outage``); ``--drain-scope gpu`` drains only the pods on GPUs that change
(``Settings.drain_scope``: static DRA nodes; ``node``, the default, is the device plugin's);
``--whole-gpu full-instance`` (with ``--drain-scope gpu``) keeps every GPU in MIG mode, a whole GPU
being a full-profile instance (``Settings.whole_gpu``, Round 26);
``--layouts maximal`` carves maximal layouts with spare room (``Settings.layouts``, Round 12). Each
cell appends one JSON line (the cell, its scope, its wall time and the per-baseline rows of
``migc simulate -o json``) to ``--out``, so a partial run keeps what it measured. A cell is
*contended* when naive's overall p95 wait is above 0. Measured, never asserted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from bench.openb import shared_dir
from compiler.catalog import load_catalog
from compiler.model import PartitionPolicy
from compiler.recommend.disruption import OUTAGE_CHARGES
from compiler.simulate.engine import (
    BASELINES,
    DRAIN_SCOPES,
    LAYOUT_RULES,
    SURPLUS_MODELS,
    WHOLE_GPU_MODES,
    Settings,
    simulate,
    whole_gpu_conflicts,
)
from compiler.simulate.report import result_dict
from compiler.simulate.trace import MAX_NODE_RESOURCE, read_trace

FIVE_MIN = 300.0
# the rows of the default loop: the shipped one, and the variants a matrix file may hold (default+idle:
# --idle-pass before it was the default, Round 21; default-noidle: --no-idle-pass since)
LOOPS = ("default", "default+idle", "default-noidle", "default+recommend")


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def run(args: argparse.Namespace) -> None:
    catalog = load_catalog()
    model = catalog.by_product("NVIDIA-A100-SXM4-80GB")
    assert model is not None
    policy = PartitionPolicy(mode="dynamic")
    baselines = BASELINES if args.baselines == "all" else tuple(args.baselines.split(","))
    print(
        "defaults for every cell:", json.dumps(asdict(policy), default=str, sort_keys=True), file=sys.stderr
    )
    defaults = asdict(
        Settings(
            nodes=0,
            outage=args.outage,
            surplus=args.surplus,
            drain_scope=args.drain_scope,
            whole_gpu=args.whole_gpu,
            layouts=args.layouts,
            idle_surge=args.idle_surge,
            node_cpu_milli=args.node_cpu_milli,
            node_memory_mib=args.node_memory_mib,
        )
    )
    print("replay defaults:", json.dumps(defaults, sort_keys=True), file=sys.stderr)
    extra = " + default-noidle" if args.no_idle_pass else ""
    print(f"baselines: {', '.join(baselines)}{extra}", file=sys.stderr)
    out = Path(args.out)
    traces: dict[str, Any] = {}
    resources = {"node_cpu_milli": args.node_cpu_milli, "node_memory_mib": args.node_memory_mib}
    for trace_name, nodes, scale, reconf, rate in itertools.product(
        args.traces.split(","),
        [int(n) for n in args.nodes.split(",")],
        _floats(args.time_scales),
        args.reconf.split(","),
        _floats(args.failure_rates),
    ):
        if trace_name not in traces:
            path = Path(args.data) / f"openb_pod_list_{trace_name}.csv"
            traces[trace_name] = read_trace(path, resources=Settings(nodes=0, **resources).resources()).pods
            if args.first:
                traces[trace_name] = traces[trace_name][: args.first]
        pods = traces[trace_name]
        per_gpu, _, pause = reconf.partition("+")
        for seed in [int(x) for x in args.seeds.split(",")] if rate > 0 else [0]:
            s = Settings(
                nodes=nodes,
                time_scale=scale,
                reconfigure_seconds=float(per_gpu),
                drain_seconds=float(pause or 0),
                failure_rate=rate,
                seed=seed,
                outage=args.outage,
                surplus=args.surplus,
                drain_scope=args.drain_scope,
                whole_gpu=args.whole_gpu,
                layouts=args.layouts,
                idle_surge=args.idle_surge,
                **resources,
            )
            started = time.perf_counter()
            rows = [result_dict(simulate(pods, model, s, b, policy, catalog=catalog)) for b in baselines]
            if args.no_idle_pass:
                row = result_dict(
                    simulate(pods, model, replace(s, idle_pass=False), "default", policy, catalog=catalog)
                )
                rows.append(row | {"baseline": "default-noidle"})
            if args.recommend:
                s_rec = replace(s, decision="recommend")
                row = result_dict(simulate(pods, model, s_rec, "default", policy, catalog=catalog))
                rows.append(row | {"baseline": "default+recommend"})
            cell = {
                "trace": trace_name,
                "nodes": nodes,
                "timeScale": scale,
                "reconf": reconf,
                "failureRate": rate,
                "seed": seed,
                "drainScope": args.drain_scope,
                "wholeGpu": args.whole_gpu,  # Round 26 on; absent from older files: mig-disabled
                "layouts": args.layouts,
                "idlePass": s.idle_pass,  # the default row's (Round 21 on; absent from older files)
                "idleSurge": s.idle_surge,  # every row's admission (Round 23 on; absent: 0)
                "first": args.first,
                "nodeCpuMilli": args.node_cpu_milli,
                "nodeMemoryMib": args.node_memory_mib,
                "wallSeconds": round(time.perf_counter() - started, 1),
                "results": rows,
            }
            with out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(cell, sort_keys=True) + "\n")
            print(
                f"{trace_name} {nodes}x8 ts{scale:g} {reconf} fail {rate:g} seed {seed}: "
                f"{cell['wallSeconds']} s",
                file=sys.stderr,
                flush=True,
            )


def p95(row: dict[str, Any], cls: str) -> float:
    """A baseline row's p95 wait for size class ``cls`` (``all`` for every pod); 0 where it has none."""
    w = row["waitSeconds"].get(cls)
    return float(w["p95"]) if w is not None else 0.0


def verdict(rows: dict[str, dict[str, Any]], loop: str) -> str:
    """The issue's target for ``loop`` against naive on one cell (classes with ≥ 20 pods)."""
    if "naive" not in rows:
        return ""
    naive, me = rows["naive"], rows[loop]
    nw, mw = naive["waitSeconds"], me["waitSeconds"]
    if nw["all"]["p95"] <= 0:
        return "not contended"
    fails = []
    hours = naive["traceHours"] or naive["hours"]
    if naive["reconfigurations"] >= hours / 10:  # naive re-carves at least once per 10 hours
        if me["reconfigurations"] * 5 > naive["reconfigurations"]:
            fails.append("re-carves")
    elif me["reconfigurations"] > naive["reconfigurations"]:
        fails.append("re-carves")
    for cls, w in mw.items():
        if cls != "all" and w["pods"] < 20:
            continue
        bound = max(1.2 * nw.get(cls, {"p95": 0.0})["p95"], FIVE_MIN)
        if w["p95"] > bound:
            fails.append(f"p95 {cls}")
    if me["neverServed"] > naive["neverServed"]:
        fails.append("never served")
    return "meets" if not fails else "misses: " + ", ".join(fails)


def table(path: Path) -> str:
    head = (
        "| trace | nodes | ts | reconf | fail | seed | baseline | reconf/h | re-carves | p95 all s | "
        "p95 per size class (pods ≥ 20) s | never served | heldOnIdleGpu | nonMaximal | target |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for text in path.read_text(encoding="utf-8").splitlines():
        cell = json.loads(text)
        rows = {r["baseline"]: r for r in cell["results"]}
        for r in cell["results"]:
            w = r["waitSeconds"]
            classes = ", ".join(
                f"{k} {round(v['p95'])}" for k, v in w.items() if k != "all" and v["pods"] >= 20
            )
            loop = r["baseline"] in LOOPS
            target = verdict(rows, r["baseline"]) if loop else ""
            held = "" if r.get("heldOnIdleGpu") is None else r["heldOnIdleGpu"]
            nonmax = "" if r.get("nonMaximalLayouts") is None else r["nonMaximalLayouts"]
            lines.append(
                f"| {cell['trace']} | {cell['nodes']}×8 | {cell['timeScale']:g} | {cell['reconf']} | "
                f"{cell['failureRate']:g} | {cell['seed']} | {r['baseline']} | "
                f"{r['reconfigurationsPerHour']} | "
                f"{r['reconfigurations']} | {round(w['all']['p95'])} | {classes} | {r['neverServed']} | "
                f"{held} | {nonmax} | {target} |"
            )
    return "\n".join(lines)


def _whole(text: str, lo: int, hi: int) -> int:
    """A whole number ``lo``..``hi``, or an argparse error saying why not."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not lo <= n <= hi:
        raise argparse.ArgumentTypeError(f"{n} is not in {lo}..{hi}")
    return n


def _node_amount(text: str) -> int:
    """A node's CPU or memory as ``migc simulate`` takes it: a whole number 1..MAX_NODE_RESOURCE."""
    return _whole(text, 1, MAX_NODE_RESOURCE)


def _surge(text: str) -> int:
    """``--idle-surge``: a whole number 0..10000, as ``migc simulate --idle-surge`` takes it."""
    return _whole(text, 0, 10000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", default="default,gpushare20,gpushare40,gpushare60,gpuspec10")
    ap.add_argument("--data", default=str(shared_dir() / "data" / "openb"), help="openb_pod_list_<trace>.csv")
    ap.add_argument("--nodes", default="4,8,16")
    ap.add_argument("--time-scales", default="1,2,4,8")
    ap.add_argument("--reconf", default="60,90+300")
    ap.add_argument("--failure-rates", default="0,0.2")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument(
        "--baselines", default="all", help=f"comma-separated among {', '.join(BASELINES)}, or all"
    )
    ap.add_argument(
        "--no-idle-pass",
        action="store_true",
        help="also the loop without its idle pass (--no-idle-pass, row default-noidle)",
    )
    ap.add_argument(
        "--recommend",
        action="store_true",
        help="also the loop with --decision recommend, migc recommend's own decision (default+recommend)",
    )
    ap.add_argument(
        "--first", type=int, default=0, help="replay only each trace's first N GPU pods (0: all of them)"
    )
    ap.add_argument(
        "--outage",
        choices=OUTAGE_CHARGES,
        default="node",
        help="the disruption rule's outage charge (Settings.outage)",
    )
    ap.add_argument(
        "--surplus",
        choices=SURPLUS_MODELS,
        default="kept",
        help="the remembered surplus: kept as current demand (default) or served last (Settings.surplus)",
    )
    ap.add_argument(
        "--drain-scope",
        choices=DRAIN_SCOPES,
        default="node",
        help="which pods a re-carve drains: every GPU pod of the node, or those on changing GPUs "
        "(Settings.drain_scope)",
    )
    ap.add_argument(
        "--whole-gpu",
        choices=WHOLE_GPU_MODES,
        default="mig-disabled",
        help="what a whole GPU is on the loop's fleet: MIG disabled, or a full-profile instance of a GPU "
        "kept in MIG mode (Settings.whole_gpu; full-instance only with --drain-scope gpu)",
    )
    ap.add_argument(
        "--idle-surge",
        type=_surge,
        metavar="N",
        default=Settings(nodes=0).idle_surge,
        help="idle nodes (no GPU pod) admitted beyond maxUnavailable (Settings.idle_surge, the "
        "pool's idleSurge; default the policy's)",
    )
    ap.add_argument(
        "--layouts",
        choices=LAYOUT_RULES,
        default="fewest",
        help="the layout a re-carve gives a GPU: fewest slices (default) or maximal with spare room "
        "(Settings.layouts)",
    )
    ap.add_argument(
        "--node-cpu-milli",
        type=_node_amount,
        default=None,
        help="CPU per node, mCPU (Settings.node_cpu_milli)",
    )
    ap.add_argument(
        "--node-memory-mib",
        type=_node_amount,
        default=None,
        help="memory per node, MiB (Settings.node_memory_mib)",
    )
    ap.add_argument("--out", default="matrix.jsonl")
    ap.add_argument("--table", default=None, metavar="FILE.jsonl", help="print the table of FILE and exit")
    args = ap.parse_args()
    if args.table:
        print(table(Path(args.table)))
        return
    unknown = [b for b in args.baselines.split(",") if args.baselines != "all" and b not in BASELINES]
    if unknown:
        ap.error(f"unknown baseline(s) {', '.join(unknown)}; known: {', '.join(BASELINES)}")
    decision = "recommend" if args.recommend else "cover"  # --recommend adds the recommend row
    conflicts = whole_gpu_conflicts(args.whole_gpu, args.drain_scope, decision)
    if conflicts:
        ap.error(f"--whole-gpu {args.whole_gpu}: {'; '.join(conflicts)}")
    run(args)


if __name__ == "__main__":
    main()
