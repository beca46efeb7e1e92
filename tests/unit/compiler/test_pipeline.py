"""compiler.pipeline: load and validate a policy set, importable without the CLI (issue 27 item 1).

The post-solve half (``compile_policy``, the registered checks) is tested in
tests/unit/compiler/pipeline/test_compiled.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from compiler.diagnostics import Collector, Severity, sort_key
from compiler.pipeline import collect_policy, count_files, load_and_validate

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "tests" / "cases" / "invalid"

def _policy_copy(tmp_path: Path, example: str = "lab") -> Path:
    shutil.copytree(ROOT / "examples" / example, tmp_path / "pol")
    return tmp_path / "pol"


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
    pol = _policy_copy(tmp_path)
    state = pol / "zz-state.yaml"
    state.write_text("apiVersion: migc.dev/v1alpha1\nkind: ObservedDemand\nnot: valid\n", encoding="utf-8")
    policy, diags = load_and_validate([str(pol)])
    assert policy is None and any(d.file == str(state) for d in diags)
    policy, diags = load_and_validate([str(pol)], skip_kinds={"ObservedDemand"})
    assert policy is not None and not any(d.file == str(state) for d in diags)
    state.write_text("kind: [ObservedDemand]\n", encoding="utf-8")
    policy, diags = load_and_validate([str(pol)], skip_kinds={"ObservedDemand"})
    assert policy is None and any(d.file == str(state) for d in diags)
    policy, diags = load_and_validate([str(pol)], skip_files={str(state)})
    assert policy is not None


def test_a_load_error_gives_no_policy_and_findings_come_sorted(tmp_path: Path) -> None:
    """A file the loader refuses (a duplicate key) means no policy, even though the other files are
    valid; the loader's and validation's findings come as one list sorted by file, line, column."""
    pol = _policy_copy(tmp_path)
    (pol / "aa-broken.yaml").write_text("a: 1\na: 2\n", encoding="utf-8")
    policy, diags = load_and_validate([str(pol)])
    assert policy is None
    assert "MIGC006" in {d.code for d in diags}  # the loader's duplicate key
    assert diags == sorted(diags, key=sort_key)
    assert diags[0].file == str(pol / "aa-broken.yaml")


def test_ignore_drops_only_that_codes_warnings_and_the_policy_is_still_built() -> None:
    """tests/cases/invalid/burst-below-guarantee warns twice (MIGC123): the policy is built all the
    same, and ``ignore`` (any case) leaves out exactly those findings."""
    case = str(CASES / "burst-below-guarantee")
    policy, diags = load_and_validate([case])
    assert policy is not None
    assert [(d.code, d.severity, d.line) for d in diags] == [
        ("MIGC123", Severity.WARNING, 13),
        ("MIGC123", Severity.WARNING, 14),
    ]
    kept, shown = load_and_validate([case], ignore=["migc123"])
    assert kept is not None and shown == []
    assert load_and_validate([case], ignore=["MIGC180"])[1] == diags  # another code: nothing left out


def test_collect_policy_adds_to_the_callers_collector_without_finishing(tmp_path: Path) -> None:
    """What a command that goes on after validating uses: the findings land in its collector, which
    it finishes once; load_and_validate is exactly that collector finished."""
    pol = _policy_copy(tmp_path)
    (pol / "aa-broken.yaml").write_text("a: 1\na: 2\n", encoding="utf-8")
    collector = Collector()
    before = collector.collected()
    policy = collect_policy([str(pol)], collector)
    assert before == () and policy is None and collector.has_errors()
    _, direct = load_and_validate([str(pol)])
    assert collector.finish() == direct


def test_count_files_counts_policy_files_under_directories_and_named_files() -> None:
    lab = ROOT / "examples" / "lab"
    yaml_files = sorted(p for p in lab.rglob("*") if p.suffix in (".yaml", ".yml"))
    assert count_files([str(lab)]) == len(yaml_files) == 3
    assert count_files([str(lab / "fleet.yaml"), str(lab / "tenants.yaml")]) == 2
