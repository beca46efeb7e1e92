"""M4: wall time and peak memory of ``validate + solve + assign`` at fleet scale.

The parent writes a policy set as YAML files into a temporary directory; a fresh subprocess per
size loads, validates and solves it and reports its own peak resident memory (``VmHWM``), so the
sizes do not share a heap or caches. Fleet: one cluster, one 8-GPU-per-node pool per GPU model
(6 models), 500 tenants with 3 workloads each, sized to ask for about 70% of the fleet's compute
slices.
"""

from __future__ import annotations

import json
import math
import random
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench.geometry import geometry

MODELS = ("A100-SXM4-40GB", "A100-SXM4-80GB", "H100-80GB", "H100-NVL-94GB", "H200-141GB", "B200-180GB")
TENANTS = 500
WORKLOADS_PER_TENANT = 3
GPUS_PER_NODE = 8
FILL = 0.70
CLUSTER = "scale"


def _pool_name(model: str) -> str:
    return model.lower()


def generate(gpus: int, seed: int = 1, tenants: int = TENANTS, pinned: bool = True) -> list[dict[str, Any]]:
    """The policy set as YAML documents (Fleet, Tenants, Workloads).

    ``pinned``: each workload is restricted to its pool (6 independent components); otherwise it
    may run on every pool offering its profile, which makes one large integer program.
    """
    from compiler.catalog import load_catalog

    catalog = load_catalog()
    rng = random.Random(f"scale:{gpus}:{seed}")
    nodes_total = max(len(MODELS), gpus // GPUS_PER_NODE)
    pools = []
    pool_nodes: dict[str, int] = {}
    for i, model in enumerate(MODELS):
        n = nodes_total // len(MODELS) + (1 if i < nodes_total % len(MODELS) else 0)
        pool_nodes[model] = n
        gm = catalog.get(model)
        assert gm is not None, model
        pools.append(
            {
                "name": _pool_name(model),
                "gpuProduct": gm.gpu_products[0],
                "gpusPerNode": GPUS_PER_NODE,
                "nodes": {"names": [f"{_pool_name(model)}-{j:05d}" for j in range(n)]},
                "maxUnavailable": "10%",
                "partitioning": "mig",
            }
        )
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "migc.dev/v1alpha1",
            "kind": "Fleet",
            "metadata": {"name": "scale"},
            "spec": {"clusters": [{"name": CLUSTER, "nodePools": pools}]},
        }
    ]
    tiers = ("critical", "high", "low")
    for t in range(tenants):
        docs.append(
            {
                "apiVersion": "migc.dev/v1alpha1",
                "kind": "Tenant",
                "metadata": {"name": f"tenant-{t:03d}"},
                "spec": {"namespaces": [f"tenant-{t:03d}"], "priorityClass": tiers[t % 3]},
            }
        )
    # each workload is pinned to one pool; its replicas share that pool's slices with the others
    workloads_per_pool: dict[str, list[tuple[int, int]]] = {m: [] for m in MODELS}
    for t in range(tenants):
        for w in range(WORKLOADS_PER_TENANT):
            workloads_per_pool[rng.choice(MODELS)].append((t, w))
    for model in MODELS:
        gm = catalog.get(model)
        assert gm is not None, model
        geo = geometry(gm)
        members = workloads_per_pool[model]
        if not members:
            continue
        budget = pool_nodes[model] * GPUS_PER_NODE * geo.model.compute_slices * FILL / len(members)
        for t, w in members:
            spec: dict[str, Any] = {"tenant": f"tenant-{t:03d}"}
            if pinned:
                spec["pools"] = [_pool_name(model)]
            # only shapes one replica of which fits the workload's share, so no size is over-subscribed
            whole = [k for k in (1, 2, 4, 8) if k * geo.model.compute_slices <= budget]
            profiles = [p for p in geo.profiles if p.compute_slices < geo.model.compute_slices]
            fitting = [p for p in profiles if p.compute_slices <= budget] or profiles[:1]
            if whole and rng.random() < 0.1:
                k = rng.choice(whole)
                spec["need"] = {"gpus": k}
                spec["isolation"] = "exclusive"
                spec["replicas"] = max(1, math.floor(budget / (k * geo.model.compute_slices)))
            else:
                prof = rng.choice(fitting)
                spec["need"] = {"profile": prof.name}
                spec["isolation"] = "hardware"
                spec["replicas"] = max(1, math.floor(budget / prof.compute_slices))
            docs.append(
                {
                    "apiVersion": "migc.dev/v1alpha1",
                    "kind": "Workload",
                    "metadata": {"name": f"tenant-{t:03d}-w{w}"},
                    "spec": spec,
                }
            )
    return docs


