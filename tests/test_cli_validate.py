"""CLI: exit codes (0 ok, 1 invalid, 2 usage), stdout = data, stderr = summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.cli import main
from compiler.schemas import all_schema_files, dumps

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "cases"
EXAMPLES = [REPO / "examples" / n for n in ("lab", "prod", "multi-cluster")]


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_validate_examples_ok(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "validate", *EXAMPLES)
    assert rc == 0
    assert out == ""
    assert err.strip() == "migc: policy OK in 11 files"


def test_validate_invalid_exit_1_diagnostics_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "validate", CASES / "invalid" / "unknown-tenant")
    assert rc == 1
    assert "MIGC104 error: workload 'bert' names unknown tenant 'serach'; did you mean 'search'?" in out
    assert "  hint: " in out
    assert err.strip() == "migc: 1 error in 4 files"
    assert "MIGC104" not in err


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_machine_formats_are_pure_json_on_stdout(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    rc, out, err = run(
        capsys, "validate", "--output-format", fmt, CASES / "invalid" / "many-errors-collected"
    )
    assert rc == 1
    data = json.loads(out)
    assert data
    assert "5 errors" in err


def test_machine_format_prints_a_document_even_when_valid(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "validate", "-o", "json", EXAMPLES[0])
    assert rc == 0
    assert json.loads(out)["diagnostics"] == []


def test_github_format(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "validate", "-o", "github", CASES / "invalid" / "yaml-duplicate-key")
    assert rc == 1
    assert out.startswith("::error file=")
    assert ",title=MIGC006::" in out


def test_warnings_fail_only_with_strict(capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES / "invalid" / "burst-below-guarantee"
    rc, out, _ = run(capsys, "validate", case)
    assert rc == 0 and "MIGC123 warning" in out
    rc, _, _ = run(capsys, "validate", "--strict", case)
    assert rc == 1


def test_missing_path_is_invalid_input_not_a_crash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, out, _ = run(capsys, "validate", tmp_path / "nope")
    assert rc == 1
    assert "MIGC001" in out


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "validate")[0] == 2
    assert run(capsys, "validate", "-o", "xml", EXAMPLES[0])[0] == 2


def test_explain_known_code(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "explain", "migc006")
    assert rc == 0
    assert out.startswith("MIGC006 (error): Duplicate key\n")
    assert "Fix: " in out
    assert run(capsys, "explain", "6")[1] == out


def test_explain_unknown_code_exit_2_lists_ranges(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "explain", "MIGC777")
    assert rc == 2
    assert out == ""
    assert "unknown diagnostic code 'MIGC777'" in err and "MIGC1xx semantics" in err


def test_explain_lists_every_code(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "explain")
    assert rc == 0
    assert "MIGC109" in out and "MIGC000" in out


def test_schema_prints_each_kind_and_the_editor_schema(capsys: pytest.CaptureFixture[str]) -> None:
    files = all_schema_files()
    for kind, name in (
        ("Fleet", "fleet"),
        ("tenant", "tenant"),
        ("WORKLOAD", "workload"),
        ("PartitionPolicy", "partitionpolicy"),
    ):
        rc, out, _ = run(capsys, "schema", kind)
        assert rc == 0
        assert out == dumps(files[f"{name}.schema.json"])
    rc, out, _ = run(capsys, "schema")
    assert rc == 0 and json.loads(out) == files["policy.schema.json"]
    assert run(capsys, "schema", "Node")[0] == 2


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "version")
    assert rc == 0
    assert out.splitlines()[1] == "policy apiVersion: migc.dev/v1alpha1"
    assert "GPU models" in out.splitlines()[2]
    rc, out, _ = run(capsys, "version", "--catalog")
    assert "NVIDIA-H100-80GB-HBM3" in out


def test_files_named_directly_form_one_set(capsys: pytest.CaptureFixture[str]) -> None:
    base = REPO / "examples" / "lab"
    rc, _, err = run(capsys, "validate", base / "fleet.yaml", base / "tenants.yaml", base / "workloads.yaml")
    assert rc == 0, err
    rc, out, _ = run(capsys, "validate", base / "workloads.yaml")
    assert rc == 1 and "MIGC115" in out
