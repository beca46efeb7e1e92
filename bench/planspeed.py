"""P1: ``migc plan -o json`` against ``migc compile`` wall time, through the real CLI, at fleet scale.

``python -m bench.planspeed --gpus 8000,80000 --repeats 5 [--nodes named|selector] [--repo DIR]``

The fleet is the M4 generator (:mod:`bench.scale`: 6 GPU models, 500 tenants × 3 workloads, demand
≈ 70% of the compute slices) with every node named (the default: 10,000 named nodes at 80,000 GPUs,
whose assignment is sharded, issue 26) or, with ``--nodes selector``, every pool written as a node
selector and a count. A first
``compile`` writes the output; then, alternating so a busy machine slows both alike, each repeat runs
``migc compile POLICY --out OUT`` (steady state: the deployed layout is the one it re-derives) and
``migc plan POLICY --against OUT -o json`` (stdout to /dev/null), each in a fresh interpreter. The
table shows the median and the best run of each (the best is the least noisy estimate on a shared
machine), every run, plan / compile as median wall and as median CPU time (user + system of the
child, all its threads: the steadier measure on a shared machine), the largest file the compile
wrote (the API server stores at most 1 MiB per object), the ratio of the largest to the smallest
fleet, and the machine's load average before and after (a loaded machine slows wall time more
than CPU time). ``--repo DIR`` times the ``compiler`` package of another checkout (e.g. an older
commit exported with ``git archive``) on the same fleets, for a before/after on one machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import scale

REPO = Path(__file__).resolve().parents[1]


def selector_fleet(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``docs`` with every named-node pool rewritten as ``selector`` + ``count`` (same node count)."""
    for d in docs:
        if d["kind"] != "Fleet":
            continue
        for cluster in d["spec"]["clusters"]:
            for pool in cluster["nodePools"]:
                count = len(pool["nodes"]["names"])
                pool["nodes"] = {"selector": {"matchLabels": {"migc.dev/pool": pool["name"]}}, "count": count}
    return docs


def _timed(args: Sequence[str], timeout: float, repo: Path = REPO) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds (user + system, every thread), exit status and stdout bytes of
    ``python -m compiler ARGS`` run in ``repo`` (whose ``compiler`` package it imports)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "compiler", *args], cwd=repo, capture_output=True, timeout=timeout, check=False
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, proc.returncode, len(proc.stdout)


def largest_file(root: Path) -> tuple[str, int]:
    """The largest regular file under ``root`` (relative path, bytes); ("", 0) when there is none."""
    best = ("", 0)
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.stat().st_size > best[1]:
            best = (path.relative_to(root).as_posix(), path.stat().st_size)
    return best


def measure(
    gpus: int, workdir: Path, repeats: int, timeout: float = 600.0, named: bool = True, repo: Path = REPO
) -> dict[str, Any]:
    policy = workdir / f"fleet-{gpus}"
    out = workdir / f"out-{gpus}"
    docs = scale.generate(gpus)
    scale.write(docs if named else selector_fleet(docs), policy)
    first, _, rc, _ = _timed(["compile", str(policy), "--out", str(out)], timeout, repo)
    if rc != 0:
        return {"gpus": gpus, "error": f"first compile exited {rc}"}
    largest = largest_file(out)
    compile_s: list[float] = []
    plan_s: list[float] = []
    compile_cpu: list[float] = []
    plan_cpu: list[float] = []
    plan_bytes = 0
    for _ in range(max(1, repeats)):
        t, cpu, rc, _ = _timed(["compile", str(policy), "--out", str(out)], timeout, repo)
        if rc != 0:
            return {"gpus": gpus, "error": f"compile exited {rc}"}
        compile_s.append(t)
        compile_cpu.append(cpu)
        t, cpu, rc, plan_bytes = _timed(
            ["plan", str(policy), "--against", str(out), "-o", "json"], timeout, repo
        )
        if rc != 0:
            return {"gpus": gpus, "error": f"plan exited {rc}"}
        plan_s.append(t)
        plan_cpu.append(cpu)
    return {
        "gpus": gpus,
        "nodes": gpus // scale.GPUS_PER_NODE,
        "first_compile_s": first,
        "compile_s": compile_s,
        "plan_s": plan_s,
        "compile_cpu": compile_cpu,
        "plan_cpu": plan_cpu,
        "plan_bytes": plan_bytes,
        "largest": largest,
    }


def render(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| GPUs | nodes | compile wall s (median / best; runs) | plan -o json wall s (median / best; runs) "
        "| plan / compile (median wall) | compile CPU s (median) | plan CPU s (median) "
        "| plan / compile (median CPU) | largest rendered file KiB | plan JSON MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    med = statistics.median

    def runs(xs: Sequence[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in xs)

    for r in rows:
        if "error" in r:
            lines.append(f"| {r['gpus']} | error: {r['error']} | | | | | | | | |")
            continue
        c, p = med(r["compile_s"]), med(r["plan_s"])
        cc, pc = med(r["compile_cpu"]), med(r["plan_cpu"])
        name, size = r["largest"]
        lines.append(
            f"| {r['gpus']} | {r['nodes']} | {c:.2f} / {min(r['compile_s']):.2f} ({runs(r['compile_s'])}) "
            f"| {p:.2f} / {min(r['plan_s']):.2f} ({runs(r['plan_s'])}) | {p / c:.2f}× "
            f"| {cc:.2f} | {pc:.2f} | {pc / cc:.2f}× | {size / 1024:.0f} (`{name}`) "
            f"| {r['plan_bytes'] / 1e6:.1f} |"
        )
    ok = [r for r in rows if "error" not in r]
    if len(ok) >= 2:
        small, large = min(ok, key=lambda r: r["gpus"]), max(ok, key=lambda r: r["gpus"])
        ratio = med(large["compile_s"]) / med(small["compile_s"])
        lines.append(
            f"\n{large['gpus']} / {small['gpus']} GPUs: compile {ratio:.1f}× the wall time "
            f"({large['gpus'] / small['gpus']:.0f}× the GPUs)"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.planspeed", description=__doc__)
    ap.add_argument("--gpus", default="8000,80000", help="comma-separated fleet sizes in GPUs")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--nodes", choices=("named", "selector"), default="named")
    ap.add_argument(
        "--repo", type=Path, default=REPO, help="checkout whose compiler package is timed (default: this one)"
    )
    args = ap.parse_args(argv)
    if not (args.repo / "compiler" / "__main__.py").is_file():
        ap.error(f"--repo {args.repo}: no compiler/__main__.py there")
    sizes = [int(s) for s in args.gpus.split(",") if s.strip()]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="migc-planspeed-") as tmp:
        rows = [
            measure(g, Path(tmp), args.repeats, named=args.nodes == "named", repo=args.repo.resolve())
            for g in sizes
        ]
    load_after = os.getloadavg()
    print(render(rows))
    print(
        f"\nnodes: {args.nodes}; compiler of {args.repo.resolve()}; "
        f"load average (1 min) {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after, on {os.cpu_count()} CPUs"
    )
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