def write(docs: Sequence[dict[str, Any]], directory: Path) -> list[Path]:
    """Like a real policy repository: ``fleet.yaml``, and ``tenants/<name>.yaml`` holding one
    tenant with its workloads (the loader caps documents per file, and teams own their files)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tenants").mkdir(exist_ok=True)
    per_file: dict[Path, list[dict[str, Any]]] = {}
    for d in docs:
        if d["kind"] == "Fleet":
            path = directory / "fleet.yaml"
        elif d["kind"] == "Tenant":
            path = directory / "tenants" / f"{d['metadata']['name']}.yaml"
        else:
            path = directory / "tenants" / f"{d['spec']['tenant']}.yaml"
        per_file.setdefault(path, []).append(d)
    for path, group in per_file.items():
        with path.open("w", encoding="utf-8") as f:
            yaml.safe_dump_all(group, f, sort_keys=False)
    return sorted(per_file)


def _rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB.

    ``VmHWM`` rather than ``ru_maxrss``: Linux carries ``ru_maxrss`` across ``execve``, so a child
    started by a bench that already holds 80 MB would report at least that much.
    """
    try:
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    # ru_maxrss is in KiB on Linux (bytes on macOS, where this is only a rough fallback)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(directory: Path, time_limit_s: float | None = None) -> dict[str, Any]:
    """Run in the child: load + validate + solve (+ assign, part of solve) the policy in ``directory``.

    ``time_limit_s``: the solver's wall-clock budget (None: its default)."""
    from bench.harness import solve
    from compiler.catalog import load_catalog

    paths = [directory]
    rss_before = _rss_mb()
    t0 = time.perf_counter()
    policy, via = _validated_policy(paths)
    t1 = time.perf_counter()
    solution = solve(policy, load_catalog(), None, time_limit_s=time_limit_s)
    t2 = time.perf_counter()
    gpus = sum(p.gpus_used for p in solution.pools)
    peak = _rss_mb()
    # the same files through the YAML loader alone, to show how much of "validate" is parsing
    from compiler.load import load_paths

    t3 = time.perf_counter()
    load_paths(paths)
    yaml_s = time.perf_counter() - t3
    return {
        "validate_s": t1 - t0,
        "yaml_s": yaml_s,
        "solve_s": t2 - t1,
        "total_s": t2 - t0,
        "rss_before_mb": rss_before,
        "peak_rss_mb": peak,
        "validated_by": via,
        "gpus_used": gpus,
        "optimal": all(p.optimal for p in solution.pools),
        "unmet": sum(d.unmet for p in solution.pools for d in p.demand),
        "nodes": sum(len(p.nodes) for p in solution.pools),
        "workloads": len(policy.workloads),
        "tenants": len(policy.tenants),
        "unproven": sorted({d.message for d in solution.diagnostics if d.code == "MIGC203"}),
    }


def _validated_policy(paths: Sequence[Path]) -> tuple[Any, str]:
    """The policy through migc's own loader and validator, refusing to time an invalid one."""
    from compiler.diagnostics import Severity

    try:
        from compiler.commands.validate import load_and_validate  # type: ignore[attr-defined,unused-ignore]

        policy, diagnostics = load_and_validate(tuple(str(p) for p in paths))
        via = "compiler.commands.validate.load_and_validate"
    except ImportError:
        from compiler.catalog import load_catalog
        from compiler.load import load_paths
        from compiler.validate import validate

        docs, load_diags = load_paths([str(p) for p in paths])
        policy, diagnostics = validate(docs, load_catalog())
        diagnostics = [*load_diags, *diagnostics]
        via = "compiler.load.load_paths + compiler.validate.validate"
    errors = [d for d in diagnostics if d.severity >= Severity.ERROR]
    if policy is None or errors:
        shown = "; ".join(f"{d.code} {d.message}" for d in errors[:3])
        raise SystemExit(f"generated policy does not validate: {shown or 'no policy'}")
    return policy, via


def run_size(
    gpus: int,
    workdir: Path,
    repeats: int = 1,
    tenants: int = TENANTS,
    timeout: float = 600.0,
    *,
    pinned: bool = True,
    time_limit_s: float | None = None,
) -> dict[str, Any]:
    """Generate and write once, then measure ``repeats`` times, each in a fresh interpreter.

    The run with the lowest total wall time is reported (the machine is shared, so the minimum is
    the least noisy estimate); ``runs`` and ``total_s_all`` keep the others visible.
    """
    directory = workdir / f"fleet-{gpus}-{tenants}-{'pinned' if pinned else 'open'}"
    if not directory.exists():
        write(generate(gpus, tenants=tenants, pinned=pinned), directory)
    repo = Path(__file__).resolve().parents[1]
    results: list[dict[str, Any]] = []
    for _ in range(max(1, repeats)):
        proc = subprocess.run(
            [sys.executable, "-m", "bench.scale", str(directory)]
            + ([] if time_limit_s is None else [str(time_limit_s)]),
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            return {"gpus": gpus, "error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    best = dict(min(results, key=lambda r: float(r["total_s"])))
    best["gpus"] = gpus
    best["runs"] = len(results)
    best["total_s_all"] = [round(float(r["total_s"]), 2) for r in results]
    return best


def main(argv: Sequence[str]) -> int:
    print(json.dumps(measure(Path(argv[0]), float(argv[1]) if len(argv) > 1 else None)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
