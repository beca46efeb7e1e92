"""The benchmark end to end on tiny instances: structural facts only, never time.

The bench lives outside the installed package, so the repository root goes on ``sys.path``.
Instances from the openb trace are used when ``../shared/data/openb`` (or ``$MIGC_SHARED_DIR``)
holds it; otherwise those parts skip, except under CI (`$CI` set), where the data must be there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import baselines, openb, run, scale, startup, synthetic
from bench.demand import WHOLE, Pod, profile_counts, whole_gpus
from bench.geometry import geometry
from bench.optimum import (
    GpuState,
    max_served,
    measure_pods,
    measure_slices,
    min_disruption,
    min_gpus,
    pareto_gain,
    served_of,
)
from compiler.catalog import GpuModel, load_catalog
from compiler.catalog.layouts import enumerate_layouts

TINY = run.TINY


def _a100() -> GpuModel:
    model = load_catalog().get("A100-SXM4-80GB")
    assert model is not None
    return model


MODELS = [_a100()]


def test_bench_geometry_matches_the_catalog_enumeration() -> None:
    for model in load_catalog().models:
        if model.mig_capable:
            ours = set(geometry(model).layouts)
            assert ours == {lay.profiles for lay in enumerate_layouts(model)}, model.model


def test_reference_optimum_on_a_hand_checked_case() -> None:
    geo = geometry(_a100())
    # 21 compute slices need at least 3 GPUs, and 3 suffice: two × {3g.40gb, 4 × 1g.10gb} and
    # {3 × 2g.20gb, 1g.10gb}; the 2-GPU pod adds 2 whole GPUs
    pods = [Pod("3g.40gb")] * 2 + [Pod("2g.20gb")] * 3 + [Pod("1g.10gb")] * 9 + [Pod(WHOLE, 2)]
    opt = min_gpus(geo, pods)
    assert opt.optimal
    assert opt.gpus == 3 + 2
    assert opt.lp_bound <= opt.gpus
    assert baselines.whole_per_pod_gpus(pods) == 2 + 3 + 9 + 2


def test_m1_optimum_never_worse_than_a_baseline_and_migc_matches_it() -> None:
    checks = run.Checks()
    rows = run.run_m1(TINY, MODELS, openb.MAPPINGS, checks, True)
    assert len(rows) >= len(synthetic.MIXES)
    for r in rows:
        assert r.lp_bound <= r.optimum + 1e-6
        assert r.optimum <= min(r.balanced, r.whole, r.greedy), r
        assert r.whole / r.optimum >= 1.0
        if r.migc is not None:
            assert r.migc == r.optimum, r
    assert checks.failed == []
    assert "optimum" in run.render_m1(rows)


def test_m2_optimum_serves_lexicographically_most() -> None:
    checks = run.Checks()
    rows = run.run_m2(TINY, MODELS, openb.MAPPINGS, checks, True, measure_pods)
    assert rows
    for r in rows:
        for s in (r.balanced, r.whole, r.greedy):
            assert s.key() <= r.optimum.key()
        assert sum(p for _, p in r.optimum.pods) <= sum(p for _, p in r.demand.pods)
        if r.migc is not None:
            # migc's rule: the tiers above its first short tier in full, as the optimum; in that
            # tier no more pods than the pods-first optimum and nothing left a workload could use
            tiers = [t for t, _ in r.demand.pods]
            short = r.short_tier or tiers[-1]
            above = tiers[: tiers.index(short)]
            assert [dict(r.migc.pods)[t] for t in above] == [dict(r.demand.pods)[t] for t in above]
            assert [dict(r.optimum.pods)[t] for t in above] == [dict(r.demand.pods)[t] for t in above]
            assert dict(r.migc.pods)[short] <= dict(r.optimum.pods)[short]
            assert r.pareto_gain == 0
    assert any(r.short_tier is not None for r in rows)  # the rule was exercised
    assert checks.failed == []
    table = run.render_m2(rows, "pods")
    assert "pods-first optimum" in table and "slice share" in table


def test_pareto_gain_finds_a_replica_left_on_idle_capacity() -> None:
    """The bench's Pareto check on one A100-SXM4-80GB, one tier: workload a asks 3g.40gb x 2,
    b asks 1g.10gb x 3. A second 3g.40gb instance fits only without any 1g.10gb one (3g x 2 + 1g
    is no valid layout; 3g + 1g x 4 is), so a x 1 + b x 3 is Pareto-efficient, a x 1 alone leaves
    b three replicas on idle capacity, and serving all five does not fit."""
    geo = geometry(_a100())
    assert not geo.feasible({"3g.40gb": 2, "1g.10gb": 1}) and geo.feasible({"3g.40gb": 1, "1g.10gb": 4})
    pods = [Pod("3g.40gb", 1, "a", "high")] * 2 + [Pod("1g.10gb", 1, "b", "high")] * 3
    assert pareto_gain(geo, pods, [pods[0], *pods[2:]], 1, "high") == 0
    assert pareto_gain(geo, pods, [pods[0]], 1, "high") == 3
    assert pareto_gain(geo, pods, pods, 1, "high") == -1


def test_m2_fleet_bound_is_respected_by_every_baseline() -> None:
    geo = geometry(_a100())
    pods = synthetic.generate(geo, "training", 50, 3)
    fleet = 16
    feasible = baselines.layout_feasibility(geo)
    for served in (
        baselines.balanced_served(geo, pods, fleet),
        baselines.whole_per_pod_served(pods, fleet),
        baselines.greedy_served(geo, pods, fleet, feasible),
    ):
        assert min_gpus(geo, served).gpus <= fleet
    assert max_served(geo, pods, fleet, measure_slices).key() >= served_of(geo, [], measure_slices).key()


def test_exhaustive_minimum_disruption() -> None:
    geo = geometry(_a100())
    seven = (("1g.10gb", 7),)
    current: list[list[GpuState]] = [[seven, None], [None, None]]
    assert (min_disruption(geo, current, {"1g.10gb": 7}, 0, 1).nodes, 0) == (0, 0)
    d = min_disruption(geo, current, {"1g.10gb": 7, "3g.40gb": 2}, 0, 2)
    assert (d.nodes, d.gpus) == (1, 1)
    # one GPU cannot host 14 × 1g.10gb with a budget of one GPU
    assert not min_disruption(geo, current, {"1g.10gb": 14}, 0, 1).found


@pytest.mark.slow
def test_m3_migc_disruption_is_minimal_on_small_cases() -> None:
    checks = run.Checks()
    rows = run.run_m3(TINY, MODELS, ("compute",), checks, True)
    small = [r for r in rows if r.minimum is not None]
    assert small
    for r in rows:
        if "unchanged" in r.case:
            assert r.migc == (0, 0)
    assert checks.failed == []


def test_openb_mapping_structure() -> None:
    if not openb.available():
        # CI has the data beside the clone (.ci/run sets CI): there a missing trace is a failure.
        missing = f"openb trace not found under {openb.shared_dir()}"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    geo = geometry(_a100())
    trace = openb.first_n(openb.load_trace(), 200)
    assert all(p.num_gpu > 0 for p in trace)
    assert [p.creation_time for p in trace] == sorted(p.creation_time for p in trace)
    for mapping in openb.MAPPINGS:
        pods = openb.to_pods(geo, trace, mapping)
        assert len(pods) == len(trace)
        for tp, pod in zip(trace, pods, strict=True):
            if tp.num_gpu >= 2 or tp.gpu_milli >= 1000:
                assert pod == Pod(WHOLE, tp.num_gpu, pod.tenant, pod.tier)
            elif pod.resource != WHOLE:
                prof = geo.profile(pod.resource)
                if mapping == "compute":
                    assert prof.compute_slices * 1000 >= tp.gpu_milli * 7
                else:
                    assert prof.memory_gb * 1000 >= tp.gpu_milli * 80 - 1e-6
        assert whole_gpus(pods) + sum(profile_counts(pods).values()) >= len(pods)


def test_openb_skips_cleanly_without_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MIGC_SHARED_DIR", str(tmp_path))
    assert not openb.available()
    labels = [label for label, _ in run.m1_instances(TINY, geometry(_a100()), openb.MAPPINGS)]
    assert labels and not any(label.startswith("openb") for label in labels)


def test_scale_policy_shape(tmp_path: Path) -> None:
    docs = scale.generate(96, tenants=40)
    kinds = [d["kind"] for d in docs]
    assert kinds.count("Fleet") == 1
    assert kinds.count("Tenant") == 40
    assert kinds.count("Workload") == 40 * scale.WORKLOADS_PER_TENANT
    pools = docs[0]["spec"]["clusters"][0]["nodePools"]
    assert len(pools) == len(scale.MODELS)
    assert sum(p["gpusPerNode"] * len(p["nodes"]["names"]) for p in pools) == 96
    paths = scale.write(docs, tmp_path)
    assert all(p.is_file() for p in paths)


def test_scale_pipeline_end_to_end_on_a_small_fleet(tmp_path: Path) -> None:
    scale.write(scale.generate(96, tenants=12), tmp_path)
    result = scale.measure(tmp_path)
    assert "validate" in result["validated_by"]
    assert result["tenants"] == 12
    assert result["workloads"] == 12 * scale.WORKLOADS_PER_TENANT
    assert result["nodes"] == 96 // scale.GPUS_PER_NODE
    assert result["optimal"]
    assert result["unmet"] == 0  # the generator never asks for more than the fleet has
    assert 0 < result["gpus_used"] <= 96


@pytest.mark.slow
def test_driver_writes_every_section_and_its_command(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    status = run.main(["--tiny", "--results", str(out)])
    text = out.read_text(encoding="utf-8")
    assert "python -m bench --tiny --results" in text
    assert "CPU:" in text and "logical CPUs" in text
    for section in ("## M1", "## M2", "## M3", "## M4", "## M5", "## S: CLI startup", "## Checks"):
        assert section in text
    assert status == 0, text[text.index("## Checks") :]
    assert "all structural checks passed" in text
    assert "migc gap to the optimum: max 0 GPUs" in text


def test_driver_rejects_an_unknown_model() -> None:
    with pytest.raises(SystemExit) as exc:
        run.main(["--tiny", "--only", "M1", "--models", "A100-SXM4-80GB,NOPE"])
    assert exc.value.code == 2


def test_bench_milp_keeps_the_highs_banner_off_stdout() -> None:
    # HiGHS prints its banner on fd 1 once per process, so this needs a fresh interpreter.
    code = (
        "from bench.milp import Model\n"
        "m = Model()\n"
        "x = m.var(1.0)\n"
        "m.row({x: 1.0}, lb=2.0)\n"
        "r = m.solve()\n"
        "print('objective', r.objective)\n"
    )
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert proc.stdout == "objective 2.0\n"


def test_report_header_states_the_real_git_state(tmp_path: Path) -> None:
    assert run.git_state(tmp_path) == "unknown (not a git checkout)"

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n", encoding="utf-8")
    git("add", "a.txt")
    git("commit", "-q", "-m", "one")
    state = run.git_state(tmp_path)
    assert state.endswith(" (clean working tree)") and len(state.split()[0]) >= 7
    (tmp_path / "a.txt").write_text("two\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("new\n", encoding="utf-8")
    assert run.git_state(tmp_path).endswith(" + uncommitted changes to 2 files (a.txt, b.txt)")


def test_startup_rows_report_time_imports_and_failures() -> None:
    ok = startup.measure(("--version",), repeats=1)
    assert ok.error == "" and ok.runs == 1 and ok.wall_s > 0 and ok.cpu_s > 0
    assert ok.imported == ()  # --version loads none of the heavy libraries
    bad = startup.measure(("explain", "MIGC999999"), repeats=1)
    assert bad.error.startswith("exit 2: ")
    table = startup.render([ok, bad])
    assert "| `migc --version` |" in table and "FAILED: exit 2" in table


def test_fairness_oracle_on_a_hand_checked_case_and_migc_gives_the_leximin_split() -> None:
    from fractions import Fraction

    from bench import fairness

    geo = geometry(_a100())
    # one A100: 3g.40gb fits twice at most (then nothing besides), 4g.40gb once next to a 3g.40gb
    case = fairness.Case(0, 1, (("3g.40gb", 2), ("3g.40gb", 2), ("4g.40gb", 1)))
    o = fairness.oracle(geo, case)
    assert o.most == 2  # 4g + 3g, or 3g + 3g
    assert o.min_at_most == Fraction(0)  # three workloads, two instances: someone gets nothing
    # 4g + 3g (0, 1/2, 1) beats 3g + 3g (0, 1/2, 1/2)
    assert o.leximin == (Fraction(0), Fraction(1, 2), Fraction(1)) and o.served_at_leximin == 2
    # compute slices: 4g + 3g = 7 at the leximin split; pods-first's best, 4g + 3g too; 16 asked
    assert (o.slices_at_leximin, o.slices_at_most, o.asked_slices) == (7, 7, 16)
    rows = fairness.run(3)
    assert [r.case.label for r in rows[:2]] == ["issue 26: 7g", "issue 26: 3g"]
    assert all(r.fair for r in rows)
    assert all(0 < r.migc_slices <= r.oracle.slices_at_leximin for r in rows)
    assert "slice share: migc / pods-first" in fairness.render(rows)
    assert all(r.oracle.leximin[0] >= r.oracle.min_at_most for r in rows)


def test_both_objective_orders_win_their_own_first_goal_on_the_m3_shifts() -> None:
    from bench import orders

    model = _a100()
    rows = [orders.compare(model, *c) for c in orders.cases(run.TINY, model)]
    assert rows and orders.problems(rows) == []
    assert "disruption-first" in orders.render(rows)


def test_planspeed_rewrites_pools_as_selectors() -> None:
    from bench import planspeed

    docs = planspeed.selector_fleet(scale.generate(96, tenants=6))
    pools = [p for d in docs if d["kind"] == "Fleet" for c in d["spec"]["clusters"] for p in c["nodePools"]]
    assert sum(p["nodes"]["count"] for p in pools) == 12
    assert all(set(p["nodes"]) == {"selector", "count"} for p in pools)


def test_every_m5_case_is_a_policy_migc_accepts() -> None:
    """`python -m bench --quick` (the README's command) generated 1,500 tenants, which MIGC144 refuses:
    every configured M5 case stays within the tenant limit the validator enforces."""
    from compiler.validate.rules.limits import MAX_TENANTS

    for cfg in (run.QUICK, run.FULL, run.TINY):
        assert cfg.m4_tenants <= MAX_TENANTS
        assert all(tenants <= MAX_TENANTS for _, tenants, _, _ in cfg.m5_cases), cfg.name


def test_an_invalid_generated_policy_is_reported_as_diagnostics_not_a_repr(tmp_path: Path) -> None:
    docs = scale.generate(96, tenants=2)
    docs[1]["spec"]["priorityClass"] = "no-such-tier"
    scale.write(docs, tmp_path)
    with pytest.raises(SystemExit) as exc:
        scale.measure(tmp_path)
    message = str(exc.value.code)
    assert message.startswith("generated policy does not validate: MIGC117 ")
    assert "Diagnostic(" not in message
