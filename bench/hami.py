"""H1: HAMi packing (compiler.solve.hami) vs first-fit-decreasing vs one whole GPU per pod, on openb.

The openb pod lists (Alibaba GPU trace v2023) give each single-GPU pod ``gpu_milli`` thousandths of
a GPU; that is exactly a HAMi share. Mapping (stated, not tuned): memory = gpu_milli / 1000 × the
GPU's memory (L40S, 48 GiB = 49152 MiB), cores = ceil(gpu_milli / 10) percent, one slot of HAMi's
default ``devicesplitcount`` 10. Pods of ``num_gpu ≥ 2`` (one vGPU per GPU on several GPUs) are left
out (75 and 62 of 7064 GPU pods); ``gpu_milli = 1000`` pods take a whole GPU's memory and cores.
Tiers follow bench/openb.py (LS, Guaranteed → critical; Burstable → high; BE → low).

Instance: the first N GPU pods by creation time, all of them alive at once, on an ample pool: as many
GPUs as first-fit-decreasing needs (an upper bound on the optimum), so every pod is served and the
measure is GPUs used. Lower bound: max(Σ memory / GPU memory, Σ cores / 100, pods / 10), rounded up.

    .venv/bin/python -m bench.hami [--pods 200,500] [--time-limit 120]
"""

from __future__ import annotations

import argparse
import math
import time

from bench.openb import QOS_TIER, available, load_trace
from compiler.model import PartitionPolicy
from compiler.solve.hami import GpuCap, ShareItem, first_fit_decreasing, pack, whole_gpu_per_pod

TRACES = ("openb_pod_list_default.csv", "openb_pod_list_gpushare40.csv")
GPU_MEMORY_MIB = 48 * 1024  # L40S
SPLIT = 10


def items_of(trace: str, pods: int) -> list[ShareItem]:
    tier_value = {t.name: t.value for t in PartitionPolicy().tiers}
    groups: dict[tuple[int, int], int] = {}
    taken = 0
    for pod in load_trace(trace):
        if pod.num_gpu != 1:
            continue
        milli = min(1000, pod.gpu_milli) or 1000
        key = (milli, tier_value[QOS_TIER[pod.qos]])
        groups[key] = groups.get(key, 0) + 1
        taken += 1
        if taken == pods:
            break
    return [
        ShareItem(
            name=f"m{milli}-t{tier}",
            tenant="openb",
            tier_value=tier,
            replicas=count,
            memory_mib={},  # filled per GPU below
            cores=math.ceil(milli / 10),
        )
        for (milli, tier), count in sorted(groups.items())
    ]


def with_gpus(items: list[ShareItem], gpus: list[GpuCap]) -> list[ShareItem]:
    out = []
    for i in items:
        milli = int(i.name.split("-")[0][1:])
        out.append(
            ShareItem(
                i.name,
                i.tenant,
                i.tier_value,
                i.replicas,
                {g.key: GPU_MEMORY_MIB * milli // 1000 for g in gpus},
                i.cores,
            )
        )
    return out


def pool(n: int) -> list[GpuCap]:
    return [GpuCap(("l40s", f"n{k // 8:04d}", k % 8), GPU_MEMORY_MIB, 100, SPLIT) for k in range(n)]


def row(trace: str, pods: int, time_limit: float) -> str:
    base = items_of(trace, pods)
    n_pods = sum(i.replicas for i in base)
    big = pool(n_pods)
    items = with_gpus(base, big)
    ffd = len({g for (_, g), c in first_fit_decreasing(big, items).items() if c})
    whole = len({g for (_, g), c in whole_gpu_per_pod(big, items).items() if c})
    gpus = pool(ffd)
    items = with_gpus(base, gpus)
    mem = sum(i.replicas * next(iter(i.memory_mib.values())) for i in items)
    cores = sum(i.replicas * i.cores for i in items)
    lower = max(math.ceil(mem / GPU_MEMORY_MIB), math.ceil(cores / 100), math.ceil(n_pods / SPLIT))
    started = time.perf_counter()
    packing = pack(gpus, items, time_limit=time_limit)
    seconds = time.perf_counter() - started
    assert packing is not None
    served = sum(c for _, _, c in packing.counts)
    used = packing.gpus_used()
    proof = "optimal" if packing.optimal else "time limit"
    return (
        f"| {trace.removeprefix('openb_pod_list_').removesuffix('.csv')} | {n_pods} | {len(items)} | "
        f"{whole} | {ffd} | {used} ({proof}) | {lower} | {served}/{n_pods} | {seconds:.1f} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.hami", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", default="200,500")
    ap.add_argument("--time-limit", type=float, default=120.0)
    args = ap.parse_args(argv)
    head = (
        "| trace | pods | share kinds | whole GPU per pod | FFD | migc (exact) | lower bound | served "
        "| migc s |"
    )
    print(head)
    print("|---|---|---|---|---|---|---|---|---|")
    for trace in TRACES:
        if not available(trace):
            print(f"| {trace} | trace not found | | | | | | | |")
            continue
        for pods in (int(p) for p in args.pods.split(",")):
            print(row(trace, pods, args.time_limit), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
