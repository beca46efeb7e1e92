"""Time and peak memory of `status`, `recommend` and `simulate` on hostile input (issue 24).

    .venv/bin/python -m bench.hostile            # prints a Markdown table (about a minute)

Each case runs the real CLI in a fresh interpreter and reports its exit status, wall time, peak
resident memory (``VmHWM``) and output size. The inputs are the worst the validators admit
(every pod at the per-pod bound, a year-long trace, a malformed ResourceClaim named 160,000 times)
and the values they refuse (a billion instances, 5,000-digit quantities, infinite times), next to
an ordinary snapshot for scale. Nothing here asserts on time: the numbers go in docs/status.md,
docs/recommend.md and docs/simulate.md.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DYNAMIC = (
    "apiVersion: migc.dev/v1alpha1\nkind: PartitionPolicy\nmetadata:\n  name: default\n"
    "spec:\n  mode: dynamic\n  stabilizationWindow: 10m\n"
)
RUNNER = (  # VmHWM: the peak of this process's own memory (ru_maxrss would carry the parent's over exec)
    "import sys, time\n"
    "from compiler.cli import main\n"
    "t = time.perf_counter(); rc = main(sys.argv[1:])\n"
    "hwm = next(x.split()[1] for x in open('/proc/self/status') if x.startswith('VmHWM'))\n"
    "sys.stderr.write(f'\\nBENCH {rc} {time.perf_counter() - t:.3f} {hwm}\\n')\n"
)
NODE = "lab-dgx-a100-01"


def pod(
    name: str, ns: str, resource: str, quantity: Any, node: str | None, wait: str | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "creationTimestamp": "2026-12-01T05:00:00Z"}
    if wait:
        meta["annotations"] = {"migc.dev/max-wait-time": wait}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"limits": {resource: quantity}}}]}
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def node(name: str, gpu_count: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"nvidia.com/gpu.count": gpu_count, "nvidia.com/mig.config": "hand-made"},
            "annotations": {"migc.dev/phase": "Failed", "migc.dev/last-error": "\x1b]0;t\x07" * 1000},
        },
        "status": {"allocatable": {"nvidia.com/mig-1g.10gb": "9" * 5000}},
    }


def snapshots(work: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}

    def write(name: str, items: list[dict[str, Any]]) -> None:
        out[name] = work / f"{name}.json"
        out[name].write_text(json.dumps({"kind": "List", "items": items}))

    write(
        "ordinary", [pod(f"nb-{i}", "course-dl101", "nvidia.com/mig-1g.10gb", "1", NODE) for i in range(10)]
    )
    refused = ["1e9", "1e11", "9" * 5000, "9" * 22, "²"]
    write(
        "refused-claims",
        [node(NODE, "1e22"), node("n2", "1e7")]
        + [
            pod(f"x{i}\x1b]0;t\x07", "course-dl101", "nvidia.com/mig-1g.10gb", refused[i % 5], NODE)
            for i in range(10000)
        ],
    )
    write(
        "claims-at-the-bound",
        [pod(f"big-{i}", "course-dl101", "nvidia.com/mig-1g.10gb", "1024", NODE) for i in range(10000)],
    )
    write(
        "100k-pods",
        [pod(f"p-{i}", "course-nlp202", "nvidia.com/mig-1g.10gb", "1", None, "1m") for i in range(100000)],
    )
    write(
        "pending-claims-at-the-bound",
        [
            pod(f"want-{i}", "course-nlp202", "nvidia.com/mig-1g.10gb", "1024", None, "1m")
            for i in range(10000)
        ],
    )
    write(
        "urgent-pods",
        [
            pod(
                f"<img src=x onerror=alert({i})>@octocat",
                "course-nlp202",
                "nvidia.com/mig-1g.10gb",
                "1",
                None,
                "1m",
            )
            for i in range(3000)
        ],
    )
    # DRA (compiler/observe/dra.py): one malformed claim of 32 requests, each asking allocationMode All,
    # named 32 times by each of 5,000 pods; what a claim asks is read once, its warnings said once
    every = [
        {"name": f"r{i}", "exactly": {"deviceClassName": "mig-1g.10gb.migc.dev", "allocationMode": "All"}}
        for i in range(32)
    ]
    shared = {
        "kind": "ResourceClaim",
        "metadata": {"name": "every", "namespace": "course-nlp202"},
        "spec": {"devices": {"requests": every}},
    }
    refs = [{"name": f"g{k}", "resourceClaimName": "every"} for k in range(32)]
    write(
        "claims-named-many-times",
        [shared]
        + [
            {
                "kind": "Pod",
                "metadata": {"name": f"c-{i}", "namespace": "course-nlp202"},
                "spec": {"resourceClaims": refs},
                "status": {"phase": "Pending"},
            }
            for i in range(5000)
        ],
    )
    # one allocated claim reserved for 256 pods (resource/v1 ResourceClaimReservedForMaxSize), named by
    # 100,000 running pods: its reservedFor is read once, not once per pod
    one = {"request": "g", "driver": "gpu.nvidia.com", "pool": NODE}
    results = [one | {"device": f"d{i}"} for i in range(32)]
    held = {
        "kind": "ResourceClaim",
        "metadata": {"name": "held", "namespace": "course-nlp202"},
        "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
        "status": {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": f"h-{i}", "uid": f"u-{i}"} for i in range(256)],
        },
    }
    write(
        "a-claim-100k-pods-share",
        [held]
        + [
            {
                "kind": "Pod",
                "metadata": {"name": f"h-{i}", "namespace": "course-nlp202", "uid": f"u-{i}"},
                "spec": {"nodeName": NODE, "resourceClaims": [{"name": "g", "resourceClaimName": "held"}]},
                "status": {"phase": "Running"},
            }
            for i in range(100000)
        ],
    )
    return out


def traces(work: Path) -> dict[str, Path]:
    head = (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
        "creation_time,deletion_time,scheduled_time\n"
    )
    out = {"trace-a-year-long": work / "year.csv", "trace-infinite-time": work / "inf.csv"}
    out["trace-a-year-long"].write_text(
        head + "p0,1,1,1,500,,LS,Running,0,31622400,1\np1,1,1,8,1000,,LS,Running,100,200,101\n"
    )
    out["trace-infinite-time"].write_text(head + "p0,1,1,1,500,,LS,Running,0,inf,1\n")
    return out


def measure(argv: list[str]) -> tuple[int, float, float, int]:
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, *argv], capture_output=True, text=True, cwd=ROOT, check=False
    )
    line = next(x for x in reversed(proc.stderr.splitlines()) if x.startswith("BENCH "))
    _, rc, wall, rss_kb = line.split()
    return int(rc), float(wall), int(rss_kb) / 1024, len(proc.stdout)


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="migc-bench-hostile-"))
    try:
        shutil.copytree(ROOT / "examples" / "lab", work / "pol")
        (work / "pol" / "partition.yaml").write_text(DYNAMIC)
        subprocess.run(
            [sys.executable, "-m", "compiler", "compile", str(work / "pol"), "--out", str(work / "out")],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        rows = []
        now = ["--now", "2026-12-01T06:00:00Z"]
        for name, snap in snapshots(work).items():
            base = ["--against", str(work / "out"), "--snapshot", str(snap), *now]
            rows.append(
                (
                    f"status {name}",
                    measure(["status", str(work / "pol"), *base, "--html", str(work / "p.html")]),
                )
            )
            rows.append(
                (
                    f"recommend {name}",
                    measure(["recommend", str(work / "pol"), *base, "--dry-run", "-o", "markdown"]),
                )
            )
        for name, path in traces(work).items():
            argv = [
                "simulate",
                "--trace",
                str(path),
                "--gpu-product",
                "NVIDIA-A100-SXM4-80GB",
                "--nodes",
                "1",
            ]
            rows.append((f"simulate {name}", measure(argv)))
        sizes = {
            f"{cmd} {name}": snap.stat().st_size
            for name, snap in snapshots(work).items()
            for cmd in ("status", "recommend")
        }
        print("| case | input MiB | exit | wall s | peak RSS MiB | stdout chars |")
        print("|---|---:|---:|---:|---:|---:|")
        for case, (rc, wall, rss, size) in rows:
            mib = f"{sizes[case] / 2**20:.1f}" if case in sizes else "-"
            print(f"| {case} | {mib} | {rc} | {wall:.2f} | {rss:.0f} | {size:,} |")
        return 1 if any(rc == 70 for _, (rc, _, _, _) in rows) else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
