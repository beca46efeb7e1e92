"""The HAMi packing (compiler.solve.hami) is exact: on random small instances its lexicographic level
values equal those of an exhaustive search over every placement, and its placement is feasible."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from compiler.solve.hami import (
    GpuCap,
    GpuKey,
    ShareItem,
    evaluate,
    first_fit_decreasing,
    fits,
    level_names,
    pack,
    whole_gpu_per_pod,
)


def _splits(n: int, slots: int, cap: int) -> Iterator[tuple[int, ...]]:
    """Every way to put at most ``n`` replicas on ``slots`` GPUs, at most ``cap`` per GPU."""
    for combo in itertools.product(range(cap + 1), repeat=slots):
        if sum(combo) <= n:
            yield combo


def _exhaustive(
    gpus: Sequence[GpuCap],
    items: Sequence[ShareItem],
    guarantees: Mapping[str, int],
    current: Mapping[tuple[str, GpuKey], int],
) -> tuple[int, ...]:
    names = level_names(items, guarantees)
    sense = [-1 if n in ("gpus", "disruption") else 1 for n in names]
    best: tuple[int, ...] | None = None
    per_item = [list(_splits(i.replicas, len(gpus), 1 if i.distinct else i.replicas)) for i in items]
    for choice in itertools.product(*per_item):
        counts = {
            (i.name, g.key): c
            for i, split in zip(items, choice, strict=True)
            for g, c in zip(gpus, split, strict=True)
            if c
        }
        if not fits(counts, gpus, items):
            continue
        values = evaluate(counts, items, guarantees, current)
        key = tuple(s * values[n] for s, n in zip(sense, names, strict=True))
        if best is None or key > best:
            best = key
    assert best is not None  # the empty placement always fits
    return tuple(s * v for s, v in zip(sense, best, strict=True))


def _instance(
    rng: random.Random,
) -> tuple[list[GpuCap], list[ShareItem], dict[str, int], dict[tuple[str, GpuKey], int]]:
    gpus: list[GpuCap] = []
    for p in range(rng.randint(1, 2)):
        memory, cores, slots = (
            rng.choice([24576, 46068, 81920]),
            rng.choice([100, 100, 150]),
            rng.randint(1, 3),
        )
        for n in range(rng.randint(1, 2)):
            gpus.append(GpuCap((f"p{p}", f"n{n}", 0), memory, cores, slots))
    gpus = gpus[:3]
    items: list[ShareItem] = []
    for w in range(rng.randint(1, 3)):
        allowed = [g for g in gpus if rng.random() < 0.85] or gpus[:1]
        percent = rng.random() < 0.3
        mem = rng.choice([4096, 8192, 12288, 20480, 30000])
        pct = rng.choice([10, 25, 50, 60])
        items.append(
            ShareItem(
                name=f"w{w}",
                tenant=rng.choice(["a", "b"]),
                tier_value=rng.choice([1000, 100000]),
                replicas=rng.randint(1, 3),
                memory_mib={g.key: (g.memory_mib * pct // 100 if percent else mem) for g in allowed},
                cores=rng.choice([0, 20, 30, 50, 70]),
                distinct=rng.random() < 0.3,
            )
        )
    guarantees = {t: rng.randint(1, 3) for t in ("a", "b") if rng.random() < 0.4}
    current: dict[tuple[str, GpuKey], int] = {}
    if rng.random() < 0.4:
        for i in items:
            g = rng.choice(gpus)
            if g.key in i.memory_mib:
                current[(i.name, g.key)] = 1
    return gpus, items, guarantees, current


@pytest.mark.parametrize("seed", range(220))
def test_packing_equals_exhaustive_search(seed: int) -> None:
    gpus, items, guarantees, current = _instance(random.Random(seed))
    packing = pack(gpus, items, guarantees, current, time_limit=30)
    assert packing is not None and packing.optimal
    placed = {(w, g): c for w, g, c in packing.counts}
    assert fits(placed, gpus, items)
    assert tuple(v for _, v in packing.objectives) == _exhaustive(gpus, items, guarantees, current)


def test_levels_are_lexicographic_tier_before_gpus() -> None:
    """A high-tier share is served even when a low-tier one would fill the GPU more fully."""
    gpu = GpuCap(("p", "n", 0), 46068, 100, 4)
    hi = ShareItem("hi", "a", 100000, 1, {gpu.key: 30000}, 10)
    lo = ShareItem("lo", "b", 1000, 3, {gpu.key: 15000}, 10)
    packing = pack([gpu], [hi, lo])
    assert packing is not None
    assert packing.served("hi") == 1 and packing.served("lo") == 1


def test_distinct_gpus_and_split_count() -> None:
    gpus = [GpuCap(("p", "n", i), 46068, 100, 2) for i in range(3)]
    spread = ShareItem("spread", "a", 1000, 3, {g.key: 1000 for g in gpus}, 0, distinct=True)
    packing = pack(gpus, [spread])
    assert packing is not None
    assert sorted(c for _, _, c in packing.counts) == [1, 1, 1]
    small = ShareItem("small", "a", 1000, 7, {g.key: 1000 for g in gpus}, 0)
    packing = pack(gpus, [small])
    assert packing is not None and packing.served("small") == 6  # 3 GPUs × splitCount 2


def test_baselines_are_feasible_and_no_better() -> None:
    rng = random.Random(7)
    for _ in range(30):
        gpus, items, _, _ = _instance(rng)
        best = pack(gpus, items)
        assert best is not None
        for counts in (first_fit_decreasing(gpus, items), whole_gpu_per_pod(gpus, items)):
            assert fits(counts, gpus, items)
            got = evaluate(counts, items, {}, {})
            names = level_names(items, {})
            mine = dict(best.objectives)
            key = [(-1 if n in ("gpus", "disruption") else 1) for n in names]
            assert tuple(s * mine[n] for s, n in zip(key, names, strict=True)) >= tuple(
                s * got[n] for s, n in zip(key, names, strict=True)
            )


def test_solve_places_the_example_and_reports_unmet_shares() -> None:
    from dataclasses import replace
    from pathlib import Path

    from compiler.catalog import load_catalog
    from compiler.pipeline import load_and_validate
    from compiler.solve.pipeline import solve

    policy, _ = load_and_validate([Path(__file__).resolve().parents[4] / "examples" / "hami"])
    assert policy is not None
    solution = solve(policy, load_catalog())
    assert [(r.cluster, r.pool) for r in solution.hami] == [("infer", "a100"), ("infer", "l40s")]
    l40s = solution.hami[1]
    assert all(d.served == d.requested for d in l40s.demand)
    for gpu in l40s.gpus:
        assert (
            gpu.used_memory_mib <= gpu.memory_mib
            and gpu.used_cores <= gpu.cores
            and gpu.used_slots <= gpu.slots
        )
        assert sum(s.replicas for s in gpu.shares if s.workload == "embedder") <= 1  # distinctGpus
    assert l40s.gpus_used == 6  # six embedder replicas on distinct GPUs; rerankers fill in beside them
    assert not [d for d in solution.diagnostics if d.code.startswith("MIGC23")]
    # twice the notebooks: the 8 A100s hold 8 × 4 = 32 shares of 20Gi/25%, so 8 stay unmet
    bigger = replace(
        policy,
        workloads=tuple(replace(w, replicas=40) if w.name == "notebooks" else w for w in policy.workloads),
    )
    solution = solve(bigger, load_catalog())
    unmet = [d for d in solution.diagnostics if d.code == "MIGC230"]
    assert len(unmet) == 1 and "gets 32 of 40" in unmet[0].message


def test_deployed_shares_stay_put_and_are_read_back(tmp_path: Path) -> None:
    """Disruption against what is deployed: the previous output's HamiPlan is read back and a policy
    change moves no deployed replica that can stay."""
    from dataclasses import replace

    from compiler.catalog import load_catalog
    from compiler.cli import main
    from compiler.current import read_current
    from compiler.pipeline import load_and_validate
    from compiler.solve.pipeline import solve

    example = Path(__file__).resolve().parents[4] / "examples" / "hami"
    out = tmp_path / "out"
    assert main(["compile", str(example), "--out", str(out)]) == 0
    policy, _ = load_and_validate([example])
    assert policy is not None
    current, diags = read_current(out, policy)
    assert not diags
    before = dict(current.hami)
    assert sum(c for (_, p, _, _, w), c in before.items() if w == "notebooks") == 10
    # two more notebooks, one reranker fewer: every deployed share that still exists keeps its GPU
    changed = replace(
        policy,
        workloads=tuple(
            replace(w, replicas={"notebooks": 12, "reranker": 3}.get(w.name, w.replicas))
            for w in policy.workloads
        ),
    )
    solution = solve(changed, load_catalog(), current)
    after = {
        (r.cluster, r.pool, g.node, g.index, s.workload): s.replicas
        for r in solution.hami
        for g in r.gpus
        for s in g.shares
    }
    moved = sum(max(0, c - after.get(k, 0)) for k, c in before.items())
    assert moved == 1  # only the reranker replica that is no longer wanted
    assert all(after.get(k, 0) >= c for k, c in before.items() if k[4] != "reranker")
    assert sum(c for k, c in after.items() if k[4] == "notebooks") == 12
