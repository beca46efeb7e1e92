"""`migc advise`: a mode per pool with its rule codes on every example, sizing equal to the solver's
optimum (and one GPU fewer serves less), and advice that moves the expected way on crafted policies."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from compiler.advise import Advice, advise
from compiler.advise.gpus import COMPUTE_CAPABILITY
from compiler.advise.sizing import MAIN_POOL, size_model, synthetic_policy
from compiler.advise.tree import advise_pool
from compiler.catalog import load_catalog
from compiler.cli import main
from compiler.diagnostics import registry
from compiler.model import Policy
from compiler.pipeline import load_and_validate
from compiler.solve import solve

ROOT = Path(__file__).resolve().parents[1]
CATALOG = load_catalog()
EXAMPLES = [
    "examples/prod",
    "examples/lab",
    "examples/multi-cluster",
    "examples/ci-cd/policy",
    "examples/inference-autoscaling/policy",
]


def load(*paths: str | Path) -> Policy:
    policy, diags = load_and_validate([str(p) for p in paths], CATALOG)
    assert policy is not None, [d.message for d in diags]
    return policy


def run_advise(policy: Policy) -> Advice:
    return advise(policy, CATALOG, solve(policy, CATALOG))


def codes(advice: Advice, pool: str) -> list[str]:
    return [f.code for f in advice.pools[[p.pool for p in advice.pools].index(pool)].findings]


def served_replicas(policy: Policy) -> int:
    solution = solve(policy, CATALOG)
    size = {
        w.name: max(1, w.need.gpus) if w.need.kind == "gpus" or w.isolation != "hardware" else 1
        for w in policy.workloads
    }
    got: dict[str, int] = {}
    for pool in solution.pools:
        for row in pool.demand:
            got[row.workload] = got.get(row.workload, 0) + row.served
    return sum(min(w.replicas, got.get(w.name, 0) // size[w.name]) for w in policy.workloads)


def cap_main_pool(policy: Policy, gpus: int) -> Policy:
    """The synthetic policy with the main pool limited to ``gpus`` usable GPUs (the rest reserved)."""
    cluster = policy.clusters[0]
    pools = []
    for pool in cluster.pools:
        if pool.name == MAIN_POOL:
            per = pool.gpus_per_node
            nodes = max(1, math.ceil(gpus / per))
            pool = replace(
                pool,
                node_names=tuple(f"{MAIN_POOL}-{i:04d}" for i in range(nodes)),
                reserve_whole_gpus=nodes * per - gpus,
            )
        pools.append(pool)
    return replace(policy, clusters=(replace(cluster, pools=tuple(pools)),))


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_gets_a_mode_per_pool_with_codes(example: str) -> None:
    policy = load(ROOT / example)
    advice = run_advise(policy)
    known = registry()
    pools = {(c.name, p.name) for c in policy.clusters for p in c.pools}
    assert {(p.cluster, p.pool) for p in advice.pools} == pools
    for p in advice.pools:
        assert p.findings, p
        for f in p.findings:
            assert f.code in known and f.code.startswith("MIGC5"), f
            assert f.severity == str(known[f.code].severity), f
        if p.recommended is None:
            assert codes(advice, p.pool) == ["MIGC512"]
        else:
            assert {"MIGC500", "MIGC501", "MIGC502", "MIGC503", "MIGC505"} & set(codes(advice, p.pool))
    assert {s.cluster for s in advice.sizing} == {c.name for c in policy.clusters}
    for f in [*(f for s in advice.sizing for f in s.findings), *advice.findings]:
        assert f.code in known and f.severity == str(known[f.code].severity), f


@pytest.mark.parametrize("example", EXAMPLES)
def test_sizing_equals_the_solver_optimum(example: str) -> None:
    """Each row's GPU count is what the solver uses, is proven optimal, and one GPU fewer (MIG rows,
    the main pool capped) serves fewer replicas: the count is the true minimum."""
    policy = load(ROOT / example)
    advice = run_advise(policy)
    for sizing in advice.sizing:
        cluster = policy.cluster(sizing.cluster)
        assert len(sizing.rows) == len(policy.partition.pricing)
        for row in sizing.rows:
            model = CATALOG.get(row.gpu_model)
            assert model is not None
            synthetic, _ = synthetic_policy(policy, CATALOG, cluster, model)
            solution = solve(synthetic, CATALOG)
            assert row.gpus == sum(p.gpus_used for p in solution.pools)
            assert row.optimal
            assert row.gpus >= math.ceil(sum(p.lower_bound_gpus for p in solution.pools) - 1e-6)
            assert row.cost_per_hour == pytest.approx(row.gpus * row.price_per_gpu_hour)
            assert row.whole_gpus >= row.gpus or not row.complete
            main_used = next(p.gpus_used for p in solution.pools if p.pool == MAIN_POOL)
            if row.complete and main_used > 0:
                fewer = cap_main_pool(synthetic, main_used - 1)
                assert served_replicas(fewer) < row.replicas_wanted, (example, row.gpu_model)


def write_policy(
    tmp: Path,
    pools: list[dict[str, object]],
    workloads: list[dict[str, object]],
    tenants: tuple[str, ...] = ("team",),
    mode: str = "static",
    pricing: dict[str, float] | None = None,
) -> Path:
    docs: list[dict[str, object]] = [
        {
            "apiVersion": "migc.dev/v1alpha1",
            "kind": "Fleet",
            "metadata": {"name": "t"},
            "spec": {
                "pricing": {"NVIDIA-A100-SXM4-80GB": 2.0} if pricing is None else pricing,
                "clusters": [{"name": "c", "nodePools": pools}],
            },
        },
        {
            "apiVersion": "migc.dev/v1alpha1",
            "kind": "PartitionPolicy",
            "metadata": {"name": "p"},
            "spec": {"mode": mode},
        },
    ]
    for t in tenants:
        docs.append(
            {
                "apiVersion": "migc.dev/v1alpha1",
                "kind": "Tenant",
                "metadata": {"name": t},
                "spec": {"namespaces": [t], "priorityClass": "high"},
            }
        )
    for w in workloads:
        spec = {k: v for k, v in w.items() if k != "name"}
        docs.append(
            {
                "apiVersion": "migc.dev/v1alpha1",
                "kind": "Workload",
                "metadata": {"name": w["name"]},
                "spec": {"tenant": "team", **spec},
            }
        )
    path = tmp / "policy.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return path


def pool(name: str, product: str, gpus: int, nodes: int = 1, **extra: object) -> dict[str, object]:
    return {
        "name": name,
        "gpuProduct": product,
        "gpusPerNode": gpus,
        "nodes": {"names": [f"{name}-{i}" for i in range(nodes)]},
        **extra,
    }


A100 = "NVIDIA-A100-SXM4-80GB"


def test_isolation_required_moves_the_advice_to_mig(tmp_path: Path) -> None:
    """One MIG pool and one time-sliced pool of A100s: shared work is advised to share, the same
    work asking for hardware isolation moves to the MIG pool, advised MIG (MIGC500)."""
    pools = [
        pool("m", A100, 8),
        pool("s", A100, 8, partitioning="none", sharing={"mode": "time-slicing", "replicas": 4}),
    ]
    shared = run_advise(
        load(
            write_policy(
                tmp_path, pools, [{"name": "w", "replicas": 4, "need": {"gpus": 1}, "isolation": "shared"}]
            )
        )
    )
    assert shared.pool("c", "s").recommended in ("mps", "time-slicing")
    assert shared.pool("c", "m").recommended is None and codes(shared, "m") == ["MIGC512"]
    isolated = run_advise(
        load(
            write_policy(
                tmp_path,
                pools,
                [{"name": "w", "replicas": 4, "need": {"gpuMemoryGB": 10}, "isolation": "hardware"}],
            )
        )
    )
    assert isolated.pool("c", "m").recommended == "mig"
    assert codes(isolated, "m")[0] == "MIGC500"
    assert isolated.pool("c", "s").recommended is None


def test_pre_ampere_gpu_gets_no_mig(tmp_path: Path) -> None:
    """The same pool and isolated workloads on a T4 (Turing, no MIG): whole GPUs per replica, with a
    warning (MIGC501); the sizing row of the T4 is whole GPUs too. Validation refuses isolated work
    pinned to a non-MIG pool, so the tree is asked directly about the pool with its model swapped."""
    work = [{"name": "w", "replicas": 3, "pools": ["g"], "need": {"gpuMemoryGB": 8}, "isolation": "hardware"}]
    policy = load(
        write_policy(
            tmp_path, [pool("g", A100, 8)], work, pricing={"NVIDIA-A100-SXM4-80GB": 2.0, "Tesla-T4": 0.35}
        )
    )
    advice = run_advise(policy)
    assert advice.pool("c", "g").recommended == "mig"
    a100_pool = policy.clusters[0].pools[0]
    t4_pool = replace(a100_pool, gpu_product="Tesla-T4", gpu_model="T4", mig=False)
    on_t4 = advise_pool(policy, CATALOG, t4_pool, solve(policy, CATALOG).pool("c", "g"))
    assert on_t4.recommended == "whole-gpu"
    assert on_t4.findings[0].code == "MIGC501" and on_t4.findings[0].severity == "warning"
    assert "MIGC501" in [f.code for f in advice.sizing[0].findings]  # the T4 row isolates with whole GPUs
    rows = {r.gpu_model: r for r in advice.sizing[0].rows}
    assert (rows["T4"].mig, rows["T4"].gpus, rows["T4"].balanced_gpus) == (False, 3, None)
    assert (rows["A100-SXM4-80GB"].mig, rows["A100-SXM4-80GB"].gpus) == (True, 1)
    assert COMPUTE_CAPABILITY["T4"] < (8, 0) <= COMPUTE_CAPABILITY["A100-SXM4-80GB"]


def test_two_gpus_are_advised_a_static_layout(tmp_path: Path) -> None:
    work = [
        {"name": "a", "replicas": 2, "need": {"profile": "1g.10gb"}, "isolation": "hardware"},
        {"name": "b", "replicas": 1, "need": {"profile": "3g.40gb"}, "isolation": "hardware"},
    ]
    big = run_advise(load(write_policy(tmp_path, [pool("g", A100, 8, nodes=2)], work))).pool("c", "g")
    assert (big.recommended, big.partition_mode) == ("mig", "dynamic")
    assert "MIGC508" in [f.code for f in big.findings]
    small_policy = write_policy(tmp_path, [pool("g", A100, 2)], work, mode="dynamic")
    small = run_advise(load(small_policy)).pool("c", "g")
    assert (small.recommended, small.partition_mode) == ("mig", "static")
    assert {"MIGC506", "MIGC513"} <= {f.code for f in small.findings}


def test_one_profile_is_static_and_whole_gpu_training_is_whole(tmp_path: Path) -> None:
    work = [
        {"name": "a", "replicas": 9, "pools": ["g"], "need": {"profile": "1g.10gb"}, "isolation": "hardware"},
        {"name": "t", "replicas": 1, "pools": ["t"], "need": {"gpus": 8}, "isolation": "exclusive"},
    ]
    advice = run_advise(load(write_policy(tmp_path, [pool("g", A100, 8), pool("t", A100, 8)], work)))
    assert advice.pool("c", "g").partition_mode == "static"
    assert "MIGC507" in codes(advice, "g")
    train = advice.pool("c", "t")
    assert train.recommended == "whole-gpu" and codes(advice, "t") == ["MIGC505", "MIGC511"]


def test_shared_pools_choose_mps_for_one_tenant_and_warn_for_several(tmp_path: Path) -> None:
    l40s = pool("s", "NVIDIA-L40S", 4, partitioning="none", sharing={"mode": "time-slicing", "replicas": 4})
    one = [{"name": "a", "replicas": 4, "need": {"gpus": 1}, "isolation": "shared"}]
    advice = run_advise(load(write_policy(tmp_path, [l40s], one)))
    assert advice.pool("c", "s").recommended == "mps"
    assert codes(advice, "s") == ["MIGC502", "MIGC511", "MIGC514"]
    two = [*one, {"name": "b", "tenant": "other", "replicas": 2, "need": {"gpus": 1}, "isolation": "shared"}]
    advice = run_advise(load(write_policy(tmp_path, [l40s], two, tenants=("team", "other"))))
    assert advice.pool("c", "s").recommended == "time-slicing"
    risk = next(f for f in advice.pool("c", "s").findings if f.code == "MIGC510")
    assert "other, team" in risk.message


def test_sizing_of_a_crafted_demand(tmp_path: Path) -> None:
    """7 x 1g.10gb fit one A100 (7 slices); all-balanced (2+1+1 instances) needs 2; whole GPUs 7."""
    work = [{"name": "a", "replicas": 7, "need": {"profile": "1g.10gb"}, "isolation": "hardware"}]
    policy = load(write_policy(tmp_path, [pool("g", A100, 8)], work))
    advice = run_advise(policy)
    idle = next(f for f in advice.pool("c", "g").findings if f.code == "MIGC514")
    assert idle.message == "1 of 8 GPU(s) serve declared demand; 7 idle ($14.00/h)"
    (row,) = advice.sizing[0].rows
    assert (row.gpus, row.nodes, row.balanced_gpus, row.whole_gpus) == (1, 1, 2, 7)
    assert (row.cost_per_hour, row.balanced_saving_per_hour, row.whole_saving_per_hour) == (2.0, 2.0, 12.0)
    work[0]["replicas"] = 8
    policy = load(write_policy(tmp_path, [pool("g", A100, 8)], work))
    model = CATALOG.get("A100-SXM4-80GB")
    assert model is not None
    assert size_model(policy, CATALOG, policy.clusters[0], model, 2.0, 60.0).gpus == 2


def test_no_pricing_skips_sizing(tmp_path: Path) -> None:
    path = write_policy(
        tmp_path,
        [pool("g", A100, 8)],
        [{"name": "a", "replicas": 1, "need": {"profile": "1g.10gb"}, "isolation": "hardware"}],
        pricing={},
    )
    sizing = run_advise(load(path)).sizing[0]
    assert sizing.rows == () and [f.code for f in sizing.findings] == ["MIGC523"]


def test_every_catalog_model_has_a_compute_capability() -> None:
    assert sorted(COMPUTE_CAPABILITY) == sorted(m.model for m in CATALOG.models)


def test_cli_formats_are_deterministic_and_cite_codes(capsys: pytest.CaptureFixture[str]) -> None:
    outputs = {}
    for fmt in ("text", "markdown", "json"):
        assert main(["advise", str(ROOT / "examples/lab"), "-o", fmt]) == 0
        first = capsys.readouterr().out
        assert main(["advise", str(ROOT / "examples/lab"), "-o", fmt]) == 0
        assert capsys.readouterr().out == first
        outputs[fmt] = first
    doc = json.loads(outputs["json"])
    assert doc["pools"][0]["recommended"] == "mig"
    assert doc["sizing"][0]["rows"][0]["gpuModel"] == "A100-SXM4-80GB"
    assert "[MIGC500]" in outputs["text"] and "`MIGC520`" in outputs["markdown"]
    assert main(["explain", "MIGC500"]) == 0
    assert "hardware isolation" in capsys.readouterr().out


def test_cli_invalid_policy_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: migc.dev/v1alpha1\nkind: Fleet\nmetadata: {name: x}\nspec: {}\n", encoding="utf-8"
    )
    assert main(["advise", str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "MIGC0" in captured.err


def test_snapshot_with_more_pods_than_declared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_policy(
        tmp_path,
        [pool("g", A100, 8)],
        [{"name": "a", "replicas": 1, "need": {"profile": "1g.10gb"}, "isolation": "hardware"}],
    )
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "team"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}]},
            "status": {"phase": "Pending"},
        }
        for i in range(3)
    ]
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}), encoding="utf-8")
    assert main(["advise", str(path), "--snapshot", str(snap), "-o", "json"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["code"] for f in findings] == ["MIGC515"]
    assert "3 GPU pod(s) observed, 1 replica(s) declared" in findings[0]["message"]
    snap.write_text("not json", encoding="utf-8")
    assert main(["advise", str(path), "--snapshot", str(snap)]) == 1


def test_a_pre_volta_or_unknown_model_gets_no_mps(tmp_path: Path) -> None:
    """MPS needs Volta (7.0)+: a model without a known compute capability is time-sliced (MIGC504)."""
    l40s = pool("s", "NVIDIA-L40S", 4, partitioning="none", sharing={"mode": "mps", "replicas": 4})
    policy = load(
        write_policy(
            tmp_path, [l40s], [{"name": "a", "replicas": 4, "need": {"gpus": 1}, "isolation": "shared"}]
        )
    )
    result = solve(policy, CATALOG).pool("c", "s")
    assert advise_pool(policy, CATALOG, policy.clusters[0].pools[0], result).recommended == "mps"
    old = replace(policy.clusters[0].pools[0], gpu_product="Tesla-P100", gpu_model="P100")
    advice = advise_pool(policy, CATALOG, old, result)
    assert advice.recommended == "time-slicing"
    assert [f.code for f in advice.findings] == ["MIGC504", "MIGC503", "MIGC511", "MIGC514"]


def test_sizing_counts_a_node_per_replica_larger_than_half_a_node(tmp_path: Path) -> None:
    """3 replicas of 5 whole GPUs: 15 GPUs, but no two share an 8-GPU node, so 3 nodes."""
    work = [{"name": "t", "replicas": 3, "need": {"gpus": 5}, "isolation": "exclusive"}]
    (row,) = run_advise(load(write_policy(tmp_path, [pool("g", A100, 8)], work))).sizing[0].rows
    assert (row.gpus, row.nodes, row.whole_gpus, row.balanced_gpus) == (15, 3, 15, 15)


def test_every_advice_code_is_raised_by_the_advise_package() -> None:
    """No documented rule without code behind it (and no finding with an undocumented code)."""
    documented = sorted(c for c in registry() if c.startswith("MIGC5"))
    source = "".join(
        p.read_text(encoding="utf-8") for p in sorted((ROOT / "compiler" / "advise").glob("*.py"))
    )
    assert documented and all(f'"{code}"' in source for code in documented), documented
