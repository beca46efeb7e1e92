"""compiler.pipeline: the stages every command runs, importable without the CLI (issue 27 item 1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from compiler.diagnostics import lookup
from compiler.pipeline.compiled import POST_SOLVE_CHECKS, compile_policy

ROOT = Path(__file__).resolve().parents[1]


def test_every_post_solve_check_declares_registered_codes_once() -> None:
    names = [c.name for c in POST_SOLVE_CHECKS]
    assert len(names) == len(set(names))
    codes = [code for c in POST_SOLVE_CHECKS for code in c.codes]
    assert len(codes) == len(set(codes)), "a code belongs to one check"
    for code in codes:
        assert lookup(code).code == code  # documented in compiler/codes (migc explain)


def test_compile_policy_runs_the_whole_pipeline_on_the_main_example() -> None:
    result = compile_policy([str(ROOT / "examples/prod")], ROOT / "output")
    assert not result.failed
    assert result.policy is not None and result.solution is not None
    assert {p.cluster for p in result.solution.pools} == {c.name for c in result.policy.clusters}


def test_each_post_solve_check_reports_only_its_declared_codes() -> None:
    """Run every registered check on a solution that trips the change budget (MIGC423): each
    finding carries one of the codes its check declares."""
    from compiler.catalog import load_catalog
    from compiler.model import GpuLayout, PartitionPolicy, Policy, Span
    from compiler.solve.result import NodeResult, PoolResult, Solution

    old, new = (GpuLayout.of({"1g.10gb": 7}),), (GpuLayout.of({"3g.40gb": 2}),)
    nodes = tuple(NodeResult(f"n{i}", new, old, (0,)) for i in range(3))
    solution = Solution(pools=(PoolResult("east", "a100", "A100-SXM4-80GB", nodes, (), (), True),))
    part = PartitionPolicy(daily_change_budget=1, span=Span("partition.yaml", 4, 9, "metadata.name"))
    policy = Policy(clusters=(), tenants=(), workloads=(), partition=part)
    found = {c.name: c.run(policy, solution, load_catalog()) for c in POST_SOLVE_CHECKS}
    assert [d.code for d in found["change-budget"]] == ["MIGC423"]
    for check in POST_SOLVE_CHECKS:
        assert {d.code for d in found[check.name]} <= set(check.codes), check.name


def test_load_and_validate_loads_neither_solver_nor_renderer() -> None:
    probe = (
        "import sys; from compiler.pipeline import load_and_validate; "
        "print(sorted(m for m in sys.modules if m.startswith(('compiler.solve', 'compiler.render'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_skipped_kinds_and_files_are_left_out_before_validation(tmp_path: Path) -> None:
    """recommend reads its machine-owned state on its own: load_and_validate leaves those documents
    out (by kind, and the state file by name) instead of the command filtering them by hand; a
    document whose kind is not a string stays and is validation's to report."""
    import shutil

    from compiler.pipeline import load_and_validate

    shutil.copytree(ROOT / "examples/lab", tmp_path / "pol")
    state = tmp_path / "pol" / "zz-state.yaml"
    state.write_text("apiVersion: migc.dev/v1alpha1\nkind: ObservedDemand\nnot: valid\n", encoding="utf-8")
    policy, diags = load_and_validate([str(tmp_path / "pol")])
    assert policy is None and any(d.file == str(state) for d in diags)
    policy, diags = load_and_validate([str(tmp_path / "pol")], skip_kinds={"ObservedDemand"})
    assert policy is not None and not any(d.file == str(state) for d in diags)
    state.write_text("kind: [ObservedDemand]\n", encoding="utf-8")
    policy, diags = load_and_validate([str(tmp_path / "pol")], skip_kinds={"ObservedDemand"})
    assert policy is None and any(d.file == str(state) for d in diags)
    policy, diags = load_and_validate([str(tmp_path / "pol")], skip_files={str(state)})
    assert policy is not None
