"""compiler.pipeline.compiled: compile a policy set up to rendering, and the registered checks that
report after the solve (post-solve, plan, render), each with the codes it declares (issue 27 item 1).

``change_budget``'s own cases and its end-to-end runs are tests/test_change_budget.py.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import compiler.render
from compiler.catalog import load_catalog
from compiler.diagnostics import Diagnostic, Severity, lookup, make, registry, sort_key
from compiler.model import GpuLayout, PartitionPolicy, Policy, Span
from compiler.pipeline import compiled
from compiler.pipeline.compiled import (
    PLAN_CHECKS,
    POST_SOLVE_CHECKS,
    RENDER_CHECKS,
    PostSolveCheck,
    compile_policy,
    plan_checks,
    post_solve,
    registered_checks,
    render_checks,
    source_label,
)
from compiler.plan.spread import spread_rows
from compiler.render import render
from compiler.solve.result import NodeResult, PoolResult, Solution

ROOT = Path(__file__).resolve().parents[4]

# Policy sets whose solved layout trips registered checks: the lab's burst above what its layout
# provides (MIGC255), the DRA example's quotas (MIGC330, MIGC332), HAMi; and (in the fixture) the
# two-node spread case with maxUnavailable 2, which one maintenance wave breaks (MIGC256).
SETS = ("examples/lab", "examples/hami", "examples/dra")
TWO_NODE = ROOT / "tests" / "data" / "spread" / "two-node"


def _budget_tripped() -> tuple[Policy, Solution]:
    """Three deployed nodes re-partitioned under a dailyChangeBudget of 1 (MIGC423)."""
    old, new = (GpuLayout.of({"1g.10gb": 7}),), (GpuLayout.of({"3g.40gb": 2}),)
    nodes = tuple(NodeResult(f"n{i}", new, old, (0,)) for i in range(3))
    solution = Solution(pools=(PoolResult("east", "a100", "A100-SXM4-80GB", nodes, (), (), True),))
    part = PartitionPolicy(daily_change_budget=1, span=Span("partition.yaml", 4, 9, "metadata.name"))
    return Policy(clusters=(), tenants=(), workloads=(), partition=part), solution


def test_every_registered_check_declares_documented_codes_once() -> None:
    checks = registered_checks()
    assert checks == (*POST_SOLVE_CHECKS, *PLAN_CHECKS, *RENDER_CHECKS)
    names = [c.name for c in checks]
    assert len(names) == len(set(names))
    codes = [code for c in checks for code in c.codes]
    assert len(codes) == len(set(codes)), "a code belongs to one check"
    for code in codes:
        assert lookup(code).code == code  # documented in compiler/codes (migc explain)


def _hami_shared(policy: Policy) -> Policy:
    """examples/hami with its l40s pool chosen by label (MIGC315) and search bursting whole GPUs
    under the vGPU key (MIGC316), as tests/test_hami_render.py builds it."""
    cluster = policy.clusters[0]
    pools = tuple(
        replace(p, node_selector=(("pool", "x"),)) if p.name == "l40s" else p for p in cluster.pools
    )
    tenants = tuple(
        replace(t, burst=replace(t.burst, gpus=2)) if t.name == "search" else t for t in policy.tenants
    )
    return replace(policy, clusters=(replace(cluster, pools=pools),), tenants=tenants)


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """The codes each registered check reports on SETS and the variants above (compiled, spread
    rows built, rendered)."""
    catalog = load_catalog()
    out: dict[str, set[str]] = {c.name: set() for c in registered_checks()}

    def note(name: str, diags: list[Diagnostic]) -> None:
        out[name] |= {d.code for d in diags}

    waves = tmp_path_factory.mktemp("spread") / "two-node"
    shutil.copytree(TWO_NODE, waves)
    fleet = waves / "fleet.yaml"
    fleet.write_text(fleet.read_text(encoding="utf-8").replace("maxUnavailable: 1", "maxUnavailable: 2"))
    for path in (*(str(ROOT / s) for s in SETS), str(waves)):
        result = compile_policy([path], None)
        assert result.policy is not None and result.solution is not None, path
        policy, solution = result.policy, result.solution
        if path.endswith("hami"):
            policy = _hami_shared(policy)
        for check in POST_SOLVE_CHECKS:
            note(check.name, check.run(policy, solution, catalog))
        rows = spread_rows(policy, solution)
        for plan_check in PLAN_CHECKS:
            note(plan_check.name, plan_check.run(policy, rows))
        files = render(policy, solution, catalog)
        for render_check in RENDER_CHECKS:
            note(render_check.name, render_check.run(files))
    budget_policy, budget_solution = _budget_tripped()
    for check in POST_SOLVE_CHECKS:
        note(check.name, check.run(budget_policy, budget_solution, catalog))
    return out


def test_each_registered_check_reports_only_codes_it_declares(found: dict[str, set[str]]) -> None:
    """Every code a check emits on the examples and fixtures is registered (compiler/codes) and
    declared by that check; and the run is not vacuous: the checks that should fire here did."""
    for check in registered_checks():
        assert found[check.name] <= set(check.codes), check.name
        assert found[check.name] <= set(registry()), check.name
    assert "MIGC255" in found["quotas"]  # examples/lab: vision-group's burst of 4 3g.40gb
    assert found["spread"] == {"MIGC256"}  # two-node, maxUnavailable 2
    assert found["change-budget"] == {"MIGC423"}
    assert found["hami"] == {"MIGC315", "MIGC316"}
    assert found["dra"] >= {"MIGC330", "MIGC332"}


def test_a_check_that_reports_an_undeclared_code_is_a_programming_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As for validation rules: ``migc explain`` and ``--ignore`` rely on the declarations."""
    policy, solution = _budget_tripped()
    liar = PostSolveCheck("liar", ("MIGC255",), lambda p, s, _c: compiled.change_budget(p, s))
    monkeypatch.setattr(compiled, "POST_SOLVE_CHECKS", (liar,))
    with pytest.raises(ValueError, match="check liar reported MIGC423, which it does not declare"):
        post_solve(policy, solution, load_catalog())


