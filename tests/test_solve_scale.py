"""Scale behaviour of solve + assign on a mid-size fleet (invariants only; never timing assertions).

Run as a script to measure validate + solve + assign up to 80,000 GPUs (YAML written by
``bench/scale.py``'s generator, loaded and validated like a real policy repository)::

    .venv/bin/python tests/test_solve_scale.py 1000 10000 80000
"""

from __future__ import annotations

import dataclasses
import random
import sys
from collections import Counter

import pytest
from test_solve_support import Need, as_current, policy, pool, profile_need, workload

from compiler.catalog import load_catalog
from compiler.model import GpuLayout, Policy
from compiler.solve import solve
from compiler.solve.result import Solution

CAT = load_catalog()


def _fleet(seed: int, nodes: int = 150, multi_gpu: bool = True) -> Policy:
    rng = random.Random(seed)
    pools = [
        pool("a100", nodes=nodes, reserve_gpus=5, reserve_nodes=2),
        pool("h100", "H100-80GB", nodes=nodes),
        pool("h200", "H200-141GB", nodes=nodes),
    ]
    profiles = {
        "a100": ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb"],
        "h100": ["1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"],
        "h200": ["1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb"],
    }
    ws = []
    for i in range(300):
        p = rng.choice(sorted(profiles))
        if multi_gpu and rng.random() < 0.1:
            need = Need(gpus=rng.choice([1, 2, 4, 8]))
            replicas = rng.randint(1, 4)
        else:
            need = profile_need(rng.choice(profiles[p]))
            replicas = rng.randint(1, 30)
        ws.append(
            workload(
                f"w{i:03d}",
                need,
                replicas,
                tenant_name=f"t{i % 100:02d}",
                tier=rng.choice(["critical", "high", "low"]),
                pools=[p] if rng.random() < 0.7 else [],
            )
        )
    return policy(pools, ws)


def _shift(pol: Policy, seed: int, count: int = 10) -> Policy:
    rng = random.Random(seed)
    ws = list(pol.workloads)
    for i in rng.sample(range(len(ws)), count):
        w = ws[i]
        ws[i] = dataclasses.replace(w, replicas=max(1, round(w.replicas * rng.choice([0.8, 1.2]))))
    return dataclasses.replace(pol, workloads=tuple(ws))


def _pool_change_bound(before: Solution, after: Solution) -> dict[str, int]:
    """sum over layouts of max(0, deployed - target): no assignment can change fewer GPUs."""
    out = {}
    for p0, p1 in zip(before.pools, after.pools, strict=True):
        cur = Counter(g for n in p0.nodes for g in n.gpus)
        tgt = Counter(g for n in p1.nodes for g in n.gpus)
        out[p1.pool] = sum(max(0, c - tgt.get(lay, 0)) for lay, c in cur.items())
    return out


@pytest.mark.slow
def test_mid_size_fleet_unchanged_and_shifted() -> None:
    pol = _fleet(1)
    first = solve(pol, CAT)
    assert all(p.optimal for p in first.pools)
    assert sum(len(n.gpus) for p in first.pools for n in p.nodes) == 3 * 150 * 8
    again = solve(pol, CAT, as_current(first))
    assert not any(n.changed for p in again.pools for n in p.nodes)
    shifted = solve(_shift(pol, 2), CAT, as_current(first))
    assert all(p.optimal for p in shifted.pools)
    touched = sum(1 for p in shifted.pools for n in p.nodes if n.changed)
    assert 0 < touched < 3 * 150 // 4  # a 20% change on ten workloads re-lays a small part of the fleet


def test_gpu_changes_meet_the_pool_level_lower_bound() -> None:
    # without multi-GPU replicas the per-index keep step reaches the bound exactly
    pol = _fleet(3, nodes=60, multi_gpu=False)
    first = solve(pol, CAT)
    shifted = solve(_shift(pol, 4, count=20), CAT, as_current(first))
    bound = _pool_change_bound(first, shifted)
    for p in shifted.pools:
        assert sum(len(n.changed_gpus) for n in p.nodes) == bound[p.pool], p.pool
    whole = GpuLayout.whole()
    for p in shifted.pools:
        if p.pool == "a100":  # two reserved whole nodes survive the shift
            assert sum(1 for n in p.nodes if all(g == whole for g in n.gpus)) >= 2


def _measure(sizes: list[int]) -> None:  # pragma: no cover - a measurement, not a test
    import resource
    import tempfile
    import time
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.scale import generate, write
    from compiler.pipeline import load_and_validate

    print(
        "gpus    validate_s  solve+assign_s  total_s  resolve_unchanged_s  resolve_shift_s  "
        "nodes_changed  rss_mb"
    )
    for gpus in sizes:
        directory = Path(tempfile.mkdtemp()) / "fleet"
        write(generate(gpus), directory)
        t0 = time.perf_counter()
        pol, _ = load_and_validate([str(directory)])
        assert pol is not None
        t1 = time.perf_counter()
        sol = solve(pol, CAT)
        t2 = time.perf_counter()
        solve(pol, CAT, as_current(sol))
        t3 = time.perf_counter()
        shifted = solve(_shift(pol, 5, count=30), CAT, as_current(sol))
        t4 = time.perf_counter()
        changed = sum(1 for p in shifted.pools for n in p.nodes if n.changed)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{gpus:<7} {t1 - t0:>10.2f}  {t2 - t1:>14.2f}  {t2 - t0:>7.2f}  {t3 - t2:>19.2f}  "
            f"{t4 - t3:>15.2f}  {changed:>13}  {rss:>6.0f}"
        )


if __name__ == "__main__":  # pragma: no cover
    _measure([int(a) for a in sys.argv[1:]] or [1000, 10000, 80000])