def test_post_solve_runs_the_registry_in_order() -> None:
    policy, solution = _budget_tripped()
    assert [d.code for d in post_solve(policy, solution, load_catalog())] == ["MIGC423"]


def test_render_checks_refuse_a_configmap_the_api_server_cannot_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MIGC306 (an error: nothing is written) for a ConfigMap whose data is above the API server's
    limit, here lowered to 8 bytes so the test need not build a megabyte."""
    monkeypatch.setattr(compiler.render, "CONFIGMAP_DATA_LIMIT", 8)
    small, big = b"data:\n  x: abcdefgh\n", b"data:\n  x: abcdefghi\n"
    assert render_checks({"east/cluster/configmap-small.yaml": small, "east/cluster/other.yaml": big}) == []
    (d,) = render_checks({"east/cluster/configmap-x.yaml": big})
    assert (d.code, d.severity, d.file) == ("MIGC306", Severity.ERROR, "east/cluster/configmap-x.yaml")


def test_plan_checks_on_no_spread_rows_report_nothing() -> None:
    policy, _ = _budget_tripped()
    assert plan_checks(policy, ()) == []


def test_compile_policy_runs_the_whole_pipeline_on_the_main_example() -> None:
    result = compile_policy([str(ROOT / "examples/prod")], ROOT / "output")
    assert not result.failed
    assert result.policy is not None and result.solution is not None
    assert {p.cluster for p in result.solution.pools} == {c.name for c in result.policy.clusters}
    assert list(result.diagnostics) == sorted(result.diagnostics, key=sort_key)


def test_compile_policy_stops_after_validation_errors_with_every_stage_merged(tmp_path: Path) -> None:
    """A set that does not validate is not solved: no policy, no solution, the errors sorted."""
    (tmp_path / "fleet.yaml").write_text("a: 1\na: 2\n", encoding="utf-8")
    result = compile_policy([str(tmp_path)], None)
    assert result.failed and result.policy is None and result.solution is None
    assert "MIGC006" in {d.code for d in result.diagnostics}
    assert list(result.diagnostics) == sorted(result.diagnostics, key=sort_key)


def test_compile_policy_drops_exact_repeats_of_every_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """One collector for the whole compile: a check that repeats a finding reports it once."""
    twice = make("MIGC423", "same finding", file="partition.yaml", line=4, col=9)
    repeat = PostSolveCheck("repeat", ("MIGC423",), lambda _p, _s, _c: [twice, twice])
    monkeypatch.setattr(compiled, "POST_SOLVE_CHECKS", (repeat,))
    result = compile_policy([str(ROOT / "examples/lab")], None)
    assert [d for d in result.diagnostics if d.message == "same finding"] == [twice]


def test_source_label_is_sorted_normalised_and_relative_to_the_base(tmp_path: Path) -> None:
    base = tmp_path / "repo"
    (base / "policies").mkdir(parents=True)
    assert source_label(["b.yaml", "a.yaml", "./a.yaml"]) == "a.yaml, b.yaml"
    label = source_label([str(base / "policies"), str(base / "policies" / "x.yaml")], base)
    assert label == "policies, policies/x.yaml"
